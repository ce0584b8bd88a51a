// SPDX-License-Identifier: MIT
#include "tracesnapshot.h"

#include "core/export.h"
#include "core/tracefile.h"

#include <QObject>

namespace nnscope {

QString valueKeyPath(const Model& model, const ValueKey& key) {
    return QString::fromStdString(valuePath(model.family(), key));
}

QString TraceSnapshot::path(const ValueKey& key) const { return valueKeyPath(*model, key); }

std::map<std::string, std::string> TraceSnapshot::exportMetadata(const QMap<QString, QString>& settings) const {
    TraceResult header;  // the engine's metadata without per-value entries: the caller adds the value it writes
    header.batch = result.batch;
    std::map<std::string, std::string> extra;
    for (auto it = settings.begin(); it != settings.end(); ++it) extra[it.key().toStdString()] = it.value().toStdString();
    if (!interventions.isEmpty()) extra["interventions"] = interventions.join(" ; ").toStdString();  // an edited run says so
    return nnscope::exportMetadata(*model, header, extra);
}

QString TraceSnapshot::missing(const std::vector<ValueKey>& keys, const QString& what) const {
    QStringList absent;
    for (const ValueKey& k : keys)
        if (!result.value(k).defined()) absent << path(k);
    if (absent.isEmpty()) return {};
    const int shown = 3;
    QString list = QStringList(absent.mid(0, shown)).join(", ");
    if (absent.size() > shown) list += QObject::tr(" and %n more", nullptr, static_cast<int>(absent.size()) - shown);
    const QString source = sourceFile.isEmpty() ? QObject::tr("the last trace did not save")
                                                : QObject::tr("the trace file %1 does not hold").arg(sourceFile);
    return QObject::tr("%1 needs %2, which %3.").arg(what, list, source);
}

SnapshotPtr makeFileSnapshot(const TraceFile& file, quint64 serial) {
    auto s = std::make_shared<TraceSnapshot>();
    s->model = file.model;
    s->serial = serial;
    s->sourceFile = QString::fromStdString(file.path);
    s->result = file.result;
    for (const auto& row : file.tokens) {
        QStringList labels;
        for (const auto& t : row) labels << QString::fromStdString(t);
        s->tokens.push_back(labels);
    }
    s->fileNotes << QObject::tr("sizes and family from %1").arg(QString::fromStdString(file.configFrom))
                  << QObject::tr("tokens from %1").arg(QString::fromStdString(file.tokensFrom))
                  << (file.checkpoint.empty() ? QObject::tr("no weights: %1").arg(QString::fromStdString(file.noWeights))
                                              : QObject::tr("the logit lens from the weights of %1").arg(QString::fromStdString(file.checkpoint)));
    for (const auto& skipped : file.skipped) s->fileNotes << QObject::tr("skipped %1").arg(QString::fromStdString(skipped));
    std::vector<ValueKey> outputs;
    for (int i = 0; i < static_cast<int>(s->model->config().numLayers); ++i) outputs.push_back({Value::LayerOutput, i});
    const QString need = QObject::tr("The logit lens reads each block's layer_output through the final norm and lm_head: it");
    s->lensMissing = s->missing(outputs, need);
    if (s->lensMissing.isEmpty() && !s->model->hasWeights())
        s->lensMissing = QObject::tr("%1 needs the model's weights, which a trace file does not hold: %2 Put the file in the "
                                     "checkpoint's folder to read the lens.").arg(need, QString::fromStdString(file.noWeights));
    return s;
}

SnapshotPtr withValues(const TraceSnapshot& base, const std::vector<std::pair<ValueKey, torch::Tensor>>& values) {
    auto s = std::make_shared<TraceSnapshot>(base);
    for (const auto& [key, t] : values)
        if (!s->result.value(key).defined()) s->result.values.emplace_back(key, t);
    return s;
}

TraceSnapshot::LensPtr TraceSnapshot::lens(int row, bool lastPosition) const {
    if (auto it = lenses_->find({row, false}); it != lenses_->end()) return it->second;  // all positions: the last one too
    if (!lastPosition) return nullptr;
    auto it = lenses_->find({row, true});
    return it != lenses_->end() ? it->second : nullptr;
}

void TraceSnapshot::storeLens(int row, bool lastPosition, LensPtr lens) const { (*lenses_)[{row, lastPosition}] = std::move(lens); }

SnapshotPtr makeSnapshot(ModelPtr model, TraceResult result, quint64 serial, const QStringList& interventions,
                         SnapshotPtr baseline) {
    auto s = std::make_shared<TraceSnapshot>();
    s->model = std::move(model);
    s->serial = serial;
    s->interventions = interventions;
    s->baseline = std::move(baseline);
    const Tokenizer* tok = s->model->tokenizer();
    for (const auto& ids : result.batch.ids) {
        QStringList labels;
        for (int64_t id : ids)
            labels << (tok ? QString::fromStdString(tok->tokenLabel(id)) : QString::number(id));
        s->tokens.push_back(labels);
    }
    s->result = std::move(result);
    return s;
}

}  // namespace nnscope
