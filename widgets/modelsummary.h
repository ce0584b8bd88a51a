// SPDX-License-Identifier: MIT
#pragma once
// The "Model" page: the family (title, summary, quirks), the standard sizes, the checkpoint's config and the
// family's notes, as HTML for a QTextBrowser.
#include "core/model.h"

#include <QString>

namespace nnscope {

QString modelSummaryHtml(const Model& model);

}  // namespace nnscope
