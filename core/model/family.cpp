// SPDX-License-Identifier: MIT
#include "core/model/family.h"

#include "core/model/block.h"
#include "core/model/error.h"
#include <algorithm>

namespace nnscope {

Host moduleHost(Module m) {
    switch (m) {
        case Module::EmbedTokens:
        case Module::PositionEmbeddings:
        case Module::Layers:
        case Module::Norm:
        case Module::LmHead: return Host::Model;
        case Module::QProj:
        case Module::KProj:
        case Module::VProj:
        case Module::QkvProj:
        case Module::OProj:
        case Module::QNorm:
        case Module::KNorm:
        case Module::AttentionDropout:
        case Module::QAProj:
        case Module::QALayernorm:
        case Module::QBProj:
        case Module::KvAProjWithMqa:
        case Module::KvALayernorm:
        case Module::KvBProj: return Host::Attention;
        case Module::GateProj:
        case Module::UpProj:
        case Module::GateUpProj:
        case Module::DownProj:
        case Module::ActFn:
        case Module::Router:
        case Module::Experts:
        case Module::ExpertGateProj:
        case Module::ExpertUpProj:
        case Module::ExpertDownProj:
        case Module::SharedExpert:
        case Module::SharedGateProj:
        case Module::SharedUpProj:
        case Module::SharedDownProj:
        case Module::SharedExpertGate: return Host::Mlp;
        default: return Host::Layer;  // the block's norms, self_attn, mlp, its dropout
    }
}

const char* paramName(Param p) {
    switch (p) {
        case Param::Weight: return "weight";
        case Param::Bias: return "bias";
        case Param::AlphaP: return "alpha_p";
        case Param::AlphaN: return "alpha_n";
        case Param::Beta: return "beta";
        case Param::Eps: return "eps";
        case Param::Sinks: return "sinks";
        case Param::CorrectionBias: return "e_score_correction_bias";
        default: return "";
    }
}

Family& Family::setModule(Module m, std::string native, std::string standard, ModuleNaming naming) {
    if (standard == native) standard.clear();
    modules[m] = ModuleSpec{std::move(native), std::move(standard), naming};
    return *this;
}

bool Family::skipsTensor(const std::string& name) const {
    for (const auto& prefix : skippedTensorPrefixes)
        if (name.rfind(prefix, 0) == 0) return true;
    return false;
}

Family& Family::dropModule(Module m) {
    modules.erase(m);
    return *this;
}

std::string Family::nativeModulePath(Module m, int layer) const {
    auto native = [&](Module x) {
        auto it = modules.find(x);
        return it == modules.end() ? std::string() : it->second.native;
    };
    const std::string name = native(m);
    if (name.empty()) return {};
    switch (moduleHost(m)) {
        case Host::Model: return m == Module::LmHead ? name : basePrefix + name;  // lm_head sits on the wrapper
        case Host::Layer: return basePrefix + native(Module::Layers) + "." + std::to_string(layer) + "." + name;
        case Host::Attention: return nativeModulePath(Module::SelfAttn, layer) + "." + name;
        case Host::Mlp:
            // one expert's projections sit under mlp.experts.{e} (expertTensorName fills the expert in); the shared
            // expert's under mlp.shared_expert
            if (m == Module::ExpertGateProj || m == Module::ExpertUpProj || m == Module::ExpertDownProj)
                return nativeModulePath(Module::Experts, layer) + ".{e}." + name;
            if (m == Module::SharedGateProj || m == Module::SharedUpProj || m == Module::SharedDownProj)
                return nativeModulePath(Module::SharedExpert, layer) + "." + name;
            return nativeModulePath(Module::Mlp, layer) + "." + name;
    }
    return {};
}

std::string Family::expertTensorName(Module m, int layer, int64_t expert) const {
    std::string name = tensorName({m, Param::Weight}, layer);
    const auto at = name.find("{e}");
    if (at != std::string::npos) name.replace(at, 3, std::to_string(expert));
    return name;
}

std::string Family::tensorName(ParamKey key, int layer) const {
    const std::string path = nativeModulePath(key.module, layer);
    return path.empty() ? path : path + "." + paramName(key.param);
}

std::string Family::moduleLabel(Module m) const {
    auto it = modules.find(m);
    if (it == modules.end()) return {};
    const ModuleSpec& spec = it->second;
    if (spec.standard.empty()) return spec.native;
    return spec.naming == ModuleNaming::Rename ? spec.standard : spec.standard + "/" + spec.native;
}

std::string Family::moduleName(Module m) const {
    auto it = modules.find(m);
    if (it == modules.end()) return {};
    return it->second.standard.empty() ? it->second.native : it->second.standard;
}

std::string Family::nativeValuePath(Value v, int layer) const {
    auto find = [&](const std::vector<BlockStep>& steps) -> std::string {
        for (const BlockStep& step : steps)
            for (const StepValue& sv : step.values)
                if (sv.value == v && step.module && v >= Value::NativeQProjOutput) {
                    const ValueInfo& info = valueInfo(v);
                    if (info.host == Host::Model) return moduleName(*step.module) + "." + info.name;
                    const std::string host = hostPrefix(info.host);
                    return "layers." + std::to_string(layer) + "." + host + moduleName(*step.module) + "." + info.name;
                }
        return {};
    };
    std::string path = find(forwardSteps(*this));
    if (path.empty() && latentAttention) {  // q_proj's output, where q_lora_rank is null (the family's table has the latent)
        ModelConfig c;
        c.qkNorm = qkNorm;
        c.mla.enabled = true;
        path = find(forwardSteps(*this, c));
    }
    return path;
}

// Family::readAt is in block.cpp: the place comes from the block description.

std::string Family::contributionIdentity() const {
    const std::string a = blockNorms.afterAttention ? moduleName(Module::AttentionOutputNorm) + "(self_attn.attention_output)"
                                                    : "self_attn.attention_output";
    const std::string m = blockNorms.afterMlp ? moduleName(Module::MlpOutputNorm) + "(mlp.mlp_output)" : "mlp.mlp_output";
    return "layers[i].input + " + a + " + " + m + " == layer_output";
}

namespace {

/// Why a checkpoint of `f` has no value `v`, for a value its block table leaves out.
std::string unavailableReason(const Family& f, Value v) {
    const std::string fusedQkv = "this family projects queries, keys and values with one fused " + f.moduleName(Module::QkvProj);
    const std::string fusedGateUp =
        "this family computes gate and up with one fused " + f.moduleName(Module::GateUpProj) + "; read mlp_activation or mlp_neurons";
    if (f.latentAttention && (v == Value::NativeQProjOutput || v == Value::NativeKProjOutput || v == Value::NativeVProjOutput ||
                              v == Value::NativeQkvProjOutput || v == Value::NativeQNormOutput || v == Value::NativeKNormOutput))
        return v == Value::NativeQProjOutput
                   ? "q_lora_rank is set: the queries come from q_a_proj, q_a_layernorm and q_b_proj; read q_latent or attention_queries"
                   : "multi-head latent attention has no k_proj, v_proj or q/k norms: read kv_latent, key_rope, attention_keys or "
                     "attention_values";
    switch (v) {
        case Value::NativeQProjOutput:
        case Value::NativeKProjOutput:
        case Value::NativeVProjOutput:
            return fusedQkv + (f.qkv == QkvLayout::FusedPerHead ? "; read its output and slice [num_heads, 3, head_dim]"
                                                                 : "; read its output and slice [q | k | v]");
        case Value::NativeQkvProjOutput: return "this family has separate q_proj, k_proj and v_proj";
        case Value::NativeQNormOutput:
        case Value::NativeKNormOutput: return "this checkpoint does not norm queries and keys";
        case Value::NativeGateProjOutput: return f.mlp == MlpKind::GatedFused ? fusedGateUp : "this family's MLP has no gate";
        case Value::NativeUpProjOutput: return fusedGateUp;
        case Value::NativeGateUpProjOutput: return "this family has no fused gate_up_proj";
        case Value::NativeAttentionOutputNormOutput:
        case Value::NativeAttentionOutputNormScale: return "this family adds the attention's output to the stream unnormed";
        case Value::NativeMlpOutputNormOutput:
        case Value::NativeMlpOutputNormScale: return "this family adds the MLP's output to the stream unnormed";
        case Value::NativeInputNormScale:
        case Value::NativeInputNormNormalized: return "this family's attention reads the stream unnormed";
        case Value::MlpActivation:
        case Value::MlpNeurons:
            return "every block's MLP is a mixture of experts: each expert has its own neurons; read expert_outputs, routed_output "
                   "or mlp_output";
        case Value::RouterLogits:
        case Value::ExpertIndices:
        case Value::ExpertWeights:
        case Value::ExpertOutputs:
        case Value::RoutedOutput: return "this checkpoint's MLPs have no experts";
        case Value::SharedExpertOutput: return "this checkpoint's mixture has no shared expert";
        case Value::QLatent:
            return f.latentAttention ? "q_lora_rank is null: the queries come from q_proj directly, with no latent"
                                     : "this family's attention has no latent (multi-head latent attention only: DeepSeek V2/V3)";
        case Value::KvLatent:
        case Value::QueryNope:
        case Value::QueryRope:
        case Value::KeyRope: return "this family's attention has no latent (multi-head latent attention only: DeepSeek V2/V3)";
        case Value::NativePostAttentionNormScale:
        case Value::NativePostAttentionNormNormalized: return "this family's MLP reads the stream unnormed";
        default: return "this family's block does not compute it";
    }
}

}  // namespace

bool Family::hasValueAt(Value v, const ModelConfig& c, int layer, std::string* whyNot) const {
    if (!hasValue(v, c, whyNot)) return false;
    if (!experts || valueInfo(v).host == Host::Model) return true;
    const bool sparse = c.sparseMlp(layer);
    const bool denseOnly = v == Value::MlpActivation || v == Value::MlpNeurons || v == Value::NativeGateProjOutput ||
                           v == Value::NativeUpProjOutput || v == Value::NativeActFnInput || v == Value::NativeGateUpProjOutput;
    if (isMixtureValue(v) && !sparse) {
        if (whyNot) *whyNot = "block " + std::to_string(layer) + "'s MLP is dense (decoder_sparse_step / mlp_only_layers): it has no experts";
        return false;
    }
    if (denseOnly && sparse) {
        if (whyNot)
            *whyNot = "block " + std::to_string(layer) + "'s MLP is a mixture of experts: each expert has its own neurons; read "
                      "expert_outputs, routed_output or mlp_output";
        return false;
    }
    return true;
}

bool Family::hasValue(Value v, const ModelConfig& c, std::string* whyNot) const {
    for (const BlockStep& step : forwardSteps(*this, c))
        for (const StepValue& sv : step.values)
            if (sv.value == v) return true;
    if (whyNot) *whyNot = unavailableReason(*this, v);
    return false;
}

void readLlamaLikeConfig(const nlohmann::json& j, const std::string& file, const Family& family, ModelConfig& c) {
    cfg::readCommon(j, file, family.epsKey, c);
    c.attentionBias = !family.attentionBiasKey.empty() && cfg::getBool(j, family.attentionBiasKey, false, file);
    c.oProjBias = c.attentionBias;
    c.mlpBias = !family.mlpBiasKey.empty() && cfg::getBool(j, family.mlpBiasKey, false, file);
    c.qkNorm = family.qkNorm;
    if (!family.partialRotary) cfg::wholeHeadRotary(c.rope, file);
    cfg::checkPadTokenId(c, file);
}

ModelConfig resolveModelConfig(const nlohmann::json& raw, const std::string& file, const Family** familyOut) {
    const Family& fam = familyForConfig(raw, file);
    if (familyOut) *familyOut = &fam;
    nlohmann::json merged = fam.configDefaults;
    for (auto it = raw.begin(); it != raw.end(); ++it) merged[it.key()] = *it;
    ModelConfig c;
    c.raw = raw;
    c.modelType = fam.modelType;
    if (raw.contains("architectures") && raw["architectures"].is_array())
        for (const auto& a : raw["architectures"])
            if (a.is_string()) c.architectures.push_back(a.get<std::string>());
    if (c.architectures.empty()) c.architectures = {fam.architectures.front()};
    (fam.readConfig ? fam.readConfig : readLlamaLikeConfig)(merged, file, fam, c);
    return c;
}

const Family& familyForConfig(const nlohmann::json& config, const std::string& file) {
    const std::string modelType = config.contains("model_type") && config["model_type"].is_string()
                                      ? config["model_type"].get<std::string>() : std::string();
    std::vector<std::string> archs;
    if (config.contains("architectures") && config["architectures"].is_array())
        for (const auto& a : config["architectures"])
            if (a.is_string()) archs.push_back(a.get<std::string>());
    if (modelType.empty() && archs.empty())
        throw Error(file + ": names neither \"model_type\" nor \"architectures\", so nnscope cannot tell the model's family.");
    for (const Family& f : families())
        if (!modelType.empty() && f.modelType == modelType) return f;
    if (modelType.empty())
        for (const Family& f : families())
            for (const auto& a : archs)
                for (const auto& fa : f.architectures)
                    if (a == fa) return f;
    // the names of the key that was given, sorted: short enough to be read whole (with each architecture beside its
    // model_type the list passed the command line's message limit and was cut in its middle)
    std::vector<std::string> names;
    for (const Family& f : families()) names.push_back(modelType.empty() ? f.architectures.front() : f.modelType);
    std::sort(names.begin(), names.end());
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    const std::string what = !modelType.empty() ? "model_type \"" + modelType + "\"" : "architectures \"" + archs.front() + "\"";
    const std::string key = !modelType.empty() ? modelType : archs.front();
    throw Error(file + ": unknown " + what + ". nnscope supports: " + known +
                ". To add this family, write families/" + key + ".cpp (start from families/llama.cpp) and register it in families/registry.cpp.");
}

}  // namespace nnscope
