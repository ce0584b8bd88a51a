// SPDX-License-Identifier: MIT
// The window, driven the way a user drives it (offscreen): a trace from the window on the real stories260K
// checkpoints gives plots whose data equal the engine's own values; hovering and clicking every part of the block
// diagram of every family reports the right standard names and pins cards; the tables and the diagram select each
// other; Cancel stops a running trace within a block; every export reads back to the same values; a broken
// checkpoint folder shows an error and leaves the window usable; settings survive a restart; the command line
// rejects bad combinations and writes a screenshot.
#include "app/defaultmodel.h"
#include "app/guardedapplication.h"
#include "app/mainwindow.h"
#include "app/viewregistry.h"
#include "core/model/block.h"
#include "core/analysis/analysis.h"
#include "core/model/error.h"
#include "core/run/openblas.h"
#include "core/model/family.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"
#include "core/io/tracefile.h"
#include "widgets/views/attentionview.h"
#include "widgets/plots/headgridplot.h"
#include "widgets/plots/plotexport.h"
#include "core/pages/family_page.h"
#include "core/run/edit.h"
#include "core/run/patching.h"
#include "widgets/views/compareview.h"
#include "widgets/views/numberformat.h"
#include "widgets/views/plaintext.h"
#include "widgets/panels/diagrampanel.h"
#include "widgets/panels/interventionpanel.h"
#include "widgets/views/attributionview.h"
#include "widgets/views/flowview.h"
#include "widgets/views/circuitview.h"
#include "widgets/views/routingview.h"
#include "core/analysis/routing.h"
#include "syntheticgraph.h"
#include "core/analysis/circuitprune.h"
#include "core/io/graphjson.h"
#include "core/io/jsonfile.h"
#include "widgets/views/headsview.h"
#include "widgets/views/headoverview.h"
#include "widgets/views/textview.h"
#include "widgets/views/generateview.h"
#include "widgets/views/patchingview.h"
#include "widgets/views/familyview.h"
#include "widgets/views/featuresview.h"
#include "core/analysis/featureeffects.h"
#include "core/io/dictionary.h"
#include "core/run/dashboard.h"
#include "core/run/features.h"
#include "widgets/views/logitlensview.h"
#include "widgets/views/neuronview.h"
#include "widgets/panels/palette.h"
#include "widgets/panels/pinnedcards.h"
#include "widgets/panels/printoutmodel.h"
#include "widgets/panels/supporttablemodel.h"
#include "widgets/panels/tracepanel.h"
#include "widgets/views/valueplotview.h"

#include "checkpointcopy.h"

#include <nlohmann/json.hpp>

#include <torch/types.h>

#include <QClipboard>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QCheckBox>
#include <QDialog>
#include <QDoubleSpinBox>
#include <QToolButton>
#include <QWindow>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListView>
#include <QProcess>
#include <QProgressBar>
#include <QTextDocument>
#include <QToolTip>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSet>
#include <QSettings>
#include <QStatusBar>
#include <QContextMenuEvent>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QUndoStack>
#include <QUrl>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QTimer>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTabWidget>
#include <QTableView>
#include <QHeaderView>
#include <QScrollBar>
#include <QStyle>
#include <QTreeWidget>
#include <QTemporaryDir>
#include <random>
#include <set>
#include <QTextBrowser>
#include <QComboBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QGuiApplication>
#include <QCryptographicHash>
#include <QtTest>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>

using namespace nnscope;
using namespace torch::indexing;

namespace {

const QString kShared = QStringLiteral(NNSCOPE_SHARED_MODELS_DIR);
const QString kFixtures = QStringLiteral(NNSCOPE_FIXTURE_MODELS_DIR);
const QString kBinary = QStringLiteral(NNSCOPE_BINARY);

QString modelDir(const QString& name) { return name.startsWith("tiny-") ? kFixtures + "/" + name : kShared + "/" + name; }

/// A window that opens `dir` (computing in `dtype`: auto, float32 or bfloat16; "" the saved option) and waits for it
/// (nullptr and a failure when it does not open).
std::unique_ptr<MainWindow> openWindow(const QString& dir, const QString& dtype = {}) {
    StartOptions options;
    options.openDefault = false;
    options.dtype = dtype;
    auto w = std::make_unique<MainWindow>(options);
    // No trace runs by itself after an intervention is added (the window does it when the last trace took under a
    // second): the tests that edit the list run the trace themselves, when they mean to; staleInterventionsBar tests it.
    w->setQuickRerunMs(0);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get())) return nullptr;
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(dir);
    if (!opened.wait(60000)) {
        qWarning() << "could not open" << dir << ":" << w->errorText();
        return nullptr;
    }
    return w;
}

/// Runs the trace of `prompts` from the trace panel (its Run button) and waits for the snapshot.
/// Waits for the trace the window starts by itself (the demo's own prompt on a first launch), so that the next Run is
/// not swallowed by it. True when no trace is running any more.
bool startTraceDone(MainWindow& w) {
    if (!w.tracePanel()->isRunning()) return true;
    QSignalSpy done(&w, &MainWindow::traceEnded);
    return done.wait(60000);
}

/// Waits for the logit lens the shown view asked for (the window computes it in its worker once the view is shown).
/// True when no lens job is running any more.
bool lensDone(MainWindow& w) {
    if (!w.lensRunning()) return true;
    QSignalSpy ended(&w, &MainWindow::lensEnded);
    return ended.wait(60000) && !w.lensRunning();
}

/// Waits for everything the shown views asked the worker to compute (the logit lens, the Flow graph, the attribution,
/// the head scores: each is computed in the worker once its view is shown or its settings change). True when nothing
/// is left under way.
bool viewJobsDone(MainWindow& w) {
    QSignalSpy done(&w, &MainWindow::viewJobsDone);
    while (w.viewJobsRunning())
        if (!done.wait(60000)) return false;
    return true;
}

bool runFromPanel(MainWindow& w, const QStringList& prompts) {
    w.tracePanel()->setPrompts(prompts);
    QSignalSpy done(&w, &MainWindow::traceEnded);
    QTest::mouseClick(w.tracePanel()->runButton(), Qt::LeftButton);
    return done.wait(60000) && w.snapshot() != nullptr;
}

/// The engine's own trace of the same prompts, on a separately loaded model.
struct Reference {
    ModelPtr model;
    TraceResult result;
};
Reference engineTrace(const QString& dir, const QStringList& prompts) {
    Reference r;
    r.model = Model::load(dir.toStdString());
    std::vector<std::string> ps;
    for (const QString& p : prompts) ps.push_back(p.toStdString());
    TraceOptions options;
    options.save = viewValueKeys(*r.model);
    r.result = trace(*r.model, encodeBatch(*r.model, ps), options);
    return r;
}

/// Largest |a - b| over the matrix a heatmap draws (its MatrixModel) and a [rows, columns] tensor.
double mapDifference(const HeatmapPlot* plot, const torch::Tensor& expected) {
    const MatrixModel* m = plot->model();
    const auto e = expected.to(torch::kFloat64).contiguous();
    if (!m || m->rowCount() != e.size(0) || m->columnCount() != e.size(1)) return std::numeric_limits<double>::infinity();
    double worst = 0;
    const int rows = static_cast<int>(e.size(0)), cols = static_cast<int>(e.size(1));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) worst = std::max(worst, std::fabs(m->value(r, c) - e[r][c].item<double>()));
    return worst;
}

/// Largest |a - b| over the cells a matrix image draws and a [rows, columns] tensor: the head grid's small maps.
double mapDifference(const MatrixImage* map, const torch::Tensor& expected) {
    const auto e = expected.to(torch::kFloat64).contiguous();
    if (map->rows() != e.size(0) || map->columns() != e.size(1)) return std::numeric_limits<double>::infinity();
    double worst = 0;
    const int rows = static_cast<int>(e.size(0)), cols = static_cast<int>(e.size(1));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) worst = std::max(worst, std::fabs(map->cell(r, c) - e[r][c].item<double>()));
    return worst;
}

/// The standard name each part of the diagram must report (native values: the module path below the host).
const std::map<QString, QString>& expectedNames() {
    static const std::map<QString, QString> names = {
        {"embed_tokens", "token_embeddings"}, {"norm", "final_norm_output"}, {"lm_head", "lm_head_output"},
        {"logits", "logits"}, {"layer_input", "layer_input"}, {"input_layernorm", "attention_norm_output"},
        {"rotary_q", "attention_queries"}, {"rotary_k", "attention_keys"}, {"values", "attention_values"},
        {"scores", "attention_scores"}, {"softmax", "attention_probabilities"}, {"mix", "attention_head_outputs"},
        {"premix", "attention_premix"}, {"o_proj", "attention_output"}, {"layer_mid", "layer_mid"},
        {"post_attention_layernorm", "mlp_norm_output"}, {"mlp_input", "mlp_input"}, {"act_fn", "mlp_activation"},
        {"mlp_neurons", "mlp_neurons"}, {"down_proj", "mlp_output"}, {"layer_output", "layer_output"},
        {"router", "router_logits"}, {"experts", "expert_outputs"}, {"routed_output", "mlp_output"},
        {"shared_expert", "shared_expert_output"},
        {"q_a_layernorm", "q_latent"}, {"kv_a_layernorm", "kv_latent"}, {"query_rope", "query_rope"}, {"key_rope", "key_rope"},
    };
    return names;
}

QScrollArea* scrollAreaOf(QWidget* w) {
    for (QWidget* p = w->parentWidget(); p; p = p->parentWidget())
        if (auto* s = qobject_cast<QScrollArea*>(p)) return s;
    return nullptr;
}

/// The demo's patching question: which block and position carry "red" (clean) against "big" (corrupted) into the
/// copied answer, metric logit("red") - logit("big").
PatchRequest demoPatchRequest() {
    PatchRequest r;
    r.clean = "tom saw a red ball . tom saw a";
    r.corrupted = "tom saw a big dog . tom saw a";
    r.answer = "red";
    r.wrong = "big";
    return r;
}

/// The engine's options for demoPatchRequest's metric on `m`.
PatchingOptions demoPatchOptions(const Model& m) {
    PatchingOptions o;
    o.metric.answer = parseTokenArgument(m, "red", "answer");
    o.metric.wrong = parseTokenArgument(m, "big", "wrong");
    return o;
}

/// Presses the Patching view's Run and waits for the run to end; whether it gave a grid.
bool patchFromView(MainWindow& w) {
    QSignalSpy ended(&w, &MainWindow::patchEnded);
    QTest::mouseClick(w.patchingView()->runButton(), Qt::LeftButton);
    return ended.wait(60000) && w.patchingView()->result();
}

/// Moves the mouse onto part `id` of the diagram (scrolling it into view first) and returns its centre.
QPoint hoverPart(BlockDiagram* d, const QString& id) {
    QCoreApplication::processEvents();  // pending layouts first: the scroll range depends on them
    const QRect r = d->partRect(id);
    if (QScrollArea* s = scrollAreaOf(d)) s->ensureVisible(r.center().x(), r.center().y(), 10, r.height());
    QCoreApplication::processEvents();
    QTest::mouseMove(d, QPoint(10, 2));  // leave any previous part
    QTest::mouseMove(d, r.center());
    return r.center();
}

/// Opens `view`'s right-click menu at its centre and triggers the entry whose text is `label`; returns whether it was
/// there. (The menu is modal: a timer picks the entry once it is open.)
bool chooseFromContextMenu(QWidget* view, const QString& label) {
    bool found = false;
    QTimer::singleShot(200, view, [&] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        if (!menu) return;
        for (QAction* a : menu->actions())
            if (a->text() == label) {
                found = true;
                menu->close();
                a->trigger();
                return;
            }
        menu->close();
    });
    const QPoint centre = view->rect().center();
    QContextMenuEvent event(QContextMenuEvent::Mouse, centre, view->mapToGlobal(centre));
    QApplication::sendEvent(view, &event);
    return found;
}

/// The engine's own trace of `prompts` with `interventions` (addIntervention syntax; none: unedited).
TraceResult engineEdited(const Model& model, const QStringList& prompts, const QStringList& interventions) {
    std::vector<std::string> ps;
    for (const QString& p : prompts) ps.push_back(p.toStdString());
    TraceOptions options;
    options.save = viewValueKeys(model);
    if (!interventions.isEmpty()) {
        auto list = std::make_shared<EditList>();
        for (const QString& t : interventions) addIntervention(*list, model, t.toStdString());
        options.intervention = list;
    }
    return trace(model, encodeBatch(model, ps), options);
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

/// The Circuit view's card with a feature dashboard: the transcoders in `transcodersDir` are copied into a temporary
/// folder, `dictionaryIn(copy)` gives the dictionary of `chosen`'s layer there, a dashboard of it is made from the
/// window's traced prompt (named `dashboardName`, beside its weights), and the graph computed again from the copy
/// shows, at thresholds `nodes` / `edges`, the feature's top contexts in its card: the first at least as strong as the
/// feature's activation on this prompt. Fails the running test where it does not.
void checkCardShowsDashboard(MainWindow& w, const QString& transcodersDir, const GraphNode& chosen,
                             const std::function<std::shared_ptr<const Dictionary>(const std::string&)>& dictionaryIn,
                             const QString& dashboardName, double nodes, double edges) {
    CircuitView* cv = w.circuitView();
    QTemporaryDir copy;
    QVERIFY(copy.isValid());
    for (const QFileInfo& f : QDir(transcodersDir).entryInfoList(QDir::Files)) QVERIFY(QFile::copy(f.filePath(), copy.filePath(f.fileName())));
    const std::shared_ptr<const Dictionary> dictionary = dictionaryIn(copy.path().toStdString());
    QFile text(copy.filePath("text.txt"));
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write((w.snapshot()->result.batch.prompts[0] + "\n").c_str());
    text.close();
    DashboardOptions dashOptions;
    dashOptions.dataset = text.fileName().toStdString();
    dashOptions.out = defaultDashboardPath(dictionary->dir);
    QCOMPARE(QFileInfo(QString::fromStdString(dashOptions.out)).fileName(), dashboardName);
    QVERIFY(makeDashboard(*w.model(), AttachedDictionary::attach(*w.model(), dictionary), dashOptions).complete);
    const std::shared_ptr<const Dashboard> dash = findDashboard(*dictionary);
    QVERIFY(dash && dash->filledSlots(chosen.index) >= 1);
    QVERIFY(dash->topActivation[chosen.index][0].item<double>() >= chosen.activation - 1e-3);
    QSignalSpy again(w.circuitJob(), &JobWatcher::ended);
    QVERIFY2(w.computeCircuit(copy.path()).isEmpty(), qPrintable(cv->computeMessage()->text()));
    QVERIFY(again.wait(120000));
    cv->setThresholds(nodes, edges);
    cv->selectNode(chosen.nodeId());
    const QString withExamples = cv->card()->toPlainText();
    QVERIFY2(withExamples.contains("Top contexts"), qPrintable(withExamples));
    QVERIFY2(withExamples.contains(QString::number(dash->topActivation[chosen.index][0].item<double>(), 'f', 2) + " · "), qPrintable(withExamples));
}

}  // namespace

class TestGui : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void cleanup();
    void traceMatchesEngine_data();
    void traceMatchesEngine();
    void diagramHoverAndPin_data();
    void diagramHoverAndPin();
    void tablesAndDiagramSelectEachOther();
    void cancelStopsTrace();
    void exportsReadBack();
    void brokenCheckpointShowsError_data();
    void brokenCheckpointShowsError();
    void settingsPersist();
    void deviceChoice();
    void commandLine_data();
    void commandLine();
    void qtOptionsAndHelpAll();
    void screenshot();
    void demoModelByDefault();
    void startOptionsRefused();
    void familyView();
    void interventionsFromViews();
    void steeringFromPrompts();
    void patchingView();
    void patchingWithInterventions();
    void patchingEveryHead();
    void patchingChosenPositions();
    void transcoderEditInWindow();
    void attributionView();
    void generateView();
    void flowView();
    void circuitView();
    void circuitViewMillionEdges();
    void circuitComputedInWindow();
    void circuitCrossLayerCard();
    void circuitAsksForFloat32();
    void flowInWorker();
    void headsView();
    void attentionAtAnyLength_data();
    void attentionAtAnyLength();
    void attentionLogScale();
    void attentionShowsTheSink();
    void contextMenuFromPlots();
    void headOverview();
    void textView();
    void widgetViewsExport();
    void pinnedCardShowsTensor();
    void neuronValuesByLayout();
    void openTraceFile();
    void logitLensOnDemand();
    void logitLensInView();
    void darkPalette();
    void featuresView();
    void featuresWrongWidth();
    void featuresTranscoderSet();
    void featuresRemembered();
    void featuresExportedAndReopened();
    void featuresDashboard();
    void exceptionsNeverLeaveASlot();
    void paddedVocabularyInWindow();
    void nonFiniteValuesShown();
    void longPromptTraceFileIsElided();
    void probabilitiesKeepSignificantDigits();
    void helpOpensDocumentation();
    void tracePanelClearsOnAnotherModel();
    void dropOpensFiles();
    void interventionsAskOnAnotherModel();
    void everyViewInSightAt1280();
    void demoCaptionOnFirstRun();
    void undoRedoSessionEdits();
    void gridsFitTheirViews();
    void cellTextElidedToItsCell();
    void headGridFitsAndFollowsModels();
    void flowGraphFits();
    void attributionShowsEveryHead();
    void staleInterventionsBar();
    void exportLabelsEveryToken();
    void headsFitTheirRoom();
    void viewChoicesRemembered();
    void symmetricLogScale();
    void routingView();
    void tokensShownAsText();
    void prunedGraphFileHasNoScores();

private:
    QTemporaryDir tmp_;
};

void TestGui::initTestCase() {
    QVERIFY(tmp_.isValid());
    // Every test writes its settings to a throw-away folder, never to the user's.
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, tmp_.filePath("settings"));
    QCoreApplication::setOrganizationName("nnscope-test");
    QCoreApplication::setApplicationName("test_gui");
    configureThreads(0);
}

void TestGui::cleanup() {
    // A window saves the compute dtype it was started with (openWindow's `dtype`, as the command line's --dtype): the
    // next test function starts at auto again.
    QSettings().remove("options/computeDtype");
}

// ---- plots equal the engine's values ------------------------------------------------------------------------

void TestGui::traceMatchesEngine_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QStringList>("prompts");
    QTest::newRow("llama one prompt") << "stories260K-llama" << QStringList{"Once upon a time, there was a little girl named Lily."};
    QTest::newRow("llama padded batch") << "stories260K-llama" << QStringList{"Once upon a time", "Tom and Lily went to the park to play."};
    QTest::newRow("ernie4_5 padded batch") << "stories260K-ernie4_5" << QStringList{"Lily saw a big dog.", "One day"};
}

void TestGui::traceMatchesEngine() {
    QFETCH(QString, model);
    QFETCH(QStringList, prompts);
    auto w = openWindow(modelDir(model));
    QVERIFY(w);
    QVERIFY2(runFromPanel(*w, prompts), qPrintable(w->errorText()));
    const Reference ref = engineTrace(modelDir(model), prompts);
    const int layers = static_cast<int>(ref.model->config().numLayers), heads = static_cast<int>(ref.model->config().numHeads);
    const Tokenizer* tok = ref.model->tokenizer();

    for (int row = 0; row < prompts.size(); ++row) {
        const PromptSpan span = promptSpan(ref.result.batch, row);
        QStringList labels;
        for (int64_t id : ref.result.batch.ids[static_cast<size_t>(row)]) labels << QString::fromStdString(tok->tokenLabel(id));

        // attention: every block and head, one at a time, then the grid of a block
        AttentionView* av = w->attentionView();
        QVERIFY(w->showView("attention"));
        av->setPrompt(row);
        for (int b = 0; b < layers; ++b) {
            av->setBlock(b);
            const torch::Tensor probs = ref.result.value({Value::AttentionProbabilities, b})
                                            .index({row, Slice(), Slice(span.start, None), Slice(span.start, None)});
            for (int h = 0; h < heads; ++h) {
                av->setHead(h);
                QCOMPARE(av->matrixModel()->columnCount(), static_cast<int>(span.length));
                QVERIFY2(mapDifference(av->heatmap(), probs[h]) <= 1e-6, qPrintable(QString("block %1 head %2 prompt %3").arg(b).arg(h).arg(row)));
            }
            av->setHead(-1);
            QCOMPARE(av->grid()->headCount(), heads);
            for (int h = 0; h < heads; ++h) QVERIFY(mapDifference(av->grid()->map(h), probs[h]) <= 1e-6);
        }
        // the axes carry the tokens, and hovering a cell names both tokens and the value
        av->setBlock(layers - 1);
        av->setHead(1);
        QCPAxisTickerText* ticks = dynamic_cast<QCPAxisTickerText*>(av->heatmap()->plot()->yAxis->ticker().data());
        QVERIFY(ticks);
        for (int p = 0; p < labels.size(); ++p) QCOMPARE(ticks->ticks().value(p), labels[p]);
        const int q = static_cast<int>(span.length) - 1, k = 0;
        QTest::mouseMove(av->heatmap()->plot(), av->heatmap()->cellCenter(q, k));
        const double v = ref.result.value({Value::AttentionProbabilities, layers - 1})[row][1][span.start + q][span.start + k].item<double>();
        QVERIFY2(av->heatmap()->hoverText().contains(labels[q]) && av->heatmap()->hoverText().contains(labels[k]) &&
                     av->heatmap()->hoverText().contains(QString::number(v, 'g', 6)),
                 qPrintable(av->heatmap()->hoverText()));

        // neurons: the token x neuron map, the top-k of a token, one neuron across the prompt
        NeuronView* nv = w->neuronView();
        QCOMPARE(nv->prompt(), row);  // the prompt chosen in one view is chosen in all
        QCOMPARE(w->lensView()->prompt(), row);
        QVERIFY(w->showView("neurons"));
        const int block = layers / 2;
        nv->setBlock(block);
        nv->setTopK(7);
        const torch::Tensor acts = ref.result.value({Value::MlpNeurons, block}).index({row, Slice(span.start, None)}).to(torch::kFloat32);
        QVERIFY(mapDifference(nv->heatmap(), acts) <= 1e-6);
        const int token = static_cast<int>(span.length) - 1;
        nv->setToken(token);
        const auto [topV, topI] = acts[token].topk(7);
        QCOMPARE(nv->topNeuronIds().size(), 7);
        for (int j = 0; j < 7; ++j) {
            QCOMPARE(nv->topNeuronIds()[j], topI[j].item<int64_t>());
            QVERIFY(std::fabs(nv->topBars()->data()->at(j)->value - topV[j].item<double>()) <= 1e-6);
        }
        nv->setNeuron(topI[0].item<int>());
        for (int p = 0; p < span.length; ++p)
            QVERIFY(std::fabs(nv->neuronBars()->data()->at(p)->value - acts[p][topI[0].item<int64_t>()].item<double>()) <= 1e-6);

        // logit lens: top probability and token per block and position, the target across blocks
        LogitLensView* lv = w->lensView();
        QVERIFY(w->showView("lens"));
        QVERIFY(lensDone(*w));
        QVERIFY(lv->hasLens());
        const int64_t target = ref.result.nextTokenProbs[row].argmax().item<int64_t>();
        QVERIFY(lv->setTarget("#" + QString::number(target)));
        QCOMPARE(lv->targetId(), target);
        for (int b = 0; b < layers; ++b) {
            const torch::Tensor h = ref.result.value({Value::LayerOutput, b}).index({row, Slice(span.start, None)});
            const torch::Tensor p = torch::softmax(ref.model->projectOnVocab(h).to(torch::kFloat32), -1);
            const auto [best, bestId] = p.max(-1);
            for (int pos = 0; pos < span.length; ++pos) {
                QVERIFY(std::fabs(lv->heatmap()->model()->value(b, pos) - best[pos].item<double>()) <= 1e-5);
                QCOMPARE(lv->heatmap()->model()->data(lv->heatmap()->model()->index(b, pos), MatrixModel::CellTextRole).toString(),
                         QString::fromStdString(tok->tokenLabel(bestId[pos].item<int64_t>())));
            }
            const int pos = lv->position();
            QVERIFY(std::fabs(lv->targetGraph()->data()->at(b)->value - p[pos][lv->targetId()].item<double>()) <= 1e-5);
        }
        // the lens at the last block is the model's own next-token distribution
        const double lastTop = lv->heatmap()->model()->value(layers - 1, static_cast<int>(span.length - 1));
        QVERIFY(std::fabs(lastTop - ref.result.nextTokenProbs[row].max().item<double>()) <= 1e-5);
    }
}

// ---- the diagram: hover names, pins, every family ---------------------------------------------------------------

void TestGui::diagramHoverAndPin_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QStringList>("present");   // parts this family must draw
    QTest::addColumn<QStringList>("absent");    // parts it must not draw
    QTest::addColumn<QStringList>("native");    // part=native name it reports
    QTest::addColumn<QStringList>("titles");    // part=label drawn (the family's module names and aliases)
    QTest::newRow("llama") << "tiny-llama" << QStringList{"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"}
                           << QStringList{"qkv_proj", "q_norm", "k_norm", "dropout"}
                           << QStringList{"q_proj=q_proj.output", "k_proj=k_proj.output", "v_proj=v_proj.output",
                                          "gate_proj=gate_proj.output", "up_proj=up_proj.output"}
                           << QStringList{"o_proj=o_proj", "input_layernorm=input_layernorm", "rotary_q=rotary"};
    QTest::newRow("arcee") << "tiny-arcee" << QStringList{"q_proj", "up_proj"} << QStringList{"gate_proj", "qkv_proj", "q_norm"}
                           << QStringList{"up_proj=up_proj.output"} << QStringList{"act_fn=act_fn"};
    QTest::newRow("apertus") << "tiny-apertus" << QStringList{"q_proj", "q_norm", "k_norm", "up_proj"}
                             << QStringList{"gate_proj", "qkv_proj", "dropout"}
                             << QStringList{"q_norm=q_norm.output", "k_norm=k_norm.output"}
                             << QStringList{"input_layernorm=input_layernorm/attention_layernorm",
                                            "post_attention_layernorm=post_attention_layernorm/feedforward_layernorm"};
    QTest::newRow("ernie4_5") << "tiny-ernie4_5" << QStringList{"q_proj", "gate_proj"} << QStringList{"qkv_proj", "q_norm"}
                              << QStringList{"gate_proj=gate_proj.output"} << QStringList{"o_proj=o_proj"};
    QTest::newRow("persimmon") << "tiny-persimmon" << QStringList{"qkv_proj", "q_norm", "k_norm", "up_proj", "dropout"}
                               << QStringList{"q_proj", "k_proj", "v_proj", "gate_proj"}
                               << QStringList{"qkv_proj=query_key_value.output", "q_norm=q_layernorm.output",
                                              "k_norm=k_layernorm.output", "up_proj=dense_h_to_4h.output"}
                               << QStringList{"o_proj=o_proj/dense", "down_proj=down_proj/dense_4h_to_h", "act_fn=act_fn/act",
                                              "qkv_proj=query_key_value"};
    QTest::newRow("stories260K-llama") << "stories260K-llama" << QStringList{"gate_proj"} << QStringList{"qkv_proj"}
                                       << QStringList{} << QStringList{};
    const QStringList sep{"q_proj", "k_proj", "v_proj"};
    QTest::newRow("qwen2") << "tiny-qwen2" << sep + QStringList{"gate_proj", "up_proj"} << QStringList{"qkv_proj", "q_norm"}
                           << QStringList{} << QStringList{"o_proj=o_proj"};
    QTest::newRow("qwen3") << "tiny-qwen3" << sep + QStringList{"q_norm", "k_norm"} << QStringList{"qkv_proj"} << QStringList{}
                           << QStringList{};
    QTest::newRow("mistral") << "tiny-mistral" << sep << QStringList{"qkv_proj", "q_norm"} << QStringList{} << QStringList{};
    QTest::newRow("gemma2") << "tiny-gemma2" << QStringList{"attention_output_norm", "mlp_output_norm", "gate_proj"}
                            << QStringList{"qkv_proj", "q_norm"} << QStringList{}
                            << QStringList{"post_attention_layernorm=pre_feedforward_layernorm",
                                           "attention_output_norm=post_attention_layernorm",
                                           "mlp_output_norm=post_feedforward_layernorm"};
    QTest::newRow("gemma3_text") << "tiny-gemma3" << QStringList{"q_norm", "k_norm", "attention_output_norm", "mlp_output_norm"}
                                 << QStringList{"qkv_proj"} << QStringList{} << QStringList{};
    QTest::newRow("olmo2") << "tiny-olmo2" << QStringList{"q_norm", "k_norm", "attention_output_norm", "mlp_output_norm"}
                           << QStringList{"qkv_proj"} << QStringList{}
                           << QStringList{"input_layernorm=no pre-norm", "mlp_output_norm=post_feedforward_layernorm"};
    QTest::newRow("smollm3") << "tiny-smollm3" << sep + QStringList{"gate_proj", "up_proj"} << QStringList{"qkv_proj", "q_norm"}
                             << QStringList{} << QStringList{};
    QTest::newRow("olmo3") << "tiny-olmo3" << QStringList{"q_norm", "k_norm", "attention_output_norm", "mlp_output_norm"}
                           << QStringList{"qkv_proj"} << QStringList{}
                           << QStringList{"input_layernorm=no pre-norm", "mlp_output_norm=post_feedforward_layernorm"};
    QTest::newRow("gemma3") << "tiny-gemma3-mm" << QStringList{"q_norm", "k_norm", "attention_output_norm", "mlp_output_norm"}
                            << QStringList{"qkv_proj"} << QStringList{} << QStringList{};
    QTest::newRow("gpt_neox") << "tiny-gpt-neox" << QStringList{"qkv_proj", "up_proj"} << QStringList{"q_proj", "gate_proj", "q_norm"}
                              << QStringList{"qkv_proj=query_key_value.output", "up_proj=dense_h_to_4h.output"}
                              << QStringList{"o_proj=o_proj/dense", "embed_tokens=embed_tokens/embed_in"};
    QTest::newRow("gpt2") << "tiny-gpt2" << QStringList{"qkv_proj", "up_proj"} << QStringList{"q_proj", "gate_proj", "q_norm"}
                          << QStringList{"qkv_proj=c_attn.output", "up_proj=c_fc.output"}
                          << QStringList{"o_proj=o_proj/c_proj", "input_layernorm=input_layernorm/ln_1", "rotary_q=split heads"};
    QTest::newRow("phi3") << "tiny-phi3" << QStringList{"qkv_proj", "gate_up_proj"} << QStringList{"q_proj", "gate_proj", "up_proj", "q_norm"}
                          << QStringList{"qkv_proj=qkv_proj.output"} << QStringList{};
    // a mixture of experts: the router and the experts in place of the gated MLP
    for (const char* moe : {"qwen3_moe", "qwen2_moe", "mixtral", "olmoe"}) {
        const std::string fixture = std::string("tiny-") + (std::string(moe) == "qwen3_moe" ? "qwen3-moe" : std::string(moe) == "qwen2_moe" ? "qwen2-moe" : moe);
        QTest::newRow(moe) << QString::fromStdString(fixture) << QStringList{"router", "experts", "routed_output"}
                           << QStringList{"gate_proj", "up_proj", "mlp_neurons"} << QStringList{} << QStringList{};
    }
    // DeepSeek-style mixtures with shared experts (no gate); DeepSeek's multi-head latent attention in place of q/k/v
    QTest::newRow("glm4_moe") << "tiny-glm4-moe" << QStringList{"q_proj", "q_norm", "k_norm", "router", "experts", "shared_expert"}
                              << QStringList{"shared_expert_gate", "kv_b_proj", "qkv_proj"} << QStringList{}
                              << QStringList{"shared_expert=shared_expert/shared_experts"};
    for (const char* mla : {"deepseek_v3", "deepseek_v2"}) {
        const QString fixture = QString("tiny-") + QString(mla).replace("_", "-");
        QTest::newRow(mla) << fixture
                           << QStringList{"q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj",
                                          "key_rope", "query_rope", "router", "shared_expert"}
                           << QStringList{"q_proj", "k_proj", "v_proj", "qkv_proj", "shared_expert_gate"} << QStringList{}
                           << QStringList{"kv_b_proj=kv_b_proj"};
    }
    // gpt-oss: a biased router, experts stored stacked (gate and up interleaved), the attention's sinks on self_attn
    QTest::newRow("gpt_oss") << "tiny-gpt-oss" << QStringList{"q_proj", "o_proj", "router", "experts", "routed_output"}
                             << QStringList{"shared_expert", "kv_b_proj", "qkv_proj", "mlp_neurons"} << QStringList{} << QStringList{};
    // every family in the registry has a row (a family added later fails here until it gets one)
    for (const Family& f : families())
        QVERIFY2(QStringList({"llama", "arcee", "apertus", "ernie4_5", "persimmon", "qwen2", "qwen3", "mistral", "gemma2",
                              "gemma3_text", "olmo2", "gpt_neox", "gpt2", "phi3", "qwen3_moe", "qwen2_moe", "mixtral", "olmoe",
                              "smollm3", "olmo3", "gemma3", "gpt_oss", "glm4_moe", "deepseek_v3", "deepseek_v2"})
                     .contains(QString::fromStdString(f.modelType)),
                 qPrintable("no diagram row for family " + QString::fromStdString(f.modelType)));
}

void TestGui::diagramHoverAndPin() {
    QFETCH(QString, model);
    QFETCH(QStringList, present);
    QFETCH(QStringList, absent);
    QFETCH(QStringList, native);
    QFETCH(QStringList, titles);
    auto w = openWindow(modelDir(model));
    QVERIFY(w);
    // Gemma 3's multimodal checkpoint: the status bar says the vision tower is skipped (Model::notes)
    if (model == "tiny-gemma3-mm")
        QVERIFY2(w->statusBar()->currentMessage().contains("vision tower skipped: text prompts only"),
                 qPrintable(w->statusBar()->currentMessage()));
    BlockDiagram* d = w->diagramPanel()->diagram();
    const DiagramLayout& layout = d->diagram();
    for (const QString& id : present) QVERIFY2(layout.part(id), qPrintable(model + " lacks " + id));
    for (const QString& id : absent) QVERIFY2(!layout.part(id), qPrintable(model + " draws " + id));
    for (const QString& pair : titles) QCOMPARE(layout.part(pair.section('=', 0, 0))->title, pair.section('=', 1));
    // The boxes are the block description's modules (core/model/block.h), no more and no fewer; the attention and MLP frames
    // stand for self_attn and mlp, and the attention dropout and GPT-2's wpe (named in embed_tokens' box) have none.
    std::set<int> tableModules = {static_cast<int>(Module::Layers)}, drawn;
    for (const BlockStep& step : forwardSteps(w->model()->family(), w->model()->config()))
        if (step.module && *step.module != Module::SelfAttn && *step.module != Module::Mlp &&
            *step.module != Module::AttentionDropout && *step.module != Module::PositionEmbeddings)
            tableModules.insert(static_cast<int>(*step.module));
    // a mixture of experts with dense blocks too (Qwen3-MoE's mlp_only_layers): the diagram draws the mixture's block
    if (tableModules.count(static_cast<int>(Module::Router)))
        for (Module m : {Module::GateProj, Module::UpProj, Module::ActFn, Module::DownProj}) tableModules.erase(static_cast<int>(m));
    for (const DiagramPart& part : layout.parts)
        if (part.module) drawn.insert(static_cast<int>(*part.module));
    QCOMPARE(drawn, tableModules);

    // Hover on the last block: every part reports its name and the path at that block.
    const int last = static_cast<int>(w->model()->config().numLayers) - 1;
    w->diagramPanel()->setBlock(last);
    QCOMPARE(d->block(), last);
    // native values report their module path below the host; the row overrides where the family renames a module
    std::map<QString, QString> nativeNames = {{"q_proj", "q_proj.output"}, {"k_proj", "k_proj.output"},
                                              {"v_proj", "v_proj.output"}, {"gate_proj", "gate_proj.output"},
                                              {"up_proj", "up_proj.output"}, {"q_norm", "q_norm.output"},
                                              {"k_norm", "k_norm.output"}};
    for (const QString& pair : native) nativeNames[pair.section('=', 0, 0)] = pair.section('=', 1);
    std::set<QString> standardShown;
    QSignalSpy hovered(d, &BlockDiagram::partHovered);
    int valueParts = 0;
    for (const DiagramPart& part : layout.parts) {
        hovered.clear();
        hoverPart(d, part.id);
        QCOMPARE(d->hoveredPart(), part.id);
        QCOMPARE(hovered.count(), 1);
        const QString html = hovered.at(0).at(1).toString();
        const PartInfo info = d->info(part.id);
        if (!part.value) {  // the layers strip box, Persimmon's dropout and the branch-output norms draw no value
            QVERIFY2(part.id == "layers" || part.id == "dropout" || part.id.endsWith("_output_norm") || part.id == "gate_up_proj" ||
                         part.id == "shared_expert_gate" || part.id == "q_a_proj" || part.id == "q_b_proj" ||
                         part.id == "kv_a_proj_with_mqa" || part.id == "kv_b_proj", qPrintable(part.id));
            QVERIFY(html.contains(info.name));
            continue;
        }
        ++valueParts;
        QString expected;
        if (expectedNames().count(part.id)) {
            expected = expectedNames().at(part.id);
            standardShown.insert(expected);
        } else {
            QVERIFY2(nativeNames.count(part.id), qPrintable("no expectation for " + part.id));
            expected = nativeNames.at(part.id);
        }
        QCOMPARE(info.name, expected);
        QVERIFY2(html.contains("<b>" + expected + "</b>"), qPrintable(html));
        // the path names the block shown (root values have none) and the layout and read-at place are nnterp's
        const QString prefix = part.perBlock ? QString("layers.%1.").arg(last) : QString();
        QVERIFY2(info.path.startsWith(prefix) && info.path.endsWith(expected), qPrintable(info.path));
        const ValueInfo& vi = valueInfo(*part.value);
        QCOMPARE(info.layout, QString::fromStdString(layoutString(vi)));
        QVERIFY(html.contains(info.layout.toHtmlEscaped()));
        QCOMPARE(info.readAt, QString::fromStdString(w->model()->family().readAt(*part.value)));
    }
    // every standard value with a place in the diagram is there exactly once
    const std::set<QString> all = {"token_embeddings", "final_norm_output", "lm_head_output", "logits", "layer_input",
                                   "attention_norm_output", "layer_mid", "mlp_norm_output", "mlp_input", "layer_output",
                                   "attention_queries", "attention_keys", "attention_values", "attention_scores",
                                   "attention_premix", "attention_output", "attention_probabilities",
                                   "attention_head_outputs", "mlp_activation", "mlp_neurons", "mlp_output"};
    std::set<QString> want = all;
    if (layout.part("router")) {  // a mixture of experts: the router and the experts in place of the dense MLP's interior
        want.erase("mlp_activation");
        want.erase("mlp_neurons");
        want.insert({"router_logits", "expert_outputs"});
        if (layout.part("shared_expert")) want.insert("shared_expert_output");
    }
    if (layout.part("kv_a_layernorm")) {  // multi-head latent attention: its latents and rotary parts
        want.insert({"kv_latent", "query_rope", "key_rope"});
        if (layout.part("q_a_layernorm")) want.insert("q_latent");
    }
    QCOMPARE(standardShown, want);

    // Clicking pins a card per part; several stay pinned; a second click pins nothing new.
    PinnedCardsPanel* pins = w->pinnedPanel();
    for (const DiagramPart& part : layout.parts) {
        const QPoint c = hoverPart(d, part.id);
        QTest::mouseClick(d, Qt::LeftButton, {}, c);
    }
    QCOMPARE(static_cast<int>(pins->cards().size()), valueParts);
    QTest::mouseClick(d, Qt::LeftButton, {}, hoverPart(d, "softmax"));
    QCOMPARE(static_cast<int>(pins->cards().size()), valueParts);
    ValueCard* card = pins->card({Value::AttentionProbabilities, last});
    QVERIFY(card);
    QCOMPARE(card->info().path, QString("layers.%1.self_attn.attention_probabilities").arg(last));
    QCOMPARE(d->highlightedPart(), QString("softmax"));
    QCOMPARE(w->views()->currentWidget(), static_cast<QWidget*>(w->attentionView()));  // the view that draws it follows

    // A trace reads the pinned values; a card's Plot opens the value with the engine's numbers.
    if (!w->model()->tokenizer()) return;
    QVERIFY2(runFromPanel(*w, {"Once upon a time"}), qPrintable(w->errorText()));
    ValueCard* out = pins->card({Value::MlpOutput, last});
    QVERIFY(out && out->plotButton()->isEnabled());
    QVERIFY2(out->statusText().contains("traced"), qPrintable(out->statusText()));
    QTest::mouseClick(out->plotButton(), Qt::LeftButton);
    auto* plot = qobject_cast<ValuePlotView*>(w->views()->currentWidget());
    QVERIFY(plot);
    const torch::Tensor expected = w->snapshot()->result.value({Value::MlpOutput, last})[0].to(torch::kFloat32);
    QVERIFY(mapDifference(plot->heatmap(), expected) <= 1e-6);
    QTest::mouseClick(out->unpinButton(), Qt::LeftButton);
    QCOMPARE(static_cast<int>(pins->cards().size()), valueParts - 1);
}

void TestGui::tablesAndDiagramSelectEachOther() {
    auto w = openWindow(modelDir("tiny-persimmon"));
    QVERIFY(w);
    BlockDiagram* d = w->diagramPanel()->diagram();
    SupportTableModel* support = w->supportModel();
    PrintoutModel* printout = w->printoutModel();
    // the support table lists every standard value under its host, as the seeds do
    QCOMPARE(support->rowCount(), 4 + static_cast<int>(standardValues().size()));
    QCOMPARE(support->data(support->index(0, 0), Qt::DisplayRole).toString(), QString("model PersimmonForCausalLM"));
    const int probsRow = support->rowOf(Value::AttentionProbabilities);
    QCOMPARE(support->data(support->index(probsRow, SupportTableModel::LayoutColumn), Qt::DisplayRole).toString(),
             QString("Pattern [batch num_heads query key]"));
    // any cell's tooltip holds the whole row (the dock is narrow: the description and read-at columns sit off-screen)
    const QString tip = support->data(support->index(probsRow, SupportTableModel::NameColumn), Qt::ToolTipRole).toString();
    for (int c : {int(SupportTableModel::LayoutColumn), int(SupportTableModel::WhatColumn)})
        QVERIFY2(tip.contains(support->data(support->index(probsRow, c), Qt::DisplayRole).toString()), qPrintable(tip));
    QVERIFY2(tip.contains("read at: " + support->data(support->index(probsRow, SupportTableModel::ReadAtColumn), Qt::DisplayRole).toString()),
             qPrintable(tip));
    QCOMPARE(support->data(support->index(probsRow, SupportTableModel::ReadAtColumn), Qt::ToolTipRole).toString(), tip);
    // table -> diagram
    w->supportView()->setCurrentIndex(support->index(probsRow, 0));
    QCOMPARE(d->highlightedPart(), QString("softmax"));
    // printout -> diagram, by value line and by native module line (with its alias)
    QCOMPARE(printout->lines().front(), QString("PersimmonForCausalLM("));
    const int oLine = printout->rowOf(Module::OProj);
    QVERIFY(oLine > 0);
    QVERIFY(printout->lines()[oLine].trimmed().startsWith("(o_proj/dense): Linear("));
    w->printoutView()->setCurrentIndex(printout->index(oLine));
    QCOMPARE(d->highlightedPart(), QString("o_proj"));
    w->printoutView()->setCurrentIndex(printout->index(printout->rowOf(Value::MlpNeurons)));
    QCOMPARE(d->highlightedPart(), QString("mlp_neurons"));
    QCOMPARE(w->supportView()->currentIndex().row(), support->rowOf(Value::MlpNeurons));
    // diagram -> both tables
    QTest::mouseClick(d, Qt::LeftButton, {}, hoverPart(d, "post_attention_layernorm"));
    QCOMPARE(w->supportView()->currentIndex().row(), support->rowOf(Value::MlpNormOutput));
    QCOMPARE(w->printoutView()->currentIndex().row(), printout->rowOf(Value::MlpNormOutput));
    QTest::mouseClick(d, Qt::LeftButton, {}, hoverPart(d, "qkv_proj"));  // a native module: its printout line
    QVERIFY(printout->lines()[w->printoutView()->currentIndex().row()].trimmed().startsWith("(query_key_value): Linear("));
}

// ---- Cancel -----------------------------------------------------------------------------------------------------

void TestGui::cancelStopsTrace() {
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    constexpr int kDelay = 400;  // ms per block: slow enough to press Cancel mid-trace on a 5-block model
    w->worker()->setBlockDelay(kDelay);
    w->tracePanel()->setPrompts({"Once upon a time"});
    QSignalSpy progress(w->traceJob(), &JobWatcher::progressed);
    QSignalSpy ended(w.get(), &MainWindow::traceEnded);
    QSignalSpy done(w.get(), &MainWindow::traceDone);
    QTest::mouseClick(w->tracePanel()->runButton(), Qt::LeftButton);
    QVERIFY(w->tracePanel()->isRunning());
    QVERIFY(!w->tracePanel()->runButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 2, 10000);  // block 1 is running: the window keeps handling events
    QVERIFY(w->tracePanel()->cancelButton()->isEnabled());
    QElapsedTimer timer;
    timer.start();
    QTest::mouseClick(w->tracePanel()->cancelButton(), Qt::LeftButton);
    QVERIFY(ended.wait(10000));
    QVERIFY2(timer.elapsed() < 2 * kDelay + 500, qPrintable(QString("Cancel took %1 ms").arg(timer.elapsed())));
    QCOMPARE(done.count(), 0);
    QVERIFY(!w->snapshot());
    const int total = static_cast<int>(w->model()->config().numLayers);
    QVERIFY(progress.last().at(0).toInt() < total);
    QVERIFY2(w->tracePanel()->statusText().startsWith("Cancelled after"), qPrintable(w->tracePanel()->statusText()));
    QVERIFY(w->tracePanel()->runButton()->isEnabled());
    // the window is usable: the next run completes
    w->worker()->setBlockDelay(0);
    QVERIFY(runFromPanel(*w, {"Once upon a time"}));
    QCOMPARE(w->tracePanel()->progressBar()->value(), total);
}

// ---- exports ----------------------------------------------------------------------------------------------------

void TestGui::exportsReadBack() {
    const QString dir = modelDir("stories260K-llama");
    auto w = openWindow(dir);
    QVERIFY(w);
    const QStringList prompts{"Once upon a time", "Lily and Tom"};
    QVERIFY(runFromPanel(*w, prompts));
    const SnapshotPtr s = w->snapshot();
    QVERIFY(w->showView("attention"));
    w->attentionView()->setBlock(2);
    w->attentionView()->setHead(3);
    const ValueKey key{Value::AttentionProbabilities, 2};
    const torch::Tensor value = s->result.value(key);
    const QString path = s->path(key);

    // .npy (+ .npy.json with the metadata)
    const QString npy = tmp_.filePath("probs.npy");
    QCOMPARE(w->exportValueTo(key, npy), QString());
    QVERIFY(torch::equal(readNpy(npy.toStdString()), value));
    QFile sidecar(npy + ".json");
    QVERIFY(sidecar.open(QIODevice::ReadOnly));
    const QJsonObject meta = QJsonDocument::fromJson(sidecar.readAll()).object();
    QCOMPARE(meta["model"].toString(), dir);
    QVERIFY(meta["prompts"].toString().contains("Lily and Tom"));
    QCOMPARE(meta["view.block"].toString(), QString("2"));
    QCOMPARE(meta["view.head"].toString(), QString("3"));
    // #28: another value exported while the Attention view shows this one carries none of the view's settings
    const QString other = tmp_.filePath("mlp-output.npy");
    QCOMPARE(w->exportValueTo({Value::MlpOutput, 0}, other), QString());
    QFile otherSidecar(other + ".json");
    QVERIFY(otherSidecar.open(QIODevice::ReadOnly));
    const QJsonObject otherMeta = QJsonDocument::fromJson(otherSidecar.readAll()).object();
    QCOMPARE(otherMeta["model"].toString(), dir);
    QVERIFY(!otherMeta.contains("view.head") && !otherMeta.contains("view.block") && !otherMeta.contains("view"));

    // .safetensors: the tensor under its value path, layout and axes in the metadata
    const QString st = tmp_.filePath("probs.safetensors");
    QCOMPARE(w->exportValueTo(key, st), QString());
    {
        SafetensorsFile file(st.toStdString());
        QVERIFY(torch::equal(file.tensor(path.toStdString()), value));
        QCOMPARE(QString::fromStdString(file.metadata().at("layout:" + path.toStdString())), QString("Pattern"));
        QCOMPARE(QString::fromStdString(file.metadata().at("axes:" + path.toStdString())), QString("batch num_heads query key"));
        QCOMPARE(QString::fromStdString(file.metadata().at("model")), dir);
        QVERIFY(QString::fromStdString(file.metadata().at("prompts")).contains("Once upon a time"));
        QCOMPARE(QString::fromStdString(file.metadata().at("view")), QString("attention"));
    }

    // .csv: metadata comments, an axes header, then every element
    const QString csv = tmp_.filePath("probs.csv");
    QCOMPARE(w->exportValueTo(key, csv), QString());
    {
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
        const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
        QVERIFY(lines.contains("# model: " + dir));
        int row = 0;
        const torch::Tensor flat = value.reshape({-1, value.size(-1)});
        bool header = false;
        for (const QString& line : lines) {
            if (line.startsWith('#')) continue;
            if (!header) {
                QVERIFY2(line.startsWith("batch,num_heads,query,key=0"), qPrintable(line));
                header = true;
                continue;
            }
            const QStringList cells = line.split(',');
            QCOMPARE(cells.size(), 3 + static_cast<int>(value.size(-1)));
            for (int j = 0; j < value.size(-1); ++j)
                QVERIFY(std::fabs(cells[3 + j].toDouble() - flat[row][j].item<double>()) <= 1e-8);
            ++row;
        }
        QCOMPARE(static_cast<int64_t>(row), flat.size(0));
    }

    // plots: PNG (text chunks), SVG (<desc>), PDF (title and the attached JSON), each with the caption
    const QString png = tmp_.filePath("attention.png");
    QCOMPARE(w->exportPlotTo(png), QString());
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() >= 200 && image.height() >= 200);
    QCOMPARE(image.text("model"), dir);
    QCOMPARE(image.text("view.value"), path);
    QCOMPARE(image.text("view.head"), QString("3"));
    QVERIFY(image.text("prompts").contains("Lily and Tom"));
    const QString svg = tmp_.filePath("attention.svg");
    QCOMPARE(w->exportPlotTo(svg), QString());
    QVERIFY(QSvgRenderer(svg).isValid());
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const QString svgText = QString::fromUtf8(svgFile.readAll());
    QVERIFY(svgText.contains("<desc>") && svgText.contains(path) && svgText.contains("stories260K-llama"));
    const QString pdf = tmp_.filePath("attention.pdf");
    QCOMPARE(w->exportPlotTo(pdf), QString());
    QFile pdfFile(pdf);
    QVERIFY(pdfFile.open(QIODevice::ReadOnly));
    const QByteArray pdfBytes = pdfFile.readAll();
    QVERIFY(pdfBytes.startsWith("%PDF-"));
    QVERIFY(pdfBytes.contains("nnscope-export.json"));
    // the other views export too
    QVERIFY(w->showView("neurons"));
    QCOMPARE(w->exportPlotTo(tmp_.filePath("neurons.svg")), QString());
    QVERIFY(w->showView("lens"));
    QVERIFY(lensDone(*w));
    QCOMPARE(w->exportPlotTo(tmp_.filePath("lens.png")), QString());
    QVERIFY(QImage(tmp_.filePath("lens.png")).text("view") == "logit lens");

    // a failure names the file and leaves nothing behind
    const QString bad = tmp_.filePath("no/such/folder/probs.npy");
    const QString error = w->exportValueTo(key, bad);
    QVERIFY2(error.contains(bad), qPrintable(error));
    QVERIFY(!QFile::exists(bad));
    const QString badPlot = tmp_.filePath("no/such/folder/plot.png");
    QVERIFY(w->exportPlotTo(badPlot).contains(badPlot));
    QVERIFY(w->exportPlotTo(tmp_.filePath("plot.bmp")).contains(".png, .svg or .pdf"));
}

// ---- errors -----------------------------------------------------------------------------------------------------

void TestGui::brokenCheckpointShowsError_data() {
    QTest::addColumn<QString>("broken");   // what is wrong with the folder
    QTest::addColumn<QString>("message");  // what the error must name
    QTest::newRow("no config.json") << "missing-config" << "config.json";
    QTest::newRow("config.json is not JSON") << "bad-json" << "config.json";
    QTest::newRow("unknown family") << "unknown-family" << "families/";
    QTest::newRow("truncated weights") << "truncated-weights" << "model.safetensors";
    QTest::newRow("config nested 100,000 deep") << "deep-json" << "config.json";
    QTest::newRow("header length one short") << "shifted-header" << "model.safetensors";
}

void TestGui::brokenCheckpointShowsError() {
    QFETCH(QString, broken);
    QFETCH(QString, message);
    QTemporaryDir folder;
    const QString good = modelDir("tiny-llama");
    for (const QString& f : QDir(good).entryList(QDir::Files)) QVERIFY(QFile::copy(good + "/" + f, folder.filePath(f)));
    auto write = [&](const QString& name, const QByteArray& bytes) {
        QFile f(folder.filePath(name));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(bytes);
    };
    if (broken == "missing-config") QVERIFY(QFile::remove(folder.filePath("config.json")));
    if (broken == "bad-json") write("config.json", "{ \"model_type\": \"llama\", ");
    if (broken == "unknown-family") write("config.json", R"({"model_type": "gpt_blorp", "architectures": ["GptBlorpForCausalLM"]})");
    if (broken == "truncated-weights") {
        QFile f(folder.filePath("model.safetensors"));
        QVERIFY(f.resize(f.size() / 2));
    }
    if (broken == "deep-json")
        write("config.json", R"({"model_type": "llama", "x": )" + QByteArray(100000, '[') + QByteArray(100000, ']') + "}");
    if (broken == "shifted-header") {  // the 8-byte length one less than the header: every tensor would read one byte off
        QFile f(folder.filePath("model.safetensors"));
        QVERIFY(f.open(QIODevice::ReadWrite));
        QByteArray len = f.read(8);
        quint64 n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(len[i]);
        --n;
        for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        QVERIFY(f.seek(0));
        QCOMPARE(f.write(len), qint64(8));
    }

    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    const ModelPtr before = w->model();
    QSignalSpy failed(w.get(), &MainWindow::modelFailed);
    w->openModel(folder.path());
    QVERIFY(failed.wait(30000));
    QVERIFY2(w->errorText().contains(folder.path()) && w->errorText().contains(message), qPrintable(w->errorText()));
    QCOMPARE(w->model(), before);  // the open model stays
    QVERIFY(runFromPanel(*w, {"Once upon a time"}));  // and the window still works
    QVERIFY(w->errorText().isEmpty());
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(good);
    QVERIFY(opened.wait(30000));
    QCOMPARE(w->model()->family().modelType, std::string("llama"));

    // a broken folder as the first model leaves the start page, with the error
    StartOptions options;
    options.openDefault = false;
    MainWindow fresh(options);
    fresh.show();
    QSignalSpy freshFailed(&fresh, &MainWindow::modelFailed);
    fresh.openModel(folder.path());
    QVERIFY(freshFailed.wait(30000));
    QVERIFY(!fresh.model());
    QVERIFY(fresh.errorText().contains(message));
    QVERIFY(!fresh.tracePanel()->runButton()->isEnabled());
}

// ---- settings and command line --------------------------------------------------------------------------------

void TestGui::settingsPersist() {
    const QString dir = modelDir("tiny-arcee");
    {
        auto w = openWindow(dir);
        QVERIFY(w);
        w->tracePanel()->setPrompts({"first prompt", "second prompt"});
        w->resize(1234, 876);
        QVERIFY(w->showView("heads"));  // a view after Logit lens (only the first four were restored before)
        QVERIFY(!w->attentionView()->logScale());
        w->attentionView()->setLogScale(true);  // #28: Log scale was not saved
        w->close();  // closeEvent writes the settings
    }
    QSettings settings;
    QCOMPARE(settings.value("recentModels").toStringList().value(0), dir);
    // a new window opens the most recent model by itself and restores the prompts and size
    StartOptions options;
    MainWindow again(options);
    again.show();
    QSignalSpy opened(&again, &MainWindow::modelOpened);
    QVERIFY(opened.wait(30000));
    QCOMPARE(QString::fromStdString(again.model()->dir()), dir);
    QCOMPARE(again.tracePanel()->prompts(), QStringList({"first prompt", "second prompt"}));
    QCOMPARE(again.size(), QSize(1234, 876));
    QVERIFY(again.currentView() == again.headsView());
    QVERIFY(again.attentionView()->logScale());
    again.attentionView()->setLogScale(false);  // the later tests of this process open with the default
    QSettings().remove("views/attention/logScale");
    // the documented export shortcuts are on the actions (and so shown in the Export menu)
    QStringList shortcuts;
    for (QAction* a : again.findChildren<QAction*>())
        if (a->text().startsWith("Export &Plot") || a->text().startsWith("Export &Value")) shortcuts << a->shortcut().toString();
    shortcuts.sort();
    QCOMPARE(shortcuts, (QStringList{"Ctrl+S", "Ctrl+Shift+S"}));
    // #28: every view has a shortcut shown in the View menu (Heads, Text and Features had none), no two alike, none
    // taken by another action
    QStringList viewKeys, otherKeys;
    for (const ViewSpec& spec : viewSpecs()) viewKeys << viewShortcut(spec).toString();
    QVERIFY2(!viewKeys.contains(QString()), qPrintable(viewKeys.join(", ")));
    QCOMPARE(QSet<QString>(viewKeys.begin(), viewKeys.end()).size(), viewKeys.size());
    QStringList shown;
    for (QAction* a : again.findChildren<QAction*>()) {
        if (a->shortcut().isEmpty()) continue;
        (viewKeys.contains(a->shortcut().toString()) ? shown : otherKeys) << a->shortcut().toString();
    }
    QVERIFY2(shown.size() >= viewKeys.size(), qPrintable(shown.join(", ")));
    for (const QString& k : viewKeys) QVERIFY2(!otherKeys.contains(k), qPrintable(k + " is also another action's shortcut"));
    QCOMPARE(viewShortcut(viewSpecs()[static_cast<size_t>(viewIndex("heads"))]).toString(), QString("Ctrl+Shift+H"));
}

void TestGui::deviceChoice() {
    // Preferences' device box: the GPU entry greyed, saying why, where the build or the machine has none; one entry per
    // GPU where there are several; a device that cannot be used is never the one selected.
    const torch::Device cuda0(torch::kCUDA, 0), cuda1(torch::kCUDA, 1);
    DeviceSupport none;
    std::unique_ptr<QComboBox> box(createDeviceChoice(nullptr, cuda0, none));
    QCOMPARE(box->count(), 2);
    QCOMPARE(box->itemText(1), QString("cuda"));
    auto* items = qobject_cast<QStandardItemModel*>(box->model());
    QVERIFY(items && items->item(0)->isEnabled() && !items->item(1)->isEnabled());
    QVERIFY2(box->itemData(1, Qt::ToolTipRole).toString().startsWith("this nnscope was built on a libtorch without CUDA"),
             qPrintable(box->itemData(1, Qt::ToolTipRole).toString()));
    QCOMPARE(box->toolTip(), box->itemData(1, Qt::ToolTipRole).toString());
    QCOMPARE(box->currentData().toString(), QString("cpu"));
    DeviceSupport noGpu;
    noGpu.builtWithCuda = true;
    box.reset(createDeviceChoice(nullptr, cuda0, noGpu));
    QVERIFY(box->toolTip().startsWith("no CUDA device"));
    QCOMPARE(box->currentData().toString(), QString("cpu"));
    DeviceSupport twoGpus = noGpu;
    twoGpus.cudaDevices = 2;
    box.reset(createDeviceChoice(nullptr, cuda1, twoGpus));
    items = qobject_cast<QStandardItemModel*>(box->model());
    QCOMPARE(box->count(), 3);
    QVERIFY(items->item(1)->isEnabled() && items->item(2)->isEnabled());
    QCOMPARE(box->currentData().toString(), QString("cuda:1"));
    QVERIFY(box->toolTip().isEmpty());
    // This build and machine: the box the dialog shows agrees with deviceSupport()
    box.reset(createDeviceChoice(nullptr, torch::kCPU, deviceSupport()));
    QCOMPARE(qobject_cast<QStandardItemModel*>(box->model())->item(1)->isEnabled(), deviceSupport().cudaDevices > 0);

    // The status bar names the device the model computes on.
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QStringList labels;
    for (QLabel* l : w->statusBar()->findChildren<QLabel*>()) labels << l->text();
    const bool named = std::any_of(labels.begin(), labels.end(), [](const QString& t) {
        return t.startsWith("model: tiny-llama · llama · ") && t.endsWith(" · cpu");
    });
    QVERIFY2(named, qPrintable(labels.join(" | ")));

    // `gui --device cuda` on a machine without a usable GPU: the sentence, status 1, no window.
    if (deviceSupport().cudaDevices > 0) return;
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    p.start(kBinary, {"gui", "--device", "cuda", "--model", modelDir("tiny-llama")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.startsWith(deviceSupport().builtWithCuda ? "nnscope: no CUDA device" : "nnscope: this nnscope was built on a libtorch without CUDA"),
             qPrintable(err));
}

void TestGui::commandLine_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("screenshot not png") << QStringList{"gui", "--model", modelDir("tiny-llama"), "--prompt", "a", "--screenshot", "x.jpg"} << ".png";
    QTest::newRow("screenshot without prompt") << QStringList{"gui", "--model", modelDir("tiny-llama"), "--screenshot", "x.png"} << "--prompt";
    QTest::newRow("bad dtype") << QStringList{"gui", "--dtype", "float13"} << "float13";
    QTest::newRow("bad view") << QStringList{"gui", "--view", "sideways"} << "--view";
    QTest::newRow("bad device") << QStringList{"gui", "--device", "tpu"} << "--device must be cpu, cuda or cuda:N";
    QTest::newRow("bad color scheme") << QStringList{"gui", "--color-scheme", "purple"} << "--color-scheme";
    QTest::newRow("stray argument") << QStringList{"gui", "stories"} << "stories";
    QTest::newRow("unknown option") << QStringList{"gui", "--modle", "x"} << "modle";
    QTest::newRow("patching without answer") << QStringList{"gui", "--clean", "a b", "--corrupted", "a c"} << "--answer";
    QTest::newRow("patching bad site") << QStringList{"gui", "--clean", "a", "--corrupted", "b", "--answer", "c", "--site", "neurons"} << "--site";
}

void TestGui::commandLine() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    p.setProcessEnvironment(env);
    p.start(kBinary, args);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 2);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(err.contains(expected), qPrintable(err));
}

void TestGui::qtOptionsAndHelpAll() {
    // `gui --help-all` prints the options and returns (it used to open the window and never return); Qt's own options
    // such as -style are passed to Qt, not refused.
    auto run = [](const QStringList& args) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        p.setProcessEnvironment(env);
        p.start(kBinary, args);
        const bool finished = p.waitForFinished(20000);
        if (!finished) p.kill();
        return std::make_tuple(finished, p.exitCode(), QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError()));
    };
    auto [done, code, out] = run({"gui", "--help-all"});
    QVERIFY2(done, "gui --help-all did not return");
    QCOMPARE(code, 0);
    QVERIFY(out.contains("--model") && out.contains("-style"));
    std::tie(done, code, out) = run({"gui", "-style", "Fusion", "--help"});
    QVERIFY(done);
    QVERIFY2(code == 0, qPrintable(out));
    std::tie(done, code, out) = run({"gui", "--style=Fusion", "-reverse", "--view", "sideways"});
    QVERIFY(done);
    QCOMPARE(code, 2);
    QVERIFY2(out.contains("--view") && !out.contains("style"), qPrintable(out));  // only our own mistake is named
}

void TestGui::screenshot() {
    const QString out = tmp_.filePath("window.png");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("XDG_CONFIG_HOME", tmp_.filePath("screenshot-config"));  // the run must not touch real settings
    p.setProcessEnvironment(env);
    p.start(kBinary, {"gui", "--model", modelDir("stories260K-llama"), "--prompt", "Once upon a time", "--screenshot", out});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QImage image(out);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(1600, 1000));
    QVERIFY(!QFile::exists(tmp_.filePath("screenshot-config/nnscope/nnscope.conf")));
    // a broken folder: an error on stderr and a non-zero status, no file
    QTemporaryDir empty;
    const QString none = tmp_.filePath("none.png");
    p.start(kBinary, {"gui", "--model", empty.path(), "--prompt", "x", "--screenshot", none});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("config.json"));
    QVERIFY(!QFile::exists(none));
}

void TestGui::demoModelByDefault() {
    // A window given no model and with no recent one opens the committed demo model, traces its repeated prompt and
    // shows the attention of the induction block: the second "with" attends to "a", the word after the first "with".
    const QString demo = demoModelDir();
    QVERIFY2(!demo.isEmpty(), "no demo model found (resources/demo-model)");
    StartOptions options;
    options.useSettings = false;  // no recent models: the demo is the default
    MainWindow w(options);
    w.show();
    QSignalSpy done(&w, &MainWindow::traceEnded);
    QVERIFY(done.wait(60000));
    QVERIFY(w.model() && w.snapshot());
    QCOMPARE(QDir(QString::fromStdString(w.model()->dir())).canonicalPath(), demo);
    QCOMPARE(w.tracePanel()->prompts(), QStringList{demoPrompt()});
    QCOMPARE(w.views()->currentWidget(), static_cast<QWidget*>(w.attentionView()));
    QCOMPARE(w.attentionView()->block(), kDemoInductionBlock);
    // the chips describe this checkpoint: Llama's grouped-query attention with as many key/value heads as query heads
    QVERIFY2(w.diagramPanel()->header()->text().contains("Multi-head attention") &&
                 !w.diagramPanel()->header()->text().contains("Grouped-query"),
             qPrintable(w.diagramPanel()->header()->text()));
    const auto& ids = w.snapshot()->result.batch.ids.at(0);
    const auto& tok = *w.model()->tokenizer();
    int64_t second = -1, first = -1;  // positions of the last "with" and of the one before it
    for (int64_t i = static_cast<int64_t>(ids.size()) - 1; i >= 0; --i)
        if (tok.tokenString(ids[static_cast<size_t>(i)]) == "with") {
            if (second < 0)
                second = i;
            else if (first < 0)
                first = i;
        }
    QVERIFY(first > 0 && second == static_cast<int64_t>(ids.size()) - 1);
    const auto p = w.snapshot()->result.value({Value::AttentionProbabilities, kDemoInductionBlock});  // [1, H, T, T]
    const double best = p.index({0, Slice(), second, first + 1}).max().item<double>();
    QVERIFY2(best > 0.5, qPrintable(QString("the best head puts %1 on the induction target").arg(best)));
    // What the heatmap shows is that block's attention.
    QVERIFY(mapDifference(w.attentionView()->heatmap(),
                          p.index({0, w.attentionView()->head()})) < 1e-6);
    // `nnscope gui --screenshot FILE` with neither model nor prompt shows the same.
    const QString out = tmp_.filePath("demo.png");
    QProcess proc;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("XDG_CONFIG_HOME", tmp_.filePath("demo-config"));
    proc.setProcessEnvironment(env);
    proc.start(kBinary, {"gui", "--screenshot", out});
    QVERIFY(proc.waitForFinished(120000));
    QVERIFY2(proc.exitCode() == 0, proc.readAllStandardError().constData());
    QVERIFY(!QImage(out).isNull());
    // ... and so does naming the demo model without a prompt (it has one of its own)
    const QString named = tmp_.filePath("demo-named.png");
    proc.start(kBinary, {"gui", "--model", demo + "/", "--screenshot", named});
    QVERIFY(proc.waitForFinished(120000));
    QVERIFY2(proc.exitCode() == 0, proc.readAllStandardError().constData());
    QVERIFY(!QImage(named).isNull());

    // The README's first command itself, `nnscope` with a fresh settings folder (--screenshot takes another path):
    // the window traces the demo's sentence and shows the induction block's attention. Its log line says so.
    const auto firstTrace = [&](const QString& config) {
        QProcess app;
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        e.insert("QT_QPA_PLATFORM", "offscreen");
        e.insert("XDG_CONFIG_HOME", config);
        e.insert("QT_LOGGING_RULES", "nnscope.window.info=true");
        app.setProcessEnvironment(e);
        app.start(kBinary, {});
        QString err;
        QElapsedTimer t;
        t.start();
        while (!err.contains("traced") && t.elapsed() < 60000 && app.state() != QProcess::NotRunning) {
            app.waitForReadyRead(1000);
            err += QString::fromUtf8(app.readAllStandardError());
        }
        app.kill();
        app.waitForFinished(10000);
        return err;
    };
    const QString fresh = firstTrace(tmp_.filePath("fresh-config"));
    QVERIFY2(fresh.contains("traced " + demoPrompt() + " |") && fresh.contains("view attention | block 1"), qPrintable(fresh));
    // Opened again with the demo's sentence kept and the Text tab last shown: traced again, in that tab.
    QDir().mkpath(tmp_.filePath("again-config/nnscope"));
    QFile conf(tmp_.filePath("again-config/nnscope/nnscope.conf"));
    QVERIFY(conf.open(QIODevice::WriteOnly));
    conf.write(("[trace]\nprompts=" + demoPrompt() + "\n\n[view]\ncurrent=text\n").toUtf8());
    conf.close();
    const QString again = firstTrace(tmp_.filePath("again-config"));
    QVERIFY2(again.contains("traced " + demoPrompt() + " |") && again.contains("view text"), qPrintable(again));
}

void TestGui::startOptionsRefused() {
    // Without a display the window says so and how to run headless, instead of Qt's abort.
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(v);
    p.setProcessEnvironment(env);
    p.start(kBinary, {"gui", "--model", modelDir("tiny-llama")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("QT_QPA_PLATFORM=offscreen"));
    // A --pin or --edit that does not fit the opened model fails a screenshot run (status 1, the reason on stderr).
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("XDG_CONFIG_HOME", tmp_.filePath("refused-config"));
    p.setProcessEnvironment(env);
    const QString out = tmp_.filePath("refused.png");
    for (const QStringList& extra : {QStringList{"--pin", "layers.7.bogus"}, QStringList{"--edit", "layers.9.layer_output = 0"}}) {
        p.start(kBinary, QStringList{"gui", "--model", modelDir("tiny-llama"), "--prompt", "hi", "--screenshot", out} + extra);
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains(extra[1]), qPrintable(err));
        QVERIFY(!QFile::exists(out));
    }
}

void TestGui::familyView() {
    // The Family view shows the family page of the open checkpoint with the notes' checks, run in the worker thread:
    // the same page, byte for byte, as the engine writes with its own checks of the same prompt.
    auto w = openWindow(modelDir("tiny-apertus"));
    QVERIFY(w);
    QVERIFY(w->showView("family"));
    FamilyView* fv = w->familyView();
    if (!fv->checks()) {
        QSignalSpy ended(w.get(), &MainWindow::checksEnded);
        QVERIFY(ended.wait(60000));
    }
    QVERIFY(fv->checks());
    const auto engineChecks = runFamilyChecks(*w->model(), fv->checkPrompt().toStdString());
    QCOMPARE(fv->checks()->size(), engineChecks.size());
    for (size_t i = 0; i < engineChecks.size(); ++i) {
        QCOMPARE(QString::fromStdString((*fv->checks())[i].id), QString::fromStdString(engineChecks[i].id));
        QCOMPARE((*fv->checks())[i].passed, engineChecks[i].passed);
        QVERIFY2((*fv->checks())[i].passed, engineChecks[i].id.c_str());
    }
    QCOMPARE(fv->html(), QString::fromStdString(familyPage(*w->model(), engineChecks, PageFormat::Html, PageColours::Light)));
    QVERIFY(fv->browser()->toPlainText().contains("xIELU"));
    QVERIFY(fv->statusLabel()->text().contains(" 0 ✗"));
    // Another prompt from the view's own field reruns them.
    fv->setCheckPrompt("the quick brown fox jumps over the lazy dog");
    QSignalSpy again(w.get(), &MainWindow::checksEnded);
    QTest::mouseClick(fv->runButton(), Qt::LeftButton);
    QVERIFY(again.wait(60000));
    QVERIFY(fv->statusLabel()->text().contains("quick brown fox"));
    // Save page: Markdown and HTML, as `nnscope family` writes them.
    const QString md = tmp_.filePath("apertus.md");
    QCOMPARE(fv->savePage(md), QString());
    QFile f(md);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), QString::fromStdString(familyPage(*w->model(), *fv->checks(), PageFormat::Markdown)));
    QVERIFY(fv->savePage(tmp_.filePath("apertus.txt")).contains(".txt"));
    // A prompt too short for the checks: the status says why, and the page no longer shows the last prompt's marks.
    fv->setCheckPrompt("a");
    QTest::mouseClick(fv->runButton(), Qt::LeftButton);
    QVERIFY(again.wait(60000));
    QVERIFY2(fv->statusLabel()->text().contains("at least 3 positions"), qPrintable(fv->statusLabel()->text()));
    QVERIFY(fv->statusLabel()->minimumSizeHint().width() < 300);  // it wraps: the docks beside the view keep their width
    QVERIFY(!fv->checks());
    QVERIFY(fv->browser()->toPlainText().contains("Not checked on this checkpoint yet"));
    fv->setCheckPrompt("the quick brown fox jumps over the lazy dog");

    // A broken copy (Arcee's relu² claimed on a checkpoint whose config says silu): a ✗ on the page and in the status.
    QTemporaryDir broken;
    for (const QString& name : QDir(modelDir("tiny-arcee")).entryList(QDir::Files))
        QVERIFY(QFile::copy(modelDir("tiny-arcee") + "/" + name, broken.filePath(name)));
    QFile config(broken.filePath("config.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    QJsonObject json = QJsonDocument::fromJson(config.readAll()).object();
    config.close();
    json["hidden_act"] = "silu";
    QVERIFY(config.open(QIODevice::WriteOnly | QIODevice::Truncate));
    config.write(QJsonDocument(json).toJson());
    config.close();
    auto b = openWindow(broken.path());
    QVERIFY(b);
    QVERIFY(b->showView("family"));  // the checks run when the page is first shown
    if (!b->familyView()->checks()) {
        QSignalSpy ended(b.get(), &MainWindow::checksEnded);
        QVERIFY(ended.wait(60000));
    }
    const auto& results = *b->familyView()->checks();
    QVERIFY(std::any_of(results.begin(), results.end(), [](const CheckResult& r) { return r.kind == CheckKind::Claim && !r.passed; }));
    QVERIFY(!b->familyView()->statusLabel()->text().contains(" 0 ✗"));
    QVERIFY(b->familyView()->html().contains("class=\"fail\""));
}

void TestGui::interventionsFromViews() {
    // Interventions chosen from the views' menus and typed in the dock are applied by the next trace exactly as the
    // engine applies them (the engine's edits are checked against transformers hooks in test_interventions); the
    // Before / after view shows the unedited and the edited run side by side.
    const QString dir = modelDir("tiny-llama");
    const QStringList prompts = {"hello world", "the cat sat on the mat"};
    auto w = openWindow(dir);
    QVERIFY(w);
    QVERIFY(runFromPanel(*w, prompts));
    InterventionPanel* panel = w->interventionPanel();
    QVERIFY(panel->all().isEmpty());

    // Right-click the attention view on head 2 of block 1: zero-ablate it.
    QVERIFY(w->showView("attention"));
    w->attentionView()->setBlock(1);
    w->attentionView()->setHead(2);
    QVERIFY(chooseFromContextMenu(w->attentionView(), "Zero-ablate head 2 of block 1"));
    const QString head = "layers.1.self_attn.attention_head_outputs[:, :, 2] = 0";
    QCOMPARE(panel->active(), QStringList{head});
    // #28: the trace line says the views show the trace without it, and how to apply it
    QVERIFY2(w->tracePanel()->statusText().contains("run without interventions: press Run"), qPrintable(w->tracePanel()->statusText()));
    // Right-click the neuron view on neuron 5 of block 0: zero it.
    QVERIFY(w->showView("neurons"));
    w->neuronView()->setBlock(0);
    w->neuronView()->setNeuron(5);
    QVERIFY(chooseFromContextMenu(w->neuronView(), "Zero neuron 5 of block 0"));
    const QString neuron = "layers.0.mlp.mlp_neurons[:, :, 5] = 0";
    // Typed: a scaled query head; refused: a read-only value, a block out of range, a bad operator.
    const QString queries = "layers.0.self_attn.attention_queries[:, 1] *= 3";
    QCOMPARE(panel->add(queries), QString());
    QVERIFY(panel->add("next_token_probs = 0").contains("read-only"));
    QVERIFY(panel->add("skip 7").contains("out of range"));
    QVERIFY(panel->add("layers.0.layer_output[0] 2").contains("no operator"));
    QVERIFY(panel->errorLabel()->isVisibleTo(panel));
    QCOMPARE(panel->active(), (QStringList{head, neuron, queries}));

    QVERIFY(runFromPanel(*w, prompts));
    SnapshotPtr snap = w->snapshot();
    QCOMPARE(snap->interventions, (QStringList{head, neuron, queries}));
    QVERIFY(snap->baseline);
    const TraceResult edited = engineEdited(*w->model(), prompts, snap->interventions);
    const TraceResult clean = engineEdited(*w->model(), prompts, {});
    const ValueKey lastOut{Value::LayerOutput, static_cast<int>(w->model()->config().numLayers) - 1};
    QVERIFY(maxDiff(snap->result.nextTokenProbs, edited.nextTokenProbs) <= 1e-6);
    QVERIFY(maxDiff(snap->result.value(lastOut), edited.value(lastOut)) <= 1e-5);
    QVERIFY(maxDiff(snap->baseline->result.nextTokenProbs, clean.nextTokenProbs) <= 1e-6);
    QVERIFY(maxDiff(snap->baseline->result.value(lastOut), clean.value(lastOut)) <= 1e-5);
    QVERIFY(maxDiff(snap->result.value(lastOut), clean.value(lastOut)) > 1e-2);  // the edits matter
    // The zeroed neuron reads 0 at every position of the edited run (and not in the unedited one).
    const auto neurons = snap->result.value({Value::MlpNeurons, 0});
    QCOMPARE(neurons.index({Slice(), Slice(), 5}).abs().max().item<double>(), 0.0);
    QVERIFY(snap->baseline->result.value({Value::MlpNeurons, 0}).index({Slice(), Slice(), 5}).abs().max().item<double>() > 0);

    // Before / after: the bars are the two runs' next-token probabilities; the lens at the last block is the output.
    QVERIFY(w->showView("compare"));
    CompareView* cv = w->compareView();
    cv->setPrompt(1);
    QVERIFY(lensDone(*w));
    QVERIFY(cv->hasLens());
    QVERIFY(!cv->tokenIds().isEmpty());
    for (int i = 0; i < cv->tokenIds().size(); ++i) {
        const int64_t id = cv->tokenIds()[i];
        QVERIFY(std::fabs(cv->beforeBars()->data()->at(i)->value - clean.nextTokenProbs[1][id].item<double>()) <= 1e-6);
        QVERIFY(std::fabs(cv->afterBars()->data()->at(i)->value - edited.nextTokenProbs[1][id].item<double>()) <= 1e-6);
        QCOMPARE(cv->tokenTable()->item(i, 2)->data(Qt::UserRole).toDouble(), cv->afterBars()->data()->at(i)->value);
    }
    const int64_t target = clean.nextTokenProbs[1].argmax().item<int64_t>();  // default lens target: the unedited top token
    const int last = w->model()->config().numLayers - 1;
    QVERIFY(std::fabs(cv->lensBefore()->data()->at(last)->value - clean.nextTokenProbs[1][target].item<double>()) <= 1e-5);
    QVERIFY(std::fabs(cv->lensAfter()->data()->at(last)->value - edited.nextTokenProbs[1][target].item<double>()) <= 1e-5);
    QCOMPARE(cv->lensTable()->rowCount(), last + 1);
    QVERIFY(cv->summaryLabel()->text().contains("attention_head_outputs"));
    cv->setLogScale(true);  // the same bars on a log axis
    QCOMPARE(cv->beforeBars()->valueAxis()->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(std::fabs(cv->afterBars()->data()->at(0)->value - edited.nextTokenProbs[1][cv->tokenIds()[0]].item<double>()) <= 1e-6);
    cv->setLogScale(false);
    QVERIFY(cv->setTarget("#7"));
    QVERIFY(std::fabs(cv->lensAfter()->data()->at(last)->value - edited.nextTokenProbs[1][7].item<double>()) <= 1e-5);
    QVERIFY(!cv->setTarget("#999999"));
    // The plot export records the interventions.
    const QString png = tmp_.filePath("before-after.png");
    QCOMPARE(w->exportPlotTo(png), QString());
    QVERIFY(QImage(png).text("interventions").contains("attention_head_outputs[:, :, 2] = 0"));

    // Unchecked lines are not applied; without interventions there is no baseline and the view says so.
    panel->setChecked(0, false);
    panel->setChecked(1, false);
    QVERIFY(runFromPanel(*w, prompts));
    QCOMPARE(w->snapshot()->interventions, QStringList{queries});
    panel->clear();
    QVERIFY(runFromPanel(*w, prompts));
    QVERIFY(w->snapshot()->interventions.isEmpty());
    QVERIFY(!w->snapshot()->baseline);
    QVERIFY(maxDiff(w->snapshot()->result.nextTokenProbs, clean.nextTokenProbs) <= 1e-6);

    // A pinned card's Edit… starts an edit of its value in the dock; skip from the attention menu skips the block.
    const ValueKey key{Value::AttentionOutput, 1};
    QVERIFY(w->pinnedPanel()->pin(valueKeyInfo(*w->model(), key)));
    QTest::mouseClick(w->pinnedPanel()->card(key)->editButton(), Qt::LeftButton);
    QCOMPARE(panel->input()->text(), QString("layers.1.self_attn.attention_output[...] = "));
    QVERIFY(w->showView("attention"));
    w->attentionView()->setBlock(1);  // the neuron view's block 0 was followed by every view
    QVERIFY(chooseFromContextMenu(w->attentionView(), "Skip block 1"));
    QVERIFY(runFromPanel(*w, prompts));
    QVERIFY(maxDiff(w->snapshot()->result.value({Value::LayerOutput, 1}), w->snapshot()->result.value({Value::LayerOutput, 0})) == 0);
}

void TestGui::steeringFromPrompts() {
    // Contrastive steering: the vector is prompt A's layer_output minus prompt B's at the last token, written to .npy
    // and added as a `steer` line; the edited trace equals the engine's with the same line.
    const QString dir = modelDir("tiny-arcee");
    const QStringList prompts = {"I love this", "I hate this"};
    auto w = openWindow(dir);
    QVERIFY(w);
    QVERIFY(runFromPanel(*w, prompts));
    InterventionPanel* panel = w->interventionPanel();
    const QString npy = tmp_.filePath("steering/love-minus-hate.npy");
    QCOMPARE(panel->addSteeringFromPrompts(*w->snapshot(), 0, 0, 1, 2.5, "-1", npy), QString());
    const torch::Tensor out = w->snapshot()->result.value({Value::LayerOutput, 0});
    QVERIFY(maxDiff(readNpy(npy.toStdString()), out[0][-1] - out[1][-1]) == 0);
    QCOMPARE(panel->active(), QStringList{QString("steer 0:2.5:%1:-1").arg(QFileInfo(npy).absoluteFilePath())});
    QVERIFY(panel->addSteeringFromPrompts(*w->snapshot(), 0, 1, 1, 1, "", npy).contains("two different"));
    QVERIFY(runFromPanel(*w, {"I think this is"}));
    const TraceResult ref = engineEdited(*w->model(), {"I think this is"}, panel->active());
    QVERIFY(maxDiff(w->snapshot()->result.nextTokenProbs, ref.nextTokenProbs) <= 1e-6);
    QVERIFY(maxDiff(w->snapshot()->result.value({Value::LayerOutput, 1}), ref.value({Value::LayerOutput, 1})) <= 1e-5);
    // only the last position of layers.0.layer_output moved, by exactly 2.5 x the vector
    const auto moved = w->snapshot()->result.value({Value::LayerOutput, 0}) - w->snapshot()->baseline->result.value({Value::LayerOutput, 0});
    QVERIFY(moved.index({0, Slice(0, -1)}).abs().max().item<double>() == 0);
    QVERIFY(maxDiff(moved[0][-1], 2.5 * (out[0][-1] - out[1][-1])) <= 1e-5);
}

void TestGui::patchingView() {
    // The Patching view runs activation patching in the worker and shows the engine's grid; on the demo model,
    // patching the clean run's layer_output restores the copied answer.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(w->showView("patching"));
    PatchingView* pv = w->patchingView();
    PatchRequest r = demoPatchRequest();
    pv->setRequest(r);
    QVERIFY2(patchFromView(*w), qPrintable(pv->statusLabel()->text()));
    const Model& m = *w->model();
    const Batch b = encodeBatch(m, {r.clean.toStdString(), r.corrupted.toStdString()});
    PatchingOptions o = demoPatchOptions(m);
    const PatchingResult ref = activationPatching(m, b.ids[0], b.ids[1], o);
    const auto& got = *pv->result();
    QCOMPARE(got.clean, ref.clean);
    QCOMPARE(got.corrupted, ref.corrupted);
    QVERIFY(ref.clean > 3 && ref.corrupted < -3);  // the model copies what it saw
    QCOMPARE(got.grid, ref.grid);
    const int layers = static_cast<int>(ref.grid.size()), len = static_cast<int>(ref.grid[0].size());
    QCOMPARE(pv->matrixModel()->rowCount(), layers);
    QCOMPARE(pv->matrixModel()->columnCount(), len);
    for (int i = 0; i < layers; ++i)
        for (int p = 0; p < len; ++p) QVERIFY(std::fabs(pv->heatmap()->model()->value(i, p) - ref.grid[i][p]) <= 1e-5);
    // The last block at the last position carries the whole clean answer; normalised, that cell is 1.
    QVERIFY(std::fabs(ref.grid[layers - 1][len - 1] - ref.clean) <= 1e-4);
    // #28: the grid's title is not clipped: each of its lines is narrower than the plot beside the estimate's
    QTest::qWait(50);
    const QFontMetrics titleMetrics(pv->heatmap()->titleFont());
    for (const QString& line : pv->heatmap()->title().split('\n'))
        QVERIFY2(titleMetrics.horizontalAdvance(line) < pv->heatmap()->plot()->width(),
                 qPrintable(QString("'%1' is %2 px, the plot %3").arg(line).arg(titleMetrics.horizontalAdvance(line)).arg(pv->heatmap()->plot()->width())));
    pv->setNormalized(true);
    QVERIFY(std::fabs(pv->matrixModel()->value(layers - 1, len - 1) - 1.0) <= 1e-5);
    QVERIFY(std::fabs(pv->matrixModel()->value(0, 0)) <= 1e-5);  // patching <s> changes nothing
    // Beside it, attribution patching's estimate of the same grid and the correlation of the two.
    const PatchingResult est = attributionPatching(m, b.ids[0], b.ids[1], o);
    QCOMPARE(got.estimate, est.grid);
    QVERIFY(pv->estimateHeatmap()->isVisibleTo(pv));
    QCOMPARE(pv->estimateModel()->rowCount(), layers);
    pv->setNormalized(false);
    for (int i = 0; i < layers; ++i)
        for (int p = 0; p < len; ++p) QVERIFY(std::fabs(pv->estimateModel()->value(i, p) - est.grid[i][p]) <= 1e-5);
    QVERIFY2(pv->statusLabel()->text().contains(QString::number(gridCorrelation(ref.grid, est.grid), 'f', 3)),
             qPrintable(pv->statusLabel()->text()));
    pv->setNormalized(true);
    const QString png = tmp_.filePath("patching.png");
    QCOMPARE(w->exportPlotTo(png), QString());
    QCOMPARE(QImage(png).text("view.clean"), r.clean);

    // Refused before anything runs: prompts of different lengths, an answer of two tokens.
    r.corrupted = "tom saw a dog . tom saw a";
    pv->setRequest(r);
    QTest::mouseClick(pv->runButton(), Qt::LeftButton);
    QVERIFY(pv->statusLabel()->text().contains("same number of tokens"));
    r.corrupted = "tom saw a big dog . tom saw a";
    r.answer = "red ball";
    pv->setRequest(r);
    QTest::mouseClick(pv->runButton(), Qt::LeftButton);
    QVERIFY(pv->statusLabel()->text().contains("not one"));
    // One head's output, probability metric.
    r.answer = "red";
    r.wrong.clear();
    r.site = PatchSite::HeadOutput;
    r.head = 3;
    pv->setRequest(r);
    QSignalSpy again(w.get(), &MainWindow::patchEnded);
    QTest::mouseClick(pv->runButton(), Qt::LeftButton);
    QVERIFY(again.wait(60000));
    QVERIFY(pv->result());
    o.site = PatchSite::HeadOutput;
    o.head = 3;
    o.metric.kind = PatchMetric::Kind::TargetProbability;
    o.metric.wrong = -1;
    QCOMPARE(pv->result()->grid, activationPatching(m, b.ids[0], b.ids[1], o).grid);
}

void TestGui::patchingChosenPositions() {
    // Positions chosen at the end of a prompt are the grid: one column each, named by its position and token, holding
    // the engine's values (on a 313-token prompt, 4 chosen positions were a sliver at the right edge of 313 columns,
    // 4,944 of 5,008 cells flagged as NaN); and a result does not make the window wider than it was.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    w->resize(1280, 800);
    QVERIFY(w->showView("patching"));
    QCoreApplication::processEvents();
    PatchingView* pv = w->patchingView();
    const PatchRequest r = demoPatchRequest();
    pv->setRequest(r);
    QTest::keyClicks(pv->positionsEdit(), "3,-1");
    QVERIFY2(patchFromView(*w), qPrintable(pv->statusLabel()->text()));
    QCoreApplication::processEvents();
    const Model& m = *w->model();
    const Batch b = encodeBatch(m, {r.clean.toStdString(), r.corrupted.toStdString()});
    const size_t S = b.ids[1].size();
    PatchingOptions o = demoPatchOptions(m);
    o.positions = {3, -1};
    const PatchingResult ref = activationPatching(m, b.ids[0], b.ids[1], o);
    const int L = static_cast<int>(m.config().numLayers);
    QCOMPARE(pv->matrixModel()->rowCount(), L);
    QCOMPARE(pv->matrixModel()->columnCount(), 2);
    QCOMPARE(pv->estimateModel()->columnCount(), 2);
    const QStringList labels = pv->matrixModel()->matrix().columnLabels;
    QCOMPARE(labels.at(0), QString("3 %1").arg(QString::fromStdString(ref.tokens.at(3))));
    QCOMPARE(labels.at(1), QString("%1 %2").arg(S - 1).arg(QString::fromStdString(ref.tokens.at(S - 1))));
    for (int i = 0; i < L; ++i) {
        QVERIFY(std::fabs(pv->matrixModel()->value(i, 0) - ref.grid[static_cast<size_t>(i)][3]) <= 1e-5);
        QVERIFY(std::fabs(pv->matrixModel()->value(i, 1) - ref.grid[static_cast<size_t>(i)][S - 1]) <= 1e-5);
    }
    QTest::mouseMove(pv->heatmap()->plot(), pv->heatmap()->cellCenter(L - 1, 1));
    QVERIFY2(pv->heatmap()->hoverText().contains(QString("at position %1").arg(S - 1)) &&
                 pv->heatmap()->hoverText().contains(QString("layers.%1").arg(L - 1)),
             qPrintable(pv->heatmap()->hoverText()));
    // in a narrow plot each title line ends in "…" instead of being clipped at both edges; title() stays whole
    pv->estimateHeatmap()->setFixedWidth(160);
    QTest::qWait(50);
    const QFontMetrics titleMetrics(pv->estimateHeatmap()->titleFont());
    QVERIFY(pv->estimateHeatmap()->title().startsWith("attribution patching (first-order)\nr = "));
    QVERIFY2(pv->estimateHeatmap()->shownTitle().contains(QChar(0x2026)), qPrintable(pv->estimateHeatmap()->shownTitle()));
    // within the axis rect's column (the colour scale's column is not the title's)
    const int column = pv->estimateHeatmap()->plot()->axisRect()->outerRect().width();
    for (const QString& line : pv->estimateHeatmap()->shownTitle().split('\n'))
        QVERIFY2(titleMetrics.horizontalAdvance(line) <= column, qPrintable(QString("%1: %2 px in %3").arg(line).arg(titleMetrics.horizontalAdvance(line)).arg(column)));
    pv->estimateHeatmap()->setMinimumWidth(0);
    pv->estimateHeatmap()->setMaximumWidth(QWIDGETSIZE_MAX);
    QVERIFY2(w->width() <= 1280 && w->minimumSizeHint().width() <= 1280,
             qPrintable(QString("window %1 px, its minimum %2 px").arg(w->width()).arg(w->minimumSizeHint().width())));
}

void TestGui::patchingEveryHead() {
    // Every head in one run, on chosen blocks and positions, typed into the view: the blocks x heads grid shows the
    // engine's cells at the chosen position and summed over the positions run; the progress bar ends on "cell N of N";
    // hovering a cell of either grid (exact and attribution estimate) shows that cell's value, also when Qt's tooltip
    // event reaches the plot (the estimate grid's hover used to be replaced by a citation).
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(w->showView("patching"));
    PatchingView* pv = w->patchingView();
    PatchRequest r = demoPatchRequest();
    r.site = PatchSite::AllHeads;
    pv->setRequest(r);
    const Model& m = *w->model();
    const int L = static_cast<int>(m.config().numLayers), H = static_cast<int>(m.config().numHeads);
    QTest::keyClicks(pv->blocksEdit(), QString("1-%1").arg(L - 1));
    QTest::keyClicks(pv->positionsEdit(), "3,-1");
    QVERIFY2(patchFromView(*w), qPrintable(pv->statusLabel()->text()));
    const Batch b = encodeBatch(m, {r.clean.toStdString(), r.corrupted.toStdString()});
    const size_t S = b.ids[1].size();
    PatchingOptions o = demoPatchOptions(m);
    o.site = PatchSite::AllHeads;
    o.batch = 1;  // one pass per cell: the view's batched cells equal them within float32 rounding
    for (int i = 1; i < L; ++i) o.blocks.push_back(i);
    o.positions = {3, -1};
    const PatchingResult ref = activationPatching(m, b.ids[0], b.ids[1], o);
    const PatchingResult est = attributionPatching(m, b.ids[0], b.ids[1], o);
    const auto& got = *pv->result();
    QCOMPARE(got.headsPerBlock, H);
    QCOMPARE(got.grid.size(), size_t(L * H));
    for (size_t row = 0; row < got.grid.size(); ++row)
        for (size_t p = 0; p < S; ++p) {
            const bool chosen = row >= size_t(H) && (p == 3 || p == S - 1);
            QCOMPARE(std::isnan(got.grid[row][p]), !chosen);
            if (chosen) QVERIFY(std::fabs(got.grid[row][p] - ref.grid[row][p]) <= 1e-5 * std::max(1.0, std::fabs(ref.grid[row][p])));
        }
    QCOMPARE(pv->progressBar()->text(), QString("cell %1 of %1").arg((L - 1) * H * 2));
    // blocks x heads (the blocks run: 1 to L-1), the position chooser lists "summed" and the two positions run
    QCOMPARE(pv->matrixModel()->rowCount(), L - 1);
    QCOMPARE(pv->matrixModel()->matrix().rowLabels.first(), QString("layers.1"));
    QCOMPARE(pv->matrixModel()->columnCount(), H);
    QComboBox* at = pv->headPositionCombo();
    QVERIFY(at->isVisibleTo(pv));
    QCOMPARE(at->count(), 3);
    QCOMPARE(at->itemData(0).toInt(), -1);
    QCOMPARE(at->itemData(2).toInt(), static_cast<int>(S - 1));
    auto summed = [&](const PatchingResult& g, size_t row) {
        double sum = 0;
        for (size_t p : {size_t(3), S - 1}) sum += g.grid[row][p] - g.corrupted;
        return g.corrupted + sum;
    };
    for (int i = 1; i < L; ++i)  // model row i - 1 is block i
        for (int h = 0; h < H; ++h) {
            const size_t row = static_cast<size_t>(i * H + h);
            QVERIFY(std::fabs(pv->matrixModel()->value(i - 1, h) - summed(ref, row)) <= 1e-4);
            QVERIFY(std::fabs(pv->estimateModel()->value(i - 1, h) - summed(est, row)) <= 1e-4);
        }
    at->setCurrentIndex(2);  // the last position
    for (int i = 1; i < L; ++i)
        for (int h = 0; h < H; ++h) {
            QVERIFY(std::fabs(pv->matrixModel()->value(i - 1, h) - ref.grid[static_cast<size_t>(i * H + h)][S - 1]) <= 1e-4);
            QVERIFY(std::fabs(pv->estimateModel()->value(i - 1, h) - est.grid[static_cast<size_t>(i * H + h)][S - 1]) <= 1e-4);
        }
    // hover: each grid's cell shows its own value, and Qt's tooltip event does not replace it
    w->resize(1600, 1000);
    QCoreApplication::processEvents();
    for (HeatmapPlot* hm : {pv->heatmap(), pv->estimateHeatmap()}) {
        const PatchingResult& g = hm == pv->heatmap() ? got : est;
        const int i = L - 1, h = H - 1;  // the last block: the grid's row L - 2
        const QPoint centre = hm->cellCenter(i - 1, h);
        QTest::mouseMove(hm->plot(), centre);
        const QString value = QString::number(g.grid[static_cast<size_t>(i * H + h)][S - 1], 'g', 5);
        QVERIFY2(hm->hoverText().contains(value) && hm->hoverText().contains(QString("attention_head_outputs[:, :, %1]").arg(h)) &&
                     hm->hoverText().contains(QString("layers.%1").arg(i)),
                 qPrintable(hm->hoverText() + " / " + value + QString(" at %1,%2 in %3x%4").arg(centre.x()).arg(centre.y())
                                                                 .arg(hm->plot()->width()).arg(hm->plot()->height())));
        QHelpEvent help(QEvent::ToolTip, centre, hm->plot()->mapToGlobal(centre));
        QApplication::sendEvent(hm->plot(), &help);
        QVERIFY2(!QToolTip::isVisible() || QToolTip::text().contains(value), qPrintable(QToolTip::text()));
        QVERIFY(hm->toolTip().isEmpty());
    }
    // refused before anything runs: a position outside the prompt
    pv->positionsEdit()->setText("40");
    QTest::mouseClick(pv->runButton(), Qt::LeftButton);
    QVERIFY2(pv->statusLabel()->text().contains("positions: 40 is out of range"), qPrintable(pv->statusLabel()->text()));
}

void TestGui::patchingWithInterventions() {
    // The Patching view runs with the Interventions list as a trace does: every run (clean, corrupted, patched) applies
    // the active lines, the grid equals the engine's under the same interventions, and the view says they are on.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(w->showView("patching"));
    PatchingView* pv = w->patchingView();
    const QString edit = "layers.0.layer_output[:, 3] *= 0.5";
    QCOMPARE(w->addIntervention(edit), QString());
    QVERIFY(pv->interventionsLabel()->isVisibleTo(pv));
    QVERIFY2(pv->interventionsLabel()->text().contains(edit), qPrintable(pv->interventionsLabel()->text()));
    PatchRequest r = demoPatchRequest();
    pv->setRequest(r);
    QVERIFY2(patchFromView(*w), qPrintable(pv->statusLabel()->text()));
    const Model& m = *w->model();
    const Batch b = encodeBatch(m, {r.clean.toStdString(), r.corrupted.toStdString()});
    PatchingOptions o = demoPatchOptions(m);
    const PatchingResult plain = activationPatching(m, b.ids[0], b.ids[1], o);
    auto list = std::make_shared<EditList>();
    addIntervention(*list, m, edit.toStdString());
    o.intervention = list;
    const PatchingResult edited = activationPatching(m, b.ids[0], b.ids[1], o);
    QCOMPARE(pv->result()->grid, edited.grid);
    QCOMPARE(pv->result()->estimate, attributionPatching(m, b.ids[0], b.ids[1], o).grid);
    QVERIFY(pv->result()->grid != plain.grid);
    QCOMPARE(pv->result()->interventions, std::vector<std::string>{edit.toStdString()});
    QCOMPARE(pv->settings().value("view.interventions"), edit);
    // With the list changed, the view says the grid shown ran with other interventions.
    w->interventionPanel()->clear();
    QVERIFY2(pv->interventionsLabel()->text().contains("computed with"), qPrintable(pv->interventionsLabel()->text()));
}

void TestGui::transcoderEditInWindow() {
    // A transcoder's feature edit typed in the Interventions dock is accepted and applied by the next trace as the engine
    // applies it (checked against sae-lens in test_dictionaries), with the unedited run beside it for Before / after.
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    const QString dictionary = kFixtures + "/../dictionaries/saelens-jumprelu-skip-transcoder-llama-l1";
    const QString line = "feature " + dictionary + ":3 += 10";
    QCOMPARE(w->interventionPanel()->add(line), QString());
    const QStringList prompts = {"Tom and Lily went to the park.", "Lily went to the park."};
    QVERIFY(runFromPanel(*w, prompts));
    SnapshotPtr snap = w->snapshot();
    QCOMPARE(snap->interventions, QStringList{line});
    QVERIFY(snap->baseline);
    const TraceResult edited = engineEdited(*w->model(), prompts, {line});
    const TraceResult plain = engineEdited(*w->model(), prompts, {});
    QVERIFY(maxDiff(snap->result.nextTokenProbs, edited.nextTokenProbs) <= 1e-6);
    QVERIFY(maxDiff(snap->baseline->result.nextTokenProbs, plain.nextTokenProbs) <= 1e-6);
    QVERIFY(maxDiff(edited.nextTokenProbs, plain.nextTokenProbs) > 1e-3);
}

int main(int argc, char** argv) {
    nnscope::restartWithOpenBlasCoreType(argv);  // as nnscope does; the nnscope processes started below inherit it
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    GuardedApplication app(argc, argv);  // as nnscope's window: no exception leaves a slot
    TestGui test;
    return QTest::qExec(&test, argc, argv);
}

void TestGui::attributionView() {
    // The Attribution view shows the engine's direct logit attribution of the traced prompt: one bar per component,
    // the heads' shares, and the tokens a clicked component promotes. On the demo model the induction block writes the
    // repeated word.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    const QString prompt = "the cat sat on the mat . the cat";
    QVERIFY(startTraceDone(*w));
    QVERIFY(runFromPanel(*w, {prompt}));
    QCOMPARE(w->snapshot()->prompt(0), prompt);
    QVERIFY(w->showView("attribution"));
    AttributionView* av = w->attributionView();
    QVERIFY(viewJobsDone(*w));  // computed in the worker
    QVERIFY(av->attribution());  // the top prediction by default
    const Model& m = *w->model();
    TraceOptions o;
    o.save = attributionValueKeys(m);
    const TraceResult r = trace(m, encodeBatch(m, {prompt.toStdString()}), o);
    const int64_t top = r.nextTokenProbs[0].argmax().item<int64_t>();
    QVERIFY2(av->attribution()->target == top, qPrintable(QString("target %1 at position %2, top %3").arg(av->attribution()->target).arg(av->attribution()->position).arg(top)));
    av->setTarget("sat");
    QVERIFY(viewJobsDone(*w));
    const int64_t sat = parseTokenArgument(m, "sat", "t");
    const LogitAttribution ref = directLogitAttribution(m, r, 0, -1, sat);
    const LogitAttribution& got = *av->attribution();
    QCOMPARE(got.target, sat);
    QVERIFY(std::abs(got.logit - ref.logit) < 1e-5);
    const int L = static_cast<int>(m.config().numLayers);
    QCOMPARE(av->attentionBars()->data()->size(), L);
    QCOMPARE(av->mlpBars()->data()->size(), L);
    for (int i = 0; i < L; ++i) {
        QVERIFY(std::abs(av->attentionBars()->data()->at(i)->value - ref.attention[i].item<double>()) < 1e-5);
        QVERIFY(std::abs(av->mlpBars()->data()->at(i)->value - ref.mlp[i].item<double>()) < 1e-5);
    }
    QCOMPARE(av->headModel()->rowCount(), L);
    QCOMPARE(av->headModel()->columnCount(), static_cast<int>(m.config().numHeads));
    for (int i = 0; i < L; ++i)
        for (int h = 0; h < m.config().numHeads; ++h) QVERIFY(std::abs(av->headModel()->value(i, h) - ref.heads[i][h].item<double>()) < 1e-5);
    // the induction block's attention carries most of the repeated word's logit, and it is the bar selected first
    QVERIFY(ref.attention[1].item<double>() > 0.6 * ref.logit);
    QVERIFY(av->details()->toPlainText().contains("layers.1.attention_output"));
    QVERIFY(av->details()->toPlainText().contains("promotes"));
    QVERIFY(av->statusLabel()->text().contains("frozen"));
    // a head picked on the heatmap lists what it promotes
    emit av->headHeatmap()->cellClicked(1, 3);
    QVERIFY(av->details()->toPlainText().contains("layers.1.self_attn.head.3"));
    // a logit difference and another position
    av->setWrong("mat");
    QVERIFY(viewJobsDone(*w));
    QVERIFY(std::abs(av->attribution()->logit - directLogitAttribution(m, r, 0, -1, sat, parseTokenArgument(m, "mat", "w")).logit) < 1e-5);
    av->setPosition(2);
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(av->attribution()->position, int64_t{2});
    // a refused token says why, nothing is shown
    av->setTarget("no such words here");
    QVERIFY(viewJobsDone(*w));
    QVERIFY(!av->attribution());
    QVERIFY(av->statusLabel()->text().contains("target"));
    av->setTarget("sat");
    av->setWrong("");
    av->setPosition(-1);
    QVERIFY(viewJobsDone(*w));
    // its right-click offer ablates the head with the largest share
    QVERIFY(!av->interventionOffers().isEmpty());
    QVERIFY(av->interventionOffers().front().text.startsWith("layers.1.self_attn.attention_head_outputs"));
    const QString png = tmp_.filePath("attribution.png");
    QCOMPARE(w->exportPlotTo(png), QString());
    QCOMPARE(QImage(png).text("view.target"), QString("sat"));
}

void TestGui::generateView() {
    // The Generate view continues a prompt in the worker with the Interventions dock's edits at every step and shows the
    // unedited continuation beside; both equal the engine's generate(); a seed gives the engine's sampled text.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY(w->showView("generate"));
    GenerateView* gv = w->generateView();
    const QString prompt = "the cat sat on the mat . the cat";
    gv->setPrompt(prompt);
    gv->setMaxNewTokens(8);
    const QString edit = "layers.1.self_attn.attention_head_outputs[:, :, 3] = 0";
    QCOMPARE(w->addIntervention(edit), QString());
    QSignalSpy ended(w.get(), &MainWindow::generateEnded);
    QTest::mouseClick(gv->runButton(), Qt::LeftButton);
    QVERIFY(ended.wait(60000));
    QVERIFY2(gv->result(), qPrintable(gv->statusLabel()->text()));
    const Model& m = *w->model();
    const std::vector<int64_t> ids = encodeBatch(m, {prompt.toStdString()}).ids[0];
    GenerateOptions o;
    o.maxNewTokens = 8;
    o.eosTokenIds = stopTokenIds(m);
    auto list = std::make_shared<EditList>();
    addIntervention(*list, m, edit.toStdString());
    GenerateOptions edited = o;
    edited.intervention = list;
    QCOMPARE(gv->result()->edited.ids, generate(m, ids, edited).ids);
    QVERIFY(gv->result()->unedited);
    QCOMPARE(gv->result()->unedited->ids, generate(m, ids, o).ids);
    QVERIFY(gv->uneditedText()->isVisibleTo(gv));
    QVERIFY(gv->uneditedText()->toPlainText().contains(QString::fromStdString(m.tokenizer()->decode(generate(m, ids, o).ids, true)).section(' ', -3)));
    // sampled with a seed, without interventions: the engine's sampled text, and only one continuation shown
    w->interventionPanel()->clear();
    gv->setSampling(true, 1.5, 0, 1.0, 42);
    QTest::mouseClick(gv->runButton(), Qt::LeftButton);
    QVERIFY(ended.wait(60000));
    QVERIFY(gv->result() && !gv->result()->unedited);
    GenerateOptions s = o;
    s.sample = true;
    s.temperature = 1.5;
    s.topK = 0;
    s.seed = 42;
    QCOMPARE(gv->result()->edited.ids, generate(m, ids, s).ids);
    QVERIFY(!gv->uneditedText()->isVisibleTo(gv));
    QVERIFY(gv->statusLabel()->text().contains("seed 42"));
}

void TestGui::flowView() {
    // The Flow view draws the engine's information flow graph of the traced prompt; on the demo model the induction
    // head's edge from the token after the first " cat" into the last token is there.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    const QString prompt = "the cat sat on the mat . the cat";
    QVERIFY(runFromPanel(*w, {prompt}));
    FlowView* fv = w->flowView();
    QVERIFY(!fv->graph());  // computed when the tab is first shown
    QVERIFY(w->showView("flow"));
    QVERIFY(viewJobsDone(*w));  // in the worker
    QVERIFY2(fv->graph(), qPrintable(fv->statusLabel()->text()));
    const Model& m = *w->model();
    TraceOptions o;
    o.save = contributionValueKeys(m);
    const TraceResult r = trace(m, encodeBatch(m, {prompt.toStdString()}), o);
    const ContributionGraph ref = contributionGraph(m, r, 0);
    QCOMPARE(fv->graph()->edges.size(), ref.edges.size());
    bool induction = false;
    for (size_t k = 0; k < ref.edges.size(); ++k) {
        const auto& a = fv->graph()->edges[k];
        const auto& b = ref.edges[k];
        QVERIFY(a.kind == b.kind && a.layer == b.layer && a.from == b.from && a.to == b.to);
        QVERIFY(std::abs(a.weight - b.weight) < 1e-5);
        induction |= a.kind == ContributionEdge::Kind::Attention && a.layer == 1 && a.from == 3 && a.to == 9;
    }
    QVERIFY2(induction, "no block-1 attention edge from \" sat\" (3) into the last \" cat\" (9)");
    // a higher threshold keeps fewer edges, all above it
    fv->setThreshold(0.5);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(fv->graph()->edges.size() < ref.edges.size());
    for (const auto& e : fv->graph()->edges) QVERIFY(e.weight >= 0.5);
    fv->setPosition(3);
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(fv->graph()->position, int64_t{3});
    fv->setFitted(false);  // every token given room for its label
    QVERIFY(fv->canvas()->minimumWidth() > 10 * 40);
    fv->setFitted(true);
    QVERIFY(!fv->canvas()->grab().isNull());
}

void TestGui::headsView() {
    // The Heads view lists the engine's scores of every head; sorted by induction the demo's block 1 comes first, and a
    // double-click opens that head in the Attention view.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    const QString prompt = "tom and lily went to the park with a red ball . tom and lily went to the park with";
    QVERIFY(runFromPanel(*w, {prompt}));
    QVERIFY(w->showView("heads"));
    HeadsView* hv = w->headsView();
    QVERIFY(viewJobsDone(*w));  // the scores are computed in the worker
    const Model& m = *w->model();
    TraceOptions o;
    for (int i = 0; i < m.config().numLayers; ++i) o.save.push_back({Value::AttentionProbabilities, i});
    const auto ref = headScores(m, trace(m, encodeBatch(m, {prompt.toStdString()}), o), 0);
    QCOMPARE(hv->scores().size(), ref.size());
    QCOMPARE(hv->model()->rowCount(), static_cast<int>(ref.size()));
    for (size_t k = 0; k < ref.size(); ++k) QVERIFY(std::abs(hv->scores()[k].induction - ref[k].induction) < 1e-6);
    hv->sortBy(3);
    QCOMPARE(hv->model()->item(0, 0)->data(Qt::DisplayRole).toInt(), 1);  // block 1 holds the induction heads
    const int head = hv->model()->item(0, 1)->data(Qt::DisplayRole).toInt();
    QTest::qWait(50);  // the table laid out
    const QRect cell = hv->table()->visualRect(hv->model()->index(0, 2));
    QVERIFY2(cell.isValid(), "the first row is not on screen");
    QTest::mouseClick(hv->table()->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QTest::mouseDClick(hv->table()->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QCOMPARE(w->attentionView()->head(), head);
    QVERIFY(w->currentView() == w->attentionView());
    // #28: the first click on a score column sorts largest first; a second click reverses
    QVERIFY(w->showView("heads"));
    QTest::qWait(50);
    QHeaderView* header = hv->table()->horizontalHeader();
    const auto clickHeader = [&](int column) {
        QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier,
                          QPoint(header->sectionViewportPosition(column) + header->sectionSize(column) / 2, header->height() / 2));
    };
    const auto columnValues = [&](int column) {
        std::vector<double> v;
        for (int r = 0; r < hv->model()->rowCount(); ++r)
            v.push_back(hv->table()->model()->index(r, column).data(Qt::DisplayRole).toDouble());
        return v;
    };
    for (int column : {2, 4}) {
        clickHeader(column);
        QCOMPARE(header->sortIndicatorSection(), column);
        QCOMPARE(header->sortIndicatorOrder(), Qt::DescendingOrder);
        const std::vector<double> down = columnValues(column);
        QVERIFY(std::is_sorted(down.rbegin(), down.rend()));
        clickHeader(column);
        QCOMPARE(header->sortIndicatorOrder(), Qt::AscendingOrder);
    }
    // #28: each score's chance baseline (uniform causal attention on this prompt) is under its column's name
    const HeadScore chance = chanceScores(encodeBatch(m, {prompt.toStdString()}).ids[0]);
    QVERIFY(std::abs(hv->chance().induction - chance.induction) < 1e-12);
    QVERIFY2(hv->model()->horizontalHeaderItem(3)->text().contains(QString::number(chance.induction, 'f', 4)),
             qPrintable(hv->model()->horizontalHeaderItem(3)->text()));
    // #28: the standard induction test is one click away: 50 random tokens repeated, every head scored on them (the
    // engine's scores of the same sequence), the induction heads of block 1 far above chance; choosing the prompt
    // again goes back to its scores
    QVERIFY(hv->repeatedButton()->isEnabled());
    QTest::mouseClick(hv->repeatedButton(), Qt::LeftButton);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(hv->showsRepeatedRandomTokens());
    const std::vector<int64_t> ids = repeatedRandomTokens(m, HeadsView::kRandomLength, 0);
    const auto random = headScores(m, trace(m, batchFromIds({ids}), o), 0);
    QCOMPARE(hv->scores().size(), random.size());
    double best = 0;
    for (size_t k = 0; k < random.size(); ++k) {
        QVERIFY(std::abs(hv->scores()[k].induction - random[k].induction) < 1e-6);
        if (random[k].layer == 1) best = std::max(best, random[k].induction);
    }
    const double chanceRandom = chanceScores(ids).induction;
    QVERIFY(std::abs(hv->chance().induction - chanceRandom) < 1e-12);
    QVERIFY2(best > 10 * chanceRandom, qPrintable(QString("best block-1 induction %1, chance %2").arg(best).arg(chanceRandom)));
    QVERIFY(hv->overview()->grab().width() > 0);
    QVERIFY(hv->promptCombo()->count() >= 1);
    emit hv->promptCombo()->activated(0);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(!hv->showsRepeatedRandomTokens());
    for (size_t k = 0; k < ref.size(); ++k) QVERIFY(std::abs(hv->scores()[k].induction - ref[k].induction) < 1e-6);
}

// ---- attention at any length ----------------------------------------------------------------------------------

namespace {

/// A prompt of `tokens` tokens as `model` encodes it (its BOS included), made of repeated words.
QString promptOfLength(const Model& model, int tokens) {
    const QStringList words = {"the", "cat", "sat", "on", "a", "mat", "and", "the", "dog", "saw", "it"};
    const QStringList fillers = words + QStringList{"I", "x", "."};
    const auto count = [&](const QStringList& text) { return static_cast<int>(encodeBatch(model, {text.join(' ').toStdString()}).ids.at(0).size()); };
    QStringList text;
    int n = count(text);
    const int perSentence = count(words) - n;
    while (n + 2 * perSentence < tokens) {  // whole sentences while far from the length
        text << words;
        n = count(text);
    }
    for (bool grew = true; n < tokens && grew;) {  // then the first word that does not overshoot, one at a time
        grew = false;
        for (const QString& word : fillers) {
            const int m = count(text + QStringList{word});
            if (m <= tokens) {
                text << word;
                n = m;
                grew = true;
                break;
            }
        }
    }
    return text.join(' ');
}

/// How many pixels of `image` differ (by more than `tolerance` in a channel) from what they must show: pixel (x, y)
/// covers the cells' columns [c0 + x·nc/w, c0 + (x+1)·nc/w) and rows alike, and shows the largest of them on
/// `gradient` over `range` (log: at log(v / lower) / log(upper / lower), values below the range at its bottom).
int imageMismatches(const QImage& image, QRect cells, const torch::Tensor& values, QCPColorGradient gradient, QCPRange range,
                    bool log, QString* first, int tolerance = 4) {
    const torch::Tensor v = values.to(torch::kFloat32).contiguous();
    const float* data = v.data_ptr<float>();
    const int64_t stride = v.size(1);
    const int w = image.width(), h = image.height();
    int bad = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int ra = cells.y() + static_cast<int>(int64_t(y) * cells.height() / h), rb = cells.y() + static_cast<int>(int64_t(y + 1) * cells.height() / h);
            const int ca = cells.x() + static_cast<int>(int64_t(x) * cells.width() / w), cb = cells.x() + static_cast<int>(int64_t(x + 1) * cells.width() / w);
            double best = -std::numeric_limits<double>::infinity();
            for (int r = ra; r < rb; ++r)
                for (int c = ca; c < cb; ++c) best = std::max(best, static_cast<double>(data[r * stride + c]));
            double position = log ? (best <= range.lower ? 0 : std::log(best / range.lower) / std::log(range.upper / range.lower))
                                  : (best - range.lower) / range.size();
            position = std::clamp(position, 0.0, 1.0);
            const QColor want = QColor::fromRgb(gradient.color(position, QCPRange(0, 1))), got = image.pixelColor(x, y);
            if (std::abs(want.red() - got.red()) > tolerance || std::abs(want.green() - got.green()) > tolerance ||
                std::abs(want.blue() - got.blue()) > tolerance) {
                if (bad++ == 0 && first)
                    *first = QString("pixel (%1, %2) = %3, want %4 for %5 (cells %6..%7 x %8..%9)")
                                 .arg(x).arg(y).arg(got.name(), want.name()).arg(best).arg(ca).arg(cb - 1).arg(ra).arg(rb - 1);
            }
        }
    return bad;
}

/// A wheel turn of `notches` over `widget` at `pos`, sent as the window sends it: to the widget under the pointer
/// (which must be `widget`).
bool wheel(QWidget* widget, QPoint pos, int notches) {
    QWidget* window = widget->window();
    const QPoint inWindow = widget->mapTo(window, pos);
    QWidget* target = window->childAt(inWindow);
    if (target != widget) return false;
    QWheelEvent event(QPointF(pos), QPointF(widget->mapToGlobal(pos)), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(target, &event);
    return true;
}

/// A drag with the left button from `from` to `to` in `widget` (with `modifiers` held), through the window.
void drag(QWidget* widget, QPoint from, QPoint to, Qt::KeyboardModifiers modifiers = {}) {
    QWindow* window = widget->window()->windowHandle();
    const QPoint a = widget->mapTo(widget->window(), from), b = widget->mapTo(widget->window(), to);
    QTest::mousePress(window, Qt::LeftButton, modifiers, a);
    for (int i = 1; i <= 4; ++i) QTest::mouseMove(window, a + (b - a) * i / 4);
    QTest::mouseRelease(window, Qt::LeftButton, modifiers, b);
}

/// Right-clicks `widget` at `pos` through the window (the window picks the widget under the cursor and Qt makes the
/// context menu event, as on a desktop) and triggers the entry `label` of the menu that opens. Returns the entries
/// seen, empty when no menu opened.
QStringList rightClickMenu(QWidget* widget, QPoint pos, const QString& label) {
    QStringList seen;
    QTimer::singleShot(300, widget, [&] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        if (!menu) return;
        QAction* chosen = nullptr;
        for (QAction* a : menu->actions()) {
            seen << a->text();
            if (a->text() == label) chosen = a;
        }
        menu->close();
        if (chosen) chosen->trigger();
    });
    QTest::mouseClick(widget->window()->windowHandle(), Qt::RightButton, {}, widget->mapTo(widget->window(), pos));
    QTest::qWait(400);
    return seen;
}

}  // namespace

void TestGui::attentionAtAnyLength_data() {
    QTest::addColumn<int>("tokens");
    QTest::newRow("300 tokens") << 300;
    QTest::newRow("2048 tokens") << 2048;
}

void TestGui::attentionAtAnyLength() {
    // A long prompt's whole pattern is fitted to the view as one image whose pixels are the engine's probabilities
    // (each pixel the largest of the cells it covers); the wheel, a drag, Shift+drag zoom and pan it; Fit,
    // double-click and Home show the whole again; the token labels are thinned to what fits and all drawn once
    // zoomed in; hovering names both tokens and the value. Prints how long a head takes to draw.
    QFETCH(int, tokens);
    const QString dir = modelDir("tiny-llama");
    auto w = openWindow(dir);
    QVERIFY(w);
    w->resize(1600, 1000);
    const QString prompt = promptOfLength(*w->model(), tokens);
    QVERIFY(runFromPanel(*w, {prompt}));
    const int n = static_cast<int>(w->snapshot()->result.batch.ids.at(0).size());
    QCOMPARE(n, tokens);
    const Reference ref = engineTrace(dir, {prompt});
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    HeatmapPlot* hm = av->heatmap();
    QCustomPlot* plot = hm->plot();
    av->setBlock(1);
    av->setHead(0);
    QCoreApplication::processEvents();

    // Time to show another head: the matrix cut from the trace, the image, the labels, drawn.
    QElapsedTimer timer;
    timer.start();
    av->setHead(1);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const qint64 headMs = timer.elapsed();
    const torch::Tensor probs = ref.result.value({Value::AttentionProbabilities, 1})[0][1];

    // The whole pattern, as one image: every cell in the matrix drawn, every pixel the largest of its cells.
    QCOMPARE(hm->model()->columnCount(), n);
    QCOMPARE(hm->model()->rowCount(), n);
    for (const auto& [q, k] : std::vector<std::pair<int, int>>{{0, 0}, {n - 1, 0}, {n - 1, n - 1}, {n / 2, n / 3}, {n - 1, n / 2}})
        QVERIFY(std::fabs(hm->model()->value(q, k) - probs[q][k].item<double>()) <= 1e-6);
    QCOMPARE(hm->visibleCells(), QRect(0, 0, n, n));
    QCOMPARE(plot->plottableCount(), 1);  // one image, not a cell per item
    QCOMPARE(plot->itemCount(), 1);       // the selection mark only
    const QRect area = plot->axisRect()->rect();
    const QImage image = hm->colorMap()->lastImage();
    QCOMPARE(hm->colorMap()->lastImageCells(), QRect(0, 0, n, n));
    // one pixel per cell, or per screen pixel when the cells are smaller
    QVERIFY2(image.width() == std::min(n, area.width()) || image.width() == std::min(n, area.width() + 1), qPrintable(QString::number(image.width())));
    QVERIFY2(image.height() == std::min(n, area.height()) || image.height() == std::min(n, area.height() + 1), qPrintable(QString::number(image.height())));
    QString why;
    QVERIFY2(imageMismatches(image, QRect(0, 0, n, n), probs, hm->colorMap()->gradient(), QCPRange(0, 1), false, &why) == 0, qPrintable(why));

    // The labels: thinned to what fits, the whole prompt in view.
    auto* rowTicks = dynamic_cast<TokenTicker*>(plot->yAxis->ticker().data());
    QVERIFY(rowTicks);
    QCOMPARE(rowTicks->ticks().size(), n);  // every token's label is there to be drawn
    const int lineHeight = QFontMetrics(plot->yAxis->tickLabelFont()).height();
    QVERIFY2(plot->yAxis->tickVector().size() < n && plot->yAxis->tickVector().size() <= area.height() / lineHeight + 1,
             qPrintable(QString("%1 row labels for %2 tokens in %3 px").arg(plot->yAxis->tickVector().size()).arg(n).arg(area.height())));
    QVERIFY(plot->xAxis->tickVector().size() < n);
    for (int i = 1; i < plot->yAxis->tickVector().size(); ++i)  // labels never overlap
        QVERIFY(std::fabs(plot->yAxis->coordToPixel(plot->yAxis->tickVector()[i]) - plot->yAxis->coordToPixel(plot->yAxis->tickVector()[i - 1])) >= lineHeight);
    const QString labelled = plot->yAxis->tickVectorLabels().value(1);  // a thinned label says where it is
    QCOMPARE(labelled, QString("%1 %2").arg(plot->yAxis->tickVector().value(1)).arg(rowTicks->ticks().value(plot->yAxis->tickVector().value(1))));

    // The wheel zooms about the cursor (one notch in, then more), Fit shows the whole again.
    const QPoint centre = hm->cellCenter(n / 2, n / 4);
    timer.restart();
    QVERIFY(wheel(plot, centre, 1));
    const qint64 zoomMs = timer.elapsed();
    QRect seen = hm->visibleCells();
    QVERIFY2(seen.width() < n && seen.height() < n && seen.contains(n / 4, n / 2), qPrintable(QString("%1 %2 %3 %4").arg(seen.x()).arg(seen.y()).arg(seen.width()).arg(seen.height())));
    QVERIFY(av->fitButton()->isEnabled());
    QTest::mouseClick(av->fitButton(), Qt::LeftButton);
    QCOMPARE(hm->visibleCells(), QRect(0, 0, n, n));
    QVERIFY(!av->fitButton()->isEnabled());
    // ... and double-click and Home too.
    QVERIFY(wheel(plot, centre, 3));
    QVERIFY(hm->visibleCells().width() < n);
    QTest::mouseDClick(plot, Qt::LeftButton, {}, centre);
    QCOMPARE(hm->visibleCells(), QRect(0, 0, n, n));
    QVERIFY(wheel(plot, centre, 2));
    plot->setFocus();
    QTest::keyClick(plot, Qt::Key_Home);
    QCOMPARE(hm->visibleCells(), QRect(0, 0, n, n));

    // Shift+drag: the rectangle's cells fill the view.
    const int q0 = n / 4, q1 = q0 + 12, k0 = n / 8, k1 = k0 + 12;
    const QPoint from(qRound(plot->xAxis->coordToPixel(k0 - 0.3)), qRound(plot->yAxis->coordToPixel(q0 - 0.3)));
    const QPoint to(qRound(plot->xAxis->coordToPixel(k1 + 0.3)), qRound(plot->yAxis->coordToPixel(q1 + 0.3)));
    drag(plot, from, to, Qt::ShiftModifier);
    seen = hm->visibleCells();
    const int slackX = 1 + n / area.width(), slackY = 1 + n / area.height();  // the mouse lands on whole pixels
    QVERIFY2(std::abs(seen.left() - k0) <= slackX && std::abs(seen.right() - k1) <= slackX && std::abs(seen.top() - q0) <= slackY &&
                 std::abs(seen.bottom() - q1) <= slackY,
             qPrintable(QString("rectangle %1..%2 x %3..%4, view %5..%6 x %7..%8").arg(k0).arg(k1).arg(q0).arg(q1)
                            .arg(seen.left()).arg(seen.right()).arg(seen.top()).arg(seen.bottom())));
    // Zoomed in, every token in view is labelled with its own text, and the image holds just these cells.
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(rowTicks->step(), 1);
    QCOMPARE(plot->yAxis->tickVector().size(), seen.height());
    for (int i = 0; i < seen.height(); ++i) {
        QCOMPARE(plot->yAxis->tickVector()[i], double(seen.top() + i));
        QCOMPARE(plot->yAxis->tickVectorLabels()[i], rowTicks->ticks().value(seen.top() + i));
    }
    QVERIFY(hm->colorMap()->lastImageCells().contains(seen));
    QVERIFY2(imageMismatches(hm->colorMap()->lastImage(), hm->colorMap()->lastImageCells(), probs, hm->colorMap()->gradient(), QCPRange(0, 1), false, &why) == 0,
             qPrintable(why));

    // A drag pans: the content follows the mouse (dragged left and up: later keys and queries come into view).
    const QRect before = hm->visibleCells();
    const double cellW = plot->xAxis->coordToPixel(1) - plot->xAxis->coordToPixel(0), cellH = plot->yAxis->coordToPixel(1) - plot->yAxis->coordToPixel(0);
    timer.restart();
    drag(plot, area.center(), area.center() - QPoint(qRound(3 * cellW), qRound(2 * cellH)));
    const qint64 panMs = timer.elapsed();
    seen = hm->visibleCells();
    QVERIFY2(std::abs(seen.left() - (before.left() + 3)) <= 1 && std::abs(seen.top() - (before.top() + 2)) <= 1 && seen.size() == before.size(),
             qPrintable(QString("from %1,%2 to %3,%4").arg(before.left()).arg(before.top()).arg(seen.left()).arg(seen.top())));
    // Another head keeps the view, and its image is that head's.
    av->setHead(2);
    QCOMPARE(hm->visibleCells(), seen);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(imageMismatches(hm->colorMap()->lastImage(), hm->colorMap()->lastImageCells(), ref.result.value({Value::AttentionProbabilities, 1})[0][2],
                             hm->colorMap()->gradient(), QCPRange(0, 1), false, &why) == 0, qPrintable(why));

    // Hovering a cell names the query and the key with their positions, and the probability.
    const int q = seen.top() + 2, k = std::min(seen.left() + 1, q);
    QTest::mouseMove(plot, hm->cellCenter(q, k));
    const QString hover = hm->hoverText();
    const QStringList& labels = w->snapshot()->tokens.at(0);
    const double p = ref.result.value({Value::AttentionProbabilities, 1})[0][2][q][k].item<double>();
    QVERIFY2(hover.contains(QString("query %1 “%2”").arg(q).arg(labels[q])) && hover.contains(QString("key %1 “%2”").arg(k).arg(labels[k])) &&
                 hover.contains(QString::number(p, 'g', 6)),
             qPrintable(hover));

    // The neuron view's one-neuron plot thins its token labels the same way.
    QVERIFY(w->showView("neurons"));
    QCustomPlot* bars = w->neuronView()->neuronBars()->parentPlot();
    bars->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(dynamic_cast<TokenTicker*>(bars->xAxis->ticker().data()));
    const int barLine = QFontMetrics(bars->xAxis->tickLabelFont()).height();
    QVERIFY2(bars->xAxis->tickVector().size() < n && bars->xAxis->tickVector().size() <= bars->axisRect()->width() / barLine + 1,
             qPrintable(QString("%1 labels for %2 bars in %3 px").arg(bars->xAxis->tickVector().size()).arg(n).arg(bars->axisRect()->width())));

    qInfo().noquote() << QString("attention at %1 tokens: a head drawn in %2 ms, a wheel zoom in %3 ms, a pan (4 moves) in %4 ms")
                             .arg(n).arg(headMs).arg(zoomMs).arg(panMs);
    QVERIFY2(headMs < 3000 && zoomMs < 1000 && panMs < 2000, "the view is not interactive at this length");
}

void TestGui::attentionShowsTheSink() {
    // gpt-oss: the attention view adds a "sink" column holding 1 - each row's sum (the share transformers drops with the
    // sink's column), and the heads view shows sink_share; a family without sinks has neither.
    auto w = openWindow(modelDir("tiny-gpt-oss"));
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(runFromPanel(*w, {"Tom and Lily went to the park."}), qPrintable(w->errorText()));
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    av->setBlock(0);
    av->setHead(1);
    const torch::Tensor probs = w->snapshot()->result.value({Value::AttentionProbabilities, 0})[0][1].to(torch::kFloat64);
    const int n = static_cast<int>(probs.size(0));
    const MatrixModel* mm = av->matrixModel();
    QCOMPARE(mm->columnCount(), n + 1);
    QCOMPARE(mm->headerData(n, Qt::Horizontal, Qt::DisplayRole).toString(), QString("sink"));
    double largest = 0;
    for (int q = 0; q < n; ++q) {
        const double share = 1 - probs[q].sum().item<double>();
        QVERIFY2(std::abs(mm->value(q, n) - share) < 1e-6, qPrintable(QString("row %1: %2 vs %3").arg(q).arg(mm->value(q, n)).arg(share)));
        QVERIFY(std::abs(mm->value(q, 0) - probs[q][0].item<double>()) < 1e-6);  // the keys unchanged
        largest = std::max(largest, share);
    }
    QVERIFY(largest > 1e-2);  // the sink takes a visible share somewhere
    QVERIFY(w->showView("heads"));
    QVERIFY(viewJobsDone(*w));
    QVERIFY(!w->headsView()->table()->isColumnHidden(6));
    QCOMPARE(w->headsView()->model()->headerData(6, Qt::Horizontal).toString(), QString("sink_share"));

    auto llama = openWindow(modelDir("tiny-llama"));
    QVERIFY(llama);
    QVERIFY(startTraceDone(*llama));
    QVERIFY(runFromPanel(*llama, {"Tom and Lily went to the park."}));
    QVERIFY(llama->showView("attention"));
    llama->attentionView()->setHead(1);
    QCOMPARE(llama->attentionView()->matrixModel()->columnCount(),
             static_cast<int>(llama->snapshot()->result.value({Value::AttentionProbabilities, 0}).size(-1)));
    QVERIFY(llama->showView("heads"));
    QVERIFY(viewJobsDone(*llama));
    QVERIFY(llama->headsView()->table()->isColumnHidden(6));
}

void TestGui::attentionLogScale() {
    // The log colour scale: a cell's colour sits at log(p / 1e-5) / log(1 / 1e-5) of the gradient (the masked future
    // keys, p = 0, at its bottom); the linear one at p. Read from the pixels drawn in the window.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY(runFromPanel(*w, {demoPrompt()}));
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    HeatmapPlot* hm = av->heatmap();
    av->setBlock(kDemoInductionBlock);
    av->setHead(1);
    const torch::Tensor probs = w->snapshot()->result.value({Value::AttentionProbabilities, kDemoInductionBlock})[0][1];
    const int n = static_cast<int>(probs.size(0));
    QCPColorGradient gradient = hm->colorMap()->gradient();
    QString why;
    // a cell whose two colours differ a lot, so that the test tells the scales apart
    int q = n - 1, k = 1;
    for (int c = 0; c < n; ++c) {
        const double v = probs[n - 1][c].item<double>();
        if (v > 1e-3 && v < 0.05) k = c;
    }
    const auto pixelAt = [&](int row, int column) {
        const QPoint p = hm->cellCenter(row, column);
        hm->plot()->replot(QCustomPlot::rpImmediateRefresh);
        return hm->plot()->grab().toImage().pixelColor(p);  // what the window shows
    };
    const auto near = [](QColor a, QColor b) {
        return std::abs(a.red() - b.red()) <= 4 && std::abs(a.green() - b.green()) <= 4 && std::abs(a.blue() - b.blue()) <= 4;
    };
    const double v = probs[q][k].item<double>();
    const QColor linear = QColor::fromRgb(gradient.color(v, QCPRange(0, 1)));
    const QColor logColour = QColor::fromRgb(gradient.color(std::log(v / 1e-5) / std::log(1e5), QCPRange(0, 1)));
    QVERIFY2(!near(linear, logColour), "pick a cell whose colours differ");
    QVERIFY2(near(pixelAt(q, k), linear), qPrintable(pixelAt(q, k).name() + " vs " + linear.name()));
    QVERIFY2(imageMismatches(hm->colorMap()->lastImage(), hm->colorMap()->lastImageCells(), probs, gradient, QCPRange(0, 1), false, &why) == 0, qPrintable(why));

    QTest::mouseClick(av->logCheck(), Qt::LeftButton);
    QVERIFY(av->logScale());
    QCOMPARE(hm->colorMap()->dataScaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(hm->colorMap()->colorScale()->axis()->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(av->settings().value("view.scale"), QString("log"));
    QVERIFY2(near(pixelAt(q, k), logColour), qPrintable(pixelAt(q, k).name() + " vs " + logColour.name()));
    QVERIFY2(near(pixelAt(0, n - 1), QColor::fromRgb(gradient.color(0, QCPRange(0, 1)))), "a masked key is not at the bottom of the scale");
    QVERIFY2(imageMismatches(hm->colorMap()->lastImage(), hm->colorMap()->lastImageCells(), probs, gradient, QCPRange(1e-5, 1), true, &why) == 0, qPrintable(why));
    QTest::mouseClick(av->logCheck(), Qt::LeftButton);
    QVERIFY(near(pixelAt(q, k), linear));
    QCOMPARE(av->settings().value("view.scale"), QString("linear"));

    // Under a dark palette the plot's background, axes, labels and title follow it.
    const QPalette light = QApplication::palette();
    const QPalette dark = nnscope::darkPalette();  // what --color-scheme dark gives
    QApplication::setPalette(dark);
    QCoreApplication::processEvents();
    QCustomPlot* plot = hm->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    const QImage shot = plot->grab().toImage();
    QCOMPARE(shot.pixelColor(2, 2), dark.color(QPalette::Base));  // the corner, outside the axes
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis, hm->colorMap()->colorScale()->axis()}) {
        QCOMPARE(axis->tickLabelColor(), dark.color(QPalette::Text));
        QCOMPARE(axis->labelColor(), dark.color(QPalette::Text));
        QCOMPARE(axis->basePen().color(), dark.color(QPalette::Text));
    }
    // the labels are drawn in the text colour: some pixels left of the plot (the row labels) are light
    int lightPixels = 0;
    for (int y = plot->axisRect()->top(); y < plot->axisRect()->bottom(); ++y)
        for (int x = 0; x < plot->axisRect()->left() - 4; ++x) lightPixels += qGray(shot.pixel(x, y)) > 150;
    QVERIFY2(lightPixels > 50, qPrintable(QString("%1 light pixels among the row labels").arg(lightPixels)));
    QApplication::setPalette(light);
    QCoreApplication::processEvents();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(plot->grab().toImage().pixelColor(2, 2), light.color(QPalette::Base));  // and back
}

void TestGui::contextMenuFromPlots() {
    // A right-click on the attention heatmap (on a cell), on the grid of heads and on the neuron heatmap opens the
    // view's menu, made by Qt from the mouse press in the window as on a desktop, and its entry adds the intervention.
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY2(w->diagramPanel()->header()->text().contains("Grouped-query attention"),  // 4 query heads over 2 kv heads
             qPrintable(w->diagramPanel()->header()->text()));
    w->resize(1600, 1000);
    QVERIFY(runFromPanel(*w, {"the cat sat on the mat and the dog saw it"}));
    InterventionPanel* panel = w->interventionPanel();
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    av->setBlock(1);
    av->setHead(2);
    QCustomPlot* plot = av->heatmap()->plot();
    const QPoint cell = av->heatmap()->cellCenter(5, 2);
    QCOMPARE(w->childAt(plot->mapTo(w.get(), cell)), static_cast<QWidget*>(plot));  // the plot is what is under the mouse
    QStringList seen = rightClickMenu(plot, cell, "Zero-ablate head 2 of block 1");
    QVERIFY2(seen.contains("Zero-ablate head 2 of block 1"), qPrintable("menu: " + seen.join(" | ")));
    QCOMPARE(panel->active(), QStringList{"layers.1.self_attn.attention_head_outputs[:, :, 2] = 0"});

    av->setHead(-1);
    QCustomPlot* grid = av->grid()->plot();
    const QPoint tile = av->grid()->cellCenter(1, 4, 1);
    QCOMPARE(w->childAt(grid->mapTo(w.get(), tile)), static_cast<QWidget*>(grid));
    seen = rightClickMenu(grid, tile, "Zero-ablate head 1 of block 1");
    QVERIFY2(seen.contains("Zero-ablate head 0 of block 1"), qPrintable("menu: " + seen.join(" | ")));
    QVERIFY(panel->active().contains("layers.1.self_attn.attention_head_outputs[:, :, 1] = 0"));

    QVERIFY(w->showView("neurons"));
    NeuronView* nv = w->neuronView();
    nv->setBlock(0);
    nv->setNeuron(7);
    const QPoint neuronCell = nv->heatmap()->cellCenter(3, 7);
    seen = rightClickMenu(nv->heatmap()->plot(), neuronCell, "Zero neuron 7 of block 0");
    QVERIFY2(seen.contains("Zero neuron 7 of block 0"), qPrintable("menu: " + seen.join(" | ")));
    QVERIFY(panel->active().contains("layers.0.mlp.mlp_neurons[:, :, 7] = 0"));
}

// ---- every head at once; the prompt as coloured text -------------------------------------------------------------

namespace {
/// Clicks (or moves the mouse onto) `pos` of `widget` through its window, as a user's pointer does.
void clickThroughWindow(QWidget* widget, QPoint pos) {
    QTest::mouseClick(widget->window()->windowHandle(), Qt::LeftButton, {}, widget->mapTo(widget->window(), pos));
}
void moveThroughWindow(QWidget* widget, QPoint pos) {
    QTest::mouseMove(widget->window()->windowHandle(), widget->mapTo(widget->window(), pos));
}
bool sameColour(QColor a, QColor b, int tolerance = 2) {
    return std::abs(a.red() - b.red()) <= tolerance && std::abs(a.green() - b.green()) <= tolerance && std::abs(a.blue() - b.blue()) <= tolerance;
}
}  // namespace

void TestGui::headOverview() {
    // The Heads view's layers × heads overview: each thumbnail's pixels are the engine's pattern (one pixel per cell on
    // the demo prompt, pooled to the largest probability on a 300-token one) and are what the screen shows; the demo's
    // induction head ranks first by induction (sorting the table marks the overview by that score); choosing a row
    // outlines its thumbnail; clicking a thumbnail opens that block and head in the Attention view.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(startTraceDone(*w));
    const Model& m = *w->model();
    const QStringList prompts = {demoPrompt(), promptOfLength(m, 300)};
    QVERIFY(runFromPanel(*w, prompts));
    QVERIFY(w->showView("heads"));
    HeadsView* hv = w->headsView();
    HeadOverview* ov = hv->overview();
    QVERIFY(viewJobsDone(*w));  // the scores computed in the worker
    QTest::qWait(100);  // laid out and painted
    const Reference ref = engineTrace(demoModelDir(), prompts);
    const int blocks = static_cast<int>(m.config().numLayers), heads = static_cast<int>(m.config().numHeads);
    QCOMPARE(ov->blocks(), blocks);
    QCOMPARE(ov->heads(), heads);
    for (int row : {0, 1}) {
        hv->setPrompt(row);
        QVERIFY(viewJobsDone(*w));
        QTest::qWait(50);
        const QImage screen = ov->grab().toImage();
        for (int b = 0; b < blocks; ++b) {
            const torch::Tensor pattern = attentionPattern(*ref.model, ref.result, b, row);
            const int n = static_cast<int>(pattern.size(1));
            for (int h = 0; h < heads; ++h) {
                const QImage& image = ov->thumbnail(b, h);
                QCOMPARE(image.width(), std::min(n, ov->tileSize()));
                QString first;
                const int bad = imageMismatches(image, QRect(0, 0, n, n), pattern.index({h}), probabilityGradient(), QCPRange(0, 1), false, &first);
                QVERIFY2(bad == 0, qPrintable(QString("prompt %1, block %2, head %3: %4 pixels differ; %5").arg(row).arg(b).arg(h).arg(bad).arg(first)));
                // on screen: the centre of each image pixel, drawn scaled to the tile
                const QRect tile = ov->tileRect(b, h);
                const double scale = static_cast<double>(tile.width()) / image.width();
                for (int y = 0; y < image.height(); y += std::max(1, image.height() / 7))
                    for (int x = 0; x < image.width(); x += std::max(1, image.width() / 7)) {
                        const QPoint at(tile.left() + static_cast<int>((x + 0.5) * scale), tile.top() + static_cast<int>((y + 0.5) * scale));
                        QVERIFY2(sameColour(screen.pixelColor(at), image.pixelColor(x, y)),
                                 qPrintable(QString("block %1 head %2 pixel (%3, %4) on screen %5, image %6").arg(b).arg(h).arg(x).arg(y)
                                                .arg(screen.pixelColor(at).name(), image.pixelColor(x, y).name())));
                    }
            }
        }
    }
    QVERIFY(ov->tileSize() < 300);  // the long prompt's thumbnails were pooled

    // The engine's induction scores rank block 1's head first; sorting the table by induction marks the overview by it.
    hv->setPrompt(0);
    QVERIFY(viewJobsDone(*w));
    const auto scores = headScores(*ref.model, ref.result, 0);
    const auto best = std::max_element(scores.begin(), scores.end(), [](const HeadScore& a, const HeadScore& b) { return a.induction < b.induction; });
    QCOMPARE(best->layer, kDemoInductionBlock);
    hv->sortBy(2);  // previous_token, then induction
    QCOMPARE(ov->markScore(), 0);
    hv->sortBy(3);
    QCOMPARE(ov->markScore(), 1);
    QCOMPARE(hv->markCombo()->currentText(), QString("induction"));
    QCOMPARE(ov->ranking().front(), std::make_pair(best->layer, best->head));
    QCOMPARE(hv->model()->item(0, 0)->data(Qt::DisplayRole).toInt(), best->layer);
    QCOMPARE(hv->model()->item(0, 1)->data(Qt::DisplayRole).toInt(), best->head);
    for (const HeadScore& s : scores) QVERIFY(std::abs(ov->markValue(s.layer, s.head) - s.induction) < 1e-9);

    // a row chosen in the table outlines its head
    QTest::qWait(50);
    const int row = hv->rowOf(0, 2);
    QVERIFY(row >= 0);
    clickThroughWindow(hv->table()->viewport(), hv->table()->visualRect(hv->model()->index(row, 2)).center());
    QCOMPARE(ov->selectedLayer(), 0);
    QCOMPARE(ov->selectedHead(), 2);

    // a click on a thumbnail opens that head in the Attention view, and selects its row
    const int b = 1, h = best->head == 0 ? 1 : 0;
    clickThroughWindow(ov, ov->tileRect(b, h).center());
    QVERIFY(w->currentView() == w->attentionView());
    QCOMPARE(w->attentionView()->block(), b);
    QCOMPARE(w->attentionView()->head(), h);
    QCOMPARE(hv->table()->currentIndex().row(), hv->rowOf(b, h));

    // 16 blocks × 16 heads at 512 tokens: building every thumbnail and painting the overview takes a fraction of a second
    HeadOverview big;
    big.resize(1000, 900);
    const torch::Tensor causal = torch::ones({512, 512}).tril().log();  // -inf above the diagonal
    const torch::Tensor pattern = torch::softmax(torch::randn({16, 512, 512}) + causal, -1);
    const auto source = [&](int) { return pattern.clone(); };  // the copy attentionPattern makes of each block's value
    big.setPatterns(source, 16, 16, 512);
    QElapsedTimer timer;
    timer.start();
    big.thumbnail(0, 0);
    const QImage painted = big.grab().toImage();
    const qint64 ms = timer.elapsed();
    qInfo("overview of 16 x 16 heads at 512 tokens: thumbnails of %d px built and painted in %lld ms", big.tileSize(), static_cast<long long>(ms));
    QVERIFY2(ms < 2000, qPrintable(QString("%1 ms").arg(ms)));  // generous: the CI machine is shared
    QVERIFY(!painted.isNull());
}

void TestGui::textView() {
    // The Text view shows every prompt as wrapped tokens, one prompt under another; hovering a token selects it, and
    // each token's colour on screen is the colour of the engine's value on the legend's scale: the attention from the
    // selected token (one head, then the head mean), to it, a neuron's activation, and the layer_output norm.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(startTraceDone(*w));
    const QStringList prompts = {demoPrompt(), "lily saw a red ball"};
    QVERIFY(runFromPanel(*w, prompts));
    QVERIFY(w->showView("text"));
    TextView* tv = w->textView();
    TokenText* tt = tv->tokenText();
    const Reference ref = engineTrace(demoModelDir(), prompts);
    const auto scores = headScores(*ref.model, ref.result, 0);
    const auto induction = *std::max_element(scores.begin(), scores.end(), [](const HeadScore& a, const HeadScore& b) { return a.induction < b.induction; });
    tv->setBlock(induction.layer);
    tv->setHead(induction.head);
    // #28: the Text view follows the head the Attention view shows (the grid of every head: the heads' mean)
    const int heads = static_cast<int>(w->model()->config().numHeads);
    w->attentionView()->setHead(-1);
    QCOMPARE(tv->head(), -1);
    w->attentionView()->setHead((induction.head + 1) % heads);
    QCOMPARE(tv->head(), (induction.head + 1) % heads);
    w->attentionView()->setHead(induction.head);
    QCOMPARE(tv->head(), induction.head);
    tv->setMode(TextView::Mode::AttentionFrom);
    QTest::qWait(100);
    const QStringList& tokens = w->snapshot()->tokens.at(0);
    const int n = static_cast<int>(tokens.size());
    QCOMPARE(tt->prompts().size(), size_t(2));
    QVERIFY(tt->tokenRect(1, 0).top() > tt->tokenRect(0, n - 1).bottom());  // the second prompt under the first

    // The second "park": an induction head attends from it to what followed the first one ("with").
    int park = -1;
    for (int i = 0; i < n; ++i)
        if (QString(tokens[i]).remove(QStringLiteral("␣")) == "park") park = i;
    QVERIFY(park > 0);
    moveThroughWindow(tt, tt->tokenRect(0, 2).center());
    moveThroughWindow(tt, tt->tokenRect(0, park).center());
    QCOMPARE(tv->selectedToken(0), park);
    QVERIFY2(tv->statusText().contains(QString("position %1").arg(park)) && tv->statusText().contains(tokens[park]), qPrintable(tv->statusText()));

    // Each token's colour on screen against the engine's value; the scale runs from 0 to the largest value shown.
    const auto check = [&](const std::vector<torch::Tensor>& expected, bool symmetric, const QString& what) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (const auto& e : expected) {
            lo = std::min(lo, e.min().item<double>());
            hi = std::max(hi, e.max().item<double>());
        }
        const QCPRange range = tt->range();
        if (symmetric) {
            QVERIFY2(std::abs(range.upper - std::max(std::abs(lo), std::abs(hi))) < 1e-5 && std::abs(range.lower + range.upper) < 1e-9, qPrintable(what));
        } else {
            QVERIFY2(std::abs(range.lower) < 1e-12 && std::abs(range.upper - hi) < 1e-5, qPrintable(what + QString(": range %1..%2, max %3").arg(range.lower).arg(range.upper).arg(hi)));
        }
        QVERIFY2(tv->legend()->text().contains(QString::number(range.upper, 'g', 4)), qPrintable(tv->legend()->text()));
        QCPColorGradient gradient = tt->gradient();
        const QImage screen = tt->grab().toImage();
        for (size_t r = 0; r < expected.size(); ++r) {
            const torch::Tensor e = expected[r].to(torch::kFloat64).contiguous();
            QCOMPARE(static_cast<int64_t>(tt->prompts()[r].values.size()), e.numel());
            for (int i = 0; i < e.numel(); ++i) {
                const double v = e[i].item<double>();
                const double shown = tt->prompts()[r].values[static_cast<size_t>(i)];
                QVERIFY2(std::abs(shown - v) <= 1e-5 * std::max(1.0, std::abs(v)),
                         qPrintable(what + QString(" value %1/%2: %3, the engine's %4").arg(r).arg(i).arg(shown, 0, 'g', 9).arg(v, 0, 'g', 9)));
                const QColor want = QColor::fromRgb(gradient.color(v, range)), got = screen.pixelColor(tt->fillPoint(static_cast<int>(r), i));
                QVERIFY2(sameColour(got, want), qPrintable(what + QString(": prompt %1 token %2 (%3) is %4, want %5").arg(r).arg(i).arg(v).arg(got.name(), want.name())));
            }
            // the colour's intensity follows the value: of two tokens the larger value is the darker (sequential scales)
            if (!symmetric)
                for (int i = 0; i + 1 < e.numel(); ++i)
                    for (int j = i + 1; j < e.numel(); ++j) {
                        const double a = e[i].item<double>(), c = e[j].item<double>();
                        if (std::abs(a - c) < 0.02 * range.upper) continue;
                        const double la = screen.pixelColor(tt->fillPoint(static_cast<int>(r), i)).lightnessF();
                        const double lc = screen.pixelColor(tt->fillPoint(static_cast<int>(r), j)).lightnessF();
                        QVERIFY2((a > c) == (la < lc), qPrintable(what + QString(": tokens %1 and %2").arg(i).arg(j)));
                    }
        }
    };
    const int L = induction.layer, H = induction.head;
    const int last1 = static_cast<int>(w->snapshot()->tokens.at(1).size()) - 1;  // the second prompt keeps its last token
    const torch::Tensor a0 = attentionPattern(*ref.model, ref.result, L, 0), a1 = attentionPattern(*ref.model, ref.result, L, 1);
    QVERIFY2(tv->statusText().contains(QString("value %1").arg(a0[H][park][park].item<double>(), 0, 'g', 5)), qPrintable(tv->statusText()));
    check({a0.index({H, park}), a1.index({H, last1})}, false, "attention from");
    // the induction head's strongest key from the second "park" is the token after the first "park"
    QCOMPARE(a0.index({H, park}).argmax().item<int64_t>(), static_cast<int64_t>(tokens.indexOf(tokens[park]) + 1));
    tv->setHead(-1);
    check({a0.mean(0).index({park}), a1.mean(0).index({last1})}, false, "attention from, mean over heads");
    tv->setHead(H);
    tv->setMode(TextView::Mode::AttentionTo);
    check({a0.index({H, Slice(), park}), a1.index({H, Slice(), last1})}, false, "attention to");

    // a click keeps the selection while the mouse moves on
    clickThroughWindow(tt, tt->tokenRect(0, 3).center());
    QVERIFY(tv->locked());
    moveThroughWindow(tt, tt->tokenRect(0, 5).center());
    QCOMPARE(tv->selectedToken(0), 3);
    check({a0.index({H, Slice(), 3}), a1.index({H, Slice(), last1})}, false, "attention to a clicked token");

    tv->setMode(TextView::Mode::Neuron);
    tv->setNeuron(17);
    const torch::Tensor n0 = neuronActivations(*ref.model, ref.result, L, 0), n1 = neuronActivations(*ref.model, ref.result, L, 1);
    check({n0.index({Slice(), 17}), n1.index({Slice(), 17})}, true, "neuron 17");

    tv->setMode(TextView::Mode::Norm);
    QCOMPARE(tv->normKey()->value, Value::LayerOutput);
    const ValueKey out{Value::LayerOutput, L};
    check({promptValue(*ref.model, ref.result, out, 0).norm(2, -1), promptValue(*ref.model, ref.result, out, 1).norm(2, -1)}, false,
          "layer_output norm");
}

void TestGui::widgetViewsExport() {
    // The views drawn by widgets of their own (Text, Heads overview, Flow) export as they are drawn: the PNG holds the
    // widget's pixels above the caption.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(startTraceDone(*w));
    const std::vector<std::pair<QString, std::function<QWidget*()>>> views = {
        {"text", [&] { return static_cast<QWidget*>(w->textView()->tokenText()); }},
        {"heads", [&] { return static_cast<QWidget*>(w->headsView()->overview()); }},
        {"flow", [&] { return w->flowView()->canvas(); }}};
    for (const auto& [name, widget] : views) {
        QVERIFY(w->showView(name));
        QVERIFY(viewJobsDone(*w));  // the head scores and the Flow graph are computed in the worker
        QCoreApplication::processEvents();
        const QString path = tmp_.filePath("export-" + name + ".png");
        QCOMPARE(w->exportPlotTo(path), QString());
        const QImage image = QImage(path).convertToFormat(QImage::Format_RGB32);
        const QImage drawn = widget()->grab().toImage().convertToFormat(QImage::Format_RGB32);
        QVERIFY2(!drawn.isNull() && image.width() == drawn.width() && image.height() > drawn.height(),
                 qPrintable(QString("%1: exported %2x%3, widget %4x%5").arg(name).arg(image.width()).arg(image.height()).arg(drawn.width()).arg(drawn.height())));
        int differ = 0, coloured = 0;
        for (int y = 0; y < drawn.height(); ++y)
            for (int x = 0; x < drawn.width(); ++x) {
                const QRgb a = image.pixel(x, y), b = drawn.pixel(x, y);  // the export antialiases edges: a small tolerance
                differ += std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))}) > 48;
                coloured += QColor(drawn.pixel(x, y)).saturation() > 60;
            }
        QVERIFY2(differ <= drawn.width() * drawn.height() / 100, qPrintable(QString("%1: %2 pixels differ").arg(name).arg(differ)));
        QVERIFY2(coloured > 50, qPrintable(name + ": nothing drawn"));
        QCOMPARE(QImage(path).text("view"), name);
    }
}

// ---- pinned cards and trace files ---------------------------------------------------------------------------------

namespace {

/// The matrix a heatmap draws (its MatrixModel) as a [rows, columns] tensor.
torch::Tensor mapTensor(const HeatmapPlot* plot) {
    const MatrixModel* m = plot->model();
    const int cols = m->columnCount(), rows = m->rowCount();
    torch::Tensor t = torch::zeros({rows, cols}, torch::kFloat64);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) t[r][c] = m->value(r, c);
    return t;
}

/// Clicks a tool button whose menu pops up and triggers the entry named `objectName`; false when it was not there.
bool chooseFromButtonMenu(QToolButton* button, const QString& objectName) {
    bool found = false;
    QTimer::singleShot(300, button, [&] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        if (!menu) return;
        QAction* chosen = nullptr;
        for (QAction* a : menu->actions())
            if (a->objectName() == objectName && a->isEnabled()) chosen = a;
        menu->close();
        if (chosen) {
            found = true;
            chosen->trigger();
        }
    });
    QTest::mouseClick(button, Qt::LeftButton);
    QTest::qWait(400);
    return found;
}

/// Parses csvText's output (an axes header, then the indices and the last axis) back into a tensor of `shape`.
torch::Tensor parseCsv(const QString& text, const std::vector<int64_t>& shape, QString* header) {
    const QStringList lines = text.split('\n', Qt::SkipEmptyParts);
    if (lines.isEmpty()) return {};
    *header = lines.front();
    const int64_t last = shape.back(), lead = static_cast<int64_t>(shape.size()) - 1;
    std::vector<double> values;
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList cells = lines[i].split(',');
        if (cells.size() != lead + last) return {};
        for (int64_t j = 0; j < last; ++j) values.push_back(cells[static_cast<int>(lead + j)].toDouble());
    }
    return torch::tensor(values, torch::kFloat64).reshape(shape);
}

}  // namespace

void TestGui::neuronValuesByLayout() {
    // Views choose by layout: picking act_fn's output (mlp_activation, a Neurons value the trace did not save) in the
    // diagram pins it, and the neuron view shows that value, equal to the engine's; its list offers every Neurons value
    // of the model (the gate's, up_proj's and the activation's native values too), and the registry sends any Neurons
    // value there.
    QCOMPARE(viewForValue("Neurons", "output"), viewIndex("neurons"));
    QCOMPARE(viewForValue("Pattern", "attention_scores"), viewIndex("attention"));
    QCOMPARE(viewForValue("Residual", "layer_output"), viewIndex("lens"));
    QCOMPARE(viewForValue("Residual", "attention_output"), -1);
    const QString demo = demoModelDir();
    QVERIFY2(!demo.isEmpty(), "no demo model found");
    auto w = openWindow(demo);
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(runFromPanel(*w, {demoPrompt()}), qPrintable(w->errorText()));
    const std::vector<Value> offered = NeuronView::neuronValues(*w->snapshot()->model);
    QCOMPARE(offered, (std::vector<Value>{Value::MlpActivation, Value::MlpNeurons, Value::NativeGateProjOutput, Value::NativeUpProjOutput,
                                          Value::NativeActFnInput}));
    const ValueKey key{Value::MlpActivation, 1};
    QVERIFY(!w->snapshot()->result.value(key).defined());
    BlockDiagram* d = w->diagramPanel()->diagram();
    w->diagramPanel()->setBlock(1);
    QSignalSpy read(w.get(), &MainWindow::pinsRead);
    QTest::mouseClick(d, Qt::LeftButton, {}, hoverPart(d, "act_fn"));
    QVERIFY(read.count() > 0 || read.wait(30000));
    QCOMPARE(w->currentView(), static_cast<TraceView*>(w->neuronView()));
    QCOMPARE(w->neuronView()->value(), Value::MlpActivation);
    QCOMPARE(w->neuronView()->block(), 1);
    const auto model = Model::load(demo.toStdString());
    TraceOptions options;
    options.save = {key};
    const TraceResult ref = trace(*model, encodeBatch(*model, {demoPrompt().toStdString()}), options);
    QVERIFY(mapDifference(w->neuronView()->heatmap(), ref.value(key)[0].to(torch::kFloat32)) <= 1e-6);
}

void TestGui::pinnedCardShowsTensor() {
    // On the demo model, after a trace, clicking a diagram part the trace did not save pins it and reads it at once from
    // the same inputs; the card's statistics, its sparkline (the norm at each position) and its CSV copy are the
    // engine's own tensor; it names the TransformerLens hook and copies an nnterp snippet.
    const QString demo = demoModelDir();
    QVERIFY2(!demo.isEmpty(), "no demo model found");
    auto w = openWindow(demo);
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(runFromPanel(*w, {demoPrompt()}), qPrintable(w->errorText()));
    const ValueKey key{Value::AttentionQueries, 1};
    QVERIFY(!w->snapshot()->result.value(key).defined());  // not one of the values the views save
    BlockDiagram* d = w->diagramPanel()->diagram();
    w->diagramPanel()->setBlock(1);
    QSignalSpy read(w.get(), &MainWindow::pinsRead);
    QTest::mouseClick(d, Qt::LeftButton, {}, hoverPart(d, "rotary_q"));
    ValueCard* card = w->pinnedPanel()->card(key);
    QVERIFY(card);
    QVERIFY(read.count() > 0 || read.wait(30000));
    QVERIFY2(card->hasValue(), qPrintable(card->statusText()));

    // the engine's own tensor, on a model loaded apart
    const auto model = Model::load(demo.toStdString());
    TraceOptions options;
    options.save = {key};
    const TraceResult ref = trace(*model, encodeBatch(*model, {demoPrompt().toStdString()}), options);
    const torch::Tensor expected = ref.value(key).to(torch::kFloat64);
    QVERIFY(maxDiff(w->snapshot()->result.value(key), expected) <= 1e-6);
    const ValueStats& s = card->stats();
    QCOMPARE(s.shape, expected.sizes().vec());
    QCOMPARE(s.nanCount, expected.isnan().sum().item<int64_t>());
    QCOMPARE(s.infCount, expected.isinf().sum().item<int64_t>());
    QVERIFY(std::fabs(s.min - expected.min().item<double>()) <= 1e-6);
    QVERIFY(std::fabs(s.max - expected.max().item<double>()) <= 1e-6);
    QVERIFY(std::fabs(s.mean - expected.mean().item<double>()) <= 1e-6);
    const int64_t seq = expected.size(2);
    QVERIFY2(card->statusText().contains(QString("traced: [batch 1, num_heads %1, seq %2, qk_head_dim %3] float32")
                                             .arg(expected.size(1)).arg(seq).arg(expected.size(3))), qPrintable(card->statusText()));
    // the sparkline: one point per position, at the norm over heads and head_dim
    const torch::Tensor norms = expected[0].permute({1, 0, 2}).reshape({seq, -1}).norm(2, 1);
    const std::vector<double>& line = card->sparkline()->values();
    QCOMPARE(static_cast<int64_t>(line.size()), seq);
    for (int64_t p = 0; p < seq; ++p) QVERIFY(std::fabs(line[static_cast<size_t>(p)] - norms[p].item<double>()) <= 1e-6);
    const QVector<QPointF> points = card->sparkline()->points();
    QCOMPARE(static_cast<int64_t>(points.size()), seq);
    const int64_t hi = norms.argmax().item<int64_t>(), lo = norms.argmin().item<int64_t>();
    for (int64_t p = 0; p < seq; ++p) {  // the largest norm is drawn highest, the smallest lowest, left to right
        QVERIFY(points[static_cast<int>(p)].y() >= points[static_cast<int>(hi)].y() - 1e-9);
        QVERIFY(points[static_cast<int>(p)].y() <= points[static_cast<int>(lo)].y() + 1e-9);
        if (p) QVERIFY(points[static_cast<int>(p)].x() > points[static_cast<int>(p - 1)].x());
    }
    QCOMPARE(card->hookName(), QString("blocks.1.attn.hook_rot_q"));
    QVERIFY(card->hookText().contains("axis 2"));

    // Copy ▸ Values as CSV reads back to the tensor; the path; an nnterp snippet that reads the same value
    QClipboard* clip = QApplication::clipboard();
    clip->clear();
    QVERIFY(chooseFromButtonMenu(card->copyButton(), "copyCsv"));
    QString header;
    const torch::Tensor csv = parseCsv(clip->text(), expected.sizes().vec(), &header);
    QVERIFY2(csv.defined(), qPrintable(clip->text().left(200)));
    QVERIFY2(header.startsWith("batch,num_heads,seq,qk_head_dim=0,qk_head_dim=1"), qPrintable(header));
    QVERIFY(((csv - expected).abs() <= 1e-6 * (1 + expected.abs())).all().item<bool>());
    QVERIFY(chooseFromButtonMenu(card->copyButton(), "copyPath"));
    QCOMPARE(clip->text(), QString("layers.1.self_attn.attention_queries"));
    QVERIFY(chooseFromButtonMenu(card->copyButton(), "copyNnterp"));
    const QString snippet = clip->text();
    QVERIFY2(snippet.contains("from nnterp import StandardizedTransformer") && snippet.contains(demo) &&
                 snippet.contains("value = model.layers[1].self_attn.attention_queries.save()") &&
                 snippet.contains("with model.trace(\"" + demoPrompt() + "\"):"),
             qPrintable(snippet));

    // a double-click on a row of the support table, or on a line of the printout, pins its value at the diagram's block
    auto* tablesDock = w->findChild<QDockWidget*>("tablesDock");
    QVERIFY(tablesDock);
    tablesDock->raise();
    auto* tables = qobject_cast<QTabWidget*>(tablesDock->widget());
    QVERIFY(tables);
    tables->setCurrentWidget(w->supportView());
    QCoreApplication::processEvents();
    const QModelIndex midRow = w->supportModel()->index(w->supportModel()->rowOf(Value::LayerMid), 0);
    w->supportView()->scrollTo(midRow);
    QCoreApplication::processEvents();
    read.clear();
    const QPoint midCell = w->supportView()->visualRect(midRow).center();
    QTest::mouseClick(w->supportView()->viewport(), Qt::LeftButton, Qt::NoModifier, midCell);  // a double-click's first press
    QTest::mouseDClick(w->supportView()->viewport(), Qt::LeftButton, Qt::NoModifier, midCell);
    QVERIFY(w->pinnedPanel()->card({Value::LayerMid, 1}));
    QVERIFY(read.count() > 0 || read.wait(30000));
    QVERIFY(w->pinnedPanel()->card({Value::LayerMid, 1})->hasValue());
    tables->setCurrentWidget(w->printoutView());
    QCoreApplication::processEvents();
    const QModelIndex neuronsLine = w->printoutModel()->index(w->printoutModel()->rowOf(Value::MlpActivation));
    QVERIFY(neuronsLine.isValid());
    w->printoutView()->scrollTo(neuronsLine);
    QCoreApplication::processEvents();
    read.clear();
    const QPoint lineCentre = w->printoutView()->visualRect(neuronsLine).center();
    QTest::mouseClick(w->printoutView()->viewport(), Qt::LeftButton, Qt::NoModifier, lineCentre);
    QTest::mouseDClick(w->printoutView()->viewport(), Qt::LeftButton, Qt::NoModifier, lineCentre);
    QVERIFY(w->pinnedPanel()->card({Value::MlpActivation, 1}));
    QVERIFY(read.count() > 0 || read.wait(30000));
    QVERIFY(w->pinnedPanel()->card({Value::MlpActivation, 1})->hasValue());

    // a value the trace saved: the card shows it at once, and its hook
    QVERIFY(w->pinValue({Value::LayerOutput, 1}));
    ValueCard* out = w->pinnedPanel()->card({Value::LayerOutput, 1});
    QVERIFY(out->hasValue());
    QCOMPARE(out->hookName(), QString("blocks.1.hook_resid_post"));
    // the sparkline follows the prompt chosen in the views (a batch of two)
    QVERIFY(runFromPanel(*w, {demoPrompt(), "one two"}));
    w->attentionView()->setPrompt(1);
    QCOMPARE(static_cast<int64_t>(out->sparkline()->values().size()),
             static_cast<int64_t>(w->snapshot()->result.batch.ids.at(1).size()));

    // on a model too large to trace again at once, the card says the next run reads it, and the next run does
    w->setRereadBudget(0);
    QVERIFY(w->pinValue({Value::MlpInput, 0}));
    ValueCard* later = w->pinnedPanel()->card({Value::MlpInput, 0});
    QVERIFY(!later->hasValue());
    QVERIFY2(later->statusText().contains("the next run reads it"), qPrintable(later->statusText()));
    QCOMPARE(later->hookName(), QString());  // no TransformerLens hook holds the normed stream the MLP reads
    QVERIFY(runFromPanel(*w, {demoPrompt()}));
    QVERIFY(later->hasValue());
}

void TestGui::openTraceFile() {
    // A trace written by `nnscope trace --out` and by the window's Export ▸ Trace opens without running anything: the
    // attention, neuron and logit-lens views show the values of a live trace; a file that lacks values says which
    // views need them; a file without the checkpoint at hand has no logit lens; a broken file is refused by name.
    const QString demo = demoModelDir();
    QVERIFY2(!demo.isEmpty(), "no demo model found");
    const QString cliFile = tmp_.filePath("cli-trace.safetensors");
    {
        QProcess p;
        p.start(kBinary, {"trace", "--model", demo, "--prompt", demoPrompt(), "--save", "all", "--out", cliFile});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    }
    auto w = openWindow(demo);
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(runFromPanel(*w, {demoPrompt()}), qPrintable(w->errorText()));
    const QString windowFile = tmp_.filePath("window-trace.safetensors");
    QCOMPARE(w->exportTraceTo(windowFile), QString());
    const QString oneValue = tmp_.filePath("one-value.safetensors");
    QCOMPARE(w->exportValueTo({Value::AttentionProbabilities, 1}, oneValue), QString());

    // what the live trace shows: every head of every block, the neurons of every block, the lens
    const int layers = static_cast<int>(w->model()->config().numLayers), heads = static_cast<int>(w->model()->config().numHeads);
    std::vector<torch::Tensor> live;
    auto collect = [&]() {
        std::vector<torch::Tensor> maps;
        QVERIFY(w->showView("attention"));
        for (int b = 0; b < layers; ++b) {
            w->attentionView()->setBlock(b);
            for (int h = 0; h < heads; ++h) {
                w->attentionView()->setHead(h);
                maps.push_back(mapTensor(w->attentionView()->heatmap()));
            }
        }
        QVERIFY(w->showView("neurons"));
        for (int b = 0; b < layers; ++b) {
            w->neuronView()->setBlock(b);
            maps.push_back(mapTensor(w->neuronView()->heatmap()));
        }
        QVERIFY(w->showView("lens"));
        QVERIFY(lensDone(*w));  // computed when shown
        maps.push_back(mapTensor(w->lensView()->heatmap()));
        live = maps;
    };
    collect();
    const std::vector<torch::Tensor> expected = live;
    QCOMPARE(static_cast<int>(expected.size()), layers * heads + layers + 1);
    const QString liveTitle = w->windowTitle();

    for (const QString& file : {cliFile, windowFile}) {
        QSignalSpy opened(w.get(), &MainWindow::traceFileOpened);
        w->openTraceFile(file);
        QVERIFY2(opened.wait(60000), qPrintable(w->errorText()));
        QCOMPARE(w->traceFile(), file);
        QVERIFY2(w->windowTitle().contains("trace file") && w->windowTitle().contains("no model"), qPrintable(w->windowTitle()));
        QVERIFY(!w->tracePanel()->runButton()->isEnabled());  // nothing runs on a trace file
        QVERIFY(w->snapshot() && w->snapshot()->sourceFile == file);
        QCOMPARE(w->snapshot()->tokens.at(0).size(), static_cast<qsizetype>(w->snapshot()->result.batch.ids.at(0).size()));
        collect();
        // the lens computed for the file leaves the line saying which file is open, and the bar counting no trace
        // (it read "block 0 / 1" under an empty line)
        QVERIFY2(w->tracePanel()->statusText().contains("is open"), qPrintable(w->tracePanel()->statusText()));
        QCOMPARE(w->tracePanel()->progressBar()->text(), QString());
        QCOMPARE(live.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(live[i].sizes(), expected[i].sizes());
            // the command line ran its own pass (float32 sums may round apart); the window's export holds the trace itself
            const double scale = 1 + expected[i].abs().max().item<double>();
            const double tolerance = file == cliFile ? 1e-6 * scale : 1e-9;
            QVERIFY2(maxDiff(live[i], expected[i]) <= tolerance,
                     qPrintable(QString("%1: map %2 differs by %3").arg(file).arg(i).arg(maxDiff(live[i], expected[i]))));
        }
        // a value pinned from the file's diagram shows; one the file lacks says so
        QVERIFY(w->pinValue({Value::LayerOutput, 0}));
        QVERIFY(w->pinnedPanel()->card({Value::LayerOutput, 0})->hasValue());
    }
    // Run is refused while a trace file is open
    w->runTrace();
    QVERIFY(w->errorText().contains("trace file"));

    // a file with one value: its view shows it, the others say what they need
    {
        QSignalSpy opened(w.get(), &MainWindow::traceFileOpened);
        w->openTraceFile(oneValue);
        QVERIFY(opened.wait(60000));
        QVERIFY(w->showView("attention"));
        w->attentionView()->setBlock(1);
        w->attentionView()->setHead(0);
        QCOMPARE(w->attentionView()->placeholderText(), QString());
        QVERIFY(maxDiff(mapTensor(w->attentionView()->heatmap()), expected[static_cast<size_t>(heads)]) <= 1e-6);
        w->attentionView()->setBlock(0);
        QVERIFY2(w->attentionView()->placeholderText().contains("layers.0.self_attn.attention_probabilities") &&
                     w->attentionView()->placeholderText().contains(oneValue) &&
                     w->attentionView()->placeholderText().contains("Blocks that have it: 1"),
                 qPrintable(w->attentionView()->placeholderText()));
        QVERIFY2(w->neuronView()->placeholderText().contains("mlp_neurons"), qPrintable(w->neuronView()->placeholderText()));
        QVERIFY2(w->lensView()->placeholderText().contains("layer_output"), qPrintable(w->lensView()->placeholderText()));
        // the Text view coloured by a neuron, without any mlp_neurons in the file: it says so (it threw, out of a slot)
        QVERIFY(w->showView("text"));
        w->textView()->setMode(TextView::Mode::Neuron);
        QVERIFY2(w->textView()->statusText().contains("mlp_neurons"), qPrintable(w->textView()->statusText()));
        QVERIFY(w->pinValue({Value::MlpOutput, 0}));
        QVERIFY2(w->pinnedPanel()->card({Value::MlpOutput, 0})->statusText().contains("does not hold"),
                 qPrintable(w->pinnedPanel()->card({Value::MlpOutput, 0})->statusText()));
    }

    // the same trace where its checkpoint is not at hand: every view but the logit lens, which needs the weights
    const QString away = tmp_.filePath("away.safetensors");
    {
        SafetensorsFile f(cliFile.toStdString());
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        for (const auto& [name, entry] : f.entries()) tensors.emplace_back(name, f.tensor(name));
        auto md = f.metadata();
        md["model"] = tmp_.filePath("elsewhere/demo-model").toStdString();
        writeSafetensors(away.toStdString(), tensors, md);
        QSignalSpy opened(w.get(), &MainWindow::traceFileOpened);
        w->openTraceFile(away);
        QVERIFY(opened.wait(60000));
        QVERIFY(!w->model()->hasWeights());
        QVERIFY(w->showView("attention"));
        w->attentionView()->setBlock(1);
        w->attentionView()->setHead(2);
        QVERIFY(maxDiff(mapTensor(w->attentionView()->heatmap()), expected[static_cast<size_t>(heads + 2)]) <= 1e-5);
        QVERIFY2(w->lensView()->placeholderText().contains("weights") && w->lensView()->placeholderText().contains("not on this machine"),
                 qPrintable(w->lensView()->placeholderText()));
        QVERIFY(w->attributionView()->placeholderText().contains("weights"));
        // the tokens came from the file: the first prompt's labels are the live trace's
        QCOMPARE(w->snapshot()->tokens.at(0).size(), static_cast<qsizetype>(w->snapshot()->result.batch.ids.at(0).size()));
    }

    // a broken file: a clear message naming it, and the window keeps what it showed
    const QString broken = tmp_.filePath("broken.safetensors");
    {
        QFile f(broken);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a safetensors file at all\n");
    }
    for (const QString& bad : {broken, tmp_.filePath("missing.safetensors")}) {
        QSignalSpy failed(w.get(), &MainWindow::traceFileFailed);
        w->openTraceFile(bad);
        QVERIFY(failed.wait(30000));
        QVERIFY2(w->errorText().contains(bad) && w->errorText().startsWith("Could not open the trace file"), qPrintable(w->errorText()));
        QCOMPARE(w->traceFile(), away);
    }
    // opening the checkpoint again leaves the trace file
    QSignalSpy reopened(w.get(), &MainWindow::modelOpened);
    w->openModel(demo);
    QVERIFY(reopened.wait(60000));
    QCOMPARE(w->traceFile(), QString());
    if (w->tracePanel()->isRunning()) {  // the demo's own sentence in the box: traced as the demo opens
        QSignalSpy ended(w.get(), &MainWindow::traceEnded);
        QVERIFY(ended.wait(60000));
    }
    QVERIFY(w->tracePanel()->runButton()->isEnabled());
    Q_UNUSED(liveTitle);

    // the command line: gui --open-trace FILE, and its refusals
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("XDG_CONFIG_HOME", tmp_.filePath("open-trace-config"));
    p.setProcessEnvironment(env);
    const QString shot = tmp_.filePath("trace-file.png");
    p.start(kBinary, {"gui", "--open-trace", cliFile, "--view", "neurons", "--pin", "layers.1.mlp.mlp_output", "--screenshot", shot});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QVERIFY(!QImage(shot).isNull());
    p.start(kBinary, {"gui", "--open-trace", broken, "--screenshot", tmp_.filePath("none.png")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(broken));
    p.start(kBinary, {"gui", "--open-trace", cliFile, "--model", demo});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
}

// ---- the Flow view computes in the worker ---------------------------------------------------------------------------

void TestGui::flowInWorker() {
    // The Flow view's importances (a pass's worth of work: half a minute for 300 tokens on a 16-block model, which froze
    // the window when they were computed on its thread) are computed in the worker: the window's event loop keeps
    // ticking meanwhile, the trace panel's bar counts the blocks, and Esc stops them within a block. The block delay
    // stretches each block of the job to a known length on this tiny model.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    const QString prompt = promptOfLength(*w->model(), 300);
    QVERIFY(runFromPanel(*w, {prompt}));
    const int blocks = w->snapshot()->numLayers();
    // what the importances cost on the window's thread, as the view computed them before
    QElapsedTimer timer;
    timer.start();
    const TokenContributions direct = tokenContributions(*w->model(), w->snapshot()->result, 0);
    const qint64 directMs = timer.elapsed();

    constexpr int kDelay = 150;  // ms after each block but the last
    w->worker()->setBlockDelay(kDelay);
    QElapsedTimer ticks;
    qint64 longestPause = 0, last = 0;
    int count = 0;
    QTimer tick;
    tick.setInterval(10);
    connect(&tick, &QTimer::timeout, this, [&] {
        const qint64 now = ticks.elapsed();
        longestPause = std::max(longestPause, now - last);
        last = now;
        ++count;
    });
    QSignalSpy progress(w->tracePanel()->progressBar(), &QProgressBar::valueChanged);
    ticks.start();
    tick.start();
    QVERIFY(w->showView("flow"));
    QVERIFY(w->viewJobsRunning());
    QVERIFY(w->tracePanel()->progressBar()->format().contains("information flow"));
    QVERIFY(w->tracePanel()->cancelButton()->isEnabled());
    QVERIFY(viewJobsDone(*w));
    const qint64 jobMs = ticks.elapsed();
    tick.stop();
    FlowView* fv = w->flowView();
    QVERIFY2(fv->graph(), qPrintable(fv->statusLabel()->text()));
    QVERIFY(torch::equal(fv->graph()->contributions.attention, direct.attention));
    QVERIFY(progress.count() >= blocks - 1);  // the bar counted the blocks
    qInfo("Flow importances of %d tokens x %d blocks: %lld ms on the calling thread; in the worker (with %d ms after each "
          "block) %lld ms, during which the event loop ticked %d times, its longest pause %lld ms",
          static_cast<int>(direct.length), blocks, static_cast<long long>(directMs), kDelay, static_cast<long long>(jobMs), count,
          static_cast<long long>(longestPause));
    QVERIFY(jobMs >= (blocks - 1) * kDelay);
    QVERIFY2(longestPause < 500, qPrintable(QString("the window did not handle events for %1 ms").arg(longestPause)));

    // Esc stops it within a block; the view says so and computes it again when shown again.
    QVERIFY(runFromPanel(*w, {prompt + " again"}));
    QVERIFY(w->viewJobsRunning());  // the view is shown: the new trace's graph is under way
    QSignalSpy blocksDone(w->analysisJob(fv), &JobWatcher::progressed);
    QTRY_VERIFY_WITH_TIMEOUT(blocksDone.count() >= 1, 10000);
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    timer.start();
    QTest::keyClick(w.get(), Qt::Key_Escape);
    QVERIFY(viewJobsDone(*w));
    QVERIFY2(timer.elapsed() < 2 * kDelay + 500, qPrintable(QString("Esc took %1 ms").arg(timer.elapsed())));
    QCOMPARE(w->analysisJob(fv)->state(), JobState::Cancelled);
    QVERIFY(!fv->graph());
    QVERIFY2(fv->statusLabel()->text().contains("cancelled"), qPrintable(fv->statusLabel()->text()));
    QVERIFY(w->tracePanel()->statusText().contains("cancelled"));
    w->worker()->setBlockDelay(0);
    QVERIFY(w->showView("attention"));
    QVERIFY(w->showView("flow"));
    QVERIFY(viewJobsDone(*w));
    QVERIFY2(fv->graph(), qPrintable(fv->statusLabel()->text()));
}

// ---- the logit lens on demand; a dark palette -------------------------------------------------------------------

namespace {
/// The lens view shows `lens`'s prompt `row`: the top probability and token of every cell, and the target's
/// probability across blocks at the view's position. Returns what differs, or "".
QString lensViewDiffers(LogitLensView* lv, const Model& m, const LogitLens& lens, int row) {
    const torch::Tensor ids = lens.topIds[static_cast<size_t>(row)], probs = lens.topProbs[static_cast<size_t>(row)];
    const torch::Tensor target = lensTokenProbs(m, lens, row, lv->targetId());
    if (lv->heatmap()->model()->rowCount() != ids.size(0) || lv->heatmap()->model()->columnCount() != ids.size(1))
        return QString("shape %1 x %2").arg(lv->heatmap()->model()->rowCount()).arg(lv->heatmap()->model()->columnCount());
    for (int b = 0; b < ids.size(0); ++b) {
        for (int p = 0; p < ids.size(1); ++p) {
            if (std::fabs(lv->heatmap()->model()->value(b, p) - probs[b][p][0].item<double>()) > 1e-6)
                return QString("probability at block %1 position %2").arg(b).arg(p);
            if (lv->heatmap()->model()->data(lv->heatmap()->model()->index(b, p), MatrixModel::CellTextRole).toString() !=
                QString::fromStdString(m.tokenizer()->tokenLabel(ids[b][p][0].item<int64_t>())))
                return QString("token at block %1 position %2").arg(b).arg(p);
        }
        if (std::fabs(lv->targetGraph()->data()->at(b)->value - target[b][lv->position()].item<double>()) > 1e-6)
            return QString("target probability at block %1").arg(b);
    }
    return {};
}
}  // namespace

void TestGui::logitLensInView() {
    // A long prompt's lens is computed for the columns in view, more as the view is scrolled: what the heatmap shows
    // there equals core::logitLens of the whole prompt, and the positions never shown are not computed.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1600, 1000);
    const QString story = "Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog, Max. "
                          "One day, Lily saw a big red ball under a tree. She ran to the ball and picked it up. Max barked and "
                          "jumped. Lily threw the ball and Max ran after it. They played all day until the sun went down.";
    QVERIFY(runFromPanel(*w, {story + " " + story + " " + story}));  // about 360 tokens
    const int len = static_cast<int>(w->snapshot()->tokens.at(0).size());
    QVERIFY2(len > 256, qPrintable(QString::number(len)));
    QSignalSpy ended(w.get(), &MainWindow::lensEnded);
    QVERIFY(w->showView("lens"));
    QVERIFY(ended.wait(60000));  // the first job: the last positions
    LogitLensView* lv = w->lensView();
    QVERIFY(lv->hasLens());
    QVERIFY(!w->snapshot()->lens(0));  // not the whole prompt
    QVERIFY(w->snapshot()->lensComputed(0, len - 1));
    QVERIFY(!w->snapshot()->lensComputed(0, 0));
    const int layers = static_cast<int>(w->model()->config().numLayers);
    // The view opens fitted and asks for the rest a chunk at a time; zoomed into the last 40 columns it asks for no
    // more than those: the start of the prompt, never in view, is never computed.
    lv->heatmap()->zoomToCells(len - 40, len - 1, 0, layers - 1);
    while (w->lensRunning()) QVERIFY(ended.wait(60000));
    QTest::qWait(300);  // the view asks once scrolling pauses: nothing is missing in view
    QVERIFY(!w->lensRunning());
    QVERIFY(!w->snapshot()->lensComputed(0, 0));
    const LogitLens ref = logitLens(*w->model(), w->snapshot()->result, 5);
    auto inViewEqualsEngine = [&]() -> QString {
        const QRect cells = lv->heatmap()->visibleCells();
        if (cells.width() <= 0) return "nothing in view";
        const torch::Tensor shown = lv->heatmap()->model()->matrix().values;  // [layers, len]: top probability
        for (int c = cells.x(); c < cells.x() + cells.width(); ++c) {
            if (!w->snapshot()->lensComputed(0, c)) return QString("position %1 in view is not computed").arg(c);
            for (int b = 0; b < layers; ++b) {
                const double got = shown[b][c].item<double>(), want = ref.topProbs[0][b][c][0].item<double>();
                if (std::abs(got - want) > 1e-5) return QString("block %1 position %2: %3, the engine's %4").arg(b).arg(c).arg(got).arg(want);
            }
        }
        return {};
    };
    QString why = inViewEqualsEngine();
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // Panned to the start: the view asks for those positions once scrolling pauses.
    lv->heatmap()->ensureVisible(0, 0);
    QVERIFY(ended.wait(30000));
    QVERIFY(lensDone(*w));
    QVERIFY(w->snapshot()->lensComputed(0, 0));
    QCOMPARE(lv->heatmap()->visibleCells().x(), 0);  // the view stayed where it was scrolled
    why = inViewEqualsEngine();
    QVERIFY2(why.isEmpty(), qPrintable(why));
}

void TestGui::logitLensOnDemand() {
    // The logit lens is not part of a trace: it is computed in the worker when its view is shown, for the prompt shown,
    // counted by the trace panel's bar and stopped by Esc.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    QVERIFY(w->showView("attention"));
    const QStringList prompts{"Once upon a time", "Tom and Lily went to the park to play."};
    const int runs = w->worker()->lensRuns();
    QVERIFY(runFromPanel(*w, prompts));
    // A trace with the Logit lens tab not shown computes no lens.
    QTest::qWait(100);
    QCOMPARE(w->worker()->lensRuns(), runs);
    QVERIFY(!w->lensRunning());
    QCOMPARE(w->snapshot()->lensCount(), 0);
    QVERIFY(!w->lensView()->hasLens());
    QVERIFY(!w->tracePanel()->cancelButton()->isEnabled());

    // Clicking the tab computes it, for the prompt shown; its values equal core::logitLens.
    QTabBar* tabs = w->views()->tabBar();
    const int lensTab = w->views()->indexOf(w->lensView());
    QTest::mouseClick(tabs, Qt::LeftButton, {}, tabs->tabRect(lensTab).center());
    QCOMPARE(w->views()->currentWidget(), static_cast<QWidget*>(w->lensView()));
    QVERIFY(w->lensRunning());
    QVERIFY(w->tracePanel()->isAnalysing());
    QVERIFY(lensDone(*w));
    QCOMPARE(w->worker()->lensRuns(), runs + 1);
    QCOMPARE(w->snapshot()->lensCount(), 1);
    LogitLensView* lv = w->lensView();
    QVERIFY(lv->hasLens());
    QCOMPARE(w->tracePanel()->progressBar()->value(), w->tracePanel()->progressBar()->maximum());
    const Model& m = *w->model();
    const LogitLens ref = logitLens(m, w->snapshot()->result, 5);
    QString why = lensViewDiffers(lv, m, ref, 0);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // The other prompt is computed when it is chosen; the first is kept.
    lv->setPrompt(1);
    QVERIFY(w->lensRunning());
    QVERIFY(lensDone(*w));
    why = lensViewDiffers(lv, m, ref, 1);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    lv->setPrompt(0);
    QVERIFY(!w->lensRunning());
    QCOMPARE(w->worker()->lensRuns(), runs + 2);
    QVERIFY(lv->hasLens());
    // The lens of one prompt is the batch lens's entry of that prompt (the rows left out stay undefined).
    LensOptions one;
    one.rows = {1};
    const LogitLens second = logitLens(m, w->snapshot()->result, 5, one);
    QVERIFY(!second.has(0) && second.has(1));
    QVERIFY(torch::equal(second.topIds[1], ref.topIds[1]));
    QVERIFY(maxDiff(second.topProbs[1], ref.topProbs[1]) <= 1e-6);

    // A new trace with the lens shown: the lens follows it, and Esc (a key press in the window) stops it within a block.
    constexpr int kDelay = 300;
    w->worker()->setBlockDelay(kDelay);
    QSignalSpy progress(w->lensJob(), &JobWatcher::progressed);
    QVERIFY(runFromPanel(*w, prompts));
    QVERIFY(w->lensRunning());
    QVERIFY(w->tracePanel()->cancelButton()->isEnabled());
    QVERIFY(w->tracePanel()->runButton()->isEnabled());  // a new trace need not wait for the lens
    QVERIFY(!lv->hasLens());
    QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 2, 10000);  // block 1 is done: the window keeps handling events
    QVERIFY(w->tracePanel()->progressBar()->format().contains("logit lens"));
    QElapsedTimer timer;
    timer.start();
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    QTest::keyClick(w.get(), Qt::Key_Escape);
    QVERIFY(lensDone(*w));
    QVERIFY2(timer.elapsed() < 2 * kDelay + 500, qPrintable(QString("Esc took %1 ms").arg(timer.elapsed())));
    const int total = w->snapshot()->numLayers();
    QVERIFY(progress.last().at(0).toInt() < total);
    QVERIFY(!lv->hasLens());
    QCOMPARE(w->snapshot()->lensCount(), 0);
    QVERIFY2(lv->lensNote().contains("cancelled"), qPrintable(lv->lensNote()));
    QVERIFY(w->tracePanel()->statusText().contains("cancelled"));
    QVERIFY(!w->tracePanel()->cancelButton()->isEnabled());
    QVERIFY(w->tracePanel()->runButton()->isEnabled());
    // The window is usable: the next trace works, and its lens is computed again.
    w->worker()->setBlockDelay(0);
    QVERIFY(runFromPanel(*w, {"One day"}));
    QVERIFY(lensDone(*w));
    QVERIFY(lv->hasLens());
    why = lensViewDiffers(lv, m, logitLens(m, w->snapshot()->result, 5), 0);
    QVERIFY2(why.isEmpty(), qPrintable(why));

    // The target token: by default each trace's own most probable next token; a typed one is kept across traces, and
    // an emptied field goes back to the default.
    auto argmaxNext = [&] { return w->snapshot()->result.nextTokenProbs[0].argmax().item<int64_t>(); };
    const int64_t firstTarget = argmaxNext();
    QCOMPARE(lv->targetId(), firstTarget);
    QVERIFY(runFromPanel(*w, {"Lily saw a big"}));
    QVERIFY(lensDone(*w));
    const int64_t nextTarget = argmaxNext();
    QVERIFY(nextTarget != firstTarget);  // else this check could not tell a kept target from a followed one
    QCOMPARE(lv->targetId(), nextTarget);
    const int64_t typed = nextTarget == 5 ? 6 : 5;
    QVERIFY(lv->setTarget("#" + QString::number(typed)));
    QVERIFY(runFromPanel(*w, {"One day"}));
    QVERIFY(lensDone(*w));
    QCOMPARE(lv->targetId(), typed);
    QVERIFY(lv->setTarget(""));
    QCOMPARE(lv->targetId(), argmaxNext());
}

namespace {
/// The colour most pixels of `image` have (a widget's background).
QColor commonestColour(const QImage& image) {
    std::map<QRgb, int> count;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) ++count[image.pixel(x, y)];
    return QColor(std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first);
}
/// How many pixels of `image` inside `rect` are at least `lightness` light.
int lightPixels(const QImage& image, QRect rect, int lightness) {
    int n = 0;
    rect &= image.rect();
    for (int y = rect.top(); y <= rect.bottom(); ++y)
        for (int x = rect.left(); x <= rect.right(); ++x) n += QColor(image.pixel(x, y)).lightness() >= lightness;
    return n;
}
/// A plot drawn with `palette`: its background (the commonest colour outside the data) is the palette's base, and its
/// tick labels, axis titles and title are in its text colour (many pixels as light as the text where the base is dark).
QString plotFollows(QCustomPlot* plot, const QPalette& palette) {
    if (plot->width() < 50 || plot->height() < 50) return QString("the plot is %1 x %2").arg(plot->width()).arg(plot->height());
    plot->replot();
    const QImage image = plot->grab().toImage();
    const QColor base = palette.color(QPalette::Base);
    QImage frame = image.copy();  // the data area left out: a colour map may be white where the data is 0
    for (QCPAxisRect* r : plot->axisRects()) {
        QPainter p(&frame);
        p.fillRect(r->rect().adjusted(1, 1, -1, -1), base);
    }
    if (commonestColour(frame) != base) return QString("background %1, not the base %2").arg(commonestColour(frame).name(), base.name());
    // the axes' labels: text as light as the palette's, outside the data area
    const int light = lightPixels(frame, frame.rect(), palette.color(QPalette::Text).lightness() - 40);
    if (light < 40) return QString("only %1 pixels of light text").arg(light);
    return {};
}
}  // namespace

void TestGui::darkPalette() {
    // Under a dark palette the block diagram, the plots and the quirk chips take its colours: no white box on the dark
    // window and no black text on it. The palette is set while the window is open (a desktop switching to dark), and
    // set back to light.
    const QPalette light = QApplication::palette();
    const QPalette dark = nnscope::darkPalette();
    auto restore = qScopeGuard([&] { QApplication::setPalette(light); });
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY(runFromPanel(*w, {demoPrompt()}));
    QApplication::setPalette(dark);
    QCoreApplication::processEvents();
    const QColor base = dark.color(QPalette::Base), text = dark.color(QPalette::Text);

    // The diagram: the base behind it; every box dark, with light labels in it.
    BlockDiagram* d = w->diagramPanel()->diagram();
    QImage image = d->grab().toImage();
    if (qEnvironmentVariableIsSet("NNSCOPE_TEST_IMAGES")) image.save(qEnvironmentVariable("NNSCOPE_TEST_IMAGES") + "/diagram-dark.png");
    QCOMPARE(image.pixelColor(1, 1), base);  // around the block
    QVERIFY(commonestColour(image).lightness() < 60);  // the block's frame
    int boxes = 0;
    for (const DiagramPart& part : d->diagram().parts) {
        const QRect r = d->partRect(part.id);
        if (r.width() < 12 || r.height() < 12) continue;
        const QColor fill = image.pixelColor(r.left() + 4, r.top() + r.height() / 2);
        QVERIFY2(fill.lightness() < 110, qPrintable(QString("%1 is filled %2").arg(part.id, fill.name())));
        QVERIFY2(lightPixels(image, r.adjusted(3, 3, -3, -3), 150) > 5, qPrintable(part.id + " has no light label"));
        ++boxes;
    }
    QVERIFY(boxes > 10);
    QVERIFY(lightPixels(image, image.rect(), 235) < image.width() * image.height() / 200);  // no white box anywhere
    // The quirk chips: the palette's text on a dark tint.
    QVERIFY2(w->diagramPanel()->header()->text().contains(text.name()), qPrintable(w->diagramPanel()->header()->text()));
    const QImage header = w->diagramPanel()->header()->grab().toImage();
    QCOMPARE(lightPixels(header, header.rect(), 240), 0);

    // The plots: the logit lens's target plot and heatmap, the attention heatmap, the neuron bars, the attribution
    // bars, the before / after plots and the patching grid.
    QVERIFY(w->showView("lens"));
    QVERIFY(lensDone(*w));
    QString why;
    for (QCustomPlot* plot : {w->lensView()->targetPlot(), w->lensView()->heatmap()->plot()})
        QVERIFY2((why = plotFollows(plot, dark)).isEmpty(), qPrintable("logit lens: " + why));
    QVERIFY(w->showView("attention"));
    QVERIFY2((why = plotFollows(w->attentionView()->heatmap()->plot(), dark)).isEmpty(), qPrintable("attention: " + why));
    QVERIFY(w->showView("neurons"));
    for (QCustomPlot* plot : {w->neuronView()->topPlot(), w->neuronView()->neuronPlot()})
        QVERIFY2((why = plotFollows(plot, dark)).isEmpty(), qPrintable("neurons: " + why));
    QVERIFY(w->showView("attribution"));
    QVERIFY(viewJobsDone(*w));
    QVERIFY2((why = plotFollows(w->attributionView()->blockPlot(), dark)).isEmpty(), qPrintable("attribution: " + why));
    QVERIFY(w->showView("flow"));
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(commonestColour(w->flowView()->canvas()->grab().toImage()), base);
    QVERIFY(w->showView("patching"));
    PatchRequest r;
    r.clean = "tom saw a red ball . tom saw a";
    r.corrupted = "tom saw a big dog . tom saw a";
    r.answer = "red";
    QSignalSpy patched(w.get(), &MainWindow::patchEnded);
    w->runPatching(r);
    QVERIFY(patched.wait(60000));
    QTest::qWait(50);  // the grid shown and laid out
    QVERIFY2((why = plotFollows(w->patchingView()->heatmap()->plot(), dark)).isEmpty(), qPrintable("patching: " + why));
    // The family page: dark, with light text (the window asks for PageColours::Dark).
    QVERIFY(w->showView("family"));
    QTest::qWait(50);
    FamilyView* fv = w->familyView();
    QCOMPARE(fv->html(), QString::fromStdString(familyPage(*w->model(), fv->checks() ? *fv->checks() : std::vector<CheckResult>{},
                                                           PageFormat::Html, PageColours::Dark)));
    const QImage page = fv->browser()->viewport()->grab().toImage();
    if (qEnvironmentVariableIsSet("NNSCOPE_TEST_IMAGES")) page.save(qEnvironmentVariable("NNSCOPE_TEST_IMAGES") + "/family-dark.png");
    QVERIFY2(commonestColour(page).lightness() < 60, qPrintable(commonestColour(page).name()));
    QVERIFY(lightPixels(page, page.rect(), 180) > 200);  // the text

    // Back to the light palette: the diagram, the plots and the family page follow again.
    QApplication::setPalette(light);
    QCoreApplication::processEvents();
    QCOMPARE(d->grab().toImage().pixelColor(1, 1), light.color(QPalette::Base));
    QVERIFY(commonestColour(d->grab().toImage()).lightness() > 200);
    QVERIFY(w->showView("lens"));
    QCOMPARE(commonestColour(w->lensView()->targetPlot()->grab().toImage()), light.color(QPalette::Base));
    QVERIFY(!w->diagramPanel()->header()->text().contains(text.name()));
    QCOMPARE(fv->html(), QString::fromStdString(familyPage(*w->model(), fv->checks() ? *fv->checks() : std::vector<CheckResult>{},
                                                           PageFormat::Html, PageColours::Light)));
    QVERIFY(w->showView("family"));
    QVERIFY(commonestColour(fv->browser()->viewport()->grab().toImage()).lightness() > 200);
}

// ---- sparse dictionaries ------------------------------------------------------------------------------------

namespace {
const QString kDictionaries = kFixtures + "/../dictionaries";

/// Waits for the attached dictionaries' run on the last trace (the window computes it in its worker after each trace).
bool featuresDone(MainWindow& w) {
    if (!w.featuresJob()->isActive()) return true;
    QSignalSpy ended(&w, &MainWindow::featuresEnded);
    return ended.wait(60000) && !w.featuresJob()->isActive();
}
}  // namespace

void TestGui::featuresView() {
    // A dictionary attached from the window: its top features per token, its quality, a feature's activation, logit
    // effects and neighbours equal the engine's own run of the same dictionary on the same prompt.
    const QString dictDir = kDictionaries + "/saelens-jumprelu-llama-resid-post";
    const QString prompt = "Tom and Lily went to the park.";
    QSettings().remove("dictionaries/attached");  // what another test attached
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY(w->attachDictionary(dictDir).isEmpty());
    QCOMPARE(w->dictionaries().size(), size_t(1));
    QVERIFY(w->showView("features"));
    QVERIFY(runFromPanel(*w, {prompt}));
    QVERIFY(featuresDone(*w));
    QVERIFY(viewJobsDone(*w));
    FeaturesView* fv = w->featuresView();
    QVERIFY(fv->placeholderText().isEmpty());

    // the engine's own run
    const ModelPtr model = Model::load(modelDir("tiny-llama").toStdString());
    const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(dictDir.toStdString()));
    TraceOptions options;
    // what the window's trace saves: every block's attention probabilities (viewValueKeys) beside the site, so that both
    // compute attention the same way (a trace asking for no pattern may take scaled_dot_product_attention on libtorch >= 2)
    options.save = viewValueKeys(*model);
    for (const ValueKey& k : attached.neededValues()) options.save.push_back(k);
    const TraceResult result = trace(*model, encodeBatch(*model, {prompt.toStdString()}), options);
    const FeatureRun ref = runDictionary(*model, result, attached, 0);

    const FeatureRun* run = fv->currentRun();
    QVERIFY(run);
    QCOMPARE(run->mse, ref.mse);
    QCOMPARE(run->explainedVariance, ref.explainedVariance);
    QCOMPARE(run->meanL0, ref.meanL0);
    QVERIFY2(fv->qualityLabel()->text().contains(featureQualityText(ref)), qPrintable(fv->qualityLabel()->text()));
    // the warning is there exactly when the dictionary reconstructs worse than the mean (random fixture weights: it does)
    QCOMPARE(fv->qualityLabel()->text().contains("explained variance < 0"), ref.explainedVariance < 0);
    QCOMPARE(w->tracePanel()->statusText().contains("explained variance < 0"), ref.explainedVariance < 0);

    const int64_t length = ref.features.size(0);
    QCOMPARE(fv->tokenText()->prompts().at(0).tokens.size(), qsizetype(length));
    for (int t = 0; t < length; ++t) {
        // hovering token t selects it, as the cursor does
        QTest::mouseMove(fv->tokenText(), fv->tokenText()->tokenRect(0, t).center());
        QCOMPARE(fv->selectedToken(), t);
        const auto expected = topFeatures(ref.features[t], 20);
        QCOMPARE(fv->topTable()->rowCount(), static_cast<int>(expected.size()));
        for (int i = 0; i < static_cast<int>(expected.size()); ++i) {
            QCOMPARE(fv->topTable()->item(i, 0)->data(Qt::UserRole).toLongLong(), expected[static_cast<size_t>(i)].feature);
            QCOMPARE(fv->topTable()->item(i, 1)->data(Qt::UserRole).toDouble(), expected[static_cast<size_t>(i)].activation);
        }
    }

    // clicking the second feature of the last token selects it: its activation over the prompt, logit effects, neighbours
    const int last = static_cast<int>(length - 1);
    QTest::mouseClick(fv->tokenText(), Qt::LeftButton, {}, fv->tokenText()->tokenRect(0, last).center());
    QCOMPARE(fv->selectedToken(), last);
    const int64_t chosen = topFeatures(ref.features[last], 2).at(1).feature;
    QTableWidget* top = fv->topTable();
    QTest::mouseClick(top->viewport(), Qt::LeftButton, {}, top->visualItemRect(top->item(1, 0)).center());
    QCOMPARE(fv->feature(), chosen);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(fv->detailsShown());
    const torch::Tensor acts = ref.features.index({Slice(), chosen});
    auto* bars = qobject_cast<QCPBars*>(fv->activationPlot()->plottable(0));
    QVERIFY(bars);
    QCOMPARE(bars->data()->size(), static_cast<int>(length));
    for (int t = 0; t < length; ++t) QCOMPARE(bars->data()->at(t)->value, acts[t].item<double>());
    const FeatureLogitEffects effects = featureLogitEffects(*model, *attached.dictionary, chosen, 10);
    QCOMPARE(fv->promotedTable()->rowCount(), 10);
    for (int i = 0; i < 10; ++i) {
        QCOMPARE(fv->promotedTable()->item(i, 0)->data(Qt::UserRole).toLongLong(), effects.promoted[static_cast<size_t>(i)].id);
        QCOMPARE(fv->suppressedTable()->item(i, 0)->data(Qt::UserRole).toLongLong(), effects.suppressed[static_cast<size_t>(i)].id);
    }
    // the logit effect is W_U · (gain ⊙ d), computed here independently
    const torch::Tensor d = attached.dictionary->wDec.index({chosen}).to(torch::kFloat32);
    const torch::Tensor logits = torch::matmul(model->lmHead().to(torch::kFloat32), model->finalNormWeight().to(torch::kFloat32) * d);
    // (the window computes in the model's dtype, bfloat16 here: a few parts in a thousand)
    QVERIFY(std::fabs(fv->promotedTable()->item(0, 1)->data(Qt::UserRole).toDouble() - logits.max().item<double>()) < 0.02);
    QVERIFY(std::fabs(fv->suppressedTable()->item(0, 1)->data(Qt::UserRole).toDouble() - logits.min().item<double>()) < 0.02);
    const auto nearest = nearestFeatures(*attached.dictionary, chosen, 10);
    QCOMPARE(fv->nearestTable()->rowCount(), 10);
    for (int i = 0; i < 10; ++i) QCOMPARE(fv->nearestTable()->item(i, 0)->data(Qt::UserRole).toLongLong(), nearest[static_cast<size_t>(i)].feature);
    const torch::Tensor wd = attached.dictionary->wDec;
    const double cos = torch::cosine_similarity(wd.index({chosen}), wd.index({nearest[0].feature}), 0).item<double>();
    QVERIFY(std::fabs(cos - nearest[0].cosine) < 1e-5);

    // find a feature by number
    fv->findSpin()->setValue(7);
    QCOMPARE(fv->feature(), int64_t(7));

    // a feature card: pinned from the view, its sparkline is the feature's activation over the prompt; Show selects it
    QTest::mouseClick(fv->pinButton(), Qt::LeftButton);
    QCOMPARE(w->pinnedPanel()->featureCards().size(), size_t(1));
    FeatureCard* card = w->pinnedPanel()->featureCards().front();
    QCOMPARE(card->feature(), int64_t(7));
    QCOMPARE(card->sparkline()->values().size(), size_t(length));
    for (int t = 0; t < length; ++t) QCOMPARE(card->sparkline()->values()[static_cast<size_t>(t)], ref.features[t][7].item<double>());
    fv->findSpin()->setValue(3);
    QTest::mouseClick(card->showButton(), Qt::LeftButton);
    QCOMPARE(fv->feature(), int64_t(7));
    QVERIFY(viewJobsDone(*w));

    // the Text view colours the tokens by the selected feature
    QVERIFY(w->showView("text"));
    TextView* tv = w->textView();
    tv->setMode(TextView::Mode::Feature);
    QCOMPARE(tv->feature(), int64_t(7));
    const auto& values = tv->tokenText()->prompts().at(0).values;
    QCOMPARE(values.size(), size_t(length));
    for (int t = 0; t < length; ++t) QCOMPARE(values[static_cast<size_t>(t)], ref.features[t][7].item<double>());

    // the diagram marks the site (layers.1.layer_output) at block 1, not at block 0
    w->diagramPanel()->setBlock(1);
    QCoreApplication::processEvents();
    QVERIFY(w->diagramPanel()->diagram()->dictionaryParts().contains("layer_output"));
    w->diagramPanel()->setBlock(0);
    QCoreApplication::processEvents();
    QVERIFY(w->diagramPanel()->diagram()->dictionaryParts().isEmpty());

    // detaching it (File ▸ Detach Dictionary) takes its quality off the trace's line, and a second features run does
    // not repeat it
    const QString name = QFileInfo(dictDir).fileName();
    QVERIFY(w->tracePanel()->statusText().contains(name));
    w->detachDictionary(0);
    QVERIFY(viewJobsDone(*w));
    QVERIFY2(!w->tracePanel()->statusText().contains(name), qPrintable(w->tracePanel()->statusText()));
    QVERIFY(w->attachDictionary(dictDir).isEmpty());  // attached again: traced again, said once
    QTRY_COMPARE_WITH_TIMEOUT(w->tracePanel()->statusText().count(name + " at "), 1, 30000);
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(w->tracePanel()->statusText().count(name + " at "), 1);
}

void TestGui::featuresWrongWidth() {
    QSettings().remove("dictionaries/attached");  // what another test attached
    // tiny-arcee's MLP dictionary reads 128 neurons; tiny-llama's blocks have 96: refused, with both sizes
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    const QString dir = kDictionaries + "/saelens-topk-arcee-mlp-post";
    const QString error = w->attachDictionary(dir);
    QVERIFY2(error.contains("128") && error.contains("96"), qPrintable(error));
    QVERIFY2(w->errorText().contains(QFileInfo(dir).absoluteFilePath()) && w->errorText().contains("128") && w->errorText().contains("96"),
             qPrintable(w->errorText()));
    QVERIFY(w->dictionaries().empty());
    const QString missing = w->attachDictionary(tmp_.filePath("no-such-dictionary"));
    QVERIFY(!missing.isEmpty());
    QVERIFY(w->dictionaries().empty());
}

void TestGui::featuresTranscoderSet() {
    // File ▸ Open Dictionary on a circuit-tracer transcoder set attaches every layer, one dictionary each, once; a
    // cross-layer transcoder is refused with the reason
    QSettings().remove("dictionaries/attached");  // what another test attached
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    const QString set = kDictionaries + "/circuittracer-plt-llama";
    QVERIFY(w->attachDictionary(set).isEmpty());
    QCOMPARE(w->dictionaryNames(), (QStringList{"circuittracer-plt-llama/layer_0", "circuittracer-plt-llama/layer_1"}));
    QCOMPARE(w->featuresView()->dictionaryCombo()->count(), 2);
    QVERIFY(w->attachDictionary(set).isEmpty());  // every layer attached already
    QCOMPARE(w->dictionaries().size(), size_t(2));
    const QString error = w->attachDictionary(kDictionaries + "/circuittracer-clt-llama");
    QVERIFY2(error.contains("cross-layer"), qPrintable(error));
    QCOMPARE(w->dictionaries().size(), size_t(2));
    QSettings().remove("dictionaries/attached");
}

void TestGui::featuresDashboard() {
    // The demo's SAE comes with a dashboard (resources/demo-model/sae-layers.0/dashboard.safetensors): the Features
    // view shows the selected feature's top contexts, shaded by its activation, its histogram, density and maximum, as
    // the file holds them.
    QSettings().remove("dictionaries/attached");
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QCOMPARE(w->dictionaries().size(), size_t(1));
    QVERIFY(w->showView("features"));
    QVERIFY(runFromPanel(*w, {"tom and lily went to the park with a ball . tom and lily went to the park with"}));
    QVERIFY(featuresDone(*w));
    FeaturesView* fv = w->featuresView();
    const Dashboard* dash = fv->currentDashboard();
    QVERIFY2(dash, "no dashboard beside the demo's SAE");
    const Dashboard file = loadDashboard(defaultDashboardPath(w->dictionaries().front().dictionary->dir));
    // the feature with the most positions in the dataset
    const int64_t feature = file.activeCount.argmax().item<int64_t>();
    fv->selectFeature(feature);
    QCOMPARE(fv->feature(), feature);
    QVERIFY(fv->dashboardText()->isVisible());
    const auto& contexts = fv->dashboardText()->prompts();
    QCOMPARE(static_cast<int>(contexts.size()), file.filledSlots(feature));
    QCOMPARE(static_cast<int>(contexts.size()), kDashboardTopK);
    const Tokenizer& tok = *w->model()->tokenizer();
    for (int s = 0; s < static_cast<int>(contexts.size()); ++s) {
        const auto& c = contexts[static_cast<size_t>(s)];
        QStringList tokens;
        std::vector<double> values;
        int selected = -1;
        for (int i = 0; i < kDashboardWindow; ++i) {
            const int64_t id = file.contextIds[feature][s][i].item<int64_t>();
            if (id < 0) continue;
            if (i == kDashboardBefore) selected = static_cast<int>(tokens.size());
            tokens << QString::fromStdString(tok.tokenLabel(id));
            values.push_back(file.contextActivation[feature][s][i].item<double>());
        }
        QCOMPARE(c.tokens, tokens);
        QCOMPARE(c.values, values);
        QCOMPARE(c.selected, selected);
        QCOMPARE(c.values[static_cast<size_t>(selected)], file.topActivation[feature][s].item<double>());
    }
    QCOMPARE(fv->dashboardText()->range().upper, file.maxActivation[feature].item<double>());
    const double density = static_cast<double>(file.activeCount[feature].item<int64_t>()) / static_cast<double>(file.positions);
    QVERIFY2(fv->dashboardLabel()->text().contains(QString("density %1").arg(density, 0, 'g', 4)), qPrintable(fv->dashboardLabel()->text()));
    QVERIFY(fv->dashboardLabel()->text().contains(QString("max %1").arg(file.maxActivation[feature].item<double>(), 0, 'g', 4)));
    // the histogram's bars sum to the positions where the feature fires
    double total = 0;
    auto* bars = qobject_cast<QCPBars*>(fv->histogramPlot()->plottable(0));
    QVERIFY(bars);
    for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) total += it->value;
    QCOMPARE(total, static_cast<double>(file.activeCount[feature].item<int64_t>()));

    // File ▸ Open Dashboard: a file that is not a dashboard is refused, and says so
    QVERIFY(w->openDashboard(demoModelDir() + "/model.safetensors").contains("not an nnscope feature dashboard"));

    // File ▸ Make Dashboard: made in the worker over a text file, then shown (the one the command line makes)
    const QString data = tmp_.filePath("dashboard-data.txt"), out = tmp_.filePath("made-dashboard.safetensors");
    {
        QFile f(data);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("tom and lily went to the park\nthe cat sat on the mat\nbut the dog ran away\n");
    }
    QSignalSpy ended(w.get(), &MainWindow::dashboardEnded);
    QVERIFY(w->makeDashboard(data, out).isEmpty());
    QVERIFY(ended.wait(60000));
    QVERIFY2(!w->errorText().contains("dashboard failed"), qPrintable(w->errorText()));
    const Dashboard made = loadDashboard(out.toStdString());
    QCOMPARE(made.metadata.at("documents_done"), std::string("3"));
    QCOMPARE(fv->currentDashboard()->metadata.at("dataset_sha256"), made.metadata.at("dataset_sha256"));
    QVERIFY(fv->dashboardLabel()->text().contains("dashboard-data.txt"));
}

void TestGui::featuresRemembered() {
    // the checkpoint remembers its dictionaries; a folder gone is dropped when the checkpoint opens again
    QSettings().remove("dictionaries/attached");  // what another test attached
    const QString kept = kDictionaries + "/saelens-jumprelu-llama-resid-post";
    const QString gone = tmp_.filePath("dictionary-gone");
    QVERIFY(QDir().mkpath(gone));
    for (const QString& f : QDir(kDictionaries + "/saelens-topk-llama-resid-post").entryList(QDir::Files))
        QVERIFY(QFile::copy(kDictionaries + "/saelens-topk-llama-resid-post/" + f, gone + "/" + f));
    {
        auto w = openWindow(modelDir("tiny-llama"));
        QVERIFY(w);
        QVERIFY(w->attachDictionary(kept).isEmpty());
        QVERIFY(w->attachDictionary(gone).isEmpty());
        // File ▸ Detach Dictionary lists them; detaching one forgets it, attaching it again brings it back
        auto* detach = w->findChild<QMenu*>("detachDictionaryMenu");
        QVERIFY(detach);
        emit detach->aboutToShow();
        QCOMPARE(detach->actions().size(), 2);
        detach->actions().at(1)->trigger();
        QCOMPARE(w->dictionaryNames(), QStringList{"saelens-jumprelu-llama-resid-post"});
        QVERIFY(w->attachDictionary(gone).isEmpty());
        QCOMPARE(w->dictionaries().size(), size_t(2));
        QCOMPARE(w->featuresView()->dictionaryCombo()->count(), 2);
    }
    QVERIFY(QDir(gone).removeRecursively());
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QCOMPARE(w->dictionaries().size(), size_t(1));
    QCOMPARE(QString::fromStdString(w->dictionaries().front().dictionary->dir), QFileInfo(kept).absoluteFilePath());
    QVERIFY(w->statusBar()->currentMessage().contains(gone));
    // another checkpoint has none
    auto other = openWindow(modelDir("tiny-arcee"));
    QVERIFY(other);
    QVERIFY(other->dictionaries().empty());
    // and the first is remembered without the folder gone
    w.reset();
    auto again = openWindow(modelDir("tiny-llama"));
    QVERIFY(again);
    QCOMPARE(again->dictionaries().size(), size_t(1));
    QVERIFY(!again->statusBar()->currentMessage().contains(gone));
    // a trace runs it at once
    QVERIFY(runFromPanel(*again, {"Tom and Lily went to the park."}));
    QVERIFY(featuresDone(*again));
    QVERIFY(again->featuresView()->currentRun());
}

void TestGui::featuresExportedAndReopened() {
    // Export ▸ Trace with the dictionaries' values asked writes each attached dictionary's features, reconstruction and
    // error (equal to the engine's runDictionary on each prompt, left padding kept) with the dictionary's folder and the
    // sha256 of its weights; the file opened again shows the activations in the Features view without the weights.
    const QString dictDir = kDictionaries + "/saelens-jumprelu-llama-resid-post";
    const std::vector<std::string> prompts = {"Tom and Lily went to the park.", "Tom"};
    QSettings().remove("dictionaries/attached");
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY(w->attachDictionary(dictDir).isEmpty());
    QVERIFY(runFromPanel(*w, {QString::fromStdString(prompts[0]), QString::fromStdString(prompts[1])}));
    QVERIFY(featuresDone(*w));
    const QString plain = tmp_.filePath("features-plain.safetensors"), with = tmp_.filePath("features-with.safetensors");
    auto* ask = w->findChild<QAction*>("exportDictionaryValuesAction");
    QVERIFY(ask && ask->isCheckable());
    ask->setChecked(false);
    QCOMPARE(w->exportTraceTo(plain), QString());
    QVERIFY(readTraceFile(plain.toStdString(), {}).result.dictionaryValues.empty());  // not asked: not written
    ask->setChecked(true);
    QCOMPARE(w->exportTraceTo(with), QString());

    const ModelPtr model = Model::load(modelDir("tiny-llama").toStdString());
    const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(dictDir.toStdString()));
    TraceOptions options;
    // what the window's trace saves: every block's attention probabilities (viewValueKeys) beside the site, so that both
    // compute attention the same way (a trace asking for no pattern may take scaled_dot_product_attention on libtorch >= 2)
    options.save = viewValueKeys(*model);
    for (const ValueKey& k : attached.neededValues()) options.save.push_back(k);
    const TraceResult result = trace(*model, encodeBatch(*model, prompts), options);
    TraceFileOptions noWeights;
    noWeights.loadWeights = false;
    const TraceFile tf = readTraceFile(with.toStdString(), noWeights);
    QCOMPARE(tf.result.dictionaryValues.size(), size_t(3));
    const std::string stem = "layers.1.layer_output[saelens-jumprelu-llama-resid-post].";
    const DictionaryValue* f = tf.result.dictionaryValue(stem + "features");
    const DictionaryValue* e = tf.result.dictionaryValue(stem + "error");
    QVERIFY(f && e);
    QCOMPARE(f->source->folder, QFileInfo(dictDir).absoluteFilePath().toStdString());
    QFile weights(dictDir + "/sae_weights.safetensors");
    QVERIFY(weights.open(QIODevice::ReadOnly));
    QCryptographicHash hash(QCryptographicHash::Sha256);
    QVERIFY(hash.addData(&weights));
    QCOMPARE(f->source->weights.at(0).second, hash.result().toHex().toStdString());
    const int64_t seq = f->tensor.size(1);
    for (int64_t row = 0; row < 2; ++row) {
        const FeatureRun ref = runDictionary(*model, result, attached, row);
        const int64_t length = ref.features.size(0);
        QVERIFY(torch::allclose(f->tensor[row].narrow(0, seq - length, length), ref.features, 1e-5, 1e-5));
        QVERIFY(torch::allclose(e->tensor[row].narrow(0, seq - length, length), ref.error, 1e-5, 1e-5));
    }

    // opened again: the Features view shows the file's activations, with no dictionary attached
    QSignalSpy opened(w.get(), &MainWindow::traceFileOpened);
    w->openTraceFile(with);
    QVERIFY2(opened.wait(60000), qPrintable(w->errorText()));
    QVERIFY(w->dictionaries().empty());
    QVERIFY(w->showView("features"));
    const FeatureRun* run = w->featuresView()->currentRun();
    QVERIFY(run);
    const FeatureRun ref = runDictionary(*model, result, attached, 0);
    QVERIFY(torch::allclose(run->features, ref.features, 1e-5, 1e-5));
    QVERIFY(std::abs(run->meanL0 - ref.meanL0) < 1e-9);
    QVERIFY(std::abs(run->mse - ref.mse) < 1e-6 * std::max(1.0, ref.mse));
    // and each value plots: prompt 1's features at its own positions (the padding cut)
    QVERIFY(w->plotDictionaryValue(QString::fromStdString(stem + "features")));
    auto* plot = qobject_cast<ValuePlotView*>(w->currentView());
    QVERIFY(plot && plot->dictionaryPath() == QString::fromStdString(stem + "features"));
    const torch::Tensor shown = mapTensor(plot->heatmap());
    QCOMPARE(shown.sizes().vec(), ref.features.sizes().vec());
    QVERIFY(torch::allclose(shown, ref.features.to(torch::kFloat64), 1e-5, 1e-5));
    QVERIFY(!w->plotDictionaryValue("layers.1.layer_output[elsewhere].features"));
    // the Model tab lists them with the sha256, each a link that plots it
    QTextBrowser* summary = nullptr;
    for (QTextBrowser* b : w->findChildren<QTextBrowser*>())
        if (b->toPlainText().contains(QString::fromStdString(stem + "error"))) summary = b;
    QVERIFY(summary);
    QVERIFY(summary->toPlainText().contains(QString::fromStdString(f->source->weights.at(0).second)));
    emit summary->anchorClicked(QUrl("dictionaryvalue:" + QString::fromLatin1(QUrl::toPercentEncoding(QString::fromStdString(stem + "error")))));
    plot = qobject_cast<ValuePlotView*>(w->currentView());
    QVERIFY(plot && plot->dictionaryPath() == QString::fromStdString(stem + "error"));
    QVERIFY(torch::allclose(mapTensor(plot->heatmap()), ref.error.to(torch::kFloat64), 1e-5, 1e-5));
}

void TestGui::circuitCrossLayerCard() {
    // A cross-layer transcoder's feature writes every layer from its own on: its card names the tokens the sum of its
    // decoder rows promotes (featureLogitEffects' cross-layer form), on tiny-llama with circuit-tracer's CLT fixture, and
    // its top contexts once its layer's encoder has a dashboard. The fixture is stored in bfloat16: float32 asked for,
    // as graphs are computed in it (`auto` would compute bfloat16 on a CPU with native bfloat16).
    auto w = openWindow(modelDir("tiny-llama"), "float32");
    QVERIFY(w);
    QVERIFY(runFromPanel(*w, {"the cat sat on the mat and the cat"}));
    CircuitView* cv = w->circuitView();
    const QString dir = kDictionaries + "/circuittracer-clt-llama";
    QSignalSpy ended(w->circuitJob(), &JobWatcher::ended);
    const QString refused = w->computeCircuit(dir);
    QVERIFY2(refused.isEmpty(), qPrintable(refused));
    QVERIFY(ended.count() > 0 || ended.wait(120000));
    QVERIFY2(cv->hasGraph(), qPrintable(cv->computeMessage()->text()));
    cv->setThresholds(1.0, 1.0);  // every node
    const GraphNode* feature = nullptr;
    for (const GraphNode& n : cv->shown().nodes)
        if (n.kind == GraphNode::Kind::Feature && n.layer == 0) feature = &n;  // writes layers 0 and 1
    QVERIFY(feature);
    cv->selectNode(feature->nodeId());
    const CircuitTranscoders t = loadCircuitTranscoders(dir.toStdString());
    QVERIFY(t.crossLayer);
    const FeatureLogitEffects effects = featureLogitEffects(*w->model(), *t.crossLayer, feature->layer, feature->index, 5);
    const QString card = cv->card()->toPlainText();
    QVERIFY2(card.contains("Promotes") && card.contains("the sum of its decoder rows to layers 0 to 1"), qPrintable(card));
    for (const TokenEffect& e : {effects.promoted.at(0), effects.suppressed.at(0)}) {
        const QString token = QString::fromStdString(w->model()->tokenizer()->tokenLabel(e.id));
        QVERIFY2(card.contains(QString("“%1” %2").arg(token).arg(e.logit, 0, 'f', 2)), qPrintable(card));
    }
    QVERIFY2(!card.contains("Top contexts"), qPrintable(card));

    // With a dashboard beside the layer's encoder (W_enc_L.dashboard.safetensors, made here from the traced prompt in a
    // copy of the transcoder), the card shows the feature's top contexts.
    const GraphNode chosen = *feature;
    checkCardShowsDashboard(
        *w, dir, chosen, [&](const std::string& copy) { return loadCrossLayerTranscoder(copy)->layerEncoder(chosen.layer); },
        QString("W_enc_%1.dashboard.safetensors").arg(chosen.layer), 1.0, 1.0);
}

void TestGui::circuitAsksForFloat32() {
    // A model the window computes in bfloat16 (asked for here; `auto` on a CPU with native bfloat16) cannot compute a
    // graph: the Compute button is off and says where the compute dtype is chosen, computeCircuit refuses with the same
    // sentence and starts nothing; reopened in float32 the button is on.
    auto w = openWindow(modelDir("tiny-llama"), "bfloat16");
    QVERIFY(w);
    QCOMPARE(w->model()->dtype(), torch::kBFloat16);
    QVERIFY(runFromPanel(*w, {"the cat sat on the mat"}));
    CircuitView* cv = w->circuitView();
    QVERIFY(!cv->computeButton()->isEnabled());
    const QString tip = cv->computeButton()->toolTip();
    QVERIFY2(tip.contains("computes in bfloat16") && tip.contains("Preferences") && tip.contains("Compute dtype"), qPrintable(tip));
    const QString refused = w->computeCircuit(kDictionaries + "/circuittracer-clt-llama");
    QCOMPARE(refused, tip);
    QCOMPARE(cv->computeMessage()->text(), tip);
    QVERIFY(!w->circuitJob()->isActive());

    auto f32 = openWindow(modelDir("tiny-llama"), "float32");
    QVERIFY(f32);
    QVERIFY(runFromPanel(*f32, {"the cat sat on the mat"}));
    QVERIFY2(f32->circuitView()->computeButton()->isEnabled(), qPrintable(f32->circuitView()->computeButton()->toolTip()));
}

void TestGui::circuitComputedInWindow() {
    // On the demo, after its own trace, the Circuit view offers the demo's transcoders and computes the graph of the
    // repeated sentence in the worker: the estimate is shown first, the graph's target is "a" and the largest edge into
    // it comes from the token "a" at its first occurrence (the induction route, as `nnscope circuit` finds it); a
    // folder without transcoders is refused with a message naming it, and nothing runs.
    StartOptions options;
    options.useSettings = false;  // the demo, traced at start
    MainWindow w(options);
    w.show();
    QSignalSpy traced(&w, &MainWindow::traceEnded);
    QVERIFY(traced.wait(60000));
    CircuitView* cv = w.circuitView();
    QVERIFY2(cv->computeButton()->isEnabled(), qPrintable(cv->computeButton()->toolTip()));
    QCOMPARE(QFileInfo(cv->transcodersDir()).fileName(), QString("transcoders"));

    QTemporaryDir empty;
    QVERIFY(!w.computeCircuit(empty.path()).isEmpty());
    QVERIFY2(cv->computeMessage()->text().contains(empty.path()), qPrintable(cv->computeMessage()->text()));
    QVERIFY(!w.circuitJob()->isActive());

    QSignalSpy ended(w.circuitJob(), &JobWatcher::ended);
    QTest::mouseClick(cv->computeButton(), Qt::LeftButton);
    QVERIFY(ended.count() > 0 || ended.wait(120000));
    // the bar counted the graph's rows while it ran, then the trace's blocks again (not "block 1411 / 1411")
    QCOMPARE(w.tracePanel()->progressBar()->text(), QString("block %1 / %1").arg(w.model()->config().numLayers));
    QVERIFY2(cv->hasGraph(), qPrintable(cv->computeMessage()->text()));
    QVERIFY2(cv->computeMessage()->text().startsWith("Estimate: about"), qPrintable(cv->computeMessage()->text()));
    QCOMPARE(w.views()->currentWidget(), cv);
    const AttributionGraph& g = cv->graph();
    const int64_t logit = g.findNode("3_5_20");
    QVERIFY(logit >= 0 && g.nodes[logit].targetLogit);
    const int64_t strongest = g.strongestInput(logit);
    QVERIFY(strongest >= 0);
    QCOMPARE(g.nodes[g.source[strongest]].nodeId(), std::string("E_5_9"));
    QVERIFY(cv->visibleNodeCount() > 0 && cv->visibleNodeCount() < static_cast<int>(g.nodes.size()));  // pruned at 0.8 / 0.98
    QVERIFY(cv->computeButton()->isEnabled());

    // A feature's card names the tokens its decoder row promotes, as featureLogitEffects computes them.
    cv->setThresholds(0.95, 0.98);  // block 1's features at the last position appear
    const GraphNode* feature = nullptr;
    for (const GraphNode& n : cv->shown().nodes)
        if (n.kind == GraphNode::Kind::Feature) feature = &n;
    QVERIFY(feature);
    cv->selectNode(feature->nodeId());
    const auto layers = loadTranscoderSet(cv->transcodersDir().toStdString());
    const FeatureLogitEffects effects = featureLogitEffects(*w.model(), *layers.at(static_cast<size_t>(feature->layer)), feature->index, 5);
    const QString card = cv->card()->toPlainText();
    QVERIFY2(card.contains("Promotes"), qPrintable(card));
    const QString top = QString::fromStdString(w.model()->tokenizer()->tokenLabel(effects.promoted.at(0).id));
    QVERIFY2(card.contains(QString("“%1” %2").arg(top).arg(effects.promoted[0].logit, 0, 'f', 2)), qPrintable(card));

    // Steering the pinned features checks the story on the model: ablating the feature adds its edit to the
    // interventions, and the next trace applies it (the logits move; the unedited run is the baseline).
    QVERIFY(!cv->steerButton()->isEnabled());
    cv->togglePin(feature->nodeId());
    QVERIFY(cv->steerButton()->isEnabled());
    QCOMPARE(cv->pinnedFeatures().size(), size_t(1));
    // By default at the node's own position only (circuit-tracer's interventions).
    const QString dir = QString::fromStdString(layers[static_cast<size_t>(feature->layer)]->dir);
    QVERIFY2(w.steerCircuitFeatures(cv->pinnedFeatures(), 0.0).isEmpty(), qPrintable(w.errorText()));
    const QString line = QString("feature %1:%2@%3 *= 0").arg(dir).arg(feature->index).arg(feature->position);
    QCOMPARE(w.interventionPanel()->active(), QStringList{line});
    const torch::Tensor before = w.snapshot()->result.nextTokenProbs[0].clone();  // [vocab] of the one prompt
    QVERIFY(runFromPanel(w, {w.snapshot()->result.batch.prompts[0].c_str()}));
    QCOMPARE(w.snapshot()->interventions, QStringList{line});
    const torch::Tensor after = w.snapshot()->result.nextTokenProbs[0];
    QVERIFY((after - before).abs().max().item<double>() > 1e-4);

    // The dialog behind Steer pinned…: "Set to" 3 with the position box unticked clamps the feature everywhere.
    w.interventionPanel()->clear();
    QTimer::singleShot(0, [] {
        auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        QVERIFY(dialog);
        dialog->findChild<QComboBox*>("circuitSteerHow")->setCurrentIndex(1);
        dialog->findChild<QDoubleSpinBox*>("circuitSteerValue")->setValue(3.0);
        dialog->findChild<QCheckBox*>("circuitSteerOwnPosition")->setChecked(false);
        dialog->accept();
    });
    cv->steerButton()->click();
    QCOMPARE(w.interventionPanel()->active(), QStringList{QString("feature %1:%2 = 3").arg(dir).arg(feature->index)});
    w.interventionPanel()->clear();

    // With a dashboard beside the layer's transcoder (layer_L.dashboard.safetensors, made here from the traced prompt's
    // text in a copy of the set), the card shows the feature's top contexts.
    const GraphNode chosen = *feature;
    checkCardShowsDashboard(
        w, cv->transcodersDir(), chosen,
        [&](const std::string& copy) { return loadTranscoderSet(copy).at(static_cast<size_t>(chosen.layer)); },
        QString("layer_%1.dashboard.safetensors").arg(chosen.layer), 0.95, 0.98);
}

void TestGui::circuitView() {
    // A graph circuit-tracer wrote opens in the Circuit view without a model; the node slider re-prunes to
    // circuit-tracer's own pruned graph; Ctrl+click pins, a supernode groups the pins, a label is typed, and the file
    // saved reads back with them.
    const QString circuits = kFixtures + "/../circuits";
    StartOptions options;
    options.openDefault = false;
    options.useSettings = false;
    options.graphFile = circuits + "/graph-a-full.json";
    MainWindow w(options);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    CircuitView* cv = w.circuitView();
    QVERIFY2(cv->hasGraph(), qPrintable(w.errorText()));
    QCOMPARE(w.views()->currentWidget(), cv);
    QCOMPARE(cv->visibleNodeCount(), 128);  // the whole graph at 1.00 / 1.00
    QCOMPARE(cv->visibleEdgeCount(), 773);
    // circuit-tracer's pruned file at the defaults
    const nlohmann::json pruned = readJsonObjectFile((circuits + "/graph-a-pruned.json").toStdString(), 16 * kMiB);
    const int prunedNodes = static_cast<int>(pruned["nodes"].size());
    QVERIFY(prunedNodes < 128);
    cv->edgeSlider()->setValue(980);
    {  // the edge threshold alone (node 1.00): the engine's pruning at 1.0 / 0.98
        const AttributionGraph whole = readGraphJson(options.graphFile.toStdString());
        const AttributionGraph edgesOnly = prunedSubgraph(whole, pruneGraph(whole, 1.0, 0.98), 1.0, 0.98);
        QCOMPARE(cv->visibleNodeCount(), static_cast<int>(edgesOnly.nodes.size()));
        QCOMPARE(cv->visibleEdgeCount(), static_cast<int>(edgesOnly.edgeCount()));
        QVERIFY(cv->visibleEdgeCount() < 773);
    }
    cv->nodeSlider()->setFocus();
    cv->nodeSlider()->setValue(850);
    for (int i = 0; i < 5; ++i) QTest::keyClick(cv->nodeSlider(), Qt::Key_Left);  // 5 single steps of 0.005: 0.825
    QCOMPARE(cv->nodeThreshold(), 0.825);
    cv->nodeSlider()->setValue(800);
    QCOMPARE(cv->visibleNodeCount(), prunedNodes);
    QCOMPARE(cv->visibleEdgeCount(), static_cast<int>(pruned["links"].size()));
    for (size_t i = 0; i < cv->shown().nodes.size(); ++i) QCOMPARE(cv->shown().nodes[i].nodeId(), pruned["nodes"][i]["node_id"].get<std::string>());
    int errors = 0;
    for (const GraphNode& n : cv->shown().nodes) errors += n.kind == GraphNode::Kind::Error;
    QVERIFY(errors > 0);
    cv->hideErrorsBox()->setChecked(true);
    QCOMPARE(cv->visibleNodeCount(), prunedNodes - errors);
    cv->hideErrorsBox()->setChecked(false);

    // two features pinned with Ctrl+click where they are drawn
    std::vector<int> features;
    for (int i = 0; i < static_cast<int>(cv->shown().nodes.size()) && features.size() < 2; ++i)
        if (cv->shown().nodes[static_cast<size_t>(i)].kind == GraphNode::Kind::Feature) features.push_back(i);
    QCOMPARE(features.size(), size_t{2});
    QWidget* canvas = cv->canvas();
    for (int i : features) {
        const QPoint at = cv->nodePoint(i).toPoint();
        QCOMPARE(cv->nodeAt(at), i);
        QTest::mouseClick(canvas, Qt::LeftButton, Qt::ControlModifier, at);
    }
    const std::string a = cv->shown().nodes[static_cast<size_t>(features[0])].nodeId(), b = cv->shown().nodes[static_cast<size_t>(features[1])].nodeId();
    QCOMPARE(cv->shown().pinnedIds, (std::vector<std::string>{a, b}));
    // a plain click shows the card: a feature's activation
    QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier, cv->nodePoint(features[0]).toPoint());
    QCOMPARE(cv->selectedNode(), a);
    QVERIFY2(cv->card()->toPlainText().contains("Activation"), qPrintable(cv->card()->toPlainText()));
    // its label, typed into the label field
    cv->labelEdit()->setFocus();
    cv->labelEdit()->selectAll();
    QTest::keyClicks(cv->labelEdit(), "says cat");
    QTest::keyClick(cv->labelEdit(), Qt::Key_Return);
    QCOMPARE(cv->shown().nodes[static_cast<size_t>(features[0])].label, std::string("says cat"));
    QVERIFY(cv->groupPinned("cat route"));
    QCOMPARE(cv->shown().supernodes.size(), size_t{1});

    // saved and read back: the pruned graph with its pins, supernode and label
    const QString path = tmp_.filePath("circuit-saved.json");
    QCOMPARE(cv->saveGraph(path), QString());
    const AttributionGraph back = readGraphJson(path.toStdString());
    QCOMPARE(static_cast<int>(back.nodes.size()), prunedNodes);
    QCOMPARE(back.pinnedIds, (std::vector<std::string>{a, b}));
    QCOMPARE(back.supernodes.size(), size_t{1});
    QCOMPARE(back.supernodes[0].name, std::string("cat route"));
    QCOMPARE(back.supernodes[0].nodeIds, (std::vector<std::string>{a, b}));
    QCOMPARE(back.nodes[static_cast<size_t>(back.findNode(a))].label, std::string("says cat"));
    QCOMPARE(back.nodeThreshold, 0.8);

    // it opens again as it was saved; a broken file is refused with its name
    QCOMPARE(w.openGraphFile(path), QString());
    QCOMPARE(cv->visibleNodeCount(), prunedNodes);
    QCOMPARE(cv->shown().pinnedIds.size(), size_t{2});
    const QString bad = tmp_.filePath("circuit-bad.json");
    {
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"metadata\": ");
    }
    const QString error = w.openGraphFile(bad);
    QVERIFY2(error.contains(bad) && error.contains("not valid JSON"), qPrintable(error));
    QVERIFY(w.errorText().contains(bad));
    QCOMPARE(cv->visibleNodeCount(), prunedNodes);  // the graph shown stays

    // `gui --open-graph FILE --screenshot PNG` needs no model; a broken graph ends it with the file's error
    auto run = [](const QStringList& args, QString* err) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        p.setProcessEnvironment(env);
        p.start(kBinary, args);
        if (!p.waitForFinished(60000)) return -1;
        *err = QString::fromUtf8(p.readAllStandardError());
        return p.exitCode();
    };
    QString err;
    const QString shot = tmp_.filePath("circuit-shot.png");
    QCOMPARE(run({"gui", "--open-graph", circuits + "/graph-b-pruned.json", "--screenshot", shot}, &err), 0);
    QVERIFY2(!QImage(shot).isNull(), qPrintable(err));
    QCOMPARE(run({"gui", "--open-graph", bad, "--screenshot", shot}, &err), 1);
    QVERIFY2(err.contains(bad) && err.contains("not valid JSON"), qPrintable(err));
}

void TestGui::circuitViewMillionEdges() {
    // A graph of a million edges: the view prunes it when a slider moves and draws it (only the strongest edges while
    // the whole graph is on screen) in a fraction of a second.
    AttributionGraph g = test::syntheticGraph(/*layers=*/16, /*positions=*/24, /*featuresPerCell=*/20, /*edgesPerFeature=*/230,
                                              /*logits=*/10, /*seed=*/3);
    g.modelDir = "computed";  // starts at the graph's thresholds, 0.8 / 0.98, as a computed graph does
    QVERIFY(g.edgeCount() > 1'000'000);
    const int64_t edges = g.edgeCount();
    CircuitView view;
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QElapsedTimer timer;
    timer.start();
    view.setGraph(std::move(g));
    const qint64 setMs = timer.restart();
    QCOMPARE(view.nodeThreshold(), 0.8);
    QVERIFY(view.visibleEdgeCount() > 0 && view.visibleEdgeCount() < edges);
    view.canvas()->grab();
    const qint64 prunedPaintMs = timer.restart();
    view.setThresholds(1.0, 1.0);  // every edge: the canvas draws the strongest
    const qint64 wholeMs = timer.restart();
    QCOMPARE(static_cast<int64_t>(view.visibleEdgeCount()), edges);
    view.canvas()->grab();
    const qint64 wholePaintMs = timer.restart();
    view.nodeSlider()->setValue(700);
    const qint64 slideMs = timer.restart();
    qInfo("%lld edges: shown in %lld ms, pruned graph drawn in %lld ms; whole graph shown in %lld ms, drawn in %lld ms; "
          "node slider re-pruned in %lld ms", static_cast<long long>(edges), setMs, prunedPaintMs, wholeMs, wholePaintMs, slideMs);
    // (Timings are printed, not asserted: speed is a benchmark's business, and this machine is shared. Measured alone:
    // 0.17 s, 0.25 s, 0.07 s.) The slider re-pruned: fewer edges than the whole graph again.
    QVERIFY(view.visibleEdgeCount() > 0 && view.visibleEdgeCount() < edges);
}

#include "test_gui.moc"

namespace {
/// A widget whose click throws, as a slot or an event handler that calls into the engine may.
class ThrowingWidget : public QWidget {
public:
    using QWidget::QWidget;

protected:
    void mousePressEvent(QMouseEvent*) override { throw Error("thrown by a click"); }
};
}  // namespace

void TestGui::exceptionsNeverLeaveASlot() {
    // No exception may leave a Qt slot: one did (a token label the tokenizer could not make, in the trace's result) and
    // the window aborted, exit 134. A slot of a job's result that throws makes the job fail with its message; any
    // other slot or event handler that throws is caught by GuardedApplication and said in the error bar; the window
    // goes on and traces again.
    auto* app = qobject_cast<GuardedApplication*>(QCoreApplication::instance());
    QVERIFY(app);
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    const int reported = app->reported();

    // a worker result whose handling throws: the trace fails, saying why
    QMetaObject::Connection c = w->traceJob()->onFinished<SnapshotPtr>(w.get(), [](SnapshotPtr) { throw Error("no label for id 310"); });
    w->tracePanel()->setPrompts({"hello world"});
    QSignalSpy ended(w.get(), &MainWindow::traceEnded);
    QTest::mouseClick(w->tracePanel()->runButton(), Qt::LeftButton);
    QVERIFY(ended.wait(60000));
    QVERIFY2(w->errorText().contains("showing the result failed: no label for id 310"), qPrintable(w->errorText()));
    QVERIFY2(w->tracePanel()->statusText().contains("no label for id 310"), qPrintable(w->tracePanel()->statusText()));
    QCOMPARE(w->traceJob()->state(), JobState::Failed);
    QObject::disconnect(c);

    // a job that throws something that is not a std::exception fails with a sentence; the worker goes on (a worker of
    // its own: the window's drops queued jobs when a trace ends)
    TraceWorker worker;
    QSignalSpy failed(&worker, &TraceWorker::jobFailed);
    QSignalSpy finished(&worker, &TraceWorker::jobFinished);
    const quint64 id = worker.analyse([](const JobControl&) -> QVariant { throw 42; });
    const quint64 next = worker.analyse([](const JobControl&) { return QVariant(7); });
    QVERIFY(failed.wait(10000));
    QCOMPARE(failed.front().at(0).value<quint64>(), id);
    QCOMPARE(failed.front().at(1).toString(), QString("an exception of an unknown type"));
    QVERIFY(finished.count() > 0 || finished.wait(10000));
    QCOMPARE(finished.front().at(0).value<quint64>(), next);

    // a queued slot that throws
    QTimer::singleShot(0, w.get(), [] { throw std::runtime_error("thrown by a slot"); });
    QTRY_VERIFY2(w->errorText().contains("thrown by a slot"), qPrintable(w->errorText()));
    QVERIFY(w->errorText().contains("Something failed inside the window"));
    // an event handler that throws (a click: through QApplication's own delivery)
    auto* thrower = new ThrowingWidget(w.get());
    thrower->setGeometry(0, 0, 20, 20);
    thrower->show();
    QTest::mouseClick(thrower, Qt::LeftButton);
    QTRY_VERIFY2(w->errorText().contains("thrown by a click"), qPrintable(w->errorText()));
    QVERIFY(app->reported() >= reported + 3);  // the result's slot, the queued slot, the click
    delete thrower;

    // the window goes on
    QVERIFY2(runFromPanel(*w, {"hello again"}), qPrintable(w->errorText()));
    QCOMPARE(w->snapshot()->prompt(0), QString("hello again"));
    QVERIFY(w->tracePanel()->statusText().startsWith("Traced 1 prompt"));
}

void TestGui::paddedVocabularyInWindow() {
    // A checkpoint whose vocabulary is padded past its tokenizer's (Qwen2, Phi-3, Pythia) with a padded id as the top
    // token: the window aborted (the label thrown out of the trace's result). Now the trace line, the logit lens and a
    // generation show '<id 305: not in tokenizer>'.
    const auto plain = Model::load(modelDir("tiny-llama").toStdString());
    const int64_t like = trace(*plain, encodeBatch(*plain, {"hello world"}), {}).nextTokenProbs[0].argmax().item<int64_t>();
    QTemporaryDir dir;
    test::copyCheckpoint(modelDir("tiny-llama").toStdString(), dir.path().toStdString());
    test::padVocabulary(dir.path().toStdString(), 310, 305, like);
    const QString label = "<id 305: not in tokenizer>";
    auto w = openWindow(dir.path());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(runFromPanel(*w, {"hello world"}), qPrintable(w->errorText()));
    QVERIFY2(w->tracePanel()->statusText().contains("“" + label + "”"), qPrintable(w->tracePanel()->statusText()));
    QVERIFY(w->errorText().isEmpty());

    QVERIFY(w->showView("lens"));
    QVERIFY(lensDone(*w));
    LogitLensView* lv = w->lensView();
    QVERIFY(lv->hasLens());
    QCOMPARE(lv->targetId(), int64_t(305));  // the trace's top token, the lens's default target
    MatrixModel* m = lv->heatmap()->model();
    const QModelIndex last = m->index(m->rowCount() - 1, m->columnCount() - 1);
    QCOMPARE(m->data(last, MatrixModel::CellTextRole).toString(), label);
    QVERIFY(m->data(last, Qt::ToolTipRole).toString().contains("1. " + label));

    QVERIFY(w->showView("generate"));
    GenerateView* gv = w->generateView();
    gv->setPrompt("hello world");
    gv->setMaxNewTokens(2);
    QSignalSpy generated(w.get(), &MainWindow::generateEnded);
    QTest::mouseClick(gv->runButton(), Qt::LeftButton);
    QVERIFY(generated.wait(60000));
    QVERIFY2(gv->result(), qPrintable(gv->statusLabel()->text()));
    const auto& ids = gv->result()->edited.ids;
    QCOMPARE(ids.at(static_cast<size_t>(gv->result()->edited.promptLength)), int64_t(305));
    QVERIFY2(gv->editedText()->toPlainText().contains(label), qPrintable(gv->editedText()->toPlainText()));
    QVERIFY(w->errorText().isEmpty());
}

void TestGui::nonFiniteValuesShown() {
    // NaN and Inf in values were drawn as an empty heatmap with a 0..1 colour bar, the logit lens named a top token for
    // NaN rows, and only the trace line said "(nan)". Now each has a colour of its own with a count under the plot, a
    // banner names the first value and position where they appear, and the lens names no token there.
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    const ValueKey out{Value::MlpOutput, 0};
    w->pinValue(out);
    QCOMPARE(w->addIntervention("layers.0.mlp.mlp_output[:, 3] = nan"), QString());
    QCOMPARE(w->addIntervention("layers.0.mlp.mlp_output[:, 1] = inf"), QString());
    QVERIFY2(runFromPanel(*w, {"hello world"}), qPrintable(w->errorText()));
    QLabel* banner = w->nonFiniteBanner();
    QVERIFY(banner->isVisibleTo(w.get()));
    QVERIFY2(banner->text().contains("+Inf first appears at layers.0.mlp.mlp_output, position 1 “"), qPrintable(banner->text()));
    QVERIFY2(banner->text().contains("of prompt 1 (128 of its values are not finite)"), qPrintable(banner->text()));
    QVERIFY2(w->tracePanel()->statusText().contains("Next token after prompt 1: none, the output is not finite"),
             qPrintable(w->tracePanel()->statusText()));
    const int hidden = static_cast<int>(w->model()->config().hiddenSize);

    // the value's heatmap: NaN and +Inf in their colours, counted under the matrix
    w->plotValue(out);
    auto* view = qobject_cast<ValuePlotView*>(w->views()->currentWidget());
    QVERIFY(view);
    HeatmapPlot* hm = view->heatmap();
    QCOMPARE(hm->nanCount(), hidden);
    QCOMPARE(hm->posInfCount(), hidden);
    QCOMPARE(hm->negInfCount(), 0);
    QVERIFY2(hm->nonFiniteText().contains(QString("%1 NaN (magenta) · %1 +Inf (amber) of").arg(hidden)), qPrintable(hm->nonFiniteText()));
    // drawn once the new tab is laid out: a pixel row per position (10 of them fit)
    QTRY_VERIFY((hm->plot()->replot(QCustomPlot::rpImmediateRefresh), hm->colorMap()->lastImageCells().height() == 10));
    const QImage image = hm->colorMap()->lastImage();
    const QRect cells = hm->colorMap()->lastImageCells();
    QCOMPARE(image.height(), cells.height());
    QCOMPARE(image.pixel(0, 3 - cells.y()), kNanColor);
    QCOMPARE(image.pixel(image.width() - 1, 1 - cells.y()), kPosInfColor);
    for (int row : {0, 2})
        QVERIFY(image.pixel(0, row - cells.y()) != kNanColor && image.pixel(0, row - cells.y()) != kPosInfColor);

    // block 1's neurons are NaN everywhere (the attention mixes the NaN into every position): no colour scale
    QVERIFY(w->showView("neurons"));
    w->neuronView()->setBlock(1);
    HeatmapPlot* neurons = w->neuronView()->heatmap();
    QCOMPARE(neurons->nanCount(), neurons->model()->rowCount() * neurons->model()->columnCount());
    QVERIFY2(neurons->nonFiniteText().endsWith("no colour scale"), qPrintable(neurons->nonFiniteText()));

    // the logit lens names no token where a block's logits are not finite
    QVERIFY(w->showView("lens"));
    QVERIFY(lensDone(*w));
    MatrixModel* lens = w->lensView()->heatmap()->model();
    QCOMPARE(lens->data(lens->index(0, 3), MatrixModel::CellTextRole).toString(), QString("NaN"));
    QVERIFY(lens->data(lens->index(0, 3), Qt::ToolTipRole).toString().contains("no top token"));
    QCOMPARE(lens->data(lens->index(1, 9), MatrixModel::CellTextRole).toString(), QString("NaN"));
    QVERIFY(lens->data(lens->index(0, 2), MatrixModel::CellTextRole).toString() != "NaN");
    QVERIFY(w->lensView()->heatmap()->nanCount() > 0);

    // a finite trace takes the banner away
    w->interventionPanel()->clear();
    QVERIFY2(runFromPanel(*w, {"hello world"}), qPrintable(w->errorText()));
    QVERIFY(!banner->isVisibleTo(w.get()));
    QCOMPARE(w->lensView()->heatmap()->nanCount(), 0);
}

void TestGui::longPromptTraceFileIsElided() {
    // A trace file with a prompt of a megabyte in its metadata held the window for minutes in text layout (100 kB: 10 s).
    // What is shown of it is elided (the Model tab, the prompt lists, the token labels); the whole prompt is copied on
    // demand.
    const auto m = Model::load(modelDir("tiny-llama").toStdString());
    TraceOptions o;
    for (int i = 0; i < m->config().numLayers; ++i) o.save.push_back({Value::LayerOutput, i});
    TraceResult r = trace(*m, encodeBatch(*m, {"hello world"}), o);
    const std::string longPrompt = "hello world " + std::string(1000000, 'x');
    r.batch.prompts = {longPrompt};
    const QString written = tmp_.filePath("long-prompt-written.safetensors"), path = tmp_.filePath("long-prompt.safetensors");
    exportValues(written.toStdString(), *m, r);
    {  // and a token label of a megabyte, as a damaged file may hold
        SafetensorsFile f(written.toStdString());
        std::map<std::string, std::string> metadata = f.metadata();
        auto tokens = nlohmann::json::parse(metadata.at("tokens"));
        tokens[0][1] = std::string(1000000, 'y');
        metadata["tokens"] = tokens.dump();
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        for (const auto& [name, e] : f.entries()) tensors.emplace_back(name, f.tensor(name).clone());
        writeSafetensors(path.toStdString(), tensors, metadata);
    }
    StartOptions options;
    options.openDefault = false;
    options.useSettings = false;
    MainWindow w(options);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy opened(&w, &MainWindow::traceFileOpened);
    w.openTraceFile(path);
    QVERIFY2(opened.wait(60000), qPrintable(w.errorText()));
    QCOMPARE(w.snapshot()->prompt(0).size(), static_cast<int>(longPrompt.size()));  // kept whole, shown elided
    QVERIFY(w.showView("model"));
    auto* summary = qobject_cast<QTextBrowser*>(w.views()->currentWidget());
    QVERIFY(summary);
    const QString shown = summary->toPlainText();
    QVERIFY2(shown.size() < 20000, qPrintable(QString::number(shown.size())));
    QVERIFY2(shown.contains("(1,000,012 characters in all)") && shown.contains("copy the whole prompt"), qPrintable(shown.left(3000)));
    // the link copies it whole
    emit summary->anchorClicked(QUrl("prompt:0"));
    QCOMPARE(QGuiApplication::clipboard()->text().size(), static_cast<int>(longPrompt.size()));
    // the views' prompt lists and token labels
    for (const char* view : {"attention", "neurons", "lens", "text"}) {
        QVERIFY(w.showView(view));
        for (auto* combo : w.views()->currentWidget()->findChildren<QComboBox*>())
            for (int i = 0; i < combo->count(); ++i) QVERIFY2(combo->itemText(i).size() < 400, view);
    }
    QVERIFY(w.showView("attention"));
    const QStringList& labels = w.snapshot()->tokens.at(0);
    QVERIFY2(labels.value(1).size() < 200 && labels.value(1).contains("(1,000,000 characters in all)"), qPrintable(labels.value(1).left(300)));
    for (const QString& label : labels) QVERIFY(label.size() < 200);
    QVERIFY(w.windowTitle().size() < 300);
    QVERIFY(w.errorText().isEmpty());
}

// #28: the next-token probability of a 128k vocabulary printed "(0.000)"; probabilities keep three significant digits
// wherever the views print them (the trace line, the lens tooltips, the before/after tables).
void TestGui::probabilitiesKeepSignificantDigits() {
    QCOMPARE(probabilityText(0.5123), QString("0.512"));
    QCOMPARE(probabilityText(0.031415), QString("0.0314"));
    QCOMPARE(probabilityText(0.00042), QString("0.000420"));
    QCOMPARE(probabilityText(2.4134e-5), QString("2.41e-05"));
    QCOMPARE(probabilityText(-0.0031), QString("-0.00310"));
    QCOMPARE(probabilityText(1.0), QString("1.00"));
    QCOMPARE(probabilityText(0.0), QString("0"));
    QCOMPARE(probabilityText(std::nan("")), QString("NaN"));
}

// #28: Help > Documentation (F1) opens the guides shipped with the program (F1 opened About); from the build tree they
// are the source tree's docs/, installed they are share/doc/nnscope (app/CMakeLists.txt installs README.md and docs/).
void TestGui::helpOpensDocumentation() {
    const QString docs = docsDir();
    QVERIFY2(QFileInfo::exists(docs + "/GUI.md") && QFileInfo::exists(docs + "/screenshots"), qPrintable(docs));
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QAction* documentation = nullptr;
    for (QMenu* menu : w->menuBar()->findChildren<QMenu*>())
        if (menu->title() == "&Help")
            for (QAction* a : menu->actions())
                if (a->text() == "&Documentation") documentation = a;
    QVERIFY2(documentation, "Help has no Documentation entry");
    QVERIFY(documentation->isEnabled());
    QCOMPARE(documentation->shortcut(), QKeySequence(Qt::Key_F1));
    QVERIFY2(documentation->statusTip().contains(docs + "/GUI.md"), qPrintable(documentation->statusTip()));
    for (QAction* a : w->findChildren<QAction*>())
        if (a != documentation) QVERIFY2(a->shortcut() != QKeySequence(Qt::Key_F1), qPrintable(a->text() + " also takes F1"));
}

// #28: after another checkpoint is opened, the trace line and the bar no longer speak of the previous model's trace
// (its message, its token count, "block 2 / 2").
void TestGui::tracePanelClearsOnAnotherModel() {
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QVERIFY2(w->tracePanel()->statusText().startsWith("Traced"), qPrintable(w->tracePanel()->statusText()));
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(modelDir("tiny-qwen2"));
    QVERIFY(opened.wait(60000));
    const QString text = w->tracePanel()->statusText();
    QVERIFY2(text.startsWith("Opened tiny-qwen2 (Qwen2)") && !text.contains("Traced") && !text.contains("tokens"), qPrintable(text));
    QVERIFY2(w->tracePanel()->progressBar()->text().isEmpty(), qPrintable(w->tracePanel()->progressBar()->text()));
    QVERIFY(runFromPanel(*w, {"hello world"}));  // and the next trace says its own outcome
    QVERIFY2(w->tracePanel()->statusText().startsWith("Traced"), qPrintable(w->tracePanel()->statusText()));
}

void TestGui::dropOpensFiles() {
    // #28: a checkpoint folder, a file inside it, a trace file and a dictionary's folder dropped on the window open
    // as File ▸ Open would; anything else is refused with a message
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    auto drop = [&](const QString& path) {
        auto* mime = new QMimeData;
        mime->setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &enter);
        const bool accepted = enter.isAccepted();
        QDropEvent dropEvent(QPointF(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &dropEvent);
        delete mime;
        return accepted;
    };
    QString target;
    QCOMPARE(classifyDrop(modelDir("tiny-qwen2"), &target), DropKind::Checkpoint);
    QCOMPARE(classifyDrop(modelDir("tiny-qwen2") + "/config.json", &target), DropKind::Checkpoint);
    QCOMPARE(QFileInfo(target).absoluteFilePath(), QFileInfo(modelDir("tiny-qwen2")).absoluteFilePath());
    QCOMPARE(classifyDrop(demoModelDir() + "/sae-layers.0", &target), DropKind::Dictionary);
    QCOMPARE(classifyDrop(demoModelDir() + "/sae-layers.0/sae_weights.safetensors", &target), DropKind::Dictionary);
    QCOMPARE(classifyDrop(tmp_.path(), &target), DropKind::None);

    // a dictionary's folder attaches it to the open checkpoint
    QSettings().remove("dictionaries/attached");  // what another test attached
    const QString dictionary = kDictionaries + "/saelens-jumprelu-llama-resid-post";
    QCOMPARE(classifyDrop(dictionary, &target), DropKind::Dictionary);
    QCOMPARE(w->dictionaries().size(), size_t(0));
    QVERIFY(drop(dictionary));
    QCOMPARE(w->dictionaries().size(), size_t(1));
    QCOMPARE(QFileInfo(QString::fromStdString(w->dictionaries()[0].dictionary->dir)).absoluteFilePath(), QFileInfo(dictionary).absoluteFilePath());

    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    QVERIFY(drop(modelDir("tiny-qwen2") + "/config.json"));
    QVERIFY(opened.wait(60000));
    QCOMPARE(QFileInfo(QString::fromStdString(w->model()->dir())).absoluteFilePath(), QFileInfo(modelDir("tiny-qwen2")).absoluteFilePath());

    // a trace file: written by the command line, dropped, opened without running anything
    const QString file = tmp_.filePath("dropped-trace.safetensors");
    QProcess p;
    p.start(kBinary, {"trace", "--model", demoModelDir(), "--prompt", demoPrompt(), "--save", "layers.*.layer_output", "--out", file});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QSignalSpy traceOpened(w.get(), &MainWindow::traceFileOpened);
    QVERIFY(drop(file));
    QVERIFY(traceOpened.wait(60000));
    QCOMPARE(QFileInfo(traceOpened.first().first().toString()).absoluteFilePath(), QFileInfo(file).absoluteFilePath());

    // an empty folder: not accepted
    QVERIFY(!drop(tmp_.path()));
}

void TestGui::interventionsAskOnAnotherModel() {
    // #28: interventions made on one checkpoint are not applied to another without a word: opening another model asks
    // in the Interventions dock; "Turn them off" unchecks them (the next trace is unedited), "Keep them" keeps them
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    InterventionPanel* panel = w->interventionPanel();
    panel->clear();
    QCOMPARE(panel->add("skip 0"), QString());
    QVERIFY(!panel->askingKeep());
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(modelDir("tiny-qwen2"));
    QVERIFY(opened.wait(60000));
    QVERIFY(panel->askingKeep());
    QTest::mouseClick(panel->turnOffButton(), Qt::LeftButton);
    QVERIFY(!panel->askingKeep());
    QVERIFY(panel->active().isEmpty());
    QCOMPARE(panel->all(), QStringList{"skip 0"});
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QVERIFY(w->snapshot()->interventions.isEmpty());  // traced unedited
    panel->setChecked(0, true);
    w->openModel(modelDir("tiny-llama"));
    QVERIFY(opened.wait(60000));
    QVERIFY(panel->askingKeep());
    QTest::mouseClick(panel->keepButton(), Qt::LeftButton);
    QVERIFY(!panel->askingKeep());
    QCOMPARE(panel->active(), QStringList{"skip 0"});
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QCOMPARE(w->snapshot()->interventions, QStringList{"skip 0"});
    // nothing checked: nothing asked
    panel->setChecked(0, false);
    w->openModel(modelDir("tiny-qwen2"));
    QVERIFY(opened.wait(60000));
    QVERIFY(!panel->askingKeep());
    panel->clear();
}

void TestGui::everyViewInSightAt1280() {
    // #28: at 1280 × 800 the window fits the screen with its docks (no view's controls wider than the room left) and
    // every view's tab is in sight, none behind scroll arrows: the tabs are a side list
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY2(w->minimumSizeHint().width() <= 1280, qPrintable(QString("minimum width %1").arg(w->minimumSizeHint().width())));
    w->resize(1280, 800);
    QTest::qWait(50);
    QCOMPARE(w->width(), 1280);
    QTabBar* tabs = w->views()->tabBar();
    QCOMPARE(w->views()->tabPosition(), QTabWidget::West);
    for (int i = 0; i < tabs->count(); ++i) {
        const QRect r = tabs->tabRect(i);
        QVERIFY2(tabs->rect().contains(r), qPrintable(QString("tab %1 (%2) at %3,%4 %5x%6 outside the bar %7x%8")
                                                          .arg(i).arg(tabs->tabText(i)).arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())
                                                          .arg(tabs->width()).arg(tabs->height())));
        QVERIFY2(r.width() >= tabs->fontMetrics().horizontalAdvance(tabs->tabText(i).remove('&')),
                 qPrintable(QString("tab %1 narrower than its label").arg(tabs->tabText(i))));
        QVERIFY(r.height() < 2 * r.width());  // level labels, not turned ones
    }
    // clicking a tab in the list shows its view
    const int heads = w->views()->indexOf(w->headsView());
    QTest::mouseClick(tabs, Qt::LeftButton, {}, tabs->tabRect(heads).center());
    QCOMPARE(w->views()->currentWidget(), static_cast<QWidget*>(w->headsView()));
}

void TestGui::demoCaptionOnFirstRun() {
    // #28: the demo opens with a caption that says what the stripe is and where to click next, until "Got it"; another
    // checkpoint has none
    QSettings().remove("demo/captionDismissed");
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QVERIFY(w->demoCaption()->isVisible());
    auto* text = w->demoCaption()->findChild<QLabel*>();
    QVERIFY(text && text->text().contains("induction head") && text->text().contains("Heads") && text->text().contains("Circuit"));
    QVERIFY(w->showView("heads"));  // it speaks of the Attention view: shown with it only
    QVERIFY(!w->demoCaption()->isVisible());
    QVERIFY(w->showView("attention"));
    QVERIFY(w->demoCaption()->isVisible());
    // it speaks of the demo sentence said twice: another prompt's trace hides it, the demo sentence brings it back
    QVERIFY(runFromPanel(*w, {"tom saw a red ball"}));
    QVERIFY(!w->demoCaption()->isVisible());
    QVERIFY(runFromPanel(*w, {demoPrompt()}));
    QVERIFY(w->demoCaption()->isVisible());
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(modelDir("tiny-llama"));
    QVERIFY(opened.wait(60000));
    QVERIFY(!w->demoCaption()->isVisible());
    w->openModel(demoModelDir());
    QVERIFY(opened.wait(60000));
    QVERIFY(w->showView("attention"));
    QVERIFY(w->demoCaption()->isVisible());
    auto* gotIt = w->demoCaption()->findChild<QPushButton*>();
    QVERIFY(gotIt);
    QTest::mouseClick(gotIt, Qt::LeftButton);
    QVERIFY(!w->demoCaption()->isVisible());
    QVERIFY(QSettings().value("demo/captionDismissed").toBool());
    w->openModel(modelDir("tiny-llama"));
    QVERIFY(opened.wait(60000));
    w->openModel(demoModelDir());
    QVERIFY(opened.wait(60000));
    QVERIFY(w->showView("attention"));
    QVERIFY(!w->demoCaption()->isVisible());  // dismissed for good
    QSettings().remove("demo/captionDismissed");
}

void TestGui::undoRedoSessionEdits() {
    // #28: Edit ▸ Undo / Redo step through pins, interventions (lines and check marks) and dictionary attachments; a
    // trace after an undo runs without what was undone; opening another checkpoint starts a new history
    QSettings().remove("dictionaries/attached");
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    QUndoStack* undo = w->undoStack();
    QCOMPARE(undo->count(), 0);
    InterventionPanel* panel = w->interventionPanel();
    const ValueKey key{Value::MlpOutput, 0};
    QVERIFY(w->pinValue(key));
    QCOMPARE(undo->count(), 1);
    QVERIFY2(undo->undoText().contains(QString::fromStdString(valuePath(w->model()->family(), key))), qPrintable(undo->undoText()));
    undo->undo();
    QVERIFY(w->pinnedPanel()->keys().empty());
    undo->redo();
    QCOMPARE(w->pinnedPanel()->keys(), std::vector<ValueKey>{key});

    QCOMPARE(panel->add("skip 0"), QString());
    QCOMPARE(undo->count(), 2);
    panel->setChecked(0, false);
    QCOMPARE(undo->count(), 3);
    undo->undo();  // checked again
    QCOMPARE(panel->active(), QStringList{"skip 0"});
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QCOMPARE(w->snapshot()->interventions, QStringList{"skip 0"});
    undo->undo();  // the line is gone
    QVERIFY(panel->all().isEmpty());
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QVERIFY(w->snapshot()->interventions.isEmpty());
    undo->redo();
    QCOMPARE(panel->active(), QStringList{"skip 0"});

    const QString dictionary = kDictionaries + "/saelens-jumprelu-llama-resid-post";
    QVERIFY(w->attachDictionary(dictionary).isEmpty());
    QCOMPARE(w->dictionaries().size(), size_t(1));
    QVERIFY(undo->undoText().contains("saelens-jumprelu-llama-resid-post"));
    undo->undo();
    QCOMPARE(w->dictionaries().size(), size_t(0));
    undo->redo();
    QCOMPARE(w->dictionaries().size(), size_t(1));
    // the whole history back to the start, then forward again
    while (undo->canUndo()) undo->undo();
    QVERIFY(w->pinnedPanel()->keys().empty() && panel->all().isEmpty() && w->dictionaries().empty());
    while (undo->canRedo()) undo->redo();
    QCOMPARE(w->pinnedPanel()->keys(), std::vector<ValueKey>{key});
    QCOMPARE(panel->active(), QStringList{"skip 0"});
    QCOMPARE(w->dictionaries().size(), size_t(1));
    // the Edit menu holds them
    QAction* undoAction = nullptr;
    for (QAction* a : w->menuBar()->actions())
        if (a->menu() && a->text().remove('&') == "Edit")
            for (QAction* item : a->menu()->actions())
                if (item->shortcut() == QKeySequence(QKeySequence::Undo)) undoAction = item;
    QVERIFY(undoAction && undoAction->isEnabled());

    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(modelDir("tiny-qwen2"));
    QVERIFY(opened.wait(60000));
    QCOMPARE(undo->count(), 0);
    panel->clear();
    QSettings().remove("dictionaries/attached");
}


// ---- #28: grids that fit their views ------------------------------------------------------------------------------

namespace {
/// Whether the heatmap shows every cell of its matrix.
QString showsWholeGrid(const HeatmapPlot* h) {
    const QRect cells = h->visibleCells();
    const QRect whole(0, 0, h->model()->columnCount(), h->model()->rowCount());
    if (cells != whole)
        return QString("visible cells %1,%2 %3x%4 of %5x%6").arg(cells.x()).arg(cells.y()).arg(cells.width()).arg(cells.height())
            .arg(whole.width()).arg(whole.height());
    return {};
}
}  // namespace

void TestGui::gridsFitTheirViews() {
    // #28: at 300 tokens the lens showed about 10 of its columns, the neuron heatmap ~180 of its neurons and the
    // patching grid's last column started off-screen. Each blocks x positions (or tokens x neurons) grid now opens
    // fitted to its view: every cell in view, the last position included, pooled where cells are under a pixel.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1600, 1000);
    const Model& m = *w->model();
    const QString prompt = promptOfLength(m, 300);
    QVERIFY(runFromPanel(*w, {prompt}));
    const int len = static_cast<int>(w->snapshot()->tokens.at(0).size());
    QVERIFY2(len >= 295 && len <= 305, qPrintable(QString::number(len)));

    // The logit lens: fitted, it asks for every position, the last ones first, a chunk at a time.
    QVERIFY(w->showView("lens"));
    LogitLensView* lv = w->lensView();
    QSignalSpy ended(w.get(), &MainWindow::lensEnded);
    QVERIFY(ended.wait(60000));
    // the first job: the last chunk (the next-token column), not the start
    QVERIFY(w->snapshot()->lensComputed(0, len - 1));
    QVERIFY(!w->snapshot()->lensComputed(0, 0));
    for (int i = 0; i < 10 && !w->snapshot()->lensComputed(0, 0); ++i) QVERIFY(ended.wait(60000));
    QVERIFY(lensDone(*w));
    for (int c = 0; c < len; ++c) QVERIFY2(w->snapshot()->lensComputed(0, c), qPrintable(QString::number(c)));
    QTest::qWait(50);
    QString why = showsWholeGrid(lv->heatmap());
    QVERIFY2(why.isEmpty(), qPrintable("lens: " + why));
    QVERIFY(lv->heatmap()->visibleCells().right() == len - 1);  // the last position in view
    // what is drawn is the engine's lens, every column
    const LogitLens ref = logitLens(m, w->snapshot()->result, 5);
    const torch::Tensor shown = lv->heatmap()->model()->matrix().values;
    QVERIFY(maxDiff(shown, ref.topProbs[0].index({Slice(), Slice(), 0})) <= 1e-5);
    // cells under a pixel wide are pooled: the image drawn is no wider than the plot, and no text is drawn in them
    QVERIFY(lv->heatmap()->colorMap()->lastImage().width() <= lv->heatmap()->plot()->width());
    QCOMPARE(lv->heatmap()->cellTextWidth(), 0);
    // the row labels (blocks) and the column labels (positions) stay on the plot when zoomed: both axes are the plot's
    lv->heatmap()->zoomToCells(len - 8, len - 1, 0, 4);
    QTest::qWait(20);
    QVERIFY(lv->heatmap()->visibleCells().right() == len - 1);
    QVERIFY(!lv->heatmap()->plot()->yAxis->tickVector().isEmpty());
    QVERIFY(!lv->heatmap()->plot()->xAxis->tickVector().isEmpty());
    QVERIFY(lv->heatmap()->cellTextWidth() > 0);  // 8 columns: the tokens are written in the cells
    // Fit shows the whole grid again
    QToolButton* fit = nullptr;
    for (QToolButton* b : lv->findChildren<QToolButton*>())
        if (b->text() == "Fit") fit = b;
    QVERIFY(fit && fit->isEnabled());
    QTest::mouseClick(fit, Qt::LeftButton);
    why = showsWholeGrid(lv->heatmap());
    QVERIFY2(why.isEmpty(), qPrintable("lens after Fit: " + why));
    // Log scale colours the lens' probabilities on a logarithmic scale
    lv->setLogScale(true);
    QCOMPARE(lv->heatmap()->colorMap()->dataScaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(lv->heatmap()->colorMap()->dataRange().lower, LogitLensView::kLogFloor);
    // and the target's probability across blocks below it
    QCOMPARE(lv->targetPlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QCOMPARE(lv->targetPlot()->yAxis->range().lower, LogitLensView::kLogFloor);
    lv->setLogScale(false);
    QCOMPARE(lv->targetPlot()->yAxis->scaleType(), QCPAxis::stLinear);
    QCOMPARE(lv->targetPlot()->yAxis->range().lower, 0.0);

    // The neuron heatmap: every token and every neuron
    QVERIFY(w->showView("neurons"));
    QTest::qWait(50);
    NeuronView* nv = w->neuronView();
    QCOMPARE(nv->heatmap()->model()->columnCount(), static_cast<int>(m.config().intermediateSize));
    why = showsWholeGrid(nv->heatmap());
    QVERIFY2(why.isEmpty(), qPrintable("neurons: " + why));

    // The patching grid (blocks x positions) of the demo's question: every position, the last one in view
    auto d = openWindow(demoModelDir());
    QVERIFY(d);
    d->resize(1280, 900);
    QVERIFY(startTraceDone(*d));
    QVERIFY(d->showView("patching"));
    PatchingView* pv = d->patchingView();
    pv->setRequest(demoPatchRequest());
    QVERIFY(patchFromView(*d));
    QTest::qWait(50);
    why = showsWholeGrid(pv->heatmap());
    QVERIFY2(why.isEmpty(), qPrintable("patching: " + why));
    QCOMPARE(pv->heatmap()->visibleCells().right(), pv->heatmap()->model()->columnCount() - 1);
}

void TestGui::cellTextElidedToItsCell() {
    // #28: the lens' cell text (byte pieces, runs of backslashes) ran into the neighbouring cells. Each cell's text is
    // elided to the cell, and drawn only where a cell has room for two characters and a line.
    HeatmapPlot plot;
    plot.resize(900, 400);
    MatrixModel model;
    Matrix m;
    m.values = torch::rand({4, 12});
    const QStringList texts = {QString(40, '\\'), "<0xE2><0x80><0x99>", "a", "▁the▁longest▁token▁of▁all", "ok"};
    m.cellText = [texts](int r, int c) { return texts[(r * 12 + c) % texts.size()]; };
    model.setMatrix(std::move(m));
    plot.setZoomable(true);
    plot.setModel(&model);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    QTest::qWait(20);
    QCOMPARE(plot.visibleCells(), QRect(0, 0, 12, 4));
    const double cellWidth = std::fabs(plot.plot()->xAxis->coordToPixel(1) - plot.plot()->xAxis->coordToPixel(0));
    QVERIFY(plot.cellTextWidth() > 0 && plot.cellTextWidth() < cellWidth);
    QCOMPARE(plot.cellTexts().size(), 48);
    int elided = 0;
    for (QCPItemText* t : plot.cellTexts()) {
        const int width = QFontMetrics(t->font()).horizontalAdvance(t->text());
        QVERIFY2(width <= plot.cellTextWidth(), qPrintable(QString("'%1' is %2 px in a %3 px cell").arg(t->text()).arg(width).arg(cellWidth)));
        elided += t->text().endsWith(QChar(0x2026));
    }
    QVERIFY(elided >= 24);  // the backslashes, the byte pieces and the long token were cut
    // far narrower cells carry no text at all
    plot.resize(120, 400);
    QTest::qWait(50);
    QCOMPARE(plot.cellTextWidth(), 0);
    QVERIFY(plot.cellTexts().isEmpty());
}

void TestGui::headGridFitsAndFollowsModels() {
    // #28: "all heads (grid)" ignored Log scale, filled the view with one tile at 303 tokens x 16 heads and broke after
    // another model was opened. At 300 tokens x 16 heads every tile is in view; Log scale reaches every tile; a model
    // with other heads and lengths draws its own grid, every tile its head's pattern.
    {
        HeadGridPlot grid;
        grid.resize(1200, 800);
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        torch::Tensor pattern = torch::rand({16, 300, 300});
        pattern = pattern / pattern.sum(-1, true);
        QStringList tokens;
        for (int i = 0; i < 300; ++i) tokens << QString("t%1").arg(i);
        grid.setPattern(pattern, tokens);
        QTest::qWait(50);
        QCOMPARE(grid.headCount(), 16);
        QVERIFY2(grid.tileSize() >= 110 && grid.tileSize() <= 400, qPrintable(QString::number(grid.tileSize())));
        const QRect view = grid.scrollArea()->viewport()->rect();
        for (int h = 0; h < 16; ++h) {
            const QPoint corner = grid.plot()->mapTo(grid.scrollArea()->viewport(), grid.cellCenter(h, 299, 299));
            QVERIFY2(view.contains(corner), qPrintable(QString("head %1's last cell at %2,%3").arg(h).arg(corner.x()).arg(corner.y())));
            QVERIFY(mapDifference(grid.map(h), pattern[h]) == 0);
        }
        grid.setLogScale(true, 1e-5);
        for (int h = 0; h < 16; ++h) QCOMPARE(grid.map(h)->dataScaleType(), QCPAxis::stLogarithmic);
    }
    // In the window: a grid of the stories model, then another model's, then Fit
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(runFromPanel(*w, {"Once upon a time, there was a little girl named Lily."}));
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    av->setHead(-1);
    av->setLogScale(true);
    QCOMPARE(av->grid()->map(0)->dataScaleType(), QCPAxis::stLogarithmic);
    const QString other = modelDir("tiny-llama");
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(other);
    QVERIFY(opened.wait(60000));
    const QStringList prompts{"hello world, the cat sat on the mat"};
    QVERIFY(runFromPanel(*w, prompts));
    av->setHead(-1);
    const Reference ref = engineTrace(other, prompts);
    const int heads = static_cast<int>(ref.model->config().numHeads);
    QCOMPARE(av->grid()->headCount(), heads);
    const torch::Tensor probs = attentionPattern(*ref.model, ref.result, av->block(), 0);
    QTest::qWait(50);
    const QRect view = av->grid()->scrollArea()->viewport()->rect();
    for (int h = 0; h < heads; ++h) {
        QVERIFY(mapDifference(av->grid()->map(h), probs[h]) <= 1e-6);
        const int n = static_cast<int>(probs.size(1));
        QCOMPARE(av->grid()->map(h)->keyAxis()->range(), QCPRange(-0.5, n - 0.5));
        QCOMPARE(av->grid()->map(h)->dataScaleType(), QCPAxis::stLogarithmic);  // the log scale kept
        QVERIFY(view.contains(av->grid()->plot()->mapTo(av->grid()->scrollArea()->viewport(), av->grid()->cellCenter(h, n - 1, n - 1))));
    }
    // Fit sizes the tiles to the room again after the window changes size
    w->resize(1300, 900);
    QTest::qWait(50);
    QVERIFY(av->fitButton()->isEnabled());
    QTest::mouseClick(av->fitButton(), Qt::LeftButton);
    QTest::qWait(20);
    QVERIFY(av->grid()->plot()->width() <= av->grid()->scrollArea()->viewport()->width());
    av->setLogScale(false);
    QSettings().remove("views/attention/logScale");
}

void TestGui::flowGraphFits() {
    // #28: the Flow graph opened scrolled to an empty area with its row labels scrolled away. Fitted (the default), the
    // whole graph is in view; unticked, each token has room for its label and the graph scrolls with the row labels
    // pinned at the left edge.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    w->resize(1400, 900);
    QVERIFY(startTraceDone(*w));
    const Model& m = *w->model();
    QVERIFY(runFromPanel(*w, {promptOfLength(m, 60)}));
    QVERIFY(w->showView("flow"));
    QVERIFY(viewJobsDone(*w));
    FlowView* fv = w->flowView();
    QVERIFY(fv->graph());
    QVERIFY(fv->fitted());
    QTest::qWait(50);
    auto* scroll = qobject_cast<QScrollArea*>(fv->canvas()->parentWidget()->parentWidget());
    QVERIFY(scroll);
    QVERIFY2(!scroll->horizontalScrollBar()->isVisible(), "a fitted graph does not scroll sideways");
    QVERIFY(fv->canvas()->width() <= scroll->viewport()->width());
    QVERIFY(fv->labelStep() > 1);  // 60 tokens in 1400 px: the token labels are thinned
    fv->setFitted(false);
    QTest::qWait(50);
    QVERIFY(scroll->horizontalScrollBar()->isVisible());
    QCOMPARE(fv->labelStep(), 1);  // every token labelled
    // the graph's starting (last) position is in view, and the row labels are drawn where the view starts
    QTRY_VERIFY(scroll->horizontalScrollBar()->value() > 0);
    const QImage shot = fv->canvas()->grab().toImage();
    const int left = scroll->horizontalScrollBar()->value();
    int ink = 0;  // text pixels in the label band at the view's left edge
    const QColor base = fv->canvas()->palette().color(QPalette::Base);
    for (int y = 0; y < shot.height(); ++y)
        for (int x = left; x < left + 120; ++x) ink += shot.pixelColor(x, y) != base;
    QVERIFY2(ink > 200, qPrintable(QString::number(ink)));
    fv->setFitted(true);
}

void TestGui::attributionShowsEveryHead() {
    // #28: the Attribution head map showed 7 of 16 heads with its title cut, its legend covered the first bars, and
    // there was no sorted list of the top components.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1280, 900);
    QVERIFY(runFromPanel(*w, {"Once upon a time, there was a little girl named Lily. She loved"}));
    QVERIFY(w->showView("attribution"));
    QVERIFY(viewJobsDone(*w));
    AttributionView* av = w->attributionView();
    QVERIFY(av->attribution());
    QTest::qWait(50);
    QString why = showsWholeGrid(av->headHeatmap());
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // narrower than the heads at their old minimum cell (26 px each): still every head
    av->headHeatmap()->setFixedWidth(220);
    QTest::qWait(50);
    why = showsWholeGrid(av->headHeatmap());
    QVERIFY2(why.isEmpty(), qPrintable("at 220 px: " + why));
    av->headHeatmap()->setMinimumWidth(0);
    av->headHeatmap()->setMaximumWidth(QWIDGETSIZE_MAX);
    QTest::qWait(50);
    const QFontMetrics title(av->headHeatmap()->titleFont());
    QVERIFY(title.horizontalAdvance(av->headHeatmap()->title()) < av->headHeatmap()->plot()->width());
    // the legend is outside the bars' axis rect
    QCustomPlot* bars = av->blockPlot();
    QVERIFY(!bars->axisRect()->rect().intersects(bars->legend->outerRect()));
    QCOMPARE(bars->legend->borderPen().style(), Qt::NoPen);  // its row has no frame (the palette gave it one, past the edge)
    // the sorted list: largest |share| first, the largest component the same as the largest head or bar
    const QStringList top = av->topComponents();
    QVERIFY(top.size() >= 10);
    double previous = std::numeric_limits<double>::infinity(), largest = 0;
    for (int i = 0; i < av->topList()->topLevelItemCount(); ++i) {
        const double v = std::abs(av->topList()->topLevelItem(i)->text(1).toDouble());
        QVERIFY(v <= previous * (1 + 1e-3));
        previous = v;
    }
    for (const auto& c : av->attribution()->components)
        if (c.kind != AttributionComponent::Kind::Attention) largest = std::max(largest, std::abs(c.value));
    for (const auto& c : av->attribution()->topNeurons) largest = std::max(largest, std::abs(c.value));
    QVERIFY(std::abs(std::abs(av->topList()->topLevelItem(0)->text(1).toDouble()) - largest) <= 1e-3 * largest);
    // clicking a row shows that component's details
    av->topList()->setCurrentItem(av->topList()->topLevelItem(1));
    QVERIFY(av->details()->toPlainText().contains(av->topList()->topLevelItem(1)->text(0)) ||
            av->topList()->topLevelItem(1)->text(0).contains(".neuron."));
}

void TestGui::staleInterventionsBar() {
    // #28: after a right-click ablation nothing said the views showed the trace without it. A bar above the views says
    // so, with Run; when the last trace took under a second it runs again by itself.
    auto w = openWindow(modelDir("tiny-llama"));
    QVERIFY(w);
    w->setQuickRerunMs(0);  // never by itself: the bar and its Run
    QVERIFY(runFromPanel(*w, {"hello world"}));
    QVERIFY(!w->staleInterventionsBar()->isVisible());
    QVERIFY(w->showView("attention"));
    w->attentionView()->setBlock(1);
    w->attentionView()->setHead(0);
    QVERIFY(chooseFromContextMenu(w->attentionView(), "Zero-ablate head 0 of block 1"));
    QVERIFY(w->staleInterventionsBar()->isVisible());
    QVERIFY2(w->staleInterventionsText().contains("without interventions"), qPrintable(w->staleInterventionsText()));
    QSignalSpy done(w.get(), &MainWindow::traceEnded);
    QTest::mouseClick(w->staleInterventionsRun(), Qt::LeftButton);
    QVERIFY(done.wait(60000));
    QCOMPARE(w->snapshot()->interventions, w->interventionPanel()->active());
    QVERIFY(!w->staleInterventionsBar()->isVisible());
    // a quick model: unchecking the line runs the trace again by itself
    w->setQuickRerunMs(60000);
    w->interventionPanel()->setChecked(0, false);
    QVERIFY(w->staleInterventionsBar()->isVisible());
    QVERIFY2(w->staleInterventionsText().contains("Running it again"), qPrintable(w->staleInterventionsText()));
    QVERIFY(done.wait(60000));
    QVERIFY(w->snapshot()->interventions.isEmpty());
    QVERIFY(!w->staleInterventionsBar()->isVisible());
}

void TestGui::exportLabelsEveryToken() {
    // #28: a 5674 px PNG labelled every 10th token with screen-size fonts: QCustomPlot made the ticks for the screen's
    // layout. An export of the whole 300-token pattern labels every token, and its caption grows with the image.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(runFromPanel(*w, {promptOfLength(*w->model(), 300)}));
    QVERIFY(w->showView("attention"));
    AttentionView* av = w->attentionView();
    av->setHead(0);
    QTest::qWait(50);
    const int n = av->heatmap()->model()->columnCount();
    QVERIFY2(av->heatmap()->plot()->xAxis->tickVector().size() < n / 2,
             qPrintable(QString("%1 ticks for %2 tokens in %3 px").arg(av->heatmap()->plot()->xAxis->tickVector().size()).arg(n).arg(av->heatmap()->plot()->width())));  // on screen: thinned
    PlotSource source = av->plotSource();
    int exportTicks = 0;
    double exportFontScale = 0;
    const auto full = source.fullView;
    source.fullView = [&](bool on) {
        if (!on) {  // the ticks and fonts of the export just drawn
            exportTicks = av->heatmap()->plot()->xAxis->tickVector().size();
            exportFontScale = av->heatmap()->exportFontScale();
        }
        full(on);
    };
    const QString path = tmp_.filePath("every-token.png");
    QCOMPARE(exportPlot(source, path, w->snapshot()->exportMetadata({})), QString());
    QCOMPARE(exportTicks, n);
    QVERIFY(exportFontScale >= 1);
    QImage image(path);
    QVERIFY(image.width() >= n * 18);
    QVERIFY(av->heatmap()->plot()->xAxis->tickVector().size() < n / 2);  // the screen thinned again after
}

void TestGui::headsFitTheirRoom() {
    // #28: the Heads table's "induction" header read "hance 0.058" under the sort arrow; the thumbnails stayed white
    // without a log option and 20 px where 40 px fitted.
    auto w = openWindow(modelDir("stories260K-llama"));
    QVERIFY(w);
    w->resize(1600, 1000);
    QVERIFY(runFromPanel(*w, {promptOfLength(*w->model(), 120)}));
    QVERIFY(w->showView("heads"));
    QVERIFY(viewJobsDone(*w));
    HeadsView* hv = w->headsView();
    hv->table()->setFixedWidth(480);  // a narrow table (docks open beside a small window): stretched columns clipped
    QTest::mouseClick(hv->table()->horizontalHeader()->viewport(), Qt::LeftButton, {},
                      QPoint(hv->table()->horizontalHeader()->sectionViewportPosition(3) + 5, 5));  // sorted by induction: the arrow
    QTest::qWait(50);
    QCOMPARE(hv->table()->horizontalHeader()->sortIndicatorSection(), 3);
    QHeaderView* header = hv->table()->horizontalHeader();
    const QFontMetrics metrics(header->font());
    const int arrow = header->style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, header);
    for (int c = 0; c < header->count(); ++c) {
        if (header->isSectionHidden(c)) continue;  // sink_share: shown only for a family with attention sinks
        int widest = 0;
        for (const QString& line : hv->table()->model()->headerData(c, Qt::Horizontal).toString().split('\n'))
            widest = std::max(widest, metrics.horizontalAdvance(line));
        QVERIFY2(header->sectionSize(c) >= widest + arrow,
                 qPrintable(QString("column %1: %2 px for %3 px of text and a %4 px arrow").arg(c).arg(header->sectionSize(c)).arg(widest).arg(arrow)));
    }
    hv->table()->setMinimumWidth(0);
    hv->table()->setMaximumWidth(QWIDGETSIZE_MAX);
    // thumbnails: as large as the room allows, at least 40 px where the width gives 40 px
    HeadOverview* ov = hv->overview();
    const int byWidth = (ov->width() - ov->tileRect(0, 1).left() + ov->tileRect(0, 0).left()) / ov->heads();
    if (byWidth >= HeadOverview::kReadableTile + 8) QVERIFY2(ov->tileSize() >= HeadOverview::kReadableTile, qPrintable(QString::number(ov->tileSize())));
    // Log scale: a thumbnail's faint weights get colour (fewer white pixels than on the linear scale)
    auto whites = [&] {
        const QImage& t = ov->thumbnail(0, 0);
        int count = 0;
        for (int y = 0; y < t.height(); ++y)
            for (int x = 0; x < t.width(); ++x) count += t.pixelColor(x, y).lightness() > 250;
        return count;
    };
    const int linear = whites();
    hv->setLogScale(true);
    QVERIFY(ov->logScale());
    QVERIFY2(whites() < linear, qPrintable(QString("%1 white pixels on the log scale, %2 on the linear").arg(whites()).arg(linear)));
    hv->setLogScale(false);
}

void TestGui::viewChoicesRemembered() {
    // #28: Log scale and each view's choices are kept between sessions.
    const QString dir = modelDir("tiny-llama");
    {
        auto w = openWindow(dir);
        QVERIFY(w);
        w->lensView()->setLogScale(true);
        w->neuronView()->setLogScale(true);
        w->flowView()->setThreshold(0.07);
        w->flowView()->setFitted(false);
        w->headsView()->setLogScale(true);
        w->close();
    }
    auto w = openWindow(dir);
    QVERIFY(w);
    QVERIFY(w->lensView()->logScale());
    QVERIFY(w->neuronView()->choices().value("logScale").toBool());
    QCOMPARE(w->flowView()->choices().value("threshold").toDouble(), 0.07);
    QVERIFY(!w->flowView()->fitted());
    QVERIFY(w->headsView()->choices().value("logScale").toBool());
    w->lensView()->setLogScale(false);
    w->neuronView()->setLogScale(false);
    w->flowView()->setThreshold(0.04);
    w->flowView()->setFitted(true);
    w->headsView()->setLogScale(false);
    QSettings().remove("views");
}

void TestGui::symmetricLogScale() {
    // The neuron heatmap's log scale on signed data: sign(v) · log10(1 + |v| / t), t a thousandth of the largest
    // |value|: a small activation beside a large one keeps a visible colour, of its own sign.
    HeatmapPlot plot;
    plot.resize(600, 300);
    MatrixModel model;
    Matrix m;
    m.values = torch::tensor({100.0f, 0.5f, -0.5f, -100.0f, 0.0f}).reshape({1, 5});
    model.setMatrix(std::move(m));
    plot.setGradient(signedGradient());
    plot.setSymmetricRange(true);
    plot.setZoomable(true);
    plot.setModel(&model);
    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    auto colours = [&] {
        plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const QImage& image = plot.colorMap()->lastImage();
        QList<QColor> out;
        for (int c = 0; c < 5; ++c) out << image.pixelColor(c, 0);
        return out;
    };
    const QList<QColor> linear = colours();
    plot.setLogScale(true, NeuronView::kSymLogThreshold);
    const QList<QColor> log = colours();
    const QColor white = log[4];
    auto distance = [](QColor a, QColor b) { return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue()); };
    // ±0.5 is within 1 % of the range: nearly white on the linear scale, a clear colour on the log one
    QVERIFY(distance(linear[1], linear[4]) < 10);
    QVERIFY2(distance(log[1], white) > 60, qPrintable(QString::number(distance(log[1], white))));
    QVERIFY(distance(log[2], white) > 60);
    QVERIFY(distance(log[1], log[2]) > 60);  // the two signs apart
    const double top = MatrixImage::symLog(100, 100 * NeuronView::kSymLogThreshold);
    QCOMPARE(plot.colorMap()->dataRange(), QCPRange(-top, top));
}

void TestGui::routingView() {
    // #25: the Routing view of a mixture of experts (tiny-qwen3-moe: 6 experts, top 2, on blocks 0 and 2; block 1 is
    // dense). The grid's cells are the traced expert_indices and expert_weights, the load map counts them, clicking an
    // expert shows its direct logit attribution equal to the engine's, and its Forbid button adds the forbid-expert
    // intervention; the re-run routes no token to that expert. A dense model gets a sentence, not empty plots.
    auto w = openWindow(modelDir("tiny-qwen3-moe"));
    QVERIFY(w);
    w->resize(1600, 1000);
    const QString prompt = "Tom and Lily went to the park";
    QVERIFY(runFromPanel(*w, {prompt}));
    QVERIFY(w->showView("routing"));
    RoutingView* rv = w->routingView();
    QVERIFY(viewJobsDone(*w));
    QVERIFY2(rv->routing(), qPrintable(rv->placeholderText()));
    const Model& m = *w->model();
    TraceOptions o;
    o.save = routingValueKeys(m);
    const TraceResult r = trace(m, encodeBatch(m, {prompt.toStdString()}), o);
    const std::vector<int> sparse{0, 2};
    QCOMPARE(rv->routing()->blocks, sparse);
    const int len = static_cast<int>(r.batch.inputIds.size(1)), E = static_cast<int>(m.config().moe.numExperts);
    MatrixModel* grid = rv->gridModel();
    QCOMPARE(grid->rowCount(), 2);
    QCOMPARE(grid->columnCount(), len);
    QCOMPARE(rv->loadModel()->columnCount(), E);
    for (int b = 0; b < 2; ++b) {
        const torch::Tensor idx = r.value({Value::ExpertIndices, sparse[static_cast<size_t>(b)]}).index({0});
        const torch::Tensor wts = r.value({Value::ExpertWeights, sparse[static_cast<size_t>(b)]}).index({0}).to(torch::kFloat32);
        for (int t = 0; t < len; ++t) {
            // the colour is the top expert's id; the text and the tooltip are every chosen expert with its weight
            QCOMPARE(grid->value(b, t), idx[t][0].item<double>() + 0.5);
            const QString text = grid->data(grid->index(b, t), MatrixModel::CellTextRole).toString();
            const QString tip = grid->data(grid->index(b, t), Qt::ToolTipRole).toString();
            QStringList want;
            for (int j = 0; j < 2; ++j) {
                QString weight = QString::number(wts[t][j].item<double>(), 'f', 2);  // ".65": two decimals, no leading zero
                if (weight.startsWith("0.")) weight.remove(0, 1);
                want << QString("%1:%2").arg(idx[t][j].item<int64_t>()).arg(weight);
                QVERIFY2(tip.contains(QString("expert %1   weight %2").arg(idx[t][j].item<int64_t>()).arg(wts[t][j].item<double>(), 0, 'g', 4)),
                         qPrintable(tip));
            }
            QCOMPARE(text, want.join(' '));
        }
        for (int e = 0; e < E; ++e) QCOMPARE(rv->loadModel()->value(b, e), (idx == e).sum().item<double>());
    }
    // the grid's colours are one per expert, each cell drawn in its top expert's, and the cells fit the view
    QCOMPARE(rv->grid()->categories().size(), E);
    for (int b = 0; b < 2; ++b)
        for (int t = 0; t < len; ++t) {
            const QColor drawn = QColor::fromRgb(rv->grid()->colorMap()->gradient().color(grid->value(b, t), rv->grid()->colorMap()->dataRange()));
            const QColor want = RoutingView::expertColour(static_cast<int64_t>(grid->value(b, t)));
            QVERIFY2(sameColour(drawn, want), qPrintable(QString("cell %1,%2: %3 vs %4").arg(b).arg(t).arg(drawn.name(), want.name())));
        }
    QVERIFY(!rv->grid()->isZoomed());
    QCOMPARE(rv->grid()->visibleCells().width(), len);

    // a batch: the second prompt (shorter, so left-padded) shows its own positions
    QVERIFY(runFromPanel(*w, {prompt, "Lily"}));
    QVERIFY(viewJobsDone(*w));
    rv->setPrompt(1);
    {
        TraceOptions bo;
        bo.save = routingValueKeys(m);
        const TraceResult br = trace(m, encodeBatch(m, {prompt.toStdString(), "Lily"}), bo);
        const int n1 = static_cast<int>(promptSpan(br.batch, 1).length);
        QVERIFY(n1 < len);
        QCOMPARE(rv->gridModel()->columnCount(), n1);
        const torch::Tensor idx = promptValue(m, br, {Value::ExpertIndices, 2}, 1);
        for (int t = 0; t < n1; ++t) QCOMPARE(rv->gridModel()->value(1, t), idx[t][0].item<double>() + 0.5);
    }
    QVERIFY(runFromPanel(*w, {prompt}));  // the single prompt again
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(rv->gridModel()->columnCount(), len);

    // click block 2's busiest expert on the load map: its details and its attribution, equal to the engine's
    const torch::Tensor idx2 = r.value({Value::ExpertIndices, 2}).index({0});
    const int busiest = static_cast<int>(torch::bincount(idx2.flatten(), {}, E).argmax().item<int64_t>());
    QTest::mouseClick(rv->loadMap()->plot(), Qt::LeftButton, {}, rv->loadMap()->cellCenter(1, busiest));
    QCOMPARE(rv->selectedBlock(), 2);
    QCOMPARE(rv->selectedExpert(), int64_t{busiest});
    QVERIFY(viewJobsDone(*w));
    QVERIFY2(rv->attribution(), qPrintable(rv->statusLabel()->text()));
    const int pos = rv->position();
    QVERIFY((idx2[pos] == busiest).any().item<bool>());  // a position that chose it
    const int64_t target =
        m.projectOnVocab(r.value({Value::LayerOutput, 2}).index({0, pos})).argmax().item<int64_t>();  // the top prediction there
    const ExpertAttribution ref = expertLogitAttribution(m, r, 0, pos, target);
    QCOMPARE(rv->attribution()->attribution.target, target);
    const double share = ref.experts[1][busiest].item<double>();
    QVERIFY2(std::abs(rv->selectedShare() - share) < 1e-5 * (1 + std::abs(share)), qPrintable(QString("%1 vs %2").arg(rv->selectedShare()).arg(share)));
    const QString details = rv->details()->toPlainText();
    QVERIFY2(details.contains(QString("Expert %1 of block 2").arg(busiest)) && details.contains(QString::number(share, 'g', 5)) &&
                 details.contains("Promotes") && details.contains("MLP (mlp_output)"),
             qPrintable(details));
    // what it writes at each position: the engine's norms
    const ExpertRouting routing = expertRouting(m, r, 0);
    QCOMPARE(rv->normBars()->data()->size(), len);
    for (int t = 0; t < len; ++t)
        QVERIFY(std::abs(rv->normBars()->data()->at(t)->value - routing.outputNorm[1][busiest][t].item<double>()) < 1e-6);

    // click a cell of the grid: that position's top expert at that block
    const torch::Tensor idx0 = r.value({Value::ExpertIndices, 0}).index({0});
    QTest::mouseClick(rv->grid()->plot(), Qt::LeftButton, {}, rv->grid()->cellCenter(0, 2));
    const int64_t expert = idx0[2][0].item<int64_t>();
    QCOMPARE(rv->selectedBlock(), 0);
    QCOMPARE(rv->selectedExpert(), expert);
    QCOMPARE(rv->position(), 2);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(rv->attribution());
    {
        const int64_t t2 = m.projectOnVocab(r.value({Value::LayerOutput, 2}).index({0, 2})).argmax().item<int64_t>();
        const double s2 = expertLogitAttribution(m, r, 0, 2, t2).experts[0][expert].item<double>();
        QVERIFY2(std::abs(rv->selectedShare() - s2) < 1e-5 * (1 + std::abs(s2)), qPrintable(QString("%1 vs %2").arg(rv->selectedShare()).arg(s2)));
    }

    // Forbid: the intervention the Interventions dock knows, the stale-trace bar, Run, and no token routed to it
    const QString edit = QString("layers.0.mlp.router_logits[:, :, %1] = -inf").arg(expert);
    QVERIFY(rv->forbidButton()->isEnabled());
    QTest::mouseClick(rv->forbidButton(), Qt::LeftButton);
    QVERIFY2(w->interventionPanel()->active().contains(edit), qPrintable(w->interventionPanel()->active().join(" | ")));
    QVERIFY(w->staleInterventionsBar()->isVisible());
    QSignalSpy done(w.get(), &MainWindow::traceEnded);
    QTest::mouseClick(w->staleInterventionsRun(), Qt::LeftButton);
    QVERIFY(done.wait(60000));
    QVERIFY(viewJobsDone(*w));
    QCOMPARE(w->snapshot()->interventions, QStringList{edit});
    QVERIFY(rv->routing());
    QVERIFY(!(rv->routing()->indices[0] == expert).any().item<bool>());
    QCOMPARE(rv->loadModel()->value(0, static_cast<int>(expert)), 0.0);
    QCOMPARE(rv->selectedExpert(), expert);  // still shown, with its empty load
    QVERIFY(rv->details()->toPlainText().contains(QString("Chosen by 0 of %1 tokens").arg(len)));
    // the grid is the engine's edited trace
    {
        auto list = std::make_shared<EditList>();
        addIntervention(*list, m, edit.toStdString());
        TraceOptions eo;
        eo.save = routingValueKeys(m);
        eo.intervention = list;
        const TraceResult edited = trace(m, encodeBatch(m, {prompt.toStdString()}), eo);
        QVERIFY(torch::equal(rv->routing()->indices[0], edited.value({Value::ExpertIndices, 0}).index({0}).to(torch::kInt64)));
    }
    QVERIFY(!rv->interventionOffers().isEmpty());

    // a model with no experts says so
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(modelDir("tiny-llama"));
    QVERIFY(opened.wait(60000));
    w->interventionPanel()->clear();
    QVERIFY(runFromPanel(*w, {prompt}));
    QVERIFY(w->showView("routing"));
    QVERIFY2(rv->placeholderText().contains("no mixture of experts"), qPrintable(rv->placeholderText()));
    QVERIFY(!rv->routing());
}

namespace {
/// The text a user sees in a QLabel or tooltip: `text` itself where Qt shows it as plain text, the rendered
/// document's text where Qt takes it as HTML (Qt::mightBeRichText for AutoText, as QLabel and QToolTip decide).
QString shownText(const QString& text, Qt::TextFormat format = Qt::AutoText) {
    if (format == Qt::PlainText || (format == Qt::AutoText && !Qt::mightBeRichText(text))) return text;
    QTextDocument document;
    document.setHtml(text);
    return document.toPlainText();
}
}  // namespace

void TestGui::tokensShownAsText() {
    // A token that looks like an HTML tag is shown as written: the demo's start token "<s>" (Llama-family tokenizers'
    // BOS) is HTML's strike-through, and labels and tooltips that Qt took as rich text dropped it and struck the rest
    // of the line through.
    auto w = openWindow(demoModelDir());
    QVERIFY(w);
    QVERIFY(startTraceDone(*w));
    QCOMPARE(w->attachDictionary(demoModelDir() + "/sae-layers.0"), QString());
    QVERIFY(runFromPanel(*w, {"the cat sat on the mat . the cat"}));
    QCOMPARE(w->snapshot()->tokens.at(0).value(0), QString("<s>"));

    QVERIFY(w->showView("attribution"));
    AttributionView* av = w->attributionView();
    av->setPosition(0);
    QVERIFY(viewJobsDone(*w));
    QVERIFY(av->attribution());
    const QLabel* status = av->statusLabel();
    QVERIFY2(shownText(status->text(), status->textFormat()).contains("(after “<s>”)"), qPrintable(status->text()));

    QVERIFY(w->showView("features"));
    QVERIFY(featuresDone(*w));
    QVERIFY(viewJobsDone(*w));
    FeaturesView* fv = w->featuresView();
    QTest::mouseMove(fv->tokenText(), fv->tokenText()->tokenRect(0, 0).center());
    QCOMPARE(fv->selectedToken(), 0);
    const QLabel* top = fv->topTitleLabel();
    QVERIFY2(shownText(top->text(), top->textFormat()).contains("position 0 “<s>”"), qPrintable(top->text()));
    // a feature that never fires on the prompt: its largest activation is 0 (not the plot's range floor) and the plot
    // keeps a readable axis
    const torch::Tensor fires = (fv->currentRun()->features > 0).any(0);
    const int64_t silent = (~fires).nonzero().flatten()[0].item<int64_t>();
    fv->selectFeature(silent);
    QVERIFY2(fv->featureTitleLabel()->text().endsWith("active on 0 of 10 tokens, largest 0"), qPrintable(fv->featureTitleLabel()->text()));
    QCOMPARE(fv->activationPlot()->yAxis->range().upper, 1.1);
    // the quality line of a prompt of the BOS alone says it is measured there (the BOS is left out otherwise)
    QVERIFY(!featureQualityText(*fv->currentRun()).contains("first position alone"));
    FeatureRun bosOnly = *fv->currentRun();
    bosOnly.features = bosOnly.features.narrow(0, 0, 1);
    QVERIFY(featureQualityText(bosOnly).endsWith("(on the first position alone: the prompt has no other)"));

    // the attention heatmap's tooltip on the key "<s>"
    QVERIFY(w->showView("attention"));
    AttentionView* atv = w->attentionView();
    atv->setBlock(1);
    atv->setHead(0);
    QTest::mouseMove(atv->heatmap()->plot(), atv->heatmap()->cellCenter(3, 0));
    QVERIFY2(atv->heatmap()->hoverText().contains("“<s>”"), qPrintable(atv->heatmap()->hoverText()));
    if (QToolTip::isVisible()) QVERIFY2(shownText(QToolTip::text()).contains("“<s>”"), qPrintable(QToolTip::text()));
    // the trace line is as tall as its wrapped text (the dock cut a second line in half), and a note that reports a
    // result is not in the warning colour
    TracePanel* panel = w->tracePanel();
    QString longer = "Traced 1 prompt(s), 10 tokens.";
    for (int i = 0; i < 12; ++i) longer += " A longer outcome than the line holds, word after word.";
    panel->traceFinished(longer);
    panel->analysisStarted("attribution graph", 0);
    panel->analysisEnded("Attribution graph: 22 features, 4 edges in all.", /*warning=*/false);
    QTRY_VERIFY2(panel->statusLabel()->height() >= panel->statusLabel()->heightForWidth(panel->statusLabel()->width()),
                 qPrintable(QString("%1 < %2").arg(panel->statusLabel()->height()).arg(panel->statusLabel()->heightForWidth(panel->statusLabel()->width()))));
    QVERIFY(panel->statusLabel()->height() > 2 * panel->fontMetrics().lineSpacing());
    QVERIFY2(!panel->statusLabel()->styleSheet().contains("color"), qPrintable(panel->statusLabel()->styleSheet()));
    panel->analysisStarted("logit lens", 2);
    panel->analysisEnded("The logit lens was cancelled.");
    QVERIFY(panel->statusLabel()->styleSheet().contains("color"));
    // a status message longer than its room ends before the model label, with a gap (it ran into the label)
    QLabel* modelLabel = nullptr;
    for (QLabel* l : w->statusBar()->findChildren<QLabel*>())
        if (l->text().startsWith("model:")) modelLabel = l;
    QVERIFY(modelLabel);
    QString message = "read at:";
    while (w->statusBar()->fontMetrics().horizontalAdvance(message) < 2 * w->statusBar()->width()) message += " the child module q_proj";
    w->statusBar()->showMessage(message);
    const QImage bar = w->statusBar()->grab().toImage();
    QSet<QRgb> strip;  // the 10 px before the label: the panel's colour alone
    for (int x = modelLabel->x() - 12; x < modelLabel->x() - 2; ++x)
        for (int y = 2; y < bar.height() - 2; ++y) strip.insert(bar.pixel(x, y));
    QVERIFY2(strip.size() == 1, qPrintable(QString("%1 colours beside the label").arg(strip.size())));
    QSet<QRgb> text;  // and the message is drawn
    for (int x = 8; x < 200; ++x)
        for (int y = 2; y < bar.height() - 2; ++y) text.insert(bar.pixel(x, y));
    QVERIFY(text.size() > 1);
    // and plainToolTip keeps every character and line of any text
    const QString tricky = "head 1\nkey “<s>” & <b>bold</b> &lt;\n  indented";
    QCOMPARE(shownText(plainToolTip(tricky)), tricky);
}

void TestGui::prunedGraphFileHasNoScores() {
    // The replacement and completeness scores are the full graph's: a pruned graph file (what `nnscope circuit` writes by
    // default) has lost most error nodes and scored 1.000 / 1.000 in the Circuit view where the command printed 0.964 /
    // 0.983; it shows none, and an unpruned file shows the command's.
    const QString demo = demoModelDir();
    const QString prompt = "tom and lily went to the park with a red ball . tom and lily went to the park with";
    auto write = [&](const QString& file, bool prune) {
        QProcess p;
        QStringList args{"circuit", "--model", demo, "--transcoders", demo + "/transcoders", "--prompt", prompt, "--out", file, "--json"};
        if (!prune) args << "--no-prune";
        p.start(kBinary, args);
        p.waitForFinished(120000);
        return p.exitCode() == 0 ? nlohmann::json::parse(p.readAllStandardOutput().toStdString()) : nlohmann::json();
    };
    const QString pruned = tmp_.filePath("pruned-graph.json"), full = tmp_.filePath("full-graph.json");
    const nlohmann::json a = write(pruned, true), b = write(full, false);
    QVERIFY(!a.is_null() && !b.is_null());
    CircuitView view;
    QCOMPARE(view.openGraph(pruned), QString());
    QVERIFY2(!view.statusLabel()->text().contains("replacement score") && view.statusLabel()->text().contains("a pruned graph"),
             qPrintable(view.statusLabel()->text()));
    QCOMPARE(view.openGraph(full), QString());
    const QString expected = QString(" · replacement score %1 · completeness %2")
                                 .arg(b["replacement_score"].get<double>(), 0, 'f', 3)
                                 .arg(b["completeness_score"].get<double>(), 0, 'f', 3);
    QVERIFY2(view.statusLabel()->text().contains(expected), qPrintable(view.statusLabel()->text() + " / " + expected));
}
