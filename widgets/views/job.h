// SPDX-License-Identifier: MIT
#pragma once
// What every job of the window shares, whatever it computes (a trace, a logit lens, a view's graph): the states it
// goes through, the handle its computation gets in the worker thread (progress and Cancel), and the request a view
// makes for a computation it wants off the window's thread. The worker (app/traceworker.h) runs jobs; the window
// watches each through a JobWatcher (app/jobwatcher.h); a view asks through TraceView::requestAnalysis.
#include <QString>
#include <QVariant>

#include <atomic>
#include <functional>

namespace nnscope {

/// Where a job is. Cancelled is a state of its own, never a message: a job stopped by Cancel (Esc) or dropped from
/// the queue ends Cancelled; one whose computation threw ends Failed, with the error's sentence.
enum class JobState {
    Idle,       ///< nothing watched (a watcher before its first job, or after forget)
    Queued,     ///< asked for, waiting for the worker
    Running,    ///< the worker is computing it
    Finished,   ///< done: the result is there
    Failed,     ///< the computation threw: the message says why
    Cancelled,  ///< stopped by Cancel before it finished, or dropped from the queue
};

/// A job's computation's view of its job, in the worker thread: report progress, and see Cancel. A computation
/// checks cancelled() between its steps (or hands cancelFlag() to the engine's options, which check it between blocks)
/// and throws nnscope::Cancelled (core/model/taps.h) to stop; the worker then reports the job Cancelled.
class JobControl {
public:
    /// `id` is the job's number (unique per worker), `cancel` its flag (never null); `progress` is called with
    /// (done, total) and may be empty.
    JobControl(quint64 id, const std::atomic<bool>* cancel, std::function<void(int, int)> progress)
        : id_(id), cancel_(cancel), progress_(std::move(progress)) {}

    quint64 id() const { return id_; }
    /// The flag Cancel sets, for the engine's options (LensOptions::cancel, TraceOptions::cancel, ...).
    const std::atomic<bool>* cancelFlag() const { return cancel_; }
    bool cancelled() const { return cancel_->load(); }
    /// Throws nnscope::Cancelled when Cancel was asked for.
    void throwIfCancelled() const;
    /// Reports `done` of `total` steps (blocks, for most jobs).
    void progress(int done, int total) const {
        if (progress_) progress_(done, total);
    }
    /// A progress callback for the engine's options that counts its (done, _) after `offset` of `total` steps: a job of
    /// several passes reports them as one run.
    std::function<void(int, int)> progressFrom(int offset, int total) const {
        return [this, offset, total](int done, int) { progress(offset + done, total); };
    }

private:
    quint64 id_;
    const std::atomic<bool>* cancel_;
    std::function<void(int, int)> progress_;
};

/// A computation a view wants run off the window's thread (TraceView::requestAnalysis): what it is, for the trace
/// panel ("information flow"), how many steps its progress counts (0: it reports none), and the computation itself,
/// which runs in the worker thread and so reads only what it captured (a snapshot, the view's settings), never the view.
struct AnalysisRequest {
    quint64 serial = 0;  ///< the view's number for it: the outcome is handed back with it (TraceView::endAnalysis)
    QString what;
    int total = 0;
    std::function<QVariant(const JobControl&)> compute;
};

}  // namespace nnscope
