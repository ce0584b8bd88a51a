// SPDX-License-Identifier: MIT
#include "core/run/patching.h"

#include "core/model/error.h"

#include <torch/csrc/autograd/autograd.h>  // torch::autograd::grad
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

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
    if (o.metric.kind == PatchMetric::Kind::LogitDifference && o.metric.answer == o.metric.wrong) {
        const std::string name = model.tokenizer() ? "\"" + model.tokenizer()->tokenLabel(o.metric.answer) + "\" " : "";
        throw Error("activation patching: the answer and the wrong token are the same token, " + name + "(id " +
                    std::to_string(o.metric.answer) + "): their logit difference is 0 in every run. Give two different tokens, or "
                    "the answer alone for its probability.");
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
        case PatchSite::AllHeads: return {Value::AttentionHeadOutputs, "layers.{i}.self_attn.attention_head_outputs[:, :, {h}]"};
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

namespace {

/// Several patched runs in one batch: row r of the pass is the corrupted prompt with `value` of block rows[r].layer at
/// (position, head) replaced by the clean run's (what EditList::patch does to a one-row pass, row by row).
class RowPatches : public Intervention {
public:
    struct Row {
        int layer;
        int64_t position;
        int head;              ///< -1: the whole position
        torch::Tensor source;  ///< the clean value there: [hidden_size] or [head_dim]
    };
    RowPatches(Value value, std::vector<Row> rows) : value_(value), rows_(std::move(rows)) {}
    bool touches(Value v, int layer) const override {
        if (v != value_) return false;
        for (const auto& r : rows_)
            if (r.layer == layer) return true;
        return false;
    }
    void apply(Value v, int layer, torch::Tensor& t) const override {
        if (v != value_) return;
        torch::Tensor out;
        for (size_t r = 0; r < rows_.size(); ++r) {
            const Row& row = rows_[r];
            if (row.layer != layer) continue;
            if (!out.defined()) out = t.clone();  // never write into the pass's tensor (it may view weights)
            std::vector<torch::indexing::TensorIndex> index = {static_cast<int64_t>(r), row.position};
            if (row.head >= 0) index.emplace_back(static_cast<int64_t>(row.head));
            out.index_put_(index, row.source.to(out.scalar_type()));
        }
        if (out.defined()) t = out;
    }

private:
    Value value_;
    std::vector<Row> rows_;
};

/// The patched runs read the metric at the last position only: final_norm_output is cut to its last position, so
/// lm_head computes [batch, 1, vocab_size] instead of [batch, seq, vocab_size] (at a 128k vocabulary most of a short
/// prompt's pass). The last position's logits are the same within float32 rounding.
class LastPositionLogits : public Intervention {
public:
    bool touches(Value v, int layer) const override { return v == Value::FinalNormOutput && layer == -1; }
    void apply(Value v, int layer, torch::Tensor& t) const override {
        if (touches(v, layer)) t = t.narrow(1, t.size(1) - 1, 1);
    }
};

/// One cell of the grid: block, head (-1: none), position, and its row in PatchingResult::grid.
struct PatchCell {
    int layer;
    int head;
    int64_t position;
    size_t row;
};

/// The chosen blocks and positions as indices (options.blocks / positions; all when empty). Throws nnscope::Error for an
/// index out of range.
std::vector<int64_t> chosenIndices(const std::vector<int64_t>& list, int64_t count, const std::string& what) {
    std::vector<int64_t> out;
    if (list.empty()) {
        for (int64_t k = 0; k < count; ++k) out.push_back(k);
        return out;
    }
    for (int64_t k : list) {
        if (k < -count || k >= count)
            throw Error("activation patching: " + what + " " + std::to_string(k) + " is out of range (there are " + std::to_string(count) +
                        ", counted from 0, or from -1 at the end).");
        out.push_back(k < 0 ? k + count : k);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/// Fills the grid with NaN, ready for the chosen cells (rows: blocks, or blocks × heads for AllHeads).
void preparePatchGrid(PatchingResult& r, const Model& model, const PatchingOptions& o, int64_t seq) {
    const int L = static_cast<int>(model.config().numLayers);
    r.headsPerBlock = o.site == PatchSite::AllHeads ? static_cast<int>(model.config().numHeads) : 0;
    const size_t rows = static_cast<size_t>(L) * static_cast<size_t>(std::max(1, r.headsPerBlock));
    r.grid.assign(rows, std::vector<double>(static_cast<size_t>(seq), std::nan("")));
}

}  // namespace

PatchingResult activationPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                  const PatchingOptions& o) {
    const int L = static_cast<int>(model.config().numLayers);
    const int64_t S = static_cast<int64_t>(clean.size());
    const auto [value, site] = resolveSite(model, clean, corrupted, o);
    const std::vector<int64_t> blocks = chosenIndices(o.blocks, L, "block");
    const std::vector<int64_t> positions = chosenIndices(o.positions, S, "position");
    if (o.batch < 0) throw Error("activation patching: the batch must hold at least one patched run (0: the default), not " + std::to_string(o.batch) + ".");
    TraceOptions saveClean;
    saveClean.cancel = o.cancel;
    saveClean.intervention = o.intervention;
    for (int64_t i : blocks) saveClean.save.push_back({value, static_cast<int>(i)});
    saveClean.save.push_back({Value::Logits, -1});
    const TraceResult cleanRun = trace(model, batchFromIds({clean}), saveClean);
    TraceOptions plain;
    plain.cancel = o.cancel;
    plain.intervention = o.intervention;
    plain.save = {{Value::Logits, -1}};
    const TraceResult corruptedRun = trace(model, batchFromIds({corrupted}), plain);
    PatchingResult r;
    r.site = site;
    r.interventions = o.interventionTexts;
    r.clean = patchMetricValue(o.metric, cleanRun.value({Value::Logits, -1}));
    r.corrupted = patchMetricValue(o.metric, corruptedRun.value({Value::Logits, -1}));
    if (model.tokenizer())
        for (int64_t id : corrupted) r.tokens.push_back(model.tokenizer()->tokenLabel(id));
    preparePatchGrid(r, model, o, S);
    std::vector<PatchCell> cells;
    for (int64_t i : blocks) {
        const int heads = o.site == PatchSite::AllHeads ? r.headsPerBlock : 1;
        for (int h = 0; h < heads; ++h)
            for (int64_t p : positions) {
                const int head = o.site == PatchSite::AllHeads ? h : o.site == PatchSite::HeadOutput ? o.head : -1;
                const size_t row = static_cast<size_t>(i) * static_cast<size_t>(std::max(1, r.headsPerBlock)) + static_cast<size_t>(h);
                cells.push_back({static_cast<int>(i), head, p, row});
            }
    }
    int rowsPerPass = o.batch > 0 ? o.batch : defaultPatchBatch(S);
    if (o.intervention && o.intervention->mixesRows()) rowsPerPass = 1;  // a `mean` edit would average over the other rows
    // logits at the last position only, unless the session edits the logits (its positions would no longer be there)
    const bool lastOnly = !(o.intervention && (o.intervention->touches(Value::LmHeadOutput, -1) || o.intervention->touches(Value::Logits, -1) ||
                                               o.intervention->touches(Value::NextTokenProbs, -1)));
    const int total = static_cast<int>(cells.size());
    for (size_t first = 0; first < cells.size(); first += static_cast<size_t>(rowsPerPass)) {
        if (o.progress) o.progress(static_cast<int>(first), total);
        if (o.cancel && o.cancel->load()) throw Cancelled{};
        const size_t n = std::min(cells.size() - first, static_cast<size_t>(rowsPerPass));
        std::vector<RowPatches::Row> rows;
        for (size_t k = 0; k < n; ++k) {
            const PatchCell& c = cells[first + k];
            std::vector<torch::indexing::TensorIndex> at = {0, c.position};
            if (c.head >= 0) at.emplace_back(static_cast<int64_t>(c.head));
            rows.push_back({c.layer, c.position, c.head, cleanRun.value({value, c.layer}).index(at).to(torch::kFloat32)});
        }
        TraceOptions run = plain;
        auto patch = std::make_shared<EditList>();
        patch->add(std::make_shared<RowPatches>(value, std::move(rows)));
        if (lastOnly) patch->add(std::make_shared<LastPositionLogits>());
        run.intervention = thenPatch(o.intervention, patch);
        const TraceResult patched = trace(model, batchFromIds(std::vector<std::vector<int64_t>>(n, corrupted)), run);
        const torch::Tensor logits = patched.value({Value::Logits, -1});
        for (size_t k = 0; k < n; ++k) {
            const PatchCell& c = cells[first + k];
            r.grid[c.row][static_cast<size_t>(c.position)] =
                patchMetricValue(o.metric, logits.index({torch::indexing::Slice(static_cast<int64_t>(k), static_cast<int64_t>(k) + 1)}));
        }
    }
    if (o.progress) o.progress(total, total);
    return r;
}

int defaultPatchBatch(int64_t tokens) { return static_cast<int>(std::clamp<int64_t>(512 / std::max<int64_t>(tokens, 1), 1, 32)); }

std::string patchProgressText(int done, int total, double elapsedSeconds) {
    std::string text = "cell " + std::to_string(done) + " of " + std::to_string(total);
    if (done <= 0 || done >= total) return text;
    const double left = elapsedSeconds / done * (total - done);
    char buffer[64];
    if (left < 10)
        std::snprintf(buffer, sizeof buffer, ", about %.1f s left", left);
    else if (left < 120)
        std::snprintf(buffer, sizeof buffer, ", about %.0f s left", left);
    else
        std::snprintf(buffer, sizeof buffer, ", about %.0f min left", left / 60);
    return text + buffer;
}

std::vector<int64_t> parseIndexList(const std::string& text, int64_t count, const std::string& what) {
    std::vector<int64_t> out;
    auto number = [&](const std::string& t, const std::string& item) {
        if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12)
            throw Error(what + ": '" + item + "' is not an index or a range (write e.g. -1, 0,3,5 or 2-6).");
        return static_cast<int64_t>(std::stoll(t));
    };
    auto check = [&](int64_t k, const std::string& item) {
        if (k < -count || k >= count)
            throw Error(what + ": " + item + " is out of range: there are " + std::to_string(count) + ", from 0 to " + std::to_string(count - 1) +
                        " (or -1 for the last).");
        return k < 0 ? k + count : k;
    };
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        std::string item = text.substr(start, comma - start);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        start = comma + 1;
        if (item.empty()) {
            if (comma == text.size()) break;
            continue;
        }
        const size_t dash = item.find('-', 1);
        if (item[0] == '-' && dash == std::string::npos) {
            out.push_back(check(-number(item.substr(1), item), item));
        } else if (dash == std::string::npos) {
            out.push_back(check(number(item, item), item));
        } else {
            const int64_t a = check(number(item.substr(0, dash), item), item), b = check(number(item.substr(dash + 1), item), item);
            if (b < a) throw Error(what + ": the range " + item + " ends before it starts.");
            for (int64_t k = a; k <= b; ++k) out.push_back(k);
        }
    }
    if (out.empty())
        for (int64_t k = 0; k < count; ++k) out.push_back(k);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

PatchSite parsePatchSite(const std::string& text, int* head) {
    if (text == "layer_output") return PatchSite::LayerOutput;
    if (text == "attention_output") return PatchSite::AttentionOutput;
    if (text == "mlp_output") return PatchSite::MlpOutput;
    if (text == "heads" || text == "head:all") return PatchSite::AllHeads;
    if (text.rfind("head:", 0) == 0) {
        const std::string number = text.substr(5);
        if (!number.empty() && number.find_first_not_of("0123456789") == std::string::npos) {
            if (head) *head = std::stoi(number);
            return PatchSite::HeadOutput;
        }
        throw Error("--site head:H needs a head number, not '" + number + "'.");
    }
    throw Error("--site must be layer_output, attention_output, mlp_output, head:H or heads (every head), not '" + text + "'.");
}

PatchingResult attributionPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                   const PatchingOptions& o) {
    const int L = static_cast<int>(model.config().numLayers);
    const int64_t S = static_cast<int64_t>(clean.size());
    const auto [value, site] = resolveSite(model, clean, corrupted, o);
    const std::vector<int64_t> blocks = chosenIndices(o.blocks, L, "block");
    const std::vector<int64_t> positions = chosenIndices(o.positions, S, "position");
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
    preparePatchGrid(r, model, o, S);
    const int64_t heads = std::max(1, r.headsPerBlock);
    for (int64_t i : blocks) {
        torch::NoGradGuard noGrad;
        const torch::Tensor a = inputs[static_cast<size_t>(i)].detach().to(torch::kFloat64);
        const torch::Tensor delta = cleanRun.value({value, static_cast<int>(i)}).to(torch::kFloat64) - a;
        const torch::Tensor g = grads[static_cast<size_t>(i)].defined() ? grads[static_cast<size_t>(i)].to(torch::kFloat64) : torch::zeros_like(a);
        torch::Tensor perPosition = (g * delta).index({0});  // [seq, ...]
        if (o.site == PatchSite::HeadOutput) perPosition = perPosition.index({torch::indexing::Slice(), o.head});
        // [seq, heads]: each head's sum over its head_dim features (AllHeads), or the whole site's sum
        perPosition = (o.site == PatchSite::AllHeads ? perPosition.reshape({S, heads, -1}) : perPosition.reshape({S, 1, -1})).sum(-1).contiguous();
        const auto a2 = perPosition.accessor<double, 2>();
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t p : positions)
                r.grid[static_cast<size_t>(i * heads + h)][static_cast<size_t>(p)] = r.corrupted + a2[p][h];
    }
    if (o.progress) o.progress(3, 3);
    return r;
}

double gridCorrelation(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
    std::vector<double> x, y;
    if (a.size() != b.size()) throw Error("gridCorrelation: the grids have different numbers of rows.");
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) throw Error("gridCorrelation: row " + std::to_string(i) + " differs in length.");
        for (size_t j = 0; j < a[i].size(); ++j)
            if (!std::isnan(a[i][j]) && !std::isnan(b[i][j])) {  // a cell not run
                x.push_back(a[i][j]);
                y.push_back(b[i][j]);
            }
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
