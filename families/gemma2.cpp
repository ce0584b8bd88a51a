// SPDX-License-Identifier: MIT
//
// Gemma 2 (Gemma2ForCausalLM).
//
// Llama's tree with four norms per block (sandwich): input_layernorm before the attention, post_attention_layernorm on
// its output, pre_feedforward_layernorm before the MLP, post_feedforward_layernorm on its output. Every norm is Gemma's
// RMSNorm, x·rsqrt(mean(x²)+eps)·(1 + weight) in float32. The embeddings are scaled by sqrt(hidden_size); the MLP is
// a GeGLU (gelu_pytorch_tanh, from the config's hidden_activation); the scores are scaled by query_pre_attn_scalar
// ** -0.5 and soft-capped (attn_logit_softcapping) before the mask, the logits soft-capped after lm_head
// (final_logit_softcapping); alternate layers attend through a sliding window (layer_types).
#include "families/families.h"
#include "core/io/jsonfile.h"
#include "core/model/error.h"

#include "core/model/error.h"

#include <cmath>

namespace nnscope {

namespace {

/// Gemma2Config's reading, shared with Gemma 3: the activation key, the scaling, the caps, the sliding layers.
void readGemmaCommon(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
    readLlamaLikeConfig(j, file, fam, c);
    c.hiddenAct = cfg::getString(j, "hidden_activation", "gelu_pytorch_tanh", file);  // hidden_act is not read
    c.embedScale = std::sqrt(static_cast<double>(c.hiddenSize));
    // query_pre_attn_scalar ** -0.5: transformers fails on 0 (ZeroDivisionError) and computes a complex scale from a
    // negative; nnscope's pass would be NaN. Refused with the key named.
    if (auto q = cfg::optDouble(j, "query_pre_attn_scalar", file)) {
        if (!(*q > 0) || !std::isfinite(*q))
            throw Error(file + ": key \"query_pre_attn_scalar\" is " + jsonExcerpt(nlohmann::json(*q)) +
                        ": the scores are scaled by its inverse square root, so it must be a positive number.");
        c.attentionScaling = 1.0 / std::sqrt(*q);
    }
    // A soft cap computes cap * tanh(x / cap) in the compute dtype: beyond float32's range the cap is infinite there and
    // every score or logit NaN (0 * inf); 0 or less caps nothing. Refused with the key named (null: no cap).
    for (const auto& [key, cap] : {std::pair<const char*, std::optional<double>*>{"attn_logit_softcapping", &c.attnLogitSoftcap},
                                   {"final_logit_softcapping", &c.finalLogitSoftcap}}) {
        *cap = cfg::optDouble(j, key, file);
        if (*cap && (!(**cap > 0) || **cap > 3.4028234663852886e38))
            throw Error(file + ": key \"" + key + "\" is " + jsonExcerpt(nlohmann::json(**cap)) +
                        ": a soft cap must be a positive number within float32's range (null: no cap).");
    }
    c.slidingWindow = cfg::slidingWindow(j, file);
}

}  // namespace

void readRopeByLayerType(const nlohmann::json& j, const std::string& file, double fullTheta, const char* localThetaKey,
                         double localTheta, ModelConfig& c) {
    // rope_parameters keyed by layer type ({"rope_type": "default"} for both when the key is absent; a flat dict is not
    // read); a legacy rope_scaling is merged into the full-attention one (so its "type" does not override a "rope_type"
    // already there); the thetas are filled in where the dicts lack them.
    const nlohmann::json defaultParams = {{"rope_type", "default"}};
    nlohmann::json full, local;
    const bool keyed = j.contains("rope_parameters") && j["rope_parameters"].is_object();
    if (!keyed) {
        full = local = defaultParams;
    } else {
        const auto& rp = j["rope_parameters"];
        for (const auto& [key, out] : {std::pair<const char*, nlohmann::json*>{"full_attention", &full}, {"sliding_attention", &local}}) {
            if (!rp.contains(key) || rp[key].is_null()) continue;
            if (!rp[key].is_object())  // transformers indexes into it (a TypeError)
                throw Error(file + ": key \"rope_parameters." + key + "\" must be an object of rotary parameters, not " +
                            jsonExcerpt(rp[key]) + ".");
            *out = rp[key];
        }
    }
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
        if (keyed && full.is_null())
            throw Error(file + ": has a legacy \"rope_scaling\" beside a \"rope_parameters\" without a \"full_attention\" "
                        "entry: the config class has nothing to merge it into (transformers fails on this file). Key "
                        "rope_parameters by layer type (full_attention, sliding_attention), or remove one of the two.");
        for (auto it = j["rope_scaling"].begin(); it != j["rope_scaling"].end(); ++it) full[it.key()] = *it;
    }
    if (full.is_null()) full = defaultParams;
    if (local.is_null()) local = defaultParams;
    if (!full.contains("rope_theta")) full["rope_theta"] = cfg::optDouble(j, "rope_theta", file).value_or(fullTheta);
    if (!local.contains("rope_theta"))
        local["rope_theta"] = localThetaKey ? cfg::optDouble(j, localThetaKey, file).value_or(localTheta) : localTheta;
    auto rope = [&](const nlohmann::json& params) {
        nlohmann::json k = j;
        k.erase("rope_scaling");
        k["rope_parameters"] = params;
        return cfg::readRope(k, file, c.maxPositionEmbeddings);
    };
    c.rope = rope(full);
    c.ropeLocal = rope(local);
    cfg::wholeHeadRotary(c.rope, file);
    cfg::wholeHeadRotary(*c.ropeLocal, file);
}

Family gemma2Family() {
    Family f = llamaFamily();
    f.actKey = "hidden_activation";  // Gemma2Config reads hidden_activation, not hidden_act
    f.modelType = "gemma2";
    f.architectures = {"Gemma2ForCausalLM"};
    f.title = "Gemma 2";
    f.classPrefix = "Gemma2";
    f.summary = "Llama's tree with sandwich norms (1 + weight), scaled embeddings, a GeGLU MLP, soft-capped scores and "
                "logits, and a sliding window on alternate layers.";
    f.quirks = {"Sandwich norms", "Soft-capping", "Sliding-window attention", "GeGLU", "Scaled embeddings"};
    f.description =
        "Gemma 2 (Gemma2ForCausalLM).\n\nmodel.{embed_tokens, layers[i].{input_layernorm, self_attn, post_attention_layernorm, "
        "pre_feedforward_layernorm, mlp, post_feedforward_layernorm}, norm} and lm_head. Each branch is normed before and "
        "after; every norm multiplies by (1 + weight). embed_tokens scales by sqrt(hidden_size).";
    f.mlpFormulas = {"mlp(z) = down_proj(gelu_tanh(gate_proj(z)) * up_proj(z))"};
    f.notes = {
        {"What is added to the stream is normed",
         "attention_output and mlp_output are the modules' outputs, as nnterp defines them; the stream receives "
         "post_attention_layernorm(attention_output) and post_feedforward_layernorm(mlp_output). So layers[i].input + "
         "attention_output + mlp_output is NOT layer_output. layer_mid is the stream after the attention add, the input of "
         "pre_feedforward_layernorm.",
         {"contribution_identity", "projection_biases"}},
        {"Norms multiply by (1 + weight)",
         "Gemma2RMSNorm computes x·rsqrt(mean(x²) + eps) in float32 and multiplies by (1 + weight), also in float32, before "
         "casting back: a stored weight of 0 is the identity gain.",
         {}},
        {"Scaled embeddings",
         "embed_tokens multiplies the looked-up rows by sqrt(hidden_size) (rounded to the weights' dtype), inside the module: "
         "token_embeddings includes the scale.",
         {}},
        {"Soft-capped scores and logits, a sliding window on alternate layers",
         "The scores are q·k · query_pre_attn_scalar ** -0.5, then cap·tanh(scores / cap) with cap = attn_logit_softcapping, "
         "then masked. The layers layer_types marks sliding_attention (every other one) see only the last sliding_window keys. "
         "logits = final_logit_softcapping · tanh(lm_head_output / final_logit_softcapping); the logit lens "
         "(project_on_vocab) is lm_head(norm(x)) without that cap, so at the last block it equals lm_head_output, not logits.",
         {"pattern_softmax", "gqa_scores"}},
        {"What loads as this family", "Gemma2ForCausalLM checkpoints (model_type gemma2) load as gemma2.",
         {"loads_as", "tied_head", "lens_equals_logits"}},
    };
    f.norm = NormKind::RMSNormPlusOne;
    f.blockNorms = {/*beforeAttention=*/true, /*beforeMlp=*/true, /*afterAttention=*/true, /*afterMlp=*/true};
    f.setModule(Module::AttentionOutputNorm, "post_attention_layernorm");
    f.setModule(Module::PostAttentionNorm, "pre_feedforward_layernorm");
    f.setModule(Module::MlpOutputNorm, "post_feedforward_layernorm");
    f.configDefaults.update({{"vocab_size", 256000}, {"hidden_size", 2304}, {"intermediate_size", 9216},
                             {"num_hidden_layers", 26}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
                             {"head_dim", 256}, {"hidden_activation", "gelu_pytorch_tanh"}, {"max_position_embeddings", 8192},
                             {"rms_norm_eps", 1e-6}, {"pad_token_id", 0}, {"eos_token_id", 1}, {"bos_token_id", 2},
                             {"tie_word_embeddings", true}, {"query_pre_attn_scalar", 256}, {"sliding_window", 4096},
                             {"final_logit_softcapping", 30.0}, {"attn_logit_softcapping", 50.0}});
    f.mlpBiasKey.clear();  // Gemma's MLP is built with bias=False; attention_bias biases q/k/v/o
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        readGemmaCommon(j, file, fam, c);
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        } else {  // Gemma2Config: even layers (0, 2, ...) slide
            for (int64_t i = 0; i < c.numLayers; ++i) c.layerSliding[static_cast<size_t>(i)] = (i + 1) % 2 != 0;
        }
        cfg::checkSlidingLayersHaveWindow(c, file);
    };
    return f;
}

Family gemma3Family() {
    Family f = gemma2Family();
    f.modelType = "gemma3_text";
    f.architectures = {"Gemma3ForCausalLM"};
    f.title = "Gemma 3 (text)";
    f.classPrefix = "Gemma3";
    f.summary = "Gemma 2's block with per-head query and key norms, and two rotaries: a local one for the sliding-window "
                "layers and a global one (with its scaling) for the full-attention layers.";
    f.quirks = {"Sandwich norms", "Query/key norms", "Local and global rotary", "Sliding-window attention", "GeGLU"};
    f.description =
        "Gemma 3 (Gemma3ForCausalLM, text).\n\nGemma 2's tree and block; self_attn norms each query and key head with q_norm "
        "and k_norm (Gemma RMSNorm over head_dim) before the rotary. Sliding layers (five of every six by default) turn with "
        "rope_parameters.sliding_attention (rope_local_base_freq), full layers with rope_parameters.full_attention.";
    f.notes = {
        {"What is added to the stream is normed",
         "As in Gemma 2, attention_output and mlp_output are the modules' outputs and the stream receives "
         "post_attention_layernorm(attention_output) and post_feedforward_layernorm(mlp_output), so the three-term "
         "contribution identity does not hold.",
         {"contribution_identity", "projection_biases"}},
        {"Two rotaries",
         "Layers marked sliding_attention in layer_types see only the last sliding_window keys and turn their queries and "
         "keys with the local rotary (rope_local_base_freq, 10000 on the released checkpoints); full_attention layers use the "
         "global one (rope_theta 1e6, linearly scaled on the larger checkpoints).",
         {"pattern_softmax", "gqa_scores"}},
        {"The readout",
         "logits is lm_head's output, soft-capped only when final_logit_softcapping is set (it is null on Gemma 3). The "
         "scores are never capped: Gemma3Attention keeps attn_logit_softcapping but does not apply it.",
         {"tied_head", "lens_equals_logits"}},
        {"What loads as this family",
         "Gemma3ForCausalLM text checkpoints (model_type gemma3_text) load as gemma3_text; the multimodal gemma3 wrapper is "
         "another architecture.",
         {"loads_as"}},
    };
    f.qkNorm = true;
    f.qkNormKind = NormKind::RMSNormPlusOne;
    f.qkNormScope = QkNormScope::PerHeadTransposed;  // Gemma3Attention norms after .transpose(1, 2)
    f.setModule(Module::QNorm, "q_norm");
    f.setModule(Module::KNorm, "k_norm");
    f.configDefaults.update({{"vocab_size", 262208}, {"max_position_embeddings", 131072}, {"final_logit_softcapping", nullptr},
                             {"attn_logit_softcapping", nullptr}, {"rope_theta", 1000000.0}, {"rope_local_base_freq", 10000.0}});
    f.readConfig = [](const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c) {
        // The rotary keys are read below, per layer type (a flat rope_parameters is not Gemma 3's and is not read).
        nlohmann::json common = j;
        for (const char* key : {"rope_parameters", "rope_scaling"}) common.erase(key);
        readGemmaCommon(common, file, fam, c);
        // EmbeddingGemma's layout: every layer attends both ways (and the window is halved), which nnscope's causal pass
        // does not compute.
        if (cfg::getBool(j, "use_bidirectional_attention", false, file))
            throw Error(file + ": key \"use_bidirectional_attention\" is true: this Gemma 3 checkpoint attends to later tokens "
                        "too (an embedding model), and nnscope computes causal language models only.");
        if (j.contains("layer_types") && !j["layer_types"].is_null()) {
            c.layerSliding = cfg::readLayerTypes(j, file, c.numLayers);
        } else {  // Gemma3TextConfig: sliding_window_pattern (6): every sixth layer is full
            const int64_t pattern = cfg::optInt(j, "sliding_window_pattern", file).value_or(6);
            for (int64_t i = 0; i < c.numLayers; ++i)
                c.layerSliding[static_cast<size_t>(i)] = pattern <= 0 || (i + 1) % pattern != 0;
        }
        cfg::checkSlidingLayersHaveWindow(c, file);
        // Gemma3Attention keeps attn_logit_softcapping but never hands it to the attention (transformers 5.23): the
        // scores are not capped whatever the config says.
        c.attnLogitSoftcap.reset();
        // Gemma3TextConfig.convert_rope_params_to_dict: the local theta's legacy key is rope_local_base_freq.
        readRopeByLayerType(j, file, 1000000.0, "rope_local_base_freq", 10000.0, c);
    };
    return f;
}

}  // namespace nnscope
