// SPDX-License-Identifier: MIT
#include "defaultmodel.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace nnscope {

#ifndef NNSCOPE_DEMO_FROM_BINDIR
#define NNSCOPE_DEMO_FROM_BINDIR "../share/nnscope/demo-model"
#endif

QString demoModelDir() {
    const QStringList candidates = {
        // installed: the path from the program's folder to the demo's (from GNUInstallDirs, app/CMakeLists.txt)
        QCoreApplication::applicationDirPath() + QStringLiteral("/" NNSCOPE_DEMO_FROM_BINDIR),
#ifdef NNSCOPE_SOURCE_DIR
        QStringLiteral(NNSCOPE_SOURCE_DIR "/resources/demo-model"),  // a build tree
#endif
    };
    for (const QString& dir : candidates)
        if (QFileInfo::exists(dir + "/config.json")) return QDir(dir).canonicalPath();
    return {};
}

QString docsDir() {
    const QStringList candidates = {
#ifdef NNSCOPE_DOCS_FROM_BINDIR
        QCoreApplication::applicationDirPath() + QStringLiteral("/" NNSCOPE_DOCS_FROM_BINDIR),  // installed: share/doc/nnscope
#endif
#ifdef NNSCOPE_SOURCE_DIR
        QStringLiteral(NNSCOPE_SOURCE_DIR "/docs"),  // a build tree
#endif
    };
    for (const QString& dir : candidates)
        if (QFileInfo::exists(dir + "/GUI.md")) return QDir(dir).canonicalPath();
    return {};
}

bool isDemoModelDir(const QString& dir) {
    const QString demo = demoModelDir();  // already canonical
    return !demo.isEmpty() && !dir.isEmpty() && QDir(dir).canonicalPath() == demo;
}

QString demoPrompt() {
    return QStringLiteral("tom and lily went to the park with a red ball. tom and lily went to the park with");
}

}  // namespace nnscope
