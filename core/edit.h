// SPDX-License-Identifier: MIT
#pragma once
#include "values.h"

#include <torch/types.h>

namespace nnscope {

/// Changes values during a forward pass (nnsight semantics: an edit to a value changes what the rest of the
/// pass computes from it). Applied by the trace before the value is saved, so a saved value shows the edit.
class Intervention {
public:
    virtual ~Intervention() = default;
    /// Replaces `t` (never writes into it: it may view read-only weights) with its edited version.
    virtual void apply(Value v, int layer, torch::Tensor& t) const = 0;
    /// Whether any edit targets this value (fast path: most values are untouched).
    virtual bool touches(Value v, int layer) const = 0;
    /// Called once when a pass starts (state such as a skipped block's input is reset).
    virtual void begin() const {}
};

}  // namespace nnscope
