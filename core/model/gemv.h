// SPDX-License-Identifier: MIT
// The float32 and bfloat16 matrix-vector products of a one-token pass, at memory bandwidth.
//
// A one-token pass (every generation step) multiplies one row by every weight matrix once: its time is the time to
// read the weights. Debian's libtorch 1.13 sends a [1, in] x [out, in]ᵀ linear to OpenBLAS's sgemv, which reads
// float32 weights at about 11 GB/s on the 2-core Xeon of docs/PERFORMANCE.md; the loop below reads them at about
// 27 GB/s there, splitting the output rows over libtorch's intra-op threads. bfloat16 weights (libtorch 1.13 sends them
// to oneDNN, which read them at 8-12 GB/s on a Zen 4 with avx512_bf16) are widened to float32 in registers as they are
// read, so the product reads half the bytes at the same rate.
#pragma once
#include <torch/types.h>

namespace nnscope {

/// Whether singleRowLinear computes linear(x, w, b): x float32 or bfloat16 with one row (numel == in, last axis in), w
/// of the same dtype [out, in] contiguous, b undefined or [out] contiguous of the same dtype, and no gradient asked for
/// (autograd needs torch::linear).
bool singleRowLinearApplies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

/// y = x · wᵀ + b for the single row of x: x [..., in] (every leading axis 1), w [out, in], b [out] or undefined.
/// Returns [..., out] in x's dtype, equal to torch::linear's up to float32 rounding (the sums run in another order);
/// bfloat16: products and sums in float32 (bfloat16 widens exactly), the bias added in float32, one rounding to
/// bfloat16 at the end, as oneDNN's bfloat16 products accumulate in float32.
/// The output rows are split over at::get_num_threads() threads; each is a dot product in eight-wide vectors with
/// four accumulators. Throws nnscope::Error, printing the shapes, when singleRowLinearApplies is false.
torch::Tensor singleRowLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

}  // namespace nnscope
