// SPDX-License-Identifier: MIT
//
// OLMoE (OlmoeForCausalLM: allenai/OLMoE-1B-7B).
//
// Llama's pre-norm block with OLMo 2's query/key norms (one RMSNorm over the whole q projection, one over the whole k
// projection, before the heads are cut and the rotary turns them) and a mixture of experts in every block: mlp.gate
// (the router), mlp.experts.{e}.gate_proj/up_proj/down_proj; softmax in float32, then the top num_experts_per_tok,
// NOT renormalised unless norm_topk_prob says so (false in the released checkpoints: the weights sum to less than 1).
// clip_qkv is refused (not implemented).
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family olmoeFamily() {
    Family f = llamaFamily();
    f.modelType = "olmoe";
    f.architectures = {"OlmoeForCausalLM"};
    f.title = "OLMoE";
    f.classPrefix = "Olmoe";
    f.summary = "Llama's block with query/key norms over the whole projections and a mixture of experts whose top-k weights "
                "are not renormalised.";
    f.quirks = {"Mixture of experts", "Softmax then top-k, no renormalisation", "Query/key norms over the projection"};
    f.description =
        "OLMoE (OlmoeForCausalLM).\n\nLlama's tree; self_attn has q_norm and k_norm (RMSNorm over num_heads × head_dim and "
        "num_kv_heads × head_dim) on the projections; mlp is OlmoeSparseMoeBlock in every block: gate (the router) and experts.";
    f.mlpFormulas = {"p = softmax(gate(z)) in float32;  top = the num_experts_per_tok largest p  (÷ their sum only under norm_topk_prob)",
                     "mlp(z) = Σ_k top_k · experts[idx_k](z),  experts[e](z) = down_e(silu(gate_e(z)) * up_e(z))"};
    f.qkNorm = true;
    f.qkNormScope = QkNormScope::WholeProjection;
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    setExpertModules(f);
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the mixture's, added with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"The router: softmax, then the top k, not renormalised",
         "router_logits is mlp.gate's output; expert_indices are the num_experts_per_tok experts of largest float32 softmax "
         "probability and expert_weights those probabilities as they are: with norm_topk_prob false (OLMoE-1B-7B) they sum to "
         "less than 1, so the mixture's output is smaller than a renormalised one.",
         {"router_topk"}},
        {"The routed output is the weighted sum of the chosen experts",
         "mlp_output = routed_output = Σ_k expert_weights[k] · expert_outputs[k].", {"routed_is_weighted_sum"}},
        {"Queries and keys are normed over the whole projection",
         "q_norm and k_norm are RMSNorms over q_proj's and k_proj's whole outputs (all heads at once), before the heads are cut "
         "and turned, as OLMo 2's.",
         {"gqa_scores", "pattern_softmax"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "OlmoeForCausalLM checkpoints (model_type olmoe) load as olmoe.", {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 50304}, {"hidden_size", 2048}, {"intermediate_size", 2048},
                             {"num_hidden_layers", 16}, {"num_attention_heads", 16}, {"max_position_embeddings", 4096},
                             {"rms_norm_eps", 1e-5}, {"num_experts_per_tok", 8}, {"num_experts", 64}, {"norm_topk_prob", false},
                             {"tie_word_embeddings", false}, {"pad_token_id", 1}, {"bos_token_id", nullptr}, {"eos_token_id", 50279}});
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeConfig(j, file, fam, c);
        if (j.contains("clip_qkv") && !j["clip_qkv"].is_null())
            throw Error(file + ": key \"clip_qkv\" is set; nnscope does not clamp queries, keys and values (OLMoE's released "
                        "checkpoints leave it null).");
        // OlmoeAttention: num_heads × head_dim with head_dim = hidden_size // num_heads; the expert width is intermediate_size
        readMoeConfig(j, file, "intermediate_size", false, c);
    };
    return f;
}

}  // namespace nnscope
