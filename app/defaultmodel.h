// SPDX-License-Identifier: MIT
#pragma once
#include <QString>

namespace nnscope {
/// The checkpoint the window opens when it is given none and has no recent model: the demo model shipped in
/// resources/demo-model as installed beside the program (share/nnscope/demo-model), else the source tree's copy when
/// the program runs from its build tree, or an empty string when there is none.
QString demoModelDir();
/// The folder of the documentation shipped with the program (GUI.md, FEATURES.md, ... and screenshots/): installed,
/// share/doc/nnscope beside the program; from a build tree, the source tree's docs/; empty when there is none.
QString docsDir();
/// Whether `dir` is the demo model's folder (demoModelDir), however it is written (relative, a trailing slash, a link).
bool isDemoModelDir(const QString& dir);

/// What a path dropped on the window (or given to it) is, judged by the files it holds, without reading them: a
/// checkpoint folder (config.json and no dictionary weights; a file inside one, as model.safetensors or
/// config.json, names its folder), a sparse dictionary's folder (cfg.json, hyperparams.json, params.safetensors,
/// sae.safetensors or a circuit-tracer config.yaml; a weights file inside one names its folder), a trace file (any other
/// .safetensors or .npy file), or nothing nnscope opens. `target` receives the folder or file to open.
enum class DropKind { None, Checkpoint, Dictionary, TraceFile };
DropKind classifyDrop(const QString& path, QString* target);

/// The prompt traced when the demo model opens with none given: a word run that repeats, so that the attention
/// view of block 1 shows the induction heads (each word of the second run attends to the word after its first
/// occurrence). Every word is in the demo vocabulary.
QString demoPrompt();

/// The block whose attention the window shows first on the demo model: its induction layer.
constexpr int kDemoInductionBlock = 1;
}  // namespace nnscope
