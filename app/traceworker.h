// SPDX-License-Identifier: MIT
#pragma once
// The worker thread that loads checkpoints and runs every computation of the window, so the window never waits on the
// model (the mandelbrot example's RenderThread pattern). Requests are queued under a mutex; the thread sleeps on a wait
// condition when idle. Every kind of job goes through one protocol: a request returns the job's id, and the job is
// started, progresses, and ends finished (with its typed result in a QVariant), failed (with a sentence) or cancelled
// (a state, not a message), through the same five signals, whatever it computes. Each job has its own cancel flag:
// Cancel stops a running job within one block (the engine checks the flag between blocks), and a job queued after it
// is not cancelled by it. Results leave by value through queued signals: shared, immutable snapshots and results.
// The destructor cancels, wakes the thread and waits for it. The window watches one job per purpose through a
// JobWatcher (jobwatcher.h).
#include "core/run/edit.h"
#include "core/run/generate.h"
#include "core/run/patching.h"
#include "widgets/views/familyview.h"
#include "widgets/views/generateview.h"
#include "widgets/views/job.h"
#include "widgets/views/tracesnapshot.h"

#include <QMutex>
#include <QStringList>
#include <QThread>
#include <QVariant>
#include <QWaitCondition>

#include <atomic>
#include <deque>
#include <functional>
#include <optional>

namespace nnscope {

using PatchingResultPtr = std::shared_ptr<const PatchingResult>;

/// One logit lens for the worker to compute: a prompt of a snapshot, all its positions or only the last.
struct LensRequest {
    SnapshotPtr snapshot;
    int row = 0;
    bool lastPosition = false;
    /// A window of the prompt's positions [first, first + count); count < 0: the whole prompt.
    int first = 0, count = -1;
    bool operator==(const LensRequest& o) const {
        return snapshot == o.snapshot && row == o.row && lastPosition == o.lastPosition && first == o.first && count == o.count;
    }
};
/// The lenses of a lens job, one per request, in the requests' order.
using LensResultsPtr = std::shared_ptr<const std::vector<TraceSnapshot::LensPtr>>;

/// What a job computes; each request function below names the type its result holds.
enum class JobKind { Load, Trace, Checks, Patch, Generate, Reread, OpenTrace, Lens, Analysis };

class TraceWorker : public QThread {
    Q_OBJECT
public:
    explicit TraceWorker(QObject* parent = nullptr);
    ~TraceWorker() override;

    /// Queues loading the checkpoint folder `dir` to compute in `dtype` (nullopt: auto) on `device` (its weights copied
    /// there once). Result: ModelPtr, whose results reach the views as CPU tensors (core/run/trace.cpp's taps). Runs to
    /// the end (Cancel does not stop it); a device this build or machine lacks fails it with the engine's sentence.
    quint64 load(const QString& dir, std::optional<torch::ScalarType> dtype, torch::Device device = torch::kCPU);
    /// Queues a trace of `prompts` on `model`, saving `save`. `interventions` (core/run/edit.h's addIntervention syntax,
    /// .npy paths relative to `baseDir`) are parsed in the worker and applied during the pass; with `compare` the
    /// prompts are first traced without them too, and the snapshot carries that run as its `baseline`. A text that
    /// does not parse fails the trace with its message. Progress counts blocks (both passes as one run of 2 x blocks
    /// with `compare`). Result: SnapshotPtr.
    quint64 trace(ModelPtr model, const QStringList& prompts, const std::vector<ValueKey>& save,
                  const QStringList& interventions = {}, bool compare = false, const QString& baseDir = ".");
    /// Queues the logit lens (core/analysis/analysis.h logitLens) of `requests` with `k` tokens per cell: what a view shows,
    /// computed when it is shown. Progress counts the blocks of all of them. Result: LensResultsPtr.
    quint64 lens(std::vector<LensRequest> requests, int k);
    /// How many lens jobs this worker has started (the tests check that a hidden view costs none).
    int lensRuns() const { return lensRuns_; }
    /// Queues the family notes' checks (runFamilyChecks) on `model` and `prompt`. Result: CheckResultsPtr. Runs to
    /// the end (Cancel does not stop it).
    quint64 checks(ModelPtr model, const QString& prompt);
    /// Queues activation patching (activationPatching) of `clean` into `corrupted` (token ids), after attribution
    /// patching's estimate of the same grid. `interventions` (addIntervention's syntax, .npy paths relative to
    /// `baseDir`, parsed in the worker as a trace's are) apply to every run of both; the result lists them. A text that
    /// does not parse fails the job with its message. Progress counts the exact grid's passes. Result: PatchingResultPtr.
    quint64 patch(ModelPtr model, std::vector<int64_t> clean, std::vector<int64_t> corrupted, PatchingOptions options,
                  const QStringList& interventions = {}, const QString& baseDir = ".");
    /// Queues generation (core/run/generate.h) after `prompt` (token ids) with `options`; with `interventions` (parsed in
    /// the worker, addIntervention syntax) it generates with them and without them, both with the same seed. Cancel
    /// stops it between tokens. Result: GenerationPairPtr.
    quint64 generate(ModelPtr model, std::vector<int64_t> prompt, GenerateOptions options, const QStringList& interventions,
                     const QString& baseDir = ".");
    /// Queues reading `keys` again from the inputs of `base`: a pass over its batch with its interventions (.npy paths
    /// relative to `baseDir`) that saves only `keys`. Result: SnapshotPtr, `base` with them added (withValues).
    quint64 reread(SnapshotPtr base, const std::vector<ValueKey>& keys, const QString& baseDir = ".");
    /// Queues reading the trace file `path` (core/io/tracefile.h) into a snapshot (makeFileSnapshot). Result:
    /// SnapshotPtr.
    quint64 openTrace(const QString& path);
    /// Queues a view's computation (AnalysisRequest::compute): it runs in this thread with the job's JobControl, and
    /// what it returns is the result.
    quint64 analyse(std::function<QVariant(const JobControl&)> compute);
    /// Stops the running job within one block and drops the queued ones (each says jobCancelled), except loads and
    /// checks, which run to the end.
    void cancel();
    /// Stops job `id` (running: within one block; queued: dropped, and jobCancelled says so at once). Loads and
    /// checks run to the end.
    void cancel(quint64 id);
    /// libtorch's CPU threads for the passes this worker runs (0: every core). Applied in the worker thread, since
    /// the OpenMP thread count is per thread.
    void setThreads(int threads) { threads_ = threads; }
    /// Waits `ms` milliseconds after each step a job reports (a block) but its last: lets the tests and demos watch
    /// progress and Cancel on a tiny model.
    void setBlockDelay(int ms) { blockDelayMs_ = ms; }

signals:
    /// Job `id` left the queue: the worker computes it now.
    void jobStarted(quint64 id, nnscope::JobKind kind);
    /// `done` of `total` steps (blocks, passes) of job `id` are computed.
    void jobProgress(quint64 id, int done, int total);
    /// Job `id` is done: `result` holds the type its request names.
    void jobFinished(quint64 id, const QVariant& result);
    /// Job `id` could not be computed: `message` says why (the engine's sentence).
    void jobFailed(quint64 id, const QString& message);
    /// Job `id` was stopped by Cancel, or dropped from the queue before it ran.
    void jobCancelled(quint64 id);

protected:
    void run() override;

private:
    /// One queued request: its kind, its id and cancel flag, and the computation, which holds its own inputs.
    struct Job {
        JobKind kind = JobKind::Analysis;
        quint64 id = 0;
        bool cancellable = true;  ///< loads and checks run to the end
        std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
        std::function<QVariant(const JobControl&)> compute;
    };
    quint64 enqueue(JobKind kind, std::function<QVariant(const JobControl&)> compute, bool cancellable = true);
    void runJob(const Job& job);

    QMutex mutex_;
    QWaitCondition condition_;
    std::deque<Job> jobs_;
    quint64 nextId_ = 1;
    bool abort_ = false;
    quint64 runningId_ = 0;                             ///< the job running now (0: none); under mutex_
    std::shared_ptr<std::atomic<bool>> runningCancel_;  ///< its cancel flag; under mutex_
    bool runningCancellable_ = true;                    ///< whether Cancel stops it (not a load or the checks); under mutex_
    std::atomic<int> lensRuns_{0};
    std::atomic<int> blockDelayMs_{0};
    std::atomic<int> threads_{0};
    int appliedThreads_ = -1;  ///< worker thread only
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::CheckResultsPtr)
Q_DECLARE_METATYPE(nnscope::PatchingResultPtr)
Q_DECLARE_METATYPE(nnscope::LensResultsPtr)
Q_DECLARE_METATYPE(nnscope::JobKind)
