// SPDX-License-Identifier: MIT
// Broken inputs give a clear error that names the file and the problem, and a non-zero exit from the command
// line: never a crash, never a half-written output.
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/io/tempfiles.h"
#include "core/run/trace.h"
#include "testutil.h"
#include "checkpointcopy.h"
#include "core/model/family.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <QtTest>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <csignal>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

using namespace nnscope;
namespace fs = std::filesystem;

namespace {

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeAll(const std::string& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
}

/// A safetensors file from a header JSON and a data blob.
std::string safetensorsBytes(const std::string& header, const std::string& data) {
    std::string out;
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    return out + header + data;
}

/// Copies the tiny-llama fixture into `dir` (the files a checkpoint needs).
void copyFixture(const QString& dir) {
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(test::fixture("tiny-llama") + "/" + f, dir.toStdString() + "/" + f);
}

/// The header JSON and the data section of a safetensors file's bytes.
std::pair<nlohmann::json, std::string> splitSafetensors(const std::string& bytes) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    return {nlohmann::json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

/// A safetensors file whose 8-byte length field says `length` whatever the header's real length.
std::string withLength(std::string bytes, uint64_t length) {
    for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
    return bytes;
}

/// `depth` nested arrays, as JSON text.
std::string nestedArrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

/// Rewrites the checkpoint in `dir` as two shards (block 1 in the second) with a model.safetensors.index.json;
/// `editMap` may change the index's weight_map before it is written.
void makeSharded(const std::string& dir, const std::function<void(nlohmann::json&)>& editMap = {}) {
    const std::string st = dir + "/model.safetensors";
    std::vector<std::pair<std::string, torch::Tensor>> first, second;
    nlohmann::json map = nlohmann::json::object();
    {
        SafetensorsFile f(st);
        for (const auto& [name, e] : f.entries()) {
            const bool two = name.find("layers.1.") != std::string::npos;
            (two ? second : first).emplace_back(name, f.tensor(name).clone());
            map[name] = two ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
        }
    }
    writeSafetensors(dir + "/model-00001-of-00002.safetensors", first, {});
    writeSafetensors(dir + "/model-00002-of-00002.safetensors", second, {});
    fs::remove(st);
    if (editMap) editMap(map);
    writeAll(dir + "/model.safetensors.index.json", nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump());
}

/// Logits of `m` on a fixed row of ids (no tokenizer involved).
torch::Tensor fixedLogits(const Model& m) {
    c10::InferenceMode guard;
    auto ids = torch::tensor({{1, 7, 42, 99, 5}}, torch::TensorOptions().dtype(torch::kInt64));
    return m.forward(ids, {}, nullptr).to(torch::kFloat32).clone();
}

struct RunResult {
    int exitCode;
    QString err;
};

RunResult runCli(const QStringList& args) {
    QProcess p;
    p.start(QString::fromUtf8(NNSCOPE_BINARY), args);
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestErrors : public QObject {
    Q_OBJECT

private slots:
    // A rotary scaling factor of 0 or less is refused with the key named (it gave a pass of NaN and a generic warning).
    void ropeFactorOfZero() {
        std::ifstream in(test::fixture("tiny-llama") + "/config.json");
        nlohmann::json config = nlohmann::json::parse(in);
        for (const nlohmann::json& scaling : {nlohmann::json{{"rope_type", "linear"}, {"factor", 0.0}},
                                              nlohmann::json{{"rope_type", "yarn"}, {"factor", -2.0}, {"original_max_position_embeddings", 64}},
                                              nlohmann::json{{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 0.0},
                                                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}) {
            config["rope_scaling"] = scaling;
            config.erase("rope_parameters");
            try {
                resolveModelConfig(config, "tiny-llama/config.json");
                QFAIL(qPrintable(QString::fromStdString("accepted " + scaling.dump())));
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find("factor") != std::string::npos && std::string(e.what()).find("positive") != std::string::npos,
                         e.what());
            }
        }
        config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
        QCOMPARE(*resolveModelConfig(config, "ok").rope.factor, 2.0);
    }
    // hidden_act xielu on a checkpoint without XIELU's parameters names the key and the missing tensor (it gave an
    // internal "role 35").
    void xieluWithoutItsParameters() {
        std::ifstream in(test::fixture("tiny-llama") + "/config.json");
        nlohmann::json config = nlohmann::json::parse(in);
        config["hidden_act"] = "xielu";
        const auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        std::map<std::string, torch::Tensor> tensors;
        for (const std::string& name : m->weights().names()) tensors[name] = m->weights().get(name);
        try {
            Model::fromTensors(config, tensors, test::float32(), "tiny-llama with xielu");
            QFAIL("xielu without its parameters was accepted");
        } catch (const Error& e) {
            const std::string msg = e.what();
            QVERIFY2(msg.find("hidden_act \"xielu\"") != std::string::npos && msg.find("mlp.act_fn.alpha_p") != std::string::npos, e.what());
        }
    }
    // A usage error does not echo a 20 kB argument back: the message is cut in its middle, its start and its advice kept.
    void longArgumentIsCut() {
        const QString huge(20000, QChar('x'));
        const RunResult r = runCli({"heads", "--model", "nowhere", "--prompt", "a", "--sort", huge});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.size() < 1000, qPrintable(QString::number(r.err.size())));
        QVERIFY2(r.err.contains("--sort must be") && r.err.contains("characters cut"), qPrintable(r.err.left(400)));
    }
    // A NUL byte inside a safetensors header (here just before its closing brace) is refused, naming where it is.
    void safetensorsHeaderWithNul() {
        std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
        header.insert(header.size() - 1, 1, '\0');
        std::string file(8, '\0');
        const uint64_t n = header.size();
        for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
        file += header + std::string(4, '\0');
        try {
            parseSafetensorsHeader(reinterpret_cast<const unsigned char*>(file.data()), file.size(), "nul.safetensors");
            QFAIL("a header with a NUL byte was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("NUL byte at byte " + std::to_string(8 + header.size() - 2)) != std::string::npos, e.what());
        }
        header.erase(header.size() - 2, 1);  // the same header without it reads
        file = std::string(8, '\0');
        for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xff);
        file += header + std::string(4, '\0');
        try {
            QCOMPARE(parseSafetensorsHeader(reinterpret_cast<const unsigned char*>(file.data()), file.size(), "ok.safetensors").entries.size(),
                     size_t(1));
        } catch (const Error& e) {
            QFAIL(e.what());
        }
    }
    // A sliding window of 0 or fewer keys is refused with the key named (it ran as full attention without a word); null
    // or no key means no window, and a positive one is read as it is.
    void slidingWindowOfNoKeys() {
        for (const char* fixture : {"tiny-mistral", "tiny-gemma2", "tiny-qwen2", "tiny-qwen3"}) {
            std::ifstream in(test::fixture(fixture) + "/config.json");
            nlohmann::json config = nlohmann::json::parse(in);
            config["use_sliding_window"] = true;  // Qwen2 reads the window only then
            for (int window : {0, -3}) {
                config["sliding_window"] = window;
                try {
                    resolveModelConfig(config, std::string(fixture) + "/config.json");
                    QFAIL(qPrintable(QString("%1: sliding_window %2 was accepted").arg(fixture).arg(window)));
                } catch (const Error& e) {
                    QVERIFY2(std::string(e.what()).find("sliding_window") != std::string::npos, e.what());
                }
            }
            config["sliding_window"] = 7;
            QCOMPARE(resolveModelConfig(config, "ok").slidingWindow, int64_t(7));
            config["sliding_window"] = nullptr;
            if (std::string(fixture) == "tiny-mistral") {
                QCOMPARE(resolveModelConfig(config, "ok").slidingWindow, int64_t(0));
            } else {  // layer_types marks sliding layers: no window for them is refused (#27), as transformers fails
                try {
                    resolveModelConfig(config, std::string(fixture) + "/config.json");
                    QFAIL(qPrintable(QString("%1: sliding layers without a window were accepted").arg(fixture)));
                } catch (const Error& e) {
                    QVERIFY2(std::string(e.what()).find("layer_types") != std::string::npos, e.what());
                }
            }
        }
    }
    // Qwen2 and Qwen3 apply no window unless use_sliding_window is true (their configs' __post_init__ sets
    // sliding_window to None); a layer typed "sliding_attention" then has no window and transformers fails at the first
    // pass, so nnscope refuses it with the key named instead of running full attention. Without layer_types,
    // max_window_layers says which layers slide.
    void qwenSlidingLayersWithoutWindow() {
        for (const char* fixture : {"tiny-qwen2", "tiny-qwen3"}) {
            std::ifstream in(test::fixture(fixture) + "/config.json");
            nlohmann::json config = nlohmann::json::parse(in);
            config["sliding_window"] = 4;
            config["use_sliding_window"] = false;
            config["layer_types"] = {"full_attention", "sliding_attention"};
            try {
                resolveModelConfig(config, std::string(fixture) + "/config.json");
                QFAIL(qPrintable(QString("%1: a sliding layer without use_sliding_window was accepted").arg(fixture)));
            } catch (const Error& e) {
                const std::string what = e.what();
                QVERIFY2(what.find("layer_types") != std::string::npos && what.find("use_sliding_window") != std::string::npos &&
                             what.find("layer 1") != std::string::npos, e.what());
            }
            config["layer_types"] = {"full_attention", "full_attention"};
            QCOMPARE(resolveModelConfig(config, "ok").slidingWindow, int64_t(0));
            config.erase("layer_types");
            config["use_sliding_window"] = true;
            config["max_window_layers"] = 1;
            const ModelConfig c = resolveModelConfig(config, "ok");
            QCOMPARE(c.slidingWindow, int64_t(4));
            QCOMPARE(c.layerSliding, (std::vector<bool>{false, true}));
        }
    }
    // A signal that stops the program while it writes a file (writeFileAtomically's hidden `.OUT.XXXXXX` beside OUT)
    // removes that partial file and still ends the process by the signal: a child registers a file it is writing,
    // SIGTERMs itself, and the parent finds it killed by SIGTERM and the file gone. A finished file is not touched.
    void signalRemovesPartialFile() {
        QTemporaryDir dir;
        const std::string partial = (dir.path() + "/.out.safetensors.abc123").toStdString();
        const std::string kept = (dir.path() + "/kept.safetensors").toStdString();
        for (const std::string& p : {partial, kept}) std::ofstream(p) << "partial";
        const pid_t child = fork();
        QVERIFY(child >= 0);
        if (child == 0) {  // only async-signal-safe work and the registration (no allocation) here
            signal(SIGTERM, SIG_DFL);  // as in a fresh program (Qt Test installs its own handler)
            installTempFileCleanupOnSignals();
            TempFileRegistration writing(partial.c_str());
            raise(SIGTERM);
            _exit(0);  // not reached: SIGTERM's default action ends the child
        }
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "the child did not end by SIGTERM");
        QVERIFY2(!fs::exists(partial), "the partial file was left behind");
        QVERIFY(fs::exists(kept));
    }
    // A prompt that is not UTF-8 (here Latin-1's "café") is read with U+FFFD for the bad byte, as before, but now with a
    // warning that names the option, the byte and its offset (it was silent). The argument reaches the program through
    // the shell: QProcess would encode it as UTF-8.
    void promptNotUtf8IsWarned() {
        QProcess p;
        p.start("/bin/sh", {"-c", QString("\"$0\" trace --model \"$1\" --prompt \"$(printf 'caf\\351 au lait')\""),
                            NNSCOPE_BINARY, NNSCOPE_DEMO_MODEL_DIR});
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(err.contains("warning: the value of --prompt is not valid UTF-8 (byte 0xe9 at offset 3)"), qPrintable(err));
        QVERIFY2(QString::fromUtf8(p.readAllStandardOutput()).contains(QString::fromUtf8("caf\xEF\xBF\xBD au lait")),
                 "the prompt did not read the bad byte as U+FFFD");
    }
    void brokenCheckpoint_data() {
        QTest::addColumn<QString>("breakage");
        QTest::addColumn<QString>("expectFile");
        QTest::addColumn<QString>("expectWords");
        QTest::newRow("truncated file") << "truncate" << "model.safetensors" << "truncated";
        QTest::newRow("header length past the end") << "header_len" << "model.safetensors" << "past the end";
        QTest::newRow("overlapping offsets") << "overlap" << "model.safetensors" << "overlap";
        QTest::newRow("unknown dtype") << "dtype" << "model.safetensors" << "unknown dtype";
        QTest::newRow("shape that does not match its bytes") << "shape_bytes" << "model.safetensors" << "needs";
        QTest::newRow("header not JSON") << "bad_json" << "model.safetensors" << "not valid JSON";
        QTest::newRow("missing tensor") << "missing" << "model.layers.1.mlp.down_proj.weight" << "no tensor";
        QTest::newRow("wrong shape for the config") << "wrong_shape" << "model.safetensors" << "config.json implies";
        QTest::newRow("config without architectures") << "no_arch" << "config.json" << "neither";
        QTest::newRow("unknown architecture") << "unknown_arch" << "config.json" << "families/mamba.cpp";
        QTest::newRow("config not JSON") << "config_garbage" << "config.json" << "not valid JSON";
        QTest::newRow("no config") << "no_config" << "config.json" << "missing";
        QTest::newRow("pickled weights") << "pickle" << "pytorch_model.bin" << "arbitrary code";
        QTest::newRow("invalid tokenizer.json") << "bad_tokenizer" << "tokenizer.json" << "";
        // Issue 15: hostile and damaged checkpoints.
        QTest::newRow("config.json nested 100000 deep") << "deep_config" << "config.json" << "nest deeper than 64";
        QTest::newRow("safetensors header nested 100000 deep") << "deep_header" << "model.safetensors" << "nest deeper than 64";
        QTest::newRow("tokenizer_config.json nested 100000 deep") << "deep_tokenizer_config" << "tokenizer_config.json" << "nest deeper than 64";
        QTest::newRow("tokenizer.json nested 100000 deep") << "deep_tokenizer" << "tokenizer.json" << "nest deeper than 64";
        QTest::newRow("index nested 100000 deep") << "deep_index" << "model.safetensors.index.json" << "nest deeper than 64";
        QTest::newRow("header length one short (padded header)") << "short_padded" << "model.safetensors" << "belong to no tensor";
        QTest::newRow("header length one short (unpadded header)") << "short_unpadded" << "model.safetensors" << "not valid JSON";
        QTest::newRow("header length one long") << "long_by_one" << "model.safetensors" << "does not end with '}'";
        QTest::newRow("header padded with newlines") << "pad_newline" << "model.safetensors" << "padded with other bytes";
        QTest::newRow("gap between tensors") << "gap" << "model.safetensors" << "bytes [8, 12) of the data section, between tensors 'a' and 'b'";
        QTest::newRow("bytes after the last tensor") << "leftover" << "model.safetensors" << "after the last tensor 'a'";
        QTest::newRow("data before the first tensor") << "gap_first" << "model.safetensors" << "before the first tensor 'a'";
        QTest::newRow("shape x dtype size wraps 64 bits") << "overflow_bytes" << "model.safetensors" << "tensor 'a': shape";
        QTest::newRow("shape element count wraps 64 bits") << "overflow_numel" << "model.safetensors" << "more elements than 64 bits";
        QTest::newRow("tensor named twice") << "duplicate" << "model.safetensors" << "tensor \"model.norm.weight\" appears twice";
        QTest::newRow("model.safetensors is a text file") << "text_file" << "model.safetensors" << "implausible";
        QTest::newRow("model.safetensors is /dev/zero") << "st_devzero" << "model.safetensors" << "not a regular file";
        QTest::newRow("config.json is a FIFO") << "config_fifo" << "config.json" << "FIFO";
        QTest::newRow("config.json is /dev/urandom") << "config_urandom" << "config.json" << "character device";
        QTest::newRow("config.json of 17 MiB") << "config_huge" << "config.json" << "more than the 16 MiB";
        QTest::newRow("tokenizer.json is a FIFO") << "tokenizer_fifo" << "tokenizer.json" << "FIFO";
        QTest::newRow("tokenizer.model is /dev/urandom") << "sp_urandom" << "tokenizer.model" << "character device";
        QTest::newRow("index places a needed tensor in the wrong shard") << "index_wrong_shard" << "model.safetensors.index.json" << "which does not hold it";
        QTest::newRow("index lists a needed tensor no shard holds") << "index_no_shard" << "model.safetensors.index.json" << "no shard holds it";
        QTest::newRow("head_dim of 2^40") << "head_dim_huge" << "config.json" << "\"head_dim\" is 1099511627776";
        QTest::newRow("max_position_embeddings of 10^15") << "max_pos_huge" << "config.json" << "\"max_position_embeddings\" is";
        QTest::newRow("head_dim that the weights contradict") << "head_dim_wrong" << "model.safetensors" << "config.json implies";
        QTest::newRow("weight stored as an integer dtype") << "int_weight" << "model.norm.weight" << "floating type";
    }
    void brokenCheckpoint() {
        QFETCH(QString, breakage);
        QFETCH(QString, expectFile);
        QFETCH(QString, expectWords);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        copyFixture(tmp.path());
        const std::string dir = tmp.path().toStdString();
        const std::string st = dir + "/model.safetensors";
        const std::string b = breakage.toStdString();
        const std::string bytes = readAll(st);
        if (b == "truncate") writeAll(st, bytes.substr(0, bytes.size() - 1000));
        else if (b == "header_len") writeAll(st, safetensorsBytes(std::string(10, ' '), "").substr(0, 8) + "{}");
        else if (b == "overlap")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                          std::string(12, '\0')));
        else if (b == "dtype")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
        else if (b == "shape_bytes")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')));
        else if (b == "bad_json") writeAll(st, safetensorsBytes("{not json", ""));
        else if (b == "missing" || b == "wrong_shape") {
            SafetensorsFile f(st);
            std::vector<std::pair<std::string, torch::Tensor>> tensors;
            for (const auto& [name, e] : f.entries()) {
                if (b == "missing" && name == "model.layers.1.mlp.down_proj.weight") continue;
                torch::Tensor t = f.tensor(name).clone();
                if (b == "wrong_shape" && name == "model.layers.0.self_attn.q_proj.weight") t = t.narrow(0, 0, 8).clone();
                tensors.emplace_back(name, t);
            }
            writeSafetensors(st + ".new", tensors, {});
            fs::rename(st + ".new", st);
        } else if (b == "no_arch") writeAll(dir + "/config.json", R"({"hidden_size": 64})");
        else if (b == "unknown_arch") writeAll(dir + "/config.json", R"({"architectures": ["MambaForCausalLM"], "model_type": "mamba"})");
        else if (b == "config_garbage") writeAll(dir + "/config.json", "{\"hidden_size\": ");
        else if (b == "no_config") fs::remove(dir + "/config.json");
        else if (b == "pickle") {
            fs::remove(st);
            writeAll(dir + "/pytorch_model.bin", "PK\x03\x04 pickled");
        } else if (b == "bad_tokenizer") writeAll(dir + "/tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": 12}}");
        else if (b == "deep_config") {
            std::string text = readAll(dir + "/config.json");
            writeAll(dir + "/config.json", "{\"x\": " + nestedArrays(100000) + "," + text.substr(text.find('{') + 1));
        } else if (b == "deep_header") {
            writeAll(st, safetensorsBytes("{\"x\": " + nestedArrays(100000) + "}", ""));
        } else if (b == "deep_tokenizer_config") writeAll(dir + "/tokenizer_config.json", "{\"x\": " + nestedArrays(100000) + "}");
        else if (b == "deep_tokenizer") writeAll(dir + "/tokenizer.json", "{\"x\": " + nestedArrays(100000) + "}");
        else if (b == "deep_index") {
            makeSharded(dir);
            writeAll(dir + "/model.safetensors.index.json", "{\"weight_map\": " + nestedArrays(100000) + "}");
        } else if (b == "short_padded") {
            QVERIFY(bytes.substr(8, 2200).find("}  ") != std::string::npos);  // the fixture's header is padded
            const auto [h, data] = splitSafetensors(bytes);
            (void)h;
            writeAll(st, withLength(bytes, bytes.size() - data.size() - 8 - 1));
        } else if (b == "short_unpadded" || b == "long_by_one") {
            const auto [h, data] = splitSafetensors(bytes);
            const std::string compact = safetensorsBytes(h.dump(), data);
            writeAll(st, withLength(compact, h.dump().size() + (b == "long_by_one" ? 1 : -1)));
        } else if (b == "pad_newline") {
            const auto [h, data] = splitSafetensors(bytes);
            writeAll(st, safetensorsBytes(h.dump() + "\n\n\n", data));
        } else if (b == "gap")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
                                          std::string(20, '\0')));
        else if (b == "leftover")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(12, '\0')));
        else if (b == "gap_first")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')));
        else if (b == "overflow_bytes")  // 2^61 elements of 8 bytes: 2^64 bytes, 0 after wrapping
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})", ""));
        else if (b == "overflow_numel")
            writeAll(st, safetensorsBytes(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""));
        else if (b == "duplicate") {
            const auto [h, data] = splitSafetensors(bytes);
            std::string text = h.dump();
            const std::string entry = "\"model.norm.weight\":" + h["model.norm.weight"].dump();
            writeAll(st, safetensorsBytes(text.substr(0, text.size() - 1) + "," + entry + "}", data));
        } else if (b == "text_file") writeAll(st, "This folder's weights are on the shared drive; ask Ann for the link.\n");
        else if (b == "st_devzero") {
            fs::remove(st);
            fs::create_symlink("/dev/zero", st);
        } else if (b == "config_fifo") {
            fs::remove(dir + "/config.json");
            QCOMPARE(mkfifo((dir + "/config.json").c_str(), 0600), 0);
        } else if (b == "config_urandom") {
            fs::remove(dir + "/config.json");
            fs::create_symlink("/dev/urandom", dir + "/config.json");
        } else if (b == "config_huge") {
            std::string text = readAll(dir + "/config.json");
            text.insert(text.find('{') + 1, "\"padding\": \"" + std::string(17 * 1024 * 1024, 'x') + "\",");
            writeAll(dir + "/config.json", text);
        } else if (b == "tokenizer_fifo") {
            fs::remove(dir + "/tokenizer.json");
            QCOMPARE(mkfifo((dir + "/tokenizer.json").c_str(), 0600), 0);
        } else if (b == "sp_urandom") {
            fs::remove(dir + "/tokenizer.json");
            fs::create_symlink("/dev/urandom", dir + "/tokenizer.model");
        } else if (b == "index_wrong_shard")
            makeSharded(dir, [](nlohmann::json& map) { map["model.embed_tokens.weight"] = "model-00002-of-00002.safetensors"; });
        else if (b == "index_no_shard") {
            makeSharded(dir);
            // Remove model.norm.weight from its shard; the index still lists it.
            const std::string shard = dir + "/model-00001-of-00002.safetensors";
            std::vector<std::pair<std::string, torch::Tensor>> kept;
            {
                SafetensorsFile f(shard);
                for (const auto& [name, e] : f.entries())
                    if (name != "model.norm.weight") kept.emplace_back(name, f.tensor(name).clone());
            }
            writeSafetensors(shard, kept, {});
        } else if (b == "head_dim_huge" || b == "max_pos_huge" || b == "head_dim_wrong") {
            auto config = nlohmann::json::parse(readAll(dir + "/config.json"));
            if (b == "head_dim_huge") config["head_dim"] = int64_t{1} << 40;
            else if (b == "max_pos_huge") config["max_position_embeddings"] = int64_t{1000000000000000};
            else config["head_dim"] = 60000;
            writeAll(dir + "/config.json", config.dump());
        } else if (b == "int_weight") {
            auto [h, data] = splitSafetensors(bytes);
            auto& dtype = h["model.norm.weight"]["dtype"];
            dtype = dtype == "F32" ? "I32" : "I16";  // an integer type of the same size
            writeAll(st, safetensorsBytes(h.dump(), data));
        }

        // The engine: nnscope::Error naming the file.
        bool threw = false;
        try {
            auto m = Model::load(dir);
            encodeBatch(*m, {"Tom and Lily"});
        } catch (const Error& e) {
            threw = true;
            const QString msg = QString::fromUtf8(e.what());
            QVERIFY2(msg.contains(expectFile), qPrintable(msg));
            QVERIFY2(msg.contains(expectWords), qPrintable(msg));
        }
        QVERIFY(threw);
        // The command line: a non-zero exit and the message on stderr, and no output file left behind.
        const QString out = tmp.filePath("out.safetensors");
        const auto r = runCli({"trace", "--model", tmp.path(), "--prompt", "Tom and Lily", "--save", "logits", "--out", out});
        QVERIFY2(r.exitCode > 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(expectFile), qPrintable(r.err));
        QVERIFY(!QFile::exists(out));
        QVERIFY(!QFile::exists(out + ".part"));
    }

    /// Damage the model never reads: the checkpoint loads, and Model::warnings (and the CLI's stderr, once) say what.
    void harmlessDamage_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("expectWarning");
        QTest::addColumn<bool>("sameLogits");
        QTest::newRow("config with fewer layers than stored")
            << "fewer_layers" << "9 tensors are stored but never read by the model (config.json: model_type llama, num_hidden_layers 1)" << false;
        QTest::newRow("index entry for a tensor no shard holds, unread")
            << "index_extra" << "'model.layers.7.mlp.down_proj.weight' is placed in shard model-00001-of-00002.safetensors, but no shard holds it" << true;
        QTest::newRow("stored tensor of another model type")
            << "foreign_tensor" << "1 tensor is stored but never read by the model" << true;
    }
    void harmlessDamage() {
        QFETCH(QString, damage);
        QFETCH(QString, expectWarning);
        QFETCH(bool, sameLogits);
        QTemporaryDir tmp;
        copyFixture(tmp.path());
        const std::string dir = tmp.path().toStdString();
        const std::string d = damage.toStdString();
        if (d == "fewer_layers") {
            auto config = nlohmann::json::parse(readAll(dir + "/config.json"));
            config["num_hidden_layers"] = 1;
            writeAll(dir + "/config.json", config.dump());
        } else if (d == "index_extra") {
            makeSharded(dir, [](nlohmann::json& map) { map["model.layers.7.mlp.down_proj.weight"] = "model-00001-of-00002.safetensors"; });
        } else if (d == "foreign_tensor") {
            const std::string st = dir + "/model.safetensors";
            std::vector<std::pair<std::string, torch::Tensor>> tensors;
            {
                SafetensorsFile f(st);
                for (const auto& [name, e] : f.entries()) tensors.emplace_back(name, f.tensor(name).clone());
            }
            tensors.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", torch::ones({8}));
            writeSafetensors(st, tensors, {});
        }
        auto m = Model::load(dir);
        QVERIFY(!m->warnings().empty());
        const QString warnings = QString::fromStdString(m->warnings().front());
        QVERIFY2(warnings.contains(expectWarning), qPrintable(warnings));
        QVERIFY2(warnings.contains(tmp.path()), qPrintable(warnings));  // names the file
        if (d == "fewer_layers") QVERIFY2(warnings.contains("and 3 more"), qPrintable(warnings));
        if (sameLogits) {
            auto reference = Model::load(test::fixture("tiny-llama"));
            QVERIFY(reference->warnings().empty());
            QVERIFY(torch::equal(fixedLogits(*m), fixedLogits(*reference)));
        }
        const auto r = runCli({"trace", "--model", tmp.path(), "--prompt", "Tom and Lily"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(r.err.count("nnscope: warning:"), static_cast<int>(m->warnings().size()));
        QVERIFY2(r.err.contains(expectWarning), qPrintable(r.err));
    }

    /// --out FILE: a symlink planted at FILE.part (the old fixed temporary name) or at FILE is not followed.
    void outputDoesNotFollowSymlinks() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        const std::string victim = dir + "/victim.txt";
        writeAll(victim, "precious");
        const std::string out = dir + "/out.safetensors";
        fs::create_symlink(victim, out + ".part");
        const auto r = runCli({"trace", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--prompt", "Tom",
                               "--save", "logits", "--out", QString::fromStdString(out)});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(readAll(victim), std::string("precious"));
        QVERIFY(fs::is_regular_file(fs::symlink_status(out)));
        QVERIFY(SafetensorsFile(out).contains("logits"));
        QCOMPARE(static_cast<int>(fs::status(out).permissions() & fs::perms::all), 0644);
        // A symlink at FILE itself is replaced, not written through.
        fs::remove(out);
        fs::create_symlink(victim, out);
        writeNpy(out, torch::ones({3}));
        QCOMPARE(readAll(victim), std::string("precious"));
        QVERIFY(fs::is_regular_file(fs::symlink_status(out)));
        // Nothing else was left in the folder (no temporary file).
        int entries = 0;
        for (const auto& e : fs::directory_iterator(dir)) {
            (void)e;
            ++entries;
        }
        QCOMPARE(entries, 3);  // victim.txt, out.safetensors.part (the planted link), out.safetensors
        // A write that fails (the folder is gone) says so and leaves nothing.
        try {
            writeFileAtomically(dir + "/no-such-folder/x.safetensors", "x");
            QFAIL("wrote into a missing folder");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("no-such-folder/x.safetensors"), e.what());
        }
    }

    /// `nnscope family` with a broken tokenizer names the file and the reason, not just "no tokenizer".
    void familyNamesTheBrokenTokenizer() {
        QTemporaryDir tmp;
        copyFixture(tmp.path());
        writeAll(tmp.path().toStdString() + "/tokenizer.json", "{\"x\": " + nestedArrays(1000) + "}");
        const auto r = runCli({"family", "--model", tmp.path()});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(tmp.path() + "/tokenizer.json"), qPrintable(r.err));
        QVERIFY2(r.err.contains("nest deeper than 64"), qPrintable(r.err));
    }

    // A padded vocabulary's id as the top token (Qwen2, Phi-3, Pythia pad past their tokenizers): trace and generate
    // exit 0 and show it with its placeholder in text and --json, the id right (they exited 1 with "Token id 305 is
    // outside the vocabulary"); an id at or above vocab_size is still refused.
    void paddedVocabularyOnTheCommandLine() {
        const auto plain = Model::load(test::fixture("tiny-llama"), test::float32());
        const int64_t like = trace(*plain, encodeBatch(*plain, {"hello world"}), {}).nextTokenProbs[0].argmax().item<int64_t>();
        QTemporaryDir tmp;
        test::copyCheckpoint(test::fixture("tiny-llama"), tmp.path().toStdString());
        test::padVocabulary(tmp.path().toStdString(), 310, 305, like);
        const QString label = "<id 305: not in tokenizer>";
        auto run = [&](const QStringList& args) {
            QProcess p;
            p.start(QString::fromUtf8(NNSCOPE_BINARY), args);
            p.waitForFinished(120000);
            const QString err = QString::fromUtf8(p.readAllStandardError());
            [&] { QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(err)); }();
            return QString::fromUtf8(p.readAllStandardOutput());
        };
        const QString text = run({"trace", "--model", tmp.path(), "--prompt", "hello world", "--dtype", "float32"});
        QVERIFY2(text.contains("1. \"" + label + "\"") && text.contains("id 305"), qPrintable(text));
        const auto traced = nlohmann::json::parse(run({"trace", "--model", tmp.path(), "--prompt", "hello world", "--dtype", "float32", "--json"}).toStdString());
        const auto& first = traced["prompts"][0]["top_k"][0];
        QCOMPARE(first["id"].get<int64_t>(), int64_t(305));
        QCOMPARE(QString::fromStdString(first["token"].get<std::string>()), label);
        const auto generated = nlohmann::json::parse(
            run({"generate", "--model", tmp.path(), "--prompt", "hello world", "--dtype", "float32", "--max-new-tokens", "2", "--json"}).toStdString());
        const auto ids = generated["ids"].get<std::vector<int64_t>>();
        const int64_t promptTokens = generated["prompt_tokens"].get<int64_t>();
        QCOMPARE(ids.at(static_cast<size_t>(promptTokens)), int64_t(305));
        QVERIFY2(QString::fromStdString(generated["text"].get<std::string>()).contains(label), generated.dump().c_str());
        const QString plainText = run({"generate", "--model", tmp.path(), "--prompt", "hello world", "--dtype", "float32", "--max-new-tokens", "1"});
        QVERIFY2(plainText.contains(label), qPrintable(plainText));
        // the model's own ids are targets; vocab_size and past are refused with the range named
        const QString attributed = run({"attribute", "--model", tmp.path(), "--prompt", "hello world", "--target", "#305"});
        QVERIFY2(attributed.contains(label), qPrintable(attributed));
        const RunResult refused = runCli({"attribute", "--model", tmp.path(), "--prompt", "hello world", "--target", "#310"});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains("not a token id of this model (0 to 309)"), qPrintable(refused.err));
    }

    void promptThatTokenizesToNothing() {
        // A SentencePiece tokenizer with add_bos_token false: the empty prompt has no token at all.
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"})
            fs::copy_file(test::sharedModels() + "/stories260K-llama/" + f, dir + "/" + f);
        writeAll(dir + "/tokenizer_config.json", R"({"add_bos_token": false, "bos_token": "<s>", "eos_token": "</s>"})");
        auto m = Model::load(dir);
        try {
            encodeBatch(*m, {""});
            QFAIL("an empty prompt without BOS ran");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("tokenizes to nothing"), e.what());
        }
        const auto r = runCli({"trace", "--model", tmp.path(), "--prompt", ""});
        QVERIFY(r.exitCode > 0);
        QVERIFY2(r.err.contains("tokenizes to nothing"), qPrintable(r.err));
    }

    void badCommandLines_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expect");
        QTest::addColumn<int>("status");  // 2: the command line is wrong in itself; 1: the command could not be carried out
        const QString m = QString::fromStdString(test::fixture("tiny-llama"));
        QTest::newRow("no model") << QStringList{"trace", "--prompt", "x"} << "--model" << 2;
        QTest::newRow("no prompt") << QStringList{"trace", "--model", m} << "--prompt" << 2;
        QTest::newRow("out without save") << QStringList{"trace", "--model", m, "--prompt", "x", "--out", "/tmp/x.npy"} << "--save" << 2;
        QTest::newRow("unknown value") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.0.nonsense"} << "unknown value path" << 1;
        QTest::newRow("block out of range") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.9.layer_output"} << "out of range" << 1;
        QTest::newRow("pattern matches nothing") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.*.nothing"} << "matches no value" << 1;
        QTest::newRow("several values to npy") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.*.layer_output", "--out", "/tmp/nnscope-several.npy"} << "a .npy file holds one value but --save selects" << 2;  // before the pass
        QTest::newRow("bad dtype") << QStringList{"trace", "--model", m, "--prompt", "x", "--dtype", "int8"} << "dtype" << 2;
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "" << 2;
        QTest::newRow("stray argument") << QStringList{"trace", "--model", m, "--prompt", "x", "stray"} << "unexpected argument 'stray'" << 2;
        QTest::newRow("out of another format") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "logits", "--out", "/tmp/nnscope-x.txt"} << ".safetensors" << 2;
        QTest::newRow("generation past the context") << QStringList{"generate", "--model", m, "--prompt", "x", "--max-new-tokens", "100000"} << "max_position_embeddings" << 1;
        QTest::newRow("input_size is read-only") << QStringList{"trace", "--model", m, "--prompt", "x", "--edit", "input_size = 1"} << "read-only" << 1;
        // an intervention malformed in itself is a usage error; one that does not fit the model is not
        QTest::newRow("steer factor not a number") << QStringList{"trace", "--model", m, "--prompt", "x", "--steer", "0:x:v.npy"} << "--steer 0:x:v.npy: the factor 'x' is not a number" << 2;
        QTest::newRow("steer without its file") << QStringList{"trace", "--model", m, "--prompt", "x", "--steer", "0:1"} << "expected steer LAYERS:FACTOR:FILE.npy" << 2;
        QTest::newRow("skip not a block") << QStringList{"trace", "--model", m, "--prompt", "x", "--skip", "one"} << "--skip one: 'one' is not an integer" << 2;
        QTest::newRow("edit without operator") << QStringList{"trace", "--model", m, "--prompt", "x", "--edit", "layers.0.layer_output 2"} << "no operator" << 2;
        QTest::newRow("skip out of range") << QStringList{"trace", "--model", m, "--prompt", "x", "--skip", "9"} << "--skip 9: block 9 is out of range" << 1;
        const QString demo = QStringLiteral(NNSCOPE_SOURCE_DIR "/resources/demo-model");
        QTest::newRow("answer outside the vocabulary") << QStringList{"patch", "--model", demo, "--clean", "tom saw a", "--corrupted", "tom saw the", "--answer", "zebra"} << "not in the vocabulary" << 1;
        QTest::newRow("answer of two tokens") << QStringList{"patch", "--model", demo, "--clean", "tom saw a", "--corrupted", "tom saw the", "--answer", "red ball"} << "(red, ball)" << 1;
        QTest::newRow("answer and wrong the same") << QStringList{"patch", "--model", demo, "--clean", "tom saw a", "--corrupted", "tom saw the", "--answer", "red", "--wrong", "red"} << "the answer and the wrong token are the same token, \"red\" (id " << 1;
        QTest::newRow("a file as the model folder") << QStringList{"trace", "--model", m + "/config.json", "--prompt", "x"} << "a file, not a checkpoint folder" << 1;
        QTest::newRow("unknown option") << QStringList{"trace", "--model", m, "--prompt", "x", "--bogus"} << "Unknown option 'bogus' (see nnscope trace --help)" << 2;
        QTest::newRow("option without its value") << QStringList{"trace", "--model", m, "--prompt"} << "Missing value after '--prompt'" << 2;
        QTest::newRow("malformed number") << QStringList{"trace", "--model", m, "--prompt", "x", "--top-k", "many"} << "--top-k" << 2;
        QTest::newRow("family without a model") << QStringList{"family"} << "--model" << 2;
        QTest::newRow("family in another format") << QStringList{"family", "--model", m, "--format", "pdf"} << "pdf" << 2;
        QTest::newRow("train-demo with a bad seed") << QStringList{"train-demo", "--out", "/tmp/nnscope-never", "--seed", "x"} << "--seed" << 2;
        QTest::newRow("heads of one token") << QStringList{"heads", "--model", demo, "--prompt", ""} << "at least two positions" << 1;
        // An output that cannot be written is refused before anything is read or computed (a graph or a dashboard can
        // take hours): the model folder here does not exist either, and the message names the output, not the model.
        const QString none = "/nonexistent-nnscope-model", noDir = "/nonexistent-nnscope-folder";
        const QString noFolder = "the folder " + noDir + " does not exist";
        QTest::newRow("trace --out into no folder") << QStringList{"trace", "--model", none, "--prompt", "x", "--save", "logits", "--out", noDir + "/v.safetensors"} << noDir + "/v.safetensors: " + noFolder << 1;
        QTest::newRow("family --out onto a folder") << QStringList{"family", "--model", none, "--out", QDir::tempPath() + "/"} << "names a folder, not a file" << 1;
        QTest::newRow("family --out a folder's name") << QStringList{"family", "--model", none, "--out", QDir::tempPath()} << "is a folder; give a file name inside it" << 1;
        QTest::newRow("patch --csv into no folder") << QStringList{"patch", "--model", none, "--clean", "a", "--corrupted", "b", "--answer", "c", "--csv", noDir + "/g.csv"} << noFolder << 1;
        QTest::newRow("circuit --out into no folder") << QStringList{"circuit", "--model", none, "--transcoders", none, "--prompt", "x", "--out", noDir + "/g.json"} << noFolder << 1;
        QTest::newRow("dashboard --out into no folder") << QStringList{"features", "--model", none, "--dictionary", none, "--dataset", none, "--out", noDir + "/d.safetensors"} << noFolder << 1;
        QTest::newRow("features --out into no folder") << QStringList{"features", "--model", none, "--dictionary", none, "--prompt", "x", "--out", noDir + "/f.safetensors"} << noFolder << 1;
        QTest::newRow("family --out into no folder") << QStringList{"family", "--model", none, "--out", noDir + "/page.md"} << noFolder << 1;
    }
    // A size key missing from config.json takes transformers' class default (hidden_size 4096 for llama), and the
    // weights then disagree with it: the message names the missing key, not only the two shapes.
    void missingSizeKeyIsNamed() {
        QTemporaryDir tmp;
        copyFixture(tmp.path());
        const std::string file = tmp.path().toStdString() + "/config.json";
        nlohmann::json config = nlohmann::json::parse(std::ifstream(file));
        config.erase("hidden_size");
        std::ofstream(file) << config.dump();
        try {
            Model::load(tmp.path().toStdString());
            QFAIL("a config without hidden_size loaded");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("but config.json implies") != std::string::npos &&
                         m.find("config.json gives no hidden_size (default 4096): transformers' llama config class default") != std::string::npos,
                     e.what());
        }
    }
    // A folder without config.json says what it holds instead: checkpoints one level down, a llama2.c checkpoint.
    void folderWithoutConfigSaysWhatItHolds() {
        auto refused = [](const std::string& dir) {
            try {
                Model::load(dir);
                return std::string("loaded");
            } catch (const Error& e) {
                return std::string(e.what());
            }
        };
        const std::string models = test::sharedModels();
        std::string m = refused(models + "/stories260K");
        QVERIFY2(m.find("config.json: missing") != std::string::npos && m.find("a llama2.c checkpoint (stories260K.bin") != std::string::npos, m.c_str());
        QTemporaryDir tmp;
        QVERIFY(QDir(tmp.path()).mkdir("b-model") && QDir(tmp.path()).mkdir("a-model"));
        copyFixture(tmp.filePath("b-model"));
        copyFixture(tmp.filePath("a-model"));
        m = refused(tmp.path().toStdString());
        QVERIFY2(m.find("holds checkpoints in its subfolders (a-model, b-model): give one of them, e.g. " +
                        tmp.filePath("a-model").toStdString()) != std::string::npos, m.c_str());
    }
    // train-demo-sae on another model is refused before it says it trains (and writes nothing)
    void trainDemoSaeRefusesAnotherModel() {
        QTemporaryDir tmp;
        const QString out = tmp.filePath("sae");
        QProcess p;
        p.start(QString::fromUtf8(NNSCOPE_BINARY), {"train-demo-sae", "--model", QString::fromStdString(test::sharedModels() + "/stories260K-llama"),
                                                    "--out", out, "--steps", "1"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(QString::fromUtf8(p.readAllStandardError()).contains("not the demo model"), "no refusal");
        QCOMPARE(p.readAllStandardOutput(), QByteArray());
        QVERIFY(!QFileInfo::exists(out));
    }
    // A prompt past max_position_embeddings runs (as transformers' does) with a warning naming the limit and the file
    // (generate refused such a context while trace said nothing).
    void promptPastTheContextWarns() {
        const QString demo = QStringLiteral(NNSCOPE_SOURCE_DIR "/resources/demo-model");
        QStringList words;
        for (int i = 0; i < 300; ++i) words << "tom";
        const RunResult r = runCli({"trace", "--model", demo, "--prompt", words.join(' ')});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("warning: the prompt is 301 tokens, more than max_position_embeddings 256 in ") &&
                     r.err.contains("config.json"), qPrintable(r.err));
        const RunResult shortPrompt = runCli({"trace", "--model", demo, "--prompt", "tom saw a"});
        QVERIFY2(shortPrompt.exitCode == 0 && !shortPrompt.err.contains("max_position_embeddings"), qPrintable(shortPrompt.err));
        QVERIFY2(!shortPrompt.err.contains("does not know"), qPrintable(shortPrompt.err));
        // words outside the demo's vocabulary are read as <unk>: said on stderr
        const RunResult unknown = runCli({"trace", "--model", demo, "--prompt", "tom and zzz qqq"});
        QVERIFY2(unknown.exitCode == 0 && unknown.err.contains("warning: the prompt has 2 word(s) the tokenizer does not know, each read as "
                                                                "the unknown token <unk>"), qPrintable(unknown.err));
    }
    void commandHelpNamesTheCommand() {
        // `nnscope trace --help` begins with the command's own usage line, not the program's path
        QProcess p;
        p.start(QString::fromUtf8(NNSCOPE_BINARY), {"trace", "--help"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.startsWith("Usage: nnscope trace [options]"), qPrintable(out.left(200)));
    }
    void badCommandLines() {
        QFETCH(QStringList, args);
        QFETCH(QString, expect);
        QFETCH(int, status);
        const auto r = runCli(args);
        QVERIFY2(r.exitCode == status, qPrintable(QString("exit status %1, not %2: %3").arg(r.exitCode).arg(status).arg(r.err)));
        QVERIFY2(r.err.contains(expect), qPrintable(r.err));
    }
};

NNSCOPE_TEST_SUITE(TestErrors, "test_errors")
#include "test_errors.moc"
