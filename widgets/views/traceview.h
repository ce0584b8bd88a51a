// SPDX-License-Identifier: MIT
#pragma once
// What the central views (attention, neurons, logit lens, a pinned value) share: they show one trace snapshot,
// say what to do when there is none, follow the selected block, and hand their plot to the exporter with the
// settings that describe it. A view that computes something from the trace that may take long (the Flow graph, the
// attribution, the head scores) asks for it with requestAnalysis: the window runs it in its worker thread, with the
// trace panel's progress bar and Esc, and hands the outcome back (endAnalysis); the view never computes on the
// window's thread.
#include "widgets/views/job.h"
#include "widgets/plots/plotexport.h"
#include "widgets/views/tracesnapshot.h"

#include <QMap>
#include <QVariantMap>
#include <QWidget>

#include <functional>

class QCPColorGradient;
class QComboBox;
class QLabel;
class QStackedWidget;

namespace nnscope {

/// An intervention a view offers in its context menu: the menu text and the intervention (core/run/edit.h's
/// addIntervention syntax), e.g. {"Zero-ablate head 3 of block 1", "layers.1.self_attn.attention_head_outputs[:, :, 3] = 0"}.
struct InterventionOffer {
    QString label;
    QString text;
};

class TraceView : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget* parent = nullptr);

    /// Shows a new trace (nullptr: none yet).
    virtual void setSnapshot(SnapshotPtr snapshot) = 0;
    SnapshotPtr snapshot() const { return snapshot_; }
    /// Follows the block selected elsewhere (the diagram's slider); views without blocks ignore it.
    virtual void setBlock(int block) { (void)block; }
    /// The plot an export writes, and what it shows (recorded in the file).
    virtual PlotSource plotSource() const = 0;
    virtual QMap<QString, QString> settings() const = 0;
    /// The prompt of the batch shown (0-based); every view follows the one chosen in any of them.
    void setPrompt(int row);
    int prompt() const;
    /// The prompt chooser of the view's control row.
    QComboBox* promptCombo() const { return promptCombo_; }
    /// The interventions the view offers for what it shows now (the head, the neuron, the block), listed by its
    /// right-click menu; choosing one emits interventionRequested. None by default.
    virtual QVector<InterventionOffer> interventionOffers() const { return {}; }
    /// The choices the window remembers between sessions (QSettings under views/<name>/): the log scale, a ranking, a
    /// threshold, ... by key. Empty by default; restoreChoices takes what choices() gave, a key missing keeps its value.
    virtual QVariantMap choices() const { return {}; }
    virtual void restoreChoices(const QVariantMap& choices) { (void)choices; }
    /// What the view says instead of its content (no trace yet, a value it needs is missing), or "" when it shows it.
    QString placeholderText() const;
    /// The outcome of the view's request `serial` (analysisRequested), from whoever ran it: `result` when Finished,
    /// `message` when Failed. Ignored unless it answers the view's latest request, still wanted.
    void endAnalysis(quint64 serial, nnscope::JobState state, const QVariant& result, const QString& message);
    /// Whether the view waits for the outcome of a computation it asked for.
    bool analysisPending() const { return pendingSerial_ != 0; }

signals:
    void blockChanged(int block);
    void promptChanged(int row);
    /// The user chose an intervention from the view's menu (its text in addIntervention syntax).
    void interventionRequested(const QString& text);
    /// The view wants `request` computed in the worker thread; the outcome comes back through endAnalysis with the
    /// request's serial. A later request replaces an earlier one not yet answered.
    void analysisRequested(const nnscope::AnalysisRequest& request);
    /// The view no longer wants the request it made (it shows another trace): it may be cancelled without a word.
    void analysisDropped();

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;
    void showEvent(QShowEvent* event) override;
    /// Runs `refresh` now when the view is on screen, else the next time it is shown: what a view computes from a
    /// trace costs the window nothing while its tab is hidden (a later call replaces an earlier one still waiting).
    void refreshWhenShown(std::function<void()> refresh);
    /// Runs `refresh` the next time the view is shown, even if it is on screen now (a computation cancelled with Esc
    /// is asked for again when the view is looked at again, not at once).
    void refreshOnNextShow(std::function<void()> refresh);
    /// What to do with a request's outcome: `result` when `state` is Finished, `message` when Failed.
    using AnalysisDone = std::function<void(JobState state, const QVariant& result, const QString& message)>;
    /// Asks for `compute` to run in the worker thread (analysisRequested): `what` names it in the trace panel ("head
    /// scores"), `total` is how many steps its progress counts (0: none), and `done` gets the outcome on the window's
    /// thread. `compute` must read only what it captured (a SnapshotPtr, settings by value), never the view. A request
    /// not yet answered is replaced.
    void requestAnalysis(const QString& what, int total, std::function<QVariant(const JobControl&)> compute, AnalysisDone done);
    /// Gives up the request not yet answered, if any (a new snapshot): its outcome is ignored.
    void dropAnalysis();
    /// The widget shown once a snapshot is there.
    void setContent(QWidget* content);
    /// Shows `text` instead of the content (no trace yet, or the value is missing).
    void showPlaceholder(const QString& text);
    void showContent();
    /// "" when the snapshot holds value `v` at `block`; else what the placeholder says: `what` needs it (a trace file
    /// opened without it, a trace that did not save it), and which blocks have it.
    QString missingAtBlock(Value v, int block, const QString& what) const;
    /// "" when the snapshot's model has its weights; else what the placeholder says: `what` needs them.
    QString missingWeights(const QString& what) const;

    SnapshotPtr snapshot_;
    QComboBox* promptCombo_;  ///< the views put it in their control row

private:
    std::function<void()> pendingRefresh_;
    quint64 lastSerial_ = 0, pendingSerial_ = 0;  ///< the requests made; the one waited for (0: none)
    AnalysisDone pendingDone_;
    QStackedWidget* stack_;
    QLabel* placeholder_;
};

/// At most about `maxChars` characters of `text` for a label, a title, a tooltip or a list: a longer one (a prompt of a
/// megabyte in a trace file's metadata) keeps its start and is marked "… (N characters in all)". Qt lays out every
/// character it is given to show, and a megabyte of text took minutes.
QString elidedText(const QString& text, int maxChars = 300);
/// A combo box listing the snapshot's prompts ("1: Once upon a time").
void fillPromptCombo(QComboBox* combo, const TraceSnapshot& snapshot);
/// A sequential white-to-blue gradient for probabilities, and a blue-white-red one for signed values.
QCPColorGradient probabilityGradient();
QCPColorGradient signedGradient();

}  // namespace nnscope
