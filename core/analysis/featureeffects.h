// SPDX-License-Identifier: MIT
#pragma once
// What one feature of a sparse dictionary does, read from its weights alone (no trace needed): the tokens its decoder
// direction promotes and suppresses through the unembedding (Neuronpedia's and TransformerLens' "logit weight
// distribution"), and the features whose decoder directions point the same way.
#include "core/analysis/attribution.h"
#include "core/io/dictionary.h"
#include "core/io/transcoderset.h"
#include "core/model/model.h"

#include <utility>
#include <vector>

namespace nnscope {

/// The tokens a feature's decoder row promotes (largest logit first) and suppresses (most negative first).
struct FeatureLogitEffects {
    std::vector<TokenEffect> promoted, suppressed;
};

/// The direct logit effect of feature `feature` of `dictionary`: its decoder row d = W_dec[feature] [d_out] through the
/// final norm's gain only (the weight, 1 + weight on Gemma; centred first for a LayerNorm family) and the unembedding,
/// logits = lm_head · (gain ⊙ d) [vocab_size], as TransformerLens and Neuronpedia compute it (the norm's 1 / RMS left
/// out: it rescales every token alike). The `k` largest and smallest. Throws nnscope::Error when the feature is out of
/// range, when the dictionary does not write the residual stream's width (d_out != hidden_size: neurons, hook_z), or
/// when the model has no weights.
FeatureLogitEffects featureLogitEffects(const Model& model, const Dictionary& dictionary, int64_t feature, int k);

/// The direct logit effect of feature `feature` of source layer `layer` of a cross-layer transcoder: the sum of its
/// decoder rows to every output layer it writes, d = Σ_{j} W_dec_layer[feature, j, :] [d_model] (each row is added to
/// the residual stream at its output layer's MLP output, and the final norm reads the sum), through the final norm's
/// gain and the unembedding as above. Throws nnscope::Error when the layer or the feature is out of range, when the
/// transcoder's d_model is not the model's hidden_size, or when the model has no weights.
FeatureLogitEffects featureLogitEffects(const Model& model, const CrossLayerTranscoder& transcoder, int layer, int64_t feature, int k);

/// A feature and its decoder cosine with another.
struct FeatureSimilarity {
    int64_t feature;
    double cosine;
};

/// The `k` features whose decoder rows are nearest to feature `feature`'s by cosine (largest first, the feature itself
/// left out): cos(W_dec[f], W_dec[j]) over the d_out axis. Throws nnscope::Error when the feature is out of range.
std::vector<FeatureSimilarity> nearestFeatures(const Dictionary& dictionary, int64_t feature, int k);

}  // namespace nnscope
