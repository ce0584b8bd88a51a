// SPDX-License-Identifier: MIT
#pragma once
// What a pinned card says about a traced value: its statistics (min, max, mean, NaN and Inf counts), its norm per
// position, and the cost of tracing again to read a value the last trace did not save. No Qt here.
#include "core/run/trace.h"

#include <torch/types.h>

#include <cstdint>
#include <optional>
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

/// Where a trace's values first stop being finite.
struct NonFiniteOrigin {
    ValueKey key;           ///< the value
    int64_t row = 0;        ///< the prompt (batch row)
    int64_t position = -1;  ///< its position, counted from the prompt's first token; -1 for a value without one
    double value = 0;       ///< the first element there that is not finite: NaN, +inf or -inf
    int64_t count = 0;      ///< how many elements of the value (at every prompt's own positions) are not finite
};
/// The first saved value of `result`, in the order the pass computes them (forwardSteps: the root's values before the
/// blocks, each block's in its steps' order, the root's after; values outside that table last, next_token_probs
/// among them), that holds a NaN or an infinity at one of a prompt's own positions (left padding is not looked at),
/// and there the first position that does (the smallest over the prompts; the first prompt on a tie). nullopt when
/// every saved value is finite. Integer values (input_ids) are skipped.
std::optional<NonFiniteOrigin> firstNonFinite(const Model& model, const TraceResult& result);
/// "NaN", "+Inf" or "-Inf" for a value that is not finite ("" for a finite one): the names the window and the
/// command line give them.
std::string nonFiniteName(double v);
/// The sentence the window's banner and the command line say: "NaN first appears at layers.1.mlp.mlp_output,
/// position 3 of prompt 1 (64 of its values are not finite)." (positions 0-based and prompts 1-based, as the window's
/// axes and prompt lists count them).
std::string describeNonFinite(const Model& model, const NonFiniteOrigin& origin);

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
