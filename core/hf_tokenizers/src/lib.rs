// SPDX-License-Identifier: MIT
//! A small C interface to HuggingFace `tokenizers` (for core/tokenizer_hf.cpp) and to SentencePiece
//! (for core/tokenizer_sp.cpp).
//!
//! The functions are declared in `hf_tokenizers.h` beside this crate; that header is the contract and
//! documents each function. Rules that hold for all of them:
//! - No panic crosses the C boundary: every body runs inside `catch_unwind`, and a panic becomes an
//!   error result with a message.
//! - Strings going in are pointer + length (UTF-8 is checked, NUL bytes are allowed); strings coming
//!   out are pointer + length buffers owned by this library, freed with `nns_hf_bytes_free`, except
//!   error messages, which are NUL-terminated and freed with `nns_hf_string_free`.
//! - Every out-pointer may be null, in which case that output is dropped.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::ptr;

use tokenizers::Tokenizer;

/// The opaque handle C sees as `NnsHfTokenizer`.
pub struct NnsHfTokenizer {
    inner: Tokenizer,
}

/// Turns `message` into a NUL-terminated C string owned by this library (interior NULs become spaces).
fn c_string(message: &str) -> *mut c_char {
    let cleaned: String = message
        .chars()
        .map(|c| if c == '\0' { ' ' } else { c })
        .collect();
    match CString::new(cleaned) {
        Ok(s) => s.into_raw(),
        Err(_) => ptr::null_mut(),
    }
}

/// `detail` (a library's message) with exactly one final period, to end a sentence with.
fn sentence_end(detail: impl std::fmt::Display) -> String {
    let text = detail.to_string();
    format!(
        "{}.",
        text.trim_end_matches(|c: char| c == '.' || c.is_whitespace())
    )
}

/// Stores `message` in `*error` when `error` is not null.
unsafe fn set_error(error: *mut *mut c_char, message: &str) {
    if !error.is_null() {
        *error = c_string(message);
    }
}

/// The text of a panic payload, for the error message.
fn panic_text(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Hands a byte buffer to C as pointer + length; freed by `nns_hf_bytes_free`.
unsafe fn give_bytes(bytes: Vec<u8>, data: *mut *mut c_char, len: *mut usize) {
    let boxed: Box<[u8]> = bytes.into_boxed_slice();
    let n = boxed.len();
    let p = Box::into_raw(boxed) as *mut u8 as *mut c_char;
    if !len.is_null() {
        *len = n;
    }
    if !data.is_null() {
        *data = p;
    } else {
        nns_hf_bytes_free(p, n);
    }
}

/// Hands an id buffer to C as pointer + length; freed by `nns_hf_ids_free`.
unsafe fn give_ids(v: Vec<u32>, ids: *mut *mut u32, ids_len: *mut usize) {
    let boxed = v.into_boxed_slice();
    let n = boxed.len();
    let p = Box::into_raw(boxed) as *mut u32;
    if !ids_len.is_null() {
        *ids_len = n;
    }
    if !ids.is_null() {
        *ids = p;
    } else {
        nns_hf_ids_free(p, n);
    }
}

/// Runs `body` so that no panic crosses the C boundary. `*error` is cleared first; `Err(message)` stores the
/// message, a panic stores "`failure`: <the panic's text>." Returns the value, or None after storing the error.
unsafe fn guarded<T>(
    error: *mut *mut c_char,
    failure: &str,
    body: impl FnOnce() -> Result<T, String>,
) -> Option<T> {
    if !error.is_null() {
        *error = ptr::null_mut();
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => Some(value),
        Ok(Err(message)) => {
            set_error(error, &message);
            None
        }
        Err(payload) => {
            set_error(
                error,
                &format!("{}: {}", failure, sentence_end(panic_text(&payload))),
            );
            None
        }
    }
}

/// The message for valid-UTF-8 input that is not.
fn utf8_error(e: std::str::Utf8Error) -> String {
    format!(
        "The text to encode is not valid UTF-8 (invalid byte at offset {}).",
        e.valid_up_to()
    )
}

/// A byte slice from a C pointer + length (an empty slice for a null pointer).
unsafe fn slice<'a, T>(data: *const T, len: usize) -> &'a [T] {
    if data.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(data, len)
    }
}

/// Loads the tokenizer.json at `path`; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_tokenizer_load(
    path: *const c_char,
    error: *mut *mut c_char,
) -> *mut NnsHfTokenizer {
    if path.is_null() {
        set_error(error, "No tokenizer.json path was given (null pointer).");
        return ptr::null_mut();
    }
    let loaded = guarded(
        error,
        "Loading the tokenizer file failed inside the tokenizers library",
        || {
            use std::os::unix::ffi::OsStrExt;
            let bytes = CStr::from_ptr(path).to_bytes();
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
            let shown = path.display().to_string();
            let content = std::fs::read(&path).map_err(|e| {
                format!(
                    "The tokenizer file {} could not be read: {}",
                    shown,
                    sentence_end(e)
                )
            })?;
            let inner = Tokenizer::from_bytes(&content).map_err(|e| {
                format!(
                    "The tokenizer file {} is not a valid HuggingFace tokenizer.json: {}",
                    shown,
                    sentence_end(e)
                )
            })?;
            Ok(NnsHfTokenizer { inner })
        },
    );
    loaded.map_or(ptr::null_mut(), |t| Box::into_raw(Box::new(t)))
}

/// Replaces parts of a loaded tokenizer's pipeline; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_tokenizer_replace_pipeline(
    tokenizer: *mut NnsHfTokenizer,
    parts: *const c_char,
    parts_len: usize,
    error: *mut *mut c_char,
) -> c_int {
    if tokenizer.is_null() {
        set_error(
            error,
            "nns_hf_tokenizer_replace_pipeline was called without a tokenizer (null pointer).",
        );
        return -1;
    }
    let done = guarded(
        error,
        "Replacing the tokenizer's pipeline failed inside the tokenizers library",
        || {
            use tokenizers::models::ModelWrapper;
            use tokenizers::{DecoderWrapper, NormalizerWrapper, PreTokenizerWrapper};
            let text = std::str::from_utf8(slice(parts as *const u8, parts_len))
                .map_err(|_| "The pipeline description is not valid UTF-8.".to_string())?;
            let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                format!("The pipeline description is not JSON: {}", sentence_end(e))
            })?;
            let parts = value
                .as_object()
                .ok_or_else(|| "The pipeline description is not a JSON object.".to_string())?;
            let invalid = |what: &str, e: serde_json::Error| {
                format!("The replacement {} is not valid: {}", what, sentence_end(e))
            };
            let t = &mut (*tokenizer).inner;
            for (key, part) in parts {
                match key.as_str() {
                    "normalizer" => {
                        let n: Option<NormalizerWrapper> = serde_json::from_value(part.clone())
                            .map_err(|e| invalid("normalizer", e))?;
                        t.with_normalizer(n).map_err(|e| {
                            format!("The replacement normalizer failed: {}", sentence_end(e))
                        })?;
                    }
                    "pre_tokenizer" => {
                        let p: Option<PreTokenizerWrapper> = serde_json::from_value(part.clone())
                            .map_err(|e| invalid("pre_tokenizer", e))?;
                        t.with_pre_tokenizer(p);
                    }
                    "decoder" => {
                        let d: Option<DecoderWrapper> = serde_json::from_value(part.clone())
                            .map_err(|e| invalid("decoder", e))?;
                        t.with_decoder(d);
                    }
                    "bpe" => {
                        let mut model = t.get_model().clone();
                        let ModelWrapper::BPE(bpe) = &mut model else {
                            return Err("BPE options were given for a model that is not BPE.".to_string());
                        };
                        let options = part
                            .as_object()
                            .ok_or_else(|| "The BPE options are not a JSON object.".to_string())?;
                        for (option, v) in options {
                            let text_or_null = || match v {
                                serde_json::Value::Null => Ok(None),
                                serde_json::Value::String(s) => Ok(Some(s.clone())),
                                _ => Err(format!("The BPE option {} should be a string or null.", option)),
                            };
                            let flag = || {
                                v.as_bool()
                                    .ok_or_else(|| format!("The BPE option {} should be true or false.", option))
                            };
                            match option.as_str() {
                                "unk_token" => bpe.unk_token = text_or_null()?,
                                "continuing_subword_prefix" => bpe.continuing_subword_prefix = text_or_null()?,
                                "end_of_word_suffix" => bpe.end_of_word_suffix = text_or_null()?,
                                "fuse_unk" => bpe.fuse_unk = flag()?,
                                "byte_fallback" => bpe.byte_fallback = flag()?,
                                "ignore_merges" => bpe.ignore_merges = flag()?,
                                "dropout" if v.is_null() => bpe.dropout = None,
                                _ => return Err(format!("The BPE option {} cannot be replaced.", option)),
                            }
                        }
                        t.with_model(model);
                    }
                    _ => return Err(format!("The pipeline has no part named {}.", key)),
                }
            }
            Ok(())
        },
    );
    if done.is_some() {
        0
    } else {
        -1
    }
}

/// Frees a tokenizer from `nns_hf_tokenizer_load` (null is allowed).
#[no_mangle]
pub unsafe extern "C" fn nns_hf_tokenizer_free(tokenizer: *mut NnsHfTokenizer) {
    if !tokenizer.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(tokenizer))));
    }
}

/// Frees an error message (null is allowed).
#[no_mangle]
pub unsafe extern "C" fn nns_hf_string_free(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}

/// Frees a byte buffer given out with its length (null is allowed).
#[no_mangle]
pub unsafe extern "C" fn nns_hf_bytes_free(data: *mut c_char, len: usize) {
    if !data.is_null() {
        drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
            data as *mut u8,
            len,
        )));
    }
}

/// Frees an id array given out with its length (null is allowed).
#[no_mangle]
pub unsafe extern "C" fn nns_hf_ids_free(ids: *mut u32, len: usize) {
    if !ids.is_null() {
        drop(Box::from_raw(ptr::slice_from_raw_parts_mut(ids, len)));
    }
}

/// Encodes UTF-8 text; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_encode(
    tokenizer: *const NnsHfTokenizer,
    text: *const c_char,
    text_len: usize,
    add_special_tokens: c_int,
    ids: *mut *mut u32,
    ids_len: *mut usize,
    error: *mut *mut c_char,
) -> c_int {
    if tokenizer.is_null() {
        set_error(
            error,
            "nns_hf_encode was called without a tokenizer (null pointer).",
        );
        return -1;
    }
    let encoded = guarded(error, "Encoding failed inside the tokenizers library", || {
        let text = std::str::from_utf8(slice(text as *const u8, text_len)).map_err(utf8_error)?;
        let encoding = (*tokenizer)
            .inner
            .encode_fast(text, add_special_tokens != 0)
            .map_err(|e| {
                format!(
                    "The tokenizer could not encode the text: {}",
                    sentence_end(e)
                )
            })?;
        Ok(encoding.get_ids().to_vec())
    });
    match encoded {
        Some(v) => {
            give_ids(v, ids, ids_len);
            0
        }
        None => -1,
    }
}

/// Decodes ids to UTF-8 text; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_decode(
    tokenizer: *const NnsHfTokenizer,
    ids: *const u32,
    ids_len: usize,
    skip_special_tokens: c_int,
    text: *mut *mut c_char,
    text_len: *mut usize,
    error: *mut *mut c_char,
) -> c_int {
    if tokenizer.is_null() {
        set_error(
            error,
            "nns_hf_decode was called without a tokenizer (null pointer).",
        );
        return -1;
    }
    let decoded = guarded(error, "Decoding failed inside the tokenizers library", || {
        (*tokenizer)
            .inner
            .decode(slice(ids, ids_len), skip_special_tokens != 0)
            .map_err(|e| {
                format!(
                    "The tokenizer could not decode the ids: {}",
                    sentence_end(e)
                )
            })
    });
    match decoded {
        Some(s) => {
            give_bytes(s.into_bytes(), text, text_len);
            0
        }
        None => -1,
    }
}

/// The vocabulary's string for `id`; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_id_to_token(
    tokenizer: *const NnsHfTokenizer,
    id: u32,
    token: *mut *mut c_char,
    token_len: *mut usize,
) -> c_int {
    if tokenizer.is_null() {
        return -1;
    }
    let result = catch_unwind(AssertUnwindSafe(|| (*tokenizer).inner.id_to_token(id)));
    match result {
        Ok(Some(s)) => {
            give_bytes(s.into_bytes(), token, token_len);
            1
        }
        Ok(None) => 0,
        Err(_) => -1,
    }
}

/// The id of a vocabulary string; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_token_to_id(
    tokenizer: *const NnsHfTokenizer,
    token: *const c_char,
    token_len: usize,
    id: *mut u32,
) -> c_int {
    if tokenizer.is_null() {
        return -1;
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        let bytes = slice(token as *const u8, token_len);
        match std::str::from_utf8(bytes) {
            Ok(s) => (*tokenizer).inner.token_to_id(s),
            Err(_) => None,
        }
    }));
    match result {
        Ok(Some(found)) => {
            if !id.is_null() {
                *id = found;
            }
            1
        }
        Ok(None) => 0,
        Err(_) => -1,
    }
}

/// Number of ids, added tokens included; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_vocab_size(tokenizer: *const NnsHfTokenizer) -> usize {
    if tokenizer.is_null() {
        return 0;
    }
    catch_unwind(AssertUnwindSafe(|| {
        let t = &(*tokenizer).inner;
        // Added tokens may sit past the model's vocabulary with gaps; count up to the highest id.
        let highest_added = t
            .get_added_tokens_decoder()
            .keys()
            .map(|&id| id as usize + 1)
            .max()
            .unwrap_or(0);
        t.get_vocab_size(true).max(highest_added)
    }))
    .unwrap_or(0)
}

/// The model type of the tokenizer ("BPE", "WordPiece", "WordLevel", "Unigram"); see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_hf_model_type(tokenizer: *const NnsHfTokenizer) -> *const c_char {
    use tokenizers::models::ModelWrapper;
    let name: &'static [u8] = if tokenizer.is_null() {
        b"\0"
    } else {
        match catch_unwind(AssertUnwindSafe(|| match (*tokenizer).inner.get_model() {
            ModelWrapper::BPE(_) => &b"BPE\0"[..],
            ModelWrapper::WordPiece(_) => &b"WordPiece\0"[..],
            ModelWrapper::WordLevel(_) => &b"WordLevel\0"[..],
            ModelWrapper::Unigram(_) => &b"Unigram\0"[..],
        })) {
            Ok(n) => n,
            Err(_) => b"\0",
        }
    };
    name.as_ptr() as *const c_char
}

// ---------------------------------------------------------------------------------------------------
// SentencePiece (tokenizer.model)
// ---------------------------------------------------------------------------------------------------

use sentencepiece::SentencePieceProcessor;

/// The opaque handle C sees as `NnsSpModel`.
pub struct NnsSpModel {
    inner: SentencePieceProcessor,
}

/// Loads a SentencePiece model from its serialized bytes; see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_sp_load(
    data: *const c_char,
    len: usize,
    error: *mut *mut c_char,
) -> *mut NnsSpModel {
    let loaded = guarded(error, "Loading the model failed inside SentencePiece", || {
        SentencePieceProcessor::from_serialized_proto(slice(data as *const u8, len))
            .map_err(sentence_end)
    });
    loaded.map_or(ptr::null_mut(), |inner| Box::into_raw(Box::new(NnsSpModel { inner })))
}

/// Frees a model from `nns_sp_load` (null is allowed).
#[no_mangle]
pub unsafe extern "C" fn nns_sp_free(model: *mut NnsSpModel) {
    if !model.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(model))));
    }
}

/// Number of pieces (ids) of the model; 0 for null.
#[no_mangle]
pub unsafe extern "C" fn nns_sp_piece_count(model: *const NnsSpModel) -> usize {
    if model.is_null() {
        return 0;
    }
    catch_unwind(AssertUnwindSafe(|| (*model).inner.len())).unwrap_or(0)
}

/// The model's unk, bos, eos and pad ids (-1 where it has none); see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_sp_special_ids(
    model: *const NnsSpModel,
    unk: *mut i64,
    bos: *mut i64,
    eos: *mut i64,
    pad: *mut i64,
) {
    let ids = if model.is_null() {
        None
    } else {
        catch_unwind(AssertUnwindSafe(|| {
            let m = &(*model).inner;
            let opt = |id: Option<u32>| id.map(i64::from).unwrap_or(-1);
            (
                i64::from(m.unk_id()),
                opt(m.bos_id()),
                opt(m.eos_id()),
                opt(m.pad_id()),
            )
        }))
        .ok()
    };
    let (u, b, e, p) = ids.unwrap_or((-1, -1, -1, -1));
    for (out, value) in [(unk, u), (bos, b), (eos, e), (pad, p)] {
        if !out.is_null() {
            *out = value;
        }
    }
}

/// Encodes UTF-8 text into piece ids (no BOS/EOS); see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_sp_encode(
    model: *const NnsSpModel,
    text: *const c_char,
    text_len: usize,
    ids: *mut *mut u32,
    ids_len: *mut usize,
    error: *mut *mut c_char,
) -> c_int {
    if model.is_null() {
        set_error(
            error,
            "nns_sp_encode was called without a model (null pointer).",
        );
        return -1;
    }
    let encoded = guarded(error, "Encoding failed inside SentencePiece", || {
        let text = std::str::from_utf8(slice(text as *const u8, text_len)).map_err(utf8_error)?;
        let pieces = (*model).inner.encode(text).map_err(|e| {
            format!(
                "SentencePiece could not encode the text: {}",
                sentence_end(e)
            )
        })?;
        Ok(pieces.iter().map(|p| p.id).collect())
    });
    match encoded {
        Some(v) => {
            give_ids(v, ids, ids_len);
            0
        }
        None => -1,
    }
}

/// Decodes piece ids into UTF-8 text (SentencePiece's own decode); see hf_tokenizers.h.
#[no_mangle]
pub unsafe extern "C" fn nns_sp_decode(
    model: *const NnsSpModel,
    ids: *const u32,
    ids_len: usize,
    text: *mut *mut c_char,
    text_len: *mut usize,
    error: *mut *mut c_char,
) -> c_int {
    if model.is_null() {
        set_error(
            error,
            "nns_sp_decode was called without a model (null pointer).",
        );
        return -1;
    }
    let decoded = guarded(error, "Decoding failed inside SentencePiece", || {
        (*model)
            .inner
            .decode_piece_ids(slice(ids, ids_len))
            .map_err(|e| {
                format!(
                    "SentencePiece could not decode the ids: {}",
                    sentence_end(e)
                )
            })
    });
    match decoded {
        Some(s) => {
            give_bytes(s.into_bytes(), text, text_len);
            0
        }
        None => -1,
    }
}
