// SPDX-License-Identifier: MIT
#pragma once
// One finished trace, immutable and shared: the model it ran on, the saved values and the token labels. The worker
// thread builds it and hands it to the window through a queued signal; every view and table model reads it and none
// changes it. The one exception is the logit lens, which costs several times the forward pass on a large vocabulary:
// it is not part of the trace but computed when a view shows it, for the prompt shown, and kept here.
#include "core/analysis/analysis.h"
#include "core/analysis/valuestats.h"
#include "core/model/model.h"
#include "core/run/trace.h"

#include <QMap>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <map>
#include <memory>

namespace nnscope {

using ModelPtr = std::shared_ptr<const Model>;

struct TraceSnapshot {
    ModelPtr model;
    TraceResult result;
    std::vector<QStringList> tokens;  ///< per prompt: a readable label for each of its own tokens
    quint64 serial = 0;               ///< which trace of the session this is
    /// The interventions applied during this pass, as written in the Interventions list (core/run/edit.h's
    /// addIntervention syntax); empty for an unedited trace.
    QStringList interventions;
    /// The same prompts traced without the interventions, saving the same values (set when the trace had
    /// interventions and asked for the before/after comparison; nullptr otherwise).
    std::shared_ptr<const TraceSnapshot> baseline;
    /// The trace file the values were read from (File > Open Trace), or "" for a trace run in this window.
    QString sourceFile;
    /// Why there is no logit lens ("" when it can be computed): it needs every block's layer_output and the weights.
    QString lensMissing;
    /// For a trace file: where its config, tokens and weights came from, and the tensors it skipped (one line each).
    QStringList fileNotes;
    /// Where the saved values first hold a NaN or an infinity (firstNonFinite), computed with the snapshot in the
    /// worker; nullopt when they are all finite. The window's banner says it.
    std::optional<NonFiniteOrigin> nonFinite;

    using LensPtr = std::shared_ptr<const LogitLens>;
    /// The logit lens of prompt `row` (all its positions), or one that has at least its last position when
    /// `lastPosition`; nullptr when it has not been computed.
    LensPtr lens(int row, bool lastPosition = false) const;
    /// Keeps a lens the worker computed (GUI thread only; see the file comment).
    void storeLens(int row, bool lastPosition, LensPtr lens) const;
    /// Keeps a lens the worker computed for a window of prompt `row`'s positions (LogitLens::firstPosition): merged
    /// into the row's partial lens; once every position is there it is also the row's whole lens (lens(row)).
    void storeLensWindow(int row, LensPtr window) const;
    /// Prompt `row`'s lens as far as windows have computed it (full-size entries; a position not computed yet holds
    /// zeros), or nullptr; lensComputed says which positions are real.
    LensPtr partialLens(int row) const;
    /// Whether position `position` of prompt `row` has its lens (from the whole prompt's lens or a window).
    bool lensComputed(int row, int position) const;
    /// The smallest range [first, end) of positions within [from, to) of prompt `row` that holds every position not
    /// computed yet; first == end when they all are.
    std::pair<int, int> missingLensPositions(int row, int from, int to) const;
    /// Forgets the computed lenses (the number of tokens listed per cell changed).
    void clearLenses() const {
        lenses_->clear();
        partial_->clear();
    }
    /// How many lenses are kept.
    int lensCount() const { return static_cast<int>(lenses_->size()); }

    int numLayers() const { return static_cast<int>(model->config().numLayers); }
    int numPrompts() const { return static_cast<int>(tokens.size()); }
    QString prompt(int row) const { return QString::fromStdString(result.batch.prompts.at(static_cast<size_t>(row))); }
    /// The dotted path of a value of this model ("layers.2.mlp.mlp_neurons").
    QString path(const ValueKey& key) const;
    /// What every export records: model folder, family, dtype, prompts, nnscope version, plus `settings`.
    std::map<std::string, std::string> exportMetadata(const QMap<QString, QString>& settings) const;
    /// "" when the snapshot holds every value of `keys`; else a sentence for a view's placeholder, "<what> needs
    /// <the first few missing paths>, which the trace file F does not hold." (or "which the last trace did not save.").
    QString missing(const std::vector<ValueKey>& keys, const QString& what) const;

private:
    /// (prompt row, last position only) -> lens. Written and read by the GUI thread only; the worker reads `result`.
    /// A copy of the snapshot (withValues: the same pass with more values) shares the lenses: copying the pointer in
    /// the worker does not touch the map.
    std::shared_ptr<std::map<std::pair<int, bool>, LensPtr>> lenses_ = std::make_shared<std::map<std::pair<int, bool>, LensPtr>>();
    /// prompt row -> its lens merged from windows, and which positions are computed (GUI thread only, shared as above).
    struct PartialLens {
        std::shared_ptr<LogitLens> lens;
        std::vector<bool> computed;
    };
    std::shared_ptr<std::map<int, PartialLens>> partial_ = std::make_shared<std::map<int, PartialLens>>();
};

using SnapshotPtr = std::shared_ptr<const TraceSnapshot>;

/// Builds the snapshot of a finished trace (with its token labels; the logit lens is computed later, when shown).
SnapshotPtr makeSnapshot(ModelPtr model, TraceResult result, quint64 serial, const QStringList& interventions = {},
                         SnapshotPtr baseline = nullptr);

struct TraceFile;
/// A snapshot of the values of a trace file (core/io/tracefile.h) with the file's token labels. Its logit lens is computed
/// when shown, like a trace's, where the file holds every layer_output and the model has weights; else lensMissing
/// says why there is none. Throws nnscope::Error.
SnapshotPtr makeFileSnapshot(const TraceFile& file, quint64 serial);

/// `base` with `values` added (a pinned value read again from the same inputs); the rest is shared.
SnapshotPtr withValues(const TraceSnapshot& base, const std::vector<std::pair<ValueKey, torch::Tensor>>& values);

/// Short readable label of a value key for titles ("layers.2.mlp.mlp_neurons").
QString valueKeyPath(const Model& model, const ValueKey& key);

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::ModelPtr)
Q_DECLARE_METATYPE(nnscope::SnapshotPtr)
