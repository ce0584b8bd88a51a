// SPDX-License-Identifier: MIT
//
// DeepSeek-V3 (DeepseekV3ForCausalLM: DeepSeek-V3, R1, Kimi-K2-style checkpoints), and the reading of multi-head latent
// attention the DeepSeek families share.
//
// Llama's pre-norm block with two new parts. The attention is multi-head latent attention (DeepseekV3Attention): the
// queries come from a low-rank latent (q_a_proj -> q_a_layernorm -> q_b_proj; q_proj alone when q_lora_rank is null),
// the keys and values from one latent per token every head shares (kv_a_proj_with_mqa's first kv_lora_rank outputs,
// normed by kv_a_layernorm and expanded by kv_b_proj into each head's qk_nope_head_dim key and v_head_dim value
// dimensions) plus one rotary key part of qk_rope_head_dim every head shares; only the rope parts rotate (by adjacent
// pairs under rope_interleave, the result de-interleaved), and the scores are scaled by qk_head_dim ** -0.5 (times
// YaRN's mscale² under mscale_all_dim). The MLP from block first_k_dense_replace on is GLM-4.5's mixture (the same
// router: sigmoid scores, correction bias for the choice, group-limited top-k, routed_scaling_factor 2.5 by default)
// with shared experts; the first blocks are dense.
#include "families/families.h"

#include "core/model/error.h"

#include <cmath>

namespace nnscope {

void readDeepSeekConfig(const nlohmann::json& j, const std::string& file, const Family& fam, bool ropeInterleaveKey, RouterKind router,
                        ModelConfig& c) {
    nlohmann::json k = j;
    if (!k.contains("num_key_value_heads") || k["num_key_value_heads"].is_null()) k["num_key_value_heads"] = k["num_attention_heads"];
    readLlamaLikeConfig(k, file, fam, c);
    readLatentAttentionConfig(k, file, ropeInterleaveKey, c);
    readGroupRouterConfig(k, file, router, c);
}

void readLatentAttentionConfig(const nlohmann::json& j, const std::string& file, bool ropeInterleaveKey, ModelConfig& c) {
    MlaConfig& a = c.mla;
    a.enabled = true;
    auto width = [&](const std::string& key) {
        if (!j.contains(key) || j[key].is_null())
            throw Error(file + ": key \"" + key + "\" is missing or null; multi-head latent attention needs it.");
        const int64_t v = cfg::getInt(j, key, file);
        if (v <= 0 || v > (int64_t{1} << 16))
            throw Error(file + ": key \"" + key + "\" is " + std::to_string(v) + "; it must be between 1 and " +
                        std::to_string(int64_t{1} << 16) + ".");
        return v;
    };
    a.qLoraRank = j.contains("q_lora_rank") && !j["q_lora_rank"].is_null() ? width("q_lora_rank") : 0;
    a.kvLoraRank = width("kv_lora_rank");
    a.qkNopeHeadDim = width("qk_nope_head_dim");
    a.qkRopeHeadDim = width("qk_rope_head_dim");
    a.vHeadDim = width("v_head_dim");
    if (a.qkRopeHeadDim % 2 != 0)
        throw Error(file + ": key \"qk_rope_head_dim\" is " + std::to_string(a.qkRopeHeadDim) + "; the rotary turns pairs, so it must be even.");
    a.ropeInterleave = ropeInterleaveKey && cfg::getBool(j, "rope_interleave", true, file);
    if (c.numKvHeads != c.numHeads)
        throw Error(file + ": num_key_value_heads (" + std::to_string(c.numKvHeads) + ") must equal num_attention_heads (" +
                    std::to_string(c.numHeads) + "): multi-head latent attention expands a key for every head, and transformers "
                    "fails on a config that asks to repeat them.");
    c.headDim = a.vHeadDim;
    // yarn_apply_mscale: qk_head_dim ** -0.5, times mscale² where a scaled rotary sets mscale_all_dim
    double scaling = std::pow(static_cast<double>(c.qkHeadDim()), -0.5);
    if (c.rope.type != "default" && c.rope.mscaleAllDim && *c.rope.mscaleAllDim != 0) {
        if (!c.rope.factor) throw Error(file + ": a " + c.rope.type + " rotary with mscale_all_dim needs its factor.");
        const double mscale = *c.rope.factor <= 1 ? 1.0 : 0.1 * *c.rope.mscaleAllDim * std::log(*c.rope.factor) + 1.0;
        scaling = scaling * mscale * mscale;
    }
    c.attentionScaling = scaling;
}

void setLatentAttentionModules(Family& f) {
    f.latentAttention = true;
    f.dropModule(Module::KProj).dropModule(Module::VProj);
    f.setModule(Module::QAProj, "q_a_proj");
    f.setModule(Module::QALayernorm, "q_a_layernorm");
    f.setModule(Module::QBProj, "q_b_proj");
    f.setModule(Module::KvAProjWithMqa, "kv_a_proj_with_mqa");
    f.setModule(Module::KvALayernorm, "kv_a_layernorm");
    f.setModule(Module::KvBProj, "kv_b_proj");
}

Family deepseek_v3Family() {
    Family f = llamaFamily();
    f.modelType = "deepseek_v3";
    f.architectures = {"DeepseekV3ForCausalLM"};
    f.title = "DeepSeek-V3";
    f.classPrefix = "DeepseekV3";
    f.summary = "Multi-head latent attention (queries and keys/values through low-rank latents, a rotary part shared by every "
                "head) and a mixture of experts with a sigmoid, group-limited router and shared experts; the first blocks stay dense.";
    f.quirks = {"Multi-head latent attention", "Mixture of experts", "Sigmoid router, group-limited top-k", "Shared experts",
                "Dense first blocks"};
    f.description =
        "DeepSeek-V3 (DeepseekV3ForCausalLM).\n\nmodel.{embed_tokens, layers[i].{input_layernorm, self_attn.{q_a_proj, "
        "q_a_layernorm, q_b_proj (or q_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj}, post_attention_layernorm, "
        "mlp}, norm} and lm_head. From block first_k_dense_replace on, mlp is DeepseekV3MoE: gate (weight and "
        "e_score_correction_bias), experts (mlp.experts.{e}.gate_proj/up_proj/down_proj) and shared_experts (one gated MLP of "
        "n_shared_experts * moe_intermediate_size neurons); the first blocks have a dense MLP of intermediate_size neurons.";
    f.mlpFormulas = {"s = sigmoid(gate(z)) in float32;  the top num_experts_per_tok of s + e_score_correction_bias within the topk_group "
                     "best of n_group groups (a group scored by the sum of its two best)",
                     "w = s of the chosen (÷ (their sum + 1e-20) under norm_topk_prob) · routed_scaling_factor",
                     "mlp(z) = Σ_k w_k · experts[idx_k](z) + shared_experts(z)",
                     "on a dense block: mlp(z) = down_proj(silu(gate_proj(z)) * up_proj(z))"};
    setLatentAttentionModules(f);
    setExpertModules(f);
    setSharedExpertsModules(f);
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output (o_proj, biased under attention_bias) and mlp_output the MLP's (routed experts + "
         "shared experts on a block with experts), added with nothing in between, so layers[i].input + attention_output + "
         "mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Multi-head latent attention",
         "q_latent = q_a_layernorm(q_a_proj(x)) [batch, seq, q_lora_rank] (absent when q_lora_rank is null: q_proj alone); "
         "q_b_proj expands it into every head's query, split into query_nope (qk_nope_head_dim) and query_rope "
         "(qk_rope_head_dim, rotated). kv_a_proj_with_mqa gives one latent per token, normed into kv_latent [batch, seq, "
         "kv_lora_rank] (what the cache keeps), and one rotary key part, rotated into key_rope [batch, 1, seq, "
         "qk_rope_head_dim], which every head shares. kv_b_proj expands kv_latent into every head's non-rotary key and its "
         "value: attention_keys = [kv_b_proj's key part | key_rope] per head [batch, num_heads, seq, qk_head_dim], "
         "attention_values [batch, num_heads, seq, v_head_dim]. The latents' RMSNorms use eps 1e-6 whatever rms_norm_eps says.",
         {"latent_attention", "pattern_softmax"}},
        {"The rotary turns the rope parts only",
         "Only query_rope and key_rope turn, at frequencies built for qk_rope_head_dim. Under rope_interleave (the default) the "
         "pairs are adjacent dimensions (2i, 2i + 1) and the rotated part comes out de-interleaved: the even dimensions' results, "
         "then the odd ones'. The scores are scaled by qk_head_dim ** -0.5, times mscale² where a YaRN rotary sets mscale_all_dim.",
         {"rope_kind"}},
        {"The router: sigmoid scores, corrected for the choice only",
         "router_logits is mlp.gate's output in float32. Each expert's score is sigmoid(logit); e_score_correction_bias is added "
         "only to choose: a group of experts scores the sum of its two best corrected scores, and expert_indices are the "
         "num_experts_per_tok best corrected scores inside the topk_group best of n_group groups, in transformers' order "
         "(torch.topk with sorted=False). expert_weights are the chosen experts' uncorrected sigmoid scores, divided by their "
         "sum (+ 1e-20) under norm_topk_prob, times routed_scaling_factor (2.5 by default, so they sum to 2.5): what "
         "multiplies the experts' outputs, in float32.",
         {"router_groups"}},
        {"Shared experts and dense first blocks",
         "Every token also goes through mlp.shared_experts (n_shared_experts * moe_intermediate_size neurons, no gate): "
         "shared_expert_output is its output and mlp_output = routed_output + shared_expert_output. The first "
         "first_k_dense_replace blocks have a dense MLP of intermediate_size neurons.",
         {"routed_is_weighted_sum"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "DeepseekV3ForCausalLM checkpoints (model_type deepseek_v3) load as deepseek_v3, with the experts stored one tensor per "
         "expert or stacked. The multi-token-prediction layer real checkpoints store after the last block "
         "(model.layers.{num_hidden_layers}) is not part of the model: transformers ignores it, nnscope lists it among the "
         "tensors it does not read.",
         {"loads_as"}},
    };
    // DeepseekV3Config's defaults (transformers 5.23 configuration_deepseek_v3.py).
    f.configDefaults = {{"vocab_size", 129280}, {"hidden_size", 7168}, {"intermediate_size", 18432}, {"moe_intermediate_size", 2048},
                        {"num_hidden_layers", 61}, {"num_attention_heads", 128}, {"num_key_value_heads", 128},
                        {"n_shared_experts", 1}, {"n_routed_experts", 256}, {"routed_scaling_factor", 2.5}, {"kv_lora_rank", 512},
                        {"q_lora_rank", 1536}, {"qk_rope_head_dim", 64}, {"v_head_dim", 128}, {"qk_nope_head_dim", 128},
                        {"n_group", 8}, {"topk_group", 4}, {"num_experts_per_tok", 8}, {"first_k_dense_replace", 3},
                        {"norm_topk_prob", true}, {"hidden_act", "silu"}, {"max_position_embeddings", 4096},
                        {"rms_norm_eps", 1e-6}, {"bos_token_id", 0}, {"eos_token_id", 1}, {"pad_token_id", nullptr},
                        {"tie_word_embeddings", false}, {"rope_theta", 10000.0}, {"rope_interleave", true},
                        {"attention_bias", false}};
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readDeepSeekConfig(j, file, fam, /*ropeInterleaveKey=*/true, RouterKind::SigmoidGroupTopK, c);
    };
    return f;
}

}  // namespace nnscope
