// SPDX-License-Identifier: MIT
// `nnscope family --model DIR [--format md|html] [--out FILE] [--prompt TEXT] [--threads N] [--dtype D]`: the family page of
// a checkpoint (core/pages/family_page.h), its notes' checks run on the checkpoint (core/pages/checks.h). The page goes to stdout, or
// atomically to FILE; a summary line "checks: N passed, M failed" goes to stderr. The exit status is 0 even when a check
// fails (the page reports it); it is non-zero only when the page cannot be made (bad options, unloadable checkpoint).
#include "cli.h"

#include "core/pages/checks.h"
#include "core/model/error.h"
#include "core/pages/family_page.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"

#include <QCommandLineParser>

#include <iostream>
#include <string>

namespace nnscope {

int runFamilyCommand(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(
        "nnscope family: the family page of a checkpoint, as the encyclopedia pages in shared/seeds/ lay it out (title and quirks,\n"
        "the block, values by host, printout, config, the notes, the family module's description), generated from\n"
        "families/<family>.cpp. Every note that states a checkable fact is checked on the checkpoint with a short prompt\n"
        "(✔/✗ and the measured figure). See docs/FAMILIES.md.");
    p.addHelpOption();
    QCommandLineOption model("model", "Checkpoint folder (config.json, model.safetensors, tokenizer).", "DIR");
    QCommandLineOption format("format", "md (Markdown, default) or html (one self-contained document).", "FORMAT", "md");
    QCommandLineOption out("out", "Write the page to FILE (atomically) instead of stdout.", "FILE");
    QCommandLineOption prompt("prompt", "The prompt the checks run on (at least 3 tokens).", "TEXT", kDefaultCheckPrompt);
    QCommandLineOption threads("threads", "CPU threads for libtorch (default: every core).", "N", "0");
    QCommandLineOption dtype("dtype", "Compute dtype: auto (default: the checkpoint's own where this CPU computes it natively, "
                             "else float32), float32 or bfloat16.", "D", "auto");
    QCommandLineOption device("device", "Where the model computes: cpu (default), cuda or cuda:N (a CUDA build: docs/DEVELOPING.md).",
                              "D", "cpu");
    p.addOptions({model, format, out, prompt, threads, dtype, device});
    parseCommandLine(p, arguments);
    if (!p.positionalArguments().isEmpty())
        throw UsageError("family takes no positional arguments (got \"" + p.positionalArguments().join(" ").toStdString() +
                         "\"); see nnscope family --help.");
    if (!p.isSet(model)) throw UsageError("family needs --model DIR, the checkpoint folder.");
    if (p.isSet(out)) checkWritableFile(p.value(out).toStdString());  // before the checks run
    const PageFormat fmt = optionValue([&] { return parsePageFormat(p.value(format).toStdString()); });
    bool ok = false;
    const int n = p.value(threads).toInt(&ok);
    if (!ok || n < 0) throw UsageError("--threads must be 0 (every core) or more, not \"" + p.value(threads).toStdString() + "\".");
    configureThreads(n);
    const auto dtypeRequest = optionValue([&] { return parseDtypeRequest(p.value(dtype).toStdString()); });
    const torch::Device where = optionValue([&] { return parseDevice(p.value(device).toStdString()); });
    const auto loaded = Model::load(p.value(model).toStdString(), LoadOptions().withDtype(dtypeRequest).withDevice(where));
    printLoadWarnings(*loaded);
    if (!loaded->tokenizer())  // the checks that need one fail; say once which file and why
        std::cerr << "nnscope: warning: no tokenizer, so the checks run on fixed token ids and the BOS check fails: "
                  << loaded->tokenizerError() << std::endl;
    const auto results = runFamilyChecks(*loaded, p.value(prompt).toStdString());
    const std::string page = familyPage(*loaded, results, fmt);
    if (p.isSet(out)) writeFileAtomically(p.value(out).toStdString(), page);
    else std::cout << page << std::flush;
    const CheckSummary s = summarizeChecks(results);
    std::cerr << "checks: " << s.passed << " passed, " << s.failed << " failed";
    if (s.figures) std::cerr << ", " << s.figures << " measured";
    if (s.skipped) std::cerr << ", " << s.skipped << " not applicable";
    std::cerr << std::endl;
    for (const auto& r : results)
        if (r.kind == CheckKind::Claim && !r.passed)
            std::cerr << "  ✗ " << r.id << ": " << r.figure
                      << (r.figure == "could not run" || r.figure == "no tokenizer" ? " (" + r.detail + ")" : std::string()) << std::endl;
    return 0;
}

}  // namespace nnscope
