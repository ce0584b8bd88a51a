// SPDX-License-Identifier: MIT
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nnscope {

/// A checkpoint's tokenizer, loaded from its folder.
///
/// `tokenizer.json` is read by HuggingFace `tokenizers` (the Rust crate, through core/hf_tokenizers),
/// `tokenizer.model` by SentencePiece; `tokenizer.json` wins when both exist. BOS/EOS tokens come from
/// tokenizer_config.json (then special_tokens_map.json, then config.json's bos_token_id / eos_token_id), the way
/// transformers' tokenizer classes read them. Which special tokens encode() adds: for tokenizer.json, its
/// post_processor's (transformers 5 ignores tokenizer_config.json's add_bos_token / add_eos_token then); for
/// tokenizer.model, add_bos_token / add_eos_token (default true / false, as LlamaTokenizer). Where transformers 5
/// instantiates GPT2Tokenizer, Qwen2Tokenizer or GemmaTokenizer for the folder (from tokenizer_config.json's
/// tokenizer_class and config.json's model_type), tokenizer.json's normalizer, pre-tokenizer, decoder and BPE options
/// are replaced by the ones that class builds (with tokenizer_config.json's add_prefix_space), as transformers does.
class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    /// Loads the tokenizer of the checkpoint folder `modelDir`.
    /// Throws nnscope::Error naming the file when none is found or a file is unreadable or invalid: not a regular
    /// file (a FIFO, a device), larger than its limit (tokenizer.json 512 MiB, tokenizer.model 64 MiB, the small
    /// JSON files 16 MiB), JSON nested deeper than 64 levels or with a repeated key (core/io/jsonfile.h).
    static std::unique_ptr<Tokenizer> load(const std::string& modelDir);

    /// Token ids of `text` (UTF-8). With `addSpecialTokens`, BOS is prepended (and EOS appended) as the
    /// checkpoint's tokenizer would under HF `tokenizer(text)`. An empty text gives [BOS] (or []).
    /// Throws nnscope::Error when `text` is not valid UTF-8.
    virtual std::vector<int64_t> encode(const std::string& text, bool addSpecialTokens = true) const = 0;
    /// Text of `ids`, special tokens skipped when `skipSpecialTokens`, as HF `tokenizer.decode` gives it
    /// (including clean_up_tokenization_spaces when tokenizer_config.json asks for it). An id the tokenizer lacks
    /// (>= vocabSize(): a checkpoint whose vocabulary is padded past its tokenizer's, as Qwen2's, Phi-3's and
    /// Pythia's are) gives no text, as transformers' decode skips it; decodeShowingUnknown() marks where it was.
    /// Throws nnscope::Error for a negative id.
    virtual std::string decode(const std::vector<int64_t>& ids, bool skipSpecialTokens = false) const = 0;
    /// decode(), with each id the tokenizer lacks written as unknownIdLabel(id) where it stands among the text: what
    /// the command line and the window show of a generation (the ids of a padded vocabulary are real outputs of the
    /// model). Equal to decode() when every id is known. Throws nnscope::Error for a negative id.
    std::string decodeShowingUnknown(const std::vector<int64_t>& ids, bool skipSpecialTokens = false) const;
    /// The token's own string as the vocabulary holds it (e.g. "▁Lily", "<0x0A>", "Ġthe"), for labels.
    /// Throws nnscope::Error when no token has that id.
    virtual std::string tokenString(int64_t id) const = 0;
    /// A readable label for one token, for plot axes: its decoded text with spaces shown as "␣" and
    /// newline, tab, CR as the escapes "\n", "\t", "\r" (e.g. "␣Lily"); a byte that is not text on its
    /// own is shown as "<0xE2>", a special token as its string ("<s>"); an id the tokenizer lacks (>= vocabSize(),
    /// a padded vocabulary's) as unknownIdLabel(id). Throws nnscope::Error for a negative id.
    virtual std::string tokenLabel(int64_t id) const;
    /// The one label of an id the tokenizer lacks, everywhere nnscope shows a token (command line, --json, the window):
    /// "<id 310: not in tokenizer>". Whether the model has that id is the model's business (ids below its config's
    /// vocab_size are real outputs, however the tokenizer ends).
    static std::string unknownIdLabel(int64_t id);
    /// The id whose vocabulary string (tokenString: "▁there", "Ġthe", ",") or label (tokenLabel: "␣there", the way
    /// nnscope prints a token) is exactly `text`, a string before a label, the lowest id of several; nullopt when none
    /// is. What lets a token copied from nnscope's output be given back (`--answer`, `--target`) where encoding it would
    /// not give that one token (SentencePiece adds a word-start mark: "," becomes "▁" + ","). The first call indexes
    /// the whole vocabulary (every id's string and label: under a second for 256k ids); thread-safe.
    std::optional<int64_t> idOfToken(const std::string& text) const;
    /// Whether `id` is the unknown token, what a word outside the vocabulary becomes: its string is "<unk>" (SentencePiece,
    /// BPE, word-level vocabularies) or "[UNK]" (WordPiece). False for an id the tokenizer does not know.
    bool isUnknownToken(int64_t id) const {
        if (!knows(id)) return false;
        const std::string s = tokenString(id);
        return s == "<unk>" || s == "[UNK]";
    }
    /// Whether `id` is one the tokenizer has a token for: 0 <= id < vocabSize().
    bool knows(int64_t id) const { return id >= 0 && id < vocabSize(); }
    /// Number of ids the tokenizer knows (including added tokens).
    virtual int64_t vocabSize() const = 0;
    /// The file the tokenizer was read from.
    virtual std::string sourceFile() const = 0;

    std::optional<int64_t> bosId() const { return bosId_; }
    std::optional<int64_t> eosId() const { return eosId_; }
    /// Whether encode(text, true) prepends bosId() / appends eosId().
    bool addsBos() const { return addBos_; }
    bool addsEos() const { return addEos_; }

protected:
    /// The text of the one token `id` as the decoder gives it, special tokens kept and without the
    /// clean-up of spaces that decode() may apply; tokenLabel() builds on it.
    virtual std::string tokenText(int64_t id) const { return decode({id}, false); }

    std::optional<int64_t> bosId_, eosId_;
    bool addBos_ = false;
    bool addEos_ = false;

private:
    mutable std::once_flag tokenIndexBuilt_;
    mutable std::unordered_map<std::string, int64_t> idOfString_, idOfLabel_;  ///< idOfToken's index, built once
};

}  // namespace nnscope
