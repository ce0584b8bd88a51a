// SPDX-License-Identifier: MIT
#include "defaultmodel.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace nnscope {

QString demoModelDir() {
    const QStringList candidates = {
        QCoreApplication::applicationDirPath() + "/../share/nnscope/demo-model",  // installed
#ifdef NNSCOPE_SOURCE_DIR
        QStringLiteral(NNSCOPE_SOURCE_DIR "/resources/demo-model"),  // a build tree
#endif
    };
    for (const QString& dir : candidates)
        if (QFileInfo::exists(dir + "/config.json")) return QDir(dir).canonicalPath();
    return {};
}

QString demoPrompt() {
    return QStringLiteral("tom and lily went to the park with a red ball. tom and lily went to the park with");
}

}  // namespace nnscope
