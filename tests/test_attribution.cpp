// SPDX-License-Identifier: MIT
// Direct logit attribution, generation (eos lists, generation_config.json, sampling, interventions at every step) and
// intervention positions counted from each prompt of a batch. Every value is checked against a computation made
// here from the weights and the pass's own values, not against the function under test.
#include "core/analysis/analysis.h"
#include "core/analysis/attribution.h"
#include "core/run/edit.h"
#include "core/model/error.h"
#include "core/run/generate.h"
#include "core/analysis/headscores.h"
#include "core/analysis/routing.h"
#include "core/model/model.h"
#include "core/model/taps.h"
#include "core/run/patching.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <torch/version.h>

#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace nnscope;
using namespace torch::indexing;
namespace fs = std::filesystem;

namespace {

/// A copy of fixture `name` in `dir` (weights and tokenizer linked) with config.json's keys replaced by `patch` and
/// `generation` as its generation_config.json (none when null).
std::string patchedFixture(const QTemporaryDir& dir, const std::string& name, const nlohmann::json& patch,
                           const nlohmann::json& generation = nullptr) {
    const fs::path src = test::fixture(name), dst = dir.path().toStdString() + "/" + name;
    fs::create_directories(dst);
    for (const auto& e : fs::directory_iterator(src))
        if (e.path().filename() != "config.json" && e.path().filename() != "generation_config.json") fs::create_symlink(e.path(), dst / e.path().filename());
    nlohmann::json config = nlohmann::json::parse(std::ifstream(src / "config.json"));
    config.update(patch);
    std::ofstream(dst / "config.json") << config.dump(2);
    if (!generation.is_null()) std::ofstream(dst / "generation_config.json") << generation.dump(2);
    return dst.string();
}

/// The next token of each step by full passes (trace, argmax of the last logits), the intervention applied to each.
std::vector<int64_t> greedyByFullPasses(const Model& m, std::vector<int64_t> ids, int steps, std::shared_ptr<const Intervention> iv) {
    const int64_t promptLength = static_cast<int64_t>(ids.size());
    for (int s = 0; s < steps; ++s) {
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = iv;
        o.promptLengths = {promptLength};
        ids.push_back(trace(m, batchFromIds({ids}), o).value({Value::Logits, -1}).index({0, -1}).argmax().item<int64_t>());
    }
    return ids;
}

}  // namespace

class TestAttribution : public QObject {
    Q_OBJECT

private slots:
    // The analyses the window runs in its worker report each block and stop within one when Cancel is asked for (the
    // window's bar and Esc): direct logit attribution, the head scores and the flow importances.
    void analysesReportBlocksAndStop() {
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        TraceOptions o;
        o.save = attributionValueKeys(*model);
        for (int i = 0; i < model->config().numLayers; ++i) o.save.push_back({Value::AttentionProbabilities, i});
        const TraceResult r = trace(*model, encodeBatch(*model, {"Tom and Lily went to the park."}), o);
        const int n = static_cast<int>(model->config().numLayers);
        std::vector<int> seen;
        const BlockProgress counting{[&](int done, int total) {
                                         QCOMPARE(total, n);
                                         seen.push_back(done);
                                     },
                                     nullptr};
        const std::vector<HeadScore> scores = headScores(*model, r, 0, counting);
        QCOMPARE(seen.size(), size_t(n));
        QCOMPARE(seen.back(), n - 1);
        seen.clear();
        const LogitAttribution a = directLogitAttribution(*model, r, 0, -1, 5, std::nullopt, 10, counting);
        QCOMPARE(seen.size(), size_t(n));
        // the same numbers as without the callbacks
        QCOMPARE(a.total, directLogitAttribution(*model, r, 0, -1, 5).total);
        QCOMPARE(scores.front().previousToken, headScores(*model, r, 0).front().previousToken);
        std::atomic<bool> stop{true};
        const BlockProgress stopped{{}, &stop};
        QVERIFY_THROWS_EXCEPTION(Cancelled, headScores(*model, r, 0, stopped));
        QVERIFY_THROWS_EXCEPTION(Cancelled, directLogitAttribution(*model, r, 0, -1, 5, std::nullopt, 10, stopped));
    }
    void initTestCase() { configureThreads(0); }

    // ---- direct logit attribution ----

    void componentsAddUpToTheLogit_data() {
        QTest::addColumn<QString>("fixture");
        // RMSNorm (llama, qwen3 with q/k norms), LayerNorm with biases (gpt2, gpt-neox parallel residual, persimmon),
        // branch norms and a soft cap (gemma2), branch norms without the +1 (olmo2)
        for (const char* f : {"tiny-llama", "tiny-qwen3", "tiny-gpt2", "tiny-gpt-neox", "tiny-persimmon", "tiny-gemma2", "tiny-olmo2", "tiny-phi3"})
            QTest::newRow(f) << f;
    }
    void componentsAddUpToTheLogit() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const auto ids = test::goldenIds(fixture.toStdString());
        TraceOptions o;
        o.save = attributionValueKeys(*m);
        o.save.push_back({Value::LmHeadOutput, -1});
        const TraceResult r = trace(*m, batchFromIds({ids}), o);
        const int64_t position = static_cast<int64_t>(ids.size()) - 2;
        const torch::Tensor lmOut = r.value({Value::LmHeadOutput, -1}).index({0, position}).to(torch::kFloat32);
        const int64_t target = lmOut.argmax().item<int64_t>(), wrong = lmOut.argmin().item<int64_t>();
        for (bool withWrong : {false, true}) {
            const LogitAttribution a = directLogitAttribution(*m, r, 0, position, target, withWrong ? std::optional<int64_t>(wrong) : std::nullopt, 5);
            // the logit is the pass's own lm_head output (before Gemma 2's soft cap)
            const double expected = lmOut[target].item<double>() - (withWrong ? lmOut[wrong].item<double>() : 0.0);
            QVERIFY2(std::abs(a.logit - expected) < 1e-4 * (1 + std::abs(expected)),
                     qPrintable(QString("logit %1 vs lm_head_output %2").arg(a.logit).arg(expected)));
            // embed + blocks + final norm bias == logit
            double top = 0;
            std::map<int, double> attnBiases, mlpBiases;  // per block: the biases on each branch (o_proj, branch norm; down_proj)
            const std::string attnNorm = m->family().moduleName(Module::AttentionOutputNorm) + ".bias";
            for (const auto& c : a.components) {
                using K = AttributionComponent::Kind;
                if (c.kind == K::Embed || c.kind == K::Attention || c.kind == K::Mlp || (c.kind == K::Bias && c.layer < 0)) top += c.value;
                if (c.kind != K::Bias || c.layer < 0) continue;
                const bool attnSide = c.name.find(".self_attn.") != std::string::npos ||
                                      (m->family().blockNorms.afterAttention && c.name.size() > attnNorm.size() &&
                                       c.name.compare(c.name.size() - attnNorm.size(), attnNorm.size(), attnNorm) == 0);
                (attnSide ? attnBiases : mlpBiases)[c.layer] += c.value;
            }
            QVERIFY2(std::abs(top - a.logit) < 1e-4 * (1 + std::abs(a.logit)),
                     qPrintable(QString("components sum %1, logit %2").arg(top).arg(a.logit)));
            QCOMPARE(a.total, top);
            for (int i = 0; i < m->config().numLayers; ++i) {
                const double attn = a.attention[i].item<double>(), mlp = a.mlp[i].item<double>();
                const double heads = a.heads[i].sum().item<double>() + attnBiases[i];
                QVERIFY2(std::abs(heads - attn) < 1e-4 * (1 + std::abs(attn)),
                         qPrintable(QString("block %1: heads + biases %2, attention_output %3").arg(i).arg(heads).arg(attn)));
                const double neurons = a.neurons[i].sum().item<double>() + mlpBiases[i];
                QVERIFY2(std::abs(neurons - mlp) < 1e-4 * (1 + std::abs(mlp)),
                         qPrintable(QString("block %1: neurons + bias %2, mlp_output %3").arg(i).arg(neurons).arg(mlp)));
            }
            QCOMPARE(static_cast<int>(a.topNeurons.size()), 5);
            QVERIFY(std::abs(a.topNeurons[0].value) >= std::abs(a.topNeurons[4].value));
        }
    }

    // ---- a mixture of experts, split by expert (core/analysis/routing.h) ----

    void expertSharesFromTheGolden_data() {
        QTest::addColumn<QString>("fixture");
        // Qwen3-MoE (a dense block among the sparse, norm_topk_prob), Qwen2-MoE (a shared expert), Mixtral (weights in
        // float32), OLMoE (top 3 of 8, no renormalisation)
        for (const char* f : {"tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral", "tiny-olmoe"}) QTest::newRow(f) << f;
    }
    /// Each expert's share of the logit, its load and its output's norm recomputed here from transformers' own values (the
    /// golden's expert_indices, expert_weights, expert_outputs and last layer_output; the final norm's weight and lm_head
    /// from the checkpoint): share_e = Σ_{slots j choosing e} w_j · lm_head[target] · (norm.weight / RMS(x) ⊙ out_j). The
    /// chosen experts' shares plus the shared expert's equal the MLP's share of directLogitAttribution (at the last position and at position 1).
    void expertSharesFromTheGolden() {
        QFETCH(QString, fixture);
        const std::string name = fixture.toStdString();
        auto m = Model::load(test::fixture(name), test::float32());
        SafetensorsFile golden(test::fixture(name) + "/golden_float32.safetensors");
        const auto ids = test::goldenIds(name);
        const int64_t len = static_cast<int64_t>(ids.size());
        TraceOptions o;
        o.save = routingValueKeys(*m);
        const TraceResult r = trace(*m, batchFromIds({ids}), o);
        const int n = static_cast<int>(m->config().numLayers);
        const int64_t E = m->config().moe.numExperts, K = m->config().moe.topK;
        auto g = [&](const std::string& key) { return golden.tensor("single." + key).index({0}).to(torch::kFloat64); };
        const torch::Tensor x = g("layers." + std::to_string(n - 1) + ".layer_output");  // [len, hidden]
        const torch::Tensor gain = m->finalNormWeight().to(torch::kFloat64) * torch::rsqrt(x.pow(2).mean(-1, true) + m->config().normEps);
        const torch::Tensor lm = m->lmHead().to(torch::kFloat64);

        const ExpertRouting routing = expertRouting(*m, r, 0);
        std::vector<int> sparse;
        for (int i = 0; i < n; ++i)
            if (m->config().sparseMlp(i)) sparse.push_back(i);
        QCOMPARE(routing.blocks, sparse);
        QVERIFY(static_cast<int>(sparse.size()) < n || name != "tiny-qwen3-moe");  // qwen3-moe's block 1 is dense
        QCOMPARE(routing.length, len);
        for (size_t b = 0; b < sparse.size(); ++b) {
            const std::string L = "layers." + std::to_string(sparse[b]) + ".mlp.";
            const torch::Tensor idx = g(L + "expert_indices").to(torch::kInt64), w = g(L + "expert_weights"), out = g(L + "expert_outputs");
            QVERIFY(torch::equal(routing.indices[static_cast<int64_t>(b)], idx));
            NNSCOPE_COMPARE_TENSORS(routing.weights[static_cast<int64_t>(b)], w, 1e-5, 1e-6);
            for (int64_t e = 0; e < E; ++e) {
                const torch::Tensor mine = (idx == e).to(torch::kFloat64);  // [len, k]
                QCOMPARE(routing.tokenCount[static_cast<int64_t>(b)][e].item<int64_t>(), mine.sum().to(torch::kInt64).item<int64_t>());
                QVERIFY(std::abs(routing.weightSum[static_cast<int64_t>(b)][e].item<double>() - (mine * w).sum().item<double>()) < 1e-5);
                const torch::Tensor written = ((mine * w).unsqueeze(-1) * out).sum(1);  // [len, hidden]
                NNSCOPE_COMPARE_TENSORS(routing.outputNorm[static_cast<int64_t>(b)][e], written.norm(2, -1), 1e-4, 1e-5);
            }
            QCOMPARE(routing.tokenCount[static_cast<int64_t>(b)].sum().item<int64_t>(), len * K);  // every position picks K experts
        }

        for (int64_t position : {len - 1, int64_t{1}}) {
            const int64_t target = g("logits").index({position}).argmax().item<int64_t>();  // transformers' top next token
            const ExpertAttribution a = expertLogitAttribution(*m, r, 0, position, target);
            QCOMPARE(a.blocks, sparse);
            const torch::Tensor u = lm.index({target}) * gain.index({position});  // the target's direction through the frozen norm
            for (size_t b = 0; b < sparse.size(); ++b) {
                const std::string L = "layers." + std::to_string(sparse[b]) + ".mlp.";
                const torch::Tensor idx = g(L + "expert_indices").index({position}).to(torch::kInt64);
                const torch::Tensor w = g(L + "expert_weights").index({position}), out = g(L + "expert_outputs").index({position});
                torch::Tensor want = torch::zeros({E}, torch::kFloat64);
                for (int64_t j = 0; j < K; ++j) {
                    const int64_t e = idx[j].item<int64_t>();
                    want[e] += w[j].item<double>() * torch::dot(u, out[j]).item<double>();
                }
                NNSCOPE_COMPARE_TENSORS(a.experts[static_cast<int64_t>(b)], want, 1e-4, 1e-5);
                QCOMPARE(a.chosen[static_cast<int64_t>(b)].sum().item<int64_t>(), K);
                double shared = 0;
                if (golden.contains("single." + L + "shared_expert_output")) shared = torch::dot(u, g(L + "shared_expert_output").index({position})).item<double>();
                QVERIFY2(std::abs(a.shared[static_cast<int64_t>(b)].item<double>() - shared) < 1e-4 * (1 + std::abs(shared)),
                         qPrintable(QString("shared expert %1, from the golden %2").arg(a.shared[static_cast<int64_t>(b)].item<double>()).arg(shared)));
                // the chosen experts and the shared one make up the MLP's share (directLogitAttribution's, from mlp_output)
                const double mlp = a.attribution.mlp[sparse[b]].item<double>();
                const double sum = a.experts[static_cast<int64_t>(b)].sum().item<double>() + a.shared[static_cast<int64_t>(b)].item<double>();
                QVERIFY2(std::abs(sum - mlp) < 1e-4 * (1 + std::abs(mlp)),
                         qPrintable(QString("block %1: experts + shared %2, mlp_output's share %3").arg(sparse[b]).arg(sum).arg(mlp)));
                QCOMPARE(a.mlp[static_cast<int64_t>(b)].item<double>(), mlp);
                // the stream vector of the top expert gives its share, and what it promotes is led by its largest logit
                const int64_t top = idx[0].item<int64_t>();
                const torch::Tensor v = expertStreamVector(*m, r, a.attribution, 0, sparse[b], top);
                QVERIFY(std::abs(streamVectorShare(*m, a.attribution, v) - a.experts[static_cast<int64_t>(b)][top].item<double>()) < 1e-5);
                const auto promoted = promotedTokens(*m, a.attribution, v, 3).first;
                const torch::Tensor logits = torch::matmul(lm, gain.index({position}) * ((idx == top).to(torch::kFloat64) * w).unsqueeze(-1).mul(out).sum(0));
                QCOMPARE(promoted.front().id, logits.argmax().item<int64_t>());
            }
            // the whole attribution of a mixture adds up to the logit too (a sparse block has no neurons: none listed)
            QVERIFY(std::abs(a.attribution.total - a.attribution.logit) < 1e-4 * (1 + std::abs(a.attribution.logit)));
        }
    }

    /// What the routing functions refuse: a dense model, a dense block of a mixture, an expert out of range; the forbid
    /// edit names the router's logits.
    void expertRefusals() {
        auto dense = Model::load(test::fixture("tiny-llama"), test::float32());
        QVERIFY(routingValueKeys(*dense).empty());
        std::string why;
        QVERIFY(!hasExperts(*dense, &why));
        QVERIFY2(why.find("no mixture of experts") != std::string::npos, why.c_str());
        const TraceResult rd = trace(*dense, encodeBatch(*dense, {"Tom"}), TraceOptions{});
        QVERIFY_THROWS_EXCEPTION(Error, expertRouting(*dense, rd, 0));
        auto m = Model::load(test::fixture("tiny-qwen3-moe"), test::float32());
        QCOMPARE(forbidExpertEdit(*m, 2, 5), std::string("layers.2.mlp.router_logits[:, :, 5] = -inf"));
        QVERIFY_THROWS_EXCEPTION(Error, forbidExpertEdit(*m, 1, 0));  // block 1 is dense (mlp_only_layers)
        QVERIFY_THROWS_EXCEPTION(Error, forbidExpertEdit(*m, 0, 6));  // 6 experts: 0 to 5
        TraceOptions o;
        o.save = routingValueKeys(*m);
        const TraceResult r = trace(*m, encodeBatch(*m, {"Tom and Lily"}), o);
        const ExpertAttribution a = expertLogitAttribution(*m, r, 0, -1, 3);
        QVERIFY_THROWS_EXCEPTION(Error, expertStreamVector(*m, r, a.attribution, 0, 1, 0));
        // a trace without the mixture's values says which one is missing
        const TraceResult bare = trace(*m, encodeBatch(*m, {"Tom and Lily"}), TraceOptions{});
        try {
            expertRouting(*m, bare, 0);
            QFAIL("expected an error");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("expert_indices") != std::string::npos, e.what());
        }
    }

    /// One head's share computed here from the weights: the head's output through its o_proj columns, the final norm
    /// with the real pass's scale, the unembedding row. RMSNorm (llama) and LayerNorm with biases (gpt2).
    void headShareFromTheWeights_data() {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("tiny-llama") << "tiny-llama";
        QTest::newRow("tiny-gpt2") << "tiny-gpt2";
    }
    void headShareFromTheWeights() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const auto ids = test::goldenIds(fixture.toStdString());
        TraceOptions o;
        o.save = attributionValueKeys(*m);
        const TraceResult r = trace(*m, batchFromIds({ids}), o);
        const int64_t target = 7;
        const LogitAttribution a = directLogitAttribution(*m, r, 0, -1, target);
        const int layer = 1, head = 1;
        const int64_t hd = m->config().headDim, H = m->config().hiddenSize;
        const torch::Tensor z = r.value({Value::AttentionHeadOutputs, layer}).index({0, -1, head}).to(torch::kFloat32);
        const torch::Tensor wo = m->layer(layer)[Module::OProj].weight.to(torch::kFloat32).index({Slice(), Slice(head * hd, (head + 1) * hd)});
        const torch::Tensor written = torch::matmul(wo, z);  // [hidden]: what the head adds to the stream
        const torch::Tensor x = r.value({Value::LayerOutput, static_cast<int>(m->config().numLayers) - 1}).index({0, -1}).to(torch::kFloat32);
        const torch::Tensor w = m->finalNormWeight().to(torch::kFloat32);
        torch::Tensor normedHead;
        if (m->family().norm == NormKind::LayerNorm) {
            const double sd = std::sqrt(((x - x.mean()).pow(2).mean() + m->config().normEps).item<double>());
            normedHead = (written - written.mean()) / sd * w;
        } else {
            const double rms = std::sqrt((x.pow(2).mean() + m->config().normEps).item<double>());
            normedHead = written / rms * w;
        }
        const double expected = torch::dot(normedHead, m->lmHead().index({target}).to(torch::kFloat32)).item<double>();
        QVERIFY2(std::abs(a.heads[layer][head].item<double>() - expected) < 1e-5 * (1 + std::abs(expected)),
                 qPrintable(QString("head share %1, from the weights %2").arg(a.heads[layer][head].item<double>()).arg(expected)));
        QCOMPARE(a.streamTerms.size(1), H);
        // the embedding's share: the stream entering block 0 through the same frozen norm
        const torch::Tensor e = r.value({Value::LayerInput, 0}).index({0, -1}).to(torch::kFloat32);
        QVERIFY(std::abs(a.components.front().value -
                         torch::dot(a.finalGain * (a.centered ? e - e.mean() : e), m->lmHead().index({target}).to(torch::kFloat32)).item<double>()) < 1e-4);
    }

    /// The demo model copies repeated words with an induction head in block 1: on a repeated sentence block 1's
    /// attention writes most of the repeated word's logit, and the tokens it promotes include that word.
    void demoInductionHeadWritesTheRepeatedWord() {
        auto m = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        const Batch b = encodeBatch(*m, {"the cat sat on the mat . the cat"});
        TraceOptions o;
        o.save = attributionValueKeys(*m);
        const TraceResult r = trace(*m, b, o);
        const int64_t sat = parseTokenArgument(*m, " sat", "target");
        const LogitAttribution a = directLogitAttribution(*m, r, 0, -1, sat);
        QVERIFY2(a.attention[1].item<double>() > 0.6 * a.logit,
                 qPrintable(QString("block 1 attention %1 of logit %2").arg(a.attention[1].item<double>()).arg(a.logit)));
        for (const auto& c : a.components)
            if (c.kind != AttributionComponent::Kind::Head && c.name != "layers.1.attention_output") QVERIFY(c.value < a.attention[1].item<double>());
        const auto [up, down] = promotedTokens(*m, a, a.streamTerms.index({3}), 5);
        bool found = false;
        for (const auto& t : up) found |= t.id == sat;
        QVERIFY2(found, "block 1's attention does not promote ' sat'");
        QVERIFY(up.front().logit > down.front().logit);
    }

    void attributionRefusals() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        TraceOptions o;
        o.save = attributionValueKeys(*m);
        const TraceResult r = trace(*m, batchFromIds({{1, 5, 9}}), o);
        QVERIFY_EXCEPTION_THROWN(directLogitAttribution(*m, r, 0, 3, 1), Error);
        QVERIFY_EXCEPTION_THROWN(directLogitAttribution(*m, r, 0, -4, 1), Error);
        QVERIFY_EXCEPTION_THROWN(directLogitAttribution(*m, r, 0, 0, m->config().vocabSize), Error);
        QVERIFY_EXCEPTION_THROWN(directLogitAttribution(*m, r, 1, 0, 1), Error);
        const TraceResult bare = trace(*m, batchFromIds({{1, 5, 9}}), TraceOptions());
        try {
            directLogitAttribution(*m, bare, 0, 0, 1);
            QFAIL("no error without the saved values");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("was not saved") != std::string::npos, e.what());
        }
    }

    /// `nnscope attribute --json`: the embed and block-level components add up to the logit; the heads of a block plus
    /// o_proj's bias add up to its attention_output; names as documented; the same numbers as the engine.
    void attributeCommand() {
        QProcess p;
        p.start(NNSCOPE_BINARY, {"attribute", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat sat on the mat . the cat", "--target",
                                 " sat", "--wrong", " mat", "--json", "--tokens", "3"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        double blocks = 0;
        std::map<int, double> heads, attention;
        int neurons = 0;
        for (const auto& c : j["components"]) {
            const std::string name = c["name"];
            const double v = c["value"];
            int layer = -1, index = -1;
            char rest[64] = {0};
            if (name == "embed") blocks += v;
            else if (std::sscanf(name.c_str(), "layers.%d.self_attn.head.%d", &layer, &index) == 2) heads[layer] += v;
            else if (std::sscanf(name.c_str(), "layers.%d.mlp.neuron.%d", &layer, &index) == 2) ++neurons;
            else if (std::sscanf(name.c_str(), "layers.%d.%63s", &layer, rest) == 2) {
                const std::string what = rest;
                QVERIFY2(what == "attention_output" || what == "mlp_output", name.c_str());
                blocks += v;
                if (what == "attention_output") attention[layer] = v;
                QVERIFY(c.contains("promotes") && c["promotes"].size() == 3);
            } else QFAIL(("unexpected component " + name).c_str());
        }
        QCOMPARE(neurons, 10);
        const double logit = j["logit"];
        QVERIFY2(std::abs(blocks - logit) < 1e-4 * (1 + std::abs(logit)), qPrintable(QString("%1 vs %2").arg(blocks).arg(logit)));
        for (const auto& [layer, v] : attention) QVERIFY(std::abs(heads[layer] - v) < 1e-4 * (1 + std::abs(v)));  // no o_proj bias
        auto m = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        TraceOptions o;
        o.save = attributionValueKeys(*m);
        const LogitAttribution a = directLogitAttribution(*m, trace(*m, encodeBatch(*m, {"the cat sat on the mat . the cat"}), o), 0, -1,
                                                          parseTokenArgument(*m, " sat", "t"), parseTokenArgument(*m, " mat", "w"));
        QVERIFY(std::abs(a.logit - logit) < 1e-5 * (1 + std::abs(logit)));
        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"attribute", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat", "--target", " sat", "--position", "5"});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 1);
        QVERIFY(bad.readAllStandardError().contains("outside the prompt"));
    }

    /// `nnscope generate`: a seed gives the same sampled text twice; --compare prints the unedited text beside the
    /// edited one, and the unedited one equals plain greedy generation.
    void generateCommand() {
        auto run = [](QStringList extra) {
            QProcess p;
            p.start(NNSCOPE_BINARY, QStringList{"generate", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat sat on the mat . the cat",
                                                "--max-new-tokens", "8", "--json"} + extra);
            p.waitForFinished(60000);
            if (p.exitCode() != 0) return nlohmann::json{{"error", p.readAllStandardError().toStdString()}};
            return nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        };
        const auto a = run({"--sample", "--temperature", "1.5", "--seed", "11"}), b = run({"--sample", "--temperature", "1.5", "--seed", "11"});
        QVERIFY2(!a.contains("error"), a.dump().c_str());
        QCOMPARE(a["ids"], b["ids"]);
        QCOMPARE(a["seed"], nlohmann::json(11));
        const auto greedy = run({});
        const auto edited = run({"--edit", "layers.1.self_attn.attention_head_outputs[:, :, 3] = 0", "--compare"});
        QVERIFY2(!edited.contains("error"), edited.dump().c_str());
        QCOMPARE(edited["unedited"]["ids"], greedy["ids"]);
        QCOMPARE(edited["interventions"].size(), size_t(1));
        QVERIFY(run({"--sample", "--greedy"}).contains("error"));
        QVERIFY(run({"--top-p", "0"}).contains("error"));
        // --compare without an intervention says there is nothing to compare (it printed one continuation silently)
        QProcess alone;
        alone.start(NNSCOPE_BINARY, {"generate", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat", "--max-new-tokens", "2", "--compare"});
        QVERIFY(alone.waitForFinished(60000));
        QCOMPARE(alone.exitCode(), 0);
        QVERIFY(alone.readAllStandardError().contains("note: --compare prints the continuation without the interventions"));
    }

    // ---- head scores ----

    /// The scores of a hand-made pattern, then the demo model's heads: its induction heads (block 1) score high on
    /// induction on a repeated sentence and block 0 holds a previous-token head; `nnscope heads --json` gives the same.
    void headScoresOfPatterns() {
        // 4 tokens "a b a b": head attends to the previous token everywhere
        torch::Tensor prev = torch::zeros({4, 4});
        prev[0][0] = 1;
        for (int i = 1; i < 4; ++i) prev[i][i - 1] = 1;
        HeadScore s = patternScores(prev, {7, 8, 7, 8});
        QCOMPARE(s.previousToken, 1.0);
        QCOMPARE(s.firstToken, 1.0 / 3);  // position 1's previous token is position 0
        QCOMPARE(s.diagonal, 0.0);
        // induction: at i = 2 (token 7, seen at 0) the next of the earlier one is 1: A[2][1] = 1; at i = 3 (8, seen at 1): A[3][2] = 1
        QCOMPARE(s.induction, 1.0);
        torch::Tensor self = torch::eye(4);
        s = patternScores(self, {7, 8, 9, 10});
        QCOMPARE(s.diagonal, 1.0);
        QVERIFY(std::isnan(s.induction));  // nothing repeats
        QVERIFY_EXCEPTION_THROWN(patternScores(self, {1, 2}), Error);

        auto m = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        TraceOptions o;
        for (int i = 0; i < m->config().numLayers; ++i) o.save.push_back({Value::AttentionProbabilities, i});
        const std::string prompt = "tom and lily went to the park with a red ball . tom and lily went to the park with";
        const TraceResult r = trace(*m, encodeBatch(*m, {prompt}), o);
        const auto scores = headScores(*m, r, 0);
        QCOMPARE(static_cast<int64_t>(scores.size()), m->config().numLayers * m->config().numHeads);
        double bestInduction = 0, bestPrevious = 0;
        for (const auto& h : scores) {
            if (h.layer == 1) bestInduction = std::max(bestInduction, h.induction);
            if (h.layer == 0) bestPrevious = std::max(bestPrevious, h.previousToken);
            // each equals the formula on the saved pattern
            const torch::Tensor a = attentionPattern(*m, r, h.layer, 0).index({h.head});
            double prev = 0;
            for (int64_t i = 1; i < a.size(0); ++i) prev += a[i][i - 1].item<double>();
            QVERIFY(std::abs(prev / static_cast<double>(a.size(0) - 1) - h.previousToken) < 1e-6);
        }
        QVERIFY2(bestInduction > 0.5, qPrintable(QString("best block-1 induction score %1").arg(bestInduction)));
        QVERIFY2(bestPrevious > 0.5, qPrintable(QString("best block-0 previous-token score %1").arg(bestPrevious)));

        QProcess p;
        p.start(NNSCOPE_BINARY, {"heads", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", QString::fromStdString(prompt), "--json",
                                 "--sort", "induction", "--top", "3"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(j["heads"].size(), size_t(3));
        QCOMPARE(j["heads"][0]["layer"].get<int>(), 1);
        QVERIFY(std::abs(j["heads"][0]["induction"].get<double>() - bestInduction) < 1e-5);
        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"heads", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "a", "--sort", "copying"});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 2);  // a usage error
    }

    /// The chance baseline of each score (a head attending uniformly to its causal prefix) by hand on a small
    /// sequence; the repeated random tokens (the standard induction test) and `nnscope heads --repeated-random`.
    void headScoresChanceAndRepeatedRandomTokens() {
        const HeadScore c = chanceScores({7, 8, 7, 8});
        const double prefix = (1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 3;  // mean of 1/(i+1) over i = 1..3
        QVERIFY(std::abs(c.previousToken - prefix) < 1e-15 && std::abs(c.firstToken - prefix) < 1e-15 && std::abs(c.diagonal - prefix) < 1e-15);
        QVERIFY(std::abs(c.induction - (1.0 / 3 + 1.0 / 4) / 2) < 1e-15);  // the repeats at i = 2 and 3
        QVERIFY(std::isnan(chanceScores({1, 2, 3}).induction));

        auto m = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        const std::vector<int64_t> ids = repeatedRandomTokens(*m, 20, 7);
        const bool bos = m->tokenizer() && m->tokenizer()->addsBos();
        QCOMPARE(static_cast<int64_t>(ids.size()), 40 + (bos ? 1 : 0));
        const size_t off = bos ? 1 : 0;
        if (bos) QCOMPARE(ids[0], *m->tokenizer()->bosId());
        for (size_t i = 0; i < 20; ++i) {
            QCOMPARE(ids[off + i], ids[off + 20 + i]);
            QVERIFY(ids[off + i] >= 0 && ids[off + i] < m->tokenizer()->vocabSize());
            for (const auto& special : {m->config().bosTokenId, m->config().eosTokenId, m->config().padTokenId})
                if (special) QVERIFY(ids[off + i] != *special);
        }
        QCOMPARE(repeatedRandomTokens(*m, 20, 7), ids);  // the seed decides
        QVERIFY(repeatedRandomTokens(*m, 20, 8) != ids);
        QVERIFY_EXCEPTION_THROWN(repeatedRandomTokens(*m, 1, 0), Error);
        QVERIFY_EXCEPTION_THROWN(repeatedRandomTokens(*m, m->config().maxPositionEmbeddings, 0), Error);

        TraceOptions o;
        for (int i = 0; i < m->config().numLayers; ++i) o.save.push_back({Value::AttentionProbabilities, i});
        const auto scores = headScores(*m, trace(*m, batchFromIds({ids}), o), 0);
        QProcess p;
        p.start(NNSCOPE_BINARY, {"heads", "--model", NNSCOPE_DEMO_MODEL_DIR, "--repeated-random", "20", "--seed", "7", "--json"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(j["heads"].size(), scores.size());
        double best = 0;
        for (size_t k = 0; k < scores.size(); ++k) {
            QVERIFY(std::abs(j["heads"][k]["induction"].get<double>() - scores[k].induction) < 1e-6);
            if (scores[k].layer == 1) best = std::max(best, scores[k].induction);
        }
        const HeadScore chance = chanceScores(ids);
        QVERIFY(std::abs(j["chance"]["induction"].get<double>() - chance.induction) < 1e-12);
        QCOMPARE(j["repeated_random"]["length"].get<int>(), 20);
        // the demo's induction heads find the repeat in tokens they never saw together
        QVERIFY2(best > 10 * chance.induction, qPrintable(QString("best block-1 induction %1, chance %2").arg(best).arg(chance.induction)));
        QProcess both;
        both.start(NNSCOPE_BINARY, {"heads", "--model", NNSCOPE_DEMO_MODEL_DIR, "--repeated-random", "20", "--prompt", "a b"});
        QVERIFY(both.waitForFinished(60000));
        QCOMPARE(both.exitCode(), 2);  // one of the two
    }

    // ---- attribution patching ----

    /// The attribution-patching estimate equals the derivative of the metric along (clean - corrupted) at each site,
    /// computed here by central finite differences through patched full passes; with a logit difference and a
    /// probability; for block outputs, MLP outputs and one head.
    void attributionPatchingEqualsFiniteDifferences_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("site");
        QTest::addColumn<bool>("probability");
        QTest::newRow("llama layer_output") << "tiny-llama" << "layer_output" << false;
        QTest::newRow("llama head:1 prob") << "tiny-llama" << "head:1" << true;
        QTest::newRow("gpt2 mlp_output") << "tiny-gpt2" << "mlp_output" << false;
        QTest::newRow("gemma2 attention_output") << "tiny-gemma2" << "attention_output" << false;
    }
    void attributionPatchingEqualsFiniteDifferences() {
        QFETCH(QString, fixture);
        QFETCH(QString, site);
        QFETCH(bool, probability);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const std::vector<int64_t> clean = test::goldenIds(fixture.toStdString());
        std::vector<int64_t> corrupted = clean;
        corrupted[1] = (corrupted[1] + 3) % m->config().vocabSize;
        corrupted[2] = (corrupted[2] + 5) % m->config().vocabSize;
        PatchingOptions o;
        o.site = parsePatchSite(site.toStdString(), &o.head);
        o.metric.kind = probability ? PatchMetric::Kind::TargetProbability : PatchMetric::Kind::LogitDifference;
        o.metric.answer = 3;
        o.metric.wrong = probability ? -1 : 4;
        const PatchingResult est = attributionPatching(*m, clean, corrupted, o);
        const Value value = o.site == PatchSite::LayerOutput ? Value::LayerOutput
                            : o.site == PatchSite::MlpOutput ? Value::MlpOutput
                            : o.site == PatchSite::AttentionOutput ? Value::AttentionOutput : Value::AttentionHeadOutputs;
        TraceOptions save;
        for (int i = 0; i < m->config().numLayers; ++i) save.save.push_back({value, i});
        save.save.push_back({Value::Logits, -1});
        const TraceResult c = trace(*m, batchFromIds({clean}), save), k = trace(*m, batchFromIds({corrupted}), save);
        // the same pass within float32 rounding: on libtorch >= 2 the trace computes attention by
        // scaled_dot_product_attention, the differentiable pass eagerly, so they may differ in the sixth digit
        const double samePass = TORCH_VERSION_MAJOR >= 2 ? 1e-5 : 1e-6;
        QVERIFY(std::abs(est.corrupted - patchMetricValue(o.metric, k.value({Value::Logits, -1}))) < samePass);
        QVERIFY(std::abs(est.clean - patchMetricValue(o.metric, c.value({Value::Logits, -1}))) < samePass);
        const double eps = 1e-2;
        int nonzero = 0;
        for (int i = 0; i < m->config().numLayers; ++i)
            for (int64_t p : {int64_t{1}, int64_t{2}, static_cast<int64_t>(clean.size()) - 1}) {
                std::vector<torch::indexing::TensorIndex> at{Slice(), p};
                if (value == Value::AttentionHeadOutputs) at.emplace_back(static_cast<int64_t>(o.head));
                const torch::Tensor a = k.value({value, i}).index(at).to(torch::kFloat32), d = c.value({value, i}).index(at).to(torch::kFloat32) - a;
                auto metricWith = [&](double step) {
                    IndexItem all, pos, head;
                    pos.kind = head.kind = IndexItem::Integer;
                    pos.start = p;
                    head.start = o.head;
                    std::vector<IndexItem> index{all, pos};
                    if (value == Value::AttentionHeadOutputs) index.push_back(head);
                    auto edits = std::make_shared<EditList>();
                    edits->patch({value, i}, index, a + step * d);
                    TraceOptions run;
                    run.save = {{Value::Logits, -1}};
                    run.intervention = edits;
                    return patchMetricValue(o.metric, trace(*m, batchFromIds({corrupted}), run).value({Value::Logits, -1}));
                };
                const double fd = (metricWith(eps) - metricWith(-eps)) / (2 * eps);
                const double first = est.grid[static_cast<size_t>(i)][static_cast<size_t>(p)] - est.corrupted;
                nonzero += std::abs(fd) > 1e-4;
                QVERIFY2(std::abs(fd - first) < 2e-3 * (1 + std::abs(fd)) + 1e-5,
                         qPrintable(QString("block %1 position %2: estimate %3, finite differences %4").arg(i).arg(p).arg(first).arg(fd)));
            }
        QVERIFY2(nonzero > 0, "every derivative is zero: the test cannot tell");
        // the exact grid and the estimate are compared by their correlation
        const double r = gridCorrelation(activationPatching(*m, clean, corrupted, o).grid, est.grid);
        QVERIFY(std::isnan(r) || (r >= -1.0 - 1e-9 && r <= 1.0 + 1e-9));
        QCOMPARE(gridCorrelation({{1, 2}, {3, 4}}, {{2, 4}, {6, 8}}), 1.0);
        QCOMPARE(gridCorrelation({{1, 2}}, {{2, 1}}), -1.0);
    }

    // ---- generation ----

    void greedyEqualsFullPasses() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto prompt = test::goldenIds("tiny-llama");
        GenerateOptions o;
        o.maxNewTokens = 6;
        o.stopAtEos = false;
        const Generation g = generate(*m, prompt, o);
        QCOMPARE(g.ids, greedyByFullPasses(*m, prompt, 6, nullptr));
        QCOMPARE(g.promptLength, static_cast<int64_t>(prompt.size()));
        QCOMPARE(QString::fromStdString(g.stopReason), QString("max_new_tokens"));
    }

    /// eos_token_id may be a list: generation stops on any of its ids (transformers' stopping criteria), the one in
    /// generation_config.json first.
    void stopsOnEveryEosId() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto prompt = test::goldenIds("tiny-llama");
        GenerateOptions free;
        free.maxNewTokens = 6;
        free.stopAtEos = false;
        const auto ids = generate(*m, prompt, free).ids;
        const int64_t third = ids[prompt.size() + 2];
        QTemporaryDir dir;
        std::vector<int64_t> notGenerated;
        for (int64_t id = 0; id < m->config().vocabSize && notGenerated.empty(); ++id)
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) notGenerated.push_back(id);
        auto listed = Model::load(patchedFixture(dir, "tiny-llama", {{"eos_token_id", {notGenerated[0], third}}}), test::float32());
        QCOMPARE(listed->config().eosTokenIds, (std::vector<int64_t>{notGenerated[0], third}));
        QCOMPARE(stopTokenIds(*listed), (std::vector<int64_t>{notGenerated[0], third}));
        const Generation g = generate(*listed, prompt, generationDefaults(*listed));
        QCOMPARE(g.stopReason, std::string("eos"));
        QCOMPARE(g.ids.size(), prompt.size() + 3);
        QCOMPARE(g.ids.back(), third);
        // generateGreedy (the window's path) stops there too
        QCOMPARE(generateGreedy(*listed, prompt, 6).size(), prompt.size() + 3);
        // generation_config.json's eos list and defaults win over config.json's
        QTemporaryDir dir2;
        auto withGen = Model::load(patchedFixture(dir2, "tiny-llama", {{"eos_token_id", notGenerated[0]}},
                                                  {{"eos_token_id", {third}}, {"do_sample", true}, {"temperature", 0.7},
                                                   {"top_k", 20}, {"top_p", 0.9}, {"max_new_tokens", 5}}), test::float32());
        const GenerateOptions d = generationDefaults(*withGen);
        QCOMPARE(d.eosTokenIds, std::vector<int64_t>{third});
        QVERIFY(d.sample);
        QCOMPARE(d.temperature, 0.7);
        QCOMPARE(d.topK, int64_t{20});
        QCOMPARE(d.topP, 0.9);
        QCOMPARE(d.maxNewTokens, 5);
        QTemporaryDir dir3;
        QVERIFY_EXCEPTION_THROWN(Model::load(patchedFixture(dir3, "tiny-llama", nlohmann::json::object(), {{"top_p", 2}}), test::float32()), Error);
    }

    /// Sampling follows transformers' warpers: the same seed gives the same tokens; draws follow softmax(logits / T);
    /// top-k and top-p keep only what they should.
    void samplingFollowsTheWarpers() {
        const torch::Tensor logits = torch::tensor({2.0f, 1.0f, 0.0f, -1.0f});
        at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1234);
        GenerateOptions o;
        o.sample = true;
        o.temperature = 2.0;
        std::vector<double> counts(4, 0);
        const int n = 4000;
        for (int i = 0; i < n; ++i) counts[static_cast<size_t>(chooseNextToken(logits, o, gen))] += 1.0 / n;
        const torch::Tensor expected = (logits / 2.0).softmax(-1);
        for (int j = 0; j < 4; ++j)
            QVERIFY2(std::abs(counts[static_cast<size_t>(j)] - expected[j].item<double>()) < 0.03,
                     qPrintable(QString("token %1: drawn %2, softmax %3").arg(j).arg(counts[static_cast<size_t>(j)]).arg(expected[j].item<double>())));
        o.temperature = 1.0;
        o.topK = 2;
        for (int i = 0; i < 300; ++i) QVERIFY(chooseNextToken(logits, o, gen) < 2);
        o.topK = 0;
        o.topP = 0.5;  // probabilities 0.64, 0.24, 0.09, 0.03: only the first reaches 0.5
        for (int i = 0; i < 300; ++i) QCOMPARE(chooseNextToken(logits, o, gen), int64_t{0});
        o.topP = 0.8;  // the first two (0.64 + 0.24 >= 0.8)
        for (int i = 0; i < 300; ++i) QVERIFY(chooseNextToken(logits, o, gen) < 2);

        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto prompt = test::goldenIds("tiny-llama");
        GenerateOptions s;
        s.sample = true;
        s.maxNewTokens = 8;
        s.stopAtEos = false;
        s.seed = 7;
        const auto first = generate(*m, prompt, s).ids, again = generate(*m, prompt, s).ids;
        QCOMPARE(first, again);
        bool differs = false;
        for (uint64_t seed = 8; seed < 16 && !differs; ++seed) {
            s.seed = seed;
            differs = generate(*m, prompt, s).ids != first;
        }
        QVERIFY2(differs, "eight other seeds all gave the same sampled text");
    }

    /// A steered generation equals generating step by step with the steering applied to each full pass; positions
    /// count from the prompt (-1 is the prompt's last token, `new` the generated ones).
    void interventionsApplyAtEveryStep_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("sameAs");  // the same edit written with absolute positions, or empty
        QTest::newRow("every position") << "layers.0.layer_output += 3" << "";
        QTest::newRow("prompt's last") << "layers.0.layer_output[:, -1] += 8" << "layers.0.layer_output[:, PLAST] += 8";
        QTest::newRow("prompt's first") << "layers.0.layer_output[:, 0] += 10" << "";
        QTest::newRow("new tokens") << "layers.0.layer_output[:, new] *= -1" << "";
        QTest::newRow("skip") << "skip 1" << "";
    }
    void interventionsApplyAtEveryStep() {
        QFETCH(QString, edit);
        QFETCH(QString, sameAs);
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto prompt = test::goldenIds("tiny-llama");
        auto list = std::make_shared<EditList>();
        addIntervention(*list, *m, edit.toStdString());
        GenerateOptions o;
        o.maxNewTokens = 6;
        o.stopAtEos = false;
        o.intervention = list;
        const Generation g = generate(*m, prompt, o);
        QCOMPARE(g.ids, greedyByFullPasses(*m, prompt, 6, list));
        GenerateOptions plain = o;
        plain.intervention = nullptr;
        QVERIFY2(generate(*m, prompt, plain).ids != g.ids, "the intervention changed nothing: the test cannot tell");
        if (!sameAs.isEmpty()) {
            // written with the prompt's absolute last position, the edit is the same at every step
            auto absolute = std::make_shared<EditList>();
            addIntervention(*absolute, *m, sameAs.replace("PLAST", QString::number(prompt.size() - 1)).toStdString());
            o.intervention = absolute;
            QCOMPARE(generate(*m, prompt, o).ids, g.ids);
        }
    }

    // ---- positions in a batch ----

    /// Each row of a left-padded batch with an intervention equals that prompt run alone with it (edits, steering at
    /// a position, skipped blocks); before, position 0 of the shorter prompt was its padding.
    void batchRowsEqualPromptsAlone_data() {
        QTest::addColumn<QString>("edit");    // applied to the batch of two prompts
        QTest::addColumn<QString>("alone0");  // the same edit for prompt 0 run alone ("" = none)
        QTest::addColumn<QString>("alone1");  // and for prompt 1
        QTest::newRow("edit at 0") << "layers.0.layer_output[:, 0] += 5" << "layers.0.layer_output[:, 0] += 5"
                                   << "layers.0.layer_output[:, 0] += 5";
        QTest::newRow("edit at 1 of row 1") << "layers.0.mlp.mlp_neurons[1, 1] = 0" << "" << "layers.0.mlp.mlp_neurons[0, 1] = 0";
        QTest::newRow("edit at -1") << "layers.1.self_attn.attention_head_outputs[:, -1, 1] = 0"
                                    << "layers.1.self_attn.attention_head_outputs[:, -1, 1] = 0"
                                    << "layers.1.self_attn.attention_head_outputs[:, -1, 1] = 0";
        QTest::newRow("slice 1:3") << "layers.0.layer_output[:, 1:3] *= 2" << "layers.0.layer_output[:, 1:3] *= 2"
                                   << "layers.0.layer_output[:, 1:3] *= 2";
        QTest::newRow("pattern query 1") << "layers.0.self_attn.attention_probabilities[:, :, 1] *= 0.5"
                                         << "layers.0.self_attn.attention_probabilities[:, :, 1] *= 0.5"
                                         << "layers.0.self_attn.attention_probabilities[:, :, 1] *= 0.5";
        QTest::newRow("skip") << "skip 0" << "skip 0" << "skip 0";
    }
    void batchRowsEqualPromptsAlone() {
        QFETCH(QString, edit);
        QFETCH(QString, alone0);
        QFETCH(QString, alone1);
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const std::vector<std::vector<int64_t>> prompts{{1, 12, 40, 7, 99, 23}, {1, 55, 8}};
        auto list = std::make_shared<EditList>();
        addIntervention(*list, *m, edit.toStdString());
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = list;
        const torch::Tensor batch = trace(*m, batchFromIds(prompts, 0), o).value({Value::Logits, -1});
        for (size_t r = 0; r < prompts.size(); ++r) {
            const QString text = r == 0 ? alone0 : alone1;
            auto alone = std::make_shared<EditList>();
            if (!text.isEmpty()) addIntervention(*alone, *m, text.toStdString());
            TraceOptions a = o;
            a.intervention = alone;
            const torch::Tensor single = trace(*m, batchFromIds({prompts[r]}), a).value({Value::Logits, -1});
            const int64_t n = static_cast<int64_t>(prompts[r].size());
            const torch::Tensor row = batch.index({static_cast<int64_t>(r), Slice(batch.size(1) - n, None)});
            const auto c = test::compare(row, single.index({0}), 1e-4, 1e-5);
            QVERIFY2(c.ok, qPrintable(QString("row %1: ").arg(r) + QString::fromStdString(c.message)));
        }
        // the edit changed something in the batch (the test can fail)
        TraceOptions none = o;
        none.intervention = nullptr;
        QVERIFY(!torch::allclose(batch, trace(*m, batchFromIds(prompts, 0), none).value({Value::Logits, -1})));
    }

    /// Steering or patching at position 0 (1, -1) of a two-prompt batch lands on each prompt's own token, as when each
    /// runs alone.
    void steeringPositionsArePerPrompt() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const std::vector<std::vector<int64_t>> prompts{{1, 12, 40, 7, 99}, {1, 55}};
        const torch::Tensor v = torch::randn({m->config().hiddenSize}, torch::Generator(at::make_generator<at::CPUGeneratorImpl>(3)));
        for (int64_t position : {int64_t{0}, int64_t{-1}, int64_t{1}}) {
            for (bool patch : {false, true}) {
                auto list = std::make_shared<EditList>();
                if (patch) {  // activation patching's edit: a value replaced at one position
                    list->patch({Value::LayerOutput, 0}, {IndexItem{}, IndexItem::integer(position)}, v);
                } else {
                    list->steer(0, v, 4.0, {position});
                }
                TraceOptions o;
                o.save = {{Value::LayerOutput, 1}};
                o.intervention = list;
                const torch::Tensor batch = trace(*m, batchFromIds(prompts, 0), o).value({Value::LayerOutput, 1});
                for (size_t r = 0; r < prompts.size(); ++r) {
                    const torch::Tensor single = trace(*m, batchFromIds({prompts[r]}), o).value({Value::LayerOutput, 1});
                    const int64_t n = static_cast<int64_t>(prompts[r].size());
                    const auto c = test::compare(batch.index({static_cast<int64_t>(r), Slice(batch.size(1) - n, None)}), single.index({0}), 1e-4, 1e-5);
                    QVERIFY2(c.ok, qPrintable(QString("%1 at %2, row %3: ").arg(patch ? "patch" : "steer").arg(position).arg(r) +
                                              QString::fromStdString(c.message)));
                }
            }
        }
    }
};

NNSCOPE_TEST_SUITE(TestAttribution, "test_attribution")
#include "test_attribution.moc"
