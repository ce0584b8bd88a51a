// SPDX-License-Identifier: MIT
#include "core/pages/interop.h"

#include "core/run/trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace nnscope {

namespace {

/// The architectures TransformerLens' HookedTransformer loads among nnscope's families
/// (transformer_lens/loading_from_pretrained.py, convert_hf_model_config).
bool transformerLensLoads(const ModelConfig& c) {
    static const char* const kLoaded[] = {"LlamaForCausalLM",   "MistralForCausalLM", "Qwen2ForCausalLM",   "Qwen3ForCausalLM",
                                          "Gemma2ForCausalLM",  "Gemma3ForCausalLM",  "Olmo2ForCausalLM",   "GPTNeoXForCausalLM",
                                          "GPT2LMHeadModel",    "Phi3ForCausalLM",    "ApertusForCausalLM"};
    for (const std::string& a : c.architectures)
        for (const char* known : kLoaded)
            if (a == known) return true;
    return false;
}

bool isOlmo2(const ModelConfig& c) {
    return std::find(c.architectures.begin(), c.architectures.end(), "Olmo2ForCausalLM") != c.architectures.end();
}

std::string block(int layer) { return "blocks." + std::to_string(layer) + "."; }

/// A Python string literal (JSON's escapes are Python's).
std::string pyString(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::optional<TransformerLensHook> transformerLensHook(const Family& f, const ModelConfig& c, const ValueKey& key) {
    if (!transformerLensLoads(c)) return std::nullopt;
    const int i = key.layer;
    const bool rotary = f.positions == PositionKind::Rotary;
    // Gemma 2/3 (use_normalization_before_and_after) hook a branch's output after its output norm; OLMo 2 before it.
    const bool branchHookAfterNorm = !isOlmo2(c);
    auto hook = [](std::string name, bool axis2 = false, std::string note = {}) {
        return std::optional<TransformerLensHook>(TransformerLensHook{std::move(name), axis2, std::move(note)});
    };
    switch (key.value) {
        case Value::TokenEmbeddings: return hook("hook_embed");
        case Value::LayerInput: return hook(block(i) + "hook_resid_pre");
        case Value::LayerMid:
            if (c.parallelResidual) return std::nullopt;  // both branches read resid_pre: there is no resid_mid
            return hook(block(i) + "hook_resid_mid");
        case Value::LayerOutput: return hook(block(i) + "hook_resid_post");
        case Value::AttentionOutput:
            if (f.blockNorms.afterAttention && branchHookAfterNorm) return std::nullopt;
            return hook(block(i) + "hook_attn_out");
        case Value::NativeAttentionOutputNormOutput:
            if (!branchHookAfterNorm) return std::nullopt;
            return hook(block(i) + "hook_attn_out");
        case Value::MlpOutput:
            if (f.blockNorms.afterMlp && branchHookAfterNorm) return std::nullopt;
            return hook(block(i) + "hook_mlp_out");
        case Value::NativeMlpOutputNormOutput:
            if (!branchHookAfterNorm) return std::nullopt;
            return hook(block(i) + "hook_mlp_out");
        case Value::AttentionQueries: return hook(block(i) + (rotary ? "attn.hook_rot_q" : "attn.hook_q"), true);
        case Value::AttentionKeys: return hook(block(i) + (rotary ? "attn.hook_rot_k" : "attn.hook_k"), true);
        case Value::AttentionValues: return hook(block(i) + "attn.hook_v", true);
        case Value::AttentionScores:
            return hook(block(i) + "attn.hook_attn_scores", false,
                        "masked entries are -inf there, the dtype's lowest value here");
        case Value::AttentionProbabilities: return hook(block(i) + "attn.hook_pattern");
        case Value::AttentionHeadOutputs:
        case Value::AttentionPremix: return hook(block(i) + "attn.hook_z");
        case Value::MlpNeurons: return hook(block(i) + "mlp.hook_post");
        case Value::MlpActivation:
            if (f.mlp != MlpKind::Plain) return std::nullopt;  // a gated MLP's act(gate) has no hook of its own
            return hook(block(i) + "mlp.hook_post");
        case Value::NativeActFnInput: return hook(block(i) + "mlp.hook_pre");
        case Value::NativeUpProjOutput:
            if (f.mlp != MlpKind::Gated) return std::nullopt;  // a plain MLP's up_proj output is hook_pre (act_fn's input)
            return hook(block(i) + "mlp.hook_pre_linear");
        // hook_normalized: before the gain and bias as from_pretrained loads a model (fold_ln: LayerNormPre / RMSNormPre)
        case Value::NativeInputNormNormalized: return hook(block(i) + "ln1.hook_normalized");
        case Value::NativePostAttentionNormNormalized: return hook(block(i) + "ln2.hook_normalized");
        case Value::FinalNormOutput: return hook("unembed.hook_in");
        case Value::LmHeadOutput: return hook("unembed.hook_out");
        case Value::Logits:
            if (c.finalLogitSoftcap) return std::nullopt;  // the cap is applied after unembed.hook_out
            return hook("unembed.hook_out");
        default: return std::nullopt;
    }
}

std::string nnterpExpression(const Family& family, const ValueKey& key) {
    const std::string i = std::to_string(key.layer);
    switch (key.value) {  // StandardizedTransformer's own accessors
        case Value::LayerInput: return "model.layers_input[" + i + "]";
        case Value::LayerOutput: return "model.layers_output[" + i + "]";
        case Value::AttentionOutput: return "model.attentions_output[" + i + "]";
        case Value::MlpInput: return "model.mlps_input[" + i + "]";
        case Value::MlpOutput: return "model.mlps_output[" + i + "]";
        case Value::AttentionProbabilities: return "model.attention_probabilities[" + i + "]";
        case Value::FinalNormOutput: return "model.ln_final.output";
        case Value::LmHeadOutput: return "model.lm_head.output";
        default: break;
    }
    const ValueInfo& info = valueInfo(key.value);
    if (info.host == Host::Model) return std::string("model.") + info.name;  // logits, next_token_probs, input_ids, ...
    // the value on its module, as the family pages write it: layers.3.self_attn.attention_queries ->
    // model.layers[3].self_attn.attention_queries; native values keep their module path (up_proj.output)
    std::string path = valuePath(family, key);
    const std::string prefix = "layers." + i + ".";
    if (path.rfind(prefix, 0) == 0) path = "layers[" + i + "]." + path.substr(prefix.size());
    return "model." + path;
}

std::string nnterpSnippet(const Model& model, const ValueKey& key, const std::vector<std::string>& prompts) {
    const ValueInfo& info = valueInfo(key.value);
    std::string load = "model = StandardizedTransformer(" + pyString(model.dir());
    if (key.value == Value::AttentionProbabilities) load += ", enable_attention_probs=True";
    else if (info.eagerOnly) load += ", attn_implementation=\"eager\"";
    load += ")\n";
    std::string input;
    if (prompts.size() == 1) {
        input = pyString(prompts.front());
    } else {
        input = "[";
        for (size_t r = 0; r < prompts.size(); ++r) input += (r ? ", " : "") + pyString(prompts[r]);
        input += "]";
    }
    std::string axes;
    for (const char* a : info.axes) axes += (axes.empty() ? "" : ", ") + std::string(a);
    std::string out = "from nnterp import StandardizedTransformer\n\n" + load;
    out += "with model.trace(" + input + "):\n";
    out += "    value = " + nnterpExpression(model.family(), key) + ".save()\n";
    out += "# [" + axes + "]: nnscope's " + valuePath(model.family(), key) + "\n";
    return out;
}

}  // namespace nnscope
