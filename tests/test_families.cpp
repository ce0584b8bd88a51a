// SPDX-License-Identifier: MIT
// Every standard value of every family against HuggingFace transformers (tests/fixtures/models/*/golden_*.safetensors,
// written by tests/fixtures/make_fixtures.py), and the checks of the seeds' notes on the matching fixture.
#include "core/analysis/analysis.h"
#include "core/analysis/headscores.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"
#include "core/io/tracefile.h"
#include "core/pages/support.h"
#include "core/run/trace.h"
#include "checkpointcopy.h"
#include "manifest.h"
#include "testutil.h"

#include "testsuite.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

using namespace nnscope;
using namespace torch::indexing;

namespace {

const std::vector<std::string> kFixtures = test::fixtureNames(test::fixturesDir() + "/models");

struct Case {
    std::shared_ptr<const Model> model;
    std::unique_ptr<SafetensorsFile> golden;
    std::map<std::string, TraceResult> runs;  // "single", "batch"
};

// bfloat16: both sides compute in bfloat16 (8 bits of mantissa: one rounding is 2^-8 = 0.4% relative) with
// different kernels (libtorch 1.13 vs torch 2.15), so single elements drift by a few roundings through the
// blocks, and relu² doubles a pre-activation's relative error. Each element must lie within 2^-5 (3.1%) of the
// tensor's largest magnitude, and the mean |difference| within 2^-8 of it: agreement to a few bfloat16 ulps.
constexpr double kF32Rtol = 1e-4, kF32Atol = 1e-5, kBf16Rel = 1.0 / 32, kBf16MeanRel = 1.0 / 256;
// bfloat16RoundsLikeTransformers: nnscope's mean distance to float32 over transformers' own, per value. Where nnscope
// rounds where transformers does, the ratio is 1 (on the CPU of docs/DEVELOPING.md every bfloat16 value equals
// transformers' bit for bit); one extra rounding in a norm or an activation gave 1.12 (Llama's SiLU) to 2.7 (Persimmon's
// LayerNorm). The margin is for another CPU's matrix kernels, which may round a few elements the other way.
constexpr double kBf16DistanceFactor = 1.05;

std::map<std::string, Case>& cases() {
    static std::map<std::string, Case> c;
    return c;
}

Case& load(const std::string& fixture, const std::string& dtype) {
    const std::string key = fixture + "/" + dtype;
    auto& all = cases();
    auto it = all.find(key);
    if (it != all.end()) return it->second;
    Case c;
    c.model = Model::load(test::fixture(fixture), LoadOptions().withDtype(parseDtype(dtype)));
    c.golden = std::make_unique<SafetensorsFile>(test::fixture(fixture) + "/golden_" + dtype + ".safetensors");
    TraceOptions all_;
    all_.save = allValueKeys(*c.model, true);
    for (const std::string run : {"single", "batch"}) {
        auto ids = c.golden->tensor(run + ".input_ids");
        auto mask = c.golden->tensor(run + ".attention_mask");
        Batch b;
        b.inputIds = ids.clone();
        b.attentionMask = mask.clone();
        for (int64_t r = 0; r < ids.size(0); ++r) {
            std::vector<int64_t> row;
            for (int64_t j = 0; j < ids.size(1); ++j)
                if (mask[r][j].item<int64_t>()) row.push_back(ids[r][j].item<int64_t>());
            b.ids.push_back(row);
        }
        c.runs[run] = trace(*c.model, b, all_);
    }
    return all.emplace(key, std::move(c)).first->second;
}

}  // namespace

class TestFamilies : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { configureThreads(0); }

    void valuesEqualTransformers_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("dtype");
        QTest::addColumn<QString>("name");
        for (const auto& f : kFixtures)
            for (const std::string dtype : {"float32", "bfloat16"}) {
                const std::string path = test::fixture(f) + "/golden_" + dtype + ".safetensors";
                if (!std::filesystem::exists(path)) continue;
                SafetensorsFile g(path);
                for (const auto& [name, e] : g.entries()) {
                    (void)e;
                    if (name.rfind("single.", 0) != 0 && name.rfind("batch.", 0) != 0) continue;
                    if (name.find(".rotary.") != std::string::npos || name.find(".rotary_local.") != std::string::npos ||
                        name.find("position_ids") != std::string::npos ||
                        name.find("project_on_vocab") != std::string::npos)
                        continue;
                    QTest::newRow((f + "/" + dtype + "/" + name).c_str())
                        << QString::fromStdString(f) << QString::fromStdString(dtype) << QString::fromStdString(name);
                }
            }
    }
    void valuesEqualTransformers() {
        QFETCH(QString, fixture);
        QFETCH(QString, dtype);
        QFETCH(QString, name);
        Case& c = load(fixture.toStdString(), dtype.toStdString());
        const std::string full = name.toStdString();
        const std::string run = full.substr(0, full.find('.'));
        const std::string path = full.substr(full.find('.') + 1);
        const ValueKey key = parseValuePath(*c.model, path);
        const torch::Tensor got = c.runs.at(run).value(key);
        QVERIFY2(got.defined(), ("the engine did not produce " + path).c_str());
        const torch::Tensor want = c.golden->tensor(full);
        if (dtype == "float32") {
            auto cmp = test::compare(got, want, kF32Rtol, kF32Atol);
            QVERIFY2(cmp.ok, cmp.message.c_str());
            return;
        }
        auto g = got.to(torch::kFloat64), w = want.to(torch::kFloat64);
        if (key.value == Value::AttentionScores) {  // masked entries hold finfo(bfloat16).min on both sides
            QVERIFY(torch::equal(g < -1e30, w < -1e30));
            g = g.masked_fill(w < -1e30, 0);
            w = w.masked_fill(w < -1e30, 0);
        }
        if (key.value == Value::NextTokenProbs) {
            // A probability inherits the logits' absolute error exponentially (p ∝ e^logit): with logits as large as
            // GPT-2's (|logit| up to 16) a few bfloat16 roundings move a 0.25 probability by 8%. Compare log-probabilities
            // with the logits' own bound (twice it: the normaliser moves too), where the probability is not negligible.
            const torch::Tensor logits = c.golden->tensor(run + ".logits").to(torch::kFloat64);
            const double bound = 2 * kBf16Rel * logits.abs().max().item<double>();
            const auto keep = w > 1e-3;
            auto cmp = test::compare(g.masked_select(keep).log(), w.masked_select(keep).log(), 0, bound);
            QVERIFY2(cmp.ok, cmp.message.c_str());
            return;
        }
        const double scale = std::max(w.abs().max().item<double>(), 1e-6);
        auto cmp = test::compare(g, w, 0, kBf16Rel * scale);
        QVERIFY2(cmp.ok, cmp.message.c_str());
        const double meanDiff = (g - w).abs().mean().item<double>();
        QVERIFY2(meanDiff <= kBf16MeanRel * scale, (std::to_string(meanDiff) + " mean |diff| vs scale " + std::to_string(scale)).c_str());
    }

    /// bfloat16 rounds where transformers rounds (#27): on every fixture with bfloat16 goldens, each value's mean
    /// distance to transformers' float32 value is within kBf16DistanceFactor of the distance of transformers' own
    /// bfloat16 value. An extra rounding anywhere (libtorch 1.13's bfloat16 LayerNorm, SiLU or tanh-GELU kernels
    /// rounding their steps where torch 2.x rounds once; a Python number rounded to bfloat16 before it multiplies) shows
    /// here as a ratio of 1.1 to 3 from the first value it touches on, well inside valuesEqualTransformers' bound of a
    /// few ulps. Prints how many values equal transformers' bit for bit and the largest ratios of each fixture.
    void bfloat16RoundsLikeTransformers_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& e : test::fixtureManifest(test::fixturesDir() + "/models"))
            if (e.bf16) QTest::newRow(e.name.c_str()) << QString::fromStdString(e.name);
    }
    void bfloat16RoundsLikeTransformers() {
        QFETCH(QString, fixture);
        // libtorch 1.13 sends bfloat16 matrix products to oneDNN only where the CPU has AVX-512 BW, VL and DQ (its
        // mkldnn_bf16_device_check); elsewhere its own gemm computes them, in another order, which this bound was not
        // measured on. There the bfloat16 values are still compared by valuesEqualTransformers' bound.
        if (!(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
            QSKIP("bfloat16 products do not go through oneDNN on this CPU (no AVX-512 BW/VL/DQ): the 1.05 bound was measured "
                  "where they do; valuesEqualTransformers still compares every bfloat16 value");
        Case& c = load(fixture.toStdString(), "bfloat16");
        SafetensorsFile f32(test::fixture(fixture.toStdString()) + "/golden_float32.safetensors");
        std::vector<std::tuple<double, std::string, double, double>> ratios;  // ratio, name, nnscope's, transformers'
        std::string failures;
        int identical = 0;
        int64_t elements = 0, differing = 0;
        for (const auto& [name, e] : c.golden->entries()) {
            (void)e;
            if (name.rfind("single.", 0) != 0 && name.rfind("batch.", 0) != 0) continue;
            if (name.find("rotary") != std::string::npos || name.find("position_ids") != std::string::npos ||
                name.find("input_ids") != std::string::npos || name.find("attention_mask") != std::string::npos ||
                name.find("project_on_vocab") != std::string::npos)
                continue;
            const std::string run = name.substr(0, name.find('.')), path = name.substr(name.find('.') + 1);
            const torch::Tensor got = c.runs.at(run).value(parseValuePath(*c.model, path));
            QVERIFY2(got.defined(), ("the engine did not produce " + path).c_str());
            auto ref = f32.tensor(name).to(torch::kFloat64);
            auto hf = c.golden->tensor(name).to(torch::kFloat64), nn = got.to(torch::kFloat64);
            const auto keep = ref > -1e30;  // masked scores: finfo.min of each dtype
            ref = ref.masked_select(keep), hf = hf.masked_select(keep), nn = nn.masked_select(keep);
            const double dHf = (hf - ref).abs().mean().item<double>(), dNn = (nn - ref).abs().mean().item<double>();
            const int64_t differ = (hf != nn).sum().item<int64_t>();
            if (differ == 0) ++identical;
            elements += nn.numel();
            differing += differ;
            // an exact value on both sides (token embeddings of bfloat16 weights) has no distance to compare
            const double floor = 1e-9 * std::max(ref.abs().max().item<double>(), 1e-6);
            ratios.emplace_back(dNn / std::max(dHf, floor), name, dNn, dHf);
            if (dNn > kBf16DistanceFactor * dHf + floor)
                failures += "\n  " + name + ": " + std::to_string(dNn) + " vs transformers' " + std::to_string(dHf) +
                            " (ratio " + std::to_string(dNn / dHf) + ")";
        }
        std::sort(ratios.rbegin(), ratios.rend());
        std::string worst;
        for (size_t i = 0; i < ratios.size() && i < 4; ++i)
            worst += " " + std::get<1>(ratios[i]) + " " + std::to_string(std::get<0>(ratios[i]));
        qInfo("%s: %zu values (%d equal to transformers' bit for bit, %lld of %lld elements differ), largest distance ratios:%s",
              qPrintable(fixture), ratios.size(), identical, static_cast<long long>(differing), static_cast<long long>(elements),
              worst.c_str());
        QVERIFY2(failures.empty(), ("mean distance to float32 beyond " + std::to_string(kBf16DistanceFactor) +
                                    " times transformers' bfloat16:" + failures).c_str());
    }

    /// Greedy generation (the key/value cache, one token a step) gives transformers' generate(do_sample=False) ids.
    /// The logits and every block's output of a trace that asks for no attention scores or probabilities, against
    /// transformers (float32 tolerance): on libtorch >= 2 every block then computes its attention with
    /// scaled_dot_product_attention (the mask carrying causality, left padding and sliding windows), on libtorch 1.13
    /// eagerly; valuesEqualTransformers, which saves everything, checks the eager path on both.
    void valuesWithoutPatternsEqualTransformers_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& f : kFixtures)
            if (std::filesystem::exists(test::fixture(f) + "/golden_float32.safetensors")) QTest::newRow(f.c_str()) << QString::fromStdString(f);
    }
    void valuesWithoutPatternsEqualTransformers() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        for (int i = 0; i < c.model->config().numLayers; ++i) o.save.push_back({Value::LayerOutput, i});
        for (const std::string run : {"single", "batch"}) {
            const TraceResult r = trace(*c.model, c.runs.at(run).batch, o);
            for (const auto& [key, got] : r.values) {
                const std::string name = run + "." + valuePath(c.model->family(), key);
                auto cmp = test::compare(got, c.golden->tensor(name), kF32Rtol, kF32Atol);
                QVERIFY2(cmp.ok, (name + (scaledDotProductAttentionEnabled() ? " (scaled_dot_product_attention): " : " (eager): ") +
                                  cmp.message).c_str());
            }
        }
    }

    void greedyEqualsTransformers_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& e : test::fixtureManifest(test::fixturesDir() + "/models"))
            if (e.greedy) QTest::newRow(e.name.c_str()) << QString::fromStdString(e.name);
    }
    void greedyEqualsTransformers() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const torch::Tensor want = c.golden->tensor("greedy.ids").flatten();
        const torch::Tensor prompt = c.golden->tensor("single.input_ids").flatten();
        std::vector<int64_t> ids(prompt.data_ptr<int64_t>(), prompt.data_ptr<int64_t>() + prompt.numel());
        const int newTokens = static_cast<int>(want.numel() - prompt.numel());
        QVERIFY(newTokens > 0);
        const auto got = generateGreedy(*c.model, ids, newTokens);
        std::vector<int64_t> expected(want.data_ptr<int64_t>(), want.data_ptr<int64_t>() + want.numel());
        QCOMPARE(got, expected);
        // From a short prompt (Phi-3's longrope fixture: 3 ids, original_max_position_embeddings 4), generation crosses
        // the short/long switch; transformers then drops the cache and recomputes every position with the long factor.
        if (c.golden->contains("greedy_short.ids")) {
            const torch::Tensor wantShort = c.golden->tensor("greedy_short.ids").flatten();
            const int64_t n = wantShort.numel() - newTokens;
            QVERIFY(n > 0 && n < static_cast<int64_t>(ids.size()));
            const std::vector<int64_t> shortPrompt(ids.begin(), ids.begin() + n);
            const std::vector<int64_t> expectedShort(wantShort.data_ptr<int64_t>(), wantShort.data_ptr<int64_t>() + wantShort.numel());
            QCOMPARE(generateGreedy(*c.model, shortPrompt, newTokens), expectedShort);
        }
    }

    void logitLensEqualsTransformers_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& f : kFixtures) QTest::newRow(f.c_str()) << QString::fromStdString(f);
    }
    void logitLensEqualsTransformers() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const auto& r = c.runs.at("single");
        const int L = static_cast<int>(c.model->config().numLayers);
        c10::InferenceMode g;
        for (int i = 0; i < L; ++i) {
            auto lens = c.model->projectOnVocab(r.value({Value::LayerOutput, i}));
            NNSCOPE_COMPARE_TENSORS(lens, c.golden->tensor("single.project_on_vocab.layers." + std::to_string(i)), kF32Rtol, kF32Atol);
        }
        // at the last block the lens is the model's output, exactly (Gemma 2: once the final soft cap is applied)
        auto last = c.model->projectOnVocab(r.value({Value::LayerOutput, L - 1}));
        if (const auto cap = c.model->config().finalLogitSoftcap) last = torch::tanh(last / *cap) * *cap;
        NNSCOPE_COMPARE_TENSORS(last, r.value({Value::Logits, -1}), 0, 0);
    }

    /// A window of positions (LensOptions::firstPosition / numPositions, what the window computes for the columns in
    /// view of a long prompt) equals those columns of the whole prompt's lens, in every part the views read.
    void logitLensWindow() {
        Case& c = load("tiny-llama", "float32");
        const auto& r = c.runs.at("single");
        const LogitLens full = logitLens(*c.model, r, 5);
        const int64_t len = full.topIds[0].size(1);
        QVERIFY(len > 5);
        for (const auto& [first, count] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {len - 1, 10}, {0, -1}}) {
            LensOptions o;
            o.firstPosition = first;
            o.numPositions = count;
            const LogitLens w = logitLens(*c.model, r, 5, o);
            const int64_t n = count < 0 ? len - first : std::min(count, len - first);
            QCOMPARE(w.firstPosition.at(0), first);
            QCOMPARE(w.topIds[0].size(1), n);
            QVERIFY(torch::equal(w.topIds[0], full.topIds[0].narrow(1, first, n)));
            // (the same products over fewer rows: float32 rounding may differ in the last bit)
            NNSCOPE_COMPARE_TENSORS(w.topProbs[0], full.topProbs[0].narrow(1, first, n), 1e-6, 1e-7);
            NNSCOPE_COMPARE_TENSORS(w.logSumExp[0], full.logSumExp[0].narrow(1, first, n), 1e-6, 1e-6);
            NNSCOPE_COMPARE_TENSORS(lensTokenProbs(*c.model, w, 0, 7), lensTokenProbs(*c.model, full, 0, 7).narrow(1, first, n), 1e-6, 1e-7);
        }
    }

    // --- the seeds' notes, as checks on the matching fixture ---

    void contributionIdentity_data() { logitLensEqualsTransformers_data(); }
    void contributionIdentity() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const auto& r = c.runs.at("single");
        const Family& f = c.model->family();
        for (int i = 0; i < static_cast<int>(c.model->config().numLayers); ++i) {
            auto x = r.value({Value::LayerInput, i}), a = r.value({Value::AttentionOutput, i}), m = r.value({Value::MlpOutput, i});
            // Gemma and OLMo 2 add the branch outputs' norms, not the outputs (nnterp's attention_output / mlp_output)
            if (f.blockNorms.afterAttention) a = r.value({Value::NativeAttentionOutputNormOutput, i});
            if (f.blockNorms.afterMlp) m = r.value({Value::NativeMlpOutputNormOutput, i});
            // GPT-NeoX's parallel residual sums mlp + attention + input, in that order
            auto sum = c.model->config().parallelResidual ? (m + a) + x : (x + a) + m;
            NNSCOPE_COMPARE_TENSORS(sum, r.value({Value::LayerOutput, i}), 0, 0);
        }
    }

    void arceeNeuronsAreSquaredRelu() {
        for (const std::string f : {"tiny-arcee", "tiny-arcee-yarn"}) {
            Case& c = load(f, "float32");
            const auto& r = c.runs.at("single");
            auto pre = r.value({Value::NativeUpProjOutput, 1});
            auto acts = r.value({Value::MlpNeurons, 1});
            QVERIFY(torch::equal(acts, torch::square(torch::relu(pre))));
            // exactly zero wherever the pre-activation is negative
            QCOMPARE(acts.index({pre < 0}).abs().max().item<float>(), 0.0f);
            QVERIFY((pre < 0).any().item<bool>());
        }
    }

    void apertusActivationIsXielu() {
        Case& c = load("tiny-apertus", "float32");
        const auto& r = c.runs.at("single");
        for (int i = 0; i < static_cast<int>(c.model->config().numLayers); ++i) {
            auto pre = r.value({Value::NativeActFnInput, i});
            QVERIFY(torch::equal(pre, r.value({Value::NativeUpProjOutput, i})));  // act_fn.input == up_proj.output
            const auto& w = c.model->weights();
            const std::string p = "model.layers." + std::to_string(i) + ".mlp.act_fn.";
            const double alphaP = torch::softplus(w.get(p + "alpha_p").to(torch::kFloat64)).item<double>();
            const double beta = w.contains(p + "beta") ? w.get(p + "beta").to(torch::kFloat64).item<double>() : 0.5;
            const double alphaN = beta + torch::softplus(w.get(p + "alpha_n").to(torch::kFloat64)).item<double>();
            const double eps = w.contains(p + "eps") ? w.get(p + "eps").to(torch::kFloat64).item<double>() : -1e-6;
            auto x = pre.to(torch::kFloat64);
            auto expect = torch::where(x > 0, alphaP * x * x + beta * x, (torch::expm1(torch::clamp_max(x, eps)) - x) * alphaN + beta * x);
            NNSCOPE_COMPARE_TENSORS(r.value({Value::MlpActivation, i}), expect, 1e-5, 1e-6);
            QVERIFY(torch::equal(r.value({Value::MlpActivation, i}), r.value({Value::MlpNeurons, i})));
        }
        // q_norm's output equals the queries at position 0, where the rotation is the identity
        auto qn = r.value({Value::NativeQNormOutput, 1});    // [b, heads, s, d]
        auto q = r.value({Value::AttentionQueries, 1});
        NNSCOPE_COMPARE_TENSORS(q.index({Slice(), Slice(), 0}), qn.index({Slice(), Slice(), 0}), 0, 0);
    }

    void ernieRotatesAdjacentPairs() {
        Case& c = load("tiny-ernie4_5", "float32");
        const auto& r = c.runs.at("single");
        const auto& cfg = c.model->config();
        auto proj = r.value({Value::NativeQProjOutput, 1});
        auto q = r.value({Value::AttentionQueries, 1});  // [b, heads, seq, d]
        auto p = proj.view({1, -1, cfg.numHeads, cfg.headDim});
        NNSCOPE_COMPARE_TENSORS(q.index({0, Slice(), 0}), p.index({0, 0}), 0, 0);
        const double cs = std::cos(1.0), sn = std::sin(1.0);
        auto a = p.index({0, 1, 0, 0}), b = p.index({0, 1, 0, 1});
        NNSCOPE_COMPARE_TENSORS(q.index({0, 0, 1, Slice(0, 2)}), torch::stack({a * cs - b * sn, b * cs + a * sn}), 1e-6, 1e-6);
    }

    void persimmonFusedProjectionPerHead() {
        Case& c = load("tiny-persimmon", "float32");
        const auto& r = c.runs.at("single");
        const auto& cfg = c.model->config();
        const int64_t H = cfg.numHeads, D = cfg.headDim;
        auto W = c.model->layer(1)[Module::QkvProj].weight.view({H, 3, D, -1});
        auto bias = c.model->layer(1)[Module::QkvProj].bias.view({H, 3, D});
        auto h = r.value({Value::AttentionNormOutput, 1});  // self_attn's input
        auto v = r.value({Value::AttentionValues, 1});
        auto vAgain = torch::einsum("bsx,hdx->bhsd", {h, W.index({Slice(), 2})}) + bias.index({Slice(), 2, None});
        NNSCOPE_COMPARE_TENSORS(vAgain, v, 1e-5, 1e-6);
        // the unrotated part of the queries is the normed projection unchanged
        const int64_t rot = cfg.rotaryDim();
        QCOMPARE(rot, D / 2);
        auto qRaw = torch::einsum("bsx,hdx->bhsd", {h, W.index({Slice(), 0})}) + bias.index({Slice(), 0, None});
        auto qNormed = torch::layer_norm(qRaw, {D}, c.model->layer(1)[Module::QNorm].weight, c.model->layer(1)[Module::QNorm].bias, cfg.normEps);
        auto q = r.value({Value::AttentionQueries, 1});
        NNSCOPE_COMPARE_TENSORS(qNormed.index({"...", Slice(rot, None)}), q.index({"...", Slice(rot, None)}), 1e-5, 1e-6);
        QVERIFY(!torch::allclose(qNormed.index({Slice(), Slice(), Slice(1, None), Slice(None, rot)}),
                                 q.index({Slice(), Slice(), Slice(1, None), Slice(None, rot)})));
    }

    void persimmonActivationFromConfig() {
        QCOMPARE(load("tiny-persimmon", "float32").model->config().hiddenAct, std::string("relu2"));
        QCOMPARE(load("tiny-persimmon-gelu", "float32").model->config().hiddenAct, std::string("gelu"));
    }

    void configStylesAndTies() {
        QCOMPARE(load("tiny-llama", "float32").model->config().rope.sourceStyle, std::string("rope_theta"));
        QCOMPARE(load("tiny-arcee-yarn", "float32").model->config().rope.type, std::string("yarn"));
        QCOMPARE(load("tiny-apertus", "float32").model->config().rope.type, std::string("llama3"));
        QVERIFY(load("tiny-arcee", "float32").model->headTied());
        QVERIFY(!load("tiny-arcee-yarn", "float32").model->headTied());
        QVERIFY(load("tiny-ernie4_5", "float32").model->config().attentionBias);
    }

    /// A mixture of experts on its fixtures: each block has its own values (the mixture's on the blocks with experts, the
    /// dense MLP's on the others), the routed output is the weighted sum of the chosen experts' outputs, only the chosen
    /// experts appear, and the values go through --save, an export and a trace file read back. Prints the largest
    /// |difference| from transformers' float32 values over every value of every run.
    void mixtureOfExperts_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& e : test::fixtureManifest(test::fixturesDir() + "/models"))
            if (e.name.find("moe") != std::string::npos || e.name.find("mixtral") != std::string::npos || e.name.find("gpt-oss") != std::string::npos ||
                e.name.find("deepseek") != std::string::npos)
                QTest::newRow(e.name.c_str()) << QString::fromStdString(e.name);
    }
    void mixtureOfExperts() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const ModelConfig& cfg = c.model->config();
        QVERIFY(c.model->family().experts && cfg.anySparseMlp());
        double worst = 0;
        std::string worstName;
        for (const auto& [name, e] : c.golden->entries()) {
            (void)e;
            if (name.rfind("single.", 0) != 0 && name.rfind("batch.", 0) != 0) continue;
            if (name.find("rotary") != std::string::npos || name.find("position_ids") != std::string::npos ||
                name.find("project_on_vocab") != std::string::npos)
                continue;
            const std::string run = name.substr(0, name.find('.')), path = name.substr(name.find('.') + 1);
            const torch::Tensor got = c.runs.at(run).value(parseValuePath(*c.model, path)).to(torch::kFloat64);
            const torch::Tensor want = c.golden->tensor(name).to(torch::kFloat64);
            const auto keep = want > -1e30;
            const double d = (got.masked_select(keep) - want.masked_select(keep)).abs().max().item<double>();
            if (d > worst) worst = d, worstName = name;
        }
        qInfo("%s: max |difference| from transformers 5.23 (float32) %.3g, at %s", qPrintable(fixture), worst, worstName.c_str());
        const auto& r = c.runs.at("single");
        for (int i = 0; i < static_cast<int>(cfg.numLayers); ++i) {
            const bool sparse = cfg.sparseMlp(i);
            QCOMPARE(r.value({Value::RouterLogits, i}).defined(), sparse);
            QCOMPARE(r.value({Value::MlpNeurons, i}).defined(), !sparse);
            QVERIFY(c.golden->contains("single.layers." + std::to_string(i) + ".mlp.router_logits") == sparse);
            if (!sparse) continue;
            const auto idx = r.value({Value::ExpertIndices, i});
            QCOMPARE(idx.scalar_type(), torch::kInt64);
            QCOMPARE(idx.sizes(), torch::IntArrayRef({1, r.batch.inputIds.size(1), cfg.moe.topK}));
            // routed_output = Σ_k expert_weights[k] · expert_outputs[k]
            auto w = r.value({Value::ExpertWeights, i}).to(torch::kFloat64), eo = r.value({Value::ExpertOutputs, i}).to(torch::kFloat64);
            NNSCOPE_COMPARE_TENSORS(r.value({Value::RoutedOutput, i}), (w.unsqueeze(-1) * eo).sum(2), 1e-5, 1e-6);
            // renormalised weights sum to 1, times routed_scaling_factor (DeepSeek V3, GLM-4.5)
            if (cfg.moe.normTopkProb)
                NNSCOPE_COMPARE_TENSORS(w.sum(-1), torch::full_like(w.sum(-1), cfg.moe.routedScalingFactor), 1e-6, 1e-6);
        }
        // --save, an export, a trace file read back: the integer indices stay integers
        TraceOptions o;
        o.save = matchValues(*c.model, "layers.*.mlp.expert_*");
        QCOMPARE(static_cast<int64_t>(o.save.size()), 3 * static_cast<int64_t>(std::count(cfg.moe.layerSparse.begin(), cfg.moe.layerSparse.end(), true)));
        const TraceResult saved = trace(*c.model, c.runs.at("single").batch, o);
        QTemporaryDir tmp;
        const std::string file = tmp.filePath("moe.safetensors").toStdString();
        exportValues(file, *c.model, saved);
        const TraceFile back = readTraceFile(file, TraceFileOptions{false});
        for (const ValueKey& k : o.save) {
            const torch::Tensor t = back.result.value(k);
            QVERIFY2(t.defined(), valuePath(c.model->family(), k).c_str());
            QVERIFY(torch::equal(t, saved.value(k)));
        }
    }

    /// SmolLM3's NoPE block (tiny-smollm3: no_rope_layer_interval 2, so no_rope_layers [1, 0, 1]): its queries and keys are
    /// q_proj's and k_proj's outputs cut into heads, bit for bit, where the rotary blocks' are turned; with
    /// use_sliding_window the NoPE block is the sliding one (layer_types [full, sliding, full], window 4).
    void smollm3NoPeBlockSkipsTheRotary() {
        Case& c = load("tiny-smollm3", "float32");
        const ModelConfig& cfg = c.model->config();
        QCOMPARE(cfg.layerNoRope, (std::vector<bool>{false, true, false}));
        QVERIFY(!cfg.rotates(1) && cfg.rotates(0) && cfg.rotates(2));
        QCOMPARE(cfg.layerSliding, (std::vector<bool>{false, true, false}));
        QCOMPARE(cfg.slidingWindow, int64_t(4));
        QCOMPARE(cfg.rope.theta, 2000000.0);
        const auto& r = c.runs.at("single");
        const int64_t D = cfg.headDim;
        auto heads = [&](const torch::Tensor& proj) { return proj.view({proj.size(0), proj.size(1), -1, D}).transpose(1, 2); };
        QVERIFY(torch::equal(r.value({Value::AttentionQueries, 1}), heads(r.value({Value::NativeQProjOutput, 1}))));
        QVERIFY(torch::equal(r.value({Value::AttentionKeys, 1}), heads(r.value({Value::NativeKProjOutput, 1}))));
        // block 0 turns them: equal at position 0 (the identity rotation), not after
        auto q0 = r.value({Value::AttentionQueries, 0}), p0 = heads(r.value({Value::NativeQProjOutput, 0}));
        NNSCOPE_COMPARE_TENSORS(q0.index({Slice(), Slice(), 0}), p0.index({Slice(), Slice(), 0}), 0, 0);
        QVERIFY(!torch::allclose(q0.index({Slice(), Slice(), Slice(1, None)}), p0.index({Slice(), Slice(), Slice(1, None)})));
        // the NoPE block's window: no probability on keys 4 or more positions back
        auto probs = r.value({Value::AttentionProbabilities, 1});
        const int64_t S = probs.size(-1);
        QVERIFY(S > 4);
        auto far = torch::ones({S, S}, torch::kBool).tril(-4);
        QCOMPARE(probs.index({"...", far}).abs().max().item<float>(), 0.0f);
        QVERIFY(r.value({Value::AttentionProbabilities, 0}).index({"...", far}).min().item<float>() > 0);
    }

    /// OLMo 3 (tiny-olmo3): layer_types [sliding, full, sliding] with window 4, and a rotary per layer type (yarn on the
    /// full block, default theta 10000 on the sliding ones): each block sees the keys and the frequencies of its type.
    void olmo3SlidingWindowPerBlock() {
        Case& c = load("tiny-olmo3", "float32");
        const ModelConfig& cfg = c.model->config();
        QCOMPARE(cfg.layerSliding, (std::vector<bool>{true, false, true}));
        QCOMPARE(cfg.slidingWindow, int64_t(4));
        QVERIFY(cfg.layerNoRope.empty() && cfg.rotates(0));
        QCOMPARE(cfg.rope.type, std::string("yarn"));
        QCOMPARE(cfg.rope.theta, 500000.0);
        QVERIFY(cfg.ropeLocal.has_value());
        QCOMPARE(cfg.ropeLocal->type, std::string("default"));
        QCOMPARE(cfg.ropeLocal->theta, 10000.0);
        const auto& r = c.runs.at("single");
        const int64_t S = r.value({Value::AttentionProbabilities, 0}).size(-1);
        QVERIFY(S > 4);
        auto far = torch::ones({S, S}, torch::kBool).tril(-4);
        for (int i = 0; i < 3; ++i) {
            auto p = r.value({Value::AttentionProbabilities, i}).index({"...", far});
            if (cfg.slides(i)) QCOMPARE(p.abs().max().item<float>(), 0.0f);
            else QVERIFY(p.min().item<float>() > 0);
        }
        // the golden frequencies of both rotaries equal nnscope's tables
        NNSCOPE_COMPARE_TENSORS(c.model->rope().invFreq, c.golden->tensor("rotary.inv_freq"), 1e-6, 0);
    }

    /// Gemma 3's multimodal wrapper (tiny-gemma3-mm): the language model under model.language_model. from text_config;
    /// the vision tower and the projector are never read (no get() asked for one of their tensors) and the load note says
    /// so; neither of text_config's soft caps is applied (the wrapper returns lm_head's output, Gemma3Attention drops
    /// attn_logit_softcapping); lm_head is tied by the wrapper's key.
    void gemma3WrapperSkipsTheVisionTower() {
        Case& c = load("tiny-gemma3-mm", "float32");
        const Model& m = *c.model;
        const ModelConfig& cfg = m.config();
        QCOMPARE(m.family().modelType, std::string("gemma3"));
        QCOMPARE(cfg.architectures.front(), std::string("Gemma3ForConditionalGeneration"));
        QCOMPARE(cfg.numLayers, int64_t(3));
        QCOMPARE(cfg.raw["text_config"]["final_logit_softcapping"].get<double>(), 3.0);
        QVERIFY(!cfg.finalLogitSoftcap);
        // Gemma3Attention keeps attn_logit_softcapping (2.0 here) but never applies it
        QCOMPARE(cfg.raw["text_config"]["attn_logit_softcapping"].get<double>(), 2.0);
        QVERIFY(!cfg.attnLogitSoftcap);
        QVERIFY(cfg.tieWordEmbeddings && m.headTied());
        QCOMPARE(cfg.layerSliding, (std::vector<bool>{true, false, true}));
        QVERIFY(cfg.ropeLocal.has_value());
        const auto& r = c.runs.at("single");
        QVERIFY(torch::equal(r.value({Value::Logits, -1}), r.value({Value::LmHeadOutput, -1})));
        size_t vision = 0;
        for (const auto& n : m.weights().names()) vision += m.family().skipsTensor(n);
        QVERIFY(vision > 10);
        for (const auto& n : m.weights().requested()) QVERIFY2(!m.family().skipsTensor(n), ("read: " + n).c_str());
        QVERIFY(m.unusedTensors().empty());
        QVERIFY(m.warnings().empty());
        QCOMPARE(m.notes().size(), size_t(1));
        const std::string note = m.notes().front();
        QVERIFY2(note.find("vision tower skipped: text prompts only") != std::string::npos, note.c_str());
        QVERIFY2(note.find(std::to_string(vision) + " tensors") != std::string::npos, note.c_str());
        QVERIFY2(note.find("tiny-gemma3-mm") != std::string::npos, note.c_str());
        // the page's first note, and the printout's line for the skipped parts
        QCOMPARE(m.family().notes.front().title, std::string("Vision tower skipped: text prompts only"));
        const std::string text = printout(m);
        QVERIFY2(text.find("(vision_tower, multi_modal_projector): vision tower skipped: text prompts only") != std::string::npos, text.c_str());
    }

    /// Gemma 3's multimodal checkpoints in both spellings: transformers 5.23 saves language_model.model.* (the hub's
    /// layout), 4.52 to 4.57 saved model.language_model.*; a copy renamed to the second computes the same logits.
    void gemma3BothSpellingsLoad() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        test::copyCheckpoint(test::fixture("tiny-gemma3-mm"), dir);
        std::vector<std::pair<std::string, torch::Tensor>> renamed;
        size_t n = 0;
        {
            SafetensorsFile f(dir + "/model.safetensors");
            for (const auto& [name, e] : f.entries()) {
                std::string to = name;
                for (const auto& [saved, canonical] : std::vector<std::pair<std::string, std::string>>{
                         {"language_model.model.", "model.language_model."}, {"vision_tower.", "model.vision_tower."},
                         {"multi_modal_projector.", "model.multi_modal_projector."}})
                    if (name.rfind(saved, 0) == 0) to = canonical + name.substr(saved.size());
                n += to != name;
                renamed.emplace_back(to, f.tensor(name).clone());
            }
        }
        QCOMPARE(n, renamed.size());  // every tensor of the 5.23 file has the original spelling
        writeSafetensors(dir + "/model.safetensors", renamed, {{"format", "pt"}});
        auto m = Model::load(dir, test::float32());
        Case& c = load("tiny-gemma3-mm", "float32");
        const torch::Tensor ids = c.golden->tensor("single.input_ids");
        NNSCOPE_COMPARE_TENSORS(m->forward(ids, {}, nullptr), c.golden->tensor("single.logits"), kF32Rtol, kF32Atol);
        QVERIFY(m->warnings().empty() && m->unusedTensors().empty());
        QVERIFY(m->notes().front().find("vision tower skipped") != std::string::npos);
    }

    /// Broken copies of the three fixtures: each refusal is an nnscope::Error naming the file and the key or tensor.
    void newFamiliesRefuseBadInput_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("change");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("gemma3 text_config not an object") << "tiny-gemma3-mm" << "text_config=string"
                                                          << QStringList{"config.json", "text_config"};
        QTest::newRow("gemma3 without text_config") << "tiny-gemma3-mm" << "text_config=absent"
                                                    << QStringList{"model.safetensors", "language_model.model.embed_tokens.weight", "shape"};
        QTest::newRow("gemma3 missing language-model weight") << "tiny-gemma3-mm" << "drop=language_model.model.layers.1.mlp.down_proj.weight"
                                                              << QStringList{"tiny-gemma3-mm", "model.language_model.layers.1.mlp.down_proj.weight",
                                                                             "language_model.model.layers.1.mlp.down_proj.weight", "missing"};
        QTest::newRow("gemma3 tensor under both spellings") << "tiny-gemma3-mm" << "duplicate=language_model.model.norm.weight"
                                                            << QStringList{"model.safetensors", "model.language_model.norm.weight", "twice"};
        QTest::newRow("smollm3 short no_rope_layers") << "tiny-smollm3" << "no_rope_layers=short"
                                                      << QStringList{"config.json", "no_rope_layers", "3 blocks"};
        QTest::newRow("smollm3 no_rope_layer_interval 0") << "tiny-smollm3" << "no_rope_layer_interval=0"
                                                          << QStringList{"config.json", "no_rope_layer_interval"};
        QTest::newRow("olmo3 bad layer_types") << "tiny-olmo3" << "layer_types=bad" << QStringList{"config.json", "layer_types", "entry 1"};
        QTest::newRow("olmo3 sliding without window") << "tiny-olmo3" << "sliding_window=null"
                                                      << QStringList{"config.json", "layer_types", "sliding_window"};
    }
    void newFamiliesRefuseBadInput() {
        QFETCH(QString, fixture);
        QFETCH(QString, change);
        QFETCH(QStringList, expected);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string dir = tmp.path().toStdString() + "/" + fixture.toStdString();
        std::filesystem::create_directory(dir);
        test::copyCheckpoint(test::fixture(fixture.toStdString()), dir);
        nlohmann::json config;
        {
            std::ifstream in(dir + "/config.json");
            config = nlohmann::json::parse(in);
        }
        const std::string key = change.section('=', 0, 0).toStdString(), how = change.section('=', 1).toStdString();
        if (key == "drop" || key == "duplicate") {
            std::vector<std::pair<std::string, torch::Tensor>> kept;
            {
                SafetensorsFile f(dir + "/model.safetensors");
                QVERIFY(f.entries().count(how));
                for (const auto& [name, e] : f.entries())
                    if (name != how || key == "duplicate") kept.emplace_back(name, f.tensor(name).clone());
                if (key == "duplicate") kept.emplace_back("model.language_model." + how.substr(std::string("language_model.model.").size()),
                                                          f.tensor(how).clone());
            }
            writeSafetensors(dir + "/model.safetensors", kept, {{"format", "pt"}});
        } else if (key == "text_config") {
            if (how == "absent") config.erase("text_config");
            else config["text_config"] = "tiny";
        } else if (key == "no_rope_layers") {
            config["no_rope_layers"] = {1, 0};
        } else if (key == "no_rope_layer_interval") {
            config.erase("no_rope_layers");
            config["no_rope_layer_interval"] = 0;
        } else if (key == "layer_types") {
            config["layer_types"] = {"sliding_attention", "chunked_attention", "sliding_attention"};
        } else if (key == "sliding_window") {
            config["sliding_window"] = nullptr;
        }
        std::ofstream(dir + "/config.json", std::ios::trunc) << config.dump(2);
        try {
            Model::load(dir, test::float32());
            QFAIL("the broken copy loaded");
        } catch (const Error& e) {
            const std::string what = e.what();
            for (const QString& x : expected) QVERIFY2(what.find(x.toStdString()) != std::string::npos, what.c_str());
        }
    }

    /// gpt-oss's MXFP4 checkpoint (tiny-gpt-oss-mxfp4: the experts as *_blocks / *_scales, written by make_fixtures.py from
    /// tiny-gpt-oss's experts, which lie on the MXFP4 grid) computes every value of its float twin bit for bit, in float32
    /// and bfloat16, so it equals transformers on the twin (valuesEqualTransformers). The experts stay packed: the loaded
    /// model holds the file's uint8 blocks (the mapped memory itself), and each expert's weight is dequantized only when
    /// asked for, equal to the float twin's.
    void mxfp4TwinEqualsFloatTwin_data() {
        QTest::addColumn<QString>("dtype");
        QTest::newRow("float32") << "float32";
        QTest::newRow("bfloat16") << "bfloat16";
    }
    void mxfp4TwinEqualsFloatTwin() {
        QFETCH(QString, dtype);
        Case& twin = load("tiny-gpt-oss", dtype.toStdString());
        auto packed = Model::load(test::fixture("tiny-gpt-oss") + "-mxfp4", LoadOptions().withDtype(parseDtype(dtype.toStdString())));
        const ExpertWeights& gu = packed->layer(0)[Module::ExpertGateProj].experts;
        QVERIFY(gu.weight.empty() && gu.blocks.defined());
        QCOMPARE(gu.blocks.data_ptr(), packed->weights().get("model.layers.0.mlp.experts.gate_up_proj_blocks").data_ptr());
        QVERIFY(packed->unusedTensors().empty());
        for (int i = 0; i < 2; ++i)
            for (int64_t e = 0; e < packed->config().moe.numExperts; ++e)
                for (Module m : {Module::ExpertGateProj, Module::ExpertDownProj}) {
                    QVERIFY(torch::equal(packed->expertWeight(i, m, e), twin.model->expertWeight(i, m, e)));
                    QVERIFY(torch::equal(packed->expertBias(i, m, e), twin.model->expertBias(i, m, e)));
                }
        TraceOptions all;
        all.save = allValueKeys(*packed, true);
        for (const std::string run : {"single", "batch"}) {
            const TraceResult got = trace(*packed, twin.runs.at(run).batch, all);
            int compared = 0;
            for (const ValueKey& k : all.save) {
                const torch::Tensor a = got.value(k), b = twin.runs.at(run).value(k);
                if (!a.defined() && !b.defined()) continue;
                QVERIFY2(a.defined() && b.defined() && torch::equal(a, b), (run + " " + valuePath(packed->family(), k)).c_str());
                ++compared;
            }
            QVERIFY2(compared > 40, std::to_string(compared).c_str());  // every value of two blocks and the root
        }
    }

    /// gpt-oss's sinks stay visible: attention_probabilities keeps transformers' layout (rows sum to less than 1), the
    /// sink's share 1 - the row's sum equals softmax([scores | sink])'s last column recomputed from the stored sinks, and
    /// the head scores report it as sink_share (0 on a family without sinks).
    void gptOssSinksVisible() {
        Case& c = load("tiny-gpt-oss", "float32");
        const auto& r = c.runs.at("single");
        const auto& w = c.model->weights();
        double largest = 0;
        for (int i = 0; i < 2; ++i) {
            const torch::Tensor p = r.value({Value::AttentionProbabilities, i}), s = r.value({Value::AttentionScores, i}).to(torch::kFloat64);
            const torch::Tensor sinks = w.get("model.layers." + std::to_string(i) + ".self_attn.sinks").to(torch::kFloat64);
            const torch::Tensor full = torch::softmax(torch::cat({s, sinks.reshape({1, -1, 1, 1}).expand({s.size(0), -1, s.size(2), 1})}, -1), -1);
            NNSCOPE_COMPARE_TENSORS(attentionSinkShare(p), full.select(-1, s.size(-1)), 1e-5, 1e-6);
            QVERIFY((p.sum(-1) < 1 - 1e-3).any().item<bool>());
            largest = std::max(largest, attentionSinkShare(p).max().item<double>());
        }
        QVERIFY(largest > 0.1);
        const std::vector<HeadScore> scores = headScores(*c.model, r, 0);
        QCOMPARE(static_cast<int64_t>(scores.size()), 2 * c.model->config().numHeads);
        for (const HeadScore& h : scores) {
            const double want = attentionSinkShare(attentionPattern(*c.model, r, h.layer, 0)[h.head]).mean().item<double>();
            QVERIFY(std::abs(h.sinkShare - want) < 1e-9 && h.sinkShare > 0);
        }
        for (const HeadScore& h : headScores(*load("tiny-llama", "float32").model, load("tiny-llama", "float32").runs.at("single"), 0))
            QVERIFY(h.sinkShare < 1e-5);
    }

    /// The DeepSeek-style routers' quirks are really on in their fixtures: e_score_correction_bias changes the choice of
    /// some token (the weights stay the uncorrected scores), and the group limit excludes some expert a plain top-k of
    /// the corrected scores would take. The choice itself is compared with transformers' by valuesEqualTransformers.
    void groupRouterQuirksAreOn_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-glm4-moe", "tiny-deepseek-v3", "tiny-deepseek-v2"}) QTest::newRow(f) << QString(f);
    }
    void groupRouterQuirksAreOn() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const ModelConfig& cfg = c.model->config();
        const MoeConfig& moe = cfg.moe;
        QVERIFY(moe.router != RouterKind::SoftmaxTopK);
        bool biasMatters = false, groupsMatter = false;
        for (const std::string run : {"single", "batch"}) {
            const auto& r = c.runs.at(run);
            for (int i = 0; i < static_cast<int>(cfg.numLayers); ++i) {
                if (!cfg.sparseMlp(i)) continue;
                const auto logits = r.value({Value::RouterLogits, i}).to(torch::kFloat64).reshape({-1, moe.numExperts});
                const auto chosen = std::get<0>(r.value({Value::ExpertIndices, i}).reshape({-1, moe.topK}).sort(-1));
                torch::Tensor scores = moe.router == RouterKind::SigmoidGroupTopK ? torch::sigmoid(logits) : torch::softmax(logits, -1);
                if (moe.correctionBias) {
                    const auto plain = std::get<0>(std::get<1>(scores.topk(moe.topK, -1)).sort(-1));
                    biasMatters |= !torch::equal(plain, chosen);
                    scores = scores + c.model->layer(i)[Module::Router].correctionBias.to(torch::kFloat64);
                }
                const auto ungrouped = std::get<0>(std::get<1>(scores.topk(moe.topK, -1)).sort(-1));
                groupsMatter |= !torch::equal(ungrouped, chosen);
            }
        }
        if (moe.correctionBias) QVERIFY2(biasMatters, "the correction bias never changed a choice: the fixture does not show it");
        QVERIFY2(groupsMatter, "the group limit never changed a choice: the fixture does not show it");
    }

    /// The DeepSeek-style mixtures load from transformers' own stacked layout (mlp.experts.gate_up_proj [experts, 2 x
    /// moe_intermediate_size, hidden], mlp.experts.down_proj) as from the per-expert tensors save_pretrained writes, with the
    /// same logits; the router's correction bias is float32 whatever the file stores (the fixtures store bfloat16).
    void groupRouterStackedExpertsLoad_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-glm4-moe", "tiny-deepseek-v2"}) QTest::newRow(f) << QString(f);
    }
    void groupRouterStackedExpertsLoad() {
        QFETCH(QString, fixture);
        const std::string dir = test::fixture(fixture.toStdString());
        Case& c = load(fixture.toStdString(), "float32");
        const ModelConfig& cfg = c.model->config();
        const Family& f = c.model->family();
        SafetensorsFile file(dir + "/model.safetensors");
        std::map<std::string, torch::Tensor> tensors;
        for (const auto& [name, entry] : file.entries()) tensors[name] = file.tensor(name).clone();
        int stackedBlocks = 0;
        for (int i = 0; i < static_cast<int>(cfg.numLayers); ++i) {
            if (!cfg.sparseMlp(i)) continue;
            std::vector<torch::Tensor> gateUp, down;
            for (int64_t e = 0; e < cfg.moe.numExperts; ++e) {
                const std::string g = f.expertTensorName(Module::ExpertGateProj, i, e), u = f.expertTensorName(Module::ExpertUpProj, i, e),
                                  d = f.expertTensorName(Module::ExpertDownProj, i, e);
                gateUp.push_back(torch::cat({tensors.at(g), tensors.at(u)}, 0));
                down.push_back(tensors.at(d));
                tensors.erase(g), tensors.erase(u), tensors.erase(d);
            }
            const std::string experts = f.nativeModulePath(Module::Experts, i);
            tensors[experts + ".gate_up_proj"] = torch::stack(gateUp);
            tensors[experts + ".down_proj"] = torch::stack(down);
            ++stackedBlocks;
            if (cfg.moe.correctionBias)
                QCOMPARE(tensors.at(f.tensorName({Module::Router, Param::CorrectionBias}, i)).scalar_type(), torch::kBFloat16);
        }
        QVERIFY(stackedBlocks > 0);
        nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
        auto stacked = Model::fromTensors(config, tensors, LoadOptions().withDtype(torch::kFloat32), fixture.toStdString() + " (stacked)");
        QVERIFY(stacked->unusedTensors().empty());
        for (int i = 0; i < static_cast<int>(cfg.numLayers); ++i)
            if (cfg.sparseMlp(i) && cfg.moe.correctionBias)
                QCOMPARE(stacked->layer(i)[Module::Router].correctionBias.scalar_type(), torch::kFloat32);
        c10::InferenceMode g;
        const auto ids = c.golden->tensor("single.input_ids");
        QVERIFY(torch::equal(stacked->forward(ids, {}, nullptr), c.model->forward(ids, {}, nullptr)));
        NNSCOPE_COMPARE_TENSORS(stacked->forward(ids, {}, nullptr), c.golden->tensor("single.logits"), kF32Rtol, kF32Atol);
    }

    /// A DeepSeek-style config transformers cannot route is refused, naming config.json and the key.
    void groupRouterConfigRefusals_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");  // JSON
        QTest::newRow("v2 unknown topk_method") << "tiny-deepseek-v2" << "topk_method" << "\"noaux_tc\"";
        QTest::newRow("v2 groups do not divide") << "tiny-deepseek-v2" << "n_group" << "3";
        QTest::newRow("v2 no experts per token") << "tiny-deepseek-v2" << "num_experts_per_tok" << "null";
        QTest::newRow("v3 groups of one") << "tiny-deepseek-v3" << "n_group" << "8";
        QTest::newRow("v3 kv heads") << "tiny-deepseek-v3" << "num_key_value_heads" << "1";
        QTest::newRow("v3 odd rope dim") << "tiny-deepseek-v3" << "qk_rope_head_dim" << "7";
        QTest::newRow("glm top k past the groups") << "tiny-glm4-moe" << "num_experts_per_tok" << "5";
    }
    void groupRouterConfigRefusals() {
        QFETCH(QString, fixture);
        QFETCH(QString, key);
        QFETCH(QString, value);
        nlohmann::json config = nlohmann::json::parse(std::ifstream(test::fixture(fixture.toStdString()) + "/config.json"));
        config[key.toStdString()] = nlohmann::json::parse(value.toStdString());
        try {
            resolveModelConfig(config, "x/config.json");
            QFAIL("accepted");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("x/config.json") != std::string::npos, m.c_str());
            QVERIFY2(m.find(key.toStdString()) != std::string::npos || (key == "n_group" && m.find("n_routed_experts") != std::string::npos) ||
                         (key == "num_experts_per_tok" && m.find("num_experts_per_tok") != std::string::npos),
                     m.c_str());
        }
    }

    /// Multi-head latent attention's shapes: queries and keys qk_nope_head_dim + qk_rope_head_dim wide per head, values
    /// v_head_dim, one shared rotary key part, and the latents as wide as the config says.
    void latentAttentionShapes_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-deepseek-v3", "tiny-deepseek-v3-qproj", "tiny-deepseek-v2"}) QTest::newRow(f) << QString(f);
    }
    void latentAttentionShapes() {
        QFETCH(QString, fixture);
        Case& c = load(fixture.toStdString(), "float32");
        const ModelConfig& cfg = c.model->config();
        const MlaConfig& a = cfg.mla;
        QVERIFY(a.enabled);
        const auto& r = c.runs.at("single");
        const int64_t s = r.batch.inputIds.size(1), N = cfg.numHeads;
        QCOMPARE(r.value({Value::AttentionQueries, 0}).sizes().vec(), (std::vector<int64_t>{1, N, s, a.qkNopeHeadDim + a.qkRopeHeadDim}));
        QCOMPARE(r.value({Value::AttentionKeys, 0}).sizes().vec(), (std::vector<int64_t>{1, N, s, a.qkNopeHeadDim + a.qkRopeHeadDim}));
        QCOMPARE(r.value({Value::AttentionValues, 0}).sizes().vec(), (std::vector<int64_t>{1, N, s, a.vHeadDim}));
        QCOMPARE(r.value({Value::KeyRope, 0}).sizes().vec(), (std::vector<int64_t>{1, 1, s, a.qkRopeHeadDim}));
        QCOMPARE(r.value({Value::KvLatent, 0}).sizes().vec(), (std::vector<int64_t>{1, s, a.kvLoraRank}));
        QCOMPARE(r.value({Value::QLatent, 0}).defined(), a.qLoraRank > 0);
        QCOMPARE(c.model->hasValue(Value::QLatent), a.qLoraRank > 0);
        QCOMPARE(c.model->hasValue(Value::NativeQProjOutput), a.qLoraRank == 0);
        // every head's key ends with the one shared rotary part
        const auto keys = r.value({Value::AttentionKeys, 0});
        for (int64_t h = 0; h < N; ++h)
            QVERIFY(torch::equal(keys.index({0, h, Slice(), Slice(a.qkNopeHeadDim, None)}), r.value({Value::KeyRope, 0}).index({0, 0})));
    }

    void unknownModelTypeNamesTheFamilies() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        std::ofstream(dir.filePath("config.json").toStdString()) << R"({"model_type": "bloom", "architectures": ["BloomForCausalLM"]})";
        try {
            Model::load(dir.path().toStdString());
            QFAIL("an unknown model_type loaded");
        } catch (const Error& e) {
            const std::string m = e.what();
            for (const char* f : {"bloom", "llama", "arcee", "apertus", "ernie4_5", "persimmon", "qwen2", "qwen3", "mistral", "gemma2",
                                  "gemma3_text", "olmo2", "gpt_neox", "gpt2", "phi3", "families/bloom.cpp", "config.json"})
                QVERIFY2(m.find(f) != std::string::npos, m.c_str());
            // short enough for the command line to print whole (it cuts a message past 500 characters in its middle,
            // which cut the list of families when each architecture stood beside its model_type)
            QVERIFY2(m.size() - dir.path().size() <= 480, m.c_str());
        }
    }

    void cleanupTestCase() { cases().clear(); }
};

NNSCOPE_TEST_SUITE(TestFamilies, "test_families")
#include "test_families.moc"
