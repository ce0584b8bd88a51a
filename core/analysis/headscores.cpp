// SPDX-License-Identifier: MIT
#include "core/analysis/headscores.h"

#include "core/analysis/analysis.h"
#include "core/io/tokenizer.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace nnscope {

HeadScore patternScores(const torch::Tensor& pattern, const std::vector<int64_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    if (pattern.dim() != 2 || pattern.size(0) != n || pattern.size(1) != n)
        throw Error("head scores: the pattern is not [" + std::to_string(n) + ", " + std::to_string(n) + "] for " + std::to_string(n) + " tokens.");
    const torch::Tensor a = pattern.to(torch::kFloat64).contiguous();
    const auto A = a.accessor<double, 2>();
    HeadScore s;
    const double nan = std::nan("");
    double prev = 0, first = 0, diag = 0, ind = 0;
    int64_t inductionCount = 0;
    std::unordered_map<int64_t, int64_t> last;  // token -> its latest position so far
    for (int64_t i = 0; i < n; ++i) {
        if (i >= 1) {
            prev += A[i][i - 1];
            first += A[i][0];
            diag += A[i][i];
        }
        auto it = last.find(ids[static_cast<size_t>(i)]);
        if (it != last.end() && it->second + 1 <= i) {
            ind += A[i][it->second + 1];
            ++inductionCount;
        }
        last[ids[static_cast<size_t>(i)]] = i;
    }
    s.previousToken = n > 1 ? prev / static_cast<double>(n - 1) : nan;
    s.firstToken = n > 1 ? first / static_cast<double>(n - 1) : nan;
    s.diagonal = n > 1 ? diag / static_cast<double>(n - 1) : nan;
    s.induction = inductionCount > 0 ? ind / static_cast<double>(inductionCount) : nan;
    s.sinkShare = n > 0 ? attentionSinkShare(a).mean().item<double>() : nan;
    return s;
}

std::vector<HeadScore> headScores(const Model& model, const TraceResult& result, int64_t row, const BlockProgress& progress) {
    c10::InferenceMode guard;
    promptSpan(result.batch, row);  // throws when the batch has no such row
    const std::vector<int64_t>& ids = result.batch.ids[static_cast<size_t>(row)];
    std::vector<HeadScore> out;
    const int n = static_cast<int>(model.config().numLayers);
    for (int layer = 0; layer < n; ++layer) {
        progress.step(layer, n);
        const torch::Tensor pattern = attentionPattern(model, result, layer, row);  // [heads, n, n]
        for (int64_t h = 0; h < pattern.size(0); ++h) {
            HeadScore s = patternScores(pattern.index({h}), ids);
            s.layer = layer;
            s.head = static_cast<int>(h);
            out.push_back(s);
        }
    }
    return out;
}

HeadScore chanceScores(const std::vector<int64_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    // the uniform causal pattern: row i spreads its probability evenly over keys 0..i
    const torch::Tensor uniform =
        torch::tril(torch::ones({n, n}, torch::kFloat64)) / torch::arange(1, n + 1, torch::kFloat64).unsqueeze(1);
    return patternScores(uniform, ids);
}

std::vector<int64_t> repeatedRandomTokens(const Model& model, int64_t length, uint64_t seed) {
    const ModelConfig& config = model.config();
    const Tokenizer* tokenizer = model.tokenizer();
    const bool bos = tokenizer && tokenizer->addsBos() && tokenizer->bosId();
    if (length < 2) throw Error("repeated random tokens: the length must be at least 2, not " + std::to_string(length) + ".");
    const int64_t total = 2 * length + (bos ? 1 : 0);
    if (config.maxPositionEmbeddings > 0 && total > config.maxPositionEmbeddings)
        throw Error("repeated random tokens: " + std::to_string(total) + " tokens exceed the model's context of " +
                    std::to_string(config.maxPositionEmbeddings) + " (max_position_embeddings); ask for at most " +
                    std::to_string((config.maxPositionEmbeddings - (bos ? 1 : 0)) / 2) + ".");
    const int64_t vocab = tokenizer ? std::min(tokenizer->vocabSize(), config.vocabSize) : config.vocabSize;
    std::unordered_set<int64_t> special;
    for (const auto& id : {config.bosTokenId, config.eosTokenId, config.padTokenId})
        if (id) special.insert(*id);
    for (int64_t id : config.eosTokenIds) special.insert(id);
    if (tokenizer && tokenizer->bosId()) special.insert(*tokenizer->bosId());
    if (static_cast<int64_t>(special.size()) >= vocab)
        throw Error("repeated random tokens: the vocabulary has no ordinary token to draw (" + std::to_string(vocab) + " ids).");
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> draw(0, vocab - 1);
    std::vector<int64_t> ids;
    if (bos) ids.push_back(*tokenizer->bosId());
    std::vector<int64_t> half;
    while (static_cast<int64_t>(half.size()) < length) {
        const int64_t id = draw(rng);
        if (!special.count(id)) half.push_back(id);
    }
    ids.insert(ids.end(), half.begin(), half.end());
    ids.insert(ids.end(), half.begin(), half.end());
    return ids;
}

}  // namespace nnscope
