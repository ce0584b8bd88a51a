// SPDX-License-Identifier: MIT
#include "widgets/views/logitlensview.h"
#include "widgets/views/numberformat.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace nnscope {

LogitLensView::LogitLensView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    targetEdit_ = new QLineEdit(content);
    targetEdit_->setPlaceholderText(tr("token text or #id"));
    targetEdit_->setToolTip(tr("The token whose probability is followed across blocks: its text (the first token it "
                               "encodes to) or its id as #id"));
    targetLabel_ = new QLabel(content);
    positionSpin_ = new QSpinBox(content);
    positionSpin_->setToolTip(tr("The position whose target probability is plotted (click a cell to pick one)"));
    logCheck_ = new QCheckBox(tr("Log scale"), content);
    logCheck_->setToolTip(tr("Colour the top token's probability on a logarithmic scale from 10⁻⁵ to 1: at a large "
                             "vocabulary the early blocks' top tokens have probabilities far below 0.01"));
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompt"), content));
    controls->addWidget(promptCombo_, 1);
    controls->addWidget(new QLabel(tr("Target"), content));
    controls->addWidget(targetEdit_);
    controls->addWidget(targetLabel_);
    controls->addWidget(new QLabel(tr("Position"), content));
    controls->addWidget(positionSpin_);
    controls->addWidget(logCheck_);

    model_ = new MatrixModel(this);
    heatmap_ = new HeatmapPlot(content);
    heatmap_->setGradient(probabilityGradient());
    heatmap_->setDataRange(0, 1);
    heatmap_->setMinCellSize(QSize(50, 24));  // an export's cells: room for the token written in each
    heatmap_->setZoomable(true);              // the whole blocks x positions grid fitted to the view (#28)
    heatmap_->setModel(model_);
    controls->addWidget(makeFitButton(heatmap_, content));

    targetPlot_ = new QCustomPlot(content);
    targetPlot_->setInteractions({});
    targetPlot_->plotLayout()->insertRow(0);
    targetPlot_->plotLayout()->addElement(0, 0, new QCPTextElement(targetPlot_, QString(), QFont(font().family(), font().pointSize(), QFont::Bold)));
    targetGraph_ = targetPlot_->addGraph();
    targetGraph_->setPen(QPen(QColor(0xd6, 0x60, 0x4d), 2));
    targetGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 7));
    targetPlot_->xAxis->setLabel(tr("block"));
    targetPlot_->yAxis->setLabel(tr("probability"));
    targetPlot_->yAxis->setRange(0, 1.02);
    targetPlot_->setMinimumHeight(170);

    followPalette(targetPlot_);

    auto* split = new QSplitter(Qt::Vertical, content);
    split->addWidget(heatmap_);
    split->addWidget(targetPlot_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    note_ = new QLabel(content);
    note_->setAlignment(Qt::AlignCenter);
    note_->setWordWrap(true);
    note_->setTextFormat(Qt::RichText);
    note_->setForegroundRole(QPalette::PlaceholderText);
    connect(note_, &QLabel::linkActivated, this, [this] { emit lensRequested(); });
    body_ = new QStackedWidget(content);
    body_->addWidget(split);
    body_->addWidget(note_);
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addWidget(body_, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace to see the logit lens: each block's output read through the final norm and lm_head."));

    connect(promptCombo_, &QComboBox::currentIndexChanged, this, &LogitLensView::refresh);
    connect(targetEdit_, &QLineEdit::editingFinished, this, [this] {
        if (targetEdit_->text() != shownTarget_) setTarget(targetEdit_->text());
    });
    connect(positionSpin_, &QSpinBox::valueChanged, this, [this] {
        positionPicked_ = true;
        refreshTarget();
    });
    connect(heatmap_, &HeatmapPlot::cellClicked, this, [this](int, int column) { setPosition(column); });
    connect(logCheck_, &QCheckBox::toggled, this, [this](bool on) {
        heatmap_->setLogScale(on, kLogFloor);
        // the target's probability across blocks on the same scale (at a 128k vocabulary it sits near 1e-5, flat at 0 on
        // a linear axis)
        QCPAxis* y = targetPlot_->yAxis;
        y->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (on) {
            y->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
            y->setNumberFormat("eb");
            y->setNumberPrecision(0);
            y->setRange(kLogFloor, 1.5);
        } else {
            y->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
            y->setNumberFormat("gb");
            y->setNumberPrecision(6);
            y->setRange(0, 1.02);
        }
        targetPlot_->replot();
    });
    // a long prompt's lens is computed for the columns in view: scrolling to others asks for them once it pauses
    wantTimer_ = new QTimer(this);
    wantTimer_->setSingleShot(true);
    wantTimer_->setInterval(150);
    connect(wantTimer_, &QTimer::timeout, this, [this] {
        // what is missing in view is for the window to find (MainWindow::ensureLens): nothing, once it is all there
        if (snapshot_ && isVisible() && !snapshot_->lens(prompt())) emit lensRequested();
    });
    connect(heatmap_, &HeatmapPlot::viewChanged, wantTimer_, qOverload<>(&QTimer::start));
}

std::pair<int, int> LogitLensView::wantedPositions() const {
    if (!snapshot_) return {0, 0};
    const int len = static_cast<int>(snapshot_->tokens.at(static_cast<size_t>(prompt())).size());
    constexpr int kChunk = 64;
    int from = std::max(0, len - 2 * kChunk), to = len;  // nothing drawn yet: the view starts at the last position
    const QRect cells = heatmap_->visibleCells();
    if (shownLens_ && shownFor_.first == snapshot_.get() && shownFor_.second == prompt() && cells.width() > 0) {
        from = cells.x();
        to = cells.x() + cells.width();
    }
    from = from / kChunk * kChunk;
    to = std::min(len, (to + kChunk - 1) / kChunk * kChunk);
    return {from, to};
}

void LogitLensView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    shownLens_.reset();
    if (!snapshot_) {  // a new model: its vocabulary has other ids
        targetId_ = -1;
        targetChosen_ = false;
        model_->setMatrix({});
        showPlaceholder(tr("Run a trace to see the logit lens: each block's output read through the final norm and lm_head."));
        return;
    }
    if (!snapshot_->lensMissing.isEmpty()) {  // a trace file without every layer_output, or without the weights
        const QString why = snapshot_->lensMissing;
        snapshot_.reset();
        model_->setMatrix({});
        showPlaceholder(why);
        return;
    }
    fillPromptCombo(promptCombo_, *snapshot_);
    positionPicked_ = false;
    if (!targetChosen_ || targetId_ < 0 || targetId_ >= snapshot_->model->config().vocabSize) {
        // default target: this trace's most probable next token after the first prompt (a typed one is kept)
        targetChosen_ = false;
        targetId_ = defaultTarget();
    }
    showContent();
    refresh();
}

bool LogitLensView::setTarget(const QString& text) {
    if (!snapshot_) return false;
    const Model& m = *snapshot_->model;
    QString t = text.trimmed();
    if (t.isEmpty()) {  // an emptied field: back to the trace's own most probable next token
        targetChosen_ = false;
        targetId_ = defaultTarget();
        refreshTarget();
        refresh();
        return true;
    }
    int64_t id = -1;
    bool isNumber = false;
    const QString digits = t.startsWith('#') ? t.mid(1) : t;
    const qint64 n = digits.toLongLong(&isNumber);
    if (isNumber && (t.startsWith('#') || !m.tokenizer())) {
        id = n;
    } else if (m.tokenizer() && !t.isEmpty()) {
        try {
            const auto ids = m.tokenizer()->encode(text.toStdString(), false);
            if (!ids.empty()) id = ids.front();
        } catch (const Error& e) {
            targetLabel_->setText(QString::fromStdString(e.what()));
            return false;
        }
    }
    if (id < 0 || id >= m.config().vocabSize) {
        targetLabel_->setText(tr("<span style='color:#b00'>no such token</span>"));
        return false;
    }
    targetId_ = id;
    targetChosen_ = true;
    refreshTarget();
    refresh();  // the tooltips name the target
    return true;
}

int64_t LogitLensView::defaultTarget() const {
    // the first prompt's most probable next token; where the output is not finite there is none (argmax would take the
    // first NaN): the unedited run's, when the trace has one, else id 0
    for (const TraceSnapshot* s : {snapshot_.get(), snapshot_ ? snapshot_->baseline.get() : nullptr}) {
        if (!s || !s->result.nextTokenProbs.defined()) continue;
        const torch::Tensor p = s->result.nextTokenProbs.index({0});
        if (torch::isfinite(p).all().item<bool>()) return p.argmax().item<int64_t>();
    }
    return 0;
}

void LogitLensView::lensChanged() {
    // the prompt's whole lens, or more positions of a long prompt's (the same partial lens, filled further)
    if (snapshot_ && (snapshot_->lens(prompt()) != shownLens_ || snapshot_->partialLens(prompt()))) refresh();
}

void LogitLensView::setLensNote(const QString& html) { note_->setText(html); }

QString LogitLensView::lensNote() const { return note_->text(); }

void LogitLensView::setLogScale(bool on) { logCheck_->setChecked(on); }
bool LogitLensView::logScale() const { return logCheck_->isChecked(); }

void LogitLensView::setPosition(int position) { positionSpin_->setValue(position); }
int LogitLensView::position() const { return positionSpin_->value(); }

void LogitLensView::refresh() {
    if (!snapshot_) return;
    const int row = prompt();
    shownLens_ = snapshot_->lens(row);
    const bool partial = !shownLens_;
    if (partial) shownLens_ = snapshot_->partialLens(row);  // a long prompt: the positions computed so far
    if (!shownLens_) {  // the window computes it when the view is shown (MainWindow::ensureLens)
        model_->setMatrix({});
        shownFor_ = {nullptr, -1};
        body_->setCurrentWidget(note_);
        return;
    }
    // the same prompt again (more of its positions, another target): the heatmap stays where it was scrolled
    const bool sameView = shownFor_.first == snapshot_.get() && shownFor_.second == row;
    const QRect before = heatmap_->visibleCells();
    shownFor_ = {snapshot_.get(), row};
    std::vector<bool> computed;
    if (partial)
        for (int i = 0; i < static_cast<int>(snapshot_->tokens.at(static_cast<size_t>(row)).size()); ++i)
            computed.push_back(snapshot_->lensComputed(row, i));
    body_->setCurrentIndex(0);
    const LogitLens& lens = *shownLens_;
    const torch::Tensor ids = lens.topIds.at(static_cast<size_t>(row));      // [L, len, k]
    const torch::Tensor probs = lens.topProbs.at(static_cast<size_t>(row));  // [L, len, k]
    const torch::Tensor target = lensTokenProbs(*snapshot_->model, lens, row, targetId_);
    const ModelPtr model = snapshot_->model;
    auto label = [model](int64_t id) {
        if (id < 0) return LogitLensView::tr("no token");  // logits that are not finite: logitLens names none
        const Tokenizer* tok = model->tokenizer();
        return tok ? QString::fromStdString(tok->tokenLabel(id)) : QString("#%1").arg(id);
    };
    const QStringList tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    const QString targetLabel = label(targetId_);

    Matrix m;
    m.values = probs.index({torch::indexing::Slice(), torch::indexing::Slice(), 0}).contiguous();
    for (int i = 0; i < lens.numLayers; ++i) m.rowLabels << QString("layers.%1").arg(i);
    m.columnLabels = tokens;
    m.rowTitle = tr("block (layer_output)");
    m.columnTitle = tr("position");
    m.valueName = tr("top token probability");
    // The cells' texts and tooltips are made when drawn or hovered, not for every block x position at once (at 512
    // tokens that is thousands of labels the window would make before it draws).
    const int len = static_cast<int>(ids.size(1)), k = static_cast<int>(ids.size(2));
    const torch::Tensor idsC = ids.contiguous(), probsC = probs.contiguous(), targetC = target.contiguous();
    auto at = [len, k](int r, int c, int j) { return (static_cast<size_t>(r) * len + c) * k + j; };
    auto done = [computed](int c) { return computed.empty() || computed[static_cast<size_t>(c)]; };
    m.cellText = [idsC, at, done, label](int r, int c) {
        if (!done(c)) return QString();
        const int64_t id = idsC.data_ptr<int64_t>()[at(r, c, 0)];
        return id < 0 ? QStringLiteral("NaN") : label(id);
    };
    m.toolTip = [idsC, probsC, targetC, tokens, targetLabel, label, at, len, k, done](int r, int c) {
        QString s = LogitLensView::tr("layers.%1 · position %2 “%3”").arg(r).arg(c).arg(tokens.value(c));
        if (!done(c)) return s + LogitLensView::tr("\nnot computed yet: a long prompt's lens is computed for the positions in view");
        if (idsC.data_ptr<int64_t>()[at(r, c, 0)] < 0)
            return s + LogitLensView::tr("\nno top token: the logits here are not finite (a NaN or an infinity upstream)");
        for (int j = 0; j < k; ++j)
            s += QString("\n%1. %2  %3").arg(j + 1).arg(label(idsC.data_ptr<int64_t>()[at(r, c, j)])).arg(probabilityText(probsC.data_ptr<float>()[at(r, c, j)]));
        s += LogitLensView::tr("\ntarget %1: %2").arg(targetLabel).arg(targetC.data_ptr<float>()[static_cast<size_t>(r) * len + c], 0, 'g', 4);
        return s;
    };
    model_->setMatrix(std::move(m));
    heatmap_->setTitle(tr("logit lens · prompt %1").arg(row + 1));
    {
        const QSignalBlocker b(positionSpin_);
        positionSpin_->setRange(0, len - 1);
        if (!positionPicked_) positionSpin_->setValue(len - 1);  // the position that predicts the next token
    }
    shownTarget_ = targetLabel;
    targetEdit_->setText(targetLabel);
    if (sameView && before.width() > 0) {  // back where it was scrolled (a new matrix starts at the first column)
        heatmap_->ensureVisible(0, before.x() + before.width() - 1);
        heatmap_->ensureVisible(0, before.x());
        refreshTarget(false);
    } else {
        refreshTarget(true);
    }
}

void LogitLensView::refreshTarget(bool reveal) {
    if (!snapshot_ || targetId_ < 0 || !shownLens_) return;
    const int row = prompt(), pos = position();
    if (!snapshot_->lensComputed(row, pos)) {  // a long prompt's position not computed yet: scrolled to, it will be
        targetGraph_->data()->clear();
        if (auto* t = qobject_cast<QCPTextElement*>(targetPlot_->plotLayout()->element(0, 0)))
            t->setText(tr("position %1: its lens is computed when it is in view").arg(pos));
        targetPlot_->replot();
        if (reveal) heatmap_->ensureVisible(0, pos);
        return;
    }
    const torch::Tensor target = lensTokenProbs(*snapshot_->model, *shownLens_, row, targetId_);  // [L, len]
    if (pos < 0 || pos >= target.size(1)) return;
    QVector<double> blocks, probs;
    for (int i = 0; i < target.size(0); ++i) {
        blocks << i;
        probs << target[i][pos].item<double>();
    }
    targetGraph_->setData(blocks, probs, true);
    targetPlot_->xAxis->setRange(-0.3, target.size(0) - 0.7);
    const Tokenizer* tok = snapshot_->model->tokenizer();
    const QString label = tok ? QString::fromStdString(tok->tokenLabel(targetId_)) : QString("#%1").arg(targetId_);
    targetLabel_->setText(QString("#%1").arg(targetId_));
    heatmap_->setMarkedCell(-1, pos);
    if (reveal) heatmap_->ensureVisible(0, pos);
    if (auto* t = qobject_cast<QCPTextElement*>(targetPlot_->plotLayout()->element(0, 0)))
        t->setText(tr("p(“%1”) across blocks at position %2 “%3”").arg(label).arg(pos).arg(snapshot_->tokens.at(static_cast<size_t>(row)).value(pos)));
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1);
    targetPlot_->xAxis->setTicker(ticker);
    targetPlot_->replot();
}

PlotSource LogitLensView::plotSource() const {
    PlotSource s;
    s.plot = heatmap_->plot();
    HeatmapPlot* h = heatmap_;
    s.fullView = [h](bool full) { h->setFullView(full); };
    s.size = heatmap_->fullViewSize();
    s.name = "logit-lens";
    return s;
}

QMap<QString, QString> LogitLensView::settings() const {
    return {{"view", "logit lens"},
            {"view.prompt", QString::number(prompt() + 1)},
            {"view.target", QString("#%1").arg(targetId_)},
            {"view.position", QString::number(position())},
            {"view.log_scale", logScale() ? "true" : "false"}};
}

}  // namespace nnscope
