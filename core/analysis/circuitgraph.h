// SPDX-License-Identifier: MIT
#pragma once
// An attribution graph ("Circuit Tracing", Ameisen et al. 2025) in the form circuit-tracer 0.5.0 and Neuronpedia share:
// nodes are active transcoder features, MLP reconstruction errors, input tokens and target logits; an edge is the
// direct effect of its source on its target in the local replacement model (attention patterns and norm scales frozen
// at the real pass, every MLP replaced by its transcoder's reconstruction plus a frozen error). This header holds the
// graph only: computing it (core/analysis/circuit.h), pruning it (core/analysis/circuitprune.h) and its JSON file
// (core/io/graphjson.h) each have their own.
//
// Node order, when the graph was computed (circuit_tracer/graph.py:Graph, the adjacency's order): the selected
// features in the order of circuit-tracer's active_features (layer, position, feature ascending), then the error
// nodes layer-major (error[layer 0][position 0], error[0][1], ..., error[L-1][P-1]), then the token nodes (position
// 0..P-1), then the logit nodes (most probable first). A graph read from a JSON file keeps the file's order.
#include <cstdint>
#include <string>
#include <vector>

namespace nnscope {

/// One node of an attribution graph.
struct GraphNode {
    enum class Kind { Feature, Error, Token, Logit };
    Kind kind = Kind::Feature;
    /// Feature: the transcoder layer it reads (its source layer for a cross-layer transcoder). Error: the layer whose
    /// MLP it stands for. Token: -1 (JSON layer "E"). Logit: the number of layers + 1 (JSON's convention).
    int layer = 0;
    int64_t position = 0;  ///< the prompt position, 0 = the first token (BOS where the tokenizer adds one); JSON ctx_idx
    /// Feature: the feature's index in its layer's transcoder. Token: the token id. Logit: the vocabulary index.
    /// Error: -1.
    int64_t index = -1;
    /// Feature: its activation on this prompt (the transcoder's post-activation, float32). Others: 0.
    float activation = 0;
    /// Logit: the target's probability under the real pass (softmax of the last position's logits). Others: 0.
    float tokenProb = 0;
    /// The node's cumulative influence score from pruning (prune_graph's cumulative_scores: the share of total
    /// influence held by this node and every node of larger influence, in [0, 1]); NaN until pruned or read.
    float influence = 0;
    bool targetLogit = false;  ///< the most probable logit (circuit-tracer marks logit 0 as the target)
    std::string token;         ///< Token and Logit: the token's text as the tokenizer decodes it
    std::string label;         ///< the node's label (JSON "clerp"); empty when unlabelled

    /// The id circuit-tracer writes (circuit_tracer/frontend/graph_models.py:Node): features "layer_feature_pos",
    /// errors "0_layer_pos", tokens "E_tokenid_pos", logits "(numLayers+1)_vocab_pos".
    std::string nodeId() const;
    /// The frontend's id (jsNodeId): features "layer_feature-0", errors "layer_pos-0", tokens "E_tokenid-pos", logits
    /// "L_vocab-pos".
    std::string jsNodeId() const;
};

/// A named group of nodes made by the researcher (Neuronpedia's supernode: qParams.supernodes entries are
/// [name, node_id, node_id, ...]).
struct Supernode {
    std::string name;
    std::vector<std::string> nodeIds;
};

/// An attribution graph: nodes, and the edges into each node in compressed sparse rows.
struct AttributionGraph {
    std::string prompt;                     ///< the prompt text (metadata.prompt)
    std::vector<int64_t> tokenIds;          ///< [n_pos] the prompt's token ids (empty for a JSON graph without them)
    std::vector<std::string> tokenStrings;  ///< [n_pos] each token as the tokenizer decodes it (metadata.prompt_tokens)
    int numLayers = 0;                      ///< the model's number of blocks
    std::string scan;                       ///< the transcoders' identifier (metadata.scan): their folder's name here
    std::vector<std::string> transcoderList;  ///< metadata.transcoder_list
    std::string slug;                       ///< metadata.slug: the graph's name
    std::string modelDir, transcoderDir;    ///< where it was computed (empty for a graph read from a file)

    std::vector<GraphNode> nodes;

    /// Edges by target, compressed sparse rows: the edges into node t are entries rowStart[t] .. rowStart[t+1] - 1 of
    /// `source` (the source node's index in `nodes`) and `weight` (the direct effect, in the target's units: a
    /// feature's pre-activation, or the logit direction's logit). rowStart has nodes.size() + 1 entries. Within a row
    /// the sources ascend. Error and token nodes have no incoming edges. An unpruned graph holds every non-zero edge.
    std::vector<int64_t> rowStart;
    std::vector<int32_t> source;
    std::vector<float> weight;

    /// The researcher's state, saved in the JSON's qParams: pinned node ids, supernodes; labels live in the nodes.
    std::vector<std::string> pinnedIds;
    std::vector<Supernode> supernodes;
    double nodeThreshold = 0.8, edgeThreshold = 0.98;  ///< the thresholds last pruned with (metadata.node_threshold)

    int64_t edgeCount() const { return static_cast<int64_t>(source.size()); }
    /// The index of the node whose nodeId() is `id`, or -1.
    int64_t findNode(const std::string& id) const;
    /// The edge into node `target` of the largest |weight| (an index into source / weight), or -1 when it has none or
    /// `target` is out of range.
    int64_t strongestInput(int64_t target) const;
};

}  // namespace nnscope
