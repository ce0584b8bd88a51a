// SPDX-License-Identifier: MIT
#pragma once
// Generation: greedy or sampled decoding, stopping on every end-of-sequence id the checkpoint names, with the same
// interventions a trace applies (edits, steering, skipped blocks) applied at every step.
#include "core/run/edit.h"
#include "core/model/model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnscope {

/// How to generate. The defaults are transformers' GenerationConfig defaults; generationDefaults() starts from the
/// checkpoint's generation_config.json instead.
struct GenerateOptions {
    int maxNewTokens = 32;                 ///< tokens to add at most
    bool stopAtEos = true;                 ///< stop at the first id of `eosTokenIds`
    std::vector<int64_t> eosTokenIds;      ///< ids that end the text (see stopTokenIds)
    bool sample = false;                   ///< sample from the distribution instead of taking the argmax
    double temperature = 1.0;              ///< logits / temperature before top-k, top-p and sampling (> 0)
    int64_t topK = 0;                      ///< keep the k most probable tokens (0: all)
    double topP = 1.0;                     ///< keep the smallest set of tokens whose probability reaches top_p (1: all)
    uint64_t seed = 0;                     ///< the sampler's seed: the same seed gives the same tokens
    /// Edits applied at every step, to the prompt and the new tokens alike; positions count from the prompt
    /// (PassPositions: -1 is the prompt's last token, `new` every generated one). Null: none. With an intervention
    /// each step is one full pass over prompt + new tokens (what an edit of the whole pass means); without, the prompt
    /// runs once and each new token against the key/value cache.
    std::shared_ptr<const Intervention> intervention;
    const std::atomic<bool>* cancel = nullptr;  ///< when true, generation stops (nnscope::Cancelled)
};

/// The end-of-sequence ids of `model`: generation_config.json's eos_token_id (one id or a list) where the folder has
/// one, else config.json's, else the tokenizer's EOS. Empty when none names one.
std::vector<int64_t> stopTokenIds(const Model& model);

/// Options filled from the checkpoint: eos ids (stopTokenIds), do_sample, temperature, top_k, top_p and
/// max_new_tokens of generation_config.json where present (transformers' defaults elsewhere: greedy, 32 new tokens
/// here since transformers' max_length 20 counts the prompt).
GenerateOptions generationDefaults(const Model& model);

/// What generate() made.
struct Generation {
    std::vector<int64_t> ids;   ///< the prompt's ids followed by the new ones
    int64_t promptLength = 0;   ///< how many of `ids` are the prompt
    std::string stopReason;     ///< "eos" (an id of eosTokenIds was made; it is kept in ids) or "max_new_tokens"
};

/// Generates up to options.maxNewTokens tokens after `prompt` (ids, BOS included as the tokenizer adds it).
/// Greedy: the argmax of the last position's logits (transformers' greedy search). Sampled: logits / temperature, then
/// top-k, then top-p (transformers' TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, in that order),
/// softmax in float32 and one multinomial draw from a generator seeded with options.seed.
/// Throws nnscope::Error for an empty prompt, temperature <= 0, top_p outside (0, 1], a context longer than
/// max_position_embeddings; nnscope::Cancelled on cancel.
Generation generate(const Model& model, const std::vector<int64_t>& prompt, const GenerateOptions& options);

/// The next token from `logits` [vocab_size] (any float dtype) under the options' sampling settings (argmax when not
/// sampling). `generator` must be a CPU generator; used only when sampling.
int64_t chooseNextToken(const torch::Tensor& logits, const GenerateOptions& options, at::Generator& generator);

}  // namespace nnscope
