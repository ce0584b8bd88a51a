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

/// The value patched at each block × position.
enum class PatchSite { LayerOutput, AttentionOutput, MlpOutput, HeadOutput };

/// Parses a site as the command line writes it: layer_output, attention_output, mlp_output or head:H (H a head index,
/// stored in `*head`; not checked against a model here). Throws nnscope::Error naming the accepted spellings.
PatchSite parsePatchSite(const std::string& text, int* head);

struct PatchingOptions {
    PatchSite site = PatchSite::LayerOutput;
    int head = 0;  ///< for HeadOutput: which head of attention_head_outputs
    PatchMetric metric;
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
    std::vector<std::vector<double>> grid;  ///< [num_layers][seq]
    double clean = 0, corrupted = 0;
    std::vector<std::string> tokens;        ///< the corrupted prompt's token labels (x axis)
    std::string site;                       ///< the patched value's path template, e.g. "layers.{i}.layer_output"
    std::vector<std::string> interventions; ///< PatchingOptions::interventionTexts: what every run applied
    /// Attribution patching's estimate of `grid` ([num_layers][seq]; empty unless computed: the window computes both).
    std::vector<std::vector<double>> estimate;
};

/// Activation patching (Meng et al. 2022; Heimersheim & Nanda 2024): runs `clean` and `corrupted` (same token
/// count), then for every block i and position p reruns `corrupted` with the chosen value at (i, p) replaced by
/// the clean run's, and measures the metric; options.intervention applies to every one of these runs. Throws nnscope::Error when the prompts' lengths differ or a token
/// id is out of range; nnscope::Cancelled on cancel.
PatchingResult activationPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                  const PatchingOptions& options);

/// The metric of a run's logits [1, seq, vocab] at the last position.
double patchMetricValue(const PatchMetric& metric, const torch::Tensor& logits);

/// Attribution patching (Nanda 2023, "Attribution Patching: Activation Patching At Industrial Scale"; Syed, Rager
/// and Conmy 2023): the first-order estimate of activationPatching's grid from one clean pass, one corrupted pass
/// and one backward pass of the corrupted run (libtorch autograd through the same forward):
///   grid[i][p] ~= corrupted + sum over the site's features of dmetric/da(corrupted)[i, p] * (a_clean - a_corrupted)[i, p]
/// for the same sites (PatchSite) and metric. Exact where the metric is linear in the site's value; compare it with
/// the exact grid (gridCorrelation). Throws as activationPatching.
PatchingResult attributionPatching(const Model& model, const std::vector<int64_t>& clean, const std::vector<int64_t>& corrupted,
                                   const PatchingOptions& options);

/// Pearson's correlation of two grids of the same shape, over every cell (NaN when either is constant). Throws
/// nnscope::Error when the shapes differ.
double gridCorrelation(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace nnscope
