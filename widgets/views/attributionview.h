// SPDX-License-Identifier: MIT
#pragma once
// The Attribution view ("who wrote the next token"): direct logit attribution (core/analysis/attribution.h) of a token at a
// position of the traced prompt. A bar per component (the embeddings, each block's attention and MLP output), a
// blocks x heads heatmap of every head's share, the neurons with the largest share, and for a chosen component the
// tokens it promotes and suppresses through the unembedding. The final norm's scale is frozen at the real pass's value
// (the view says so), so the bars add up to the logit. The attribution is computed in the window's worker
// (requestAnalysis; a visible pause at a 128k vocabulary), Esc stops it.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

#include "core/analysis/attribution.h"

#include <optional>

class QCPBars;
class QCustomPlot;
class QTreeWidget;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTextBrowser;

namespace nnscope {

class AttributionView : public TraceView {
    Q_OBJECT
public:
    explicit AttributionView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;
    /// Zero-ablating the head with the largest |share|.
    QVector<InterventionOffer> interventionOffers() const override;

    /// The token whose logit is decomposed: text of one token or #ID; empty: the model's most probable next token.
    void setTarget(const QString& token);
    /// With a wrong token the logit difference target − wrong is decomposed; empty: the target's logit alone.
    void setWrong(const QString& token);
    /// The prompt position whose next-token logit is decomposed (its own positions; -1: the last).
    void setPosition(int position);
    /// Shows the tokens component `index` of attribution()->components promotes and suppresses.
    void selectComponent(int index);

    /// The attribution shown (nullopt: none, statusLabel() says why, or it is being computed: analysisPending()).
    const std::optional<LogitAttribution>& attribution() const { return attribution_; }
    QCustomPlot* blockPlot() const { return blockPlot_; }
    /// The bars of the attention outputs, the MLP outputs, and the embeddings with the final norm's bias.
    QCPBars* attentionBars() const { return blockBars_; }
    QCPBars* mlpBars() const { return mlpBars_; }
    QCPBars* otherBars() const { return otherBars_; }
    HeatmapPlot* headHeatmap() const { return heads_; }
    MatrixModel* headModel() const { return headModel_; }
    QLabel* statusLabel() const { return status_; }
    QTextBrowser* details() const { return details_; }
    /// The sorted list of the largest components beside the head map, and the names it lists, largest |share| first.
    QTreeWidget* topList() const { return top_; }
    QStringList topComponents() const;
    static constexpr int kTopComponents = 20;
    /// Indices into attribution()->components of the bars, left to right.
    const QVector<int>& barComponents() const { return barComponents_; }

private:
    /// Asks the worker for the attribution the fields ask for.
    void refresh();
    /// Shows the attribution computed, or why there is none.
    void attributionEnded(JobState state, const QVariant& result, const QString& message);
    void showDetails();
    void fillTopComponents();  ///< the sorted list of the largest components

    QLineEdit* target_;
    QLineEdit* wrong_;
    QSpinBox* position_;
    QLabel* status_;
    QCustomPlot* blockPlot_;
    QCPBars* blockBars_;
    QCPBars* mlpBars_;
    QCPBars* otherBars_;
    HeatmapPlot* heads_;
    MatrixModel* headModel_;
    QTextBrowser* details_;
    QTreeWidget* top_;
    std::optional<LogitAttribution> attribution_;
    QVector<int> barComponents_;
    int selected_ = -1;  ///< the component whose promoted tokens are listed
};

}  // namespace nnscope
