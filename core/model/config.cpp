// SPDX-License-Identifier: MIT
#include "core/model/config.h"

#include "core/model/error.h"
#include "core/io/jsonfile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace nnscope {

namespace {
/// What a folder without config.json holds instead, as advice (" It holds ..."): checkpoints one level down, a GGUF file,
/// a llama2.c checkpoint; "" when nothing is recognised.
std::string whatTheFolderHolds(const std::string& dir) {
    std::vector<std::string> below, gguf, bins;
    bool sentencePiece = false;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
        const fs::path q = it->path();
        const std::string name = q.filename().string(), ext = q.extension().string();
        if (it->is_directory(ec) && fs::exists(q / "config.json", ec)) below.push_back(name);
        else if (ext == ".gguf") gguf.push_back(name);
        else if (ext == ".bin" && name.rfind("pytorch_model", 0) != 0 && name.rfind("tok", 0) != 0) bins.push_back(name);
        else if (ext == ".model") sentencePiece = true;
    }
    std::sort(below.begin(), below.end());
    if (!below.empty()) {
        std::string list;
        for (size_t i = 0; i < below.size() && i < 6; ++i) list += (i ? ", " : "") + below[i];
        return " It holds checkpoints in its subfolders (" + list + "): give one of them, e.g. " + (fs::path(dir) / below.front()).string() + ".";
    }
    if (!gguf.empty())
        return " It holds a GGUF file (" + gguf.front() + "), llama.cpp's format; nnscope reads HuggingFace checkpoints (config.json and "
               "safetensors): open the model's HuggingFace folder.";
    if (!bins.empty() && sentencePiece)
        return " It looks like a llama2.c checkpoint (" + bins.front() + " beside a SentencePiece model); nnscope reads HuggingFace "
               "checkpoints: convert it to one first (LlamaForCausalLM; llama2.c rotates adjacent pairs, so each q_proj and k_proj "
               "head's rows are permuted on the way, even rows first).";
    return {};
}
}  // namespace

json readConfigJson(const std::string& dir) {
    const fs::path p = fs::path(dir) / "config.json";
    if (!fs::exists(p.parent_path()))
        throw Error(p.parent_path().string() + ": no such folder (a checkpoint folder holds config.json, the safetensors and a tokenizer).");
    std::error_code ec;
    if (!fs::is_directory(p.parent_path(), ec))
        throw Error(p.parent_path().string() + ": a file, not a checkpoint folder (give the folder that holds config.json, the "
                    "safetensors and a tokenizer).");
    if (!fs::exists(fs::symlink_status(p, ec))) throw Error(p.string() + ": missing; a checkpoint folder needs config.json." + whatTheFolderHolds(dir));
    return readJsonObjectFile(p.string(), kConfigMaxBytes);
}

namespace cfg {

static Error keyError(const std::string& file, const std::string& key, const std::string& why) {
    return Error(file + ": key \"" + key + "\" " + why);
}

int64_t slidingWindow(const json& j, const std::string& file) {
    const std::optional<int64_t> w = optInt(j, "sliding_window", file);
    if (w && *w <= 0)
        throw keyError(file, "sliding_window", "is " + std::to_string(*w) + ": a window must hold at least one key (null or no key: no window).");
    return w.value_or(0);
}

std::optional<int64_t> optInt(const json& j, const std::string& key, const std::string& file) {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    const json& v = j[key];
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        throw keyError(file, key, "is too large (" + jsonExcerpt(v) + ").");
    if (v.is_number_integer()) return v.get<int64_t>();
    // An integral float (64.0) is accepted; the range check keeps the conversion defined.
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && std::fabs(d) < 9.0e18 && d == std::floor(d)) return static_cast<int64_t>(d);
    }
    if (v.is_array() && !v.empty() && v[0].is_number_integer() && !v[0].is_number_unsigned()) return v[0].get<int64_t>();  // eos_token_id lists
    if (v.is_array() && !v.empty() && v[0].is_number_unsigned() && v[0].get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
        return v[0].get<int64_t>();
    throw keyError(file, key, "must be an integer, not " + jsonExcerpt(v) + ".");
}

int64_t getInt(const json& j, const std::string& key, const std::string& file) {
    auto v = optInt(j, key, file);
    if (!v) throw keyError(file, key, "is missing and has no default for this family.");
    return *v;
}

std::optional<double> optDouble(const json& j, const std::string& key, const std::string& file) {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    if (!j[key].is_number()) throw keyError(file, key, "must be a number, not " + jsonExcerpt(j[key]) + ".");
    return j[key].get<double>();
}

double getDouble(const json& j, const std::string& key, const std::string& file) {
    auto v = optDouble(j, key, file);
    if (!v) throw keyError(file, key, "is missing and has no default for this family.");
    return *v;
}

bool getBool(const json& j, const std::string& key, bool fallback, const std::string& file) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_boolean()) throw keyError(file, key, "must be true or false, not " + jsonExcerpt(j[key]) + ".");
    return j[key].get<bool>();
}

std::string getString(const json& j, const std::string& key, const std::string& fallback, const std::string& file) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_string()) throw keyError(file, key, "must be a string, not " + jsonExcerpt(j[key]) + ".");
    return j[key].get<std::string>();
}

RopeConfig readRope(const json& j, const std::string& file, int64_t maxPos) {
    RopeConfig r;
    json params = json::object();
    // transformers 5 (PreTrainedConfig.convert_rope_params_to_dict): a non-empty legacy `rope_scaling` REPLACES
    // `rope_parameters` (`rope_scaling or rope_parameters`), then rope_theta / partial_rotary_factor fill in from
    // the top-level keys (or the config class's defaults, merged into `j`) where the dict lacks them.
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object() && !j["rope_scaling"].empty()) {
        params = j["rope_scaling"];
        r.sourceStyle = "rope_scaling";
    } else if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
        params = j["rope_parameters"];
        r.sourceStyle = "rope_parameters";
    }
    if (r.sourceStyle.empty()) r.sourceStyle = "rope_theta";
    const std::string where = file + " (" + r.sourceStyle + ")";
    if (auto t = optDouble(params, "rope_theta", where)) r.theta = *t;
    else if (auto t2 = optDouble(j, "rope_theta", file)) r.theta = *t2;
    if (auto p = optDouble(params, "partial_rotary_factor", where)) r.partialRotaryFactor = *p;
    else if (auto p2 = optDouble(j, "partial_rotary_factor", file)) r.partialRotaryFactor = *p2;
    std::string type = getString(params, "rope_type", getString(params, "type", "default", where), where);
    r.type = type;
    r.factor = optDouble(params, "factor", where);
    r.attentionFactor = optDouble(params, "attention_factor", where);
    r.betaFast = optDouble(params, "beta_fast", where);
    r.betaSlow = optDouble(params, "beta_slow", where);
    r.mscale = optDouble(params, "mscale", where);
    r.mscaleAllDim = optDouble(params, "mscale_all_dim", where);
    r.truncate = getBool(params, "truncate", true, where);
    r.lowFreqFactor = optDouble(params, "low_freq_factor", where);
    r.highFreqFactor = optDouble(params, "high_freq_factor", where);
    if (auto o = optInt(j, "original_max_position_embeddings", file)) r.originalMaxPositionEmbeddings = *o;
    else r.originalMaxPositionEmbeddings = optInt(params, "original_max_position_embeddings", where).value_or(maxPos);
    // longrope and yarn divide by the original context (max_position_embeddings / original, log(original)):
    // transformers fails on 0 (ZeroDivisionError, a math domain error) and nnscope's pass would be NaN.
    if ((type == "longrope" || type == "yarn") && r.originalMaxPositionEmbeddings <= 0)
        throw keyError(j.contains("original_max_position_embeddings") ? file : where, "original_max_position_embeddings",
                       "is " + std::to_string(r.originalMaxPositionEmbeddings) + ": rope type " + type +
                           " divides by the original context length, so it must be positive.");
    if (!std::isfinite(r.theta) || r.theta <= 0)
        throw Error(where + ": rope_theta must be a positive number (the base of the rotary frequencies).");
    if (!std::isfinite(r.partialRotaryFactor) || r.partialRotaryFactor <= 0 || r.partialRotaryFactor > 1)
        throw Error(where + ": partial_rotary_factor must lie in (0, 1] (the fraction of each head that rotates).");
    for (const auto& [key, out] : {std::pair<const char*, std::vector<double>*>{"short_factor", &r.shortFactor}, {"long_factor", &r.longFactor}}) {
        if (!params.contains(key) || params[key].is_null()) continue;
        if (!params[key].is_array()) throw keyError(where, key, "must be a list of numbers.");
        for (const auto& v : params[key]) {
            if (!v.is_number()) throw keyError(where, key, "must be a list of numbers.");
            out->push_back(v.get<double>());
        }
    }
    if (type != "default" && type != "linear" && type != "yarn" && type != "llama3" && type != "longrope")
        throw Error(where + ": rope type \"" + shortText(type, 60) + "\" is not supported (nnscope computes default, linear, yarn, llama3 and longrope).");
    if (type == "longrope" && (r.shortFactor.empty() || r.longFactor.empty()))
        throw Error(where + ": rope type longrope needs short_factor and long_factor.");
    if ((type == "linear" || type == "llama3") && !r.factor)
        throw Error(where + ": rope type \"" + type + "\" needs \"factor\".");
    if (type == "llama3" && (!r.lowFreqFactor || !r.highFreqFactor))
        throw Error(where + ": rope type llama3 needs low_freq_factor and high_freq_factor.");
    // A scaling factor of 0 or less divides the frequencies by nothing sensible (the pass would be NaN from the first
    // rotary): refused with the key named.
    for (const auto& [key, value] : {std::pair<const char*, std::optional<double>>{"factor", r.factor}, {"low_freq_factor", r.lowFreqFactor},
                                     {"high_freq_factor", r.highFreqFactor}})
        if (value && (!std::isfinite(*value) || *value <= 0))
            throw keyError(where, key, "is " + jsonExcerpt(nlohmann::json(*value)) + ": a rotary scaling factor must be a positive number.");
    for (const auto* list : {&r.shortFactor, &r.longFactor})
        for (double v : *list)
            if (!std::isfinite(v) || v <= 0)
                throw keyError(where, list == &r.shortFactor ? "short_factor" : "long_factor",
                               "holds " + jsonExcerpt(nlohmann::json(v)) + ": every longrope factor must be a positive number.");
    return r;
}

void readCommon(const json& j, const std::string& file, const std::string& epsKey, ModelConfig& c) {
    c.hiddenSize = getInt(j, "hidden_size", file);
    c.intermediateSize = getInt(j, "intermediate_size", file);
    c.numLayers = getInt(j, "num_hidden_layers", file);
    c.numHeads = getInt(j, "num_attention_heads", file);
    c.numKvHeads = optInt(j, "num_key_value_heads", file).value_or(c.numHeads);
    c.headDim = optInt(j, "head_dim", file).value_or(c.numHeads > 0 ? c.hiddenSize / c.numHeads : 0);
    c.vocabSize = getInt(j, "vocab_size", file);
    c.maxPositionEmbeddings = optInt(j, "max_position_embeddings", file).value_or(2048);
    c.normEps = getDouble(j, epsKey, file);
    c.hiddenAct = getString(j, "hidden_act", "silu", file);
    c.tieWordEmbeddings = getBool(j, "tie_word_embeddings", false, file);
    c.bosTokenId = optInt(j, "bos_token_id", file);
    c.eosTokenIds = optIntList(j, "eos_token_id", file);
    if (!c.eosTokenIds.empty()) c.eosTokenId = c.eosTokenIds.front();
    c.padTokenId = optInt(j, "pad_token_id", file);
    c.dtype = getString(j, "dtype", getString(j, "torch_dtype", "float32", file), file);
    c.rope = readRope(j, file, c.maxPositionEmbeddings);
    for (const char* k : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"})
        if (getInt(j, k, file) <= 0) throw keyError(file, k, "must be positive.");
    if (c.numKvHeads <= 0 || c.numHeads % c.numKvHeads != 0)
        throw Error(file + ": num_attention_heads (" + std::to_string(c.numHeads) + ") must be a multiple of num_key_value_heads (" +
                    std::to_string(c.numKvHeads) + ").");
    if (c.headDim <= 0) {
        if (j.contains("head_dim") && !j["head_dim"].is_null()) throw keyError(file, "head_dim", "must be positive.");
        // head_dim = hidden_size // num_attention_heads (the config has no head_dim key to name)
        throw Error(file + ": hidden_size (" + std::to_string(c.hiddenSize) + ") // num_attention_heads (" + std::to_string(c.numHeads) +
                    ") leaves a head_dim of 0: each head needs at least one dimension.");
    }
    // Sizes are multiplied (num_attention_heads * head_dim) and allocated from (the rotary tables): refuse absurd
    // ones by name before anything is computed from them. The limits are far above every real model's.
    const std::pair<const char*, std::pair<int64_t, int64_t>> limits[] = {
        {"hidden_size", {c.hiddenSize, int64_t{1} << 20}},
        {"intermediate_size", {c.intermediateSize, int64_t{1} << 22}},
        {"num_hidden_layers", {c.numLayers, int64_t{1} << 14}},
        {"num_attention_heads", {c.numHeads, int64_t{1} << 14}},
        {"num_key_value_heads", {c.numKvHeads, int64_t{1} << 14}},
        {"head_dim", {c.headDim, int64_t{1} << 16}},
        {"vocab_size", {c.vocabSize, int64_t{1} << 24}},
        {"max_position_embeddings", {c.maxPositionEmbeddings, int64_t{1} << 30}},
    };
    for (const auto& [key, valueAndLimit] : limits)
        if (valueAndLimit.first > valueAndLimit.second)
            throw keyError(file, key, "is " + std::to_string(valueAndLimit.first) + ", more than the " +
                                          std::to_string(valueAndLimit.second) +
                                          " nnscope accepts (far beyond any real model): the config is damaged.");
    if (c.maxPositionEmbeddings <= 0) throw keyError(file, "max_position_embeddings", "must be positive.");
    if (!std::isfinite(c.normEps) || c.normEps < 0) throw keyError(file, epsKey, "must be a finite number >= 0.");
    c.attentionScaling = 1.0 / std::sqrt(static_cast<double>(c.headDim));  // eager_attention_forward's head_dim ** -0.5
    c.layerSliding.assign(static_cast<size_t>(c.numLayers), false);
}

void wholeHeadRotary(RopeConfig& r, const std::string& file) {
    if (r.partialRotaryFactor >= 1.0) return;
    if (r.type == "default") {
        r.partialRotaryFactor = 1.0;
        return;
    }
    throw keyError(file + " (" + r.sourceStyle + ")", "partial_rotary_factor",
                   "is " + jsonExcerpt(json(r.partialRotaryFactor)) + " with rope type \"" + r.type +
                       "\": this family's attention rotates whole heads, and its scaled rotary would build tables for only "
                       "part of each head (transformers fails on this file). Remove the key.");
}

void checkSlidingLayersHaveWindow(const ModelConfig& c, const std::string& file) {
    if (c.slidingWindow > 0) return;
    for (size_t i = 0; i < c.layerSliding.size(); ++i)
        if (c.layerSliding[i])
            throw keyError(file, "layer_types",
                           "marks layer " + std::to_string(i) + " \"sliding_attention\", but the config gives no sliding_window "
                           "(null, absent, or use_sliding_window false): transformers' sliding-window mask fails on it. Set "
                           "sliding_window, or mark the layer \"full_attention\".");
}

void checkPadTokenId(const ModelConfig& c, const std::string& file) {
    if (!c.padTokenId || (*c.padTokenId < c.vocabSize && *c.padTokenId >= -c.vocabSize)) return;
    throw keyError(file, "pad_token_id",
                   "is " + std::to_string(*c.padTokenId) + ", outside the vocabulary of " + std::to_string(c.vocabSize) +
                       " ids: the embedding's padding row must be one of them (transformers refuses to build this model; "
                       "set pad_token_id to an id below vocab_size, or to null).");
}

void checkHeadDimKey(const json& j, const std::string& file, int64_t headDim) {
    const std::optional<int64_t> key = optInt(j, "head_dim", file);
    if (key && *key != headDim)
        throw keyError(file, "head_dim",
                       "is " + std::to_string(*key) + ", but this family's heads are hidden_size / num_attention_heads = " +
                           std::to_string(headDim) + " wide whatever the config says, and transformers builds its rotary "
                           "tables from the key: the two disagree (remove the key, or set it to " + std::to_string(headDim) + ").");
}

std::vector<int64_t> optIntList(const json& j, const std::string& key, const std::string& file) {
    std::vector<int64_t> out;
    if (!j.contains(key) || j[key].is_null()) return out;
    const json& v = j[key];
    auto one = [&](const json& x) {
        if (x.is_number_integer() && !(x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) &&
            x.get<int64_t>() >= 0)
            return x.get<int64_t>();
        throw keyError(file, key, "must be a token id or a list of token ids, not " + jsonExcerpt(v) + ".");
    };
    if (v.is_array()) {
        for (const json& x : v) out.push_back(one(x));
    } else {
        out.push_back(one(v));
    }
    return out;
}

GenerationConfig readGenerationConfig(const json& j, const std::string& file) {
    GenerationConfig g;
    g.present = true;
    g.eosTokenIds = optIntList(j, "eos_token_id", file);
    g.doSample = getBool(j, "do_sample", false, file);
    g.temperature = optDouble(j, "temperature", file).value_or(1.0);
    g.topK = optInt(j, "top_k", file).value_or(50);
    g.topP = optDouble(j, "top_p", file).value_or(1.0);
    g.maxNewTokens = optInt(j, "max_new_tokens", file);
    if (!std::isfinite(g.temperature) || g.temperature <= 0) throw keyError(file, "temperature", "must be a positive number.");
    if (g.topK < 0) throw keyError(file, "top_k", "must be >= 0.");
    if (!std::isfinite(g.topP) || g.topP <= 0 || g.topP > 1) throw keyError(file, "top_p", "must be in (0, 1].");
    if (g.maxNewTokens && *g.maxNewTokens < 0) throw keyError(file, "max_new_tokens", "must be >= 0.");
    return g;
}

std::vector<bool> readLayerTypes(const json& j, const std::string& file, int64_t numLayers) {
    std::vector<bool> sliding(static_cast<size_t>(numLayers), false);
    if (!j.contains("layer_types") || j["layer_types"].is_null()) return sliding;
    const json& t = j["layer_types"];
    if (!t.is_array() || static_cast<int64_t>(t.size()) < numLayers)
        throw keyError(file, "layer_types", "must list one of \"full_attention\" / \"sliding_attention\" for each of the " +
                                                std::to_string(numLayers) + " layers (num_hidden_layers); " +
                                                (t.is_array() ? "it lists " + std::to_string(t.size()) : std::string("it is not a list")) + ".");
    for (int64_t i = 0; i < numLayers; ++i) {
        const json& v = t[static_cast<size_t>(i)];
        if (!v.is_string() || (v != "full_attention" && v != "sliding_attention"))
            throw keyError(file, "layer_types", "entry " + std::to_string(i) + " must be \"full_attention\" or \"sliding_attention\".");
        sliding[static_cast<size_t>(i)] = v == "sliding_attention";
    }
    return sliding;
}

}  // namespace cfg
}  // namespace nnscope
