// SPDX-License-Identifier: MIT
#pragma once
#include "core/analysis/analysis.h"
// Direct logit attribution: which component wrote the next token. Every block's attention and MLP output, every head
// (through its slice of o_proj) and every neuron (through its column of down_proj) is mapped through the final norm
// with its scale frozen at the real pass's value, then through the unembedding (TransformerLens'
// ActivationCache.decompose_resid / logit_attrs; Elhage et al. 2021, "A Mathematical Framework for Transformer
// Circuits", section on direct path terms). With the scale frozen the final norm is linear, so the components add up
// exactly to the logit (up to float rounding).
#include "core/run/trace.h"

#include <torch/types.h>

#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// One term of the decomposition.
struct AttributionComponent {
    enum class Kind { Embed, Attention, Mlp, Head, Neuron, Bias };
    Kind kind = Kind::Embed;
    /// `embed`, `layers.I.attention_output`, `layers.I.mlp_output`, `layers.I.self_attn.head.H`,
    /// `layers.I.mlp.neuron.K`, or a bias by its module path (`layers.I.self_attn.o_proj.bias`, `norm.bias`).
    std::string name;
    int layer = -1;       ///< block, or -1 for embed and the final norm's bias
    int64_t index = -1;   ///< head or neuron index
    double value = 0;     ///< its share of the logit (logit units)
};

/// The direct logit attribution of one token at one position of one prompt.
struct LogitAttribution {
    int64_t target = -1;  ///< the token whose logit is decomposed
    int64_t wrong = -1;   ///< with a wrong token: the logit difference target - wrong is decomposed (-1: none)
    int64_t position = 0; ///< the prompt's own position (0 = its first token)
    /// The logit (or difference) the pass computed at `position`, before any final soft-capping (Gemma 2's
    /// final_logit_softcapping is not linear; its capped logit is cap * tanh(logit / cap)).
    double logit = 0;
    /// The sum of `embed`, every block's attention_output and mlp_output share and the final norm's bias term: equal to
    /// `logit` up to float rounding.
    double total = 0;
    /// embed, then per block: attention_output, its heads, o_proj's bias (where there is one), the branch norm's bias
    /// (where there is one), mlp_output, mlp's bias; then the final norm's bias (where there is one). Neurons are in
    /// topNeurons. Block-level terms add up to the logit; a block's heads + its o_proj bias (+ branch norm bias) add up
    /// to its attention_output share.
    std::vector<AttributionComponent> components;
    std::vector<AttributionComponent> topNeurons;  ///< the neurons with the largest |share| over every block
    torch::Tensor attention;  ///< float32 [num_layers]: each block's attention_output share
    torch::Tensor mlp;        ///< float32 [num_layers]: each block's mlp_output share
    torch::Tensor heads;      ///< float32 [num_layers, num_heads]: each head's share (through its o_proj slice)
    torch::Tensor neurons;    ///< float32 [num_layers, intermediate_size]: each neuron's share (through down_proj)
    /// float32 [2 * num_layers + 1, hidden_size]: what the residual stream receives at `position` from the embeddings
    /// and from each block's attention and MLP (after any branch norm, its scale frozen), in that order.
    torch::Tensor streamTerms;
    /// float32 [hidden_size]: the frozen final norm's per-channel gain (1 / RMS or 1 / std of the real stream, times
    /// the norm's weight); with `centered`, a stream vector is centred first (LayerNorm).
    torch::Tensor finalGain;
    bool centered = false;
    /// float32 [num_layers, hidden_size]: the MLP branch norm's frozen gain (Gemma's post_feedforward_layernorm,
    /// OLMo 2's post_feedforward_layernorm); undefined where the family has no norm after the MLP.
    torch::Tensor mlpBranchGain;
    /// float32 [num_layers, hidden_size]: the attention branch norm's frozen gain (Gemma's and OLMo 2's
    /// post_attention_layernorm); undefined where the family has no norm after the attention.
    torch::Tensor attentionBranchGain;
    /// One sentence saying what was frozen, for the view and the command line (as TransformerLens says it).
    std::string note;
};

/// The values attribution reads from a trace: layers.0.layer_input, every block's attention_output,
/// attention_head_outputs, mlp_output, mlp_neurons (on the blocks that have neurons: a mixture of experts' block has
/// none, and its neurons' shares stay 0; core/analysis/routing.h splits it by expert), the branch norms' outputs where
/// the family has them, and the last block's layer_output.
std::vector<ValueKey> attributionValueKeys(const Model& model);

/// Direct logit attribution of `target` (minus `wrong` when given) at `position` of prompt `row` of `result` (a trace
/// that saved attributionValueKeys). `position` counts from the prompt's first token; negative from its last.
/// `topNeuronCount` neurons with the largest |share| go to topNeurons. Computed in float32 from the saved values.
/// Throws nnscope::Error when a value was not saved, the row or position is out of range, or a token id is outside
/// the vocabulary.
LogitAttribution directLogitAttribution(const Model& model, const TraceResult& result, int64_t row, int64_t position, int64_t target,
                                        std::optional<int64_t> wrong = std::nullopt, int topNeuronCount = 10,
                                        const BlockProgress& progress = {});

/// A token and how much a vector raises (or lowers) its logit.
struct TokenEffect {
    int64_t id = -1;
    double logit = 0;
};
/// The tokens a stream vector `v` [hidden_size] promotes (largest direct logit first) and suppresses (most negative
/// first) through the frozen final norm of `attribution` and the unembedding: the `k` largest and smallest of
/// lm_head · gain ⊙ v. A block's vector is a row of streamTerms; a neuron's is its activation × down_proj's column.
std::pair<std::vector<TokenEffect>, std::vector<TokenEffect>> promotedTokens(const Model& model, const LogitAttribution& attribution,
                                                                             const torch::Tensor& v, int k);

/// The share of the logit of `attribution` (its target, minus its wrong token where it has one) that a stream vector
/// `v` [hidden_size] gets through the frozen final norm: u · (gain ⊙ (centered ? v − mean(v) : v)), u the unembedding
/// row (or the difference of two). A vector of streamTerms gets its block's share, up to the branch norms' biases.
/// Throws nnscope::Error when `v` is not hidden_size long.
double streamVectorShare(const Model& model, const LogitAttribution& attribution, const torch::Tensor& v);

/// What component `c` of `attribution` writes to the stream at its position, float32 [hidden_size]: a row of streamTerms
/// for the embeddings and a block's attention or MLP, headStreamVector for a head, neuronStreamVector for a neuron;
/// undefined for a bias (a constant, no direction of its own). `result` and `row` are the trace it was computed from.
torch::Tensor componentStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& attribution, int64_t row,
                                    const AttributionComponent& c);

/// What head `head` of block `layer` writes to the stream at the attribution's position: its output through its
/// o_proj columns (through the branch norm's frozen gain where the family has one), float32 [hidden_size].
torch::Tensor headStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& attribution, int64_t row,
                               int layer, int64_t head);

/// What neuron `neuron` of block `layer` writes to the stream at the attribution's position: its activation times
/// down_proj's column (through the branch norm's frozen scale where the family has one), float32 [hidden_size].
torch::Tensor neuronStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& attribution, int64_t row,
                                 int layer, int64_t neuron);

}  // namespace nnscope
