// SPDX-License-Identifier: MIT
#include "core/run/openblas.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <set>

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

std::vector<BlasLibrary> loadedBlasLibraries() {
    std::vector<std::string> paths;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            const std::string name = info->dlpi_name ? info->dlpi_name : "";
            const std::string base = name.substr(name.rfind('/') + 1);
            if (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0 || base.rfind("libcblas.so", 0) == 0)
                static_cast<std::vector<std::string>*>(data)->push_back(name);
            return 0;
        },
        &paths);
    std::vector<BlasLibrary> out;
    std::set<std::string> seen;
    for (const std::string& path : paths) {
        char resolved[4096];
        const std::string real = realpath(path.c_str(), resolved) ? std::string(resolved) : path;
        if (!seen.insert(real).second) continue;
        BlasLibrary lib{real, "unknown"};
        // Already loaded, so dlopen only takes a reference; openblas_get_parallel: 0 sequential, 1 pthreads, 2 OpenMP.
        if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
            using GetParallel = int (*)();
            if (auto* fn = reinterpret_cast<GetParallel>(dlsym(handle, "openblas_get_parallel"))) {
                const int mode = fn();
                lib.threading = mode == 2 ? "OpenMP" : mode == 1 ? "pthreads" : mode == 0 ? "sequential" : "unknown";
            }
            dlclose(handle);
        }
        out.push_back(lib);
    }
    return out;
}

std::string blasSummary() {
    const std::vector<BlasLibrary> libs = loadedBlasLibraries();
    if (libs.empty()) return "no BLAS library loaded";
    using GetConfig = char* (*)();
    auto* config = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
    std::string line = config && config() ? std::string(config()) : std::string("BLAS");
    std::vector<std::string> pthreads;
    bool allOpenMp = true;
    for (const auto& lib : libs) {
        if (lib.threading == "pthreads") pthreads.push_back(lib.path);
        if (lib.threading != "OpenMP") allOpenMp = false;
    }
    if (allOpenMp) line += " (OpenMP: one thread pool with libtorch)";
    else if (!pthreads.empty()) {
        line += " (pthreads: its own thread pool beside libtorch's OpenMP one, which fight over the cores; "
                "packaging/install-deps.sh installs libopenblas0-openmp and points libblas.so.3 and libopenblas.so.0 at "
                "it, see docs/PERFORMANCE.md):";
        for (const auto& p : pthreads) line += " " + p;
    } else {
        line += " (threading:";
        for (const auto& lib : libs) line += " " + lib.path + " " + lib.threading;
        line += ")";
    }
    return line;
}

}  // namespace nnscope
