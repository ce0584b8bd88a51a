// SPDX-License-Identifier: MIT
// Large CPU tensors on transparent huge pages.
//
// A forward pass makes its activations as new tensors (the pass never writes in place), and a saved value is a tensor
// kept to the end of the pass. glibc's malloc hands back from its heap a block of up to 32 MiB once one as large was
// freed, but a block it has to map (the first of a size, anything above 32 MiB, every block while saved values hold the
// freed ones) is new memory, which Linux fills one 4 KiB page fault at a time. On the 2-core Xeon of
// docs/PERFORMANCE.md a 512-token float32 pass of the ERNIE-4.5-0.3B-shaped benchmark took about 410 000 page faults
// (1.6 GB of new pages) each time, saving nothing. With tensors of 2 MiB and more on 2 MiB pages that is a few thousand.
// libtorch 1.13 has no switch for it (torch 2.x reads THP_MEM_ALLOC_ENABLE=1, off by default): nnscope installs its own
// CPU allocator. A huge page is still faulted in and zeroed by the kernel, so the allocator also keeps freed blocks of
// 2 MiB and more for the next allocation of their size: a repeated 512-token pass saving every value went from about
// 31 000 page faults to 3 000 (docs/PERFORMANCE.md).
#pragma once
#include <cstddef>
#include <string>

namespace nnscope {

/// Makes libtorch's CPU allocator (c10::GetCPUAllocator(), what every CPU tensor is made with) put each allocation of
/// 2 MiB or more at a 2 MiB boundary and ask the kernel for transparent huge pages there (madvise MADV_HUGEPAGE over its
/// whole 2 MiB pages; the last partial page stays on 4 KiB pages, so no allocation takes more memory than before);
/// smaller ones are 64-byte aligned as libtorch's own and go back to malloc/free. The values are the same bytes: only the
/// pages under them change.
///
/// A freed block of 2 MiB or more is kept, not unmapped, and handed out again for the next allocation of the same size
/// rounded up to 2 MiB, madvised as when it was made (the next pass of a prompt of the same length asks for the same
/// sizes), so its pages are neither faulted in nor zeroed by the kernel again. An allocation that finds no kept block of
/// its size first frees kept blocks, oldest first, of at least its own size: the kept blocks never take the process
/// above the largest amount of memory its tensors held at once. releaseKeptCpuBlocks() gives them all back (a Model
/// does when it is destroyed).
///
/// Called once per process (later calls do nothing) by Model::load and the other Model factories, and first thing in
/// nnscope's main(). NNSCOPE_HUGE_PAGES=0 in the environment keeps libtorch's default allocator (benchmarks compare the
/// two side by side). Where the kernel's transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled
/// "never") the madvise does nothing and the pages stay 4 KiB. Tensors made before the call keep their own deleter.
/// Throws nothing; a failed allocation (after freeing every kept block) raises libtorch's own out-of-memory error, as
/// the default allocator does.
void useHugePageCpuAllocator();

/// Whether libtorch's CPU allocator is nnscope's huge-page one (useHugePageCpuAllocator ran and was not turned off).
bool hugePageCpuAllocatorInUse();

/// The smallest allocation the huge-page allocator aligns and madvises: 2 MiB (one x86-64 huge page), in bytes.
constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

/// Bytes of freed blocks of 2 MiB and more kept for reuse (each counted at its size rounded up to 2 MiB); 0 when the
/// huge-page allocator is not in use.
std::size_t keptCpuBytes();

/// Frees every kept block (a no-op when none is kept or the huge-page allocator is not in use). Thread-safe, as the
/// allocator is.
void releaseKeptCpuBlocks();

/// One line for `nnscope --version` and the benchmarks: "tensors of 2 MiB and more on transparent huge pages (kernel:
/// madvise), freed ones kept for reuse", or "libtorch's default (NNSCOPE_HUGE_PAGES=0)", or the kernel setting that keeps them off.
std::string cpuAllocatorSummary();

}  // namespace nnscope
