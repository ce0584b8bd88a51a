// SPDX-License-Identifier: MIT
#pragma once
// The Features view: what the sparse dictionaries attached to the model (File ▸ Open Dictionary) read on the trace.
// For the dictionary chosen and the prompt shown: its reconstruction quality at its site (MSE, explained variance,
// mean L0; a warning when the explained variance is below 0), the prompt's tokens coloured by the selected feature,
// the top features at the token under the cursor, and for the selected feature its activation over the prompt, its
// logit effects (its decoder row through the final norm's gain and the unembedding) and its nearest features by
// decoder cosine. The dictionaries' runs are computed by the window in its worker after each trace (computeFeatureRuns);
// a feature's logit effects and neighbours are computed in the worker when it is selected. When the dictionary has a
// dashboard (core/run/dashboard.h: found as <dictionary>/dashboard.safetensors, or opened by File ▸ Open Dashboard), the
// selected feature's top contexts in the dashboard's dataset, its histogram, density and maximum are shown beside it.
#include "widgets/views/traceview.h"

#include "core/analysis/featureeffects.h"
#include "core/run/dashboard.h"
#include "core/run/features.h"

#include <map>
#include <memory>
#include <vector>

class QComboBox;
class QCustomPlot;
class QCPBars;
class QLabel;
class QSpinBox;
class QTableWidget;
class QToolButton;

namespace nnscope {

class TokenText;

/// One attached dictionary's run on every prompt of a trace.
struct DictionaryRun {
    AttachedDictionary attached;
    QString name;  ///< the dictionary's folder name
    QString site;  ///< the value path it reads ("layers.1.layer_output"; "a → b" for a transcoder)
    std::vector<FeatureRun> rows;  ///< one per prompt of the batch (empty when `error` says why)
    QString error;                 ///< why it could not run on this trace, or ""
};

/// The attached dictionaries' runs on one trace (snapshot), in the order they were attached.
struct FeatureRuns {
    SnapshotPtr snapshot;
    std::vector<DictionaryRun> dictionaries;
};
using FeatureRunsPtr = std::shared_ptr<const FeatureRuns>;

/// Runs every dictionary of `attached` on every prompt of `snapshot` (runDictionary), in the calling (worker) thread,
/// checking `control` for Cancel between runs. A dictionary that cannot run (a needed value not saved) gets its error,
/// the others run. Throws nnscope::Cancelled.
FeatureRunsPtr computeFeatureRuns(const SnapshotPtr& snapshot, const std::vector<AttachedDictionary>& attached, const JobControl& control);

/// The features a trace file holds (its dictionaries' values read back, core/io/tracefile.h) as runs the Features view
/// shows without the dictionaries' weights: one per dictionary with a `.features` value, per prompt its activations
/// [length, d_sae] at the prompt's own positions, and the reconstruction and error [length, d_out] where the file holds
/// them (with the quality numbers; else those are NaN). Each dictionary is its recorded description with no tensors
/// (dir = its folder): the logit effects and nearest features need its weights. nullptr when the file holds no features.
FeatureRunsPtr featureRunsFromFile(const SnapshotPtr& snapshot);

/// One line on a run's reconstruction quality on prompt `row`: "MSE 0.0123 · explained variance 0.87 · mean L0 12.3".
QString featureQualityText(const FeatureRun& run);

/// A selected feature's logit effects and nearest features (computed in the worker; `effectsError` says why there
/// are no logit effects, e.g. a dictionary that does not write the residual stream).
struct FeatureDetails {
    FeatureLogitEffects effects;
    QString effectsError;
    std::vector<FeatureSimilarity> nearest;
};
using FeatureDetailsPtr = std::shared_ptr<const FeatureDetails>;

class FeaturesView : public TraceView {
    Q_OBJECT
public:
    explicit FeaturesView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// The names of the dictionaries attached to the model (what the chooser lists before a run is there).
    void setAttached(const QStringList& names);
    /// The runs of the dictionaries on the snapshot shown (ignored when they belong to another trace; nullptr: none).
    void setRuns(FeatureRunsPtr runs);
    FeatureRunsPtr runs() const { return runs_; }

    /// The dictionary shown (index into the runs, in attach order).
    void setDictionary(int index);
    int dictionary() const;
    /// The token whose top features the table lists (a position of the prompt shown).
    void selectToken(int position);
    int selectedToken() const { return token_; }
    /// Selects feature `feature` (its activation, logit effects and neighbours are shown; featureSelected says so).
    void selectFeature(int64_t feature);
    int64_t feature() const { return feature_; }
    /// The run shown (dictionary and prompt), or nullptr.
    const FeatureRun* currentRun() const;
    const DictionaryRun* currentDictionary() const;

    QComboBox* dictionaryCombo() const { return dictCombo_; }
    QTableWidget* topTable() const { return top_; }
    QLabel* qualityLabel() const { return quality_; }
    QLabel* topTitleLabel() const { return topTitle_; }  ///< "Top features at position P “token” (L0 n)"
    QLabel* featureTitleLabel() const { return featureTitle_; }  ///< "Feature F of NAME: active on n of N tokens, largest x"
    QSpinBox* findSpin() const { return find_; }
    QCustomPlot* activationPlot() const { return plot_; }
    QTableWidget* promotedTable() const { return promoted_; }
    QTableWidget* suppressedTable() const { return suppressed_; }
    QTableWidget* nearestTable() const { return nearest_; }
    TokenText* tokenText() const { return text_; }
    QToolButton* pinButton() const { return pin_; }
    /// Whether the selected feature's details are shown (computed for the feature selected now).
    bool detailsShown() const { return detailsFeature_ == feature_ && feature_ >= 0; }

    /// Reads the dashboard file `path` (loadDashboard) and shows it for the attached dictionary it was made from (its
    /// metadata's dictionary folder), else for the dictionary shown. Returns that dictionary's name. Throws nnscope::Error:
    /// the file unreadable or not a dashboard, no dictionary shown, or its feature count not the dictionary's.
    QString openDashboard(const QString& path);
    /// The dashboard of the dictionary shown (its own, found beside it, or one opened), or nullptr.
    const Dashboard* currentDashboard() const;
    QLabel* dashboardLabel() const { return dashTitle_; }
    TokenText* dashboardText() const { return dashText_; }
    QCustomPlot* histogramPlot() const { return histPlot_; }

signals:
    /// The feature shown changed: `dictionary` (index in attach order) and `feature`.
    void featureSelected(int dictionary, qint64 feature);
    /// The user asked for a card of the selected feature.
    void pinRequested(int dictionary, qint64 feature);

private:
    void refresh();
    void updatePlaceholder();
    void fillTopTable();
    void showFeature();
    /// The activation plot's token labels: every token where they fit, every second, third, ... where the plot is too
    /// narrow for all (rotated labels ran into each other), the selected token always. Redone when the plot resizes.
    void labelTokens();
    bool eventFilter(QObject* watched, QEvent* event) override;
    void requestDetails();
    void detailsEnded(JobState state, const QVariant& result, const QString& message);
    void showDashboard();

    FeatureRunsPtr runs_;
    QStringList attached_;
    int token_ = -1;
    int64_t feature_ = -1, detailsFeature_ = -1;
    bool locked_ = false;

    QComboBox* dictCombo_;
    QLabel* dictLabel_;
    QSpinBox* find_;
    QToolButton* pin_;
    QLabel* quality_;
    TokenText* text_;
    QLabel* topTitle_;
    QTableWidget* top_;
    QLabel* featureTitle_;
    QCustomPlot* plot_;
    QCPBars* bars_;
    QTableWidget* promoted_;
    QTableWidget* suppressed_;
    QTableWidget* nearest_;
    QLabel* detailsStatus_;

    /// Dashboards by the absolute folder of their dictionary (nullptr: looked for beside it, none there); the reason one
    /// beside it could not be read.
    std::map<QString, std::shared_ptr<const Dashboard>> dashboards_;
    std::map<QString, QString> dashboardErrors_;
    QWidget* dashPanel_;
    QLabel* dashTitle_;
    TokenText* dashText_;
    QCustomPlot* histPlot_;
    QCPBars* histBars_;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::FeatureRunsPtr)
Q_DECLARE_METATYPE(nnscope::FeatureDetailsPtr)
