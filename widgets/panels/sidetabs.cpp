// SPDX-License-Identifier: MIT
#include "widgets/panels/sidetabs.h"

#include <QStyleOptionTab>
#include <QTabBar>
#include <QTabWidget>

namespace nnscope {

namespace {
bool sideways(QTabBar::Shape shape) {
    return shape == QTabBar::RoundedWest || shape == QTabBar::RoundedEast || shape == QTabBar::TriangularWest ||
           shape == QTabBar::TriangularEast;
}
}  // namespace

QSize SideTabStyle::sizeFromContents(ContentsType type, const QStyleOption* option, const QSize& size, const QWidget* widget) const {
    QSize s = QProxyStyle::sizeFromContents(type, option, size, widget);
    if (type == CT_TabBarTab)
        if (const auto* tab = qstyleoption_cast<const QStyleOptionTab*>(option); tab && sideways(tab->shape)) s.transpose();
    return s;
}

void SideTabStyle::drawControl(ControlElement element, const QStyleOption* option, QPainter* painter, const QWidget* widget) const {
    if (element == CE_TabBarTabLabel)
        if (const auto* tab = qstyleoption_cast<const QStyleOptionTab*>(option); tab && sideways(tab->shape)) {
            QStyleOptionTab level(*tab);
            level.shape = QTabBar::RoundedNorth;  // the label as on a top tab: level text
            QProxyStyle::drawControl(element, &level, painter, widget);
            return;
        }
    QProxyStyle::drawControl(element, option, painter, widget);
}

void useSideTabs(QTabWidget* tabs) {
    tabs->setTabPosition(QTabWidget::West);
    auto* style = new SideTabStyle;
    style->setParent(tabs->tabBar());
    tabs->tabBar()->setStyle(style);
}

}  // namespace nnscope
