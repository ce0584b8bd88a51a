// SPDX-License-Identifier: MIT
#include "widgets/views/tracesnapshot.h"
#include "widgets/views/traceview.h"

#include <algorithm>

#include "core/io/export.h"
#include "core/io/tracefile.h"

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

namespace {
/// The longest token label read from a trace file that is shown whole (a real token is a few characters).
constexpr int kMaxFileLabel = 80;
}  // namespace

SnapshotPtr makeFileSnapshot(const TraceFile& file, quint64 serial) {
    auto s = std::make_shared<TraceSnapshot>();
    s->model = file.model;
    s->serial = serial;
    s->sourceFile = QString::fromStdString(file.path);
    s->result = file.result;
    for (const auto& row : file.tokens) {
        QStringList labels;
        // a file's labels are drawn on every axis: one of a megabyte (a damaged file) is elided, as its prompts are
        for (const auto& t : row) labels << elidedText(QString::fromStdString(t), kMaxFileLabel);
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
    s->nonFinite = firstNonFinite(*s->model, s->result);
    return s;
}

SnapshotPtr withValues(const TraceSnapshot& base, const std::vector<std::pair<ValueKey, torch::Tensor>>& values) {
    auto s = std::make_shared<TraceSnapshot>(base);
    for (const auto& [key, t] : values)
        if (!s->result.value(key).defined()) s->result.values.emplace_back(key, t);
    s->nonFinite = firstNonFinite(*s->model, s->result);  // a value read again may come before the first one found
    return s;
}

TraceSnapshot::LensPtr TraceSnapshot::lens(int row, bool lastPosition) const {
    if (auto it = lenses_->find({row, false}); it != lenses_->end()) return it->second;  // all positions: the last one too
    if (!lastPosition) return nullptr;
    auto it = lenses_->find({row, true});
    return it != lenses_->end() ? it->second : nullptr;
}

void TraceSnapshot::storeLens(int row, bool lastPosition, LensPtr lens) const { (*lenses_)[{row, lastPosition}] = std::move(lens); }

void TraceSnapshot::storeLensWindow(int row, LensPtr window) const {
    const auto r = static_cast<size_t>(row);
    if (!window || !window->has(row)) return;
    const int len = static_cast<int>(tokens.at(r).size());
    PartialLens& p = (*partial_)[row];
    if (!p.lens) {  // full-size entries of zeros, filled window by window
        auto l = std::make_shared<LogitLens>();
        l->numLayers = window->numLayers;
        l->k = window->k;
        const size_t n = window->topIds.size();
        l->topIds.resize(n);
        l->topProbs.resize(n);
        l->logSumExp.resize(n);
        l->normed.resize(n);
        l->firstPosition.assign(n, 0);
        const torch::Tensor ids = window->topIds[r], normed = window->normed[r];
        l->topIds[r] = torch::zeros({ids.size(0), len, ids.size(2)}, ids.options());
        l->topProbs[r] = torch::zeros({ids.size(0), len, ids.size(2)}, window->topProbs[r].options());
        l->logSumExp[r] = torch::zeros({ids.size(0), len}, window->logSumExp[r].options());
        l->normed[r] = torch::zeros({normed.size(0), len, normed.size(2)}, normed.options());
        p.lens = std::move(l);
        p.computed.assign(static_cast<size_t>(len), false);
    }
    const int64_t first = window->firstPosition.at(r), count = window->topIds[r].size(1);
    p.lens->topIds[r].narrow(1, first, count).copy_(window->topIds[r]);
    p.lens->topProbs[r].narrow(1, first, count).copy_(window->topProbs[r]);
    p.lens->logSumExp[r].narrow(1, first, count).copy_(window->logSumExp[r]);
    p.lens->normed[r].narrow(1, first, count).copy_(window->normed[r]);
    for (int64_t i = first; i < first + count; ++i) p.computed[static_cast<size_t>(i)] = true;
    if (std::all_of(p.computed.begin(), p.computed.end(), [](bool b) { return b; })) storeLens(row, false, p.lens);
}

TraceSnapshot::LensPtr TraceSnapshot::partialLens(int row) const {
    auto it = partial_->find(row);
    return it != partial_->end() ? it->second.lens : nullptr;
}

bool TraceSnapshot::lensComputed(int row, int position) const {
    if (lens(row)) return true;
    auto it = partial_->find(row);
    return it != partial_->end() && position >= 0 && position < static_cast<int>(it->second.computed.size()) &&
           it->second.computed[static_cast<size_t>(position)];
}

std::pair<int, int> TraceSnapshot::missingLensPositions(int row, int from, int to) const {
    int first = to, end = from;
    for (int i = from; i < to; ++i)
        if (!lensComputed(row, i)) {
            first = std::min(first, i);
            end = std::max(end, i + 1);
        }
    return first < end ? std::make_pair(first, end) : std::make_pair(from, from);
}

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
    s->nonFinite = firstNonFinite(*s->model, s->result);
    return s;
}

}  // namespace nnscope
