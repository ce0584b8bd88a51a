// SPDX-License-Identifier: MIT
#pragma once
// The Flow view: the information flow graph of the traced prompt (Ferrando and Voita 2024, core/analysis/contribution.h) drawn
// over the prompt. Columns are the prompt's tokens, rows the stream between sublayers (the embeddings at the bottom,
// then after each block's attention and after its MLP); each kept edge is a line whose width and opacity follow its
// importance: blue for what attention moves from one token to another, orange for an MLP's write, grey for the
// residual carried past a sublayer. Hover an edge for its importance and top heads. The graph starts from a chosen
// position (the last by default) and keeps edges of importance >= the threshold.
#include "traceview.h"

#include "core/analysis/contribution.h"

#include <optional>

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
    /// The graph shown (nullopt: none; statusLabel() says why). Computed when the view is first shown after a trace.
    const std::optional<ContributionGraph>& graph() const { return graph_; }
    QLabel* statusLabel() const { return status_; }
    QWidget* canvas() const;

protected:
    void showEvent(QShowEvent* event) override;

private:
    void recompute();  ///< the importances of the prompt (the expensive part), then the graph
    void prune();      ///< the graph from the importances at the current threshold and position

    QSpinBox* position_;
    QDoubleSpinBox* threshold_;
    QLabel* status_;
    FlowCanvas* canvas_;
    QScrollArea* scroll_;
    std::optional<TokenContributions> contributions_;
    std::optional<ContributionGraph> graph_;
    bool stale_ = true;  ///< a new snapshot or prompt whose importances are not computed yet
};

}  // namespace nnscope
