// SPDX-License-Identifier: MIT
#include "core/io/tracefile.h"

#include "core/model/config.h"
#include "core/model/error.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <sstream>

namespace nnscope {

namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

bool isCheckpoint(const std::string& dir) { return !dir.empty() && fs::is_regular_file(fs::path(dir) / "config.json"); }

/// A JSON document of the metadata, or nullopt when the key is absent. Throws naming the key when it does not parse.
std::optional<nlohmann::json> metadataJson(const std::map<std::string, std::string>& md, const std::string& key, const std::string& file) {
    auto it = md.find(key);
    if (it == md.end()) return std::nullopt;
    try {
        return nlohmann::json::parse(it->second);
    } catch (const nlohmann::json::exception& e) {
        throw Error(file + ": the metadata entry \"" + key + "\" is not JSON (" + e.what() + ").");
    }
}

/// The size an axis name stands for ("hidden_size", "num_heads*head_dim", "2*intermediate_size"), or -1 when it is not
/// a size of the config.
int64_t axisSize(const std::string& axis, const ModelConfig& c) {
    int64_t product = 1;
    std::stringstream parts(axis);
    std::string factor;
    while (std::getline(parts, factor, '*')) {
        int64_t v = -1;
        if (factor == "hidden_size") v = c.hiddenSize;
        else if (factor == "intermediate_size") v = c.intermediateSize;
        else if (factor == "num_heads") v = c.numHeads;
        else if (factor == "num_kv_heads") v = c.numKvHeads;
        else if (factor == "head_dim") v = c.headDim;
        else if (factor == "qk_head_dim") v = c.qkHeadDim();
        else if (c.mla.enabled && factor == "q_lora_rank") v = c.mla.qLoraRank;
        else if (c.mla.enabled && factor == "kv_lora_rank") v = c.mla.kvLoraRank;
        else if (c.mla.enabled && factor == "qk_nope_head_dim") v = c.mla.qkNopeHeadDim;
        else if (c.mla.enabled && factor == "qk_rope_head_dim") v = c.mla.qkRopeHeadDim;
        else if (factor == "vocab_size") v = c.vocabSize;
        else if (!factor.empty() && factor.find_first_not_of("0123456789") == std::string::npos) v = std::stoll(factor);
        if (v < 0) return -1;
        product *= v;
    }
    return product;
}

/// The largest integer written in `name` ("layers.11.mlp.up_proj.output": 11), or -1.
int64_t largestNumber(const std::string& name) {
    int64_t best = -1;
    for (size_t i = 0; i < name.size();) {
        if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
        if (j - i <= 6) best = std::max<int64_t>(best, std::stoll(name.substr(i, j - i)));
        i = j;
    }
    return best;
}

/// A Llama-shaped config with the sizes the values show (a file saved without metadata, e.g. from nnterp): the
/// number of blocks from the names, the widths from the shapes. Sizes no value shows get placeholders that no value
/// contradicts.
nlohmann::json inferConfig(const std::vector<std::pair<ValueKey, std::vector<int64_t>>>& values, int64_t numLayers, int64_t maxId) {
    int64_t hidden = -1, inter = -1, heads = -1, kvHeads = -1, headDim = -1, vocab = -1;
    for (const auto& [key, shape] : values) {
        const ValueInfo& info = valueInfo(key.value);
        if (static_cast<int>(key.value) >= kNumStandardValues || shape.size() != info.axes.size()) continue;
        for (size_t a = 0; a < shape.size(); ++a) {
            const std::string axis = info.axes[a];
            int64_t* slot = axis == "hidden_size" ? &hidden : axis == "intermediate_size" ? &inter : axis == "num_heads" ? &heads
                          : axis == "num_kv_heads" ? &kvHeads : axis == "qk_head_dim" || axis == "head_dim" ? &headDim
                          : axis == "vocab_size" ? &vocab : nullptr;
            if (slot && *slot < 0) *slot = shape[a];
        }
    }
    if (heads < 0) heads = kvHeads > 0 ? kvHeads : 1;
    if (kvHeads < 0) kvHeads = heads;
    if (headDim < 0) headDim = hidden > 0 && hidden % heads == 0 ? hidden / heads : 1;
    if (hidden < 0) hidden = heads * headDim;
    if (inter < 0) inter = 4 * hidden;
    if (vocab < 0) vocab = std::max<int64_t>(maxId + 1, 1);
    return {{"model_type", "llama"},        {"architectures", nlohmann::json::array({"LlamaForCausalLM"})}, {"num_hidden_layers", numLayers},
            {"hidden_size", hidden},        {"intermediate_size", inter},            {"num_attention_heads", heads},
            {"num_key_value_heads", kvHeads}, {"head_dim", headDim},                 {"vocab_size", vocab},
            {"max_position_embeddings", 1 << 20}};
}

struct Named {
    std::string name;
    ValueKey key;
};

/// The tensors of `file` that are value paths of `model`, and the others with the reason.
std::vector<Named> parseNames(const SafetensorsFile& file, const Model& model, std::vector<std::string>* skipped,
                              const std::map<std::string, DictionaryValue>& dictionaryValues = {}) {
    std::vector<Named> out;
    for (const auto& [name, entry] : file.entries()) {
        if (dictionaryValues.count(name)) continue;  // a sparse dictionary's value, read on its own
        try {
            const ValueKey key = parseValuePath(model, name);
            const bool twice = std::any_of(out.begin(), out.end(), [&](const Named& n) { return n.key == key; });
            if (twice) {
                if (skipped) skipped->push_back(name + ": the same value as another tensor of the file");
                continue;
            }
            out.push_back({name, key});
        } catch (const Error& e) {
            if (skipped) skipped->push_back(name + ": " + e.what());
        }
    }
    return out;
}

}  // namespace

TraceFile readTraceFile(const std::string& path, const TraceFileOptions& options) {
    TraceFile tf;
    tf.path = path;
    if (!fs::exists(path)) throw Error(path + ": no such file.");
    if (fs::is_directory(path))
        throw Error(path + " is a folder: a trace file is one .safetensors file (open a checkpoint folder with File > Open Checkpoint).");
    if (fs::path(path).extension() == ".npy")
        throw Error(path + ": a .npy file holds one value; a trace file is a .safetensors file of several (write one with "
                    "`nnscope trace --out FILE.safetensors` or Export > Trace).");
    auto file = std::make_shared<SafetensorsFile>(path);  // throws, naming the file, when it is not safetensors
    tf.metadata = file->metadata();
    const auto& md = tf.metadata;
    if (file->entries().empty()) throw Error(path + ": the file holds no tensor.");

    // ---- the batch's ids, when the metadata records them
    std::vector<std::vector<int64_t>> ids;
    std::vector<std::string> prompts;
    if (auto j = metadataJson(md, "input_ids", path)) {
        try {
            ids = j->get<std::vector<std::vector<int64_t>>>();
        } catch (const nlohmann::json::exception&) {
            throw Error(path + ": the metadata entry \"input_ids\" is not a list of lists of token ids.");
        }
    }
    if (auto j = metadataJson(md, "prompts", path)) {
        try {
            prompts = j->get<std::vector<std::string>>();
        } catch (const nlohmann::json::exception&) {
            throw Error(path + ": the metadata entry \"prompts\" is not a list of strings.");
        }
    }
    // ---- the sparse dictionaries' values: the tensors the metadata gives a dictionary ("dictionary:<name>")
    const auto sources = readDictionarySources(md, path);
    std::map<std::string, DictionaryValue> dictionaryValues;  // by tensor name; the tensors are read below
    for (const auto& [name, entry] : file->entries()) {
        const auto it = md.find("dictionary:" + name);
        if (it == md.end()) continue;
        const auto source = sources.find(it->second);
        DictionaryValue v;
        v.path = name;
        const auto ends = [&](const std::string& suffix) {
            return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        };
        if (source == sources.end() || !(ends("].features") || ends("].reconstruction") || ends("].error"))) {
            tf.skipped.push_back(name + ": the metadata gives it the dictionary '" + it->second +
                                 "', which its \"dictionaries\" entry does not describe, or it is not a features, reconstruction or error value");
            dictionaryValues[name] = v;  // neither a model value nor kept
            continue;
        }
        v.kind = ends("].features") ? DictionaryValue::Kind::Features : ends("].error") ? DictionaryValue::Kind::Error : DictionaryValue::Kind::Reconstruction;
        v.source = source->second;
        dictionaryValues[name] = v;
    }
    torch::ScalarType dtype = torch::kFloat32;
    if (auto it = md.find("dtype"); it != md.end() && it->second == "bfloat16") dtype = torch::kBFloat16;

    // ---- the model: the checkpoint when it is here, else the config the file carries, or one beside it, or the shapes
    std::vector<std::string> folders;
    if (auto it = md.find("model"); it != md.end() && !it->second.empty()) folders.push_back(it->second);
    const std::string beside = fs::absolute(fs::path(path)).parent_path().string();
    folders.push_back(beside);
    std::optional<nlohmann::json> fileConfig = metadataJson(md, "config", path);
    if (fileConfig && !fileConfig->is_object()) throw Error(path + ": the metadata entry \"config\" is not a JSON object.");
    std::vector<std::string> why;
    if (options.loadWeights) {
        for (const std::string& dir : folders) {
            if (!isCheckpoint(dir)) continue;
            try {
                auto m = Model::load(dir, LoadOptions().withDtype(dtype));
                if (fileConfig) {  // the checkpoint must be the one the trace ran on
                    const ModelConfig c = resolveModelConfig(*fileConfig, path + " (metadata config)");
                    const ModelConfig& mc = m->config();
                    if (c.modelType != mc.modelType || c.numLayers != mc.numLayers || c.hiddenSize != mc.hiddenSize ||
                        c.vocabSize != mc.vocabSize || c.numHeads != mc.numHeads)
                        throw Error(dir + " is another model than the one the trace ran on (its config.json differs from the file's).");
                }
                tf.model = m;
                tf.checkpoint = dir;
                tf.configFrom = dir + "/config.json";
                break;
            } catch (const std::exception& e) {
                why.push_back(e.what());
            }
        }
    }
    std::string tokenizerDir;
    for (const std::string& dir : folders)
        if (fs::is_regular_file(fs::path(dir) / "tokenizer.json") || fs::is_regular_file(fs::path(dir) / "tokenizer.model")) {
            tokenizerDir = dir;
            break;
        }
    if (!tf.model) {
        if (!options.loadWeights) tf.noWeights = "the checkpoint's weights were not asked for.";
        else if (!why.empty()) tf.noWeights = why.front();
        else if (auto it = md.find("model"); it != md.end() && !it->second.empty())
            tf.noWeights = "the checkpoint " + it->second + " the trace ran on is not on this machine.";
        else
            tf.noWeights = "the file does not name its checkpoint, and no checkpoint folder holds it.";
        std::optional<nlohmann::json> config = fileConfig;
        if (config) tf.configFrom = "the file's metadata";
        for (const std::string& dir : folders)
            if (!config && isCheckpoint(dir)) {
                config = readConfigJson(dir);
                tf.configFrom = dir + "/config.json";
            }
        if (!config) {
            // no config anywhere: a provisional model with enough blocks to parse the names, then the sizes they show
            int64_t layers = 0, maxId = 0;
            for (const auto& [name, entry] : file->entries()) layers = std::max(layers, largestNumber(name) + 1);
            for (const auto& row : ids)
                for (int64_t id : row) maxId = std::max(maxId, id);
            if (file->contains("input_ids")) maxId = std::max(maxId, file->tensor("input_ids").max().item<int64_t>());
            const auto provisional = Model::withoutWeights(inferConfig({}, std::max<int64_t>(layers, 1), maxId), path);
            std::vector<std::pair<ValueKey, std::vector<int64_t>>> shapes;
            int64_t used = 0;
            for (const Named& n : parseNames(*file, *provisional, nullptr, dictionaryValues)) {
                shapes.emplace_back(n.key, file->entries().at(n.name).shape);
                used = std::max<int64_t>(used, n.key.layer + 1);
            }
            if (shapes.empty())
                throw Error(path + ": no tensor is named by a value path (" + file->entries().begin()->first +
                            (file->entries().size() > 1 ? ", ..." : "") +
                            "). A trace file names its tensors as nnscope and nnterp name values: 'logits', "
                            "'layers.0.layer_output', 'layers.0.self_attn.attention_probabilities', 'layers_output.0'.");
            config = inferConfig(shapes, std::max<int64_t>(used, 1), maxId);
            tf.configFrom = "the values' shapes";
        }
        tf.model = Model::withoutWeights(*config, path, dtype, tokenizerDir);
    }
    const Model& model = *tf.model;
    const ModelConfig& c = model.config();

    // ---- the values
    const std::vector<Named> named = parseNames(*file, model, &tf.skipped, dictionaryValues);
    const bool anyDictionaryValue = std::any_of(dictionaryValues.begin(), dictionaryValues.end(), [](const auto& d) { return d.second.source != nullptr; });
    if (named.empty() && !anyDictionaryValue)
        throw Error(path + ": no tensor is named by a value path of " + c.architectures.front() + " (" + tf.skipped.front() +
                    "). A trace file names its tensors as nnscope and nnterp name values: 'logits', 'layers.0.layer_output', "
                    "'layers.0.self_attn.attention_probabilities', 'layers_output.0'.");
    // batch and sequence sizes: the metadata's ids, else input_ids, else the first value with both axes
    int64_t batch = -1, seq = -1;
    std::string sizesFrom;
    if (!ids.empty()) {
        batch = static_cast<int64_t>(ids.size());
        for (const auto& row : ids) seq = std::max<int64_t>(seq, static_cast<int64_t>(row.size()));
        sizesFrom = "the metadata's input_ids";
    } else {
        for (const Named& n : named) {
            const auto& shape = file->entries().at(n.name).shape;
            const ValueInfo& info = valueInfo(n.key.value);
            if (info.axes.empty() || std::string(info.axes[0]) != "batch" || shape.size() != info.axes.size()) continue;
            for (size_t a = 1; a < info.axes.size(); ++a) {
                const std::string axis = info.axes[a];
                if (axis != "seq" && axis != "query") continue;
                if (sizesFrom.empty() || n.key.value == Value::InputIds) {  // the ids themselves win
                    batch = shape[0];
                    seq = shape[a];
                    sizesFrom = n.name;
                }
                break;
            }
        }
    }
    for (const Named& n : named) {
        const auto& entry = file->entries().at(n.name);
        const ValueInfo& info = valueInfo(n.key.value);
        const bool standard = static_cast<int>(n.key.value) < kNumStandardValues;
        std::vector<int64_t> expected;
        std::string expectedText;
        bool check = !info.axes.empty() && n.key.value != Value::InputSize;  // input_size holds [batch, seq] as its values
        if (n.key.value == Value::InputSize && entry.shape != std::vector<int64_t>{2})
            throw Error(path + ": the tensor '" + n.name + "' has shape " + shapeText(entry.shape) + ", but input_size is [2] ([batch, seq]).");
        for (size_t a = 0; a < info.axes.size() && check; ++a) {
            const std::string axis = info.axes[a];
            int64_t size = axis == "batch" ? batch : (axis == "seq" || axis == "query" || axis == "key") ? seq : axisSize(axis, c);
            if (!standard && a >= 2) size = -1;  // a native value keeps its module's own layout past [batch, seq]
            expected.push_back(size);
            expectedText += (a ? ", " : "") + axis + (size >= 0 ? " " + std::to_string(size) : "");
        }
        if (!check) continue;
        bool fits = standard ? entry.shape.size() == expected.size() : entry.shape.size() >= 2;
        for (size_t a = 0; fits && a < expected.size() && a < entry.shape.size(); ++a)
            if (expected[a] >= 0 && entry.shape[a] != expected[a]) fits = false;
        if (!fits)
            throw Error(path + ": the tensor '" + n.name + "' has shape " + shapeText(entry.shape) + ", but " +
                        valuePath(model.family(), n.key) + " of this trace is [" + expectedText + "] (batch and positions from " +
                        (sizesFrom.empty() ? std::string("the file") : sizesFrom) + ", sizes from " + tf.configFrom + ").");
    }

    // ---- the batch
    if (ids.empty() && file->contains("input_ids")) {
        const torch::Tensor t = file->tensor("input_ids").to(torch::kInt64);
        const torch::Tensor mask = file->contains("attention_mask") ? file->tensor("attention_mask").to(torch::kInt64) : torch::ones_like(t);
        if (t.dim() != 2 || mask.sizes() != t.sizes())
            throw Error(path + ": input_ids " + shapeText(t.sizes().vec()) + " and attention_mask " + shapeText(mask.sizes().vec()) +
                        " must both be [batch, seq].");
        for (int64_t r = 0; r < t.size(0); ++r) {
            const torch::Tensor row = t.index({r}).masked_select(mask.index({r}) != 0).contiguous();
            ids.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
        }
        tf.tokensFrom = "input_ids";
    }
    bool positionsOnly = false;
    if (ids.empty()) {
        if (batch <= 0 || seq <= 0)
            throw Error(path + ": no value of the file has a batch and a position axis, and its metadata records no input_ids: "
                        "there is nothing to lay out by token.");
        ids.assign(static_cast<size_t>(batch), std::vector<int64_t>(static_cast<size_t>(seq), 0));
        positionsOnly = true;
        tf.tokensFrom = "positions";
    }
    for (const auto& row : ids)
        if (row.empty()) throw Error(path + ": a prompt of the file has no tokens.");
    const int64_t pad = c.padTokenId.value_or(c.eosTokenId.value_or(0));
    tf.result.batch = batchFromIds(ids, pad >= 0 && pad < c.vocabSize ? pad : 0);
    prompts.resize(ids.size());
    tf.result.batch.prompts = prompts;
    for (const Named& n : named) tf.result.values.emplace_back(n.key, file->tensor(n.name));
    for (auto& [name, v] : dictionaryValues) {
        if (!v.source) continue;
        const auto& shape = file->entries().at(name).shape;
        const int64_t width = v.kind == DictionaryValue::Kind::Features ? v.source->dSae : v.source->dOut;
        const std::vector<int64_t> expected{tf.result.batch.inputIds.size(0), tf.result.batch.inputIds.size(1), width};
        if (shape != expected)
            throw Error(path + ": the tensor '" + name + "' has shape " + shapeText(shape) + ", but a value of the dictionary '" +
                        v.source->name + "' on this trace is " + shapeText(expected) + " ([batch, seq, " + v.axes().back() + "]).");
        v.tensor = file->tensor(name);
        tf.result.dictionaryValues.push_back(v);
    }

    // ---- token labels: the metadata's, the tokenizer's, the ids, or the positions
    if (auto j = metadataJson(md, "tokens", path)) {
        try {
            tf.tokens = j->get<std::vector<std::vector<std::string>>>();
            tf.tokensFrom = "the file's metadata";
        } catch (const nlohmann::json::exception&) {
            tf.tokens.clear();
        }
        bool same = tf.tokens.size() == ids.size();
        for (size_t r = 0; same && r < ids.size(); ++r) same = tf.tokens[r].size() == ids[r].size();
        if (!same) tf.tokens.clear();
    }
    if (tf.tokens.empty()) {
        const Tokenizer* tok = model.tokenizer();
        for (const auto& row : ids) {
            std::vector<std::string> labels;
            for (size_t p = 0; p < row.size(); ++p)
                labels.push_back(positionsOnly ? std::to_string(p) : tok ? tok->tokenLabel(row[p]) : "#" + std::to_string(row[p]));
            tf.tokens.push_back(std::move(labels));
        }
        if (!positionsOnly) tf.tokensFrom = tok ? tok->sourceFile() : "input_ids";
    }

    // ---- next_token_probs: saved, or the softmax of the last position's logits (left padding: the last column)
    c10::InferenceMode guard;
    if (torch::Tensor p = tf.result.value({Value::NextTokenProbs, -1}); p.defined()) {
        tf.result.nextTokenProbs = p.to(torch::kFloat32);
    } else if (torch::Tensor logits = tf.result.value({Value::Logits, -1}); logits.defined()) {
        tf.result.nextTokenProbs = torch::softmax(logits.select(1, logits.size(1) - 1).to(torch::kFloat32), -1);
    } else if (torch::Tensor h = tf.result.value({Value::LayerOutput, static_cast<int>(c.numLayers) - 1}); h.defined() && model.hasWeights()) {
        torch::Tensor last = model.projectOnVocab(h.select(1, h.size(1) - 1));
        if (c.finalLogitSoftcap) last = torch::tanh(last / *c.finalLogitSoftcap) * *c.finalLogitSoftcap;
        tf.result.nextTokenProbs = torch::softmax(last.to(torch::kFloat32), -1);
    }
    return tf;
}

}  // namespace nnscope
