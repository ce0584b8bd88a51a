// SPDX-License-Identifier: MIT
#pragma once
// The "Trace" dock: the prompts (one per line, run together as one left-padded batch), Run and Cancel, a progress
// bar counting blocks, and the last run's outcome or error. The bar and Cancel also serve what a view computes from
// the trace once it is shown (the logit lens, the Flow graph, ...): its blocks are counted after the trace's.
#include <QWidget>

#include <utility>

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
    QLabel* statusLabel() const { return status_; }

    /// Whether a model is there to run (Run is disabled without one).
    void setModelReady(bool ready);
    /// Forgets the last trace's outcome, notes and progress (another model or a trace file was opened: the line and the
    /// bar spoke of the previous one) and says `text` instead.
    void reset(const QString& text);
    void traceStarted(int blocks);
    void traceProgress(int done, int total);
    void traceFinished(const QString& summary);
    void traceCancelled(int done, int total);
    void traceFailed(const QString& message);
    /// Sets what the last trace found besides its summary (the attached dictionaries' reconstruction quality), shown
    /// after it, in the warning colour when `warning`; a later call replaces it (empty: the summary alone), a new trace
    /// clears it.
    void setOutcomeNote(const QString& text, bool warning = false);
    bool isRunning() const { return running_; }
    /// A computation a view asked for after the trace (`what`: "logit lens"): the bar counts its `total` blocks (0: it
    /// counts none, the bar shows its name), Cancel (Esc) stops it, Run stays enabled (a new trace replaces it).
    void analysisStarted(const QString& what, int total);
    void analysisProgress(int done, int total);
    /// It finished (or was cancelled or failed: `note` says so under the trace's outcome, in the warning colour when
    /// `warning`; a result such as "Attribution graph: 1411 features" is not one).
    void analysisEnded(const QString& note = QString(), bool warning = true);
    bool isAnalysing() const { return analysing_; }

signals:
    void runRequested();
    void cancelRequested();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void setRunning(bool running);
    /// Shows `text` on the status line in `colour` (empty: the palette's), as tall as its wrapped lines need: the dock
    /// does not grow for a word-wrapped label by itself, and a second line was cut in half.
    void setStatus(const QString& text, const QString& colour = QString());
    void fitStatus();

    QPlainTextEdit* editor_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
    QLabel* status_;
    bool running_ = false, ready_ = false, analysing_ = false;
    std::pair<int, int> traceBar_{1, 0};  ///< the trace's bar (maximum, value) when a computation took it
    QString traceBarFormat_;              ///< and its text ("block %v / %m", or none before any trace)
    QString outcome_;  ///< the last trace's outcome, which an analysis note is added to
    QString traceSummary_;         ///< the last trace's summary, before any note
    bool outcomeWarning_ = false;  ///< the outcome holds a warning (setOutcomeNote)
};

}  // namespace nnscope
