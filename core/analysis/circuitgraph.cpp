// SPDX-License-Identifier: MIT
#include "core/analysis/circuitgraph.h"

#include <cmath>

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

int64_t AttributionGraph::strongestInput(int64_t target) const {
    if (target < 0 || target + 1 >= static_cast<int64_t>(rowStart.size())) return -1;
    int64_t best = -1;
    for (int64_t e = rowStart[static_cast<size_t>(target)]; e < rowStart[static_cast<size_t>(target) + 1]; ++e)
        if (best < 0 || std::abs(weight[static_cast<size_t>(e)]) > std::abs(weight[static_cast<size_t>(best)])) best = e;
    return best;
}

}  // namespace nnscope
