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
    /// An expert projection (or its bias), read per expert into ExpertWeights by readExpertWeights rather than as one
    /// tensor: `shape` is [num_experts, out, in] ([num_experts, out] for a bias), each expert's part `shape` without its
    /// first axis. The file stores it one of three ways, tried in this order:
    ///  - `parts`: one tensor per expert (`mlp.experts.{e}.gate_proj.weight`), in expert order;
    ///  - `fused`: one tensor holding every expert stacked, of shape `fusedShape` (transformers' own in-memory layout:
    ///    `mlp.experts.gate_up_proj [num_experts, 2 * moe_intermediate_size, hidden_size]` with gate then up on axis 1,
    ///    `fusedChunk` >= 0 taking that chunk of two per expert (0 gate, 1 up), -1 the whole; gpt-oss stores each expert
    ///    [in, out], `fusedTransposed`);
    ///  - `packedBlocks` / `packedScales`: MXFP4 (gpt-oss hub files: `gate_up_proj_blocks` uint8 [num_experts, out, in / 32,
    ///    16], `gate_up_proj_scales` uint8 [num_experts, out, in / 32]), dequantized one expert at a time when it runs.
    bool perExpert = false;
    std::vector<std::string> parts;
    std::string fused;
    std::vector<int64_t> fusedShape;
    int fusedChunk = -1;
    bool fusedTransposed = false;
    std::string packedBlocks, packedScales;
};

/// Every expert's copy of one projection of a block, held per expert (no stacked copy is ever made): `weight[e]` is
/// nn.Linear's [out, in], a view of the memory-mapped file (converted once where the stored dtype is not the compute
/// dtype); for an MXFP4 checkpoint `weight` is empty and `blocks` [num_experts, out, in / 32, 16] / `scales`
/// [num_experts, out, in / 32] (uint8 views of the mapped file) are dequantized for one expert when it runs
/// (Model::expertWeight). `bias[e]` [out] where the experts have biases (gpt-oss), else empty.
struct ExpertWeights {
    std::vector<torch::Tensor> weight, bias;
    torch::Tensor blocks, scales;
    /// The float layout stores each expert [in, out] (gpt-oss): a dequantized expert is given the same strides, so its
    /// products run the same kernels as the float twin's.
    bool transposedLayout = false;
    bool empty() const { return weight.empty() && !blocks.defined(); }
};

/// The e2m1 values of the 16 four-bit MXFP4 codes (OCP Microscaling Formats v1.0; transformers' FP4_VALUES): codes 0-7
/// are +0, 0.5, 1, 1.5, 2, 3, 4, 6 and codes 8-15 the same with the sign bit set.
extern const float kFp4Values[16];

/// Dequantizes MXFP4: blocks uint8 [..., G, 16] (two codes per byte, the low nibble first), scales uint8 [..., G] (e8m0
/// exponents biased by 127) -> [..., G * 32] in `dtype`, element 2j of group g = kFp4Values[low nibble of byte j] ·
/// 2^(scale[g] - 127), element 2j + 1 the high nibble's. transformers' _convert_moe_packed_tensors
/// (integrations/mxfp4.py) before its final transpose; exact in float32 and bfloat16 (a code times a power of two).
/// Throws nnscope::Error when the shapes do not match or the dtypes are not uint8.
torch::Tensor dequantizeMxfp4(const torch::Tensor& blocks, const torch::Tensor& scales, torch::ScalarType dtype);

/// dequantizeMxfp4 of one matrix written transposed: blocks uint8 [rows, G, 16], scales uint8 [rows, G] -> float32
/// [G * 32, rows] contiguous, out[k][r] = the weight of row r at input k (the strides of gpt-oss's float files, which
/// store each expert [in, out]). The result is a view of `buffer`, a float32 vector reused when it is large enough (a
/// scratch buffer: an expert's 66 MB is then not allocated, faulted in and unmapped for every expert of every block) and
/// replaced by a larger one otherwise. Throws nnscope::Error when the shapes or dtypes are not those, or the tensors are
/// not on the CPU.
torch::Tensor dequantizeMxfp4Transposed(const torch::Tensor& blocks, const torch::Tensor& scales, torch::Tensor& buffer);

class WeightStore;
/// The tensor `spec` names, read from `store` with the shape the config implies: the stored tensor itself (a view of the
/// mapped file). Throws nnscope::Error naming the missing tensor or the wrong shape, or for a per-expert spec
/// (readExpertWeights reads those).
torch::Tensor readWeight(const WeightStore& store, const WeightSpec& spec);

/// The experts of a per-expert spec (WeightSpec::perExpert), read from `store` without copying: each stored part, or
/// each expert's slice of the fused tensor (a view), or the MXFP4 blocks and scales. Returns the weights in `weight`
/// (also for a bias spec: the caller files them). Throws nnscope::Error naming the tensors the file lacks (every layout
/// tried) or a wrong shape.
ExpertWeights readExpertWeights(const WeightStore& store, const WeightSpec& spec);

/// The weights the family's forward reads for `config`, in load order: root tensors first, then block by block.
/// Shapes follow the config (hidden_size H, num_heads × head_dim QW, num_kv_heads × head_dim KW, intermediate_size
/// I, vocab_size V, max_position_embeddings P). Optional tensors are listed only where the config switches them on
/// (biases, q/k norms, an untied lm_head). Every name comes from the family's module table (Family::tensorName). Throws
/// nnscope::Error when the family's table lacks a module the config needs.
std::vector<WeightSpec> weightSchema(const Family& family, const ModelConfig& config);

}  // namespace nnscope
