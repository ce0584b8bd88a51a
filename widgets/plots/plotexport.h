// SPDX-License-Identifier: MIT
#pragma once
// Writing a plot to PNG, SVG or PDF. Every file records what it shows: the model, the prompts and the view's
// settings go into the file's own metadata (PNG text chunks, the SVG <desc>, the PDF's title and an attached
// nnscope-export.json) and into a caption line under the plot. Files are written through QSaveFile, so a failure
// leaves nothing half-written.
#include <QMap>
#include <QSize>
#include <QString>

#include <functional>
#include <map>
#include <string>

class QCustomPlot;
class QWidget;

namespace nnscope {

/// A plot as a view hands it to the exporter.
struct PlotSource {
    QCustomPlot* plot = nullptr;
    /// A view drawn by a widget of its own rather than a QCustomPlot (the Text view's tokens, the Heads overview, the
    /// Flow graph): exported as that widget paints itself, at its full size. Used when `plot` is null.
    QWidget* widget = nullptr;
    QSize size;                            ///< the size to render at (empty: the plot's own size)
    std::function<void(bool)> fullView;    ///< called with true before rendering and false after (may be empty)
    QString name;                          ///< "attention", "neurons", ... (the default file name)
};

/// The file formats a plot can be written to, as a QFileDialog filter.
QString plotFileFilter();
/// One line saying what the metadata describes ("stories260K-llama · llama · float32 · “Once upon a time” · block 2").
QString metadataCaption(const std::map<std::string, std::string>& metadata);
/// Writes `source` to `path` (.png, .svg or .pdf, chosen by the suffix). Returns an empty string on success, or a
/// sentence naming the file and the reason.
QString exportPlot(const PlotSource& source, const QString& path, const std::map<std::string, std::string>& metadata);

}  // namespace nnscope
