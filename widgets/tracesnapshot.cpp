// SPDX-License-Identifier: MIT
#include "tracesnapshot.h"

#include "core/export.h"

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

SnapshotPtr makeSnapshot(ModelPtr model, TraceResult result, quint64 serial, int lensTopK, const QStringList& interventions,
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
    s->lens = logitLens(*s->model, result, lensTopK);
    s->result = std::move(result);
    return s;
}

}  // namespace nnscope
