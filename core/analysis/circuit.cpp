// SPDX-License-Identifier: MIT
#include "core/analysis/circuit.h"

#include "core/model/error.h"
#include "core/model/taps.h"
#include "core/run/features.h"
#include "core/run/trace.h"

#include <torch/csrc/autograd/autograd.h>  // torch::autograd::grad

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;
using namespace torch::indexing;

namespace nnscope {
// Named (not anonymous): core/ builds in unity batches, where anonymous helpers of two files would share a scope.
namespace circuitdetail {

std::string gb(double bytes) {
    char s[64];
    if (bytes >= 1e9) std::snprintf(s, sizeof s, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6) std::snprintf(s, sizeof s, "%.1f MB", bytes / 1e6);
    else std::snprintf(s, sizeof s, "%.0f kB", bytes / 1e3);
    return s;
}

/// /proc/meminfo's MemAvailable in bytes (0 when it cannot be read).
int64_t availableMemory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

/// Float32 matrix-multiply speed of this machine (FLOP/s), measured once per process on 512 × 512 products: the
/// median of up to 40 timed products (about 0.1 s), after two that warm the thread pool, so that one slow product (the
/// pool waking, another process) does not set it.
double measuredFlops() {
    static const double speed = [] {
        c10::InferenceMode guard;
        const torch::Tensor a = torch::randn({512, 512}), b = torch::randn({512, 512});
        torch::matmul(a, b);  // warm the pool
        torch::matmul(a, b);
        std::vector<double> times;
        const auto start = std::chrono::steady_clock::now();
        while (times.size() < 40 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 0.1) {
            const auto t0 = std::chrono::steady_clock::now();
            torch::matmul(a, b);
            times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
        return std::max(1e8, 2.0 * 512 * 512 * 512 / std::max(1e-9, times[times.size() / 2]));
    }();
    return speed;
}

int64_t tensorBytes(const torch::Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0; }

/// One block's transcoder as the graph uses it: where it reads and writes, and its encoder's linear part.
struct LayerSites {
    ValueKey in, out;
};

/// The sites of every layer. Throws nnscope::Error as checkCircuitInputs says.
std::vector<LayerSites> layerSites(const Model& model, const CircuitTranscoders& t) {
    const int64_t L = model.config().numLayers;
    if (t.numLayers() == 0) throw Error("attribution graph: no transcoders given.");
    if (t.numLayers() != L)
        throw Error(t.describe() + ": " + std::to_string(t.numLayers()) + " layers of transcoders, but " + model.dir() + " has " +
                    std::to_string(L) + " blocks: an attribution graph replaces every block's MLP, so it needs one transcoder per "
                    "block (is it the set of another model?).");
    if (model.dtype() != torch::kFloat32)
        throw Error(model.dir() + " computes in " + dtypeName(model.dtype()) + ": attribution graphs are computed in float32 (load the "
                    "model with --dtype float32).");
    std::vector<LayerSites> sites;
    if (t.crossLayer) {
        const AttachedCrossLayerTranscoder a = AttachedCrossLayerTranscoder::attach(model, t.crossLayer);
        for (int l = 0; l < L; ++l) sites.push_back({a.sites[l], a.sitesOut[l]});
    } else {
        for (int l = 0; l < L; ++l) {
            const Dictionary& d = *t.perLayer[static_cast<size_t>(l)];
            if (!d.transcoder)
                throw Error(d.describe() + ": an SAE, not a transcoder: an attribution graph replaces each MLP by a transcoder that reads "
                            "the MLP's input and predicts its output.");
            if (d.activation == Dictionary::Activation::Gated || d.inputNorm == Dictionary::InputNorm::ConstantNormRescale ||
                d.inputNorm == Dictionary::InputNorm::LayerNorm || d.applyBDecToInput)
                throw Error(d.describe() + ": its encoder is not an affine map of its input (gated, or a run-time normalisation), so a "
                            "feature's pre-activation has no encoder vector for attribution.");
            const AttachedDictionary a = AttachedDictionary::attach(model, t.perLayer[static_cast<size_t>(l)]);
            if (a.site.layer != l || a.siteOut.layer != l)
                throw Error(d.describe() + ": given as the transcoder of block " + std::to_string(l) + ", but it reads " + d.site +
                            " and writes " + d.siteOut + ".");
            sites.push_back({a.site, a.siteOut});
        }
    }
    for (int l = 0; l < L; ++l) {
        const LayerSites& s = sites[static_cast<size_t>(l)];
        const bool inOk = s.in.value == Value::MlpInput || s.in.value == Value::LayerMid || s.in.value == Value::NativePostAttentionNormNormalized;
        const bool outOk = s.out.value == Value::MlpOutput || s.out.value == Value::NativeMlpOutputNormOutput;
        if (!inOk || !outOk)
            throw Error(t.describe() + ": block " + std::to_string(l) + " reads " + valuePath(model.family(), s.in) + " and writes " +
                        valuePath(model.family(), s.out) + "; an attribution graph needs transcoders that stand for the MLP (reading "
                        "layer_mid, the pre-MLP norm's output or mlp_input, writing mlp_output or the post-MLP norm's output).");
        if (model.config().parallelResidual && s.in.value == Value::LayerMid)
            throw Error(t.describe() + ": reads layer_mid (hook_resid_mid), which a parallel-residual block does not have.");
    }
    return sites;
}

/// The transcoders' encoders and decoders for the graph, per layer, in float32.
struct Encoders {
    const CircuitTranscoders& t;

    /// Activations [n, d_sae] of layer l for its input x [n, d_model] (the transcoder's own activation function).
    torch::Tensor encode(int l, const torch::Tensor& x) const {
        if (t.crossLayer) return t.crossLayer->encode(x, l);
        return t.perLayer[static_cast<size_t>(l)]->encode(x);
    }
    /// The encoder vectors of features `feats` of layer l: pre-activation = x · vector + bias, [m, d_model].
    torch::Tensor encoderVectors(int l, const torch::Tensor& feats) const {
        if (t.crossLayer) return t.crossLayer->layers[static_cast<size_t>(l)].wEnc.index_select(1, feats).t().contiguous();
        const Dictionary& d = *t.perLayer[static_cast<size_t>(l)];
        torch::Tensor v = d.wEnc.index_select(1, feats).t().contiguous();
        if (d.inputNorm == Dictionary::InputNorm::ExpectedAverage) v = v * d.inputScale;  // pre = (s·x) · W_enc + b
        if (d.activation == Dictionary::Activation::TopK && d.rescaleByDecoderNorm)
            v = v * d.wDec.index_select(0, feats).norm(2, -1).unsqueeze(-1);  // SAELens scales the pre-activation
        return v;
    }
    /// The decoder rows of features `feats` of source layer s into output layer l (l >= s; per-layer: l == s), [m, d_model].
    torch::Tensor decoderRows(int s, int l, const torch::Tensor& feats) const {
        if (t.crossLayer) return t.crossLayer->decoder(s, l).index_select(0, feats);
        const Dictionary& d = *t.perLayer[static_cast<size_t>(s)];
        torch::Tensor rows = d.wDec.index_select(0, feats);
        if (d.activation == Dictionary::Activation::TopK && d.rescaleByDecoderNorm) rows = rows / rows.norm(2, -1, true);
        return rows;
    }
    /// The output layers features of source layer s write to.
    int lastOutput(int s) const { return t.crossLayer ? static_cast<int>(t.crossLayer->numLayers) - 1 : s; }
    /// The skip term of layer l for its input x [..., d_model] (undefined without a skip connection).
    torch::Tensor skip(int l, const torch::Tensor& x) const {
        if (t.crossLayer) return {};
        const Dictionary& d = *t.perLayer[static_cast<size_t>(l)];
        if (!d.wSkip.defined()) return {};
        return torch::matmul(x, d.wSkip);
    }
};

/// The batched replacement pass's taps: FreezeTaps' freezing, the token embeddings made the leaf the gradient is read at,
/// each transcoder input site kept with its history (where a target's encoder vector is injected), the real MLP cut from
/// autograd (its input detached: it is replaced for the gradient), and each output site replaced for the gradient by the
/// skip term plus the frozen remainder (circuit-tracer's add_skip_connection: skip + (acts - skip).detach()).
class ReplacementTaps : public Taps {
public:
    ReplacementTaps(const std::vector<LayerSites>& sites, const Encoders& enc, const std::atomic<bool>* cancel)
        : sites_(sites), enc_(enc), cancel_(cancel), inputs(sites.size()), outputs(sites.size()), realOutputs(sites.size()) {}

    void tap(Value v, int layer, torch::Tensor& t) override {
        if (isNormScale(v) || v == Value::AttentionProbabilities) t = t.detach();
        if (v == Value::TokenEmbeddings) {
            t = t.detach().requires_grad_(true);
            embeddings = t;
            return;
        }
        if (v == Value::FinalNormOutput) {
            // kept for the logit targets' injections; lm_head then runs on row 0 alone, outside autograd: the other rows'
            // logits ([B, n, vocab]) are never needed
            finalNorm = t;
            t = t.narrow(0, 0, 1).detach();
            return;
        }
        if (v == Value::Logits) {
            logits = t.detach();
            return;
        }
        if (layer < 0 || layer >= static_cast<int>(sites_.size())) return;
        const LayerSites& s = sites_[static_cast<size_t>(layer)];
        if (v == s.in.value) inputs[static_cast<size_t>(layer)] = t;
        if (v == Value::MlpInput) t = t.detach();  // the real MLP runs outside autograd: its output is replaced below
        if (v == s.out.value) {
            realOutputs[static_cast<size_t>(layer)] = t.detach();
            const torch::Tensor skip = enc_.skip(layer, inputs[static_cast<size_t>(layer)]);
            t = skip.defined() ? skip + (t.detach() - skip).detach() : t.detach().requires_grad_(true);
            outputs[static_cast<size_t>(layer)] = t;
        }
    }
    bool beforeLayer(int) override { return !(cancel_ && cancel_->load()); }

private:
    const std::vector<LayerSites>& sites_;
    const Encoders& enc_;
    const std::atomic<bool>* cancel_;

public:
    std::vector<torch::Tensor> inputs, outputs, realOutputs;  // per layer, [B, n, d_model]
    torch::Tensor embeddings, finalNorm, logits;
};

/// Rows of the graph ([capacity, width] float32): in memory, or in a memory-mapped temporary file beyond the limit.
class RowStore {
public:
    RowStore(int64_t capacity, int64_t width, int64_t limit, const std::string& tempDir) : width_(width), capacity_(capacity) {
        const int64_t bytes = std::max<int64_t>(1, capacity * width) * 4;
        if (bytes <= limit) {
            memory_.assign(static_cast<size_t>(capacity * width), 0.0f);
            data_ = memory_.data();
            return;
        }
        const fs::path dir = tempDir.empty() ? fs::temp_directory_path() : fs::path(tempDir);
        std::error_code ec;
        const fs::space_info space = fs::space(dir, ec);
        if (!ec && static_cast<int64_t>(space.available) < bytes)
            throw Error(dir.string() + ": the graph's rows need a " + gb(static_cast<double>(bytes)) + " temporary file there, and only " +
                        gb(static_cast<double>(space.available)) + " is free (set another folder for temporary files, or fewer feature "
                        "nodes).");
        std::string pattern = (dir / "nnscope-circuit-rows.XXXXXX").string();
        std::vector<char> name(pattern.begin(), pattern.end());
        name.push_back('\0');
        fd_ = ::mkstemp(name.data());
        if (fd_ < 0) throw Error(dir.string() + ": cannot create a temporary file for the graph's rows (" + std::strerror(errno) + ").");
        ::unlink(name.data());  // removed now: the mapping keeps it until the store goes, and nothing is left behind
        if (::ftruncate(fd_, bytes) != 0) {
            ::close(fd_);
            throw Error(dir.string() + ": cannot make a " + gb(static_cast<double>(bytes)) + " temporary file for the graph's rows (" +
                        std::strerror(errno) + ").");
        }
        void* p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) {
            ::close(fd_);
            throw Error(dir.string() + ": cannot map the graph's temporary rows file (" + std::strerror(errno) + ").");
        }
        data_ = static_cast<float*>(p);
        mapped_ = bytes;
        onDisk = true;
    }
    ~RowStore() {
        if (mapped_) ::munmap(data_, static_cast<size_t>(mapped_));
        if (fd_ >= 0) ::close(fd_);
    }
    RowStore(const RowStore&) = delete;
    RowStore& operator=(const RowStore&) = delete;

    /// Rows [first, first + count) as a tensor viewing the store.
    torch::Tensor rows(int64_t first, int64_t count) const {
        return torch::from_blob(data_ + first * width_, {count, width_}, torch::kFloat32);
    }
    float* row(int64_t r) const { return data_ + r * width_; }
    /// Asks the kernel to read row r of the temporary file ahead of its use (nothing in memory).
    void prefetch(int64_t r) const {
        if (!mapped_) return;
        static const int64_t page = ::sysconf(_SC_PAGESIZE);
        const auto begin = reinterpret_cast<uintptr_t>(data_ + r * width_) & ~static_cast<uintptr_t>(page - 1);
        const auto end = reinterpret_cast<uintptr_t>(data_ + (r + 1) * width_);
        ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
    }
    int64_t bytes() const { return capacity_ * width_ * 4; }
    bool onDisk = false;

private:
    int64_t width_, capacity_;
    std::vector<float> memory_;
    float* data_ = nullptr;
    int fd_ = -1;
    int64_t mapped_ = 0;
};

/// circuit_tracer.graph.compute_partial_influences: the influence on the logits of every node (column) through the
/// rows computed so far, influences = Σ_{k>=1} prod_k with prod_0 the logit targets' probabilities `logitP` and
/// prod_{k+1} = (prod_k[row_to_node_index] / row sums) · |rows| (rows normalised by their absolute sums `rowSum`,
/// clamped at 1e-8). `rowNode[r]` is the node of row r (a column index, the logits after the others) and
/// `rowLayer[r]` its layer (num_layers for a logit).
///
/// circuit-tracer iterates that product until it vanishes, reading every stored row once per step (up to
/// num_layers + 1 steps); on a graph whose rows spill to disk that was most of the run (a 1B-shaped graph read 283 GB in
/// 45 min). The graph is layered: a row's non-zero columns are sources at layers before its node's (a feature at layer
/// l reads the stream before layer l's MLP output; a logit reads it after the last), so taking the rows from the latest
/// layer down, each node's total Σ_k prod_k[node] is complete before its own row is read, and one pass over the rows
/// gives the same sum (added in another order: float32 rounding apart). Rows of nodes with no weight are not read.
torch::Tensor partialInfluences(const RowStore& store, int64_t nRows, const std::vector<int64_t>& rowNode, const std::vector<float>& rowSum,
                                const std::vector<int>& rowLayer, const torch::Tensor& logitP, int64_t width) {
    const int64_t nLogits = logitP.size(0), total = width + nLogits;
    torch::Tensor weight = torch::zeros({total});  // Σ_k prod_k per node
    weight.narrow(0, width, nLogits).copy_(logitP);
    std::vector<int64_t> order(static_cast<size_t>(nRows));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rowLayer[static_cast<size_t>(a)] > rowLayer[static_cast<size_t>(b)]; });
    const float* w = weight.data_ptr<float>();
    torch::Tensor sources = weight.narrow(0, 0, width);
    for (size_t i = 0; i < order.size(); ++i) {
        const int64_t r = order[i];
        if (i + 1 < order.size()) store.prefetch(order[i + 1]);
        const float carried = w[rowNode[static_cast<size_t>(r)]];
        if (carried == 0.0f) continue;
        sources.add_(store.rows(r, 1).squeeze(0).abs(), carried / rowSum[static_cast<size_t>(r)]);
    }
    weight.narrow(0, width, nLogits).zero_();  // influences count k >= 1 only: no row reaches a logit
    return weight;
}

}  // namespace circuitdetail

using namespace circuitdetail;

int64_t CircuitTranscoders::numLayers() const {
    return crossLayer ? crossLayer->numLayers : static_cast<int64_t>(perLayer.size());
}

int64_t CircuitTranscoders::dModel() const {
    if (crossLayer) return crossLayer->dModel;
    return perLayer.empty() ? 0 : perLayer.front()->dIn;
}

int64_t CircuitTranscoders::dTranscoder() const {
    if (crossLayer) return crossLayer->dTranscoder;
    int64_t d = 0;
    for (const auto& p : perLayer) d = std::max(d, p->dSae);
    return d;
}

int64_t CircuitTranscoders::weightBytes() const {
    int64_t b = 0;
    if (crossLayer)
        for (const auto& L : crossLayer->layers)
            for (const torch::Tensor* t : {&L.wEnc, &L.bEnc, &L.threshold, &L.bDec, &L.wDec}) b += tensorBytes(*t);
    for (const auto& d : perLayer)
        for (const torch::Tensor* t : {&d->wEnc, &d->bEnc, &d->wDec, &d->bDec, &d->threshold, &d->wSkip}) b += tensorBytes(*t);
    return b;
}

std::string CircuitTranscoders::describe() const {
    if (crossLayer) return crossLayer->describe();
    if (perLayer.empty()) return "no transcoders";
    return std::to_string(perLayer.size()) + " per-layer transcoders (" + perLayer.front()->describe() + (perLayer.size() > 1 ? ", ..." : "") +
           ")";
}

CircuitTranscoders loadCircuitTranscoders(const std::string& path) {
    CircuitTranscoders t;
    t.dir = path;
    if (!fs::exists(path)) throw Error(path + ": no such folder.");
    if (fs::is_directory(path) && isTranscoderSet(path)) {
        if (readTranscoderSetConfig(path).modelKind == "cross_layer_transcoder") t.crossLayer = loadCrossLayerTranscoder(path);
        else t.perLayer = loadTranscoderSet(path);
        return t;
    }
    if (!fs::is_directory(path)) throw Error(path + ": a file; give the folder that holds the transcoders (one per block).");
    // a folder of per-layer dictionaries, one per subfolder, ordered by the block their input site names
    std::map<int, std::shared_ptr<const Dictionary>> byLayer;
    static const std::regex layerOf(R"((?:^|\.)(?:blocks|layers)\.(\d+)\.)");
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(path))
        if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (const fs::path& sub : subs) {
        std::shared_ptr<const Dictionary> d;
        try {
            d = loadDictionary(sub.string());
        } catch (const Error&) {
            continue;  // not a dictionary folder
        }
        if (!d->transcoder) throw Error(sub.string() + ": an SAE, not a transcoder (" + d->describe() + ").");
        std::smatch m;
        if (!std::regex_search(d->site, m, layerOf))
            throw Error(sub.string() + ": its site " + d->site + " names no block, so nnscope cannot tell which MLP it replaces.");
        const int layer = std::stoi(m[1].str());
        if (byLayer.count(layer))
            throw Error(path + ": two transcoders for block " + std::to_string(layer) + " (" + byLayer[layer]->dir + " and " + sub.string() + ").");
        byLayer[layer] = d;
    }
    if (byLayer.empty())
        throw Error(path + ": no transcoders (a circuit-tracer config.yaml, or subfolders each holding one per-layer transcoder).");
    for (const auto& [layer, d] : byLayer) {
        if (layer != static_cast<int>(t.perLayer.size()))
            throw Error(path + ": no transcoder for block " + std::to_string(t.perLayer.size()) + " (the next one found reads block " +
                        std::to_string(layer) + ").");
        t.perLayer.push_back(d);
    }
    return t;
}

void checkCircuitInputs(const Model& model, const CircuitTranscoders& transcoders) { layerSites(model, transcoders); }

std::string CircuitEstimate::text() const {
    std::ostringstream s;
    s << "about " << gb(static_cast<double>(peakBytes)) << " of memory (" << gb(static_cast<double>(rowBytes)) << " of rows"
      << (rowsOnDisk ? ", in a temporary file" : "") << "), about ";
    if (seconds < 100) s << std::max(1, static_cast<int>(std::lround(seconds))) << " s";
    else s << std::lround(seconds / 60) << " min";
    s << ", for " << tokens << " tokens and " << activeFeatures << " active features (" << featureRows << " with rows)";
    if (availableBytes > 0) s << "; " << gb(static_cast<double>(availableBytes)) << " available";
    return s.str();
}

namespace circuitdetail {

/// The estimate for `active` active features (see estimateCircuit).
CircuitEstimate estimateWith(const Model& model, const CircuitTranscoders& t, int64_t n, int64_t active, const CircuitOptions& o) {
    const ModelConfig& c = model.config();
    const double L = static_cast<double>(c.numLayers), d = static_cast<double>(c.hiddenSize);
    const double H = static_cast<double>(c.numHeads), hd = static_cast<double>(c.headDim), kv = static_cast<double>(c.numKvHeads);
    const double I = static_cast<double>(c.intermediateSize), V = static_cast<double>(c.vocabSize);
    CircuitEstimate e;
    e.tokens = n;
    e.activeFeatures = active;
    e.featureRows = o.maxFeatureNodes > 0 ? std::min<int64_t>(o.maxFeatureNodes, active) : active;
    const int64_t nLogits = o.maxNLogits;
    const int64_t rowsTotal = e.featureRows + nLogits;
    const double B = static_cast<double>(std::max<int64_t>(1, std::min<int64_t>(o.batchSize, rowsTotal)));
    const double width = static_cast<double>(active) + (L + 1) * static_cast<double>(n);
    e.rowBytes = static_cast<int64_t>(static_cast<double>(rowsTotal) * width * 4);
    const int64_t limit = o.rowMemoryLimit > 0 ? o.rowMemoryLimit : availableMemory() / 2;
    e.rowsOnDisk = e.rowBytes > limit;
    // Memory (float32). The batched pass kept for the backward passes holds, per row: per block the frozen pattern
    // (heads × n², what the gradient through the values needs), the input site, the output site and its real value
    // (3 × n × d); the largest transient of one block (the real MLP's [n, intermediate] products with the allocator's
    // slack, 6 × n × intermediate, and the norms' float32 copies, 8 × n × d; or
    // the scores, softmax and pattern, 3 × heads × n²); the embeddings. The backward passes: one injection tensor per
    // target layer and one gradient per block ([n, d] each, 2 × (layers + 1)), autograd's own and the row contractions'
    // temporaries (6 × n × d; measured on the benchmark's model, bench/circuit_bench.cpp).
    const double nd = static_cast<double>(n);
    const double transient = std::max(nd * (6 * I + 8 * d), 3 * H * nd * nd);
    const double pass = B * (L * (H * nd * nd + 3 * nd * d) + transient + nd * d) * 4;
    const double backward = B * (2 * (L + 1) + 6) * nd * d * 4;
    // the real values per layer (inputs, outputs, errors, activations [n, d_sae]), one batch's encoder vectors and one
    // group's decoder rows at a time
    const double values = (L * nd * (4 * d + 2 * static_cast<double>(t.dTranscoder())) + 2 * B * d) * 4;
    // one batch's rows before they are stored, and the finished graph: 8 bytes an edge (source, weight), its sources
    // the features with rows, the errors and the tokens (the other features' columns are dropped); about half of a
    // row's entries are non-zero (a feature reaches only later layers and positions), counted at 0.6
    const double batchRows = B * width * 4;
    const double graph = static_cast<double>(rowsTotal) * (static_cast<double>(e.featureRows) + (L + 1) * static_cast<double>(n)) * 8 * 0.6;
    e.peakBytes = static_cast<int64_t>(static_cast<double>(t.weightBytes()) + pass + backward + values + batchRows + graph + nd * V * 8 +
                                       (e.rowsOnDisk ? std::min<double>(static_cast<double>(e.rowBytes), 64e6) : static_cast<double>(e.rowBytes)));
    // FLOPs: the forward of B rows (2 per weight per position; attention 4·heads·head_dim·n² per block; lm_head on one
    // row), then per batch a backward through the blocks it crosses, each: v_proj and o_proj (the pattern and the MLP
    // are frozen), the pattern times the values' gradient, a skip connection; and the row contractions (2·B·width·d).
    const double attnParams = d * (H + 2 * kv) * hd + H * hd * d;
    const double params = L * (attnParams + 3 * d * I);
    const double forward = B * (2 * params * nd + L * 4 * H * hd * nd * nd) + 2 * nd * V * d;
    const double skip = t.perLayer.empty() || !t.perLayer.front()->wSkip.defined() ? 0 : d * d;
    const double perBlock = B * (2 * (kv * hd * d + H * hd * d + skip) * nd + 2 * H * hd * nd * nd);
    // Blocks crossed: a batch's gradient runs from its highest target down. The logits' batches cross every block.
    // Feature batches are taken latest layer first (all features in layer order when every one gets a row; each
    // queue of update_interval batches sorted by layer when they are ranked), so with the features spread evenly over
    // the layers a batch crosses about L/2 blocks, or L·(u + 1)/(2u) when ranked. (Where the ranking picks mostly
    // early-layer features it crosses fewer: 3.6 of 16 on the benchmark's random model, docs/PERFORMANCE.md.)
    const bool ranked = e.featureRows < active;
    const double u = static_cast<double>(std::max(1, o.updateInterval));
    const double logitBatches = std::ceil(static_cast<double>(nLogits) / B);
    const double featureBatches = std::ceil(static_cast<double>(e.featureRows) / B);
    const double crossed = logitBatches * L + featureBatches * (ranked ? L * (u + 1) / (2 * u) : (L + 1) / 2);
    e.flops = forward + crossed * perBlock + (logitBatches + featureBatches) * 2 * B * width * d;
    // The products run at d / (d + 480) of the speed of a 512 × 512 float32 product measured here: about a third of
    // it at width 256, where per-element work and autograd's own weigh more, 0.8 of it at width 2048 (fitted on
    // bench/circuit_bench.cpp at both widths, docs/PERFORMANCE.md). The ranking (max_feature_nodes) reads the stored
    // rows once per update, at about 5 GB/s (measured there).
    const double rankings = ranked ? std::ceil(static_cast<double>(e.featureRows) / (u * static_cast<double>(std::max(1, o.batchSize)))) : 0;
    const double rankedBytes = rankings * (static_cast<double>(nLogits) + 0.5 * static_cast<double>(e.featureRows)) * width * 4;
    e.matmulSpeed = measuredFlops();
    e.seconds = e.flops / (d / (d + 480) * e.matmulSpeed) + rankedBytes / 5e9;
    e.availableBytes = o.memoryLimit > 0 ? o.memoryLimit : availableMemory();
    e.fits = e.availableBytes == 0 || e.peakBytes <= e.availableBytes;
    return e;
}

}  // namespace circuitdetail

CircuitEstimate estimateCircuit(const Model& model, const CircuitTranscoders& transcoders, int64_t nTokens, const CircuitOptions& options) {
    layerSites(model, transcoders);
    const double perLP = options.activePerLayerPosition > 0 ? options.activePerLayerPosition
                                                            : static_cast<double>(std::min<int64_t>(64, transcoders.dTranscoder()));
    const int64_t active = static_cast<int64_t>(perLP * static_cast<double>(transcoders.numLayers()) * static_cast<double>(std::max<int64_t>(0, nTokens - 1)));
    return estimateWith(model, transcoders, nTokens, active, options);
}

AttributionGraph computeAttributionGraph(const Model& model, const CircuitTranscoders& transcoders, const std::vector<int64_t>& ids,
                                         const CircuitOptions& o, const CircuitProgress& progress, const std::atomic<bool>* cancel,
                                         CircuitStats* stats) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<LayerSites> sites = layerSites(model, transcoders);
    const ModelConfig& c = model.config();
    const int L = static_cast<int>(c.numLayers);
    const int64_t n = static_cast<int64_t>(ids.size());
    if (n < 2)
        throw Error("attribution graph: the prompt has " + std::to_string(n) + " token" + (n == 1 ? "" : "s") +
                    "; it needs at least 2 (features at position 0, the BOS, are left out, as circuit-tracer leaves them out).");
    for (int64_t id : ids)
        if (id < 0 || id >= c.vocabSize)
            throw Error("attribution graph: token id " + std::to_string(id) + " is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ").");
    if (o.batchSize < 1 || o.updateInterval < 1 || o.maxNLogits < 1 || o.maxFeatureNodes < 0)
        throw Error("attribution graph: batch size, update interval and max_n_logits must be positive and max_feature_nodes not negative.");
    const Encoders enc{transcoders};
    auto checkCancel = [&] {
        if (cancel && cancel->load()) throw Cancelled{};
    };
    const int64_t B = std::max<int64_t>(1, std::min<int64_t>(o.batchSize, static_cast<int64_t>(o.maxNLogits) + L * (n - 1) * transcoders.dTranscoder()));

    if (o.checkMemory) {  // the batched pass alone, before it runs (the rows are checked once the features are counted)
        const CircuitEstimate e = estimateWith(model, transcoders, n, 0, o);
        if (!e.fits)
            throw CircuitTooLarge("attribution graph: its batched forward pass alone would need " + e.text() +
                                  ". Use a shorter prompt or a smaller batch size.", e);
    }

    // Phase 1: the batched replacement pass (B copies of the prompt), kept for every backward pass.
    if (progress) progress("forward pass", 0, 1);
    c10::InferenceMode noInference(false);
    torch::AutoGradMode gradOn(true);
    ReplacementTaps taps(sites, enc, cancel);
    const torch::Tensor input = torch::tensor(ids, torch::kInt64).unsqueeze(0).expand({B, n}).contiguous();
    model.forward(input, torch::Tensor(), &taps);
    for (int l = 0; l < L; ++l)
        if (!taps.inputs[static_cast<size_t>(l)].defined() || !taps.outputs[static_cast<size_t>(l)].defined())
            throw Error("attribution graph: block " + std::to_string(l) + " of " + model.dir() + " did not compute " +
                        valuePath(model.family(), sites[static_cast<size_t>(l)].in) + " and " + valuePath(model.family(), sites[static_cast<size_t>(l)].out) + ".");
    if (progress) progress("forward pass", 1, 1);
    checkCancel();

    // Phase 0 (circuit-tracer's setup_attribution), from row 0 of that pass: activations, error and token vectors.
    std::vector<int64_t> featLayer, featPos, featIdx;
    std::vector<float> featAct;
    std::vector<torch::Tensor> layerActs(static_cast<size_t>(L));  // [n, d_sae], position 0 zeroed
    torch::Tensor errors = torch::zeros({L, n, c.hiddenSize});
    {
        torch::NoGradGuard noGrad;
        for (int l = 0; l < L; ++l) {
            const torch::Tensor x = taps.inputs[static_cast<size_t>(l)][0].detach().to(torch::kFloat32);
            torch::Tensor acts = enc.encode(l, x).clone();
            acts.index_put_({0}, 0.0);  // zero_positions: the BOS's features are left out
            layerActs[static_cast<size_t>(l)] = acts;
        }
        for (int l = 0; l < L; ++l) {
            const torch::Tensor x = taps.inputs[static_cast<size_t>(l)][0].detach().to(torch::kFloat32);
            torch::Tensor recon = transcoders.crossLayer ? transcoders.crossLayer->reconstruct(layerActs, l)
                                                         : transcoders.perLayer[static_cast<size_t>(l)]->decode(layerActs[static_cast<size_t>(l)], x);
            torch::Tensor err = taps.realOutputs[static_cast<size_t>(l)][0].to(torch::kFloat32) - recon;
            err.index_put_({0}, 0.0);
            errors.index_put_({l}, err);
            const torch::Tensor nz = layerActs[static_cast<size_t>(l)].nonzero();  // [k, 2] (position, feature), row-major order
            const torch::Tensor vals = layerActs[static_cast<size_t>(l)].index({nz.select(1, 0), nz.select(1, 1)});
            auto nzA = nz.accessor<int64_t, 2>();
            auto vA = vals.accessor<float, 1>();
            for (int64_t k = 0; k < nz.size(0); ++k) {
                featLayer.push_back(l);
                featPos.push_back(nzA[k][0]);
                featIdx.push_back(nzA[k][1]);
                featAct.push_back(vA[k]);
            }
        }
    }
    const int64_t nActive = static_cast<int64_t>(featIdx.size());
    if (nActive == 0) throw Error("attribution graph: no transcoder feature is active on this prompt after its first token.");
    const int64_t maxFeatureNodes = o.maxFeatureNodes > 0 ? std::min(o.maxFeatureNodes, nActive) : nActive;
    if (o.checkMemory) {
        CircuitOptions withRows = o;
        withRows.maxFeatureNodes = maxFeatureNodes;
        const CircuitEstimate e = estimateWith(model, transcoders, n, nActive, withRows);
        if (!e.fits)
            throw CircuitTooLarge("attribution graph: it would need " + e.text() + ". Use a shorter prompt, fewer feature nodes "
                                  "(max_feature_nodes) or a smaller batch size.", e);
    }

    // The logit targets (AttributionTargets._from_salient): the most probable tokens up to desired_logit_prob.
    const torch::Tensor logits = taps.logits[0][n - 1].to(torch::kFloat32);
    const torch::Tensor probs = torch::softmax(logits, -1);
    const int64_t k = std::min<int64_t>(o.maxNLogits, c.vocabSize);
    auto [topP, topIdx] = probs.topk(k);
    const torch::Tensor cumulative = topP.cumsum(0);
    int64_t cutoff = 0;
    while (cutoff < k && cumulative[cutoff].item<float>() < static_cast<float>(o.desiredLogitProb)) ++cutoff;  // searchsorted, left
    const int64_t nLogits = std::min(cutoff + 1, k);
    const torch::Tensor logitIds = topIdx.narrow(0, 0, nLogits);
    const torch::Tensor logitP = topP.narrow(0, 0, nLogits).contiguous();
    torch::Tensor logitVectors;
    {
        torch::NoGradGuard noGrad;
        const torch::Tensor wU = model.lmHead().to(torch::kFloat32);
        logitVectors = wU.index_select(0, logitIds) - wU.mean(0, /*keepdim=*/true);  // demeaned unembedding rows
    }

    // The active features by (layer, position) group: as sources, a group's decoder rows times its activations are
    // contracted with the gradient at its position.
    const torch::Tensor tokenVectors = taps.embeddings[0].detach().to(torch::kFloat32);  // [n, d]
    struct Group {
        int layer;
        int64_t pos, first, count;
    };
    std::vector<Group> groups;
    for (int64_t j = 0; j < nActive; ++j) {
        if (groups.empty() || groups.back().layer != featLayer[j] || groups.back().pos != featPos[j])
            groups.push_back({static_cast<int>(featLayer[j]), featPos[j], j, 0});
        ++groups.back().count;
    }
    // The vectors are gathered from the transcoders' (mapped) weights when a batch needs them, not held for every
    // active feature: a target's encoder vector, a group's decoder rows times the activations.
    const torch::Tensor featIdxT = torch::tensor(featIdx, torch::kInt64);
    const torch::Tensor actT = torch::tensor(featAct, torch::kFloat32);
    auto encoderVectors = [&](const std::vector<int64_t>& features) {
        torch::NoGradGuard noGrad;
        std::vector<torch::Tensor> rows;
        for (int64_t j : features)
            rows.push_back(enc.encoderVectors(static_cast<int>(featLayer[static_cast<size_t>(j)]), featIdxT.narrow(0, j, 1)));
        return torch::cat(rows);
    };

    // The rows: logits first, then features in the order they are visited.
    const int64_t width = nActive + (L + 1) * n;  // sources: features, errors, tokens (logit columns are all zero)
    const int64_t capacity = nLogits + maxFeatureNodes;
    const int64_t limit = o.rowMemoryLimit > 0 ? o.rowMemoryLimit : std::max<int64_t>(availableMemory() / 2, 64 << 20);
    RowStore store(capacity, width, limit, o.tempDir);
    std::vector<int64_t> rowNode(static_cast<size_t>(capacity));
    std::vector<int> rowLayer(static_cast<size_t>(capacity));    // the layer of each row's node (L for a logit)
    // Σ |row|, clamped at 1e-8: the ranking's normaliser, kept only when features are ranked (not every one gets a row)
    const bool ranked = maxFeatureNodes < nActive;
    std::vector<float> rowSum(ranked ? static_cast<size_t>(capacity) : 0);
    int64_t stored = 0, backwardPasses = 0, blocksCrossed = 0;
    double backwardSeconds = 0, contractionSeconds = 0, rankingSeconds = 0;
    auto since = [](std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
    const double forwardSeconds = since(start);

    // One backward pass for up to B targets: target i injects vectors[i] at (layer[i], position[i]) (layer L: the final
    // norm's output); row i gets the direct effect of every source.
    auto computeRows = [&](const std::vector<int>& tLayer, const std::vector<int64_t>& tPos, const torch::Tensor& vectors) {
        const int64_t m = static_cast<int64_t>(tLayer.size());
        std::vector<torch::Tensor> outs, grads;
        std::map<int, torch::Tensor> injections;
        for (int64_t i = 0; i < m; ++i) {
            torch::Tensor& g = injections[tLayer[static_cast<size_t>(i)]];
            if (!g.defined()) g = torch::zeros({B, n, c.hiddenSize});
            g[i][tPos[static_cast<size_t>(i)]].copy_(vectors[i]);
        }
        int top = 0;
        for (auto& [layer, g] : injections) {
            outs.push_back(layer == L ? taps.finalNorm : taps.inputs[static_cast<size_t>(layer)]);
            grads.push_back(g.to(outs.back().scalar_type()));
            top = std::max(top, layer);
        }
        // sources below the highest target layer: the output sites of blocks 0 .. top - 1, and the embeddings
        std::vector<torch::Tensor> wrt;
        for (int l = 0; l < std::min(top, L); ++l) wrt.push_back(taps.outputs[static_cast<size_t>(l)]);
        wrt.push_back(taps.embeddings);
        const auto backwardStart = std::chrono::steady_clock::now();
        const std::vector<torch::Tensor> g = torch::autograd::grad(outs, wrt, grads, /*retain_graph=*/true, /*create_graph=*/false,
                                                                  /*allow_unused=*/true);
        ++backwardPasses;
        blocksCrossed += std::min(top + 1, L);
        backwardSeconds += since(backwardStart);
        const auto contractionStart = std::chrono::steady_clock::now();
        torch::NoGradGuard noGrad;
        torch::Tensor rows = torch::zeros({B, width});
        const int outLayers = static_cast<int>(wrt.size()) - 1;
        for (size_t gi = 0; gi < groups.size(); ++gi) {
            const Group& G = groups[gi];
            torch::Tensor acc;
            const torch::Tensor feats = featIdxT.narrow(0, G.first, G.count);
            const torch::Tensor a = actT.narrow(0, G.first, G.count).unsqueeze(-1);
            for (int l = G.layer; l <= enc.lastOutput(G.layer) && l < outLayers; ++l) {
                const torch::Tensor& gl = g[static_cast<size_t>(l)];
                if (!gl.defined()) continue;
                const torch::Tensor decoders = enc.decoderRows(G.layer, l, feats) * a;  // a_s · W_dec rows, [count, d]
                const torch::Tensor part = torch::matmul(gl.select(1, G.pos).to(torch::kFloat32), decoders.t());
                acc = acc.defined() ? acc + part : part;
            }
            if (acc.defined()) rows.narrow(1, G.first, G.count).copy_(acc);
        }
        for (int l = 0; l < outLayers; ++l)
            if (g[static_cast<size_t>(l)].defined())
                rows.narrow(1, nActive + l * n, n).copy_((g[static_cast<size_t>(l)].to(torch::kFloat32) * errors[l].unsqueeze(0)).sum(-1));
        if (g.back().defined()) rows.narrow(1, nActive + L * n, n).copy_((g.back().to(torch::kFloat32) * tokenVectors.unsqueeze(0)).sum(-1));
        contractionSeconds += since(contractionStart);
        return rows.narrow(0, 0, m);
    };
    auto storeRows = [&](const torch::Tensor& rows, const std::vector<int64_t>& nodes) {
        const auto storeStart = std::chrono::steady_clock::now();
        store.rows(stored, rows.size(0)).copy_(rows);
        const torch::Tensor sums = ranked ? rows.abs().sum(1).clamp_min(1e-8).contiguous() : torch::Tensor();
        for (size_t i = 0; i < nodes.size(); ++i) {
            const size_t r = static_cast<size_t>(stored) + i;
            rowNode[r] = nodes[i];
            rowLayer[r] = nodes[i] >= width ? L : static_cast<int>(featLayer[static_cast<size_t>(nodes[i])]);
            if (ranked) rowSum[r] = sums.data_ptr<float>()[i];
        }
        stored += rows.size(0);
        contractionSeconds += since(storeStart);
    };

    // Phase 3: the logit rows.
    const int64_t logitOffset = width;  // the logits' node ids follow every source
    for (int64_t i = 0; i < nLogits; i += o.batchSize) {
        checkCancel();
        const int64_t m = std::min<int64_t>(o.batchSize, nLogits - i);
        for (int64_t s = 0; s < m; s += B) {
            const int64_t mm = std::min(B, m - s);
            std::vector<int> tl(static_cast<size_t>(mm), L);
            std::vector<int64_t> tp(static_cast<size_t>(mm), n - 1), nodes;
            for (int64_t r = 0; r < mm; ++r) nodes.push_back(logitOffset + i + s + r);
            storeRows(computeRows(tl, tp, logitVectors.narrow(0, i + s, mm)), nodes);
        }
        if (progress) progress("logit rows", i + m, nLogits);
    }

    // Phase 4: the feature rows, in circuit-tracer's order (influence-ranked when not all features get rows).
    std::vector<char> visited(static_cast<size_t>(nActive), 0);
    int64_t nVisited = 0;
    while (nVisited < maxFeatureNodes) {
        std::vector<int64_t> pending;
        if (!ranked) {
            pending.resize(static_cast<size_t>(nActive));
            std::iota(pending.begin(), pending.end(), 0);
        } else {
            const auto rankingStart = std::chrono::steady_clock::now();
            const torch::Tensor infl = partialInfluences(store, stored, rowNode, rowSum, rowLayer, logitP, width);
            const float* p = infl.data_ptr<float>();
            std::vector<int64_t> rank(static_cast<size_t>(nActive));
            std::iota(rank.begin(), rank.end(), 0);
            std::stable_sort(rank.begin(), rank.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
            const int64_t queueSize = std::min<int64_t>(static_cast<int64_t>(o.updateInterval) * o.batchSize, maxFeatureNodes - nVisited);
            for (int64_t j : rank) {
                if (static_cast<int64_t>(pending.size()) >= queueSize) break;
                if (!visited[static_cast<size_t>(j)]) pending.push_back(j);
            }
            // Visited latest layer first: a batch's backward pass crosses the blocks up to its highest target, so
            // batches of one or two layers stop early. The rows do not depend on which batch computes them, and the
            // next ranking sums every stored row whatever their order.
            std::stable_sort(pending.begin(), pending.end(),
                             [&](int64_t a, int64_t b) { return featLayer[static_cast<size_t>(a)] > featLayer[static_cast<size_t>(b)]; });
            rankingSeconds += since(rankingStart);
        }
        for (size_t q = 0; q < pending.size(); q += static_cast<size_t>(o.batchSize)) {
            checkCancel();
            const size_t qEnd = std::min(pending.size(), q + static_cast<size_t>(o.batchSize));
            for (size_t s = q; s < qEnd; s += static_cast<size_t>(B)) {
                const size_t sEnd = std::min(qEnd, s + static_cast<size_t>(B));
                std::vector<int> tl;
                std::vector<int64_t> tp, nodes;
                for (size_t r = s; r < sEnd; ++r) {
                    const int64_t j = pending[r];
                    tl.push_back(static_cast<int>(featLayer[static_cast<size_t>(j)]));
                    tp.push_back(featPos[static_cast<size_t>(j)]);
                    nodes.push_back(j);
                }
                storeRows(computeRows(tl, tp, encoderVectors(nodes)), nodes);
                for (int64_t j : nodes) visited[static_cast<size_t>(j)] = 1;
            }
            nVisited += static_cast<int64_t>(qEnd - q);
            if (progress) progress("feature rows", nVisited, maxFeatureNodes);
        }
    }
    // the pass is no longer needed
    taps.inputs.clear();
    taps.outputs.clear();
    taps.finalNorm = taps.embeddings = torch::Tensor();

    // Phase 5: the graph, nodes in circuit-tracer's order, edges by target.
    AttributionGraph graph;
    graph.tokenIds = ids;
    graph.numLayers = L;
    graph.modelDir = model.dir();
    graph.transcoderDir = transcoders.dir;
    graph.scan = transcoders.dir.empty() ? std::string() : fs::path(transcoders.dir).lexically_normal().filename().string();
    if (graph.scan.empty() && !transcoders.dir.empty()) graph.scan = fs::path(transcoders.dir).parent_path().filename().string();
    for (const auto& d : transcoders.perLayer) graph.transcoderList.push_back(d->dir);
    if (transcoders.crossLayer) graph.transcoderList = transcoders.crossLayer->weightFiles;
    const Tokenizer* tok = model.tokenizer();
    if (tok) {
        graph.prompt = tok->decode(ids);
        for (int64_t id : ids) graph.tokenStrings.push_back(tok->decode({id}));
    }
    std::vector<int64_t> columnNode(static_cast<size_t>(width), -1);  // source column -> node index (-1: dropped)
    std::vector<int64_t> featureRow(static_cast<size_t>(nActive), -1);
    for (int64_t r = nLogits; r < stored; ++r) featureRow[static_cast<size_t>(rowNode[static_cast<size_t>(r)])] = r;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t j = 0; j < nActive; ++j) {
        if (!visited[static_cast<size_t>(j)]) continue;
        columnNode[static_cast<size_t>(j)] = static_cast<int64_t>(graph.nodes.size());
        GraphNode node;
        node.kind = GraphNode::Kind::Feature;
        node.layer = static_cast<int>(featLayer[static_cast<size_t>(j)]);
        node.position = featPos[static_cast<size_t>(j)];
        node.index = featIdx[static_cast<size_t>(j)];
        node.activation = featAct[static_cast<size_t>(j)];
        node.influence = nan;
        graph.nodes.push_back(node);
    }
    for (int l = 0; l < L; ++l)
        for (int64_t p = 0; p < n; ++p) {
            columnNode[static_cast<size_t>(nActive + l * n + p)] = static_cast<int64_t>(graph.nodes.size());
            GraphNode node;
            node.kind = GraphNode::Kind::Error;
            node.layer = l;
            node.position = p;
            node.influence = nan;
            graph.nodes.push_back(node);
        }
    for (int64_t p = 0; p < n; ++p) {
        columnNode[static_cast<size_t>(nActive + L * n + p)] = static_cast<int64_t>(graph.nodes.size());
        GraphNode node;
        node.kind = GraphNode::Kind::Token;
        node.layer = -1;
        node.position = p;
        node.index = ids[static_cast<size_t>(p)];
        if (tok) node.token = tok->decode({node.index});
        node.influence = nan;
        graph.nodes.push_back(node);
    }
    for (int64_t i = 0; i < nLogits; ++i) {
        GraphNode node;
        node.kind = GraphNode::Kind::Logit;
        node.layer = L + 1;
        node.position = n - 1;
        node.index = logitIds[i].item<int64_t>();
        node.tokenProb = logitP[i].item<float>();
        node.targetLogit = i == 0;
        if (tok) node.token = tok->decode({node.index});
        node.influence = nan;
        graph.nodes.push_back(node);
    }
    graph.rowStart.assign(1, 0);
    auto appendRow = [&](int64_t r) {
        const float* row = store.row(r);
        for (int64_t col = 0; col < width; ++col) {
            const float w = row[col];
            if (w == 0.0f || columnNode[static_cast<size_t>(col)] < 0) continue;
            graph.source.push_back(static_cast<int32_t>(columnNode[static_cast<size_t>(col)]));
            graph.weight.push_back(w);
        }
    };
    for (int64_t j = 0; j < nActive; ++j) {
        if (!visited[static_cast<size_t>(j)]) continue;
        appendRow(featureRow[static_cast<size_t>(j)]);
        graph.rowStart.push_back(static_cast<int64_t>(graph.source.size()));
    }
    for (int64_t e = 0; e < (L + 1) * n; ++e) graph.rowStart.push_back(static_cast<int64_t>(graph.source.size()));
    for (int64_t i = 0; i < nLogits; ++i) {
        appendRow(i);
        graph.rowStart.push_back(static_cast<int64_t>(graph.source.size()));
    }
    if (stats) {
        stats->activeFeatures = nActive;
        stats->selectedFeatures = nVisited;
        stats->backwardPasses = backwardPasses;
        stats->blocksCrossed = blocksCrossed;
        stats->forwardSeconds = forwardSeconds;
        stats->backwardSeconds = backwardSeconds;
        stats->contractionSeconds = contractionSeconds;
        stats->rankingSeconds = rankingSeconds;
        stats->rowsOnDisk = store.onDisk;
        stats->rowBytes = store.bytes();
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return graph;
}

}  // namespace nnscope
