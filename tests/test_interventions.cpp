// SPDX-License-Identifier: MIT
// Interventions: edits, steering, skipped blocks and activation patching against transformers' forward hooks
// (tests/fixtures/models/*/golden_float32.safetensors, "edit.*") and the seeds' claims about them.
#include "core/run/edit.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/patching.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"
#include "testutil.h"

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include "testsuite.h"

#include <torch/version.h>

#include <QtTest>

using namespace nnscope;
using namespace torch::indexing;

namespace {

struct Fixture {
    std::shared_ptr<const Model> model;
    std::unique_ptr<SafetensorsFile> golden;
    Batch batch;
};

/// Activation patching's options with the metric logit[10] - logit[11] at the last position (the fixtures' two
/// token ids these tests read), every other option at its default.
PatchingOptions logitDifference10vs11() {
    PatchingOptions o;
    o.metric.kind = PatchMetric::Kind::LogitDifference;
    o.metric.answer = 10;
    o.metric.wrong = 11;
    return o;
}

Fixture load(const std::string& name) {
    Fixture f;
    // float32 whatever the CPU: the goldens are float32 ("auto" would compute a bfloat16 fixture in bfloat16 where the
    // CPU has native bfloat16)
    f.model = Model::load(test::fixture(name), LoadOptions().withDtype(torch::kFloat32));
    f.golden = std::make_unique<SafetensorsFile>(test::fixture(name) + "/golden_float32.safetensors");
    auto ids = f.golden->tensor("single.input_ids");
    std::vector<int64_t> row(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    f.batch = batchFromIds({row});
    return f;
}

torch::Tensor logitsWith(const Fixture& f, std::shared_ptr<EditList> edits, std::vector<ValueKey> save = {}) {
    TraceOptions o;
    o.save = std::move(save);
    o.save.push_back({Value::Logits, -1});
    o.intervention = std::move(edits);
    return trace(*f.model, f.batch, o).value({Value::Logits, -1});
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

/// Equal within float32 rounding: a patched run computes its logits at the last position only (lm_head on one row
/// rounds as it may, not bit for bit as on the whole prompt).
/// The rounding is the logits' (two passes of one prompt take different kernels: a patched run computes its last block
/// for the last position only, and OpenBLAS's AVX2 kernels, like libtorch >= 2's scaled_dot_product_attention, sum one
/// row in another order than many), so a logit difference of two logits near 1 is equal to about 1e-6 of the logits,
/// not of the difference: the scale is at least 1.
constexpr double kMetricScaleFloor = 1.0;

bool float32Close(double a, double b) { return std::abs(a - b) <= 1e-5 * std::max({std::abs(a), std::abs(b), kMetricScaleFloor}) + 1e-9; }

}  // namespace

class TestInterventions : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { configureThreads(0); }

    void editsEqualTransformersHooks_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("golden");
        QTest::addColumn<QStringList>("edits");
        for (const char* f : {"tiny-llama", "tiny-apertus", "tiny-persimmon"}) {
            QTest::newRow((std::string(f) + "/q_head").c_str()) << f << "q_head" << QStringList{"layers.1.self_attn.attention_queries[:, 1] *= 2"};
            QTest::newRow((std::string(f) + "/neuron").c_str()) << f << "neuron" << QStringList{"layers.0.mlp.mlp_neurons[:, :, 5] = 0"};
            QTest::newRow((std::string(f) + "/skip").c_str()) << f << "skip" << QStringList{"skip 1"};
            QTest::newRow((std::string(f) + "/steer").c_str()) << f << "steer" << QStringList{"steer 0 4 -1"};
        }
        QTest::newRow("tiny-qwen3-moe/forbid_expert") << "tiny-qwen3-moe" << "forbid_expert"
                                                     << QStringList{"layers.0.mlp.router_logits[:, :, 1] = -inf"};
        QTest::newRow("tiny-gpt-oss/forbid_expert") << "tiny-gpt-oss" << "forbid_expert"
                                                   << QStringList{"layers.0.mlp.router_logits[:, :, 1] = -inf"};
        QTest::newRow("tiny-apertus/qproj_head") << "tiny-apertus" << "qproj_head"
                                                 << QStringList{"layers.1.self_attn.q_proj.output[:, :, 16:32] *= 2"};
        QTest::newRow("tiny-persimmon/qkv_q_head") << "tiny-persimmon" << "qkv_q_head"
                                                   << QStringList{"layers.1.self_attn.query_key_value.output[:, :, 48:64] *= 2",
                                                                  "layers.1.self_attn.query_key_value.output[:, :, 48:64] += 1"};
    }
    void editsEqualTransformersHooks() {
        QFETCH(QString, fixture);
        QFETCH(QString, golden);
        QFETCH(QStringList, edits);
        const Fixture f = load(fixture.toStdString());
        auto list = std::make_shared<EditList>();
        for (const auto& e : edits) {
            if (e == "skip 1") list->skipLayer(1);
            else if (e == "steer 0 4 -1") list->steer(0, f.golden->tensor("edit.steer.vector"), 4.0, {-1});
            else list->add(parseEdit(*f.model, e.toStdString()));
        }
        const auto got = logitsWith(f, list);
        const auto want = f.golden->tensor("edit." + golden.toStdString() + ".logits");
        NNSCOPE_COMPARE_TENSORS(got, want, 1e-4, 1e-5);
        // and the edit really moved something (except the two the norms undo)
        const auto clean = f.golden->tensor("single.logits");
        if (golden != "qproj_head" && golden != "qkv_q_head") QVERIFY(maxDiff(got, clean) > 1e-3);
    }

    /// A mixture's routing through the edit machinery: forbidding expert 1 at block 0 (its router logit at -inf) leaves
    /// it out of every token's choice and moves the tokens that had chosen it to their next expert, with the weights
    /// renormalised over what is left; forcing an expert into a slot (an edit of expert_indices) runs that expert there.
    void mixtureRoutingEdits() {
        const Fixture f = load("tiny-qwen3-moe");
        const std::vector<ValueKey> keys = {{Value::ExpertIndices, 0}, {Value::ExpertWeights, 0}, {Value::ExpertOutputs, 0}, {Value::RouterLogits, 0}};
        TraceOptions o;
        o.save = keys;
        const TraceResult clean = trace(*f.model, f.batch, o);
        const torch::Tensor cleanIdx = clean.value(keys[0]);
        QVERIFY((cleanIdx == 1).any().item<bool>());  // expert 1 is chosen somewhere, so forbidding it changes something
        auto forbid = std::make_shared<EditList>();
        forbid->add(parseEdit(*f.model, "layers.0.mlp.router_logits[:, :, 1] = -inf"));
        o.intervention = forbid;
        const TraceResult edited = trace(*f.model, f.batch, o);
        const torch::Tensor idx = edited.value(keys[0]);
        QVERIFY(!(idx == 1).any().item<bool>());
        // the saved router_logits show the edit; the choice is the top 2 of the rest, renormalised
        QVERIFY(torch::isinf(edited.value(keys[3]).index({"...", 1})).all().item<bool>());
        auto p = torch::softmax(clean.value(keys[3]).to(torch::kFloat64).index_fill(-1, torch::tensor({1}), -INFINITY), -1);
        auto [top, want] = p.topk(2, -1);
        QVERIFY(torch::equal(idx, want));
        NNSCOPE_COMPARE_TENSORS(edited.value(keys[1]), top / top.sum(-1, true), 1e-5, 1e-6);

        // forcing expert 4 into slot 0 of every token: slot 0's output is expert 4's own gated MLP
        auto force = std::make_shared<EditList>();
        force->add(parseEdit(*f.model, "layers.0.mlp.expert_indices[:, :, 0] = 4"));
        o.intervention = force;
        o.save = {{Value::ExpertOutputs, 0}, {Value::MlpInput, 0}, {Value::ExpertIndices, 0}};
        const TraceResult forced = trace(*f.model, f.batch, o);
        QVERIFY((forced.value({Value::ExpertIndices, 0}).index({"...", 0}) == 4).all().item<bool>());
        const auto& w = f.model->weights();
        auto x = forced.value({Value::MlpInput, 0}).to(torch::kFloat64);
        auto g = w.get("model.layers.0.mlp.experts.4.gate_proj.weight").to(torch::kFloat64);
        auto u = w.get("model.layers.0.mlp.experts.4.up_proj.weight").to(torch::kFloat64);
        auto d = w.get("model.layers.0.mlp.experts.4.down_proj.weight").to(torch::kFloat64);
        auto expert4 = torch::matmul(torch::silu(torch::matmul(x, g.t())) * torch::matmul(x, u.t()), d.t());
        NNSCOPE_COMPARE_TENSORS(forced.value({Value::ExpertOutputs, 0}).index({"...", 0, Slice()}), expert4, 1e-4, 1e-5);
        // an expert outside the mixture is refused, naming the value
        auto bad = std::make_shared<EditList>();
        bad->add(parseEdit(*f.model, "layers.0.mlp.expert_indices[:, :, 0] = 6"));
        o.intervention = bad;
        QVERIFY_THROWS_EXCEPTION(Error, trace(*f.model, f.batch, o));
        // the mixture's values exist on the sparse blocks only
        QVERIFY_THROWS_EXCEPTION(Error, parseValuePath(*f.model, "layers.1.mlp.router_logits"));
        QCOMPARE(parseValuePath(*f.model, "layers.2.mlp.expert_indices").value, Value::ExpertIndices);
        QCOMPARE(parseValuePath(*f.model, "layers.1.mlp.mlp_neurons").value, Value::MlpNeurons);
        QVERIFY_THROWS_EXCEPTION(Error, parseValuePath(*f.model, "layers.0.mlp.mlp_neurons"));
    }

    /// gpt-oss's routing through the same edits: forbidding expert 1 gives the top 2 of the other logits, weighed by a
    /// softmax over those 2 alone; forcing expert 3 into slot 0 runs expert 3's clamped SwiGLU there (recomputed in
    /// float64 from the stored stacked tensors, gate and up interleaved, with the biases).
    void gptOssRoutingEdits() {
        const Fixture f = load("tiny-gpt-oss");
        const auto& cfg = f.model->config();
        TraceOptions o;
        o.save = {{Value::ExpertIndices, 0}, {Value::ExpertWeights, 0}, {Value::RouterLogits, 0}};
        const TraceResult clean = trace(*f.model, f.batch, o);
        QVERIFY((clean.value({Value::ExpertIndices, 0}) == 1).any().item<bool>());
        auto forbid = std::make_shared<EditList>();
        forbid->add(parseEdit(*f.model, "layers.0.mlp.router_logits[:, :, 1] = -inf"));
        o.intervention = forbid;
        const TraceResult edited = trace(*f.model, f.batch, o);
        const torch::Tensor idx = edited.value({Value::ExpertIndices, 0});
        QVERIFY(!(idx == 1).any().item<bool>());
        auto logits = clean.value({Value::RouterLogits, 0}).to(torch::kFloat64).index_fill(-1, torch::tensor({1}), -INFINITY);
        auto [top, want] = logits.topk(cfg.moe.topK, -1);
        QVERIFY(torch::equal(idx, want));
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::ExpertWeights, 0}), torch::softmax(top, -1), 1e-5, 1e-6);

        auto force = std::make_shared<EditList>();
        force->add(parseEdit(*f.model, "layers.0.mlp.expert_indices[:, :, 0] = 3"));
        o.intervention = force;
        o.save = {{Value::ExpertOutputs, 0}, {Value::MlpInput, 0}, {Value::ExpertIndices, 0}};
        const TraceResult forced = trace(*f.model, f.batch, o);
        QVERIFY((forced.value({Value::ExpertIndices, 0}).index({"...", 0}) == 3).all().item<bool>());
        const auto& w = f.model->weights();
        auto x = forced.value({Value::MlpInput, 0}).to(torch::kFloat64);
        auto gu = w.get("model.layers.0.mlp.experts.gate_up_proj")[3].to(torch::kFloat64);  // [hidden, 2 · intermediate]
        auto guBias = w.get("model.layers.0.mlp.experts.gate_up_proj_bias")[3].to(torch::kFloat64);
        auto down = w.get("model.layers.0.mlp.experts.down_proj")[3].to(torch::kFloat64);  // [intermediate, hidden]
        auto downBias = w.get("model.layers.0.mlp.experts.down_proj_bias")[3].to(torch::kFloat64);
        auto h = torch::matmul(x, gu) + guBias;
        const double limit = cfg.moe.swigluLimit, alpha = cfg.moe.swigluAlpha;
        auto gate = h.index({"...", Slice(0, None, 2)}).clamp_max(limit), up = h.index({"...", Slice(1, None, 2)}).clamp(-limit, limit);
        auto expert3 = torch::matmul((up + 1) * gate * torch::sigmoid(alpha * gate), down) + downBias;
        NNSCOPE_COMPARE_TENSORS(forced.value({Value::ExpertOutputs, 0}).index({"...", 0, Slice()}), expert3, 1e-4, 1e-5);
    }

    void normsUndoEditsBeforeThem() {
        // Apertus: scaling one head's slice of q_proj.output is renormalised away by q_norm, while scaling the same
        // head of attention_queries moves the logits.
        const Fixture a = load("tiny-apertus");
        const auto clean = logitsWith(a, nullptr);
        auto viaProj = std::make_shared<EditList>();
        viaProj->add(parseEdit(*a.model, "layers.1.self_attn.q_proj.output[:, :, 16:32] *= 2"));
        auto viaQueries = std::make_shared<EditList>();
        viaQueries->add(parseEdit(*a.model, "layers.1.self_attn.attention_queries[:, 1] *= 2"));
        const double dProj = maxDiff(logitsWith(a, viaProj), clean), dQueries = maxDiff(logitsWith(a, viaQueries), clean);
        QVERIFY2(dProj < 1e-4, std::to_string(dProj).c_str());
        QVERIFY2(dQueries > 1e-2, std::to_string(dQueries).c_str());
        // Persimmon: an affine edit of the query slice of query_key_value is re-centred and rescaled by q_layernorm.
        const Fixture p = load("tiny-persimmon");
        auto viaQkv = std::make_shared<EditList>();
        viaQkv->add(parseEdit(*p.model, "layers.1.self_attn.query_key_value.output[:, :, 48:64] *= 3"));
        viaQkv->add(parseEdit(*p.model, "layers.1.self_attn.query_key_value.output[:, :, 48:64] += 0.5"));
        const double dQkv = maxDiff(logitsWith(p, viaQkv), logitsWith(p, nullptr));
        QVERIFY2(dQkv < 1e-4, std::to_string(dQkv).c_str());
    }

    void anEditIsSeenByEveryLaterValue() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.0.layer_output[0, -1] += 3"));
        TraceOptions o;
        o.save = {{Value::LayerOutput, 0}, {Value::LayerInput, 1}, {Value::AttentionNormOutput, 1}};
        o.intervention = edits;
        const auto edited = trace(*f.model, f.batch, o);
        o.intervention = nullptr;
        const auto plain = trace(*f.model, f.batch, o);
        auto expect = plain.value({Value::LayerOutput, 0}).clone();
        expect.index({0, -1}) += 3;
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::LayerOutput, 0}), expect, 0, 0);
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::LayerInput, 1}), expect, 0, 0);  // the next block reads the edit
        QVERIFY(maxDiff(edited.value({Value::AttentionNormOutput, 1}), plain.value({Value::AttentionNormOutput, 1})) > 1e-3);
        // positions before the edited one are untouched downstream (causality)
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::AttentionNormOutput, 1}).index({0, Slice(0, -1)}),
                                plain.value({Value::AttentionNormOutput, 1}).index({0, Slice(0, -1)}), 0, 0);
    }

    void meanAblationAndHeadZeroing() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.1.self_attn.attention_head_outputs[:, :, 2] = 0"));
        edits->add(parseEdit(*f.model, "layers.0.mlp.mlp_neurons[:, :, 7] = mean"));
        TraceOptions o;
        o.save = {{Value::AttentionHeadOutputs, 1}, {Value::AttentionPremix, 1}, {Value::MlpNeurons, 0}};
        o.intervention = edits;
        const auto r = trace(*f.model, f.batch, o);
        QCOMPARE(r.value({Value::AttentionHeadOutputs, 1}).index({Slice(), Slice(), 2}).abs().max().item<float>(), 0.0f);
        QCOMPARE(r.value({Value::AttentionPremix, 1}).index({Slice(), Slice(), 2}).abs().max().item<float>(), 0.0f);
        auto n7 = r.value({Value::MlpNeurons, 0}).index({0, Slice(), 7});
        QVERIFY((n7 - n7[0]).abs().max().item<float>() == 0.0f);  // every position holds the same (mean) value
    }

    void readOnlyAndBadEditsAreRefused_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expect");
        QTest::newRow("next_token_probs") << "next_token_probs[:, 3] = 0" << "read-only";
        QTest::newRow("input_size") << "input_size = 3" << "read-only";
        QTest::newRow("no operator") << "layers.0.layer_output[:, 0]" << "no operator";
        QTest::newRow("unknown operator") << "layers.0.layer_output ^= 2" << "unknown operator '^='; use =, +=, -=, *= or /=";
        QTest::newRow("block from the last out of range") << "layers.-3.layer_output = 0" << "block -3 is out of range (the model has 2 blocks, 0 to 1, or -1 to -2 from the last)";
        QTest::newRow("unknown operator after an index") << "layers.0.layer_output[:, 0] %= 2" << "unknown operator '%='";
        QTest::newRow("unknown path") << "layers.0.bogus *= 2" << "unknown value path";
        QTest::newRow("bad index") << "layers.0.layer_output[:, x] = 0" << "not an integer";
        QTest::newRow("bad operand") << "layers.0.layer_output *= banana" << "neither a number";
        QTest::newRow("missing file") << "layers.0.layer_output += @/nonexistent/v.npy" << "/nonexistent/v.npy";
    }
    void readOnlyAndBadEditsAreRefused() {
        QFETCH(QString, edit);
        QFETCH(QString, expect);
        const Fixture f = load("tiny-llama");
        try {
            parseEdit(*f.model, edit.toStdString());
            QFAIL("a bad edit was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(expect), e.what());
        }
    }

    // A block counts from the last when negative, as Python's model.layers[-1]: the same edit, the same logits.
    void negativeBlockCountsFromTheLast() {
        const Fixture f = load("tiny-llama");
        QCOMPARE(parseEdit(*f.model, "layers.-1.layer_output[:, 0] *= 0").key, (ValueKey{Value::LayerOutput, 1}));
        auto fromLast = std::make_shared<EditList>(), plain = std::make_shared<EditList>();
        fromLast->add(parseEdit(*f.model, "layers.-2.mlp.mlp_output *= 0.5"));
        plain->add(parseEdit(*f.model, "layers.0.mlp.mlp_output *= 0.5"));
        QVERIFY(torch::equal(logitsWith(f, fromLast), logitsWith(f, plain)));
    }

    void indexThatDoesNotFitIsAnError() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.0.self_attn.attention_queries[:, 9] *= 2"));  // only 4 heads
        try {
            logitsWith(f, edits);
            QFAIL("an out-of-range head was edited");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("does not fit"), e.what());
        }
    }

    void patchingIntoItselfChangesNothing() {
        const Fixture f = load("tiny-llama");
        const auto& ids = f.batch.ids[0];
        PatchingOptions o;
        o.metric.kind = PatchMetric::Kind::TargetProbability;
        o.metric.answer = 5;
        for (PatchSite site : {PatchSite::LayerOutput, PatchSite::AttentionOutput, PatchSite::HeadOutput, PatchSite::AllHeads}) {
            o.site = site;
            o.batch = 1;  // one patched run per pass: the clean run itself
            const auto r = activationPatching(*f.model, ids, ids, o);
            QCOMPARE(r.clean, r.corrupted);
            for (const auto& row : r.grid)
                for (double v : row) QVERIFY2(float32Close(v, r.clean), (std::to_string(v) + " vs " + std::to_string(r.clean)).c_str());
            o.batch = 0;  // batched: the same within float32 rounding (a batch's matrix products may round otherwise)
            const auto b = activationPatching(*f.model, ids, ids, o);
            for (const auto& row : b.grid)
                for (double v : row) QVERIFY(std::abs(v - r.clean) <= 1e-5 * std::abs(r.clean));
        }
    }

    void patchingTheLastBlockEverywhereRecoversClean() {
        const Fixture f = load("tiny-llama");
        const auto& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        QCOMPARE(clean.size(), corrupt.size());
        const int last = static_cast<int>(m.config().numLayers) - 1;
        TraceOptions save;
        save.save = {{Value::LayerOutput, last}, {Value::Logits, -1}};
        const auto cleanRun = trace(m, batchFromIds({clean}), save);
        auto edits = std::make_shared<EditList>();
        for (int64_t p = 0; p < static_cast<int64_t>(clean.size()); ++p) {
            edits->patch({Value::LayerOutput, last}, {IndexItem{}, IndexItem::integer(p)}, cleanRun.value({Value::LayerOutput, last}).index({Slice(), p}));
        }
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = edits;
        const auto patched = trace(m, batchFromIds({corrupt}), o);
        NNSCOPE_COMPARE_TENSORS(patched.value({Value::Logits, -1}), cleanRun.value({Value::Logits, -1}), 0, 0);
        // and the grid's last row at the last position equals the clean metric
        PatchingOptions po = logitDifference10vs11();
        const auto r = activationPatching(m, clean, corrupt, po);
        QVERIFY(std::abs(r.grid[static_cast<size_t>(last)].back() - r.clean) < 1e-5);
        QVERIFY(std::abs(r.clean - r.corrupted) > 1e-4);
    }

    // The session's interventions apply to the clean, the corrupted and every patched run: each cell of a grid
    // computed under them equals a corrupted trace run by hand with the same interventions and then the clean
    // (edited) value patched in; the edits here touch the patched value itself (its block 0 at position 2), a head, and
    // skip a block. Attribution patching's clean and corrupted metrics are those of the edited runs.
    void patchingUnderInterventionsEqualsHandTraces() {
        const Fixture f = load("tiny-llama");
        const Model& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        const std::vector<std::string> lines = {"layers.0.layer_output[:, 2] *= 0.5", "layers.1.self_attn.attention_queries[:, 1] *= 2"};
        auto session = [&] {
            auto list = std::make_shared<EditList>();
            for (const auto& line : lines) addIntervention(*list, m, line);
            return list;
        };
        PatchingOptions o = logitDifference10vs11();
        o.batch = 1;  // compared with one-row hand traces (batched equals them within rounding: batchedEqualsUnbatched)
        const PatchingResult unedited = activationPatching(m, clean, corrupt, o);
        o.intervention = session();
        o.interventionTexts = lines;
        const PatchingResult r = activationPatching(m, clean, corrupt, o);
        QCOMPARE(r.interventions, lines);
        auto metric = [&](const torch::Tensor& logits) {
            return (logits[0][-1][10] - logits[0][-1][11]).item<double>();
        };
        TraceOptions save;
        save.save = {{Value::LayerOutput, 0}, {Value::LayerOutput, 1}, {Value::Logits, -1}};
        save.intervention = session();
        const TraceResult cleanRun = trace(m, batchFromIds({clean}), save);
        const TraceResult corruptRun = trace(m, batchFromIds({corrupt}), save);
        QVERIFY(std::abs(r.clean - metric(cleanRun.value({Value::Logits, -1}))) < 1e-6);
        QVERIFY(std::abs(r.corrupted - metric(corruptRun.value({Value::Logits, -1}))) < 1e-6);
        QVERIFY(std::abs(r.clean - unedited.clean) > 1e-3);
        for (const auto& [layer, p] : std::vector<std::pair<int, int64_t>>{{0, 2}, {0, 0}, {1, 2}, {1, 5}, {0, 8}}) {
            auto hand = session();  // the session's edits first, then the patch (an EditList applies its edits in order)
            hand->patch({Value::LayerOutput, layer}, {IndexItem{}, IndexItem::integer(p)}, cleanRun.value({Value::LayerOutput, layer}).index({Slice(), p}));
            TraceOptions run;
            run.save = {{Value::Logits, -1}};
            run.intervention = hand;
            const double want = metric(trace(m, batchFromIds({corrupt}), run).value({Value::Logits, -1}));
            const double got = r.grid[static_cast<size_t>(layer)][static_cast<size_t>(p)];
            QVERIFY2(std::abs(got - want) < 1e-6, (std::to_string(layer) + "," + std::to_string(p) + ": " + std::to_string(got) + " vs " +
                                                   std::to_string(want)).c_str());
        }
        // the edit halved block 0's position 2 in both runs: patching that cell moves the metric less than unedited
        QVERIFY(std::abs(r.grid[0][2] - unedited.grid[0][2]) > 1e-4);
        // a skipped block passes its input on: patching its layer_output recovers what patching its input would
        auto skipped = std::make_shared<EditList>();
        skipped->skipLayer(1);
        o.intervention = skipped;
        o.interventionTexts = {"skip 1"};
        const PatchingResult s = activationPatching(m, clean, corrupt, o);
        for (size_t p = 0; p < clean.size(); ++p) QVERIFY(std::abs(s.grid[1][p] - s.grid[0][p]) < 1e-5);
        // attribution patching runs its passes under the same interventions
        o.intervention = session();
        o.interventionTexts = lines;
        const PatchingResult a = attributionPatching(m, clean, corrupt, o);
        QVERIFY(std::abs(a.clean - r.clean) < 1e-6 && std::abs(a.corrupted - r.corrupted) < 1e-6);
        QCOMPARE(a.interventions, lines);
    }

    // A feature edit under patching: a transcoder steering one feature of block 1's MLP applies to every run, so the
    // grid of mlp_output equals traces run by hand with that feature edit and the patch; patching block 1's mlp_output
    // replaces the transcoder's edited output by the clean run's edited one; and the grid differs from the unedited.
    void featureEditUnderPatching() {
        const Fixture f = load("tiny-llama");
        const Model& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        const std::string line = "feature " + test::fixturesDir() + "/dictionaries/saelens-jumprelu-skip-transcoder-llama-l1:3 += 4";
        auto session = [&] {
            auto list = std::make_shared<EditList>();
            addIntervention(*list, m, line);
            return list;
        };
        PatchingOptions o = logitDifference10vs11();
        o.site = PatchSite::MlpOutput;
        o.batch = 1;  // compared with one-row hand traces (batched equals them within rounding: batchedEqualsUnbatched)
        const PatchingResult unedited = activationPatching(m, clean, corrupt, o);
        o.intervention = session();
        const PatchingResult r = activationPatching(m, clean, corrupt, o);
        TraceOptions save;
        save.save = {{Value::MlpOutput, 0}, {Value::MlpOutput, 1}, {Value::Logits, -1}};
        save.intervention = session();
        const TraceResult cleanRun = trace(m, batchFromIds({clean}), save);
        auto metric = [&](const torch::Tensor& logits) { return (logits[0][-1][10] - logits[0][-1][11]).item<double>(); };
        double moved = 0;
        for (int layer : {0, 1})
            for (int64_t p = 0; p < static_cast<int64_t>(clean.size()); ++p) {
                auto patch = std::make_shared<EditList>();
                patch->patch({Value::MlpOutput, layer}, {IndexItem{}, IndexItem::integer(p)}, cleanRun.value({Value::MlpOutput, layer}).index({Slice(), p}));
                auto hand = std::make_shared<EditList>();  // the feature edit, then the patch
                hand->add(std::shared_ptr<const Intervention>(session()));
                hand->add(std::shared_ptr<const Intervention>(patch));
                TraceOptions run;
                run.save = {{Value::Logits, -1}};
                run.intervention = hand;
                const double want = metric(trace(m, batchFromIds({corrupt}), run).value({Value::Logits, -1}));
                const double got = r.grid[static_cast<size_t>(layer)][static_cast<size_t>(p)];
                QVERIFY2(std::abs(got - want) < 1e-6, (std::to_string(layer) + "," + std::to_string(p)).c_str());
                moved = std::max(moved, std::abs(got - unedited.grid[static_cast<size_t>(layer)][static_cast<size_t>(p)]));
            }
        QVERIFY(moved > 1e-3);
        // patching a run into itself under the feature edit changes nothing: every cell is the edited run's metric
        // (which differs from the unedited one's), so every patched run applied the edit
        const PatchingResult self = activationPatching(m, clean, clean, o);
        QVERIFY(std::abs(self.clean - unedited.clean) > 1e-3);
        QCOMPARE(self.corrupted, self.clean);
        for (const auto& row : self.grid)
            for (double v : row) QVERIFY(float32Close(v, self.clean));
        // attribution patching differentiates through the transcoder's edit
        const PatchingResult a = attributionPatching(m, clean, corrupt, o);
        QVERIFY(std::abs(a.corrupted - r.corrupted) < 1e-6);
        for (const auto& row : a.grid)
            for (double v : row) QVERIFY(std::isfinite(v));
    }

    // Every head of every block in one run (PatchSite::AllHeads, TransformerLens' per-head patching) on the trained
    // stories260K (5 blocks x 8 heads): each cell equals a one-row pass run by hand with the engine, the clean run's
    // slice [:, p, h] of attention_head_outputs patched into the corrupted run (EditList::patch), whatever the rows
    // per batch; and the attribution estimate's AllHeads rows equal the estimate of each head alone (HeadOutput).
    void allHeadsGridEqualsSingleHeadHandRuns() {
        const auto model = Model::load(test::sharedModels() + "/stories260K-llama", LoadOptions().withDtype(torch::kFloat32));
        const Model& m = *model;
        const auto clean = encodeBatch(m, {"Tom had a big dog. Tom had a big"}).ids[0];
        const auto corrupt = encodeBatch(m, {"Tom had a big cat. Tom had a big"}).ids[0];
        QCOMPARE(clean.size(), corrupt.size());
        const int64_t S = static_cast<int64_t>(clean.size());
        const int L = static_cast<int>(m.config().numLayers), H = static_cast<int>(m.config().numHeads);
        PatchingOptions o;
        o.site = PatchSite::AllHeads;
        o.metric.kind = PatchMetric::Kind::LogitDifference;
        o.metric.answer = 400;  // "▁do" (dog), what the clean prompt repeats
        o.metric.wrong = 280;   // "▁c" (cat), what the corrupted one repeats
        o.batch = 1;
        const PatchingResult one = activationPatching(m, clean, corrupt, o);
        QCOMPARE(one.headsPerBlock, H);
        QCOMPARE(one.grid.size(), size_t(L * H));
        QCOMPARE(one.site, std::string("layers.{i}.self_attn.attention_head_outputs[:, :, {h}]"));
        TraceOptions save;
        for (int i = 0; i < L; ++i) save.save.push_back({Value::AttentionHeadOutputs, i});
        save.save.push_back({Value::Logits, -1});
        const TraceResult cleanRun = trace(m, batchFromIds({clean}), save);
        auto metric = [&](const torch::Tensor& logits) {
            return logits[0][-1][o.metric.answer].item<double>() - logits[0][-1][o.metric.wrong].item<double>();
        };
        double spread = 0;
        for (int i = 0; i < L; ++i)
            for (int h = 0; h < H; ++h)
                for (int64_t p = 0; p < S; ++p) {
                    IndexItem all, pos, head;
                    pos.kind = head.kind = IndexItem::Integer;
                    pos.start = p;
                    head.start = h;
                    auto hand = std::make_shared<EditList>();
                    hand->patch({Value::AttentionHeadOutputs, i}, {all, pos, head},
                                cleanRun.value({Value::AttentionHeadOutputs, i}).index({Slice(), p, h}));
                    TraceOptions run;
                    run.save = {{Value::Logits, -1}};
                    run.intervention = hand;
                    const double want = metric(trace(m, batchFromIds({corrupt}), run).value({Value::Logits, -1}));
                    const double got = one.grid[static_cast<size_t>(i * H + h)][static_cast<size_t>(p)];
                    QVERIFY2(float32Close(got, want), (std::to_string(i) + "," + std::to_string(h) + "," + std::to_string(p) + ": " +
                                           std::to_string(got) + " vs " + std::to_string(want)).c_str());
                    spread = std::max(spread, std::abs(want - one.corrupted));
                }
        // an induction head: block 4's head 4 at the last position recovers the whole gap, as patching the last block does
        QVERIFY(spread > 1.0);
        QVERIFY(std::abs(one.grid[4 * H + 4][static_cast<size_t>(S - 1)] - one.clean) < 0.2 * std::abs(one.clean - one.corrupted));
        // batched: several patched rows per forward pass give the one-row cells within float32 rounding
        for (int batch : {0, 5, 64}) {
            o.batch = batch;
            const PatchingResult b = activationPatching(m, clean, corrupt, o);
            double worst = 0;
            for (size_t r = 0; r < b.grid.size(); ++r)
                for (int64_t p = 0; p < S; ++p)
                    worst = std::max(worst, std::abs(b.grid[r][static_cast<size_t>(p)] - one.grid[r][static_cast<size_t>(p)]) /
                                                std::max(1.0, std::abs(one.grid[r][static_cast<size_t>(p)])));
            QVERIFY2(worst < 2e-5, (std::to_string(batch) + " rows: " + std::to_string(worst)).c_str());
        }
        const PatchingResult a = attributionPatching(m, clean, corrupt, o);
        QCOMPARE(a.grid.size(), size_t(L * H));
        PatchingOptions single = o;
        single.site = PatchSite::HeadOutput;
        for (int h : {0, 5}) {
            single.head = h;
            const PatchingResult ah = attributionPatching(m, clean, corrupt, single);
            for (int i = 0; i < L; ++i)
                for (int64_t p = 0; p < S; ++p)
                    QVERIFY(std::abs(ah.grid[static_cast<size_t>(i)][static_cast<size_t>(p)] -
                                     a.grid[static_cast<size_t>(i * H + h)][static_cast<size_t>(p)]) < 1e-9);
        }
    }

    // Batched patching equals one pass per cell for each site (within float32 rounding), and under a `mean` edit,
    // which averages over the rows of a pass, every cell still equals its one-row hand trace (one row per pass then).
    void batchedEqualsUnbatched() {
        const Fixture f = load("tiny-llama");
        const Model& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        PatchingOptions o = logitDifference10vs11();
        for (PatchSite site : {PatchSite::LayerOutput, PatchSite::AttentionOutput, PatchSite::MlpOutput, PatchSite::HeadOutput}) {
            o.site = site;
            o.head = 2;
            o.batch = 1;
            const PatchingResult one = activationPatching(m, clean, corrupt, o);
            o.batch = 7;
            const PatchingResult seven = activationPatching(m, clean, corrupt, o);
            for (size_t i = 0; i < one.grid.size(); ++i)
                for (size_t p = 0; p < one.grid[i].size(); ++p)
                    QVERIFY2(std::abs(one.grid[i][p] - seven.grid[i][p]) < 1e-5 * std::max(1.0, std::abs(one.grid[i][p])),
                             (std::to_string(i) + "," + std::to_string(p)).c_str());
        }
        const std::string meanEdit = "layers.0.self_attn.attention_head_outputs[:, :, 1] = mean";
        auto session = [&] {
            auto list = std::make_shared<EditList>();
            addIntervention(*list, m, meanEdit);
            return list;
        };
        QVERIFY(session()->mixesRows());
        o.site = PatchSite::LayerOutput;
        o.batch = 8;
        o.intervention = session();
        const PatchingResult r = activationPatching(m, clean, corrupt, o);
        TraceOptions save;
        save.save = {{Value::LayerOutput, 1}};
        save.intervention = session();
        const TraceResult cleanRun = trace(m, batchFromIds({clean}), save);
        for (int64_t p = 0; p < static_cast<int64_t>(clean.size()); ++p) {
            auto hand = session();
            hand->patch({Value::LayerOutput, 1}, {IndexItem{}, IndexItem::integer(p)}, cleanRun.value({Value::LayerOutput, 1}).index({Slice(), p}));
            TraceOptions run;
            run.save = {{Value::Logits, -1}};
            run.intervention = hand;
            const auto logits = trace(m, batchFromIds({corrupt}), run).value({Value::Logits, -1});
            QVERIFY(float32Close(r.grid[1][static_cast<size_t>(p)], logits[0][-1][10].item<double>() - logits[0][-1][11].item<double>()));
        }
    }

    // Chosen blocks and positions: exactly those cells are run (equal to the full grid's), the others are NaN, the
    // progress counts the chosen cells; the lists parse as written on the command line.
    void chosenBlocksAndPositions() {
        QCOMPARE(parseIndexList("-1", 9, "--positions"), std::vector<int64_t>({8}));
        QCOMPARE(parseIndexList("0,3,5", 9, "--positions"), std::vector<int64_t>({0, 3, 5}));
        QCOMPARE(parseIndexList("2-6", 9, "--positions"), std::vector<int64_t>({2, 3, 4, 5, 6}));
        QCOMPARE(parseIndexList(" 5, 0-1 ,-1,5", 9, "--positions"), std::vector<int64_t>({0, 1, 5, 8}));
        QCOMPARE(parseIndexList("", 3, "--blocks"), std::vector<int64_t>({0, 1, 2}));
        for (const char* bad : {"9", "-10", "a", "3-1", "1-", "2--1", "1.5"}) {
            try {
                parseIndexList(bad, 9, "--positions");
                QFAIL(bad);
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).startsWith("--positions"), e.what());
            }
        }
        QCOMPARE(patchProgressText(0, 40, 0), std::string("cell 0 of 40"));
        QCOMPARE(patchProgressText(10, 40, 5.0), std::string("cell 10 of 40, about 15 s left"));
        QCOMPARE(patchProgressText(39, 40, 3.9), std::string("cell 39 of 40, about 0.1 s left"));
        QCOMPARE(patchProgressText(40, 40, 9.0), std::string("cell 40 of 40"));

        const Fixture f = load("tiny-llama");
        const Model& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        const size_t S = clean.size();
        PatchingOptions o = logitDifference10vs11();
        for (PatchSite site : {PatchSite::LayerOutput, PatchSite::AllHeads}) {
            o.site = site;
            o.blocks.clear();
            o.positions.clear();
            const PatchingResult full = activationPatching(m, clean, corrupt, o);
            const PatchingResult fullEstimate = attributionPatching(m, clean, corrupt, o);
            o.blocks = {-1};
            o.positions = {1, -1};
            int last = -1, total = -1;
            o.progress = [&](int done, int n) { last = done, total = n; };
            const PatchingResult part = activationPatching(m, clean, corrupt, o);
            o.progress = nullptr;
            const PatchingResult estimate = attributionPatching(m, clean, corrupt, o);
            const int heads = std::max(1, full.headsPerBlock);
            QCOMPARE(total, heads * 2);
            QCOMPARE(last, total);
            QCOMPARE(part.grid.size(), full.grid.size());
            QCOMPARE(part.clean, full.clean);
            for (size_t row = 0; row < part.grid.size(); ++row)
                for (size_t p = 0; p < S; ++p) {
                    const bool chosen = static_cast<int>(row) / heads == 1 && (p == 1 || p == S - 1);
                    if (chosen) {
                        QVERIFY(std::abs(part.grid[row][p] - full.grid[row][p]) < 1e-5 * std::max(1.0, std::abs(full.grid[row][p])));
                        QVERIFY(std::abs(estimate.grid[row][p] - fullEstimate.grid[row][p]) < 1e-9);
                    } else {
                        QVERIFY(std::isnan(part.grid[row][p]) && std::isnan(estimate.grid[row][p]));
                    }
                }
            QVERIFY(std::isfinite(gridCorrelation(part.grid, estimate.grid)) || heads * 2 < 3);
        }
        // cancel: set after the first batch, the run stops before the next one
        std::atomic<bool> cancel{false};
        int batches = 0;
        o.site = PatchSite::LayerOutput;
        o.blocks.clear();
        o.positions.clear();
        o.batch = 2;
        o.cancel = &cancel;
        o.progress = [&](int done, int) {
            ++batches;
            if (done > 0) cancel = true;
        };
        QVERIFY_THROWS_EXCEPTION(Cancelled, activationPatching(m, clean, corrupt, o));
        QCOMPARE(batches, 2);
        o.cancel = nullptr;
        o.progress = nullptr;
        o.blocks = {2};
        try {
            activationPatching(m, clean, corrupt, o);
            QFAIL("block 2 of 2 was patched");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("block 2 is out of range"), e.what());
        }
    }

    // The printed grid's columns line up when tokens hold multi-byte characters ("␣" is three bytes): every row is as
    // many characters wide as the header of tokens (printf's %10.10s counted bytes and cut "␣" in half).
    void commandLineGridAligned() {
        QProcess q;
        q.start(NNSCOPE_BINARY, {"patch", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--clean", "Tom and Lily went to the park.",
                                 "--corrupted", "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11"});
        QVERIFY(q.waitForFinished(60000));
        QVERIFY2(q.exitCode() == 0, q.readAllStandardError().constData());
        const QStringList lines = QString::fromUtf8(q.readAllStandardOutput()).split('\n');
        qsizetype header = -1;
        for (qsizetype i = 0; i < lines.size(); ++i)
            if (lines[i].startsWith("block ")) header = i;
        QVERIFY(header >= 0);
        QVERIFY2(lines[header].contains(QString::fromUtf8("␣")), qPrintable(lines[header]));  // the case in question
        auto width = [](const QString& line) { return line.toUcs4().size(); };
        int rows = 0;
        for (qsizetype i = header + 1; i < lines.size() && !lines[i].isEmpty(); ++i, ++rows)
            QVERIFY2(width(lines[i]) == width(lines[header]), qPrintable(lines[header] + "\n" + lines[i]));
        QCOMPARE(rows, 2);  // tiny-llama's blocks
        QVERIFY2(lines[header].contains("8:."), qPrintable(lines[header]));  // each column names its position

        // a few cells asked for (--blocks, --positions) are printed as a few cells, not a grid of blanks
        QProcess few;
        few.start(NNSCOPE_BINARY, {"patch", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--clean", "Tom and Lily went to the park.",
                                   "--corrupted", "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11", "--blocks", "1",
                                   "--positions", "0,-1"});
        QVERIFY(few.waitForFinished(60000));
        QVERIFY2(few.exitCode() == 0, few.readAllStandardError().constData());
        const QStringList out = QString::fromUtf8(few.readAllStandardOutput()).split('\n');
        const qsizetype h = out.indexOf(QRegularExpression("block .*"));
        QVERIFY(h >= 0);
        QCOMPARE(out[h].split(' ', Qt::SkipEmptyParts), (QStringList{"block", "0:<s>", "8:."}));
        QCOMPARE(out.value(h + 1).split(' ', Qt::SkipEmptyParts).size(), 3);  // block 1 and its two cells
        QVERIFY(out.value(h + 1).trimmed().startsWith("1 "));
        QVERIFY(out.value(h + 2).isEmpty());
    }

    // The command line: --site heads with --blocks and --positions prints the engine's cells (NaN cells as null in
    // JSON), and the progress with its time estimate goes to stderr.
    void commandLineHeadsPositionsBlocks() {
        const QString model = QString::fromStdString(test::fixture("tiny-llama"));
        QProcess q;
        q.start(NNSCOPE_BINARY, {"patch", "--model", model, "--dtype", "float32", "--clean", "Tom and Lily went to the park.",
                                 "--corrupted", "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11", "--json",
                                 "--site", "heads", "--blocks", "1", "--positions", "0,-1", "--batch", "3"});
        QVERIFY(q.waitForFinished(60000));
        const QString err = q.readAllStandardError();
        QVERIFY2(q.exitCode() == 0, qPrintable(err));
        QVERIFY2(err.contains("cell 8 of 8"), qPrintable(err));
        const auto j = nlohmann::json::parse(q.readAllStandardOutput().toStdString());
        const Fixture f = load("tiny-llama");
        const Model& m = *f.model;
        PatchingOptions o = logitDifference10vs11();
        o.site = PatchSite::AllHeads;
        o.blocks = {1};
        o.positions = {0, -1};
        const auto r = activationPatching(m, encodeBatch(m, {"Tom and Lily went to the park."}).ids[0],
                                          encodeBatch(m, {"Lily and Lily went to the park."}).ids[0], o);
        QCOMPARE(j["heads_per_block"].get<int>(), r.headsPerBlock);
        QCOMPARE(j["grid"].size(), r.grid.size());
        for (size_t i = 0; i < r.grid.size(); ++i)
            for (size_t p = 0; p < r.grid[i].size(); ++p) {
                if (std::isnan(r.grid[i][p]))
                    QVERIFY(j["grid"][i][p].is_null());
                else
                    QVERIFY(std::abs(j["grid"][i][p].get<double>() - r.grid[i][p]) < 1e-5);
            }
        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"patch", "--model", model, "--clean", "a b", "--corrupted", "a c", "--answer", "#10", "--positions", "7-2"});
        QVERIFY(bad.waitForFinished(60000));
        QVERIFY(bad.exitCode() != 0);
        QVERIFY2(QString(bad.readAllStandardError()).contains("--positions"), "no word on --positions");
    }

    void commandLineEditsAndPatch() {
        QTemporaryDir tmp;
        const QString model = QString::fromStdString(test::fixture("tiny-llama"));
        const QString out = tmp.filePath("edited.safetensors");
        QProcess p;
        // --dtype float32: the goldens are float32 (auto computes the bfloat16 fixture in bfloat16 where the CPU has it)
        p.start(NNSCOPE_BINARY, {"trace", "--model", model, "--prompt", "Tom and Lily went to the park.", "--save", "logits",
                                 "--dtype", "float32", "--out", out, "--edit", "layers.1.self_attn.attention_queries[:, 1] *= 2"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        SafetensorsFile file(out.toStdString());
        const Fixture f = load("tiny-llama");
        NNSCOPE_COMPARE_TENSORS(file.tensor("logits"), f.golden->tensor("edit.q_head.logits"), 1e-4, 1e-5);
        QVERIFY(file.metadata().at("edits").find("attention_queries") != std::string::npos);
        QProcess q;
        q.start(NNSCOPE_BINARY, {"patch", "--model", model, "--clean", "Tom and Lily went to the park.", "--corrupted",
                                 "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11", "--json"});
        QVERIFY(q.waitForFinished(60000));
        QVERIFY2(q.exitCode() == 0, q.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(q.readAllStandardOutput().toStdString());
        QCOMPARE(j["grid"].size(), size_t(f.model->config().numLayers));
        // `patch` takes --edit / --skip / --steer as `trace` does and applies them to every run: its grid equals the
        // engine's under the same interventions
        QProcess qe;
        qe.start(NNSCOPE_BINARY, {"patch", "--model", model, "--dtype", "float32", "--clean", "Tom and Lily went to the park.",
                                  "--corrupted", "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11", "--json",
                                  "--edit", "layers.0.layer_output[:, 2] *= 0.5", "--skip", "1"});
        QVERIFY(qe.waitForFinished(60000));
        QVERIFY2(qe.exitCode() == 0, qe.readAllStandardError().constData());
        const auto je = nlohmann::json::parse(qe.readAllStandardOutput().toStdString());
        QCOMPARE(je["interventions"], nlohmann::json({"layers.0.layer_output[:, 2] *= 0.5", "skip 1"}));
        auto list = std::make_shared<EditList>();
        addIntervention(*list, *f.model, "layers.0.layer_output[:, 2] *= 0.5");
        addIntervention(*list, *f.model, "skip 1");
        PatchingOptions po = logitDifference10vs11();
        po.intervention = list;
        const Model& fm = *f.model;
        const auto r = activationPatching(fm, encodeBatch(fm, {"Tom and Lily went to the park."}).ids[0],
                                          encodeBatch(fm, {"Lily and Lily went to the park."}).ids[0], po);
        QVERIFY(std::abs(je["clean"].get<double>() - r.clean) < 1e-6 && std::abs(je["corrupted"].get<double>() - r.corrupted) < 1e-6);
        for (size_t i = 0; i < r.grid.size(); ++i)
            for (size_t p = 0; p < r.grid[i].size(); ++p) QVERIFY(std::abs(je["grid"][i][p].get<double>() - r.grid[i][p]) < 1e-6);
        QVERIFY(std::abs(je["grid"][0][2].get<double>() - j["grid"][0][2].get<double>()) > 1e-4);
        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"trace", "--model", model, "--prompt", "x", "--edit", "next_token_probs = 0"});
        QVERIFY(bad.waitForFinished(60000));
        QVERIFY(bad.exitCode() != 0);
        QVERIFY(QString(bad.readAllStandardError()).contains("read-only"));
    }
};

NNSCOPE_TEST_SUITE(TestInterventions, "test_interventions")
#include "test_interventions.moc"
