// SPDX-License-Identifier: MIT
#pragma once
// Every head of one block side by side: one small attention heatmap per head in a single QCustomPlot (so it exports
// as one figure). Hover gives the head, the tokens and the probability; clicking a tile opens that head.
#include <torch/types.h>

#include <qcustomplot.h>

#include <QStringList>
#include <QWidget>

class QScrollArea;

namespace nnscope {

class MatrixImage;

class HeadGridPlot : public QWidget {
    Q_OBJECT
public:
    explicit HeadGridPlot(QWidget* parent = nullptr);

    /// pattern: float32 [num_heads, query, key]; tokens label both token axes. The tiles are fitted to the room
    /// (fit()); a pattern of another shape (another model) replaces everything of the last one.
    void setPattern(const torch::Tensor& pattern, const QStringList& tokens);
    /// Colours on a logarithmic scale from `floor` to 1 (smaller probabilities take the lowest colour), as the
    /// Attention view's single head; linear from 0 to 1 when off.
    void setLogScale(bool on, double floor = 1e-5);
    bool logScale() const { return log_; }
    /// Sizes the tiles so that every head is in view (square, at least 110 px: below that the grid scrolls) and
    /// scrolls back to the first head; done on every new pattern and resize.
    void fit();
    /// The side of a tile in pixels, as last fitted.
    int tileSize() const { return tile_; }
    QScrollArea* scrollArea() const { return scroll_; }
    QCustomPlot* plot() const { return plot_; }
    int headCount() const { return static_cast<int>(maps_.size()); }
    /// The image of `head`'s pattern, drawing from the pattern set (MatrixImage::cell reads what it draws).
    MatrixImage* map(int head) const { return maps_.at(static_cast<size_t>(head)); }
    /// The centre of cell (query, key) of `head`, in plot() coordinates.
    QPoint cellCenter(int head, int query, int key) const;
    const QString& hoverText() const { return hoverText_; }

signals:
    void headClicked(int head);
    void cellHovered(int head, int query, int key, const QString& text);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void applyScale();
    bool cellAt(const QPoint& pos, int* head, int* query, int* key) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);

    QCustomPlot* plot_;
    QScrollArea* scroll_;
    QCPColorScale* scale_ = nullptr;
    int columns_ = 1, rows_ = 1, tile_ = 0;
    bool log_ = false;
    double logFloor_ = 1e-5;
    std::vector<MatrixImage*> maps_;
    std::vector<QCPAxisRect*> rects_;
    torch::Tensor pattern_;
    QStringList tokens_;
    QString hoverText_;
};

}  // namespace nnscope
