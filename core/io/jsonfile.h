// SPDX-License-Identifier: MIT
// Reading the files of a checkpoint folder that someone else made: only regular files, never more than a
// size limit, and JSON never nested deeper than a limit. Every JSON file nnscope reads goes through here
// (config.json, tokenizer_config.json, special_tokens_map.json, model.safetensors.index.json, safetensors
// headers; tokenizer.json is depth-checked before the tokenizers library parses it), so a hostile file
// gives a short nnscope::Error instead of a stack overflow, a hang on a FIFO or an endless read of /dev/zero.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nnscope {

/// How deep arrays and objects may nest in any JSON file nnscope reads. Real checkpoint files nest a few
/// levels (a tokenizer.json about 6); 64 leaves room and keeps recursive code far from the stack's end.
constexpr int kJsonMaxDepth = 64;

/// Size limits of the files read whole into memory.
constexpr uint64_t kMiB = 1024ull * 1024ull;
constexpr uint64_t kConfigMaxBytes = 16 * kMiB;          ///< config.json, tokenizer_config.json, special_tokens_map.json
constexpr uint64_t kIndexMaxBytes = 64 * kMiB;           ///< model.safetensors.index.json
constexpr uint64_t kTokenizerJsonMaxBytes = 512 * kMiB;  ///< tokenizer.json
constexpr uint64_t kTokenizerModelMaxBytes = 64 * kMiB;  ///< tokenizer.model (SentencePiece)
constexpr uint64_t kSafetensorsHeaderMaxBytes = 100 * kMiB;  ///< the reference implementation's limit

/// Opens `path` for reading and checks that it is a regular file (a symlink to one is fine) of at most
/// `maxBytes` bytes (0: no limit). A FIFO, a socket, a device such as /dev/zero or a folder is refused
/// without reading from it (the open does not block on a FIFO). Returns the open descriptor (the caller
/// closes it) and its size in `size`. Throws nnscope::Error naming the file and the reason.
int openRegularFile(const std::string& path, uint64_t maxBytes, uint64_t& size);

/// Reads the regular file `path` whole (see openRegularFile for what is refused). Throws nnscope::Error.
std::string readRegularFile(const std::string& path, uint64_t maxBytes);

/// Throws nnscope::Error naming `file` when `text` nests arrays or objects deeper than `maxDepth`,
/// counting brackets outside strings. Cheap (one pass, no allocation); quotes nothing of the file.
void checkJsonDepth(std::string_view text, const std::string& file, int maxDepth = kJsonMaxDepth);

/// Options of parseJson.
struct JsonParseOptions {
    int maxDepth = kJsonMaxDepth;
    /// What a key of the top-level object is, for the duplicate-key message ("key", "tensor").
    std::string topLevelKeyNoun = "key";

    JsonParseOptions& withTopLevelKeyNoun(std::string noun) { topLevelKeyNoun = std::move(noun); return *this; }
};

/// Parses `text` (the contents of `file`) as one JSON document. Refused with nnscope::Error naming the
/// file: nesting deeper than the limit (checked before parsing), a syntax error (its line, column and
/// the parser's reason, never the bytes), and a key repeated in one object (JSON readers silently keep
/// one of the two, so the file is ambiguous).
nlohmann::json parseJson(std::string_view text, const std::string& file, const JsonParseOptions& options = {});

/// readRegularFile + parseJson, and the document must be an object. Throws nnscope::Error.
nlohmann::json readJsonObjectFile(const std::string& path, uint64_t maxBytes);

/// Like readJsonObjectFile, but nullopt when nothing exists at `path` (a dangling symlink is an error).
std::optional<nlohmann::json> readOptionalJsonObjectFile(const std::string& path, uint64_t maxBytes);

/// A JSON value as a short ASCII excerpt for a message: its JSON text, cut after `maxChars` characters
/// ("…" marks the cut), so a key holding a megabyte string does not flood the terminal.
std::string jsonExcerpt(const nlohmann::json& value, size_t maxChars = 40);

/// `text` (a name or a library's message that may come from a file) made safe to print: control bytes
/// become '?', and it is cut after `maxChars` bytes with "…".
std::string shortText(const std::string& text, size_t maxChars = 200);

}  // namespace nnscope
