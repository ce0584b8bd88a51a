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

ValuePlotView::ValuePlotView(const QString& dictionaryValuePath, QWidget* parent) : ValuePlotView(ValueKey{Value::Logits, -1}, parent) {
    dictionaryPath_ = dictionaryValuePath;
}

torch::Tensor ValuePlotView::batchValue() const {
    if (!snapshot_) return {};
    if (dictionaryPath_.isEmpty()) return snapshot_->result.value(key_);
    const DictionaryValue* v = snapshot_->result.dictionaryValue(dictionaryPath_.toStdString());
    return v ? v->tensor : torch::Tensor();
}

std::vector<std::string> ValuePlotView::axes() const {
    if (dictionaryPath_.isEmpty()) {
        const ValueInfo& info = valueInfo(key_.value);
        return std::vector<std::string>(info.axes.begin(), info.axes.end());
    }
    const DictionaryValue* v = snapshot_ ? snapshot_->result.dictionaryValue(dictionaryPath_.toStdString()) : nullptr;
    return v ? v->axes() : std::vector<std::string>{"batch", "seq", "d_sae"};
}

QString ValuePlotView::path() const { return !dictionaryPath_.isEmpty() ? dictionaryPath_ : snapshot_ ? snapshot_->path(key_) : QString("value"); }

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
    if (!snapshot_ || !batchValue().defined()) {
        model_->setMatrix({});
        showPlaceholder(snapshot_ ? tr("The last trace did not read %1: run the trace again.").arg(path())
                                  : tr("Run the trace to read this value."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    const torch::Tensor t = batchValue();
    const std::vector<std::string> names = axes();
    if (indexSpins_.empty()) {
        // one selector per axis before the last two (after the batch axis)
        for (int64_t a = 1; a + 2 < t.dim(); ++a) {
            auto* spin = new QSpinBox(this);
            spin->setRange(0, static_cast<int>(t.size(a)) - 1);
            spin->setPrefix(QString("%1 ").arg(a < static_cast<int64_t>(names.size()) ? QString::fromStdString(names[static_cast<size_t>(a)]) : QString("axis")));
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
    if (!snapshot_ || !batchValue().defined()) return;
    const int row = std::max(0, promptCombo_->currentIndex());
    torch::Tensor v;
    if (dictionaryPath_.isEmpty()) {
        v = promptValue(*snapshot_->model, snapshot_->result, key_, row);
    } else {  // [batch, seq, width]: the prompt's own positions (left padding cut)
        const PromptSpan span = promptSpan(snapshot_->result.batch, row);
        v = batchValue()[row].narrow(0, span.start, span.length).to(torch::kFloat32).contiguous();
    }
    for (QSpinBox* spin : indexSpins_) v = v.select(0, spin->value());
    if (v.dim() == 1) v = v.unsqueeze(0);
    if (v.dim() == 0) v = v.reshape({1, 1});
    const std::vector<std::string> names = axes();
    const QString valueName = dictionaryPath_.isEmpty() ? QString::fromUtf8(valueInfo(key_.value).name)
                                                        : dictionaryPath_.mid(dictionaryPath_.lastIndexOf('.') + 1);  // features, ...
    const size_t rowAxis = names.size() >= 2 ? names.size() - 2 : 0, colAxis = names.size() - 1;
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    Matrix m;
    m.values = v;
    if (rowAxis >= 1) {
        m.rowTitle = QString::fromStdString(names[rowAxis]);
        if (isTokenAxis(names[rowAxis].c_str())) m.rowLabels = tokens;
    }
    m.columnTitle = QString::fromStdString(names[colAxis]);
    if (isTokenAxis(names[colAxis].c_str())) m.columnLabels = tokens;
    m.valueName = valueName;
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(tr("%1 · prompt %2").arg(path()).arg(row + 1));
}

PlotSource ValuePlotView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = snapshot_ ? path() : QString("value");
    return s;
}

QMap<QString, QString> ValuePlotView::settings() const {
    QMap<QString, QString> s{{"view", "value"}, {"view.prompt", QString::number(std::max(0, promptCombo_->currentIndex()) + 1)}};
    if (snapshot_ && dictionaryPath_.isEmpty()) s["view.value"] = snapshot_->path(key_);
    if (!dictionaryPath_.isEmpty()) s["view.dictionary_value"] = dictionaryPath_;
    for (size_t i = 0; i < indexSpins_.size(); ++i) s[QString("view.index%1").arg(i)] = indexSpins_[i]->prefix() + QString::number(indexSpins_[i]->value());
    return s;
}

}  // namespace nnscope
