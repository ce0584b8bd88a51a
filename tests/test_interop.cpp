// SPDX-License-Identifier: MIT
// The names a value has in the Python tools (TransformerLens hooks, nnterp accessors and snippets), what a pinned
// card computes (statistics, norms per position, the cost of tracing again), and trace files read back: the engine's
// own exports with and without the checkpoint, a file saved with nnterp's names and no metadata, and broken files.
#include "core/model/error.h"
#include "core/io/export.h"
#include "core/pages/interop.h"
#include "core/io/safetensors.h"
#include "core/io/tracefile.h"
#include "core/analysis/valuestats.h"
#include "testutil.h"

#include "testsuite.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace nnscope;

namespace {

std::shared_ptr<const Model> tiny(const std::string& name) { return Model::load(test::fixture(name), test::float32()); }

QString hookOf(const Model& m, Value v, int layer) {
    const auto h = transformerLensHook(m.family(), m.config(), {v, layer});
    return h ? QString::fromStdString(h->name) : QString();
}

}  // namespace

class TestInterop : public QObject {
    Q_OBJECT

private slots:
    void transformerLensHooks() {
        const auto llama = tiny("tiny-llama");
        const std::vector<std::pair<ValueKey, QString>> expected = {
            {{Value::TokenEmbeddings, -1}, "hook_embed"},
            {{Value::LayerInput, 1}, "blocks.1.hook_resid_pre"},
            {{Value::LayerMid, 1}, "blocks.1.hook_resid_mid"},
            {{Value::LayerOutput, 1}, "blocks.1.hook_resid_post"},
            {{Value::AttentionOutput, 1}, "blocks.1.hook_attn_out"},
            {{Value::MlpOutput, 0}, "blocks.0.hook_mlp_out"},
            {{Value::AttentionQueries, 1}, "blocks.1.attn.hook_rot_q"},
            {{Value::AttentionKeys, 1}, "blocks.1.attn.hook_rot_k"},
            {{Value::AttentionValues, 1}, "blocks.1.attn.hook_v"},
            {{Value::AttentionScores, 1}, "blocks.1.attn.hook_attn_scores"},
            {{Value::AttentionProbabilities, 1}, "blocks.1.attn.hook_pattern"},
            {{Value::AttentionHeadOutputs, 0}, "blocks.0.attn.hook_z"},
            {{Value::AttentionPremix, 0}, "blocks.0.attn.hook_z"},
            {{Value::MlpNeurons, 1}, "blocks.1.mlp.hook_post"},
            {{Value::NativeActFnInput, 1}, "blocks.1.mlp.hook_pre"},
            {{Value::NativeUpProjOutput, 1}, "blocks.1.mlp.hook_pre_linear"},
            {{Value::FinalNormOutput, -1}, "unembed.hook_in"},
            {{Value::LmHeadOutput, -1}, "unembed.hook_out"},
            {{Value::Logits, -1}, "unembed.hook_out"},
            // no hook holds these: ln1/ln2.hook_normalized is the stream before the gain, hook_mlp_in before the norm
            {{Value::AttentionNormOutput, 1}, ""},
            {{Value::MlpNormOutput, 1}, ""},
            {{Value::MlpInput, 1}, ""},
            {{Value::MlpActivation, 1}, ""},  // act(gate) of a gated MLP
            {{Value::NextTokenProbs, -1}, ""},
            {{Value::InputIds, -1}, ""},
            {{Value::NativeQProjOutput, 0}, ""}};
        for (const auto& [key, name] : expected)
            QVERIFY2(hookOf(*llama, key.value, key.layer) == name,
                     qPrintable(QString::fromStdString(valuePath(llama->family(), key)) + " -> " + hookOf(*llama, key.value, key.layer)));
        // heads on axis 2 in TransformerLens for q, k, v; the scores' masked entries differ
        QVERIFY(transformerLensHook(llama->family(), llama->config(), {Value::AttentionQueries, 0})->headsOnAxis2);
        QVERIFY(!transformerLensHook(llama->family(), llama->config(), {Value::AttentionProbabilities, 0})->headsOnAxis2);
        QVERIFY(!transformerLensHook(llama->family(), llama->config(), {Value::AttentionScores, 0})->note.empty());

        // HookedTransformer does not load these architectures: no name at all
        for (const char* name : {"tiny-arcee", "tiny-ernie4_5", "tiny-persimmon"}) {
            const auto m = tiny(name);
            for (const ValueKey& key : allValueKeys(*m, true))
                QVERIFY2(!transformerLensHook(m->family(), m->config(), key), qPrintable(QString(name) + " " + QString::fromStdString(valuePath(m->family(), key))));
        }
        // GPT-2: no rotary (hook_q), a plain MLP (its activation is hook_post)
        const auto gpt2 = tiny("tiny-gpt2");
        QCOMPARE(hookOf(*gpt2, Value::AttentionQueries, 0), QString("blocks.0.attn.hook_q"));
        QCOMPARE(hookOf(*gpt2, Value::MlpActivation, 0), QString("blocks.0.mlp.hook_post"));
        QCOMPARE(hookOf(*gpt2, Value::NativeUpProjOutput, 0), QString());  // act_fn's input: hook_pre
        // Gemma 2 hooks a branch after its output norm, and caps the logits after unembed.hook_out
        const auto gemma2 = tiny("tiny-gemma2");
        QCOMPARE(hookOf(*gemma2, Value::AttentionOutput, 1), QString());
        QCOMPARE(hookOf(*gemma2, Value::NativeAttentionOutputNormOutput, 1), QString("blocks.1.hook_attn_out"));
        QCOMPARE(hookOf(*gemma2, Value::NativeMlpOutputNormOutput, 1), QString("blocks.1.hook_mlp_out"));
        QCOMPARE(hookOf(*gemma2, Value::Logits, -1), QString());
        QCOMPARE(hookOf(*gemma2, Value::LmHeadOutput, -1), QString("unembed.hook_out"));
        // OLMo 2 hooks them before
        const auto olmo2 = tiny("tiny-olmo2");
        QCOMPARE(hookOf(*olmo2, Value::AttentionOutput, 1), QString("blocks.1.hook_attn_out"));
        QCOMPARE(hookOf(*olmo2, Value::NativeAttentionOutputNormOutput, 1), QString());
        // GPT-NeoX's parallel residual has no resid_mid
        const auto neox = tiny("tiny-gpt-neox");
        QVERIFY(neox->config().parallelResidual);
        QCOMPARE(hookOf(*neox, Value::LayerMid, 1), QString());
        QCOMPARE(hookOf(*neox, Value::LayerOutput, 1), QString("blocks.1.hook_resid_post"));
    }

    void nnterpNames() {
        const auto m = tiny("tiny-llama");
        const std::vector<std::pair<ValueKey, std::string>> expected = {
            {{Value::LayerOutput, 1}, "model.layers_output[1]"},
            {{Value::LayerInput, 0}, "model.layers_input[0]"},
            {{Value::AttentionOutput, 1}, "model.attentions_output[1]"},
            {{Value::MlpInput, 1}, "model.mlps_input[1]"},
            {{Value::MlpOutput, 1}, "model.mlps_output[1]"},
            {{Value::AttentionProbabilities, 1}, "model.attention_probabilities[1]"},
            {{Value::AttentionQueries, 1}, "model.layers[1].self_attn.attention_queries"},
            {{Value::MlpNeurons, 0}, "model.layers[0].mlp.mlp_neurons"},
            {{Value::LayerMid, 0}, "model.layers[0].layer_mid"},
            {{Value::NativeUpProjOutput, 1}, "model.layers[1].mlp.up_proj.output"},
            {{Value::Logits, -1}, "model.logits"},
            {{Value::NextTokenProbs, -1}, "model.next_token_probs"},
            {{Value::FinalNormOutput, -1}, "model.ln_final.output"}};
        for (const auto& [key, expr] : expected) QCOMPARE(nnterpExpression(m->family(), key), expr);

        const std::string probs = nnterpSnippet(*m, {Value::AttentionProbabilities, 1}, {"Once upon a \"time\""});
        QVERIFY2(probs.find("from nnterp import StandardizedTransformer") != std::string::npos, probs.c_str());
        QVERIFY2(probs.find("StandardizedTransformer(\"" + m->dir() + "\", enable_attention_probs=True)") != std::string::npos, probs.c_str());
        QVERIFY2(probs.find("with model.trace(\"Once upon a \\\"time\\\"\"):\n    value = model.attention_probabilities[1].save()") != std::string::npos,
                 probs.c_str());
        QVERIFY2(probs.find("# [batch, num_heads, query, key]") != std::string::npos, probs.c_str());
        const std::string scores = nnterpSnippet(*m, {Value::AttentionScores, 0}, {"A", "B c"});
        QVERIFY2(scores.find("attn_implementation=\"eager\"") != std::string::npos, scores.c_str());
        QVERIFY2(scores.find("with model.trace([\"A\", \"B c\"]):") != std::string::npos, scores.c_str());
        const std::string out = nnterpSnippet(*m, {Value::LayerOutput, 1}, {"x"});
        QVERIFY2(out.find("eager") == std::string::npos && out.find("model.layers_output[1].save()") != std::string::npos, out.c_str());
    }

    void nnterpSpellingsParse() {
        const auto m = tiny("tiny-llama");
        const int last = static_cast<int>(m->config().numLayers) - 1;
        const std::vector<std::pair<std::string, ValueKey>> expected = {
            {"layers_output.1", {Value::LayerOutput, 1}},
            {"layers_output[1]", {Value::LayerOutput, 1}},
            {"layers_input.0", {Value::LayerInput, 0}},
            {"attention_probabilities[-1]", {Value::AttentionProbabilities, last}},
            {"attention_probabilities.0", {Value::AttentionProbabilities, 0}},
            {"attentions_output.1", {Value::AttentionOutput, 1}},
            {"attentions_input.1", {Value::AttentionNormOutput, 1}},
            {"mlps_input.0", {Value::MlpInput, 0}},
            {"mlps_output.0", {Value::MlpOutput, 0}},
            {"layers.1.layer_output", {Value::LayerOutput, 1}}};
        for (const auto& [path, key] : expected) {
            const ValueKey got = parseValuePath(*m, path);
            QVERIFY2(got == key, path.c_str());
        }
        for (const char* bad : {"layers_output[x]", "layers_output.", "layers_output[1", "layers_output.9"})
            QVERIFY_EXCEPTION_THROWN(parseValuePath(*m, bad), Error);
    }

    void statisticsAndNorms() {
        const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
        const torch::Tensor t = torch::tensor({1.0, -2.0, nan, 4.0, inf, -inf, 0.5}, torch::kFloat32).reshape({1, 7});
        const ValueStats s = valueStats(t);
        QCOMPARE(s.elements, int64_t(7));
        QCOMPARE(s.nanCount, int64_t(1));
        QCOMPARE(s.infCount, int64_t(2));
        QCOMPARE(s.min, -2.0);
        QCOMPARE(s.max, 4.0);
        QCOMPARE(s.mean, 3.5 / 4);
        QCOMPARE(s.shape, (std::vector<int64_t>{1, 7}));
        const ValueStats none = valueStats(torch::full({3}, nan));
        QVERIFY(std::isnan(none.min) && none.nanCount == 3);

        // norms per position of a prompt cut from a left-padded batch
        const auto m = tiny("tiny-llama");
        TraceResult r;
        r.batch = batchFromIds({{5, 6, 7}, {8, 9}});
        const int64_t H = m->config().hiddenSize;
        const torch::Tensor h = torch::randn({2, 3, H});
        r.values = {{{Value::LayerOutput, 0}, h}};
        const std::vector<double> n1 = positionNorms(*m, r, {Value::LayerOutput, 0}, 1);
        QCOMPARE(n1.size(), size_t(2));
        for (int p = 0; p < 2; ++p) QVERIFY(std::fabs(n1[static_cast<size_t>(p)] - h[1][p + 1].norm().item<double>()) < 1e-5);
        // a pattern: per query, over every head and key
        const torch::Tensor pat = torch::rand({2, m->config().numHeads, 3, 3});
        r.values.push_back({{Value::AttentionProbabilities, 1}, pat});
        const std::vector<double> n0 = positionNorms(*m, r, {Value::AttentionProbabilities, 1}, 0);
        QCOMPARE(n0.size(), size_t(3));
        QVERIFY(std::fabs(n0[2] - pat[0].select(1, 2).norm().item<double>()) < 1e-5);
        QVERIFY(positionAxis(Value::NextTokenProbs).empty());
        QVERIFY_EXCEPTION_THROWN(positionNorms(*m, r, {Value::MlpNeurons, 0}, 0), Error);
    }

    void rereadCost() {
        // the demo model's own prompt costs a few million multiply-adds: read at once; a 16-layer, 1024-wide Llama with
        // a 128k vocabulary at 511 tokens is far over the budget: the next run reads it
        const auto demo = Model::load(NNSCOPE_DEMO_MODEL_DIR, test::float32());
        std::vector<int64_t> ids(18, 5);
        const double small = traceMultiplyAdds(demo->config(), batchFromIds({ids}));
        QVERIFY2(small > 1e5 && small < kImmediateRereadBudget / 100, std::to_string(small).c_str());
        ModelConfig big;
        big.numLayers = 16;
        big.hiddenSize = 1024;
        big.intermediateSize = 4096;
        big.numHeads = 16;
        big.numKvHeads = 4;
        big.headDim = 64;
        big.vocabSize = 128256;
        const double large = traceMultiplyAdds(big, batchFromIds({std::vector<int64_t>(511, 1)}));
        QVERIFY2(large > 50 * kImmediateRereadBudget, std::to_string(large).c_str());
    }

    void traceFileRoundTrip() {
        QTemporaryDir tmp;
        const auto m = tiny("tiny-llama");
        TraceOptions options;
        options.save = allValueKeys(*m, false);
        const TraceResult r = trace(*m, encodeBatch(*m, {"Hello world", "A b"}), options);
        const std::string file = tmp.filePath("trace.safetensors").toStdString();
        exportValues(file, *m, r);
        for (bool weights : {false, true}) {
            const TraceFile tf = readTraceFile(file, TraceFileOptions{weights});
            QCOMPARE(tf.model->hasWeights(), weights);
            QCOMPARE(QString::fromStdString(tf.checkpoint), weights ? QString::fromStdString(m->dir()) : QString());
            QVERIFY(weights || !tf.noWeights.empty());
            QCOMPARE(tf.model->config().numLayers, m->config().numLayers);
            QCOMPARE(tf.model->config().hiddenSize, m->config().hiddenSize);
            QCOMPARE(tf.result.batch.ids, r.batch.ids);
            QVERIFY(torch::equal(tf.result.batch.attentionMask, r.batch.attentionMask));
            QCOMPARE(tf.result.batch.prompts, r.batch.prompts);
            QCOMPARE(tf.result.values.size(), r.values.size());
            for (const auto& [key, t] : r.values) QVERIFY2(torch::equal(tf.result.value(key), t), valuePath(m->family(), key).c_str());
            QVERIFY(torch::allclose(tf.result.nextTokenProbs, r.nextTokenProbs));
            QCOMPARE(tf.tokensFrom, std::string("the file's metadata"));
            for (size_t row = 0; row < r.batch.ids.size(); ++row)
                for (size_t p = 0; p < r.batch.ids[row].size(); ++p) QCOMPARE(tf.tokens[row][p], m->tokenizer()->tokenLabel(r.batch.ids[row][p]));
            QVERIFY(tf.skipped.empty());
        }
        // without the model's weights, what needs them says so
        const TraceFile bare = readTraceFile(file, TraceFileOptions{false});
        try {
            bare.model->projectOnVocab(r.value({Value::LayerOutput, 0}));
            QFAIL("projected without weights");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("not the model's weights") != std::string::npos, e.what());
        }
    }

    void nnterpFileWithoutMetadata() {
        // what a researcher saves from nnterp: accessor names, no metadata, no config beside it
        QTemporaryDir tmp;
        const torch::Tensor h0 = torch::randn({2, 4, 16}), h1 = torch::randn({2, 4, 16});
        const torch::Tensor probs = torch::softmax(torch::randn({2, 2, 4, 4}), -1);
        const std::string file = tmp.filePath("nnterp.safetensors").toStdString();
        writeSafetensors(file, {{"layers_output.0", h0}, {"layers_output.1", h1}, {"attention_probabilities.1", probs}, {"notes", torch::zeros({1})}}, {});
        const TraceFile tf = readTraceFile(file);
        QVERIFY(!tf.model->hasWeights());
        QCOMPARE(tf.configFrom, std::string("the values' shapes"));
        QCOMPARE(tf.model->config().numLayers, int64_t(2));
        QCOMPARE(tf.model->config().hiddenSize, int64_t(16));
        QCOMPARE(tf.model->config().numHeads, int64_t(2));
        QCOMPARE(tf.result.batch.ids.size(), size_t(2));
        QCOMPARE(tf.tokens.at(1), (std::vector<std::string>{"0", "1", "2", "3"}));
        QVERIFY(torch::equal(tf.result.value({Value::LayerOutput, 1}), h1));
        QVERIFY(torch::equal(tf.result.value({Value::AttentionProbabilities, 1}), probs));
        QCOMPARE(tf.skipped.size(), size_t(1));
        QVERIFY(tf.skipped.front().rfind("notes: ", 0) == 0);
    }

    void brokenTraceFiles() {
        QTemporaryDir tmp;
        auto refused = [](const std::string& file, const std::vector<std::string>& words) {
            try {
                readTraceFile(file);
            } catch (const Error& e) {
                const std::string what = e.what();
                QVERIFY2(what.find(file) != std::string::npos, what.c_str());
                for (const auto& w : words) QVERIFY2(what.find(w) != std::string::npos, (w + " not in: " + what).c_str());
                return;
            }
            QFAIL(("no error for " + file).c_str());
        };
        const std::string text = tmp.filePath("notes.safetensors").toStdString();
        std::ofstream(text) << "these are notes, not tensors\n";
        refused(text, {"header"});
        refused(tmp.filePath("absent.safetensors").toStdString(), {"no such file"});
        refused(tmp.path().toStdString(), {"folder"});
        const std::string foreign = tmp.filePath("foreign.safetensors").toStdString();
        writeSafetensors(foreign, {{"encoder.weight", torch::zeros({2, 2})}, {"bias", torch::zeros({2})}}, {});
        refused(foreign, {"no tensor is named by a value path", "layers.0.layer_output"});
        // a value whose positions disagree with the recorded input_ids
        const auto m = tiny("tiny-llama");
        const std::string mismatch = tmp.filePath("mismatch.safetensors").toStdString();
        writeSafetensors(mismatch, {{"layers.0.layer_output", torch::zeros({1, 5, m->config().hiddenSize})}},
                         {{"input_ids", "[[1, 2, 3]]"}, {"config", m->config().raw.dump()}});
        refused(mismatch, {"'layers.0.layer_output'", "[1, 5, 64]", "seq 3"});
        // two values that disagree with each other (no metadata: the first sets the batch)
        const std::string wide = tmp.filePath("wide.safetensors").toStdString();
        writeSafetensors(wide, {{"layers.0.layer_output", torch::zeros({1, 5, 8})}, {"layers.1.layer_output", torch::zeros({1, 5, 9})}}, {});
        refused(wide, {"layers.1.layer_output", "[1, 5, 9]"});
        const std::string badJson = tmp.filePath("badjson.safetensors").toStdString();
        writeSafetensors(badJson, {{"layers.0.layer_output", torch::zeros({1, 3, 8})}}, {{"input_ids", "[[1, 2"}});
        refused(badJson, {"input_ids", "not JSON"});
    }
};

NNSCOPE_TEST_SUITE(TestInterop, "test_interop")
#include "test_interop.moc"
