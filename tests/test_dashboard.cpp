// SPDX-License-Identifier: MIT
// Offline feature dashboards (core/run/dashboard.h) against a direct computation: every window of the dataset cut
// again here, traced alone and run through runDictionary, then the top activations, their contexts, the histogram, the
// density and the maximum counted position by position. An interrupted run resumed gives the one run's file; bad
// datasets and a resume against another dataset are refused with messages that say so.
#include "core/analysis/featureeffects.h"
#include "core/io/dictionary.h"
#include "core/io/transcoderset.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/dashboard.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "core/run/train_demo.h"
#include "testutil.h"

#include "testsuite.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>

using namespace nnscope;

namespace {

std::string demoDir() { return NNSCOPE_DEMO_MODEL_DIR; }

void writeLines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream out(path, std::ios::binary);
    for (const auto& l : lines) out << l << "\n";
}

/// The test's dataset: rows of the demo's training text, a blank line, one long document (several windows of 16), and
/// two short ones.
std::vector<std::string> dataset() {
    std::vector<std::string> lines = demoTrainingText(9, 24, 99);
    lines.insert(lines.begin() + 3, "");
    const auto longDoc = demoTrainingText(1, 60, 5).front();
    lines.push_back(longDoc);
    lines.push_back("tom and lily went to the park");
    lines.push_back("the");
    return lines;
}

/// One position's activations, as the direct computation sees them.
struct Seen {
    int64_t document, position;
    std::vector<int64_t> window;        ///< the window's ids
    int64_t index;                      ///< the position's index in the window
    torch::Tensor features;             ///< [window length, d_sae]
};

}  // namespace

class TestDashboard : public QObject {
    Q_OBJECT
private slots:
    // The pass stops after the asked block: the values up to it are those of the whole pass, nothing after it is made.
    void traceStopsAfterABlock() {
        auto model = Model::load(demoDir(), test::float32());
        const Batch batch = encodeBatch(*model, {"tom and lily went to the park", "the park"});
        TraceOptions full, early;
        full.save = early.save = {{Value::LayerOutput, 0}, {Value::LayerOutput, 1}};
        early.stopAfterLayer = 0;
        const TraceResult a = trace(*model, batch, full), b = trace(*model, batch, early);
        QVERIFY(torch::equal(a.value({Value::LayerOutput, 0}), b.value({Value::LayerOutput, 0})));
        QVERIFY(!b.value({Value::LayerOutput, 1}).defined());
        QVERIFY(!b.nextTokenProbs.defined());
        QVERIFY(a.nextTokenProbs.defined());
    }

    // The dashboard equals runDictionary on every window, counted directly.
    void matchesDirectComputation() {
        QTemporaryDir tmp;
        const std::string data = tmp.filePath("data.txt").toStdString(), out = tmp.filePath("dash.safetensors").toStdString();
        const std::vector<std::string> lines = dataset();
        writeLines(data, lines);
        auto model = Model::load(demoDir(), test::float32());
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(demoDir() + "/" + kDemoDictionaryFolder));
        DashboardOptions o;
        o.dataset = data;
        o.out = out;
        o.contextSize = 16;
        o.batchSize = 3;
        int reports = 0;
        o.progress = [&](const DashboardProgress&) { ++reports; };
        const DashboardRun run = makeDashboard(*model, attached, o);
        QVERIFY(run.complete);
        QVERIFY(reports > 1);
        QCOMPARE(run.progress.documentsDone, static_cast<int64_t>(lines.size()));
        const Dashboard d = loadDashboard(out);
        const int64_t F = attached.dictionary->dSae;
        QCOMPARE(d.dSae(), F);
        QCOMPARE(d.metadata.at("complete"), std::string("true"));
        QCOMPARE(d.metadata.at("documents_done"), std::to_string(lines.size()));
        QCOMPARE(d.metadata.at("dtype"), dtypeName(model->dtype()));  // "float32", as nnscope spells it everywhere (not c10's "Float")

        // the direct computation: windows of 15 tokens after their own BOS, each traced alone
        const Tokenizer& tok = *model->tokenizer();
        QVERIFY(tok.addsBos());
        std::vector<Seen> seen;
        int64_t tokens = 0;
        for (size_t doc = 0; doc < lines.size(); ++doc) {
            const std::vector<int64_t> ids = tok.encode(lines[doc], true);
            for (size_t from = 1; from < ids.size(); from += 15) {
                std::vector<int64_t> window{ids[0]};
                for (size_t i = from; i < std::min(ids.size(), from + 15); ++i) window.push_back(ids[i]);
                tokens += static_cast<int64_t>(window.size());
                TraceOptions t;
                t.save = attached.neededValues();
                const FeatureRun r = runDictionary(*model, trace(*model, batchFromIds({window}), t), attached, 0);
                for (size_t i = 1; i < window.size(); ++i)
                    seen.push_back({static_cast<int64_t>(doc), static_cast<int64_t>(from + i - 1), window, static_cast<int64_t>(i), r.features});
            }
        }
        QCOMPARE(d.positions, static_cast<int64_t>(seen.size()));
        QCOMPARE(d.metadata.at("tokens_done"), std::to_string(tokens));
        // density, maximum and histogram: a count over every position
        std::vector<int64_t> active(static_cast<size_t>(F), 0);
        std::vector<double> maximum(static_cast<size_t>(F), 0);
        std::vector<std::vector<int64_t>> hist(static_cast<size_t>(F), std::vector<int64_t>(kDashboardBins, 0));
        std::vector<std::vector<std::tuple<double, int64_t, int64_t>>> tops(static_cast<size_t>(F));
        for (const Seen& s : seen) {
            const torch::Tensor row = s.features[s.index].to(torch::kFloat64).contiguous();
            const double* a = row.data_ptr<double>();
            for (int64_t f = 0; f < F; ++f) {
                if (!(a[f] > 0)) continue;
                ++active[static_cast<size_t>(f)];
                maximum[static_cast<size_t>(f)] = std::max(maximum[static_cast<size_t>(f)], a[f]);
                const int bin = std::clamp(static_cast<int>(std::floor((std::log10(a[f]) + 5.0) * 10.0)), 0, kDashboardBins - 1);
                ++hist[static_cast<size_t>(f)][static_cast<size_t>(bin)];
                tops[static_cast<size_t>(f)].emplace_back(a[f], s.document, s.position);
            }
        }
        int checkedContexts = 0, firing = 0;
        for (int64_t f = 0; f < F; ++f) {
            const size_t fi = static_cast<size_t>(f);
            QCOMPARE(d.activeCount[f].item<int64_t>(), active[fi]);
            QVERIFY(std::abs(d.density(f) - static_cast<double>(active[fi]) / static_cast<double>(seen.size())) < 1e-12);
            QVERIFY2(std::abs(d.maxActivation[f].item<double>() - maximum[fi]) <= 1e-4 * (1 + maximum[fi]), qPrintable(QString::number(f)));
            for (int b = 0; b < kDashboardBins; ++b) QCOMPARE(d.histogram[f][b].item<int64_t>(), hist[fi][static_cast<size_t>(b)]);
            // the top 20: the largest activations, largest first, at the positions that hold them
            auto& all = tops[fi];
            std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
            const int want = std::min<int>(kDashboardTopK, static_cast<int>(all.size()));
            QCOMPARE(d.filledSlots(f), want);
            firing += want > 0;
            for (int s = 0; s < want; ++s) {
                const double value = d.topActivation[f][s].item<double>();
                QVERIFY2(std::abs(value - std::get<0>(all[static_cast<size_t>(s)])) <= 1e-4 * (1 + value), qPrintable(QString("feature %1 slot %2").arg(f).arg(s)));
                const int64_t doc = d.topDocument[f][s].item<int64_t>(), pos = d.topPosition[f][s].item<int64_t>();
                // the same position (where no other activation lies within rounding of it)
                const auto it = std::find_if(all.begin(), all.end(), [&](const auto& x) { return std::get<1>(x) == doc && std::get<2>(x) == pos; });
                QVERIFY2(it != all.end(), qPrintable(QString("feature %1 slot %2: document %3 position %4 is not active").arg(f).arg(s).arg(doc).arg(pos)));
                QVERIFY(std::abs(std::get<0>(*it) - value) <= 1e-4 * (1 + value));
                // its context: the window's tokens and the feature's activation on each
                const Seen& at = *std::find_if(seen.begin(), seen.end(), [&](const Seen& x) { return x.document == doc && x.position == pos; });
                for (int c = 0; c < kDashboardWindow; ++c) {
                    const int64_t i = at.index - kDashboardBefore + c;
                    const bool inside = i >= 0 && i < static_cast<int64_t>(at.window.size());
                    QCOMPARE(d.contextIds[f][s][c].item<int64_t>(), inside ? at.window[static_cast<size_t>(i)] : int64_t(-1));
                    const double expected = inside ? at.features[i][f].item<double>() : 0.0;
                    QVERIFY(std::abs(d.contextActivation[f][s][c].item<double>() - expected) <= 1e-4 * (1 + std::abs(expected)));
                }
                ++checkedContexts;
            }
            for (int s = want; s < kDashboardTopK; ++s) QCOMPARE(d.topDocument[f][s].item<int64_t>(), int64_t(-1));
        }
        QVERIFY(firing > 100);
        QVERIFY(checkedContexts > 1000);
    }

    // Stopped after its first batches and run again, the file is the one run's.
    void resumeGivesTheSameResult() {
        QTemporaryDir tmp;
        const std::string data = tmp.filePath("data.txt").toStdString();
        writeLines(data, dataset());
        auto model = Model::load(demoDir(), test::float32());
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(demoDir() + "/" + kDemoDictionaryFolder));
        DashboardOptions o;
        o.dataset = data;
        o.contextSize = 16;
        o.batchSize = 2;
        o.out = tmp.filePath("one.safetensors").toStdString();
        QVERIFY(makeDashboard(*model, attached, o).complete);

        o.out = tmp.filePath("two.safetensors").toStdString();
        std::atomic<bool> cancel{false};
        o.cancel = &cancel;
        o.progress = [&](const DashboardProgress&) { cancel = true; };  // after the first batch
        const DashboardRun first = makeDashboard(*model, attached, o);
        QVERIFY(first.cancelled && !first.complete);
        QVERIFY(first.progress.documentsDone > 0 && first.progress.documentsDone < 8);
        const Dashboard partial = loadDashboard(o.out);
        QCOMPARE(partial.metadata.at("complete"), std::string("false"));
        QCOMPARE(partial.metadata.at("documents_done"), std::to_string(first.progress.documentsDone));
        cancel = false;
        o.progress = nullptr;
        const DashboardRun second = makeDashboard(*model, attached, o);
        QVERIFY(second.complete);
        QCOMPARE(second.resumedFrom, first.progress.documentsDone);

        const Dashboard a = loadDashboard(tmp.filePath("one.safetensors").toStdString()), b = loadDashboard(o.out);
        QCOMPARE(a.positions, b.positions);
        QCOMPARE(a.metadata.at("tokens_done"), b.metadata.at("tokens_done"));
        QVERIFY(torch::equal(a.activeCount, b.activeCount));
        QVERIFY(torch::equal(a.histogram, b.histogram));
        QVERIFY(torch::equal(a.topDocument, b.topDocument));
        QVERIFY(torch::equal(a.topPosition, b.topPosition));
        QVERIFY(torch::equal(a.contextIds, b.contextIds));
        NNSCOPE_COMPARE_TENSORS(a.topActivation, b.topActivation, 1e-5, 1e-5);
        NNSCOPE_COMPARE_TENSORS(a.contextActivation, b.contextActivation, 1e-5, 1e-5);
        NNSCOPE_COMPARE_TENSORS(a.maxActivation, b.maxActivation, 1e-5, 1e-5);

        // a file of another dataset or context size is not resumed, and says why
        auto refused = [&](const DashboardOptions& other, const char* says) {
            try {
                makeDashboard(*model, attached, other);
            } catch (const Error& e) {
                const std::string m = e.what();
                QVERIFY2(m.find(says) != std::string::npos && m.find(o.out) != std::string::npos, e.what());
                return;
            }
            QFAIL("a mismatched resume was not refused");
        };
        DashboardOptions other = o;
        other.contextSize = 32;
        refused(other, "--context-size");
        const std::string changed = tmp.filePath("changed.txt").toStdString();
        auto lines = dataset();
        lines.push_back("one more line");
        writeLines(changed, lines);
        other = o;
        other.dataset = changed;
        refused(other, "another dataset");
    }

    // A missing, empty or token-less dataset is refused before anything is written.
    void badDatasets() {
        QTemporaryDir tmp;
        auto model = Model::load(demoDir(), test::float32());
        const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(demoDir() + "/" + kDemoDictionaryFolder));
        auto refused = [&](const std::string& data, const char* says) {
            DashboardOptions o;
            o.dataset = data;
            o.out = tmp.filePath("dash.safetensors").toStdString();
            try {
                makeDashboard(*model, attached, o);
            } catch (const Error& e) {
                const std::string m = e.what();
                QVERIFY2(m.find(says) != std::string::npos && m.find(data) != std::string::npos, e.what());
                QVERIFY(!QFile::exists(tmp.filePath("dash.safetensors")));
                return;
            }
            QFAIL(qPrintable(QString::fromStdString("not refused: " + data)));
        };
        refused(tmp.filePath("missing.txt").toStdString(), "does not exist");
        writeLines(tmp.filePath("empty.txt").toStdString(), {});
        refused(tmp.filePath("empty.txt").toStdString(), "is empty");
        writeLines(tmp.filePath("blank.txt").toStdString(), {"", "   ", ""});
        refused(tmp.filePath("blank.txt").toStdString(), "no document has a token");
        // a file that is not a dashboard is not overwritten
        writeLines(tmp.filePath("data.txt").toStdString(), {"tom and lily"});
        DashboardOptions o;
        o.dataset = tmp.filePath("data.txt").toStdString();
        o.out = demoDir() + "/model.safetensors";
        QVERIFY_THROWS_EXCEPTION(Error, makeDashboard(*model, attached, o));
    }

    // A cross-layer transcoder's layer: its W_enc_<i>.safetensors read alone is that layer's encoder (encoderOnly), and
    // `nnscope features --dataset` makes its dashboard beside it; the counts and maxima equal the layer's features of
    // the whole transcoder (runCrossLayerTranscoder) on each document, and findDashboard finds it from the transcoder.
    // What would need its (missing) decoder is refused with the reason.
    void crossLayerEncoder() {
        QTemporaryDir tmp;
        const QString clt = tmp.filePath("clt");
        QVERIFY(QDir().mkpath(clt));
        const QString fixture = QString::fromStdString(test::fixturesDir() + "/dictionaries/circuittracer-clt-llama");
        for (const QFileInfo& f : QDir(fixture).entryInfoList(QDir::Files)) QVERIFY(QFile::copy(f.filePath(), clt + "/" + f.fileName()));
        const std::string encoderFile = (clt + "/W_enc_1.safetensors").toStdString();
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        const auto transcoder = loadCrossLayerTranscoder(clt.toStdString());
        const auto encoder = loadDictionary(encoderFile);
        QVERIFY(encoder->encoderOnly);
        QCOMPARE(encoder->site, transcoder->site(1));
        QCOMPARE(encoder->dSae, transcoder->dTranscoder);
        QCOMPARE(encoder->weightFiles, std::vector<std::string>{encoderFile});
        QCOMPARE(defaultDashboardPath(encoder->dir), (clt + "/W_enc_1.dashboard.safetensors").toStdString());
        const torch::Tensor x = torch::randn({5, transcoder->dModel});
        QVERIFY(torch::equal(encoder->encode(x), transcoder->encode(x, 1)));
        auto says = [](const std::function<void()>& f, const char* what) {
            try {
                f();
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find(what) != std::string::npos, e.what());
                return;
            }
            QFAIL(qPrintable(QString("not refused; expected: ") + what));
        };
        says([&] { encoder->decode(encoder->encode(x), x); }, "run the transcoder whole");
        says([&] { featureLogitEffects(*model, *encoder, 0, 5); }, "no decoder of its own");
        says([&] { loadDictionaries(encoderFile); }, "run it whole from its folder");
        says([&] { transcoder->layerEncoder(2); }, "no layer 2");
        QVERIFY(!findDashboard(*transcoder->layerEncoder(1)));

        const QString data = tmp.filePath("data.txt"), out = QString::fromStdString(defaultDashboardPath(encoder->dir));
        const std::vector<std::string> lines{"the cat sat on the mat", "a dog ran to the park and the dog sat down", "the end"};
        writeLines(data.toStdString(), lines);
        QProcess p;
        p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(test::fixture("tiny-llama")), "--dtype", "float32",
                                 "--dictionary", QString::fromStdString(encoderFile), "--dataset", data, "--out", out, "--json"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QCOMPARE(nlohmann::json::parse(p.readAllStandardOutput().toStdString())["complete"].get<bool>(), true);
        const std::shared_ptr<const Dashboard> d = findDashboard(*transcoder->layerEncoder(1));
        QVERIFY(d);
        QCOMPARE(d->metadata.at("site"), valuePath(model->family(), AttachedDictionary::attach(*model, encoder).site));

        // the direct computation: the whole transcoder on each document (each fits one window), BOS left out
        QVERIFY(model->tokenizer()->addsBos());
        const AttachedCrossLayerTranscoder attached = AttachedCrossLayerTranscoder::attach(*model, transcoder);
        const int64_t F = transcoder->dTranscoder;
        torch::Tensor active = torch::zeros({F}, torch::kInt64), maximum = torch::zeros({F});
        int64_t positions = 0;
        for (const std::string& line : lines) {
            TraceOptions t;
            t.save = attached.neededValues();
            const std::vector<int64_t> ids = model->tokenizer()->encode(line, true);
            const TraceResult r = trace(*model, batchFromIds({ids}), t);
            const torch::Tensor f = runCrossLayerTranscoder(*model, r, attached, 0)[1].features.narrow(0, 1, static_cast<int64_t>(ids.size()) - 1);
            positions += f.size(0);
            active += (f > 0).sum(0);
            maximum = torch::maximum(maximum, f.clamp_min(0).amax(0));
        }
        QCOMPARE(d->positions, positions);
        QVERIFY(active.sum().item<int64_t>() > 0);
        QVERIFY(torch::equal(d->activeCount, active));
        NNSCOPE_COMPARE_TENSORS(d->maxActivation, maximum, 1e-5, 1e-5);
    }

    // The command line: --dataset writes the dashboard and says what it did; the --prompt contract is unchanged.
    void commandLine() {
        QTemporaryDir tmp;
        const QString data = tmp.filePath("data.txt"), out = tmp.filePath("dash.safetensors");
        writeLines(data.toStdString(), dataset());
        QProcess p;
        p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(demoDir()), "--dictionary",
                                 QString::fromStdString(demoDir() + "/" + kDemoDictionaryFolder), "--dataset", data, "--out", out,
                                 "--context-size", "16", "--batch", "4", "--max-documents", "5", "--json"});
        QVERIFY(p.waitForFinished(120000));
        const QString progress = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(p.exitCode() == 0, qPrintable(progress));
        // stderr is no terminal here: the progress is whole lines, not carriage returns run into one line prefixed
        // "nnscope:" as an error is, and the last step is said once
        QVERIFY2(!progress.contains('\r') && !progress.contains("nnscope:") && progress.endsWith("\n"), qPrintable(progress));
        QCOMPARE(progress.count(QRegularExpression("^documents 5/5, \\d+ tokens, \\d+ tokens/s$", QRegularExpression::MultilineOption)), 1);
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(j["documents_done"].get<int64_t>(), int64_t(5));
        QCOMPARE(j["complete"].get<bool>(), false);
        QCOMPARE(loadDashboard(out.toStdString()).metadata.at("documents_done"), std::string("5"));
        p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(demoDir()), "--dictionary",
                                 QString::fromStdString(demoDir() + "/" + kDemoDictionaryFolder), "--dataset", data, "--out", out,
                                 "--context-size", "16", "--json"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto k = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(k["resumed_from"].get<int64_t>(), int64_t(5));
        QCOMPARE(k["complete"].get<bool>(), true);
        // --dataset without --out is a usage error
        p.start(NNSCOPE_BINARY, {"features", "--model", QString::fromStdString(demoDir()), "--dictionary",
                                 QString::fromStdString(demoDir() + "/" + kDemoDictionaryFolder), "--dataset", data});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("--out"));
    }
};

NNSCOPE_TEST_SUITE(TestDashboard, "test_dashboard")
#include "test_dashboard.moc"
