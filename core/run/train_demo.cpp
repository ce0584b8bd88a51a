// SPDX-License-Identifier: MIT
//
// The demo model's trainer (issue 6). The engine's Model holds immutable memory-mapped weights and runs under
// InferenceMode, so training uses its own small Llama written here with autograd tensors, in HF Llama's exact
// math (RMSNorm statistics in float32, rotate_half rotary, eager causal softmax attention scaled by
// head_dim^-0.5, silu-gated MLP). The saved folder is then loaded back through Model::load, the code path of
// every checkpoint, and measured with nnscope::trace.
#include "core/run/train_demo.h"

#include "core/model/error.h"
#include "core/io/safetensors.h"
#include "core/io/tokenizer.h"
#include "core/run/trace.h"
#include "core/model/weights.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace torch::indexing;
using json = nlohmann::json;

namespace nnscope {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Vocabulary and tokenizer files

const char* const kWords[] = {
    // function words
    "the", "a", "an", "and", "or", "but", "if", "then", "so", "because", "of", "to", "in", "on", "at", "by", "for",
    "with", "from", "up", "down", "out", "over", "under", "into", "about", "after", "before", "when", "while",
    "where", "what", "who", "why", "how", "this", "that", "these", "those", "here", "there", "now", "not", "no",
    "yes", "very", "too", "also", "just", "only", "all", "some", "any", "many", "much", "more", "most", "few",
    "each", "every", "other", "another", "same",
    // pronouns
    "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them", "my", "your", "his", "its",
    "our", "their",
    // adjectives
    "new", "old", "good", "bad", "big", "small", "long", "short", "high", "low", "hot", "cold", "warm", "cool",
    "fast", "slow", "happy", "sad", "kind", "nice", "funny", "little", "young", "red", "blue", "green", "yellow",
    "black", "white", "brown", "pink", "dark", "bright", "tall", "soft", "loud", "quiet", "brave", "clever",
    // people and animals
    "man", "woman", "boy", "girl", "child", "baby", "mother", "father", "sister", "brother", "friend", "family",
    "king", "queen", "teacher", "doctor", "farmer", "tom", "lily", "ben", "anna", "cat", "dog", "bird", "fish",
    "horse", "cow", "pig", "sheep", "duck", "frog", "mouse", "rabbit", "bear", "lion", "tiger", "wolf", "fox",
    "owl", "bee",
    // things and places
    "tree", "flower", "grass", "leaf", "garden", "forest", "park", "river", "lake", "sea", "sky", "sun", "moon",
    "star", "rain", "snow", "wind", "cloud", "fire", "water", "stone", "hill", "mountain", "road", "street",
    "house", "home", "room", "door", "window", "table", "chair", "bed", "book", "box", "ball", "toy", "cake",
    "bread", "apple", "milk", "tea", "cup", "hat", "shoe", "coat", "car", "bus", "boat", "train", "ship", "town",
    "city", "school", "shop", "farm", "bridge", "castle", "morning", "night", "day", "week", "year", "time",
    "story", "song", "game", "picture", "letter", "name", "idea", "dream", "heart", "hand", "head", "eye", "face",
    "foot", "mat",
    // verbs
    "is", "are", "was", "were", "be", "been", "am", "has", "have", "had", "do", "does", "did", "can", "could",
    "will", "would", "should", "may", "might", "must", "go", "went", "come", "came", "see", "saw", "look",
    "looked", "find", "found", "make", "made", "take", "took", "give", "gave", "get", "got", "say", "said",
    "tell", "told", "think", "thought", "know", "knew", "want", "wanted", "like", "liked", "love", "loved", "play",
    "played", "run", "ran", "walk", "walked", "jump", "jumped", "eat", "ate", "drink", "sleep", "slept", "sing",
    "sang", "read", "write", "wrote", "open", "opened", "close", "sit", "sat", "stand", "fly", "flew", "swim",
    "help", "helped", "ask", "asked", "answer", "call", "called", "turn", "keep", "start", "stop", "live", "lived",
    "laugh", "laughed", "cry", "cried", "smile", "smiled", "wait", "show", "hear", "heard", "feel", "felt",
    "bring", "carry", "build", "draw", "push", "pull", "catch", "throw",
    // numbers and time
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "first", "last", "next",
    "again", "always", "never", "often", "sometimes", "today", "tomorrow", "yesterday", "soon", "later",
    "together", "alone", "away", "back", "far", "near", "inside", "outside", "around", "through", "across",
    "behind",
    // punctuation (the Whitespace pre-tokenizer splits it off words)
    ".", ",", "?", "!", "'", "\"", ":", ";", "-",
};

constexpr int64_t kUnkId = 0, kBosId = 1, kEosId = 2, kPadId = 3;

json tokenizerJson() {
    const auto& vocab = demoVocabulary();
    json v = json::object();
    for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = static_cast<int64_t>(i);
    json added = json::array();
    for (int64_t id = 0; id < kDemoFirstWordId; ++id)
        added.push_back({{"id", id},
                         {"content", vocab[static_cast<size_t>(id)]},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
    auto special = [](const char* id, int typeId) { return json{{"SpecialToken", {{"id", id}, {"type_id", typeId}}}}; };
    auto sequence = [](const char* id, int typeId) { return json{{"Sequence", {{"id", id}, {"type_id", typeId}}}}; };
    json post = {
        {"type", "TemplateProcessing"},
        {"single", json::array({special("<s>", 0), sequence("A", 0)})},
        {"pair", json::array({special("<s>", 0), sequence("A", 0), special("<s>", 1), sequence("B", 1)})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", json::array({kBosId})}, {"tokens", json::array({"<s>"})}}}}},
    };
    json j;
    j["version"] = "1.0";
    j["truncation"] = nullptr;
    j["padding"] = nullptr;
    j["added_tokens"] = added;
    j["normalizer"] = {{"type", "Lowercase"}};
    j["pre_tokenizer"] = {{"type", "Whitespace"}};
    j["post_processor"] = post;
    // No decoder: `tokenizers` then joins the tokens with single spaces (word-level decoding).
    j["decoder"] = nullptr;
    j["model"] = {{"type", "WordLevel"}, {"vocab", v}, {"unk_token", "<unk>"}};
    return j;
}

json tokenizerConfigJson() {
    return {
        {"tokenizer_class", "PreTrainedTokenizerFast"},
        {"bos_token", "<s>"},
        {"eos_token", "</s>"},
        {"unk_token", "<unk>"},
        {"pad_token", "<pad>"},
        {"add_bos_token", true},
        {"add_eos_token", false},
        {"clean_up_tokenization_spaces", true},
        {"model_max_length", 256},
    };
}

json configJson(const DemoModelShape& s, int64_t vocabSize) {
    return {
        {"architectures", json::array({"LlamaForCausalLM"})},
        {"model_type", "llama"},
        {"vocab_size", vocabSize},
        {"hidden_size", s.hiddenSize},
        {"intermediate_size", s.intermediateSize},
        {"num_hidden_layers", s.numLayers},
        {"num_attention_heads", s.numHeads},
        {"num_key_value_heads", s.numHeads},
        {"head_dim", s.headDim},
        {"hidden_act", "silu"},
        {"max_position_embeddings", s.maxPositionEmbeddings},
        {"rms_norm_eps", s.rmsNormEps},
        {"rope_theta", s.ropeTheta},
        {"rope_scaling", nullptr},
        {"attention_bias", false},
        {"attention_dropout", 0.0},
        {"mlp_bias", false},
        {"initializer_range", 0.02},
        {"pretraining_tp", 1},
        {"tie_word_embeddings", true},
        {"use_cache", true},
        {"bos_token_id", kBosId},
        {"eos_token_id", kEosId},
        {"pad_token_id", kPadId},
        {"torch_dtype", "float32"},
    };
}

// ---------------------------------------------------------------------------------------------------------
// Deterministic random numbers (std::uniform_int_distribution differs between standard libraries)

class Rng {
public:
    explicit Rng(uint64_t seed) : gen_(seed) {}
    /// Uniform in [0, n), by rejection.
    int64_t below(int64_t n) {
        const uint64_t un = static_cast<uint64_t>(n);
        const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % un;
        uint64_t x;
        do x = gen_();
        while (x >= limit);
        return static_cast<int64_t>(x % un);
    }
    int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }  ///< uniform in [lo, hi]
    /// `k` distinct values of `pool`, in random order (partial Fisher-Yates on a copy).
    std::vector<int64_t> distinct(std::vector<int64_t> pool, int64_t k) {
        const int64_t n = static_cast<int64_t>(pool.size());
        for (int64_t i = 0; i < k; ++i) std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(i + below(n - i))]);
        pool.resize(static_cast<size_t>(k));
        return pool;
    }

private:
    std::mt19937_64 gen_;
};

/// One training batch: ids [B, T] and a float mask [B, T - 1] of the targets only induction can predict.
struct TrainBatch {
    torch::Tensor ids;
    torch::Tensor copyMask;
};

/// What the rows of a batch hold. Every row is BOS, then segments until the row is full: a few random words, a run
/// of random words, `inner` random words, the same run again; when a run no longer fits, random words to the end.
struct RowMix {
    double longRows;   ///< fraction of rows whose runs are long (20-32 words, nothing between the two occurrences)
    int64_t minRun;    ///< the other rows: runs of minRun..maxRun words,
    int64_t maxRun;
    int64_t maxInner;  ///< 0..maxInner random words between the two occurrences
};

/// Phase 1 (the first quarter of the steps): long runs only, the signal that forms the circuit fastest.
constexpr RowMix kFormationMix{1.0, 20, 32, 0};
/// Phase 2: short runs too (2 words and up, apart), so the circuit serves any repeat, e.g. a typed phrase.
constexpr RowMix kGeneralMix{0.3, 2, 24, 6};
/// The loss weight of the targets that are not a repeated run's predictable tokens.
constexpr double kNoiseWeight = 0.05;

TrainBatch makeBatch(Rng& rng, const std::vector<int64_t>& words, int batch, int seqLen, const RowMix& mix) {
    std::vector<int64_t> ids(static_cast<size_t>(batch) * seqLen);
    std::vector<float> mask(static_cast<size_t>(batch) * (seqLen - 1), 0.0f);
    const int64_t nWords = static_cast<int64_t>(words.size());
    auto word = [&] { return words[static_cast<size_t>(rng.below(nWords))]; };
    for (int b = 0; b < batch; ++b) {
        const bool longRow = rng.below(1000) < static_cast<int64_t>(mix.longRows * 1000);
        const int64_t minRun = longRow ? 20 : mix.minRun, maxRun = longRow ? 32 : mix.maxRun;
        const int64_t maxInner = longRow ? 0 : mix.maxInner;
        int64_t* row = ids.data() + static_cast<size_t>(b) * seqLen;
        float* m = mask.data() + static_cast<size_t>(b) * (seqLen - 1);
        int64_t t = 0;
        row[t++] = kBosId;
        auto randomWords = [&](int64_t n) {
            for (int64_t i = 0; i < n && t < seqLen; ++i) row[t++] = word();
        };
        while (t < seqLen) {
            randomWords(rng.between(0, 3));
            const int64_t inner = rng.between(0, maxInner);
            const int64_t room = (seqLen - t - inner) / 2;
            if (room < minRun) {
                randomWords(seqLen - t);
                break;
            }
            // Words drawn with replacement: a run may hold a word twice, as text does.
            std::vector<int64_t> run(static_cast<size_t>(rng.between(minRun, std::min(maxRun, room))));
            for (auto& w : run) w = word();
            for (int64_t w : run) row[t++] = w;
            randomWords(inner);
            // Target position p (predicted at p - 1) is a copy when it lies in the second occurrence after its first token.
            for (size_t i = 0; i < run.size(); ++i) {
                if (i > 0) m[t - 1] = 1.0f;
                row[t++] = run[i];
            }
        }
    }
    TrainBatch out;
    out.ids = torch::from_blob(ids.data(), {batch, seqLen}, torch::kInt64).clone();
    out.copyMask = torch::from_blob(mask.data(), {batch, seqLen - 1}, torch::kFloat32).clone();
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// The trainable Llama's parameters. The pass is the engine's own (Model::fromTensors over these very tensors, so
// autograd reaches them and the optimizer's in-place steps are what the next pass reads): one forward for training,
// tracing and the tests.

struct TrainModel {
    /// HF names and tensors, named by the Llama family's weight schema (core/model/weights.h): embed_tokens, then block by
    /// block, the final norm last (lm_head is embed_tokens: tie_word_embeddings).
    std::vector<std::pair<std::string, torch::Tensor>> tensors;

    const std::vector<std::pair<std::string, torch::Tensor>>& named() const { return tensors; }
};

/// Weights drawn from the global torch generator (seeded by the caller) in the schema's order: matrices from
/// N(0, 0.02) as HF's _init_weights, o_proj and down_proj scaled by 1/sqrt(2 * layers), norm gains 1.
/// lm_head is tied to embed_tokens: then W_U W_E starts near a scaled identity and the copying (OV) circuit an
/// induction head needs is easy to reach; untied, it sat on its loss plateau for over 1500 steps (docs/DEMO.md).
TrainModel initModel(const DemoModelShape& s, int64_t vocab) {
    TrainModel m;
    const double std = 0.02, outStd = std / std::sqrt(2.0 * static_cast<double>(s.numLayers));
    const ModelConfig config = resolveModelConfig(configJson(s, vocab), "train-demo (config)");
    std::vector<std::pair<std::string, torch::Tensor>> rootAfter;  // the final norm, written after the blocks
    for (const WeightSpec& spec : weightSchema(llamaFamily(), config)) {
        torch::Tensor t;
        if (spec.shape.size() == 1) {
            t = torch::ones(spec.shape);  // a norm's gain
        } else {
            const bool out = spec.key.module == Module::OProj || spec.key.module == Module::DownProj;
            t = torch::randn(spec.shape) * (out ? outStd : std);
        }
        t.requires_grad_(true);
        if (spec.layer < 0 && spec.key.module != Module::EmbedTokens) rootAfter.emplace_back(spec.name, t);
        else m.tensors.emplace_back(spec.name, t);
    }
    m.tensors.insert(m.tensors.end(), rootAfter.begin(), rootAfter.end());
    return m;
}

/// Restores libtorch's thread count when it goes out of scope.
class ThreadGuard {
public:
    explicit ThreadGuard(int threads) : previous_(at::get_num_threads()) { configureThreads(threads); }
    ~ThreadGuard() { at::set_num_threads(previous_); }

private:
    int previous_;
};

const std::set<std::string>& demoFileNames() {
    static const std::set<std::string> names = {"config.json", "model.safetensors", "tokenizer.json",
                                                "tokenizer_config.json", "README.md", "generation_config.json",
                                                "special_tokens_map.json", kDemoDictionaryFolder};
    return names;
}

/// Throws unless `dir` is absent, empty, or holds only files a demo folder has (so replacing it loses nothing else).
void checkReplaceable(const fs::path& dir) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return;
    if (!fs::is_directory(dir, ec))
        throw Error(dir.string() + " exists and is not a folder; give train-demo --out a new or demo folder.");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !demoFileNames().count(name))
            throw Error(dir.string() + " already holds " + name +
                        ", which a demo model folder does not have; train-demo replaces only an empty or demo folder, "
                        "so give --out a new folder.");
    }
    if (ec) throw Error(dir.string() + ": cannot list the folder (" + ec.message() + ").");
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string scoreTable(const std::vector<std::vector<double>>& scores) {
    std::ostringstream s;
    const size_t heads = scores.empty() ? 0 : scores[0].size();
    s << "| layer |";
    for (size_t h = 0; h < heads; ++h) s << " head " << h << " |";
    s << "\n|---|";
    for (size_t h = 0; h < heads; ++h) s << "---|";
    s << "\n";
    for (size_t l = 0; l < scores.size(); ++l) {
        s << "| " << l << " |";
        for (double v : scores[l]) s << " " << fixed(v, 3) << " |";
        s << "\n";
    }
    return s.str();
}

/// (layer, head) of the largest score of `layer` (layer < 0: of any layer).
std::pair<size_t, size_t> bestHead(const std::vector<std::vector<double>>& scores, int layer) {
    std::pair<size_t, size_t> best{0, 0};
    double value = -1;
    for (size_t l = 0; l < scores.size(); ++l) {
        if (layer >= 0 && l != static_cast<size_t>(layer)) continue;
        for (size_t h = 0; h < scores[l].size(); ++h)
            if (scores[l][h] > value) {
                value = scores[l][h];
                best = {l, h};
            }
    }
    return best;
}

std::string readmeText(const DemoTrainOptions& o, const DemoTrainResult& r, int64_t vocab) {
    std::ostringstream s;
    const DemoModelShape& m = o.shape;
    const int64_t words = vocab - kDemoFirstWordId;
    s << "# nnscope demo model\n\n"
      << "A small LlamaForCausalLM that nnscope trained itself (`nnscope train-demo`, core/run/train_demo.cpp) on random\n"
      << "word runs that repeat, so that an **induction circuit** forms: a previous-token head in layer 0 and, in layer 1,\n"
      << "induction heads that attend from the second occurrence of a word to the word that followed its first\n"
      << "occurrence, and predict it. See docs/DEMO.md.\n\n"
      << "## How it was made\n\n"
      << "```\n" << (o.commandLine.empty() ? "nnscope train-demo --out DIR --seed " + std::to_string(o.seed) : o.commandLine)
      << "\n```\n\n"
      << "- seed " << o.seed << " (weights: torch::manual_seed; data: std::mt19937_64), " << o.steps << " AdamW steps of "
      << o.batchSize << " rows x " << o.seqLen << " tokens,\n  peak learning rate " << o.learningRate
      << " (warm-up, held to half-way, cosine to a tenth), " << r.threads << (r.threads == 1 ? " libtorch thread\n" : " libtorch threads\n")
      << "- rows: `<s>`, then segments: 0-3 random words, a run of random words, the same run again. The first quarter\n"
      << "  of the steps uses runs of 20-32 words; then 30% of the rows keep those and the others hold runs of 2-24 words\n"
      << "  with 0-6 random words between the two occurrences. The loss is next-token cross-entropy, the tokens that\n"
      << "  nothing in the context predicts weighted " << kNoiseWeight << "\n"
      << "- " << m.numLayers << " layers, hidden " << m.hiddenSize << ", " << m.numHeads << " heads of " << m.headDim
      << ", MLP " << m.intermediateSize << " (silu, gated), RMSNorm, rotary theta " << m.ropeTheta
      << ", lm_head tied to embed_tokens,\n  vocabulary " << vocab << " (" << words
      << " words and punctuation marks, 4 special tokens), " << r.parameters << " parameters, float32\n"
      << "- training took " << fixed(r.trainSeconds, 1) << " s; last " << o.reportEvery << " steps: loss "
      << fixed(r.finalLoss, 3) << " nats/token on all tokens,\n  " << fixed(r.finalCopyLoss, 3)
      << " on the predictable tokens of repeated runs (a random word costs ln(" << words << ") = "
      << fixed(std::log(static_cast<double>(words)), 2) << ")\n\n";
    if (r.eval) {
        const InductionEval& e = *r.eval;
        const auto prev = bestHead(e.previousTokenScores, 0);
        const auto ind = bestHead(e.scores, static_cast<int>(e.scores.size()) - 1);
        s << "## Measured\n\n"
          << "Loaded back through nnscope's Model::load and traced (`nnscope::evaluateInduction`) on " << e.sequences
          << " held-out rows\nof " << e.rowLength << " tokens: `<s>`, random words, a run of " << e.minRunLength << "-"
          << e.maxRunLength << " distinct random words, the same run again, random words\n(rows seeded with " << e.seed
          << ").\n\n"
          << "- loss on the first occurrence of the run: " << fixed(e.firstHalfLoss, 3) << " nats/token\n"
          << "- loss on the second occurrence: " << fixed(e.secondHalfLoss, 3) << " nats/token\n"
          << "- previous-token head: layer " << prev.first << " head " << prev.second << " ("
          << fixed(e.previousTokenScores[prev.first][prev.second], 3) << "); induction head: layer " << ind.first << " head "
          << ind.second << " (" << fixed(e.scores[ind.first][ind.second], 3) << ")\n\n"
          << "Induction score (mean attention from a token's second occurrence to the token after its first):\n\n"
          << scoreTable(e.scores) << "\n"
          << "Previous-token score (mean attention from each position to the one before it):\n\n"
          << scoreTable(e.previousTokenScores) << "\n";
    }
    s << "## Files\n\n"
      << "config.json, model.safetensors (HF tensor names, float32), tokenizer.json (HF `tokenizers` WordLevel:\n"
      << "lowercased, split on spaces and punctuation, `<s>` prepended; unknown words become `<unk>`),\n"
      << "tokenizer_config.json. HuggingFace transformers loads the folder as it is\n"
      << "(`AutoModelForCausalLM.from_pretrained`, `AutoTokenizer.from_pretrained`).\n";
    return s.str();
}

double elapsedSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<std::string> demoTrainingText(int rows, int seqLen, uint64_t seed) {
    if (rows < 1 || seqLen < 2) throw Error("demo training text: rows must be positive and at least 2 tokens long.");
    const auto& vocab = demoVocabulary();
    std::vector<int64_t> words;
    for (int64_t id = kDemoFirstWordId; id < static_cast<int64_t>(vocab.size()); ++id) words.push_back(id);
    Rng rng(seed);
    const TrainBatch b = makeBatch(rng, words, rows, seqLen, kGeneralMix);
    std::vector<std::string> lines;
    for (int r = 0; r < rows; ++r) {
        std::string line;
        for (int t = 1; t < seqLen; ++t)  // the BOS left out: the tokenizer adds it back
            line += (t > 1 ? " " : "") + vocab[static_cast<size_t>(b.ids[r][t].item<int64_t>())];
        lines.push_back(std::move(line));
    }
    return lines;
}

const std::vector<std::string>& demoVocabulary() {
    static const std::vector<std::string> vocab = [] {
        std::vector<std::string> v = {"<unk>", "<s>", "</s>", "<pad>"};
        std::set<std::string> seen(v.begin(), v.end());
        for (const char* w : kWords) {
            if (!seen.insert(w).second) throw Error(std::string("internal: the demo vocabulary lists \"") + w + "\" twice.");
            v.emplace_back(w);
        }
        return v;
    }();
    return vocab;
}

InductionEval evaluateInduction(const Model& model, const InductionEvalOptions& o) {
    const ModelConfig& c = model.config();
    std::optional<int64_t> bos = model.tokenizer() ? model.tokenizer()->bosId() : std::nullopt;
    if (!bos) bos = c.bosTokenId;
    if (!bos) throw Error(model.dir() + ": the induction measure needs a BOS token, and neither the tokenizer nor config.json names one.");
    const int64_t endId = o.endId > 0 ? std::min(o.endId, c.vocabSize) : c.vocabSize;
    std::vector<int64_t> pool;
    std::optional<int64_t> eos = model.tokenizer() ? model.tokenizer()->eosId() : c.eosTokenId;
    for (int64_t id = std::max<int64_t>(0, o.firstId); id < endId; ++id)
        if (id != *bos && (!eos || id != *eos)) pool.push_back(id);
    const int64_t minL = o.minRunLength, maxL = o.maxRunLength;
    if (minL < 2 || maxL < minL || o.sequences < 1 || o.maxPrefix < 0)
        throw Error("the induction measure needs 2 <= minRunLength <= maxRunLength, maxPrefix >= 0 and at least one sequence.");
    if (static_cast<int64_t>(pool.size()) < 2 * maxL)
        throw Error(model.dir() + ": the id range [" + std::to_string(o.firstId) + ", " + std::to_string(endId) +
                    ") has fewer than " + std::to_string(2 * maxL) + " ordinary tokens for the runs of the induction measure.");
    const int64_t T = 1 + 2 * maxL + o.maxPrefix;
    if (T > c.maxPositionEmbeddings)
        throw Error(model.dir() + ": the induction measure's rows of " + std::to_string(T) +
                    " tokens are longer than max_position_embeddings.");

    // Rows of T tokens: BOS, p random words, a run of L distinct words, the same run, random words to fill; the
    // filler never repeats a run word, so each run word's previous occurrence is unique.
    Rng rng(o.seed);
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> lossRow, lossPos, lossHalf, indRow, indQuery, indKey;
    for (int s = 0; s < o.sequences; ++s) {
        const int64_t L = rng.between(minL, maxL);
        const int64_t p = rng.between(0, T - 1 - 2 * L);
        auto run = rng.distinct(pool, L);
        const std::set<int64_t> inRun(run.begin(), run.end());
        auto filler = [&] {
            int64_t w;
            do w = pool[static_cast<size_t>(rng.below(static_cast<int64_t>(pool.size())))];
            while (inRun.count(w));
            return w;
        };
        std::vector<int64_t> row = {*bos};
        for (int64_t i = 0; i < p; ++i) row.push_back(filler());
        const int64_t first = static_cast<int64_t>(row.size()), second = first + L;
        row.insert(row.end(), run.begin(), run.end());
        row.insert(row.end(), run.begin(), run.end());
        while (static_cast<int64_t>(row.size()) < T) row.push_back(filler());
        for (int64_t j = 1; j < L; ++j) {  // targets run[1..L-1] of each occurrence (run[0] is unpredictable)
            lossRow.insert(lossRow.end(), {s, s});
            lossPos.insert(lossPos.end(), {first + j, second + j});
            lossHalf.insert(lossHalf.end(), {0, 1});
        }
        for (int64_t j = 0; j < L; ++j) {  // from the second occurrence of run[j] to the token after its first
            indRow.push_back(s);
            indQuery.push_back(second + j);
            indKey.push_back(first + j + 1);
        }
        rows.push_back(std::move(row));
    }
    Batch batch = batchFromIds(rows, c.padTokenId.value_or(0));
    TraceOptions to;
    to.save.push_back({Value::Logits, -1});
    for (int l = 0; l < c.numLayers; ++l) to.save.push_back({Value::AttentionProbabilities, l});
    TraceResult r = trace(model, batch, to);

    InductionEval e;
    e.seed = o.seed;
    e.sequences = o.sequences;
    e.minRunLength = static_cast<int>(minL);
    e.maxRunLength = static_cast<int>(maxL);
    e.rowLength = static_cast<int>(T);
    auto asTensor = [](const std::vector<int64_t>& v) { return torch::tensor(v, torch::TensorOptions().dtype(torch::kInt64)); };
    // Target at position q is predicted by the logits at q - 1.
    auto logp = torch::log_softmax(r.value({Value::Logits, -1}).to(torch::kFloat64), -1);  // [S, T, V]
    auto rowsT = asTensor(lossRow), posT = asTensor(lossPos), half = asTensor(lossHalf);
    auto targets = batch.inputIds.index({rowsT, posT});
    auto nll = -logp.index({rowsT, posT - 1}).gather(-1, targets.unsqueeze(-1)).squeeze(-1);  // [N]
    e.firstHalfLoss = nll.index({half == 0}).mean().item<double>();
    e.secondHalfLoss = nll.index({half == 1}).mean().item<double>();
    auto iRow = asTensor(indRow), iQuery = asTensor(indQuery), iKey = asTensor(indKey);
    auto prevQ = torch::arange(1, T, torch::kInt64);
    for (int l = 0; l < c.numLayers; ++l) {
        auto pr = r.value({Value::AttentionProbabilities, l}).to(torch::kFloat64);  // [S, H, T, T]
        auto ind = pr.index({iRow, Slice(), iQuery, iKey}).mean(0).contiguous();    // [N, H] -> [H]
        auto prev = pr.index({Slice(), Slice(), prevQ, prevQ - 1}).mean(std::vector<int64_t>{0, 2}).contiguous();
        const double* pi = ind.data_ptr<double>();
        const double* pp = prev.data_ptr<double>();
        e.scores.emplace_back(pi, pi + ind.numel());
        e.previousTokenScores.emplace_back(pp, pp + prev.numel());
    }
    return e;
}

DemoTrainResult trainDemoModel(const DemoTrainOptions& o) {
    const auto t0 = std::chrono::steady_clock::now();
    if (o.outDir.empty()) throw Error("train-demo needs an output folder (--out DIR).");
    if (o.steps < 1) throw Error("train-demo needs at least one step (--steps), not " + std::to_string(o.steps) + ".");
    if (o.threads < 0) throw Error("train-demo --threads must be 0 (every core) or more, not " + std::to_string(o.threads) + ".");
    if (o.batchSize < 1 || o.seqLen < 18 || o.seqLen > o.shape.maxPositionEmbeddings)
        throw Error("train-demo needs a batch of at least 1 row and rows of 18 to " +
                    std::to_string(o.shape.maxPositionEmbeddings) + " tokens.");
    const DemoModelShape& shape = o.shape;
    if (shape.headDim % 2 != 0 || shape.numLayers < 1 || shape.numHeads < 1 || shape.hiddenSize < 1 || shape.intermediateSize < 1)
        throw Error("train-demo: the model shape needs positive sizes and an even head_dim.");
    const fs::path out = fs::absolute(fs::path(o.outDir)).lexically_normal();
    const fs::path outPath = out.filename().empty() ? out.parent_path() : out;
    checkReplaceable(outPath);

    ThreadGuard threadGuard(o.threads);
    c10::InferenceMode noInference(false);  // training needs autograd, whatever mode the caller runs in
    torch::AutoGradMode gradients(true);
    DemoTrainResult result;
    result.outDir = outPath.string();
    result.threads = at::get_num_threads();

    const auto& vocab = demoVocabulary();
    const int64_t V = static_cast<int64_t>(vocab.size());
    std::vector<int64_t> words;
    for (int64_t id = kDemoFirstWordId; id < V; ++id) words.push_back(id);

    torch::manual_seed(o.seed);
    TrainModel model = initModel(shape, V);
    std::vector<torch::Tensor> decay, noDecay;
    for (const auto& [name, t] : model.named()) {
        (t.dim() >= 2 ? decay : noDecay).push_back(t);
        result.parameters += t.numel();
    }
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions(o.learningRate).betas({0.9, 0.98}).weight_decay(0.01)));
    groups.emplace_back(noDecay, std::make_unique<torch::optim::AdamWOptions>(
                                     torch::optim::AdamWOptions(o.learningRate).betas({0.9, 0.98}).weight_decay(0.0)));
    torch::optim::AdamW optimizer(std::move(groups));
    std::vector<torch::Tensor> all = decay;
    all.insert(all.end(), noDecay.begin(), noDecay.end());
    std::map<std::string, torch::Tensor> parameters;
    for (const auto& [name, t] : model.named()) parameters.emplace(name, t);
    const auto net = Model::fromTensors(configJson(shape, V), std::move(parameters),
                                        LoadOptions().withDtype(torch::kFloat32).withTokenizer(false), "train-demo");

    Rng rng(o.seed);
    const int warmup = std::min(100, std::max(1, o.steps / 10));
    double lossSum = 0, copySum = 0, copyCount = 0;
    int lossCount = 0;
    for (int step = 1; step <= o.steps; ++step) {
        // Linear warm-up, the peak held to half-way, then a cosine down to a tenth of it.
        double lr;
        if (step <= warmup) {
            lr = o.learningRate * step / warmup;
        } else {
            const int holdEnd = std::max(warmup, o.steps / 2);
            const double progress = step <= holdEnd ? 0.0 : static_cast<double>(step - holdEnd) / std::max(1, o.steps - holdEnd);
            lr = o.learningRate * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * progress)));
        }
        for (auto& g : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
        TrainBatch b = makeBatch(rng, words, o.batchSize, o.seqLen, step <= o.steps / 4 ? kFormationMix : kGeneralMix);
        auto logits = net->forward(b.ids, torch::Tensor(), nullptr);
        auto input = logits.index({Slice(), Slice(None, -1)}).reshape({-1, V});
        auto target = b.ids.index({Slice(), Slice(1, None)}).reshape({-1});
        auto perToken = torch::nn::functional::cross_entropy(
            input, target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
        auto copyMask = b.copyMask.reshape({-1});
        // Tokens nothing can predict (random words, first occurrences) weigh kNoiseWeight: their gradients are noise
        // that would slow the circuit down (Adam scales every step by the gradient's size).
        auto weights = copyMask + (1.0 - copyMask) * kNoiseWeight;
        auto loss = (perToken * weights).sum() / weights.sum();
        auto plainLoss = perToken.detach().mean();
        optimizer.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(all, 1.0);
        optimizer.step();
        lossSum += plainLoss.item<double>();
        copySum += (perToken.detach() * copyMask).sum().item<double>();
        copyCount += copyMask.sum().item<double>();
        ++lossCount;
        if (step % std::max(1, o.reportEvery) == 0 || step == o.steps) {
            result.finalLoss = lossSum / lossCount;
            if (o.progress) {
                DemoTrainProgress p;
                p.step = step;
                p.steps = o.steps;
                p.loss = result.finalLoss;
                p.copyLoss = copyCount > 0 ? copySum / copyCount : 0.0;
                p.learningRate = lr;
                p.elapsedSeconds = elapsedSince(t0);
                o.progress(p);
            }
            result.finalCopyLoss = copyCount > 0 ? copySum / copyCount : 0.0;
            lossSum = copySum = copyCount = 0;
            lossCount = 0;
        }
    }
    result.trainSeconds = elapsedSince(t0);

    // Write everything into a temporary sibling folder, check it loads, then move it into place.
    const fs::path parent = outPath.parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw Error(parent.string() + ": cannot create the folder for the demo model (" + ec.message() + ").");
    const std::string tag = std::to_string(static_cast<long long>(::getpid()));
    const fs::path tmp = parent / ("." + outPath.filename().string() + ".part-" + tag);
    const fs::path old = parent / ("." + outPath.filename().string() + ".old-" + tag);
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec) || ec)
        throw Error(tmp.string() + ": cannot create the temporary folder for the demo model (" + ec.message() + ").");
    try {
        std::vector<std::pair<std::string, torch::Tensor>> tensors;
        for (const auto& [name, t] : model.named()) tensors.emplace_back(name, t.detach().contiguous());
        writeSafetensors((tmp / "model.safetensors").string(), tensors,
                         {{"format", "pt"}, {"nnscope", std::string("train-demo seed ") + std::to_string(o.seed) +
                                                             " steps " + std::to_string(o.steps)}});
        writeFileAtomically((tmp / "config.json").string(), configJson(shape, V).dump(2) + "\n");
        writeFileAtomically((tmp / "tokenizer.json").string(), tokenizerJson().dump(2) + "\n");
        writeFileAtomically((tmp / "tokenizer_config.json").string(), tokenizerConfigJson().dump(2) + "\n");
        if (o.evaluate) {
            auto loaded = Model::load(tmp.string());
            InductionEvalOptions eo;
            eo.firstId = kDemoFirstWordId;
            result.eval = evaluateInduction(*loaded, eo);
        }
        result.totalSeconds = elapsedSince(t0);
        if (o.writeReadme) writeFileAtomically((tmp / "README.md").string(), readmeText(o, result, V));
        checkReplaceable(outPath);  // it may have changed while training
        if (fs::exists(outPath, ec)) {
            fs::rename(outPath, old, ec);
            if (ec) throw Error(outPath.string() + ": cannot move the older demo folder aside (" + ec.message() + ").");
        }
        fs::rename(tmp, outPath, ec);
        if (ec) {
            std::error_code ignored;
            if (fs::exists(old, ignored)) fs::rename(old, outPath, ignored);
            throw Error(outPath.string() + ": cannot move the new demo folder into place (" + ec.message() + ").");
        }
        fs::remove_all(old, ec);
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        throw;
    }
    result.totalSeconds = elapsedSince(t0);
    return result;
}

namespace {
/// `rows` fresh rows of the demo's general training mix (makeBatch with kGeneralMix, `seqLen` tokens each, BOS first)
/// traced on `model`, keeping `save`. Call it under InferenceMode.
TraceResult traceTrainingRows(const Model& model, Rng& rng, const std::vector<int64_t>& words, int rows, int seqLen,
                              std::vector<ValueKey> save) {
    const TrainBatch b = makeBatch(rng, words, rows, seqLen, kGeneralMix);
    std::vector<std::vector<int64_t>> ids;
    for (int r = 0; r < rows; ++r) {
        const torch::Tensor row = b.ids[r];
        ids.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
    }
    TraceOptions t;
    t.save = std::move(save);
    return trace(model, batchFromIds(ids), t);
}
}  // namespace

void requireDemoVocabulary(const std::string& modelDir, const std::string& command) {
    const std::string hint = ": " + command + " trains on the demo model's own data (random runs of its vocabulary's words), so it takes the "
                             "demo model (nnscope train-demo) alone; for another model, train a dictionary with SAELens, sparsify "
                             "or circuit-tracer and open it with --dictionary.";
    std::unique_ptr<Tokenizer> tok;
    try {
        tok = Tokenizer::load(modelDir);
    } catch (const Error& e) {
        throw Error(modelDir + ": not the demo model, its tokenizer cannot be read (" + e.what() + ")" + hint);
    }
    const auto& vocab = demoVocabulary();
    if (tok->vocabSize() != static_cast<int64_t>(vocab.size()))
        throw Error(modelDir + ": not the demo model (its tokenizer has " + std::to_string(tok->vocabSize()) + " tokens, the demo's " +
                    std::to_string(vocab.size()) + ")" + hint);
    for (int64_t id = 0; id < tok->vocabSize(); ++id)
        if (tok->tokenString(id) != vocab[static_cast<size_t>(id)])
            throw Error(modelDir + ": not the demo model (token " + std::to_string(id) + " is \"" + tok->tokenString(id) +
                        "\", the demo's \"" + vocab[static_cast<size_t>(id)] + "\")" + hint);
}

DemoDictionaryResult trainDemoDictionary(const DemoDictionaryOptions& o) {
    const auto t0 = std::chrono::steady_clock::now();
    if (o.outDir.empty()) throw Error("train-demo-sae needs an output folder (--out DIR).");
    if (o.steps < 1 || o.width < 1 || o.k < 1 || o.k > o.width || o.rows < 1 || o.seqLen < 2)
        throw Error("train-demo-sae: steps, width, rows and k must be positive (k at most the width), rows at least 2 tokens long.");
    requireDemoVocabulary(o.modelDir, "train-demo-sae");
    ThreadGuard threadGuard(o.threads);
    auto model = Model::load(o.modelDir, LoadOptions().withDtype(torch::kFloat32).withTokenizer(false));
    if (o.layer < 0 || o.layer >= model->config().numLayers)
        throw Error("train-demo-sae: block " + std::to_string(o.layer) + " is not one of " + o.modelDir + "'s " +
                    std::to_string(model->config().numLayers) + ".");
    const int64_t V = model->config().vocabSize, H = model->config().hiddenSize;
    std::vector<int64_t> words;
    for (int64_t id = kDemoFirstWordId; id < V; ++id) words.push_back(id);
    Rng rng(o.seed);
    const ValueKey site{Value::LayerOutput, o.layer};
    // Activations of rows of the demo's data at the site, BOS left out: [rows * (seqLen - 1), hidden].
    auto activations = [&](int rows) {
        c10::InferenceMode guard;
        const TraceResult result = traceTrainingRows(*model, rng, words, rows, o.seqLen, {site});
        return result.value(site).index({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None)}).reshape({-1, H}).clone();
    };

    c10::InferenceMode noInference(false);
    torch::AutoGradMode gradients(true);
    torch::manual_seed(o.seed);
    const torch::Tensor first = activations(o.rows);
    torch::Tensor wDec = torch::randn({o.width, H});
    wDec = wDec / wDec.norm(2, -1, true);
    torch::Tensor wEnc = wDec.t().clone().requires_grad_(true);
    wDec.requires_grad_(true);
    torch::Tensor bEnc = torch::zeros({o.width}).requires_grad_(true);
    torch::Tensor bDec = first.mean(0).clone().requires_grad_(true);
    torch::optim::Adam optimizer({wEnc, bEnc, wDec, bDec}, torch::optim::AdamOptions(o.learningRate));
    auto encode = [&](const torch::Tensor& x) {
        const torch::Tensor pre = torch::matmul(x - bDec, wEnc) + bEnc;
        auto [values, indices] = pre.topk(o.k, -1);
        return torch::zeros_like(pre).scatter(-1, indices, torch::relu(values));
    };
    for (int step = 1; step <= o.steps; ++step) {
        const torch::Tensor x = step == 1 ? first : activations(o.rows);
        const torch::Tensor loss = (torch::matmul(encode(x), wDec) + bDec - x).pow(2).mean();
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        torch::NoGradGuard noGrad;
        wDec.div_(wDec.norm(2, -1, true));  // unit-norm decoder rows, as TopK SAEs are trained
    }

    DemoDictionaryResult r;
    {
        torch::NoGradGuard noGrad;
        const torch::Tensor x = activations(4 * o.rows);
        const torch::Tensor f = encode(x);
        const torch::Tensor err = torch::matmul(f, wDec) + bDec - x;
        r.explainedVariance = 1.0 - err.pow(2).sum().item<double>() / (x - x.mean(0)).pow(2).sum().item<double>();
        r.meanL0 = (f > 0).sum(-1).to(torch::kFloat64).mean().item<double>();
        r.deadFeatures = ((f > 0).sum(0) == 0).sum().item<int64_t>();
    }
    fs::create_directories(o.outDir);
    const nlohmann::json cfg = {
        {"architecture", "topk"}, {"d_in", H}, {"d_sae", o.width}, {"k", o.k}, {"dtype", "float32"}, {"device", "cpu"},
        {"apply_b_dec_to_input", true}, {"normalize_activations", "none"}, {"reshape_activations", "none"},
        {"rescale_acts_by_decoder_norm", false},
        {"metadata", {{"model_name", "nnscope demo model"}, {"hook_name", "blocks." + std::to_string(o.layer) + ".hook_resid_post"},
                      {"hook_head_index", nullptr}, {"prepend_bos", true}, {"context_size", o.seqLen},
                      {"dataset_path", "nnscope train-demo's random word runs"},
                      {"sae_lens_training_version", nullptr}, {"trained_by", "nnscope train-demo-sae"},
                      {"seed", o.seed}, {"steps", o.steps}}}};
    writeFileAtomically((fs::path(o.outDir) / "cfg.json").string(), cfg.dump(2) + "\n");
    writeSafetensors((fs::path(o.outDir) / "sae_weights.safetensors").string(),
                     {{"W_enc", wEnc.detach().contiguous()}, {"b_enc", bEnc.detach().contiguous()}, {"W_dec", wDec.detach().contiguous()},
                      {"b_dec", bDec.detach().contiguous()}},
                     {{"format", "pt"}});
    r.outDir = o.outDir;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}


DemoTranscoderResult trainDemoTranscoders(const DemoTranscoderOptions& o) {
    const auto t0 = std::chrono::steady_clock::now();
    if (o.outDir.empty()) throw Error("train-demo-transcoders needs an output folder (--out DIR).");
    if (o.steps < 1 || o.width < 1 || o.rows < 1 || o.seqLen < 2 || !(o.l1 >= 0) || !(o.learningRate > 0))
        throw Error("train-demo-transcoders: steps, width and rows must be positive, rows at least 2 tokens long, the L1 weight "
                    "not negative and the learning rate positive.");
    requireDemoVocabulary(o.modelDir, "train-demo-transcoders");
    ThreadGuard threadGuard(o.threads);
    auto model = Model::load(o.modelDir, LoadOptions().withDtype(torch::kFloat32).withTokenizer(false));
    const int64_t V = model->config().vocabSize, H = model->config().hiddenSize;
    const int L = static_cast<int>(model->config().numLayers);
    std::vector<int64_t> words;
    for (int64_t id = kDemoFirstWordId; id < V; ++id) words.push_back(id);
    Rng rng(o.seed);
    // Per layer, the pairs (mlp_input, mlp_output) of rows of the demo's data, BOS left out: [rows * (seqLen - 1), hidden].
    // (Copied out of inference mode: autograd saves the inputs of the products.)
    auto pairs = [&](int rows) {
        std::vector<std::pair<torch::Tensor, torch::Tensor>> inference;
        {
            c10::InferenceMode guard;
            std::vector<ValueKey> save;
            for (int l = 0; l < L; ++l) save.insert(save.end(), {ValueKey{Value::MlpInput, l}, ValueKey{Value::MlpOutput, l}});
            const TraceResult result = traceTrainingRows(*model, rng, words, rows, o.seqLen, save);
            auto noBos = [&](const ValueKey& key) {
                return result.value(key).index({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None)}).reshape({-1, H});
            };
            for (int l = 0; l < L; ++l) inference.emplace_back(noBos({Value::MlpInput, l}), noBos({Value::MlpOutput, l}));
        }
        std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
        for (const auto& [x, y] : inference) out.emplace_back(x.clone(), y.clone());
        return out;
    };

    c10::InferenceMode noInference(false);
    torch::AutoGradMode gradients(true);
    torch::manual_seed(o.seed);
    const auto first = pairs(o.rows);
    // Training runs in standardised units (the blocks' scales differ by orders of magnitude: the demo's layer-1 MLP
    // writes vectors of norm ~80, layer 0's ~0.3): x̃ = x / ρ (ρ the input's root mean square per channel), ỹ = (y - μ) / σ
    // (μ the output's mean, σ its standard deviation per channel, both from the first batch). The scales are folded into
    // the weights written at the end, so the features are the same.
    struct Params { torch::Tensor wEnc, bEnc, wDec, bDec; double rho = 1, sigma = 1; torch::Tensor mu; };
    std::vector<Params> params;
    std::vector<torch::Tensor> all;
    for (int l = 0; l < L; ++l) {
        const auto& [x, y] = first[l];
        Params p;
        p.rho = x.pow(2).mean().sqrt().item<double>();
        p.mu = y.mean(0);
        p.sigma = (y - p.mu).pow(2).mean().sqrt().item<double>();
        if (!(p.rho > 0) || !(p.sigma > 0))
            throw Error("train-demo-transcoders: block " + std::to_string(l) + "'s MLP input or output is constant on the training rows.");
        // Encoder rows random with unit-variance pre-activations, decoder rows at norm 0.1 (as in Anthropic's April 2024
        // update), biases at zero.
        p.wEnc = (torch::randn({o.width, H}) / std::sqrt(static_cast<double>(H))).requires_grad_(true);
        p.wDec = torch::randn({o.width, H});
        p.wDec = (p.wDec / p.wDec.norm(2, -1, true) * 0.1).requires_grad_(true);
        p.bEnc = torch::zeros({o.width}).requires_grad_(true);
        p.bDec = torch::zeros({H}).requires_grad_(true);
        all.insert(all.end(), {p.wEnc, p.bEnc, p.wDec, p.bDec});
        params.push_back(p);
    }
    torch::optim::Adam optimizer(all, torch::optim::AdamOptions(o.learningRate));
    for (int step = 1; step <= o.steps; ++step) {
        const auto batch = step == 1 ? first : pairs(o.rows);
        // The penalty ramps up over the first 5% of steps so that features form before they are pushed to zero.
        const double l1 = o.l1 * std::min(1.0, step / (0.05 * o.steps));
        torch::Tensor loss = torch::zeros({});
        for (int l = 0; l < L; ++l) {
            const Params& p = params[l];
            const torch::Tensor x = batch[l].first / p.rho, y = (batch[l].second - p.mu) / p.sigma;
            const torch::Tensor f = torch::relu(torch::matmul(x, p.wEnc.t()) + p.bEnc);
            const torch::Tensor yHat = torch::matmul(f, p.wDec) + p.bDec;
            loss = loss + (yHat - y).pow(2).mean() + l1 * (f * p.wDec.norm(2, -1)).sum(-1).mean();
        }
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
    }

    DemoTranscoderResult r;
    fs::create_directories(o.outDir);
    {
        torch::NoGradGuard noGrad;
        const auto held = pairs(4 * o.rows);
        for (int l = 0; l < L; ++l) {
            const auto& [x, y] = held[l];
            const Params& p = params[l];
            // The weights in the model's units: W_enc / ρ, σ W_dec, σ b_dec + μ.
            const torch::Tensor wEnc = p.wEnc.detach() / p.rho, wDec = p.wDec.detach() * p.sigma, bDec = p.bDec.detach() * p.sigma + p.mu;
            const torch::Tensor f = torch::relu(torch::matmul(x, wEnc.t()) + p.bEnc);
            const torch::Tensor err = torch::matmul(f, wDec) + bDec - y;
            r.explainedVariance.push_back(1.0 - err.pow(2).sum().item<double>() / (y - y.mean(0)).pow(2).sum().item<double>());
            r.meanL0.push_back((f > 0).sum(-1).to(torch::kFloat64).mean().item<double>());
            r.deadFeatures.push_back(((f > 0).sum(0) == 0).sum().item<int64_t>());
            writeSafetensors((fs::path(o.outDir) / ("layer_" + std::to_string(l) + ".safetensors")).string(),
                             {{"W_enc", wEnc.contiguous()}, {"b_enc", p.bEnc.detach().contiguous()}, {"W_dec", wDec.contiguous()},
                              {"b_dec", bDec.contiguous()}},
                             {{"format", "pt"}});
        }
    }
    std::ostringstream yaml;
    yaml << "# A circuit-tracer transcoder set, trained by `nnscope train-demo-transcoders` (seed " << o.seed << ", " << o.steps
         << " steps, width " << o.width << ", L1 " << o.l1 << ") on the demo model's own training data.\n"
         << "model_name: nnscope demo model\n"
         << "model_kind: transcoder_set\n"
         << "feature_input_hook: mlp.hook_in\n"
         << "feature_output_hook: mlp.hook_out\n"
         << "scan: nnscope-demo-transcoders\n";
    writeFileAtomically((fs::path(o.outDir) / "config.yaml").string(), yaml.str());
    r.outDir = o.outDir;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace nnscope
