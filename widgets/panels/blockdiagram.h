// SPDX-License-Identifier: MIT
#pragma once
// Paints a DiagramLayout: the root strip and one block in detail. Hovering a part shows its standard name, layout,
// what it is and where it is read (nnterp's words, from core/values); clicking pins it. The tables select parts
// through setHighlightedPart().
#include "widgets/panels/diagramlayout.h"
#include "widgets/views/tracesnapshot.h"

#include <QSet>
#include <QWidget>

namespace nnscope {

/// What the diagram says about a part.
struct PartInfo {
    QString id;
    QString name;         ///< standard name ("attention_probabilities"), or the native one ("q_proj.output")
    QString path;         ///< the value path at the shown block ("layers.2.self_attn.attention_probabilities")
    QString layout;       ///< "Pattern [batch num_heads query key]"
    QString description;  ///< what it is
    QString readAt;       ///< where it is read, with the family's module names
    QString module;       ///< the native module label, if the part draws one
    std::optional<ValueKey> key;
    QString html() const;
};

/// What the diagram says about value `key` of `model` (a pinned card's contents).
PartInfo valueKeyInfo(const Model& model, const ValueKey& key);

class BlockDiagram : public QWidget {
    Q_OBJECT
public:
    explicit BlockDiagram(QWidget* parent = nullptr);

    void setModel(ModelPtr model);
    ModelPtr model() const { return model_; }
    void setBlock(int block);
    int block() const { return block_; }
    const DiagramLayout& diagram() const { return layout_; }
    PartInfo info(const QString& id) const;
    /// Where part `id` is drawn, in widget coordinates.
    QRect partRect(const QString& id) const;
    const QString& hoveredPart() const { return hovered_; }
    void setHighlightedPart(const QString& id);
    const QString& highlightedPart() const { return highlighted_; }
    /// Marks the parts whose values are pinned (a pin on the part).
    void setPinnedParts(const QSet<QString>& ids);
    /// Marks the parts whose values an attached sparse dictionary reads or writes (a "SAE" badge on the part).
    void setDictionaryParts(const QSet<QString>& ids);
    const QSet<QString>& dictionaryParts() const { return dictionary_; }

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

signals:
    void partHovered(const QString& id, const QString& html);
    void partClicked(const QString& id);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    double scale() const;
    QString partAt(const QPointF& pos) const;
    void paintPart(QPainter& p, const DiagramPart& part) const;

    ModelPtr model_;
    DiagramLayout layout_;
    int block_ = 0;
    QString hovered_, highlighted_;
    QSet<QString> pinned_;
    QSet<QString> dictionary_;
};

}  // namespace nnscope
