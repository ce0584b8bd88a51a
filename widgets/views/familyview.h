// SPDX-License-Identifier: MIT
#pragma once
// The Family view: the family page of the loaded checkpoint (core/pages/family_page.h, the seeds' encyclopedia page
// generated from families/<family>.cpp) in a text browser, with every note's checks (core/pages/checks.h) run on the
// checkpoint. The view never runs the model: it asks for the checks (runChecksRequested) and the window's worker
// thread answers with setChecks. Until then each check reads "not run".
#include "core/pages/checks.h"
#include "widgets/views/tracesnapshot.h"

#include <QWidget>

#include <memory>
#include <vector>

class QLabel;
class QLineEdit;
class QPushButton;
class QTextBrowser;

namespace nnscope {

using CheckResultsPtr = std::shared_ptr<const std::vector<CheckResult>>;

class FamilyView : public QWidget {
    Q_OBJECT
public:
    explicit FamilyView(QWidget* parent = nullptr);

    /// Shows the page of `model` with no check run yet (nullptr: no model, an empty page).
    void setModel(ModelPtr model);
    /// Shows the page with `results`, measured on `prompt`. Results for another model than the current are ignored
    /// by the caller (the window matches request ids).
    void setChecks(CheckResultsPtr results, const QString& prompt);
    /// The checks are running (the button is disabled, the status says so) or failed with `message`.
    void setRunning();
    void setFailed(const QString& message);

    /// The prompt the checks run on (editable; kDefaultCheckPrompt at first).
    QString checkPrompt() const;
    void setCheckPrompt(const QString& prompt);
    /// The page as rendered now (the HTML familyPage wrote, in the palette's colours), and the results shown (nullptr before they arrive).
    const QString& html() const { return html_; }
    CheckResultsPtr checks() const { return checks_; }
    QTextBrowser* browser() const { return browser_; }
    QLabel* statusLabel() const { return status_; }
    QPushButton* runButton() const { return run_; }

    /// Writes the page as Markdown (.md) or HTML (.html/.htm), chosen by the suffix, atomically. Returns an empty
    /// string, or a sentence naming the file and the problem.
    QString savePage(const QString& path) const;

signals:
    /// The user asked for the checks on `prompt` (Run checks, or Return in the prompt field).
    void runChecksRequested(const QString& prompt);

protected:
    void changeEvent(QEvent* event) override;  ///< a palette change recolours the page

private:
    void render();

    ModelPtr model_;
    CheckResultsPtr checks_;
    QString html_;
    QLabel* status_;
    QLineEdit* prompt_;
    QPushButton* run_;
    QPushButton* save_;
    QTextBrowser* browser_;
};

}  // namespace nnscope
