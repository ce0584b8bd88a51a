// SPDX-License-Identifier: MIT
#include "cli.h"

#include "core/model/allocator.h"
#include "core/model/device.h"
#include "core/model/error.h"
#include "core/model/gemv.h"
#include "core/run/edit.h"
#include "core/run/dashboard.h"
#include "core/run/features.h"
#include "core/analysis/attribution.h"
#include "core/analysis/valuestats.h"
#include "core/analysis/contribution.h"
#include "core/analysis/circuit.h"
#include "core/analysis/circuitprune.h"
#include "core/io/graphjson.h"
#include "core/io/export.h"
#include "core/run/generate.h"
#include "core/analysis/headscores.h"
#include "core/run/openblas.h"
#include "core/run/patching.h"
#include "core/io/safetensors.h"
#include "core/io/filehash.h"
#include "core/model/model.h"
#include "core/pages/support.h"
#include "core/run/trace.h"
#include "defaultmodel.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTextStream>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <atomic>
#include <csignal>
#include <iostream>
#include <sstream>

#include <sys/resource.h>  // getrusage
#include <unistd.h>  // isatty

namespace nnscope {
namespace {

const QStringList kCommands = {"trace", "generate", "tokenize", "support", "print", "train-demo", "family", "patch", "attribute", "heads", "graph",
                               "features", "circuit", "train-demo-sae", "train-demo-transcoders"};

std::string s(const QString& q) { return q.toStdString(); }

/// `text` (UTF-8) in a column `width` characters wide, counted in code points, not bytes ("␣" is one character of
/// three bytes, and printf's %-12s counted three): cut to `width` characters when `cut`, then padded with spaces on
/// the right (`left` alignment) or on the left.
std::string column(const std::string& text, size_t width, bool left = true, bool cut = false) {
    std::string out;
    size_t chars = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
        if (starts && cut && chars == width) break;
        chars += starts;
        out += text[i];
    }
    const std::string pad(chars < width ? width - chars : 0, ' ');
    return left ? out + pad : pad + out;
}

void printUsage() {
    std::cout << "nnscope " << version() << ": look inside transformer language models.\n\n"
              << "Usage:\n"
              << "  nnscope [gui] [--model DIR] [--prompt TEXT] [--dictionary DIR]... [--screenshot FILE.png]   the explorer window\n"
              << "  nnscope trace --model DIR --prompt TEXT [--prompt TEXT]... [--save PATTERN]... [--out FILE] [--dictionary DIR]...\n"
              << "                [--dtype auto|float32|bfloat16] [--device cpu|cuda] [--top-k K] [--json]\n"
              << "                [--edit 'PATH[INDEX] OP VALUE']... [--skip N]... [--steer LAYERS:FACTOR:FILE.npy[:POS]]...\n"
              << "  nnscope patch --model DIR --clean TEXT --corrupted TEXT --answer TOKEN [--wrong TOKEN]\n"
              << "                [--site layer_output|attention_output|mlp_output|head:H|heads] [--method exact|attribution|both]\n"
              << "                [--blocks LIST] [--positions LIST] [--batch B]\n"
              << "                [--json] [--csv FILE] [--edit ...]... [--skip N]... [--steer ...]...\n"
              << "  nnscope attribute --model DIR --prompt TEXT --target TOKEN [--wrong TOKEN] [--position P] [--neurons N]\n"
              << "                [--tokens K] [--json]\n"
              << "                direct logit attribution: which block, head and neuron wrote the token\n"
              << "  nnscope heads --model DIR (--prompt TEXT | --repeated-random N [--seed S]) [--sort SCORE] [--top N] [--json]\n"
              << "                per-head scores: previous_token, induction, first_token, diagonal\n"
              << "  nnscope graph --model DIR --prompt TEXT [--position P] [--threshold T] [--heads K] [--json]\n"
              << "                information flow routes: which tokens, through which blocks, a position is made of\n"
              << "  nnscope circuit --model DIR --transcoders DIR --prompt TEXT --out GRAPH.json [--no-prune] [--node-threshold X]\n"
              << "                  [--edge-threshold Y] [--max-feature-nodes N] [--max-logits N] [--logit-probability P]\n"
              << "                  [--batch-size B] [--slug NAME] [--estimate] [--json]\n"
              << "                an attribution graph through transcoders, circuit-tracer's (docs/CIRCUITS.md)\n"
              << "  nnscope features --model DIR --dictionary DIR --prompt TEXT [--prompt TEXT]... [--top-k K] [--json] [--out FILE]\n"
              << "                a sparse dictionary's features on each prompt (SAELens, Gemma Scope 2, sparsify, Llama Scope)\n"
              << "  nnscope features --model DIR --dictionary DIR --dataset FILE.txt --out DASH [--context-size N] [--batch B]\n"
              << "                [--max-documents N] [--max-tokens N] [--json]\n"
              << "                a feature dashboard of a local text file (one document per line): top contexts, histograms, density\n"
              << "  nnscope generate --model DIR --prompt TEXT [--max-new-tokens N] [--ignore-eos] [--greedy | --sample]\n"
              << "                [--temperature T] [--top-k K] [--top-p P] [--seed N] [--compare]\n"
              << "                [--edit ...]... [--skip N]... [--steer ...]... [--json]\n"
              << "  nnscope tokenize --model DIR --text TEXT [--json]\n"
              << "  nnscope support --model DIR [--dictionary DIR]... [--json]\n"
              << "  nnscope print --model DIR\n"
              << "  nnscope family --model DIR [--format md|html] [--out FILE]   the family page, its notes checked\n"
              << "  nnscope train-demo --out DIR [--seed N] [--steps N] [--threads N] [--no-eval]\n"
              << "                                           train the demo model (an induction head)\n"
              << "  nnscope train-demo-sae --model DIR --out DIR [--layer N] [--steps N] [--seed N]\n"
              << "                                           train the demo's sparse autoencoder (a SAELens folder)\n"
              << "  nnscope train-demo-transcoders --model DIR --out DIR [--steps N] [--l1 X] [--seed N]\n"
              << "                                           train the demo's transcoders (a circuit-tracer set)\n\n"
              << "Every command that runs the model takes --device cpu|cuda[:N] (a GPU needs a CUDA build: docs/DEVELOPING.md).\n"
              << "Run `nnscope COMMAND --help` for a command's options.\n";
}

struct Common {
    QCommandLineOption model{"model", "Checkpoint folder (config.json, model.safetensors, tokenizer).", "DIR"};
    QCommandLineOption dtype{"dtype",
                             "Compute dtype: auto (default: the checkpoint's own dtype where this CPU computes it natively, "
                             "bfloat16 needing AVX512-BF16 or AMX; else float32, said on stderr), float32 or bfloat16.",
                             "D", "auto"};
    QCommandLineOption json{"json", "Print one machine-readable JSON document on stdout."};
    QCommandLineOption threads{"threads", "CPU threads for libtorch (default: every core).", "N", "0"};
    QCommandLineOption device{"device",
                              "Where the weights live and the model computes: cpu (default), cuda (the first GPU) or cuda:N. A GPU "
                              "needs an nnscope built on a libtorch with CUDA (docs/DEVELOPING.md); results come back as CPU values.",
                              "D", "cpu"};
};

/// A word after a sub-command that is no option's value is a mistake (a prompt without --prompt, a typo): refuse it.
void rejectStray(const QCommandLineParser& p) {
    if (!p.positionalArguments().isEmpty())
        throw UsageError("unexpected argument '" + p.positionalArguments().front().toStdString() +
                         "' (options start with --; quote a prompt and give it with --prompt).");
}

/// The message on stderr, a very long one (a 20 kB argument echoed back) cut in its middle so that its start and its
/// closing advice stay readable.
int fail(const std::string& message, int status = 1) {
    constexpr size_t kHead = 300, kTail = 200;
    if (message.size() > kHead + kTail + 100)
        std::cerr << "nnscope: " << message.substr(0, kHead) << " … (" << message.size() - kHead - kTail << " characters cut) … "
                  << message.substr(message.size() - kTail) << std::endl;
    else
        std::cerr << "nnscope: " << message << std::endl;
    return status;
}

}  // namespace

long long integerOption(const QCommandLineParser& p, const QCommandLineOption& option, long long minimum) {
    bool ok = false;
    const long long v = p.value(option).toLongLong(&ok);
    if (!ok || v < minimum)
        throw UsageError("--" + option.names().front().toStdString() + " must be an integer of at least " + std::to_string(minimum) +
                         ", not \"" + p.value(option).toStdString() + "\".");
    return v;
}

void parseCommandLine(QCommandLineParser& p, const QStringList& args) {
    if (!p.parse(args)) {
        QString text = p.errorText();  // "Unknown option 'bogus'."
        if (text.endsWith('.')) text.chop(1);
        const std::string command = QCoreApplication::arguments().value(1).toStdString();
        throw UsageError(text.toStdString() + " (see nnscope " + command + " --help).");
    }
    p.process(args);  // --help, --help-all: the usage on stdout, exit status 0; nothing else (the parse succeeded)
}

namespace {

/// The checkpoint of --model, with --dtype, --threads and (for a command that runs the model, `runs`) --device.
std::shared_ptr<const Model> loadModel(QCommandLineParser& p, const Common& c, bool tokenizer = true, bool runs = true) {
    if (!p.isSet(c.model)) throw UsageError("--model DIR is required.");
    bool ok = false;
    const int threads = p.value(c.threads).toInt(&ok);
    if (!ok || threads < 0) throw UsageError("--threads must be a non-negative integer.");
    configureThreads(threads);
    const auto dtype = optionValue([&] { return parseDtypeRequest(s(p.value(c.dtype))); });
    // support and print read the weights without running them: they take no --device and stay on the CPU
    const torch::Device device = runs ? optionValue([&] { return parseDevice(s(p.value(c.device))); }) : torch::Device(torch::kCPU);
    auto model = Model::load(s(p.value(c.model)), LoadOptions().withDtype(dtype).withTokenizer(tokenizer).withDevice(device));
    printLoadWarnings(*model);
    return model;
}

nlohmann::json tokensJson(const Model& m, const std::vector<int64_t>& ids) {
    nlohmann::json out = nlohmann::json::array();
    for (int64_t id : ids) out.push_back(m.tokenizer() ? m.tokenizer()->tokenLabel(id) : std::to_string(id));
    return out;
}

/// The interventions of `lines` (interventionLines) as one EditList. A refused skip or steer line is named as the
/// option was written ("--skip 9: block 9 is out of range ..."); a malformed one (MalformedIntervention) is a
/// UsageError (exit status 2), one that does not fit the model an Error (1).
std::shared_ptr<EditList> interventionsFromLines(const Model& m, const QStringList& lines) {
    auto list = std::make_shared<EditList>();
    for (const auto& line : lines) {
        try {
            addIntervention(*list, m, s(line));
        } catch (const Error& e) {
            std::string message = e.what();  // "'skip 9': ..." -> "--skip 9: ..."
            if (!message.empty() && message[0] == '\'' && (message.rfind("'skip", 0) == 0 || message.rfind("'steer", 0) == 0)) {
                const auto close = message.find('\'', 1);
                if (close != std::string::npos) message = "--" + message.substr(1, close - 1) + message.substr(close + 1);
            }
            if (dynamic_cast<const MalformedIntervention*>(&e)) throw UsageError(message);
            throw Error(message);
        }
    }
    return list;
}

/// encodeBatch, with a warning on stderr for each prompt longer than config.json's max_position_embeddings: the pass
/// runs (transformers' does too), but the model was not trained on such contexts and its values there are no guide.
Batch encodePrompts(const Model& m, const std::vector<std::string>& prompts) {
    Batch b = encodeBatch(m, prompts);
    // words the vocabulary lacks become the unknown token (a word-level vocabulary such as the demo's): say so, the
    // pass reads "<unk>" there, not the word
    if (const Tokenizer* tok = m.tokenizer())
        for (size_t i = 0; i < b.ids.size(); ++i) {
            int unknown = 0;
            std::string piece;
            for (int64_t id : b.ids[i])
                if (tok->isUnknownToken(id) && prompts[i].find(tok->tokenString(id)) == std::string::npos) ++unknown, piece = tok->tokenString(id);
            if (unknown > 0)
                std::cerr << "nnscope: warning: " << (b.ids.size() > 1 ? "prompt " + std::to_string(i) + " has " : "the prompt has ") << unknown
                          << " word(s) the tokenizer does not know, each read as the unknown token " << piece
                          << " (`nnscope tokenize` shows where)." << std::endl;
        }
    const int64_t context = m.config().maxPositionEmbeddings;
    for (size_t i = 0; i < b.ids.size(); ++i)
        if (context > 0 && static_cast<int64_t>(b.ids[i].size()) > context)
            std::cerr << "nnscope: warning: " << (b.ids.size() > 1 ? "prompt " + std::to_string(i) + " is " : "the prompt is ")
                      << b.ids[i].size() << " tokens, more than max_position_embeddings " << context << " in " << m.dir()
                      << "/config.json: the model was not trained on contexts this long." << std::endl;
    return b;
}

/// A token given as text (must be one token) or as #ID.
int64_t tokenArgument(const Model& m, const QString& text, const std::string& what) { return parseTokenArgument(m, s(text), what); }

/// The --edit / --skip / --steer options trace and generate share.
struct InterventionOptions {
    QCommandLineOption edit{"edit", "An edit applied during the pass, PATH[INDEX] OP VALUE (see docs/INTERVENTIONS.md), e.g. "
                                    "'layers.1.self_attn.attention_queries[:, 1] *= 2'; repeatable, applied in order. Positions count "
                                    "from each prompt's first token (-1: its last; `new`: generated tokens).", "EDIT"};
    QCommandLineOption skip{"skip", "Skip block N (its output is its input); repeatable or comma-separated.", "N"};
    QCommandLineOption steer{"steer", "Steering: 'LAYERS:FACTOR:FILE.npy[:POSITIONS]' adds FACTOR x the vector to layer_output "
                                      "of each block in LAYERS (comma-separated) at POSITIONS (default all).", "SPEC"};
    QStringList lines(const QCommandLineParser& p) const { return interventionLines(p.values(edit), p.values(skip), p.values(steer)); }
};

/// A command's progress on stderr: rewritten in place on a terminal (padded to `width`), one line at most once a second
/// otherwise; the last step (done == total) is always shown. `text(done, total, elapsedSeconds)` makes the line.
class StderrProgress {
public:
    StderrProgress(int width, std::function<std::string(int64_t, int64_t, double)> text)
        : width_(width), text_(std::move(text)), terminal_(isatty(fileno(stderr))) {}
    void operator()(int64_t done, int64_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (done < total && now - lastShown_ < std::chrono::seconds(1)) return;
        if (done == total && shownDone_ == total) return;  // the last step reported again: said once
        shownDone_ = done;
        lastShown_ = now;
        const std::string text = text_(done, total, std::chrono::duration<double>(now - started_).count());
        if (terminal_)
            std::fprintf(stderr, "\r%-*s%s", width_, text.c_str(), done == total ? "\n" : "");
        else
            std::fprintf(stderr, "%s\n", text.c_str());
        pending_ = terminal_ && done < total;
        std::fflush(stderr);
    }
    /// Ends a line left open on a terminal (the work stopped before its last step), so that what follows starts on its own.
    void finish() {
        if (pending_) std::fprintf(stderr, "\n");
        pending_ = false;
    }
    double elapsedSeconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }

private:
    int width_;
    std::function<std::string(int64_t, int64_t, double)> text_;
    bool terminal_;
    bool pending_ = false;  ///< a terminal line was written without its newline
    int64_t shownDone_ = -1;  ///< the step last shown
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point lastShown_ = started_ - std::chrono::seconds(2);
};

int cmdPatch(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption clean("clean", "The clean prompt.", "TEXT");
    QCommandLineOption corrupted("corrupted", "The corrupted prompt (same number of tokens).", "TEXT");
    QCommandLineOption answer("answer", "The answer token (text of one token, or #ID).", "TOKEN");
    QCommandLineOption wrong("wrong", "The wrong token: the metric is logit(answer) - logit(wrong).", "TOKEN");
    QCommandLineOption metric("metric", "logit-diff (default with --wrong) or prob (the answer's probability).", "M");
    QCommandLineOption site("site", "What is patched: layer_output (default), attention_output, mlp_output, head:H, or heads "
                                    "(every head of every block, one cell per block x head x position).", "SITE", "layer_output");
    QCommandLineOption blocks("blocks", "The blocks patched, e.g. -1, 0,3,5 or 2-6 (default all); the others are not run.", "LIST");
    QCommandLineOption positions("positions", "The positions patched, e.g. -1, 0,3,5 or 2-6 (default all); the others are not run.", "LIST");
    QCommandLineOption batch("batch", "Patched runs per forward pass (default: sized to the prompt, 32 rows at 16 tokens).", "B");
    QCommandLineOption csv("csv", "Also write the grid as CSV to FILE.", "FILE");
    QCommandLineOption method("method", "exact (default: one patched run per block and position), attribution (the first-order "
                                        "estimate from one backward pass: attribution patching) or both (with their correlation).",
                              "M", "exact");
    InterventionOptions iv;
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, clean, corrupted, answer, wrong, metric, site, blocks, positions, batch, csv, method,
                  iv.edit, iv.skip, iv.steer});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(clean) || !p.isSet(corrupted) || !p.isSet(answer))
        throw UsageError("patch needs --clean, --corrupted and --answer.");
    if (p.isSet(csv)) checkWritableFile(s(p.value(csv)));  // before the grid runs, not after
    auto model = loadModel(p, c);
    PatchingOptions o;
    o.metric.answer = tokenArgument(*model, p.value(answer), "--answer");
    const QString kind = p.isSet(metric) ? p.value(metric) : (p.isSet(wrong) ? "logit-diff" : "prob");
    if (kind == "logit-diff") {
        if (!p.isSet(wrong)) throw UsageError("--metric logit-diff needs --wrong TOKEN.");
        o.metric.kind = PatchMetric::Kind::LogitDifference;
        o.metric.wrong = tokenArgument(*model, p.value(wrong), "--wrong");
    } else if (kind == "prob") {
        o.metric.kind = PatchMetric::Kind::TargetProbability;
    } else {
        throw UsageError("--metric must be logit-diff or prob, not '" + s(kind) + "'.");
    }
    o.site = optionValue([&] { return parsePatchSite(s(p.value(site)), &o.head); });
    // the interventions apply to the clean, the corrupted and every patched run (as `trace` takes them)
    const QStringList lines = iv.lines(p);
    auto edits = interventionsFromLines(*model, lines);
    if (!edits->empty()) o.intervention = edits;
    for (const auto& line : lines) o.interventionTexts.push_back(s(line));
    const Batch b = encodePrompts(*model, {s(p.value(clean)), s(p.value(corrupted))});
    if (p.isSet(blocks)) o.blocks = parseIndexList(s(p.value(blocks)), model->config().numLayers, "--blocks");
    if (p.isSet(positions)) o.positions = parseIndexList(s(p.value(positions)), static_cast<int64_t>(b.ids[1].size()), "--positions");
    if (p.isSet(batch)) {
        bool ok = false;
        o.batch = p.value(batch).toInt(&ok);
        if (!ok || o.batch < 1) throw UsageError("--batch must be a positive number of rows, not '" + s(p.value(batch)) + "'.");
    }
    // "cell K of N, about T s left" on stderr
    StderrProgress cells(48, [](int64_t done, int64_t total, double seconds) {
        return patchProgressText(static_cast<int>(done), static_cast<int>(total), seconds);
    });
    o.progress = [&cells](int done, int total) { cells(done, total); };
    const QString how = p.value(method);
    if (how != "exact" && how != "attribution" && how != "both") throw UsageError("--method must be exact, attribution or both, not '" + s(how) + "'.");
    std::optional<PatchingResult> estimate;
    if (how != "exact") {
        PatchingOptions quiet = o;  // one backward pass; the progress counts the exact grid's cells
        quiet.progress = nullptr;
        estimate = attributionPatching(*model, b.ids[0], b.ids[1], quiet);
    }
    const PatchingResult r = how == "attribution" ? *estimate : activationPatching(*model, b.ids[0], b.ids[1], o);
    const double correlation = how == "both" ? gridCorrelation(r.grid, estimate->grid) : std::nan("");
    const std::string answerLabel = model->tokenizer() ? model->tokenizer()->tokenLabel(o.metric.answer) : "#" + std::to_string(o.metric.answer);
    const std::string wrongLabel = o.metric.wrong < 0 ? std::string()
                                   : model->tokenizer() ? model->tokenizer()->tokenLabel(o.metric.wrong)
                                                        : "#" + std::to_string(o.metric.wrong);
    if (p.isSet(csv)) {
        std::ostringstream out;
        out.precision(9);
        out << "# model: " << model->dir() << "\n# clean: " << s(p.value(clean)) << "\n# corrupted: " << s(p.value(corrupted))
            << "\n# site: " << r.site << "\n# metric: " << s(kind) << "\n# answer: " << answerLabel << " (id " << o.metric.answer << ")";
        if (o.metric.wrong >= 0) out << "\n# wrong: " << wrongLabel << " (id " << o.metric.wrong << ")";
        for (const auto& line : lines) out << "\n# intervention: " << s(line);
        out << "\n# clean metric: " << r.clean << "\n# corrupted metric: " << r.corrupted << "\n# cells not run are empty\nblock";
        if (r.headsPerBlock) out << ",head";
        for (size_t j = 0; j < r.tokens.size(); ++j) out << "," << j << ":" << r.tokens[j];
        out << "\n";
        for (size_t i = 0; i < r.grid.size(); ++i) {
            if (r.headsPerBlock)
                out << i / static_cast<size_t>(r.headsPerBlock) << "," << i % static_cast<size_t>(r.headsPerBlock);
            else
                out << i;
            for (double v : r.grid[i]) {
                out << ",";
                if (!std::isnan(v)) out << v;
            }
            out << "\n";
        }
        writeFileAtomically(s(p.value(csv)), out.str());
    }
    if (p.isSet(c.json)) {
        nlohmann::json j{{"site", r.site}, {"metric", s(kind)}, {"answer", {{"id", o.metric.answer}, {"token", answerLabel}}},
                         {"clean", r.clean}, {"corrupted", r.corrupted}, {"tokens", r.tokens}, {"grid", r.grid}};
        // cells not run are NaN, which JSON writes as null
        if (r.headsPerBlock) j["heads_per_block"] = r.headsPerBlock;
        if (o.metric.wrong >= 0) j["wrong"] = {{"id", o.metric.wrong}, {"token", wrongLabel}};
        j["method"] = s(how);
        j["interventions"] = nlohmann::json::array();
        for (const auto& line : lines) j["interventions"].push_back(s(line));
        if (how == "both") {
            j["attribution_grid"] = estimate->grid;
            j["correlation"] = std::isnan(correlation) ? nlohmann::json(nullptr) : nlohmann::json(correlation);
        }
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    std::printf("%s: clean %.6g   corrupted %.6g   (%s patched from the clean run at each block and position)\n",
                kind == "prob" ? ("p(\"" + answerLabel + "\")").c_str() : ("logit(\"" + answerLabel + "\") - logit(\"" + wrongLabel + "\")").c_str(),
                r.clean, r.corrupted, r.site.c_str());
    auto printGrid = [&](const PatchingResult& g) {
        // the rows and columns that were run (--blocks, --positions): a grid of a few cells is printed as a few cells
        std::vector<bool> rowRun(g.grid.size(), false), columnRun(g.tokens.size(), false);
        for (size_t i = 0; i < g.grid.size(); ++i)
            for (size_t j = 0; j < g.grid[i].size() && j < columnRun.size(); ++j)
                if (!std::isnan(g.grid[i][j])) rowRun[i] = columnRun[j] = true;
        std::printf(g.headsPerBlock ? "blk.hd" : "block");
        for (size_t j = 0; j < g.tokens.size(); ++j)
            if (columnRun[j]) std::printf(" %s", column(std::to_string(j) + ":" + g.tokens[j], 10, /*left=*/false, /*cut=*/true).c_str());
        std::printf("\n");
        for (size_t i = 0; i < g.grid.size(); ++i) {
            if (!rowRun[i]) continue;
            if (g.headsPerBlock)  // block.head
                std::printf("%3zu.%-2zu", i / static_cast<size_t>(g.headsPerBlock), i % static_cast<size_t>(g.headsPerBlock));
            else
                std::printf("%5zu", i);
            for (size_t j = 0; j < g.grid[i].size() && j < columnRun.size(); ++j) {
                if (!columnRun[j]) continue;
                if (std::isnan(g.grid[i][j]))
                    std::printf(" %10s", "");
                else
                    std::printf(" %10.4g", g.grid[i][j]);
            }
            std::printf("\n");
        }
    };
    if (!lines.isEmpty()) {
        std::printf("every run with %lld intervention(s):", static_cast<long long>(lines.size()));
        for (const auto& line : lines) std::printf("  %s", s(line).c_str());
        std::printf("\n");
    }
    if (how == "attribution") std::printf("attribution patching (first-order estimate from one backward pass):\n");
    printGrid(r);
    if (how == "both") {
        std::printf("\nattribution patching (first-order estimate from one backward pass), correlation with the exact grid %.4f:\n", correlation);
        printGrid(*estimate);
    }
    return 0;
}

int cmdTrace(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "A prompt; repeat for a batch (left-padded).", "TEXT");
    QCommandLineOption save("save", "Value path to keep, with * wildcards, or 'all'; repeatable.", "PATTERN");
    QCommandLineOption out("out", "Write the saved values to FILE (.safetensors, or .npy for one value).", "FILE");
    QCommandLineOption topk("top-k", "How many next tokens to print per prompt.", "K", "5");
    QCommandLineOption dictionary("dictionary", "Attach a sparse dictionary (an SAE or transcoder folder; repeatable): its features, "
                                                "reconstruction and error become values, SITE[NAME].features, .reconstruction and "
                                                ".error, that --save selects (docs/FEATURES.md).", "DIR");
    InterventionOptions iv;
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, prompt, save, out, topk, dictionary, iv.edit, iv.skip, iv.steer});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(prompt)) throw UsageError("trace needs at least one --prompt.");
    if (p.isSet(out) && !p.isSet(save)) throw UsageError("--out needs --save: say which values to write.");
    if (p.isSet(out) && !p.value(out).endsWith(".safetensors", Qt::CaseInsensitive) && !p.value(out).endsWith(".npy", Qt::CaseInsensitive))
        throw UsageError("--out " + s(p.value(out)) + ": write a .safetensors file (any number of values) or a .npy file (one value).");
    if (p.isSet(out)) checkWritableFile(s(p.value(out)));  // before the pass, not after
    bool ok = false;
    const int k = p.value(topk).toInt(&ok);
    if (!ok || k < 1) throw UsageError("--top-k must be a positive integer.");
    auto model = loadModel(p, c);
    std::vector<std::string> prompts;
    for (const auto& q : p.values(prompt)) prompts.push_back(s(q));
    // the dictionaries are read and checked against the model before anything runs
    std::vector<AttachedDictionary> dictionaries;
    for (const auto& dir : p.values(dictionary))  // a folder, or every layer of a circuit-tracer transcoder set
        for (const auto& d : loadDictionaries(s(dir))) dictionaries.push_back(AttachedDictionary::attach(*model, d));
    std::vector<std::string> patterns;
    for (const auto& pat : p.values(save)) patterns.push_back(s(pat));
    const SaveSelection selection = matchSaveValues(*model, dictionaries, patterns);
    const size_t selected = selection.values.size() + selection.dictionaryValues.size();
    if (p.isSet(out) && p.value(out).endsWith(".npy", Qt::CaseInsensitive) && selected != 1)
        throw UsageError("--out " + s(p.value(out)) + ": a .npy file holds one value but --save selects " + std::to_string(selected) +
                         "; write a .safetensors file instead.");
    TraceOptions opts;
    opts.save = selection.traced;  // the asked values, and the sites the asked dictionary values need
    const QStringList lines = iv.lines(p);
    auto edits = interventionsFromLines(*model, lines);
    if (!edits->empty()) opts.intervention = edits;
    Batch batch = encodePrompts(*model, prompts);
    TraceResult result = trace(*model, batch, opts);
    result.dictionaryValues = dictionaryValues(*model, result, dictionaries, selection.dictionaryValues);
    keepOnly(result, selection.values);
    if (const auto origin = firstNonFinite(*model, result))  // a saved value says where they start
        std::cerr << "nnscope: warning: the pass produced values that are not finite: " << describeNonFinite(*model, *origin)
                  << (edits->empty() ? "" : " Check the interventions (a division by zero, an overflow).") << std::endl;
    else if (!torch::isfinite(result.nextTokenProbs).all().item<bool>())
        std::cerr << "nnscope: warning: the pass produced non-finite values (NaN or infinity)"
                  << (edits->empty() ? "" : "; check the interventions (a division by zero, an overflow)") << "." << std::endl;
    if (p.isSet(out)) {
        std::map<std::string, std::string> extra;
        nlohmann::json e = nlohmann::json::array();
        for (const auto& line : lines) e.push_back(s(line));
        if (!e.empty()) extra["edits"] = e.dump();
        exportValues(s(p.value(out)), *model, result, extra);
    }
    auto top = topK(*model, result.nextTokenProbs, k);
    if (p.isSet(c.json)) {
        nlohmann::json j;
        j["model"] = model->dir();
        j["family"] = model->family().modelType;
        j["dtype"] = dtypeName(model->dtype());
        j["prompts"] = nlohmann::json::array();
        for (size_t i = 0; i < prompts.size(); ++i) {
            nlohmann::json pj = {{"prompt", prompts[i]}, {"ids", batch.ids[i]}, {"tokens", tokensJson(*model, batch.ids[i])}};
            pj["top_k"] = nlohmann::json::array();
            for (const auto& t : top[i]) pj["top_k"].push_back({{"id", t.id}, {"token", t.text}, {"prob", t.prob}});
            j["prompts"].push_back(pj);
        }
        j["saved"] = nlohmann::json::object();
        for (const auto& [key, t] : result.values)
            j["saved"][valuePath(model->family(), key)] = {{"shape", t.sizes().vec()}, {"layout", valueInfo(key.value).layout}};
        for (const DictionaryValue& v : result.dictionaryValues)
            j["saved"][v.path] = {{"shape", v.tensor.sizes().vec()}, {"layout", v.layout()}, {"axes", v.axes()}, {"dictionary", v.source->folder}};
        if (p.isSet(out)) j["out"] = s(p.value(out));
        j["interventions"] = nlohmann::json::array();
        for (const auto& line : lines) j["interventions"].push_back(s(line));
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        const size_t n = batch.ids[i].size();
        std::cout << "prompt " << i << ": \"" << prompts[i] << "\" (" << n << (n == 1 ? " token)\n" : " tokens)\n");
        if (top[i].empty()) std::cout << "  no next token: the model's output is not finite (NaN)\n";
        for (size_t r = 0; r < top[i].size(); ++r) {
            const std::string label = column("\"" + top[i][r].text + "\"", 20);
            std::printf("  %zu. %s id %-7lld p=%.6g\n", r + 1, label.c_str(), static_cast<long long>(top[i][r].id), top[i][r].prob);
        }
        std::fflush(stdout);
    }
    if (!result.values.empty() || !result.dictionaryValues.empty()) {
        const size_t count = result.values.size() + result.dictionaryValues.size();
        if (p.isSet(out)) {
            std::cout << "saved " << count << " value(s) to " << s(p.value(out)) << "\n";
        } else {
            std::cout << "read " << count << " value(s) (nothing written: add --out FILE.safetensors to keep them):\n";
            for (const auto& [key, t] : result.values) {
                std::ostringstream shape;
                shape << t.sizes();
                std::string axes;
                for (const auto& a : valueInfo(key.value).axes) axes += std::string(axes.empty() ? "" : " ") + a;
                std::cout << "  " << valuePath(model->family(), key) << " " << shape.str() << "  " << valueInfo(key.value).layout
                          << " [" << axes << "]\n";
            }
            for (const DictionaryValue& v : result.dictionaryValues) {
                std::ostringstream shape;
                shape << v.tensor.sizes();
                std::cout << "  " << v.path << " " << shape.str() << "  " << v.layout() << " [batch seq " << v.axes().back() << "]\n";
            }
        }
    }
    if (!edits->empty()) {
        std::cout << "with " << lines.size() << " intervention(s):";
        for (const auto& line : lines) std::cout << "  " << s(line);
        std::cout << "\n";
    }
    return 0;
}

int cmdGenerate(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "The prompt (empty: BOS alone).", "TEXT", "");
    QCommandLineOption maxNew("max-new-tokens", "How many tokens to add (default: generation_config.json's max_new_tokens, else 32).", "N");
    QCommandLineOption noEos("ignore-eos", "Keep going past the end-of-sequence ids.");
    QCommandLineOption sample("sample", "Sample (temperature, top-k, top-p) instead of taking the most probable token.");
    QCommandLineOption greedy("greedy", "Take the most probable token even where generation_config.json sets do_sample.");
    QCommandLineOption temperature("temperature", "Sampling temperature (> 0; generation_config.json's, else 1).", "T");
    QCommandLineOption topK("top-k", "Sample among the K most probable tokens (0: all; generation_config.json's, else 50).", "K");
    QCommandLineOption topP("top-p", "Sample among the fewest tokens whose probability reaches P (generation_config.json's, else 1).", "P");
    QCommandLineOption seed("seed", "The sampler's seed (the same seed gives the same text; default: a random one, printed).", "N");
    QCommandLineOption compare("compare", "With interventions, also generate without them and print both.");
    InterventionOptions iv;
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, prompt, maxNew, noEos, sample, greedy, temperature, topK, topP, seed, compare,
                  iv.edit, iv.skip, iv.steer});
    parseCommandLine(p, args);
    rejectStray(p);
    if (p.isSet(sample) && p.isSet(greedy)) throw UsageError("--sample and --greedy exclude each other.");
    auto model = loadModel(p, c);
    GenerateOptions o = generationDefaults(*model);
    bool ok = false;
    if (p.isSet(maxNew)) {
        o.maxNewTokens = p.value(maxNew).toInt(&ok);
        if (!ok || o.maxNewTokens < 0) throw UsageError("--max-new-tokens must be a non-negative integer.");
    }
    o.stopAtEos = !p.isSet(noEos);
    if (p.isSet(sample)) o.sample = true;
    if (p.isSet(greedy)) o.sample = false;
    if (p.isSet(temperature)) {
        o.temperature = p.value(temperature).toDouble(&ok);
        if (!ok || !(o.temperature > 0)) throw UsageError("--temperature must be a positive number.");
        o.sample = o.sample || !p.isSet(greedy);
    }
    if (p.isSet(topK)) {
        o.topK = p.value(topK).toLongLong(&ok);
        if (!ok || o.topK < 0) throw UsageError("--top-k must be a non-negative integer.");
        o.sample = o.sample || !p.isSet(greedy);
    }
    if (p.isSet(topP)) {
        o.topP = p.value(topP).toDouble(&ok);
        if (!ok || !(o.topP > 0 && o.topP <= 1)) throw UsageError("--top-p must be in (0, 1].");
        o.sample = o.sample || !p.isSet(greedy);
    }
    if (p.isSet(seed)) {
        o.seed = p.value(seed).toULongLong(&ok);
        if (!ok) throw UsageError("--seed must be a non-negative integer.");
    } else {
        o.seed = std::random_device{}();
    }
    const QStringList lines = iv.lines(p);
    auto edits = interventionsFromLines(*model, lines);
    Batch batch = encodePrompts(*model, {s(p.value(prompt))});
    GenerateOptions plain = o;
    if (!edits->empty()) o.intervention = edits;
    const Generation g = generate(*model, batch.ids[0], o);
    std::optional<Generation> baseline;
    if (p.isSet(compare) && o.intervention) baseline = generate(*model, batch.ids[0], plain);
    if (p.isSet(compare) && !o.intervention)
        std::cerr << "nnscope: note: --compare prints the continuation without the interventions beside the one with them, "
                     "and none was given (--edit, --skip, --steer): one continuation." << std::endl;
    const std::string text = model->tokenizer()->decodeShowingUnknown(g.ids, true);
    if (p.isSet(c.json)) {
        nlohmann::json j{{"ids", g.ids}, {"text", text}, {"prompt_tokens", g.promptLength}, {"stop", g.stopReason},
                         {"sampled", o.sample}, {"eos_token_ids", o.eosTokenIds}};
        if (o.sample) j.update({{"seed", o.seed}, {"temperature", o.temperature}, {"top_k", o.topK}, {"top_p", o.topP}});
        j["interventions"] = nlohmann::json::array();
        for (const auto& line : lines) j["interventions"].push_back(s(line));
        if (baseline) j["unedited"] = {{"ids", baseline->ids}, {"text", model->tokenizer()->decodeShowingUnknown(baseline->ids, true)}, {"stop", baseline->stopReason}};
        std::cout << j.dump() << std::endl;
        return 0;
    }
    if (baseline) {
        std::cout << "unedited: " << model->tokenizer()->decodeShowingUnknown(baseline->ids, true) << "\nedited:   " << text << std::endl;
    } else {
        std::cout << text << std::endl;
    }
    if (o.sample) std::cerr << "nnscope: sampled with seed " << o.seed << " (temperature " << o.temperature << ", top-k " << o.topK
                            << ", top-p " << o.topP << "); --seed " << o.seed << " gives this text again." << std::endl;
    return 0;
}

int cmdHeads(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "The prompt (repeat a phrase in it for the induction score).", "TEXT");
    QCommandLineOption sort("sort", "Order the rows by this score, largest first: previous_token, induction, first_token or diagonal "
                                    "(default: by block and head).", "SCORE");
    QCommandLineOption top("top", "Print only the first N rows (0: all).", "N", "0");
    QCommandLineOption repeated("repeated-random", "Instead of --prompt, score the heads on the standard induction test: N random "
                                                   "tokens repeated once (BOS first where the tokenizer adds one).", "N");
    QCommandLineOption seed("seed", "The seed of --repeated-random's tokens.", "S", "0");
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, prompt, sort, top, repeated, seed});
    parseCommandLine(p, args);
    rejectStray(p);
    if (p.isSet(prompt) == p.isSet(repeated)) throw UsageError("heads needs --prompt or --repeated-random (one of them).");
    bool seedOk = false;
    const qulonglong seedValue = p.value(seed).toULongLong(&seedOk);
    if (!seedOk) throw UsageError("--seed must be a non-negative integer.");
    bool repeatedOk = false;
    const qlonglong repeatedLength = p.isSet(repeated) ? p.value(repeated).toLongLong(&repeatedOk) : 0;
    if (p.isSet(repeated) && (!repeatedOk || repeatedLength < 2)) throw UsageError("--repeated-random must be an integer of at least 2.");
    const QString by = p.value(sort);
    if (p.isSet(sort) && by != "previous_token" && by != "induction" && by != "first_token" && by != "diagonal")
        throw UsageError("--sort must be previous_token, induction, first_token or diagonal, not '" + s(by) + "'.");
    bool ok = false;
    const int n = p.value(top).toInt(&ok);
    if (!ok || n < 0) throw UsageError("--top must be a non-negative integer.");
    auto model = loadModel(p, c);
    TraceOptions opts;
    for (int i = 0; i < model->config().numLayers; ++i) opts.save.push_back({Value::AttentionProbabilities, i});
    const Batch batch = p.isSet(repeated) ? batchFromIds({repeatedRandomTokens(*model, repeatedLength, seedValue)})
                                          : encodePrompts(*model, {s(p.value(prompt))});
    if (batch.ids[0].size() < 2)
        throw Error("heads: the prompt is " + std::to_string(batch.ids[0].size()) + " token(s) long; the scores need at least two "
                    "positions (the previous-token score compares each token with the one before it).");
    const TraceResult result = trace(*model, batch, opts);
    std::vector<HeadScore> rows = headScores(*model, result, 0);
    auto key = [&](const HeadScore& h) {
        const double v = by == "previous_token" ? h.previousToken : by == "induction" ? h.induction : by == "first_token" ? h.firstToken : h.diagonal;
        return std::isnan(v) ? -1.0 : v;
    };
    if (p.isSet(sort)) std::stable_sort(rows.begin(), rows.end(), [&](const HeadScore& a, const HeadScore& b) { return key(a) > key(b); });
    if (n > 0 && static_cast<size_t>(n) < rows.size()) rows.resize(static_cast<size_t>(n));
    auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
    const HeadScore chance = chanceScores(result.batch.ids[0]);
    const bool sinks = model->family().attentionSinks;  // gpt-oss: sink_share, the share the rows leave to the head's sink
    if (p.isSet(c.json)) {
        nlohmann::json j{{"tokens", tokensJson(*model, result.batch.ids[0])},
                         {"chance", {{"previous_token", num(chance.previousToken)}, {"induction", num(chance.induction)},
                                     {"first_token", num(chance.firstToken)}, {"diagonal", num(chance.diagonal)}}},
                         {"heads", nlohmann::json::array()}};
        if (p.isSet(repeated)) j["repeated_random"] = {{"length", repeatedLength}, {"seed", seedValue}};
        for (const auto& h : rows) {
            j["heads"].push_back({{"layer", h.layer}, {"head", h.head}, {"previous_token", num(h.previousToken)},
                                  {"induction", num(h.induction)}, {"first_token", num(h.firstToken)}, {"diagonal", num(h.diagonal)}});
            if (sinks) j["heads"].back()["sink_share"] = num(h.sinkShare);
        }
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    if (p.isSet(repeated))
        std::printf("%lld random tokens repeated once (seed %llu), %zu tokens in all\n", static_cast<long long>(repeatedLength),
                    static_cast<unsigned long long>(seedValue), result.batch.ids[0].size());
    std::printf("block head  previous_token  induction  first_token  diagonal%s\n", sinks ? "  sink_share" : "");
    std::printf("   chance  %14.4f  %9.4f  %11.4f  %8.4f   (a head attending uniformly to its causal prefix)\n", chance.previousToken,
                chance.induction, chance.firstToken, chance.diagonal);
    for (const auto& h : rows) {
        std::printf("%5d %4d  %14.4f  %9.4f  %11.4f  %8.4f", h.layer, h.head, h.previousToken, h.induction, h.firstToken, h.diagonal);
        if (sinks) std::printf("  %10.4f", h.sinkShare);
        std::printf("\n");
    }
    if (!rows.empty() && std::isnan(rows.front().induction))
        std::cerr << "nnscope: note: induction is nan: no token of the prompt occurs twice (the score reads the attention from a "
                     "repeated token to the token after its earlier occurrence); repeat a phrase in --prompt." << std::endl;
    return 0;
}

int cmdAttribute(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "The prompt.", "TEXT");
    QCommandLineOption target("target", "The token whose logit is decomposed (text of one token, or #ID).", "TOKEN");
    QCommandLineOption wrong("wrong", "Decompose logit(target) - logit(wrong) instead.", "TOKEN");
    QCommandLineOption position("position", "The prompt position whose next-token logit is decomposed (default -1: the last).", "P", "-1");
    QCommandLineOption neurons("neurons", "How many neurons (largest |share| over every block) to list.", "K", "10");
    QCommandLineOption tokens("tokens", "For each block's attention and MLP, the K tokens it promotes and suppresses.", "K", "0");
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, prompt, target, wrong, position, neurons, tokens});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(prompt) || !p.isSet(target)) throw UsageError("attribute needs --prompt and --target.");
    bool ok = false;
    const int64_t pos = p.value(position).toLongLong(&ok);
    if (!ok) throw UsageError("--position must be an integer (negative counts from the prompt's last token).");
    const int k = p.value(neurons).toInt(&ok);
    if (!ok || k < 0) throw UsageError("--neurons must be a non-negative integer.");
    const int kTokens = p.value(tokens).toInt(&ok);
    if (!ok || kTokens < 0) throw UsageError("--tokens must be a non-negative integer.");
    auto model = loadModel(p, c);
    const int64_t targetId = tokenArgument(*model, p.value(target), "--target");
    std::optional<int64_t> wrongId;
    if (p.isSet(wrong)) wrongId = tokenArgument(*model, p.value(wrong), "--wrong");
    TraceOptions opts;
    opts.save = attributionValueKeys(*model);
    const Batch batch = encodePrompts(*model, {s(p.value(prompt))});
    const TraceResult result = trace(*model, batch, opts);
    const LogitAttribution a = directLogitAttribution(*model, result, 0, pos, targetId, wrongId, k);
    auto label = [&](int64_t id) { return model->tokenizer() ? model->tokenizer()->tokenLabel(id) : "#" + std::to_string(id); };
    auto effects = [&](const std::vector<TokenEffect>& list) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& e : list) out.push_back({{"id", e.id}, {"token", label(e.id)}, {"logit", e.logit}});
        return out;
    };
    if (p.isSet(c.json)) {
        nlohmann::json j{{"target", label(targetId)}, {"target_id", targetId}, {"position", a.position},
                         {"token_at_position", label(batch.ids[0][static_cast<size_t>(a.position)])}, {"logit", a.logit},
                         {"total", a.total}, {"note", a.note}};
        if (wrongId) j.update({{"wrong", label(*wrongId)}, {"wrong_id", *wrongId}});
        j["components"] = nlohmann::json::array();
        for (const auto& comp : a.components) {
            nlohmann::json cj{{"name", comp.name}, {"value", comp.value}};
            if (kTokens > 0 && (comp.kind == AttributionComponent::Kind::Attention || comp.kind == AttributionComponent::Kind::Mlp ||
                                comp.kind == AttributionComponent::Kind::Embed)) {
                auto [up, down] = promotedTokens(*model, a, componentStreamVector(*model, result, a, 0, comp), kTokens);
                cj["promotes"] = effects(up);
                cj["suppresses"] = effects(down);
            }
            j["components"].push_back(cj);
        }
        for (const auto& comp : a.topNeurons) {
            nlohmann::json cj{{"name", comp.name}, {"value", comp.value}};
            if (kTokens > 0) {
                auto [up, down] = promotedTokens(*model, a, componentStreamVector(*model, result, a, 0, comp), kTokens);
                cj["promotes"] = effects(up);
                cj["suppresses"] = effects(down);
            }
            j["components"].push_back(cj);
        }
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    std::printf("%s at position %lld (after \"%s\"): %.6g\n",
                wrongId ? ("logit(\"" + label(targetId) + "\") - logit(\"" + label(*wrongId) + "\")").c_str()
                        : ("logit(\"" + label(targetId) + "\")").c_str(),
                static_cast<long long>(a.position), label(batch.ids[0][static_cast<size_t>(a.position)]).c_str(), a.logit);
    std::printf("components add up to %.6g. %s\n\n", a.total, a.note.c_str());
    for (const auto& comp : a.components) {
        if (comp.kind == AttributionComponent::Kind::Head) continue;
        std::printf("  %-40s %12.5g", comp.name.c_str(), comp.value);
        if (comp.kind == AttributionComponent::Kind::Attention) {
            const torch::Tensor h = a.heads.index({comp.layer});
            const int64_t best = h.abs().argmax().item<int64_t>();
            std::printf("   (head %lld: %.4g)", static_cast<long long>(best), h[best].item<double>());
        }
        if (kTokens > 0 && comp.kind != AttributionComponent::Kind::Bias) {
            auto [up, down] = promotedTokens(*model, a, componentStreamVector(*model, result, a, 0, comp), kTokens);
            std::printf("   +");
            for (const auto& e : up) std::printf(" %s", label(e.id).c_str());
            std::printf("   -");
            for (const auto& e : down) std::printf(" %s", label(e.id).c_str());
        }
        std::printf("\n");
    }
    if (!a.topNeurons.empty()) {
        std::printf("\ntop neurons:\n");
        for (const auto& comp : a.topNeurons) std::printf("  %-40s %12.5g\n", comp.name.c_str(), comp.value);
    }
    return 0;
}

int cmdGraph(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "The prompt.", "TEXT");
    QCommandLineOption position("position", "The prompt position the graph starts from (default -1: the last).", "P", "-1");
    QCommandLineOption threshold("threshold", "Keep edges whose importance is at least T, in [0, 1] (default 0.04, the paper's).", "T",
                                 "0.04");
    QCommandLineOption heads("heads", "For each attention edge, how many heads to list (largest importance first).", "K", "3");
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, prompt, position, threshold, heads});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(prompt)) throw UsageError("graph needs --prompt.");
    bool ok = false;
    GraphOptions options;
    options.position = p.value(position).toLongLong(&ok);
    if (!ok) throw UsageError("--position must be an integer (negative counts from the prompt's last token).");
    options.threshold = p.value(threshold).toDouble(&ok);
    if (!ok || !(options.threshold >= 0 && options.threshold <= 1))
        throw UsageError("--threshold must be a number between 0 and 1 (the paper's is 0.04), not '" + s(p.value(threshold)) + "'.");
    options.topHeads = p.value(heads).toInt(&ok);
    if (!ok || options.topHeads < 0) throw UsageError("--heads must be a non-negative integer.");
    auto model = loadModel(p, c);
    TraceOptions opts;
    opts.save = contributionValueKeys(*model);
    const Batch batch = encodePrompts(*model, {s(p.value(prompt))});
    const ContributionGraph g = contributionGraph(*model, trace(*model, batch, opts), 0, options);
    const std::vector<int64_t>& ids = batch.ids[0];
    auto label = [&](int64_t position) {
        const int64_t id = ids[static_cast<size_t>(position)];
        return model->tokenizer() ? model->tokenizer()->tokenLabel(id) : "#" + std::to_string(id);
    };
    if (p.isSet(c.json)) {
        nlohmann::json j{{"tokens", tokensJson(*model, ids)}, {"position", g.position}, {"threshold", g.threshold},
                         {"note", g.contributions.note}, {"edges", nlohmann::json::array()}};
        for (const ContributionEdge& e : g.edges) {
            nlohmann::json hj = nlohmann::json::array();
            for (const HeadShare& h : e.heads) hj.push_back({{"head", h.head}, {"weight", h.weight}, {"norm", h.norm}});
            j["edges"].push_back({{"layer", e.layer}, {"kind", edgeKindName(e.kind)}, {"from", e.from}, {"to", e.to}, {"weight", e.weight},
                                  {"heads", hj}});
        }
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    std::printf("information flow graph of position %lld (\"%s\"), threshold %g: %zu edges.\n%s\n\n", static_cast<long long>(g.position),
                label(g.position).c_str(), g.threshold, g.edges.size(), g.contributions.note.c_str());
    for (const ContributionEdge& e : g.edges) {
        std::printf("  block %2d  %-18s %4lld %s -> %4lld %s %7.4f", e.layer, edgeKindName(e.kind), static_cast<long long>(e.from),
                    column("\"" + label(e.from) + "\"", 12).c_str(), static_cast<long long>(e.to), column("\"" + label(e.to) + "\"", 12).c_str(),
                    e.weight);
        if (!e.heads.empty()) {
            std::printf("   heads");
            for (const HeadShare& h : e.heads) std::printf(" %lld (%.3f)", static_cast<long long>(h.head), h.weight);
        }
        std::printf("\n");
    }
    return 0;
}

/// `nnscope circuit`: an attribution graph of the prompt's next-token prediction through transcoders (docs/CIRCUITS.md).
int cmdCircuit(QCommandLineParser& p, const Common& c, const QStringList& args) {
    const CircuitOptions defaults;
    QCommandLineOption transcoders("transcoders", "The transcoders: a circuit-tracer folder (config.yaml), or a folder of one SAELens / "
                                                  "Gemma Scope transcoder per block.", "DIR");
    QCommandLineOption prompt("prompt", "The prompt (its last position's prediction is explained).", "TEXT");
    QCommandLineOption out("out", "The graph file to write (circuit-tracer / Neuronpedia JSON).", "GRAPH.json");
    QCommandLineOption noPrune("no-prune", "Keep every node and every non-zero edge (no pruning).");
    QCommandLineOption nodeThreshold("node-threshold", "Keep the nodes holding this share of the influence on the logits (default 0.8).", "X",
                                     "0.8");
    QCommandLineOption edgeThreshold("edge-threshold", "Keep the edges holding this share of the edge influence (default 0.98).", "Y", "0.98");
    QCommandLineOption maxFeatureNodes("max-feature-nodes", "Compute edges into at most N features, the most influential first "
                                                            "(default 0: every active feature).", "N", "0");
    QCommandLineOption maxLogits("max-logits", QString("At most this many logit targets (default %1).").arg(defaults.maxNLogits), "N",
                                 QString::number(defaults.maxNLogits));
    QCommandLineOption logitProb("logit-probability", QString("Logit targets until their cumulative probability reaches P (default %1).")
                                                          .arg(defaults.desiredLogitProb), "P", QString::number(defaults.desiredLogitProb));
    QCommandLineOption batchSize("batch-size", QString("Targets per backward pass (default %1).").arg(defaults.batchSize), "N",
                                 QString::number(defaults.batchSize));
    QCommandLineOption estimateOnly("estimate", "Print the memory and time estimate and stop.");
    QCommandLineOption slug("slug", "The graph's name in the file (default: the output file's name).", "NAME");
    p.addOptions({c.model, c.json, c.threads, c.device, transcoders, prompt, out, noPrune, nodeThreshold, edgeThreshold, maxFeatureNodes, maxLogits, logitProb,
                  batchSize, estimateOnly, slug});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(c.model) || !p.isSet(transcoders) || !p.isSet(prompt))
        throw UsageError("circuit needs --model DIR, --transcoders DIR and --prompt TEXT (and --out GRAPH.json to write the graph).");
    if (!p.isSet(out) && !p.isSet(estimateOnly)) throw UsageError("circuit needs --out GRAPH.json (or --estimate to stop after the estimate).");
    if (p.isSet(out)) checkWritableFile(s(p.value(out)));  // before the graph is computed, not after
    bool ok = false;
    auto fraction = [&](const QCommandLineOption& option) {
        const double v = p.value(option).toDouble(&ok);
        if (!ok || !(v >= 0 && v <= 1))
            throw UsageError("--" + s(option.names().front()) + " must be a number between 0 and 1, not '" + s(p.value(option)) + "'.");
        return v;
    };
    const double nodeT = fraction(nodeThreshold), edgeT = fraction(edgeThreshold);
    CircuitOptions o;
    o.maxFeatureNodes = integerOption(p, maxFeatureNodes, 0);
    o.maxNLogits = static_cast<int>(integerOption(p, maxLogits, 1));
    o.desiredLogitProb = fraction(logitProb);
    o.batchSize = static_cast<int>(integerOption(p, batchSize, 1));
    const int threads = static_cast<int>(integerOption(p, c.threads, 0));
    configureThreads(threads);
    // Attribution graphs are computed in float32, as circuit-tracer computes them.
    const torch::Device device = optionValue([&] { return parseDevice(s(p.value(c.device))); });
    auto model = Model::load(s(p.value(c.model)), LoadOptions().withDtype(torch::kFloat32).withDevice(device));
    printLoadWarnings(*model);
    const CircuitTranscoders set = loadCircuitTranscoders(s(p.value(transcoders)));
    const Batch batch = encodePrompts(*model, {s(p.value(prompt))});
    const std::vector<int64_t>& ids = batch.ids[0];
    const CircuitEstimate estimate = estimateCircuit(*model, set, static_cast<int64_t>(ids.size()), o);
    const bool json = p.isSet(c.json);
    std::fprintf(json ? stderr : stdout, "estimate: %s\n", estimate.text().c_str());
    std::fflush(json ? stderr : stdout);  // before the progress lines on stderr
    if (p.isSet(estimateOnly)) {
        if (json)
            std::cout << nlohmann::json{{"tokens", estimate.tokens}, {"active_features_assumed", estimate.activeFeatures},
                                        {"feature_rows", estimate.featureRows}, {"peak_bytes", estimate.peakBytes},
                                        {"row_bytes", estimate.rowBytes}, {"rows_on_disk", estimate.rowsOnDisk},
                                        {"seconds", estimate.seconds}, {"available_bytes", estimate.availableBytes},
                                        {"fits", estimate.fits}}
                             .dump(2)
                      << std::endl;
        return estimate.fits ? 0 : 1;
    }
    if (!estimate.fits)
        throw CircuitTooLarge("the graph will not fit in the memory available: " + estimate.text() +
                                  ". Pass a shorter prompt or --max-feature-nodes N.", estimate);
    // "feature rows: K of N (T s)" on stderr
    std::string phase;
    StderrProgress rows(60, [&phase](int64_t done, int64_t total, double seconds) {
        char text[160];
        std::snprintf(text, sizeof text, "%s: %lld of %lld (%.1f s)", phase.c_str(), static_cast<long long>(done),
                      static_cast<long long>(total), seconds);
        return std::string(text);
    });
    const CircuitProgress progress = [&](const std::string& now, int64_t done, int64_t total) {
        phase = now;
        rows(done, total);
    };
    CircuitStats stats;
    // (the engine names the tokens, with the model's tokenizer, and the scan, after the transcoders' folder)
    AttributionGraph graph = computeAttributionGraph(*model, set, ids, o, progress, nullptr, &stats);
    graph.prompt = s(p.value(prompt));
    graph.modelDir = s(p.value(c.model));
    graph.transcoderDir = s(p.value(transcoders));
    graph.slug = p.isSet(slug) ? s(p.value(slug)) : std::filesystem::path(s(p.value(out))).stem().string();
    const PruneResult pruned = pruneGraph(graph, nodeT, edgeT);
    const GraphScores scores = graphScores(graph);
    AttributionGraph prunedGraph;  // --no-prune writes `graph` itself, with the influence of each node
    if (p.isSet(noPrune)) {
        for (size_t i = 0; i < graph.nodes.size(); ++i) graph.nodes[i].influence = pruned.cumulativeScores[i];
        graph.nodeThreshold = nodeT;
        graph.edgeThreshold = edgeT;
    } else {
        prunedGraph = prunedSubgraph(graph, pruned, nodeT, edgeT);
    }
    const AttributionGraph& written = p.isSet(noPrune) ? graph : prunedGraph;
    writeGraphJson(written, s(p.value(out)));
    const double seconds = rows.elapsedSeconds();
    int64_t byKind[4] = {0, 0, 0, 0};
    for (const GraphNode& n : written.nodes) ++byKind[static_cast<int>(n.kind)];
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    const double peakMiB = usage.ru_maxrss / 1024.0;  // kilobytes on Linux
    if (json) {
        nlohmann::json logits = nlohmann::json::array();
        for (const GraphNode& n : written.nodes)
            if (n.kind == GraphNode::Kind::Logit) logits.push_back({{"token", n.token}, {"id", n.index}, {"probability", n.tokenProb}});
        std::cout << nlohmann::json{{"out", s(p.value(out))},
                                    {"pruned", !p.isSet(noPrune)},
                                    {"node_threshold", nodeT},
                                    {"edge_threshold", edgeT},
                                    {"tokens", tokensJson(*model, ids)},
                                    {"nodes", {{"feature", byKind[0]}, {"error", byKind[1]}, {"token", byKind[2]}, {"logit", byKind[3]}}},
                                    {"edges", written.edgeCount()},
                                    {"unpruned", {{"nodes", graph.nodes.size()}, {"edges", graph.edgeCount()}}},
                                    {"active_features", stats.activeFeatures},
                                    {"selected_features", stats.selectedFeatures},
                                    {"logits", logits},
                                    {"replacement_score", scores.replacement},
                                    {"completeness_score", scores.completeness},
                                    {"seconds", seconds},
                                    {"peak_memory_bytes", static_cast<int64_t>(usage.ru_maxrss) * 1024},
                                    {"rows_on_disk", stats.rowsOnDisk}}
                         .dump(2)
                  << std::endl;
        return 0;
    }
    std::printf("attribution graph of %zu tokens: %lld active features, %lld with edges computed, %lld edges in all (%.1f s; the process's peak memory %.0f MiB)\n",
                ids.size(), static_cast<long long>(stats.activeFeatures), static_cast<long long>(stats.selectedFeatures),
                static_cast<long long>(graph.edgeCount()), seconds, peakMiB);
    // each logit with the largest direct edges into it, from the unpruned graph (what the graph says first, without
    // opening the file)
    auto at = [&](int64_t position) {
        const std::string t = position < static_cast<int64_t>(graph.tokenStrings.size()) ? graph.tokenStrings[static_cast<size_t>(position)] : "";
        return " at " + std::to_string(position) + (t.empty() ? "" : " \"" + t + "\"");
    };
    auto describe = [&](const GraphNode& n) {
        switch (n.kind) {
            case GraphNode::Kind::Feature: return "layer " + std::to_string(n.layer) + " feature " + std::to_string(n.index) + at(n.position);
            case GraphNode::Kind::Error: return "layer " + std::to_string(n.layer) + " MLP error" + at(n.position);
            case GraphNode::Kind::Token: return "token" + at(n.position);
            case GraphNode::Kind::Logit: break;
        }
        return "logit \"" + n.token + "\"";
    };
    constexpr int kTopEdges = 5;
    for (size_t t = 0; t < graph.nodes.size(); ++t) {
        const GraphNode& n = graph.nodes[t];
        if (n.kind != GraphNode::Kind::Logit) continue;
        std::printf("  logit \"%s\" p=%.4f%s; its largest direct edges:\n", n.token.c_str(), n.tokenProb, n.targetLogit ? " (target)" : "");
        std::vector<int64_t> in;
        for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) in.push_back(e);
        const size_t shown = std::min<size_t>(kTopEdges, in.size());
        std::partial_sort(in.begin(), in.begin() + static_cast<long>(shown), in.end(),
                          [&](int64_t a, int64_t b) { return std::fabs(graph.weight[static_cast<size_t>(a)]) > std::fabs(graph.weight[static_cast<size_t>(b)]); });
        for (size_t i = 0; i < shown; ++i) {
            const GraphNode& from = graph.nodes[static_cast<size_t>(graph.source[static_cast<size_t>(in[i])])];
            std::printf("    %+10.4g  from %s (%s)\n", graph.weight[static_cast<size_t>(in[i])], describe(from).c_str(), from.nodeId().c_str());
        }
    }
    std::printf("replacement score %.3f, completeness score %.3f\n", scores.replacement, scores.completeness);
    std::printf("wrote %s: %lld features, %lld errors, %lld tokens, %lld logits, %lld edges%s\n", s(p.value(out)).c_str(),
                static_cast<long long>(byKind[0]), static_cast<long long>(byKind[1]), static_cast<long long>(byKind[2]),
                static_cast<long long>(byKind[3]), static_cast<long long>(written.edgeCount()),
                p.isSet(noPrune) ? " (unpruned)" : (" (pruned at node " + std::to_string(nodeT).substr(0, 4) + ", edge " + std::to_string(edgeT).substr(0, 4) + ")").c_str());
    return 0;
}

/// One dictionary's (or one layer's) part of `nnscope features`: its JSON document (docs/FEATURES.md) and its text.
struct FeaturesReport {
    nlohmann::json doc;
    std::vector<std::pair<std::string, torch::Tensor>> tensors;  ///< promptN.features, ... for --out
};

/// The report of one dictionary `d` at `site` (→ `siteOut` for a transcoder) from its runs, one per prompt.
FeaturesReport featuresReport(const Model& model, const TraceResult& result, const nlohmann::json& dictionary, bool transcoder,
                              const std::string& site, const std::string& siteOut, const std::vector<FeatureRun>& runs, int k) {
    FeaturesReport r;
    r.doc = {{"dictionary", dictionary}, {"site", site}, {"prompts", nlohmann::json::array()}};
    if (transcoder) r.doc["site_out"] = siteOut;
    for (size_t row = 0; row < runs.size(); ++row) {
        const FeatureRun& run = runs[row];
        const std::vector<int64_t>& ids = result.batch.ids[row];
        nlohmann::json positions = nlohmann::json::array();
        for (int64_t t = 0; t < run.features.size(0); ++t) {
            nlohmann::json top = nlohmann::json::array();
            for (const FeatureActivation& f : topFeatures(run.features[t], k)) top.push_back({{"feature", f.feature}, {"activation", f.activation}});
            const std::string token = model.tokenizer() ? model.tokenizer()->tokenLabel(ids[static_cast<size_t>(t)]) : std::to_string(ids[static_cast<size_t>(t)]);
            positions.push_back({{"token", token}, {"l0", (run.features[t] > 0).sum().item<int64_t>()}, {"top", top}});
        }
        const nlohmann::json ev = std::isnan(run.explainedVariance) ? nlohmann::json(nullptr) : nlohmann::json(run.explainedVariance);
        r.doc["prompts"].push_back({{"positions", positions}, {"mse", run.mse}, {"explained_variance", ev}, {"mean_l0", run.meanL0}});
        const std::string prefix = "prompt" + std::to_string(row) + ".";
        r.tensors.emplace_back(prefix + "features", run.features.contiguous());
        r.tensors.emplace_back(prefix + "reconstruction", run.reconstruction.contiguous());
        r.tensors.emplace_back(prefix + "error", run.error.contiguous());
    }
    return r;
}

/// Prints one report as text: the dictionary's line, its sites, and per prompt the quality and every position's top K.
void printFeaturesReport(const FeaturesReport& r, const std::string& describe) {
    const nlohmann::json& j = r.doc;
    const std::string trained = j["dictionary"].value("model_name", std::string());
    std::cout << describe << (trained.empty() ? "" : ", trained on " + trained) << "\nsite " << j["site"].get<std::string>()
              << (j.contains("site_out") ? " → " + j["site_out"].get<std::string>() : "") << "\n";
    for (size_t row = 0; row < j["prompts"].size(); ++row) {
        const auto& pj = j["prompts"][row];
        const bool evKnown = !pj["explained_variance"].is_null();
        const std::string ev = evKnown ? std::to_string(pj["explained_variance"].get<double>()).substr(0, 7)
                                       : std::string("undefined (the target does not vary: one position after the first)");
        std::printf("\nprompt %zu: mse %.6g, explained variance %s, mean L0 %.1f (positions after the first)\n", row + 1,
                    pj["mse"].get<double>(), ev.c_str(), pj["mean_l0"].get<double>());
        for (const auto& pos : pj["positions"]) {
            std::string line;
            for (const auto& f : pos["top"]) {
                char buf[64];
                std::snprintf(buf, sizeof buf, " %lld:%.3g", static_cast<long long>(f["feature"].get<int64_t>()), f["activation"].get<double>());
                line += buf;
            }
            std::string label = "\"" + pos["token"].get<std::string>() + "\"";
            const auto shown = QString::fromStdString(label).size();  // pad by characters, not UTF-8 bytes
            if (shown < 16) label += std::string(static_cast<size_t>(16 - shown), ' ');
            std::printf("  %s L0 %4lld |%s\n", label.c_str(), static_cast<long long>(pos["l0"].get<int64_t>()), line.c_str());
        }
        std::fflush(stdout);
        if (evKnown && pj["explained_variance"].get<double>() < 0)
            std::cerr << "nnscope: warning: the dictionary explains less variance than the mean on prompt " << row + 1
                      << " (explained variance < 0): is it trained on this model and this site?" << std::endl;
    }
}

/// Set by SIGINT while a dashboard runs: the run stops after the current batch and writes what is done.
std::atomic<bool> gDashboardInterrupt{false};
struct sigaction gPreviousSigint;

extern "C" void onDashboardSigint(int) {
    gDashboardInterrupt.store(true);
    sigaction(SIGINT, &gPreviousSigint, nullptr);  // a second Ctrl-C stops at once, as it did before
}

/// `nnscope features --dataset`: makeDashboard with progress on stderr and SIGINT as its cancel.
int featuresDashboard(const Model& model, const AttachedDictionary& attached, DashboardOptions o, bool json) {
    static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler sets an atomic flag");
    gDashboardInterrupt.store(false);
    struct sigaction action {};
    action.sa_handler = onDashboardSigint;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &gPreviousSigint);
    o.cancel = &gDashboardInterrupt;
    // "documents D/N, T tokens, R tokens/s" on stderr: one line redrawn on a terminal, one line a second otherwise
    DashboardProgress last;
    StderrProgress shown(60, [&last](int64_t, int64_t, double) {
        char text[160];
        std::snprintf(text, sizeof text, "documents %lld/%lld, %lld tokens, %.0f tokens/s", static_cast<long long>(last.documentsDone),
                      static_cast<long long>(last.documentsTotal), static_cast<long long>(last.tokensDone),
                      last.seconds > 0 ? static_cast<double>(last.tokensThisRun) / last.seconds : 0.0);
        return std::string(text);
    });
    o.progress = [&](const DashboardProgress& p) {
        last = p;
        shown(p.documentsDone, p.documentsTotal);
    };
    DashboardRun run;
    try {
        run = makeDashboard(model, attached, o);
    } catch (...) {
        sigaction(SIGINT, &gPreviousSigint, nullptr);
        shown.finish();
        throw;
    }
    sigaction(SIGINT, &gPreviousSigint, nullptr);
    shown.finish();
    const DashboardProgress& p = run.progress;
    const double rate = p.seconds > 0 ? static_cast<double>(p.tokensThisRun) / p.seconds : 0.0;
    if (json) {
        std::cout << nlohmann::json{{"out", o.out},
                                    {"documents", p.documentsTotal},
                                    {"documents_done", p.documentsDone},
                                    {"resumed_from", run.resumedFrom},
                                    {"tokens_done", p.tokensDone},
                                    {"tokens_this_run", p.tokensThisRun},
                                    {"seconds", p.seconds},
                                    {"tokens_per_second", rate},
                                    {"complete", run.complete},
                                    {"cancelled", run.cancelled}}
                         .dump(2)
                  << std::endl;
    } else {
        std::cout << (run.cancelled ? "interrupted: " : "") << "wrote " << o.out << ": " << p.documentsDone << " of " << p.documentsTotal
                  << " documents (" << p.tokensDone << " tokens" << (run.resumedFrom ? ", resumed after document " + std::to_string(run.resumedFrom) : "")
                  << "), " << static_cast<long long>(rate) << " tokens/s"
                  << (run.complete ? "" : "; run the same command again to continue") << "." << std::endl;
    }
    return run.cancelled ? 130 : 0;
}

int cmdFeatures(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption dictionary("dictionary", "The dictionary's folder: SAELens (cfg.json + sae_weights.safetensors), Gemma Scope 2 "
                                                "(config.json + params.safetensors), sparsify (cfg.json + sae.safetensors), Llama Scope "
                                                "(hyperparams.json + checkpoints/final.safetensors), a circuit-tracer transcoder set "
                                                "(config.yaml: every layer, or one layer's layer_<i>.safetensors) or cross-layer "
                                                "transcoder (config.yaml + W_enc_<i>/W_dec_<i>.safetensors; with --dataset, one layer's "
                                                "W_enc_<i>.safetensors, its dashboard made beside it).", "DIR");
    QCommandLineOption prompt("prompt", "A prompt (repeatable: each is traced in one batch).", "TEXT");
    QCommandLineOption topK("top-k", "Features listed per position: the K largest active ones (default 10).", "K", "10");
    QCommandLineOption out("out", "Write every prompt's features, reconstruction and error (float32 [seq, d_sae] / [seq, d_out]) to this "
                                  ".safetensors file as prompt0.features, ... (counted from 0; layerL.prompt0.features, ... for a "
                                  "transcoder set), with the dictionary's folder and the sha256 of its weights.", "FILE");
    p.setApplicationDescription("nnscope features: a sparse dictionary's (an SAE's or a transcoder's) active features at every "
                                "position of each prompt, with the reconstruction's MSE, explained variance and mean L0 (docs/FEATURES.md).");
    QCommandLineOption dataset("dataset", "Make a feature dashboard of this text file (one document per line) instead: per feature its "
                                          "top activating contexts, activation histogram, density and maximum, written to --out "
                                          "(resumed when it exists; Ctrl-C stops after the current batch and writes what is done).", "FILE.txt");
    QCommandLineOption contextSize("context-size", "With --dataset: tokens per window, BOS included (default 128).", "N", "128");
    QCommandLineOption batch("batch", "With --dataset: windows per forward pass (default 16).", "B", "16");
    QCommandLineOption maxDocuments("max-documents", "With --dataset: stop after N documents (default: all).", "N", "0");
    QCommandLineOption maxTokens("max-tokens", "With --dataset: stop reading documents after N tokens (default: no limit).", "N", "0");
    p.addOptions({c.model, c.dtype, c.json, c.threads, c.device, dictionary, prompt, topK, out, dataset, contextSize, batch, maxDocuments, maxTokens});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(dictionary)) throw UsageError("features needs --dictionary DIR.");
    if (p.isSet(dataset)) {
        if (p.isSet(prompt)) throw UsageError("features takes --prompt or --dataset, not both.");
        if (!p.isSet(out)) throw UsageError("features --dataset needs --out FILE (the dashboard; resumed when it exists).");
        DashboardOptions o;
        o.dataset = s(p.value(dataset));
        o.out = s(p.value(out));
        checkWritableFile(o.out);  // before the dataset runs, not after
        o.contextSize = integerOption(p, contextSize, 2);
        o.batchSize = static_cast<int>(std::min<long long>(integerOption(p, batch, 1), 4096));
        o.maxDocuments = integerOption(p, maxDocuments, 0);
        o.maxTokens = integerOption(p, maxTokens, 0);
        auto model = loadModel(p, c);
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(s(p.value(dictionary))));
        return featuresDashboard(*model, attached, o, p.isSet(c.json));
    }
    if (!p.isSet(prompt)) throw UsageError("features needs --prompt (or --dataset FILE.txt --out FILE for a dashboard).");
    if (p.isSet(out)) checkWritableFile(s(p.value(out)));
    bool ok = false;
    const int k = p.value(topK).toInt(&ok);
    if (!ok || k < 1) throw UsageError("--top-k must be a positive integer.");
    auto model = loadModel(p, c);
    const std::string path = s(p.value(dictionary));
    const Family& fam = model->family();
    // The dictionaries are read and checked against the model before anything runs: one, every layer of a circuit-tracer
    // transcoder set, or a cross-layer transcoder (whose layers' reconstructions share their features).
    std::vector<AttachedDictionary> attached;
    std::optional<AttachedCrossLayerTranscoder> clt;
    std::optional<TranscoderSetConfig> set;
    if (std::filesystem::is_directory(path) && isTranscoderSet(path)) set = readTranscoderSetConfig(path);
    if (set && set->modelKind == "cross_layer_transcoder") clt = AttachedCrossLayerTranscoder::attach(*model, loadCrossLayerTranscoder(path));
    else
        for (const auto& d : loadDictionaries(path)) attached.push_back(AttachedDictionary::attach(*model, d));
    std::vector<std::string> prompts;
    for (const auto& q : p.values(prompt)) prompts.push_back(s(q));
    TraceOptions opts;
    for (const AttachedDictionary& a : attached)
        for (const ValueKey& v : a.neededValues()) opts.save.push_back(v);
    if (clt) opts.save = clt->neededValues();
    const TraceResult result = trace(*model, encodePrompts(*model, prompts), opts);

    std::vector<FeaturesReport> reports;
    std::vector<std::string> described;
    std::vector<std::string> weightFiles;
    if (clt) {
        const CrossLayerTranscoder& t = *clt->transcoder;
        std::vector<std::vector<FeatureRun>> byPrompt;
        for (size_t row = 0; row < prompts.size(); ++row) byPrompt.push_back(runCrossLayerTranscoder(*model, result, *clt, static_cast<int64_t>(row)));
        for (size_t l = 0; l < clt->sites.size(); ++l) {
            std::vector<FeatureRun> runs;
            for (const auto& r : byPrompt) runs.push_back(r[l]);
            const nlohmann::json dj{{"path", t.dir}, {"format", "circuit-tracer"}, {"architecture", t.jumpReLU ? "jump_relu" : "relu"},
                                    {"d_in", t.dModel}, {"d_sae", t.dTranscoder}, {"d_out", t.dModel}, {"model_name", t.config.modelName},
                                    {"layer", l}};
            reports.push_back(featuresReport(*model, result, dj, true, valuePath(fam, clt->sites[l]), valuePath(fam, clt->sitesOut[l]), runs, k));
            described.push_back("layer " + std::to_string(l) + " of the " + t.describe() + ": its features, and the reconstruction from "
                                "the features of layers 0 to " + std::to_string(l));
        }
        weightFiles = t.weightFiles;
    } else {
        for (const AttachedDictionary& a : attached) {
            const Dictionary& d = *a.dictionary;
            std::vector<FeatureRun> runs;
            for (size_t row = 0; row < prompts.size(); ++row) runs.push_back(runDictionary(*model, result, a, static_cast<int64_t>(row)));
            nlohmann::json dj{{"path", d.dir}, {"format", d.format}, {"architecture", d.architecture}, {"d_in", d.dIn},
                              {"d_sae", d.dSae}, {"model_name", d.trainedOn}};
            if (d.transcoder) dj["d_out"] = d.dOut;
            reports.push_back(featuresReport(*model, result, dj, d.transcoder, valuePath(fam, a.site), valuePath(fam, a.siteOut), runs, k));
            described.push_back(d.describe());
            weightFiles.insert(weightFiles.end(), d.weightFiles.begin(), d.weightFiles.end());
        }
    }
    const bool several = reports.size() > 1 || set.has_value();
    if (p.isSet(out)) {
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        for (size_t i = 0; i < reports.size(); ++i)
            for (const auto& [name, t] : reports[i].tensors) tensors.emplace_back((several ? "layer" + std::to_string(i) + "." : "") + name, t);
        std::map<std::string, std::string> meta = exportMetadata(*model, result, {});
        // the layouts of the tensors the file holds (the traced sites' entries speak of values it does not hold)
        for (auto it = meta.begin(); it != meta.end();)
            it = it->first.rfind("layout:", 0) == 0 || it->first.rfind("axes:", 0) == 0 ? meta.erase(it) : std::next(it);
        for (const auto& [name, t] : tensors) {
            const bool features = name.size() >= 9 && name.compare(name.size() - 9, 9, ".features") == 0;
            meta["layout:" + name] = features ? "Features" : "Reconstruction";
            meta["axes:" + name] = features ? "seq d_sae" : "seq d_out";
        }
        meta["dictionary"] = path;
        meta["dictionary_format"] = several ? "circuit-tracer " + set->modelKind
                                            : reports.front().doc["dictionary"]["format"].get<std::string>() + " " +
                                                  reports.front().doc["dictionary"]["architecture"].get<std::string>();
        meta["dictionary_sha256"] = filesSha256(weightFiles);
        meta["site"] = reports.front().doc["site"].get<std::string>();
        writeSafetensors(s(p.value(out)), tensors, meta);
    }
    if (p.isSet(c.json)) {
        if (!several) {
            std::cout << reports.front().doc.dump(2) << std::endl;
            return 0;
        }
        // a set: one document per layer, in order, as a single dictionary's
        nlohmann::json j{{"set", {{"path", path}, {"format", "circuit-tracer"}, {"model_kind", set->modelKind},
                                  {"model_name", set->modelName}, {"layers", reports.size()}}},
                         {"layers", nlohmann::json::array()}};
        for (const FeaturesReport& r : reports) j["layers"].push_back(r.doc);
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    for (size_t i = 0; i < reports.size(); ++i) {
        if (i) std::cout << "\n";
        printFeaturesReport(reports[i], described[i]);
    }
    return 0;
}

int cmdTokenize(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption text("text", "Text to tokenize.", "TEXT");
    QCommandLineOption noSpecial("no-special-tokens", "Do not add BOS/EOS.");
    p.addOptions({c.model, c.json, text, noSpecial});
    parseCommandLine(p, args);
    rejectStray(p);
    if (!p.isSet(text)) throw UsageError("tokenize needs --text.");
    if (!p.isSet(c.model)) throw UsageError("--model DIR is required.");
    auto tok = Tokenizer::load(s(p.value(c.model)));
    auto ids = tok->encode(s(p.value(text)), !p.isSet(noSpecial));
    if (p.isSet(c.json)) {
        // tokens: the vocabulary's strings, as transformers' convert_ids_to_tokens ("▁Once"); labels: each token as nnscope
        // prints it everywhere else, trace --json included ("␣Once")
        nlohmann::json toks = nlohmann::json::array(), labels = nlohmann::json::array();
        for (int64_t id : ids) {
            toks.push_back(tok->tokenString(id));
            labels.push_back(tok->tokenLabel(id));
        }
        std::cout << nlohmann::json{{"ids", ids}, {"tokens", toks}, {"labels", labels}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << std::endl;
    } else {
        std::cout << nlohmann::json(ids).dump() << "\n";
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << tok->tokenLabel(ids[i]);
        std::cout << std::endl;
    }
    return 0;
}

int cmdSupport(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption dictionary("dictionary", "Also list the values of this sparse dictionary (repeatable): its features, reconstruction "
                                                "and error at its site, as `trace --save` names them.", "DIR");
    p.addOptions({c.model, c.json, c.dtype, c.threads, dictionary});
    parseCommandLine(p, args);
    rejectStray(p);
    auto model = loadModel(p, c, /*tokenizer=*/false, /*runs=*/false);
    std::vector<AttachedDictionary> dictionaries;
    for (const auto& dir : p.values(dictionary))  // a folder, or every layer of a circuit-tracer transcoder set
        for (const auto& d : loadDictionaries(s(dir))) dictionaries.push_back(AttachedDictionary::attach(*model, d));
    const std::vector<std::string> names = dictionaryPathNames(dictionaries);
    struct Row {
        std::string path, layout, axes, description;
    };
    std::vector<Row> rows;
    for (size_t i = 0; i < dictionaries.size(); ++i) {
        const Dictionary& d = *dictionaries[i].dictionary;
        const std::string site = valuePath(model->family(), dictionaries[i].site);
        const std::string out = valuePath(model->family(), dictionaries[i].siteOut);
        rows.push_back({dictionaryValuePath(site, names[i], DictionaryValue::Kind::Features), "Features", "batch seq d_sae",
                        "the feature activations of " + d.describe() + ", d_sae " + std::to_string(d.dSae)});
        rows.push_back({dictionaryValuePath(site, names[i], DictionaryValue::Kind::Reconstruction), "Reconstruction", "batch seq d_out",
                        "its reconstruction of " + out + ", d_out " + std::to_string(d.dOut)});
        rows.push_back({dictionaryValuePath(site, names[i], DictionaryValue::Kind::Error), "Reconstruction", "batch seq d_out",
                        "the error term: " + out + " - the reconstruction"});
    }
    if (p.isSet(c.json)) {
        nlohmann::json j = supportJson(*model);
        if (!dictionaries.empty()) {
            j["dictionary_values"] = nlohmann::json::array();
            for (const Row& r : rows)
                j["dictionary_values"].push_back({{"path", r.path}, {"layout", r.layout}, {"axes", r.axes}, {"description", r.description}});
        }
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    std::cout << supportText(*model);
    if (!dictionaries.empty()) {
        std::cout << "\nSparse dictionaries' values (trace --dictionary DIR --save PATH)\npath\tlayout\taxes\twhat it is\n";
        for (const Row& r : rows) std::cout << r.path << "\t" << r.layout << "\t[" << r.axes << "]\t" << r.description << "\n";
    }
    return 0;
}

int cmdPrint(QCommandLineParser& p, const Common& c, const QStringList& args) {
    p.addOptions({c.model, c.dtype, c.threads});
    parseCommandLine(p, args);
    rejectStray(p);
    auto model = loadModel(p, c, /*tokenizer=*/false, /*runs=*/false);
    std::cout << printout(*model);
    return 0;
}

}  // namespace

QStringList interventionLines(const QStringList& edits, const QStringList& skips, const QStringList& steers) {
    QStringList lines = edits;
    for (const QString& n : skips) lines << "skip " + n;
    for (const QString& spec : steers) lines << "steer " + spec;
    return lines;
}

void printLoadWarnings(const Model& model) {
    for (const auto& w : model.warnings()) std::cerr << "nnscope: warning: " << w << std::endl;
    for (const auto& n : model.notes()) std::cerr << "nnscope: note: " << n << std::endl;
}

bool isCliCommand(const QString& name) { return kCommands.contains(name); }

int runCli(const QStringList& arguments) {
    if (arguments.size() < 2 || arguments[1] == "--help" || arguments[1] == "-h") {
        printUsage();
        return arguments.size() < 2 ? 2 : 0;
    }
    if (arguments[1] == "--version") {
        std::cout << "nnscope " << version() << std::endl;
        // The demo model the window opens by default, as this program finds it (installed: ../share/nnscope/demo-model).
        const QString demo = demoModelDir();
        std::cout << "Demo model: " << (demo.isEmpty() ? std::string("none found") : s(demo)) << std::endl;
        std::cout << "libtorch: " << libtorchVersion() << std::endl;
        std::cout << "CUDA: " << cudaSummary(deviceSupport()) << std::endl;
        std::cout << "BLAS: " << blasSummary() << std::endl;
        if (openBlasCoreName()[0]) std::cout << "OpenBLAS core: " << openBlasCoreName() << std::endl;
        // a one-token pass's (every generation step's) bfloat16 products: core/model/gemv.h
        std::cout << "One-token bfloat16 products: " << bf16DotKernelName(bf16DotKernel()) << std::endl;
        std::cout << "CPU tensors: " << cpuAllocatorSummary() << std::endl;  // core/model/allocator.h
        return 0;
    }
    const QString command = arguments[1];
    QStringList args = arguments;
    args.removeAt(1);  // the parser sees "nnscope --opt ..." for the sub-command
    QCommandLineParser p;
    p.setApplicationDescription("nnscope " + command);
    p.addHelpOption();
    Common c;
    try {
        if (command == "trace") return cmdTrace(p, c, args);
        if (command == "generate") return cmdGenerate(p, c, args);
        if (command == "tokenize") return cmdTokenize(p, c, args);
        if (command == "support") return cmdSupport(p, c, args);
        if (command == "print") return cmdPrint(p, c, args);
        if (command == "train-demo") return runTrainDemoCommand(args);
        if (command == "train-demo-sae") return runTrainDemoSaeCommand(args);
        if (command == "train-demo-transcoders") return runTrainDemoTranscodersCommand(args);
        if (command == "family") return runFamilyCommand(args);
        if (command == "patch") return cmdPatch(p, c, args);
        if (command == "attribute") return cmdAttribute(p, c, args);
        if (command == "heads") return cmdHeads(p, c, args);
        if (command == "graph") return cmdGraph(p, c, args);
        if (command == "circuit") return cmdCircuit(p, c, args);
        if (command == "features") return cmdFeatures(p, c, args);
    } catch (const UsageError& e) {
        return fail(e.what(), 2);
    } catch (const Error& e) {
        return fail(e.what());
    } catch (const c10::Error& e) {
        return fail(std::string("libtorch: ") + e.what_without_backtrace());
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    return fail("unknown command '" + s(command) + "' (see nnscope --help).", 2);
}

}  // namespace nnscope
