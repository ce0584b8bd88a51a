// SPDX-License-Identifier: MIT
#pragma once
// The Heads view: every (block, head) of the traced prompt at once, as a layers × heads overview of small attention
// patterns (HeadOverview) above a sortable table of their pattern scores (core/analysis/headscores.h: previous_token,
// induction, first_token, diagonal), to find the interesting head. Sorting the table by a score marks the overview by
// it (a bar per head, the best three numbered); choosing a row outlines its thumbnail; clicking a thumbnail or
// double-clicking a row opens that head in the Attention view. The command-line twin is `nnscope heads`. The scores
// are computed in the window's worker (requestAnalysis), Esc stops them.
#include "widgets/views/traceview.h"

#include "core/analysis/headscores.h"

class QCheckBox;
class QComboBox;
class QPushButton;
class QStandardItemModel;
class QTableView;
class QLabel;

namespace nnscope {

class HeadOverview;

class HeadsView : public TraceView {
    Q_OBJECT
public:
    explicit HeadsView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;
    /// The thumbnails' log scale and the score marked, remembered by the window.
    QVariantMap choices() const override;
    void restoreChoices(const QVariantMap& choices) override;
    static constexpr double kLogFloor = 1e-5;
    void setLogScale(bool on);

    /// The scores shown, block by block and head by head (whatever the table's sort); empty while they are computed
    /// (analysisPending()).
    const std::vector<HeadScore>& scores() const { return scores_; }
    QTableView* table() const { return table_; }
    QStandardItemModel* model() const { return model_; }
    /// Sorts the table by column `column` (0 block, 1 head, 2 previous_token, 3 induction, 4 first_token, 5 diagonal),
    /// largest first for the scores.
    void sortBy(int column);
    HeadOverview* overview() const { return overview_; }
    /// The overview's marking score (0 previous_token ... 3 diagonal, -1 none), also chosen by sorting the table.
    QComboBox* markCombo() const { return markCombo_; }
    /// The table row of (layer, head) under the current sort (-1 when absent).
    int rowOf(int layer, int head) const;
    /// Scores every head on the standard induction test instead of the traced prompt: kRandomLength random tokens
    /// repeated once (repeatedRandomTokens, seed 0), traced in the worker with the snapshot's model. Choosing a prompt
    /// or a new trace goes back to the prompt. Refused (the button says why) for a trace file without weights.
    void scoreRepeatedRandomTokens();
    /// Whether the scores shown are those of the repeated random tokens.
    bool showsRepeatedRandomTokens() const { return random_; }
    QPushButton* repeatedButton() const { return repeatedButton_; }
    /// The chance baseline of each score on the sequence scored (chanceScores), shown in the column headers.
    const HeadScore& chance() const { return chance_; }
    /// How many random tokens the test repeats (fewer where the model's context is shorter).
    static constexpr int64_t kRandomLength = 50;

signals:
    /// A thumbnail was clicked or a row double-clicked: show this head.
    void headChosen(int layer, int head);

private:
    /// Asks the worker for the scores of the prompt shown.
    void refresh();
    /// Shows the scores computed, or why there are none.
    void scoresEnded(JobState state, const QVariant& result, const QString& message);

    /// Puts the chance baselines in the score columns' headers and tooltips.
    void showChance();

    QLabel* status_;
    QComboBox* markCombo_;
    QCheckBox* logCheck_;
    QPushButton* repeatedButton_;
    bool random_ = false;  ///< the scores are those of the repeated random tokens
    HeadScore chance_;
    HeadOverview* overview_;
    QTableView* table_;
    QStandardItemModel* model_;
    std::vector<HeadScore> scores_;
    int sortColumn_ = -1;  ///< the column the table was last sorted by (a new score column sorts largest first)
};

}  // namespace nnscope
