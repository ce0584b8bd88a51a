// SPDX-License-Identifier: MIT
#include "core/analysis/valuestats.h"

#include "core/analysis/analysis.h"
#include "core/model/block.h"

#include <torch/types.h>

#include <cmath>
#include <cstring>
#include <set>
#include <limits>

namespace nnscope {

ValueStats valueStats(const torch::Tensor& value) {
    c10::InferenceMode guard;
    ValueStats s;
    s.shape = value.sizes().vec();
    s.dtype = value.scalar_type();
    s.elements = value.numel();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.min = s.max = s.mean = nan;
    if (s.elements == 0) return s;
    const torch::Tensor t = value.to(torch::kFloat64).reshape({-1});
    if (value.is_floating_point()) {
        s.nanCount = t.isnan().sum().item<int64_t>();
        s.infCount = t.isinf().sum().item<int64_t>();
    }
    const torch::Tensor finite = (s.nanCount || s.infCount) ? t.index({t.isfinite()}) : t;
    if (finite.numel() == 0) return s;
    s.min = finite.min().item<double>();
    s.max = finite.max().item<double>();
    s.mean = finite.mean().item<double>();
    return s;
}

std::string positionAxis(Value v) {
    if (v == Value::InputSize) return {};  // its two values are [batch, seq], not axes
    const ValueInfo& info = valueInfo(v);
    for (const char* name : {"seq", "query"})
        for (size_t a = 1; a < info.axes.size(); ++a)
            if (std::strcmp(info.axes[a], name) == 0) return name;
    return {};
}

std::vector<double> positionNorms(const Model& model, const TraceResult& result, const ValueKey& key, int64_t row) {
    c10::InferenceMode guard;
    const std::string axis = positionAxis(key.value);
    if (!result.value(key).defined()) promptValue(model, result, key, row);  // throws, naming the value
    if (axis.empty()) return {};
    const torch::Tensor v = promptValue(model, result, key, row);  // without the batch axis, cut to the prompt
    const ValueInfo& info = valueInfo(key.value);
    int64_t dim = -1;
    for (size_t a = 1; a < info.axes.size(); ++a)
        if (axis == info.axes[a]) dim = static_cast<int64_t>(a) - 1;
    if (dim < 0 || dim >= v.dim()) return {};
    const torch::Tensor norms = v.to(torch::kFloat64).movedim(dim, 0).reshape({v.size(dim), -1}).norm(2, 1).contiguous();
    return std::vector<double>(norms.data_ptr<double>(), norms.data_ptr<double>() + norms.numel());
}

namespace {
/// The saved values of `result` in the order the pass computes them (see firstNonFinite).
std::vector<ValueKey> passOrder(const Model& model, const TraceResult& result) {
    const std::vector<BlockStep> steps = forwardSteps(model.family(), model.config());
    std::vector<ValueKey> order;
    auto add = [&](const BlockStep& step, int layer) {
        for (const StepValue& v : step.values)
            if (!v.repeat) order.push_back({v.value, layer});
    };
    size_t firstBlockStep = steps.size(), lastBlockStep = 0;
    for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].host != Host::Model) {
            firstBlockStep = std::min(firstBlockStep, i);
            lastBlockStep = i;
        }
    for (size_t i = 0; i < std::min(firstBlockStep, steps.size()); ++i) add(steps[i], -1);
    for (int layer = 0; layer < model.config().numLayers; ++layer)
        for (size_t i = firstBlockStep; i <= lastBlockStep && i < steps.size(); ++i)
            if (steps[i].host != Host::Model) add(steps[i], layer);
    for (size_t i = lastBlockStep + 1; i < steps.size() && firstBlockStep < steps.size(); ++i) add(steps[i], -1);
    // what the table does not list (next_token_probs, a value of a trace file read by another family) comes last
    std::vector<ValueKey> out;
    std::set<std::pair<int, int>> saved;
    for (const auto& [key, t] : result.values) saved.insert({static_cast<int>(key.value), key.layer});
    for (const ValueKey& k : order)
        if (saved.erase({static_cast<int>(k.value), k.layer})) out.push_back(k);
    for (const auto& [key, t] : result.values)
        if (saved.count({static_cast<int>(key.value), key.layer})) out.push_back(key);
    return out;
}
}  // namespace

std::string nonFiniteName(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return {};
}

std::optional<NonFiniteOrigin> firstNonFinite(const Model& model, const TraceResult& result) {
    c10::InferenceMode guard;
    const int64_t prompts = static_cast<int64_t>(result.batch.ids.size());
    for (const ValueKey& key : passOrder(model, result)) {
        const torch::Tensor t = result.value(key);
        if (!t.defined() || !t.is_floating_point() || t.numel() == 0) continue;
        // Exact and without a copy the size of the value: a float64 sum of finite float32 or bfloat16 values cannot
        // overflow, so it is finite unless a NaN or an infinity is among them.
        if (std::isfinite(t.sum(torch::kFloat64).item<double>())) continue;
        const ValueInfo& info = valueInfo(key.value);
        const bool batched = !info.axes.empty() && std::strcmp(info.axes[0], "batch") == 0 && t.dim() >= 1 && t.size(0) == prompts;
        // the dimension of the position axis after the batch's (seq, or a pattern's query)
        int64_t dim = -1;
        const std::string axis = positionAxis(key.value);
        for (size_t a = 1; a < info.axes.size() && !axis.empty(); ++a)
            if (axis == info.axes[a]) dim = static_cast<int64_t>(a) - 1;
        std::optional<NonFiniteOrigin> best;
        int64_t count = 0;
        for (int64_t r = 0; r < (batched ? prompts : 1); ++r) {
            // a prompt's own positions (padding left out); a value without the batch axis whole
            const torch::Tensor v = batched ? promptValue(model, result, key, r) : t.to(torch::kFloat32);
            const torch::Tensor bad = ~torch::isfinite(v);
            const int64_t n = bad.sum().item<int64_t>();
            if (n == 0) continue;
            count += n;
            NonFiniteOrigin o;
            o.key = key;
            o.row = r;
            torch::Tensor where = bad;
            torch::Tensor values = v;
            if (dim >= 0 && dim < v.dim() && batched) {
                const torch::Tensor perPosition = bad.movedim(dim, 0).reshape({v.size(dim), -1});
                o.position = perPosition.any(1).nonzero().index({0, 0}).item<int64_t>();
                where = perPosition[o.position];
                values = v.movedim(dim, 0).reshape({v.size(dim), -1})[o.position];
            }
            o.value = values.reshape({-1}).index({where.reshape({-1}).nonzero().index({0, 0})}).item<double>();
            if (!best || (o.position >= 0 && best->position >= 0 && o.position < best->position)) best = o;
        }
        if (!best) continue;  // only the padding holds them
        best->count = count;
        return best;
    }
    return std::nullopt;
}

std::string describeNonFinite(const Model& model, const NonFiniteOrigin& o) {
    std::string s = nonFiniteName(o.value) + " first appears at " + valuePath(model.family(), o.key);
    if (o.position >= 0) s += ", position " + std::to_string(o.position);
    s += " of prompt " + std::to_string(o.row + 1) + " (" + std::to_string(o.count) + " of its values " +
         (o.count == 1 ? "is" : "are") + " not finite).";
    return s;
}

double traceMultiplyAdds(const ModelConfig& c, const Batch& batch) {
    const double hidden = static_cast<double>(c.hiddenSize), inter = static_cast<double>(c.intermediateSize);
    const double q = static_cast<double>(c.numHeads * c.headDim), kv = static_cast<double>(c.numKvHeads * c.headDim);
    const double perBlock = hidden * (q + 2 * kv) + q * hidden + 3 * hidden * inter;  // q/k/v, o_proj, gate/up/down
    const double perToken = static_cast<double>(c.numLayers) * perBlock + hidden * static_cast<double>(c.vocabSize);  // + lm_head
    // the padded batch runs every row at its full width
    const double rows = static_cast<double>(batch.ids.size());
    const double seq = batch.inputIds.defined() ? static_cast<double>(batch.inputIds.size(1)) : 0;
    const double attention = rows * static_cast<double>(c.numLayers) * 2 * q * seq * seq;  // q·k and pattern·v per head
    return perToken * rows * seq + attention;
}

}  // namespace nnscope
