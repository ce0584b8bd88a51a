// SPDX-License-Identifier: MIT
// The attention's steps done faster with the same bits as the libtorch ops they replace: the masked scores (scale,
// mask, the softmax's widening) and the rotary embedding each in one pass, and the float32 products one head per thread.
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

/// Whether rotated takes these tensors: CPU, not meta, without autograd; x [batch, heads, seq, rotary_dim] with its
/// last axis contiguous (a view such as a transpose or a slice of the heads' first rotary_dim entries is fine);
/// cos and sin [batch or 1, heads or 1, seq, rotary_dim] in one dtype, their last axis contiguous; rotary_dim even;
/// dtypes float32/float32, bfloat16/float32 or bfloat16/bfloat16 (x / cos).
bool rotatedApplies(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

/// transformers' apply_rotary_pos_emb for one of q or k, `x * cos + rotate(x) * sin` in cos's dtype, returned in x's
/// dtype, contiguous [batch, heads, seq, rotary_dim]:
///   rotate = rotate_half (Llama: cat(-x2, x1) over the two halves) and cos, sin as given, or, with adjacentPairs
///   (ERNIE 4.5: stack(-x[..., 1::2], x[..., 0::2]) interleaved), cos and sin's first half each repeated for its pair;
///   float32 cos: x widened (exact), each product and the sum rounded to float32 (no fused multiply-add), the result
///   rounded once to x's dtype; bfloat16 cos: each product and the sum rounded to bfloat16, as libtorch's bfloat16 ops.
/// The same bits as those ops (test_compute rotatedMatchesSteps), in one pass instead of six to nine (negation, stack or
/// cat, widenings, two products, the sum, the rounding). Rows split over at::get_num_threads() threads.
/// Throws nnscope::Error naming the shapes and dtypes when rotatedApplies is false.
torch::Tensor rotated(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool adjacentPairs);

/// Whether headsProduct takes these tensors: float32 on the CPU, not meta, without autograd, a [batch, heads, m, k] and
/// b [batch, heads, k, n] (any strides), m · k · n at least 400 (below it libtorch multiplies with a loop of its own,
/// summing in another order), on a libtorch whose BLAS is not MKL (at::hasMKL(): Debian's libtorch; the wheel's MKL has
/// its own batched product).
bool headsProductApplies(const torch::Tensor& a, const torch::Tensor& b);

/// a · b per batch row and head, [batch, heads, m, k] × [batch, heads, k, n] -> [batch, heads, m, n] float32: each head's
/// product is one sgemm (at::mm_out), the heads split over at::get_num_threads() threads with one BLAS thread each.
/// libtorch 1.13 without MKL runs a batched product as one sgemm per head after another, each spread over every thread:
/// at 128 tokens the attention's two products ran at 37-63 GFLOP/s that way and 100-103 GFLOP/s this way (the Xeon of
/// docs/PERFORMANCE.md; the same bits: each output is the same sgemm's dot product, split by rows or by heads).
/// Throws nnscope::Error naming the shapes when headsProductApplies is false.
torch::Tensor headsProduct(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace nnscope
