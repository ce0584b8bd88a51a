// SPDX-License-Identifier: MIT
#pragma once
// Every head of one block side by side: one small attention heatmap per head in a single QCustomPlot (so it exports
// as one figure). Hover gives the head, the tokens and the probability; clicking a tile opens that head.
#include <torch/types.h>

#include <qcustomplot.h>

#include <QStringList>
#include <QWidget>

namespace nnscope {

class HeadGridPlot : public QWidget {
    Q_OBJECT
public:
    explicit HeadGridPlot(QWidget* parent = nullptr);

    /// pattern: float32 [num_heads, query, key]; tokens label both token axes.
    void setPattern(const torch::Tensor& pattern, const QStringList& tokens);
    QCustomPlot* plot() const { return plot_; }
    int headCount() const { return static_cast<int>(maps_.size()); }
    QCPColorMap* map(int head) const { return maps_.at(static_cast<size_t>(head)); }
    /// The centre of cell (query, key) of `head`, in plot() coordinates.
    QPoint cellCenter(int head, int query, int key) const;
    const QString& hoverText() const { return hoverText_; }

signals:
    void headClicked(int head);
    void cellHovered(int head, int query, int key, const QString& text);

private:
    bool cellAt(const QPoint& pos, int* head, int* query, int* key) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);

    QCustomPlot* plot_;
    std::vector<QCPColorMap*> maps_;
    std::vector<QCPAxisRect*> rects_;
    torch::Tensor pattern_;
    QStringList tokens_;
    QString hoverText_;
};

}  // namespace nnscope
