// SPDX-License-Identifier: MIT
#include "widgets/views/attentionview.h"

#include "core/analysis/analysis.h"
#include "core/run/edit.h"

#include <torch/types.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace nnscope {

AttentionView::AttentionView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    blockSpin_ = new QSpinBox(content);
    blockSpin_->setPrefix(tr("layers."));
    headCombo_ = new QComboBox(content);
    headCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    logCheck_ = new QCheckBox(tr("Log scale"), content);
    logCheck_->setToolTip(tr("Colour the probabilities on a logarithmic scale from 10⁻⁵ to 1 (smaller ones, and the masked "
                             "future keys, take the lowest colour), to see the small weights of a long prompt"));
    fitButton_ = new QToolButton(content);
    fitButton_->setText(tr("Fit"));
    fitButton_->setToolTip(tr("Show the whole pattern (double-click the plot, or Home). Wheel: zoom · drag: pan · "
                              "Shift+drag: zoom to a rectangle"));
    fitButton_->setEnabled(false);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(new QLabel(tr("Block"), content));
    controls->addWidget(blockSpin_);
    controls->addWidget(new QLabel(tr("Head"), content));
    controls->addWidget(headCombo_);
    controls->addWidget(logCheck_);
    controls->addWidget(fitButton_);

    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(probabilityGradient());
    heatmap_->setDataRange(0, 1);
    heatmap_->setMinCellSize(QSize(18, 18));  // what an export gives each cell
    heatmap_->setZoomable(true);              // the whole pattern fitted to the view, at any length
    heatmap_->setModel(model_);
    grid_ = new HeadGridPlot(content);
    plots_ = new QStackedWidget(content);
    plots_->addWidget(heatmap_);
    plots_->addWidget(grid_);

    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addWidget(plots_, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace (Trace ▸ Run, or the Run button below) to see the attention patterns."));

    connect(promptCombo_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
    connect(headCombo_, &QComboBox::currentIndexChanged, this, &AttentionView::refresh);
    connect(headCombo_, &QComboBox::currentIndexChanged, this, [this] {
        if (headCombo_->currentIndex() >= 0) emit headChanged(head());
    });
    connect(blockSpin_, &QSpinBox::valueChanged, this, [this](int block) {
        refresh();
        emit blockChanged(block);
    });
    connect(grid_, &HeadGridPlot::headClicked, this, &AttentionView::setHead);
    connect(logCheck_, &QCheckBox::toggled, this, [this](bool on) {
        heatmap_->setLogScale(on, kLogFloor);
        grid_->setLogScale(on, kLogFloor);  // the grid of every head too (#28: it stayed linear)
    });
    connect(fitButton_, &QToolButton::clicked, this, [this] {
        if (plots_->currentWidget() == grid_) grid_->fit();
        else heatmap_->resetView();
    });
    connect(heatmap_, &HeatmapPlot::viewChanged, this, [this] { fitButton_->setEnabled(heatmap_->isZoomed() || head() < 0); });
}

void AttentionView::setLogScale(bool on) { logCheck_->setChecked(on); }
bool AttentionView::logScale() const { return logCheck_->isChecked(); }

void AttentionView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_) {
        model_->setMatrix({});
        showPlaceholder(tr("Run a trace (Trace ▸ Run, or the Run button below) to see the attention patterns."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    {
        const QSignalBlocker b(blockSpin_), h(headCombo_);
        blockSpin_->setRange(0, snapshot_->numLayers() - 1);
        const int keep = headCombo_->currentIndex();
        headCombo_->clear();
        const int heads = static_cast<int>(snapshot_->model->config().numHeads);
        for (int h = 0; h < heads; ++h) headCombo_->addItem(tr("head %1").arg(h), h);
        headCombo_->addItem(tr("all heads (grid)"), -1);
        headCombo_->setCurrentIndex(keep >= 0 && keep < headCombo_->count() ? keep : 0);
    }
    showContent();
    refresh();
}

void AttentionView::setBlock(int block) {
    if (block != blockSpin_->value()) blockSpin_->setValue(block);
}

void AttentionView::setHead(int head) {
    const int index = headCombo_->findData(head);
    if (index >= 0) headCombo_->setCurrentIndex(index);
}

int AttentionView::block() const { return blockSpin_->value(); }
int AttentionView::head() const { return headCombo_->currentData().toInt(); }

void AttentionView::refresh() {
    if (!snapshot_) return;
    if (const QString why = missingAtBlock(Value::AttentionProbabilities, block(), tr("The attention view")); !why.isEmpty()) {
        model_->setMatrix({});
        return showPlaceholder(why);
    }
    showContent();
    const torch::Tensor pattern = attentionPattern(*snapshot_->model, snapshot_->result, block(), prompt());
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(prompt()));
    const QString title = tr("%1 · prompt %2").arg(snapshot_->path({Value::AttentionProbabilities, block()})).arg(prompt() + 1);
    if (head() < 0) {
        grid_->setPattern(pattern, tokens);
        plots_->setCurrentWidget(grid_);
        fitButton_->setEnabled(true);  // fits the tiles to the room again
        return;
    }
    Matrix m;
    m.values = pattern.index({head()});
    m.rowLabels = m.columnLabels = tokens;
    m.rowTitle = tr("query");
    m.columnTitle = tr("key");
    m.valueName = tr("attention probability");
    if (snapshot_->model->family().attentionSinks) {
        // gpt-oss: the row's share that went to the head's learned sink (transformers drops that column after the
        // softmax, so the rows sum to less than 1): shown as one more column, on the same colour scale
        const torch::Tensor share = attentionSinkShare(m.values).unsqueeze(-1);
        m.values = torch::cat({m.values.to(torch::kFloat32), share}, -1);
        m.columnLabels << tr("sink");
        m.valueName = tr("attention probability (column \"sink\": the head's sink share, 1 - the row's sum)");
    }
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(title + tr(" · head %1").arg(head()));
    plots_->setCurrentWidget(heatmap_);
    fitButton_->setEnabled(heatmap_->isZoomed());
}

PlotSource AttentionView::plotSource() const {
    PlotSource s;
    if (head() < 0) {
        s.plot = grid_->plot();
        s.size = grid_->plot()->size();
    } else {
        s.plot = heatmap_->plot();
        HeatmapPlot* h = heatmap_;
        s.fullView = [h](bool full) { h->setFullView(full); };
        s.size = heatmap_->fullViewSize();
    }
    s.name = head() < 0 ? QString("attention-layers.%1-all-heads").arg(block()) : QString("attention-layers.%1-head%2").arg(block()).arg(head());
    return s;
}

QMap<QString, QString> AttentionView::settings() const {
    return {{"view", "attention"},
            {"view.value", snapshot_ ? snapshot_->path({Value::AttentionProbabilities, block()}) : QString()},
            {"view.block", QString::number(block())},
            {"view.head", head() < 0 ? QString("all") : QString::number(head())},
            {"view.scale", logScale() ? QString("log") : QString("linear")},
            {"view.prompt", QString::number(prompt() + 1)}};
}

QVector<InterventionOffer> AttentionView::interventionOffers() const {
    QVector<InterventionOffer> out;
    if (!snapshot_) return out;
    const Model& m = *snapshot_->model;
    const int b = block();
    const int h = head();
    std::vector<int> heads;
    if (h >= 0)
        heads.push_back(h);
    else
        for (int k = 0; k < m.config().numHeads; ++k) heads.push_back(k);
    for (int k : heads)
        out.push_back({tr("Zero-ablate head %1 of block %2").arg(k).arg(b), QString::fromStdString(headAblationEdit(m, b, k, false))});
    if (h >= 0) {
        out.push_back({tr("Mean-ablate head %1 of block %2").arg(h).arg(b), QString::fromStdString(headAblationEdit(m, b, h, true))});
        out.push_back({tr("Double head %1's queries in block %2").arg(h).arg(b),
                       QString::fromStdString(valuePath(m.family(), {Value::AttentionQueries, b})) + QString("[:, %1] *= 2").arg(h)});
    }
    out.push_back({tr("Skip block %1").arg(b), QString("skip %1").arg(b)});
    return out;
}

}  // namespace nnscope
