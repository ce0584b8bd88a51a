// SPDX-License-Identifier: MIT
// `nnscope train-demo`: trains the demo model (core/run/train_demo.h) and prints progress, then the figures of the
// induction circuit measured on the written folder.
#include "cli.h"

#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/run/train_demo.h"

#include <QCommandLineParser>

#include <cstdio>
#include <string>

namespace nnscope {

int runTrainDemoCommand(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(
        "nnscope train-demo: train the demo model, a small Llama whose second layer forms an induction head,\n"
        "and write it as a HuggingFace checkpoint folder (see docs/DEMO.md).");
    p.addHelpOption();
    const DemoTrainOptions defaults;
    QCommandLineOption out("out", "Checkpoint folder to write (a new folder, or an older demo folder to replace).", "DIR");
    QCommandLineOption seed("seed", QString("Random seed of the weights and the data (default %1).").arg(defaults.seed), "N",
                            QString::number(defaults.seed));
    QCommandLineOption steps("steps", QString("Optimizer steps (default %1).").arg(defaults.steps), "N",
                             QString::number(defaults.steps));
    QCommandLineOption threads("threads",
                               QString("libtorch threads while training (default %1; 0: every core). The weights are "
                                       "bit-for-bit reproducible for a given seed and thread count.")
                                   .arg(defaults.threads),
                               "N", QString::number(defaults.threads));
    QCommandLineOption noEval("no-eval", "Skip measuring the written folder (and its figures in README.md).");
    p.addOptions({out, seed, steps, threads, noEval});
    parseCommandLine(p, arguments);
    if (!p.positionalArguments().isEmpty())
        throw UsageError("train-demo takes no positional arguments (got \"" + p.positionalArguments().join(" ").toStdString() +
                         "\"); see nnscope train-demo --help.");
    if (!p.isSet(out)) throw UsageError("train-demo needs --out DIR, the folder to write the demo model to.");

    DemoTrainOptions o;
    o.outDir = p.value(out).toStdString();
    bool ok = false;
    o.seed = p.value(seed).toULongLong(&ok);
    if (!ok) throw UsageError("--seed must be a non-negative integer, not \"" + p.value(seed).toStdString() + "\".");
    o.steps = p.value(steps).toInt(&ok);
    if (!ok || o.steps < 1) throw UsageError("--steps must be a positive integer, not \"" + p.value(steps).toStdString() + "\".");
    o.threads = p.value(threads).toInt(&ok);
    if (!ok || o.threads < 0) throw UsageError("--threads must be 0 (every core) or more, not \"" + p.value(threads).toStdString() + "\".");
    o.evaluate = !p.isSet(noEval);
    o.commandLine = "nnscope train-demo --out " + o.outDir + " --seed " + std::to_string(o.seed) + " --steps " +
                    std::to_string(o.steps) + " --threads " + std::to_string(o.threads);
    o.progress = [](const DemoTrainProgress& pr) {
        std::printf("step %5d/%d  loss %.4f  (on repeats %.4f)  lr %.2e  %6.1f s\n", pr.step, pr.steps, pr.loss,
                    pr.copyLoss, pr.learningRate, pr.elapsedSeconds);
        std::fflush(stdout);
    };
    std::printf("training the demo model: seed %llu, %d steps of %d x %d tokens, into %s\n",
                static_cast<unsigned long long>(o.seed), o.steps, o.batchSize, o.seqLen, o.outDir.c_str());
    std::fflush(stdout);

    const DemoTrainResult r = trainDemoModel(o);
    std::printf("trained %lld parameters in %.1f s on %d thread(s); final loss %.4f\n",
                static_cast<long long>(r.parameters), r.trainSeconds, r.threads, r.finalLoss);
    if (r.eval) {
        const InductionEval& e = *r.eval;
        std::printf("held-out rows with a repeated run of %d-%d words (%d rows): loss %.3f on the first occurrence, "
                    "%.3f on the second\n", e.minRunLength, e.maxRunLength, e.sequences, e.firstHalfLoss, e.secondHalfLoss);
        for (size_t l = 0; l < e.scores.size(); ++l) {
            std::printf("layer %zu induction:", l);
            for (double v : e.scores[l]) std::printf(" %.3f", v);
            std::printf("   previous-token:");
            for (double v : e.previousTokenScores[l]) std::printf(" %.3f", v);
            std::printf("\n");
        }
    }
    std::printf("wrote %s (%.1f s in all)\n", r.outDir.c_str(), r.totalSeconds);
    return 0;
}

int runTrainDemoSaeCommand(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(
        "nnscope train-demo-sae: train a TopK sparse autoencoder on the demo model's residual stream after a block, over\n"
        "the demo's own training data, and write it as a SAELens folder (see docs/FEATURES.md).");
    p.addHelpOption();
    const DemoDictionaryOptions defaults;
    QCommandLineOption model("model", "The demo model's folder.", "DIR");
    QCommandLineOption out("out", "The SAELens folder to write (cfg.json + sae_weights.safetensors).", "DIR");
    QCommandLineOption layer("layer", QString("The block whose output it reads (default %1).").arg(defaults.layer), "N",
                             QString::number(defaults.layer));
    QCommandLineOption steps("steps", QString("Optimizer steps (default %1).").arg(defaults.steps), "N", QString::number(defaults.steps));
    QCommandLineOption seed("seed", QString("Random seed (default %1).").arg(defaults.seed), "N", QString::number(defaults.seed));
    QCommandLineOption threads("threads", QString("libtorch threads (default %1; 0: every core).").arg(defaults.threads), "N",
                               QString::number(defaults.threads));
    QCommandLineOption writeText("write-text", "Instead of training, write rows of the demo's training text (the data the SAE is trained "
                                               "on), one row per line, to FILE.txt: a dataset for nnscope features --dataset.", "FILE.txt");
    QCommandLineOption rows("rows", "With --write-text: how many rows (default 2000) of 64 tokens.", "N", "2000");
    p.addOptions({model, out, layer, steps, seed, threads, writeText, rows});
    parseCommandLine(p, arguments);
    if (!p.positionalArguments().isEmpty())
        throw UsageError("train-demo-sae takes no positional arguments; see nnscope train-demo-sae --help.");
    if (p.isSet(writeText)) {
        bool ok = false;
        const int n = p.value(rows).toInt(&ok);
        if (!ok || n < 1) throw UsageError("--rows must be a positive integer.");
        std::string text;
        for (const std::string& line : demoTrainingText(n, 64, p.value(seed).toULongLong())) text += line + "\n";
        writeFileAtomically(p.value(writeText).toStdString(), text);
        std::printf("wrote %d rows of the demo's training text to %s\n", n, p.value(writeText).toStdString().c_str());
        return 0;
    }
    if (!p.isSet(model) || !p.isSet(out)) throw UsageError("train-demo-sae needs --model DIR and --out DIR.");
    DemoDictionaryOptions o;
    o.modelDir = p.value(model).toStdString();
    o.outDir = p.value(out).toStdString();
    bool ok = false;
    o.layer = static_cast<int>(integerOption(p, layer, 0));
    o.steps = static_cast<int>(integerOption(p, steps, 1));
    o.threads = static_cast<int>(integerOption(p, threads, 0));
    o.seed = p.value(seed).toULongLong(&ok);
    if (!ok) throw UsageError("--seed must be a non-negative integer.");
    requireDemoVocabulary(o.modelDir, "train-demo-sae");  // before the banner: another model is refused, nothing said trained
    std::printf("training a %lld-feature TopK (k = %lld) SAE on %s, layers.%d.layer_output, %d steps\n",
                static_cast<long long>(o.width), static_cast<long long>(o.k), o.modelDir.c_str(), o.layer, o.steps);
    std::fflush(stdout);
    const DemoDictionaryResult r = trainDemoDictionary(o);
    std::printf("held-out rows: explained variance %.3f, mean L0 %.2f, %lld features never active; wrote %s (%.1f s)\n",
                r.explainedVariance, r.meanL0, static_cast<long long>(r.deadFeatures), r.outDir.c_str(), r.seconds);
    return 0;
}

int runTrainDemoTranscodersCommand(const QStringList& arguments) {
    QCommandLineParser p;
    p.setApplicationDescription(
        "nnscope train-demo-transcoders: train one ReLU transcoder per block of the demo model (features read mlp_input and\n"
        "reconstruct mlp_output) over the demo's own training data, and write them as a circuit-tracer transcoder set\n"
        "(config.yaml + layer_<i>.safetensors) for nnscope circuit and the Circuit view (see docs/CIRCUITS.md).");
    p.addHelpOption();
    const DemoTranscoderOptions defaults;
    QCommandLineOption model("model", "The demo model's folder.", "DIR");
    QCommandLineOption out("out", "The transcoder set's folder to write.", "DIR");
    QCommandLineOption steps("steps", QString("Optimizer steps (default %1).").arg(defaults.steps), "N", QString::number(defaults.steps));
    QCommandLineOption width("width", QString("Features per layer (default %1).").arg(defaults.width), "N", QString::number(defaults.width));
    QCommandLineOption l1("l1", QString("The sparsity penalty's weight (default %1).").arg(defaults.l1), "X", QString::number(defaults.l1));
    QCommandLineOption seed("seed", QString("Random seed (default %1).").arg(defaults.seed), "N", QString::number(defaults.seed));
    QCommandLineOption threads("threads", QString("libtorch threads (default %1; 0: every core).").arg(defaults.threads), "N",
                               QString::number(defaults.threads));
    p.addOptions({model, out, steps, width, l1, seed, threads});
    parseCommandLine(p, arguments);
    if (!p.positionalArguments().isEmpty())
        throw UsageError("train-demo-transcoders takes no positional arguments; see nnscope train-demo-transcoders --help.");
    if (!p.isSet(model) || !p.isSet(out)) throw UsageError("train-demo-transcoders needs --model DIR and --out DIR.");
    DemoTranscoderOptions o;
    o.modelDir = p.value(model).toStdString();
    o.outDir = p.value(out).toStdString();
    bool ok = false;
    o.steps = static_cast<int>(integerOption(p, steps, 1));
    o.width = static_cast<int>(integerOption(p, width, 1));
    o.threads = static_cast<int>(integerOption(p, threads, 0));
    o.l1 = p.value(l1).toDouble(&ok);
    if (!ok || o.l1 < 0) throw UsageError("--l1 must be a number of at least 0, not \"" + p.value(l1).toStdString() + "\".");
    o.seed = p.value(seed).toULongLong(&ok);
    if (!ok) throw UsageError("--seed must be a non-negative integer.");
    requireDemoVocabulary(o.modelDir, "train-demo-transcoders");
    std::printf("training %lld-feature ReLU transcoders (L1 %g) on every block of %s, %d steps\n", static_cast<long long>(o.width), o.l1,
                o.modelDir.c_str(), o.steps);
    std::fflush(stdout);
    const DemoTranscoderResult r = trainDemoTranscoders(o);
    for (size_t l = 0; l < r.explainedVariance.size(); ++l)
        std::printf("layer %zu, held-out rows: explained variance of mlp_output %.3f, mean L0 %.2f, %lld features never active\n", l,
                    r.explainedVariance[l], r.meanL0[l], static_cast<long long>(r.deadFeatures[l]));
    std::printf("wrote %s (%.1f s)\n", r.outDir.c_str(), r.seconds);
    return 0;
}

}  // namespace nnscope
