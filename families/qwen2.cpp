// SPDX-License-Identifier: MIT
//
// Qwen2 / Qwen2.5 (Qwen2ForCausalLM).
//
// Llama's tree and block with biases on q_proj, k_proj and v_proj (always, whatever the config says) and none on
// o_proj. A sliding window exists in the config but is off unless use_sliding_window is set; then the layers from
// max_window_layers on slide (config layer_types, transformers' Qwen2Config).
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family qwen2Family() {
    Family f = llamaFamily();
    f.modelType = "qwen2";
    f.architectures = {"Qwen2ForCausalLM"};
    f.title = "Qwen2";
    f.classPrefix = "Qwen2";
    f.summary = "Llama's block with biased query, key and value projections (o_proj has none); a sliding window only where "
                "use_sliding_window switches it on.";
    f.quirks = {"Biased q, k, v", "Grouped-query attention", "Gated MLP"};
    f.description =
        "Qwen2 (Qwen2ForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn, "
        "post_attention_layernorm, mlp}, norm} and lm_head. q_proj, k_proj and v_proj carry biases, o_proj does not. Under "
        "use_sliding_window, the layers from max_window_layers on attend only to the last sliding_window keys.";
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added to the stream with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Biased queries, keys and values",
         "q_proj, k_proj and v_proj always have a bias (Qwen2Attention hard-codes it; no config key turns it off); o_proj and "
         "the MLP have none. A zero query does not give a zero score: the key bias still adds q·b_k.",
         {"projection_biases"}},
        {"Sliding window, when it is on",
         "sliding_window is in every Qwen2 config, but it applies only under use_sliding_window: true, and then only to the "
         "layers from max_window_layers on (layer_types says which). A sliding layer's query i sees keys j with i − window < j ≤ i.",
         {"pattern_softmax"}},
        {"The readout",
         "logits is lm_head's output with nothing applied, so the logit lens at the last block equals the logits. The small "
         "Qwen2.5 checkpoints tie lm_head to embed_tokens.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Qwen2ForCausalLM checkpoints (model_type qwen2: Qwen2, Qwen2.5) load as qwen2.", {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 151936}, {"hidden_size", 4096}, {"intermediate_size", 22016},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 32},
                             {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"use_sliding_window", false},
                             {"sliding_window", 4096}, {"max_window_layers", 28},
                             {"bos_token_id", nullptr}, {"eos_token_id", nullptr}});  // Qwen2Config: no token ids
    f.attentionBiasKey.clear();  // Qwen2Attention: q/k/v always biased, o_proj never (set below)
    f.mlpBiasKey.clear();        // Qwen2MLP has no bias
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        c.attentionBias = true;  // Qwen2Attention: q/k/v always biased, o_proj never
        c.oProjBias = false;
        readQwenSlidingWindow(j, file, c);
    };
    return f;
}

void readQwenSlidingWindow(const nlohmann::json& j, const std::string& file, ModelConfig& c) {
    const bool on = cfg::getBool(j, "use_sliding_window", false, file);
    const bool typed = j.contains("layer_types") && !j["layer_types"].is_null();
    if (!on) {
        // Qwen2Config / Qwen3Config.__post_init__ set sliding_window to None; a layer typed "sliding_attention" then
        // fails in create_sliding_window_causal_mask ("Could not find a `sliding_window` argument in the config").
        if (typed) {
            const std::vector<bool> sliding = cfg::readLayerTypes(j, file, c.numLayers);
            for (size_t i = 0; i < sliding.size(); ++i)
                if (sliding[i])
                    throw Error(file + ": key \"layer_types\" marks layer " + std::to_string(i) +
                                " \"sliding_attention\" but use_sliding_window is false, so there is no window to apply "
                                "(transformers fails on this checkpoint); set use_sliding_window: true or make the layer "
                                "\"full_attention\".");
        }
        return;
    }
    c.slidingWindow = cfg::slidingWindow(j, file);
    if (typed) {
        c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        cfg::checkSlidingLayersHaveWindow(c, file);  // sliding_window null: the sliding layers' mask fails in transformers
    } else if (c.slidingWindow > 0) {
        const int64_t from = cfg::optInt(j, "max_window_layers", file).value_or(28);
        for (int64_t i = 0; i < c.numLayers; ++i) c.layerSliding[static_cast<size_t>(i)] = i >= from;
    }
}

}  // namespace nnscope
