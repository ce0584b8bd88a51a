// SPDX-License-Identifier: MIT
#include "core/run/openblas.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace nnscope {

const char* openBlasCoreName() {
    using CoreName = char* (*)();
    auto* fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    const char* name = fn ? fn() : nullptr;
    return name ? name : "";
}

void restartWithOpenBlasCoreType(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("NNSCOPE_KEEP_BLAS_CORE")) return;
    if (std::strcmp(openBlasCoreName(), "Prescott") != 0) return;
    const char* core = nullptr;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (!core) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);  // returns only on failure: go on with the generic kernels
}

}  // namespace nnscope
