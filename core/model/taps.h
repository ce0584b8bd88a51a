// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/values.h"

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
    /// Whether block `layer` must form its attention_scores and attention_probabilities (a save, an edit, a view showing
    /// them, a freeze). Where it need not, a build on libtorch >= 2 computes the block's attention by
    /// torch::scaled_dot_product_attention, which never forms them (core/model/model.cpp); values are equal within float
    /// rounding. The default, true, keeps the eager attention for a tap that does not say.
    virtual bool needsAttentionPattern(int layer) const {
        (void)layer;
        return true;
    }
};

/// Whether `v` is one of the norms' scales (Value::Native*NormScale).
inline bool isNormScale(Value v) {
    return v == Value::NativeInputNormScale || v == Value::NativePostAttentionNormScale || v == Value::NativeAttentionOutputNormScale ||
           v == Value::NativeMlpOutputNormScale || v == Value::NativeFinalNormScale;
}

/// The replacement model's freezing (Ameisen et al. 2025, "Circuit Tracing"; TransformerLens' apply_ln_to_stack): every
/// norm's scale and every attention pattern is cut from autograd where the pass computes it, so the pass is linear in the
/// residual stream up to the MLPs and gradients see the norms as fixed gains. The values themselves are unchanged: the
/// frozen pass computes the same numbers as the plain one. Wraps `inner` (may be nullptr), which sees every value after
/// the freezing.
class FreezeTaps : public Taps {
public:
    explicit FreezeTaps(Taps* inner = nullptr) : inner_(inner) {}
    void tap(Value v, int layer, torch::Tensor& t) override {
        if (isNormScale(v) || v == Value::AttentionProbabilities) t = t.detach();
        if (inner_) inner_->tap(v, layer, t);
    }
    bool beforeLayer(int layer) override { return inner_ ? inner_->beforeLayer(layer) : true; }

private:
    Taps* inner_;
};

/// Thrown by the forward pass when Taps::beforeLayer returned false.
struct Cancelled {};

}  // namespace nnscope
