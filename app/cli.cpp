// SPDX-License-Identifier: MIT
#include "cli.h"

#include "core/error.h"
#include "core/export.h"
#include "core/model.h"
#include "core/support.h"
#include "core/trace.h"

#include <QCommandLineParser>
#include <QTextStream>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace nnscope {
namespace {

const QStringList kCommands = {"trace", "generate", "tokenize", "support", "print", "train-demo"};

std::string s(const QString& q) { return q.toStdString(); }

void printUsage() {
    std::cout << "nnscope " << version() << ": look inside transformer language models.\n\n"
              << "Usage:\n"
              << "  nnscope [gui] [--model DIR] [--prompt TEXT] [--screenshot FILE.png]   the explorer window\n"
              << "  nnscope trace --model DIR --prompt TEXT [--prompt TEXT]... [--save PATTERN]... [--out FILE]\n"
              << "                [--dtype float32|bfloat16] [--top-k K] [--json]\n"
              << "  nnscope generate --model DIR --prompt TEXT --max-new-tokens N [--json]\n"
              << "  nnscope tokenize --model DIR --text TEXT [--json]\n"
              << "  nnscope support --model DIR [--json]\n"
              << "  nnscope print --model DIR\n"
              << "  nnscope train-demo --out DIR [--seed N]   train the demo model (an induction head)\n\n"
              << "Run `nnscope COMMAND --help` for a command's options.\n";
}

struct Common {
    QCommandLineOption model{"model", "Checkpoint folder (config.json, model.safetensors, tokenizer).", "DIR"};
    QCommandLineOption dtype{"dtype", "Compute dtype: float32 (default) or bfloat16.", "D", "float32"};
    QCommandLineOption json{"json", "Print one machine-readable JSON document on stdout."};
    QCommandLineOption threads{"threads", "CPU threads for libtorch (default: every core).", "N", "0"};
};

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
    return Model::load(s(p.value(c.model)), LoadOptions().withDtype(parseDtype(s(p.value(c.dtype)))).withTokenizer(tokenizer));
}

nlohmann::json tokensJson(const Model& m, const std::vector<int64_t>& ids) {
    nlohmann::json out = nlohmann::json::array();
    for (int64_t id : ids) out.push_back(m.tokenizer() ? m.tokenizer()->tokenLabel(id) : std::to_string(id));
    return out;
}

int cmdTrace(QCommandLineParser& p, const Common& c, const QStringList& args) {
    QCommandLineOption prompt("prompt", "A prompt; repeat for a batch (left-padded).", "TEXT");
    QCommandLineOption save("save", "Value path to keep, with * wildcards, or 'all'; repeatable.", "PATTERN");
    QCommandLineOption out("out", "Write the saved values to FILE (.safetensors, or .npy for one value).", "FILE");
    QCommandLineOption topk("top-k", "How many next tokens to print per prompt.", "K", "5");
    p.addOptions({c.model, c.dtype, c.json, c.threads, prompt, save, out, topk});
    p.process(args);
    if (!p.isSet(prompt)) throw Error("trace needs at least one --prompt.");
    if (p.isSet(out) && !p.isSet(save)) throw Error("--out needs --save: say which values to write.");
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
    Batch batch = encodeBatch(*model, prompts);
    TraceResult result = trace(*model, batch, opts);
    if (p.isSet(out)) exportValues(s(p.value(out)), *model, result);
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
        std::cout << j.dump(2) << std::endl;
        return 0;
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        std::cout << "prompt " << i << ": \"" << prompts[i] << "\" (" << batch.ids[i].size() << " tokens)\n";
        for (size_t r = 0; r < top[i].size(); ++r)
            std::printf("  %zu. %-20s id %-7lld p=%.6f\n", r + 1, ("\"" + top[i][r].text + "\"").c_str(),
                        static_cast<long long>(top[i][r].id), top[i][r].prob);
        std::fflush(stdout);
    }
    if (!result.values.empty()) {
        std::cout << "saved " << result.values.size() << " value(s)";
        if (p.isSet(out)) std::cout << " to " << s(p.value(out));
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
    bool ok = false;
    const int n = p.value(maxNew).toInt(&ok);
    if (!ok || n < 0) throw Error("--max-new-tokens must be a non-negative integer.");
    auto model = loadModel(p, c);
    Batch batch = encodeBatch(*model, {s(p.value(prompt))});
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
    if (!p.isSet(text)) throw Error("tokenize needs --text.");
    if (!p.isSet(c.model)) throw Error("--model DIR is required.");
    auto tok = Tokenizer::load(s(p.value(c.model)));
    auto ids = tok->encode(s(p.value(text)), !p.isSet(noSpecial));
    if (p.isSet(c.json)) {
        nlohmann::json toks = nlohmann::json::array();
        for (int64_t id : ids) toks.push_back(tok->tokenString(id));
        std::cout << nlohmann::json{{"ids", ids}, {"tokens", toks}}.dump() << std::endl;
    } else {
        std::cout << nlohmann::json(ids).dump() << std::endl;
    }
    return 0;
}

int cmdSupport(QCommandLineParser& p, const Common& c, const QStringList& args) {
    p.addOptions({c.model, c.json, c.dtype});
    p.process(args);
    auto model = loadModel(p, c, false);
    if (p.isSet(c.json)) std::cout << supportJson(*model).dump(2) << std::endl;
    else std::cout << supportText(*model);
    return 0;
}

int cmdPrint(QCommandLineParser& p, const Common& c, const QStringList& args) {
    p.addOptions({c.model, c.dtype});
    p.process(args);
    auto model = loadModel(p, c, false);
    std::cout << printout(*model);
    return 0;
}

}  // namespace

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
