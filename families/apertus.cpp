// SPDX-License-Identifier: MIT
//
// Apertus (ApertusForCausalLM).
//
// Llama's tree and block under other norm names: attention_layernorm feeds the attention and
// feedforward_layernorm the MLP (aliased input_layernorm / post_attention_layernorm). Queries and keys are
// RMS-normed per head (q_norm, k_norm: one gain shared by every head) before the rotary. The MLP has no gate and
// its activation, xIELU, has two scalars learned per block, stored before softplus. The config keys qk_norm and
// post_norm are not read by transformers, so they are not read here either.
#include "families/families.h"

namespace nnscope {

Family apertusFamily() {
    Family f = llamaFamily();
    f.modelType = "apertus";
    f.architectures = {"ApertusForCausalLM"};
    f.title = "Apertus";
    f.classPrefix = "Apertus";
    f.summary = "Llama's block with its norms named attention_layernorm and feedforward_layernorm, every query and key head "
                "RMS-normed before the rotary embedding, and an MLP with no gate whose activation, xIELU, has two parameters "
                "learned per block.";
    f.quirks = {"Query/key norms", "Learned activation", "Grouped-query attention"};
    f.description =
        "Apertus (ApertusForCausalLM).\n\nLlama's tree and Llama's block under other norm names: model.{embed_tokens, "
        "layers[i].{attention_layernorm, self_attn, feedforward_layernorm, mlp}, norm} and lm_head, the residual added in the "
        "block, attention through the shared eager forward. attention_layernorm feeds the attention and feedforward_layernorm "
        "the MLP, so they are aliased input_layernorm and post_attention_layernorm. The attention norms its queries and keys "
        "per head (q_norm, k_norm) before the rotary embedding. The MLP has no gate: down_proj(xielu(up_proj(x))).";
    f.blockFormulas = {"h   = x + self_attn(attention_layernorm(x))", "out = h + mlp(feedforward_layernorm(h))",
                       "mlp(z) = down_proj(xielu(up_proj(z)))"};
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added to the stream with nothing in between: "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"The MLP has no gate, and its activation is learned per block",
         "xIELU is alpha_p·x² + beta·x for x > 0 and alpha_n·(expm1(min(x, eps)) − x) + beta·x otherwise, with beta 0.5 and "
         "eps −1e-6. mlp.act_fn.alpha_p and alpha_n are stored before a transform: the effective alpha_p is softplus(alpha_p) "
         "and the effective alpha_n is beta + softplus(alpha_n), different in every block. act_fn's input equals up_proj's "
         "output and its output equals down_proj's input.",
         {"act_input_is_up", "xielu_formula", "xielu_scalars"}},
        {"Negative pre-activations are not switched off",
         "The negative branch dips below zero and grows again like (alpha_n − beta)·|x|, so the activations are not sparse: "
         "read act_fn's output, not the sign of its input, to tell whether a neuron fires.",
         {"xielu_negative"}},
        {"Queries and keys are normed per head, before the rotary",
         "q_norm and k_norm are RMSNorms over one head's head_dim with one gain for every head, applied before the rotary. "
         "Scaling one head's slice of q_proj's output is renormalised away; scaling that head of attention_queries is not. "
         "At position 0, where the rotation is the identity, attention_queries equals q_norm's output.",
         {"qk_norm_position0"}},
        {"Loading and positions",
         "The 2509 checkpoints use rope_type llama3; the v1.1 checkpoints the plain rotary. nnscope always runs eager attention.",
         {"rope_kind"}},
        {"Position 0 is <s>, and it is the sink",
         "The tokenizer prepends <s>. The residual stream at position 0 can have a norm far above every other position; "
         "drop [:, 1:] before a mean over positions.",
         {"bos_prepended", "sink_norm"}},
        {"The readout", "logits is lm_head's output with no cap and no scale; project_on_vocab is lm_head(norm(h)).",
         {"lens_equals_logits", "tied_head"}},
    };
    f.qkNorm = true;
    f.qkNormKind = NormKind::RMSNorm;
    f.mlp = MlpKind::Plain;
    f.weights.erase(Weight::GateProj);
    f.weights.erase(Weight::GateProjBias);
    f.weights.erase(Weight::UpProjBias);    // ApertusMLP's projections have no bias
    f.weights.erase(Weight::DownProjBias);
    f.weights[Weight::InputNorm] = "model.layers.{i}.attention_layernorm.weight";
    f.weights[Weight::PostAttentionNorm] = "model.layers.{i}.feedforward_layernorm.weight";
    f.weights[Weight::QNorm] = "model.layers.{i}.self_attn.q_norm.weight";
    f.weights[Weight::KNorm] = "model.layers.{i}.self_attn.k_norm.weight";
    f.weights[Weight::ActAlphaP] = "model.layers.{i}.mlp.act_fn.alpha_p";
    f.weights[Weight::ActAlphaN] = "model.layers.{i}.mlp.act_fn.alpha_n";
    f.weights[Weight::ActBeta] = "model.layers.{i}.mlp.act_fn.beta";
    f.weights[Weight::ActEps] = "model.layers.{i}.mlp.act_fn.eps";
    f.modules.erase(Module::GateProj);
    f.modules[Module::InputNorm] = "input_layernorm/attention_layernorm";
    f.modules[Module::PostAttentionNorm] = "post_attention_layernorm/feedforward_layernorm";
    f.modules[Module::QNorm] = "q_norm";
    f.modules[Module::KNorm] = "k_norm";
    f.configDefaults.update({{"vocab_size", 131072}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"hidden_act", "xielu"},
                             {"max_position_embeddings", 65536}, {"rms_norm_eps", 1e-5}, {"rope_theta", 12000000.0},
                             {"pad_token_id", 3}, {"bos_token_id", 1}, {"eos_token_id", 2}});
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        c.mlpBias = false;  // ApertusMLP builds its projections with bias=False whatever the config says
    };
    return f;
}

}  // namespace nnscope
