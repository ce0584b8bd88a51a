// SPDX-License-Identifier: MIT
#include "widgets/panels/pinnedcards.h"
#include "widgets/views/plaintext.h"

#include "core/io/export.h"
#include "core/pages/interop.h"

#include <torch/types.h>

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollArea>
#include <QStyle>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nnscope {

namespace {
/// Above this many elements the values are not put on the clipboard as CSV (Export… writes a file instead).
constexpr int64_t kClipboardElements = 2'000'000;

QString number(double v) { return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', 5); }

QString dtypeLabel(torch::ScalarType type) {
    switch (type) {
        case torch::kFloat32: return "float32";
        case torch::kBFloat16: return "bfloat16";
        case torch::kFloat16: return "float16";
        case torch::kFloat64: return "float64";
        case torch::kInt64: return "int64";
        default: return QString(c10::toString(type));
    }
}
}  // namespace

// ---- Sparkline ------------------------------------------------------------------------------------------------

Sparkline::Sparkline(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void Sparkline::setValues(std::vector<double> values, QStringList labels) {
    values_ = std::move(values);
    labels_ = std::move(labels);
    hovered_ = -1;
    update();
}

QVector<QPointF> Sparkline::points() const {
    QVector<QPointF> out;
    double lo = INFINITY, hi = -INFINITY;
    for (double v : values_)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!std::isfinite(lo)) return out;
    const QRectF area = QRectF(rect()).adjusted(3, 3, -3, -3);
    const double span = hi > lo ? hi - lo : 1.0;
    const int n = static_cast<int>(values_.size());
    for (int i = 0; i < n; ++i) {
        const double v = values_[static_cast<size_t>(i)];
        if (!std::isfinite(v)) continue;
        const double x = n > 1 ? area.left() + area.width() * i / (n - 1) : area.center().x();
        const double y = hi > lo ? area.bottom() - area.height() * (v - lo) / span : area.center().y();
        out.append({x, y});
    }
    return out;
}

void Sparkline::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    p.setPen(QPen(palette().mid().color(), 1));
    p.drawRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5));
    const QVector<QPointF> pts = points();
    if (pts.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, values_.empty() ? tr("no position axis") : tr("no finite value"));
        return;
    }
    const QColor line = palette().color(QPalette::Highlight);
    p.setPen(QPen(line, 1.5));
    if (pts.size() == 1) p.drawEllipse(pts.front(), 2, 2);
    else p.drawPolyline(pts.data(), static_cast<int>(pts.size()));
    if (hovered_ >= 0 && hovered_ < static_cast<int>(values_.size())) {
        const QVector<QPointF> all = points();
        // the hovered point: its index among the finite values
        int k = 0;
        for (int i = 0; i < hovered_; ++i) k += std::isfinite(values_[static_cast<size_t>(i)]) ? 1 : 0;
        if (std::isfinite(values_[static_cast<size_t>(hovered_)]) && k < all.size()) {
            p.setBrush(line);
            p.drawEllipse(all[k], 3, 3);
        }
    }
}

void Sparkline::mouseMoveEvent(QMouseEvent* event) {
    const int n = static_cast<int>(values_.size());
    if (n == 0) return;
    const QRectF area = QRectF(rect()).adjusted(3, 3, -3, -3);
    const double x = event->position().x();
    const int i = n > 1 ? std::clamp(static_cast<int>(std::lround((x - area.left()) / area.width() * (n - 1))), 0, n - 1) : 0;
    if (i != hovered_) {
        hovered_ = i;
        update();
    }
    const QString token = i < labels_.size() ? QStringLiteral(" “%1”").arg(labels_[i]) : QString();
    QToolTip::showText(event->globalPosition().toPoint(),
                       plainToolTip(tr("position %1%2: norm %3").arg(i).arg(token, number(values_[static_cast<size_t>(i)]))), this);
}

void Sparkline::leaveEvent(QEvent*) {
    hovered_ = -1;
    update();
}

// ---- ValueCard ------------------------------------------------------------------------------------------------

ValueCard::ValueCard(const PartInfo& info, QWidget* parent) : QFrame(parent), key_(*info.key), info_(info) {
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    // a zero-width space after each dot lets a long path wrap at its dots rather than anywhere
    auto* title = new QLabel(QString("<b><tt>%1</tt></b>").arg(info.path.toHtmlEscaped().replace(".", QString(".") + QChar(0x200B))), this);
    title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    title->setWordWrap(true);
    auto* body = new QLabel(this);
    body->setWordWrap(true);
    body->setTextFormat(Qt::RichText);
    body->setText(QString("%1<br><span style='color:%5'>%2</span><br><i>%3</i> %4")
                      .arg(info.layout.toHtmlEscaped(), info.description.toHtmlEscaped(), tr("read at:"), info.readAt.toHtmlEscaped(),
                           palette().color(QPalette::PlaceholderText).name()));
    hookLabel_ = new QLabel(this);
    hookLabel_->setWordWrap(true);
    hookLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    stats_label_ = new QLabel(this);
    stats_label_->setWordWrap(true);
    stats_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    sparkTitle_ = new QLabel(this);
    sparkline_ = new Sparkline(this);
    // tool buttons sized to their text, so that a card fits the dock's width
    auto button = [this](const QString& text, const QString& tip) {
        auto* b = new QToolButton(this);
        b->setText(text);
        b->setToolTip(tip);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        return b;
    };
    plot_ = button(tr("Plot"), tr("Open this value as a heatmap in a new tab"));
    export_ = button(tr("Export…"), tr("Write this value to .npy, .safetensors or .csv"));
    unpin_ = button(QStringLiteral("✕"), tr("Unpin"));
    unpin_->setAutoRaise(true);
    edit_ = button(tr("Edit…"), tr("Change this value in the next traces: set, add or scale it at chosen positions, heads or neurons"));
    edit_->setEnabled(info.key && !valueInfo(info.key->value).readOnly);  // next_token_probs, input_size cannot be edited
    copy_ = new QToolButton(this);
    copy_->setText(tr("Copy"));
    copy_->setPopupMode(QToolButton::InstantPopup);
    copy_->setToolTip(tr("Copy the value path, the values as CSV, or an nnterp snippet that reads the same value"));
    copyMenu_ = new QMenu(copy_);
    QAction* copyPath = copyMenu_->addAction(tr("Value path"));
    copyPath->setObjectName("copyPath");
    QAction* copyCsv = copyMenu_->addAction(tr("Values as CSV"));
    copyCsv->setObjectName("copyCsv");
    QAction* copySnippet = copyMenu_->addAction(tr("nnterp snippet"));
    copySnippet->setObjectName("copyNnterp");
    copy_->setMenu(copyMenu_);
    connect(copyPath, &QAction::triggered, this, [this] { copy(tr("the path"), pathText()); });
    connect(copyCsv, &QAction::triggered, this, [this] {
        if (!value_.defined()) return emit message(tr("%1 has not been read yet: nothing to copy.").arg(info_.path));
        if (value_.numel() > kClipboardElements)
            return emit message(tr("%1 has %2 elements, too many for the clipboard: use Export… to write a .csv file.")
                                    .arg(info_.path).arg(value_.numel()));
        copy(tr("the values of %1 as CSV").arg(info_.path), csvText());
    });
    connect(copySnippet, &QAction::triggered, this, [this] { copy(tr("an nnterp snippet for %1").arg(info_.path), nnterpText()); });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(plot_);
    buttons->addWidget(export_);
    buttons->addWidget(edit_);
    buttons->addWidget(copy_);
    buttons->addStretch(1);
    buttons->addWidget(unpin_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(title);
    layout->addWidget(body);
    layout->addWidget(hookLabel_);
    layout->addWidget(status_);
    layout->addWidget(stats_label_);
    layout->addWidget(sparkTitle_);
    layout->addWidget(sparkline_);
    layout->addLayout(buttons);
    connect(plot_, &QToolButton::clicked, this, [this] { emit plotRequested(key_); });
    connect(export_, &QToolButton::clicked, this, [this] { emit exportRequested(key_); });
    connect(unpin_, &QToolButton::clicked, this, [this] { emit unpinRequested(key_); });
    connect(edit_, &QToolButton::clicked, this, [this] { emit editRequested(key_); });
    setModel(nullptr);
    setSnapshot(nullptr);
}

void ValueCard::setModel(ModelPtr model) {
    model_ = std::move(model);
    hook_.clear();
    hookNote_.clear();
    if (model_)
        if (auto h = transformerLensHook(model_->family(), model_->config(), key_)) {
            hook_ = QString::fromStdString(h->name);
            QStringList notes;
            if (h->headsOnAxis2) notes << tr("heads on axis 2: [batch, pos, head_index, d_head]");
            if (!h->note.empty()) notes << QString::fromStdString(h->note);
            hookNote_ = notes.join("; ");
        }
    hookLabel_->setText(hookText());
    hookLabel_->setVisible(model_ != nullptr);
}

QString ValueCard::hookText() const {
    if (hook_.isEmpty())
        return tr("<span style='color:%1'>TransformerLens: no hook holds this value</span>").arg(palette().color(QPalette::PlaceholderText).name());
    QString name = hook_.toHtmlEscaped();
    name.replace(".", QString(".") + QChar(0x200B));  // a long hook name wraps at its dots
    return tr("TransformerLens: <tt>%1</tt>%2").arg(name, hookNote_.isEmpty() ? QString() : QString("<br><small>%1</small>").arg(hookNote_.toHtmlEscaped()));
}

void ValueCard::setSnapshot(const TraceSnapshot* snapshot, int row, const QString& unread) {
    value_ = snapshot ? snapshot->result.value(key_) : torch::Tensor();
    prompts_ = snapshot ? snapshot->result.batch.prompts : std::vector<std::string>{};
    if (snapshot && snapshot->model && snapshot->model != model_) setModel(snapshot->model);
    const bool traced = value_.defined();
    plot_->setEnabled(traced);
    export_->setEnabled(traced);
    copyMenu_->actions().at(1)->setEnabled(traced);
    copyMenu_->actions().at(2)->setEnabled(model_ != nullptr);
    stats_label_->setVisible(traced);
    sparkTitle_->setVisible(traced);
    sparkline_->setVisible(traced);
    if (!traced) {
        stats_ = {};
        sparkline_->setValues({});
        status_->setText(QString("<span style='color:#8a5a00'>%1</span>")
                             .arg((unread.isEmpty() ? tr("Not read yet: the next trace reads it.") : unread).toHtmlEscaped()));
        return;
    }
    stats_ = valueStats(value_);
    const ValueInfo& vi = valueInfo(key_.value);
    QStringList dims;
    const bool named = vi.axes.size() == stats_.shape.size();
    for (size_t a = 0; a < stats_.shape.size(); ++a)
        dims << (named ? QString("%1 %2").arg(vi.axes[a]).arg(stats_.shape[a]) : QString::number(stats_.shape[a]));
    status_->setText(tr("traced: [%1] %2").arg(dims.join(", "), dtypeLabel(stats_.dtype)));
    const QString bad = "<span style='color:#b00020'><b>%1</b></span>";
    stats_label_->setText(tr("min %1 · max %2 · mean %3<br>NaN %4 · Inf %5")
                              .arg(number(stats_.min), number(stats_.max), number(stats_.mean))
                              .arg(stats_.nanCount ? bad.arg(stats_.nanCount) : QString::number(stats_.nanCount))
                              .arg(stats_.infCount ? bad.arg(stats_.infCount) : QString::number(stats_.infCount)));
    row = std::clamp(row, 0, std::max(0, snapshot->numPrompts() - 1));
    std::vector<double> norms;
    try {
        norms = positionNorms(*snapshot->model, snapshot->result, key_, row);
    } catch (const std::exception&) {
        norms.clear();
    }
    if (norms.empty()) {
        sparkTitle_->setText(tr("<small>no position axis: no norm per position</small>"));
        sparkline_->setValues({});
        sparkline_->hide();
    } else {
        auto [lo, hi] = std::minmax_element(norms.begin(), norms.end());
        sparkTitle_->setText(tr("<small>norm per position, prompt %1 (%2 to %3)</small>").arg(row + 1).arg(number(*lo), number(*hi)));
        sparkline_->setValues(norms, snapshot->tokens.at(static_cast<size_t>(row)));
    }
}

QString ValueCard::statusText() const { return status_->text(); }

QString ValueCard::csvText() const {
    if (!value_.defined()) return {};
    std::vector<std::string> axes;
    for (const char* a : valueInfo(key_.value).axes) axes.emplace_back(a);
    return QString::fromStdString(nnscope::csvText(value_, axes));
}

QString ValueCard::nnterpText() const {
    if (!model_) return {};
    std::vector<std::string> prompts = prompts_;
    if (prompts.empty()) prompts = {"Once upon a time"};
    return QString::fromStdString(nnterpSnippet(*model_, key_, prompts));
}

void ValueCard::copy(const QString& what, const QString& text) {
    if (text.isEmpty()) return emit message(tr("Nothing to copy for %1 yet.").arg(info_.path));
    QApplication::clipboard()->setText(text);
    emit message(tr("Copied %1 to the clipboard.").arg(what));
}

// ---- FeatureCard ----------------------------------------------------------------------------------------------

FeatureCard::FeatureCard(const QString& dir, const QString& name, const QString& site, int64_t feature, QWidget* parent)
    : QFrame(parent), dir_(dir), feature_(feature) {
    setFrameShape(QFrame::StyledPanel);
    auto* title = new QLabel(tr("<b>feature %1</b> · %2").arg(feature).arg(name.toHtmlEscaped()), this);
    title->setToolTip(dir);
    auto* where = new QLabel(tr("sparse dictionary at <tt>%1</tt>").arg(site.toHtmlEscaped()), this);
    where->setWordWrap(true);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setTextFormat(Qt::PlainText);  // a token such as "<s>" is text
    sparkline_ = new Sparkline(this);
    show_ = new QToolButton(this);
    show_->setText(tr("Show"));
    show_->setToolTip(tr("Select this feature in the Features view"));
    unpin_ = new QToolButton(this);
    unpin_->setText(QStringLiteral("✕"));
    unpin_->setAutoRaise(true);
    unpin_->setToolTip(tr("Unpin"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(show_);
    buttons->addStretch(1);
    buttons->addWidget(unpin_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(title);
    layout->addWidget(where);
    layout->addWidget(status_);
    layout->addWidget(sparkline_);
    layout->addLayout(buttons);
    connect(show_, &QToolButton::clicked, this, [this] { emit showRequested(dir_, feature_); });
    connect(unpin_, &QToolButton::clicked, this, [this] { emit unpinRequested(dir_, feature_); });
    setRuns(nullptr, 0);
}

void FeatureCard::setRuns(const FeatureRuns* runs, int row) {
    const DictionaryRun* run = nullptr;
    if (runs)
        for (const DictionaryRun& d : runs->dictionaries)
            if (QString::fromStdString(d.attached.dictionary->dir) == dir_) run = &d;
    if (!run || run->rows.empty() || row >= static_cast<int>(run->rows.size())) {
        status_->setText(run && !run->error.isEmpty() ? run->error : tr("Run a trace with the dictionary attached to see the feature's activation."));
        sparkline_->setValues({});
        return;
    }
    const torch::Tensor acts = run->rows[static_cast<size_t>(row)].features.index({torch::indexing::Slice(), feature_}).to(torch::kFloat64).contiguous();
    std::vector<double> values(acts.data_ptr<double>(), acts.data_ptr<double>() + acts.numel());
    const QStringList tokens = runs->snapshot->tokens.at(static_cast<size_t>(row));
    int best = 0, active = 0;
    for (int t = 0; t < static_cast<int>(values.size()); ++t) {
        if (values[static_cast<size_t>(t)] > values[static_cast<size_t>(best)]) best = t;
        active += values[static_cast<size_t>(t)] > 0;
    }
    status_->setText(tr("prompt %1: active on %2 of %3 tokens; largest %4 at position %5 “%6”")
                         .arg(row + 1)
                         .arg(active)
                         .arg(values.size())
                         .arg(values.empty() ? 0.0 : values[static_cast<size_t>(best)], 0, 'g', 4)
                         .arg(best)
                         .arg(tokens.value(best)));
    sparkline_->setValues(std::move(values), tokens);
}

QString FeatureCard::statusText() const { return status_->text(); }

// ---- PinnedCardsPanel -----------------------------------------------------------------------------------------

PinnedCardsPanel::PinnedCardsPanel(QWidget* parent) : QWidget(parent) {
    auto* inner = new QWidget;
    list_ = new QVBoxLayout(inner);
    list_->setContentsMargins(4, 4, 4, 4);
    empty_ = new QLabel(tr("Click a part of the block diagram (or double-click a row of the support table or the printout) "
                           "to pin its value here. A card shows the value's statistics and its norm per position, and can "
                           "plot, export or copy it."), inner);
    empty_->setWordWrap(true);
    empty_->setForegroundRole(QPalette::PlaceholderText);
    list_->addWidget(empty_);
    list_->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(inner);
    scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
}

void PinnedCardsPanel::setModel(ModelPtr model) {
    model_ = std::move(model);
    for (ValueCard* c : cards_) c->setModel(model_);
}

bool PinnedCardsPanel::pin(const PartInfo& info) {
    if (!info.key || card(*info.key)) return false;
    auto* c = new ValueCard(info);
    c->setModel(model_);
    c->setSnapshot(snapshot_.get(), row_, unread_);
    list_->insertWidget(list_->count() - 1, c);  // above the stretch
    cards_.push_back(c);
    empty_->hide();
    connect(c, &ValueCard::plotRequested, this, &PinnedCardsPanel::plotRequested);
    connect(c, &ValueCard::exportRequested, this, &PinnedCardsPanel::exportRequested);
    connect(c, &ValueCard::editRequested, this, &PinnedCardsPanel::editRequested);
    connect(c, &ValueCard::message, this, &PinnedCardsPanel::message);
    connect(c, &ValueCard::unpinRequested, this, &PinnedCardsPanel::unpin);
    emit pinsChanged();
    return true;
}

void PinnedCardsPanel::unpin(const ValueKey& key) {
    ValueCard* c = card(key);
    if (!c) return;
    cards_.erase(std::find(cards_.begin(), cards_.end(), c));
    c->deleteLater();
    empty_->setVisible(cards_.empty() && featureCards_.empty());
    emit pinsChanged();
}

bool PinnedCardsPanel::pinFeature(const QString& dir, const QString& name, const QString& site, int64_t feature) {
    for (FeatureCard* c : featureCards_)
        if (c->dir() == dir && c->feature() == feature) return false;
    auto* c = new FeatureCard(dir, name, site, feature);
    c->setRuns(featureRuns_.get(), row_);
    list_->insertWidget(list_->count() - 1, c);  // above the stretch
    featureCards_.push_back(c);
    empty_->hide();
    connect(c, &FeatureCard::showRequested, this, &PinnedCardsPanel::featureShowRequested);
    connect(c, &FeatureCard::unpinRequested, this, [this](const QString& d, qint64 f) { unpinFeature(d, f); });
    return true;
}

void PinnedCardsPanel::unpinFeature(const QString& dir, int64_t feature) {
    for (auto it = featureCards_.begin(); it != featureCards_.end(); ++it)
        if ((*it)->dir() == dir && (*it)->feature() == feature) {
            (*it)->deleteLater();
            featureCards_.erase(it);
            break;
        }
    empty_->setVisible(cards_.empty() && featureCards_.empty());
}

void PinnedCardsPanel::setFeatureRuns(FeatureRunsPtr runs) {
    featureRuns_ = std::move(runs);
    for (FeatureCard* c : featureCards_) c->setRuns(featureRuns_.get(), row_);
}

void PinnedCardsPanel::clear() {
    for (ValueCard* c : cards_) c->deleteLater();
    cards_.clear();
    for (FeatureCard* c : featureCards_) c->deleteLater();
    featureCards_.clear();
    featureRuns_.reset();
    empty_->show();
    emit pinsChanged();
}

std::vector<ValueKey> PinnedCardsPanel::keys() const {
    std::vector<ValueKey> out;
    for (ValueCard* c : cards_) out.push_back(c->key());
    return out;
}

ValueCard* PinnedCardsPanel::card(const ValueKey& key) const {
    for (ValueCard* c : cards_)
        if (c->key() == key) return c;
    return nullptr;
}

void PinnedCardsPanel::refreshCards() {
    for (ValueCard* c : cards_) c->setSnapshot(snapshot_.get(), row_, unread_);
    for (FeatureCard* c : featureCards_) c->setRuns(featureRuns_.get(), row_);
}

void PinnedCardsPanel::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    refreshCards();
}

void PinnedCardsPanel::setPrompt(int row) {
    if (row == row_) return;
    row_ = row;
    refreshCards();
}

void PinnedCardsPanel::setUnreadText(const QString& text) {
    if (text == unread_) return;
    unread_ = text;
    for (ValueCard* c : cards_)
        if (!c->hasValue()) c->setSnapshot(snapshot_.get(), row_, unread_);
}

}  // namespace nnscope
