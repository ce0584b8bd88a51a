// SPDX-License-Identifier: MIT
#pragma once
// Attribution graphs ("Circuit Tracing", Ameisen et al. 2025) computed as circuit-tracer 0.5.0 computes them
// (circuit_tracer/attribution/attribute.py, context_transformerlens.py, targets.py,
// replacement_model/replacement_model_transformerlens.py).
//
// The local replacement model: one forward pass of the prompt in which every norm's scale and every attention pattern
// is cut from autograd (FreezeTaps' freezing), and each block's MLP output (the transcoder's output site) is replaced, for
// the gradient only, by the transcoder's skip term (zero without a skip) plus a frozen remainder. The pass is then linear
// in the residual stream. Its nodes:
//   - features: every (layer, position, feature) whose activation is non-zero, position 0 (the BOS) excluded;
//   - errors: per layer and position, the output site's real value minus the transcoder's reconstruction (0 at
//     position 0);
//   - tokens: per position, the embedding as it enters the stream (token_embeddings; Gemma's √hidden scale included);
//   - logits: the most probable next tokens, at most max_n_logits, up to cumulative probability desired_logit_prob;
//     a logit's direction is its unembedding row minus the mean row, read at the final norm's output (norm frozen).
// An edge s → t is the direct effect of s on t: for a feature target, t's encoder vector contracted with the gradient of
// t's input site (at t's position) with respect to s's output site (at s's position), times s's output vector (its
// activation times its decoder row; for a cross-layer feature summed over the output layers it writes to; an error
// node's vector; a token's embedding); for a logit target the same with its direction at the final norm's output.
//
// Hooks map to nnscope values as core/run/features.h dictionarySite maps them (Llama / Qwen3 mlp.hook_in = mlp_input,
// mlp.hook_out = mlp_output; Gemma hook_mlp_out = post_feedforward_layernorm.output; ln2.hook_normalized = the
// pre-MLP norm's output before its gain; hook_resid_mid = layer_mid).
#include "core/analysis/circuitgraph.h"
#include "core/io/dictionary.h"
#include "core/io/transcoderset.h"
#include "core/model/error.h"
#include "core/model/model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nnscope {

/// The transcoders a graph is computed with: one per-layer transcoder per block (a circuit-tracer transcoder_set, or
/// SAELens / Gemma Scope 2 transcoders, one per layer, layer 0 first), or one cross-layer transcoder.
struct CircuitTranscoders {
    std::vector<std::shared_ptr<const Dictionary>> perLayer;  ///< entry l reads and writes block l; empty for a CLT
    std::shared_ptr<const CrossLayerTranscoder> crossLayer;   ///< null for per-layer transcoders
    std::string dir;                                          ///< the folder they were read from ("" when built in memory)

    /// Blocks covered (perLayer.size(), or the CLT's n_layers).
    int64_t numLayers() const;
    /// The width of the sites they read (d_model), from layer 0.
    int64_t dModel() const;
    /// Features per layer (the largest d_sae of the per-layer transcoders).
    int64_t dTranscoder() const;
    /// Bytes of every weight tensor (what reading them all from their memory-mapped files brings into memory).
    int64_t weightBytes() const;
    /// One line for messages.
    std::string describe() const;
};

/// Reads the transcoders at `path`: a circuit-tracer folder (config.yaml: a transcoder_set or a cross_layer_transcoder),
/// or a folder whose subfolders each hold one per-layer transcoder nnscope reads (SAELens, Gemma Scope 2: loadDictionary),
/// ordered by the block their input site names. Throws nnscope::Error naming the path: no transcoders there, a subfolder
/// that holds an SAE (not a transcoder), two transcoders for one block, a block without one.
CircuitTranscoders loadCircuitTranscoders(const std::string& path);

/// How a graph is computed (circuit_tracer.attribute's arguments).
struct CircuitOptions {
    int maxNLogits = 10;              ///< max_n_logits: at most this many logit targets
    double desiredLogitProb = 0.95;   ///< desired_logit_prob: logits are kept until their cumulative probability reaches it
    int batchSize = 512;              ///< batch_size: targets per backward pass (and per step of the feature ranking)
    /// max_feature_nodes: the features that get rows (edges into them), chosen by circuit-tracer's influence ranking
    /// (every update_interval batches the features not yet visited are ranked by their influence on the logits
    /// through the rows computed so far); 0: every active feature.
    int64_t maxFeatureNodes = 0;
    int updateInterval = 4;           ///< update_interval
    /// Bytes the rows of the graph may hold in memory; beyond it they go to a memory-mapped temporary file (unlinked at
    /// once, so nothing is left behind). 0: half of the memory available now (/proc/meminfo MemAvailable).
    int64_t rowMemoryLimit = 0;
    std::string tempDir;              ///< where that file goes; "" = the system's temporary folder
    /// For estimateCircuit only: the expected number of active features per layer and position (the transcoders'
    /// L0). 0: 64, or d_transcoder when smaller. computeAttributionGraph re-estimates with the real count.
    double activePerLayerPosition = 0;
    /// Refuse (nnscope::CircuitTooLarge) when the estimate does not fit in the memory available. On by default.
    bool checkMemory = true;
    /// The bytes the run may use; 0: the memory available now (/proc/meminfo MemAvailable).
    int64_t memoryLimit = 0;
};

/// What the computation reports while it runs: its phase ("forward pass", "logit rows", "feature rows") and how
/// many of its steps are done.
using CircuitProgress = std::function<void(const std::string& phase, int64_t done, int64_t total)>;

/// What a run measured.
struct CircuitStats {
    int64_t activeFeatures = 0;   ///< features active after position 0 (circuit-tracer's total_active_feats)
    int64_t selectedFeatures = 0; ///< features that got rows
    int64_t backwardPasses = 0;
    bool rowsOnDisk = false;      ///< the rows went to a memory-mapped temporary file
    int64_t rowBytes = 0;         ///< bytes the rows took (in memory or in the file)
    /// Σ over backward passes of the blocks the gradient crossed (the highest target's layer + 1, or every block for
    /// a logit): the backward cost in block-passes of one batch.
    int64_t blocksCrossed = 0;
    double seconds = 0;           ///< the whole run, wall clock
    double forwardSeconds = 0;    ///< the batched replacement pass and the real values (phases 0 and 1)
    double backwardSeconds = 0;   ///< autograd's backward passes
    double contractionSeconds = 0;///< the rows from the gradients (decoder rows, errors, tokens) and storing them
    double rankingSeconds = 0;    ///< the influence ranking of the features not yet visited (max_feature_nodes)
};

/// The estimate of a run before it starts.
struct CircuitEstimate {
    int64_t tokens = 0;
    int64_t activeFeatures = 0;   ///< assumed (estimateCircuit) or counted (inside computeAttributionGraph)
    int64_t featureRows = 0;      ///< rows computed: min(max_feature_nodes, active features)
    /// Peak bytes of the run beyond what the loaded model already holds: the transcoders' weights, the batched
    /// forward pass kept for the backward passes, its gradients, the rows, the finished graph.
    int64_t peakBytes = 0;
    int64_t rowBytes = 0;         ///< of which the rows (the largest part on long prompts)
    bool rowsOnDisk = false;      ///< the rows exceed CircuitOptions::rowMemoryLimit and go to a temporary file
    double flops = 0;             ///< forward + every backward pass + the row contractions
    double seconds = 0;           ///< flops at width / (width + 480) of matmulSpeed, plus the ranking's reads (fitted on bench/circuit_bench.cpp)
    double matmulSpeed = 0;       ///< FLOP/s of a 512 × 512 float32 product, measured once per process (the time's unit)
    int64_t availableBytes = 0;   ///< CircuitOptions::memoryLimit, or /proc/meminfo MemAvailable when estimated
    bool fits = true;             ///< peakBytes <= availableBytes
    /// "about 1.2 GB of memory (0.8 GB of rows), about 40 s, for 64 tokens and ~60k active features".
    std::string text() const;
};

/// Thrown when a graph would not fit in the available memory: what() says the estimate; `estimate` holds it.
class CircuitTooLarge : public Error {
public:
    CircuitTooLarge(const std::string& message, CircuitEstimate e) : Error(message), estimate(std::move(e)) {}
    CircuitEstimate estimate;
};

/// The memory and time a graph of `nTokens` tokens will take with `transcoders` on `model`, before running: memory
/// from the sizes (the batched forward pass and its gradients, one per-position contraction buffer, the rows
/// [featureRows + logits, active + (layers + 1) · tokens] float32, the CSR graph), time from a FLOP count at the speed
/// of a short float32 matrix multiply measured once per process. The active feature count is assumed:
/// options.activePerLayerPosition × layers × (nTokens - 1). Throws nnscope::Error when the transcoders do not fit the
/// model (checkCircuitInputs); never throws for size (see `fits`).
CircuitEstimate estimateCircuit(const Model& model, const CircuitTranscoders& transcoders, int64_t nTokens, const CircuitOptions& options);

/// Throws nnscope::Error when `transcoders` cannot be used with `model`: a layer count that differs from the model's
/// num_layers, a site width that is not the model's (d_model), a site the family lacks or another block's site, a
/// per-layer dictionary that is not a transcoder, one whose encoder is not linear in its input (gated, run-time
/// normalisations other than a constant scale), a model that does not compute in float32.
void checkCircuitInputs(const Model& model, const CircuitTranscoders& transcoders);

/// Computes the unpruned attribution graph of `tokenIds` (the prompt's ids, BOS first where the tokenizer adds one;
/// at least 2) on `model` with `transcoders`, as circuit_tracer.attribute(prompt, model, max_n_logits,
/// desired_logit_prob, batch_size, max_feature_nodes, update_interval) computes it: the nodes in circuit-tracer's order
/// (circuitgraph.h: the selected features, the errors, the tokens, the logits), every non-zero edge into the features
/// and the logits (edges from features not selected are dropped, as circuit-tracer drops their columns). Node
/// influence is NaN (not pruned). Edge weights are float32, in the target's units (a feature's pre-activation, the
/// logit direction). The batched pass is computed once and kept for the backward passes; rows are computed in batches
/// of options.batchSize, with `progress` after each and `cancel` checked between them (nnscope::Cancelled). Rows never
/// held as a dense [nodes × nodes] matrix: [rows × sources] only, spilled to a memory-mapped temporary file beyond
/// options.rowMemoryLimit. `stats` (may be null) gets what the run measured. Throws nnscope::Error (checkCircuitInputs,
/// a prompt of fewer than 2 tokens, a token id outside the vocabulary, no active feature), CircuitTooLarge (when
/// options.checkMemory and the estimate with the real active count does not fit), nnscope::Cancelled.
AttributionGraph computeAttributionGraph(const Model& model, const CircuitTranscoders& transcoders, const std::vector<int64_t>& tokenIds,
                                         const CircuitOptions& options = {}, const CircuitProgress& progress = {},
                                         const std::atomic<bool>* cancel = nullptr, CircuitStats* stats = nullptr);

}  // namespace nnscope
