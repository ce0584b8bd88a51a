// SPDX-License-Identifier: MIT
#include "widgets/views/traceview.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QContextMenuEvent>
#include <QLabel>
#include <QMenu>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <utility>

namespace nnscope {

TraceView::TraceView(QWidget* parent) : QWidget(parent) {
    stack_ = new QStackedWidget(this);
    placeholder_ = new QLabel(this);
    placeholder_->setAlignment(Qt::AlignCenter);
    placeholder_->setWordWrap(true);
    placeholder_->setForegroundRole(QPalette::PlaceholderText);
    stack_->addWidget(placeholder_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(stack_);
    promptCombo_ = new QComboBox(this);
    promptCombo_->setToolTip(tr("The prompt of the batch to show"));
    // as wide as about 14 characters, not as the longest prompt: the control rows fit a 1280-px screen (#28)
    promptCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    promptCombo_->setMinimumContentsLength(14);
    connect(promptCombo_, &QComboBox::currentIndexChanged, this, [this](int row) {
        if (row >= 0) emit promptChanged(row);
    });
}

void TraceView::setPrompt(int row) {
    if (row >= 0 && row < promptCombo_->count() && row != promptCombo_->currentIndex()) promptCombo_->setCurrentIndex(row);
}

int TraceView::prompt() const { return std::max(0, promptCombo_->currentIndex()); }

void TraceView::contextMenuEvent(QContextMenuEvent* event) {
    const QVector<InterventionOffer> offers = snapshot_ ? interventionOffers() : QVector<InterventionOffer>{};
    if (offers.isEmpty()) return QWidget::contextMenuEvent(event);
    QMenu menu(this);
    for (const InterventionOffer& o : offers) {
        QAction* a = menu.addAction(o.label);
        a->setToolTip(o.text);
        a->setStatusTip(tr("Add the intervention %1 (Interventions dock); the next trace applies it").arg(o.text));
        const QString text = o.text;
        connect(a, &QAction::triggered, this, [this, text] { emit interventionRequested(text); });
    }
    menu.setToolTipsVisible(true);
    menu.exec(event->globalPos());
}

void TraceView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (pendingRefresh_) std::exchange(pendingRefresh_, nullptr)();
}

void TraceView::refreshWhenShown(std::function<void()> refresh) {
    if (isVisible()) {
        pendingRefresh_ = nullptr;
        refresh();
    } else {
        pendingRefresh_ = std::move(refresh);
    }
}

void TraceView::refreshOnNextShow(std::function<void()> refresh) { pendingRefresh_ = std::move(refresh); }

void TraceView::requestAnalysis(const QString& what, int total, std::function<QVariant(const JobControl&)> compute, AnalysisDone done) {
    pendingSerial_ = ++lastSerial_;
    pendingDone_ = std::move(done);
    emit analysisRequested({pendingSerial_, what, total, std::move(compute)});
}

void TraceView::dropAnalysis() {
    if (!pendingSerial_) return;
    pendingSerial_ = 0;
    pendingDone_ = nullptr;
    emit analysisDropped();
}

void TraceView::endAnalysis(quint64 serial, JobState state, const QVariant& result, const QString& message) {
    if (serial == 0 || serial != pendingSerial_) return;
    pendingSerial_ = 0;
    const AnalysisDone done = std::exchange(pendingDone_, nullptr);
    if (done) done(state, result, message);
}

void TraceView::setContent(QWidget* content) {
    stack_->addWidget(content);
}

void TraceView::showPlaceholder(const QString& text) {
    placeholder_->setText(text);
    stack_->setCurrentWidget(placeholder_);
}

QString TraceView::placeholderText() const {
    return stack_->currentWidget() == placeholder_ ? placeholder_->text() : QString();
}

void TraceView::showContent() {
    if (stack_->count() > 1) stack_->setCurrentIndex(1);
}

QString TraceView::missingAtBlock(Value v, int block, const QString& what) const {
    if (!snapshot_) return {};
    QString why = snapshot_->missing({{v, block}}, what);
    if (why.isEmpty()) return {};
    QStringList have;
    for (int i = 0; i < snapshot_->numLayers(); ++i)
        if (snapshot_->result.value({v, i}).defined()) have << QString::number(i);
    if (!have.isEmpty()) why += " " + tr("Blocks that have it: %1 (the block diagram's slider picks one).").arg(have.join(", "));
    return why;
}

QString TraceView::missingWeights(const QString& what) const {
    if (!snapshot_ || snapshot_->model->hasWeights()) return {};
    return tr("%1 needs the model's weights, which the trace file %2 does not hold: open the checkpoint (File ▸ Open "
              "Checkpoint) and trace the prompt there.").arg(what, snapshot_->sourceFile);
}

QString elidedText(const QString& text, int maxChars) {
    if (text.size() <= maxChars) return text;
    int end = std::max(1, maxChars);
    if (text.at(end - 1).isHighSurrogate()) --end;  // not half a character
    return text.left(end) + QObject::tr("… (%L1 characters in all)").arg(text.size());
}

void fillPromptCombo(QComboBox* combo, const TraceSnapshot& snapshot) {
    const QSignalBlocker block(combo);
    const int keep = combo->currentIndex();
    combo->clear();
    for (int r = 0; r < snapshot.numPrompts(); ++r) {
        QString text = snapshot.prompt(r);
        if (text.size() > 40) text = text.left(38) + "…";
        combo->addItem(QString("%1: %2").arg(r + 1).arg(text.isEmpty() ? QObject::tr("(BOS only)") : text));
    }
    combo->setCurrentIndex(keep >= 0 && keep < combo->count() ? keep : 0);
    combo->setEnabled(combo->count() > 1);
}

QCPColorGradient probabilityGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0xff, 0xff, 0xff));
    g.setColorStopAt(0.25, QColor(0xc6, 0xdb, 0xef));
    g.setColorStopAt(0.6, QColor(0x42, 0x92, 0xc6));
    g.setColorStopAt(1.0, QColor(0x08, 0x30, 0x6b));
    return g;
}

QCPColorGradient signedGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0x21, 0x66, 0xac));
    g.setColorStopAt(0.5, QColor(0xf7, 0xf7, 0xf7));
    g.setColorStopAt(1.0, QColor(0xb2, 0x18, 0x2b));
    return g;
}

}  // namespace nnscope
