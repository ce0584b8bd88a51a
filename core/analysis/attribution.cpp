// SPDX-License-Identifier: MIT
#include "core/analysis/attribution.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <algorithm>

using namespace torch::indexing;

namespace nnscope {
namespace {

/// A norm with its scale frozen at input `x` [hidden]: y = gain ⊙ (centered ? v - mean(v) : v) (+ bias). Linear in v.
struct FrozenNorm {
    torch::Tensor gain;  // float32 [hidden]
    torch::Tensor bias;  // float32 [hidden] or undefined
    bool centered = false;

    /// The frozen norm's image of v [..., hidden] without the bias.
    torch::Tensor apply(const torch::Tensor& v) const { return gain * (centered ? v - v.mean(-1, true) : v); }
    /// The direction d with d · v == g · apply(v) for every v (the transpose of the frozen map applied to g).
    torch::Tensor pullBack(const torch::Tensor& g) const {
        torch::Tensor d = gain * g;
        return centered ? d - d.mean() : d;
    }
};

/// The norm of `kind` with weight w and bias b (compute dtype, may be undefined) frozen at `scale`, the norm's scale that
/// the real pass tapped at this position (a 0-dim float32 tensor: 1 / RMS, or 1 / standard deviation for a LayerNorm,
/// Value::Native*NormScale): gain = w · scale (Gemma: (1 + w) · scale), centred for a LayerNorm.
FrozenNorm freeze(const torch::Tensor& scale, const torch::Tensor& w, const torch::Tensor& b, NormKind kind, int64_t hidden) {
    FrozenNorm f;
    const torch::Tensor wf = w.defined() ? w.to(torch::kCPU, torch::kFloat32) : torch::ones({hidden});
    f.gain = (kind == NormKind::RMSNormPlusOne ? 1.0 + wf : wf) * scale.to(torch::kCPU, torch::kFloat32);
    f.centered = kind == NormKind::LayerNorm;
    if (b.defined()) f.bias = b.to(torch::kCPU, torch::kFloat32);
    return f;
}

/// What a branch (attention or MLP) of output `out` [hidden] writes to the stream, and the direction whose dot product
/// with `out` gives its share of the logit: through the branch norm with its scale frozen where `normed` (Gemma's and
/// OLMo 2's norms after the branch), else `out` itself and the final direction `g`.
struct BranchTerm {
    torch::Tensor direction;  ///< share = direction · out + constant
    double constant = 0;      ///< the branch norm's bias through g (0 without one)
    torch::Tensor stream;     ///< what the stream receives
    torch::Tensor gain;       ///< the branch norm's frozen gain (undefined without a norm)
};

BranchTerm branchTerm(const torch::Tensor& out, const torch::Tensor& g, const torch::Tensor& scale, const ModuleWeights& norm,
                      NormKind kind) {
    BranchTerm t{g, 0.0, out, torch::Tensor()};
    if (!scale.defined()) return t;
    const FrozenNorm branch = freeze(scale, norm.weight, norm.bias, kind, out.size(-1));
    t.direction = branch.pullBack(g);
    t.stream = branch.apply(out);
    t.gain = branch.gain;
    if (branch.bias.defined()) {
        t.constant = torch::dot(branch.bias, g).item<double>();
        t.stream = t.stream + branch.bias;
    }
    return t;
}

torch::Tensor at(const Model& model, const TraceResult& result, const ValueKey& key, int64_t row, int64_t position) {
    return promptValue(model, result, key, row).index({position});
}

std::string layerName(int layer) { return "layers." + std::to_string(layer) + "."; }

}  // namespace

std::vector<ValueKey> attributionValueKeys(const Model& model) {
    const int n = static_cast<int>(model.config().numLayers);
    const BlockNorms& bn = model.family().blockNorms;
    std::vector<ValueKey> keys{{Value::LayerInput, 0}};
    for (int i = 0; i < n; ++i) {
        for (Value v : {Value::AttentionOutput, Value::AttentionHeadOutputs, Value::MlpOutput}) keys.push_back({v, i});
        // a mixture of experts' block has no neurons of its own (core/analysis/routing.h splits it by expert)
        if (model.hasValueAt(Value::MlpNeurons, i)) keys.push_back({Value::MlpNeurons, i});
        if (bn.afterAttention) {
            keys.push_back({Value::NativeAttentionOutputNormOutput, i});
            keys.push_back({Value::NativeAttentionOutputNormScale, i});
        }
        if (bn.afterMlp) {
            keys.push_back({Value::NativeMlpOutputNormOutput, i});
            keys.push_back({Value::NativeMlpOutputNormScale, i});
        }
    }
    keys.push_back({Value::LayerOutput, n - 1});
    keys.push_back({Value::NativeFinalNormScale, -1});
    return keys;
}

LogitAttribution directLogitAttribution(const Model& model, const TraceResult& result, int64_t row, int64_t positionIn, int64_t target,
                                        std::optional<int64_t> wrong, int topNeuronCount, const BlockProgress& progress) {
    c10::InferenceMode guard;
    const ModelConfig& c = model.config();
    const Family& fam = model.family();
    const int n = static_cast<int>(c.numLayers);
    for (int64_t id : {target, wrong.value_or(0)})
        if (id < 0 || id >= c.vocabSize)
            throw Error("attribution: token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ").");
    const PromptSpan span = promptSpan(result.batch, row);
    const int64_t position = positionIn < 0 ? positionIn + span.length : positionIn;
    if (position < 0 || position >= span.length)
        throw Error("attribution: position " + std::to_string(positionIn) + " is outside the prompt's " + std::to_string(span.length) +
                    " tokens.");

    LogitAttribution a;
    a.target = target;
    a.wrong = wrong.value_or(-1);
    a.position = position;

    // Computed on the CPU, in float32, where the trace's saved values are: a GPU model's weights come over one row or
    // one block at a time (every `.to(torch::kCPU, torch::kFloat32)`, a no-op for a CPU model's).
    // The unembedding direction u and its pull-back g through the frozen final norm: logit(v) = g · v (+ constants).
    const torch::Tensor lm = model.lmHead();
    torch::Tensor u = lm.index({target}).to(torch::kCPU, torch::kFloat32);
    if (wrong) u = u - lm.index({*wrong}).to(torch::kCPU, torch::kFloat32);
    const torch::Tensor xFinal = at(model, result, {Value::LayerOutput, n - 1}, row, position);
    const FrozenNorm finalNorm = freeze(at(model, result, {Value::NativeFinalNormScale, -1}, row, position), model.finalNormWeight(),
                                        model.finalNormBias(), fam.norm, c.hiddenSize);
    const torch::Tensor g = finalNorm.pullBack(u);
    a.finalGain = finalNorm.gain;
    a.centered = finalNorm.centered;
    // The pass's own logit, before soft-capping: lm_head(norm(x)) exactly as the model computes it.
    {
        const torch::Tensor normed = model.finalNorm(xFinal.to(model.device(), model.dtype()).unsqueeze(0)).to(torch::kCPU, torch::kFloat32).reshape({-1});
        a.logit = torch::dot(normed, u).item<double>();
    }

    auto add = [&](AttributionComponent::Kind kind, std::string name, int layer, int64_t index, double value) {
        a.components.push_back({kind, std::move(name), layer, index, value});
        return value;
    };
    const torch::Tensor embed = at(model, result, {Value::LayerInput, 0}, row, position);
    double total = add(AttributionComponent::Kind::Embed, "embed", -1, -1, torch::dot(g, embed).item<double>());

    a.attention = torch::zeros({n});
    a.mlp = torch::zeros({n});
    a.heads = torch::zeros({n, c.numHeads});
    a.neurons = torch::zeros({n, c.intermediateSize});
    a.streamTerms = torch::zeros({2 * n + 1, c.hiddenSize});
    a.streamTerms.index_put_({0}, embed);
    const BlockNorms& bn = fam.blockNorms;
    if (bn.afterMlp) a.mlpBranchGain = torch::ones({n, c.hiddenSize});
    if (bn.afterAttention) a.attentionBranchGain = torch::ones({n, c.hiddenSize});
    for (int i = 0; i < n; ++i) {
        progress.step(i, n);
        const LayerWeights& lw = model.layer(i);
        const std::string L = layerName(i);
        // attention: o_proj(z) + b_O, then the branch norm where the family has one
        const torch::Tensor attnOut = at(model, result, {Value::AttentionOutput, i}, row, position);
        const torch::Tensor attnScale =
            bn.afterAttention ? at(model, result, {Value::NativeAttentionOutputNormScale, i}, row, position) : torch::Tensor();
        const BranchTerm attn = branchTerm(attnOut, g, attnScale, lw[Module::AttentionOutputNorm], fam.norm);
        const torch::Tensor& gA = attn.direction;
        const double attnConst = attn.constant;
        const torch::Tensor& attnStream = attn.stream;
        if (bn.afterAttention) a.attentionBranchGain.index_put_({i}, attn.gain);
        const double attnShare = torch::dot(gA, attnOut).item<double>() + attnConst;
        a.attention.index_put_({i}, attnShare);
        a.streamTerms.index_put_({1 + 2 * i}, attnStream);
        total += add(AttributionComponent::Kind::Attention, L + "attention_output", i, -1, attnShare);
        const torch::Tensor z = at(model, result, {Value::AttentionHeadOutputs, i}, row, position);  // [heads, head_dim]
        const torch::Tensor perHead = (torch::matmul(gA, lw[Module::OProj].weight.to(torch::kCPU, torch::kFloat32)).reshape({c.numHeads, -1}) * z).sum(-1);
        a.heads.index_put_({i}, perHead);
        for (int64_t h = 0; h < c.numHeads; ++h)
            add(AttributionComponent::Kind::Head, L + "self_attn.head." + std::to_string(h), i, h, perHead[h].item<double>());
        if (lw[Module::OProj].bias.defined())
            add(AttributionComponent::Kind::Bias, L + "self_attn." + fam.moduleName(Module::OProj) + ".bias", i, -1,
                torch::dot(gA, lw[Module::OProj].bias.to(torch::kCPU, torch::kFloat32)).item<double>());
        if (bn.afterAttention && lw[Module::AttentionOutputNorm].bias.defined())
            add(AttributionComponent::Kind::Bias, L + fam.moduleName(Module::AttentionOutputNorm) + ".bias", i, -1, attnConst);

        // MLP: down_proj(neurons) + b, then the branch norm where the family has one
        const torch::Tensor mlpOut = at(model, result, {Value::MlpOutput, i}, row, position);
        const torch::Tensor mlpScale = bn.afterMlp ? at(model, result, {Value::NativeMlpOutputNormScale, i}, row, position) : torch::Tensor();
        const BranchTerm mlpTerm = branchTerm(mlpOut, g, mlpScale, lw[Module::MlpOutputNorm], fam.norm);
        const torch::Tensor& gM = mlpTerm.direction;
        const double mlpConst = mlpTerm.constant;
        const torch::Tensor& mlpStream = mlpTerm.stream;
        if (bn.afterMlp) a.mlpBranchGain.index_put_({i}, mlpTerm.gain);
        const double mlpShare = torch::dot(gM, mlpOut).item<double>() + mlpConst;
        a.mlp.index_put_({i}, mlpShare);
        a.streamTerms.index_put_({2 + 2 * i}, mlpStream);
        total += add(AttributionComponent::Kind::Mlp, L + "mlp_output", i, -1, mlpShare);
        if (model.hasValueAt(Value::MlpNeurons, i)) {  // a mixture of experts has none: its neurons' shares stay 0 (routing.h)
            const torch::Tensor acts = at(model, result, {Value::MlpNeurons, i}, row, position);  // [intermediate]
            a.neurons.index_put_({i}, acts * torch::matmul(gM, lw[Module::DownProj].weight.to(torch::kCPU, torch::kFloat32)));
            if (lw[Module::DownProj].bias.defined())
                add(AttributionComponent::Kind::Bias, L + "mlp." + fam.moduleName(Module::DownProj) + ".bias", i, -1,
                    torch::dot(gM, lw[Module::DownProj].bias.to(torch::kCPU, torch::kFloat32)).item<double>());
        }
        if (bn.afterMlp && lw[Module::MlpOutputNorm].bias.defined())
            add(AttributionComponent::Kind::Bias, L + fam.moduleName(Module::MlpOutputNorm) + ".bias", i, -1, mlpConst);
    }
    if (finalNorm.bias.defined())
        total += add(AttributionComponent::Kind::Bias, fam.moduleName(Module::Norm) + ".bias", -1, -1,
                     torch::dot(finalNorm.bias, u).item<double>());
    a.total = total;

    // the neurons with the largest |share| over every block
    const int64_t count = std::min<int64_t>(topNeuronCount, a.neurons.numel());
    if (count > 0) {
        const torch::Tensor flat = a.neurons.reshape({-1});
        const torch::Tensor idx = std::get<1>(flat.abs().topk(count));
        for (int64_t j = 0; j < count; ++j) {
            const int64_t k = idx[j].item<int64_t>();
            const int layer = static_cast<int>(k / c.intermediateSize);
            const int64_t neuron = k % c.intermediateSize;
            a.topNeurons.push_back({AttributionComponent::Kind::Neuron, layerName(layer) + "mlp.neuron." + std::to_string(neuron), layer,
                                    neuron, flat[k].item<double>()});
        }
    }
    a.note = std::string("The final norm's scale (1 / ") + (finalNorm.centered ? "standard deviation" : "RMS") +
             " of the stream at this position) is frozen at its value in the real pass" +
             (bn.afterAttention || bn.afterMlp ? ", and so are the branch norms' after attention and MLP" : "") +
             ", so the norm is linear and the components add up to the logit" +
             (c.finalLogitSoftcap ? " before final_logit_softcapping" : "") + " (as TransformerLens' apply_ln_to_stack).";
    return a;
}

std::pair<std::vector<TokenEffect>, std::vector<TokenEffect>> promotedTokens(const Model& model, const LogitAttribution& a,
                                                                             const torch::Tensor& v, int k) {
    c10::InferenceMode guard;
    torch::Tensor x = v.to(torch::kCPU, torch::kFloat32).reshape({-1});
    if (x.size(0) != model.config().hiddenSize)
        throw Error("promotedTokens: expected a vector of hidden_size " + std::to_string(model.config().hiddenSize) + " values.");
    if (a.centered) x = x - x.mean();
    const torch::Tensor logits = torch::matmul(model.lmHead(), (a.finalGain * x).to(model.device(), model.dtype())).to(torch::kCPU, torch::kFloat32);
    k = static_cast<int>(std::min<int64_t>(k, logits.size(0)));
    std::pair<std::vector<TokenEffect>, std::vector<TokenEffect>> out;
    auto [hi, hiIdx] = logits.topk(k);
    auto [lo, loIdx] = logits.topk(k, -1, /*largest=*/false);
    for (int j = 0; j < k; ++j) {
        out.first.push_back({hiIdx[j].item<int64_t>(), hi[j].item<double>()});
        out.second.push_back({loIdx[j].item<int64_t>(), lo[j].item<double>()});
    }
    return out;
}

double streamVectorShare(const Model& model, const LogitAttribution& a, const torch::Tensor& v) {
    c10::InferenceMode guard;
    torch::Tensor x = v.to(torch::kFloat32).reshape({-1});
    if (x.size(0) != model.config().hiddenSize)
        throw Error("streamVectorShare: expected a vector of hidden_size " + std::to_string(model.config().hiddenSize) + " values.");
    if (a.centered) x = x - x.mean();
    const torch::Tensor lm = model.lmHead();
    torch::Tensor u = lm.index({a.target}).to(torch::kFloat32);
    if (a.wrong >= 0) u = u - lm.index({a.wrong}).to(torch::kFloat32);
    return torch::dot(u, a.finalGain * x).item<double>();
}

torch::Tensor componentStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& a, int64_t row,
                                    const AttributionComponent& c) {
    using K = AttributionComponent::Kind;
    switch (c.kind) {
        case K::Embed: return a.streamTerms.index({0});
        case K::Attention: return a.streamTerms.index({1 + 2 * c.layer});
        case K::Mlp: return a.streamTerms.index({2 + 2 * c.layer});
        case K::Head: return headStreamVector(model, result, a, row, c.layer, c.index);
        case K::Neuron: return neuronStreamVector(model, result, a, row, c.layer, c.index);
        case K::Bias: break;
    }
    return {};
}

torch::Tensor headStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& a, int64_t row, int layer,
                               int64_t head) {
    c10::InferenceMode guard;
    if (layer < 0 || layer >= model.config().numLayers || head < 0 || head >= model.config().numHeads)
        throw Error("head " + std::to_string(head) + " of block " + std::to_string(layer) + " does not exist.");
    const int64_t hd = model.config().headDim;
    const torch::Tensor z = at(model, result, {Value::AttentionHeadOutputs, layer}, row, a.position).index({head});  // [head_dim]
    torch::Tensor v = torch::matmul(model.layer(layer)[Module::OProj].weight.to(torch::kCPU, torch::kFloat32).narrow(1, head * hd, hd), z);
    if (a.attentionBranchGain.defined()) v = a.attentionBranchGain.index({layer}) * v;
    return v;
}

torch::Tensor neuronStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& a, int64_t row, int layer,
                                 int64_t neuron) {
    c10::InferenceMode guard;
    if (layer < 0 || layer >= model.config().numLayers || neuron < 0 || neuron >= model.config().intermediateSize ||
        !model.hasValueAt(Value::MlpNeurons, layer))
        throw Error("neuron " + std::to_string(neuron) + " of block " + std::to_string(layer) + " does not exist.");
    const double act = at(model, result, {Value::MlpNeurons, layer}, row, a.position)[neuron].item<double>();
    torch::Tensor v = model.layer(layer)[Module::DownProj].weight.index({Slice(), neuron}).to(torch::kCPU, torch::kFloat32) * act;
    if (a.mlpBranchGain.defined()) v = a.mlpBranchGain.index({layer}) * v;
    return v;
}

}  // namespace nnscope
