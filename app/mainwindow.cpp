// SPDX-License-Identifier: MIT
#include "mainwindow.h"
#include "widgets/views/numberformat.h"

#include "core/run/train_demo.h"

#include "defaultmodel.h"
#include "guardedapplication.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"
#include "core/io/dictionary.h"
#include "core/io/transcoderset.h"
#include "core/run/dashboard.h"
#include "core/io/export.h"
#include "core/analysis/valuestats.h"
#include "widgets/views/attentionview.h"
#include "widgets/views/compareview.h"
#include "widgets/panels/diagrampanel.h"
#include "widgets/panels/interventionpanel.h"
#include "widgets/views/attributionview.h"
#include "widgets/views/flowview.h"
#include "widgets/views/headsview.h"
#include "widgets/views/textview.h"
#include "widgets/views/generateview.h"
#include "widgets/views/patchingview.h"
#include "widgets/views/familyview.h"
#include "widgets/views/featuresview.h"
#include "widgets/views/circuitview.h"
#include "widgets/views/routingview.h"
#include "core/analysis/circuit.h"
#include "core/analysis/featureeffects.h"
#include "widgets/views/logitlensview.h"
#include "widgets/panels/modelsummary.h"
#include "widgets/views/neuronview.h"
#include "widgets/panels/pinnedcards.h"
#include "widgets/panels/printoutmodel.h"
#include "widgets/panels/resources.h"
#include "widgets/panels/sidetabs.h"
#include "widgets/panels/supporttablemodel.h"
#include "widgets/panels/tracepanel.h"
#include "widgets/panels/valueexport.h"
#include "widgets/views/valueplotview.h"

#include <limits>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QUndoCommand>
#include <QUndoStack>
#include <QGuiApplication>
#include <QScreen>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QUrl>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImageWriter>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QDesktopServices>
#include <QClipboard>
#include <QGuiApplication>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QPainter>
#include <QStatusBar>
#include <QStyleOption>
#include <QTabWidget>
#include <QFrame>
#include <QTimer>
#include <QTableView>
#include <QTextBrowser>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>
#include <QLoggingCategory>

#include <algorithm>
#include <filesystem>
#include <utility>

namespace nnscope {

/// What the window did, for whoever runs it from a terminal or a test: off unless asked for with
/// QT_LOGGING_RULES="nnscope.window.info=true" (one line per model opened and per trace shown, on stderr).
Q_LOGGING_CATEGORY(lcWindow, "nnscope.window", QtWarningMsg)

namespace {
/// A feature card's top contexts from its dashboard: up to `n` of feature `feature`'s top activating windows, each with
/// its activation and the top token in bold, and the feature's density; "" when the feature never fired there.
QString dashboardExamplesHtml(const Model& model, const Dashboard& dash, int64_t feature, int n) {
    if (feature < 0 || feature >= dash.dSae()) return {};
    const int filled = std::min(n, dash.filledSlots(feature));
    if (filled == 0) return QObject::tr("<p><b>Top contexts</b>: it never fired on the dashboard's text.</p>");
    auto label = [&](int64_t id) {
        return QString::fromStdString(model.tokenizer() ? model.tokenizer()->tokenLabel(id) : std::to_string(id)).toHtmlEscaped();
    };
    QString html = QObject::tr("<p><b>Top contexts</b> <span style='color:gray'>(density %1 over %2 positions of the dashboard's text)</span>")
                       .arg(dash.density(feature), 0, 'g', 3)
                       .arg(dash.positions);
    for (int slot = 0; slot < filled; ++slot) {
        QStringList tokens;
        for (int c = 0; c < kDashboardWindow; ++c) {
            const int64_t id = dash.contextIds[feature][slot][c].item<int64_t>();
            if (id < 0) continue;
            tokens << (c == kDashboardBefore ? QStringLiteral("<b>%1</b>").arg(label(id)) : label(id));
        }
        html += QStringLiteral("<br>%1 · %2").arg(dash.topActivation[feature][slot].item<double>(), 0, 'f', 2).arg(tokens.join(QString()));
    }
    return html + QStringLiteral("</p>");
}

/// The prompt box's text on a machine with no saved prompts.
const QString kGenericPrompt = QStringLiteral("Once upon a time, there was a little girl named Lily.");
constexpr int kMaxRecent = 8;
/// Up to this many tokens the logit lens of the prompt shown is computed whole; a longer prompt's lens is computed for
/// the positions in view (LogitLensView::wantedPositions), more as the view is scrolled.
constexpr int kLensWholePrompt = 256;
/// A long prompt's lens is computed at most this many positions per job (the positions nearest the end first).
constexpr int kLensPositionsPerJob = 128;

QString plainText(const QString& html) {
    QTextDocument d;
    d.setHtml(html);
    return d.toPlainText().replace('\n', "  ·  ");
}
}  // namespace

MainWindow::MainWindow(const StartOptions& options, QWidget* parent) : QMainWindow(parent), start_(options) {
    initResources();
    setWindowIcon(QIcon(":/icons/nnscope.svg"));
    worker_ = new TraceWorker(this);
    // An exception that escaped a slot or an event handler (caught by GuardedApplication, the last net) is shown here.
    if (auto* app = qobject_cast<GuardedApplication*>(QCoreApplication::instance()))
        connect(app, &GuardedApplication::exceptionCaught, this, [this](const QString& message) {
            showError(tr("Something failed inside the window, which goes on: %1").arg(message));
        });
    setAcceptDrops(true);  // checkpoint folders, trace files and dictionaries (dropEvent)
    createJobs();
    undo_ = new QUndoStack(this);
    createActions();
    createCentral();
    createDocks();
    createMenus();
    // pins, interventions and dictionaries go on the undo stack (attachDictionary and detachDictionary record theirs)
    connect(pinned_, &PinnedCardsPanel::pinsChanged, this, &MainWindow::recordEdits);
    connect(interventions_, &InterventionPanel::changed, this, &MainWindow::recordEdits);
    createStatusBar();
    if (start_.useSettings)
        readSettings();
    else {
        resize(1600, 1000);  // reproducible screenshots: no saved layout
        updateRecentMenu();
    }
    if (!start_.dtype.isEmpty()) dtype_ = parseDtypeRequest(start_.dtype.toStdString());  // checked by the command line
    if (!start_.device.isEmpty()) device_ = parseDevice(start_.device.toStdString());    // likewise, usable too
    connect(views_, &QTabWidget::currentChanged, this, &MainWindow::updateActions);
    connect(views_, &QTabWidget::currentChanged, this, &MainWindow::updateDemoCaption);  // it speaks of the Attention view

    // The logit lens is computed when a view that shows it is shown, for the prompt it shows.
    connect(views_, &QTabWidget::currentChanged, this, &MainWindow::ensureLens);
    connect(lens_, &LogitLensView::lensRequested, this, &MainWindow::ensureLens);

    if (!start_.prompts.isEmpty()) tracePanel_->setPrompts(start_.prompts);
    if (!start_.traceFile.isEmpty()) openTraceFile(start_.traceFile);
    if (!start_.graphFile.isEmpty()) openGraphFile(start_.graphFile);
    QString first = start_.model;
    if (first.isEmpty() && start_.openDefault) {
        for (const QString& dir : recent_)
            if (QFileInfo::exists(dir + "/config.json")) {
                first = dir;
                break;
            }
        if (first.isEmpty()) first = demoModelDir();
    }
    if (!first.isEmpty()) openModel(first);
    updateActions();
}

MainWindow::~MainWindow() {
    // the views' last signals while the window comes down (a field losing focus asks for an analysis) ask for nothing
    for (TraceView* v : traceViews()) disconnect(v, nullptr, this, nullptr);
    disconnect(lens_, nullptr, this, nullptr);
    disconnect(views_, nullptr, this, nullptr);
    delete worker_;  // stops and joins the thread while the window can still receive its last signals
    worker_ = nullptr;
}

// ---- construction -------------------------------------------------------------------------------------------

void MainWindow::createJobs() {
    loadJob_ = new JobWatcher(worker_, QStringLiteral("load"), this);
    loadJob_->onFinished<ModelPtr>(this, [this](ModelPtr model) { onModelLoaded(std::move(model)); });
    connect(loadJob_, &JobWatcher::failed, this, [this](const QString& message) { onLoadFailed(loadingDir_, message); });

    traceJob_ = new JobWatcher(worker_, QStringLiteral("trace"), this);
    connect(traceJob_, &JobWatcher::started, this, [this] { tracePanel_->traceStarted(traceBlocks_); });
    connect(traceJob_, &JobWatcher::progressed, this, [this](int done, int total) { tracePanel_->traceProgress(done, total); });
    traceJob_->onFinished<SnapshotPtr>(this, [this](SnapshotPtr snapshot) { onTraceFinished(std::move(snapshot)); });
    connect(traceJob_, &JobWatcher::cancelled, this, &MainWindow::onTraceCancelled);
    connect(traceJob_, &JobWatcher::failed, this, &MainWindow::onTraceFailed);

    lensJob_ = new JobWatcher(worker_, QStringLiteral("lens"), this);
    connect(lensJob_, &JobWatcher::progressed, this, [this](int done, int total) { panelProgress(lensJob_, done, total); });
    lensJob_->onFinished<LensResultsPtr>(this, [this](LensResultsPtr lenses) { onLensFinished(std::move(lenses)); });
    connect(lensJob_, &JobWatcher::cancelled, this, [this] { onLensStopped(JobState::Cancelled, {}); });
    connect(lensJob_, &JobWatcher::failed, this, [this](const QString& message) { onLensStopped(JobState::Failed, message); });

    dashboardJob_ = new JobWatcher(worker_, QStringLiteral("dashboard"), this);
    connect(dashboardJob_, &JobWatcher::progressed, this, [this](int done, int total) { panelProgress(dashboardJob_, done, total); });
    dashboardJob_->onFinished<QString>(this, [this](const QString& out) {
        panelEnd(dashboardJob_, tr("Wrote the dashboard %1.").arg(out), /*warning=*/false);
        openDashboard(out);
    });
    connect(dashboardJob_, &JobWatcher::failed, this, [this](const QString& message) {
        panelEnd(dashboardJob_, tr("The dashboard failed."));
        showError(tr("The dashboard failed: %1").arg(message));
    });
    connect(dashboardJob_, &JobWatcher::cancelled, this, [this] {
        panelEnd(dashboardJob_, tr("The dashboard was stopped: what was done is written; make it again to continue."));
    });
    connect(dashboardJob_, &JobWatcher::ended, this, [this] { emit dashboardEnded(); });
    featuresJob_ = new JobWatcher(worker_, QStringLiteral("features"), this);
    connect(featuresJob_, &JobWatcher::progressed, this, [this](int done, int total) { panelProgress(featuresJob_, done, total); });
    featuresJob_->onFinished<FeatureRunsPtr>(this, [this](FeatureRunsPtr runs) { onFeaturesFinished(std::move(runs)); });
    connect(featuresJob_, &JobWatcher::failed, this, [this](const QString& message) {
        panelEnd(featuresJob_, tr("The dictionaries' features failed."));
        showError(tr("The dictionaries' features failed: %1").arg(message));
    });
    connect(featuresJob_, &JobWatcher::cancelled, this, [this] { panelEnd(featuresJob_, tr("The dictionaries' features were cancelled.")); });
    connect(featuresJob_, &JobWatcher::ended, this, [this] {
        updateActions();
        emit featuresEnded();
        checkViewJobsDone();
    });

    patchJob_ = new JobWatcher(worker_, QStringLiteral("patch"), this);
    connect(patchJob_, &JobWatcher::progressed, this, [this](int done, int total) { patching_->setProgress(done, total); });
    patchJob_->onFinished<PatchingResultPtr>(this, [this](PatchingResultPtr result) {
        patching_->setResult(std::move(result), patchMetric_);
        updateActions();
    });
    connect(patchJob_, &JobWatcher::failed, this, [this](const QString& message) { patching_->setFailed(tr("Patching failed: %1").arg(message)); });
    connect(patchJob_, &JobWatcher::cancelled, this, [this] { patching_->setFailed(tr("Patching was cancelled.")); });
    connect(patchJob_, &JobWatcher::ended, this, &MainWindow::patchEnded);

    generateJob_ = new JobWatcher(worker_, QStringLiteral("generate"), this);
    generateJob_->onFinished<GenerationPairPtr>(this, [this](GenerationPairPtr result) {
        generate_->setResult(std::move(result));
        updateActions();
    });
    connect(generateJob_, &JobWatcher::failed, this, [this](const QString& message) { generate_->setFailed(tr("Generation failed: %1").arg(message)); });
    connect(generateJob_, &JobWatcher::cancelled, this, [this] { generate_->setFailed(tr("Generation was cancelled.")); });
    connect(generateJob_, &JobWatcher::ended, this, &MainWindow::generateEnded);

    rereadJob_ = new JobWatcher(worker_, QStringLiteral("reread"), this);
    rereadJob_->onFinished<SnapshotPtr>(this, [this](SnapshotPtr snapshot) { onValuesRead(std::move(snapshot)); });
    connect(rereadJob_, &JobWatcher::failed, this, [this](const QString& message) {
        pinned_->setUnreadText(tr("Could not read it from the last trace's inputs: %1").arg(message));
    });
    connect(rereadJob_, &JobWatcher::cancelled, this, [this] { pinned_->setUnreadText(tr("Reading it was cancelled: the next trace reads it.")); });
    connect(rereadJob_, &JobWatcher::ended, this, [this](JobState state) {
        if (state != JobState::Finished) emit pinsRead();  // a finished read says so once it has looked for more (onValuesRead)
    });

    openTraceJob_ = new JobWatcher(worker_, QStringLiteral("open trace"), this);
    openTraceJob_->onFinished<SnapshotPtr>(this, [this](SnapshotPtr snapshot) { onTraceFileOpened(std::move(snapshot)); });
    connect(openTraceJob_, &JobWatcher::failed, this, [this](const QString& message) { onTraceFileFailed(openTracePath_, message); });
    connect(openTraceJob_, &JobWatcher::cancelled, this, [this] { onTraceFileFailed(openTracePath_, tr("opening it was cancelled.")); });

    checksJob_ = new JobWatcher(worker_, QStringLiteral("checks"), this);
    checksJob_->onFinished<CheckResultsPtr>(this, [this](CheckResultsPtr results) { family_->setChecks(std::move(results), checksPrompt_); });
    connect(checksJob_, &JobWatcher::failed, this, [this](const QString& message) { family_->setFailed(message); });
    connect(checksJob_, &JobWatcher::ended, this, &MainWindow::checksEnded);
}

void MainWindow::createActions() {
    openAct_ = new QAction(QIcon::fromTheme("document-open", QIcon(":/icons/open.svg")), tr("&Open Checkpoint…"), this);
    openAct_->setShortcuts(QKeySequence::Open);
    openAct_->setStatusTip(tr("Open a checkpoint folder (config.json, model.safetensors, tokenizer)"));
    connect(openAct_, &QAction::triggered, this, &MainWindow::openDialog);

    openTraceAct_ = new QAction(QIcon::fromTheme("document-open"), tr("Open &Trace…"), this);
    openTraceAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    openTraceAct_->setStatusTip(tr("Browse a trace saved to .safetensors (nnscope trace --out, Export ▸ Trace, or nnterp) "
                                   "without the model's weights"));
    connect(openTraceAct_, &QAction::triggered, this, &MainWindow::openTraceDialog);

    openGraphAct_ = new QAction(QIcon::fromTheme("document-open"), tr("Open &Graph…"), this);
    openGraphAct_->setStatusTip(tr("Show an attribution graph JSON (circuit-tracer's create_graph_files, a Neuronpedia download, or "
                                   "Export ▸ Save Graph) in the Circuit view, without a model"));
    connect(openGraphAct_, &QAction::triggered, this, &MainWindow::openGraphDialog);
    saveGraphAct_ = new QAction(QIcon::fromTheme("document-save-as", QIcon(":/icons/export.svg")), tr("Save &Graph…"), this);
    saveGraphAct_->setStatusTip(tr("Write the Circuit view's graph, pruned at its thresholds, as circuit-tracer / Neuronpedia JSON with "
                                   "its labels, pins and supernodes"));
    connect(saveGraphAct_, &QAction::triggered, this, &MainWindow::saveGraphDialog);

    openDictionaryAct_ = new QAction(QIcon::fromTheme("document-open"), tr("Open &Dictionary…"), this);
    openDictionaryAct_->setStatusTip(tr("Attach a sparse dictionary (an SAE or transcoder folder: SAELens, Gemma Scope, sparsify, "
                                        "Llama Scope; a circuit-tracer transcoder set attaches every layer) to the open checkpoint; the Features view "
                                        "shows its features"));
    connect(openDictionaryAct_, &QAction::triggered, this, &MainWindow::openDictionaryDialog);

    openDashboardAct_ = new QAction(QIcon::fromTheme("document-open"), tr("Open Dash&board…"), this);
    openDashboardAct_->setStatusTip(tr("Show a feature dashboard (nnscope features --dataset FILE.txt --out FILE) in the Features view: "
                                       "each feature's top contexts, histogram and density in that dataset"));
    connect(openDashboardAct_, &QAction::triggered, this, &MainWindow::openDashboardDialog);

    makeDashboardAct_ = new QAction(tr("&Make Dashboard…"), this);
    makeDashboardAct_->setStatusTip(tr("Run a text file (one document per line) through the model and the dictionary the Features view shows, "
                                       "keeping each feature's top contexts, histogram and density (nnscope features --dataset); "
                                       "Cancel stops after the current batch, and making it again continues"));
    connect(makeDashboardAct_, &QAction::triggered, this, &MainWindow::makeDashboardDialog);

    exportTraceAct_ = new QAction(QIcon::fromTheme("document-save-as", QIcon(":/icons/export.svg")), tr("Export &Trace…"), this);
    exportTraceAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_S));
    exportTraceAct_->setStatusTip(tr("Write every value of the last trace to one .safetensors file, which File ▸ Open Trace reads back"));
    connect(exportTraceAct_, &QAction::triggered, this, &MainWindow::exportTraceDialog);
    exportDictionaryValuesAct_ = new QAction(tr("Export the &Dictionaries' Values with the Trace"), this);
    exportDictionaryValuesAct_->setObjectName("exportDictionaryValuesAction");
    exportDictionaryValuesAct_->setCheckable(true);
    exportDictionaryValuesAct_->setStatusTip(tr("Export ▸ Trace also writes each attached dictionary's features, reconstruction and error "
                                                "(SITE[NAME].features, ...) with its folder and the sha256 of its weights"));

    reloadAct_ = new QAction(QIcon::fromTheme("view-refresh"), tr("&Reload Checkpoint"), this);
    reloadAct_->setShortcuts(QKeySequence::Refresh);
    reloadAct_->setStatusTip(tr("Open the current checkpoint again (after changing the compute dtype)"));
    connect(reloadAct_, &QAction::triggered, this, [this] {
        if (canRun()) openModel(QString::fromStdString(model_->dir()));
    });

    clearRecentAct_ = new QAction(tr("&Clear List"), this);
    connect(clearRecentAct_, &QAction::triggered, this, [this] {
        recent_.clear();
        updateRecentMenu();
    });

    quitAct_ = new QAction(QIcon::fromTheme("application-exit"), tr("&Quit"), this);
    quitAct_->setShortcuts(QKeySequence::Quit);
    quitAct_->setStatusTip(tr("Quit nnscope"));
    connect(quitAct_, &QAction::triggered, this, &QWidget::close);

    runAct_ = new QAction(QIcon::fromTheme("media-playback-start", QIcon(":/icons/run.svg")), tr("&Run"), this);
    runAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    runAct_->setStatusTip(tr("Trace the prompts in a worker thread"));
    connect(runAct_, &QAction::triggered, this, &MainWindow::runTrace);

    cancelAct_ = new QAction(QIcon::fromTheme("process-stop", QIcon(":/icons/cancel.svg")), tr("&Cancel"), this);
    cancelAct_->setShortcuts(QKeySequence::Cancel);
    cancelAct_->setStatusTip(tr("Stop the running trace within one block"));
    connect(cancelAct_, &QAction::triggered, this, &MainWindow::cancelTrace);

    exportPlotAct_ = new QAction(QIcon::fromTheme("document-save-as", QIcon(":/icons/export.svg")), tr("Export &Plot…"), this);
    // QKeySequence::SaveAs is empty on some platforms (and under the offscreen one): the documented Ctrl+Shift+S always
    exportPlotAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    exportPlotAct_->setStatusTip(tr("Write the current plot to PNG, SVG or PDF"));
    connect(exportPlotAct_, &QAction::triggered, this, &MainWindow::exportPlotDialog);

    exportValueAct_ = new QAction(QIcon::fromTheme("document-save", QIcon(":/icons/export.svg")), tr("Export &Value…"), this);
    exportValueAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
    exportValueAct_->setStatusTip(tr("Write the value the current view shows to .npy, .safetensors or CSV"));
    connect(exportValueAct_, &QAction::triggered, this, &MainWindow::exportViewValueDialog);

    preferencesAct_ = new QAction(QIcon::fromTheme("preferences-system"), tr("&Preferences…"), this);
    preferencesAct_->setShortcuts(QKeySequence::Preferences);
    if (preferencesAct_->shortcuts().isEmpty())  // some desktops define no Preferences key
        preferencesAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    preferencesAct_->setStatusTip(tr("Compute dtype, device (CPU or GPU), CPU threads, logit-lens depth"));
    connect(preferencesAct_, &QAction::triggered, this, &MainWindow::preferencesDialog);

    aboutAct_ = new QAction(QIcon::fromTheme("help-about"), tr("&About nnscope"), this);
    connect(aboutAct_, &QAction::triggered, this, &MainWindow::about);
    // Help > Documentation (F1): the guide to the window shipped with the program (docsDir), in the desktop's viewer
    docsAct_ = new QAction(QIcon::fromTheme("help-contents"), tr("&Documentation"), this);
    docsAct_->setShortcuts(QKeySequence::HelpContents);
    if (docsAct_->shortcut().isEmpty()) docsAct_->setShortcut(QKeySequence(Qt::Key_F1));
    const QString docs = docsDir();
    docsAct_->setEnabled(!docs.isEmpty());
    docsAct_->setStatusTip(docs.isEmpty() ? tr("No documentation was installed with this program")
                                          : tr("Open %1/GUI.md, the guide to the window (the other guides are beside it)").arg(docs));
    connect(docsAct_, &QAction::triggered, this, [this, docs] {
        if (!QDesktopServices::openUrl(QUrl::fromLocalFile(docs + "/GUI.md")))
            statusBar()->showMessage(tr("No program to open %1/GUI.md was found; the guides are in %1").arg(docs), 10000);
    });
    aboutQtAct_ = new QAction(tr("About &Qt"), this);
    connect(aboutQtAct_, &QAction::triggered, qApp, &QApplication::aboutQt);

    for (const ViewSpec& spec : viewSpecs()) {
        const QString title = tr(spec.menuText);
        auto* a = new QAction(title, this);
        a->setShortcut(viewShortcut(spec));
        a->setStatusTip(tr("Show the %1 view").arg(QString(title).remove('&')));
        const QString name = QString::fromLatin1(spec.name);
        connect(a, &QAction::triggered, this, [this, name] { showView(name); });
        viewActs_ << a;
    }
}

void MainWindow::createCentral() {
    startPage_ = new QTextBrowser(this);
    startPage_->setOpenLinks(false);
    connect(startPage_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
        if (url.scheme() == "open") openDialog();
        else if (url.scheme() == "recent") openModel(url.path());
    });

    summary_ = new QTextBrowser(this);
    summary_->setOpenLinks(false);  // a trace file's "copy the whole prompt" link is ours; a web link opens in the browser
    connect(summary_, &QTextBrowser::anchorClicked, this, &MainWindow::onSummaryLink);
    attention_ = new AttentionView(this);
    neurons_ = new NeuronView(this);
    lens_ = new LogitLensView(this);
    family_ = new FamilyView(this);
    compare_ = new CompareView(this);
    patching_ = new PatchingView(this);
    attribution_ = new AttributionView(this);
    generate_ = new GenerateView(this);
    flow_ = new FlowView(this);
    heads_ = new HeadsView(this);
    text_ = new TextView(this);
    features_ = new FeaturesView(this);
    circuit_ = new CircuitView(this);
    routing_ = new RoutingView(this);
    circuitJob_ = new JobWatcher(worker_, QStringLiteral("circuit"), this);
    connect(circuitJob_, &JobWatcher::progressed, this, [this](int done, int total) { panelProgress(circuitJob_, done, total); });
    circuitJob_->onFinished<ComputedCircuitPtr>(this, [this](ComputedCircuitPtr computed) {
        const AttributionGraph& graph = computed->graph;
        const QString what = tr("Attribution graph: %1 features, %2 edges in all.")
                                 .arg(std::count_if(graph.nodes.begin(), graph.nodes.end(),
                                                    [](const GraphNode& n) { return n.kind == GraphNode::Kind::Feature; }))
                                 .arg(graph.edgeCount());
        panelEnd(circuitJob_, what, /*warning=*/false);
        circuit_->setComputeMessage(circuit_->computeMessage()->text() + " " + what);
        circuit_->setGraph(graph);
        // a feature's card: the tokens its decoder row promotes and suppresses (for a cross-layer transcoder, the sum of
        // its decoder rows to every layer it writes)
        const ModelPtr model = snapshot_ ? snapshot_->model : nullptr;
        circuitTranscoders_ = std::shared_ptr<const CircuitTranscoders>(computed, &computed->transcoders);
        // and its top contexts where a dashboard sits beside the layer's transcoder (looked for once per layer; for a
        // cross-layer transcoder, beside the layer's encoder file: W_enc_L.dashboard.safetensors)
        auto dashboards = std::make_shared<std::map<int, std::pair<std::shared_ptr<const Dashboard>, QString>>>();
        circuit_->setFeatureDetails([model, transcoders = circuitTranscoders_, dashboards](const GraphNode& n) -> QString {
            if (!model || n.layer < 0 || n.layer >= transcoders->numLayers()) return {};
            const bool perLayer = !transcoders->perLayer.empty();
            auto found = dashboards->find(n.layer);
            if (found == dashboards->end()) {
                std::pair<std::shared_ptr<const Dashboard>, QString> entry;
                try {
                    entry.first = findDashboard(perLayer ? *transcoders->perLayer[static_cast<size_t>(n.layer)]
                                                         : *transcoders->crossLayer->layerEncoder(n.layer));
                } catch (const std::exception& e) {
                    entry.second = QString::fromStdString(e.what());
                }
                found = dashboards->emplace(n.layer, std::move(entry)).first;
            }
            const QString examples = found->second.first ? dashboardExamplesHtml(*model, *found->second.first, n.index, 5)
                                     : found->second.second.isEmpty()
                                         ? QString()
                                         : QObject::tr("<p style='color:gray'>No dashboard: %1</p>").arg(found->second.second.toHtmlEscaped());
            try {
                const FeatureLogitEffects e =
                    perLayer ? featureLogitEffects(*model, *transcoders->perLayer[static_cast<size_t>(n.layer)], n.index, 5)
                             : featureLogitEffects(*model, *transcoders->crossLayer, n.layer, n.index, 5);
                auto tokens = [&](const std::vector<TokenEffect>& effects) {
                    QStringList out;
                    for (const TokenEffect& t : effects)
                        out << QStringLiteral("“%1” %2")
                                   .arg(QString::fromStdString(model->tokenizer() ? model->tokenizer()->tokenLabel(t.id) : std::to_string(t.id)).toHtmlEscaped())
                                   .arg(t.logit, 0, 'f', 2);
                    return out.join(QStringLiteral(", "));
                };
                const QString how = perLayer ? QObject::tr("its decoder row through the final norm's gain and the unembedding")
                                             : QObject::tr("the sum of its decoder rows to layers %1 to %2 through the final norm's gain and "
                                                           "the unembedding")
                                                   .arg(n.layer)
                                                   .arg(transcoders->numLayers() - 1);
                return QObject::tr("<p><b>Promotes</b> %1<br><b>Suppresses</b> %2<br><span style='color:gray'>%3</span></p>")
                           .arg(tokens(e.promoted), tokens(e.suppressed), how) +
                       examples;
            } catch (const std::exception& e) {
                return QObject::tr("<p>No logit effects: %1</p>").arg(QString::fromStdString(e.what()).toHtmlEscaped()) + examples;
            }
        });
        updateCircuitCompute();
    });
    connect(circuitJob_, &JobWatcher::failed, this, [this](const QString& message) {
        panelEnd(circuitJob_, tr("The attribution graph failed."));
        circuit_->setComputeMessage(tr("The attribution graph failed: %1").arg(message));
        updateCircuitCompute();
    });
    connect(circuitJob_, &JobWatcher::cancelled, this, [this] {
        panelEnd(circuitJob_, tr("The attribution graph was cancelled."));
        circuit_->setComputeMessage(tr("The attribution graph was cancelled."));
        updateCircuitCompute();
    });
    connect(circuit_, &CircuitView::computeRequested, this, [this](const QString& dir) { computeCircuit(dir); });
    connect(circuit_, &CircuitView::steerRequested, this,
            [this](const std::vector<GraphNode>& features, double value, bool clamp, bool atOwnPosition) {
                steerCircuitFeatures(features, value, clamp, atOwnPosition);
            });
    // the tabs, in the registry's order (viewregistry.h): each name's widget
    const std::map<QString, QWidget*> widgets = {
        {"model", summary_},     {"attention", attention_},     {"neurons", neurons_},   {"lens", lens_},
        {"family", family_},     {"compare", compare_},         {"patching", patching_}, {"attribution", attribution_},
        {"generate", generate_}, {"flow", flow_},               {"heads", heads_},       {"text", text_},
        {"features", features_}, {"circuit", circuit_},         {"routing", routing_}};
    views_ = new QTabWidget(this);
    views_->setDocumentMode(true);
    views_->setTabsClosable(true);
    useSideTabs(views_);  // every view's name in sight at any width (#28)
    for (const ViewSpec& spec : viewSpecs()) {
        QWidget* widget = widgets.at(QString::fromLatin1(spec.name));
        views_->addTab(widget, tr(spec.tabText));
        viewList_.push_back({&spec, widget});
    }
    connect(heads_, &HeadsView::headChosen, this, [this](int layer, int head) {
        diagram_->setBlock(layer);
        attention_->setBlock(layer);
        attention_->setHead(head);
        text_->setHead(head);
        showView("attention");
    });
    // the Text view shows the head the Attention view shows (its "mean of the heads" for the grid of every head)
    connect(attention_, &AttentionView::headChanged, text_, &TextView::setHead);
    connect(features_, &FeaturesView::featureSelected, this, [this](int dictionary, qint64 feature) { text_->setFeature(dictionary, feature); });
    connect(features_, &FeaturesView::pinRequested, this, [this](int dictionary, qint64 feature) {
        const DictionaryRun* d = features_->currentDictionary();
        if (!d || dictionary != features_->dictionary()) return;
        pinned_->pinFeature(QString::fromStdString(d->attached.dictionary->dir), d->name, d->site, feature);
        pinnedDock_->show();
        pinnedDock_->raise();
    });
    connect(generate_, &GenerateView::generateRequested, this, &MainWindow::runGeneration);
    connect(generate_, &GenerateView::cancelRequested, generateJob_, &JobWatcher::cancel);
    connect(patching_, &PatchingView::patchRequested, this, &MainWindow::runPatching);
    connect(patching_, &PatchingView::cancelRequested, patchJob_, &JobWatcher::cancel);
    for (int i = 0; i < fixedViews(); ++i) views_->tabBar()->setTabButton(i, QTabBar::RightSide, nullptr);  // the fixed views stay
    connect(views_, &QTabWidget::tabCloseRequested, this, [this](int index) {
        if (index >= fixedViews()) views_->widget(index)->deleteLater();
    });
    connect(family_, &FamilyView::runChecksRequested, this, &MainWindow::runChecks);
    // The checks cost a few forward passes: they run the first time the page is looked at, not on every open.
    connect(views_, &QTabWidget::currentChanged, this, [this] {
        if (views_->currentWidget() == family_ && canRun() && !family_->checks() && !checksJob_->isActive()) runChecks(family_->checkPrompt());
        if (views_->currentWidget() == text_) text_->followNeuron(neurons_->neuron());  // the neuron picked there
    });

    centralStack_ = new QStackedWidget(this);
    centralStack_->addWidget(startPage_);
    centralStack_->addWidget(views_);

    messageBar_ = new QFrame(this);
    messageBar_->setStyleSheet("QFrame { background: #fde7e9; border: 1px solid #e3a1a8; border-radius: 4px; }"
                               "QLabel { border: none; color: #7a0010; }");
    messageLabel_ = new QLabel(messageBar_);
    messageLabel_->setWordWrap(true);
    messageLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton(messageBar_);
    close->setText("✕");
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    connect(close, &QToolButton::clicked, this, &MainWindow::clearError);
    auto* barLayout = new QHBoxLayout(messageBar_);
    barLayout->setContentsMargins(8, 4, 4, 4);
    barLayout->addWidget(messageLabel_, 1);
    barLayout->addWidget(close, 0, Qt::AlignTop);
    messageBar_->hide();

    nonFiniteBanner_ = new QLabel(this);
    nonFiniteBanner_->setObjectName("nonFiniteBanner");
    nonFiniteBanner_->setWordWrap(true);
    nonFiniteBanner_->setTextFormat(Qt::PlainText);  // a token such as "<s>" is text
    nonFiniteBanner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    nonFiniteBanner_->setStyleSheet("QLabel#nonFiniteBanner { background: #fff4d6; border: 1px solid #e0b252; border-radius: 4px;"
                                    " color: #5c3c00; padding: 4px 8px; }");
    nonFiniteBanner_->hide();

    // #28: nothing on screen said what the demo's stripe is or where to click next
    demoCaption_ = new QFrame(this);
    demoCaption_->setObjectName("demoCaption");
    demoCaption_->setStyleSheet("QFrame#demoCaption { background: #e8f1fb; border: 1px solid #9cbfe3; border-radius: 4px; }"
                                "QLabel { border: none; color: #0d2c4f; }");
    auto* captionText = new QLabel(
        tr("<b>This is nnscope's demo model</b> (2 blocks, trained by nnscope on simple stories, docs/DEMO.md). The prompt says "
           "one sentence twice. In block 1's attention pattern each word of the second half attends to the word that "
           "followed it the first time: that diagonal stripe is an <b>induction head</b> copying the sentence. Next: hover a "
           "cell for its probability, click <b>Heads</b> (Ctrl+Shift+H) to score every head, <b>Features</b> for the demo's "
           "sparse autoencoder, <b>Circuit</b> (Ctrl+Shift+G) for the attribution graph of the next word through its transcoders, "
           "or File ▸ Open Checkpoint (Ctrl+O) for your own model."),
        demoCaption_);
    captionText->setWordWrap(true);
    captionText->setTextFormat(Qt::RichText);
    auto* gotIt = new QPushButton(tr("Got it"), demoCaption_);
    gotIt->setToolTip(tr("Hide this caption for good"));
    connect(gotIt, &QPushButton::clicked, this, [this] {
        demoCaptionWanted_ = false;
        updateDemoCaption();
        QSettings().setValue("demo/captionDismissed", true);
    });
    auto* captionLayout = new QHBoxLayout(demoCaption_);
    captionLayout->setContentsMargins(8, 4, 4, 4);
    captionLayout->addWidget(captionText, 1);
    captionLayout->addWidget(gotIt, 0, Qt::AlignVCenter);
    demoCaption_->hide();

    // #28: after an intervention is added the views still show the trace without it: said here, with Run
    staleBar_ = new QFrame(this);
    staleBar_->setObjectName("staleBar");
    staleBar_->setStyleSheet("QFrame#staleBar { background: #fff4d6; border: 1px solid #e0b252; border-radius: 4px; }"
                             "QLabel { border: none; color: #5c3c00; }");
    staleLabel_ = new QLabel(staleBar_);
    staleLabel_->setWordWrap(true);
    staleRun_ = new QPushButton(tr("Run"), staleBar_);
    staleRun_->setToolTip(tr("Trace the prompts again with the interventions as they are now (Ctrl+Return)"));
    connect(staleRun_, &QPushButton::clicked, this, &MainWindow::runTrace);
    auto* staleLayout = new QHBoxLayout(staleBar_);
    staleLayout->setContentsMargins(8, 4, 4, 4);
    staleLayout->addWidget(staleLabel_, 1);
    staleLayout->addWidget(staleRun_, 0, Qt::AlignVCenter);
    staleBar_->hide();
    rerunTimer_ = new QTimer(this);
    rerunTimer_->setSingleShot(true);
    rerunTimer_->setInterval(300);  // after the last of several quick edits
    connect(rerunTimer_, &QTimer::timeout, this, [this] {
        if (staleInterventionsNote_ && !tracePanel_->isRunning()) runTrace();
    });

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(messageBar_);
    layout->addWidget(nonFiniteBanner_);
    layout->addWidget(staleBar_);
    layout->addWidget(demoCaption_);
    layout->addWidget(centralStack_, 1);
    setCentralWidget(central);

    for (TraceView* v : traceViews(ViewSpec::FollowsBlock)) connect(v, &TraceView::blockChanged, this, &MainWindow::onBlockChanged);
    // the prompt chosen in one view is the prompt of all of them
    for (TraceView* v : traceViews(ViewSpec::SharesPrompt)) connect(v, &TraceView::promptChanged, this, &MainWindow::onPromptChanged);
    for (TraceView* v : traceViews()) {
        // only the views that offer interventions in their menus emit it (attention, neurons, attribution)
        connect(v, &TraceView::interventionRequested, this, [this](const QString& text) { addIntervention(text); });
        // what a view computes from the trace runs in the worker
        connect(v, &TraceView::analysisRequested, this, [this, v](const AnalysisRequest& request) { runAnalysis(v, request); });
        connect(v, &TraceView::analysisDropped, this, [this, v] {
            ViewJob& job = viewJob(v);
            const bool active = job.watcher->isActive();
            job.waiting = false;
            job.request = {};
            job.watcher->cancelQuietly();
            panelEnd(job.watcher, {});
            if (active) checkViewJobsDone();
        });
    }
}

QList<TraceView*> MainWindow::traceViews(int follows) const {
    QList<TraceView*> list;
    for (const View& v : viewList_)
        if (auto* t = qobject_cast<TraceView*>(v.widget); t && (v.spec->follows & follows) == follows) list << t;
    return list;
}

void MainWindow::createDocks() {
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

    diagram_ = new DiagramPanel(this);
    auto* diagramDock = new QDockWidget(tr("Block diagram"), this);
    diagramDock->setObjectName("diagramDock");
    diagramDock->setWidget(diagram_);
    addDockWidget(Qt::LeftDockWidgetArea, diagramDock);
    connect(diagram_->diagram(), &BlockDiagram::partHovered, this, &MainWindow::onPartHovered);
    connect(diagram_->diagram(), &BlockDiagram::partClicked, this, &MainWindow::onPartClicked);
    connect(diagram_, &DiagramPanel::blockChanged, this, &MainWindow::onBlockChanged);

    supportModel_ = new SupportTableModel(this);
    supportView_ = new QTableView(this);
    supportView_->setModel(supportModel_);
    supportView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    supportView_->setSelectionMode(QAbstractItemView::SingleSelection);
    supportView_->setWordWrap(true);
    supportView_->verticalHeader()->hide();
    supportView_->horizontalHeader()->setStretchLastSection(true);
    supportView_->setAlternatingRowColors(false);
    connect(supportView_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::onSupportRowChanged);
    connect(supportModel_, &QAbstractItemModel::modelReset, this, [this] {
        supportView_->clearSpans();
        for (int r = 0; r < supportModel_->rowCount(); ++r)
            if (supportModel_->isHostRow(r)) supportView_->setSpan(r, 0, 1, SupportTableModel::ColumnCount);
        supportView_->resizeColumnsToContents();
        supportView_->setColumnWidth(SupportTableModel::WhatColumn, 320);
        supportView_->resizeRowsToContents();
    });

    printoutModel_ = new PrintoutModel(this);
    printoutView_ = new QListView(this);
    printoutView_->setModel(printoutModel_);
    printoutView_->setTextElideMode(Qt::ElideNone);  // the printout's lines are read whole; the view scrolls sideways
    printoutView_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    connect(printoutView_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::onPrintoutRowChanged);

    auto* tables = new QTabWidget(this);
    tables->setDocumentMode(true);
    tables->addTab(supportView_, tr("Support table"));
    tables->addTab(printoutView_, tr("Printout"));
    auto* tablesDock = new QDockWidget(tr("Support table / Printout"), this);
    tablesDock->setObjectName("tablesDock");
    tablesDock->setWidget(tables);
    addDockWidget(Qt::LeftDockWidgetArea, tablesDock);
    tabifyDockWidget(diagramDock, tablesDock);
    diagramDock->raise();

    pinned_ = new PinnedCardsPanel(this);
    auto* pinnedDock = new QDockWidget(tr("Pinned cards"), this);
    pinnedDock->setObjectName("pinnedDock");
    pinnedDock->setWidget(pinned_);
    addDockWidget(Qt::RightDockWidgetArea, pinnedDock);
    connect(pinned_, &PinnedCardsPanel::plotRequested, this, &MainWindow::plotValue);
    connect(pinned_, &PinnedCardsPanel::exportRequested, this, &MainWindow::exportValueDialog);
    connect(pinned_, &PinnedCardsPanel::pinsChanged, this, &MainWindow::updatePinMarks);
    connect(pinned_, &PinnedCardsPanel::featureShowRequested, this, [this](const QString& dir, qint64 feature) {
        for (size_t i = 0; i < dictionaries_.size(); ++i)
            if (QString::fromStdString(dictionaries_[i].dictionary->dir) == dir) {
                features_->setDictionary(static_cast<int>(i));
                features_->selectFeature(feature);
                showView("features");
            }
    });
    connect(pinned_, &PinnedCardsPanel::pinsChanged, this, [this] { text_->setPinnedKeys(pinned_->keys()); });
    connect(pinned_, &PinnedCardsPanel::message, this, [this](const QString& text) { statusBar()->showMessage(text, 6000); });
    // a double-click on a row of the support table or the printout pins its value at the block shown
    auto pinRow = [this](std::optional<Value> v) {
        if (!v || !model_) return;
        pinValue({*v, valueInfo(*v).host == Host::Model ? -1 : diagram_->block()});
    };
    connect(supportView_, &QTableView::doubleClicked, this, [this, pinRow](const QModelIndex& i) { pinRow(supportModel_->valueAt(i.row())); });
    connect(printoutView_, &QListView::doubleClicked, this, [this, pinRow](const QModelIndex& i) { pinRow(printoutModel_->valueAt(i.row())); });

    interventions_ = new InterventionPanel(this);
    interventionsDock_ = new QDockWidget(tr("Interventions"), this);
    interventionsDock_->setObjectName("interventionsDock");
    interventionsDock_->setWidget(interventions_);
    addDockWidget(Qt::RightDockWidgetArea, interventionsDock_);
    splitDockWidget(pinnedDock, interventionsDock_, Qt::Vertical);
    connect(interventions_, &InterventionPanel::steeringDialogRequested, this, &MainWindow::steeringDialog);
    connect(interventions_, &InterventionPanel::changed, this, [this] {
        const int n = static_cast<int>(interventions_->active().size());
        interventionsDock_->setWindowTitle(n ? tr("Interventions (%1 active)").arg(n) : tr("Interventions"));
        patching_->setActiveInterventions(interventions_->active());  // patching runs with them too
        interventionsChanged();
    });
    connect(pinned_, &PinnedCardsPanel::editRequested, this, [this](const ValueKey& key) {
        if (!model_) return;
        interventionsDock_->show();
        interventionsDock_->raise();
        interventions_->beginEdit(QString::fromStdString(valuePath(model_->family(), key)) + "[...] = ");
    });

    tracePanel_ = new TracePanel(this);
    auto* traceDock = new QDockWidget(tr("Trace"), this);
    traceDock->setObjectName("traceDock");
    traceDock->setWidget(tracePanel_);
    addDockWidget(Qt::BottomDockWidgetArea, traceDock);
    connect(tracePanel_, &TracePanel::runRequested, this, &MainWindow::runTrace);
    connect(tracePanel_, &TracePanel::cancelRequested, this, &MainWindow::cancelTrace);

    diagramDock_ = diagramDock;
    pinnedDock_ = pinnedDock;
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (!sizedDocks_ && !restoredState_) {  // first start: room for the diagram at its natural width
        resizeDocks({diagramDock_, pinnedDock_}, {480, 300}, Qt::Horizontal);
        resizeDocks({pinnedDock_, interventionsDock_}, {640, 240}, Qt::Vertical);  // cards first; the list is short
    }
    sizedDocks_ = true;
}

void MainWindow::changeEvent(QEvent* event) {
    QMainWindow::changeEvent(event);
    // a dark (or light) palette set while the window is open: the model page's chips and notes take its colours
    if (event->type() == QEvent::PaletteChange && model_) summary_->setHtml(modelSummaryHtml(*model_, summary_->palette()));
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));  // after File, as desktops have it
    QAction* undoAct = undo_->createUndoAction(this, tr("&Undo"));
    undoAct->setShortcut(QKeySequence::Undo);
    QAction* redoAct = undo_->createRedoAction(this, tr("&Redo"));
    redoAct->setShortcut(QKeySequence::Redo);
    edit->addAction(undoAct);
    edit->addAction(redoAct);
    file->addAction(openAct_);
    file->addAction(openTraceAct_);
    file->addAction(openGraphAct_);
    file->addAction(openDictionaryAct_);
    file->addAction(openDashboardAct_);
    file->addAction(makeDashboardAct_);
    // one entry per attached dictionary, made when the menu opens
    QMenu* detach = file->addMenu(tr("Detac&h Dictionary"));
    detach->setObjectName("detachDictionaryMenu");
    connect(detach, &QMenu::aboutToShow, this, [this, detach] {
        detach->clear();
        const QStringList names = dictionaryNames();
        for (int i = 0; i < names.size(); ++i)
            connect(detach->addAction(names[i]), &QAction::triggered, this, [this, i] { detachDictionary(i); });
        if (names.isEmpty()) detach->addAction(tr("(none attached)"))->setEnabled(false);
    });
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    file->addAction(reloadAct_);
    file->addSeparator();
    file->addAction(preferencesAct_);
    file->addSeparator();
    file->addAction(quitAct_);

    viewMenu_ = menuBar()->addMenu(tr("&View"));
    for (QAction* a : viewActs_) viewMenu_->addAction(a);
    viewMenu_->addSeparator();
    for (QDockWidget* dock : findChildren<QDockWidget*>()) viewMenu_->addAction(dock->toggleViewAction());

    QMenu* trace = menuBar()->addMenu(tr("&Trace"));
    trace->addAction(runAct_);
    trace->addAction(cancelAct_);

    QMenu* exp = menuBar()->addMenu(tr("&Export"));
    exp->addAction(exportPlotAct_);
    exp->addAction(exportValueAct_);
    exp->addAction(exportTraceAct_);
    exp->addAction(exportDictionaryValuesAct_);
    exp->addSeparator();
    exp->addAction(saveGraphAct_);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(docsAct_);
    help->addAction(aboutAct_);
    help->addAction(aboutQtAct_);
}

namespace {
/// A status bar whose message (a hovered part's card, a menu's status tip) ends in "…" a little before the model label
/// when it is longer than the room there; QStatusBar cut it mid-letter against the label ("q_pmodel: demo-model").
class ElidingStatusBar : public QStatusBar {
public:
    using QStatusBar::QStatusBar;

protected:
    void paintEvent(QPaintEvent* event) override {
        const QString message = currentMessage();
        if (message.isEmpty()) return QStatusBar::paintEvent(event);
        // what QStatusBar::paintEvent draws with a message shown: the panel, the permanent widgets' frames, the text
        QPainter p(this);
        QStyleOption panel;
        panel.initFrom(this);
        style()->drawPrimitive(QStyle::PE_PanelStatusBar, &panel, &p, this);
        int right = width() - 12;
        for (const QLabel* w : findChildren<QLabel*>(QString(), Qt::FindDirectChildrenOnly)) {
            if (!w->isVisible()) continue;
            QStyleOption frame(0);
            frame.rect = w->geometry().adjusted(-2, -1, 2, 1);
            frame.palette = palette();
            frame.state = QStyle::State_None;
            style()->drawPrimitive(QStyle::PE_FrameStatusBarItem, &frame, &p, w);
            right = std::min(right, w->x() - 16);  // a gap before the label
        }
        const QRect room(6, 0, std::max(0, right - 6), height());
        p.setPen(palette().windowText().color());
        p.drawText(room, Qt::AlignLeading | Qt::AlignVCenter | Qt::TextSingleLine,
                   fontMetrics().elidedText(message, Qt::ElideRight, room.width()));
    }
};
}  // namespace

void MainWindow::createStatusBar() {
    setStatusBar(new ElidingStatusBar(this));
    modelLabel_ = new QLabel(this);
    statusBar()->addPermanentWidget(modelLabel_);
    statusBar()->showMessage(tr("Ready"));
}

void MainWindow::readSettings() {
    QSettings settings;
    const QByteArray geometry = settings.value("window/geometry").toByteArray();
    if (geometry.isEmpty()) {
        // 1500 × 950, or the screen's free area where it is smaller (a 1280 × 800 laptop); not the offscreen platform's
        // nominal 800 × 600 screen (its windows draw to memory whole, whatever their size: screenshots, tests)
        QSize size(1500, 950);
        const QScreen* screen = QGuiApplication::primaryScreen();
        if (screen && QGuiApplication::platformName() != QLatin1String("offscreen")) size = size.boundedTo(screen->availableGeometry().size());
        resize(size);
    } else
        restoreGeometry(geometry);
    restoredState_ = restoreState(settings.value("window/state").toByteArray());
    recent_ = settings.value("recentModels").toStringList();
    // "options/computeDtype" (auto by default). Before it, "options/dtype" was written on every close, float32 unless
    // the user had picked bfloat16: only that choice is carried over, so that everyone else gets auto.
    try {
        const QString old = settings.value("options/dtype").toString() == "bfloat16" ? "bfloat16" : "auto";
        dtype_ = parseDtypeRequest(settings.value("options/computeDtype", old).toString().toStdString());
    } catch (const Error&) {
        dtype_.reset();
    }
    // The device saved by another build or on another machine (a GPU gone, a build without CUDA): the CPU, said once.
    try {
        device_ = parseDevice(settings.value("options/device", "cpu").toString().toStdString());
    } catch (const Error&) {
        device_ = torch::kCPU;
    }
    if (const std::string why = deviceUnavailableReason(device_, deviceSupport()); !why.empty()) {
        statusBar()->showMessage(tr("Computing on the CPU: %1").arg(QString::fromStdString(why)));
        device_ = torch::kCPU;
    }
    threads_ = settings.value("options/threads", 0).toInt();
    lensTopK_ = std::clamp(settings.value("options/lensTopK", 5).toInt(), 1, 20);
    neurons_->setTopK(std::clamp(settings.value("options/neuronTopK", 10).toInt(), 1, 100));
    lastExportDir_ = settings.value("export/lastDir", QDir::homePath()).toString();
    exportDictionaryValuesAct_->setChecked(settings.value("export/dictionaryValues", false).toBool());
    tracePanel_->setPrompts(settings.value("trace/prompts", QStringList{kGenericPrompt}).toStringList());
    // the open view by name (any of the fixed views; an older numeric setting counts as an index)
    const QString openView = settings.value("view/current", "attention").toString();
    bool numeric = false;
    const int openIndex = openView.toInt(&numeric);
    if (numeric) views_->setCurrentIndex(std::clamp(openIndex, 0, fixedViews() - 1));
    else if (!showView(openView)) showView("attention");
    attention_->setLogScale(settings.value("views/attention/logScale", false).toBool());  // #28: it was forgotten
    // each view's other choices (the lens' and neurons' log scale, the neurons' ranking, the Flow view's threshold
    // and fit, the Heads view's log scale and marking): views/<name>/<key>
    for (const View& v : viewList_)
        if (auto* view = qobject_cast<TraceView*>(v.widget)) {
            QVariantMap saved;
            settings.beginGroup(QStringLiteral("views/%1").arg(QString::fromLatin1(v.spec->name)));
            for (const QString& key : settings.childKeys()) saved[key] = settings.value(key);
            settings.endGroup();
            if (!saved.isEmpty()) view->restoreChoices(saved);
        }
    worker_->setThreads(threads_);
    updateRecentMenu();
}

void MainWindow::writeSettings() {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    settings.setValue("recentModels", recent_);
    settings.setValue("options/computeDtype", QString::fromStdString(dtypeRequestName(dtype_)));
    settings.remove("options/dtype");
    settings.setValue("options/device", QString::fromStdString(deviceName(device_)));
    settings.setValue("options/threads", threads_);
    settings.setValue("options/lensTopK", lensTopK_);
    settings.setValue("options/neuronTopK", neurons_->settings().value("view.top_k", "10").toInt());
    settings.setValue("export/lastDir", lastExportDir_);
    settings.setValue("export/dictionaryValues", exportDictionaryValuesAct_->isChecked());
    settings.setValue("trace/prompts", tracePanel_->prompts());
    settings.setValue("views/attention/logScale", attention_->logScale());
    for (const View& v : viewList_)
        if (const auto* view = qobject_cast<const TraceView*>(v.widget)) {
            const QVariantMap choices = view->choices();
            for (auto it = choices.begin(); it != choices.end(); ++it)
                settings.setValue(QStringLiteral("views/%1/%2").arg(QString::fromLatin1(v.spec->name), it.key()), it.value());
        }
    const int current = views_->currentIndex();
    settings.setValue("view/current", QString::fromLatin1(current >= 0 && current < fixedViews() ? viewList_[static_cast<size_t>(current)].spec->name : "attention"));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    worker_->cancel();
    if (start_.useSettings) writeSettings();
    event->accept();
}

namespace {
/// The first local path of a drop that nnscope opens, with what it is.
DropKind droppedPath(const QMimeData* mime, QString* target) {
    if (!mime || !mime->hasUrls()) return DropKind::None;
    for (const QUrl& url : mime->urls()) {
        if (!url.isLocalFile()) continue;
        const DropKind kind = classifyDrop(url.toLocalFile(), target);
        if (kind != DropKind::None) return kind;
    }
    return DropKind::None;
}
}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    QString target;
    if (droppedPath(event->mimeData(), &target) != DropKind::None) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    QString target;
    const DropKind kind = droppedPath(event->mimeData(), &target);
    if (kind == DropKind::None) {
        statusBar()->showMessage(tr("Nothing nnscope opens was dropped: drop a checkpoint folder (with config.json), a trace file "
                                    "(.safetensors) or a sparse dictionary's folder."), 8000);
        return;
    }
    event->acceptProposedAction();
    if (kind == DropKind::Checkpoint) openModel(target);
    else if (kind == DropKind::TraceFile) openTraceFile(target);
    else attachDictionary(target);
}

// ---- model and trace ----------------------------------------------------------------------------------------

void MainWindow::openModel(const QString& dir) {
    clearError();
    openTraceJob_->forget();  // the latest request wins: a trace file asked for before this checkpoint is not shown
    loadingDir_ = dir;
    loadJob_->watch(worker_->load(dir, dtype_, device_));
    statusBar()->showMessage(tr("Opening %1…").arg(dir));
    if (!model_) {
        startPage_->setHtml(tr("<h2>Opening %1…</h2>").arg(dir.toHtmlEscaped()));
        centralStack_->setCurrentWidget(startPage_);
    }
    updateActions();
}

void MainWindow::onModelLoaded(ModelPtr model) {
    // the edits of the last checkpoint are not undone on this one: a new history from the state it opens with
    restoringEdits_ = true;
    struct EndRestoring {
        MainWindow* w;
        ~EndRestoring() {
            w->restoringEdits_ = false;
            w->undo_->clear();
            w->recordedEdits_ = w->captureEdits();
        }
    } endRestoring{this};
    // Reopening the same checkpoint (File ▸ Reload, another dtype) keeps the pinned cards.
    const bool sameModel = canRun() && model_->dir() == model->dir() && model_->config().numLayers == model->config().numLayers;
    const QString previous = model_ ? QFileInfo(QString::fromStdString(model_->dir())).fileName() : QString();
    model_ = std::move(model);
    stopLens();
    snapshot_.reset();
    updateCircuitCompute();
    updateNonFiniteBanner(nullptr);
    traceFile_.clear();  // a checkpoint replaces a trace file that was browsed
    rereadJob_->forget();
    pinned_->setUnreadText({});
    const QString dir = QString::fromStdString(model_->dir());
    setWindowTitle(tr("%1 — nnscope").arg(QFileInfo(dir).fileName()));
    modelLabel_->setText(tr("model: %1 · %2 · %3 · %4")
                             .arg(QFileInfo(dir).fileName(), QString::fromStdString(model_->family().modelType),
                                  QString::fromStdString(dtypeName(model_->dtype())), QString::fromStdString(deviceName(model_->device()))));
    modelLabel_->setToolTip(tr("The checkpoint, its family, the dtype it computes in and the device it computes on "
                               "(File ▸ Preferences; File ▸ Reload applies a change)"));
    diagram_->setModel(model_);
    supportModel_->setFamily(&model_->family());
    printoutModel_->setModel(model_.get());
    summary_->setHtml(modelSummaryHtml(*model_, summary_->palette()));
    pinned_->setModel(model_);
    if (sameModel)
        pinned_->setSnapshot(nullptr);
    else
        pinned_->clear();
    pinStartValues(/*showBlock=*/true);
    updatePinMarks();
    for (int i = views_->count() - 1; i >= fixedViews(); --i) views_->widget(i)->deleteLater();
    suspendAnalyses(/*keep=*/false);
    for (TraceView* v : traceViews(ViewSpec::ShowsTrace)) v->setSnapshot(nullptr);  // a trace file's values do not belong to this model
    interventions_->setModel(model_);
    // #28: the edits made for another checkpoint are not applied to this one without a word: the panel asks
    if (!sameModel && !previous.isEmpty()) {
        interventions_->askKeepAfterModelChange(previous);
        if (interventions_->askingKeep() && interventionsDock_) {
            interventionsDock_->show();
            interventionsDock_->raise();
        }
    }
    for (const QString& text : start_.interventions) {  // the command line's --edit/--skip/--steer
        const QString error = addIntervention(text);
        if (!error.isEmpty()) emit startOptionRefused(tr("%1: %2").arg(text, error));
    }
    start_.interventions.clear();
    patchJob_->forget();
    patching_->setModel(model_);
    generateJob_->forget();
    generate_->setModel(model_);
    family_->setModel(model_);
    checksJob_->forget();
    if (views_->currentWidget() == family_) runChecks(family_->checkPrompt());  // else when the tab is first shown
    centralStack_->setCurrentWidget(views_);
    tracePanel_->setModelReady(true);
    // #28: the line and the bar kept the previous model's outcome and token count
    clearStaleInterventions();
    lastTraceMs_ = -1;
    tracePanel_->reset(tr("Opened %1 (%2). Run (Ctrl+Return) traces the prompts above.")
                           .arg(QFileInfo(dir).fileName(), QString::fromStdString(model_->family().title)));
    addRecent(dir);
    if (!model_->warnings().empty()) {  // harmless but worth reading (unused tensors, index entries): kept in the bar until the next message
        QStringList lines;
        for (const auto& w : model_->warnings()) lines << QString::fromStdString(w);
        for (const auto& n : model_->notes()) lines << QString::fromStdString(n);
        statusBar()->showMessage(tr("Opened with a warning: %1").arg(lines.join(QStringLiteral("  ·  "))));
    } else if (!model_->notes().empty()) {  // the compute dtype chosen for this CPU: kept until the next message
        QStringList lines;
        for (const auto& n : model_->notes()) lines << QString::fromStdString(n);
        statusBar()->showMessage(tr("Opened %1: %2").arg(QFileInfo(dir).fileName(), lines.join(QStringLiteral("  ·  "))));
    } else {
        statusBar()->showMessage(tr("Opened %1 (%2, %3 blocks)").arg(dir, QString::fromStdString(model_->family().title)).arg(model_->config().numLayers), 5000);
    }
    // the dictionaries this checkpoint remembers (after the messages above: one dropped says so in the status bar)
    featuresJob_->cancelQuietly();
    reattachDictionaries();
    updateActions();
    emit modelOpened(dir);
    if (!sameModel) demoCaptionWanted_ = isDemoModelDir(dir) && !QSettings().value("demo/captionDismissed", false).toBool();
    updateDemoCaption();
    // The demo model opened with nothing to trace: trace its repeated-run prompt and show the induction heads.
    if (!sameModel && isDemoModelDir(dir)) {
        diagram_->setBlock(std::min<int>(kDemoInductionBlock, static_cast<int>(model_->config().numLayers) - 1));
        // an empty box, or the generic prompt of a fresh machine's settings, gives way to the demo's own sentence,
        // shown in the attention view; the demo's sentence kept from the last session is traced too (in the view
        // the settings restored)
        const QString typed = tracePanel_->prompts().join(QString()).trimmed();
        const bool generic = typed.isEmpty() || typed == kGenericPrompt;
        if (start_.prompts.isEmpty() && (generic || typed == demoPrompt())) {
            if (generic) {
                tracePanel_->setPrompts({demoPrompt()});
                if (start_.view.isEmpty()) start_.view = "attention";
            }
            start_.prompts = tracePanel_->prompts();
        }
    }
    if (!start_.view.isEmpty()) showView(start_.view);
    if (start_.patch) {  // the command line's patching run (gui --clean ... --answer ...)
        const PatchRequest r = *start_.patch;
        start_.patch.reset();
        patching_->setRequest(r);
        showView("patching");
        runPatching(r);
    }
    if (!start_.prompts.isEmpty()) {  // the command line's prompts run once
        start_.prompts.clear();
        runTrace();
    }
}

void MainWindow::pinStartValues(bool showBlock) {
    for (const QString& path : start_.pins) {
        try {
            const ValueKey key = parseValuePath(*model_, path.toStdString());
            pinned_->pin(valueKeyInfo(*model_, key));
            if (showBlock && key.layer >= 0) diagram_->setBlock(key.layer);
        } catch (const Error& e) {
            const QString message = tr("--pin %1: %2").arg(path, QString::fromStdString(e.what()));
            showError(message);
            emit startOptionRefused(message);
        }
    }
    start_.pins.clear();
}

void MainWindow::openTraceFile(const QString& path) {
    clearError();
    openTracePath_ = QFileInfo(path).absoluteFilePath();
    openTraceJob_->watch(worker_->openTrace(openTracePath_));
    statusBar()->showMessage(tr("Opening the trace file %1…").arg(path));
    if (!model_) {
        startPage_->setHtml(tr("<h2>Opening the trace file %1…</h2>").arg(path.toHtmlEscaped()));
        centralStack_->setCurrentWidget(startPage_);
    }
}

namespace {
/// Up to this many characters of a trace file's prompt are shown in the Model tab; the whole prompt is copied on demand.
constexpr int kPromptShown = 600;

/// The Model tab's first section for a trace file: where its parts came from. What the file's metadata says is shown
/// elided (a prompt of a megabyte held the window for minutes in text layout): a longer prompt has a link that copies it
/// whole ("prompt:ROW", MainWindow::onSummaryLink).
QString traceFileHtml(const TraceSnapshot& s) {
    QString h = QObject::tr("<h2>Trace file <small>(no model)</small></h2><p><tt>%1</tt></p>").arg(elidedText(s.sourceFile).toHtmlEscaped());
    h += "<ul>";
    for (const QString& note : s.fileNotes) h += "<li>" + elidedText(note).toHtmlEscaped() + "</li>";
    h += "</ul>";
    QStringList paths;
    for (const auto& [key, t] : s.result.values) paths << s.path(key);
    h += QObject::tr("<p><b>%n value(s)</b>: ", nullptr, static_cast<int>(paths.size())) + paths.join(", ").toHtmlEscaped() + "</p>";
    if (!s.result.dictionaryValues.empty()) {
        // the sparse dictionaries' values, each dictionary once with its provenance
        h += QObject::tr("<p><b>%n sparse dictionary value(s)</b> (the Features view shows the activations):</p><ul>", nullptr,
                         static_cast<int>(s.result.dictionaryValues.size()));
        std::vector<const DictionarySource*> listed;
        for (const DictionaryValue& v : s.result.dictionaryValues) {
            if (std::find(listed.begin(), listed.end(), v.source.get()) != listed.end()) continue;
            listed.push_back(v.source.get());
            QStringList mine, digests;
            for (const DictionaryValue& w : s.result.dictionaryValues)  // each a link that plots it (MainWindow::onSummaryLink)
                if (w.source == v.source)
                    mine << QString("<a href='dictionaryvalue:%1'>%2</a> [%3, %4, %5]")
                                .arg(QString::fromLatin1(QUrl::toPercentEncoding(QString::fromStdString(w.path))),
                                     QString::fromStdString(w.path).toHtmlEscaped())
                                .arg(w.tensor.size(0))
                                .arg(w.tensor.size(1))
                                .arg(w.tensor.size(2));
            for (const auto& [file, digest] : v.source->weights)
                digests << QString::fromStdString(std::filesystem::path(file).filename().string() + " sha256 " + digest);
            h += "<li>" + mine.join(", ") + QObject::tr("<br><small>from %1 (%2 %3); %4</small>")
                                                                .arg(elidedText(QString::fromStdString(v.source->folder)).toHtmlEscaped(),
                                                                     QString::fromStdString(v.source->format).toHtmlEscaped(),
                                                                     QString::fromStdString(v.source->architecture).toHtmlEscaped(),
                                                                     digests.join(", ").toHtmlEscaped()) +
                 "</li>";
        }
        h += "</ul>";
    }
    h += QObject::tr("<p><b>Prompts</b></p><ol>");
    for (int r = 0; r < s.numPrompts(); ++r) {
        const QString prompt = s.prompt(r);
        h += QString("<li>%1 <small>(%2 tokens)").arg(elidedText(prompt, kPromptShown).toHtmlEscaped()).arg(s.tokens.at(static_cast<size_t>(r)).size());
        if (prompt.size() > kPromptShown) h += QObject::tr(" · <a href='prompt:%1'>copy the whole prompt</a>").arg(r);
        h += "</small></li>";
    }
    h += "</ol><hr>";
    return h;
}
}  // namespace

void MainWindow::onTraceFileOpened(SnapshotPtr snapshot) {
    // The trace file takes the window's place of a model: its values in every view, nothing that runs the model.
    const bool tracing = tracePanel_->isRunning();
    for (JobWatcher* job : {traceJob_, patchJob_, generateJob_, rereadJob_})  // their results would belong to the model the file replaces
        job->cancelQuietly();
    // (a checkpoint asked for after the file, loadJob_, still opens: the worker runs jobs in order)
    checksJob_->forget();
    if (tracing) {
        tracePanel_->traceCancelled(0, 0);
        emit traceEnded();  // its own cancelled signal is not relayed: the watcher forgot it
    }
    stopLens();
    suspendAnalyses(/*keep=*/false);
    traceFile_ = snapshot->sourceFile;
    model_ = snapshot->model;
    snapshot_ = std::move(snapshot);
    updateCircuitCompute();
    const QString name = QFileInfo(traceFile_).fileName();
    const bool weights = model_->hasWeights();
    setWindowTitle(tr("%1 — trace file, no model — nnscope").arg(name));
    modelLabel_->setText(tr("trace file: %1 · %2 · %3").arg(name, QString::fromStdString(model_->family().modelType),
                                                           weights ? tr("lens from the checkpoint's weights") : tr("no weights")));
    diagram_->setModel(model_);
    supportModel_->setFamily(&model_->family());
    printoutModel_->setModel(model_.get());
    summary_->setHtml(traceFileHtml(*snapshot_) + modelSummaryHtml(*model_, summary_->palette()));
    pinned_->setModel(model_);
    pinned_->clear();
    pinned_->setUnreadText({});
    pinStartValues(/*showBlock=*/false);
    featuresJob_->cancelQuietly();
    dictionaries_.clear();  // dictionaries are attached to a checkpoint
    features_->setAttached({});
    features_->setRuns(nullptr);
    text_->setFeatureRuns(nullptr);
    updatePinMarks();
    for (int i = views_->count() - 1; i >= fixedViews(); --i) views_->widget(i)->deleteLater();
    interventions_->setModel(nullptr);
    patching_->setModel(nullptr);
    generate_->setModel(nullptr);
    family_->setModel(model_);
    family_->setFailed(tr("A trace file is open: the checks run the model. Open its checkpoint to run them."));
    tracePanel_->setModelReady(false);
    centralStack_->setCurrentWidget(views_);
    showSnapshot(snapshot_);
    if (FeatureRunsPtr runs = featureRunsFromFile(snapshot_)) {  // features saved with the trace: shown without the weights
        QStringList names;
        for (const DictionaryRun& d : runs->dictionaries) names << d.name;
        features_->setAttached(names);
        features_->setRuns(runs);
        text_->setFeatureRuns(runs);
    }
    ensureLens();  // the logit lens when its view is the one shown (and the file allows it)
    readMissingPins();
    int tokens = 0;
    for (const QStringList& row : snapshot_->tokens) tokens += static_cast<int>(row.size());
    clearStaleInterventions();
    tracePanel_->reset(tr("The trace file %1 is open: %n prompt(s), %2 tokens, read from the file; open its checkpoint to run.",
                          nullptr, snapshot_->numPrompts())
                           .arg(name)
                           .arg(tokens));
    // said short (where the config, tokens and weights came from: the Model tab)
    statusBar()->showMessage(tr("Opened the trace file %1: %2 values, %n prompt(s), %3 tokens; nothing runs until a checkpoint is open.",
                                nullptr, snapshot_->numPrompts())
                                 .arg(name)
                                 .arg(snapshot_->result.values.size())
                                 .arg(tokens));
    if (!start_.view.isEmpty()) showView(start_.view);
    else if (views_->currentIndex() == 0) views_->setCurrentWidget(attention_);
    updateActions();
    emit traceFileOpened(traceFile_);
}

void MainWindow::onSummaryLink(const QUrl& url) {
    if (url.scheme() == "dictionaryvalue") {  // a trace file's dictionary value: plot it
        plotDictionaryValue(QUrl::fromPercentEncoding(url.path(QUrl::FullyEncoded).toLatin1()));
        return;
    }
    if (url.scheme() != "prompt") {
        QDesktopServices::openUrl(url);
        return;
    }
    bool ok = false;
    const int row = url.path().toInt(&ok);
    if (!snapshot_ || !ok || row < 0 || row >= snapshot_->numPrompts()) return;
    const QString prompt = snapshot_->prompt(row);
    QGuiApplication::clipboard()->setText(prompt);
    statusBar()->showMessage(tr("Copied prompt %1 (%L2 characters) to the clipboard.").arg(row + 1).arg(prompt.size()), 10000);
}

void MainWindow::onTraceFileFailed(const QString& path, const QString& message) {
    QString why = message;
    if (why.startsWith(path + ": ")) why = why.mid(path.size() + 2);  // the file is named once
    showError(tr("Could not open the trace file %1: %2").arg(path, why));
    statusBar()->showMessage(tr("Could not open %1").arg(path), 5000);
    if (!model_) {
        startPage_->setHtml(tr("<h2>nnscope</h2><p>Open a checkpoint folder or a trace file to look inside a model.</p>"));
        updateRecentMenu();
    }
    updateActions();
    emit traceFileFailed(path, message);
}

void MainWindow::onValuesRead(SnapshotPtr snapshot) {
    // the values read from the last trace's inputs join it, unless another trace has come since
    if (snapshot_ && snapshot->serial == snapshot_->serial && snapshot->model == snapshot_->model) {
        // the lens under way belongs to the new copy too (copies share their lenses): not restarted for it
        for (LensRequest& r : lensRequests_)
            if (r.snapshot == snapshot_) r.snapshot = snapshot;
        snapshot_ = std::move(snapshot);
        updateCircuitCompute();
        updateNonFiniteBanner(snapshot_);  // a value read again may be where they first appear
        pinned_->setSnapshot(snapshot_);
        text_->setPinnedKeys(pinned_->keys());
        text_->setSnapshot(snapshot_);  // a pinned value's norm
        for (int i = fixedViews(); i < views_->count(); ++i)
            if (auto* v = qobject_cast<TraceView*>(views_->widget(i))) v->setSnapshot(snapshot_);
        neurons_->valuesAdded(snapshot_);  // a Neurons value picked in the diagram arrives here
    }
    readMissingPins();
    emit pinsRead();
}

void MainWindow::onLoadFailed(const QString& dir, const QString& message) {
    showError(tr("Could not open the checkpoint %1: %2").arg(dir, message));
    statusBar()->showMessage(tr("Could not open %1").arg(dir), 5000);
    if (!model_) {
        startPage_->setHtml(tr("<h2>nnscope</h2><p>Open a checkpoint folder to look inside a model.</p>"));
        updateRecentMenu();
    }
    updateActions();
    emit modelFailed(dir, message);
}

QString MainWindow::addIntervention(const QString& text) {
    const QString error = interventions_->add(text);
    if (!error.isEmpty()) {
        showError(tr("Intervention refused: %1").arg(error));
        return error;
    }
    interventionsDock_->show();
    interventionsDock_->raise();
    statusBar()->showMessage(tr("Added “%1”: the next trace applies it (Trace ▸ Run).").arg(text), 8000);
    return {};
}

void MainWindow::runGeneration(const GenerateRequest& request) {
    if (!model_) return generate_->setFailed(tr("Open a checkpoint first."));
    if (generateJob_->isActive()) return;
    GenerateOptions options = request.options;
    std::vector<int64_t> prompt;
    try {
        prompt = encodeBatch(*model_, {request.prompt.toStdString()}).ids[0];
        options.eosTokenIds = stopTokenIds(*model_);
        const int64_t context = model_->config().maxPositionEmbeddings;
        if (context > 0 && static_cast<int64_t>(prompt.size()) + options.maxNewTokens > context)
            throw Error("the prompt's " + std::to_string(prompt.size()) + " tokens + " + std::to_string(options.maxNewTokens) +
                        " new tokens exceed max_position_embeddings " + std::to_string(context) + ".");
    } catch (const std::exception& e) {
        generate_->setFailed(QString::fromStdString(e.what()));
        emit generateEnded();
        return;
    }
    generate_->setRunning(true);
    generateJob_->watch(worker_->generate(model_, std::move(prompt), options, interventions_->active(), interventions_->baseDir()));
}

void MainWindow::runPatching(const PatchRequest& request) {
    if (!model_) return patching_->setFailed(tr("Open a checkpoint first."));
    if (patchJob_->isActive()) return;
    std::vector<int64_t> clean, corrupted;
    PatchingOptions options;
    try {
        if (request.answer.isEmpty()) throw Error("type the answer token (text of one token, or #id).");
        const Batch b = encodeBatch(*model_, {request.clean.toStdString(), request.corrupted.toStdString()});
        clean = b.ids[0];
        corrupted = b.ids[1];
        if (clean.size() != corrupted.size())
            throw Error("the clean prompt is " + std::to_string(clean.size()) + " tokens and the corrupted one " +
                        std::to_string(corrupted.size()) + ": patching needs the same number of tokens.");
        options.metric.answer = parseTokenArgument(*model_, request.answer.toStdString(), "answer");
        const Tokenizer* tok = model_->tokenizer();
        auto label = [tok](int64_t id) { return tok ? QString::fromStdString(tok->tokenLabel(id)) : QString("#%1").arg(id); };
        if (!request.wrong.isEmpty()) {
            options.metric.kind = PatchMetric::Kind::LogitDifference;
            options.metric.wrong = parseTokenArgument(*model_, request.wrong.toStdString(), "wrong token");
            patchMetric_ = tr("logit(“%1”) − logit(“%2”)").arg(label(options.metric.answer), label(options.metric.wrong));
        } else {
            options.metric.kind = PatchMetric::Kind::TargetProbability;
            patchMetric_ = tr("p(“%1”)").arg(label(options.metric.answer));
        }
        options.site = request.site;
        options.head = request.head;
        if (request.site == PatchSite::HeadOutput && (request.head < 0 || request.head >= model_->config().numHeads))
            throw Error("head " + std::to_string(request.head) + " is out of range.");
        // chosen blocks and positions (empty: all); the cells outside them are not run
        if (!request.blocks.trimmed().isEmpty())
            options.blocks = parseIndexList(request.blocks.toStdString(), model_->config().numLayers, "blocks");
        if (!request.positions.trimmed().isEmpty())
            options.positions = parseIndexList(request.positions.toStdString(), static_cast<int64_t>(corrupted.size()), "positions");
    } catch (const std::exception& e) {
        patching_->setFailed(QString::fromStdString(e.what()));
        emit patchEnded();
        return;
    }
    patching_->setRunning(true);
    patchJob_->watch(worker_->patch(model_, std::move(clean), std::move(corrupted), options, interventions_->active(), interventions_->baseDir()));
}

void MainWindow::steeringDialog() {
    if (!model_) return;
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Steering vector"));
    auto* form = new QFormLayout(&dialog);
    auto* intro = new QLabel(tr("Adds factor × vector to layer_output of a block (at chosen positions, or all). The vector is "
                                "the difference of two prompts' layer_output at their last token in the last trace "
                                "(contrastive activation addition), or read from a .npy file."), &dialog);
    intro->setWordWrap(true);
    form->addRow(intro);
    auto* block = new QSpinBox(&dialog);
    block->setRange(0, static_cast<int>(model_->config().numLayers) - 1);
    block->setValue(diagram_->block());
    form->addRow(tr("Block"), block);
    auto* factor = new QDoubleSpinBox(&dialog);
    factor->setRange(-1000, 1000);
    factor->setDecimals(3);
    factor->setValue(4);
    form->addRow(tr("Factor"), factor);
    auto* positions = new QLineEdit(&dialog);
    positions->setPlaceholderText(tr("all positions; or e.g. -1 or 0,3,5"));
    form->addRow(tr("Positions"), positions);
    auto* rowA = new QComboBox(&dialog);
    auto* rowB = new QComboBox(&dialog);
    const bool fromTrace = snapshot_ && snapshot_->model == model_ && snapshot_->numPrompts() >= 2;
    if (fromTrace)
        for (int r = 0; r < snapshot_->numPrompts(); ++r) {
            rowA->addItem(QString("%1: %2").arg(r + 1).arg(snapshot_->prompt(r).left(50)));
            rowB->addItem(QString("%1: %2").arg(r + 1).arg(snapshot_->prompt(r).left(50)));
        }
    rowB->setCurrentIndex(std::min(1, rowB->count() - 1));
    rowA->setEnabled(fromTrace);
    rowB->setEnabled(fromTrace);
    if (!fromTrace) {  // a disabled control says why
        const QString why = !snapshot_ || snapshot_->model != model_
                                ? tr("Trace two prompts first (one per line in the Trace panel): the vector is the difference of "
                                     "their layer_output at the last token.")
                                : tr("The last trace has one prompt: trace two (one per line in the Trace panel) to take the vector "
                                     "from their difference, or give a .npy file.");
        rowA->setToolTip(why);
        rowB->setToolTip(why);
        rowA->setPlaceholderText(tr("needs a trace of two prompts"));
        rowB->setPlaceholderText(tr("needs a trace of two prompts"));
    }
    form->addRow(tr("Prompt A (towards)"), rowA);
    form->addRow(tr("minus prompt B"), rowB);
    auto* file = new QLineEdit(&dialog);
    file->setPlaceholderText(fromTrace ? tr("or a .npy file of hidden_size values") : tr("a .npy file of hidden_size values (or trace two prompts)"));
    auto* browse = new QPushButton(tr("Browse…"), &dialog);
    connect(browse, &QPushButton::clicked, &dialog, [&] {
        const QString f = QFileDialog::getOpenFileName(&dialog, tr("Steering vector"), lastExportDir_, tr("NumPy array (*.npy)"));
        if (!f.isEmpty()) file->setText(f);
    });
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(file, 1);
    fileRow->addWidget(browse);
    form->addRow(tr("File"), fileRow);
    auto* error = new QLabel(&dialog);
    error->setStyleSheet("color: #a00010;");
    error->setWordWrap(true);
    form->addRow(error);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, [&] {
        QString why;
        if (!file->text().trimmed().isEmpty()) {
            QString text = QString("steer %1:%2:%3").arg(block->value()).arg(factor->value()).arg(QFileInfo(file->text().trimmed()).absoluteFilePath());
            if (!positions->text().trimmed().isEmpty()) text += ":" + positions->text().trimmed();
            why = interventions_->add(text);
        } else if (fromTrace) {
            const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) + "/steering";
            const QString name = QString("%1-block%2-p%3-minus-p%4-%5.npy")
                                     .arg(QFileInfo(QString::fromStdString(model_->dir())).fileName())
                                     .arg(block->value())
                                     .arg(rowA->currentIndex() + 1)
                                     .arg(rowB->currentIndex() + 1)
                                     .arg(QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss"));
            why = interventions_->addSteeringFromPrompts(*snapshot_, block->value(), rowA->currentIndex(), rowB->currentIndex(),
                                                         factor->value(), positions->text(), dir + "/" + name);
        } else {
            why = tr("Choose a .npy file, or trace two prompts first to take their difference.");
        }
        if (why.isEmpty())
            dialog.accept();
        else
            error->setText(why);
    });
    dialog.exec();
}

void MainWindow::runChecks(const QString& prompt) {
    if (!canRun()) return;
    checksPrompt_ = prompt;
    family_->setRunning();
    checksJob_->watch(worker_->checks(model_, prompt));
}

void MainWindow::runTrace() {
    if (!model_) {
        showError(tr("Open a checkpoint first (File ▸ Open Checkpoint…)."));
        return;
    }
    if (!canRun()) {
        showError(tr("A trace file is open (%1): it holds values, not the model's weights. Open the checkpoint "
                     "(File ▸ Open Checkpoint…) to run traces.").arg(traceFile_));
        return;
    }
    if (tracePanel_->isRunning()) return;
    clearError();
    std::vector<ValueKey> save = viewValueKeys(*model_);
    // the Attribution, Flow and Routing views (routingValueKeys is empty without experts)
    for (const auto& keys : {attributionValueKeys(*model_), contributionValueKeys(*model_), routingValueKeys(*model_)})
        for (const ValueKey& k : keys)
            if (std::find(save.begin(), save.end(), k) == save.end()) save.push_back(k);
    for (const ValueKey& k : pinned_->keys())
        if (std::find(save.begin(), save.end(), k) == save.end()) save.push_back(k);
    for (const AttachedDictionary& d : dictionaries_)  // the Features view: each dictionary's site
        for (const ValueKey& k : d.neededValues())
            if (std::find(save.begin(), save.end(), k) == save.end()) save.push_back(k);
    featuresJob_->cancelQuietly();
    panelEnd(featuresJob_, {});
    stopLens();  // the lens of the last trace is not wanted any more: the worker starts the new trace at once
    suspendAnalyses(/*keep=*/true);  // so are the views' analyses, asked again if the trace brings no new snapshot
    traceStartedMs_ = QDateTime::currentMSecsSinceEpoch();
    traceBlocks_ = static_cast<int>(model_->config().numLayers);
    traceJob_->watch(worker_->trace(model_, tracePanel_->prompts(), save, interventions_->active(), interventions_->compare(),
                                    interventions_->baseDir()));
    panelJob_ = nullptr;  // the bar counts the trace now
    tracePanel_->traceStarted(traceBlocks_);
    statusBar()->showMessage(tr("Tracing…"));
    updateActions();
}

void MainWindow::cancelTrace() {
    lensJob_->cancel();  // its cancelled signal ends it
    featuresJob_->cancel();
    dashboardJob_->cancel();  // stops after the batch it runs, and writes what is done
    for (ViewJob& job : viewJobs_) {
        if (job.waiting) {  // asked for while the trace runs: not asked again when it ends
            job.waiting = false;
            endAnalysis(job.view, JobState::Cancelled, {}, {});
        }
        job.watcher->cancel();
    }
    if (!tracePanel_->isRunning()) return;
    traceJob_->cancel();
    statusBar()->showMessage(tr("Cancelling…"));
}

void MainWindow::ensureLens() {
    if (!snapshot_ || !snapshot_->lensMissing.isEmpty() || tracePanel_->isRunning()) return;
    std::vector<LensRequest> need;
    int row = 0;
    if (views_->currentWidget() == lens_) {
        row = lens_->prompt();
        const int len = static_cast<int>(snapshot_->tokens.at(static_cast<size_t>(row)).size());
        if (!snapshot_->lens(row) && len <= kLensWholePrompt) {
            need.push_back({snapshot_, row, false});
        } else if (!snapshot_->lens(row)) {  // a long prompt: the positions in view, a chunk at a time
            const auto [from, to] = lens_->wantedPositions();
            auto [first, end] = snapshot_->missingLensPositions(row, from, to);
            // A fitted view wants every position: the last ones first (the next-token column), a chunk per job, so
            // the grid fills from the right while the window stays usable; each job's end asks for the next.
            first = std::max(first, end - kLensPositionsPerJob);
            if (first < end) need.push_back({snapshot_, row, false, first, end - first});
        }
    } else if (views_->currentWidget() == compare_ && snapshot_->baseline) {
        row = compare_->prompt();
        for (const SnapshotPtr& s : {snapshot_->baseline, snapshot_})
            if (!s->lens(row, true)) need.push_back({s, row, true});
    }
    // A lens already under way goes on when its view is hidden (it is there when the view comes back); it gives way
    // when the view wants another one.
    if (need.empty() || need == lensRequests_) return;
    stopLens();
    lensRequests_ = need;
    lensJob_->watch(worker_->lens(need, lensTopK_));
    int total = 0;
    for (const LensRequest& r : need) total += r.snapshot->numLayers();
    panelShow(lensJob_, tr("logit lens"), total);
    lens_->setLensNote(tr("Computing the logit lens of prompt %1 (the trace panel counts its blocks; Esc cancels)…").arg(row + 1));
    updateActions();
}

void MainWindow::stopLens() {
    if (!lensJob_->isActive()) return;
    lensJob_->cancelQuietly();
    lensRequests_.clear();
    panelEnd(lensJob_, {});
    updateActions();
    checkViewJobsDone();
}

// ---- what views compute in the worker ---------------------------------------------------------------------------

MainWindow::ViewJob& MainWindow::viewJob(TraceView* view) {
    for (ViewJob& job : viewJobs_)
        if (job.view == view) return job;
    ViewJob job;
    job.view = view;
    job.watcher = new JobWatcher(worker_, QString::fromLatin1(viewSpecs()[static_cast<size_t>(views_->indexOf(view))].name), this);
    JobWatcher* watcher = job.watcher;
    connect(watcher, &JobWatcher::progressed, this, [this, watcher](int done, int total) { panelProgress(watcher, done, total); });
    connect(watcher, &JobWatcher::finished, this, [this, view](const QVariant& result) { endAnalysis(view, JobState::Finished, result, {}); });
    connect(watcher, &JobWatcher::failed, this, [this, view](const QString& message) { endAnalysis(view, JobState::Failed, {}, message); });
    connect(watcher, &JobWatcher::cancelled, this, [this, view] { endAnalysis(view, JobState::Cancelled, {}, {}); });
    viewJobs_.push_back(std::move(job));
    return viewJobs_.back();
}

JobWatcher* MainWindow::analysisJob(const TraceView* view) const {
    for (const ViewJob& job : viewJobs_)
        if (job.view == view) return job.watcher;
    return nullptr;
}

void MainWindow::runAnalysis(TraceView* view, const AnalysisRequest& request) {
    ViewJob& job = viewJob(view);
    job.watcher->cancelQuietly();  // the view's earlier request gives way
    job.request = request;
    // While a trace runs, the bar counts it and the worker is busy with it: the request waits for its end (a new
    // snapshot replaces it; a cancelled or failed trace runs it then).
    job.waiting = traceJob_->isActive();
    if (job.waiting) return;
    job.watcher->watch(worker_->analyse(request.compute));
    panelShow(job.watcher, request.what, request.total);
    updateActions();
}

void MainWindow::endAnalysis(TraceView* view, JobState state, const QVariant& result, const QString& message) {
    ViewJob& job = viewJob(view);
    const AnalysisRequest request = std::exchange(job.request, {});  // its computation's captures are let go
    if (state == JobState::Cancelled) {
        panelEnd(job.watcher, tr("The %1 was cancelled.").arg(request.what));
        statusBar()->showMessage(tr("The %1 was cancelled").arg(request.what), 5000);
    } else {
        panelEnd(job.watcher, state == JobState::Failed ? tr("The %1 failed.").arg(request.what) : QString());
    }
    view->endAnalysis(request.serial, state, result, message);
    updateActions();
    checkViewJobsDone();
}

void MainWindow::suspendAnalyses(bool keep) {
    bool stopped = false;
    for (ViewJob& job : viewJobs_) {
        stopped = stopped || job.watcher->isActive();
        job.waiting = keep && (job.waiting || job.watcher->isActive());
        if (!job.waiting) job.request = {};
        job.watcher->cancelQuietly();
        panelEnd(job.watcher, {});
    }
    if (stopped) checkViewJobsDone();
}

void MainWindow::resumeAnalyses() {
    for (ViewJob& job : viewJobs_)
        if (job.waiting) runAnalysis(job.view, AnalysisRequest(job.request));
}

bool MainWindow::viewJobsRunning() const {
    if (lensJob_->isActive() || featuresJob_->isActive()) return true;
    for (const ViewJob& job : viewJobs_)
        if (job.watcher->isActive()) return true;
    return false;
}

void MainWindow::checkViewJobsDone() {
    if (!viewJobsRunning()) emit viewJobsDone();
}

void MainWindow::panelShow(JobWatcher* job, const QString& what, int total) {
    panelJob_ = job;
    tracePanel_->analysisStarted(what, total);
}

void MainWindow::panelProgress(JobWatcher* job, int done, int total) {
    if (job == panelJob_) tracePanel_->analysisProgress(done, total);
}

void MainWindow::panelEnd(JobWatcher* job, const QString& note, bool warning) {
    if (job != panelJob_) return;
    panelJob_ = nullptr;
    tracePanel_->analysisEnded(note, warning);
    // the next computation under way takes the bar (the worker runs them one after another)
    for (const ViewJob& next : viewJobs_)
        if (next.watcher->isActive()) {
            panelShow(next.watcher, next.request.what, next.request.total);
            if (next.watcher->progressMaximum() > 0) panelProgress(next.watcher, next.watcher->progressValue(), next.watcher->progressMaximum());
            return;
        }
    if (lensJob_->isActive()) {
        int total = 0;
        for (const LensRequest& r : lensRequests_) total += r.snapshot->numLayers();
        panelShow(lensJob_, tr("logit lens"), total);
        if (lensJob_->progressMaximum() > 0) panelProgress(lensJob_, lensJob_->progressValue(), lensJob_->progressMaximum());
    }
}

void MainWindow::onLensFinished(LensResultsPtr lenses) {
    for (size_t i = 0; i < lensRequests_.size() && i < lenses->size(); ++i) {
        const LensRequest& r = lensRequests_[i];
        if (r.count >= 0)
            r.snapshot->storeLensWindow(r.row, (*lenses)[i]);
        else
            r.snapshot->storeLens(r.row, r.lastPosition, (*lenses)[i]);
    }
    lensRequests_.clear();
    panelEnd(lensJob_, {});
    lens_->lensChanged();
    compare_->lensChanged();
    updateActions();
    ensureLens();  // the view may show another prompt by now
    emit lensEnded();
    checkViewJobsDone();
}

void MainWindow::onLensStopped(JobState state, const QString& message) {
    lensRequests_.clear();
    const QString again = tr("<a href='compute'>Compute it</a> (or show the view again).");
    if (state == JobState::Cancelled) {
        panelEnd(lensJob_, tr("The logit lens was cancelled."));
        lens_->setLensNote(tr("The logit lens was cancelled. %1").arg(again));
        statusBar()->showMessage(tr("Logit lens cancelled"), 5000);
    } else {
        panelEnd(lensJob_, tr("The logit lens failed."));
        lens_->setLensNote(tr("The logit lens failed: %1 %2").arg(message.toHtmlEscaped(), again));
        showError(tr("The logit lens failed: %1").arg(message));
    }
    updateActions();
    emit lensEnded();
    checkViewJobsDone();
}

void MainWindow::interventionsChanged() {
    // #28: an ablation from a right-click menu added a line and nothing said the views still showed the trace without
    // it. Now the trace line and a bar above the views say so, the bar with a Run button; when the last trace took
    // under quickRerunMs_ (the demo, a small model) it runs again by itself, a moment after the last change (a list is
    // often edited in several steps).
    if (!snapshot_ || !model_ || tracePanel_->isRunning() || !snapshot_->sourceFile.isEmpty()) return;
    if (interventions_->active() == snapshot_->interventions) {
        if (staleInterventionsNote_) tracePanel_->setOutcomeNote({});
        clearStaleInterventions();
        return;
    }
    staleInterventionsNote_ = true;
    const QString shown = tr("The views show the last trace, run %1")
                              .arg(snapshot_->interventions.isEmpty() ? tr("without interventions") : tr("with other interventions"));
    tracePanel_->setOutcomeNote(shown + tr(": press Run (Ctrl+Return) to apply the interventions as they are now."), /*warning=*/true);
    QStringList traced;
    for (const std::string& p : snapshot_->result.batch.prompts) traced << QString::fromStdString(p);
    const bool quick = lastTraceMs_ >= 0 && lastTraceMs_ < quickRerunMs_ && traced == tracePanel_->prompts();
    staleLabel_->setText(quick ? shown + tr(". Running it again with the interventions as they are now (the last trace took %1 ms)…").arg(lastTraceMs_)
                               : shown + tr(". Run applies the interventions as they are now."));
    staleBar_->show();
    if (quick) rerunTimer_->start();
}

QString MainWindow::staleInterventionsText() const { return staleBar_->isVisibleTo(this) ? staleLabel_->text() : QString(); }

void MainWindow::clearStaleInterventions() {
    staleInterventionsNote_ = false;
    rerunTimer_->stop();
    staleBar_->hide();
}

void MainWindow::onTraceFinished(SnapshotPtr snapshot) {
    snapshot_ = std::move(snapshot);
    updateCircuitCompute();
    lastTraceMs_ = QDateTime::currentMSecsSinceEpoch() - traceStartedMs_;
    clearStaleInterventions();  // a new trace clears the trace line's notes
    pinned_->setUnreadText({});
    for (ViewJob& job : viewJobs_) job.waiting = false;  // the views ask again for the new snapshot's
    // the most probable next token, or none where the output is not finite (topK names no token there)
    const auto next = [this](const TraceSnapshot& s) {
        const auto top = topK(*s.model, s.result.nextTokenProbs, 1);
        if (top.empty() || top.front().empty()) return tr("none, the output is not finite (NaN)");
        return tr("“%1” (%2)").arg(QString::fromStdString(top.front().front().text)).arg(probabilityText(top.front().front().prob));
    };
    int tokens = 0;
    for (const auto& ids : snapshot_->result.batch.ids) tokens += static_cast<int>(ids.size());
    QString summary = tr("Traced %n prompt(s), %1 tokens, in %2 ms. Next token after prompt 1: %3.", nullptr,
                         snapshot_->numPrompts())
                          .arg(tokens)
                          .arg(QDateTime::currentMSecsSinceEpoch() - traceStartedMs_)
                          .arg(next(*snapshot_));
    if (!snapshot_->interventions.isEmpty()) {
        summary += " " + tr("With %n intervention(s)", nullptr, static_cast<int>(snapshot_->interventions.size()));
        if (snapshot_->baseline) summary += tr("; unedited: %1 — see Before / after").arg(next(*snapshot_->baseline));
        summary += ".";
    }
    tracePanel_->traceFinished(summary);  // said once, under the prompts (the status bar only said "Tracing…")
    statusBar()->clearMessage();
    showSnapshot(snapshot_);  // after the panel's outcome: a view's analysis of the new trace takes the bar next
    if (views_->currentIndex() == 0) views_->setCurrentWidget(attention_);
    qCInfo(lcWindow).noquote() << "traced" << elidedText(snapshot_->prompt(0), 200) << "|" << tokens << "tokens | view"
                               << (views_->currentIndex() < fixedViews() ? viewList_[static_cast<size_t>(views_->currentIndex())].spec->name : "plot")
                               << "| block" << attention_->block();
    ensureLens();  // the logit lens when its view is the one shown
    runFeatures();  // the attached dictionaries on this trace: their quality is said under the prompts
    updateActions();
    emit traceDone();
    emit traceEnded();
    readMissingPins();  // values pinned while the trace ran
    interventionsChanged();  // the list may have changed while the trace ran
}

// Every view of a trace, for a trace run here (onTraceFinished) and for a trace file (onTraceFileOpened).
void MainWindow::showSnapshot(const SnapshotPtr& snapshot) {
    updateNonFiniteBanner(snapshot);
    updateDemoCaption();
    text_->setPinnedKeys(pinned_->keys());  // before its snapshot: it colours by a pinned value's norm
    for (TraceView* v : traceViews(ViewSpec::ShowsTrace)) v->setSnapshot(snapshot);
    for (int i = fixedViews(); i < views_->count(); ++i)
        if (auto* v = qobject_cast<TraceView*>(views_->widget(i))) v->setSnapshot(snapshot);
    pinned_->setSnapshot(snapshot);
    const int block = diagram_->block();
    attention_->setBlock(block);
    neurons_->setBlock(block);
    text_->setBlock(block);
}

void MainWindow::updateNonFiniteBanner(const SnapshotPtr& snapshot) {
    if (!snapshot || !snapshot->nonFinite) {
        nonFiniteBanner_->hide();
        nonFiniteBanner_->clear();
        return;
    }
    const NonFiniteOrigin& o = *snapshot->nonFinite;
    QString where = QString::fromStdString(describeNonFinite(*snapshot->model, o));
    if (o.position >= 0 && o.row < snapshot->numPrompts())
        where.replace(QString(", position %1 ").arg(o.position),
                      QString(", position %1 “%2” ").arg(o.position).arg(elidedText(snapshot->tokens.at(static_cast<size_t>(o.row)).value(static_cast<int>(o.position)), 40)));
    nonFiniteBanner_->setText(tr("⚠ %1 Every value computed from it is not finite either; the heatmaps draw NaN in magenta, "
                                 "+Inf in amber and −Inf in green, and the logit lens names no token where its logits are "
                                 "not finite.").arg(where));
    nonFiniteBanner_->show();
}

void MainWindow::onTraceCancelled() {
    // a trace dropped before it ran reported nothing: it is cancelled after 0 of its blocks
    const int total = traceJob_->progressMaximum() > 0 ? traceJob_->progressMaximum() : traceBlocks_;
    tracePanel_->traceCancelled(traceJob_->progressValue(), total);
    statusBar()->showMessage(tr("Trace cancelled"), 5000);
    updateActions();
    ensureLens();
    resumeAnalyses();
    emit traceEnded();
}

void MainWindow::onTraceFailed(const QString& message) {
    tracePanel_->traceFailed(message);
    showError(tr("The trace failed: %1").arg(message));
    updateActions();
    ensureLens();  // the last trace's lens, stopped when this one started
    resumeAnalyses();  // and the views' analyses
    emit traceEnded();
}

// ---- selection: the diagram, the tables and the views follow each other -------------------------------------

void MainWindow::onPartHovered(const QString&, const QString& html) { statusBar()->showMessage(plainText(html), 10000); }

void MainWindow::onPartClicked(const QString& id) {
    const PartInfo info = diagram_->diagram()->info(id);
    diagram_->diagram()->setHighlightedPart(id);
    const DiagramPart* part = diagram_->diagram()->diagram().part(id);
    {
        syncing_ = true;
        if (part && part->value) {
            const int row = supportModel_->rowOf(*part->value);
            if (row >= 0) {
                supportView_->setCurrentIndex(supportModel_->index(row, 0));
                supportView_->scrollTo(supportModel_->index(row, 0));
            }
        }
        int line = part && part->value ? printoutModel_->rowOf(*part->value) : -1;
        if (line < 0 && part && part->module) line = printoutModel_->rowOf(*part->module);
        if (line >= 0) {
            printoutView_->setCurrentIndex(printoutModel_->index(line));
            printoutView_->scrollTo(printoutModel_->index(line));
        }
        syncing_ = false;
    }
    if (!info.key) return;
    pinValue(*info.key);
    // the view that draws this value's layout follows (ViewSpec::draws): any Neurons value in the neuron view
    const ValueInfo& picked = valueInfo(info.key->value);
    const int view = viewForValue(QString::fromLatin1(picked.layout), QString::fromLatin1(picked.name));
    if (view >= 0) {
        const QString name = QString::fromLatin1(viewSpecs()[static_cast<size_t>(view)].name);
        if (name == "neurons") neurons_->setValue(info.key->value);
        showView(name);
    }
}

void MainWindow::onSupportRowChanged() {
    if (syncing_) return;
    const auto value = supportModel_->valueAt(supportView_->currentIndex().row());
    const DiagramPart* part = value ? diagram_->diagram()->diagram().partForValue(*value) : nullptr;
    diagram_->diagram()->setHighlightedPart(part ? part->id : QString());
    if (value) {
        syncing_ = true;
        const int line = printoutModel_->rowOf(*value);
        if (line >= 0) printoutView_->setCurrentIndex(printoutModel_->index(line));
        syncing_ = false;
    }
}

void MainWindow::onPrintoutRowChanged() {
    if (syncing_) return;
    const int row = printoutView_->currentIndex().row();
    const auto value = printoutModel_->valueAt(row);
    const auto module = printoutModel_->moduleAt(row);
    const DiagramLayout& d = diagram_->diagram()->diagram();
    const DiagramPart* part = value ? d.partForValue(*value) : module ? d.partForModule(*module) : nullptr;
    diagram_->diagram()->setHighlightedPart(part ? part->id : QString());
    if (value) {
        syncing_ = true;
        const int r = supportModel_->rowOf(*value);
        if (r >= 0) supportView_->setCurrentIndex(supportModel_->index(r, 0));
        syncing_ = false;
    }
}

void MainWindow::onBlockChanged(int block) {
    if (diagram_->block() != block) diagram_->setBlock(block);
    attention_->setBlock(block);
    neurons_->setBlock(block);
    text_->setBlock(block);
    updatePinMarks();
}

bool MainWindow::pinValue(const ValueKey& key) {
    if (!model_) return false;
    const PartInfo info = valueKeyInfo(*model_, key);
    if (!pinned_->pin(info)) return false;
    const bool read = snapshot_ && snapshot_->result.value(key).defined();
    statusBar()->showMessage(tr("Pinned %1%2").arg(info.path, read || !snapshot_ ? QString() : tr(": not in the last trace")), 6000);
    readMissingPins();
    return true;
}

void MainWindow::readMissingPins() {
    if (!snapshot_ || !model_) return;
    std::vector<ValueKey> missing;
    bool askedBefore = false;
    for (const ValueKey& k : pinned_->keys()) {
        if (snapshot_->result.value(k).defined()) continue;
        if (snapshot_->serial == rereadSerial_ && std::find(rereadAsked_.begin(), rereadAsked_.end(), k) != rereadAsked_.end())
            askedBefore = true;  // read again already, and the pass did not give it
        else
            missing.push_back(k);
    }
    if (missing.empty()) {
        if (askedBefore && traceFile_.isEmpty()) pinned_->setUnreadText(tr("The pass over the last trace's inputs did not give this value."));
        return;
    }
    if (!traceFile_.isEmpty()) return pinned_->setUnreadText(tr("The trace file does not hold this value."));
    if (snapshot_->model != model_) return pinned_->setUnreadText({});  // the model changed: the next trace reads it
    if (tracePanel_->isRunning() || rereadJob_->isActive()) return;  // the running trace saves it; a running read looks again when done
    // Tracing the last inputs again is quick on a small model (the demo takes milliseconds): read the value at once.
    const double cost = traceMultiplyAdds(model_->config(), snapshot_->result.batch);
    if (cost > rereadBudget_)
        return pinned_->setUnreadText(tr("The last trace did not read it; tracing this model again costs about %1 multiply-adds, "
                                         "so the next run reads it (Trace ▸ Run).").arg(cost, 0, 'g', 2));
    pinned_->setUnreadText(tr("Reading it from the last trace's inputs…"));
    if (rereadSerial_ != snapshot_->serial) rereadAsked_.clear();
    rereadSerial_ = snapshot_->serial;
    rereadAsked_.insert(rereadAsked_.end(), missing.begin(), missing.end());
    rereadJob_->watch(worker_->reread(snapshot_, missing, interventions_->baseDir()));
}

void MainWindow::onPromptChanged(int row) {
    pinned_->setPrompt(row);
    for (TraceView* v : traceViews(ViewSpec::FollowsPrompt)) v->setPrompt(row);
    ensureLens();
}

void MainWindow::updatePinMarks() {
    QSet<QString> ids;
    const int block = diagram_->block();
    for (const ValueKey& key : pinned_->keys())
        for (const auto& part : diagram_->diagram()->diagram().parts)
            if (part.value && *part.value == key.value && (part.perBlock ? block : -1) == key.layer) ids.insert(part.id);
    diagram_->diagram()->setPinnedParts(ids);
    QSet<QString> sites;  // the parts whose value a dictionary reads (or, for a transcoder, writes)
    for (const AttachedDictionary& d : dictionaries_)
        for (const ValueKey& key : {d.site, d.siteOut})
            for (const auto& part : diagram_->diagram()->diagram().parts)
                if (part.value && *part.value == key.value && (part.perBlock ? block : -1) == key.layer) sites.insert(part.id);
    diagram_->diagram()->setDictionaryParts(sites);
}

// ---- sparse dictionaries ------------------------------------------------------------------------------------

namespace {
/// The settings' key of a checkpoint's attached dictionaries: its absolute folder.
QString checkpointKey(const Model& model) { return QFileInfo(QString::fromStdString(model.dir())).absoluteFilePath(); }
}  // namespace

void MainWindow::openDictionaryDialog() {
    if (!canRun()) {
        showError(tr("Open a checkpoint first (File ▸ Open Checkpoint…): a dictionary is attached to a model."));
        return;
    }
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a sparse dictionary's folder"), lastExportDir_);
    if (dir.isEmpty()) return;
    attachDictionary(dir);
}

void MainWindow::makeDashboardDialog() {
    if (!canRun() || dictionaries_.empty()) {
        showError(tr("Open a checkpoint and attach a dictionary first (File ▸ Open Dictionary…): a dashboard is a dictionary's."));
        return;
    }
    const QString dataset = QFileDialog::getOpenFileName(this, tr("A text file, one document per line"), lastExportDir_, tr("Text (*.txt);;All files (*)"));
    if (dataset.isEmpty()) return;
    const AttachedDictionary& d = dictionaries_.at(static_cast<size_t>(std::min<int>(features_->dictionary(), static_cast<int>(dictionaries_.size()) - 1)));
    const QString out = QFileDialog::getSaveFileName(this, tr("Write the dashboard"), QString::fromStdString(defaultDashboardPath(d.dictionary->dir)),
                                                     tr("Dashboards (*.safetensors)"));
    if (!out.isEmpty()) makeDashboard(dataset, out);
}

QString MainWindow::makeDashboard(const QString& dataset, const QString& out) {
    if (!canRun() || dictionaries_.empty()) {
        const QString why = tr("open a checkpoint and attach a dictionary first.");
        showError(tr("Could not make a dashboard: %1").arg(why));
        return why;
    }
    if (dashboardJob_->isActive()) {
        const QString why = tr("a dashboard is being made already.");
        showError(tr("Could not make a dashboard: %1").arg(why));
        return why;
    }
    const AttachedDictionary attached = dictionaries_.at(static_cast<size_t>(std::min<int>(features_->dictionary(), static_cast<int>(dictionaries_.size()) - 1)));
    DashboardOptions options;
    options.dataset = dataset.toStdString();
    options.out = out.toStdString();
    const ModelPtr model = model_;
    dashboardJob_->watch(worker_->analyse([model, attached, options, out](const JobControl& control) {
        DashboardOptions o = options;
        o.cancel = control.cancelFlag();
        o.progress = [&control](const DashboardProgress& p) {
            control.progress(static_cast<int>(std::min<int64_t>(p.documentsDone, std::numeric_limits<int>::max())), static_cast<int>(std::min<int64_t>(p.documentsTotal, std::numeric_limits<int>::max())));
        };
        nnscope::makeDashboard(*model, attached, o);
        control.throwIfCancelled();  // stopped: the file holds what was done, and the job says it was cancelled
        return QVariant::fromValue(out);
    }));
    panelShow(dashboardJob_, tr("feature dashboard"), 0);
    return {};
}

void MainWindow::openDashboardDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a feature dashboard"), lastExportDir_, tr("Dashboards (*.safetensors)"));
    if (!path.isEmpty()) openDashboard(path);
}

QString MainWindow::openDashboard(const QString& path) {
    try {
        const QString name = features_->openDashboard(path);
        showView("features");
        statusBar()->showMessage(tr("Showing the dashboard %1 for %2.").arg(path, name), 5000);
        return {};
    } catch (const std::exception& e) {
        const QString why = QString::fromStdString(e.what());
        showError(tr("Could not open the dashboard %1: %2").arg(path, why));
        return why;
    }
}

QString MainWindow::attachDictionary(const QString& dirIn) {
    if (!canRun()) {
        const QString why = tr("open a checkpoint first: a dictionary is attached to a model.");
        showError(tr("Could not attach the dictionary %1: %2").arg(dirIn, why));
        return why;
    }
    const QString dir = QFileInfo(dirIn).absoluteFilePath();
    auto attachedAlready = [this](const std::string& path) {
        const QString p = QFileInfo(QString::fromStdString(path)).absoluteFilePath();
        for (const AttachedDictionary& d : dictionaries_)
            if (QFileInfo(QString::fromStdString(d.dictionary->dir)).absoluteFilePath() == p) return true;
        return false;
    };
    if (attachedAlready(dir.toStdString())) {
        statusBar()->showMessage(tr("The dictionary %1 is attached already.").arg(dir), 5000);
        return {};
    }
    size_t count = 0;
    try {
        // a circuit-tracer transcoder set attaches every layer (not attached yet), one dictionary each: all or none
        std::vector<AttachedDictionary> added;
        for (const auto& d : loadDictionaries(dir.toStdString()))
            if (!attachedAlready(d->dir)) added.push_back(AttachedDictionary::attach(*model_, d));
        if (added.empty()) {
            statusBar()->showMessage(tr("Every layer of %1 is attached already.").arg(dir), 5000);
            return {};
        }
        count = added.size();
        dictionaries_.insert(dictionaries_.end(), added.begin(), added.end());
    } catch (const std::exception& e) {
        QString why = QString::fromStdString(e.what());
        if (why.startsWith(dir + ": ")) why = why.mid(dir.size() + 2);  // the folder is named once
        showError(tr("Could not attach the dictionary %1: %2").arg(dir, why));
        statusBar()->showMessage(tr("Could not attach %1").arg(dir), 5000);
        return why;
    }
    saveDictionaries();
    features_->setAttached(dictionaryNames());
    updatePinMarks();
    recordEdits();
    const AttachedDictionary& d = dictionaries_.back();
    if (count > 1)
        statusBar()->showMessage(tr("Attached the %1 layers of the transcoder set %2.").arg(count).arg(dir), 8000);
    else
        statusBar()->showMessage(tr("Attached %1 at %2.").arg(QString::fromStdString(d.dictionary->describe()),
                                                            QString::fromStdString(valuePath(model_->family(), d.site))), 8000);
    // the trace shown did not save its site: traced again (the views keep what they show)
    if (snapshot_ && snapshot_->model == model_ && !tracePanel_->isRunning()) runTrace();
    return {};
}

void MainWindow::detachDictionary(int index) {
    if (index < 0 || index >= static_cast<int>(dictionaries_.size())) return;
    dictionaries_.erase(dictionaries_.begin() + index);
    saveDictionaries();
    features_->setAttached(dictionaryNames());
    updatePinMarks();
    runFeatures();
    recordEdits();
}

// ---- undo ---------------------------------------------------------------------------------------------------

namespace {
/// One step of Edit ▸ Undo: the session's pins, interventions and dictionaries before and after a change.
class SessionEditCommand : public QUndoCommand {
public:
    SessionEditCommand(MainWindow* window, MainWindow::SessionEdits before, MainWindow::SessionEdits after, const QString& text)
        : QUndoCommand(text), window_(window), before_(std::move(before)), after_(std::move(after)) {}
    void undo() override { window_->restoreEdits(before_); }
    void redo() override {
        if (std::exchange(first_, false)) return;  // pushed after the change was made
        window_->restoreEdits(after_);
    }

private:
    MainWindow* window_;
    MainWindow::SessionEdits before_, after_;
    bool first_ = true;
};
}  // namespace

void MainWindow::updateDemoCaption() {
    // it speaks of the demo sentence said twice: shown while that is the trace in view (another prompt has no such stripe)
    const bool demoTrace = !snapshot_ || (snapshot_->numPrompts() == 1 && snapshot_->prompt(0) == demoPrompt());
    if (demoCaption_) demoCaption_->setVisible(demoCaptionWanted_ && demoTrace && views_ && views_->currentWidget() == attention_);
}

MainWindow::SessionEdits MainWindow::captureEdits() const {
    SessionEdits e;
    e.pins = pinned_->keys();
    e.interventions = interventions_->all();
    e.checkedInterventions = interventions_->active();
    for (const AttachedDictionary& d : dictionaries_) e.dictionaries << QFileInfo(QString::fromStdString(d.dictionary->dir)).absoluteFilePath();
    return e;
}

void MainWindow::recordEdits() {
    if (restoringEdits_ || !undo_) return;
    SessionEdits now = captureEdits();
    if (now == recordedEdits_) return;
    // the step's name says what changed
    QString text;
    const SessionEdits& was = recordedEdits_;
    if (now.pins.size() > was.pins.size()) {
        text = tr("Pin %1").arg(model_ ? QString::fromStdString(valuePath(model_->family(), now.pins.back())) : QString());
    } else if (now.pins.size() < was.pins.size()) {
        text = tr("Unpin");
    } else if (now.interventions.size() > was.interventions.size()) {
        text = tr("Add %1").arg(now.interventions.back());
    } else if (now.interventions.size() < was.interventions.size()) {
        text = tr("Remove intervention(s)");
    } else if (now.checkedInterventions != was.checkedInterventions) {
        text = tr("Check or uncheck intervention(s)");
    } else if (now.dictionaries.size() > was.dictionaries.size()) {
        text = tr("Attach %1").arg(QFileInfo(now.dictionaries.back()).fileName());
    } else if (now.dictionaries.size() < was.dictionaries.size()) {
        text = tr("Detach dictionary");
    } else {
        text = tr("Change pins, interventions or dictionaries");
    }
    undo_->push(new SessionEditCommand(this, recordedEdits_, now, text));
    recordedEdits_ = std::move(now);
}

void MainWindow::restoreEdits(const SessionEdits& edits) {
    if (!model_) return;
    restoringEdits_ = true;
    // pins: unpin what the state lacks, pin what it has (the feature cards stay)
    for (const ValueKey& key : pinned_->keys())
        if (std::find(edits.pins.begin(), edits.pins.end(), key) == edits.pins.end()) pinned_->unpin(key);
    for (const ValueKey& key : edits.pins) {
        const std::vector<ValueKey> have = pinned_->keys();
        if (std::find(have.begin(), have.end(), key) == have.end()) pinned_->pin(valueKeyInfo(*model_, key));
    }
    // interventions: the lines in order, each checked as it was
    if (interventions_->all() != edits.interventions || interventions_->active() != edits.checkedInterventions) {
        interventions_->clear();
        for (int i = 0; i < edits.interventions.size(); ++i) {
            interventions_->add(edits.interventions[i]);
            interventions_->setChecked(i, edits.checkedInterventions.contains(edits.interventions[i]));
        }
    }
    // dictionaries: attached again in their order (mapped files: cheap), the trace redone when a site is missing
    QStringList now;
    for (const AttachedDictionary& d : dictionaries_) now << QFileInfo(QString::fromStdString(d.dictionary->dir)).absoluteFilePath();
    if (now != edits.dictionaries) {
        dictionaries_.clear();
        for (const QString& dir : edits.dictionaries) attachDictionary(dir);
        saveDictionaries();
        features_->setAttached(dictionaryNames());
        updatePinMarks();
        runFeatures();
    }
    restoringEdits_ = false;
    recordedEdits_ = captureEdits();
}

QStringList MainWindow::dictionaryNames() const {
    QStringList names;
    for (const AttachedDictionary& d : dictionaries_) {
        const QFileInfo info(QString::fromStdString(d.dictionary->dir));
        // one layer of a circuit-tracer set is its weights file: named by the set's folder and the layer
        names << (info.isFile() ? info.dir().dirName() + "/" + info.completeBaseName() : info.fileName());
    }
    return names;
}

void MainWindow::saveDictionaries() {
    if (!start_.useSettings || !model_) return;
    QSettings settings;
    QVariantMap all = settings.value("dictionaries/attached").toMap();
    QStringList dirs;
    for (const AttachedDictionary& d : dictionaries_) dirs << QFileInfo(QString::fromStdString(d.dictionary->dir)).absoluteFilePath();
    // an empty list is kept for the demo model, so that its own SAE, once detached, is not attached again
    if (dirs.isEmpty() && !isDemoModelDir(QString::fromStdString(model_->dir())))
        all.remove(checkpointKey(*model_));
    else
        all.insert(checkpointKey(*model_), dirs);
    settings.setValue("dictionaries/attached", all);
}

void MainWindow::reattachDictionaries() {
    dictionaries_.clear();
    features_->setRuns(nullptr);
    text_->setFeatureRuns(nullptr);
    QStringList dirs;
    bool remembered = false;
    if (start_.useSettings) {
        const QVariantMap all = QSettings().value("dictionaries/attached").toMap();
        remembered = all.contains(checkpointKey(*model_));
        dirs = all.value(checkpointKey(*model_)).toStringList();
    }
    // The demo model comes with its own sparse autoencoder (nnscope train-demo-sae): attached unless the window remembers
    // the demo's dictionaries (others, or none after a Detach).
    const QString modelDir = QString::fromStdString(model_->dir());
    const QString demoSae = QDir(modelDir).filePath(QString::fromLatin1(kDemoDictionaryFolder));
    if (!remembered && isDemoModelDir(modelDir) && QFileInfo(demoSae).isDir()) dirs << demoSae;
    QStringList dropped;
    for (const QString& dir : dirs) {
        try {
            for (const auto& d : loadDictionaries(dir.toStdString())) dictionaries_.push_back(AttachedDictionary::attach(*model_, d));
        } catch (const std::exception& e) {
            dropped << tr("%1 (%2)").arg(dir, QString::fromStdString(e.what()));
        }
    }
    if (!dropped.isEmpty()) {
        saveDictionaries();  // a folder gone (or changed) is forgotten
        statusBar()->showMessage(tr("Dropped %n remembered dictionar(y/ies) that could not be attached again: %1", nullptr,
                                    static_cast<int>(dropped.size())).arg(dropped.join(QStringLiteral("; "))), 15000);
    }
    const QStringList fromCommandLine = std::exchange(start_.dictionaries, {});
    features_->setAttached(dictionaryNames());
    for (const QString& dir : fromCommandLine) {  // --dictionary DIR
        const QString error = attachDictionary(dir);
        if (!error.isEmpty()) emit startOptionRefused(tr("--dictionary %1: %2").arg(dir, error));
    }
    updatePinMarks();
}

void MainWindow::runFeatures() {
    featuresJob_->cancelQuietly();
    panelEnd(featuresJob_, {});
    features_->setAttached(dictionaryNames());
    if (dictionaries_.empty() || !snapshot_ || !canRun() || snapshot_->model != model_) {
        features_->setRuns(nullptr);
        text_->setFeatureRuns(nullptr);
        if (dictionaries_.empty()) tracePanel_->setOutcomeNote({});  // the last detached: its quality goes too
        return;
    }
    const SnapshotPtr snapshot = snapshot_;
    const std::vector<AttachedDictionary> attached = dictionaries_;
    featuresJob_->watch(worker_->analyse([snapshot, attached](const JobControl& control) {
        return QVariant::fromValue(computeFeatureRuns(snapshot, attached, control));
    }));
    panelShow(featuresJob_, tr("dictionary features"), static_cast<int>(attached.size()) * snapshot->numPrompts());
    updateActions();
}

void MainWindow::onFeaturesFinished(FeatureRunsPtr runs) {
    panelEnd(featuresJob_, {});
    features_->setRuns(runs);
    text_->setFeatureRuns(runs);
    pinned_->setFeatureRuns(runs);
    // each dictionary's reconstruction quality on the prompt shown, said under the trace's outcome
    const int row = features_->prompt();
    QStringList lines;
    bool warning = false;
    for (const DictionaryRun& d : runs->dictionaries) {
        if (!d.error.isEmpty()) {
            lines << tr("%1: %2").arg(d.name, d.error);
            warning = true;
            continue;
        }
        const FeatureRun& run = d.rows.at(static_cast<size_t>(std::min<int>(row, static_cast<int>(d.rows.size()) - 1)));
        QString line = tr("%1 at %2: %3.").arg(d.name, d.site, featureQualityText(run));
        if (run.explainedVariance < 0) {
            line += tr(" Warning: explained variance < 0: it does not belong here.");
            warning = true;
        }
        lines << line;
    }
    tracePanel_->setOutcomeNote(lines.join(QStringLiteral(" ")), warning);
}

// ---- views and exports --------------------------------------------------------------------------------------

bool MainWindow::showView(const QString& name) {
    const int index = viewIndex(name);
    if (index < 0) return false;
    views_->setCurrentIndex(index);
    return true;
}

TraceView* MainWindow::currentView() const { return qobject_cast<TraceView*>(views_->currentWidget()); }

void MainWindow::plotValue(const ValueKey& key) {
    for (int i = fixedViews(); i < views_->count(); ++i)
        if (auto* v = qobject_cast<ValuePlotView*>(views_->widget(i)); v && v->dictionaryPath().isEmpty() && v->key() == key) {
            views_->setCurrentIndex(i);
            return;
        }
    auto* view = new ValuePlotView(key, this);
    view->setSnapshot(snapshot_);
    const QString title = model_ ? QString::fromStdString(valuePath(model_->family(), key)) : tr("value");
    views_->setCurrentIndex(views_->addTab(view, title));
}

bool MainWindow::plotDictionaryValue(const QString& path) {
    if (!snapshot_ || !snapshot_->result.dictionaryValue(path.toStdString())) return false;
    for (int i = fixedViews(); i < views_->count(); ++i)
        if (auto* v = qobject_cast<ValuePlotView*>(views_->widget(i)); v && v->dictionaryPath() == path) {
            views_->setCurrentIndex(i);
            return true;
        }
    auto* view = new ValuePlotView(path, this);
    view->setSnapshot(snapshot_);
    views_->setCurrentIndex(views_->addTab(view, path));
    return true;
}

QString MainWindow::exportPlotTo(const QString& path) {
    TraceView* view = currentView();
    if (view == patching_) {
        if (!patching_->result() || !model_) return tr("There is no patching result to export: run patching first.");
        std::map<std::string, std::string> extra;
        const auto settings = view->settings();
        for (auto it = settings.begin(); it != settings.end(); ++it) extra[it.key().toStdString()] = it.value().toStdString();
        return exportPlot(view->plotSource(), path, nnscope::exportMetadata(*model_, TraceResult{}, extra));
    }
    if (!view || !snapshot_) return tr("There is no plot to export: run a trace and pick a plot view.");
    const auto metadata = snapshot_->exportMetadata(view->settings());
    return exportPlot(view->plotSource(), path, metadata);
}

QString MainWindow::exportTraceTo(const QString& path) {
    if (!snapshot_ || (snapshot_->result.values.empty() && snapshot_->result.dictionaryValues.empty()))
        return tr("There is no trace to export: run a trace first.");
    if (!path.endsWith(".safetensors", Qt::CaseInsensitive)) return tr("Cannot export the trace to %1: a trace is written to a .safetensors file.").arg(path);
    try {
        std::map<std::string, std::string> extra{{"exported_from", "nnscope gui"}};
        if (!snapshot_->interventions.isEmpty()) extra["interventions"] = snapshot_->interventions.join(" ; ").toStdString();
        if (exportDictionaryValuesAct_->isChecked() && !dictionaries_.empty() && snapshot_->model == model_) {
            // the attached dictionaries' values on this trace (whose sites it saved for the Features view)
            TraceResult result = snapshot_->result;
            for (DictionaryValue& v : dictionaryValues(*model_, result, dictionaries_, dictionaryValuePaths(*model_, dictionaries_)))
                if (!result.dictionaryValue(v.path)) result.dictionaryValues.push_back(std::move(v));
            exportValues(path.toStdString(), *snapshot_->model, result, extra);
            return {};
        }
        exportValues(path.toStdString(), *snapshot_->model, snapshot_->result, extra);
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString MainWindow::exportValueTo(const ValueKey& key, const QString& path) {
    if (!snapshot_) return tr("There is no value to export: run a trace first.");
    QMap<QString, QString> settings{{"exported_from", "nnscope gui"}};
    if (!snapshot_->interventions.isEmpty()) settings["interventions"] = snapshot_->interventions.join(" ; ");
    // the provenance is the value's own: the current view's settings only where that view shows this value (a neuron
    // view's block and neuron say nothing of an attention_output exported from a card)
    if (TraceView* view = currentView()) {
        const QMap<QString, QString> viewSettings = view->settings();
        if (viewSettings.value("view.value") == snapshot_->path(key)) settings.insert(viewSettings);
    }
    return exportValue(*snapshot_, key, path, settings);
}

void MainWindow::exportPlotDialog() {
    TraceView* view = currentView();
    if (!view || (view == patching_ ? !patching_->result() : !snapshot_)) {
        showError(tr("There is no plot to export: run a trace and pick a plot view."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plot"), lastExportDir_ + "/" + view->plotSource().name + ".png",
                                                      plotFileFilter());
    if (path.isEmpty()) return;
    lastExportDir_ = QFileInfo(path).absolutePath();
    const QString error = exportPlotTo(path);
    if (error.isEmpty())
        statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
    else
        showError(error);
}

void MainWindow::exportValueDialog(const ValueKey& key) {
    if (!snapshot_) {
        showError(tr("There is no value to export: run a trace first."));
        return;
    }
    const QString name = snapshot_->path(key);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export %1").arg(name), lastExportDir_ + "/" + name + ".npy",
                                                      valueFileFilter());
    if (path.isEmpty()) return;
    lastExportDir_ = QFileInfo(path).absolutePath();
    const QString error = exportValueTo(key, path);
    if (error.isEmpty())
        statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
    else
        showError(error);
}

void MainWindow::exportViewValueDialog() {
    TraceView* view = currentView();
    const QString path = view ? view->settings().value("view.value") : QString();
    if (!model_ || path.isEmpty()) {
        showError(tr("The current view shows no single value: pin a value in the diagram and export it from its card."));
        return;
    }
    try {
        exportValueDialog(parseValuePath(*model_, path.toStdString()));
    } catch (const Error& e) {
        showError(QString::fromStdString(e.what()));
    }
}

QString MainWindow::saveScreenshot(const QString& path) {
    const QImage image = grab().toImage();
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return tr("Cannot write %1: %2").arg(path, file.errorString());
    QImageWriter writer(&file, "png");
    if (!writer.write(image)) {
        file.cancelWriting();
        return tr("Cannot write %1: %2").arg(path, writer.errorString());
    }
    if (!file.commit()) return tr("Cannot write %1: %2").arg(path, file.errorString());
    return {};
}

// ---- dialogs, settings, status ------------------------------------------------------------------------------

void MainWindow::openTraceDialog() {
    const QString start = !traceFile_.isEmpty() ? QFileInfo(traceFile_).absolutePath() : lastExportDir_;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open trace file"), start, tr("Trace files (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) openTraceFile(path);
}

void MainWindow::openGraphDialog() {
    const QString start = !circuit_->fileName().isEmpty() ? QFileInfo(circuit_->fileName()).absolutePath() : lastExportDir_;
    const QString path = QFileDialog::getOpenFileName(this, tr("Open attribution graph"), start, tr("Graph JSON (*.json);;All files (*)"));
    if (!path.isEmpty()) openGraphFile(path);
}

QString MainWindow::openGraphFile(const QString& path) {
    clearError();
    QApplication::setOverrideCursor(Qt::WaitCursor);
    const QString error = circuit_->openGraph(path);
    QApplication::restoreOverrideCursor();
    if (!error.isEmpty()) {
        showError(error);
        return error;
    }
    centralStack_->setCurrentWidget(views_);  // the Circuit view needs no model
    circuit_->setFeatureDetails({});        // nor its transcoders
    circuitTranscoders_.reset();
    showView("circuit");
    statusBar()->showMessage(tr("Opened the graph %1").arg(path), 5000);
    return {};
}

void MainWindow::saveGraphDialog() {
    if (!circuit_->hasGraph()) {
        showError(tr("There is no attribution graph to save: File ▸ Open Graph… first."));
        return;
    }
    const QString name = !circuit_->fileName().isEmpty() ? QFileInfo(circuit_->fileName()).completeBaseName() + "-edited.json"
                                                         : QStringLiteral("graph.json");
    const QString path = QFileDialog::getSaveFileName(this, tr("Save attribution graph"), lastExportDir_ + "/" + name, tr("Graph JSON (*.json)"));
    if (path.isEmpty()) return;
    lastExportDir_ = QFileInfo(path).absolutePath();
    const QString error = circuit_->saveGraph(path);
    if (error.isEmpty()) statusBar()->showMessage(tr("Wrote %1 (File ▸ Open Graph reads it back; so does Neuronpedia)").arg(path), 5000);
    else showError(error);
}

void MainWindow::exportTraceDialog() {
    if (!snapshot_ || (snapshot_->result.values.empty() && snapshot_->result.dictionaryValues.empty())) {
        showError(tr("There is no trace to export: run a trace first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export trace"), lastExportDir_ + "/trace.safetensors",
                                                      tr("safetensors (*.safetensors)"));
    if (path.isEmpty()) return;
    lastExportDir_ = QFileInfo(path).absolutePath();
    const QString error = exportTraceTo(path);
    if (error.isEmpty())
        statusBar()->showMessage(tr("Wrote %1 (File ▸ Open Trace reads it back)").arg(path), 5000);
    else
        showError(error);
}

void MainWindow::openDialog() {
    const QString start = model_ ? QFileInfo(QString::fromStdString(model_->dir())).absolutePath() : QDir::homePath();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open checkpoint folder"), start);
    if (!dir.isEmpty()) openModel(dir);
}

QComboBox* createDeviceChoice(QWidget* parent, const torch::Device& current, const DeviceSupport& support) {
    auto* box = new QComboBox(parent);
    box->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
    box->setItemData(0, MainWindow::tr("The weights in memory, the forward pass on the CPU's cores"), Qt::ToolTipRole);
    const int gpus = std::max(1, support.cudaDevices);
    auto* items = qobject_cast<QStandardItemModel*>(box->model());
    QString why;
    for (int i = 0; i < gpus; ++i) {
        const torch::Device gpu(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
        const QString name = QString::fromStdString(deviceName(gpu));
        box->addItem(gpus == 1 ? QStringLiteral("cuda") : name, name);
        const std::string reason = deviceUnavailableReason(gpu, support);
        if (reason.empty()) {
            box->setItemData(box->count() - 1, MainWindow::tr("The weights copied to GPU %1 once at load; the pass computes there, "
                                                              "and the views read its values back on the CPU").arg(i),
                             Qt::ToolTipRole);
            continue;
        }
        why = QString::fromStdString(reason);
        box->setItemData(box->count() - 1, why, Qt::ToolTipRole);
        if (items) items->item(box->count() - 1)->setEnabled(false);
    }
    if (!why.isEmpty()) box->setToolTip(why);  // the box says why its GPU entry is greyed, without opening it
    const int wanted = box->findData(QString::fromStdString(deviceName(current)));
    box->setCurrentIndex(wanted >= 0 && deviceUnavailableReason(current, support).empty() ? wanted : 0);
    return box;
}

void MainWindow::preferencesDialog() {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Preferences"));
    auto* dtype = new QComboBox(&dialog);
    dtype->addItems({"auto", "float32", "bfloat16"});
    dtype->setItemData(0, tr("The checkpoint's own dtype where this CPU computes it natively (bfloat16 needs AVX512-BF16 or AMX), "
                             "else float32"), Qt::ToolTipRole);
    dtype->setCurrentText(QString::fromStdString(dtypeRequestName(dtype_)));
    QComboBox* device = createDeviceChoice(&dialog, device_, deviceSupport());
    auto* threads = new QSpinBox(&dialog);
    threads->setRange(0, 256);
    threads->setSpecialValueText(tr("every core"));
    threads->setValue(threads_);
    auto* lensK = new QSpinBox(&dialog);
    lensK->setRange(1, 20);
    lensK->setValue(lensTopK_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Compute dtype (applies when a checkpoint is opened):"), dtype);
    form->addRow(tr("Device (applies when a checkpoint is opened):"), device);
    form->addRow(tr("CPU threads:"), threads);
    form->addRow(tr("Logit lens: tokens listed per cell:"), lensK);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) return;
    dtype_ = parseDtypeRequest(dtype->currentText().toStdString());
    device_ = parseDevice(device->currentData().toString().toStdString());
    threads_ = threads->value();
    if (lensK->value() != lensTopK_) {  // the lenses kept list another number of tokens: computed again when shown
        lensTopK_ = lensK->value();
        stopLens();
        for (const SnapshotPtr& s : {snapshot_, snapshot_ ? snapshot_->baseline : nullptr})
            if (s) s->clearLenses();
        lens_->lensChanged();
        compare_->lensChanged();
        ensureLens();
    }
    worker_->setThreads(threads_);
    writeSettings();
}

void MainWindow::about() {
    QMessageBox::about(this, tr("About nnscope"),
                       tr("<h3>nnscope %1</h3><p>A native explorer of transformer internals: open a HuggingFace checkpoint, "
                          "trace prompts, and read every value under nnterp's standard names.</p>"
                          "<p>Hover a part of the block diagram for its name, layout and where it is read; click it to pin "
                          "its card. Run traces from the panel at the bottom.</p>").arg(version()));
}

void MainWindow::addRecent(const QString& dir) {
    recent_.removeAll(dir);
    recent_.prepend(dir);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    updateRecentMenu();
}

void MainWindow::updateRecentMenu() {
    recentMenu_->clear();
    for (int i = 0; i < recent_.size(); ++i) {
        const QString dir = recent_[i];
        QAction* a = recentMenu_->addAction(QString("&%1 %2").arg(i + 1).arg(dir));
        a->setStatusTip(tr("Open %1").arg(dir));
        connect(a, &QAction::triggered, this, [this, dir] { openModel(dir); });
    }
    recentMenu_->addSeparator();
    recentMenu_->addAction(clearRecentAct_);
    recentMenu_->setEnabled(true);
    QString html = tr("<h2>nnscope</h2><p>A window into transformer language models: open a HuggingFace checkpoint folder "
                      "(config.json, model.safetensors and a tokenizer) to see its block diagram, support table and printout, "
                      "then trace prompts to read attention patterns, neurons and the logit lens.</p>"
                      "<p><a href='open:'>Open a checkpoint…</a> (File ▸ Open Checkpoint…, Ctrl+O), or start with "
                      "<tt>nnscope gui --model DIR</tt>.</p>");
    if (!recent_.isEmpty()) {
        html += tr("<h3>Recent models</h3><ul>");
        for (const QString& dir : recent_) html += QString("<li><a href='recent:%1'>%2</a></li>").arg(dir.toHtmlEscaped(), dir.toHtmlEscaped());
        html += "</ul>";
    }
    if (!model_ && !loadJob_->isActive()) startPage_->setHtml(html);
}

void MainWindow::showError(const QString& message) {
    messageLabel_->setText(elidedText(message, 2000));  // a message may quote a file's text: word-wrapped, a megabyte takes minutes
    messageBar_->show();
}

void MainWindow::clearError() {
    messageLabel_->clear();
    messageBar_->hide();
}

QString MainWindow::errorText() const { return messageLabel_->text(); }

void MainWindow::updateActions() {
    const bool running = tracePanel_->isRunning();
    runAct_->setEnabled(canRun() && !running);
    cancelAct_->setEnabled(running || viewJobsRunning());
    reloadAct_->setEnabled(canRun() && !running);
    exportTraceAct_->setEnabled(snapshot_ && (!snapshot_->result.values.empty() || !snapshot_->result.dictionaryValues.empty()));
    const bool plot = currentView() && (currentView() == patching_ ? patching_->result() != nullptr : snapshot_ != nullptr);
    exportPlotAct_->setEnabled(plot);
    exportValueAct_->setEnabled(plot && !currentView()->settings().value("view.value").isEmpty());
}

// ---- attribution graphs ---------------------------------------------------------------------------------------------

void MainWindow::updateCircuitCompute() {
    if (circuitJob_ && circuitJob_->isActive()) {
        circuit_->setComputeEnabled(false, tr("A graph is being computed (Esc stops it)."));
        return;
    }
    if (!snapshot_ || !snapshot_->sourceFile.isEmpty() || !snapshot_->model || !snapshot_->model->hasWeights()) {
        circuit_->setComputeEnabled(false, snapshot_ && !snapshot_->sourceFile.isEmpty()
                                               ? tr("A trace file holds no model to compute a graph with: open its checkpoint and run a trace.")
                                               : tr("Open a model and run a trace to compute a graph of its prompt."));
        return;
    }
    const QString why = circuitDtypeProblem();
    if (!why.isEmpty()) {
        circuit_->setComputeEnabled(false, why);
        return;
    }
    const QString modelDir = QString::fromStdString(snapshot_->model->dir());
    if (circuit_->property("modelDir").toString() != modelDir) {  // another model: its own transcoders, when it ships them
        circuit_->setProperty("modelDir", modelDir);
        const QString beside = QDir(modelDir).filePath(QStringLiteral("transcoders"));
        circuit_->setTranscodersDir(QFileInfo(beside).isDir() ? beside : QString());
    }
    circuit_->setComputeEnabled(true, {});
}

QString MainWindow::circuitDtypeProblem() const {
    // computeAttributionGraph refuses another dtype (its message names the command line's --dtype); the window says
    // where its own choice is.
    if (!snapshot_ || !snapshot_->model || snapshot_->model->dtype() == torch::kFloat32) return {};
    return tr("Attribution graphs are computed in float32, as circuit-tracer computes them, and this model computes in %1: "
              "choose float32 in File ▸ Preferences ▸ Compute dtype, then File ▸ Reload Checkpoint.")
        .arg(QString::fromStdString(dtypeName(snapshot_->model->dtype())));
}

QString MainWindow::steerCircuitFeatures(const std::vector<GraphNode>& features, double value, bool clamp, bool atOwnPosition) {
    if (!circuitTranscoders_ || circuitTranscoders_->perLayer.empty()) {
        const QString why = circuitTranscoders_ ? tr("steering a cross-layer transcoder's features is not supported yet.")
                                                : tr("the graph was opened from a file: compute it to steer its features.");
        showError(tr("Could not steer the pinned features: %1").arg(why));
        return why;
    }
    const CircuitTranscoders& transcoders = *circuitTranscoders_;
    int added = 0;
    for (const GraphNode& n : features) {
        if (n.layer < 0 || n.layer >= static_cast<int>(transcoders.perLayer.size())) continue;
        const QString line = QStringLiteral("feature %1:%2%3 %4 %5")
                                 .arg(QString::fromStdString(transcoders.perLayer[static_cast<size_t>(n.layer)]->dir))
                                 .arg(n.index)
                                 .arg(atOwnPosition ? QStringLiteral("@%1").arg(n.position) : QString())
                                 .arg(clamp ? QStringLiteral("=") : QStringLiteral("*="))
                                 .arg(value);
        const QString error = addIntervention(line);
        if (!error.isEmpty()) return error;
        ++added;
    }
    statusBar()->showMessage(tr("Added %n feature edit(s) to the interventions: run the trace to see the new next-token probabilities "
                                "(Before / after compares them).", "", added), 8000);
    return {};
}

QString MainWindow::computeCircuit(const QString& dirIn) {
    const QString dir = dirIn.trimmed();
    auto refuse = [this](const QString& why) {
        circuit_->setComputeMessage(why);
        showView("circuit");
        return why;
    };
    if (circuitJob_->isActive()) return refuse(tr("A graph is being computed already."));
    if (!snapshot_ || !snapshot_->sourceFile.isEmpty() || !snapshot_->model || !snapshot_->model->hasWeights())
        return refuse(tr("Open a model and run a trace first: the graph explains the traced prompt's next token."));
    if (const QString why = circuitDtypeProblem(); !why.isEmpty()) return refuse(why);
    if (dir.isEmpty()) return refuse(tr("Choose the transcoders' folder first."));
    const ModelPtr model = snapshot_->model;
    const int row = std::clamp(attention_->prompt(), 0, snapshot_->numPrompts() - 1);
    const std::vector<int64_t> ids = snapshot_->result.batch.ids.at(static_cast<size_t>(row));
    const std::string prompt = snapshot_->result.batch.prompts.at(static_cast<size_t>(row));
    CircuitTranscoders transcoders;
    CircuitEstimate estimate;
    try {
        transcoders = loadCircuitTranscoders(dir.toStdString());
        estimate = estimateCircuit(*model, transcoders, static_cast<int64_t>(ids.size()), CircuitOptions{});
    } catch (const std::exception& e) {
        return refuse(tr("Cannot compute a graph: %1").arg(QString::fromStdString(e.what())));
    }
    const QString estimateText = tr("Estimate: %1.").arg(QString::fromStdString(estimate.text()));
    if (!estimate.fits) return refuse(tr("Refused: the graph will not fit in the memory available. %1 Trace a shorter prompt.").arg(estimateText));
    circuit_->setComputeMessage(estimateText);
    circuitJob_->watch(worker_->analyse([model, transcoders, ids, prompt, dir](const JobControl& control) {
        auto computed = std::make_shared<ComputedCircuit>();
        computed->transcoders = transcoders;
        AttributionGraph& graph = computed->graph;
        graph = computeAttributionGraph(
            *model, transcoders, ids, CircuitOptions{},
            [&control](const std::string&, int64_t done, int64_t total) {
                control.progress(static_cast<int>(std::min<int64_t>(done, std::numeric_limits<int>::max())),
                                 static_cast<int>(std::min<int64_t>(total, std::numeric_limits<int>::max())));
            },
            control.cancelFlag());
        graph.prompt = prompt;
        graph.modelDir = model->dir();
        graph.transcoderDir = dir.toStdString();
        graph.slug = QFileInfo(QString::fromStdString(model->dir())).fileName().toStdString() + "-graph";
        return QVariant::fromValue(ComputedCircuitPtr(std::move(computed)));
    }));
    panelShow(circuitJob_, tr("attribution graph"), 0);
    updateCircuitCompute();
    showView("circuit");
    return {};
}

}  // namespace nnscope
