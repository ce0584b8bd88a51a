// SPDX-License-Identifier: MIT
#pragma once
// The attention view: attention_probabilities of one block, one head as a heatmap (query rows, key columns, token
// labels, hover = tokens and value) or every head of the block as a grid.
#include "headgridplot.h"
#include "heatmapplot.h"
#include "traceview.h"

class QComboBox;
class QSpinBox;
class QStackedWidget;

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
    int block() const;
    int head() const;
    HeatmapPlot* heatmap() const { return heatmap_; }
    HeadGridPlot* grid() const { return grid_; }
    MatrixModel* matrixModel() const { return model_; }

private:
    void refresh();

    QSpinBox* blockSpin_;
    QComboBox* headCombo_;
    QStackedWidget* plots_;
    HeatmapPlot* heatmap_;
    HeadGridPlot* grid_;
    MatrixModel* model_;
};

}  // namespace nnscope
