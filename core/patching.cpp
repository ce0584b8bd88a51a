// SPDX-License-Identifier: MIT
#include "patching.h"

#include "error.h"

#include <torch/torch.h>

namespace nnscope {

double patchMetricValue(const PatchMetric& m, const torch::Tensor& logits) {
    auto last = logits.index({0, -1}).to(torch::kFloat64);
    if (m.kind == PatchMetric::Kind::TargetProbability) return torch::softmax(last, -1)[m.answer].item<double>();
    return (last[m.answer] - last[m.wrong]).item<double>();
}

PatchingResult activationPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                  const PatchingOptions& o) {
    if (clean.size() != corrupted.size())
        throw Error("activation patching needs prompts of the same length in tokens: the clean prompt has " +
                    std::to_string(clean.size()) + " and the corrupted one " + std::to_string(corrupted.size()) + ".");
    const int64_t V = model.config().vocabSize;
    for (int64_t id : {o.metric.answer, o.metric.wrong}) {
        if (id == -1 && o.metric.kind == PatchMetric::Kind::TargetProbability) continue;
        if (id < 0 || id >= V) throw Error("activation patching: the metric's token id " + std::to_string(id) + " is outside the vocabulary.");
    }
    const int L = static_cast<int>(model.config().numLayers);
    const int64_t S = static_cast<int64_t>(clean.size());
    Value value = Value::LayerOutput;
    std::string site = "layers.{i}.layer_output";
    switch (o.site) {
        case PatchSite::LayerOutput: break;
        case PatchSite::AttentionOutput: value = Value::AttentionOutput; site = "layers.{i}.self_attn.attention_output"; break;
        case PatchSite::MlpOutput: value = Value::MlpOutput; site = "layers.{i}.mlp.mlp_output"; break;
        case PatchSite::HeadOutput:
            value = Value::AttentionHeadOutputs;
            site = "layers.{i}.self_attn.attention_head_outputs[:, :, " + std::to_string(o.head) + "]";
            if (o.head < 0 || o.head >= model.config().numHeads)
                throw Error("activation patching: head " + std::to_string(o.head) + " does not exist (the model has " +
                            std::to_string(model.config().numHeads) + ").");
            break;
    }
    TraceOptions saveClean;
    saveClean.cancel = o.cancel;
    for (int i = 0; i < L; ++i) saveClean.save.push_back({value, i});
    saveClean.save.push_back({Value::Logits, -1});
    const TraceResult cleanRun = trace(model, batchFromIds({clean}), saveClean);
    TraceOptions plain;
    plain.cancel = o.cancel;
    plain.save = {{Value::Logits, -1}};
    const Batch corruptedBatch = batchFromIds({corrupted});
    const TraceResult corruptedRun = trace(model, corruptedBatch, plain);
    PatchingResult r;
    r.site = site;
    r.clean = patchMetricValue(o.metric, cleanRun.value({Value::Logits, -1}));
    r.corrupted = patchMetricValue(o.metric, corruptedRun.value({Value::Logits, -1}));
    if (model.tokenizer())
        for (int64_t id : corrupted) r.tokens.push_back(model.tokenizer()->tokenLabel(id));
    r.grid.assign(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(S), 0.0));
    int done = 0;
    for (int i = 0; i < L; ++i) {
        const torch::Tensor source = cleanRun.value({value, i});
        for (int64_t p = 0; p < S; ++p) {
            if (o.progress) o.progress(done, static_cast<int>(L * S));
            IndexItem all, pos, head;
            pos.kind = IndexItem::Integer;
            pos.start = p;
            std::vector<IndexItem> index = {all, pos};
            if (o.site == PatchSite::HeadOutput) {
                head.kind = IndexItem::Integer;
                head.start = o.head;
                index.push_back(head);
            }
            auto edits = std::make_shared<EditList>();
            std::vector<torch::indexing::TensorIndex> tidx = {torch::indexing::Slice(), p};
            if (o.site == PatchSite::HeadOutput) tidx.emplace_back(static_cast<int64_t>(o.head));
            edits->patch({value, i}, index, source.index(tidx).to(torch::kFloat32));
            TraceOptions run = plain;
            run.intervention = edits;
            const TraceResult patched = trace(model, corruptedBatch, run);
            r.grid[static_cast<size_t>(i)][static_cast<size_t>(p)] = patchMetricValue(o.metric, patched.value({Value::Logits, -1}));
            ++done;
        }
    }
    if (o.progress) o.progress(done, static_cast<int>(L * S));
    return r;
}

PatchSite parsePatchSite(const std::string& text, int* head) {
    if (text == "layer_output") return PatchSite::LayerOutput;
    if (text == "attention_output") return PatchSite::AttentionOutput;
    if (text == "mlp_output") return PatchSite::MlpOutput;
    if (text.rfind("head:", 0) == 0) {
        const std::string number = text.substr(5);
        if (!number.empty() && number.find_first_not_of("0123456789") == std::string::npos) {
            if (head) *head = std::stoi(number);
            return PatchSite::HeadOutput;
        }
        throw Error("--site head:H needs a head number, not '" + number + "'.");
    }
    throw Error("--site must be layer_output, attention_output, mlp_output or head:H, not '" + text + "'.");
}

}  // namespace nnscope
