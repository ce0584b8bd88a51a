// SPDX-License-Identifier: MIT
#include "core/analysis/contribution.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"
#include "core/model/taps.h"

#include <torch/types.h>

#include <algorithm>
#include <cfloat>
#include <optional>
#include <set>

using namespace torch::indexing;

namespace nnscope {
namespace {

/// At most this many floats of source terms z_{i←j} at once: 16M floats, 64 MB (plus one temporary as large).
constexpr int64_t kChunkFloats = int64_t(1) << 24;

/// One block's attention of one prompt, everything its source terms are made of (float32).
struct AttentionPieces {
    torch::Tensor x;        ///< [length, hidden]: the block's input
    torch::Tensor y;        ///< [length, hidden]: x + the attention's output as the stream receives it
    torch::Tensor pattern;  ///< [num_heads, length(query), length(key)]
    /// [num_heads, length, hidden]: W_O,h v_{h,j}, what head h would write from j with all its attention there
    /// (centred when the branch norm is a LayerNorm: centring is linear, so it can go first)
    torch::Tensor written;
    torch::Tensor channelGain;  ///< [hidden]: the branch norm's weight (Gemma: 1 + weight); undefined without a branch norm
    torch::Tensor scale;        ///< [length]: the branch norm's frozen 1 / RMS (1 / std) per query; undefined without
    torch::Tensor bias;         ///< [length, hidden]: the part of the update no token owns (o_proj's bias, the branch norm's)
};

AttentionPieces attentionPieces(const Model& model, const TraceResult& result, int64_t row, int layer) {
    const ModelConfig& c = model.config();
    const Family& fam = model.family();
    const LayerWeights& lw = model.layer(layer);
    const int64_t H = c.numHeads, D = c.headDim, d = c.hiddenSize;
    AttentionPieces p;
    p.x = promptValue(model, result, {Value::LayerInput, layer}, row);
    p.pattern = promptValue(model, result, {Value::AttentionProbabilities, layer}, row);
    const torch::Tensor values = promptValue(model, result, {Value::AttentionValues, layer}, row);  // [kv, length, D]
    const torch::Tensor attnOut = promptValue(model, result, {Value::AttentionOutput, layer}, row);
    const int64_t T = p.x.size(0);
    // repeat_kv: query head h reads key/value head h / (num_heads / num_kv_heads)
    const torch::Tensor v = values.repeat_interleave(H / c.numKvHeads, /*dim=*/0);                             // [H, T, D]
    const torch::Tensor wo = lw[Module::OProj].weight.to(torch::kFloat32).reshape({d, H, D}).permute({1, 2, 0}).contiguous();  // [H, D, d]
    p.written = torch::bmm(v, wo);                                                                             // [H, T, d]
    torch::Tensor bias = lw[Module::OProj].bias.defined() ? lw[Module::OProj].bias.to(torch::kFloat32) : torch::zeros({d});
    if (fam.blockNorms.afterAttention) {
        // the branch norm with its scale frozen at the real pass's attention_output (as core/analysis/attribution.cpp)
        const torch::Tensor w = lw[Module::AttentionOutputNorm].weight.defined() ? lw[Module::AttentionOutputNorm].weight.to(torch::kFloat32) : torch::ones({d});
        const bool centred = fam.norm == NormKind::LayerNorm;
        p.scale = promptValue(model, result, {Value::NativeAttentionOutputNormScale, layer}, row);  // [T], the pass's own
        p.channelGain = fam.norm == NormKind::RMSNormPlusOne ? 1.0 + w : w;
        if (centred) {
            p.written = p.written - p.written.mean(-1, true);
            bias = bias - bias.mean();
        }
        p.bias = p.scale.unsqueeze(1) * p.channelGain * bias;  // [T, d]
        if (lw[Module::AttentionOutputNorm].bias.defined()) p.bias = p.bias + lw[Module::AttentionOutputNorm].bias.to(torch::kFloat32);
        p.y = p.x + promptValue(model, result, {Value::NativeAttentionOutputNormOutput, layer}, row);
    } else {
        p.bias = bias.expand({T, d});
        p.y = p.x + attnOut;
    }
    return p;
}

/// z_{i←j} for queries [q0, q1) and sources [0, jEnd): [q1 - q0, jEnd, hidden], through the frozen branch norm.
torch::Tensor sourceTerms(const AttentionPieces& p, int64_t q0, int64_t q1, int64_t jEnd) {
    const torch::Tensor a = p.pattern.index({Slice(), Slice(q0, q1), Slice(0, jEnd)}).permute({2, 1, 0});  // [j, q, H]
    const torch::Tensor u = p.written.index({Slice(), Slice(0, jEnd)}).permute({1, 0, 2});                 // [j, H, d]
    torch::Tensor z = torch::bmm(a, u).permute({1, 0, 2});                                                 // [q, j, d]
    if (p.scale.defined()) z = z * (p.scale.index({Slice(q0, q1)}).unsqueeze(1) * p.channelGain).unsqueeze(1);
    return z;
}

/// The proportional proximity max(0, ‖s‖₁ − ‖s − part‖₁) over the last axis.
torch::Tensor proximity(const torch::Tensor& s, const torch::Tensor& part) {
    return (s.abs().sum(-1) - (s - part).abs().sum(-1)).clamp_min(0);
}

int64_t promptPosition(const TraceResult& result, int64_t row, int64_t position, const char* what) {
    const PromptSpan span = promptSpan(result.batch, row);
    const int64_t p = position < 0 ? position + span.length : position;
    if (p < 0 || p >= span.length)
        throw Error(std::string(what) + ": position " + std::to_string(position) + " is outside the prompt's " +
                    std::to_string(span.length) + " tokens.");
    return p;
}

void checkLayer(const Model& model, int layer, const char* what) {
    if (layer < 0 || layer >= model.config().numLayers)
        throw Error(std::string(what) + ": block " + std::to_string(layer) + " does not exist (the model has " +
                    std::to_string(model.config().numLayers) + ").");
}

/// Each head's importance for the edge from → to, from a block's pieces and the row's normaliser.
torch::Tensor headImportancesOf(const AttentionPieces& p, double total, int64_t from, int64_t to) {
    torch::Tensor z = p.pattern.index({Slice(), to, from}).unsqueeze(1) * p.written.index({Slice(), from});  // [H, d]
    if (p.scale.defined()) z = z * (p.scale[to] * p.channelGain);
    return proximity(p.y.index({to}), z) / std::max(total, static_cast<double>(FLT_MIN));
}

}  // namespace

std::vector<ValueKey> contributionValueKeys(const Model& model) {
    const BlockNorms& bn = model.family().blockNorms;
    std::vector<ValueKey> keys;
    for (int i = 0; i < model.config().numLayers; ++i) {
        for (Value v : {Value::LayerInput, Value::AttentionProbabilities, Value::AttentionValues, Value::AttentionOutput, Value::MlpOutput})
            keys.push_back({v, i});
        if (bn.afterAttention) {
            keys.push_back({Value::NativeAttentionOutputNormOutput, i});
            keys.push_back({Value::NativeAttentionOutputNormScale, i});
        }
        if (bn.afterMlp) keys.push_back({Value::NativeMlpOutputNormOutput, i});
    }
    return keys;
}

TokenContributions tokenContributions(const Model& model, const TraceResult& result, int64_t row, const ContributionOptions& options) {
    c10::InferenceMode guard;
    const ModelConfig& c = model.config();
    const BlockNorms& bn = model.family().blockNorms;
    const int n = static_cast<int>(c.numLayers);
    const int64_t T = promptSpan(result.batch, row).length, H = c.numHeads, d = c.hiddenSize;
    TokenContributions out;
    out.length = T;
    out.attention = torch::zeros({n, T, T});
    out.attentionResidual = torch::zeros({n, T});
    out.attentionTotal = torch::zeros({n, T});
    out.mlp = torch::zeros({n, T});
    out.mlpResidual = torch::zeros({n, T});
    out.headNorms = torch::zeros({n, H, T, T});
    const int64_t chunk = std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(1, T * d));
    const torch::Tensor causal = torch::ones({T, T}).tril();
    for (int l = 0; l < n; ++l) {
        options.step(l, n);
        const AttentionPieces p = attentionPieces(model, result, row, l);
        // attention: each source token and the residual, in y_i
        const torch::Tensor residual = proximity(p.y, p.x);  // [T]
        for (int64_t q0 = 0; q0 < T; q0 += chunk) {
            const int64_t q1 = std::min(T, q0 + chunk);
            const torch::Tensor z = sourceTerms(p, q0, q1, q1);                                       // [q, j <= q1, d]
            const torch::Tensor raw = proximity(p.y.index({Slice(q0, q1)}).unsqueeze(1), z) *
                                      causal.index({Slice(q0, q1), Slice(0, q1)});                  // [q, j]
            const torch::Tensor total = raw.sum(-1) + residual.index({Slice(q0, q1)});
            const torch::Tensor safe = total.clamp_min(FLT_MIN);
            out.attention.index_put_({l, Slice(q0, q1), Slice(0, q1)}, raw / safe.unsqueeze(1));
            out.attentionResidual.index_put_({l, Slice(q0, q1)}, residual.index({Slice(q0, q1)}) / safe);
            out.attentionTotal.index_put_({l, Slice(q0, q1)}, total);
        }
        // Kobayashi's norms: A_h[i, j] · ‖gain_i ⊙ W_O,h v_{h,j}‖₂, the gain's per-query scale factored out
        const torch::Tensor norms = (p.channelGain.defined() ? p.written * p.channelGain : p.written).norm(2, -1);  // [H, T]
        torch::Tensor hn = p.pattern * norms.unsqueeze(1);
        if (p.scale.defined()) hn = hn * p.scale.view({1, T, 1});
        out.headNorms.index_put_({l}, hn);
        // MLP: its output m and the stream y it is added to, in y + m
        const torch::Tensor m = promptValue(model, result, {bn.afterMlp ? Value::NativeMlpOutputNormOutput : Value::MlpOutput, l}, row);
        const torch::Tensor o = p.y + m;
        const torch::Tensor mlpRaw = proximity(o, m), resRaw = proximity(o, p.y);
        const torch::Tensor safe = (mlpRaw + resRaw).clamp_min(FLT_MIN);
        out.mlp.index_put_({l}, mlpRaw / safe);
        out.mlpResidual.index_put_({l}, resRaw / safe);
    }
    options.step(n, n);
    out.note = "Importances are Ferrando and Voita's proportional L1 proximity of each term to the stream it is added to";
    if (bn.afterAttention || bn.afterMlp)
        out.note += "; the branch norms after the attention and the MLP have their scale frozen at the real pass's value, so each "
                    "token's term goes through them linearly";
    if (c.parallelResidual)
        out.note += "; under the parallel residual the attention is weighed in input + attention_output, a stream the pass never "
                    "forms, and the MLP in the block's output";
    if (c.oProjBias) out.note += "; o_proj's bias belongs to no token and stays in the stream";
    out.note += ".";
    return out;
}

SourceTerms attentionSourceTerms(const Model& model, const TraceResult& result, int64_t row, int layer, int64_t positionIn) {
    c10::InferenceMode guard;
    checkLayer(model, layer, "attentionSourceTerms");
    const int64_t i = promptPosition(result, row, positionIn, "attentionSourceTerms");
    const AttentionPieces p = attentionPieces(model, result, row, layer);
    SourceTerms s;
    s.terms = sourceTerms(p, i, i + 1, i + 1).index({0}).contiguous();
    s.bias = p.bias.index({i}).contiguous();
    s.residual = p.x.index({i}).contiguous();
    s.stream = p.y.index({i}).contiguous();
    return s;
}

torch::Tensor headImportances(const Model& model, const TraceResult& result, const TokenContributions& contributions, int64_t row,
                              int layer, int64_t from, int64_t to) {
    c10::InferenceMode guard;
    checkLayer(model, layer, "headImportances");
    const int64_t i = promptPosition(result, row, to, "headImportances");
    if (from < 0 || from > i)
        throw Error("headImportances: source " + std::to_string(from) + " is not a position the query " + std::to_string(i) + " attends to.");
    const AttentionPieces p = attentionPieces(model, result, row, layer);
    return headImportancesOf(p, contributions.attentionTotal[layer][i].item<double>(), from, i);
}

const char* edgeKindName(ContributionEdge::Kind kind) {
    switch (kind) {
    case ContributionEdge::Kind::Attention: return "attention";
    case ContributionEdge::Kind::AttentionResidual: return "attention_residual";
    case ContributionEdge::Kind::Mlp: return "mlp";
    case ContributionEdge::Kind::MlpResidual: return "mlp_residual";
    }
    return "?";
}

ContributionGraph contributionGraph(const Model& model, const TraceResult& result, int64_t row, const GraphOptions& options) {
    // check the options before the (long) computation
    promptPosition(result, row, options.position, "graph");
    if (!(options.threshold >= 0 && options.threshold <= 1))
        throw Error("graph: the threshold must be between 0 and 1 (the paper's is 0.04), not " + std::to_string(options.threshold) + ".");
    return contributionGraph(model, result, row, tokenContributions(model, result, row), options);
}

ContributionGraph contributionGraph(const Model& model, const TraceResult& result, int64_t row, TokenContributions contributions,
                                    const GraphOptions& options) {
    c10::InferenceMode guard;
    using Kind = ContributionEdge::Kind;
    const double tau = options.threshold;
    if (!(tau >= 0 && tau <= 1))
        throw Error("graph: the threshold must be between 0 and 1 (the paper's is 0.04), not " + std::to_string(tau) + ".");
    if (options.topHeads < 0) throw Error("graph: the number of heads to list must not be negative.");
    ContributionGraph g;
    g.position = promptPosition(result, row, options.position, "graph");
    g.threshold = tau;
    if (contributions.length != promptSpan(result.batch, row).length)
        throw Error("graph: the contributions were computed for a prompt of " + std::to_string(contributions.length) + " tokens, not this row's " +
                    std::to_string(promptSpan(result.batch, row).length) + ".");
    const auto att = contributions.attention.accessor<float, 3>();
    const auto res = contributions.attentionResidual.accessor<float, 2>();
    const auto mlp = contributions.mlp.accessor<float, 2>();
    const auto mlpRes = contributions.mlpResidual.accessor<float, 2>();
    std::set<int64_t> reached{g.position};  // positions reached at the current block's output
    for (int l = static_cast<int>(model.config().numLayers) - 1; l >= 0 && !reached.empty(); --l) {
        std::set<int64_t> mid;  // reached after the attention
        for (int64_t i : reached) {
            if (mlp[l][i] >= tau) g.edges.push_back({Kind::Mlp, l, i, i, mlp[l][i], {}});
            if (mlpRes[l][i] >= tau) g.edges.push_back({Kind::MlpResidual, l, i, i, mlpRes[l][i], {}});
            if (mlp[l][i] >= tau || mlpRes[l][i] >= tau) mid.insert(i);
        }
        std::set<int64_t> below;  // reached at the block's input
        std::optional<AttentionPieces> pieces;  // loaded once per block, for the heads of its kept edges
        for (int64_t i : mid) {
            if (res[l][i] >= tau) {
                g.edges.push_back({Kind::AttentionResidual, l, i, i, res[l][i], {}});
                below.insert(i);
            }
            for (int64_t j = 0; j <= i; ++j) {
                if (!(att[l][i][j] >= tau)) continue;
                ContributionEdge e{Kind::Attention, l, j, i, att[l][i][j], {}};
                below.insert(j);
                if (options.topHeads > 0) {
                    if (!pieces) pieces = attentionPieces(model, result, row, l);
                    const torch::Tensor w = headImportancesOf(*pieces, contributions.attentionTotal[l][i].item<double>(), j, i);
                    const torch::Tensor norms = contributions.headNorms.index({l, Slice(), i, j});
                    std::vector<HeadShare> heads;
                    for (int64_t h = 0; h < w.size(0); ++h) heads.push_back({h, w[h].item<double>(), norms[h].item<double>()});
                    std::sort(heads.begin(), heads.end(), [](const HeadShare& a, const HeadShare& b) {
                        return a.weight != b.weight ? a.weight > b.weight : a.norm > b.norm;
                    });
                    heads.resize(std::min<size_t>(heads.size(), static_cast<size_t>(options.topHeads)));
                    e.heads = std::move(heads);
                }
                g.edges.push_back(std::move(e));
            }
        }
        reached = std::move(below);
    }
    g.contributions = std::move(contributions);
    return g;
}

}  // namespace nnscope
