// SPDX-License-Identifier: MIT
// Tokenizer::load (which file, which special tokens) and what both back ends share: reading the
// checkpoint's JSON files, UTF-8 checks, transformers' space clean-up and readable token labels.
// The back ends are core/io/tokenizer_hf.cpp (tokenizer.json) and core/io/tokenizer_sp.cpp (tokenizer.model).
#include "core/io/tokenizer.h"

#include "core/model/error.h"
#include "core/io/jsonfile.h"
#include "core/io/tokenizer_backends.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

namespace fs = std::filesystem;

namespace nnscope {
namespace tokenizer_detail {
namespace {

using nlohmann::json;

/// Reads the JSON object in `path`, or nullopt when there is no such file.
/// Throws nnscope::Error naming the file when it is not a regular file, too large, unreadable, not JSON (or
/// nested too deep), or not an object.
std::optional<json> readJsonObject(const fs::path& path) {
    return readOptionalJsonObjectFile(path.string(), kConfigMaxBytes);
}

/// A special token's string under `key`: a string, or an object with "content" (AddedToken); nullopt
/// when the key is absent or null. Throws nnscope::Error for any other type.
std::optional<std::string> tokenField(const json& object, const char* key, const fs::path& file) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return std::nullopt;
    if (it->is_string())
        return it->get<std::string>();
    if (it->is_object()) {
        auto content = it->find("content");
        if (content != it->end() && content->is_string())
            return content->get<std::string>();
    }
    throw Error("In " + file.string() + ", \"" + key +
                "\" should be a string, an object with a \"content\" string, or null, not " + jsonExcerpt(*it) +
                ".");
}

/// A boolean under `key`; nullopt when absent or null. Throws nnscope::Error for any other type.
std::optional<bool> boolField(const json& object, const char* key, const fs::path& file) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return std::nullopt;
    if (it->is_boolean())
        return it->get<bool>();
    throw Error("In " + file.string() + ", \"" + key + "\" should be true or false, not " + jsonExcerpt(*it) + ".");
}

/// A string under `key`; nullopt when absent or null. Throws nnscope::Error for any other type.
std::optional<std::string> stringField(const json& object, const char* key, const fs::path& file) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return std::nullopt;
    if (it->is_string())
        return it->get<std::string>();
    throw Error("In " + file.string() + ", \"" + key + "\" should be a string, not " + jsonExcerpt(*it) + ".");
}

/// A token id under `key`: an integer, or a list of integers (its first is taken, as for Llama 3.1's
/// eos_token_id); nullopt when absent, null, empty or negative. Throws nnscope::Error for other types.
std::optional<int64_t> idField(const json& object, const char* key, const fs::path& file) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return std::nullopt;
    const json* value = &*it;
    if (value->is_array()) {
        if (value->empty())
            return std::nullopt;
        value = &value->front();
    }
    if (value->is_number_integer()) {
        const auto id = value->get<int64_t>();
        return id >= 0 ? std::optional<int64_t>(id) : std::nullopt;
    }
    throw Error("In " + file.string() + ", \"" + key + "\" should be a token id (an integer or a list of " +
                "integers), not " + jsonExcerpt(*it) + ".");
}

/// The GPT-2 byte-level alphabet: the character that stands for each byte value.
const std::array<char32_t, 256>& byteLevelAlphabet() {
    static const std::array<char32_t, 256> alphabet = [] {
        std::array<char32_t, 256> a{};
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            a[b] = printable ? static_cast<char32_t>(b) : next++;
        }
        return a;
    }();
    return alphabet;
}

/// Length of the valid UTF-8 sequence at `s[i]`, or 0 when the bytes there are not valid UTF-8.
size_t utf8SequenceLength(const std::string& s, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    if (c < 0x80)
        return 1;
    size_t n;
    char32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (i + n > s.size())
        return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not valid UTF-8.
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return n;
}

/// The code point of the valid `n`-byte UTF-8 sequence at `s[i]`.
char32_t codePointAt(const std::string& s, size_t i, size_t n) {
    const auto c = static_cast<unsigned char>(s[i]);
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < n; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    return cp;
}

/// Spaces other than U+0020, zero-width and direction marks: invisible or blank on a plot axis.
bool isInvisible(char32_t cp) {
    return cp == 0x85 || cp == 0xA0 || cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF;
}

/// "<U+200A>".
std::string codePointName(char32_t cp) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "<U+%04X>", static_cast<unsigned>(cp));
    return buffer;
}

/// Decodes valid UTF-8 into code points; nullopt when it is not valid.
std::optional<std::u32string> toCodePoints(const std::string& s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8SequenceLength(s, i);
        if (n == 0)
            return std::nullopt;
        out.push_back(codePointAt(s, i, n));
        i += n;
    }
    return out;
}

/// The byte an SentencePiece byte piece "<0xNN>" stands for, or nullopt for any other string.
std::optional<unsigned char> bytePieceValue(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>')
        return std::nullopt;
    unsigned value = 0;
    for (size_t k = 3; k < 5; ++k) {
        const char c = piece[k];
        value <<= 4;
        if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
        else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
        else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
        else return std::nullopt;
    }
    return static_cast<unsigned char>(value);
}

const char* const kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD, what decoders give for broken UTF-8
const char* const kMetaspace = "\xE2\x96\x81";        // U+2581 "▁", SentencePiece's space

}  // namespace

SpecialTokenSettings readSpecialTokenSettings(const fs::path& dir) {
    SpecialTokenSettings s;
    const fs::path tokenizerConfig = dir / "tokenizer_config.json";
    if (auto cfg = readJsonObject(tokenizerConfig)) {
        s.bosToken = tokenField(*cfg, "bos_token", tokenizerConfig);
        s.eosToken = tokenField(*cfg, "eos_token", tokenizerConfig);
        s.unkToken = tokenField(*cfg, "unk_token", tokenizerConfig);
        s.padToken = tokenField(*cfg, "pad_token", tokenizerConfig);
        s.addBosToken = boolField(*cfg, "add_bos_token", tokenizerConfig);
        s.addEosToken = boolField(*cfg, "add_eos_token", tokenizerConfig);
        s.addPrefixSpace = boolField(*cfg, "add_prefix_space", tokenizerConfig);
        s.tokenizerClass = stringField(*cfg, "tokenizer_class", tokenizerConfig);
        s.cleanUpTokenizationSpaces =
            boolField(*cfg, "clean_up_tokenization_spaces", tokenizerConfig).value_or(false);
        s.cleanUpEvenForBpe =
            boolField(*cfg, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output",
                      tokenizerConfig)
                .value_or(false);
    }
    const fs::path specialMap = dir / "special_tokens_map.json";
    if (auto map = readJsonObject(specialMap)) {
        if (!s.bosToken) s.bosToken = tokenField(*map, "bos_token", specialMap);
        if (!s.eosToken) s.eosToken = tokenField(*map, "eos_token", specialMap);
        if (!s.unkToken) s.unkToken = tokenField(*map, "unk_token", specialMap);
        if (!s.padToken) s.padToken = tokenField(*map, "pad_token", specialMap);
    }
    const fs::path config = dir / "config.json";
    if (auto cfg = readJsonObject(config)) {
        s.bosIdFromConfig = idField(*cfg, "bos_token_id", config);
        s.eosIdFromConfig = idField(*cfg, "eos_token_id", config);
        // The model's loader judges config.json's own keys; here a value that is not a string is only not used.
        const auto text = [&](const char* key) -> std::optional<std::string> {
            auto it = cfg->find(key);
            return it != cfg->end() && it->is_string() ? std::optional<std::string>(it->get<std::string>())
                                                       : std::nullopt;
        };
        s.modelType = text("model_type");
        if (!s.tokenizerClass)
            s.tokenizerClass = text("tokenizer_class");
    }
    return s;
}

std::optional<int64_t> resolveSpecialId(
    const std::optional<std::string>& token, const std::optional<int64_t>& idFromConfig,
    const std::function<std::optional<int64_t>(const std::string&)>& lookup) {
    if (token) {
        if (auto id = lookup(*token))
            return id;
    }
    return idFromConfig;
}

size_t firstInvalidUtf8(const std::string& text) {
    for (size_t i = 0; i < text.size();) {
        const size_t n = utf8SequenceLength(text, i);
        if (n == 0) return i;
        i += n;
    }
    return std::string::npos;
}

void checkUtf8(const std::string& text) {
    const size_t i = firstInvalidUtf8(text);
    if (i != std::string::npos)
        throw Error("The text to encode is not valid UTF-8 (invalid byte 0x" +
                    hexBytes(text.substr(i, 1)).substr(3, 2) + " at offset " + std::to_string(i) + ").");
}

bool decodeCleansUp(const SpecialTokenSettings& settings, bool bpeModel) {
    return settings.cleanUpTokenizationSpaces && (!bpeModel || settings.cleanUpEvenForBpe);
}

std::string cleanUpTokenizationSpaces(std::string text) {
    static const std::array<std::pair<const char*, const char*>, 10> rules{{
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    }};
    // Same order as transformers' chained str.replace calls, each over the whole text.
    for (const auto& [from, to] : rules) {
        const std::string f(from), t(to);
        std::string out;
        out.reserve(text.size());
        size_t pos = 0;
        for (size_t hit; (hit = text.find(f, pos)) != std::string::npos; pos = hit + f.size())
            out.append(text, pos, hit - pos).append(t);
        out.append(text, pos, std::string::npos);
        text = std::move(out);
    }
    return text;
}

std::string asSentenceEnd(std::string detail) {
    while (!detail.empty() && (detail.back() == '.' || std::isspace(static_cast<unsigned char>(detail.back()))))
        detail.pop_back();
    return detail + ".";
}

std::string hexBytes(const std::string& bytes) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    for (unsigned char b : bytes) {
        out += "<0x";
        out += digits[b >> 4];
        out += digits[b & 0xF];
        out += '>';
    }
    return out;
}

std::string escapeLabel(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        const size_t n = utf8SequenceLength(text, i);
        if (n == 0) {  // a byte that is not text on its own
            out += hexBytes(text.substr(i, 1));
            ++i;
            continue;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (n == 1 && c == ' ') out += "\xE2\x90\xA3";  // "␣"
        else if (n == 1 && c == '\n') out += "\\n";
        else if (n == 1 && c == '\t') out += "\\t";
        else if (n == 1 && c == '\r') out += "\\r";
        else if (n == 1 && (c < 0x20 || c == 0x7F)) out += hexBytes(text.substr(i, 1));
        else if (n > 1 && isInvisible(codePointAt(text, i, n))) out += codePointName(codePointAt(text, i, n));
        else out.append(text, i, n);
        i += n;
    }
    return out;
}

std::optional<std::string> byteLevelBytes(const std::string& token) {
    static const auto reverse = [] {
        std::array<int, 512> r;
        r.fill(-1);
        const auto& alphabet = byteLevelAlphabet();
        for (int b = 0; b < 256; ++b)
            r[alphabet[b]] = b;
        return r;
    }();
    const auto cps = toCodePoints(token);
    if (!cps)
        return std::nullopt;
    std::string bytes;
    for (char32_t cp : *cps) {
        if (cp >= reverse.size() || reverse[cp] < 0)
            return std::nullopt;
        bytes += static_cast<char>(reverse[cp]);
    }
    return bytes;
}

}  // namespace tokenizer_detail

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& modelDir) {
    using namespace tokenizer_detail;
    const fs::path dir(modelDir);
    std::error_code ec;
    if (!fs::exists(dir, ec))
        throw Error("The model folder " + dir.string() + " does not exist.");
    if (!fs::is_directory(dir, ec))
        throw Error(dir.string() + " is not a folder: give the checkpoint folder that holds tokenizer.json "
                    "or tokenizer.model.");
    const fs::path hfFile = dir / "tokenizer.json";
    const fs::path spFile = dir / "tokenizer.model";
    const bool hasHf = fs::exists(hfFile, ec);
    const bool hasSp = !hasHf && fs::exists(spFile, ec);
    if (!hasHf && !hasSp)
        throw Error("No tokenizer file was found in " + dir.string() +
                    ": nnscope reads tokenizer.json (HuggingFace tokenizers) or tokenizer.model (SentencePiece).");
    const SpecialTokenSettings settings = readSpecialTokenSettings(dir);
    return hasHf ? loadHfTokenizer(hfFile, settings) : loadSentencePieceTokenizer(spFile, settings);
}

std::string Tokenizer::unknownIdLabel(int64_t id) { return "<id " + std::to_string(id) + ": not in tokenizer>"; }

std::string Tokenizer::decodeShowingUnknown(const std::vector<int64_t>& ids, bool skipSpecialTokens) const {
    const std::string text = decode(ids, skipSpecialTokens);  // throws for a negative id; skips the unknown ones
    std::string out;
    size_t shown = 0;  // how much of `text` is in `out`
    for (size_t i = 0; i < ids.size(); ++i) {
        if (knows(ids[i])) continue;
        // The text of the ids before this one is where it stands; a decoder that does not decode prefix by prefix
        // (a byte split across tokens, the clean-up of spaces) leaves it where the text is so far.
        const std::string before = decode(std::vector<int64_t>(ids.begin(), ids.begin() + static_cast<long>(i)), skipSpecialTokens);
        if (before.size() > shown && text.compare(0, before.size(), before) == 0) {
            out += text.substr(shown, before.size() - shown);
            shown = before.size();
        }
        out += unknownIdLabel(ids[i]);
    }
    return out + text.substr(shown);
}

std::optional<int64_t> Tokenizer::idOfToken(const std::string& text) const {
    std::call_once(tokenIndexBuilt_, [this] {
        const int64_t n = vocabSize();
        idOfString_.reserve(static_cast<size_t>(n));
        idOfLabel_.reserve(static_cast<size_t>(n));
        for (int64_t id = 0; id < n; ++id) {  // emplace keeps the lowest id of a repeated string
            try {
                idOfString_.emplace(tokenString(id), id);
                idOfLabel_.emplace(tokenLabel(id), id);
            } catch (const Error&) {  // an id a tokenizer.json leaves out between its vocabulary and added tokens
            }
        }
    });
    if (auto it = idOfString_.find(text); it != idOfString_.end()) return it->second;
    if (auto it = idOfLabel_.find(text); it != idOfLabel_.end()) return it->second;
    return std::nullopt;
}

std::string Tokenizer::tokenLabel(int64_t id) const {
    using namespace tokenizer_detail;
    if (id >= vocabSize()) return unknownIdLabel(id);  // a padded vocabulary's id: the model has it, the tokenizer not
    const std::string piece = tokenString(id);  // throws for a negative id
    std::string bytes = tokenText(id);
    if (bytes.find(kReplacementChar) != std::string::npos && piece.find(kReplacementChar) == std::string::npos) {
        // The token is a piece of a multi-byte character: show its bytes rather than "�".
        if (auto b = bytePieceValue(piece))
            bytes = std::string(1, static_cast<char>(*b));
        else if (auto raw = byteLevelBytes(piece))
            bytes = *raw;
        else
            return escapeLabel(piece);
    }
    // SentencePiece-style decoders drop the leading space of a text's first token; a label keeps it.
    if (piece.rfind(kMetaspace, 0) == 0 && (bytes.empty() || bytes[0] != ' '))
        bytes.insert(0, " ");
    if (bytes.empty())
        bytes = piece;
    return escapeLabel(bytes);
}

}  // namespace nnscope
