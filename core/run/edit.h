// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/error.h"
#include "core/model/values.h"

#include <torch/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

class Model;

/// Where each row's own prompt sits in a pass, so that the positions an edit names are the prompt's own: position 0 is
/// the prompt's first real token (after any left padding), -1 its last (not the last generated token), and `new` every
/// position after the prompt (the tokens generation adds). One entry per row of the batch.
struct PassPositions {
    std::vector<int64_t> padding;       ///< left-padding tokens before the row's first real token
    std::vector<int64_t> promptLength;  ///< the row's prompt tokens (the rest of the row, if any, was generated)
    /// The positions of a batch whose rows are whole prompts: padding = seq - length, promptLength = length.
    static PassPositions ofPrompts(const std::vector<int64_t>& lengths, int64_t seq);
};

/// Changes values during a forward pass (nnsight semantics: an edit to a value changes what the rest of the
/// pass computes from it). Applied by the trace before the value is saved, so a saved value shows the edit.
class Intervention {
public:
    virtual ~Intervention() = default;
    /// Replaces `t` (never writes into it: it may view read-only weights) with its edited version.
    virtual void apply(Value v, int layer, torch::Tensor& t) const = 0;
    /// Whether any edit targets this value (fast path: most values are untouched).
    virtual bool touches(Value v, int layer) const = 0;
    /// Called once when a pass starts, with where each row's prompt sits (state such as a skipped block's input is
    /// reset).
    virtual void begin(const PassPositions& positions) const { (void)positions; }
    /// Whether a row's edited value can depend on the other rows of the pass (a `mean` operand averages over the
    /// batch): such an intervention gives another result when several patched runs share one batch, so batched
    /// activation patching (core/run/patching.h) runs one row per pass under it.
    virtual bool mixesRows() const { return false; }
};

/// One item of an index: an integer (negative counts from the end), a slice start:stop (either may be
/// absent), "..." (every remaining axis), or `new` (on a position axis: every position after the prompt, the tokens
/// generation adds; nothing in a plain trace).
struct IndexItem {
    enum Kind { Integer, Slice, Ellipsis, New } kind = Slice;
    std::optional<int64_t> start, stop;  ///< Integer uses start
    /// The integer index `i` (`[:, i]`'s second item: one element of its axis, the axis dropped).
    static IndexItem integer(int64_t i) {
        IndexItem it;
        it.kind = Integer;
        it.start = i;
        return it;
    }
};

/// An intervention whose text is malformed in itself, whatever the model: no operator or an unknown one, an index or an
/// operand that does not parse, a steer or skip line not of its form. The command line reports it as a usage error
/// (exit status 2); an edit that parses but does not fit the model (a block out of range, an unknown value path) is
/// a plain nnscope::Error.
class MalformedIntervention : public Error {
public:
    using Error::Error;
};

/// One edit of one value: `PATH[INDEX] OP OPERAND`.
///   PATH     a value path (`layers.1.self_attn.attention_queries`, `layers.3.mlp.up_proj.output`, ...)
///   INDEX    optional, NumPy style, over the value's own axes (its layout): `[:, 1]` is query head 1 of
///            attention_queries [batch num_heads seq qk_head_dim]; `[0, -1]` the last position of row 0.
///   OP       `=` (set), `+=` (add), `-=`, `*=` (scale), `/=`
///   OPERAND  a number, `@file.npy` (a tensor, broadcast to the selection), `N * @file.npy`, or `mean`
///            (the selection's mean over the batch and seq/query axes of this pass: mean-ablation).
/// Positions (axes seq, query, key) are the prompt's own in every row of a left-padded batch: 0 is the row's first
/// real token, -1 its prompt's last; `new` selects the generated positions (PassPositions).
/// Examples: `layers.1.self_attn.attention_queries[:, 1] *= 2`, `layers.3.layer_output[0, -1] += 4 * @v.npy`,
/// `layers.0.mlp.mlp_neurons[:, :, 5] = 0`, `layers.2.self_attn.attention_head_outputs[:, :, 3] = mean`.
struct Edit {
    enum class Op { Set, Add, Sub, Mul, Div };
    enum class Operand { Scalar, Tensor, Mean };
    ValueKey key;
    std::vector<IndexItem> index;
    Op op = Op::Set;
    Operand operand = Operand::Scalar;
    double scalar = 0;      ///< the number, or the factor in front of a tensor
    torch::Tensor tensor;   ///< the operand tensor (float32)
    std::string text;       ///< as written, for messages and the window's list

    /// The edit as text (canonical spelling of `text`).
    std::string describe(const Model& model) const;
};

/// Parses one edit (syntax above) for `model`. Throws nnscope::Error naming the edit and what is wrong:
/// unknown path, read-only value (next_token_probs, input_size), bad index or operator, unreadable .npy.
/// `.npy` paths are resolved relative to `baseDir` when not absolute.
Edit parseEdit(const Model& model, const std::string& text, const std::string& baseDir = ".");

/// Edits, skipped blocks and patches applied in one forward pass, in order.
class EditList : public Intervention {
public:
    void add(Edit e) { edits_.push_back(std::move(e)); }
    /// Skip block `layer`: its layer_output is replaced by its layer_input (the stream passes unchanged).
    void skipLayer(int layer) { skipped_.push_back(layer); }
    /// Replaces `key`'s value at `index` with `source` (already indexed the same way): activation patching.
    void patch(const ValueKey& key, std::vector<IndexItem> index, torch::Tensor source);
    /// Steering: add factor × vector to layer_output of `layer` at `positions` (all positions when empty; each counts
    /// from the prompt as PassPositions says, so a batch steers each prompt at its own position).
    void steer(int layer, const torch::Tensor& vector, double factor, const std::vector<int64_t>& positions = {});

    /// Another intervention applied in the same pass, after the edits of the same value (a dictionary's feature edits,
    /// core/run/features.h).
    void add(std::shared_ptr<const Intervention> other) { others_.push_back(std::move(other)); }
    bool empty() const { return edits_.empty() && skipped_.empty() && others_.empty(); }
    const std::vector<Edit>& edits() const { return edits_; }
    const std::vector<int>& skipped() const { return skipped_; }

    void apply(Value v, int layer, torch::Tensor& t) const override;
    bool touches(Value v, int layer) const override;
    bool mixesRows() const override;
    void begin(const PassPositions& positions) const override {
        skippedInputs_.clear();
        positions_ = positions;
        for (const auto& o : others_) o->begin(positions);
    }

private:
    std::vector<Edit> edits_;
    std::vector<int> skipped_;
    std::vector<std::shared_ptr<const Intervention>> others_;
    mutable std::map<int, torch::Tensor> skippedInputs_;
    mutable PassPositions positions_;
};

/// Adds one intervention written as text to `list`, the syntax the window's Interventions list and the command line
/// share:
///   an edit            `PATH[INDEX] OP OPERAND` (parseEdit)
///   `skip LAYERS`      skip blocks (comma-separated indices, negative from the end): layer_output = layer_input
///   `steer LAYERS:FACTOR:FILE.npy[:POSITIONS]`  add FACTOR x the vector (hidden_size values) to layer_output of
///                      each block at POSITIONS (comma-separated, negative from the end; all positions without)
///   `feature DIR:F OP VALUE`  a sparse dictionary's feature F at its site (DIR: the dictionary's folder): `= v` clamps
///                      its activation to v (0 zeroes it), `*= s` scales it, `+= d` / `-= d` moves it (steering by d times
///                      its decoder row); the site's value changes by decode(edited) - decode(features), so the
///                      dictionary's error term stays and only that feature changes (FeatureIntervention);
///                      `feature DIR:F@P,... OP VALUE` changes it at those prompt positions only (negative from the end)
///   `splice DIR`       the site's value replaced by the dictionary's reconstruction (its error term dropped)
/// Relative .npy paths are resolved against `baseDir`. Throws nnscope::Error naming the text and the problem (a
/// block out of range, a vector of the wrong size, an unreadable file, a bad edit).
void addIntervention(EditList& list, const Model& model, const std::string& text, const std::string& baseDir = ".");

/// The edit that ablates head `head` of block `layer`: its slice of attention_head_outputs [batch seq num_heads
/// head_dim] (the heads' outputs before o_proj mixes them) set to 0 (`mean` false) or to its mean over the batch and
/// positions of the pass (`mean` true). Throws nnscope::Error when the block or head is out of range.
std::string headAblationEdit(const Model& model, int layer, int head, bool mean);
/// The edit that ablates neuron `neuron` of block `layer`: mlp_neurons [batch seq intermediate_size] (what down_proj
/// reads) set to 0 or to its mean. Throws nnscope::Error when the block or neuron is out of range.
std::string neuronAblationEdit(const Model& model, int layer, int64_t neuron, bool mean);

/// Applies one edit to `t` out of place, with the index's positions as written (counted on the tensor's own axes).
/// Throws nnscope::Error when the index does not fit the value's shape or the operand does not broadcast to the
/// selection (both shapes are printed).
torch::Tensor applyEdit(const Edit& e, const torch::Tensor& t, const std::string& path);
/// Applies one edit to `t` [batch, ...] with its positions counted from each row's prompt (PassPositions): rows whose
/// prompts sit alike are edited together, the others row by row. `mean` operands average over the whole pass first.
/// An empty `positions` means the rows are the prompts, unpadded. Throws as applyEdit.
torch::Tensor applyEditAt(const Edit& e, const torch::Tensor& t, const std::string& path, const PassPositions& positions);

}  // namespace nnscope
