// SPDX-License-Identifier: MIT
// Sparse dictionaries against their reference libraries: for every entry of tests/fixtures/dictionaries/manifest.json
// (tiny random dictionaries in each format, written and run by tests/fixtures/make_dictionaries.py with sae-lens's own
// classes, or sparsify's and circuit-tracer's formulas checked against their code), nnscope reads the folder, finds
// the site on the fixture model, traces the golden prompt and gives the reference's input, features and
// reconstruction. Bad folders are refused with a message that names the file and the problem.
#include "core/io/dictionary.h"
#include "core/io/export.h"
#include "core/io/filehash.h"
#include "core/io/tracefile.h"
#include "core/io/safetensors.h"
#include "core/io/transcoderset.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/edit.h"
#include "core/run/features.h"
#include "core/run/generate.h"
#include "core/run/trace.h"
#include "testutil.h"

#include "testsuite.h"

#include <QCryptographicHash>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <regex>

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

const nlohmann::json& entry(const std::string& name) {
    for (const auto& e : manifest()["entries"])
        if (e["entry"] == name) return e;
    throw std::runtime_error("no manifest entry " + name);
}

/// `pattern` with {i} replaced by `layer` (the manifest's per-layer sites of circuit-tracer sets).
std::string atLayer(std::string pattern, int layer) {
    const auto at = pattern.find("{i}");
    return at == std::string::npos ? pattern : pattern.replace(at, 3, std::to_string(layer));
}

/// The message `load` throws, or "accepted".
template <class F>
std::string refusal(F load) {
    try {
        load();
        return "accepted";
    } catch (const Error& e) {
        return e.what();
    }
}

/// A copy of the fixture folder `name` in `tmp`, to break.
std::string copyOf(const QTemporaryDir& tmp, const std::string& name) {
    const std::filesystem::path to = std::filesystem::path(tmp.path().toStdString()) / name;
    std::filesystem::copy(dictionariesDir() + "/" + name, to, std::filesystem::copy_options::recursive);
    return to.string();
}

/// Rewrites the safetensors file `path` with tensor `name` replaced by `t` (every other tensor as it was).
void replaceTensor(const std::string& path, const std::string& name, const torch::Tensor& t) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    {
        SafetensorsFile f(path);
        for (const auto& [n, e] : f.entries()) tensors.emplace_back(n, n == name ? t : f.tensor(n).clone());
    }
    writeSafetensors(path, tensors, {});
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

    // circuit-tracer's per-layer transcoder sets: every layer a transcoder at its own block (Llama: mlp.hook_in →
    // mlp.hook_out; Gemma 2: ln2.hook_normalized, the pre-MLP norm before its gain, → hook_mlp_out), run through the
    // same path as any dictionary, gives the reference's input, features (every JumpReLU decision),
    // reconstruction (skip term included) and decode-only output at every layer. W_enc stays the mapped file's tensor,
    // transposed as a view.
    void circuitTracerSetMatchesTheReference_data() {
        QTest::addColumn<QString>("name");
        for (const auto& e : manifest()["entries"])
            if (e["format"] == "circuittracer_plt") QTest::newRow(e["entry"].get<std::string>().c_str()) << QString::fromStdString(e["entry"].get<std::string>());
    }
    void circuitTracerSetMatchesTheReference() {
        QFETCH(QString, name);
        const nlohmann::json& e = entry(name.toStdString());
        auto model = Model::load(test::fixture(e["fixture"].get<std::string>()), test::float32());
        const std::string dir = dictionariesDir() + "/" + e["path"].get<std::string>();
        const auto layers = loadDictionaries(dir);
        QCOMPARE(static_cast<int64_t>(layers.size()), e["layers"].get<int64_t>());
        std::vector<AttachedDictionary> attached;
        TraceOptions options;
        for (size_t i = 0; i < layers.size(); ++i) {
            const Dictionary& d = *layers[i];
            QCOMPARE(d.format, std::string("circuit-tracer"));
            QVERIFY(d.transcoder && d.activation == Dictionary::Activation::JumpReLUSigned);
            QCOMPARE(d.dIn, e["d_in"].get<int64_t>());
            QCOMPARE(d.dSae, e["d_sae"].get<int64_t>());
            QCOMPARE(d.wEnc.sizes().vec(), (std::vector<int64_t>{d.dIn, d.dSae}));
            QCOMPARE(d.wEnc.data_ptr(), d.files.front()->tensor("W_enc").data_ptr());  // no copy
            attached.push_back(AttachedDictionary::attach(*model, layers[i]));
            QCOMPARE(valuePath(model->family(), attached.back().site), atLayer(e["nnscope_site"].get<std::string>(), static_cast<int>(i)));
            QCOMPARE(valuePath(model->family(), attached.back().siteOut), atLayer(e["nnscope_site_out"].get<std::string>(), static_cast<int>(i)));
            for (const ValueKey& v : attached.back().neededValues()) options.save.push_back(v);
        }
        const TraceResult result = trace(*model, encodeBatch(*model, {kPrompt}), options);
        SafetensorsFile reference(dictionariesDir() + "/" + e["reference"].get<std::string>());
        for (size_t i = 0; i < layers.size(); ++i) {
            const std::string L = "layers." + std::to_string(i) + ".";
            const FeatureRun run = runDictionary(*model, result, attached[i], 0);
            NNSCOPE_COMPARE_TENSORS(run.input, reference.tensor(L + "sae_input"), 1e-4, 1e-5);
            const torch::Tensor features = reference.tensor(L + "feature_acts");
            QVERIFY(torch::equal(run.features != 0, features != 0));
            NNSCOPE_COMPARE_TENSORS(run.features, features, 1e-4, 1e-4);
            NNSCOPE_COMPARE_TENSORS(run.reconstruction, reference.tensor(L + "reconstruction"), 1e-4, 1e-4);
            QCOMPARE(layers[i]->wSkip.defined(), reference.contains(L + "decode_only"));
            if (layers[i]->wSkip.defined()) {  // the reconstruction without the skip term
                const torch::Tensor decodeOnly = torch::matmul(run.features, layers[i]->wDec) + layers[i]->bDec;
                NNSCOPE_COMPARE_TENSORS(decodeOnly, reference.tensor(L + "decode_only"), 1e-4, 1e-4);
            }
        }
        // one layer alone: its weights file (loadDictionary reads it too); the set's folder is not one dictionary
        const auto one = loadDictionaries(dir + "/layer_1.safetensors");
        QCOMPARE(one.size(), size_t(1));
        QCOMPARE(one.front()->site, "blocks.1." + e["native_site"].get<std::string>());
        QCOMPARE(loadDictionary(dir + "/layer_1.safetensors")->siteOut, "blocks.1." + e["native_site_out"].get<std::string>());
        const std::string m = refusal([&] { loadDictionary(dir); });
        QVERIFY2(m.find("circuit-tracer transcoder set") != std::string::npos && m.find("layer_0.safetensors") != std::string::npos, m.c_str());
    }

    // circuit-tracer's cross-layer transcoder: layer l's features from its own site, its reconstruction from the features
    // of every layer up to l, equal to the reference at every layer; reconstruct() on the reference's own features gives
    // the reference's reconstruction; a feature's decoder rows are its slots of W_dec_<source>.
    void crossLayerTranscoderMatchesTheReference() {
        const nlohmann::json& e = entry("circuittracer-clt-llama");
        auto model = Model::load(test::fixture(e["fixture"].get<std::string>()), test::float32());
        const std::string dir = dictionariesDir() + "/" + e["path"].get<std::string>();
        auto clt = loadCrossLayerTranscoder(dir);
        QCOMPARE(clt->numLayers, e["layers"].get<int64_t>());
        QCOMPARE(clt->dModel, e["d_in"].get<int64_t>());
        QCOMPARE(clt->dTranscoder, e["d_sae"].get<int64_t>());
        QVERIFY(clt->jumpReLU);
        const AttachedCrossLayerTranscoder attached = AttachedCrossLayerTranscoder::attach(*model, clt);
        TraceOptions options;
        options.save = attached.neededValues();
        const TraceResult result = trace(*model, encodeBatch(*model, {kPrompt}), options);
        const std::vector<FeatureRun> runs = runCrossLayerTranscoder(*model, result, attached, 0);
        QCOMPARE(static_cast<int64_t>(runs.size()), clt->numLayers);
        SafetensorsFile reference(dictionariesDir() + "/" + e["reference"].get<std::string>());
        std::vector<torch::Tensor> referenceFeatures;
        for (int l = 0; l < clt->numLayers; ++l) {
            const std::string L = "layers." + std::to_string(l) + ".";
            QCOMPARE(valuePath(model->family(), attached.sites[l]), atLayer(e["nnscope_site"].get<std::string>(), l));
            QCOMPARE(valuePath(model->family(), attached.sitesOut[l]), atLayer(e["nnscope_site_out"].get<std::string>(), l));
            NNSCOPE_COMPARE_TENSORS(runs[l].input, reference.tensor(L + "sae_input"), 1e-4, 1e-5);
            const torch::Tensor features = reference.tensor(L + "feature_acts");
            QVERIFY(torch::equal(runs[l].features != 0, features != 0));
            NNSCOPE_COMPARE_TENSORS(runs[l].features, features, 1e-4, 1e-4);
            NNSCOPE_COMPARE_TENSORS(clt->preActivation(runs[l].input, l), reference.tensor(L + "pre_activation"), 1e-4, 1e-4);
            NNSCOPE_COMPARE_TENSORS(runs[l].reconstruction, reference.tensor(L + "reconstruction"), 1e-4, 1e-4);
            referenceFeatures.push_back(features);
            NNSCOPE_COMPARE_TENSORS(clt->reconstruct(referenceFeatures, l), reference.tensor(L + "reconstruction"), 1e-5, 1e-5);
            QVERIFY(std::isfinite(runs[l].mse) && runs[l].meanL0 > 0);
        }
        SafetensorsFile dec0(dir + "/W_dec_0.safetensors");
        const torch::Tensor w = dec0.tensor("W_dec_0");  // [d_transcoder, n_layers, d_model]
        QVERIFY(torch::equal(clt->decoderRows(0, 5), w[5]));
        QVERIFY(torch::equal(clt->decoder(0, 1), w.select(1, 1)));
        QVERIFY(refusal([&] { clt->decoder(1, 0); }).find("no decoder from layer 1 to layer 0") != std::string::npos);
        QVERIFY(refusal([&] { clt->reconstruct({referenceFeatures[0]}, 1); }).find("layers 0 to 1") != std::string::npos);
        // not a set of separate dictionaries
        QVERIFY(refusal([&] { loadDictionaries(dir); }).find("cross-layer") != std::string::npos);
    }

    // Broken circuit-tracer folders are refused with the file and the problem named.
    void badTranscoderSetsAreRefused() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        auto says = [](const std::string& message, std::initializer_list<std::string> parts) {
            for (const std::string& p : parts)
                if (message.find(p) == std::string::npos) return false;
            return true;
        };
        namespace fs = std::filesystem;
        // a layer file missing: layer_1 renamed layer_2 (circuit-tracer counts the files and reads layer_0, layer_1)
        std::string set = copyOf(tmp, "circuittracer-plt-llama");
        fs::rename(set + "/layer_1.safetensors", set + "/layer_2.safetensors");
        std::string m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {set + "/layer_1.safetensors", "missing"}), m.c_str());
        fs::rename(set + "/layer_2.safetensors", set + "/layer_1.safetensors");
        // a wrong shape
        replaceTensor(set + "/layer_0.safetensors", "W_enc", torch::zeros({48, 63}));
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {set + "/layer_0.safetensors", "W_enc", "[48, 63]", "[48, 64]"}), m.c_str());
        // a missing tensor
        replaceTensor(set + "/layer_0.safetensors", "W_enc", torch::zeros({48, 64}));
        {
            std::vector<std::pair<std::string, torch::Tensor>> tensors;
            SafetensorsFile f(set + "/layer_1.safetensors");
            for (const auto& [n, e] : f.entries())
                if (n != "W_dec") tensors.emplace_back(n, f.tensor(n).clone());
            writeSafetensors(set + "/layer_1.safetensors.tmp", tensors, {});
        }
        fs::rename(set + "/layer_1.safetensors.tmp", set + "/layer_1.safetensors");
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {set + "/layer_1.safetensors", "no tensor 'W_dec'"}), m.c_str());
        fs::copy_file(dictionariesDir() + "/circuittracer-plt-llama/layer_1.safetensors", set + "/layer_1.safetensors",
                      fs::copy_options::overwrite_existing);
        // config.yaml: a key missing, not YAML, an unknown kind, a Hub path
        const std::string yaml = set + "/config.yaml";
        auto writeYaml = [&](const std::string& text) { std::ofstream(yaml) << text; };
        writeYaml("model_kind: transcoder_set\nfeature_input_hook: mlp.hook_in\n");
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {yaml, "feature_output_hook"}), m.c_str());
        writeYaml("model_kind: [transcoder_set\n");
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {yaml, "not YAML"}), m.c_str());
        writeYaml("model_kind: sparse_set\nfeature_input_hook: mlp.hook_in\nfeature_output_hook: mlp.hook_out\n");
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {yaml, "sparse_set"}), m.c_str());
        writeYaml("model_kind: transcoder_set\nfeature_input_hook: mlp.hook_in\nfeature_output_hook: mlp.hook_out\n"
                  "transcoders:\n  - hf://someone/set/layer_0.safetensors\n");
        m = refusal([&] { loadDictionaries(set); });
        QVERIFY2(says(m, {yaml, "hf://someone/set/layer_0.safetensors", "download"}), m.c_str());
        // a hook nnscope does not map: refused when attached, naming the file and the hook
        writeYaml("model_kind: transcoder_set\nfeature_input_hook: attn.hook_q\nfeature_output_hook: mlp.hook_out\n");
        auto model = Model::load(test::fixture("tiny-llama"), test::float32().withTokenizer(false));
        m = refusal([&] { AttachedDictionary::attach(*model, loadDictionaries(set).front()); });
        QVERIFY2(says(m, {set, "blocks.0.attn.hook_q"}), m.c_str());

        // the cross-layer transcoder: a decoder file missing, a decoder of the wrong width
        const std::string clt = copyOf(tmp, "circuittracer-clt-llama");
        fs::rename(clt + "/W_dec_1.safetensors", clt + "/W_dec_1.bak");
        m = refusal([&] { loadCrossLayerTranscoder(clt); });
        QVERIFY2(says(m, {clt + "/W_dec_1.safetensors", "missing"}), m.c_str());
        fs::rename(clt + "/W_dec_1.bak", clt + "/W_dec_1.safetensors");
        replaceTensor(clt + "/W_dec_1.safetensors", "W_dec_1", torch::zeros({48, 2, 64}));  // layer 1 writes to one layer only
        m = refusal([&] { loadCrossLayerTranscoder(clt); });
        QVERIFY2(says(m, {clt + "/W_dec_1.safetensors", "W_dec_1", "[48, 2, 64]", "[48, 1, 64]"}), m.c_str());
        replaceTensor(clt + "/W_dec_1.safetensors", "W_dec_1", torch::zeros({48, 1, 64}));
        std::ofstream(clt + "/config.yaml") << "model_kind: cross_layer_transcoder\nfeature_output_hook: hook_mlp_out\n";
        m = refusal([&] { loadCrossLayerTranscoder(clt); });
        QVERIFY2(says(m, {clt + "/config.yaml", "feature_input_hook"}), m.c_str());
        // a CLT for another number of blocks is refused when attached
        std::ofstream(clt + "/config.yaml") << "model_kind: cross_layer_transcoder\nfeature_input_hook: hook_resid_mid\n"
                                               "feature_output_hook: hook_mlp_out\n";
        auto apertus = Model::load(test::fixture("tiny-apertus"), test::float32().withTokenizer(false));  // 3 blocks
        m = refusal([&] { AttachedCrossLayerTranscoder::attach(*apertus, loadCrossLayerTranscoder(clt)); });
        QVERIFY2(says(m, {"2 layers", "3 blocks"}), m.c_str());
    }

    // `nnscope features --json` on a transcoder set: one document per layer, each as a single dictionary's, with the
    // layer's sites and the reference's active features at the last position.
    void featuresCommandReadsSets() {
        for (const std::string name : {"circuittracer-plt-llama", "circuittracer-clt-llama"}) {
            const nlohmann::json& e = entry(name);
            QProcess p;
            p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--dtype", "float32",
                                     "--dictionary", QString::fromStdString(dictionariesDir() + "/" + name), "--prompt",
                                     QString::fromStdString(kPrompt), "--json", "--top-k", "100"});
            QVERIFY(p.waitForFinished(60000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
            QCOMPARE(j["set"]["model_kind"].get<std::string>(), std::string(name.find("clt") != std::string::npos ? "cross_layer_transcoder" : "transcoder_set"));
            QCOMPARE(static_cast<int64_t>(j["layers"].size()), e["layers"].get<int64_t>());
            SafetensorsFile reference(dictionariesDir() + "/" + e["reference"].get<std::string>());
            for (size_t l = 0; l < j["layers"].size(); ++l) {
                const auto& doc = j["layers"][l];
                QCOMPARE(doc["site"].get<std::string>(), atLayer(e["nnscope_site"].get<std::string>(), static_cast<int>(l)));
                QCOMPARE(doc["site_out"].get<std::string>(), atLayer(e["nnscope_site_out"].get<std::string>(), static_cast<int>(l)));
                const torch::Tensor want = reference.tensor("layers." + std::to_string(l) + ".feature_acts")[-1];
                const auto& last = doc["prompts"][0]["positions"].back();
                QCOMPARE(last["l0"].get<int64_t>(), (want > 0).sum().item<int64_t>());
                for (const auto& f : last["top"])
                    QVERIFY(std::abs(f["activation"].get<double>() - want[f["feature"].get<int64_t>()].item<double>()) < 1e-4);
            }
        }
        // --out: each tensor's layout and axes in the metadata, and none for values the file does not hold
        QTemporaryDir tmp;
        const QString out = tmp.filePath("features.safetensors");
        QProcess p;
        p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--dtype", "float32",
                                 "--dictionary", QString::fromStdString(dictionariesDir() + "/circuittracer-plt-llama"), "--prompt",
                                 QString::fromStdString(kPrompt), "--out", out});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        SafetensorsFile file(out.toStdString());
        const std::map<std::string, std::string>& md = file.metadata();
        int described = 0;
        for (const auto& [name, entry] : file.entries()) {
            const bool features = name.find(".features") != std::string::npos;
            QCOMPARE(md.at("axes:" + name), std::string(features ? "seq d_sae" : "seq d_out"));
            QCOMPARE(md.at("layout:" + name), std::string(features ? "Features" : "Reconstruction"));
            ++described;
        }
        QCOMPARE(described, 2 * 3);  // two layers, features / reconstruction / error of the one prompt
        for (const auto& [key, value] : md)
            if (key.rfind("axes:", 0) == 0) QVERIFY2(file.contains(key.substr(5)), key.c_str());
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

    // A feature edit at one prompt position (`feature DIR:F@P = v`, what circuit-tracer's interventions do): the output
    // site at P equals the every-position edit's there (itself checked against sae-lens above: the site's block sees no
    // other position's edit), every other position of the site and the logits before P keep the plain trace's values,
    // the logits from P on move; in a left-padded batch @-1 edits each row's own last token; a position no row has is
    // refused.
    void transcoderFeatureEditAtOnePosition_data() {
        QTest::addColumn<QString>("entry");
        for (const char* entry : kTranscoderEdits) QTest::newRow(entry) << entry;
    }
    void transcoderFeatureEditAtOnePosition() {
        QFETCH(QString, entry);
        const std::string name = entry.toStdString();
        auto model = Model::load(test::fixture(fixtureOf(name)), test::float32());
        const std::string everywhere = editLine(name, "steer");
        static const std::regex featureNumber(R"((:\s*\d+)\s*(\+=|=|\*=))");
        auto at = [&](const std::string& positions) { return std::regex_replace(everywhere, featureNumber, "$1@" + positions + " $2"); };
        QVERIFY(at("3") != everywhere);
        const std::string dir = everywhere.substr(8, everywhere.find_last_of(':') - 8);
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(dir));
        auto run = [&](const std::string& line, const std::vector<std::string>& prompts) {
            TraceOptions o;
            o.save = {{Value::Logits, -1}, attached.siteOut};
            if (!line.empty()) {
                auto list = std::make_shared<EditList>();
                addIntervention(*list, *model, line);
                o.intervention = list;
            }
            return trace(*model, encodeBatch(*model, prompts), o);
        };
        const int64_t P = 4;
        const TraceResult plain = run("", {kPrompt}), all = run(everywhere, {kPrompt}), one = run(at(std::to_string(P)), {kPrompt});
        const torch::Tensor y = one.value(attached.siteOut), yPlain = plain.value(attached.siteOut), yAll = all.value(attached.siteOut);
        const int64_t n = y.size(1);
        NNSCOPE_COMPARE_TENSORS(y.select(1, P), yAll.select(1, P), 1e-5, 1e-6);
        QVERIFY((y.select(1, P) - yPlain.select(1, P)).abs().max().item<double>() > 1e-3);
        NNSCOPE_COMPARE_TENSORS(y.narrow(1, 0, P), yPlain.narrow(1, 0, P), 0, 0);
        NNSCOPE_COMPARE_TENSORS(y.narrow(1, P + 1, n - P - 1), yPlain.narrow(1, P + 1, n - P - 1), 0, 0);
        const torch::Tensor logits = one.value({Value::Logits, -1}), logitsPlain = plain.value({Value::Logits, -1});
        NNSCOPE_COMPARE_TENSORS(logits.narrow(1, 0, P), logitsPlain.narrow(1, 0, P), 0, 0);
        QVERIFY((logits.select(1, P) - logitsPlain.select(1, P)).abs().max().item<double>() > 1e-3);

        // a left-padded batch: @-1 is each row's own last token, as the every-position edit gives there
        const std::vector<std::string> prompts = {kPrompt, "Lily went to the park."};
        const TraceResult last = run(at("-1"), prompts), lastAll = run(everywhere, prompts), lastPlain = run("", prompts);
        const torch::Tensor b = last.value(attached.siteOut), bAll = lastAll.value(attached.siteOut), bPlain = lastPlain.value(attached.siteOut);
        const int64_t seq = b.size(1);
        for (int64_t r = 0; r < 2; ++r) {
            NNSCOPE_COMPARE_TENSORS(b[r][seq - 1], bAll[r][seq - 1], 1e-5, 1e-6);
            NNSCOPE_COMPARE_TENSORS(b[r].narrow(0, 0, seq - 1), bPlain[r].narrow(0, 0, seq - 1), 0, 0);
        }
        QVERIFY_THROWS_EXCEPTION(Error, run(at("40"), {kPrompt}));
        EditList list;
        QVERIFY_THROWS_EXCEPTION(Error, addIntervention(list, *model, at("x")));
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
    void describedOnce() {  // "saelens transcoder", not "saelens transcoder transcoder"
        const auto plain = loadDictionary(dictionariesDir() + "/saelens-transcoder-llama-l0");
        QVERIFY2(plain->describe().rfind("saelens transcoder, 64 → 64 features → 64 (", 0) == 0, plain->describe().c_str());
        const auto skip = loadDictionary(dictionariesDir() + "/saelens-jumprelu-skip-transcoder-llama-l1");
        QVERIFY2(skip->describe().rfind("saelens jumprelu_skip_transcoder, 64 → 64 features → 64 (", 0) == 0, skip->describe().c_str());
        const auto sae = loadDictionary(dictionariesDir() + "/saelens-gated-llama-resid-post");
        QVERIFY2(sae->describe().rfind("saelens gated SAE, 64 → 64 features (", 0) == 0, sae->describe().c_str());
    }

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
        QCOMPARE(refused(NNSCOPE_DEMO_MODEL_DIR, "transcoders"), std::string());  // a transcoder set below is named too
        // a set where one dictionary is asked for (a dashboard): one layer's file, and where the whole set goes
        QCOMPARE(refused(dictionariesDir() + "/circuittracer-plt-llama", "give one layer's file"), std::string());
        QCOMPARE(refused(dictionariesDir() + "/circuittracer-plt-llama", "The whole set attaches to a trace"), std::string());
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
