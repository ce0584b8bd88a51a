// SPDX-License-Identifier: MIT
#include "widgets/panels/blockdiagram.h"

#include "widgets/panels/palette.h"

#include "core/run/trace.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace nnscope {

QString PartInfo::html() const {
    QString s = QString("<b>%1</b>").arg(name.toHtmlEscaped());
    if (!path.isEmpty()) s += QString("<br><tt>%1</tt>").arg(path.toHtmlEscaped());
    if (!layout.isEmpty()) s += QString("<br>%1").arg(layout.toHtmlEscaped());
    if (!description.isEmpty()) s += QString("<br>%1").arg(description.toHtmlEscaped());
    if (!readAt.isEmpty()) s += QString("<br><i>%1</i> %2").arg(QObject::tr("read at:"), readAt.toHtmlEscaped());
    if (!module.isEmpty()) s += QString("<br><i>%1</i> <tt>%2</tt>").arg(QObject::tr("module:"), module.toHtmlEscaped());
    return s;
}

BlockDiagram::BlockDiagram(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void BlockDiagram::setModel(ModelPtr model) {
    model_ = std::move(model);
    if (model_) {
        // The head as loaded: tie_word_embeddings true over a file whose own lm_head differs is not tied (as in transformers).
        ModelConfig drawn = model_->config();
        if (model_->hasWeights()) drawn.tieWordEmbeddings = model_->headTied();
        layout_ = layoutDiagram(model_->family(), drawn);
    } else {
        layout_ = DiagramLayout();
    }
    block_ = 0;
    hovered_.clear();
    highlighted_.clear();
    pinned_.clear();
    dictionary_.clear();
    setMinimumHeight(heightForWidth(width()));
    updateGeometry();
    update();
}

void BlockDiagram::resizeEvent(QResizeEvent*) {
    // Inside a scroll area the diagram is as tall as its width asks, so every part can be scrolled to.
    const int h = heightForWidth(width());
    if (minimumHeight() != h) setMinimumHeight(h);
}

void BlockDiagram::setBlock(int block) {
    if (block == block_) return;
    block_ = block;
    update();
}

double BlockDiagram::scale() const {
    if (layout_.size.width() <= 0) return 1.0;
    return std::clamp(width() / layout_.size.width(), 0.7, 1.6);
}

int BlockDiagram::heightForWidth(int width) const {
    if (layout_.size.width() <= 0) return 100;
    return qCeil(layout_.size.height() * std::clamp(width / layout_.size.width(), 0.7, 1.6));
}

QSize BlockDiagram::sizeHint() const {
    return layout_.size.isEmpty() ? QSize(460, 200) : layout_.size.toSize();
}

PartInfo BlockDiagram::info(const QString& id) const {
    PartInfo info;
    info.id = id;
    const DiagramPart* part = layout_.part(id);
    if (!part || !model_) return info;
    const Family& f = model_->family();
    if (part->module) info.module = QString::fromStdString(f.moduleLabel(*part->module));
    if (!part->value) {
        info.name = info.module.isEmpty() ? part->title : info.module;
        if (part->module == Module::Layers) {
            info.description = tr("%1 blocks, layers[0] to layers[%2]; the block drawn below is layers[%3] (the slider picks it)")
                                   .arg(model_->config().numLayers).arg(model_->config().numLayers - 1).arg(block_);
        } else {
            info.description = part->detail;
        }
        return info;
    }
    PartInfo value = valueKeyInfo(*model_, {*part->value, part->perBlock ? block_ : -1});
    value.id = id;
    value.module = info.module;
    return value;
}

PartInfo valueKeyInfo(const Model& model, const ValueKey& key) {
    PartInfo info;
    const ValueInfo& vi = valueInfo(key.value);
    info.key = key;
    info.path = QString::fromStdString(valuePath(model.family(), key));
    const bool native = static_cast<int>(key.value) >= kNumStandardValues;
    // A native value's name is its module path below the host ("q_proj.output"); a standard value's its own name.
    info.name = native ? info.path.section('.', 3) : QString::fromUtf8(vi.name);
    info.layout = QString::fromStdString(layoutString(vi));
    info.description = QString::fromUtf8(vi.description);
    info.readAt = QString::fromStdString(model.family().readAt(key.value));
    return info;
}

QRect BlockDiagram::partRect(const QString& id) const {
    const DiagramPart* part = layout_.part(id);
    if (!part) return {};
    const double s = scale();
    return QRectF(part->rect.topLeft() * s, part->rect.size() * s).toAlignedRect();
}

void BlockDiagram::setHighlightedPart(const QString& id) {
    if (highlighted_ == id) return;
    highlighted_ = id;
    update();
}

void BlockDiagram::setPinnedParts(const QSet<QString>& ids) {
    pinned_ = ids;
    update();
}

void BlockDiagram::setDictionaryParts(const QSet<QString>& ids) {
    dictionary_ = ids;
    update();
}

QString BlockDiagram::partAt(const QPointF& pos) const {
    const QPointF p = pos / scale();
    for (const auto& part : layout_.parts)
        if (part.rect.contains(p)) return part.id;
    return {};
}

void BlockDiagram::mouseMoveEvent(QMouseEvent* event) {
    const QString id = partAt(event->position());
    if (id == hovered_) return;
    hovered_ = id;
    update();
    if (id.isEmpty()) {
        QToolTip::hideText();
        return;
    }
    const QString html = info(id).html();
    QToolTip::showText(event->globalPosition().toPoint(), html, this, partRect(id));
    emit partHovered(id, html);
}

void BlockDiagram::mousePressEvent(QMouseEvent* event) {
    const QString id = partAt(event->position());
    if (event->button() == Qt::LeftButton && !id.isEmpty()) emit partClicked(id);
}

void BlockDiagram::leaveEvent(QEvent*) {
    hovered_.clear();
    update();
}

namespace {

QColor fillFor(const DiagramPart& part) {
    switch (part.kind) {
        case DiagramPart::Stream: return QColor(0xdd, 0xf3, 0xe4);
        case DiagramPart::Add: return QColor(0xdd, 0xf3, 0xe4);
        case DiagramPart::Operation: return QColor(0xee, 0xee, 0xf2);
        case DiagramPart::ModuleBox: break;
    }
    switch (part.module.value_or(Module::Count)) {
        case Module::InputNorm: case Module::PostAttentionNorm: case Module::Norm: case Module::QNorm: case Module::KNorm:
            return QColor(0xff, 0xf2, 0xc6);
        case Module::ActFn: return QColor(0xff, 0xe1, 0xc8);
        case Module::EmbedTokens: case Module::LmHead: return QColor(0xec, 0xde, 0xfb);
        case Module::Layers: return QColor(0xe4, 0xe4, 0xe4);
        default: return QColor(0xd9, 0xe8, 0xff);
    }
}

// Draws `text` in `rect`, shrinking the font until it fits on one line.
void fitText(QPainter& p, const QRectF& rect, const QString& text, QFont font, const QColor& color) {
    for (int i = 0; i < 8; ++i) {
        if (QFontMetricsF(font).horizontalAdvance(text) <= rect.width() - 4) break;
        font.setPointSizeF(font.pointSizeF() * 0.9);
    }
    p.setFont(font);
    p.setPen(color);
    p.drawText(rect, Qt::AlignCenter | Qt::TextDontClip, text);  // underscores sit below the line box
}

void arrowHead(QPainter& p, const QPointF& from, const QPointF& to) {
    const QLineF line(to, from);
    if (line.length() < 1e-6) return;
    const double a = std::atan2(-line.dy(), line.dx());
    const double size = 6;
    const QPointF p1 = to + QPointF(std::sin(a + M_PI / 3) * size, std::cos(a + M_PI / 3) * size);
    const QPointF p2 = to + QPointF(std::sin(a + M_PI - M_PI / 3) * size, std::cos(a + M_PI - M_PI / 3) * size);
    p.drawPolygon(QPolygonF({to, p1, p2}));
}

}  // namespace

void BlockDiagram::paintPart(QPainter& p, const DiagramPart& part) const {
    const QRectF r = part.rect;
    const bool hovered = part.id == hovered_, highlighted = part.id == highlighted_;
    // The light look as designed; under a dark palette the same hues on the palette's base, its text for the labels.
    const QPalette& pal = palette();
    const bool dark = isDark(pal);
    const QColor text = pal.color(QPalette::Text), base = pal.color(QPalette::Base);
    QColor fill = tint(fillFor(part), pal, 0.16);
    if (highlighted) fill = dark ? QColor(0x7a, 0x4e, 0x12) : QColor(0xff, 0xd5, 0x9e);
    const QColor outline = dark ? mix(text, base, 0.55) : QColor(0x8a, 0x8f, 0x99);
    QPen pen(highlighted ? QColor(0xe0, 0x7b, 0x00) : hovered ? (dark ? text : QColor(0x30, 0x30, 0x30)) : outline,
             highlighted ? 2.5 : hovered ? 2.0 : 1.0);
    p.setPen(pen);
    p.setBrush(fill);
    const double radius = part.kind == DiagramPart::ModuleBox ? 5 : r.height() / 2;
    p.drawRoundedRect(r, radius, radius);

    QFont titleFont = font();
    titleFont.setBold(true);
    QFont detailFont = font();
    detailFont.setPointSizeF(font().pointSizeF() * 0.85);
    QFont mono("monospace");
    mono.setStyleHint(QFont::TypeWriter);
    mono.setPointSizeF(font().pointSizeF() * 0.85);
    const QString valueName = part.value ? QString::fromUtf8(valueInfo(*part.value).name) : QString();
    const bool nativeValue = part.value && static_cast<int>(*part.value) >= kNumStandardValues;
    const QColor valueInk = valueColor(pal);

    if (part.kind == DiagramPart::Stream || part.kind == DiagramPart::Add) {
        QRectF text = r;
        if (part.kind == DiagramPart::Add) {
            const QRectF circle(r.left() + 4, r.center().y() - 8, 16, 16);
            p.setBrush(base);
            p.drawEllipse(circle);
            p.drawLine(QPointF(circle.center().x() - 5, circle.center().y()), QPointF(circle.center().x() + 5, circle.center().y()));
            p.drawLine(QPointF(circle.center().x(), circle.center().y() - 5), QPointF(circle.center().x(), circle.center().y() + 5));
            text.setLeft(circle.right() + 2);
        }
        QFont f = mono;
        f.setBold(true);
        fitText(p, text, valueName, f, valueInk);
    } else {
        const bool hasDetail = !part.detail.isEmpty();
        const int lines = 1 + (hasDetail ? 1 : 0) + (part.value ? 1 : 0);
        const double lh = r.height() / lines;
        double y = r.top();
        fitText(p, QRectF(r.left(), y, r.width(), lh), part.title, titleFont, dark ? text : QColor(0x20, 0x20, 0x20));
        y += lh;
        if (hasDetail) {
            fitText(p, QRectF(r.left(), y, r.width(), lh), part.detail, detailFont, dark ? mix(text, base, 0.3) : QColor(0x60, 0x60, 0x68));
            y += lh;
        }
        if (part.value)
            fitText(p, QRectF(r.left(), y, r.width(), lh), nativeValue ? QStringLiteral(".output") : valueName, mono, valueInk);
    }
    if (pinned_.contains(part.id)) {  // a pin: the value has a card
        p.setPen(QPen(QColor(0xc0, 0x20, 0x20), 1));
        p.setBrush(QColor(0xe0, 0x40, 0x40));
        p.drawEllipse(QPointF(r.right() - 5, r.top() + 5), 4, 4);
    }
    if (dictionary_.contains(part.id)) {  // a badge: a sparse dictionary reads (or writes) this value
        p.save();
        const QColor ink(0x7a, 0x3e, 0x00);
        QFont f = p.font();
        f.setPointSizeF(std::max(5.0, f.pointSizeF() * 0.65));
        f.setBold(true);
        p.setFont(f);
        const QString label = QStringLiteral("SAE");
        const QRectF badge(r.left() + 2, r.top() - 6, QFontMetricsF(f).horizontalAdvance(label) + 6, QFontMetricsF(f).height());
        p.setPen(QPen(ink, 1));
        p.setBrush(QColor(0xff, 0xd8, 0x8a));
        p.drawRoundedRect(badge, 3, 3);
        p.drawText(badge, Qt::AlignCenter, label);
        p.restore();
    }
}

void BlockDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (!model_) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("Open a checkpoint to see its block diagram."));
        return;
    }
    p.setRenderHint(QPainter::Antialiasing);
    p.scale(scale(), scale());

    const QPalette& pal = palette();
    const bool dark = isDark(pal);
    const QColor text = pal.color(QPalette::Text), base = pal.color(QPalette::Base);
    auto frame = [&](const QRectF& r, const QColor& bg, const QString& title) {
        p.setPen(QPen(dark ? mix(text, base, 0.7) : QColor(0xb0, 0xb4, 0xbc), 1));
        p.setBrush(tint(bg, pal, 0.05));
        p.drawRoundedRect(r, 8, 8);
        QFont f = font();
        f.setBold(true);
        p.setFont(f);
        p.setPen(dark ? mix(text, base, 0.15) : QColor(0x40, 0x40, 0x48));
        p.drawText(r.adjusted(8, 3, -8, 0), Qt::AlignLeft | Qt::AlignTop, title);
    };
    const Family& f = model_->family();
    frame(layout_.blockFrame, QColor(0xfa, 0xfa, 0xfb),
          QString("%1[%2] · %3").arg(QString::fromStdString(f.moduleName(Module::Layers))).arg(block_).arg(layout_.blockTitle));
    frame(layout_.attentionFrame, QColor(0xf2, 0xf6, 0xff),
          QString("%1 · %2").arg(QString::fromStdString(f.moduleLabel(Module::SelfAttn)), layout_.attentionTitle));
    frame(layout_.mlpFrame, QColor(0xff, 0xf6, 0xee),
          QString("%1 · %2").arg(QString::fromStdString(f.moduleLabel(Module::Mlp)), layout_.mlpTitle));

    p.setPen(QPen(QColor(0x3c, 0xa0, 0x5c), 4, Qt::SolidLine, Qt::RoundCap));
    p.drawPolyline(layout_.stream);

    const QColor arrow = dark ? mix(text, base, 0.45) : QColor(0x70, 0x74, 0x7c);
    p.setPen(QPen(arrow, 1.3));
    for (const QPolygonF& a : layout_.arrows) {
        p.setBrush(Qt::NoBrush);
        p.drawPolyline(a);
        p.setBrush(arrow);
        if (a.size() >= 2) arrowHead(p, a[a.size() - 2], a.back());
    }
    for (const auto& part : layout_.parts) paintPart(p, part);
}

}  // namespace nnscope
