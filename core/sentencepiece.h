// SPDX-License-Identifier: MIT
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace nnscope {

/// SentencePiece, reached through the run-time module libnnscope_sp (core/sentencepiece_module/nnscope_sp.h
/// says why it is a module). Mirrors the few calls of sentencepiece::SentencePieceProcessor nnscope uses.
class SentencePieceProcessor {
public:
    /// Loads a serialized ModelProto (the bytes of tokenizer.model). Throws nnscope::Error naming `file`
    /// when the module cannot be found or the model is invalid.
    SentencePieceProcessor(const std::string& bytes, const std::string& file);
    ~SentencePieceProcessor();
    SentencePieceProcessor(const SentencePieceProcessor&) = delete;
    SentencePieceProcessor& operator=(const SentencePieceProcessor&) = delete;

    int GetPieceSize() const;
    int bos_id() const;
    int eos_id() const;
    int unk_id() const;
    int pad_id() const;
    int PieceToId(const std::string& piece) const;
    std::string IdToPiece(int id) const;
    bool IsControl(int id) const;
    bool IsByte(int id) const;
    bool IsUnknown(int id) const;
    /// Ids of `text`. Throws nnscope::Error.
    std::vector<int> Encode(const std::string& text) const;
    /// Text of `ids`. Throws nnscope::Error.
    std::string Decode(const std::vector<int>& ids) const;

    /// Where the module was found (for messages); throws nnscope::Error when it cannot be loaded.
    static std::string modulePath();

    struct Api;  ///< the module's entry points (resolved once)

private:
    const Api* api_;
    void* handle_ = nullptr;
    std::string file_;
};

}  // namespace nnscope
