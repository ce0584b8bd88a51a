// SPDX-License-Identifier: MIT
#include "widgets/views/flowview.h"
#include "widgets/views/plaintext.h"

#include <torch/types.h>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QScrollBar>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSpinBox>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>
#include <memory>

namespace nnscope {

/// Paints the graph: tokens along x, stream levels along y (0: the embeddings; 2l + 1: after block l's attention;
/// 2l + 2: after its MLP).
class FlowCanvas : public QWidget {
public:
    explicit FlowCanvas(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

    /// The x of position `position`'s column, in the canvas.
    int columnX(int position) const { return static_cast<int>(x(position)); }

    void setGraph(const ContributionGraph* graph, QStringList tokens, int layers) {
        graph_ = graph;
        tokens_ = std::move(tokens);
        layers_ = layers;
        updateSize();
    }

    /// Fit: the whole graph in the canvas's size (the scroll area's view); otherwise each token kColumn pixels wide and
    /// each level kLevel tall, scrolling, with the row labels pinned at the left edge.
    void setFit(bool fit) {
        fit_ = fit;
        updateSize();
    }
    bool fit() const { return fit_; }
    /// The pixels between two tokens' columns, and between two levels, as drawn now.
    double columnWidth() const {
        const int columns = std::max(1, static_cast<int>(tokens_.size()));
        return fit_ ? std::max(1.0, (width() - kLeft - kRight) / static_cast<double>(columns)) : kColumn;
    }
    double levelHeight() const {
        return fit_ ? std::max(4.0, (height() - kTop - kBottom) / static_cast<double>(std::max(1, 2 * layers_))) : kLevel;
    }
    /// Every how many tokens a label is drawn (1, 2, 5, 10, ...: what leaves a line of text between labels).
    int labelStep() const {
        const double pitch = fontMetrics().height() * 1.5;  // labels at 45 degrees
        for (int decade = 1;; decade *= 10)
            for (int m : {1, 2, 5})
                if (m * decade * columnWidth() >= pitch || m * decade >= tokens_.size()) return m * decade;
    }
    /// The left edge the row labels are drawn at: the view's left edge when scrolled.
    void setLabelsAt(int x) {
        labelsAt_ = x;
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        p.fillRect(rect(), palette().base());
        const QColor text = palette().text().color();
        p.setPen(text);
        const int step = labelStep();
        for (int i = 0; i < tokens_.size(); i += step) {
            p.save();
            p.translate(x(i) + 4, y(0) + 14);
            p.rotate(45);
            p.drawText(0, 0, fontMetrics().elidedText(step > 1 ? QString("%1 %2").arg(i).arg(tokens_[i]) : tokens_[i], Qt::ElideRight, kBottom + 20));
            p.restore();
        }
        if (graph_) paintGraph(p);
        // The row labels last, over a band of the background at the view's left edge: they stay in sight when the
        // graph is scrolled sideways. A level too short for a line of text labels every other one (the MLP rows go).
        p.setPen(Qt::NoPen);
        p.setBrush(palette().base());
        p.drawRect(QRect(labelsAt_, 0, kLeft - 6, height()));
        p.setPen(text);
        const bool every = levelHeight() >= fontMetrics().height();
        for (int level = 0; level <= 2 * layers_; ++level) {
            if (!every && level % 2 == 0 && level > 0) continue;
            const QString name = level == 0 ? tr("embeddings")
                                 : level % 2 ? tr("block %1 attention").arg((level - 1) / 2) : tr("block %1 MLP").arg((level - 1) / 2);
            p.drawText(QRect(labelsAt_ + 2, static_cast<int>(y(level)) - 8, kLeft - 10, 16), Qt::AlignRight | Qt::AlignVCenter, name);
        }
    }

    void paintGraph(QPainter& p) {
        // nodes reached, then the edges over them (thinner where the columns are narrow)
        const double scale = std::min(1.0, columnWidth() / kColumn * 4);
        const double offset = std::min(6.0, columnWidth() / 4);
        p.setPen(Qt::NoPen);
        for (const auto& e : graph_->edges) {
            const auto [fromLevel, toLevel] = levels(e);
            for (const auto& [level, pos] : {std::pair{fromLevel, e.from}, std::pair{toLevel, e.to}}) {
                p.setBrush(palette().mid());
                p.drawEllipse(QPointF(x(static_cast<int>(pos)), y(level)), 3 * scale, 3 * scale);
            }
        }
        for (const auto& e : graph_->edges) {
            const auto [fromLevel, toLevel] = levels(e);
            QColor c = e.kind == ContributionEdge::Kind::Attention ? QColor(0x21, 0x66, 0xac)
                       : e.kind == ContributionEdge::Kind::Mlp     ? QColor(0xe6, 0x86, 0x2b)
                                                                    : QColor(0x90, 0x90, 0x90);
            c.setAlphaF(0.25 + 0.75 * e.weight);
            p.setPen(QPen(c, 0.5 + 6.0 * e.weight * scale, Qt::SolidLine, Qt::RoundCap));
            QPointF a(x(static_cast<int>(e.from)), y(fromLevel)), b(x(static_cast<int>(e.to)), y(toLevel));
            if (e.kind == ContributionEdge::Kind::Mlp) a.rx() += offset, b.rx() += offset;  // beside the residual's line
            p.drawLine(a, b);
        }
    }

    bool event(QEvent* ev) override {
        if (ev->type() == QEvent::ToolTip && graph_) {
            auto* help = static_cast<QHelpEvent*>(ev);
            const ContributionEdge* best = nullptr;
            double bestDistance = 8;
            for (const auto& e : graph_->edges) {
                const auto [fromLevel, toLevel] = levels(e);
                const QPointF a(x(static_cast<int>(e.from)), y(fromLevel)), b(x(static_cast<int>(e.to)), y(toLevel));
                const QPointF d = b - a, q = QPointF(help->pos()) - a;
                const double len2 = QPointF::dotProduct(d, d);
                const double t = len2 > 0 ? std::clamp(QPointF::dotProduct(q, d) / len2, 0.0, 1.0) : 0.0;
                const QPointF closest = a + t * d;
                const double dist = std::hypot(help->pos().x() - closest.x(), help->pos().y() - closest.y());
                if (dist < bestDistance) {
                    bestDistance = dist;
                    best = &e;
                }
            }
            if (best) {
                QString heads;
                for (const auto& h : best->heads) heads += tr("\n  head %1: %2 (norm %3)").arg(h.head).arg(h.weight, 0, 'f', 3).arg(h.norm, 0, 'g', 3);
                QToolTip::showText(help->globalPos(), plainToolTip(tr("block %1 %2: %3 “%4” → %5 “%6”\nimportance %7%8")
                                                          .arg(best->layer)
                                                          .arg(edgeKindName(best->kind))
                                                          .arg(best->from)
                                                          .arg(tokens_.value(static_cast<int>(best->from)))
                                                          .arg(best->to)
                                                          .arg(tokens_.value(static_cast<int>(best->to)))
                                                          .arg(best->weight, 0, 'f', 3)
                                                          .arg(heads)),
                                   this);
            } else {
                QToolTip::hideText();
            }
            return true;
        }
        return QWidget::event(ev);
    }

private:
    static constexpr int kLeft = 130, kRight = 20, kColumn = 56, kTop = 16, kLevel = 46, kBottom = 70;
    double x(int position) const { return kLeft + columnWidth() * (position + 0.5); }
    double y(int level) const { return kTop + (2 * layers_ - level) * levelHeight(); }
    void updateSize() {
        const int columns = std::max(1, static_cast<int>(tokens_.size()));
        if (fit_)
            setMinimumSize(kLeft + kRight + 40, kTop + kBottom + 2 * layers_ * 4);
        else
            setMinimumSize(kLeft + columns * kColumn + kRight, kTop + 2 * layers_ * kLevel + kBottom);
        update();
    }
    static std::pair<int, int> levels(const ContributionEdge& e) {
        switch (e.kind) {
            case ContributionEdge::Kind::Attention:
            case ContributionEdge::Kind::AttentionResidual: return {2 * e.layer, 2 * e.layer + 1};
            case ContributionEdge::Kind::Mlp:
            case ContributionEdge::Kind::MlpResidual: return {2 * e.layer + 1, 2 * e.layer + 2};
        }
        return {0, 0};
    }

    const ContributionGraph* graph_ = nullptr;
    QStringList tokens_;
    int layers_ = 0;
    bool fit_ = true;
    int labelsAt_ = 0;
};

FlowView::FlowView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    position_ = new QSpinBox(content);
    position_->setPrefix(tr("from position "));
    threshold_ = new QDoubleSpinBox(content);
    threshold_->setRange(0.0, 1.0);
    threshold_->setSingleStep(0.01);
    threshold_->setDecimals(3);
    threshold_->setValue(0.04);
    threshold_->setPrefix(tr("threshold "));
    threshold_->setToolTip(tr("Edges whose importance is below the threshold are dropped (Ferrando and Voita use 0.04)"));
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // tokens and prompts such as "<s>" are text
    canvas_ = new FlowCanvas(content);
    scroll_ = new QScrollArea(content);
    scroll_->setWidget(canvas_);
    scroll_->setWidgetResizable(true);
    // the row labels stay at the view's left edge while the graph scrolls sideways
    connect(scroll_->horizontalScrollBar(), &QScrollBar::valueChanged, canvas_, &FlowCanvas::setLabelsAt);
    fit_ = new QCheckBox(tr("Fit"), content);
    fit_->setChecked(true);
    fit_->setToolTip(tr("The whole graph in view (every token and block); unticked, each token gets room for its label "
                        "and the graph scrolls, the row labels pinned at the left"));
    connect(fit_, &QCheckBox::toggled, this, [this](bool on) {
        canvas_->setFit(on);
        if (!on && graph_) revealPosition();
    });
    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_);
    controls->addWidget(position_);
    controls->addWidget(threshold_);
    controls->addWidget(fit_);
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(scroll_, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace: this view draws how information flows from token to token through the blocks."));
    connect(threshold_, &QDoubleSpinBox::valueChanged, this, [this] { prune(); });
    connect(position_, &QSpinBox::valueChanged, this, [this] { prune(); });
    connect(this, &TraceView::promptChanged, this, [this] {
        stale_ = true;
        if (isVisible())
            recompute();
        else
            dropAnalysis();  // the last prompt's graph is not wanted any more
    });
}

QWidget* FlowView::canvas() const { return canvas_; }

void FlowView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    dropAnalysis();  // what was under way belongs to the last snapshot
    contributions_.reset();
    graph_.reset();
    canvas_->setGraph(nullptr, {}, 0);
    if (!snapshot_) {
        showPlaceholder(tr("Run a trace: this view draws how information flows from token to token through the blocks."));
        return;
    }
    if (const QString why = missingWeights(tr("The information flow")); !why.isEmpty()) {
        stale_ = false;
        return showPlaceholder(why);
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    showContent();
    stale_ = true;
    if (isVisible()) recompute();  // else when the tab is first shown: the importances cost a pass's worth of work
}

void FlowView::showEvent(QShowEvent* event) {
    TraceView::showEvent(event);
    if (stale_ && snapshot_) recompute();
}

void FlowView::setThreshold(double threshold) { threshold_->setValue(threshold); }

void FlowView::setPosition(int position) {
    if (position < 0) position += position_->maximum() + 1;
    position_->setValue(position);
}

void FlowView::recompute() {
    stale_ = false;
    contributions_.reset();
    graph_.reset();
    canvas_->setGraph(nullptr, {}, 0);
    if (!snapshot_) return dropAnalysis();
    const int row = prompt();
    const int n = static_cast<int>(snapshot_->result.batch.ids.at(static_cast<size_t>(row)).size());
    {
        const QSignalBlocker block(position_);
        position_->setRange(0, n - 1);
        position_->setValue(n - 1);
    }
    requestGraph();
}

void FlowView::prune() {
    // without importances yet, the graph under way is pruned again when it comes (graphEnded)
    if (!snapshot_ || !contributions_) return;
    requestGraph();
}

void FlowView::requestGraph() {
    const SnapshotPtr snapshot = snapshot_;
    const int row = prompt();
    const double threshold = threshold_->value();
    const int position = position_->value();
    const GraphOptions options = GraphOptions().withPosition(position).withThreshold(threshold);
    const std::optional<TokenContributions> known = contributions_;  // shares the tensors, which nothing writes
    if (!known)
        showStatus(tr("Computing the information flow of prompt %1 (the trace panel counts its blocks; Esc cancels)…").arg(row + 1), {});
    requestAnalysis(
        tr("information flow"), known ? 0 : snapshot->numLayers(),
        [snapshot, row, options, known](const JobControl& control) {
            const Model& model = *snapshot->model;
            TokenContributions contributions;
            if (known) {
                contributions = *known;
            } else {
                ContributionOptions o;
                o.progress = control.progressFrom(0, snapshot->numLayers());
                o.cancel = control.cancelFlag();
                contributions = tokenContributions(model, snapshot->result, row, o);
            }
            control.throwIfCancelled();
            return QVariant::fromValue(std::make_shared<const ContributionGraph>(
                contributionGraph(model, snapshot->result, row, std::move(contributions), options)));
        },
        [this, threshold, position](JobState state, const QVariant& result, const QString& message) {
            graphEnded(state, result, message, threshold, position);
        });
}

void FlowView::graphEnded(JobState state, const QVariant& result, const QString& message, double threshold, int position) {
    if (state == JobState::Cancelled) {
        if (!contributions_) {
            stale_ = true;  // computed again when the view is shown again (showEvent)
            return showStatus(tr("The information flow was cancelled: show the view again to compute it."), QStringLiteral("#8a5a00"));
        }
        return showStatus(tr("The graph was cancelled: change the threshold or the position to draw it."), QStringLiteral("#8a5a00"));
    }
    if (state == JobState::Failed) {
        graph_.reset();
        return showStatus(message, QStringLiteral("#a00010"));
    }
    graph_ = *result.value<std::shared_ptr<const ContributionGraph>>();
    contributions_ = graph_->contributions;
    // the threshold or position changed while the importances were computed: prune them again, now at hand
    if (threshold != threshold_->value() || position != position_->value()) return prune();
    const int row = prompt();
    status_->setStyleSheet(QString());
    status_->setText(tr("%n edge(s) of importance ≥ %1 from position %2. Blue: attention from one token to another; orange: an "
                        "MLP's write; grey: the residual carried past a sublayer. Width and opacity follow the importance "
                        "(Ferrando and Voita 2024). %3",
                        nullptr, static_cast<int>(graph_->edges.size()))
                         .arg(threshold_->value())
                         .arg(graph_->position)
                         .arg(QString::fromStdString(contributions_->note)));
    canvas_->setGraph(&*graph_, snapshot_->tokens.at(static_cast<size_t>(row)), snapshot_->numLayers());
    revealPosition();
}

void FlowView::revealPosition() {
    // Fitted, everything is in view. Otherwise the graph starts at the position's column: keep it in view (on a long
    // prompt it is the far right), at the right edge, so that as many of the earlier tokens it reads from stay in view.
    if (!graph_ || canvas_->fit()) return;
    QTimer::singleShot(0, this, [this] {
        if (!graph_) return;
        const int x = canvas_->columnX(static_cast<int>(graph_->position));
        scroll_->ensureVisible(x, 0, 60, 0);
    });
}

QVariantMap FlowView::choices() const { return {{"threshold", threshold_->value()}, {"fit", fit_->isChecked()}}; }

void FlowView::restoreChoices(const QVariantMap& choices) {
    threshold_->setValue(choices.value("threshold", threshold_->value()).toDouble());
    fit_->setChecked(choices.value("fit", fit_->isChecked()).toBool());
}

bool FlowView::fitted() const { return canvas_->fit(); }
void FlowView::setFitted(bool on) { fit_->setChecked(on); }
int FlowView::labelStep() const { return canvas_->labelStep(); }

void FlowView::showStatus(const QString& text, const QString& colour) {
    status_->setStyleSheet(colour.isEmpty() ? QString() : QStringLiteral("color: %1;").arg(colour));
    status_->setText(text);
    if (!colour.isEmpty()) canvas_->setGraph(nullptr, {}, 0);
}

PlotSource FlowView::plotSource() const {
    PlotSource s;
    s.widget = canvas();  // the whole graph, also what is scrolled out of view
    s.name = "flow";
    return s;
}

QMap<QString, QString> FlowView::settings() const {
    return {{"view", "flow"}, {"view.prompt", QString::number(prompt())}, {"view.position", QString::number(position_->value())},
            {"view.threshold", QString::number(threshold_->value())}, {"view.fit", fit_->isChecked() ? "true" : "false"}};
}

}  // namespace nnscope
