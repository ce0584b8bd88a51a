// SPDX-License-Identifier: MIT
//
// The checks behind the family notes (core/pages/checks.h). Each check reads the values of one traced pass and compares
// them against a recomputation that does not go through the engine's code: float64 arithmetic on the tensors as the
// checkpoint file stores them (WeightStore), the formulas written out here (xIELU, the rotary frequencies of every
// rope type, RMSNorm/LayerNorm per head), or the claim's own constants (beta 0.5, one radian at position 1). Where a
// note says "exactly", the comparison uses torch.testing.assert_close's default tolerance for the compute dtype (the
// seeds' checks use assert_close); where the recomputation adds in another order, the bound is 1e-5 of the largest
// expected value in float32 (2e-2 in bfloat16). Every figure says which.
#include "core/pages/checks.h"

#include "core/run/edit.h"
#include "core/model/error.h"
#include "core/run/trace.h"

#include <torch/types.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace torch::indexing;

namespace nnscope {
namespace {

using T = torch::Tensor;

// ---------------------------------------------------------------------------------------------------------------
// Formatting

std::string num(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return "0";
    const double a = std::fabs(v);
    char buf[64];
    if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.2g", v);
    else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3g", v);
    else if (a >= 1000) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

std::string pct(double fraction) {
    char buf[32];
    const double p = 100.0 * fraction;
    if (p != 0 && p < 0.1) std::snprintf(buf, sizeof buf, "%.2g%%", p);
    else std::snprintf(buf, sizeof buf, "%.1f%%", p);
    return buf;
}

std::string joinNums(const std::vector<double>& v, size_t maxItems = 12) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i == maxItems) {
            s += " … (" + std::to_string(v.size()) + " in all)";
            break;
        }
        s += (i ? ", " : "") + num(v[i]);
    }
    return s;
}

std::string blocksText(int64_t n) { return std::to_string(n) + (n == 1 ? " block" : " blocks"); }

// ---------------------------------------------------------------------------------------------------------------
// Comparison

/// The outcome of comparing an engine value with its expectation.
struct Cmp {
    double maxAbs = 0;
    bool finite = true;
    bool ok = true;
};

/// Elementwise |a - b| <= atol + rtol * |b| (torch.testing.assert_close), in float64, NaN/inf failing.
Cmp compareClose(const T& actual, const T& expected, double rtol, double atol) {
    Cmp c;
    auto a = actual.to(torch::kFloat64), b = expected.to(torch::kFloat64);
    if (a.sizes() != b.sizes()) throw Error("internal: comparing tensors of different shapes");
    if (a.numel() == 0) return c;
    c.finite = a.isfinite().all().item<bool>() && b.isfinite().all().item<bool>();
    auto d = (a - b).abs();
    c.maxAbs = c.finite ? d.max().item<double>() : std::numeric_limits<double>::quiet_NaN();
    c.ok = c.finite && (d <= atol + rtol * b.abs()).all().item<bool>();
    return c;
}

/// "Exactly" as the seeds' assert_close checks it: the default tolerance of the compute dtype.
Cmp compareExact(const T& actual, const T& expected, torch::ScalarType dtype) {
    if (dtype == torch::kBFloat16) return compareClose(actual, expected, 1.6e-2, 1e-5);
    return compareClose(actual, expected, 1.3e-6, 1e-5);
}

/// Tolerance of a recomputation that adds in another order, relative to the largest expected value.
double recomputeTol(torch::ScalarType dtype) { return dtype == torch::kBFloat16 ? 2e-2 : 1e-5; }

Cmp compareRecomputed(const T& actual, const T& expected, torch::ScalarType dtype) {
    const double scale = expected.numel() ? std::max(1.0, expected.abs().max().item<double>()) : 1.0;
    return compareClose(actual, expected, 0.0, recomputeTol(dtype) * (std::isfinite(scale) ? scale : 1.0));
}

/// Merges the comparisons of several blocks: the worst difference, ok only if all are.
void merge(Cmp& into, const Cmp& c) {
    into.finite = into.finite && c.finite;
    into.ok = into.ok && c.ok;
    if (!c.finite || std::isnan(into.maxAbs)) into.maxAbs = std::numeric_limits<double>::quiet_NaN();
    else into.maxAbs = std::max(into.maxAbs, c.maxAbs);
}

std::string dtypeWord(torch::ScalarType t) { return dtypeName(t); }

std::string exactText(const Cmp& c, torch::ScalarType dtype) {
    if (!c.finite) return "non-finite values (NaN or inf)";
    if (c.maxAbs == 0) return "max |diff| 0 (exact, " + dtypeWord(dtype) + ")";
    return "max |diff| " + num(c.maxAbs) + " (assert_close tolerance, " + dtypeWord(dtype) + ")";
}

std::string recomputedText(const Cmp& c, torch::ScalarType dtype) {
    if (!c.finite) return "non-finite values (NaN or inf)";
    std::string tol = dtype == torch::kBFloat16 ? "2e-2" : "1e-5";
    return "max |diff| " + num(c.maxAbs) + " (float64 recomputation, bound " + tol + " × the largest value)";
}

// ---------------------------------------------------------------------------------------------------------------
// Independent formulas (float64)

double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

/// Rows of a [rows, cols] tensor that fit in 64 MiB of float64: a large matrix (an 8B model's lm_head) is converted a
/// block of rows at a time, never whole.
int64_t rowBlock(const T& w) { return std::max<int64_t>(1, (int64_t(1) << 26) / std::max<int64_t>(1, w.numel() / std::max<int64_t>(1, w.size(0)) * 8)); }

/// x [..., in] times w [out, in] plus b, in float64, whatever dtype x, w and b have.
T linear64(const T& x, const T& w, const T& b) {
    const auto xx = x.to(torch::kFloat64);
    const int64_t out = w.size(0), step = rowBlock(w);
    std::vector<T> parts;
    for (int64_t r = 0; r < out; r += step)
        parts.push_back(torch::matmul(xx, w.index({Slice(r, std::min(out, r + step))}).to(torch::kFloat64).t()));
    T y = parts.size() == 1 ? parts.front() : torch::cat(parts, -1);
    if (b.defined()) y = y + b.to(torch::kFloat64);
    return y;
}

/// max |a - b| of two equally shaped matrices, a block of rows at a time in float64.
double maxAbsDiff(const T& a, const T& b) {
    double m = 0;
    const int64_t n = a.size(0), step = rowBlock(a);
    for (int64_t r = 0; r < n; r += step) {
        const auto sl = Slice(r, std::min(n, r + step));
        m = std::max(m, (a.index({sl}).to(torch::kFloat64) - b.index({sl}).to(torch::kFloat64)).abs().max().item<double>());
    }
    return m;
}

T rmsNorm64(const T& x, const T& gain, double eps) {
    auto h = x.to(torch::kFloat64);
    h = h / torch::sqrt(h.pow(2).mean(-1, true) + eps);
    return gain.defined() ? h * gain.to(torch::kFloat64) : h;
}

T layerNorm64(const T& x, const T& w, const T& b, double eps) {
    auto h = x.to(torch::kFloat64);
    auto mu = h.mean(-1, true);
    auto var = (h - mu).pow(2).mean(-1, true);
    h = (h - mu) / torch::sqrt(var + eps);
    if (w.defined()) h = h * w.to(torch::kFloat64);
    if (b.defined()) h = h + b.to(torch::kFloat64);
    return h;
}

/// The activation `name` written out in float64 (transformers' ACT2FN formulas). xIELU takes its scalars from
/// `xielu` (effective alpha_p, alpha_n, beta, eps). Throws nnscope::Error for a name it does not know.
T activation64(const std::string& name, const T& xIn, const double* xielu = nullptr) {
    auto x = xIn.to(torch::kFloat64);
    if (name == "silu" || name == "swish") return x * torch::sigmoid(x);
    if (name == "gelu") return 0.5 * x * (1.0 + torch::erf(x / std::sqrt(2.0)));
    if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_python_tanh")
        return 0.5 * x * (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))));
    if (name == "gelu_fast") return 0.5 * x * (1.0 + torch::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
    if (name == "quick_gelu") return x * torch::sigmoid(1.702 * x);
    if (name == "relu") return torch::relu(x);
    if (name == "relu2") return torch::relu(x).pow(2);
    if (name == "relu6") return torch::clamp(x, 0, 6);
    if (name == "sigmoid") return torch::sigmoid(x);
    if (name == "tanh") return torch::tanh(x);
    if (name == "linear") return x;
    if (name == "xielu" && xielu) {
        const double ap = xielu[0], an = xielu[1], beta = xielu[2], eps = xielu[3];
        return torch::where(x > 0, ap * x * x + beta * x, an * (torch::expm1(torch::clamp_max(x, eps)) - x) + beta * x);
    }
    throw Error("no independent formula for hidden_act \"" + name + "\"");
}

/// The rotary inverse frequencies of `rope` for a rotating width `dim`, in float64, written out from transformers'
/// modeling_rope_utils (default, linear, llama3, yarn), and the factor cos and sin are scaled by.
T invFreq64(const RopeConfig& rope, int64_t dim, int64_t maxPos, double* attentionScale, int64_t positions = 0) {
    *attentionScale = 1.0;
    const auto half = dim / 2;
    auto i = torch::arange(half, torch::TensorOptions().dtype(torch::kFloat64));
    auto posFreqs = torch::pow(rope.theta, 2.0 * i / static_cast<double>(dim));
    T inv = 1.0 / posFreqs;
    if (rope.type == "default") return inv;
    if (rope.type == "linear") return inv / rope.factor.value_or(1.0);
    if (rope.type == "longrope") {
        // _compute_longrope_parameters: 1 / (ext_factors * base ** (2i / dim)), short_factor while the pass covers at most
        // original_max_position_embeddings positions, long_factor past it; cos and sin times sqrt(1 + ln(factor) / ln(original)).
        const double original = static_cast<double>(rope.originalMaxPositionEmbeddings);
        const double factor = rope.factor ? *rope.factor : static_cast<double>(maxPos) / original;
        if (rope.attentionFactor) *attentionScale = *rope.attentionFactor;
        else *attentionScale = factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(original));
        const std::vector<double>& ext = positions > rope.originalMaxPositionEmbeddings ? rope.longFactor : rope.shortFactor;
        if (static_cast<int64_t>(ext.size()) != half) return inv;  // the loader refuses such a config before any check runs
        return 1.0 / (torch::tensor(ext, torch::TensorOptions().dtype(torch::kFloat64)) * posFreqs);
    }
    if (rope.type == "llama3") {
        const double factor = rope.factor.value_or(8.0), low = rope.lowFreqFactor.value_or(1.0), high = rope.highFreqFactor.value_or(4.0);
        const double old = static_cast<double>(rope.originalMaxPositionEmbeddings);
        auto wavelen = 2 * M_PI / inv;
        auto out = inv.clone();
        auto acc = out.accessor<double, 1>();
        auto wl = wavelen.accessor<double, 1>();
        for (int64_t k = 0; k < half; ++k) {
            const double f = acc[k], w = wl[k];
            if (w < old / high) continue;                      // high frequency: kept
            if (w > old / low) { acc[k] = f / factor; continue; }  // low frequency: divided
            const double smooth = (old / w - low) / (high - low);
            acc[k] = (1 - smooth) * f / factor + smooth * f;      // in between: blended
        }
        return out;
    }
    if (rope.type == "yarn") {
        const double orig = static_cast<double>(rope.originalMaxPositionEmbeddings);
        const double factor = rope.factor ? *rope.factor : static_cast<double>(maxPos) / orig;
        auto mscale = [](double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0; };
        if (rope.attentionFactor) *attentionScale = *rope.attentionFactor;
        else if (rope.mscale && rope.mscaleAllDim && *rope.mscale != 0 && *rope.mscaleAllDim != 0)
            *attentionScale = mscale(factor, *rope.mscale) / mscale(factor, *rope.mscaleAllDim);
        else *attentionScale = mscale(factor, 1.0);
        const double betaFast = rope.betaFast && *rope.betaFast != 0 ? *rope.betaFast : 32.0;
        const double betaSlow = rope.betaSlow && *rope.betaSlow != 0 ? *rope.betaSlow : 1.0;
        auto corr = [&](double rotations) {
            return static_cast<double>(dim) * std::log(orig / (rotations * 2 * M_PI)) / (2 * std::log(rope.theta));
        };
        double lo = corr(betaFast), hi = corr(betaSlow);
        if (rope.truncate) {
            lo = std::floor(lo);
            hi = std::ceil(hi);
        }
        lo = std::max(lo, 0.0);
        hi = std::min(hi, static_cast<double>(dim - 1));
        if (lo == hi) hi += 0.001;
        auto ramp = torch::clamp((i - lo) / (hi - lo), 0, 1);
        auto extrapolation = 1 - ramp;
        return (1.0 / (factor * posFreqs)) * (1 - extrapolation) + inv * extrapolation;
    }
    throw Error("no independent formula for rope_type \"" + rope.type + "\"");
}

/// Turns the first `rot` dimensions of x [b, heads, seq, D] (float64) at positions 0..seq-1 with `style`'s pairing:
/// RotateHalf pairs (i, i + rot/2), AdjacentPairs pairs (2i, 2i + 1); the rest passes unchanged.
T rotate64(const T& x, const T& invFreq, double scale, RotaryStyle style, int64_t rot) {
    const int64_t s = x.size(2), D = x.size(3), half = rot / 2;
    auto pos = torch::arange(s, torch::TensorOptions().dtype(torch::kFloat64));
    auto ang = pos.unsqueeze(-1) * invFreq.unsqueeze(0);  // [s, half]
    auto c = ang.cos() * scale, sn = ang.sin() * scale;
    auto xr = x.index({"...", Slice(0, rot)});
    T out;
    if (style == RotaryStyle::RotateHalf) {
        auto x1 = xr.index({"...", Slice(0, half)}), x2 = xr.index({"...", Slice(half, rot)});
        out = torch::cat({x1 * c - x2 * sn, x2 * c + x1 * sn}, -1);
    } else {
        auto x1 = xr.index({"...", Slice(0, None, 2)}), x2 = xr.index({"...", Slice(1, None, 2)});
        out = torch::stack({x1 * c - x2 * sn, x2 * c + x1 * sn}, -1).flatten(-2);
    }
    if (rot < D) out = torch::cat({out, x.index({"...", Slice(rot, None)}).to(torch::kFloat64)}, -1);
    return out;
}

std::string pairingText(RotaryStyle style, int64_t rot) {
    if (style == RotaryStyle::AdjacentPairs) return "adjacent pairs (2i, 2i + 1)";
    return "rotate_half pairs (i, i + " + std::to_string(rot / 2) + ")";
}

RotaryStyle otherStyle(RotaryStyle s) {
    return s == RotaryStyle::RotateHalf ? RotaryStyle::AdjacentPairs : RotaryStyle::RotateHalf;
}

// ---------------------------------------------------------------------------------------------------------------
// The context of one run

struct Ctx {
    const Model& m;
    const ModelConfig& c;
    const Family& f;
    std::string prompt;
    Batch batch;
    std::map<ValueKey, T> values;
    int L = 0;
    int64_t S = 0;

    torch::ScalarType dt() const { return m.dtype(); }
    /// The saved value (compute dtype). Throws when the pass did not keep it.
    T v(Value val, int layer = -1) const {
        auto it = values.find({val, layer});
        if (it == values.end())
            throw Error("internal: the checks' pass did not keep " + valuePath(f, {val, layer}));
        return it->second;
    }
    /// A tensor as the checkpoint file stores it (its own dtype, a view of the mapped file: the checks convert what they
    /// read to float64 themselves), or undefined when the family has no such name or the file lacks it.
    T stored(ParamKey w, int layer = -1) const {
        const std::string name = f.tensorName(w, layer);
        if (name.empty() || !m.weights().contains(name)) return {};
        T t = m.weights().get(name);
        // GPT-2's Conv1D stores projections [in, out]: the checks read nn.Linear's [out, in], as the forward does.
        const bool rootMatrix = moduleHost(w.module) == Host::Model;
        return f.conv1dWeights && t.dim() == 2 && !rootMatrix ? t.t() : t;
    }
    /// A stored bias, but only where the model applies one (LayerWeights has it).
    T storedIf(ParamKey w, int layer, const T& engineTensor) const { return engineTensor.defined() ? stored(w, layer) : T(); }
    /// The queries (or keys) entering the rotary: [b, heads, seq, D], float64, read from the native taps.
    T preRotary(int layer, bool keys) const {
        const int64_t b = batch.inputIds.size(0), D = c.headDim;
        if (c.mla.enabled) {
            // multi-head latent attention: the rope parts before the rotary, recomputed from the stored projections —
            // each query head's last qk_rope_head_dim dims, and kv_a_proj_with_mqa's last outputs [b, 1, s, rope]
            const MlaConfig& a = c.mla;
            if (keys) {
                const T compressed = linear64(v(Value::AttentionNormOutput, layer), stored(ParamKey{Module::KvAProjWithMqa}, layer),
                                              storedIf(ParamKey{Module::KvAProjWithMqa, Param::Bias}, layer, m.layer(layer)[Module::KvAProjWithMqa].bias));
                return compressed.narrow(-1, a.kvLoraRank, a.qkRopeHeadDim).unsqueeze(1);
            }
            const T q = a.qLoraRank > 0 ? linear64(v(Value::QLatent, layer), stored(ParamKey{Module::QBProj}, layer), T())
                                        : v(Value::NativeQProjOutput, layer).to(torch::kFloat64);
            return q.view({b, S, c.numHeads, c.qkHeadDim()}).transpose(1, 2).narrow(-1, a.qkNopeHeadDim, a.qkRopeHeadDim);
        }
        if (c.qkNorm) {
            T t = v(keys ? Value::NativeKNormOutput : Value::NativeQNormOutput, layer);
            // the fused family norms [b, s, H, D] before the transpose; the others norm [b, H, s, D] after it
            if (f.qkNormScope == QkNormScope::WholeProjection) t = t.view({b, S, -1, D});  // OLMo 2: [b, s, heads * D]
            if (f.qkv == QkvLayout::FusedPerHead || f.qkNormScope != QkNormScope::PerHeadTransposed) t = t.transpose(1, 2);
            return t.to(torch::kFloat64);
        }
        if (f.qkv == QkvLayout::FusedPerHead) {
            T qkv = v(Value::NativeQkvProjOutput, layer).view({b, S, c.numHeads, 3, D});
            return qkv.index({"...", keys ? 1 : 0, Slice()}).transpose(1, 2).to(torch::kFloat64);
        }
        if (f.qkv == QkvLayout::FusedContiguous) {  // GPT-2's c_attn, Phi-3's qkv_proj: [q | k | v]
            const int64_t QW = c.numHeads * D, KW = c.numKvHeads * D;
            T qkv = v(Value::NativeQkvProjOutput, layer);
            T p = keys ? qkv.index({"...", Slice(QW, QW + KW)}) : qkv.index({"...", Slice(None, QW)});
            return p.reshape({b, S, -1, D}).transpose(1, 2).to(torch::kFloat64);
        }
        T p = v(keys ? Value::NativeKProjOutput : Value::NativeQProjOutput, layer);
        return p.view({b, S, -1, D}).transpose(1, 2).to(torch::kFloat64);
    }
    /// The value that holds the queries/keys entering the rotary, for the save list.
    std::vector<Value> preRotaryValues() const {
        if (c.mla.enabled)
            return {Value::AttentionNormOutput, c.mla.qLoraRank > 0 ? Value::QLatent : Value::NativeQProjOutput, Value::QueryRope, Value::KeyRope};
        if (c.qkNorm) return {Value::NativeQNormOutput, Value::NativeKNormOutput};
        if (f.qkv != QkvLayout::Separate) return {Value::NativeQkvProjOutput};
        return {Value::NativeQProjOutput, Value::NativeKProjOutput};
    }
    std::string preRotaryName() const {
        if (c.mla.enabled)
            return "the rope parts of " + f.moduleName(c.mla.qLoraRank > 0 ? Module::QBProj : Module::QProj) + "'s and " +
                   f.moduleName(Module::KvAProjWithMqa) + "'s outputs";
        if (c.qkNorm) return f.moduleName(Module::QNorm) + "'s output";
        if (f.qkv != QkvLayout::Separate) return "the query slices of " + f.moduleName(Module::QkvProj) + "'s output";
        return f.moduleName(Module::QProj) + "'s output";
    }
    /// Effective xIELU scalars of a block from the stored raw parameters: {alpha_p, alpha_n, beta, eps} with the
    /// note's beta 0.5 and eps -1e-6.
    std::array<double, 4> xielu(int layer) const {
        T rp = stored(ParamKey{Module::ActFn, Param::AlphaP}, layer), rn = stored(ParamKey{Module::ActFn, Param::AlphaN}, layer);
        if (!rp.defined() || !rn.defined()) throw Error("the checkpoint stores no xIELU alpha_p/alpha_n for block " + std::to_string(layer));
        const double beta = 0.5;
        return {softplus(rp.flatten()[0].item<double>()), beta + softplus(rn.flatten()[0].item<double>()), beta, -1e-6};
    }
};

CheckResult claim(bool ok, std::string figure, std::string detail = {}) {
    CheckResult r;
    r.passed = ok;
    r.figure = std::move(figure);
    r.detail = std::move(detail);
    return r;
}

CheckResult skipped(std::string why) {
    CheckResult r;
    r.passed = true;
    r.kind = CheckKind::Skipped;
    r.figure = "not run on this checkpoint";
    r.detail = std::move(why);
    return r;
}

std::vector<std::string> splitArg(const std::string& arg, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(arg);
    std::string item;
    while (std::getline(ss, item, sep))
        if (!item.empty()) out.push_back(item);
    return out;
}

const T* layerTensor(const LayerWeights& lw, ParamKey w) { return &lw[w.module][w.param]; }

/// Every stored tensor name the model reads: the loader's own account (Model::unusedTensors, from the weight schema).
std::set<std::string> namesRead(const Model& m) {
    std::set<std::string> read;
    for (const auto& n : m.weights().names()) read.insert(n);
    for (const auto& n : m.unusedTensors()) read.erase(n);
    return read;
}

// ---------------------------------------------------------------------------------------------------------------
// The checks

CheckResult checkContributionIdentity(Ctx& x, const std::string&) {
    Cmp sum, attn, mlp;
    int sparseBlocks = 0;
    // Gemma and OLMo 2 norm each branch's output before the add: the stream receives the norms' outputs.
    const bool attnNormed = x.f.blockNorms.afterAttention, mlpNormed = x.f.blockNorms.afterMlp;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T in = x.v(Value::LayerInput, i), a = x.v(Value::AttentionOutput, i), mo = x.v(Value::MlpOutput, i);
        T out = x.v(Value::LayerOutput, i);
        T added = attnNormed ? x.v(Value::NativeAttentionOutputNormOutput, i) : a;
        T mlpAdded = mlpNormed ? x.v(Value::NativeMlpOutputNormOutput, i) : mo;
        // GPT-NeoX's parallel residual sums mlp + attention + input, in that order
        merge(sum, compareExact(x.c.parallelResidual ? (mlpAdded + added) + in : (in + added) + mlpAdded, out, x.dt()));
        // the contributions are the output projections' outputs: nothing (no post-norm, no scale) in between
        T premix = x.v(Value::AttentionPremix, i);
        T premixFlat = premix.reshape({premix.size(0), premix.size(1), -1});
        merge(attn, compareRecomputed(a, linear64(premixFlat, x.stored(ParamKey{Module::OProj}, i), x.storedIf(ParamKey{Module::OProj, Param::Bias}, i, lw[Module::OProj].bias)), x.dt()));
        if (x.f.experts && x.c.sparseMlp(i)) {
            ++sparseBlocks;  // a mixture's output is its experts' weighted sum: routed_is_weighted_sum checks it
            continue;
        }
        merge(mlp, compareRecomputed(mo, linear64(x.v(Value::MlpNeurons, i), x.stored(ParamKey{Module::DownProj}, i),
                                                  x.storedIf(ParamKey{Module::DownProj, Param::Bias}, i, lw[Module::DownProj].bias)), x.dt()));
    }
    const std::string o = x.f.moduleName(Module::OProj), d = x.f.moduleName(Module::DownProj);
    const std::string an = attnNormed ? x.f.moduleName(Module::AttentionOutputNorm) + "(attention_output)" : "attention_output";
    const std::string mn = mlpNormed ? x.f.moduleName(Module::MlpOutputNorm) + "(mlp_output)" : "mlp_output";
    std::string fig = "layer_input + " + an + " + " + mn + " vs layer_output: " + exactText(sum, x.dt()) + ", " + blocksText(x.L);
    std::string det = "attention_output = " + o + "(attention_premix) recomputed from the stored weight: " + recomputedText(attn, x.dt()) +
                      ". mlp_output = " + d + "(mlp_neurons): " + recomputedText(mlp, x.dt()) + ".";
    if (attnNormed || mlpNormed)
        det += " The stream receives the normed outputs, so layer_input + attention_output + mlp_output alone is not layer_output.";
    if (sparseBlocks)
        det += " " + std::to_string(sparseBlocks) + " of the blocks have experts: there mlp_output is the experts' weighted sum "
               "(routed_is_weighted_sum), not one down projection.";
    return claim(sum.ok && attn.ok && mlp.ok, fig, det);
}

/// The blocks whose MLP is a mixture of experts.
std::vector<int> sparseBlocks(const Ctx& x) {
    std::vector<int> out;
    for (int i = 0; i < x.L; ++i)
        if (x.f.experts && x.c.sparseMlp(i)) out.push_back(i);
    return out;
}

CheckResult checkRouterTopk(Ctx& x, const std::string&) {
    const std::vector<int> blocks = sparseBlocks(x);
    if (blocks.empty()) return skipped("no block of this checkpoint has experts");
    Cmp logits, weights;
    bool sameChoice = true;
    double smallestSum = 1e9;
    const int64_t k = x.c.moe.topK;
    const bool topkFirst = x.c.moe.router == RouterKind::TopKThenSoftmax;
    for (int i : blocks) {
        // the router's logits from the stored router weight (and bias) and the MLP's input, then top-k and softmax in float64
        const T rl = linear64(x.v(Value::MlpInput, i), x.stored(ParamKey{Module::Router}, i),
                              x.c.moe.routerBias ? x.stored(ParamKey{Module::Router, Param::Bias}, i) : T());
        merge(logits, compareRecomputed(x.v(Value::RouterLogits, i), rl, x.dt()));
        const T logits64 = x.v(Value::RouterLogits, i).to(torch::kFloat64);
        T top, idx;
        if (topkFirst) {  // gpt-oss: the top k logits, then a softmax over those k alone
            std::tie(top, idx) = logits64.topk(k, -1);
            smallestSum = std::min(smallestSum, std::get<0>(torch::softmax(logits64, -1).topk(k, -1)).sum(-1).min().item<double>());
            top = torch::softmax(top, -1);
        } else {
            const T p = torch::softmax(logits64, -1);
            std::tie(top, idx) = p.topk(k, -1);
            smallestSum = std::min(smallestSum, top.sum(-1).min().item<double>());
            if (x.c.moe.normTopkProb) top = top / top.sum(-1, true);
        }
        sameChoice = sameChoice && torch::equal(idx, x.v(Value::ExpertIndices, i).to(torch::kInt64));
        merge(weights, compareRecomputed(x.v(Value::ExpertWeights, i), top, x.dt()));
    }
    const std::string fig = "the top " + std::to_string(k) + " of " + std::to_string(x.c.moe.numExperts) + " experts: " +
                            (sameChoice ? "the same choice" : "another choice") + " in " + blocksText(static_cast<int64_t>(blocks.size())) +
                            "; weights " + recomputedText(weights, x.dt());
    const std::string how = topkFirst ? "expert_indices against the top-" + std::to_string(k) + " of router_logits in float64; expert_weights "
                                        "against the softmax of those " + std::to_string(k) + " logits alone"
                                      : "expert_indices against the top-" + std::to_string(k) + " of softmax(router_logits) in float64; expert_weights "
                                        "against those probabilities" + std::string(x.c.moe.normTopkProb ? " divided by their sum (norm_topk_prob)" : " as they are");
    const std::string det = "router_logits against mlp_input · routerᵀ" + std::string(x.c.moe.routerBias ? " + bias" : "") +
                            " from the stored router weight: " + recomputedText(logits, x.dt()) + ". " + how +
                            ". Of the softmax over every expert, the chosen experts held at least " + pct(smallestSum) + ".";
    return claim(logits.ok && weights.ok && sameChoice, fig, det);
}

/// One expert's output for rows [n, hidden_size] in float64, from the weights Model::expertWeight reads (the mapped file's
/// per-expert tensors, or this expert's MXFP4 blocks dequantized) and the formulas written out here.
T expert64(const Ctx& x, int layer, int64_t e, const T& rows) {
    if (x.f.expertMlp == ExpertMlp::ClampedSwiGlu) {
        const double limit = x.c.moe.swigluLimit, alpha = x.c.moe.swigluAlpha;
        const T gu = linear64(rows, x.m.expertWeight(layer, Module::ExpertGateProj, e), x.m.expertBias(layer, Module::ExpertGateProj, e));
        const T gate = gu.index({"...", Slice(0, None, 2)}).clamp_max(limit);
        const T up = gu.index({"...", Slice(1, None, 2)}).clamp(-limit, limit);
        return linear64((up + 1) * gate * torch::sigmoid(alpha * gate), x.m.expertWeight(layer, Module::ExpertDownProj, e),
                        x.m.expertBias(layer, Module::ExpertDownProj, e));
    }
    return linear64(activation64(x.c.hiddenAct, linear64(rows, x.m.expertWeight(layer, Module::ExpertGateProj, e), T())) *
                        linear64(rows, x.m.expertWeight(layer, Module::ExpertUpProj, e), T()),
                    x.m.expertWeight(layer, Module::ExpertDownProj, e), T());
}

/// DeepSeek V2/V3 and GLM-4.5's routers, recomputed in float64 from router_logits and the stored correction bias: the
/// scores (sigmoid, or softmax for DeepSeek V2), the best topk_group groups, the top k inside them (as a set: transformers'
/// top-k is unsorted), and the weights.
CheckResult checkRouterGroups(Ctx& x, const std::string&) {
    const std::vector<int> blocks = sparseBlocks(x);
    if (blocks.empty()) return skipped("no block of this checkpoint has experts");
    const MoeConfig& moe = x.c.moe;
    if (moe.router == RouterKind::SoftmaxTopK) return skipped("this router takes the top k of a softmax: router_topk checks it");
    const bool sigmoid = moe.router == RouterKind::SigmoidGroupTopK;
    const bool grouped = sigmoid || moe.groupLimited;
    const int64_t E = moe.numExperts, G = moe.numGroups, k = moe.topK;
    Cmp logits, weights;
    bool sameChoice = true, inGroups = true;
    int64_t tokens = 0;
    for (int i : blocks) {
        merge(logits, compareRecomputed(x.v(Value::RouterLogits, i), linear64(x.v(Value::MlpInput, i), x.stored(ParamKey{Module::Router}, i), T()), x.dt()));
        const T rl = x.v(Value::RouterLogits, i).to(torch::kFloat64).reshape({-1, E});
        const T scores = sigmoid ? torch::sigmoid(rl) : torch::softmax(rl, -1);
        T choice = scores;
        if (sigmoid) {
            const T bias = x.stored(ParamKey{Module::Router, Param::CorrectionBias}, i);
            if (bias.defined()) choice = choice + bias.to(torch::kFloat64);
        }
        const T idx = x.v(Value::ExpertIndices, i).to(torch::kInt64).reshape({-1, k});
        const int64_t N = rl.size(0);
        tokens += N;
        T allowed = torch::ones({N, E}, torch::kBool);
        if (grouped) {
            const T per = choice.view({N, G, E / G});
            const T groupScores = sigmoid ? std::get<0>(per.topk(2, -1)).sum(-1) : std::get<0>(per.max(-1));
            const T best = std::get<1>(groupScores.topk(moe.topkGroup, -1));
            const T groupOk = torch::zeros({N, G}, torch::kBool).scatter(1, best, true);
            allowed = groupOk.unsqueeze(-1).expand({N, G, E / G}).reshape({N, E});
            inGroups = inGroups && allowed.gather(1, idx).all().item<bool>();
        }
        const T masked = choice.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
        const T want = std::get<0>(std::get<1>(masked.topk(k, -1)).sort(-1));
        sameChoice = sameChoice && torch::equal(want, std::get<0>(idx.sort(-1)));
        T w = scores.gather(1, idx);
        if (sigmoid && moe.normTopkProb) w = w / (w.sum(-1, true) + 1e-20);
        w = w * moe.routedScalingFactor;
        merge(weights, compareRecomputed(x.v(Value::ExpertWeights, i).reshape({-1, k}), w, x.dt()));
    }
    const std::string score = sigmoid ? "sigmoid(router_logits) + e_score_correction_bias" : "softmax(router_logits)";
    const std::string fig = "the top " + std::to_string(k) + " of " + std::to_string(E) + " experts" +
                            (grouped ? " within the best " + std::to_string(moe.topkGroup) + " of " + std::to_string(G) + " groups" : std::string()) +
                            ": " + (sameChoice && inGroups ? "the same choice" : "another choice") + " for " + std::to_string(tokens) +
                            " tokens in " + blocksText(static_cast<int64_t>(blocks.size())) + "; weights " + recomputedText(weights, x.dt());
    std::string det = "router_logits against mlp_input · gateᵀ from the stored router weight: " + recomputedText(logits, x.dt()) +
                       ". The choice recomputed in float64 from " + score;
    if (grouped)
        det += std::string(", a group scored by ") + (sigmoid ? "the sum of its two best" : "its best") + " (every chosen expert " +
               (inGroups ? "lies" : "does NOT lie") + " in the best groups)";
    det += ", compared as sets (transformers' top-k is unsorted); expert_weights against the " +
           std::string(sigmoid ? "uncorrected sigmoid scores" : "probabilities") +
           (sigmoid && moe.normTopkProb ? " ÷ (their sum + 1e-20)" : "") + " × routed_scaling_factor " + num(moe.routedScalingFactor) + ".";
    return claim(logits.ok && weights.ok && sameChoice && inGroups, fig, det);
}

/// Multi-head latent attention recomputed in float64 from its latents and the stored kv_b_proj / q_b_proj: every head's
/// key is [kv_b_proj(kv_latent)'s key part | key_rope], its value kv_b_proj's value part, its query [query_nope |
/// query_rope] with query_nope = q_b_proj(q_latent)'s first qk_nope_head_dim dimensions (q_proj's where q_lora_rank is
/// null).
CheckResult checkLatentAttention(Ctx& x, const std::string&) {
    if (!x.c.mla.enabled) return skipped("this checkpoint's attention has no latent");
    const MlaConfig& a = x.c.mla;
    const int64_t N = x.c.numHeads, QK = x.c.qkHeadDim();
    Cmp keys, values, queries, nope, rope;
    for (int i = 0; i < x.L; ++i) {
        const T latent = x.v(Value::KvLatent, i);
        const int64_t b = latent.size(0), s = latent.size(1);
        const T kv = linear64(latent, x.stored(ParamKey{Module::KvBProj}, i), T()).view({b, s, N, a.qkNopeHeadDim + a.vHeadDim}).transpose(1, 2);
        const T keyRope = x.v(Value::KeyRope, i).to(torch::kFloat64);
        const T k = torch::cat({kv.narrow(-1, 0, a.qkNopeHeadDim), keyRope.expand({b, N, s, a.qkRopeHeadDim})}, -1);
        merge(keys, compareRecomputed(x.v(Value::AttentionKeys, i), k, x.dt()));
        merge(values, compareRecomputed(x.v(Value::AttentionValues, i), kv.narrow(-1, a.qkNopeHeadDim, a.vHeadDim), x.dt()));
        merge(queries, compareExact(x.v(Value::AttentionQueries, i), torch::cat({x.v(Value::QueryNope, i), x.v(Value::QueryRope, i)}, -1), x.dt()));
        const T q = a.qLoraRank > 0 ? linear64(x.v(Value::QLatent, i), x.stored(ParamKey{Module::QBProj}, i), T())
                                    : x.v(Value::NativeQProjOutput, i).to(torch::kFloat64);
        merge(nope, compareRecomputed(x.v(Value::QueryNope, i), q.view({b, s, N, QK}).transpose(1, 2).narrow(-1, 0, a.qkNopeHeadDim), x.dt()));
        // the rotary key part before the rotary: kv_a_proj_with_mqa's last outputs; at position 0 the rotation is the identity
        const T compressed = linear64(x.v(Value::AttentionNormOutput, i), x.stored(ParamKey{Module::KvAProjWithMqa}, i),
                                      x.storedIf(ParamKey{Module::KvAProjWithMqa, Param::Bias}, i, x.m.layer(i)[Module::KvAProjWithMqa].bias));
        T raw = compressed.narrow(-1, a.kvLoraRank, a.qkRopeHeadDim).index({Slice(), 0});
        if (a.ropeInterleave) raw = torch::cat({raw.index({"...", Slice(0, None, 2)}), raw.index({"...", Slice(1, None, 2)})}, -1);
        merge(rope, compareRecomputed(keyRope.index({Slice(), 0, 0}), raw * x.m.rope().attentionScaling, x.dt()));
    }
    const std::string fig = "attention_keys vs [kv_b_proj(kv_latent) | key_rope]: " + recomputedText(keys, x.dt()) + ", " + blocksText(x.L);
    const std::string det = "Recomputed in float64 from the stored kv_b_proj" + std::string(a.qLoraRank > 0 ? " and q_b_proj" : "") +
                            ": attention_values against kv_b_proj(kv_latent)'s value part " + recomputedText(values, x.dt()) +
                            "; query_nope against " + (a.qLoraRank > 0 ? "q_b_proj(q_latent)" : "q_proj's output") + "'s first qk_nope_head_dim " +
                            "dimensions " + recomputedText(nope, x.dt()) + "; attention_queries against [query_nope | query_rope] " +
                            exactText(queries, x.dt()) + "; key_rope at position 0 (no rotation) against kv_a_proj_with_mqa's last " +
                            "qk_rope_head_dim outputs" + (a.ropeInterleave ? " de-interleaved" : "") + " " + recomputedText(rope, x.dt()) + ".";
    return claim(keys.ok && values.ok && queries.ok && nope.ok && rope.ok, fig, det);
}

CheckResult checkRoutedWeightedSum(Ctx& x, const std::string&) {
    const std::vector<int> blocks = sparseBlocks(x);
    if (blocks.empty()) return skipped("no block of this checkpoint has experts");
    Cmp routed, experts, total;
    int64_t recomputed = 0;
    for (int i : blocks) {
        const T w = x.v(Value::ExpertWeights, i).to(torch::kFloat64), eo = x.v(Value::ExpertOutputs, i).to(torch::kFloat64);
        merge(routed, compareRecomputed(x.v(Value::RoutedOutput, i), (w.unsqueeze(-1) * eo).sum(2), x.dt()));
        // every chosen expert's output from its own weights, read per expert as the file holds them
        const T idx = x.v(Value::ExpertIndices, i).to(torch::kInt64), in = x.v(Value::MlpInput, i);
        for (int64_t e = 0; e < x.c.moe.numExperts; ++e) {
            const T chosen = (idx == e).nonzero();  // [n, 3]: batch, position, slot
            if (chosen.size(0) == 0) continue;
            const T rows = in.index({chosen.select(1, 0), chosen.select(1, 1)});
            merge(experts, compareRecomputed(x.v(Value::ExpertOutputs, i).index({chosen.select(1, 0), chosen.select(1, 1), chosen.select(1, 2)}),
                                             expert64(x, i, e, rows), x.dt()));
            recomputed += chosen.size(0);
        }
        T sum = x.v(Value::RoutedOutput, i);
        if (x.c.moe.sharedExpertIntermediateSize > 0) sum = sum + x.v(Value::SharedExpertOutput, i);
        merge(total, compareExact(sum, x.v(Value::MlpOutput, i), x.dt()));
    }
    const std::string fig = "routed_output vs Σ_k expert_weights · expert_outputs: " + recomputedText(routed, x.dt()) + ", " +
                            blocksText(static_cast<int64_t>(blocks.size()));
    const std::string formula = x.f.expertMlp == ExpertMlp::ClampedSwiGlu
                                    ? "the clamped SwiGLU ((clamp(up, ±" + num(x.c.moe.swigluLimit) + ") + 1) · g · sigmoid(" +
                                          num(x.c.moe.swigluAlpha) + " g), g = min(gate, " + num(x.c.moe.swigluLimit) + "), gate and up interleaved) with the biases"
                                    : "the config's activation";
    const bool packed = x.m.layer(blocks.front())[Module::ExpertDownProj].experts.blocks.defined();
    std::string det = std::to_string(recomputed) + " chosen (token, expert) outputs recomputed in float64 from each expert's own weights (" +
                      std::string(packed ? "its MXFP4 blocks and scales dequantized" : "the file's per-expert tensors") + ") with " + formula +
                      ": " + recomputedText(experts, x.dt()) + ". mlp_output against routed_output" +
                      (x.c.moe.sharedExpertIntermediateSize > 0 ? " + shared_expert_output" : "") + ": " + exactText(total, x.dt()) + ".";
    return claim(routed.ok && experts.ok && total.ok && recomputed > 0, fig, det);
}

CheckResult checkLens(Ctx& x, const std::string&) {
    T last = x.v(Value::LayerOutput, x.L - 1);
    // Gemma 2 soft-caps the logits after lm_head; the lens (nnterp's project_on_vocab) does not, so the claim is that
    // the cap applied to the lens gives the logits.
    const auto cap = x.c.finalLogitSoftcap;
    auto capped = [&](const T& z) { return cap ? torch::tanh(z / *cap) * *cap : z; };
    T lens = x.m.projectOnVocab(last);
    T logits = x.v(Value::Logits);
    Cmp c = compareExact(capped(lens), logits, x.dt());
    // and independently: lm_head(norm(h)) from the stored final norm and head
    T w = x.stored(ParamKey{Module::Norm}), b = x.f.norm == NormKind::LayerNorm ? x.stored(ParamKey{Module::Norm, Param::Bias}) : T();
    T normed = x.f.norm == NormKind::LayerNorm        ? layerNorm64(last, w, b, x.c.normEps)
               : x.f.norm == NormKind::RMSNormPlusOne ? rmsNorm64(last, w.to(torch::kFloat64) + 1.0, x.c.normEps)
                                                      : rmsNorm64(last, w, x.c.normEps);
    T head = x.m.headTied() ? x.stored(ParamKey{Module::EmbedTokens}) : x.stored(ParamKey{Module::LmHead});
    Cmp r = compareRecomputed(logits, capped(linear64(normed, head, {})), x.dt());
    const std::string normName = x.f.tensorName(ParamKey{Module::Norm});
    const std::string lensText = cap ? "softcap(project_on_vocab(layers[" + std::to_string(x.L - 1) + "].layer_output))"
                                     : "project_on_vocab(layers[" + std::to_string(x.L - 1) + "].layer_output)";
    return claim(c.ok && r.ok, lensText + " vs logits: " + exactText(c, x.dt()),
                 "lm_head(norm(h)) recomputed from the stored " + normName + " and " + (x.m.headTied() ? "embed_tokens (tied)" : "lm_head") +
                     " matrices: " + recomputedText(r, x.dt()) + "." +
                     (cap ? " final_logit_softcapping " + num(*cap) + " follows lm_head: logits = cap · tanh(lm_head_output / cap)."
                          : " No softcap or scale follows lm_head."));
}

CheckResult checkTiedHead(Ctx& x, const std::string&) {
    const bool configTies = x.c.tieWordEmbeddings;
    const std::string headName = x.f.tensorName(ParamKey{Module::LmHead}), embedName = x.f.tensorName(ParamKey{Module::EmbedTokens});
    const bool storedHead = x.m.weights().contains(headName);
    const bool sameStorage = x.m.lmHead().data_ptr() == x.m.embedTokens().data_ptr();
    const std::string key = "tie_word_embeddings " + std::string(configTies ? "true" : "false");
    double headDiff = -1;
    if (storedHead && x.m.weights().contains(embedName)) {
        T h = x.stored(ParamKey{Module::LmHead}), e = x.stored(ParamKey{Module::EmbedTokens});
        if (h.sizes() == e.sizes()) headDiff = maxAbsDiff(h, e);
    }
    if (configTies && !x.m.headTied()) {
        // transformers 5.23 ties only when the file's two matrices are equal in the model's dtype; a different stored head
        // is kept (and it warns that the config does not reflect the checkpoint). nnscope loads it the same way; the check
        // still fails, because the config and the file disagree.
        return claim(false, key + ", but the file stores its own " + headName + " that differs from " + embedName +
                                " (max |diff| " + num(headDiff) + "): not tied, the config and the file disagree",
                     "transformers ties lm_head to embed_tokens only when the file stores no head or an equal one; a different "
                     "stored head is used as it is, with a warning that config.json does not reflect the checkpoint. nnscope "
                     "does the same (the logits are the stored head's), so an edit to embed_tokens does not reach the head. "
                     "Set tie_word_embeddings false to match the file.");
    }
    if (configTies) {
        const bool ok = sameStorage;
        std::string fig = "tied: lm_head is embed_tokens' matrix (one storage), " + key;
        std::string det = !storedHead ? "The file stores no " + headName + "."
                          : headDiff < 0 ? "The file stores " + headName + " and no " + embedName + ": transformers ties the other way, "
                                           "the head's matrix is the embedding too."
                                         : "The file also stores " + headName + ", equal to " + embedName + " in the model's dtype.";
        return claim(ok, fig, det);
    }
    const bool ok = !x.m.headTied() && storedHead && !sameStorage;
    std::string fig = "untied: lm_head is its own matrix (" + key + "), max |lm_head − embed_tokens| " + num(headDiff);
    std::string det = headDiff == 0 ? "The two matrices hold equal values but separate storage: an edit to one does not reach the other."
                                    : "An edit to embed_tokens does not reach the head.";
    return claim(ok, fig, det);
}

CheckResult checkBos(Ctx& x, const std::string&) {
    const Tokenizer* tok = x.m.tokenizer();
    if (!tok) return claim(false, "no tokenizer", x.m.tokenizerError());
    const auto bos = tok->bosId();
    if (!bos)
        return skipped(tok->sourceFile() + " has no BOS token, so nothing is prepended (transformers prepends nothing either); the "
                       "note is about tokenizers with one.");
    const auto ids = tok->encode(x.prompt, true);
    const auto plain = tok->encode(x.prompt, false);
    const auto empty = tok->encode("", true);
    const std::string label = tok->tokenString(*bos);
    const bool first = !ids.empty() && ids.front() == *bos;
    const bool added = ids.size() == plain.size() + 1;
    const bool emptyIsBos = empty.size() == 1 && empty[0] == *bos;
    bool traced = true;
    if (x.batch.inputIds.defined()) traced = x.batch.inputIds[0][0].item<int64_t>() == *bos;
    const bool ok = tok->addsBos() && first && added && emptyIsBos && traced;
    std::string fig = ok ? "prepends " + label + " (id " + std::to_string(*bos) + "): the prompt gives " + std::to_string(ids.size()) +
                               " ids, " + std::to_string(*bos) + " first; \"\" gives [" + std::to_string(*bos) + "]"
                         : "does not prepend " + label + " (id " + std::to_string(*bos) + "): the prompt's ids start with " +
                               (ids.empty() ? std::string("nothing") : std::to_string(ids.front()));
    std::string det = "Read from " + tok->sourceFile() + " (which " + (tok->addsBos() ? "adds" : "does not add") + " BOS).";
    if (x.c.bosTokenId && *x.c.bosTokenId != *bos)
        det += " config.json's bos_token_id is " + std::to_string(*x.c.bosTokenId) + ", not the tokenizer's " + std::to_string(*bos) + ".";
    return claim(ok, fig, det);
}

CheckResult checkRelu2(Ctx& x, const std::string& arg) {
    if (arg == "if_relu2" && x.c.hiddenAct != "relu2")
        return skipped("hidden_act is " + x.c.hiddenAct + " on this checkpoint; the claim is about relu2 checkpoints, so it needs one.");
    bool equalAll = true, neuronsAll = true;
    int64_t zeros = 0, negative = 0, total = 0, negativeNotZero = 0;
    Cmp pre;
    double worst = 0;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T in = x.v(Value::NativeActFnInput, i), act = x.v(Value::MlpActivation, i), neurons = x.v(Value::MlpNeurons, i);
        T expected = torch::relu(in.to(torch::kFloat64)).pow(2).to(act.scalar_type());  // exact: a float32 product fits in float64
        equalAll = equalAll && torch::equal(act, expected);
        worst = std::max(worst, (act.to(torch::kFloat64) - expected.to(torch::kFloat64)).abs().max().item<double>());
        if (x.f.mlp == MlpKind::Plain) neuronsAll = neuronsAll && torch::equal(neurons, act);
        zeros += (act == 0).sum().item<int64_t>();
        negative += (in <= 0).sum().item<int64_t>();
        negativeNotZero += ((in <= 0) & (act != 0)).sum().item<int64_t>();
        total += act.numel();
        // the pre-activation is the projection's output, recomputed from the stored weight
        const ParamKey w = x.f.mlp == MlpKind::Plain ? ParamKey{Module::UpProj} : ParamKey{Module::GateProj};
        const ParamKey wb = x.f.mlp == MlpKind::Plain ? ParamKey{Module::UpProj, Param::Bias} : ParamKey{Module::GateProj, Param::Bias};
        const T& engineBias = x.f.mlp == MlpKind::Plain ? lw[Module::UpProj].bias : lw[Module::GateProj].bias;
        merge(pre, compareRecomputed(in, linear64(x.v(Value::MlpInput, i), x.stored(w, i), x.storedIf(wb, i, engineBias)), x.dt()));
    }
    const double zf = total ? static_cast<double>(zeros) / total : 0;
    const bool ok = equalAll && neuronsAll && negativeNotZero == 0 && pre.ok;
    const std::string proj = x.f.moduleName(x.f.mlp == MlpKind::Plain ? Module::UpProj : Module::GateProj);
    std::string fig = pct(zf) + " of the neurons exactly zero (" + pct(total ? static_cast<double>(negative) / total : 0) +
                      " of the pre-activations ≤ 0); mlp_activation " + (equalAll ? "==" : "≠") + " relu(" + proj + " output)² bit for bit";
    if (!equalAll) fig += " (max |diff| " + num(worst) + "; hidden_act is " + x.c.hiddenAct + ")";
    std::string det = "Over " + blocksText(x.L) + " and " + std::to_string(x.S) + " positions. " + proj + "'s output recomputed from the stored weight: " +
                      recomputedText(pre, x.dt()) + ".";
    if (x.f.mlp == MlpKind::Plain) det += std::string(" down_proj's input (mlp_neurons) ") + (neuronsAll ? "is" : "is NOT") + " the activation itself.";
    if (negativeNotZero) det += " " + std::to_string(negativeNotZero) + " neurons with a pre-activation ≤ 0 are not zero.";
    return claim(ok, fig, det);
}

CheckResult checkActFromConfig(Ctx& x, const std::string&) {
    Cmp act;
    int64_t zeros = 0, total = 0;
    for (int i = 0; i < x.L; ++i) {
        T in = x.v(Value::NativeActFnInput, i), a = x.v(Value::MlpActivation, i);
        std::array<double, 4> xi{};
        if (x.c.hiddenAct == "xielu") xi = x.xielu(i);
        merge(act, compareRecomputed(a, activation64(x.c.hiddenAct, in, xi.data()), x.dt()));
        zeros += (a == 0).sum().item<int64_t>();
        total += a.numel();
    }
    return claim(act.ok, "hidden_act " + x.c.hiddenAct + ": act_fn's output == " + x.c.hiddenAct + "(its input), " + recomputedText(act, x.dt()),
                 pct(total ? static_cast<double>(zeros) / total : 0) + " of the activations exactly zero, over " + blocksText(x.L) + ".");
}

CheckResult checkNoGate(Ctx& x, const std::string&) {
    if (x.f.mlp != MlpKind::Plain) return claim(false, "the family's MLP is gated", "families/" + x.f.modelType + ".cpp describes a gate projection.");
    std::set<std::string> mlpNames;
    for (int i = 0; i < x.c.numLayers; ++i)
        for (ParamKey w : {ParamKey{Module::UpProj}, ParamKey{Module::UpProj, Param::Bias}, ParamKey{Module::DownProj}, ParamKey{Module::DownProj, Param::Bias}, ParamKey{Module::ActFn, Param::AlphaP}, ParamKey{Module::ActFn, Param::AlphaN},
                         ParamKey{Module::ActFn, Param::Beta}, ParamKey{Module::ActFn, Param::Eps}})
            if (!x.f.tensorName(w, i).empty()) mlpNames.insert(x.f.tensorName(w, i));
    std::vector<std::string> extra;
    for (int i = 0; i < x.c.numLayers; ++i) {
        const std::string up = x.f.tensorName(ParamKey{Module::UpProj}, i);
        const auto p = up.find(".mlp.");
        if (p == std::string::npos) continue;
        const std::string prefix = up.substr(0, p + 5);
        for (const auto& n : x.m.weights().names())
            if (n.rfind(prefix, 0) == 0 && !mlpNames.count(n)) extra.push_back(n);
    }
    const double ratio = static_cast<double>(x.c.intermediateSize) / static_cast<double>(x.c.hiddenSize);
    const std::string up = x.f.moduleName(Module::UpProj), down = x.f.moduleName(Module::DownProj);
    std::string fig = up + " widens " + std::to_string(x.c.hiddenSize) + " → " + std::to_string(x.c.intermediateSize) + " (" + num(ratio) +
                      " × hidden_size), " + down + " narrows it back; " +
                      (extra.empty() ? "no gate tensor stored" : std::to_string(extra.size()) + " MLP tensor(s) the family has no place for");
    std::string det;
    for (size_t k = 0; k < extra.size() && k < 5; ++k) det += (k ? ", " : "The file stores ") + extra[k];
    if (!extra.empty()) det += ": " + x.f.classPrefix + "MLP has no such module, so transformers drops them with a warning and nnscope ignores them.";
    return claim(extra.empty(), fig, det);
}

CheckResult checkActInputIsUp(Ctx& x, const std::string&) {
    bool inIsUp = true, outIsNeurons = true;
    Cmp up;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T in = x.v(Value::NativeActFnInput, i), u = x.v(Value::NativeUpProjOutput, i);
        inIsUp = inIsUp && torch::equal(in, u);
        outIsNeurons = outIsNeurons && torch::equal(x.v(Value::MlpActivation, i), x.v(Value::MlpNeurons, i));
        merge(up, compareRecomputed(u, linear64(x.v(Value::MlpInput, i), x.stored(ParamKey{Module::UpProj}, i),
                                                x.storedIf(ParamKey{Module::UpProj, Param::Bias}, i, lw[Module::UpProj].bias)), x.dt()));
    }
    const std::string a = x.f.moduleName(Module::ActFn), u = x.f.moduleName(Module::UpProj), d = x.f.moduleName(Module::DownProj);
    std::string fig = a + ".input " + (inIsUp ? "==" : "≠") + " " + u + ".output and " + a + ".output " + (outIsNeurons ? "==" : "≠") + " " + d +
                      ".input, bit for bit in " + blocksText(x.L);
    return claim(inIsUp && outIsNeurons && up.ok, fig, u + "'s output recomputed from the stored weight: " + recomputedText(up, x.dt()) + ".");
}

CheckResult checkXieluFormula(Ctx& x, const std::string&) {
    if (x.c.hiddenAct != "xielu") return claim(false, "hidden_act is " + x.c.hiddenAct + ", not xielu");
    Cmp act;
    std::string storedBuffers;
    for (int i = 0; i < x.L; ++i) {
        auto xi = x.xielu(i);
        merge(act, compareRecomputed(x.v(Value::MlpActivation, i), activation64("xielu", x.v(Value::NativeActFnInput, i), xi.data()), x.dt()));
        T beta = x.stored(ParamKey{Module::ActFn, Param::Beta}, i), eps = x.stored(ParamKey{Module::ActFn, Param::Eps}, i);
        if (i == 0 && (beta.defined() || eps.defined()))
            storedBuffers = " The file stores beta " + (beta.defined() ? num(beta.flatten()[0].item<double>()) : std::string("(none)")) +
                            " and eps " + (eps.defined() ? num(eps.flatten()[0].item<double>()) : std::string("(none)")) + " in block 0.";
    }
    return claim(act.ok, "act_fn's output vs xIELU(its input) with beta 0.5, eps −1e-6 and softplus of the stored alpha_p, alpha_n: " +
                             recomputedText(act, x.dt()),
                 "Over " + blocksText(x.L) + "." + storedBuffers);
}

CheckResult checkXieluScalars(Ctx& x, const std::string&) {
    if (x.c.hiddenAct != "xielu") return claim(false, "hidden_act is " + x.c.hiddenAct + ", not xielu");
    std::vector<double> ap, an;
    for (int i = 0; i < x.c.numLayers; ++i) {
        auto xi = x.xielu(i);
        ap.push_back(xi[0]);
        an.push_back(xi[1]);
    }
    // the same scalars measured from what the engine computed: alpha_p from the largest positive pre-activation,
    // alpha_n from the pre-activation where expm1(x) - x is largest
    bool measuredOk = true;
    std::string measured;
    double worstRel = 0;
    for (int i = 0; i < x.L; ++i) {
        T in = x.v(Value::NativeActFnInput, i).to(torch::kFloat64).flatten(), a = x.v(Value::MlpActivation, i).to(torch::kFloat64).flatten();
        const double beta = 0.5;
        const int64_t kp = in.argmax().item<int64_t>();
        const double xp = in[kp].item<double>();
        if (xp > 1e-2) {
            const double m = (a[kp].item<double>() - beta * xp) / (xp * xp);
            worstRel = std::max(worstRel, std::fabs(m - ap[i]) / ap[i]);
        }
        const int64_t kn = in.argmin().item<int64_t>();
        const double xn = in[kn].item<double>();
        const double denom = std::expm1(std::min(xn, -1e-6)) - xn;
        if (xn < -1e-1) {
            const double m = (a[kn].item<double>() - beta * xn) / denom;
            worstRel = std::max(worstRel, std::fabs(m - an[i]) / an[i]);
        }
    }
    const double tol = x.dt() == torch::kBFloat16 ? 5e-2 : 1e-3;
    measuredOk = worstRel <= tol;
    measured = " Measured back from the engine's activations (alpha_p at the largest positive pre-activation, alpha_n at the most "
               "negative): within " + num(worstRel) + " relative of these (bound " + num(tol) + ").";
    // learned per block: no two blocks share both scalars
    std::string same;
    for (size_t i = 0; i < ap.size() && same.empty(); ++i)
        for (size_t j = i + 1; j < ap.size(); ++j)
            if (std::fabs(ap[i] - ap[j]) <= 1e-9 * std::max(1.0, ap[i]) && std::fabs(an[i] - an[j]) <= 1e-9 * std::max(1.0, an[i])) {
                same = "blocks " + std::to_string(i) + " and " + std::to_string(j) + " have the same effective scalars";
                break;
            }
    const auto pMax = std::max_element(ap.begin(), ap.end()) - ap.begin(), pMin = std::min_element(ap.begin(), ap.end()) - ap.begin();
    const double nMin = *std::min_element(an.begin(), an.end()), nMax = *std::max_element(an.begin(), an.end());
    std::string fig = "effective alpha_p largest at block " + std::to_string(pMax) + " (" + num(ap[pMax]) + "), smallest at block " +
                      std::to_string(pMin) + " (" + num(ap[pMin]) + "); alpha_n between " + num(nMin) + " and " + num(nMax);
    if (!same.empty()) fig += "; but " + same;
    std::string det = "Per block, alpha_p = softplus(stored alpha_p): " + joinNums(ap) + ". alpha_n = 0.5 + softplus(stored alpha_n): " + joinNums(an) + "." + measured;
    return claim(measuredOk && same.empty(), fig, det);
}

CheckResult checkXieluNegative(Ctx& x, const std::string&) {
    if (x.c.hiddenAct != "xielu") return claim(false, "hidden_act is " + x.c.hiddenAct + ", not xielu");
    bool ok = true;
    std::string det, failures;
    int bestBlock = -1;
    double bestNeg = -1;
    struct Row { double xmin, fmin, f1, f5, f20, neg, nearZero, negZero; };
    std::vector<Row> rows;
    for (int i = 0; i < x.L; ++i) {
        auto xi = x.xielu(i);
        const double an = xi[1], beta = xi[2];
        auto f = [&](double v) { return an * (std::expm1(std::min(v, xi[3])) - v) + beta * v; };
        Row r{};
        // minimum of the negative branch: derivative an·(e^x − 1) + beta = 0
        r.xmin = an > beta ? std::log(1 - beta / an) : -INFINITY;
        r.fmin = std::isfinite(r.xmin) ? f(r.xmin) : -INFINITY;
        r.f1 = f(-1);
        r.f5 = f(-5);
        r.f20 = f(-20);
        T in = x.v(Value::NativeActFnInput, i), a = x.v(Value::MlpActivation, i);
        auto negMask = in < 0;
        const int64_t nNeg = negMask.sum().item<int64_t>();
        r.neg = static_cast<double>(nNeg) / in.numel();
        r.nearZero = (a.abs() <= 1e-3).to(torch::kFloat64).mean().item<double>();
        r.negZero = nNeg ? static_cast<double>((negMask & (a == 0)).sum().item<int64_t>()) / nNeg : 0;
        rows.push_back(r);
        const bool growsAgain = r.xmin > -20 && r.f20 > r.fmin;
        const bool notOff = r.negZero < 0.01;
        if (!growsAgain) failures += " Block " + std::to_string(i) + ": the branch is still falling at x = −20 (alpha_n − beta = " + num(an - beta) + ").";
        if (!notOff) failures += " Block " + std::to_string(i) + ": " + pct(r.negZero) + " of the negative pre-activations give exactly 0.";
        ok = ok && growsAgain && notOff;
        if (r.neg > bestNeg) {
            bestNeg = r.neg;
            bestBlock = i;
        }
        det += (i ? " " : "") + std::string("Block ") + std::to_string(i) + ": minimum " + num(r.fmin) + " at x = " + num(r.xmin) + ", f(−1) " +
               num(r.f1) + ", f(−5) " + num(r.f5) + ", f(−20) " + num(r.f20) + "; " + pct(r.neg) + " of the pre-activations negative, " +
               pct(r.nearZero) + " of the activations within 1e-3 of zero.";
    }
    const Row& r = rows[static_cast<size_t>(bestBlock)];
    std::string fig = "block " + std::to_string(bestBlock) + ": the negative branch dips to " + num(r.fmin) + " near x = " + num(r.xmin) + " and gives " +
                      num(r.f1) + " at −1, " + num(r.f5) + " at −5, " + num(r.f20) + " at −20; " + pct(r.neg) + " of its pre-activations are negative, " +
                      pct(r.nearZero) + " of its activations within 1e-3 of zero";
    return claim(ok, fig, det + failures + " (The branch is computed from the stored scalars; xielu_formula checks that the engine follows it.)");
}

CheckResult checkQkNormPosition0(Ctx& x, const std::string&) {
    if (!x.c.qkNorm) return claim(false, "this checkpoint norms no query or key heads");
    Cmp q0, k0, qRe, kRe;
    std::vector<double> qGain, kGain;
    const int64_t b = x.batch.inputIds.size(0), D = x.c.headDim;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T q = x.v(Value::AttentionQueries, i), k = x.v(Value::AttentionKeys, i);
        T qn = x.preRotary(i, false), kn = x.preRotary(i, true);
        merge(q0, compareExact(q.index({Slice(), Slice(), 0}), qn.index({Slice(), Slice(), 0}), x.dt()));
        merge(k0, compareExact(k.index({Slice(), Slice(), 0}), kn.index({Slice(), Slice(), 0}), x.dt()));
        // the norms recomputed from the stored projections and gains
        T h = x.v(Value::AttentionNormOutput, i);
        T qRaw, kRaw;
        if (x.f.qkv == QkvLayout::FusedPerHead) {
            T w = x.stored(ParamKey{Module::QkvProj}, i).view({x.c.numHeads, 3, D, -1});
            T bias = x.storedIf(ParamKey{Module::QkvProj, Param::Bias}, i, lw[Module::QkvProj].bias);
            qRaw = torch::einsum("bsx,hdx->bhsd", {h.to(torch::kFloat64), w.index({Slice(), 0}).to(torch::kFloat64)});
            kRaw = torch::einsum("bsx,hdx->bhsd", {h.to(torch::kFloat64), w.index({Slice(), 1}).to(torch::kFloat64)});
            if (bias.defined()) {
                auto bv = bias.to(torch::kFloat64).view({x.c.numHeads, 3, D});
                qRaw = qRaw + bv.index({Slice(), 0, None});
                kRaw = kRaw + bv.index({Slice(), 1, None});
            }
        } else {
            qRaw = linear64(h, x.stored(ParamKey{Module::QProj}, i), x.storedIf(ParamKey{Module::QProj, Param::Bias}, i, lw[Module::QProj].bias)).view({b, x.S, -1, D}).transpose(1, 2);
            kRaw = linear64(h, x.stored(ParamKey{Module::KProj}, i), x.storedIf(ParamKey{Module::KProj, Param::Bias}, i, lw[Module::KProj].bias)).view({b, x.S, -1, D}).transpose(1, 2);
        }
        T qw = x.stored(ParamKey{Module::QNorm}, i), kw = x.stored(ParamKey{Module::KNorm}, i);
        T qExp, kExp;
        if (x.f.qkNormKind == NormKind::LayerNorm) {
            qExp = layerNorm64(qRaw, qw, x.storedIf(ParamKey{Module::QNorm, Param::Bias}, i, lw[Module::QNorm].bias), x.c.normEps);
            kExp = layerNorm64(kRaw, kw, x.storedIf(ParamKey{Module::KNorm, Param::Bias}, i, lw[Module::KNorm].bias), x.c.normEps);
        } else {
            qExp = rmsNorm64(qRaw, qw, x.c.normEps);
            kExp = rmsNorm64(kRaw, kw, x.c.normEps);
        }
        merge(qRe, compareRecomputed(qn, qExp, x.dt()));
        merge(kRe, compareRecomputed(kn, kExp, x.dt()));
        qGain.push_back(qw.abs().max().item<double>());
        kGain.push_back(kw.abs().max().item<double>());
    }
    const auto qm = std::max_element(qGain.begin(), qGain.end()) - qGain.begin(), km = std::max_element(kGain.begin(), kGain.end()) - kGain.begin();
    const std::string qName = x.f.moduleName(Module::QNorm), kName = x.f.moduleName(Module::KNorm);
    std::string fig = "position 0: attention_queries vs " + qName + ".output " + exactText(q0, x.dt()) + ", attention_keys vs " + kName +
                      ".output " + exactText(k0, x.dt()) + "; gains reach " + num(qGain[qm]) + " (" + qName + ", block " + std::to_string(qm) +
                      ") and " + num(kGain[km]) + " (" + kName + ", block " + std::to_string(km) + ")";
    std::string det = qName + " and " + kName + " recomputed as " + (x.f.qkNormKind == NormKind::LayerNorm ? "LayerNorms" : "RMSNorms") +
                      " over head_dim of the stored projection, one gain of " + std::to_string(D) + " for every head: queries " +
                      recomputedText(qRe, x.dt()) + ", keys " + recomputedText(kRe, x.dt()) + ".";
    return claim(q0.ok && k0.ok && qRe.ok && kRe.ok, fig, det);
}

CheckResult checkQkNormRenormalizes(Ctx& x, const std::string&) {
    if (!x.c.qkNorm) return skipped("this checkpoint norms no query or key heads (qk_layernorm / qk_norm off), so nothing renormalises.");
    const int layer = std::min(1, x.L - 1);
    const int64_t head = std::min<int64_t>(1, x.c.numHeads - 1), D = x.c.headDim;
    // A: double head `head`'s slice of the query projection's output
    Edit a;
    IndexItem all;
    IndexItem slice;
    slice.kind = IndexItem::Slice;
    if (x.f.qkv == QkvLayout::FusedPerHead) {
        a.key = {Value::NativeQkvProjOutput, layer};
        slice.start = head * 3 * D;
        slice.stop = head * 3 * D + D;
    } else {
        a.key = {Value::NativeQProjOutput, layer};
        slice.start = head * D;
        slice.stop = (head + 1) * D;
    }
    a.index = {all, all, slice};
    a.op = Edit::Op::Mul;
    a.operand = Edit::Operand::Scalar;
    a.scalar = 2;
    a.text = valuePath(x.f, a.key) + "[:, :, " + std::to_string(*slice.start) + ":" + std::to_string(*slice.stop) + "] *= 2";
    // B: double that head of attention_queries
    Edit bq;
    bq.key = {Value::AttentionQueries, layer};
    bq.index = {all, IndexItem::integer(head)};
    bq.op = Edit::Op::Mul;
    bq.operand = Edit::Operand::Scalar;
    bq.scalar = 2;
    bq.text = valuePath(x.f, bq.key) + "[:, " + std::to_string(head) + "] *= 2";
    auto run = [&](const Edit& e) {
        auto list = std::make_shared<EditList>();
        list->add(e);
        TraceOptions o;
        o.intervention = list;
        o.save = {{Value::AttentionQueries, layer}, {Value::AttentionScores, layer}, {Value::Logits, -1}};
        return trace(x.m, x.batch, o);
    };
    TraceResult ra = run(a), rb = run(bq);
    T q = x.v(Value::AttentionQueries, layer).to(torch::kFloat64), logits = x.v(Value::Logits).to(torch::kFloat64);
    const double qScale = std::max(q.abs().max().item<double>(), 1e-30);
    const double qMove = (ra.value({Value::AttentionQueries, layer}).to(torch::kFloat64) - q).abs().max().item<double>() / qScale;
    const double logitsA = (ra.value({Value::Logits, -1}).to(torch::kFloat64) - logits).abs().max().item<double>();
    const double logitsB = (rb.value({Value::Logits, -1}).to(torch::kFloat64) - logits).abs().max().item<double>();
    // B doubles the head's scores where they are not masked
    T s = x.v(Value::AttentionScores, layer).to(torch::kFloat64).index({Slice(), head});
    T sb = rb.value({Value::AttentionScores, layer}).to(torch::kFloat64).index({Slice(), head});
    auto allowed = torch::ones({x.S, x.S}, torch::TensorOptions().dtype(torch::kBool)).tril();
    Cmp doubled = compareRecomputed(sb.masked_select(allowed), (2 * s).masked_select(allowed), x.dt());
    const double bound = x.dt() == torch::kBFloat16 ? 2e-2 : 1e-3;
    const bool ok = std::isfinite(qMove) && qMove <= bound && doubled.ok;
    std::string fig = "block " + std::to_string(layer) + ", head " + std::to_string(head) + ": doubling its slice of " +
                      x.f.moduleName(x.f.qkv == QkvLayout::FusedPerHead ? Module::QkvProj : Module::QProj) + "'s output moves attention_queries by " +
                      num(qMove) + " of their scale and the logits by " + num(logitsA) + "; doubling head " + std::to_string(head) +
                      " of attention_queries doubles its scores and moves the logits by " + num(logitsB);
    std::string det = "Two more passes with the edits '" + a.text + "' and '" + bq.text + "'. Renormalised away means a move of at most " +
                      num(bound) + " of the queries' scale (the norm's epsilon keeps it from being exactly 0); the scores of the edited head: " +
                      recomputedText(doubled, x.dt()) + ".";
    return claim(ok, fig, det);
}

/// Compares attention_queries and attention_keys of every block with the pre-rotary values turned by `invFreq`
/// (`scale` on cos and sin) with `style`; also reports what the other pairing would give.
struct RotationCmp {
    Cmp both;
    double otherPairing = 0;
    Cmp position0;
};

RotationCmp compareRotation(const Ctx& x, const T& invFreq, double scale, RotaryStyle style, int64_t rot) {
    RotationCmp out;
    // DeepSeek-V3's rope_interleave: adjacent pairs, the result de-interleaved (the even dims' results, then the odd ones')
    const bool deinterleave = x.c.mla.enabled && x.c.mla.ropeInterleave;
    if (deinterleave) style = RotaryStyle::AdjacentPairs;
    auto laidOut = [&](const T& t) {
        return deinterleave ? torch::cat({t.index({"...", Slice(0, None, 2)}), t.index({"...", Slice(1, None, 2)})}, -1) : t;
    };
    for (int i = 0; i < x.L; ++i)
        for (bool keys : {false, true}) {
            if (!x.c.rotates(i)) continue;  // a NoPE block (SmolLM3): no_rope_layers checks it
            T pre = x.preRotary(i, keys);
            // under latent attention only the rope parts turn: query_rope and key_rope against them
            T actual = x.c.mla.enabled ? x.v(keys ? Value::KeyRope : Value::QueryRope, i)
                                       : x.v(keys ? Value::AttentionKeys : Value::AttentionQueries, i);
            merge(out.both, compareRecomputed(actual, laidOut(rotate64(pre, invFreq, scale, style, rot)), x.dt()));
            // position 0: the rotation is the identity (times the attention factor on the turned dims)
            T p0 = pre.index({Slice(), Slice(), 0});
            T expected0 = torch::cat({p0.index({"...", Slice(0, rot)}) * scale, p0.index({"...", Slice(rot, None)})}, -1);
            const T got0 = actual.index({Slice(), Slice(), 0});
            merge(out.position0, x.c.mla.enabled ? compareRecomputed(got0, laidOut(expected0), x.dt()) : compareExact(got0, expected0, x.dt()));
            if (x.S > 1) {
                T wrong = rotate64(pre, invFreq, scale, otherStyle(style), rot);
                out.otherPairing = std::max(out.otherPairing, (actual.to(torch::kFloat64) - wrong).abs().max().item<double>());
            }
        }
    return out;
}

std::string ropeText(const ModelConfig& c, double attentionScale) {
    const RopeConfig& r = c.rope;
    std::string s = "rope_type " + r.type;
    if (r.factor) s += ", factor " + num(*r.factor);
    if (r.type == "yarn" || r.type == "llama3")
        s += " over " + std::to_string(r.originalMaxPositionEmbeddings) + " original positions (max_position_embeddings " +
             std::to_string(c.maxPositionEmbeddings) + ")";
    if (r.type == "llama3") s += ", low/high frequency factors " + num(r.lowFreqFactor.value_or(1)) + "/" + num(r.highFreqFactor.value_or(4));
    s += ", rope_theta " + num(r.theta);
    if (attentionScale != 1.0) s += ", attention factor " + num(attentionScale) + " on cos and sin";
    if (r.partialRotaryFactor != 1.0)
        s += ", partial_rotary_factor " + num(r.partialRotaryFactor) + " (" + std::to_string(c.rotaryDim()) + " of " + std::to_string(c.headDim) + " dims)";
    return s;
}

CheckResult checkRopeKind(Ctx& x, const std::string& arg) {
    const auto allowed = splitArg(arg, '|');
    const bool typeOk = allowed.empty() || std::find(allowed.begin(), allowed.end(), x.c.rope.type) != allowed.end();
    double scale = 1;
    const int64_t rot = x.c.rotaryDim();
    T inv = invFreq64(x.c.rope, rot, x.c.maxPositionEmbeddings, &scale, x.S);
    std::string fig = ropeText(x.c, scale);
    if (!typeOk) {
        std::string names;
        for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
        fig += ": not one of the rotaries the note names (" + names + ")";
    }
    // DeepSeek-V3's rope_interleave pairs adjacent dimensions (compareRotation lays the result out de-interleaved)
    const RotaryStyle style = x.c.mla.enabled && x.c.mla.ropeInterleave ? RotaryStyle::AdjacentPairs : x.f.rotary;
    RotationCmp r = compareRotation(x, inv, scale, style, rot);
    const bool pairingMatters = x.S < 2 || r.otherPairing > recomputeTol(x.dt()) * 10;
    fig += "; queries and keys turned by these frequencies: " + recomputedText(r.both, x.dt());
    std::string det = "attention_queries and attention_keys of " + blocksText(x.L) + " at " + std::to_string(x.S) + " positions, recomputed by turning " +
                      x.preRotaryName() + " with " + pairingText(style, rot) + " at inverse frequencies (and attention factor) written out "
                      "here for " + x.c.rope.type + ". The " + pairingText(otherStyle(style), rot) + " would be off by " + num(r.otherPairing) + ".";
    return claim(typeOk && r.both.ok && pairingMatters, fig, det);
}

CheckResult checkRotationPosition1(Ctx& x, const std::string&) {
    if (x.S < 2) return claim(false, "the prompt has one position");
    const int64_t rot = x.c.rotaryDim(), D = x.c.headDim;
    // the claim: plain frequencies rope_theta ** (-2i / rot), no scaling
    auto i = torch::arange(rot / 2, torch::TensorOptions().dtype(torch::kFloat64));
    T inv = 1.0 / torch::pow(x.c.rope.theta, 2.0 * i / static_cast<double>(rot));
    RotationCmp r = compareRotation(x, inv, 1.0, x.f.rotary, rot);
    // position 1, first pair, spelled out as the seed does: turned by one radian
    const int layer = std::min(1, x.L - 1);
    T pre = x.preRotary(layer, false), q = x.v(Value::AttentionQueries, layer).to(torch::kFloat64);
    const int64_t partner = x.f.rotary == RotaryStyle::AdjacentPairs ? 1 : rot / 2;
    const double a = pre[0][0][1][0].item<double>(), bb = pre[0][0][1][partner].item<double>();
    const double c1 = std::cos(1.0), s1 = std::sin(1.0);
    const double e0 = a * c1 - bb * s1, e1 = bb * c1 + a * s1;
    const double d1 = std::max(std::fabs(q[0][0][1][0].item<double>() - e0), std::fabs(q[0][0][1][partner].item<double>() - e1));
    const double tol = recomputeTol(x.dt()) * std::max(1.0, std::max(std::fabs(e0), std::fabs(e1)));
    const bool pairingMatters = r.otherPairing > recomputeTol(x.dt()) * 10;
    const bool ok = r.both.ok && r.position0.ok && d1 <= tol && pairingMatters;
    const std::string pairName = x.f.rotary == RotaryStyle::AdjacentPairs ? "(0, 1)" : "(0, " + std::to_string(partner) + ")";
    std::string fig = "position 0: attention_queries == " + x.preRotaryName() + " split into heads, " + exactText(r.position0, x.dt()) +
                      "; position 1: dims " + pairName + " of head 0 turned by one radian, off by " + num(d1) + "; the " +
                      pairingText(otherStyle(x.f.rotary), rot) + " would be off by " + num(r.otherPairing);
    std::string det = "Every pair " + std::string(x.f.rotary == RotaryStyle::AdjacentPairs ? "(2i, 2i + 1)" : "(i, i + rot/2)") + " of " +
                      std::to_string(rot) + (rot < D ? " rotating dims of " + std::to_string(D) : std::string(" dims")) +
                      " turned by p · rope_theta^(−2i/" + std::to_string(rot) + ") (rope_theta " + num(x.c.rope.theta) + ", no scaling) at all " +
                      std::to_string(x.S) + " positions, queries and keys of " + blocksText(x.L) + ": " + recomputedText(r.both, x.dt()) + ".";
    if (x.c.rope.type != "default") det += " config.json scales the rotary (" + ropeText(x.c, 1.0) + "), which the note's plain frequencies exclude.";
    return claim(ok, fig, det);
}

CheckResult checkUnrotatedHalf(Ctx& x, const std::string&) {
    const int64_t D = x.c.headDim, rot = x.c.rotaryDim(), H = x.c.numHeads;
    if (x.f.qkv != QkvLayout::FusedPerHead) return claim(false, "the family has no fused query_key_value");
    double scale = 1;
    T inv = invFreq64(x.c.rope, rot, x.c.maxPositionEmbeddings, &scale);
    Cmp unrot, turned;
    double moved = 0;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T h = x.v(Value::AttentionNormOutput, i).to(torch::kFloat64);
        T w = x.stored(ParamKey{Module::QkvProj}, i).view({H, 3, D, -1});
        T bias = x.storedIf(ParamKey{Module::QkvProj, Param::Bias}, i, lw[Module::QkvProj].bias);
        for (int part : {0, 1}) {
            T raw = torch::einsum("bsx,hdx->bhsd", {h, w.index({Slice(), part}).to(torch::kFloat64)});
            if (bias.defined()) raw = raw + bias.to(torch::kFloat64).view({H, 3, D}).index({Slice(), part, None});
            T normed = raw;
            if (x.c.qkNorm) {
                const bool q = part == 0;
                normed = layerNorm64(raw, x.stored(q ? ParamKey{Module::QNorm} : ParamKey{Module::KNorm}, i),
                                     x.storedIf(q ? ParamKey{Module::QNorm, Param::Bias} : ParamKey{Module::KNorm, Param::Bias}, i, q ? lw[Module::QNorm].bias : lw[Module::KNorm].bias), x.c.normEps);
            }
            T actual = x.v(part == 0 ? Value::AttentionQueries : Value::AttentionKeys, i);
            if (rot < D) merge(unrot, compareRecomputed(actual.index({"...", Slice(rot, None)}), normed.index({"...", Slice(rot, None)}), x.dt()));
            T expected = rotate64(normed, inv, scale, x.f.rotary, rot);
            merge(turned, compareRecomputed(actual.index({"...", Slice(0, rot)}), expected.index({"...", Slice(0, rot)}), x.dt()));
            if (x.S > 1)
                moved = std::max(moved, (actual.index({Slice(), Slice(), Slice(1, None), Slice(0, rot)}).to(torch::kFloat64) -
                                         normed.index({Slice(), Slice(), Slice(1, None), Slice(0, rot)})).abs().max().item<double>());
        }
    }
    const bool partial = rot > 0 && rot < D;
    const bool ok = partial && unrot.ok && turned.ok && (x.S < 2 || moved > recomputeTol(x.dt()));
    std::string norm = x.c.qkNorm ? "the LayerNorm of the raw projection" : "the raw projection (qk_layernorm off)";
    std::string fig = partial ? "rotary turns dims 0–" + std::to_string(rot - 1) + " of " + std::to_string(D) + " (partial_rotary_factor " +
                                    num(x.c.rope.partialRotaryFactor) + "); dims " + std::to_string(rot) + "–" + std::to_string(D - 1) +
                                    " of attention_queries and attention_keys are " + norm + " from the fused weight, " + recomputedText(unrot, x.dt())
                              : "partial_rotary_factor " + num(x.c.rope.partialRotaryFactor) + ": the rotary turns " + std::to_string(rot) + " of " +
                                    std::to_string(D) + " dims, so no part of a head is left unrotated";
    std::string det = "The turned dims are that projection rotated (" + pairingText(x.f.rotary, rot) + ", " + ropeText(x.c, scale) + "): " +
                      recomputedText(turned, x.dt()) + "; at positions ≥ 1 they moved by up to " + num(moved) + ". Over " + blocksText(x.L) + ".";
    return claim(ok, fig, det);
}

CheckResult checkFusedQkvValues(Ctx& x, const std::string&) {
    if (x.f.qkv != QkvLayout::FusedPerHead) return claim(false, "the family has no fused query_key_value");
    const int64_t D = x.c.headDim, H = x.c.numHeads;
    Cmp vals;
    double wrong = 0;
    for (int i = 0; i < x.L; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        T h = x.v(Value::AttentionNormOutput, i).to(torch::kFloat64);
        T wFull = x.stored(ParamKey{Module::QkvProj}, i);
        T bias = x.storedIf(ParamKey{Module::QkvProj, Param::Bias}, i, lw[Module::QkvProj].bias);
        T w = wFull.view({H, 3, D, -1});
        T again = torch::einsum("bsx,hdx->bhsd", {h, w.index({Slice(), 2}).to(torch::kFloat64)});
        if (bias.defined()) again = again + bias.to(torch::kFloat64).view({H, 3, D}).index({Slice(), 2, None});
        T v = x.v(Value::AttentionValues, i);
        merge(vals, compareRecomputed(v, again, x.dt()));
        // the other reading: three blocks of the whole width, [3, num_heads, head_dim]
        T w2 = wFull.view({3, H, D, -1});
        T other = torch::einsum("bsx,hdx->bhsd", {h, w2.index({2}).to(torch::kFloat64)});
        if (bias.defined()) other = other + bias.to(torch::kFloat64).view({3, H, D}).index({2, Slice(), None});
        wrong = std::max(wrong, (v.to(torch::kFloat64) - other).abs().max().item<double>());
    }
    const bool ownKv = x.c.numKvHeads == x.c.numHeads;
    const bool ok = vals.ok && ownKv && wrong > recomputeTol(x.dt()) * 10;
    const std::string qkv = x.f.moduleName(Module::QkvProj);
    std::string fig = "attention_values vs einsum(\"bsx,hdx->bhsd\", h, W[:, 2]) + b[:, 2] with W = " + qkv + ".weight.view(" + std::to_string(H) + ", 3, " +
                      std::to_string(D) + ", hidden): " + recomputedText(vals, x.dt()) + "; reading it as [3, num_heads, head_dim] would be off by " + num(wrong);
    std::string det = std::to_string(H) + " heads, each with its own keys and values (num_kv_heads " + std::to_string(x.c.numKvHeads) + "). Over " + blocksText(x.L) + ".";
    return claim(ok, fig, det);
}

CheckResult checkGqaScores(Ctx& x, const std::string&) {
    const int64_t H = x.c.numHeads, KV = x.c.numKvHeads, D = x.c.headDim, g = H / KV;
    auto opts = torch::TensorOptions().dtype(torch::kInt64);
    T grouped = torch::arange(H, opts).div(g, "floor"), interleaved = torch::arange(H, opts).remainder(KV);
    auto causal = torch::ones({x.S, x.S}, torch::TensorOptions().dtype(torch::kBool)).tril();
    auto idx = torch::arange(x.S, opts);
    auto inWindow = (idx.unsqueeze(1) - idx.unsqueeze(0)) < std::max<int64_t>(x.c.slidingWindow, 1);
    Cmp scores;
    double wrong = 0;
    bool masked = true;
    for (int i = 0; i < x.L; ++i) {
        // the scaling (head_dim ** -0.5, Gemma's query_pre_attn_scalar, GPT-2's 1 / (i + 1)), the soft cap and the
        // sliding window are the config's
        const double scaling = x.c.attentionScaling / (x.c.scaleByInverseLayer ? i + 1.0 : 1.0);
        auto score = [&](const T& qk) {
            T z = qk * scaling;
            return x.c.attnLogitSoftcap ? torch::tanh(z / *x.c.attnLogitSoftcap) * *x.c.attnLogitSoftcap : z;
        };
        const T allowed = x.c.slides(i) ? causal.logical_and(inWindow) : causal;
        T q = x.v(Value::AttentionQueries, i).to(torch::kFloat64), k = x.v(Value::AttentionKeys, i).to(torch::kFloat64);
        T s = x.v(Value::AttentionScores, i);
        T expected = score(torch::matmul(q, k.index_select(1, grouped).transpose(2, 3)));
        merge(scores, compareRecomputed(s.masked_select(allowed), expected.masked_select(allowed), x.dt()));
        masked = masked && (s.to(torch::kFloat64).masked_select(allowed.logical_not()) < -1e30).all().item<bool>();
        if (g > 1 && KV > 1) {
            T other = score(torch::matmul(q, k.index_select(1, interleaved).transpose(2, 3)));
            wrong = std::max(wrong, (s.to(torch::kFloat64).masked_select(allowed) - other.masked_select(allowed)).abs().max().item<double>());
        }
    }
    const bool groupingMatters = !(g > 1 && KV > 1) || wrong > recomputeTol(x.dt()) * 10;
    const bool ok = scores.ok && masked && groupingMatters && H % KV == 0;
    std::string fig = std::to_string(H) + " query heads over " + std::to_string(KV) + " key/value heads (" + std::to_string(g) +
                      " each): query head h reads key head ⌊h/" + std::to_string(g) + "⌋, scores recomputed " + recomputedText(scores, x.dt());
    if (g > 1 && KV > 1) fig += "; reading key head h mod " + std::to_string(KV) + " instead would be off by " + num(wrong);
    std::string det = "q_proj width num_heads × head_dim = " + std::to_string(H * D) + " against hidden_size " + std::to_string(x.c.hiddenSize) +
                      "; attention_keys and attention_values are read before repeat_kv, [batch, " + std::to_string(KV) + ", seq, " + std::to_string(D) +
                      "], so an edit to key/value head j reaches query heads " + std::to_string(g) + "j to " + std::to_string(g) + "j + " +
                      std::to_string(g - 1) + ". Scores above the diagonal " + (masked ? "are" : "are NOT") + " masked to the dtype's minimum. Over " +
                      blocksText(x.L) + ".";
    return claim(ok, fig, det);
}

/// softmax over [scores | sink] with the sink's column dropped (gpt-oss), or softmax(scores), in float64; `sinkShare` gets
/// the sink's column [b, heads, q] where the family has sinks.
T pattern64(const Ctx& x, int layer, T* sinkShare = nullptr) {
    const T s = x.v(Value::AttentionScores, layer).to(torch::kFloat64);
    if (!x.f.attentionSinks) return torch::softmax(s, -1);
    const T sink = x.stored(ParamKey{Module::SelfAttn, Param::Sinks}, layer).to(torch::kFloat64).reshape({1, -1, 1, 1})
                       .expand({s.size(0), -1, s.size(2), 1});
    const T p = torch::softmax(torch::cat({s, sink}, -1), -1);
    if (sinkShare) *sinkShare = p.select(-1, s.size(-1));
    return p.narrow(-1, 0, s.size(-1));
}

CheckResult checkPatternSoftmax(Ctx& x, const std::string&) {
    auto allowed = torch::ones({x.S, x.S}, torch::TensorOptions().dtype(torch::kBool)).tril();
    Cmp sm;
    double rowErr = 0;
    bool causal = true;
    for (int i = 0; i < x.L; ++i) {
        T share;
        const T p = x.v(Value::AttentionProbabilities, i);
        merge(sm, compareRecomputed(p, pattern64(x, i, &share), x.dt()));
        // a row sums to 1, or with sinks to 1 - the sink's share
        const T want = share.defined() ? 1 - share : torch::ones(p.sizes().slice(0, 3), torch::TensorOptions().dtype(torch::kFloat64));
        rowErr = std::max(rowErr, (p.to(torch::kFloat64).sum(-1) - want).abs().max().item<double>());
        causal = causal && (p.masked_select(allowed.logical_not()) == 0).all().item<bool>();
    }
    const bool rowsOk = rowErr <= (x.dt() == torch::kBFloat16 ? 2e-2 : 1e-5);
    const bool ok = sm.ok && rowsOk && causal;
    const bool sinks = x.f.attentionSinks;
    std::string fig = std::string(sinks ? "softmax([attention_scores | sink]) without the sink's column" : "softmax(attention_scores)") +
                      " vs attention_probabilities: " + recomputedText(sm, x.dt()) + "; rows sum to " +
                      (sinks ? "1 - the sink's share" : "1") + " within " + num(rowErr) + "; " + (causal ? "exactly 0" : "NOT 0") +
                      " above the diagonal";
    return claim(ok, fig, "Over " + blocksText(x.L) + " and " + std::to_string(x.S) +
                              " positions. nnscope always runs the eager attention, so these interior values exist on every load.");
}

CheckResult checkSlidingWindow(Ctx& x, const std::string&) {
    const int64_t W = x.c.slidingWindow;
    std::string sliding, full;  // the blocks of each kind, "0, 2"
    for (int i = 0; i < x.L; ++i) {
        std::string& list = x.c.slides(i) ? sliding : full;
        list += (list.empty() ? "" : ", ") + std::to_string(i);
    }
    if (sliding.empty())
        return skipped("no block of this checkpoint attends through a sliding window (layer_types, sliding_window), so there is no "
                       "window to check.");
    // keys W or more positions behind their query: outside the window
    const T far = torch::ones({x.S, x.S}, torch::TensorOptions().dtype(torch::kBool)).tril(-W);
    const bool visible = far.any().item<bool>();
    double inSliding = 0, inFull = 0;
    for (int i = 0; visible && i < x.L; ++i) {
        const double m = x.v(Value::AttentionProbabilities, i).to(torch::kFloat64).index({"...", far}).max().item<double>();
        double& most = x.c.slides(i) ? inSliding : inFull;
        if (!(m <= most)) most = m;  // a NaN sticks
    }
    const bool ok = !visible || (inSliding == 0 && (full.empty() || inFull > 0));
    std::string fig = "blocks " + sliding + " slide (sliding_window " + std::to_string(W) + ")";
    if (!visible) {
        fig += "; the window is at least the prompt's " + std::to_string(x.S) + " positions, so every block sees every earlier key here";
    } else {
        fig += ": the largest probability on keys " + std::to_string(W) + " or more positions back is " + num(inSliding);
        if (!full.empty()) fig += "; the full-attention blocks " + full + " put up to " + num(inFull) + " there";
    }
    std::string det = "layer_types (or the family's default pattern) names each block's attention; a sliding block's probabilities must be "
                      "exactly 0 on every key at least sliding_window positions behind its query, a full block's must reach them. Over " +
                      blocksText(x.L) + " and " + std::to_string(x.S) + " positions.";
    return claim(ok, fig, det);
}

CheckResult checkAttentionSinks(Ctx& x, const std::string&) {
    if (!x.f.attentionSinks) return skipped("this family has no attention sinks");
    Cmp rows;
    double largest = -1, total = 0;
    int64_t count = 0;
    int bestLayer = 0, bestHead = 0;
    for (int i = 0; i < x.L; ++i) {
        T share;
        (void)pattern64(x, i, &share);  // [b, heads, q] in float64, from the scores and the stored sinks
        const T sum = x.v(Value::AttentionProbabilities, i).to(torch::kFloat64).sum(-1);
        merge(rows, compareClose(sum, 1 - share, 0, x.dt() == torch::kBFloat16 ? 2e-2 : 1e-5));
        const T perHead = share.mean(std::vector<int64_t>{0, 2});  // [heads]
        const int64_t h = perHead.argmax().item<int64_t>();
        if (perHead[h].item<double>() > largest) largest = perHead[h].item<double>(), bestLayer = i, bestHead = static_cast<int>(h);
        total += share.sum().item<double>();
        count += share.numel();
    }
    const double mean = count ? total / static_cast<double>(count) : 0;
    const std::string fig = "rows of attention_probabilities sum to 1 - the sink's share: " +
                            (rows.finite ? "max |diff| " + num(rows.maxAbs) : std::string("non-finite values")) + "; the sinks take " + pct(mean) +
                            " of the attention on average, most in block " + std::to_string(bestLayer) + " head " + std::to_string(bestHead) +
                            " (" + pct(largest) + ")";
    const std::string det = "Per block, the sink's share softmax([attention_scores | sinks])[..., -1] in float64 from the traced scores and the "
                            "stored self_attn.sinks, against 1 minus each row's sum of attention_probabilities, over " + blocksText(x.L) +
                            " and " + std::to_string(x.S) + " positions.";
    return claim(rows.ok && mean > 0, fig, det);
}

CheckResult checkSinkNorm(Ctx& x, const std::string&) {
    CheckResult r;
    r.kind = CheckKind::Figure;
    r.passed = true;
    if (x.S < 3) {
        r.figure = "the prompt is too short to compare position 0 with the others";
        return r;
    }
    int best = 0;
    double bestRatio = -1, bestN0 = 0, bestMed = 0;
    std::string det;
    for (int i = 0; i < x.L; ++i) {
        T n = x.v(Value::LayerOutput, i).to(torch::kFloat64)[0].norm(2, -1);  // [seq]
        const double n0 = n[0].item<double>();
        const double med = std::get<0>(n.index({Slice(1, None)}).median(0)).item<double>();
        // torch's median of an even count is the lower middle; good enough for a figure
        const double ratio = med > 0 ? n0 / med : INFINITY;
        det += (i ? "; " : "Per block, ‖layer_output‖ at position 0 / median of the others: ") + std::to_string(i) + ": " + num(n0) + " / " + num(med);
        if (ratio > bestRatio) {
            bestRatio = ratio;
            best = i;
            bestN0 = n0;
            bestMed = med;
        }
    }
    r.figure = "block " + std::to_string(best) + ": ‖layer_output‖ at position 0 is " + num(bestN0) + " against a median of " + num(bestMed) + " at the " +
               std::to_string(x.S - 1) + " other positions (" + num(bestRatio) + "×)";
    r.detail = det + ". A mean over positions is dominated by position 0 when this ratio is large: drop [:, 1:] first.";
    return r;
}

CheckResult checkNoRopeLayers(Ctx& x, const std::string&) {
    std::vector<int> nope;
    for (int i = 0; i < x.L; ++i)
        if (!x.c.rotates(i)) nope.push_back(i);
    if (nope.empty())
        return skipped("no block of this checkpoint is a NoPE block (no_rope_layers: every entry 1, or fewer blocks than "
                       "no_rope_layer_interval), so there is no unturned block to check.");
    Cmp unturned;
    double moved = 0;  // how far the rotary blocks' queries/keys moved from their projections (positions >= 1)
    std::string listed;
    for (int i = 0; i < x.L; ++i)
        for (bool keys : {false, true}) {
            T pre = x.preRotary(i, keys);
            T actual = x.v(keys ? Value::AttentionKeys : Value::AttentionQueries, i);
            if (!x.c.rotates(i)) merge(unturned, compareExact(actual, pre, x.dt()));
            else if (x.S > 1)
                moved = std::max(moved, (actual.index({Slice(), Slice(), Slice(1, None)}).to(torch::kFloat64) -
                                         pre.index({Slice(), Slice(), Slice(1, None)})).abs().max().item<double>());
        }
    for (int i : nope) listed += (listed.empty() ? "" : ", ") + std::to_string(i);
    const bool anyRotary = static_cast<int>(nope.size()) < x.L;
    const bool ok = unturned.ok && (!anyRotary || x.S < 2 || moved > recomputeTol(x.dt()));
    std::string fig = std::string(nope.size() == 1 ? "block " : "blocks ") + listed + " of " + std::to_string(x.L) +
                      (nope.size() == 1 ? " is NoPE" : " are NoPE") + ": attention_queries and attention_keys == " + x.preRotaryName() +
                      " cut into heads, " + exactText(unturned, x.dt());
    if (anyRotary) fig += "; the rotary blocks' moved by up to " + num(moved) + " at positions ≥ 1";
    std::string det = "no_rope_layers (or every no_rope_layer_interval-th block) as config.json gives it; in a NoPE block the queries and "
                      "keys are compared with the projections' outputs at all " + std::to_string(x.S) + " positions, in the others they must "
                      "differ from them past position 0 (the rotary turned them).";
    return claim(ok, fig, det);
}

CheckResult checkLoadsAs(Ctx& x, const std::string&) {
    const std::string mt = x.c.raw.contains("model_type") && x.c.raw["model_type"].is_string() ? x.c.raw["model_type"].get<std::string>() : "";
    std::vector<std::string> foreign;
    for (const auto& a : x.c.architectures)
        if (std::find(x.f.architectures.begin(), x.f.architectures.end(), a) == x.f.architectures.end()) foreign.push_back(a);
    const auto read = namesRead(x.m);
    std::vector<std::string> unread;
    size_t skipped = 0;  // the parts the family leaves unread on purpose (Gemma 3's vision tower)
    const auto names = x.m.weights().names();
    for (const auto& n : names)
        if (x.f.skipsTensor(n)) ++skipped;
        else if (!read.count(n)) unread.push_back(n);
    std::string archs;
    for (const auto& a : x.c.architectures) archs += (archs.empty() ? "" : ", ") + a;
    const bool ok = (mt.empty() || mt == x.f.modelType) && foreign.empty() && unread.empty();
    std::string fig = "model_type " + (mt.empty() ? std::string("(none)") : mt) + ", architectures " + archs + " → families/" + x.f.modelType +
                      ".cpp; " + std::to_string(read.size()) + " of " + std::to_string(names.size()) + " stored tensors read";
    if (skipped > 0) fig += " (" + std::to_string(skipped) + " skipped: " + x.f.skippedNote + ")";
    std::string det;
    if (!foreign.empty()) det += "config.json names " + foreign.front() + ", which is not " + x.f.architectures.front() + ": it loads by model_type. ";
    if (!unread.empty()) {
        det += "Tensors in the file that the " + x.f.classPrefix + " modules have no place for:";
        for (size_t k = 0; k < unread.size() && k < 5; ++k) det += " " + unread[k];
        if (unread.size() > 5) det += " … (" + std::to_string(unread.size()) + ")";
        det += ".";
    }
    return claim(ok, fig, det);
}

CheckResult checkProjectionBiases(Ctx& x, const std::string& arg) {
    // (the projection's weight, its bias)
    const std::vector<std::pair<ParamKey, ParamKey>> biases = {
        {ParamKey{Module::QProj}, ParamKey{Module::QProj, Param::Bias}}, {ParamKey{Module::KProj}, ParamKey{Module::KProj, Param::Bias}}, {ParamKey{Module::VProj}, ParamKey{Module::VProj, Param::Bias}},
        {ParamKey{Module::QkvProj}, ParamKey{Module::QkvProj, Param::Bias}}, {ParamKey{Module::OProj}, ParamKey{Module::OProj, Param::Bias}}, {ParamKey{Module::GateProj}, ParamKey{Module::GateProj, Param::Bias}},
        {ParamKey{Module::UpProj}, ParamKey{Module::UpProj, Param::Bias}}, {ParamKey{Module::DownProj}, ParamKey{Module::DownProj, Param::Bias}}};
    int storedRead = 0, storedUnread = 0, applicable = 0, missing = 0;
    std::string unreadName;
    for (int i = 0; i < x.c.numLayers; ++i) {
        const LayerWeights& lw = x.m.layer(i);
        for (const auto& [weightOf, w] : biases) {
            const std::string name = x.f.tensorName(w, i);
            const T* weight = layerTensor(lw, weightOf);
            if (name.empty() || !weight || !weight->defined()) continue;  // the family has no such projection
            ++applicable;
            const bool stored = x.m.weights().contains(name);
            const bool used = layerTensor(lw, w)->defined();
            if (stored && used) ++storedRead;
            if (stored && !used) {
                ++storedUnread;
                if (unreadName.empty()) unreadName = name;
            }
            if (!used) ++missing;
        }
    }
    const bool requireAll = arg == "all";
    // "Every projection has a bias" is a note about the family's usual checkpoints; one whose config switches the biases
    // off (GPT-NeoX's attention_bias false) computes what transformers computes, without them: the claim does not apply.
    if (requireAll && missing && storedUnread == 0 && x.c.raw.contains("attention_bias") && x.c.raw["attention_bias"] == false)
        return skipped("attention_bias is false on this checkpoint, so its attention projections have no bias (as transformers builds "
                       "them); the note is about checkpoints with biases.");
    const bool ok = storedUnread == 0 && (!requireAll || missing == 0);
    std::string keys;
    if (x.c.raw.contains("use_bias")) keys = "use_bias " + x.c.raw["use_bias"].dump();
    else if (x.c.raw.contains("attention_bias") || x.c.raw.contains("mlp_bias"))
        keys = "attention_bias " + x.c.raw.value("attention_bias", nlohmann::json(false)).dump() + ", mlp_bias " + x.c.raw.value("mlp_bias", nlohmann::json(false)).dump();
    else keys = "no bias key (the family decides)";
    std::string fig = storedUnread ? std::to_string(storedUnread) + " stored projection bias(es) not applied (" + keys + "): the config and the file disagree"
                                   : std::to_string(storedRead) + " of " + std::to_string(applicable) + " projections (" + blocksText(x.c.numLayers) +
                                         ") have a bias, stored and applied; " + keys;
    if (requireAll && missing) fig += "; " + std::to_string(missing) + " projection(s) without a bias";
    std::string det;
    if (storedUnread) det += "For example " + unreadName + " is in the file but not applied. ";
    det += "lm_head has no bias.";
    return claim(ok, fig, det);
}

// ---------------------------------------------------------------------------------------------------------------
// The table of checks

struct CheckDef {
    const char* id;
    const char* title;
    const char* doc;
    std::function<std::vector<Value>(const Ctx&)> needs;  ///< per-block values the check reads
    bool needsLogits;
    std::function<CheckResult(Ctx&, const std::string&)> run;
};

std::vector<Value> none(const Ctx&) { return {}; }

const std::vector<CheckDef>& checkTable() {
    static const std::vector<CheckDef> table = {
        {"contribution_identity", "layers[i].input + attention_output + mlp_output == layer_output; the contributions are the output projections' outputs",
         "Per block, (layer_input + attention_output) + mlp_output against layer_output (assert_close); attention_output against o_proj(attention_premix) "
         "and mlp_output against down_proj(mlp_neurons), recomputed in float64 from the stored weights.",
         [](const Ctx&) {
             return std::vector<Value>{Value::LayerInput, Value::AttentionOutput, Value::MlpOutput, Value::LayerOutput, Value::AttentionPremix,
                                       Value::MlpNeurons, Value::NativeAttentionOutputNormOutput, Value::NativeMlpOutputNormOutput};
         },
         false, checkContributionIdentity},
        {"router_topk", "expert_indices are the top k of softmax(router_logits); expert_weights their probabilities, renormalised as norm_topk_prob says",
         "On every block with experts: router_logits against mlp_input · gateᵀ recomputed in float64 from the stored router weight; the top-k of their "
         "float64 softmax against expert_indices (the same experts, the same order) and against expert_weights.",
         [](const Ctx&) { return std::vector<Value>{Value::MlpInput, Value::RouterLogits, Value::ExpertIndices, Value::ExpertWeights}; }, false,
         checkRouterTopk},
        {"router_groups", "the chosen experts lie in the best groups and are the top k there; expert_weights are their scores × routed_scaling_factor",
         "On every block with experts of a DeepSeek-style router: router_logits against mlp_input · gateᵀ from the stored router weight; in float64, "
         "the scores (sigmoid + the stored e_score_correction_bias, or DeepSeek-V2's softmax), the topk_group best groups (a group scored by the "
         "sum of its two best, or its best), every chosen expert inside them, the top k there as a set against expert_indices (transformers' "
         "top-k is unsorted), and expert_weights against the uncorrected scores (renormalised under norm_topk_prob) × routed_scaling_factor.",
         [](const Ctx&) { return std::vector<Value>{Value::MlpInput, Value::RouterLogits, Value::ExpertIndices, Value::ExpertWeights}; }, false,
         checkRouterGroups},
        {"latent_attention", "attention_keys/values are kv_b_proj(kv_latent) with the shared key_rope; attention_queries [query_nope | query_rope]",
         "On every block of a multi-head latent attention: attention_keys against [kv_b_proj(kv_latent)'s key part | key_rope] and attention_values "
         "against its value part, recomputed in float64 from the stored kv_b_proj; query_nope against q_b_proj(q_latent) (or q_proj's output); "
         "attention_queries against [query_nope | query_rope] (assert_close); key_rope at position 0 against kv_a_proj_with_mqa's rotary outputs.",
         [](const Ctx& x) {
             std::vector<Value> v{Value::AttentionNormOutput, Value::KvLatent, Value::KeyRope, Value::QueryNope, Value::QueryRope,
                                  Value::AttentionQueries, Value::AttentionKeys, Value::AttentionValues};
             v.push_back(x.c.mla.qLoraRank > 0 ? Value::QLatent : Value::NativeQProjOutput);
             return v;
         },
         false, checkLatentAttention},
        {"routed_is_weighted_sum", "routed_output == Σ_k expert_weights[k] · expert_outputs[k], each expert's output its own projections'",
         "On every block with experts: routed_output against the weighted sum of expert_outputs in float64; every chosen expert's output recomputed "
         "from its stored gate/up/down projections (one tensor per expert) with the config's activation; mlp_output against routed_output (+ "
         "shared_expert_output).",
         [](const Ctx&) {
             return std::vector<Value>{Value::MlpInput, Value::ExpertIndices, Value::ExpertWeights, Value::ExpertOutputs, Value::RoutedOutput,
                                       Value::SharedExpertOutput, Value::MlpOutput};
         },
         false, checkRoutedWeightedSum},
        {"lens_equals_logits", "project_on_vocab(last layer_output) == logits",
         "The logit lens at the last block (Model::projectOnVocab) against the logits (assert_close), and lm_head(norm(h)) recomputed from the stored final "
         "norm and head.",
         [](const Ctx& x) { return std::vector<Value>{Value::LayerOutput}; }, true, checkLens},
        {"tied_head", "lm_head and embed_tokens are one matrix exactly when tie_word_embeddings says so",
         "Whether lm_head shares embed_tokens' storage (Model::headTied, data pointers), against config.json's tie_word_embeddings and whether the file "
         "stores its own lm_head.weight (a stored head that differs while the config ties is a failure: as transformers does, it is used "
         "and the two are not tied).",
         none, false, checkTiedHead},
        {"bos_prepended", "the tokenizer prepends its BOS token",
         "encode(prompt) starts with the tokenizer's BOS id and is one id longer than without special tokens; \"\" encodes to [BOS]; the traced input_ids "
         "start with it. A config.json bos_token_id that disagrees is reported.",
         none, false, checkBos},
        {"relu2_zeros", "mlp_activation == relu(pre-activation)², exactly zero wherever the pre-activation is ≤ 0",
         "Bit-for-bit equality of the activation with relu(x)² of act_fn's input; the fraction of exact zeros and of pre-activations ≤ 0; down_proj's "
         "input is the activation; up_proj's output recomputed from the stored weight. With the argument if_relu2 the check applies only when hidden_act "
         "is relu2 (otherwise: not run).",
         [](const Ctx&) { return std::vector<Value>{Value::NativeActFnInput, Value::MlpActivation, Value::MlpNeurons, Value::MlpInput}; }, false,
         checkRelu2},
        {"act_from_config", "act_fn's output == hidden_act(its input), the formula written out",
         "The activation recomputed in float64 from config.json's hidden_act (silu, gelu, gelu_pytorch_tanh, relu, relu2, xielu, ...).",
         [](const Ctx&) { return std::vector<Value>{Value::NativeActFnInput, Value::MlpActivation}; }, false, checkActFromConfig},
        {"no_gate", "the MLP has no gate: up_proj, the activation, down_proj",
         "The family's MLP is plain and the file stores no MLP tensor besides up/down (and the activation's parameters): a stored gate would be ignored.",
         none, false, checkNoGate},
        {"act_input_is_up", "act_fn's input is up_proj's output and its output is down_proj's input",
         "Bit-for-bit equality of the native values, and up_proj's output recomputed from the stored weight.",
         [](const Ctx&) {
             return std::vector<Value>{Value::NativeActFnInput, Value::NativeUpProjOutput, Value::MlpActivation, Value::MlpNeurons, Value::MlpInput};
         },
         false, checkActInputIsUp},
        {"xielu_formula", "act_fn's output == xIELU(x) with beta 0.5, eps −1e-6 and softplus of the stored alpha_p, alpha_n",
         "alpha_p·x² + beta·x for x > 0, alpha_n·(expm1(min(x, eps)) − x) + beta·x otherwise, in float64 from the raw stored scalars and the note's beta "
         "and eps (a stored beta or eps that differs fails).",
         [](const Ctx&) { return std::vector<Value>{Value::NativeActFnInput, Value::MlpActivation}; }, false, checkXieluFormula},
        {"xielu_scalars", "effective alpha_p = softplus(alpha_p), alpha_n = beta + softplus(alpha_n), different in every block",
         "The effective scalars of every block from the stored raw values (figure: where alpha_p is largest and smallest, alpha_n's range), measured "
         "back from the engine's activations; fails when two blocks share both scalars (an untrained checkpoint).",
         [](const Ctx&) { return std::vector<Value>{Value::NativeActFnInput, Value::MlpActivation}; }, false, checkXieluScalars},
        {"xielu_negative", "negative pre-activations are not switched off: the branch dips below zero and grows again",
         "Per block, the minimum of the negative branch (x = ln(1 − beta/alpha_n)) lies above x = −20 and the branch rises again by x = −20; fewer than "
         "1% of the negative pre-activations give exactly 0. Figures: the minimum, f(−1), f(−5), f(−20), the fraction of negative pre-activations and of "
         "activations within 1e-3 of zero, for the block with the most negative pre-activations.",
         [](const Ctx&) { return std::vector<Value>{Value::NativeActFnInput, Value::MlpActivation}; }, false, checkXieluNegative},
        {"qk_norm_position0", "queries and keys are normed per head before the rotary: at position 0 attention_queries == q_norm's output",
         "attention_queries/keys at position 0 against q_norm/k_norm's outputs (assert_close), and the norms recomputed from the stored projection and "
         "gain; figure: the largest gains.",
         [](const Ctx& x) {
             auto v = x.preRotaryValues();
             v.insert(v.end(), {Value::AttentionQueries, Value::AttentionKeys, Value::AttentionNormOutput});
             return v;
         },
         false, checkQkNormPosition0},
        {"qk_norm_renormalizes", "scaling one head's slice of the query projection is renormalised away; scaling attention_queries is not",
         "Two more passes: one doubles head 1's slice of the query projection's output at block 1 (attention_queries must move by at most 1e-3 of their "
         "scale), one doubles head 1 of attention_queries (its scores must double); both moves of the logits are reported.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionQueries, Value::AttentionScores}; }, true, checkQkNormRenormalizes},
        {"rotation_position1", "plain rotary with the family's pairing: position 0 unturned, position 1 turned by one radian on the first pair",
         "attention_queries/keys at every position against the pre-rotary values turned by p·rope_theta^(−2i/d) (no scaling) with the family's pairing, "
         "the first pair at position 1 spelled out; the other pairing must not fit.",
         [](const Ctx& x) {
             auto v = x.preRotaryValues();
             v.insert(v.end(), {Value::AttentionQueries, Value::AttentionKeys});
             return v;
         },
         false, checkRotationPosition1},
        {"rope_kind", "the rotary is the one config.json names, one of those the note lists",
         "The rope type against the note's list (argument: rope_kind:default|yarn); attention_queries/keys against the pre-rotary values turned with "
         "inverse frequencies and attention factor recomputed in float64 for that type (default, linear, llama3, yarn, longrope).",
         [](const Ctx& x) {
             auto v = x.preRotaryValues();
             v.insert(v.end(), {Value::AttentionQueries, Value::AttentionKeys});
             return v;
         },
         false, checkRopeKind},
        {"no_rope_layers", "in a NoPE block attention_queries/keys are the projections' outputs, unturned; the other blocks turn them",
         "Per block from no_rope_layers: a NoPE block's attention_queries and attention_keys against q_proj's and k_proj's outputs cut into heads "
         "(assert_close, every position); a rotary block's must differ from them past position 0. Not run when no block is NoPE.",
         [](const Ctx& x) {
             auto v = x.preRotaryValues();
             v.insert(v.end(), {Value::AttentionQueries, Value::AttentionKeys});
             return v;
         },
         false, checkNoRopeLayers},
        {"unrotated_half", "past the rotary width, attention_queries/keys are the normed projection unchanged",
         "From the stored fused weight: q and k sliced [num_heads, 3, head_dim], LayerNormed with the stored q/k norm; the dims past "
         "int(head_dim·partial_rotary_factor) must equal it, the first ones must equal it turned; fails when nothing is left unrotated.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionNormOutput, Value::AttentionQueries, Value::AttentionKeys}; }, false,
         checkUnrotatedHalf},
        {"fused_qkv_values", "attention_values == einsum(h, W[:, 2]) + b[:, 2] with the fused weight viewed [num_heads, 3, head_dim, hidden]",
         "The values recomputed from the stored fused weight and bias; the [3, num_heads, head_dim] reading must not fit; every head has its own keys and "
         "values.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionNormOutput, Value::AttentionValues}; }, false, checkFusedQkvValues},
        {"gqa_scores", "query head h reads key/value head ⌊h / group⌋",
         "attention_scores recomputed from attention_queries and attention_keys with repeat_kv's grouping (the interleaved grouping must not fit), "
         "masked entries at the dtype's minimum.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionQueries, Value::AttentionKeys, Value::AttentionScores}; }, false, checkGqaScores},
        {"pattern_softmax", "attention_probabilities == softmax(attention_scores), rows sum to 1, zero above the diagonal",
         "DESIGN.md's attention invariants on every block.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionScores, Value::AttentionProbabilities}; }, false, checkPatternSoftmax},
        {"sliding_window", "sliding blocks put no probability on keys sliding_window or more positions back; full blocks reach them",
         "Per block from layer_types: the largest attention probability on keys at least sliding_window positions behind the query, exactly 0 "
         "on a sliding block and above 0 on a full one (when the prompt is longer than the window); not run when no block slides.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionProbabilities}; }, false, checkSlidingWindow},
        {"attention_sinks", "a row of attention_probabilities sums to 1 minus its head's sink share",
         "Per block, the sink's share recomputed in float64 from attention_scores and the stored self_attn.sinks (softmax over the keys and "
         "the sink, the sink's column), against 1 minus each row's sum; figure: the mean share and the head that gives its sink the most.",
         [](const Ctx&) { return std::vector<Value>{Value::AttentionScores, Value::AttentionProbabilities}; }, false, checkAttentionSinks},
        {"sink_norm", "the norm of the residual stream at position 0 against the other positions (a figure)",
         "Per block, ‖layer_output‖ at position 0 and the median over the other positions; the block with the largest ratio is the figure.",
         [](const Ctx&) { return std::vector<Value>{Value::LayerOutput}; }, false, checkSinkNorm},
        {"loads_as", "config.json names this family, and every stored tensor is read",
         "model_type and architectures against the family's; every tensor in the weight files is one the family's modules read.", none, false,
         checkLoadsAs},
        {"projection_biases", "a projection has a bias exactly when the config says so",
         "Every stored projection bias is applied (a stored bias the config leaves off fails); with the argument all, every projection must have one.",
         none, false, checkProjectionBiases},
    };
    return table;
}

const CheckDef* findCheck(const std::string& base) {
    for (const auto& d : checkTable())
        if (base == d.id) return &d;
    return nullptr;
}

std::pair<std::string, std::string> splitId(const std::string& spec) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos) return {spec, ""};
    return {spec.substr(0, colon), spec.substr(colon + 1)};
}

}  // namespace

std::vector<std::string> familyCheckIds(const Family& family) {
    std::vector<std::string> ids;
    for (const auto& note : family.notes)
        for (const auto& id : note.checks)
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    return ids;
}

std::vector<std::pair<std::string, std::string>> knownChecks() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& d : checkTable()) out.emplace_back(d.id, std::string(d.title) + ". " + d.doc);
    return out;
}

const char* checkMark(const CheckResult& r) {
    switch (r.kind) {
        case CheckKind::Figure: return "ℹ";
        case CheckKind::Skipped: return "–";
        case CheckKind::Claim: break;
    }
    return r.passed ? "✔" : "✗";
}

CheckSummary summarizeChecks(const std::vector<CheckResult>& results) {
    CheckSummary s;
    for (const auto& r : results) {
        if (r.kind == CheckKind::Figure) ++s.figures;
        else if (r.kind == CheckKind::Skipped) ++s.skipped;
        else if (r.passed) ++s.passed;
        else ++s.failed;
    }
    return s;
}

std::vector<CheckResult> runFamilyChecks(const Model& model, const std::string& prompt) {
    c10::InferenceMode guard;
    const Family& fam = model.family();
    Ctx x{model, model.config(), fam, prompt, {}, {}, static_cast<int>(model.config().numLayers), 0};
    const auto ids = familyCheckIds(fam);

    // One pass, keeping only what the named checks read.
    std::set<ValueKey> save;
    bool anyTrace = false;
    for (const auto& spec : ids) {
        const CheckDef* d = findCheck(splitId(spec).first);
        if (!d) continue;
        const auto vals = d->needs(x);
        if (!vals.empty() || d->needsLogits) anyTrace = true;
        for (Value v : vals)
            for (int i = 0; i < x.L; ++i) save.insert({v, i});
        if (d->needsLogits) save.insert({Value::Logits, -1});
    }
    if (anyTrace) {
        if (model.tokenizer()) {
            x.batch = encodeBatch(model, {prompt});
        } else {
            std::vector<int64_t> row;
            for (int64_t k = 0; k < 8; ++k) row.push_back((1 + 5 * k) % model.config().vocabSize);
            x.batch = batchFromIds({row});
        }
        x.S = x.batch.inputIds.size(1);
        if (x.S < 3)  // not the checkpoint's failure: no check is run, rather than every one shown as failed
            throw Error("the prompt \"" + prompt + "\" gives " + std::to_string(x.S) +
                        " token(s); the family checks need at least 3 positions: give a longer prompt.");
        TraceOptions o;
        o.save.assign(save.begin(), save.end());
        TraceResult tr = trace(model, x.batch, o);
        for (auto& [k, t] : tr.values) x.values[k] = t;
    }

    std::vector<CheckResult> results;
    for (const auto& spec : ids) {
        const auto [base, arg] = splitId(spec);
        const CheckDef* d = findCheck(base);
        CheckResult r;
        if (!d) {
            r = claim(false, "unknown check id", "families/" + fam.modelType + ".cpp names the check \"" + spec +
                                                     "\", which nnscope does not know (docs/FAMILIES.md lists them).");
        } else {
            try {
                r = d->run(x, arg);
            } catch (const Error& e) {
                r = claim(false, "could not run", e.what());
            } catch (const c10::Error& e) {
                r = claim(false, "could not run", std::string("libtorch: ") + e.what_without_backtrace());
            } catch (const std::exception& e) {
                r = claim(false, "could not run", e.what());
            }
            r.title = d->title;
        }
        r.id = spec;
        if (r.title.empty()) r.title = spec;
        results.push_back(std::move(r));
    }
    return results;
}

}  // namespace nnscope
