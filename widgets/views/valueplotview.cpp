// SPDX-License-Identifier: MIT
#include "widgets/views/valueplotview.h"

#include "core/analysis/analysis.h"

#include <torch/types.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cstring>

namespace nnscope {

namespace {
bool isTokenAxis(const char* name) {
    return std::strcmp(name, "seq") == 0 || std::strcmp(name, "query") == 0 || std::strcmp(name, "key") == 0;
}
}  // namespace

ValuePlotView::ValuePlotView(const ValueKey& key, QWidget* parent) : TraceView(parent), key_(key) {
    auto* content = new QWidget(this);
    indexRow_ = new QHBoxLayout;
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addLayout(indexRow_);
    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(signedGradient());
    heatmap_->setSymmetricRange(true);
    heatmap_->setMinCellSize(QSize(6, 18));
    heatmap_->setModel(model_);
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addWidget(heatmap_, 1);
    setContent(content);
    showPlaceholder(tr("Run the trace to read this value."));
    connect(promptCombo_, &QComboBox::currentIndexChanged, this, &ValuePlotView::refresh);
}

void ValuePlotView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_ || !snapshot_->result.value(key_).defined()) {
        model_->setMatrix({});
        showPlaceholder(snapshot_ ? tr("The last trace did not read %1: run the trace again.").arg(snapshot_->path(key_))
                                  : tr("Run the trace to read this value."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    const torch::Tensor t = snapshot_->result.value(key_);
    const ValueInfo& info = valueInfo(key_.value);
    if (indexSpins_.empty()) {
        // one selector per axis before the last two (after the batch axis)
        for (int64_t a = 1; a + 2 < t.dim(); ++a) {
            auto* spin = new QSpinBox(this);
            spin->setRange(0, static_cast<int>(t.size(a)) - 1);
            spin->setPrefix(QString("%1 ").arg(a < static_cast<int64_t>(info.axes.size()) ? info.axes[a] : "axis"));
            connect(spin, &QSpinBox::valueChanged, this, &ValuePlotView::refresh);
            indexRow_->addWidget(spin);
            indexSpins_.push_back(spin);
        }
    }
    showContent();
    refresh();
}

void ValuePlotView::setIndex(int axis, int index) { indexSpins_.at(static_cast<size_t>(axis))->setValue(index); }

void ValuePlotView::refresh() {
    if (!snapshot_ || !snapshot_->result.value(key_).defined()) return;
    const int row = std::max(0, promptCombo_->currentIndex());
    torch::Tensor v = promptValue(*snapshot_->model, snapshot_->result, key_, row);
    for (QSpinBox* spin : indexSpins_) v = v.select(0, spin->value());
    if (v.dim() == 1) v = v.unsqueeze(0);
    if (v.dim() == 0) v = v.reshape({1, 1});
    const ValueInfo& info = valueInfo(key_.value);
    const size_t rowAxis = info.axes.size() >= 2 ? info.axes.size() - 2 : 0, colAxis = info.axes.size() - 1;
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    Matrix m;
    m.values = v;
    if (rowAxis >= 1) {
        m.rowTitle = info.axes[rowAxis];
        if (isTokenAxis(info.axes[rowAxis])) m.rowLabels = tokens;
    }
    m.columnTitle = info.axes[colAxis];
    if (isTokenAxis(info.axes[colAxis])) m.columnLabels = tokens;
    m.valueName = QString::fromUtf8(info.name);
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(tr("%1 · prompt %2").arg(snapshot_->path(key_)).arg(row + 1));
}

PlotSource ValuePlotView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = snapshot_ ? snapshot_->path(key_) : QString("value");
    return s;
}

QMap<QString, QString> ValuePlotView::settings() const {
    QMap<QString, QString> s{{"view", "value"}, {"view.prompt", QString::number(std::max(0, promptCombo_->currentIndex()) + 1)}};
    if (snapshot_) s["view.value"] = snapshot_->path(key_);
    for (size_t i = 0; i < indexSpins_.size(); ++i) s[QString("view.index%1").arg(i)] = indexSpins_[i]->prefix() + QString::number(indexSpins_[i]->value());
    return s;
}

}  // namespace nnscope
