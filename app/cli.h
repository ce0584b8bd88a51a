// SPDX-License-Identifier: MIT
#pragma once
#include <QStringList>

namespace nnscope {

class Model;

/// The sub-commands the command line runs without a window.
bool isCliCommand(const QString& name);
/// Runs one command-line sub-command (DESIGN.md section 3); returns the process exit status.
/// Errors go to stderr with a non-zero status; nothing is half-written.
int runCli(const QStringList& arguments);
/// `nnscope train-demo --out DIR [--seed N] ...` (app/train_demo_cmd.cpp). `arguments` as runCli passes them,
/// with the sub-command removed.
int runTrainDemoCommand(const QStringList& arguments);
/// `nnscope family --model DIR [--format md|html] [--out FILE]` (app/family_cmd.cpp).
int runFamilyCommand(const QStringList& arguments);
/// --edit, --skip and --steer values as intervention lines (core/edit.h's addIntervention syntax), in that order:
/// the edits as written, then "skip N", then "steer SPEC". `trace` and `gui` both take these options.
/// Prints each of the model's load warnings (Model::warnings) on stderr once, as "nnscope: warning: ...", then its notes
/// (Model::notes: the compute dtype chosen for this CPU) as "nnscope: note: ...".
void printLoadWarnings(const Model& model);
QStringList interventionLines(const QStringList& edits, const QStringList& skips, const QStringList& steers);

}  // namespace nnscope
