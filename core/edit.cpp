// SPDX-License-Identifier: MIT
#include "edit.h"

#include "error.h"
#include "model.h"
#include "safetensors.h"
#include "trace.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
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
            case IndexItem::Slice:
                out.emplace_back(torch::indexing::Slice(it.start ? c10::optional<int64_t>(*it.start) : c10::nullopt,
                                                        it.stop ? c10::optional<int64_t>(*it.stop) : c10::nullopt));
                break;
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
            throw Error("edit '" + edit + "': '" + s + "' is not an integer index.");
        }
    };
    while (std::getline(ss, item, ',')) {
        item = trim(item);
        IndexItem it;
        if (item == "...") {
            it.kind = IndexItem::Ellipsis;
        } else if (item.find(':') != std::string::npos) {
            it.kind = IndexItem::Slice;
            const std::string a = trim(item.substr(0, item.find(':'))), b = trim(item.substr(item.find(':') + 1));
            if (b.find(':') != std::string::npos) throw Error("edit '" + edit + "': slices with a step are not supported.");
            if (!a.empty()) it.start = num(a);
            if (!b.empty()) it.stop = num(b);
        } else if (item.empty()) {
            throw Error("edit '" + edit + "': an index item is empty (write ':' for a whole axis).");
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
        throw Error("edit '" + text + "': no operator; write PATH[INDEX] = | += | -= | *= | /= VALUE, e.g. "
                    "'layers.1.self_attn.attention_queries[:, 1] *= 2'.");
    std::string lhs = trim(text.substr(0, opPos)), rhs = trim(text.substr(opPos + opLen));
    std::string path = lhs;
    const auto br = lhs.find('[');
    if (br != std::string::npos) {
        if (lhs.back() != ']') throw Error("edit '" + text + "': the index must end with ']'.");
        path = trim(lhs.substr(0, br));
        e.index = parseIndex(lhs.substr(br + 1, lhs.size() - br - 2), text);
    }
    e.key = parseValuePath(model, path);
    const ValueInfo& info = valueInfo(e.key.value);
    if (info.readOnly)
        throw Error("edit '" + text + "': " + path + " is read-only (" + info.description + ")" +
                    (e.key.value == Value::NextTokenProbs ? "; edit the logits instead." : "; it describes the pass, nothing reads it."));
    // operand
    if (rhs.empty()) throw Error("edit '" + text + "': nothing after the operator.");
    if (rhs == "mean") {
        if (e.op != Edit::Op::Set) throw Error("edit '" + text + "': 'mean' only goes with '=' (mean-ablation).");
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
            throw Error("edit '" + text + "': '" + a + "' is not a number (write N * @file.npy).");
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
        throw Error("edit '" + text + "': '" + atom + "' is neither a number, @file.npy nor mean.");
    }
    e.operand = Edit::Operand::Scalar;
    return e;
}

std::string Edit::describe(const Model& model) const {
    (void)model;
    return text;
}

torch::Tensor applyEdit(const Edit& e, const torch::Tensor& t, const std::string& path) {
    const auto idx = toTorch(e.index);
    torch::Tensor sel;
    try {
        sel = e.index.empty() ? t : t.index(idx);
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
            const ValueInfo& info = valueInfo(e.key.value);
            std::vector<int64_t> dims;
            for (size_t a = 0; a < info.axes.size() && a < static_cast<size_t>(t.dim()); ++a) {
                const std::string n = info.axes[a];
                if (n == "batch" || n == "seq" || n == "query") dims.push_back(static_cast<int64_t>(a));
            }
            auto m = t.to(torch::kFloat32).mean(dims, /*keepdim=*/true).expand_as(t).to(t.scalar_type());
            operand = e.index.empty() ? m : m.index(idx);
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
    if (e.index.empty()) return updated.to(t.scalar_type());
    torch::Tensor out = t.clone();  // never write into the pass's own tensor: it may be shared or read-only
    out.index_put_(idx, updated.to(t.scalar_type()));
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
        IndexItem all, pos;
        pos.kind = IndexItem::Integer;
        pos.start = p;
        addAt({all, pos}, ":, " + std::to_string(p));
    }
}

bool EditList::touches(Value v, int layer) const {
    for (const auto& e : edits_)
        if (e.key.value == v && e.key.layer == layer) return true;
    if (v == Value::LayerInput || v == Value::LayerOutput)
        return std::find(skipped_.begin(), skipped_.end(), layer) != skipped_.end();
    return false;
}

void EditList::apply(Value v, int layer, torch::Tensor& t) const {
    const bool skipped = std::find(skipped_.begin(), skipped_.end(), layer) != skipped_.end();
    if (skipped && v == Value::LayerInput) skippedInputs_[layer] = t;
    for (const auto& e : edits_)
        if (e.key.value == v && e.key.layer == layer)
            t = applyEdit(e, t, std::string(valueInfo(v).name) + (layer >= 0 ? " of block " + std::to_string(layer) : ""));
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
            throw Error(what + ": '" + part + "' is not an integer.");
        }
    }
    if (out.empty()) throw Error(what + ": no block given.");
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
            throw Error("'" + text + "': expected steer LAYERS:FACTOR:FILE.npy[:POSITIONS], e.g. steer 2:4:vector.npy:-1.");
        double factor = 0;
        try {
            size_t used = 0;
            factor = std::stod(parts[1], &used);
            if (used != parts[1].size()) throw std::invalid_argument(parts[1]);
        } catch (...) {
            throw Error("'" + text + "': the factor '" + parts[1] + "' is not a number.");
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
