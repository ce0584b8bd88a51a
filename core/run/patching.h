// SPDX-License-Identifier: MIT
#pragma once
#include "core/run/edit.h"
#include "core/run/trace.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nnscope {

/// What activation patching measures on the patched run's last position.
struct PatchMetric {
    enum class Kind { LogitDifference, TargetProbability } kind = Kind::LogitDifference;
    int64_t answer = -1;      ///< logit difference: logit[answer] - logit[wrong]; probability: the target token
    int64_t wrong = -1;
};

/// The value patched at each block × position. AllHeads patches each head of attention_head_outputs [batch seq
/// num_heads head_dim] on its own (one cell per block × head × position: TransformerLens' per-head patching,
/// patching.get_act_patch_attn_head_out_by_pos, generalising HeadOutput's one head to all of them in one run).
enum class PatchSite { LayerOutput, AttentionOutput, MlpOutput, HeadOutput, AllHeads };

/// Parses a site as the command line writes it: layer_output, attention_output, mlp_output, head:H (H a head index,
/// stored in `*head`; not checked against a model here), or heads / head:all (every head). Throws nnscope::Error naming
/// the accepted spellings.
PatchSite parsePatchSite(const std::string& text, int* head);

/// Parses a list of blocks or positions as the command line and the Patching view write it: comma-separated items,
/// each an index (negative counts from the end: -1 is the last) or an inclusive range A-B of non-negative indices
/// ("-1", "0,3,5", "2-6", "0,2-4,-1"). Returns the indices in [0, count), sorted, each once; an empty or blank text
/// means all of them. `what` names the list in errors ("--positions"). Throws nnscope::Error for an item that is not an
/// index or a range, an index outside [-count, count), or a range whose end is before its start.
std::vector<int64_t> parseIndexList(const std::string& text, int64_t count, const std::string& what);

/// The progress line of a long run: "cell K of N, about T s left", T extrapolated from `elapsedSeconds` spent on the
/// first K cells (no estimate before the first cell is done: "cell 0 of N").
std::string patchProgressText(int done, int total, double elapsedSeconds);

/// The rows one forward batch of activation patching holds when PatchingOptions::batch is 0, for prompts of `tokens`
/// tokens: enough rows that the per-pass overhead of a short prompt is shared (measured on 2 cores, docs/PERFORMANCE.md),
/// fewer as the prompt grows so a batch stays about 512 positions long (and its attention 512 x tokens per head).
int defaultPatchBatch(int64_t tokens);

struct PatchingOptions {
    PatchSite site = PatchSite::LayerOutput;
    int head = 0;  ///< for HeadOutput: which head of attention_head_outputs
    PatchMetric metric;
    /// The blocks patched (indices into [0, num_layers); negative count from the end); empty: all. The other blocks'
    /// cells are NaN and not run.
    std::vector<int64_t> blocks;
    /// The positions patched (indices into the prompt's tokens; negative count from the end); empty: all. The other
    /// positions' cells are NaN and not run.
    std::vector<int64_t> positions;
    /// Patched runs per forward batch (each row the corrupted prompt with its own one site patched); 0: defaultPatchBatch.
    /// Under an intervention that mixes rows (Intervention::mixesRows, a `mean` edit) every run gets its own pass.
    int batch = 0;
    /// The session's interventions (edits, steering, skipped blocks, feature edits: core/run/edit.h), applied to the
    /// clean run, the corrupted run and every patched run (attribution patching: its clean pass and its corrupted pass
    /// with the backward through them), before the patch where both touch one value: a patched run is the corrupted
    /// prompt traced with them, its site at one block and position then replaced by the clean run's (edited) value.
    /// Positions count from the prompt (PassPositions). Null: none.
    std::shared_ptr<const Intervention> intervention;
    /// The interventions as written (addIntervention's syntax), for the result's provenance; not parsed here.
    std::vector<std::string> interventionTexts;
    std::function<void(int done, int total)> progress;
    const std::atomic<bool>* cancel = nullptr;
};

/// The result: metric[layer][position] of the corrupted run with the clean value patched in at (layer,
/// position), plus the metric of the clean and corrupted runs themselves.
struct PatchingResult {
    /// [num_layers][seq]; for PatchSite::AllHeads [num_layers * num_heads][seq], row i * num_heads + h being head h of
    /// block i. Cells of blocks or positions not chosen (PatchingOptions::blocks, positions) are NaN.
    std::vector<std::vector<double>> grid;
    int headsPerBlock = 0;                  ///< PatchSite::AllHeads: num_heads (rows per block); otherwise 0
    double clean = 0, corrupted = 0;
    std::vector<std::string> tokens;        ///< the corrupted prompt's token labels (x axis)
    std::string site;                       ///< the patched value's path template, e.g. "layers.{i}.layer_output"
    std::vector<std::string> interventions; ///< PatchingOptions::interventionTexts: what every run applied
    /// Attribution patching's estimate of `grid` ([num_layers][seq]; empty unless computed: the window computes both).
    std::vector<std::vector<double>> estimate;
};

/// Activation patching (Meng et al. 2022; Heimersheim & Nanda 2024): runs `clean` and `corrupted` (same token
/// count), then for every chosen block i and position p (and head h, for AllHeads) reruns `corrupted` with the chosen
/// value at (i, p[, h]) replaced by the clean run's, and measures the metric; options.intervention applies to every one
/// of these runs. The patched runs go options.batch at a time through one forward pass, row r of the batch [B, seq]
/// being the corrupted prompt with its own cell patched; each row equals its one-row pass within float32 rounding. The
/// patched runs compute the logits at the last position only (what the metric reads; all of them where the
/// interventions edit the logits).
/// options.progress reports cells done of the cells chosen. Throws nnscope::Error when the prompts' lengths differ, a
/// token id, head, block or position is out of range, or the batch is negative; nnscope::Cancelled on cancel (checked
/// between batches and within each pass).
PatchingResult activationPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                  const PatchingOptions& options);

/// The metric of a run's logits [1, seq, vocab] at the last position.
double patchMetricValue(const PatchMetric& metric, const torch::Tensor& logits);

/// Attribution patching (Nanda 2023, "Attribution Patching: Activation Patching At Industrial Scale"; Syed, Rager
/// and Conmy 2023): the first-order estimate of activationPatching's grid from one clean pass, one corrupted pass
/// and one backward pass of the corrupted run (libtorch autograd through the same forward):
///   grid[i][p] ~= corrupted + sum over the site's features of dmetric/da(corrupted)[i, p] * (a_clean - a_corrupted)[i, p]
/// for the same sites (PatchSite, AllHeads summing over each head's head_dim features) and metric. Exact where the
/// metric is linear in the site's value; compare it with the exact grid (gridCorrelation). The cells of blocks and
/// positions not chosen are NaN, as in activationPatching. Throws as activationPatching.
PatchingResult attributionPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                   const PatchingOptions& options);

/// Pearson's correlation of two grids of the same shape, over every cell that is a number in both (cells not run are
/// NaN and left out; NaN when either is constant or no cell is left). Throws nnscope::Error when the shapes differ.
double gridCorrelation(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace nnscope
