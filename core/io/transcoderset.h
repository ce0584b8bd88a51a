// SPDX-License-Identifier: MIT
#pragma once
// circuit-tracer 0.5.0's transcoder sets, read from their own folders: a config.yaml beside per-layer transcoders
// (layer_<i>.safetensors) or a cross-layer transcoder (W_enc_<i>.safetensors + W_dec_<i>.safetensors). The layouts and
// the math, with citations into circuit-tracer: tests/fixtures/dictionaries/FORMATS.md section 6.
#include "core/io/dictionary.h"

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace nnscope {

/// A circuit-tracer config.yaml, as circuit_tracer/utils/hf_utils.py:load_transcoders reads it (yaml.safe_load; unknown
/// keys such as `scan` are ignored).
struct TranscoderSetConfig {
    std::string file;       ///< the config.yaml read
    std::string modelKind;  ///< "transcoder_set" (one transcoder per layer) or "cross_layer_transcoder"
    std::string modelName;  ///< the model it was trained on ("" when the file names none)
    /// TransformerLens hook names relative to blocks.<layer>: where layer i's features read ("mlp.hook_in",
    /// "hook_resid_mid", "ln2.hook_normalized") and what its transcoder predicts ("mlp.hook_out", "hook_mlp_out").
    std::string featureInputHook, featureOutputHook;
    /// Per layer (entry i = layer i), the weights files the optional `transcoders` list names, made absolute against
    /// the folder; empty when the config has no list (then the folder's layer_<i>.safetensors, i = 0, 1, ...).
    std::vector<std::string> transcoders;
};

/// Whether `dir` is a circuit-tracer set: a folder holding config.yaml.
bool isTranscoderSet(const std::string& dir);

/// Reads `dir`/config.yaml. Throws nnscope::Error naming the file: not YAML, not a mapping, a required key
/// (model_kind, feature_input_hook, feature_output_hook) missing or not a string, an unknown model_kind, an `hf://`
/// entry in `transcoders` (download it and list the local file).
TranscoderSetConfig readTranscoderSetConfig(const std::string& dir);

/// The per-layer transcoders of a `transcoder_set` folder, layer 0 first: each a transcoder Dictionary (format
/// "circuit-tracer") whose sites are blocks.<i>.<feature_input_hook> and blocks.<i>.<feature_output_hook> and whose
/// `dir` is its weights file (so that loadDictionaries(that file) reads the one layer again). In every
/// layer_<i>.safetensors (circuit_tracer/transcoder/single_layer_transcoder.py:load_relu_transcoder): W_enc
/// [d_transcoder, d_model] (kept as the transposed view Dictionary::wEnc [d_model, d_transcoder] of the mapped tensor,
/// no copy), W_dec [d_transcoder, d_model], b_enc [d_transcoder], b_dec [d_model], optional
/// activation_function.threshold [d_transcoder] (JumpReLU without a ReLU, Dictionary::Activation::JumpReLUSigned;
/// else ReLU), optional W_skip [d_model, d_model] (added as x · W_skipᵀ). Throws nnscope::Error naming the file: a
/// missing layer file, a missing tensor, a wrong shape, log_thresholds (circuit-tracer refuses it too), a
/// cross_layer_transcoder config (read it with loadCrossLayerTranscoder).
std::vector<std::shared_ptr<const Dictionary>> loadTranscoderSet(const std::string& dir);

/// Every dictionary at `path`: the layers of a per-layer transcoder set folder (loadTranscoderSet), the one layer of a
/// set when `path` is its layer_<i>.safetensors (or a file its `transcoders` list names), else the one dictionary
/// loadDictionary reads. Throws nnscope::Error as those do; a cross-layer transcoder folder, or one of its layers'
/// W_enc_<i>.safetensors, is refused with the reason (its layers' reconstructions are not separate dictionaries: see
/// CrossLayerTranscoder; loadDictionary reads a W_enc file as an encoder for a dashboard).
std::vector<std::shared_ptr<const Dictionary>> loadDictionaries(const std::string& path);

/// A cross-layer transcoder (CLT; circuit_tracer/transcoder/cross_layer_transcoder.py): the features of source layer s
/// read blocks.s.<feature_input_hook>, and each writes to every output layer l >= s through its own decoder row; the
/// reconstruction of blocks.l.<feature_output_hook> sums the contributions of the features of every layer s <= l.
/// Every tensor is a view of the memory-mapped files (float32 files are not copied; the pages of a layer's files are read
/// only when that layer is used), two files per source layer.
struct CrossLayerTranscoder {
    /// Layer s's share of the weights. Shapes use the names n_layers, d_model, d_transcoder.
    struct Layer {
        torch::Tensor wEnc;       ///< [d_model, d_transcoder]: the transposed view of W_enc_s [d_transcoder, d_model]
        torch::Tensor bEnc;       ///< [d_transcoder]
        torch::Tensor threshold;  ///< [d_transcoder] (JumpReLU), undefined for ReLU
        torch::Tensor bDec;       ///< [d_model]: the decoder bias of OUTPUT layer s (b_dec_s)
        torch::Tensor wDec;       ///< [d_transcoder, n_layers - s, d_model]: slot j writes to output layer s + j
    };

    std::string dir;                     ///< the folder it was read from
    TranscoderSetConfig config;
    int64_t numLayers = 0, dModel = 0, dTranscoder = 0;
    bool jumpReLU = false;               ///< threshold_0 exists: JumpReLU (no ReLU) at every layer, else ReLU
    std::vector<Layer> layers;
    std::vector<std::string> weightFiles;  ///< for an export's provenance (their sha256)
    std::vector<std::shared_ptr<const SafetensorsFile>> files;  ///< the mappings the tensors view

    /// The pre-activations of source layer `layer`'s features for x [..., d_model]: x · W_enc_layerᵀ + b_enc_layer,
    /// [..., d_transcoder] (encode_layer with apply_activation_function=False). Throws nnscope::Error for a layer out of
    /// range or a last axis that is not d_model.
    torch::Tensor preActivation(const torch::Tensor& x, int layer) const;
    /// The features of source layer `layer` for x [..., d_model] (float32): [..., d_transcoder]. JumpReLU:
    /// pre · 1[pre > threshold] (no ReLU: activation_functions.py:jumprelu.forward); ReLU: relu(pre)
    /// (CrossLayerTranscoder.encode_layer). Throws as preActivation.
    torch::Tensor encode(const torch::Tensor& x, int layer) const;
    /// The reconstruction of output layer `layer` [..., d_model] from `features`, the features of every source layer
    /// 0..layer (entry s: [..., d_transcoder]; entries past `layer` are not read and may be absent):
    /// b_dec_layer + Σ_{s <= layer} features[s] · W_dec_s[:, layer - s, :] (CrossLayerTranscoder.compute_reconstruction;
    /// no skip term: load_clt never loads one). Throws nnscope::Error for a layer out of range or too few entries.
    torch::Tensor reconstruct(const std::vector<torch::Tensor>& features, int layer) const;
    /// The decoder of source layer `source` into output layer `target` (target >= source): W_dec_source[:, target -
    /// source, :], [d_transcoder, d_model]. Throws nnscope::Error when target < source or either is out of range.
    torch::Tensor decoder(int source, int target) const;
    /// Feature `feature` of source layer `source`: its decoder rows to output layers source..n_layers-1,
    /// [n_layers - source, d_model] (row j is output layer source + j). Throws nnscope::Error out of range.
    torch::Tensor decoderRows(int source, int64_t feature) const;
    /// The TransformerLens hook layer `layer` reads ("blocks.3.hook_resid_mid") and the one its reconstruction stands
    /// for ("blocks.3.hook_mlp_out").
    std::string site(int layer) const;
    std::string siteOut(int layer) const;
    /// One line for messages: "circuit-tracer cross-layer transcoder, 2 layers, 64 → 48 features per layer (dir)".
    std::string describe() const;
    /// Source layer `layer`'s encoder as a Dictionary, for what reads features only (a feature dashboard: makeDashboard,
    /// findDashboard): encode(x) equals encode(x, layer), at site(layer); `dir` and `weightFiles` are the layer's
    /// W_enc_<layer>.safetensors (the features depend on it alone, so its dashboard is W_enc_<layer>.dashboard.safetensors
    /// beside it, checked against that file's sha256). It is Dictionary::encoderOnly: no decoder (wDec undefined) and
    /// decode throws, since layer l's reconstruction sums the features of every layer up to l. Views of the same
    /// mapped tensors. Throws nnscope::Error for a layer out of range.
    std::shared_ptr<const Dictionary> layerEncoder(int layer) const;
};

/// Reads the cross-layer transcoder in `dir` (config.yaml with model_kind cross_layer_transcoder, W_enc_<i> and W_dec_<i>
/// files for i = 0..n_layers-1, n_layers the number of W_enc_*.safetensors files, as
/// cross_layer_transcoder.py:_load_state_dict counts them). Sizes from W_enc_0 [d_transcoder, d_model]. Throws
/// nnscope::Error naming the file: a missing W_enc_<i> or W_dec_<i> file, a missing tensor, a wrong shape, a
/// threshold on some layers only, a config that is not a cross_layer_transcoder.
std::shared_ptr<const CrossLayerTranscoder> loadCrossLayerTranscoder(const std::string& dir);

}  // namespace nnscope
