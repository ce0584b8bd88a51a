// SPDX-License-Identifier: MIT
//
// GLM-4.5 (Glm4MoeForCausalLM: GLM-4.5, GLM-4.5-Air), and the reading of the DeepSeek-style router's keys the DeepSeek
// families share.
//
// Llama's tree with three differences. The attention rotates only the first int(head_dim * partial_rotary_factor)
// dimensions of each head (partial_rotary_factor 0.5 by default), its q/k/v projections are biased under
// attention_bias (o_proj never), and use_qk_norm adds per-head RMSNorms q_norm/k_norm before the rotary. The blocks from
// first_k_dense_replace on have a mixture of experts (Glm4MoeMoE), the first ones a dense MLP of intermediate_size: the
// router mlp.gate computes its logits in float32, chooses by sigmoid(logits) + e_score_correction_bias within the best
// topk_group of n_group groups (DeepSeek V3's router), weighs the chosen experts by their uncorrected sigmoid scores
// (renormalised under norm_topk_prob) times routed_scaling_factor, and adds mlp.shared_experts, one ungated MLP of
// n_shared_experts * moe_intermediate_size neurons every token goes through.
#include "families/families.h"

#include "core/model/error.h"

#include <cmath>

namespace nnscope {

void readGroupRouterConfig(const nlohmann::json& j, const std::string& file, RouterKind kind, ModelConfig& c) {
    MoeConfig& m = c.moe;
    m.router = kind;
    auto count = [&](const std::string& key, int64_t limit) {
        if (!j.contains(key) || j[key].is_null())
            throw Error(file + ": key \"" + key + "\" is missing or null; the mixture of experts needs it (a number from 1 to " +
                        std::to_string(limit) + ").");
        const int64_t v = cfg::getInt(j, key, file);
        if (v <= 0 || v > limit)
            throw Error(file + ": key \"" + key + "\" is " + std::to_string(v) + "; it must be between 1 and " + std::to_string(limit) + ".");
        return v;
    };
    m.numExperts = count("n_routed_experts", int64_t{1} << 14);
    m.topK = count("num_experts_per_tok", m.numExperts);
    m.expertIntermediateSize = count("moe_intermediate_size", int64_t{1} << 22);
    m.sharedExpertIntermediateSize = count("n_shared_experts", 1 << 10) * m.expertIntermediateSize;
    m.routedScalingFactor = cfg::getDouble(j, "routed_scaling_factor", file);
    if (!std::isfinite(m.routedScalingFactor))
        throw Error(file + ": key \"routed_scaling_factor\" must be a finite number (it multiplies the routing weights).");
    m.routerInFloat32 = true;
    m.weightsInFloat32 = true;  // the float32 weights multiply the experts' outputs, the product is cast back
    bool grouped = true;
    if (kind == RouterKind::SigmoidGroupTopK) {
        m.normTopkProb = cfg::getBool(j, "norm_topk_prob", true, file);
        m.correctionBias = true;
    } else {
        // DeepseekV2TopkRouter reads topk_method, not norm_topk_prob.
        const std::string method = cfg::getString(j, "topk_method", "greedy", file);
        if (method != "greedy" && method != "group_limited_greedy")
            throw Error(file + ": key \"topk_method\" is \"" + method + "\"; DeepseekV2TopkRouter computes \"greedy\" and "
                        "\"group_limited_greedy\" (transformers fails on any other).");
        m.groupLimited = method == "group_limited_greedy";
        grouped = m.groupLimited;
    }
    if (grouped) {
        m.numGroups = count("n_group", m.numExperts);
        m.topkGroup = count("topk_group", m.numGroups);
        const int64_t perGroup = m.numExperts / m.numGroups;
        if (m.numExperts % m.numGroups != 0 || (kind == RouterKind::SigmoidGroupTopK && perGroup < 2))
            throw Error(file + ": n_routed_experts (" + std::to_string(m.numExperts) + ") must split into n_group (" +
                        std::to_string(m.numGroups) + ") equal groups" +
                        (kind == RouterKind::SigmoidGroupTopK ? " of at least 2 experts (a group is scored by its two best)" : "") + ".");
        if (m.topK > m.topkGroup * perGroup)
            throw Error(file + ": num_experts_per_tok (" + std::to_string(m.topK) + ") is more than the " +
                        std::to_string(m.topkGroup * perGroup) + " experts of the topk_group best groups: the choice would take "
                        "masked experts in an unspecified order.");
    }
    const int64_t firstDense = cfg::getInt(j, "first_k_dense_replace", file);
    if (firstDense < 0) throw Error(file + ": key \"first_k_dense_replace\" is " + std::to_string(firstDense) + "; it must be 0 or more.");
    m.layerSparse.assign(static_cast<size_t>(c.numLayers), false);
    for (int64_t i = firstDense; i < c.numLayers; ++i) m.layerSparse[static_cast<size_t>(i)] = true;
}

void setSharedExpertsModules(Family& f) {
    f.setModule(Module::SharedExpert, "shared_experts", "shared_expert");
    f.setModule(Module::SharedGateProj, "gate_proj");
    f.setModule(Module::SharedUpProj, "up_proj");
    f.setModule(Module::SharedDownProj, "down_proj");
}

Family glm4_moeFamily() {
    Family f = llamaFamily();
    f.modelType = "glm4_moe";
    f.architectures = {"Glm4MoeForCausalLM"};
    f.title = "GLM-4.5";
    f.classPrefix = "Glm4Moe";
    f.summary = "Grouped-query attention with partial rotary and biased q/k/v, and a mixture of experts whose sigmoid router "
                "chooses within the best groups, beside always-on shared experts; the first blocks stay dense.";
    f.quirks = {"Mixture of experts", "Sigmoid router, group-limited top-k", "Shared experts", "Dense first blocks", "Partial rotary",
                "Grouped-query attention"};
    f.description =
        "GLM-4.5 (Glm4MoeForCausalLM).\n\nmodel.{embed_tokens, layers[i].{input_layernorm, self_attn.{q,k,v,o}_proj (q_norm, "
        "k_norm under use_qk_norm), post_attention_layernorm, mlp}, norm} and lm_head. From block first_k_dense_replace on, mlp "
        "is Glm4MoeMoE: gate (the router: weight and e_score_correction_bias), experts (mlp.experts.{e}.gate_proj/up_proj/"
        "down_proj) and shared_experts (one gated MLP of n_shared_experts * moe_intermediate_size neurons, no gate of its own); "
        "the first blocks have a dense MLP of intermediate_size neurons.";
    f.mlpFormulas = {"s = sigmoid(gate(z)) in float32;  the top num_experts_per_tok of s + e_score_correction_bias within the topk_group "
                     "best of n_group groups (a group scored by the sum of its two best)",
                     "w = s of the chosen (÷ (their sum + 1e-20) under norm_topk_prob) · routed_scaling_factor",
                     "mlp(z) = Σ_k w_k · experts[idx_k](z) + shared_experts(z)",
                     "on a dense block: mlp(z) = down_proj(silu(gate_proj(z)) * up_proj(z))"};
    f.partialRotary = true;
    f.qkNorm = true;  // under use_qk_norm (the config decides; see readConfig)
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    setExpertModules(f);
    setSharedExpertsModules(f);
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output (o_proj, never biased) and mlp_output the MLP's (routed experts + shared experts "
         "on a block with experts), added with nothing in between, so layers[i].input + attention_output + mlp_output == "
         "layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"The router: sigmoid scores, corrected for the choice only",
         "router_logits is mlp.gate's output, computed in float32 (the input and the weight cast up). Each expert's score is "
         "sigmoid(logit); e_score_correction_bias is added to the scores to choose, and only to choose: the experts fall into "
         "n_group groups, a group scores the sum of its two best corrected scores, and expert_indices are the "
         "num_experts_per_tok best corrected scores inside the topk_group best groups, in transformers' order (torch.topk with "
         "sorted=False, not largest first). expert_weights are the chosen experts' uncorrected sigmoid scores, divided by their "
         "sum (+ 1e-20) under norm_topk_prob, times routed_scaling_factor: the very numbers that multiply the experts' outputs, "
         "in float32, as the router returns them.",
         {"router_groups"}},
        {"Shared experts and dense first blocks",
         "Every token also goes through mlp.shared_experts, a gated MLP of n_shared_experts * moe_intermediate_size neurons with "
         "no gate of its own: shared_expert_output is its output, routed_output the experts' weighted sum, and mlp_output = "
         "routed_output + shared_expert_output. The first first_k_dense_replace blocks have a dense MLP of intermediate_size "
         "neurons (mlp_activation, mlp_neurons) and none of the mixture's values.",
         {"routed_is_weighted_sum"}},
        {"Partial rotary",
         "Only the first int(head_dim * partial_rotary_factor) dimensions of each query and key head turn (rotate_half within "
         "them; partial_rotary_factor 0.5 unless config.json says otherwise); the rest pass unchanged. use_qk_norm adds q_norm "
         "and k_norm, RMSNorms over head_dim with one gain for every head, before the rotary.",
         {"rope_kind", "gqa_scores", "pattern_softmax"}},
        {"The readout", "logits is lm_head's output with nothing applied; GLM-4.5 keeps lm_head untied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "Glm4MoeForCausalLM checkpoints (model_type glm4_moe) load as glm4_moe, with the experts stored one tensor per expert or "
         "stacked. The next-token-prediction layer real checkpoints store after the last block (model.layers.{num_hidden_layers}) "
         "is not part of the model: transformers ignores it, and nnscope lists it among the tensors it does not read.",
         {"loads_as"}},
    };
    // Glm4MoeConfig's defaults (transformers 5.23 configuration_glm4_moe.py); partial_rotary_factor 0.5 is set in its
    // __post_init__.
    f.configDefaults.update({{"vocab_size", 151552}, {"hidden_size", 4096}, {"intermediate_size", 10944}, {"num_hidden_layers", 46},
                             {"num_attention_heads", 96}, {"num_key_value_heads", 8}, {"hidden_act", "silu"},
                             {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5}, {"tie_word_embeddings", false},
                             {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.5}, {"attention_bias", false},
                             {"moe_intermediate_size", 1408}, {"num_experts_per_tok", 8}, {"n_shared_experts", 1},
                             {"n_routed_experts", 128}, {"routed_scaling_factor", 1.0}, {"n_group", 1}, {"topk_group", 1},
                             {"first_k_dense_replace", 1}, {"norm_topk_prob", true}, {"use_qk_norm", false},
                             {"bos_token_id", nullptr}, {"eos_token_id", nullptr}, {"pad_token_id", nullptr}});
    f.configDefaults.erase("mlp_bias");
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        c.oProjBias = false;  // Glm4MoeAttention: o_proj never biased
        c.qkNorm = cfg::getBool(j, "use_qk_norm", false, file);
        if (c.rotaryDim() % 2 != 0 || c.rotaryDim() <= 0)
            throw Error(file + ": the rotary width int(head_dim * partial_rotary_factor) = int(" + std::to_string(c.headDim) + " * " +
                        std::to_string(c.rope.partialRotaryFactor) + ") = " + std::to_string(c.rotaryDim()) +
                        " must be a positive even number (head_dim is hidden_size // num_attention_heads where the config has no "
                        "head_dim key: set it).");
        readGroupRouterConfig(j, file, RouterKind::SigmoidGroupTopK, c);
    };
    return f;
}

}  // namespace nnscope
