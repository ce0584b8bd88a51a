// SPDX-License-Identifier: MIT
#include "heatmapplot.h"

#include <QEvent>
#include <QGridLayout>
#include <QScrollBar>
#include <QTimer>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace nnscope {

namespace {
constexpr int kMaxCellTexts = 4000;  // beyond this many visible cells, text labels would be unreadable anyway
}

HeatmapPlot::HeatmapPlot(QWidget* parent) : QWidget(parent) {
    plot_ = new QCustomPlot(this);
    plot_->setInteractions({});
    // QCustomPlot keeps every mouse event to itself (Qt::WA_NoMousePropagation), so the context menu event Qt makes
    // from a right-click stopped at the plot and the view's menu (the head and neuron ablations) never opened.
    plot_->setAttribute(Qt::WA_NoMousePropagation, false);
    plot_->setNoAntialiasingOnDrag(true);
    plot_->plotLayout()->insertRow(0);
    title_ = new QCPTextElement(plot_, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    plot_->plotLayout()->addElement(0, 0, title_);

    map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    scale_ = new QCPColorScale(plot_);
    scale_->setType(QCPAxis::atRight);
    scale_->setBarWidth(14);
    plot_->plotLayout()->addElement(1, 1, scale_);
    map_->setColorScale(scale_);
    auto* group = new QCPMarginGroup(plot_);
    plot_->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, group);

    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 3);
    }
    plot_->yAxis->setRangeReversed(true);  // row 0 at the top, as a matrix is read
    plot_->xAxis->setTickLabelRotation(90);

    mark_ = new QCPItemRect(plot_);
    mark_->setPen(QPen(QColor(255, 140, 0), 2));
    mark_->setBrush(Qt::NoBrush);
    mark_->setClipToAxisRect(true);
    mark_->setVisible(false);

    setGradient(QCPColorGradient(QCPColorGradient::gpThermal));

    hbar_ = new QScrollBar(Qt::Horizontal, this);
    vbar_ = new QScrollBar(Qt::Vertical, this);
    hbar_->hide();
    vbar_->hide();
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(0);
    grid->addWidget(plot_, 0, 0);
    grid->addWidget(vbar_, 0, 1);
    grid->addWidget(hbar_, 1, 0);

    connect(hbar_, &QScrollBar::valueChanged, this, &HeatmapPlot::applyRanges);
    connect(vbar_, &QScrollBar::valueChanged, this, &HeatmapPlot::applyRanges);
    connect(plot_, &QCustomPlot::mouseMove, this, &HeatmapPlot::onMouseMove);
    connect(plot_, &QCustomPlot::mousePress, this, &HeatmapPlot::onMousePress);
    connect(plot_, &QCustomPlot::mouseWheel, this, &HeatmapPlot::onMouseWheel);
    plot_->installEventFilter(this);
    plot_->setMouseTracking(true);
}

void HeatmapPlot::setModel(MatrixModel* model) {
    if (model_) disconnect(model_, nullptr, this, nullptr);
    model_ = model;
    if (model_) connect(model_, &QAbstractItemModel::modelReset, this, &HeatmapPlot::rebuild);
    rebuild();
}

void HeatmapPlot::setGradient(const QCPColorGradient& gradient) {
    map_->setGradient(gradient);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::setDataRange(double lower, double upper) {
    fixedRange_ = true;
    map_->setDataRange(QCPRange(lower, upper));
}

void HeatmapPlot::setMinCellSize(QSize size) {
    minCell_ = size;
    updateWindow();
}

void HeatmapPlot::setTitle(const QString& title) {
    title_->setText(title);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::setMarkedCell(int row, int column) {
    markRow_ = row;
    markColumn_ = column;
    updateMark();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::rebuild() {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const Matrix* m = model_ ? &model_->matrix() : nullptr;
    // QCPColorMap draws a one-cell-wide map with no width: duplicate the cell over half-cell ranges instead.
    const int keySize = cols == 1 ? 2 : std::max(cols, 1), valueSize = rows == 1 ? 2 : std::max(rows, 1);
    map_->data()->setSize(keySize, valueSize);
    map_->data()->setRange(cols == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, std::max(cols - 1, 0)),
                           rows == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, std::max(rows - 1, 0)));
    double lo = 0, hi = 0;
    for (int k = 0; k < keySize; ++k)
        for (int v = 0; v < valueSize; ++v) {
            const double z = cols && rows ? model_->value(std::min(v, rows - 1), std::min(k, cols - 1)) : std::nan("");
            map_->data()->setCell(k, v, z);
            if (std::isfinite(z)) {
                lo = std::min(lo, z);
                hi = std::max(hi, z);
            }
        }
    if (!fixedRange_) {
        if (symmetric_) {
            const double a = std::max({std::fabs(lo), std::fabs(hi), 1e-12});
            map_->setDataRange(QCPRange(-a, a));
        } else {
            map_->setDataRange(QCPRange(lo, hi > lo ? hi : lo + 1));
        }
    }
    // Token labels where the model has them, plain indices (a numeric ticker) elsewhere.
    auto ticker = [](const QStringList& labels) -> QSharedPointer<QCPAxisTicker> {
        if (labels.isEmpty()) {
            QSharedPointer<QCPAxisTicker> t(new QCPAxisTicker);
            t->setTickStepStrategy(QCPAxisTicker::tssReadability);
            return t;
        }
        QSharedPointer<QCPAxisTickerText> t(new QCPAxisTickerText);
        for (int i = 0; i < labels.size(); ++i) t->addTick(i, labels[i]);
        return t;
    };
    plot_->xAxis->setTicker(ticker(m ? m->columnLabels : QStringList()));
    plot_->yAxis->setTicker(ticker(m ? m->rowLabels : QStringList()));
    plot_->xAxis->setTickLabelRotation(m && !m->columnLabels.isEmpty() ? 90 : 0);
    plot_->xAxis->setLabel(m ? m->columnTitle : QString());
    plot_->yAxis->setLabel(m ? m->rowTitle : QString());
    scale_->axis()->setLabel(m ? m->valueName : QString());
    hbar_->setValue(0);
    vbar_->setValue(0);
    updateWindow();
}

int HeatmapPlot::firstColumn() const { return fullView_ ? 0 : hbar_->value(); }
int HeatmapPlot::firstRow() const { return fullView_ ? 0 : vbar_->value(); }

void HeatmapPlot::updateWindow() {
    windowPending_ = false;
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    plot_->replot(QCustomPlot::rpImmediateRefresh);  // lays out the axis rect for the current size
    const QRect area = plot_->axisRect()->rect();
    visibleColumns_ = cols ? std::clamp(area.width() / std::max(1, minCell_.width()), 1, cols) : 0;
    visibleRows_ = rows ? std::clamp(area.height() / std::max(1, minCell_.height()), 1, rows) : 0;
    {
        const QSignalBlocker bh(hbar_), bv(vbar_);
        hbar_->setRange(0, std::max(0, cols - visibleColumns_));
        hbar_->setPageStep(std::max(1, visibleColumns_));
        vbar_->setRange(0, std::max(0, rows - visibleRows_));
        vbar_->setPageStep(std::max(1, visibleRows_));
    }
    hbar_->setVisible(!fullView_ && cols > visibleColumns_);
    vbar_->setVisible(!fullView_ && rows > visibleRows_);
    applyRanges();
}

void HeatmapPlot::applyRanges() {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const int nc = fullView_ ? cols : visibleColumns_, nr = fullView_ ? rows : visibleRows_;
    plot_->xAxis->setRange(firstColumn() - 0.5, firstColumn() + std::max(nc, 1) - 0.5);
    plot_->yAxis->setRange(firstRow() - 0.5, firstRow() + std::max(nr, 1) - 0.5);
    updateCellTexts();
    updateMark();
    plot_->replot();
}

void HeatmapPlot::updateCellTexts() {
    for (QCPItemText* t : texts_) plot_->removeItem(t);
    texts_.clear();
    if (!model_ || !model_->matrix().cellText) return;
    const int rows = model_->rowCount(), cols = model_->columnCount();
    const int c0 = firstColumn(), r0 = firstRow();
    const int c1 = std::min(cols, c0 + (fullView_ ? cols : visibleColumns_));
    const int r1 = std::min(rows, r0 + (fullView_ ? rows : visibleRows_));
    if ((c1 - c0) * (r1 - r0) > kMaxCellTexts) return;
    const QCPRange range = map_->dataRange();
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) {
            auto* t = new QCPItemText(plot_);
            t->position->setType(QCPItemPosition::ptPlotCoords);
            t->position->setCoords(c, r);
            t->setText(model_->matrix().cellText(r, c));
            t->setFont(small);
            const double level = (model_->value(r, c) - range.lower) / std::max(range.size(), 1e-12);
            t->setColor(level > 0.55 ? Qt::white : Qt::black);  // stays readable on dark and light cells
            t->setClipToAxisRect(true);
            texts_ << t;
        }
}

void HeatmapPlot::updateMark() {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const bool on = (markRow_ >= 0 && markRow_ < rows) || (markColumn_ >= 0 && markColumn_ < cols);
    mark_->setVisible(on);
    if (!on) return;
    const double x0 = markColumn_ >= 0 ? markColumn_ - 0.5 : -0.5, x1 = markColumn_ >= 0 ? markColumn_ + 0.5 : cols - 0.5;
    const double y0 = markRow_ >= 0 ? markRow_ - 0.5 : -0.5, y1 = markRow_ >= 0 ? markRow_ + 0.5 : rows - 0.5;
    mark_->topLeft->setCoords(x0, y0);
    mark_->bottomRight->setCoords(x1, y1);
}

void HeatmapPlot::ensureVisible(int row, int column) {
    if (column < hbar_->value() || column >= hbar_->value() + visibleColumns_)
        hbar_->setValue(std::max(0, column - visibleColumns_ / 2));
    if (row < vbar_->value() || row >= vbar_->value() + visibleRows_) vbar_->setValue(std::max(0, row - visibleRows_ / 2));
}

QPoint HeatmapPlot::cellCenter(int row, int column) {
    ensureVisible(row, column);
    plot_->replot(QCustomPlot::rpImmediateRefresh);
    return QPoint(qRound(plot_->xAxis->coordToPixel(column)), qRound(plot_->yAxis->coordToPixel(row)));
}

void HeatmapPlot::setFullView(bool full) {
    fullView_ = full;
    updateWindow();
}

QSize HeatmapPlot::fullViewSize() const {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const QRect area = plot_->axisRect()->rect();
    const int extraW = plot_->width() - area.width(), extraH = plot_->height() - area.height();
    constexpr int kMaxSide = 8000;  // an export of a very wide map shrinks its cells rather than its readability elsewhere
    return {std::clamp(extraW + cols * minCell_.width(), plot_->width(), std::max(plot_->width(), kMaxSide)),
            std::clamp(extraH + rows * minCell_.height(), plot_->height(), std::max(plot_->height(), kMaxSide))};
}

bool HeatmapPlot::cellAt(const QPoint& pos, int* row, int* column) const {
    if (!model_ || !plot_->axisRect()->rect().contains(pos)) return false;
    const int c = qRound(plot_->xAxis->pixelToCoord(pos.x())), r = qRound(plot_->yAxis->pixelToCoord(pos.y()));
    if (r < 0 || c < 0 || r >= model_->rowCount() || c >= model_->columnCount()) return false;
    *row = r;
    *column = c;
    return true;
}

void HeatmapPlot::onMouseMove(QMouseEvent* event) {
    int r = 0, c = 0;
    if (!cellAt(event->pos(), &r, &c)) {
        QToolTip::hideText();
        return;
    }
    hoverText_ = model_->data(model_->index(r, c), Qt::ToolTipRole).toString();
    QToolTip::showText(plot_->mapToGlobal(event->pos()), hoverText_, plot_);
    emit cellHovered(r, c, hoverText_);
}

void HeatmapPlot::onMousePress(QMouseEvent* event) {
    int r = 0, c = 0;
    if (event->button() == Qt::LeftButton && cellAt(event->pos(), &r, &c)) emit cellClicked(r, c);
}

void HeatmapPlot::onMouseWheel(QWheelEvent* event) {
    const QPoint steps = event->angleDelta() / 40;  // three cells per notch
    const bool horizontal = (event->modifiers() & Qt::ShiftModifier) || steps.y() == 0;
    QScrollBar* bar = horizontal ? hbar_ : vbar_;
    bar->setValue(bar->value() - (steps.y() != 0 ? steps.y() : steps.x()));
}

bool HeatmapPlot::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_ && event->type() == QEvent::Resize && !windowPending_) {
        windowPending_ = true;  // let the plot finish its own resize first
        QTimer::singleShot(0, this, &HeatmapPlot::updateWindow);
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace nnscope
