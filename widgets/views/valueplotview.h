// SPDX-License-Identifier: MIT
#pragma once
// Any traced value as a heatmap: the chosen prompt's slice, its last two axes on screen and a selector for each
// axis before them (a head, a kv head). Opened from a pinned card.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

class QComboBox;
class QSpinBox;
class QHBoxLayout;

namespace nnscope {

class ValuePlotView : public TraceView {
    Q_OBJECT
public:
    explicit ValuePlotView(const ValueKey& key, QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    const ValueKey& key() const { return key_; }
    HeatmapPlot* heatmap() const { return heatmap_; }
    /// The index chosen on leading axis `axis` (after the batch axis).
    void setIndex(int axis, int index);

private:
    void refresh();

    ValueKey key_;
    QHBoxLayout* indexRow_;
    std::vector<QSpinBox*> indexSpins_;
    HeatmapPlot* heatmap_;
    MatrixModel* model_;
};

}  // namespace nnscope
