// SPDX-License-Identifier: MIT
#include "core/analysis/circuitgraph.h"

namespace nnscope {

std::string GraphNode::nodeId() const {
    switch (kind) {
        case Kind::Feature: return std::to_string(layer) + "_" + std::to_string(index) + "_" + std::to_string(position);
        case Kind::Error: return "0_" + std::to_string(layer) + "_" + std::to_string(position);
        case Kind::Token: return "E_" + std::to_string(index) + "_" + std::to_string(position);
        case Kind::Logit: return std::to_string(layer) + "_" + std::to_string(index) + "_" + std::to_string(position);
    }
    return {};
}

std::string GraphNode::jsNodeId() const {
    switch (kind) {
        case Kind::Feature: return std::to_string(layer) + "_" + std::to_string(index) + "-0";
        case Kind::Error: return std::to_string(layer) + "_" + std::to_string(position) + "-0";
        case Kind::Token: return "E_" + std::to_string(index) + "-" + std::to_string(position);
        case Kind::Logit: return "L_" + std::to_string(index) + "-" + std::to_string(position);
    }
    return {};
}

int64_t AttributionGraph::findNode(const std::string& id) const {
    for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].nodeId() == id) return static_cast<int64_t>(i);
    return -1;
}

}  // namespace nnscope
