// SPDX-License-Identifier: MIT
#include "defaultmodel.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace nnscope {

#ifndef NNSCOPE_DEMO_FROM_BINDIR
#define NNSCOPE_DEMO_FROM_BINDIR "../share/nnscope/demo-model"
#endif

namespace {
/// The first of `installedFromBindir` (a path from the program's folder, as installed: app/CMakeLists.txt computes it
/// from GNUInstallDirs) and `inSourceTree` that holds `marker`, canonical; empty when neither does.
QString firstHolding(const QString& installedFromBindir, const QString& inSourceTree, const QString& marker) {
    QStringList candidates;
    if (!installedFromBindir.isEmpty()) candidates << QCoreApplication::applicationDirPath() + "/" + installedFromBindir;
    if (!inSourceTree.isEmpty()) candidates << inSourceTree;  // a program run from its build tree
    for (const QString& dir : candidates)
        if (QFileInfo::exists(dir + "/" + marker)) return QDir(dir).canonicalPath();
    return {};
}

#ifdef NNSCOPE_SOURCE_DIR
const QString kSourceDir = QStringLiteral(NNSCOPE_SOURCE_DIR);
#else
const QString kSourceDir;
#endif
#ifndef NNSCOPE_DOCS_FROM_BINDIR
#define NNSCOPE_DOCS_FROM_BINDIR "../share/doc/nnscope"
#endif
}  // namespace

QString demoModelDir() {
    return firstHolding(QStringLiteral(NNSCOPE_DEMO_FROM_BINDIR), kSourceDir.isEmpty() ? QString() : kSourceDir + "/resources/demo-model",
                        QStringLiteral("config.json"));
}

QString docsDir() {
    return firstHolding(QStringLiteral(NNSCOPE_DOCS_FROM_BINDIR), kSourceDir.isEmpty() ? QString() : kSourceDir + "/docs",
                        QStringLiteral("GUI.md"));
}

bool isDemoModelDir(const QString& dir) {
    const QString demo = demoModelDir();  // already canonical
    return !demo.isEmpty() && !dir.isEmpty() && QDir(dir).canonicalPath() == demo;
}

QString demoPrompt() {
    return QStringLiteral("tom and lily went to the park with a red ball. tom and lily went to the park with");
}

}  // namespace nnscope
