// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/config.h"
#include "core/model/family.h"
#include "core/model/rope.h"
#include "core/io/safetensors.h"
#include "core/model/taps.h"
#include "core/model/weights.h"
#include "core/io/tokenizer.h"

#include <torch/types.h>

#include <array>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

namespace nnscope {

/// How to load a checkpoint.
struct LoadOptions {
    /// The dtype the forward pass computes in: float32 or bfloat16 (computed the way transformers does: norm
    /// statistics, softmax and ERNIE's rotary in float32, everything else in bfloat16). nullopt ("auto", the
    /// default): the checkpoint's own dtype where this CPU computes it natively, else float32 with a note in
    /// Model::notes(), refused when that float32 copy would not fit in memory (resolveComputeDtype, core/model/compute_dtype.h).
    std::optional<torch::ScalarType> dtype;
    /// Load the tokenizer too (a folder without one still loads; encode() then throws).
    bool loadTokenizer = true;
    /// Where the weights live and the forward computes: the CPU (the default), or any device libtorch has (the `meta`
    /// device computes shapes only: the tests load on it to find a factory that forgets the model's device).
    torch::Device device = torch::kCPU;

    LoadOptions& withDtype(torch::ScalarType d) { dtype = d; return *this; }
    LoadOptions& withDtype(std::optional<torch::ScalarType> d) { dtype = d; return *this; }
    LoadOptions& withTokenizer(bool t) { loadTokenizer = t; return *this; }
    LoadOptions& withDevice(torch::Device d) { device = d; return *this; }
};

/// Whether a block whose attention scores and probabilities no tap needs (Taps::needsAttentionPattern) computes its
/// attention with torch::scaled_dot_product_attention instead of the eager matrices: on libtorch >= 2 (the wheel build),
/// unless the environment sets NNSCOPE_EAGER_ATTENTION (to anything but 0; read once). False on libtorch 1.13.
bool scaledDotProductAttentionEnabled();

/// Parses a dtype name ("float32", "f32", "bfloat16", "bf16"). Throws nnscope::Error for others.
torch::ScalarType parseDtype(const std::string& name);
/// "float32" / "bfloat16".
std::string dtypeName(torch::ScalarType t);
/// Parses --dtype: "auto" (nullopt: LoadOptions::dtype's default) or a name parseDtype accepts. Throws nnscope::Error.
std::optional<torch::ScalarType> parseDtypeRequest(const std::string& name);
/// "auto", "float32" or "bfloat16": what parseDtypeRequest reads back.
std::string dtypeRequestName(const std::optional<torch::ScalarType>& requested);

/// One module's parameters, in the compute dtype (undefined where the family or config has none). Projections are
/// nn.Linear's [out, in] (a Conv1D checkpoint's are transposed views); alphaP, alphaN, beta, eps are Apertus' xIELU
/// scalars (raw, before softplus); sinks gpt-oss's attention sinks [num_heads] (on self_attn). `experts`: an expert
/// projection's per-expert weights (Module::ExpertGateProj, ExpertUpProj, ExpertDownProj; read them through
/// Model::expertWeight).
struct ModuleWeights {
    torch::Tensor weight, bias, alphaP, alphaN, beta, eps, sinks;
    ExpertWeights experts;
    torch::Tensor correctionBias;  ///< a router's e_score_correction_bias [num_experts], float32 whatever the compute dtype

    torch::Tensor& operator[](Param p);
    const torch::Tensor& operator[](Param p) const { return const_cast<ModuleWeights&>(*this)[p]; }
};

/// The parameters of a block (or of the model's root modules), indexed by module: `layer[Module::QProj].weight`.
struct LayerWeights {
    std::array<ModuleWeights, kNumModules> modules;

    ModuleWeights& operator[](Module m) { return modules[static_cast<size_t>(m)]; }
    const ModuleWeights& operator[](Module m) const { return modules[static_cast<size_t>(m)]; }
};

/// The keys and values of the tokens a single-row pass has seen, per block, so that generation feeds one new token
/// at a time (HF's DynamicCache). keys[i], values[i]: [1, num_kv_heads, length, head_dim] in the compute dtype,
/// after the rotary embedding and before repeat_kv, exactly what the full pass's attention would read. Under multi-head
/// latent attention (DeepSeek) keys[i] holds the rotated shared key part [1, 1, length, qk_rope_head_dim] and values[i]
/// the normed key/value latent [1, 1, length, kv_lora_rank], as transformers' cache does.
struct KvCache {
    std::vector<torch::Tensor> keys, values;
    int64_t length = 0;  ///< tokens cached (the next token's position)
};

/// A loaded checkpoint: config, family, weights (memory-mapped; converted only when the compute dtype
/// differs from the stored one) and tokenizer. Immutable after load, so one Model can serve several
/// threads' forward passes.
class Model {
public:
    /// Opens the checkpoint folder `dir`: config.json (family found by model_type / architectures),
    /// the safetensors weights (every tensor checked against the shape the config implies), the tokenizer.
    /// Nothing is allocated from config sizes before the weights' shapes have confirmed them.
    /// Throws nnscope::Error naming the file and the problem; harmless findings go to warnings().
    static std::shared_ptr<const Model> load(const std::string& dir, const LoadOptions& options = {});
    /// A model from tensors in memory, named as a checkpoint of the family names them (e.g.
    /// "model.layers.0.self_attn.q_proj.weight"), with `config` as config.json would hold it. The same checks as a
    /// folder: every tensor the family reads (weightSchema) must be present with the shape the config implies.
    /// `label` names the model in messages. No tokenizer. Tensors that require grad keep it (the demo trainer
    /// differentiates through forward()). Throws nnscope::Error.
    static std::shared_ptr<const Model> fromTensors(const nlohmann::json& config, std::map<std::string, torch::Tensor> tensors,
                                                    const LoadOptions& options = {}, const std::string& label = "(in memory)");

    /// A model without weights, for browsing a trace file (core/io/tracefile.h): `config` as config.json holds it (the
    /// family and every size), `dtype` the one the trace computed in, and the tokenizer of `tokenizerDir` where it is
    /// not empty and holds one. forward(), forwardCached(), projectOnVocab(), finalNorm() and the weight accessors throw
    /// nnscope::Error saying so. `label` is its dir() (the trace file). Throws nnscope::Error on a config it cannot read.
    static std::shared_ptr<const Model> withoutWeights(const nlohmann::json& config, const std::string& label,
                                                       torch::ScalarType dtype = torch::kFloat32, const std::string& tokenizerDir = "");
    /// False for a model made by withoutWeights.
    bool hasWeights() const { return store_ != nullptr; }

    const std::string& dir() const { return dir_; }
    const ModelConfig& config() const { return config_; }
    const Family& family() const { return *family_; }
    /// Whether this model computes value `v`: the family's block table for this config (Family::hasValue), and later
    /// whatever is attached to the loaded model. `whyNot` gets the reason when it does not.
    bool hasValue(Value v, std::string* whyNot = nullptr) const { return family_->hasValue(v, config_, whyNot); }
    /// Whether block `layer` computes `v` (a mixture's values only on a block with experts: Family::hasValueAt).
    bool hasValueAt(Value v, int layer, std::string* whyNot = nullptr) const { return family_->hasValueAt(v, config_, layer, whyNot); }
    torch::ScalarType dtype() const { return dtype_; }
    /// The device of the weights and of every tensor the forward makes (LoadOptions::device).
    torch::Device device() const { return device_; }
    /// The compute dtype on the model's device: what every factory inside the forward is given.
    torch::TensorOptions options() const { return torch::TensorOptions().dtype(dtype_).device(device_); }
    /// The tokenizer, or nullptr when the folder has none (tokenizerError() says why).
    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    const std::string& tokenizerError() const { return tokenizerError_; }
    /// What load found wrong but harmless, one sentence each naming the file: stored tensors the model never reads
    /// (fewer layers in config.json than stored, another model_type), index entries that do not match the shards
    /// for such tensors. The command line prints them on stderr, the window in its status bar.
    const std::vector<std::string>& warnings() const { return warnings_; }
    /// What load chose that the user should know, one sentence each naming the folder: a bfloat16 checkpoint computing
    /// in float32 on a CPU without native bfloat16 (LoadOptions::dtype "auto"). Printed once, as warnings() are.
    const std::vector<std::string>& notes() const { return notes_; }
    const WeightStore& weights() const { return (requireWeights(), *store_); }
    const LayerWeights& layer(int i) const { return (requireWeights(), layers_.at(static_cast<size_t>(i))); }
    /// The root modules' parameters: embed_tokens, GPT-2's position embeddings, the final norm, lm_head.
    const LayerWeights& root() const { return (requireWeights(), root_); }
    const torch::Tensor& embedTokens() const { return root()[Module::EmbedTokens].weight; }
    /// GPT-2's learned position embeddings (wpe), [max_position_embeddings, hidden_size]; undefined elsewhere.
    const torch::Tensor& positionEmbeddings() const { return root()[Module::PositionEmbeddings].weight; }
    /// lm_head's weight [vocab_size, hidden_size] (embed_tokens' when tied).
    const torch::Tensor& lmHead() const { return root()[Module::LmHead].weight; }
    /// The final norm's weight [hidden_size] and bias (undefined where the family's norm has none), compute dtype.
    const torch::Tensor& finalNormWeight() const { return root()[Module::Norm].weight; }
    const torch::Tensor& finalNormBias() const { return root()[Module::Norm].bias; }
    /// Expert `expert`'s projection `m` of block `layer`, nn.Linear's weight [out, in] in the compute dtype: a view of the
    /// mapped file (or of its converted copy) where the file stores the experts in float, dequantized from the MXFP4 blocks
    /// and scales of this expert alone where it packs them (nothing else is dequantized). m: ExpertGateProj, ExpertUpProj,
    /// ExpertDownProj; on gpt-oss (ExpertMlp::ClampedSwiGlu) ExpertGateProj is the interleaved gate_up projection
    /// [2 · intermediate_size, hidden_size] and there is no ExpertUpProj. Throws nnscope::Error for a block without
    /// experts, a projection it lacks, or an expert outside [0, num_experts).
    torch::Tensor expertWeight(int layer, Module m, int64_t expert) const;
    /// That projection's bias [out] (gpt-oss), undefined where the experts have none.
    torch::Tensor expertBias(int layer, Module m, int64_t expert) const;
    /// Whether lm_head is embed_tokens' matrix (tie_word_embeddings and no lm_head.weight stored).
    bool headTied() const { return tied_; }
    const RopeTables& rope() const { return rope_; }
    /// Checkpoint tensors the model does not read (listed at load; transformers warns about them too).
    const std::vector<std::string>& unusedTensors() const { return unused_; }

    /// The forward pass of the family's decoder, written once (HF's modeling_<family>.py order).
    /// inputIds: int64 [batch, seq]; attentionMask: int64 [batch, seq] (1 = token, 0 = left padding) or undefined
    /// (all ones). Every value is passed through `taps` where it is computed (may be nullptr).
    /// Returns the logits [batch, seq, vocab_size] in the compute dtype. Must run under c10::InferenceMode or
    /// torch::NoGradGuard. Throws nnscope::Error on bad input shapes or ids, nnscope::Cancelled on cancel.
    torch::Tensor forward(const torch::Tensor& inputIds, const torch::Tensor& attentionMask, Taps* taps) const;
    /// The same pass for one unpadded row continuing what `cache` holds: inputIds int64 [1, seq] sit at positions
    /// cache.length ... cache.length + seq - 1, attend to the cached tokens and themselves, and are appended to the
    /// cache. Returns the logits [1, seq, vocab_size] of the new tokens (equal to the full pass's last seq rows, up
    /// to float rounding). With `lastOnly` only the last new token's logits are computed ([1, 1, vocab_size]): what
    /// generation reads, without the vocab_size x hidden_size product for every prompt token. Throws nnscope::Error on
    /// a batch of more than one row or a cache of another model.
    torch::Tensor forwardCached(const torch::Tensor& inputIds, KvCache& cache, bool lastOnly = false) const;

    /// The logit lens: lm_head(norm(hidden)), hidden [..., hidden_size] -> [..., vocab_size] (compute dtype). No final
    /// logit soft-capping (Gemma 2), as nnterp's project_on_vocab.
    torch::Tensor projectOnVocab(const torch::Tensor& hidden) const;
    /// The final norm alone (what lm_head reads), [..., hidden_size].
    torch::Tensor finalNorm(const torch::Tensor& hidden) const;

    /// Position ids of a left-padded batch: cumsum(mask) - 1, clamped at 0 on the padding, so each row's real
    /// tokens sit at 0, 1, 2, ... as when the prompt runs alone (generate()'s rule). [batch, seq] int64.
    static torch::Tensor positionIds(const torch::Tensor& attentionMask);
    /// The additive attention mask [batch, 1, query, key] in `dtype`: 0 where key <= query and the key is
    /// not padding, finfo(dtype).min elsewhere (transformers' eager_mask).
    static torch::Tensor causalMask(const torch::Tensor& attentionMask, torch::ScalarType dtype);
    /// The same mask for a sliding-window layer: also finfo.min where query - key >= `window` (transformers'
    /// sliding_window_overlay).
    static torch::Tensor slidingCausalMask(const torch::Tensor& attentionMask, torch::ScalarType dtype, int64_t window);

private:
    /// Block `layer`'s stored experts of projection `m`, after expertWeight's checks of `layer` and `expert` (what
    /// expertBias reads without dequantizing the weight).
    const ExpertWeights& expertWeights(int layer, Module m, int64_t expert) const;
    /// x [n, in] · expertWeight(layer, m, expert)ᵀ -> [n, out] in x's dtype, without a bias (gpt-oss's experts, which add
    /// theirs as a step of its own). On the CPU the product sums in float32 and rounds once, with MXFP4 weights
    /// dequantized straight to float32, so that a packed checkpoint and its float twin compute the same bits.
    torch::Tensor expertProduct(int layer, Module m, int64_t expert, const torch::Tensor& x) const;
    Model() = default;
    /// Throws nnscope::Error when the model has no weights (withoutWeights).
    void requireWeights() const;
    /// Reads every tensor of the schema of `config` (resolved once from `raw`, config.json, by resolveModelConfig) from
    /// `store` and sets up the rotary tables.
    static std::shared_ptr<Model> build(ModelConfig config, const Family& family, const nlohmann::json& raw,
                                        const std::string& configFile, std::unique_ptr<WeightStore> store, const LoadOptions& options);
    /// What an additive mask [b, 1, query, key] allows, where a fused kernel can do without it.
    enum class MaskForm {
        Explicit,  ///< anything else (left padding, a sliding window shorter than the keys, cached keys with several queries)
        Causal,    ///< exactly the causal mask, as many queries as keys (no padding, no cut-off window)
        Unmasked,  ///< every key for every query (one query after the cache, its window covering every key)
    };
    /// What the attention of one block needs besides its input: rotary cos/sin, the additive mask and its form. The eager
    /// attention always adds `mask`; scaled_dot_product_attention (libtorch >= 2) takes is_causal or no mask where `form`
    /// allows, as transformers' sdpa_attention_forward does (its causal skip: half the scores of a prompt not computed).
    struct BlockInputs {
        torch::Tensor cos, sin, mask;
        MaskForm form = MaskForm::Explicit;
    };
    /// Throws nnscope::Error naming the first id outside [0, vocab_size).
    void checkTokenIds(const torch::Tensor& inputIds) const;
    /// A norm of `kind` over the last axis of x [..., dim] with module `mw`'s weight and bias. Where `taps` and
    /// `scaleValue` are given, the scale (1 / RMS, or 1 / standard deviation for a LayerNorm; float32 [...]) goes through
    /// taps->tap(scaleValue, layer, ...) before it is applied, so a Taps can read it or freeze it. For the pre-attention and
    /// pre-MLP norms (scaleValue Native{Input,PostAttention}NormScale) the output before the gain, x · scale or
    /// (x - mean) · scale (float32 [..., dim]), goes through taps->tap(Native*NormNormalized, layer, ...) next.
    torch::Tensor norm(const torch::Tensor& x, const ModuleWeights& mw, NormKind kind, Taps* taps = nullptr,
                       Value scaleValue = Value::Count, int layer = -1) const;
    torch::Tensor activation(const torch::Tensor& x, const LayerWeights& lw) const;
    torch::Tensor attention(int layer, const torch::Tensor& hidden, const BlockInputs& in, Taps* taps, KvCache* cache = nullptr) const;
    /// cos and sin [b, 1, s, rotary_dim] of `rope` at `positions` [b, s], in the dtype the family's rotary uses.
    /// `maxPosition` is the largest of them (read on the CPU before the pass: it picks longrope's factors).
    std::pair<torch::Tensor, torch::Tensor> rotaryTables(const RopeTables& rope, const torch::Tensor& positions, int64_t maxPosition) const;
    /// The decoder from the embeddings to the logits (shared by forward and forwardCached). `full`, `sliding`: the additive
    /// masks of full and sliding-window layers and their forms (the sliding mask undefined when no layer slides); decode
    /// fills in their rotary tables.
    torch::Tensor decode(torch::Tensor hiddenStates, const torch::Tensor& positions, int64_t maxPosition, BlockInputs full,
                         BlockInputs sliding, Taps* taps, KvCache* cache, bool lastOnly = false) const;
    torch::Tensor mlp(int layer, const torch::Tensor& hidden, Taps* taps) const;
    /// A block's mixture of experts (Qwen3MoeSparseMoeBlock and its relatives), hidden [b, s, hidden_size] -> the same:
    /// the router's softmax and top-k, only the chosen experts computed (each on the tokens that chose it), their
    /// outputs weighted and summed in transformers' order, plus the gated shared expert where the config has one. Taps
    /// router_logits, expert_indices, expert_weights, expert_outputs, routed_output, shared_expert_output and mlp_output;
    /// an edited expert_indices or expert_weights is what the experts then use. Throws nnscope::Error when an edit leaves
    /// expert_indices outside [0, num_experts) or changes their shape.
    torch::Tensor mixture(int layer, const torch::Tensor& hidden, Taps* taps) const;
    /// One expert's output for its rows x [n, hidden_size] -> [n, hidden_size]: the gated MLP, or gpt-oss's biased
    /// clamped SwiGLU (ExpertMlp::ClampedSwiGlu, GptOssExperts.forward and _apply_gate).
    torch::Tensor expert(int layer, int64_t e, const torch::Tensor& x) const;
    /// Multi-head latent attention up to the eager attention (DeepseekV2Attention / DeepseekV3Attention.forward): the
    /// queries from the query latent (or q_proj), the keys and values expanded from the shared latent by kv_b_proj with the
    /// shared rotary key part, the rotary on the rope parts only. hidden [b, s, hidden_size] -> query [b, num_heads, s,
    /// qk_head_dim], key [b, num_heads, t, qk_head_dim], value [b, num_heads, t, v_head_dim] (t: s, or the cached length
    /// plus s). Taps q_latent (or q_proj's output), kv_latent, query_nope, query_rope, key_rope, then attention_queries,
    /// attention_keys and attention_values. `cache` keeps key_rope [1, 1, t, qk_rope_head_dim] in `keys` and kv_latent
    /// [1, 1, t, kv_lora_rank] in `values`, as transformers' cache does.
    std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> latentAttentionInputs(int layer, const torch::Tensor& hidden, const BlockInputs& in,
                                                                                Taps* taps, KvCache* cache) const;
    /// The latents' RMSNorm (q_a_layernorm, kv_a_layernorm) with MlaConfig::latentNormEps, [..., width] -> the same.
    torch::Tensor latentNorm(const torch::Tensor& x, const ModuleWeights& mw) const;
    /// down(act(x · gateᵀ) * (x · upᵀ)) with the block's activation, no biases (one expert, or the shared expert).
    torch::Tensor gatedMlp(const torch::Tensor& x, const torch::Tensor& gateW, const torch::Tensor& upW, const torch::Tensor& downW,
                           const LayerWeights& lw) const;
    /// embed_tokens' output [b, s, hidden_size] (Gemma's scale included).
    torch::Tensor embed(const torch::Tensor& inputIds) const;
    torch::Tensor applyRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) const;

    /// Destroyed last, after the weights: gives the CPU allocator's kept blocks back (releaseKeptCpuBlocks,
    /// core/model/allocator.h), the weights' own among them, so that closing a model returns its memory.
    struct ReleasesKeptCpuBlocks {
        ~ReleasesKeptCpuBlocks();
    } releasesKeptCpuBlocks_;
    std::string dir_;
    ModelConfig config_;
    const Family* family_ = nullptr;
    torch::ScalarType dtype_ = torch::kFloat32;
    torch::Device device_ = torch::kCPU;
    std::unique_ptr<WeightStore> store_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string tokenizerError_;
    std::vector<std::string> warnings_;
    std::vector<std::string> notes_;
    LayerWeights root_;
    bool tied_ = false;
    std::vector<LayerWeights> layers_;
    RopeTables rope_, ropeLocal_;
    std::vector<std::string> unused_;
};

}  // namespace nnscope
