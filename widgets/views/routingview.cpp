// SPDX-License-Identifier: MIT
#include "widgets/views/routingview.h"

#include "core/model/error.h"

#include <qcustomplot.h>
#include <torch/types.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <cmath>

namespace nnscope {
namespace {

QString tokenLabel(const Model& m, int64_t id) {
    return m.tokenizer() ? QString::fromStdString(m.tokenizer()->tokenLabel(id)) : QString("#%1").arg(id);
}

/// A routing weight in a grid cell, two decimals without the leading zero (".65"): room for more experts per cell.
QString weightText(double w) {
    QString s = QString::number(w, 'f', 2);
    if (s.startsWith("0.")) s.remove(0, 1);
    return s;
}

QString noExpertsText() {
    return RoutingView::tr("Run a trace: this view shows which experts of a mixture of experts each token is routed to, "
                           "how much of the prompt each expert takes, and what one expert writes.");
}

}  // namespace

QColor RoutingView::expertColour(int64_t e) {
    // light, distinct hues (the golden angle apart, so that neighbouring ids differ most), in two lightnesses so that
    // ids further apart than the hues repeat still differ; every one light enough for black text
    const double hue = std::fmod(static_cast<double>(e) * 137.508, 360.0);
    return QColor::fromHslF(hue / 360.0, 0.62, (e / 8) % 2 ? 0.62 : 0.74);
}

RoutingView::RoutingView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    position_ = new QSpinBox(content);
    position_->setPrefix(tr("position "));
    position_->setToolTip(tr("The prompt position whose next-token logit the experts' attribution splits (click a cell to pick one)"));
    target_ = new QLineEdit(content);
    target_->setPlaceholderText(tr("target token (empty: the top prediction)"));
    target_->setToolTip(tr("The token whose logit is split among the experts: text of one token, or #ID"));
    loadKind_ = new QComboBox(content);
    loadKind_->addItems({tr("load: tokens"), tr("load: routing weight")});
    loadKind_->setToolTip(tr("The load map: how many tokens chose each expert, or the routing weight it got over the prompt"));
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // a token such as "<s>" is text

    gridModel_ = new MatrixModel(this);
    grid_ = new HeatmapPlot(content);
    grid_->setMinCellSize(QSize(64, 22));  // an export's cells: room for the top experts and their weights
    grid_->setZoomable(true);              // every block and position fitted to the view
    grid_->setModel(gridModel_);
    loadModel_ = new MatrixModel(this);
    load_ = new HeatmapPlot(content);
    load_->setGradient(probabilityGradient());
    load_->setMinCellSize(QSize(26, 22));
    load_->setZoomable(true);
    load_->setModel(loadModel_);

    normPlot_ = new QCustomPlot(content);
    normPlot_->setInteractions({});
    normPlot_->plotLayout()->insertRow(0);
    normPlot_->plotLayout()->addElement(0, 0, new QCPTextElement(normPlot_, QString(), QFont(font().family(), font().pointSize(), QFont::Bold)));
    normBars_ = new QCPBars(normPlot_->xAxis, normPlot_->yAxis);
    normBars_->setWidth(0.7);
    normBars_->setPen(Qt::NoPen);
    normPlot_->xAxis->grid()->setVisible(false);
    normPlot_->xAxis->setSubTicks(false);
    normPlot_->xAxis->setTickLabelRotation(60);
    normPlot_->yAxis->setLabel(tr("norm (0: not chosen)"));
    normPlot_->setToolTip(tr("The L2 norm of what the expert adds to the MLP's output at each position, ‖weight · output‖; "
                             "0 where the token did not choose it"));
    normPlot_->setMinimumHeight(130);
    followPalette(normPlot_);
    details_ = new QTextBrowser(content);
    details_->setMinimumWidth(240);
    forbid_ = new QPushButton(tr("Forbid this expert"), content);
    forbid_->setToolTip(tr("Add the intervention that sets the expert's router logit to −inf at every position (no token "
                           "chooses it; each takes its next expert) to the Interventions dock; Run traces again with it"));
    forbid_->setEnabled(false);

    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(position_);
    controls->addWidget(target_, 1);
    controls->addWidget(loadKind_);
    controls->addWidget(makeFitButton(grid_, content));
    // the grid across the whole width (blocks x positions is the widest); under it the expert's details beside its load
    // map and what it writes at each position
    auto* side = new QWidget(content);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    sideLayout->addWidget(details_, 1);
    sideLayout->addWidget(forbid_);
    auto* plots = new QSplitter(Qt::Vertical, content);
    plots->addWidget(load_);
    plots->addWidget(normPlot_);
    plots->setSizes({250, 250});
    auto* lower = new QSplitter(Qt::Horizontal, content);
    lower->addWidget(side);
    lower->addWidget(plots);
    lower->setStretchFactor(0, 2);
    lower->setStretchFactor(1, 3);
    lower->setSizes({400, 600});
    auto* vertical = new QSplitter(Qt::Vertical, content);
    vertical->addWidget(grid_);
    vertical->addWidget(lower);
    vertical->setStretchFactor(0, 1);
    vertical->setStretchFactor(1, 1);
    vertical->setSizes({450, 550});
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(vertical, 1);
    setContent(content);
    showPlaceholder(noExpertsText());

    connect(this, &TraceView::promptChanged, this, [this] {
        if (!snapshot_ || !routing_) return;
        dropAnalysis();
        refreshMaps();
        const QSignalBlocker block(position_);
        position_->setRange(0, static_cast<int>(routing_->length) - 1);
        position_->setValue(static_cast<int>(routing_->length) - 1);
        refreshWhenShown([this] { refreshAttribution(); });
    });
    connect(position_, &QSpinBox::valueChanged, this, [this] {
        showExpert();
        refreshAttribution();
    });
    connect(target_, &QLineEdit::editingFinished, this, [this] { refreshAttribution(); });
    connect(loadKind_, &QComboBox::currentIndexChanged, this, [this] { refreshMaps(); });
    connect(grid_, &HeatmapPlot::cellClicked, this, [this](int row, int column) {
        if (!routing_ || row < 0 || row >= static_cast<int>(routing_->blocks.size()) || column < 0 || column >= routing_->length) return;
        const int64_t top = routing_->indices[row][column][0].item<int64_t>();
        block_ = routing_->blocks[static_cast<size_t>(row)];
        expert_ = top;
        setPosition(column);  // shows the expert, and its attribution there
    });
    connect(load_, &HeatmapPlot::cellClicked, this, [this](int row, int column) {
        if (!routing_ || row < 0 || row >= static_cast<int>(routing_->blocks.size())) return;
        selectExpert(routing_->blocks[static_cast<size_t>(row)], column);
    });
    connect(forbid_, &QPushButton::clicked, this, [this] {
        const QVector<InterventionOffer> offers = interventionOffers();
        if (!offers.isEmpty()) emit interventionRequested(offers.front().text);
    });
}

void RoutingView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    dropAnalysis();  // what was under way belongs to the last snapshot
    routing_.reset();
    attribution_.reset();
    if (!snapshot_) {
        block_ = -1;
        expert_ = -1;
        return showPlaceholder(noExpertsText());
    }
    const Model& m = *snapshot_->model;
    std::string why;
    if (!hasExperts(m, &why)) {
        block_ = -1;
        expert_ = -1;
        return showPlaceholder(tr("No routing to show: %1").arg(QString::fromStdString(why)));
    }
    std::vector<ValueKey> keys;
    for (const ValueKey& k : routingValueKeys(m))
        if (isMixtureValue(k.value)) keys.push_back(k);
    if (const QString missing = snapshot_->missing(keys, tr("The Routing view")); !missing.isEmpty()) return showPlaceholder(missing);
    fillPromptCombo(promptCombo_, *snapshot_);
    showContent();
    refreshMaps();
    if (!routing_) return;
    {
        const QSignalBlocker block(position_);
        position_->setRange(0, static_cast<int>(routing_->length) - 1);
        position_->setValue(static_cast<int>(routing_->length) - 1);
    }
    showExpert();
    refreshWhenShown([this] { refreshAttribution(); });  // at a large vocabulary a visible pause: not for a hidden tab
}

void RoutingView::refreshMaps() {
    if (!snapshot_) return;
    const Model& m = *snapshot_->model;
    const int row = prompt();
    try {
        routing_ = expertRouting(m, snapshot_->result, row);
    } catch (const std::exception& e) {
        routing_.reset();
        gridModel_->setMatrix({});
        loadModel_->setMatrix({});
        status_->setStyleSheet("color: #a00010;");
        status_->setText(QString::fromStdString(e.what()));
        return;
    }
    const ExpertRouting& r = *routing_;
    {
        const QSignalBlocker block(position_);  // a shorter prompt: the position shown stays inside it
        position_->setRange(0, static_cast<int>(r.length) - 1);
    }
    const QStringList tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    const int64_t E = r.numExperts, K = r.topK, B = static_cast<int64_t>(r.blocks.size());
    // keep the expert picked across traces and prompts (a forbidden one shows its empty load); else the last block's
    // choice at the last position
    if (r.rowOf(block_) < 0 || expert_ < 0 || expert_ >= E) {
        block_ = r.blocks.back();
        expert_ = r.indices[B - 1][r.length - 1][0].item<int64_t>();
    }
    QStringList blockLabels;
    for (int b : r.blocks) blockLabels << QString("layers.%1").arg(b);
    QList<QColor> colours;
    QStringList names;
    for (int64_t e = 0; e < E; ++e) {
        colours << expertColour(e);
        names << QString::number(e);
    }

    const torch::Tensor idx = r.indices.contiguous(), w = r.weights.contiguous();
    Matrix g;
    g.values = (idx.select(2, 0).to(torch::kFloat32) + 0.5).contiguous();  // category = the top expert's id
    g.rowLabels = blockLabels;
    g.columnLabels = tokens;
    g.rowTitle = tr("block (with experts)");
    g.columnTitle = tr("position");
    g.valueName = tr("top expert");
    const int64_t len = r.length;
    auto at = [len, K](int b, int t, int j) { return (static_cast<size_t>(b) * len + t) * K + j; };
    g.cellText = [idx, w, at, K](int b, int t) {
        QStringList parts;
        for (int j = 0; j < K; ++j)
            parts << QString("%1:%2").arg(idx.data_ptr<int64_t>()[at(b, t, j)]).arg(weightText(w.data_ptr<float>()[at(b, t, j)]));
        return parts.join(' ');
    };
    const std::vector<int> blocks = r.blocks;
    g.toolTip = [idx, w, at, K, tokens, blocks](int b, int t) {
        QString s = RoutingView::tr("layers.%1 · position %2 “%3”").arg(blocks[static_cast<size_t>(b)]).arg(t).arg(tokens.value(t));
        for (int j = 0; j < K; ++j)
            s += RoutingView::tr("\n%1. expert %2   weight %3").arg(j + 1).arg(idx.data_ptr<int64_t>()[at(b, t, j)]).arg(w.data_ptr<float>()[at(b, t, j)], 0, 'g', 4);
        return s + RoutingView::tr("\nclick: this cell's top expert");
    };
    gridModel_->setMatrix(std::move(g));
    grid_->setCategories(colours, names);
    grid_->setTitle(tr("each token's experts · prompt %1").arg(row + 1));

    const bool byWeight = loadKind_->currentIndex() == 1;
    Matrix l;
    l.values = (byWeight ? r.weightSum : r.tokenCount.to(torch::kFloat32)).contiguous();
    l.rowLabels = blockLabels;
    l.columnLabels = names;
    l.rowTitle = tr("block");
    l.columnTitle = tr("expert");
    l.valueName = byWeight ? tr("routing weight over the prompt") : tr("tokens that chose it");
    const torch::Tensor count = r.tokenCount.contiguous(), sum = r.weightSum.contiguous();
    l.cellText = [count, sum, E, byWeight](int b, int e) {
        const size_t i = static_cast<size_t>(b) * E + e;
        return byWeight ? QString::number(sum.data_ptr<float>()[i], 'f', 1) : QString::number(count.data_ptr<int64_t>()[i]);
    };
    l.toolTip = [count, sum, E, blocks, len](int b, int e) {
        const size_t i = static_cast<size_t>(b) * E + e;
        const int64_t n = count.data_ptr<int64_t>()[i];
        const double s = sum.data_ptr<float>()[i];
        return RoutingView::tr("layers.%1 · expert %2\nchosen by %3 of %4 tokens\nrouting weight %5 in all%6\nclick: what it writes")
            .arg(blocks[static_cast<size_t>(b)]).arg(e).arg(n).arg(len).arg(s, 0, 'g', 4)
            .arg(n ? RoutingView::tr(" (%1 per token that chose it)").arg(s / n, 0, 'g', 3) : QString());
    };
    loadModel_->setMatrix(std::move(l));
    load_->setTitle(byWeight ? tr("routing weight per expert") : tr("tokens per expert"));
    showExpert();
}

void RoutingView::selectExpert(int layer, int64_t expert) {
    if (!routing_ || routing_->rowOf(layer) < 0 || expert < 0 || expert >= routing_->numExperts) return;
    block_ = layer;
    expert_ = expert;
    // not chosen at the position shown: the position where it weighs most, if any token chose it
    const int b = routing_->rowOf(layer);
    const torch::Tensor mine = ((routing_->indices[b] == expert).to(torch::kFloat32) * routing_->weights[b]).sum(-1);  // [length]
    if (mine[position()].item<float>() == 0 && mine.max().item<float>() > 0) {
        setPosition(static_cast<int>(mine.argmax().item<int64_t>()));  // shows it, and asks for the attribution there
        return;
    }
    showExpert();
}

void RoutingView::setPosition(int position) {
    if (position < 0) position += position_->maximum() + 1;
    if (position_->value() != std::clamp(position, position_->minimum(), position_->maximum())) {
        position_->setValue(position);  // its valueChanged shows the expert and asks for the attribution
    } else {
        showExpert();
        if (!attribution_ && !analysisPending()) refreshAttribution();
    }
}

int RoutingView::position() const { return position_->value(); }

void RoutingView::setTarget(const QString& token) {
    target_->setText(token);
    refreshAttribution();
}

void RoutingView::setLoadByWeight(bool byWeight) { loadKind_->setCurrentIndex(byWeight ? 1 : 0); }

double RoutingView::selectedShare() const {
    if (!attribution_ || expert_ < 0) return std::nan("");
    const auto it = std::find(attribution_->blocks.begin(), attribution_->blocks.end(), block_);
    if (it == attribution_->blocks.end()) return std::nan("");
    return attribution_->experts[it - attribution_->blocks.begin()][expert_].item<double>();
}

void RoutingView::refreshAttribution() {
    attribution_.reset();
    if (!snapshot_ || !routing_) return dropAnalysis();
    if (const QString why = missingWeights(tr("The experts' direct logit attribution")); !why.isEmpty()) {
        status_->setText(why);
        return dropAnalysis();
    }
    const SnapshotPtr snapshot = snapshot_;
    const int row = prompt();
    const int64_t pos = position_->value();
    const QString targetText = target_->text().trimmed();
    status_->setStyleSheet(QString());
    status_->setText(tr("Computing the experts' attribution (Esc cancels)…"));
    requestAnalysis(
        tr("expert attribution"), snapshot->numLayers(),
        [snapshot, row, pos, targetText](const JobControl& control) {
            const Model& m = *snapshot->model;
            int64_t target = -1;
            if (targetText.isEmpty()) {  // the model's own most probable next token at this position
                const torch::Tensor last = promptValue(m, snapshot->result, {Value::LayerOutput, snapshot->numLayers() - 1}, row).index({pos});
                target = m.projectOnVocab(last.to(m.dtype())).argmax().item<int64_t>();
            } else {
                target = parseTokenArgument(m, targetText.toStdString(), "target");
            }
            control.throwIfCancelled();
            const BlockProgress progress{control.progressFrom(0, snapshot->numLayers()), control.cancelFlag()};
            return QVariant::fromValue(std::make_shared<const ExpertAttribution>(
                expertLogitAttribution(m, snapshot->result, row, pos, target, std::nullopt, progress)));
        },
        [this](JobState state, const QVariant& result, const QString& message) { attributionEnded(state, result, message); });
}

void RoutingView::attributionEnded(JobState state, const QVariant& result, const QString& message) {
    if (state != JobState::Finished) {
        attribution_.reset();
        status_->setStyleSheet(state == JobState::Cancelled ? "color: #8a5a00;" : "color: #a00010;");
        status_->setText(state == JobState::Cancelled ? tr("The attribution was cancelled: show the view again (or change a field) to compute it.")
                                                      : message);
        if (state == JobState::Cancelled) refreshOnNextShow([this] { refreshAttribution(); });
        showExpert();
        return;
    }
    attribution_ = *result.value<std::shared_ptr<const ExpertAttribution>>();
    const LogitAttribution& a = attribution_->attribution;
    const Model& m = *snapshot_->model;
    status_->setStyleSheet(QString());
    status_->setText(tr("logit(“%1”) at position %2 (after “%3”) = %4. An expert's share: its weighted output through the final "
                        "norm (its scale frozen at the real pass's) onto the unembedding; the chosen experts' add up to the MLP's.")
                         .arg(tokenLabel(m, a.target))
                         .arg(a.position)
                         .arg(snapshot_->tokens.at(static_cast<size_t>(prompt())).value(static_cast<int>(a.position)))
                         .arg(a.logit, 0, 'g', 5));
    showExpert();
}

void RoutingView::showExpert() {
    if (!snapshot_ || !routing_) return;
    const ExpertRouting& r = *routing_;
    const int b = r.rowOf(block_);
    const int pos = position();
    grid_->setMarkedCell(-1, pos);
    if (b < 0 || expert_ < 0 || expert_ >= r.numExperts) {
        forbid_->setEnabled(false);
        details_->clear();
        return;
    }
    load_->setMarkedCell(b, static_cast<int>(expert_));
    const Model& m = *snapshot_->model;
    const QStringList tokens = snapshot_->tokens.at(static_cast<size_t>(prompt()));
    forbid_->setEnabled(true);
    forbid_->setText(tr("Forbid expert %1 of block %2").arg(expert_).arg(block_));

    // the norm of what it writes at each position
    QVector<double> keys, values;
    const torch::Tensor norms = r.outputNorm[b][expert_].contiguous();
    for (int t = 0; t < r.length; ++t) {
        keys << t;
        values << norms.data_ptr<float>()[t];
    }
    normBars_->setData(keys, values, true);
    normBars_->setBrush(expertColour(expert_).darker(130));
    QSharedPointer<TokenTicker> ticker(new TokenTicker(normPlot_->xAxis));
    ticker->setLabels(tokens);
    normPlot_->xAxis->setTicker(ticker);
    normPlot_->xAxis->setRange(-0.7, std::max<int64_t>(1, r.length) - 0.3);
    normPlot_->yAxis->setRange(0, std::max(1e-6, norms.max().item<double>() * 1.1));
    if (auto* t = qobject_cast<QCPTextElement*>(normPlot_->plotLayout()->element(0, 0)))
        t->setText(tr("what expert %1 of block %2 writes").arg(expert_).arg(block_));
    normPlot_->replot();

    const int64_t count = r.tokenCount[b][expert_].item<int64_t>();
    const double sum = r.weightSum[b][expert_].item<double>();
    QString html = tr("<p><b>Expert %1 of block %2</b></p><p>Chosen by %3 of %4 tokens; routing weight %5 in all.</p>")
                       .arg(expert_).arg(block_).arg(count).arg(r.length).arg(sum, 0, 'g', 4);
    const torch::Tensor choice = r.indices[b][pos];  // [k]
    int slot = -1;
    for (int j = 0; j < r.topK; ++j)
        if (choice[j].item<int64_t>() == expert_) slot = j;
    const QString at = tr("position %1 “%2”").arg(pos).arg(tokens.value(pos).toHtmlEscaped());
    if (slot < 0) {
        html += tr("<p>Not chosen at %1: it writes nothing there.</p>").arg(at);
    } else {
        html += tr("<p>At %1: slot %2, weight %3.</p>").arg(at).arg(slot + 1).arg(r.weights[b][pos][slot].item<double>(), 0, 'g', 4);
    }
    if (attribution_ && attribution_->attribution.position == pos) {
        const ExpertAttribution& x = *attribution_;
        const LogitAttribution& a = x.attribution;
        const auto it = std::find(x.blocks.begin(), x.blocks.end(), block_);
        const int64_t xb = it - x.blocks.begin();
        html += tr("<p>Share of logit(“%1”): <b>%2</b></p>").arg(tokenLabel(m, a.target).toHtmlEscaped()).arg(x.experts[xb][expert_].item<double>(), 0, 'g', 5);
        html += tr("<table cellspacing=4><tr><th align=left>block %1</th><th align=right>weight</th><th align=right>share</th></tr>").arg(block_);
        double total = 0;
        for (int j = 0; j < r.topK; ++j) {
            const int64_t e = choice[j].item<int64_t>();
            const double share = x.experts[xb][e].item<double>();
            total += share;
            html += QString("<tr><td>%1expert %2%3</td><td align=right>%4</td><td align=right>%5</td></tr>")
                        .arg(e == expert_ ? "<b>" : "").arg(e).arg(e == expert_ ? "</b>" : "")
                        .arg(r.weights[b][pos][j].item<double>(), 0, 'f', 3).arg(share, 0, 'g', 4);
        }
        if (m.hasValueAt(Value::SharedExpertOutput, block_)) {
            total += x.shared[xb].item<double>();
            html += tr("<tr><td>shared expert</td><td></td><td align=right>%1</td></tr>").arg(x.shared[xb].item<double>(), 0, 'g', 4);
        }
        html += tr("<tr><td>sum</td><td></td><td align=right>%1</td></tr><tr><td>MLP (mlp_output)</td><td></td><td align=right>%2</td></tr></table>")
                    .arg(total, 0, 'g', 4).arg(x.mlp[xb].item<double>(), 0, 'g', 4);
        if (slot >= 0) {
            try {
                const torch::Tensor v = expertStreamVector(m, snapshot_->result, a, prompt(), block_, expert_);
                const auto [up, down] = promotedTokens(m, a, v, 8);
                auto list = [&](const std::vector<TokenEffect>& effects) {
                    QStringList items;
                    for (const auto& e : effects) items << QString("%1 (%2)").arg(tokenLabel(m, e.id).toHtmlEscaped()).arg(e.logit, 0, 'g', 3);
                    return items.join(", ");
                };
                html += tr("<p>Promotes: %1</p><p>Suppresses: %2</p>").arg(list(up), list(down));
            } catch (const std::exception& e) {
                html += QString("<p>%1</p>").arg(QString::fromStdString(e.what()).toHtmlEscaped());
            }
        }
    }
    details_->setHtml(html);
}

QVector<InterventionOffer> RoutingView::interventionOffers() const {
    if (!snapshot_ || !routing_ || routing_->rowOf(block_) < 0 || expert_ < 0) return {};
    try {
        return {{tr("Forbid expert %1 of block %2 (its router logit at −inf)").arg(expert_).arg(block_),
                 QString::fromStdString(forbidExpertEdit(*snapshot_->model, block_, expert_))}};
    } catch (const Error&) {
        return {};
    }
}

PlotSource RoutingView::plotSource() const {
    PlotSource s;
    s.plot = grid_->plot();
    HeatmapPlot* h = grid_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = grid_->fullViewSize();
    s.name = "routing";
    return s;
}

QMap<QString, QString> RoutingView::settings() const {
    QMap<QString, QString> s{{"view", "routing"},
                             {"view.prompt", QString::number(prompt() + 1)},
                             {"view.position", QString::number(position())},
                             {"view.target", target_->text()},
                             {"view.block", QString::number(block_)},
                             {"view.expert", QString::number(expert_)},
                             {"view.load", loadKind_->currentIndex() == 1 ? "routing weight" : "tokens"}};
    if (attribution_) s["view.target_id"] = QString::number(attribution_->attribution.target);
    return s;
}

}  // namespace nnscope
