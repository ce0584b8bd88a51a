// SPDX-License-Identifier: MIT
// Sparse dictionaries against their reference libraries: for every entry of tests/fixtures/dictionaries/manifest.json
// (tiny random dictionaries in each format, written and run by tests/fixtures/make_dictionaries.py with sae-lens's own
// classes, or sparsify's and circuit-tracer's formulas checked against their code), nnscope reads the folder, finds
// the site on the fixture model, traces the golden prompt and gives the reference's input, features and
// reconstruction. Bad folders are refused with a message that names the file and the problem.
#include "core/io/dictionary.h"
#include "core/io/export.h"
#include "core/io/sha256.h"
#include "core/io/tracefile.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/edit.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "testutil.h"

#include "testsuite.h"

#include <QCryptographicHash>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace nnscope;

namespace {

std::string dictionariesDir() { return test::fixturesDir() + "/dictionaries"; }

const nlohmann::json& manifest() {
    static const nlohmann::json m = [] {
        std::ifstream in(dictionariesDir() + "/manifest.json");
        return nlohmann::json::parse(in);
    }();
    return m;
}

/// The formats nnscope reads (the manifest also holds circuit-tracer transcoder sets, read later).
bool readFormat(const std::string& format) {
    return format == "saelens" || format == "gemmascope2" || format == "gemmascope1" || format == "sparsify" || format == "llamascope";
}

const std::string kPrompt = "Tom and Lily went to the park.";

}  // namespace

class TestDictionaries : public QObject {
    Q_OBJECT
private slots:
    void matchesTheReference_data() {
        QTest::addColumn<QString>("entry");
        int rows = 0;
        for (const auto& e : manifest()["entries"])
            if (readFormat(e["format"].get<std::string>())) {
                QTest::newRow(e["entry"].get<std::string>().c_str()) << QString::fromStdString(e["entry"].get<std::string>());
                ++rows;
            }
        QVERIFY(rows >= 21);
    }
    void matchesTheReference() {
        QFETCH(QString, entry);
        nlohmann::json e;
        for (const auto& x : manifest()["entries"])
            if (x["entry"] == entry.toStdString()) e = x;
        auto model = Model::load(test::fixture(e["fixture"].get<std::string>()), test::float32());
        auto dictionary = loadDictionary(dictionariesDir() + "/" + e["path"].get<std::string>());
        QCOMPARE(dictionary->dIn, e["d_in"].get<int64_t>());
        QCOMPARE(dictionary->dSae, e["d_sae"].get<int64_t>());
        const AttachedDictionary attached = AttachedDictionary::attach(*model, dictionary);
        QCOMPARE(valuePath(model->family(), attached.site), e["nnscope_site"].get<std::string>());
        if (e.contains("nnscope_site_out"))
            QCOMPARE(valuePath(model->family(), attached.siteOut), e["nnscope_site_out"].get<std::string>());
        TraceOptions options;
        options.save = attached.neededValues();
        const TraceResult result = trace(*model, encodeBatch(*model, {kPrompt}), options);
        const FeatureRun run = runDictionary(*model, result, attached, 0);

        SafetensorsFile reference(dictionariesDir() + "/" + e["entry"].get<std::string>() + ".reference.safetensors");
        const torch::Tensor input = reference.tensor("sae_input"), features = reference.tensor("feature_acts"),
                            reconstruction = reference.tensor("reconstruction");
        QCOMPARE(run.input.sizes().vec(), input.sizes().vec());
        NNSCOPE_COMPARE_TENSORS(run.input, input, 1e-4, 1e-5);
        // every decision (active or not, above the threshold, in the top k) the same, and the values within float32
        QVERIFY(torch::equal(run.features > 0, features > 0));
        NNSCOPE_COMPARE_TENSORS(run.features, features, 1e-4, 1e-4);
        NNSCOPE_COMPARE_TENSORS(run.reconstruction, reconstruction, 1e-4, 1e-4);
        NNSCOPE_COMPARE_TENSORS(run.error, run.target - reconstruction, 1e-4, 1e-4);
        QVERIFY(std::isfinite(run.mse) && std::isfinite(run.explainedVariance) && run.meanL0 > 0);
    }

    // Every fixture dictionary's values as trace values (dictionaryValues on a left-padded two-prompt batch, the golden
    // prompt padded): at each prompt's positions runDictionary's, and on the golden prompt sae-lens's (or sparsify's)
    // features and reconstruction; hook_z sites (heads side by side) and transcoders included.
    void batchValuesMatchTheReference_data() { matchesTheReference_data(); }
    void batchValuesMatchTheReference() {
        QFETCH(QString, entry);
        nlohmann::json e;
        for (const auto& x : manifest()["entries"])
            if (x["entry"] == entry.toStdString()) e = x;
        auto model = Model::load(test::fixture(e["fixture"].get<std::string>()), test::float32());
        const std::vector<AttachedDictionary> attached = {
            AttachedDictionary::attach(*model, loadDictionary(dictionariesDir() + "/" + e["path"].get<std::string>()))};
        const Batch batch = encodeBatch(*model, {kPrompt, kPrompt + " They played with a red ball all day long."});
        QVERIFY(batch.ids[0].size() < batch.ids[1].size());
        const SaveSelection selection = matchSaveValues(*model, attached, {"*]*"});
        QCOMPARE(selection.dictionaryValues.size(), size_t(3));
        TraceOptions options;
        options.save = selection.traced;
        const TraceResult result = trace(*model, batch, options);
        const std::vector<DictionaryValue> values = dictionaryValues(*model, result, attached, selection.dictionaryValues);
        const int64_t seq = batch.inputIds.size(1);
        SafetensorsFile reference(dictionariesDir() + "/" + e["entry"].get<std::string>() + ".reference.safetensors");
        for (int64_t row = 0; row < 2; ++row) {
            const FeatureRun run = runDictionary(*model, result, attached[0], row);
            const int64_t length = run.features.size(0);
            auto own = [&](size_t i) { return values[i].tensor[row].narrow(0, seq - length, length); };
            QVERIFY(torch::equal(own(0) > 0, run.features > 0));
            NNSCOPE_COMPARE_TENSORS(own(0), run.features, 1e-5, 1e-5);
            NNSCOPE_COMPARE_TENSORS(own(1), run.reconstruction, 1e-5, 1e-5);
            NNSCOPE_COMPARE_TENSORS(own(2), run.error, 1e-5, 1e-5);
            if (row == 0) {
                QVERIFY(torch::equal(own(0) > 0, reference.tensor("feature_acts") > 0));
                NNSCOPE_COMPARE_TENSORS(own(0), reference.tensor("feature_acts"), 1e-4, 1e-4);
                NNSCOPE_COMPARE_TENSORS(own(1), reference.tensor("reconstruction"), 1e-4, 1e-4);
            }
        }
    }

    // Feature edits during the pass: moving a feature by d adds d times its decoder row to the site at every position,
    // clamping it to 0 removes exactly its share (the error term stays), splicing replaces the site by the
    // reconstruction; the rest of the pass computes from the edited value (the logits move).
    void featureEditsChangeOnlyThatFeature() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const std::string dir = dictionariesDir() + "/saelens-jumprelu-llama-resid-post";
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(dir));
        const Batch batch = encodeBatch(*model, {kPrompt});
        auto run = [&](const std::string& intervention) {
            TraceOptions o;
            o.save = {attached.site, {Value::Logits, -1}};
            if (!intervention.empty()) {
                auto list = std::make_shared<EditList>();
                addIntervention(*list, *model, intervention);
                o.intervention = list;
            }
            const TraceResult r = trace(*model, batch, o);
            return std::make_pair(r.value(attached.site)[0], r.value({Value::Logits, -1}));
        };
        const auto [x, logits] = run("");
        TraceOptions o;
        o.save = attached.neededValues();
        const FeatureRun plain = runDictionary(*model, trace(*model, batch, o), attached, 0);
        const int64_t k = plain.features[-1].argmax().item<int64_t>();
        QVERIFY(plain.features[-1][k].item<double>() > 0);
        const torch::Tensor row = attached.dictionary->wDec[k];

        const auto [moved, movedLogits] = run("feature " + dir + ":" + std::to_string(k) + " += 2.5");
        NNSCOPE_COMPARE_TENSORS(moved - x, (2.5 * row).expand_as(x), 1e-4, 1e-4);
        QVERIFY(!torch::allclose(movedLogits, logits));
        const auto [zeroed, zeroedLogits] = run("feature " + dir + ":" + std::to_string(k) + " = 0");
        NNSCOPE_COMPARE_TENSORS(zeroed - x, -plain.features.select(-1, k).unsqueeze(-1) * row, 1e-4, 1e-4);
        const auto [spliced, splicedLogits] = run("splice " + dir);
        NNSCOPE_COMPARE_TENSORS(spliced, plain.reconstruction, 1e-4, 1e-4);

        EditList list;
        QVERIFY_THROWS_EXCEPTION(Error, addIntervention(list, *model, "feature " + dir + ":99999 = 0"));
        QVERIFY_THROWS_EXCEPTION(Error, addIntervention(list, *model, "feature " + dir + ":3 ~ 1"));
        QVERIFY_THROWS_EXCEPTION(Error, addIntervention(list, *model, "feature " + dictionariesDir() + "/saelens-transcoder-llama-l0:1 = 0"));
    }

    // The dictionaries' values as values of a trace, on a two-prompt left-padded batch (the golden prompt is the
    // shorter, padded row): two SAEs on one site and a transcoder. At each prompt's own positions the features, the
    // reconstruction and the error equal runDictionary's on that prompt, and on the golden prompt sae-lens's own
    // (the fixture's reference); the left-padded file round-trips through readTraceFile with its provenance, and the
    // sha256 it records is the weights file's (QCryptographicHash, independent of core's).
    void dictionaryValuesInATrace() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const std::vector<std::string> entries = {"saelens-jumprelu-llama-resid-post", "saelens-topk-llama-resid-post", "saelens-transcoder-llama-l0"};
        std::vector<AttachedDictionary> attached;
        for (const auto& e : entries) attached.push_back(AttachedDictionary::attach(*model, loadDictionary(dictionariesDir() + "/" + e)));
        QCOMPARE(dictionaryPathNames(attached), entries);  // distinct folder names: the names themselves
        const Batch batch = encodeBatch(*model, {kPrompt, kPrompt + " They played with a red ball all day long."});
        QVERIFY(batch.ids[0].size() < batch.ids[1].size());  // the golden prompt's row is left-padded

        const SaveSelection selection = matchSaveValues(*model, attached, {"*[*].features", "*].reconstruction", "layers.*.error"});
        QCOMPARE(selection.values.size(), size_t(0));
        QCOMPARE(selection.dictionaryValues.size(), 3 * entries.size());
        QCOMPARE(selection.traced.size(), size_t(3));  // layers.1.layer_output, layers.0.layer_mid, layers.0.mlp.mlp_output
        QCOMPARE(matchSaveValues(*model, attached, {"all"}).dictionaryValues.size(), 3 * entries.size());
        TraceOptions options;
        options.save = selection.traced;
        TraceResult result = trace(*model, batch, options);
        const TraceResult sites = result;  // runDictionary's input
        result.dictionaryValues = dictionaryValues(*model, result, attached, selection.dictionaryValues);
        keepOnly(result, selection.values);
        QVERIFY(result.values.empty());  // the sites were traced for the dictionaries, not saved
        QCOMPARE(result.dictionaryValues.size(), 3 * entries.size());

        const int64_t seq = batch.inputIds.size(1);
        for (size_t i = 0; i < entries.size(); ++i) {
            const Dictionary& d = *attached[i].dictionary;
            const std::string site = valuePath(model->family(), attached[i].site);
            const DictionaryValue* f = result.dictionaryValue(site + "[" + entries[i] + "].features");
            const DictionaryValue* r = result.dictionaryValue(site + "[" + entries[i] + "].reconstruction");
            const DictionaryValue* e = result.dictionaryValue(site + "[" + entries[i] + "].error");
            QVERIFY(f && r && e);
            QCOMPARE(f->tensor.sizes().vec(), (std::vector<int64_t>{2, seq, d.dSae}));
            QCOMPARE(r->tensor.sizes().vec(), (std::vector<int64_t>{2, seq, d.dOut}));
            QCOMPARE(f->source->folder, std::filesystem::absolute(d.dir).lexically_normal().string());
            QCOMPARE(f->source->site, site);
            for (int64_t row = 0; row < 2; ++row) {
                const FeatureRun run = runDictionary(*model, sites, attached[i], row);
                const int64_t length = static_cast<int64_t>(batch.ids[static_cast<size_t>(row)].size());
                auto own = [&](const DictionaryValue* v) { return v->tensor[row].narrow(0, seq - length, length); };
                QVERIFY(torch::equal(own(f) > 0, run.features > 0));
                NNSCOPE_COMPARE_TENSORS(own(f), run.features, 1e-5, 1e-5);
                NNSCOPE_COMPARE_TENSORS(own(r), run.reconstruction, 1e-5, 1e-5);
                NNSCOPE_COMPARE_TENSORS(own(e), run.error, 1e-5, 1e-5);
            }
            // the golden prompt, left-padded in this batch, against sae-lens
            SafetensorsFile reference(dictionariesDir() + "/" + entries[i] + ".reference.safetensors");
            const int64_t length = static_cast<int64_t>(batch.ids[0].size());
            const torch::Tensor features = f->tensor[0].narrow(0, seq - length, length);
            const torch::Tensor reconstruction = r->tensor[0].narrow(0, seq - length, length);
            const torch::Tensor error = e->tensor[0].narrow(0, seq - length, length);
            QVERIFY(torch::equal(features > 0, reference.tensor("feature_acts") > 0));
            NNSCOPE_COMPARE_TENSORS(features, reference.tensor("feature_acts"), 1e-4, 1e-4);
            NNSCOPE_COMPARE_TENSORS(reconstruction, reference.tensor("reconstruction"), 1e-4, 1e-4);
            // the error term: the output site's value (an SAE's own input, sae-lens's sae_input) less the reconstruction
            const torch::Tensor target = d.transcoder ? sites.value(attached[i].siteOut)[0].narrow(0, seq - length, length)
                                                      : reference.tensor("sae_input");
            NNSCOPE_COMPARE_TENSORS(error, target - reference.tensor("reconstruction"), 1e-4, 1e-4);
        }

        // written and read back: the same tensors, kept (not skipped) with their provenance
        QTemporaryDir tmp;
        const std::string file = tmp.filePath("features.safetensors").toStdString();
        exportValues(file, *model, result);
        TraceFileOptions noWeights;
        noWeights.loadWeights = false;
        const TraceFile tf = readTraceFile(file, noWeights);
        QVERIFY2(tf.skipped.empty(), tf.skipped.empty() ? "" : tf.skipped.front().c_str());
        QCOMPARE(tf.result.batch.ids, batch.ids);
        QCOMPARE(tf.result.dictionaryValues.size(), result.dictionaryValues.size());
        for (const DictionaryValue& v : result.dictionaryValues) {
            const DictionaryValue* back = tf.result.dictionaryValue(v.path);
            QVERIFY2(back, v.path.c_str());
            QVERIFY(back->kind == v.kind);
            QVERIFY(torch::equal(back->tensor, v.tensor));
            QCOMPARE(back->source->folder, v.source->folder);
            QCOMPARE(back->source->format, v.source->format);
            QCOMPARE(back->source->architecture, v.source->architecture);
            QCOMPARE(back->source->siteOut, v.source->siteOut);
            QCOMPARE(back->source->dSae, v.source->dSae);
            QCOMPARE(tf.metadata.at("layout:" + v.path), std::string(v.layout()));
            // the recorded sha256 is the file's own
            QCOMPARE(back->source->weights.size(), v.source->weights.size());
            for (const auto& [weights, digest] : back->source->weights) {
                QFile w(QString::fromStdString(weights));
                QVERIFY(w.open(QIODevice::ReadOnly));
                QCryptographicHash hash(QCryptographicHash::Sha256);
                QVERIFY(hash.addData(&w));
                QCOMPARE(digest, hash.result().toHex().toStdString());
            }
        }
        QCOMPARE(fileSha256(file), std::string(QCryptographicHash::hash([&] {
                                                   QFile all(QString::fromStdString(file));
                                                   return all.open(QIODevice::ReadOnly) ? all.readAll() : QByteArray();
                                               }(),
                                               QCryptographicHash::Sha256).toHex().toStdString()));
        QCOMPARE(sha256Hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));  // FIPS 180-4's empty message

        // a pattern naming a dictionary that is not attached is refused, naming it and the attached ones
        try {
            matchSaveValues(*model, attached, {"layers.1.layer_output[no-such-sae].features"});
            QFAIL("a value of a dictionary that is not attached was selected");
        } catch (const Error& ex) {
            const std::string m = ex.what();
            QVERIFY2(m.find("no-such-sae") != std::string::npos &&
                         m.find("no attached dictionary") != std::string::npos && m.find(entries[0]) != std::string::npos, ex.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, matchSaveValues(*model, {}, {"*[*].features"}));
        // nnterp's accessors keep their brackets
        const std::vector<ValueKey> accessor = matchSaveValues(*model, attached, {"layers_output[1]"}).values;
        QVERIFY(accessor.size() == 1 && accessor.front() == (ValueKey{Value::LayerOutput, 1}));
    }

    // Two dictionaries whose folders share a name stand apart by their parent folders, on the command line too: trace
    // --dictionary saves them, --json lists them under "saved" with their shapes, and a name not attached fails.
    void twoFoldersOfOneName() {
        QTemporaryDir tmp;
        const QString source = QString::fromStdString(dictionariesDir() + "/saelens-jumprelu-llama-resid-post");
        const QString copy = tmp.filePath("other/saelens-jumprelu-llama-resid-post");
        QVERIFY(QDir().mkpath(copy));
        for (const QString& f : QDir(source).entryList(QDir::Files)) QVERIFY(QFile::copy(source + "/" + f, copy + "/" + f));
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        std::vector<AttachedDictionary> attached = {AttachedDictionary::attach(*model, loadDictionary(source.toStdString())),
                                                    AttachedDictionary::attach(*model, loadDictionary(copy.toStdString()))};
        const auto names = dictionaryPathNames(attached);
        QCOMPARE(names, (std::vector<std::string>{"dictionaries/saelens-jumprelu-llama-resid-post", "other/saelens-jumprelu-llama-resid-post"}));

        QProcess p;
        const QString out = tmp.filePath("t.safetensors");
        p.start(NNSCOPE_BINARY, {"trace", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--dtype", "float32", "--prompt",
                                 QString::fromStdString(kPrompt), "--prompt", "Tom", "--dictionary", source, "--dictionary", copy, "--save",
                                 "layers.1.layer_output[other/*].features", "--save", "logits", "--out", out, "--json"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const nlohmann::json j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        const std::string path = "layers.1.layer_output[other/saelens-jumprelu-llama-resid-post].features";
        QCOMPARE(j["saved"].size(), size_t(2));  // logits and the one feature value; layers.1.layer_output only traced
        QCOMPARE(j["saved"][path]["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{2, 9, 64}));
        QCOMPARE(j["saved"][path]["layout"].get<std::string>(), std::string("Features"));
        const TraceFile tf = readTraceFile(out.toStdString());
        QVERIFY(tf.result.dictionaryValue(path));
        QCOMPARE(tf.result.dictionaryValue(path)->source->folder, std::filesystem::absolute(copy.toStdString()).lexically_normal().string());

        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"trace", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--prompt", "Tom", "--dictionary",
                                   source, "--save", "layers.1.layer_output[elsewhere].features"});
        QVERIFY(bad.waitForFinished(120000));
        QCOMPARE(bad.exitCode(), 1);
        QVERIFY2(bad.readAllStandardError().contains("no attached dictionary has it"), "the refusal names the problem");
    }

    // A folder that is not a dictionary says what it is: missing, a file, one level too high (the dictionaries inside
    // named), a format not read yet.
    void foldersThatAreNotDictionaries() {
        auto refused = [](const std::string& dir, const std::string& mentions) {
            try {
                loadDictionary(dir);
                return std::string("accepted");
            } catch (const Error& e) {
                const std::string m = e.what();
                return m.find(mentions) != std::string::npos && m.find(dir) != std::string::npos ? std::string() : m;
            }
        };
        QCOMPARE(refused(dictionariesDir() + "/no-such-sae", "no such folder"), std::string());
        QCOMPARE(refused(dictionariesDir() + "/manifest.json", "a file"), std::string());
        QCOMPARE(refused(dictionariesDir() + "/sparsify-topk-llama", "layers.1"), std::string());
        QCOMPARE(refused(NNSCOPE_DEMO_MODEL_DIR, "sae-layers.0"), std::string());
        QCOMPARE(refused(dictionariesDir() + "/circuittracer-plt-llama", "circuit-tracer"), std::string());
    }

    // The site is checked against the model: a dictionary for another width is refused with both sizes.
    void wrongModelIsRefused() {
        auto qwen = Model::load(test::fixture("tiny-qwen3"), test::float32());
        auto dictionary = loadDictionary(dictionariesDir() + "/saelens-topk-arcee-mlp-post");  // arcee's neurons
        try {
            AttachedDictionary::attach(*qwen, dictionary);
            QFAIL("a dictionary of another width was attached");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find(std::to_string(dictionary->dIn)) != std::string::npos && m.find(std::to_string(qwen->config().intermediateSize)) != std::string::npos, e.what());
        }
    }

    // Bad folders: each refused with the file and the problem named.
    void badFoldersAreRefused_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("mentions");
        const std::map<std::string, std::string> mentions = {{"saelens-missing-b_enc", "b_enc"},
                                                             {"saelens-wrong-shape-W_enc", "W_enc"},
                                                             {"saelens-unknown-architecture", "quantum_relu"},
                                                             {"saelens-layer-out-of-range", "out of range"},
                                                             {"saelens-pickle-only", "pickle"}};
        for (const auto& b : manifest()["bad"]) {
            const std::string name = b["entry"].get<std::string>();
            QTest::newRow(name.c_str()) << QString::fromStdString(b["path"].get<std::string>()) << QString::fromStdString(b["fixture"].get<std::string>())
                                        << QString::fromStdString(mentions.at(name));
        }
    }
    void badFoldersAreRefused() {
        QFETCH(QString, path);
        QFETCH(QString, fixture);
        QFETCH(QString, mentions);
        auto model = Model::load(test::fixture(fixture.toStdString()), test::float32().withTokenizer(false));
        const std::string dir = dictionariesDir() + "/" + path.toStdString();
        try {
            AttachedDictionary::attach(*model, loadDictionary(dir));
            QFAIL("a bad dictionary folder was accepted");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find(mentions.toStdString()) != std::string::npos, e.what());
            QVERIFY2(m.find(path.toStdString()) != std::string::npos, e.what());  // the file or folder named
        }
    }
};

NNSCOPE_TEST_SUITE(TestDictionaries, "test_dictionaries")
#include "test_dictionaries.moc"
