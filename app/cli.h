// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/error.h"

#include <QStringList>

class QCommandLineOption;
class QCommandLineParser;

namespace nnscope {

class Model;

/// A command line wrong in itself: an unknown option, a missing or malformed option value, a stray word. runCli
/// returns exit status 2 for it, and 1 for a command that could not be carried out (a broken checkpoint, a value
/// path the model lacks, a token outside its vocabulary).
class UsageError : public Error {
public:
    using Error::Error;
};

/// Parses a sub-command's `args` (the program name first) as QCommandLineParser::process does, --help and
/// --help-all printing the usage and exiting 0, except that an unknown option or an option without its value throws
/// UsageError ("Unknown option 'x' (see nnscope trace --help).") instead of exiting with status 1.
void parseCommandLine(QCommandLineParser& p, const QStringList& args);

/// `option`'s value in `p` as an integer of at least `minimum`; a UsageError naming the option and the value otherwise
/// ("--steps must be an integer of at least 1, not \"x\".").
long long integerOption(const QCommandLineParser& p, const QCommandLineOption& option, long long minimum);

/// The value `parse` returns (a core parser of one option's value, such as parseDtypeRequest); its Error, a malformed
/// value, rethrown as a UsageError.
template <class Parse>
auto optionValue(Parse&& parse) -> decltype(parse()) {
    try {
        return parse();
    } catch (const UsageError&) {
        throw;
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
}

/// The sub-commands the command line runs without a window.
bool isCliCommand(const QString& name);
/// Runs one command-line sub-command (DESIGN.md section 3); returns the process exit status.
/// Errors go to stderr with a non-zero status (2: a usage error, UsageError; 1: any other); nothing is half-written.
int runCli(const QStringList& arguments);
/// `nnscope train-demo --out DIR [--seed N] ...` (app/train_demo_cmd.cpp). `arguments` as runCli passes them,
/// with the sub-command removed.
int runTrainDemoCommand(const QStringList& arguments);
/// `nnscope train-demo-sae`: trains the demo's sparse autoencoder (trainDemoDictionary) and prints its figures.
int runTrainDemoSaeCommand(const QStringList& arguments);
/// `nnscope train-demo-transcoders`: trains the demo's per-layer transcoders (trainDemoTranscoders), prints their figures.
int runTrainDemoTranscodersCommand(const QStringList& arguments);
/// `nnscope family --model DIR [--format md|html] [--out FILE]` (app/family_cmd.cpp).
int runFamilyCommand(const QStringList& arguments);
/// --edit, --skip and --steer values as intervention lines (core/run/edit.h's addIntervention syntax), in that order:
/// the edits as written, then "skip N", then "steer SPEC". `trace` and `gui` both take these options.
/// Prints each of the model's load warnings (Model::warnings) on stderr once, as "nnscope: warning: ...", then its notes
/// (Model::notes: the compute dtype chosen for this CPU) as "nnscope: note: ...".
void printLoadWarnings(const Model& model);
QStringList interventionLines(const QStringList& edits, const QStringList& skips, const QStringList& steers);

}  // namespace nnscope
