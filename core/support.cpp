// SPDX-License-Identifier: MIT
#include "support.h"

#include <cmath>
#include <cstdio>
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
    for (Value v : standardValues()) {
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
        rows.push_back(std::move(r));
    }
    return rows;
}

std::vector<std::pair<std::string, int64_t>> standardSizes(const ModelConfig& c) {
    return {{"num_layers", c.numLayers}, {"hidden_size", c.hiddenSize}, {"num_heads", c.numHeads},
            {"num_kv_heads", c.numKvHeads}, {"head_dim", c.headDim}, {"qk_head_dim", c.headDim},
            {"vocab_size", c.vocabSize}, {"intermediate_size", c.intermediateSize}};
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
            if (r.host == h)
                host["values"].push_back({{"name", r.name}, {"layout", r.layout}, {"description", r.description},
                                          {"read_at", r.readAt}, {"eager_only", r.eagerOnly}, {"read_only", r.readOnly}});
        hosts.push_back(host);
    }
    j["hosts"] = hosts;
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
                out << (r.eagerOnly ? "⚠︎" : "") << r.name << "\t" << r.layout << "\t" << r.description << "\t" << r.readAt << "\n";
    }
    out << "\nSizes\n";
    for (const auto& [k, v] : standardSizes(model.config())) out << "model." << k << "\t" << v << "\n";
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

std::string valueLine(const std::string& indent, Value v) {
    const ValueInfo& info = valueInfo(v);
    if (v == Value::InputSize) return indent + "(" + info.name + "): " + info.description + "\n";
    return indent + "(" + info.name + ") -> " + layoutString(info) + ": " + info.description + "\n";
}

}  // namespace

std::string printout(const Model& model) { return printout(model.family(), model.config()); }

std::string printout(const Family& f, const ModelConfig& c) {
    const bool ln = f.norm == NormKind::LayerNorm;
    const std::string eps = pythonFloat(c.normEps);
    auto normRepr = [&](int64_t dim, NormKind kind) {
        if (kind == NormKind::LayerNorm)
            return "LayerNorm((" + std::to_string(dim) + ",), eps=" + eps + ", elementwise_affine=True, bias=True)";
        return f.classPrefix + "RMSNorm((" + std::to_string(dim) + ",), eps=" + eps + ")";
    };
    auto mod = [&](Module m) { return "(" + f.moduleLabel(m) + "): "; };
    const int64_t H = c.hiddenSize, D = c.headDim, QW = c.numHeads * D, KW = c.numKvHeads * D, I = c.intermediateSize;
    std::ostringstream o;
    o << hostClass(f, Host::Model) << "(\n";
    o << "  " << mod(Module::LmHead) << linearRepr(H, c.vocabSize, false) << "\n";
    o << "  (generator): Generator(\n    (streamer): Streamer()\n  )\n";
    o << "  " << mod(Module::EmbedTokens) << "Embedding(" << c.vocabSize << ", " << H
      << (c.padTokenId ? ", padding_idx=" + std::to_string(*c.padTokenId) : std::string()) << ")\n";    if (f.positions == PositionKind::Learned)
        o << "  " << mod(Module::PositionEmbeddings) << "Embedding(" << c.maxPositionEmbeddings << ", " << H << ")\n";
    o << "  (layers): ModuleList(\n";
    o << "    (0-" << c.numLayers - 1 << "): " << c.numLayers << " x " << hostClass(f, Host::Layer) << "(\n";
    const std::string a = "        ";
    o << "      " << mod(Module::SelfAttn) << hostClass(f, Host::Attention) << "(\n";
    if (f.qkv != QkvLayout::Separate) {
        o << a << mod(Module::QkvProj) << linearRepr(H, QW + 2 * KW, c.attentionBias) << "\n";
    } else {
        o << a << mod(Module::QProj) << linearRepr(H, QW, c.attentionBias) << "\n";
        o << a << mod(Module::KProj) << linearRepr(H, KW, c.attentionBias) << "\n";
        o << a << mod(Module::VProj) << linearRepr(H, KW, c.attentionBias) << "\n";
    }
    o << a << mod(Module::OProj) << linearRepr(QW, H, c.oProjBias) << "\n";
    if (c.qkNorm) {
        o << a << mod(Module::QNorm) << normRepr(D, f.qkNormKind) << "\n";
        o << a << mod(Module::KNorm) << normRepr(D, f.qkNormKind) << "\n";
    }
    if (!f.moduleLabel(Module::AttentionDropout).empty())
        o << a << mod(Module::AttentionDropout) << "Dropout(p=" << pythonFloat(c.raw.value("attention_dropout", 0.0))
          << ", inplace=False)\n";
    for (Value v : standardValues())
        if (valueInfo(v).host == Host::Attention) o << valueLine(a, v);
    o << "      )\n";
    o << "      " << mod(Module::Mlp) << hostClass(f, Host::Mlp) << "(\n";
    if (f.mlp == MlpKind::GatedFused) {
        o << a << mod(Module::GateUpProj) << linearRepr(H, 2 * I, c.mlpBias) << "\n";
    } else {
        if (f.mlp == MlpKind::Gated) o << a << mod(Module::GateProj) << linearRepr(H, I, c.mlpBias) << "\n";
        o << a << mod(Module::UpProj) << linearRepr(H, I, c.mlpBias) << "\n";
    }
    o << a << mod(Module::DownProj) << linearRepr(I, H, c.mlpBias) << "\n";
    o << a << mod(Module::ActFn) << activationRepr(c.hiddenAct) << "\n";
    for (Value v : standardValues())
        if (valueInfo(v).host == Host::Mlp) o << valueLine(a, v);
    o << "      )\n";
    if (f.blockNorms.beforeAttention) o << "      " << mod(Module::InputNorm) << normRepr(H, f.norm) << "\n";
    if (f.blockNorms.afterAttention) o << "      " << mod(Module::AttentionOutputNorm) << normRepr(H, f.norm) << "\n";
    if (f.blockNorms.beforeMlp) o << "      " << mod(Module::PostAttentionNorm) << normRepr(H, f.norm) << "\n";
    if (f.blockNorms.afterMlp) o << "      " << mod(Module::MlpOutputNorm) << normRepr(H, f.norm) << "\n";
    if (!f.moduleLabel(Module::LayerDropout).empty())
        o << "      " << mod(Module::LayerDropout) << "Dropout(p=" << pythonFloat(c.raw.value("hidden_dropout", 0.0))
          << ", inplace=False)\n";
    for (Value v : standardValues())
        if (valueInfo(v).host == Host::Layer) o << valueLine("      ", v);
    o << "    )\n  )\n";
    o << "  " << mod(Module::Norm) << normRepr(H, f.norm) << "\n";
    (void)ln;
    for (Value v : standardValues())
        if (valueInfo(v).host == Host::Model) o << valueLine("  ", v);
    o << ")\n";
    return o.str();
}

}  // namespace nnscope
