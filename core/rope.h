// SPDX-License-Identifier: MIT
#pragma once
#include "config.h"

#include <torch/types.h>

namespace nnscope {

/// Inverse frequencies of the rotary embedding and the factor that multiplies cos and sin.
struct RopeTables {
    torch::Tensor invFreq;         ///< float32 [rotary_dim / 2]
    double attentionScaling = 1.0;  ///< yarn's attention factor; 1 otherwise
};

/// Computes the rotary tables the way transformers' ROPE_INIT_FUNCTIONS do (modeling_rope_utils.py:
/// default, linear, yarn, llama3), in float32, operation for operation.
/// `rotaryDim` = int(head_dim * partial_rotary_factor). Throws nnscope::Error for unsupported types.
RopeTables computeRope(const RopeConfig& rope, int64_t rotaryDim, int64_t maxPositionEmbeddings);

}  // namespace nnscope
