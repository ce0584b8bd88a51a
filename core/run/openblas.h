// SPDX-License-Identifier: MIT
#pragma once
// OpenBLAS picks its kernels when it loads, from the CPU it recognises. Debian 12's OpenBLAS 0.3.21 does not know CPUs
// released after it (Sapphire Rapids, Emerald Rapids, Zen 4 ...) and falls back to its generic "Prescott" kernels,
// which run libtorch's float32 matrix products 2-4x slower (docs/PERFORMANCE.md: 65 against 299 GFLOP/s for 2048³ on
// an Emerald Rapids). It reads OPENBLAS_CORETYPE only at load, so the fix is a restart with that variable set.

namespace nnscope {

/// When the OpenBLAS this process loaded runs its generic Prescott kernels on a CPU with AVX2 + FMA (Haswell kernels) or
/// AVX-512 F/BW/DQ/VL (SkylakeX kernels), sets OPENBLAS_CORETYPE accordingly and re-executes the program with the same
/// `argv` (once: the variable is then set). Does nothing when OPENBLAS_CORETYPE is already set, when
/// NNSCOPE_KEEP_BLAS_CORE is set, when the BLAS is not OpenBLAS, or when it already chose a core; if the restart fails
/// the program goes on as it was. Call first thing in main(), before any thread is started.
void restartWithOpenBlasCoreType(char** argv);

/// The core OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...), or "" when the BLAS is not OpenBLAS.
const char* openBlasCoreName();

}  // namespace nnscope
