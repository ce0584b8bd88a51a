// SPDX-License-Identifier: MIT
// nnscope_gui_bench: how the window behaves during long work (a program, not a test; docs/PERFORMANCE.md, "The window
// during a trace"). Two measurements, each through the real MainWindow (offscreen unless a display is there):
//
//   latency  A trace of --tokens tokens (default 512) from the trace panel on a big checkpoint, by default a random
//            Llama of 16 layers, hidden 1024, a 128k vocabulary (the Llama 3 tokenizer of ../shared/models), written
//            in bfloat16 under $TMPDIR the first time. A 5 ms timer in the window's thread records how late each of
//            its ticks comes: the event loop's latency while the worker traces, while the window takes the snapshot,
//            and then while the worker computes the logit lens of the prompt once the Logit lens tab is shown, and the
//            information flow importances once the Flow tab is shown; and how long Esc takes to stop each.
//   memory   --traces N traces of the demo model (default 100) with the Logit lens tab shown (each trace computes
//            its lens too): the process's resident memory after each, to show that it stays flat.
//
// Run with --help for the options.
#include "app/defaultmodel.h"
#include "app/mainwindow.h"
#include "core/io/safetensors.h"
#include "random_checkpoint.h"
#include "widgets/views/logitlensview.h"
#include "widgets/panels/tracepanel.h"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QProgressBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace nnscope;
namespace fs = std::filesystem;

namespace {

constexpr int64_t L = 16, H = 1024, NH = 16, KV = 4, D = 64, I = 4096, V = 128256;

const char* kUsage =
    "Usage: nnscope_gui_bench [options]\n"
    "The window's event-loop latency during a long trace, its logit lens and its information flow, and its memory over\n"
    "many traces.\n\n"
    "  --dir DIR          checkpoint for the latency run; a folder without model.safetensors gets a random Llama\n"
    "                     (16 layers, hidden 1024, vocab 128256, bfloat16, about 1 GB) written there first, with the\n"
    "                     tokenizer of --tokenizer (default: $TMPDIR/nnscope-bench-llama-16x1024)\n"
    "  --tokenizer DIR    tokenizer.json and tokenizer_config.json for that checkpoint\n"
    "                     (default: the source tree's ../shared/models/llama3-tokenizer)\n"
    "  --tokens N         prompt length of the latency run (default 512)\n"
    "  --threads N        libtorch threads, 0 = every core (default 0)\n"
    "  --traces N         traces of the demo model for the memory run (default 100; 0 skips it)\n"
    "  --skip-latency     only the memory run\n"
    "  -h, --help         print this and exit\n";

void makeCheckpoint(const std::string& dir, const std::string& tokenizer) {
    if (fs::exists(fs::path(dir) / "model.safetensors")) return;
    fs::create_directories(dir);
    std::cerr << "writing a random 16-layer Llama to " << dir << " ..." << std::endl;
    bench::writeRandomLlamaWeights(dir, {L, H, NH, KV, D, I, V, /*tiedLmHead=*/false});
    nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", H},
                        {"intermediate_size", I}, {"num_hidden_layers", L}, {"num_attention_heads", NH},
                        {"num_key_value_heads", KV}, {"head_dim", D}, {"vocab_size", V}, {"rms_norm_eps", 1e-5},
                        {"max_position_embeddings", 8192}, {"rope_theta", 500000.0}, {"tie_word_embeddings", false},
                        {"hidden_act", "silu"}, {"torch_dtype", "bfloat16"}, {"bos_token_id", 128000},
                        {"eos_token_id", 128001}};
    std::ofstream(dir + "/config.json") << c.dump(2);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(fs::path(tokenizer) / f, fs::path(dir) / f);
}

/// The event loop's lateness: a 5 ms timer in the window's thread, the largest and the 99th percentile of how much
/// later than due each tick came.
class LatencyProbe : public QObject {
public:
    LatencyProbe() {
        timer_.setTimerType(Qt::PreciseTimer);
        timer_.setInterval(kInterval);
        connect(&timer_, &QTimer::timeout, this, [this] {
            const qint64 now = clock_.nsecsElapsed();
            if (last_ >= 0) late_.push_back(std::max<double>(0, (now - last_) / 1e6 - kInterval));
            last_ = now;
        });
    }
    void start() {
        late_.clear();
        last_ = -1;
        clock_.start();
        timer_.start();
    }
    void stop() { timer_.stop(); }
    double worst() const { return late_.empty() ? 0 : *std::max_element(late_.begin(), late_.end()); }
    double p99() const {
        if (late_.empty()) return 0;
        std::vector<double> s = late_;
        std::sort(s.begin(), s.end());
        return s[std::min(s.size() - 1, static_cast<size_t>(0.99 * s.size()))];
    }
    size_t ticks() const { return late_.size(); }

private:
    static constexpr int kInterval = 5;
    QTimer timer_;
    QElapsedTimer clock_;
    qint64 last_ = -1;
    std::vector<double> late_;
};

long residentKiB() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

bool waitFor(QObject* sender, const char* signal, int ms) {
    QSignalSpy spy(sender, signal);
    return spy.wait(ms);
}

std::unique_ptr<MainWindow> openWindow(const QString& dir) {
    StartOptions options;
    options.openDefault = false;
    options.useSettings = false;
    auto w = std::make_unique<MainWindow>(options);
    w->show();
    QSignalSpy opened(w.get(), &MainWindow::modelOpened);
    w->openModel(dir);
    if (!opened.wait(600000)) {
        std::cerr << "could not open " << dir.toStdString() << ": " << w->errorText().toStdString() << std::endl;
        return nullptr;
    }
    if (w->tracePanel()->isRunning()) waitFor(w.get(), SIGNAL(traceEnded()), 600000);  // the demo traces its own prompt
    return w;
}

/// Runs the trace of `prompt` from the panel's Run button and waits for its end (and for the lens its view asks for).
bool runTrace(MainWindow& w, const QString& prompt, double* seconds = nullptr) {
    w.tracePanel()->setPrompts({prompt});
    QElapsedTimer t;
    t.start();
    QSignalSpy ended(&w, &MainWindow::traceEnded);
    w.runTrace();
    if (!ended.wait(600000) || !w.snapshot()) return false;
    if (seconds) *seconds = t.elapsed() / 1000.0;
    return true;
}

/// Waits until no lens job runs: the fitted view of a long prompt asks for its positions a chunk of 128 per job (the
/// last ones first), each job's end starting the next.
bool lensDone(MainWindow& w) {
    while (w.lensRunning())
        if (!waitFor(&w, SIGNAL(lensEnded()), 600000)) return false;
    return true;
}

/// Waits for everything the shown views asked the worker to compute (the lens, the Flow graph, ...).
bool viewJobsDone(MainWindow& w) {
    QSignalSpy done(&w, &MainWindow::viewJobsDone);
    while (w.viewJobsRunning())
        if (!done.wait(600000)) return false;
    return true;
}

int latency(const QString& dir, int tokens) {
    auto w = openWindow(dir);
    if (!w) return 1;
    const Model& m = *w->model();
    QString prompt;
    const QStringList words = {" the", " cat", " sat", " on", " a", " mat"};
    size_t n = 0;
    for (int i = 0; n < static_cast<size_t>(tokens); ++i) {  // words until the prompt is `tokens` tokens, BOS included
        prompt += words[i % words.size()];
        if (i + 2 >= tokens) n = encodeBatch(m, {prompt.toStdString()}).ids[0].size();
    }
    std::printf("model: %s (%lld blocks, hidden %lld, vocab %lld, %s); prompt: %zu tokens; %d threads\n\n",
                dir.toUtf8().constData(), static_cast<long long>(m.config().numLayers), static_cast<long long>(m.config().hiddenSize),
                static_cast<long long>(m.config().vocabSize), torch::toString(m.dtype()), n, torch::get_num_threads());
    std::printf("| phase | view shown | s | event-loop ticks | worst lateness ms | 99th percentile ms |\n|---|---|---|---|---|---|\n");
    LatencyProbe probe;
    auto row = [&](const char* phase, const char* view, double s) {
        std::printf("| %s | %s | %.2f | %zu | %.1f | %.1f |\n", phase, view, s, probe.ticks(), probe.worst(), probe.p99());
        std::fflush(stdout);
    };

    // 1. a trace with the Attention tab shown: no lens is computed
    w->showView("attention");
    const int lensRuns = w->worker()->lensRuns();
    double s = 0;
    probe.start();
    if (!runTrace(*w, prompt, &s)) return 1;
    QTest::qWait(300);  // what the window does after the trace: the views take the snapshot
    probe.stop();
    row("trace (the lens is not computed)", "Attention", s);
    if (w->worker()->lensRuns() != lensRuns) std::printf("\nunexpected: the trace computed a logit lens\n");

    // 2. the Logit lens tab shown: its lens is computed in the worker, the panel's bar counting its blocks
    QElapsedTimer t;
    probe.start();
    t.start();
    w->showView("lens");
    if (!lensDone(*w)) return 1;
    s = t.elapsed() / 1000.0;
    QTest::qWait(300);
    probe.stop();
    row("logit lens of the prompt shown", "Logit lens", s);

    // 3. a trace with the Logit lens tab shown, Esc pressed in the lens phase: how long until it stops
    probe.start();
    if (!runTrace(*w, prompt + " mat", &s)) return 1;
    QProgressBar* bar = w->tracePanel()->progressBar();
    while (w->lensRunning() && bar->value() < 2) QTest::qWait(20);
    w->activateWindow();
    t.start();
    QTest::keyClick(w.get(), Qt::Key_Escape);
    if (!lensDone(*w)) return 1;
    const double cancel = t.elapsed() / 1000.0;
    probe.stop();
    row("trace, then its lens cancelled with Esc", "Logit lens", s + cancel);
    std::printf("\nEsc to the lens stopped: %.2f s (the lens stops within one block)\n", cancel);

    // 4. the Flow tab shown: its importances are computed in the worker (they were computed on the window's thread)
    probe.start();
    t.start();
    w->showView("flow");
    if (!viewJobsDone(*w)) return 1;
    s = t.elapsed() / 1000.0;
    QTest::qWait(300);
    probe.stop();
    std::printf("\n| phase | view shown | s | event-loop ticks | worst lateness ms | 99th percentile ms |\n|---|---|---|---|---|---|\n");
    row("information flow of the prompt shown", "Flow", s);

    // 5. a trace with the Flow tab shown, Esc pressed while its importances are computed
    probe.start();
    if (!runTrace(*w, prompt, &s)) return 1;
    while (w->viewJobsRunning() && bar->value() < 2) QTest::qWait(20);
    w->activateWindow();
    t.start();
    QTest::keyClick(w.get(), Qt::Key_Escape);
    if (!viewJobsDone(*w)) return 1;
    const double flowCancel = t.elapsed() / 1000.0;
    probe.stop();
    row("trace, then its information flow cancelled with Esc", "Flow", s + flowCancel);
    std::printf("\nEsc to the information flow stopped: %.2f s (it stops within one block)\n", flowCancel);
    return 0;
}

int memory(int traces) {
    auto w = openWindow(demoModelDir());
    if (!w) return 1;
    w->showView("lens");
    const QString prompt = demoPrompt();
    std::vector<long> rss;
    for (int i = 0; i < traces; ++i) {
        if (!runTrace(*w, prompt) || !lensDone(*w)) return 1;
        QCoreApplication::processEvents();
        rss.push_back(residentKiB());
    }
    std::printf("\nresident memory over %d traces of the demo model (Logit lens tab shown), MiB:\n\n", traces);
    std::printf("| after trace | 1 | 10 | %d | %d | largest |\n|---|---|---|---|---|---|\n", traces / 2, traces);
    auto mib = [](long kib) { return kib / 1024.0; };
    std::printf("| RSS MiB | %.1f | %.1f | %.1f | %.1f | %.1f |\n", mib(rss.front()), mib(rss[std::min<size_t>(9, rss.size() - 1)]),
                mib(rss[rss.size() / 2 - (rss.size() > 1 ? 1 : 0)]), mib(rss.back()), mib(*std::max_element(rss.begin(), rss.end())));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = (fs::temp_directory_path() / "nnscope-bench-llama-16x1024").string();
    std::string tokenizer = NNSCOPE_SHARED_MODELS_DIR "/llama3-tokenizer";
    int tokens = 512, threads = 0, traces = 100;
    bool doLatency = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "nnscope_gui_bench: " << a << " needs a value (see --help)" << std::endl;
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return 0;
        } else if (a == "--dir") {
            dir = value();
        } else if (a == "--tokenizer") {
            tokenizer = value();
        } else if (a == "--tokens") {
            tokens = std::stoi(value());
        } else if (a == "--threads") {
            threads = std::stoi(value());
        } else if (a == "--traces") {
            traces = std::stoi(value());
        } else if (a == "--skip-latency") {
            doLatency = false;
        } else {
            std::cerr << "nnscope_gui_bench: unknown option " << a << " (see --help)" << std::endl;
            return 2;
        }
    }
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);  // never the user's settings
    configureThreads(threads);
    if (doLatency) {
        makeCheckpoint(dir, tokenizer);
        if (const int rc = latency(QString::fromStdString(dir), tokens)) return rc;
    }
    if (traces > 0)
        if (const int rc = memory(traces)) return rc;
    return 0;
}
