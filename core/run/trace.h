// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/model.h"
#include "core/model/values.h"

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

class Intervention;  // core/run/edit.h

/// The dotted path of a value at a block: `logits`, `layers.3.layer_output`,
/// `layers.3.self_attn.attention_queries`, `layers.3.mlp.mlp_neurons`, or a native path such as
/// `layers.3.mlp.up_proj.output`.
std::string valuePath(const Family& family, const ValueKey& key);
/// Parses a value path (standard or native, with aliases such as `layers.1.input` for layer_input, and nnterp's
/// accessors written as names: `layers_output.3` or `layers_output[3]` for layers.3.layer_output, likewise
/// layers_input, attentions_input, attentions_output, mlps_input, mlps_output and attention_probabilities).
/// Throws nnscope::Error naming the path and listing what is valid.
ValueKey parseValuePath(const Model& model, const std::string& path);
/// Whether `text` matches `pattern`, where `*` stands for any run of characters (dots included) and every other
/// character for itself: `--save` patterns.
bool globMatch(const char* pattern, const char* text);
/// Every value key a `--save` pattern selects: `all`, a full path, or a path with `*` wildcards
/// (`layers.*.self_attn.attention_probabilities`, `*.mlp_output`). Throws nnscope::Error when nothing matches.
std::vector<ValueKey> matchValues(const Model& model, const std::string& pattern);
/// Every (value, block) key the model has, standard then native, in the support table's order.
std::vector<ValueKey> allValueKeys(const Model& model, bool includeNative);

/// A batch of prompts, tokenized and left-padded.
struct Batch {
    std::vector<std::string> prompts;
    std::vector<std::vector<int64_t>> ids;  ///< each prompt's own ids (no padding)
    torch::Tensor inputIds;                 ///< int64 [batch, seq], left-padded
    torch::Tensor attentionMask;            ///< int64 [batch, seq], 0 on padding
    int64_t padId = 0;
};

/// Tokenizes `prompts` with the model's tokenizer (BOS prepended as the tokenizer config says; an empty prompt is
/// the BOS token alone) and left-pads them into one batch. Throws nnscope::Error when the model has no tokenizer
/// or a prompt tokenizes to nothing.
Batch encodeBatch(const Model& model, const std::vector<std::string>& prompts);

/// A token named by the user: `#ID` (a token id of the model), text that tokenizes, without BOS, to exactly one
/// token (" Paris"), or else a token's vocabulary string or label exactly (Tokenizer::idOfToken: "▁there" or
/// "␣there", and SentencePiece's "," that encodes as two tokens), so that a token copied from nnscope's output is
/// taken back. Throws nnscope::Error starting with `what`: an id outside the vocabulary, text of several tokens or
/// none that is no token's string or label, or no tokenizer.
int64_t parseTokenArgument(const Model& model, const std::string& text, const std::string& what);
/// A batch from explicit ids (each row left-padded with `padId`). Throws nnscope::Error on an empty row.
Batch batchFromIds(const std::vector<std::vector<int64_t>>& ids, int64_t padId = 0);

/// What to read, what to change, and how to report, for one trace.
struct TraceOptions {
    std::vector<ValueKey> save;                      ///< values kept in the result (nothing else is kept)
    std::shared_ptr<const Intervention> intervention;  ///< edits applied during the pass (may be null)
    std::function<void(int done, int total)> progress;  ///< called before each block (done = blocks finished)
    const std::atomic<bool>* cancel = nullptr;       ///< when set to true, the pass stops within one block
    /// Per row, how many of its tokens are the prompt (the rest were generated): the positions interventions name
    /// count from the prompt (PassPositions). Empty: every row is all prompt.
    std::vector<int64_t> promptLengths;
    /// When >= 0, the pass stops after block `stopAfterLayer` (nothing after it is computed: no later block, no final norm,
    /// no logits; TraceResult::nextTokenProbs is undefined). For a caller that needs values of the first blocks only
    /// (a dictionary's site: core/run/dashboard.h); a value of a later block or of the root asked in `save` is not saved.
    int stopAfterLayer = -1;
};

/// Where a sparse dictionary's values came from: what an export records of the dictionary (metadata "dictionaries",
/// core/io/export.h) and a trace file reads back, so a saved feature names the exact weights that made it.
struct DictionarySource {
    std::string name;          ///< its name in value paths: the folder's name, or more of its path where two attached share one
    std::string folder;        ///< the folder it was read from (absolute where it exists)
    std::string format;        ///< "saelens", "gemma-scope-2", "gemma-scope", "sparsify", "llama-scope"
    std::string architecture;  ///< as its files name it ("jumprelu", "topk", ...)
    bool transcoder = false;
    std::string site;     ///< the value path it reads ("layers.0.layer_output")
    std::string siteOut;  ///< the value path its reconstruction stands for (the site itself for an SAE)
    int64_t dIn = 0, dSae = 0, dOut = 0;
    /// Each weights file (its path) and its sha256 as hex; the digest is "" until an export computes it.
    std::vector<std::pair<std::string, std::string>> weights;
};

/// A value a sparse dictionary computes from a trace (core/run/features.h, dictionaryValues): its feature activations,
/// its reconstruction or its error term at the site, for every row and position of the trace's batch (left-padded like
/// every other value: a padding position holds the dictionary's output on the site's value there).
struct DictionaryValue {
    enum class Kind { Features, Reconstruction, Error };
    /// "SITE[NAME].features", ".reconstruction" or ".error": "layers.0.layer_output[sae-layers.0].features".
    std::string path;
    Kind kind = Kind::Features;
    std::shared_ptr<const DictionarySource> source;
    torch::Tensor tensor;  ///< float32 [batch, seq, d_sae] (features) or [batch, seq, d_out] (reconstruction, error)
    /// "Features" (axes batch seq d_sae) or "Reconstruction" (axes batch seq d_out, for the error term too).
    const char* layout() const { return kind == Kind::Features ? "Features" : "Reconstruction"; }
    std::vector<std::string> axes() const { return {"batch", "seq", kind == Kind::Features ? "d_sae" : "d_out"}; }
};

/// The result of one trace: the saved values and the next-token distribution.
struct TraceResult {
    Batch batch;
    std::vector<std::pair<ValueKey, torch::Tensor>> values;  ///< saved values, in the order asked
    /// Values of the attached sparse dictionaries, in the order asked (empty unless asked: core/run/features.h).
    std::vector<DictionaryValue> dictionaryValues;
    torch::Tensor nextTokenProbs;                             ///< float32 [batch, vocab_size]; undefined after stopAfterLayer
    /// The saved value `key`, or an undefined tensor.
    torch::Tensor value(const ValueKey& key) const;
    /// The dictionary value whose path is `path`, or nullptr.
    const DictionaryValue* dictionaryValue(const std::string& path) const;
};

/// Runs the model on `batch` under InferenceMode, keeping exactly the values in options.save.
/// Throws nnscope::Error on bad input, nnscope::Cancelled when cancelled.
TraceResult trace(const Model& model, const Batch& batch, const TraceOptions& options);

/// A token with its probability.
struct TokenProb {
    int64_t id;
    std::string text;  ///< readable label
    double prob;
};
/// The k most probable next tokens of each row of probs [batch, vocab]; none for a row that is not all finite (a NaN
/// the pass made upstream: no token is more probable than another there).
std::vector<std::vector<TokenProb>> topK(const Model& model, const torch::Tensor& probs, int k);

/// Greedy decoding (argmax, no sampling) of up to `maxNewTokens` tokens after `ids` (fewer where the context ends);
/// stops early at any end-of-sequence id (stopTokenIds, core/run/generate.h) when `stopAtEos`. Returns the prompt's ids
/// followed by the new ones. generate() (core/run/generate.h) samples and applies interventions too.
std::vector<int64_t> generateGreedy(const Model& model, const std::vector<int64_t>& ids, int maxNewTokens, bool stopAtEos = true,
                                    const std::atomic<bool>* cancel = nullptr);

/// Sets libtorch's intra-op thread count (0: every core). Debian's libtorch starts with one thread.
void configureThreads(int threads = 0);

/// The nnscope version string.
const char* version();

}  // namespace nnscope
