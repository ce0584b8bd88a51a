// SPDX-License-Identifier: MIT
#pragma once
#include <QString>

namespace nnscope {
/// The checkpoint the window opens when it is given none and has no recent model: the demo model shipped in
/// resources/demo-model (installed under share/nnscope/demo-model), or an empty string when there is none.
QString demoModelDir();
}  // namespace nnscope
