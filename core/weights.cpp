// SPDX-License-Identifier: MIT
#include "weights.h"

#include "error.h"

namespace nnscope {

std::vector<WeightSpec> weightSchema(const Family& f, const ModelConfig& c) {
    std::vector<WeightSpec> out;
    const int64_t H = c.hiddenSize, I = c.intermediateSize, V = c.vocabSize, D = c.headDim;
    const int64_t QW = c.numHeads * D, KW = c.numKvHeads * D;
    auto add = [&](bool wanted, Weight w, int layer, Module m, std::vector<int64_t> shape, bool projection = false) {
        if (!wanted) return;
        std::string name = f.weightName(w, layer);
        if (name.empty())
            throw Error("internal: family " + f.modelType + " names no tensor for a weight its config switches on (role " +
                        std::to_string(static_cast<int>(w)) + ").");
        const bool transposed = projection && f.conv1dWeights && shape.size() == 2;
        if (transposed) std::swap(shape[0], shape[1]);
        out.push_back({w, layer, std::move(name), std::move(shape), transposed, m});
    };
    auto norm = [&](bool wanted, Weight w, Weight bias, int layer, Module m, int64_t dim, NormKind kind) {
        add(wanted, w, layer, m, {dim});
        add(wanted && kind == NormKind::LayerNorm, bias, layer, m, {dim});
    };
    add(true, Weight::EmbedTokens, -1, Module::EmbedTokens, {V, H});
    add(f.positions == PositionKind::Learned, Weight::PositionEmbeddings, -1, Module::PositionEmbeddings,
        {c.maxPositionEmbeddings, H});
    norm(true, Weight::FinalNorm, Weight::FinalNormBias, -1, Module::Norm, H, f.norm);
    add(!c.tieWordEmbeddings, Weight::LmHead, -1, Module::LmHead, {V, H});
    const BlockNorms& bn = f.blockNorms;
    const bool gated = f.mlp != MlpKind::Plain;
    for (int i = 0; i < c.numLayers; ++i) {
        norm(bn.beforeAttention, Weight::InputNorm, Weight::InputNormBias, i, Module::InputNorm, H, f.norm);
        norm(bn.beforeMlp, Weight::PostAttentionNorm, Weight::PostAttentionNormBias, i, Module::PostAttentionNorm, H, f.norm);
        norm(bn.afterAttention, Weight::AttentionOutputNorm, Weight::AttentionOutputNormBias, i, Module::AttentionOutputNorm, H,
             f.norm);
        norm(bn.afterMlp, Weight::MlpOutputNorm, Weight::MlpOutputNormBias, i, Module::MlpOutputNorm, H, f.norm);
        if (f.qkv == QkvLayout::Separate) {
            add(true, Weight::QProj, i, Module::QProj, {QW, H}, true);
            add(c.attentionBias, Weight::QProjBias, i, Module::QProj, {QW});
            add(true, Weight::KProj, i, Module::KProj, {KW, H}, true);
            add(c.attentionBias, Weight::KProjBias, i, Module::KProj, {KW});
            add(true, Weight::VProj, i, Module::VProj, {KW, H}, true);
            add(c.attentionBias, Weight::VProjBias, i, Module::VProj, {KW});
        } else {
            add(true, Weight::QkvProj, i, Module::QkvProj, {QW + 2 * KW, H}, true);
            add(c.attentionBias, Weight::QkvProjBias, i, Module::QkvProj, {QW + 2 * KW});
        }
        add(true, Weight::OProj, i, Module::OProj, {H, QW}, true);
        add(c.oProjBias, Weight::OProjBias, i, Module::OProj, {H});
        if (c.qkNorm) {
            const bool whole = f.qkNormScope == QkNormScope::WholeProjection;
            norm(true, Weight::QNorm, Weight::QNormBias, i, Module::QNorm, whole ? QW : D, f.qkNormKind);
            norm(true, Weight::KNorm, Weight::KNormBias, i, Module::KNorm, whole ? KW : D, f.qkNormKind);
        }
        if (f.mlp == MlpKind::GatedFused) {
            add(true, Weight::GateUpProj, i, Module::GateUpProj, {2 * I, H}, true);
            add(c.mlpBias, Weight::GateUpProjBias, i, Module::GateUpProj, {2 * I});
        } else {
            add(gated, Weight::GateProj, i, Module::GateProj, {I, H}, true);
            add(gated && c.mlpBias, Weight::GateProjBias, i, Module::GateProj, {I});
            add(true, Weight::UpProj, i, Module::UpProj, {I, H}, true);
            add(c.mlpBias, Weight::UpProjBias, i, Module::UpProj, {I});
        }
        add(true, Weight::DownProj, i, Module::DownProj, {H, I}, true);
        add(c.mlpBias, Weight::DownProjBias, i, Module::DownProj, {H});
        const bool xielu = c.hiddenAct == "xielu";
        add(xielu, Weight::ActAlphaP, i, Module::ActFn, {1});
        add(xielu, Weight::ActAlphaN, i, Module::ActFn, {1});
        add(xielu, Weight::ActBeta, i, Module::ActFn, {1});
        add(xielu, Weight::ActEps, i, Module::ActFn, {1});
    }
    return out;
}

}  // namespace nnscope
