// SPDX-License-Identifier: MIT
#pragma once
// A mixture of experts' routing over one prompt, and each expert's direct logit attribution. On a block whose MLP is a
// mixture (Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE), the router picks top_k of num_experts experts per token, and the MLP's
// output is the weighted sum of the chosen experts' outputs (plus the gated shared expert where the config has one):
//   mlp_output[t] = Σ_j expert_weights[t, j] · expert_outputs[t, j] (+ shared_expert_output[t]).
// So an expert's share of the logit at position t is the same direct logit attribution as a block's MLP
// (core/analysis/attribution.h: the final norm's scale frozen at the real pass's value, then the unembedding), of its
// weighted output: share_e(t) = Σ_{j : expert_indices[t, j] = e} expert_weights[t, j] · u · (gain_t ⊙ expert_outputs[t, j]),
// and the chosen experts' shares plus the shared expert's add up to the MLP's share (TransformerLens' decompose_resid
// applied one level further down; Elhage et al. 2021 for the direct path). The load of an expert over a prompt is how
// many of its tokens chose it and the routing weight they gave it (Fedus et al. 2021, "Switch Transformers", section
// 2.2, count the tokens dispatched to each expert and the router probability it gets).
#include "core/analysis/attribution.h"

#include <torch/types.h>

#include <optional>
#include <vector>

namespace nnscope {

/// The values routing reads: every sparse block's expert_indices, expert_weights and expert_outputs, the shared
/// expert's output where the config has one, and attributionValueKeys (for the frozen final norm and mlp_output).
/// Empty for a model with no experts.
std::vector<ValueKey> routingValueKeys(const Model& model);

/// Whether `model` has a mixture of experts on any block; else `whyNot` (when given) says so in a sentence.
bool hasExperts(const Model& model, std::string* whyNot = nullptr);

/// The routing of one prompt over the blocks whose MLP is a mixture (the "sparse" blocks).
struct ExpertRouting {
    std::vector<int> blocks;  ///< the sparse blocks, ascending (a dense block, mlp_only_layers, has no row)
    int64_t numExperts = 0;
    int64_t topK = 0;
    int64_t length = 0;  ///< the prompt's own positions
    /// int64 [blocks, length, top_k]: the experts each position chose, in the router's order (largest probability first).
    torch::Tensor indices;
    /// float32 [blocks, length, top_k]: their routing weights (expert_weights: renormalised where norm_topk_prob says).
    torch::Tensor weights;
    /// int64 [blocks, num_experts]: how many of the prompt's positions chose each expert.
    torch::Tensor tokenCount;
    /// float32 [blocks, num_experts]: the routing weight each expert got, summed over the positions (0 where none chose it).
    torch::Tensor weightSum;
    /// float32 [blocks, num_experts, length]: the L2 norm of what each expert adds to mlp_output at each position,
    /// ‖expert_weights · expert_outputs‖; 0 where the position did not choose it (the expert did not run there).
    torch::Tensor outputNorm;
    /// The row of `block` in the tensors above, or -1 for a dense block.
    int rowOf(int block) const;
};

/// The routing of prompt `row` of `result` (a trace that saved routingValueKeys). Throws nnscope::Error when the model
/// has no experts, a value was not saved, or the row is out of range.
ExpertRouting expertRouting(const Model& model, const TraceResult& result, int64_t row);

/// Each expert's direct logit attribution at one position.
struct ExpertAttribution {
    /// The whole direct logit attribution at the position (its target, wrong token, frozen final norm, and each
    /// block's mlp share, which the experts split).
    LogitAttribution attribution;
    std::vector<int> blocks;  ///< the sparse blocks, ascending, as ExpertRouting::blocks
    /// float32 [blocks, num_experts]: each expert's share of the logit (logit units); 0 for an expert the position
    /// did not choose.
    torch::Tensor experts;
    /// bool [blocks, num_experts]: which experts the position chose.
    torch::Tensor chosen;
    /// float32 [blocks]: the shared expert's share (0 where the config has none).
    torch::Tensor shared;
    /// float32 [blocks]: the block's whole mlp_output share (attribution.mlp at the sparse blocks): the chosen experts'
    /// shares plus the shared expert's, up to float rounding (and the MLP branch norm's bias where the family has one).
    torch::Tensor mlp;
};

/// Each expert's share of the logit of `target` (minus `wrong` when given) at `position` of prompt `row` (negative:
/// from its last token), with the same frozen final norm as directLogitAttribution. Computed in float32 from the saved
/// values. Throws nnscope::Error as directLogitAttribution does, and when the model has no experts or a value of
/// routingValueKeys was not saved.
ExpertAttribution expertLogitAttribution(const Model& model, const TraceResult& result, int64_t row, int64_t position, int64_t target,
                                         std::optional<int64_t> wrong = std::nullopt, const BlockProgress& progress = {});

/// What expert `expert` of block `layer` writes to the stream at the attribution's position: the sum over the slots
/// that chose it of expert_weights · expert_outputs (through the MLP branch norm's frozen gain where the family has
/// one), float32 [hidden_size]; zeros where the position did not choose it. promotedTokens of it lists what the
/// expert promotes, streamVectorShare gives its share. Throws nnscope::Error for a dense block or an expert out of range.
torch::Tensor expertStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& attribution, int64_t row,
                                 int layer, int64_t expert);

/// The forbid-expert intervention of expert `expert` at block `layer` (core/run/edit.h's syntax): its router logit set
/// to -inf at every position, `layers.L.mlp.router_logits[:, :, E] = -inf`, so that no token chooses it and each
/// token that did takes its next expert. Throws nnscope::Error for a dense block or an expert out of range.
std::string forbidExpertEdit(const Model& model, int layer, int64_t expert);

}  // namespace nnscope
