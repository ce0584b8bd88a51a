// SPDX-License-Identifier: MIT
#include "core/run/trace.h"

#include "core/model/block.h"
#include "core/model/device.h"
#include "core/run/edit.h"
#include "core/run/generate.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <algorithm>
#include <set>
#include <thread>

using namespace torch::indexing;

namespace nnscope {

const char* version() { return "0.1.0"; }

void configureThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(threads);
}

namespace {

/// A native path in the family's own spelling rewritten to the standard hosts: GPT-2's "h.1.attn.c_attn.output" is
/// "layers.1.self_attn.c_attn.output", GPT-NeoX's "layers.1.attention.dense.input" is "layers.1.self_attn.dense.input".
std::string standardHosts(const Family& f, const std::string& path) {
    auto isAlias = [&](Module m, const std::string& word) {
        const std::vector<std::string> names = moduleNames(f, m);
        return std::find(names.begin(), names.end(), word) != names.end();
    };
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    if (parts.size() >= 2 && isAlias(Module::Layers, parts[0])) parts[0] = "layers";
    if (parts.size() >= 3 && parts[0] == "layers" && isAlias(Module::SelfAttn, parts[2])) parts[2] = "self_attn";
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ".") + p;
    return out;
}


class TraceTaps : public Taps {
public:
    TraceTaps(const Model& m, const TraceOptions& o) : model_(m), options_(o) {
        for (const auto& k : o.save) wanted_.insert(k);
        wanted_.insert({Value::NextTokenProbs, -1});  // always reported (top-k), saved or not
    }
    void tap(Value v, int layer, torch::Tensor& t) override {
        if (options_.intervention && options_.intervention->touches(v, layer)) options_.intervention->apply(v, layer, t);
        const ValueKey key{v, layer};
        // A reference on the CPU (the pass never writes into a tensor in place); a value computed on a GPU is copied
        // back here (toHost), the one boundary where core's results become the CPU tensors the views read.
        if (wanted_.count(key)) saved_[key] = toHost(t);
    }
    bool needsAttentionPattern(int layer) const override {
        for (Value v : {Value::AttentionScores, Value::AttentionProbabilities}) {
            if (wanted_.count({v, layer})) return true;
            if (options_.intervention && options_.intervention->touches(v, layer)) return true;
        }
        return false;
    }
    bool beforeLayer(int layer) override {
        if (options_.stopAfterLayer >= 0 && layer > options_.stopAfterLayer) {
            stoppedEarly_ = true;  // the forward throws Cancelled; trace() catches it as the planned end
            return false;
        }
        if (options_.progress) options_.progress(layer, static_cast<int>(model_.config().numLayers));
        return !(options_.cancel && options_.cancel->load());
    }
    std::map<ValueKey, torch::Tensor> saved_;
    bool stoppedEarly_ = false;

private:
    const Model& model_;
    const TraceOptions& options_;
    std::set<ValueKey> wanted_;
};

}  // namespace

std::string valuePath(const Family& family, const ValueKey& key) {
    const ValueInfo& info = valueInfo(key.value);
    if (static_cast<int>(key.value) >= kNumStandardValues) return family.nativeValuePath(key.value, key.layer);
    if (info.host == Host::Model) return info.name;
    return "layers." + std::to_string(key.layer) + "." + hostPrefix(info.host) + info.name;
}

std::vector<ValueKey> allValueKeys(const Model& model, bool includeNative) {
    std::vector<ValueKey> out;
    const int n = static_cast<int>(model.config().numLayers);
    for (Value v : standardValues())
        if (valueInfo(v).host == Host::Model) out.push_back({v, -1});
    // A family with experts: each block's own values (the mixture's on a block with experts, the dense MLP's elsewhere).
    const bool perBlock = model.family().experts;
    for (int i = 0; i < n; ++i) {
        for (Value v : standardValues())
            if (valueInfo(v).host != Host::Model && (!perBlock || model.hasValueAt(v, i))) out.push_back({v, i});
        if (perBlock)
            for (Value v : mixtureValues())
                if (model.hasValueAt(v, i)) out.push_back({v, i});
        for (Value v : latentAttentionValues())
            if (model.hasValueAt(v, i)) out.push_back({v, i});
    }
    if (includeNative) {
        auto native = [&](int layer) {
            for (int v = kNumStandardValues; v < kNumValues; ++v) {
                const Value value = static_cast<Value>(v);
                if ((valueInfo(value).host == Host::Model) == (layer < 0) && model.hasValueAt(value, layer)) out.push_back({value, layer});
            }
        };
        native(-1);
        for (int i = 0; i < n; ++i) native(i);
    }
    return out;
}

namespace {
/// nnterp's StandardizedTransformer accessors written as a name: "layers_output.3" or "layers_output[3]" is
/// "layers.3.layer_output" (how a tensor saved from `model.layers_output[3]` is often named). "" when `path` is not one.
std::string nnterpAccessorPath(const std::string& path) {
    static const std::pair<const char*, const char*> kAccessors[] = {
        {"layers_input", "layer_input"},        {"layers_output", "layer_output"},
        {"attentions_input", "attention_norm_output"}, {"attentions_output", "self_attn.attention_output"},
        {"mlps_input", "mlp_input"},                   {"mlps_output", "mlp.mlp_output"},
        {"attention_probabilities", "self_attn.attention_probabilities"}};
    for (const auto& [accessor, value] : kAccessors) {
        const std::string a = accessor;
        if (path.size() <= a.size() + 1 || path.compare(0, a.size(), a) != 0) continue;
        std::string index = path.substr(a.size() + 1);
        const char open = path[a.size()];
        if (open == '[') {
            if (index.empty() || index.back() != ']') continue;
            index.pop_back();
        } else if (open != '.') {
            continue;
        }
        if (index.empty() || index.find_first_not_of("-0123456789") != std::string::npos) continue;
        return "layers." + index + "." + value;
    }
    return {};
}
}  // namespace

ValueKey parseValuePath(const Model& model, const std::string& nativePath) {
    const Family& fam = model.family();
    const std::string accessor = nnterpAccessorPath(nativePath);
    const std::string path = standardHosts(fam, accessor.empty() ? nativePath : accessor);
    const int n = static_cast<int>(model.config().numLayers);
    for (const auto& key : allValueKeys(model, true))
        if (valuePath(fam, key) == path) return key;
    // aliases, including every native alias of a module ("o_proj/dense")
    int layer = -1;
    std::string rest = path;
    if (path.rfind("layers.", 0) == 0) {
        const auto dot = path.find('.', 7);
        try {
            layer = std::stoi(path.substr(7, dot - 7));
        } catch (...) {
            throw Error("value path '" + path + "': expected layers.<block>.<name>.");
        }
        if (layer < 0) layer += n;
        if (layer < 0 || layer >= n)
            throw Error("value path '" + path + "': block " + path.substr(7, dot - 7) + " is out of range (the model has " +
                        std::to_string(n) + " blocks, 0 to " + std::to_string(n - 1) + ", or -1 to -" + std::to_string(n) +
                        " from the last).");
        rest = dot == std::string::npos ? "" : path.substr(dot + 1);
        for (const auto& key : allValueKeys(model, true))
            if (key.layer == layer && valuePath(fam, key) == "layers." + std::to_string(layer) + "." + rest) return key;
        // a standard value this block does not compute (a mixture's value on a dense block, or the reverse): say why
        for (int v = 0; v < kNumStandardValues; ++v) {
            const Value val = static_cast<Value>(v);
            std::string why;
            if (valueInfo(val).host != Host::Model && rest == std::string(hostPrefix(valueInfo(val).host)) + valueInfo(val).name &&
                !model.hasValueAt(val, layer, &why))
                throw Error("value path '" + path + "': " + why + ".");
        }
    }
    // native spellings of standard values, from the family's block description ("input_layernorm.output")
    for (const ValueSpelling& sp : valueSpellings(fam, model.config()))
        if (sp.root == (layer < 0) && rest == sp.suffix) return {sp.value, layer};
    {
        for (int v = kNumStandardValues; v < kNumValues; ++v) {
            const Value val = static_cast<Value>(v);
            if ((valueInfo(val).host == Host::Model) != (layer < 0)) continue;
            const std::string canonical = fam.nativeValuePath(val, layer);
            std::string why;
            if (canonical.empty()) continue;
            // compare with every alias of the module name
            const ValueInfo& info = valueInfo(val);
            const std::string host = hostPrefix(info.host);
            for (int m = 0; m < static_cast<int>(Module::Count); ++m)
                for (const std::string& alias : moduleNames(fam, static_cast<Module>(m)))
                    if (rest == host + alias + "." + info.name &&
                        ("." + canonical).find("." + fam.moduleName(static_cast<Module>(m)) + ".") != std::string::npos) {
                        if (!model.hasValue(val, &why)) throw Error("value path '" + path + "': " + why + ".");
                        return {val, layer};
                    }
        }
    }
    throw Error("unknown value path '" + nativePath + "'. Valid paths look like 'logits', 'layers.0.layer_output', "
                "'layers.0.self_attn.attention_probabilities', 'layers.0.mlp.mlp_neurons' (see `nnscope support`).");
}

bool globMatch(const char* p, const char* s) {
    if (*p == 0) return *s == 0;
    if (*p == '*') return globMatch(p + 1, s) || (*s && globMatch(p, s + 1));
    return *s && *p == *s && globMatch(p + 1, s + 1);
}

std::vector<ValueKey> matchValues(const Model& model, const std::string& pattern) {
    if (pattern == "all") return allValueKeys(model, false);
    if (pattern.find('*') == std::string::npos) return {parseValuePath(model, pattern)};
    std::vector<ValueKey> out;
    for (const auto& key : allValueKeys(model, true))
        if (globMatch(pattern.c_str(), valuePath(model.family(), key).c_str())) out.push_back(key);
    if (out.empty()) throw Error("--save pattern '" + pattern + "' matches no value of this model (see `nnscope support`).");
    return out;
}

Batch batchFromIds(const std::vector<std::vector<int64_t>>& ids, int64_t padId) {
    Batch b;
    b.ids = ids;
    b.padId = padId;
    size_t maxLen = 0;
    for (const auto& row : ids) {
        if (row.empty()) throw Error("a prompt has no tokens: nothing to run.");
        maxLen = std::max(maxLen, row.size());
    }
    if (ids.empty()) throw Error("no prompt given.");
    const auto n = static_cast<int64_t>(ids.size()), s = static_cast<int64_t>(maxLen);
    b.inputIds = torch::full({n, s}, padId, torch::TensorOptions().dtype(torch::kInt64));
    b.attentionMask = torch::zeros({n, s}, torch::TensorOptions().dtype(torch::kInt64));
    for (int64_t r = 0; r < n; ++r) {
        const auto& row = ids[static_cast<size_t>(r)];
        const int64_t off = s - static_cast<int64_t>(row.size());
        for (size_t j = 0; j < row.size(); ++j) b.inputIds[r][off + static_cast<int64_t>(j)] = row[j];
        b.attentionMask.index_put_({r, Slice(off, None)}, 1);
    }
    return b;
}

Batch encodeBatch(const Model& model, const std::vector<std::string>& prompts) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok) throw Error("cannot tokenize: " + model.tokenizerError());
    std::vector<std::vector<int64_t>> ids;
    for (const auto& p : prompts) {
        auto row = tok->encode(p, true);
        if (row.empty())
            throw Error("the prompt \"" + p + "\" tokenizes to nothing (" + tok->sourceFile() +
                        " adds no BOS token), so there is no position to run.");
        ids.push_back(std::move(row));
    }
    const auto& c = model.config();
    const int64_t pad = c.padTokenId.value_or(c.eosTokenId.value_or(0));
    Batch b = batchFromIds(ids, pad >= 0 && pad < c.vocabSize ? pad : 0);
    b.prompts = prompts;
    return b;
}

torch::Tensor TraceResult::value(const ValueKey& key) const {
    for (const auto& [k, t] : values)
        if (k == key) return t;
    return {};
}

const DictionaryValue* TraceResult::dictionaryValue(const std::string& path) const {
    for (const DictionaryValue& v : dictionaryValues)
        if (v.path == path) return &v;
    return nullptr;
}

TraceResult trace(const Model& model, const Batch& batch, const TraceOptions& options) {
    c10::InferenceMode guard;
    TraceResult result;
    result.batch = batch;
    TraceTaps taps(model, options);
    if (options.intervention) {
        const int64_t seq = batch.inputIds.size(1);
        PassPositions positions;
        for (size_t r = 0; r < batch.ids.size(); ++r) {
            const int64_t length = static_cast<int64_t>(batch.ids[r].size());
            positions.padding.push_back(seq - length);
            positions.promptLength.push_back(r < options.promptLengths.size() ? std::min(options.promptLengths[r], length) : length);
        }
        options.intervention->begin(positions);
    }
    try {
        model.forward(batch.inputIds, batch.attentionMask, &taps);
    } catch (const Cancelled&) {
        if (!taps.stoppedEarly_) throw;  // a real cancel; stopAfterLayer's end is not one
    }
    const ValueKey probsKey{Value::NextTokenProbs, -1};
    if (auto it = taps.saved_.find(probsKey); it != taps.saved_.end()) result.nextTokenProbs = it->second;
    for (const auto& k : options.save) {
        auto it = taps.saved_.find(k);
        if (it != taps.saved_.end()) result.values.emplace_back(k, it->second);
    }
    return result;
}

std::vector<std::vector<TokenProb>> topK(const Model& model, const torch::Tensor& probs, int k) {
    std::vector<std::vector<TokenProb>> out;
    k = std::min<int>(k, static_cast<int>(probs.size(-1)));
    auto [values, indices] = probs.to(torch::kFloat32).topk(k, -1);
    for (int64_t r = 0; r < probs.size(0); ++r) {
        std::vector<TokenProb> row;
        // a distribution with a NaN (the pass made one upstream) names no token: topk would name the first NaN's id
        if (!torch::isfinite(probs[r]).all().item<bool>()) {
            out.push_back(std::move(row));
            continue;
        }
        for (int j = 0; j < k; ++j) {
            const int64_t id = indices[r][j].item<int64_t>();
            const std::string text = model.tokenizer() ? model.tokenizer()->tokenLabel(id) : std::to_string(id);
            row.push_back({id, text, values[r][j].item<double>()});
        }
        out.push_back(std::move(row));
    }
    return out;
}

std::vector<int64_t> generateGreedy(const Model& model, const std::vector<int64_t>& ids, int maxNewTokens, bool stopAtEos,
                                    const std::atomic<bool>* cancel) {
    GenerateOptions o;
    o.maxNewTokens = maxNewTokens;
    o.stopAtEos = stopAtEos;
    o.eosTokenIds = stopTokenIds(model);
    o.cancel = cancel;
    o.sample = false;
    if (ids.empty()) throw Error("generate needs at least one token to start from.");
    const int64_t context = model.config().maxPositionEmbeddings;  // callers before generate() stopped at the context
    if (context > 0) o.maxNewTokens = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(maxNewTokens, context - static_cast<int64_t>(ids.size()))));
    return generate(model, ids, o).ids;
}

int64_t parseTokenArgument(const Model& m, const std::string& text, const std::string& what) {
    if (!text.empty() && text[0] == '#') {
        try {
            size_t used = 0;
            const long long id = std::stoll(text.substr(1), &used);
            if (used + 1 == text.size() && id >= 0 && id < m.config().vocabSize) return id;
        } catch (...) {
        }
        throw Error(what + ": '" + text + "' is not a token id of this model (0 to " + std::to_string(m.config().vocabSize - 1) + ").");
    }
    if (!m.tokenizer()) throw Error(what + ": cannot tokenize: " + m.tokenizerError());
    const auto ids = m.tokenizer()->encode(text, false);
    if (ids.size() != 1) {
        // a token as nnscope prints it ("␣there") or as the vocabulary holds it ("▁there", "," of SentencePiece)
        if (const auto id = m.tokenizer()->idOfToken(text)) return *id;
        std::string pieces;
        for (int64_t id : ids) pieces += (pieces.empty() ? "" : ", ") + m.tokenizer()->tokenLabel(id);
        throw Error(what + ": '" + text + "' is " + std::to_string(ids.size()) + " tokens (" + (pieces.empty() ? "none" : pieces) +
                    "), not one; give a single token, or #ID for a token id (`nnscope tokenize` shows the pieces).");
    }
    const std::string piece = m.tokenizer()->tokenString(ids[0]);
    if (m.tokenizer()->isUnknownToken(ids[0]) && text != piece)
        throw Error(what + ": '" + text + "' is not in the vocabulary (it becomes the unknown token " + piece + ").");
    return ids[0];
}

}  // namespace nnscope
