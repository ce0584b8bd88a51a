// SPDX-License-Identifier: MIT
#include "widgets/views/headoverview.h"

#include "widgets/views/traceview.h"

#include <torch/types.h>

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnscope {

namespace {
constexpr int kMinThumb = 20;   // pixels: smaller thumbnails show nothing; the overview scrolls instead
constexpr int kMaxTile = 160;  // larger ones belong to the Attention view
constexpr int kGap = 8;        // between thumbnails
constexpr int kBar = 5;        // the marking score's bar under each thumbnail (beside its rank for the best three)
const char* const kScoreNames[] = {"previous_token", "induction", "first_token", "diagonal"};

double scoreOf(const HeadScore& s, int which) {
    switch (which) {
        case 0: return s.previousToken;
        case 1: return s.induction;
        case 2: return s.firstToken;
        case 3: return s.diagonal;
        default: return std::numeric_limits<double>::quiet_NaN();
    }
}

/// One head's pattern [n, n] as a size × size image: pixel (x, y) shows the largest value of the cells it covers
/// (columns [x·n/size, (x+1)·n/size), rows alike), as MatrixImage pools, so a one-cell stripe stays visible.
QImage pooledImage(const float* data, int n, int size, QCPColorGradient& gradient, double logFloor) {
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    std::vector<int> start(static_cast<size_t>(size) + 1);
    for (int i = 0; i <= size; ++i) start[static_cast<size_t>(i)] = static_cast<int>(static_cast<int64_t>(i) * n / size);
    std::vector<double> line(static_cast<size_t>(size));
    for (int j = 0; j < size; ++j) {
        std::fill(line.begin(), line.end(), std::numeric_limits<double>::quiet_NaN());
        for (int r = start[static_cast<size_t>(j)]; r < start[static_cast<size_t>(j) + 1]; ++r) {
            const float* row = data + static_cast<size_t>(r) * n;
            for (int i = 0; i < size; ++i) {
                double& acc = line[static_cast<size_t>(i)];
                for (int c = start[static_cast<size_t>(i)]; c < start[static_cast<size_t>(i) + 1]; ++c)
                    if (!std::isnan(row[c]) && (std::isnan(acc) || row[c] > acc)) acc = row[c];
            }
        }
        if (logFloor > 0)  // zeros and anything below the floor take the lowest colour
            for (double& v : line)
                if (std::isnan(v) || v < logFloor) v = logFloor;
        gradient.colorize(line.data(), QCPRange(logFloor > 0 ? logFloor : 0, 1), reinterpret_cast<QRgb*>(image.scanLine(j)), size, 1,
                          logFloor > 0);
    }
    return image;
}
}  // namespace

HeadOverview::HeadOverview(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    rebuild_.setSingleShot(true);
    rebuild_.setInterval(150);
    connect(&rebuild_, &QTimer::timeout, this, [this] {
        buildImages();
        update();
    });
}

void HeadOverview::setPatterns(PatternSource source, int blocks, int heads, int tokens) {
    source_ = std::move(source);
    blocks_ = blocks;
    heads_ = heads;
    tokens_ = tokens;
    images_.clear();
    builtSize_ = -1;
    hoverLayer_ = hoverHead_ = -1;
    updateGeometry();
    layoutTiles();
    update();
}

void HeadOverview::clear() {
    setPatterns({}, 0, 0, 0);
    scores_.clear();
}

void HeadOverview::setScores(std::vector<HeadScore> scores) {
    scores_ = std::move(scores);
    update();
}

void HeadOverview::setMarkScore(int score) {
    mark_ = score >= 0 && score < 4 ? score : -1;
    update();
}

void HeadOverview::setLogScale(bool on, double floor) {
    if (on == log_ && floor == logFloor_) return;
    log_ = on;
    logFloor_ = floor;
    builtSize_ = -1;  // built again, in the new colours, when next drawn
    images_.clear();
    update();
}

void HeadOverview::setSelectedHead(int layer, int head) {
    selLayer_ = layer;
    selHead_ = head;
    update();
}

int HeadOverview::labelWidth() const { return fontMetrics().horizontalAdvance(QStringLiteral("block 00")) + 8; }
int HeadOverview::labelHeight() const { return 2 * fontMetrics().height() + 4; }
int HeadOverview::pitchX() const { return tile_ + kGap; }
int HeadOverview::pitchY() const { return tile_ + barArea() + kGap; }
int HeadOverview::barArea() const { return fontMetrics().height() + 2; }

QSize HeadOverview::minimumSizeHint() const {
    if (heads_ == 0) return {100, 60};
    return {labelWidth() + heads_ * (kMinThumb + kGap), labelHeight() + blocks_ * (kMinThumb + barArea() + kGap)};
}

QSize HeadOverview::sizeHint() const {
    if (heads_ == 0) return {300, 200};
    return {labelWidth() + heads_ * (72 + kGap), labelHeight() + blocks_ * (72 + barArea() + kGap)};
}

void HeadOverview::layoutTiles() {
    if (heads_ == 0 || blocks_ == 0) return;
    // The room is the scroll area's view (this widget grows taller than it when the grid scrolls).
    const int roomHeight = parentWidget() ? parentWidget()->height() : height();
    const int byWidth = (width() - labelWidth()) / heads_ - kGap;
    const int byHeight = (roomHeight - labelHeight()) / blocks_ - kGap - barArea();
    int tile = std::min(byWidth, byHeight);  // every thumbnail in view
    // Too small to read: as wide as the width allows up to kReadableTile, scrolling down instead.
    if (tile < kReadableTile) tile = std::min(byWidth, kReadableTile);
    tile_ = std::clamp(tile, kMinThumb, kMaxTile);
    setMinimumHeight(labelHeight() + blocks_ * pitchY());
}

QRect HeadOverview::tileRect(int layer, int head) const {
    return QRect(labelWidth() + head * pitchX(), labelHeight() + layer * pitchY(), tile_, tile_);
}

void HeadOverview::buildImages() {
    rebuild_.stop();
    images_.clear();
    builtSize_ = -1;
    if (!source_ || tokens_ <= 0) return;
    const int size = std::min(tokens_, tile_);
    QCPColorGradient gradient = probabilityGradient();
    images_.reserve(static_cast<size_t>(blocks_ * heads_));
    for (int b = 0; b < blocks_; ++b) {
        // one block's pattern at a time: 16 heads × 512² floats is 16 MB, the whole model's would be 16 times that
        const torch::Tensor pattern = source_(b).to(torch::kFloat32).contiguous();
        TORCH_CHECK(pattern.dim() == 3 && pattern.size(0) == heads_ && pattern.size(1) == tokens_ && pattern.size(2) == tokens_,
                    "HeadOverview: block ", b, "'s pattern is ", pattern.sizes(), ", expected [", heads_, ", ", tokens_, ", ", tokens_, "]");
        const float* data = pattern.data_ptr<float>();
        for (int h = 0; h < heads_; ++h)
            images_.push_back(pooledImage(data + static_cast<size_t>(h) * tokens_ * tokens_, tokens_, size, gradient, log_ ? logFloor_ : 0));
    }
    builtSize_ = size;
}

const QImage& HeadOverview::thumbnail(int layer, int head) {
    if (builtSize_ != std::min(tokens_, tile_)) buildImages();
    return images_.at(static_cast<size_t>(layer * heads_ + head));
}

double HeadOverview::markValue(int layer, int head) const {
    const size_t k = static_cast<size_t>(layer * heads_ + head);
    if (mark_ < 0 || k >= scores_.size()) return std::numeric_limits<double>::quiet_NaN();
    return scoreOf(scores_[k], mark_);
}

std::vector<std::pair<int, int>> HeadOverview::ranking() const {
    std::vector<std::pair<int, int>> out;
    if (mark_ < 0) return out;
    for (const HeadScore& s : scores_)
        if (!std::isnan(scoreOf(s, mark_))) out.emplace_back(s.layer, s.head);
    std::stable_sort(out.begin(), out.end(), [this](auto a, auto b) { return markValue(a.first, a.second) > markValue(b.first, b.second); });
    return out;
}

void HeadOverview::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    const int before = tile_;
    layoutTiles();
    // meanwhile the old images are drawn scaled; the new ones are built once the size settles
    if (tile_ != before && builtSize_ >= 0 && builtSize_ != std::min(tokens_, tile_)) rebuild_.start();
}

void HeadOverview::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette& pal = palette();
    p.setPen(pal.color(QPalette::Text));
    if (heads_ == 0 || blocks_ == 0) return;
    if (builtSize_ < 0) buildImages();
    const QFontMetrics fm = fontMetrics();
    // the axes: "head →" over the head numbers, "block ↓" over the block numbers
    p.drawText(QRect(0, 0, labelWidth() - 4, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, tr("block ↓"));
    p.drawText(QRect(labelWidth(), 0, heads_ * pitchX(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter, tr("head →"));
    for (int h = 0; h < heads_; ++h)
        p.drawText(QRect(labelWidth() + h * pitchX(), fm.height() + 2, tile_, fm.height()), Qt::AlignCenter, QString::number(h));
    for (int b = 0; b < blocks_; ++b)
        p.drawText(QRect(0, labelHeight() + b * pitchY(), labelWidth() - 6, tile_), Qt::AlignRight | Qt::AlignVCenter,
                   tr("block %1").arg(b));

    // the marking score: a bar under each thumbnail, its length the score over the best head's
    double best = 0;
    for (const HeadScore& s : scores_)
        if (!std::isnan(scoreOf(s, mark_))) best = std::max(best, scoreOf(s, mark_));
    const auto rank = ranking();
    QColor track = pal.color(QPalette::Text);
    track.setAlpha(40);
    QColor frame = pal.color(QPalette::Text);
    frame.setAlpha(90);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);  // sharp cells when a thumbnail is larger than its pattern
    for (int b = 0; b < blocks_; ++b)
        for (int h = 0; h < heads_; ++h) {
            const QRect r = tileRect(b, h);
            if (!r.intersects(rect())) continue;
            const size_t k = static_cast<size_t>(b * heads_ + h);
            if (k < images_.size()) p.drawImage(r, images_[k]);
            p.setPen(QPen(frame, 1));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(-1, -1, 0, 0));
            if (mark_ >= 0) {
                const int rankWidth = fm.horizontalAdvance(QStringLiteral("#3")) + 4;
                const QRect bar(r.left(), r.bottom() + 1 + (barArea() - kBar) / 2, std::max(4, r.width() - rankWidth), kBar);
                p.fillRect(bar, track);
                const double v = markValue(b, h);
                if (!std::isnan(v) && best > 0)
                    p.fillRect(QRect(bar.left(), bar.top(), qRound(bar.width() * std::clamp(v / best, 0.0, 1.0)), bar.height()),
                               pal.color(QPalette::Highlight));
            }
        }
    // the three best heads by the marking score, numbered beside their bar (never over the pattern)
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(pal.color(QPalette::Text));
    for (size_t i = 0; i < std::min<size_t>(3, rank.size()); ++i) {
        const QRect r = tileRect(rank[i].first, rank[i].second);
        p.drawText(QRect(r.left(), r.bottom() + 1, r.width(), barArea()), Qt::AlignRight | Qt::AlignVCenter, QString("#%1").arg(i + 1));
    }
    p.setFont(font());
    p.setBrush(Qt::NoBrush);
    if (selLayer_ >= 0 && selHead_ >= 0 && selLayer_ < blocks_ && selHead_ < heads_) {
        p.setPen(QPen(pal.color(QPalette::Highlight), 3));
        p.drawRect(tileRect(selLayer_, selHead_).adjusted(-3, -3, 2, 2));
    }
    if (hoverLayer_ >= 0) {
        p.setPen(QPen(pal.color(QPalette::Text), 1, Qt::DashLine));
        p.drawRect(tileRect(hoverLayer_, hoverHead_).adjusted(-3, -3, 2, 2));
    }
}

bool HeadOverview::headAt(QPoint pos, int* layer, int* head) const {
    if (heads_ == 0) return false;
    const int x = pos.x() - labelWidth(), y = pos.y() - labelHeight();
    if (x < 0 || y < 0) return false;
    const int h = x / pitchX(), b = y / pitchY();
    if (h >= heads_ || b >= blocks_ || !tileRect(b, h).contains(pos)) return false;
    *layer = b;
    *head = h;
    return true;
}

void HeadOverview::mouseMoveEvent(QMouseEvent* event) {
    int b = -1, h = -1;
    if (!headAt(event->pos(), &b, &h)) {
        if (hoverLayer_ >= 0) update();
        hoverLayer_ = hoverHead_ = -1;
        QToolTip::hideText();
        return;
    }
    if (b != hoverLayer_ || h != hoverHead_) update();
    hoverLayer_ = b;
    hoverHead_ = h;
    QStringList lines{tr("layers.%1 · head %2").arg(b).arg(h)};
    const size_t k = static_cast<size_t>(b * heads_ + h);
    if (k < scores_.size()) {
        QStringList values;
        for (int s = 0; s < 4; ++s) {
            const double v = scoreOf(scores_[k], s);
            values << QString("%1 %2").arg(kScoreNames[s], std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'f', 3));
        }
        lines << values.join(QStringLiteral(" · "));
    }
    lines << tr("click: open it in the Attention view");
    hoverText_ = lines.join('\n');
    QToolTip::showText(event->globalPosition().toPoint(), hoverText_, this);
    emit headHovered(b, h, hoverText_);
}

void HeadOverview::mousePressEvent(QMouseEvent* event) {
    int b = -1, h = -1;
    if (event->button() == Qt::LeftButton && headAt(event->pos(), &b, &h)) {
        setSelectedHead(b, h);
        emit headClicked(b, h);
        return;
    }
    QWidget::mousePressEvent(event);
}

void HeadOverview::leaveEvent(QEvent* event) {
    hoverLayer_ = hoverHead_ = -1;
    update();
    QWidget::leaveEvent(event);
}

}  // namespace nnscope
