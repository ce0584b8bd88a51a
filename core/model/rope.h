// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/config.h"

#include <torch/types.h>

namespace nnscope {

/// Inverse frequencies of the rotary embedding and the factor that multiplies cos and sin.
struct RopeTables {
    torch::Tensor invFreq;         ///< float32 [rotary_dim / 2]
    double attentionScaling = 1.0;  ///< yarn's and longrope's attention factor; 1 otherwise
    /// longrope: the inverse frequencies with long_factor, used when a pass reaches past `longFrom` tokens
    /// (max(position_ids) + 1 > original_max_position_embeddings); invFreq then holds the short_factor ones.
    torch::Tensor invFreqLong;
    int64_t longFrom = 0;

    /// The same tables on `device` (computed once on the CPU at load, then moved where the model computes).
    RopeTables to(torch::Device device) const {
        RopeTables r = *this;
        if (invFreq.defined()) r.invFreq = invFreq.to(device);
        if (invFreqLong.defined()) r.invFreqLong = invFreqLong.to(device);
        return r;
    }
};

/// Computes the rotary tables the way transformers' ROPE_INIT_FUNCTIONS do (modeling_rope_utils.py:
/// default, linear, yarn, llama3), in float32, operation for operation.
/// `rotaryDim` = int(head_dim * partial_rotary_factor). Throws nnscope::Error for unsupported types.
RopeTables computeRope(const RopeConfig& rope, int64_t rotaryDim, int64_t maxPositionEmbeddings);

}  // namespace nnscope
