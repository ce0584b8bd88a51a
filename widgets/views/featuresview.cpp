// SPDX-License-Identifier: MIT
#include "widgets/views/featuresview.h"

#include <algorithm>
#include <cmath>

#include "core/analysis/analysis.h"
#include "core/io/filehash.h"
#include "core/model/error.h"
#include "core/model/taps.h"
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/textview.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QEvent>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace nnscope {
namespace {

constexpr int kTopFeatures = 20;
constexpr int kEffects = 10;
constexpr int kNearest = 10;

QString featureTokenLabel(const Model& m, int64_t id) {
    return m.tokenizer() ? QString::fromStdString(m.tokenizer()->tokenLabel(id)) : QString("#%1").arg(id);
}

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->horizontalHeader()->setStretchLastSection(true);
    // the numbers stay readable in a narrow view: the first column (token or feature) gives way, not the values
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    return t;
}

/// A read-only cell showing `text` and holding `value` (Qt::UserRole) for whoever reads the table back.
QTableWidgetItem* cell(const QString& text, const QVariant& value) {
    auto* item = new QTableWidgetItem(text);
    item->setData(Qt::UserRole, value);
    return item;
}

}  // namespace

FeatureRunsPtr computeFeatureRuns(const SnapshotPtr& snapshot, const std::vector<AttachedDictionary>& attached, const JobControl& control) {
    auto runs = std::make_shared<FeatureRuns>();
    runs->snapshot = snapshot;
    const Model& model = *snapshot->model;
    const int total = static_cast<int>(attached.size()) * snapshot->numPrompts();
    int done = 0;
    for (const AttachedDictionary& a : attached) {
        DictionaryRun d;
        d.attached = a;
        d.name = QFileInfo(QString::fromStdString(a.dictionary->dir)).fileName();
        d.site = snapshot->path(a.site);
        if (a.dictionary->transcoder) d.site += QStringLiteral(" → ") + snapshot->path(a.siteOut);
        try {
            for (int row = 0; row < snapshot->numPrompts(); ++row) {
                control.throwIfCancelled();
                d.rows.push_back(runDictionary(model, snapshot->result, a, row));
                control.progress(++done, total);
            }
        } catch (const std::exception& e) {  // nnscope::Error, or libtorch's on a tensor it refuses
            d.rows.clear();
            d.error = QString::fromStdString(e.what());
        }
        // The view checks a dashboard beside the dictionary against the weights' sha256 (currentDashboard): hashing
        // hundreds of megabytes there would freeze the window, so it is done here, in the job, and cached
        // (core/io/filehash.h: by path, size and modification time).
        if (d.error.isEmpty() && QFileInfo::exists(QString::fromStdString(defaultDashboardPath(a.dictionary->dir)))) {
            try {
                filesSha256(a.dictionary->weightFiles);
            } catch (const Error&) {  // unreadable now: the view says so when it checks
            }
        }
        runs->dictionaries.push_back(std::move(d));
    }
    return runs;
}

FeatureRunsPtr featureRunsFromFile(const SnapshotPtr& snapshot) {
    const TraceResult& result = snapshot->result;
    const Model& model = *snapshot->model;
    auto runs = std::make_shared<FeatureRuns>();
    runs->snapshot = snapshot;
    for (const DictionaryValue& v : result.dictionaryValues) {
        if (v.kind != DictionaryValue::Kind::Features) continue;
        const DictionarySource& s = *v.source;
        auto dict = std::make_shared<Dictionary>();
        dict->dir = s.folder;
        dict->format = s.format;
        dict->architecture = s.architecture;
        dict->transcoder = s.transcoder;
        dict->dIn = s.dIn, dict->dSae = s.dSae, dict->dOut = s.dOut;
        dict->site = s.site, dict->siteOut = s.siteOut;
        DictionaryRun d;
        d.attached.dictionary = dict;
        d.name = QString::fromStdString(s.name);
        d.site = QString::fromStdString(s.site) + (s.transcoder ? QStringLiteral(" → ") + QString::fromStdString(s.siteOut) : QString());
        const std::string stem = v.path.substr(0, v.path.size() - std::string("features").size());
        const DictionaryValue* reconstruction = result.dictionaryValue(stem + "reconstruction");
        const DictionaryValue* error = result.dictionaryValue(stem + "error");
        try {
            d.attached.site = parseValuePath(model, s.site);
            d.attached.siteOut = parseValuePath(model, s.siteOut);
            c10::InferenceMode guard;
            for (int row = 0; row < snapshot->numPrompts(); ++row) {
                const PromptSpan span = promptSpan(result.batch, row);
                auto own = [&](const DictionaryValue* x) {
                    return x ? x->tensor[row].narrow(0, span.start, span.length).to(torch::kFloat32) : torch::Tensor();
                };
                FeatureRun run;
                run.features = own(&v);
                run.reconstruction = own(reconstruction);
                run.error = own(error);
                if (run.reconstruction.defined() && run.error.defined()) run.target = run.reconstruction + run.error;
                if (!s.transcoder) run.input = run.target;
                measureQuality(run);
                d.rows.push_back(std::move(run));
            }
        } catch (const std::exception& e) {
            d.rows.clear();
            d.error = QString::fromStdString(e.what());
        }
        runs->dictionaries.push_back(std::move(d));
    }
    if (runs->dictionaries.empty()) return nullptr;
    return runs;
}

QString featureQualityText(const FeatureRun& run) {
    if (std::isnan(run.mse))
        return QObject::tr("mean L0 %1 (the trace file holds no error term: MSE and explained variance unknown)").arg(run.meanL0, 0, 'f', 1);
    const QString ev = std::isnan(run.explainedVariance) ? QObject::tr("undefined (one position)") : QString::number(run.explainedVariance, 'f', 4);
    // the first position (the BOS) is left out, except where the prompt has no other (an empty prompt): say so
    const bool firstOnly = run.features.defined() && run.features.size(0) == 1;
    return QObject::tr("MSE %1 · explained variance %2 · mean L0 %3%4")
        .arg(run.mse, 0, 'g', 4)
        .arg(ev)
        .arg(run.meanL0, 0, 'f', 1)
        .arg(firstOnly ? QObject::tr(" (on the first position alone: the prompt has no other)") : QString());
}

FeaturesView::FeaturesView(QWidget* parent) : TraceView(parent) {
    auto* content = new QWidget(this);
    dictCombo_ = new QComboBox(content);
    dictCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    dictCombo_->setToolTip(tr("The attached dictionary shown (File ▸ Open Dictionary… attaches another)"));
    find_ = new QSpinBox(content);
    find_->setPrefix(tr("feature #"));
    find_->setKeyboardTracking(false);  // a number typed is found when it is complete
    find_->setToolTip(tr("Find a feature by its number"));
    pin_ = new QToolButton(content);
    pin_->setText(tr("Pin card"));
    pin_->setToolTip(tr("Pin a card of the selected feature beside the value cards"));
    quality_ = new QLabel(content);
    quality_->setWordWrap(true);
    quality_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    text_ = new TokenText(content);
    auto* textScroll = new QScrollArea(content);
    textScroll->setWidget(text_);
    textScroll->setWidgetResizable(true);
    textScroll->setMaximumHeight(110);

    topTitle_ = new QLabel(content);
    topTitle_->setWordWrap(true);
    topTitle_->setTextFormat(Qt::PlainText);  // a token such as "<s>" is text
    top_ = makeTable({tr("Feature"), tr("Activation")}, content);
    top_->setToolTip(tr("The largest active features at the selected token; click one to select it"));

    featureTitle_ = new QLabel(content);
    featureTitle_->setWordWrap(true);
    plot_ = new QCustomPlot(content);
    plot_->setInteractions({});
    bars_ = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars_->setWidth(0.7);
    bars_->setPen(Qt::NoPen);
    bars_->setBrush(QColor(0xd9, 0x5f, 0x02));
    plot_->xAxis->grid()->setVisible(false);
    plot_->xAxis->setTickLabelRotation(60);
    plot_->xAxis->setSubTicks(false);
    plot_->yAxis->setLabel(tr("activation"));
    plot_->setMinimumHeight(180);
    plot_->installEventFilter(this);  // the token labels follow the plot's width (labelTokens)
    followPalette(plot_);

    promoted_ = makeTable({tr("Promotes"), tr("Logit")}, content);
    suppressed_ = makeTable({tr("Suppresses"), tr("Logit")}, content);
    nearest_ = makeTable({tr("Nearest feature"), tr("Cosine")}, content);
    nearest_->setToolTip(tr("Features whose decoder rows point the same way; click one to select it"));
    detailsStatus_ = new QLabel(content);
    detailsStatus_->setWordWrap(true);

    auto* controls = new QHBoxLayout;
    dictLabel_ = new QLabel(tr("Dictionary"), content);
    controls->addWidget(dictLabel_);
    controls->addWidget(dictCombo_);
    controls->addWidget(promptCombo_);
    controls->addWidget(find_);
    controls->addWidget(pin_);
    controls->addStretch(1);

    auto* left = new QWidget(content);
    left->setMinimumWidth(220);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(topTitle_);
    leftLayout->addWidget(top_, 1);
    // the two lists of features (click one to select it) in one column; the selected feature's token effects under its
    // plot, two tables side by side (three in a row left each a few characters of its tokens)
    leftLayout->addWidget(nearest_, 1);
    auto* tables = new QHBoxLayout;
    tables->addWidget(promoted_);
    tables->addWidget(suppressed_);
    auto* right = new QWidget(content);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addWidget(featureTitle_);
    rightLayout->addWidget(plot_, 1);
    rightLayout->addWidget(detailsStatus_);
    rightLayout->addLayout(tables, 1);
    // the dashboard (a dataset's top contexts and the feature's histogram), when the dictionary has one
    dashPanel_ = new QWidget(content);
    dashTitle_ = new QLabel(dashPanel_);
    dashTitle_->setWordWrap(true);
    dashTitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    dashText_ = new TokenText(dashPanel_);
    dashText_->setToolTip(tr("The feature's top activating contexts in the dashboard's dataset, each token shaded by the feature's activation"));
    auto* dashScroll = new QScrollArea(dashPanel_);
    dashScroll->setWidget(dashText_);
    dashScroll->setWidgetResizable(true);
    histPlot_ = new QCustomPlot(dashPanel_);
    histPlot_->setInteractions({});
    histBars_ = new QCPBars(histPlot_->xAxis, histPlot_->yAxis);
    histBars_->setWidth(1.0 / kDashboardBinsPerDecade);
    histBars_->setPen(Qt::NoPen);
    histBars_->setBrush(QColor(0x1b, 0x9e, 0x77));
    histPlot_->xAxis->setLabel(tr("log10 activation"));
    histPlot_->yAxis->setLabel(tr("positions"));
    histPlot_->xAxis->grid()->setVisible(false);
    histPlot_->setMinimumHeight(140);
    followPalette(histPlot_);
    auto* dashLayout = new QVBoxLayout(dashPanel_);
    dashLayout->setContentsMargins(0, 0, 0, 0);
    dashLayout->addWidget(dashTitle_);
    dashLayout->addWidget(dashScroll, 2);
    dashLayout->addWidget(histPlot_, 1);
    dashPanel_->hide();

    auto* split = new QSplitter(Qt::Horizontal, content);
    split->addWidget(left);
    split->addWidget(right);
    split->addWidget(dashPanel_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 3);
    split->setSizes({200, 460, 380});  // the feature's plot and token effects widest, the lists of features narrowest

    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(quality_);
    layout->addWidget(textScroll);
    layout->addWidget(split, 1);
    setContent(content);
    updatePlaceholder();

    connect(dictCombo_, &QComboBox::currentIndexChanged, this, [this] {
        feature_ = -1;
        refresh();
    });
    connect(this, &TraceView::promptChanged, this, [this] {
        token_ = -1;
        refresh();
    });
    connect(find_, &QSpinBox::valueChanged, this, [this](int f) {
        if (f != feature_) selectFeature(f);
    });
    connect(pin_, &QToolButton::clicked, this, [this] {
        if (feature_ >= 0) emit pinRequested(dictionary(), feature_);
    });
    connect(text_, &TokenText::tokenHovered, this, [this](int, int position) {
        if (!locked_) selectToken(position);
    });
    connect(text_, &TokenText::tokenClicked, this, [this](int, int position) {
        locked_ = !(locked_ && token_ == position);  // a click keeps the token; a second click follows the mouse again
        selectToken(position);
    });
    connect(top_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (QTableWidgetItem* item = top_->item(row, 0)) selectFeature(item->data(Qt::UserRole).toLongLong());
    });
    connect(nearest_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (QTableWidgetItem* item = nearest_->item(row, 0)) selectFeature(item->data(Qt::UserRole).toLongLong());
    });
}

void FeaturesView::setSnapshot(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    dropAnalysis();
    detailsFeature_ = -1;
    if (snapshot_) fillPromptCombo(promptCombo_, *snapshot_);
    if (runs_ && (!snapshot_ || runs_->snapshot->serial != snapshot_->serial)) runs_.reset();
    token_ = -1;
    locked_ = false;
    refresh();
}

void FeaturesView::setAttached(const QStringList& names) {
    attached_ = names;
    if (!runs_) {
        const QSignalBlocker b(dictCombo_);
        const int keep = dictCombo_->currentIndex();
        dictCombo_->clear();
        dictCombo_->addItems(names);
        dictCombo_->setCurrentIndex(std::max(0, std::min(keep, static_cast<int>(names.size()) - 1)));
        dictCombo_->setVisible(dictCombo_->count() > 1);
        dictLabel_->setVisible(dictCombo_->count() > 1);
    }
    updatePlaceholder();
}

void FeaturesView::setRuns(FeatureRunsPtr runs) {
    if (runs && snapshot_ && runs->snapshot->serial != snapshot_->serial) return;  // another trace's
    runs_ = std::move(runs);
    {
        const QSignalBlocker b(dictCombo_);
        const int keep = dictCombo_->currentIndex();
        dictCombo_->clear();
        if (runs_)
            for (const DictionaryRun& d : runs_->dictionaries) dictCombo_->addItem(d.name, d.site);
        else
            dictCombo_->addItems(attached_);
        dictCombo_->setCurrentIndex(std::max(0, std::min(keep, dictCombo_->count() - 1)));
    }
    dictCombo_->setVisible(dictCombo_->count() > 1);  // a chooser when there is a choice
    dictLabel_->setVisible(dictCombo_->count() > 1);
    detailsFeature_ = -1;
    refresh();
}

void FeaturesView::setDictionary(int index) { dictCombo_->setCurrentIndex(index); }
int FeaturesView::dictionary() const { return std::max(0, dictCombo_->currentIndex()); }

const DictionaryRun* FeaturesView::currentDictionary() const {
    if (!runs_ || runs_->dictionaries.empty()) return nullptr;
    return &runs_->dictionaries.at(static_cast<size_t>(std::min<int>(dictionary(), static_cast<int>(runs_->dictionaries.size()) - 1)));
}

const FeatureRun* FeaturesView::currentRun() const {
    const DictionaryRun* d = currentDictionary();
    if (!d || d->rows.empty()) return nullptr;
    return &d->rows.at(static_cast<size_t>(std::min<int>(prompt(), static_cast<int>(d->rows.size()) - 1)));
}

void FeaturesView::updatePlaceholder() {
    if (!snapshot_)
        showPlaceholder(tr("Run a trace: this view shows the features a sparse dictionary (File ▸ Open Dictionary…) reads at each token."));
    else if (attached_.isEmpty() && !runs_)
        showPlaceholder(tr("Attach a sparse dictionary (an SAE or transcoder folder: File ▸ Open Dictionary…) to see its features on the trace."));
    else if (!runs_)
        showPlaceholder(tr("Computing the dictionaries' features on the trace…"));
    else
        showContent();
}

void FeaturesView::refresh() {
    updatePlaceholder();
    const DictionaryRun* d = currentDictionary();
    if (!snapshot_ || !d) return;
    const FeatureRun* run = currentRun();
    const Dictionary& dict = *d->attached.dictionary;
    {
        const QSignalBlocker b(find_);
        find_->setRange(0, static_cast<int>(dict.dSae) - 1);
    }
    if (!run) {
        quality_->setStyleSheet("color: #a00010;");
        quality_->setText(tr("%1 at %2: %3").arg(d->name, d->site, d->error));
        text_->setPrompts({});
        top_->setRowCount(0);
        return;
    }
    const bool bad = run->explainedVariance < 0;
    quality_->setStyleSheet(bad ? "color: #a00010; font-weight: bold;" : QString());
    QString q = tr("%1 (%2) at %3 on prompt %4: %5")
                    .arg(d->name, QString::fromStdString(dict.format + " " + dict.architecture), d->site)
                    .arg(prompt() + 1)
                    .arg(featureQualityText(*run));
    if (bad) q += tr(" — warning: it explains less variance than the mean (explained variance < 0): it does not belong to this model or site.");
    quality_->setText(q);
    const int length = static_cast<int>(run->features.size(0));
    if (token_ < 0 || token_ >= length) token_ = length - 1;
    if (feature_ < 0 || feature_ >= dict.dSae) {
        const auto top = topFeatures(run->features[token_], 1);
        feature_ = top.empty() ? 0 : top.front().feature;
    }
    fillTopTable();
    showFeature();
}

void FeaturesView::selectToken(int position) {
    const FeatureRun* run = currentRun();
    if (!run || position < 0 || position >= run->features.size(0) || position == token_) return;
    token_ = position;
    fillTopTable();
    showFeature();  // the token outline moves
}

void FeaturesView::labelTokens() {
    if (!snapshot_ || prompt() < 0 || prompt() >= snapshot_->numPrompts()) return;
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(prompt()));
    const int n = static_cast<int>(bars_->data()->size());
    // a rotated label needs about a line of its font along the axis; the axis rect is the plot less its margins (about
    // 60 px before the first layout)
    const int room = std::max(1, plot_->axisRect()->width() > 0 ? plot_->axisRect()->width() : plot_->width() - 60);
    const int line = QFontMetrics(plot_->xAxis->tickLabelFont()).height();
    const int step = std::max(1, (n * line + room - 1) / room);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int t = 0; t < n; ++t)
        if (t % step == 0 || t == token_) ticker->addTick(t, tokens.value(t));
    plot_->xAxis->setTicker(ticker);
}

bool FeaturesView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_ && event->type() == QEvent::Resize && bars_->data()->size() > 0) {
        labelTokens();
        plot_->replot(QCustomPlot::rpQueuedReplot);
    }
    return TraceView::eventFilter(watched, event);
}

void FeaturesView::fillTopTable() {
    const FeatureRun* run = currentRun();
    if (!run) return;
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(prompt()));
    const auto top = topFeatures(run->features[token_], kTopFeatures);
    topTitle_->setText(tr("Top features at position %1 “%2” (L0 %3)")
                           .arg(token_)
                           .arg(tokens.value(token_))
                           .arg((run->features[token_] > 0).sum().item<int64_t>()));
    top_->setRowCount(static_cast<int>(top.size()));
    for (int i = 0; i < static_cast<int>(top.size()); ++i) {
        top_->setItem(i, 0, cell(QString::number(top[static_cast<size_t>(i)].feature), QVariant::fromValue<qint64>(top[static_cast<size_t>(i)].feature)));
        top_->setItem(i, 1, cell(QString::number(top[static_cast<size_t>(i)].activation, 'g', 5), top[static_cast<size_t>(i)].activation));
    }
    top_->resizeColumnToContents(0);
}

void FeaturesView::selectFeature(int64_t feature) {
    const DictionaryRun* d = currentDictionary();
    if (!d || feature < 0 || feature >= d->attached.dictionary->dSae) return;
    if (feature == feature_ && detailsShown()) return;
    feature_ = feature;
    showFeature();
}

void FeaturesView::showFeature() {
    const FeatureRun* run = currentRun();
    if (!run || feature_ < 0) return;
    {
        const QSignalBlocker b(find_);
        find_->setValue(static_cast<int>(feature_));
    }
    const int row = prompt();
    const QStringList& tokens = snapshot_->tokens.at(static_cast<size_t>(row));
    const torch::Tensor acts = run->features.index({torch::indexing::Slice(), feature_}).to(torch::kFloat64).contiguous();
    std::vector<double> values(acts.data_ptr<double>(), acts.data_ptr<double>() + acts.numel());
    // the prompt's tokens coloured by the feature, the selected token outlined
    TokenText::Prompt p;
    p.title = tr("Prompt %1").arg(row + 1);
    p.tokens = tokens;
    p.values = values;
    p.selected = token_;
    const double largest = values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
    const double hi = largest > 0 ? largest : 1.0;  // the colour and axis range: 0 to 1 where the feature never fires
    text_->setColours(probabilityGradient(), QCPRange(0, hi));
    text_->setPrompts({p});

    QVector<double> keys, bars;
    for (int t = 0; t < static_cast<int>(values.size()); ++t) {
        keys << t;
        bars << values[static_cast<size_t>(t)];
    }
    bars_->setData(keys, bars, true);
    labelTokens();
    plot_->xAxis->setRange(-0.7, std::max<int>(1, static_cast<int>(values.size())) - 0.3);
    plot_->yAxis->setRange(std::min(0.0, *std::min_element(values.begin(), values.end())), hi * 1.1);
    plot_->replot();
    int active = 0;
    for (double v : values) active += v > 0;
    featureTitle_->setText(tr("<b>Feature %1</b> of %2: active on %3 of %4 tokens, largest %5")
                               .arg(feature_)
                               .arg(currentDictionary()->name.toHtmlEscaped())
                               .arg(active)
                               .arg(values.size())
                               .arg(largest, 0, 'g', 4));
    showDashboard();
    refreshWhenShown([this] {  // the logit effects cost a vocab_size x hidden_size product: not for a hidden tab
        if (detailsFeature_ != feature_) requestDetails();
    });
    emit featureSelected(dictionary(), feature_);
}

void FeaturesView::requestDetails() {
    const DictionaryRun* d = currentDictionary();
    if (!d || !snapshot_) return;
    detailsFeature_ = -1;
    promoted_->setRowCount(0);
    suppressed_->setRowCount(0);
    nearest_->setRowCount(0);
    const ModelPtr model = snapshot_->model;
    const std::shared_ptr<const Dictionary> dict = d->attached.dictionary;
    const int64_t feature = feature_;
    if (!dict->wDec.defined()) {  // features read from a trace file, without the dictionary's weights
        detailsStatus_->setStyleSheet(QString());
        detailsStatus_->setText(tr("The trace file holds this dictionary's activations, not its weights (%1): its logit effects and "
                                   "nearest features need them. Open the checkpoint and attach the dictionary to see them.")
                                    .arg(QString::fromStdString(dict->dir)));
        return;
    }
    detailsStatus_->setStyleSheet(QString());
    detailsStatus_->setText(tr("Computing feature %1's logit effects and nearest features…").arg(feature));
    requestAnalysis(
        tr("feature's logit effects"), 0,
        [model, dict, feature](const JobControl& control) {
            auto details = std::make_shared<FeatureDetails>();
            try {
                details->effects = featureLogitEffects(*model, *dict, feature, kEffects);
            } catch (const Error& e) {
                details->effectsError = QString::fromStdString(e.what());
            }
            control.throwIfCancelled();
            details->nearest = nearestFeatures(*dict, feature, kNearest);
            return QVariant::fromValue(FeatureDetailsPtr(std::move(details)));
        },
        [this, feature](JobState state, const QVariant& result, const QString& message) {
            if (feature == feature_) detailsEnded(state, result, message);
        });
}

void FeaturesView::detailsEnded(JobState state, const QVariant& result, const QString& message) {
    if (state != JobState::Finished) {
        detailsStatus_->setStyleSheet(state == JobState::Cancelled ? "color: #8a5a00;" : "color: #a00010;");
        detailsStatus_->setText(state == JobState::Cancelled ? tr("Cancelled: select the feature again to compute its logit effects.") : message);
        return;
    }
    const FeatureDetails& details = *result.value<FeatureDetailsPtr>();
    detailsFeature_ = feature_;
    const Model& m = *snapshot_->model;
    auto fill = [&m](QTableWidget* t, const std::vector<TokenEffect>& effects) {
        t->setRowCount(static_cast<int>(effects.size()));
        for (int i = 0; i < static_cast<int>(effects.size()); ++i) {
            const TokenEffect& e = effects[static_cast<size_t>(i)];
            t->setItem(i, 0, cell(featureTokenLabel(m, e.id), QVariant::fromValue<qint64>(e.id)));
            t->setItem(i, 1, cell(QString::number(e.logit, 'f', 3), e.logit));
        }
    };
    fill(promoted_, details.effects.promoted);
    fill(suppressed_, details.effects.suppressed);
    nearest_->setRowCount(static_cast<int>(details.nearest.size()));
    for (int i = 0; i < static_cast<int>(details.nearest.size()); ++i) {
        const FeatureSimilarity& s = details.nearest[static_cast<size_t>(i)];
        nearest_->setItem(i, 0, cell(QString::number(s.feature), QVariant::fromValue<qint64>(s.feature)));
        nearest_->setItem(i, 1, cell(QString::number(s.cosine, 'f', 3), s.cosine));
    }
    detailsStatus_->setStyleSheet(details.effectsError.isEmpty() ? QString() : "color: #8a5a00;");
    detailsStatus_->setText(details.effectsError.isEmpty()
                                ? tr("Logit effects: the decoder row through the final norm's gain and the unembedding (lm_head · (gain ⊙ W_dec[%1]))."
                                     " Nearest: cosine of decoder rows.").arg(feature_)
                                : tr("No logit effects: %1").arg(details.effectsError));
}

namespace {
QString absoluteDir(const std::string& dir) { return QDir(QString::fromStdString(dir)).canonicalPath(); }
}  // namespace

const Dashboard* FeaturesView::currentDashboard() const {
    const DictionaryRun* d = currentDictionary();
    if (!d) return nullptr;
    const QString dir = absoluteDir(d->attached.dictionary->dir);
    auto it = dashboards_.find(dir);
    if (it == dashboards_.end()) {  // looked for once, beside the dictionary (a file mapped: reading it costs little)
        auto& self = const_cast<FeaturesView&>(*this);
        std::shared_ptr<const Dashboard> found;
        try {
            found = findDashboard(*d->attached.dictionary);
        } catch (const Error& e) {
            self.dashboardErrors_[dir] = QString::fromStdString(e.what());
        }
        it = self.dashboards_.emplace(dir, std::move(found)).first;
    }
    return it->second.get();
}

QString FeaturesView::openDashboard(const QString& path) {
    auto dash = std::make_shared<Dashboard>(loadDashboard(path.toStdString()));
    if (!runs_ || runs_->dictionaries.empty()) throw Error(path.toStdString() + ": no dictionary is shown to show its dashboard for; run a trace with one attached.");
    // the dictionary it was made from (the same weights), else the one shown
    int index = dictionary();
    for (size_t i = 0; i < runs_->dictionaries.size(); ++i)
        if (filesSha256(runs_->dictionaries[i].attached.dictionary->weightFiles) == dash->metadata["dictionary_sha256"]) {
            index = static_cast<int>(i);
            break;
        }
    const DictionaryRun& d = runs_->dictionaries.at(static_cast<size_t>(index));
    if (dash->dSae() != d.attached.dictionary->dSae)
        throw Error(path.toStdString() + " holds " + std::to_string(dash->dSae()) + " features; the dictionary " + d.name.toStdString() + " has " +
                    std::to_string(d.attached.dictionary->dSae) + ": it is another dictionary's dashboard.");
    const QString dir = absoluteDir(d.attached.dictionary->dir);
    dashboards_[dir] = std::move(dash);
    dashboardErrors_.erase(dir);
    if (index != dictionary()) setDictionary(index);
    else showDashboard();
    return d.name;
}

void FeaturesView::showDashboard() {
    const Dashboard* dash = currentDashboard();
    const DictionaryRun* d = currentDictionary();
    const auto error = d ? dashboardErrors_.find(absoluteDir(d->attached.dictionary->dir)) : dashboardErrors_.end();
    if (!dash && error == dashboardErrors_.end()) {
        dashPanel_->hide();
        return;
    }
    dashPanel_->show();
    if (!dash) {
        dashTitle_->setStyleSheet("color: #a00010;");
        dashTitle_->setText(tr("Dashboard: %1").arg(error->second.toHtmlEscaped()));
        dashText_->setPrompts({});
        histBars_->data()->clear();
        histPlot_->replot(QCustomPlot::rpQueuedReplot);  // after the panel, shown just now, has its size
        return;
    }
    dashTitle_->setStyleSheet(QString());
    const int64_t f = feature_;
    if (f < 0 || f >= dash->dSae()) return;
    const Model& m = *snapshot_->model;
    const double hi = dash->maxActivation[f].item<double>();
    const auto meta = [&](const char* key) {
        const auto it = dash->metadata.find(key);
        return it == dash->metadata.end() ? QString() : QString::fromStdString(it->second);
    };
    dashTitle_->setText(tr("<b>Dashboard</b> of feature %1 on %2 (%3 documents, %4 positions): density %5 · max %6%7")
                            .arg(f)
                            .arg(QFileInfo(meta("dataset")).fileName().toHtmlEscaped())
                            .arg(meta("documents_done"))
                            .arg(dash->positions)
                            .arg(dash->density(f), 0, 'g', 4)
                            .arg(hi, 0, 'g', 4)
                            .arg(meta("complete") == "true" ? QString() : tr(" · <i>partial: rerun the command to finish it</i>")));
    std::vector<TokenText::Prompt> contexts;
    const int filled = dash->filledSlots(f);
    for (int s = 0; s < filled; ++s) {
        TokenText::Prompt p;
        p.title = tr("%1 · doc %2 · token %3").arg(dash->topActivation[f][s].item<double>(), 0, 'g', 4)
                      .arg(dash->topDocument[f][s].item<int64_t>()).arg(dash->topPosition[f][s].item<int64_t>());
        for (int c = 0; c < kDashboardWindow; ++c) {
            const int64_t id = dash->contextIds[f][s][c].item<int64_t>();
            if (id < 0) {
                if (c < kDashboardBefore) continue;
                break;
            }
            if (c == kDashboardBefore) p.selected = static_cast<int>(p.tokens.size());
            p.tokens << featureTokenLabel(m, id);
            p.values.push_back(dash->contextActivation[f][s][c].item<double>());
        }
        contexts.push_back(std::move(p));
    }
    dashText_->setColours(probabilityGradient(), QCPRange(0, std::max(hi, 1e-12)));
    dashText_->setPrompts(std::move(contexts));
    // the histogram over the bins that hold a count, at each bin's centre in log10
    QVector<double> keys, counts;
    const torch::Tensor h = dash->histogram[f].contiguous();
    int lo = kDashboardBins, up = -1;
    for (int b = 0; b < kDashboardBins; ++b)
        if (h[b].item<int64_t>() > 0) lo = std::min(lo, b), up = b;
    double top = 1;
    for (int b = lo; b <= up; ++b) {
        keys << kDashboardLogMin + (b + 0.5) / kDashboardBinsPerDecade;
        counts << static_cast<double>(h[b].item<int64_t>());
        top = std::max(top, counts.back());
    }
    histBars_->setData(keys, counts, true);
    if (up >= 0) histPlot_->xAxis->setRange(keys.front() - 0.1, keys.back() + 0.1);
    histPlot_->yAxis->setRange(0, top * 1.1);
    histPlot_->replot(QCustomPlot::rpQueuedReplot);  // after the panel, shown just now, has its size
}

PlotSource FeaturesView::plotSource() const {
    PlotSource s;
    s.plot = plot_;
    s.name = "features";
    return s;
}

QMap<QString, QString> FeaturesView::settings() const {
    const DictionaryRun* d = currentDictionary();
    return {{"view", "features"},
            {"view.dictionary", d ? QString::fromStdString(d->attached.dictionary->dir) : QString()},
            {"view.site", d ? d->site : QString()},
            {"view.token", QString::number(token_)},
            {"view.feature", QString::number(feature_)}};
}

}  // namespace nnscope
