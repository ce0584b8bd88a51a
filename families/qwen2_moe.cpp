// SPDX-License-Identifier: MIT
//
// Qwen2-MoE (Qwen2MoeForCausalLM: Qwen1.5-MoE, Qwen2-57B-A14B).
//
// Qwen2's attention (q/k/v biased under qkv_bias, o_proj never) with Qwen3-MoE's mixture (router softmax in float32,
// the top num_experts_per_tok, renormalised under norm_topk_prob, only the chosen experts run) and one more expert
// every token goes through: mlp.shared_expert (a gated MLP of shared_expert_intermediate_size neurons), scaled by
// sigmoid(mlp.shared_expert_gate(x)) and added to the routed output. The blocks decoder_sparse_step and mlp_only_layers
// leave dense have Qwen2's MLP of intermediate_size neurons. use_sliding_window is refused (its layer rule is not
// implemented here).
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family qwen2_moeFamily() {
    Family f = llamaFamily();
    f.modelType = "qwen2_moe";
    f.architectures = {"Qwen2MoeForCausalLM"};
    f.title = "Qwen2-MoE";
    f.classPrefix = "Qwen2Moe";
    f.summary = "Qwen2's biased attention with a mixture of experts and a shared expert behind a sigmoid gate.";
    f.quirks = {"Mixture of experts", "Shared expert", "Softmax then top-k", "Biased q, k, v"};
    f.description =
        "Qwen2-MoE (Qwen2MoeForCausalLM).\n\nLlama's tree; on a sparse block mlp is Qwen2MoeSparseMoeBlock: gate (the router, "
        "Linear hidden_size -> num_experts), experts (mlp.experts.{e}.gate_proj/up_proj/down_proj), shared_expert (a gated MLP "
        "of shared_expert_intermediate_size neurons) and shared_expert_gate (Linear hidden_size -> 1). mlp(z) = routed(z) + "
        "sigmoid(shared_expert_gate(z)) * shared_expert(z).";
    f.mlpFormulas = {"p = softmax(gate(z)) in float32;  top = the num_experts_per_tok largest p  (÷ their sum under norm_topk_prob)",
                     "mlp(z) = Σ_k top_k · experts[idx_k](z) + sigmoid(shared_expert_gate(z)) · shared_expert(z)",
                     "on a dense block: mlp(z) = down_proj(silu(gate_proj(z)) * up_proj(z))"};
    setExpertModules(f);
    f.setModule(Module::SharedExpert, "shared_expert");
    f.setModule(Module::SharedGateProj, "gate_proj");
    f.setModule(Module::SharedUpProj, "up_proj");
    f.setModule(Module::SharedDownProj, "down_proj");
    f.setModule(Module::SharedExpertGate, "shared_expert_gate");
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's (routed + gated shared expert on a sparse block), added "
         "with nothing in between, so layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"The router: softmax, then the top k",
         "router_logits is mlp.gate's output; its float32 softmax gives each expert a probability, expert_indices are the "
         "num_experts_per_tok most probable and expert_weights their probabilities, renormalised only under norm_topk_prob "
         "(false in the Qwen1.5/Qwen2 checkpoints: the weights then sum to less than 1).",
         {"router_topk"}},
        {"A shared expert behind a sigmoid gate",
         "Every token also goes through shared_expert, whose output is multiplied by sigmoid(shared_expert_gate(x)) (one number "
         "per token) before it is added: shared_expert_output is that product, routed_output the experts' weighted sum, and "
         "mlp_output = routed_output + shared_expert_output.",
         {"routed_is_weighted_sum"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Qwen2MoeForCausalLM checkpoints (model_type qwen2_moe) load as qwen2_moe.", {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 151936}, {"hidden_size", 2048}, {"intermediate_size", 5632},
                             {"num_hidden_layers", 24}, {"num_attention_heads", 16}, {"num_key_value_heads", 16},
                             {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"use_sliding_window", false},
                             {"decoder_sparse_step", 1}, {"moe_intermediate_size", 1408},
                             {"shared_expert_intermediate_size", 5632}, {"num_experts_per_tok", 4}, {"num_experts", 60},
                             {"norm_topk_prob", false}, {"mlp_only_layers", nlohmann::json::array()}, {"qkv_bias", true},
                             {"tie_word_embeddings", false}, {"bos_token_id", nullptr}, {"eos_token_id", nullptr}});
    f.attentionBiasKey = "qkv_bias";
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        c.oProjBias = false;  // Qwen2MoeAttention: o_proj never biased
        if (cfg::getBool(j, "use_sliding_window", false, file))
            throw Error(file + ": key \"use_sliding_window\" is true; nnscope does not implement Qwen2-MoE's sliding layers (odd "
                        "blocks below max_window_layers). Set it to false to run the checkpoint with full attention.");
        readMoeConfig(j, file, "moe_intermediate_size", true, c);
        c.moe.sharedExpertIntermediateSize = cfg::getInt(j, "shared_expert_intermediate_size", file);
        if (c.moe.sharedExpertIntermediateSize <= 0 || c.moe.sharedExpertIntermediateSize > (int64_t{1} << 22))
            throw Error(file + ": key \"shared_expert_intermediate_size\" must be between 1 and " + std::to_string(int64_t{1} << 22) + ".");
    };
    return f;
}

}  // namespace nnscope
