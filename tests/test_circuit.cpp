// SPDX-License-Identifier: MIT
// Attribution graphs against circuit-tracer 0.5.0: tests/fixtures/make_circuit_references.py ran circuit-tracer's own
// attribute() (TransformerLens backend, CPU, float32) on the tiny fixture models with the circuit-tracer transcoder
// fixtures and saved its graph; nnscope computes the graph of the same ids with the same transcoders and must give the
// same nodes (selected features with their activations, errors, tokens, logit targets with their probabilities) and
// every edge. Also: the feature selection under max_feature_nodes, bad inputs, rows spilled to a temporary file, the
// memory estimate against the measured peak.
#include "core/analysis/circuit.h"
#include "core/analysis/featureeffects.h"
#include "bench/peakmemory.h"
#include "bench/randomcircuit.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/model/taps.h"
#include "testutil.h"

#include "testsuite.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

using namespace nnscope;

namespace {

std::string circuitsDir() { return test::fixturesDir() + "/circuits"; }
std::string dictionaryDir(const std::string& name) { return test::fixturesDir() + "/dictionaries/" + name; }

/// Fails the test unless f throws nnscope::Error with `words` in its message.
void expectError(const std::function<void()>& f, const std::string& words) {
    try {
        f();
    } catch (const Error& e) {
        const std::string m = e.what();
        QVERIFY2(m.find(words) != std::string::npos, m.c_str());
        return;
    }
    QFAIL(("no error; expected one saying: " + words).c_str());
}

std::vector<int64_t> int64s(const torch::Tensor& t) {
    const torch::Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

/// The graph's adjacency as circuit-tracer stores it, [nodes, nodes] (rows = targets, columns = sources).
torch::Tensor denseAdjacency(const AttributionGraph& g) {
    const int64_t n = static_cast<int64_t>(g.nodes.size());
    torch::Tensor a = torch::zeros({n, n});
    auto acc = a.accessor<float, 2>();
    for (int64_t t = 0; t < n; ++t)
        for (int64_t e = g.rowStart[static_cast<size_t>(t)]; e < g.rowStart[static_cast<size_t>(t) + 1]; ++e)
            acc[t][g.source[static_cast<size_t>(e)]] = g.weight[static_cast<size_t>(e)];
    return a;
}

/// A random Llama-shaped model in memory (hidden 128, 3 blocks) and random per-layer JumpReLU transcoders (256
/// features, about a sixteenth active) reading mlp_input and writing mlp_output, for the memory measurement.
std::pair<std::shared_ptr<const Model>, CircuitTranscoders> randomModel() {
    bench::RandomCircuitShape s;
    s.layers = 3;
    s.hidden = 128;
    s.heads = 4;
    s.intermediate = 256;
    s.vocab = 500;
    s.features = 256;
    s.threshold = 1.5;  // P(N(0,1) > 1.5) ≈ 1/15
    s.decoderScale = 0.1;
    s.seed = 7;
    return bench::randomCircuit(s);
}

}  // namespace

class TestCircuit : public QObject {
    Q_OBJECT

    /// Computes the graph of reference `ref` (a file of tests/fixtures/circuits) with `transcoders` and compares every
    /// node and edge (matchesCircuitTracer says the tolerance).
    static void checkAgainstReference(const SafetensorsFile& ref, const CircuitTranscoders& transcoders) {
        const QString run = QString::fromStdString(ref.metadata().at("run"));
        const auto& meta = ref.metadata();
        const std::string modelDir = test::fixturesDir() + "/" + meta.at("model").substr(std::string("tests/fixtures/").size());
        auto model = Model::load(modelDir, test::float32());
        const nlohmann::json opt = nlohmann::json::parse(meta.at("options"));
        CircuitOptions o;
        o.batchSize = opt["batch_size"].get<int>();
        o.updateInterval = opt["update_interval"].get<int>();
        o.maxNLogits = opt["max_n_logits"].get<int>();
        o.desiredLogitProb = opt["desired_logit_prob"].get<double>();
        if (!opt["max_feature_nodes"].is_null()) o.maxFeatureNodes = opt["max_feature_nodes"].get<int64_t>();
        const std::vector<int64_t> ids = int64s(ref.tensor("input_tokens"));
        CircuitStats stats;
        int progressCalls = 0;
        const AttributionGraph g = computeAttributionGraph(*model, transcoders, ids, o,
                                                           [&](const std::string&, int64_t, int64_t) { ++progressCalls; }, nullptr, &stats);
        QVERIFY(progressCalls > 2);
        QVERIFY(g.tokenIds == ids);
        QCOMPARE(g.numLayers, static_cast<int>(model->config().numLayers));

        // the active features and the selection
        const torch::Tensor active = ref.tensor("active_features");      // [n_active, 3]
        const torch::Tensor values = ref.tensor("activation_values");    // [n_active]
        const std::vector<int64_t> selected = int64s(ref.tensor("selected_features"));
        QCOMPARE(stats.activeFeatures, active.size(0));
        QCOMPARE(stats.selectedFeatures, static_cast<int64_t>(selected.size()));
        if (o.maxFeatureNodes > 0) QVERIFY(static_cast<int64_t>(selected.size()) < active.size(0));
        const int64_t L = g.numLayers, n = static_cast<int64_t>(ids.size());
        const std::vector<int64_t> logits = int64s(ref.tensor("logit_targets"));
        const int64_t nodes = static_cast<int64_t>(selected.size()) + (L + 1) * n + static_cast<int64_t>(logits.size());
        QCOMPARE(static_cast<int64_t>(g.nodes.size()), nodes);
        QCOMPARE(static_cast<int64_t>(g.nodes.size()), static_cast<int64_t>(std::stoll(meta.at("n_nodes"))));
        std::vector<float> ourActs, theirActs;
        for (size_t i = 0; i < selected.size(); ++i) {
            const GraphNode& node = g.nodes[i];
            const torch::Tensor want = active[selected[i]];
            QVERIFY(node.kind == GraphNode::Kind::Feature);
            QCOMPARE(static_cast<int64_t>(node.layer), want[0].item<int64_t>());
            QCOMPARE(node.position, want[1].item<int64_t>());
            QCOMPARE(node.index, want[2].item<int64_t>());
            ourActs.push_back(node.activation);
            theirActs.push_back(values[selected[i]].item<float>());
        }
        NNSCOPE_COMPARE_TENSORS(torch::tensor(ourActs), torch::tensor(theirActs), 1e-4, 1e-5);
        size_t k = selected.size();
        for (int64_t l = 0; l < L; ++l)
            for (int64_t p = 0; p < n; ++p, ++k) {
                QVERIFY(g.nodes[k].kind == GraphNode::Kind::Error);
                QCOMPARE(static_cast<int64_t>(g.nodes[k].layer), l);
                QCOMPARE(g.nodes[k].position, p);
            }
        for (int64_t p = 0; p < n; ++p, ++k) {
            QVERIFY(g.nodes[k].kind == GraphNode::Kind::Token);
            QCOMPARE(g.nodes[k].index, ids[static_cast<size_t>(p)]);
        }
        std::vector<float> ourP;
        for (size_t i = 0; i < logits.size(); ++i, ++k) {
            QVERIFY(g.nodes[k].kind == GraphNode::Kind::Logit);
            QCOMPARE(g.nodes[k].index, logits[i]);
            QCOMPARE(static_cast<int64_t>(g.nodes[k].layer), L + 1);
            QCOMPARE(g.nodes[k].targetLogit, i == 0);
            ourP.push_back(g.nodes[k].tokenProb);
        }
        NNSCOPE_COMPARE_TENSORS(torch::tensor(ourP), ref.tensor("logit_probabilities"), 1e-4, 1e-6);

        // every edge
        torch::Tensor theirs = torch::zeros({nodes * nodes});
        theirs.index_put_({ref.tensor("adjacency.index").to(torch::kInt64)}, ref.tensor("adjacency.values"));
        theirs = theirs.reshape({nodes, nodes});
        const torch::Tensor ours = denseAdjacency(g);
        const torch::Tensor scale = theirs.abs().amax(1, /*keepdim=*/true) * 1e-4 + 1e-6;
        const torch::Tensor excess = ((ours - theirs).abs() - scale).clamp_min(0);
        const std::string what = run.toStdString() + ": " + std::to_string(excess.gt(0).sum().item<int64_t>()) + " of " +
                                 std::to_string(nodes * nodes) + " entries off; max |diff| " +
                                 std::to_string((ours - theirs).abs().max().item<double>()) + ", largest edge " +
                                 std::to_string(theirs.abs().max().item<double>());
        qInfo("%s", what.c_str());
        QVERIFY2(excess.max().item<double>() == 0.0, what.c_str());
        // the same non-zero pattern where circuit-tracer's edges are clearly non-zero, and a real graph
        QVERIFY(theirs.ne(0).sum().item<int64_t>() > 500);
        QVERIFY2(ours.ne(0).logical_and(theirs.abs().gt(scale)).sum().item<int64_t>() == theirs.abs().gt(scale).sum().item<int64_t>(),
                 what.c_str());
        // CSR invariants: sources ascend within a row; errors and tokens receive nothing
        for (size_t t = 0; t + 1 < g.rowStart.size(); ++t)
            for (int64_t e = g.rowStart[t] + 1; e < g.rowStart[t + 1]; ++e) QVERIFY(g.source[static_cast<size_t>(e)] > g.source[static_cast<size_t>(e) - 1]);
        for (size_t t = selected.size(); t < selected.size() + static_cast<size_t>((L + 1) * n); ++t) QCOMPARE(g.rowStart[t + 1], g.rowStart[t]);
    }

private slots:
    /// The estimate is within a factor of 2 of the peak memory measured on a run (/proc/self/status VmHWM after
    /// resetting it, minus the memory held before), on a random 3-block model with 24 tokens and about a thousand active
    /// features. First in the suite, so no earlier test has left freed memory in the heap for the run to reuse.
    void estimateMatchesMeasuredPeak() {
        auto [model, transcoders] = randomModel();
        std::vector<int64_t> ids{1};
        for (int64_t i = 0; i < 23; ++i) ids.push_back(5 + (i * 37) % 400);
        CircuitOptions o;
        o.batchSize = 64;
        CircuitStats stats;
        const bench::PeakMemory meter;
        const AttributionGraph g = computeAttributionGraph(*model, transcoders, ids, o, {}, nullptr, &stats);
        const int64_t peak = meter.peakBytes();
        CircuitOptions withCount = o;
        withCount.activePerLayerPosition = static_cast<double>(stats.activeFeatures) / (3.0 * 23.0);
        const CircuitEstimate e = estimateCircuit(*model, transcoders, 24, withCount);
        QVERIFY2(stats.activeFeatures > 500, std::to_string(stats.activeFeatures).c_str());
        QCOMPARE(e.activeFeatures, stats.activeFeatures);
        const std::string what = "estimated " + std::to_string(e.peakBytes) + " bytes, measured " + std::to_string(peak) + " (" + e.text() + ")";
        qInfo("%s", what.c_str());
        QVERIFY2(e.peakBytes <= 2 * peak && peak <= 2 * e.peakBytes, what.c_str());
        QVERIFY2(e.seconds > 0 && e.seconds < 60, what.c_str());
        QVERIFY(g.edgeCount() > 0);
    }

    /// Every graph of tests/fixtures/circuits equals circuit-tracer's: the nodes in its order, the activations, the logit
    /// targets and probabilities, every entry of the adjacency matrix. Tolerance: |ours - theirs| <= 1e-4 · (largest
    /// |edge| of that target's row) + 1e-6. The two compute the same float32 arithmetic in a different order (TransformerLens'
    /// per-head einsums and rotary against transformers' fused projections; their logits differ by ~2e-6, recorded in
    /// each file's metadata), so an edge, a sum over the model's paths, carries a relative error of a few 1e-6 of its row's
    /// scale; 1e-4 leaves a margin while any wrong path, freezing or vector moves an edge by far more.
    void matchesCircuitTracer_data() {
        QTest::addColumn<QString>("run");
        for (const char* r : {"plt-llama", "plt-llama-max", "plt-gemma2", "clt-llama", "clt-llama-max", "plt-qwen3", "gs2-gemma2", "topk-skip-llama"})
            QTest::newRow(r) << QString(r);
    }
    void matchesCircuitTracer() {
        QFETCH(QString, run);
        const SafetensorsFile ref(circuitsDir() + "/" + run.toStdString() + ".safetensors");
        const std::string tcDir = test::fixturesDir() + "/" + ref.metadata().at("transcoders").substr(std::string("tests/fixtures/").size());
        checkAgainstReference(ref, loadCircuitTranscoders(tcDir));
    }

    /// The per-layer transcoders of circuittracer-plt-llama written as SAELens jumprelu_skip_transcoder folders (one per
    /// block, W_enc [d_in, d_sae], W_skip [d_out, d_in], metadata.hook_name / hook_name_out) and read back through
    /// loadCircuitTranscoders' folder-of-dictionaries path give circuit-tracer's graph (every threshold is positive, so
    /// SAELens' relu'd JumpReLU and circuit-tracer's signed one agree).
    void saelensTranscodersMatchCircuitTracer() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string root = tmp.path().toStdString();
        for (int l = 0; l < 2; ++l) {
            const SafetensorsFile ct(dictionaryDir("circuittracer-plt-llama") + "/layer_" + std::to_string(l) + ".safetensors");
            const std::string dir = root + "/blocks." + std::to_string(l) + ".mlp";
            std::filesystem::create_directories(dir);
            const nlohmann::json cfg = {{"architecture", "jumprelu_skip_transcoder"}, {"d_in", 64}, {"d_sae", 48}, {"d_out", 64},
                                        {"dtype", "float32"}, {"normalize_activations", "none"},
                                        {"metadata", {{"hook_name", "blocks." + std::to_string(l) + ".mlp.hook_in"},
                                                      {"hook_name_out", "blocks." + std::to_string(l) + ".mlp.hook_out"},
                                                      {"model_name", "tiny-llama"}}}};
            std::ofstream(dir + "/cfg.json") << cfg.dump(2);
            writeSafetensors(dir + "/sae_weights.safetensors",
                             {{"W_enc", ct.tensor("W_enc").t().contiguous()}, {"W_dec", ct.tensor("W_dec").clone()},
                              {"b_enc", ct.tensor("b_enc").clone()}, {"b_dec", ct.tensor("b_dec").clone()},
                              {"threshold", ct.tensor("activation_function.threshold").clone()}, {"W_skip", ct.tensor("W_skip").clone()}},
                             {{"format", "pt"}});
        }
        const CircuitTranscoders t = loadCircuitTranscoders(root);
        QCOMPARE(static_cast<int>(t.perLayer.size()), 2);
        QCOMPARE(QString::fromStdString(t.perLayer[0]->format), QString("saelens"));
        QVERIFY(t.perLayer[1]->wSkip.defined());
        checkAgainstReference(SafetensorsFile(circuitsDir() + "/plt-llama.safetensors"), t);
        if (QTest::currentTestFailed()) return;
        checkAgainstReference(SafetensorsFile(circuitsDir() + "/plt-llama-max.safetensors"), t);
    }

    /// With the rows forced into the temporary file (a row memory limit of one byte), the graph is the same, bit for bit.
    void rowsSpillToATemporaryFile() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const CircuitTranscoders t = loadCircuitTranscoders(dictionaryDir("circuittracer-plt-llama"));
        const std::vector<int64_t> ids = int64s(SafetensorsFile(circuitsDir() + "/plt-llama-max.safetensors").tensor("input_tokens"));
        CircuitOptions o;
        o.batchSize = 8;
        o.maxFeatureNodes = 40;
        o.updateInterval = 2;
        CircuitStats inMemory, onDisk;
        const AttributionGraph a = computeAttributionGraph(*model, t, ids, o, {}, nullptr, &inMemory);
        o.rowMemoryLimit = 1;
        const AttributionGraph b = computeAttributionGraph(*model, t, ids, o, {}, nullptr, &onDisk);
        QVERIFY(!inMemory.rowsOnDisk);
        QVERIFY(onDisk.rowsOnDisk);
        QVERIFY(a.rowStart == b.rowStart);
        QVERIFY(a.source == b.source);
        QVERIFY(a.weight == b.weight);
    }

    /// Cancel stops the run with nnscope::Cancelled.
    void cancelStops() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const CircuitTranscoders t = loadCircuitTranscoders(dictionaryDir("circuittracer-plt-llama"));
        std::atomic<bool> cancel{false};
        bool cancelled = false;
        try {
            computeAttributionGraph(*model, t, test::goldenIds("tiny-llama"), CircuitOptions(),
                                    [&](const std::string& phase, int64_t, int64_t) {
                                        if (phase == "logit rows") cancel = true;
                                    },
                                    &cancel);
        } catch (const Cancelled&) {
            cancelled = true;
        }
        QVERIFY(cancelled);
    }

    /// Bad inputs give errors that say what is wrong: a set with another layer count, transcoders of another width, an
    /// SAE given as a transcoder, a one-token prompt, a token outside the vocabulary, a bfloat16 model.
    void badInputs() {
        auto llama = Model::load(test::fixture("tiny-llama"), test::float32());
        const CircuitTranscoders gemmaSet = loadCircuitTranscoders(dictionaryDir("circuittracer-plt-gemma2"));  // 3 layers
        const std::vector<int64_t> ids = test::goldenIds("tiny-llama");
        expectError([&] { computeAttributionGraph(*llama, gemmaSet, ids); }, "3 layers of transcoders, but");
        expectError([&] { estimateCircuit(*llama, gemmaSet, 9, {}); }, "has 2 blocks");

        CircuitTranscoders narrow;
        for (int l = 0; l < 2; ++l) {
            auto d = std::make_shared<Dictionary>();
            d->format = "circuit-tracer";
            d->transcoder = true;
            d->dIn = d->dOut = 32;
            d->dSae = 8;
            d->site = "blocks." + std::to_string(l) + ".mlp.hook_in";
            d->siteOut = "blocks." + std::to_string(l) + ".mlp.hook_out";
            d->dir = "narrow";
            narrow.perLayer.push_back(d);
        }
        expectError([&] { computeAttributionGraph(*llama, narrow, ids); }, "has 32 values per position, but layers.0.mlp_input");

        CircuitTranscoders sae;
        for (int l = 0; l < 2; ++l) {
            auto d = std::make_shared<Dictionary>(*narrow.perLayer[static_cast<size_t>(l)]);
            d->transcoder = false;
            d->dIn = d->dOut = 64;
            sae.perLayer.push_back(d);
        }
        expectError([&] { computeAttributionGraph(*llama, sae, ids); }, "an SAE, not a transcoder");

        const CircuitTranscoders plt = loadCircuitTranscoders(dictionaryDir("circuittracer-plt-llama"));
        expectError([&] { computeAttributionGraph(*llama, plt, {1}); }, "the prompt has 1 token; it needs at least 2");
        expectError([&] { computeAttributionGraph(*llama, plt, {1, 300}); }, "token id 300 is outside the vocabulary");
        auto bf16 = Model::load(test::fixture("tiny-llama"), LoadOptions().withDtype(torch::kBFloat16));
        expectError([&] { computeAttributionGraph(*bf16, plt, ids); }, "attribution graphs are computed in float32");
        expectError([&] { loadCircuitTranscoders(test::fixture("tiny-llama")); }, "no transcoders");
    }

    /// A feature's logit effects (the Circuit view's card), per-layer and cross-layer, against the same product computed
    /// here in float64 from the raw files: the checkpoint's final norm weight and unembedding, the transcoders' W_dec
    /// (a cross-layer transcoder's rows to every output layer summed); Gemma's norm scales by 1 + weight and ties the
    /// unembedding to the embedding.
    void featureLogitEffectsFromTheRawWeights_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("transcoders");
        QTest::newRow("per-layer llama") << "tiny-llama" << "circuittracer-plt-llama";
        QTest::newRow("per-layer gemma2") << "tiny-gemma2" << "circuittracer-plt-gemma2";
        QTest::newRow("cross-layer llama") << "tiny-llama" << "circuittracer-clt-llama";
    }
    void featureLogitEffectsFromTheRawWeights() {
        QFETCH(QString, model);
        QFETCH(QString, transcoders);
        auto m = Model::load(test::fixture(model.toStdString()), test::float32());
        const std::string dir = dictionaryDir(transcoders.toStdString());
        const CircuitTranscoders t = loadCircuitTranscoders(dir);
        const SafetensorsFile weights(test::fixture(model.toStdString()) + "/model.safetensors");
        const bool gemma = model == "tiny-gemma2";
        const torch::Tensor unembedding = weights.tensor(gemma ? "model.embed_tokens.weight" : "lm_head.weight").to(torch::kFloat64);
        torch::Tensor gain = weights.tensor("model.norm.weight").to(torch::kFloat64);
        if (gemma) gain = gain + 1.0;
        int checked = 0;
        for (int layer = 0; layer < t.numLayers(); ++layer) {
            for (int64_t feature : {int64_t{0}, int64_t{17}, t.dTranscoder() - 1}) {
                torch::Tensor row;
                FeatureLogitEffects e;
                if (t.crossLayer) {
                    const std::string name = "W_dec_" + std::to_string(layer);
                    row = SafetensorsFile(dir + "/" + name + ".safetensors").tensor(name)[feature].to(torch::kFloat64).sum(0);
                    e = featureLogitEffects(*m, *t.crossLayer, layer, feature, 5);
                } else {
                    row = SafetensorsFile(dir + "/layer_" + std::to_string(layer) + ".safetensors").tensor("W_dec")[feature].to(torch::kFloat64);
                    e = featureLogitEffects(*m, *t.perLayer[static_cast<size_t>(layer)], feature, 5);
                }
                const torch::Tensor logits = torch::matmul(unembedding, gain * row);
                const auto [hi, hiIdx] = logits.topk(5);
                const auto [lo, loIdx] = logits.topk(5, -1, /*largest=*/false);
                const double tol = 1e-5 * logits.abs().max().item<double>();
                QCOMPARE(static_cast<int>(e.promoted.size()), 5);
                for (int j = 0; j < 5; ++j) {
                    QCOMPARE(e.promoted[j].id, hiIdx[j].item<int64_t>());
                    QCOMPARE(e.suppressed[j].id, loIdx[j].item<int64_t>());
                    QVERIFY2(std::abs(e.promoted[j].logit - hi[j].item<double>()) <= tol, qPrintable(QString::number(e.promoted[j].logit)));
                    QVERIFY2(std::abs(e.suppressed[j].logit - lo[j].item<double>()) <= tol, qPrintable(QString::number(e.suppressed[j].logit)));
                }
                ++checked;
            }
        }
        QCOMPARE(checked, 3 * static_cast<int>(t.numLayers()));
        if (t.crossLayer) {  // a layer or a feature that does not exist is named
            expectError([&] { featureLogitEffects(*m, *t.crossLayer, 2, 0, 5); }, "no feature 0 at layer 2");
            expectError([&] { featureLogitEffects(*m, *t.crossLayer, 0, 48, 5); }, "no feature 48 at layer 0");
        }
    }

    /// A run that cannot fit is refused before it starts, with the estimate in the message.
    void refusesWhatCannotFit() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const CircuitTranscoders t = loadCircuitTranscoders(dictionaryDir("circuittracer-clt-llama"));
        CircuitOptions o;
        const CircuitEstimate small = estimateCircuit(*model, t, 9, o);
        QVERIFY(small.fits);
        QVERIFY(small.peakBytes > t.weightBytes());
        // 200k tokens: the rows alone are ~ (2 · 200k · 48)² · 4 bytes
        const CircuitEstimate huge = estimateCircuit(*model, t, 200000, o);
        QVERIFY(!huge.fits);
        QVERIFY(huge.peakBytes > huge.availableBytes);
        QVERIFY(huge.seconds > small.seconds);
        QVERIFY(huge.text().find("200000 tokens") != std::string::npos);
        // computeAttributionGraph refuses before running, with the estimate
        o.memoryLimit = 100000;
        try {
            computeAttributionGraph(*model, t, test::goldenIds("tiny-llama"), o);
            QFAIL("a run over the memory limit was not refused");
        } catch (const CircuitTooLarge& e) {
            QVERIFY(e.estimate.peakBytes > 100000);
            QCOMPARE(e.estimate.availableBytes, static_cast<int64_t>(100000));
            QVERIFY2(std::string(e.what()).find("of memory") != std::string::npos, e.what());
        }
    }
};

NNSCOPE_TEST_SUITE(TestCircuit, "test_circuit")
#include "test_circuit.moc"
