// SPDX-License-Identifier: MIT
#include "featureeffects.h"

#include "core/model/error.h"
#include "core/model/family.h"

#include <algorithm>
#include <limits>

namespace nnscope {
namespace {

void checkFeature(const Dictionary& d, int64_t feature) {
    if (feature < 0 || feature >= d.dSae)
        throw Error("feature " + std::to_string(feature) + " does not exist: the dictionary " + d.dir + " has " +
                    std::to_string(d.dSae) + " features (0 to " + std::to_string(d.dSae - 1) + ").");
    if (d.encoderOnly)
        throw Error(d.describe() + ": no decoder of its own (a cross-layer transcoder's layer writes every later layer): read the "
                    "transcoder whole for its features' effects.");
}

/// The k largest and smallest logits of direction `dir` [hidden_size] written into the residual stream (float32).
FeatureLogitEffects logitEffectsOfDirection(const Model& model, torch::Tensor dir, int k) {
    const int64_t hidden = model.config().hiddenSize;
    const NormKind kind = model.family().norm;
    if (kind == NormKind::LayerNorm) dir = dir - dir.mean();  // LayerNorm centres what it reads
    const torch::Tensor& w = model.finalNormWeight();
    torch::Tensor gain = w.defined() ? w.to(torch::kFloat32) : torch::ones({hidden});
    if (kind == NormKind::RMSNormPlusOne) gain = gain + 1.0;  // Gemma's norm scales by (1 + weight)
    // in the compute dtype, as the lens does: a float32 copy of lm_head would cost vocab_size x hidden_size floats
    const torch::Tensor logits = torch::matmul(model.lmHead(), (gain * dir).to(model.dtype())).to(torch::kFloat32);
    k = static_cast<int>(std::min<int64_t>(k, logits.size(0)));
    FeatureLogitEffects out;
    const auto [hi, hiIdx] = logits.topk(k);
    const auto [lo, loIdx] = logits.topk(k, -1, /*largest=*/false);
    for (int j = 0; j < k; ++j) {
        out.promoted.push_back({hiIdx[j].item<int64_t>(), hi[j].item<double>()});
        out.suppressed.push_back({loIdx[j].item<int64_t>(), lo[j].item<double>()});
    }
    return out;
}

}  // namespace

FeatureLogitEffects featureLogitEffects(const Model& model, const Dictionary& d, int64_t feature, int k) {
    c10::InferenceMode guard;
    checkFeature(d, feature);
    const int64_t hidden = model.config().hiddenSize;
    if (d.dOut != hidden)
        throw Error("the dictionary writes " + std::to_string(d.dOut) + " values per position, not the residual stream's " +
                    std::to_string(hidden) + " (hidden_size): its features have no direct logit effect.");
    return logitEffectsOfDirection(model, d.wDec.index({feature}).to(torch::kFloat32), k);
}

FeatureLogitEffects featureLogitEffects(const Model& model, const CrossLayerTranscoder& t, int layer, int64_t feature, int k) {
    c10::InferenceMode guard;
    const int64_t hidden = model.config().hiddenSize;
    if (t.dModel != hidden)
        throw Error("the cross-layer transcoder " + t.dir + " writes " + std::to_string(t.dModel) +
                    " values per position, not the residual stream's " + std::to_string(hidden) + " (hidden_size).");
    // decoderRows checks the layer and the feature: [n_layers - layer, d_model], summed in float32
    return logitEffectsOfDirection(model, t.decoderRows(layer, feature).to(torch::kFloat32).sum(0), k);
}

std::vector<FeatureSimilarity> nearestFeatures(const Dictionary& d, int64_t feature, int k) {
    c10::InferenceMode guard;
    checkFeature(d, feature);
    const torch::Tensor w = d.wDec.to(torch::kFloat32);  // [d_sae, d_out]
    const torch::Tensor norms = w.norm(2, /*dim=*/1).clamp_min(1e-12);
    torch::Tensor cos = torch::matmul(w, w.index({feature})) / (norms * norms.index({feature}));
    cos.index_put_({feature}, -std::numeric_limits<float>::infinity());  // not its own neighbour
    const int n = static_cast<int>(std::min<int64_t>(k, d.dSae - 1));
    std::vector<FeatureSimilarity> out;
    if (n <= 0) return out;
    const auto [vals, idx] = cos.topk(n);
    for (int j = 0; j < n; ++j) out.push_back({idx[j].item<int64_t>(), vals[j].item<double>()});
    return out;
}

}  // namespace nnscope
