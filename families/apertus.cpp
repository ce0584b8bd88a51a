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
    f.mlpFormulas = {"mlp(z) = down_proj(xielu(up_proj(z)))"};
    f.notes = {
        {"The block, in order",
         "Llama's two pre-norms under their own names: attention_layernorm feeds the attention and feedforward_layernorm the MLP. "
         "nnscope aliases them input_layernorm and post_attention_layernorm, so either name reads the same module. The config "
         "carries post_norm: false and qk_norm: true; the modeling code reads neither and builds this block on every checkpoint.",
         {}},
        {"The contributions are the modules' outputs",
         "attention_output is what self_attn returns and mlp_output what the MLP returns, added to the stream with nothing in "
         "between: layers[i].input + attention_output + mlp_output == layer_output holds exactly in float32.",
         {"contribution_identity"}},
        {"The MLP has no gate, and its activation is learned per block",
         "up_proj widens the normed stream to intermediate_size, act_fn applies xIELU and down_proj narrows it back. xIELU is "
         "alpha_p·x² + beta·x for x > 0 and alpha_n·(expm1(min(x, eps)) − x) + beta·x otherwise, with beta 0.5, eps −1e-6 and "
         "two scalars learned per block. mlp.act_fn.alpha_p and alpha_n hold them before a transform: the effective alpha_p is "
         "softplus(alpha_p) and the effective alpha_n is beta + softplus(alpha_n), so one pre-activation gives a different "
         "activation in each block. act_fn is a module: its input is the pre-activation (up_proj's output) and its output the "
         "activation (down_proj's input).",
         {"no_gate", "act_input_is_up", "xielu_formula", "xielu_scalars"}},
        {"Negative pre-activations are not switched off",
         "The negative branch dips below zero to a minimum and then grows again as x falls, like (alpha_n − beta)·|x|. Most "
         "pre-activations can be negative while almost no activation is near zero: the activations are not sparse, and a large "
         "negative pre-activation writes its down_proj column with a positive weight, as a large positive one does. Read "
         "act_fn's output, not the sign of its input, to tell whether a neuron fires.",
         {"xielu_negative"}},
        {"Queries and keys are normed per head, before the rotary",
         "q = rope(q_norm(q_proj(x) split into heads)), k = rope(k_norm(k_proj(x) split into heads)). q_norm and k_norm are "
         "RMSNorms over one head's head_dim, one gain vector for every head. attention_queries and attention_keys are read "
         "after both; at position 0, where the rotation is the identity, they equal q_norm's and k_norm's outputs. Scaling one "
         "head's slice of q_proj's output is renormalised away; scaling that head of attention_queries scales its scores.",
         {"qk_norm_position0", "qk_norm_renormalizes"}},
        {"Grouped-query attention",
         "8B has 32 query heads over 8 key/value heads and 70B 64 over 8, both 128 wide; v1.1 has 16 over 4 at 64 wide (0.5B), "
         "32 over 8 at 64 (1.5B) and 24 over 8 at 128 (4B). attention_keys and attention_values are read before repeat_kv, so "
         "an edit to key/value head j reaches the query heads of its group (4j to 4j + 3 on 8B).",
         {"gqa_scores"}},
        {"The default load runs the same attention as eager",
         "The six attention interior values exist in transformers only under attn_implementation=\"eager\"; there is no "
         "softcap, window or sink in the attention, so the default sdpa load computes the same function up to rounding, and "
         "nnscope always runs the eager attention. The 2509 checkpoints use rope_type llama3 (rope_theta 12,000,000, factor 8 "
         "over 8192 original positions, 65536 in all); the v1.1 checkpoints use the plain rotary (rope_theta 500,000, 4096 "
         "positions).",
         {"rope_kind:default|llama3", "pattern_softmax"}},
        {"Position 0 is <s>, and it is the sink",
         "The tokenizer prepends <s> (id 1), and the residual stream at that position can be far larger than at every other "
         "position: a mean over positions is dominated by it unless [:, 1:] is dropped first. The instruct templates write <s> "
         "themselves, so a templated string traced as is starts with two; pass add_special_tokens=False. The 2509 instruct "
         "template also writes a system turn with the current date, so the same messages tokenize differently from one day to "
         "the next.",
         {"bos_prepended", "sink_norm"}},
        {"The readout",
         "logits is lm_head's output with no cap and no scale, and project_on_vocab is lm_head(norm(h)). lm_head and "
         "embed_tokens are one matrix on v1.1-0.5B and its Instruct, and separate on the other checkpoints.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "ApertusForCausalLM checkpoints (2509 and v1.1) load as apertus. Apertus v1.5 (apertus1p5) is another architecture, a "
         "multimodal wrapper, and is not this family.",
         {"loads_as"}},
    };
    f.qkNorm = true;
    f.qkNormScope = QkNormScope::PerHeadTransposed;  // ApertusAttention norms after .transpose(1, 2)
    f.qkNormKind = NormKind::RMSNorm;
    f.mlp = MlpKind::Plain;
    f.dropModule(Module::GateProj);
    f.setModule(Module::InputNorm, "attention_layernorm", "input_layernorm");  // nnterp aliases the norms
    f.setModule(Module::PostAttentionNorm, "feedforward_layernorm", "post_attention_layernorm");
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    f.configDefaults.update({{"vocab_size", 131072}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"hidden_act", "xielu"},
                             {"max_position_embeddings", 65536}, {"rms_norm_eps", 1e-5}, {"rope_theta", 12000000.0},
                             {"pad_token_id", 3}, {"bos_token_id", 1}, {"eos_token_id", 2}});
    f.mlpBiasKey.clear();  // ApertusMLP builds its projections with bias=False whatever the config says
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        // ApertusConfig.__post_init__: a config without rope_parameters gets Apertus-8B's llama3 scaling (factor 8 over 8192
        // original positions, theta 12e6), and a top-level rope_theta does not change it; a legacy rope_scaling still
        // replaces it.
        nlohmann::json k = j;
        if (!k.contains("rope_parameters") || k["rope_parameters"].is_null())
            k["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 12000000.0}, {"factor", 8.0},
                                    {"original_max_position_embeddings", 8192}, {"low_freq_factor", 1.0},
                                    {"high_freq_factor", 4.0}};
        readLlamaLikeConfig(k, file, fam, c);
    };
    return f;
}

}  // namespace nnscope
