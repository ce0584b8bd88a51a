// SPDX-License-Identifier: MIT
// The tokenizer.model back end: SentencePiece (0.2.1, built from source inside core/hf_tokenizers, see
// its Cargo.toml for why not Debian's library), behaving as transformers' slow LlamaTokenizer with
// legacy=true: the ids of sp.encode(text), BOS prepended (add_bos_token, default true) and EOS appended
// (add_eos_token, default false); decoding writes special tokens as their strings ("<s> Once ...</s>").
// The piece table (id -> piece string) is read here from the model's protobuf bytes.
#include "core/model/error.h"
#include "core/io/jsonfile.h"
#include "core/io/tokenizer_backends.h"

#include "core/hf_tokenizers/hf_tokenizers.h"

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
#include <unordered_map>
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

// --- a minimal protobuf reader, enough for the piece table and trainer_spec.model_type --------------

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

/// One field of a protobuf message: a varint value, or the bytes of a length-delimited field.
struct ProtoField {
    uint64_t number = 0;
    uint64_t varint = 0;
    std::string bytes;
    bool isBytes = false;
};

/// The fields of the protobuf message `data`, in order; nullopt when it is not well formed.
std::optional<std::vector<ProtoField>> protoFields(const std::string& data) {
    std::vector<ProtoField> fields;
    size_t pos = 0;
    uint64_t key = 0, length = 0;
    while (pos < data.size()) {
        if (!readVarint(data, pos, key))
            return std::nullopt;
        ProtoField field;
        field.number = key >> 3;
        switch (key & 7) {
        case 0:
            if (!readVarint(data, pos, field.varint))
                return std::nullopt;
            break;
        case 1:
        case 5: {
            const size_t size = (key & 7) == 1 ? 8 : 4;
            if (size > data.size() - pos)
                return std::nullopt;
            pos += size;
            break;
        }
        case 2:
            if (!readVarint(data, pos, length) || length > data.size() - pos)
                return std::nullopt;
            field.bytes = data.substr(pos, length);
            field.isBytes = true;
            pos += length;
            break;
        default:
            return std::nullopt;
        }
        fields.push_back(std::move(field));
    }
    return fields;
}

constexpr uint64_t kSentencePieceBpe = 2;  // TrainerSpec.ModelType: UNIGRAM 1, BPE 2, WORD 3, CHAR 4

/// What nnscope reads itself from a serialized ModelProto.
struct PieceTable {
    std::vector<std::string> pieces;  ///< ModelProto.pieces[i].piece (field 1 of field 1)
    uint64_t modelType = 1;           ///< trainer_spec (field 2).model_type (field 3), default UNIGRAM
};

std::optional<PieceTable> readPieceTable(const std::string& modelProto) {
    const auto fields = protoFields(modelProto);
    if (!fields)
        return std::nullopt;
    PieceTable table;
    for (const auto& field : *fields) {
        if (field.number == 1 && field.isBytes) {
            const auto pieceFields = protoFields(field.bytes);
            if (!pieceFields)
                return std::nullopt;
            std::string piece;
            for (const auto& f : *pieceFields)
                if (f.number == 1 && f.isBytes)
                    piece = f.bytes;
            table.pieces.push_back(std::move(piece));
        } else if (field.number == 2 && field.isBytes) {
            if (const auto spec = protoFields(field.bytes))
                for (const auto& f : *spec)
                    if (f.number == 3 && !f.isBytes)
                        table.modelType = f.varint;
        }
    }
    return table;
}

struct SpModelDeleter {
    void operator()(NnsSpModel* m) const { nns_sp_free(m); }
};

class SentencePieceTokenizer final : public Tokenizer {
public:
    /// Loads `file`; throws nnscope::Error naming it when it is unreadable or not a SentencePiece model.
    SentencePieceTokenizer(const fs::path& file, const SpecialTokenSettings& settings) : file_(file.string()) {
        const std::string bytes = readRegularFile(file_, kTokenizerModelMaxBytes);
        const std::string invalid = "The tokenizer file " + file_ + " is not a valid SentencePiece model: ";
        if (looksLikeTiktoken(bytes))
            throw Error("The tokenizer file " + file_ + " is a tiktoken BPE file (a base64 token and its rank "
                        "per line), not a SentencePiece model; nnscope reads such a tokenizer only from a "
                        "tokenizer.json.");
        auto table = readPieceTable(bytes);
        if (!table)
            throw Error(invalid + "the bytes are not a serialized SentencePiece model (protobuf).");
        if (table->pieces.empty())
            throw Error(invalid + "it has no pieces.");
        char* error = nullptr;
        model_.reset(nns_sp_load(bytes.data(), bytes.size(), &error));
        if (!model_)
            throw Error(invalid + shortText(takeError(error, "SentencePiece could not load it."), 400));
        if (nns_sp_piece_count(model_.get()) != table->pieces.size())
            throw Error(invalid + "SentencePiece counts " + std::to_string(nns_sp_piece_count(model_.get())) +
                        " pieces where the file lists " + std::to_string(table->pieces.size()) + ".");
        pieces_ = std::move(table->pieces);
        for (size_t id = 0; id < pieces_.size(); ++id)
            pieceIds_.emplace(pieces_[id], static_cast<int64_t>(id));  // the first id of a piece wins
        cleanUp_ = decodeCleansUp(settings, table->modelType == kSentencePieceBpe);

        int64_t modelUnk = -1, modelBos = -1, modelEos = -1, modelPad = -1;
        nns_sp_special_ids(model_.get(), &modelUnk, &modelBos, &modelEos, &modelPad);
        const auto lookup = [this](const std::string& piece) -> std::optional<int64_t> {
            const auto it = pieceIds_.find(piece);
            return it == pieceIds_.end() ? std::nullopt : std::optional<int64_t>(it->second);
        };
        const auto own = [this](int64_t id) {
            return id >= 0 && id < vocabSize() ? std::optional<int64_t>(id) : std::nullopt;
        };
        bosId_ = resolveSpecialId(settings.bosToken, settings.bosIdFromConfig, lookup);
        if (!bosId_) bosId_ = own(modelBos);
        eosId_ = resolveSpecialId(settings.eosToken, settings.eosIdFromConfig, lookup);
        if (!eosId_) eosId_ = own(modelEos);
        auto unkId = resolveSpecialId(settings.unkToken, std::nullopt, lookup);
        if (!unkId) unkId = own(modelUnk);
        const auto padId = resolveSpecialId(settings.padToken, std::nullopt, lookup);
        for (const auto& id : {bosId_, eosId_, unkId, padId})
            if (id && *id < vocabSize())
                specialIds_.insert(*id);
        // transformers reads these tokens' strings typed in the text as the tokens themselves (added tokens, matched
        // anywhere, longest first).
        for (int64_t id : specialIds_)
            if (!pieces_[static_cast<size_t>(id)].empty()) specialStrings_.emplace_back(pieces_[static_cast<size_t>(id)], id);
        std::sort(specialStrings_.begin(), specialStrings_.end(),
                  [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
        // LlamaTokenizer's defaults: add_bos_token true, add_eos_token false.
        addBos_ = settings.addBosToken.value_or(true) && bosId_.has_value();
        addEos_ = settings.addEosToken.value_or(false) && eosId_.has_value();
    }

    /// The ids of `text`: the special tokens' strings in it ("<s>", "</s>", "<unk>") become those tokens and every
    /// piece between them is encoded by SentencePiece, as transformers' LlamaTokenizer does (slow, legacy=True: the
    /// added-token trie splits the text first; transformers 5's converted tokenizer gives the same ids except for
    /// whitespace right before a special token, which SentencePiece's normalizer drops, as it collapses runs of
    /// spaces). BOS first and EOS last as the config says.
    std::vector<int64_t> encode(const std::string& text, bool addSpecialTokens) const override {
        checkUtf8(text);
        std::vector<int64_t> ids;
        if (addSpecialTokens && addBos_)
            ids.push_back(*bosId_);
        size_t start = 0;
        for (size_t i = 0; i < text.size();) {
            const auto hit = std::find_if(specialStrings_.begin(), specialStrings_.end(),
                                          [&](const auto& s) { return text.compare(i, s.first.size(), s.first) == 0; });
            if (hit == specialStrings_.end()) {
                ++i;
                continue;
            }
            encodePiece(text.substr(start, i - start), ids);
            ids.push_back(hit->second);
            i += hit->first.size();
            start = i;
        }
        encodePiece(text.substr(start), ids);
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
        return pieces_[static_cast<size_t>(id)];
    }

    int64_t vocabSize() const override { return static_cast<int64_t>(pieces_.size()); }
    std::string sourceFile() const override { return file_; }

protected:
    std::string tokenText(int64_t id) const override { return rawDecode({id}, false); }

private:
    /// Appends SentencePiece's ids of `text` (no special-token strings in it) to `ids`.
    void encodePiece(const std::string& text, std::vector<int64_t>& ids) const {
        if (text.empty()) return;
        uint32_t* pieces = nullptr;
        size_t count = 0;
        char* error = nullptr;
        if (nns_sp_encode(model_.get(), text.data(), text.size(), &pieces, &count, &error) != 0)
            throw Error(takeError(error, "SentencePiece could not encode the text.") +
                        " The tokenizer file is " + file_ + ".");
        ids.insert(ids.end(), pieces, pieces + count);
        nns_hf_ids_free(pieces, count);
    }
    void checkId(int64_t id) const {
        if (id < 0 || id >= vocabSize())
            throw Error("Token id " + std::to_string(id) + " is outside the vocabulary of " + file_ +
                        " (ids 0 to " + std::to_string(vocabSize() - 1) + ").");
    }

    /// SentencePiece's own decode of ordinary pieces.
    std::string spDecode(const std::vector<uint32_t>& ids) const {
        if (ids.empty())
            return {};
        char* data = nullptr;
        size_t len = 0;
        char* error = nullptr;
        if (nns_sp_decode(model_.get(), ids.data(), ids.size(), &data, &len, &error) != 0)
            throw Error(takeError(error, "SentencePiece could not decode the ids.") + " The tokenizer file is " +
                        file_ + ".");
        return takeBytes(data, len);
    }

    /// LlamaTokenizer (legacy=true, add_prefix_space) convert_tokens_to_string, without clean-up:
    /// ordinary pieces go through SentencePiece, special tokens are written as their strings, with a
    /// space before a special token that follows ordinary text.
    std::string rawDecode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const {
        for (int64_t id : ids)
            if (id < 0) checkId(id);
        std::string out;
        std::vector<uint32_t> current;
        bool prevIsSpecial = false;
        size_t i = 0;  // index among the tokens kept, as in transformers
        for (int64_t id : ids) {
            if (id >= vocabSize()) continue;  // a padded vocabulary's id: transformers' decode skips it (no token)
            const bool special = specialIds_.count(id) > 0;
            if (special && skipSpecialTokens)
                continue;
            const std::string& piece = pieces_[static_cast<size_t>(id)];
            if (special) {
                if (!prevIsSpecial && i != 0)
                    out += ' ';
                out += spDecode(current) + piece;
                current.clear();
                prevIsSpecial = true;
            } else {
                if (prevIsSpecial && i == 1 && piece.rfind("\xE2\x96\x81", 0) != 0)
                    out += ' ';
                current.push_back(static_cast<uint32_t>(id));
                prevIsSpecial = false;
            }
            ++i;
        }
        return out + spDecode(current);
    }

    std::unique_ptr<NnsSpModel, SpModelDeleter> model_;
    std::string file_;
    std::vector<std::string> pieces_;                  ///< piece string of each id
    std::unordered_map<std::string, int64_t> pieceIds_;
    std::set<int64_t> specialIds_;  ///< bos, eos, unk, pad: transformers' all_special_ids
    std::vector<std::pair<std::string, int64_t>> specialStrings_;  ///< their pieces, longest first, read in the text as them
    bool cleanUp_ = false;          ///< apply transformers' clean_up_tokenization in decode()
};

}  // namespace

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const fs::path& file, const SpecialTokenSettings& settings) {
    return std::make_unique<SentencePieceTokenizer>(file, settings);
}

}  // namespace nnscope::tokenizer_detail
