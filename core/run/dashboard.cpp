// SPDX-License-Identifier: MIT
#include "core/run/dashboard.h"

#include "core/io/filehash.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/run/trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>

namespace nnscope {
namespace {

constexpr const char* kDashboardFormat = "nnscope-dashboard-1";
using torch::indexing::Slice;

/// One window of a document: what one row of a batch runs.
struct DocWindow {
    int64_t document = 0;
    int64_t base = 0;        ///< the document position of the window's index 0 (its BOS stands for position base)
    bool first = false;      ///< the document's first window (a document boundary lies before it)
    bool bos = false;        ///< index 0 is the tokenizer's BOS (left out of the statistics)
    std::vector<int64_t> ids;
};

/// The running statistics, slot-major ([slot, feature]) so that merging a batch's candidates is one topk over dim 0.
struct Stats {
    torch::Tensor topAct, topDoc, topPos, ctxIds, ctxAct;  // [K, F], [K, F], [K, F], [K, F, W], [K, F, W]
    torch::Tensor histogram, active, maxAct;               // [F, bins], [F], [F]
    int64_t positions = 0;

    explicit Stats(int64_t features) {
        const auto f32 = torch::TensorOptions().dtype(torch::kFloat32), i64 = torch::TensorOptions().dtype(torch::kInt64);
        topAct = torch::full({kDashboardTopK, features}, -std::numeric_limits<float>::infinity(), f32);
        topDoc = torch::full({kDashboardTopK, features}, -1, i64);
        topPos = torch::zeros({kDashboardTopK, features}, i64);
        ctxIds = torch::full({kDashboardTopK, features, kDashboardWindow}, -1, i64);
        ctxAct = torch::zeros({kDashboardTopK, features, kDashboardWindow}, f32);
        histogram = torch::zeros({features, kDashboardBins}, i64);
        active = torch::zeros({features}, i64);
        maxAct = torch::zeros({features}, f32);
    }
    explicit Stats(const Dashboard& d) {
        const torch::Tensor empty = d.topDocument.t() < 0;
        topAct = d.topActivation.t().clone().masked_fill_(empty, -std::numeric_limits<float>::infinity());
        topDoc = d.topDocument.t().clone();
        topPos = d.topPosition.t().clone();
        ctxIds = d.contextIds.transpose(0, 1).to(torch::kInt64);
        ctxAct = d.contextActivation.transpose(0, 1).clone();
        histogram = d.histogram.clone();
        active = d.activeCount.clone();
        maxAct = d.maxActivation.clone();
        positions = d.positions;
    }

    /// Adds one batch: `f` float32 [B, S, F] (the features on every position, left-padded rows), `ids` int64 [B, S],
    /// `counted` bool [B, S] (real positions other than a BOS), `start` int64 [B] (each row's first real position),
    /// `document` and `base` int64 [B] (DocWindow's).
    void add(const torch::Tensor& f, const torch::Tensor& ids, const torch::Tensor& counted, const torch::Tensor& start,
             const torch::Tensor& document, const torch::Tensor& base) {
        const int64_t B = f.size(0), S = f.size(1), F = f.size(2), K = kDashboardTopK;
        const torch::Tensor flat = f.reshape({B * S, F});
        const torch::Tensor countedFlat = counted.reshape({B * S});
        const torch::Tensor rows = flat.index({countedFlat});  // [N, F]
        positions += rows.size(0);
        if (rows.size(0) == 0) return;
        const torch::Tensor on = rows > 0;
        active += on.sum(0);
        maxAct = torch::maximum(maxAct, rows.amax(0));
        // histogram: bin = floor((log10 a - logMin) · binsPerDecade), clamped to the first and last bins
        const torch::Tensor where = on.nonzero();  // [M, 2] (row, feature), row-major as masked_select
        const torch::Tensor values = rows.masked_select(on).to(torch::kFloat64);
        const torch::Tensor bin = ((values.log10() - kDashboardLogMin) * kDashboardBinsPerDecade).floor().clamp(0, kDashboardBins - 1).to(torch::kInt64);
        histogram += torch::bincount(where.select(1, 1) * kDashboardBins + bin, {}, F * kDashboardBins).view({F, kDashboardBins});

        // top positions: this batch's K best per feature, merged with the K kept
        const int64_t k = std::min<int64_t>(K, B * S);
        auto [candValue, candIndex] = flat.masked_fill(countedFlat.logical_not().unsqueeze(1), 0).topk(k, /*dim=*/0);  // [k, F]
        candValue.masked_fill_(candValue <= 0, -std::numeric_limits<float>::infinity());  // only active positions compete
        auto [value, sel] = torch::cat({topAct, candValue}, 0).topk(K, /*dim=*/0);        // [K, F]
        const torch::Tensor kept = value.isfinite();
        const torch::Tensor old = sel.clamp_max(K - 1);
        torch::Tensor newDoc = topDoc.gather(0, old), newPos = topPos.gather(0, old);
        const torch::Tensor oldW = old.unsqueeze(-1).expand({K, F, kDashboardWindow});
        torch::Tensor newIds = ctxIds.gather(0, oldW), newAct = ctxAct.gather(0, oldW);
        const torch::Tensor fresh = ((sel >= K) & kept).nonzero();  // [M, 2] (slot, feature) taken from this batch
        if (fresh.size(0) > 0) {
            const torch::Tensor slot = fresh.select(1, 0), feat = fresh.select(1, 1);
            const torch::Tensor at = candIndex.index({sel.index({slot, feat}) - K, feat});  // [M] rows of `flat`
            const torch::Tensor b = at.div(S, "floor"), j = at.remainder(S);
            const torch::Tensor q = j.unsqueeze(1) + torch::arange(-kDashboardBefore, kDashboardAfter + 1, torch::kInt64).unsqueeze(0);  // [M, W]
            const torch::Tensor inside = (q >= start.index({b}).unsqueeze(1)) & (q < S);
            const torch::Tensor line = b.unsqueeze(1) * S + q.clamp(0, S - 1);
            newIds.index_put_({slot, feat}, torch::where(inside, ids.reshape({-1}).index({line}), torch::full({}, -1, torch::kInt64)));
            newAct.index_put_({slot, feat}, torch::where(inside, flat.reshape({-1}).index({line * F + feat.unsqueeze(1)}), torch::zeros({}, flat.options())));
            newDoc.index_put_({slot, feat}, document.index({b}));
            newPos.index_put_({slot, feat}, base.index({b}) + j - start.index({b}));
        }
        // a slot nothing active fills stays empty
        const torch::Tensor empty = kept.logical_not();
        topAct = value;
        topDoc = newDoc.masked_fill_(empty, -1);
        topPos = newPos.masked_fill_(empty, 0);
        ctxIds = newIds.masked_fill_(empty.unsqueeze(-1), -1);
        ctxAct = newAct.masked_fill_(empty.unsqueeze(-1), 0);
    }

    Dashboard dashboard() const {
        Dashboard d;
        d.topActivation = topAct.masked_fill(topDoc < 0, 0).t().contiguous();
        d.topDocument = topDoc.t().contiguous();
        d.topPosition = topPos.t().contiguous();
        d.contextIds = ctxIds.transpose(0, 1).to(torch::kInt32).contiguous();  // ids fit: half the file's largest tensor
        d.contextActivation = ctxAct.transpose(0, 1).contiguous();
        d.histogram = histogram;
        d.activeCount = active;
        d.maxActivation = maxAct;
        d.positions = positions;
        return d;
    }
};

void writeDashboard(const std::string& path, const Dashboard& d) {
    writeSafetensors(path,
                     {{"top_activation", d.topActivation},
                      {"top_document", d.topDocument},
                      {"top_position", d.topPosition},
                      {"context_ids", d.contextIds},
                      {"context_activation", d.contextActivation},
                      {"histogram", d.histogram},
                      {"active_count", d.activeCount},
                      {"max_activation", d.maxActivation}},
                     d.metadata);
}

}  // namespace

double dashboardBinEdge(int bin) { return std::pow(10.0, kDashboardLogMin + static_cast<double>(bin) / kDashboardBinsPerDecade); }

double Dashboard::density(int64_t feature) const {
    return positions > 0 ? static_cast<double>(activeCount[feature].item<int64_t>()) / static_cast<double>(positions) : 0.0;
}

int Dashboard::filledSlots(int64_t feature) const { return static_cast<int>((topDocument[feature] >= 0).sum().item<int64_t>()); }

std::string defaultDashboardPath(const std::string& dictionaryDir) {
    const std::filesystem::path p(dictionaryDir);
    if (std::filesystem::is_regular_file(p)) return (p.parent_path() / (p.stem().string() + ".dashboard.safetensors")).string();
    return (p / "dashboard.safetensors").string();
}

std::shared_ptr<const Dashboard> findDashboard(const Dictionary& d) {
    const std::string path = defaultDashboardPath(d.dir);
    if (!std::filesystem::exists(path)) return nullptr;
    auto dash = std::make_shared<Dashboard>(loadDashboard(path));
    const std::string sha = filesSha256(d.weightFiles);
    if (dash->metadata["dictionary_sha256"] != sha)
        throw Error(path + " was made from other weights than " + d.dir + "'s (sha256 " + dash->metadata["dictionary_sha256"] + ", now " +
                    sha + "): make it again with nnscope features --dataset.");
    return dash;
}

Dashboard loadDashboard(const std::string& path) {
    const auto file = std::make_shared<SafetensorsFile>(path);
    const auto& meta = file->metadata();
    const auto format = meta.find("format");
    if (format == meta.end() || format->second != kDashboardFormat)
        throw Error(path + " is not an nnscope feature dashboard (its metadata has no \"format\": \"" + kDashboardFormat +
                    "\"); make one with nnscope features --dataset FILE.txt --out FILE.");
    Dashboard d;
    d.metadata = meta;
    auto get = [&](const char* name, torch::ScalarType dtype, std::vector<int64_t> shape) {
        if (!file->contains(name)) throw Error(path + ": the dashboard has no tensor '" + name + "'.");
        const torch::Tensor t = file->tensor(name);
        if (t.scalar_type() != dtype || t.sizes().vec() != shape)
            throw Error(path + ": the dashboard's tensor '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                        " and shape " + c10::str(t.sizes()) + ", expected " + std::string(c10::toString(dtype)) + " " + c10::str(shape) + ".");
        return t;
    };
    if (!file->contains("active_count")) throw Error(path + ": the dashboard has no tensor 'active_count'.");
    const int64_t F = file->tensor("active_count").numel();
    d.activeCount = get("active_count", torch::kInt64, {F});
    d.maxActivation = get("max_activation", torch::kFloat32, {F});
    d.topActivation = get("top_activation", torch::kFloat32, {F, kDashboardTopK});
    d.topDocument = get("top_document", torch::kInt64, {F, kDashboardTopK});
    d.topPosition = get("top_position", torch::kInt64, {F, kDashboardTopK});
    d.contextIds = get("context_ids", torch::kInt32, {F, kDashboardTopK, kDashboardWindow});
    d.contextActivation = get("context_activation", torch::kFloat32, {F, kDashboardTopK, kDashboardWindow});
    d.histogram = get("histogram", torch::kInt64, {F, kDashboardBins});
    try {
        d.positions = std::stoll(meta.at("positions"));
    } catch (...) {
        throw Error(path + ": the dashboard's metadata has no number \"positions\".");
    }
    return d;
}

DashboardRun makeDashboard(const Model& model, const AttachedDictionary& attached, const DashboardOptions& o) {
    c10::InferenceMode guard;
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
    const Dictionary& dict = *attached.dictionary;
    if (o.contextSize < 2) throw Error("--context-size must be at least 2 (a BOS and one token), not " + std::to_string(o.contextSize) + ".");
    if (o.batchSize < 1) throw Error("--batch must be at least 1, not " + std::to_string(o.batchSize) + ".");
    if (o.out.empty()) throw Error("a dashboard needs a file to write (--out FILE).");
    const Tokenizer* tok = model.tokenizer();
    if (!tok) throw Error("cannot tokenize the dataset: " + model.tokenizerError());

    // the dataset: hashed and its lines counted in one read
    std::error_code ec;
    if (!std::filesystem::exists(o.dataset, ec)) throw Error(o.dataset + ": the dataset file does not exist.");
    if (!std::filesystem::is_regular_file(o.dataset, ec)) throw Error(o.dataset + ": the dataset is not a regular file.");
    int64_t lines = 0;
    const std::string datasetSha = fileSha256(o.dataset, &lines);
    if (std::filesystem::file_size(o.dataset, ec) == 0)
        throw Error(o.dataset + ": the dataset is empty; give a text file with one document per line.");

    // what a resumed file must have been made from: the same weights, compute dtype, dictionary, site, dataset, windows
    std::vector<std::string> modelFiles;
    for (const auto& entry : std::filesystem::directory_iterator(model.dir(), ec))
        if (entry.path().extension() == ".safetensors" || entry.path().filename() == "config.json") modelFiles.push_back(entry.path().string());
    std::sort(modelFiles.begin(), modelFiles.end());
    std::string modelPrint;
    for (const std::string& f : modelFiles)
        modelPrint += (modelPrint.empty() ? "" : ", ") + std::filesystem::path(f).filename().string() + ":" +
                      (std::filesystem::path(f).extension() == ".json" ? fileSha256(f) : fileFingerprint(f));
    std::map<std::string, std::string> identity{
        {"model_fingerprint", modelPrint},
        {"dtype", dtypeName(model.dtype())},
        {"dictionary_sha256", filesSha256(dict.weightFiles)},
        {"site", valuePath(model.family(), attached.site)},
        {"dataset_sha256", datasetSha},
        {"context_size", std::to_string(o.contextSize)}};
    const std::map<std::string, std::string> identityNames{
        {"model_fingerprint", "model (the sha256 of its config.json and of samples of its weights)"}, {"dtype", "compute dtype"},
        {"dictionary_sha256", "dictionary (its weights' sha256)"}, {"site", "site"}, {"dataset_sha256", "dataset (its sha256)"},
        {"context_size", "--context-size"}};

    Stats stats(dict.dSae);
    DashboardRun run;
    DashboardProgress& progress = run.progress;
    if (std::filesystem::exists(o.out, ec)) {
        const Dashboard old = loadDashboard(o.out);
        for (const auto& [key, value] : identity) {
            const auto it = old.metadata.find(key);
            const std::string was = it == old.metadata.end() ? std::string("(none)") : it->second;
            // files written before the dtype was spelled as everywhere else ("float32") named it as c10 does ("Float")
            const bool sameDtype = key == "dtype" && ((was == "Float" && value == "float32") || (was == "BFloat16" && value == "bfloat16"));
            if (was != value && !sameDtype)
                throw Error(o.out + " was made with another " + identityNames.at(key) + ": " + was + ", not " + value +
                            ", so it cannot be resumed; give another --out, or remove the file to start over.");
        }
        if (old.dSae() != dict.dSae)
            throw Error(o.out + " holds " + std::to_string(old.dSae()) + " features, the dictionary " + std::to_string(dict.dSae) + ".");
        stats = Stats(old);
        try {
            progress.documentsDone = std::stoll(old.metadata.at("documents_done"));
            progress.tokensDone = std::stoll(old.metadata.at("tokens_done"));
        } catch (...) {
            throw Error(o.out + ": the dashboard's metadata has no documents_done or tokens_done: remove it to start over.");
        }
        run.resumedFrom = progress.documentsDone;
    }
    progress.documentsTotal = o.maxDocuments > 0 ? std::min(lines, o.maxDocuments) : lines;

    std::ifstream in(o.dataset, std::ios::binary);
    if (!in) throw Error(o.dataset + ": the dataset cannot be opened.");
    std::string text;
    for (int64_t skip = 0; skip < progress.documentsDone && std::getline(in, text); ++skip) {
    }

    // the documents, read and cut into windows as the batches need them
    const int64_t chunk = o.contextSize - 1;  // body tokens per window after its BOS (contextSize without one)
    std::deque<DocWindow> queue;
    int64_t nextDocument = progress.documentsDone, tokensQueued = progress.tokensDone;
    bool exhausted = false;
    auto stopping = [&] { return o.cancel && o.cancel->load(); };
    auto fill = [&] {
        while (static_cast<int>(queue.size()) < o.batchSize && !exhausted && !stopping()) {
            if (nextDocument >= progress.documentsTotal || (o.maxTokens > 0 && tokensQueued >= o.maxTokens) || !std::getline(in, text)) {
                exhausted = true;
                break;
            }
            if (!text.empty() && text.back() == '\r') text.pop_back();
            const std::vector<int64_t> ids = tok->encode(text, true);
            const bool bos = tok->addsBos() && tok->bosId() && !ids.empty() && ids.front() == *tok->bosId();
            const int64_t from = bos ? 1 : 0, body = static_cast<int64_t>(ids.size()) - from;
            const int64_t size = bos ? chunk : o.contextSize;
            for (int64_t w = 0; w * size < body; ++w) {
                DocWindow win;
                win.document = nextDocument;
                win.base = w * size;
                win.first = w == 0;
                win.bos = bos;
                if (bos) win.ids.push_back(ids.front());
                const auto begin = ids.begin() + from + w * size;
                win.ids.insert(win.ids.end(), begin, begin + std::min(size, body - w * size));
                tokensQueued += static_cast<int64_t>(win.ids.size());
                queue.push_back(std::move(win));
            }
            ++nextDocument;
        }
    };
    auto atBoundary = [&] { return queue.empty() || queue.front().first; };
    auto save = [&](bool complete) {
        Dashboard d = stats.dashboard();
        d.metadata = identity;
        d.metadata["format"] = kDashboardFormat;
        d.metadata["model"] = model.dir();
        d.metadata["dictionary"] = dict.dir;
        d.metadata["dictionary_format"] = dict.format + " " + dict.architecture;
        d.metadata["dataset"] = o.dataset;
        d.metadata["documents"] = std::to_string(lines);
        d.metadata["documents_done"] = std::to_string(progress.documentsDone);
        d.metadata["tokens_done"] = std::to_string(progress.tokensDone);
        d.metadata["positions"] = std::to_string(stats.positions);
        d.metadata["complete"] = complete ? "true" : "false";
        d.metadata["bos_excluded"] = "true";
        d.metadata["nnscope_version"] = version();
        writeDashboard(o.out, d);
    };

    TraceOptions trace;
    trace.save = {attached.site};
    trace.stopAfterLayer = attached.site.layer;  // nothing after the dictionary's block is computed
    const int64_t pad = model.config().padTokenId.value_or(model.config().eosTokenId.value_or(0));
    double lastSave = 0;
    fill();
    while (!queue.empty()) {
        const int64_t n = std::min<int64_t>(o.batchSize, static_cast<int64_t>(queue.size()));
        std::vector<std::vector<int64_t>> rows;
        std::vector<int64_t> document, base, start;
        int64_t longest = 0;
        for (int64_t r = 0; r < n; ++r) longest = std::max<int64_t>(longest, static_cast<int64_t>(queue[static_cast<size_t>(r)].ids.size()));
        torch::Tensor counted = torch::zeros({n, longest}, torch::kBool);
        for (int64_t r = 0; r < n; ++r) {
            const DocWindow& w = queue[static_cast<size_t>(r)];
            rows.push_back(w.ids);
            document.push_back(w.document);
            base.push_back(w.base);
            const int64_t first = longest - static_cast<int64_t>(w.ids.size());
            start.push_back(first);
            counted.index_put_({r, Slice(first + (w.bos ? 1 : 0), longest)}, true);
            progress.tokensDone += static_cast<int64_t>(w.ids.size());
            progress.tokensThisRun += static_cast<int64_t>(w.ids.size());
        }
        const Batch batch = batchFromIds(rows, pad >= 0 && pad < model.config().vocabSize ? pad : 0);
        const TraceResult result = nnscope::trace(model, batch, trace);
        torch::Tensor x = result.value(attached.site);
        if (!x.defined()) throw Error("the trace did not save " + identity["site"] + ": cannot run the dictionary.");
        x = x.to(torch::kFloat32);
        if (x.dim() > 3) x = x.flatten(2);  // attention_premix: every head's values side by side, as runDictionary reads it
        const torch::Tensor features = dict.encode(x);  // [n, longest, d_sae]
        auto asTensor = [](const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); };
        stats.add(features, batch.inputIds, counted, asTensor(start), asTensor(document), asTensor(base));
        queue.erase(queue.begin(), queue.begin() + n);
        fill();
        if (atBoundary()) {
            progress.documentsDone = queue.empty() ? nextDocument : queue.front().document;
            // tokensDone counts the windows run: at a boundary they are whole documents, the queue holds none of theirs
            if (stopping()) {
                run.cancelled = true;
                break;
            }
            if (elapsed() - lastSave >= o.saveEverySeconds) {
                save(false);
                lastSave = elapsed();
            }
        }
        progress.seconds = elapsed();
        if (o.progress) o.progress(progress);
    }
    if (!run.cancelled) progress.documentsDone = nextDocument;
    progress.seconds = elapsed();
    if (stats.positions == 0 && !run.cancelled)
        throw Error(o.dataset + ": no document has a token to run" + (tok->addsBos() ? " after its BOS" : std::string()) +
                    " (every line is blank), so there is nothing to count; give a text file with one document per line.");
    run.complete = !run.cancelled && progress.documentsDone >= lines;
    save(run.complete);
    if (o.progress) o.progress(progress);
    return run;
}

}  // namespace nnscope
