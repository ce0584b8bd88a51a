// SPDX-License-Identifier: MIT
#include "widgets/views/familyview.h"

#include "core/model/error.h"
#include "core/pages/family_page.h"
#include "core/io/safetensors.h"
#include "widgets/panels/palette.h"

#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace nnscope {

FamilyView::FamilyView(QWidget* parent) : QWidget(parent) {
    status_ = new QLabel(tr("No checkpoint open."), this);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // the prompt is text
    status_->setWordWrap(true);  // a long message (a refused prompt) wraps instead of widening the view over the docks
    prompt_ = new QLineEdit(QString::fromUtf8(kDefaultCheckPrompt), this);
    prompt_->setToolTip(tr("The prompt the notes' checks trace (at least 3 tokens)"));
    prompt_->setClearButtonEnabled(true);
    run_ = new QPushButton(tr("Run checks"), this);
    run_->setToolTip(tr("Run every note's check on the loaded checkpoint and this prompt"));
    save_ = new QPushButton(tr("Save page…"), this);
    save_->setToolTip(tr("Write the page, with the check results, as Markdown or HTML"));
    run_->setEnabled(false);
    save_->setEnabled(false);
    browser_ = new QTextBrowser(this);
    browser_->setOpenExternalLinks(true);

    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Check prompt"), this));
    row->addWidget(prompt_, 1);
    row->addWidget(run_);
    row->addWidget(save_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(row);
    layout->addWidget(status_);
    layout->addWidget(browser_, 1);

    auto request = [this] {
        if (model_ && run_->isEnabled()) emit runChecksRequested(checkPrompt());
    };
    connect(run_, &QPushButton::clicked, this, request);
    connect(prompt_, &QLineEdit::returnPressed, this, request);
    connect(save_, &QPushButton::clicked, this, [this] {
        if (!model_) return;
        const QString name = QString::fromStdString(model_->family().modelType) + "-family.html";
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the family page"), name,
                                                          tr("HTML (*.html);;Markdown (*.md)"));
        if (path.isEmpty()) return;
        const QString error = savePage(path);
        if (!error.isEmpty()) status_->setText(error);
    });
}

void FamilyView::setModel(ModelPtr model) {
    model_ = std::move(model);
    checks_.reset();
    run_->setEnabled(model_ != nullptr);
    save_->setEnabled(model_ != nullptr);
    status_->setText(model_ ? tr("Checks not run yet.") : tr("No checkpoint open."));
    render();
}

void FamilyView::setChecks(CheckResultsPtr results, const QString& prompt) {
    checks_ = std::move(results);
    run_->setEnabled(model_ != nullptr);
    if (checks_) {
        const CheckSummary s = summarizeChecks(*checks_);
        status_->setText(tr("%1 ✔ · %2 ✗ · %3 measured · %4 not applicable — on “%5”")
                             .arg(s.passed)
                             .arg(s.failed)
                             .arg(s.figures)
                             .arg(s.skipped)
                             .arg(prompt.toHtmlEscaped()));
        status_->setStyleSheet(s.failed ? "color: #a00010;" : QString());
    }
    render();
}

void FamilyView::setRunning() {
    run_->setEnabled(false);
    status_->setStyleSheet(QString());
    status_->setText(tr("Running the checks on the checkpoint…"));
}

void FamilyView::setFailed(const QString& message) {
    run_->setEnabled(model_ != nullptr);
    status_->setStyleSheet("color: #a00010;");
    status_->setText(tr("The checks could not run: %1").arg(message));
    if (checks_) {  // the page would show another prompt's results under this message
        checks_.reset();
        render();
    }
}

void FamilyView::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && model_) render();
}

QString FamilyView::checkPrompt() const { return prompt_->text(); }
void FamilyView::setCheckPrompt(const QString& prompt) { prompt_->setText(prompt); }

void FamilyView::render() {
    const int scroll = browser_->verticalScrollBar()->value();
    const PageColours colours = isDark(palette()) ? PageColours::Dark : PageColours::Light;
    html_ = model_ ? QString::fromStdString(familyPage(*model_, checks_ ? *checks_ : std::vector<CheckResult>{}, PageFormat::Html, colours))
                   : QString();
    browser_->setHtml(html_);
    browser_->verticalScrollBar()->setValue(scroll);  // new results keep the reader's place
}

QString FamilyView::savePage(const QString& path) const {
    if (!model_) return tr("No checkpoint is open.");
    const QString suffix = QFileInfo(path).suffix().toLower();
    PageFormat format;
    try {
        format = parsePageFormat(suffix.toStdString());
    } catch (const Error&) {
        return tr("%1: the page is written as .md (Markdown) or .html, not .%2.").arg(path, suffix);
    }
    try {
        writeFileAtomically(path.toStdString(), familyPage(*model_, checks_ ? *checks_ : std::vector<CheckResult>{}, format));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace nnscope
