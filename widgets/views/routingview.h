// SPDX-License-Identifier: MIT
#pragma once
// The Routing view of a mixture of experts (core/analysis/routing.h): which experts each token went through, how much
// of the prompt each expert took, and what one expert writes.
// - A blocks × positions grid of the blocks with experts: each cell coloured by the expert the router weighed most
//   there, its top-k experts with their weights written in it when there is room and listed on hover.
// - A blocks × experts map of the load over the prompt: how many tokens chose each expert (or the routing weight it got
//   in all).
// - For the expert clicked (in either map): its load, its direct logit attribution at the position shown (its weighted
//   output through the frozen final norm onto the target's unembedding, beside the other chosen experts', the shared
//   expert's and the MLP's), the tokens it promotes and suppresses there, and the norm of what it writes at each
//   position. "Forbid" adds the forbid-expert intervention (its router logit at -inf) to the Interventions dock; the
//   window's stale-trace bar then offers Run.
// The maps are computed on the window's thread from the trace (small tensors); the attribution in the worker
// (requestAnalysis). A model without experts gets a sentence saying so, not empty plots.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

#include "core/analysis/routing.h"

#include <optional>

class QCPBars;
class QCustomPlot;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace nnscope {

class RoutingView : public TraceView {
    Q_OBJECT
public:
    explicit RoutingView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;
    /// Forbidding the expert selected.
    QVector<InterventionOffer> interventionOffers() const override;

    /// Selects expert `expert` of block `layer` (a block with experts): its details, its norm per position, and the
    /// position moved to the one where it has its largest weight when the position shown did not choose it.
    void selectExpert(int layer, int64_t expert);
    /// The prompt position whose attribution is shown (its own positions; negative: from the last).
    void setPosition(int position);
    int position() const;
    /// The token whose logit is split: text of one token or #ID; empty: the model's most probable next token.
    void setTarget(const QString& token);
    /// What the load map shows: the tokens that chose each expert (false), or the routing weight it got in all (true).
    void setLoadByWeight(bool byWeight);

    /// The routing shown (nullopt: none; the placeholder says why).
    const std::optional<ExpertRouting>& routing() const { return routing_; }
    /// The experts' attribution at the position shown (nullopt while it is computed, or when it failed: statusLabel).
    const std::optional<ExpertAttribution>& attribution() const { return attribution_; }
    int selectedBlock() const { return block_; }
    int64_t selectedExpert() const { return expert_; }
    /// The selected expert's share at the position shown (NaN without an attribution or a selection).
    double selectedShare() const;

    HeatmapPlot* grid() const { return grid_; }
    MatrixModel* gridModel() const { return gridModel_; }
    HeatmapPlot* loadMap() const { return load_; }
    MatrixModel* loadModel() const { return loadModel_; }
    QCustomPlot* normPlot() const { return normPlot_; }
    QCPBars* normBars() const { return normBars_; }
    QTextBrowser* details() const { return details_; }
    QLabel* statusLabel() const { return status_; }
    QPushButton* forbidButton() const { return forbid_; }
    /// The colour the grid gives expert `e`: light hues the golden angle apart, the same for an id in every model.
    static QColor expertColour(int64_t e);

private:
    void refreshMaps();
    void refreshAttribution();
    void attributionEnded(JobState state, const QVariant& result, const QString& message);
    void showExpert();

    QSpinBox* position_;
    QLineEdit* target_;
    QComboBox* loadKind_;
    QLabel* status_;
    HeatmapPlot* grid_;
    MatrixModel* gridModel_;
    HeatmapPlot* load_;
    MatrixModel* loadModel_;
    QCustomPlot* normPlot_;
    QCPBars* normBars_;
    QTextBrowser* details_;
    QPushButton* forbid_;
    std::optional<ExpertRouting> routing_;
    std::optional<ExpertAttribution> attribution_;
    int block_ = -1;
    int64_t expert_ = -1;
};

}  // namespace nnscope
