// SPDX-License-Identifier: MIT
#include "core/io/tempfiles.h"

#include <atomic>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace nnscope {
namespace {

constexpr int kSlots = 32;
constexpr int kPathBytes = 4096;
// A slot is free (0), being filled (1) or holds a path the handler removes (2). The handler reads only slots in state
// 2, so it never sees a half-copied path; everything it calls (unlink, sigaction, raise) is async-signal-safe.
std::atomic<int> slotState[kSlots];
char slotPath[kSlots][kPathBytes];

void removeTempFilesAndStop(int sig) {
    for (int i = 0; i < kSlots; ++i)
        if (slotState[i].load(std::memory_order_acquire) == 2) ::unlink(slotPath[i]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    raise(sig);  // the default action: the process ends as the signal says (status 128 + sig in a shell)
}

}  // namespace

void installTempFileCleanupOnSignals() {
    static std::atomic<bool> installed{false};
    if (installed.exchange(true)) return;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (sigaction(sig, nullptr, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;  // ignored (nohup) or someone else's
        struct sigaction sa {};
        sa.sa_handler = removeTempFilesAndStop;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sig, &sa, nullptr);
    }
}

TempFileRegistration::TempFileRegistration(const char* path) {
    if (!path || std::strlen(path) >= static_cast<size_t>(kPathBytes)) return;
    for (int i = 0; i < kSlots; ++i) {
        int free = 0;
        if (!slotState[i].compare_exchange_strong(free, 1, std::memory_order_acq_rel)) continue;
        std::strcpy(slotPath[i], path);
        slotState[i].store(2, std::memory_order_release);
        slot_ = i;
        return;
    }
}

TempFileRegistration::~TempFileRegistration() {
    if (slot_ >= 0) slotState[slot_].store(0, std::memory_order_release);
}

}  // namespace nnscope
