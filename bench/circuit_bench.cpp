// SPDX-License-Identifier: MIT
// An attribution graph on a larger random model (a program, not a test): a random Llama-shaped model built in memory
// (default 4 blocks of width 256, 8 heads, MLP 768, vocabulary 8192, float32) with random per-layer JumpReLU
// transcoders (default 1024 features, about 1/40 active, or about --l0 per block and position) at mlp_input →
// mlp_output, and prompts of 16 and 32 tokens.
// For each it prints the estimate (estimateCircuit with the counted active features) beside the measured time, the
// measured peak resident memory above what the process held before (/proc/self/status VmHWM after resetting it), the
// active features, the edges and the backward passes.
//
//   nnscope_circuit_bench [--layers N] [--hidden D] [--heads H] [--intermediate I] [--vocab V] [--features F] [--tokens T]... [--batch B]
//                         [--max-feature-nodes M] [--l0 N] [--estimate-only 1]
#include "core/analysis/circuit.h"
#include "core/model/compute_dtype.h"
#include "core/model/model.h"
#include "core/run/trace.h"
#include "bench/peakmemory.h"
#include "bench/randomcircuit.h"

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

/// The z with P(Z > z) = p for a standard normal Z (bisection on erfc: the benchmark's threshold, not a hot path).
double upperNormalQuantile(double p) {
    double lo = -10, hi = 10;
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

}  // namespace

int main(int argc, char** argv) {
    int64_t layers = 4, d = 256, features = 1024, batch = 512, maxNodes = 0, estimateOnly = 0, vocab = 8192, inter = 0, heads = 8;
    double l0 = 0;  // active features per block and position expected; 0: 1/40 of them
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
        else if (a == "--estimate-only") estimateOnly = v;  // 1: print estimateCircuit's figures for the expected L0, run nothing
        else if (a == "--l0") l0 = static_cast<double>(v);
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
    bench::RandomCircuitShape shape;
    shape.layers = layers;
    shape.hidden = d;
    shape.heads = heads;
    shape.intermediate = inter;
    shape.vocab = vocab;
    shape.features = features;
    if (l0 <= 0) l0 = static_cast<double>(features) / 40.0;
    // pre-activations are about N(0, 1): a threshold z keeps P(Z > z) of the features active
    shape.threshold = upperNormalQuantile(l0 / static_cast<double>(features));
    if (estimateOnly) {  // sizes only: a model without weights, transcoders of broadcast (unallocated) tensors
        auto sized = Model::withoutWeights(bench::randomLlamaConfig(shape), "random Llama (sizes only)");
        CircuitTranscoders t;
        for (int64_t l = 0; l < layers; ++l) {
            bench::RandomCircuitShape small = shape;
            small.hidden = small.features = 1;  // the fields only; the tensors below are broadcast views of the sizes
            auto dict = bench::randomTranscoder(small, l);
            dict->dIn = dict->dOut = d;
            dict->dSae = features;
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
            o.activePerLayerPosition = l0;
            const CircuitEstimate e = estimateCircuit(*sized, t, n, o);
            std::printf("%ld tokens: estimate %s (%.3g FLOP at %.0f GFLOP/s, 512 x 512)\n", static_cast<long>(n), e.text().c_str(), e.flops,
                        e.matmulSpeed / 1e9);
        }
        return 0;
    }
    auto [model, t] = bench::randomCircuit(shape);
    std::printf("random Llama: %ld blocks, width %ld, MLP %ld, vocabulary %ld; transcoders %ld features (threshold %.3f: "
                "about %.0f active per block and position); %d threads\n",
                static_cast<long>(layers), static_cast<long>(d), static_cast<long>(inter), static_cast<long>(vocab),
                static_cast<long>(features), shape.threshold, l0, at::get_num_threads());
    std::fflush(stdout);
    for (int64_t n : tokens) {
        std::vector<int64_t> ids{1};
        for (int64_t i = 1; i < n; ++i) ids.push_back(2 + (i * 7919) % (vocab - 2));
        CircuitOptions o;
        o.batchSize = static_cast<int>(batch);
        o.maxFeatureNodes = maxNodes;
        // the transcoders are already in this process's memory (a real run maps them from their files), and the
        // estimate counts their weights: add them back to what is available, or they are counted twice
        if (const auto available = availableMemoryBytes()) o.memoryLimit = static_cast<int64_t>(*available) + t.weightBytes();
        const bench::PeakMemory meter;
        CircuitStats s;
        // the phases on stderr as they go (a run at the 1B shape takes most of an hour)
        const auto start = std::chrono::steady_clock::now();
        std::string lastPhase;
        int64_t lastPercent = -1;
        const CircuitProgress progress = [&](const std::string& phase, int64_t done, int64_t total) {
            const int64_t percent = total > 0 ? done * 10 / total * 10 : 0;
            if (phase == lastPhase && percent == lastPercent) return;
            lastPhase = phase;
            lastPercent = percent;
            std::fprintf(stderr, "  %.0f s: %s %ld / %ld\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                         phase.c_str(), static_cast<long>(done), static_cast<long>(total));
        };
        const AttributionGraph g = computeAttributionGraph(*model, t, ids, o, progress, nullptr, &s);
        const int64_t peak = meter.peakBytes();
        CircuitOptions counted = o;
        counted.activePerLayerPosition = static_cast<double>(s.activeFeatures) / static_cast<double>(layers * (n - 1));
        const CircuitEstimate e = estimateCircuit(*model, t, n, counted);
        std::printf("%ld tokens: %ld active features (%ld with rows), %ld edges, %ld backward passes crossing %ld blocks: %.2f s "
                    "(forward %.2f, backward %.2f, rows %.2f, ranking %.2f), peak %.1f MB above the start | estimate: %.2f s, "
                    "%.1f MB (%.1f MB without the transcoders' weights), %.3g FLOP at %.0f GFLOP/s (512 x 512)\n",
                    static_cast<long>(n), static_cast<long>(s.activeFeatures), static_cast<long>(s.selectedFeatures),
                    static_cast<long>(g.edgeCount()), static_cast<long>(s.backwardPasses), static_cast<long>(s.blocksCrossed), s.seconds,
                    s.forwardSeconds, s.backwardSeconds, s.contractionSeconds, s.rankingSeconds, peak / 1e6, e.seconds,
                    e.peakBytes / 1e6, (e.peakBytes - t.weightBytes()) / 1e6, e.flops, e.matmulSpeed / 1e9);
        std::fflush(stdout);
    }
    return 0;
}
