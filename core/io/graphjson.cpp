// SPDX-License-Identifier: MIT
#include "core/io/graphjson.h"

#include "core/io/jsonfile.h"
#include "core/model/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <tuple>
#include <unistd.h>
#include <unordered_map>

namespace nnscope {

namespace {

using json = nlohmann::json;
using Kind = GraphNode::Kind;

// ---- writing ----------------------------------------------------------------------------------------------------

/// A JSON string (UTF-8 kept as it is, as pydantic writes it; invalid bytes become U+FFFD).
std::string quoted(const std::string& text) { return json(text).dump(-1, ' ', false, json::error_handler_t::replace); }

/// A float32 as JSON: the shortest text that reads back to the same float, always with a '.' or an exponent so that
/// Python reads a float (pydantic writes 0.0, not 0); null where not finite.
std::string number(float value) {
    if (!std::isfinite(value)) return "null";
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    std::string text(buffer, result.ptr);
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
}

/// graph_models.py's _cantor_pairing(layer, feature).
int64_t cantorPairing(int64_t x, int64_t y) { return (x + y) * (x + y + 1) / 2 + y; }

const char* featureType(Kind kind) {
    switch (kind) {
        case Kind::Feature: return "cross layer transcoder";
        case Kind::Error: return "mlp reconstruction error";
        case Kind::Token: return "embedding";
        case Kind::Logit: return "logit";
    }
    return "";
}

/// What separates a logit's circuit-tracer clerp from the researcher's label in the file.
constexpr const char* kLabelSeparator = " — ";

/// circuit-tracer's clerp of a logit node: Output "tok" (p=0.123).
std::string logitClerp(const GraphNode& node) {
    char p[32];
    std::snprintf(p, sizeof p, "%.3f", static_cast<double>(node.tokenProb));
    return "Output \"" + node.token + "\" (p=" + p + ")";
}

void writeNode(std::ostream& out, const GraphNode& node) {
    int64_t feature = -1;
    std::string layer = std::to_string(node.layer);
    switch (node.kind) {
        case Kind::Feature: feature = cantorPairing(node.layer, node.index); break;
        case Kind::Error: feature = -1; break;
        case Kind::Token: feature = node.position; layer = "E"; break;
        case Kind::Logit: feature = node.index; break;
    }
    // a logit's clerp names its token (circuit-tracer's); a label of the researcher's follows it after " — "
    const std::string clerp = node.kind != Kind::Logit ? node.label
                              : node.label.empty()     ? logitClerp(node)
                                                       : logitClerp(node) + kLabelSeparator + node.label;
    // circuit-tracer gives logits no influence and only features an activation
    const std::string influence = node.kind == Kind::Logit ? "null" : number(node.influence);
    const std::string activation = node.kind == Kind::Feature ? number(node.activation) : "null";
    out << "    {\n"
        << "      \"node_id\": " << quoted(node.nodeId()) << ",\n"
        << "      \"feature\": " << feature << ",\n"
        << "      \"layer\": " << quoted(layer) << ",\n"
        << "      \"ctx_idx\": " << node.position << ",\n"
        << "      \"feature_type\": \"" << featureType(node.kind) << "\",\n"
        << "      \"token_prob\": " << number(node.tokenProb) << ",\n"
        << "      \"is_target_logit\": " << (node.targetLogit ? "true" : "false") << ",\n"
        << "      \"run_idx\": 0,\n"
        << "      \"reverse_ctx_idx\": 0,\n"
        << "      \"jsNodeId\": " << quoted(node.jsNodeId()) << ",\n"
        << "      \"clerp\": " << quoted(clerp) << ",\n"
        << "      \"influence\": " << influence << ",\n"
        << "      \"activation\": " << activation << "\n"
        << "    }";
}

/// A JSON list of strings on one level of indentation (pydantic's indent=2 layout; [] when empty).
void writeStringList(std::ostream& out, const std::vector<std::string>& items, const std::string& indent) {
    if (items.empty()) {
        out << "[]";
        return;
    }
    out << "[\n";
    for (size_t i = 0; i < items.size(); ++i) out << indent << "  " << quoted(items[i]) << (i + 1 < items.size() ? ",\n" : "\n");
    out << indent << "]";
}

// ---- reading ----------------------------------------------------------------------------------------------------

/// What the reader has gathered so far.
struct Reader {
    std::string file;
    AttributionGraph graph;
    std::unordered_map<std::string, int32_t> ids;
    /// circuit-tracer's ids collide where a layer-0 feature's index is a layer number: feature "0_L_P" and the error of
    /// layer L at P. The second node of such an id (of another kind) is kept here.
    std::unordered_map<std::string, int32_t> collided;
    std::vector<std::tuple<int32_t, int32_t, float>> edges;  ///< (target, source, weight)
    std::vector<json> pendingLinks;  ///< links read before the nodes (a file whose "links" come first)
    bool sawMetadata = false, sawNodes = false, sawLinks = false;
    int64_t nodeCount = 0, linkCount = 0;

    [[noreturn]] void fail(const std::string& what) const { throw Error(file + ": " + what); }

    const json& need(const json& object, const char* key, const std::string& where) const {
        if (!object.is_object()) fail(where + " is not an object");
        const auto it = object.find(key);
        if (it == object.end()) fail(where + " has no \"" + key + "\"");
        return *it;
    }
    std::string needString(const json& object, const char* key, const std::string& where) const {
        const json& v = need(object, key, where);
        if (!v.is_string()) fail(where + "'s \"" + key + "\" is not a string: " + jsonExcerpt(v));
        return v.get<std::string>();
    }
    int64_t needInteger(const json& object, const char* key, const std::string& where) const {
        const json& v = need(object, key, where);
        if (!v.is_number_integer()) fail(where + "'s \"" + key + "\" is not an integer: " + jsonExcerpt(v));
        return v.get<int64_t>();
    }
    /// An optional number (null or absent: `fallback`).
    double optionalNumber(const json& object, const char* key, const std::string& where, double fallback) const {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null()) return fallback;
        if (!it->is_number()) fail(where + "'s \"" + key + "\" is not a number: " + jsonExcerpt(*it));
        return it->get<double>();
    }
    std::vector<std::string> stringList(const json& v, const std::string& where) const {
        if (!v.is_array()) fail(where + " is not a list");
        std::vector<std::string> out;
        for (const json& item : v) {
            if (!item.is_string()) fail(where + " holds a non-string: " + jsonExcerpt(item));
            out.push_back(item.get<std::string>());
        }
        return out;
    }

    void metadata(const json& m) {
        sawMetadata = true;
        const std::string where = "metadata";
        graph.slug = needString(m, "slug", where);
        const auto scan = m.find("scan");
        if (scan != m.end() && scan->is_string()) graph.scan = scan->get<std::string>();
        if (m.contains("transcoder_list")) graph.transcoderList = stringList(m["transcoder_list"], "metadata.transcoder_list");
        graph.tokenStrings = stringList(need(m, "prompt_tokens", where), "metadata.prompt_tokens");
        graph.prompt = needString(m, "prompt", where);
        graph.nodeThreshold = optionalNumber(m, "node_threshold", where, graph.nodeThreshold);
    }

    void qParams(const json& q) {
        if (!q.is_object()) fail("qParams is not an object");
        if (q.contains("pinnedIds")) graph.pinnedIds = stringList(q["pinnedIds"], "qParams.pinnedIds");
        if (q.contains("supernodes")) {
            const json& groups = q["supernodes"];
            if (!groups.is_array()) fail("qParams.supernodes is not a list");
            for (size_t i = 0; i < groups.size(); ++i) {
                std::vector<std::string> items = stringList(groups[i], "qParams.supernodes[" + std::to_string(i) + "]");
                if (items.empty()) fail("qParams.supernodes[" + std::to_string(i) + "] has no name");
                Supernode group{items.front(), {items.begin() + 1, items.end()}};
                graph.supernodes.push_back(std::move(group));
            }
        }
    }

    /// "a_b_c" as three integers (a may be "E").
    bool splitId(const std::string& id, std::string& a, int64_t& b, int64_t& c) const {
        const size_t first = id.find('_'), last = id.rfind('_');
        if (first == std::string::npos || last == first) return false;
        a = id.substr(0, first);
        const std::string mid = id.substr(first + 1, last - first - 1), tail = id.substr(last + 1);
        auto parse = [](const std::string& text, int64_t& value) {
            const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
            return r.ec == std::errc() && r.ptr == text.data() + text.size() && !text.empty();
        };
        return parse(mid, b) && parse(tail, c);
    }

    void node(const json& j) {
        const std::string where = "node " + std::to_string(nodeCount++);
        GraphNode node;
        const std::string id = needString(j, "node_id", where);
        const std::string whereId = where + " (" + shortText(id, 60) + ")";
        const std::string type = needString(j, "feature_type", whereId);
        const json& layer = need(j, "layer", whereId);
        node.position = needInteger(j, "ctx_idx", whereId);
        if (type == "embedding") node.kind = Kind::Token;
        else if (type == "logit") node.kind = Kind::Logit;
        else if (type.find("error") != std::string::npos) node.kind = Kind::Error;
        else node.kind = Kind::Feature;
        if (node.kind == Kind::Token) node.layer = -1;
        else if (layer.is_number_integer()) node.layer = layer.get<int>();
        else if (layer.is_string()) {
            const std::string text = layer.get<std::string>();
            const auto r = std::from_chars(text.data(), text.data() + text.size(), node.layer);
            if (r.ec != std::errc() || r.ptr != text.data() + text.size()) fail(whereId + "'s layer is not a number: " + jsonExcerpt(layer));
        } else
            fail(whereId + "'s layer is neither a number nor a string: " + jsonExcerpt(layer));
        std::string a;
        int64_t b = 0, c = 0;
        const bool parsed = splitId(id, a, b, c);
        switch (node.kind) {
            case Kind::Feature:
                if (!parsed) fail(whereId + ": a feature's node_id must read layer_feature_position");
                node.index = b;
                break;
            case Kind::Token:
                if (!parsed) fail(whereId + ": a token's node_id must read E_tokenid_position");
                node.index = b;
                break;
            case Kind::Logit: {
                const auto feature = j.find("feature");
                node.index = feature != j.end() && feature->is_number_integer() ? feature->get<int64_t>() : (parsed ? b : -1);
                if (node.index < 0) fail(whereId + ": a logit's node_id must read layer_vocab_position");
                break;
            }
            case Kind::Error: node.index = -1; break;
        }
        node.activation = static_cast<float>(optionalNumber(j, "activation", whereId, 0.0));
        node.tokenProb = static_cast<float>(optionalNumber(j, "token_prob", whereId, 0.0));
        node.influence = static_cast<float>(optionalNumber(j, "influence", whereId, std::nan("")));
        const auto target = j.find("is_target_logit");
        node.targetLogit = target != j.end() && target->is_boolean() && target->get<bool>();
        const auto clerp = j.find("clerp");
        if (clerp != j.end() && !clerp->is_null()) {
            if (!clerp->is_string()) fail(whereId + "'s clerp is not a string: " + jsonExcerpt(*clerp));
            node.label = clerp->get<std::string>();
        }
        if (node.kind == Kind::Logit) {
            // circuit-tracer's clerp names the token: Output "tok" (p=0.123); it is no label of the researcher's
            // (and a label of the researcher's may follow: Output "tok" (p=0.123) — label)
            const std::string& label = node.label;
            const size_t close = label.rfind("\" (p=");
            const size_t end = close == std::string::npos ? close : label.find(')', close);
            if (label.rfind("Output \"", 0) == 0 && close != std::string::npos && close >= 8 && end != std::string::npos) {
                const std::string rest = label.substr(end + 1);
                const std::string separator = kLabelSeparator;
                if (rest.empty() || rest.rfind(separator, 0) == 0) {
                    node.token = label.substr(8, close - 8);
                    node.label = rest.empty() ? std::string() : rest.substr(separator.size());
                }
            }
        }
        const auto [it, added] = ids.emplace(id, static_cast<int32_t>(graph.nodes.size()));
        if (!added) {
            if (graph.nodes[static_cast<size_t>(it->second)].kind == node.kind || collided.count(id))
                fail(whereId + ": this node_id is given twice");
            collided.emplace(id, static_cast<int32_t>(graph.nodes.size()));
        }
        graph.nodes.push_back(std::move(node));
    }

    void link(const json& j) {
        const std::string where = "link " + std::to_string(linkCount++);
        const std::string from = needString(j, "source", where), to = needString(j, "target", where);
        const json& w = need(j, "weight", where);
        if (!w.is_number()) fail(where + "'s weight is not a number: " + jsonExcerpt(w));
        const auto s = ids.find(from), t = ids.find(to);
        if (s == ids.end()) fail(where + " comes from an unknown node \"" + shortText(from, 60) + "\"");
        if (t == ids.end()) fail(where + " goes to an unknown node \"" + shortText(to, 60) + "\"");
        int32_t target = t->second;
        // a collided id as a target is the feature: error and token nodes have no incoming edges
        if (const auto c = collided.find(to); c != collided.end()) {
            const Kind first = graph.nodes[static_cast<size_t>(target)].kind;
            if (first == Kind::Error || first == Kind::Token) target = c->second;
        }
        edges.emplace_back(target, s->second, static_cast<float>(w.get<double>()));
    }

    void finish() {
        if (!sawMetadata) fail("has no \"metadata\" (not an attribution graph file)");
        if (!sawNodes) fail("has no \"nodes\" (not an attribution graph file)");
        if (!sawLinks) fail("has no \"links\" (not an attribution graph file)");
        for (const json& j : pendingLinks) link(j);
        pendingLinks.clear();
        // tokens' text and ids, the number of layers
        const auto nPos = static_cast<int64_t>(graph.tokenStrings.size());
        std::vector<int64_t> tokenIds(static_cast<size_t>(nPos), -1);
        bool anyToken = false;
        int maxLayer = -1, logitLayer = -1;
        for (GraphNode& node : graph.nodes) {
            if (node.kind == Kind::Token && node.position >= 0 && node.position < nPos) {
                node.token = graph.tokenStrings[static_cast<size_t>(node.position)];
                tokenIds[static_cast<size_t>(node.position)] = node.index;
                anyToken = true;
            }
            if (node.kind == Kind::Logit) logitLayer = std::max(logitLayer, node.layer);
            if (node.kind == Kind::Feature || node.kind == Kind::Error) maxLayer = std::max(maxLayer, node.layer);
        }
        if (anyToken) graph.tokenIds = std::move(tokenIds);
        graph.numLayers = logitLayer > 0 ? logitLayer - 1 : maxLayer + 1;
        // edges by target, sources ascending
        std::stable_sort(edges.begin(), edges.end(), [](const auto& x, const auto& y) {
            return std::get<0>(x) != std::get<0>(y) ? std::get<0>(x) < std::get<0>(y) : std::get<1>(x) < std::get<1>(y);
        });
        graph.rowStart.assign(graph.nodes.size() + 1, 0);
        graph.source.reserve(edges.size());
        graph.weight.reserve(edges.size());
        for (const auto& [t, s, w] : edges) {
            ++graph.rowStart[static_cast<size_t>(t) + 1];
            graph.source.push_back(s);
            graph.weight.push_back(w);
        }
        for (size_t i = 1; i < graph.rowStart.size(); ++i) graph.rowStart[i] += graph.rowStart[i - 1];
        edges.clear();
        edges.shrink_to_fit();
    }
};

}  // namespace

void writeGraphJson(const AttributionGraph& graph, const std::string& path) {
    const std::string temporary = path + ".part";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) throw Error(path + ": cannot be written (" + std::string(std::strerror(errno)) + ")");
        std::vector<char> buffer(1 << 20);
        out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        char threshold[32];
        std::snprintf(threshold, sizeof threshold, "%.17g", graph.nodeThreshold);
        std::string thresholdText = threshold;
        if (thresholdText.find_first_of(".eE") == std::string::npos) thresholdText += ".0";
        out << "{\n  \"metadata\": {\n"
            << "    \"slug\": " << quoted(graph.slug) << ",\n"
            << "    \"scan\": " << quoted(graph.scan) << ",\n"
            << "    \"transcoder_list\": ";
        writeStringList(out, graph.transcoderList, "    ");
        out << ",\n    \"prompt_tokens\": ";
        writeStringList(out, graph.tokenStrings, "    ");
        out << ",\n    \"prompt\": " << quoted(graph.prompt) << ",\n"
            << "    \"node_threshold\": " << (std::isfinite(graph.nodeThreshold) ? thresholdText : "null") << ",\n"
            << "    \"schema_version\": 1\n  },\n"
            << "  \"qParams\": {\n    \"pinnedIds\": ";
        writeStringList(out, graph.pinnedIds, "    ");
        out << ",\n    \"supernodes\": ";
        if (graph.supernodes.empty()) out << "[]";
        else {
            out << "[\n";
            for (size_t i = 0; i < graph.supernodes.size(); ++i) {
                std::vector<std::string> items{graph.supernodes[i].name};
                items.insert(items.end(), graph.supernodes[i].nodeIds.begin(), graph.supernodes[i].nodeIds.end());
                out << "      ";
                writeStringList(out, items, "      ");
                out << (i + 1 < graph.supernodes.size() ? ",\n" : "\n");
            }
            out << "    ]";
        }
        out << ",\n    \"linkType\": \"both\",\n    \"clickedId\": \"\",\n    \"sg_pos\": \"\"\n  },\n  \"nodes\": [";
        std::vector<std::string> ids;
        ids.reserve(graph.nodes.size());
        for (size_t i = 0; i < graph.nodes.size(); ++i) {
            out << (i ? ",\n" : "\n");
            writeNode(out, graph.nodes[i]);
            ids.push_back(quoted(graph.nodes[i].nodeId()));
        }
        out << (graph.nodes.empty() ? "],\n" : "\n  ],\n") << "  \"links\": [";
        // circuit-tracer lists the links by target row, then source (edge_mask.nonzero())
        bool first = true;
        for (size_t t = 0; t + 1 < graph.rowStart.size(); ++t)
            for (int64_t e = graph.rowStart[t]; e < graph.rowStart[t + 1]; ++e) {
                out << (first ? "\n" : ",\n") << "    {\n      \"source\": " << ids[static_cast<size_t>(graph.source[static_cast<size_t>(e)])]
                    << ",\n      \"target\": " << ids[t] << ",\n      \"weight\": " << number(graph.weight[static_cast<size_t>(e)])
                    << "\n    }";
                first = false;
            }
        out << (first ? "]\n}" : "\n  ]\n}");
        out.flush();
        if (!out) {
            const std::string reason = std::strerror(errno);
            out.close();
            std::remove(temporary.c_str());
            throw Error(path + ": writing failed (" + reason + ")");
        }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(temporary.c_str());
        throw Error(path + ": cannot be written (" + reason + ")");
    }
}

AttributionGraph readGraphJson(const std::string& path) {
    uint64_t size = 0;
    ::close(openRegularFile(path, 0, size));  // refuses a folder, a FIFO, a device
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be opened (" + std::string(std::strerror(errno)) + ")");
    Reader reader;
    reader.file = path;
    std::string topKey;
    auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
        if (depth > kJsonMaxDepth) reader.fail("nests deeper than " + std::to_string(kJsonMaxDepth) + " levels");
        if (event == json::parse_event_t::key && depth == 1) topKey = parsed.get<std::string>();
        if ((event == json::parse_event_t::value || event == json::parse_event_t::array_end) && depth == 2 &&
            (topKey == "nodes" || topKey == "links"))
            reader.fail(std::string(topKey == "nodes" ? "a node" : "a link") + " is not an object: " + jsonExcerpt(parsed));
        // each node and link is read as soon as it ends, then dropped
        if (event == json::parse_event_t::object_end && depth == 2) {
            if (topKey == "nodes") reader.node(parsed);
            else if (topKey == "links") {
                if (reader.sawNodes) reader.link(parsed);
                else reader.pendingLinks.push_back(std::move(parsed));
            }
            return false;
        }
        if ((event == json::parse_event_t::object_end || event == json::parse_event_t::array_end || event == json::parse_event_t::value) &&
            depth == 1) {
            if (topKey == "metadata") reader.metadata(parsed);
            else if (topKey == "qParams") reader.qParams(parsed);
            else if (topKey == "nodes") {
                if (!parsed.is_array()) reader.fail("\"nodes\" is not a list");
                reader.sawNodes = true;
            } else if (topKey == "links") {
                if (!parsed.is_array()) reader.fail("\"links\" is not a list");
                reader.sawLinks = true;
                // links that came before the nodes wait for them
            }
            return false;  // the top-level object keeps nothing
        }
        return true;
    };
    json root;
    try {
        root = json::parse(in, callback);
    } catch (const json::parse_error& e) {
        throw Error(path + ": not valid JSON (" + shortText(e.what(), 200) + ")");
    }
    if (!root.is_object()) throw Error(path + ": not an attribution graph (the file is not a JSON object)");
    reader.finish();
    return std::move(reader.graph);
}

}  // namespace nnscope
