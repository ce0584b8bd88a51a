// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/config.h"
#include "core/model/values.h"

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
/// What one expert of a mixture computes and how the file stores the experts. Gated: down(act(gate(x)) · up(x)) without
/// biases, stored one tensor per expert (mlp.experts.{e}.gate_proj.weight) or stacked as transformers holds them.
/// ClampedSwiGlu (gpt-oss, GptOssExperts): one biased gate_up projection whose output interleaves gate (even columns)
/// and up (odd columns), the clamped SwiGLU (MoeConfig::swigluAlpha / swigluLimit), a biased down projection; stored
/// stacked and transposed, mlp.experts.gate_up_proj [num_experts, hidden_size, 2 · intermediate_size] and
/// mlp.experts.down_proj [num_experts, intermediate_size, hidden_size] with their _bias, or MXFP4-packed
/// (gate_up_proj_blocks / _scales, down_proj_blocks / _scales).
enum class ExpertMlp { Gated, ClampedSwiGlu };

/// Where a family's block puts its norms and adds its branches. Llama: pre-norms before the attention and the MLP.
/// Gemma 2/3 add a norm on each branch's output before the add (sandwich); OLMo 2 has only those output norms;
/// GPT-NeoX (under use_parallel_residual, see ModelConfig) adds both branches, computed from the block's input.
struct BlockNorms {
    bool beforeAttention = true;   ///< input_layernorm
    bool beforeMlp = true;         ///< Llama's post_attention_layernorm (Gemma's pre_feedforward_layernorm)
    bool afterAttention = false;   ///< a norm of the attention's output before the add (Gemma/OLMo2 post_attention_layernorm)
    bool afterMlp = false;         ///< a norm of the MLP's output before the add (post_feedforward_layernorm)
};

/// Native module roles: the module tree every family maps its own names onto (printout, "read at", value paths and the
/// checkpoint's tensor names).
enum class Module {
    EmbedTokens, Layers, Norm, LmHead,
    SelfAttn, QProj, KProj, VProj, QkvProj, OProj, QNorm, KNorm, AttentionDropout,
    Mlp, GateProj, UpProj, DownProj, ActFn,
    InputNorm, PostAttentionNorm, LayerDropout,
    PositionEmbeddings, AttentionOutputNorm, MlpOutputNorm, GateUpProj,
    /// A mixture of experts (the MLP of a sparse block): the router (mlp.gate), the experts' list (mlp.experts), one
    /// expert's gate/up/down projections (stored per expert as mlp.experts.{e}.gate_proj.weight; the native names are
    /// the leaves, Mixtral's w1/w3/w2), the shared expert (Qwen2-MoE's mlp.shared_expert, a gated MLP) with its
    /// projections, and its sigmoid gate (mlp.shared_expert_gate, a Linear hidden_size -> 1).
    Router, Experts, ExpertGateProj, ExpertUpProj, ExpertDownProj, SharedExpert, SharedGateProj, SharedUpProj,
    SharedDownProj, SharedExpertGate,
    /// Multi-head latent attention (DeepSeek V2/V3, MlaConfig): the query latent's down projection, its RMSNorm and its up
    /// projection to every head (q_a_proj, q_a_layernorm, q_b_proj; q_proj alone when q_lora_rank is null), the shared
    /// key/value latent's down projection with the rotary key part (kv_a_proj_with_mqa), its RMSNorm (kv_a_layernorm)
    /// and its up projection to every head's non-rotary key and value (kv_b_proj).
    QAProj, QALayernorm, QBProj, KvAProjWithMqa, KvALayernorm, KvBProj,
    Count
};
constexpr int kNumModules = static_cast<int>(Module::Count);

/// The module whose forward runs module `m`: the model's root (embed_tokens, norm, lm_head, the blocks' list), a block
/// (its norms, self_attn, mlp), the attention (the projections, the q/k norms) or the MLP (its projections, act_fn).
Host moduleHost(Module m);

/// A parameter of a module, named in the checkpoint after the module's path ("...q_proj.weight"): nn.Linear's and the
/// norms' weight and bias, and the four scalars of Apertus' xIELU activation.
/// Sinks: gpt-oss's learned attention sinks, one logit per query head on self_attn ("self_attn.sinks").
/// CorrectionBias: a router's e_score_correction_bias (DeepSeek V3, GLM-4.5), kept in float32 as transformers keeps it.
enum class Param { Weight, Bias, AlphaP, AlphaN, Beta, Eps, Sinks, CorrectionBias, Count };
constexpr int kNumParams = static_cast<int>(Param::Count);
/// The parameter's name in the checkpoint: "weight", "bias", "alpha_p", "alpha_n", "beta", "eps", "sinks",
/// "e_score_correction_bias".
const char* paramName(Param p);

/// One stored tensor of a module: (module, parameter), e.g. {Module::OProj, Param::Bias}.
struct ParamKey {
    Module module;
    Param param = Param::Weight;
};

/// How a module's standard name (nnterp's) relates to the checkpoint's own. Alias: both are module names, and the
/// printout shows "standard/native" (Persimmon's "o_proj/dense"). Rename: nnterp renames the module, so the printout
/// shows the standard name alone, and the native name still reads the same values (Persimmon's final_layernorm is
/// norm). A module whose native name is the standard one has no standard name of its own.
enum class ModuleNaming { Alias, Rename };

/// One module of a family's tree, declared once: the checkpoint's name and, where it differs, nnterp's.
struct ModuleSpec {
    std::string native;    ///< the checkpoint's own name ("dense", "final_layernorm", "c_attn", "h")
    std::string standard;  ///< nnterp's name where it differs ("o_proj", "norm", "layers"); empty: the native one
    ModuleNaming naming = ModuleNaming::Alias;
};

/// A note of the family page ("what to know before you run"): a title and a paragraph, with an optional
/// check id that core/ runs on the loaded checkpoint (see core/pages/checks.h).
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
    /// The MLP's formulas under "The block, in order" ("mlp(z) = down_proj(relu(up_proj(z)) ** 2)"), after the block's
    /// own lines, which blockFormulas (core/model/block.h) generates from the block table.
    std::vector<std::string> mlpFormulas;
    std::vector<FamilyNote> notes;

    // Block features the forward pass reads.
    NormKind norm = NormKind::RMSNorm;
    bool qkNorm = false;                 ///< per-head norms of q and k before the rotary (kind: qkNormKind)
    NormKind qkNormKind = NormKind::RMSNorm;
    /// RMSNorm: the gain multiplies the float32 normed value and the product is cast back once (Olmo2RMSNorm:
    /// `(weight * hidden_states).to(input_dtype)`), rather than multiplying the value cast back first (LlamaRMSNorm:
    /// `weight * hidden_states.to(input_dtype)`). The same numbers in float32; in bfloat16 one rounding fewer.
    bool rmsGainInFloat32 = false;
    RotaryStyle rotary = RotaryStyle::RotateHalf;
    /// The attention rotates the first int(head_dim * partial_rotary_factor) dimensions of each head and passes the rest
    /// (Persimmon, GPT-NeoX, Phi-3). Elsewhere the rotary is built for whole heads: partial_rotary_factor is not read by
    /// the default rotary, and a scaled one that reads it fails in transformers (cfg::wholeHeadRotary).
    bool partialRotary = false;
    /// The rotary's cos/sin stay float32 and the rotation is computed in float32, rounded to the compute dtype once
    /// (ERNIE 4.5's apply_rotary_pos_emb upcasts q and k; OLMo 2's rotary module returns float32 cos/sin, and
    /// `q * cos` promotes). Elsewhere cos/sin are cast to the compute dtype first (`cos.to(dtype=x.dtype)`).
    bool rotaryInFloat32 = false;
    QkvLayout qkv = QkvLayout::Separate;
    MlpKind mlp = MlpKind::Gated;
    QkNormScope qkNormScope = QkNormScope::PerHead;
    PositionKind positions = PositionKind::Rotary;
    BlockNorms blockNorms;
    /// The projections are stored [in, out] (GPT-2's Conv1D) rather than nn.Linear's [out, in].
    bool conv1dWeights = false;
    /// Generation drops the key/value cache once, when the sequence first grows past a longrope checkpoint's
    /// original_max_position_embeddings, and recomputes every position with the long factor (Phi-3:
    /// Phi3ForCausalLM.prepare_inputs_for_generation); other families keep the keys rotated with the short factor.
    bool longRopeRecomputesCache = false;
    /// The family's MLP is a mixture of experts on the blocks config.json says (MoeConfig::layerSparse), a gated MLP
    /// on the others; the router and the experts are in the module table (Module::Router ...).
    bool experts = false;
    /// What each expert computes and how the file stores the experts (ExpertMlp).
    ExpertMlp expertMlp = ExpertMlp::Gated;
    /// Learned attention sinks (gpt-oss): self_attn.sinks [num_heads], one logit per head concatenated to each row of
    /// scores before the softmax and dropped after it, so a row of attention_probabilities sums to 1 minus the sink's
    /// share (GptOss eager_attention_forward).
    bool attentionSinks = false;
    /// The attention is multi-head latent attention (DeepSeek V2/V3: MlaConfig, the modules QAProj ... KvBProj) instead of
    /// q/k/v projections.
    bool latentAttention = false;
    std::string epsKey = "rms_norm_eps";  ///< config key of the norm epsilon
    /// Config keys that switch the projections' biases on, as the family's modeling code reads them: attention_bias
    /// (q/k/v/o) and mlp_bias (the MLP's projections). Empty: the family's modules are built without that bias whatever
    /// config.json says (Mistral and Phi-3 read neither, Qwen 3, OLMo 2 and Gemma no mlp_bias), so the key is not read.
    std::string attentionBiasKey = "attention_bias";
    std::string mlpBiasKey = "mlp_bias";
    std::string actKey = "hidden_act";    ///< config key of the MLP activation (named in messages)
    /// The base model's attribute in the ForCausalLM wrapper, as the tensor names' prefix ("model.", GPT-2's
    /// "transformer.", GPT-NeoX's "gpt_neox."): every module but lm_head sits under it. A checkpoint saved from the base
    /// model alone (openai-community/gpt2's own file) stores the names without it, and loads all the same.
    std::string basePrefix = "model.";
    /// Checkpoint tensors the family never reads and transformers ignores without a warning (GPT-2's attn.bias
    /// causal-mask buffers in old files), as name suffixes.
    std::vector<std::string> ignoredTensorSuffixes;
    /// Other spellings of the tensor names' prefixes, as (the prefix the file uses, the prefix of the family's names): the
    /// checkpoint's tensors are read under the family's names whichever spelling the file has (WeightStore::renamePrefixes).
    /// transformers 5.23 saves Gemma 3's multimodal checkpoints in their original layout, language_model.model.* and
    /// language_model.lm_head, and loads them as model.language_model.* and lm_head (its "llava" conversion mapping).
    std::vector<std::pair<std::string, std::string>> savedPrefixes;
    /// Parts of a multimodal checkpoint nnscope does not compute, as tensor name prefixes (Gemma 3's
    /// "model.vision_tower." and "model.multi_modal_projector."). Their tensors stay in the mapped files: they are never
    /// read or copied, count neither in the checkpoint's dtype nor in its float32 size, and load adds `skippedNote` to
    /// Model::notes() instead of an unread-tensors warning.
    std::vector<std::string> skippedTensorPrefixes;
    /// What the skipped parts mean for the user, one phrase ("vision tower skipped: text prompts only").
    std::string skippedNote;
    /// Whether tensor `name` lies under one of skippedTensorPrefixes.
    bool skipsTensor(const std::string& name) const;

    /// The module table: every module the family's tree has, each once. The checkpoint's tensor names, the printout,
    /// the "read at" places and the native value paths all come from it (tensorName, moduleLabel, moduleNames).
    std::map<Module, ModuleSpec> modules;
    /// Declares module `m` under its checkpoint name `native`, with nnterp's `standard` name where it differs.
    Family& setModule(Module m, std::string native, std::string standard = {}, ModuleNaming naming = ModuleNaming::Alias);
    /// Removes module `m` from the tree (Arcee's MLP has no gate_proj).
    Family& dropModule(Module m);
    bool hasModule(Module m) const { return modules.count(m) != 0; }

    /// config.json keys with the family's defaults (transformers' <Family>Config defaults), merged under
    /// the checkpoint's own keys.
    nlohmann::json configDefaults = nlohmann::json::object();
    /// Step two of reading the config: fill the resolved struct from the merged JSON. Defaults to
    /// readLlamaLikeConfig; a family overrides it only where its keys differ (biases, qk norms).
    void (*readConfig)(const nlohmann::json& merged, const std::string& file, const Family& family, ModelConfig& out) = nullptr;

    /// The checkpoint's module path of `m` in block `layer` (ignored for root modules), built from the native names as
    /// llama.cpp's tn() builds tensor names: basePrefix + layers + ".{i}." + host + "." + module, lm_head outside the base
    /// prefix ("model.layers.3.self_attn.dense", "transformer.h.0.attn.c_attn", "embed_out"). Empty if the family lacks `m`.
    std::string nativeModulePath(Module m, int layer = -1) const;
    /// The checkpoint's tensor name of parameter `key` ("model.layers.3.self_attn.o_proj.bias"); empty if the family
    /// lacks the module.
    std::string tensorName(ParamKey key, int layer = -1) const;
    /// The standard name of a module role ("o_proj" for Persimmon's dense); empty if the family lacks it.
    std::string moduleName(Module m) const;
    /// The module as the printout shows it: "o_proj/dense" for an alias, "norm" for a rename, else its one name.
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
    /// Whether block `layer` of such a checkpoint computes `v`: hasValue, and for a mixture of experts the block's own
    /// kind (the mixture's values only on a block with experts, the dense MLP's interior only on one without).
    bool hasValueAt(Value v, const ModelConfig& c, int layer, std::string* whyNot = nullptr) const;
    /// The checkpoint's tensor name of expert `expert`'s projection `m` (ExpertGateProj, ExpertUpProj, ExpertDownProj)
    /// in block `layer`: "model.layers.0.mlp.experts.3.gate_proj.weight".
    std::string expertTensorName(Module m, int layer, int64_t expert) const;
};

/// Llama's config reading (sizes, eps from family.epsKey, rope, the biases under family.attentionBiasKey and
/// family.mlpBiasKey, pad_token_id inside the vocabulary).
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
