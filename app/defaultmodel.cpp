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

DropKind classifyDrop(const QString& path, QString* target) {
    const QFileInfo info(path);
    auto isDictionaryDir = [](const QDir& d) {
        for (const char* name : {"cfg.json", "hyperparams.json", "params.safetensors", "params.npz", "sae.safetensors", "config.yaml"})
            if (d.exists(QString::fromLatin1(name))) return true;
        return false;
    };
    if (info.isDir()) {
        const QDir d(info.absoluteFilePath());
        if (target) *target = info.absoluteFilePath();
        if (isDictionaryDir(d)) return DropKind::Dictionary;
        if (d.exists(QStringLiteral("config.json"))) return DropKind::Checkpoint;
        return DropKind::None;
    }
    if (!info.isFile()) return DropKind::None;
    const QDir parent = info.absoluteDir();
    const QString name = info.fileName();
    const bool checkpointFile = name == QLatin1String("config.json") || name == QLatin1String("tokenizer.json") ||
                                name == QLatin1String("model.safetensors") || name == QLatin1String("model.safetensors.index.json") ||
                                (name.startsWith(QLatin1String("model-")) && name.endsWith(QLatin1String(".safetensors")));
    if (checkpointFile && parent.exists(QStringLiteral("config.json")) && !isDictionaryDir(parent)) {
        if (target) *target = parent.absolutePath();
        return DropKind::Checkpoint;
    }
    if (name.endsWith(QLatin1String(".safetensors")) || name.endsWith(QLatin1String(".npy"))) {
        const bool dictionaryWeights = name == QLatin1String("sae_weights.safetensors") || name == QLatin1String("params.safetensors") ||
                                       name == QLatin1String("sae.safetensors") ||
                                       (name.startsWith(QLatin1String("layer_")) && name.endsWith(QLatin1String(".safetensors")));
        if (dictionaryWeights && isDictionaryDir(parent)) {
            if (target) *target = parent.absolutePath();
            return DropKind::Dictionary;
        }
        if (target) *target = info.absoluteFilePath();
        return DropKind::TraceFile;
    }
    return DropKind::None;
}

}  // namespace nnscope
