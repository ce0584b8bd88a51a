// SPDX-License-Identifier: MIT
#include "core/model/weights.h"

#include "core/io/safetensors.h"
#include "core/model/error.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace nnscope {

std::vector<WeightSpec> weightSchema(const Family& f, const ModelConfig& c) {
    std::vector<WeightSpec> out;
    const int64_t H = c.hiddenSize, I = c.intermediateSize, V = c.vocabSize, D = c.headDim;
    const int64_t QW = c.numHeads * D, KW = c.numKvHeads * D;
    auto add = [&](bool wanted, Module m, Param p, int layer, std::vector<int64_t> shape, bool projection = false) {
        if (!wanted) return;
        std::string name = f.tensorName({m, p}, layer);
        if (name.empty())
            throw Error("internal: family " + f.modelType + " has no module " + std::to_string(static_cast<int>(m)) +
                        " in its module table, and its config needs one.");
        const bool transposed = projection && f.conv1dWeights && shape.size() == 2;
        if (transposed) std::swap(shape[0], shape[1]);
        WeightSpec spec;
        spec.key = {m, p};
        spec.layer = layer;
        spec.name = std::move(name);
        spec.shape = std::move(shape);
        spec.transposed = transposed;
        out.push_back(std::move(spec));
    };
    // A linear map [out, in] and its bias [out] where `biased`.
    auto linear = [&](bool wanted, Module m, int layer, int64_t outDim, int64_t inDim, bool biased) {
        add(wanted, m, Param::Weight, layer, {outDim, inDim}, true);
        add(wanted && biased, m, Param::Bias, layer, {outDim});
    };
    auto norm = [&](bool wanted, Module m, int layer, int64_t dim, NormKind kind) {
        add(wanted, m, Param::Weight, layer, {dim});
        add(wanted && kind == NormKind::LayerNorm, m, Param::Bias, layer, {dim});
    };
    add(true, Module::EmbedTokens, Param::Weight, -1, {V, H});
    add(f.positions == PositionKind::Learned, Module::PositionEmbeddings, Param::Weight, -1, {c.maxPositionEmbeddings, H});
    norm(true, Module::Norm, -1, H, f.norm);
    add(!c.tieWordEmbeddings, Module::LmHead, Param::Weight, -1, {V, H});
    const BlockNorms& bn = f.blockNorms;
    const bool gated = f.mlp != MlpKind::Plain;
    for (int i = 0; i < c.numLayers; ++i) {
        norm(bn.beforeAttention, Module::InputNorm, i, H, f.norm);
        norm(bn.beforeMlp, Module::PostAttentionNorm, i, H, f.norm);
        norm(bn.afterAttention, Module::AttentionOutputNorm, i, H, f.norm);
        norm(bn.afterMlp, Module::MlpOutputNorm, i, H, f.norm);
        if (c.mla.enabled) {
            // Multi-head latent attention: biases under attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj only.
            const MlaConfig& a = c.mla;
            const int64_t N = c.numHeads, QK = c.qkHeadDim();
            linear(a.qLoraRank == 0, Module::QProj, i, N * QK, H, false);
            linear(a.qLoraRank > 0, Module::QAProj, i, a.qLoraRank, H, c.attentionBias);
            norm(a.qLoraRank > 0, Module::QALayernorm, i, a.qLoraRank, NormKind::RMSNorm);
            linear(a.qLoraRank > 0, Module::QBProj, i, N * QK, a.qLoraRank, false);
            linear(true, Module::KvAProjWithMqa, i, a.kvLoraRank + a.qkRopeHeadDim, H, c.attentionBias);
            norm(true, Module::KvALayernorm, i, a.kvLoraRank, NormKind::RMSNorm);
            linear(true, Module::KvBProj, i, N * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank, false);
            linear(true, Module::OProj, i, H, N * a.vHeadDim, c.oProjBias);
        } else {
            const bool separate = f.qkv == QkvLayout::Separate;
            linear(separate, Module::QProj, i, QW, H, c.attentionBias);
            linear(separate, Module::KProj, i, KW, H, c.attentionBias);
            linear(separate, Module::VProj, i, KW, H, c.attentionBias);
            linear(!separate, Module::QkvProj, i, QW + 2 * KW, H, c.attentionBias);
            linear(true, Module::OProj, i, H, QW, c.oProjBias);
        }
        add(f.attentionSinks, Module::SelfAttn, Param::Sinks, i, {c.numHeads});
        if (c.qkNorm) {
            const bool whole = f.qkNormScope == QkNormScope::WholeProjection;
            norm(true, Module::QNorm, i, whole ? QW : D, f.qkNormKind);
            norm(true, Module::KNorm, i, whole ? KW : D, f.qkNormKind);
        }
        if (f.experts && c.sparseMlp(i)) {
            // A mixture of experts: the router, every expert's projections (read per expert: stored one tensor per
            // expert, stacked as transformers holds them, or MXFP4-packed), the shared expert and its gate.
            const int64_t E = c.moe.numExperts, EI = c.moe.expertIntermediateSize, S = c.moe.sharedExpertIntermediateSize;
            add(true, Module::Router, Param::Weight, i, {E, H});
            add(c.moe.routerBias, Module::Router, Param::Bias, i, {E});
            add(c.moe.correctionBias, Module::Router, Param::CorrectionBias, i, {E});
            const std::string experts = f.nativeModulePath(Module::Experts, i);
            auto perExpert = [&](Module m, Param p, std::vector<int64_t> shape) {
                WeightSpec spec;
                spec.key = {m, p};
                spec.layer = i;
                spec.shape = std::move(shape);
                spec.perExpert = true;
                return spec;
            };
            if (f.expertMlp == ExpertMlp::ClampedSwiGlu) {
                // gpt-oss (GptOssExperts): gate_up_proj [E, H, 2 EI] (gate and up interleaved on the last axis) and
                // down_proj [E, EI, H], each with a bias [E, out]; the hub's files hold the weights MXFP4-packed.
                auto stacked = [&](Module m, int64_t outDim, int64_t inDim, const std::string& leaf) {
                    WeightSpec w = perExpert(m, Param::Weight, {E, outDim, inDim});
                    w.name = w.fused = experts + "." + leaf;
                    w.fusedShape = {E, inDim, outDim};
                    w.fusedTransposed = true;
                    w.packedBlocks = w.name + "_blocks";
                    w.packedScales = w.name + "_scales";
                    out.push_back(std::move(w));
                    WeightSpec b = perExpert(m, Param::Bias, {E, outDim});
                    b.name = b.fused = experts + "." + leaf + "_bias";
                    b.fusedShape = {E, outDim};
                    out.push_back(std::move(b));
                };
                stacked(Module::ExpertGateProj, 2 * EI, H, "gate_up_proj");
                stacked(Module::ExpertDownProj, H, EI, "down_proj");
                continue;
            }
            auto stacked = [&](Module m, int64_t outDim, int64_t inDim, const std::string& fusedLeaf, int chunk) {
                WeightSpec spec = perExpert(m, Param::Weight, {E, outDim, inDim});
                spec.name = experts + "." + f.modules.at(m).native;
                for (int64_t e = 0; e < E; ++e) spec.parts.push_back(f.expertTensorName(m, i, e));
                spec.fused = experts + "." + fusedLeaf;
                spec.fusedShape = {E, chunk >= 0 ? 2 * outDim : outDim, inDim};
                spec.fusedChunk = chunk;
                out.push_back(std::move(spec));
            };
            stacked(Module::ExpertGateProj, EI, H, "gate_up_proj", 0);
            stacked(Module::ExpertUpProj, EI, H, "gate_up_proj", 1);
            stacked(Module::ExpertDownProj, H, EI, "down_proj", -1);
            // The shared expert is the family's dense MLP class (biased under mlp_bias: DeepSeek V2), behind a gate where
            // the family has one (Qwen2-MoE).
            linear(S > 0, Module::SharedGateProj, i, S, H, c.mlpBias);
            linear(S > 0, Module::SharedUpProj, i, S, H, c.mlpBias);
            linear(S > 0, Module::SharedDownProj, i, H, S, c.mlpBias);
            linear(S > 0 && f.hasModule(Module::SharedExpertGate), Module::SharedExpertGate, i, 1, H, false);
            continue;
        }
        const bool fused = f.mlp == MlpKind::GatedFused;
        linear(fused, Module::GateUpProj, i, 2 * I, H, c.mlpBias);
        linear(!fused && gated, Module::GateProj, i, I, H, c.mlpBias);
        linear(!fused, Module::UpProj, i, I, H, c.mlpBias);
        linear(true, Module::DownProj, i, H, I, c.mlpBias);
        const bool xielu = c.hiddenAct == "xielu";
        for (Param p : {Param::AlphaP, Param::AlphaN, Param::Beta, Param::Eps}) add(xielu, Module::ActFn, p, i, {1});
    }
    return out;
}

torch::Tensor readWeight(const WeightStore& store, const WeightSpec& spec) {
    if (spec.perExpert) throw Error("internal: " + spec.name + " is read per expert (readExpertWeights), not as one tensor.");
    return store.get(spec.name, spec.shape);
}

const float kFp4Values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

namespace {

/// One MXFP4 group: 16 bytes of codes (the low nibble first) and its e8m0 exponent -> 32 floats, value · 2^(scale - 127)
/// exactly as torch.ldexp gives it. For scales 1-254 the factor is the float32 whose exponent field is the scale itself;
/// 0 (2^-127, a subnormal) and 255 (2^128, not a float32: 0.5 · 2^128 is finite, 6 · 2^128 overflows, 0 stays 0) go
/// through std::ldexp element by element.
inline void decodeMxfp4Group(const uint8_t* in, uint8_t scale, float* out) {
    if (scale == 0 || scale == 255) {
        const int exponent = static_cast<int>(scale) - 127;
        for (int j = 0; j < 16; ++j) {
            out[2 * j] = std::ldexp(kFp4Values[in[j] & 0x0F], exponent);
            out[2 * j + 1] = std::ldexp(kFp4Values[in[j] >> 4], exponent);
        }
        return;
    }
    const uint32_t bits = static_cast<uint32_t>(scale) << 23;
    float factor;
    std::memcpy(&factor, &bits, sizeof factor);
    for (int j = 0; j < 16; ++j) {
        out[2 * j] = kFp4Values[in[j] & 0x0F] * factor;
        out[2 * j + 1] = kFp4Values[in[j] >> 4] * factor;
    }
}

/// Throws nnscope::Error unless blocks are uint8 [..., groups, 16] and scales uint8 [..., groups] (with `matrix`, exactly
/// [rows, groups, 16] and [rows, groups], on the CPU).
void requireMxfp4(const torch::Tensor& blocks, const torch::Tensor& scales, bool matrix) {
    const bool ok = blocks.scalar_type() == torch::kUInt8 && scales.scalar_type() == torch::kUInt8 && blocks.dim() >= 2 &&
                    blocks.size(-1) == 16 && scales.sizes() == blocks.sizes().slice(0, blocks.dim() - 1) &&
                    (!matrix || (blocks.dim() == 3 && blocks.device().is_cpu() && scales.device().is_cpu()));
    if (!ok)
        throw Error(std::string("MXFP4 blocks must be ") + (matrix ? "CPU uint8 [rows, groups, 16]" : "uint8 [..., groups, 16]") +
                    " and scales uint8 " + (matrix ? "[rows, groups]" : "[..., groups]") + "; got blocks " +
                    c10::toString(blocks.scalar_type()) + " " + c10::str(blocks.sizes()) + " and scales " +
                    c10::toString(scales.scalar_type()) + " " + c10::str(scales.sizes()) + ".");
}

}  // namespace

torch::Tensor dequantizeMxfp4(const torch::Tensor& blocks, const torch::Tensor& scales, torch::ScalarType dtype) {
    requireMxfp4(blocks, scales, /*matrix=*/false);
    // One pass over the bytes (gpt-oss-20b: 8.3 M per expert's gate_up), written straight into the float32 result:
    // torch's indexing ops widened every code to int64 and allocated four temporaries of the result's size.
    const torch::Tensor b = blocks.device().is_cpu() ? blocks.contiguous() : blocks.to(torch::kCPU).contiguous();
    const torch::Tensor sc = scales.device().is_cpu() ? scales.contiguous() : scales.to(torch::kCPU).contiguous();
    std::vector<int64_t> outShape(blocks.sizes().begin(), blocks.sizes().end() - 1);
    outShape.back() *= 32;
    torch::Tensor out = torch::empty(outShape, torch::kFloat32);
    const uint8_t* codes = b.data_ptr<uint8_t>();
    const uint8_t* exps = sc.data_ptr<uint8_t>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, sc.numel(), 4096, [&](int64_t first, int64_t last) {
        for (int64_t g = first; g < last; ++g) decodeMxfp4Group(codes + g * 16, exps[g], dst + g * 32);
    });
    if (!blocks.device().is_cpu()) out = out.to(blocks.device());
    return dtype == torch::kFloat32 ? out : out.to(dtype);
}

torch::Tensor dequantizeMxfp4Transposed(const torch::Tensor& blocks, const torch::Tensor& scales, torch::Tensor& buffer) {
    requireMxfp4(blocks, scales, /*matrix=*/true);
    const torch::Tensor b = blocks.contiguous(), sc = scales.contiguous();
    const int64_t rows = b.size(0), groups = b.size(1);
    if (!buffer.defined() || buffer.scalar_type() != torch::kFloat32 || buffer.dim() != 1 || !buffer.is_contiguous() ||
        buffer.numel() < rows * groups * 32)
        buffer = torch::empty({rows * groups * 32}, torch::kFloat32);
    torch::Tensor out = buffer.narrow(0, 0, rows * groups * 32).view({groups * 32, rows});
    const uint8_t* codes = b.data_ptr<uint8_t>();
    const uint8_t* exps = sc.data_ptr<uint8_t>();
    float* dst = out.data_ptr<float>();
    // One group (32 consecutive inputs) per step, its rows decoded 16 at a time into a tile and the tile written
    // transposed: each of the group's 32 output rows then receives 16 consecutive floats (one cache line) per tile.
    at::parallel_for(0, groups, 1, [&](int64_t first, int64_t last) {
        constexpr int64_t kTile = 16;
        float tile[kTile][32];
        for (int64_t g = first; g < last; ++g) {
            float* column = dst + g * 32 * rows;
            for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
                const int64_t n = std::min(kTile, rows - r0);
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t at = (r0 + i) * groups + g;
                    decodeMxfp4Group(codes + at * 16, exps[at], tile[i]);
                }
                for (int k = 0; k < 32; ++k)
                    for (int64_t i = 0; i < n; ++i) column[k * rows + r0 + i] = tile[i][k];
            }
        }
    });
    return out;
}

ExpertWeights readExpertWeights(const WeightStore& store, const WeightSpec& spec) {
    if (!spec.perExpert || spec.shape.size() < 2)
        throw Error("internal: " + spec.name + " is not an expert spec of shape [num_experts, ...].");
    const int64_t E = spec.shape.front();
    const std::vector<int64_t> partShape(spec.shape.begin() + 1, spec.shape.end());
    ExpertWeights out;
    if (!spec.parts.empty() && (spec.fused.empty() || store.contains(spec.parts.front()) || !store.contains(spec.fused))) {
        if (static_cast<int64_t>(spec.parts.size()) != E)
            throw Error("internal: " + spec.name + " names " + std::to_string(spec.parts.size()) + " experts, not " + std::to_string(E) + ".");
        for (const std::string& part : spec.parts) out.weight.push_back(store.get(part, partShape));  // the mapped tensor itself
        return out;
    }
    if (!spec.fused.empty() && store.contains(spec.fused)) {
        const torch::Tensor whole = store.get(spec.fused, spec.fusedShape);
        for (int64_t e = 0; e < E; ++e) {  // views of the mapped tensor, one per expert
            torch::Tensor t = whole.select(0, e);
            if (spec.fusedChunk >= 0) t = t.chunk(2, 0)[static_cast<size_t>(spec.fusedChunk)];
            if (spec.fusedTransposed && t.dim() == 2) t = t.t();
            out.weight.push_back(t);
        }
        out.transposedLayout = spec.fusedTransposed;
        return out;
    }
    if (!spec.packedBlocks.empty() && store.contains(spec.packedBlocks)) {
        if (partShape.size() != 2 || partShape[1] % 32 != 0)
            throw Error(store.dir() + ": " + spec.packedBlocks + " packs rows of " + std::to_string(partShape.back()) +
                        " values, not a multiple of the MXFP4 group of 32.");
        const int64_t groups = partShape[1] / 32;
        auto packed = [&](const std::string& name, std::vector<int64_t> shape) {
            if (!store.contains(name))
                throw Error(store.dir() + ": the checkpoint stores " + spec.packedBlocks + " but not " + name + " (MXFP4 needs both).");
            const torch::Tensor t = store.get(name);
            if (t.scalar_type() != torch::kUInt8 || t.sizes() != torch::IntArrayRef(shape))
                throw Error(store.fileOf(name) + ": " + name + " is " + std::string(c10::toString(t.scalar_type())) + " " + c10::str(t.sizes()) +
                            "; MXFP4 needs uint8 " + c10::str(torch::IntArrayRef(shape)) + ".");
            return t;
        };
        out.blocks = packed(spec.packedBlocks, {E, partShape[0], groups, 16});
        out.scales = packed(spec.packedScales, {E, partShape[0], groups});
        out.transposedLayout = spec.fusedTransposed;
        return out;
    }
    std::string tried;
    if (!spec.parts.empty()) tried += "'" + spec.parts.front() + "' (one tensor per expert)";
    if (!spec.fused.empty()) tried += std::string(tried.empty() ? "" : " nor ") + "'" + spec.fused + "' (every expert stacked)";
    if (!spec.packedBlocks.empty()) tried += " nor '" + spec.packedBlocks + "' (MXFP4)";
    throw Error(store.dir() + ": the checkpoint has no tensor " + tried + ".");
}

}  // namespace nnscope
