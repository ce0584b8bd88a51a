// SPDX-License-Identifier: MIT
#include "core/pages/support.h"

#include "core/model/block.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace nnscope {

std::string pythonFloat(double v) {
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    for (int prec = 1; prec <= 17; ++prec) {  // shortest representation that round-trips, as repr() picks
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    std::string s = buf;
    const auto e = s.find('e');
    if (e == std::string::npos) {
        if (s.find('.') == std::string::npos) s += ".0";
        return s;
    }
    // %g writes 1e-05 already; make sure the exponent has two digits and a sign as Python does
    std::string mant = s.substr(0, e), ex = s.substr(e + 1);
    const char sign = (ex[0] == '-' || ex[0] == '+') ? ex[0] : '+';
    if (ex[0] == '-' || ex[0] == '+') ex = ex.substr(1);
    while (ex.size() > 2 && ex[0] == '0') ex = ex.substr(1);
    if (ex.size() < 2) ex = "0" + ex;
    const double absv = std::fabs(v);
    if (absv >= 1e-4 && absv < 1e16) {  // Python prints these without an exponent
        std::snprintf(buf, sizeof buf, "%.17g", v);
        return buf;
    }
    return mant + "e" + std::string(1, sign) + ex;
}

std::string hostClass(const Family& f, Host host) {
    switch (host) {
        case Host::Model: return f.architectures.front();  // LlamaForCausalLM, GPT2LMHeadModel, ...
        case Host::Layer: return f.classPrefix + "DecoderLayer";
        case Host::Attention: return f.classPrefix + "Attention";
        case Host::Mlp: return f.classPrefix + "MLP";
    }
    return {};
}

std::vector<SupportRow> supportTable(const Family& f) {
    std::vector<SupportRow> rows;
    std::vector<Value> values = standardValues();
    if (f.experts)
        for (Value v : mixtureValues())
            if (v != Value::SharedExpertOutput || f.hasModule(Module::SharedExpert)) values.push_back(v);
    if (f.latentAttention)
        for (Value v : latentAttentionValues()) values.push_back(v);
    for (Value v : values) {
        const ValueInfo& info = valueInfo(v);
        SupportRow r;
        r.host = info.host;
        r.hostPath = hostPath(info.host);
        r.hostClass = hostClass(f, info.host);
        r.value = v;
        r.name = info.name;
        r.layout = layoutString(info);
        r.description = info.description;
        r.readAt = f.readAt(v);
        r.eagerOnly = info.eagerOnly;
        r.readOnly = info.readOnly;
        if (f.experts && isMixtureValue(v)) r.availability = "blocks with experts only";
        if (f.experts && (v == Value::MlpActivation || v == Value::MlpNeurons)) r.availability = "dense blocks only";
        if (v == Value::QLatent) r.availability = "where q_lora_rank is set";
        rows.push_back(std::move(r));
    }
    return rows;
}

std::vector<std::pair<std::string, int64_t>> standardSizes(const ModelConfig& c) {
    return {{"num_layers", c.numLayers}, {"hidden_size", c.hiddenSize}, {"num_heads", c.numHeads},
            {"num_kv_heads", c.numKvHeads}, {"head_dim", c.headDim}, {"qk_head_dim", c.qkHeadDim()},
            {"vocab_size", c.vocabSize}, {"intermediate_size", c.intermediateSize}};
}

std::string blocksWith(const Model& model, Value v) {
    std::string list;
    int n = 0;
    const int L = static_cast<int>(model.config().numLayers);
    for (int i = 0; i < L; ++i)
        if (model.hasValueAt(v, i)) list += (n++ ? ", " : "") + std::to_string(i);
    return n == L ? "all" : n == 0 ? "none" : list;
}

std::vector<NativeValueRow> nativeValueRows(const Model& model) {
    const Family& f = model.family();
    std::vector<NativeValueRow> rows;
    for (int i = kNumStandardValues; i < kNumValues; ++i) {
        const Value v = static_cast<Value>(i);
        const ValueInfo& info = valueInfo(v);
        NativeValueRow r;
        r.value = v;
        r.layout = layoutString(info);
        r.description = info.description;
        r.available = model.hasValue(v, &r.whyNot);
        if (r.available) {
            r.path = f.nativeValuePath(v, 0);
            if (r.path.rfind("layers.0.", 0) == 0) r.path = "layers.i." + r.path.substr(9);
        }
        rows.push_back(std::move(r));
    }
    return rows;
}

nlohmann::json supportJson(const Model& model) {
    const Family& f = model.family();
    nlohmann::json j;
    j["family"] = f.modelType;
    j["title"] = f.title;
    j["architecture"] = model.config().architectures.front();
    nlohmann::json sizes = nlohmann::json::object();
    for (const auto& [k, v] : standardSizes(model.config())) sizes[k] = v;
    j["sizes"] = sizes;
    nlohmann::json hosts = nlohmann::json::array();
    for (Host h : {Host::Model, Host::Layer, Host::Attention, Host::Mlp}) {
        nlohmann::json host = {{"host", hostPath(h)}, {"class", hostClass(f, h)}, {"values", nlohmann::json::array()}};
        for (const auto& r : supportTable(f))
            if (r.host == h) {
                nlohmann::json row = {{"name", r.name}, {"layout", r.layout}, {"description", r.description},
                                      {"read_at", r.readAt}, {"eager_only", r.eagerOnly}, {"read_only", r.readOnly}};
                if (!r.availability.empty()) row["blocks"] = blocksWith(model, r.value);
                host["values"].push_back(row);
            }
        hosts.push_back(host);
    }
    j["hosts"] = hosts;
    nlohmann::json natives = nlohmann::json::array();
    for (const NativeValueRow& r : nativeValueRows(model)) {
        nlohmann::json n = {{"layout", r.layout}, {"description", r.description}, {"available", r.available}};
        if (r.available) n["path"] = r.path;
        else n["why"] = r.whyNot;
        natives.push_back(n);
    }
    j["native_values"] = natives;
    return j;
}

std::string supportText(const Model& model) {
    const Family& f = model.family();
    std::ostringstream out;
    out << f.title << " (" << model.config().architectures.front() << ") · " << model.dir() << "\n\nValues, by host\n"
        << "⚠︎ marks a value transformers has only under attn_implementation=\"eager\"; nnscope always computes it.\n";
    for (Host h : {Host::Model, Host::Layer, Host::Attention, Host::Mlp}) {
        out << "\n" << hostPath(h) << " " << hostClass(f, h) << "\tlayout\twhat it is\tread at\n";
        for (const auto& r : supportTable(f))
            if (r.host == h)
                out << (r.eagerOnly ? "⚠︎" : "") << r.name << "\t" << r.layout << "\t" << r.description << "\t" << r.readAt
                    << (r.availability.empty() ? "" : "\t(blocks " + blocksWith(model, r.value) + ")") << "\n";
    }
    out << "\nSizes\n";
    for (const auto& [k, v] : standardSizes(model.config())) out << "model." << k << "\t" << v << "\n";
    out << "\nNative values (the family's own modules; --save and the edits take these paths too)\npath\tlayout\twhat it is\n";
    std::string missing;
    for (const NativeValueRow& r : nativeValueRows(model)) {
        if (r.available) out << r.path << "\t" << r.layout << "\t" << r.description << "\n";
        else missing += "  " + r.description.substr(0, r.description.find_first_of(":;,")) + ": " + r.whyNot + "\n";
    }
    if (!missing.empty()) out << "Not in this checkpoint:\n" << missing;
    return out.str();
}

namespace {

std::string activationRepr(const std::string& act) {
    static const std::map<std::string, std::string> names = {
        {"silu", "SiLUActivation()"}, {"swish", "SiLU()"}, {"gelu", "GELUActivation()"}, {"gelu_pytorch_tanh", "GELUTanh()"},
        {"gelu_new", "NewGELUActivation()"}, {"gelu_fast", "FastGELUActivation()"}, {"quick_gelu", "QuickGELUActivation()"},
        {"relu", "ReLU()"}, {"relu2", "ReLUSquaredActivation()"}, {"relu6", "ReLU6()"}, {"sigmoid", "Sigmoid()"},
        {"tanh", "Tanh()"}, {"linear", "LinearActivation()"}, {"xielu", "XIELUActivation()"}, {"gelu_python_tanh", "GELUTanh()"}};
    auto it = names.find(act);
    return it == names.end() ? act + "()" : it->second;
}

std::string linearRepr(int64_t in, int64_t out, bool bias) {
    return "Linear(in_features=" + std::to_string(in) + ", out_features=" + std::to_string(out) + ", bias=" +
           (bias ? "True" : "False") + ")";
}

std::string valueText(Value v) {
    const ValueInfo& info = valueInfo(v);
    if (v == Value::InputSize) return "(" + std::string(info.name) + "): " + info.description;
    return "(" + std::string(info.name) + ") -> " + layoutString(info) + ": " + info.description;
}

}  // namespace

std::string printout(const Model& model) { return printout(model.family(), model.config()); }

std::string printout(const Family& f, const ModelConfig& c) {
    std::string text;
    for (const PrintoutLine& line : printoutLines(f, c)) text += line.text + "\n";
    return text;
}

std::vector<PrintoutLine> printoutLines(const Family& f, const ModelConfig& c) {
    std::vector<PrintoutLine> lines;
    // The modules the block description has for this checkpoint: the printout shows these and no other.
    std::set<Module> present = {Module::Layers};
    for (const BlockStep& step : forwardSteps(f, c))
        if (step.module) present.insert(*step.module);
    const std::string eps = pythonFloat(c.normEps);
    auto normRepr = [&](int64_t dim, NormKind kind) {
        if (kind == NormKind::LayerNorm)
            return "LayerNorm((" + std::to_string(dim) + ",), eps=" + eps + ", elementwise_affine=True, bias=True)";
        return f.classPrefix + "RMSNorm((" + std::to_string(dim) + ",), eps=" + eps + ")";
    };
    auto plain = [&](const std::string& text) { lines.push_back({text, std::nullopt, std::nullopt}); };
    auto module = [&](const std::string& indent, Module m, const std::string& repr) {
        if (present.count(m)) lines.push_back({indent + "(" + f.moduleLabel(m) + "): " + repr, std::nullopt, m});
    };
    auto values = [&](const std::string& indent, Host h) {
        for (Value v : standardValues())
            if (valueInfo(v).host == h) lines.push_back({indent + valueText(v), v, std::nullopt});
    };
    const int64_t H = c.hiddenSize, D = c.headDim, QW = c.numHeads * D, KW = c.numKvHeads * D, I = c.intermediateSize;
    plain(hostClass(f, Host::Model) + "(");
    module("  ", Module::LmHead, linearRepr(H, c.vocabSize, false));
    if (!f.skippedTensorPrefixes.empty()) {  // Gemma 3's vision tower and projector: in the file, never loaded
        std::string parts;
        for (const std::string& prefix : f.skippedTensorPrefixes) {
            std::string name = prefix.substr(0, prefix.size() - (!prefix.empty() && prefix.back() == '.' ? 1 : 0));
            name = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
            parts += (parts.empty() ? "" : ", ") + name;
        }
        plain("  (" + parts + "): " + f.skippedNote);
    }
    plain("  (generator): Generator(");
    plain("    (streamer): Streamer()");
    plain("  )");
    module("  ", Module::EmbedTokens, "Embedding(" + std::to_string(c.vocabSize) + ", " + std::to_string(H) +
                                          (c.padTokenId ? ", padding_idx=" + std::to_string(*c.padTokenId) : std::string()) + ")");
    module("  ", Module::PositionEmbeddings, "Embedding(" + std::to_string(c.maxPositionEmbeddings) + ", " + std::to_string(H) + ")");
    module("  ", Module::Layers, "ModuleList(");
    plain("    (0-" + std::to_string(c.numLayers - 1) + "): " + std::to_string(c.numLayers) + " x " + hostClass(f, Host::Layer) + "(");
    const std::string a = "        ";
    module("      ", Module::SelfAttn, hostClass(f, Host::Attention) + "(");
    module(a, Module::QkvProj, linearRepr(H, QW + 2 * KW, c.attentionBias));
    module(a, Module::QProj, linearRepr(H, c.mla.enabled ? c.numHeads * c.qkHeadDim() : QW, c.mla.enabled ? false : c.attentionBias));
    if (c.mla.enabled) {  // multi-head latent attention
        const MlaConfig& m = c.mla;
        const std::string latentEps = pythonFloat(m.latentNormEps);
        module(a, Module::QAProj, linearRepr(H, m.qLoraRank, c.attentionBias));
        module(a, Module::QALayernorm, f.classPrefix + "RMSNorm((" + std::to_string(m.qLoraRank) + ",), eps=" + latentEps + ")");
        module(a, Module::QBProj, linearRepr(m.qLoraRank, c.numHeads * c.qkHeadDim(), false));
        module(a, Module::KvAProjWithMqa, linearRepr(H, m.kvLoraRank + m.qkRopeHeadDim, c.attentionBias));
        module(a, Module::KvALayernorm, f.classPrefix + "RMSNorm((" + std::to_string(m.kvLoraRank) + ",), eps=" + latentEps + ")");
        module(a, Module::KvBProj, linearRepr(m.kvLoraRank, c.numHeads * (m.qkNopeHeadDim + m.vHeadDim), false));
    }
    module(a, Module::KProj, linearRepr(H, KW, c.attentionBias));
    module(a, Module::VProj, linearRepr(H, KW, c.attentionBias));
    module(a, Module::OProj, linearRepr(QW, H, c.oProjBias));
    module(a, Module::QNorm, normRepr(f.qkNormScope == QkNormScope::WholeProjection ? QW : D, f.qkNormKind));
    module(a, Module::KNorm, normRepr(f.qkNormScope == QkNormScope::WholeProjection ? KW : D, f.qkNormKind));
    module(a, Module::AttentionDropout, "Dropout(p=" + pythonFloat(c.raw.value("attention_dropout", 0.0)) + ", inplace=False)");
    values(a, Host::Attention);
    plain("      )");
    module("      ", Module::Mlp, hostClass(f, Host::Mlp) + "(");
    module(a, Module::GateUpProj, linearRepr(H, 2 * I, c.mlpBias));
    module(a, Module::GateProj, linearRepr(H, I, c.mlpBias));
    module(a, Module::UpProj, linearRepr(H, I, c.mlpBias));
    module(a, Module::DownProj, linearRepr(I, H, c.mlpBias));
    module(a, Module::ActFn, activationRepr(c.hiddenAct));
    // a mixture of experts (on the blocks that have one)
    module(a, Module::Router, f.classPrefix + "TopKRouter(num_experts=" + std::to_string(c.moe.numExperts) + ", top_k=" +
                                  std::to_string(c.moe.topK) + ")");
    module(a, Module::Experts, f.classPrefix + "Experts(" + std::to_string(c.moe.numExperts) + " x gate/up " + std::to_string(H) + " -> " +
                                   std::to_string(c.moe.expertIntermediateSize) + ", down " + std::to_string(c.moe.expertIntermediateSize) +
                                   " -> " + std::to_string(H) + ", " + activationRepr(c.hiddenAct) + ")");
    {  // the shared expert's own projections, named inside its line (its children have no step of their own)
        const int64_t S = c.moe.sharedExpertIntermediateSize;
        module(a, Module::SharedExpert, f.classPrefix + "MLP((" + f.moduleLabel(Module::SharedGateProj) + "): " + linearRepr(H, S, c.mlpBias) +
                                            ", (" + f.moduleLabel(Module::SharedUpProj) + "): " + linearRepr(H, S, c.mlpBias) + ", (" +
                                            f.moduleLabel(Module::SharedDownProj) + "): " + linearRepr(S, H, c.mlpBias) + ", " +
                                            activationRepr(c.hiddenAct) + ")");
    }
    module(a, Module::SharedExpertGate, linearRepr(H, 1, false));
    values(a, Host::Mlp);
    plain("      )");
    module("      ", Module::InputNorm, normRepr(H, f.norm));
    module("      ", Module::AttentionOutputNorm, normRepr(H, f.norm));
    module("      ", Module::PostAttentionNorm, normRepr(H, f.norm));
    module("      ", Module::MlpOutputNorm, normRepr(H, f.norm));
    module("      ", Module::LayerDropout, "Dropout(p=" + pythonFloat(c.raw.value("hidden_dropout", 0.0)) + ", inplace=False)");
    values("      ", Host::Layer);
    plain("    )");
    plain("  )");
    module("  ", Module::Norm, normRepr(H, f.norm));
    values("  ", Host::Model);
    plain(")");
    return lines;
}

}  // namespace nnscope
