// SPDX-License-Identifier: MIT
#include "logitlensview.h"

#include "core/analysis.h"
#include "core/error.h"

#include <torch/types.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace nnscope {

LogitLensView::LogitLensView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    targetEdit_ = new QLineEdit(content);
    targetEdit_->setPlaceholderText(tr("token text or #id"));
    targetEdit_->setToolTip(tr("The token whose probability is followed across blocks: its text (the first token it "
                               "encodes to) or its id as #id"));
    targetLabel_ = new QLabel(content);
    positionSpin_ = new QSpinBox(content);
    positionSpin_->setToolTip(tr("The position whose target probability is plotted (click a cell to pick one)"));
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(new QLabel(tr("Target"), content));
    controls->addWidget(targetEdit_);
    controls->addWidget(targetLabel_);
    controls->addWidget(new QLabel(tr("Position"), content));
    controls->addWidget(positionSpin_);

    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(probabilityGradient());
    heatmap_->setDataRange(0, 1);
    heatmap_->setMinCellSize(QSize(50, 24));  // room for the token written in each cell
    heatmap_->setModel(model_);

    targetPlot_ = new QCustomPlot(content);
    targetPlot_->setInteractions({});
    targetPlot_->plotLayout()->insertRow(0);
    targetPlot_->plotLayout()->addElement(0, 0, new QCPTextElement(targetPlot_, QString(), QFont(font().family(), font().pointSize(), QFont::Bold)));
    targetGraph_ = targetPlot_->addGraph();
    targetGraph_->setPen(QPen(QColor(0xd6, 0x60, 0x4d), 2));
    targetGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 7));
    targetPlot_->xAxis->setLabel(tr("block"));
    targetPlot_->yAxis->setLabel(tr("probability"));
    targetPlot_->yAxis->setRange(0, 1.02);
    targetPlot_->setMinimumHeight(170);

    auto* split = new QSplitter(Qt::Vertical, content);
    split->addWidget(heatmap_);
    split->addWidget(targetPlot_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addWidget(split, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace to see the logit lens: each block's output read through the final norm and lm_head."));

    connect(promptCombo_, &QComboBox::currentIndexChanged, this, &LogitLensView::refresh);
    connect(targetEdit_, &QLineEdit::editingFinished, this, [this] {
        if (targetEdit_->text() != shownTarget_) setTarget(targetEdit_->text());
    });
    connect(positionSpin_, &QSpinBox::valueChanged, this, [this] {
        positionPicked_ = true;
        refreshTarget();
    });
    connect(heatmap_, &HeatmapPlot::cellClicked, this, [this](int, int column) { setPosition(column); });
}

void LogitLensView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_) {  // a new model: its vocabulary has other ids
        targetId_ = -1;
        model_->setMatrix({});
        showPlaceholder(tr("Run a trace to see the logit lens: each block's output read through the final norm and lm_head."));
        return;
    }
    if (!snapshot_->lensMissing.isEmpty()) {  // a trace file without every layer_output, or without the weights
        const QString why = snapshot_->lensMissing;
        snapshot_.reset();
        model_->setMatrix({});
        showPlaceholder(why);
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    positionPicked_ = false;
    if (targetId_ < 0 || targetId_ >= snapshot_->model->config().vocabSize) {
        // default target: the model's own most probable next token after the first prompt
        targetId_ = snapshot_->result.nextTokenProbs.defined() ? snapshot_->result.nextTokenProbs.index({0}).argmax().item<int64_t>() : 0;
    }
    showContent();
    refresh();
}

bool LogitLensView::setTarget(const QString& text) {
    if (!snapshot_) return false;
    const Model& m = *snapshot_->model;
    QString t = text.trimmed();
    int64_t id = -1;
    bool isNumber = false;
    const QString digits = t.startsWith('#') ? t.mid(1) : t;
    const qint64 n = digits.toLongLong(&isNumber);
    if (isNumber && (t.startsWith('#') || !m.tokenizer())) {
        id = n;
    } else if (m.tokenizer() && !t.isEmpty()) {
        try {
            const auto ids = m.tokenizer()->encode(text.toStdString(), false);
            if (!ids.empty()) id = ids.front();
        } catch (const Error& e) {
            targetLabel_->setText(QString::fromStdString(e.what()));
            return false;
        }
    }
    if (id < 0 || id >= m.config().vocabSize) {
        targetLabel_->setText(tr("<span style='color:#b00'>no such token</span>"));
        return false;
    }
    targetId_ = id;
    refreshTarget();
    refresh();  // the tooltips name the target
    return true;
}

void LogitLensView::setPosition(int position) { positionSpin_->setValue(position); }
int LogitLensView::position() const { return positionSpin_->value(); }

void LogitLensView::refresh() {
    if (!snapshot_) return;
    const int row = prompt();
    const LogitLens& lens = snapshot_->lens;
    const torch::Tensor ids = lens.topIds.at(static_cast<size_t>(row));      // [L, len, k]
    const torch::Tensor probs = lens.topProbs.at(static_cast<size_t>(row));  // [L, len, k]
    const torch::Tensor target = lensTokenProbs(*snapshot_->model, lens, row, targetId_);
    const Tokenizer* tok = snapshot_->model->tokenizer();
    auto label = [tok](int64_t id) { return tok ? QString::fromStdString(tok->tokenLabel(id)) : QString("#%1").arg(id); };
    const QStringList tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    const QString targetLabel = label(targetId_);

    Matrix m;
    m.values = probs.index({torch::indexing::Slice(), torch::indexing::Slice(), 0}).contiguous();
    for (int i = 0; i < lens.numLayers; ++i) m.rowLabels << QString("layers.%1").arg(i);
    m.columnLabels = tokens;
    m.rowTitle = tr("block (layer_output)");
    m.columnTitle = tr("position");
    m.valueName = tr("top token probability");
    const auto idsA = ids.accessor<int64_t, 3>();
    const auto probsA = probs.accessor<float, 3>();
    const auto targetA = target.accessor<float, 2>();
    std::vector<QString> topLabels;  // labels of the top token of every cell, made once
    for (int i = 0; i < ids.size(0); ++i)
        for (int p = 0; p < ids.size(1); ++p) topLabels.push_back(label(idsA[i][p][0]));
    const int len = static_cast<int>(ids.size(1));
    m.cellText = [topLabels, len](int r, int c) { return topLabels[static_cast<size_t>(r) * len + c]; };
    // the tooltip lists the k most probable tokens and the target's probability
    std::vector<QString> tips;
    for (int i = 0; i < ids.size(0); ++i)
        for (int p = 0; p < ids.size(1); ++p) {
            QString s = tr("layers.%1 · position %2 “%3”").arg(i).arg(p).arg(tokens.value(p));
            for (int j = 0; j < ids.size(2); ++j)
                s += QString("\n%1. %2  %3").arg(j + 1).arg(label(idsA[i][p][j])).arg(probsA[i][p][j], 0, 'f', 4);
            s += tr("\ntarget %1: %2").arg(targetLabel).arg(targetA[i][p], 0, 'g', 4);
            tips.push_back(s);
        }
    m.toolTip = [tips, len](int r, int c) { return tips[static_cast<size_t>(r) * len + c]; };
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(tr("logit lens · prompt %1").arg(row + 1));
    {
        const QSignalBlocker b(positionSpin_);
        positionSpin_->setRange(0, len - 1);
        if (!positionPicked_) positionSpin_->setValue(len - 1);  // the position that predicts the next token
    }
    shownTarget_ = targetLabel;
    targetEdit_->setText(targetLabel);
    refreshTarget();
}

void LogitLensView::refreshTarget() {
    if (!snapshot_ || targetId_ < 0) return;
    const int row = prompt(), pos = position();
    const torch::Tensor target = lensTokenProbs(*snapshot_->model, snapshot_->lens, row, targetId_);  // [L, len]
    if (pos < 0 || pos >= target.size(1)) return;
    QVector<double> blocks, probs;
    for (int i = 0; i < target.size(0); ++i) {
        blocks << i;
        probs << target[i][pos].item<double>();
    }
    targetGraph_->setData(blocks, probs, true);
    targetPlot_->xAxis->setRange(-0.3, target.size(0) - 0.7);
    const Tokenizer* tok = snapshot_->model->tokenizer();
    const QString label = tok ? QString::fromStdString(tok->tokenLabel(targetId_)) : QString("#%1").arg(targetId_);
    targetLabel_->setText(QString("#%1").arg(targetId_));
    heatmap_->setMarkedCell(-1, pos);
    heatmap_->ensureVisible(0, pos);
    if (auto* t = qobject_cast<QCPTextElement*>(targetPlot_->plotLayout()->element(0, 0)))
        t->setText(tr("p(“%1”) across blocks at position %2 “%3”").arg(label).arg(pos).arg(snapshot_->tokens.at(static_cast<size_t>(row)).value(pos)));
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1);
    targetPlot_->xAxis->setTicker(ticker);
    targetPlot_->replot();
}

PlotSource LogitLensView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = "logit-lens";
    return s;
}

QMap<QString, QString> LogitLensView::settings() const {
    return {{"view", "logit lens"},
            {"view.prompt", QString::number(prompt() + 1)},
            {"view.target", QString("#%1").arg(targetId_)},
            {"view.position", QString::number(position())}};
}

}  // namespace nnscope
