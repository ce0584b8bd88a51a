// SPDX-License-Identifier: MIT
#include "core/model/allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace nnscope {
namespace {

// libtorch 2.3 made Allocator::allocate non-const and added the pure virtual copy_data.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define NNSCOPE_ALLOCATE_CONST
#define NNSCOPE_ALLOCATOR_COPY_DATA 1
#else
#define NNSCOPE_ALLOCATE_CONST const
#define NNSCOPE_ALLOCATOR_COPY_DATA 0
#endif

constexpr std::size_t kSmallAlignment = 64;  // c10::gAlignment on x86-64: what libtorch's kernels expect

void freeBytes(void* p) { std::free(p); }

class HugePageCpuAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(std::size_t n) NNSCOPE_ALLOCATE_CONST override {
        void* p = nullptr;
        const bool huge = n >= kHugePageBytes;
        if (n > 0 && posix_memalign(&p, huge ? kHugePageBytes : kSmallAlignment, n) != 0) p = nullptr;
        if (n > 0 && !p) return c10::GetDefaultCPUAllocator()->allocate(n);  // libtorch's own out-of-memory error
        if (huge) {
            // Only whole 2 MiB pages: the tail stays on 4 KiB pages, so the allocation uses no more memory than asked.
            // EINVAL (a kernel without transparent huge pages) leaves ordinary pages: nothing to report.
            madvise(p, n & ~(kHugePageBytes - 1), MADV_HUGEPAGE);
        }
        return {p, p, &freeBytes, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &freeBytes; }
#if NNSCOPE_ALLOCATOR_COPY_DATA
    void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#endif
};

std::atomic<HugePageCpuAllocator*> g_allocator{nullptr};

bool turnedOff() {
    const char* v = std::getenv("NNSCOPE_HUGE_PAGES");
    return v && std::string(v) == "0";
}

/// The bracketed choice in /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise", "never"), or "" when the
/// file is missing (a kernel without transparent huge pages).
std::string kernelSetting() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(f, line);
    const auto open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) return "";
    return line.substr(open + 1, close - open - 1);
}

}  // namespace

void useHugePageCpuAllocator() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (turnedOff()) return;
        auto* allocator = new HugePageCpuAllocator();  // libtorch keeps the pointer for the life of the process
        c10::SetCPUAllocator(allocator);
        g_allocator = allocator;
    });
}

bool hugePageCpuAllocatorInUse() {
    HugePageCpuAllocator* allocator = g_allocator;
    return allocator && c10::GetCPUAllocator() == allocator;
}

std::string cpuAllocatorSummary() {
    if (!hugePageCpuAllocatorInUse())
        return turnedOff() ? "libtorch's default (NNSCOPE_HUGE_PAGES=0)" : "libtorch's default";
    const std::string kernel = kernelSetting();
    if (kernel.empty()) return "tensors of 2 MiB and more 2 MiB-aligned; this kernel has no transparent huge pages";
    if (kernel == "never")
        return "tensors of 2 MiB and more 2 MiB-aligned; the kernel's transparent huge pages are off "
               "(/sys/kernel/mm/transparent_hugepage/enabled: never)";
    return "tensors of 2 MiB and more on transparent huge pages (kernel: " + kernel + ")";
}

}  // namespace nnscope
