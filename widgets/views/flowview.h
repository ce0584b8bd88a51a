// SPDX-License-Identifier: MIT
#pragma once
// The Flow view: the information flow graph of the traced prompt (Ferrando and Voita 2024, core/analysis/contribution.h) drawn
// over the prompt. Columns are the prompt's tokens, rows the stream between sublayers (the embeddings at the bottom,
// then after each block's attention and after its MLP); each kept edge is a line whose width and opacity follow its
// importance: blue for what attention moves from one token to another, orange for an MLP's write, grey for the
// residual carried past a sublayer. Hover an edge for its importance and top heads. The graph starts from a chosen
// position (the last by default) and keeps edges of importance >= the threshold. The importances (a pass's worth of
// work: half a minute for 300 tokens on a 16-block model) and the graph are computed in the window's worker
// (requestAnalysis), counted by the trace panel's bar and stopped by Esc; a new threshold or position prunes the
// importances already computed, in the worker too.
#include "widgets/views/traceview.h"

#include "core/analysis/contribution.h"

#include <optional>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QScrollArea;
class QSpinBox;

namespace nnscope {

class FlowCanvas;

class FlowView : public TraceView {
    Q_OBJECT
public:
    explicit FlowView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    void setThreshold(double threshold);
    /// The prompt position the graph starts from (its own positions; -1: the last).
    void setPosition(int position);
    /// The graph shown (nullopt: none; statusLabel() says why). Computed in the worker when the view is first shown
    /// after a trace; until a new threshold's or position's graph arrives, the last one stays.
    const std::optional<ContributionGraph>& graph() const { return graph_; }
    QLabel* statusLabel() const { return status_; }
    QWidget* canvas() const;
    /// The threshold and Fit, remembered by the window.
    QVariantMap choices() const override;
    void restoreChoices(const QVariantMap& choices) override;
    /// Fit (the default): the whole graph in view, thinned token labels; otherwise every token labelled, scrolling.
    bool fitted() const;
    void setFitted(bool on);
    /// Every how many tokens the canvas labels one (1: every token).
    int labelStep() const;

protected:
    void showEvent(QShowEvent* event) override;

private:
    void recompute();  ///< asks for the importances of the prompt (the expensive part), then the graph
    void prune();      ///< asks for the graph from the importances at the current threshold and position
    /// Asks the worker for the graph of the prompt shown at the current threshold and position, from the importances
    /// already computed when there are some.
    void requestGraph();
    /// The outcome of requestGraph: the graph at `threshold` from `position`, or why there is none.
    void graphEnded(JobState state, const QVariant& result, const QString& message, double threshold, int position);
    /// Shows `text` in the status line (`colour` for a warning or an error, "" for none) and no graph.
    void showStatus(const QString& text, const QString& colour);
    /// Scrolls the graph's starting column into view when the graph is not fitted.
    void revealPosition();

    QSpinBox* position_;
    QDoubleSpinBox* threshold_;
    QLabel* status_;
    FlowCanvas* canvas_;
    QScrollArea* scroll_;
    QCheckBox* fit_;
    std::optional<TokenContributions> contributions_;
    std::optional<ContributionGraph> graph_;
    bool stale_ = true;  ///< a new snapshot or prompt whose importances are not computed yet
};

}  // namespace nnscope
