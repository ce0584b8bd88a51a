// SPDX-License-Identifier: MIT
#include "widgets/views/textview.h"
#include "widgets/views/plaintext.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nnscope {

namespace {
constexpr int kPad = 5;       // pixels: left and right of a token's text inside its box
constexpr int kMargin = 8;    // around the text
constexpr int kLineGap = 4;   // between lines of tokens
constexpr int kPromptGap = 14;  // between prompts
const double kNan = std::numeric_limits<double>::quiet_NaN();

/// The axis of a value's layout (after batch) that runs over the prompt's positions: seq, or query for a pattern.
int positionAxis(const ValueInfo& info) {
    for (size_t a = 1; a < info.axes.size(); ++a)
        if (std::strcmp(info.axes[a], "seq") == 0 || std::strcmp(info.axes[a], "query") == 0) return static_cast<int>(a) - 1;
    return -1;
}
}  // namespace

// ---- TokenText ----------------------------------------------------------------------------------------------------

TokenText::TokenText(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    gradient_ = probabilityGradient();
}

void TokenText::setPrompts(std::vector<Prompt> prompts) {
    prompts_ = std::move(prompts);
    layout(width(), true);
    setMinimumHeight(heightForWidth(width()));
    updateGeometry();
    update();
}

void TokenText::setColours(const QCPColorGradient& gradient, QCPRange range) {
    gradient_ = gradient;
    range_ = range;
    update();
}

QColor TokenText::colourOf(double value) const {
    if (std::isnan(value)) return palette().color(QPalette::Base);
    return QColor::fromRgb(gradient_.color(value, range_));
}

QString TokenText::display(const QString& label) const {
    QString s = label;
    s.replace(QStringLiteral("␣"), QStringLiteral(" "));  // the box shows where the token starts and ends
    s.replace(QStringLiteral("\\n"), QStringLiteral("↵"));
    return s.isEmpty() ? QStringLiteral(" ") : s;
}

int TokenText::layout(int width, bool store) {
    const QFontMetrics fm = fontMetrics();
    const int lineHeight = fm.height() + 6;
    const int right = std::max(width - kMargin, kMargin + 40);
    if (store) {
        rects_.assign(prompts_.size(), {});
        titles_.assign(prompts_.size(), QRect());
    }
    int y = kMargin;
    for (size_t r = 0; r < prompts_.size(); ++r) {
        const Prompt& p = prompts_[r];
        if (store) titles_[r] = QRect(kMargin, y, right - kMargin, fm.height());
        y += fm.height() + 4;
        int x = kMargin;
        for (int i = 0; i < p.tokens.size(); ++i) {
            const int w = fm.horizontalAdvance(display(p.tokens[i])) + 2 * kPad;
            if (x > kMargin && x + w > right) {
                x = kMargin;
                y += lineHeight + kLineGap;
            }
            if (store) rects_[r].push_back(QRect(x, y, w, lineHeight));
            x += w;
            if (p.tokens[i].contains(QStringLiteral("\\n")) && i + 1 < p.tokens.size()) {  // a newline token ends the line
                x = kMargin;
                y += lineHeight + kLineGap;
            }
        }
        y += lineHeight + kPromptGap;
    }
    return y;
}

int TokenText::heightForWidth(int width) const { return const_cast<TokenText*>(this)->layout(width, false); }

QSize TokenText::sizeHint() const { return {600, heightForWidth(600)}; }

void TokenText::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    layout(width(), true);
    const int h = heightForWidth(width());
    if (minimumHeight() != h) setMinimumHeight(h);  // the scroll area scrolls a long batch
}

QRect TokenText::tokenRect(int row, int position) const {
    if (row < 0 || row >= static_cast<int>(rects_.size()) || position < 0 || position >= static_cast<int>(rects_[row].size())) return {};
    return rects_[row][position];
}

QPoint TokenText::fillPoint(int row, int position) const {
    const QRect r = tokenRect(row, position);
    return QPoint(r.left() + 2, r.top() + 2);  // inside the border, left of the text (kPad pixels free there)
}

void TokenText::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette& pal = palette();
    QColor border = pal.color(QPalette::Text);
    border.setAlpha(70);
    QFont bold = font();
    bold.setBold(true);
    for (size_t r = 0; r < prompts_.size() && r < rects_.size(); ++r) {
        const Prompt& prompt = prompts_[r];
        p.setFont(bold);
        p.setPen(pal.color(QPalette::Text));
        p.drawText(titles_[r], Qt::AlignLeft | Qt::AlignVCenter, prompt.title);
        p.setFont(font());
        for (size_t i = 0; i < rects_[r].size(); ++i) {
            const QRect box = rects_[r][i];
            const double v = i < prompt.values.size() ? prompt.values[i] : kNan;
            const QColor fill = colourOf(v);
            p.fillRect(box, fill);
            p.setPen(QPen(border, 1));
            p.drawRect(box.adjusted(0, 0, -1, -1));  // the token's boundary
            // text that reads on its own fill, whatever the palette
            p.setPen(std::isnan(v) ? pal.color(QPalette::Text) : (fill.lightnessF() > 0.55 ? QColor(Qt::black) : QColor(Qt::white)));
            p.drawText(box.adjusted(kPad, 0, -kPad, 0), Qt::AlignCenter, display(prompt.tokens.value(static_cast<int>(i))));
        }
        if (prompt.selected >= 0 && prompt.selected < static_cast<int>(rects_[r].size())) {
            p.setPen(QPen(pal.color(QPalette::Highlight), 2));
            p.drawRect(rects_[r][static_cast<size_t>(prompt.selected)].adjusted(-1, -1, 0, 0));
        }
    }
    if (hoverRow_ >= 0) {
        const QRect box = tokenRect(hoverRow_, hoverPos_);
        if (!box.isEmpty()) {
            p.setPen(QPen(pal.color(QPalette::Text), 1, Qt::DashLine));
            p.drawRect(box.adjusted(-2, -2, 1, 1));
        }
    }
}

bool TokenText::tokenAt(QPoint pos, int* row, int* position) const {
    for (size_t r = 0; r < rects_.size(); ++r)
        for (size_t i = 0; i < rects_[r].size(); ++i)
            if (rects_[r][i].contains(pos)) {
                *row = static_cast<int>(r);
                *position = static_cast<int>(i);
                return true;
            }
    return false;
}

void TokenText::mouseMoveEvent(QMouseEvent* event) {
    int r = -1, i = -1;
    if (!tokenAt(event->pos(), &r, &i)) return;
    if (r == hoverRow_ && i == hoverPos_) return;
    hoverRow_ = r;
    hoverPos_ = i;
    update();
    emit tokenHovered(r, i);
}

void TokenText::mousePressEvent(QMouseEvent* event) {
    int r = -1, i = -1;
    if (event->button() == Qt::LeftButton && tokenAt(event->pos(), &r, &i)) {
        emit tokenClicked(r, i);
        return;
    }
    QWidget::mousePressEvent(event);
}

void TokenText::leaveEvent(QEvent* event) {
    hoverRow_ = hoverPos_ = -1;
    update();
    emit left();
    QWidget::leaveEvent(event);
}

// ---- ColourLegend -------------------------------------------------------------------------------------------------

ColourLegend::ColourLegend(QWidget* parent) : QWidget(parent) { setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed); }

void ColourLegend::setScale(const QCPColorGradient& gradient, QCPRange range, const QString& name) {
    gradient_ = gradient;
    range_ = range;
    name_ = name;
    setToolTip(text());
    update();
}

QSize ColourLegend::sizeHint() const { return {360, fontMetrics().height() + 8}; }

void ColourLegend::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QFontMetrics fm = fontMetrics();
    const QString lo = QString::number(range_.lower, 'g', 4), hi = QString::number(range_.upper, 'g', 4);
    p.setPen(palette().color(QPalette::WindowText));
    int x = 0;
    const int h = height();
    p.drawText(QRect(x, 0, fm.horizontalAdvance(name_) + 8, h), Qt::AlignLeft | Qt::AlignVCenter, name_);
    x += fm.horizontalAdvance(name_) + 10;
    p.drawText(QRect(x, 0, fm.horizontalAdvance(lo) + 4, h), Qt::AlignLeft | Qt::AlignVCenter, lo);
    x += fm.horizontalAdvance(lo) + 6;
    const int barWidth = std::max(60, width() - x - fm.horizontalAdvance(hi) - 8);
    QImage bar(barWidth, 1, QImage::Format_ARGB32_Premultiplied);
    std::vector<double> line(static_cast<size_t>(barWidth));
    for (int i = 0; i < barWidth; ++i) line[static_cast<size_t>(i)] = range_.lower + range_.size() * i / std::max(1, barWidth - 1);
    gradient_.colorize(line.data(), range_, reinterpret_cast<QRgb*>(bar.scanLine(0)), barWidth, 1, false);
    const QRect barRect(x, 4, barWidth, h - 8);
    p.drawImage(barRect, bar);
    p.drawRect(barRect.adjusted(0, 0, -1, -1));
    p.drawText(QRect(x + barWidth + 6, 0, fm.horizontalAdvance(hi) + 4, h), Qt::AlignLeft | Qt::AlignVCenter, hi);
}

// ---- TextView -----------------------------------------------------------------------------------------------------

TextView::TextView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    promptCombo_->hide();  // every prompt of the batch is shown, one under another
    modeCombo_ = new QComboBox(content);
    modeCombo_->addItems({tr("attention from the token"), tr("attention to the token"), tr("neuron activation"), tr("norm per position"),
                          tr("dictionary feature")});
    modeCombo_->setToolTip(tr("What colours the tokens. Attention: the selected token's row (from) or column (to) of the "
                              "block's attention pattern; neuron: mlp_neurons (what mlp.down_proj reads); norm: the L2 norm "
                              "of a value at each position; dictionary feature: the activation of a feature of an attached sparse dictionary "
                              "(File ▸ Open Dictionary; pick it in the Features view)"));
    blockSpin_ = new QSpinBox(content);
    blockSpin_->setPrefix(tr("layers."));
    headCombo_ = new QComboBox(content);
    headCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    neuronSpin_ = new QSpinBox(content);
    neuronSpin_->setToolTip(tr("The neuron of mlp_neurons (mlp.down_proj's input) whose activation colours the tokens"));
    normCombo_ = new QComboBox(content);
    normCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    normCombo_->setToolTip(tr("The value whose norm per position colours the tokens: the block's layer_output, or a value pinned "
                              "from the diagram (pin it, then run the trace)"));
    featureSpin_ = new QSpinBox(content);
    featureSpin_->setToolTip(tr("The feature of the dictionary chosen in the Features view whose activation colours the tokens"));
    featureLabel_ = new QLabel(tr("Feature"), content);
    headLabel_ = new QLabel(tr("Head"), content);
    neuronLabel_ = new QLabel(tr("Neuron"), content);
    normLabel_ = new QLabel(tr("Value"), content);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Colour by"), content));
    controls->addWidget(modeCombo_);
    controls->addWidget(new QLabel(tr("Block"), content));
    controls->addWidget(blockSpin_);
    controls->addWidget(headLabel_);
    controls->addWidget(headCombo_);
    controls->addWidget(neuronLabel_);
    controls->addWidget(neuronSpin_);
    controls->addWidget(normLabel_);
    controls->addWidget(normCombo_);
    controls->addWidget(featureLabel_);
    controls->addWidget(featureSpin_);
    controls->addStretch(1);

    legend_ = new ColourLegend(content);
    status_ = new QLabel(content);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setTextFormat(Qt::PlainText);  // tokens and prompts such as "<s>" are text
    status_->setWordWrap(true);
    status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // a long line never widens the window
    text_ = new TokenText(content);
    auto* scroll = new QScrollArea(content);
    scroll->setWidget(text_);
    scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(content);
    layout->addLayout(controls);
    layout->addWidget(legend_);
    layout->addWidget(status_);
    layout->addWidget(scroll, 1);
    setContent(content);
    showPlaceholder(tr("Run a trace to read the prompts as text coloured by attention, a neuron or a value's norm."));

    connect(modeCombo_, &QComboBox::currentIndexChanged, this, [this] {
        updateControls();
        refresh();
    });
    connect(blockSpin_, &QSpinBox::valueChanged, this, [this](int block) {
        fillNormCombo();
        refresh();
        emit blockChanged(block);
    });
    connect(headCombo_, &QComboBox::currentIndexChanged, this, &TextView::refresh);
    connect(neuronSpin_, &QSpinBox::valueChanged, this, [this] {
        neuronPicked_ = true;
        refresh();
    });
    connect(normCombo_, &QComboBox::currentIndexChanged, this, &TextView::refresh);
    connect(featureSpin_, &QSpinBox::valueChanged, this, &TextView::refresh);
    connect(text_, &TokenText::tokenHovered, this, &TextView::onHover);
    connect(text_, &TokenText::tokenClicked, this, [this](int row, int position) {
        // a click keeps this token selected while the mouse moves on; a second click lets hovering select again
        locked_ = !(locked_ && selectedToken(row) == position);
        selectToken(row, position);
        onHover(row, position);
    });
    updateControls();
}

void TextView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    selected_.clear();
    locked_ = false;
    if (!snapshot_) {
        neuronPicked_ = false;
        text_->setPrompts({});
        showPlaceholder(tr("Run a trace to read the prompts as text coloured by attention, a neuron or a value's norm."));
        return;
    }
    for (const QStringList& tokens : snapshot_->tokens) selected_.push_back(static_cast<int>(tokens.size()) - 1);  // the last token
    {
        const QSignalBlocker b(blockSpin_), h(headCombo_), n(neuronSpin_);
        blockSpin_->setRange(0, snapshot_->numLayers() - 1);
        const int keep = headCombo_->currentIndex();
        headCombo_->clear();
        for (int h = 0; h < snapshot_->model->config().numHeads; ++h) headCombo_->addItem(tr("head %1").arg(h), h);
        headCombo_->addItem(tr("mean over heads"), -1);
        headCombo_->setCurrentIndex(keep >= 0 && keep < headCombo_->count() ? keep : 0);
        neuronSpin_->setRange(0, static_cast<int>(snapshot_->model->config().intermediateSize) - 1);
    }
    fillNormCombo();
    showContent();
    refresh();
}

void TextView::setBlock(int block) {
    if (block != blockSpin_->value()) blockSpin_->setValue(block);
}

void TextView::setMode(Mode mode) { modeCombo_->setCurrentIndex(static_cast<int>(mode)); }
TextView::Mode TextView::mode() const { return static_cast<Mode>(std::max(0, modeCombo_->currentIndex())); }

void TextView::setHead(int head) {
    const int index = headCombo_->findData(head);
    if (index >= 0) headCombo_->setCurrentIndex(index);
}
int TextView::head() const { return headCombo_->currentData().toInt(); }
int TextView::block() const { return blockSpin_->value(); }
void TextView::setNeuron(int neuron) { neuronSpin_->setValue(neuron); }
int TextView::neuron() const { return neuronSpin_->value(); }

void TextView::setFeatureRuns(FeatureRunsPtr runs) {
    featureRuns_ = std::move(runs);
    setFeature(featureDictionary_, feature());
    if (snapshot_ && mode() == Mode::Feature) refresh();
}

void TextView::setFeature(int dictionary, int64_t feature) {
    featureDictionary_ = std::max(0, dictionary);
    const QSignalBlocker b(featureSpin_);
    if (featureRuns_ && featureDictionary_ < static_cast<int>(featureRuns_->dictionaries.size()))
        featureSpin_->setRange(0, static_cast<int>(featureRuns_->dictionaries[static_cast<size_t>(featureDictionary_)].attached.dictionary->dSae) - 1);
    featureSpin_->setValue(static_cast<int>(feature));
    if (snapshot_ && mode() == Mode::Feature) refresh();
}

int64_t TextView::feature() const { return featureSpin_->value(); }

void TextView::followNeuron(int neuron) {
    if (neuron == followed_) return;
    followed_ = neuron;
    setNeuron(neuron);
}

void TextView::setPinnedKeys(const std::vector<ValueKey>& keys) {
    pinned_ = keys;
    fillNormCombo();
}

std::optional<ValueKey> TextView::normKey() const {
    const QVariant v = normCombo_->currentData();
    if (!v.isValid()) return std::nullopt;
    const QList<QVariant> pair = v.toList();
    return ValueKey{static_cast<Value>(pair.value(0).toInt()), pair.value(1).toInt()};
}

void TextView::setNormKey(const ValueKey& key) {
    for (int i = 0; i < normCombo_->count(); ++i) {
        const QList<QVariant> pair = normCombo_->itemData(i).toList();
        if (pair.value(0).toInt() == static_cast<int>(key.value) && pair.value(1).toInt() == key.layer) normCombo_->setCurrentIndex(i);
    }
}

void TextView::fillNormCombo() {
    const auto keep = normKey();
    const QSignalBlocker b(normCombo_);
    normCombo_->clear();
    if (!snapshot_) return;
    std::vector<ValueKey> keys{{Value::LayerOutput, block()}};
    for (const ValueKey& k : pinned_)
        if (std::find(keys.begin(), keys.end(), k) == keys.end() && positionAxis(valueInfo(k.value)) >= 0) keys.push_back(k);
    for (const ValueKey& k : keys) {
        const bool saved = snapshot_->result.value(k).defined();
        normCombo_->addItem(snapshot_->path(k) + (saved ? QString() : tr(" (run the trace to read it)")),
                            QVariantList{static_cast<int>(k.value), k.layer});
    }
    if (keep) setNormKey(*keep);
}

void TextView::selectToken(int row, int position) {
    if (row < 0 || row >= static_cast<int>(selected_.size())) return;
    selected_[static_cast<size_t>(row)] = position;
    refresh();
}

int TextView::selectedToken(int row) const {
    return row >= 0 && row < static_cast<int>(selected_.size()) ? selected_[static_cast<size_t>(row)] : -1;
}

void TextView::updateControls() {
    const Mode m = mode();
    const bool attention = m == Mode::AttentionFrom || m == Mode::AttentionTo;
    headLabel_->setVisible(attention);
    headCombo_->setVisible(attention);
    neuronLabel_->setVisible(m == Mode::Neuron);
    neuronSpin_->setVisible(m == Mode::Neuron);
    normLabel_->setVisible(m == Mode::Norm);
    normCombo_->setVisible(m == Mode::Norm);
    featureLabel_->setVisible(m == Mode::Feature);
    featureSpin_->setVisible(m == Mode::Feature);
}

std::vector<double> TextView::valuesOf(int row, int selected) const {
    const Model& model = *snapshot_->model;
    const TraceResult& result = snapshot_->result;
    torch::Tensor v;
    switch (mode()) {
        case Mode::AttentionFrom:
        case Mode::AttentionTo: {
            const torch::Tensor a = attentionPattern(model, result, block(), row);  // [heads, query, key]
            const torch::Tensor m = head() < 0 ? a.mean(0) : a.index({head()});
            v = mode() == Mode::AttentionFrom ? m.index({selected}) : m.index({torch::indexing::Slice(), selected});
            break;
        }
        case Mode::Neuron:
            v = neuronActivations(model, result, block(), row).index({torch::indexing::Slice(), neuron()});
            break;
        case Mode::Norm: {
            const auto key = normKey();
            if (!key) return {};
            const int axis = positionAxis(valueInfo(key->value));
            const torch::Tensor t = promptValue(model, result, *key, row);  // throws when not saved
            const torch::Tensor perPosition = t.movedim(axis, 0);
            v = perPosition.reshape({perPosition.size(0), -1}).to(torch::kFloat64).norm(2, /*dim=*/1);
            break;
        }
        case Mode::Feature: {
            if (!featureRuns_ || featureRuns_->snapshot->serial != snapshot_->serial ||
                featureDictionary_ >= static_cast<int>(featureRuns_->dictionaries.size()))
                throw Error("Attach a sparse dictionary (File ▸ Open Dictionary…) and run the trace to colour the tokens by a feature.");
            const DictionaryRun& d = featureRuns_->dictionaries[static_cast<size_t>(featureDictionary_)];
            if (!d.error.isEmpty()) throw Error(d.error.toStdString());
            v = d.rows.at(static_cast<size_t>(row)).features.index({torch::indexing::Slice(), feature()});
            break;
        }
    }
    v = v.to(torch::kFloat64).contiguous();
    return std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
}

QString TextView::valueName() const {
    if (!snapshot_) return {};
    const QString who = head() < 0 ? tr("mean over heads") : tr("head %1").arg(head());
    switch (mode()) {
        case Mode::AttentionFrom: return tr("attention from the selected token (%1, %2)").arg(snapshot_->path({Value::AttentionProbabilities, block()}), who);
        case Mode::AttentionTo: return tr("attention to the selected token (%1, %2)").arg(snapshot_->path({Value::AttentionProbabilities, block()}), who);
        case Mode::Neuron: return tr("activation of neuron %1 (%2)").arg(neuron()).arg(snapshot_->path({Value::MlpNeurons, block()}));
        case Mode::Norm: {
            const auto key = normKey();
            return key ? tr("L2 norm per position of %1").arg(snapshot_->path(*key)) : tr("norm");
        }
        case Mode::Feature: {
            if (featureRuns_ && featureDictionary_ < static_cast<int>(featureRuns_->dictionaries.size())) {
                const DictionaryRun& d = featureRuns_->dictionaries[static_cast<size_t>(featureDictionary_)];
                return tr("activation of feature %1 of %2 (%3)").arg(feature()).arg(d.name, d.site);
            }
            return tr("activation of feature %1").arg(feature());
        }
    }
    return {};
}

void TextView::refresh() {
    if (!snapshot_) return;
    if (mode() == Mode::Neuron && !neuronPicked_ && snapshot_->result.value({Value::MlpNeurons, block()}).defined()) {
        // the strongest neuron at the first prompt's last token, until one is picked (as the Neuron view starts); a
        // trace file without this block's mlp_neurons says so below (valuesOf)
        const torch::Tensor acts = neuronActivations(*snapshot_->model, snapshot_->result, block(), 0);
        const QSignalBlocker b(neuronSpin_);
        neuronSpin_->setValue(static_cast<int>(topNeurons(acts, acts.size(0) - 1, 1).front().neuron));
    }
    std::vector<TokenText::Prompt> prompts;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    QString problem;
    for (int r = 0; r < snapshot_->numPrompts(); ++r) {
        TokenText::Prompt p;
        p.tokens = snapshot_->tokens.at(static_cast<size_t>(r));
        p.title = tr("Prompt %1").arg(r + 1);
        const bool attention = mode() == Mode::AttentionFrom || mode() == Mode::AttentionTo;
        p.selected = attention || locked_ ? selectedToken(r) : -1;
        try {
            p.values = valuesOf(r, std::clamp(selectedToken(r), 0, static_cast<int>(p.tokens.size()) - 1));
        } catch (const std::exception& e) {
            problem = QString::fromStdString(e.what());
        }
        for (double v : p.values)
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
        prompts.push_back(std::move(p));
    }
    // The scale: 0 to the largest value for probabilities and norms, symmetric about 0 for activations.
    QCPRange range(0, 1);
    QCPColorGradient gradient = probabilityGradient();
    if (std::isfinite(lo)) {
        if (mode() == Mode::Neuron) {
            const double m = std::max({std::fabs(lo), std::fabs(hi), 1e-12});
            range = QCPRange(-m, m);
            gradient = signedGradient();
        } else {
            range = QCPRange(0, std::max(hi, 1e-12));
        }
    }
    text_->setColours(gradient, range);
    text_->setPrompts(std::move(prompts));
    legend_->setScale(gradient, range, valueName());
    if (!problem.isEmpty()) status_->setText(problem);
    else if (status_->text().isEmpty() || !text_->underMouse())
        status_->setText(tr("Hover a token to select it (click to keep it while the mouse moves on)."));
}

void TextView::onHover(int row, int position) {
    if (!snapshot_) return;
    if (!locked_ && (mode() == Mode::AttentionFrom || mode() == Mode::AttentionTo) && selectedToken(row) != position) selectToken(row, position);
    const auto& prompts = text_->prompts();
    if (row >= static_cast<int>(prompts.size())) return;
    const TokenText::Prompt& p = prompts[static_cast<size_t>(row)];
    const double v = position < static_cast<int>(p.values.size()) ? p.values[static_cast<size_t>(position)] : kNan;
    // the value's name is the legend's; the line says which token and what it holds
    QString text = tr("prompt %1 · position %2 “%3” · value %4").arg(row + 1).arg(position).arg(p.tokens.value(position)).arg(v, 0, 'g', 5);
    if (mode() == Mode::AttentionFrom || mode() == Mode::AttentionTo)
        text += tr(" · colours: attention %1 position %2 “%3”%4")
                    .arg(mode() == Mode::AttentionFrom ? tr("from") : tr("to"))
                    .arg(selectedToken(row))
                    .arg(p.tokens.value(selectedToken(row)))
                    .arg(locked_ ? tr(" (kept: click it to follow the mouse again)") : QString());
    status_->setText(text);
    const QRect box = text_->tokenRect(row, position);
    QToolTip::showText(text_->mapToGlobal(box.bottomLeft()),
                       plainToolTip(tr("position %1 “%2”\n%3").arg(position).arg(p.tokens.value(position)).arg(v, 0, 'g', 5)), text_);
}

QString TextView::statusText() const { return status_->text(); }

PlotSource TextView::plotSource() const {
    PlotSource s;
    s.widget = text_;  // every prompt's tokens, the whole laid-out text (not only what the scroll area shows)
    s.name = "text";
    return s;
}

QMap<QString, QString> TextView::settings() const {
    static const char* const modes[] = {"attention_from", "attention_to", "neuron", "norm", "feature"};
    return {{"view", "text"},
            {"view.mode", modes[static_cast<int>(mode())]},
            {"view.block", QString::number(block())},
            {"view.head", head() < 0 ? QString("mean") : QString::number(head())},
            {"view.neuron", QString::number(neuron())},
            {"view.feature", QString::number(feature())}};
}

}  // namespace nnscope
