// SPDX-License-Identifier: MIT
#include "core/analysis/routing.h"

#include "core/analysis/analysis.h"
#include "core/model/error.h"

#include <algorithm>

using namespace torch::indexing;

namespace nnscope {
namespace {

std::vector<int> sparseBlocks(const Model& model) {
    std::vector<int> blocks;
    for (int i = 0; i < model.config().numLayers; ++i)
        if (model.hasValueAt(Value::ExpertIndices, i)) blocks.push_back(i);
    return blocks;
}

std::vector<int> requireSparseBlocks(const Model& model, const char* what) {
    std::string why;
    if (!hasExperts(model, &why)) throw Error(std::string(what) + ": " + why);
    return sparseBlocks(model);
}

/// The mixture's own (unweighted) values of block `layer` at one prompt: indices int64 [length, k], weights and outputs
/// float32 [length, k] and [length, k, hidden].
struct BlockChoice {
    torch::Tensor indices, weights, outputs;
};
BlockChoice blockChoice(const Model& model, const TraceResult& result, int layer, int64_t row) {
    return {promptValue(model, result, {Value::ExpertIndices, layer}, row).to(torch::kInt64),
            promptValue(model, result, {Value::ExpertWeights, layer}, row), promptValue(model, result, {Value::ExpertOutputs, layer}, row)};
}

void checkExpert(const Model& model, int layer, int64_t expert, const char* what) {
    if (layer < 0 || layer >= model.config().numLayers || !model.hasValueAt(Value::ExpertIndices, layer))
        throw Error(std::string(what) + ": block " + std::to_string(layer) + " has no experts" +
                    (layer >= 0 && layer < model.config().numLayers ? " (its MLP is dense)." : " (it is out of range)."));
    const int64_t e = model.config().moe.numExperts;
    if (expert < 0 || expert >= e)
        throw Error(std::string(what) + ": expert " + std::to_string(expert) + " is out of range (block " + std::to_string(layer) +
                    " has experts 0 to " + std::to_string(e - 1) + ").");
}

/// The MLP branch norm's frozen map (Gemma-style post-feedforward norm) of `a` at block `layer` applied to v, without its
/// bias; v itself where the family has no such norm.
torch::Tensor throughMlpBranchNorm(const Model& model, const LogitAttribution& a, int layer, torch::Tensor v) {
    if (!a.mlpBranchGain.defined()) return v;
    if (model.family().norm == NormKind::LayerNorm) v = v - v.mean(-1, true);
    return a.mlpBranchGain.index({layer}) * v;
}

}  // namespace

bool hasExperts(const Model& model, std::string* whyNot) {
    if (model.family().experts && model.config().moe.numExperts > 0 && !sparseBlocks(model).empty()) return true;
    if (whyNot)
        *whyNot = "this model (" + model.config().modelType + ") has no mixture of experts: every block's MLP is dense, so there is no "
                  "routing to show.";
    return false;
}

std::vector<ValueKey> routingValueKeys(const Model& model) {
    if (!hasExperts(model)) return {};
    std::vector<ValueKey> keys = attributionValueKeys(model);
    for (int i : sparseBlocks(model)) {
        for (Value v : {Value::ExpertIndices, Value::ExpertWeights, Value::ExpertOutputs}) keys.push_back({v, i});
        if (model.hasValueAt(Value::SharedExpertOutput, i)) keys.push_back({Value::SharedExpertOutput, i});
    }
    return keys;
}

int ExpertRouting::rowOf(int block) const {
    const auto it = std::find(blocks.begin(), blocks.end(), block);
    return it == blocks.end() ? -1 : static_cast<int>(it - blocks.begin());
}

ExpertRouting expertRouting(const Model& model, const TraceResult& result, int64_t row) {
    c10::InferenceMode guard;
    ExpertRouting r;
    r.blocks = requireSparseBlocks(model, "routing");
    r.numExperts = model.config().moe.numExperts;
    r.topK = model.config().moe.topK;
    r.length = promptSpan(result.batch, row).length;
    const int64_t B = static_cast<int64_t>(r.blocks.size()), E = r.numExperts;
    r.indices = torch::zeros({B, r.length, r.topK}, torch::kInt64);
    r.weights = torch::zeros({B, r.length, r.topK});
    r.tokenCount = torch::zeros({B, E}, torch::kInt64);
    r.weightSum = torch::zeros({B, E});
    r.outputNorm = torch::zeros({B, E, r.length});
    for (int64_t b = 0; b < B; ++b) {
        const BlockChoice c = blockChoice(model, result, r.blocks[static_cast<size_t>(b)], row);
        r.indices.index_put_({b}, c.indices);
        r.weights.index_put_({b}, c.weights);
        // one-hot of the choice, [length, k, E]: a position counts once per expert (top-k picks distinct experts)
        const torch::Tensor onehot = torch::one_hot(c.indices, E).to(torch::kFloat32);
        r.tokenCount.index_put_({b}, onehot.sum(0).sum(0).to(torch::kInt64));
        r.weightSum.index_put_({b}, (onehot * c.weights.unsqueeze(-1)).sum(0).sum(0));
        // what each expert adds at each position, ‖weight · output‖ of the slot that chose it (top-k picks distinct
        // experts: at most one slot per expert and position; an edit of expert_indices that repeats one keeps one slot's),
        // scattered to [length, E]
        const torch::Tensor slotNorm = (c.outputs * c.weights.unsqueeze(-1)).norm(2, -1);  // [length, k]
        r.outputNorm.index_put_({b}, torch::zeros({r.length, E}).scatter_(1, c.indices, slotNorm).t());
    }
    return r;
}

ExpertAttribution expertLogitAttribution(const Model& model, const TraceResult& result, int64_t row, int64_t position, int64_t target,
                                         std::optional<int64_t> wrong, const BlockProgress& progress) {
    c10::InferenceMode guard;
    ExpertAttribution x;
    x.blocks = requireSparseBlocks(model, "expert attribution");
    x.attribution = directLogitAttribution(model, result, row, position, target, wrong, /*topNeuronCount=*/0, progress);
    const LogitAttribution& a = x.attribution;
    const int64_t B = static_cast<int64_t>(x.blocks.size()), E = model.config().moe.numExperts;
    x.experts = torch::zeros({B, E});
    x.chosen = torch::zeros({B, E}, torch::kBool);
    x.shared = torch::zeros({B});
    x.mlp = torch::zeros({B});
    for (int64_t b = 0; b < B; ++b) {
        const int layer = x.blocks[static_cast<size_t>(b)];
        const BlockChoice c = blockChoice(model, result, layer, row);
        const torch::Tensor idx = c.indices.index({a.position});  // [k]
        for (int64_t j = 0; j < idx.size(0); ++j) {
            const int64_t e = idx[j].item<int64_t>();
            const torch::Tensor v = throughMlpBranchNorm(model, a, layer, c.weights.index({a.position, j}) * c.outputs.index({a.position, j}));
            x.experts.index_put_({b, e}, x.experts.index({b, e}) + streamVectorShare(model, a, v));
            x.chosen.index_put_({b, e}, true);
        }
        if (model.hasValueAt(Value::SharedExpertOutput, layer)) {
            const torch::Tensor s = promptValue(model, result, {Value::SharedExpertOutput, layer}, row).index({a.position});
            x.shared.index_put_({b}, streamVectorShare(model, a, throughMlpBranchNorm(model, a, layer, s)));
        }
        x.mlp.index_put_({b}, a.mlp.index({layer}));
    }
    return x;
}

torch::Tensor expertStreamVector(const Model& model, const TraceResult& result, const LogitAttribution& a, int64_t row, int layer,
                                 int64_t expert) {
    c10::InferenceMode guard;
    checkExpert(model, layer, expert, "expert stream vector");
    const BlockChoice c = blockChoice(model, result, layer, row);
    const torch::Tensor mine = (c.indices.index({a.position}) == expert).to(torch::kFloat32);  // [k]
    const torch::Tensor v = ((mine * c.weights.index({a.position})).unsqueeze(-1) * c.outputs.index({a.position})).sum(0);
    return throughMlpBranchNorm(model, a, layer, v);
}

std::string forbidExpertEdit(const Model& model, int layer, int64_t expert) {
    checkExpert(model, layer, expert, "forbid expert");
    return valuePath(model.family(), {Value::RouterLogits, layer}) + "[:, :, " + std::to_string(expert) + "] = -inf";
}

}  // namespace nnscope
