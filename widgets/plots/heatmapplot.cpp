// SPDX-License-Identifier: MIT
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/plaintext.h"

#include <QApplication>
#include <QEvent>
#include <QGridLayout>
#include <QKeyEvent>
#include <QScrollBar>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace nnscope {

namespace {
constexpr int kMaxCellTexts = 4000;  // beyond this many visible cells, text labels would be unreadable anyway
constexpr double kMinZoomCells = 4;  // zooming in stops at this many cells across
constexpr double kWheelZoom = 0.8;   // one wheel notch (or +) shows this fraction of the view

/// Re-applies followPalette's colours when the plot's palette or style changes (a dark palette set at run time).
class PaletteFollower : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* event) override {
        auto* plot = static_cast<QCustomPlot*>(watched);
        if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
            followPalette(plot);
            stale_ = !plot->isVisible();  // a hidden plot (another tab) draws again when shown
            if (!stale_) plot->replot(QCustomPlot::rpQueuedReplot);
        } else if (event->type() == QEvent::Show && stale_) {
            stale_ = false;
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
        return false;
    }

private:
    bool stale_ = false;
};
}  // namespace

// ---- TokenTicker ------------------------------------------------------------------------------------------------

void TokenTicker::setLabels(const QStringList& labels) {
    mTicks.clear();
    for (int i = 0; i < labels.size(); ++i) mTicks.insert(i, labels[i]);
    widest_ = -1;
}

double TokenTicker::getTickStep(const QCPRange& range) {
    const bool horizontal = axis_->orientation() == Qt::Horizontal;
    const QRect area = axis_->axisRect()->rect();
    const double pixels = std::max(1, horizontal ? area.width() : area.height());
    const QFontMetrics metrics(axis_->tickLabelFont());
    // A label's extent along the axis: its height when it stands across the axis, its width when it runs along it.
    const double rotation = std::fmod(std::fabs(axis_->tickLabelRotation()), 180.0);
    const bool across = (rotation >= 45 && rotation <= 135) == horizontal;
    double pitch = metrics.height() + 2;
    if (!across) {
        if (widest_ < 0) {
            widest_ = 0;
            for (const QString& label : std::as_const(mTicks)) widest_ = std::max(widest_, metrics.horizontalAdvance(label));
        }
        pitch = widest_ + 2 * metrics.averageCharWidth();
    }
    const double cellPixels = pixels / std::max(range.size(), 1e-9);
    long step = 1;  // 1, 2, 5, 10, 20, 50, ...: the first that leaves a label's room between labels
    for (long decade = 1; step * cellPixels < pitch && decade <= 100000000L; decade *= 10)
        for (long m : {1L, 2L, 5L}) {
            step = m * decade;
            if (step * cellPixels >= pitch) break;
        }
    step_ = static_cast<int>(step);
    return static_cast<double>(step);
}

QVector<double> TokenTicker::createTickVector(double tickStep, const QCPRange& range) {
    QVector<double> ticks;
    const long step = std::max(1L, std::lround(tickStep));
    for (long k = std::max(0L, static_cast<long>(std::ceil(range.lower / step))); k * step <= range.upper; ++k)
        if (mTicks.contains(static_cast<double>(k * step))) ticks << static_cast<double>(k * step);
    return ticks;
}

QString TokenTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    const QString label = mTicks.value(tick);
    return step_ > 1 && !numbered_ ? QString("%1 %2").arg(std::lround(tick)).arg(label) : label;
}

// ---- MatrixImage ------------------------------------------------------------------------------------------------

MatrixImage::MatrixImage(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPColorMap(keyAxis, valueAxis) {
    setInterpolate(false);
    setTightBoundary(false);
}

void MatrixImage::setMatrix(const float* data, int rows, int columns) {
    data_ = data;
    rows_ = rows;
    columns_ = columns;
    imageValid_ = false;
}

void MatrixImage::draw(QCPPainter* painter) {
    QCPAxis* x = keyAxis();
    QCPAxis* y = valueAxis();
    if (!data_ || rows_ <= 0 || columns_ <= 0 || !x || !y) return;
    // The cells that overlap the view: cell c spans [c - 0.5, c + 0.5].
    const QCPRange xr = x->range(), yr = y->range();
    const int c0 = std::clamp(static_cast<int>(std::floor(xr.lower - 0.5)) + 1, 0, columns_);
    const int c1 = std::clamp(static_cast<int>(std::ceil(xr.upper + 0.5)), 0, columns_);
    const int r0 = std::clamp(static_cast<int>(std::floor(yr.lower - 0.5)) + 1, 0, rows_);
    const int r1 = std::clamp(static_cast<int>(std::ceil(yr.upper + 0.5)), 0, rows_);
    if (c0 >= c1 || r0 >= r1) return;
    const QRectF target = QRectF(QPointF(x->coordToPixel(c0 - 0.5), y->coordToPixel(r0 - 0.5)),
                                 QPointF(x->coordToPixel(c1 - 0.5), y->coordToPixel(r1 - 0.5)))
                              .normalized();
    // One image pixel per cell, or per screen pixel when the cells are smaller than that.
    const QSize size(std::min(c1 - c0, std::max(1, static_cast<int>(std::ceil(target.width())))),
                     std::min(r1 - r0, std::max(1, static_cast<int>(std::ceil(target.height())))));
    const QRect cells(c0, r0, c1 - c0, r1 - r0);
    const bool log = dataScaleType() == QCPAxis::stLogarithmic;
    if (!imageValid_ || cells != imageCells_ || size != image_.size() || !(mDataRange == imageRange_) || log != imageLog_ ||
        mGradient != imageGradient_)
        buildImage(cells, size);
    // image_ runs with the cells (first row at the top); the axes may run the other way.
    const bool flipX = x->rangeReversed(), flipY = !y->rangeReversed();
    const bool smooth = painter->renderHints().testFlag(QPainter::SmoothPixmapTransform);
    painter->setRenderHint(QPainter::SmoothPixmapTransform, false);  // sharp cell edges when zoomed in
    painter->drawImage(target, flipX || flipY ? image_.mirrored(flipX, flipY) : image_);
    painter->setRenderHint(QPainter::SmoothPixmapTransform, smooth);
}

void MatrixImage::buildImage(QRect cells, QSize size) {
    const int w = size.width(), h = size.height(), nc = cells.width(), nr = cells.height();
    image_ = QImage(size, QImage::Format_ARGB32_Premultiplied);
    imageCells_ = cells;
    imageRange_ = mDataRange;
    imageLog_ = dataScaleType() == QCPAxis::stLogarithmic;
    imageGradient_ = mGradient;
    imageValid_ = true;
    // Pixel x covers the columns [c0 + x·nc/w, c0 + (x+1)·nc/w), rows alike: one cell each unless pooled.
    std::vector<int> columnStart(static_cast<size_t>(w) + 1);
    for (int i = 0; i <= w; ++i) columnStart[static_cast<size_t>(i)] = cells.x() + static_cast<int>(static_cast<int64_t>(i) * nc / w);
    std::vector<double> line(static_cast<size_t>(w));
    std::vector<unsigned char> special(static_cast<size_t>(w));  // per pixel: 1 a NaN, 2 a +Inf, 4 a -Inf among its cells
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int j = 0; j < h; ++j) {
        const int ra = cells.y() + static_cast<int>(static_cast<int64_t>(j) * nr / h);
        const int rb = cells.y() + static_cast<int>(static_cast<int64_t>(j + 1) * nr / h);
        std::fill(line.begin(), line.end(), nan);
        std::fill(special.begin(), special.end(), 0);
        for (int r = ra; r < rb; ++r) {
            const float* row = data_ + static_cast<size_t>(r) * columns_;
            for (int i = 0; i < w; ++i) {
                double& acc = line[static_cast<size_t>(i)];
                for (int c = columnStart[static_cast<size_t>(i)]; c < columnStart[static_cast<size_t>(i) + 1]; ++c) {
                    const double v = row[c];
                    if (!std::isfinite(v)) {
                        special[static_cast<size_t>(i)] |= std::isnan(v) ? 1 : v > 0 ? 2 : 4;
                        continue;
                    }
                    if (std::isnan(acc) || (signedPooling_ ? std::fabs(v) > std::fabs(acc) : v > acc)) acc = v;
                }
            }
        }
        if (symLog_ > 0)
            for (double& v : line)
                if (!std::isnan(v)) v = symLog(v, symLog_);
        if (imageLog_)  // zeros and anything below the floor take the lowest colour (a logarithm of 0 has none)
            for (double& v : line)
                if (!std::isnan(v) && v < imageRange_.lower) v = imageRange_.lower;
        for (size_t i = 0; i < line.size(); ++i)  // a pixel of non-finite cells only: coloured below, not by the gradient
            if (std::isnan(line[i])) line[i] = imageRange_.lower;
        QRgb* pixels = reinterpret_cast<QRgb*>(image_.scanLine(j));
        mGradient.colorize(line.data(), imageRange_, pixels, w, 1, imageLog_);
        for (int i = 0; i < w; ++i)
            if (const unsigned char f = special[static_cast<size_t>(i)])
                pixels[i] = f & 1 ? kNanColor : f & 2 ? kPosInfColor : kNegInfColor;
    }
}

// ---- palette ----------------------------------------------------------------------------------------------------

void followPalette(QCustomPlot* plot) {
    const QPalette& palette = plot->palette();
    const QColor text = palette.color(QPalette::Text), base = palette.color(QPalette::Base);
    QColor grid = text, zero = text;
    grid.setAlpha(60);
    zero.setAlpha(110);
    plot->setBackground(base);
    for (QCPAxis* axis : plot->findChildren<QCPAxis*>()) {  // every axis rect's axes, the colour scales' too
        axis->setBasePen(QPen(text, 0));
        axis->setTickPen(QPen(text, 0));
        axis->setSubTickPen(QPen(text, 0));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
        axis->grid()->setZeroLinePen(QPen(zero, 0));
    }
    for (QCPTextElement* title : plot->findChildren<QCPTextElement*>()) title->setTextColor(text);
    if (plot->legend) {
        plot->legend->setBrush(base);
        plot->legend->setTextColor(text);
        // a legend drawn without a frame keeps none (the Attribution view's legend row ran its frame past the plot's edge)
        if (plot->legend->borderPen().style() != Qt::NoPen) plot->legend->setBorderPen(QPen(text, 0));
    }
    if (!plot->property("nnscope.followsPalette").toBool()) {
        plot->setProperty("nnscope.followsPalette", true);
        plot->installEventFilter(new PaletteFollower(plot));
    }
}

// ---- HeatmapPlot ------------------------------------------------------------------------------------------------

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
    // each layout gives the title its cell's width: elide it to that (an export shows it whole)
    connect(plot_, &QCustomPlot::afterLayout, this, [this] {
        if (!fullView_) elideTitle();
    });
    nonFinite_ = new QCPTextElement(plot_, QString(), QFont(font().family(), font().pointSize(), QFont::Bold));
    nonFinite_->setVisible(false);  // put in the layout by rebuild() while the matrix holds a NaN or an infinity

    map_ = new MatrixImage(plot_->xAxis, plot_->yAxis);
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
    xTicks_.reset(new TokenTicker(plot_->xAxis));
    yTicks_.reset(new TokenTicker(plot_->yAxis));

    mark_ = new QCPItemRect(plot_);
    mark_->setPen(QPen(QColor(255, 140, 0), 2));
    mark_->setBrush(Qt::NoBrush);
    mark_->setClipToAxisRect(true);
    mark_->setVisible(false);

    QColor band = palette().color(QPalette::Highlight);
    plot_->selectionRect()->setPen(QPen(band, 1, Qt::DashLine));
    band.setAlpha(50);
    plot_->selectionRect()->setBrush(band);

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
    connect(plot_, &QCustomPlot::mouseRelease, this, &HeatmapPlot::onMouseRelease);
    connect(plot_, &QCustomPlot::mouseWheel, this, &HeatmapPlot::onMouseWheel);
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        if (zoomable_ && event->button() == Qt::LeftButton) resetView();
    });
    connect(plot_->selectionRect(), &QCPSelectionRect::accepted, this, [this](const QRect& rect, QMouseEvent*) { onRectangle(rect); });
    plot_->installEventFilter(this);
    plot_->setMouseTracking(true);
    followPalette(plot_);
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

void HeatmapPlot::setCategories(const QList<QColor>& colours, const QStringList& labels) {
    categories_ = colours;
    categoryLabels_ = labels;
    if (colours.isEmpty()) {
        hasFixedRange_ = false;
        updateColorRange();
        updateCellTexts();
        plot_->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    // n levels over the range [0, n - 1]: a cell's value v takes level floor(v · (levels - 1) / range) = floor(v), so
    // category i is exactly colour i (stop i / (n - 1)); the colour scale draws the n levels as n equal bands, each
    // category's name in the middle of its band (updateColorRange). One category: two levels of the same colour.
    const int n = static_cast<int>(colours.size());
    const int levels = std::max(n, 2);
    QMap<double, QColor> stops;
    for (int i = 0; i < levels; ++i) stops[static_cast<double>(i) / (levels - 1)] = colours[std::min(i, n - 1)];
    QCPColorGradient g;
    g.setColorStops(stops);
    g.setLevelCount(levels);
    map_->setGradient(g);
    setDataRange(0, levels - 1);
    updateCellTexts();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::setDataRange(double lower, double upper) {
    hasFixedRange_ = true;
    fixedRange_ = QCPRange(lower, upper);
    updateColorRange();
}

void HeatmapPlot::setSymmetricRange(bool symmetric) {
    symmetric_ = symmetric;
    map_->setSignedPooling(symmetric);
    updateColorRange();
}

void HeatmapPlot::setLogScale(bool on, double floor) {
    log_ = on;
    logFloor_ = floor > 0 ? floor : 1e-5;
    updateColorRange();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::updateColorRange() {
    map_->setSymLogThreshold(0);
    if (log_ && symmetric_ && !hasFixedRange_) {
        // Symmetric log: the colours run over symLog of the values, the scale's ticks name the values themselves.
        map_->setDataScaleType(QCPAxis::stLinear);
        const double a = std::max({std::fabs(dataLo_), std::fabs(dataHi_), 1e-12});
        const double threshold = a * logFloor_;
        map_->setSymLogThreshold(threshold);
        const double top = MatrixImage::symLog(a, threshold);
        map_->setDataRange(QCPRange(-top, top));
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        ticker->addTick(0, "0");
        for (int e = static_cast<int>(std::floor(std::log10(a))); e >= std::floor(std::log10(threshold)); --e) {
            const double v = std::pow(10.0, e);
            if (v > a * 1.0001) continue;
            const QString label = QString::number(v, 'g', 3);
            ticker->addTick(MatrixImage::symLog(v, threshold), label);
            ticker->addTick(-MatrixImage::symLog(v, threshold), QString::fromUtf8("\u2212") + label);
        }
        scale_->axis()->setTicker(ticker);
        return;
    }
    if (log_) {
        // The scale type first: a logarithmic colour scale refuses a range that reaches 0.
        map_->setDataScaleType(QCPAxis::stLogarithmic);
        const double upper = hasFixedRange_ ? fixedRange_.upper : dataHi_;
        map_->setDataRange(QCPRange(logFloor_, std::max(upper, logFloor_ * 10)));
        QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
        ticker->setSubTickCount(0);
        scale_->axis()->setTicker(ticker);
        scale_->axis()->setNumberFormat("eb");
        scale_->axis()->setNumberPrecision(0);
        return;
    }
    map_->setDataScaleType(QCPAxis::stLinear);
    scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    scale_->axis()->setNumberFormat("gb");
    scale_->axis()->setNumberPrecision(6);
    if (!categories_.isEmpty()) {  // each category's name in the middle of its band
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        const int n = static_cast<int>(categories_.size()), levels = std::max(n, 2);
        const double band = static_cast<double>(levels - 1) / levels;  // the scale's n bands over [0, levels - 1]
        for (int i = 0; i < n; ++i) ticker->addTick((i + 0.5) * band, categoryLabels_.value(i, QString::number(i)));
        scale_->axis()->setTicker(ticker);
    }
    if (hasFixedRange_) {
        map_->setDataRange(fixedRange_);
    } else if (symmetric_) {
        const double a = std::max({std::fabs(dataLo_), std::fabs(dataHi_), 1e-12});
        map_->setDataRange(QCPRange(-a, a));
    } else {
        map_->setDataRange(QCPRange(dataLo_, dataHi_ > dataLo_ ? dataHi_ : dataLo_ + 1));
    }
}

void HeatmapPlot::setMinCellSize(QSize size) {
    minCell_ = size;
    updateWindow();
}

void HeatmapPlot::setZoomable(bool on) {
    zoomable_ = on;
    plot_->setCursor(on ? Qt::CrossCursor : Qt::ArrowCursor);
    plot_->setStatusTip(on ? tr("Wheel: zoom · drag: pan · Shift+drag: zoom to a rectangle · double-click or Home: the whole matrix") : QString());
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    viewColumns_ = QCPRange(-0.5, std::max(cols, 1) - 0.5);  // the whole matrix
    viewRows_ = QCPRange(-0.5, std::max(rows, 1) - 0.5);
    updateWindow();
}

void HeatmapPlot::setTitle(const QString& title) {
    fullTitle_ = title;
    elideTitle();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::elideTitle() {
    // each line elided to its cell's width (a long metric or site in a narrow half of a view ends in "…" instead of
    // being clipped at both edges); an export at full size shows the whole title
    const QFontMetrics metrics(title_->font());
    // the title's own cell: the axis rect's column (the colour scale's column beside it is not the title's), as laid
    // out by the last replot; before the first one, the plot's width
    const int cell = title_->outerRect().width() > 0 ? title_->outerRect().width() : plot_->width();
    const int room = std::max(40, cell - 8);
    QStringList lines = fullTitle_.split('\n');
    for (QString& line : lines) line = metrics.elidedText(line, Qt::ElideRight, room);
    title_->setText(lines.join('\n'));
}

QString HeatmapPlot::title() const { return fullTitle_; }
QString HeatmapPlot::shownTitle() const { return title_->text(); }
QFont HeatmapPlot::titleFont() const { return title_->font(); }

void HeatmapPlot::setMarkedCell(int row, int column) {
    markRow_ = row;
    markColumn_ = column;
    updateMark();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPlot::rebuild() {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const Matrix* m = model_ ? &model_->matrix() : nullptr;
    map_->setMatrix(rows && cols ? m->values.data_ptr<float>() : nullptr, rows, cols);
    // The colour range: the finite values' (with 0 in it), read once from the model's floats. The image is drawn from
    // them too (MatrixImage); what a test compares is the model's matrix, not a copy of it in the plot.
    double lo = 0, hi = 0;
    int nan = 0, posInf = 0, negInf = 0;
    if (rows && cols) {
        const float* data = m->values.data_ptr<float>();
        const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
        for (size_t i = 0; i < n; ++i) {
            const float z = data[i];
            if (std::isfinite(z)) {
                lo = std::min(lo, static_cast<double>(z));
                hi = std::max(hi, static_cast<double>(z));
            } else {
                ++(std::isnan(z) ? nan : z > 0 ? posInf : negInf);
            }
        }
    }
    dataLo_ = lo;
    dataHi_ = hi;
    nanCount_ = nan;
    posInfCount_ = posInf;
    negInfCount_ = negInf;
    anyFinite_ = static_cast<int64_t>(nan) + posInf + negInf < static_cast<int64_t>(rows) * cols;
    updateColorRange();
    // Said under the matrix in their colours; a colour scale of no finite value would be a made-up 0..1.
    scale_->setVisible(anyFinite_);
    const bool shown = plot_->plotLayout()->hasElement(2, 0) && plot_->plotLayout()->element(2, 0) == nonFinite_;
    if (nan + posInf + negInf > 0) {
        nonFinite_->setText(nonFiniteText());
        nonFinite_->setTextColor(QColor::fromRgb(nan ? kNanColor : posInf ? kPosInfColor : kNegInfColor).darker(115));
        if (!shown) plot_->plotLayout()->addElement(2, 0, nonFinite_);
        nonFinite_->setVisible(true);
    } else if (shown) {
        plot_->plotLayout()->take(nonFinite_);
        plot_->plotLayout()->simplify();
        nonFinite_->setVisible(false);
    }
    // Token labels where the model has them (thinned to what fits), plain indices (a numeric ticker) elsewhere.
    const auto ticker = [](const QSharedPointer<TokenTicker>& tokens, const QStringList& labels, bool numbered) -> QSharedPointer<QCPAxisTicker> {
        if (labels.isEmpty()) {
            QSharedPointer<QCPAxisTicker> t(new QCPAxisTicker);
            t->setTickStepStrategy(QCPAxisTicker::tssReadability);
            return t;
        }
        tokens->setLabels(labels);
        tokens->setNumbered(numbered);
        return tokens;
    };
    plot_->xAxis->setTicker(ticker(xTicks_, m ? m->columnLabels : QStringList(), m && m->labelsNumbered));
    plot_->yAxis->setTicker(ticker(yTicks_, m ? m->rowLabels : QStringList(), false));
    plot_->xAxis->setTickLabelRotation(m && !m->columnLabels.isEmpty() ? 90 : 0);
    plot_->xAxis->setLabel(m ? m->columnTitle : QString());
    plot_->yAxis->setLabel(m ? m->rowTitle : QString());
    scale_->axis()->setLabel(m ? m->valueName : QString());
    {
        const QSignalBlocker bh(hbar_), bv(vbar_);
        if (!zoomable_) {
            hbar_->setValue(0);
            vbar_->setValue(0);
        }
    }
    // A zoomable view keeps its zoom across matrices of the same size (another head of the same prompt).
    if (rows != shownRows_ || cols != shownColumns_) {
        viewColumns_ = QCPRange(-0.5, std::max(cols, 1) - 0.5);
        viewRows_ = QCPRange(-0.5, std::max(rows, 1) - 0.5);
        shownRows_ = rows;
        shownColumns_ = cols;
    }
    updateWindow();
}

QString HeatmapPlot::nonFiniteText() const {
    QStringList parts;
    if (nanCount_) parts << tr("%L1 NaN (magenta)").arg(nanCount_);
    if (posInfCount_) parts << tr("%L1 +Inf (amber)").arg(posInfCount_);
    if (negInfCount_) parts << tr("%L1 −Inf (green)").arg(negInfCount_);
    if (parts.isEmpty()) return {};
    return tr("%1 of %L2 cells are not finite%3").arg(parts.join(" · ")).arg(model_ ? static_cast<qint64>(model_->rowCount()) * model_->columnCount() : 0)
        .arg(anyFinite_ ? QString() : tr(": no colour scale"));
}

int HeatmapPlot::firstColumn() const { return fullView_ ? 0 : hbar_->value(); }
int HeatmapPlot::firstRow() const { return fullView_ ? 0 : vbar_->value(); }

QRect HeatmapPlot::visibleCells() const {
    // The cells whose centre is in view.
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    const QCPRange x = plot_->xAxis->range(), y = plot_->yAxis->range();
    const int c0 = std::max(0, static_cast<int>(std::ceil(x.lower))), c1 = std::min(cols - 1, static_cast<int>(std::floor(x.upper)));
    const int r0 = std::max(0, static_cast<int>(std::ceil(y.lower))), r1 = std::min(rows - 1, static_cast<int>(std::floor(y.upper)));
    return {c0, r0, std::max(0, c1 - c0 + 1), std::max(0, r1 - r0 + 1)};
}

void HeatmapPlot::updateWindow() {
    windowPending_ = false;
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    if (zoomable_) {
        // No scroll bars: showing them when zooming in would resize the plot under the mouse.
        hbar_->setVisible(false);
        vbar_->setVisible(false);
        return applyRanges();
    }
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
    if (fullView_) {
        plot_->xAxis->setRange(-0.5, std::max(cols, 1) - 0.5);
        plot_->yAxis->setRange(-0.5, std::max(rows, 1) - 0.5);
    } else if (zoomable_) {
        viewColumns_ = clampRange(viewColumns_, cols);
        viewRows_ = clampRange(viewRows_, rows);
        plot_->xAxis->setRange(viewColumns_);
        plot_->yAxis->setRange(viewRows_);
    } else {
        plot_->xAxis->setRange(firstColumn() - 0.5, firstColumn() + std::max(visibleColumns_, 1) - 0.5);
        plot_->yAxis->setRange(firstRow() - 0.5, firstRow() + std::max(visibleRows_, 1) - 0.5);
    }
    updateCellTexts();
    updateMark();
    plot_->replot(pressed_ ? QCustomPlot::rpQueuedReplot : QCustomPlot::rpRefreshHint);  // a drag coalesces its moves
    emit viewChanged();
}

QCPRange HeatmapPlot::clampRange(QCPRange range, int cells) const {
    const double whole = std::max(cells, 1);
    const double size = std::clamp(range.size(), std::min(whole, kMinZoomCells), whole);
    const double lower = std::clamp(range.lower, -0.5, whole - 0.5 - size);
    return {lower, lower + size};
}

void HeatmapPlot::setView(QCPRange columns, QCPRange rows) {
    viewColumns_ = columns;
    viewRows_ = rows;
    applyRanges();
}

void HeatmapPlot::resetView() {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    setView(QCPRange(-0.5, std::max(cols, 1) - 0.5), QCPRange(-0.5, std::max(rows, 1) - 0.5));
}

void HeatmapPlot::zoomBy(double factor, QPointF centre) {
    const QCPRange x = viewColumns_, y = viewRows_;
    setView(QCPRange(centre.x() - (centre.x() - x.lower) * factor, centre.x() + (x.upper - centre.x()) * factor),
            QCPRange(centre.y() - (centre.y() - y.lower) * factor, centre.y() + (y.upper - centre.y()) * factor));
}

void HeatmapPlot::zoomToCells(double firstColumn, double lastColumn, double firstRow, double lastRow) {
    setView(QCPRange(std::min(firstColumn, lastColumn) - 0.5, std::max(firstColumn, lastColumn) + 0.5),
            QCPRange(std::min(firstRow, lastRow) - 0.5, std::max(firstRow, lastRow) + 0.5));
}

bool HeatmapPlot::isZoomed() const {
    const int rows = model_ ? model_->rowCount() : 0, cols = model_ ? model_->columnCount() : 0;
    return zoomable_ && (viewColumns_.size() < cols - 1e-6 || viewRows_.size() < rows - 1e-6);
}

void HeatmapPlot::updateCellTexts() {
    for (QCPItemText* t : texts_) plot_->removeItem(t);
    texts_.clear();
    cellTextWidth_ = 0;
    if (!model_ || !model_->matrix().cellText) return;
    const QRect cells = visibleCells();
    if (cells.width() * cells.height() > kMaxCellTexts) return;
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    const QFontMetrics metrics(small);
    // The room a cell gives its text: its width less a little padding. A cell narrower than two characters or shorter
    // than a line shows no text (its colour and its tooltip say it); longer text is elided to the cell ("…"), so
    // byte pieces and runs of backslashes never run into the neighbouring cells.
    const double cellWidth = std::fabs(plot_->xAxis->coordToPixel(1) - plot_->xAxis->coordToPixel(0));
    const double cellHeight = std::fabs(plot_->yAxis->coordToPixel(1) - plot_->yAxis->coordToPixel(0));
    const int room = static_cast<int>(cellWidth) - 4;
    if (room < 2 * metrics.averageCharWidth() || cellHeight < metrics.height()) return;
    cellTextWidth_ = room;
    const QCPRange range = map_->dataRange();
    const bool log = map_->dataScaleType() == QCPAxis::stLogarithmic;
    for (int r = cells.top(); r <= cells.bottom(); ++r)
        for (int c = cells.left(); c <= cells.right(); ++c) {
            auto* t = new QCPItemText(plot_);
            t->position->setType(QCPItemPosition::ptPlotCoords);
            t->position->setCoords(c, r);
            t->setText(metrics.elidedText(model_->matrix().cellText(r, c), Qt::ElideRight, room));
            t->setFont(small);
            const double v = model_->value(r, c);
            const double level = log ? (std::log10(std::max(v, range.lower)) - std::log10(range.lower)) / std::max(std::log10(range.upper / range.lower), 1e-12)
                                     : (v - range.lower) / std::max(range.size(), 1e-12);
            if (!categories_.isEmpty()) {  // a category's own colour: white on the dark ones
                const int i = std::clamp(static_cast<int>(std::floor(v)), 0, static_cast<int>(categories_.size()) - 1);
                t->setColor(categories_[i].lightnessF() < 0.5 ? Qt::white : Qt::black);
            } else {
                t->setColor(level > 0.55 ? Qt::white : Qt::black);  // stays readable on dark and light cells
            }
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
    if (zoomable_) {
        const QRect in = visibleCells();
        QCPRange x = viewColumns_, y = viewRows_;
        if (column >= 0 && (column < in.left() || column > in.right())) x = QCPRange(column - x.size() / 2, column + x.size() / 2);
        if (row >= 0 && (row < in.top() || row > in.bottom())) y = QCPRange(row - y.size() / 2, row + y.size() / 2);
        if (!(x == viewColumns_) || !(y == viewRows_)) setView(x, y);
        return;
    }
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
    if (full == fullView_) return;
    fullView_ = full;
    // An export's cells are at least minCell_: its axis labels, titles and colour scale grow with them (up to 2.5 times
    // the screen's font, while a line of the tick labels still fits a cell, so every label that had room keeps it),
    // so a large image is not labelled in a screen-size font; the screen's fonts come back after.
    if (full) {
        const QFontMetricsF metrics(plot_->xAxis->tickLabelFont());
        // 0.8: a line of labels keeps a fifth of a cell spare (the larger titles take a little of the cells' room)
        exportFontScale_ = std::clamp(0.8 * std::min(minCell_.width(), minCell_.height()) / (metrics.height() + 2), 1.0, 2.5);
        savedFonts_.clear();
        for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, scale_->axis()})
            savedFonts_ << axis->tickLabelFont() << axis->labelFont();
        savedFonts_ << title_->font();
        auto scaled = [this](QFont f) {
            f.setPointSizeF(f.pointSizeF() * exportFontScale_);
            return f;
        };
        for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, scale_->axis()}) {
            axis->setTickLabelFont(scaled(axis->tickLabelFont()));
            axis->setLabelFont(scaled(axis->labelFont()));
        }
        title_->setFont(scaled(title_->font()));
        title_->setText(fullTitle_);  // an export is sized for its cells: the whole title
        scale_->setBarWidth(static_cast<int>(std::lround(14 * exportFontScale_)));
    } else if (savedFonts_.size() == 7) {
        int i = 0;
        for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, scale_->axis()}) {
            axis->setTickLabelFont(savedFonts_[i++]);
            axis->setLabelFont(savedFonts_[i++]);
        }
        title_->setFont(savedFonts_[i]);
        scale_->setBarWidth(14);
        exportFontScale_ = 1;  // the title is elided again by the replot below (afterLayout)
    }
    if (xTicks_) xTicks_->setLabels(model_ ? model_->matrix().columnLabels : QStringList());  // the widest label again
    if (yTicks_) yTicks_->setLabels(model_ ? model_->matrix().rowLabels : QStringList());
    // An export leaves the plot laid out at its size, and QCustomPlot makes the ticks before it lays out again: one
    // pass at the screen's size first, so that the labels are thinned for the screen again.
    if (!full) plot_->replot(QCustomPlot::rpImmediateRefresh);
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
    if (zoomable_ && pressed_ && (event->buttons() & Qt::LeftButton)) {
        if (!panning_ && (event->pos() - pressPos_).manhattanLength() < QApplication::startDragDistance()) return;
        panning_ = true;
        plot_->setCursor(Qt::ClosedHandCursor);
        QToolTip::hideText();
        const QRect area = plot_->axisRect()->rect();
        const double dx = (event->pos().x() - pressPos_.x()) * pressColumns_.size() / std::max(1, area.width());
        const double dy = (event->pos().y() - pressPos_.y()) * pressRows_.size() / std::max(1, area.height());
        // The content follows the mouse: rows run downwards, so dragging down shows the rows above.
        setView(QCPRange(pressColumns_.lower - dx, pressColumns_.upper - dx), QCPRange(pressRows_.lower - dy, pressRows_.upper - dy));
        return;
    }
    int r = 0, c = 0;
    if (!cellAt(event->pos(), &r, &c)) {
        QToolTip::hideText();
        return;
    }
    hoverText_ = model_->data(model_->index(r, c), Qt::ToolTipRole).toString();
    QToolTip::showText(plot_->mapToGlobal(event->pos()), plainToolTip(hoverText_), plot_);
    emit cellHovered(r, c, hoverText_);
}

void HeatmapPlot::onMousePress(QMouseEvent* event) {
    pressed_ = panning_ = false;
    int r = 0, c = 0;
    if (!zoomable_) {
        if (event->button() == Qt::LeftButton && cellAt(event->pos(), &r, &c)) emit cellClicked(r, c);
        return;
    }
    // QCustomPlot starts its rubber band after this signal when the mode asks for one: Shift (or Ctrl) + drag.
    const bool rectangle = event->button() == Qt::LeftButton && (event->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier));
    plot_->setSelectionRectMode(rectangle ? QCP::srmCustom : QCP::srmNone);
    if (event->button() != Qt::LeftButton || rectangle || !plot_->axisRect()->rect().contains(event->pos())) return;
    pressed_ = true;  // a click (selects the cell on release) or the start of a pan
    pressPos_ = event->pos();
    pressColumns_ = viewColumns_;
    pressRows_ = viewRows_;
}

void HeatmapPlot::onMouseRelease(QMouseEvent* event) {
    if (!zoomable_ || event->button() != Qt::LeftButton || !pressed_) return;
    const bool panned = panning_;
    pressed_ = panning_ = false;
    plot_->setCursor(Qt::CrossCursor);
    int r = 0, c = 0;
    if (panned)
        plot_->replot();
    else if (cellAt(event->pos(), &r, &c))
        emit cellClicked(r, c);
}

void HeatmapPlot::onMouseWheel(QWheelEvent* event) {
    if (zoomable_) {
        const QPoint delta = event->angleDelta();
        const double notches = (delta.y() != 0 ? delta.y() : delta.x()) / 120.0;
        if (notches == 0) return;
        const QPointF pos = event->position();
        const QPointF centre = plot_->axisRect()->rect().contains(pos.toPoint())
                                   ? QPointF(plot_->xAxis->pixelToCoord(pos.x()), plot_->yAxis->pixelToCoord(pos.y()))
                                   : QPointF(viewColumns_.center(), viewRows_.center());
        zoomBy(std::pow(kWheelZoom, notches), centre);
        return;
    }
    const QPoint steps = event->angleDelta() / 40;  // three cells per notch
    const bool horizontal = (event->modifiers() & Qt::ShiftModifier) || steps.y() == 0;
    QScrollBar* bar = horizontal ? hbar_ : vbar_;
    bar->setValue(bar->value() - (steps.y() != 0 ? steps.y() : steps.x()));
}

void HeatmapPlot::onRectangle(const QRect& rect) {
    if (!zoomable_ || rect.width() < 3 || rect.height() < 3) return;
    const double x0 = plot_->xAxis->pixelToCoord(rect.left()), x1 = plot_->xAxis->pixelToCoord(rect.right());
    const double y0 = plot_->yAxis->pixelToCoord(rect.top()), y1 = plot_->yAxis->pixelToCoord(rect.bottom());
    setView(QCPRange(std::min(x0, x1), std::max(x0, x1)), QCPRange(std::min(y0, y1), std::max(y0, y1)));
}

bool HeatmapPlot::onKey(QKeyEvent* event) {
    if (!zoomable_ || event->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) return false;
    const QPointF centre(viewColumns_.center(), viewRows_.center());
    const double dx = viewColumns_.size() / 10, dy = viewRows_.size() / 10;
    switch (event->key()) {
        case Qt::Key_Home: resetView(); return true;
        case Qt::Key_Plus:
        case Qt::Key_Equal: zoomBy(kWheelZoom, centre); return true;
        case Qt::Key_Minus: zoomBy(1 / kWheelZoom, centre); return true;
        case Qt::Key_Left: setView(QCPRange(viewColumns_.lower - dx, viewColumns_.upper - dx), viewRows_); return true;
        case Qt::Key_Right: setView(QCPRange(viewColumns_.lower + dx, viewColumns_.upper + dx), viewRows_); return true;
        case Qt::Key_Up: setView(viewColumns_, QCPRange(viewRows_.lower - dy, viewRows_.upper - dy)); return true;
        case Qt::Key_Down: setView(viewColumns_, QCPRange(viewRows_.lower + dy, viewRows_.upper + dy)); return true;
        default: return false;
    }
}

bool HeatmapPlot::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_) {
        if (event->type() == QEvent::Resize && !windowPending_) {
            windowPending_ = true;  // let the plot finish its own resize first
            QTimer::singleShot(0, this, &HeatmapPlot::updateWindow);
        } else if (event->type() == QEvent::KeyPress && onKey(static_cast<QKeyEvent*>(event))) {
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

QToolButton* makeFitButton(HeatmapPlot* plot, QWidget* parent) {
    auto* fit = new QToolButton(parent);
    fit->setText(HeatmapPlot::tr("Fit"));
    fit->setToolTip(HeatmapPlot::tr("Show the whole grid (double-click the plot, or Home). Wheel: zoom · drag: pan · "
                                    "Shift+drag: zoom to a rectangle"));
    fit->setEnabled(plot->isZoomed());
    QObject::connect(fit, &QToolButton::clicked, plot, &HeatmapPlot::resetView);
    QObject::connect(plot, &HeatmapPlot::viewChanged, fit, [fit, plot] { fit->setEnabled(plot->isZoomed()); });
    return fit;
}

}  // namespace nnscope
