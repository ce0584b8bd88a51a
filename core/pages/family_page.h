// SPDX-License-Identifier: MIT
#pragma once
// The family page: the seeds' encyclopedia page (shared/seeds/) generated for the loaded checkpoint from the family's
// own description in families/<family>.cpp, with every note's checks run on the checkpoint (core/pages/checks.h). The
// sections, in the seeds' order: the title and quirk chips; "The block" (the strip embed_tokens → layers × N → norm
// → lm_head → logits, the block in the order it runs, the identity line); "The API" ("Values, by host" from
// supportTable, "Printout", "Config"); "The Notes" ("The block, in order" from blockFormulas (core/model/block.h), then every note
// with its checks, ✔/✗ and the measured figure); "From the family module" (Family::description).
#include "core/pages/checks.h"
#include "core/model/model.h"

#include <string>
#include <vector>

namespace nnscope {

/// The two renderings of a page: Markdown (CommonMark + pipe tables) and one self-contained HTML document.
enum class PageFormat { Markdown, Html };

/// Parses "md", "markdown", "html" or "htm" (any case). Throws nnscope::Error naming the accepted words otherwise.
PageFormat parsePageFormat(const std::string& name);

/// The colours of the HTML page: light, with dark ones where the reader's browser is in dark mode (`@media
/// (prefers-color-scheme: dark)`; a saved page), or always light, or always dark (the window's Family tab under a
/// light or a dark palette: Qt's HTML renderer knows no media queries).
enum class PageColours { FollowReader, Light, Dark };

/// The family page of `model` with the check results `checks` (from runFamilyChecks; a note whose check has no result
/// in `checks` shows it as "not run"). Markdown: headings `#` (title), `##` (sections), `###` (subsections and notes);
/// the support table as one pipe table per host; the printout and the formulas in fenced blocks. Html: a complete
/// document (UTF-8, inline CSS in `colours`, every text escaped, no external resource) with the same sections in the
/// same order; Markdown ignores `colours`.
/// Does not run the model. Throws nothing beyond what formatting the model's description throws (std::bad_alloc).
std::string familyPage(const Model& model, const std::vector<CheckResult>& checks, PageFormat format,
                       PageColours colours = PageColours::FollowReader);

/// The headings of the page's sections and subsections in order, as the Markdown export writes them (without the
/// `#` marks): "The block", "The API", "Values, by host", "Printout", "Config", "The Notes", "The block, in order",
/// the notes' titles, "From the family module".
std::vector<std::string> familyPageSections(const Family& family);

}  // namespace nnscope
