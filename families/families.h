// SPDX-License-Identifier: MIT
// What family files share. Each file defines `Family <name>Family()`; the build registers every such function it finds
// in families/*.cpp (core/CMakeLists.txt writes the list registry.cpp includes).
#pragma once
#include "core/model/family.h"

namespace nnscope {

/// Reads a Llama-like config whose sliding_window, when set, applies to every layer (Mistral, Phi-3: transformers picks
/// the sliding mask for the whole model from config.sliding_window). Throws nnscope::Error naming the key.
void readLlamaLikeSlidingConfig(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c);

/// Reads the sliding window of Qwen2 and Qwen3 (Qwen2Config / Qwen3Config.__post_init__ in transformers 5.23): off
/// unless use_sliding_window is true; then sliding_window keys for the layers layer_types marks "sliding_attention",
/// or, without layer_types, for the layers from max_window_layers (default 28) on. Sets c.slidingWindow and
/// c.layerSliding [num_hidden_layers]. Throws nnscope::Error naming config.json and the key: a bad layer_types, a
/// sliding_window of 0 or less, or a layer typed "sliding_attention" while use_sliding_window is false (transformers
/// fails on that checkpoint at its first forward pass).
void readQwenSlidingWindow(const nlohmann::json& j, const std::string& file, ModelConfig& c);

/// Reads a mixture of experts' keys into c.moe (families/qwen3_moe.cpp): num_experts (or num_local_experts, the name
/// transformers 5.23 saves), num_experts_per_tok, moe_intermediate_size (`expertSizeKey`), norm_topk_prob, and which
/// blocks have experts: block i does unless it is in mlp_only_layers, when (i + 1) % decoder_sparse_step == 0 (keys a
/// family lacks are passed empty: Mixtral's every block has experts). Throws nnscope::Error naming the key: a count that
/// is not positive, top_k above num_experts, a decoder_sparse_step below 1, an mlp_only_layers entry outside the blocks.
void readMoeConfig(const nlohmann::json& j, const std::string& file, const std::string& expertSizeKey, bool sparseStepKeys, ModelConfig& c);

/// Marks `f` a mixture of experts (families/qwen3_moe.cpp) with the module names the hub's files use: the router
/// mlp.gate (nnterp's "router") and mlp.experts, each expert's projections named `gateProj`, `upProj` and `downProj`
/// (gate_proj / up_proj / down_proj; Mixtral's w1 / w3 / w2).
void setExpertModules(Family& f, const char* gateProj = "gate_proj", const char* upProj = "up_proj", const char* downProj = "down_proj");
/// Reads rotary parameters keyed by layer type, as Gemma3TextConfig and Olmo3Config.convert_rope_params_to_dict do in
/// transformers 5.23: rope_parameters.full_attention into c.rope, rope_parameters.sliding_attention into c.ropeLocal
/// ({"rope_type": "default"} where absent; a flat rope_parameters is not read); a legacy rope_scaling is merged into the
/// full-attention dict; a dict without rope_theta takes the top-level rope_theta (default `fullTheta`) for the full
/// layers and the top-level `localThetaKey` (default `localTheta`) for the sliding ones. With `localThetaKey` null the
/// sliding layers' theta is `localTheta` whatever the top level says (Olmo3Config pops rope_theta for the full dict
/// first). Throws nnscope::Error naming the key: a per-type entry that is not an object, a rope_scaling with nothing to
/// merge into, what cfg::readRope refuses.
void readRopeByLayerType(const nlohmann::json& j, const std::string& file, double fullTheta, const char* localThetaKey,
                         double localTheta, ModelConfig& c);

/// Gemma 3's text model (model_type gemma3_text, families/gemma2.cpp), which the multimodal wrapper (families/gemma3.cpp)
/// runs as its language model.
Family gemma3Family();

/// Reads the DeepSeek-style router's keys into c.moe (families/glm4_moe.cpp): n_routed_experts, num_experts_per_tok,
/// moe_intermediate_size, n_shared_experts (one ungated shared MLP of n_shared_experts * moe_intermediate_size
/// neurons), routed_scaling_factor, first_k_dense_replace (blocks before it are dense), and by `kind`:
/// SigmoidGroupTopK (DeepSeek V3, GLM-4.5) norm_topk_prob, n_group, topk_group and the correction bias;
/// SoftmaxGroupGreedy (DeepSeek V2) topk_method, and n_group / topk_group under "group_limited_greedy". Throws
/// nnscope::Error naming the key: a count missing or out of range, groups that do not divide the experts, a top k larger
/// than the searched groups hold, an unknown topk_method.
void readGroupRouterConfig(const nlohmann::json& j, const std::string& file, RouterKind kind, ModelConfig& c);

/// Names the DeepSeek-style shared experts: mlp.shared_experts (nnterp's shared_expert) with gate_proj, up_proj and
/// down_proj, and no gate of their own.
void setSharedExpertsModules(Family& f);

/// Reads the keys of DeepSeek's multi-head latent attention (families/deepseek_v3.cpp) into c.mla, and sets head_dim
/// to v_head_dim and the attention's scaling to qk_head_dim ** -0.5, times mscale² under a scaled rotary with
/// mscale_all_dim (yarn_apply_mscale). Throws nnscope::Error naming the key: a width missing or out of range, or
/// num_key_value_heads other than num_attention_heads (every head has its own expanded key).
void readLatentAttentionConfig(const nlohmann::json& j, const std::string& file, bool ropeInterleaveKey, ModelConfig& c);

/// A DeepSeek V2/V3 config.json: num_key_value_heads defaulting to num_attention_heads (DeepseekV3Config's default),
/// Llama's keys, the latent attention's (readLatentAttentionConfig) and the `router` kind's (readGroupRouterConfig).
/// Throws nnscope::Error naming the key, as those readers do.
void readDeepSeekConfig(const nlohmann::json& j, const std::string& file, const Family& fam, bool ropeInterleaveKey, RouterKind router,
                        ModelConfig& c);

/// Marks `f` a multi-head latent attention family (DeepSeek V2/V3): its module names (q_proj / q_a_proj, q_a_layernorm,
/// q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj), no k_proj or v_proj.
void setLatentAttentionModules(Family& f);
}  // namespace nnscope
