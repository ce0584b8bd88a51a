// SPDX-License-Identifier: MIT
#pragma once
// Analyses the window draws, computed from a trace's saved values: attention patterns, neuron activations and the
// logit lens. No Qt here: the command line and the tests can use them too.
#include "core/run/trace.h"

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <vector>

namespace nnscope {

/// Progress and Cancel for an analysis that walks the blocks (the lens has LensOptions): `progress` is called with
/// (blocks done, num_layers) and `cancel`, when set, is checked before each block (nnscope::Cancelled is thrown).
struct BlockProgress {
    std::function<void(int, int)> progress;
    const std::atomic<bool>* cancel = nullptr;
    /// Before block `done` of `total`: throws Cancelled when Cancel was asked for, else reports progress.
    void step(int done, int total) const;
};

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
/// The attention each query row gave to its head's learned sink (gpt-oss, Family::attentionSinks): 1 minus the row's sum,
/// pattern [..., query, key] -> [..., query], float32, clamped at 0 (a row of a family without sinks sums to 1, up to
/// rounding, and gives 0). transformers drops the sink's column after the softmax; this gives it back.
torch::Tensor attentionSinkShare(const torch::Tensor& pattern);
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
/// float32 softmax, for every prompt's real positions (or the prompts and positions LensOptions asks for). The last
/// block's row is the model's own next-token distribution at each position.
struct LogitLens {
    int64_t numLayers = 0;
    int k = 0;
    /// One entry per prompt of the batch (undefined for a prompt that LensOptions::rows left out): the k most probable
    /// tokens, int64 [num_layers, length, k], and their probabilities, float32 [num_layers, length, k]. Where a block's
    /// logits at a position make no distribution (a NaN or +Inf among them: their logsumexp is not finite), the ids
    /// are -1 and the probabilities NaN: no token is named.
    std::vector<torch::Tensor> topIds, topProbs;
    /// One entry per prompt, as above: logsumexp of the logits, float32 [num_layers, length], and the normed stream
    /// (what lm_head reads), compute dtype [num_layers, length, hidden_size]; together they give any token's
    /// probability without keeping the full distribution.
    std::vector<torch::Tensor> logSumExp, normed;
    /// One entry per prompt, as above: the prompt position of its entries' first column (0, unless LensOptions asked
    /// for a window of positions or for the last position only).
    std::vector<int64_t> firstPosition;
    /// Whether prompt `row` was computed.
    bool has(int64_t row) const {
        return row >= 0 && row < static_cast<int64_t>(topIds.size()) && topIds[static_cast<size_t>(row)].defined();
    }
};
/// What logitLens computes, and how it reports: the window computes the prompt it shows, in its worker thread, with
/// progress and Cancel.
struct LensOptions {
    /// The prompts to compute (0-based rows of the batch); empty: every prompt. The others' entries stay undefined.
    std::vector<int64_t> rows;
    /// Only each prompt's last position (the one that predicts the next token): entries of length 1.
    bool lastPositionOnly = false;
    /// A window of each prompt's positions, counted from its first token: [firstPosition, firstPosition + numPositions)
    /// (numPositions < 0: to the prompt's end; both clamped to the prompt). The entries then hold just those positions
    /// and LogitLens::firstPosition says where they start: the window computes a long prompt's lens for the columns in
    /// view. Ignored with lastPositionOnly.
    int64_t firstPosition = 0;
    int64_t numPositions = -1;
    /// Called after each block with (blocks done, num_layers).
    std::function<void(int, int)> progress;
    /// Checked before each block and each chunk of positions; once set, logitLens throws Cancelled (core/model/taps.h).
    const std::atomic<bool>* cancel = nullptr;
};
/// Computes the logit lens from the saved layer_output of every block. The vocabulary-sized logits are made a chunk of
/// positions at a time (about 64 MiB of float32), never for a whole prompt at once. Throws nnscope::Error when a
/// layer_output is missing or a row is out of range.
LogitLens logitLens(const Model& model, const TraceResult& result, int k = 5, const LensOptions& options = {});
/// The lens probability of token `id` at every block and position of prompt `row`: float32 [num_layers, length].
/// Throws nnscope::Error when the lens did not compute that prompt.
torch::Tensor lensTokenProbs(const Model& model, const LogitLens& lens, int64_t row, int64_t id);

}  // namespace nnscope
