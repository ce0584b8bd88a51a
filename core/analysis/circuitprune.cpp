// SPDX-License-Identifier: MIT
#include "core/analysis/circuitprune.h"

#include "core/model/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace nnscope {

namespace {

using Kind = GraphNode::Kind;

void checkGraph(const AttributionGraph& graph) {
    const size_t n = graph.nodes.size();
    if (graph.rowStart.size() != n + 1 || graph.source.size() != graph.weight.size() ||
        (n > 0 && graph.rowStart.back() != static_cast<int64_t>(graph.source.size())))
        throw Error("attribution graph: its edge rows do not match its " + std::to_string(n) + " nodes and " +
                    std::to_string(graph.source.size()) + " edges");
}

/// 1 / Σ_s |A[t, s]| over the edges whose both ends are kept, clamped as normalize_matrix clamps (1e-10).
std::vector<double> inverseRowSums(const AttributionGraph& graph, const std::vector<uint8_t>& keep) {
    const size_t n = graph.nodes.size();
    std::vector<double> inverse(n, 0.0);
    for (size_t t = 0; t < n; ++t) {
        double sum = 0;
        if (keep.empty() || keep[t])
            for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e)
                if (keep.empty() || keep[static_cast<size_t>(graph.source[static_cast<size_t>(e)])])
                    sum += std::abs(static_cast<double>(graph.weight[static_cast<size_t>(e)]));
        inverse[t] = 1.0 / std::max(sum, 1e-10);
    }
    return inverse;
}

bool kept(const std::vector<uint8_t>& keep, size_t i) { return keep.empty() || keep[i]; }

}  // namespace

std::vector<double> logitWeights(const AttributionGraph& graph) {
    std::vector<double> w(graph.nodes.size(), 0.0);
    for (size_t i = 0; i < graph.nodes.size(); ++i)
        if (graph.nodes[i].kind == Kind::Logit) w[i] = graph.nodes[i].tokenProb;
    return w;
}

std::vector<double> nodeInfluence(const AttributionGraph& graph, const std::vector<double>& logitWeights,
                                  const std::vector<uint8_t>& keep) {
    checkGraph(graph);
    const size_t n = graph.nodes.size();
    const std::vector<double> inverse = inverseRowSums(graph, keep);
    // current = current @ Â, one pass over the edges by target row
    auto step = [&](const std::vector<double>& current) {
        std::vector<double> next(n, 0.0);
        for (size_t t = 0; t < n; ++t) {
            if (current[t] == 0 || !kept(keep, t)) continue;
            const double scale = current[t] * inverse[t];
            for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) {
                const auto s = static_cast<size_t>(graph.source[static_cast<size_t>(e)]);
                if (kept(keep, s)) next[s] += scale * std::abs(static_cast<double>(graph.weight[static_cast<size_t>(e)]));
            }
        }
        return next;
    };
    std::vector<double> current = step(logitWeights);
    std::vector<double> influence = current;
    constexpr int kMaxIterations = 1000;  // compute_influence's max_iter
    for (int iteration = 0; std::any_of(current.begin(), current.end(), [](double v) { return v != 0; }); ++iteration) {
        if (iteration >= kMaxIterations)
            throw Error("attribution graph: the influence did not converge after " + std::to_string(iteration) +
                        " steps (the edges form a cycle; an attribution graph's edges go from earlier layers to later ones)");
        current = step(current);
        for (size_t i = 0; i < n; ++i) influence[i] += current[i];
    }
    return influence;
}

double findThreshold(std::vector<double> scores, double threshold, int64_t padZeros) {
    if (scores.empty()) return 0;
    std::sort(scores.begin(), scores.end(), std::greater<double>());
    const double total = std::accumulate(scores.begin(), scores.end(), 0.0);
    if (!(total > 0)) return 0;
    // torch.searchsorted (left): the first index whose cumulative share is >= threshold
    double running = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
        running += scores[i];
        if (running / total >= threshold) return scores[i];
    }
    // past the given scores: the zeros after them, or (none) the last score, as circuit-tracer clamps the index
    return padZeros > 0 ? 0.0 : scores.back();
}

PruneResult pruneGraph(const AttributionGraph& graph, double nodeThreshold, double edgeThreshold) {
    if (!(nodeThreshold >= 0 && nodeThreshold <= 1)) throw Error("node threshold must be between 0.0 and 1.0");
    if (!(edgeThreshold >= 0 && edgeThreshold <= 1)) throw Error("edge threshold must be between 0.0 and 1.0");
    checkGraph(graph);
    const size_t n = graph.nodes.size();
    const size_t m = graph.source.size();
    const std::vector<double> w = logitWeights(graph);
    PruneResult r;

    // node influence and its threshold; tokens and logits always stay
    r.nodeInfluence = nodeInfluence(graph, w);
    r.nodeScoreThreshold = findThreshold(r.nodeInfluence, nodeThreshold);
    r.nodeMask.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const Kind kind = graph.nodes[i].kind;
        r.nodeMask[i] = kind == Kind::Token || kind == Kind::Logit || r.nodeInfluence[i] >= r.nodeScoreThreshold;
    }

    // edge scores on the graph of the kept nodes: Â'[t, s]·(influence'[t] + w[t])
    const std::vector<double> inverse = inverseRowSums(graph, r.nodeMask);
    std::vector<double> pruned = nodeInfluence(graph, w, r.nodeMask);
    for (size_t i = 0; i < n; ++i) pruned[i] += w[i];
    std::vector<double> edgeScores(m, 0.0);
    for (size_t t = 0; t < n; ++t) {
        if (!r.nodeMask[t]) continue;
        for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) {
            const auto s = static_cast<size_t>(graph.source[static_cast<size_t>(e)]);
            if (r.nodeMask[s])
                edgeScores[static_cast<size_t>(e)] =
                    std::abs(static_cast<double>(graph.weight[static_cast<size_t>(e)])) * inverse[t] * pruned[t];
        }
    }
    const int64_t denseCount = static_cast<int64_t>(n) * static_cast<int64_t>(n);
    r.edgeScoreThreshold = findThreshold(edgeScores, edgeThreshold, denseCount - static_cast<int64_t>(m));
    r.edgeMask.assign(m, 0);
    for (size_t e = 0; e < m; ++e) r.edgeMask[e] = edgeScores[e] >= r.edgeScoreThreshold;

    // features and errors need a kept outgoing edge, features a kept incoming one, until nothing changes
    std::vector<uint8_t> hasOut(n), hasIn(n);
    auto dropUnconnected = [&] {
        std::fill(hasOut.begin(), hasOut.end(), 0);
        std::fill(hasIn.begin(), hasIn.end(), 0);
        for (size_t t = 0; t < n; ++t)
            for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e)
                if (r.edgeMask[static_cast<size_t>(e)]) {
                    hasIn[t] = 1;
                    hasOut[static_cast<size_t>(graph.source[static_cast<size_t>(e)])] = 1;
                }
        bool changed = false;
        for (size_t i = 0; i < n; ++i) {
            const Kind kind = graph.nodes[i].kind;
            const bool keep = r.nodeMask[i] && (kind == Kind::Token || kind == Kind::Logit || hasOut[i]) &&
                              (kind != Kind::Feature || hasIn[i]);
            if (keep != static_cast<bool>(r.nodeMask[i])) changed = true;
            r.nodeMask[i] = keep;
        }
        return changed;
    };
    while (dropUnconnected()) {
        for (size_t t = 0; t < n; ++t)
            for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e)
                if (!r.nodeMask[t] || !r.nodeMask[static_cast<size_t>(graph.source[static_cast<size_t>(e)])])
                    r.edgeMask[static_cast<size_t>(e)] = 0;
    }

    // cumulative influence: the running share of the descending influences
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.nodeInfluence[a] > r.nodeInfluence[b]; });
    const double total = std::accumulate(r.nodeInfluence.begin(), r.nodeInfluence.end(), 0.0);
    r.cumulativeScores.assign(n, 0.0f);
    double running = 0;
    for (size_t k = 0; k < n; ++k) {
        running += r.nodeInfluence[order[k]];
        r.cumulativeScores[order[k]] = static_cast<float>(running / total);
    }
    r.keptNodes = std::count(r.nodeMask.begin(), r.nodeMask.end(), uint8_t{1});
    r.keptEdges = std::count(r.edgeMask.begin(), r.edgeMask.end(), uint8_t{1});
    return r;
}

AttributionGraph prunedSubgraph(const AttributionGraph& graph, const PruneResult& prune, double nodeThreshold,
                                double edgeThreshold) {
    checkGraph(graph);
    const size_t n = graph.nodes.size();
    if (prune.nodeMask.size() != n || prune.edgeMask.size() != graph.source.size())
        throw Error("attribution graph: the pruning's masks were made for another graph");
    // the edges kept with both ends kept, and the nodes they touch (tokens and logits always)
    std::vector<uint8_t> used(n, 0);
    for (size_t t = 0; t < n; ++t) {
        const Kind kind = graph.nodes[t].kind;
        if (prune.nodeMask[t] && (kind == Kind::Token || kind == Kind::Logit)) used[t] = 1;
        if (!prune.nodeMask[t]) continue;
        for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) {
            const auto s = static_cast<size_t>(graph.source[static_cast<size_t>(e)]);
            if (prune.edgeMask[static_cast<size_t>(e)] && prune.nodeMask[s]) used[t] = used[s] = 1;
        }
    }
    AttributionGraph out;
    out.prompt = graph.prompt;
    out.tokenIds = graph.tokenIds;
    out.tokenStrings = graph.tokenStrings;
    out.numLayers = graph.numLayers;
    out.scan = graph.scan;
    out.transcoderList = graph.transcoderList;
    out.slug = graph.slug;
    out.modelDir = graph.modelDir;
    out.transcoderDir = graph.transcoderDir;
    out.nodeThreshold = nodeThreshold;
    out.edgeThreshold = edgeThreshold;
    std::vector<int32_t> index(n, -1);
    for (size_t i = 0; i < n; ++i) {
        if (!used[i]) continue;
        index[i] = static_cast<int32_t>(out.nodes.size());
        out.nodes.push_back(graph.nodes[i]);
        out.nodes.back().influence = prune.cumulativeScores.empty() ? graph.nodes[i].influence : prune.cumulativeScores[i];
    }
    out.rowStart.push_back(0);
    for (size_t t = 0; t < n; ++t) {
        if (!used[t]) continue;
        for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) {
            const auto s = static_cast<size_t>(graph.source[static_cast<size_t>(e)]);
            if (prune.edgeMask[static_cast<size_t>(e)] && prune.nodeMask[t] && prune.nodeMask[s]) {
                out.source.push_back(index[s]);
                out.weight.push_back(graph.weight[static_cast<size_t>(e)]);
            }
        }
        out.rowStart.push_back(static_cast<int64_t>(out.source.size()));
    }
    // the researcher's state, for the nodes still present
    std::unordered_map<std::string, int> present;
    for (const GraphNode& node : out.nodes) present.emplace(node.nodeId(), 1);
    for (const std::string& id : graph.pinnedIds)
        if (present.count(id)) out.pinnedIds.push_back(id);
    for (const Supernode& group : graph.supernodes) {
        Supernode kept{group.name, {}};
        for (const std::string& id : group.nodeIds)
            if (present.count(id)) kept.nodeIds.push_back(id);
        if (!kept.nodeIds.empty()) out.supernodes.push_back(std::move(kept));
    }
    return out;
}

GraphScores graphScores(const AttributionGraph& graph) {
    checkGraph(graph);
    const size_t n = graph.nodes.size();
    const std::vector<double> w = logitWeights(graph);
    const std::vector<double> influence = nodeInfluence(graph, w);
    const std::vector<double> inverse = inverseRowSums(graph, {});
    double tokens = 0, errors = 0, weighted = 0, total = 0;
    for (size_t t = 0; t < n; ++t) {
        const Kind kind = graph.nodes[t].kind;
        if (kind == Kind::Token) tokens += influence[t];
        if (kind == Kind::Error) errors += influence[t];
        double fromErrors = 0;
        for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e)
            if (graph.nodes[static_cast<size_t>(graph.source[static_cast<size_t>(e)])].kind == Kind::Error)
                fromErrors += std::abs(static_cast<double>(graph.weight[static_cast<size_t>(e)])) * inverse[t];
        const double output = influence[t] + w[t];
        weighted += (1 - fromErrors) * output;
        total += output;
    }
    GraphScores scores;
    scores.replacement = tokens / (tokens + errors);
    scores.completeness = weighted / total;
    return scores;
}

}  // namespace nnscope
