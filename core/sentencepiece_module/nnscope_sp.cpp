// SPDX-License-Identifier: MIT
#include "nnscope_sp.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

struct nnscope_sp {
    sentencepiece::SentencePieceProcessor processor;
};

namespace {
void writeError(char* err, size_t errLen, const std::string& message) {
    if (!err || errLen == 0) return;
    std::strncpy(err, message.c_str(), errLen - 1);
    err[errLen - 1] = 0;
}
}  // namespace

extern "C" {

nnscope_sp* nnscope_sp_load(const char* bytes, size_t len, char* err, size_t errLen) {
    try {
        auto* sp = new nnscope_sp();
        const auto status = sp->processor.LoadFromSerializedProto(std::string(bytes, len));
        if (!status.ok()) {
            writeError(err, errLen, status.ToString());
            delete sp;
            return nullptr;
        }
        return sp;
    } catch (const std::exception& e) {
        writeError(err, errLen, e.what());
        return nullptr;
    }
}

void nnscope_sp_free(nnscope_sp* sp) { delete sp; }
int nnscope_sp_piece_size(const nnscope_sp* sp) { return sp->processor.GetPieceSize(); }
int nnscope_sp_bos_id(const nnscope_sp* sp) { return sp->processor.bos_id(); }
int nnscope_sp_eos_id(const nnscope_sp* sp) { return sp->processor.eos_id(); }
int nnscope_sp_unk_id(const nnscope_sp* sp) { return sp->processor.unk_id(); }
int nnscope_sp_pad_id(const nnscope_sp* sp) { return sp->processor.pad_id(); }

int nnscope_sp_piece_to_id(const nnscope_sp* sp, const char* piece, size_t len) {
    return sp->processor.PieceToId(std::string(piece, len));
}

const char* nnscope_sp_id_to_piece(const nnscope_sp* sp, int id, size_t* len) {
    const std::string& piece = sp->processor.IdToPiece(id);
    if (len) *len = piece.size();
    return piece.c_str();
}

int nnscope_sp_is_control(const nnscope_sp* sp, int id) { return sp->processor.IsControl(id) ? 1 : 0; }
int nnscope_sp_is_byte(const nnscope_sp* sp, int id) { return sp->processor.IsByte(id) ? 1 : 0; }
int nnscope_sp_is_unknown(const nnscope_sp* sp, int id) { return sp->processor.IsUnknown(id) ? 1 : 0; }

int nnscope_sp_encode(const nnscope_sp* sp, const char* text, size_t len, int** ids, size_t* n, char* err, size_t errLen) {
    try {
        std::vector<int> out;
        const auto status = sp->processor.Encode(std::string(text, len), &out);
        if (!status.ok()) {
            writeError(err, errLen, status.ToString());
            return -1;
        }
        *n = out.size();
        *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.empty() ? 1 : out.size())));
        if (!*ids) return -1;
        if (!out.empty()) std::memcpy(*ids, out.data(), sizeof(int) * out.size());
        return 0;
    } catch (const std::exception& e) {
        writeError(err, errLen, e.what());
        return -1;
    }
}

char* nnscope_sp_decode(const nnscope_sp* sp, const int* ids, size_t n, size_t* len, char* err, size_t errLen) {
    try {
        std::string text;
        const auto status = sp->processor.Decode(std::vector<int>(ids, ids + n), &text);
        if (!status.ok()) {
            writeError(err, errLen, status.ToString());
            return nullptr;
        }
        char* out = static_cast<char*>(std::malloc(text.size() + 1));
        if (!out) return nullptr;
        std::memcpy(out, text.data(), text.size());
        out[text.size()] = 0;
        if (len) *len = text.size();
        return out;
    } catch (const std::exception& e) {
        writeError(err, errLen, e.what());
        return nullptr;
    }
}

void nnscope_sp_free_buffer(void* p) { std::free(p); }

}  // extern "C"
