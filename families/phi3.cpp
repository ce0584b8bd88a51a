// SPDX-License-Identifier: MIT
//
// Phi-3 (Phi3ForCausalLM).
//
// Llama's tree and block with two fused projections: self_attn.qkv_proj, whose output is [q | k | v] (all query heads,
// then the key heads, then the value heads), and mlp.gate_up_proj, whose output is [gate | up]; the MLP is then
// down_proj(act(gate) * up). The long-context checkpoints stretch the rotary with longrope: short_factor up to
// original_max_position_embeddings tokens, long_factor past them, cos and sin scaled by sqrt(1 + ln(factor) / ln(original)).
// A sliding window applies to every layer when the config sets one.
#include "families/families.h"

#include "core/model/error.h"

namespace nnscope {

Family phi3Family() {
    Family f = llamaFamily();
    f.modelType = "phi3";
    f.architectures = {"Phi3ForCausalLM"};
    f.title = "Phi-3";
    f.classPrefix = "Phi3";
    f.summary = "Llama's block with a fused qkv_proj ([q | k | v]) and a fused gate_up_proj ([gate | up]); longrope "
                "stretches the rotary on the long-context checkpoints.";
    f.quirks = {"Fused qkv", "Fused gate/up", "LongRoPE", "Grouped-query attention"};
    f.description =
        "Phi-3 (Phi3ForCausalLM).\n\nLlama's tree: model.{embed_tokens, layers[i].{input_layernorm, self_attn.{qkv_proj, o_proj}, "
        "post_attention_layernorm, mlp.{gate_up_proj, down_proj}}, norm} and lm_head. qkv_proj's output is cut into all queries, "
        "then keys, then values; gate_up_proj's into gate and up halves.";
    f.mlpFormulas = {"gate, up = gate_up_proj(z).chunk(2)", "mlp(z) = down_proj(act_fn(gate) * up)"};
    f.notes = {
        {"The contributions are the modules' outputs",
         "attention_output is self_attn's output and mlp_output the MLP's (the residual dropouts are the identity in eval), so "
         "layers[i].input + attention_output + mlp_output == layer_output.",
         {"contribution_identity", "projection_biases"}},
        {"Two fused projections",
         "qkv_proj's output is [q | k | v]: num_heads × head_dim query columns, then num_kv_heads × head_dim key columns, then "
         "the value columns. gate_up_proj's output is [gate | up], each intermediate_size wide; mlp_activation is act(gate) "
         "and mlp_neurons act(gate) · up. There is no separate gate_proj or up_proj output to read.",
         {"gqa_scores", "pattern_softmax"}},
        {"LongRoPE",
         "With rope type longrope, the rotary frequencies are divided by short_factor while the pass covers at most "
         "original_max_position_embeddings positions and by long_factor past that (the whole batch switches together, by its "
         "largest position); cos and sin are scaled by sqrt(1 + ln(max / original) / ln(original)). The check turns the pre-rotary "
         "queries and keys with frequencies and scale recomputed in float64 from config.json. In generation, the step whose "
         "sequence first passes original_max_position_embeddings drops the key/value cache and recomputes every position "
         "with the long factor, as Phi3ForCausalLM.prepare_inputs_for_generation does.",
         {"rope_kind:default|longrope"}},
        {"The readout", "logits is lm_head's output with nothing applied.", {"lens_equals_logits", "tied_head"}},
        {"What loads as this family", "Phi3ForCausalLM checkpoints (model_type phi3: Phi-3, Phi-3.5, Phi-4-mini) load as phi3.",
         {"loads_as"}},
    };
    f.qkv = QkvLayout::FusedContiguous;
    f.partialRotary = true;  // Phi-4-mini's partial_rotary_factor 0.75
    f.mlp = MlpKind::GatedFused;
    f.dropModule(Module::QProj).dropModule(Module::KProj).dropModule(Module::VProj).dropModule(Module::GateProj).dropModule(Module::UpProj);
    f.setModule(Module::QkvProj, "qkv_proj");
    f.setModule(Module::GateUpProj, "gate_up_proj");
    f.configDefaults.update({{"vocab_size", 32064}, {"hidden_size", 3072}, {"intermediate_size", 8192},
                             {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"max_position_embeddings", 4096},
                             {"original_max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"bos_token_id", 1},
                             {"eos_token_id", 32000}, {"pad_token_id", 32000}});
    f.longRopeRecomputesCache = true;
    f.attentionBiasKey.clear();  // qkv_proj, o_proj, gate_up_proj and down_proj are built with bias=False
    f.mlpBiasKey.clear();
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readLlamaLikeSlidingConfig(j, file, fam, c);  // Mistral's rule: sliding_window, when set, on every layer
        // Phi3Config.convert_rope_params_to_dict renames the rope types "yarn" and "su" longrope, and validate_rope accepts
        // only default and longrope. ("su" fails before the rename in 5.23: standardize_rope_params gives only llama3,
        // yarn and longrope their original_max_position_embeddings, so validation finds it missing.)
        const std::string where = file + " (" + c.rope.sourceStyle + ")";
        if (c.rope.type == "yarn") c.rope.type = "longrope";
        if (c.rope.type != "default" && c.rope.type != "longrope")
            throw Error(where + ": rope type \"" + c.rope.type + "\" is not one Phi-3 runs (Phi3Config accepts default and longrope, "
                        "and renames yarn longrope).");
        if (c.rope.type == "longrope" && (c.rope.shortFactor.empty() || c.rope.longFactor.empty()))
            throw Error(where + ": rope type longrope needs short_factor and long_factor.");
    };
    return f;
}

}  // namespace nnscope
