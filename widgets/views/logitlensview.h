// SPDX-License-Identifier: MIT
#pragma once
// The logit lens: every block's layer_output read through the model's own final norm and lm_head. A blocks ×
// positions heatmap coloured by the top token's probability with the token written in the cell (hover: the top
// tokens and the target's probability), and a chosen target token's probability across blocks at one position.
// The lens is not part of a trace: the window computes it in its worker thread for the prompt this view shows, when
// the view is shown (MainWindow::ensureLens), and stores it in the snapshot; until then the view says so.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTimer;
class QStackedWidget;

namespace nnscope {

class LogitLensView : public TraceView {
    Q_OBJECT
public:
    explicit LogitLensView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// The target token: an id ("#42" or "42") or text whose first token is taken; kept for later traces of the
    /// same model. Empty text goes back to the default, each trace's most probable next token after its first
    /// prompt. Returns false (and says why under the field) when it names no token.
    bool setTarget(const QString& text);
    int64_t targetId() const { return targetId_; }
    void setPosition(int position);
    static constexpr double kLogFloor = 1e-5;  ///< the log scale's lowest probability (a 128k vocabulary's uniform is 8e-6)
    /// The heatmap's colours on a log scale (kLogFloor to 1), remembered by the window.
    void setLogScale(bool on);
    bool logScale() const;
    QVariantMap choices() const override { return {{"logScale", logScale()}}; }
    void restoreChoices(const QVariantMap& choices) override { setLogScale(choices.value("logScale", logScale()).toBool()); }
    int position() const;
    /// The snapshot now holds more lenses: shows the prompt's lens when it is there.
    void lensChanged();
    /// What stands in place of the plots while the prompt's lens is not there (computing, cancelled, failed); a link
    /// in it asks for the lens again (lensRequested).
    void setLensNote(const QString& html);
    /// Whether the plots show the lens of the prompt shown (on a long prompt, of at least the positions in view).
    bool hasLens() const { return shownLens_ != nullptr; }
    /// The positions of the prompt shown whose lens the view needs: the columns in view, widened to whole chunks of 64
    /// (before anything is drawn: the last 128, where the view starts). [first, end) in the prompt's positions.
    std::pair<int, int> wantedPositions() const;
    QString lensNote() const;
    HeatmapPlot* heatmap() const { return heatmap_; }
    QCustomPlot* targetPlot() const { return targetPlot_; }
    QCPGraph* targetGraph() const { return targetGraph_; }

signals:
    /// The user asked for the lens of the prompt shown (the link in the note after a Cancel), or scrolled a long
    /// prompt's lens to positions not computed yet.
    void lensRequested();

private:
    void refresh();
    /// `reveal`: scroll the heatmap to the position picked.
    void refreshTarget(bool reveal = true);
    int64_t defaultTarget() const;  ///< the snapshot's most probable next token after its first prompt

    QStackedWidget* body_;  ///< the plots, or the note while the lens is not there
    QLabel* note_;
    TraceSnapshot::LensPtr shownLens_;  ///< the lens the plots show (nullptr: the note is shown)
    std::pair<const TraceSnapshot*, int> shownFor_{nullptr, -1};  ///< the snapshot and prompt the heatmap shows
    QTimer* wantTimer_;  ///< asks for the positions in view once scrolling pauses
    QLineEdit* targetEdit_;
    QLabel* targetLabel_;
    QSpinBox* positionSpin_;
    QCheckBox* logCheck_;
    HeatmapPlot* heatmap_;
    MatrixModel* model_;
    QCustomPlot* targetPlot_;
    QCPGraph* targetGraph_;
    int64_t targetId_ = -1;
    bool targetChosen_ = false;  ///< typed by the user: kept across traces; otherwise each trace's own most probable next token
    bool positionPicked_ = false;
    QString shownTarget_;  ///< the label the field shows for targetId_
};

}  // namespace nnscope
