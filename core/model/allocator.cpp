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
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <vector>

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

std::size_t roundUpToHugePage(std::size_t n) { return (n + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }

/// The blocks of 2 MiB and more: those handed out (their capacity, n rounded up to 2 MiB) and those freed and kept
/// for reuse, newest last. Never destroyed: a tensor may be freed during the process's static destruction.
class LargeBlocks {
public:
    /// A kept block of exactly `capacity` bytes (the newest), or a new one after freeing kept blocks of at least
    /// `capacity` bytes, oldest first; nullptr when memory runs out even with nothing kept.
    void* take(std::size_t n) {
        const std::size_t capacity = roundUpToHugePage(n);
        std::lock_guard<std::mutex> lock(m_);
        for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
            if (it->capacity != capacity) continue;
            void* p = it->p;
            keptBytes_ -= capacity;
            kept_.erase(std::next(it).base());
            live_.emplace(p, capacity);
            return p;
        }
        releaseLocked(capacity);
        void* p = nullptr;
        if (posix_memalign(&p, kHugePageBytes, capacity) != 0) {
            releaseLocked(keptBytes_);
            if (posix_memalign(&p, kHugePageBytes, capacity) != 0) return nullptr;
        }
        // Only the whole 2 MiB pages under the n bytes asked for: the tail stays on 4 KiB pages, so the block uses no
        // more memory than asked. EINVAL (a kernel without transparent huge pages) leaves ordinary pages.
        madvise(p, n & ~(kHugePageBytes - 1), MADV_HUGEPAGE);
        live_.emplace(p, capacity);
        return p;
    }

    /// Keeps `p` for reuse when take() handed it out; frees it otherwise (false).
    bool give(void* p) {
        std::lock_guard<std::mutex> lock(m_);
        const auto it = live_.find(p);
        if (it == live_.end()) return false;
        kept_.push_back({p, it->second});
        keptBytes_ += it->second;
        live_.erase(it);
        return true;
    }

    void releaseAll() {
        std::lock_guard<std::mutex> lock(m_);
        releaseLocked(keptBytes_);
    }

    std::size_t keptBytes() {
        std::lock_guard<std::mutex> lock(m_);
        return keptBytes_;
    }

private:
    struct Kept {
        void* p;
        std::size_t capacity;
    };
    /// Frees kept blocks, oldest first, until at least `bytes` are freed or none is kept.
    void releaseLocked(std::size_t bytes) {
        std::size_t freed = 0, i = 0;
        for (; i < kept_.size() && freed < bytes; ++i) {
            std::free(kept_[i].p);
            freed += kept_[i].capacity;
        }
        kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(i));
        keptBytes_ -= freed;
    }

    std::mutex m_;
    std::unordered_map<void*, std::size_t> live_;
    std::vector<Kept> kept_;
    std::size_t keptBytes_ = 0;
};

LargeBlocks& largeBlocks() {
    static LargeBlocks* blocks = new LargeBlocks();
    return *blocks;
}

void keepOrFree(void* p) {
    if (p && !largeBlocks().give(p)) std::free(p);
}

class HugePageCpuAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(std::size_t n) NNSCOPE_ALLOCATE_CONST override {
        if (n >= kHugePageBytes) {
            void* p = largeBlocks().take(n);
            if (!p) return c10::GetDefaultCPUAllocator()->allocate(n);  // libtorch's own out-of-memory error
            return {p, p, &keepOrFree, c10::Device(c10::DeviceType::CPU)};
        }
        void* p = nullptr;
        if (n > 0 && posix_memalign(&p, kSmallAlignment, n) != 0) return c10::GetDefaultCPUAllocator()->allocate(n);
        return {p, p, &freeBytes, c10::Device(c10::DeviceType::CPU)};
    }
    // raw_allocate hands out allocate()'s pointers of either size: the raw deleter tells them apart.
    c10::DeleterFnPtr raw_deleter() const override { return &keepOrFree; }
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

std::size_t keptCpuBytes() { return largeBlocks().keptBytes(); }

void releaseKeptCpuBlocks() { largeBlocks().releaseAll(); }

std::string cpuAllocatorSummary() {
    if (!hugePageCpuAllocatorInUse())
        return turnedOff() ? "libtorch's default (NNSCOPE_HUGE_PAGES=0)" : "libtorch's default";
    const std::string kernel = kernelSetting();
    if (kernel.empty())
        return "tensors of 2 MiB and more 2 MiB-aligned, freed ones kept for reuse; this kernel has no transparent huge pages";
    if (kernel == "never")
        return "tensors of 2 MiB and more 2 MiB-aligned, freed ones kept for reuse; the kernel's transparent huge pages are off "
               "(/sys/kernel/mm/transparent_hugepage/enabled: never)";
    return "tensors of 2 MiB and more on transparent huge pages (kernel: " + kernel + "), freed ones kept for reuse";
}

}  // namespace nnscope
