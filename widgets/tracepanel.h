// SPDX-License-Identifier: MIT
#pragma once
// The "Trace" dock: the prompts (one per line, run together as one left-padded batch), Run and Cancel, a progress
// bar counting blocks, and the last run's outcome or error.
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace nnscope {

class TracePanel : public QWidget {
    Q_OBJECT
public:
    explicit TracePanel(QWidget* parent = nullptr);

    /// The prompts, one per non-empty line; a blank editor is one empty prompt (the BOS token alone).
    QStringList prompts() const;
    void setPrompts(const QStringList& prompts);
    QPlainTextEdit* editor() const { return editor_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* cancelButton() const { return cancel_; }
    QProgressBar* progressBar() const { return progress_; }
    QString statusText() const;

    /// Whether a model is there to run (Run is disabled without one).
    void setModelReady(bool ready);
    void traceStarted(int blocks);
    void traceProgress(int done, int total);
    void traceFinished(const QString& summary);
    void traceCancelled(int done, int total);
    void traceFailed(const QString& message);
    bool isRunning() const { return running_; }

signals:
    void runRequested();
    void cancelRequested();

private:
    void setRunning(bool running);

    QPlainTextEdit* editor_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
    QLabel* status_;
    bool running_ = false, ready_ = false;
};

}  // namespace nnscope
