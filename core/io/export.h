// SPDX-License-Identifier: MIT
#pragma once
#include "core/run/trace.h"

#include <map>
#include <memory>
#include <string>

namespace nnscope {

/// Metadata recorded with every export: model folder, family, dtype, prompts (JSON list), input_ids (JSON list of
/// each prompt's ids), config (config.json as read), tokens (JSON list of each prompt's token labels, where the model
/// has a tokenizer), nnscope version, plus each value's layout and axes under "layout:<path>" and "axes:<path>".
/// Where `result` holds sparse dictionaries' values (TraceResult::dictionaryValues), also "dictionaries": a JSON list
/// with one object per dictionary, {"name", "folder", "format", "architecture", "transcoder", "site", "site_out",
/// "d_in", "d_sae", "d_out", "weights": [{"file", "sha256"}]} (each weights file's sha256 computed here, core/io/filehash.h,
/// unless the source already holds it), and "dictionary:<path>" giving each such value's dictionary by name.
/// A .safetensors file with these opens as a trace without the checkpoint (core/io/tracefile.h). Throws nnscope::Error
/// when a dictionary's weights file cannot be read to hash it.
std::map<std::string, std::string> exportMetadata(const Model& model, const TraceResult& result,
                                                  const std::map<std::string, std::string>& extra = {});

/// The dictionaries a file's metadata records (its "dictionaries" entry, written by exportMetadata), keyed by name;
/// empty when there is none. Throws nnscope::Error naming `file` when the entry is not such a JSON list.
std::map<std::string, std::shared_ptr<const DictionarySource>> readDictionarySources(const std::map<std::string, std::string>& metadata,
                                                                                     const std::string& file);

/// Writes the saved values of `result` to `path`: a .safetensors file whose tensor names are the value
/// paths (with the metadata above; the dictionaries' values after the model's), or a .npy file when `path` ends in
/// .npy and exactly one value was saved. Atomic: a failure leaves no file. Throws nnscope::Error (no value saved,
/// several values for .npy, unwritable path, an unreadable dictionary weights file).
void exportValues(const std::string& path, const Model& model, const TraceResult& result,
                  const std::map<std::string, std::string>& extra = {});

/// One value as CSV text: "# key: value" lines for `metadata`, a header naming the axes, then one row per element
/// of all but the last axis (its indices first), the last axis across the columns; 9 significant digits.
std::string csvText(const torch::Tensor& value, const std::vector<std::string>& axes,
                    const std::map<std::string, std::string>& metadata = {});

/// Writes one value as CSV (csvText): a header naming the axes, then one row per element of all but the last axis,
/// the last axis across the columns. Atomic. Throws nnscope::Error.
void writeCsv(const std::string& path, const torch::Tensor& value, const std::vector<std::string>& axes,
              const std::map<std::string, std::string>& metadata);

}  // namespace nnscope
