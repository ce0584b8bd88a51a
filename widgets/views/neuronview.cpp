// SPDX-License-Identifier: MIT
#include "widgets/views/neuronview.h"

#include "core/analysis/analysis.h"
#include "core/run/edit.h"

#include <torch/types.h>

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace nnscope {

namespace {

QCustomPlot* barPlot(QWidget* parent, QCPBars** bars) {
    auto* plot = new QCustomPlot(parent);
    plot->setInteractions({});
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, QString(), QFont(plot->font().family(), plot->font().pointSize(), QFont::Bold)));
    *bars = new QCPBars(plot->xAxis, plot->yAxis);
    (*bars)->setWidth(0.7);
    (*bars)->setPen(Qt::NoPen);
    (*bars)->setBrush(QColor(0x42, 0x92, 0xc6));
    plot->xAxis->grid()->setVisible(false);
    plot->xAxis->setTickLabelRotation(90);
    plot->xAxis->setSubTicks(false);
    plot->setMinimumHeight(180);
    plot->setAttribute(Qt::WA_NoMousePropagation, false);  // a right-click reaches the view's menu (see HeatmapPlot)
    followPalette(plot);
    return plot;
}

void setPlotTitle(QCustomPlot* plot, const QString& title) {
    if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) t->setText(title);
}

}  // namespace

std::vector<Value> NeuronView::neuronValues(const Model& model) {
    std::vector<Value> out;
    for (int i = 0; i < kNumValues; ++i) {
        const Value v = static_cast<Value>(i);
        if (std::string(valueInfo(v).layout) == "Neurons" && model.hasValue(v)) out.push_back(v);
    }
    return out;
}

NeuronView::NeuronView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    valueCombo_ = new QComboBox(content);
    valueCombo_->setToolTip(tr("The value shown: any value laid out [batch seq neurons] (what down_proj reads by default)"));
    valueCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);  // the row fits 1280 px (#28)
    valueCombo_->setMinimumContentsLength(14);
    blockSpin_ = new QSpinBox(content);
    blockSpin_->setPrefix(tr("layers."));
    topKSpin_ = new QSpinBox(content);
    topKSpin_->setRange(1, 100);
    topKSpin_->setValue(10);
    magnitudeCheck_ = new QCheckBox(tr("rank by |activation|"), content);
    neuronSpin_ = new QSpinBox(content);
    neuronSpin_->setToolTip(tr("The neuron followed across the prompt (click a cell to pick one)"));
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(valueCombo_);
    controls->addWidget(new QLabel(tr("Block"), content));
    controls->addWidget(blockSpin_);
    // a second row for the ranking and the neuron followed: one row of all of them is wider than the view at 1280 px
    auto* ranking = new QHBoxLayout;
    ranking->addWidget(new QLabel(tr("Top"), content));
    ranking->addWidget(topKSpin_);
    ranking->addWidget(magnitudeCheck_);
    ranking->addWidget(new QLabel(tr("Neuron"), content));
    ranking->addWidget(neuronSpin_);
    ranking->addStretch(1);

    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(signedGradient());
    heatmap_->setSymmetricRange(true);
    heatmap_->setMinCellSize(QSize(3, 18));  // an export's cells: every token labelled
    heatmap_->setZoomable(true);             // every neuron fitted to the view, pooled by the largest magnitude (#28)
    heatmap_->setModel(model_);
    logCheck_ = new QCheckBox(tr("Log scale"), content);
    logCheck_->setToolTip(tr("A symmetric log colour scale: linear within a thousandth of the largest |activation|, "
                             "logarithmic beyond, in both signs, so that small activations keep a colour beside large ones"));
    ranking->insertWidget(ranking->count() - 1, logCheck_);
    ranking->insertWidget(ranking->count() - 1, makeFitButton(heatmap_, content));
    topPlot_ = barPlot(content, &topBars_);
    neuronPlot_ = barPlot(content, &neuronBars_);
    neuronBars_->setBrush(QColor(0xd6, 0x60, 0x4d));

    auto* lower = new QSplitter(Qt::Horizontal, content);
    lower->addWidget(topPlot_);
    lower->addWidget(neuronPlot_);
    auto* split = new QSplitter(Qt::Vertical, content);
    split->addWidget(heatmap_);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addLayout(ranking);
    layout->addWidget(split, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace to see the MLP neurons (mlp_neurons, what down_proj reads) of every block."));

    connect(promptCombo_, &QComboBox::currentIndexChanged, this, [this] {
        token_ = -1;
        refresh();
    });
    connect(valueCombo_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index < 0) return;
        value_ = static_cast<Value>(valueCombo_->itemData(index).toInt());
        refresh();
    });
    connect(blockSpin_, &QSpinBox::valueChanged, this, [this](int block) {
        refresh();
        emit blockChanged(block);
    });
    connect(logCheck_, &QCheckBox::toggled, this, [this](bool on) { heatmap_->setLogScale(on, kSymLogThreshold); });
    connect(topKSpin_, &QSpinBox::valueChanged, this, &NeuronView::refreshDetails);
    connect(magnitudeCheck_, &QCheckBox::toggled, this, &NeuronView::refreshDetails);
    connect(neuronSpin_, &QSpinBox::valueChanged, this, [this] {
        neuronPicked_ = true;
        refreshDetails();
    });
    connect(heatmap_, &HeatmapPlot::cellClicked, this, [this](int row, int column) {
        token_ = row;
        setNeuron(column);
        refreshDetails();
    });
}

void NeuronView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_) {  // a new model
        neuronPicked_ = false;
        model_->setMatrix({});
        showPlaceholder(tr("Run a trace to see the MLP neurons (mlp_neurons, what down_proj reads) of every block."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    fillValueCombo();
    {
        const QSignalBlocker b(blockSpin_), n(neuronSpin_);
        blockSpin_->setRange(0, snapshot_->numLayers() - 1);
        neuronSpin_->setRange(0, static_cast<int>(snapshot_->model->config().intermediateSize) - 1);
    }
    token_ = -1;
    showContent();
    refresh();
}

void NeuronView::fillValueCombo() {
    const QSignalBlocker b(valueCombo_);
    valueCombo_->clear();
    const std::vector<Value> values = neuronValues(*snapshot_->model);
    if (std::find(values.begin(), values.end(), value_) == values.end()) value_ = Value::MlpNeurons;
    for (Value v : values) {
        // the name as a path inside the block: "mlp.mlp_neurons", "mlp.up_proj.output"
        const QString path = snapshot_->path({v, 0});
        valueCombo_->addItem(path.mid(path.indexOf('.', QString("layers.").size()) + 1), static_cast<int>(v));
        if (v == value_) valueCombo_->setCurrentIndex(valueCombo_->count() - 1);
    }
}

void NeuronView::valuesAdded(SnapshotPtr snapshot) {
    const bool had = snapshot_ && snapshot_->result.value({value_, block()}).defined();
    snapshot_ = std::move(snapshot);
    if (!had) refresh();
}

bool NeuronView::setValue(Value v) {
    if (!snapshot_) {
        if (std::string(valueInfo(v).layout) != "Neurons") return false;
        value_ = v;
        return true;
    }
    const int index = valueCombo_->findData(static_cast<int>(v));
    if (index < 0) return false;
    valueCombo_->setCurrentIndex(index);
    value_ = v;
    refresh();
    return true;
}

void NeuronView::setBlock(int block) {
    if (block != blockSpin_->value()) blockSpin_->setValue(block);
}

void NeuronView::setTopK(int k) { topKSpin_->setValue(k); }
void NeuronView::setToken(int position) {
    token_ = position;
    refreshDetails();
}
void NeuronView::setNeuron(int neuron) { neuronSpin_->setValue(neuron); }
int NeuronView::block() const { return blockSpin_->value(); }
int NeuronView::neuron() const { return neuronSpin_->value(); }

void NeuronView::refresh() {
    if (!snapshot_) return;
    if (const QString why = missingAtBlock(value_, block(), tr("The neuron view")); !why.isEmpty()) {
        model_->setMatrix({});
        return showPlaceholder(why);
    }
    showContent();
    Matrix m;
    m.values = promptValue(*snapshot_->model, snapshot_->result, {value_, block()}, prompt());
    m.rowLabels = snapshot_->tokens.at(static_cast<size_t>(prompt()));
    m.rowTitle = tr("token");
    m.columnTitle = tr("neuron");
    m.valueName = tr("activation");
    if (token_ < 0 || token_ >= m.values.size(0)) token_ = static_cast<int>(m.values.size(0)) - 1;  // the last token
    {
        // follow the selected token's strongest neuron until one is picked by hand
        const QSignalBlocker b(neuronSpin_);
        if (!neuronPicked_) neuronSpin_->setValue(static_cast<int>(topNeurons(m.values, token_, 1).front().neuron));
    }
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(tr("%1 · prompt %2").arg(snapshot_->path({value_, block()})).arg(prompt() + 1));
    refreshDetails();
}

void NeuronView::refreshDetails() {
    if (!snapshot_ || model_->rowCount() == 0) return;
    const torch::Tensor& acts = model_->matrix().values;
    const QStringList& tokens = model_->matrix().rowLabels;
    heatmap_->setMarkedCell(token_, -1);
    heatmap_->ensureVisible(token_, heatmap_->visibleCells().x());

    // the top-k neurons of the selected token
    const auto top = topNeurons(acts, token_, topKSpin_->value(), magnitudeCheck_->isChecked());
    QVector<double> keys, values;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    topIds_.clear();
    for (size_t i = 0; i < top.size(); ++i) {
        keys << static_cast<double>(i);
        values << top[i].activation;
        topIds_ << top[i].neuron;
        ticker->addTick(static_cast<double>(i), QString::number(top[i].neuron));
    }
    topBars_->setData(keys, values, true);
    topPlot_->xAxis->setTicker(ticker);
    topPlot_->xAxis->setLabel(tr("neuron"));
    topPlot_->yAxis->setLabel(tr("activation"));
    topPlot_->xAxis->setRange(-0.7, std::max<double>(1, top.size()) - 0.3);
    topPlot_->yAxis->rescale();
    topPlot_->yAxis->scaleRange(1.1, 0);
    setPlotTitle(topPlot_, tr("top %1 neurons at token %2 “%3”").arg(top.size()).arg(token_).arg(tokens.value(token_)));
    topPlot_->replot();

    // one neuron across the prompt
    const int n = neuron();
    QVector<double> positions, acts1;
    // the tokens under the bars, thinned to what fits (at 300 tokens they printed on top of each other)
    QSharedPointer<TokenTicker> tokTicker(new TokenTicker(neuronPlot_->xAxis));
    QStringList tickLabels;
    const torch::Tensor column = acts.index({torch::indexing::Slice(), n}).to(torch::kFloat64).contiguous();
    for (int p = 0; p < acts.size(0); ++p) {
        positions << p;
        acts1 << column.data_ptr<double>()[p];
        tickLabels << tokens.value(p);
    }
    tokTicker->setLabels(tickLabels);
    neuronBars_->setData(positions, acts1, true);
    neuronPlot_->xAxis->setTicker(tokTicker);
    neuronPlot_->xAxis->setRange(-0.7, acts.size(0) - 0.3);
    neuronPlot_->yAxis->rescale();
    neuronPlot_->yAxis->scaleRange(1.15);
    neuronPlot_->yAxis->setLabel(tr("activation"));
    setPlotTitle(neuronPlot_, tr("neuron %1 across the prompt").arg(n));
    neuronPlot_->replot();
}

PlotSource NeuronView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = QString("neurons-layers.%1").arg(block());
    if (value_ != Value::MlpNeurons) s.name += "-" + QString(valueInfo(value_).name);
    return s;
}

QMap<QString, QString> NeuronView::settings() const {
    return {{"view", "neurons"},
            {"view.value", snapshot_ ? snapshot_->path({value_, block()}) : QString()},
            {"view.block", QString::number(block())},
            {"view.prompt", QString::number(prompt() + 1)},
            {"view.token", QString::number(token_)},
            {"view.neuron", QString::number(neuron())},
            {"view.top_k", QString::number(topKSpin_->value())},
            {"view.log_scale", logCheck_->isChecked() ? "true" : "false"}};
}

void NeuronView::setLogScale(bool on) { logCheck_->setChecked(on); }

QVariantMap NeuronView::choices() const {
    return {{"logScale", logCheck_->isChecked()}, {"byMagnitude", magnitudeCheck_->isChecked()}};
}

void NeuronView::restoreChoices(const QVariantMap& choices) {
    logCheck_->setChecked(choices.value("logScale", logCheck_->isChecked()).toBool());
    magnitudeCheck_->setChecked(choices.value("byMagnitude", magnitudeCheck_->isChecked()).toBool());
}

QVector<InterventionOffer> NeuronView::interventionOffers() const {
    QVector<InterventionOffer> out;
    if (!snapshot_) return out;
    const Model& m = *snapshot_->model;
    const int b = block();
    const int n = neuron();
    if (value_ == Value::MlpNeurons && n >= 0 && n < m.config().intermediateSize) {  // the edits act on mlp_neurons
        out.push_back({tr("Zero neuron %1 of block %2").arg(n).arg(b), QString::fromStdString(neuronAblationEdit(m, b, n, false))});
        out.push_back({tr("Mean-ablate neuron %1 of block %2").arg(n).arg(b), QString::fromStdString(neuronAblationEdit(m, b, n, true))});
    }
    out.push_back({tr("Skip block %1").arg(b), QString("skip %1").arg(b)});
    return out;
}

}  // namespace nnscope
