// SPDX-License-Identifier: MIT
// The float32 matrix-vector product of a one-token pass, at memory bandwidth.
//
// A one-token pass (every generation step) multiplies one row by every weight matrix once: its time is the time to
// read the weights. Debian's libtorch 1.13 sends a [1, in] x [out, in]ᵀ linear to OpenBLAS's sgemv, which reads
// float32 weights at about 11 GB/s on the 2-core Xeon of docs/PERFORMANCE.md; the loop below reads them at about
// 27 GB/s there, splitting the output rows over libtorch's intra-op threads.
#pragma once
#include <torch/types.h>

namespace nnscope {

/// Whether singleRowLinear computes linear(x, w, b): x float32 with one row (numel == in, last axis in), w float32
/// [out, in] contiguous, b undefined or float32 [out] contiguous, and no gradient asked for (autograd needs
/// torch::linear).
bool singleRowLinearApplies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

/// y = x · wᵀ + b for the single row of x: x [..., in] (every leading axis 1), w [out, in], b [out] or undefined.
/// Returns [..., out] float32, equal to torch::linear's up to float32 rounding (the sums run in another order).
/// The output rows are split over at::get_num_threads() threads; each is a dot product in eight-wide vectors with
/// four accumulators. Throws nnscope::Error, printing the shapes, when singleRowLinearApplies is false.
torch::Tensor singleRowLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

}  // namespace nnscope
