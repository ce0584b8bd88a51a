// SPDX-License-Identifier: MIT
#pragma once
// The same value under the names of the Python tools researchers use beside nnscope: the TransformerLens hook that
// sees it, and an nnterp snippet that reads it. No Qt here; the pinned cards show both.
#include "core/model/model.h"
#include "core/model/values.h"

#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// Where a value sits in TransformerLens' HookedTransformer: a hook name such as "blocks.3.hook_resid_post".
struct TransformerLensHook {
    std::string name;
    /// TransformerLens keeps the heads on axis 2 ([batch, pos, head_index, d_head]) where nnscope has them on axis 1
    /// ([batch, num_heads, seq, head_dim]): the same numbers with axes 1 and 2 swapped.
    bool headsOnAxis2 = false;
    /// What differs besides the layout ("masked entries are -inf there"), or "".
    std::string note;
};

/// The TransformerLens hook of `key` on `model`, where one holds the same numbers as the value: only for the
/// architectures HookedTransformer loads (Llama, Mistral, Qwen2/3, Gemma 2/3, OLMo 2, GPT-NeoX, GPT-2, Phi-3, Apertus),
/// and only for values that are a hook's tensor there. The mapping (docs/GUI.md, "TransformerLens names"):
///
/// | nnscope | TransformerLens | where it holds |
/// |---|---|---|
/// | token_embeddings | hook_embed | always (GPT-2's positions are hook_pos_embed, added after) |
/// | layer_input | blocks.{i}.hook_resid_pre | always |
/// | layer_mid | blocks.{i}.hook_resid_mid | not under a parallel residual (GPT-NeoX) |
/// | layer_output | blocks.{i}.hook_resid_post | always |
/// | attention_output | blocks.{i}.hook_attn_out | no norm on the attention's output, or OLMo 2 (hooked before it) |
/// | the attention's output norm's output | blocks.{i}.hook_attn_out | Gemma 2/3 (hooked after ln1_post) |
/// | mlp_output | blocks.{i}.hook_mlp_out | no norm on the MLP's output, or OLMo 2 |
/// | the MLP's output norm's output | blocks.{i}.hook_mlp_out | Gemma 2/3 (after ln2_post) |
/// | attention_queries / keys | blocks.{i}.attn.hook_rot_q / hook_rot_k (hook_q / hook_k without rotary) | heads on axis 2 |
/// | attention_values | blocks.{i}.attn.hook_v | heads on axis 2 |
/// | attention_scores | blocks.{i}.attn.hook_attn_scores | masked entries are -inf there |
/// | attention_probabilities | blocks.{i}.attn.hook_pattern | always |
/// | attention_head_outputs, attention_premix | blocks.{i}.attn.hook_z | always |
/// | mlp_neurons | blocks.{i}.mlp.hook_post | always (act(gate)·up, or act(up)) |
/// | mlp_activation | blocks.{i}.mlp.hook_post | only an MLP without a gate |
/// | the activation's input (act_fn.input) | blocks.{i}.mlp.hook_pre | always |
/// | up_proj.output of a gated MLP | blocks.{i}.mlp.hook_pre_linear | separate gate and up projections |
/// | final_norm_output | unembed.hook_in | always |
/// | lm_head_output | unembed.hook_out | always |
/// | logits | unembed.hook_out | without a final logit softcap (Gemma 2's is applied after the hook) |
///
/// None: attention_norm_output, mlp_norm_output and mlp_input (TransformerLens' ln1/ln2.hook_normalized is the stream
/// before the norm's gain, and hook_mlp_in the stream before the norm), input_ids, attention_mask, input_size,
/// next_token_probs, and the projections' own outputs. The numbers are equal under
/// HookedTransformer.from_pretrained_no_processing; the default from_pretrained folds the norms' gains into the next
/// weights and centres the writing weights, which changes the stream and the norms' outputs.
std::optional<TransformerLensHook> transformerLensHook(const Family& family, const ModelConfig& config, const ValueKey& key);

/// The nnterp expression that reads `key` inside a trace: a StandardizedTransformer accessor where one exists
/// (model.layers_output[3], model.attention_probabilities[3], model.mlps_output[3], model.logits, ...), else the
/// value on its module as the nnterp pages write it (model.layers[3].self_attn.attention_queries), or the native
/// module's own output or input (model.layers[3].mlp.up_proj.output).
std::string nnterpExpression(const Family& family, const ValueKey& key);

/// A Python snippet that loads `model` with nnterp, traces `prompts` (one string, or a list for a batch) and saves
/// `key`: the load asks for eager attention where the value is an attention interior value (enable_attention_probs
/// for the pattern). The last line names the value's axes.
std::string nnterpSnippet(const Model& model, const ValueKey& key, const std::vector<std::string>& prompts);

}  // namespace nnscope
