// SPDX-License-Identifier: MIT
//
// OLMo 3 (Olmo3ForCausalLM).
//
// OLMo 2's block (no pre-norms; post_attention_layernorm and post_feedforward_layernorm on the branch outputs; q_norm
// and k_norm over the whole projections) with a sliding window on the blocks layer_types marks sliding_attention (three
// of every four by default) and one rotary per layer type (rope_parameters.full_attention / .sliding_attention).
#include "families/families.h"

namespace nnscope {

Family olmo2Family();

Family olmo3Family() {
    Family f = olmo2Family();
    f.modelType = "olmo3";
    f.architectures = {"Olmo3ForCausalLM"};
    f.title = "OLMo 3";
    f.classPrefix = "Olmo3";
    f.summary = "OLMo 2's post-norm block with a sliding window on three of every four blocks, and a rotary per layer type.";
    f.quirks = {"Post-norm branches", "Query/key norms over the projection", "Sliding-window attention", "Rotary per layer type"};
    f.description =
        "OLMo 3 (Olmo3ForCausalLM).\n\nOLMo 2's tree and block: model.{embed_tokens, layers[i].{self_attn, "
        "post_attention_layernorm, mlp, post_feedforward_layernorm}, norm} and lm_head. The blocks layer_types marks "
        "sliding_attention see only the last sliding_window keys; each layer type turns its queries and keys with its own "
        "rotary (rope_parameters.full_attention, rope_parameters.sliding_attention).";
    f.notes = {
        {"What is added to the stream is normed",
         "As in OLMo 2, attention_output and mlp_output are the modules' outputs; the stream receives "
         "post_attention_layernorm(attention_output) and post_feedforward_layernorm(mlp_output), so layers[i].input + "
         "attention_output + mlp_output is NOT layer_output. With no pre-norm, attention_norm_output is the block's input "
         "and mlp_norm_output is layer_mid.",
         {"contribution_identity", "projection_biases"}},
        {"Queries and keys are normed over the whole projection",
         "q_norm is an RMSNorm of width num_heads × head_dim over q_proj's output (k_norm likewise over k_proj's), before the "
         "heads are cut and before the rotary.",
         {"gqa_scores"}},
        {"A sliding window per block",
         "layer_types names each block's attention: sliding_attention blocks (by default all but every fourth, 0, 1, 2, 4, "
         "...) see only the last sliding_window keys (4096 by default), full_attention blocks every earlier key. Each type "
         "has its own rotary: the full blocks' may be scaled (yarn on the long-context checkpoints), the sliding blocks' is "
         "plain; a top-level rope_theta sets only the full blocks' theta (Olmo3Config gives the sliding ones 500000).",
         {"sliding_window", "pattern_softmax", "gqa_scores"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Olmo3ForCausalLM checkpoints (model_type olmo3) load as olmo3.", {"loads_as"}},
    };
    // Olmo3Config's defaults (transformers configuration_olmo3.py; default_theta 500000 for both layer types).
    f.configDefaults.update({{"vocab_size", 50304}, {"hidden_size", 4096}, {"intermediate_size", 11008},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"max_position_embeddings", 2048},
                             {"rms_norm_eps", 1e-5}, {"pad_token_id", 1}, {"bos_token_id", nullptr}, {"eos_token_id", 50279},
                             {"tie_word_embeddings", false}, {"sliding_window", 4096}});
    f.configDefaults.erase("rope_theta");  // the thetas are read per layer type below
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        // The rotary keys are read per layer type (readRopeByLayerType); the common reader sees none.
        nlohmann::json common = j;
        for (const char* key : {"rope_parameters", "rope_scaling"}) common.erase(key);
        readLlamaLikeConfig(common, file, fam, c);
        c.slidingWindow = cfg::slidingWindow(j, file);
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        } else {  // Olmo3Config: every fourth block attends to every key
            for (int64_t i = 0; i < c.numLayers; ++i) c.layerSliding[static_cast<size_t>(i)] = (i + 1) % 4 != 0;
        }
        cfg::checkSlidingLayersHaveWindow(c, file);
        readRopeByLayerType(j, file, 500000.0, nullptr, 500000.0, c);
    };
    return f;
}

}  // namespace nnscope
