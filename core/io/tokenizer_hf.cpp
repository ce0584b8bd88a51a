// SPDX-License-Identifier: MIT
// The tokenizer.json back end: HuggingFace `tokenizers` (Rust) through the C interface of
// core/hf_tokenizers. Encoding follows transformers 5: the file's post_processor alone adds the special tokens
// (with a tokenizer.json, transformers drops tokenizer_config.json's add_bos_token / add_eos_token). Where it instantiates
// GPT2Tokenizer, Qwen2Tokenizer or GemmaTokenizer, which build their own normalizer, pre-tokenizer, decoder and BPE
// options and take only the vocabulary, merges, added tokens and post-processor from tokenizer.json, so does nnscope.
#include "core/model/error.h"
#include "core/io/jsonfile.h"
#include "core/io/tokenizer_backends.h"

#include "core/hf_tokenizers/hf_tokenizers.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace nnscope::tokenizer_detail {

std::string takeError(char* message, const std::string& fallback) {
    if (!message)
        return fallback;
    std::string text(message);
    nns_hf_string_free(message);
    return text;
}

std::string takeBytes(char* data, std::size_t len) {
    std::string bytes(data, len);
    nns_hf_bytes_free(data, len);
    return bytes;
}

namespace {

using nlohmann::json;

/// `name` without a trailing "Fast" ("GPT2TokenizerFast" -> "GPT2Tokenizer").
std::string withoutFast(const std::string& name) {
    const std::string fast = "Fast";
    return name.size() > fast.size() && name.compare(name.size() - fast.size(), fast.size(), fast) == 0
               ? name.substr(0, name.size() - fast.size())
               : name;
}

/// The tokenizer class transformers 5.23's AutoTokenizer registers for a config.json model_type
/// (TOKENIZER_MAPPING_NAMES), for the model types of nnscope's families; nullopt where it registers none.
/// "TokenizersBackend" is its generic class, which runs tokenizer.json as it is.
std::optional<std::string> registeredClass(const std::string& modelType) {
    static const std::pair<const char*, const char*> table[] = {
        {"gpt2", "GPT2Tokenizer"},
        {"qwen2", "Qwen2Tokenizer"},
        {"qwen3", "Qwen2Tokenizer"},
        {"gemma", "GemmaTokenizer"},
        {"gemma2", "GemmaTokenizer"},
        {"gemma3", "GemmaTokenizer"},
        {"gemma3_text", "GemmaTokenizer"},
        {"gpt_neox", "GPTNeoXTokenizer"},
        {"mistral", "TokenizersBackend"},
        {"olmo2", "TokenizersBackend"},
        {"phi3", "TokenizersBackend"},
        {"persimmon", "TokenizersBackend"},
        {"ernie4_5", "TokenizersBackend"},
    };
    for (const auto& [type, cls] : table)
        if (modelType == type)
            return std::string(cls);
    return std::nullopt;
}

/// Model types whose checkpoints transformers 5.23 knows to name a wrong tokenizer_class
/// (MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS): for them the registered class wins.
bool hubClassKnownWrong(const std::string& modelType) {
    return modelType == "qwen2" || modelType == "phi3" || modelType == "ernie4_5";
}

/// The class transformers 5.23's AutoTokenizer.from_pretrained instantiates for the folder, as far as the files
/// nnscope reads decide it, without "Fast"; "" when that is the generic TokenizersBackend (or none is named).
/// Follows tokenization_auto.py: when config.json's model_type registers a specialised class other than the named
/// tokenizer_class, the named one is used unless the model type is known to name a wrong one; when it registers the
/// generic class, the generic class is used whatever tokenizer_class says.
std::string transformersClass(const SpecialTokenSettings& s) {
    const std::optional<std::string> registered = s.modelType ? registeredClass(*s.modelType) : std::nullopt;
    std::string chosen;
    if (s.tokenizerClass && registered && withoutFast(*registered) != withoutFast(*s.tokenizerClass)) {
        if (*registered == "TokenizersBackend")
            return "";
        chosen = hubClassKnownWrong(*s.modelType) ? *registered : *s.tokenizerClass;
    } else if (s.tokenizerClass) {
        chosen = *s.tokenizerClass;
    } else if (registered) {
        chosen = *registered;
    }
    chosen = withoutFast(chosen);
    return chosen == "TokenizersBackend" || chosen == "PreTrainedTokenizer" ? "" : chosen;
}

/// The normalizer, pre-tokenizer, decoder and BPE options that transformers 5.23's tokenizer class `cls` builds in its
/// __init__ (models/<family>/tokenization_<family>.py), as tokenizer.json parts for nns_hf_tokenizer_replace_pipeline;
/// null for a class that keeps tokenizer.json's own pipeline (or one nnscope does not rebuild).
json classPipeline(const std::string& cls, const SpecialTokenSettings& s) {
    const auto byteLevel = [](bool addPrefixSpace, bool useRegex) {
        return json{{"type", "ByteLevel"}, {"add_prefix_space", addPrefixSpace}, {"trim_offsets", true},
                    {"use_regex", useRegex}};
    };
    const auto bpe = [](json unk, json affix, bool fuseUnk, bool byteFallback) {
        return json{{"dropout", nullptr},        {"unk_token", std::move(unk)},
                    {"continuing_subword_prefix", affix}, {"end_of_word_suffix", affix},
                    {"fuse_unk", fuseUnk},       {"byte_fallback", byteFallback},
                    {"ignore_merges", false}};
    };
    const bool addPrefixSpace = s.addPrefixSpace.value_or(false);
    if (cls == "GPT2Tokenizer")
        return json{{"normalizer", nullptr},
                    {"pre_tokenizer", byteLevel(addPrefixSpace, true)},
                    {"decoder", byteLevel(true, true)},
                    {"bpe", bpe(nullptr, "", false, false)}};
    if (cls == "Qwen2Tokenizer") {
        // Qwen2Tokenizer's PRETOKENIZE_REGEX.
        const std::string pattern =
            R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
        return json{{"normalizer", {{"type", "NFC"}}},
                    {"pre_tokenizer",
                     {{"type", "Sequence"},
                      {"pretokenizers",
                       {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"},
                         {"invert", false}},
                        byteLevel(addPrefixSpace, false)}}}},
                    {"decoder", byteLevel(true, true)},
                    {"bpe", bpe(nullptr, "", false, false)}};
    }
    if (cls == "GemmaTokenizer") {
        const std::string metaspace = "\xE2\x96\x81";  // "▁"
        return json{
            {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", metaspace}}},
            {"pre_tokenizer",
             {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", metaspace}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}}}}}},
            {"bpe", bpe(s.unkToken.value_or("<unk>"), nullptr, true, true)}};
    }
    return nullptr;
}

struct HfTokenizerDeleter {
    void operator()(NnsHfTokenizer* t) const { nns_hf_tokenizer_free(t); }
};

class HfTokenizer final : public Tokenizer {
public:
    /// Loads `file`; throws nnscope::Error naming it when it is unreadable or not a tokenizer.json.
    HfTokenizer(const fs::path& file, const SpecialTokenSettings& settings) : file_(file.string()) {
        // Checked here before the library reads it: a regular file of bounded size, nested no deeper than
        // nnscope's JSON limit (the library's own recursion limit is its business, not a promise to us).
        checkJsonDepth(readRegularFile(file_, kTokenizerJsonMaxBytes), file_);
        char* error = nullptr;
        handle_.reset(nns_hf_tokenizer_load(file_.c_str(), &error));
        if (!handle_)
            throw Error(shortText(takeError(error, "The tokenizer file " + file_ + " could not be loaded."), 600));
        const bool bpeModel = std::string(nns_hf_model_type(handle_.get())) == "BPE";
        // transformers' classes build a BPE model; a file with another model keeps its own pipeline here.
        pipelineClass_ = transformersClass(settings);
        const json parts = bpeModel ? classPipeline(pipelineClass_, settings) : json();
        if (parts.is_null()) {
            pipelineClass_.clear();
        } else {
            const std::string text = parts.dump();
            char* replaceError = nullptr;
            if (nns_hf_tokenizer_replace_pipeline(handle_.get(), text.data(), text.size(), &replaceError) != 0)
                throw Error(takeError(replaceError, "The pipeline could not be replaced.") + " The tokenizer file " +
                            file_ + " was being set up as transformers' " + pipelineClass_ + ".");
        }
        vocabSize_ = static_cast<int64_t>(nns_hf_vocab_size(handle_.get()));
        if (vocabSize_ <= 0)
            throw Error("The tokenizer file " + file_ + " has an empty vocabulary.");
        cleanUp_ = decodeCleansUp(settings, bpeModel);

        const auto lookup = [this](const std::string& token) -> std::optional<int64_t> {
            uint32_t id = 0;
            if (nns_hf_token_to_id(handle_.get(), token.data(), token.size(), &id) == 1)
                return static_cast<int64_t>(id);
            return std::nullopt;
        };
        bosId_ = resolveSpecialId(settings.bosToken, settings.bosIdFromConfig, lookup);
        eosId_ = resolveSpecialId(settings.eosToken, settings.eosIdFromConfig, lookup);

        // What does the post_processor add? Probe it with a one-letter text. tokenizer_config.json's add_bos_token and
        // add_eos_token are not read: transformers 5 drops them whenever there is a tokenizer.json
        // (PreTrainedTokenizerBase._from_pretrained), so they change nothing there.
        const auto plain = rawEncode("a", false);
        const auto withSpecials = rawEncode("a", true);
        const bool grows = withSpecials.size() > plain.size();
        addBos_ = grows && bosId_ && withSpecials.front() == *bosId_;
        addEos_ = grows && eosId_ && withSpecials.back() == *eosId_;
    }

    std::vector<int64_t> encode(const std::string& text, bool addSpecialTokens) const override {
        checkUtf8(text);
        return rawEncode(text, addSpecialTokens);
    }

    std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const override {
        const std::string text = rawDecode(ids, skipSpecialTokens);
        return cleanUp_ ? cleanUpTokenizationSpaces(text) : text;
    }

    std::string tokenString(int64_t id) const override {
        checkId(id);
        char* data = nullptr;
        size_t len = 0;
        const int found = nns_hf_id_to_token(handle_.get(), static_cast<uint32_t>(id), &data, &len);
        if (found == 1)
            return takeBytes(data, len);
        if (found == 0)
            throw Error("The tokenizer " + file_ + " has no token with id " + std::to_string(id) + ".");
        throw Error("Looking up token id " + std::to_string(id) + " in " + file_ +
                    " failed inside the tokenizers library.");
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

    /// The library's encode, the post_processor adding special tokens when `addSpecialTokens`.
    std::vector<int64_t> rawEncode(const std::string& text, bool addSpecialTokens) const {
        uint32_t* ids = nullptr;
        size_t len = 0;
        char* error = nullptr;
        if (nns_hf_encode(handle_.get(), text.data(), text.size(), addSpecialTokens ? 1 : 0, &ids, &len,
                          &error) != 0)
            throw Error(takeError(error, "The tokenizer could not encode the text.") + " The tokenizer file is " +
                        file_ + ".");
        std::vector<int64_t> out(ids, ids + len);
        nns_hf_ids_free(ids, len);
        return out;
    }

    /// The library's decode (the tokenizer.json decoder), without transformers' clean-up.
    std::string rawDecode(const std::vector<int64_t>& ids, bool skipSpecialTokens) const {
        std::vector<uint32_t> narrow;
        narrow.reserve(ids.size());
        for (int64_t id : ids) {
            if (id >= vocabSize_) continue;  // a padded vocabulary's id: transformers' decode skips it too
            checkId(id);
            narrow.push_back(static_cast<uint32_t>(id));
        }
        char* data = nullptr;
        size_t len = 0;
        char* error = nullptr;
        if (nns_hf_decode(handle_.get(), narrow.data(), narrow.size(), skipSpecialTokens ? 1 : 0, &data, &len,
                          &error) != 0)
            throw Error(takeError(error, "The tokenizer could not decode the ids.") + " The tokenizer file is " +
                        file_ + ".");
        return takeBytes(data, len);
    }

    std::unique_ptr<NnsHfTokenizer, HfTokenizerDeleter> handle_;
    std::string file_;
    int64_t vocabSize_ = 0;
    bool cleanUp_ = false;         ///< apply transformers' clean_up_tokenization in decode()
    std::string pipelineClass_;    ///< transformers' class whose pipeline replaced the file's; "" for the file's
};

}  // namespace

std::unique_ptr<Tokenizer> loadHfTokenizer(const fs::path& file, const SpecialTokenSettings& settings) {
    return std::make_unique<HfTokenizer>(file, settings);
}

}  // namespace nnscope::tokenizer_detail
