// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/config.h"
#include "core/model/family.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace nnscope {

/// One tensor a family's forward reads, as the checkpoint must store it. The one list of weights: Model's loader,
/// the unused-tensor warning and the family checks read it, and no other list of weight names exists.
struct WeightSpec {
    ParamKey key;                ///< the module that owns it and which of its parameters it is
    int layer = -1;              ///< block index; -1 for the model's root tensors
    std::string name;            ///< the checkpoint's name (Family::tensorName, with the block filled in)
    std::vector<int64_t> shape;  ///< the stored shape implied by the config (GPT-2's Conv1D: [in, out])
    bool transposed = false;     ///< stored [in, out]: the forward reads its transpose, nn.Linear's [out, in]
    /// A tensor the checkpoint stores as several tensors stacked on axis `stackDim` (the per-expert layout,
    /// `mlp.experts.{e}.gate_proj.weight`, that transformers' conversion mapping merges into one): their names, in
    /// order; empty when the checkpoint stores `name` itself. Each part has `shape` without axis `stackDim`.
    std::vector<std::string> parts;
    int64_t stackDim = 0;
    /// Where the parts are not stored, the one tensor that holds them stacked (transformers' own in-memory layout of
    /// the experts: `mlp.experts.gate_up_proj [num_experts, 2 * moe_intermediate_size, hidden_size]` with gate then up
    /// on axis 1, `mlp.experts.down_proj [num_experts, hidden_size, moe_intermediate_size]`), of shape `fusedShape`;
    /// `fusedChunk` >= 0 takes that chunk of two on axis 1 (0 gate, 1 up), -1 the whole tensor. Empty: none.
    std::string fused;
    std::vector<int64_t> fusedShape;
    int fusedChunk = -1;
};

class WeightStore;
/// The tensor `spec` names, read from `store` with the shape the config implies: the stored tensor itself (a view of the
/// mapped file), or its parts stacked, or (where the parts are not stored) its chunk of the fused tensor. Throws nnscope::Error naming the missing tensor or the wrong shape.
torch::Tensor readWeight(const WeightStore& store, const WeightSpec& spec);

/// The weights the family's forward reads for `config`, in load order: root tensors first, then block by block.
/// Shapes follow the config (hidden_size H, num_heads × head_dim QW, num_kv_heads × head_dim KW, intermediate_size
/// I, vocab_size V, max_position_embeddings P). Optional tensors are listed only where the config switches them on
/// (biases, q/k norms, an untied lm_head). Every name comes from the family's module table (Family::tensorName). Throws
/// nnscope::Error when the family's table lacks a module the config needs.
std::vector<WeightSpec> weightSchema(const Family& family, const ModelConfig& config);

}  // namespace nnscope
