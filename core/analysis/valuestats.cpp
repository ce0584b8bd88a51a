// SPDX-License-Identifier: MIT
#include "core/analysis/valuestats.h"

#include "core/analysis/analysis.h"

#include <torch/types.h>

#include <cstring>
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
