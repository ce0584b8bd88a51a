// SPDX-License-Identifier: MIT
//
// Mixtral (MixtralForCausalLM).
//
// Mistral's attention with a mixture of experts in every block: block_sparse_moe.gate (the router, Linear
// hidden_size -> num_local_experts) and block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down), each expert a gated
// SiLU MLP of intermediate_size neurons. transformers 5.23 routes with the float32 softmax, its top num_experts_per_tok
// renormalised to sum 1 (the same as a softmax over the top-k logits), and keeps those weights in float32 when they
// multiply the experts' outputs. nnterp names the block mlp; the checkpoint's name is block_sparse_moe.
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family mixtralFamily() {
    Family f = llamaFamily();
    f.modelType = "mixtral";
    f.architectures = {"MixtralForCausalLM"};
    f.title = "Mixtral";
    f.classPrefix = "Mixtral";
    f.summary = "Mistral's block with a mixture of experts in every MLP: the top k of num_local_experts, their weights a softmax "
                "over the chosen experts.";
    f.quirks = {"Mixture of experts", "Top-k then softmax", "Grouped-query attention", "Sliding window"};
    f.description =
        "Mixtral (MixtralForCausalLM).\n\nLlama's tree with block_sparse_moe (nnterp's mlp) in every block: gate (the router) and "
        "experts.{e}.{w1, w3, w2} (gate, up, down). Under sliding_window every block attends to the last sliding_window keys.";
    f.mlpFormulas = {"p = softmax(gate(z)) in float32;  top = the num_experts_per_tok largest p ÷ their sum  (= softmax of the top-k logits)",
                     "mlp(z) = Σ_k top_k · experts[idx_k](z),  experts[e](z) = w2_e(silu(w1_e(z)) * w3_e(z))"};
    f.setModule(Module::Mlp, "block_sparse_moe", "mlp", ModuleNaming::Rename);
    setExpertModules(f, "w1", "w3", "w2");
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output block_sparse_moe's, added with nothing in between, so "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity"}},
        {"The router: the top k, then a softmax over them",
         "router_logits is block_sparse_moe.gate's output. The chosen experts are the num_experts_per_tok largest logits, and "
         "their weights sum to 1: the float32 softmax's top k renormalised, which is the softmax of the chosen logits alone. "
         "The weights stay float32 when they multiply the experts' outputs.",
         {"router_topk"}},
        {"The routed output is the weighted sum of the chosen experts",
         "expert_outputs holds w2(silu(w1(x)) · w3(x)) of each chosen expert; mlp_output = routed_output = Σ_k expert_weights[k] · "
         "expert_outputs[k].",
         {"routed_is_weighted_sum"}},
        {"The readout", "logits is lm_head's output with nothing applied; Mixtral keeps lm_head untied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "MixtralForCausalLM checkpoints (model_type mixtral) load as mixtral.", {"loads_as"}},
    };
    f.configDefaults.update({{"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 14336},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                             {"max_position_embeddings", 4096 * 32}, {"rms_norm_eps", 1e-5}, {"rope_theta", 1000000.0}, {"sliding_window", nullptr},
                             {"num_experts_per_tok", 2}, {"num_local_experts", 8}, {"tie_word_embeddings", false},
                             {"bos_token_id", 1}, {"eos_token_id", 2}});
    f.attentionBiasKey.clear();
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeSlidingConfig(j, file, fam, c);
        // transformers 5.23 cannot build Mixtral's yarn rotary (a TypeError in its rotary init); refused rather than run
        // with frequencies transformers never computes
        if (c.rope.type == "yarn")
            throw Error(file + ": rope_type \"yarn\" on a mixtral config: transformers 5.23 fails to build this rotary (TypeError in "
                        "its rotary init), so nnscope has no reference for it and refuses it.");
        readMoeConfig(j, file, "intermediate_size", false, c);
        c.moe.normTopkProb = true;       // MixtralTopKRouter always renormalises
        c.moe.weightsInFloat32 = true;   // and returns the weights uncast
    };
    return f;
}

}  // namespace nnscope
