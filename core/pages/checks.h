// SPDX-License-Identifier: MIT
#pragma once
// The family notes' checks: every note in families/<family>.cpp that states a checkable fact names one or more
// check ids (FamilyNote::checks); runFamilyChecks runs them on the loaded checkpoint and a short prompt. A check
// compares what the engine computes against an independent recomputation from the stored weights (float64, from
// the tensors as the file holds them) or against the claim itself, and reports a measured figure: the figures the
// seeds quote for one checkpoint (the largest effective alpha_p, the norm of the sink position, ...) are computed
// live for whichever checkpoint is loaded. docs/FAMILIES.md lists every check id and what it measures.
#include "core/model/model.h"

#include <string>
#include <utility>
#include <vector>

namespace nnscope {

/// How a result reads: a claim that holds or not (✔/✗), a measured figure the note states no bound for (ℹ), or a
/// claim that does not apply to this checkpoint (–, e.g. a relu² property on a checkpoint whose hidden_act is gelu).
enum class CheckKind { Claim, Figure, Skipped };

/// The result of one check on one checkpoint.
struct CheckResult {
    std::string id;       ///< the check id as the note names it, argument included ("rope_kind:default|yarn")
    std::string title;    ///< what the check verifies, one line
    bool passed = false;  ///< Claim: whether the claim held. Figure and Skipped: true (nothing failed)
    std::string figure;   ///< the measured figure, e.g. "max |diff| 0 (exact, float32)", "38% exactly zero"
    std::string detail;   ///< how it was measured, per-block figures, or why it failed / does not apply
    CheckKind kind = CheckKind::Claim;
};

/// The prompt the checks run on when none is given (short, so that a check costs about one forward pass).
inline constexpr const char* kDefaultCheckPrompt = "Tom and Lily went to the park. They saw a big dog";

/// Runs every check the family's notes name (each distinct id once, in note order) on `model` with one traced
/// forward pass of `prompt` (tokenized with the model's tokenizer, BOS as it adds it; without a tokenizer a fixed run
/// of ids is used and bos_prepended fails), saving only the values the checks read. qk_norm_renormalizes runs two
/// more passes with an edit. An unknown check id or an exception inside one check gives a failed result for that
/// check rather than an exception: the page always shows every note.
/// Throws nnscope::Error when the prompt gives fewer than 3 tokens (no check can run on it; the message says so) and
/// when the forward pass itself fails (e.g. a token id outside the vocabulary).
std::vector<CheckResult> runFamilyChecks(const Model& model, const std::string& prompt = kDefaultCheckPrompt);

/// The distinct check ids named by `family`'s notes, in note order.
std::vector<std::string> familyCheckIds(const Family& family);

/// Every check id nnscope knows (without arguments), with what it verifies, for docs and tests.
std::vector<std::pair<std::string, std::string>> knownChecks();

/// The mark of a result: "✔" (claim held), "✗" (claim failed), "ℹ" (a figure), "–" (does not apply).
const char* checkMark(const CheckResult& result);

/// Counts of results by outcome.
struct CheckSummary {
    int passed = 0, failed = 0, figures = 0, skipped = 0;
};
CheckSummary summarizeChecks(const std::vector<CheckResult>& results);

}  // namespace nnscope
