// SPDX-License-Identifier: MIT
#include "widgets/views/compareview.h"
#include "widgets/views/numberformat.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"
#include "widgets/plots/heatmapplot.h"

#include <torch/types.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace nnscope {

namespace {

const QColor kBefore(0x9e, 0x9e, 0x9e);
const QColor kAfter(0x21, 0x71, 0xb5);

QCustomPlot* titledPlot(QWidget* parent) {
    auto* plot = new QCustomPlot(parent);
    plot->setInteractions({});
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, QString(), QFont(plot->font().family(), plot->font().pointSize(), QFont::Bold)));
    plot->legend->setVisible(true);
    plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    plot->setMinimumHeight(200);
    followPalette(plot);
    return plot;
}

void setTitle(QCustomPlot* plot, const QString& title) {
    if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) t->setText(title);
}

QTableWidgetItem* numberItem(double v) {
    auto* item = new QTableWidgetItem(probabilityText(v));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setData(Qt::UserRole, v);
    return item;
}

QTableWidget* table(QWidget* parent, const QStringList& headers) {
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->horizontalHeader()->setStretchLastSection(true);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    return t;
}

QString label(const Model& m, int64_t id) {
    if (id < 0) return QObject::tr("no token (not finite)");  // a logit lens position whose logits are not finite
    return m.tokenizer() ? QString::fromStdString(m.tokenizer()->tokenLabel(id)) : QString("#%1").arg(id);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    topKSpin_ = new QSpinBox(content);
    topKSpin_->setRange(1, 50);
    topKSpin_->setValue(10);
    topKSpin_->setToolTip(tr("How many of each run's most probable next tokens to show"));
    logScale_ = new QCheckBox(tr("log scale"), content);
    logScale_->setToolTip(tr("Probabilities on a log axis, so that small ones show beside a dominant token"));
    targetEdit_ = new QLineEdit(content);
    targetEdit_->setPlaceholderText(tr("top token before"));
    targetEdit_->setToolTip(tr("The token whose logit-lens probability is followed across blocks: text of one token or #id"));
    targetEdit_->setMaximumWidth(180);
    summary_ = new QLabel(content);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(new QLabel(tr("Top"), content));
    controls->addWidget(topKSpin_);
    controls->addWidget(logScale_);
    controls->addWidget(new QLabel(tr("Lens target"), content));
    controls->addWidget(targetEdit_);

    barsPlot_ = titledPlot(content);
    beforeBars_ = new QCPBars(barsPlot_->xAxis, barsPlot_->yAxis);
    afterBars_ = new QCPBars(barsPlot_->xAxis, barsPlot_->yAxis);
    auto* group = new QCPBarsGroup(barsPlot_);
    for (auto [bars, colour, name] : {std::tuple{beforeBars_, kBefore, tr("before (unedited)")}, std::tuple{afterBars_, kAfter, tr("after (edited)")}}) {
        bars->setWidth(0.38);
        bars->setPen(Qt::NoPen);
        bars->setBrush(colour);
        bars->setName(name);
        bars->setBarsGroup(group);
    }
    barsPlot_->xAxis->grid()->setVisible(false);
    barsPlot_->xAxis->setTickLabelRotation(90);
    barsPlot_->xAxis->setSubTicks(false);
    barsPlot_->yAxis->setLabel(tr("next-token probability"));
    tokenTable_ = table(content, {tr("token"), tr("before"), tr("after"), tr("after − before")});
    tokenTable_->horizontalHeader()->setStretchLastSection(false);

    lensPlot_ = titledPlot(content);
    lensBefore_ = lensPlot_->addGraph();
    lensAfter_ = lensPlot_->addGraph();
    lensBefore_->setPen(QPen(kBefore, 2));
    lensBefore_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    lensBefore_->setName(tr("before"));
    lensAfter_->setPen(QPen(kAfter, 2));
    lensAfter_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
    lensAfter_->setName(tr("after"));
    lensPlot_->xAxis->setLabel(tr("block"));  // its layer_output through the final norm and lm_head: the title says logit lens
    // the legend top left: the probability of the final prediction rises with the blocks, to the top right
    lensPlot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    lensPlot_->yAxis->setLabel(tr("probability"));
    lensPlot_->yAxis->setRange(0, 1);
    lensTable_ = table(content, {tr("block"), tr("top token before"), tr("p before"), tr("top token after"), tr("p after")});

    auto* top = new QSplitter(Qt::Horizontal, content);
    top->addWidget(barsPlot_);
    top->addWidget(tokenTable_);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    auto* bottom = new QSplitter(Qt::Horizontal, content);
    bottom->addWidget(lensPlot_);
    bottom->addWidget(lensTable_);
    bottom->setStretchFactor(0, 3);
    bottom->setStretchFactor(1, 2);
    auto* rows = new QSplitter(Qt::Vertical, content);
    rows->addWidget(top);
    rows->addWidget(bottom);

    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(summary_);
    layout->addWidget(rows, 1);
    setContent(content);

    connect(topKSpin_, &QSpinBox::valueChanged, this, [this] { refresh(); });
    connect(logScale_, &QCheckBox::toggled, this, [this] { refresh(); });
    connect(this, &TraceView::promptChanged, this, [this] { refresh(); });
    connect(targetEdit_, &QLineEdit::editingFinished, this, [this] { setTarget(targetEdit_->text()); });
    setSnapshot(nullptr);
}

void CompareView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_) {
        showPlaceholder(tr("Run a trace with interventions (the Interventions dock, or right-click a head or a neuron) to "
                           "compare the edited run with the unedited one."));
        return;
    }
    if (!snapshot_->baseline) {
        showPlaceholder(snapshot_->interventions.isEmpty()
                            ? tr("The last trace had no interventions. Add some in the Interventions dock (or right-click a "
                                 "head in the attention view, a neuron in the neuron view) and run again.")
                            : tr("The last trace ran without “Compare with the unedited run” (Interventions dock): nothing "
                                 "to compare it with."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    if (!targetText_.isEmpty()) setTarget(targetText_);  // the same text may be another id on another model
    showContent();
    refresh();
}

void CompareView::setTopK(int k) { topKSpin_->setValue(k); }
void CompareView::setLogScale(bool log) { logScale_->setChecked(log); }

bool CompareView::setTarget(const QString& text) {
    targetText_ = text.trimmed();
    targetEdit_->setText(targetText_);
    if (targetText_.isEmpty()) {
        targetId_ = -1;
        targetEdit_->setStyleSheet(QString());
        refresh();
        return true;
    }
    if (!snapshot_) return false;
    try {
        targetId_ = parseTokenArgument(*snapshot_->model, targetText_.toStdString(), "lens target");
        targetEdit_->setStyleSheet(QString());
        targetEdit_->setToolTip(tr("The token whose logit-lens probability is followed across blocks"));
    } catch (const Error& e) {
        targetEdit_->setStyleSheet("color: #a00010;");
        targetEdit_->setToolTip(QString::fromStdString(e.what()));
        return false;
    }
    refresh();
    return true;
}

void CompareView::refresh() {
    if (!snapshot_ || !snapshot_->baseline) return;
    const TraceSnapshot& after = *snapshot_;
    const TraceSnapshot& before = *snapshot_->baseline;
    const Model& m = *after.model;
    const int row = prompt();
    const int k = topKSpin_->value();
    summary_->setText(tr("<b>Interventions:</b> %1").arg(after.interventions.join("  ·  ").toHtmlEscaped()));

    // Next-token probabilities: the union of both runs' top k, by the larger of the two probabilities.
    const torch::Tensor pb = before.result.nextTokenProbs[row].to(torch::kFloat64);
    const torch::Tensor pa = after.result.nextTokenProbs[row].to(torch::kFloat64);
    std::set<int64_t> pick;
    for (const TraceSnapshot* run : {&before, &after}) {
        const auto top = topK(m, run->result.nextTokenProbs.index({torch::indexing::Slice(row, row + 1)}), k);  // [1][k]
        for (const auto& t : top.at(0)) pick.insert(t.id);
    }
    std::vector<int64_t> ids(pick.begin(), pick.end());
    auto larger = [&](int64_t id) { return std::max(pb[id].item<double>(), pa[id].item<double>()); };
    std::stable_sort(ids.begin(), ids.end(), [&](int64_t a, int64_t b) { return larger(a) > larger(b); });
    ids_.clear();
    QVector<double> keys, vb, va;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    tokenTable_->setRowCount(static_cast<int>(ids.size()));
    for (size_t i = 0; i < ids.size(); ++i) {
        const int64_t id = ids[i];
        const double b = pb[id].item<double>(), a = pa[id].item<double>();
        ids_ << id;
        keys << static_cast<double>(i);
        vb << b;
        va << a;
        ticker->addTick(static_cast<double>(i), label(m, id));
        const int r = static_cast<int>(i);
        tokenTable_->setItem(r, 0, new QTableWidgetItem(label(m, id)));
        tokenTable_->setItem(r, 1, numberItem(b));
        tokenTable_->setItem(r, 2, numberItem(a));
        auto* d = numberItem(a - b);
        d->setForeground(a - b >= 0 ? QColor(0x1a, 0x7f, 0x37) : QColor(0xa0, 0x00, 0x10));
        tokenTable_->setItem(r, 3, d);
    }
    tokenTable_->resizeColumnsToContents();
    beforeBars_->setData(keys, vb, true);
    afterBars_->setData(keys, va, true);
    barsPlot_->xAxis->setTicker(ticker);
    barsPlot_->xAxis->setRange(-0.7, std::max<double>(1, static_cast<double>(ids.size())) - 0.3);
    const double top = std::max(*std::max_element(vb.begin(), vb.end()), *std::max_element(va.begin(), va.end()));
    if (logScale_->isChecked()) {
        double low = 1.0;
        for (double v : vb + va)
            if (v > 0) low = std::min(low, v);
        barsPlot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
        barsPlot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        barsPlot_->yAxis->setRange(low / 3, std::min(1.0, top * 2));
        for (QCPBars* bars : {beforeBars_, afterBars_}) bars->setBaseValue(low / 3);
    } else {
        barsPlot_->yAxis->setScaleType(QCPAxis::stLinear);
        barsPlot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        barsPlot_->yAxis->setRange(0, std::max(0.05, top * 1.1));
        for (QCPBars* bars : {beforeBars_, afterBars_}) bars->setBaseValue(0);
    }
    setTitle(barsPlot_, tr("next token after prompt %1,\nbefore and after").arg(row + 1));
    barsPlot_->replot();

    // The logit lens at the last position: the target's probability per block, and each block's top token.
    // Both runs' lenses (at least their last position) come from the window's worker once this view is shown.
    const int64_t target = targetId_ >= 0 ? targetId_ : pb.argmax().item<int64_t>();
    const TraceSnapshot::LensPtr lensB = before.lens(row, true), lensA = after.lens(row, true);
    lensShown_ = lensB && lensA;
    if (!lensShown_) {
        lensBefore_->data()->clear();
        lensAfter_->data()->clear();
        lensTable_->setRowCount(0);
        setTitle(lensPlot_, tr("logit lens at the last position:\ncomputing…"));
        lensPlot_->replot();
        return;
    }
    const torch::Tensor lb = lensTokenProbs(m, *lensB, row, target);  // [num_layers, length]
    const torch::Tensor la = lensTokenProbs(m, *lensA, row, target);
    const int layers = static_cast<int>(lb.size(0));
    QVector<double> blocks, yb, ya;
    lensTable_->setRowCount(layers);
    const torch::Tensor tb = lensB->topIds[static_cast<size_t>(row)], tpb = lensB->topProbs[static_cast<size_t>(row)];
    const torch::Tensor ta = lensA->topIds[static_cast<size_t>(row)], tpa = lensA->topProbs[static_cast<size_t>(row)];
    for (int l = 0; l < layers; ++l) {
        blocks << l;
        yb << lb[l][-1].item<double>();
        ya << la[l][-1].item<double>();
        lensTable_->setItem(l, 0, new QTableWidgetItem(QString::number(l)));
        lensTable_->setItem(l, 1, new QTableWidgetItem(label(m, tb[l][-1][0].item<int64_t>())));
        lensTable_->setItem(l, 2, numberItem(tpb[l][-1][0].item<double>()));
        lensTable_->setItem(l, 3, new QTableWidgetItem(label(m, ta[l][-1][0].item<int64_t>())));
        lensTable_->setItem(l, 4, numberItem(tpa[l][-1][0].item<double>()));
    }
    lensTable_->resizeColumnsToContents();
    lensBefore_->setData(blocks, yb, true);
    lensAfter_->setData(blocks, ya, true);
    lensPlot_->xAxis->setRange(-0.5, layers - 0.5);
    QSharedPointer<QCPAxisTickerFixed> every(new QCPAxisTickerFixed);
    every->setTickStep(layers > 24 ? 4 : 1);
    lensPlot_->xAxis->setTicker(every);
    setTitle(lensPlot_, tr("logit lens at the last position:\np(“%1”) by block").arg(label(m, target)));
    lensPlot_->replot();
}

PlotSource CompareView::plotSource() const {
    PlotSource s;
    s.plot = barsPlot_;
    s.name = "before-after";
    return s;
}

QMap<QString, QString> CompareView::settings() const {
    return {{"view", "before-after"},
            {"view.prompt", QString::number(prompt() + 1)},
            {"view.top_k", QString::number(topKSpin_->value())},
            {"view.log_scale", logScale_->isChecked() ? "true" : "false"},
            {"view.interventions", snapshot_ ? snapshot_->interventions.join(" ; ") : QString()},
            {"view.lens_target", targetId_ >= 0 ? QString("#%1").arg(targetId_) : QString("top token before")}};
}

}  // namespace nnscope
