// SPDX-License-Identifier: MIT
#include "core/run/patching.h"

#include "core/model/error.h"

#include <torch/csrc/autograd/autograd.h>  // torch::autograd::grad
#include <torch/types.h>

namespace nnscope {


namespace {

/// The patched value of a site and its path template; checks the prompts, the metric's ids and the head.
std::pair<Value, std::string> resolveSite(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                          const PatchingOptions& o) {
    if (clean.size() != corrupted.size())
        throw Error("activation patching needs prompts of the same length in tokens: the clean prompt has " +
                    std::to_string(clean.size()) + " and the corrupted one " + std::to_string(corrupted.size()) + ".");
    const int64_t V = model.config().vocabSize;
    for (int64_t id : {o.metric.answer, o.metric.wrong}) {
        if (id == -1 && o.metric.kind == PatchMetric::Kind::TargetProbability) continue;
        if (id < 0 || id >= V) throw Error("activation patching: the metric's token id " + std::to_string(id) + " is outside the vocabulary.");
    }
    switch (o.site) {
        case PatchSite::LayerOutput: return {Value::LayerOutput, "layers.{i}.layer_output"};
        case PatchSite::AttentionOutput: return {Value::AttentionOutput, "layers.{i}.self_attn.attention_output"};
        case PatchSite::MlpOutput: return {Value::MlpOutput, "layers.{i}.mlp.mlp_output"};
        case PatchSite::HeadOutput:
            if (o.head < 0 || o.head >= model.config().numHeads)
                throw Error("activation patching: head " + std::to_string(o.head) + " does not exist (the model has " +
                            std::to_string(model.config().numHeads) + ").");
            return {Value::AttentionHeadOutputs, "layers.{i}.self_attn.attention_head_outputs[:, :, " + std::to_string(o.head) + "]"};
    }
    return {Value::LayerOutput, "layers.{i}.layer_output"};
}

/// The metric as a differentiable scalar of logits [1, seq, vocab] (patchMetricValue is its value).
torch::Tensor metricTensor(const PatchMetric& m, const torch::Tensor& logits) {
    const torch::Tensor last = logits.index({0, -1}).to(torch::kFloat64);
    if (m.kind == PatchMetric::Kind::TargetProbability) return torch::softmax(last, -1)[m.answer];
    return last[m.answer] - last[m.wrong];
}

}  // namespace

double patchMetricValue(const PatchMetric& m, const torch::Tensor& logits) { return metricTensor(m, logits).item<double>(); }

namespace {

/// Keeps the site's value of every block with its autograd history: the stream is made a leaf that requires grad
/// where block 0 reads it, so every later value is differentiable.
/// The interventions apply as in a trace (before the site's value is kept), so the gradient runs through them.
class GradientTaps : public Taps {
public:
    GradientTaps(Value site, int layers, const Intervention* intervention)
        : site_(site), values_(static_cast<size_t>(layers)), intervention_(intervention) {}
    void tap(Value v, int layer, torch::Tensor& t) override {
        if (v == Value::LayerInput && layer == 0) t = t.detach().requires_grad_(true);
        if (intervention_ && intervention_->touches(v, layer)) intervention_->apply(v, layer, t);
        if (v == site_ && layer >= 0) values_[static_cast<size_t>(layer)] = t;
    }
    const std::vector<torch::Tensor>& values() const { return values_; }

private:
    Value site_;
    std::vector<torch::Tensor> values_;
    const Intervention* intervention_;
};

/// The session's interventions, then the patch: one pass's interventions in that order (an EditList applies its own
/// edits before the interventions added to it, so both go in as added ones).
std::shared_ptr<const Intervention> thenPatch(const std::shared_ptr<const Intervention>& session, std::shared_ptr<const Intervention> patch) {
    if (!session) return patch;
    auto both = std::make_shared<EditList>();
    both->add(session);
    both->add(std::move(patch));
    return both;
}

}  // namespace

PatchingResult activationPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                  const PatchingOptions& o) {
    const int L = static_cast<int>(model.config().numLayers);
    const int64_t S = static_cast<int64_t>(clean.size());
    const auto [value, site] = resolveSite(model, clean, corrupted, o);
    TraceOptions saveClean;
    saveClean.cancel = o.cancel;
    saveClean.intervention = o.intervention;
    for (int i = 0; i < L; ++i) saveClean.save.push_back({value, i});
    saveClean.save.push_back({Value::Logits, -1});
    const TraceResult cleanRun = trace(model, batchFromIds({clean}), saveClean);
    TraceOptions plain;
    plain.cancel = o.cancel;
    plain.intervention = o.intervention;
    plain.save = {{Value::Logits, -1}};
    const Batch corruptedBatch = batchFromIds({corrupted});
    const TraceResult corruptedRun = trace(model, corruptedBatch, plain);
    PatchingResult r;
    r.site = site;
    r.interventions = o.interventionTexts;
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
            run.intervention = thenPatch(o.intervention, edits);
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

PatchingResult attributionPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                   const PatchingOptions& o) {
    const int L = static_cast<int>(model.config().numLayers);
    const int64_t S = static_cast<int64_t>(clean.size());
    const auto [value, site] = resolveSite(model, clean, corrupted, o);
    PatchingResult r;
    r.site = site;
    r.interventions = o.interventionTexts;
    if (model.tokenizer())
        for (int64_t id : corrupted) r.tokens.push_back(model.tokenizer()->tokenLabel(id));
    if (o.progress) o.progress(0, 3);
    TraceOptions saveClean;
    saveClean.cancel = o.cancel;
    saveClean.intervention = o.intervention;
    for (int i = 0; i < L; ++i) saveClean.save.push_back({value, i});
    saveClean.save.push_back({Value::Logits, -1});
    const TraceResult cleanRun = trace(model, batchFromIds({clean}), saveClean);
    r.clean = patchMetricValue(o.metric, cleanRun.value({Value::Logits, -1}));
    if (o.progress) o.progress(1, 3);
    if (o.cancel && o.cancel->load()) throw Cancelled{};
    // the corrupted run with autograd on, then d metric / d site value for every block at once
    c10::InferenceMode autograd(false);
    torch::AutoGradMode enable(true);
    GradientTaps taps(value, L, o.intervention.get());
    const Batch corruptedBatch = batchFromIds({corrupted});
    if (o.intervention) o.intervention->begin(PassPositions::ofPrompts({S}, S));
    const torch::Tensor metric = metricTensor(o.metric, model.forward(corruptedBatch.inputIds, corruptedBatch.attentionMask, &taps));
    r.corrupted = metric.item<double>();
    if (o.progress) o.progress(2, 3);
    std::vector<torch::Tensor> inputs;
    for (const auto& t : taps.values()) {
        if (!t.defined() || !t.requires_grad())
            throw Error("attribution patching: " + site + " is not differentiable in this pass (the family computes it outside the "
                        "gradient's path).");
        inputs.push_back(t);
    }
    const auto grads = torch::autograd::grad({metric}, inputs, /*grad_outputs=*/{}, /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
    r.grid.assign(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(S), 0.0));
    for (int i = 0; i < L; ++i) {
        torch::NoGradGuard noGrad;
        const torch::Tensor a = inputs[static_cast<size_t>(i)].detach().to(torch::kFloat64);
        const torch::Tensor delta = cleanRun.value({value, i}).to(torch::kFloat64) - a;
        const torch::Tensor g = grads[static_cast<size_t>(i)].defined() ? grads[static_cast<size_t>(i)].to(torch::kFloat64) : torch::zeros_like(a);
        torch::Tensor perPosition = (g * delta).index({0});  // [seq, ...]
        if (o.site == PatchSite::HeadOutput) perPosition = perPosition.index({torch::indexing::Slice(), o.head});
        perPosition = perPosition.reshape({S, -1}).sum(-1);
        for (int64_t p = 0; p < S; ++p) r.grid[static_cast<size_t>(i)][static_cast<size_t>(p)] = r.corrupted + perPosition[p].item<double>();
    }
    if (o.progress) o.progress(3, 3);
    return r;
}

double gridCorrelation(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
    std::vector<double> x, y;
    if (a.size() != b.size()) throw Error("gridCorrelation: the grids have different numbers of rows.");
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) throw Error("gridCorrelation: row " + std::to_string(i) + " differs in length.");
        x.insert(x.end(), a[i].begin(), a[i].end());
        y.insert(y.end(), b[i].begin(), b[i].end());
    }
    const double n = static_cast<double>(x.size());
    if (x.empty()) return std::nan("");
    double mx = 0, my = 0;
    for (size_t k = 0; k < x.size(); ++k) {
        mx += x[k] / n;
        my += y[k] / n;
    }
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t k = 0; k < x.size(); ++k) {
        sxy += (x[k] - mx) * (y[k] - my);
        sxx += (x[k] - mx) * (x[k] - mx);
        syy += (y[k] - my) * (y[k] - my);
    }
    if (sxx <= 0 || syy <= 0) return std::nan("");
    return sxy / std::sqrt(sxx * syy);
}

}  // namespace nnscope
