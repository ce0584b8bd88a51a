// SPDX-License-Identifier: MIT
//
// GPT-NeoX / Pythia (GPTNeoXForCausalLM).
//
// gpt_neox.{embed_in, layers[i].{input_layernorm, attention.{query_key_value, dense}, post_attention_layernorm,
// mlp.{dense_h_to_4h, dense_4h_to_h}}, final_layer_norm} and embed_out. LayerNorms with biases; one fused, biased
// query_key_value laid out per head ([num_heads, 3, head_dim], like Persimmon); a partial rotary (rotary_pct of each
// head, 0.25 on Pythia); an ungated GELU MLP with biases. Under use_parallel_residual (Pythia) both branches read the
// block's input: out = x + attn(ln1(x)) + mlp(ln2(x)).
#include "families/families.h"

namespace nnscope {

Family gptNeoxFamily() {
    Family f = llamaFamily();
    f.modelType = "gpt_neox";
    f.architectures = {"GPTNeoXForCausalLM"};
    f.title = "GPT-NeoX (Pythia)";
    f.classPrefix = "GPTNeoX";
    f.summary = "LayerNorms, a fused per-head query_key_value, a partial rotary, and under use_parallel_residual an "
                "attention and an MLP that both read the block's input.";
    f.quirks = {"Parallel residual", "Fused per-head qkv", "Partial rotary", "LayerNorm", "GELU MLP"};
    f.description =
        "GPT-NeoX (GPTNeoXForCausalLM).\n\ngpt_neox.{embed_in, layers[i].{input_layernorm, attention, "
        "post_attention_layernorm, mlp}, final_layer_norm} and embed_out. attention cuts queries, keys and values per head "
        "from query_key_value and turns the first rotary_pct of each head; the MLP is dense_h_to_4h, gelu, dense_4h_to_h.";
    f.mlpFormulas = {"mlp(z) = dense_4h_to_h(gelu(dense_h_to_4h(z)))"};
    f.notes = {
        {"Parallel residual",
         "Under use_parallel_residual (true on every Pythia), the attention and the MLP both read the block's input, and "
         "their outputs are added together: layer_output == layers[i].input + attention_output + mlp_output still holds. "
         "There is no stream between the two branches: layer_mid, defined as the input of the MLP's norm, is the block's "
         "input. With use_parallel_residual false the block is Llama's sequential one.",
         {"contribution_identity", "projection_biases:all"}},
        {"Queries, keys and values are cut per head from one projection",
         "attention.query_key_value's output is laid out [num_heads, 3, head_dim] on the last axis: head h's query, key and "
         "value are three consecutive head_dim blocks.",
         {"fused_qkv_values"}},
        {"A partial rotary",
         "Only the first rotary_pct × head_dim dimensions of each query and key head turn (0.25 on Pythia); the rest carry no "
         "position.",
         {"pattern_softmax"}},
        {"The readout", "logits is embed_out's output (untied) with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "GPTNeoXForCausalLM checkpoints (model_type gpt_neox: Pythia, GPT-NeoX-20B) load as gpt_neox.",
         {"loads_as"}},
    };
    f.norm = NormKind::LayerNorm;
    f.qkv = QkvLayout::FusedPerHead;
    f.partialRotary = true;
    f.mlp = MlpKind::Plain;
    f.epsKey = "layer_norm_eps";
    f.basePrefix = "gpt_neox.";
    f.modules.clear();
    f.setModule(Module::EmbedTokens, "embed_in", "embed_tokens");
    f.setModule(Module::Layers, "layers");
    f.setModule(Module::Norm, "final_layer_norm", "norm");
    f.setModule(Module::LmHead, "embed_out", "lm_head");
    f.setModule(Module::SelfAttn, "attention", "self_attn");
    f.setModule(Module::QkvProj, "query_key_value");
    f.setModule(Module::OProj, "dense", "o_proj");
    f.setModule(Module::Mlp, "mlp");
    f.setModule(Module::UpProj, "dense_h_to_4h");
    f.setModule(Module::DownProj, "dense_4h_to_h", "down_proj");
    f.setModule(Module::ActFn, "act", "act_fn");
    f.setModule(Module::InputNorm, "input_layernorm");
    f.setModule(Module::PostAttentionNorm, "post_attention_layernorm");
    f.ignoredTensorSuffixes = {".attention.bias", ".attention.masked_bias", ".attention.rotary_emb.inv_freq"};
    f.configDefaults = {{"vocab_size", 50432}, {"hidden_size", 6144}, {"num_hidden_layers", 44}, {"num_attention_heads", 64},
                        {"intermediate_size", 24576}, {"hidden_act", "gelu"}, {"max_position_embeddings", 2048},
                        {"layer_norm_eps", 1e-5}, {"bos_token_id", 0}, {"eos_token_id", 2}, {"tie_word_embeddings", false},
                        {"use_parallel_residual", true}, {"attention_bias", true}};
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        // GPTNeoXConfig: the rotary's width and base come from rope_parameters, else the legacy rotary_pct (0.25) and
        // rotary_emb_base; a top-level partial_rotary_factor or rope_theta is not read.
        nlohmann::json k = j;
        k.erase("num_key_value_heads");
        k.erase("head_dim");
        k.erase("partial_rotary_factor");
        k.erase("rope_theta");
        k["partial_rotary_factor"] = cfg::optDouble(j, "rotary_pct", file).value_or(0.25);
        k["rope_theta"] = cfg::optDouble(j, "rotary_emb_base", file).value_or(10000.0);
        cfg::readCommon(k, file, fam.epsKey, c);
        cfg::checkHeadDimKey(j, file, c.headDim);
        c.attentionBias = c.oProjBias = cfg::getBool(j, "attention_bias", true, file);
        c.mlpBias = true;  // GPTNeoXMLP's nn.Linear defaults
        c.parallelResidual = cfg::getBool(j, "use_parallel_residual", true, file);
    };
    return f;
}

}  // namespace nnscope
