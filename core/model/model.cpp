// SPDX-License-Identifier: MIT
//
// The decoder, written once for every family, in the order of transformers' modeling_<family>.py: norms,
// rotary, repeat_kv, the eager attention, the MLP, and the decoder layer with both residual adds written out.
// The family's description (core/model/family.h) picks the norm kind, the rotary style, fused or separate q/k/v,
// per-head q/k norms and the MLP kind. Each value goes through one `tap` at the line where it is computed.
#include "core/model/model.h"

#include "core/model/allocator.h"
#include "core/model/attention_kernels.h"
#include "core/model/compute_dtype.h"
#include "core/model/device.h"
#include "core/model/error.h"
#include "core/io/jsonfile.h"
#include "core/model/gemv.h"
#include "core/model/weights.h"

#include <torch/types.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

using namespace torch::indexing;


namespace nnscope {

bool scaledDotProductAttentionEnabled() {
    static const bool enabled = [] {
        if (TORCH_VERSION_MAJOR < 2) return false;
        const char* v = std::getenv("NNSCOPE_EAGER_ATTENTION");
        return !(v && *v && std::string(v) != "0");
    }();
    return enabled;
}
namespace {

std::string shapeOf(const torch::Tensor& t) {
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

inline void tapValue(Taps* taps, Value v, int layer, torch::Tensor& t) {
    if (taps) taps->tap(v, layer, t);
}

/// torch::where(condition, a, b). libtorch 1.13 has no meta kernel for where: on the meta device (shapes only) the result
/// is the broadcast of the three, made from them, so it keeps their device and dtype.
torch::Tensor metaSafeWhere(const torch::Tensor& condition, const torch::Tensor& a, const torch::Tensor& b) {
    if (condition.is_meta() || a.is_meta() || b.is_meta()) return (a + b) * condition.to(a.scalar_type());
    return torch::where(condition, a, b);
}

/// transformers' repeat_kv: [b, kv, s, d] -> [b, kv * n_rep, s, d], each kv head repeated n_rep times in place.
/// 0 where `allowed`, finfo(dtype).min elsewhere (transformers' eager mask), in `dtype`.
torch::Tensor additiveMask(const torch::Tensor& allowed, torch::ScalarType dtype) {
    const double minValue = dtype == torch::kBFloat16 ? -3.3895313892515355e38 : -std::numeric_limits<float>::max();
    const auto options = torch::TensorOptions().dtype(dtype).device(allowed.device());
    return metaSafeWhere(allowed, torch::zeros({}, options), torch::full({}, minValue, options));
}

torch::Tensor repeatKv(const torch::Tensor& x, int64_t nRep) {
    if (nRep == 1) return x;
    const auto b = x.size(0), kv = x.size(1), s = x.size(2), d = x.size(3);
    return x.index({Slice(), Slice(), None}).expand({b, kv, nRep, s, d}).reshape({b, kv * nRep, s, d});
}

/// Llama's rotate_half: cat(-x2, x1) over the two halves of the last axis.
torch::Tensor rotateHalf(const torch::Tensor& x) {
    const auto half = x.size(-1) / 2;
    return torch::cat({-x.index({"...", Slice(half, None)}), x.index({"...", Slice(None, half)})}, -1);
}

/// ERNIE's rotate_half: stack(-x[..., 1::2], x[..., 0::2]) interleaved back.
torch::Tensor rotateAdjacent(const torch::Tensor& x) {
    auto x1 = x.index({"...", Slice(0, None, 2)});
    auto x2 = x.index({"...", Slice(1, None, 2)});
    return torch::stack({-x2, x1}, -1).flatten(-2);
}

/// An elementwise kernel as torch 2.x runs it on a bfloat16 tensor: in float32, rounded once. libtorch 1.13's bfloat16
/// silu and tanh-GELU round inside (30-45% of elements one ulp off transformers'). float32 is unchanged.
template <typename F>
torch::Tensor inFloat32(const torch::Tensor& x, F f) {
    if (x.scalar_type() == torch::kFloat32) return f(x);
    return f(x.to(torch::kFloat32)).to(x.scalar_type());
}

/// `x * c` and `x / c` for a Python number c, as torch 2.x computes them (transformers' reference): a bfloat16 x is
/// multiplied in float32 with c as a float and rounded once (inFloat32). libtorch 1.13 rounds c to bfloat16 first
/// (0.044715 becomes 0.044678: up to 2^-9 relative on every element of GELU's polynomial, a 1/sqrt(24) attention scale,
/// a soft cap of 3). float32 is unchanged.
torch::Tensor timesNumber(const torch::Tensor& x, double c) {
    return inFloat32(x, [c](const torch::Tensor& t) { return t * c; });
}
torch::Tensor overNumber(const torch::Tensor& x, double c) {
    return inFloat32(x, [c](const torch::Tensor& t) { return t / c; });
}

/// Whether a bfloat16 product of `a` must be computed in float32 and rounded once to equal torch 2.x's: a CPU bfloat16
/// tensor where libtorch 1.13 would not hand the product to oneDNN (oneDnnMultipliesBfloat16: an AVX2-only CPU), or,
/// with `smallToo`, a batched product of at most 16³ multiply-adds (`elements`), which libtorch 1.13 keeps from oneDNN
/// (its mkldnn checksize).
bool emulateBfloat16Product(const torch::Tensor& a, int64_t elements, bool smallToo) {
    if (a.scalar_type() != torch::kBFloat16 || !a.device().is_cpu() || a.is_meta() || a.requires_grad()) return false;
    return !oneDnnMultipliesBfloat16() || (smallToo && elements <= 16 * 16 * 16);
}

/// The product a · b (torch::matmul's broadcasting) as torch 2.x computes it in bfloat16: float32 sums, rounded once.
/// libtorch 1.13 does that through oneDNN only where emulateBfloat16Product is false; elsewhere its own kernel rounds
/// otherwise (DeepSeek's 12-wide value heads over a 9-token prompt: 199 of 432 head outputs one ulp off transformers';
/// on an AVX2-only CPU every bfloat16 product), so there the factors are widened to float32 (exact), multiplied, and the
/// result rounded once. float32, and products oneDNN takes, go to torch::matmul unchanged, except the attention's float32
/// [batch, heads, m, k] × [batch, heads, k, n] products on a libtorch without MKL, one head per thread (headsProduct).
torch::Tensor bfloat16Product(const torch::Tensor& a, const torch::Tensor& b) {
    const int64_t elements = a.numel() * (b.dim() >= 2 ? b.size(-1) : 1);
    if (!emulateBfloat16Product(a, elements, /*smallToo=*/true)) {
        // The attention's float32 products, one head per thread (core/model/attention_kernels.h).
        if (headsProductApplies(a, b)) return headsProduct(a, b);
        return torch::matmul(a, b);
    }
    return torch::matmul(a.to(torch::kFloat32), b.to(torch::kFloat32)).to(a.scalar_type());
}

/// nn.Linear: x · wᵀ + b. A single float32 or bfloat16 row (a one-token pass, every generation step) goes through
/// singleRowLinear, which reads the weights near memory speed (libtorch 1.13's sgemv and oneDNN's bfloat16 product do not).
/// A bfloat16 product libtorch 1.13 would not give oneDNN (emulateBfloat16Product) is computed in float32, the bias
/// added in float32, and rounded once, as oneDNN (and torch 2.x) compute it.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    if (singleRowLinearApplies(x, w, b)) return singleRowLinear(x, w, b);
    if (emulateBfloat16Product(x, x.numel() * w.size(0), /*smallToo=*/false)) {
        // the weight widened 64 MiB of float32 at a time (a 128k-token lm_head would otherwise take a 1-2 GB copy)
        const torch::Tensor x32 = x.to(torch::kFloat32);
        const int64_t rows = std::max<int64_t>(1, (int64_t{64} << 20) / (4 * std::max<int64_t>(1, w.size(1))));
        std::vector<torch::Tensor> parts;
        for (int64_t r = 0; r < w.size(0); r += rows) {
            const int64_t n = std::min(rows, w.size(0) - r);
            parts.push_back(torch::linear(x32, w.narrow(0, r, n).to(torch::kFloat32),
                                          b.defined() ? b.narrow(0, r, n).to(torch::kFloat32) : torch::Tensor())
                                .to(x.scalar_type()));
        }
        return parts.size() == 1 ? parts.front() : torch::cat(parts, -1);
    }
    if (!b.defined()) return torch::linear(x, w);
    return torch::linear(x, w, b);
}

/// "model.vision_tower. and model.multi_modal_projector." for the load note.
std::string joinPrefixes(const std::vector<std::string>& prefixes) {
    std::string out;
    for (size_t i = 0; i < prefixes.size(); ++i) out += (i == 0 ? "" : i + 1 == prefixes.size() ? " and " : ", ") + prefixes[i];
    return out;
}

/// Warnings about tensors the files hold but the model never asked for (a config with fewer layers than stored, the
/// wrong model_type, a stored lm_head beside tie_word_embeddings), and about index entries that do not match the
/// shards for such tensors. Lists are cut to a few names and a count.
std::vector<std::string> unreadWeightWarnings(const WeightStore& ws, const ModelConfig& c, const std::vector<std::string>& unusedNames) {
    std::vector<std::string> warnings;
    const std::vector<std::string>& unread = unusedNames;
    std::set<std::string> read, files;
    for (const auto& name : ws.names()) read.insert(name);
    for (const auto& name : unread) {
        read.erase(name);
        files.insert(ws.fileOf(name));
    }
    constexpr size_t kShown = 6;
    auto listed = [](const std::vector<std::string>& names) {
        std::string out;
        for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
        if (names.size() > kShown) out += " and " + std::to_string(names.size() - kShown) + " more";
        return out;
    };
    if (!unread.empty()) {
        const std::string where = files.size() == 1 ? *files.begin() : ws.dir() + " (" + std::to_string(files.size()) + " shards)";
        warnings.push_back(where + ": " + std::to_string(unread.size()) + (unread.size() == 1 ? " tensor is" : " tensors are") +
                           " stored but never read by the model (config.json: model_type " + c.modelType + ", num_hidden_layers " +
                           std::to_string(c.numLayers) + (c.tieWordEmbeddings ? ", tie_word_embeddings true" : "") + "): " +
                           listed(unread) + ". If that is unexpected, check num_hidden_layers and model_type.");
    }
    std::vector<std::string> wrongEntries;
    std::string first;
    for (const auto& [name, problem] : ws.indexProblems())
        if (!read.count(name)) {
            if (first.empty()) first = problem;
            wrongEntries.push_back(name);
        }
    if (wrongEntries.size() == 1) warnings.push_back(first + " The model does not read it, so the checkpoint loads.");
    else if (!wrongEntries.empty())
        warnings.push_back(ws.dir() + "/model.safetensors.index.json: " + std::to_string(wrongEntries.size()) +
                           " entries do not match the shards: " + listed(wrongEntries) + ". The first: " + first +
                           " The model does not read them, so the checkpoint loads.");
    return warnings;
}

/// The experts a router chooses for each token and their weights (MoeConfig::router says how), from its logits [N,
/// num_experts] and, for a router with one, its float32 e_score_correction_bias [num_experts]. Returns {weights, indices},
/// both [N, top_k]: the weights float32, the indices int64. SoftmaxTopK gives the experts largest first; the group routers
/// keep transformers' torch.topk(sorted=False) order (the same kernel: libtorch's CPU topk of the same scores). On the meta
/// device (shapes only) the choice is not computed.
std::pair<torch::Tensor, torch::Tensor> routeTokens(const MoeConfig& moe, const torch::Tensor& logits, const torch::Tensor& correctionBias) {
    const int64_t N = logits.size(0), E = logits.size(1), k = moe.topK;
    if (logits.is_meta())
        return {torch::empty({N, k}, logits.options().dtype(torch::kFloat32)), torch::empty({N, k}, logits.options().dtype(torch::kInt64))};
    if (moe.router == RouterKind::SoftmaxTopK) {
        auto [weights, indices] = torch::softmax(logits, -1, torch::kFloat32).topk(k, -1);
        if (moe.normTopkProb) weights = weights / weights.sum(-1, /*keepdim=*/true);
        return {weights, indices};
    }
    if (moe.router == RouterKind::TopKThenSoftmax) {
        // GptOssTopKRouter: the top k logits, then a softmax over those k in the logits' dtype (computed in float32 and
        // rounded once, as torch's CPU softmax does)
        auto [top, indices] = logits.topk(k, -1);
        return {torch::softmax(top, -1, torch::kFloat32).to(logits.scalar_type()), indices};
    }
    const int64_t G = moe.numGroups, perGroup = E / G;
    // Masks every expert outside the topk_group best groups (by `groupScores` [N, G]) with `fill`.
    auto keepBestGroups = [&](const torch::Tensor& scores, const torch::Tensor& groupScores, double fill) {
        const torch::Tensor groupIdx = std::get<1>(groupScores.topk(moe.topkGroup, -1, /*largest=*/true, /*sorted=*/false));
        const torch::Tensor groupMask = torch::zeros_like(groupScores).scatter_(1, groupIdx, 1);
        const torch::Tensor scoreMask = groupMask.unsqueeze(-1).expand({N, G, perGroup}).reshape({N, E});
        return scores.masked_fill(scoreMask.logical_not(), fill);
    };
    if (moe.router == RouterKind::SigmoidGroupTopK) {
        // DeepseekV3TopkRouter / Glm4MoeTopkRouter: the bias moves the choice only; the weights are the sigmoid scores.
        const torch::Tensor scores = torch::sigmoid(logits.to(torch::kFloat32));
        torch::Tensor choice = correctionBias.defined() ? scores + correctionBias : scores;
        const torch::Tensor groupScores = std::get<0>(choice.view({N, G, perGroup}).topk(2, -1)).sum(-1);
        choice = keepBestGroups(choice, groupScores, -std::numeric_limits<double>::infinity());
        const torch::Tensor indices = std::get<1>(choice.topk(k, -1, /*largest=*/true, /*sorted=*/false));
        torch::Tensor weights = scores.gather(1, indices);
        if (moe.normTopkProb) weights = weights / (weights.sum(-1, /*keepdim=*/true) + 1e-20);
        return {weights * moe.routedScalingFactor, indices};
    }
    // DeepseekV2TopkRouter: softmax; "group_limited_greedy" zeroes the experts outside the best groups (a group scored by
    // its largest probability).
    torch::Tensor scores = torch::softmax(logits, -1, torch::kFloat32);
    if (moe.groupLimited) scores = keepBestGroups(scores, std::get<0>(scores.view({N, G, perGroup}).max(-1)), 0.0);
    auto [weights, indices] = scores.topk(k, -1, /*largest=*/true, /*sorted=*/false);
    return {weights * moe.routedScalingFactor, indices};
}

}  // namespace

torch::ScalarType parseDtype(const std::string& name) {
    if (name == "float32" || name == "f32" || name == "fp32" || name == "float") return torch::kFloat32;
    if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
    throw Error("unknown dtype \"" + name + "\": nnscope computes in float32 or bfloat16.");
}

std::optional<torch::ScalarType> parseDtypeRequest(const std::string& name) {
    if (name == "auto") return std::nullopt;
    try {
        return parseDtype(name);
    } catch (const Error&) {
        throw Error("unknown dtype \"" + name + "\": --dtype takes auto (the default), float32 or bfloat16.");
    }
}

std::string dtypeRequestName(const std::optional<torch::ScalarType>& requested) {
    return requested ? dtypeName(*requested) : "auto";
}

std::string dtypeName(torch::ScalarType t) {
    switch (t) {
        case torch::kFloat32: return "float32";
        case torch::kBFloat16: return "bfloat16";
        case torch::kFloat16: return "float16";
        default: return c10::toString(t);
    }
}

torch::Tensor& ModuleWeights::operator[](Param p) {
    switch (p) {
        case Param::Weight: return weight;
        case Param::Bias: return bias;
        case Param::AlphaP: return alphaP;
        case Param::AlphaN: return alphaN;
        case Param::Beta: return beta;
        case Param::Eps: return eps;
        case Param::Sinks: return sinks;
        case Param::CorrectionBias: return correctionBias;
        default: break;
    }
    throw Error("internal: no parameter " + std::to_string(static_cast<int>(p)) + " on a module.");
}

std::shared_ptr<const Model> Model::load(const std::string& dir, const LoadOptions& options) {
    nlohmann::json raw = readConfigJson(dir);
    // Resolved once, before any weight file is opened: config errors (an unknown family) come first.
    const Family* family = nullptr;
    ModelConfig config = resolveModelConfig(raw, dir + "/config.json", &family);
    std::shared_ptr<Model> m;
    try {
        m = build(std::move(config), *family, raw, dir + "/config.json", std::make_unique<WeightStore>(dir), options);
    } catch (const TensorShapeMismatch& e) {
        // A tensor of another shape than config.json implies, where a size key is missing and transformers' class default
        // stood in for it (hidden_size 4096 for llama): name the key, not only the shapes.
        std::string missing;
        for (const char* key : {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
                                "vocab_size", "num_hidden_layers"})
            if (!raw.contains(key) && family->configDefaults.contains(key))
                missing += std::string(missing.empty() ? "" : ", ") + key + " (default " + family->configDefaults[key].dump() + ")";
        if (missing.empty()) throw;
        throw Error(std::string(e.what()) + " config.json gives no " + missing + ": transformers' " + family->modelType +
                    " config class default was used for it, as transformers does; add the checkpoint's own value.");
    }
    m->dir_ = dir;
    const std::string generationFile = dir + "/generation_config.json";
    if (auto g = readOptionalJsonObjectFile(generationFile, kConfigMaxBytes)) m->config_.generation = cfg::readGenerationConfig(*g, generationFile);
    if (options.loadTokenizer) {
        try {
            m->tokenizer_ = Tokenizer::load(dir);
        } catch (const Error& e) {
            m->tokenizerError_ = e.what();
        }
    } else {
        m->tokenizerError_ = dir + ": the tokenizer was not loaded.";
    }
    return m;
}

std::shared_ptr<const Model> Model::fromTensors(const nlohmann::json& config, std::map<std::string, torch::Tensor> tensors,
                                                const LoadOptions& options, const std::string& label) {
    if (!config.is_object()) throw Error(label + ": the config must be a JSON object, as config.json holds.");
    const Family* family = nullptr;
    ModelConfig resolved = resolveModelConfig(config, label + " (config)", &family);
    auto m = build(std::move(resolved), *family, config, label + " (config)", std::make_unique<WeightStore>(label, std::move(tensors)), options);
    m->dir_ = label;
    m->tokenizerError_ = label + ": a model built from tensors has no tokenizer.";
    return m;
}

std::shared_ptr<const Model> Model::withoutWeights(const nlohmann::json& config, const std::string& label, torch::ScalarType dtype,
                                                  const std::string& tokenizerDir) {
    if (!config.is_object()) throw Error(label + ": the config must be a JSON object, as config.json holds.");
    const Family* family = nullptr;
    ModelConfig resolved = resolveModelConfig(config, label + " (config)", &family);
    std::shared_ptr<Model> m(new Model());
    m->dir_ = label;
    m->config_ = std::move(resolved);
    m->family_ = family;
    m->dtype_ = dtype == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat32;
    m->tokenizerError_ = label + ": no tokenizer beside the trace file.";
    if (!tokenizerDir.empty()) {
        try {
            m->tokenizer_ = Tokenizer::load(tokenizerDir);
        } catch (const Error& e) {
            m->tokenizerError_ = e.what();
        }
    }
    return m;
}

Model::ReleasesKeptCpuBlocks::~ReleasesKeptCpuBlocks() { releaseKeptCpuBlocks(); }

void Model::requireWeights() const {
    if (!store_)
        throw Error(dir_ + " holds traced values, not the model's weights: this needs the checkpoint (File > Open Checkpoint).");
}

std::shared_ptr<Model> Model::build(ModelConfig config, const Family& family, const nlohmann::json& raw, const std::string& configFile,
                                    std::unique_ptr<WeightStore> store, const LoadOptions& options) {
    useHugePageCpuAllocator();  // before the first weight is converted: large tensors on 2 MiB pages (core/model/allocator.h)
    if (options.dtype && *options.dtype != torch::kFloat32 && *options.dtype != torch::kBFloat16)
        throw Error("nnscope computes in float32 or bfloat16, not " + dtypeName(*options.dtype) + ".");
    requireDevice(options.device);  // before any weight is converted: "no CUDA device", "built on a libtorch without CUDA"
    std::shared_ptr<Model> m(new Model());
    m->dir_ = store->dir();
    m->config_ = std::move(config);
    m->family_ = &family;
    if (!family.savedPrefixes.empty()) store->renamePrefixes(family.savedPrefixes);  // Gemma 3: language_model.model.*
    m->device_ = options.device;
    {
        // The compute dtype, decided before any weight is converted (a float32 copy that does not fit is refused).
        DtypeRequest request;
        request.requested = options.dtype;
        for (const char* key : {"torch_dtype", "dtype"})
            if (!request.stored && raw.contains(key) && raw[key].is_string()) request.stored = configDtype(raw[key].get<std::string>());
        int64_t elements = 0, most = 0;
        std::optional<torch::ScalarType> majority;  // the dtype of most weights, when config.json does not say
        for (const auto& [type, n] : store->floatingElements([&family](const std::string& name) { return family.skipsTensor(name); })) {
            elements += n;
            if (n > most) most = n, majority = type;
        }
        if (!request.stored) request.stored = majority;
        // A CUDA GPU multiplies bfloat16 natively (every GPU libtorch's CUDA builds support since Ampere; older ones emulate it
        // in float32 arithmetic, still right); on the CPU it depends on the instruction set.
        request.cpuHasBfloat16 = options.device.is_cuda() || cpuHasNativeBfloat16();
        request.float32Bytes = static_cast<uint64_t>(elements) * 4;
        request.availableBytes = availableMemoryBytes();
        request.checkpoint = store->dir();
        const DtypeDecision decision = resolveComputeDtype(request);
        if (!decision.error.empty()) throw Error(decision.error);
        m->dtype_ = decision.dtype;
        if (!decision.note.empty()) m->notes_.push_back(decision.note);
    }
    const Family& fam = *m->family_;
    const ModelConfig& c = m->config_;
    if (fam.positions == PositionKind::Rotary && (c.rotaryDim() % 2 != 0 || c.rotaryDim() <= 0))
        throw Error(configFile + ": the rotary width int(head_dim * partial_rotary_factor) = int(" + std::to_string(c.headDim) + " * " +
                    jsonExcerpt(nlohmann::json(c.rope.partialRotaryFactor)) + ") = " + std::to_string(c.rotaryDim()) +
                    " must be a positive even number (head_dim is hidden_size // num_attention_heads where the config has no "
                    "head_dim; check those keys and partial_rotary_factor).");

    m->store_ = std::move(store);
    const WeightStore& ws = *m->store_;
    const auto dt = m->dtype_;
    std::set<std::string> read;
    m->layers_.resize(static_cast<size_t>(c.numLayers));
    std::vector<WeightSpec> schema = weightSchema(fam, c);
    // A checkpoint saved from the base model alone names its tensors without the base prefix ("h.0.attn.c_attn.weight"
    // for "transformer.h.0.attn.c_attn.weight"), as transformers' base_model_prefix allows.
    const std::string& prefix = fam.basePrefix;
    if (!prefix.empty() && !ws.contains(schema.front().name) && schema.front().name.rfind(prefix, 0) == 0 &&
        ws.contains(schema.front().name.substr(prefix.size())))
        for (WeightSpec& spec : schema)
            if (spec.name.rfind(prefix, 0) == 0) spec.name = spec.name.substr(prefix.size());
    // The head's name outside the base prefix, as the file may store it beside tie_word_embeddings true.
    const std::string headName = fam.tensorName({Module::LmHead});
    bool embeddingFromHead = false;
    for (const WeightSpec& spec : schema) {
        if (spec.perExpert) {
            // read per expert, never stacked: views of the mapped file, converted expert by expert where the dtype differs
            ExpertWeights got = readExpertWeights(ws, spec);
            for (torch::Tensor& t : got.weight)
                if (t.scalar_type() != dt || t.device() != options.device) t = t.to(options.device, dt);
            if (got.blocks.defined() && got.blocks.device() != options.device) {
                got.blocks = got.blocks.to(options.device);
                got.scales = got.scales.to(options.device);
            }
            ExpertWeights& owner = m->layers_[static_cast<size_t>(spec.layer)][spec.key.module].experts;
            if (spec.key.param == Param::Bias) {
                owner.bias = std::move(got.weight);
            } else {
                owner.weight = std::move(got.weight);
                owner.blocks = got.blocks;
                owner.scales = got.scales;
                owner.transposedLayout = got.transposedLayout;
            }
            read.insert(spec.name);
            read.insert(spec.parts.begin(), spec.parts.end());
            for (const std::string* n : {&spec.fused, &spec.packedBlocks, &spec.packedScales})
                if (!n->empty()) read.insert(*n);
            continue;
        }
        torch::Tensor t;
        const bool xieluBuffer = spec.key.module == Module::ActFn && (spec.key.param == Param::Beta || spec.key.param == Param::Eps);
        if (xieluBuffer) {
            // beta and eps are buffers made in the config's dtype (XIELUActivation(dtype=config.dtype)); the stored ones
            // are used where the file has them, else XIELUActivation's defaults.
            t = ws.contains(spec.name) ? ws.get(spec.name).reshape({})
                                       : torch::tensor(spec.key.param == Param::Beta ? 0.5 : -1e-6);
        } else if (spec.key.module == Module::ActFn && !ws.contains(spec.name)) {
            throw Error(configFile + ": hidden_act \"xielu\" needs its learned parameters in every block (alpha_p and alpha_n, as "
                        "Apertus checkpoints store them), and the checkpoint has no tensor '" + spec.name + "'.");
        } else if (spec.key.module == Module::EmbedTokens && c.tieWordEmbeddings && !ws.contains(spec.name) &&
                   ws.contains(headName)) {
            // transformers ties symmetrically while loading (PreTrainedModel.tie_weights): when the file has the head but
            // not the embedding, the head's matrix becomes the embedding too.
            WeightSpec head = spec;
            head.name = headName;
            t = readWeight(ws, head);
            read.insert(headName);
            embeddingFromHead = true;
        } else if (spec.key.module == Module::LmHead && !ws.contains(spec.name)) {
            throw Error(m->dir_ + ": the checkpoint has no tensor '" + spec.name +
                        "' and config.json sets tie_word_embeddings false.");
        } else {
            t = readWeight(ws, spec);
        }
        read.insert(spec.name);
        // Converted only when the stored dtype (or device) differs from the compute one; otherwise a view of the mapped file.
        // A router's correction bias stays float32 (transformers' _keep_in_fp32_modules_strict).
        const auto want = spec.key.param == Param::CorrectionBias ? torch::kFloat32 : dt;
        if (t.scalar_type() != want || t.device() != options.device) t = t.to(options.device, want);
        if (spec.transposed) t = t.t();
        LayerWeights& owner = spec.layer >= 0 ? m->layers_[static_cast<size_t>(spec.layer)] : m->root_;
        owner[spec.key.module][spec.key.param] = t;
    }
    std::string untiedWarning;
    if (!m->root_[Module::LmHead].weight.defined()) {
        const torch::Tensor& embedding = m->root_[Module::EmbedTokens].weight;
        // tie_word_embeddings true and the file stores a head of its own: transformers 5.23 compares the two in the
        // model's dtype (torch.equal) and ties them only when equal; a different head is kept, with a warning that the
        // config does not reflect the checkpoint.
        torch::Tensor stored;
        if (!embeddingFromHead && ws.contains(headName)) {
            stored = ws.get(headName, {c.vocabSize, c.hiddenSize});
            if (stored.scalar_type() != dt || stored.device() != options.device) stored = stored.to(options.device, dt);
        }
        if (stored.defined() && !torch::equal(stored, embedding)) {
            m->root_[Module::LmHead].weight = stored;
            untiedWarning = m->dir_ + ": config.json sets tie_word_embeddings true, but the file stores its own " + headName +
                            " with other values than " + fam.tensorName({Module::EmbedTokens}) +
                            ": as transformers does, the stored head is used and the two are not tied (set tie_word_embeddings "
                            "false to say so).";
        } else {
            m->root_[Module::LmHead].weight = embedding;
            m->tied_ = true;
        }
        read.insert(headName);
    }
    size_t skipped = 0;
    for (const auto& name : ws.names()) {
        if (read.count(name)) continue;
        if (fam.skipsTensor(name)) {  // a part nnscope does not compute (Gemma 3's vision tower): left in the mapped file
            ++skipped;
            continue;
        }
        bool ignored = false;
        for (const auto& suffix : fam.ignoredTensorSuffixes)
            ignored |= name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        if (!ignored) m->unused_.push_back(name);
    }
    m->warnings_ = unreadWeightWarnings(ws, c, m->unused_);
    if (!untiedWarning.empty()) m->warnings_.push_back(untiedWarning);
    if (skipped > 0)
        m->notes_.push_back(m->dir_ + ": " + fam.skippedNote + " (" + std::to_string(skipped) + (skipped == 1 ? " tensor" : " tensors") +
                            " under " + joinPrefixes(fam.skippedTensorPrefixes) + " left unread).");
    // After the weights: their shapes have confirmed head_dim, so the tables' size comes from the files, not from a
    // config that could ask for terabytes.
    if (fam.positions == PositionKind::Rotary) {
        m->rope_ = computeRope(c.rope, c.rotaryDim(), c.maxPositionEmbeddings).to(options.device);
        if (c.ropeLocal) m->ropeLocal_ = computeRope(*c.ropeLocal, c.rotaryDim(), c.maxPositionEmbeddings).to(options.device);
    }
    return m;
}

void Model::checkTokenIds(const torch::Tensor& inputIds) const {
    const int64_t maxId = inputIds.max().item<int64_t>(), minId = inputIds.min().item<int64_t>();
    if (minId < 0 || maxId >= config_.vocabSize)
        throw Error("token id " + std::to_string(minId < 0 ? minId : maxId) + " is outside the vocabulary [0, " +
                    std::to_string(config_.vocabSize) + ") of " + dir_ + ".");
}

torch::Tensor Model::positionIds(const torch::Tensor& mask) {
    return (mask.to(torch::kInt64).cumsum(-1) - 1).clamp_min(0);
}

torch::Tensor Model::causalMask(const torch::Tensor& mask, torch::ScalarType dtype) {
    return slidingCausalMask(mask, dtype, 0);
}

torch::Tensor Model::slidingCausalMask(const torch::Tensor& mask, torch::ScalarType dtype, int64_t window) {
    const int64_t s = mask.size(1);
    auto idx = torch::arange(s, torch::TensorOptions().dtype(torch::kInt64).device(mask.device()));
    auto q = idx.index({Slice(), None}), k = idx.index({None, Slice()});
    auto causal = k <= q;  // [q, k]: key <= query
    if (window > 0) causal = causal & (q - k < window);  // sliding_window_overlay: the last `window` keys only
    auto allowed = causal.index({None, None}) & (mask != 0).index({Slice(), None, None, Slice()});  // [b, 1, q, k]
    return additiveMask(allowed, dtype);
}

torch::Tensor Model::norm(const torch::Tensor& x, const ModuleWeights& mw, NormKind kind, Taps* taps, Value scaleValue, int layer) const {
    const torch::Tensor& w = mw.weight;
    const double eps = config_.normEps;
    const bool tapped = taps && scaleValue != Value::Count;
    // The pre-attention and pre-MLP norms also give their output before the gain (the other norms have no such value).
    const Value normalizedValue = scaleValue == Value::NativeInputNormScale            ? Value::NativeInputNormNormalized
                                  : scaleValue == Value::NativePostAttentionNormScale ? Value::NativePostAttentionNormNormalized
                                                                                      : Value::Count;
    if (kind == NormKind::LayerNorm) {
        if (x.is_meta()) return torch::empty_like(x);  // libtorch 1.13's layer_norm has no meta kernel; the shape is x's
        // nn.LayerNorm as torch 2.x computes it in bfloat16: statistics, (x - mean) * rstd * weight + bias all in float32,
        // rounded to the input dtype once. libtorch 1.13's bfloat16 kernel rounds its intermediate steps (1.3-3 times
        // transformers' distance to float32 from the first norm on, #27), so a bfloat16 input goes through the float32
        // kernel; float32 is unchanged.
        const bool reduced = x.scalar_type() != torch::kFloat32;
        auto fused = [&] {
            if (!reduced) return torch::layer_norm(x, {x.size(-1)}, w, mw.bias, eps);
            const torch::Tensor wf = w.defined() ? w.to(torch::kFloat32) : w, bf = mw.bias.defined() ? mw.bias.to(torch::kFloat32) : mw.bias;
            return torch::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, wf, bf, eps).to(x.scalar_type());
        };
        if (!tapped) return fused();
        // The scale 1 / sqrt(var + eps) in float32, as the fused kernel computes it. The output stays the fused kernel's
        // unless the tap replaced the scale (a frozen norm detaches it): then (x - mean) * scale * weight + bias.
        const torch::Tensor h = x.to(torch::kFloat32);
        const torch::Tensor centred = h - h.mean(-1, /*keepdim=*/true);
        torch::Tensor scale = torch::rsqrt(centred.pow(2).mean(-1) + eps);
        const torch::Tensor computed = scale;
        taps->tap(scaleValue, layer, scale);
        // (x - mean) · scale, the output before the gain (TransformerLens' hook_normalized), where the block has it
        torch::Tensor normalized;
        if (normalizedValue != Value::Count) {
            normalized = centred * scale.unsqueeze(-1);
            const torch::Tensor normalizedComputed = normalized;
            taps->tap(normalizedValue, layer, normalized);
            if (scale.is_same(computed) && normalized.is_same(normalizedComputed)) return fused();
            if (!normalized.is_same(normalizedComputed)) scale = torch::Tensor();  // an edited normalized value: no longer frozen
        } else if (scale.is_same(computed)) {
            return fused();
        }
        torch::Tensor y = normalized.defined() ? normalized : centred * scale.unsqueeze(-1);
        if (w.defined()) y = y * w.to(torch::kFloat32);
        if (mw.bias.defined()) y = y + mw.bias.to(torch::kFloat32);
        y = y.to(x.scalar_type());
        // A frozen scale (the same numbers, cut from autograd): the fused kernel's values, the frozen formula's gradient.
        if (!x.is_meta() && scale.defined() && torch::equal(scale, computed)) return fused().detach() + (y - y.detach());
        return y;  // an edited scale or normalized value
    }
    // RMSNorm: statistics in float32 (as transformers upcasts). The scale 1 / sqrt(mean(x²) + eps) is tapped per row.
    auto h = x.to(torch::kFloat32);
    torch::Tensor scale = torch::rsqrt(h.pow(2).mean(-1) + eps);
    if (tapped) taps->tap(scaleValue, layer, scale);
    h = h * scale.unsqueeze(-1);
    if (tapped && normalizedValue != Value::Count) taps->tap(normalizedValue, layer, h);  // x · scale, before the gain
    // Gemma: the gain is (1 + weight) in float32, cast back only at the end (Gemma2RMSNorm); OLMo 2: the gain times the
    // float32 value, cast back once (Olmo2RMSNorm); else the gain is applied in the input dtype (LlamaRMSNorm).
    if (kind == NormKind::RMSNormPlusOne) return (h * (1.0 + w.to(torch::kFloat32))).to(x.scalar_type());
    if (family_->rmsGainInFloat32) return (w.to(torch::kFloat32) * h).to(x.scalar_type());
    return w * h.to(x.scalar_type());
}

torch::Tensor Model::finalNorm(const torch::Tensor& hidden) const {
    requireWeights();
    return norm(hidden, root_[Module::Norm], family_->norm);
}

torch::Tensor Model::projectOnVocab(const torch::Tensor& hidden) const {
    requireWeights();
    return linear(finalNorm(hidden.to(device(), dtype_)), root_[Module::LmHead].weight, torch::Tensor());
}

torch::Tensor Model::activation(const torch::Tensor& x, const LayerWeights& lw) const {
    const std::string& a = config_.hiddenAct;
    // Elementwise, so the shape is the input's: on the meta device (shapes only) that is all there is to compute, and
    // libtorch 1.13 has no meta kernels for relu, where and others.
    if (x.is_meta()) return torch::empty_like(x);
    // The fused kernels in float32, rounded once; the formulas written in Python step by step, each step rounded as
    // transformers' steps are (a tensor op rounds its result; a Python number stays a float: timesNumber).
    if (a == "silu" || a == "swish") return inFloat32(x, [](const torch::Tensor& t) { return torch::silu(t); });
    if (a == "gelu") return inFloat32(x, [](const torch::Tensor& t) { return torch::gelu(t); });
    if (a == "gelu_pytorch_tanh") return inFloat32(x, [](const torch::Tensor& t) { return torch::gelu(t, "tanh"); });
    if (a == "gelu_new" || a == "gelu_python_tanh")  // NewGELUActivation: 0.5 * x * (1 + tanh(sqrt(2/π) * (x + 0.044715 * x³)))
        return timesNumber(x, 0.5) *
               (1.0 + torch::tanh(timesNumber(x + timesNumber(torch::pow(x, 3.0), 0.044715), std::sqrt(2.0 / M_PI))));
    if (a == "gelu_fast")  // FastGELUActivation: 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x)))
        return timesNumber(x, 0.5) * (1.0 + torch::tanh(timesNumber(x, 0.7978845608) * (1.0 + timesNumber(x, 0.044715) * x)));
    if (a == "quick_gelu") return x * torch::sigmoid(timesNumber(x, 1.702));
    if (a == "relu") return torch::relu(x);
    if (a == "relu2") return torch::square(torch::relu(x));  // ReLUSquaredActivation
    if (a == "relu6") return torch::clamp(x, 0, 6);
    if (a == "sigmoid") return torch::sigmoid(x);
    if (a == "tanh") return torch::tanh(x);
    if (a == "linear") return x;
    if (a == "xielu") {
        // XIELUActivation._xielu_python: the stored scalars go through softplus first.
        auto alphaP = torch::softplus(lw[Module::ActFn].alphaP);
        auto alphaN = lw[Module::ActFn].beta + torch::softplus(lw[Module::ActFn].alphaN);
        return metaSafeWhere(x > 0, alphaP * x * x + lw[Module::ActFn].beta * x,
                            (torch::expm1(torch::minimum(x, lw[Module::ActFn].eps)) - x) * alphaN + lw[Module::ActFn].beta * x);
    }
    throw Error(dir_ + "/config.json: " + family_->actKey + " \"" + a + "\" is not supported (nnscope computes silu, swish, gelu, "
                "gelu_pytorch_tanh, gelu_new, gelu_fast, quick_gelu, relu, relu2, relu6, sigmoid, tanh, linear, xielu).");
}

torch::Tensor Model::applyRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) const {
    // cos, sin: [b, 1, s, rotary_dim]
    // One pass with the same bits as the ops below (core/model/attention_kernels.h), where it takes these tensors.
    if (rotatedApplies(x, cos, sin)) return rotated(x, cos, sin, family_->rotary == RotaryStyle::AdjacentPairs);
    if (family_->rotary == RotaryStyle::AdjacentPairs) {
        // ERNIE: each frequency repeated for its pair (cos/sin float32, the product in float32: rotaryInFloat32).
        const auto half = cos.size(-1) / 2;
        auto pairs = [&](const torch::Tensor& t) {  // [..., half] -> [..., 2 * half], each entry twice in a row
            const torch::Tensor h = t.index({"...", Slice(None, half)});
            return torch::stack({h, h}, -1).flatten(-2);
        };
        auto c = pairs(cos);
        auto s = pairs(sin);
        return (x.to(c.scalar_type()) * c + rotateAdjacent(x).to(c.scalar_type()) * s).to(x.scalar_type());
    }
    // cos/sin in the compute dtype, or float32 (rotaryInFloat32: the products in float32, rounded once at the end)
    return (x.to(cos.scalar_type()) * cos + rotateHalf(x).to(cos.scalar_type()) * sin).to(x.scalar_type());
}

torch::Tensor Model::attention(int layer, const torch::Tensor& hidden, const BlockInputs& in, Taps* taps, KvCache* cache) const {
    const LayerWeights& lw = layers_[static_cast<size_t>(layer)];
    const ModelConfig& c = config_;
    const Family& f = *family_;
    const int64_t b = hidden.size(0), s = hidden.size(1), D = c.headDim;
    const int64_t QW = c.numHeads * D, KW = c.numKvHeads * D;
    const bool perHeadNorm = c.qkNorm && f.qkNormScope == QkNormScope::PerHead;
    const bool transposedNorm = c.qkNorm && f.qkNormScope == QkNormScope::PerHeadTransposed;
    torch::Tensor queryStates, keyStates, valueStates;
    if (c.mla.enabled) {
        std::tie(queryStates, keyStates, valueStates) = latentAttentionInputs(layer, hidden, in, taps, cache);
    } else {
    if (f.qkv == QkvLayout::FusedPerHead) {
        // Persimmon, GPT-NeoX: one fused projection laid out [num_heads, 3, head_dim] on the last axis.
        auto fusedQkv = linear(hidden, lw[Module::QkvProj].weight, lw[Module::QkvProj].bias);
        tapValue(taps, Value::NativeQkvProjOutput, layer, fusedQkv);
        auto split = fusedQkv.view({b, s, c.numHeads, 3, D});
        queryStates = split.index({"...", 0, Slice()});
        keyStates = split.index({"...", 1, Slice()});
        valueStates = split.index({"...", 2, Slice()});
    } else {
        torch::Tensor q, k, v;
        if (f.qkv == QkvLayout::FusedContiguous) {
            // GPT-2's c_attn, Phi-3's qkv_proj: [q | k | v], every head of each together.
            auto fusedQkv = linear(hidden, lw[Module::QkvProj].weight, lw[Module::QkvProj].bias);
            tapValue(taps, Value::NativeQkvProjOutput, layer, fusedQkv);
            q = fusedQkv.index({"...", Slice(None, QW)});
            k = fusedQkv.index({"...", Slice(QW, QW + KW)});
            v = fusedQkv.index({"...", Slice(QW + KW, None)});
        } else {
            q = linear(hidden, lw[Module::QProj].weight, lw[Module::QProj].bias);
            tapValue(taps, Value::NativeQProjOutput, layer, q);
            k = linear(hidden, lw[Module::KProj].weight, lw[Module::KProj].bias);
            tapValue(taps, Value::NativeKProjOutput, layer, k);
            v = linear(hidden, lw[Module::VProj].weight, lw[Module::VProj].bias);
            tapValue(taps, Value::NativeVProjOutput, layer, v);
        }
        if (c.qkNorm && f.qkNormScope == QkNormScope::WholeProjection) {
            // OLMo 2: the norms act on the whole projection, before it is cut into heads.
            q = norm(q, lw[Module::QNorm], f.qkNormKind);
            tapValue(taps, Value::NativeQNormOutput, layer, q);
            k = norm(k, lw[Module::KNorm], f.qkNormKind);
            tapValue(taps, Value::NativeKNormOutput, layer, k);
        }
        queryStates = q.view({b, s, -1, D});
        keyStates = k.view({b, s, -1, D});
        valueStates = v.view({b, s, -1, D});
    }
    if (perHeadNorm) {
        // One gain over head_dim shared by every head, before the rotary (Persimmon, Qwen3).
        queryStates = norm(queryStates, lw[Module::QNorm], f.qkNormKind);
        tapValue(taps, Value::NativeQNormOutput, layer, queryStates);
        keyStates = norm(keyStates, lw[Module::KNorm], f.qkNormKind);
        tapValue(taps, Value::NativeKNormOutput, layer, keyStates);
    }
    queryStates = queryStates.transpose(1, 2);
    keyStates = keyStates.transpose(1, 2);
    valueStates = valueStates.transpose(1, 2);
    if (transposedNorm) {
        queryStates = norm(queryStates, lw[Module::QNorm], f.qkNormKind);
        tapValue(taps, Value::NativeQNormOutput, layer, queryStates);
        keyStates = norm(keyStates, lw[Module::KNorm], f.qkNormKind);
        tapValue(taps, Value::NativeKNormOutput, layer, keyStates);
    }
    if (f.positions == PositionKind::Rotary && c.rotates(layer)) {  // a NoPE block (SmolLM3) skips the rotary
        const int64_t rot = c.rotaryDim();
        if (rot == D) {
            queryStates = applyRotary(queryStates, in.cos, in.sin);
            keyStates = applyRotary(keyStates, in.cos, in.sin);
        } else {
            // Partial rotary: only the first rotary_dim dimensions of each head turn; the rest pass unchanged.
            queryStates = torch::cat({applyRotary(queryStates.index({"...", Slice(None, rot)}), in.cos, in.sin),
                                      queryStates.index({"...", Slice(rot, None)})}, -1);
            keyStates = torch::cat({applyRotary(keyStates.index({"...", Slice(None, rot)}), in.cos, in.sin),
                                    keyStates.index({"...", Slice(rot, None)})}, -1);
        }
    }
    tapValue(taps, Value::AttentionQueries, layer, queryStates);
    tapValue(taps, Value::AttentionKeys, layer, keyStates);
    tapValue(taps, Value::AttentionValues, layer, valueStates);
    if (cache) {  // DynamicCache.update: the new keys and values after the cached ones
        auto& k = cache->keys[static_cast<size_t>(layer)];
        auto& v = cache->values[static_cast<size_t>(layer)];
        k = k.defined() ? torch::cat({k, keyStates}, 2) : keyStates;
        v = v.defined() ? torch::cat({v, valueStates}, 2) : valueStates;
        keyStates = k;
        valueStates = v;
    }
    }

    const int64_t groups = c.numHeads / c.numKvHeads;
    auto keyRep = repeatKv(keyStates, groups);
    auto valueRep = repeatKv(valueStates, groups);
    double scaling = c.attentionScaling;
    if (c.scaleByInverseLayer) scaling /= static_cast<double>(layer + 1);  // GPT-2's scale_attn_by_inverse_layer_idx
#if TORCH_VERSION_MAJOR >= 2
    // sdpa_attention_forward, where nothing asks for this block's scores or probabilities: one fused kernel (flash or
    // memory-efficient where it applies) that never forms the [query, key] matrices. is_causal, or the additive mask
    // where padding or a sliding window cuts more (MaskForm); Gemma 2's soft cap (tanh of the scores) has no SDPA form, so it
    // keeps the eager path, and so do gpt-oss's sinks (a column the kernel has no place for). NNSCOPE_EAGER_ATTENTION=1
    // turns it off (benchmarks, bisecting a difference).
    if (!c.attnLogitSoftcap && !f.attentionSinks && !(taps && taps->needsAttentionPattern(layer)) && scaledDotProductAttentionEnabled() && !queryStates.is_meta()) {
        // is_causal lets the kernel skip the scores above the diagonal, as transformers' sdpa path does when nothing is
        // padded.
        // torch 2.15's CPU kernels take those shortcuts at a price the explicit mask does not pay: a NaN in a query can
        // come out as finite outputs (the causal kernel on short prompts), and a scale that rounds to 0 in float32 as
        // NaNs; a block whose queries, keys or values are not all finite, or whose scale is not a normal float, goes
        // with the mask, which carries a NaN weight through to the logits as the eager attention does (test_fuzz).
        MaskForm form = in.form;
        if (form != MaskForm::Explicit &&
            (!std::isnormal(static_cast<float>(scaling)) ||
             !(torch::isfinite(queryStates).all() & torch::isfinite(keyStates).all() & torch::isfinite(valueStates).all()).item<bool>()))
            form = MaskForm::Explicit;
        c10::optional<torch::Tensor> mask;
        if (form == MaskForm::Explicit) mask = in.mask.to(queryStates.scalar_type());
        auto attnOutput = at::scaled_dot_product_attention(queryStates, keyRep, valueRep, mask, /*dropout_p=*/0.0,
                                                           /*is_causal=*/form == MaskForm::Causal, /*scale=*/scaling)
                              .transpose(1, 2)
                              .contiguous();  // [b, s, h, d]
        tapValue(taps, Value::AttentionHeadOutputs, layer, attnOutput);
        tapValue(taps, Value::AttentionPremix, layer, attnOutput);
        auto out = linear(attnOutput.reshape({b, s, -1}), lw[Module::OProj].weight, lw[Module::OProj].bias);
        tapValue(taps, Value::AttentionOutput, layer, out);
        return out;
    }
#endif
    // eager_attention_forward
    torch::Tensor attnWeights = bfloat16Product(queryStates, keyRep.transpose(2, 3));
    if (!c.attnLogitSoftcap && !f.attentionSinks && maskedScoresApplies(attnWeights, scaling, in.mask)) {
        // scores * scaling + mask and the softmax's widening in one pass (core/model/attention_kernels.h): the same bits.
        torch::Tensor scores = maskedScores(attnWeights, scaling, in.mask);  // float32
        if (taps && taps->needsAttentionPattern(layer)) {
            scores = scores.to(queryStates.scalar_type());  // exact: a bfloat16 pass's scores are bfloat16 numbers
            tapValue(taps, Value::AttentionScores, layer, scores);
        }
        // softmax in float32, then back to the query dtype (transformers upcasts here)
        attnWeights = torch::softmax(scores, -1, torch::kFloat32).to(queryStates.scalar_type());
    } else {
        attnWeights = timesNumber(attnWeights, scaling);
        if (c.attnLogitSoftcap) {  // Gemma 2: cap * tanh(scores / cap), before the mask
            attnWeights = overNumber(attnWeights, *c.attnLogitSoftcap);
            attnWeights = torch::tanh(attnWeights);
            attnWeights = timesNumber(attnWeights, *c.attnLogitSoftcap);
        }
        attnWeights = attnWeights + in.mask;
        tapValue(taps, Value::AttentionScores, layer, attnWeights);
        if (f.attentionSinks) {
            // gpt-oss: each head's sink logit joins every row as one more key, the row's maximum is subtracted in the compute
            // dtype, the softmax runs over keys and sink, and the sink's column is dropped: a row sums to 1 - the sink's share.
            const torch::Tensor sinks = lw[Module::SelfAttn].sinks.to(attnWeights.scalar_type()).reshape({1, -1, 1, 1})
                                            .expand({attnWeights.size(0), -1, attnWeights.size(2), 1});
            torch::Tensor combined = torch::cat({attnWeights, sinks}, -1);
            combined = combined - std::get<0>(combined.max(-1, /*keepdim=*/true));
            attnWeights = torch::softmax(combined, -1, torch::kFloat32).to(queryStates.scalar_type())
                              .narrow(-1, 0, attnWeights.size(-1));
        } else {
            // softmax in float32, then back to the query dtype (transformers upcasts here)
            attnWeights = torch::softmax(attnWeights, -1, torch::kFloat32).to(queryStates.scalar_type());
        }
    }
    tapValue(taps, Value::AttentionProbabilities, layer, attnWeights);
    auto attnOutput = bfloat16Product(attnWeights, valueRep).transpose(1, 2).contiguous();  // [b, s, h, d]
    tapValue(taps, Value::AttentionHeadOutputs, layer, attnOutput);
    tapValue(taps, Value::AttentionPremix, layer, attnOutput);  // o_proj's input, viewed per head
    auto out = linear(attnOutput.reshape({b, s, -1}), lw[Module::OProj].weight, lw[Module::OProj].bias);
    tapValue(taps, Value::AttentionOutput, layer, out);
    return out;
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> Model::latentAttentionInputs(int layer, const torch::Tensor& hidden,
                                                                                   const BlockInputs& in, Taps* taps, KvCache* cache) const {
    const LayerWeights& lw = layers_[static_cast<size_t>(layer)];
    const MlaConfig& a = config_.mla;
    const int64_t b = hidden.size(0), s = hidden.size(1), N = config_.numHeads, QK = config_.qkHeadDim();
    // The queries: q_b_proj(q_a_layernorm(q_a_proj(x))), or q_proj(x) where q_lora_rank is null.
    torch::Tensor q;
    if (a.qLoraRank > 0) {
        torch::Tensor qLatent = linear(hidden, lw[Module::QAProj].weight, lw[Module::QAProj].bias);
        qLatent = latentNorm(qLatent, lw[Module::QALayernorm]);
        tapValue(taps, Value::QLatent, layer, qLatent);
        q = linear(qLatent, lw[Module::QBProj].weight, torch::Tensor());
    } else {
        q = linear(hidden, lw[Module::QProj].weight, torch::Tensor());
        tapValue(taps, Value::NativeQProjOutput, layer, q);
    }
    q = q.view({b, s, N, QK}).transpose(1, 2);
    torch::Tensor queryNope = q.narrow(-1, 0, a.qkNopeHeadDim), queryRope = q.narrow(-1, a.qkNopeHeadDim, a.qkRopeHeadDim);
    // The keys' and values' latent and the rotary key part every head shares: kv_a_proj_with_mqa's two parts.
    const torch::Tensor compressed = linear(hidden, lw[Module::KvAProjWithMqa].weight, lw[Module::KvAProjWithMqa].bias);
    torch::Tensor kvLatent = latentNorm(compressed.narrow(-1, 0, a.kvLoraRank), lw[Module::KvALayernorm]);
    tapValue(taps, Value::KvLatent, layer, kvLatent);
    torch::Tensor keyRope = compressed.narrow(-1, a.kvLoraRank, a.qkRopeHeadDim).view({b, 1, s, a.qkRopeHeadDim});
    // The rotary on the rope parts only. DeepSeek V3's rope_interleave pairs adjacent dimensions and returns the rotated
    // part de-interleaved (apply_rotary_pos_emb_interleave): rotate_half on the evens-then-odds permutation is the same
    // arithmetic. DeepSeek V2's complex rotation is the family's adjacent-pairs rotary in float32.
    auto rotate = [&](const torch::Tensor& x) {
        if (!a.ropeInterleave) return applyRotary(x, in.cos, in.sin);
        return applyRotary(torch::cat({x.index({"...", Slice(0, None, 2)}), x.index({"...", Slice(1, None, 2)})}, -1), in.cos, in.sin);
    };
    tapValue(taps, Value::QueryNope, layer, queryNope);
    queryRope = rotate(queryRope);
    tapValue(taps, Value::QueryRope, layer, queryRope);
    keyRope = rotate(keyRope);
    tapValue(taps, Value::KeyRope, layer, keyRope);
    // The cache keeps the latent and the rotated key part (what transformers' cache keeps), [1, 1, length, width] each.
    torch::Tensor latent = kvLatent.unsqueeze(1);
    if (cache) {
        auto& kr = cache->keys[static_cast<size_t>(layer)];
        auto& kv = cache->values[static_cast<size_t>(layer)];
        kr = kr.defined() ? torch::cat({kr, keyRope}, 2) : keyRope;
        kv = kv.defined() ? torch::cat({kv, latent}, 2) : latent;
        keyRope = kr;
        latent = kv;
    }
    // expand_kv: kv_b_proj gives every head its non-rotary key and its value; the rotary part is the shared one.
    const int64_t T = latent.size(2);
    const torch::Tensor expanded =
        linear(latent, lw[Module::KvBProj].weight, torch::Tensor()).view({b, T, N, a.qkNopeHeadDim + a.vHeadDim}).transpose(1, 2);
    torch::Tensor keyStates = torch::cat({expanded.narrow(-1, 0, a.qkNopeHeadDim), keyRope.expand({b, N, T, a.qkRopeHeadDim})}, -1);
    // contiguous: libtorch 1.13 multiplies a bfloat16 narrow view of the last axis with another kernel than torch 2.x does
    // (the probabilities · values product then rounds differently); the numbers are the same
    torch::Tensor valueStates = expanded.narrow(-1, a.qkNopeHeadDim, a.vHeadDim).contiguous();
    torch::Tensor queryStates = torch::cat({queryNope, queryRope}, -1);
    tapValue(taps, Value::AttentionQueries, layer, queryStates);
    tapValue(taps, Value::AttentionKeys, layer, keyStates);
    tapValue(taps, Value::AttentionValues, layer, valueStates);
    return {queryStates, keyStates, valueStates};
}

torch::Tensor Model::latentNorm(const torch::Tensor& x, const ModuleWeights& mw) const {
    // DeepseekV3RMSNorm(width) with its default eps (the config's rms_norm_eps is not passed to the latents' norms)
    auto h = x.to(torch::kFloat32);
    h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + config_.mla.latentNormEps);
    return mw.weight * h.to(x.scalar_type());
}

torch::Tensor Model::gatedMlp(const torch::Tensor& x, const torch::Tensor& gateW, const torch::Tensor& upW, const torch::Tensor& downW,
                              const LayerWeights& lw) const {
    return linear(activation(linear(x, gateW, torch::Tensor()), lw) * linear(x, upW, torch::Tensor()), downW, torch::Tensor());
}

const ExpertWeights& Model::expertWeights(int layer, Module m, int64_t e) const {
    requireWeights();
    if (layer < 0 || layer >= config_.numLayers || !config_.sparseMlp(layer))
        throw Error("block " + std::to_string(layer) + " of " + dir_ + " has no experts.");
    if (e < 0 || e >= config_.moe.numExperts)
        throw Error("expert " + std::to_string(e) + " is outside [0, " + std::to_string(config_.moe.numExperts) + ") in " + dir_ + ".");
    return layers_[static_cast<size_t>(layer)][m].experts;
}

torch::Tensor Model::expertWeight(int layer, Module m, int64_t e) const {
    const ExpertWeights& w = expertWeights(layer, m, e);
    if (!w.weight.empty()) return w.weight[static_cast<size_t>(e)];
    if (!w.blocks.defined())
        throw Error("block " + std::to_string(layer) + "'s experts of " + dir_ + " have no " + family_->moduleLabel(m) + " projection.");
    // MXFP4: this expert's blocks and scales alone, dequantized now (the others stay packed in the mapped file)
    torch::Tensor t = dequantizeMxfp4(w.blocks.select(0, e), w.scales.select(0, e), dtype_);  // [out, in]
    if (w.transposedLayout) t = t.t().contiguous().t();  // the float file's strides: each expert stored [in, out]
    return t;
}

torch::Tensor Model::expertProduct(int layer, Module m, int64_t e, const torch::Tensor& x) const {
    if (!x.device().is_cpu()) return torch::matmul(x, expertWeight(layer, m, e).t());
    // On the CPU: x · W in float32, rounded once to x's dtype (in bfloat16 what oneDNN and torch 2.x compute). MXFP4 weights
    // are dequantized straight to float32 (exact: the bfloat16 weight widened would be the same numbers); gpt-oss's into
    // [in, out] (the float file's strides, so that a packed checkpoint and its float twin sum alike), in a buffer this
    // thread keeps (the largest expert projection's float32 size, 66 MB for gpt-oss-20b's gate_up).
    const ExpertWeights& w = expertWeights(layer, m, e);
    torch::Tensor weightT;  // [in, out] float32
    if (w.weight.empty() && w.transposedLayout) {
        thread_local torch::Tensor scratch;
        weightT = dequantizeMxfp4Transposed(w.blocks.select(0, e), w.scales.select(0, e), scratch);
    } else {
        weightT = (w.weight.empty() ? dequantizeMxfp4(w.blocks.select(0, e), w.scales.select(0, e), torch::kFloat32)
                                    : w.weight[static_cast<size_t>(e)].to(torch::kFloat32))
                      .t();
    }
    return torch::matmul(x.to(torch::kFloat32), weightT).to(x.scalar_type());
}

torch::Tensor Model::expertBias(int layer, Module m, int64_t e) const {
    const ExpertWeights& w = expertWeights(layer, m, e);  // the same checks, without dequantizing the weight
    return w.bias.empty() ? torch::Tensor() : w.bias[static_cast<size_t>(e)];
}

torch::Tensor Model::expert(int layer, int64_t e, const torch::Tensor& x) const {
    const LayerWeights& lw = layers_[static_cast<size_t>(layer)];
    if (family_->expertMlp == ExpertMlp::Gated)
        return gatedMlp(x, expertWeight(layer, Module::ExpertGateProj, e), expertWeight(layer, Module::ExpertUpProj, e),
                        expertWeight(layer, Module::ExpertDownProj, e), lw);
    // gpt-oss (GptOssExperts.forward): x @ gate_up_proj[e] + bias, then the bias added as its own rounding step, as the
    // modeling file writes `@` and `+` apart; gate the even columns, up the odd ones.
    const double alpha = config_.moe.swigluAlpha, limit = config_.moe.swigluLimit;
    const torch::Tensor gateUp = expertProduct(layer, Module::ExpertGateProj, e, x) + expertBias(layer, Module::ExpertGateProj, e);
    torch::Tensor gate = gateUp.index({"...", Slice(0, None, 2)}).clamp_max(limit);
    const torch::Tensor up = gateUp.index({"...", Slice(1, None, 2)}).clamp(-limit, limit);
    // glu = gate * sigmoid(gate * alpha) (alpha a Python float: multiplied in float32 as torch 2.x does), then (up + 1) * glu
    const torch::Tensor glu = gate * inFloat32(timesNumber(gate, alpha), [](const torch::Tensor& t) { return torch::sigmoid(t); });
    const torch::Tensor gated = (up + 1) * glu;
    return expertProduct(layer, Module::ExpertDownProj, e, gated) + expertBias(layer, Module::ExpertDownProj, e);
}

torch::Tensor Model::mixture(int layer, const torch::Tensor& hidden, Taps* taps) const {
    const LayerWeights& lw = layers_[static_cast<size_t>(layer)];
    const MoeConfig& moe = config_.moe;
    const int64_t b = hidden.size(0), s = hidden.size(1), H = hidden.size(2), k = moe.topK, E = moe.numExperts;
    const torch::Tensor flat = hidden.reshape({b * s, H});
    // The router (Qwen3MoeTopKRouter and its relatives): logits in the compute dtype (DeepSeek, GLM: in float32; gpt-oss
    // with its bias), the choice and the weights (routeTokens), cast back to the compute dtype (Mixtral, DeepSeek, GLM keep
    // them float32: weightsInFloat32).
    const ModuleWeights& router = lw[Module::Router];
    torch::Tensor routerLogits =
        (moe.routerInFloat32
             ? linear(flat.to(torch::kFloat32), router.weight.to(torch::kFloat32), router.bias.defined() ? router.bias.to(torch::kFloat32) : torch::Tensor())
             : linear(flat, router.weight, router.bias))
            .view({b, s, E});
    tapValue(taps, Value::RouterLogits, layer, routerLogits);
    auto [topWeights, topIndices] = routeTokens(moe, routerLogits.reshape({b * s, E}), router.correctionBias);
    topWeights = topWeights.view({b, s, k});
    topIndices = topIndices.view({b, s, k});
    if (!moe.weightsInFloat32) topWeights = topWeights.to(dtype_);
    tapValue(taps, Value::ExpertIndices, layer, topIndices);
    tapValue(taps, Value::ExpertWeights, layer, topWeights);
    if (topIndices.sizes() != torch::IntArrayRef({b, s, k}) || topWeights.sizes() != torch::IntArrayRef({b, s, k}))
        throw Error("expert_indices and expert_weights of block " + std::to_string(layer) + " must stay [batch, seq, top_k] = [" +
                    std::to_string(b) + ", " + std::to_string(s) + ", " + std::to_string(k) + "].");
    const torch::Tensor indices = topIndices.to(torch::kInt64).reshape({b * s * k});
    const bool meta = hidden.is_meta();  // shapes only: which experts run is not known, none is computed
    if (!meta && indices.numel() && (indices.min().item<int64_t>() < 0 || indices.max().item<int64_t>() >= E))
        throw Error("expert_indices of block " + std::to_string(layer) + " name an expert outside [0, " + std::to_string(E) + ").");

    // The experts (Qwen3MoeExperts, GptOssExperts): each expert the batch routes to runs once on the tokens that chose
    // it, its weights read (or dequantized) then; the others are never touched. Each chosen slot's output, before its
    // weight, lands at [token, slot].
    torch::Tensor expertOutputs = torch::zeros({b * s * k, H}, options());
    const torch::Tensor hit = meta ? torch::empty({0}, indices.options().device(torch::kCPU))
                                   : std::get<0>(at::_unique(indices, /*sorted=*/true));
    for (int64_t n = 0; n < hit.numel(); ++n) {
        const int64_t e = hit[n].item<int64_t>();
        const torch::Tensor slots = (indices == e).nonzero().flatten();       // positions in [token * k + slot]
        const torch::Tensor rows = flat.index_select(0, slots.div(k, "floor"));  // the tokens that chose e
        expertOutputs.index_copy_(0, slots, expert(layer, e, rows));
    }
    expertOutputs = expertOutputs.view({b, s, k, H});
    tapValue(taps, Value::ExpertOutputs, layer, expertOutputs);

    // The weighted sum in transformers' order: zeros, then each chosen expert's weighted output added in increasing
    // expert index (index_add_ expert by expert), in the compute dtype.
    torch::Tensor weighted = expertOutputs * topWeights.unsqueeze(-1);
    if (weighted.scalar_type() != dtype_) weighted = weighted.to(dtype_);
    if (!meta) {
        const torch::Tensor order = topIndices.to(torch::kInt64).argsort(/*dim=*/-1, /*descending=*/false);  // the slots by expert index
        weighted = weighted.gather(2, order.unsqueeze(-1).expand({b, s, k, H}));
    }
    torch::Tensor routed = torch::zeros({b, s, H}, options());
    for (int64_t j = 0; j < k; ++j) routed = routed + weighted.select(2, j);
    tapValue(taps, Value::RoutedOutput, layer, routed);
    if (moe.sharedExpertIntermediateSize <= 0) {
        tapValue(taps, Value::MlpOutput, layer, routed);
        return routed;
    }
    // A shared expert every token goes through, added last: Qwen2-MoE scales it by sigmoid(shared_expert_gate(x));
    // DeepSeek and GLM add the shared experts' output as it is (biased under DeepSeek V2's mlp_bias).
    const auto& sg = lw[Module::SharedGateProj];
    const auto& su = lw[Module::SharedUpProj];
    const auto& sd = lw[Module::SharedDownProj];
    torch::Tensor shared = linear(activation(linear(hidden, sg.weight, sg.bias), lw) * linear(hidden, su.weight, su.bias), sd.weight, sd.bias);
    if (family_->hasModule(Module::SharedExpertGate))
        shared = torch::sigmoid(linear(hidden, lw[Module::SharedExpertGate].weight, torch::Tensor())) * shared;
    tapValue(taps, Value::SharedExpertOutput, layer, shared);
    torch::Tensor out = routed + shared;
    tapValue(taps, Value::MlpOutput, layer, out);
    return out;
}

torch::Tensor Model::mlp(int layer, const torch::Tensor& hidden, Taps* taps) const {
    if (family_->experts && config_.sparseMlp(layer)) return mixture(layer, hidden, taps);
    const LayerWeights& lw = layers_[static_cast<size_t>(layer)];
    torch::Tensor neurons;
    if (family_->mlp != MlpKind::Plain) {
        torch::Tensor gate, up;
        if (family_->mlp == MlpKind::GatedFused) {  // Phi-3: gate_up_proj's output is [gate | up]
            auto gateUp = linear(hidden, lw[Module::GateUpProj].weight, lw[Module::GateUpProj].bias);
            tapValue(taps, Value::NativeGateUpProjOutput, layer, gateUp);
            auto chunks = gateUp.chunk(2, -1);
            gate = chunks[0];
            up = chunks[1];
        } else {
            gate = linear(hidden, lw[Module::GateProj].weight, lw[Module::GateProj].bias);
            tapValue(taps, Value::NativeGateProjOutput, layer, gate);
            up = linear(hidden, lw[Module::UpProj].weight, lw[Module::UpProj].bias);
            tapValue(taps, Value::NativeUpProjOutput, layer, up);
        }
        tapValue(taps, Value::NativeActFnInput, layer, gate);
        auto act = activation(gate, lw);
        tapValue(taps, Value::MlpActivation, layer, act);
        neurons = act * up;
    } else {
        auto up = linear(hidden, lw[Module::UpProj].weight, lw[Module::UpProj].bias);
        tapValue(taps, Value::NativeUpProjOutput, layer, up);
        tapValue(taps, Value::NativeActFnInput, layer, up);
        neurons = activation(up, lw);
        tapValue(taps, Value::MlpActivation, layer, neurons);
    }
    tapValue(taps, Value::MlpNeurons, layer, neurons);
    auto out = linear(neurons, lw[Module::DownProj].weight, lw[Module::DownProj].bias);
    tapValue(taps, Value::MlpOutput, layer, out);
    return out;
}

torch::Tensor Model::forward(const torch::Tensor& inputIdsIn, const torch::Tensor& attentionMaskIn, Taps* taps) const {
    requireWeights();
    if (!inputIdsIn.defined() || inputIdsIn.dim() != 2 || inputIdsIn.size(1) == 0)
        throw Error("input_ids must be a non-empty [batch, seq] tensor, got " +
                    (inputIdsIn.defined() ? shapeOf(inputIdsIn) : std::string("nothing")) + ".");
    torch::Tensor inputIds = inputIdsIn.to(torch::kInt64);
    checkTokenIds(inputIds);
    torch::Tensor attentionMask =
        attentionMaskIn.defined() ? attentionMaskIn.to(torch::kInt64) : torch::ones_like(inputIds);
    if (attentionMask.sizes() != inputIds.sizes())
        throw Error("attention_mask " + shapeOf(attentionMask) + " must have the shape of input_ids " + shapeOf(inputIds) + ".");
    // Positions and the largest of them on the CPU, where the ids arrive; then everything moves to the model's device.
    const torch::Tensor positions = positionIds(attentionMask);
    const int64_t maxPosition = positions.max().item<int64_t>();
    const bool paddingFree = (attentionMask != 0).all().item<bool>();
    inputIds = inputIds.to(device_);
    attentionMask = attentionMask.to(device_);
    tapValue(taps, Value::InputIds, -1, inputIds);
    tapValue(taps, Value::AttentionMask, -1, attentionMask);
    if (taps) {
        auto size = torch::tensor({inputIds.size(0), inputIds.size(1)}, torch::TensorOptions().dtype(torch::kInt64)).to(device_);
        taps->tap(Value::InputSize, -1, size);
    }

    auto hiddenStates = embed(inputIds);
    tapValue(taps, Value::TokenEmbeddings, -1, hiddenStates);
    // The masks' forms (MaskForm): without padding the full mask is the causal one, and so is the sliding one while the
    // window covers the prompt (transformers' sdpa path then passes is_causal and no mask).
    const int64_t s = inputIds.size(1);
    BlockInputs full, sliding;
    full.mask = causalMask(attentionMask, dtype_);
    full.form = paddingFree ? (s == 1 ? MaskForm::Unmasked : MaskForm::Causal) : MaskForm::Explicit;
    if (config_.slidingWindow > 0) {
        sliding.mask = slidingCausalMask(attentionMask, dtype_, config_.slidingWindow);
        sliding.form = config_.slidingWindow >= s ? full.form : MaskForm::Explicit;
    }
    return decode(hiddenStates, positions.to(device_), maxPosition, full, sliding, taps, nullptr);
}

torch::Tensor Model::embed(const torch::Tensor& inputIds) const {
    const torch::Tensor& table = root_[Module::EmbedTokens].weight;
    // libtorch 1.13 has no meta kernel for the embedding's index_select: on the meta device (shapes only) its output is
    // made empty with the model's options.
    if (device_.is_meta()) return torch::empty({inputIds.size(0), inputIds.size(1), table.size(1)}, options());
    auto hiddenStates = torch::embedding(table, inputIds);
    // Gemma's scaled embedding: sqrt(hidden_size) rounded to the weights' dtype, applied inside embed_tokens.
    if (config_.embedScale != 1.0) hiddenStates = hiddenStates * torch::tensor(config_.embedScale).to(hiddenStates.device(), root_[Module::EmbedTokens].weight.scalar_type());
    return hiddenStates;
}

torch::Tensor Model::forwardCached(const torch::Tensor& inputIdsIn, KvCache& cache, bool lastOnly) const {
    requireWeights();
    if (!inputIdsIn.defined() || inputIdsIn.dim() != 2 || inputIdsIn.size(0) != 1 || inputIdsIn.size(1) == 0)
        throw Error("a cached pass takes one row of input_ids [1, seq], got " +
                    (inputIdsIn.defined() ? shapeOf(inputIdsIn) : std::string("nothing")) + ".");
    const torch::Tensor inputIds = inputIdsIn.to(torch::kInt64);
    checkTokenIds(inputIds);
    if (cache.keys.empty()) {
        cache.keys.resize(static_cast<size_t>(config_.numLayers));
        cache.values.resize(static_cast<size_t>(config_.numLayers));
    } else if (cache.keys.size() != static_cast<size_t>(config_.numLayers)) {
        throw Error("the key/value cache holds " + std::to_string(cache.keys.size()) + " blocks, not this model's " +
                    std::to_string(config_.numLayers) + ".");
    }
    const int64_t s = inputIds.size(1), past = cache.length, total = past + s;
    const auto index = torch::TensorOptions().dtype(torch::kInt64).device(device_);
    auto positions = torch::arange(past, total, index).unsqueeze(0);  // [1, s]
    // Query q (at past + q) sees keys 0 ... past + q: the causal mask's last s rows (and, sliding, the last window).
    auto keyIdx = torch::arange(total, index).index({None, Slice()});
    auto queryIdx = positions.index({0, Slice(), None});
    auto allowed = keyIdx <= queryIdx;  // [s, total]
    BlockInputs full, sliding;
    full.mask = additiveMask(allowed, dtype_).index({None, None});  // [1, 1, s, total]
    // One query sees every key; a prompt without cached keys sees the causal mask; queries after cached keys: explicit.
    full.form = s == 1 ? MaskForm::Unmasked : past == 0 ? MaskForm::Causal : MaskForm::Explicit;
    if (config_.slidingWindow > 0) {
        sliding.mask = additiveMask(allowed & (queryIdx - keyIdx < config_.slidingWindow), dtype_).index({None, None});
        sliding.form = config_.slidingWindow >= total ? full.form : MaskForm::Explicit;
    }
    auto logits = decode(embed(inputIds.to(device_)), positions, total - 1, full, sliding, nullptr, &cache, lastOnly);
    cache.length = total;
    return logits;
}

std::pair<torch::Tensor, torch::Tensor> Model::rotaryTables(const RopeTables& rope, const torch::Tensor& positions,
                                                            int64_t maxPosition) const {
    // freqs = position * inv_freq in float32; cos/sin scaled by the attention factor and cast to the compute dtype
    // (ERNIE and OLMo 2 keep them in float32: rotaryInFloat32).
    const bool useLong = rope.invFreqLong.defined() && maxPosition + 1 > rope.longFrom;
    auto freqs = positions.index({"...", None}).to(torch::kFloat32) * (useLong ? rope.invFreqLong : rope.invFreq);
    auto emb = torch::cat({freqs, freqs}, -1);
    auto cos = emb.cos() * rope.attentionScaling;
    auto sin = emb.sin() * rope.attentionScaling;
    if (!family_->rotaryInFloat32) {
        cos = cos.to(dtype_);
        sin = sin.to(dtype_);
    }
    return {cos.unsqueeze(1), sin.unsqueeze(1)};
}

torch::Tensor Model::decode(torch::Tensor hiddenStates, const torch::Tensor& positions, int64_t maxPosition, BlockInputs full,
                            BlockInputs sliding, Taps* taps, KvCache* cache, bool lastOnly) const {
    const Family& f = *family_;
    const BlockNorms& bn = f.blockNorms;
    if (f.positions == PositionKind::Rotary) {
        std::tie(full.cos, full.sin) = rotaryTables(rope_, positions, maxPosition);
        std::tie(sliding.cos, sliding.sin) =
            config_.ropeLocal ? rotaryTables(ropeLocal_, positions, maxPosition) : std::make_pair(full.cos, full.sin);
    } else {
        // GPT-2: learned absolute positions, added to the token embeddings before the first block.
        if (maxPosition >= config_.maxPositionEmbeddings)
            throw Error("position " + std::to_string(maxPosition) + " is past the " + std::to_string(config_.maxPositionEmbeddings) +
                        " learned positions of " + dir_ + " (max_position_embeddings): use a shorter prompt.");
        hiddenStates = hiddenStates + (device_.is_meta() ? torch::empty_like(hiddenStates)
                                                         : torch::embedding(root_[Module::PositionEmbeddings].weight, positions));
    }

    for (int i = 0; i < config_.numLayers; ++i) {
        if (taps && !taps->beforeLayer(i)) throw Cancelled{};
        const LayerWeights& lw = layers_[static_cast<size_t>(i)];
        const BlockInputs& in = config_.slides(i) ? sliding : full;
        tapValue(taps, Value::LayerInput, i, hiddenStates);
        auto residual = hiddenStates;
        torch::Tensor attnInput = bn.beforeAttention ? norm(hiddenStates, lw[Module::InputNorm], f.norm, taps, Value::NativeInputNormScale, i) : hiddenStates;
        tapValue(taps, Value::AttentionNormOutput, i, attnInput);
        auto attnOutput = attention(i, attnInput, in, taps, cache);
        if (bn.afterAttention) {
            attnOutput = norm(attnOutput, lw[Module::AttentionOutputNorm], f.norm, taps, Value::NativeAttentionOutputNormScale, i);
            tapValue(taps, Value::NativeAttentionOutputNormOutput, i, attnOutput);
        }
        if (config_.parallelResidual) {
            // GPT-NeoX: both branches read the block's input; the MLP's norm input is the block's input.
            tapValue(taps, Value::LayerMid, i, residual);
            auto mlpInput = norm(residual, lw[Module::PostAttentionNorm], f.norm, taps, Value::NativePostAttentionNormScale, i);
            tapValue(taps, Value::MlpNormOutput, i, mlpInput);
            tapValue(taps, Value::MlpInput, i, mlpInput);
            auto mlpOutput = mlp(i, mlpInput, taps);
            hiddenStates = mlpOutput + attnOutput + residual;  // transformers' order of the sum
        } else {
            hiddenStates = residual + attnOutput;
            tapValue(taps, Value::LayerMid, i, hiddenStates);
            residual = hiddenStates;
            torch::Tensor mlpInput = bn.beforeMlp ? norm(hiddenStates, lw[Module::PostAttentionNorm], f.norm, taps, Value::NativePostAttentionNormScale, i)
                                                  : hiddenStates;
            tapValue(taps, Value::MlpNormOutput, i, mlpInput);
            tapValue(taps, Value::MlpInput, i, mlpInput);
            auto mlpOutput = mlp(i, mlpInput, taps);
            if (bn.afterMlp) {
                mlpOutput = norm(mlpOutput, lw[Module::MlpOutputNorm], f.norm, taps, Value::NativeMlpOutputNormScale, i);
                tapValue(taps, Value::NativeMlpOutputNormOutput, i, mlpOutput);
            }
            hiddenStates = residual + mlpOutput;
        }
        tapValue(taps, Value::LayerOutput, i, hiddenStates);
    }
    if (taps && !taps->beforeLayer(static_cast<int>(config_.numLayers))) throw Cancelled{};
    if (lastOnly) hiddenStates = hiddenStates.narrow(1, hiddenStates.size(1) - 1, 1);
    hiddenStates = norm(hiddenStates, root_[Module::Norm], f.norm, taps, Value::NativeFinalNormScale, -1);
    tapValue(taps, Value::FinalNormOutput, -1, hiddenStates);
    auto logits = linear(hiddenStates, root_[Module::LmHead].weight, torch::Tensor());
    tapValue(taps, Value::LmHeadOutput, -1, logits);
    if (config_.finalLogitSoftcap) {  // Gemma 2: cap * tanh(logits / cap)
        logits = overNumber(logits, *config_.finalLogitSoftcap);
        logits = torch::tanh(logits);
        logits = timesNumber(logits, *config_.finalLogitSoftcap);
    }
    tapValue(taps, Value::Logits, -1, logits);
    if (taps) {
        auto probs = torch::softmax(logits.index({Slice(), -1}).to(torch::kFloat32), -1);
        taps->tap(Value::NextTokenProbs, -1, probs);
    }
    return logits;
}

}  // namespace nnscope
