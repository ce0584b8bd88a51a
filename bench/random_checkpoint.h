// SPDX-License-Identifier: MIT
// The random checkpoints of the benchmark programs (bench.cpp, gui_bench.cpp): Llama weight names (ERNIE 4.5 uses the
// same ones), bfloat16, seed 0. Not used by nnscope itself.
#pragma once

#include "core/model/family.h"
#include "core/io/safetensors.h"
#include "core/model/weights.h"

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
    const nlohmann::json config = {{"model_type", "llama"},           {"vocab_size", s.vocab},
                                   {"hidden_size", s.hidden},         {"intermediate_size", s.intermediate},
                                   {"num_hidden_layers", s.layers},   {"num_attention_heads", s.heads},
                                   {"num_key_value_heads", s.kvHeads}, {"head_dim", s.headDim},
                                   {"tie_word_embeddings", s.tiedLmHead}};
    std::vector<std::pair<std::string, torch::Tensor>> t;
    // The names (and their order) come from the Llama family's weight schema.
    for (const WeightSpec& spec : weightSchema(llamaFamily(), resolveModelConfig(config, dir + " (bench config)"))) {
        if (spec.shape.size() == 1) {
            t.emplace_back(spec.name, torch::ones(spec.shape).to(torch::kBFloat16));  // a norm's gain
            continue;
        }
        const Module m = spec.key.module;
        const bool embedding = m == Module::EmbedTokens || m == Module::LmHead;
        const double scale = embedding || m == Module::OProj || m == Module::DownProj ? 0.02 : 0.03;
        t.emplace_back(spec.name, (torch::randn(spec.shape) * scale).to(torch::kBFloat16));
    }
    writeSafetensors(dir + "/model.safetensors", t, {{"format", "pt"}});
}

}  // namespace nnscope::bench
