// SPDX-License-Identifier: MIT
#include "family.h"

#include "error.h"

namespace nnscope {

std::string Family::weightName(Weight w, int layer) const {
    auto it = weights.find(w);
    if (it == weights.end() || it->second.empty()) return {};
    std::string name = it->second;
    const auto p = name.find("{i}");
    if (p != std::string::npos) name.replace(p, 3, std::to_string(layer));
    return name;
}

std::string Family::moduleLabel(Module m) const {
    auto it = modules.find(m);
    return it == modules.end() ? std::string() : it->second;
}

std::string Family::moduleName(Module m) const {
    const std::string label = moduleLabel(m);
    return label.substr(0, label.find('/'));
}

std::string Family::nativeValuePath(Value v, int layer) const {
    Module m;
    switch (v) {
        case Value::NativeQProjOutput: m = Module::QProj; break;
        case Value::NativeKProjOutput: m = Module::KProj; break;
        case Value::NativeVProjOutput: m = Module::VProj; break;
        case Value::NativeQkvProjOutput: m = Module::QkvProj; break;
        case Value::NativeQNormOutput: m = Module::QNorm; break;
        case Value::NativeKNormOutput: m = Module::KNorm; break;
        case Value::NativeGateProjOutput: m = Module::GateProj; break;
        case Value::NativeUpProjOutput: m = Module::UpProj; break;
        case Value::NativeActFnInput: m = Module::ActFn; break;
        case Value::NativeAttentionOutputNormOutput: m = Module::AttentionOutputNorm; break;
        case Value::NativeMlpOutputNormOutput: m = Module::MlpOutputNorm; break;
        case Value::NativeGateUpProjOutput: m = Module::GateUpProj; break;
        default: return {};
    }
    const ValueInfo& info = valueInfo(v);
    const std::string host = info.host == Host::Attention ? "self_attn." : info.host == Host::Mlp ? "mlp." : "";
    return "layers." + std::to_string(layer) + "." + host + moduleName(m) + "." + info.name;
}

// Family::readAt is in block.cpp: the place comes from the block description.

std::string Family::contributionIdentity() const {
    const std::string a = blockNorms.afterAttention ? moduleName(Module::AttentionOutputNorm) + "(self_attn.attention_output)"
                                                    : "self_attn.attention_output";
    const std::string m = blockNorms.afterMlp ? moduleName(Module::MlpOutputNorm) + "(mlp.mlp_output)" : "mlp.mlp_output";
    return "layers[i].input + " + a + " + " + m + " == layer_output";
}

bool Family::hasValue(Value v, const ModelConfig& c, std::string* whyNot) const {
    auto no = [&](const std::string& why) {
        if (whyNot) *whyNot = why;
        return false;
    };
    switch (v) {
        case Value::NativeQProjOutput:
        case Value::NativeKProjOutput:
        case Value::NativeVProjOutput:
            if (qkv == QkvLayout::FusedPerHead)
                return no("this family projects queries, keys and values with one fused " + moduleName(Module::QkvProj) +
                          "; read its output and slice [num_heads, 3, head_dim]");
            if (qkv == QkvLayout::FusedContiguous)
                return no("this family projects queries, keys and values with one fused " + moduleName(Module::QkvProj) +
                          "; read its output and slice [q | k | v]");
            return true;
        case Value::NativeQkvProjOutput:
            if (qkv == QkvLayout::Separate) return no("this family has separate q_proj, k_proj and v_proj");
            return true;
        case Value::NativeQNormOutput:
        case Value::NativeKNormOutput:
            if (!c.qkNorm) return no("this checkpoint does not norm queries and keys");
            return true;
        case Value::NativeGateProjOutput:
            if (mlp == MlpKind::Plain) return no("this family's MLP has no gate");
            if (mlp == MlpKind::GatedFused)
                return no("this family computes gate and up with one fused " + moduleName(Module::GateUpProj) +
                          "; read mlp_activation or mlp_neurons");
            return true;
        case Value::NativeGateUpProjOutput:
            if (mlp != MlpKind::GatedFused) return no("this family has no fused gate_up_proj");
            return true;
        case Value::NativeAttentionOutputNormOutput:
            if (!blockNorms.afterAttention) return no("this family adds the attention's output to the stream unnormed");
            return true;
        case Value::NativeMlpOutputNormOutput:
            if (!blockNorms.afterMlp) return no("this family adds the MLP's output to the stream unnormed");
            return true;
        case Value::NativeUpProjOutput:
            if (mlp == MlpKind::GatedFused)
                return no("this family computes gate and up with one fused " + moduleName(Module::GateUpProj) +
                          "; read mlp_activation or mlp_neurons");
            return true;
        default: return true;
    }
}

void readLlamaLikeConfig(const nlohmann::json& j, const std::string& file, const Family& family, ModelConfig& c) {
    cfg::readCommon(j, file, family.epsKey, c);
    c.attentionBias = cfg::getBool(j, "attention_bias", false, file);
    c.oProjBias = c.attentionBias;
    c.mlpBias = cfg::getBool(j, "mlp_bias", false, file);
    c.qkNorm = family.qkNorm;
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
    std::string known;
    for (const Family& f : families()) known += (known.empty() ? "" : ", ") + f.modelType + " (" + f.architectures.front() + ")";
    const std::string what = !modelType.empty() ? "model_type \"" + modelType + "\"" : "architectures \"" + archs.front() + "\"";
    const std::string key = !modelType.empty() ? modelType : archs.front();
    throw Error(file + ": unknown " + what + ". nnscope supports: " + known +
                ". To add this family, write families/" + key + ".cpp (start from families/llama.cpp) and register it in families/registry.cpp.");
}

}  // namespace nnscope
