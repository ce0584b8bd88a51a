// SPDX-License-Identifier: MIT
#include "widgets/panels/tracepanel.h"

#include <QGridLayout>
#include <QResizeEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QStyle>

#include <algorithm>

namespace nnscope {

TracePanel::TracePanel(QWidget* parent) : QWidget(parent) {
    editor_ = new QPlainTextEdit(this);
    editor_->setPlaceholderText(tr("One prompt per line; several lines run together as one batch."));
    editor_->setTabChangesFocus(true);
    editor_->setMaximumHeight(fontMetrics().lineSpacing() * 3 + 12);
    run_ = new QPushButton(QIcon::fromTheme("media-playback-start", QIcon(":/icons/run.svg")), tr("Run"), this);
    run_->setToolTip(tr("Trace the prompts (Ctrl+Return)"));
    cancel_ = new QPushButton(QIcon::fromTheme("process-stop", QIcon(":/icons/cancel.svg")), tr("Cancel"), this);
    cancel_->setToolTip(tr("Stop the running trace; it stops within one block (Esc)"));
    progress_ = new QProgressBar(this);
    progress_->setFormat(QString());  // nothing run yet: an empty bar, not "block 0 / 1"
    progress_->setRange(0, 1);
    progress_->setValue(0);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // tokens and prompts such as "<s>" are text

    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(4, 4, 4, 4);
    grid->addWidget(new QLabel(tr("Prompt(s):"), this), 0, 0, Qt::AlignTop);
    grid->addWidget(editor_, 0, 1, 2, 1);
    grid->addWidget(run_, 0, 2);
    grid->addWidget(cancel_, 0, 3);
    grid->addWidget(progress_, 1, 2, 1, 2);
    grid->addWidget(status_, 2, 1, 1, 3);
    grid->setColumnStretch(1, 1);

    connect(run_, &QPushButton::clicked, this, &TracePanel::runRequested);
    connect(cancel_, &QPushButton::clicked, this, &TracePanel::cancelRequested);
    setRunning(false);
}

QStringList TracePanel::prompts() const {
    QStringList out;
    for (const QString& line : editor_->toPlainText().split('\n'))
        if (!line.trimmed().isEmpty()) out << line;
    if (out.isEmpty()) out << QString();
    return out;
}

void TracePanel::setPrompts(const QStringList& prompts) { editor_->setPlainText(prompts.join('\n')); }

QString TracePanel::statusText() const { return status_->text(); }

void TracePanel::setModelReady(bool ready) {
    ready_ = ready;
    setRunning(running_);
}

void TracePanel::reset(const QString& text) {
    analysing_ = false;
    outcome_ = traceSummary_ = text;  // what a view's computation (the lens of a trace file) is said after, and ends on
    outcomeWarning_ = false;
    progress_->setFormat(QString());
    progress_->setRange(0, 1);
    progress_->setValue(0);
    setStatus(text);
    setRunning(running_);
}

void TracePanel::setRunning(bool running) {
    running_ = running;
    run_->setEnabled(ready_ && !running);
    cancel_->setEnabled(running || analysing_);
}

void TracePanel::traceStarted(int blocks) {
    analysing_ = false;
    progress_->setFormat(tr("block %v / %m"));
    progress_->setRange(0, std::max(1, blocks));
    progress_->setValue(0);
    setStatus(tr("Running…"));
    setRunning(true);
}

void TracePanel::traceProgress(int done, int total) {
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
}

void TracePanel::traceFinished(const QString& summary) {
    progress_->setValue(progress_->maximum());
    setStatus(summary);
    outcome_ = traceSummary_ = summary;
    outcomeWarning_ = false;
    setRunning(false);
}

void TracePanel::setOutcomeNote(const QString& text, bool warning) {
    outcome_ = text.isEmpty() ? traceSummary_ : traceSummary_.isEmpty() ? text : traceSummary_ + " " + text;
    outcomeWarning_ = warning;
    if (analysing_) return;  // said when the analysis under way ends
    setStatus(outcome_, outcomeWarning_ ? QStringLiteral("#8a5a00") : QString());
}

void TracePanel::traceCancelled(int done, int total) {
    setStatus(tr("Cancelled after %1 of %2 blocks.").arg(done).arg(total), QStringLiteral("#8a5a00"));
    setRunning(false);
}

void TracePanel::traceFailed(const QString& message) {
    setStatus(tr("The trace failed: %1").arg(message), QStringLiteral("#b00020"));
    setRunning(false);
}

void TracePanel::analysisStarted(const QString& what, int total) {
    if (!analysing_) {  // the trace's own count, given back at the end (none yet: an empty bar, not "block 0 / 1")
        traceBar_ = {progress_->maximum(), progress_->value()};
        traceBarFormat_ = progress_->format();
    }
    analysing_ = true;
    progress_->setFormat(total > 0 ? tr("%1 · block %v / %m").arg(what) : what);  // a computation that counts no blocks: its name
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(0);
    setStatus(outcome_.isEmpty() ? tr("Computing the %1… (Esc cancels)").arg(what)
                                 : tr("%1 Computing the %2… (Esc cancels)").arg(outcome_, what));
    setRunning(running_);
}

void TracePanel::analysisProgress(int done, int total) {
    if (!analysing_) return;
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
}

void TracePanel::analysisEnded(const QString& note, bool warning) {
    if (!analysing_) return;
    analysing_ = false;
    progress_->setFormat(traceBarFormat_);
    // the bar counts the trace's blocks again (a graph's 1411 feature rows are not "block 1411 / 1411")
    progress_->setRange(0, std::max(1, traceBar_.first));
    progress_->setValue(traceBar_.second);
    setStatus(note.isEmpty() ? outcome_ : outcome_.isEmpty() ? note : outcome_ + " " + note,
              (!note.isEmpty() && warning) || outcomeWarning_ ? QStringLiteral("#8a5a00") : QString());
    setRunning(running_);
}

void TracePanel::setStatus(const QString& text, const QString& colour) {
    status_->setStyleSheet(colour.isEmpty() ? QString() : QStringLiteral("color: ") + colour);
    status_->setText(text);
    fitStatus();
}

void TracePanel::fitStatus() {
    // the label's height for its width (word wrap): the dock keeps at least that (QMainWindow honours minimum sizes)
    const int width = status_->width() > 0 ? status_->width() : std::max(1, this->width() - 8);
    const int line = fontMetrics().lineSpacing();  // at most six lines: a longer message keeps the prompts in view
    status_->setMinimumHeight(std::clamp(status_->heightForWidth(width), line, 6 * line + 4));
}

void TracePanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitStatus();
}

}  // namespace nnscope
