// SPDX-License-Identifier: MIT
//
// SmolLM3 (SmolLM3ForCausalLM).
//
// Llama's tree and block, with NoPE blocks: every block whose no_rope_layers entry is 0 (by default every fourth,
// no_rope_layer_interval) hands its queries and keys to the attention without the rotary, so position enters there
// only through the causal mask. With use_sliding_window, the NoPE blocks are the ones that slide (layer_types).
#include "families/families.h"
#include "core/io/jsonfile.h"
#include "core/model/error.h"

namespace nnscope {

namespace {

/// SmolLM3Config.__post_init__: no_rope_layers (1: the block uses the rotary, 0: NoPE) or, without it, a NoPE block
/// every no_rope_layer_interval blocks; layer_types, or without it sliding_attention on the NoPE blocks when
/// use_sliding_window and sliding_window are set.
void readSmolLM3Config(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
    readLlamaLikeConfig(j, file, fam, c);
    const auto n = static_cast<size_t>(c.numLayers);
    c.layerNoRope.assign(n, false);
    if (j.contains("no_rope_layers") && !j["no_rope_layers"].is_null()) {
        const nlohmann::json& list = j["no_rope_layers"];
        if (!list.is_array() || list.size() < n)
            throw Error(file + ": key \"no_rope_layers\" must list 1 (rotary) or 0 (NoPE) for each of the " + std::to_string(n) +
                        " blocks (num_hidden_layers); it is " + jsonExcerpt(list) + ".");
        for (size_t i = 0; i < n; ++i) {
            const nlohmann::json& v = list[i];
            // SmolLM3Attention tests the entry's truth (`if self.use_rope`): 0 / false is a NoPE block.
            if (!(v.is_boolean() || v.is_number_integer()))
                throw Error(file + ": key \"no_rope_layers\" entry " + std::to_string(i) + " is " + jsonExcerpt(v) +
                            ": each entry is 1 (the block uses the rotary) or 0 (NoPE).");
            c.layerNoRope[i] = v.is_boolean() ? !v.get<bool>() : v.get<int64_t>() == 0;
        }
    } else {
        const int64_t interval = cfg::optInt(j, "no_rope_layer_interval", file).value_or(4);
        if (interval <= 0)  // transformers divides by it ((i + 1) % interval)
            throw Error(file + ": key \"no_rope_layer_interval\" is " + std::to_string(interval) +
                        ": a NoPE block every that many blocks, so it must be positive.");
        for (size_t i = 0; i < n; ++i) c.layerNoRope[i] = (static_cast<int64_t>(i) + 1) % interval == 0;
    }
    // The eager mask of a block typed sliding_attention is the sliding one whatever use_sliding_window says
    // (create_sliding_window_causal_mask reads config.sliding_window); use_sliding_window only derives layer_types.
    c.slidingWindow = cfg::slidingWindow(j, file);
    if (j.contains("layer_types") && !j["layer_types"].is_null()) {
        c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
    } else if (cfg::getBool(j, "use_sliding_window", false, file) && c.slidingWindow > 0) {
        for (size_t i = 0; i < n; ++i) c.layerSliding[i] = c.layerNoRope[i];
    }
    cfg::checkSlidingLayersHaveWindow(c, file);
}

}  // namespace

Family smollm3Family() {
    Family f = llamaFamily();
    f.modelType = "smollm3";
    f.architectures = {"SmolLM3ForCausalLM"};
    f.title = "SmolLM3";
    f.classPrefix = "SmolLM3";
    f.summary = "Llama's block with NoPE blocks: every fourth block (no_rope_layers) attends without the rotary.";
    f.quirks = {"NoPE blocks", "Gated MLP", "Grouped-query attention"};
    f.description =
        "SmolLM3 (SmolLM3ForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn, "
        "post_attention_layernorm, mlp}, norm} and lm_head. A block whose no_rope_layers entry is 0 skips the rotary: its "
        "queries and keys are q_proj's and k_proj's outputs cut into heads.";
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added to the stream with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output holds exactly in float32.",
         {"contribution_identity", "projection_biases"}},
        {"NoPE blocks",
         "no_rope_layers lists 1 (rotary) or 0 (NoPE) per block; without it, every no_rope_layer_interval-th block (the "
         "fourth, 3, 7, 11, ...) is NoPE. In a NoPE block attention_queries and attention_keys are q_proj's and k_proj's "
         "outputs cut into heads, unturned: position reaches its scores only through the causal mask. The other blocks turn "
         "them with the rotary (rope_theta 2e6 by default).",
         {"no_rope_layers", "rope_kind"}},
        {"Grouped-query attention",
         "attention_keys and attention_values are read before repeat_kv, [batch, num_kv_heads, seq, head_dim]; an edit to "
         "key/value head j reaches the query heads of its group. With use_sliding_window, the NoPE blocks attend through "
         "the sliding window (layer_types).",
         {"gqa_scores", "pattern_softmax", "sliding_window"}},
        {"The readout", "logits is lm_head's output with no cap or scale; the embeddings are tied by default.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "SmolLM3ForCausalLM checkpoints (model_type smollm3) load as smollm3.", {"loads_as"}},
    };
    // SmolLM3Config's defaults (transformers configuration_smollm3.py; default_theta 2e6).
    f.configDefaults.update({{"vocab_size", 128256}, {"hidden_size", 2048}, {"intermediate_size", 11008},
                             {"num_hidden_layers", 36}, {"num_attention_heads", 16}, {"num_key_value_heads", 4},
                             {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"pad_token_id", 128004},
                             {"bos_token_id", 128000}, {"eos_token_id", 128001}, {"rope_theta", 2000000.0},
                             {"use_sliding_window", false}, {"sliding_window", nullptr}, {"no_rope_layer_interval", 4},
                             {"tie_word_embeddings", true}});
    f.readConfig = readSmolLM3Config;
    return f;
}

}  // namespace nnscope
