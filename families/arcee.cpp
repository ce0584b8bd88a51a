// SPDX-License-Identifier: MIT
//
// Arcee AFM (ArceeForCausalLM).
//
// Llama's tree and Llama's block; the one difference is the MLP, which has no gate:
// down_proj(relu(up_proj(x)) ** 2) (Nemotron's ungated MLP with hidden_act relu2). So a neuron is exactly zero
// wherever its pre-activation is negative. AFM-4.5B stretches the rotary with YaRN; the pre-anneal checkpoint
// uses the plain rotary. Both come from the config (core/rope.cpp).
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
    f.blockFormulas = {"h   = x + self_attn(input_layernorm(x))", "out = h + mlp(post_attention_layernorm(h))",
                       "mlp(z) = down_proj(relu(up_proj(z)) ** 2)"};
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added to the stream with nothing in between: "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"A neuron is relu(x)², exactly zero below zero",
         "hidden_act is relu2, so mlp_neurons = relu(up_proj(z))²: exactly zero wherever the pre-activation is negative, and "
         "such a neuron neither moves that token nor receives gradient from it (the derivative of relu(x)² is 2·relu(x)). "
         "up_proj's output holds the pre-activations and down_proj's input the activations.",
         {"relu2_zeros"}},
        {"Grouped-query attention",
         "attention_keys and attention_values are read before repeat_kv, [batch, num_kv_heads, seq, head_dim]; an edit to "
         "key/value head j reaches query heads j·g to j·g + g − 1, g = num_heads / num_kv_heads.",
         {}},
        {"Loading and positions",
         "The attention interior values are what transformers computes only under attn_implementation=\"eager\"; nnscope always "
         "runs eager attention. AFM-4.5B stretches the rotary with YaRN (factor 20 over 4096 original positions); the "
         "pre-anneal checkpoint has the plain rotary.",
         {"rope_kind"}},
        {"The readout", "logits is lm_head's output, and the logit lens at the last block equals the logits.",
         {"lens_equals_logits", "tied_head"}},
        {"Tokenizer", "Every AFM tokenizer prepends <|begin_of_text|>.", {"bos_prepended"}},
    };
    f.mlp = MlpKind::Plain;
    f.weights.erase(Weight::GateProj);
    f.weights.erase(Weight::GateProjBias);
    f.modules.erase(Module::GateProj);
    f.configDefaults.update({{"vocab_size", 32000}, {"hidden_size", 2560}, {"intermediate_size", 18432},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"hidden_act", "relu2"},
                             {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"bos_token_id", 128000},
                             {"eos_token_id", 128001}});
    return f;
}

}  // namespace nnscope
