// SPDX-License-Identifier: MIT
#include "cli.h"

#include "core/error.h"
#include "core/edit.h"
#include "core/export.h"
#include "core/patching.h"
#include "core/safetensors.h"
#include "core/model.h"
#include "core/support.h"
#include "core/trace.h"

#include <QCommandLineParser>
#include <QTextStream>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace nnscope {
namespace {

const QStringList kCommands = {"trace", "generate", "tokenize", "support", "print", "train-demo", "family", "patch"};

std::string s(const QString& q) { return q.toStdString(); }

void printUsage() {
    std::cout << "nnscope " << version() << ": look inside transformer language models.\n\n"
              << "Usage:\n"
              << "  nnscope [gui] [--model DIR] [--prompt TEXT] [--screenshot FILE.png]   the explorer window\n"
              << "  nnscope trace --model DIR --prompt TEXT [--prompt TEXT]... [--save PATTERN]... [--out FILE]\n"
              << "                [--dtype auto|float32|bfloat16] [--top-k K] [--json]\n"
              << "                [--edit 'PATH[INDEX] OP VALUE']... [--skip N]... [--steer LAYERS:FACTOR:FILE.npy[:POS]]...\n"
              << "  nnscope patch --model DIR --clean TEXT --corrupted TEXT --answer TOKEN [--wrong TOKEN]\n"
              << "                [--site layer_output|attention_output|mlp_output|head:H] [--json] [--csv FILE]\n"
              << "  nnscope generate --model DIR --prompt TEXT --max-new-tokens N [--json]\n"
              << "  nnscope tokenize --model DIR --text TEXT [--json]\n"
              << "  nnscope support --model DIR [--json]\n"
              << "  nnscope print --model DIR\n"
              << "  nnscope family --model DIR [--format md|html] [--out FILE]   the family page, its notes checked\n"
              << "  nnscope train-demo --out DIR [--seed N] [--steps N] [--threads N] [--no-eval]\n"
              << "                                           train the demo model (an induction head)\n\n"
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
};

/// A word after a sub-command that is no option's value is a mistake (a prompt without --prompt, a typo): refuse it.
void rejectStray(const QCommandLineParser& p) {
    if (!p.positionalArguments().isEmpty())
        throw Error("unexpected argument '" + p.positionalArguments().front().toStdString() +
                    "' (options start with --; quote a prompt and give it with --prompt).");
}

int fail(const std::string& message, int status = 1) {
    std::cerr << "nnscope: " << message << std::endl;
    return status;
}

std::shared_ptr<const Model> loadModel(QCommandLineParser& p, const Common& c, bool tokenizer = true) {
    if (!p.isSet(c.model)) throw Error("--model DIR is required.");
    bool ok = false;
    const int threads = p.value(c.threads).toInt(&ok);
    if (!ok || threads < 0) throw Error("--threads must be a non-negative integer.");
    configureThreads(threads);
    auto model = Model::load(s(p.value(c.model)), LoadOptions().withDtype(parseDtypeRequest(s(p.value(c.dtype)))).withTokenizer(tokenizer));
    printLoadWarnings(*model);
    return model;
}

nlohmann::json tokensJson(const Model& m, const std::vector<int64_t>& ids) {
    nlohmann::json out = nlohmann::json::array();
    for (int64_t id : ids) out.push_back(m.tokenizer() ? m.tokenizer()->tokenLabel(id) : std::to_string(id));
    return out;
}

/// The interventions of `lines` (interventionLines) as one EditList. A refused skip or steer line is named as the
/// option was written ("--skip 9: block 9 is out of range ...").
std::shared_ptr<EditList> interventionsFromLines(const Model& m, const QStringList& lines) {
    auto list = std::make_shared<EditList>();
    for (const auto& line : lines) {
        try {
            addIntervention(*list, m, s(line));
        } catch (const Error& e) {
            std::string message = e.what();  // "'skip 9': ..." -> "--skip 9: ..."
            if (!message.empty() && message[0] == '\'') {
                const auto close = message.find('\'', 1);
                if (close != std::string::npos) message = "--" + message.substr(1, close - 1) + message.substr(close + 1);
            }
            throw Error(message);
        }
    }
    return list;
}

/// A token given as text (must be one token) or as #ID.
int64_t tokenArgument(const Model& m, const QString& text, const std::string& what) { return parseTokenArgument(m, s(text), what); }

int cmdPatch(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption clean("clean", "The clean prompt.", "TEXT");
    QCommandLineOption corrupted("corrupted", "The corrupted prompt (same number of tokens).", "TEXT");
    QCommandLineOption answer("answer", "The answer token (text of one token, or #ID).", "TOKEN");
    QCommandLineOption wrong("wrong", "The wrong token: the metric is logit(answer) - logit(wrong).", "TOKEN");
    QCommandLineOption metric("metric", "logit-diff (default with --wrong) or prob (the answer's probability).", "M");
    QCommandLineOption site("site", "What is patched: layer_output (default), attention_output, mlp_output or head:H.", "SITE",
                            "layer_output");
    QCommandLineOption csv("csv", "Also write the grid as CSV to FILE.", "FILE");
    p.addOptions({c.model, c.dtype, c.json, c.threads, clean, corrupted, answer, wrong, metric, site, csv});
    p.process(args);
    rejectStray(p);
    if (!p.isSet(clean) || !p.isSet(corrupted) || !p.isSet(answer))
        throw Error("patch needs --clean, --corrupted and --answer.");
    auto model = loadModel(p, c);
    PatchingOptions o;
    o.metric.answer = tokenArgument(*model, p.value(answer), "--answer");
    const QString kind = p.isSet(metric) ? p.value(metric) : (p.isSet(wrong) ? "logit-diff" : "prob");
    if (kind == "logit-diff") {
        if (!p.isSet(wrong)) throw Error("--metric logit-diff needs --wrong TOKEN.");
        o.metric.kind = PatchMetric::Kind::LogitDifference;
        o.metric.wrong = tokenArgument(*model, p.value(wrong), "--wrong");
    } else if (kind == "prob") {
        o.metric.kind = PatchMetric::Kind::TargetProbability;
    } else {
        throw Error("--metric must be logit-diff or prob, not '" + s(kind) + "'.");
    }
    o.site = parsePatchSite(s(p.value(site)), &o.head);
    const Batch b = encodeBatch(*model, {s(p.value(clean)), s(p.value(corrupted))});
    const PatchingResult r = activationPatching(*model, b.ids[0], b.ids[1], o);
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
        out << "\n# clean metric: " << r.clean << "\n# corrupted metric: " << r.corrupted << "\nblock";
        for (size_t j = 0; j < r.tokens.size(); ++j) out << "," << j << ":" << r.tokens[j];
        out << "\n";
        for (size_t i = 0; i < r.grid.size(); ++i) {
            out << i;
            for (double v : r.grid[i]) out << "," << v;
            out << "\n";
        }
        writeFileAtomically(s(p.value(csv)), out.str());
    }
    if (p.isSet(c.json)) {
        nlohmann::json j{{"site", r.site}, {"metric", s(kind)}, {"answer", {{"id", o.metric.answer}, {"token", answerLabel}}},
                         {"clean", r.clean}, {"corrupted", r.corrupted}, {"tokens", r.tokens}, {"grid", r.grid}};
        if (o.metric.wrong >= 0) j["wrong"] = {{"id", o.metric.wrong}, {"token", wrongLabel}};
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    std::printf("%s: clean %.6g   corrupted %.6g   (%s patched from the clean run at each block and position)\n",
                kind == "prob" ? ("p(\"" + answerLabel + "\")").c_str() : ("logit(\"" + answerLabel + "\") - logit(\"" + wrongLabel + "\")").c_str(),
                r.clean, r.corrupted, r.site.c_str());
    std::printf("block");
    for (const auto& t : r.tokens) std::printf(" %10.10s", t.c_str());
    std::printf("\n");
    for (size_t i = 0; i < r.grid.size(); ++i) {
        std::printf("%5zu", i);
        for (double v : r.grid[i]) std::printf(" %10.4g", v);
        std::printf("\n");
    }
    return 0;
}

int cmdTrace(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "A prompt; repeat for a batch (left-padded).", "TEXT");
    QCommandLineOption save("save", "Value path to keep, with * wildcards, or 'all'; repeatable.", "PATTERN");
    QCommandLineOption out("out", "Write the saved values to FILE (.safetensors, or .npy for one value).", "FILE");
    QCommandLineOption topk("top-k", "How many next tokens to print per prompt.", "K", "5");
    QCommandLineOption edit("edit", "An edit applied during the pass, PATH[INDEX] OP VALUE (see docs/INTERVENTIONS.md), e.g. "
                                    "'layers.1.self_attn.attention_queries[:, 1] *= 2'; repeatable, applied in order.", "EDIT");
    QCommandLineOption skip("skip", "Skip block N (its output is its input); repeatable or comma-separated.", "N");
    QCommandLineOption steer("steer", "Steering: 'LAYERS:FACTOR:FILE.npy[:POSITIONS]' adds FACTOR x the vector to layer_output "
                                      "of each block in LAYERS (comma-separated) at POSITIONS (default all).", "SPEC");
    p.addOptions({c.model, c.dtype, c.json, c.threads, prompt, save, out, topk, edit, skip, steer});
    p.process(args);
    rejectStray(p);
    if (!p.isSet(prompt)) throw Error("trace needs at least one --prompt.");
    if (p.isSet(out) && !p.isSet(save)) throw Error("--out needs --save: say which values to write.");
    if (p.isSet(out) && !p.value(out).endsWith(".safetensors", Qt::CaseInsensitive) && !p.value(out).endsWith(".npy", Qt::CaseInsensitive))
        throw Error("--out " + s(p.value(out)) + ": write a .safetensors file (any number of values) or a .npy file (one value).");
    bool ok = false;
    const int k = p.value(topk).toInt(&ok);
    if (!ok || k < 1) throw Error("--top-k must be a positive integer.");
    auto model = loadModel(p, c);
    std::vector<std::string> prompts;
    for (const auto& q : p.values(prompt)) prompts.push_back(s(q));
    TraceOptions opts;
    for (const auto& pat : p.values(save))
        for (const auto& key : matchValues(*model, s(pat)))
            if (std::find(opts.save.begin(), opts.save.end(), key) == opts.save.end()) opts.save.push_back(key);
    const QStringList lines = interventionLines(p.values(edit), p.values(skip), p.values(steer));
    auto edits = interventionsFromLines(*model, lines);
    if (!edits->empty()) opts.intervention = edits;
    Batch batch = encodeBatch(*model, prompts);
    TraceResult result = trace(*model, batch, opts);
    if (!torch::isfinite(result.nextTokenProbs).all().item<bool>())
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
        if (p.isSet(out)) j["out"] = s(p.value(out));
        j["interventions"] = nlohmann::json::array();
        for (const auto& line : lines) j["interventions"].push_back(s(line));
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        const size_t n = batch.ids[i].size();
        std::cout << "prompt " << i << ": \"" << prompts[i] << "\" (" << n << (n == 1 ? " token)\n" : " tokens)\n");
        for (size_t r = 0; r < top[i].size(); ++r) {
            std::string label = "\"" + top[i][r].text + "\"";
            size_t chars = 0;  // pad by characters, not bytes ("␣" is 3 bytes)
            for (unsigned char ch : label) chars += (ch & 0xC0) != 0x80;
            if (chars < 20) label += std::string(20 - chars, ' ');
            std::printf("  %zu. %s id %-7lld p=%.6g\n", r + 1, label.c_str(), static_cast<long long>(top[i][r].id), top[i][r].prob);
        }
        std::fflush(stdout);
    }
    if (!result.values.empty()) {
        if (p.isSet(out)) {
            std::cout << "saved " << result.values.size() << " value(s) to " << s(p.value(out)) << "\n";
        } else {
            std::cout << "read " << result.values.size() << " value(s) (nothing written: add --out FILE.safetensors to keep them):\n";
            for (const auto& [key, t] : result.values) {
                std::ostringstream shape;
                shape << t.sizes();
                std::string axes;
                for (const auto& a : valueInfo(key.value).axes) axes += std::string(axes.empty() ? "" : " ") + a;
                std::cout << "  " << valuePath(model->family(), key) << " " << shape.str() << "  " << valueInfo(key.value).layout
                          << " [" << axes << "]\n";
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
    QCommandLineOption maxNew("max-new-tokens", "How many tokens to add.", "N", "32");
    QCommandLineOption noEos("ignore-eos", "Keep going past the EOS token.");
    p.addOptions({c.model, c.dtype, c.json, c.threads, prompt, maxNew, noEos});
    p.process(args);
    rejectStray(p);
    bool ok = false;
    const int n = p.value(maxNew).toInt(&ok);
    if (!ok || n < 0) throw Error("--max-new-tokens must be a non-negative integer.");
    auto model = loadModel(p, c);
    Batch batch = encodeBatch(*model, {s(p.value(prompt))});
    const int64_t context = model->config().maxPositionEmbeddings;
    if (context > 0 && static_cast<int64_t>(batch.ids[0].size()) + n > context)
        throw Error("the prompt's " + std::to_string(batch.ids[0].size()) + " tokens + --max-new-tokens " + std::to_string(n) +
                    " exceed max_position_embeddings " + std::to_string(context) + " of " + model->dir() +
                    "/config.json (the model was not trained on longer contexts).");
    auto ids = generateGreedy(*model, batch.ids[0], n, !p.isSet(noEos));
    const std::string text = model->tokenizer()->decode(ids, true);
    if (p.isSet(c.json)) {
        std::cout << nlohmann::json{{"ids", ids}, {"text", text}}.dump() << std::endl;
    } else {
        std::cout << text << std::endl;
    }
    return 0;
}

int cmdTokenize(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption text("text", "Text to tokenize.", "TEXT");
    QCommandLineOption noSpecial("no-special-tokens", "Do not add BOS/EOS.");
    p.addOptions({c.model, c.json, text, noSpecial});
    p.process(args);
    rejectStray(p);
    if (!p.isSet(text)) throw Error("tokenize needs --text.");
    if (!p.isSet(c.model)) throw Error("--model DIR is required.");
    auto tok = Tokenizer::load(s(p.value(c.model)));
    auto ids = tok->encode(s(p.value(text)), !p.isSet(noSpecial));
    if (p.isSet(c.json)) {
        nlohmann::json toks = nlohmann::json::array();
        for (int64_t id : ids) toks.push_back(tok->tokenString(id));
        std::cout << nlohmann::json{{"ids", ids}, {"tokens", toks}}.dump() << std::endl;
    } else {
        std::cout << nlohmann::json(ids).dump() << "\n";
        for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << tok->tokenLabel(ids[i]);
        std::cout << std::endl;
    }
    return 0;
}

int cmdSupport(QCommandLineParser& p, const Common& c, const QStringList& args) {
    p.addOptions({c.model, c.json, c.dtype, c.threads});
    p.process(args);
    rejectStray(p);
    auto model = loadModel(p, c, false);
    if (p.isSet(c.json)) std::cout << supportJson(*model).dump(2) << std::endl;
    else std::cout << supportText(*model);
    return 0;
}

int cmdPrint(QCommandLineParser& p, const Common& c, const QStringList& args) {
    p.addOptions({c.model, c.dtype, c.threads});
    p.process(args);
    rejectStray(p);
    auto model = loadModel(p, c, false);
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
        if (command == "family") return runFamilyCommand(args);
        if (command == "patch") return cmdPatch(p, c, args);
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
