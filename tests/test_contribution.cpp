// SPDX-License-Identifier: MIT
// Information flow routes (core/contribution): the per-token decomposition of each attention update, the importances,
// the heads' norms, the pruned graph and `nnscope graph`. The decomposition and the norms are checked against a
// computation made here from the weights and the pass's own values, not against the function under test.
#include "core/analysis/contribution.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"
#include "testutil.h"

#include <QProcess>
#include "testsuite.h"

#include <QtTest>

#include <cmath>
#include <limits>

using namespace nnscope;
using namespace torch::indexing;

namespace {

/// z_{i←j} of block `layer` for every source j <= i, from the weights: Σ_h A_h[i, j] · o_proj[:, head h's columns] ·
/// v_{h / groups, j}, one head at a time; through the branch norm with its scale frozen at the pass's attention_output
/// where the family has one. [i + 1, hidden_size].
torch::Tensor termsFromWeights(const Model& m, const TraceResult& r, int layer, int64_t i) {
    const ModelConfig& c = m.config();
    const int64_t D = c.headDim, groups = c.numHeads / c.numKvHeads;
    const torch::Tensor A = r.value({Value::AttentionProbabilities, layer}).index({0}).to(torch::kFloat32);  // [H, q, k]
    const torch::Tensor V = r.value({Value::AttentionValues, layer}).index({0}).to(torch::kFloat32);         // [kv, s, D]
    const torch::Tensor wo = m.layer(layer)[Module::OProj].weight.to(torch::kFloat32);
    torch::Tensor z = torch::zeros({i + 1, c.hiddenSize});
    for (int64_t h = 0; h < c.numHeads; ++h) {
        const torch::Tensor written = torch::matmul(V.index({h / groups, Slice(0, i + 1)}), wo.index({Slice(), Slice(h * D, (h + 1) * D)}).t());
        z += A.index({h, i, Slice(0, i + 1)}).unsqueeze(1) * written;
    }
    if (m.family().blockNorms.afterAttention) {  // RMSNorm families only (Gemma 2, OLMo 2)
        const torch::Tensor a = r.value({Value::AttentionOutput, layer}).index({0, i}).to(torch::kFloat32);
        const torch::Tensor w = m.layer(layer)[Module::AttentionOutputNorm].weight.to(torch::kFloat32);
        const double rms = std::sqrt((a.pow(2).mean() + c.normEps).item<double>());
        z = z * ((m.family().norm == NormKind::RMSNormPlusOne ? 1 + w : w) / rms);
    }
    return z;
}

TraceResult traceFor(const Model& m, const std::vector<int64_t>& ids) {
    TraceOptions o;
    o.save = contributionValueKeys(m);
    for (int l = 0; l < m.config().numLayers; ++l) o.save.push_back({Value::LayerMid, l});
    return trace(m, batchFromIds({ids}), o);
}

const char* kFlowFixtures[] = {"tiny-llama", "tiny-gpt2", "tiny-gemma2", "tiny-olmo2", "tiny-gpt-neox"};

}  // namespace

class TestContribution : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { configureThreads(0); }

    /// x_i + Σ_j z_{i←j} + bias is the stream after the attention (layer_mid; under GPT-NeoX's parallel residual, where
    /// layer_mid is the block's input, x_i + attention_output), at every block and position; each z_{i←j} equals the
    /// one computed here head by head from o_proj and attention_values.
    void decompositionAddsUp_data() {
        QTest::addColumn<QString>("fixture");
        // RMSNorm with GQA (llama), o_proj bias (gpt2), branch norms (gemma2 with 1 + w, olmo2), parallel residual (gpt-neox)
        for (const char* f : kFlowFixtures) QTest::newRow(f) << f;
    }
    void decompositionAddsUp() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const auto ids = test::goldenIds(fixture.toStdString());
        const TraceResult r = traceFor(*m, ids);
        const int64_t T = static_cast<int64_t>(ids.size());
        for (int l = 0; l < m->config().numLayers; ++l) {
            for (int64_t i = 0; i < T; ++i) {
                const SourceTerms s = attentionSourceTerms(*m, r, 0, l, i);
                QCOMPARE(s.terms.size(0), i + 1);
                NNSCOPE_COMPARE_TENSORS(s.terms, termsFromWeights(*m, r, l, i), 1e-4, 1e-5);
                const torch::Tensor x = r.value({Value::LayerInput, l}).index({0, i}).to(torch::kFloat32);
                NNSCOPE_COMPARE_TENSORS(s.residual, x, 0, 0);
                torch::Tensor after = r.value({Value::LayerMid, l}).index({0, i}).to(torch::kFloat32);
                if (m->config().parallelResidual) after = x + r.value({Value::AttentionOutput, l}).index({0, i}).to(torch::kFloat32);
                NNSCOPE_COMPARE_TENSORS(s.residual + s.terms.sum(0) + s.bias, after, 1e-4, 1e-4);
                NNSCOPE_COMPARE_TENSORS(s.stream, after, 1e-5, 1e-5);
                if (!m->layer(l)[Module::OProj].bias.defined() && !m->family().blockNorms.afterAttention) QCOMPARE(s.bias.abs().max().item<double>(), 0.0);
            }
        }
    }

    /// Importances lie in [0, 1], each query's sources (its residual included) sum to 1, and so do the MLP and its
    /// residual; no source after the query; the last query's importances equal the paper's formula applied here to the
    /// terms computed from the weights.
    void importancesAreNormalised_data() { decompositionAddsUp_data(); }
    void importancesAreNormalised() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const auto ids = test::goldenIds(fixture.toStdString());
        const TraceResult r = traceFor(*m, ids);
        const TokenContributions c = tokenContributions(*m, r, 0);
        const int64_t T = static_cast<int64_t>(ids.size()), n = m->config().numLayers;
        QCOMPARE(c.length, T);
        QCOMPARE(c.attention.sizes(), (std::vector<int64_t>{n, T, T}));
        QCOMPARE(c.headNorms.sizes(), (std::vector<int64_t>{n, m->config().numHeads, T, T}));
        for (const torch::Tensor& t : {c.attention, c.attentionResidual, c.mlp, c.mlpResidual}) {
            QVERIFY(t.min().item<double>() >= 0);
            QVERIFY(t.max().item<double>() <= 1 + 1e-6);
        }
        NNSCOPE_COMPARE_TENSORS(c.attention.sum(-1) + c.attentionResidual, torch::ones({n, T}), 0, 1e-5);
        NNSCOPE_COMPARE_TENSORS(c.mlp + c.mlpResidual, torch::ones({n, T}), 0, 1e-5);
        QCOMPARE(c.attention.triu(1).abs().max().item<double>(), 0.0);
        for (int l = 0; l < n; ++l) {
            const int64_t i = T - 1;
            const torch::Tensor x = r.value({Value::LayerInput, l}).index({0, i}).to(torch::kFloat32);
            const torch::Tensor y = attentionSourceTerms(*m, r, 0, l, i).stream;
            const torch::Tensor z = termsFromWeights(*m, r, l, i);
            const torch::Tensor raw = (y.abs().sum() - (y - z).abs().sum(-1)).clamp_min(0);
            const torch::Tensor res = (y.abs().sum() - (y - x).abs().sum()).clamp_min(0);
            const torch::Tensor total = raw.sum() + res;
            NNSCOPE_COMPARE_TENSORS(c.attention.index({l, i}), raw / total, 1e-4, 1e-6);
            NNSCOPE_COMPARE_TENSORS(c.attentionResidual.index({l, i}), res / total, 1e-4, 1e-6);
            NNSCOPE_COMPARE_TENSORS(c.attentionTotal.index({l, i}), total, 1e-4, 1e-5);
        }
        QVERIFY(!c.note.empty());
    }

    /// Kobayashi's norm of one head, computed here: A_h[i, j] · ‖o_proj[:, head h's columns] · v_{h / groups, j}‖₂;
    /// and that head's own importance for one edge, the paper's formula on its term alone over the row's normaliser.
    void headNormsFromTheWeights_data() {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("tiny-llama") << "tiny-llama";  // GQA: head 3 reads key/value head 1
        QTest::newRow("tiny-gpt2") << "tiny-gpt2";
    }
    void headNormsFromTheWeights() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), test::float32());
        const auto ids = test::goldenIds(fixture.toStdString());
        const TraceResult r = traceFor(*m, ids);
        const TokenContributions c = tokenContributions(*m, r, 0);
        const int layer = 1, head = 3;
        const int64_t D = m->config().headDim, groups = m->config().numHeads / m->config().numKvHeads, i = c.length - 1;
        const torch::Tensor A = r.value({Value::AttentionProbabilities, layer}).index({0, head, i}).to(torch::kFloat32);    // [k]
        const torch::Tensor v = r.value({Value::AttentionValues, layer}).index({0, head / groups}).to(torch::kFloat32);    // [s, D]
        const torch::Tensor wo = m->layer(layer)[Module::OProj].weight.to(torch::kFloat32).index({Slice(), Slice(head * D, (head + 1) * D)});
        const torch::Tensor written = torch::matmul(v, wo.t());  // [s, hidden]
        NNSCOPE_COMPARE_TENSORS(c.headNorms.index({layer, head, i}), A * written.norm(2, -1), 1e-4, 1e-6);
        const int64_t j = i - 1;
        const torch::Tensor y = attentionSourceTerms(*m, r, 0, layer, i).stream;
        const double expected = std::max(0.0, (y.abs().sum() - (y - A[j] * written[j]).abs().sum()).item<double>()) /
                                c.attentionTotal[layer][i].item<double>();
        const torch::Tensor heads = headImportances(*m, r, c, 0, layer, j, i);
        QCOMPARE(heads.size(0), m->config().numHeads);
        QVERIFY2(std::abs(heads[head].item<double>() - expected) < 1e-5,
                 qPrintable(QString("head importance %1, from the weights %2").arg(heads[head].item<double>()).arg(expected)));
    }

    /// A prompt's importances in a left-padded batch equal those of the prompt run alone.
    void paddedRowEqualsAlone() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const std::vector<int64_t> shortIds{1, 17, 42, 9}, longIds{1, 5, 9, 13, 21, 34, 55};
        TraceOptions o;
        o.save = contributionValueKeys(*m);
        const TraceResult batch = trace(*m, batchFromIds({longIds, shortIds}), o);
        const TraceResult alone = trace(*m, batchFromIds({shortIds}), o);
        const TokenContributions a = tokenContributions(*m, batch, 1), b = tokenContributions(*m, alone, 0);
        QCOMPARE(a.length, 4);
        NNSCOPE_COMPARE_TENSORS(a.attention, b.attention, 1e-4, 1e-5);
        NNSCOPE_COMPARE_TENSORS(a.mlp, b.mlp, 1e-4, 1e-5);
        NNSCOPE_COMPARE_TENSORS(a.headNorms, b.headNorms, 1e-4, 1e-5);
    }

    /// The graph keeps exactly the edges ≥ τ reachable from its start: every kept edge's target was reached from
    /// above, and with τ = 0 every source of every reached position is kept.
    void graphIsPruned() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto ids = test::goldenIds("tiny-llama");
        const TraceResult r = traceFor(*m, ids);
        const ContributionGraph g = contributionGraph(*m, r, 0, GraphOptions().withThreshold(0.04));
        QCOMPARE(g.position, static_cast<int64_t>(ids.size()) - 1);
        QVERIFY(!g.edges.empty());
        std::set<int64_t> reached{g.position};
        int layer = static_cast<int>(m->config().numLayers);
        std::set<int64_t> mid, below;
        for (const ContributionEdge& e : g.edges) {
            QVERIFY(e.weight >= 0.04 && e.weight <= 1 + 1e-6);
            if (e.layer != layer) {  // a new block: what the last one reached at its input is this one's output
                if (layer < m->config().numLayers) reached = below;
                layer = e.layer;
                mid.clear();
                below.clear();
            }
            switch (e.kind) {
            case ContributionEdge::Kind::Mlp:
            case ContributionEdge::Kind::MlpResidual:
                QVERIFY(reached.count(e.to) && e.from == e.to);
                mid.insert(e.to);
                break;
            case ContributionEdge::Kind::AttentionResidual:
            case ContributionEdge::Kind::Attention:
                QVERIFY(mid.count(e.to) && e.from <= e.to);
                below.insert(e.from);
                if (e.kind == ContributionEdge::Kind::Attention) {
                    QCOMPARE(static_cast<int>(e.heads.size()), 3);
                    QVERIFY(e.heads[0].weight >= e.heads[1].weight);
                    QCOMPARE(e.weight, static_cast<double>(g.contributions.attention[e.layer][e.to][e.from].item<float>()));
                }
                break;
            }
        }
        // τ = 0: every source of the start position in the last block is an edge
        const ContributionGraph all = contributionGraph(*m, r, 0, g.contributions, GraphOptions().withThreshold(0));
        int lastBlockAttention = 0;
        for (const auto& e : all.edges) lastBlockAttention += e.layer == m->config().numLayers - 1 && e.kind == ContributionEdge::Kind::Attention;
        QCOMPARE(lastBlockAttention, static_cast<int>(ids.size()));
        // τ = 1: at most the one term that is the whole stream
        QVERIFY(contributionGraph(*m, r, 0, g.contributions, GraphOptions().withThreshold(1)).edges.size() <= 2);
    }

    void refusals() {
        auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const TraceResult r = traceFor(*m, {1, 5, 9});
        QVERIFY_EXCEPTION_THROWN(contributionGraph(*m, r, 0, GraphOptions().withPosition(3)), Error);
        QVERIFY_EXCEPTION_THROWN(contributionGraph(*m, r, 0, GraphOptions().withPosition(-4)), Error);
        QVERIFY_EXCEPTION_THROWN(contributionGraph(*m, r, 0, GraphOptions().withThreshold(-0.1)), Error);
        QVERIFY_EXCEPTION_THROWN(contributionGraph(*m, r, 0, GraphOptions().withThreshold(std::numeric_limits<double>::quiet_NaN())), Error);
        QVERIFY_EXCEPTION_THROWN(contributionGraph(*m, r, 1), Error);
        QVERIFY_EXCEPTION_THROWN(attentionSourceTerms(*m, r, 0, 2, 0), Error);
        QVERIFY_EXCEPTION_THROWN(headImportances(*m, r, tokenContributions(*m, r, 0), 0, 0, 2, 1), Error);
        const TraceResult bare = trace(*m, batchFromIds({{1, 5, 9}}), TraceOptions());
        try {
            tokenContributions(*m, bare, 0);
            QFAIL("no error without the saved values");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("was not saved") != std::string::npos, e.what());
        }
    }

    /// The demo model's induction head (block 1) copies the token after the earlier occurrence of the current one: on
    /// "the cat sat on the mat . the cat" the last " cat" reads " sat" (the previous-token head of block 0 has put
    /// " cat" into " sat"'s stream, which the induction head's query matches).
    void demoInductionRoute() {
        auto m = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        const Batch b = encodeBatch(*m, {"the cat sat on the mat . the cat"});
        TraceOptions o;
        o.save = contributionValueKeys(*m);
        const TraceResult r = trace(*m, b, o);
        const std::vector<int64_t>& ids = b.ids[0];
        const int64_t sat = parseTokenArgument(*m, " sat", "sat"), cat = parseTokenArgument(*m, " cat", "cat");
        const int64_t satPos = std::find(ids.begin(), ids.end(), sat) - ids.begin();
        QCOMPARE(ids[static_cast<size_t>(satPos - 1)], cat);
        QCOMPARE(ids.back(), cat);
        const ContributionGraph g = contributionGraph(*m, r, 0);
        const ContributionEdge* induction = nullptr;
        for (const auto& e : g.edges)
            if (e.layer == 1 && e.kind == ContributionEdge::Kind::Attention && e.to == g.position && e.from == satPos) induction = &e;
        QVERIFY2(induction, "no block-1 attention edge from ' sat' to the last ' cat'");
        // ... and it is the largest token source of the last position in block 1
        const torch::Tensor row = g.contributions.attention.index({1, g.position});
        QCOMPARE(row.argmax().item<int64_t>(), satPos);
        // the previous-token step: block 0 moves the first ' cat' into ' sat'
        bool previous = false;
        for (const auto& e : g.edges) previous |= e.layer == 0 && e.kind == ContributionEdge::Kind::Attention && e.to == satPos && e.from == satPos - 1;
        QVERIFY2(previous, "no block-0 attention edge from the first ' cat' to ' sat'");
    }

    /// `nnscope graph --json`: every edge is ≥ the threshold, the tokens are the prompt's, the last position by default;
    /// a threshold outside [0, 1] or not a number is refused.
    void graphCommand() {
        QProcess p;
        p.start(NNSCOPE_BINARY, {"graph", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat sat on the mat . the cat", "--threshold", "0.05",
                                 "--json"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(static_cast<int64_t>(j["position"]), static_cast<int64_t>(j["tokens"].size()) - 1);
        QCOMPARE(static_cast<double>(j["threshold"]), 0.05);
        QVERIFY(!j["edges"].empty());
        bool attention = false;
        for (const auto& e : j["edges"]) {
            QVERIFY(static_cast<double>(e["weight"]) >= 0.05);
            const std::string kind = e["kind"];
            QVERIFY(kind == "attention" || kind == "attention_residual" || kind == "mlp" || kind == "mlp_residual");
            QVERIFY(e["from"] <= e["to"]);
            if (kind == "attention") {
                attention = true;
                QVERIFY(!e["heads"].empty() && e["heads"][0].contains("head") && e["heads"][0].contains("weight"));
            }
        }
        QVERIFY(attention);
        for (const char* bad : {"1.5", "-0.1", "abc", "nan"}) {
            QProcess q;
            q.start(NNSCOPE_BINARY, {"graph", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat", "--threshold", bad});
            QVERIFY(q.waitForFinished(60000));
            QCOMPARE(q.exitCode(), 2);  // a usage error
            QVERIFY2(q.readAllStandardError().contains("threshold"), bad);
        }
        QProcess text;
        text.start(NNSCOPE_BINARY, {"graph", "--model", NNSCOPE_DEMO_MODEL_DIR, "--prompt", "the cat sat on the mat . the cat", "--position", "3"});
        QVERIFY(text.waitForFinished(60000));
        QVERIFY2(text.exitCode() == 0, text.readAllStandardError().constData());
        QVERIFY(text.readAllStandardOutput().contains("attention"));
    }
};

NNSCOPE_TEST_SUITE(TestContribution, "test_contribution")
#include "test_contribution.moc"
