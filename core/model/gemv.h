// SPDX-License-Identifier: MIT
// The float32 and bfloat16 matrix-vector products of a one-token pass, at memory bandwidth.
//
// A one-token pass (every generation step) multiplies one row by every weight matrix once: its time is the time to
// read the weights. Debian's libtorch 1.13 sends a [1, in] x [out, in]ᵀ linear to OpenBLAS's sgemv, which reads
// float32 weights at about 11 GB/s on the 2-core Xeon of docs/PERFORMANCE.md; the loop below reads them at about
// 27 GB/s there, splitting the output rows over libtorch's intra-op threads. bfloat16 weights (libtorch 1.13 sends them
// to oneDNN, which read them at 8-12 GB/s on a Zen 4 with avx512_bf16) are read at half the bytes: on CPUs with
// AVX512-BF16 by its dot-product instruction (VDPBF16PS), elsewhere widened to float32 in registers as they are read
// (AVX-512, AVX2 or baseline x86-64 code, chosen at run time; the build needs no -march).
#pragma once
#include <torch/types.h>

namespace nnscope {

/// How singleRowLinear multiplies bfloat16 weights.
enum class Bf16DotKernel {
    Avx512Bf16,  ///< VDPBF16PS: 32 bfloat16 pairs multiplied (exactly) and summed into 16 float32 lanes per instruction
    Widening,    ///< each weight widened to float32 in registers (exact), multiplied and summed in float32 (any x86-64)
    Libtorch,    ///< none: singleRowLinearApplies is false for bfloat16 and the engine calls torch::linear (libtorch 1.13
                 ///< hands it to oneDNN); only for benchmarks that time what singleRowLinear replaces
};

/// Whether this CPU and this build run the Avx512Bf16 kernel: AVX-512 F/BW/VL and AVX512-BF16 (lscpu's avx512_bf16),
/// with the OS saving the AVX-512 registers. Found once, at the first call.
bool cpuHasAvx512Bf16Dot();

/// The kernel singleRowLinear uses for bfloat16 weights: Avx512Bf16 where cpuHasAvx512Bf16Dot(), else Widening.
Bf16DotKernel bf16DotKernel();

/// Chooses the bfloat16 kernel for the whole process (tests and benchmarks compare the two on one CPU). Throws
/// nnscope::Error when Avx512Bf16 is asked for where cpuHasAvx512Bf16Dot() is false.
void setBf16DotKernel(Bf16DotKernel kernel);

/// "avx512_bf16 (VDPBF16PS)", "widening to float32" or "libtorch (torch::linear)", for benchmarks and reports.
const char* bf16DotKernelName(Bf16DotKernel kernel);

/// Whether singleRowLinear computes linear(x, w, b): x float32 or bfloat16 (bfloat16 unless bf16DotKernel() is Libtorch) with one row (numel == in, last axis in), w
/// of the same dtype [out, in] contiguous, b undefined or [out] contiguous of the same dtype, and no gradient asked for
/// (autograd needs torch::linear).
bool singleRowLinearApplies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

/// y = x · wᵀ + b for the single row of x: x [..., in] (every leading axis 1), w [out, in], b [out] or undefined.
/// Returns [..., out] in x's dtype, equal to torch::linear's up to float32 rounding (the sums run in another order);
/// bfloat16: products and sums in float32 (a product of two bfloat16 is exact in float32), the bias added in float32,
/// one rounding to bfloat16 at the end, as oneDNN's bfloat16 products accumulate in float32; the two kernels
/// (bf16DotKernel) differ only in the order of the float32 sums (and Avx512Bf16 reads subnormals, below 1.2e-38, as 0).
/// The output rows are split over at::get_num_threads() threads; each is a dot product in vectors of eight float32
/// lanes, four rows at a time with two accumulators each (Avx512Bf16: sixteen lanes, four rows at a time with one
/// accumulator each, the last rows one at a time with four).
/// Throws nnscope::Error, printing the shapes, when
/// singleRowLinearApplies is false.
torch::Tensor singleRowLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

}  // namespace nnscope
