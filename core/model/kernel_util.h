// SPDX-License-Identifier: MIT
// Small pieces shared by the engine's own CPU kernels (core/model/gemv.cpp, core/model/attention_kernels.cpp).
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

namespace nnscope::kernel {

/// A bfloat16, given as its 16 bits, as float32: the top half of a float32, so the widening is exact.
inline float toFloat(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
inline float toFloat(float v) { return v; }

/// f rounded to bfloat16 and widened back to float32: c10::detail::round_to_nearest_even (NaN becomes 0x7FC0),
/// branch-free so that loops over it vectorize.
inline float roundToBf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const uint32_t rounded = (u + (((u >> 16) & 1u) + 0x7FFFu)) & 0xFFFF0000u;
    const uint32_t bits = f != f ? 0x7FC00000u : rounded;
    float g;
    std::memcpy(&g, &bits, sizeof g);
    return g;
}

/// A tensor for an error message: "[2, 4] Float on cpu", or "(none)" where it is undefined.
inline std::string describe(const torch::Tensor& t) {
    if (!t.defined()) return "(none)";
    std::ostringstream o;
    o << t.sizes() << " " << t.scalar_type() << " on " << t.device();
    return o.str();
}

}  // namespace nnscope::kernel
