// SPDX-License-Identifier: MIT
//
// GPT-2 (GPT2LMHeadModel).
//
// transformer.{wte, wpe, h[i].{ln_1, attn.{c_attn, c_proj}, ln_2, mlp.{c_fc, c_proj}}, ln_f} and a tied lm_head.
// Learned absolute positions (wpe) are added to the token embeddings; there is no rotary. Every norm is a LayerNorm
// with a bias; the projections are Conv1D, stored [in, out]; c_attn is one fused projection whose output is
// [q | k | v]; the MLP is c_fc, gelu_new, c_proj with biases. scale_attn_by_inverse_layer_idx divides block i's
// scores by i + 1 as well. The config's own key names (n_embd, n_layer, n_head, n_inner, n_positions,
// activation_function, layer_norm_epsilon) are read.
#include "families/families.h"
#include "core/model/error.h"

namespace nnscope {

Family gpt2Family() {
    Family f = llamaFamily();
    f.modelType = "gpt2";
    f.architectures = {"GPT2LMHeadModel"};
    f.title = "GPT-2";
    f.classPrefix = "GPT2";
    f.summary = "Learned absolute positions instead of a rotary, LayerNorms with biases, Conv1D projections and one fused "
                "c_attn; the MLP is c_fc, gelu_new, c_proj.";
    f.quirks = {"Learned positions", "Fused qkv (c_attn)", "LayerNorm", "GELU MLP", "Conv1D weights"};
    f.description =
        "GPT-2 (GPT2LMHeadModel).\n\ntransformer.{wte, wpe, h[i].{ln_1, attn, ln_2, mlp}, ln_f} and lm_head (tied to wte). "
        "The stream starts as wte(ids) + wpe(positions); attn projects with c_attn into [q | k | v] and back with c_proj; the "
        "MLP is c_fc, gelu_new, c_proj. nnterp's standard names alias the native ones (layers/h, self_attn/attn, ...).";
    f.mlpFormulas = {"mlp(z) = c_proj(gelu_new(c_fc(z)))"};
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is attn's output after c_proj and mlp_output the MLP's after c_proj (dropouts are the identity in "
         "eval), so layers[i].input + attention_output + mlp_output == layer_output. Every projection has a bias.",
         {"contribution_identity", "projection_biases:all"}},
        {"Learned positions",
         "token_embeddings is wte's output alone; the first block's input is token_embeddings + wpe(positions), with "
         "positions 0, 1, ... counted from each prompt's first real token in a left-padded batch. There is no rotary, and a "
         "prompt may not be longer than n_positions (1024).",
         {}},
        {"One fused projection, [q | k | v]",
         "attn.c_attn maps the width to three times the width; its output is all the query heads, then all the key heads, "
         "then all the value heads (not per head, unlike GPT-NeoX). Conv1D stores the weight [in, out], the transpose of "
         "nn.Linear's.",
         {"pattern_softmax"}},
        {"The readout",
         "logits is lm_head's output, lm_head tied to wte, and project_on_vocab is lm_head(ln_f(x)), so the logit lens at the "
         "last block equals the logits.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "GPT2LMHeadModel checkpoints (model_type gpt2: gpt2, distilgpt2, gpt2-medium ...) load as gpt2, with or without the "
         "transformer. prefix on the tensor names.",
         {"loads_as"}},
    };
    f.norm = NormKind::LayerNorm;
    f.qkv = QkvLayout::FusedContiguous;
    f.mlp = MlpKind::Plain;
    f.positions = PositionKind::Learned;
    f.conv1dWeights = true;
    f.epsKey = "layer_norm_epsilon";
    f.actKey = "activation_function";
    f.basePrefix = "transformer.";
    f.modules.clear();
    f.setModule(Module::EmbedTokens, "wte", "embed_tokens");
    f.setModule(Module::PositionEmbeddings, "wpe");
    f.setModule(Module::Layers, "h", "layers");
    f.setModule(Module::Norm, "ln_f", "norm");
    f.setModule(Module::LmHead, "lm_head");
    f.setModule(Module::SelfAttn, "attn", "self_attn");
    f.setModule(Module::QkvProj, "c_attn");
    f.setModule(Module::OProj, "c_proj", "o_proj");
    f.setModule(Module::Mlp, "mlp");
    f.setModule(Module::UpProj, "c_fc");
    f.setModule(Module::DownProj, "c_proj", "down_proj");
    f.setModule(Module::ActFn, "act", "act_fn");
    f.setModule(Module::InputNorm, "ln_1", "input_layernorm");
    f.setModule(Module::PostAttentionNorm, "ln_2", "post_attention_layernorm");
    // Old checkpoints store each block's causal-mask buffers; transformers drops them without a warning.
    f.ignoredTensorSuffixes = {".attn.bias", ".attn.masked_bias"};
    f.configDefaults = {{"vocab_size", 50257}, {"n_positions", 1024}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
                        {"n_inner", nullptr}, {"activation_function", "gelu_new"}, {"layer_norm_epsilon", 1e-5},
                        {"scale_attn_weights", true}, {"scale_attn_by_inverse_layer_idx", false},
                        {"reorder_and_upcast_attn", false}, {"bos_token_id", 50256}, {"eos_token_id", 50256},
                        {"tie_word_embeddings", true}};
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        // GPT2Config's attribute_map: hidden_size = n_embd, num_hidden_layers = n_layer, num_attention_heads = n_head,
        // max_position_embeddings = n_positions; the MLP is n_inner wide, 4 × n_embd when n_inner is null.
        nlohmann::json k = j;
        k.erase("num_key_value_heads");
        k.erase("head_dim");
        k["hidden_size"] = j.at("n_embd");
        k["num_hidden_layers"] = j.at("n_layer");
        k["num_attention_heads"] = j.at("n_head");
        k["max_position_embeddings"] = j.at("n_positions");
        const auto inner = cfg::optInt(j, "n_inner", file);
        k["intermediate_size"] = inner ? *inner : 4 * cfg::getInt(j, "n_embd", file);
        k["hidden_act"] = j.at("activation_function");
        try {
            cfg::readCommon(k, file, fam.epsKey, c);
        } catch (const Error& e) {  // name the keys the file has (n_embd), not the aliases read (hidden_size)
            std::string m = e.what();
            for (const auto& [alias, own] : {std::pair<std::string, std::string>{"hidden_size", "n_embd"}, {"num_hidden_layers", "n_layer"},
                                             {"num_attention_heads", "n_head"}, {"max_position_embeddings", "n_positions"},
                                             {"intermediate_size", "n_inner"}, {"hidden_act", "activation_function"}})
                for (size_t at = m.find(alias); at != std::string::npos; at = m.find(alias, at + own.size())) m.replace(at, alias.size(), own);
            throw Error(m);
        }
        c.attentionBias = c.oProjBias = c.mlpBias = true;  // Conv1D always has a bias
        if (!cfg::getBool(j, "scale_attn_weights", true, file)) c.attentionScaling = 1.0;
        c.scaleByInverseLayer = cfg::getBool(j, "scale_attn_by_inverse_layer_idx", false, file);
    };
    return f;
}

}  // namespace nnscope
