// SPDX-License-Identifier: MIT
#include "core/model/rope.h"

#include "core/model/error.h"

#include <torch/types.h>

#include <cmath>

namespace nnscope {

RopeTables computeRope(const RopeConfig& rope, int64_t dim, int64_t maxPos) {
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    // inv_freq = 1 / (base ** (arange(0, dim, 2) / dim)), in float32 as transformers computes it.
    auto exponents = torch::arange(0, dim, 2, torch::TensorOptions().dtype(torch::kInt64)).to(torch::kFloat32) / static_cast<double>(dim);
    auto posFreqs = torch::pow(rope.theta, exponents);
    RopeTables out;
    out.invFreq = 1.0 / posFreqs;
    if (rope.type == "default") return out;
    if (rope.type == "linear") {
        out.invFreq = out.invFreq / *rope.factor;
        return out;
    }
    if (rope.type == "longrope") {
        // _compute_longrope_parameters: inv_freq = 1 / (ext_factors * base ** (2i / dim)), short_factor up to
        // original_max_position_embeddings tokens, long_factor past it (longrope_frequency_update picks by
        // max(position_ids) + 1); cos and sin scaled by sqrt(1 + ln(factor) / ln(original)).
        const auto half = static_cast<size_t>(dim / 2);
        if (rope.shortFactor.size() != half || rope.longFactor.size() != half)
            throw Error("longrope: short_factor and long_factor must have rotary_dim / 2 = " + std::to_string(half) + " entries (config.json).");
        auto tensorOf = [&](const std::vector<double>& v) { return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64)).to(torch::kFloat32); };
        out.invFreq = 1.0 / (tensorOf(rope.shortFactor) * posFreqs);
        out.invFreqLong = 1.0 / (tensorOf(rope.longFactor) * posFreqs);
        out.longFrom = rope.originalMaxPositionEmbeddings;
        const double original = static_cast<double>(rope.originalMaxPositionEmbeddings);
        const double factor = rope.factor ? *rope.factor : static_cast<double>(maxPos) / original;
        if (rope.attentionFactor) out.attentionScaling = *rope.attentionFactor;
        else out.attentionScaling = factor <= 1.0 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(original));
        return out;
    }
    if (rope.type == "llama3") {
        const double factor = *rope.factor, low = *rope.lowFreqFactor, high = *rope.highFreqFactor;
        const double oldContext = static_cast<double>(rope.originalMaxPositionEmbeddings);
        const double lowWavelen = oldContext / low, highWavelen = oldContext / high;
        auto invFreq = out.invFreq;
        auto wavelen = 2 * M_PI / invFreq;
        auto llama = torch::where(wavelen > lowWavelen, invFreq / factor, invFreq);
        auto smooth = (oldContext / wavelen - low) / (high - low);
        auto smoothed = (1 - smooth) * llama / factor + smooth * llama;
        auto medium = torch::logical_not(wavelen < highWavelen) * torch::logical_not(wavelen > lowWavelen);
        out.invFreq = torch::where(medium, smoothed, llama);
        return out;
    }
    if (rope.type == "yarn") {
        double factor = rope.factor ? *rope.factor
                                    : static_cast<double>(maxPos) / static_cast<double>(rope.originalMaxPositionEmbeddings);
        auto getMscale = [](double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; };
        if (rope.attentionFactor) out.attentionScaling = *rope.attentionFactor;
        else if (rope.mscale && rope.mscaleAllDim && *rope.mscale != 0 && *rope.mscaleAllDim != 0)
            out.attentionScaling = getMscale(factor, *rope.mscale) / getMscale(factor, *rope.mscaleAllDim);
        else out.attentionScaling = getMscale(factor, 1.0);
        const double betaFast = rope.betaFast && *rope.betaFast != 0 ? *rope.betaFast : 32.0;
        const double betaSlow = rope.betaSlow && *rope.betaSlow != 0 ? *rope.betaSlow : 1.0;
        const double base = rope.theta;
        const double orig = static_cast<double>(rope.originalMaxPositionEmbeddings);
        auto correctionDim = [&](double rotations) {
            return (static_cast<double>(dim) * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
        };
        double lo = correctionDim(betaFast), hi = correctionDim(betaSlow);
        if (rope.truncate) {
            lo = std::floor(lo);
            hi = std::ceil(hi);
        }
        lo = std::max(lo, 0.0);
        hi = std::min(hi, static_cast<double>(dim - 1));
        if (lo == hi) hi += 0.001;  // prevent the singularity, as transformers does
        auto ramp = torch::clamp((torch::arange(dim / 2, f32) - lo) / (hi - lo), 0, 1);
        auto extrapolationFactor = 1 - ramp;
        auto invExtrapolation = 1.0 / posFreqs;
        auto invInterpolation = 1.0 / (factor * posFreqs);
        out.invFreq = invInterpolation * (1 - extrapolationFactor) + invExtrapolation * extrapolationFactor;
        return out;
    }
    throw Error("rope type \"" + rope.type + "\" is not supported.");
}

}  // namespace nnscope
