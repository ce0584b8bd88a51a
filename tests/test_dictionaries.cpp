// SPDX-License-Identifier: MIT
// Sparse dictionaries against their reference libraries: for every entry of tests/fixtures/dictionaries/manifest.json
// (tiny random dictionaries in each format, written and run by tests/fixtures/make_dictionaries.py with sae-lens's own
// classes, or sparsify's and circuit-tracer's formulas checked against their code), nnscope reads the folder, finds
// the site on the fixture model, traces the golden prompt and gives the reference's input, features and
// reconstruction. Bad folders are refused with a message that names the file and the problem.
#include "core/io/dictionary.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/edit.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "testutil.h"

#include "testsuite.h"

#include <QtTest>

#include <nlohmann/json.hpp>

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
