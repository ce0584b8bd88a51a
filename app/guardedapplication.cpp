// SPDX-License-Identifier: MIT
#include "guardedapplication.h"

#include <QEvent>
#include <QMetaEnum>
#include <QtDebug>

#include <c10/util/Exception.h>

namespace nnscope {

QString exceptionMessage(const std::exception& e) {
    if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return QString::fromStdString(c->what_without_backtrace());
    return QString::fromStdString(e.what());
}

QString currentExceptionMessage() {
    try {
        throw;
    } catch (const std::exception& e) {
        return exceptionMessage(e);
    } catch (...) {
        return QStringLiteral("an exception of an unknown type");
    }
}

GuardedApplication::GuardedApplication(int& argc, char** argv) : QApplication(argc, argv) {}

bool GuardedApplication::notify(QObject* receiver, QEvent* event) {
    try {
        return QApplication::notify(receiver, event);
    } catch (...) {
        const QString message = currentExceptionMessage();
        // what was being delivered to whom, for the report (the receiver may be half-destroyed: its class only)
        const char* type = event ? QMetaEnum::fromType<QEvent::Type>().valueToKey(event->type()) : nullptr;
        const QString where = QString("handling a %1 event of a %2").arg(type ? type : "?", receiver ? receiver->metaObject()->className() : "?");
        report(where, message);
        return false;
    }
}

void GuardedApplication::report(const QString& where, const QString& message) {
    qWarning().noquote() << "nnscope: an exception was caught while" << where << "(the window goes on):" << message;
    auto* app = qobject_cast<GuardedApplication*>(QCoreApplication::instance());
    if (!app) return;
    ++app->reported_;
    if (app->reporting_) return;
    app->reporting_ = true;
    try {
        emit app->exceptionCaught(message);
    } catch (...) {
        qWarning().noquote() << "nnscope: showing it failed too:" << currentExceptionMessage();
    }
    app->reporting_ = false;
}

}  // namespace nnscope
