// SPDX-License-Identifier: MIT
//
// Persimmon (PersimmonForCausalLM).
//
// Llama's sequential block with LayerNorms (weight and bias) and biased projections everywhere. The attention cuts
// queries, keys and values per head from one fused query_key_value whose output is laid out [num_heads, 3, head_dim];
// under qk_layernorm it LayerNorms each query and key head (one weight shared by every head), then turns only the
// first partial_rotary_factor of each head. The MLP is dense_h_to_4h -> act -> dense_4h_to_h with no gate; the block's
// dropout after it is the identity in eval. The final norm is final_layernorm. nnterp's standard names alias the
// native ones: o_proj/dense, down_proj/dense_4h_to_h, act_fn/act.
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family persimmonFamily() {
    Family f = llamaFamily();
    f.modelType = "persimmon";
    f.architectures = {"PersimmonForCausalLM"};
    f.title = "Persimmon";
    f.classPrefix = "Persimmon";
    f.summary = "Llama's sequential block with LayerNorms; the attention cuts queries, keys and values per head from one "
                "fused projection and norms each query and key head before the rotary.";
    f.quirks = {"Biased q, k, v", "Query/key norms", "Partial rotary", "Squared ReLU", "LayerNorm"};
    f.description =
        "Persimmon (PersimmonForCausalLM).\n\nLlama's tree with Persimmon's final norm: model.{embed_tokens, layers[i].{input_layernorm, "
        "self_attn, post_attention_layernorm, mlp}, final_layernorm} and lm_head; the residual added in the block, attention "
        "through the shared eager forward. The norms are nn.LayerNorm. The attention projects queries, keys and values with one "
        "fused query_key_value, norms the queries and keys per head (q_layernorm, k_layernorm, under qk_layernorm) and applies "
        "the rotary embedding to partial_rotary_factor of each head, all before the interface. The MLP is "
        "dense_h_to_4h/dense_4h_to_h with no gate; the block's own dropout after it is the identity in eval.";
    f.mlpFormulas = {};  // the page writes no MLP line (the seed's block, in order)
    f.notes = {
        {"The block, in order",
         "The block returns a bare tensor, and nothing but the eval-mode dropout sits between a sublayer and the stream: "
         "attention_output is the attention's output after dense, mlp_output the MLP's after dense_4h_to_h, and "
         "layers[i].input + attention_output + mlp_output == layer_output holds exactly. Every norm is a LayerNorm with a weight "
         "and a bias, and every projection has a bias.",
         {"contribution_identity", "projection_biases:all"}},
        {"Queries, keys and values are cut per head from one projection",
         "self_attn.query_key_value is one biased linear map from the width to three times the width. Its output is laid out "
         "head by head, [num_heads, 3, head_dim] on the last axis: head h's query, key and value are three consecutive head_dim "
         "blocks, not three blocks of the whole width, and the rows of the weight follow the same layout. With "
         "W = weight.view(H, 3, D, hidden) and b = bias.view(H, 3, D), attention_values = einsum(\"bsx,hdx->bhsd\", h, W[:, 2]) "
         "+ b[:, 2]. Every head has its own keys and values (num_kv_heads == num_heads). The scores are scaled by "
         "head_dim ** -0.5 inside the shared attention.",
         {"fused_qkv_values"}},
        {"Queries and keys are normed per head, then half of each is turned",
         "Under qk_layernorm (set on the released checkpoints), q_layernorm and k_layernorm are LayerNorms over head_dim, one "
         "weight shared by every head, applied to the split queries and keys before the rotary. The rotary then turns the first "
         "partial_rotary_factor of each head (0.5 on the released checkpoints: 32 of 64 dimensions, rope_theta 25000); the rest "
         "carries no position. attention_queries and attention_keys are read after both, so their last part is the normed "
         "projection unchanged and their first part is rotated. An edit to the query slices of query_key_value's output passes "
         "through the norm, so it is re-centred and rescaled per head before it reaches the scores; an edit to attention_queries "
         "is not.",
         {"unrotated_half", "qk_norm_renormalizes"}},
        {"The MLP is squared ReLU with no gate",
         "mlp is dense_h_to_4h, the activation and dense_4h_to_h (4096 → 16384 → 4096 on the 8B checkpoints), with no gate "
         "projection. The released checkpoints set hidden_act to relu2, relu(x) ** 2: a neuron is exactly zero wherever its "
         "pre-activation is negative. The activation is whatever config.json names, so a checkpoint with another hidden_act "
         "(such as a tiny GELU test checkpoint) needs the real weights to show the zeros.",
         {"no_gate", "act_from_config", "relu2_zeros:if_relu2"}},
        {"The readout: LayerNorm with a bias, untied weights",
         "logits is lm_head's output with nothing applied and project_on_vocab is lm_head(final_layernorm(x)), so a logit lens "
         "at the last block equals the logits. lm_head has its own weight and no bias. The tokenizer prepends its BOS token "
         "(|ENDOFTEXT| on the released checkpoints) to every prompt.",
         {"lens_equals_logits", "tied_head", "bos_prepended"}},
        {"The family's checkpoints",
         "persimmon-8b-base and persimmon-8b-chat share one shape: 36 blocks of width 4096, 64 heads of 64, an MLP of 16384, a "
         "262144-token vocabulary and 16384 positions, stored in bfloat16. Fuyu-8B's language model is a Persimmon, but the "
         "fuyu wrapper is another architecture.",
         {"loads_as"}},
    };
    f.norm = NormKind::LayerNorm;
    f.qkv = QkvLayout::FusedPerHead;
    f.partialRotary = true;
    f.qkNorm = true;  // under qk_layernorm (the config decides; see readConfig)
    f.mlp = MlpKind::Plain;
    f.epsKey = "layer_norm_eps";
    f.qkNormKind = NormKind::LayerNorm;
    f.setModule(Module::Norm, "final_layernorm", "norm", ModuleNaming::Rename);  // nnterp renames it norm
    f.dropModule(Module::QProj).dropModule(Module::KProj).dropModule(Module::VProj).dropModule(Module::GateProj);
    f.setModule(Module::QkvProj, "query_key_value");
    f.setModule(Module::OProj, "dense", "o_proj");
    f.setModule(Module::QNorm, "q_layernorm");
    f.setModule(Module::KNorm, "k_layernorm");
    f.setModule(Module::AttentionDropout, "attention_dropout");
    f.setModule(Module::UpProj, "dense_h_to_4h");
    f.setModule(Module::DownProj, "dense_4h_to_h", "down_proj");
    f.setModule(Module::ActFn, "act", "act_fn");
    f.setModule(Module::LayerDropout, "dropout");
    f.configDefaults = {{"vocab_size", 262144}, {"hidden_size", 4096}, {"intermediate_size", 16384},
                        {"num_hidden_layers", 36}, {"num_attention_heads", 64}, {"hidden_act", "relu2"},
                        {"max_position_embeddings", 16384}, {"layer_norm_eps", 1e-5}, {"tie_word_embeddings", false},
                        {"qk_layernorm", true}, {"partial_rotary_factor", 0.5},
                        // PersimmonConfig has no rope_theta of its own: a config without one gets the mixin's 10000
                        // (persimmon-8b states its 25000)
                        {"rope_theta", 10000.0},
                        {"bos_token_id", 1}, {"eos_token_id", 2}};
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        nlohmann::json k = j;
        k.erase("num_key_value_heads");  // every head has its own keys and values
        k.erase("head_dim");             // PersimmonAttention: head_dim = hidden_size // num_heads
        cfg::readCommon(k, file, fam.epsKey, c);
        c.attentionBias = c.oProjBias = c.mlpBias = true;  // nn.Linear defaults: every projection is biased
        c.qkNorm = cfg::getBool(j, "qk_layernorm", true, file);
        if (c.headDim * c.numHeads != c.hiddenSize)
            throw Error(file + ": hidden_size (" + std::to_string(c.hiddenSize) + ") must be divisible by num_attention_heads (" +
                        std::to_string(c.numHeads) + ") for Persimmon.");
        cfg::checkHeadDimKey(j, file, c.headDim);
        cfg::checkPadTokenId(c, file);
    };
    return f;
}

}  // namespace nnscope
