// SPDX-License-Identifier: MIT
// The block description (core/model/block.h) against the forward pass and everything generated from it, on every fixture
// family and the demo model: the pass taps its values in the table's order, the native values a checkpoint has are
// the table's, "read at" names a module the family has, native spellings resolve to the value read there, the
// printout shows exactly the table's modules and marks each value line, the family page's steps follow the table.
#include "core/io/safetensors.h"
#include "core/model/block.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/pages/support.h"
#include "core/model/taps.h"
#include "core/run/edit.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "core/model/weights.h"
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

/// Every value `model` taps on a six-token prompt (ids 1 5 9 3 7 2).
std::map<ValueKey, torch::Tensor> tapsOfSixTokens(const Model& model) {
    RecordingTaps taps;
    c10::InferenceMode guard;
    model.forward(torch::tensor({{1, 5, 9, 3, 7, 2}}, torch::kInt64), torch::Tensor(), &taps);
    return taps.tensors;
}

/// A norm's input x as its formula reads it, in float64: x - mean(x) for a LayerNorm, x for an RMSNorm; with
/// (its square's mean over the last axis + eps)^-1/2, the norm's scale (keepdim: [..., 1]).
std::pair<torch::Tensor, torch::Tensor> normTerms64(const torch::Tensor& x, const Family& f, double eps, bool keepdim) {
    torch::Tensor h = x.to(torch::kFloat64);
    if (f.norm == NormKind::LayerNorm) h = h - h.mean(-1, true);
    return {h, torch::rsqrt(h.pow(2).mean(-1, keepdim) + eps)};
}

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

    // The forward pass (hand-written, core/model/model.cpp) taps exactly the table's values, in the table's order: the root's
    // steps before the blocks, every block's steps, the root's steps after.
    void tapsFireInTableOrder_data() { modelRows(); }
    void tapsFireInTableOrder() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        const ModelConfig& c = model->config();
        std::vector<ValueKey> before, after;
        bool seenBlock = false;
        for (const BlockStep& step : forwardSteps(f, c)) {
            for (const StepValue& sv : step.values) {
                if (sv.repeat) continue;
                if (step.host != Host::Model) seenBlock = true;
                else (seenBlock ? after : before).push_back({sv.value, -1});
            }
        }
        // each block's own steps (a mixture of experts' blocks differ: experts on some, a dense MLP on the others)
        std::vector<ValueKey> expected = before;
        for (int i = 0; i < c.numLayers; ++i)
            for (const BlockStep& step : forwardSteps(f, c, i))
                for (const StepValue& sv : step.values)
                    if (!sv.repeat && step.host != Host::Model) expected.push_back({sv.value, i});
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
        // (a mixture of experts in every block has no dense MLP interior: mlp_activation and mlp_neurons are absent)
        for (Value v : standardValues()) QCOMPARE(once[v], !model->family().experts || model->hasValue(v) ? 1 : 0);
        for (Value v : mixtureValues()) QCOMPARE(once[v], model->hasValue(v) ? 1 : 0);
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
            if (f.experts && !model->hasValue(r.value)) continue;  // a dense MLP's value where every block has experts
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

    // The module table is the one list of names: every family's weight schema (its tensor names derived from the table)
    // is exactly its fixture's tensor set, nothing stored unread and nothing read missing.
    void schemaEqualsTheFixturesTensors_data() { modelRows(); }
    void schemaEqualsTheFixturesTensors() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        std::set<std::string> stored;
        for (const auto& n : model->weights().names())
            if (!model->family().skipsTensor(n)) stored.insert(n);  // Gemma 3's vision tower: in the file, never read
        std::set<std::string> schema;
        for (const WeightSpec& spec : weightSchema(model->family(), model->config())) {
            QVERIFY2(!spec.name.empty(), "a schema entry without a name");
            if (spec.key.module == Module::ActFn && !stored.count(spec.name)) continue;  // xIELU's optional buffers
            if (!spec.parts.empty()) {  // stored one tensor per expert: the parts are the file's names
                schema.insert(spec.parts.begin(), spec.parts.end());
                continue;
            }
            schema.insert(spec.name);
        }
        if (model->headTied()) stored.erase(model->family().tensorName({Module::LmHead}));  // transformers ties it whatever the file holds
        for (const auto& n : model->unusedTensors()) QVERIFY2(false, qPrintable(QString::fromStdString("stored, never read: " + n)));
        QCOMPARE(stored, schema);
    }

    // The experts are read per expert, never stacked into a copy: each stored part is the mapped tensor itself (the same
    // memory), each expert of a fused tensor a view of it; a missing or misshapen part is named.
    void expertWeightsAreViewsOfTheFile() {
        std::map<std::string, torch::Tensor> tensors;
        const torch::Tensor e0 = torch::randn({3, 4}), e1 = torch::randn({3, 4});
        tensors["model.layers.0.mlp.experts.0.gate_proj.weight"] = e0;
        tensors["model.layers.0.mlp.experts.1.gate_proj.weight"] = e1;
        tensors["model.layers.0.mlp.experts.0.up_proj.weight"] = torch::randn({4, 3});  // the wrong way round
        tensors["model.layers.0.mlp.experts.gate_up_proj"] = torch::randn({2, 4, 6});   // gpt-oss's [experts, in, out]
        WeightStore store("(experts)", tensors);
        WeightSpec spec{{Module::ExpertGateProj}, 0, "model.layers.0.mlp.experts.gate_proj", {2, 3, 4}};
        spec.perExpert = true;
        spec.parts = {"model.layers.0.mlp.experts.0.gate_proj.weight", "model.layers.0.mlp.experts.1.gate_proj.weight"};
        ExpertWeights w = readExpertWeights(store, spec);
        QCOMPARE(w.weight.size(), size_t(2));
        QCOMPARE(w.weight[0].data_ptr(), store.get(spec.parts[0]).data_ptr());  // no copy
        QVERIFY(torch::equal(w.weight[1], e1));
        QVERIFY_THROWS_EXCEPTION(Error, readWeight(store, spec));  // per-expert specs never load as one tensor
        // a fused transposed tensor: expert e is gate_up_proj[e].t(), a view
        WeightSpec fused{{Module::ExpertGateProj}, 0, "model.layers.0.mlp.experts.gate_up_proj", {2, 6, 4}};
        fused.perExpert = true;
        fused.fused = fused.name;
        fused.fusedShape = {2, 4, 6};
        fused.fusedTransposed = true;
        w = readExpertWeights(store, fused);
        const torch::Tensor whole = store.get(fused.name);
        QVERIFY(torch::equal(w.weight[1], whole[1].t()));
        QCOMPARE(w.weight[1].data_ptr(), whole[1].data_ptr());
        spec.parts[1] = "model.layers.0.mlp.experts.1.up_proj.weight";  // not stored
        try {
            readExpertWeights(store, spec);
            QFAIL("a missing expert was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("experts.1.up_proj") != std::string::npos, e.what());
        }
        spec.parts[1] = "model.layers.0.mlp.experts.0.up_proj.weight";  // stored [4, 3], a part must be [3, 4]
        try {
            readExpertWeights(store, spec);
            QFAIL("a part of the wrong shape was read");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("[4, 3]") != std::string::npos, e.what());
        }
    }

    // MXFP4 dequantization against values written out by hand: byte 0x2F holds code 0xF (-6) low and 0x2 (+1) high, so
    // elements 0 and 1 are -6 and 1 times 2^(scale - 127); each group of 32 has its own exponent.
    void mxfp4DequantizesByHand() {
        auto blocks = torch::zeros({1, 2, 16}, torch::kUInt8);  // one row, two groups of 32 values
        blocks[0][0][0] = 0x2F;
        blocks[0][0][15] = 0x97;  // element 30: code 7 (+6); element 31: code 9 (-0.5)
        blocks[0][1][3] = 0x5A;   // group 1 elements 6, 7: code 0xA (-1), code 5 (+3)
        auto scales = torch::tensor({{127 + 2, 127 - 3}}, torch::kUInt8);
        const torch::Tensor got = dequantizeMxfp4(blocks, scales, torch::kFloat32);
        QCOMPARE(got.sizes(), torch::IntArrayRef({1, 64}));
        auto want = torch::zeros({1, 64});
        want[0][0] = -6.0 * 4;
        want[0][1] = 1.0 * 4;
        want[0][30] = 6.0 * 4;
        want[0][31] = -0.5 * 4;
        want[0][32 + 6] = -1.0 / 8;
        want[0][32 + 7] = 3.0 / 8;
        QVERIFY(torch::equal(got, want));
        QVERIFY(torch::equal(dequantizeMxfp4(blocks, scales, torch::kBFloat16).to(torch::kFloat32), want));  // exact in bfloat16
        QVERIFY_THROWS_EXCEPTION(Error, dequantizeMxfp4(blocks, scales.narrow(1, 0, 1), torch::kFloat32));
        // the extreme exponents as torch.ldexp gives them: 2^-127 exact (a float32 subnormal); with 2^128 (not a float32)
        // 0.5 · 2^128 is still the finite 2^127, 6 · 2^128 overflows to inf, and a zero code stays 0 (not 0 · inf)
        auto edge = torch::zeros({1, 2, 16}, torch::kUInt8);
        edge[0][0][0] = 0x31;  // elements 0, 1: code 1 (+0.5), code 3 (+1.5)
        edge[0][1][0] = 0x01;  // elements 32, 33: code 1 (+0.5), code 0 (+0)
        edge[0][1][1] = 0x07;  // element 34: code 7 (+6)
        const torch::Tensor e = dequantizeMxfp4(edge, torch::tensor({{0, 255}}, torch::kUInt8), torch::kFloat32);
        QCOMPARE(e[0][0].item<float>(), std::ldexp(0.5f, -127));
        QCOMPARE(e[0][1].item<float>(), std::ldexp(1.5f, -127));
        QCOMPARE(e[0][32].item<float>(), std::ldexp(1.0f, 127));
        QCOMPARE(e[0][33].item<float>(), 0.0f);
        QVERIFY(std::isinf(e[0][34].item<float>()) && e[0][34].item<float>() > 0);
        // the transposed form into a reused buffer: the same numbers as [in, out], the buffer kept while it is large enough
        torch::Tensor buffer;
        const torch::Tensor t = dequantizeMxfp4Transposed(blocks[0].unsqueeze(0).expand({3, 2, 16}).contiguous(),
                                                          scales[0].unsqueeze(0).expand({3, 2}).contiguous(), buffer);
        QCOMPARE(t.sizes(), torch::IntArrayRef({64, 3}));
        for (int r = 0; r < 3; ++r) QVERIFY(torch::equal(t.select(1, r), want[0]));
        const void* storage = buffer.data_ptr();
        const torch::Tensor smaller = dequantizeMxfp4Transposed(edge, torch::tensor({{0, 255}}, torch::kUInt8), buffer);
        QCOMPARE(buffer.data_ptr(), storage);  // reused
        QVERIFY(torch::equal(smaller.t(), e));
        QVERIFY_THROWS_EXCEPTION(Error, dequantizeMxfp4Transposed(blocks, scales.narrow(1, 0, 1), buffer));
    }

    // A rename keeps the checkpoint's own name reachable: Persimmon's final norm prints as norm (nnterp renames it) and
    // reads as final_layernorm too, its output and its scale.
    void renamedModuleReadsUnderBothNames() {
        auto model = loadModel(QString::fromStdString(test::fixture("tiny-persimmon")));
        const Family& f = model->family();
        QCOMPARE(f.moduleLabel(Module::Norm), std::string("norm"));
        QCOMPARE(f.tensorName({Module::Norm, Param::Bias}), std::string("model.final_layernorm.bias"));
        QVERIFY(parseValuePath(*model, "final_layernorm.output") == (ValueKey{Value::FinalNormOutput, -1}));
        QVERIFY(parseValuePath(*model, "norm.output") == (ValueKey{Value::FinalNormOutput, -1}));
        QVERIFY(parseValuePath(*model, "final_layernorm.scale") == (ValueKey{Value::NativeFinalNormScale, -1}));
        QVERIFY(parseValuePath(*model, "layers.1.input_layernorm.scale") == (ValueKey{Value::NativeInputNormScale, 1}));
        // an alias: GPT-NeoX's dense is o_proj, both spellings read the same output
        auto neox = loadModel(QString::fromStdString(test::fixture("tiny-gpt-neox")));
        QCOMPARE(neox->family().tensorName({Module::OProj, Param::Bias}, 2), std::string("gpt_neox.layers.2.attention.dense.bias"));
        QCOMPARE(neox->family().tensorName({Module::LmHead}), std::string("embed_out.weight"));
        std::string why;
        QVERIFY(!neox->hasValue(Value::NativeQProjOutput, &why));
        QVERIFY2(why.find("query_key_value") != std::string::npos, why.c_str());
    }

    // The norms' scales are values: at every norm, 1 / RMS (RMSNorm, Gemma's) or 1 / standard deviation (LayerNorm) of
    // the norm's input, recomputed here in float64 from the saved stream.
    void normScaleIsTheNormsOwn_data() { modelRows(); }
    void normScaleIsTheNormsOwn() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        const ModelConfig& c = model->config();
        const std::map<ValueKey, torch::Tensor> tapped = tapsOfSixTokens(*model);
        auto expected = [&](const torch::Tensor& x) { return normTerms64(x, f, c.normEps, /*keepdim=*/false).second; };
        auto check = [&](ValueKey scaleKey, ValueKey inputKey) {
            QVERIFY2(model->hasValue(scaleKey.value), qPrintable(QString::fromStdString(valuePath(f, scaleKey))));
            const torch::Tensor got = tapped.at(scaleKey);
            QCOMPARE(got.scalar_type(), torch::kFloat32);
            const torch::Tensor want = expected(tapped.at(inputKey));
            QCOMPARE(got.sizes().vec(), want.sizes().vec());
            const double err = ((got.to(torch::kFloat64) - want).abs() / want.abs()).max().item<double>();
            QVERIFY2(err < 1e-5, qPrintable(QString::fromStdString(valuePath(f, scaleKey)) + QString(" off by %1").arg(err)));
        };
        const int last = static_cast<int>(c.numLayers) - 1;
        if (f.blockNorms.beforeAttention) check({Value::NativeInputNormScale, 0}, {Value::LayerInput, 0});
        else QVERIFY(!model->hasValue(Value::NativeInputNormScale));
        if (f.blockNorms.afterAttention) check({Value::NativeAttentionOutputNormScale, last}, {Value::AttentionOutput, last});
        if (f.blockNorms.beforeMlp) check({Value::NativePostAttentionNormScale, last}, {Value::LayerMid, last});
        if (f.blockNorms.afterMlp) check({Value::NativeMlpOutputNormScale, 0}, {Value::MlpOutput, 0});
        check({Value::NativeFinalNormScale, -1}, {Value::LayerOutput, last});
    }

    // The pre-attention and pre-MLP norms' output before their gain (TransformerLens' ln1/ln2.hook_normalized) is a value:
    // x · scale for an RMSNorm (Gemma's _norm(x)), (x - mean(x)) · scale for a LayerNorm, recomputed here in float64
    // from the saved stream; float32 [batch, seq, hidden_size], named after the norm's module, and the site a dictionary
    // naming blocks.i.ln2.hook_normalized reads.
    void normalizedIsTheNormsOwn_data() { modelRows(); }
    void normalizedIsTheNormsOwn() {
        QFETCH(QString, dir);
        auto model = loadModel(dir);
        const Family& f = model->family();
        const ModelConfig& c = model->config();
        const std::map<ValueKey, torch::Tensor> tapped = tapsOfSixTokens(*model);
        auto expected = [&](const torch::Tensor& x) {
            const auto [h, scale] = normTerms64(x, f, c.normEps, /*keepdim=*/true);
            return h * scale;
        };
        auto check = [&](ValueKey key, ValueKey inputKey, Module norm) {
            const std::string path = valuePath(f, key);
            QCOMPARE(path, "layers." + std::to_string(key.layer) + "." + f.moduleName(norm) + ".normalized");
            QVERIFY(parseValuePath(*model, path) == key);
            const torch::Tensor got = tapped.at(key);
            QCOMPARE(got.scalar_type(), torch::kFloat32);
            const torch::Tensor want = expected(tapped.at(inputKey));
            QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, 6, c.hiddenSize}));
            const double err = (got.to(torch::kFloat64) - want).abs().max().item<double>();
            QVERIFY2(err < 1e-5, qPrintable(QString::fromStdString(path) + QString(" off by %1").arg(err)));
        };
        const int last = static_cast<int>(c.numLayers) - 1;
        if (f.blockNorms.beforeAttention) check({Value::NativeInputNormNormalized, last}, {Value::LayerInput, last}, Module::InputNorm);
        else QVERIFY(!model->hasValue(Value::NativeInputNormNormalized));
        std::string why;
        if (f.blockNorms.beforeMlp || c.parallelResidual) {
            // under a parallel residual the MLP's norm reads the block's input (layer_mid is that input)
            check({Value::NativePostAttentionNormNormalized, 0}, {Value::LayerMid, 0}, Module::PostAttentionNorm);
            Dictionary d;
            d.dir = "a-transcoder";
            d.format = "circuit-tracer";
            d.site = "blocks.0.ln2.hook_normalized";
            QVERIFY(dictionarySite(*model, d) == (ValueKey{Value::NativePostAttentionNormNormalized, 0}));
            d.site = "blocks.0.ln1.hook_normalized";
            if (f.blockNorms.beforeAttention) QVERIFY(dictionarySite(*model, d) == (ValueKey{Value::NativeInputNormNormalized, 0}));
        } else {
            QVERIFY(!model->hasValue(Value::NativePostAttentionNormNormalized, &why));
            QVERIFY2(why.find("unnormed") != std::string::npos, why.c_str());
        }
    }

    // Editing the normalized value changes what the norm gives the MLP: doubled before the gain, the MLP's input is
    // 2 · normalized · w (+ bias for a LayerNorm), from the unedited pass's own normalized value and the norm's weights.
    void normalizedEditsTheNormsOutput_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-llama", "tiny-gpt2", "tiny-gemma2"}) QTest::newRow(f) << QString(f);
    }
    void normalizedEditsTheNormsOutput() {
        QFETCH(QString, fixture);
        auto model = loadModel(QString::fromStdString(test::fixture(fixture.toStdString())));
        const Family& f = model->family();
        const ValueKey normalized{Value::NativePostAttentionNormNormalized, 1};
        const ValueKey mlpInput{Value::MlpInput, 1};
        const Batch batch = batchFromIds({{1, 5, 9, 3, 7, 2}}, 0);
        TraceOptions plain;
        plain.save = {normalized, mlpInput};
        const TraceResult before = trace(*model, batch, plain);
        TraceOptions edited = plain;
        auto edits = std::make_shared<EditList>();
        addIntervention(*edits, *model, valuePath(f, normalized) + " *= 2");
        edited.intervention = edits;
        const TraceResult after = trace(*model, batch, edited);
        NNSCOPE_COMPARE_TENSORS(after.value(normalized), 2 * before.value(normalized), 1e-6, 1e-6);
        torch::Tensor want = 2 * before.value(normalized);
        const WeightStore store(test::fixture(fixture.toStdString()));
        const torch::Tensor w = store.get(f.tensorName({Module::PostAttentionNorm, Param::Weight}, 1)).to(torch::kFloat32);
        want = want * (f.norm == NormKind::RMSNormPlusOne ? 1 + w : w);
        if (f.norm == NormKind::LayerNorm) want = want + store.get(f.tensorName({Module::PostAttentionNorm, Param::Bias}, 1)).to(torch::kFloat32);
        NNSCOPE_COMPARE_TENSORS(after.value(mlpInput), want, 1e-5, 1e-5);
        QVERIFY(!torch::allclose(after.value(mlpInput), before.value(mlpInput)));
    }

    // FreezeTaps cuts every norm's scale from autograd and leaves the values alone: the gradient of a logit direction
    // read at the final norm's output, taken at the last block's output, is exactly the frozen norm's transpose
    // (w · scale · u, centred for a LayerNorm); without freezing it is not.
    void freezeTapsFreezeTheNorms_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-llama", "tiny-gpt2", "tiny-gemma2"}) QTest::newRow(f) << QString(f);
    }
    void freezeTapsFreezeTheNorms() {
        QFETCH(QString, fixture);
        auto model = loadModel(QString::fromStdString(test::fixture(fixture.toStdString())));
        const ModelConfig& c = model->config();
        const int last = static_cast<int>(c.numLayers) - 1;
        /// Makes the last block's output a leaf and keeps the final norm's output and scale.
        class Leaf : public Taps {
        public:
            explicit Leaf(int last) : last_(last) {}
            void tap(Value v, int layer, torch::Tensor& t) override {
                if (v == Value::LayerOutput && layer == last_) t = leaf = t.detach().clone().requires_grad_(true);
                if (v == Value::FinalNormOutput) normed = t;
                if (v == Value::NativeFinalNormScale) scale = t;
            }
            torch::Tensor leaf, normed, scale;

        private:
            int last_;
        };
        const torch::Tensor ids = torch::tensor({{2, 7, 4, 9}}, torch::kInt64);
        const torch::Tensor u = torch::randn({c.hiddenSize}, torch::TensorOptions().dtype(torch::kFloat32));
        auto gradient = [&](bool frozen, torch::Tensor* scale) {
            Leaf leaf(last);
            FreezeTaps freeze(&leaf);
            const torch::Tensor logits = model->forward(ids, torch::Tensor(), frozen ? static_cast<Taps*>(&freeze) : &leaf);
            if (scale) *scale = leaf.scale.detach();
            (leaf.normed.index({0, -1}) * u).sum().backward();
            return std::make_pair(leaf.leaf.grad().index({0, -1}).clone(), logits.detach());
        };
        torch::Tensor scale;
        const auto [frozenGrad, frozenLogits] = gradient(true, &scale);
        const auto [plainGrad, plainLogits] = gradient(false, nullptr);
        QVERIFY(torch::equal(frozenLogits, plainLogits));  // freezing changes no value
        const Family& f = model->family();
        torch::Tensor w = model->finalNormWeight().to(torch::kFloat32);
        if (f.norm == NormKind::RMSNormPlusOne) w = 1.0 + w;
        torch::Tensor want = w * scale.index({0, -1}) * u;
        if (f.norm == NormKind::LayerNorm) want = want - want.mean();
        QVERIFY2(torch::allclose(frozenGrad, want, 1e-5, 1e-6), qPrintable(fixture));
        QVERIFY2(!torch::allclose(plainGrad, want, 1e-5, 1e-6), "the unfrozen gradient should see the scale move");
    }

    // A device in every factory: a model loaded on libtorch's `meta` device (shapes, no data) runs the whole forward
    // there; a tensor made on the CPU anywhere in the pass would meet the meta weights and fail.
    void forwardMakesNothingOffTheModelsDevice_data() { modelRows(); }
    void forwardMakesNothingOffTheModelsDevice() {
        QFETCH(QString, dir);
        auto model = Model::load(dir.toStdString(), test::float32().withTokenizer(false).withDevice(torch::kMeta));
        QVERIFY(model->device().is_meta());
        QVERIFY(model->layer(0)[Module::OProj].weight.device().is_meta());
        c10::InferenceMode guard;
        const torch::Tensor ids = torch::tensor({{0, 3, 5, 1}, {2, 2, 4, 6}}, torch::kInt64);
        const torch::Tensor mask = torch::tensor({{0, 1, 1, 1}, {1, 1, 1, 1}}, torch::kInt64);
        torch::Tensor logits, step;
        try {
            logits = model->forward(ids, mask, nullptr);
            KvCache cache;
            step = model->forwardCached(torch::tensor({{1, 2, 3}}, torch::kInt64), cache, /*lastOnly=*/true);
        } catch (const std::exception& e) {
            QFAIL(e.what());  // "Expected all tensors to be on the same device": a factory without the model's options
        }
        QVERIFY(logits.device().is_meta());
        QCOMPARE(logits.sizes().vec(), (std::vector<int64_t>{2, 4, model->config().vocabSize}));
        QVERIFY(step.device().is_meta());
        QCOMPARE(step.sizes().vec(), (std::vector<int64_t>{1, 1, model->config().vocabSize}));
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
