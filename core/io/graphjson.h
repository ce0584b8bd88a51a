// SPDX-License-Identifier: MIT
#pragma once
// The attribution graph's JSON file, as circuit-tracer 0.5.0 writes it (circuit_tracer/utils/create_graph_files.py
// with the pydantic models of circuit_tracer/frontend/graph_models.py) and Neuronpedia's attribution-graph frontend
// reads it:
//   {"metadata": {slug, scan, transcoder_list, prompt_tokens, prompt, node_threshold, schema_version},
//    "qParams":  {pinnedIds, supernodes: [[name, node_id, ...], ...], linkType, clickedId, sg_pos},
//    "nodes":    [{node_id, feature, layer, ctx_idx, feature_type, token_prob, is_target_logit, run_idx,
//                  reverse_ctx_idx, jsNodeId, clerp, influence, activation}, ...],
//    "links":    [{source, target, weight}, ...]}
// Node ids: features "layer_feature_pos" (feature = Cantor pairing of layer and feature index, feature_type
// "cross layer transcoder"), errors "0_layer_pos" (feature -1, "mlp reconstruction error"), tokens
// "E_tokenid_pos" (feature = pos, layer "E", "embedding"), logits "(numLayers+1)_vocab_pos" (feature = vocab index,
// "logit", clerp 'Output "token" (p=0.123)'). A link goes from its source to its target; its weight is the direct
// effect (circuitgraph.h).
#include "core/analysis/circuitgraph.h"

#include <string>

namespace nnscope {

/// Writes `graph` (every node and edge it holds: prune it first with prunedSubgraph for circuit-tracer's pruned file)
/// to `path` in circuit-tracer's layout, indented by 2 as create_graph_files writes it; labels are the nodes' clerp,
/// pins and supernodes go to qParams. A logit node's clerp is circuit-tracer's 'Output "tok" (p=0.123)', followed by
/// " — " and its label where it has one (so that the token survives a label).
/// Streamed: memory does not grow with the number of edges. Written to a temporary file and renamed, so a failure
/// leaves nothing half-written. Throws nnscope::Error naming the file.
void writeGraphJson(const AttributionGraph& graph, const std::string& path);

/// Reads a graph JSON written by circuit-tracer, downloaded from Neuronpedia, or written by writeGraphJson. Nodes keep
/// the file's order (any order is fine); keys the reader does not know are ignored; a logit's token comes from its
/// clerp when that is circuit-tracer's 'Output "tok" (p=...)' (the label is what follows " — ", or empty), a token's from
/// metadata.prompt_tokens. Edges are stored by target with the sources ascending. Parsed as a stream: the file's text
/// is never held whole, and each node and link is dropped once read, so memory is the graph plus one element.
/// Throws nnscope::Error naming the file: not JSON (with the parser's line and column), a missing or mistyped key
/// (naming the node or link), a node id given twice, a link to an unknown node, a feature whose node_id is not
/// layer_feature_pos. circuit-tracer's ids can collide: a layer-0 feature whose index is a layer number L has the id
/// "0_L_P" of layer L's error at P. Both nodes are kept; a link into that id goes to the feature (errors have no
/// incoming edges), a link out of it comes from the node listed first (the file cannot tell them apart).
AttributionGraph readGraphJson(const std::string& path);

}  // namespace nnscope
