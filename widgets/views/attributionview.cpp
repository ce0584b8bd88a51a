// SPDX-License-Identifier: MIT
#include "widgets/views/attributionview.h"

#include "core/run/edit.h"
#include "core/model/error.h"

#include <qcustomplot.h>
#include <torch/types.h>

#include <QComboBox>
#include <QHeaderView>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace nnscope {
namespace {

const QColor kAttentionColor(0x42, 0x92, 0xc6), kMlpColor(0xe6, 0x86, 0x2b), kEmbedColor(0x88, 0x88, 0x88);

QString tokenLabel(const Model& m, int64_t id) {
    return m.tokenizer() ? QString::fromStdString(m.tokenizer()->tokenLabel(id)) : QString("#%1").arg(id);
}

}  // namespace

AttributionView::AttributionView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    target_ = new QLineEdit(content);
    target_->setPlaceholderText(tr("target token (empty: the top prediction)"));
    target_->setToolTip(tr("The token whose logit is decomposed: text of one token, or #ID"));
    wrong_ = new QLineEdit(content);
    wrong_->setPlaceholderText(tr("minus token (optional)"));
    wrong_->setToolTip(tr("With a second token the logit difference target − token is decomposed"));
    position_ = new QSpinBox(content);
    position_->setPrefix(tr("position "));
    position_->setToolTip(tr("The prompt position whose next-token logit is decomposed"));
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // a token such as "<s>" is text

    blockPlot_ = new QCustomPlot(content);
    blockPlot_->setInteractions({});
    blockPlot_->plotLayout()->insertRow(0);
    blockPlot_->plotLayout()->addElement(0, 0, new QCPTextElement(blockPlot_, tr("direct logit attribution per component"),
                                                                  QFont(font().family(), font().pointSize(), QFont::Bold)));
    auto bars = [this](const QColor& colour, const QString& name) {
        auto* b = new QCPBars(blockPlot_->xAxis, blockPlot_->yAxis);
        b->setWidth(0.7);
        b->setPen(Qt::NoPen);
        b->setBrush(colour);
        b->setName(name);
        return b;
    };
    blockBars_ = bars(kAttentionColor, tr("attention"));
    mlpBars_ = bars(kMlpColor, tr("MLP"));
    otherBars_ = bars(kEmbedColor, tr("embeddings, biases"));
    // The legend in a row of its own under the title, never over the bars (#28: it covered the first ones).
    blockPlot_->legend->setVisible(true);
    blockPlot_->axisRect()->insetLayout()->take(blockPlot_->legend);
    blockPlot_->plotLayout()->insertRow(1);
    blockPlot_->plotLayout()->addElement(1, 0, blockPlot_->legend);
    blockPlot_->plotLayout()->setRowStretchFactor(1, 0.001);
    blockPlot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
    blockPlot_->legend->setBorderPen(Qt::NoPen);
    blockPlot_->axisRect()->insetLayout()->simplify();
    blockPlot_->xAxis->grid()->setVisible(false);
    blockPlot_->xAxis->setTickLabelRotation(60);
    blockPlot_->xAxis->setSubTicks(false);
    blockPlot_->yAxis->setLabel(tr("share of the logit"));
    blockPlot_->setMinimumHeight(220);
    followPalette(blockPlot_);

    headModel_ = new MatrixModel(this);
    heads_ = new HeatmapPlot(content);
    heads_->setGradient(signedGradient());
    heads_->setSymmetricRange(true);
    heads_->setMinCellSize(QSize(26, 20));  // an export's cells
    heads_->setZoomable(true);              // every head of every block in view (#28: 7 of 16 heads showed)
    heads_->setModel(headModel_);
    heads_->setToolTip(tr("Click a head for the tokens it promotes and suppresses"));
    top_ = new QTreeWidget(content);
    top_->setColumnCount(2);
    top_->setHeaderLabels({tr("component"), tr("share")});
    top_->setRootIsDecorated(false);
    top_->setUniformRowHeights(true);
    top_->setToolTip(tr("The components with the largest share of the logit, by magnitude: heads, MLPs, the embeddings "
                        "and biases, and the top neurons (parts of their block's MLP). Click one for the tokens it promotes."));
    top_->header()->setStretchLastSection(false);
    top_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    top_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    top_->setMinimumWidth(200);
    details_ = new QTextBrowser(content);
    details_->setMinimumWidth(240);

    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_);
    controls->addWidget(position_);
    controls->addWidget(target_, 1);
    controls->addWidget(wrong_, 1);
    auto* lower = new QSplitter(Qt::Horizontal, content);
    // the head map beside the sorted list of the top components, the selected one's details under the list
    auto* side = new QSplitter(Qt::Vertical, content);
    side->addWidget(top_);
    side->addWidget(details_);
    lower->addWidget(heads_);
    lower->addWidget(side);
    lower->setStretchFactor(0, 3);
    lower->setStretchFactor(1, 2);
    lower->setSizes({600, 400});  // in proportion: the head map takes three fifths
    auto* vertical = new QSplitter(Qt::Vertical, content);
    vertical->addWidget(blockPlot_);
    vertical->addWidget(lower);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(vertical, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace: this view decomposes the next-token logit into what each block, head and neuron wrote."));

    connect(target_, &QLineEdit::editingFinished, this, [this] { refresh(); });
    connect(wrong_, &QLineEdit::editingFinished, this, [this] { refresh(); });
    connect(position_, &QSpinBox::valueChanged, this, [this] { refresh(); });
    connect(this, &TraceView::promptChanged, this, [this] {
        if (!snapshot_) return;
        const QSignalBlocker block(position_);
        const int n = static_cast<int>(snapshot_->result.batch.ids.at(static_cast<size_t>(prompt())).size());
        position_->setRange(0, n - 1);
        position_->setValue(n - 1);
        dropAnalysis();  // the last prompt's attribution is not wanted any more
        refreshWhenShown([this] { refresh(); });
    });
    connect(blockPlot_, &QCustomPlot::plottableClick, this, [this](QCPAbstractPlottable* plottable, int index, QMouseEvent*) {
        if (!plottable->interface1D() || index < 0 || index >= plottable->interface1D()->dataCount()) return;
        const int x = static_cast<int>(std::lround(plottable->interface1D()->dataMainKey(index)));
        if (x >= 0 && x < barComponents_.size()) selectComponent(barComponents_[x]);
    });
    connect(top_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
        if (item && item->data(0, Qt::UserRole).toInt() >= 0) selectComponent(item->data(0, Qt::UserRole).toInt());
    });
    connect(heads_, &HeatmapPlot::cellClicked, this, [this](int row, int column) {
        if (!attribution_) return;
        for (size_t i = 0; i < attribution_->components.size(); ++i) {
            const auto& c = attribution_->components[i];
            if (c.kind == AttributionComponent::Kind::Head && c.layer == row && c.index == column) selectComponent(static_cast<int>(i));
        }
    });
}

void AttributionView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    dropAnalysis();  // what was under way belongs to the last snapshot
    if (!snapshot_) {
        attribution_.reset();
        showPlaceholder(tr("Run a trace: this view decomposes the next-token logit into what each block, head and neuron wrote."));
        return;
    }
    if (const QString why = missingWeights(tr("Direct logit attribution")); !why.isEmpty()) {
        attribution_.reset();
        return showPlaceholder(why);
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    const int n = static_cast<int>(snapshot_->result.batch.ids.at(static_cast<size_t>(prompt())).size());
    {
        const QSignalBlocker block(position_);
        position_->setRange(0, n - 1);
        position_->setValue(n - 1);
    }
    showContent();
    attribution_.reset();
    refreshWhenShown([this] { refresh(); });  // at a 128k vocabulary it is a visible pause: not for a hidden tab
}

void AttributionView::setTarget(const QString& token) {
    target_->setText(token);
    refresh();
}

void AttributionView::setWrong(const QString& token) {
    wrong_->setText(token);
    refresh();
}

void AttributionView::setPosition(int position) {
    if (position < 0) position += position_->maximum() + 1;
    if (position_->value() != std::clamp(position, position_->minimum(), position_->maximum()))
        position_->setValue(position);  // its valueChanged refreshes
    else
        refresh();
}

void AttributionView::refresh() {
    attribution_.reset();
    barComponents_.clear();
    selected_ = -1;
    if (!snapshot_) return dropAnalysis();
    const SnapshotPtr snapshot = snapshot_;
    const int row = prompt();
    const int64_t pos = position_->value();
    const QString targetText = target_->text().trimmed(), wrongText = wrong_->text().trimmed();
    status_->setStyleSheet(QString());
    status_->setText(tr("Computing the attribution (Esc cancels)…"));
    requestAnalysis(
        tr("direct logit attribution"), snapshot->numLayers(),
        [snapshot, row, pos, targetText, wrongText](const JobControl& control) {
            const Model& m = *snapshot->model;
            int64_t target = -1;
            if (targetText.isEmpty()) {
                // the model's own most probable next token at this position
                const torch::Tensor logits = m.projectOnVocab(promptValue(m, snapshot->result, {Value::LayerOutput, snapshot->numLayers() - 1}, row)
                                                                  .index({pos}).to(m.dtype()));
                target = logits.argmax().item<int64_t>();
            } else {
                target = parseTokenArgument(m, targetText.toStdString(), "target");
            }
            std::optional<int64_t> wrong;
            if (!wrongText.isEmpty()) wrong = parseTokenArgument(m, wrongText.toStdString(), "minus token");
            control.throwIfCancelled();
            const BlockProgress progress{control.progressFrom(0, snapshot->numLayers()), control.cancelFlag()};
            return QVariant::fromValue(
                std::make_shared<const LogitAttribution>(directLogitAttribution(m, snapshot->result, row, pos, target, wrong, 10, progress)));
        },
        [this](JobState state, const QVariant& result, const QString& message) { attributionEnded(state, result, message); });
}

void AttributionView::attributionEnded(JobState state, const QVariant& result, const QString& message) {
    if (state != JobState::Finished) {
        status_->setStyleSheet(state == JobState::Cancelled ? "color: #8a5a00;" : "color: #a00010;");
        status_->setText(state == JobState::Cancelled ? tr("The attribution was cancelled: show the view again (or change a field) to compute it.")
                                                      : message);
        for (QCPBars* b : {blockBars_, mlpBars_, otherBars_}) b->data()->clear();
        blockPlot_->replot();
        headModel_->setMatrix({});
        top_->clear();
        details_->clear();
        if (state == JobState::Cancelled) refreshOnNextShow([this] { refresh(); });
        return;
    }
    attribution_ = *result.value<std::shared_ptr<const LogitAttribution>>();
    const Model& m = *snapshot_->model;
    const int row = prompt();
    const LogitAttribution& a = *attribution_;
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    const QString what = a.wrong >= 0 ? tr("logit(“%1”) − logit(“%2”)").arg(tokenLabel(m, a.target), tokenLabel(m, a.wrong))
                                      : tr("logit(“%1”)").arg(tokenLabel(m, a.target));
    status_->setStyleSheet(QString());
    status_->setText(tr("%1 at position %2 (after “%3”) = %4; the components add up to %5. %6")
                         .arg(what)
                         .arg(a.position)
                         .arg(tokens.value(static_cast<int>(a.position)))
                         .arg(a.logit, 0, 'g', 5)
                         .arg(a.total, 0, 'g', 5)
                         .arg(QString::fromStdString(a.note)));

    // one bar per embed / attention / MLP component, coloured by kind
    QVector<double> attnKeys, attnValues, mlpKeys, mlpValues, otherKeys, otherValues;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    int best = -1;
    for (size_t i = 0; i < a.components.size(); ++i) {
        const auto& c = a.components[i];
        using K = AttributionComponent::Kind;
        if (c.kind != K::Embed && c.kind != K::Attention && c.kind != K::Mlp && !(c.kind == K::Bias && c.layer < 0)) continue;
        const int k = barComponents_.size();
        barComponents_ << static_cast<int>(i);
        (c.kind == K::Attention ? attnKeys : c.kind == K::Mlp ? mlpKeys : otherKeys) << k;
        (c.kind == K::Attention ? attnValues : c.kind == K::Mlp ? mlpValues : otherValues) << c.value;
        const QString label = c.kind == K::Embed ? tr("embed")
                              : c.kind == K::Attention ? QString("%1 attn").arg(c.layer)
                              : c.kind == K::Mlp ? QString("%1 mlp").arg(c.layer) : QString::fromStdString(c.name);
        ticker->addTick(k, label);
        if (best < 0 || std::abs(c.value) > std::abs(a.components[static_cast<size_t>(best)].value)) best = static_cast<int>(i);
    }
    blockBars_->setData(attnKeys, attnValues, true);
    mlpBars_->setData(mlpKeys, mlpValues, true);
    otherBars_->setData(otherKeys, otherValues, true);
    const int bars = barComponents_.size();
    blockPlot_->xAxis->setTicker(ticker);
    blockPlot_->xAxis->setRange(-0.7, std::max(1, bars) - 0.3);
    blockPlot_->yAxis->rescale();
    blockPlot_->yAxis->scaleRange(1.15);
    if (auto* t = qobject_cast<QCPTextElement*>(blockPlot_->plotLayout()->element(0, 0)))
        t->setText(tr("direct logit attribution of %1 · click a bar for the tokens it promotes").arg(what));
    blockPlot_->replot();

    // blocks x heads
    Matrix hm;
    hm.values = a.heads.contiguous();
    for (int i = 0; i < snapshot_->numLayers(); ++i) hm.rowLabels << QString("layers.%1").arg(i);
    for (int64_t h = 0; h < a.heads.size(1); ++h) hm.columnLabels << QString::number(h);
    hm.rowTitle = tr("block");
    hm.columnTitle = tr("head");
    hm.valueName = tr("share of %1").arg(what);
    const torch::Tensor heads = a.heads.clone();
    hm.toolTip = [heads](int r, int c) {
        return QObject::tr("layers.%1.self_attn.head.%2\nshare %3 (through its o_proj columns)").arg(r).arg(c).arg(heads[r][c].item<double>(), 0, 'g', 5);
    };
    headModel_->setMatrix(std::move(hm));
    heads_->setTitle(tr("each head's share"));
    fillTopComponents();
    selected_ = best;
    showDetails();
}

void AttributionView::fillTopComponents() {
    const QSignalBlocker block(top_);
    top_->clear();
    if (!attribution_) return;
    using K = AttributionComponent::Kind;
    // every component but a block's whole attention (its heads are listed), and the top neurons (index -1: not in
    // components, no details)
    std::vector<std::pair<const AttributionComponent*, int>> all;
    for (size_t i = 0; i < attribution_->components.size(); ++i)
        if (attribution_->components[i].kind != K::Attention) all.emplace_back(&attribution_->components[i], static_cast<int>(i));
    for (const auto& n : attribution_->topNeurons) all.emplace_back(&n, -1);
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return std::abs(a.first->value) > std::abs(b.first->value); });
    for (size_t i = 0; i < all.size() && i < static_cast<size_t>(kTopComponents); ++i) {
        auto* item = new QTreeWidgetItem(top_, {QString::fromStdString(all[i].first->name), QString::number(all[i].first->value, 'g', 4)});
        item->setData(0, Qt::UserRole, all[i].second);
        item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
        item->setForeground(1, all[i].first->value < 0 ? QColor(0x21, 0x66, 0xac) : QColor(0xb2, 0x18, 0x2b));
    }
}

QStringList AttributionView::topComponents() const {
    QStringList names;
    for (int i = 0; i < top_->topLevelItemCount(); ++i) names << top_->topLevelItem(i)->text(0);
    return names;
}

void AttributionView::selectComponent(int index) {
    if (!attribution_ || index < 0 || index >= static_cast<int>(attribution_->components.size())) return;
    selected_ = index;
    showDetails();
}

void AttributionView::showDetails() {
    if (!attribution_ || !snapshot_) return;
    const Model& m = *snapshot_->model;
    const LogitAttribution& a = *attribution_;
    QString html;
    if (selected_ >= 0) {
        const auto& c = a.components[static_cast<size_t>(selected_)];
        const torch::Tensor v = componentStreamVector(m, snapshot_->result, a, prompt(), c);
        html += tr("<p><b>%1</b>: %2</p>").arg(QString::fromStdString(c.name).toHtmlEscaped()).arg(c.value, 0, 'g', 5);
        if (v.defined()) {
            const auto [up, down] = promotedTokens(m, a, v, 8);
            auto list = [&](const std::vector<TokenEffect>& effects) {
                QStringList items;
                for (const auto& e : effects)
                    items << QString("%1 (%2)").arg(tokenLabel(m, e.id).toHtmlEscaped()).arg(e.logit, 0, 'g', 3);
                return items.join(", ");
            };
            html += tr("<p>promotes: %1</p><p>suppresses: %2</p>").arg(list(up), list(down));
        }
    }
    html += tr("<p><b>Top neurons</b> (share through down_proj):</p><ul>");
    for (const auto& n : a.topNeurons)
        html += QString("<li>%1: %2</li>").arg(QString::fromStdString(n.name)).arg(n.value, 0, 'g', 4);
    html += "</ul>";
    details_->setHtml(html);
}

QVector<InterventionOffer> AttributionView::interventionOffers() const {
    if (!attribution_ || !snapshot_) return {};
    const torch::Tensor flat = attribution_->heads.abs().reshape({-1});
    const int64_t k = flat.argmax().item<int64_t>();
    const int heads = static_cast<int>(attribution_->heads.size(1));
    const int layer = static_cast<int>(k / heads), head = static_cast<int>(k % heads);
    return {{tr("Zero-ablate head %1 of block %2 (the largest share)").arg(head).arg(layer),
             QString::fromStdString(headAblationEdit(*snapshot_->model, layer, head, false))}};
}

PlotSource AttributionView::plotSource() const {
    PlotSource s;
    s.plot = blockPlot_;
    s.size = blockPlot_->size();
    s.name = "attribution";
    return s;
}

QMap<QString, QString> AttributionView::settings() const {
    QMap<QString, QString> s{{"view", "attribution"}, {"view.prompt", QString::number(prompt())},
                             {"view.position", QString::number(position_->value())}, {"view.target", target_->text()},
                             {"view.minus", wrong_->text()}};
    if (attribution_) {
        s["view.target_id"] = QString::number(attribution_->target);
        s["view.logit"] = QString::number(attribution_->logit, 'g', 8);
        s["view.note"] = QString::fromStdString(attribution_->note);
    }
    return s;
}

}  // namespace nnscope
