// SPDX-License-Identifier: MIT
//
// Llama (LlamaForCausalLM): the description every Llama-like family starts from.
//
// Tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
// mlp.{gate,up,down}_proj}, norm} and lm_head. Pre-norm block with RMSNorm, rotary by rotate_half
// (dimension i turns with i + head_dim/2), grouped-query attention, gated MLP down(act(gate(x)) * up(x)).
#include "families/families.h"

namespace nnscope {

Family llamaFamily() {
    Family f;
    f.modelType = "llama";
    f.architectures = {"LlamaForCausalLM"};
    f.title = "Llama";
    f.classPrefix = "Llama";
    f.summary = "The pre-norm decoder the other families are told against: RMSNorm, rotary by halves, "
                "grouped-query attention and a gated MLP.";
    f.quirks = {"Gated MLP", "Grouped-query attention"};
    f.description =
        "Llama (LlamaForCausalLM).\n\nmodel.{embed_tokens, layers[i].{input_layernorm, self_attn, post_attention_layernorm, mlp}, "
        "norm} and lm_head, the residual added in the block, attention through the shared eager forward. The MLP is gated: "
        "down_proj(act_fn(gate_proj(x)) * up_proj(x)).";
    f.mlpFormulas = {"mlp(z) = down_proj(act_fn(gate_proj(z)) * up_proj(z))"};
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added to the stream with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output holds exactly in float32.",
         {"contribution_identity", "projection_biases"}},
        {"Rotary turns halves",
         "The rotary embedding turns dimension i of each query and key head with dimension i + head_dim/2 (rotate_half), at "
         "frequency rope_theta ** (−2i / head_dim), stretched as rope_scaling says (linear, llama3, yarn) where the config has "
         "one.",
         {"rope_kind"}},
        {"Grouped-query attention",
         "attention_keys and attention_values are read before repeat_kv, [batch, num_kv_heads, seq, head_dim]; an edit to "
         "key/value head j reaches the query heads of its group. The interior values exist in transformers only under "
         "attn_implementation=\"eager\"; nnscope always runs the eager attention.",
         {"gqa_scores", "pattern_softmax"}},
        {"The readout",
         "logits is lm_head's output with no cap or scale, and project_on_vocab(h) = lm_head(norm(h)), so the logit lens at the "
         "last block equals the logits.",
         {"lens_equals_logits", "tied_head"}},
        {"Tokenizer", "The tokenizer prepends its BOS token to every prompt (as tokenizer.json's post-processor, or "
                      "tokenizer.model's add_bos_token, says).", {"bos_prepended"}},
        {"What loads as this family", "LlamaForCausalLM checkpoints (model_type llama) load as llama.", {"loads_as"}},
    };
    f.norm = NormKind::RMSNorm;
    f.rotary = RotaryStyle::RotateHalf;
    f.qkv = QkvLayout::Separate;
    f.mlp = MlpKind::Gated;
    f.epsKey = "rms_norm_eps";
    // The module table: each module under the checkpoint's own name; every tensor name is derived from it
    // ("model.layers.{i}.self_attn.q_proj.weight").
    for (auto [m, name] : {std::pair{Module::EmbedTokens, "embed_tokens"}, {Module::Layers, "layers"}, {Module::Norm, "norm"},
                           {Module::LmHead, "lm_head"}, {Module::SelfAttn, "self_attn"}, {Module::QProj, "q_proj"},
                           {Module::KProj, "k_proj"}, {Module::VProj, "v_proj"}, {Module::OProj, "o_proj"}, {Module::Mlp, "mlp"},
                           {Module::GateProj, "gate_proj"}, {Module::UpProj, "up_proj"}, {Module::DownProj, "down_proj"},
                           {Module::ActFn, "act_fn"}, {Module::InputNorm, "input_layernorm"},
                           {Module::PostAttentionNorm, "post_attention_layernorm"}})
        f.setModule(m, name);
    // LlamaConfig's defaults (transformers configuration_llama.py).
    f.configDefaults = {{"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
                        {"num_attention_heads", 32}, {"hidden_act", "silu"}, {"max_position_embeddings", 2048},
                        {"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false}, {"rope_theta", 10000.0},
                        {"attention_bias", false}, {"mlp_bias", false}, {"bos_token_id", 1}, {"eos_token_id", 2}};
    f.readConfig = readLlamaLikeConfig;
    return f;
}

}  // namespace nnscope
