// SPDX-License-Identifier: MIT
// Compiled with OpenMP, as gemv.cpp (core/CMakeLists.txt): at::parallel_for's threads come from "#pragma omp parallel".
#include "core/model/attention_scores.h"

#include "core/model/error.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace nnscope {
namespace {

inline float widen(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

/// f rounded to bfloat16 and widened back: c10::detail::round_to_nearest_even (NaN becomes 0x7FC0), branch-free so that
/// the loops below vectorize.
inline float roundToBf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const uint32_t rounded = (u + (((u >> 16) & 1u) + 0x7FFFu)) & 0xFFFF0000u;
    const uint32_t bits = f != f ? 0x7FC00000u : rounded;
    float g;
    std::memcpy(&g, &bits, sizeof g);
    return g;
}

__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3"))) void rowBf16(const uint16_t* x, const uint16_t* m,
                                                                                         float s, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = roundToBf16(roundToBf16(widen(x[i]) * s) + widen(m[i]));
}

__attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3"))) void rowFloat(const float* x, const float* m, float s,
                                                                                          float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s + m[i];  // two roundings: -ffp-contract is off for this (see CMake)
}

std::string describe(const torch::Tensor& t) {
    std::ostringstream o;
    o << t.sizes() << " " << t.dtype() << " on " << t.device();
    return o.str();
}

}  // namespace

bool maskedScoresApplies(const torch::Tensor& scores, double scale, const torch::Tensor& mask) {
    if (!scores.defined() || !mask.defined() || scores.is_meta() || mask.is_meta() || !scores.device().is_cpu() ||
        !mask.device().is_cpu() || scores.requires_grad() || mask.requires_grad() || !std::isfinite(scale))
        return false;
    const auto dt = scores.scalar_type();
    if ((dt != torch::kFloat32 && dt != torch::kBFloat16) || mask.scalar_type() != dt) return false;
    if (scores.dim() != 4 || mask.dim() != 4 || !scores.is_contiguous() || mask.size(3) != scores.size(3)) return false;
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
    // A broadcast axis of the mask steps by 0.
    const int64_t mb = m.size(0) == 1 ? 0 : m.stride(0), mh = m.size(1) == 1 ? 0 : m.stride(1), mq = m.size(2) == 1 ? 0 : m.stride(2);
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

}  // namespace nnscope
