// SPDX-License-Identifier: MIT
#include "core/io/dictionary.h"

#include "core/io/jsonfile.h"
#include "core/io/safetensors.h"
#include "core/io/tensorreader.h"
#include "core/io/transcoderset.h"
#include "core/model/config.h"
#include "core/model/error.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace nnscope {
namespace {

using detail::shapeText;
using detail::TensorReader;

constexpr uint64_t kDictionaryConfigMaxBytes = 1 << 20;

bool isFile(const fs::path& p) { return fs::is_regular_file(p); }

/// A pickled weights file is refused: unpickling can run code. The message gives the one line that converts it.
void refusePickle(const fs::path& dir, const std::string& want) {
    for (const char* pickle : {"sae_weights.pt", "sae_weights.pth", "sae.pt", "params.pt", "model.pt", "final.pt", "checkpoints/final.pt"})
        if (isFile(dir / pickle))
            throw Error((dir / pickle).string() + ": a pickled weights file, which nnscope does not open (unpickling can run code). "
                        "Convert it once: python -c \"import torch, safetensors.torch as s; s.save_file({k: v.contiguous() for k, v in "
                        "torch.load('" + (dir / pickle).string() + "', map_location='cpu').items()}, '" + (dir / want).string() + "')\"");
}

/// Opens the weights file `name` of the dictionary in `dir` (`layout` says what such a folder holds) and records it in
/// `d` (the mapping kept alive, the path for the export's sha256). A missing file is refused, a pickled one with the
/// line that converts it.
TensorReader openWeights(const fs::path& dir, const std::string& name, const std::string& layout, Dictionary& d) {
    const fs::path weights = dir / name;
    if (!isFile(weights)) {
        refusePickle(dir, name);
        throw Error(weights.string() + ": missing (" + layout + ").");
    }
    TensorReader r(weights.string());
    d.files.push_back(r.file());
    d.weightFiles.push_back(r.file()->path());
    return r;
}

int64_t intKey(const nlohmann::json& j, const std::string& key, const std::string& file) {
    const int64_t v = cfg::getInt(j, key, file);
    if (v <= 0) throw Error(file + ": " + key + " must be positive, not " + std::to_string(v) + ".");
    return v;
}

/// SAELens (v6) folders: cfg.json + sae_weights.safetensors (sae_lens/saes/sae.py and the architecture files beside it).
std::shared_ptr<Dictionary> readSaeLens(const fs::path& dir) {
    const std::string cfgFile = (dir / "cfg.json").string();
    const nlohmann::json j = readJsonObjectFile(cfgFile, kDictionaryConfigMaxBytes);
    auto d = std::make_shared<Dictionary>();
    d->format = "saelens";
    d->architecture = cfg::getString(j, "architecture", "standard", cfgFile);
    const std::string& a = d->architecture;
    if (a == "standard") d->activation = Dictionary::Activation::ReLU;
    else if (a == "jumprelu") d->activation = Dictionary::Activation::JumpReLU;
    else if (a == "topk") d->activation = Dictionary::Activation::TopK;
    else if (a == "batchtopk") d->activation = Dictionary::Activation::BatchTopK;
    else if (a == "gated") d->activation = Dictionary::Activation::Gated;
    else if (a == "transcoder") d->activation = Dictionary::Activation::ReLU, d->transcoder = true;
    else if (a == "jumprelu_transcoder" || a == "jumprelu_skip_transcoder")
        d->activation = Dictionary::Activation::JumpReLU, d->transcoder = true;
    else
        throw Error(cfgFile + ": unknown architecture \"" + a + "\" (nnscope reads standard, jumprelu, topk, batchtopk, gated, transcoder, "
                    "jumprelu_transcoder, jumprelu_skip_transcoder).");
    d->dIn = intKey(j, "d_in", cfgFile);
    d->dSae = intKey(j, "d_sae", cfgFile);
    d->dOut = j.contains("d_out") && !j["d_out"].is_null() ? intKey(j, "d_out", cfgFile) : d->dIn;
    if (d->activation == Dictionary::Activation::TopK) d->k = intKey(j, "k", cfgFile);
    // A transcoder never subtracts b_dec (it has the output's width): transcoder.py's process_sae_in.
    d->applyBDecToInput = !d->transcoder && cfg::getBool(j, "apply_b_dec_to_input", true, cfgFile);
    d->rescaleByDecoderNorm = cfg::getBool(j, "rescale_acts_by_decoder_norm", false, cfgFile);
    const std::string norm = cfg::getString(j, "normalize_activations", "none", cfgFile);
    if (norm == "none") d->inputNorm = Dictionary::InputNorm::None;
    else if (norm == "constant_norm_rescale") d->inputNorm = Dictionary::InputNorm::ConstantNormRescale;
    else if (norm == "layer_norm") d->inputNorm = Dictionary::InputNorm::LayerNorm;
    else if (norm == "expected_average_only_in") d->inputNorm = Dictionary::InputNorm::ExpectedAverage;
    else throw Error(cfgFile + ": normalize_activations \"" + norm + "\" is not one nnscope reads (none, constant_norm_rescale, layer_norm, "
                     "expected_average_only_in).");
    d->hookZ = !d->transcoder && cfg::getString(j, "reshape_activations", "none", cfgFile) == "hook_z";
    const nlohmann::json meta = j.contains("metadata") && j["metadata"].is_object() ? j["metadata"] : j;
    d->site = cfg::getString(meta, "hook_name", "", cfgFile);
    d->trainedOn = cfg::getString(meta, "model_name", cfg::getString(j, "model_name", "", cfgFile), cfgFile);
    if (d->site.empty()) d->site = cfg::getString(j, "hook_name", "", cfgFile);
    if (d->site.empty()) throw Error(cfgFile + ": names no site (metadata.hook_name), so nnscope cannot tell where it reads.");
    if (d->transcoder) {
        d->siteOut = cfg::getString(meta, "hook_name_out", "", cfgFile);
        if (d->siteOut.empty()) throw Error(cfgFile + ": a transcoder without metadata.hook_name_out: nnscope cannot tell where it writes.");
    }
    if (d->hookZ && d->site.size() >= 2 && d->site.compare(d->site.size() - 2, 2, "_z") != 0)
        throw Error(cfgFile + ": reshape_activations hook_z on the site " + d->site + ", which is not a hook_z.");

    TensorReader r = openWeights(dir, "sae_weights.safetensors", "a SAELens folder holds cfg.json and sae_weights.safetensors", *d);
    d->wEnc = r.get("W_enc", {d->dIn, d->dSae});
    d->wDec = r.get("W_dec", {d->dSae, d->dOut});
    d->bDec = r.get("b_dec", {d->dOut});
    if (d->activation == Dictionary::Activation::Gated) {
        d->bGate = r.get("b_gate", {d->dSae});
        d->rMag = r.get("r_mag", {d->dSae});
        d->bMag = r.get("b_mag", {d->dSae});
    } else {
        d->bEnc = r.get("b_enc", {d->dSae});
    }
    if (d->activation == Dictionary::Activation::JumpReLU || d->activation == Dictionary::Activation::BatchTopK)
        d->threshold = r.get("threshold", {d->dSae});
    if (a == "jumprelu_skip_transcoder") d->wSkip = r.get("W_skip", {d->dOut, d->dIn}).t();
    if (d->inputNorm == Dictionary::InputNorm::ExpectedAverage)
        // SAE.load_from_disk never folds the factor (it lives in sae-lens' table of releases, not in the folder): the
        // dictionary runs unscaled, as sae-lens runs it, and says so.
        d->notes.push_back(cfgFile + ": normalize_activations expected_average_only_in, but the folder holds no scaling factor: "
                           "run unscaled, as SAELens' load_from_disk runs it.");
    return d;
}

/// Gemma Scope 2: config.json + params.safetensors (sae_lens/loading/pretrained_sae_loaders.py:gemma_3_sae_huggingface_loader).
std::shared_ptr<Dictionary> readGemmaScope2(const fs::path& dir) {
    const std::string cfgFile = (dir / "config.json").string();
    const nlohmann::json j = readJsonObjectFile(cfgFile, kDictionaryConfigMaxBytes);
    auto d = std::make_shared<Dictionary>();
    d->format = "gemma-scope-2";
    d->architecture = cfg::getString(j, "architecture", "", cfgFile);
    if (d->architecture != "jump_relu")
        throw Error(cfgFile + ": architecture \"" + d->architecture + "\": Gemma Scope 2 dictionaries are jump_relu.");
    d->activation = Dictionary::Activation::JumpReLU;
    d->transcoder = cfg::getString(j, "type", "sae", cfgFile) == "transcoder";
    d->trainedOn = cfg::getString(j, "model_name", "", cfgFile);
    // hf_hook_point_in/out: an HF module path and .output or .input (the module's return value or first argument)
    d->siteConvention = "hf";
    d->site = cfg::getString(j, "hf_hook_point_in", "", cfgFile);
    if (d->site.empty()) throw Error(cfgFile + ": no hf_hook_point_in, so nnscope cannot tell where it reads.");
    if (d->transcoder) d->siteOut = cfg::getString(j, "hf_hook_point_out", "", cfgFile);
    if (d->transcoder && d->siteOut.empty()) throw Error(cfgFile + ": a transcoder without hf_hook_point_out.");
    TensorReader r = openWeights(dir, "params.safetensors", "a Gemma Scope 2 folder holds config.json and params.safetensors", *d);
    // the sizes come from the weights, as sae-lens takes them (width is not read)
    const std::vector<int64_t> enc = r.matrixShape("w_enc");
    d->dIn = enc[0];
    d->dSae = enc[1];
    d->dOut = r.matrixShape("w_dec")[1];
    d->wEnc = r.get("w_enc", {d->dIn, d->dSae});
    d->wDec = r.get("w_dec", {d->dSae, d->dOut});
    d->bEnc = r.get("b_enc", {d->dSae});
    d->bDec = r.get("b_dec", {d->dOut});
    d->threshold = r.get("threshold", {d->dSae});
    if (cfg::getBool(j, "affine_connection", false, cfgFile) || r.has("affine_skip_connection"))
        d->wSkip = r.get("affine_skip_connection", {d->dIn, d->dOut});
    if (!d->transcoder && d->dOut != d->dIn)
        throw Error(r.file()->path() + ": an SAE's decoder must give back its input's " + std::to_string(d->dIn) + " values, w_dec gives " +
                    std::to_string(d->dOut) + ".");
    return d;
}

/// Gemma Scope 1: layer_<L>/width_<W>/average_l0_<M>/params.npz, the site in the repository's name
/// (gemma-scope-2b-pt-res / -mlp / -att, and -transcoders: blocks.L.ln2.hook_normalized → blocks.L.hook_mlp_out, as
/// gemma_2_transcoder_huggingface_loader reads them), as sae-lens' gemma_2_sae_huggingface_loader reads it: jumprelu, no b_dec off
/// the input, the sizes from the arrays.
std::shared_ptr<Dictionary> readGemmaScope1(const fs::path& dir) {
    const std::string file = (dir / "params.npz").string();
    const std::string where = fs::absolute(dir).lexically_normal().string();
    std::smatch m;
    static const std::regex layerRe(R"((^|/)layer_(\d+)(/|$))"), kindRe(R"(-(res|mlp|att|transcoders)([-/_]|$))");
    if (!std::regex_search(where, m, layerRe))
        throw Error(file + ": a Gemma Scope folder names its block (layer_<L>/width_<W>/average_l0_<M>), and " + where + " does not.");
    const std::string layer = m[2].str();
    if (!std::regex_search(where, m, kindRe))
        throw Error(file + ": the site comes from the repository's name (gemma-scope-…-res, -mlp or -att), and " + where +
                    " names none: keep the folder under its repository's name.");
    auto d = std::make_shared<Dictionary>();
    d->format = "gemma-scope";
    d->architecture = "jumprelu";
    d->activation = Dictionary::Activation::JumpReLU;
    const std::string kind = m[1].str();
    if (kind == "transcoders") {
        // sae-lens' get_gemma_2_transcoder_config_from_hf: the pre-MLP norm before its gain → hook_mlp_out
        d->transcoder = true;
        d->architecture = "jumprelu_transcoder";
        d->site = "blocks." + layer + ".ln2.hook_normalized";
        d->siteOut = "blocks." + layer + ".hook_mlp_out";
    } else {
        d->site = "blocks." + layer + (kind == "res" ? ".hook_resid_post" : kind == "mlp" ? ".hook_mlp_out" : ".attn.hook_z");
    }
    d->hookZ = kind == "att";
    std::map<std::string, torch::Tensor> arrays = readNpz(file);
    d->weightFiles.push_back(file);
    auto array = [&](const std::string& name) -> torch::Tensor {
        for (const std::string& n : {name, "w" + name.substr(1)})  // W_enc or w_enc
            if (arrays.count(n)) return arrays.at(n).to(torch::kFloat32);
        throw Error(file + ": no array '" + name + "'.");
    };
    d->wEnc = array("W_enc");
    if (d->wEnc.dim() != 2) throw Error(file + ": W_enc must be a matrix [d_in, d_sae].");
    d->dIn = d->wEnc.size(0);
    d->dSae = d->wEnc.size(1);
    // a transcoder's output width is its decoder's; an SAE gives back its input
    d->dOut = d->transcoder && array("W_dec").dim() == 2 ? array("W_dec").size(1) : d->dIn;
    auto shaped = [&](const std::string& name, std::vector<int64_t> shape) {
        torch::Tensor t = array(name);
        if (t.sizes().vec() != shape)
            throw Error(file + ": array '" + name + "' has shape " + shapeText(t.sizes().vec()) + ", expected " + shapeText(shape) +
                        " from W_enc's " + shapeText(d->wEnc.sizes().vec()) + ".");
        return t;
    };
    d->wDec = shaped("W_dec", {d->dSae, d->dOut});
    d->bEnc = shaped("b_enc", {d->dSae});
    d->bDec = shaped("b_dec", {d->dOut});
    d->threshold = shaped("threshold", {d->dSae});
    d->notes.push_back(file + ": Gemma Scope arrays are read into memory (a .npz is not mapped).");
    return d;
}

/// EleutherAI sparsify: <hookpoint>/cfg.json + sae.safetensors (sparsify/sparse_coder.py: encode, decode, forward).
std::shared_ptr<Dictionary> readSparsify(const fs::path& dir) {
    const std::string cfgFile = (dir / "cfg.json").string();
    const nlohmann::json j = readJsonObjectFile(cfgFile, kDictionaryConfigMaxBytes);
    auto d = std::make_shared<Dictionary>();
    d->format = "sparsify";
    d->architecture = cfg::getString(j, "activation", "topk", cfgFile);
    if (d->architecture != "topk")
        throw Error(cfgFile + ": activation \"" + d->architecture + "\" (nnscope reads sparsify's topk coders).");
    d->activation = Dictionary::Activation::TopK;
    d->dIn = intKey(j, "d_in", cfgFile);
    const int64_t latents = j.contains("num_latents") && j["num_latents"].is_number_integer() ? j["num_latents"].get<int64_t>() : 0;
    d->dSae = latents > 0 ? latents : d->dIn * intKey(j, "expansion_factor", cfgFile);
    d->dOut = d->dIn;
    d->k = intKey(j, "k", cfgFile);
    d->transcoder = cfg::getBool(j, "transcode", false, cfgFile);
    d->applyBDecToInput = !d->transcoder;  // sparsify subtracts b_dec from an SAE's input, whatever normalize_decoder says
    // The folder is the hookpoint, a module path under the base model: an SAE reads its output, a transcoder its input
    // and predicts its output.
    d->site = d->siteOut = dir.filename().string();
    d->siteConvention = d->transcoder ? "hf-input" : "hf-output";
    TensorReader r = openWeights(dir, "sae.safetensors", "a sparsify hookpoint folder holds cfg.json and sae.safetensors", *d);
    d->wEnc = r.get("encoder.weight", {d->dSae, d->dIn}).t();
    d->bEnc = r.get("encoder.bias", {d->dSae});
    d->wDec = r.get("W_dec", {d->dSae, d->dIn});
    d->bDec = r.get("b_dec", {d->dIn});
    if (r.has("W_skip")) d->wSkip = r.get("W_skip", {d->dIn, d->dIn}).t();
    return d;
}

/// Llama Scope: hyperparams.json + checkpoints/final.safetensors (sae-lens' llama_scope_sae_huggingface_loader with
/// its norm scaling folded: the input times s = sqrt(d_model) / dataset_average_activation_norm.in, the threshold
/// jump_relu_threshold · s, the output divided by s).
std::shared_ptr<Dictionary> readLlamaScope(const fs::path& dir) {
    const std::string cfgFile = (dir / "hyperparams.json").string();
    const nlohmann::json j = readJsonObjectFile(cfgFile, kDictionaryConfigMaxBytes);
    auto d = std::make_shared<Dictionary>();
    d->format = "llama-scope";
    d->architecture = cfg::getString(j, "act_fn", "jumprelu", cfgFile);
    if (d->architecture != "jumprelu") throw Error(cfgFile + ": act_fn \"" + d->architecture + "\" (nnscope reads Llama Scope's jumprelu).");
    d->activation = Dictionary::Activation::JumpReLU;
    d->dIn = d->dOut = intKey(j, "d_model", cfgFile);
    d->dSae = intKey(j, "d_sae", cfgFile);
    d->site = cfg::getString(j, "hook_point_in", "", cfgFile);
    const std::string out = cfg::getString(j, "hook_point_out", d->site, cfgFile);
    if (d->site.empty()) throw Error(cfgFile + ": no hook_point_in, so nnscope cannot tell where it reads.");
    if (out != d->site)
        throw Error(cfgFile + ": a Llama Scope transcoder (" + d->site + " → " + out + "), which nnscope does not read yet (its output norm "
                    "is not in sae-lens' reading either).");
    d->trainedOn = "meta-llama/Llama-3.1-8B";
    const auto norms = j.contains("dataset_average_activation_norm") ? j["dataset_average_activation_norm"] : nlohmann::json();
    if (!norms.is_object() || !norms.contains("in") || !norms["in"].is_number() || norms["in"].get<double>() <= 0)
        throw Error(cfgFile + ": dataset_average_activation_norm.in must be a positive number.");
    d->inputScale = std::sqrt(static_cast<double>(d->dIn)) / norms["in"].get<double>();
    d->inputNorm = Dictionary::InputNorm::ExpectedAverage;
    const double threshold = cfg::getDouble(j, "jump_relu_threshold", cfgFile);
    TensorReader r = openWeights(dir, "checkpoints/final.safetensors", "a Llama Scope folder holds hyperparams.json and checkpoints/final.safetensors", *d);
    d->wEnc = r.get("encoder.weight", {d->dSae, d->dIn}).t();
    d->bEnc = r.get("encoder.bias", {d->dSae});
    d->wDec = r.get("decoder.weight", {d->dIn, d->dSae}).t();
    d->bDec = r.get("decoder.bias", {d->dIn});
    d->threshold = torch::full({d->dSae}, threshold * d->inputScale);
    return d;
}

}  // namespace

torch::Tensor Dictionary::encode(const torch::Tensor& xIn) const {
    torch::Tensor x = xIn.to(torch::kFloat32);
    if (x.size(-1) != dIn)
        throw Error(describe() + ": its input has " + std::to_string(dIn) + " values per position, the site gives " +
                    std::to_string(x.size(-1)) + ".");
    // process_sae_in: the run-time norm, then b_dec off the input where the dictionary says so
    switch (inputNorm) {
        case InputNorm::ConstantNormRescale: x = x * (std::sqrt(static_cast<double>(dIn)) / x.norm(2, -1, /*keepdim=*/true)); break;
        case InputNorm::LayerNorm: {
            const torch::Tensor centred = x - x.mean(-1, /*keepdim=*/true);
            x = centred / (centred.std(-1, /*unbiased=*/true, /*keepdim=*/true) + 1e-5);
            break;
        }
            case InputNorm::ExpectedAverage: x = x * inputScale; break;
        case InputNorm::None: break;
    }
    if (applyBDecToInput) x = x - bDec;
    if (activation == Activation::Gated) {
        const torch::Tensor active = (torch::matmul(x, wEnc) + bGate > 0).to(torch::kFloat32);
        const torch::Tensor magnitude = torch::relu(torch::matmul(x, wEnc * rMag.exp()) + bMag);
        return active * magnitude;
    }
    torch::Tensor pre = torch::matmul(x, wEnc) + bEnc;
    switch (activation) {
        case Activation::ReLU: return torch::relu(pre);
        case Activation::JumpReLU:
        case Activation::BatchTopK: return torch::relu(pre) * (pre > threshold).to(torch::kFloat32);
        case Activation::JumpReLUSigned: return pre * (pre > threshold).to(torch::kFloat32);
        case Activation::TopK: {
            if (rescaleByDecoderNorm) pre = pre * wDec.norm(2, -1);
            const int64_t kk = std::min(k, dSae);
            auto [values, indices] = pre.topk(kk, -1);
            return torch::zeros_like(pre).scatter(-1, indices, torch::relu(values));
        }
        case Activation::Gated: break;
    }
    return pre;
}

torch::Tensor Dictionary::decode(const torch::Tensor& features, const torch::Tensor& xIn) const {
    if (encoderOnly)
        throw Error(describe() + ": the encoder of one layer of a cross-layer transcoder has no reconstruction of its own (layer l's "
                    "sums the features of every layer up to l): run the transcoder whole, from its folder.");
    torch::Tensor x = xIn.to(torch::kFloat32);
    torch::Tensor f = features;
    if (activation == Activation::TopK && rescaleByDecoderNorm) f = f / wDec.norm(2, -1);
    torch::Tensor out = torch::matmul(f, wDec) + bDec;
    if (wSkip.defined()) out = out + torch::matmul(x, wSkip);
    if (transcoder) return out;  // transcoder.py's decode: no norm_out, even when the input was normalised
    switch (inputNorm) {
        case InputNorm::ConstantNormRescale: out = out / (std::sqrt(static_cast<double>(dIn)) / x.norm(2, -1, /*keepdim=*/true)); break;
        case InputNorm::LayerNorm: {
            const torch::Tensor mu = x.mean(-1, /*keepdim=*/true);
            out = out * (x - mu).std(-1, /*unbiased=*/true, /*keepdim=*/true) + mu;
            break;
        }
        case InputNorm::ExpectedAverage: out = out / inputScale; break;
        case InputNorm::None: break;
    }
    return out;
}

std::string Dictionary::describe() const {
    if (encoderOnly)
        return format + " " + architecture + " cross-layer transcoder's layer encoder, " + std::to_string(dIn) + " → " + std::to_string(dSae) +
               " features (" + dir + ")";
    // SAELens' architectures "transcoder" and "jumprelu_skip_transcoder" say it already ("saelens transcoder transcoder")
    const bool named = architecture.size() >= 10 && architecture.compare(architecture.size() - 10, 10, "transcoder") == 0;
    const std::string kind = transcoder ? (named ? "" : " transcoder") : " SAE";
    return format + " " + architecture + kind + ", " + std::to_string(dIn) + " → " +
           std::to_string(dSae) + " features" + (transcoder ? " → " + std::to_string(dOut) : "") + " (" + dir + ")";
}

std::shared_ptr<const Dictionary> loadDictionary(const std::string& dirIn) {
    const fs::path dir(dirIn);
    if (!fs::exists(dir)) throw Error(dirIn + ": no such folder.");
    if (isFile(dir) && dir.extension() == ".safetensors" && isTranscoderSet(dir.parent_path().string())) {
        static const std::regex encoderRe(R"(W_enc_(\d+)\.safetensors)");
        std::smatch m;
        const std::string name = dir.filename().string();
        if (std::regex_match(name, m, encoderRe) && readTranscoderSetConfig(dir.parent_path().string()).modelKind == "cross_layer_transcoder")
            return loadCrossLayerTranscoder(dir.parent_path().string())->layerEncoder(std::stoi(m[1].str()));  // a CLT layer's encoder
        return loadDictionaries(dirIn).front();  // one layer of a circuit-tracer set
    }
    if (!fs::is_directory(dir)) throw Error(dirIn + ": a file; a dictionary is the folder that holds its config and weights.");
    if (isTranscoderSet(dirIn)) {
        const TranscoderSetConfig c = readTranscoderSetConfig(dirIn);
        if (c.modelKind == "cross_layer_transcoder")
            throw Error(dirIn + ": a circuit-tracer cross-layer transcoder: its layers are not separate dictionaries (nnscope features "
                        "reads it whole).");
        throw Error(dirIn + ": a circuit-tracer transcoder set, one transcoder per layer, where one dictionary is asked for (a "
                    "dashboard, a steering edit): give one layer's file, e.g. " + (dir / "layer_0.safetensors").string() +
                    ". The whole set attaches to a trace (nnscope trace / features --prompt --dictionary, File ▸ Open Dictionary).");
    }
    std::shared_ptr<Dictionary> d;
    if (isFile(dir / "cfg.json") && isFile(dir / "sae.safetensors")) d = readSparsify(dir);
    else if (isFile(dir / "cfg.json")) d = readSaeLens(dir);
    else if (isFile(dir / "config.json") && (isFile(dir / "params.safetensors") || !isFile(dir / "model.safetensors"))) d = readGemmaScope2(dir);
    else if (isFile(dir / "hyperparams.json")) d = readLlamaScope(dir);
    else if (isFile(dir / "params.npz")) d = readGemmaScope1(dir);
    else {
        refusePickle(dir, "sae_weights.safetensors");
        // One folder too high (a sparsify run, a Gemma Scope 2 repository, a model with its SAE): name what is below.
        std::vector<std::string> below;
        std::error_code ec;
        for (fs::recursive_directory_iterator it(dir, ec), end; it != end && below.size() < 6; it.increment(ec)) {
            if (ec) break;
            if (it.depth() > 2) it.disable_recursion_pending();
            const fs::path p = it->path();
            if (it->is_directory(ec) && (isFile(p / "cfg.json") || isFile(p / "params.safetensors") || isFile(p / "params.npz") ||
                                         isFile(p / "hyperparams.json") || isTranscoderSet(p.string())))
                below.push_back(fs::relative(p, dir, ec).string());
        }
        if (!below.empty()) {
            std::string list;
            for (const auto& b : below) list += (list.empty() ? "" : ", ") + b;
            throw Error(dirIn + ": holds dictionaries in its subfolders (" + list + "): give one of them, e.g. " +
                        (fs::path(dirIn) / below.front()).string() + ".");
        }
        throw Error(dirIn + ": no dictionary nnscope knows (SAELens: cfg.json + sae_weights.safetensors; Gemma Scope 2: config.json + "
                    "params.safetensors; Gemma Scope: params.npz; sparsify: cfg.json + sae.safetensors; Llama Scope: hyperparams.json + "
                    "checkpoints/final.safetensors).");
    }
    d->dir = dirIn;
    return d;
}

}  // namespace nnscope
