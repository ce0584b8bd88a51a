// SPDX-License-Identifier: MIT
#pragma once
// The window's handle on one job of its TraceWorker at a time, in the shape of QFutureWatcher: watch(id) follows the
// job a request returned, and the watcher relays that job's start, progress and outcome as its own signals, whatever
// the job computes. It is the one place that matches the worker's signals to a job: a job the watcher no longer
// watches (a newer one replaced it, or it was forgotten) says nothing here. The window keeps one watcher per purpose
// (the trace, the logit lens, each view's analysis, ...).
#include "traceworker.h"

#include <QObject>
#include <QVariant>

#include <functional>
#include <utility>

namespace nnscope {

class JobWatcher : public QObject {
    Q_OBJECT
public:
    /// A watcher of `worker`'s jobs; `name` ("trace", "lens", "flow") names it in logs and tests.
    JobWatcher(TraceWorker* worker, const QString& name, QObject* parent = nullptr);

    /// Follows job `id` (just queued: Queued), forgetting any job watched before without cancelling it.
    void watch(quint64 id);
    /// Stops relaying the job's signals (it runs on, unwatched); the watcher goes back to Idle.
    void forget();
    /// Asks the worker to cancel the job; its outcome follows as usual (cancelled, or finished if it got there first).
    /// A job that runs to the end (a load, the checks) is not stopped.
    void cancel();
    /// Forgets the job, then cancels it: nothing more is said about it (a request replaced by a newer one).
    void cancelQuietly();

    quint64 id() const { return id_; }
    const QString& name() const { return name_; }
    JobState state() const { return state_; }
    /// Queued or Running.
    bool isActive() const { return state_ == JobState::Queued || state_ == JobState::Running; }
    /// The last progress the job reported (0 of 0 before any).
    int progressValue() const { return done_; }
    int progressMaximum() const { return total_; }

    /// Calls `f(T)` with each finished job's result, which holds a T (the type the request names), on `context`'s
    /// thread, for as long as `context` lives.
    template <class T, class F>
    QMetaObject::Connection onFinished(const QObject* context, F f) {
        return connect(this, &JobWatcher::finished, context, [f = std::move(f)](const QVariant& result) {
            Q_ASSERT_X(result.metaType() == QMetaType::fromType<T>(), "JobWatcher::onFinished", "the job's result is of another type");
            f(result.value<T>());
        });
    }

signals:
    /// The worker began computing the job.
    void started();
    /// `done` of `total` steps of the job are computed.
    void progressed(int done, int total);
    /// The job is done; `result` holds the type its request names. A slot that throws turns the outcome into failed
    /// ("showing the result failed: ..."), reported to the application (GuardedApplication::report).
    void finished(const QVariant& result);
    /// The job could not be computed: `message` says why.
    void failed(const QString& message);
    /// The job was cancelled (Cancel, Esc, or dropped from the queue).
    void cancelled();
    /// After finished, failed or cancelled: the job's final state.
    void ended(nnscope::JobState state);

private:
    void onJobStarted(quint64 id);
    void onJobProgress(quint64 id, int done, int total);
    void onJobFinished(quint64 id, const QVariant& result);
    void onJobFailed(quint64 id, const QString& message);
    void onJobCancelled(quint64 id);
    /// Whether `id` is the job watched (the one check every signal of the worker goes through).
    bool mine(quint64 id) const { return id != 0 && id == id_; }
    /// Ends the watched job in `state` (the watcher keeps the state; the id is let go).
    void end(JobState state);
    /// Emits a signal (`emitIt`); an exception its slots throw is reported (GuardedApplication::report), never let
    /// out into Qt's event loop.
    void relay(const char* signal, const std::function<void()>& emitIt);

    TraceWorker* worker_;
    QString name_;
    quint64 id_ = 0;
    JobState state_ = JobState::Idle;
    int done_ = 0, total_ = 0;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::JobState)
