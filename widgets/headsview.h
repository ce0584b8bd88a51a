// SPDX-License-Identifier: MIT
#pragma once
// The Heads view: every (block, head) of the traced prompt with its pattern scores (core/headscores.h:
// previous_token, induction, first_token, diagonal) in one sortable table, to find the interesting head; double-click
// a row to open that head in the Attention view. The command-line twin is `nnscope heads`.
#include "traceview.h"

#include "core/headscores.h"

class QStandardItemModel;
class QTableView;
class QLabel;

namespace nnscope {

class HeadsView : public TraceView {
    Q_OBJECT
public:
    explicit HeadsView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// The scores shown, block by block and head by head (whatever the table's sort).
    const std::vector<HeadScore>& scores() const { return scores_; }
    QTableView* table() const { return table_; }
    QStandardItemModel* model() const { return model_; }
    /// Sorts the table by column `column` (0 block, 1 head, 2 previous_token, 3 induction, 4 first_token, 5 diagonal),
    /// largest first for the scores.
    void sortBy(int column);

signals:
    /// A row was double-clicked: show this head.
    void headChosen(int layer, int head);

private:
    void refresh();

    QLabel* status_;
    QTableView* table_;
    QStandardItemModel* model_;
    std::vector<HeadScore> scores_;
};

}  // namespace nnscope
