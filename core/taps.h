// SPDX-License-Identifier: MIT
#pragma once
#include "values.h"

#include <torch/types.h>

namespace nnscope {

/// What one forward pass reads and changes. The decoder calls `tap` once per value, at the exact line the
/// value is computed (after it, the pass goes on with whatever `t` holds, so replacing `t` is an edit that
/// every later value sees). `layer` is -1 for root values.
class Taps {
public:
    virtual ~Taps() = default;
    /// Reads (saves) and/or edits `t`. Implementations must not keep `t` without detaching/cloning it.
    virtual void tap(Value v, int layer, torch::Tensor& t) = 0;
    /// Called before block `layer` runs and once after the last (layer == num_layers); returning false stops the
    /// pass (nnscope::Cancelled is thrown), so Cancel takes effect within one block.
    virtual bool beforeLayer(int layer) {
        (void)layer;
        return true;
    }
};

/// Thrown by the forward pass when Taps::beforeLayer returned false.
struct Cancelled {};

}  // namespace nnscope
