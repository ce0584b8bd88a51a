// SPDX-License-Identifier: MIT
#pragma once
// Offline feature dashboards: a local text file (one document per line) run through a model and one attached sparse
// dictionary, keeping per feature its top activating contexts, a histogram of its activations, its density and its
// maximum, in one .safetensors file the window browses (docs/FEATURES.md#dashboards-a-features-top-contexts-in-your-own-text holds the file's layout).
#include "core/model/model.h"
#include "core/run/features.h"

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace nnscope {

/// The file layout's constants (docs/FEATURES.md#dashboards-a-features-top-contexts-in-your-own-text).
constexpr int kDashboardTopK = 20;           ///< top activating positions kept per feature
constexpr int kDashboardBefore = 8;          ///< context tokens kept before a top position
constexpr int kDashboardAfter = 4;           ///< ... and after it
constexpr int kDashboardWindow = kDashboardBefore + 1 + kDashboardAfter;
/// The histogram's bins: log10 of the activation, kDashboardBinsPerDecade bins per decade from 10^kDashboardLogMin
/// to 10^kDashboardLogMax; an activation below the range counts in the first bin, above it in the last.
constexpr int kDashboardBinsPerDecade = 10;
constexpr int kDashboardLogMin = -5, kDashboardLogMax = 5;
constexpr int kDashboardBins = (kDashboardLogMax - kDashboardLogMin) * kDashboardBinsPerDecade;
/// The lower edge of histogram bin `bin` (its upper edge is binEdge(bin + 1)).
double dashboardBinEdge(int bin);

/// A feature dashboard, built by makeDashboard or read by loadDashboard. Axes: feature (d_sae), slot (kDashboardTopK,
/// largest activation first), context (kDashboardWindow: kDashboardBefore tokens, the top position, kDashboardAfter).
/// The BOS position of every window (the position the tokenizer's BOS token sits at) is left out of every statistic and
/// of the top positions, as dictionary evaluations leave it out (runDictionary): it is an outlier of every site.
struct Dashboard {
    torch::Tensor topActivation;      ///< float32 [feature, slot]; 0 in an empty slot
    torch::Tensor topDocument;        ///< int64 [feature, slot]: the document (the dataset's line, from 0); -1 marks an empty slot
    torch::Tensor topPosition;        ///< int64 [feature, slot]: the token's position in its document's ids (BOS = 0)
    torch::Tensor contextIds;         ///< int32 [feature, slot, context]: token ids around it; -1 outside its window
    torch::Tensor contextActivation;  ///< float32 [feature, slot, context]: the feature's activation on each (0 outside)
    torch::Tensor histogram;          ///< int64 [feature, bin]: counts of the feature's activations above 0
    torch::Tensor activeCount;        ///< int64 [feature]: positions where the feature is above 0
    torch::Tensor maxActivation;      ///< float32 [feature]: its largest activation (0 when it never fired)
    int64_t positions = 0;            ///< positions counted (BOS positions excluded): density = activeCount / positions
    /// The provenance and progress (the file's metadata, as strings): format, model (the folder as given),
    /// model_fingerprint ("file:hex, ...": config.json's sha256, each .safetensors file's fileFingerprint), dtype, dictionary (as given), dictionary_format,
    /// dictionary_sha256, site, dataset (as given), dataset_sha256, documents (lines of the dataset), documents_done,
    /// tokens_done, positions, context_size, complete, bos_excluded, nnscope_version.
    std::map<std::string, std::string> metadata;

    int64_t dSae() const { return activeCount.defined() ? activeCount.size(0) : 0; }
    /// activeCount[feature] / positions (0 when nothing was counted).
    double density(int64_t feature) const;
    /// The filled slots of `feature` (top activations above 0).
    int filledSlots(int64_t feature) const;
};

/// Reads a dashboard file written by makeDashboard (memory-mapped). Throws nnscope::Error naming the file: not a
/// safetensors file, not a dashboard (metadata "format" is not nnscope-dashboard-1), a tensor missing or of the wrong shape.
Dashboard loadDashboard(const std::string& path);

/// Where a dashboard of the dictionary in `dictionaryDir` is looked for: `<dictionaryDir>/dashboard.safetensors`; for
/// one layer of a circuit-tracer transcoder set (its Dictionary::dir is the layer's weights file, `layer_3.safetensors`)
/// the file beside it, `layer_3.dashboard.safetensors`.
std::string defaultDashboardPath(const std::string& dictionaryDir);

/// The dashboard beside dictionary `d` (defaultDashboardPath of its dir), or nullptr when there is none. Throws
/// nnscope::Error when the file is not a dashboard (loadDashboard) or was made from other weights than `d`'s (its
/// dictionary_sha256 is not filesSha256 of d's weight files: a dictionary trained again in its folder makes the old
/// dashboard stale). Hashes d's weights once per call.
std::shared_ptr<const Dashboard> findDashboard(const Dictionary& d);

/// Progress of makeDashboard, reported after every batch.
struct DashboardProgress {
    int64_t documentsDone = 0;   ///< documents (lines) finished, counting those of a resumed file
    int64_t documentsTotal = 0;  ///< the documents the run will do (the dataset's lines, or --max-documents)
    int64_t tokensDone = 0;      ///< tokens run (BOS included), counting those of a resumed file
    int64_t tokensThisRun = 0;   ///< tokens run by this call
    double seconds = 0;          ///< since this call started
};

/// What makeDashboard runs and where it writes.
struct DashboardOptions {
    std::string dataset;         ///< a UTF-8 text file, one document per line (a trailing \r is dropped; blank lines count as documents with no tokens)
    std::string out;             ///< the dashboard file (.safetensors); resumed when it exists
    int64_t contextSize = 128;   ///< tokens per window, BOS included: a longer document is cut into windows, each given its own BOS
    int batchSize = 16;          ///< windows per forward pass
    int64_t maxDocuments = 0;    ///< stop after this many documents (0: all)
    int64_t maxTokens = 0;       ///< stop reading documents once this many tokens were run (0: no limit)
    double saveEverySeconds = 60;  ///< the file is rewritten (atomically) this often, between documents, and at the end
    std::function<void(const DashboardProgress&)> progress;
    /// When set to true, the run stops at the next document boundary after the current batch and writes what is done.
    const std::atomic<bool>* cancel = nullptr;
};

/// What makeDashboard did.
struct DashboardRun {
    DashboardProgress progress;
    bool complete = false;  ///< every document (up to the limits) is in the file
    bool cancelled = false;
    int64_t resumedFrom = 0;  ///< documents the file held when this call started
};

/// Runs `options.dataset` through `model` (trace, stopped after the dictionary's block, saving only its input site) and
/// `attached` (its encoder) in batches of windows, and writes the dashboard to `options.out` (writeSafetensors: atomic).
/// Each document is tokenized as a prompt is (encodeBatch: the tokenizer's BOS where it adds one); a document longer than
/// contextSize is cut into windows of contextSize - 1 tokens, each run after its own BOS. When `options.out` exists it
/// is resumed from its documents_done, provided the model's fingerprint (config.json's sha256 and fileFingerprint of its
/// weights files: a 16 GB checkpoint is not read whole), the dtype, the
/// dictionary weights' sha256, the site, the dataset's sha256 and the context size all match; else nothing runs. Throws nnscope::Error: the dataset
/// missing or unreadable, empty, or with no token after any BOS (nothing is written then); the out file not a
/// dashboard, or made from another model, dictionary, dataset or context size (naming what differs); a context size
/// below 2 or a batch below 1.
DashboardRun makeDashboard(const Model& model, const AttachedDictionary& attached, const DashboardOptions& options);

}  // namespace nnscope
