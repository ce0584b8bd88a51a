// SPDX-License-Identifier: MIT
#pragma once
#include "core/analysis/analysis.h"
// Per-head pattern scores: which heads look at the previous token, copy after a repeated token (induction), park on
// the first token (attention sink) or on themselves. Computed from a trace's attention_probabilities, for the
// `nnscope heads` command and the window's heads overview.
#include "core/run/trace.h"

#include <vector>

namespace nnscope {

/// The scores of one head on one prompt, each a mean attention probability in [0, 1] (NaN where the prompt gives the
/// score nothing to average: one token, or no repeated token for induction). With A the head's pattern
/// [query, key] over the prompt's own n tokens:
///   previous_token = mean over i in 1..n-1 of A[i, i-1]   (TransformerLens' previous-token heads)
///   induction      = mean over the positions i whose token occurred before, at j < i (the latest such j), of
///                    A[i, j+1]: attention to the token that followed the earlier occurrence (Olsson et al. 2022, "In-
///                    context Learning and Induction Heads"; on a repeated random sequence this is TransformerLens'
///                    induction score)
///   first_token    = mean over i in 1..n-1 of A[i, 0]     (the attention sink, Xiao et al. 2023)
///   diagonal       = mean over i in 1..n-1 of A[i, i]     (attention to the token itself)
///   sink_share     = mean over i in 0..n-1 of 1 - Σ_j A[i, j]  (gpt-oss's learned sinks: the attention given to no
///                    token, which transformers drops after the softmax; 0 up to rounding where the family has none)
/// Position 0 is left out of the means where it can only attend to itself. The four pattern scores read the key columns
/// only, so a head that parks its attention on its sink scores low on every one of them and high on sink_share.
struct HeadScore {
    int layer = 0;
    int head = 0;
    double previousToken = 0, induction = 0, firstToken = 0, diagonal = 0, sinkShare = 0;
};

/// The scores of every (block, head) of prompt `row` of `result`, a trace that saved every block's
/// attention_probabilities (viewValueKeys does), block by block, head by head. Throws nnscope::Error when a pattern was
/// not saved or the row does not exist.
std::vector<HeadScore> headScores(const Model& model, const TraceResult& result, int64_t row = 0, const BlockProgress& progress = {});

/// The scores of one pattern A [query, key] (float32) of a prompt with token ids `ids` (n of each).
HeadScore patternScores(const torch::Tensor& pattern, const std::vector<int64_t>& ids);

/// The chance baseline of each score on a prompt with token ids `ids`: the scores of a head that attends uniformly
/// over its causal prefix, A[i, j] = 1 / (i + 1) for j <= i (so previous_token, first_token and diagonal are each the
/// mean over i in 1..n-1 of 1 / (i + 1), and induction the mean of 1 / (i + 1) over the repeated tokens). A head
/// scoring near its baseline does not do what the score names; NaN where patternScores gives NaN.
HeadScore chanceScores(const std::vector<int64_t>& ids);

/// The standard induction test sequence (Olsson et al. 2022; TransformerLens' generate_repeated_tokens): the BOS id
/// where the model's tokenizer prepends one, then `length` token ids drawn uniformly at random, then the same `length`
/// ids again; so 2 * length (+ 1) ids. The ids are drawn from the tokenizer's vocabulary (the config's vocab_size
/// without a tokenizer), leaving out the BOS, EOS and padding ids, with a Mersenne twister seeded by `seed` (the same
/// seed gives the same sequence everywhere). On it, every position of the second half is a repeated token, so the
/// induction score of patternScores is TransformerLens' induction score. Throws nnscope::Error when `length` < 2 or
/// 2 * length + 1 exceeds the model's context (max_position_embeddings).
std::vector<int64_t> repeatedRandomTokens(const Model& model, int64_t length, uint64_t seed = 0);

}  // namespace nnscope
