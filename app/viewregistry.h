// SPDX-License-Identifier: MIT
#pragma once
#include <QKeySequence>
// The window's central views, listed once: each view's name (what --view, the "view/current" setting and
// MainWindow::showView take), its View menu entry, tab title and shortcut, its line in --view's help, and what it
// follows of the others (the trace shown, the block, the prompt). The tabs, the View menu, the shortcuts, the settings,
// the command line and the window's wiring all read this table; it needs no QApplication (the command line checks
// --view before any window opens).
#include <QStringList>

#include <vector>

namespace nnscope {

/// One central view.
struct ViewSpec {
    /// What a view follows; the window wires it from these.
    enum Follows {
        ShowsTrace = 1,     ///< shows the trace (or trace file) the window shows: setSnapshot
        FollowsBlock = 2,   ///< shows the block selected anywhere, and selects it (setBlock, blockChanged)
        SharesPrompt = 4,   ///< the prompt chosen in it is chosen in every FollowsPrompt view (promptChanged)
        FollowsPrompt = 8,  ///< shows the prompt chosen in a SharesPrompt view (setPrompt)
    };
    const char* name;      ///< "attention": --view, settings, showView
    const char* menuText;  ///< View menu entry, with its mnemonic (translated in MainWindow's context)
    const char* tabText;   ///< tab title (translated in MainWindow's context)
    const char* help;      ///< what --view's help says after the name ("" for nothing; translated in the "gui" context)
    /// Ctrl+key shows it for a digit (Qt::Key_1 ... Qt::Key_0), Ctrl+Shift+key for a letter (the views past the
    /// tenth); 0: no shortcut. viewShortcut() makes the sequence.
    int key;
    int follows;           ///< Follows flags
    /// What the view draws, so that picking a value anywhere shows the view that draws it: layouts ("Neurons": any
    /// value laid out [batch seq neurons]) and value names, space-separated; "" for none.
    const char* draws = "";
};
/// The shortcut that shows view `spec` (Ctrl+digit, Ctrl+Shift+letter), empty without one.
QKeySequence viewShortcut(const ViewSpec& spec);
/// The view that draws a value of layout `layout` named `name` (ViewSpec::draws), or -1.
int viewForValue(const QString& layout, const QString& name);

/// The fixed central views, in tab order (the tabs after them are plots of single values, which the user opens and
/// closes).
const std::vector<ViewSpec>& viewSpecs();
/// Their names, in tab order: what --view accepts.
QStringList viewNames();
/// The index of the view named `name` in viewSpecs(), or -1.
int viewIndex(const QString& name);
/// --view's help text: "View shown first: model, attention, ... or text (...)." (translated in the "gui" context).
QString viewHelp();

}  // namespace nnscope
