// SPDX-License-Identifier: MIT
#include "jobwatcher.h"

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
    emit started();
}

void JobWatcher::onJobProgress(quint64 id, int done, int total) {
    if (!mine(id)) return;
    done_ = done;
    total_ = total;
    emit progressed(done, total);
}

void JobWatcher::onJobFinished(quint64 id, const QVariant& result) {
    if (!mine(id)) return;
    end(JobState::Finished);
    emit finished(result);  // its slots may watch a new job at once: ended says how this one ended
    emit ended(JobState::Finished);
}

void JobWatcher::onJobFailed(quint64 id, const QString& message) {
    if (!mine(id)) return;
    end(JobState::Failed);
    emit failed(message);
    emit ended(JobState::Failed);
}

void JobWatcher::onJobCancelled(quint64 id) {
    if (!mine(id)) return;
    end(JobState::Cancelled);
    emit cancelled();
    emit ended(JobState::Cancelled);
}

void JobWatcher::end(JobState state) {
    id_ = 0;
    state_ = state;
}

}  // namespace nnscope
