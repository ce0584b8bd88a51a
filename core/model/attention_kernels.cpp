// SPDX-License-Identifier: MIT
// Compiled with OpenMP, as gemv.cpp (core/CMakeLists.txt): at::parallel_for's threads come from "#pragma omp parallel".
#include "core/model/attention_kernels.h"

#include "core/model/error.h"
#include "core/model/kernel_util.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nnscope {
namespace {

using kernel::describe;
using kernel::roundToBf16;
using kernel::toFloat;

__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3"))) void rowBf16(const uint16_t* x, const uint16_t* m,
                                                                                         float s, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = roundToBf16(roundToBf16(toFloat(x[i]) * s) + toFloat(m[i]));
}

__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3"))) void rowFloat(const float* x, const float* m, float s,
                                                                                          float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s + m[i];  // two roundings: -ffp-contract is off for this (see CMake)
}

inline void store(float* p, int64_t i, float v) { p[i] = v; }
inline void store(uint16_t* p, int64_t i, float v) {
    const float r = roundToBf16(v);
    uint32_t u;
    std::memcpy(&u, &r, sizeof u);
    p[i] = static_cast<uint16_t>(u >> 16);
}

/// x · c + r · s in T (cos's dtype): float32 with each step rounded to float32, or each step rounded to bfloat16.
template <typename T>
inline float rotaryStep(float x, float r, float c, float s) {
    if constexpr (std::is_same<T, uint16_t>::value) return roundToBf16(roundToBf16(x * c) + roundToBf16(r * s));
    return x * c + r * s;  // two products and a sum, each rounded: the file compiles with -ffp-contract=off
}

/// One row of `rotated`: x [R], cos and sin [R] (their first half for adjacent pairs), y [R].
template <typename X, typename T>
inline __attribute__((always_inline)) void rotateRow(const X* x, const T* c, const T* s, X* y, int64_t R, bool adjacentPairs) {
    const int64_t half = R / 2;
    if (adjacentPairs) {
        for (int64_t j = 0; j < half; ++j) {
            const float x0 = toFloat(x[2 * j]), x1 = toFloat(x[2 * j + 1]), cj = toFloat(c[j]), sj = toFloat(s[j]);
            store(y, 2 * j, rotaryStep<T>(x0, -x1, cj, sj));
            store(y, 2 * j + 1, rotaryStep<T>(x1, x0, cj, sj));
        }
        return;
    }
    for (int64_t i = 0; i < half; ++i) store(y, i, rotaryStep<T>(toFloat(x[i]), -toFloat(x[i + half]), toFloat(c[i]), toFloat(s[i])));
    for (int64_t i = half; i < R; ++i) store(y, i, rotaryStep<T>(toFloat(x[i]), toFloat(x[i - half]), toFloat(c[i]), toFloat(s[i])));
}

#define NNSCOPE_ROTATE_ROW(NAME, X, T)                                                                                        \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3"))) void NAME(                                 \
        const X* x, const T* c, const T* s, X* y, int64_t R, bool adjacentPairs) {                                            \
        rotateRow<X, T>(x, c, s, y, R, adjacentPairs);                                                                        \
    }
NNSCOPE_ROTATE_ROW(rotateRowFloat, float, float)
NNSCOPE_ROTATE_ROW(rotateRowBf16InFloat, uint16_t, float)
NNSCOPE_ROTATE_ROW(rotateRowBf16, uint16_t, uint16_t)
#undef NNSCOPE_ROTATE_ROW

/// What every kernel here needs of each tensor: defined, on the CPU, not meta, without autograd (which keeps libtorch's
/// ops), `dims` axes.
bool plainCpuTensor(const torch::Tensor& t, int64_t dims) {
    return t.defined() && !t.is_meta() && t.device().is_cpu() && !t.requires_grad() && t.dim() == dims;
}

/// The step of `t` along axis `d`, 0 where that axis has size 1 (broadcast over the other tensor's).
int64_t broadcastStride(const torch::Tensor& t, int64_t d) { return t.size(d) == 1 ? 0 : t.stride(d); }

}  // namespace

bool maskedScoresApplies(const torch::Tensor& scores, double scale, const torch::Tensor& mask) {
    if (!plainCpuTensor(scores, 4) || !plainCpuTensor(mask, 4) || !std::isfinite(scale)) return false;
    const auto dt = scores.scalar_type();
    if ((dt != torch::kFloat32 && dt != torch::kBFloat16) || mask.scalar_type() != dt) return false;
    if (!scores.is_contiguous() || mask.size(3) != scores.size(3)) return false;
    for (int d = 0; d < 3; ++d)
        if (mask.size(d) != 1 && mask.size(d) != scores.size(d)) return false;
    return true;
}

torch::Tensor maskedScores(const torch::Tensor& scores, double scale, const torch::Tensor& mask) {
    RECORD_FUNCTION("nnscope::maskedScores", std::vector<c10::IValue>());
    if (!maskedScoresApplies(scores, scale, mask))
        throw Error("maskedScores takes contiguous float32 or bfloat16 CPU scores [b, h, q, k] and a mask of their dtype "
                    "broadcast to them, not scores " + describe(scores) + " and mask " + describe(mask) + ".");
    const torch::Tensor m = mask.stride(3) == 1 ? mask : mask.contiguous();
    const int64_t H = scores.size(1), Q = scores.size(2), K = scores.size(3);
    const int64_t rows = scores.size(0) * H * Q;
    const int64_t mb = broadcastStride(m, 0), mh = broadcastStride(m, 1), mq = broadcastStride(m, 2);
    torch::Tensor y = torch::empty(scores.sizes(), scores.options().dtype(torch::kFloat32));
    float* out = y.data_ptr<float>();
    const float s = static_cast<float>(scale);
    const bool bf16 = scores.scalar_type() == torch::kBFloat16;
    const void* in = scores.data_ptr();
    const void* add = m.data_ptr();
    at::parallel_for(0, rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(K, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t b = r / (H * Q), h = (r / Q) % H, q = r % Q;
            const int64_t mo = b * mb + h * mh + q * mq;
            if (bf16)
                rowBf16(static_cast<const uint16_t*>(in) + r * K, static_cast<const uint16_t*>(add) + mo, s, out + r * K, K);
            else
                rowFloat(static_cast<const float*>(in) + r * K, static_cast<const float*>(add) + mo, s, out + r * K, K);
        }
    });
    return y;
}

bool rotatedApplies(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
    for (const torch::Tensor* t : {&x, &cos, &sin})
        if (!plainCpuTensor(*t, 4) || t->stride(3) != 1) return false;
    const auto xt = x.scalar_type(), ct = cos.scalar_type();
    if (sin.scalar_type() != ct || cos.sizes() != sin.sizes()) return false;
    const bool dtypesOk = (xt == torch::kFloat32 && ct == torch::kFloat32) || (xt == torch::kBFloat16 && ct == torch::kFloat32) ||
                          (xt == torch::kBFloat16 && ct == torch::kBFloat16);
    if (!dtypesOk || x.size(3) % 2 != 0 || cos.size(3) != x.size(3) || cos.size(2) != x.size(2)) return false;
    for (int d = 0; d < 2; ++d)
        if (cos.size(d) != 1 && cos.size(d) != x.size(d)) return false;
    return true;
}

torch::Tensor rotated(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool adjacentPairs) {
    RECORD_FUNCTION("nnscope::rotated", std::vector<c10::IValue>());
    if (!rotatedApplies(x, cos, sin))
        throw Error("rotated takes CPU x [b, h, s, rotary_dim] and cos, sin [b or 1, h or 1, s, rotary_dim] (float32/float32, "
                    "bfloat16/float32 or bfloat16/bfloat16), not x " + describe(x) + ", cos " + describe(cos) + " and sin " +
                    describe(sin) + ".");
    const int64_t H = x.size(1), S = x.size(2), R = x.size(3);
    const int64_t rows = x.size(0) * H * S;
    const int64_t xb = x.stride(0), xh = x.stride(1), xs = x.stride(2);
    auto steps = [](const torch::Tensor& t) {
        return std::array<int64_t, 3>{broadcastStride(t, 0), broadcastStride(t, 1), t.stride(2)};
    };
    const auto cst = steps(cos), sst = steps(sin);
    torch::Tensor y = torch::empty(x.sizes(), x.options().memory_format(c10::MemoryFormat::Contiguous));
    const bool xFloat = x.scalar_type() == torch::kFloat32, cFloat = cos.scalar_type() == torch::kFloat32;
    const char* xp = static_cast<const char*>(x.data_ptr());
    const char* cp = static_cast<const char*>(cos.data_ptr());
    const char* sp = static_cast<const char*>(sin.data_ptr());
    char* yp = static_cast<char*>(y.data_ptr());
    const int64_t xe = x.element_size(), ce = cos.element_size();
    at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(R, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t b = r / (H * S), h = (r / S) % H, q = r % S;
            const void* xr = xp + (b * xb + h * xh + q * xs) * xe;
            const void* cr = cp + (b * cst[0] + h * cst[1] + q * cst[2]) * ce;
            const void* sr = sp + (b * sst[0] + h * sst[1] + q * sst[2]) * ce;
            void* yr = yp + r * R * xe;
            if (xFloat)
                rotateRowFloat(static_cast<const float*>(xr), static_cast<const float*>(cr), static_cast<const float*>(sr),
                               static_cast<float*>(yr), R, adjacentPairs);
            else if (cFloat)
                rotateRowBf16InFloat(static_cast<const uint16_t*>(xr), static_cast<const float*>(cr), static_cast<const float*>(sr),
                                     static_cast<uint16_t*>(yr), R, adjacentPairs);
            else
                rotateRowBf16(static_cast<const uint16_t*>(xr), static_cast<const uint16_t*>(cr), static_cast<const uint16_t*>(sr),
                              static_cast<uint16_t*>(yr), R, adjacentPairs);
        }
    });
    return y;
}

bool headsProductApplies(const torch::Tensor& a, const torch::Tensor& b) {
    if (at::hasMKL()) return false;
    for (const torch::Tensor* t : {&a, &b})
        if (!plainCpuTensor(*t, 4) || t->scalar_type() != torch::kFloat32) return false;
    // Below 400 multiply-adds a head libtorch uses its own loop, not the BLAS, which sums in another order.
    return a.size(0) == b.size(0) && a.size(1) == b.size(1) && a.size(3) == b.size(2) && a.size(2) * a.size(3) * b.size(3) >= 400;
}

torch::Tensor headsProduct(const torch::Tensor& a, const torch::Tensor& b) {
    RECORD_FUNCTION("nnscope::headsProduct", std::vector<c10::IValue>());
    if (!headsProductApplies(a, b))
        throw Error("headsProduct takes float32 CPU a [batch, heads, m, k] and b [batch, heads, k, n], not a " + describe(a) +
                    " and b " + describe(b) + ".");
    const int64_t B = a.size(0), H = a.size(1);
    torch::Tensor y = torch::empty({B, H, a.size(2), b.size(3)}, a.options().memory_format(c10::MemoryFormat::Contiguous));
    // Inside the parallel region OpenBLAS's OpenMP build and libtorch's own parallel_for run on the calling thread. The
    // other threads do not inherit the caller's InferenceMode (thread-local): without it a write into y, made under
    // InferenceMode (every trace), is refused.
    const bool inferenceMode = c10::InferenceMode::is_enabled();
    at::parallel_for(0, B * H, 1, [&](int64_t r0, int64_t r1) {
        c10::InferenceMode guard(inferenceMode);
        for (int64_t r = r0; r < r1; ++r) {
            torch::Tensor out = y[r / H][r % H];
            at::mm_out(out, a[r / H][r % H], b[r / H][r % H]);
        }
    });
    return y;
}

}  // namespace nnscope
