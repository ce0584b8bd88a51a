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

TraceSnapshot::LensPtr TraceSnapshot::lens(int row, bool lastPosition) const {
    if (auto it = lenses_.find({row, false}); it != lenses_.end()) return it->second;  // all positions: the last one too
    if (!lastPosition) return nullptr;
    auto it = lenses_.find({row, true});
    return it != lenses_.end() ? it->second : nullptr;
}

void TraceSnapshot::storeLens(int row, bool lastPosition, LensPtr lens) const { lenses_[{row, lastPosition}] = std::move(lens); }

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
