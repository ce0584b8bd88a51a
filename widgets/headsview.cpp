// SPDX-License-Identifier: MIT
#include "headsview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

namespace nnscope {

HeadsView::HeadsView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    model_ = new QStandardItemModel(this);
    model_->setHorizontalHeaderLabels({tr("block"), tr("head"), tr("previous_token"), tr("induction"), tr("first_token"), tr("diagonal")});
    const QStringList tips = {
        tr("layers.i"), tr("the query head"),
        tr("mean of A[i, i−1]: attention to the previous token"),
        tr("mean over repeated tokens of A[i, j+1], j the earlier occurrence: attention to what followed it (repeat a phrase in the prompt)"),
        tr("mean of A[i, 0]: attention to the first token (the attention sink)"), tr("mean of A[i, i]: attention to the token itself")};
    for (int c = 0; c < tips.size(); ++c) model_->horizontalHeaderItem(c)->setToolTip(tips[c]);
    table_ = new QTableView(content);
    table_->setModel(model_);
    table_->setSortingEnabled(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_);
    controls->addStretch(1);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(table_, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace: this view scores every head's pattern (previous token, induction, first token, diagonal)."));
    connect(this, &TraceView::promptChanged, this, [this] { refreshWhenShown([this] { refresh(); }); });
    connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const int row = index.row();
        emit headChosen(model_->item(row, 0)->data(Qt::DisplayRole).toInt(), model_->item(row, 1)->data(Qt::DisplayRole).toInt());
    });
}

void HeadsView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (!snapshot_) {
        scores_.clear();
        model_->removeRows(0, model_->rowCount());
        showPlaceholder(tr("Run a trace: this view scores every head's pattern (previous token, induction, first token, diagonal)."));
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    showContent();
    scores_.clear();
    refreshWhenShown([this] { refresh(); });  // every head's scores: computed when the tab is shown
}

void HeadsView::refresh() {
    scores_.clear();
    model_->removeRows(0, model_->rowCount());
    if (!snapshot_) return;
    try {
        scores_ = headScores(*snapshot_->model, snapshot_->result, prompt());
    } catch (const std::exception& e) {
        status_->setStyleSheet("color: #a00010;");
        status_->setText(QString::fromStdString(e.what()));
        return;
    }
    for (const HeadScore& h : scores_) {
        QList<QStandardItem*> row;
        for (double v : {static_cast<double>(h.layer), static_cast<double>(h.head), h.previousToken, h.induction, h.firstToken, h.diagonal}) {
            auto* item = new QStandardItem;
            if (std::isnan(v)) {
                item->setData(-1.0, Qt::UserRole);
                item->setText(QStringLiteral("–"));
                item->setToolTip(tr("nothing to average on this prompt (no repeated token)"));
            } else {
                item->setData(row.size() < 2 ? QVariant(static_cast<int>(v)) : QVariant(std::round(v * 1e4) / 1e4), Qt::DisplayRole);
            }
            row << item;
        }
        model_->appendRow(row);
    }
    status_->setStyleSheet(QString());
    status_->setText(tr("%n head(s). Each score is a mean attention probability over the prompt's tokens (docs/ANALYSES.md). Click a "
                        "column to sort, double-click a head to open it in the Attention view.",
                        nullptr, static_cast<int>(scores_.size())));
}

void HeadsView::sortBy(int column) { table_->sortByColumn(column, column < 2 ? Qt::AscendingOrder : Qt::DescendingOrder); }

PlotSource HeadsView::plotSource() const { return {}; }

QMap<QString, QString> HeadsView::settings() const { return {{"view", "heads"}, {"view.prompt", QString::number(prompt())}}; }

}  // namespace nnscope
