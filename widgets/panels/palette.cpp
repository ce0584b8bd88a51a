// SPDX-License-Identifier: MIT
#include "widgets/panels/palette.h"

#include "core/model/config.h"
#include "core/model/family.h"

#include <algorithm>

namespace nnscope {

bool isDark(const QPalette& palette) {
    return palette.color(QPalette::Base).lightness() < palette.color(QPalette::Text).lightness();
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x30), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6), disabled(0x80, 0x80, 0x80);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2b));
    p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x41));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x52));
    p.setColor(QPalette::Midlight, QColor(0x3e, 0x41, 0x45));
    p.setColor(QPalette::Mid, QColor(0x5a, 0x5d, 0x62));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
    p.setColor(QPalette::Shadow, QColor(0x0c, 0x0c, 0x0d));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7a, 0xd6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xa8, 0xff));
    p.setColor(QPalette::LinkVisited, QColor(0xb0, 0x8c, 0xff));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    p.setColor(QPalette::Disabled, QPalette::Base, window);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x50, 0x50, 0x50));
    return p;
}

QColor mix(const QColor& a, const QColor& b, double t) {
    auto m = [t](double x, double y) { return x + (y - x) * t; };
    return QColor::fromRgbF(static_cast<float>(m(a.redF(), b.redF())), static_cast<float>(m(a.greenF(), b.greenF())),
                            static_cast<float>(m(a.blueF(), b.blueF())), static_cast<float>(m(a.alphaF(), b.alphaF())));
}

QColor tint(const QColor& pastel, const QPalette& palette, double lift) {
    if (!isDark(palette)) return pastel;
    const QColor base = palette.color(QPalette::Base);
    const float hue = pastel.hslHueF();
    const float saturation = hue < 0 ? 0.f : std::min(0.45f, pastel.hslSaturationF());
    const float lightness = std::min(0.5f, base.lightnessF() + static_cast<float>(lift));
    return QColor::fromHslF(std::max(0.f, hue), saturation, lightness);
}

QColor valueColor(const QPalette& palette) { return isDark(palette) ? QColor(0x7f, 0xd4, 0x9a) : QColor(0x1d, 0x6b, 0x3a); }

std::vector<std::string> checkpointQuirks(const Family& family, const ModelConfig& config) {
    std::vector<std::string> out;
    for (const std::string& q : family.quirks) {
        if (q == "Grouped-query attention" && config.numHeads > 0) {
            const int64_t kv = config.numKvHeads > 0 ? config.numKvHeads : config.numHeads;
            out.push_back(kv == config.numHeads ? "Multi-head attention" : kv == 1 ? "Multi-query attention" : q);
        } else if (q == "Sliding-window attention" && config.slidingWindow <= 0) {
            continue;
        } else {
            out.push_back(q);
        }
    }
    return out;
}

QString quirkChips(const std::vector<std::string>& quirks, const QPalette& palette) {
    const QColor background = tint(QColor(0xe8, 0xee, 0xfc), palette), text = palette.color(QPalette::Text);
    QStringList chips;
    for (const auto& q : quirks)
        chips << QString("<span style='background:%1; color:%2'>&nbsp;%3&nbsp;</span>")
                     .arg(background.name(), text.name(), QString::fromStdString(q).toHtmlEscaped());
    return chips.join(" ");
}

}  // namespace nnscope
