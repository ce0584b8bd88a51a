// SPDX-License-Identifier: MIT
#pragma once
// The layers × heads overview: one small attention pattern per (block, head), rows = blocks, columns = heads, so
// every head of the model is on screen at once and the induction / previous-token stripes stand out. Each thumbnail
// is one QImage built from the pattern (pooled like MatrixImage: a pixel shows the largest probability of the cells
// it covers), painted by one widget: no widget or plot per head, so 16 blocks × 16 heads at 512 tokens stay fast.
// A per-head score (core/analysis/headscores.h) can mark the heads: a bar under each thumbnail and the best three ranked
// (#1, #2, #3 beside their bar, never drawn over a pattern).
#include "core/analysis/headscores.h"

#include <torch/types.h>

#include <qcustomplot.h>

#include <QImage>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <vector>

namespace nnscope {

class HeadOverview : public QWidget {
    Q_OBJECT
public:
    explicit HeadOverview(QWidget* parent = nullptr);

    /// The patterns to show: `patterns[block]` gives that block's attention_probabilities of one prompt, float32
    /// [num_heads, query, key] (called again whenever the thumbnails are rebuilt at another size, so that only one
    /// block's pattern is held at a time). `blocks` × `heads` thumbnails of `tokens` × `tokens` cells.
    using PatternSource = std::function<torch::Tensor(int block)>;
    void setPatterns(PatternSource source, int blocks, int heads, int tokens);
    void clear();
    /// The scores shown on hover and used to mark the heads (same order as headScores: block by block, head by head).
    void setScores(std::vector<HeadScore> scores);
    /// Marks the heads by one score: 0 previous_token, 1 induction, 2 first_token, 3 diagonal; -1 none.
    void setMarkScore(int score);
    int markScore() const { return mark_; }
    /// The thumbnails coloured on a logarithmic scale from `floor` to 1 (a long prompt's spread-out weights stay
    /// visible instead of white); linear from 0 to 1 when off.
    void setLogScale(bool on, double floor = 1e-5);
    bool logScale() const { return log_; }
    /// Thumbnails this large or larger are kept when the whole grid does not fit: the overview scrolls instead of
    /// shrinking them further (#28: they stayed 20 px where 40 px fitted the width).
    static constexpr int kReadableTile = 40;
    /// Outlines one head (the table's current row); -1, -1 for none.
    void setSelectedHead(int layer, int head);
    int selectedLayer() const { return selLayer_; }
    int selectedHead() const { return selHead_; }

    int blocks() const { return blocks_; }
    int heads() const { return heads_; }
    /// The side of a thumbnail in pixels (they are square).
    int tileSize() const { return tile_; }
    /// Where the thumbnail of (layer, head) is drawn, in widget coordinates.
    QRect tileRect(int layer, int head) const;
    /// The thumbnail of (layer, head) as drawn: min(tokens, tileSize()) pixels square; pixel (x, y) covers the key
    /// columns [x·n/w, (x+1)·n/w) and query rows alike and shows the largest probability there on probabilityGradient()
    /// over [0, 1]. Built on demand (the widget's current size).
    const QImage& thumbnail(int layer, int head);
    /// The value of the marking score for (layer, head) (NaN when none or not scored).
    double markValue(int layer, int head) const;
    /// The heads ranked by the marking score, best first.
    std::vector<std::pair<int, int>> ranking() const;
    const QString& hoverText() const { return hoverText_; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void headClicked(int layer, int head);
    void headHovered(int layer, int head, const QString& text);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    void layoutTiles();
    void buildImages();
    bool headAt(QPoint pos, int* layer, int* head) const;
    int labelWidth() const;
    int labelHeight() const;
    int pitchX() const;
    int pitchY() const;
    int barArea() const;

    PatternSource source_;
    int blocks_ = 0, heads_ = 0, tokens_ = 0;
    int tile_ = 48;
    int builtSize_ = -1;            // the image size the thumbnails were built at (-1: not built)
    std::vector<QImage> images_;    // block-major
    std::vector<HeadScore> scores_;
    int mark_ = -1;
    bool log_ = false;
    double logFloor_ = 1e-5;
    int selLayer_ = -1, selHead_ = -1;
    int hoverLayer_ = -1, hoverHead_ = -1;
    QString hoverText_;
    QTimer rebuild_;                // a resize rebuilds the images once the size settles
};

}  // namespace nnscope
