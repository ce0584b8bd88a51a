// SPDX-License-Identifier: MIT
// An attribution graph on a larger random model (a program, not a test): a random Llama-shaped model built in memory
// (default 4 blocks of width 256, 8 heads, MLP 768, vocabulary 8192, float32) with random per-layer JumpReLU
// transcoders (default 1024 features, about 1/40 active) at mlp_input → mlp_output, and prompts of 16 and 32 tokens.
// For each it prints the estimate (estimateCircuit with the counted active features) beside the measured time, the
// measured peak resident memory above what the process held before (/proc/self/status VmHWM after resetting it), the
// active features, the edges and the backward passes.
//
//   nnscope_circuit_bench [--layers N] [--hidden D] [--heads H] [--intermediate I] [--vocab V] [--features F] [--tokens T]... [--batch B]
//                         [--max-feature-nodes M] [--estimate-only 1]
#include "core/analysis/circuit.h"
#include "core/model/model.h"
#include "core/run/trace.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace nnscope;

namespace {

std::pair<int64_t, int64_t> resident() {
    std::ifstream in("/proc/self/status");
    std::string line;
    int64_t rss = 0, hwm = 0;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) rss = std::stoll(line.substr(6)) * 1024;
        if (line.rfind("VmHWM:", 0) == 0) hwm = std::stoll(line.substr(6)) * 1024;
    }
    return {rss, hwm};
}

}  // namespace

int main(int argc, char** argv) {
    int64_t layers = 4, d = 256, features = 1024, batch = 512, maxNodes = 0, estimateOnly = 0, vocab = 8192, inter = 0, heads = 8;
    std::vector<int64_t> tokens;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int64_t v = std::stoll(argv[i + 1]);
        if (a == "--layers") layers = v;
        else if (a == "--hidden") d = v;
        else if (a == "--features") features = v;
        else if (a == "--tokens") tokens.push_back(v);
        else if (a == "--batch") batch = v;
        else if (a == "--max-feature-nodes") maxNodes = v;
        else if (a == "--estimate-only") estimateOnly = v;  // 1: print estimateCircuit's figures for 1/40 active, run nothing
        else if (a == "--vocab") vocab = v;
        else if (a == "--heads") heads = v;
        else if (a == "--intermediate") inter = v;
        else {
            std::cerr << "unknown option " << a << "\n";
            return 2;
        }
    }
    if (tokens.empty()) tokens = {16, 32};
    configureThreads(0);  // every core (libtorch starts with one here)
    if (inter == 0) inter = 3 * d;
    const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", d},
                                   {"intermediate_size", inter}, {"num_hidden_layers", layers}, {"num_attention_heads", heads},
                                   {"num_key_value_heads", heads}, {"vocab_size", vocab}, {"rms_norm_eps", 1e-5},
                                   {"rope_theta", 10000.0}, {"max_position_embeddings", 4096}, {"hidden_act", "silu"},
                                   {"tie_word_embeddings", false}};
    if (estimateOnly) {  // sizes only: a model without weights, transcoders of broadcast (unallocated) tensors
        auto sized = Model::withoutWeights(config, "random Llama (sizes only)");
        CircuitTranscoders t;
        for (int64_t l = 0; l < layers; ++l) {
            auto dict = std::make_shared<Dictionary>();
            dict->format = "circuit-tracer";
            dict->transcoder = true;
            dict->activation = Dictionary::Activation::JumpReLUSigned;
            dict->dIn = dict->dOut = d;
            dict->dSae = features;
            dict->site = "blocks." + std::to_string(l) + ".mlp.hook_in";
            dict->siteOut = "blocks." + std::to_string(l) + ".mlp.hook_out";
            dict->dir = "random layer " + std::to_string(l);
            dict->wEnc = torch::zeros({1}).expand({d, features});
            dict->wDec = torch::zeros({1}).expand({features, d});
            dict->bEnc = dict->threshold = torch::zeros({features});
            dict->bDec = torch::zeros({d});
            t.perLayer.push_back(dict);
        }
        for (int64_t n : tokens) {
            CircuitOptions o;
            o.batchSize = static_cast<int>(batch);
            o.maxFeatureNodes = maxNodes;
            o.activePerLayerPosition = static_cast<double>(features) / 40.0;
            std::printf("%ld tokens: estimate %s\n", static_cast<long>(n), estimateCircuit(*sized, t, n, o).text().c_str());
        }
        return 0;
    }
    torch::manual_seed(0);
    std::map<std::string, torch::Tensor> w;
    auto lin = [](int64_t out, int64_t in) { return torch::randn({out, in}) / std::sqrt(static_cast<double>(in)); };
    w["model.embed_tokens.weight"] = torch::randn({vocab, d}) * 0.5;
    w["lm_head.weight"] = lin(vocab, d);
    w["model.norm.weight"] = torch::ones({d});
    CircuitTranscoders t;
    for (int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "input_layernorm.weight"] = torch::ones({d});
        w[p + "post_attention_layernorm.weight"] = torch::ones({d});
        for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) w[p + "self_attn." + m + ".weight"] = lin(d, d);
        w[p + "mlp.gate_proj.weight"] = lin(inter, d);
        w[p + "mlp.up_proj.weight"] = lin(inter, d);
        w[p + "mlp.down_proj.weight"] = lin(d, inter);
        auto dict = std::make_shared<Dictionary>();
        dict->format = "circuit-tracer";
        dict->architecture = "jump_relu";
        dict->transcoder = true;
        dict->activation = Dictionary::Activation::JumpReLUSigned;
        dict->dIn = dict->dOut = d;
        dict->dSae = features;
        dict->site = "blocks." + std::to_string(l) + ".mlp.hook_in";
        dict->siteOut = "blocks." + std::to_string(l) + ".mlp.hook_out";
        dict->dir = "random layer " + std::to_string(l);
        dict->wEnc = torch::randn({d, features}) / std::sqrt(static_cast<double>(d));
        dict->bEnc = torch::zeros({features});
        dict->threshold = torch::full({features}, 1.96);  // P(N(0,1) > 1.96) = 1/40
        dict->wDec = torch::randn({features, d}) * 0.05;
        dict->bDec = torch::zeros({d});
        t.perLayer.push_back(dict);
    }
    auto model = Model::fromTensors(config, w, LoadOptions().withDtype(torch::kFloat32), "random Llama");
    std::printf("random Llama: %ld blocks, width %ld, MLP %ld, vocabulary %ld; transcoders %ld features; %d threads\n",
                static_cast<long>(layers), static_cast<long>(d), static_cast<long>(inter), static_cast<long>(vocab),
                static_cast<long>(features), at::get_num_threads());
    for (int64_t n : tokens) {
        std::vector<int64_t> ids{1};
        for (int64_t i = 1; i < n; ++i) ids.push_back(2 + (i * 7919) % (vocab - 2));
        CircuitOptions o;
        o.batchSize = static_cast<int>(batch);
        o.maxFeatureNodes = maxNodes;
        {
            std::ofstream reset("/proc/self/clear_refs");
            reset << "5";
        }
        const int64_t before = resident().first;
        CircuitStats s;
        const AttributionGraph g = computeAttributionGraph(*model, t, ids, o, {}, nullptr, &s);
        const int64_t peak = resident().second - before;
        CircuitOptions counted = o;
        counted.activePerLayerPosition = static_cast<double>(s.activeFeatures) / static_cast<double>(layers * (n - 1));
        const CircuitEstimate e = estimateCircuit(*model, t, n, counted);
        std::printf("%ld tokens: %ld active features (%ld with rows), %ld edges, %ld backward passes: %.2f s, peak %.1f MB above "
                    "the start | estimate: %.2f s, %.1f MB\n",
                    static_cast<long>(n), static_cast<long>(s.activeFeatures), static_cast<long>(s.selectedFeatures),
                    static_cast<long>(g.edgeCount()), static_cast<long>(s.backwardPasses), s.seconds, peak / 1e6, e.seconds,
                    e.peakBytes / 1e6);
    }
    return 0;
}
