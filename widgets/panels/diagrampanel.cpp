// SPDX-License-Identifier: MIT
#include "widgets/panels/diagrampanel.h"

#include "widgets/panels/palette.h"

#include "core/model/block.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSlider>
#include <QVBoxLayout>

namespace nnscope {

DiagramPanel::DiagramPanel(QWidget* parent) : QWidget(parent) {
    header_ = new QLabel(this);
    header_->setWordWrap(true);
    header_->setTextFormat(Qt::RichText);
    diagram_ = new BlockDiagram;
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(diagram_);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    slider_ = new QSlider(Qt::Horizontal, this);
    slider_->setRange(0, 0);
    slider_->setPageStep(1);
    slider_->setTickPosition(QSlider::TicksBelow);
    slider_->setToolTip(tr("The block drawn in detail: layers[i]"));
    blockLabel_ = new QLabel(this);
    identity_ = new QLabel(this);
    identity_->setWordWrap(true);
    identity_->setTextFormat(Qt::RichText);
    formulas_ = new QLabel(this);
    formulas_->setTextFormat(Qt::PlainText);
    formulas_->setFont(QFont("monospace"));
    formulas_->setWordWrap(true);
    formulas_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* sliderRow = new QHBoxLayout;
    sliderRow->addWidget(new QLabel(tr("Block"), this));
    sliderRow->addWidget(slider_, 1);
    sliderRow->addWidget(blockLabel_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(header_);
    layout->addLayout(sliderRow);
    layout->addWidget(scroll, 1);
    layout->addWidget(identity_);
    layout->addWidget(formulas_);
    connect(slider_, &QSlider::valueChanged, this, &DiagramPanel::onSlider);
    setModel(nullptr);
}

void DiagramPanel::setModel(ModelPtr model) {
    model_ = model;
    diagram_->setModel(model);
    const bool has = model != nullptr;
    slider_->setEnabled(has);
    {
        const QSignalBlocker block(slider_);
        slider_->setRange(0, has ? static_cast<int>(model->config().numLayers) - 1 : 0);
        slider_->setValue(0);
    }
    blockLabel_->setText(has ? QString("i = 0 of 0–%1").arg(model->config().numLayers - 1) : QString());
    if (!has) {
        header_->setText(tr("<i>No model open.</i>"));
        identity_->clear();
        formulas_->clear();
        return;
    }
    updateHeader();
    const Family& f = model->family();
    identity_->setText(tr("<b>identity</b> <tt>%1</tt>").arg(QString::fromStdString(f.contributionIdentity()).toHtmlEscaped()));
    QStringList lines;
    for (const auto& line : blockFormulas(f, model->config())) lines << QString::fromStdString(line);
    formulas_->setText(lines.join('\n'));
}

void DiagramPanel::updateHeader() {
    if (!model_) return;
    const Family& f = model_->family();
    header_->setText(QString("<b>%1</b> · %2<br>%3").arg(QString::fromStdString(f.title).toHtmlEscaped(),
                                                         QString::fromStdString(model_->config().architectures.front()).toHtmlEscaped(),
                                                         quirkChips(checkpointQuirks(f, model_->config()), palette())));
}

void DiagramPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) updateHeader();
}

int DiagramPanel::block() const { return slider_->value(); }

void DiagramPanel::setBlock(int block) { slider_->setValue(block); }

void DiagramPanel::onSlider(int value) {
    diagram_->setBlock(value);
    blockLabel_->setText(QString("i = %1 of 0–%2").arg(value).arg(slider_->maximum()));
    emit blockChanged(value);
}

}  // namespace nnscope
