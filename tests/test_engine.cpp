// SPDX-License-Identifier: MIT
// The engine on the real trained stories260K checkpoints (../shared/models): greedy decoding against the
// llama2.c reference, the invariants on every block, the two layouts of one model, left-padded batches.
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/model/weights.h"
#include "core/run/trace.h"
#include "checkpointcopy.h"
#include "core/analysis/analysis.h"
#include "core/analysis/valuestats.h"
#include "core/run/edit.h"
#include "core/run/generate.h"
#include "manifest.h"
#include "testutil.h"

#include "testsuite.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <regex>

using namespace nnscope;
using namespace torch::indexing;

namespace {

std::vector<int64_t> parseList(const std::string& line) {
    std::vector<int64_t> out;
    std::regex num("-?[0-9]+");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), num); it != std::sregex_iterator(); ++it)
        out.push_back(std::stoll(it->str()));
    return out;
}

std::vector<std::string> expectedLines() {
    std::ifstream in(test::sharedModels() + "/stories260K/expected_greedy_t0_256.txt");
    std::vector<std::string> lines;
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
    return lines;
}

TraceOptions saveAll(const Model& m) {
    TraceOptions o;
    o.save = allValueKeys(m, false);
    return o;
}

}  // namespace

class TestEngine : public QObject {
    Q_OBJECT
    std::shared_ptr<const Model> llama_, ernie_;

private slots:
    /// A model built from tensors in memory (the schema's names, a config as JSON) runs the same forward as the folder:
    /// the logits equal Model::load's exactly, on a family with fused weights and one with learned positions; a missing
    /// tensor and a wrong shape are refused by name.
    void modelFromTensors_data() {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"tiny-llama", "tiny-gpt2", "tiny-phi3", "tiny-gemma2"}) QTest::newRow(f) << QString(f);
    }
    void modelFromTensors() {
        QFETCH(QString, fixture);
        const std::string dir = test::fixture(fixture.toStdString());
        auto folder = Model::load(dir, LoadOptions().withTokenizer(false));
        nlohmann::json config = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
        SafetensorsFile file(dir + "/model.safetensors");
        std::map<std::string, torch::Tensor> tensors;
        for (const auto& [name, entry] : file.entries()) tensors[name] = file.tensor(name).clone();
        auto memory = Model::fromTensors(config, tensors, LoadOptions(), "two-block test model");
        QCOMPARE(memory->config().numLayers, folder->config().numLayers);
        c10::InferenceMode g;
        auto ids = torch::tensor({{1, 17, 42, 99, 5, 7}}, torch::kInt64);
        QVERIFY(torch::equal(memory->forward(ids, {}, nullptr), folder->forward(ids, {}, nullptr)));
        // every tensor the schema names is required, with its shape
        const auto schema = weightSchema(memory->family(), memory->config());
        auto missing = tensors;
        missing.erase(schema.back().name);
        try {
            Model::fromTensors(config, missing, LoadOptions(), "two-block test model");
            QFAIL("a model without one of its tensors was built");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(schema.back().name) != std::string::npos, e.what());
        }
        auto wrong = tensors;
        wrong[schema.front().name] = torch::zeros({3, 3});
        try {
            Model::fromTensors(config, wrong, LoadOptions(), "two-block test model");
            QFAIL("a tensor of the wrong shape was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(schema.front().name) != std::string::npos, e.what());
        }
    }

    void initTestCase() {
        configureThreads(0);
        llama_ = Model::load(test::sharedModels() + "/stories260K-llama");
        ernie_ = Model::load(test::sharedModels() + "/stories260K-ernie4_5");
        QCOMPARE(llama_->family().modelType, std::string("llama"));
        QCOMPARE(ernie_->family().modelType, std::string("ernie4_5"));
        QVERIFY(llama_->headTied());
    }

    void greedyFromBos_data() {
        QTest::addColumn<QString>("which");
        QTest::newRow("stories260K-llama") << "llama";
        QTest::newRow("stories260K-ernie4_5") << "ernie";
    }
    void greedyFromBos() {
        QFETCH(QString, which);
        const Model& m = which == "llama" ? *llama_ : *ernie_;
        const auto lines = expectedLines();
        QVERIFY(!lines.empty() && lines[0].rfind("ids", 0) == 0);
        const auto expected = parseList(lines[0]);
        QCOMPARE(expected.size(), size_t(257));  // BOS + 256 greedy steps
        // The empty prompt is the BOS token alone.
        const Batch bos = encodeBatch(m, {""});
        QCOMPARE(bos.ids[0], std::vector<int64_t>{1});
        const auto ids = generateGreedy(m, bos.ids[0], 256, /*stopAtEos=*/false);
        QCOMPARE(ids, expected);
    }

    /// Generation feeds one token at a time against the key/value cache (forwardCached): the logits of every step
    /// equal the full pass's, on every fixture family (partial rotary, fused per-head qkv, adjacent-pair rotary,
    /// YaRN and llama3 scaling, q/k norms, grouped-query attention) and both stories260K checkpoints.
    void cachedPassEqualsFullPass_data() {
        QTest::addColumn<QString>("dir");
        for (const auto& f : test::fixtureNames(test::fixturesDir() + "/models"))
            QTest::newRow(f.c_str()) << QString::fromStdString(test::fixture(f));
        QTest::newRow("stories260K-llama") << QString::fromStdString(test::sharedModels() + "/stories260K-llama");
        QTest::newRow("stories260K-ernie4_5") << QString::fromStdString(test::sharedModels() + "/stories260K-ernie4_5");
    }
    void cachedPassEqualsFullPass() {
        QFETCH(QString, dir);
        // float32: what is checked is the cache, and bfloat16 rounds a 5-token and a 1-token matmul differently (on a
        // CPU with native bfloat16, auto would compute the bfloat16 fixtures in bfloat16)
        auto m = Model::load(dir.toStdString(), LoadOptions().withTokenizer(false).withDtype(torch::kFloat32));
        c10::InferenceMode g;
        torch::manual_seed(7);
        const int64_t T = 14;
        auto ids = torch::randint(3, m->config().vocabSize, {1, T}, torch::kInt64);
        ids.index_put_({0, 0}, 1);
        const auto full = m->forward(ids, {}, nullptr);  // [1, T, vocab]
        KvCache cache;
        std::vector<torch::Tensor> parts = {m->forwardCached(ids.index({Slice(), Slice(0, 5)}), cache)};
        for (int64_t t = 5; t < T; ++t) parts.push_back(m->forwardCached(ids.index({Slice(), Slice(t, t + 1)}), cache));
        QCOMPARE(cache.length, T);
        const auto cached = torch::cat(parts, 1);
        QCOMPARE(cached.sizes(), full.sizes());
        NNSCOPE_COMPARE_TENSORS(cached, full, 1e-4, 1e-4);
        // A batch of two rows is refused with a message.
        QVERIFY_THROWS_EXCEPTION(Error, m->forwardCached(torch::ones({2, 1}, torch::kInt64), cache));
    }

    void firstLogitsMatchReference() {
        const auto lines = expectedLines();
        std::vector<double> ref;
        std::regex num("-?[0-9]+\\.[0-9]+");
        for (auto it = std::sregex_iterator(lines[1].begin(), lines[1].end(), num); it != std::sregex_iterator(); ++it)
            ref.push_back(std::stod(it->str()));
        QCOMPARE(ref.size(), size_t(8));
        for (const Model* m : {llama_.get(), ernie_.get()}) {
            c10::InferenceMode g;
            auto logits = m->forward(torch::tensor({int64_t(1)}).reshape({1, 1}), {}, nullptr);
            auto first8 = logits.index({0, 0, Slice(0, 8)});
            NNSCOPE_COMPARE_TENSORS(first8, torch::tensor(ref, torch::kFloat64), 0, 1e-4);
        }
    }

    void invariantsOnEveryBlock_data() {
        QTest::addColumn<QString>("which");
        QTest::newRow("stories260K-llama") << "llama";
        QTest::newRow("stories260K-ernie4_5") << "ernie";
    }
    void invariantsOnEveryBlock() {
        QFETCH(QString, which);
        const Model& m = which == "llama" ? *llama_ : *ernie_;
        const Batch b = encodeBatch(m, {"Once upon a time, there was a little girl named Lily.", "She liked the park."});
        const TraceResult r = trace(m, b, saveAll(m));
        const int L = static_cast<int>(m.config().numLayers);
        auto mask = b.attentionMask;
        for (int i = 0; i < L; ++i) {
            auto x = r.value({Value::LayerInput, i}), attn = r.value({Value::AttentionOutput, i}),
                 mlp = r.value({Value::MlpOutput, i}), out = r.value({Value::LayerOutput, i}), mid = r.value({Value::LayerMid, i});
            NNSCOPE_COMPARE_TENSORS(x + attn + mlp, out, 0, 1e-6);
            NNSCOPE_COMPARE_TENSORS(x + attn, mid, 0, 0);
            auto probs = r.value({Value::AttentionProbabilities, i}), scores = r.value({Value::AttentionScores, i});
            // rows of real queries sum to 1 and are causal, with zeros on padding keys
            auto sums = probs.sum(-1);
            NNSCOPE_COMPARE_TENSORS(sums, torch::ones_like(sums), 0, 1e-5);
            NNSCOPE_COMPARE_TENSORS(torch::softmax(scores, -1), probs, 1e-6, 1e-7);
            const int64_t s = probs.size(-1);
            auto future = torch::triu(torch::ones({s, s}, torch::kBool), 1);
            for (int64_t row = 0; row < probs.size(0); ++row) {
                auto realQ = mask[row].to(torch::kBool);
                auto p = probs[row].index({Slice(), realQ});  // [heads, realq, key]
                QCOMPARE(p.index({Slice(), future.index({realQ})}).abs().max().item<float>(), 0.0f);
                auto padKeys = mask[row] == 0;
                if (padKeys.any().item<bool>()) QCOMPARE(p.index({"...", padKeys}).abs().max().item<float>(), 0.0f);
            }
        }
        // the logit lens at the last block is the model's output
        auto lens = m.projectOnVocab(r.value({Value::LayerOutput, L - 1}));
        NNSCOPE_COMPARE_TENSORS(lens, r.value({Value::Logits, -1}), 0, 0);
    }

    void bothLayoutsGiveTheSameLogits() {
        const std::string prompt = "Once upon a time, there was a cat who liked to play in the sun.";
        TraceOptions o;
        o.save = {{Value::Logits, -1}, {Value::LayerOutput, 2}};
        const auto a = trace(*llama_, encodeBatch(*llama_, {prompt}), o);
        const auto b = trace(*ernie_, encodeBatch(*ernie_, {prompt}), o);
        NNSCOPE_COMPARE_TENSORS(a.value({Value::Logits, -1}), b.value({Value::Logits, -1}), 1e-4, 1e-4);
        NNSCOPE_COMPARE_TENSORS(a.value({Value::LayerOutput, 2}), b.value({Value::LayerOutput, 2}), 1e-4, 1e-5);
    }

    void leftPaddedBatchEqualsAlone_data() {
        QTest::addColumn<QString>("which");
        QTest::newRow("stories260K-llama") << "llama";
        QTest::newRow("stories260K-ernie4_5") << "ernie";
    }
    void leftPaddedBatchEqualsAlone() {
        QFETCH(QString, which);
        const Model& m = which == "llama" ? *llama_ : *ernie_;
        const std::vector<std::string> prompts = {"Lily saw a big red ball in the park and wanted to play.", "Tom ran."};
        const TraceResult batch = trace(m, encodeBatch(m, prompts), saveAll(m));
        QVERIFY(batch.batch.attentionMask.eq(0).any().item<bool>());  // the second row is padded
        for (size_t p = 0; p < prompts.size(); ++p) {
            const TraceResult alone = trace(m, encodeBatch(m, {prompts[p]}), saveAll(m));
            const int64_t n = static_cast<int64_t>(alone.batch.ids[0].size());
            const int64_t s = batch.batch.inputIds.size(1);
            for (const auto& [key, t] : alone.values) {
                const ValueInfo& info = valueInfo(key.value);
                if (key.value == Value::InputSize) continue;
                torch::Tensor got = batch.value(key).index({static_cast<int64_t>(p)}).unsqueeze(0);
                // slice the real positions on every seq/query/key axis
                for (size_t ax = 1; ax < info.axes.size(); ++ax) {
                    const std::string name = info.axes[ax];
                    if (name == "seq" || name == "query" || name == "key")
                        got = got.narrow(static_cast<int64_t>(ax), s - n, n);
                }
                auto c = test::compare(got, t, 1e-4, 2e-5);
                QVERIFY2(c.ok, (valuePath(m.family(), key) + ": " + c.message).c_str());
            }
        }
    }

    void topKIsSortedAndNormalised() {
        const TraceResult r = trace(*llama_, encodeBatch(*llama_, {"Once upon a time"}), {});
        QVERIFY(std::abs(r.nextTokenProbs.sum().item<double>() - 1.0) < 1e-5);
        auto top = topK(*llama_, r.nextTokenProbs, 3);
        QCOMPARE(top[0][0].text, std::string(","));
        QVERIFY(top[0][0].prob > top[0][1].prob);
    }

    // A checkpoint whose vocabulary is padded past its tokenizer's (Qwen2, Phi-3, Pythia) makes ids the tokenizer lacks
    // the top token: the trace, the logit lens and generation compute them as transformers does and show them with
    // Tokenizer::unknownIdLabel (decoding them gave "Token id 305 is outside the vocabulary" and exit 1); only ids at or
    // above config.json's vocab_size are refused.
    /// A token as nnscope prints it is taken back as --answer / --target: SentencePiece encodes "," as "▁" + "," and
    /// "␣there" as several pieces, so the printed label (or the vocabulary string) names the token when encoding it
    /// gives not one token; a text that encodes to one token keeps meaning that token (HF tokenizer(text)).
    void printedTokensAreTakenBack() {
        const Model& m = *llama_;
        const TraceResult r = trace(m, encodeBatch(m, {"Once upon a time"}), {});
        const auto top = topK(m, r.nextTokenProbs, 8)[0];
        QCOMPARE(top.front().text, std::string(","));  // the demo's story: "Once upon a time," first
        for (const TokenProb& t : top) QCOMPARE(parseTokenArgument(m, t.text, "--target"), t.id);
        const int64_t there = m.tokenizer()->encode(" there", false).back();
        QCOMPARE(m.tokenizer()->tokenString(there), std::string("▁there"));
        for (const char* spelling : {"␣there", "▁there"}) QCOMPARE(parseTokenArgument(m, spelling, "--target"), there);
        QCOMPARE(parseTokenArgument(m, "there", "--target"), m.tokenizer()->encode("there", false).at(0));  // one token: as encoded
        QCOMPARE(m.tokenizer()->idOfToken("no such token"), std::optional<int64_t>());
        try {
            parseTokenArgument(m, "Paris", "--target");  // four pieces, and no token's string or label
            QFAIL("'Paris' was taken as one token");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("is 4 tokens") != std::string::npos, e.what());
        }
    }

    void paddedVocabularyIdsAreShown() {
        const std::string prompt = "hello world";
        const auto plain = Model::load(test::fixture("tiny-llama"), test::float32());
        const TraceResult before = trace(*plain, encodeBatch(*plain, {prompt}), {});
        const int64_t like = before.nextTokenProbs[0].argmax().item<int64_t>();
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        test::copyCheckpoint(test::fixture("tiny-llama"), dir);
        const int64_t padded = 305;
        test::padVocabulary(dir, 310, padded, like);
        const auto m = Model::load(dir, test::float32());
        QCOMPARE(m->config().vocabSize, int64_t(310));
        QCOMPARE(m->tokenizer()->vocabSize(), int64_t(300));
        const std::string label = Tokenizer::unknownIdLabel(padded);
        QCOMPARE(label, std::string("<id 305: not in tokenizer>"));

        TraceOptions o;
        o.save = {{Value::Logits, -1}};
        for (int i = 0; i < m->config().numLayers; ++i) o.save.push_back({Value::LayerOutput, i});
        const TraceResult r = trace(*m, encodeBatch(*m, {prompt}), o);
        QCOMPARE(r.nextTokenProbs.size(-1), int64_t(310));
        const auto top = topK(*m, r.nextTokenProbs, 3);
        QCOMPARE(top[0][0].id, padded);
        QCOMPARE(top[0][0].text, label);
        QCOMPARE(top[0][1].id, like);  // the real tokens keep their labels
        QCOMPARE(top[0][1].text, m->tokenizer()->tokenLabel(like));

        const LogitLens lens = logitLens(*m, r, 3);
        QCOMPARE(lens.topIds[0][m->config().numLayers - 1][-1][0].item<int64_t>(), padded);

        const std::vector<int64_t> ids = encodeBatch(*m, {prompt}).ids[0];
        const std::vector<int64_t> out = generateGreedy(*m, ids, 3, /*stopAtEos=*/false);
        QCOMPARE(out.size(), ids.size() + 3);
        QCOMPARE(out[ids.size()], padded);
        // decode skips the ids it lacks, as transformers' does; what nnscope shows marks where they stand
        std::vector<int64_t> known;
        for (int64_t id : out)
            if (id < 300) known.push_back(id);
        QCOMPARE(m->tokenizer()->decode(out, true), m->tokenizer()->decode(known, true));
        const std::string shown = m->tokenizer()->decodeShowingUnknown(out, true);
        QVERIFY2(shown.rfind(m->tokenizer()->decode(ids, true) + label, 0) == 0, shown.c_str());

        // the model's own ids are accepted as targets; ids at or above vocab_size, or below 0, are refused
        QCOMPARE(parseTokenArgument(*m, "#305", "--answer"), padded);
        for (const char* bad : {"#310", "#-1"}) {
            try {
                parseTokenArgument(*m, bad, "--answer");
                QFAIL(bad);
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find("not a token id of this model (0 to 309)") != std::string::npos, e.what());
            }
        }
        try {
            lensTokenProbs(*m, lens, 0, 310);
            QFAIL("lensTokenProbs took id 310");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("outside the vocabulary (0 to 309)") != std::string::npos, e.what());
        }
        try {
            m->tokenizer()->tokenLabel(-1);
            QFAIL("tokenLabel took id -1");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("outside the vocabulary") != std::string::npos, e.what());
        }
    }

    // NaN and Inf in values are located where the pass first makes them (the window's banner and the command line's
    // warning say it), and the logit lens and the top-k name no token where the logits are not finite (they named the
    // first NaN's id).
    void nonFiniteValuesAreLocated() {
        const auto m = Model::load(test::fixture("tiny-llama"), test::float32());
        const int64_t hidden = m->config().hiddenSize;
        TraceOptions o;
        o.save = matchValues(*m, "all");
        auto edits = std::make_shared<EditList>();
        addIntervention(*edits, *m, "layers.0.mlp.mlp_output[:, 3] = nan");
        addIntervention(*edits, *m, "layers.0.mlp.mlp_output[:, 1] = inf");
        o.intervention = edits;
        // a left-padded batch: positions count from each prompt's own first token
        const TraceResult r = trace(*m, encodeBatch(*m, {"hello world", "hey you"}), o);
        const auto origin = firstNonFinite(*m, r);
        QVERIFY(origin);
        QCOMPARE(valuePath(m->family(), origin->key), std::string("layers.0.mlp.mlp_output"));
        QCOMPARE(origin->position, int64_t(1));  // the Inf comes first in the prompt (the NaN at position 3)
        QCOMPARE(origin->row, int64_t(0));
        QVERIFY(std::isinf(origin->value) && origin->value > 0);
        int64_t edited = 0;  // the positions 1 and 3 each prompt has
        for (const auto& ids : r.batch.ids) edited += (ids.size() > 1) + (ids.size() > 3);
        QCOMPARE(origin->count, edited * hidden);
        const std::string said = describeNonFinite(*m, *origin);
        QVERIFY2(said.rfind("+Inf first appears at layers.0.mlp.mlp_output, position 1 of prompt 1 (", 0) == 0, said.c_str());
        // the lens: no token where a block's logits are not finite, the others as before
        const LogitLens lens = logitLens(*m, r, 3);
        const torch::Tensor ids = lens.topIds[0], probs = lens.topProbs[0];  // [L, len, k]
        QCOMPARE(ids[0][3][0].item<int64_t>(), int64_t(-1));
        QVERIFY(std::isnan(probs[0][3][0].item<float>()));
        QVERIFY(ids[0][2][0].item<int64_t>() >= 0 && std::isfinite(probs[0][2][0].item<float>()));
        QCOMPARE(ids[m->config().numLayers - 1][-1][0].item<int64_t>(), int64_t(-1));
        // the next token: none named for a row that is not finite
        const auto top = topK(*m, r.nextTokenProbs, 3);
        QVERIFY(top[0].empty());
    }

    // A checkpoint with a NaN weight (one element of a down_proj): the first value that holds one is that block's
    // mlp_output, at the first position.
    void nanWeightIsLocated() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        test::copyCheckpoint(test::fixture("tiny-llama"), dir);
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        {
            SafetensorsFile f(dir + "/model.safetensors");
            for (const auto& [name, e] : f.entries()) {
                torch::Tensor t = f.tensor(name).clone();
                if (name == "model.layers.1.mlp.down_proj.weight") t[5][7] = std::numeric_limits<float>::quiet_NaN();
                tensors.emplace_back(name, t);
            }
        }
        writeSafetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
        const auto m = Model::load(dir, test::float32());
        TraceOptions o;
        o.save = matchValues(*m, "all");
        const TraceResult r = trace(*m, encodeBatch(*m, {"hello world"}), o);
        const auto origin = firstNonFinite(*m, r);
        QVERIFY(origin);
        QCOMPARE(valuePath(m->family(), origin->key), std::string("layers.1.mlp.mlp_output"));
        QCOMPARE(origin->position, int64_t(0));
        QVERIFY(std::isnan(origin->value));
        // a trace without the NaN's values saved says nothing of them; an all-finite trace gives none
        TraceOptions few;
        few.save = {{Value::LayerOutput, 0}};
        QVERIFY(!firstNonFinite(*m, trace(*m, encodeBatch(*m, {"hello world"}), few)));
        const auto plain = Model::load(test::fixture("tiny-llama"), test::float32());
        QVERIFY(!firstNonFinite(*plain, trace(*plain, encodeBatch(*plain, {"hello world"}), o)));
    }
};

NNSCOPE_TEST_SUITE(TestEngine, "test_engine")
#include "test_engine.moc"
