// SPDX-License-Identifier: MIT
#pragma once
// Pruning an attribution graph by influence on the output, as circuit-tracer 0.5.0 prunes it
// (circuit_tracer/graph.py: normalize_matrix, compute_influence, compute_node_influence, compute_edge_influence,
// find_threshold, prune_graph, compute_graph_scores), on the graph's edges in compressed sparse rows: no dense
// [n x n] matrix is made, each step costs a few passes over the edges (a million edges prune in well under a second).
//
// The method ("Circuit Tracing", Ameisen et al. 2025, appendix "Graph pruning"): normalize the absolute adjacency by
// target row (Â[t, s] = |A[t, s]| / Σ_s' |A[t, s']|); a node's influence is the logit-probability-weighted sum over
// every path from it to the logits of the product of Â along the path (w·(Â + Â² + ...), w the logit probabilities
// placed on the logit nodes). Keep the nodes holding `nodeThreshold` of the total influence (tokens and logits always
// stay); on the graph of the kept nodes, score each edge by Â'[t, s]·(influence'[t] + w[t]) and keep the edges holding
// `edgeThreshold` of the total score; then remove, until nothing changes, features and errors without a kept outgoing
// edge and features without a kept incoming edge.
//
// Ties at a threshold: a score equal to the threshold score is kept (circuit-tracer's `>=`). Scores are summed in
// float64 here and in float32 by circuit-tracer, so a score within float32 rounding of the threshold may fall on the
// other side. Where circuit-tracer's edge threshold score is 0 (an edge threshold of 1.0, or one the non-zero scores
// never reach), its dense mask also marks zero-weight pairs as edges, which can keep a node with no real outgoing edge;
// here only the graph's edges exist, so every edge is kept and such a node is removed.
#include "core/analysis/circuitgraph.h"

#include <cstdint>
#include <vector>

namespace nnscope {

/// The outcome of pruneGraph (circuit-tracer's PruneResult).
struct PruneResult {
    std::vector<uint8_t> nodeMask;  ///< [n_nodes] 1: the node is kept
    std::vector<uint8_t> edgeMask;  ///< [n_edges] 1: the edge (in the graph's CSR order) is kept
    /// [n_nodes] each node's cumulative influence score: sort the node influences descending, divide their running
    /// sum by the total; a node's score is the share of influence held by it and every node ranked before it (0..1;
    /// the most influential node has the smallest). Nodes of zero influence (the logits) share the last value.
    std::vector<float> cumulativeScores;
    std::vector<double> nodeInfluence;  ///< [n_nodes] compute_node_influence on the whole graph (float64)
    double nodeScoreThreshold = 0, edgeScoreThreshold = 0;  ///< find_threshold's scores (node influence, edge score)
    int64_t keptNodes = 0, keptEdges = 0;
};

/// The logit weights w [n_nodes]: each logit node's tokenProb, 0 elsewhere.
std::vector<double> logitWeights(const AttributionGraph& graph);

/// The influence of every node on the logits [n_nodes]: w·(Â + Â² + ...) with Â the row-normalized |adjacency|
/// (circuit-tracer's compute_node_influence; rows summing to less than 1e-10 are divided by 1e-10). `keep` (empty: all)
/// drops the edges touching a node whose entry is 0 before normalizing (compute_edge_influence's pruned matrix).
/// Throws nnscope::Error when the powers of Â do not reach zero within 1000 steps (a cycle: not a causal graph).
std::vector<double> nodeInfluence(const AttributionGraph& graph, const std::vector<double>& logitWeights,
                                  const std::vector<uint8_t>& keep = {});

/// circuit-tracer's find_threshold: the score at which the descending cumulative sum of `scores` first reaches
/// `threshold` of their total (the last score when it never does). `padZeros` counts extra zero scores after them
/// (the dense matrix's non-edges), so an index past the given scores gives 0.
double findThreshold(std::vector<double> scores, double threshold, int64_t padZeros = 0);

/// Prunes `graph` as circuit-tracer's prune_graph(graph, nodeThreshold, edgeThreshold). Thresholds outside [0, 1]
/// throw nnscope::Error. Node kinds come from GraphNode::kind (not from index ranges), so a graph in any node order
/// prunes the same.
PruneResult pruneGraph(const AttributionGraph& graph, double nodeThreshold = 0.8, double edgeThreshold = 0.98);

/// The graph of the kept nodes and edges, as circuit-tracer's create_nodes + create_used_nodes_and_edges make the JSON:
/// the kept edges whose source and target are both kept, then the kept nodes that touch one of those edges, and every
/// token and logit node (in the graph's order). Each node's `influence` is its cumulative score; nodeThreshold and
/// edgeThreshold record the thresholds; prompt, tokens, labels, pins (of nodes still present) and supernodes (their
/// present members; a supernode left with none is dropped) are carried over.
AttributionGraph prunedSubgraph(const AttributionGraph& graph, const PruneResult& prune, double nodeThreshold,
                                double edgeThreshold);

/// circuit-tracer's compute_graph_scores.
struct GraphScores {
    /// The share of the tokens' end-to-end influence on the logits that does not flow through error nodes:
    /// Σ token influence / (Σ token influence + Σ error influence).
    double replacement = 0;
    /// The influence-weighted share of every node's normalized inputs that come from non-error nodes:
    /// Σ_t (1 − Σ_{s error} Â[t, s])·(influence[t] + w[t]) / Σ_t (influence[t] + w[t]).
    double completeness = 0;
};
GraphScores graphScores(const AttributionGraph& graph);

}  // namespace nnscope
