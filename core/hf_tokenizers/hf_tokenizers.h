/* SPDX-License-Identifier: MIT */
/* C interface of the Rust crate nnscope_hf_tokenizers (src/lib.rs), a thin wrapper around HuggingFace
 * `tokenizers` (tokenizer.json files: nns_hf_*) and SentencePiece 0.2.1 built from source
 * (tokenizer.model files: nns_sp_*). Used by core/io/tokenizer_hf.cpp and core/io/tokenizer_sp.cpp; nothing
 * else should call it directly.
 *
 * Conventions:
 * - Text going in is pointer + length, UTF-8 (checked; NUL bytes allowed).
 * - Text coming out is pointer + length, owned by the library: free it with nns_hf_bytes_free.
 * - Error messages are NUL-terminated full sentences: free them with nns_hf_string_free.
 * - Out-pointers may be NULL (that output is dropped).
 * - No function panics or unwinds into C; a failure inside the library becomes an error result.
 * - A tokenizer may be used from several threads at once (encode/decode do not mutate it).
 */
#ifndef NNSCOPE_HF_TOKENIZERS_H
#define NNSCOPE_HF_TOKENIZERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque loaded tokenizer. */
typedef struct NnsHfTokenizer NnsHfTokenizer;

/** Loads the tokenizer.json file at `path` (NUL-terminated).
 *  Returns the tokenizer (free with nns_hf_tokenizer_free), or NULL with `*error` set to a message that
 *  names the file and says what is wrong (unreadable, not JSON, not a tokenizer). */
NnsHfTokenizer* nns_hf_tokenizer_load(const char* path, char** error);

/** Replaces parts of the pipeline of a tokenizer just loaded, before it is used (not thread-safe: no other call may
 *  use the tokenizer meanwhile). `parts` (`parts_len` bytes) is a JSON object whose keys are among "normalizer",
 *  "pre_tokenizer", "decoder" (each a tokenizer.json component, or null for none) and "bpe" (an object of BPE options
 *  to set: "unk_token", "continuing_subword_prefix", "end_of_word_suffix" (a string or null), "fuse_unk",
 *  "byte_fallback", "ignore_merges" (true or false), "dropout" (null only)). The vocabulary, merges, added tokens and
 *  post-processor stay. Returns 0, or -1 with `*error` set (bad JSON, an unknown key, BPE options for another model);
 *  on an error the parts already replaced stay replaced. */
int nns_hf_tokenizer_replace_pipeline(NnsHfTokenizer* tokenizer, const char* parts, size_t parts_len, char** error);

/** Frees a tokenizer; NULL is allowed. */
void nns_hf_tokenizer_free(NnsHfTokenizer* tokenizer);

/** Encodes `text` (`text_len` bytes of UTF-8). With `add_special_tokens` non-zero, the tokenizer's
 *  post_processor adds its special tokens (BOS ...). Returns 0 and sets `*ids` / `*ids_len` (free with
 *  nns_hf_ids_free), or returns -1 with `*error` set (invalid UTF-8, failure inside the library). */
int nns_hf_encode(const NnsHfTokenizer* tokenizer, const char* text, size_t text_len,
                  int add_special_tokens, uint32_t** ids, size_t* ids_len, char** error);

/** Decodes `ids` to UTF-8 text, skipping special tokens when `skip_special_tokens` is non-zero; unknown
 *  ids are left out. Returns 0 and sets `*text` / `*text_len` (free with nns_hf_bytes_free), or -1 with
 *  `*error` set. */
int nns_hf_decode(const NnsHfTokenizer* tokenizer, const uint32_t* ids, size_t ids_len,
                  int skip_special_tokens, char** text, size_t* text_len, char** error);

/** The vocabulary's string for `id` (e.g. "Ġthe"). Returns 1 and sets `*token` / `*token_len` (free
 *  with nns_hf_bytes_free), 0 when no token has that id, -1 on a failure inside the library. */
int nns_hf_id_to_token(const NnsHfTokenizer* tokenizer, uint32_t id, char** token, size_t* token_len);

/** The id of the vocabulary string `token` (`token_len` bytes, added tokens included). Returns 1 and sets
 *  `*id`, 0 when the string is not in the vocabulary, -1 on a failure inside the library. */
int nns_hf_token_to_id(const NnsHfTokenizer* tokenizer, const char* token, size_t token_len,
                       uint32_t* id);

/** Number of ids the tokenizer knows, added tokens included (at least the highest added id + 1);
 *  0 for a NULL tokenizer. */
size_t nns_hf_vocab_size(const NnsHfTokenizer* tokenizer);

/** The tokenizer's model type: "BPE", "WordPiece", "WordLevel" or "Unigram" ("" for a NULL tokenizer).
 *  The string is static: do not free it. */
const char* nns_hf_model_type(const NnsHfTokenizer* tokenizer);

/* ---- SentencePiece ------------------------------------------------------------------------------ */

/** An opaque loaded SentencePiece model. */
typedef struct NnsSpModel NnsSpModel;

/** Loads a SentencePiece model from the `len` bytes of a tokenizer.model file.
 *  Returns the model (free with nns_sp_free), or NULL with `*error` set to what SentencePiece reported
 *  (the caller adds the file name). */
NnsSpModel* nns_sp_load(const char* data, size_t len, char** error);

/** Frees a model; NULL is allowed. */
void nns_sp_free(NnsSpModel* model);

/** Number of pieces (ids 0 .. count-1); 0 for a NULL model. */
size_t nns_sp_piece_count(const NnsSpModel* model);

/** The model's own unk, bos, eos and pad ids, -1 where it has none (any pointer may be NULL). */
void nns_sp_special_ids(const NnsSpModel* model, int64_t* unk, int64_t* bos, int64_t* eos, int64_t* pad);

/** Encodes `text` (`text_len` bytes of UTF-8) into piece ids, without BOS/EOS (python's sp.encode).
 *  Returns 0 and sets `*ids` / `*ids_len` (free with nns_hf_ids_free), or -1 with `*error` set. */
int nns_sp_encode(const NnsSpModel* model, const char* text, size_t text_len, uint32_t** ids,
                  size_t* ids_len, char** error);

/** Decodes piece ids with SentencePiece's own decoder (control pieces give nothing). Ids must be below
 *  nns_sp_piece_count. Returns 0 and sets `*text` / `*text_len` (free with nns_hf_bytes_free), or -1
 *  with `*error` set. */
int nns_sp_decode(const NnsSpModel* model, const uint32_t* ids, size_t ids_len, char** text,
                  size_t* text_len, char** error);

/* ---- memory ------------------------------------------------------------------------------------- */

/** Frees an error message; NULL is allowed. */
void nns_hf_string_free(char* message);

/** Frees a text buffer returned with its length; NULL is allowed. */
void nns_hf_bytes_free(char* data, size_t len);

/** Frees an id array returned with its length; NULL is allowed. */
void nns_hf_ids_free(uint32_t* ids, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* NNSCOPE_HF_TOKENIZERS_H */
