// SPDX-License-Identifier: MIT
// Temporary files removed when a signal stops the process. writeFileAtomically writes `.NAME.XXXXXX` beside its target
// and renames it into place; Ctrl-C or SIGTERM during the write used to leave that hidden partial file behind.
#pragma once

namespace nnscope {

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that unlink every registered temporary file, then let the signal
/// stop the process as it would have (default action, same exit status). A signal the process ignores (nohup) stays
/// ignored, and a handler someone else installed is left alone. Idempotent; call it once from main().
void installTempFileCleanupOnSignals();

/// Registers `path` (a file this process is writing) for removal by the signal handlers while the object lives; the
/// destructor unregisters it (after a rename, the name no longer exists and nothing is removed). Best effort: a path
/// of 4096 bytes or more, or more than 32 files written at once, is not registered. Thread-safe and allocation-free.
class TempFileRegistration {
public:
    explicit TempFileRegistration(const char* path);
    ~TempFileRegistration();
    TempFileRegistration(const TempFileRegistration&) = delete;
    TempFileRegistration& operator=(const TempFileRegistration&) = delete;

private:
    int slot_ = -1;
};

}  // namespace nnscope
