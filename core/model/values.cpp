// SPDX-License-Identifier: MIT
#include "core/model/values.h"

#include <map>

namespace nnscope {
namespace {

// The descriptions and read-at places are nnterp's (shared/seeds support tables).
constexpr const char* kNormScaleText =
    "The norm's scale at each position, float32: 1 / sqrt(mean(x²) + eps) for an RMSNorm, 1 / sqrt(var(x) + eps) for a "
    "LayerNorm; the factor the norm multiplies its (centred) input by before the gain, frozen by attributions";
constexpr const char* kNormScaleInside = "the norm's forward, between its statistics and its gain";
constexpr const char* kNormalizedText =
    "The norm's output before its gain (and bias), float32: x · scale for an RMSNorm (Gemma's _norm(x)), (x - mean(x)) · scale "
    "for a LayerNorm; TransformerLens' hook_normalized (ln1 before the attention, ln2 before the MLP)";
constexpr const char* kNormalizedInside = "the norm's forward, after its scale, before its gain";

const std::vector<ValueInfo>& table() {
    static const std::vector<ValueInfo> t = {
        {Value::Logits, "logits", Host::Model, "Logits", {"batch", "seq", "vocab_size"},
         "The logits the model returns, after anything it does past lm_head (a softcap, a scale)", nullptr},
        {Value::TokenEmbeddings, "token_embeddings", Host::Model, "Residual", {"batch", "seq", "hidden_size"},
         "The embedding module's output; layers[0].input is what enters the first block", nullptr},
        {Value::FinalNormOutput, "final_norm_output", Host::Model, "Residual", {"batch", "seq", "hidden_size"},
         "The residual stream after the final norm, what lm_head reads", nullptr},
        {Value::LmHeadOutput, "lm_head_output", Host::Model, "Logits", {"batch", "seq", "vocab_size"},
         "The head's logits before anything the model does past lm_head (a softcap, a scale)", nullptr},
        {Value::NextTokenProbs, "next_token_probs", Host::Model, "NextTokenProbs", {"batch", "vocab_size"},
         "The next-token distribution at the last position; derived, read-only", nullptr, true},
        {Value::InputIds, "input_ids", Host::Model, "Tokens", {"batch", "seq"}, "The token ids the model was called with",
         nullptr},
        {Value::AttentionMask, "attention_mask", Host::Model, "Tokens", {"batch", "seq"},
         "The attention mask the model was called with; zeros are padding", nullptr},
        {Value::InputSize, "input_size", Host::Model, "scalar", {"batch", "seq"}, "[batch, seq] of the current call; read-only",
         nullptr, true},
        {Value::LayerInput, "layer_input", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The residual stream entering the block", nullptr},
        {Value::AttentionNormOutput, "attention_norm_output", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The normed stream entering the attention", nullptr},
        {Value::LayerMid, "layer_mid", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The residual stream after the attention add", nullptr},
        {Value::MlpNormOutput, "mlp_norm_output", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The normed stream entering the MLP", nullptr},
        {Value::MlpInput, "mlp_input", Host::Layer, "Residual", {"batch", "seq", "hidden_size"}, "What the MLP is called with",
         nullptr},
        {Value::LayerOutput, "layer_output", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The residual stream leaving the block, a tensor even when the block returns a tuple", nullptr},
        {Value::AttentionQueries, "attention_queries", Host::Attention, "Queries", {"batch", "num_heads", "seq", "qk_head_dim"},
         "The queries entering attention", "the arguments of attention_interface_1, element 1", false, true},
        {Value::AttentionKeys, "attention_keys", Host::Attention, "Keys", {"batch", "num_kv_heads", "seq", "qk_head_dim"},
         "The keys entering attention", "the arguments of attention_interface_1, element 2", false, true},
        {Value::AttentionValues, "attention_values", Host::Attention, "Values", {"batch", "num_kv_heads", "seq", "head_dim"},
         "The values entering attention", "the arguments of attention_interface_1, element 3", false, true},
        {Value::AttentionScores, "attention_scores", Host::Attention, "Pattern", {"batch", "num_heads", "query", "key"},
         "The attention scores entering the softmax, masked",
         "the input of nn_functional_softmax_0 inside attention_interface_1", false, true},
        {Value::AttentionPremix, "attention_premix", Host::Attention, "HeadOutputs", {"batch", "seq", "num_heads", "head_dim"},
         "Every head's output side by side, as the output projection takes it", nullptr},
        {Value::AttentionOutput, "attention_output", Host::Attention, "Residual", {"batch", "seq", "hidden_size"},
         "What the attention adds to the residual stream", nullptr},
        {Value::AttentionProbabilities, "attention_probabilities", Host::Attention, "Pattern", {"batch", "num_heads", "query", "key"},
         "The attention pattern the values are mixed with",
         "the output of nn_functional_dropout_0 inside attention_interface_1", false, true},
        {Value::AttentionHeadOutputs, "attention_head_outputs", Host::Attention, "HeadOutputs", {"batch", "seq", "num_heads", "head_dim"},
         "The per-head outputs before the output projection", "the output of attention_interface_1, element 0",
         false, true},
        {Value::MlpActivation, "mlp_activation", Host::Mlp, "Neurons", {"batch", "seq", "intermediate_size"},
         "The activation function's output", nullptr},
        {Value::MlpNeurons, "mlp_neurons", Host::Mlp, "Neurons", {"batch", "seq", "intermediate_size"},
         "What the down projection receives: act(gate)·up on a gated MLP, the activation itself otherwise",
         nullptr},
        {Value::MlpOutput, "mlp_output", Host::Mlp, "Residual", {"batch", "seq", "hidden_size"},
         "What the MLP adds to the residual stream", nullptr},
        // a mixture of experts: the router and what the chosen experts write (N tokens = batch x seq)
        {Value::RouterLogits, "router_logits", Host::Mlp, "RouterLogits", {"batch", "seq", "num_experts"},
         "The router's logits over the experts (mlp.gate's output), before the softmax (DeepSeek-V3, GLM-4.5: the sigmoid) and the "
         "choice of the top k", nullptr},
        {Value::ExpertIndices, "expert_indices", Host::Mlp, "ExpertChoice", {"batch", "seq", "top_k"},
         "The experts each token goes through, int64, in the router's order (the largest routing probability first; DeepSeek "
         "and GLM-4.5: transformers' unsorted top-k order); edit them to force an expert", "the router's forward, its top-k indices"},
        {Value::ExpertWeights, "expert_weights", Host::Mlp, "ExpertChoice", {"batch", "seq", "top_k"},
         "The routing weight of each chosen expert (its softmax probability, renormalised over the chosen ones where the "
         "family does; DeepSeek and GLM-4.5: its score times routed_scaling_factor): what multiplies its output",
         "the router's forward, its top-k weights"},
        {Value::ExpertOutputs, "expert_outputs", Host::Mlp, "ExpertOutputs", {"batch", "seq", "top_k", "hidden_size"},
         "Each chosen expert's output before its routing weight: down(act(gate(x)) * up(x)) of that expert",
         "the experts' forward, each expert's down projection output"},
        {Value::RoutedOutput, "routed_output", Host::Mlp, "Residual", {"batch", "seq", "hidden_size"},
         "The routed experts' weighted sum, sum_k expert_weights[k] * expert_outputs[k] (mlp.experts' output)", nullptr},
        {Value::SharedExpertOutput, "shared_expert_output", Host::Mlp, "Residual", {"batch", "seq", "hidden_size"},
         "The shared expert's output (times its sigmoid gate where the family has one: Qwen2-MoE): what it adds to the routed "
         "output", nullptr},
        // multi-head latent attention (DeepSeek V2/V3)
        {Value::QLatent, "q_latent", Host::Attention, "Latent", {"batch", "seq", "q_lora_rank"},
         "The queries' low-rank latent, q_a_layernorm(q_a_proj(x)): what q_b_proj expands to every head", nullptr},
        {Value::KvLatent, "kv_latent", Host::Attention, "Latent", {"batch", "seq", "kv_lora_rank"},
         "The keys' and values' shared latent, kv_a_layernorm of kv_a_proj_with_mqa's first kv_lora_rank outputs: what "
         "kv_b_proj expands to every head's non-rotary key and value (what the cache keeps)", nullptr},
        {Value::QueryNope, "query_nope", Host::Attention, "Queries", {"batch", "num_heads", "seq", "qk_nope_head_dim"},
         "The non-rotary part of each query head (the first qk_nope_head_dim dimensions of attention_queries)",
         "the attention's forward, q split into its non-rotary and rotary parts"},
        {Value::QueryRope, "query_rope", Host::Attention, "Queries", {"batch", "num_heads", "seq", "qk_rope_head_dim"},
         "The rotary part of each query head after the rotary embedding (the last qk_rope_head_dim dimensions of "
         "attention_queries)", "the attention's forward, after the rotary embedding"},
        {Value::KeyRope, "key_rope", Host::Attention, "Keys", {"batch", "1", "seq", "qk_rope_head_dim"},
         "The rotary key part every head shares, after the rotary embedding: kv_a_proj_with_mqa's last qk_rope_head_dim "
         "outputs, the last dimensions of every attention_keys head", "the attention's forward, after the rotary embedding"},
        // native values: `name` is the suffix after the module path
        {Value::NativeQProjOutput, "output", Host::Attention, "Projection", {"batch", "seq", "num_heads*head_dim"},
         "q_proj's output: the queries before any norm or rotary", nullptr},
        {Value::NativeKProjOutput, "output", Host::Attention, "Projection", {"batch", "seq", "num_kv_heads*head_dim"},
         "k_proj's output: the keys before any norm or rotary", nullptr},
        {Value::NativeVProjOutput, "output", Host::Attention, "Projection", {"batch", "seq", "num_kv_heads*head_dim"},
         "v_proj's output", nullptr},
        {Value::NativeQkvProjOutput, "output", Host::Attention, "Projection", {"batch", "seq", "num_heads*3*head_dim"},
         "The fused projection's output, laid out head by head [num_heads, 3, head_dim]", nullptr},
        {Value::NativeQNormOutput, "output", Host::Attention, "Native", {},
         "The per-head query norm's output, before the rotary, laid out as the family's module returns it (Apertus [batch num_heads seq head_dim], Persimmon [batch seq num_heads head_dim])", nullptr},
        {Value::NativeKNormOutput, "output", Host::Attention, "Native", {},
         "The per-head key norm's output, before the rotary, laid out as the family's module returns it", nullptr},
        {Value::NativeGateProjOutput, "output", Host::Mlp, "Neurons", {"batch", "seq", "intermediate_size"},
         "gate_proj's output: the gate's pre-activations", nullptr},
        {Value::NativeUpProjOutput, "output", Host::Mlp, "Neurons", {"batch", "seq", "intermediate_size"},
         "up_proj's output", nullptr},
        {Value::NativeActFnInput, "input", Host::Mlp, "Neurons", {"batch", "seq", "intermediate_size"},
         "The activation function's input: the pre-activations", nullptr},
        {Value::NativeAttentionOutputNormOutput, "output", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The norm of the attention's output: what the residual stream receives from the attention",
         nullptr},
        {Value::NativeMlpOutputNormOutput, "output", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         "The norm of the MLP's output: what the residual stream receives from the MLP", nullptr},
        {Value::NativeGateUpProjOutput, "output", Host::Mlp, "Projection", {"batch", "seq", "2*intermediate_size"},
         "The fused gate and up projection's output, [gate | up] on the last axis", nullptr},
        {Value::NativeInputNormScale, "scale", Host::Layer, "NormScale", {"batch", "seq"}, kNormScaleText, kNormScaleInside},
        {Value::NativePostAttentionNormScale, "scale", Host::Layer, "NormScale", {"batch", "seq"}, kNormScaleText, kNormScaleInside},
        {Value::NativeAttentionOutputNormScale, "scale", Host::Layer, "NormScale", {"batch", "seq"}, kNormScaleText, kNormScaleInside},
        {Value::NativeMlpOutputNormScale, "scale", Host::Layer, "NormScale", {"batch", "seq"}, kNormScaleText, kNormScaleInside},
        {Value::NativeFinalNormScale, "scale", Host::Model, "NormScale", {"batch", "seq"}, kNormScaleText, kNormScaleInside},
        {Value::NativeInputNormNormalized, "normalized", Host::Layer, "Residual", {"batch", "seq", "hidden_size"}, kNormalizedText,
         kNormalizedInside},
        {Value::NativePostAttentionNormNormalized, "normalized", Host::Layer, "Residual", {"batch", "seq", "hidden_size"},
         kNormalizedText, kNormalizedInside},
    };
    return t;
}

}  // namespace

const ValueInfo& valueInfo(Value v) { return table().at(static_cast<size_t>(v)); }

const std::vector<Value>& standardValues() {
    // The seeds' order inside each host: attention lists premix and output before the interior probabilities.
    static const std::vector<Value> order = {
        Value::Logits, Value::TokenEmbeddings, Value::FinalNormOutput, Value::LmHeadOutput, Value::NextTokenProbs,
        Value::InputIds, Value::AttentionMask, Value::InputSize,
        Value::LayerInput, Value::AttentionNormOutput, Value::LayerMid, Value::MlpNormOutput, Value::MlpInput, Value::LayerOutput,
        Value::AttentionQueries, Value::AttentionKeys, Value::AttentionValues, Value::AttentionScores, Value::AttentionPremix,
        Value::AttentionOutput, Value::AttentionProbabilities, Value::AttentionHeadOutputs,
        Value::MlpActivation, Value::MlpNeurons, Value::MlpOutput};
    return order;
}

const std::vector<Value>& mixtureValues() {
    static const std::vector<Value> order = {Value::RouterLogits, Value::ExpertIndices, Value::ExpertWeights,
                                             Value::ExpertOutputs, Value::RoutedOutput, Value::SharedExpertOutput};
    return order;
}

bool isMixtureValue(Value v) { return v >= Value::RouterLogits && v <= Value::SharedExpertOutput; }

const std::vector<Value>& latentAttentionValues() {
    static const std::vector<Value> order = {Value::QLatent, Value::KvLatent, Value::QueryNope, Value::QueryRope, Value::KeyRope};
    return order;
}

bool isLatentAttentionValue(Value v) { return v >= Value::QLatent && v <= Value::KeyRope; }

std::optional<Value> standardValueByName(const std::string& name) {
    for (Value v : standardValues())
        if (name == valueInfo(v).name) return v;
    for (Value v : mixtureValues())
        if (name == valueInfo(v).name) return v;
    for (Value v : latentAttentionValues())
        if (name == valueInfo(v).name) return v;
    return std::nullopt;
}

const char* hostPath(Host h) {
    switch (h) {
        case Host::Model: return "model";
        case Host::Layer: return "model.layers[i]";
        case Host::Attention: return "model.layers[i].self_attn";
        case Host::Mlp: return "model.layers[i].mlp";
    }
    return "";
}

const char* hostPrefix(Host h) {
    switch (h) {
        case Host::Attention: return "self_attn.";
        case Host::Mlp: return "mlp.";
        default: return "";
    }
}

std::string layoutString(const ValueInfo& info) {
    if (info.id == Value::InputSize) return "scalar";  // its description says [batch, seq]
    std::string s = std::string(info.layout) + " [";
    for (size_t i = 0; i < info.axes.size(); ++i) s += (i ? " " : "") + std::string(info.axes[i]);
    return s + "]";
}

}  // namespace nnscope
