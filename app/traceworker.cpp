// SPDX-License-Identifier: MIT
#include "traceworker.h"

#include "core/model/error.h"
#include "core/model/taps.h"
#include "core/io/tracefile.h"

#include <c10/util/Exception.h>

namespace nnscope {

TraceWorker::TraceWorker(QObject* parent) : QThread(parent) {
    qRegisterMetaType<nnscope::ModelPtr>();
    qRegisterMetaType<nnscope::SnapshotPtr>();
    qRegisterMetaType<nnscope::CheckResultsPtr>();
    qRegisterMetaType<nnscope::PatchingResultPtr>();
    qRegisterMetaType<nnscope::GenerationPairPtr>();
    qRegisterMetaType<nnscope::LensResultsPtr>();
}

TraceWorker::~TraceWorker() {
    {
        QMutexLocker lock(&mutex_);
        abort_ = true;
        if (runningCancel_) *runningCancel_ = true;
        jobs_.clear();
        condition_.wakeOne();
    }
    wait();
}

quint64 TraceWorker::enqueue(Job job) {
    QMutexLocker lock(&mutex_);
    job.id = nextId_++;
    jobs_.push_back(std::move(job));
    if (!isRunning())
        start(LowPriority);
    else
        condition_.wakeOne();
    return jobs_.back().id;
}

quint64 TraceWorker::load(const QString& dir, std::optional<torch::ScalarType> dtype) {
    Job job;
    job.kind = Job::Load;
    job.dir = dir;
    job.dtype = dtype;
    return enqueue(std::move(job));
}

quint64 TraceWorker::trace(ModelPtr model, const QStringList& prompts, const std::vector<ValueKey>& save,
                           const QStringList& interventions, bool compare, const QString& baseDir) {
    Job job;
    job.kind = Job::Trace;
    job.model = std::move(model);
    job.prompts = prompts;
    job.save = save;
    job.interventions = interventions;
    job.compare = compare;
    job.baseDir = baseDir;
    return enqueue(std::move(job));
}

quint64 TraceWorker::lens(std::vector<LensRequest> requests, int k) {
    Job job;
    job.kind = Job::Lens;
    job.lenses = std::move(requests);
    job.lensTopK = k;
    return enqueue(std::move(job));
}

quint64 TraceWorker::checks(ModelPtr model, const QString& prompt) {
    Job job;
    job.kind = Job::Checks;
    job.model = std::move(model);
    job.prompts = {prompt};
    return enqueue(std::move(job));
}

quint64 TraceWorker::patch(ModelPtr model, std::vector<int64_t> clean, std::vector<int64_t> corrupted, PatchingOptions options) {
    Job job;
    job.kind = Job::Patch;
    job.model = std::move(model);
    job.clean = std::move(clean);
    job.corrupted = std::move(corrupted);
    job.patching = std::move(options);
    return enqueue(std::move(job));
}

quint64 TraceWorker::generate(ModelPtr model, std::vector<int64_t> prompt, GenerateOptions options, const QStringList& interventions,
                              const QString& baseDir) {
    Job job;
    job.kind = Job::Generate;
    job.model = std::move(model);
    job.clean = std::move(prompt);
    job.generation = std::move(options);
    job.interventions = interventions;
    job.baseDir = baseDir;
    return enqueue(std::move(job));
}

quint64 TraceWorker::reread(SnapshotPtr base, const std::vector<ValueKey>& keys, const QString& baseDir) {
    Job job;
    job.kind = Job::Reread;
    job.model = base->model;
    job.base = std::move(base);
    job.save = keys;
    job.baseDir = baseDir;
    return enqueue(std::move(job));
}

quint64 TraceWorker::openTrace(const QString& path) {
    Job job;
    job.kind = Job::OpenTrace;
    job.dir = path;
    return enqueue(std::move(job));
}

void TraceWorker::emitDropped(const Job& job) {
    switch (job.kind) {
    case Job::Trace: emit traceCancelled(job.id, 0, static_cast<int>(job.model->config().numLayers)); break;
    case Job::Patch: emit patchFailed(job.id, tr("cancelled")); break;
    case Job::Generate: emit generateFailed(job.id, tr("cancelled")); break;
    case Job::Lens: emit lensCancelled(job.id); break;
    case Job::Reread: emit valuesReadFailed(job.id, tr("cancelled")); break;
    case Job::OpenTrace: emit traceFileFailed(job.id, job.dir, tr("cancelled")); break;
    default: break;
    }
}

void TraceWorker::cancel() {
    std::vector<Job> dropped;
    {
        QMutexLocker lock(&mutex_);
        for (auto it = jobs_.begin(); it != jobs_.end();) {
            if (it->kind != Job::Load && it->kind != Job::Checks) {  // loads and checks run to the end
                dropped.push_back(std::move(*it));
                it = jobs_.erase(it);
            } else {
                ++it;
            }
        }
        if (runningCancel_) *runningCancel_ = true;
    }
    for (const Job& job : dropped) emitDropped(job);  // outside the lock: slots may queue more
}

void TraceWorker::cancel(quint64 id) {
    std::optional<Job> dropped;
    {
        QMutexLocker lock(&mutex_);
        if (id == runningId_ && runningCancel_) *runningCancel_ = true;
        for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
            if (it->id == id && it->kind != Job::Load && it->kind != Job::Checks) {
                dropped = std::move(*it);
                jobs_.erase(it);
                break;
            }
    }
    if (dropped) emitDropped(*dropped);
}

void TraceWorker::run() {
    forever {
        Job job;
        {
            QMutexLocker lock(&mutex_);
            while (jobs_.empty() && !abort_) condition_.wait(&mutex_);
            if (abort_) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
            runningId_ = job.id;
            runningCancel_ = job.cancel;
        }
        if (const int t = threads_.load(); t != appliedThreads_) {
            configureThreads(t);
            appliedThreads_ = t;
        }
        switch (job.kind) {
        case Job::Load: runLoad(job); break;
        case Job::Trace: runTrace(job); break;
        case Job::Checks: runChecks(job); break;
        case Job::Patch: runPatch(job); break;
        case Job::Generate: runGenerate(job); break;
        case Job::Reread: runReread(job); break;
        case Job::OpenTrace: runOpenTrace(job); break;
        case Job::Lens: runLens(job); break;
        }
        QMutexLocker lock(&mutex_);
        runningId_ = 0;
        runningCancel_.reset();
    }
}

namespace {
// The message of any exception the engine or libtorch may throw, as a sentence for the window.
QString messageOf(const std::exception& e) {
    if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return QString::fromStdString(c->what_without_backtrace());
    return QString::fromStdString(e.what());
}
}  // namespace

void TraceWorker::runLoad(const Job& job) {
    try {
        ModelPtr model = Model::load(job.dir.toStdString(), LoadOptions().withDtype(job.dtype));
        emit modelLoaded(job.id, std::move(model));
    } catch (const std::exception& e) {
        emit loadFailed(job.id, job.dir, messageOf(e));
    }
}

void TraceWorker::runTrace(const Job& job) {
    const int blocks = static_cast<int>(job.model->config().numLayers);
    emit traceStarted(job.id, blocks);
    std::atomic<int> done{0};
    int total = blocks;
    try {
        std::vector<std::string> prompts;
        for (const QString& p : job.prompts) prompts.push_back(p.toStdString());
        const Batch batch = encodeBatch(*job.model, prompts);
        std::shared_ptr<EditList> edits;
        if (!job.interventions.isEmpty()) {
            edits = std::make_shared<EditList>();
            for (const QString& text : job.interventions) addIntervention(*edits, *job.model, text.toStdString(), job.baseDir.toStdString());
        }
        // With a comparison the unedited pass runs first; progress counts both passes as one run of 2 x blocks.
        const bool twoPasses = edits && job.compare;
        total = twoPasses ? 2 * blocks : blocks;
        auto pass = [&](std::shared_ptr<const Intervention> intervention, int offset) {
            TraceOptions options;
            options.save = job.save;
            options.cancel = job.cancel.get();
            options.intervention = std::move(intervention);
            options.progress = [&, offset](int d, int) {
                done = offset + d;
                emit progress(job.id, offset + d, total);
                if (const int ms = blockDelayMs_.load(); ms > 0 && offset + d < total) QThread::msleep(static_cast<unsigned long>(ms));
            };
            TraceResult result = nnscope::trace(*job.model, batch, options);
            if (*job.cancel) throw Cancelled{};  // cancelled after the last block: still a cancel, nothing is shown
            return result;
        };
        SnapshotPtr baseline;
        if (twoPasses) baseline = makeSnapshot(job.model, pass(nullptr, 0), job.id);
        TraceResult result = pass(edits, twoPasses ? blocks : 0);
        emit traceFinished(job.id, makeSnapshot(job.model, std::move(result), job.id, job.interventions, std::move(baseline)));
    } catch (const Cancelled&) {
        emit traceCancelled(job.id, done, total);
    } catch (const std::exception& e) {
        emit traceFailed(job.id, messageOf(e));
    }
}

void TraceWorker::runReread(const Job& job) {
    try {
        const TraceSnapshot& base = *job.base;
        TraceOptions options;
        options.save = job.save;
        options.cancel = job.cancel.get();
        if (!base.interventions.isEmpty()) {  // the same pass as the snapshot's: its interventions, as it ran them
            auto edits = std::make_shared<EditList>();
            for (const QString& text : base.interventions) addIntervention(*edits, *job.model, text.toStdString(), job.baseDir.toStdString());
            options.intervention = edits;
        }
        TraceResult result = nnscope::trace(*job.model, base.result.batch, options);
        if (*job.cancel) throw Cancelled{};
        emit valuesRead(job.id, withValues(base, result.values));
    } catch (const Cancelled&) {
        emit valuesReadFailed(job.id, tr("cancelled"));
    } catch (const std::exception& e) {
        emit valuesReadFailed(job.id, messageOf(e));
    }
}

void TraceWorker::runOpenTrace(const Job& job) {
    try {
        const TraceFile file = readTraceFile(job.dir.toStdString());
        emit traceFileOpened(job.id, makeFileSnapshot(file, job.id));
    } catch (const std::exception& e) {
        emit traceFileFailed(job.id, job.dir, messageOf(e));
    }
}

void TraceWorker::runChecks(const Job& job) {
    try {
        auto results = std::make_shared<const std::vector<CheckResult>>(runFamilyChecks(*job.model, job.prompts.value(0).toStdString()));
        emit checksFinished(job.id, std::move(results));
    } catch (const std::exception& e) {
        emit checksFailed(job.id, messageOf(e));
    }
}

void TraceWorker::runPatch(const Job& job) {
    try {
        PatchingOptions options = job.patching;
        options.cancel = job.cancel.get();
        options.progress = [&](int done, int total) { emit patchProgress(job.id, done, total); };
        // attribution patching first (one backward pass), then the exact grid, which the progress bar counts
        PatchingOptions quiet = options;
        quiet.progress = nullptr;
        std::vector<std::vector<double>> estimate = attributionPatching(*job.model, job.clean, job.corrupted, quiet).grid;
        PatchingResult exact = activationPatching(*job.model, job.clean, job.corrupted, options);
        exact.estimate = std::move(estimate);
        auto result = std::make_shared<const PatchingResult>(std::move(exact));
        if (*job.cancel) throw Cancelled{};
        emit patchFinished(job.id, std::move(result));
    } catch (const Cancelled&) {
        emit patchFailed(job.id, tr("cancelled"));
    } catch (const std::exception& e) {
        emit patchFailed(job.id, messageOf(e));
    }
}

void TraceWorker::runGenerate(const Job& job) {
    try {
        auto pair = std::make_shared<GenerationPair>();
        pair->options = job.generation;
        pair->options.cancel = job.cancel.get();
        pair->interventions = job.interventions;
        GenerateOptions plain = pair->options;
        if (!job.interventions.isEmpty()) {
            auto edits = std::make_shared<EditList>();
            for (const QString& text : job.interventions) addIntervention(*edits, *job.model, text.toStdString(), job.baseDir.toStdString());
            pair->options.intervention = edits;
        }
        pair->edited = nnscope::generate(*job.model, job.clean, pair->options);
        if (pair->options.intervention) pair->unedited = nnscope::generate(*job.model, job.clean, plain);
        pair->options.cancel = nullptr;
        if (*job.cancel) throw Cancelled{};
        emit generateFinished(job.id, std::move(pair));
    } catch (const Cancelled&) {
        emit generateFailed(job.id, tr("cancelled"));
    } catch (const std::exception& e) {
        emit generateFailed(job.id, messageOf(e));
    }
}

void TraceWorker::runLens(const Job& job) {
    ++lensRuns_;
    try {
        int total = 0;
        for (const LensRequest& r : job.lenses) total += r.snapshot->numLayers();
        emit lensProgress(job.id, 0, total);
        auto lenses = std::make_shared<std::vector<TraceSnapshot::LensPtr>>();
        int offset = 0;
        for (const LensRequest& r : job.lenses) {
            LensOptions options;
            options.rows = {r.row};
            options.lastPositionOnly = r.lastPosition;
            if (r.count >= 0) {
                options.firstPosition = r.first;
                options.numPositions = r.count;
            }
            options.cancel = job.cancel.get();
            options.progress = [&, offset](int done, int) {
                emit lensProgress(job.id, offset + done, total);
                if (const int ms = blockDelayMs_.load(); ms > 0 && offset + done < total) QThread::msleep(static_cast<unsigned long>(ms));
            };
            lenses->push_back(std::make_shared<const LogitLens>(logitLens(*r.snapshot->model, r.snapshot->result, job.lensTopK, options)));
            offset += r.snapshot->numLayers();
        }
        if (*job.cancel) throw Cancelled{};
        emit lensFinished(job.id, std::move(lenses));
    } catch (const Cancelled&) {
        emit lensCancelled(job.id);
    } catch (const std::exception& e) {
        emit lensFailed(job.id, messageOf(e));
    }
}

}  // namespace nnscope
