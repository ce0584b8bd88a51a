// SPDX-License-Identifier: MIT
//
// gpt-oss (GptOssForCausalLM, OpenAI's open-weight mixture of experts).
//
// Llama's tree, model.{embed_tokens, layers[i].{input_layernorm, self_attn, post_attention_layernorm, mlp}, norm} and
// lm_head, with four differences, all in transformers 5.23's modeling_gpt_oss.py:
//  - learned attention sinks: self_attn.sinks holds one logit per query head, concatenated to every row of scores
//    before the softmax and dropped after it, so a row of attention_probabilities sums to less than 1 (the rest went to
//    the sink); q/k/v and o_proj all carry biases (attention_bias);
//  - the blocks alternate sliding-window (sliding_window keys) and full attention, as layer_types says (by default the
//    even blocks slide);
//  - every MLP is a mixture: mlp.router (Linear hidden_size -> num_local_experts WITH a bias) picks the top k logits and
//    weighs them by a softmax over those k alone; mlp.experts stores every expert stacked and transposed,
//    gate_up_proj [experts, hidden, 2 · intermediate] (gate and up interleaved: even and odd columns) and down_proj
//    [experts, intermediate, hidden], each with a bias, or MXFP4-packed as the hub's files hold them (*_blocks, *_scales);
//  - each expert is a clamped SwiGLU: gate clamped above at swiglu_limit, up clamped to [-limit, limit],
//    (up + 1) · gate · sigmoid(swiglu_alpha · gate).
// The rotary is YaRN (factor 32 over 4096 pretraining positions by default). The RMSNorm multiplies its gain in float32
// and casts once (GptOssRMSNorm).
#include "families/families.h"

#include "core/model/error.h"

#include <cmath>

namespace nnscope {

Family gpt_ossFamily() {
    Family f = llamaFamily();
    f.modelType = "gpt_oss";
    f.architectures = {"GptOssForCausalLM"};
    f.title = "gpt-oss";
    f.classPrefix = "GptOss";
    f.summary = "A mixture of experts in every block, with learned attention sinks and alternating sliding-window and full "
                "attention.";
    f.quirks = {"Mixture of experts", "Top-k then softmax", "Attention sinks", "Clamped SwiGLU", "Sliding window",
                "YaRN rotary", "MXFP4 experts"};
    f.description =
        "gpt-oss (GptOssForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn (q_proj, "
        "k_proj, v_proj, o_proj, all biased; sinks), post_attention_layernorm, mlp (router, experts)}, norm} and lm_head. "
        "self_attn.sinks [num_heads] is one learned logit per head that competes with the keys in the softmax and is then "
        "dropped. mlp.router is a biased Linear hidden_size -> num_local_experts; mlp.experts holds gate_up_proj [experts, "
        "hidden_size, 2 · intermediate_size] (gate and up interleaved), down_proj [experts, intermediate_size, hidden_size] "
        "and their biases, or their MXFP4 blocks and scales.";
    f.mlpFormulas = {"top, idx = topk(router(z), num_experts_per_tok);  w = softmax(top)",
                     "mlp(z) = Σ_k w_k · experts[idx_k](z)",
                     "experts[e](z) = down_e((clamp(u, -limit, limit) + 1) · g · sigmoid(alpha · g)) + down_bias_e,  "
                     "g = min(gate_up_e(z)[0::2], limit),  u = gate_up_e(z)[1::2]"};
    f.rmsGainInFloat32 = true;  // GptOssRMSNorm: (weight * hidden_states).to(input_dtype)
    f.attentionSinks = true;
    f.experts = true;
    f.expertMlp = ExpertMlp::ClampedSwiGlu;
    f.setModule(Module::Router, "router");
    f.setModule(Module::Experts, "experts");
    f.setModule(Module::ExpertGateProj, "gate_up_proj");
    f.setModule(Module::ExpertDownProj, "down_proj");
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output (o_proj with its bias) and mlp_output the mixture's weighted sum, added with "
         "nothing in between, so layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"Attention sinks: a row of the pattern sums to less than 1",
         "Each head has a learned sink logit (self_attn.sinks). It joins every row of the masked scores as one more column, "
         "the softmax runs over keys and sink, and the sink's column is dropped: attention_probabilities keeps transformers' "
         "layout [batch, heads, query, key] and each row sums to 1 minus the sink's share, the attention a head paid to "
         "nothing. attention_scores are the masked scores before the sink joins them. The attention view shows the sink's "
         "share as a column of its own.",
         {"attention_sinks", "pattern_softmax"}},
        {"The router: the top k logits, then a softmax over them",
         "mlp.router has a bias. router_logits is its output [batch, seq, num_local_experts]; expert_indices are the "
         "num_experts_per_tok largest logits, largest first, and expert_weights the softmax of those k logits alone, in the "
         "compute dtype: they sum to 1. Only the chosen experts run. Forbid an expert by setting its router logit to -inf.",
         {"router_topk"}},
        {"Each expert is a clamped SwiGLU with biases",
         "gate_up_proj's output interleaves gate (even columns) and up (odd columns). gate is clamped above at swiglu_limit "
         "and up to [-limit, limit]; the expert computes (up + 1) · gate · sigmoid(swiglu_alpha · gate), then down_proj with "
         "its bias. expert_outputs holds that output before the weight; routed_output = mlp_output = Σ_k expert_weights[k] · "
         "expert_outputs[k].",
         {"routed_is_weighted_sum"}},
        {"Sliding and full blocks alternate",
         "layer_types says which blocks see only the last sliding_window keys (by default the even blocks, 0, 2, ...); the "
         "others see every key.",
         {"gqa_scores"}},
        {"MXFP4 experts are dequantized one expert at a time",
         "The hub's checkpoints store the experts' weights MXFP4-packed: *_blocks (two 4-bit e2m1 values per byte) and "
         "*_scales (one power-of-two exponent per 32 values). nnscope keeps them packed in the mapped file and dequantizes "
         "an expert only when a token routes to it, to exactly the numbers transformers' dequantization gives.",
         {"routed_is_weighted_sum"}},
        {"The readout", "logits is lm_head's output with nothing applied; gpt-oss keeps lm_head untied.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "GptOssForCausalLM checkpoints (model_type gpt_oss) load as gpt_oss.", {"loads_as"}},
    };
    // GptOssConfig's defaults (configuration_gpt_oss.py; default_theta 150000, the YaRN rotary of __post_init__)
    f.configDefaults.update({{"vocab_size", 201088}, {"hidden_size", 2880}, {"intermediate_size", 2880}, {"head_dim", 64},
                             {"num_hidden_layers", 36}, {"num_attention_heads", 64}, {"num_key_value_heads", 8},
                             {"num_local_experts", 128}, {"num_experts_per_tok", 4}, {"sliding_window", 128},
                             {"tie_word_embeddings", false}, {"hidden_act", "silu"}, {"max_position_embeddings", 131072},
                             {"rms_norm_eps", 1e-5}, {"rope_theta", 150000.0}, {"swiglu_alpha", 1.702}, {"swiglu_limit", 7.0},
                             {"attention_bias", true}, {"bos_token_id", nullptr}, {"eos_token_id", nullptr},
                             {"pad_token_id", nullptr},
                             {"rope_parameters", {{"rope_type", "yarn"}, {"factor", 32.0}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                                                  {"truncate", false}, {"original_max_position_embeddings", 4096}}}});
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        c.slidingWindow = cfg::slidingWindow(j, file);
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        } else {  // GptOssConfig.__post_init__: the even blocks (0, 2, ...) slide
            c.layerSliding.assign(static_cast<size_t>(c.numLayers), false);
            for (int64_t i = 0; i < c.numLayers; ++i) c.layerSliding[static_cast<size_t>(i)] = (i + 1) % 2 != 0;
        }
        cfg::checkSlidingLayersHaveWindow(c, file);
        readMoeConfig(j, file, "intermediate_size", false, c);
        c.moe.router = RouterKind::TopKThenSoftmax;
        c.moe.routerBias = true;
        c.moe.normTopkProb = true;  // a softmax over the chosen k: the weights sum to 1
        c.moe.swigluAlpha = cfg::getDouble(j, "swiglu_alpha", file);
        c.moe.swigluLimit = cfg::getDouble(j, "swiglu_limit", file);
        if (!std::isfinite(c.moe.swigluLimit) || c.moe.swigluLimit <= 0)
            throw Error(file + ": key \"swiglu_limit\" must be a positive number (the experts' clamp), not " +
                        std::to_string(c.moe.swigluLimit) + ".");
        if (!std::isfinite(c.moe.swigluAlpha))
            throw Error(file + ": key \"swiglu_alpha\" must be a finite number (the experts' sigmoid gain).");
    };
    return f;
}

}  // namespace nnscope
