// SPDX-License-Identifier: MIT
#pragma once
// The Before / after view: what the interventions of the last trace did. For one prompt of the batch, the next-token
// probabilities of the unedited run (the snapshot's baseline) and of the edited run side by side (bars and a table
// with the change), and the logit lens at the last position: a target token's probability across blocks before and
// after, with each block's top token in both runs (computed by the window's worker when this view is shown, and drawn
// when it comes: lensChanged). Without a baseline (no interventions, or the comparison switched
// off in the Interventions dock) it says how to get one.
#include "widgets/views/traceview.h"

class QCheckBox;
class QCPBars;
class QCPGraph;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableWidget;

namespace nnscope {

class CompareView : public TraceView {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// How many top tokens of each run are listed (their union is shown).
    void setTopK(int k);
    /// Probabilities on a log axis (small tokens readable beside a dominant one).
    void setLogScale(bool log);
    /// The lens target: `#ID` or text of one token; empty: the unedited run's most probable next token. Returns false
    /// (and says why) when it names no token.
    bool setTarget(const QString& text);
    int64_t targetId() const { return targetId_; }

    /// The snapshots now hold more lenses: draws the lens part when both runs' lenses of the prompt are there.
    void lensChanged() { refresh(); }
    /// Whether the lens part shows the prompt's lenses (else it says they are being computed).
    bool hasLens() const { return lensShown_; }

    /// The token ids the bars and the table show, in order.
    const QVector<qint64>& tokenIds() const { return ids_; }
    QCPBars* beforeBars() const { return beforeBars_; }
    QCPBars* afterBars() const { return afterBars_; }
    QCPGraph* lensBefore() const { return lensBefore_; }
    QCPGraph* lensAfter() const { return lensAfter_; }
    QTableWidget* tokenTable() const { return tokenTable_; }
    QTableWidget* lensTable() const { return lensTable_; }
    QLabel* summaryLabel() const { return summary_; }

private:
    void refresh();

    QSpinBox* topKSpin_;
    QCheckBox* logScale_;
    QLineEdit* targetEdit_;
    QLabel* summary_;
    QCustomPlot* barsPlot_;
    QCPBars* beforeBars_;
    QCPBars* afterBars_;
    QTableWidget* tokenTable_;
    QCustomPlot* lensPlot_;
    QCPGraph* lensBefore_;
    QCPGraph* lensAfter_;
    QTableWidget* lensTable_;
    QVector<qint64> ids_;
    int64_t targetId_ = -1;
    QString targetText_;
    bool lensShown_ = false;
};

}  // namespace nnscope
