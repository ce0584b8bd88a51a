// SPDX-License-Identifier: MIT
#pragma once
// The "Model" page: the family (title, summary, quirks), the standard sizes, the checkpoint's config and the
// family's notes, as HTML for a QTextBrowser.
#include "core/model/model.h"

#include <QPalette>
#include <QString>

namespace nnscope {

/// The page, its quirk chips and grey notes in `palette`'s colours (the browser's palette: a dark one gets dark chips).
QString modelSummaryHtml(const Model& model, const QPalette& palette = QPalette());

}  // namespace nnscope
