// SPDX-License-Identifier: MIT
#pragma once
// The worker thread that loads checkpoints and runs traces, so the window never waits on the model (the
// mandelbrot example's RenderThread pattern). Requests are queued under a mutex; the thread sleeps on a wait
// condition when idle. Each job has its own cancel flag: Cancel stops a running trace (or logit lens) within one
// block (the engine checks the flag between blocks), and a job queued after it is not cancelled by it. Results
// leave by value through queued signals: a shared, immutable TraceSnapshot. The destructor cancels, wakes the
// thread and waits for it.
#include "core/run/edit.h"
#include "core/run/generate.h"
#include "core/run/patching.h"
#include "widgets/familyview.h"
#include "widgets/generateview.h"
#include "widgets/tracesnapshot.h"

#include <QMutex>
#include <QStringList>
#include <QThread>
#include <QWaitCondition>

#include <atomic>
#include <optional>
#include <deque>

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

class TraceWorker : public QThread {
    Q_OBJECT
public:
    explicit TraceWorker(QObject* parent = nullptr);
    ~TraceWorker() override;

    /// Queues loading the checkpoint folder `dir`. Returns the request's id.
    quint64 load(const QString& dir, std::optional<torch::ScalarType> dtype);
    /// Queues a trace of `prompts` on `model`, saving `save`. `interventions` (core/run/edit.h's addIntervention syntax,
    /// .npy paths relative to `baseDir`) are parsed in the worker and applied during the pass; with `compare` the
    /// prompts are first traced without them too, and the snapshot carries that run as its `baseline`. A text that
    /// does not parse fails the trace with its message. Returns the request's id.
    quint64 trace(ModelPtr model, const QStringList& prompts, const std::vector<ValueKey>& save,
                  const QStringList& interventions = {}, bool compare = false, const QString& baseDir = ".");
    /// Queues the logit lens (core/analysis/analysis.h logitLens) of `requests` with `k` tokens per cell: what a view shows,
    /// computed when it is shown. lensProgress counts the blocks of all of them; Cancel stops it within a block.
    quint64 lens(std::vector<LensRequest> requests, int k);
    /// How many lens jobs this worker has started (the tests check that a hidden view costs none).
    int lensRuns() const { return lensRuns_; }
    /// Queues the family notes' checks (runFamilyChecks) on `model` and `prompt`. Returns the request's id.
    quint64 checks(ModelPtr model, const QString& prompt);
    /// Queues activation patching (activationPatching) of `clean` into `corrupted` (token ids). Cancel stops it.
    quint64 patch(ModelPtr model, std::vector<int64_t> clean, std::vector<int64_t> corrupted, PatchingOptions options);
    /// Queues generation (core/run/generate.h) after `prompt` (token ids) with `options`; with `interventions` (parsed in
    /// the worker, addIntervention syntax) it generates with them and without them, both with the same seed. Cancel
    /// stops it between tokens.
    quint64 generate(ModelPtr model, std::vector<int64_t> prompt, GenerateOptions options, const QStringList& interventions,
                     const QString& baseDir = ".");
    /// Queues reading `keys` again from the inputs of `base`: a pass over its batch with its interventions (.npy paths
    /// relative to `baseDir`) that saves only `keys`; valuesRead hands back `base` with them added (withValues).
    quint64 reread(SnapshotPtr base, const std::vector<ValueKey>& keys, const QString& baseDir = ".");
    /// Queues reading the trace file `path` (core/io/tracefile.h) into a snapshot (makeFileSnapshot).
    quint64 openTrace(const QString& path);
    /// Stops the running trace, lens, patching or generation within one block and drops queued ones.
    void cancel();
    /// Stops job `id` (running: within one block; queued: dropped, with its cancelled or failed signal). Loads and
    /// checks run to the end.
    void cancel(quint64 id);
    /// libtorch's CPU threads for the passes this worker runs (0: every core). Applied in the worker thread, since
    /// the OpenMP thread count is per thread.
    void setThreads(int threads) { threads_ = threads; }
    /// Waits `ms` milliseconds before each block: lets the tests and demos watch progress and Cancel on a tiny model.
    void setBlockDelay(int ms) { blockDelayMs_ = ms; }

signals:
    void modelLoaded(quint64 id, nnscope::ModelPtr model);
    void loadFailed(quint64 id, const QString& dir, const QString& message);
    void traceStarted(quint64 id, int blocks);
    void progress(quint64 id, int done, int total);
    void traceFinished(quint64 id, nnscope::SnapshotPtr snapshot);
    void traceCancelled(quint64 id, int done, int total);
    void traceFailed(quint64 id, const QString& message);
    void checksFinished(quint64 id, nnscope::CheckResultsPtr results);
    void checksFailed(quint64 id, const QString& message);
    void patchProgress(quint64 id, int done, int total);
    void patchFinished(quint64 id, nnscope::PatchingResultPtr result);
    void patchFailed(quint64 id, const QString& message);  ///< also on cancel ("cancelled")
    void generateFinished(quint64 id, nnscope::GenerationPairPtr result);
    void generateFailed(quint64 id, const QString& message);  ///< also on cancel ("cancelled")
    void valuesRead(quint64 id, nnscope::SnapshotPtr snapshot);
    void valuesReadFailed(quint64 id, const QString& message);  ///< also on cancel ("cancelled")
    void traceFileOpened(quint64 id, nnscope::SnapshotPtr snapshot);
    void traceFileFailed(quint64 id, const QString& path, const QString& message);
    void lensProgress(quint64 id, int done, int total);
    void lensFinished(quint64 id, nnscope::LensResultsPtr lenses);
    void lensCancelled(quint64 id);
    void lensFailed(quint64 id, const QString& message);

protected:
    void run() override;

private:
    struct Job {
        enum Kind { Load, Trace, Checks, Patch, Generate, Reread, OpenTrace, Lens } kind = Load;
        quint64 id = 0;
        std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
        QString dir;
        std::optional<torch::ScalarType> dtype;  ///< nullopt: auto (LoadOptions::dtype)
        ModelPtr model;
        QStringList prompts;
        std::vector<ValueKey> save;
        int lensTopK = 5;
        std::vector<LensRequest> lenses;
        QStringList interventions;
        bool compare = false;
        QString baseDir;
        std::vector<int64_t> clean, corrupted;
        PatchingOptions patching;
        GenerateOptions generation;
        SnapshotPtr base;  ///< Reread: the snapshot whose inputs are traced again
    };
    quint64 enqueue(Job job);
    void runLoad(const Job& job);
    void runTrace(const Job& job);
    void runChecks(const Job& job);
    void runPatch(const Job& job);
    void runGenerate(const Job& job);
    void runReread(const Job& job);
    void runOpenTrace(const Job& job);
    void runLens(const Job& job);
    /// Emits the signal that says job `job` was cancelled before it ran.
    void emitDropped(const Job& job);

    QMutex mutex_;
    QWaitCondition condition_;
    std::deque<Job> jobs_;
    quint64 nextId_ = 1;
    bool abort_ = false;
    quint64 runningId_ = 0;                          ///< the job running now (0: none); under mutex_
    std::shared_ptr<std::atomic<bool>> runningCancel_;  ///< its cancel flag; under mutex_
    std::atomic<int> lensRuns_{0};
    std::atomic<int> blockDelayMs_{0};
    std::atomic<int> threads_{0};
    int appliedThreads_ = -1;  ///< worker thread only
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::CheckResultsPtr)
Q_DECLARE_METATYPE(nnscope::PatchingResultPtr)
Q_DECLARE_METATYPE(nnscope::LensResultsPtr)
