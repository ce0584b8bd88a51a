// SPDX-License-Identifier: MIT
#include "widgets/panels/interventionpanel.h"

#include "core/run/edit.h"
#include "core/model/error.h"
#include "core/io/safetensors.h"

#include <torch/types.h>

#include <QCheckBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

namespace nnscope {

InterventionPanel::InterventionPanel(QWidget* parent) : QWidget(parent), baseDir_(QDir::currentPath()) {
    list_ = new QListWidget(this);
    list_->setToolTip(tr("Checked lines are applied by the next trace, in this order"));
    list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    input_ = new QLineEdit(this);
    input_->setPlaceholderText(tr("layers.1.self_attn.attention_queries[:, 1] *= 2   ·   skip 2   ·   steer 1:4:v.npy:-1"));
    input_->setToolTip(tr("An edit PATH[INDEX] OP VALUE (OP: = += -= *= /=; VALUE: a number, N * @file.npy, or mean), "
                          "skip LAYERS, or steer LAYERS:FACTOR:FILE.npy[:POSITIONS]. Return adds it."));
    input_->setClearButtonEnabled(true);
    add_ = new QPushButton(tr("Add"), this);
    error_ = new QLabel(this);
    error_->setWordWrap(true);
    error_->setStyleSheet("color: #a00010;");
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->hide();
    compare_ = new QCheckBox(tr("Compare with the unedited run"), this);
    compare_->setChecked(true);
    compare_->setToolTip(tr("Trace the prompts without the interventions too, for the Before / after view (twice the time)"));
    remove_ = new QPushButton(tr("Remove"), this);
    clear_ = new QPushButton(tr("Clear"), this);
    steer_ = new QPushButton(tr("Steering vector…"), this);
    steer_->setToolTip(tr("Add a steering vector: the difference of two prompts' layer_output in the last trace, or a .npy file"));

    keepBar_ = new QWidget(this);
    keepText_ = new QLabel(keepBar_);
    keepText_->setWordWrap(true);
    keepText_->setStyleSheet("color: #8a5a00;");
    keep_ = new QPushButton(tr("Keep them"), keepBar_);
    turnOff_ = new QPushButton(tr("Turn them off"), keepBar_);
    turnOff_->setToolTip(tr("Uncheck every line: the next trace runs the new checkpoint unedited (the lines stay, to check again)"));
    auto* keepRow = new QHBoxLayout(keepBar_);
    keepRow->setContentsMargins(0, 0, 0, 0);
    keepRow->addWidget(keepText_, 1);
    keepRow->addWidget(keep_);
    keepRow->addWidget(turnOff_);
    keepBar_->hide();

    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(input_, 1);
    inputRow->addWidget(add_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(steer_);
    buttons->addStretch(1);
    buttons->addWidget(remove_);
    buttons->addWidget(clear_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(keepBar_);
    layout->addLayout(inputRow);
    layout->addWidget(error_);
    layout->addWidget(list_, 1);
    layout->addLayout(buttons);
    layout->addWidget(compare_);

    auto submit = [this] {
        if (add(input_->text()).isEmpty()) input_->clear();
    };
    connect(add_, &QPushButton::clicked, this, submit);
    connect(input_, &QLineEdit::returnPressed, this, submit);
    connect(input_, &QLineEdit::textEdited, error_, &QLabel::hide);
    connect(remove_, &QPushButton::clicked, this, [this] {
        const auto selected = list_->selectedItems();
        for (QListWidgetItem* item : selected) delete item;
        if (!selected.isEmpty()) emit changed();
    });
    connect(clear_, &QPushButton::clicked, this, &InterventionPanel::clear);
    connect(steer_, &QPushButton::clicked, this, &InterventionPanel::steeringDialogRequested);
    connect(list_, &QListWidget::itemChanged, this, [this] { emit changed(); });
    connect(keep_, &QPushButton::clicked, keepBar_, &QWidget::hide);
    connect(turnOff_, &QPushButton::clicked, this, [this] {
        keepBar_->hide();
        const QSignalBlocker block(list_);
        for (int i = 0; i < list_->count(); ++i) list_->item(i)->setCheckState(Qt::Unchecked);
        emit changed();
    });
    connect(compare_, &QCheckBox::toggled, this, [this] { emit changed(); });
    setModel(nullptr);
}

void InterventionPanel::askKeepAfterModelChange(const QString& previous) {
    const int n = static_cast<int>(active().size());
    if (n == 0) {
        keepBar_->hide();
        return;
    }
    keepText_->setText(tr("%n intervention(s) from %1 are still checked: keep them on this checkpoint?", nullptr, n).arg(previous));
    keepBar_->show();
}

bool InterventionPanel::askingKeep() const { return !keepBar_->isHidden(); }

QString InterventionPanel::validate(const QString& text) const {
    if (!model_) return tr("Open a checkpoint first.");
    if (text.trimmed().isEmpty()) return tr("Type an edit, skip N or steer LAYERS:FACTOR:FILE.npy.");
    try {
        EditList scratch;
        addIntervention(scratch, *model_, text.trimmed().toStdString(), baseDir_.toStdString());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

void InterventionPanel::setModel(ModelPtr model) {
    model_ = std::move(model);
    const QSignalBlocker block(list_);
    for (int i = 0; i < list_->count(); ++i) {
        QListWidgetItem* item = list_->item(i);
        const QString why = validate(item->text());
        item->setToolTip(why.isEmpty() ? item->text() : tr("Not valid on this model: %1").arg(why));
        item->setForeground(why.isEmpty() ? QBrush() : QBrush(QColor("#a00010")));
        if (!why.isEmpty()) item->setCheckState(Qt::Unchecked);
    }
    error_->hide();
    input_->setEnabled(model_ != nullptr);
    add_->setEnabled(model_ != nullptr);
    steer_->setEnabled(model_ != nullptr);
    emit changed();
}

void InterventionPanel::addItem(const QString& text) {
    auto* item = new QListWidgetItem(text, list_);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Checked);
    item->setToolTip(text);
}

QString InterventionPanel::add(const QString& textIn) {
    const QString text = textIn.trimmed();
    const QString why = validate(text);
    if (!why.isEmpty()) {
        if (input_->text().trimmed() != text) input_->setText(text);  // keep the refused line in view, to fix it
        error_->setText(why);
        error_->show();
        return why;
    }
    error_->hide();
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->text() == text) {
            list_->item(i)->setCheckState(Qt::Checked);  // emits changed() through itemChanged
            return {};
        }
    {
        const QSignalBlocker block(list_);
        addItem(text);
    }
    emit changed();
    return {};
}

QStringList InterventionPanel::active() const {
    QStringList out;
    for (int i = 0; i < list_->count(); ++i)
        if (list_->item(i)->checkState() == Qt::Checked) out << list_->item(i)->text();
    return out;
}

QStringList InterventionPanel::all() const {
    QStringList out;
    for (int i = 0; i < list_->count(); ++i) out << list_->item(i)->text();
    return out;
}

void InterventionPanel::setChecked(int row, bool checked) {
    if (QListWidgetItem* item = list_->item(row)) item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

void InterventionPanel::removeRow(int row) {
    if (row < 0 || row >= list_->count()) return;
    delete list_->takeItem(row);
    emit changed();
}

void InterventionPanel::clear() {
    if (list_->count() == 0) return;
    list_->clear();
    emit changed();
}

bool InterventionPanel::compare() const { return compare_->isChecked(); }
void InterventionPanel::setCompare(bool compare) { compare_->setChecked(compare); }

void InterventionPanel::beginEdit(const QString& text) {
    input_->setText(text);
    input_->setFocus();
    input_->end(false);
    error_->hide();
}

QString InterventionPanel::addSteeringFromPrompts(const TraceSnapshot& snapshot, int block, int rowA, int rowB, double factor,
                                                  const QString& positions, const QString& npyPath) {
    const TraceSnapshot& source = snapshot.baseline ? *snapshot.baseline : snapshot;
    if (rowA < 0 || rowB < 0 || rowA >= source.numPrompts() || rowB >= source.numPrompts() || rowA == rowB)
        return tr("Pick two different prompts of the last trace.");
    // Left-padded batch: every prompt's last token is the last position.
    const torch::Tensor out = source.result.value({Value::LayerOutput, block});  // [batch, seq, hidden_size]
    if (!out.defined()) return tr("The last trace did not keep layers.%1.layer_output.").arg(block);
    const torch::Tensor vec = (out.index({rowA, -1}).to(torch::kFloat32) - out.index({rowB, -1}).to(torch::kFloat32)).contiguous();
    try {
        QDir().mkpath(QFileInfo(npyPath).absolutePath());
        writeNpy(npyPath.toStdString(), vec);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    QString text = QString("steer %1:%2:%3").arg(block).arg(factor).arg(QFileInfo(npyPath).absoluteFilePath());
    if (!positions.trimmed().isEmpty()) text += ":" + positions.trimmed();
    return add(text);
}

}  // namespace nnscope
