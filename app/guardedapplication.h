// SPDX-License-Identifier: MIT
#pragma once
// The window's QApplication, which no exception leaves. Qt's event loop is not exception-safe: an exception that
// leaves a slot or an event handler reaches QCoreApplication::exec and the program aborts (exit 134, the window gone
// with whatever the user had open). Every event of the GUI thread (a queued signal, a click, a timer, a paint) is
// delivered through notify(), so an exception that gets that far is caught there, said on stderr and reported by
// exceptionCaught (each window shows it in its error bar), and the window goes on. This is the last net: the worker
// thread (TraceWorker::runJob) turns what a job throws into its jobFailed, and JobWatcher turns what the slots of a
// job's result throw into the job's failed, so that the view that asked says why.
#include <QApplication>
#include <QString>

#include <exception>

namespace nnscope {

/// The message of `e` as a sentence for the window: libtorch's errors without their C++ backtrace.
QString exceptionMessage(const std::exception& e);
/// The message of the exception in flight (call it inside a catch block): exceptionMessage, or "an exception of an
/// unknown type" for one that is not a std::exception.
QString currentExceptionMessage();

class GuardedApplication : public QApplication {
    Q_OBJECT
public:
    GuardedApplication(int& argc, char** argv);

    /// QApplication::notify, with any exception the delivery throws caught and reported (report()).
    bool notify(QObject* receiver, QEvent* event) override;

    /// Reports an exception that was caught where it could not be handled (`where`: "the trace's result"): a warning
    /// on stderr, and exceptionCaught when the application is a GuardedApplication.
    static void report(const QString& where, const QString& message);
    /// How many exceptions were reported (the tests check that one was).
    int reported() const { return reported_; }

signals:
    /// An exception was caught (notify(), or report()): `message` says where and what. Every MainWindow shows it.
    void exceptionCaught(const QString& message);

private:
    int reported_ = 0;
    bool reporting_ = false;  ///< a report under way: an exception thrown while it is shown is only logged
};

}  // namespace nnscope
