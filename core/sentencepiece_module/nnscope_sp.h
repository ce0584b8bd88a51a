/* SPDX-License-Identifier: MIT
 *
 * A C interface to SentencePiece, built as its own shared module (libnnscope_sp.so) and opened with
 * dlopen(RTLD_LOCAL | RTLD_DEEPBIND) by core/sentencepiece.cpp.
 *
 * Why a module: Debian's libsentencepiece embeds its own protobuf-lite (3.14) and exports those symbols,
 * while libtorch needs the system libprotobuf (3.21). Linked into one program the two copies interpose on
 * each other and the process crashes before main(). Loaded locally with deep binding, SentencePiece keeps its
 * own protobuf and libtorch keeps the system one. Only plain C types cross this boundary.
 */
#ifndef NNSCOPE_SP_H
#define NNSCOPE_SP_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nnscope_sp nnscope_sp;

/* Loads a serialized ModelProto; on failure returns NULL and writes a message into err. */
nnscope_sp* nnscope_sp_load(const char* bytes, size_t len, char* err, size_t err_len);
void nnscope_sp_free(nnscope_sp* sp);
int nnscope_sp_piece_size(const nnscope_sp* sp);
int nnscope_sp_bos_id(const nnscope_sp* sp);
int nnscope_sp_eos_id(const nnscope_sp* sp);
int nnscope_sp_unk_id(const nnscope_sp* sp);
int nnscope_sp_pad_id(const nnscope_sp* sp);
int nnscope_sp_piece_to_id(const nnscope_sp* sp, const char* piece, size_t len);
/* The piece of id, valid while sp lives; *len receives its length. */
const char* nnscope_sp_id_to_piece(const nnscope_sp* sp, int id, size_t* len);
int nnscope_sp_is_control(const nnscope_sp* sp, int id);
int nnscope_sp_is_byte(const nnscope_sp* sp, int id);
int nnscope_sp_is_unknown(const nnscope_sp* sp, int id);
/* Encodes text into ids; returns 0 and a malloc'ed array in *ids (free with nnscope_sp_free_buffer),
 * or -1 with a message in err. */
int nnscope_sp_encode(const nnscope_sp* sp, const char* text, size_t len, int** ids, size_t* n, char* err, size_t err_len);
/* Decodes ids into malloc'ed UTF-8 text (free with nnscope_sp_free_buffer); NULL with a message on failure. */
char* nnscope_sp_decode(const nnscope_sp* sp, const int* ids, size_t n, size_t* len, char* err, size_t err_len);
void nnscope_sp_free_buffer(void* p);

#ifdef __cplusplus
}
#endif
#endif
