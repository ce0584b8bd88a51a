// SPDX-License-Identifier: MIT
// The tokenizer.model back end: SentencePiece, behaving as transformers' slow LlamaTokenizer with
// legacy=true: the ids of sp.encode(text), BOS prepended (add_bos_token, default true) and EOS appended
// (add_eos_token, default false); decoding writes special tokens as their strings ("<s> Once ...</s>").
#include "error.h"
#include "tokenizer_backends.h"

#include "sentencepiece.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace nnscope::tokenizer_detail {
namespace {

/// True when `bytes` starts like a tiktoken BPE file ("<base64 token> <rank>" lines), the format of
/// Meta's Llama 3 tokenizer.model, which SentencePiece cannot read.
bool looksLikeTiktoken(const std::string& bytes) {
    const size_t end = bytes.find('\n');
    const std::string line = bytes.substr(0, end == std::string::npos ? std::min<size_t>(bytes.size(), 200) : end);
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size())
        return false;
    for (size_t i = 0; i < space; ++i) {
        const char c = line[i];
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '='))
            return false;
    }
    for (size_t i = space + 1; i < line.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(line[i])))
            return false;
    return true;
}

/// Reads a protobuf varint at `pos`, advancing it; false at the end of the data or on a bad varint.
bool readVarint(const std::string& data, size_t& pos, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && pos < data.size(); shift += 7) {
        const auto byte = static_cast<unsigned char>(data[pos++]);
        value |= static_cast<uint64_t>(byte & 0x7F) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

/// The value of the varint field `field` in the protobuf message `data` (its last occurrence), or
/// nullopt; with `wantMessage`, the bytes of the length-delimited field `field` instead.
std::optional<std::string> protobufField(const std::string& data, uint64_t field, bool wantMessage) {
    std::optional<std::string> found;
    size_t pos = 0;
    uint64_t key = 0, value = 0;
    while (pos < data.size() && readVarint(data, pos, key)) {
        switch (key & 7) {
        case 0:  // varint
            if (!readVarint(data, pos, value))
                return found;
            if (!wantMessage && key >> 3 == field)
                found = std::to_string(value);
            break;
        case 1: pos += 8; break;  // fixed64
        case 5: pos += 4; break;  // fixed32
        case 2:                   // length-delimited
            if (!readVarint(data, pos, value) || value > data.size() - pos)
                return found;
            if (wantMessage && key >> 3 == field)
                found = data.substr(pos, value);
            pos += value;
            break;
        default:
            return found;
        }
    }
    return found;
}

constexpr uint64_t kSentencePieceBpe = 2;  // TrainerSpec.ModelType: UNIGRAM 1, BPE 2, WORD 3, CHAR 4

/// trainer_spec.model_type of a serialized SentencePiece ModelProto (field 2, then field 3); 1 (unigram,
/// protobuf's default) when it is not there.
uint64_t sentencePieceModelType(const std::string& modelProto) {
    if (const auto trainerSpec = protobufField(modelProto, /*field=*/2, /*wantMessage=*/true))
        if (const auto type = protobufField(*trainerSpec, /*field=*/3, /*wantMessage=*/false))
            return std::stoull(*type);
    return 1;
}

class SentencePieceTokenizer final : public Tokenizer {
public:
    /// Loads `file`; throws nnscope::Error naming it when it is unreadable or not a SentencePiece model.
    SentencePieceTokenizer(const fs::path& file, const SpecialTokenSettings& settings) : file_(file.string()) {
        std::ifstream in(file, std::ios::binary);
        if (!in)
            throw Error("The tokenizer file " + file_ + " could not be opened: " + std::strerror(errno) + ".");
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (in.bad())
            throw Error("The tokenizer file " + file_ + " could not be read: " + std::strerror(errno) + ".");
        if (looksLikeTiktoken(bytes))
            throw Error("The tokenizer file " + file_ + " is a tiktoken BPE file (a base64 token and its rank "
                        "per line), not a SentencePiece model; nnscope reads such a tokenizer only from a "
                        "tokenizer.json.");
        // SentencePiece itself runs in a separately loaded module (core/sentencepiece.h says why); its
        // constructor throws nnscope::Error naming the file when the bytes are not a model.
        sp_ = std::make_unique<nnscope::SentencePieceProcessor>(bytes, file_);
        vocabSize_ = sp_->GetPieceSize();
        if (vocabSize_ <= 0)
            throw Error("The tokenizer file " + file_ + " is a SentencePiece model without any piece.");
        cleanUp_ = decodeCleansUp(settings, sentencePieceModelType(bytes) == kSentencePieceBpe);

        const auto lookup = [this](const std::string& piece) -> std::optional<int64_t> {
            const int id = sp_->PieceToId(piece);
            if (id >= 0 && id < vocabSize_ && sp_->IdToPiece(id) == piece)
                return id;
            return std::nullopt;
        };
        const auto modelId = [](int id) { return id >= 0 ? std::optional<int64_t>(id) : std::nullopt; };
        bosId_ = resolveSpecialId(settings.bosToken, settings.bosIdFromConfig, lookup);
        if (!bosId_) bosId_ = modelId(sp_->bos_id());
        eosId_ = resolveSpecialId(settings.eosToken, settings.eosIdFromConfig, lookup);
        if (!eosId_) eosId_ = modelId(sp_->eos_id());
        auto unkId = resolveSpecialId(settings.unkToken, std::nullopt, lookup);
        if (!unkId) unkId = modelId(sp_->unk_id());
        const auto padId = resolveSpecialId(settings.padToken, std::nullopt, lookup);
        for (const auto& id : {bosId_, eosId_, unkId, padId})
            if (id && *id < vocabSize_)
                specialIds_.insert(*id);
        // LlamaTokenizer's defaults: add_bos_token true, add_eos_token false.
        addBos_ = settings.addBosToken.value_or(true) && bosId_.has_value();
        addEos_ = settings.addEosToken.value_or(false) && eosId_.has_value();
    }

    std::vector<int64_t> encode(const std::string& text, bool addSpecialTokens) const override {
        checkUtf8(text);
        const std::vector<int> pieces = sp_->Encode(text);
        std::vector<int64_t> ids;
        ids.reserve(pieces.size() + 2);
        if (addSpecialTokens && addBos_)
            ids.push_back(*bosId_);
        ids.insert(ids.end(), pieces.begin(), pieces.end());
        if (addSpecialTokens && addEos_)
            ids.push_back(*eosId_);
        return ids;
    }

    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const override {
        const std::string text = rawDecode(ids, skipSpecialTokens);
        return cleanUp_ ? cleanUpTokenizationSpaces(text) : text;
    }

    std::string tokenString(int64_t id) const override {
        checkId(id);
        return sp_->IdToPiece(static_cast<int>(id));
    }

    int64_t vocabSize() const override { return vocabSize_; }
    std::string sourceFile() const override { return file_; }

protected:
    std::string tokenText(int64_t id) const override { return rawDecode({id}, false); }

private:
    void checkId(int64_t id) const {
        if (id < 0 || id >= vocabSize_)
            throw Error("Token id " + std::to_string(id) + " is outside the vocabulary of " + file_ +
                        " (ids 0 to " + std::to_string(vocabSize_ - 1) + ").");
    }

    /// SentencePiece's own decode of ordinary pieces.
    std::string spDecode(const std::vector<int>& ids) const {
        return sp_->Decode(ids);
    }

    /// LlamaTokenizer (legacy=true, add_prefix_space) convert_tokens_to_string, without clean-up:
    /// ordinary pieces go through SentencePiece, special tokens are written as their strings, with a
    /// space before a special token that follows ordinary text.
    std::string rawDecode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const {
        for (int64_t id : ids)
            checkId(id);
        std::string out;
        std::vector<int> current;
        bool prevIsSpecial = false;
        size_t i = 0;  // index among the tokens kept, as in transformers
        for (int64_t id : ids) {
            const bool special = specialIds_.count(id) > 0;
            if (special && skipSpecialTokens)
                continue;
            if (special) {
                if (!prevIsSpecial && i != 0)
                    out += ' ';
                out += spDecode(current) + sp_->IdToPiece(static_cast<int>(id));
                current.clear();
                prevIsSpecial = true;
            } else {
                const std::string piece = sp_->IdToPiece(static_cast<int>(id));
                if (prevIsSpecial && i == 1 && piece.rfind("\xE2\x96\x81", 0) != 0)
                    out += ' ';
                current.push_back(static_cast<int>(id));
                prevIsSpecial = false;
            }
            ++i;
        }
        return out + spDecode(current);
    }

    std::unique_ptr<nnscope::SentencePieceProcessor> sp_;
    std::string file_;
    int64_t vocabSize_ = 0;
    std::set<int64_t> specialIds_;  ///< bos, eos, unk, pad: transformers' all_special_ids
    bool cleanUp_ = false;          ///< apply transformers' clean_up_tokenization in decode()
};

}  // namespace

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const fs::path& file, const SpecialTokenSettings& settings) {
    return std::make_unique<SentencePieceTokenizer>(file, settings);
}

}  // namespace nnscope::tokenizer_detail
