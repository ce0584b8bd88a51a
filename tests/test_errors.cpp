// SPDX-License-Identifier: MIT
// Broken inputs give a clear error that names the file and the problem, and a non-zero exit from the command
// line: never a crash, never a half-written output.
#include "core/error.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "core/trace.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <QtTest>

#include <filesystem>
#include <fstream>

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
        const QString m = QString::fromStdString(test::fixture("tiny-llama"));
        QTest::newRow("no model") << QStringList{"trace", "--prompt", "x"} << "--model";
        QTest::newRow("no prompt") << QStringList{"trace", "--model", m} << "--prompt";
        QTest::newRow("out without save") << QStringList{"trace", "--model", m, "--prompt", "x", "--out", "/tmp/x.npy"} << "--save";
        QTest::newRow("unknown value") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.0.nonsense"} << "unknown value path";
        QTest::newRow("block out of range") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.9.layer_output"} << "out of range";
        QTest::newRow("pattern matches nothing") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.*.nothing"} << "matches no value";
        QTest::newRow("several values to npy") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "layers.*.layer_output", "--out", "/tmp/nnscope-several.npy"} << ".npy";
        QTest::newRow("bad dtype") << QStringList{"trace", "--model", m, "--prompt", "x", "--dtype", "int8"} << "dtype";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "";
        QTest::newRow("stray argument") << QStringList{"trace", "--model", m, "--prompt", "x", "stray"} << "unexpected argument 'stray'";
        QTest::newRow("out of another format") << QStringList{"trace", "--model", m, "--prompt", "x", "--save", "logits", "--out", "/tmp/nnscope-x.txt"} << ".safetensors";
        QTest::newRow("generation past the context") << QStringList{"generate", "--model", m, "--prompt", "x", "--max-new-tokens", "100000"} << "max_position_embeddings";
        QTest::newRow("input_size is read-only") << QStringList{"trace", "--model", m, "--prompt", "x", "--edit", "input_size = 1"} << "read-only";
        const QString demo = QStringLiteral(NNSCOPE_SOURCE_DIR "/resources/demo-model");
        QTest::newRow("answer outside the vocabulary") << QStringList{"patch", "--model", demo, "--clean", "tom saw a", "--corrupted", "tom saw the", "--answer", "zebra"} << "not in the vocabulary";
        QTest::newRow("answer of two tokens") << QStringList{"patch", "--model", demo, "--clean", "tom saw a", "--corrupted", "tom saw the", "--answer", "red ball"} << "(red, ball)";
    }
    void badCommandLines() {
        QFETCH(QStringList, args);
        QFETCH(QString, expect);
        const auto r = runCli(args);
        QVERIFY2(r.exitCode > 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(expect), qPrintable(r.err));
    }
};

NNSCOPE_TEST_SUITE(TestErrors, "test_errors")
#include "test_errors.moc"
