// SPDX-License-Identifier: MIT
#pragma once
// Information flow routes (Ferrando and Voita 2024, "Information Flow Routes: Automatically Interpreting Language
// Models at Scale", arXiv 2403.00824): which earlier tokens, through which blocks, a position's stream is made of.
//
// The attention of block l updates the stream at query i as a sum over source tokens j:
//   y_i = x_i + Σ_j z_{i←j} + b,   z_{i←j} = Σ_h A_h[i, j] · W_O,h v_{h,j}
// (x_i the block's input, A_h head h's attention pattern, v_{h,j} the value vector head h reads at j, through the
// key/value head that grouped-query attention gives it, W_O,h the columns of o_proj that read head h, b o_proj's
// bias). Each source's importance is the paper's proportional proximity: how much closer to y_i the rest of the sum
// gets with the source in it, in the L1 norm,
//   imp(j → i) = max(0, ‖y_i‖₁ − ‖y_i − z_{i←j}‖₁),  imp(res → i) = max(0, ‖y_i‖₁ − ‖y_i − x_i‖₁),
// normalised over the sources of i (the residual x_i included) to sum to 1. The MLP's output m_i and the stream it is
// added to, y_i, are weighed the same way in the block's output y_i + m_i. The graph starts at one position of the
// last block's output and, going down the blocks, keeps every edge of importance ≥ τ that reaches a node already
// kept (the paper's algorithm 1; τ = 0.04 there).
//
// Where the family puts a norm on a branch's output before the add (Gemma 2/3, OLMo 2), that norm's scale is frozen
// at its value in the real pass (as core/analysis/attribution.h does), so it is linear and each source's term goes through it;
// its bias, like o_proj's, belongs to no token. Under a parallel residual (GPT-NeoX) both branches read the block's
// input; the attention is then weighed in y_i = x_i + attention_i, a stream the pass never forms, and the MLP in the
// block's output y_i + m_i, which it does.
#include "core/run/trace.h"

#include "core/analysis/analysis.h"

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace nnscope {

/// The values contributions read from a trace: every block's layer_input, attention_probabilities,
/// attention_values, attention_output and mlp_output, and the branch norms' outputs where the family has them.
std::vector<ValueKey> contributionValueKeys(const Model& model);

/// Every block's token-to-token importances for one prompt (the prompt's own positions, 0 = its first token).
struct TokenContributions {
    int64_t length = 0;  ///< the prompt's tokens
    /// float32 [num_layers, length(query i), length(source j)]: imp(j → i) of each block's attention, normalised; 0 where
    /// j > i. With attentionResidual, each query's row sums to 1, except where every term moves y_i away (each
    /// proximity 0: the paper's formula gives no importance to anything), where the row is all zeros; the same for
    /// mlp and mlpResidual.
    torch::Tensor attention;
    /// float32 [num_layers, length]: the importance of the residual x_i itself in y_i.
    torch::Tensor attentionResidual;
    /// float32 [num_layers, length]: the normaliser of each query's row, Σ_j max(0, ‖y_i‖₁ − ‖y_i − z_{i←j}‖₁) plus the
    /// residual's, in the stream's L1 units; a head's own importance divides by the same number (headImportances).
    torch::Tensor attentionTotal;
    /// float32 [num_layers, length]: the importance of the MLP's output m_i, and of the stream it is added to, in the
    /// block's output y_i + m_i (they sum to 1).
    torch::Tensor mlp, mlpResidual;
    /// float32 [num_layers, num_heads, length(query i), length(source j)]: the L2 norm of what head h moves from j to i,
    /// ‖A_h[i, j] · W_O,h v_{h,j}‖₂ = A_h[i, j] · ‖W_O,h v_{h,j}‖₂ (Kobayashi et al. 2020, "Attention is not only a
    /// weight"), through the frozen branch norm where the family has one; stream units. As large as the trace's own
    /// attention_probabilities in float32.
    torch::Tensor headNorms;
    /// One sentence saying what was frozen or approximated, for the view and the command line.
    std::string note;
};

/// Progress and Cancel for tokenContributions: per block (core/analysis/analysis.h).
using ContributionOptions = BlockProgress;

/// The importances of every block of prompt `row` of `result` (a trace that saved contributionValueKeys), computed
/// in float32 from the saved values and the weights, by chunks of queries so that no more than about 16M floats of
/// source terms are held at once (512 tokens × 1024 hidden: 32 queries a chunk). Throws nnscope::Error when a value
/// was not saved or the row does not exist, Cancelled when options.cancel is set.
TokenContributions tokenContributions(const Model& model, const TraceResult& result, int64_t row, const ContributionOptions& options = {});

/// What block `layer`'s attention writes to the stream at query `position` of prompt `row`, split by source token.
struct SourceTerms {
    torch::Tensor terms;     ///< float32 [position + 1, hidden_size]: z_{i←j} for j = 0 ... position
    torch::Tensor bias;      ///< float32 [hidden_size]: the part no token owns (o_proj's bias, the branch norm's); zeros without
    torch::Tensor residual;  ///< float32 [hidden_size]: x_i, the block's input at the position
    torch::Tensor stream;    ///< float32 [hidden_size]: y_i = x_i + the attention's output as the stream receives it
};
/// The decomposition of one query's attention update: residual + Σ terms + bias equals stream (up to float rounding).
/// `position` counts from the prompt's first token; negative from its last. Throws nnscope::Error when a value was
/// not saved or the layer or position is out of range.
SourceTerms attentionSourceTerms(const Model& model, const TraceResult& result, int64_t row, int layer, int64_t position);

/// Each head's own importance for the edge j → i of block `layer`: max(0, ‖y_i‖₁ − ‖y_i − z^h_{i←j}‖₁) divided by the
/// row's normaliser (TokenContributions::attentionTotal), z^h_{i←j} = A_h[i, j] · W_O,h v_{h,j} the head's part of the
/// edge. float32 [num_heads]. The heads need not add up to the edge's importance (the L1 proximity is not additive).
torch::Tensor headImportances(const Model& model, const TraceResult& result, const TokenContributions& contributions, int64_t row,
                              int layer, int64_t from, int64_t to);

/// How to prune the graph.
struct GraphOptions {
    int64_t position = -1;    ///< the prompt position the graph starts from (negative: from the prompt's last token)
    double threshold = 0.04;  ///< τ: edges of smaller importance are dropped (the paper's 0.04); in [0, 1]
    int topHeads = 3;         ///< per attention edge, how many heads to list (largest importance first)

    GraphOptions& withPosition(int64_t p) { position = p; return *this; }
    GraphOptions& withThreshold(double t) { threshold = t; return *this; }
    GraphOptions& withTopHeads(int k) { topHeads = k; return *this; }
};

/// One head's part of an attention edge.
struct HeadShare {
    int64_t head = 0;
    double weight = 0;  ///< the head's own importance (headImportances)
    double norm = 0;    ///< ‖A_h[i, j] · W_O,h v_{h,j}‖₂ (TokenContributions::headNorms), stream units
};

/// A kept edge of the graph. Nodes are (block boundary, position): an edge of block `layer` goes from the stream
/// entering the block (or, for the MLP's, the stream after the attention) at `from` to the stream after that
/// sublayer at `to`.
struct ContributionEdge {
    /// Attention: token `from`'s part of the attention update at `to`. AttentionResidual: x_to carried past the
    /// attention. Mlp: the MLP's output at `to` (from == to). MlpResidual: y_to carried past the MLP.
    enum class Kind { Attention, AttentionResidual, Mlp, MlpResidual };
    Kind kind = Kind::Attention;
    int layer = 0;
    int64_t from = 0, to = 0;
    double weight = 0;              ///< the importance, in [threshold, 1]
    std::vector<HeadShare> heads;  ///< Attention edges only: the topHeads heads of largest importance
};
/// "attention", "attention_residual", "mlp", "mlp_residual".
const char* edgeKindName(ContributionEdge::Kind kind);

/// The information flow graph of one prompt.
struct ContributionGraph {
    int64_t position = 0;   ///< where it starts (the prompt's own position)
    double threshold = 0;
    /// Kept edges, from the last block down; within a block the MLP's edges, then the attention's, by target then
    /// source position.
    std::vector<ContributionEdge> edges;
    TokenContributions contributions;  ///< every importance the graph was pruned from
};

/// The graph of prompt `row` from `options.position`, going down the blocks (the paper's algorithm 1): a position
/// reached at a block's output keeps its MLP edge and its MLP residual edge when each is ≥ τ and is reached after the
/// attention when either is kept (the MLP reads that stream); a position reached after the attention keeps its
/// residual edge and every attention edge j → i ≥ τ, and each kept edge's source is reached at the block's input.
/// Throws nnscope::Error when a value was not saved, the position is outside the prompt, the threshold is not in
/// [0, 1] or topHeads is negative.
ContributionGraph contributionGraph(const Model& model, const TraceResult& result, int64_t row, const GraphOptions& options = {});
/// The same from importances already computed for this row (another threshold or position without recomputing).
ContributionGraph contributionGraph(const Model& model, const TraceResult& result, int64_t row, TokenContributions contributions,
                                    const GraphOptions& options);

}  // namespace nnscope
