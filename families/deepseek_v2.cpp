// SPDX-License-Identifier: MIT
//
// DeepSeek-V2 (DeepseekV2ForCausalLM: DeepSeek-V2, V2-Lite, DeepSeek-Coder-V2).
//
// DeepSeek-V3's multi-head latent attention (families/deepseek_v3.cpp) with the rotary of the original code: each
// adjacent pair (2i, 2i + 1) of the rope parts is a complex number turned by e^(i·position·freq), computed in float32 and
// left interleaved. The mixture from block first_k_dense_replace on (0 by default: every block) has the softmax router
// of DeepseekV2TopkRouter: logits in float32, softmax, the top num_experts_per_tok ("greedy"), or under
// "group_limited_greedy" the top within the topk_group best of n_group groups (a group scored by its largest
// probability); the weights are those probabilities times routed_scaling_factor, never renormalised (norm_topk_prob is
// not read). The shared experts and the dense MLP are biased under mlp_bias.
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family deepseek_v2Family() {
    Family f = llamaFamily();
    f.modelType = "deepseek_v2";
    f.architectures = {"DeepseekV2ForCausalLM"};
    f.title = "DeepSeek-V2";
    f.classPrefix = "DeepseekV2";
    f.summary = "Multi-head latent attention with a complex (adjacent-pair) rotary, and a mixture of experts with a softmax "
                "router, greedy or group-limited, beside shared experts.";
    f.quirks = {"Multi-head latent attention", "Mixture of experts", "Softmax router, greedy or group-limited", "Shared experts",
                "Adjacent-pair rotary"};
    f.description =
        "DeepSeek-V2 (DeepseekV2ForCausalLM).\n\nDeepSeek-V3's tree: self_attn.{q_a_proj, q_a_layernorm, q_b_proj (or q_proj), "
        "kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj}; from block first_k_dense_replace on, mlp is DeepseekV2Moe: gate "
        "(the router), experts (mlp.experts.{e}.gate_proj/up_proj/down_proj) and shared_experts (one gated MLP of "
        "n_shared_experts * moe_intermediate_size neurons, biased under mlp_bias).";
    f.mlpFormulas = {"p = softmax(gate(z)) in float32;  the top num_experts_per_tok of p (group_limited_greedy: within the topk_group best of "
                     "n_group groups, a group scored by its largest p)",
                     "w = p of the chosen · routed_scaling_factor",
                     "mlp(z) = Σ_k w_k · experts[idx_k](z) + shared_experts(z)",
                     "on a dense block: mlp(z) = down_proj(silu(gate_proj(z)) * up_proj(z))"};
    setLatentAttentionModules(f);
    setExpertModules(f);
    setSharedExpertsModules(f);
    f.rotary = RotaryStyle::AdjacentPairs;
    f.rotaryInFloat32 = true;  // apply_rotary_emb: the complex product in float32, cast back once
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's (routed experts + shared experts on a block with "
         "experts), added with nothing in between, so layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Multi-head latent attention",
         "As in DeepSeek-V3: q_latent = q_a_layernorm(q_a_proj(x)) (absent when q_lora_rank is null), query_nope and query_rope "
         "per head; kv_latent = kv_a_layernorm of kv_a_proj_with_mqa's first kv_lora_rank outputs (what the cache keeps) and "
         "key_rope, the rotated rotary key part every head shares; kv_b_proj expands kv_latent into every head's non-rotary "
         "key and value. attention_keys [batch, num_heads, seq, qk_head_dim], attention_values [batch, num_heads, seq, "
         "v_head_dim]. The latents' RMSNorms use eps 1e-6.",
         {"latent_attention", "pattern_softmax"}},
        {"The rotary: complex pairs",
         "query_rope and key_rope turn as complex numbers: dimensions (2i, 2i + 1) are the real and imaginary parts, multiplied "
         "by e^(i·position·freq_i) in float32 and left interleaved. The scores are scaled by qk_head_dim ** -0.5, times mscale² "
         "where a YaRN rotary sets mscale_all_dim.",
         {"rope_kind"}},
        {"The router: softmax, greedy or group-limited",
         "router_logits is mlp.gate's output in float32; its softmax gives each expert a probability. topk_method \"greedy\" "
         "takes the num_experts_per_tok most probable; \"group_limited_greedy\" scores each of n_group groups by its most "
         "probable expert and zeroes the experts outside the topk_group best groups first. expert_indices are in transformers' "
         "order (torch.topk with sorted=False); expert_weights are the chosen probabilities times routed_scaling_factor, never "
         "renormalised (DeepseekV2TopkRouter does not read norm_topk_prob), in float32.",
         {"router_groups"}},
        {"Shared experts and dense first blocks",
         "Every token also goes through mlp.shared_experts (n_shared_experts * moe_intermediate_size neurons, no gate): "
         "shared_expert_output is its output and mlp_output = routed_output + shared_expert_output. The first "
         "first_k_dense_replace blocks (none by default) have a dense MLP of intermediate_size neurons.",
         {"routed_is_weighted_sum"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "DeepseekV2ForCausalLM checkpoints (model_type deepseek_v2) load as deepseek_v2, with the experts stored one tensor per "
         "expert or stacked.",
         {"loads_as"}},
    };
    // DeepseekV2Config's defaults (transformers 5.23 configuration_deepseek_v2.py).
    f.configDefaults = {{"vocab_size", 102400}, {"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
                        {"num_attention_heads", 32}, {"num_key_value_heads", nullptr}, {"hidden_act", "silu"},
                        {"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"pad_token_id", nullptr},
                        {"bos_token_id", 1}, {"eos_token_id", 2}, {"tie_word_embeddings", false}, {"rope_theta", 10000.0},
                        {"attention_bias", false}, {"mlp_bias", false}, {"first_k_dense_replace", 0}, {"kv_lora_rank", 512},
                        {"q_lora_rank", 1536}, {"n_group", nullptr}, {"n_routed_experts", 64}, {"n_shared_experts", 2},
                        {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64}, {"routed_scaling_factor", 1.0},
                        {"topk_group", nullptr}, {"topk_method", "greedy"}, {"norm_topk_prob", false}, {"v_head_dim", 128},
                        {"num_experts_per_tok", nullptr}, {"moe_intermediate_size", 1407}};
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readDeepSeekConfig(j, file, fam, /*ropeInterleaveKey=*/false, RouterKind::SoftmaxGroupGreedy, c);
    };
    return f;
}

}  // namespace nnscope
