// SPDX-License-Identifier: MIT
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// Where a value lives: the module that hosts it (DESIGN.md section 1).
enum class Host { Model, Layer, Attention, Mlp };

/// Every value the forward pass can read or edit. The standard values of nnterp's vocabulary come first;
/// the Native* entries are outputs/inputs of the family's own modules (reachable under their native
/// module path, e.g. `layers.3.mlp.up_proj.output`).
enum class Value {
    // root
    Logits, TokenEmbeddings, FinalNormOutput, LmHeadOutput, NextTokenProbs, InputIds, AttentionMask, InputSize,
    // layers[i]
    LayerInput, AttentionNormOutput, LayerMid, MlpNormOutput, MlpInput, LayerOutput,
    // layers[i].self_attn
    AttentionQueries, AttentionKeys, AttentionValues, AttentionScores, AttentionPremix, AttentionOutput,
    AttentionProbabilities, AttentionHeadOutputs,
    // layers[i].mlp
    MlpActivation, MlpNeurons, MlpOutput,
    // layers[i].mlp of a mixture of experts (nnterp's mixture vocabulary): only on the blocks whose MLP has experts
    RouterLogits, ExpertIndices, ExpertWeights, ExpertOutputs, RoutedOutput, SharedExpertOutput,
    // layers[i].self_attn of a multi-head latent attention (DeepSeek V2/V3): the latents and the split heads
    QLatent, KvLatent, QueryNope, QueryRope, KeyRope,
    // native module values (paths come from the family's module names)
    NativeQProjOutput, NativeKProjOutput, NativeVProjOutput, NativeQkvProjOutput, NativeQNormOutput, NativeKNormOutput,
    NativeGateProjOutput, NativeUpProjOutput, NativeActFnInput,
    NativeAttentionOutputNormOutput, NativeMlpOutputNormOutput,  ///< Gemma/OLMo2 post-norms: what the stream receives
    NativeGateUpProjOutput,                                      ///< Phi-3's fused [gate | up]
    /// The norms' scales (1 / RMS or 1 / std per position, float32 [batch, seq]): `layers.3.input_layernorm.scale`,
    /// `norm.scale`. Attribution freezes them (FreezeTaps).
    NativeInputNormScale, NativePostAttentionNormScale, NativeAttentionOutputNormScale, NativeMlpOutputNormScale,
    NativeFinalNormScale,
    /// The pre-attention and pre-MLP norms' output before their gain (and bias), float32 [batch, seq, hidden_size]:
    /// x · scale (RMSNorm), (x - mean(x)) · scale (LayerNorm), with `scale` the value above:
    /// `layers.3.post_attention_layernorm.normalized`. TransformerLens' ln1.hook_normalized / ln2.hook_normalized.
    NativeInputNormNormalized, NativePostAttentionNormNormalized,
    Count
};

constexpr int kNumValues = static_cast<int>(Value::Count);
constexpr int kNumStandardValues = static_cast<int>(Value::NativeQProjOutput);

/// One declaration per value: its name, host, layout with named axes, one-line description and where
/// nnterp reads it inside the attention. The support table, the printout, the diagram labels, `--save` matching and the
/// export metadata are all generated from this table and the family's block description (core/model/block.h).
struct ValueInfo {
    Value id;
    const char* name;         ///< standard name (`attention_queries`); for native values the output/input suffix
    Host host;
    const char* layout;       ///< layout name (Residual, Queries, Pattern, ...)
    std::vector<const char*> axes;  ///< axis names, e.g. {"batch", "num_heads", "seq", "qk_head_dim"}
    const char* description;  ///< what it is, one line (the seeds' words)
    /// Where nnterp reads an attention-interior value inside the forward ("the output of nn_functional_dropout_0 inside
    /// attention_interface_1"); nullptr for a value read at a module's input or output, whose place comes from the
    /// family's block description (core/model/block.h).
    const char* inside;
    bool readOnly = false;    ///< cannot be edited (derived values)
    bool eagerOnly = false;   ///< an attention interior value: transformers has it only under eager attention
};

/// The table entry of `v`.
const ValueInfo& valueInfo(Value v);
/// Every standard value in the order of the seeds' support tables (root, block, attention, MLP).
const std::vector<Value>& standardValues();
/// The mixture-of-experts values (router_logits ... shared_expert_output), in the forward's order: standard values that
/// only a block whose MLP has experts computes (Family::hasValueAt), not part of the seeds' dense support tables.
const std::vector<Value>& mixtureValues();
/// Whether `v` is one of mixtureValues().
bool isMixtureValue(Value v);
/// The multi-head latent attention's values (q_latent, kv_latent, query_nope, query_rope, key_rope), in the forward's
/// order: standard values (nnterp-style names on self_attn) that only a family with latent attention computes.
const std::vector<Value>& latentAttentionValues();
/// Whether `v` is one of latentAttentionValues().
bool isLatentAttentionValue(Value v);
/// The standard value called `name` (e.g. "attention_probabilities"), if any.
std::optional<Value> standardValueByName(const std::string& name);
/// Host names as the seeds print them ("model", "model.layers[i]", ...).
const char* hostPath(Host h);
/// The path segment of a host inside a block: "self_attn." for the attention, "mlp." for the MLP, "" for the block
/// and the root.
const char* hostPrefix(Host h);
/// The layout string with axes, e.g. "Queries [batch num_heads seq qk_head_dim]" ("scalar" for input_size).
std::string layoutString(const ValueInfo& info);

/// A value at one block (layer = -1 for root values).
struct ValueKey {
    Value value;
    int layer = -1;
    bool operator<(const ValueKey& o) const { return value != o.value ? value < o.value : layer < o.layer; }
    bool operator==(const ValueKey& o) const { return value == o.value && layer == o.layer; }
};

}  // namespace nnscope
