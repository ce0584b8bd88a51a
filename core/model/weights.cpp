// SPDX-License-Identifier: MIT
#include "core/model/weights.h"

#include "core/io/safetensors.h"
#include "core/model/error.h"

namespace nnscope {

std::vector<WeightSpec> weightSchema(const Family& f, const ModelConfig& c) {
    std::vector<WeightSpec> out;
    const int64_t H = c.hiddenSize, I = c.intermediateSize, V = c.vocabSize, D = c.headDim;
    const int64_t QW = c.numHeads * D, KW = c.numKvHeads * D;
    auto add = [&](bool wanted, Module m, Param p, int layer, std::vector<int64_t> shape, bool projection = false) {
        if (!wanted) return;
        std::string name = f.tensorName({m, p}, layer);
        if (name.empty())
            throw Error("internal: family " + f.modelType + " has no module " + std::to_string(static_cast<int>(m)) +
                        " in its module table, and its config needs one.");
        const bool transposed = projection && f.conv1dWeights && shape.size() == 2;
        if (transposed) std::swap(shape[0], shape[1]);
        WeightSpec spec;
        spec.key = {m, p};
        spec.layer = layer;
        spec.name = std::move(name);
        spec.shape = std::move(shape);
        spec.transposed = transposed;
        out.push_back(std::move(spec));
    };
    // A linear map [out, in] and its bias [out] where `biased`.
    auto linear = [&](bool wanted, Module m, int layer, int64_t outDim, int64_t inDim, bool biased) {
        add(wanted, m, Param::Weight, layer, {outDim, inDim}, true);
        add(wanted && biased, m, Param::Bias, layer, {outDim});
    };
    auto norm = [&](bool wanted, Module m, int layer, int64_t dim, NormKind kind) {
        add(wanted, m, Param::Weight, layer, {dim});
        add(wanted && kind == NormKind::LayerNorm, m, Param::Bias, layer, {dim});
    };
    add(true, Module::EmbedTokens, Param::Weight, -1, {V, H});
    add(f.positions == PositionKind::Learned, Module::PositionEmbeddings, Param::Weight, -1, {c.maxPositionEmbeddings, H});
    norm(true, Module::Norm, -1, H, f.norm);
    add(!c.tieWordEmbeddings, Module::LmHead, Param::Weight, -1, {V, H});
    const BlockNorms& bn = f.blockNorms;
    const bool gated = f.mlp != MlpKind::Plain;
    for (int i = 0; i < c.numLayers; ++i) {
        norm(bn.beforeAttention, Module::InputNorm, i, H, f.norm);
        norm(bn.beforeMlp, Module::PostAttentionNorm, i, H, f.norm);
        norm(bn.afterAttention, Module::AttentionOutputNorm, i, H, f.norm);
        norm(bn.afterMlp, Module::MlpOutputNorm, i, H, f.norm);
        if (c.mla.enabled) {
            // Multi-head latent attention: biases under attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj only.
            const MlaConfig& a = c.mla;
            const int64_t N = c.numHeads, QK = c.qkHeadDim();
            linear(a.qLoraRank == 0, Module::QProj, i, N * QK, H, false);
            linear(a.qLoraRank > 0, Module::QAProj, i, a.qLoraRank, H, c.attentionBias);
            norm(a.qLoraRank > 0, Module::QALayernorm, i, a.qLoraRank, NormKind::RMSNorm);
            linear(a.qLoraRank > 0, Module::QBProj, i, N * QK, a.qLoraRank, false);
            linear(true, Module::KvAProjWithMqa, i, a.kvLoraRank + a.qkRopeHeadDim, H, c.attentionBias);
            norm(true, Module::KvALayernorm, i, a.kvLoraRank, NormKind::RMSNorm);
            linear(true, Module::KvBProj, i, N * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank, false);
            linear(true, Module::OProj, i, H, N * a.vHeadDim, c.oProjBias);
        } else {
            const bool separate = f.qkv == QkvLayout::Separate;
            linear(separate, Module::QProj, i, QW, H, c.attentionBias);
            linear(separate, Module::KProj, i, KW, H, c.attentionBias);
            linear(separate, Module::VProj, i, KW, H, c.attentionBias);
            linear(!separate, Module::QkvProj, i, QW + 2 * KW, H, c.attentionBias);
            linear(true, Module::OProj, i, H, QW, c.oProjBias);
        }
        if (c.qkNorm) {
            const bool whole = f.qkNormScope == QkNormScope::WholeProjection;
            norm(true, Module::QNorm, i, whole ? QW : D, f.qkNormKind);
            norm(true, Module::KNorm, i, whole ? KW : D, f.qkNormKind);
        }
        if (f.experts && c.sparseMlp(i)) {
            // A mixture of experts: the router, every expert's three projections stacked [num_experts, out, in] (stored one
            // tensor per expert, or stacked as transformers holds them), the shared expert and its gate.
            const int64_t E = c.moe.numExperts, EI = c.moe.expertIntermediateSize, S = c.moe.sharedExpertIntermediateSize;
            add(true, Module::Router, Param::Weight, i, {E, H});
            add(c.moe.correctionBias, Module::Router, Param::CorrectionBias, i, {E});
            const std::string experts = f.nativeModulePath(Module::Experts, i);
            auto stacked = [&](Module m, int64_t outDim, int64_t inDim, const std::string& fusedLeaf, int chunk) {
                WeightSpec spec;
                spec.key = {m, Param::Weight};
                spec.layer = i;
                spec.name = experts + "." + f.modules.at(m).native;
                spec.shape = {E, outDim, inDim};
                for (int64_t e = 0; e < E; ++e) spec.parts.push_back(f.expertTensorName(m, i, e));
                spec.fused = experts + "." + fusedLeaf;
                spec.fusedShape = {E, chunk >= 0 ? 2 * outDim : outDim, inDim};
                spec.fusedChunk = chunk;
                out.push_back(std::move(spec));
            };
            stacked(Module::ExpertGateProj, EI, H, "gate_up_proj", 0);
            stacked(Module::ExpertUpProj, EI, H, "gate_up_proj", 1);
            stacked(Module::ExpertDownProj, H, EI, "down_proj", -1);
            // The shared expert is the family's dense MLP class (biased under mlp_bias: DeepSeek V2), behind a gate where
            // the family has one (Qwen2-MoE).
            linear(S > 0, Module::SharedGateProj, i, S, H, c.mlpBias);
            linear(S > 0, Module::SharedUpProj, i, S, H, c.mlpBias);
            linear(S > 0, Module::SharedDownProj, i, H, S, c.mlpBias);
            linear(S > 0 && f.hasModule(Module::SharedExpertGate), Module::SharedExpertGate, i, 1, H, false);
            continue;
        }
        const bool fused = f.mlp == MlpKind::GatedFused;
        linear(fused, Module::GateUpProj, i, 2 * I, H, c.mlpBias);
        linear(!fused && gated, Module::GateProj, i, I, H, c.mlpBias);
        linear(!fused, Module::UpProj, i, I, H, c.mlpBias);
        linear(true, Module::DownProj, i, H, I, c.mlpBias);
        const bool xielu = c.hiddenAct == "xielu";
        for (Param p : {Param::AlphaP, Param::AlphaN, Param::Beta, Param::Eps}) add(xielu, Module::ActFn, p, i, {1});
    }
    return out;
}

torch::Tensor readWeight(const WeightStore& store, const WeightSpec& spec) {
    if (spec.parts.empty()) return store.get(spec.name, spec.shape);
    if (spec.stackDim < 0 || spec.stackDim >= static_cast<int64_t>(spec.shape.size()) ||
        spec.shape[static_cast<size_t>(spec.stackDim)] != static_cast<int64_t>(spec.parts.size()))
        throw Error("internal: " + spec.name + " stacks " + std::to_string(spec.parts.size()) + " parts on an axis of another size.");
    if (!spec.fused.empty() && !store.contains(spec.parts.front()) && store.contains(spec.fused)) {
        const torch::Tensor whole = store.get(spec.fused, spec.fusedShape);
        return spec.fusedChunk < 0 ? whole : whole.chunk(2, 1)[static_cast<size_t>(spec.fusedChunk)];
    }
    std::vector<int64_t> partShape = spec.shape;
    partShape.erase(partShape.begin() + spec.stackDim);
    std::vector<torch::Tensor> parts;
    parts.reserve(spec.parts.size());
    for (const std::string& part : spec.parts) parts.push_back(store.get(part, partShape));
    return torch::stack(parts, spec.stackDim);
}

}  // namespace nnscope
