// SPDX-License-Identifier: MIT
// The random checkpoints of the benchmark programs (bench.cpp, gui_bench.cpp): Llama weight names (ERNIE 4.5 uses the
// same ones), bfloat16, seed 0. Not used by nnscope itself.
#pragma once

#include "core/model/family.h"
#include "core/io/safetensors.h"
#include "core/model/weights.h"

#include <nlohmann/json.hpp>

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
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

/// The benchmarks' ERNIE-4.5-0.3B-shaped checkpoint: 18 blocks of width 1024, 16 query heads over 2 key/value heads of
/// 128, an MLP of 3072, a 103424-token vocabulary, tied embeddings, bfloat16 (0.7 GB). Written to `dir` (created) unless
/// it already holds model.safetensors. Throws nnscope::Error when it cannot be written.
inline constexpr RandomShape kErnie03bShape{18, 1024, 16, 2, 128, 3072, 103424, /*tiedLmHead=*/true};
inline void writeRandomErnieCheckpoint(const std::string& dir) {
    namespace fs = std::filesystem;
    if (fs::exists(fs::path(dir) / "model.safetensors")) return;
    fs::create_directories(dir);
    const RandomShape& s = kErnie03bShape;
    writeRandomLlamaWeights(dir, s);
    const nlohmann::json c = {{"architectures", {"Ernie4_5ForCausalLM"}}, {"model_type", "ernie4_5"}, {"hidden_size", s.hidden},
                              {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
                              {"num_key_value_heads", s.kvHeads}, {"head_dim", s.headDim}, {"vocab_size", s.vocab}, {"rms_norm_eps", 1e-5},
                              {"max_position_embeddings", 131072}, {"rope_theta", 500000.0}, {"tie_word_embeddings", true},
                              {"use_bias", false}, {"hidden_act", "silu"}, {"torch_dtype", "bfloat16"}};
    std::ofstream(dir + "/config.json") << c.dump(2);
}

}  // namespace nnscope::bench
