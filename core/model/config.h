// SPDX-License-Identifier: MIT
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// Rotary position embedding parameters, resolved from either config style:
/// legacy (`rope_theta`, `rope_scaling: {type|rope_type, factor, ...}`, `partial_rotary_factor` at the top)
/// or current transformers (`rope_parameters: {rope_type, rope_theta, factor, ...}`), following
/// transformers' `standardize_rope_params` (modeling_rope_utils.py).
struct RopeConfig {
    std::string type = "default";  ///< default | linear | yarn | llama3 | longrope
    double theta = 10000.0;        ///< rope_theta, the base of the frequencies
    double partialRotaryFactor = 1.0;  ///< fraction of each head that rotates (Persimmon: 0.5)
    std::optional<double> factor;      ///< linear/yarn/llama3 scale factor
    std::optional<double> attentionFactor;  ///< yarn: multiplies cos and sin (None: derived from factor)
    std::optional<double> betaFast, betaSlow, mscale, mscaleAllDim;  ///< yarn
    bool truncate = true;                                             ///< yarn: floor/ceil the correction range
    std::optional<double> lowFreqFactor, highFreqFactor;             ///< llama3
    std::vector<double> shortFactor, longFactor;                     ///< longrope (Phi-3), rotary_dim / 2 each
    int64_t originalMaxPositionEmbeddings = 0;  ///< yarn/llama3: pretraining context (default: max_position_embeddings)
    std::string sourceStyle;  ///< "rope_parameters", "rope_scaling" or "rope_theta" (which keys were read)
};

/// generation_config.json, as transformers' GenerationConfig reads it (its defaults where a key is absent).
struct GenerationConfig {
    bool present = false;                  ///< the folder has a generation_config.json
    std::vector<int64_t> eosTokenIds;      ///< eos_token_id (one id or a list); empty: config.json's ids apply
    bool doSample = false;                 ///< do_sample: sample instead of taking the argmax
    double temperature = 1.0;              ///< temperature: logits are divided by it before sampling
    int64_t topK = 50;                     ///< top_k: keep the k most probable tokens (0: all)
    double topP = 1.0;                     ///< top_p: keep the smallest set whose probability reaches p (1: all)
    std::optional<int64_t> maxNewTokens;   ///< max_new_tokens
};

/// How a router turns its logits into the chosen experts and their weights.
/// SoftmaxTopK: p = softmax(logits) in float32, the top_k largest p, divided by their sum under norm_topk_prob
/// (Qwen2/3-MoE, OLMoE, and Mixtral, whose renormalised top-k of the softmax equals a softmax over the top-k logits).
/// TopKThenSoftmax: the top_k largest logits, then a softmax over those k alone, in the compute dtype (GptOssTopKRouter:
/// `softmax(topk(logits).values, dim=1, dtype=logits.dtype)`); the weights always sum to 1.
/// SigmoidGroupTopK (DeepseekV3TopkRouter, Glm4MoeTopkRouter): logits in float32, s = sigmoid(logits); the choice reads
/// s + e_score_correction_bias: the experts fall into n_group groups, each group scored by the sum of its two largest
/// corrected scores, and only the topk_group best groups are searched for the top_k; the weights are the uncorrected
/// s of the chosen ones, divided by (their sum + 1e-20) under norm_topk_prob, times routed_scaling_factor.
/// SoftmaxGroupGreedy (DeepseekV2TopkRouter): logits in float32, p = softmax; topk_method "greedy" takes the top_k of
/// p; "group_limited_greedy" scores each of n_group groups by its largest p, zeroes p outside the topk_group best
/// groups, and takes the top_k; the weights are those p times routed_scaling_factor (norm_topk_prob is not read).
enum class RouterKind { SoftmaxTopK, TopKThenSoftmax, SigmoidGroupTopK, SoftmaxGroupGreedy };

/// A mixture of experts in place of some blocks' MLPs (Qwen3MoeSparseMoeBlock and its relatives): num_experts
/// gated MLPs of moe_intermediate_size neurons, a router (mlp.gate, a Linear hidden_size -> num_experts without bias)
/// that picks num_experts_per_tok of them per token, and in Qwen2-MoE a shared expert behind a sigmoid gate.
struct MoeConfig {
    int64_t numExperts = 0;             ///< num_experts (Mixtral: num_local_experts); 0: no block has experts
    int64_t topK = 0;                   ///< num_experts_per_tok: experts each token goes through
    int64_t expertIntermediateSize = 0; ///< moe_intermediate_size (Mixtral: intermediate_size): neurons of one expert
    bool normTopkProb = false;          ///< the chosen experts' probabilities are divided by their sum
    RouterKind router = RouterKind::SoftmaxTopK;
    bool routerBias = false;            ///< the router is a Linear with a bias (gpt-oss: mlp.router.bias)
    /// gpt-oss's clamped SwiGLU (GptOssExperts._apply_gate): gate clamped above at swiglu_limit, up to [-limit, limit],
    /// (up + 1) · gate · sigmoid(swiglu_alpha · gate). Read only by families whose experts are ExpertMlp::ClampedSwiGlu.
    double swigluAlpha = 1.702;
    double swigluLimit = 7.0;
    /// The routing weights multiply the experts' outputs in float32 (Mixtral's router returns them uncast); elsewhere
    /// they are cast to the compute dtype first. The same numbers in float32.
    bool weightsInFloat32 = false;
    int64_t sharedExpertIntermediateSize = 0;  ///< shared_expert_intermediate_size (Qwen2-MoE); 0: no shared expert
    /// The router's groups (n_group) and how many of them the choice searches (topk_group); 1 and 1: no grouping.
    /// SigmoidGroupTopK and SoftmaxGroupGreedy's "group_limited_greedy" only.
    int64_t numGroups = 1, topkGroup = 1;
    /// SoftmaxGroupGreedy: topk_method "group_limited_greedy" (else "greedy").
    bool groupLimited = false;
    /// The routing weights are multiplied by this (routed_scaling_factor; DeepSeek V3 2.5) before they weigh the experts.
    double routedScalingFactor = 1.0;
    /// The router's e_score_correction_bias (float32 [num_experts], mlp.gate.e_score_correction_bias) is added to the
    /// scores for choosing the experts (SigmoidGroupTopK).
    bool correctionBias = false;
    /// The router's linear map runs in float32 (DeepSeek, GLM: F.linear(x.float(), weight.float())), so router_logits
    /// are float32; elsewhere they are in the compute dtype.
    bool routerInFloat32 = false;
    /// Per block, whether its MLP is the mixture (decoder_sparse_step, mlp_only_layers); the others are dense MLPs of
    /// intermediate_size neurons.
    std::vector<bool> layerSparse;
};

/// Multi-head latent attention (DeepseekV2Attention, DeepseekV3Attention): the queries come from a low-rank latent
/// (q_a_proj -> q_a_layernorm -> q_b_proj, or q_proj alone when q_lora_rank is null); the keys and values from one
/// latent per token shared by every head (kv_a_proj_with_mqa's first kv_lora_rank outputs, normed by kv_a_layernorm,
/// expanded per head by kv_b_proj into qk_nope_head_dim key and v_head_dim value dimensions) plus one rotary key part
/// shared by every head (kv_a_proj_with_mqa's last qk_rope_head_dim outputs). Only the qk_rope_head_dim dimensions at
/// the end of each query and key head rotate.
struct MlaConfig {
    bool enabled = false;
    int64_t qLoraRank = 0;      ///< q_lora_rank; 0: null (q_proj hidden_size -> num_heads * qk_head_dim)
    int64_t kvLoraRank = 0;     ///< kv_lora_rank: width of the shared key/value latent
    int64_t qkNopeHeadDim = 0;  ///< qk_nope_head_dim: the non-rotary part of a query/key head
    int64_t qkRopeHeadDim = 0;  ///< qk_rope_head_dim: the rotary part
    int64_t vHeadDim = 0;       ///< v_head_dim: a value head
    /// rope_interleave (DeepSeek V3): the rotary pairs are adjacent dimensions (2i, 2i + 1), and the rotated part comes
    /// out de-interleaved (the even dimensions' results, then the odd ones': apply_rotary_pos_emb_interleave).
    bool ropeInterleave = false;
    /// The latents' RMSNorms (q_a_layernorm, kv_a_layernorm) are built without the config's eps: DeepseekV3RMSNorm's
    /// default 1e-6.
    double latentNormEps = 1e-6;
};

/// The resolved configuration the forward pass reads (step two of reading config.json: step one is the raw
/// JSON, kept in `raw`, with the family's documented defaults filled in for missing keys).
struct ModelConfig {
    nlohmann::json raw;               ///< config.json as written in the folder
    std::vector<std::string> architectures;
    std::string modelType;
    int64_t hiddenSize = 0;          ///< hidden_size: width of the residual stream
    int64_t intermediateSize = 0;    ///< intermediate_size: MLP neurons per block
    int64_t numLayers = 0;           ///< num_hidden_layers
    int64_t numHeads = 0;            ///< num_attention_heads (query heads)
    int64_t numKvHeads = 0;          ///< num_key_value_heads (defaults to num_attention_heads)
    int64_t headDim = 0;             ///< head_dim (defaults to hidden_size / num_attention_heads)
    int64_t vocabSize = 0;           ///< vocab_size: rows of embed_tokens and lm_head
    int64_t maxPositionEmbeddings = 0;
    double normEps = 1e-6;           ///< rms_norm_eps or layer_norm_eps, per the family
    std::string hiddenAct = "silu";  ///< hidden_act: the MLP activation's name (ACT2FN key)
    bool tieWordEmbeddings = false;  ///< lm_head shares embed_tokens' matrix
    bool attentionBias = false;      ///< q/k/v(/o) projections carry biases
    bool oProjBias = false;          ///< o_proj carries a bias
    bool mlpBias = false;            ///< MLP projections carry biases
    bool qkNorm = false;             ///< per-head norms of queries and keys
    std::optional<int64_t> bosTokenId, eosTokenId, padTokenId;  ///< eosTokenId: the first of eosTokenIds
    /// Every id config.json gives as eos_token_id (one id or a list, e.g. Llama 3's [128001, 128008, 128009]).
    std::vector<int64_t> eosTokenIds;
    /// generation_config.json's defaults where the folder has one (Model::load reads it).
    GenerationConfig generation;
    std::string dtype;               ///< torch_dtype / dtype the checkpoint was saved in ("float32", "bfloat16", ...)
    RopeConfig rope;
    /// The rotary of sliding-window layers where it differs from `rope` (Gemma 3's rope_local_base_freq).
    std::optional<RopeConfig> ropeLocal;

    // Attention and readout details that only some families set (defaults are Llama's).
    /// Multiplies q·k: head_dim ** -0.5 by default; Gemma's query_pre_attn_scalar ** -0.5; 1 for GPT-2 without
    /// scale_attn_weights.
    double attentionScaling = 0.0;
    /// GPT-2's scale_attn_by_inverse_layer_idx: block i's scaling is further divided by i + 1.
    bool scaleByInverseLayer = false;
    /// tanh soft-capping of the attention scores before the mask (Gemma 2: attn_logit_softcapping), and of the
    /// logits after lm_head (final_logit_softcapping): x -> cap * tanh(x / cap).
    std::optional<double> attnLogitSoftcap, finalLogitSoftcap;
    /// The token embeddings are multiplied by this (Gemma: sqrt(hidden_size), rounded to the compute dtype).
    double embedScale = 1.0;
    /// Keys a query may see in a sliding-window layer: query - key < slidingWindow. 0: no layer slides.
    int64_t slidingWindow = 0;
    /// Per block, whether it attends through the sliding window (config layer_types "sliding_attention").
    std::vector<bool> layerSliding;
    /// Per block, whether it is a NoPE block: its queries and keys enter the attention without the rotary (SmolLM3's
    /// no_rope_layers entry 0). Empty (every family but SmolLM3): every block turns them.
    std::vector<bool> layerNoRope;
    /// GPT-NeoX's use_parallel_residual: out = x + attn(ln1(x)) + mlp(ln2(x)).
    bool parallelResidual = false;

    /// The mixture of experts, where the family has one (MoeConfig::numExperts 0 otherwise).
    MoeConfig moe;
    /// Multi-head latent attention (DeepSeek V2/V3), where the family has it (MlaConfig::enabled false otherwise).
    MlaConfig mla;

    /// Whether block `layer`'s MLP is a mixture of experts.
    bool sparseMlp(int64_t layer) const {
        return layer >= 0 && layer < static_cast<int64_t>(moe.layerSparse.size()) && moe.layerSparse[static_cast<size_t>(layer)];
    }
    /// Whether some block's MLP is a mixture of experts / some block's is a dense MLP.
    bool anySparseMlp() const {
        for (bool b : moe.layerSparse) if (b) return true;
        return false;
    }
    bool anyDenseMlp() const {
        for (int64_t i = 0; i < numLayers; ++i) if (!sparseMlp(i)) return true;
        return false;
    }

    /// Whether block `layer` attends through the sliding window.
    bool slides(int64_t layer) const {
        return slidingWindow > 0 && layer >= 0 && layer < static_cast<int64_t>(layerSliding.size()) &&
               layerSliding[static_cast<size_t>(layer)];
    }

    /// Whether block `layer` turns its queries and keys with the rotary (false on a NoPE block, see layerNoRope).
    bool rotates(int64_t layer) const {
        return layer < 0 || layer >= static_cast<int64_t>(layerNoRope.size()) || !layerNoRope[static_cast<size_t>(layer)];
    }


    /// Width of the rotating part of a head: int(head_dim * partial_rotary_factor); under latent attention
    /// qk_rope_head_dim, the rotary part of each query head and of the shared key.
    int64_t rotaryDim() const {
        return mla.enabled ? mla.qkRopeHeadDim : static_cast<int64_t>(headDim * rope.partialRotaryFactor);
    }
    /// Width of a query and a key head: head_dim, or under latent attention qk_nope_head_dim + qk_rope_head_dim (while
    /// head_dim is v_head_dim, the width of a value head).
    int64_t qkHeadDim() const { return mla.enabled ? mla.qkNopeHeadDim + mla.qkRopeHeadDim : headDim; }
};

/// Reads `dir/config.json` into JSON. Throws nnscope::Error naming the file when it is missing, not a regular
/// file, larger than 16 MiB, not JSON (nested deeper than 64 levels, a key repeated: core/io/jsonfile.h), or not an
/// object.
nlohmann::json readConfigJson(const std::string& dir);

/// Helpers for reading config keys with messages that name the key and the file.
namespace cfg {
int64_t getInt(const nlohmann::json& j, const std::string& key, const std::string& file);
std::optional<int64_t> optInt(const nlohmann::json& j, const std::string& key, const std::string& file);
double getDouble(const nlohmann::json& j, const std::string& key, const std::string& file);
/// config.json's sliding_window: 0 when absent or null (no window), else a positive number of keys. Throws
/// nnscope::Error naming the key for 0 or a negative window (transformers' masks fail on it; nnscope would compute full
/// attention without a word).
int64_t slidingWindow(const nlohmann::json& j, const std::string& file);
std::optional<double> optDouble(const nlohmann::json& j, const std::string& key, const std::string& file);
bool getBool(const nlohmann::json& j, const std::string& key, bool fallback, const std::string& file);
std::string getString(const nlohmann::json& j, const std::string& key, const std::string& fallback, const std::string& file);
/// Fills the keys shared by every Llama-like family (sizes, eps from `epsKey`, act, tie, bos/eos,
/// rope) into `c` from `j` (the raw config merged over the family defaults). Throws nnscope::Error naming the key
/// for a wrong type, a size that is not positive or beyond nnscope's limits (far above any real model's: they
/// keep products such as num_attention_heads * head_dim and the rotary tables bounded), or a negative eps.
void readCommon(const nlohmann::json& j, const std::string& file, const std::string& epsKey, ModelConfig& c);
/// Refuses a pad_token_id outside the vocabulary (at or past vocab_size, or below -vocab_size), naming the key: the
/// families whose embedding is nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id) cannot be built by
/// transformers from such a config (Phi3Config's default 32000 on a smaller vocabulary is the usual way to get one).
void checkPadTokenId(const ModelConfig& c, const std::string& file);
/// For the families whose heads are hidden_size / num_attention_heads wide whatever config.json says (Persimmon,
/// GPT-NeoX): refuses a `head_dim` key of another width, naming it. transformers still reads that key where it builds
/// the rotary tables (`getattr(config, "head_dim", None)`), so such a file turns another number of dimensions than the
/// heads have (GPT-NeoX) or fails in the first attention (Persimmon).
void checkHeadDimKey(const nlohmann::json& j, const std::string& file, int64_t headDim);
/// For a family whose attention rotates whole heads: its default rotary ignores partial_rotary_factor (the frequencies
/// are built for head_dim, as the family's compute_default_rope_parameters does), so the factor is reset to 1; a scaled
/// rotary (linear, yarn, ...) with a factor below 1 is refused, naming the key, as transformers fails on it (the tables
/// are narrower than the heads).
void wholeHeadRotary(RopeConfig& rope, const std::string& file);
/// Refuses a layer marked "sliding_attention" without a window (sliding_window null or absent, or switched off by
/// use_sliding_window false), naming the keys: transformers' sliding-window mask fails on it.
void checkSlidingLayersHaveWindow(const ModelConfig& c, const std::string& file);
/// config.json's layer_types: per layer, whether it is "sliding_attention" (all false when the key is absent).
/// Throws nnscope::Error naming the key when it is malformed.
std::vector<bool> readLayerTypes(const nlohmann::json& j, const std::string& file, int64_t numLayers);
/// An id or a list of ids (eos_token_id): empty when the key is absent or null. Throws nnscope::Error naming the
/// key for anything else (a negative id, a string).
std::vector<int64_t> optIntList(const nlohmann::json& j, const std::string& key, const std::string& file);
/// Reads generation_config.json's object `j` (named `file` in messages): eos_token_id, do_sample, temperature, top_k,
/// top_p, max_new_tokens. Throws nnscope::Error naming the key and the file for a wrong type or range.
GenerationConfig readGenerationConfig(const nlohmann::json& j, const std::string& file);
/// Resolves the rotary parameters from either config style (see RopeConfig). Throws nnscope::Error for an unknown
/// rope type, missing parameters, rope_theta <= 0 or partial_rotary_factor outside (0, 1].
RopeConfig readRope(const nlohmann::json& j, const std::string& file, int64_t maxPositionEmbeddings);
}  // namespace cfg

}  // namespace nnscope
