// SPDX-License-Identifier: MIT
#pragma once
// The attention view: attention_probabilities of one block, one head as a heatmap (query rows, key columns, token
// labels, hover = tokens and value) or every head of the block as a grid. The heatmap fits the whole pattern to the
// view at any length (one image, zoom and pan, labels thinned to what fits), on a linear or logarithmic colour scale.
#include "widgets/plots/headgridplot.h"
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

class QCheckBox;
class QComboBox;
class QSpinBox;
class QStackedWidget;
class QToolButton;

namespace nnscope {

class AttentionView : public TraceView {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    void setBlock(int block) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;
    /// Zero- and mean-ablating the head shown (every head of the block in the grid), doubling its queries, skipping
    /// the block.
    QVector<InterventionOffer> interventionOffers() const override;

    /// Head `head`, or every head as a grid when head < 0.
    void setHead(int head);
    /// The logarithmic colour scale (from kLogFloor to 1) instead of the linear one.
    void setLogScale(bool on);
    bool logScale() const;
    static constexpr double kLogFloor = 1e-5;
    int block() const;
    int head() const;
    HeatmapPlot* heatmap() const { return heatmap_; }
    HeadGridPlot* grid() const { return grid_; }
    MatrixModel* matrixModel() const { return model_; }
    QToolButton* fitButton() const { return fitButton_; }
    QCheckBox* logCheck() const { return logCheck_; }

signals:
    /// The head shown changed (-1: the grid of every head), by the user or by setHead; the Text view follows it.
    void headChanged(int head);

private:
    void refresh();

    QSpinBox* blockSpin_;
    QComboBox* headCombo_;
    QCheckBox* logCheck_;
    QToolButton* fitButton_;
    QStackedWidget* plots_;
    HeatmapPlot* heatmap_;
    HeadGridPlot* grid_;
    MatrixModel* model_;
};

}  // namespace nnscope
