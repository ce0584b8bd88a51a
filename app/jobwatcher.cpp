// SPDX-License-Identifier: MIT
#include "jobwatcher.h"

#include "guardedapplication.h"

namespace nnscope {

JobWatcher::JobWatcher(TraceWorker* worker, const QString& name, QObject* parent) : QObject(parent), worker_(worker), name_(name) {
    qRegisterMetaType<nnscope::JobState>();
    connect(worker_, &TraceWorker::jobStarted, this, [this](quint64 id, JobKind) { onJobStarted(id); });
    connect(worker_, &TraceWorker::jobProgress, this, &JobWatcher::onJobProgress);
    connect(worker_, &TraceWorker::jobFinished, this, &JobWatcher::onJobFinished);
    connect(worker_, &TraceWorker::jobFailed, this, &JobWatcher::onJobFailed);
    connect(worker_, &TraceWorker::jobCancelled, this, &JobWatcher::onJobCancelled);
}

void JobWatcher::watch(quint64 id) {
    id_ = id;
    state_ = id ? JobState::Queued : JobState::Idle;
    done_ = total_ = 0;
}

void JobWatcher::forget() { watch(0); }

void JobWatcher::cancel() {
    if (isActive()) worker_->cancel(id_);  // a queued job's cancelled signal comes back at once, through onJobCancelled
}

void JobWatcher::cancelQuietly() {
    if (!isActive()) return;
    // forgotten first: cancelling a queued job emits its cancelled signal at once, which must find nothing watched
    const quint64 id = std::exchange(id_, 0);
    state_ = JobState::Idle;
    worker_->cancel(id);
}

void JobWatcher::onJobStarted(quint64 id) {
    if (!mine(id)) return;
    state_ = JobState::Running;
    relay("started", [this] { emit started(); });
}

void JobWatcher::onJobProgress(quint64 id, int done, int total) {
    if (!mine(id)) return;
    done_ = done;
    total_ = total;
    relay("progressed", [this, done, total] { emit progressed(done, total); });
}

void JobWatcher::onJobFinished(quint64 id, const QVariant& result) {
    if (!mine(id)) return;
    end(JobState::Finished);
    QString error;
    try {
        emit finished(result);  // its slots may watch a new job at once: ended says how this one ended
    } catch (...) {
        error = currentExceptionMessage();
    }
    if (error.isEmpty()) return relay("ended", [this] { emit ended(JobState::Finished); });
    // Showing the result threw (a label the model's tokenizer could not make, ...): the job failed, and says why.
    GuardedApplication::report(QString("showing the result of the %1 job").arg(name_), error);
    state_ = JobState::Failed;
    relay("failed", [this, &error] { emit failed(tr("showing the result failed: %1").arg(error)); });
    relay("ended", [this] { emit ended(JobState::Failed); });
}

void JobWatcher::onJobFailed(quint64 id, const QString& message) {
    if (!mine(id)) return;
    end(JobState::Failed);
    relay("failed", [this, &message] { emit failed(message); });
    relay("ended", [this] { emit ended(JobState::Failed); });
}

void JobWatcher::onJobCancelled(quint64 id) {
    if (!mine(id)) return;
    end(JobState::Cancelled);
    relay("cancelled", [this] { emit cancelled(); });
    relay("ended", [this] { emit ended(JobState::Cancelled); });
}

void JobWatcher::relay(const char* signal, const std::function<void()>& emitIt) {
    try {
        emitIt();
    } catch (...) {
        GuardedApplication::report(QString("relaying the %1 job's %2 signal").arg(name_, signal), currentExceptionMessage());
    }
}

void JobWatcher::end(JobState state) {
    id_ = 0;
    state_ = state;
}

}  // namespace nnscope
