// SPDX-License-Identifier: MIT
// The tokenizer.json back end: HuggingFace `tokenizers` (Rust) through the C interface of
// core/hf_tokenizers. Encoding follows PreTrainedTokenizerFast: the file's post_processor adds the special
// tokens, unless tokenizer_config.json sets add_bos_token / add_eos_token otherwise.
#include "error.h"
#include "jsonfile.h"
#include "tokenizer_backends.h"

#include "hf_tokenizers.h"

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
        vocabSize_ = static_cast<int64_t>(nns_hf_vocab_size(handle_.get()));
        if (vocabSize_ <= 0)
            throw Error("The tokenizer file " + file_ + " has an empty vocabulary.");
        cleanUp_ = decodeCleansUp(settings, std::string(nns_hf_model_type(handle_.get())) == "BPE");

        const auto lookup = [this](const std::string& token) -> std::optional<int64_t> {
            uint32_t id = 0;
            if (nns_hf_token_to_id(handle_.get(), token.data(), token.size(), &id) == 1)
                return static_cast<int64_t>(id);
            return std::nullopt;
        };
        bosId_ = resolveSpecialId(settings.bosToken, settings.bosIdFromConfig, lookup);
        eosId_ = resolveSpecialId(settings.eosToken, settings.eosIdFromConfig, lookup);

        // What does the post_processor add? Probe it with a one-letter text.
        const auto plain = rawEncode("a", false);
        const auto withSpecials = rawEncode("a", true);
        const bool grows = withSpecials.size() > plain.size();
        const bool postAddsBos = grows && bosId_ && withSpecials.front() == *bosId_;
        const bool postAddsEos = grows && eosId_ && withSpecials.back() == *eosId_;
        addBos_ = settings.addBosToken.value_or(postAddsBos) && bosId_.has_value();
        addEos_ = settings.addEosToken.value_or(postAddsEos) && eosId_.has_value();
        // tokenizer_config.json overrides the post_processor: then BOS/EOS are added here instead.
        manualSpecials_ = addBos_ != postAddsBos || addEos_ != postAddsEos;
    }

    std::vector<int64_t> encode(const std::string& text, bool addSpecialTokens) const override {
        checkUtf8(text);
        if (!manualSpecials_)
            return rawEncode(text, addSpecialTokens);
        std::vector<int64_t> ids = rawEncode(text, false);
        if (addSpecialTokens && addBos_)
            ids.insert(ids.begin(), *bosId_);
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
    bool manualSpecials_ = false;  ///< BOS/EOS added here rather than by the post_processor
    bool cleanUp_ = false;         ///< apply transformers' clean_up_tokenization in decode()
};

}  // namespace

std::unique_ptr<Tokenizer> loadHfTokenizer(const fs::path& file, const SpecialTokenSettings& settings) {
    return std::make_unique<HfTokenizer>(file, settings);
}

}  // namespace nnscope::tokenizer_detail
