// SPDX-License-Identifier: MIT
#pragma once
// OpenBLAS picks its kernels when it loads, from the CPU it recognises. Debian 12's OpenBLAS 0.3.21 does not know CPUs
// released after it (Sapphire Rapids, Emerald Rapids, Zen 4 ...) and falls back to its generic "Prescott" kernels,
// which run libtorch's float32 matrix products 2-4x slower (docs/PERFORMANCE.md: 65 against 299 GFLOP/s for 2048³ on
// an Emerald Rapids). It reads OPENBLAS_CORETYPE only at load, so the fix is a restart with that variable set.

#include <string>
#include <vector>

namespace nnscope {

/// When the OpenBLAS this process loaded runs its generic Prescott kernels on a CPU with AVX2 + FMA (Haswell kernels) or
/// AVX-512 F/BW/DQ/VL (SkylakeX kernels), sets OPENBLAS_CORETYPE accordingly and re-executes the program with the same
/// `argv` (once: the variable is then set). Does nothing when OPENBLAS_CORETYPE is already set, when
/// NNSCOPE_KEEP_BLAS_CORE is set, when the BLAS is not OpenBLAS, or when it already chose a core; if the restart fails
/// the program goes on as it was. Call first thing in main(), before any thread is started.
void restartWithOpenBlasCoreType(char** argv);

/// The core OpenBLAS runs ("SkylakeX", "Haswell", "Prescott", ...), or "" when the BLAS is not OpenBLAS.
const char* openBlasCoreName();

/// One BLAS library loaded in this process: its file and how it runs its threads.
struct BlasLibrary {
    std::string path;       ///< the file the dynamic loader mapped (after the Debian alternatives' links)
    std::string threading;  ///< "OpenMP", "pthreads", "sequential", or "unknown" (not OpenBLAS, or an older one)
};

/// Every BLAS library this process has loaded (libblas.so.3, libopenblas.so.0, ...): Debian's libtorch loads OpenBLAS
/// under both names, and each is a Debian alternative chosen on its own. An OpenBLAS built for pthreads keeps its own
/// thread pool beside libtorch's OpenMP one and the two fight over the cores (docs/PERFORMANCE.md: 32% of a 128-token
/// pass spin-waiting on 2 cores); the OpenMP build (libopenblas0-openmp) shares libgomp's pool. Empty when none is loaded.
std::vector<BlasLibrary> loadedBlasLibraries();

/// One line for `nnscope --version`: "OpenBLAS 0.3.21 ... (OpenMP: one thread pool with libtorch)" or,
/// where a pthreads build is loaded, which file and the package to install instead.
std::string blasSummary();

}  // namespace nnscope
