// SPDX-License-Identifier: MIT
#include "viewregistry.h"

#include <QCoreApplication>

namespace nnscope {

const std::vector<ViewSpec>& viewSpecs() {
    using V = ViewSpec;
    constexpr int kTraceView = V::ShowsTrace | V::SharesPrompt | V::FollowsPrompt;
    static const std::vector<ViewSpec> specs = {
        {"model", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Model"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Model"), "", Qt::Key_1, 0},
        {"attention", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Attention"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Attention"), "",
         Qt::Key_2, kTraceView | V::FollowsBlock, "Pattern"},
        {"neurons", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Neurons"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Neurons"), "",
         Qt::Key_3, kTraceView | V::FollowsBlock, "Neurons"},
        {"lens", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Logit Lens"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Logit lens"), "",
         Qt::Key_4, kTraceView, "Logits layer_output"},
        {"family", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Family"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Family"), "", Qt::Key_5, 0},
        {"compare", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Before / After"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Before / after"),
         QT_TRANSLATE_NOOP("gui", "before / after"), Qt::Key_6, V::ShowsTrace | V::SharesPrompt},
        {"patching", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Patching"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Patching"), "",
         Qt::Key_7, 0},
        {"attribution", QT_TRANSLATE_NOOP("nnscope::MainWindow", "A&ttribution"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Attribution"),
         QT_TRANSLATE_NOOP("gui", "who wrote the next token"), Qt::Key_8, kTraceView},
        {"generate", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Generate"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Generate"), "",
         Qt::Key_9, V::ShowsTrace},
        {"flow", QT_TRANSLATE_NOOP("nnscope::MainWindow", "F&low"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Flow"),
         QT_TRANSLATE_NOOP("gui", "information flow routes"), Qt::Key_0, kTraceView},
        {"heads", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Heads"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Heads"),
         QT_TRANSLATE_NOOP("gui", "every head's pattern and scores"), Qt::Key_H, kTraceView},
        {"text", QT_TRANSLATE_NOOP("nnscope::MainWindow", "Te&xt"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Text"),
         QT_TRANSLATE_NOOP("gui", "the prompts coloured by attention, a neuron, a norm or a feature"), Qt::Key_T,
         V::ShowsTrace | V::FollowsBlock},
        {"features", QT_TRANSLATE_NOOP("nnscope::MainWindow", "F&eatures"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Features"),
         QT_TRANSLATE_NOOP("gui", "an attached sparse dictionary's features"), Qt::Key_F, kTraceView},
        {"circuit", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Circuit"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Circuit"),
         QT_TRANSLATE_NOOP("gui", "an attribution graph: File > Open Graph, or --open-graph"), Qt::Key_G, 0},
        {"routing", QT_TRANSLATE_NOOP("nnscope::MainWindow", "&Routing"), QT_TRANSLATE_NOOP("nnscope::MainWindow", "Routing"),
         QT_TRANSLATE_NOOP("gui", "a mixture of experts: each token's experts, their load, what one writes"), Qt::Key_R, kTraceView},
    };
    return specs;
}

QKeySequence viewShortcut(const ViewSpec& spec) {
    if (!spec.key) return {};
    const Qt::Key key = static_cast<Qt::Key>(spec.key);
    return key >= Qt::Key_0 && key <= Qt::Key_9 ? QKeySequence(Qt::CTRL | key) : QKeySequence(Qt::CTRL | Qt::SHIFT | key);
}

int viewForValue(const QString& layout, const QString& name) {
    for (size_t i = 0; i < viewSpecs().size(); ++i) {
        const QStringList draws = QString::fromLatin1(viewSpecs()[i].draws).split(' ', Qt::SkipEmptyParts);
        if (draws.contains(layout) || draws.contains(name)) return static_cast<int>(i);
    }
    return -1;
}

QStringList viewNames() {
    QStringList names;
    for (const ViewSpec& v : viewSpecs()) names << QString::fromLatin1(v.name);
    return names;
}

int viewIndex(const QString& name) {
    const auto& specs = viewSpecs();
    for (size_t i = 0; i < specs.size(); ++i)
        if (name == QLatin1String(specs[i].name)) return static_cast<int>(i);
    return -1;
}

QString viewHelp() {
    QStringList items;
    for (const ViewSpec& v : viewSpecs()) {
        QString item = QString::fromLatin1(v.name);
        if (*v.help) item += QStringLiteral(" (%1)").arg(QCoreApplication::translate("gui", v.help));
        items << item;
    }
    const QString last = items.takeLast();
    return QCoreApplication::translate("gui", "View shown first: %1 or %2.").arg(items.join(QStringLiteral(", ")), last);
}

}  // namespace nnscope
