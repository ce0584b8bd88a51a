// SPDX-License-Identifier: MIT
//
// OLMo 2 (Olmo2ForCausalLM).
//
// Llama's tree with the norms moved: no norm before the attention or the MLP; instead post_attention_layernorm norms
// the attention's output and post_feedforward_layernorm the MLP's output, each before its residual add. q_norm and
// k_norm are RMSNorms over the whole query / key projection (num_heads × head_dim), applied before it is cut into
// heads and before the rotary.
#include "families/families.h"

namespace nnscope {

Family olmo2Family() {
    Family f = llamaFamily();
    f.modelType = "olmo2";
    f.architectures = {"Olmo2ForCausalLM"};
    f.title = "OLMo 2";
    f.classPrefix = "Olmo2";
    f.summary = "Llama's tree with post-norms: each branch's output is normed before it is added to the stream, and the "
                "queries and keys are normed over the whole projection.";
    f.quirks = {"Post-norm branches", "Query/key norms over the projection", "Gated MLP"};
    f.description =
        "OLMo 2 (Olmo2ForCausalLM).\n\nmodel.{embed_tokens, layers[i].{self_attn, post_attention_layernorm, mlp, "
        "post_feedforward_layernorm}, norm} and lm_head. The block has no pre-norms: the attention and the MLP read the stream "
        "itself, and their outputs are normed before the residual adds. q_norm and k_norm norm q_proj's and k_proj's whole "
        "outputs before the heads are cut and turned.";
    f.mlpFormulas = {"mlp(z) = down_proj(act_fn(gate_proj(z)) * up_proj(z))"};
    f.notes = {
        {"What is added to the stream is normed",
         "attention_output and mlp_output are the modules' outputs, as nnterp defines them; the stream receives "
         "post_attention_layernorm(attention_output) and post_feedforward_layernorm(mlp_output). So layers[i].input + "
         "attention_output + mlp_output is NOT layer_output; layers[i].input + post_attention_layernorm(attention_output) + "
         "post_feedforward_layernorm(mlp_output) is. With no pre-norm, attention_norm_output is the block's input and "
         "mlp_norm_output is layer_mid.",
         {"contribution_identity", "projection_biases"}},
        {"Queries and keys are normed over the whole projection",
         "q_norm is an RMSNorm of width num_heads × head_dim over q_proj's output (k_norm likewise over k_proj's), before the "
         "heads are cut and before the rotary: one statistic per token for all heads together.",
         {"gqa_scores", "pattern_softmax"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Olmo2ForCausalLM checkpoints (model_type olmo2) load as olmo2.", {"loads_as"}},
    };
    f.blockNorms = {/*beforeAttention=*/false, /*beforeMlp=*/false, /*afterAttention=*/true, /*afterMlp=*/true};
    f.qkNorm = true;
    f.qkNormScope = QkNormScope::WholeProjection;
    f.rmsGainInFloat32 = true;  // Olmo2RMSNorm: (weight * x̂).to(dtype), every norm of the family
    f.rotaryInFloat32 = true;   // Olmo2RotaryEmbedding returns float32 cos/sin; q * cos promotes, .to(q_type) at the end
    f.dropModule(Module::InputNorm).dropModule(Module::PostAttentionNorm);
    f.setModule(Module::AttentionOutputNorm, "post_attention_layernorm");
    f.setModule(Module::MlpOutputNorm, "post_feedforward_layernorm");
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    f.configDefaults.update({{"vocab_size", 50304}, {"hidden_size", 4096}, {"intermediate_size", 11008},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"rms_norm_eps", 1e-5},
                             {"pad_token_id", 1}, {"bos_token_id", nullptr}, {"eos_token_id", 50279}});
    f.mlpBiasKey.clear();  // the MLP is built with bias=False; attention_bias biases q/k/v/o
    return f;
}

}  // namespace nnscope
