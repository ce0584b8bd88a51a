// SPDX-License-Identifier: MIT
// Which dtype a checkpoint computes in when the user does not say: the stored one where this CPU multiplies it
// natively, float32 elsewhere, and never a float32 copy that would not fit in memory.
#pragma once
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace nnscope {

/// Whether this CPU multiplies bfloat16 natively: AVX512-BF16 (CPUID leaf 7 sub-leaf 1, EAX bit 5, with the OS saving
/// the AVX-512 state) or AMX-BF16 (leaf 7 sub-leaf 0, EDX bit 22, with the OS saving the tile state). Read once
/// with the cpuid and xgetbv instructions (what the guest sees under a hypervisor, as /proc/cpuinfo's avx512_bf16 and
/// amx_bf16 flags); false on other architectures. Without it libtorch 1.13's bfloat16 matrix products emulate the
/// arithmetic, between a little and 50 times slower than float32 depending on the CPU (docs/PERFORMANCE.md).
bool cpuHasNativeBfloat16();

/// Whether libtorch 1.13 hands this CPU's bfloat16 matrix products to oneDNN, which sums them in float32 and rounds once
/// (as torch 2.x does everywhere): AVX-512 BW, VL and DQ (its mkldnn_bf16_device_check). Elsewhere (an AVX2-only CPU)
/// its own gemm computes them and rounds otherwise, so the engine computes such products in float32 and rounds once
/// itself (core/model/model.cpp's linear and bfloat16Product). Found once, at the first call.
bool oneDnnMultipliesBfloat16();

/// The memory the kernel says can be allocated without swapping: MemAvailable of /proc/meminfo, in bytes;
/// nullopt where the file or the line is missing (not Linux, a restricted container).
std::optional<uint64_t> availableMemoryBytes();

/// Parses a dtype as config.json spells it (torch_dtype or dtype: "float32", "bfloat16", "float16", "float64",
/// with or without "torch."); nullopt for anything else ("auto", a missing key).
std::optional<torch::ScalarType> configDtype(const std::string& name);

/// What resolveComputeDtype decides from.
struct DtypeRequest {
    /// The checkpoint's dtype: config.json's torch_dtype or dtype, else the dtype of most of its weights; nullopt when
    /// unknown.
    std::optional<torch::ScalarType> stored;
    /// --dtype: float32 or bfloat16 forces it; nullopt is "auto".
    std::optional<torch::ScalarType> requested;
    bool cpuHasBfloat16 = false;  ///< cpuHasNativeBfloat16()
    /// The memory a float32 copy of the weights takes: parameters × 4 bytes.
    uint64_t float32Bytes = 0;
    /// availableMemoryBytes(); nullopt: unknown, not checked.
    std::optional<uint64_t> availableBytes;
    /// The checkpoint folder, named in the note and the error.
    std::string checkpoint;
};

/// The outcome: the compute dtype, plus a note for the user or an error.
struct DtypeDecision {
    torch::ScalarType dtype = torch::kFloat32;
    /// One sentence when "auto" computes in another dtype than the stored one (printed once: CLI stderr, status bar).
    std::string note;
    /// Non-empty when the checkpoint must not be loaded as asked (Model::load throws it as nnscope::Error).
    std::string error;
};

/// The compute dtype of a checkpoint (a pure function, so that every branch is testable on any CPU):
/// - a requested dtype is used as is (float32 or bfloat16; nothing else is checked: the user asked);
/// - "auto" on a float32 checkpoint (or an unknown one): float32, no note;
/// - "auto" on a bfloat16 checkpoint: bfloat16 where the CPU has native bfloat16; elsewhere float32 with a note
///   saying so, unless the float32 copy (float32Bytes) exceeds the available memory: then bfloat16 (the mapped file,
///   no copy), with a note giving both figures and --dtype float32;
/// - "auto" on a float16 or float64 checkpoint: float32 (nnscope computes in float32 or bfloat16), with a note and
///   the same memory check.
DtypeDecision resolveComputeDtype(const DtypeRequest& request);

}  // namespace nnscope
