// SPDX-License-Identifier: MIT
#include "widgets/panels/modelsummary.h"

#include "widgets/panels/palette.h"

#include "core/model/block.h"
#include "core/pages/support.h"

#include <QObject>

namespace nnscope {

namespace {
QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }
}  // namespace

QString modelSummaryHtml(const Model& model, const QPalette& palette) {
    const Family& f = model.family();
    const ModelConfig& c = model.config();
    QString h;
    h += QString("<h2>%1 <small style='color:%4'>%2 · %3</small></h2>")
             .arg(esc(f.title), esc(c.architectures.front()), esc(f.modelType), palette.color(QPalette::PlaceholderText).name());
    h += QString("<p>%1</p>").arg(esc(f.summary));
    h += "<p>" + quirkChips(checkpointQuirks(f, c), palette) + "</p>";
    h += QObject::tr("<p><b>Folder</b> <tt>%1</tt><br><b>Compute dtype</b> %2 · <b>tokenizer</b> %3</p>")
             .arg(esc(model.dir()), esc(dtypeName(model.dtype())),
                  model.tokenizer() ? esc(model.tokenizer()->sourceFile()) : esc(model.tokenizerError()));

    h += QObject::tr("<h3>Sizes</h3>") + "<table cellspacing='0' cellpadding='2'>";
    for (const auto& [k, v] : standardSizes(c)) h += QString("<tr><td><tt>model.%1</tt></td><td align='right'>%2</td></tr>").arg(esc(k)).arg(v);
    h += "</table>";

    h += QObject::tr("<h3>The block</h3>") + "<pre>";
    for (const auto& line : blockFormulas(f, c)) h += esc(line) + "\n";
    h += "</pre>";

    h += QObject::tr("<h3>Config</h3>") + "<table cellspacing='0' cellpadding='2'>";
    for (auto it = c.raw.begin(); it != c.raw.end(); ++it)
        h += QString("<tr><td><tt>%1</tt></td><td><tt>%2</tt></td></tr>").arg(esc(it.key()), esc(it.value().dump()));
    h += "</table>";

    h += QObject::tr("<h3>Notes</h3>");
    for (const auto& note : f.notes) h += QString("<p><b>%1</b><br>%2</p>").arg(esc(note.title), esc(note.text));
    h += QObject::tr("<h3>From the family module</h3>") + QString("<p>%1</p>").arg(esc(f.description).replace("\n\n", "<br><br>"));
    return h;
}

}  // namespace nnscope
