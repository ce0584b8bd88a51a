// SPDX-License-Identifier: MIT
#include "widgets/views/headsview.h"

#include "core/analysis/analysis.h"
#include "widgets/views/headoverview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QCheckBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <memory>

namespace nnscope {

namespace {
/// What the worker computes for the view: the scores, the sequence scored, and its own trace for the repeated random
/// tokens (null when the scores are of the snapshot's prompt `row`).
struct HeadScoresResult {
    std::vector<HeadScore> scores;
    std::shared_ptr<const TraceResult> trace;
    int row = 0;
    std::vector<int64_t> ids;
};
}  // namespace

HeadsView::HeadsView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextFormat(Qt::PlainText);  // a message may quote a token such as "<s>"
    model_ = new QStandardItemModel(this);
    model_->setHorizontalHeaderLabels(
        {tr("block"), tr("head"), tr("previous_token"), tr("induction"), tr("first_token"), tr("diagonal"), tr("sink_share")});
    const QStringList tips = {
        tr("layers.i"), tr("the query head"),
        tr("mean of A[i, i−1]: attention to the previous token"),
        tr("mean over repeated tokens of A[i, j+1], j the earlier occurrence: attention to what followed it (repeat a phrase in the prompt)"),
        tr("mean of A[i, 0]: attention to the first token (the attention sink)"), tr("mean of A[i, i]: attention to the token itself"),
        tr("mean of 1 − Σ_j A[i, j]: attention given to the head's learned sink (gpt-oss), which the pattern's rows leave out; "
           "shown only for a family with sinks")};
    for (int c = 0; c < tips.size(); ++c) model_->horizontalHeaderItem(c)->setToolTip(tips[c]);
    table_ = new QTableView(content);
    table_->setModel(model_);
    table_->setSortingEnabled(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    table_->setColumnHidden(6, true);  // sink_share: shown for a family with attention sinks (setSnapshot)
    // Each column as wide as its header with the sort arrow (#28: "induction / chance 0.058" read "hance 0.058" once
    // sorted); the last one takes what is left.
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    overview_ = new HeadOverview(content);
    auto* scroll = new QScrollArea(content);
    scroll->setWidget(overview_);
    scroll->setWidgetResizable(true);  // the thumbnails fit the area down to a legible size, then it scrolls
    markCombo_ = new QComboBox(content);
    markCombo_->addItems({tr("nothing"), tr("previous_token"), tr("induction"), tr("first_token"), tr("diagonal")});
    markCombo_->setToolTip(tr("Mark every head by this score: a bar under its pattern, the best three numbered (sorting the "
                              "table by a score chooses it too)"));
    repeatedButton_ = new QPushButton(tr("Repeated random tokens"), content);
    repeatedButton_->setToolTip(tr("Score every head on the standard induction test: %1 random tokens repeated once (as "
                                   "TransformerLens' induction score). Choose a prompt to go back.").arg(kRandomLength));
    repeatedButton_->setEnabled(false);
    logCheck_ = new QCheckBox(tr("Log scale"), content);
    logCheck_->setToolTip(tr("Colour the thumbnails on a logarithmic scale from 10⁻⁵ to 1: on a long prompt a head's "
                             "weights are spread thin and a linear scale leaves its thumbnail white"));
    auto* controls = new QHBoxLayout;
    controls->addWidget(promptCombo_);  // no "Prompt" label: the row with Log scale fits 1280 px (the combo reads "1: …")
    controls->addWidget(repeatedButton_);
    controls->addWidget(new QLabel(tr("Mark by"), content));
    controls->addWidget(markCombo_);
    controls->addWidget(logCheck_);
    controls->addStretch(1);
    // the overview above the table: the central area is wider than tall only once the docks are closed
    auto* split = new QSplitter(Qt::Vertical, content);
    split->addWidget(scroll);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(split, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace: this view scores every head's pattern (previous token, induction, first token, diagonal)."));
    connect(this, &TraceView::promptChanged, this, [this] {
        dropAnalysis();  // the last prompt's scores are not wanted any more
        refreshWhenShown([this] { refresh(); });
    });
    connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const int row = index.row();
        emit headChosen(model_->item(row, 0)->data(Qt::DisplayRole).toInt(), model_->item(row, 1)->data(Qt::DisplayRole).toInt());
    });
    // the table and the overview follow each other: the current row is outlined, a clicked thumbnail becomes the row
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& index) {
        if (!index.isValid()) return;
        overview_->setSelectedHead(model_->item(index.row(), 0)->data(Qt::DisplayRole).toInt(),
                                   model_->item(index.row(), 1)->data(Qt::DisplayRole).toInt());
    });
    connect(overview_, &HeadOverview::headClicked, this, [this](int layer, int head) {
        const int row = rowOf(layer, head);
        if (row >= 0) {
            table_->selectRow(row);
            table_->scrollTo(model_->index(row, 0));
        }
        emit headChosen(layer, head);
    });
    // sorting by a score marks the overview by it; choosing a mark sorts the table by it, largest first
    // A score column clicked for the first time sorts largest first (the heads that do it most); a second click on it
    // reverses, as usual. The block and head columns start in block order.
    connect(table_->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this, [this](int column, Qt::SortOrder order) {
        const bool newColumn = column != sortColumn_;
        sortColumn_ = column;
        if (newColumn && column >= 2 && order == Qt::AscendingOrder) {
            table_->sortByColumn(column, Qt::DescendingOrder);  // re-enters with the same column: marks below
            return;
        }
        if (column >= 2) markCombo_->setCurrentIndex(column - 1);
    });
    connect(markCombo_, &QComboBox::currentIndexChanged, this, [this](int index) {
        overview_->setMarkScore(index - 1);
        if (index > 0 && table_->horizontalHeader()->sortIndicatorSection() != index + 1) sortBy(index + 1);
    });
    connect(repeatedButton_, &QPushButton::clicked, this, [this] { scoreRepeatedRandomTokens(); });
    connect(logCheck_, &QCheckBox::toggled, this, [this](bool on) { overview_->setLogScale(on, kLogFloor); });
    connect(promptCombo_, &QComboBox::activated, this, [this] {  // choosing a prompt (even the same one) goes back to it
        if (!random_) return;
        random_ = false;
        refreshWhenShown([this] { refresh(); });
    });
    markCombo_->setCurrentIndex(2);  // induction: the heads a repeated phrase brings out
}

void HeadsView::setLogScale(bool on) { logCheck_->setChecked(on); }

QVariantMap HeadsView::choices() const { return {{"logScale", logCheck_->isChecked()}, {"markBy", markCombo_->currentIndex()}}; }

void HeadsView::restoreChoices(const QVariantMap& choices) {
    logCheck_->setChecked(choices.value("logScale", logCheck_->isChecked()).toBool());
    const int mark = choices.value("markBy", markCombo_->currentIndex()).toInt();
    if (mark >= 0 && mark < markCombo_->count()) markCombo_->setCurrentIndex(mark);
}

void HeadsView::scoreRepeatedRandomTokens() {
    if (!snapshot_ || !snapshot_->model->hasWeights()) return;
    random_ = true;
    refresh();
}

void HeadsView::showChance() {
    static const char* names[] = {"previous_token", "induction", "first_token", "diagonal"};
    const double values[] = {chance_.previousToken, chance_.induction, chance_.firstToken, chance_.diagonal};
    for (int i = 0; i < 4; ++i) {
        QStandardItem* header = model_->horizontalHeaderItem(i + 2);
        const QString base = header->toolTip().section(QStringLiteral("\n\n"), 0, 0);
        if (std::isnan(values[i])) {
            header->setText(QString::fromLatin1(names[i]));
            header->setToolTip(base);
            continue;
        }
        header->setText(tr("%1\nchance %2").arg(QString::fromLatin1(names[i])).arg(values[i], 0, 'f', 4));
        header->setToolTip(tr("%1\n\nChance: %2, the score of a head attending uniformly to every earlier token (A[i, j] = "
                              "1/(i+1)) on this sequence. A head near it does not do what the score names.")
                               .arg(base)
                               .arg(values[i], 0, 'f', 4));
    }
}

int HeadsView::rowOf(int layer, int head) const {
    for (int r = 0; r < model_->rowCount(); ++r)
        if (model_->item(r, 0)->data(Qt::DisplayRole).toInt() == layer && model_->item(r, 1)->data(Qt::DisplayRole).toInt() == head)
            return r;
    return -1;
}

void HeadsView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    dropAnalysis();  // what was under way belongs to the last snapshot
    // the sink's share, only where the family has learned sinks (gpt-oss); elsewhere it is 0 up to rounding
    table_->setColumnHidden(6, !(snapshot_ && snapshot_->model->family().attentionSinks));
    random_ = false;
    const bool canTrace = snapshot_ && snapshot_->model->hasWeights();
    repeatedButton_->setEnabled(canTrace);
    if (snapshot_ && !canTrace)
        repeatedButton_->setToolTip(tr("Needs the model's weights: this trace file was opened without its checkpoint (%1).")
                                        .arg(snapshot_->sourceFile));
    else
        repeatedButton_->setToolTip(tr("Score every head on the standard induction test: %1 random tokens repeated once (as "
                                       "TransformerLens' induction score). Choose a prompt to go back.").arg(kRandomLength));
    if (!snapshot_) {
        scores_.clear();
        model_->removeRows(0, model_->rowCount());
        overview_->clear();
        showPlaceholder(tr("Run a trace: this view scores every head's pattern (previous token, induction, first token, diagonal)."));
        return;
    }
    std::vector<ValueKey> patterns;
    for (int i = 0; i < snapshot_->numLayers(); ++i) patterns.push_back({Value::AttentionProbabilities, i});
    if (const QString why = snapshot_->missing(patterns, tr("The head scores")); !why.isEmpty() && !snapshot_->sourceFile.isEmpty()) {
        scores_.clear();
        model_->removeRows(0, model_->rowCount());
        return showPlaceholder(why);
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    showContent();
    scores_.clear();
    refreshWhenShown([this] { refresh(); });  // every head's scores: computed when the tab is shown
}

void HeadsView::refresh() {
    scores_.clear();
    model_->removeRows(0, model_->rowCount());
    overview_->clear();
    if (!snapshot_) return dropAnalysis();
    const SnapshotPtr snapshot = snapshot_;
    const int row = prompt();
    const bool random = random_;
    status_->setStyleSheet(QString());
    status_->setText(random ? tr("Tracing %1 random tokens repeated once and scoring every head (Esc cancels)…").arg(kRandomLength)
                            : tr("Computing the head scores (Esc cancels)…"));
    requestAnalysis(
        tr("head scores"), snapshot->numLayers() * (random ? 2 : 1),
        [snapshot, row, random](const JobControl& control) {
            auto out = std::make_shared<HeadScoresResult>();
            const Model& model = *snapshot->model;
            const int blocks = snapshot->numLayers();
            if (random) {
                int64_t length = kRandomLength;
                if (model.config().maxPositionEmbeddings > 0) length = std::min(length, (model.config().maxPositionEmbeddings - 1) / 2);
                TraceOptions options;
                for (int i = 0; i < blocks; ++i) options.save.push_back({Value::AttentionProbabilities, i});
                options.progress = control.progressFrom(0, 2 * blocks);
                options.cancel = control.cancelFlag();
                out->trace = std::make_shared<TraceResult>(trace(model, batchFromIds({repeatedRandomTokens(model, length, 0)}), options));
                out->row = 0;
            } else {
                out->row = row;
            }
            const TraceResult& result = out->trace ? *out->trace : snapshot->result;
            const BlockProgress progress{control.progressFrom(random ? blocks : 0, (random ? 2 : 1) * blocks), control.cancelFlag()};
            out->scores = headScores(model, result, out->row, progress);
            out->ids = result.batch.ids.at(static_cast<size_t>(out->row));
            return QVariant::fromValue(std::shared_ptr<const HeadScoresResult>(std::move(out)));
        },
        [this](JobState state, const QVariant& result, const QString& message) { scoresEnded(state, result, message); });
}

void HeadsView::scoresEnded(JobState state, const QVariant& result, const QString& message) {
    if (state == JobState::Cancelled) {
        status_->setStyleSheet("color: #8a5a00;");
        status_->setText(tr("The head scores were cancelled: show the view again to compute them."));
        refreshOnNextShow([this] { refresh(); });
        return;
    }
    if (state == JobState::Failed) {
        status_->setStyleSheet("color: #a00010;");
        status_->setText(message);
        return;
    }
    const auto computed = result.value<std::shared_ptr<const HeadScoresResult>>();
    scores_ = computed->scores;
    chance_ = chanceScores(computed->ids);
    showChance();
    // the thumbnails read each block's pattern when they are (re)built, from this snapshot and prompt (or the random
    // tokens' own trace)
    const SnapshotPtr snapshot = snapshot_;
    const int row = computed->row;
    overview_->setPatterns(
        [snapshot, computed, row](int block) {
            return attentionPattern(*snapshot->model, computed->trace ? *computed->trace : snapshot->result, block, row);
        },
        snapshot_->numLayers(), static_cast<int>(snapshot_->model->config().numHeads), static_cast<int>(computed->ids.size()));
    overview_->setScores(scores_);
    for (const HeadScore& h : scores_) {
        QList<QStandardItem*> row;
        for (double v : {static_cast<double>(h.layer), static_cast<double>(h.head), h.previousToken, h.induction, h.firstToken, h.diagonal,
                         h.sinkShare}) {
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
    // the sort chosen before (a new trace refills the rows in block order)
    table_->sortByColumn(table_->horizontalHeader()->sortIndicatorSection(), table_->horizontalHeader()->sortIndicatorOrder());
    status_->setStyleSheet(QString());
    const QString on = computed->trace ? tr("On %1 random tokens repeated once (%2 tokens, seed 0: the standard induction test; choose a "
                                            "prompt to go back). ").arg((computed->ids.size()) / 2).arg(computed->ids.size())
                                       : QString();
    status_->setText(on + tr("%n head(s). Each score is a mean attention probability over the sequence's tokens (docs/ANALYSES.md), "
                             "its chance baseline under the column's name. Click a column to sort and mark the heads by it; click a "
                             "pattern (or double-click a row) to open that head in the Attention view.",
                             nullptr, static_cast<int>(scores_.size())));
}

void HeadsView::sortBy(int column) { table_->sortByColumn(column, column < 2 ? Qt::AscendingOrder : Qt::DescendingOrder); }

PlotSource HeadsView::plotSource() const {
    PlotSource s;
    s.widget = overview_;  // the blocks x heads grid of patterns with its marks
    s.name = "heads";
    return s;
}

QMap<QString, QString> HeadsView::settings() const { return {{"view", "heads"}, {"view.prompt", QString::number(prompt())}}; }

}  // namespace nnscope
