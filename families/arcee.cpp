// SPDX-License-Identifier: MIT
//
// Arcee AFM (ArceeForCausalLM).
//
// Llama's tree and Llama's block; the one difference is the MLP, which has no gate:
// down_proj(relu(up_proj(x)) ** 2) (Nemotron's ungated MLP with hidden_act relu2). So a neuron is exactly zero
// wherever its pre-activation is negative. AFM-4.5B stretches the rotary with YaRN; the pre-anneal checkpoint
// uses the plain rotary. Both come from the config (core/model/rope.cpp).
#include "families/families.h"

namespace nnscope {

Family arceeFamily() {
    Family f = llamaFamily();
    f.modelType = "arcee";
    f.architectures = {"ArceeForCausalLM"};
    f.title = "Arcee AFM";
    f.classPrefix = "Arcee";
    f.summary = "Llama's block whose MLP has no gate: up_proj, a squared ReLU and down_proj, so a neuron is exactly zero "
                "wherever its pre-activation is negative.";
    f.quirks = {"Squared ReLU", "Grouped-query attention"};
    f.description =
        "Arcee (AFM) (ArceeForCausalLM).\n\nLlama's tree and Llama's block: model.{embed_tokens, layers[i].{input_layernorm, "
        "self_attn, post_attention_layernorm, mlp}, norm} and lm_head, the residual added in the block, attention through the "
        "shared eager forward. The MLP has no gate: down_proj(act(up_proj(x))) with ReLU squared.";
    f.mlpFormulas = {"mlp(z) = down_proj(relu(up_proj(z)) ** 2)"};
    f.notes = {
        {"The block, in order",
         "Llama's module names and Llama's two pre-norms, the residual added in the block. The MLP has two projections where "
         "Llama's has three: there is no gate_proj, and up_proj widens the normed stream to intermediate_size (18432 on the "
         "4.5B checkpoints, 7.2 × hidden_size) before down_proj narrows it back.",
         {"no_gate"}},
        {"The contributions are the modules' outputs",
         "attention_output is what self_attn returns (o_proj's output) and mlp_output what the MLP returns (down_proj's output); "
         "both are added to the stream with nothing in between, so layers[i].input + attention_output + mlp_output == "
         "layer_output holds exactly in float32.",
         {"contribution_identity"}},
        {"A neuron is relu(x)², exactly zero below zero",
         "hidden_act is relu2 on every AFM checkpoint: act_fn is a ReLUSquaredActivation and a neuron is relu(up_proj(z))². It is "
         "exactly zero wherever its pre-activation is negative, so a neuron that is off on a token has no effect on that token "
         "and gets no gradient from it (the derivative of relu(x)² is 2·relu(x)); where it is on, it grows with the square of "
         "the pre-activation. up_proj's output holds the pre-activations and down_proj's input the activations.",
         {"relu2_zeros"}},
        {"Grouped-query attention",
         "The 4.5B checkpoints have 20 query heads over 4 key/value heads, 128 wide, so num_heads × head_dim equals hidden_size. "
         "attention_keys and attention_values are read before repeat_kv, [batch, num_kv_heads, seq, head_dim], and an edit to "
         "key/value head j reaches the query heads of its group (5j to 5j + 4 on 4.5B). No projection has a bias.",
         {"gqa_scores"}},
        {"Loading and positions",
         "The six attention interior values exist in transformers only under attn_implementation=\"eager\"; there is no softcap, "
         "window or sink, so the default sdpa load computes the same function, and nnscope always runs the eager attention. "
         "AFM-4.5B, its Base and Preview stretch the rotary with YaRN (factor 20 over 4096 original positions, to 65536; "
         "transformers warns that max_position_embeddings / original_max_position_embeddings is 16 and uses the explicit 20). "
         "AFM-4.5B-Base-Pre-Anneal has the plain rotary over 4096 positions. rope_theta is 10000 throughout.",
         {"rope_kind:default|yarn", "pattern_softmax"}},
        {"The readout",
         "logits is lm_head's output with no cap and no scale, and the logit lens at the last block, lm_head(norm(h)), equals "
         "the logits. The AFM checkpoints keep lm_head apart from embed_tokens (tie_word_embeddings false).",
         {"lens_equals_logits", "tied_head"}},
        {"Tokenizer and templates",
         "Every AFM tokenizer prepends <|begin_of_text|> (id 128000). The embedding matrices differ in size between the "
         "checkpoints (128004 rows on Base, 128005 on AFM-4.5B, 128064 on Preview, 128256 on Pre-Anneal). AFM-4.5B's chat "
         "template is ChatML (<|im_start|>, <|im_end|>) and writes a default system turn when the messages have none; its "
         "eos_token is <|im_end|>, Base's <|end_of_text|>.",
         {"bos_prepended"}},
        {"What loads as this family",
         "AFM-4.5B, its Base, Preview and Base-Pre-Anneal load as arcee (ArceeForCausalLM). The -KDA-Only and -KDA-NoPE "
         "conversions are arcee_kda, a remote-code architecture, and Arcee's Trinity models are the afmoe family.",
         {"loads_as"}},
    };
    f.mlp = MlpKind::Plain;
    f.dropModule(Module::GateProj);
    f.configDefaults.update({{"vocab_size", 32000}, {"hidden_size", 2560}, {"intermediate_size", 18432},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"hidden_act", "relu2"},
                             {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"bos_token_id", 128000},
                             {"eos_token_id", 128001}});
    return f;
}

}  // namespace nnscope
