// SPDX-License-Identifier: MIT
#pragma once
// The views' tabs as a side list: the tab bar on the left of the views (QTabWidget::West) with its labels drawn
// level, not turned, so that every view's name shows at once however narrow the window (#28: at 1280 px the thirteen
// tabs of a top bar overflowed behind scroll arrows).
#include <QProxyStyle>

class QTabWidget;

namespace nnscope {

/// A style for a tab bar on the West or East side: each tab as wide as its level label and as tall as a row of
/// text (the base style's size of a top tab, transposed back), its label drawn as on a top tab.
class SideTabStyle : public QProxyStyle {
public:
    using QProxyStyle::QProxyStyle;
    QSize sizeFromContents(ContentsType type, const QStyleOption* option, const QSize& size, const QWidget* widget) const override;
    void drawControl(ControlElement element, const QStyleOption* option, QPainter* painter, const QWidget* widget) const override;
};

/// Puts `tabs`' bar on its left side with level labels (SideTabStyle, owned by the bar).
void useSideTabs(QTabWidget* tabs);

}  // namespace nnscope
