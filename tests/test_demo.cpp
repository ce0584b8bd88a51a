// SPDX-License-Identifier: MIT
// The demo model (issue 6): the committed folder resources/demo-model loads through Model::load like any
// checkpoint; on held-out repeated sequences its loss on the second occurrence is far below the first, a head of
// its last layer is an induction head (score > 0.5) while no head of layer 0 is; a short training run is
// bit-for-bit reproducible for a fixed seed; the trainer never replaces a folder that is not a demo folder.
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/dictionary.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "core/run/train_demo.h"
#include "core/io/transcoderset.h"
#include "core/io/graphjson.h"
#include "core/analysis/circuitgraph.h"

#include <QDir>
#include <QProcess>
#include <QFile>
#include <QTemporaryDir>

#include "testsuite.h"
#include "testutil.h"

#include <QtTest>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <tuple>

using namespace torch::indexing;

namespace {

const std::string kDemoDir = NNSCOPE_DEMO_MODEL_DIR;

QByteArray readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

/// Three short training runs into `tmp`/a, b and c (seeds 7, 7 and 8) with `train(dir, seed)`, which returns the bytes
/// of the weights file it wrote: the two seed-7 runs must be byte-identical, the seed-8 run must differ.
void checkReproducible(const QTemporaryDir& tmp, const std::function<QByteArray(const QString&, uint64_t)>& train) {
    const QByteArray a = train(QDir(tmp.path()).filePath("a"), 7), b = train(QDir(tmp.path()).filePath("b"), 7),
                     c = train(QDir(tmp.path()).filePath("c"), 8);
    QVERIFY(!a.isEmpty());
    QVERIFY2(a == b, "two runs with seed 7 wrote different weights");
    QVERIFY(a != c);
}

}  // namespace

class TestDemo : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        nnscope::configureThreads(0);
    }

    void committedFolderLoads() {
        auto model = nnscope::Model::load(kDemoDir);
        const auto& c = model->config();
        QCOMPARE(QString::fromStdString(model->family().modelType), QString("llama"));
        QCOMPARE(c.architectures, std::vector<std::string>{"LlamaForCausalLM"});
        QVERIFY(c.numLayers >= 2 && c.numLayers <= 4);
        QCOMPARE(c.rotaryDim(), c.headDim);
        QVERIFY(model->headTied());  // lm_head is embed_tokens (tie_word_embeddings)
        QVERIFY(!model->weights().contains("lm_head.weight"));
        // Well under 5 MB.
        QVERIFY(QFileInfo(QString::fromStdString(kDemoDir + "/model.safetensors")).size() < 2 * 1024 * 1024);
        // The word-level tokenizer: the code's vocabulary, BOS first, typed text without unknown words.
        const nnscope::Tokenizer* tok = model->tokenizer();
        QVERIFY2(tok, model->tokenizerError().c_str());
        const auto& vocab = nnscope::demoVocabulary();
        QCOMPARE(tok->vocabSize(), static_cast<int64_t>(vocab.size()));
        QCOMPARE(c.vocabSize, static_cast<int64_t>(vocab.size()));
        for (size_t i = 0; i < vocab.size(); ++i) QCOMPARE(tok->tokenString(static_cast<int64_t>(i)), vocab[i]);
        auto ids = tok->encode("The cat sat on the mat. The cat");
        QCOMPARE(ids.size(), size_t(10));
        QCOMPARE(ids.front(), int64_t(1));
        QVERIFY(std::find(ids.begin(), ids.end(), int64_t(0)) == ids.end());  // no <unk>
        QCOMPARE(tok->decode(ids, true), std::string("the cat sat on the mat. the cat"));
        QCOMPARE(tok->encode("the zyzzyva")[2], int64_t(0));  // unknown words become <unk>
    }

    /// Computed here from trace's raw values, independently of evaluateInduction. Each held-out row is BOS, p random
    /// words, a run of L distinct words, the same run, random words (L and p drawn per row, so no head can find the
    /// answer at a fixed distance; the filler never repeats a run word).
    void inductionCircuit() {
        auto model = nnscope::Model::load(kDemoDir);
        const auto& c = model->config();
        const int64_t V = c.vocabSize, maxL = 16, T = 1 + 2 * maxL + 8, S = 48;
        std::mt19937_64 rng(987654321);  // held out: the trainer's data comes from its own seed and generator
        std::vector<int64_t> words;
        for (int64_t id = nnscope::kDemoFirstWordId; id < V; ++id) words.push_back(id);
        std::vector<std::vector<int64_t>> rows;
        std::vector<int64_t> firsts, lengths;
        for (int s = 0; s < S; ++s) {
            std::shuffle(words.begin(), words.end(), rng);  // the run: words[0, L); filler: words[maxL, ...)
            const int64_t L = 8 + static_cast<int64_t>(rng() % (maxL - 8 + 1));
            const int64_t p = static_cast<int64_t>(rng() % static_cast<uint64_t>(T - 1 - 2 * L + 1));
            std::vector<int64_t> row = {1};
            auto filler = [&] { return words[static_cast<size_t>(maxL + static_cast<int64_t>(rng() % (V - 4 - maxL)))]; };
            for (int64_t i = 0; i < p; ++i) row.push_back(filler());
            row.insert(row.end(), words.begin(), words.begin() + L);
            row.insert(row.end(), words.begin(), words.begin() + L);
            while (static_cast<int64_t>(row.size()) < T) row.push_back(filler());
            rows.push_back(row);
            firsts.push_back(1 + p);
            lengths.push_back(L);
        }
        auto batch = nnscope::batchFromIds(rows);
        nnscope::TraceOptions opts;
        opts.save.push_back({nnscope::Value::Logits, -1});
        for (int l = 0; l < c.numLayers; ++l) opts.save.push_back({nnscope::Value::AttentionProbabilities, l});
        auto result = nnscope::trace(*model, batch, opts);
        auto logits = result.value({nnscope::Value::Logits, -1});
        QCOMPARE(logits.sizes().vec(), (std::vector<int64_t>{S, T, V}));
        // Cross-entropy of each target q, predicted at q - 1: run words 2..L of each occurrence (the first is unpredictable).
        auto logp = torch::log_softmax(logits.to(torch::kFloat64), -1);
        double first = 0, second = 0;
        int64_t n = 0;
        for (int64_t s = 0; s < S; ++s)
            for (int64_t j = 1; j < lengths[s]; ++j) {
                const int64_t q1 = firsts[s] + j, q2 = firsts[s] + lengths[s] + j;
                first -= logp[s][q1 - 1][rows[s][q1]].item<double>();
                second -= logp[s][q2 - 1][rows[s][q2]].item<double>();
                ++n;
            }
        first /= n;
        second /= n;
        qInfo("loss on the first occurrence %.3f, on the second %.3f", first, second);
        QVERIFY2(second < first / 4, qPrintable(QString("second-half loss %1 is not below a quarter of %2").arg(second).arg(first)));

        // Induction score: mean attention from the second occurrence of run[j] to the token after its first occurrence.
        std::vector<double> best;
        for (int l = 0; l < c.numLayers; ++l) {
            auto p = result.value({nnscope::Value::AttentionProbabilities, l}).to(torch::kFloat64);  // [S, H, T, T]
            QCOMPARE(p.sizes().vec(), (std::vector<int64_t>{S, c.numHeads, T, T}));
            std::vector<double> score(static_cast<size_t>(c.numHeads), 0.0);
            int64_t pairs = 0;
            for (int64_t s = 0; s < S; ++s)
                for (int64_t j = 0; j < lengths[s]; ++j, ++pairs)
                    for (int64_t h = 0; h < c.numHeads; ++h)
                        score[static_cast<size_t>(h)] += p[s][h][firsts[s] + lengths[s] + j][firsts[s] + j + 1].item<double>();
            QString line = QString("layer %1 induction scores:").arg(l);
            for (double& v : score) {
                v /= static_cast<double>(pairs);
                line += QString(" %1").arg(v, 0, 'f', 3);
            }
            qInfo("%s", qPrintable(line));
            best.push_back(*std::max_element(score.begin(), score.end()));
        }
        QVERIFY2(best.back() > 0.5, "no head of the last layer has an induction score above 0.5");
        QVERIFY2(best.front() < 0.5, "a head of layer 0 has an induction score of 0.5 or more");

        // The library's measure (other held-out rows) agrees.
        nnscope::InductionEvalOptions eo;
        eo.firstId = nnscope::kDemoFirstWordId;
        auto e = nnscope::evaluateInduction(*model, eo);
        QVERIFY(e.secondHalfLoss < e.firstHalfLoss / 4);
        QVERIFY(*std::max_element(e.scores.back().begin(), e.scores.back().end()) > 0.5);
        QVERIFY(*std::max_element(e.scores.front().begin(), e.scores.front().end()) < 0.5);
    }

    void shortRunIsReproducible() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        struct Run {
            QByteArray weights;
            int reports = 0;
            bool finite = true;
            double finalLoss = 0;
        };
        auto run = [&](const QString& name, uint64_t seed) {
            Run out;
            nnscope::DemoTrainOptions o;
            o.outDir = QDir(tmp.path()).filePath(name).toStdString();
            o.seed = seed;
            o.steps = 5;
            o.threads = 1;
            o.evaluate = false;
            o.writeReadme = false;
            o.reportEvery = 2;
            o.progress = [&](const nnscope::DemoTrainProgress& p) {
                ++out.reports;
                out.finite = out.finite && std::isfinite(p.loss) && std::isfinite(p.copyLoss);
            };
            out.finalLoss = nnscope::trainDemoModel(o).finalLoss;
            out.weights = readAll(QDir(tmp.path()).filePath(name + "/model.safetensors"));
            return out;
        };
        const Run a = run("a", 42), b = run("b", 42), c = run("c", 43);
        QCOMPARE(a.reports, 3);  // steps 2, 4 and the last
        QVERIFY(a.finite);
        QVERIFY(a.finalLoss > 0);
        QVERIFY(!a.weights.isEmpty());
        QVERIFY2(a.weights == b.weights, "two 5-step runs with seed 42 wrote different model.safetensors");
        QVERIFY2(a.weights != c.weights, "seeds 42 and 43 wrote the same weights");
        // No temporary folder is left beside the output, and the written folder loads like any checkpoint.
        QCOMPARE(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 (QStringList{"a", "b", "c"}));
        auto model = nnscope::Model::load(QDir(tmp.path()).filePath("a").toStdString());
        QVERIFY(model->tokenizer());
        // A second run into an existing demo folder replaces it.
        QVERIFY(run("a", 43).weights == c.weights);
        QCOMPARE(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 (QStringList{"a", "b", "c"}));
    }

    // The demo's sparse autoencoder ships beside it (trained by `nnscope train-demo-sae`): it loads as a SAELens folder,
    // reads layers.0.layer_output of the demo, reconstructs the demo sentence (explained variance above 0.8 with 8 active
    // features a position), and a short training run is reproducible for a seed.
    void demoDictionary() {
        const std::string dir = std::string(NNSCOPE_DEMO_MODEL_DIR) + "/" + nnscope::kDemoDictionaryFolder;
        auto model = nnscope::Model::load(NNSCOPE_DEMO_MODEL_DIR);
        const auto attached = nnscope::AttachedDictionary::attach(*model, nnscope::loadDictionary(dir));
        QCOMPARE(nnscope::valuePath(model->family(), attached.site), std::string("layers.0.layer_output"));
        nnscope::TraceOptions o;
        o.save = attached.neededValues();
        const auto result = nnscope::trace(*model, nnscope::encodeBatch(*model, {"tom and lily went to the park with a red ball. tom and lily went to the park with"}), o);
        const nnscope::FeatureRun run = nnscope::runDictionary(*model, result, attached, 0);
        QVERIFY2(run.explainedVariance > 0.8, qPrintable(QString::number(run.explainedVariance)));
        QCOMPARE(run.meanL0, 8.0);

        QTemporaryDir tmp;
        checkReproducible(tmp, [](const QString& dir, uint64_t seed) {
            nnscope::DemoDictionaryOptions d;
            d.modelDir = NNSCOPE_DEMO_MODEL_DIR;
            d.outDir = dir.toStdString();
            d.steps = 10;
            d.rows = 4;
            d.seed = seed;
            nnscope::trainDemoDictionary(d);
            return readAll(dir + "/sae_weights.safetensors");
        });
        QCOMPARE(nnscope::loadDictionary(QDir(tmp.path()).filePath("a").toStdString())->dSae, int64_t(256));
    }

    // The demo's transcoders ship beside it (trained by `nnscope train-demo-transcoders`): a circuit-tracer set of one
    // ReLU transcoder per block, features reading mlp_input and reconstructing mlp_output. On the demo sentence (not
    // in their training data) each reconstructs its block's MLP output (explained variance above 0.9) with few of its
    // 256 features active; a short training run is reproducible for a seed.
    void demoTranscoders() {
        const std::string dir = std::string(NNSCOPE_DEMO_MODEL_DIR) + "/" + nnscope::kDemoTranscoderFolder;
        auto model = nnscope::Model::load(NNSCOPE_DEMO_MODEL_DIR);
        const auto layers = nnscope::loadTranscoderSet(dir);
        QCOMPARE(layers.size(), size_t(2));
        const double maxL0[] = {30, 80};  // block 1's MLP is nearly linear in its input: its features are denser
        for (int l = 0; l < 2; ++l) {
            const auto attached = nnscope::AttachedDictionary::attach(*model, layers[l]);
            QCOMPARE(nnscope::valuePath(model->family(), attached.site), "layers." + std::to_string(l) + ".mlp_input");
            nnscope::TraceOptions o;
            o.save = attached.neededValues();
            const auto result = nnscope::trace(
                *model, nnscope::encodeBatch(*model, {"tom and lily went to the park with a red ball. tom and lily went to the park with"}), o);
            const nnscope::FeatureRun run = nnscope::runDictionary(*model, result, attached, 0);
            QVERIFY2(run.explainedVariance > 0.9, qPrintable(QString("layer %1: %2").arg(l).arg(run.explainedVariance)));
            QVERIFY2(run.meanL0 > 1 && run.meanL0 < maxL0[l], qPrintable(QString("layer %1: L0 %2").arg(l).arg(run.meanL0)));
        }

        QTemporaryDir tmp;
        checkReproducible(tmp, [](const QString& dir, uint64_t seed) {
            nnscope::DemoTranscoderOptions d;
            d.modelDir = NNSCOPE_DEMO_MODEL_DIR;
            d.outDir = dir.toStdString();
            d.steps = 10;
            d.rows = 4;
            d.seed = seed;
            nnscope::trainDemoTranscoders(d);
            return readAll(dir + "/layer_1.safetensors");
        });
        QCOMPARE(nnscope::loadTranscoderSet(QDir(tmp.path()).filePath("a").toStdString()).at(1)->dSae, int64_t(256));

        // another checkpoint is refused, nothing written: the training data are the demo vocabulary's ids (a model of
        // the same width trained on them silently, its files labelled the demo's)
        const std::string other = nnscope::test::sharedModels() + "/stories260K-llama";
        const QString out = tmp.filePath("other");
        for (int which = 0; which < 2; ++which) {
            try {
                if (which == 0) {
                    nnscope::DemoTranscoderOptions d;
                    d.modelDir = other;
                    d.outDir = out.toStdString();
                    d.steps = 1;
                    nnscope::trainDemoTranscoders(d);
                } else {
                    nnscope::DemoDictionaryOptions d;
                    d.modelDir = other;
                    d.outDir = out.toStdString();
                    d.steps = 1;
                    nnscope::trainDemoDictionary(d);
                }
                QFAIL("a model other than the demo was trained on");
            } catch (const nnscope::Error& e) {
                const std::string m = e.what();
                QVERIFY2(m.find(other + ": not the demo model (its tokenizer has 512 tokens, the demo's 400)") != std::string::npos, e.what());
            }
            QVERIFY(!QFileInfo::exists(out));
        }
    }

    // `nnscope circuit` on the demo with its transcoders: the repeated sentence's next word "a" (p > 0.95) is explained by
    // the induction route — the largest edge into its logit comes from the token "a" at its first occurrence (position
    // 9), through layer 1's frozen attention — and the graph file reads back with the summary's counts; --no-prune keeps
    // every node; --estimate stops after the estimate; bad thresholds and a one-token prompt are refused.
    void demoCircuitCommand() {
        QTemporaryDir tmp;
        const QString transcoders = QString(NNSCOPE_DEMO_MODEL_DIR) + "/" + nnscope::kDemoTranscoderFolder;
        const QString prompt = "tom and lily went to the park with a red ball . tom and lily went to the park with";
        auto run = [&](const QStringList& extra) {
            QProcess p;
            p.start(NNSCOPE_BINARY, QStringList{"circuit", "--model", NNSCOPE_DEMO_MODEL_DIR, "--transcoders", transcoders} + extra);
            p.waitForFinished(120000);
            return std::make_tuple(p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError());
        };
        const QString pruned = tmp.filePath("pruned.json"), full = tmp.filePath("full.json");
        auto [code, out, err] = run({"--prompt", prompt, "--out", pruned, "--json"});
        QVERIFY2(code == 0, err.constData());
        const auto j = nlohmann::json::parse(out.toStdString());
        QCOMPARE(j["logits"][0]["token"].get<std::string>(), std::string("a"));
        QVERIFY(j["logits"][0]["probability"].get<double>() > 0.95);
        QCOMPARE(j["tokens"].size(), size_t(21));
        const nnscope::AttributionGraph g = nnscope::readGraphJson(pruned.toStdString());
        QCOMPARE(int64_t(g.nodes.size()), j["nodes"]["feature"].get<int64_t>() + j["nodes"]["error"].get<int64_t>() +
                                              j["nodes"]["token"].get<int64_t>() + j["nodes"]["logit"].get<int64_t>());
        QCOMPARE(g.edgeCount(), j["edges"].get<int64_t>());
        const int64_t logit = g.findNode("3_5_20");  // layer num_layers + 1, "a" (id 5), the last position
        QVERIFY(logit >= 0 && g.nodes[logit].targetLogit);
        const int64_t strongest = g.strongestInput(logit);
        QVERIFY(strongest >= 0);
        QCOMPARE(g.nodes[g.source[strongest]].nodeId(), std::string("E_5_9"));
        QVERIFY(g.weight[strongest] > 5);  // logit units
        // the text output names each logit's largest direct edges, the strongest first: the finding without the file
        std::tie(code, out, err) = run({"--prompt", prompt, "--out", tmp.filePath("text.json")});
        QVERIFY2(code == 0, err.constData());
        const QStringList lines = QString::fromUtf8(out).split('\n');
        const qsizetype logitLine = lines.indexOf(QRegularExpression(R"(^  logit "a" p=0\.9\d+ \(target\); its largest direct edges:$)"));
        QVERIFY2(logitLine >= 0, out.constData());
        const QString first = QString::number(g.weight[strongest], 'g', 4);
        QVERIFY2(lines.value(logitLine + 1).contains("+" + first + "  from token at 9 \"a\" (E_5_9)"), qPrintable(lines.value(logitLine + 1)));
        QVERIFY2(lines.value(logitLine + 5).contains("  from "), out.constData());  // five edges

        std::tie(code, out, err) = run({"--prompt", prompt, "--out", full, "--no-prune", "--json"});
        QVERIFY2(code == 0, err.constData());
        const auto u = nlohmann::json::parse(out.toStdString());
        const nnscope::AttributionGraph whole = nnscope::readGraphJson(full.toStdString());
        QCOMPARE(int64_t(whole.nodes.size()), u["unpruned"]["nodes"].get<int64_t>());
        QCOMPARE(whole.edgeCount(), u["unpruned"]["edges"].get<int64_t>());
        QCOMPARE(u["nodes"]["feature"].get<int64_t>(), u["active_features"].get<int64_t>());
        QCOMPARE(u["nodes"]["error"].get<int64_t>(), int64_t(2 * 21));
        QVERIFY(whole.edgeCount() > g.edgeCount());

        std::tie(code, out, err) = run({"--prompt", prompt, "--estimate", "--json"});
        QVERIFY2(code == 0, err.constData());
        const auto e = nlohmann::json::parse(out.toStdString());
        QCOMPARE(e["tokens"].get<int64_t>(), int64_t(21));
        QVERIFY(e["fits"].get<bool>() && e["peak_bytes"].get<int64_t>() > 0);

        for (const char* bad : {"1.5", "-0.1", "abc"}) {
            std::tie(code, out, err) = run({"--prompt", prompt, "--out", tmp.filePath("x.json"), "--node-threshold", bad});
            QCOMPARE(code, 2);
            QVERIFY2(err.contains("node-threshold"), err.constData());
        }
        std::tie(code, out, err) = run({"--prompt", "", "--out", tmp.filePath("y.json")});
        QVERIFY(code != 0);
        QVERIFY2(err.contains("token"), err.constData());
        QVERIFY(!QFile::exists(tmp.filePath("x.json")) && !QFile::exists(tmp.filePath("y.json")));
    }

    void refusesForeignFolder() {
        QTemporaryDir tmp;
        QFile f(QDir(tmp.path()).filePath("notes.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("mine");
        f.close();
        nnscope::DemoTrainOptions o;
        o.outDir = tmp.path().toStdString();
        o.steps = 1;
        o.evaluate = false;
        QString message;
        try {
            nnscope::trainDemoModel(o);
        } catch (const nnscope::Error& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("notes.txt"), qPrintable("expected an error naming notes.txt, got: " + message));
        QCOMPARE(readAll(f.fileName()), QByteArray("mine"));
    }
};

NNSCOPE_TEST_SUITE(TestDemo, "test_demo")
#include "test_demo.moc"
