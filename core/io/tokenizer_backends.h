// SPDX-License-Identifier: MIT
// Internal to core/tokenizer*.cpp: the two tokenizer back ends and what they share. Not a public header.
#pragma once
#include "core/io/tokenizer.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace nnscope::tokenizer_detail {

/// Takes ownership of an error message from the hf_tokenizers C interface (freed here); `fallback` when there is
/// none. Defined in tokenizer_hf.cpp; both back ends use it.
std::string takeError(char* message, const std::string& fallback);
/// Takes ownership of a byte buffer from the C interface (freed here) and returns its bytes.
std::string takeBytes(char* data, std::size_t len);

/// What the checkpoint's JSON files say about special tokens, before they are turned into ids.
/// Each field is unset when no file gives it.
struct SpecialTokenSettings {
    std::optional<std::string> bosToken, eosToken, unkToken, padToken;  ///< token strings
    std::optional<int64_t> bosIdFromConfig, eosIdFromConfig;  ///< config.json bos_token_id / eos_token_id
    std::optional<bool> addBosToken, addEosToken;             ///< tokenizer_config.json flags
    std::optional<bool> addPrefixSpace;  ///< tokenizer_config.json add_prefix_space
    /// tokenizer_config.json tokenizer_class, else config.json's (e.g. "GPT2Tokenizer", "Qwen2TokenizerFast")
    std::optional<std::string> tokenizerClass;
    std::optional<std::string> modelType;  ///< config.json model_type
    bool cleanUpTokenizationSpaces = false;  ///< tokenizer_config.json clean_up_tokenization_spaces
    /// tokenizer_config.json clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output
    bool cleanUpEvenForBpe = false;
};

/// Reads tokenizer_config.json, special_tokens_map.json and config.json in `dir` (each optional).
/// Throws nnscope::Error naming the file when one exists but is unreadable, not JSON, or has a key of
/// the wrong type.
SpecialTokenSettings readSpecialTokenSettings(const std::filesystem::path& dir);

/// The id of a special token: the token string looked up with `lookup` (which returns nullopt for a
/// string the vocabulary lacks), else the config.json id, else nullopt.
std::optional<int64_t> resolveSpecialId(
    const std::optional<std::string>& token, const std::optional<int64_t>& idFromConfig,
    const std::function<std::optional<int64_t>(const std::string&)>& lookup);

/// Loads a HuggingFace tokenizer.json (core/io/tokenizer_hf.cpp). Throws nnscope::Error naming the file.
std::unique_ptr<Tokenizer> loadHfTokenizer(const std::filesystem::path& file,
                                           const SpecialTokenSettings& settings);

/// Loads a SentencePiece tokenizer.model (core/io/tokenizer_sp.cpp). Throws nnscope::Error naming the file.
std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::filesystem::path& file,
                                                      const SpecialTokenSettings& settings);

/// Throws nnscope::Error when `text` is not valid UTF-8, saying at which byte.
void checkUtf8(const std::string& text);
/// The byte offset of the first byte of `text` that does not begin a valid UTF-8 sequence, or npos when it is all
/// valid (what checkUtf8 reports).
size_t firstInvalidUtf8(const std::string& text);

/// Whether decode() applies clean_up_tokenization, as transformers 5 decides: when the config asks for
/// it, except for a BPE model (where it would remove real spaces) unless the config insists.
bool decodeCleansUp(const SpecialTokenSettings& settings, bool bpeModel);

/// transformers' clean_up_tokenization: removes the space before . ? ! , and in contractions.
std::string cleanUpTokenizationSpaces(std::string text);

/// Makes a token's text readable on one line: spaces become "␣", newline "\n", tab "\t", CR "\r"
/// (backslash escapes), other control bytes and bytes that are not UTF-8 "<0xNN>", invisible
/// characters (other spaces, zero-width marks) "<U+200A>".

/// `detail` (a library's message) ended with exactly one period, for appending to a sentence.
std::string asSentenceEnd(std::string detail);
std::string escapeLabel(const std::string& text);

/// The bytes behind a GPT-2 byte-level token string ("Ġthe" -> " the"), or nullopt when a character
/// of `token` is not one of the 256 byte-level characters.
std::optional<std::string> byteLevelBytes(const std::string& token);

/// "<0xNN>" for each byte of `bytes` (upper-case hex, the SentencePiece spelling).
std::string hexBytes(const std::string& bytes);

}  // namespace nnscope::tokenizer_detail
