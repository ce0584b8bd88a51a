// SPDX-License-Identifier: MIT
#pragma once
#include "config.h"
#include "values.h"

#include <map>
#include <string>
#include <vector>

namespace nnscope {

/// The norm a family uses for the stream (and, where it has them, for q/k norms). RMSNormPlusOne is Gemma's:
/// x * rsqrt(mean(x²) + eps) * (1 + weight), all in float32 and cast back at the end (Gemma2RMSNorm).
enum class NormKind { RMSNorm, LayerNorm, RMSNormPlusOne };
/// How the rotary embedding pairs dimensions: HF Llama's rotate_half (i with i + d/2) or ERNIE's
/// adjacent pairs (2i with 2i + 1, computed in float32).
enum class RotaryStyle { RotateHalf, AdjacentPairs };
/// Gated MLP: down(act(gate(x)) * up(x)); plain MLP: down(act(up(x))); GatedFused: one gate_up_proj whose output
/// is [gate | up] on the last axis (Phi-3), then as Gated.
enum class MlpKind { Gated, Plain, GatedFused };
/// Separate q/k/v projections; one fused projection whose output is laid out [num_heads, 3, head_dim]
/// (Persimmon, GPT-NeoX); or one fused projection whose output is [q | k | v], all heads of each together
/// (GPT-2's c_attn, Phi-3's qkv_proj).
enum class QkvLayout { Separate, FusedPerHead, FusedContiguous };
/// Where the q/k norms act: on each head over head_dim, either before the heads move to axis 1 (the native value is
/// [batch, seq, heads, head_dim]: Persimmon, Qwen3) or after ([batch, heads, seq, head_dim]: Apertus, Gemma 3); or on
/// the whole projection over num_heads * head_dim before it is cut into heads (OLMo 2). The numbers are the same for
/// both per-head kinds; the tapped native value keeps the module's own layout.
enum class QkNormScope { PerHead, PerHeadTransposed, WholeProjection };
/// How positions enter the model: a rotary embedding inside the attention, or learned absolute position
/// embeddings added to the token embeddings before the first block (GPT-2's wpe).
enum class PositionKind { Rotary, Learned };

/// Where a family's block puts its norms and adds its branches. Llama: pre-norms before the attention and the MLP.
/// Gemma 2/3 add a norm on each branch's output before the add (sandwich); OLMo 2 has only those output norms;
/// GPT-NeoX (under use_parallel_residual, see ModelConfig) adds both branches, computed from the block's input.
struct BlockNorms {
    bool beforeAttention = true;   ///< input_layernorm
    bool beforeMlp = true;         ///< Llama's post_attention_layernorm (Gemma's pre_feedforward_layernorm)
    bool afterAttention = false;   ///< a norm of the attention's output before the add (Gemma/OLMo2 post_attention_layernorm)
    bool afterMlp = false;         ///< a norm of the MLP's output before the add (post_feedforward_layernorm)
};

/// Native weight tensors, named by a template with `{i}` for the block index (llama.cpp's
/// enum-keyed tensor tables). The loader fills in the index; no weight name is built elsewhere.
enum class Weight {
    EmbedTokens, PositionEmbeddings, FinalNorm, FinalNormBias, LmHead,
    InputNorm, InputNormBias, PostAttentionNorm, PostAttentionNormBias,
    AttentionOutputNorm, AttentionOutputNormBias, MlpOutputNorm, MlpOutputNormBias,
    QProj, QProjBias, KProj, KProjBias, VProj, VProjBias, QkvProj, QkvProjBias, OProj, OProjBias,
    QNorm, QNormBias, KNorm, KNormBias,
    GateProj, GateProjBias, UpProj, UpProjBias, GateUpProj, GateUpProjBias, DownProj, DownProjBias,
    ActAlphaP, ActAlphaN, ActBeta, ActEps,
    Count
};

/// Native module roles, for the printout, the support table's "read at" and native value paths.
enum class Module {
    EmbedTokens, Layers, Norm, LmHead,
    SelfAttn, QProj, KProj, VProj, QkvProj, OProj, QNorm, KNorm, AttentionDropout,
    Mlp, GateProj, UpProj, DownProj, ActFn,
    InputNorm, PostAttentionNorm, LayerDropout,
    PositionEmbeddings, AttentionOutputNorm, MlpOutputNorm, GateUpProj,
    Count
};

/// A note of the family page ("what to know before you run"): a title and a paragraph, with an optional
/// check id that core/ runs on the loaded checkpoint (see core/checks.h).
struct FamilyNote {
    std::string title;
    std::string text;
    std::vector<std::string> checks;  ///< ids of the checks that prove this note on the loaded checkpoint
};

/// A family: the data the generic decoder executes, plus the page's words. Written in families/<model_type>.cpp
/// as Llama's description with overrides (see families/llama.cpp).
struct Family {
    std::string modelType;                   ///< config.json "model_type" (registry key)
    std::vector<std::string> architectures;  ///< config.json "architectures" that load as this family
    std::string title;                       ///< page title, e.g. "Arcee AFM"
    std::string classPrefix;                 ///< HF class prefix, e.g. "Arcee" (ArceeForCausalLM, ArceeMLP, ...)
    std::string summary;                     ///< one sentence under the title
    std::vector<std::string> quirks;         ///< chips: "Squared ReLU", "Grouped-query attention", ...
    std::string description;                 ///< the family module's own description (nnterp's docstring role)
    std::vector<std::string> blockFormulas;  ///< "h   = x + self_attn(input_layernorm(x))", ...
    std::vector<FamilyNote> notes;

    // Block features the forward pass reads.
    NormKind norm = NormKind::RMSNorm;
    bool qkNorm = false;                 ///< per-head norms of q and k before the rotary (kind: qkNormKind)
    NormKind qkNormKind = NormKind::RMSNorm;
    RotaryStyle rotary = RotaryStyle::RotateHalf;
    QkvLayout qkv = QkvLayout::Separate;
    MlpKind mlp = MlpKind::Gated;
    QkNormScope qkNormScope = QkNormScope::PerHead;
    PositionKind positions = PositionKind::Rotary;
    BlockNorms blockNorms;
    /// The projections are stored [in, out] (GPT-2's Conv1D) rather than nn.Linear's [out, in].
    bool conv1dWeights = false;
    std::string epsKey = "rms_norm_eps";  ///< config key of the norm epsilon
    /// The base model's prefix of the weight names ("model.", GPT-2's "transformer."): a checkpoint saved from the base
    /// model alone (openai-community/gpt2's own file) stores the names without it, and loads all the same.
    std::string basePrefix = "model.";
    /// Checkpoint tensors the family never reads and transformers ignores without a warning (GPT-2's attn.bias
    /// causal-mask buffers in old files), as name suffixes.
    std::vector<std::string> ignoredTensorSuffixes;

    /// Weight name templates ({i} = block). Empty: the family has no such tensor.
    std::map<Weight, std::string> weights;
    /// Native module names (printout, read-at places, native value paths); several names separated by
    /// '/' mean aliases (first = the standard name, then native: "o_proj/dense").
    std::map<Module, std::string> modules;

    /// config.json keys with the family's defaults (transformers' <Family>Config defaults), merged under
    /// the checkpoint's own keys.
    nlohmann::json configDefaults = nlohmann::json::object();
    /// Step two of reading the config: fill the resolved struct from the merged JSON. Defaults to
    /// readLlamaLikeConfig; a family overrides it only where its keys differ (biases, qk norms).
    void (*readConfig)(const nlohmann::json& merged, const std::string& file, const Family& family, ModelConfig& out) = nullptr;

    /// The weight name for block `layer` (or the root name when layer < 0). Empty when the family lacks it.
    std::string weightName(Weight w, int layer = -1) const;
    /// The standard name of a module role ("o_proj" for "o_proj/dense"); empty if the family lacks it.
    std::string moduleName(Module m) const;
    /// Every name of a module role as the printout shows it ("o_proj/dense").
    std::string moduleLabel(Module m) const;
    /// Native path of a native value, e.g. "layers.3.mlp.up_proj.output".
    std::string nativeValuePath(Value v, int layer) const;
    /// "read at" text with module names substituted.
    std::string readAt(Value v) const;
    /// What the block adds to the stream, as an identity: "layers[i].input + self_attn.attention_output +
    /// mlp.mlp_output == layer_output", or with the branch-output norms where the family has them (Gemma, OLMo 2).
    std::string contributionIdentity() const;
    /// Whether a checkpoint of this family with config `c` computes value `v` (e.g. no q_proj on a fused family, no
    /// q_layernorm under qk_layernorm false), with the reason.
    bool hasValue(Value v, const ModelConfig& c, std::string* whyNot = nullptr) const;
};

/// Llama's config reading (sizes, eps from family.epsKey, rope, attention_bias, mlp_bias).
void readLlamaLikeConfig(const nlohmann::json& merged, const std::string& file, const Family& family, ModelConfig& out);

/// Step two of reading config.json: finds the family of `raw` (familyForConfig) and resolves its keys, merged over
/// the family's defaults, into the struct the forward reads. `file` names config.json in messages. Throws nnscope::Error.
ModelConfig resolveModelConfig(const nlohmann::json& raw, const std::string& file, const Family** family = nullptr);

/// Llama's description: the base every Llama-like family copies and then changes.
Family llamaFamily();

/// The registry, keyed by config.json's own words.
const std::vector<Family>& families();
/// The family of a config.json: by "model_type", then by "architectures". Throws nnscope::Error listing the
/// known families and naming families/<model_type>.cpp when none matches, or when the config names neither.
const Family& familyForConfig(const nlohmann::json& config, const std::string& file);

}  // namespace nnscope
