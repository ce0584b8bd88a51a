// SPDX-License-Identifier: MIT
#pragma once
// Analyses the window draws, computed from a trace's saved values: attention patterns, neuron activations and the
// logit lens. No Qt here: the command line and the tests can use them too.
#include "trace.h"

#include <torch/types.h>

#include <vector>

namespace nnscope {

/// Where one prompt's own tokens sit in a left-padded batch: positions [start, start + length).
struct PromptSpan {
    int64_t start = 0;
    int64_t length = 0;
};
/// The span of prompt `row`. Throws nnscope::Error when the batch has no such row.
PromptSpan promptSpan(const Batch& batch, int64_t row);

/// The values the window's views read: attention_probabilities, mlp_neurons and layer_output of every block.
std::vector<ValueKey> viewValueKeys(const Model& model);

/// A saved value of prompt `row`, without the batch axis and cut to the prompt's real positions on every axis
/// named seq, query or key; float32 and contiguous. Throws nnscope::Error naming the path when it was not saved.
torch::Tensor promptValue(const Model& model, const TraceResult& result, const ValueKey& key, int64_t row);

/// attention_probabilities of block `layer` for prompt `row`: float32 [num_heads, length, length].
torch::Tensor attentionPattern(const Model& model, const TraceResult& result, int layer, int64_t row);
/// mlp_neurons of block `layer` for prompt `row`: float32 [length, intermediate_size].
torch::Tensor neuronActivations(const Model& model, const TraceResult& result, int layer, int64_t row);

/// One neuron's activation at a position.
struct NeuronScore {
    int64_t neuron = 0;
    double activation = 0;
};
/// The k neurons with the largest activation (by |activation| when `byMagnitude`) at `position` of acts
/// [length, intermediate_size], largest first.
std::vector<NeuronScore> topNeurons(const torch::Tensor& acts, int64_t position, int k, bool byMagnitude = false);

/// The logit lens of a trace: each block's layer_output through project_on_vocab (lm_head(norm(h))), then a
/// float32 softmax, for every prompt's real positions. The last block's row is the model's own next-token
/// distribution at each position.
struct LogitLens {
    int64_t numLayers = 0;
    int k = 0;
    /// One entry per prompt: the k most probable tokens, int64 [num_layers, length, k], and their probabilities,
    /// float32 [num_layers, length, k].
    std::vector<torch::Tensor> topIds, topProbs;
    /// One entry per prompt: logsumexp of the logits, float32 [num_layers, length], and the normed stream
    /// (what lm_head reads), compute dtype [num_layers, length, hidden_size]; together they give any token's
    /// probability without keeping the full distribution.
    std::vector<torch::Tensor> logSumExp, normed;
};
/// Computes the logit lens from the saved layer_output of every block. Throws nnscope::Error when one is missing.
LogitLens logitLens(const Model& model, const TraceResult& result, int k = 5);
/// The lens probability of token `id` at every block and position of prompt `row`: float32 [num_layers, length].
torch::Tensor lensTokenProbs(const Model& model, const LogitLens& lens, int64_t row, int64_t id);

}  // namespace nnscope
