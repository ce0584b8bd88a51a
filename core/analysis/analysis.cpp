// SPDX-License-Identifier: MIT
#include "core/analysis/analysis.h"

#include "core/model/device.h"
#include "core/model/error.h"
#include "core/model/taps.h"

#include <algorithm>

#include <torch/types.h>

#include <cstring>
#include <limits>

using namespace torch::indexing;

namespace nnscope {

PromptSpan promptSpan(const Batch& batch, int64_t row) {
    if (row < 0 || row >= static_cast<int64_t>(batch.ids.size()))
        throw Error("prompt " + std::to_string(row) + " is out of range: the trace has " + std::to_string(batch.ids.size()) +
                    " prompts.");
    const int64_t length = static_cast<int64_t>(batch.ids[static_cast<size_t>(row)].size());
    return {batch.inputIds.size(1) - length, length};
}

void BlockProgress::step(int done, int total) const {
    if (cancel && cancel->load()) throw Cancelled{};
    if (progress) progress(done, total);
}

std::vector<ValueKey> viewValueKeys(const Model& model) {
    std::vector<ValueKey> keys;
    for (int i = 0; i < static_cast<int>(model.config().numLayers); ++i)
        for (Value v : {Value::AttentionProbabilities, Value::MlpNeurons, Value::LayerOutput}) keys.push_back({v, i});
    return keys;
}

torch::Tensor promptValue(const Model& model, const TraceResult& result, const ValueKey& key, int64_t row) {
    const torch::Tensor t = result.value(key);
    if (!t.defined())
        throw Error("the value " + valuePath(model.family(), key) + " was not saved by this trace; pin it and run again.");
    const PromptSpan span = promptSpan(result.batch, row);
    const ValueInfo& info = valueInfo(key.value);
    torch::Tensor out = t.index({row});
    // axes after batch: cut every token axis to the prompt's own positions
    for (size_t a = 1; a < info.axes.size() && static_cast<int64_t>(a) <= out.dim(); ++a) {
        const char* name = info.axes[a];
        if (std::strcmp(name, "seq") == 0 || std::strcmp(name, "query") == 0 || std::strcmp(name, "key") == 0)
            out = out.narrow(/*dim=*/static_cast<int64_t>(a) - 1, span.start, span.length);
    }
    return out.to(torch::kFloat32).contiguous();
}

torch::Tensor attentionPattern(const Model& model, const TraceResult& result, int layer, int64_t row) {
    return promptValue(model, result, {Value::AttentionProbabilities, layer}, row);
}

torch::Tensor attentionSinkShare(const torch::Tensor& pattern) {
    return (1.0 - pattern.to(torch::kFloat32).sum(-1)).clamp_min(0);
}

torch::Tensor neuronActivations(const Model& model, const TraceResult& result, int layer, int64_t row) {
    return promptValue(model, result, {Value::MlpNeurons, layer}, row);
}

std::vector<NeuronScore> topNeurons(const torch::Tensor& acts, int64_t position, int k, bool byMagnitude) {
    TORCH_CHECK(acts.dim() == 2, "topNeurons: expected activations [length, neurons], got ", acts.sizes());
    TORCH_CHECK(position >= 0 && position < acts.size(0), "topNeurons: position ", position, " outside ", acts.sizes());
    const torch::Tensor row = acts.index({position}).to(torch::kFloat32);
    k = static_cast<int>(std::min<int64_t>(k, row.size(0)));
    const auto idx = std::get<1>((byMagnitude ? row.abs() : row).topk(k));
    std::vector<NeuronScore> out;
    for (int j = 0; j < k; ++j) {
        const int64_t n = idx[j].item<int64_t>();
        out.push_back({n, row[n].item<double>()});
    }
    return out;
}

LogitLens logitLens(const Model& model, const TraceResult& result, int k, const LensOptions& options) {
    c10::InferenceMode guard;  // the lens is read, never differentiated
    LogitLens lens;
    lens.numLayers = model.config().numLayers;
    const int64_t vocab = model.lmHead().size(0);
    lens.k = static_cast<int>(std::min<int64_t>(k, vocab));
    const int64_t prompts = static_cast<int64_t>(result.batch.ids.size());
    std::vector<int64_t> rows = options.rows;
    if (rows.empty())
        for (int64_t r = 0; r < prompts; ++r) rows.push_back(r);
    std::vector<PromptSpan> spans;
    std::vector<int64_t> firsts;
    for (int64_t r : rows) {
        PromptSpan s = promptSpan(result.batch, r);  // throws for a row out of range
        int64_t first = 0;
        if (options.lastPositionOnly && s.length > 0) {
            first = s.length - 1;
            s = {s.start + first, 1};
        } else if (options.firstPosition > 0 || options.numPositions >= 0) {
            first = std::clamp<int64_t>(options.firstPosition, 0, s.length);
            const int64_t n = options.numPositions < 0 ? s.length - first : std::min(options.numPositions, s.length - first);
            s = {s.start + first, n};
        }
        spans.push_back(s);
        firsts.push_back(first);
    }
    // One chunk of logits is at most 2^24 float32 values (64 MiB): a 128k vocabulary takes 128 positions at a time.
    const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 24) / std::max<int64_t>(1, vocab));
    auto check = [&] {
        if (options.cancel && options.cancel->load()) throw Cancelled{};
    };
    std::vector<std::vector<torch::Tensor>> ids(rows.size()), probs(rows.size()), lse(rows.size()), normed(rows.size());
    for (int i = 0; i < lens.numLayers; ++i) {
        check();
        const ValueKey key{Value::LayerOutput, i};
        const torch::Tensor h = result.value(key);
        if (!h.defined()) throw Error("the logit lens needs " + valuePath(model.family(), key) + ", which this trace did not save.");
        for (size_t j = 0; j < rows.size(); ++j) {
            const PromptSpan s = spans[j];
            // computed where the model's weights are (a GPU's too), kept on the CPU like every result the views read
            const torch::Tensor n = model.finalNorm(h.index({rows[j], Slice(s.start, s.start + s.length)}).to(model.device(), model.dtype()));
            std::vector<torch::Tensor> chunkIds, chunkProbs, chunkLse;
            for (int64_t c = 0; c < s.length || (c == 0 && s.length == 0); c += chunk) {
                check();
                const torch::Tensor part = n.narrow(0, c, std::min(chunk, s.length - c));
                const torch::Tensor logits = torch::linear(part, model.lmHead()).to(torch::kFloat32);  // project_on_vocab
                const torch::Tensor l = logits.logsumexp(-1);
                const auto [topLogits, topI] = logits.topk(lens.k, -1);
                // logits with a NaN or +Inf (a value that stopped being finite upstream) make no distribution: no token
                // is named there (topk would name the first NaN's id)
                const torch::Tensor undefined = ~torch::isfinite(l).unsqueeze(-1);
                chunkIds.push_back(toHost(topI.masked_fill(undefined, -1)));
                // the softmax of the top k, no [n, vocab] copy
                chunkProbs.push_back(toHost((topLogits - l.unsqueeze(-1)).exp().masked_fill(undefined, std::numeric_limits<float>::quiet_NaN())));
                chunkLse.push_back(toHost(l));
            }
            ids[j].push_back(torch::cat(chunkIds));
            probs[j].push_back(torch::cat(chunkProbs));
            lse[j].push_back(torch::cat(chunkLse));
            normed[j].push_back(toHost(n));
        }
        if (options.progress) options.progress(i + 1, lens.numLayers);
    }
    lens.topIds.resize(static_cast<size_t>(prompts));
    lens.topProbs.resize(static_cast<size_t>(prompts));
    lens.logSumExp.resize(static_cast<size_t>(prompts));
    lens.normed.resize(static_cast<size_t>(prompts));
    lens.firstPosition.assign(static_cast<size_t>(prompts), 0);
    for (size_t j = 0; j < rows.size(); ++j) {
        const auto r = static_cast<size_t>(rows[j]);
        lens.firstPosition[r] = firsts[j];
        lens.topIds[r] = torch::stack(ids[j]);
        lens.topProbs[r] = torch::stack(probs[j]);
        lens.logSumExp[r] = torch::stack(lse[j]);
        lens.normed[r] = torch::stack(normed[j]);
    }
    return lens;
}

torch::Tensor lensTokenProbs(const Model& model, const LogitLens& lens, int64_t row, int64_t id) {
    c10::InferenceMode guard;
    if (!lens.has(row)) throw Error("the logit lens of prompt " + std::to_string(row) + " was not computed.");
    if (id < 0 || id >= model.config().vocabSize)
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0 to " +
                    std::to_string(model.config().vocabSize - 1) + ").");
    // One row of lm_head is enough: p(id) = exp(logit(id) - logsumexp(logits)).
    const torch::Tensor w = toHost(model.lmHead().index({Slice(id, id + 1)}));  // one row, to the CPU where the lens is
    const torch::Tensor logit = torch::linear(lens.normed[static_cast<size_t>(row)], w).squeeze(-1).to(torch::kFloat32);
    return (logit - lens.logSumExp[static_cast<size_t>(row)]).exp().contiguous();
}

}  // namespace nnscope
