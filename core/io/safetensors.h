// SPDX-License-Identifier: MIT
#pragma once
#include "core/model/error.h"

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace nnscope {

/// One .safetensors file, memory-mapped read-only.
///
/// The format (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of JSON
/// mapping each tensor name to {dtype, shape, data_offsets:[begin, end]} (offsets relative to the byte
/// after the header) plus an optional "__metadata__" object of strings, then the data.
/// Every header is checked when the file is opened (parseSafetensorsHeader): the file is a regular file, the
/// length is plausible, the JSON parses (nested at most kJsonMaxDepth levels, no tensor named twice, padded
/// only with trailing spaces), each dtype is known, each shape × dtype size equals its byte range (products
/// checked for overflow), and the byte ranges tile the data section exactly: no gap, no overlap, nothing
/// left at the end. Any failure throws nnscope::Error naming the file (and the tensor or the byte range).
class SafetensorsFile {
public:
    struct Entry {
        torch::ScalarType dtype;
        std::vector<int64_t> shape;
        size_t begin = 0;  ///< absolute byte offset in the file
        size_t end = 0;
    };

    /// Maps `path` and validates its header. Throws nnscope::Error.
    explicit SafetensorsFile(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return path_; }
    bool contains(const std::string& name) const { return entries_.count(name) != 0; }
    const std::map<std::string, Entry>& entries() const { return entries_; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    /// A tensor viewing the mapped bytes (no copy; read-only memory: clone before writing to it).
    /// Keeps the mapping alive for as long as the tensor lives. Throws nnscope::Error when absent.
    torch::Tensor tensor(const std::string& name) const;

private:
    struct Mapping;
    std::string path_;
    std::shared_ptr<Mapping> map_;
    std::map<std::string, Entry> entries_;
    std::map<std::string, std::string> metadata_;
};

/// What a safetensors header holds, once checked.
struct SafetensorsHeader {
    std::map<std::string, SafetensorsFile::Entry> entries;
    std::map<std::string, std::string> metadata;
};

/// Parses and checks the header of the safetensors file whose `size` bytes start at `bytes` (the whole file:
/// the data section's size matters), as SafetensorsFile describes. `path` names the file in messages.
/// Throws nnscope::Error naming the file, and the tensor or byte range at fault. (Separate from the mapping so
/// that tests and the fuzzer can feed it bytes.)
SafetensorsHeader parseSafetensorsHeader(const unsigned char* bytes, size_t size, const std::string& path);

/// The weights of a checkpoint folder: `model.safetensors`, or the shards that
/// `model.safetensors.index.json` lists. Pickled weights (pytorch_model.bin, *.pt, *.pth, *.ckpt) are
/// refused: unpickling can run arbitrary code.
///
/// A sharded checkpoint's index is checked against the shards' headers: an index entry that names a tensor its
/// shard does not hold (or that no shard holds) is recorded in indexProblems(); get() refuses such a tensor,
/// and Model::load warns about the others (the model does not read them).
class WeightStore {
public:
    /// Opens every weight file of `dir`. Throws nnscope::Error naming the file and the problem (the index
    /// unreadable, not JSON or nested too deep, a shard missing or not a regular file, a header refused).
    explicit WeightStore(const std::string& dir);
    /// Tensors already in memory (a model built in a test or by the demo trainer), named as a checkpoint names them;
    /// `label` stands for the folder in messages.
    WeightStore(const std::string& label, std::map<std::string, torch::Tensor> tensors);

    bool contains(const std::string& name) const { return where_.count(name) != 0; }
    /// The tensor `name` as stored (dtype of the file). Throws nnscope::Error naming the tensor and the
    /// folder when it is missing, and naming the index when its entry for `name` is wrong.
    torch::Tensor get(const std::string& name) const;
    /// The tensor `name`, checked to have `shape` and a floating dtype (F32, F16, BF16, F64): a model weight.
    /// Throws nnscope::Error printing both shapes, or naming the dtype.
    torch::Tensor get(const std::string& name, const std::vector<int64_t>& shape) const;
    /// The names get() was asked for so far, found or not (Model::load compares them with names() to warn
    /// about stored tensors the model never reads).
    std::set<std::string> requested() const;
    /// The entries of model.safetensors.index.json that do not match the shards: tensor name -> the problem,
    /// a sentence naming the index, the shard and the tensor. Empty for an unsharded checkpoint.
    const std::map<std::string, std::string>& indexProblems() const { return indexProblems_; }
    /// Every tensor name across the files.
    std::vector<std::string> names() const;
    /// Elements stored per floating dtype, over every tensor but those `skip` names (from the headers: nothing is
    /// read). Model::load takes the checkpoint's dtype and the size of a float32 copy from it, leaving out the tensors
    /// the family never reads (Family::skippedTensorPrefixes: Gemma 3's vision tower).
    std::map<torch::ScalarType, int64_t> floatingElements(const std::function<bool(const std::string&)>& skip = {}) const;
    /// The file that holds `name` (for messages).
    std::string fileOf(const std::string& name) const;
    /// Reads the tensors stored under another spelling of their names' prefixes under the family's names: every stored
    /// name that starts with `saved` of a pair (saved, canonical) is known from then on as canonical + the rest, in
    /// names(), contains(), get() and requested() (transformers 5.23 saves Gemma 3's multimodal checkpoints as
    /// language_model.model.layers..., which it loads as model.language_model.layers...). Returns how many names were
    /// renamed. Throws nnscope::Error naming the file when a tensor is stored under both spellings.
    size_t renamePrefixes(const std::vector<std::pair<std::string, std::string>>& savedToCanonical);
    /// The name `name` has in the file ("language_model.model.norm.weight" for "model.language_model.norm.weight" after
    /// renamePrefixes); `name` itself when it was not renamed.
    std::string storedName(const std::string& name) const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, size_t> where_;
    std::map<std::string, torch::Tensor> memory_;  ///< in-memory tensors (the second constructor)
    std::map<std::string, std::string> indexProblems_;
    std::map<std::string, std::string> stored_;  ///< renamed name -> the name in the file (renamePrefixes)
    std::vector<std::pair<std::string, std::string>> renamed_;  ///< renamePrefixes' (saved, canonical) pairs
    /// " (nor 'language_model.model.x', as transformers saves it)" for a missing renamed name, for messages.
    std::string savedSpellings(const std::string& name) const;
    mutable std::mutex requestedMutex_;  // get() may run on several threads after load
    mutable std::set<std::string> requested_;
};

/// Writes `tensors` (name → tensor, any of F32/F16/BF16/I64/I32/U8/BOOL) and string `metadata` to a
/// .safetensors file at `path`, atomically: the bytes go to a temporary file beside it that is renamed
/// only when everything was written, so a failure leaves nothing half-written. Throws nnscope::Error.
void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata);

/// Writes one tensor to a NumPy .npy file (format 1.0, little-endian, C order), atomically.
void writeNpy(const std::string& path, const torch::Tensor& tensor);
/// Reads a .npy file (float32/float64/float16/int64/int32, C order) into a tensor. Throws nnscope::Error.
torch::Tensor readNpy(const std::string& path);
/// Reads the arrays of a NumPy .npz archive as np.savez writes it (a zip of .npy files, stored, not compressed), by
/// name without ".npy". Throws nnscope::Error naming the file: not a zip, a compressed member (np.savez_compressed),
/// a member that is not a .npy file.
std::map<std::string, torch::Tensor> readNpz(const std::string& path);

/// A stored tensor whose shape is not the one the config implies (WeightStore::get with a shape): Model::load adds
/// which size key config.json left out, where one did.
class TensorShapeMismatch : public Error {
public:
    using Error::Error;
};

/// Writes `data` to `path` atomically (temporary file + rename). Throws nnscope::Error naming the path.
void writeFileAtomically(const std::string& path, const std::string& data);

/// Checks, before any work, that writeFileAtomically(path, ...) can write `path`: its name is a file name, it is not
/// a folder, and its folder exists and takes a new file (one is created and removed at once). For the commands that
/// compute for minutes or hours before they write (a graph, a dashboard, a patching grid): a typo in the folder is
/// found before the computation, not after it. Throws nnscope::Error naming the path and the problem.
void checkWritableFile(const std::string& path);

/// The safetensors dtype string of a scalar type ("F32", "BF16", ...). Throws for unsupported types.
std::string safetensorsDtypeName(torch::ScalarType t);

}  // namespace nnscope
