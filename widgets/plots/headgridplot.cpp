// SPDX-License-Identifier: MIT
#include "widgets/plots/headgridplot.h"
#include "widgets/views/plaintext.h"

#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

#include <torch/types.h>

#include <QScrollArea>
#include <QScrollBar>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nnscope {

namespace {
constexpr int kMinTile = 110;    // pixels: a tile is never smaller; the grid scrolls instead
constexpr int kScaleWidth = 90;  // pixels: the colour scale beside the tiles, with its labels
}

HeadGridPlot::HeadGridPlot(QWidget* parent) : QWidget(parent) {
    plot_ = new QCustomPlot;
    plot_->setInteractions({});
    plot_->setMouseTracking(true);
    plot_->setAttribute(Qt::WA_NoMousePropagation, false);  // a right-click reaches the view's menu (see HeatmapPlot)
    auto* scroll = new QScrollArea(this);
    scroll_ = scroll;
    scroll->setWidget(plot_);
    scroll->setWidgetResizable(true);
    scroll->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
    connect(plot_, &QCustomPlot::mouseMove, this, &HeadGridPlot::onMouseMove);
    connect(plot_, &QCustomPlot::mousePress, this, &HeadGridPlot::onMousePress);
    // QCustomPlot takes every wheel event; the grid is taller than its scroll area, so the wheel scrolls the area.
    connect(plot_, &QCustomPlot::mouseWheel, this, [scroll](QWheelEvent* event) {
        QScrollBar* bar = event->modifiers() & Qt::ShiftModifier ? scroll->horizontalScrollBar() : scroll->verticalScrollBar();
        bar->setValue(bar->value() - qRound(event->angleDelta().y() / 120.0 * bar->singleStep() * 3));
    });
    followPalette(plot_);
}

void HeadGridPlot::setPattern(const torch::Tensor& pattern, const QStringList& tokens) {
    pattern_ = pattern.to(torch::kFloat32).contiguous();
    tokens_ = tokens;
    // Everything of the last pattern goes: its maps, axis rects, margin group and colour scale (a model with other
    // head counts or lengths starts from an empty plot).
    plot_->clearPlottables();
    plot_->plotLayout()->clear();
    for (QCPMarginGroup* g : plot_->findChildren<QCPMarginGroup*>()) delete g;
    maps_.clear();
    rects_.clear();
    const int heads = static_cast<int>(pattern_.size(0)), n = static_cast<int>(pattern_.size(1));
    columns_ = std::max(1, static_cast<int>(std::ceil(std::sqrt(heads * 1.5))));
    rows_ = (heads + columns_ - 1) / columns_;
    auto* group = new QCPMarginGroup(plot_);
    auto* grid = new QCPLayoutGrid;
    plot_->plotLayout()->addElement(0, 0, grid);
    scale_ = new QCPColorScale(plot_);
    scale_->setGradient(probabilityGradient());
    scale_->axis()->setLabel(tr("attention probability"));
    scale_->setBarWidth(12);
    plot_->plotLayout()->addElement(0, 1, scale_);
    plot_->plotLayout()->setColumnStretchFactor(1, 0.01);  // the tiles take the width, the scale its bar and labels
    const float* data = pattern_.data_ptr<float>();
    for (int h = 0; h < heads; ++h) {
        auto* rect = new QCPAxisRect(plot_);
        grid->addElement(h / columns_, h % columns_, rect);
        rect->setMarginGroup(QCP::msLeft | QCP::msBottom, group);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        for (QCPAxis* a : {x, y}) {
            a->setTickLabels(false);
            a->setTicks(false);
            a->grid()->setVisible(false);
            a->setRange(-0.5, n - 0.5);
        }
        y->setRangeReversed(true);
        x->setLabel(tr("head %1").arg(h));
        // Drawn as one image from the pattern itself, pooled when a cell is smaller than a pixel; the colour map's own
        // data is not used.
        auto* map = new MatrixImage(x, y);
        map->setMatrix(data + static_cast<size_t>(h) * n * n, n, n);
        map->setGradient(probabilityGradient());
        maps_.push_back(map);
        rects_.push_back(rect);
    }
    applyScale();
    followPalette(plot_);  // the new axes and titles
    fit();
}

void HeadGridPlot::setLogScale(bool on, double floor) {
    log_ = on;
    logFloor_ = floor;
    applyScale();
    plot_->replot();
}

void HeadGridPlot::applyScale() {
    const QCPRange range = log_ ? QCPRange(logFloor_, 1) : QCPRange(0, 1);
    for (MatrixImage* map : maps_) {
        // the scale type first: a logarithmic one refuses a range that reaches 0
        map->setDataScaleType(log_ ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        map->setDataRange(range);
    }
    if (!scale_) return;
    scale_->setDataScaleType(log_ ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    scale_->setDataRange(range);
    if (log_) {
        QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
        ticker->setSubTickCount(0);
        scale_->axis()->setTicker(ticker);
        scale_->axis()->setNumberFormat("eb");
        scale_->axis()->setNumberPrecision(0);
    } else {
        scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        scale_->axis()->setNumberFormat("gb");
        scale_->axis()->setNumberPrecision(6);
    }
}

void HeadGridPlot::fit() {
    // Tiles as large as the room allows with every head in view (not larger: one tile filling the view at a long
    // prompt hid the others); below kMinTile the grid scrolls instead.
    const QSize room = scroll_->maximumViewportSize();
    const int tile = std::max(kMinTile, std::min((room.width() - kScaleWidth) / std::max(1, columns_), room.height() / std::max(1, rows_)));
    tile_ = tile;
    plot_->setFixedSize(columns_ * tile + kScaleWidth, rows_ * tile);  // square tiles, the scale beside them
    scroll_->horizontalScrollBar()->setValue(0);
    scroll_->verticalScrollBar()->setValue(0);
    plot_->replot();
}

void HeadGridPlot::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (!maps_.empty()) QTimer::singleShot(0, this, &HeadGridPlot::fit);  // after the scroll area's own resize
}

bool HeadGridPlot::cellAt(const QPoint& pos, int* head, int* query, int* key) const {
    QCPAxisRect* rect = plot_->axisRectAt(pos);
    const auto it = std::find(rects_.begin(), rects_.end(), rect);
    if (it == rects_.end() || !rect->rect().contains(pos)) return false;
    const int n = static_cast<int>(pattern_.size(1));
    const int k = qRound(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()));
    const int q = qRound(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y()));
    if (q < 0 || k < 0 || q >= n || k >= n) return false;
    *head = static_cast<int>(it - rects_.begin());
    *query = q;
    *key = k;
    return true;
}

QPoint HeadGridPlot::cellCenter(int head, int query, int key) const {
    QCPAxisRect* rect = rects_.at(static_cast<size_t>(head));
    return QPoint(qRound(rect->axis(QCPAxis::atBottom)->coordToPixel(key)), qRound(rect->axis(QCPAxis::atLeft)->coordToPixel(query)));
}

void HeadGridPlot::onMouseMove(QMouseEvent* event) {
    int h = 0, q = 0, k = 0;
    if (!cellAt(event->pos(), &h, &q, &k)) {
        QToolTip::hideText();
        return;
    }
    const float p = pattern_[h][q][k].item<float>();
    hoverText_ = tr("head %1\nquery %2 “%3”\nkey %4 “%5”\nattention probability = %6")
                     .arg(h).arg(q).arg(tokens_.value(q)).arg(k).arg(tokens_.value(k)).arg(p, 0, 'g', 6);
    QToolTip::showText(plot_->mapToGlobal(event->pos()), plainToolTip(hoverText_), plot_);
    emit cellHovered(h, q, k, hoverText_);
}

void HeadGridPlot::onMousePress(QMouseEvent* event) {
    int h = 0, q = 0, k = 0;
    if (event->button() == Qt::LeftButton && cellAt(event->pos(), &h, &q, &k)) emit headClicked(h);
}

}  // namespace nnscope
