// SPDX-License-Identifier: MIT
#include "core/run/generate.h"

#include "core/model/device.h"

#include "core/model/error.h"
#include "core/run/trace.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>

using namespace torch::indexing;

namespace nnscope {

std::vector<int64_t> stopTokenIds(const Model& model) {
    const ModelConfig& c = model.config();
    if (c.generation.present && !c.generation.eosTokenIds.empty()) return c.generation.eosTokenIds;
    if (!c.eosTokenIds.empty()) return c.eosTokenIds;
    if (model.tokenizer() && model.tokenizer()->eosId()) return {*model.tokenizer()->eosId()};
    return {};
}

GenerateOptions generationDefaults(const Model& model) {
    GenerateOptions o;
    o.eosTokenIds = stopTokenIds(model);
    const GenerationConfig& g = model.config().generation;
    if (g.present) {
        o.sample = g.doSample;
        o.temperature = g.temperature;
        o.topK = g.topK;
        o.topP = g.topP;
        if (g.maxNewTokens) o.maxNewTokens = static_cast<int>(std::min<int64_t>(*g.maxNewTokens, 1 << 20));
    } else {
        o.topK = 50;  // GenerationConfig's default top_k, used only when sampling is asked for
    }
    return o;
}

int64_t chooseNextToken(const torch::Tensor& logitsIn, const GenerateOptions& o, at::Generator& generator) {
    if (!o.sample) return logitsIn.argmax().item<int64_t>();
    // Sampled on the CPU, with the CPU generator, whatever device computed the logits: one row of vocab_size values, and
    // the same seed draws the same tokens on the CPU and on a GPU.
    torch::Tensor logits = toHost(logitsIn).to(torch::kFloat32).reshape({-1}) / o.temperature;
    const float lowest = -std::numeric_limits<float>::infinity();
    const int64_t vocab = logits.size(0);
    if (o.topK > 0 && o.topK < vocab) {
        // TopKLogitsWarper: remove every logit below the k-th largest
        const torch::Tensor kth = std::get<0>(logits.topk(o.topK)).index({-1});
        logits = logits.masked_fill(logits < kth, lowest);
    }
    if (o.topP < 1.0) {
        // TopPLogitsWarper: sort ascending, drop the tokens whose cumulative probability stays <= 1 - top_p, keep >= 1
        auto [sorted, order] = logits.sort(/*dim=*/-1, /*descending=*/false);
        torch::Tensor cumulative = sorted.softmax(-1).cumsum(-1);
        torch::Tensor remove = cumulative <= (1.0 - o.topP);
        remove.index_put_({-1}, false);
        logits = logits.masked_fill(remove.scatter(0, order, remove), lowest);
    }
    const torch::Tensor probs = logits.softmax(-1);
    return torch::multinomial(probs, 1, /*replacement=*/false, generator).item<int64_t>();
}

Generation generate(const Model& model, const std::vector<int64_t>& prompt, const GenerateOptions& o) {
    c10::InferenceMode guard;
    if (prompt.empty()) throw Error("generate needs at least one token to start from.");
    if (o.maxNewTokens < 0) throw Error("generate: the number of new tokens must be >= 0.");
    if (o.sample && (!std::isfinite(o.temperature) || o.temperature <= 0))
        throw Error("generate: the temperature must be a positive number (greedy decoding takes no temperature).");
    if (o.sample && (!std::isfinite(o.topP) || o.topP <= 0 || o.topP > 1)) throw Error("generate: top_p must be in (0, 1].");
    if (o.topK < 0) throw Error("generate: top_k must be >= 0.");
    const int64_t context = model.config().maxPositionEmbeddings;
    const int64_t promptLength = static_cast<int64_t>(prompt.size());
    if (context > 0 && promptLength + o.maxNewTokens > context)
        throw Error("the prompt's " + std::to_string(promptLength) + " tokens + " + std::to_string(o.maxNewTokens) +
                    " new tokens exceed max_position_embeddings " + std::to_string(context) + " of " + model.dir() +
                    " (the model was not trained on longer contexts).");
    Generation out;
    out.ids = prompt;
    out.promptLength = promptLength;
    out.stopReason = "max_new_tokens";
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(o.seed);
    const auto isEos = [&](int64_t id) {
        return o.stopAtEos && std::find(o.eosTokenIds.begin(), o.eosTokenIds.end(), id) != o.eosTokenIds.end();
    };
    const auto ids = [](const std::vector<int64_t>& v) { return torch::tensor(v, torch::TensorOptions().dtype(torch::kInt64)).unsqueeze(0); };
    if (o.intervention) {
        // One full pass per step, the intervention applied to the whole pass with positions counted from the prompt.
        TraceOptions run;
        run.intervention = o.intervention;
        run.save = {{Value::Logits, -1}};
        run.cancel = o.cancel;
        run.promptLengths = {promptLength};
        for (int step = 0; step < o.maxNewTokens; ++step) {
            if (o.cancel && o.cancel->load()) throw Cancelled{};
            const TraceResult r = trace(model, batchFromIds({out.ids}), run);
            const int64_t next = chooseNextToken(r.value({Value::Logits, -1}).index({0, -1}), o, generator);
            out.ids.push_back(next);
            if (isEos(next)) {
                out.stopReason = "eos";
                break;
            }
        }
        return out;
    }
    // The prompt once, then one token per step against the key/value cache (transformers' generate with use_cache).
    KvCache cache;
    torch::Tensor input = ids(out.ids);
    // Phi-3's longrope: the step whose sequence first reaches original_max_position_embeddings + 1 tokens starts over
    // without the cache (prepare_inputs_for_generation), so every key is rotated with the long factor from then on.
    const RopeTables& rope = model.rope();
    const bool longRopeSwitch = model.family().longRopeRecomputesCache && rope.invFreqLong.defined();
    for (int step = 0; step < o.maxNewTokens; ++step) {
        if (o.cancel && o.cancel->load()) throw Cancelled{};
        if (longRopeSwitch && cache.length > 0 && cache.length <= rope.longFrom &&
            static_cast<int64_t>(out.ids.size()) >= rope.longFrom + 1) {
            cache = KvCache{};
            input = ids(out.ids);
        }
        const torch::Tensor logits = model.forwardCached(input, cache, /*lastOnly=*/true);
        const int64_t next = chooseNextToken(logits.index({0, -1}), o, generator);
        out.ids.push_back(next);
        if (isEos(next)) {
            out.stopReason = "eos";
            break;
        }
        input = ids({next});
    }
    return out;
}

}  // namespace nnscope
