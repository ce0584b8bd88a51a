// SPDX-License-Identifier: MIT
// Every standard value of every family against HuggingFace transformers (tests/fixtures/models/*/golden_*.safetensors,
// written by tests/fixtures/make_fixtures.py), and the checks of the seeds' notes on the matching fixture.
#include "core/analysis/analysis.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"
#include "core/io/tracefile.h"
#include "core/pages/support.h"
#include "core/run/trace.h"
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
            if (e.name.find("moe") != std::string::npos || e.name.find("mixtral") != std::string::npos)
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
            if (cfg.moe.normTopkProb) NNSCOPE_COMPARE_TENSORS(w.sum(-1), torch::ones_like(w.sum(-1)), 1e-6, 1e-6);
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
        }
    }

    void cleanupTestCase() { cases().clear(); }
};

NNSCOPE_TEST_SUITE(TestFamilies, "test_families")
#include "test_families.moc"
