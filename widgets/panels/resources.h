// SPDX-License-Identifier: MIT
#pragma once

namespace nnscope {
/// Registers resources/nnscope.qrc (icons), which a static library cannot do by itself. Safe to call twice.
void initResources();
}  // namespace nnscope
