// SPDX-License-Identifier: MIT
#pragma once
// The Patching view: activation patching (core/run/patching.h) in the window. A clean and a corrupted prompt (the same
// number of tokens), the answer token and optionally a wrong one, the value to patch (layer_output,
// attention_output, mlp_output, one head's output, or every head), the blocks and positions to patch (all by default);
// Run patches the clean run's value into the corrupted run at every chosen block x position (x head), in the worker
// thread, with a progress bar that says "cell k of N, about T s left", and the grid of the metric (logit(answer) -
// logit(wrong), or p(answer) without a wrong token) is shown as a blocks x positions heatmap, or for every head a
// blocks x heads heatmap at one position or summed over the positions, raw or normalised as the fraction of the clean -
// corrupted gap that one patch recovers; beside it attribution patching's estimate; hovering a cell of either shows
// its value. The window's Interventions list applies to every run, as to a trace, and the view says when it does.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

#include "core/run/patching.h"

#include <QElapsedTimer>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace nnscope {

/// What the view asks the window to run (as typed; the window tokenizes and checks it).
struct PatchRequest {
    QString clean, corrupted;
    QString answer, wrong;  ///< tokens as text of one token or #ID; wrong empty: the answer's probability
    PatchSite site = PatchSite::LayerOutput;
    int head = 0;
    QString blocks, positions;  ///< parseIndexList's syntax ("-1", "0,3,5", "2-6"); empty: all
};

class PatchingView : public TraceView {
    Q_OBJECT
public:
    explicit PatchingView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;  ///< keeps the model's head count for the head selector
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// Fills the form (empty fields are left as they are).
    void setRequest(const PatchRequest& request);
    PatchRequest request() const;
    void setModel(ModelPtr model);
    void setRunning(bool running);
    void setProgress(int done, int total);
    /// Shows a finished grid, `metric` naming what it measures ("logit(“ Paris”) − logit(“ Rome”)").
    void setResult(std::shared_ptr<const PatchingResult> result, const QString& metric);
    void setFailed(const QString& message);
    /// Normalised: (patched − corrupted) / (clean − corrupted), 1 = the patch restores the clean metric.
    void setNormalized(bool normalized);
    /// The Interventions list's active lines: the next run applies them to every run (clean, corrupted, patched); the
    /// view says so, and says when the grid shown was computed with other ones.
    void setActiveInterventions(const QStringList& lines);
    /// The line that says which interventions the next run applies and which the grid shown ran with (hidden when
    /// neither has any).
    QLabel* interventionsLabel() const { return interventionsNote_; }

    std::shared_ptr<const PatchingResult> result() const { return result_; }
    HeatmapPlot* heatmap() const { return heatmap_; }
    MatrixModel* matrixModel() const { return model_; }
    /// Attribution patching's grid, beside the exact one (hidden when the result has no estimate).
    HeatmapPlot* estimateHeatmap() const { return estimateHeatmap_; }
    MatrixModel* estimateModel() const { return estimateModel_; }
    QPushButton* runButton() const { return run_; }
    QLineEdit* blocksEdit() const { return blocks_; }
    QLineEdit* positionsEdit() const { return positions_; }
    /// For an every-head grid: which position the blocks x heads grid shows (data -1: summed over the positions run).
    QComboBox* headPositionCombo() const { return headPosition_; }
    /// Shows "cell k of N, about T s left" while patching runs.
    QProgressBar* progressBar() const { return progress_; }
    QLabel* statusLabel() const { return status_; }

signals:
    void patchRequested(const nnscope::PatchRequest& request);
    void cancelRequested();

private:
    void refresh();
    void refreshInterventionsNote();

    ModelPtr modelPtr_;
    QLineEdit* clean_;
    QLineEdit* corrupted_;
    QLineEdit* answer_;
    QLineEdit* wrong_;
    QComboBox* site_;
    QSpinBox* head_;
    QLineEdit* blocks_;
    QLineEdit* positions_;
    QComboBox* headPosition_;
    QCheckBox* normalized_;
    QPushButton* run_;
    QPushButton* cancel_;
    QProgressBar* progress_;
    QLabel* status_;
    QLabel* interventionsNote_;
    QStringList activeInterventions_;
    HeatmapPlot* heatmap_;
    MatrixModel* model_;
    HeatmapPlot* estimateHeatmap_;
    MatrixModel* estimateModel_;
    std::shared_ptr<const PatchingResult> result_;
    QString metric_;
    bool running_ = false;
    QElapsedTimer clock_;  ///< since the first cell's progress report: the time estimate
};

}  // namespace nnscope
