// SPDX-License-Identifier: MIT
#pragma once
// What a pinned card says about a traced value: its statistics (min, max, mean, NaN and Inf counts), its norm per
// position, and the cost of tracing again to read a value the last trace did not save. No Qt here.
#include "core/run/trace.h"

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nnscope {

/// Statistics of a whole traced value (every prompt of the batch, padding included, as the tensor holds it).
struct ValueStats {
    std::vector<int64_t> shape;
    torch::ScalarType dtype = torch::kFloat32;
    int64_t elements = 0;
    int64_t nanCount = 0;  ///< elements that are NaN
    int64_t infCount = 0;  ///< elements that are +Inf or -Inf
    /// Over the finite elements, computed in float64; NaN when there is none.
    double min = 0, max = 0, mean = 0;
};
ValueStats valueStats(const torch::Tensor& value);

/// The L2 norm of value `key` at each of prompt `row`'s own positions (its seq axis, or the query axis of a pattern),
/// over every other axis but the batch: [length] values in float64. Empty when the value has no position axis
/// (next_token_probs, input_size). Throws nnscope::Error when the trace did not save the value.
std::vector<double> positionNorms(const Model& model, const TraceResult& result, const ValueKey& key, int64_t row);

/// The name of the position axis of `v` ("seq", "query"), or "" when it has none.
std::string positionAxis(Value v);

/// Multiply-adds of one forward pass of `batch` through a model of config `c` (an estimate: the weights' matrix
/// products per token, parameters x tokens, plus the attention's query-key and pattern-value products). What
/// re-reading a pinned value from the last trace's inputs costs.
double traceMultiplyAdds(const ModelConfig& c, const Batch& batch);
/// Up to this many multiply-adds, pinning a value the last trace did not save traces its inputs again at once
/// (about a tenth of a second on a laptop core); above it the card says the next run reads it. The demo model's
/// 18-token prompt is about 2e6, a 16-layer, 1024-wide Llama with a 128k vocabulary at 511 tokens about 2e11.
constexpr double kImmediateRereadBudget = 2e9;

}  // namespace nnscope
