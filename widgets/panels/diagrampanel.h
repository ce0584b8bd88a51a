// SPDX-License-Identifier: MIT
#pragma once
// The "Block diagram" dock: the family's name and quirks, the diagram, a slider over blocks and the identity every
// block satisfies.
#include "widgets/panels/blockdiagram.h"

#include <QWidget>

class QLabel;
class QSlider;

namespace nnscope {

class DiagramPanel : public QWidget {
    Q_OBJECT
public:
    explicit DiagramPanel(QWidget* parent = nullptr);

    void setModel(ModelPtr model);
    BlockDiagram* diagram() const { return diagram_; }
    QSlider* slider() const { return slider_; }
    /// The family's name and its quirk chips.
    QLabel* header() const { return header_; }
    int block() const;
    void setBlock(int block);

signals:
    void blockChanged(int block);

protected:
    void changeEvent(QEvent* event) override;

private:
    void onSlider(int value);
    void updateHeader();  ///< the family's name and quirk chips, in the palette's colours

    ModelPtr model_;
    BlockDiagram* diagram_;
    QSlider* slider_;
    QLabel* header_;
    QLabel* blockLabel_;
    QLabel* identity_;
    QLabel* formulas_;
};

}  // namespace nnscope
