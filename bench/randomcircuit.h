// SPDX-License-Identifier: MIT
#pragma once
// A random Llama-shaped model in memory and random per-layer JumpReLU transcoders at mlp_input → mlp_output, for the
// attribution-graph benchmark (bench/circuit_bench.cpp) and test_circuit's memory measurement. Not a fixture: nothing
// is compared with a reference on it.
#include "core/analysis/circuit.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace nnscope::bench {

/// The shapes of randomCircuit's model and transcoders.
struct RandomCircuitShape {
    int64_t layers = 4, hidden = 256, heads = 8, intermediate = 768, vocab = 8192, features = 1024;
    double threshold = 1.96;      ///< JumpReLU threshold on N(0,1) pre-activations: 1.96 keeps 1/40 active
    double decoderScale = 0.05;   ///< W_dec entries N(0, decoderScale²)
    uint64_t seed = 0;
};

/// config.json of the random Llama (untied, SiLU, RMSNorm, rope theta 10000).
inline nlohmann::json randomLlamaConfig(const RandomCircuitShape& s) {
    return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", s.hidden},
            {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
            {"num_key_value_heads", s.heads}, {"vocab_size", s.vocab}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0},
            {"max_position_embeddings", 4096}, {"hidden_act", "silu"}, {"tie_word_embeddings", false}};
}

/// One random per-layer transcoder of `s` for block `layer` (circuit-tracer's JumpReLU without a ReLU): W_enc
/// [hidden, features] N(0, 1/hidden), threshold s.threshold, W_dec [features, hidden] N(0, s.decoderScale²), zero biases.
inline std::shared_ptr<Dictionary> randomTranscoder(const RandomCircuitShape& s, int64_t layer) {
    auto dict = std::make_shared<Dictionary>();
    dict->format = "circuit-tracer";
    dict->architecture = "jump_relu";
    dict->transcoder = true;
    dict->activation = Dictionary::Activation::JumpReLUSigned;
    dict->dIn = dict->dOut = s.hidden;
    dict->dSae = s.features;
    dict->site = "blocks." + std::to_string(layer) + ".mlp.hook_in";
    dict->siteOut = "blocks." + std::to_string(layer) + ".mlp.hook_out";
    dict->dir = "random layer " + std::to_string(layer);
    dict->wEnc = torch::randn({s.hidden, s.features}) / std::sqrt(static_cast<double>(s.hidden));
    dict->bEnc = torch::zeros({s.features});
    dict->threshold = torch::full({s.features}, s.threshold);
    dict->wDec = torch::randn({s.features, s.hidden}) * s.decoderScale;
    dict->bDec = torch::zeros({s.hidden});
    return dict;
}

/// The random model (float32, norms of weight 1, linear weights N(0, 1/fan_in), embeddings N(0, 0.25)) and one random
/// transcoder per block, from torch::manual_seed(s.seed).
inline std::pair<std::shared_ptr<const Model>, CircuitTranscoders> randomCircuit(const RandomCircuitShape& s) {
    torch::manual_seed(s.seed);
    const int64_t d = s.hidden;
    std::map<std::string, torch::Tensor> w;
    auto lin = [](int64_t out, int64_t in) { return torch::randn({out, in}) / std::sqrt(static_cast<double>(in)); };
    w["model.embed_tokens.weight"] = torch::randn({s.vocab, d}) * 0.5;
    w["lm_head.weight"] = lin(s.vocab, d);
    w["model.norm.weight"] = torch::ones({d});
    CircuitTranscoders t;
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "input_layernorm.weight"] = torch::ones({d});
        w[p + "post_attention_layernorm.weight"] = torch::ones({d});
        for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) w[p + "self_attn." + m + ".weight"] = lin(d, d);
        w[p + "mlp.gate_proj.weight"] = lin(s.intermediate, d);
        w[p + "mlp.up_proj.weight"] = lin(s.intermediate, d);
        w[p + "mlp.down_proj.weight"] = lin(d, s.intermediate);
        t.perLayer.push_back(randomTranscoder(s, l));
    }
    return {Model::fromTensors(randomLlamaConfig(s), w, LoadOptions().withDtype(torch::kFloat32), "random Llama"), t};
}

}  // namespace nnscope::bench
