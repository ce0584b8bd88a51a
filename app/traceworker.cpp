// SPDX-License-Identifier: MIT
#include "traceworker.h"

#include "guardedapplication.h"

#include "core/model/error.h"
#include "core/model/taps.h"
#include "core/io/tracefile.h"


namespace nnscope {

namespace {

/// The interventions' texts parsed into one edit list for `model` (nullptr when there are none).
std::shared_ptr<EditList> parseInterventions(const Model& model, const QStringList& texts, const QString& baseDir) {
    if (texts.isEmpty()) return nullptr;
    auto edits = std::make_shared<EditList>();
    for (const QString& text : texts) addIntervention(*edits, model, text.toStdString(), baseDir.toStdString());
    return edits;
}
}  // namespace

TraceWorker::TraceWorker(QObject* parent) : QThread(parent) {
    qRegisterMetaType<nnscope::ModelPtr>();
    qRegisterMetaType<nnscope::SnapshotPtr>();
    qRegisterMetaType<nnscope::CheckResultsPtr>();
    qRegisterMetaType<nnscope::PatchingResultPtr>();
    qRegisterMetaType<nnscope::GenerationPairPtr>();
    qRegisterMetaType<nnscope::LensResultsPtr>();
    qRegisterMetaType<nnscope::JobKind>();
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

quint64 TraceWorker::enqueue(JobKind kind, std::function<QVariant(const JobControl&)> compute, bool cancellable) {
    QMutexLocker lock(&mutex_);
    Job job;
    job.kind = kind;
    job.id = nextId_++;
    job.cancellable = cancellable;
    job.compute = std::move(compute);
    jobs_.push_back(std::move(job));
    if (!isRunning())
        start(LowPriority);
    else
        condition_.wakeOne();
    return jobs_.back().id;
}

quint64 TraceWorker::load(const QString& dir, std::optional<torch::ScalarType> dtype, torch::Device device) {
    return enqueue(JobKind::Load, [dir, dtype, device](const JobControl&) {
        return QVariant::fromValue(ModelPtr(Model::load(dir.toStdString(), LoadOptions().withDtype(dtype).withDevice(device))));
    }, /*cancellable=*/false);
}

quint64 TraceWorker::trace(ModelPtr model, const QStringList& prompts, const std::vector<ValueKey>& save,
                           const QStringList& interventions, bool compare, const QString& baseDir) {
    return enqueue(JobKind::Trace, [model, prompts, save, interventions, compare, baseDir](const JobControl& control) {
        const int blocks = static_cast<int>(model->config().numLayers);
        std::vector<std::string> texts;
        for (const QString& p : prompts) texts.push_back(p.toStdString());
        const Batch batch = encodeBatch(*model, texts);
        const std::shared_ptr<EditList> edits = parseInterventions(*model, interventions, baseDir);
        // With a comparison the unedited pass runs first; progress counts both passes as one run of 2 x blocks.
        const bool twoPasses = edits && compare;
        const int total = twoPasses ? 2 * blocks : blocks;
        auto pass = [&](std::shared_ptr<const Intervention> intervention, int offset) {
            TraceOptions options;
            options.save = save;
            options.cancel = control.cancelFlag();
            options.intervention = std::move(intervention);
            options.progress = control.progressFrom(offset, total);
            TraceResult result = nnscope::trace(*model, batch, options);
            control.throwIfCancelled();  // cancelled after the last block: still a cancel, nothing is shown
            return result;
        };
        // The snapshot's serial is the job's id (unique per worker), as it always was.
        const quint64 serial = control.id();
        SnapshotPtr baseline;
        if (twoPasses) baseline = makeSnapshot(model, pass(nullptr, 0), serial);
        TraceResult result = pass(edits, twoPasses ? blocks : 0);
        return QVariant::fromValue(makeSnapshot(model, std::move(result), serial, interventions, std::move(baseline)));
    });
}

quint64 TraceWorker::lens(std::vector<LensRequest> requests, int k) {
    return enqueue(JobKind::Lens, [this, requests = std::move(requests), k](const JobControl& control) {
        ++lensRuns_;
        int total = 0;
        for (const LensRequest& r : requests) total += r.snapshot->numLayers();
        control.progress(0, total);
        auto lenses = std::make_shared<std::vector<TraceSnapshot::LensPtr>>();
        int offset = 0;
        for (const LensRequest& r : requests) {
            LensOptions options;
            options.rows = {r.row};
            options.lastPositionOnly = r.lastPosition;
            if (r.count >= 0) {
                options.firstPosition = r.first;
                options.numPositions = r.count;
            }
            options.cancel = control.cancelFlag();
            options.progress = control.progressFrom(offset, total);
            lenses->push_back(std::make_shared<const LogitLens>(logitLens(*r.snapshot->model, r.snapshot->result, k, options)));
            offset += r.snapshot->numLayers();
        }
        control.throwIfCancelled();
        return QVariant::fromValue(LensResultsPtr(std::move(lenses)));
    });
}

quint64 TraceWorker::checks(ModelPtr model, const QString& prompt) {
    return enqueue(JobKind::Checks, [model, prompt](const JobControl&) {
        return QVariant::fromValue(CheckResultsPtr(std::make_shared<const std::vector<CheckResult>>(runFamilyChecks(*model, prompt.toStdString()))));
    }, /*cancellable=*/false);
}

quint64 TraceWorker::patch(ModelPtr model, std::vector<int64_t> clean, std::vector<int64_t> corrupted, PatchingOptions options,
                           const QStringList& interventions, const QString& baseDir) {
    return enqueue(JobKind::Patch, [model, clean = std::move(clean), corrupted = std::move(corrupted), options = std::move(options),
                                    interventions, baseDir](const JobControl& control) {
        PatchingOptions exactOptions = options;
        exactOptions.intervention = parseInterventions(*model, interventions, baseDir);
        exactOptions.interventionTexts.clear();
        for (const QString& text : interventions) exactOptions.interventionTexts.push_back(text.toStdString());
        exactOptions.cancel = control.cancelFlag();
        exactOptions.progress = [&control](int done, int total) { control.progress(done, total); };
        // attribution patching first (one backward pass), then the exact grid, which the progress bar counts
        PatchingOptions quiet = exactOptions;
        quiet.progress = nullptr;
        std::vector<std::vector<double>> estimate = attributionPatching(*model, clean, corrupted, quiet).grid;
        PatchingResult exact = activationPatching(*model, clean, corrupted, exactOptions);
        exact.estimate = std::move(estimate);
        control.throwIfCancelled();
        return QVariant::fromValue(PatchingResultPtr(std::make_shared<const PatchingResult>(std::move(exact))));
    });
}

quint64 TraceWorker::generate(ModelPtr model, std::vector<int64_t> prompt, GenerateOptions options, const QStringList& interventions,
                              const QString& baseDir) {
    return enqueue(JobKind::Generate, [model, prompt = std::move(prompt), options = std::move(options), interventions,
                                       baseDir](const JobControl& control) {
        auto pair = std::make_shared<GenerationPair>();
        pair->options = options;
        pair->options.cancel = control.cancelFlag();
        pair->interventions = interventions;
        GenerateOptions plain = pair->options;
        pair->options.intervention = parseInterventions(*model, interventions, baseDir);
        pair->edited = nnscope::generate(*model, prompt, pair->options);
        if (pair->options.intervention) pair->unedited = nnscope::generate(*model, prompt, plain);
        pair->options.cancel = nullptr;
        control.throwIfCancelled();
        return QVariant::fromValue(GenerationPairPtr(std::move(pair)));
    });
}

quint64 TraceWorker::reread(SnapshotPtr base, const std::vector<ValueKey>& keys, const QString& baseDir) {
    return enqueue(JobKind::Reread, [base = std::move(base), keys, baseDir](const JobControl& control) {
        const Model& model = *base->model;
        TraceOptions options;
        options.save = keys;
        options.cancel = control.cancelFlag();
        // the same pass as the snapshot's: its interventions, as it ran them
        options.intervention = parseInterventions(model, base->interventions, baseDir);
        TraceResult result = nnscope::trace(model, base->result.batch, options);
        control.throwIfCancelled();
        return QVariant::fromValue(SnapshotPtr(withValues(*base, result.values)));
    });
}

quint64 TraceWorker::openTrace(const QString& path) {
    return enqueue(JobKind::OpenTrace, [path](const JobControl& control) {
        const TraceFile file = readTraceFile(path.toStdString());
        return QVariant::fromValue(makeFileSnapshot(file, control.id()));
    });
}

quint64 TraceWorker::analyse(std::function<QVariant(const JobControl&)> compute) {
    return enqueue(JobKind::Analysis, std::move(compute));
}

void TraceWorker::cancel() {
    std::vector<quint64> dropped;
    {
        QMutexLocker lock(&mutex_);
        for (auto it = jobs_.begin(); it != jobs_.end();) {
            if (it->cancellable) {  // loads and checks run to the end
                dropped.push_back(it->id);
                it = jobs_.erase(it);
            } else {
                ++it;
            }
        }
        if (runningCancel_ && runningCancellable_) *runningCancel_ = true;
    }
    for (quint64 id : dropped) emit jobCancelled(id);  // outside the lock: slots may queue more
}

void TraceWorker::cancel(quint64 id) {
    bool dropped = false;
    {
        QMutexLocker lock(&mutex_);
        if (id == runningId_ && runningCancel_ && runningCancellable_) *runningCancel_ = true;
        for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
            if (it->id == id && it->cancellable) {
                jobs_.erase(it);
                dropped = true;
                break;
            }
    }
    if (dropped) emit jobCancelled(id);
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
            runningCancellable_ = job.cancellable;
        }
        if (const int t = threads_.load(); t != appliedThreads_) {
            configureThreads(t);
            appliedThreads_ = t;
        }
        runJob(job);
        QMutexLocker lock(&mutex_);
        runningId_ = 0;
        runningCancel_.reset();
    }
}

void TraceWorker::runJob(const Job& job) {
    emit jobStarted(job.id, job.kind);
    const JobControl control(job.id, job.cancel.get(), [this, id = job.id](int done, int total) {
        emit jobProgress(id, done, total);
        if (const int ms = blockDelayMs_.load(); ms > 0 && done > 0 && done < total) QThread::msleep(static_cast<unsigned long>(ms));
    });
    try {
        // a job cancelled while it was being taken from the queue does not start
        control.throwIfCancelled();
        QVariant result = job.compute(control);
        emit jobFinished(job.id, result);
    } catch (const Cancelled&) {
        emit jobCancelled(job.id);
    } catch (...) {  // whatever it is: the job failed, and the thread goes on to the next
        emit jobFailed(job.id, currentExceptionMessage());
    }
}

}  // namespace nnscope
