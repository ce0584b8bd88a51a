// SPDX-License-Identifier: MIT
#pragma once
// A trace read back from a .safetensors file: what `nnscope trace --out` and the window's exports write (tensors named
// by value paths, metadata with the prompts, input_ids, token labels and config.json), or any file whose tensor names
// are value paths (saved from nnterp: "layers.3.layer_output", "layers_output.3"). The values become a TraceResult, so
// everything that reads a trace reads it, without the checkpoint's weights. No Qt here.
#include "core/run/trace.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nnscope {

struct TraceFileOptions {
    /// Where the checkpoint named in the file's metadata ("model"), or a checkpoint folder holding the file, is on
    /// this machine, load its weights too (memory-mapped): the logit lens and the views that project on the
    /// vocabulary need them. Off: the model never has weights.
    bool loadWeights = true;
};

/// A trace file, read.
struct TraceFile {
    std::string path;
    /// The model the values belong to: the checkpoint found for it (with weights), or a model without weights
    /// (Model::withoutWeights) made from the file's config, a config.json beside it, or, for a file with neither,
    /// sizes read off the values' shapes (family llama).
    std::shared_ptr<const Model> model;
    std::string checkpoint;  ///< the checkpoint folder whose weights were loaded, or ""
    std::string noWeights;   ///< why no weights were loaded (a sentence), "" when they were
    std::string configFrom;  ///< where the config came from: "the file's metadata", a config.json path, or "the values' shapes"
    std::string tokensFrom;  ///< where the token labels came from: "the file's metadata", a tokenizer file, "input_ids", or "positions"
    TraceResult result;      ///< the values under their keys; the batch (ids, padding); next_token_probs where derivable
    std::vector<std::vector<std::string>> tokens;  ///< each prompt's token labels
    std::map<std::string, std::string> metadata;   ///< the file's own metadata
    std::vector<std::string> skipped;  ///< tensors that are not value paths of the model ("name: why"), not loaded
};

/// Reads `path`. Throws nnscope::Error naming the file: not a safetensors file, no tensor named by a value path, a
/// tensor whose shape does not fit the others or the config (its name, its shape and the expected one), metadata that
/// do not parse.
TraceFile readTraceFile(const std::string& path, const TraceFileOptions& options = {});

}  // namespace nnscope
