// SPDX-License-Identifier: MIT
#pragma once
// The explorer window: docks for the block diagram, the support table and printout, the pinned cards and the trace
// panel around the central views (model summary, attention, neurons, logit lens, pinned values). Built in named
// steps like Qt's application example; settings (layout, recent models, options) are read at start and written
// on close. The model runs only in the TraceWorker thread: every job (a load, a trace, the logit lens, a view's
// analysis, ...) is followed through a JobWatcher, one per purpose, and the central views are listed once, in
// viewregistry.h.
#include "jobwatcher.h"
#include "traceworker.h"
#include "viewregistry.h"

#include "core/analysis/circuit.h"
#include "core/analysis/valuestats.h"
#include "core/model/device.h"
#include "core/run/features.h"
#include "widgets/views/featuresview.h"
#include "widgets/views/patchingview.h"
#include "widgets/views/tracesnapshot.h"

#include <QMainWindow>
#include <QStringList>

#include <optional>

class QAction;
class QComboBox;
class QFrame;
class QPushButton;
class QTimer;
class QDockWidget;
class QLabel;
class QUndoStack;
class QListView;
class QMenu;
class QStackedWidget;
class QTabWidget;
class QTableView;
class QTextBrowser;
class QUrl;

namespace nnscope {

/// A graph the worker computed (MainWindow::computeCircuit) and the transcoders it was computed with.
struct ComputedCircuit {
    AttributionGraph graph;
    CircuitTranscoders transcoders;
};
using ComputedCircuitPtr = std::shared_ptr<const ComputedCircuit>;

class AttentionView;
class CompareView;
class DiagramPanel;
class InterventionPanel;
class PatchingView;
class AttributionView;
class GenerateView;
class FlowView;
class HeadsView;
class TextView;
struct GenerateRequest;
class FamilyView;
class FeaturesView;
class CircuitView;
class RoutingView;
class LogitLensView;
class NeuronView;
class PinnedCardsPanel;
class PrintoutModel;
class SupportTableModel;
class TracePanel;
class TraceView;

/// What the command line asks the window to do at start.
struct StartOptions {
    QString model;           ///< --model DIR
    QString traceFile;       ///< --open-trace FILE: browse a trace file instead of opening a checkpoint
    QString graphFile;       ///< --open-graph FILE: an attribution graph JSON shown in the Circuit view
    QStringList prompts;     ///< --prompt TEXT (traced as soon as the model is open)
    QStringList interventions;  ///< --edit / --skip N / --steer SPEC, as Interventions lines (added once the model is open)
    std::optional<PatchRequest> patch;  ///< --clean, --corrupted, --answer, --wrong, --site: run once the model is open
    QString view;            ///< --view NAME (viewNames()): the view shown first
    QStringList pins;        ///< --pin PATH: values pinned once the model is open
    QStringList dictionaries;  ///< --dictionary DIR: sparse dictionaries attached once the model is open
    QString dtype;           ///< --dtype: auto, float32 or bfloat16 (empty: the saved option)
    QString device;          ///< --device: cpu, cuda or cuda:N (empty: the saved option); checked usable by the command line
    bool openDefault = true; ///< without --model: open the most recent model, else the demo model
    bool useSettings = true; ///< read and write QSettings (off for --screenshot: reproducible, leaves them alone)
};

/// The device choice of the Preferences dialog: "cpu", then "cuda:0" ... one per GPU `support` reports (at least one
/// "cuda" entry). An entry this build or machine cannot use is disabled, its tooltip (and the box's) giving
/// deviceUnavailableReason (core/model/device.h): "this nnscope was built on a libtorch without CUDA ...", "no CUDA
/// device ...". `current` is selected when it is usable, else cpu. Each entry's Qt::UserRole data is its deviceName.
QComboBox* createDeviceChoice(QWidget* parent, const torch::Device& current, const DeviceSupport& support);

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const StartOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    void openModel(const QString& dir);
    /// Reads a trace file (core/io/tracefile.h) in the worker and browses it: the views show its values, nothing runs
    /// (the window says a trace file is open, no model). A file that cannot be read leaves the window as it was and
    /// shows why.
    void openTraceFile(const QString& path);
    /// The trace file the window browses, or "" when a checkpoint (or nothing) is open.
    QString traceFile() const { return traceFile_; }
    /// Reads the sparse dictionary in folder `dir` (core/io/dictionary.h) and attaches it to the open checkpoint
    /// (AttachedDictionary::attach: its site checked against the model); the checkpoint remembers it (QSettings
    /// "dictionaries/attached") and the next traces save its site and run it in the worker. With a trace shown the
    /// prompts are traced again. Returns "" or the error (also shown in the window's error bar, naming the folder).
    QString attachDictionary(const QString& dir);
    /// Shows the dashboard file `path` in the Features view (FeaturesView::openDashboard) and the view; returns "" or
    /// why it could not (also shown as an error).
    QString openDashboard(const QString& path);
    /// Makes the dashboard of the dictionary the Features view shows over the text file `dataset` (one document per
    /// line) in the worker (core/run/dashboard.h makeDashboard: resumed when `out` exists), with progress in the trace
    /// panel (documents) and its Cancel (stops after the current batch; what is done is written), then shows it.
    /// Returns "" or why it cannot start.
    QString makeDashboard(const QString& dataset, const QString& out);
    /// The watcher of the dashboard being made (makeDashboard).
    JobWatcher* dashboardJob() const { return dashboardJob_; }
    /// The attached dictionaries' folder names, in order (the Features view's chooser, File ▸ Detach Dictionary).
    QStringList dictionaryNames() const;
    /// Detaches the dictionary at `index` (attach order); the checkpoint forgets it.
    void detachDictionary(int index);
    /// The dictionaries attached to the open checkpoint, in attach order.
    const std::vector<AttachedDictionary>& dictionaries() const { return dictionaries_; }
    /// Pins value `key` of the open model (as a click on its diagram part does), then reads it from the last trace's
    /// inputs at once where that is cheap (traceMultiplyAdds under kImmediateRereadBudget). False when already pinned.
    bool pinValue(const ValueKey& key);
    /// Up to how many multiply-adds (traceMultiplyAdds) a pinned value is read from the last trace's inputs at once
    /// (kImmediateRereadBudget; the tests lower it to see the "next run" path).
    void setRereadBudget(double multiplyAdds) { rereadBudget_ = multiplyAdds; }
    void runTrace();
    void cancelTrace();
    /// Shows a central view by name (viewNames(): "model", "attention", ...). False for a name that is none.
    bool showView(const QString& name);
    /// Writes the current view's plot (.png/.svg/.pdf) / a traced value (.npy/.safetensors/.csv). Returns the error, or "".
    QString exportPlotTo(const QString& path);
    QString exportValueTo(const ValueKey& key, const QString& path);
    /// Writes every value the last trace saved to one .safetensors file (Export > Trace…), as `nnscope trace --out`
    /// does; File > Open Trace reads it back. Returns the error, or "".
    QString exportTraceTo(const QString& path);
    /// Grabs the whole window into a PNG. Returns the error, or "".
    QString saveScreenshot(const QString& path);
    /// Opens a traced value as a heatmap in a new tab.
    void plotValue(const ValueKey& key);
    /// Opens (or shows) a plot of the snapshot's dictionary value `path` (SITE[NAME].features, ...); false when the
    /// snapshot holds no such value.
    bool plotDictionaryValue(const QString& path);

    ModelPtr model() const { return model_; }
    SnapshotPtr snapshot() const { return snapshot_; }
    /// The error the window shows (the message bar), or "".
    QString errorText() const;
    /// The banner over the views that says where the shown trace's values first hold a NaN or an infinity
    /// (TraceSnapshot::nonFinite); hidden when they are all finite.
    QLabel* nonFiniteBanner() const { return nonFiniteBanner_; }
    /// The bar above the views saying the trace shown was run without the interventions as they are now, its text and
    /// its Run button.
    QFrame* staleInterventionsBar() const { return staleBar_; }
    QString staleInterventionsText() const;
    QPushButton* staleInterventionsRun() const { return staleRun_; }
    /// Below this many milliseconds per trace, a change of the interventions runs the trace again by itself (0: never).
    void setQuickRerunMs(qint64 ms) { quickRerunMs_ = ms; }
    TraceWorker* worker() const { return worker_; }
    DiagramPanel* diagramPanel() const { return diagram_; }
    PinnedCardsPanel* pinnedPanel() const { return pinned_; }
    TracePanel* tracePanel() const { return tracePanel_; }
    AttentionView* attentionView() const { return attention_; }
    NeuronView* neuronView() const { return neurons_; }
    LogitLensView* lensView() const { return lens_; }
    FamilyView* familyView() const { return family_; }
    InterventionPanel* interventionPanel() const { return interventions_; }
    /// Edit ▸ Undo / Redo: pins, interventions (lines and check marks) and dictionary attachments, on the open
    /// checkpoint (opening another one starts a new history).
    QUndoStack* undoStack() const { return undo_; }
    /// What Edit ▸ Undo restores: the pinned values, the intervention lines with their check marks, the attached
    /// dictionaries' folders.
    struct SessionEdits {
        std::vector<ValueKey> pins;
        QStringList interventions;
        QStringList checkedInterventions;
        QStringList dictionaries;
        bool operator==(const SessionEdits& o) const {
            return pins == o.pins && interventions == o.interventions && checkedInterventions == o.checkedInterventions &&
                   dictionaries == o.dictionaries;
        }
    };
    SessionEdits captureEdits() const;
    /// Puts the pins, interventions and dictionaries of `edits` back (what Undo and Redo do).
    void restoreEdits(const SessionEdits& edits);
    /// The demo's first-run caption (shown when the demo opens until dismissed; settings key demo/captionDismissed).
    QFrame* demoCaption() const { return demoCaption_; }
    CompareView* compareView() const { return compare_; }
    PatchingView* patchingView() const { return patching_; }
    AttributionView* attributionView() const { return attribution_; }
    GenerateView* generateView() const { return generate_; }
    FlowView* flowView() const { return flow_; }
    HeadsView* headsView() const { return heads_; }
    TextView* textView() const { return text_; }
    FeaturesView* featuresView() const { return features_; }
    CircuitView* circuitView() const { return circuit_; }
    RoutingView* routingView() const { return routing_; }
    /// Reads an attribution graph JSON (circuit-tracer's or Neuronpedia's, core/io/graphjson.h) into the Circuit view
    /// and shows it; no model is needed. Returns "" or the error (also shown in the window).
    QString openGraphFile(const QString& path);
    /// Computes the attribution graph of the shown trace's prompt (the prompt the views show) through the transcoders in
    /// `dir` (core/analysis/circuit.h), in the worker with the trace panel's progress and Esc: the estimate of its memory
    /// and time first, shown in the Circuit view (refused with it when the graph will not fit), then the graph, shown
    /// there. Returns "" when started, else why not (also shown in the Circuit view).
    QString computeCircuit(const QString& dir);
    JobWatcher* circuitJob() const { return circuitJob_; }
    /// Adds `feature <transcoder>:<F>@<position> *= value` (with `clamp`: `= value`; without `atOwnPosition`: no
    /// `@position`, every position) to the interventions for each of `features` (feature nodes of the Circuit view's
    /// graph, per-layer transcoders): the graph's story checked by steering. Returns "" or why not.
    QString steerCircuitFeatures(const std::vector<GraphNode>& features, double value, bool clamp = false, bool atOwnPosition = true);
    /// The watcher of the attached dictionaries' run on the last trace (computeFeatureRuns, in the worker).
    JobWatcher* featuresJob() const { return featuresJob_; }
    /// Adds an intervention (addIntervention syntax) to the Interventions dock; the next trace applies it. Returns ""
    /// or the reason it was refused (also shown in the window).
    QString addIntervention(const QString& text);
    /// Runs activation patching as the Patching view's form asks (in the worker thread).
    void runPatching(const PatchRequest& request);
    /// Generates in the worker with the Interventions dock's active edits (and without, beside them).
    void runGeneration(const GenerateRequest& request);
    /// Runs the family notes' checks on the open model and `prompt` in the worker thread; the Family view shows them.
    void runChecks(const QString& prompt);
    /// Asks the worker for the logit lens the shown view needs and the last trace lacks: the Logit lens view's prompt
    /// (all positions), or the Before / after view's prompt in both runs (the last position). Nothing when another
    /// view is shown, or while a trace runs (its end asks again). The trace panel counts its blocks; Esc cancels it.
    void ensureLens();
    /// Whether the worker is computing a logit lens for a view.
    bool lensRunning() const { return lensJob_->isActive(); }
    /// Whether the worker is computing something a view asked for: the logit lens, or a view's analysis (the Flow
    /// graph, the attribution, the head scores). viewJobsDone says when none is left.
    bool viewJobsRunning() const;
    /// The watchers of the window's jobs: the trace, the logit lens, and the analysis `view` asked for (created the
    /// first time it is asked for; nullptr for a view that never asked).
    JobWatcher* traceJob() const { return traceJob_; }
    JobWatcher* lensJob() const { return lensJob_; }
    JobWatcher* analysisJob(const TraceView* view) const;
    QTabWidget* views() const { return views_; }
    TraceView* currentView() const;
    QTableView* supportView() const { return supportView_; }
    QListView* printoutView() const { return printoutView_; }
    SupportTableModel* supportModel() const { return supportModel_; }
    PrintoutModel* printoutModel() const { return printoutModel_; }

signals:
    void modelOpened(const QString& dir);
    void modelFailed(const QString& dir, const QString& message);
    void traceDone();
    void traceEnded();  ///< after any outcome: done, cancelled or failed
    void checksEnded();  ///< the family checks finished or failed
    void patchEnded();   ///< activation patching finished, failed or was cancelled
    void generateEnded();  ///< generation finished, failed or was cancelled
    void traceFileOpened(const QString& path);
    void traceFileFailed(const QString& path, const QString& message);
    /// Values pinned after the last trace were read from its inputs (the cards show them), or could not be.
    void pinsRead();
    void lensEnded();      ///< a logit lens a view asked for was computed, failed or was cancelled
    void featuresEnded();  ///< the dictionaries' run on the last trace was computed, failed or was cancelled
    void dashboardEnded();  ///< a dashboard made in the worker (makeDashboard) was written, failed or was stopped
    /// The last computation views asked for (the logit lens, a view's analysis) ended: none is under way now.
    void viewJobsDone();
    /// A command-line --pin, --edit, --skip or --steer could not be applied to the opened model (also shown in the
    /// window's error bar); `gui --screenshot` exits with it.
    void startOptionRefused(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;
    /// Drag and drop: a checkpoint folder opens it, a trace file opens it, a dictionary's folder attaches it
    /// (classifyDrop, app/defaultmodel.h); the first path of the drop that nnscope opens is taken.
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createActions();
    void createMenus();
    void createDocks();
    void createCentral();
    void createStatusBar();
    void readSettings();
    void writeSettings();

    /// Makes the watchers of the window's jobs and connects what each outcome does.
    void createJobs();
    void onModelLoaded(ModelPtr model);
    void onLoadFailed(const QString& dir, const QString& message);
    /// The Interventions list changed: the trace line says whether the trace shown was run with the list as it is now.
    void interventionsChanged();
    /// The views show the interventions' trace again (or another model): no note, no bar, no re-run waiting.
    void clearStaleInterventions();
    void onTraceFinished(SnapshotPtr snapshot);
    void onTraceCancelled();
    void onTraceFailed(const QString& message);
    void onValuesRead(SnapshotPtr snapshot);
    void onTraceFileFailed(const QString& path, const QString& message);
    /// A link of the Model tab: "prompt:ROW" copies that prompt of the trace shown whole (the tab shows it elided);
    /// "dictionaryvalue:PATH" (percent-encoded) plots a trace file's dictionary value; any other opens in the desktop's browser.
    void onSummaryLink(const QUrl& url);
    void onLensFinished(LensResultsPtr lenses);
    void onLensStopped(JobState state, const QString& message);  ///< cancelled or failed
    /// Pins the command line's --pin values on the opened model (a refused one is shown and emitted as
    /// startOptionRefused); with `showBlock` the diagram shows the block of each.
    void pinStartValues(bool showBlock);
    /// Runs the attached dictionaries on the shown trace in the worker (after each trace and each attach).
    void runFeatures();
    void onFeaturesFinished(FeatureRunsPtr runs);
    /// Attaches the dictionaries the settings remember for the open checkpoint (a folder gone is dropped, and said so),
    /// and those of the command line.
    void reattachDictionaries();
    /// Writes the open checkpoint's attached dictionaries to the settings.
    void saveDictionaries();
    void openDictionaryDialog();
    void openDashboardDialog();
    void makeDashboardDialog();
    void stopLens();  ///< cancels the lens job, if any, without a word (a new trace or model replaces its snapshot)

    /// A view's analysis (TraceView::requestAnalysis): the watcher of its job, the request (kept while a trace runs,
    /// which the request waits for), and whether it waits for the trace.
    struct ViewJob {
        TraceView* view = nullptr;
        JobWatcher* watcher = nullptr;
        AnalysisRequest request;
        bool waiting = false;  ///< asked for while a trace runs: queued when it ends without a new snapshot
    };
    ViewJob& viewJob(TraceView* view);
    /// Runs `view`'s request in the worker (replacing the view's earlier one), or keeps it until the running trace ends.
    void runAnalysis(TraceView* view, const AnalysisRequest& request);
    /// Hands the outcome of `view`'s analysis back to it.
    void endAnalysis(TraceView* view, JobState state, const QVariant& result, const QString& message);
    /// Cancels every view's analysis without a word; with `keep` they wait to be asked again when the trace ends.
    void suspendAnalyses(bool keep);
    /// The trace ended without a new snapshot: the analyses that waited for it are run now.
    void resumeAnalyses();
    /// The trace panel's bar and Esc serve one computation a view asked for at a time: `job`, named `what`, of `total`
    /// steps. panelEnd gives the bar back (with `note` said under the trace's outcome, in the warning colour when
    /// `warning`: a cancel or a failure, not a result) and shows the next one under way.
    void panelShow(JobWatcher* job, const QString& what, int total);
    void panelProgress(JobWatcher* job, int done, int total);
    void panelEnd(JobWatcher* job, const QString& note, bool warning = true);
    /// Emits viewJobsDone when no computation a view asked for is left.
    void checkViewJobsDone();

    /// A fixed central view: its entry in viewSpecs() and its widget.
    struct View {
        const ViewSpec* spec;
        QWidget* widget;
    };
    /// The fixed views that are TraceViews and follow `follows` (ViewSpec::Follows flags; 0: all of them).
    QList<TraceView*> traceViews(int follows = 0) const;
    /// How many fixed views there are (the tabs after them are plots of single values).
    int fixedViews() const { return static_cast<int>(viewList_.size()); }
    void onPartHovered(const QString& id, const QString& html);
    void onPartClicked(const QString& id);
    void onSupportRowChanged();
    void onPrintoutRowChanged();
    void onBlockChanged(int block);
    void onPromptChanged(int row);
    void updatePinMarks();
    /// Reads the pinned values the last trace lacks from its inputs, when cheap; else the cards say the next run does.
    void readMissingPins();
    void onTraceFileOpened(SnapshotPtr snapshot);
    /// Every trace view shows `snapshot` (nullptr: none).
    void showSnapshot(const SnapshotPtr& snapshot);
    /// Shows the banner of the first NaN or infinity of `snapshot`'s values, or hides it.
    void updateNonFiniteBanner(const SnapshotPtr& snapshot);
    /// The open model can run traces (a checkpoint, not a trace file).
    bool canRun() const { return model_ && traceFile_.isEmpty(); }
    void openDialog();
    void openTraceDialog();
    void openGraphDialog();
    void saveGraphDialog();
    void exportTraceDialog();
    void exportPlotDialog();
    void exportValueDialog(const ValueKey& key);
    void exportViewValueDialog();
    void steeringDialog();
    void preferencesDialog();
    void about();
    void addRecent(const QString& dir);
    void updateRecentMenu();
    void showError(const QString& message);
    void clearError();
    void updateActions();

    StartOptions start_;
    TraceWorker* worker_;
    ModelPtr model_;
    SnapshotPtr snapshot_;
    JobWatcher* loadJob_;
    JobWatcher* traceJob_;
    JobWatcher* checksJob_;
    JobWatcher* patchJob_;
    JobWatcher* generateJob_;
    JobWatcher* rereadJob_;
    JobWatcher* openTraceJob_;
    JobWatcher* lensJob_;
    JobWatcher* featuresJob_;
    JobWatcher* dashboardJob_;
    JobWatcher* circuitJob_ = nullptr;
    /// The transcoders the Circuit view's graph was computed with (its feature cards and Steer pinned… read them);
    /// null for a graph opened from a file.
    std::shared_ptr<const CircuitTranscoders> circuitTranscoders_;
    /// Whether the Circuit view can compute a graph now (a trace run in this window on a model with weights), and its
    /// default transcoders folder (<model>/transcoders where it exists).
    void updateCircuitCompute();
    /// Why the open model cannot compute an attribution graph in the window ("" when it can): graphs are computed in
    /// float32, and a model opened in bfloat16 (`--dtype auto` on a CPU with native bfloat16) is refused with where to
    /// change the compute dtype.
    QString circuitDtypeProblem() const;
    std::vector<ViewJob> viewJobs_;
    std::vector<AttachedDictionary> dictionaries_;  ///< attached to the open checkpoint, in attach order
    JobWatcher* panelJob_ = nullptr;  ///< the computation the trace panel's bar counts (nullptr: the trace's or none)
    std::vector<View> viewList_;
    QString openTracePath_;  ///< the trace file openTraceJob_ reads
    int traceBlocks_ = 0;    ///< the blocks of the trace under way
    QString traceFile_;  ///< the trace file browsed (no model), or ""
    double rereadBudget_ = kImmediateRereadBudget;
    quint64 rereadSerial_ = 0;         ///< the trace whose inputs were last read again
    std::vector<ValueKey> rereadAsked_;  ///< what that read asked for (not asked twice: a pass that did not compute it)
    std::vector<LensRequest> lensRequests_;  ///< what the running lens job computes
    QString patchMetric_;
    QString checksPrompt_;
    QString loadingDir_;
    qint64 traceStartedMs_ = 0;
    bool staleInterventionsNote_ = false;  ///< the trace line says the interventions changed since the trace shown
    bool syncing_ = false;  ///< guards the selection sync between the diagram and the tables
    bool sizedDocks_ = false, restoredState_ = false;
    QDockWidget* diagramDock_ = nullptr;
    QDockWidget* pinnedDock_ = nullptr;

    // options (QSettings)
    QStringList recent_;
    std::optional<torch::ScalarType> dtype_;  ///< the compute dtype asked for; nullopt: auto
    torch::Device device_ = torch::kCPU;      ///< where the next checkpoint opened computes (Preferences, --device)
    int threads_ = 0;
    int lensTopK_ = 5;
    QString lastExportDir_;

    DiagramPanel* diagram_;
    SupportTableModel* supportModel_;
    PrintoutModel* printoutModel_;
    QTableView* supportView_;
    QListView* printoutView_;
    PinnedCardsPanel* pinned_;
    TracePanel* tracePanel_;
    QStackedWidget* centralStack_;
    QTextBrowser* startPage_;
    QTabWidget* views_;
    QTextBrowser* summary_;
    AttentionView* attention_;
    NeuronView* neurons_;
    LogitLensView* lens_;
    FamilyView* family_;
    CompareView* compare_;
    PatchingView* patching_;
    AttributionView* attribution_;
    GenerateView* generate_;
    FlowView* flow_;
    HeadsView* heads_;
    TextView* text_;
    FeaturesView* features_;
    CircuitView* circuit_;
    RoutingView* routing_;
    InterventionPanel* interventions_;
    QDockWidget* interventionsDock_ = nullptr;
    QWidget* messageBar_;
    QLabel* messageLabel_;
    QLabel* nonFiniteBanner_;
    /// After a change of pins, interventions or dictionaries: one undo step from the last recorded state to now
    /// (nothing while restoring or loading).
    void recordEdits();
    QUndoStack* undo_ = nullptr;
    SessionEdits recordedEdits_;
    bool restoringEdits_ = false;
    /// Shows the demo's caption while it is wanted (the demo open, never dismissed) and the Attention view is shown.
    void updateDemoCaption();
    bool demoCaptionWanted_ = false;
    /// The demo's first-run caption: what the stripe is and where to click next (until "Got it").
    QFrame* demoCaption_;
    QFrame* staleBar_;        ///< "the views show the last trace, run without ...", with Run
    QLabel* staleLabel_;
    QPushButton* staleRun_;
    QTimer* rerunTimer_;      ///< a quick model's re-run after the interventions changed
    qint64 lastTraceMs_ = -1;  ///< how long the last trace took (-1: none on this model)
    qint64 quickRerunMs_ = 1000;
    QLabel* modelLabel_;

    QMenu* recentMenu_;
    QMenu* viewMenu_;
    QAction* openAct_;
    QAction* openTraceAct_;
    QAction* openGraphAct_;
    QAction* saveGraphAct_;
    QAction* openDictionaryAct_;
    QAction* openDashboardAct_;
    QAction* makeDashboardAct_;
    QAction* exportTraceAct_;
    QAction* exportDictionaryValuesAct_;  ///< Export ▸ Trace includes the attached dictionaries' values
    QAction* reloadAct_;
    QAction* quitAct_;
    QAction* runAct_;
    QAction* cancelAct_;
    QAction* exportPlotAct_;
    QAction* exportValueAct_;
    QAction* preferencesAct_;
    QAction* aboutAct_;
    QAction* docsAct_;
    QAction* aboutQtAct_;
    QAction* clearRecentAct_;
    QList<QAction*> viewActs_;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::ComputedCircuitPtr)
