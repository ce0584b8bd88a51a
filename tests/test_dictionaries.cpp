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
#include "core/run/generate.h"
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

/// The transcoders tests/fixtures/make_feature_edits.py edits.
const char* const kTranscoderEdits[] = {"saelens-jumprelu-skip-transcoder-llama-l1", "saelens-transcoder-llama-l0",
                                        "gemmascope2-transcoder-affine-gemma3"};

const SafetensorsFile& featureEdits() {
    static const SafetensorsFile f(dictionariesDir() + "/feature-edits.reference.safetensors");
    return f;
}

std::string fixtureOf(const std::string& entry) {
    for (const auto& e : manifest()["entries"])
        if (e["entry"] == entry) return e["fixture"].get<std::string>();
    return {};
}

/// The edit of make_feature_edits.py in nnscope's syntax, DIR replaced by the dictionary's folder.
std::string editLine(const std::string& entry, const std::string& edit) {
    const auto& meta = featureEdits().metadata();
    std::string line = meta.at(entry + "." + edit);
    line.replace(line.find("DIR"), 3, dictionariesDir() + "/" + meta.at(entry + ".folder"));
    return line;
}

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
    }

    // A transcoder's feature edits (clamp, scale, steer an inactive feature, splice) change its output site by what the
    // edited features decode to, from its input site in the same pass: the logits equal transformers run with hooks that
    // apply the same edit through sae-lens's own transcoder (tests/fixtures/make_feature_edits.py), on the golden prompt.
    void transcoderFeatureEditsEqualSaeLensHooks_data() {
        QTest::addColumn<QString>("entry");
        QTest::addColumn<QString>("edit");
        for (const char* entry : kTranscoderEdits)
            for (const char* edit : {"clamp", "scale", "steer", "splice"})
                QTest::newRow((std::string(entry) + "/" + edit).c_str()) << entry << edit;
    }
    void transcoderFeatureEditsEqualSaeLensHooks() {
        QFETCH(QString, entry);
        QFETCH(QString, edit);
        const std::string name = entry.toStdString();
        const SafetensorsFile& reference = featureEdits();
        auto model = Model::load(test::fixture(fixtureOf(name)), test::float32());
        const std::string line = editLine(name, edit.toStdString());
        auto list = std::make_shared<EditList>();
        addIntervention(*list, *model, line);
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = list;
        const torch::Tensor got = trace(*model, encodeBatch(*model, {kPrompt}), o).value({Value::Logits, -1});
        NNSCOPE_COMPARE_TENSORS(got, reference.tensor(name + "." + edit.toStdString() + ".logits"), 1e-4, 1e-5);
        o.intervention = nullptr;
        const torch::Tensor plain = trace(*model, encodeBatch(*model, {kPrompt}), o).value({Value::Logits, -1});
        QVERIFY((got - plain).abs().max().item<double>() > 1e-3);  // and the edit moved the output
    }

    // The same steer on a left-padded batch (each row's real positions equal transformers' with the hook), and while
    // generating: greedy tokens under a feature edit that changes them equal transformers' generate with the hooks on
    // and its key/value cache (each step edits its new position).
    void transcoderFeatureEditsInBatchesAndGeneration_data() {
        QTest::addColumn<QString>("entry");
        for (const char* entry : kTranscoderEdits) QTest::newRow(entry) << entry;
    }
    void transcoderFeatureEditsInBatchesAndGeneration() {
        QFETCH(QString, entry);
        const std::string name = entry.toStdString();
        const SafetensorsFile& reference = featureEdits();
        auto model = Model::load(test::fixture(fixtureOf(name)), test::float32());
        auto list = std::make_shared<EditList>();
        addIntervention(*list, *model, editLine(name, "steer"));
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = list;
        const Batch batch = encodeBatch(*model, {kPrompt, "Lily went to the park."});
        const torch::Tensor got = trace(*model, batch, o).value({Value::Logits, -1});
        const torch::Tensor want = reference.tensor(name + ".steer.batch_logits");
        QCOMPARE(got.sizes().vec(), want.sizes().vec());
        for (int64_t r = 0; r < got.size(0); ++r) {
            const int64_t pad = got.size(1) - static_cast<int64_t>(batch.ids[static_cast<size_t>(r)].size());
            NNSCOPE_COMPARE_TENSORS(got[r].narrow(0, pad, got.size(1) - pad), want[r].narrow(0, pad, got.size(1) - pad), 1e-4, 1e-5);
        }
        auto idsOf = [](const torch::Tensor& t) {
            const torch::Tensor c = t.reshape({-1}).contiguous();
            return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
        };
        const std::vector<int64_t> prompt = encodeBatch(*model, {kPrompt}).ids[0];
        GenerateOptions g;
        g.maxNewTokens = 6;
        g.stopAtEos = false;
        QCOMPARE(generate(*model, prompt, g).ids, idsOf(reference.tensor(name + ".plain.generated")));
        auto strong = std::make_shared<EditList>();
        addIntervention(*strong, *model, editLine(name, "generate"));
        g.intervention = strong;
        const std::vector<int64_t> edited = idsOf(reference.tensor(name + ".generate.generated"));
        QCOMPARE(generate(*model, prompt, g).ids, edited);
    }

    // A transcoder whose output site the pass reaches without its input site is refused with both named.
    void transcoderOutputWithoutItsInputIsRefused() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        FeatureIntervention fi(AttachedDictionary::attach(*model, loadDictionary(dictionariesDir() + "/saelens-jumprelu-skip-transcoder-llama-l1")));
        fi.begin(PassPositions{});
        torch::Tensor y = torch::zeros({1, 3, 64});
        try {
            fi.apply(Value::MlpOutput, 1, y);
            QFAIL("an output site without its input was edited");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("mlp_input") != std::string::npos, e.what());
        }
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
