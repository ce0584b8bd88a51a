// SPDX-License-Identifier: MIT
#include "core/run/edit.h"

#include "core/run/features.h"

#include "core/model/error.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/run/trace.h"

#include <torch/types.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <sstream>

namespace nnscope {
namespace {

std::string trim(std::string s) {
    const auto a = s.find_first_not_of(" \t");
    if (a == std::string::npos) return "";
    const auto b = s.find_last_not_of(" \t");
    return s.substr(a, b - a + 1);
}

std::vector<torch::indexing::TensorIndex> toTorch(const std::vector<IndexItem>& index) {
    std::vector<torch::indexing::TensorIndex> out;
    // No reallocation: libtorch 1.13's TensorIndex move constructor copies a bool it leaves uninitialised for slices
    // (UndefinedBehaviorSanitizer: "load of value 190 ... for type 'bool'").
    out.reserve(index.size());
    for (const auto& it : index) {
        switch (it.kind) {
            case IndexItem::Integer: out.emplace_back(*it.start); break;
            case IndexItem::Ellipsis: out.emplace_back(torch::indexing::Ellipsis); break;
            case IndexItem::New:  // without PassPositions there are no generated positions: an empty selection
                out.emplace_back(torch::indexing::Slice(std::numeric_limits<int64_t>::max(), c10::nullopt));
                break;
            case IndexItem::Slice:
                out.emplace_back(torch::indexing::Slice(it.start ? c10::optional<int64_t>(*it.start) : c10::nullopt,
                                                        it.stop ? c10::optional<int64_t>(*it.stop) : c10::nullopt));
                break;
        }
    }
    return out;
}

bool isPositionAxis(const char* name) {
    const std::string n = name;
    return n == "seq" || n == "query" || n == "key";
}

/// The value axis each index item selects on (-1 for "..." and for items past the value's axes): items before "..."
/// count from the first axis, items after it from the last.
std::vector<int> indexAxes(const std::vector<IndexItem>& index, size_t numAxes) {
    std::vector<int> out(index.size(), -1);
    size_t ellipsis = index.size();
    for (size_t k = 0; k < index.size(); ++k)
        if (index[k].kind == IndexItem::Ellipsis) {
            ellipsis = k;
            break;
        }
    for (size_t k = 0; k < ellipsis; ++k)
        if (k < numAxes) out[k] = static_cast<int>(k);
    for (size_t k = ellipsis + 1; k < index.size(); ++k) {
        const int64_t fromEnd = static_cast<int64_t>(index.size() - k);
        const int64_t axis = static_cast<int64_t>(numAxes) - fromEnd;
        if (axis >= 0) out[k] = static_cast<int>(axis);
    }
    return out;
}

/// The index with every position item counted from a row whose prompt starts at `pad` and has `length` tokens (see
/// PassPositions). `*empty` is set when a `new` item selects nothing (no generated positions in a pass of `seq`).
std::vector<IndexItem> promptRelative(const std::vector<IndexItem>& index, const std::vector<int>& axes, const ValueInfo& info,
                                      int64_t pad, int64_t length, int64_t seq, bool* empty) {
    std::vector<IndexItem> out = index;
    auto at = [&](int64_t v) { return v >= 0 ? pad + v : pad + length + v; };
    for (size_t k = 0; k < out.size(); ++k) {
        if (axes[k] < 0 || !isPositionAxis(info.axes[static_cast<size_t>(axes[k])])) continue;
        IndexItem& it = out[k];
        switch (it.kind) {
            case IndexItem::Integer: it.start = at(*it.start); break;
            case IndexItem::Slice:
                if (it.start) it.start = at(*it.start);  // ':' stays the whole axis (padding included: it is masked anyway)
                if (it.stop) it.stop = at(*it.stop);
                break;
            case IndexItem::New:
                it.kind = IndexItem::Slice;
                it.start = pad + length;
                it.stop.reset();
                if (pad + length >= seq) *empty = true;
                break;
            case IndexItem::Ellipsis: break;
        }
    }
    return out;
}

std::string shapeStr(const torch::Tensor& t) {
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

std::vector<IndexItem> parseIndex(const std::string& text, const std::string& edit) {
    std::vector<IndexItem> out;
    std::stringstream ss(text);
    std::string item;
    auto num = [&](const std::string& s) -> int64_t {
        try {
            size_t used = 0;
            const long long v = std::stoll(s, &used);
            if (used != s.size()) throw std::invalid_argument(s);
            return v;
        } catch (...) {
            throw MalformedIntervention("edit '" + edit + "': '" + s + "' is not an integer index.");
        }
    };
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        IndexItem it;
        if (item == "...") {
            it.kind = IndexItem::Ellipsis;
        } else if (item == "new") {
            it.kind = IndexItem::New;
        } else if (item.find(':') != std::string::npos) {
            it.kind = IndexItem::Slice;
            const std::string a = trim(item.substr(0, item.find(':'))), b = trim(item.substr(item.find(':') + 1));
            if (b.find(':') != std::string::npos) throw MalformedIntervention("edit '" + edit + "': slices with a step are not supported.");
            if (!a.empty()) it.start = num(a);
            if (!b.empty()) it.stop = num(b);
        } else if (item.empty()) {
            throw MalformedIntervention("edit '" + edit + "': an index item is empty (write ':' for a whole axis).");
        } else {
            it.kind = IndexItem::Integer;
            it.start = num(item);
        }
        out.push_back(it);
    }
    return out;
}

}  // namespace

Edit parseEdit(const Model& model, const std::string& textIn, const std::string& baseDir) {
    const std::string text = trim(textIn);
    Edit e;
    e.text = text;
    // split PATH[INDEX] OP OPERAND at the first '=' outside the brackets; the character before it picks the op
    size_t opPos = std::string::npos, opLen = 1;
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '[') ++depth;
        else if (text[i] == ']') --depth;
        else if (text[i] == '=' && depth == 0) {
            opPos = i;
            break;
        }
    }
    if (opPos != std::string::npos && opPos > 0 && std::string("+-*/").find(text[opPos - 1]) != std::string::npos) {
        const char c = text[opPos - 1];
        e.op = c == '+' ? Edit::Op::Add : c == '-' ? Edit::Op::Sub : c == '*' ? Edit::Op::Mul : Edit::Op::Div;
        --opPos;
        opLen = 2;
    }
    if (opPos == std::string::npos)
        throw MalformedIntervention("edit '" + text + "': no operator; write PATH[INDEX] = | += | -= | *= | /= VALUE, e.g. "
                    "'layers.1.self_attn.attention_queries[:, 1] *= 2'.");
    if (opLen == 1 && opPos > 0) {  // "^=", "%=", "==": a sign before '=' that no path ends with and no operator has
        const char c = text[opPos - 1];
        if (std::ispunct(static_cast<unsigned char>(c)) && c != ']' && c != '_' && c != '.')
            throw MalformedIntervention("edit '" + text + "': unknown operator '" + std::string(1, c) + "='; use =, +=, -=, *= or /=.");
    }
    std::string lhs = trim(text.substr(0, opPos)), rhs = trim(text.substr(opPos + opLen));
    std::string path = lhs;
    const auto br = lhs.find('[');
    if (br != std::string::npos) {
        if (lhs.back() != ']') throw MalformedIntervention("edit '" + text + "': the index must end with ']'.");
        path = trim(lhs.substr(0, br));
        e.index = parseIndex(lhs.substr(br + 1, lhs.size() - br - 2), text);
    }
    e.key = parseValuePath(model, path);
    const ValueInfo& info = valueInfo(e.key.value);
    {
        const std::vector<int> axes = indexAxes(e.index, info.axes.size());
        for (size_t k = 0; k < e.index.size(); ++k)
            if (e.index[k].kind == IndexItem::New && (axes[k] < 0 || !isPositionAxis(info.axes[static_cast<size_t>(axes[k])])))
                throw Error("edit '" + text + "': 'new' selects generated positions; it goes on an axis named seq, query or key of " +
                            path + " (" + layoutString(info) + ").");
    }
    if (info.readOnly)
        throw Error("edit '" + text + "': " + path + " is read-only (" + info.description + ")" +
                    (e.key.value == Value::NextTokenProbs ? "; edit the logits instead." : "; it describes the pass, nothing reads it."));
    // operand
    if (rhs.empty()) throw MalformedIntervention("edit '" + text + "': nothing after the operator.");
    if (rhs == "mean") {
        if (e.op != Edit::Op::Set) throw MalformedIntervention("edit '" + text + "': 'mean' only goes with '=' (mean-ablation).");
        e.operand = Edit::Operand::Mean;
        return e;
    }
    double factor = 1;
    std::string atom = rhs;
    const auto star = rhs.find('*');
    if (star != std::string::npos) {
        std::string a = trim(rhs.substr(0, star)), b = trim(rhs.substr(star + 1));
        if (!a.empty() && a[0] == '@') std::swap(a, b);
        try {
            size_t used = 0;
            factor = std::stod(a, &used);
            if (used != a.size()) throw std::invalid_argument(a);
        } catch (...) {
            throw MalformedIntervention("edit '" + text + "': '" + a + "' is not a number (write N * @file.npy).");
        }
        atom = b;
    }
    if (!atom.empty() && atom[0] == '@') {
        std::filesystem::path p = atom.substr(1);
        if (p.is_relative()) p = std::filesystem::path(baseDir) / p;
        e.operand = Edit::Operand::Tensor;
        e.tensor = readNpy(p.string()).to(torch::kFloat32);
        e.scalar = factor;
        return e;
    }
    try {
        size_t used = 0;
        e.scalar = std::stod(atom, &used) * factor;
        if (used != atom.size()) throw std::invalid_argument(atom);
    } catch (...) {
        throw MalformedIntervention("edit '" + text + "': '" + atom + "' is neither a number, @file.npy nor mean.");
    }
    e.operand = Edit::Operand::Scalar;
    return e;
}

std::string Edit::describe(const Model& model) const {
    (void)model;
    return text;
}

namespace {

/// The mean of `t` over its batch and position (seq, query) axes, expanded back to t's shape: mean-ablation's operand.
torch::Tensor passMean(const Edit& e, const torch::Tensor& t) {
    const ValueInfo& info = valueInfo(e.key.value);
    std::vector<int64_t> dims;
    for (size_t a = 0; a < info.axes.size() && a < static_cast<size_t>(t.dim()); ++a) {
        const std::string n = info.axes[a];
        if (n == "batch" || n == "seq" || n == "query") dims.push_back(static_cast<int64_t>(a));
    }
    return t.to(torch::kFloat32).mean(dims, /*keepdim=*/true).expand_as(t).to(t.scalar_type());
}

/// applyEdit with the index given apart (`index`) and, for a `mean` operand, the pass mean of t's shape.
torch::Tensor applyEditIndexed(const Edit& e, const std::vector<IndexItem>& index, const torch::Tensor& t, const std::string& path,
                               const torch::Tensor& mean) {
    const auto idx = toTorch(index);
    torch::Tensor sel;
    try {
        sel = index.empty() ? t : t.index(idx);
    } catch (const c10::Error& err) {
        throw Error("edit '" + e.text + "': the index does not fit " + path + " of shape " + shapeStr(t) + " (" +
                    err.what_without_backtrace() + ").");
    }
    if (sel.numel() == 0)
        throw Error("edit '" + e.text + "': the index selects nothing of " + path + " of shape " + shapeStr(t) + ".");
    torch::Tensor operand;
    switch (e.operand) {
        case Edit::Operand::Scalar: operand = torch::full({}, e.scalar, sel.options()); break;
        case Edit::Operand::Tensor: operand = (e.tensor * e.scalar).to(sel.scalar_type()); break;
        case Edit::Operand::Mean: {
            // mean over the batch and position axes of the whole value, then the same selection
            const torch::Tensor m = mean.defined() ? mean : passMean(e, t);
            operand = index.empty() ? m : m.index(idx);
            break;
        }
    }
    torch::Tensor updated;
    try {
        switch (e.op) {
            case Edit::Op::Set: updated = operand.expand_as(sel).clone(); break;
            case Edit::Op::Add: updated = sel + operand; break;
            case Edit::Op::Sub: updated = sel - operand; break;
            case Edit::Op::Mul: updated = sel * operand; break;
            case Edit::Op::Div: updated = sel / operand; break;
        }
        if (updated.sizes() != sel.sizes()) throw Error("the result does not keep the selection's shape");
    } catch (const c10::Error& err) {
        throw Error("edit '" + e.text + "': the operand of shape " + shapeStr(operand) + " does not broadcast to the selection " +
                    shapeStr(sel) + " of " + path + ".");
    } catch (const Error&) {
        throw Error("edit '" + e.text + "': the operand of shape " + shapeStr(operand) + " does not broadcast to the selection " +
                    shapeStr(sel) + " of " + path + ".");
    }
    if (index.empty()) return updated.to(t.scalar_type());
    torch::Tensor out = t.clone();  // never write into the pass's own tensor: it may be shared or read-only
    out.index_put_(idx, updated.to(t.scalar_type()));
    return out;
}

}  // namespace

torch::Tensor applyEdit(const Edit& e, const torch::Tensor& t, const std::string& path) {
    return applyEditIndexed(e, e.index, t, path, torch::Tensor());
}

PassPositions PassPositions::ofPrompts(const std::vector<int64_t>& lengths, int64_t seq) {
    PassPositions p;
    for (int64_t n : lengths) {
        p.padding.push_back(seq - n);
        p.promptLength.push_back(n);
    }
    return p;
}

torch::Tensor applyEditAt(const Edit& e, const torch::Tensor& t, const std::string& path, const PassPositions& positionsIn) {
    const ValueInfo& info = valueInfo(e.key.value);
    const std::vector<int> axes = indexAxes(e.index, info.axes.size());
    bool positional = false;
    for (size_t k = 0; k < e.index.size(); ++k)
        positional |= axes[k] >= 0 && isPositionAxis(info.axes[static_cast<size_t>(axes[k])]) && e.index[k].kind != IndexItem::Ellipsis;
    if (!positional || t.dim() == 0 || info.axes.empty() || std::string(info.axes[0]) != "batch") return applyEdit(e, t, path);
    const int64_t rows = t.size(0);
    // the position axis's length (every position axis of a value spans the same tokens)
    int64_t seq = 0;
    for (size_t a = 0; a < info.axes.size() && static_cast<int64_t>(a) < t.dim(); ++a)
        if (isPositionAxis(info.axes[a])) seq = t.size(static_cast<int64_t>(a));
    PassPositions positions = positionsIn;
    if (static_cast<int64_t>(positions.padding.size()) != rows) positions = PassPositions::ofPrompts(std::vector<int64_t>(static_cast<size_t>(rows), seq), seq);
    // rows selected by the batch item
    std::vector<bool> selected(static_cast<size_t>(rows), true);
    if (!e.index.empty() && axes[0] == 0) {
        const IndexItem& b = e.index[0];
        auto norm = [&](int64_t v) { return v < 0 ? v + rows : v; };
        for (int64_t r = 0; r < rows; ++r) {
            if (b.kind == IndexItem::Integer) selected[static_cast<size_t>(r)] = norm(*b.start) == r;
            else if (b.kind == IndexItem::Slice)
                selected[static_cast<size_t>(r)] = r >= (b.start ? norm(*b.start) : 0) && r < (b.stop ? norm(*b.stop) : rows);
        }
        if (b.kind == IndexItem::Integer && (norm(*b.start) < 0 || norm(*b.start) >= rows))
            throw Error("edit '" + e.text + "': row " + std::to_string(*b.start) + " is outside the batch of " + std::to_string(rows) +
                        " prompt(s) of " + path + ".");
    }
    // rows whose prompts sit alike share one translated index
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups;
    for (int64_t r = 0; r < rows; ++r)
        if (selected[static_cast<size_t>(r)]) groups[{positions.padding[static_cast<size_t>(r)], positions.promptLength[static_cast<size_t>(r)]}].push_back(r);
    const torch::Tensor mean = e.operand == Edit::Operand::Mean ? passMean(e, t) : torch::Tensor();
    if (groups.size() == 1 && static_cast<int64_t>(groups.begin()->second.size()) == rows) {
        bool empty = false;
        auto index = promptRelative(e.index, axes, info, groups.begin()->first.first, groups.begin()->first.second, seq, &empty);
        return empty ? t : applyEditIndexed(e, index, t, path, mean);
    }
    torch::Tensor out = t.clone();
    for (const auto& [where, members] : groups) {
        bool empty = false;
        auto index = promptRelative(e.index, axes, info, where.first, where.second, seq, &empty);
        if (empty) continue;
        if (!index.empty() && axes[0] == 0) index[0] = IndexItem{};  // the rows are chosen here
        const torch::Tensor rowIds = torch::tensor(members, torch::kInt64);
        const torch::Tensor part = applyEditIndexed(e, index, t.index_select(0, rowIds), path,
                                                    mean.defined() ? mean.index_select(0, rowIds) : torch::Tensor());
        out.index_copy_(0, rowIds, part);
    }
    return out;
}

void EditList::patch(const ValueKey& key, std::vector<IndexItem> index, torch::Tensor source) {
    Edit e;
    e.key = key;
    e.index = std::move(index);
    e.op = Edit::Op::Set;
    e.operand = Edit::Operand::Tensor;
    e.tensor = std::move(source);
    e.scalar = 1;
    e.text = "patch";
    edits_.push_back(std::move(e));
}

void EditList::steer(int layer, const torch::Tensor& vector, double factor, const std::vector<int64_t>& positions) {
    auto addAt = [&](std::vector<IndexItem> index, const std::string& where) {
        Edit e;
        e.key = {Value::LayerOutput, layer};
        e.index = std::move(index);
        e.op = Edit::Op::Add;
        e.operand = Edit::Operand::Tensor;
        e.tensor = vector.to(torch::kFloat32);
        e.scalar = factor;
        std::ostringstream s;
        s << "layers." << layer << ".layer_output[" << where << "] += " << factor << " * vector";
        e.text = s.str();
        edits_.push_back(std::move(e));
    };
    if (positions.empty()) {
        addAt({}, ":, :");
        return;
    }
    for (int64_t p : positions) {
        addAt({IndexItem{}, IndexItem::integer(p)}, ":, " + std::to_string(p));
    }
}

bool EditList::mixesRows() const {
    for (const auto& e : edits_)
        if (e.operand == Edit::Operand::Mean) return true;
    for (const auto& o : others_)
        if (o->mixesRows()) return true;
    return false;
}

bool EditList::touches(Value v, int layer) const {
    for (const auto& e : edits_)
        if (e.key.value == v && e.key.layer == layer) return true;
    for (const auto& o : others_)
        if (o->touches(v, layer)) return true;
    if (v == Value::LayerInput || v == Value::LayerOutput)
        return std::find(skipped_.begin(), skipped_.end(), layer) != skipped_.end();
    return false;
}

void EditList::apply(Value v, int layer, torch::Tensor& t) const {
    const bool skipped = std::find(skipped_.begin(), skipped_.end(), layer) != skipped_.end();
    if (skipped && v == Value::LayerInput) skippedInputs_[layer] = t;
    for (const auto& e : edits_)
        if (e.key.value == v && e.key.layer == layer)
            t = applyEditAt(e, t, std::string(valueInfo(v).name) + (layer >= 0 ? " of block " + std::to_string(layer) : ""), positions_);
    for (const auto& o : others_)
        if (o->touches(v, layer)) o->apply(v, layer, t);
    if (skipped && v == Value::LayerOutput) t = skippedInputs_.at(layer);
}

namespace {

std::vector<int64_t> intList(const std::string& text, const std::string& what) {
    std::vector<int64_t> out;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ',')) {
        part = trim(part);
        if (part.empty()) continue;
        try {
            size_t used = 0;
            const long long v = std::stoll(part, &used);
            if (used != part.size()) throw std::invalid_argument(part);
            out.push_back(v);
        } catch (...) {
            throw MalformedIntervention(what + ": '" + part + "' is not an integer.");
        }
    }
    if (out.empty()) throw MalformedIntervention(what + ": no block given.");
    return out;
}

int blockIndex(const Model& m, int64_t layer, const std::string& what) {
    const int64_t n = m.config().numLayers;
    const int64_t given = layer;
    if (layer < 0) layer += n;
    if (layer < 0 || layer >= n)
        throw Error(what + ": block " + std::to_string(given) + " is out of range (0 to " + std::to_string(n - 1) + ").");
    return static_cast<int>(layer);
}

}  // namespace

void addIntervention(EditList& list, const Model& model, const std::string& textIn, const std::string& baseDir) {
    const std::string text = trim(textIn);
    if (text.rfind("skip ", 0) == 0 || text == "skip") {
        for (int64_t l : intList(text.substr(4), "'" + text + "'")) list.skipLayer(blockIndex(model, l, "'" + text + "'"));
        return;
    }
    if (text.rfind("steer ", 0) == 0 || text == "steer") {
        const std::string spec = trim(text.substr(5));
        std::vector<std::string> parts;
        std::stringstream ss(spec);
        std::string part;
        while (std::getline(ss, part, ':')) parts.push_back(trim(part));
        if (parts.size() < 3 || parts.size() > 4)
            throw MalformedIntervention("'" + text + "': expected steer LAYERS:FACTOR:FILE.npy[:POSITIONS], e.g. steer 2:4:vector.npy:-1.");
        double factor = 0;
        try {
            size_t used = 0;
            factor = std::stod(parts[1], &used);
            if (used != parts[1].size()) throw std::invalid_argument(parts[1]);
        } catch (...) {
            throw MalformedIntervention("'" + text + "': the factor '" + parts[1] + "' is not a number.");
        }
        std::filesystem::path file = parts[2];
        if (file.is_relative()) file = std::filesystem::path(baseDir) / file;
        torch::Tensor vec = readNpy(file.string()).to(torch::kFloat32);
        if (vec.numel() == model.config().hiddenSize) vec = vec.reshape({-1});  // [1, hidden] or [hidden, 1] too
        if (vec.dim() != 1 || vec.size(0) != model.config().hiddenSize)
            throw Error("'" + text + "': " + file.string() + " holds a tensor of shape " + shapeStr(vec) +
                        ", not one vector of hidden_size " + std::to_string(model.config().hiddenSize) + " values.");
        const std::vector<int64_t> positions = parts.size() == 4 ? intList(parts[3], "'" + text + "' positions") : std::vector<int64_t>{};
        for (int64_t l : intList(parts[0], "'" + text + "'")) list.steer(blockIndex(model, l, "'" + text + "'"), vec, factor, positions);
        return;
    }
    if (text.rfind("feature ", 0) == 0 || text.rfind("splice ", 0) == 0) {
        list.add(std::shared_ptr<const Intervention>(parseFeatureIntervention(model, text, baseDir)));
        return;
    }
    list.add(parseEdit(model, text, baseDir));
}

std::string headAblationEdit(const Model& model, int layer, int head, bool mean) {
    const int b = blockIndex(model, layer, "head ablation");
    if (head < 0 || head >= model.config().numHeads)
        throw Error("head ablation: head " + std::to_string(head) + " is out of range (0 to " + std::to_string(model.config().numHeads - 1) + ").");
    return valuePath(model.family(), {Value::AttentionHeadOutputs, b}) + "[:, :, " + std::to_string(head) + "] = " + (mean ? "mean" : "0");
}

std::string neuronAblationEdit(const Model& model, int layer, int64_t neuron, bool mean) {
    const int b = blockIndex(model, layer, "neuron ablation");
    if (neuron < 0 || neuron >= model.config().intermediateSize)
        throw Error("neuron ablation: neuron " + std::to_string(neuron) + " is out of range (0 to " +
                    std::to_string(model.config().intermediateSize - 1) + ").");
    return valuePath(model.family(), {Value::MlpNeurons, b}) + "[:, :, " + std::to_string(neuron) + "] = " + (mean ? "mean" : "0");
}

}  // namespace nnscope
