// SPDX-License-Identifier: MIT
#include "widgets/plots/plotexport.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QImageWriter>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPageSize>
#include <QPicture>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>

#include <algorithm>
#include <cmath>

namespace nnscope {

namespace {

constexpr int kCaptionHeight = 22;
constexpr int kScreenWidth = 1600;  // pixels: an export this wide or narrower keeps the screen's caption font

/// How much larger the caption's font is in an export `width` pixels wide: with the image, up to 3 times (#28: a
/// 5674 px PNG had a screen-size caption).
double captionScale(int width) { return std::clamp(width / static_cast<double>(kScreenWidth), 1.0, 3.0); }
int captionHeight(int width) { return static_cast<int>(std::lround(kCaptionHeight * captionScale(width))); }

QByteArray metadataJson(const std::map<std::string, std::string>& metadata) {
    QJsonObject o;
    for (const auto& [k, v] : metadata) o.insert(QString::fromStdString(k), QString::fromStdString(v));
    return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

// Renders the plot (or the widget) at the top of `painter`'s device and the caption under it.
void render(const PlotSource& source, QCPPainter& painter, QSize size, const QString& caption) {
    if (source.plot) {
        // QCustomPlot makes an axis' ticks (TokenTicker thins the labels to the room) before it lays the plot out at
        // the new size, so a single pass thinned them for the screen's size (#28: every 10th token in a 5674 px PNG).
        // A first pass into a picture lays it out at the export's size; the second draws with ticks made for it.
        QPicture layout;
        {
            QCPPainter first(&layout);
            source.plot->toPainter(&first, size.width(), size.height());
        }
        source.plot->toPainter(&painter, size.width(), size.height());
    } else {
        painter.fillRect(QRect(QPoint(0, 0), size), source.widget->palette().color(source.widget->backgroundRole()));
        source.widget->render(&painter, QPoint(), QRegion(), QWidget::DrawChildren);
    }
    painter.setPen(QColor(0x50, 0x50, 0x50));
    QFont f = source.plot ? source.plot->font() : source.widget->font();
    f.setPointSizeF(f.pointSizeF() * 0.85 * captionScale(size.width()));
    painter.setFont(f);
    const QRect captionRect(6, size.height(), size.width() - 12, captionHeight(size.width()));
    painter.drawText(captionRect, Qt::AlignLeft | Qt::AlignVCenter,
                     QFontMetrics(f).elidedText(caption, Qt::ElideRight, captionRect.width()));
}

}  // namespace

QString plotFileFilter() {
    return QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)");
}

QString metadataCaption(const std::map<std::string, std::string>& metadata) {
    auto get = [&](const char* key) {
        auto it = metadata.find(key);
        return it == metadata.end() ? QString() : QString::fromStdString(it->second);
    };
    QStringList parts;
    parts << "nnscope " + get("nnscope_version");
    parts << QFileInfo(get("model")).fileName();
    parts << get("family") << get("dtype");
    const QJsonDocument prompts = QJsonDocument::fromJson(get("prompts").toUtf8());
    QStringList ps;
    for (const auto& p : prompts.array()) ps << "“" + p.toString() + "”";
    if (!ps.isEmpty()) parts << ps.join(", ");
    for (const auto& [k, v] : metadata)
        if (k.rfind("view.", 0) == 0) parts << QString::fromStdString(k.substr(5) + " " + v);
    parts.removeAll(QString());
    return parts.join(" · ");
}

QString exportPlot(const PlotSource& source, const QString& path, const std::map<std::string, std::string>& metadata) {
    if (!source.plot && !source.widget) return QObject::tr("There is no plot to export.");
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != "png" && suffix != "svg" && suffix != "pdf")
        return QObject::tr("Cannot export the plot to %1: the file name must end in .png, .svg or .pdf.").arg(path);
    if (source.fullView) source.fullView(true);
    const QSize size = !source.size.isEmpty() ? source.size : source.plot ? source.plot->size() : source.widget->size();
    const QSize page(size.width(), size.height() + captionHeight(size.width()));
    const QString caption = metadataCaption(metadata);
    const QByteArray json = metadataJson(metadata);

    QSaveFile file(path);
    QString error;
    if (!file.open(QIODevice::WriteOnly)) {
        error = QObject::tr("Cannot write %1: %2").arg(path, file.errorString());
    } else if (suffix == "png") {
        QImage image(page, QImage::Format_ARGB32);
        image.fill(Qt::white);
        {
            QCPPainter painter(&image);
            painter.setRenderHint(QPainter::Antialiasing);
            render(source, painter, size, caption);
        }
        for (const auto& [k, v] : metadata) image.setText(QString::fromStdString(k), QString::fromStdString(v));
        QImageWriter writer(&file, "png");
        if (!writer.write(image)) error = QObject::tr("Cannot write %1: %2").arg(path, writer.errorString());
    } else if (suffix == "svg") {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(page);
        svg.setViewBox(QRect(QPoint(0, 0), page));
        // QSvgGenerator writes both into the XML as they are: escaped, a token such as "<s>" keeps the file valid
        svg.setTitle(caption.toHtmlEscaped());
        svg.setDescription(QString::fromUtf8(json).toHtmlEscaped());
        QCPPainter painter;
        painter.begin(&svg);
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        render(source, painter, size, caption);
        painter.end();
    } else {
        QPdfWriter pdf(&file);
        pdf.setResolution(72);  // one device pixel per point: the page is the plot's size
        pdf.setPageSize(QPageSize(QSizeF(page), QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setTitle(caption);
        pdf.setCreator("nnscope");
        pdf.addFileAttachment("nnscope-export.json", json, "application/json");
        QCPPainter painter;
        if (!painter.begin(&pdf)) {
            error = QObject::tr("Cannot write %1: the PDF writer did not start.").arg(path);
        } else {
            painter.setMode(QCPPainter::pmVectorized);
            painter.setMode(QCPPainter::pmNoCaching);
            render(source, painter, size, caption);
            painter.end();
        }
    }
    if (source.fullView) source.fullView(false);
    if (!error.isEmpty()) {
        file.cancelWriting();
        return error;
    }
    if (!file.commit()) return QObject::tr("Cannot write %1: %2").arg(path, file.errorString());
    return {};
}

}  // namespace nnscope
