// SPDX-License-Identifier: MIT
// Compiled with OpenMP (core/CMakeLists.txt): at::parallel_for is a header template whose threads come from the
// "#pragma omp parallel" of Debian's libtorch (AT_PARALLEL_OPENMP), so the pragma must be compiled here.
#include "core/model/gemv.h"

#include "core/model/error.h"
#include "core/model/kernel_util.h"

#include <ATen/Parallel.h>
#include <torch/types.h>

#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nnscope {
namespace {

typedef float Float8 __attribute__((vector_size(32)));

inline Float8 load8(const float* p) {
    Float8 v;
    std::memcpy(&v, p, sizeof v);  // unaligned load
    return v;
}

typedef uint16_t Bf16x8 __attribute__((vector_size(16)));
typedef uint32_t U32x8 __attribute__((vector_size(32)));

// Eight bfloat16 weights as float32: a bfloat16 is the top half of a float32, so widening and shifting is exact.
inline Float8 load8(const uint16_t* p) {
    Bf16x8 h;
    std::memcpy(&h, p, sizeof h);
    const U32x8 bits = __builtin_convertvector(h, U32x8) << 16;
    Float8 v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

using kernel::toFloat;

// Rows [r0, r1) of y = w · x, for float32 weights or bfloat16 ones (uint16_t: widened to float32 in registers as they
// are read, so a row costs half the bytes). Bandwidth-bound: four rows at a time, so four streams of weights are in
// flight and each slice of x is loaded once for the four (on the Xeon of docs/PERFORMANCE.md, one row at a time with
// four accumulators read float32 weights 1.3-1.45 times slower, side by side); two accumulators per row. The last
// r1 - r0 mod 4 rows one at a time, with four accumulators. Inlined into each clone below, so every clone vectorizes it
// for its own instruction set.
template <typename W>
inline __attribute__((always_inline)) void rowDotsOf(const float* x, const W* w, const float* bias, float* y, int64_t in,
                                                     int64_t r0, int64_t r1) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
        const W* w0 = w + r * in;
        const W* w1 = w0 + in;
        const W* w2 = w1 + in;
        const W* w3 = w2 + in;
        Float8 a0 = {}, a1 = {}, a2 = {}, a3 = {}, b0 = {}, b1 = {}, b2 = {}, b3 = {};
        int64_t k = 0;
        for (; k + 16 <= in; k += 16) {
            const Float8 x0 = load8(x + k), x1 = load8(x + k + 8);
            a0 += x0 * load8(w0 + k);
            b0 += x1 * load8(w0 + k + 8);
            a1 += x0 * load8(w1 + k);
            b1 += x1 * load8(w1 + k + 8);
            a2 += x0 * load8(w2 + k);
            b2 += x1 * load8(w2 + k + 8);
            a3 += x0 * load8(w3 + k);
            b3 += x1 * load8(w3 + k + 8);
        }
        const Float8 s0 = a0 + b0, s1 = a1 + b1, s2 = a2 + b2, s3 = a3 + b3;
        float t[4] = {((s0[0] + s0[1]) + (s0[2] + s0[3])) + ((s0[4] + s0[5]) + (s0[6] + s0[7])),
                      ((s1[0] + s1[1]) + (s1[2] + s1[3])) + ((s1[4] + s1[5]) + (s1[6] + s1[7])),
                      ((s2[0] + s2[1]) + (s2[2] + s2[3])) + ((s2[4] + s2[5]) + (s2[6] + s2[7])),
                      ((s3[0] + s3[1]) + (s3[2] + s3[3])) + ((s3[4] + s3[5]) + (s3[6] + s3[7]))};
        for (; k < in; ++k) {
            t[0] += x[k] * toFloat(w0[k]);
            t[1] += x[k] * toFloat(w1[k]);
            t[2] += x[k] * toFloat(w2[k]);
            t[3] += x[k] * toFloat(w3[k]);
        }
        for (int i = 0; i < 4; ++i) y[r + i] = bias ? t[i] + bias[r + i] : t[i];
    }
    for (; r < r1; ++r) {
        const W* row = w + r * in;
        Float8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
        int64_t k = 0;
        for (; k + 32 <= in; k += 32) {
            a0 += load8(x + k) * load8(row + k);
            a1 += load8(x + k + 8) * load8(row + k + 8);
            a2 += load8(x + k + 16) * load8(row + k + 16);
            a3 += load8(x + k + 24) * load8(row + k + 24);
        }
        const Float8 a = (a0 + a1) + (a2 + a3);
        float sum = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        for (; k < in; ++k) sum += x[k] * toFloat(row[k]);
        y[r] = bias ? sum + bias[r] : sum;
    }
}

// The clones let the dynamic loader pick AVX-512 or AVX2 code where the CPU has it (the default build targets
// baseline x86-64).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NNSCOPE_GEMV_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define NNSCOPE_GEMV_CLONES
#endif
NNSCOPE_GEMV_CLONES void rowDots(const float* x, const float* w, const float* bias, float* y, int64_t in, int64_t r0, int64_t r1) {
    rowDotsOf(x, w, bias, y, in, r0, r1);
}
NNSCOPE_GEMV_CLONES void rowDotsBf16(const float* x, const uint16_t* w, const float* bias, float* y, int64_t in, int64_t r0,
                                     int64_t r1) {
    rowDotsOf(x, w, bias, y, in, r0, r1);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NNSCOPE_HAVE_AVX512BF16_KERNEL 1
// Rows [r0, r1) of y = w · x with AVX512-BF16's VDPBF16PS, for a bfloat16 row x and bfloat16 weights: each instruction
// multiplies 32 pairs of bfloat16 (the products are exact in float32: 8 × 8 significant bits) and adds them, two per
// lane, to sixteen float32 accumulators (round to nearest even; bfloat16 and float32 subnormals read and written as
// zero). One instruction per 64 bytes of weights, where the widening loop needs three per 16: the loop stays at memory
// speed with cycles to spare. Compiled for this instruction set alone and called only where the CPU has it
// (cpuHasAvx512Bf16Dot), so the build needs no -march.
// The sixteen lanes' sum in _mm512_reduce_add_ps's order (upper eight plus lower eight, then four, two, one), written
// out: gcc 12 warns of an uninitialised operand inside that intrinsic here (its bug 105593).
__attribute__((target("avx512f"))) inline float sumOfLanes(__m512 v) {
    alignas(64) float t[16];
    _mm512_store_ps(t, v);
    float u[8], q[4];
    for (int i = 0; i < 8; ++i) u[i] = t[i + 8] + t[i];
    for (int i = 0; i < 4; ++i) q[i] = u[i + 4] + u[i];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void rowDotsAvx512Bf16(
    const uint16_t* x, const uint16_t* w, const float* bias, float* y, int64_t in, int64_t r0, int64_t r1) {
    const int64_t tail = in % 32;
    const __mmask32 tailMask = static_cast<__mmask32>((uint64_t{1} << tail) - 1);
    int64_t r = r0;
    // Four rows at a time, as rowDotsOf: four weight streams in flight, each slice of x loaded once for the four.
    for (; r + 4 <= r1; r += 4) {
        const uint16_t* w0 = w + r * in;
        const uint16_t* w1 = w0 + in;
        const uint16_t* w2 = w1 + in;
        const uint16_t* w3 = w2 + in;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + 32 <= in; k += 32) {
            const __m512bh xk = (__m512bh)_mm512_loadu_si512(x + k);
            a0 = _mm512_dpbf16_ps(a0, xk, (__m512bh)_mm512_loadu_si512(w0 + k));
            a1 = _mm512_dpbf16_ps(a1, xk, (__m512bh)_mm512_loadu_si512(w1 + k));
            a2 = _mm512_dpbf16_ps(a2, xk, (__m512bh)_mm512_loadu_si512(w2 + k));
            a3 = _mm512_dpbf16_ps(a3, xk, (__m512bh)_mm512_loadu_si512(w3 + k));
        }
        if (tail) {
            const __m512bh xk = (__m512bh)_mm512_maskz_loadu_epi16(tailMask, x + k);
            a0 = _mm512_dpbf16_ps(a0, xk, (__m512bh)_mm512_maskz_loadu_epi16(tailMask, w0 + k));
            a1 = _mm512_dpbf16_ps(a1, xk, (__m512bh)_mm512_maskz_loadu_epi16(tailMask, w1 + k));
            a2 = _mm512_dpbf16_ps(a2, xk, (__m512bh)_mm512_maskz_loadu_epi16(tailMask, w2 + k));
            a3 = _mm512_dpbf16_ps(a3, xk, (__m512bh)_mm512_maskz_loadu_epi16(tailMask, w3 + k));
        }
        const float t[4] = {sumOfLanes(a0), sumOfLanes(a1), sumOfLanes(a2), sumOfLanes(a3)};
        for (int i = 0; i < 4; ++i) y[r + i] = bias ? t[i] + bias[r + i] : t[i];
    }
    for (; r < r1; ++r) {
        const uint16_t* row = w + r * in;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        int64_t k = 0;
        for (; k + 128 <= in; k += 128) {
            a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(x + k), (__m512bh)_mm512_loadu_si512(row + k));
            a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(x + k + 32), (__m512bh)_mm512_loadu_si512(row + k + 32));
            a2 = _mm512_dpbf16_ps(a2, (__m512bh)_mm512_loadu_si512(x + k + 64), (__m512bh)_mm512_loadu_si512(row + k + 64));
            a3 = _mm512_dpbf16_ps(a3, (__m512bh)_mm512_loadu_si512(x + k + 96), (__m512bh)_mm512_loadu_si512(row + k + 96));
        }
        for (; k + 32 <= in; k += 32)
            a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(x + k), (__m512bh)_mm512_loadu_si512(row + k));
        if (tail)  // the last in % 32 pairs, the rest of the vector read as zeros (nothing past the row is touched)
            a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_maskz_loadu_epi16(tailMask, x + k),
                                  (__m512bh)_mm512_maskz_loadu_epi16(tailMask, row + k));
        const float sum = sumOfLanes(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
        y[r] = bias ? sum + bias[r] : sum;
    }
}

bool detectAvx512Bf16Dot() {
    // libgcc's answer includes the OS's consent (XCR0 saves the AVX-512 state), as compute_dtype's cpuid/xgetbv does.
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}
#else
bool detectAvx512Bf16Dot() { return false; }
#endif

std::atomic<Bf16DotKernel>& chosenKernel() {
    static std::atomic<Bf16DotKernel> kernel{cpuHasAvx512Bf16Dot() ? Bf16DotKernel::Avx512Bf16 : Bf16DotKernel::Widening};
    return kernel;
}

}  // namespace

bool cpuHasAvx512Bf16Dot() {
    static const bool has = detectAvx512Bf16Dot();
    return has;
}

Bf16DotKernel bf16DotKernel() { return chosenKernel().load(); }

void setBf16DotKernel(Bf16DotKernel kernel) {
    if (kernel == Bf16DotKernel::Avx512Bf16 && !cpuHasAvx512Bf16Dot())
        throw Error("singleRowLinear: the AVX512-BF16 kernel was asked for, but this CPU (or this build) has no "
                    "avx512_bf16 (lscpu's flags); the widening kernel runs everywhere.");
    chosenKernel().store(kernel);
}

const char* bf16DotKernelName(Bf16DotKernel kernel) {
    switch (kernel) {
        case Bf16DotKernel::Avx512Bf16: return "avx512_bf16 (VDPBF16PS)";
        case Bf16DotKernel::Widening: return "widening to float32";
        case Bf16DotKernel::Libtorch: break;
    }
    return "libtorch (torch::linear)";
}

bool singleRowLinearApplies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    if (!x.defined() || !w.defined()) return false;
    const torch::ScalarType dt = x.scalar_type();
    if ((dt != torch::kFloat32 && dt != torch::kBFloat16) || w.scalar_type() != dt) return false;
    if (dt == torch::kBFloat16 && bf16DotKernel() == Bf16DotKernel::Libtorch) return false;
    if (w.dim() != 2 || !w.is_contiguous() || x.dim() < 1 || x.size(-1) != w.size(1) || x.numel() != w.size(1)) return false;
    if (!x.device().is_cpu() || !w.device().is_cpu()) return false;
    if (b.defined() && (b.scalar_type() != dt || b.dim() != 1 || b.size(0) != w.size(0) || !b.is_contiguous()))
        return false;
    const bool grad = x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad());
    return !(grad && at::GradMode::is_enabled());
}

torch::Tensor singleRowLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    if (!singleRowLinearApplies(x, w, b))
        throw Error("singleRowLinear: needs one float32 or bfloat16 row [..., in] and a contiguous [out, in] weight of the "
                    "same dtype, got x " + kernel::describe(x) + ", w " + kernel::describe(w) + ", b " + kernel::describe(b) + ".");
    const int64_t out = w.size(0), in = w.size(1);
    const bool bf16 = w.scalar_type() == torch::kBFloat16;
    // bfloat16: the bias widened to float32 once (exact); the sums in float32, rounded once at the end.
    const torch::Tensor bias = b.defined() ? b.to(torch::kFloat32).contiguous() : torch::Tensor();
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = out;
    torch::Tensor y = torch::empty(shape, torch::TensorOptions().dtype(torch::kFloat32));
    const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
    float* yp = y.data_ptr<float>();
    // 64 rows (256 KB of a 1024-wide float32 matrix) at least per thread: smaller matrices stay on one thread.
    if (bf16) {
        const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
#ifdef NNSCOPE_HAVE_AVX512BF16_KERNEL
        if (bf16DotKernel() == Bf16DotKernel::Avx512Bf16) {
            const torch::Tensor row = x.contiguous();  // bfloat16, as VDPBF16PS reads it
            const auto* xp = reinterpret_cast<const uint16_t*>(row.data_ptr<at::BFloat16>());
            at::parallel_for(0, out, /*grain_size=*/64,
                             [&](int64_t r0, int64_t r1) { rowDotsAvx512Bf16(xp, wp, bp, yp, in, r0, r1); });
            return y.to(torch::kBFloat16);
        }
#endif
        const torch::Tensor row = x.contiguous().to(torch::kFloat32);  // widened once (exact)
        const float* xp = row.data_ptr<float>();
        at::parallel_for(0, out, /*grain_size=*/64, [&](int64_t r0, int64_t r1) { rowDotsBf16(xp, wp, bp, yp, in, r0, r1); });
        return y.to(torch::kBFloat16);
    }
    const torch::Tensor row = x.contiguous();
    const float* xp = row.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    at::parallel_for(0, out, /*grain_size=*/64, [&](int64_t r0, int64_t r1) { rowDots(xp, wp, bp, yp, in, r0, r1); });
    return y;
}

}  // namespace nnscope
