// SPDX-License-Identifier: MIT
// The random checkpoints of the benchmark programs (bench.cpp, gui_bench.cpp): Llama weight names (ERNIE 4.5 uses the
// same ones), bfloat16, seed 0. Not used by nnscope itself.
#pragma once

#include "core/safetensors.h"

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nnscope::bench {

/// The sizes of a random checkpoint.
struct RandomShape {
    int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, headDim = 0, intermediate = 0, vocab = 0;
    bool tiedLmHead = true;  ///< no lm_head.weight (the config says tie_word_embeddings)
};

/// Writes `dir`/model.safetensors: embed_tokens [vocab, hidden], a final norm, lm_head unless tied, and per block the
/// two RMSNorm weights (ones), q/k/v/o projections and the gated MLP, normal(0, 0.02-0.03) in bfloat16. The folder
/// must exist; the caller writes config.json. Throws nnscope::Error when the file cannot be written.
inline void writeRandomLlamaWeights(const std::string& dir, const RandomShape& s) {
    torch::manual_seed(0);
    std::vector<std::pair<std::string, torch::Tensor>> t;
    auto rnd = [](std::vector<int64_t> shape, double scale) { return (torch::randn(shape) * scale).to(torch::kBFloat16); };
    auto ones = [&] { return torch::ones({s.hidden}).to(torch::kBFloat16); };
    t.emplace_back("model.embed_tokens.weight", rnd({s.vocab, s.hidden}, 0.02));
    t.emplace_back("model.norm.weight", ones());
    if (!s.tiedLmHead) t.emplace_back("lm_head.weight", rnd({s.vocab, s.hidden}, 0.02));
    for (int64_t i = 0; i < s.layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.emplace_back(p + "input_layernorm.weight", ones());
        t.emplace_back(p + "post_attention_layernorm.weight", ones());
        t.emplace_back(p + "self_attn.q_proj.weight", rnd({s.heads * s.headDim, s.hidden}, 0.03));
        t.emplace_back(p + "self_attn.k_proj.weight", rnd({s.kvHeads * s.headDim, s.hidden}, 0.03));
        t.emplace_back(p + "self_attn.v_proj.weight", rnd({s.kvHeads * s.headDim, s.hidden}, 0.03));
        t.emplace_back(p + "self_attn.o_proj.weight", rnd({s.hidden, s.heads * s.headDim}, 0.02));
        t.emplace_back(p + "mlp.gate_proj.weight", rnd({s.intermediate, s.hidden}, 0.03));
        t.emplace_back(p + "mlp.up_proj.weight", rnd({s.intermediate, s.hidden}, 0.03));
        t.emplace_back(p + "mlp.down_proj.weight", rnd({s.hidden, s.intermediate}, 0.02));
    }
    writeSafetensors(dir + "/model.safetensors", t, {{"format", "pt"}});
}

}  // namespace nnscope::bench
