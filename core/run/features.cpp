// SPDX-License-Identifier: MIT
#include "core/run/features.h"

#include "core/analysis/analysis.h"
#include "core/model/block.h"
#include "core/model/error.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <map>

#include <regex>

namespace nnscope {
namespace {

/// The nnscope value path a TransformerLens hook names on `family`, or "" when the hook is not one nnscope maps.
std::string pathOfHook(const Family& family, const std::string& hook) {
    static const std::regex block(R"(^blocks\.(\d+)\.(.+)$)");
    std::smatch m;
    if (!std::regex_match(hook, m, block)) return {};
    const std::string L = "layers." + m[1].str() + ".";
    const std::string rest = m[2].str();
    if (rest == "hook_resid_pre") return L + "layer_input";
    if (rest == "hook_resid_mid") return L + "layer_mid";
    if (rest == "hook_resid_post") return L + "layer_output";
    if (rest == "hook_attn_out")
        return family.blockNorms.afterAttention ? L + family.moduleName(Module::AttentionOutputNorm) + ".output" : L + "self_attn.attention_output";
    if (rest == "hook_mlp_out" || rest == "mlp.hook_out")
        return family.blockNorms.afterMlp && rest == "hook_mlp_out" ? L + family.moduleName(Module::MlpOutputNorm) + ".output"
                                                                    : L + "mlp.mlp_output";
    if (rest == "hook_mlp_in" || rest == "mlp.hook_in") return L + "mlp_input";
    if (rest == "attn.hook_z") return L + "self_attn.attention_premix";
    if (rest == "mlp.hook_post") return L + "mlp.mlp_neurons";
    if (rest == "mlp.hook_pre") return L + "mlp." + family.moduleName(Module::ActFn) + ".input";
    // a norm's output before its gain: TransformerLens' LayerNorm / RMSNorm hook_normalized (the pre-MLP norm's for ln2)
    if (rest == "ln2.hook_normalized") return L + family.moduleName(Module::PostAttentionNorm) + ".normalized";
    if (rest == "ln1.hook_normalized") return L + family.moduleName(Module::InputNorm) + ".normalized";
    return {};
}

/// The value path a TransformerLens hook names; `where` starts the message. Throws nnscope::Error for a hook nnscope
/// does not map.
std::string pathOfHookOrThrow(const Family& f, const std::string& hook, const std::string& where) {
    std::string path = pathOfHook(f, hook);
    if (path.empty())
        throw Error(where + " is a TransformerLens hook nnscope does not map to a value (it maps blocks.N.hook_resid_pre/mid/post, "
                    "hook_attn_out, hook_mlp_out, hook_mlp_in, attn.hook_z, mlp.hook_pre, mlp.hook_post, mlp.hook_in, mlp.hook_out, "
                    "ln1.hook_normalized, ln2.hook_normalized).");
    return path;
}

/// The value `path` names on `model`, the pre-MLP norm's output read as mlp_input. Throws nnscope::Error starting with
/// `where` when the model has no such value.
ValueKey siteValue(const Model& model, const std::string& path, const std::string& where) {
    try {
        const ValueKey key = parseValuePath(model, path);
        // The pre-MLP norm's output is what the MLP is called with: one tensor, named as the MLP's input.
        if (key.value == Value::MlpNormOutput) return {Value::MlpInput, key.layer};
        return key;
    } catch (const Error& e) {
        throw Error(where + " (" + path + " in nnscope's words) does not fit " + model.dir() + ": " + e.what());
    }
}

}  // namespace

ValueKey dictionarySite(const Model& model, const Dictionary& d, bool out) {
    const Family& f = model.family();
    const std::string& site = out ? d.siteOut : d.site;
    const std::string where = d.dir + " (" + d.format + "): its site " + site;
    std::string path;
    if (d.siteConvention == "tl") {
        path = pathOfHookOrThrow(f, site, where);
    } else {
        // an HF module path, with or without the base model's prefix
        path = site;
        if (!f.basePrefix.empty() && path.rfind(f.basePrefix, 0) == 0) path = path.substr(f.basePrefix.size());
        // "hf-input" (a sparsify transcoder): it reads the module's input and stands for the module, so it writes its output
        if (d.siteConvention != "hf") path += d.siteConvention == "hf-input" && !out ? ".input" : ".output";
        // o_proj's input is every head's output side by side: attention_premix, flattened head-major
        static const std::regex oProjInput(R"(^layers\.(\d+)\.(\w+)\.(\w+)\.input$)");
        std::smatch m;
        if (std::regex_match(path, m, oProjInput)) {
            const auto attn = moduleNames(f, Module::SelfAttn), o = moduleNames(f, Module::OProj);
            if (std::find(attn.begin(), attn.end(), m[2].str()) != attn.end() && std::find(o.begin(), o.end(), m[3].str()) != o.end())
                path = "layers." + m[1].str() + ".self_attn.attention_premix";
        }
    }
    return siteValue(model, path, where);
}


int64_t siteWidth(const Model& model, const ValueKey& site) {
    const ModelConfig& c = model.config();
    const std::string layout = valueInfo(site.value).layout;
    if (site.value == Value::AttentionPremix || site.value == Value::AttentionHeadOutputs) return c.numHeads * c.headDim;
    if (layout == "Neurons") return c.intermediateSize;
    return c.hiddenSize;
}

AttachedDictionary AttachedDictionary::attach(const Model& model, std::shared_ptr<const Dictionary> dictionary) {
    AttachedDictionary a;
    a.dictionary = std::move(dictionary);
    const Dictionary& d = *a.dictionary;
    a.site = dictionarySite(model, d);
    a.siteOut = d.transcoder ? dictionarySite(model, d, /*out=*/true) : a.site;
    const Family& f = model.family();
    auto check = [&](const ValueKey& key, int64_t want, const char* side) {
        const int64_t have = siteWidth(model, key);
        if (have != want)
            throw Error(d.describe() + ": its " + side + " has " + std::to_string(want) + " values per position, but " + valuePath(f, key) +
                        " of " + model.dir() + " has " + std::to_string(have) + ". Is it the dictionary of another model?");
    };
    check(a.site, d.dIn, "input");
    check(a.siteOut, d.dOut, "output");
    return a;
}

std::vector<ValueKey> AttachedDictionary::neededValues() const {
    if (siteOut == site) return {site};
    return {site, siteOut};
}

FeatureRun runDictionary(const Model& model, const TraceResult& result, const AttachedDictionary& a, int64_t row) {
    c10::InferenceMode guard;
    const Dictionary& d = *a.dictionary;
    FeatureRun r;
    torch::Tensor x = promptValue(model, result, a.site, row);  // [length, ...]
    if (x.dim() > 2) x = x.flatten(1);                          // attention_premix: heads side by side
    r.input = x;
    r.features = d.encode(x);
    r.reconstruction = d.decode(r.features, x);
    torch::Tensor target = a.siteOut == a.site ? x : promptValue(model, result, a.siteOut, row);
    if (target.dim() > 2) target = target.flatten(1);
    r.target = target;
    r.error = target - r.reconstruction;
    measureQuality(r);
    return r;
}

void measureQuality(FeatureRun& r) {
    c10::InferenceMode guard;
    const int64_t length = r.features.size(0);
    const int64_t from = length > 1 ? 1 : 0;
    r.meanL0 = (r.features.narrow(0, from, length - from) > 0).sum(-1).to(torch::kFloat64).mean().item<double>();
    if (!r.target.defined() || !r.error.defined()) {
        r.mse = r.explainedVariance = std::nan("");
        return;
    }
    const torch::Tensor t = r.target.narrow(0, from, length - from).to(torch::kFloat64);
    const torch::Tensor e = r.error.narrow(0, from, length - from).to(torch::kFloat64);
    r.mse = e.pow(2).mean().item<double>();
    const double total = (t - t.mean(0, /*keepdim=*/true)).pow(2).sum().item<double>();
    // undefined (NaN) where the target does not vary: a prompt of one position after the BOS
    r.explainedVariance = total > 0 ? 1.0 - e.pow(2).sum().item<double>() / total : std::nan("");
}

std::vector<std::string> dictionaryPathNames(const std::vector<AttachedDictionary>& attached) {
    namespace fs = std::filesystem;
    // each folder's components, last first ("a/run1/layers.12": layers.12, run1, a)
    std::vector<std::vector<std::string>> parts;
    for (const AttachedDictionary& a : attached) {
        std::error_code ec;
        fs::path p = fs::absolute(a.dictionary->dir, ec).lexically_normal();
        if (!p.has_filename()) p = p.parent_path();  // "dir/"
        std::vector<std::string> r;
        for (; p.has_filename(); p = p.parent_path()) r.push_back(p.filename().string());
        if (r.empty()) r.push_back(a.dictionary->dir);
        parts.push_back(std::move(r));
    }
    std::vector<size_t> depth(attached.size(), 1);
    auto nameOf = [&](size_t i) {
        std::string n;
        for (size_t k = 0; k < depth[i] && k < parts[i].size(); ++k) n = parts[i][k] + (n.empty() ? "" : "/" + n);
        return n;
    };
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < attached.size(); ++i)
            for (size_t j = i + 1; j < attached.size(); ++j)
                if (nameOf(i) == nameOf(j) && (depth[i] < parts[i].size() || depth[j] < parts[j].size())) {
                    depth[i] = std::min(depth[i] + 1, parts[i].size());
                    depth[j] = std::min(depth[j] + 1, parts[j].size());
                    changed = true;
                }
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < attached.size(); ++i) names.push_back(nameOf(i));
    return names;
}

std::string dictionaryValuePath(const std::string& site, const std::string& name, DictionaryValue::Kind kind) {
    const char* what = kind == DictionaryValue::Kind::Features ? "features" : kind == DictionaryValue::Kind::Reconstruction ? "reconstruction" : "error";
    return site + "[" + name + "]." + what;
}

std::shared_ptr<DictionarySource> dictionarySource(const Model& model, const AttachedDictionary& a, const std::string& name) {
    const Dictionary& d = *a.dictionary;
    auto s = std::make_shared<DictionarySource>();
    std::error_code ec;
    s->name = name;
    s->folder = std::filesystem::exists(d.dir, ec) ? std::filesystem::absolute(d.dir, ec).lexically_normal().string() : d.dir;
    s->format = d.format;
    s->architecture = d.architecture;
    s->transcoder = d.transcoder;
    s->site = valuePath(model.family(), a.site);
    s->siteOut = valuePath(model.family(), a.siteOut);
    s->dIn = d.dIn, s->dSae = d.dSae, s->dOut = d.dOut;
    for (const std::string& f : d.weightFiles)
        s->weights.emplace_back(std::filesystem::exists(f, ec) ? std::filesystem::absolute(f, ec).lexically_normal().string() : f, "");
    return s;
}

namespace {

/// One dictionary value an attached dictionary offers.
struct OfferedValue {
    std::string path;
    size_t dictionary;
    DictionaryValue::Kind kind;
};

std::vector<OfferedValue> offeredValues(const Model& model, const std::vector<AttachedDictionary>& attached) {
    const std::vector<std::string> names = dictionaryPathNames(attached);
    std::vector<OfferedValue> out;
    for (size_t i = 0; i < attached.size(); ++i)
        for (auto kind : {DictionaryValue::Kind::Features, DictionaryValue::Kind::Reconstruction, DictionaryValue::Kind::Error})
            out.push_back({dictionaryValuePath(valuePath(model.family(), attached[i].site), names[i], kind), i, kind});
    return out;
}

}  // namespace

std::vector<std::string> dictionaryValuePaths(const Model& model, const std::vector<AttachedDictionary>& attached) {
    std::vector<std::string> out;
    for (const OfferedValue& v : offeredValues(model, attached)) out.push_back(v.path);
    return out;
}

SaveSelection matchSaveValues(const Model& model, const std::vector<AttachedDictionary>& attached, const std::vector<std::string>& patterns) {
    const std::vector<OfferedValue> offered = offeredValues(model, attached);
    SaveSelection sel;
    auto addValue = [&](const ValueKey& k) {
        if (std::find(sel.values.begin(), sel.values.end(), k) == sel.values.end()) sel.values.push_back(k);
    };
    auto addPath = [&](const std::string& p) {
        if (std::find(sel.dictionaryValues.begin(), sel.dictionaryValues.end(), p) == sel.dictionaryValues.end()) sel.dictionaryValues.push_back(p);
    };
    auto notAttached = [&](const std::string& pattern) {
        std::string list;
        const std::vector<std::string> names = dictionaryPathNames(attached);
        for (size_t i = 0; i < attached.size(); ++i)
            list += (list.empty() ? "" : "; ") + dictionaryValuePath(valuePath(model.family(), attached[i].site), names[i], DictionaryValue::Kind::Features) +
                    " (and .reconstruction, .error) from " + attached[i].dictionary->dir;
        return Error("--save pattern '" + pattern + "' names a sparse dictionary's value, but " +
                     (attached.empty() ? std::string("no dictionary is attached: give its folder with --dictionary DIR.")
                                       : "no attached dictionary has it. Attached: " + list + ". Add --dictionary DIR for another one."));
    };
    for (const std::string& pattern : patterns) {
        if (pattern == "all") {
            for (const ValueKey& k : matchValues(model, "all")) addValue(k);
            for (const OfferedValue& v : offered) addPath(v.path);
            continue;
        }
        // SITE[NAME].features; nnterp's accessors ("layers_output[3]") have brackets too, but no "]." after them
        const bool namesDictionary = pattern.find("].") != std::string::npos;
        if (pattern.find('*') == std::string::npos) {
            const auto it = std::find_if(offered.begin(), offered.end(), [&](const OfferedValue& v) { return v.path == pattern; });
            if (it != offered.end()) {
                addPath(it->path);
                continue;
            }
            try {
                addValue(parseValuePath(model, pattern));
            } catch (const Error&) {
                if (namesDictionary) throw notAttached(pattern);
                throw;
            }
            continue;
        }
        size_t found = 0;
        for (const ValueKey& k : allValueKeys(model, true))
            if (globMatch(pattern.c_str(), valuePath(model.family(), k).c_str())) addValue(k), ++found;
        for (const OfferedValue& v : offered)
            if (globMatch(pattern.c_str(), v.path.c_str())) addPath(v.path), ++found;
        if (found == 0) {
            if (namesDictionary) throw notAttached(pattern);
            throw Error("--save pattern '" + pattern + "' matches no value of this model" +
                        (attached.empty() ? std::string() : " or of its attached dictionaries") + " (see `nnscope support`).");
        }
    }
    sel.traced = sel.values;
    for (const std::string& p : sel.dictionaryValues) {
        const auto it = std::find_if(offered.begin(), offered.end(), [&](const OfferedValue& v) { return v.path == p; });
        for (const ValueKey& k : attached[it->dictionary].neededValues())
            if (std::find(sel.traced.begin(), sel.traced.end(), k) == sel.traced.end()) sel.traced.push_back(k);
    }
    return sel;
}

std::vector<DictionaryValue> dictionaryValues(const Model& model, const TraceResult& result, const std::vector<AttachedDictionary>& attached,
                                              const std::vector<std::string>& paths) {
    c10::InferenceMode guard;
    const std::vector<OfferedValue> offered = offeredValues(model, attached);
    const std::vector<std::string> names = dictionaryPathNames(attached);
    struct Computed {
        torch::Tensor features, reconstruction, error;
        std::shared_ptr<const DictionarySource> source;
    };
    std::map<size_t, Computed> done;
    auto site = [&](const AttachedDictionary& a, const ValueKey& key) {
        const torch::Tensor t = result.value(key);
        if (!t.defined())
            throw Error(a.dictionary->describe() + ": its site " + valuePath(model.family(), key) +
                        " was not saved by this trace, so its features cannot be computed; trace again saving it.");
        return t.to(torch::kFloat32).flatten(2);  // [batch, seq, ...] -> [batch, seq, width]: heads side by side (hook_z)
    };
    std::vector<DictionaryValue> out;
    for (const std::string& path : paths) {
        const auto it = std::find_if(offered.begin(), offered.end(), [&](const OfferedValue& v) { return v.path == path; });
        if (it == offered.end()) throw Error("'" + path + "' is not a value of the attached dictionaries.");
        Computed& c = done[it->dictionary];
        const AttachedDictionary& a = attached[it->dictionary];
        if (!c.features.defined()) {
            const torch::Tensor x = site(a, a.site);
            c.features = a.dictionary->encode(x);
            c.reconstruction = a.dictionary->decode(c.features, x);
            c.error = (a.siteOut == a.site ? x : site(a, a.siteOut)) - c.reconstruction;
            c.source = dictionarySource(model, a, names[it->dictionary]);
        }
        DictionaryValue v;
        v.path = path;
        v.kind = it->kind;
        v.source = c.source;
        v.tensor = (it->kind == DictionaryValue::Kind::Features ? c.features : it->kind == DictionaryValue::Kind::Reconstruction ? c.reconstruction : c.error)
                       .contiguous();
        out.push_back(std::move(v));
    }
    return out;
}

void keepOnly(TraceResult& result, const std::vector<ValueKey>& keys) {
    std::vector<std::pair<ValueKey, torch::Tensor>> kept;
    for (const ValueKey& k : keys)
        if (torch::Tensor t = result.value(k); t.defined()) kept.emplace_back(k, t);
    result.values = std::move(kept);
}

AttachedCrossLayerTranscoder AttachedCrossLayerTranscoder::attach(const Model& model, std::shared_ptr<const CrossLayerTranscoder> clt) {
    AttachedCrossLayerTranscoder a;
    a.transcoder = std::move(clt);
    const CrossLayerTranscoder& t = *a.transcoder;
    const Family& f = model.family();
    if (t.numLayers != model.config().numLayers)
        throw Error(t.describe() + ": it has " + std::to_string(t.numLayers) + " layers, " + model.dir() + " has " +
                    std::to_string(model.config().numLayers) + " blocks. Is it the transcoder of another model?");
    for (int l = 0; l < static_cast<int>(t.numLayers); ++l) {
        for (const bool out : {false, true}) {
            const std::string hook = out ? t.siteOut(l) : t.site(l);
            const std::string where = t.dir + " (circuit-tracer): its " + (out ? "output site " : "site ") + hook;
            const ValueKey key = siteValue(model, pathOfHookOrThrow(f, hook, where), where);
            const int64_t have = siteWidth(model, key);
            if (have != t.dModel)
                throw Error(t.describe() + ": its layers read and write " + std::to_string(t.dModel) + " values per position, but " +
                            valuePath(f, key) + " of " + model.dir() + " has " + std::to_string(have) + ". Is it the transcoder of another model?");
            (out ? a.sitesOut : a.sites).push_back(key);
        }
    }
    return a;
}

std::vector<ValueKey> AttachedCrossLayerTranscoder::neededValues() const {
    std::vector<ValueKey> v = sites;
    v.insert(v.end(), sitesOut.begin(), sitesOut.end());
    return v;
}

std::vector<FeatureRun> runCrossLayerTranscoder(const Model& model, const TraceResult& result, const AttachedCrossLayerTranscoder& a,
                                                int64_t row) {
    c10::InferenceMode guard;
    const CrossLayerTranscoder& t = *a.transcoder;
    std::vector<FeatureRun> runs(a.sites.size());
    std::vector<torch::Tensor> features;
    for (size_t l = 0; l < a.sites.size(); ++l) {
        FeatureRun& r = runs[l];
        r.input = promptValue(model, result, a.sites[l], row);  // [length, d_model]
        r.features = t.encode(r.input, static_cast<int>(l));
        features.push_back(r.features);
        r.reconstruction = t.reconstruct(features, static_cast<int>(l));
        r.target = promptValue(model, result, a.sitesOut[l], row);
        r.error = r.target - r.reconstruction;
        measureQuality(r);
    }
    return runs;
}

std::vector<FeatureActivation> topFeatures(const torch::Tensor& features, int k) {
    std::vector<FeatureActivation> out;
    const torch::Tensor f = features.to(torch::kFloat32).reshape({-1});
    const int64_t n = std::min<int64_t>(k, f.size(0));
    if (n <= 0) return out;
    auto [values, indices] = f.topk(n);
    for (int64_t i = 0; i < n; ++i) {
        const double v = values[i].item<double>();
        if (!(v > 0)) break;
        out.push_back({indices[i].item<int64_t>(), v});
    }
    return out;
}

FeatureIntervention::FeatureIntervention(AttachedDictionary attached) : attached_(std::move(attached)) {}

void FeatureIntervention::change(Change c) {
    if (c.feature < 0 || c.feature >= attached_.dictionary->dSae)
        throw Error("feature " + std::to_string(c.feature) + " is outside the dictionary's " + std::to_string(attached_.dictionary->dSae) +
                    " features (0 to " + std::to_string(attached_.dictionary->dSae - 1) + ").");
    changes_.push_back(c);
}

bool FeatureIntervention::touches(Value v, int layer) const {
    const ValueKey key{v, layer};
    return key == attached_.site || key == attached_.siteOut;
}

torch::Tensor FeatureIntervention::positionMask(const Change& c, int64_t batch, int64_t seq) const {
    torch::Tensor mask = torch::zeros({batch, seq}, torch::kBool);
    const bool known = static_cast<int64_t>(pass_.padding.size()) == batch;
    for (int64_t r = 0; r < batch; ++r) {
        const int64_t padding = known ? pass_.padding[static_cast<size_t>(r)] : 0;
        const int64_t prompt = known ? pass_.promptLength[static_cast<size_t>(r)] : seq;
        for (int64_t p : c.positions) {
            const int64_t at = padding + (p < 0 ? prompt + p : p);
            if (at >= padding && at < seq) mask[r][at] = true;
        }
    }
    if (!mask.any().item<bool>()) {
        std::string list;
        for (int64_t p : c.positions) list += (list.empty() ? "" : ",") + std::to_string(p);
        throw Error("feature " + std::to_string(c.feature) + "@" + list + " of " + attached_.dictionary->dir + ": no such position in this pass (" +
                    std::to_string(seq) + " tokens per row, the prompt's first at position 0).");
    }
    return mask;
}

torch::Tensor FeatureIntervention::edited(const torch::Tensor& f) const {
    if (changes_.empty()) return f;
    torch::Tensor out = f.clone();
    for (const Change& c : changes_) {
        torch::Tensor col = out.select(-1, c.feature);
        torch::Tensor changed = col.clone();
        switch (c.op) {
            case Edit::Op::Set: changed.fill_(c.value); break;
            case Edit::Op::Mul: changed.mul_(c.value); break;
            case Edit::Op::Div: changed.div_(c.value); break;
            case Edit::Op::Add: changed.add_(c.value); break;
            case Edit::Op::Sub: changed.sub_(c.value); break;
        }
        if (!c.positions.empty() && f.dim() == 3) changed = torch::where(positionMask(c, f.size(0), f.size(1)).to(f.device()), changed, col);
        col.copy_(changed);
    }
    return out;
}

void FeatureIntervention::apply(Value v, int layer, torch::Tensor& t) const {
    const Dictionary& d = *attached_.dictionary;
    const ValueKey key{v, layer};
    const auto shape = t.sizes().vec();
    // [batch, seq, ...] with the site's own layout; the dictionary reads each position's values side by side. What the
    // input's edited features make of the output site: their reconstruction (splice), or its change decode(f') - decode(f)
    const auto change = [&](const torch::Tensor& x) {
        const torch::Tensor f = d.encode(x);
        return splice_ ? d.decode(edited(f), x) : d.decode(edited(f), x) - d.decode(f, x);
    };
    if (attached_.site == attached_.siteOut) {  // an SAE: its input is its output site
        const torch::Tensor x = t.to(torch::kFloat32).flatten(2);
        const torch::Tensor out = splice_ ? change(x) : x + change(x);
        t = out.reshape(shape).to(t.scalar_type());
        return;
    }
    if (key == attached_.site) {
        // a transcoder's input: read, left as it is; what its edited features change is added where its output is made
        pending_ = change(t.to(torch::kFloat32).flatten(2));
        return;
    }
    if (!pending_.defined())
        throw Error(d.describe() + ": the pass computed its output site (" + std::string(valueInfo(attached_.siteOut.value).name) + " of block " +
                    std::to_string(attached_.siteOut.layer) + ") without computing its input site (" + valueInfo(attached_.site.value).name +
                    " of block " + std::to_string(attached_.site.layer) + ") before it, so its features cannot be edited.");
    const torch::Tensor y = t.to(torch::kFloat32).flatten(2);
    if (y.sizes() != pending_.sizes()) {
        std::ostringstream s;
        s << d.describe() << ": its output site holds " << y.sizes() << " values but its input site gave " << pending_.sizes()
          << " in this pass.";
        throw Error(s.str());
    }
    const torch::Tensor out = splice_ ? pending_ : y + pending_;
    pending_ = torch::Tensor();
    t = out.reshape(shape).to(t.scalar_type());
}

std::unique_ptr<FeatureIntervention> parseFeatureIntervention(const Model& model, const std::string& text, const std::string& baseDir) {
    auto folder = [&](const std::string& dir) {
        std::filesystem::path p(dir);
        if (p.is_relative()) p = std::filesystem::path(baseDir) / p;
        return p.string();
    };
    auto trimmed = [](std::string s) {
        const auto a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
        return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    const std::string what = "'" + text + "'";
    if (text.rfind("splice ", 0) == 0) {
        auto fi = std::make_unique<FeatureIntervention>(AttachedDictionary::attach(model, loadDictionary(folder(trimmed(text.substr(7))))));
        fi->setSplice(true);
        return fi;
    }
    // feature DIR:F[@P,...] OP VALUE
    static const std::regex re(R"(^feature\s+(.+):\s*(\d+)\s*(?:@\s*(-?\d+(?:\s*,\s*-?\d+)*))?\s*(=|\+=|-=|\*=|/=)\s*([-+0-9.eE]+)\s*$)");
    std::smatch m;
    if (!std::regex_match(text, m, re))
        throw Error(what + ": expected feature DIR:F[@POSITIONS] OP VALUE (OP one of = += -= *= /=; POSITIONS prompt positions, "
                    "comma-separated, negative from the prompt's end), e.g. feature saes/layer_12:1234 = 0, "
                    "feature tc/layer_3:77@5 *= 2, or splice DIR.");
    FeatureIntervention::Change c{};
    if (m[3].matched) {
        static const std::regex number(R"(-?\d+)");
        const std::string list = m[3].str();
        for (auto it = std::sregex_iterator(list.begin(), list.end(), number); it != std::sregex_iterator(); ++it) {
            try {
                c.positions.push_back(std::stoll(it->str()));
            } catch (...) {
                throw Error(what + ": position '" + it->str() + "' is out of range.");
            }
        }
    }
    try {
        c.feature = std::stoll(m[2].str());
        size_t used = 0;
        c.value = std::stod(m[5].str(), &used);
        if (used != m[5].str().size()) throw std::invalid_argument(m[5].str());
    } catch (...) {
        throw Error(what + ": '" + m[5].str() + "' is not a number.");
    }
    const std::string op = m[4].str();
    c.op = op == "=" ? Edit::Op::Set : op == "+=" ? Edit::Op::Add : op == "-=" ? Edit::Op::Sub : op == "*=" ? Edit::Op::Mul : Edit::Op::Div;
    auto fi = std::make_unique<FeatureIntervention>(AttachedDictionary::attach(model, loadDictionary(folder(trimmed(m[1].str())))));
    try {
        fi->change(c);
    } catch (const Error& e) {
        throw Error(what + ": " + e.what());
    }
    return fi;
}

}  // namespace nnscope
