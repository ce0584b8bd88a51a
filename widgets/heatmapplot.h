// SPDX-License-Identifier: MIT
#pragma once
// A heatmap of a MatrixModel drawn with QCustomPlot: rows top to bottom, columns left to right, token labels on
// the axes, hover shows the model's tooltip, clicks select a cell. Cells never shrink below a minimum size: a long
// prompt scrolls (scroll bars, mouse wheel) instead of being squashed into an unreadable image.
#include "matrixmodel.h"

#include <qcustomplot.h>

#include <QWidget>

class QScrollBar;

namespace nnscope {

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
    void setSymmetricRange(bool symmetric) { symmetric_ = symmetric; }
    /// The smallest a cell may be drawn, in pixels; below it the plot scrolls.
    void setMinCellSize(QSize size);
    void setTitle(const QString& title);
    /// Outlines row `row` (whole row when column < 0), column `column` (whole column when row < 0), or a cell.
    void setMarkedCell(int row, int column);

    QCustomPlot* plot() const { return plot_; }
    QCPColorMap* colorMap() const { return map_; }
    /// The cells on screen: x = first column, y = first row, width/height = how many.
    QRect visibleCells() const { return {firstColumn(), firstRow(), visibleColumns_, visibleRows_}; }
    /// Scrolls so that the cell is on screen.
    void ensureVisible(int row, int column);
    /// The centre of a cell in plot() coordinates (after scrolling it into view).
    QPoint cellCenter(int row, int column);
    /// The text the last hover showed.
    const QString& hoverText() const { return hoverText_; }

    /// Shows every cell at once (for an export) and the size that keeps every cell at its minimum size.
    void setFullView(bool full);
    QSize fullViewSize() const;

signals:
    void cellHovered(int row, int column, const QString& text);
    void cellClicked(int row, int column);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void updateWindow();
    void applyRanges();
    void updateCellTexts();
    void updateMark();
    int firstColumn() const;
    int firstRow() const;
    bool cellAt(const QPoint& pos, int* row, int* column) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseWheel(QWheelEvent* event);

    MatrixModel* model_ = nullptr;
    QCustomPlot* plot_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
    QCPTextElement* title_;
    QCPItemRect* mark_;
    QScrollBar* hbar_;
    QScrollBar* vbar_;
    QList<QCPItemText*> texts_;
    QSize minCell_{18, 18};
    int visibleColumns_ = 0, visibleRows_ = 0;
    int markRow_ = -1, markColumn_ = -1;
    bool fixedRange_ = false, symmetric_ = false, fullView_ = false, windowPending_ = false;
    QString hoverText_;
};

}  // namespace nnscope
