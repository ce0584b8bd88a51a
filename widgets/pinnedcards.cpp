// SPDX-License-Identifier: MIT
#include "pinnedcards.h"

#include <torch/types.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QVBoxLayout>

namespace nnscope {

ValueCard::ValueCard(const PartInfo& info, QWidget* parent) : QFrame(parent), key_(*info.key), info_(info) {
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    // a zero-width space after each dot lets a long path wrap at its dots rather than anywhere
    auto* title = new QLabel(QString("<b><tt>%1</tt></b>").arg(info.path.toHtmlEscaped().replace(".", QString(".") + QChar(0x200B))), this);
    title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    title->setWordWrap(true);
    auto* body = new QLabel(this);
    body->setWordWrap(true);
    body->setTextFormat(Qt::RichText);
    body->setText(QString("%1<br><span style='color:#555'>%2</span><br><i>%3</i> %4")
                      .arg(info.layout.toHtmlEscaped(), info.description.toHtmlEscaped(), tr("read at:"), info.readAt.toHtmlEscaped()));
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    plot_ = new QPushButton(tr("Plot"), this);
    plot_->setToolTip(tr("Open this value as a heatmap in a new tab"));
    export_ = new QPushButton(tr("Export…"), this);
    export_->setToolTip(tr("Write this value to .npy, .safetensors or .csv"));
    unpin_ = new QPushButton(QStringLiteral("✕"), this);
    unpin_->setToolTip(tr("Unpin"));
    unpin_->setMaximumWidth(unpin_->fontMetrics().horizontalAdvance("✕") + 18);
    edit_ = new QPushButton(tr("Edit…"), this);
    edit_->setToolTip(tr("Change this value in the next traces: set, add or scale it at chosen positions, heads or neurons"));
    edit_->setEnabled(info.key && !valueInfo(info.key->value).readOnly);  // next_token_probs, input_size cannot be edited
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(plot_);
    buttons->addWidget(export_);
    buttons->addWidget(edit_);
    buttons->addStretch(1);
    buttons->addWidget(unpin_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(title);
    layout->addWidget(body);
    layout->addWidget(status_);
    layout->addLayout(buttons);
    connect(plot_, &QPushButton::clicked, this, [this] { emit plotRequested(key_); });
    connect(export_, &QPushButton::clicked, this, [this] { emit exportRequested(key_); });
    connect(unpin_, &QPushButton::clicked, this, [this] { emit unpinRequested(key_); });
    connect(edit_, &QPushButton::clicked, this, [this] { emit editRequested(key_); });
    setSnapshot(nullptr);
}

void ValueCard::setSnapshot(const TraceSnapshot* snapshot) {
    const torch::Tensor t = snapshot ? snapshot->result.value(key_) : torch::Tensor();
    const bool traced = t.defined();
    plot_->setEnabled(traced);
    export_->setEnabled(traced);
    if (!traced) {
        status_->setText(tr("<span style='color:#8a5a00'>Not read yet: the next trace reads it.</span>"));
        return;
    }
    QStringList dims;
    for (int64_t d : t.sizes()) dims << QString::number(d);
    const torch::ScalarType type = t.scalar_type();
    const QString dtype = type == torch::kFloat32 ? "float32" : type == torch::kBFloat16 ? "bfloat16" : QString(c10::toString(type));
    status_->setText(tr("traced: [%1] %2").arg(dims.join(", "), dtype));
}

QString ValueCard::statusText() const { return status_->text(); }

PinnedCardsPanel::PinnedCardsPanel(QWidget* parent) : QWidget(parent) {
    auto* inner = new QWidget;
    list_ = new QVBoxLayout(inner);
    list_->setContentsMargins(4, 4, 4, 4);
    empty_ = new QLabel(tr("Click a part of the block diagram to pin its value here. Pinned values are read by the "
                           "next trace and can be plotted or exported."), inner);
    empty_->setWordWrap(true);
    empty_->setForegroundRole(QPalette::PlaceholderText);
    list_->addWidget(empty_);
    list_->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(inner);
    scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
}

bool PinnedCardsPanel::pin(const PartInfo& info) {
    if (!info.key || card(*info.key)) return false;
    auto* c = new ValueCard(info);
    c->setSnapshot(snapshot_.get());
    list_->insertWidget(list_->count() - 1, c);  // above the stretch
    cards_.push_back(c);
    empty_->hide();
    connect(c, &ValueCard::plotRequested, this, &PinnedCardsPanel::plotRequested);
    connect(c, &ValueCard::exportRequested, this, &PinnedCardsPanel::exportRequested);
    connect(c, &ValueCard::editRequested, this, &PinnedCardsPanel::editRequested);
    connect(c, &ValueCard::unpinRequested, this, &PinnedCardsPanel::unpin);
    emit pinsChanged();
    return true;
}

void PinnedCardsPanel::unpin(const ValueKey& key) {
    ValueCard* c = card(key);
    if (!c) return;
    cards_.erase(std::find(cards_.begin(), cards_.end(), c));
    c->deleteLater();
    empty_->setVisible(cards_.empty());
    emit pinsChanged();
}

void PinnedCardsPanel::clear() {
    for (ValueCard* c : cards_) c->deleteLater();
    cards_.clear();
    empty_->show();
    emit pinsChanged();
}

std::vector<ValueKey> PinnedCardsPanel::keys() const {
    std::vector<ValueKey> out;
    for (ValueCard* c : cards_) out.push_back(c->key());
    return out;
}

ValueCard* PinnedCardsPanel::card(const ValueKey& key) const {
    for (ValueCard* c : cards_)
        if (c->key() == key) return c;
    return nullptr;
}

void PinnedCardsPanel::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    for (ValueCard* c : cards_) c->setSnapshot(snapshot_.get());
}

}  // namespace nnscope
