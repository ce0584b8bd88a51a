// SPDX-License-Identifier: MIT
#pragma once
// What the central views (attention, neurons, logit lens, a pinned value) share: they show one trace snapshot,
// say what to do when there is none, follow the selected block, and hand their plot to the exporter with the
// settings that describe it.
#include "plotexport.h"
#include "tracesnapshot.h"

#include <QMap>
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
    /// The interventions the view offers for what it shows now (the head, the neuron, the block), listed by its
    /// right-click menu; choosing one emits interventionRequested. None by default.
    virtual QVector<InterventionOffer> interventionOffers() const { return {}; }
    /// What the view says instead of its content (no trace yet, a value it needs is missing), or "" when it shows it.
    QString placeholderText() const;

signals:
    void blockChanged(int block);
    void promptChanged(int row);
    /// The user chose an intervention from the view's menu (its text in addIntervention syntax).
    void interventionRequested(const QString& text);

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;
    void showEvent(QShowEvent* event) override;
    /// Runs `refresh` now when the view is on screen, else the next time it is shown: what a view computes from a
    /// trace costs the window nothing while its tab is hidden (a later call replaces an earlier one still waiting).
    void refreshWhenShown(std::function<void()> refresh);
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
    QStackedWidget* stack_;
    QLabel* placeholder_;
};

/// A combo box listing the snapshot's prompts ("1: Once upon a time").
void fillPromptCombo(QComboBox* combo, const TraceSnapshot& snapshot);
/// A sequential white-to-blue gradient for probabilities, and a blue-white-red one for signed values.
QCPColorGradient probabilityGradient();
QCPColorGradient signedGradient();

}  // namespace nnscope
