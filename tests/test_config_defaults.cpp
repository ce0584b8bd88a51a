// SPDX-License-Identifier: MIT
// Config keys a checkpoint leaves out take the family's own default: every case of
// tests/fixtures/config_defaults/goldens.json (written by make_config_goldens.py with transformers 5.23) is resolved
// through nnscope's config reader, and what the forward pass reads is compared with what transformers' configuration
// class and modeling code make of the same config.json: sizes, biases, epsilon, activation, tying, scalings, soft
// caps, per-layer sliding windows, token ids and the rotary tables themselves. A file transformers refuses must be
// refused. No weights are needed.
#include "core/model/error.h"
#include "core/model/family.h"
#include "core/model/model.h"
#include "core/model/rope.h"
#include "core/io/safetensors.h"
#include "testutil.h"
#include "testsuite.h"

#include <QtTest>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace nnscope;
using json = nlohmann::json;

namespace {

const json& goldens() {
    static const json doc = [] {
        const std::string path = nnscope::test::fixturesDir() + "/config_defaults/goldens.json";
        std::ifstream in(path);
        if (!in) throw std::runtime_error(path + ": missing (run tests/fixtures/make_config_goldens.py)");
        return json::parse(in);
    }();
    return doc;
}

/// Collects every difference of one case, so a failure lists them all at once.
struct Diffs {
    std::vector<std::string> lines;
    void add(const std::string& key, const std::string& ours, const std::string& theirs) {
        lines.push_back(key + ": nnscope " + ours + ", transformers " + theirs);
    }
    void num(const std::string& key, double ours, const json& theirs, double rtol = 1e-9) {
        const double t = theirs.get<double>();
        if (std::fabs(ours - t) > rtol * std::max(1.0, std::fabs(t))) add(key, json(ours).dump(), theirs.dump());
    }
    void eq(const std::string& key, const json& ours, const json& theirs) {
        if (ours != theirs) add(key, ours.dump(), theirs.dump());
    }
    void optNum(const std::string& key, const std::optional<double>& ours, const json& theirs) {
        if (theirs.is_null() != !ours.has_value()) add(key, ours ? json(*ours).dump() : "null", theirs.dump());
        else if (ours) num(key, *ours, theirs);
    }
    void optId(const std::string& key, const std::optional<int64_t>& ours, const json& theirs) {
        eq(key, ours ? json(*ours) : json(nullptr), theirs);
    }
    void tensor(const std::string& key, const torch::Tensor& ours, const json& theirs) {
        if (!ours.defined()) return add(key, "none", "a table of " + std::to_string(theirs.size()));
        const torch::Tensor t = ours.to(torch::kFloat64).contiguous();
        if (t.numel() != static_cast<int64_t>(theirs.size())) return add(key, std::to_string(t.numel()) + " values", std::to_string(theirs.size()) + " values");
        for (int64_t i = 0; i < t.numel(); ++i) {
            const double a = t[i].item<double>(), b = theirs[static_cast<size_t>(i)].get<double>();
            if (std::fabs(a - b) > 1e-6 * std::fabs(b) + 1e-12)
                return add(key + "[" + std::to_string(i) + "]", json(a).dump(), json(b).dump());
        }
    }
    void rope(const std::string& key, const RopeConfig& r, int64_t rotaryDim, int64_t maxPos, const json& e) {
        eq(key + ".rope_type", r.type, e["rope_type"]);
        const RopeTables t = computeRope(r, rotaryDim, maxPos);
        tensor(key + ".inv_freq", t.invFreq, e["inv_freq"]);
        num(key + ".attention_scaling", t.attentionScaling, e["attention_scaling"], 1e-6);
        if (e.contains("long_inv_freq")) {
            tensor(key + ".long_inv_freq", t.invFreqLong, e["long_inv_freq"]);
            eq(key + ".long_from", t.longFrom, e["long_from"]);
        }
    }
};

Diffs compareCase(const ModelConfig& c, const json& e) {
    Diffs d;
    d.eq("hidden_size", c.hiddenSize, e["hidden_size"]);
    d.eq("vocab_size", c.vocabSize, e["vocab_size"]);
    d.eq("num_layers", c.numLayers, e["num_layers"]);
    d.eq("num_heads", c.numHeads, e["num_heads"]);
    d.eq("num_kv_heads", c.numKvHeads, e["num_kv_heads"]);
    d.eq("head_dim", c.headDim, e["head_dim"]);
    d.eq("intermediate_size", c.intermediateSize, e["intermediate_size"]);
    d.num("norm_eps", c.normEps, e["norm_eps"]);
    d.eq("hidden_act", c.hiddenAct, e["hidden_act"]);
    d.eq("tie_word_embeddings", c.tieWordEmbeddings, e["tie_word_embeddings"]);
    d.eq("q_bias", c.attentionBias, e["q_bias"]);
    d.eq("o_bias", c.oProjBias, e["o_bias"]);
    d.eq("mlp_bias", c.mlpBias, e["mlp_bias"]);
    d.eq("qk_norm", c.qkNorm, e["qk_norm"]);
    d.eq("max_position_embeddings", c.maxPositionEmbeddings, e["max_position_embeddings"]);
    d.eq("parallel_residual", c.parallelResidual, e["parallel_residual"]);
    if (e.contains("swiglu")) {  // gpt-oss's experts
        d.num("swiglu_alpha", c.moe.swigluAlpha, e["swiglu"][0], 1e-12);
        d.num("swiglu_limit", c.moe.swigluLimit, e["swiglu"][1], 1e-12);
    }
    d.optNum("attn_logit_softcap", c.attnLogitSoftcap, e["attn_logit_softcap"]);
    d.optNum("final_logit_softcap", c.finalLogitSoftcap, e["final_logit_softcap"]);
    d.optId("bos_token_id", c.bosTokenId, e["bos_token_id"]);
    d.optId("pad_token_id", c.padTokenId, e["pad_token_id"]);
    d.eq("eos_token_ids", c.eosTokenIds, e["eos_token_ids"]);
    for (int64_t i = 0; i < c.numLayers && i < static_cast<int64_t>(e["scaling"].size()); ++i) {
        const double scaling = c.attentionScaling / (c.scaleByInverseLayer ? static_cast<double>(i + 1) : 1.0);
        d.num("scaling[" + std::to_string(i) + "]", scaling, e["scaling"][static_cast<size_t>(i)], 1e-12);
        d.eq("sliding_window[" + std::to_string(i) + "]", c.slides(i) ? c.slidingWindow : int64_t{0},
             e["sliding_window"][static_cast<size_t>(i)]);
    }
    if (e.contains("rotary_dim")) d.eq("rotary_dim", c.rotaryDim(), e["rotary_dim"]);
    if (e.contains("no_rope") && e["no_rope"].is_array())  // SmolLM3's NoPE blocks
        for (int64_t i = 0; i < c.numLayers && i < static_cast<int64_t>(e["no_rope"].size()); ++i)
            d.eq("no_rope[" + std::to_string(i) + "]", !c.rotates(i), e["no_rope"][static_cast<size_t>(i)]);
    const json& rope = e["rope"];
    if (rope.contains("full_attention") || rope.contains("sliding_attention")) {
        // Gemma 3, OLMo 3: one rotary per layer type (transformers builds only the types layer_types uses)
        if (rope.contains("full_attention")) d.rope("rope.full_attention", c.rope, c.rotaryDim(), c.maxPositionEmbeddings, rope["full_attention"]);
        if (!rope.contains("sliding_attention")) {
        } else if (!c.ropeLocal) {
            d.add("rope.sliding_attention", "none", "a local rotary");
        } else {
            d.rope("rope.sliding_attention", *c.ropeLocal, c.rotaryDim(), c.maxPositionEmbeddings, rope["sliding_attention"]);
        }
    } else if (rope.contains("inv_freq")) {
        d.rope("rope", c.rope, c.rotaryDim(), c.maxPositionEmbeddings, rope);
    }
    return d;
}

/// Cases transformers runs and nnscope refuses on purpose, each with the reason (the refusal must name the file).
const std::map<std::string, std::string>& refusedOnPurpose() {
    static const std::map<std::string, std::string> cases = {
        {"gpt_neox/ignored-sizes",
         "a head_dim key other than hidden_size / num_attention_heads: GPT-NeoX's heads keep their width but transformers "
         "builds the rotary tables from the key and turns int(head_dim * rotary_pct) dimensions; no real checkpoint has "
         "such a key, so nnscope refuses it by name rather than carry a second head width"},
        {"deepseek_v2/class-defaults",
         "num_experts_per_tok null (DeepseekV2Config's default): transformers builds the model and fails in the router's "
         "torch.topk on the first forward pass; nnscope refuses the file by name"},
        {"glm4_moe/class-defaults",
         "head_dim 4096 // 96 = 42 with partial_rotary_factor 0.5 asks to turn 21 dimensions, an odd width: transformers "
         "builds 11 frequencies and turns 22 (no real checkpoint: GLM-4.5 sets head_dim 128); nnscope refuses the odd width "
         "by name"},
    };
    return cases;
}

}  // namespace

class TestConfigDefaults : public QObject {
    Q_OBJECT
private slots:
    /// Every case of the goldens: nnscope's resolved config equals what transformers makes of the same file, or both
    /// refuse it.
    void equalsTransformers_data() {
        QTest::addColumn<int>("index");
        const json& cases = goldens()["cases"];
        for (size_t i = 0; i < cases.size(); ++i)
            QTest::newRow(cases[i]["name"].get<std::string>().c_str()) << static_cast<int>(i);
    }
    void equalsTransformers() {
        QFETCH(int, index);
        const json& k = goldens()["cases"][static_cast<size_t>(index)];
        const json& e = k["expected"];
        const std::string file = k["name"].get<std::string>() + "/config.json";
        const bool refused = e.contains("error") || e.value("bidirectional", false) || refusedOnPurpose().count(k["name"]);
        if (refused) {
            try {
                resolveModelConfig(k["config"], file);
                const std::string why = e.contains("error")                       ? "transformers refuses it: " + e["error"].get<std::string>()
                                        : refusedOnPurpose().count(k["name"]) ? refusedOnPurpose().at(k["name"])
                                                                              : std::string("bidirectional attention");
                QFAIL(("accepted a config nnscope must refuse (" + why + "): " + k["note"].get<std::string>()).c_str());
            } catch (const Error& err) {
                const std::string what = err.what();
                QVERIFY2(what.find(file) != std::string::npos, ("the error does not name the file: " + what).c_str());
            }
            return;
        }
        ModelConfig c;
        try {
            c = resolveModelConfig(k["config"], file);
        } catch (const Error& err) {
            QFAIL(("refused a config transformers loads: " + std::string(err.what())).c_str());
        }
        const Diffs d = compareCase(c, e);
        if (!d.lines.empty()) {
            std::string msg = k["note"].get<std::string>() + ":";
            for (const auto& line : d.lines) msg += "\n    " + line;
            QFAIL(msg.c_str());
        }
    }

    /// tie_word_embeddings true beside a stored lm_head.weight, as transformers 5.23 loads it: a head unlike the embedding
    /// is kept (not tied, with a warning naming the key); a file with the head and no embedding ties the other way. The
    /// logits equal transformers' on both checkpoints.
    void tiedHeadAsTransformers_data() {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<bool>("tied");
        QTest::newRow("head differs: not tied") << "tied-head-differs" << false;
        QTest::newRow("embedding missing: tied to the head") << "tied-embedding-missing" << true;
    }
    void tiedHeadAsTransformers() {
        QFETCH(QString, folder);
        QFETCH(bool, tied);
        const std::string dir = nnscope::test::fixturesDir() + "/config_defaults/" + folder.toStdString();
        SafetensorsFile golden(dir + "/golden_float32.safetensors");
        QCOMPARE(golden.metadata().at("tied"), std::string(tied ? "true" : "false"));  // what transformers did
        auto m = Model::load(dir, nnscope::test::float32());
        QVERIFY(m->config().tieWordEmbeddings);
        QCOMPARE(m->headTied(), tied);
        QCOMPARE(m->lmHead().data_ptr() == m->embedTokens().data_ptr(), tied);
        bool warned = false;
        for (const std::string& w : m->warnings()) warned |= w.find("tie_word_embeddings true") != std::string::npos;
        QCOMPARE(warned, !tied);
        QVERIFY(m->unusedTensors().empty());
        const torch::Tensor logits = m->forward(golden.tensor("input_ids"), {}, nullptr);
        NNSCOPE_COMPARE_TENSORS(logits, golden.tensor("logits"), 1e-4, 1e-5);
    }

    /// The goldens cover every family nnscope registers, each with the smallest config and the class defaults.
    void everyFamilyCovered() {
        std::set<std::string> names;
        for (const json& k : goldens()["cases"]) names.insert(k["name"].get<std::string>());
        for (const Family& f : families()) {
            QVERIFY2(names.count(f.modelType + "/sizes-only"), f.modelType.c_str());
            QVERIFY2(names.count(f.modelType + "/class-defaults"), f.modelType.c_str());
        }
    }
};

NNSCOPE_TEST_SUITE(TestConfigDefaults, "test_config_defaults")
#include "test_config_defaults.moc"
