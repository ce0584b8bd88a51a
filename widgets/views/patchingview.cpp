// SPDX-License-Identifier: MIT
#include "widgets/views/patchingview.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalBlocker>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

namespace nnscope {

PatchingView::PatchingView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    clean_ = new QLineEdit(content);
    clean_->setPlaceholderText(tr("The clean prompt, e.g. “When Mary and John went to the store, John gave a drink to”"));
    corrupted_ = new QLineEdit(content);
    corrupted_->setPlaceholderText(tr("The corrupted prompt, the same number of tokens"));
    answer_ = new QLineEdit(content);
    answer_->setPlaceholderText(tr("answer token (text or #id)"));
    wrong_ = new QLineEdit(content);
    wrong_->setPlaceholderText(tr("wrong token (optional)"));
    wrong_->setToolTip(tr("With a wrong token the metric is logit(answer) − logit(wrong); without, the answer's probability"));
    site_ = new QComboBox(content);
    site_->addItem("layer_output", static_cast<int>(PatchSite::LayerOutput));
    site_->addItem("attention_output", static_cast<int>(PatchSite::AttentionOutput));
    site_->addItem("mlp_output", static_cast<int>(PatchSite::MlpOutput));
    site_->addItem(tr("one head (attention_head_outputs)"), static_cast<int>(PatchSite::HeadOutput));
    site_->addItem(tr("every head (blocks × heads)"), static_cast<int>(PatchSite::AllHeads));
    site_->setToolTip(tr("The value copied from the clean run into the corrupted run, one block and position (and head) at a time"));
    head_ = new QSpinBox(content);
    head_->setPrefix(tr("head "));
    head_->setEnabled(false);
    const QString listHelp = tr("all when empty; e.g. -1 (the last), 0,3,5 or 2-6. Cells outside are not run (blank).");
    blocks_ = new QLineEdit(content);
    blocks_->setPlaceholderText(tr("all blocks"));
    blocks_->setToolTip(tr("The blocks patched: ") + listHelp);
    blocks_->setMaximumWidth(110);
    positions_ = new QLineEdit(content);
    positions_->setPlaceholderText(tr("all positions"));
    positions_->setToolTip(tr("The positions patched: ") + listHelp);
    positions_->setMaximumWidth(110);
    headPosition_ = new QComboBox(content);
    headPosition_->setToolTip(tr("Every head: the blocks × heads grid at one position, or summed over the positions run "
                                 "(corrupted + the sum of each position's change)"));
    headPosition_->hide();
    normalized_ = new QCheckBox(tr("normalised"), content);
    normalized_->setToolTip(tr("(patched − corrupted) / (clean − corrupted): 1 where one patch restores the clean metric"));
    run_ = new QPushButton(tr("Run patching"), content);
    cancel_ = new QPushButton(tr("Cancel"), content);
    cancel_->setEnabled(false);
    progress_ = new QProgressBar(content);
    progress_->setTextVisible(true);
    progress_->setFormat(tr("%v / %m cells"));
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // tokens and prompts such as "<s>" are text
    interventionsNote_ = new QLabel(content);
    interventionsNote_->setWordWrap(true);
    interventionsNote_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    interventionsNote_->setStyleSheet("color: #8a5a00;");
    interventionsNote_->hide();

    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(signedGradient());
    heatmap_->setSymmetricRange(true);
    heatmap_->setMinCellSize(QSize(34, 22));  // an export's cells
    heatmap_->setZoomable(true);              // the whole grid fitted to the view, the last position in sight (#28)
    heatmap_->setModel(model_);
    estimateModel_ = new MatrixModel(this);
    estimateHeatmap_ = new HeatmapPlot(content);
    estimateHeatmap_->setGradient(signedGradient());
    estimateHeatmap_->setSymmetricRange(true);
    estimateHeatmap_->setMinCellSize(QSize(34, 22));
    estimateHeatmap_->setZoomable(true);
    estimateHeatmap_->setModel(estimateModel_);
    // no widget tooltip here: it would replace the hovered cell's value (the citation is in the status line)

    auto* form = new QFormLayout;
    form->addRow(tr("Clean"), clean_);
    form->addRow(tr("Corrupted"), corrupted_);
    auto* tokens = new QHBoxLayout;
    // the token fields take the row's spare width (the site box took it, leaving "zqqq" of "zzzqqq"), not more of
    // the window's minimum width
    tokens->addWidget(answer_, 1);
    tokens->addWidget(wrong_, 1);
    tokens->addWidget(new QLabel(tr("patch"), content));
    tokens->addWidget(site_);
    tokens->addWidget(head_);
    tokens->addWidget(normalized_);
    form->addRow(tr("Answer"), tokens);
    auto* cells = new QHBoxLayout;
    cells->addWidget(new QLabel(tr("blocks"), content));
    cells->addWidget(blocks_);
    cells->addWidget(new QLabel(tr("positions"), content));
    cells->addWidget(positions_);
    cells->addWidget(headPosition_);
    cells->addStretch(1);
    form->addRow(tr("Patch"), cells);
    auto* runRow = new QHBoxLayout;
    runRow->addWidget(run_);
    runRow->addWidget(cancel_);
    runRow->addWidget(progress_, 1);
    auto* fit = makeFitButton(heatmap_, content);  // both grids
    connect(fit, &QToolButton::clicked, estimateHeatmap_, &HeatmapPlot::resetView);
    connect(estimateHeatmap_, &HeatmapPlot::viewChanged, fit, [this, fit] { fit->setEnabled(heatmap_->isZoomed() || estimateHeatmap_->isZoomed()); });
    connect(heatmap_, &HeatmapPlot::viewChanged, fit, [this, fit] { fit->setEnabled(heatmap_->isZoomed() || estimateHeatmap_->isZoomed()); });
    runRow->addWidget(fit);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(form);
    layout->addLayout(runRow);
    layout->addWidget(status_);
    layout->addWidget(interventionsNote_);
    auto* grids = new QSplitter(Qt::Horizontal, content);
    grids->addWidget(heatmap_);
    grids->addWidget(estimateHeatmap_);
    layout->addWidget(grids, 1);
    heatmap_->hide();  // shown with the first grid
    estimateHeatmap_->hide();
    setContent(content);
    showContent();
    promptCombo_->hide();  // the form has its own prompts
    connect(site_, &QComboBox::currentIndexChanged, this, [this] {
        head_->setEnabled(static_cast<PatchSite>(site_->currentData().toInt()) == PatchSite::HeadOutput);
    });
    connect(run_, &QPushButton::clicked, this, [this] {
        if (!running_) emit patchRequested(request());
    });
    connect(cancel_, &QPushButton::clicked, this, &PatchingView::cancelRequested);
    connect(normalized_, &QCheckBox::toggled, this, [this] { refresh(); });
    connect(headPosition_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    setModel(nullptr);
}

void PatchingView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    showContent();  // the form needs no trace
}

void PatchingView::setModel(ModelPtr model) {
    modelPtr_ = std::move(model);
    run_->setEnabled(modelPtr_ != nullptr && !running_);
    head_->setRange(0, modelPtr_ ? static_cast<int>(modelPtr_->config().numHeads) - 1 : 0);
    result_.reset();
    model_->setMatrix({});
    estimateModel_->setMatrix({});
    heatmap_->hide();
    estimateHeatmap_->hide();
    status_->setText(modelPtr_ ? tr("Two prompts of the same length: patching copies one value from the clean run into the "
                                    "corrupted run at each block and position and measures the answer.")
                               : tr("Open a checkpoint first."));
    status_->setStyleSheet(QString());
    refreshInterventionsNote();
}

void PatchingView::setRequest(const PatchRequest& r) {
    if (!r.clean.isEmpty()) clean_->setText(r.clean);
    if (!r.corrupted.isEmpty()) corrupted_->setText(r.corrupted);
    if (!r.answer.isEmpty()) answer_->setText(r.answer);
    wrong_->setText(r.wrong);
    site_->setCurrentIndex(site_->findData(static_cast<int>(r.site)));
    head_->setValue(r.head);
    blocks_->setText(r.blocks);
    positions_->setText(r.positions);
}

PatchRequest PatchingView::request() const {
    PatchRequest r;
    r.clean = clean_->text();
    r.corrupted = corrupted_->text();
    r.answer = answer_->text().trimmed().isEmpty() ? QString() : answer_->text();
    r.wrong = wrong_->text().trimmed().isEmpty() ? QString() : wrong_->text();
    r.site = static_cast<PatchSite>(site_->currentData().toInt());
    r.head = head_->value();
    r.blocks = blocks_->text().trimmed();
    r.positions = positions_->text().trimmed();
    return r;
}

void PatchingView::setRunning(bool running) {
    running_ = running;
    run_->setEnabled(!running && modelPtr_ != nullptr);
    cancel_->setEnabled(running);
    if (running) {
        progress_->setValue(0);
        progress_->setFormat(tr("starting…"));
        clock_.invalidate();
        status_->setStyleSheet(QString());
        status_->setText(tr("Patching…"));
    }
}

void PatchingView::setProgress(int done, int total) {
    // the estimate counts from the first report (0 cells done), after the clean, corrupted and attribution passes
    if (done == 0 || !clock_.isValid()) clock_.start();
    progress_->setMaximum(std::max(total, 1));
    progress_->setValue(done);
    progress_->setFormat(QString::fromStdString(patchProgressText(done, total, clock_.elapsed() / 1000.0)));
}

void PatchingView::setResult(std::shared_ptr<const PatchingResult> result, const QString& metric) {
    setRunning(false);
    result_ = std::move(result);
    metric_ = metric;
    {
        const QSignalBlocker quiet(headPosition_);
        const int previous = headPosition_->currentData().isValid() ? headPosition_->currentData().toInt() : -1;
        headPosition_->clear();
        if (result_ && result_->headsPerBlock > 0) {
            headPosition_->addItem(tr("summed over positions"), -1);
            const size_t len = result_->grid.empty() ? 0 : result_->grid[0].size();
            for (size_t p = 0; p < len; ++p) {
                bool run = false;
                for (const auto& row : result_->grid) run = run || !std::isnan(row[p]);
                if (run)
                    headPosition_->addItem(tr("position %1 “%2”").arg(p).arg(p < result_->tokens.size() ? QString::fromStdString(result_->tokens[p])
                                                                                                            : QString()),
                                           static_cast<int>(p));
            }
            headPosition_->setCurrentIndex(std::max(0, headPosition_->findData(previous)));
        }
        headPosition_->setVisible(headPosition_->count() > 0);
    }
    refresh();
}

void PatchingView::setFailed(const QString& message) {
    setRunning(false);
    status_->setStyleSheet("color: #a00010;");
    status_->setText(message);
}

void PatchingView::setNormalized(bool normalized) { normalized_->setChecked(normalized); }

void PatchingView::setActiveInterventions(const QStringList& lines) {
    activeInterventions_ = lines;
    refreshInterventionsNote();
}

void PatchingView::refreshInterventionsNote() {
    QStringList ran;
    if (result_)
        for (const auto& line : result_->interventions) ran << QString::fromStdString(line);
    QString text;
    if (!activeInterventions_.isEmpty())
        text = tr("With %n intervention(s) from the Interventions list, applied to the clean, the corrupted and every patched run: %1.",
                  nullptr, static_cast<int>(activeInterventions_.size()))
                   .arg(activeInterventions_.join(tr("; ")));
    if (result_ && ran != activeInterventions_)
        text += (text.isEmpty() ? QString() : QStringLiteral(" ")) +
                (ran.isEmpty() ? tr("The grid shown was computed without interventions: press Run patching to apply them.")
                               : tr("The grid shown was computed with %1: press Run patching for the list as it is now.").arg(ran.join(tr("; "))));
    interventionsNote_->setText(text);
    interventionsNote_->setVisible(!text.isEmpty());
}

void PatchingView::refresh() {
    refreshInterventionsNote();
    if (!result_) return;
    const auto& r = *result_;
    const bool norm = normalized_->isChecked();
    const double gap = r.clean - r.corrupted;
    const QString site = QString::fromStdString(r.site);
    const QString siteShown = QString(site).replace("{i}", "i");
    const QString metric = metric_;
    const double clean = r.clean, corrupted = r.corrupted;
    const int H = r.headsPerBlock;
    const int shownPosition = H > 0 && headPosition_->currentData().isValid() ? headPosition_->currentData().toInt() : -1;
    // every head: row i * H + h of the grid, at one position or summed over the positions run (corrupted + the sum of
    // each position's change; NaN where none was run)
    auto headCell = [shownPosition, corrupted](const std::vector<std::vector<double>>& grid, size_t row) {
        if (shownPosition >= 0) return grid[row][static_cast<size_t>(shownPosition)];
        double sum = 0;
        bool any = false;
        for (double v : grid[row])
            if (!std::isnan(v)) {
                sum += v - corrupted;
                any = true;
            }
        return any ? corrupted + sum : std::nan("");
    };
    // Only the blocks (rows) and positions (columns of a blocks x positions grid) that were run, the Patch row's
    // choice: 16 blocks x 4 positions at the end of a 313-token prompt is a 16 x 4 grid, not a sliver at the edge of
    // 313 blank columns. From the exact grid (NaN where not run); everything when nothing was run.
    std::vector<int> shownBlocks, shownColumns;
    const size_t positions = r.grid.empty() ? 0 : r.grid[0].size();
    {
        const int rowsPerBlock = std::max(H, 1);  // a grid row per head, or one per block
        const int layers = static_cast<int>(r.grid.size()) / rowsPerBlock;
        const int len = H > 0 ? H : static_cast<int>(positions);
        std::vector<char> columnRun(static_cast<size_t>(len), H > 0);  // every head's column; positions as run
        for (int i = 0; i < layers; ++i) {
            bool run = false;
            for (int k = 0; k < rowsPerBlock; ++k)
                for (size_t p = 0; p < positions; ++p)
                    if (!std::isnan(r.grid[static_cast<size_t>(i * rowsPerBlock + k)][p])) {
                        run = true;
                        if (H == 0) columnRun[p] = 1;
                    }
            if (run) shownBlocks.push_back(i);
        }
        for (int c = 0; c < len; ++c)
            if (columnRun[static_cast<size_t>(c)]) shownColumns.push_back(c);
        if (shownBlocks.empty() || shownColumns.empty()) {
            shownBlocks.resize(static_cast<size_t>(layers));
            std::iota(shownBlocks.begin(), shownBlocks.end(), 0);
            shownColumns.resize(static_cast<size_t>(len));
            std::iota(shownColumns.begin(), shownColumns.end(), 0);
        }
    }
    const bool subset = H == 0 && shownColumns.size() < positions;
    // one blocks x positions (or blocks x heads) matrix of a grid; `what` names the grid in the tooltip
    auto matrixOf = [&](const std::vector<std::vector<double>>& grid, const QString& what) {
        const int rows = static_cast<int>(shownBlocks.size()), len = static_cast<int>(shownColumns.size());
        std::vector<std::vector<double>> cells(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(len)));
        for (int i = 0; i < rows; ++i)
            for (int c = 0; c < len; ++c) {
                const int block = shownBlocks[static_cast<size_t>(i)], column = shownColumns[static_cast<size_t>(c)];
                cells[i][c] = H > 0 ? headCell(grid, static_cast<size_t>(block * H + column)) : grid[block][column];
            }
        torch::Tensor values = torch::empty({rows, len}, torch::kFloat32);
        auto a = values.accessor<float, 2>();
        for (int i = 0; i < rows; ++i)
            for (int c = 0; c < len; ++c) a[i][c] = static_cast<float>(norm ? (gap != 0 ? (cells[i][c] - r.corrupted) / gap : 0.0) : cells[i][c]);
        Matrix m;
        m.values = values;
        for (int block : shownBlocks) m.rowLabels << QString("layers.%1").arg(block);
        if (H > 0)
            for (int h : shownColumns) m.columnLabels << tr("head %1").arg(h);
        else
            for (int p : shownColumns)  // a chosen subset names its positions (the axis numbers only its own columns)
                m.columnLabels << (subset ? QString("%1 %2").arg(p).arg(QString::fromStdString(r.tokens[static_cast<size_t>(p)]))
                                          : QString::fromStdString(r.tokens[static_cast<size_t>(p)]));
        m.labelsNumbered = subset || H > 0;  // "head 5" names its own number too
        QStringList tokens;
        for (const auto& t : r.tokens) tokens << QString::fromStdString(t);
        m.rowTitle = tr("block");
        m.columnTitle = H > 0 ? (shownPosition >= 0 ? tr("head (position %1 “%2”)").arg(shownPosition).arg(tokens.value(shownPosition))
                                                    : tr("head (summed over positions)"))
                              : tr("position (corrupted prompt)");
        m.valueName = norm ? tr("fraction recovered") : metric_;
        m.toolTip = [site, tokens, metric, cells, clean, corrupted, what, H, shownPosition, shownBlocks, shownColumns](int shownRow, int shownCol) {
            const double v = cells[static_cast<size_t>(shownRow)][static_cast<size_t>(shownCol)];
            const int row = shownBlocks[static_cast<size_t>(shownRow)], col = shownColumns[static_cast<size_t>(shownCol)];
            QString path = site;
            path.replace("{i}", QString::number(row));
            path.replace("{h}", QString::number(col));
            const QString where = H > 0 && shownPosition < 0 ? QObject::tr("at each position run, the changes summed")
                                  : QObject::tr("at position %1 “%2”").arg(H > 0 ? shownPosition : col).arg(tokens.value(H > 0 ? shownPosition : col));
            if (std::isnan(v)) return QObject::tr("%1 %2 (%3)\nnot run (outside the chosen blocks and positions)").arg(path, where, what);
            const double frac = clean != corrupted ? (v - corrupted) / (clean - corrupted) : 0.0;
            return QObject::tr("%1 patched %2 (%3)\n%4 = %5 (clean %6, corrupted %7)\nrecovered %8%")
                .arg(path, where, what, metric).arg(v, 0, 'g', 5).arg(clean, 0, 'g', 5).arg(corrupted, 0, 'g', 5)
                .arg(frac * 100, 0, 'f', 1);
        };
        return m;
    };
    model_->setMatrix(matrixOf(r.grid, tr("exact")));
    heatmap_->show();
    heatmap_->setTitle(tr("activation patching\n%1\n%2").arg(QString(siteShown).replace("{h}", "h"), norm ? tr("fraction of the gap recovered") : metric_));
    QString correlation;
    if (!r.estimate.empty()) {
        estimateModel_->setMatrix(matrixOf(r.estimate, tr("attribution patching estimate")));
        estimateHeatmap_->show();
        const double rho = gridCorrelation(r.grid, r.estimate);
        estimateHeatmap_->setTitle(tr("attribution patching (first-order)\nr = %1 with the exact grid").arg(std::isnan(rho) ? tr("n/a") : QString::number(rho, 'f', 3)));
        correlation = tr(" Right: attribution patching's first-order estimate from one backward pass (Nanda 2023; Syed, Rager "
                         "and Conmy 2023); correlation with the exact grid %1.").arg(std::isnan(rho) ? tr("undefined (a constant grid)") : QString::number(rho, 'f', 3));
    } else {
        estimateModel_->setMatrix({});
        estimateHeatmap_->hide();
    }
    status_->setStyleSheet(QString());
    status_->setText(tr("%1: clean %2, corrupted %3. Each cell: the corrupted run with %4 of one block%5 taken "
                        "from the clean run.")
                         .arg(metric_)
                         .arg(r.clean, 0, 'g', 5)
                         .arg(r.corrupted, 0, 'g', 5)
                         .arg(QString(siteShown).replace("{h}", "h"))
                         .arg(H > 0 ? (shownPosition >= 0 ? tr(", head and position %1").arg(shownPosition)
                                                          : tr(" and head at one position, the changes summed over the positions run"))
                                    : tr(" and position")) + correlation);
}

PlotSource PatchingView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = "patching";
    return s;
}

QMap<QString, QString> PatchingView::settings() const {
    const PatchRequest r = request();
    return {{"view", "patching"},
            {"view.clean", r.clean},
            {"view.corrupted", r.corrupted},
            {"view.answer", r.answer},
            {"view.wrong", r.wrong},
            {"view.site", result_ ? QString::fromStdString(result_->site) : site_->currentText()},
            {"view.metric", metric_},
            {"view.normalized", normalized_->isChecked() ? "true" : "false"},
            {"view.interventions", [this] {
                 QStringList ran;
                 if (result_)
                     for (const auto& line : result_->interventions) ran << QString::fromStdString(line);
                 return ran.join(" ; ");
             }()}};
}

}  // namespace nnscope
