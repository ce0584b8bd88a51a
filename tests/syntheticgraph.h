// SPDX-License-Identifier: MIT
#pragma once
// Synthetic attribution graphs for the tests of pruning, the graph JSON and the Circuit view (test_circuitgraph,
// test_gui): random, not references.
#include "core/analysis/circuitgraph.h"

#include <cstdint>
#include <random>
#include <set>
#include <string>

namespace nnscope::test {

/// A layered synthetic attribution graph in circuit-tracer's node order: `featuresPerCell` features at every layer and
/// position after 0, the error and token nodes, `logits` logits (probabilities 0.5 / (k + 1)); each feature reads up to
/// `edgesPerFeature` random earlier nodes (lower layers, positions <= its own, or tokens), each logit 20 times as many;
/// weights N(0, 1). Token strings "t0", "t1", ....
inline AttributionGraph syntheticGraph(int layers, int positions, int featuresPerCell, int edgesPerFeature, int logits, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    AttributionGraph g;
    g.numLayers = layers;
    for (int p = 0; p < positions; ++p) g.tokenStrings.push_back("t" + std::to_string(p));
    for (int l = 0; l < layers; ++l)
        for (int p = 1; p < positions; ++p)
            for (int f = 0; f < featuresPerCell; ++f) g.nodes.push_back({GraphNode::Kind::Feature, l, p, 1000 + f, 1.0f});
    for (int l = 0; l < layers; ++l)
        for (int p = 0; p < positions; ++p) g.nodes.push_back({GraphNode::Kind::Error, l, p});
    for (int p = 0; p < positions; ++p) g.nodes.push_back({GraphNode::Kind::Token, -1, p, 100 + p});
    for (int k = 0; k < logits; ++k) {
        GraphNode logit{GraphNode::Kind::Logit, layers + 1, positions - 1, 200 + k};
        logit.tokenProb = 0.5f / static_cast<float>(k + 1);
        g.nodes.push_back(logit);
    }
    // candidate sources of a node at (layer, position): every feature and error of a lower layer at positions <= it, tokens
    const size_t n = g.nodes.size();
    g.rowStart.push_back(0);
    for (size_t t = 0; t < n; ++t) {
        const GraphNode& target = g.nodes[t];
        std::set<int32_t> sources;
        if (target.kind == GraphNode::Kind::Feature || target.kind == GraphNode::Kind::Logit) {
            const int want = target.kind == GraphNode::Kind::Logit ? edgesPerFeature * 20 : edgesPerFeature;
            for (int tries = 0; tries < want * 4 && static_cast<int>(sources.size()) < want; ++tries) {
                const auto s = static_cast<int32_t>(rng() % n);
                const GraphNode& src = g.nodes[static_cast<size_t>(s)];
                if (src.kind == GraphNode::Kind::Logit || src.position > target.position) continue;
                if (src.kind != GraphNode::Kind::Token && src.layer >= target.layer) continue;
                sources.insert(s);
            }
        }
        for (int32_t s : sources) {
            g.source.push_back(s);
            g.weight.push_back(normal(rng));
        }
        g.rowStart.push_back(static_cast<int64_t>(g.source.size()));
    }
    return g;
}

}  // namespace nnscope::test
