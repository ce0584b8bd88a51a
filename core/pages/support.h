// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/model.h"
#include "core/model/values.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// One row of the support table ("values, by host").
struct SupportRow {
    Host host;
    std::string hostPath;   ///< "model", "model.layers[i]", "model.layers[i].self_attn", "model.layers[i].mlp"
    std::string hostClass;  ///< "LlamaForCausalLM", "LlamaDecoderLayer", "LlamaAttention", "LlamaMLP"
    Value value;
    std::string name;       ///< standard name
    std::string layout;     ///< "Queries [batch num_heads seq qk_head_dim]"
    std::string description;
    std::string readAt;     ///< with the family's module names
    bool eagerOnly = false; ///< ⚠︎: transformers has it only under attn_implementation="eager"
    bool readOnly = false;
    /// Where a family with experts has the value on only some blocks: "blocks with experts only" (the mixture's values),
    /// "dense blocks only" (the dense MLP's interior); empty where every block has it.
    std::string availability;
};

/// The HF class name of a host for this family (e.g. "Ernie4_5DecoderLayer").
std::string hostClass(const Family& family, Host host);
/// The support table of a family, in the seeds' order; a family with experts adds the mixture's values to its MLP host
/// (after mlp_output) and marks which kind of block has each (SupportRow::availability).
std::vector<SupportRow> supportTable(const Family& family);
/// The blocks of `model` that compute `v`, as "0, 2, 3" ("all" where every block does, "none" where none does).
std::string blocksWith(const Model& model, Value v);
/// One native value (a value of the family's own modules, Value::Native*) of a checkpoint: its path with `i` for the block
/// ("layers.i.post_attention_layernorm.normalized"), layout with axes, description, and whether this checkpoint computes
/// it (else why not).
struct NativeValueRow {
    Value value;
    std::string path;  ///< "" when not available
    std::string layout, description;
    bool available = false;
    std::string whyNot;
};
/// Every native value, in the table's order, with its availability on `model`.
std::vector<NativeValueRow> nativeValueRows(const Model& model);

/// The support table as JSON: {"family", "architecture", "sizes": {...}, "hosts": [{"host", "class", "values": [...]}],
/// "native_values": [{"path", "layout", "description", "available"} or {..., "available": false, "why"}]}.
nlohmann::json supportJson(const Model& model);
/// The support table as text, one block per host (as `nnscope support` prints it).
std::string supportText(const Model& model);
/// The standard sizes: num_layers, hidden_size, num_heads, num_kv_heads, head_dim, qk_head_dim, vocab_size,
/// intermediate_size.
std::vector<std::pair<std::string, int64_t>> standardSizes(const ModelConfig& config);
/// One line of the printout and what it stands for: a module of the tree, a standard value, or neither (brackets, the
/// generator). The window's printout selects and pins from these, never by parsing the text.
struct PrintoutLine {
    std::string text;
    std::optional<Value> value;
    std::optional<Module> module;
};
/// The printout's lines from a family and a resolved config: the modules of the family's block description
/// (core/model/block.h) in transformers' registration order, each block host's standard values under it.
std::vector<PrintoutLine> printoutLines(const Family& family, const ModelConfig& config);
/// What print(model) shows under nnterp: the native modules with their shapes, the standard names and every
/// standard value with its layout (the seeds' "Printout"); printoutLines joined with newlines.
std::string printout(const Model& model);
/// The printout from a family and a resolved config alone (no weights needed).
std::string printout(const Family& family, const ModelConfig& config);
/// Python's repr() of a float (1e-05, 0.5, 0.0), for printouts that match transformers'.
std::string pythonFloat(double v);

}  // namespace nnscope
