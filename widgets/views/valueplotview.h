// SPDX-License-Identifier: MIT
#pragma once
// Any traced value as a heatmap: the chosen prompt's slice, its last two axes on screen and a selector for each
// axis before them (a head, a kv head). Opened from a pinned card, or, for a sparse dictionary's value a trace file
// holds (SITE[NAME].features, .reconstruction, .error), from the trace file's list in the Model tab.
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
    /// A view of the dictionary value `dictionaryValuePath` (TraceResult::dictionaryValues): [seq, d_sae] or [seq, d_out]
    /// of the chosen prompt.
    explicit ValuePlotView(const QString& dictionaryValuePath, QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// The value shown; meaningful only where dictionaryPath() is empty.
    const ValueKey& key() const { return key_; }
    /// The dictionary value shown, or "" for a value of the model.
    const QString& dictionaryPath() const { return dictionaryPath_; }
    HeatmapPlot* heatmap() const { return heatmap_; }
    /// The index chosen on leading axis `axis` (after the batch axis).
    void setIndex(int axis, int index);

private:
    void refresh();
    /// The value of every prompt (the batch axis first), or an undefined tensor when the snapshot lacks it.
    torch::Tensor batchValue() const;
    /// Its axes' names (the model value's, or batch seq d_sae / d_out).
    std::vector<std::string> axes() const;
    /// Its path: the model value's, or the dictionary value's.
    QString path() const;

    ValueKey key_{Value::Logits, -1};
    QString dictionaryPath_;
    QHBoxLayout* indexRow_;
    std::vector<QSpinBox*> indexSpins_;
    HeatmapPlot* heatmap_;
    MatrixModel* model_;
};

}  // namespace nnscope
