// SPDX-License-Identifier: MIT
// Interventions: edits, steering, skipped blocks and activation patching against transformers' forward hooks
// (tests/fixtures/models/*/golden_float32.safetensors, "edit.*") and the seeds' claims about them.
#include "core/run/edit.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/patching.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <QtTest>

using namespace nnscope;
using namespace torch::indexing;

namespace {

struct Fixture {
    std::shared_ptr<const Model> model;
    std::unique_ptr<SafetensorsFile> golden;
    Batch batch;
};

Fixture load(const std::string& name) {
    Fixture f;
    // float32 whatever the CPU: the goldens are float32 ("auto" would compute a bfloat16 fixture in bfloat16 where the
    // CPU has native bfloat16)
    f.model = Model::load(test::fixture(name), LoadOptions().withDtype(torch::kFloat32));
    f.golden = std::make_unique<SafetensorsFile>(test::fixture(name) + "/golden_float32.safetensors");
    auto ids = f.golden->tensor("single.input_ids");
    std::vector<int64_t> row(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    f.batch = batchFromIds({row});
    return f;
}

torch::Tensor logitsWith(const Fixture& f, std::shared_ptr<EditList> edits, std::vector<ValueKey> save = {}) {
    TraceOptions o;
    o.save = std::move(save);
    o.save.push_back({Value::Logits, -1});
    o.intervention = std::move(edits);
    return trace(*f.model, f.batch, o).value({Value::Logits, -1});
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

class TestInterventions : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { configureThreads(0); }

    void editsEqualTransformersHooks_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("golden");
        QTest::addColumn<QStringList>("edits");
        for (const char* f : {"tiny-llama", "tiny-apertus", "tiny-persimmon"}) {
            QTest::newRow((std::string(f) + "/q_head").c_str()) << f << "q_head" << QStringList{"layers.1.self_attn.attention_queries[:, 1] *= 2"};
            QTest::newRow((std::string(f) + "/neuron").c_str()) << f << "neuron" << QStringList{"layers.0.mlp.mlp_neurons[:, :, 5] = 0"};
            QTest::newRow((std::string(f) + "/skip").c_str()) << f << "skip" << QStringList{"skip 1"};
            QTest::newRow((std::string(f) + "/steer").c_str()) << f << "steer" << QStringList{"steer 0 4 -1"};
        }
        QTest::newRow("tiny-apertus/qproj_head") << "tiny-apertus" << "qproj_head"
                                                 << QStringList{"layers.1.self_attn.q_proj.output[:, :, 16:32] *= 2"};
        QTest::newRow("tiny-persimmon/qkv_q_head") << "tiny-persimmon" << "qkv_q_head"
                                                   << QStringList{"layers.1.self_attn.query_key_value.output[:, :, 48:64] *= 2",
                                                                  "layers.1.self_attn.query_key_value.output[:, :, 48:64] += 1"};
    }
    void editsEqualTransformersHooks() {
        QFETCH(QString, fixture);
        QFETCH(QString, golden);
        QFETCH(QStringList, edits);
        const Fixture f = load(fixture.toStdString());
        auto list = std::make_shared<EditList>();
        for (const auto& e : edits) {
            if (e == "skip 1") list->skipLayer(1);
            else if (e == "steer 0 4 -1") list->steer(0, f.golden->tensor("edit.steer.vector"), 4.0, {-1});
            else list->add(parseEdit(*f.model, e.toStdString()));
        }
        const auto got = logitsWith(f, list);
        const auto want = f.golden->tensor("edit." + golden.toStdString() + ".logits");
        NNSCOPE_COMPARE_TENSORS(got, want, 1e-4, 1e-5);
        // and the edit really moved something (except the two the norms undo)
        const auto clean = f.golden->tensor("single.logits");
        if (golden != "qproj_head" && golden != "qkv_q_head") QVERIFY(maxDiff(got, clean) > 1e-3);
    }

    void normsUndoEditsBeforeThem() {
        // Apertus: scaling one head's slice of q_proj.output is renormalised away by q_norm, while scaling the same
        // head of attention_queries moves the logits.
        const Fixture a = load("tiny-apertus");
        const auto clean = logitsWith(a, nullptr);
        auto viaProj = std::make_shared<EditList>();
        viaProj->add(parseEdit(*a.model, "layers.1.self_attn.q_proj.output[:, :, 16:32] *= 2"));
        auto viaQueries = std::make_shared<EditList>();
        viaQueries->add(parseEdit(*a.model, "layers.1.self_attn.attention_queries[:, 1] *= 2"));
        const double dProj = maxDiff(logitsWith(a, viaProj), clean), dQueries = maxDiff(logitsWith(a, viaQueries), clean);
        QVERIFY2(dProj < 1e-4, std::to_string(dProj).c_str());
        QVERIFY2(dQueries > 1e-2, std::to_string(dQueries).c_str());
        // Persimmon: an affine edit of the query slice of query_key_value is re-centred and rescaled by q_layernorm.
        const Fixture p = load("tiny-persimmon");
        auto viaQkv = std::make_shared<EditList>();
        viaQkv->add(parseEdit(*p.model, "layers.1.self_attn.query_key_value.output[:, :, 48:64] *= 3"));
        viaQkv->add(parseEdit(*p.model, "layers.1.self_attn.query_key_value.output[:, :, 48:64] += 0.5"));
        const double dQkv = maxDiff(logitsWith(p, viaQkv), logitsWith(p, nullptr));
        QVERIFY2(dQkv < 1e-4, std::to_string(dQkv).c_str());
    }

    void anEditIsSeenByEveryLaterValue() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.0.layer_output[0, -1] += 3"));
        TraceOptions o;
        o.save = {{Value::LayerOutput, 0}, {Value::LayerInput, 1}, {Value::AttentionNormOutput, 1}};
        o.intervention = edits;
        const auto edited = trace(*f.model, f.batch, o);
        o.intervention = nullptr;
        const auto plain = trace(*f.model, f.batch, o);
        auto expect = plain.value({Value::LayerOutput, 0}).clone();
        expect.index({0, -1}) += 3;
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::LayerOutput, 0}), expect, 0, 0);
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::LayerInput, 1}), expect, 0, 0);  // the next block reads the edit
        QVERIFY(maxDiff(edited.value({Value::AttentionNormOutput, 1}), plain.value({Value::AttentionNormOutput, 1})) > 1e-3);
        // positions before the edited one are untouched downstream (causality)
        NNSCOPE_COMPARE_TENSORS(edited.value({Value::AttentionNormOutput, 1}).index({0, Slice(0, -1)}),
                                plain.value({Value::AttentionNormOutput, 1}).index({0, Slice(0, -1)}), 0, 0);
    }

    void meanAblationAndHeadZeroing() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.1.self_attn.attention_head_outputs[:, :, 2] = 0"));
        edits->add(parseEdit(*f.model, "layers.0.mlp.mlp_neurons[:, :, 7] = mean"));
        TraceOptions o;
        o.save = {{Value::AttentionHeadOutputs, 1}, {Value::AttentionPremix, 1}, {Value::MlpNeurons, 0}};
        o.intervention = edits;
        const auto r = trace(*f.model, f.batch, o);
        QCOMPARE(r.value({Value::AttentionHeadOutputs, 1}).index({Slice(), Slice(), 2}).abs().max().item<float>(), 0.0f);
        QCOMPARE(r.value({Value::AttentionPremix, 1}).index({Slice(), Slice(), 2}).abs().max().item<float>(), 0.0f);
        auto n7 = r.value({Value::MlpNeurons, 0}).index({0, Slice(), 7});
        QVERIFY((n7 - n7[0]).abs().max().item<float>() == 0.0f);  // every position holds the same (mean) value
    }

    void readOnlyAndBadEditsAreRefused_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expect");
        QTest::newRow("next_token_probs") << "next_token_probs[:, 3] = 0" << "read-only";
        QTest::newRow("input_size") << "input_size = 3" << "read-only";
        QTest::newRow("no operator") << "layers.0.layer_output[:, 0]" << "no operator";
        QTest::newRow("unknown path") << "layers.0.bogus *= 2" << "unknown value path";
        QTest::newRow("bad index") << "layers.0.layer_output[:, x] = 0" << "not an integer";
        QTest::newRow("bad operand") << "layers.0.layer_output *= banana" << "neither a number";
        QTest::newRow("missing file") << "layers.0.layer_output += @/nonexistent/v.npy" << "/nonexistent/v.npy";
    }
    void readOnlyAndBadEditsAreRefused() {
        QFETCH(QString, edit);
        QFETCH(QString, expect);
        const Fixture f = load("tiny-llama");
        try {
            parseEdit(*f.model, edit.toStdString());
            QFAIL("a bad edit was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(expect), e.what());
        }
    }

    void indexThatDoesNotFitIsAnError() {
        const Fixture f = load("tiny-llama");
        auto edits = std::make_shared<EditList>();
        edits->add(parseEdit(*f.model, "layers.0.self_attn.attention_queries[:, 9] *= 2"));  // only 4 heads
        try {
            logitsWith(f, edits);
            QFAIL("an out-of-range head was edited");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("does not fit"), e.what());
        }
    }

    void patchingIntoItselfChangesNothing() {
        const Fixture f = load("tiny-llama");
        const auto& ids = f.batch.ids[0];
        PatchingOptions o;
        o.metric.kind = PatchMetric::Kind::TargetProbability;
        o.metric.answer = 5;
        for (PatchSite site : {PatchSite::LayerOutput, PatchSite::AttentionOutput, PatchSite::HeadOutput}) {
            o.site = site;
            const auto r = activationPatching(*f.model, ids, ids, o);
            QCOMPARE(r.clean, r.corrupted);
            for (const auto& row : r.grid)
                for (double v : row) QCOMPARE(v, r.clean);
        }
    }

    void patchingTheLastBlockEverywhereRecoversClean() {
        const Fixture f = load("tiny-llama");
        const auto& m = *f.model;
        const auto clean = encodeBatch(m, {"Tom and Lily went to the park."}).ids[0];
        const auto corrupt = encodeBatch(m, {"Lily and Lily went to the park."}).ids[0];
        QCOMPARE(clean.size(), corrupt.size());
        const int last = static_cast<int>(m.config().numLayers) - 1;
        TraceOptions save;
        save.save = {{Value::LayerOutput, last}, {Value::Logits, -1}};
        const auto cleanRun = trace(m, batchFromIds({clean}), save);
        auto edits = std::make_shared<EditList>();
        for (int64_t p = 0; p < static_cast<int64_t>(clean.size()); ++p) {
            IndexItem all, pos;
            pos.kind = IndexItem::Integer;
            pos.start = p;
            edits->patch({Value::LayerOutput, last}, {all, pos}, cleanRun.value({Value::LayerOutput, last}).index({Slice(), p}));
        }
        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        o.intervention = edits;
        const auto patched = trace(m, batchFromIds({corrupt}), o);
        NNSCOPE_COMPARE_TENSORS(patched.value({Value::Logits, -1}), cleanRun.value({Value::Logits, -1}), 0, 0);
        // and the grid's last row at the last position equals the clean metric
        PatchingOptions po;
        po.metric.kind = PatchMetric::Kind::LogitDifference;
        po.metric.answer = 10;
        po.metric.wrong = 11;
        const auto r = activationPatching(m, clean, corrupt, po);
        QVERIFY(std::abs(r.grid[static_cast<size_t>(last)].back() - r.clean) < 1e-5);
        QVERIFY(std::abs(r.clean - r.corrupted) > 1e-4);
    }

    void commandLineEditsAndPatch() {
        QTemporaryDir tmp;
        const QString model = QString::fromStdString(test::fixture("tiny-llama"));
        const QString out = tmp.filePath("edited.safetensors");
        QProcess p;
        // --dtype float32: the goldens are float32 (auto computes the bfloat16 fixture in bfloat16 where the CPU has it)
        p.start(NNSCOPE_BINARY, {"trace", "--model", model, "--prompt", "Tom and Lily went to the park.", "--save", "logits",
                                 "--dtype", "float32", "--out", out, "--edit", "layers.1.self_attn.attention_queries[:, 1] *= 2"});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        SafetensorsFile file(out.toStdString());
        const Fixture f = load("tiny-llama");
        NNSCOPE_COMPARE_TENSORS(file.tensor("logits"), f.golden->tensor("edit.q_head.logits"), 1e-4, 1e-5);
        QVERIFY(file.metadata().at("edits").find("attention_queries") != std::string::npos);
        QProcess q;
        q.start(NNSCOPE_BINARY, {"patch", "--model", model, "--clean", "Tom and Lily went to the park.", "--corrupted",
                                 "Lily and Lily went to the park.", "--answer", "#10", "--wrong", "#11", "--json"});
        QVERIFY(q.waitForFinished(60000));
        QVERIFY2(q.exitCode() == 0, q.readAllStandardError().constData());
        const auto j = nlohmann::json::parse(q.readAllStandardOutput().toStdString());
        QCOMPARE(j["grid"].size(), size_t(f.model->config().numLayers));
        QProcess bad;
        bad.start(NNSCOPE_BINARY, {"trace", "--model", model, "--prompt", "x", "--edit", "next_token_probs = 0"});
        QVERIFY(bad.waitForFinished(60000));
        QVERIFY(bad.exitCode() != 0);
        QVERIFY(QString(bad.readAllStandardError()).contains("read-only"));
    }
};

NNSCOPE_TEST_SUITE(TestInterventions, "test_interventions")
#include "test_interventions.moc"
