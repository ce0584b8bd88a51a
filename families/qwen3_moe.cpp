// SPDX-License-Identifier: MIT
//
// Qwen3-MoE (Qwen3MoeForCausalLM), and the reading of a mixture's keys the other mixture families share.
//
// Qwen3's attention (per-head q_norm/k_norm before the rotary, explicit head_dim) with a mixture of experts in place of
// the MLP on the blocks decoder_sparse_step and mlp_only_layers pick: a router mlp.gate (Linear hidden_size ->
// num_experts, no bias) whose softmax (float32) gives every expert a probability; each token goes through the
// num_experts_per_tok most probable experts, weighted by those probabilities (divided by their sum under
// norm_topk_prob), and the weighted outputs are summed. Each expert is a gated SiLU MLP of moe_intermediate_size
// neurons. The other blocks have Qwen3's dense MLP of intermediate_size neurons. Checkpoints store one tensor per expert
// (mlp.experts.{e}.gate_proj.weight, as transformers 5.23 still saves them); transformers' own stacked layout
// (mlp.experts.gate_up_proj, mlp.experts.down_proj) loads too.
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

void readMoeConfig(const nlohmann::json& j, const std::string& file, const std::string& expertSizeKey, bool sparseStepKeys,
                   ModelConfig& c) {
    MoeConfig& m = c.moe;
    const char* expertsKey = j.contains("num_local_experts") && !j["num_local_experts"].is_null() ? "num_local_experts" : "num_experts";
    m.numExperts = cfg::getInt(j, expertsKey, file);
    m.topK = cfg::getInt(j, "num_experts_per_tok", file);
    m.expertIntermediateSize = cfg::getInt(j, expertSizeKey, file);
    m.normTopkProb = cfg::getBool(j, "norm_topk_prob", false, file);
    auto positive = [&](const std::string& key, int64_t v, int64_t limit) {
        if (v <= 0 || v > limit)
            throw Error(file + ": key \"" + key + "\" is " + std::to_string(v) + "; it must be between 1 and " + std::to_string(limit) + ".");
    };
    positive(expertsKey, m.numExperts, int64_t{1} << 14);
    positive("num_experts_per_tok", m.topK, m.numExperts);
    positive(expertSizeKey, m.expertIntermediateSize, int64_t{1} << 22);
    int64_t step = 1;
    std::vector<bool> dense(static_cast<size_t>(c.numLayers), false);
    if (sparseStepKeys) {
        step = cfg::optInt(j, "decoder_sparse_step", file).value_or(1);
        if (step < 1) throw Error(file + ": key \"decoder_sparse_step\" is " + std::to_string(step) + "; it must be 1 or more.");
        if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
            if (!j["mlp_only_layers"].is_array())
                throw Error(file + ": key \"mlp_only_layers\" must be a list of block indices.");
            for (const auto& v : j["mlp_only_layers"]) {
                if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.numLayers)
                    throw Error(file + ": key \"mlp_only_layers\" holds " + v.dump() + ", not a block index from 0 to " +
                                std::to_string(c.numLayers - 1) + ".");
                dense[static_cast<size_t>(v.get<int64_t>())] = true;
            }
        }
    }
    m.layerSparse.assign(static_cast<size_t>(c.numLayers), false);
    for (int64_t i = 0; i < c.numLayers; ++i) m.layerSparse[static_cast<size_t>(i)] = !dense[static_cast<size_t>(i)] && (i + 1) % step == 0;
}

void setExpertModules(Family& f, const char* gateProj, const char* upProj, const char* downProj) {
    f.experts = true;
    f.setModule(Module::Router, "gate", "router");
    f.setModule(Module::Experts, "experts");
    f.setModule(Module::ExpertGateProj, gateProj);
    f.setModule(Module::ExpertUpProj, upProj);
    f.setModule(Module::ExpertDownProj, downProj);
}

Family qwen3_moeFamily() {
    Family f = llamaFamily();
    f.modelType = "qwen3_moe";
    f.architectures = {"Qwen3MoeForCausalLM"};
    f.title = "Qwen3-MoE";
    f.classPrefix = "Qwen3Moe";
    f.summary = "Qwen3's attention with a mixture of experts in place of the MLP: a router picks the top k of num_experts gated "
                "MLPs for each token.";
    f.quirks = {"Mixture of experts", "Softmax then top-k", "Query/key norms", "Grouped-query attention"};
    f.description =
        "Qwen3-MoE (Qwen3MoeForCausalLM).\n\nQwen3's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn (q_norm, "
        "k_norm), post_attention_layernorm, mlp}, norm} and lm_head. On a sparse block mlp is Qwen3MoeSparseMoeBlock: gate (the "
        "router, Linear hidden_size -> num_experts) and experts (num_experts gated MLPs of moe_intermediate_size neurons, stored "
        "mlp.experts.{e}.gate_proj/up_proj/down_proj). A block is sparse unless mlp_only_layers lists it, when (i + 1) is a "
        "multiple of decoder_sparse_step; the others have Qwen3's dense MLP of intermediate_size neurons.";
    f.mlpFormulas = {"p = softmax(gate(z)) in float32;  top = the num_experts_per_tok largest p  (÷ their sum under norm_topk_prob)",
                     "mlp(z) = Σ_k top_k · experts[idx_k](z),  experts[e](z) = down_e(silu(gate_e(z)) * up_e(z))",
                     "on a dense block: mlp(z) = down_proj(silu(gate_proj(z)) * up_proj(z))"};
    f.qkNorm = true;
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    setExpertModules(f);
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's (the mixture's weighted sum on a sparse block), added "
         "with nothing in between, so layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"The router: softmax, then the top k",
         "mlp.gate's output is router_logits [batch, seq, num_experts]. Its softmax, in float32, gives each expert a probability; "
         "expert_indices are the num_experts_per_tok most probable experts, largest first, and expert_weights their "
         "probabilities, divided by their sum when norm_topk_prob is true (otherwise they sum to less than 1). Only the chosen "
         "experts run.",
         {"router_topk"}},
        {"The routed output is the weighted sum of the chosen experts",
         "expert_outputs holds each chosen expert's output before its weight, [batch, seq, top_k, hidden_size]; routed_output "
         "= Σ_k expert_weights[k] · expert_outputs[k], and on Qwen3-MoE it is the MLP's whole output. Forbid an expert by "
         "setting its router logit to -inf (an edit of router_logits): the router then picks the next one.",
         {"routed_is_weighted_sum"}},
        {"Dense and sparse blocks",
         "decoder_sparse_step and mlp_only_layers decide which blocks have experts; the others are Qwen3's dense MLP, where "
         "mlp_activation and mlp_neurons exist and the mixture's values do not. The support table says which blocks have each.",
         {"contribution_identity"}},
        {"Queries and keys are normed per head",
         "q_norm and k_norm are RMSNorms over head_dim, one gain shared by every head, before the rotary, as in Qwen3.",
         {"gqa_scores", "pattern_softmax"}},
        {"The readout", "logits is lm_head's output with nothing applied; Qwen3-MoE checkpoints keep lm_head untied.",
         {"lens_equals_logits", "tied_head"}},
        {"What loads as this family",
         "Qwen3MoeForCausalLM checkpoints (model_type qwen3_moe) load as qwen3_moe, with the experts stored one tensor per expert "
         "or stacked.",
         {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 151936}, {"hidden_size", 2048}, {"intermediate_size", 6144},
                             {"num_hidden_layers", 24}, {"num_attention_heads", 32}, {"num_key_value_heads", 4},
                             {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"use_sliding_window", false},
                             {"sliding_window", 4096}, {"decoder_sparse_step", 1}, {"moe_intermediate_size", 768},
                             {"num_experts_per_tok", 8}, {"num_experts", 128}, {"norm_topk_prob", false},
                             {"mlp_only_layers", nlohmann::json::array()}, {"tie_word_embeddings", false},
                             {"bos_token_id", nullptr}, {"eos_token_id", nullptr}});
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        // Qwen3MoeConfig.__post_init__: sliding_window only under use_sliding_window, then on every block.
        c.slidingWindow = cfg::getBool(j, "use_sliding_window", false, file) ? cfg::slidingWindow(j, file) : 0;
        c.layerSliding.assign(static_cast<size_t>(c.numLayers), c.slidingWindow > 0);
        readMoeConfig(j, file, "moe_intermediate_size", true, c);
    };
    return f;
}

}  // namespace nnscope
