// SPDX-License-Identifier: MIT
#include "widgets/views/generateview.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

namespace nnscope {
namespace {

/// The generation as HTML: the prompt grey, the new tokens black, those from `differFrom` on (where the other
/// continuation parts) on a yellow ground, and the stop reason.
QString generationHtml(const Model& m, const Generation& g, int64_t differFrom) {
    QString html = "<p style='white-space: pre-wrap'>";
    const Tokenizer* tok = m.tokenizer();
    // each token's text is what it adds to the decoded prefix (pieces that only make sense joined, such as byte
    // tokens, are right); the prefix decoded for one token is the one the next starts from
    std::string before;
    for (size_t i = 0; i < g.ids.size(); ++i) {
        QString piece;
        if (!tok) {
            piece = QString("#%1 ").arg(g.ids[i]);
        } else if (!tok->knows(g.ids[i])) {
            piece = QString::fromStdString(Tokenizer::unknownIdLabel(g.ids[i]));  // a padded vocabulary's id: no text of its own
        } else {
            const std::string after = tok->decode(std::vector<int64_t>(g.ids.begin(), g.ids.begin() + static_cast<long>(i) + 1), true);
            piece = QString::fromStdString(after.rfind(before, 0) == 0 ? after.substr(before.size()) : tok->tokenLabel(g.ids[i]));
            before = after;
        }
        const QString text = piece.toHtmlEscaped();
        const bool isPrompt = static_cast<int64_t>(i) < g.promptLength;
        if (isPrompt) html += "<span style='color:#777'>" + text + "</span>";
        else if (differFrom >= 0 && static_cast<int64_t>(i) >= differFrom) html += "<span style='background:#fff2a8'><b>" + text + "</b></span>";
        else html += "<b>" + text + "</b>";
    }
    html += "</p><p style='color:#555'>" +
            QObject::tr("%1 new tokens; stopped at %2.")
                .arg(static_cast<int64_t>(g.ids.size()) - g.promptLength)
                .arg(g.stopReason == "eos" ? QObject::tr("an end-of-sequence token") : QObject::tr("the token limit")) +
            "</p>";
    return html;
}

}  // namespace

GenerateView::GenerateView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    prompt_ = new QLineEdit(content);
    prompt_->setPlaceholderText(tr("The prompt to continue"));
    maxNew_ = new QSpinBox(content);
    maxNew_->setRange(0, 4096);
    maxNew_->setValue(32);
    maxNew_->setPrefix(tr("new tokens "));
    sample_ = new QCheckBox(tr("sample"), content);
    sample_->setToolTip(tr("Sample from the distribution (temperature, top-k, top-p) instead of taking the most probable token"));
    temperature_ = new QDoubleSpinBox(content);
    temperature_->setRange(0.01, 10.0);
    temperature_->setSingleStep(0.1);
    temperature_->setValue(1.0);
    temperature_->setPrefix(tr("temperature "));
    topK_ = new QSpinBox(content);
    topK_->setRange(0, 1000000);
    topK_->setValue(50);
    topK_->setPrefix(tr("top-k "));
    topK_->setToolTip(tr("Keep the k most probable tokens (0: all)"));
    topP_ = new QDoubleSpinBox(content);
    topP_->setRange(0.01, 1.0);
    topP_->setSingleStep(0.05);
    topP_->setValue(1.0);
    topP_->setPrefix(tr("top-p "));
    seed_ = new QSpinBox(content);
    seed_->setRange(0, 2147483647);
    seed_->setPrefix(tr("seed "));
    seed_->setToolTip(tr("The same seed gives the same text; the edited and unedited runs share it"));
    run_ = new QPushButton(tr("Generate"), content);
    cancel_ = new QPushButton(tr("Cancel"), content);
    cancel_->setEnabled(false);
    status_ = new QLabel(content);
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // tokens and prompts such as "<s>" are text
    uneditedTitle_ = new QLabel(tr("<b>Unedited</b>"), content);
    editedTitle_ = new QLabel(tr("<b>Continuation</b>"), content);
    unedited_ = new QTextBrowser(content);
    edited_ = new QTextBrowser(content);

    // two short rows, so that the view never widens the window
    auto* settingsRow = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{maxNew_, run_, cancel_, sample_}) settingsRow->addWidget(w);
    settingsRow->addStretch(1);
    auto* samplingRow = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{temperature_, topK_, topP_, seed_}) samplingRow->addWidget(w);
    samplingRow->addStretch(1);
    auto* texts = new QGridLayout;
    texts->addWidget(uneditedTitle_, 0, 0);
    texts->addWidget(editedTitle_, 0, 1);
    texts->addWidget(unedited_, 1, 0);
    texts->addWidget(edited_, 1, 1);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(prompt_);
    layout->addLayout(settingsRow);
    layout->addLayout(samplingRow);
    layout->addWidget(status_);
    layout->addLayout(texts, 1);
    setContent(content);
    showContent();
    promptCombo_->hide();
    auto samplingEnabled = [this] {
        for (QWidget* w : std::initializer_list<QWidget*>{temperature_, topK_, topP_, seed_}) w->setEnabled(sample_->isChecked());
    };
    connect(sample_, &QCheckBox::toggled, this, samplingEnabled);
    samplingEnabled();
    connect(run_, &QPushButton::clicked, this, [this] {
        if (!running_) emit generateRequested(request());
    });
    connect(prompt_, &QLineEdit::returnPressed, run_, &QPushButton::click);
    connect(cancel_, &QPushButton::clicked, this, &GenerateView::cancelRequested);
    setModel(nullptr);
}

void GenerateView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    if (snapshot_ && prompt_->text().isEmpty() && snapshot_->numPrompts() > 0) prompt_->setText(snapshot_->prompt(0));
    showContent();
}

void GenerateView::setModel(ModelPtr model) {
    model_ = std::move(model);
    run_->setEnabled(model_ != nullptr && !running_);
    result_.reset();
    edited_->clear();
    unedited_->clear();
    uneditedTitle_->hide();
    unedited_->hide();
    if (model_) {
        const GenerateOptions d = generationDefaults(*model_);
        setSampling(d.sample, d.temperature, static_cast<int>(std::min<int64_t>(d.topK, 1000000)), d.topP, seed_->value());
        maxNew_->setValue(std::clamp(d.maxNewTokens, 0, 4096));
    }
    status_->setStyleSheet(QString());
    status_->setText(model_ ? tr("Continues the prompt greedily or sampled. The Interventions dock's active edits apply at every step "
                                 "(positions count from the prompt; `new` marks the generated tokens); with any, the unedited "
                                 "continuation is shown beside, with the same seed.")
                            : tr("Open a checkpoint first."));
}

void GenerateView::setPrompt(const QString& prompt) { prompt_->setText(prompt); }

void GenerateView::setSampling(bool sample, double temperature, int topK, double topP, quint64 seed) {
    sample_->setChecked(sample);
    temperature_->setValue(temperature);
    topK_->setValue(topK);
    topP_->setValue(topP);
    seed_->setValue(static_cast<int>(std::min<quint64>(seed, 2147483647)));
}

void GenerateView::setMaxNewTokens(int n) { maxNew_->setValue(n); }

GenerateRequest GenerateView::request() const {
    GenerateRequest r;
    r.prompt = prompt_->text();
    r.options.maxNewTokens = maxNew_->value();
    r.options.sample = sample_->isChecked();
    r.options.temperature = temperature_->value();
    r.options.topK = topK_->value();
    r.options.topP = topP_->value();
    r.options.seed = static_cast<uint64_t>(seed_->value());
    return r;
}

void GenerateView::setRunning(bool running) {
    running_ = running;
    run_->setEnabled(!running && model_ != nullptr);
    cancel_->setEnabled(running);
    if (running) {
        status_->setStyleSheet(QString());
        status_->setText(tr("Generating…"));
    }
}

void GenerateView::setResult(GenerationPairPtr result) {
    setRunning(false);
    result_ = std::move(result);
    if (!result_ || !model_) return;
    const Generation& e = result_->edited;
    int64_t differ = -1;
    if (result_->unedited) {
        const auto& u = result_->unedited->ids;
        const size_t n = std::min(u.size(), e.ids.size());
        size_t i = static_cast<size_t>(e.promptLength);
        while (i < n && u[i] == e.ids[i]) ++i;
        if (i < std::max(u.size(), e.ids.size())) differ = static_cast<int64_t>(i);
    }
    edited_->setHtml(generationHtml(*model_, e, differ));
    const bool compare = result_->unedited.has_value();
    uneditedTitle_->setVisible(compare);
    unedited_->setVisible(compare);
    if (compare) {
        unedited_->setHtml(generationHtml(*model_, *result_->unedited, differ));
        editedTitle_->setText(tr("<b>With %n intervention(s)</b>: %1", nullptr, result_->interventions.size())
                                  .arg(result_->interventions.join("; ").toHtmlEscaped()));
    } else {
        editedTitle_->setText(tr("<b>Continuation</b> (no interventions active)"));
    }
    const GenerateOptions& o = result_->options;
    status_->setStyleSheet(QString());
    status_->setText((o.sample ? tr("Sampled: temperature %1, top-k %2, top-p %3, seed %4.").arg(o.temperature).arg(o.topK).arg(o.topP).arg(o.seed)
                               : tr("Greedy (the most probable token at each step).")) +
                     (compare ? (differ >= 0 ? tr(" The continuations part at token %1 (marked).").arg(differ - e.promptLength)
                                             : tr(" The interventions did not change the text."))
                              : QString()));
}

void GenerateView::setFailed(const QString& message) {
    setRunning(false);
    status_->setStyleSheet("color: #a00010;");
    status_->setText(message);
}

PlotSource GenerateView::plotSource() const { return {}; }

QMap<QString, QString> GenerateView::settings() const {
    const GenerateRequest r = request();
    return {{"view", "generate"},
            {"view.prompt", r.prompt},
            {"view.max_new_tokens", QString::number(r.options.maxNewTokens)},
            {"view.sample", r.options.sample ? "true" : "false"},
            {"view.temperature", QString::number(r.options.temperature)},
            {"view.top_k", QString::number(r.options.topK)},
            {"view.top_p", QString::number(r.options.topP)},
            {"view.seed", QString::number(r.options.seed)}};
}

}  // namespace nnscope
