// SPDX-License-Identifier: MIT
// The eager attention's steps between the two products, in one pass over the scores.
#pragma once
#include <torch/types.h>

namespace nnscope {

/// Whether maskedScores takes these tensors: `scores` [batch, heads, query, key] contiguous on the CPU, float32 or
/// bfloat16, not meta and without autograd; `mask` 4-D in the same dtype with the same key axis, each leading axis 1 or
/// scores' size (the additive mask [batch, 1, query, key]); `scale` finite.
bool maskedScoresApplies(const torch::Tensor& scores, double scale, const torch::Tensor& mask);

/// The masked attention scores as transformers' eager_attention_forward computes them, `scores * scaling +
/// attention_mask` in the scores' dtype, returned in float32, the dtype of the softmax that follows:
///   float32:  y = (x · s) + m, each step rounded to float32, s = (float) scale (torch multiplies a float32 tensor by
///             a Python number as a float);
///   bfloat16: y = bf16(bf16(x · s) + m), x · s and the sum in float32, each rounded to bfloat16 (round to nearest
///             even, NaN to 0x7FC0, as c10::BFloat16), which is what torch 2.x computes for each of the two ops.
/// A bfloat16 y is exactly representable, so softmax(y) equals torch::softmax(scores_bf16, -1, torch::kFloat32) bit
/// for bit, and y.to(kBFloat16) is the scores transformers hands to the softmax. One pass instead of four (widen,
/// multiply, round, add; 9.8 ms of a 75 ms bfloat16 block at 512 tokens, docs/PERFORMANCE.md).
/// scores [b, h, q, k], mask broadcast to it -> [b, h, q, k] float32. Rows split over at::get_num_threads() threads.
/// Throws nnscope::Error naming the shapes and dtypes when maskedScoresApplies is false.
torch::Tensor maskedScores(const torch::Tensor& scores, double scale, const torch::Tensor& mask);

}  // namespace nnscope
