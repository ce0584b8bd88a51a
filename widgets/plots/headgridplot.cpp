// SPDX-License-Identifier: MIT
#include "widgets/plots/headgridplot.h"

#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

#include <torch/types.h>

#include <QScrollArea>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nnscope {

namespace {
constexpr int kMinTile = 170;     // pixels: a tile is never smaller; the grid scrolls instead
constexpr int kCellPixels = 5;    // a long prompt's tiles grow so that each cell keeps a few pixels
}

HeadGridPlot::HeadGridPlot(QWidget* parent) : QWidget(parent) {
    plot_ = new QCustomPlot;
    plot_->setInteractions({});
    plot_->setMouseTracking(true);
    plot_->setAttribute(Qt::WA_NoMousePropagation, false);  // a right-click reaches the view's menu (see HeatmapPlot)
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(plot_);
    scroll->setWidgetResizable(true);
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
    plot_->clearPlottables();
    plot_->plotLayout()->clear();
    maps_.clear();
    rects_.clear();
    const int heads = static_cast<int>(pattern_.size(0)), n = static_cast<int>(pattern_.size(1));
    const int columns = std::max(1, static_cast<int>(std::ceil(std::sqrt(heads * 1.5)))), rows = (heads + columns - 1) / columns;
    auto* group = new QCPMarginGroup(plot_);
    auto* grid = new QCPLayoutGrid;
    plot_->plotLayout()->addElement(0, 0, grid);
    auto* scale = new QCPColorScale(plot_);
    scale->setDataRange(QCPRange(0, 1));
    scale->setGradient(probabilityGradient());
    scale->axis()->setLabel(tr("attention probability"));
    scale->setBarWidth(12);
    plot_->plotLayout()->addElement(0, 1, scale);
    const float* data = pattern_.data_ptr<float>();
    for (int h = 0; h < heads; ++h) {
        auto* rect = new QCPAxisRect(plot_);
        grid->addElement(h / columns, h % columns, rect);
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
        auto* map = new MatrixImage(x, y);  // drawn as one image, pooled when a cell is smaller than a pixel
        map->setMatrix(data + static_cast<size_t>(h) * n * n, n, n);
        // A one-token prompt gives a one-cell map, which QCPColorMap draws with no width: duplicate it.
        const int size = n == 1 ? 2 : n;
        map->data()->setSize(size, size);
        map->data()->setRange(n == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, n - 1), n == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, n - 1));
        for (int q = 0; q < size; ++q)
            for (int k = 0; k < size; ++k)
                map->data()->setCell(k, q, data[(static_cast<size_t>(h) * n + std::min(q, n - 1)) * n + std::min(k, n - 1)]);
        map->setGradient(probabilityGradient());
        map->setDataRange(QCPRange(0, 1));
        maps_.push_back(map);
        rects_.push_back(rect);
    }
    const int tile = std::clamp(n * kCellPixels, kMinTile, 900);
    plot_->setMinimumHeight(rows * tile);
    plot_->setMinimumWidth(tile > kMinTile ? columns * tile : 2 * kMinTile);
    followPalette(plot_);  // the new axes and titles
    plot_->replot();
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
    QToolTip::showText(plot_->mapToGlobal(event->pos()), hoverText_, plot_);
    emit cellHovered(h, q, k, hoverText_);
}

void HeadGridPlot::onMousePress(QMouseEvent* event) {
    int h = 0, q = 0, k = 0;
    if (event->button() == Qt::LeftButton && cellAt(event->pos(), &h, &q, &k)) emit headClicked(h);
}

}  // namespace nnscope
