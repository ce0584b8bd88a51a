// SPDX-License-Identifier: MIT
#include "core/io/transcoderset.h"

#include "core/io/safetensors.h"
#include "core/io/tensorreader.h"
#include "core/model/error.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>

namespace fs = std::filesystem;

namespace nnscope {
namespace {

using detail::TensorReader;

/// config.yaml's string `key`: "" when absent and not `required`. Throws nnscope::Error naming the file.
std::string yamlString(const YAML::Node& root, const std::string& key, bool required, const std::string& file) {
    const YAML::Node n = root[key];
    if (!n || n.IsNull()) {
        if (required) throw Error(file + ": no key '" + key + "' (a circuit-tracer config.yaml names model_kind, feature_input_hook and "
                                  "feature_output_hook).");
        return {};
    }
    if (!n.IsScalar()) throw Error(file + ": '" + key + "' must be a string.");
    return n.as<std::string>();
}

/// Layer i's file of a per-layer set: the config's `transcoders` entry, else the folder's layer_<i>.safetensors.
std::string layerFile(const TranscoderSetConfig& c, const fs::path& dir, size_t i) {
    return c.transcoders.empty() ? (dir / ("layer_" + std::to_string(i) + ".safetensors")).string() : c.transcoders.at(i);
}

/// How many files `dir` holds whose names are `prefix`<i>.safetensors (circuit-tracer globs them to count the layers).
size_t countNumbered(const fs::path& dir, const std::string& prefix) {
    const std::regex re(prefix + R"(\d+\.safetensors)");
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (std::regex_match(e.path().filename().string(), re)) ++n;
    return n;
}

/// One layer of a per-layer set, read from `file` (load_relu_transcoder: the sizes from b_enc and b_dec).
std::shared_ptr<Dictionary> readSetLayer(const TranscoderSetConfig& c, const std::string& file, int layer) {
    if (!fs::is_regular_file(file))
        throw Error(file + ": missing (layer " + std::to_string(layer) + " of the circuit-tracer transcoder set " + c.file + ").");
    TensorReader r(file);
    auto d = std::make_shared<Dictionary>();
    d->dir = file;
    d->format = "circuit-tracer";
    d->transcoder = true;
    d->trainedOn = c.modelName;
    d->site = "blocks." + std::to_string(layer) + "." + c.featureInputHook;
    d->siteOut = "blocks." + std::to_string(layer) + "." + c.featureOutputHook;
    d->files.push_back(r.file());
    d->weightFiles.push_back(r.file()->path());
    if (r.has("log_thresholds"))
        throw Error(file + ": log_thresholds, which circuit-tracer's load_relu_transcoder refuses too (it reads "
                    "activation_function.threshold).");
    d->dSae = r.shapeOf("b_enc", 1)[0];
    d->dIn = d->dOut = r.shapeOf("b_dec", 1)[0];
    d->wEnc = r.get("W_enc", {d->dSae, d->dIn}).t();  // F.linear(x, W_enc): x · W_encᵀ
    d->wDec = r.get("W_dec", {d->dSae, d->dOut});
    d->bEnc = r.get("b_enc", {d->dSae});
    d->bDec = r.get("b_dec", {d->dOut});
    if (r.has("activation_function.threshold")) {
        d->activation = Dictionary::Activation::JumpReLUSigned;
        d->architecture = "jump_relu";
        d->threshold = r.get("activation_function.threshold", {d->dSae});
    } else {
        d->activation = Dictionary::Activation::ReLU;
        d->architecture = "relu";
    }
    if (r.has("W_skip")) d->wSkip = r.get("W_skip", {d->dOut, d->dIn}).t();  // compute_skip: x · W_skipᵀ
    return d;
}

}  // namespace

bool isTranscoderSet(const std::string& dir) { return fs::is_regular_file(fs::path(dir) / "config.yaml"); }

TranscoderSetConfig readTranscoderSetConfig(const std::string& dirIn) {
    const fs::path dir(dirIn);
    TranscoderSetConfig c;
    c.file = (dir / "config.yaml").string();
    if (!fs::is_regular_file(c.file)) throw Error(c.file + ": missing (a circuit-tracer transcoder set holds config.yaml).");
    YAML::Node root;
    try {
        root = YAML::LoadFile(c.file);
    } catch (const YAML::Exception& e) {
        throw Error(c.file + ": not YAML (" + e.what() + ").");
    }
    if (!root.IsMap()) throw Error(c.file + ": not a YAML mapping of keys to values.");
    c.modelKind = yamlString(root, "model_kind", true, c.file);
    if (c.modelKind != "transcoder_set" && c.modelKind != "cross_layer_transcoder")
        throw Error(c.file + ": model_kind \"" + c.modelKind + "\" (circuit-tracer knows transcoder_set and cross_layer_transcoder).");
    c.modelName = yamlString(root, "model_name", false, c.file);
    c.featureInputHook = yamlString(root, "feature_input_hook", true, c.file);
    c.featureOutputHook = yamlString(root, "feature_output_hook", true, c.file);
    if (const YAML::Node list = root["transcoders"]; list && !list.IsNull()) {
        if (!list.IsSequence()) throw Error(c.file + ": 'transcoders' must be a list of weights files, one per layer.");
        for (const YAML::Node& item : list) {
            if (!item.IsScalar()) throw Error(c.file + ": every entry of 'transcoders' must be a file name.");
            const std::string p = item.as<std::string>();
            if (p.rfind("hf://", 0) == 0)
                throw Error(c.file + ": 'transcoders' names " + p + ", a file on the Hugging Face Hub; nnscope reads local files: "
                            "download it and list its local path.");
            c.transcoders.push_back(fs::path(p).is_absolute() ? p : (dir / p).string());
        }
    }
    return c;
}

std::vector<std::shared_ptr<const Dictionary>> loadTranscoderSet(const std::string& dirIn) {
    const fs::path dir(dirIn);
    const TranscoderSetConfig c = readTranscoderSetConfig(dirIn);
    if (c.modelKind != "transcoder_set")
        throw Error(c.file + ": a " + c.modelKind + ", not a per-layer transcoder set; read it as a cross-layer transcoder.");
    const size_t n = c.transcoders.empty() ? countNumbered(dir, "layer_") : c.transcoders.size();
    if (n == 0) throw Error(dirIn + ": a circuit-tracer transcoder set with no layer_<i>.safetensors (" + c.file + " lists none either).");
    std::vector<std::shared_ptr<const Dictionary>> out;
    for (size_t i = 0; i < n; ++i) out.push_back(readSetLayer(c, layerFile(c, dir, i), static_cast<int>(i)));
    for (size_t i = 1; i < n; ++i)
        if (out[i]->dIn != out[0]->dIn)
            throw Error(out[i]->dir + ": d_model " + std::to_string(out[i]->dIn) + ", but layer 0 of the set has " +
                        std::to_string(out[0]->dIn) + ".");
    return out;
}

std::vector<std::shared_ptr<const Dictionary>> loadDictionaries(const std::string& path) {
    const fs::path p(path);
    if (fs::is_directory(p) && isTranscoderSet(path)) {
        const TranscoderSetConfig c = readTranscoderSetConfig(path);
        if (c.modelKind == "cross_layer_transcoder")
            throw Error(path + ": a circuit-tracer cross-layer transcoder: each layer's reconstruction sums the features of every "
                        "earlier layer, so its layers are not separate dictionaries (nnscope features reads it whole).");
        return loadTranscoderSet(path);
    }
    // One layer of a set: layer_<i>.safetensors (or a file the set's `transcoders` list names) beside config.yaml.
    if (fs::is_regular_file(p) && p.extension() == ".safetensors" && isTranscoderSet(p.parent_path().string())) {
        const TranscoderSetConfig c = readTranscoderSetConfig(p.parent_path().string());
        if (c.modelKind == "cross_layer_transcoder")
            throw Error(path + ": a file of a circuit-tracer cross-layer transcoder, whose layers' reconstructions sum the features "
                        "of every earlier layer: run it whole from its folder (" + p.parent_path().string() + "); a W_enc_<i> file is "
                        "read alone only to make that layer's feature dashboard (nnscope features --dataset).");
        std::smatch m;
        const std::string name = p.filename().string();
        static const std::regex layerRe(R"(layer_(\d+)\.safetensors)");
        int layer = -1;
        for (size_t i = 0; i < c.transcoders.size(); ++i)
            if (fs::weakly_canonical(c.transcoders[i]) == fs::weakly_canonical(p)) layer = static_cast<int>(i);
        if (layer < 0 && c.transcoders.empty() && std::regex_match(name, m, layerRe)) layer = std::stoi(m[1].str());
        if (layer < 0) throw Error(path + ": not one of the layers " + c.file + " describes.");
        if (c.modelKind != "transcoder_set")
            throw Error(path + ": a file of a circuit-tracer " + c.modelKind + ", not one layer's transcoder.");
        std::shared_ptr<Dictionary> d = readSetLayer(c, path, layer);
        d->dir = path;
        return {d};
    }
    return {loadDictionary(path)};
}

torch::Tensor CrossLayerTranscoder::preActivation(const torch::Tensor& xIn, int layer) const {
    if (layer < 0 || layer >= numLayers)
        throw Error(describe() + ": no layer " + std::to_string(layer) + " (it has " + std::to_string(numLayers) + ").");
    const torch::Tensor x = xIn.to(torch::kFloat32);
    if (x.size(-1) != dModel)
        throw Error(describe() + ": its input has " + std::to_string(dModel) + " values per position, the site gives " +
                    std::to_string(x.size(-1)) + ".");
    const Layer& L = layers[static_cast<size_t>(layer)];
    return torch::matmul(x, L.wEnc) + L.bEnc;
}

torch::Tensor CrossLayerTranscoder::encode(const torch::Tensor& x, int layer) const {
    const torch::Tensor pre = preActivation(x, layer);
    if (!jumpReLU) return torch::relu(pre);
    return pre * (pre > layers[static_cast<size_t>(layer)].threshold).to(torch::kFloat32);
}

torch::Tensor CrossLayerTranscoder::decoder(int source, int target) const {
    if (source < 0 || target < source || target >= numLayers)
        throw Error(describe() + ": no decoder from layer " + std::to_string(source) + " to layer " + std::to_string(target) +
                    " (a layer's features write to that layer and the later ones, 0 to " + std::to_string(numLayers - 1) + ").");
    return layers[static_cast<size_t>(source)].wDec.select(1, target - source);
}

torch::Tensor CrossLayerTranscoder::decoderRows(int source, int64_t feature) const {
    if (source < 0 || source >= numLayers || feature < 0 || feature >= dTranscoder)
        throw Error(describe() + ": no feature " + std::to_string(feature) + " at layer " + std::to_string(source) + ".");
    return layers[static_cast<size_t>(source)].wDec[feature];
}

torch::Tensor CrossLayerTranscoder::reconstruct(const std::vector<torch::Tensor>& features, int layer) const {
    if (layer < 0 || layer >= numLayers || static_cast<int>(features.size()) <= layer)
        throw Error(describe() + ": the reconstruction of layer " + std::to_string(layer) + " needs the features of layers 0 to " +
                    std::to_string(layer) + (layer < numLayers ? "" : " (out of range)") + ".");
    torch::Tensor out = layers[static_cast<size_t>(layer)].bDec;
    for (int s = 0; s <= layer; ++s) out = out + torch::matmul(features[static_cast<size_t>(s)].to(torch::kFloat32), decoder(s, layer));
    return out;
}

std::string CrossLayerTranscoder::site(int layer) const { return "blocks." + std::to_string(layer) + "." + config.featureInputHook; }
std::string CrossLayerTranscoder::siteOut(int layer) const { return "blocks." + std::to_string(layer) + "." + config.featureOutputHook; }

std::string CrossLayerTranscoder::describe() const {
    return std::string("circuit-tracer ") + (jumpReLU ? "jump_relu" : "relu") + " cross-layer transcoder, " + std::to_string(numLayers) +
           " layers, " + std::to_string(dModel) + " → " + std::to_string(dTranscoder) + " features per layer (" + dir + ")";
}

std::shared_ptr<const Dictionary> CrossLayerTranscoder::layerEncoder(int layer) const {
    if (layer < 0 || layer >= numLayers)
        throw Error(describe() + ": no layer " + std::to_string(layer) + " (it has " + std::to_string(numLayers) + ").");
    const Layer& L = layers[static_cast<size_t>(layer)];
    const size_t file = 2 * static_cast<size_t>(layer);  // W_enc_<layer>, then W_dec_<layer> (loadCrossLayerTranscoder)
    auto d = std::make_shared<Dictionary>();
    d->dir = weightFiles.at(file);
    d->format = "circuit-tracer";
    d->architecture = jumpReLU ? "jump_relu" : "relu";
    d->trainedOn = config.modelName;
    d->transcoder = true;
    d->encoderOnly = true;
    d->activation = jumpReLU ? Dictionary::Activation::JumpReLUSigned : Dictionary::Activation::ReLU;
    d->dIn = d->dOut = dModel;
    d->dSae = dTranscoder;
    d->site = site(layer);
    d->siteOut = siteOut(layer);
    d->wEnc = L.wEnc;
    d->bEnc = L.bEnc;
    d->bDec = L.bDec;
    d->threshold = L.threshold;
    d->weightFiles = {weightFiles.at(file)};
    d->files = {files.at(file)};
    d->notes.push_back(d->dir + ": the encoder of layer " + std::to_string(layer) + " of a cross-layer transcoder; its features "
                       "only (its layer's reconstruction sums every earlier layer's features: run the transcoder whole for it).");
    return d;
}

std::shared_ptr<const CrossLayerTranscoder> loadCrossLayerTranscoder(const std::string& dirIn) {
    const fs::path dir(dirIn);
    if (!fs::is_directory(dir)) throw Error(dirIn + ": no such folder.");
    auto t = std::make_shared<CrossLayerTranscoder>();
    t->dir = dirIn;
    t->config = readTranscoderSetConfig(dirIn);
    if (t->config.modelKind != "cross_layer_transcoder")
        throw Error(t->config.file + ": a " + t->config.modelKind + ", not a cross-layer transcoder; read it with loadTranscoderSet.");
    t->numLayers = static_cast<int64_t>(countNumbered(dir, "W_enc_"));
    if (t->numLayers == 0) throw Error(dirIn + ": a circuit-tracer cross-layer transcoder with no W_enc_<i>.safetensors.");
    for (int64_t i = 0; i < t->numLayers; ++i) {
        const std::string s = std::to_string(i);
        const std::string encFile = (dir / ("W_enc_" + s + ".safetensors")).string();
        const std::string decFile = (dir / ("W_dec_" + s + ".safetensors")).string();
        for (const std::string& f : {encFile, decFile})
            if (!fs::is_regular_file(f))
                throw Error(f + ": missing (layer " + s + " of the cross-layer transcoder, which has " + std::to_string(t->numLayers) +
                            " W_enc_<i>.safetensors files).");
        TensorReader enc(encFile), dec(decFile);
        if (i == 0) {
            const std::vector<int64_t> shape = enc.matrixShape("W_enc_0");  // [d_transcoder, d_model]
            t->dTranscoder = shape[0];
            t->dModel = shape[1];
            t->jumpReLU = enc.has("threshold_0");
        }
        CrossLayerTranscoder::Layer L;
        L.wEnc = enc.get("W_enc_" + s, {t->dTranscoder, t->dModel}).t();
        L.bEnc = enc.get("b_enc_" + s, {t->dTranscoder});
        L.bDec = enc.get("b_dec_" + s, {t->dModel});
        if (t->jumpReLU) L.threshold = enc.get("threshold_" + s, {t->dTranscoder});
        else if (enc.has("threshold_" + s))
            throw Error(encFile + ": threshold_" + s + ", but W_enc_0.safetensors has no threshold_0 (circuit-tracer takes JumpReLU for "
                        "every layer or none from layer 0).");
        L.wDec = dec.get("W_dec_" + s, {t->dTranscoder, t->numLayers - i, t->dModel});
        t->layers.push_back(std::move(L));
        for (const TensorReader* r : {&enc, &dec}) {
            t->files.push_back(r->file());
            t->weightFiles.push_back(r->file()->path());
        }
    }
    return t;
}

}  // namespace nnscope
