// SPDX-License-Identifier: MIT
#pragma once
// Colours that follow the widget palette, so that a dark desktop (or `nnscope gui --color-scheme dark`) gets a dark
// diagram, dark plots and readable chips: the light look is kept as designed, and under a dark palette each tint
// keeps its hue at the lightness of the palette's base.
#include <QColor>
#include <QPalette>
#include <QString>

#include <string>
#include <vector>

namespace nnscope {

struct Family;
struct ModelConfig;

/// Whether `palette` draws light text on a dark base.
bool isDark(const QPalette& palette);
/// The dark palette of `--color-scheme dark` (for the Fusion style, as Qt's own examples make one).
QPalette darkPalette();
/// A pastel fill designed for a light base, as it should be on `palette`'s base: itself on a light base, the same
/// hue `lift` lighter than the base (HSL lightness, 0 to 1) on a dark one.
QColor tint(const QColor& pastel, const QPalette& palette, double lift = 0.13);
/// `a` blended towards `b` by `t` (0: a, 1: b).
QColor mix(const QColor& a, const QColor& b, double t);
/// A green that reads as "a value" on `palette`'s base (the standard names in the diagram).
QColor valueColor(const QPalette& palette);
/// The family's quirks as chips (HTML spans) in `palette`'s colours.
QString quirkChips(const std::vector<std::string>& quirks, const QPalette& palette);
/// The family's quirks as they hold for one checkpoint: "Grouped-query attention" reads "Multi-head attention" when
/// num_key_value_heads equals num_attention_heads (no key/value head is shared) and "Multi-query attention" when there
/// is one; "Sliding-window attention" is left out when the config sets no window. The family page keeps the family's.
std::vector<std::string> checkpointQuirks(const Family& family, const ModelConfig& config);

}  // namespace nnscope
