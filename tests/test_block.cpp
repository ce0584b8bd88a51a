// SPDX-License-Identifier: MIT
// The block description (core/block.h) against the forward pass and everything generated from it, on every fixture
// family and the demo model: the pass taps its values in the table's order, the native values a checkpoint has are
// the table's, "read at" names a module the family has, native spellings resolve to the value read there, the
// printout shows exactly the table's modules and marks each value line, the family page's steps follow the table.
#include "core/block.h"
#include "core/error.h"
#include "core/model.h"
#include "core/support.h"
#include "core/taps.h"
#include "core/trace.h"
#include "manifest.h"
#include "testutil.h"

#include "testsuite.h"

#include <QtTest>

#include <set>

using namespace nnscope;

namespace {

/// Records every tap of a pass, in order.
class RecordingTaps : public Taps {
public:
    void tap(Value v, int layer, torch::Tensor& t) override {
        fired.push_back({v, layer});
        tensors[{v, layer}] = t;
    }
    std::vector<ValueKey> fired;
    std::map<ValueKey, torch::Tensor> tensors;
};

std::string keyText(const Family& f, const ValueKey& k) { return valuePath(f, k); }

std::vector<std::string> allModels() {
    std::vector<std::string> dirs;
    for (const auto& name : test::fixtureNames(test::fixturesDir() + "/models")) dirs.push_back(test::fixture(name));
    dirs.push_back(NNSCOPE_DEMO_MODEL_DIR);
    return dirs;
}

void modelRows() {
    QTest::addColumn<QString>("dir");
    for (const auto& d : allModels()) QTest::newRow(std::filesystem::path(d).filename().string().c_str()) << QString::fromStdString(d);
}

std::shared_ptr<const Model> loadModel(const QString& dir) {
    static std::map<QString, std::shared_ptr<const Model>> cache;
    auto& m = cache[dir];
    if (!m) m = Model::load(dir.toStdString(), test::float32());
    return m;
}

}  // namespace

class TestBlock : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { configureThreads(0); }

    // The forward pass (hand-written, core/model.cpp) taps exactly the table's values, in the table's order: the root's
    // steps before the blocks, every block's steps, the root's steps after.
    void tapsFireInTableOrder_data() { modelRows(); }
    void tapsFireInTableOrder() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        const ModelConfig& c = model->config();
        std::vector<ValueKey> before, block, after;
        bool seenBlock = false;
        for (const BlockStep& step : forwardSteps(f, c)) {
            for (const StepValue& sv : step.values) {
                if (sv.repeat) continue;
                if (step.host != Host::Model) {
                    block.push_back({sv.value, 0});
                    seenBlock = true;
                } else {
                    (seenBlock ? after : before).push_back({sv.value, -1});
                }
            }
        }
        std::vector<ValueKey> expected = before;
        for (int i = 0; i < c.numLayers; ++i)
            for (ValueKey k : block) expected.push_back({k.value, i});
        expected.insert(expected.end(), after.begin(), after.end());

        RecordingTaps taps;
        const auto ids = torch::tensor({{1, 5, 7, 9, 3}}, torch::kInt64).remainder(c.vocabSize);
        model->forward(ids, torch::Tensor(), &taps);
        QStringList got, want;
        for (const auto& k : taps.fired) got << QString::fromStdString(keyText(f, k));
        for (const auto& k : expected) want << QString::fromStdString(keyText(f, k));
        QCOMPARE(got, want);
    }

    // A native value is in the table exactly when the checkpoint has it (Family::hasValue decides availability with a
    // reason; the table is what the pass computes).
    void nativeValuesAreTheTables_data() { modelRows(); }
    void nativeValuesAreTheTables() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        std::set<Value> inTable;
        for (const BlockStep& step : forwardSteps(model->family(), model->config()))
            for (const StepValue& sv : step.values) inTable.insert(sv.value);
        for (int i = 0; i < kNumValues; ++i) {
            const Value v = static_cast<Value>(i);
            const bool has = model->family().hasValue(v, model->config());
            QVERIFY2(has == (inTable.count(v) == 1),
                     qPrintable(QString("%1: hasValue %2, table %3").arg(i).arg(has).arg(inTable.count(v))));
        }
        // every standard value once (besides repeats)
        std::map<Value, int> once;
        for (const BlockStep& step : forwardSteps(model->family(), model->config()))
            for (const StepValue& sv : step.values)
                if (!sv.repeat) ++once[sv.value];
        for (Value v : standardValues()) QCOMPARE(once[v], 1);
    }

    // Every "read at" place names a module the family has, and a tensor read there equals the value: the tapped
    // module input/output is the standard value's tensor.
    void readAtNamesTheFamilysModules_data() { modelRows(); }
    void readAtNamesTheFamilysModules() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        std::set<std::string> names;
        for (const BlockStep& step : forwardSteps(f, model->config()))
            if (step.module) names.insert(f.moduleName(*step.module));
        for (const SupportRow& r : supportTable(f)) {
            QVERIFY2(!r.readAt.empty(), r.name.c_str());
            const std::string prefix = "the child module ";
            if (r.readAt.rfind(prefix, 0) != 0) continue;
            const std::string module = r.readAt.substr(prefix.size(), r.readAt.find("'s ") - prefix.size());
            QVERIFY2(names.count(module), qPrintable(QString::fromStdString(r.name + ": read at '" + r.readAt + "', not a module of the table")));
        }
    }

    // OLMo 2 has no pre-norms: the attention reads the stream itself and the MLP the stream after the attention add,
    // and the support table says so (it printed "the child module 's output" before the table existed).
    void olmo2ReadsTheStreamItself() {
        auto model = Model::load(test::fixture("tiny-olmo2"), test::float32().withTokenizer(false));
        const Family& f = model->family();
        QCOMPARE(QString::fromStdString(f.readAt(Value::AttentionNormOutput)), QString("the child module self_attn's input"));
        QCOMPARE(QString::fromStdString(f.readAt(Value::LayerMid)), QString("the child module mlp's input"));
        QCOMPARE(QString::fromStdString(f.readAt(Value::MlpNormOutput)), QString("the child module mlp's input"));
        QCOMPARE(parseValuePath(*model, "layers.1.mlp.input").value, Value::MlpInput);  // the most specific value read there
        QCOMPARE(parseValuePath(*model, "layers.1.self_attn.input").value, Value::AttentionNormOutput);
        QVERIFY_THROWS_EXCEPTION(Error, parseValuePath(*model, "layers.1.input_layernorm.output"));
    }

    // Every native spelling the table gives resolves to its value, in every module name the family has ("ln_1" as well
    // as "input_layernorm" on GPT-2), and the tensor the pass taps under the value is the tensor read at that place.
    void spellingsResolve_data() { modelRows(); }
    void spellingsResolve() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const auto spellings = valueSpellings(model->family(), model->config());
        QVERIFY(spellings.size() >= 8);
        const int last = static_cast<int>(model->config().numLayers) - 1;
        for (const ValueSpelling& sp : spellings) {
            const std::string path = sp.root ? sp.suffix : "layers." + std::to_string(last) + "." + sp.suffix;
            const ValueKey k = parseValuePath(*model, path);
            QVERIFY2(k.value == sp.value, path.c_str());
            QCOMPARE(k.layer, sp.root ? -1 : last);
        }
        // the native names resolve too, through the family's host names (GPT-2: h.<i>.ln_1.output)
        const Family& f = model->family();
        if (f.modelType == "gpt2") {
            QCOMPARE(parseValuePath(*model, "h.0.ln_1.output").value, Value::AttentionNormOutput);
            QCOMPARE(parseValuePath(*model, "h.0.attn.output").value, Value::AttentionOutput);
            QCOMPARE(parseValuePath(*model, "h.0.mlp.c_proj.input").value, Value::MlpNeurons);
            QCOMPARE(parseValuePath(*model, "ln_f.output").value, Value::FinalNormOutput);
        }
    }

    // The printout's module lines are the table's modules, each once, and each value line is marked with its value.
    void printoutIsTheTables_data() { modelRows(); }
    void printoutIsTheTables() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        std::set<Module> table = {Module::Layers};
        for (const BlockStep& step : forwardSteps(f, model->config()))
            if (step.module) table.insert(*step.module);
        std::multiset<Module> printed;
        std::vector<Value> values;
        for (const PrintoutLine& line : printoutLines(f, model->config())) {
            if (line.module) {
                printed.insert(*line.module);
                QVERIFY2(line.text.find("(" + f.moduleLabel(*line.module) + "): ") != std::string::npos, line.text.c_str());
            }
            if (line.value) {
                values.push_back(*line.value);
                QVERIFY2(line.text.find("(" + std::string(valueInfo(*line.value).name) + ")") != std::string::npos, line.text.c_str());
            }
            QVERIFY(!(line.module && line.value));
        }
        QCOMPARE(std::set<Module>(printed.begin(), printed.end()), table);
        QCOMPARE(printed.size(), table.size());
        QCOMPARE(std::set<Value>(values.begin(), values.end()).size(), standardValues().size());
        QCOMPARE(values.size(), standardValues().size());
    }

    // The family page's block steps mention every block value of the table, in the table's order, and only the
    // modules the family has (no input_layernorm on OLMo 2, c_attn's fused layout on GPT-2).
    void pageStepsFollowTheTable_data() { modelRows(); }
    void pageStepsFollowTheTable() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        std::string text;
        for (const auto& l : blockStepLines(f, model->config())) text += l + "\n";
        size_t at = 0;
        for (const BlockStep& step : forwardSteps(f, model->config())) {
            if (step.host == Host::Model) continue;
            for (const StepValue& sv : step.values) {
                if (sv.repeat || sv.value >= Value::NativeQProjOutput) continue;
                const std::string name = "`" + std::string(valueInfo(sv.value).name) + "`";
                const size_t p = text.find(name, at);
                QVERIFY2(p != std::string::npos, qPrintable(QString::fromStdString(name + " missing or out of order in:\n" + text)));
                at = p;
            }
        }
        if (f.modelType == "olmo2") QVERIFY(text.find("input_layernorm") == std::string::npos);
        if (f.modelType == "gpt2") QVERIFY(text.find("[q | k | v]") != std::string::npos);
    }
};

NNSCOPE_TEST_SUITE(TestBlock, "test_block")
#include "test_block.moc"
