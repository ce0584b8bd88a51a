// SPDX-License-Identifier: MIT
//
// Qwen3 (Qwen3ForCausalLM).
//
// Llama's tree and block plus a per-head RMSNorm of the queries and of the keys (q_norm, k_norm, one gain over
// head_dim shared by every head) before the rotary, like Apertus. No biases unless attention_bias says so; head_dim is
// explicit in the config and need not be hidden_size / num_attention_heads. The sliding window is read as Qwen2's: off
// unless use_sliding_window is set, then on the layers from max_window_layers on (or as layer_types says).
#include "families/families.h"

namespace nnscope {

Family qwen3Family() {
    Family f = llamaFamily();
    f.modelType = "qwen3";
    f.architectures = {"Qwen3ForCausalLM"};
    f.title = "Qwen3";
    f.classPrefix = "Qwen3";
    f.summary = "Llama's block with an RMSNorm on each query and key head before the rotary, and an explicit head_dim.";
    f.quirks = {"Query/key norms", "Grouped-query attention", "Gated MLP"};
    f.description =
        "Qwen3 (Qwen3ForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn, "
        "post_attention_layernorm, mlp}, norm} and lm_head. self_attn norms each query and key head with q_norm and k_norm "
        "(RMSNorm over head_dim) before the rotary; num_attention_heads × head_dim may differ from hidden_size. Under "
        "use_sliding_window, the layers from max_window_layers on attend only to the last sliding_window keys.";
    f.qkNorm = true;
    f.qkNormKind = NormKind::RMSNorm;
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's, added with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Queries and keys are normed per head",
         "q_norm and k_norm are RMSNorms over head_dim, one gain shared by every head, applied to the projected queries and "
         "keys before the rotary. attention_queries and attention_keys are read after both.",
         {"gqa_scores", "pattern_softmax"}},
        {"Sliding window, when it is on",
         "sliding_window is in every Qwen3 config (4096), but it applies only under use_sliding_window: true, and then only "
         "to the layers from max_window_layers on (layer_types says which, when given). A sliding layer's query i sees keys "
         "j with i − window < j ≤ i.",
         {"pattern_softmax"}},
        {"The readout", "logits is lm_head's output with nothing applied; the small checkpoints tie it to embed_tokens.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Qwen3ForCausalLM checkpoints (model_type qwen3) load as qwen3.", {"loads_as"}},
    };
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    f.configDefaults.update({{"vocab_size", 151936}, {"hidden_size", 4096}, {"intermediate_size", 22016},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 32},
                             {"head_dim", 128}, {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6},
                             {"use_sliding_window", false}, {"sliding_window", 4096}, {"max_window_layers", 28},
                             {"bos_token_id", nullptr}, {"eos_token_id", nullptr}});  // Qwen3Config: no token ids
    f.mlpBiasKey.clear();  // the MLP is built with bias=False; attention_bias biases q/k/v/o
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        readQwenSlidingWindow(j, file, c);
    };
    return f;
}

}  // namespace nnscope
