// SPDX-License-Identifier: MIT
#include "widgets/views/flowview.h"

#include <torch/types.h>

#include <QDoubleSpinBox>
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
        const int columns = std::max(1, static_cast<int>(tokens_.size()));
        setMinimumSize(kLeft + columns * kColumn + 20, kTop + (2 * layers_ + 1) * kLevel + kBottom);
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        p.fillRect(rect(), palette().base());
        const QColor text = palette().text().color();
        p.setPen(text);
        for (int level = 0; level <= 2 * layers_; ++level) {
            const QString name = level == 0 ? tr("embeddings")
                                 : level % 2 ? tr("block %1 attention").arg((level - 1) / 2) : tr("block %1 MLP").arg((level - 1) / 2);
            p.drawText(QRect(2, y(level) - 8, kLeft - 8, 16), Qt::AlignRight | Qt::AlignVCenter, name);
        }
        for (int i = 0; i < tokens_.size(); ++i) {
            p.save();
            p.translate(x(i) + 4, y(0) + 14);
            p.rotate(45);
            p.drawText(0, 0, tokens_[i]);
            p.restore();
        }
        if (!graph_) return;
        // nodes reached, then the edges over them
        p.setPen(Qt::NoPen);
        for (const auto& e : graph_->edges) {
            const auto [fromLevel, toLevel] = levels(e);
            for (const auto& [level, pos] : {std::pair{fromLevel, e.from}, std::pair{toLevel, e.to}}) {
                p.setBrush(palette().mid());
                p.drawEllipse(QPointF(x(static_cast<int>(pos)), y(level)), 3, 3);
            }
        }
        for (const auto& e : graph_->edges) {
            const auto [fromLevel, toLevel] = levels(e);
            QColor c = e.kind == ContributionEdge::Kind::Attention ? QColor(0x21, 0x66, 0xac)
                       : e.kind == ContributionEdge::Kind::Mlp     ? QColor(0xe6, 0x86, 0x2b)
                                                                    : QColor(0x90, 0x90, 0x90);
            c.setAlphaF(0.25 + 0.75 * e.weight);
            p.setPen(QPen(c, 0.5 + 6.0 * e.weight, Qt::SolidLine, Qt::RoundCap));
            QPointF a(x(static_cast<int>(e.from)), y(fromLevel)), b(x(static_cast<int>(e.to)), y(toLevel));
            if (e.kind == ContributionEdge::Kind::Mlp) a.rx() += 6, b.rx() += 6;  // beside the residual's line
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
                QToolTip::showText(help->globalPos(), tr("block %1 %2: %3 “%4” → %5 “%6”\nimportance %7%8")
                                                          .arg(best->layer)
                                                          .arg(edgeKindName(best->kind))
                                                          .arg(best->from)
                                                          .arg(tokens_.value(static_cast<int>(best->from)))
                                                          .arg(best->to)
                                                          .arg(tokens_.value(static_cast<int>(best->to)))
                                                          .arg(best->weight, 0, 'f', 3)
                                                          .arg(heads),
                                   this);
            } else {
                QToolTip::hideText();
            }
            return true;
        }
        return QWidget::event(ev);
    }

private:
    static constexpr int kLeft = 130, kColumn = 56, kTop = 16, kLevel = 46, kBottom = 70;
    double x(int position) const { return kLeft + kColumn * (position + 0.5); }
    int y(int level) const { return kTop + (2 * layers_ - level) * kLevel; }
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
    canvas_ = new FlowCanvas(content);
    scroll_ = new QScrollArea(content);
    scroll_->setWidget(canvas_);
    scroll_->setWidgetResizable(true);
    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_);
    controls->addWidget(position_);
    controls->addWidget(threshold_);
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
    // the graph starts at the position's column: keep it in view (on a long prompt it is the far right), at the right
    // edge, so that as many of the earlier tokens it reads from (and, on a short prompt, the row labels) stay in view
    const int x = canvas_->columnX(static_cast<int>(graph_->position));
    const int margin = graph_->position > 0 ? x - canvas_->columnX(static_cast<int>(graph_->position) - 1) : 60;
    QTimer::singleShot(0, this, [this, x, margin] { scroll_->ensureVisible(x, 0, margin, 0); });
}

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
            {"view.threshold", QString::number(threshold_->value())}};
}

}  // namespace nnscope
