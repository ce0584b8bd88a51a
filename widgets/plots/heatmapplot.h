// SPDX-License-Identifier: MIT
#pragma once
// A heatmap of a MatrixModel drawn with QCustomPlot: rows top to bottom, columns left to right, token labels on
// the axes, hover shows the model's tooltip, clicks select a cell. The matrix is drawn as one image (MatrixImage),
// never an item per cell, so a 2048 × 2048 attention pattern draws as fast as a small one.
//
// Two ways to show a large matrix:
// - scrolling (the default): cells never shrink below a minimum size and the plot scrolls (scroll bars, wheel);
// - zoomable (setZoomable): the whole matrix is fitted to the view; the wheel zooms about the cursor, a drag pans,
//   Shift+drag zooms to a rectangle, double-click or Home fits the whole matrix again, + / - zoom, arrows pan.
// Either way the token labels are thinned to what fits (TokenTicker), and all shown once the cells are tall enough.
#include "widgets/plots/matrixmodel.h"

#include <qcustomplot.h>

#include <QWidget>

#include <cmath>

class QScrollBar;
class QToolButton;

namespace nnscope {

/// Token labels on an axis, thinned to what fits: every label when a cell is as tall as a line of text, else every
/// 2nd, 5th, 10th, 20th, ... (so the labels stay put while zooming). A thinned label reads "position token".
/// The ticks (ticks()) hold every label; tickVector() of the axis holds the ones drawn.
class TokenTicker : public QCPAxisTickerText {
public:
    explicit TokenTicker(QCPAxis* axis) : axis_(axis) {}
    /// Every label from `labels`, at positions 0, 1, 2, ...
    void setLabels(const QStringList& labels);
    /// The step of the last generated ticks: 1 when every label in view is drawn.
    int step() const { return step_; }
    /// Labels that carry their own numbers: a thinned label is not prefixed with its index.
    void setNumbered(bool numbered) { numbered_ = numbered; }

protected:
    double getTickStep(const QCPRange& range) override;
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    QCPAxis* axis_;
    int step_ = 1;
    bool numbered_ = false;
    int widest_ = 0;  // pixels: the widest label, for labels that run along the axis
};

/// The colours of the cells that hold no number a colour scale can place, none of them in the window's gradients (white
/// to blue, blue-white-red): NaN magenta, +Inf amber, -Inf green.
constexpr QRgb kNanColor = 0xffe000e0u, kPosInfColor = 0xffffa000u, kNegInfColor = 0xff00b050u;

/// A float32 matrix drawn as one image over cells centred on integer coordinates (column = key, row = value).
/// Only the cells in view are drawn; when cells are smaller than a pixel, each pixel shows the largest value of the
/// cells it covers (the largest magnitude for signed data), so a one-cell-wide stripe of a long attention pattern
/// stays visible instead of being dropped by the scaling. A NaN or an infinity is drawn in its own colour (kNanColor,
/// kPosInfColor, kNegInfColor), and wins the pixel it shares with finite cells, so that one is never lost. The colour map's own data() holds nothing: the cells are
/// the MatrixModel's (HeatmapPlot::model()), read where they are, never copied.
class MatrixImage : public QCPColorMap {
public:
    MatrixImage(QCPAxis* keyAxis, QCPAxis* valueAxis);
    /// The cells (row-major, rows × columns), owned by the caller and alive while drawn.
    void setMatrix(const float* data, int rows, int columns);
    /// The cell at (row, column) as drawn (from the caller's cells); rows()/columns() give the matrix's size.
    float cell(int row, int column) const { return data_[static_cast<size_t>(row) * columns_ + column]; }
    int rows() const { return rows_; }
    int columns() const { return columns_; }
    /// Pooling by largest magnitude (signed data) instead of the largest value.
    void setSignedPooling(bool on) { signedPooling_ = on; }
    /// A symmetric logarithmic colour scale for signed data: a cell's value v is coloured at symLog(v, threshold) on the
    /// linear data range (which the caller sets in the same units); 0 turns it off.
    void setSymLogThreshold(double threshold) {
        symLog_ = threshold;
        imageValid_ = false;
    }
    /// sign(v) · log10(1 + |v| / threshold): linear near 0, logarithmic in |v| beyond the threshold (the "symlog" of
    /// matplotlib's SymLogNorm, base 10), so both small and large activations of either sign keep a distinct colour.
    static double symLog(double v, double threshold) { return std::copysign(std::log10(1 + std::fabs(v) / threshold), v); }
    /// The image drawn last, and the cells it covers (x = first column, y = first row). Row 0 of the image is the
    /// first row of the cells, column 0 the first column, whatever the axes' directions.
    const QImage& lastImage() const { return image_; }
    QRect lastImageCells() const { return imageCells_; }

protected:
    void draw(QCPPainter* painter) override;

private:
    void buildImage(QRect cells, QSize size);

    const float* data_ = nullptr;
    int rows_ = 0, columns_ = 0;
    bool signedPooling_ = false;
    double symLog_ = 0;
    QImage image_;
    QRect imageCells_;
    // what image_ was built for: a new matrix, view, size, colour range, scale or gradient builds it again
    bool imageValid_ = false;
    QCPRange imageRange_;
    bool imageLog_ = false;
    QCPColorGradient imageGradient_;
};

/// Gives a QCustomPlot the widget palette's colours: background, axes, tick labels, titles, colour scales.
void followPalette(QCustomPlot* plot);

class HeatmapPlot : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapPlot(QWidget* parent = nullptr);

    void setModel(MatrixModel* model);
    MatrixModel* model() const { return model_; }
    void setGradient(const QCPColorGradient& gradient);
    /// Fixed colour range (e.g. 0..1 for probabilities); without it the range follows the data.
    void setDataRange(double lower, double upper);
    /// Colour range symmetric around zero (signed data such as neuron activations).
    void setSymmetricRange(bool symmetric);
    /// Logarithmic colour scale from `floor` (smaller values, zeros included, take the lowest colour) to the top of
    /// the range; linear when off. On a symmetric range (signed data) it is a symmetric log scale instead
    /// (MatrixImage::symLog): linear within ±(floor × the largest magnitude), logarithmic beyond, in both signs.
    void setLogScale(bool on, double floor = 1e-5);
    bool logScale() const { return log_; }
    /// Categories instead of a colour scale (the Routing view's expert ids): a cell's value v in [0, n) is category
    /// floor(v), drawn in colours[floor(v)], and the colour scale names each category with its label; a cell's text is
    /// black or white after its colour's lightness. The range is fixed (to [0, n - 1]). An empty list ends it (the gradient
    /// and range are the caller's to set again).
    void setCategories(const QList<QColor>& colours, const QStringList& labels);
    const QList<QColor>& categories() const { return categories_; }
    /// The smallest a cell may be drawn when scrolling, in pixels (and the cell size of a full-view export).
    void setMinCellSize(QSize size);
    /// Fits the whole matrix to the view, with zoom and pan (see the file comment), instead of scrolling.
    void setZoomable(bool on);
    bool zoomable() const { return zoomable_; }
    void setTitle(const QString& title);
    /// The title above the matrix (its lines, as set) and its font.
    QString title() const;
    QFont titleFont() const;
    /// The title as drawn: each line of title() elided to the width of its cell (the axis rect's column).
    QString shownTitle() const;
    /// Outlines row `row` (whole row when column < 0), column `column` (whole column when row < 0), or a cell.
    void setMarkedCell(int row, int column);

    QCustomPlot* plot() const { return plot_; }
    MatrixImage* colorMap() const { return map_; }
    /// The texts drawn in the cells in view, and the width in pixels each was elided to (0: the cells are too small
    /// for text, none drawn).
    const QList<QCPItemText*>& cellTexts() const { return texts_; }
    int cellTextWidth() const { return cellTextWidth_; }
    /// The cells on screen: x = first column, y = first row, width/height = how many.
    QRect visibleCells() const;
    /// Scrolls (or pans) so that the cell is on screen.
    void ensureVisible(int row, int column);
    /// The centre of a cell in plot() coordinates (after scrolling it into view).
    QPoint cellCenter(int row, int column);
    /// The text the last hover showed.
    const QString& hoverText() const { return hoverText_; }
    /// How many cells of the matrix are NaN, +Inf and -Inf; the plot says it under the matrix (nonFiniteText()),
    /// in their colours, and hides the colour scale when no cell is finite.
    int nanCount() const { return nanCount_; }
    int posInfCount() const { return posInfCount_; }
    int negInfCount() const { return negInfCount_; }
    /// The line under the matrix ("3 NaN · 1 +Inf cells, drawn in their own colours"), or "" when every cell is finite.
    QString nonFiniteText() const;

    /// Zoomable: shows the whole matrix again.
    void resetView();
    /// Zoomable: zooms by `factor` (< 1: in) about the cell coordinates `centre`.
    void zoomBy(double factor, QPointF centre);
    /// Zoomable: shows the cells [firstColumn, lastColumn] × [firstRow, lastRow] (clamped to the matrix).
    void zoomToCells(double firstColumn, double lastColumn, double firstRow, double lastRow);
    /// Whether the view shows less than the whole matrix.
    bool isZoomed() const;

    /// Shows every cell at once (for an export) and the size that keeps every cell at its minimum size; the fonts of
    /// the axes, the title and the colour scale grow with the export's cells (exportFontScale()) until it ends.
    void setFullView(bool full);
    double exportFontScale() const { return exportFontScale_; }
    QSize fullViewSize() const;

signals:
    void cellHovered(int row, int column, const QString& text);
    void cellClicked(int row, int column);
    /// The part of the matrix in view changed (zoom, pan, scroll, reset).
    void viewChanged();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void updateWindow();
    void applyRanges();
    void setView(QCPRange columns, QCPRange rows);
    QCPRange clampRange(QCPRange range, int cells) const;
    void updateColorRange();
    void updateCellTexts();
    void updateMark();
    int firstColumn() const;
    int firstRow() const;
    bool cellAt(const QPoint& pos, int* row, int* column) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void onMouseWheel(QWheelEvent* event);
    void onRectangle(const QRect& rect);
    bool onKey(QKeyEvent* event);

    MatrixModel* model_ = nullptr;
    QCustomPlot* plot_;
    MatrixImage* map_;
    QCPColorScale* scale_;
    QCPTextElement* title_;
    QString fullTitle_;   ///< the title as set; title_ shows it with each line elided to its cell's width
    void elideTitle();
    QCPTextElement* nonFinite_;  ///< the count of non-finite cells, in the layout's last row only while there are some
    QCPItemRect* mark_;
    QScrollBar* hbar_;
    QScrollBar* vbar_;
    QList<QCPItemText*> texts_;
    int cellTextWidth_ = 0;  // pixels: the room each cell's text was elided to (0: no cell text drawn)
    QSharedPointer<TokenTicker> xTicks_, yTicks_;
    QSize minCell_{18, 18};
    int visibleColumns_ = 0, visibleRows_ = 0;  // scrolling: how many cells fit
    int markRow_ = -1, markColumn_ = -1;
    int shownRows_ = -1, shownColumns_ = -1;    // the matrix size the view was set for
    QCPRange viewColumns_, viewRows_;             // zoomable: the part in view (axis coordinates)
    QCPRange fixedRange_;
    double dataLo_ = 0, dataHi_ = 1;              // the finite values' range
    int nanCount_ = 0, posInfCount_ = 0, negInfCount_ = 0;
    bool anyFinite_ = true;
    bool hasFixedRange_ = false, symmetric_ = false, fullView_ = false, windowPending_ = false, zoomable_ = false;
    bool log_ = false;
    double logFloor_ = 1e-5;
    QList<QColor> categories_;
    QStringList categoryLabels_;
    double exportFontScale_ = 1;
    QList<QFont> savedFonts_;  // the screen's fonts while a full view is exported
    // a drag in progress: panning from pressPos_ with the view it started from
    bool pressed_ = false, panning_ = false;
    QPoint pressPos_;
    QCPRange pressColumns_, pressRows_;
    QString hoverText_;
};

/// A "Fit" button for a zoomable heatmap: shows the whole matrix again, enabled while the view is zoomed or panned.
QToolButton* makeFitButton(HeatmapPlot* plot, QWidget* parent);

}  // namespace nnscope
