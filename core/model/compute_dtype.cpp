// SPDX-License-Identifier: MIT
#include "core/model/compute_dtype.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nnscope {
namespace {

std::string gigabytes(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
    return buf;
}

std::string nameOf(torch::ScalarType t) {
    switch (t) {
        case torch::kFloat32: return "float32";
        case torch::kBFloat16: return "bfloat16";
        case torch::kFloat16: return "float16";
        case torch::kFloat64: return "float64";
        default: return c10::toString(t);
    }
}

#if defined(__x86_64__) || defined(__i386__)
bool detectBfloat16() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv is usable
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const uint64_t xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    const bool osAvx512 = (xcr0 & 0xE6) == 0xE6;        // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM states saved
    const bool osAmx = (xcr0 & 0x60000) == 0x60000;     // XTILECFG, XTILEDATA states saved
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const unsigned maxSubLeaf = a;
    const bool avx512f = b & (1u << 16), amxBf16 = d & (1u << 22);
    if (amxBf16 && osAmx) return true;
    if (maxSubLeaf < 1 || !avx512f || !osAvx512) return false;
    __get_cpuid_count(7, 1, &a, &b, &c, &d);
    return a & (1u << 5);  // AVX512_BF16
}
#else
bool detectBfloat16() { return false; }
#endif

}  // namespace

bool cpuHasNativeBfloat16() {
    static const bool has = detectBfloat16();
    return has;
}

bool oneDnnMultipliesBfloat16() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
    static const bool has = false;
#endif
    return has;
}

std::optional<uint64_t> availableMemoryBytes() {
    std::ifstream in("/proc/meminfo");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream s(line.substr(13));
        uint64_t kb = 0;
        std::string unit;
        if (s >> kb >> unit && unit == "kB") return kb * 1024;
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<torch::ScalarType> configDtype(const std::string& raw) {
    const std::string name = raw.rfind("torch.", 0) == 0 ? raw.substr(6) : raw;
    if (name == "float32" || name == "float") return torch::kFloat32;
    if (name == "bfloat16") return torch::kBFloat16;
    if (name == "float16" || name == "half") return torch::kFloat16;
    if (name == "float64" || name == "double") return torch::kFloat64;
    return std::nullopt;
}

DtypeDecision resolveComputeDtype(const DtypeRequest& r) {
    DtypeDecision d;
    if (r.requested) {
        d.dtype = *r.requested;
        return d;
    }
    if (!r.stored || *r.stored == torch::kFloat32) return d;
    if (*r.stored == torch::kBFloat16 && r.cpuHasBfloat16) {
        d.dtype = torch::kBFloat16;
        return d;
    }
    const std::string stored = nameOf(*r.stored);
    const std::string why = *r.stored == torch::kBFloat16
                                ? "this CPU has no native bfloat16 (AVX512-BF16 or AMX-BF16)"
                                : "nnscope computes in float32 or bfloat16, and float32 holds every " + stored + " value exactly";
    if (r.availableBytes && r.float32Bytes > *r.availableBytes && *r.stored == torch::kBFloat16) {
        // a mixture of experts at its real size (OLMoE-1B-7B: 27.7 GB in float32) on a 24 GB machine: compute in the stored
        // bfloat16, read from the mapped file, rather than refuse
        d.dtype = torch::kBFloat16;
        d.note = r.checkpoint + ": stored in bfloat16, computing in bfloat16 (read from the file without a copy): " + why +
                 ", where float32 is the default, but the float32 copy would need about " + gigabytes(r.float32Bytes) + " and only " +
                 gigabytes(*r.availableBytes) + " of memory is available. Each bfloat16 product sums in float32 and rounds once, as "
                 "transformers computes it. --dtype float32 forces float32.";
        return d;
    }
    if (r.availableBytes && r.float32Bytes > *r.availableBytes) {
        d.error = r.checkpoint + ": the checkpoint is stored in " + stored + " and would compute in float32 (" + why +
                  "), but its float32 copy needs about " + gigabytes(r.float32Bytes) + " and only " +
                  gigabytes(*r.availableBytes) + " of memory is available (MemAvailable in /proc/meminfo). Load it with "
                  "--dtype bfloat16 (" +
                  (*r.stored == torch::kBFloat16 ? std::string("the weights are then read from the file without a copy")
                                                 : std::string("a copy of half that size")) +
                  "), or free memory.";
        return d;
    }
    d.note = r.checkpoint + ": stored in " + stored + ", computing in float32 (a " + gigabytes(r.float32Bytes) +
             " copy of the weights): " + why + ". --dtype bfloat16 forces bfloat16.";
    return d;
}

}  // namespace nnscope
