// SPDX-License-Identifier: MIT
#include "sentencepiece.h"

#include "error.h"
#include "sentencepiece_module/nnscope_sp.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace fs = std::filesystem;

namespace nnscope {

struct SentencePieceProcessor::Api {
    decltype(&nnscope_sp_load) load;
    decltype(&nnscope_sp_free) free;
    decltype(&nnscope_sp_piece_size) pieceSize;
    decltype(&nnscope_sp_bos_id) bos;
    decltype(&nnscope_sp_eos_id) eos;
    decltype(&nnscope_sp_unk_id) unk;
    decltype(&nnscope_sp_pad_id) pad;
    decltype(&nnscope_sp_piece_to_id) pieceToId;
    decltype(&nnscope_sp_id_to_piece) idToPiece;
    decltype(&nnscope_sp_is_control) isControl;
    decltype(&nnscope_sp_is_byte) isByte;
    decltype(&nnscope_sp_is_unknown) isUnknown;
    decltype(&nnscope_sp_encode) encode;
    decltype(&nnscope_sp_decode) decode;
    decltype(&nnscope_sp_free_buffer) freeBuffer;
    std::string path;
    std::string error;
};

namespace {

std::vector<fs::path> candidates() {
    std::vector<fs::path> out;
    if (const char* env = std::getenv("NNSCOPE_SP_MODULE")) out.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path dir = exe.parent_path();
        out.push_back(dir / "lib" / "libnnscope_sp.so");
        out.push_back(dir / ".." / "lib" / "libnnscope_sp.so");
        out.push_back(dir / ".." / "lib" / "nnscope" / "libnnscope_sp.so");
        out.push_back(dir / ".." / ".." / "lib" / "libnnscope_sp.so");
    }
#ifdef NNSCOPE_SP_MODULE_BUILD_PATH
    out.emplace_back(NNSCOPE_SP_MODULE_BUILD_PATH);
#endif
#ifdef NNSCOPE_SP_MODULE_INSTALL_PATH
    out.emplace_back(NNSCOPE_SP_MODULE_INSTALL_PATH);
#endif
    return out;
}

}  // namespace

static const SentencePieceProcessor::Api& api() {
    static SentencePieceProcessor::Api a;
    static std::once_flag once;
    std::call_once(once, [] {
        std::string tried;
        for (const auto& p : candidates()) {
            std::error_code ec;
            if (!fs::exists(p, ec)) {
                tried += "\n  " + p.string() + " (absent)";
                continue;
            }
            // Local and deep-bound: SentencePiece's embedded protobuf must not meet libtorch's.
            void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
            if (!h) {
                tried += "\n  " + p.string() + " (" + dlerror() + ")";
                continue;
            }
            auto sym = [&](const char* name) {
                void* s = dlsym(h, name);
                if (!s) throw Error(p.string() + ": the SentencePiece module lacks the symbol " + name + ".");
                return s;
            };
            try {
                a.load = reinterpret_cast<decltype(a.load)>(sym("nnscope_sp_load"));
                a.free = reinterpret_cast<decltype(a.free)>(sym("nnscope_sp_free"));
                a.pieceSize = reinterpret_cast<decltype(a.pieceSize)>(sym("nnscope_sp_piece_size"));
                a.bos = reinterpret_cast<decltype(a.bos)>(sym("nnscope_sp_bos_id"));
                a.eos = reinterpret_cast<decltype(a.eos)>(sym("nnscope_sp_eos_id"));
                a.unk = reinterpret_cast<decltype(a.unk)>(sym("nnscope_sp_unk_id"));
                a.pad = reinterpret_cast<decltype(a.pad)>(sym("nnscope_sp_pad_id"));
                a.pieceToId = reinterpret_cast<decltype(a.pieceToId)>(sym("nnscope_sp_piece_to_id"));
                a.idToPiece = reinterpret_cast<decltype(a.idToPiece)>(sym("nnscope_sp_id_to_piece"));
                a.isControl = reinterpret_cast<decltype(a.isControl)>(sym("nnscope_sp_is_control"));
                a.isByte = reinterpret_cast<decltype(a.isByte)>(sym("nnscope_sp_is_byte"));
                a.isUnknown = reinterpret_cast<decltype(a.isUnknown)>(sym("nnscope_sp_is_unknown"));
                a.encode = reinterpret_cast<decltype(a.encode)>(sym("nnscope_sp_encode"));
                a.decode = reinterpret_cast<decltype(a.decode)>(sym("nnscope_sp_decode"));
                a.freeBuffer = reinterpret_cast<decltype(a.freeBuffer)>(sym("nnscope_sp_free_buffer"));
            } catch (const Error& e) {
                a.error = e.what();
                return;
            }
            a.path = p.string();
            return;
        }
        a.error = "the SentencePiece module libnnscope_sp.so was not found (set NNSCOPE_SP_MODULE to its path); tried:" + tried;
    });
    return a;
}

std::string SentencePieceProcessor::modulePath() {
    const Api& a = api();
    if (a.path.empty()) throw Error(a.error);
    return a.path;
}

SentencePieceProcessor::SentencePieceProcessor(const std::string& bytes, const std::string& file) : api_(&api()), file_(file) {
    if (api_->path.empty()) throw Error(file + ": cannot read a SentencePiece model: " + api_->error);
    char err[512] = {0};
    handle_ = api_->load(bytes.data(), bytes.size(), err, sizeof err);
    if (!handle_) throw Error(file + ": not a valid SentencePiece model (" + std::string(err) + ").");
}

SentencePieceProcessor::~SentencePieceProcessor() {
    if (handle_) api_->free(static_cast<nnscope_sp*>(handle_));
}

#define SP static_cast<const nnscope_sp*>(handle_)
int SentencePieceProcessor::GetPieceSize() const { return api_->pieceSize(SP); }
int SentencePieceProcessor::bos_id() const { return api_->bos(SP); }
int SentencePieceProcessor::eos_id() const { return api_->eos(SP); }
int SentencePieceProcessor::unk_id() const { return api_->unk(SP); }
int SentencePieceProcessor::pad_id() const { return api_->pad(SP); }
int SentencePieceProcessor::PieceToId(const std::string& piece) const { return api_->pieceToId(SP, piece.data(), piece.size()); }
std::string SentencePieceProcessor::IdToPiece(int id) const {
    size_t len = 0;
    const char* p = api_->idToPiece(SP, id, &len);
    return std::string(p, len);
}
bool SentencePieceProcessor::IsControl(int id) const { return api_->isControl(SP, id) != 0; }
bool SentencePieceProcessor::IsByte(int id) const { return api_->isByte(SP, id) != 0; }
bool SentencePieceProcessor::IsUnknown(int id) const { return api_->isUnknown(SP, id) != 0; }

std::vector<int> SentencePieceProcessor::Encode(const std::string& text) const {
    int* ids = nullptr;
    size_t n = 0;
    char err[512] = {0};
    if (api_->encode(SP, text.data(), text.size(), &ids, &n, err, sizeof err) != 0)
        throw Error(file_ + ": SentencePiece could not encode the text (" + std::string(err) + ").");
    std::vector<int> out(ids, ids + n);
    api_->freeBuffer(ids);
    return out;
}

std::string SentencePieceProcessor::Decode(const std::vector<int>& ids) const {
    size_t len = 0;
    char err[512] = {0};
    char* text = api_->decode(SP, ids.data(), ids.size(), &len, err, sizeof err);
    if (!text) throw Error(file_ + ": SentencePiece could not decode the ids (" + std::string(err) + ").");
    std::string out(text, len);
    api_->freeBuffer(text);
    return out;
}
#undef SP

}  // namespace nnscope
