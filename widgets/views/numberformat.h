// SPDX-License-Identifier: MIT
// How the views print a probability: with significant digits, so that the next token of a 128k vocabulary (often a
// few thousandths or less) does not read "0.000".
#pragma once
#include <QString>

#include <cmath>

namespace nnscope {

/// A probability (or a difference of two) as text with `digits` significant digits: "0.512", "0.0314", "2.41e-05",
/// "0" for zero, "NaN" / "inf" where it is not finite. Fixed notation down to 1e-4, scientific below.
inline QString probabilityText(double p, int digits = 3) {
    if (std::isnan(p)) return QStringLiteral("NaN");
    if (std::isinf(p)) return p > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    if (p == 0) return QStringLiteral("0");
    const double a = std::fabs(p);
    if (a < 1e-4) return QString::number(p, 'e', digits - 1);
    // decimals so that `digits` significant digits show: 0.512 (3), 0.0314 (4), 0.000123 (6); at most 3 at or above 1
    const int decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(a))));
    return QString::number(p, 'f', std::min(decimals, 8));
}

}  // namespace nnscope
