// SPDX-License-Identifier: MIT
#pragma once
// Sparse dictionaries (sparse autoencoders and transcoders) as researchers download them, read from their own folders
// (memory-mapped, nothing copied that the format does not force) into one description that encodes and decodes the
// way the reference library of each format does. The formats and their math: tests/fixtures/dictionaries/FORMATS.md.
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace nnscope {

class SafetensorsFile;

/// One sparse dictionary: an encoder from `dIn` to `dSae` features and a decoder from the features to `dOut`. An SAE
/// reconstructs its own input (dOut == dIn, one site); a transcoder reads one site and writes another (an MLP's input and
/// output). Every tensor is float32, memory-mapped from the file where the file stores float32.
struct Dictionary {
    /// How the features are made from the pre-activations `pre` = (x - b_dec?) · W_enc + b_enc.
    enum class Activation {
        ReLU,       ///< relu(pre) (SAELens "standard", "transcoder")
        JumpReLU,   ///< relu(pre) where pre > threshold, else 0 (SAELens "jumprelu", Gemma Scope, Llama Scope)
        /// pre where pre > threshold, else 0, with no ReLU: circuit-tracer's jumprelu (activation_functions.py), under
        /// which a negative threshold lets negative values through
        JumpReLUSigned,
        TopK,       ///< the k largest of pre, relu'd; the rest 0 (SAELens "topk", sparsify)
        BatchTopK,  ///< at inference a JumpReLU with the threshold learned in training (SAELens "batchtopk")
        Gated,      ///< (x · W_enc + b_gate > 0) · relu(x · (W_enc ⊙ exp(r_mag)) + b_mag) (SAELens "gated")
    };
    /// SAELens' normalize_activations at run time: constant_norm_rescale scales each row to norm √d_in before encoding
    /// and back after decoding; layer_norm centres and divides by (std + 1e-5) and undoes it after decoding.
    /// expected_average_only_in multiplies the input by `inputScale` (the file's norm_scaling_factor) and divides the
    /// reconstruction by it.
    enum class InputNorm { None, ConstantNormRescale, LayerNorm, ExpectedAverage };

    std::string dir;           ///< the folder it was read from (for one layer of a circuit-tracer set, its weights file)
    std::string format;        ///< "saelens", "gemma-scope-2", "gemma-scope", "sparsify", "llama-scope", "circuit-tracer"
    std::string architecture;  ///< as the file names it ("jumprelu", "jump_relu", "topk", ...)
    std::string trainedOn;     ///< the model the file says it was trained on (metadata.model_name), "" when it says none
    bool transcoder = false;
    /// The encoder of one layer of a cross-layer transcoder (CrossLayerTranscoder::layerEncoder): its features are
    /// exact, but it has no decoder of its own (layer l's reconstruction sums the features of every layer up to l), so
    /// decode throws and wDec is undefined. What reads features only (feature dashboards) takes it.
    bool encoderOnly = false;
    Activation activation = Activation::ReLU;
    int64_t dIn = 0, dSae = 0, dOut = 0;
    int64_t k = 0;  ///< TopK's k
    /// The sites as the file names them: a TransformerLens hook ("blocks.3.hook_resid_post"), an HF module path
    /// ("model.layers.3.post_feedforward_layernorm"), a sparsify hookpoint ("layers.3.mlp"). `siteOut` for transcoders.
    std::string site, siteOut;
    /// How the file's site reads: "tl" (a TransformerLens hook name), "hf" (an HF module path ending in .output or
    /// .input: Gemma Scope 2), "hf-output" / "hf-input" (an HF module path whose output or input is read: sparsify; a sparsify transcoder
    /// reads its hookpoint's input and writes, as `siteOut`, the same module's output).
    std::string siteConvention = "tl";
    /// SAELens' reshape_activations "hook_z": the site is every head's output side by side ([..., heads, head_dim]
    /// flattened to [..., heads * head_dim]; runDictionary and the feature edits flatten a site's trailing axes).
    bool hookZ = false;
    bool applyBDecToInput = false;  ///< subtract b_dec from the input before encoding
    bool rescaleByDecoderNorm = false;  ///< SAELens topk's rescale_acts_by_decoder_norm
    InputNorm inputNorm = InputNorm::None;
    double inputScale = 1.0;  ///< expected_average_only_in's norm_scaling_factor

    torch::Tensor wEnc;       ///< [dIn, dSae]
    torch::Tensor bEnc;       ///< [dSae]
    torch::Tensor wDec;       ///< [dSae, dOut]
    torch::Tensor bDec;       ///< [dOut]
    torch::Tensor threshold;  ///< [dSae] (JumpReLU, BatchTopK)
    torch::Tensor bGate, rMag, bMag;  ///< [dSae] (Gated)
    torch::Tensor wSkip;      ///< [dIn, dOut]: a transcoder's linear skip connection, x · wSkip added to the output

    /// What the reader chose that the user should know (one sentence each, naming the file).
    std::vector<std::string> notes;
    /// The weights files read (for an export's provenance: their sha256).
    std::vector<std::string> weightFiles;
    /// The files' mappings, kept alive as long as the tensors that view them.
    std::vector<std::shared_ptr<const SafetensorsFile>> files;

    /// The features of x [..., dIn] (float32): [..., dSae]. Throws nnscope::Error when the last axis is not dIn.
    torch::Tensor encode(const torch::Tensor& x) const;
    /// The reconstruction [..., dOut] from `features` [..., dSae], given the input `x` they were encoded from (the
    /// run-time norms and a transcoder's skip connection need it). Throws nnscope::Error for an encoderOnly dictionary.
    torch::Tensor decode(const torch::Tensor& features, const torch::Tensor& x) const;
    /// One line for messages: "saelens jumprelu SAE, 64 → 96 features (dir)".
    std::string describe() const;
};

/// Reads the dictionary in folder `dir`, finding its format by the files it holds: cfg.json + sae_weights.safetensors
/// (SAELens), config.json + params.safetensors (Gemma Scope 2), cfg.json + sae.safetensors (sparsify),
/// hyperparams.json + checkpoints/final.safetensors (Llama Scope), or one layer of a circuit-tracer transcoder set given
/// as its layer_<i>.safetensors (core/io/transcoderset.h; a whole set's folder holds several dictionaries: read it with
/// loadDictionaries), or the encoder of one layer of a cross-layer transcoder given as its W_enc_<i>.safetensors
/// (CrossLayerTranscoder::layerEncoder, encoderOnly: for a feature dashboard). Every tensor is checked against the
/// shape the config implies. Throws nnscope::Error naming the file and the problem: no known format, a missing tensor
/// or key, a wrong shape, an unknown architecture, a pickled weights file (with the one line that converts it), a
/// circuit-tracer set's folder (with the reason).
std::shared_ptr<const Dictionary> loadDictionary(const std::string& dir);

}  // namespace nnscope
