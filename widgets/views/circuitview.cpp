// SPDX-License-Identifier: MIT
#include "widgets/views/circuitview.h"
#include "widgets/views/plaintext.h"

#include "core/io/graphjson.h"
#include "core/model/error.h"
#include "widgets/panels/palette.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTextBrowser>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace nnscope {

namespace {

using Kind = GraphNode::Kind;

constexpr double kCell = 16;    ///< world units between two nodes of one cell
constexpr double kGap = 28;     ///< world units between two columns
constexpr double kRow = 64;     ///< world units between two rows
constexpr int kLeft = 64;       ///< screen pixels for the row names
constexpr int kBottom = 44;     ///< screen pixels for the tokens under the bottom row
constexpr int kTop = 64;        ///< screen pixels for the logits' tokens over the top row
/// Edges drawn when the whole graph is on screen (a third of it while dragging). The raster engine blends a long
/// translucent line in about 25 µs: 5000 lines draw in about 0.13 s on this 2-core machine.
constexpr int kEdgeBudget = 5000;

QColor positiveColor() { return QColor(0x2b, 0x6c, 0xc4); }
QColor negativeColor() { return QColor(0xd0, 0x3b, 0x3b); }
QColor supernodeColor(int i) {
    static const QColor colors[] = {QColor(0x8e, 0x44, 0xad), QColor(0x16, 0xa0, 0x85), QColor(0xd3, 0x54, 0x00),
                                    QColor(0x27, 0x5d, 0xad), QColor(0xc0, 0x39, 0x2b), QColor(0x7f, 0x8c, 0x20)};
    return colors[i % 6];
}

QString html(const std::string& text) { return QString::fromStdString(text).toHtmlEscaped(); }

/// "L2 feature 123 @4", "L1 error @3", "token “x” @0", "logit “y”".
QString nodeName(const GraphNode& n) {
    switch (n.kind) {
        case Kind::Feature: return QStringLiteral("L%1 feature %2 @%3").arg(n.layer).arg(n.index).arg(n.position);
        case Kind::Error: return QStringLiteral("L%1 error @%2").arg(n.layer).arg(n.position);
        case Kind::Token: return QStringLiteral("token “%1” @%2").arg(QString::fromStdString(n.token)).arg(n.position);
        case Kind::Logit: return QStringLiteral("logit “%1”").arg(QString::fromStdString(n.token));
    }
    return {};
}

}  // namespace

/// The drawing: nodes by layer and position, edges by sign, zoom and pan.
class CircuitCanvas : public QWidget {
public:
    explicit CircuitCanvas(QWidget* parent) : QWidget(parent) {
        setMouseTracking(true);
        setMinimumSize(300, 200);
        setFocusPolicy(Qt::ClickFocus);
    }

    std::function<void(int node, bool ctrl)> clicked;

    void setGraph(const AttributionGraph* graph, bool keepView) {
        graph_ = graph;
        layout();
        if (!keepView || !zoomed_) fit();
        update();
    }
    void setHideErrors(bool hide) {
        hideErrors_ = hide;
        update();
    }
    void setState(int selected, std::vector<uint8_t> pinned, std::vector<int> supernode) {
        selected_ = selected;
        pinned_ = std::move(pinned);
        supernode_ = std::move(supernode);
        update();
    }
    bool hidden(int i) const { return hideErrors_ && graph_->nodes[static_cast<size_t>(i)].kind == Kind::Error; }

    QPointF toScreen(const QPointF& world) const { return QPointF(world.x() * scaleX_, world.y() * scaleY_) + offset_; }
    QPointF nodePoint(int i) const { return toScreen(pos_[static_cast<size_t>(i)]); }
    /// A node's radius in pixels: its influence's size, shrunk where a cell's nodes stand closer than 18 pixels.
    double screenRadius(int i) const {
        return std::clamp(radius_[static_cast<size_t>(i)] * std::min(1.4, kCell * scaleX_ / 18), 2.0, 16.0);
    }

    int nodeAt(const QPoint& point) const {
        if (!graph_) return -1;
        int best = -1;
        double bestDistance = 1e18;
        for (int i = 0; i < static_cast<int>(pos_.size()); ++i) {
            if (hidden(i)) continue;
            const QPointF d = nodePoint(i) - QPointF(point);
            const double distance = std::hypot(d.x(), d.y());
            if (distance <= screenRadius(i) + 3 && distance < bestDistance) {
                best = i;
                bestDistance = distance;
            }
        }
        return best;
    }

    void fit() {
        zoomed_ = false;
        if (!graph_ || pos_.empty()) return;
        const double w = std::max(1.0, width_), h = std::max(1.0, rowsHeight());
        // rows and columns stretch apart to fill the canvas, as the attribution-graph frontend fills its pane
        scaleX_ = std::clamp((width() - kLeft - 20) / w, 0.02, 3.0);
        scaleY_ = std::clamp((height() - kBottom - kTop) / h, 0.02, 4.0);
        fitScale_ = scaleX_;
        offset_ = QPointF(kLeft + ((width() - kLeft - 20) - w * scaleX_) / 2, kTop + ((height() - kBottom - kTop) - h * scaleY_) / 2);
        update();
    }

protected:
    void resizeEvent(QResizeEvent*) override {
        if (!zoomed_) fit();
    }

    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), palette().base());
        const QColor text = palette().text().color();
        if (!graph_ || graph_->nodes.empty()) {
            p.setPen(palette().placeholderText().color());
            p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                       tr("No attribution graph.\nCompute Graph (above) traces the prompt's next token through the transcoders; "
                          "File ▸ Open Graph… reads a graph JSON written by circuit-tracer, downloaded from Neuronpedia, or saved here."));
            return;
        }
        p.setRenderHint(QPainter::Antialiasing);
        const int rows = numRows();
        // rows and their names
        QColor grid = text;
        grid.setAlphaF(0.08);
        for (int r = 0; r < rows; ++r) {
            const double y = toScreen({0, rowY(r)}).y();
            p.setPen(grid);
            p.drawLine(QPointF(kLeft - 4, y), QPointF(width(), y));
            p.setPen(mix(text, palette().base().color(), 0.35));
            const QString name = r == 0 ? tr("tokens") : r == rows - 1 ? tr("logits") : tr("L%1").arg(r - 1);
            p.drawText(QRectF(2, y - 9, kLeft - 10, 18), Qt::AlignRight | Qt::AlignVCenter, name);
        }
        // each position's column and its token under the bottom row
        const double bottom = toScreen({0, rowY(0)}).y();
        // a label is drawn where it clears the one before it: in narrow columns every second or third, never run together
        // ("1011121314" and "tothep…" at 1400 px)
        const QFontMetrics fm = p.fontMetrics();
        const double gap = fm.horizontalAdvance(QLatin1Char(' '));
        double tokenRight = -1e9, numberRight = -1e9;
        for (size_t c = 0; c < columnX_.size(); ++c) {
            const double x0 = toScreen({columnX_[c], 0}).x(), x1 = toScreen({columnX_[c] + columnW_[c], 0}).x();
            if (x1 < kLeft || x0 > width()) continue;
            p.setPen(grid);
            p.drawLine(QPointF(x0, kTop / 2.0), QPointF(x0, height() - 4));
            const double centre = (x0 + x1) / 2;
            const QString token = c < graph_->tokenStrings.size() ? QString::fromStdString(graph_->tokenStrings[c]).replace('\n', "⏎") : QString();
            const QString shown = fm.elidedText(token, Qt::ElideRight, static_cast<int>(std::max(x1 - x0 - gap, 0.0)));
            const double tokenWidth = fm.horizontalAdvance(shown);
            if (!shown.isEmpty() && shown != QStringLiteral("…") && centre - tokenWidth / 2 >= tokenRight + gap) {
                p.setPen(text);
                p.drawText(QRectF(centre - tokenWidth / 2 - 1, bottom + 12, tokenWidth + 2, 16), Qt::AlignHCenter | Qt::AlignTop, shown);
                tokenRight = centre + tokenWidth / 2;
            }
            const QString number = QString::number(c);
            const double numberWidth = fm.horizontalAdvance(number);
            if (centre - numberWidth / 2 >= numberRight + gap) {
                p.setPen(mix(text, palette().base().color(), 0.5));
                p.drawText(QRectF(centre - numberWidth / 2 - 1, bottom + 26, numberWidth + 2, 16), Qt::AlignHCenter | Qt::AlignTop, number);
                numberRight = centre + numberWidth / 2;
            }
        }
        // edges: those crossing the visible area, strongest first, up to the budget
        const QRectF visible = QRectF(rect()).adjusted(-2, -2, 2, 2);
        const double zoom = scaleX_ / std::max(fitScale_, 1e-9);
        const int64_t budget = static_cast<int64_t>(std::min(60000.0, kEdgeBudget * std::max(1.0, zoom * zoom)) / (dragging_ ? 3 : 1));
        constexpr int kBins = 6;
        std::vector<QLineF> bins[2][kBins];
        int64_t drawn = 0;
        for (const int64_t e : order_) {
            if (drawn >= budget) break;
            const int s = graph_->source[static_cast<size_t>(e)], t = edgeTarget_[static_cast<size_t>(e)];
            if (hidden(s) || hidden(t) || s == selected_ || t == selected_) continue;
            const QPointF a = nodePoint(s), b = nodePoint(t);
            if (!QRectF(a, b).normalized().adjusted(-1, -1, 1, 1).intersects(visible)) continue;
            const float w = graph_->weight[static_cast<size_t>(e)];
            const double strength = std::sqrt(std::abs(w) / maxAbs_);
            const int bin = std::clamp(static_cast<int>(strength * kBins), 0, kBins - 1);
            bins[w < 0][bin].emplace_back(a, b);
            ++drawn;
        }
        drawnEdges_ = drawn;
        // thousands of antialiased translucent lines cost seconds in the raster engine: past a few thousand, plain ones
        p.setRenderHint(QPainter::Antialiasing, drawn <= 3000);
        for (int sign = 0; sign < 2; ++sign)
            for (int bin = 0; bin < kBins; ++bin) {
                if (bins[sign][bin].empty()) continue;
                QColor c = sign ? negativeColor() : positiveColor();
                const double s = (bin + 0.5) / kBins;
                c.setAlphaF(selected_ >= 0 ? 0.06 + 0.2 * s : 0.12 + 0.7 * s);
                // past a few thousand edges, one-pixel lines (the raster engine's fast path) but for the strongest
                const double width = 0.5 + 2.5 * s * std::min(1.5, std::max(0.6, zoom / 2));
                p.setPen(QPen(c, drawn <= 3000 ? width : bin >= kBins - 2 ? 2.0 : 0.0));
                p.drawLines(bins[sign][bin].data(), static_cast<int>(bins[sign][bin].size()));
            }
        p.setRenderHint(QPainter::Antialiasing);
        // the selected node's edges over the rest
        if (selected_ >= 0) {
            for (size_t e = 0; e < order_.size(); ++e) {
                const int s = graph_->source[e], t = edgeTarget_[e];
                if ((s != selected_ && t != selected_) || hidden(s) || hidden(t)) continue;
                const float w = graph_->weight[e];
                QColor c = w < 0 ? negativeColor() : positiveColor();
                const double strength = std::sqrt(std::abs(w) / maxAbs_);
                c.setAlphaF(0.35 + 0.65 * strength);
                p.setPen(QPen(c, 1.0 + 3.0 * strength));
                p.drawLine(nodePoint(s), nodePoint(t));
            }
        }
        // nodes
        const QColor base = palette().base().color();
        const QColor outline = mix(text, base, 0.35);
        const QColor featureFill = tint(QColor(0xf4, 0xd8, 0x9a), palette(), 0.25);
        const QColor labelledFill = tint(QColor(0xa8, 0xdc, 0xb0), palette(), 0.25);
        const QColor errorFill = tint(QColor(0xd4, 0xd4, 0xd4), palette(), 0.25);
        const QColor tokenFill = tint(QColor(0xb4, 0xcf, 0xee), palette(), 0.25);
        const QColor logitFill = tint(QColor(0xc6, 0xe8, 0xbe), palette(), 0.25);
        const QColor pinColor(0xf0, 0x8c, 0x00);
        for (int i = 0; i < static_cast<int>(pos_.size()); ++i) {
            if (hidden(i)) continue;
            const QPointF c = nodePoint(i);
            const double r = screenRadius(i);
            if (!visible.adjusted(-r, -r, r, r).contains(c)) continue;
            const GraphNode& n = graph_->nodes[static_cast<size_t>(i)];
            p.setPen(QPen(outline, 1));
            const QRectF box(c.x() - r, c.y() - r, 2 * r, 2 * r);
            switch (n.kind) {
                case Kind::Feature:
                    p.setBrush(n.label.empty() ? featureFill : labelledFill);
                    p.drawEllipse(box);
                    break;
                case Kind::Error:
                    p.setBrush(errorFill);
                    p.drawRect(box.adjusted(r * 0.2, r * 0.2, -r * 0.2, -r * 0.2));
                    break;
                case Kind::Token:
                    p.setBrush(tokenFill);
                    p.drawRoundedRect(box, 2, 2);
                    break;
                case Kind::Logit:
                    p.setBrush(logitFill);
                    p.drawRoundedRect(box, 2, 2);
                    break;
            }
            const size_t k = static_cast<size_t>(i);
            if (k < supernode_.size() && supernode_[k] >= 0) {
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(supernodeColor(supernode_[k]), 2.5));
                p.drawEllipse(box.adjusted(-3, -3, 3, 3));
            }
            if (k < pinned_.size() && pinned_[k]) {
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(pinColor, 2.5));
                p.drawEllipse(box.adjusted(-5, -5, 5, 5));
            }
            if (i == selected_) {
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(palette().highlight().color(), 3));
                p.drawEllipse(box.adjusted(-7, -7, 7, 7));
            }
            // the logits' tokens over them; labels beside features once there is room
            if (n.kind == Kind::Logit) {
                p.setPen(text);
                const QString label = n.label.empty() ? QString::fromStdString(n.token) : QString::fromStdString(n.label);
                p.save();  // slanted, so that the logits of one column do not write over each other
                p.translate(c.x() + 2, c.y() - r - 3);
                p.rotate(-40);
                p.drawText(QPointF(0, 0), p.fontMetrics().elidedText(label, Qt::ElideRight, 110));
                p.restore();
            } else if (!n.label.empty() && (r >= 5 || i == selected_)) {
                // on a veil of the base colour, readable over the edges and the next nodes
                const QString label = p.fontMetrics().elidedText(QString::fromStdString(n.label), Qt::ElideRight, 140);
                const QRectF box(c.x() + r + 3, c.y() - 8, p.fontMetrics().horizontalAdvance(label) + 4, 16);
                QColor veil = base;
                veil.setAlphaF(0.85);
                p.fillRect(box, veil);
                p.setPen(text);
                p.drawText(box, Qt::AlignCenter, label);
            }
        }
        // the sign legend
        p.setPen(text);
        const QString legend = tr("edges: ▬ positive  ▬ negative");
        const int lw = p.fontMetrics().horizontalAdvance(legend);
        const QPointF at(width() - lw - 10, 16);
        p.drawText(at, tr("edges: "));
        const int prefix = p.fontMetrics().horizontalAdvance(tr("edges: "));
        p.setPen(positiveColor());
        p.drawText(at + QPointF(prefix, 0), tr("▬ positive"));
        p.setPen(negativeColor());
        p.drawText(at + QPointF(prefix + p.fontMetrics().horizontalAdvance(tr("▬ positive  ")), 0), tr("▬ negative"));
        if (drawnEdges_ < static_cast<int64_t>(order_.size()) && drawnEdges_ >= budget) {
            p.setPen(mix(text, base, 0.4));
            p.drawText(QPointF(kLeft, height() - 6), tr("the strongest %1 of %2 edges drawn: zoom in for more").arg(drawnEdges_).arg(order_.size()));
        }
    }

    void mousePressEvent(QMouseEvent* event) override {
        press_ = event->position();
        last_ = press_;
        dragging_ = false;
    }
    void mouseMoveEvent(QMouseEvent* event) override {
        if (event->buttons() & Qt::LeftButton) {
            if ((event->position() - press_).manhattanLength() > 4) dragging_ = true;
            if (dragging_) {
                offset_ += event->position() - last_;
                last_ = event->position();
                zoomed_ = true;
                update();
            }
            return;
        }
        const int i = nodeAt(event->position().toPoint());
        if (i >= 0) {
            const GraphNode& n = graph_->nodes[static_cast<size_t>(i)];
            QString tip = nodeName(n);
            if (!n.label.empty()) tip += "\n" + QString::fromStdString(n.label);
            setToolTip(plainToolTip(tip));
        } else
            setToolTip({});
    }
    void mouseReleaseEvent(QMouseEvent* event) override {
        if (dragging_) {
            dragging_ = false;
            update();  // every edge of the budget again
            return;
        }
        if (event->button() != Qt::LeftButton) return;
        if (clicked) clicked(nodeAt(event->position().toPoint()), event->modifiers() & Qt::ControlModifier);
    }
    void mouseDoubleClickEvent(QMouseEvent* event) override {
        if (nodeAt(event->position().toPoint()) < 0) fit();
    }
    void wheelEvent(QWheelEvent* event) override {
        const double factor = std::pow(1.15, event->angleDelta().y() / 120.0);
        const double next = std::clamp(scaleX_ * factor, fitScale_ * 0.5, 40.0);
        const double k = next / scaleX_;
        const QPointF at = event->position();
        offset_ = at - (at - offset_) * k;
        scaleX_ *= k;
        scaleY_ *= k;
        zoomed_ = true;
        update();
    }

private:
    int numRows() const { return graph_->numLayers + 2; }
    double rowsHeight() const { return (numRows() - 1) * kRow; }
    double rowY(int row) const { return (numRows() - 1 - row) * kRow; }
    int rowOf(const GraphNode& n) const {
        switch (n.kind) {
            case Kind::Token: return 0;
            case Kind::Logit: return numRows() - 1;
            default: return std::clamp(n.layer + 1, 1, numRows() - 2);
        }
    }

    /// Positions in world units: columns as wide as their fullest cell, nodes of a cell side by side by influence.
    void layout() {
        pos_.clear();
        radius_.clear();
        order_.clear();
        edgeTarget_.clear();
        columnX_.clear();
        columnW_.clear();
        if (!graph_) return;
        const auto& nodes = graph_->nodes;
        int64_t positions = static_cast<int64_t>(graph_->tokenStrings.size());
        for (const GraphNode& n : nodes) positions = std::max(positions, n.position + 1);
        const int rows = numRows();
        std::vector<std::vector<std::vector<int>>> cells(static_cast<size_t>(positions), std::vector<std::vector<int>>(static_cast<size_t>(rows)));
        for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
            const GraphNode& n = nodes[static_cast<size_t>(i)];
            cells[static_cast<size_t>(std::max<int64_t>(0, n.position))][static_cast<size_t>(rowOf(n))].push_back(i);
        }
        pos_.assign(nodes.size(), {});
        radius_.assign(nodes.size(), 4.0);
        double x = 0;
        for (size_t c = 0; c < cells.size(); ++c) {
            size_t widest = 1;
            for (const auto& cell : cells[c]) widest = std::max(widest, cell.size());
            const double width = static_cast<double>(widest) * kCell + kGap;
            columnX_.push_back(x);
            columnW_.push_back(width);
            for (int r = 0; r < rows; ++r) {
                auto& cell = cells[c][static_cast<size_t>(r)];
                // the most influential (smallest cumulative score) in the middle of the cell
                std::stable_sort(cell.begin(), cell.end(), [&](int a, int b) {
                    const float ia = nodes[static_cast<size_t>(a)].influence, ib = nodes[static_cast<size_t>(b)].influence;
                    return (std::isnan(ib) && !std::isnan(ia)) || ia < ib;
                });
                const double start = x + (width - static_cast<double>(cell.size()) * kCell) / 2 + kCell / 2;
                // places from the centre outwards, so that the strongest sit in the middle of the cell
                std::vector<size_t> places(cell.size());
                for (size_t k = 0; k < places.size(); ++k) places[k] = k;
                const double centre = (static_cast<double>(cell.size()) - 1) / 2;
                std::stable_sort(places.begin(), places.end(), [centre](size_t a, size_t b) {
                    return std::abs(static_cast<double>(a) - centre) < std::abs(static_cast<double>(b) - centre);
                });
                for (size_t k = 0; k < cell.size(); ++k) {
                    const size_t i = static_cast<size_t>(cell[k]);
                    pos_[i] = QPointF(start + static_cast<double>(places[k]) * kCell, rowY(r));
                    const float influence = nodes[i].influence;
                    // tokens and logits as large marks (circuit-tracer gives logits no influence); features and errors by influence
                    radius_[i] = nodes[i].kind == Kind::Token || nodes[i].kind == Kind::Logit ? 6.5
                                 : std::isnan(influence)                                     ? 4.5
                                          : 3.0 + 5.5 * std::clamp(1.0 - static_cast<double>(influence), 0.0, 1.0);
                }
            }
            x += width;
        }
        width_ = x;
        // edges by |weight| descending
        edgeTarget_.assign(graph_->source.size(), 0);
        for (size_t t = 0; t + 1 < graph_->rowStart.size(); ++t)
            for (int64_t e = graph_->rowStart[t]; e < graph_->rowStart[t + 1]; ++e) edgeTarget_[static_cast<size_t>(e)] = static_cast<int>(t);
        order_.resize(graph_->source.size());
        for (size_t e = 0; e < order_.size(); ++e) order_[e] = static_cast<int64_t>(e);
        std::sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) {
            return std::abs(graph_->weight[static_cast<size_t>(a)]) > std::abs(graph_->weight[static_cast<size_t>(b)]);
        });
        maxAbs_ = order_.empty() ? 1.0 : std::max(1e-12, static_cast<double>(std::abs(graph_->weight[static_cast<size_t>(order_.front())])));
    }

    const AttributionGraph* graph_ = nullptr;
    std::vector<QPointF> pos_;
    std::vector<double> radius_;
    std::vector<int64_t> order_;
    std::vector<int> edgeTarget_;
    std::vector<double> columnX_, columnW_;
    double width_ = 1, maxAbs_ = 1;
    double scaleX_ = 1, scaleY_ = 1, fitScale_ = 1;
    QPointF offset_;
    bool zoomed_ = false, dragging_ = false, hideErrors_ = false;
    QPointF press_, last_;
    int selected_ = -1;
    std::vector<uint8_t> pinned_;
    std::vector<int> supernode_;
    mutable int64_t drawnEdges_ = 0;
};

CircuitView::CircuitView(QWidget* parent) : QWidget(parent) {
    auto makeSlider = [this](int value, const QString& tip) {
        auto* s = new QSlider(Qt::Horizontal, this);
        s->setRange(0, 1000);
        s->setSingleStep(5);
        s->setPageStep(50);
        s->setValue(value);
        s->setMinimumWidth(140);
        s->setToolTip(tip);
        return s;
    };
    nodeSlider_ = makeSlider(1000, tr("Node threshold: keep the nodes holding this share of the influence on the logits "
                                      "(circuit-tracer's prune_graph; 0.8 by default, 1.00 with the edge threshold at 1.00: the graph as given)"));
    nodeSlider_->setObjectName("nodeThreshold");
    edgeSlider_ = makeSlider(1000, tr("Edge threshold: keep the edges holding this share of the edge influence (0.98 by default)"));
    edgeSlider_->setObjectName("edgeThreshold");
    nodeValue_ = new QLabel(this);
    edgeValue_ = new QLabel(this);
    for (QLabel* l : {nodeValue_, edgeValue_}) l->setMinimumWidth(l->fontMetrics().horizontalAdvance("0.000") + 4);
    hideErrors_ = new QCheckBox(tr("Hide errors"), this);
    hideErrors_->setToolTip(tr("Hide the MLP reconstruction error nodes and their edges"));
    status_ = new QLabel(this);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // a prompt's "<s>" is text
    status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

    canvas_ = new CircuitCanvas(this);
    canvas_->setObjectName("circuitCanvas");
    card_ = new QTextBrowser(this);
    card_->setObjectName("circuitCard");
    card_->setOpenLinks(false);
    label_ = new QLineEdit(this);
    label_->setPlaceholderText(tr("Label of the selected node (Return)"));
    label_->setEnabled(false);
    pin_ = new QPushButton(tr("Pin"), this);
    pin_->setToolTip(tr("Pin the selected node into the subgraph (Ctrl+click a node)"));
    pin_->setEnabled(false);
    group_ = new QPushButton(tr("Group pinned…"), this);
    group_->setToolTip(tr("Make a named supernode of the pinned nodes"));
    group_->setEnabled(false);
    steer_ = new QPushButton(tr("Steer pinned…"), this);
    steer_->setObjectName("circuitSteer");
    steer_->setToolTip(tr("Scale or clamp the pinned features (0 ablates them), at each node's own position or wherever they fire, as "
                          "interventions: run the trace to see the new next-token probabilities (Before / after compares them) and "
                          "generate with them"));
    steer_->setEnabled(false);
    groups_ = new QLabel(this);
    groups_->setWordWrap(true);
    groups_->setTextFormat(Qt::RichText);

    transcoders_ = new QLineEdit(this);
    transcoders_->setObjectName("circuitTranscoders");
    transcoders_->setPlaceholderText(tr("Transcoders folder (circuit-tracer config.yaml, or one SAELens transcoder per block)"));
    chooseTranscoders_ = new QPushButton(tr("Choose…"), this);
    compute_ = new QPushButton(tr("Compute Graph"), this);
    compute_->setObjectName("circuitCompute");
    compute_->setToolTip(tr("The attribution graph of the shown prompt's next-token prediction through these transcoders "
                            "(circuit-tracer 0.5.0's method: attention patterns and norm scales frozen, MLPs replaced by the "
                            "transcoders plus error nodes); the estimate of its memory and time comes first"));
    computeMessage_ = new QLabel(this);
    computeMessage_->setObjectName("circuitComputeMessage");
    computeMessage_->setTextFormat(Qt::PlainText);
    computeMessage_->setWordWrap(true);
    // Long lines (an estimate, a prompt in the status) wrap or clip inside the view; they never widen the window.
    computeMessage_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* computeRow = new QHBoxLayout;
    computeRow->addWidget(new QLabel(tr("Transcoders"), this));
    computeRow->addWidget(transcoders_, 1);
    computeRow->addWidget(chooseTranscoders_);
    computeRow->addWidget(compute_);

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Nodes"), this));
    top->addWidget(nodeSlider_);
    top->addWidget(nodeValue_);
    top->addSpacing(8);
    top->addWidget(new QLabel(tr("Edges"), this));
    top->addWidget(edgeSlider_);
    top->addWidget(edgeValue_);
    top->addSpacing(8);
    top->addWidget(hideErrors_);
    top->addStretch(1);

    auto* side = new QWidget(this);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    sideLayout->addWidget(card_, 1);
    sideLayout->addWidget(label_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(pin_);
    buttons->addWidget(group_);
    sideLayout->addLayout(buttons);
    sideLayout->addWidget(steer_);  // its own row: three buttons side by side made the card pane squeeze the graph
    sideLayout->addWidget(groups_);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(canvas_);
    split->addWidget(side);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    split->setSizes({900, 280});

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(computeRow);
    layout->addWidget(computeMessage_);
    layout->addLayout(top);
    layout->addWidget(status_);
    layout->addWidget(split, 1);

    connect(nodeSlider_, &QSlider::valueChanged, this, &CircuitView::reprune);
    connect(edgeSlider_, &QSlider::valueChanged, this, &CircuitView::reprune);
    connect(hideErrors_, &QCheckBox::toggled, this, [this](bool hide) {
        canvas_->setHideErrors(hide);
        updateStatus();
    });
    connect(label_, &QLineEdit::editingFinished, this, [this] {
        if (!selected_.empty()) setLabel(selected_, label_->text());
    });
    connect(pin_, &QPushButton::clicked, this, [this] {
        if (!selected_.empty()) togglePin(selected_);
    });
    connect(group_, &QPushButton::clicked, this, &CircuitView::groupDialog);
    connect(steer_, &QPushButton::clicked, this, [this] {
        const std::vector<GraphNode> features = pinnedFeatures();
        if (features.empty()) return;
        QDialog dialog(this);
        dialog.setWindowTitle(tr("Steer pinned features"));
        auto* how = new QComboBox(&dialog);
        how->setObjectName("circuitSteerHow");
        how->addItems({tr("Scale by"), tr("Set to")});
        auto* value = new QDoubleSpinBox(&dialog);
        value->setObjectName("circuitSteerValue");
        value->setRange(-1000.0, 1000.0);
        value->setDecimals(3);
        value->setValue(0.0);
        value->setToolTip(tr("Scale: 0 ablates, 2 doubles, -1 flips. Set: the activation the features are clamped to."));
        auto* own = new QCheckBox(tr("Only at each node's own position"), &dialog);
        own->setObjectName("circuitSteerOwnPosition");
        own->setChecked(true);
        own->setToolTip(tr("A feature node is one feature at one position: change it there only (circuit-tracer's interventions), "
                           "or, unchecked, at every position of the prompt and of the generation"));
        auto* row = new QHBoxLayout;
        row->addWidget(how);
        row->addWidget(value, 1);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
        connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
        connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
        auto* layout = new QVBoxLayout(&dialog);
        layout->addWidget(new QLabel(tr("The %n pinned feature(s):", "", static_cast<int>(features.size())), &dialog));
        layout->addLayout(row);
        layout->addWidget(own);
        layout->addWidget(buttons);
        if (dialog.exec() == QDialog::Accepted)
            emit steerRequested(features, value->value(), how->currentIndex() == 1, own->isChecked());
    });
    connect(chooseTranscoders_, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Transcoders"), transcoders_->text());
        if (!dir.isEmpty()) transcoders_->setText(dir);
    });
    connect(compute_, &QPushButton::clicked, this, [this] { emit computeRequested(transcoders_->text().trimmed()); });
    connect(transcoders_, &QLineEdit::returnPressed, this, [this] {
        if (compute_->isEnabled()) emit computeRequested(transcoders_->text().trimmed());
    });
    setComputeEnabled(false, tr("Open a model and run a trace to compute a graph of its prompt."));
    canvas_->clicked = [this](int node, bool ctrl) {
        const std::string id = node >= 0 ? shown_.nodes[static_cast<size_t>(node)].nodeId() : std::string();
        if (ctrl && node >= 0) togglePin(id);
        selectNode(id);
    };
    reprune();
}

CircuitView::~CircuitView() = default;

void CircuitView::setTranscodersDir(const QString& dir) { transcoders_->setText(dir); }
QString CircuitView::transcodersDir() const { return transcoders_->text().trimmed(); }

void CircuitView::setComputeEnabled(bool enabled, const QString& reason) {
    compute_->setEnabled(enabled);
    compute_->setToolTip(enabled ? tr("The attribution graph of the shown prompt's next-token prediction through these transcoders "
                                      "(circuit-tracer 0.5.0's method); the estimate of its memory and time comes first")
                                 : reason);
    // The line says why the button is disabled unless it shows an estimate or an outcome (kept while a graph runs).
    const bool showsReason = computeMessage_->text().isEmpty() || computeMessage_->text() == computeMessage_->property("reason").toString();
    if (showsReason) computeMessage_->setText(enabled ? QString() : reason);
    computeMessage_->setProperty("reason", enabled || !showsReason ? QString() : reason);
}

void CircuitView::setComputeMessage(const QString& text) { computeMessage_->setText(text); }

std::vector<GraphNode> CircuitView::pinnedFeatures() const {
    std::vector<GraphNode> out;
    for (const std::string& id : full_.pinnedIds)
        for (const GraphNode& n : full_.nodes)
            if (n.kind == GraphNode::Kind::Feature && n.nodeId() == id) {
                out.push_back(n);
                break;
            }
    return out;
}

void CircuitView::setFeatureDetails(std::function<QString(const GraphNode&)> details) {
    featureDetails_ = std::move(details);
    updateCard();
}

QWidget* CircuitView::canvas() const { return canvas_; }

void CircuitView::setGraph(AttributionGraph graph) {
    full_ = std::move(graph);
    hasGraph_ = true;
    selected_.clear();
    const bool computed = !full_.modelDir.empty();
    // The replacement and completeness scores are the full graph's: a pruned file has lost most error nodes (every block
    // has one at every position in the full graph) and would score 1.000. Such a file shows none.
    int64_t errors = 0, layers = -1;
    for (const GraphNode& n : full_.nodes) {
        errors += n.kind == GraphNode::Kind::Error;
        if (n.kind == GraphNode::Kind::Logit) layers = n.layer - 1;  // a logit's layer is the number of layers + 1
    }
    prunedFile_ = !computed && layers > 0 && errors < layers * static_cast<int64_t>(full_.tokenStrings.size());
    scores_.reset();
    if (!prunedFile_) {
        try {
            scores_ = graphScores(full_);
        } catch (const Error&) {
        }
    }
    const QSignalBlocker a(nodeSlider_), b(edgeSlider_);
    nodeSlider_->setValue(computed ? static_cast<int>(std::lround(full_.nodeThreshold * 1000)) : 1000);
    edgeSlider_->setValue(computed ? static_cast<int>(std::lround(full_.edgeThreshold * 1000)) : 1000);
    reprune();
}

QString CircuitView::openGraph(const QString& path) {
    try {
        AttributionGraph graph = readGraphJson(path.toStdString());
        file_ = path;
        setGraph(std::move(graph));
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

QString CircuitView::saveGraph(const QString& path) const {
    if (!hasGraph_) return tr("There is no graph to save: open or compute one first.");
    try {
        writeGraphJson(shown_, path.toStdString());
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

void CircuitView::setThresholds(double node, double edge) {
    const QSignalBlocker a(nodeSlider_), b(edgeSlider_);
    nodeSlider_->setValue(static_cast<int>(std::lround(std::clamp(node, 0.0, 1.0) * 1000)));
    edgeSlider_->setValue(static_cast<int>(std::lround(std::clamp(edge, 0.0, 1.0) * 1000)));
    reprune();
}

double CircuitView::nodeThreshold() const { return nodeSlider_->value() / 1000.0; }
double CircuitView::edgeThreshold() const { return edgeSlider_->value() / 1000.0; }

void CircuitView::setHideErrors(bool hide) { hideErrors_->setChecked(hide); }

int CircuitView::visibleNodeCount() const {
    int count = 0;
    for (const GraphNode& n : shown_.nodes) count += !(hideErrors_->isChecked() && n.kind == Kind::Error);
    return count;
}

int CircuitView::visibleEdgeCount() const {
    if (!hideErrors_->isChecked()) return static_cast<int>(shown_.edgeCount());
    int count = 0;
    for (size_t t = 0; t + 1 < shown_.rowStart.size(); ++t)
        for (int64_t e = shown_.rowStart[t]; e < shown_.rowStart[t + 1]; ++e)
            count += shown_.nodes[t].kind != Kind::Error &&
                     shown_.nodes[static_cast<size_t>(shown_.source[static_cast<size_t>(e)])].kind != Kind::Error;
    return count;
}

void CircuitView::reprune() {
    nodeValue_->setText(QString::number(nodeThreshold(), 'f', 2));
    edgeValue_->setText(QString::number(edgeThreshold(), 'f', 3));
    if (!hasGraph_) {
        canvas_->setGraph(nullptr, false);
        updateStatus();
        updateCard();
        return;
    }
    const std::string selected = selected_;
    try {
        if (nodeThreshold() >= 1 && edgeThreshold() >= 1) {
            shown_ = full_;
        } else {
            const PruneResult r = pruneGraph(full_, nodeThreshold(), edgeThreshold());
            shown_ = prunedSubgraph(full_, r, nodeThreshold(), edgeThreshold());
        }
    } catch (const Error& e) {
        shown_ = AttributionGraph();
        status_->setText(QString::fromStdString(e.what()));
    }
    canvas_->setGraph(&shown_, true);
    selected_ = shownIndex(selected) >= 0 ? selected : std::string();
    updateCard();
    updateStatus();
    emit graphChanged();
}

int CircuitView::shownIndex(const std::string& id) const {
    if (id.empty()) return -1;
    for (size_t i = 0; i < shown_.nodes.size(); ++i)
        if (shown_.nodes[i].nodeId() == id) return static_cast<int>(i);
    return -1;
}

void CircuitView::selectNode(const std::string& id) {
    selected_ = shownIndex(id) >= 0 ? id : std::string();
    updateCard();
}

std::string CircuitView::selectedNode() const { return selected_; }

void CircuitView::togglePin(const std::string& id) {
    if (shownIndex(id) < 0) return;
    for (AttributionGraph* g : {&full_, &shown_}) {
        auto it = std::find(g->pinnedIds.begin(), g->pinnedIds.end(), id);
        if (it != g->pinnedIds.end()) g->pinnedIds.erase(it);
        else g->pinnedIds.push_back(id);
    }
    updateCard();
    emit graphChanged();
}

bool CircuitView::groupPinned(const QString& name) {
    if (shown_.pinnedIds.empty()) return false;
    Supernode group{name.toStdString(), shown_.pinnedIds};
    for (AttributionGraph* g : {&full_, &shown_}) g->supernodes.push_back(group);  // the pins stay (Neuronpedia's subgraph)
    updateCard();
    emit graphChanged();
    return true;
}

void CircuitView::groupDialog() {
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Group pinned nodes"), tr("Supernode name:"), QLineEdit::Normal,
                                               tr("supernode %1").arg(shown_.supernodes.size() + 1), &ok);
    if (ok && !name.trimmed().isEmpty()) groupPinned(name.trimmed());
}

void CircuitView::setLabel(const std::string& id, const QString& label) {
    const std::string text = label.trimmed().toStdString();
    bool changed = false;
    for (AttributionGraph* g : {&full_, &shown_})
        for (GraphNode& n : g->nodes)
            if (n.nodeId() == id && n.label != text) {
                n.label = text;
                changed = true;
            }
    if (!changed) return;
    updateCard();
    emit graphChanged();
}

void CircuitView::updateCard() {
    const int index = shownIndex(selected_);
    // the canvas's marks: selection, pins, supernodes
    std::unordered_map<std::string, int> ids;
    for (size_t i = 0; i < shown_.nodes.size(); ++i) ids.emplace(shown_.nodes[i].nodeId(), static_cast<int>(i));
    std::vector<uint8_t> pinned(shown_.nodes.size(), 0);
    std::vector<int> group(shown_.nodes.size(), -1);
    for (const std::string& id : shown_.pinnedIds)
        if (auto it = ids.find(id); it != ids.end()) pinned[static_cast<size_t>(it->second)] = 1;
    QStringList groups;
    for (size_t g = 0; g < shown_.supernodes.size(); ++g) {
        for (const std::string& id : shown_.supernodes[g].nodeIds)
            if (auto it = ids.find(id); it != ids.end()) group[static_cast<size_t>(it->second)] = static_cast<int>(g);
        groups << QStringLiteral("<span style='color:%1'>●</span> %2 (%3)")
                      .arg(supernodeColor(static_cast<int>(g)).name(), html(shown_.supernodes[g].name))
                      .arg(shown_.supernodes[g].nodeIds.size());
    }
    canvas_->setState(index, std::move(pinned), std::move(group));
    groups_->setText((shown_.pinnedIds.empty() ? QString() : tr("%n pinned. ", "", static_cast<int>(shown_.pinnedIds.size()))) +
                     (groups.isEmpty() ? QString() : tr("Supernodes: ") + groups.join(QStringLiteral(", "))));
    group_->setEnabled(!shown_.pinnedIds.empty());
    steer_->setEnabled(!pinnedFeatures().empty() && !full_.modelDir.empty());
    pin_->setEnabled(index >= 0);
    label_->setEnabled(index >= 0);
    if (index < 0) {
        label_->clear();
        pin_->setText(tr("Pin"));
        card_->setHtml(hasGraph_ ? tr("<p>Click a node for its card. Ctrl+click pins it; <b>Group pinned…</b> makes a named supernode "
                                      "of the pinned nodes. Wheel zooms, dragging pans, double-click fits.</p>")
                                 : tr("<p>No graph. Compute Graph traces the shown prompt's next token through the transcoders; File ▸ Open Graph… "
                                      "reads a circuit-tracer or Neuronpedia graph JSON.</p>"));
        return;
    }
    const GraphNode& n = shown_.nodes[static_cast<size_t>(index)];
    const bool isPinned = std::find(shown_.pinnedIds.begin(), shown_.pinnedIds.end(), selected_) != shown_.pinnedIds.end();
    pin_->setText(isPinned ? tr("Unpin") : tr("Pin"));
    if (label_->text().toStdString() != n.label) label_->setText(QString::fromStdString(n.label));
    auto tokenAt = [&](int64_t pos) {
        return pos >= 0 && pos < static_cast<int64_t>(shown_.tokenStrings.size()) ? html(shown_.tokenStrings[static_cast<size_t>(pos)]) : QString();
    };
    QString text;
    switch (n.kind) {
        case Kind::Feature:
            text = tr("<h3>Feature %1</h3><p>Layer %2, position %3 (“%4”)</p><p>Activation <b>%5</b></p>")
                       .arg(n.index).arg(n.layer).arg(n.position).arg(tokenAt(n.position)).arg(n.activation, 0, 'g', 5);
            if (featureDetails_) text += featureDetails_(n);
            break;
        case Kind::Error:
            text = tr("<h3>MLP reconstruction error</h3><p>Layer %1, position %2 (“%3”): what the transcoder leaves out of "
                      "this MLP's output</p>").arg(n.layer).arg(n.position).arg(tokenAt(n.position));
            break;
        case Kind::Token:
            text = tr("<h3>Token “%1”</h3><p>Position %2, token id %3</p>").arg(html(n.token)).arg(n.position).arg(n.index);
            break;
        case Kind::Logit:
            text = tr("<h3>Logit “%1”</h3><p>Token id %2, probability <b>%3</b>%4</p>")
                       .arg(html(n.token)).arg(n.index).arg(n.tokenProb, 0, 'f', 4)
                       .arg(n.targetLogit ? tr(" (the most probable: the target)") : QString());
            break;
    }
    if (!std::isnan(n.influence) && n.kind != Kind::Logit)
        text += tr("<p>Cumulative influence %1 (the share held by this node and every stronger one)</p>").arg(n.influence, 0, 'f', 4);
    if (!n.label.empty()) text += tr("<p>Label: <i>%1</i></p>").arg(html(n.label));
    text += QStringLiteral("<p style='color:gray'>%1</p>").arg(html(n.nodeId()));
    // its strongest edges in the graph shown
    struct Link {
        float weight;
        int other;
    };
    std::vector<Link> in, out;
    for (size_t t = 0; t + 1 < shown_.rowStart.size(); ++t)
        for (int64_t e = shown_.rowStart[t]; e < shown_.rowStart[t + 1]; ++e) {
            const int s = shown_.source[static_cast<size_t>(e)];
            const float w = shown_.weight[static_cast<size_t>(e)];
            if (static_cast<int>(t) == index) in.push_back({w, s});
            if (s == index) out.push_back({w, static_cast<int>(t)});
        }
    auto list = [&](std::vector<Link>& links, const QString& title) {
        if (links.empty()) return;
        std::sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return std::abs(a.weight) > std::abs(b.weight); });
        text += QStringLiteral("<p><b>%1</b> (%2)<br>").arg(title).arg(links.size());
        for (size_t k = 0; k < std::min<size_t>(6, links.size()); ++k) {
            const QColor c = links[k].weight < 0 ? negativeColor() : positiveColor();
            text += QStringLiteral("<span style='color:%1'>%2</span> %3<br>")
                        .arg(c.name()).arg(links[k].weight, 0, 'f', 3)
                        .arg(nodeName(shown_.nodes[static_cast<size_t>(links[k].other)]).toHtmlEscaped());
        }
        text += "</p>";
    };
    list(in, tr("Strongest inputs"));
    list(out, tr("Strongest outputs"));
    card_->setHtml(text);
}

void CircuitView::updateStatus() {
    if (!hasGraph_) {
        status_->setText(tr("No graph: Compute Graph, or File ▸ Open Graph… (a circuit-tracer or Neuronpedia graph JSON)"));
        return;
    }
    QString text = tr("%1 of %2 nodes, %3 of %4 edges shown")
                       .arg(visibleNodeCount()).arg(full_.nodes.size()).arg(visibleEdgeCount()).arg(full_.edgeCount());
    if (scores_) text += tr(" · replacement score %1 · completeness %2").arg(scores_->replacement, 0, 'f', 3).arg(scores_->completeness, 0, 'f', 3);
    else if (prunedFile_) text += tr(" · a pruned graph: its scores are the full graph's (nnscope circuit prints them)");
    if (!full_.prompt.empty()) text += tr(" · “%1”").arg(QString::fromStdString(full_.prompt).left(80));
    if (!file_.isEmpty()) text += QStringLiteral(" · ") + QFileInfo(file_).fileName();
    status_->setText(text);
}

int CircuitView::nodeAt(const QPoint& point) const { return canvas_->nodeAt(point); }

QPointF CircuitView::nodePoint(int index) const { return canvas_->nodePoint(index); }

}  // namespace nnscope
