// SPDX-License-Identifier: MIT
//
// Mistral (MistralForCausalLM).
//
// Llama's tree and block; the attention of every layer sees only the last sliding_window keys when the config sets
// one (transformers picks the sliding mask for the whole model from config.sliding_window, whatever layer_types says).
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family mistralFamily() {
    Family f = llamaFamily();
    f.modelType = "mistral";
    f.architectures = {"MistralForCausalLM"};
    f.title = "Mistral";
    f.classPrefix = "Mistral";
    f.summary = "Llama's block whose attention, when sliding_window is set, sees only the last sliding_window tokens.";
    f.quirks = {"Sliding-window attention", "Grouped-query attention", "Gated MLP"};
    f.description =
        "Mistral (MistralForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn, "
        "post_attention_layernorm, mlp}, norm} and lm_head. With sliding_window set, query i of every layer attends to the "
        "keys j with i − sliding_window < j ≤ i.";
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, so layers[i].input + attention_output + mlp_output "
         "== layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Sliding-window attention",
         "When config.json sets sliding_window (4096 on Mistral-7B v0.1; null on later releases), every layer masks the keys "
         "more than sliding_window − 1 tokens back: attention_scores holds finfo.min there and attention_probabilities zero.",
         {"pattern_softmax", "gqa_scores"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "MistralForCausalLM checkpoints (model_type mistral) load as mistral.", {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                             {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
                             {"sliding_window", 4096}, {"bos_token_id", 1}, {"eos_token_id", 2}});
    f.attentionBiasKey.clear();  // MistralAttention's projections have no bias: attention_bias is not read
    f.mlpBiasKey.clear();        // nor is mlp_bias (MistralMLP)
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeSlidingConfig(j, file, fam, c);
        // transformers' AutoConfig reads a mistral config.json that has a "layer_types" key (even null) as ministral:
        // the same model with the window on the layers layer_types marks sliding (all of them when it is null), and an
        // attention that takes its width from head_dim alone (MinistralConfig has no default for it).
        if (!j.contains("layer_types")) return;
        if (!j.contains("head_dim") || j["head_dim"].is_null())
            throw Error(file + ": has \"layer_types\", so transformers loads it as Ministral, whose attention needs \"head_dim\" "
                        "(it has no default there, and transformers fails on this file). Add head_dim (hidden_size / "
                        "num_attention_heads = " + std::to_string(c.hiddenSize / c.numHeads) + " for Mistral's layout).");
        if (!j["layer_types"].is_null()) c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        cfg::checkSlidingLayersHaveWindow(c, file);
    };
    return f;
}

void readLlamaLikeSlidingConfig(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
    readLlamaLikeConfig(j, file, fam, c);
    c.slidingWindow = cfg::slidingWindow(j, file);
    c.layerSliding.assign(static_cast<size_t>(c.numLayers), c.slidingWindow > 0);
}

}  // namespace nnscope
