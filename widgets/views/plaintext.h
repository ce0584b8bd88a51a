// SPDX-License-Identifier: MIT
// Text the model or the user wrote (a token, a prompt, a path) shown where Qt guesses whether a string is HTML.
#pragma once
#include <QString>

namespace nnscope {

/// `text` as rich text that shows every character as written, line breaks kept and no line wrapped (as a plain
/// tooltip shows it). For QToolTip and setToolTip, which take a string as HTML when its first line holds something
/// that looks like a tag (Qt::mightBeRichText): a Llama-family tokenizer's start token "<s>" is HTML's strike-through,
/// and the rest of the line came out struck through without it. A QLabel takes setTextFormat(Qt::PlainText) instead.
inline QString plainToolTip(const QString& text) {
    if (text.isEmpty()) return text;  // an empty tooltip hides the tip
    return QStringLiteral("<p style=\"white-space:pre\">") + text.toHtmlEscaped() + QStringLiteral("</p>");
}

}  // namespace nnscope
