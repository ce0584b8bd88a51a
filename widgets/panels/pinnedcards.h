// SPDX-License-Identifier: MIT
#pragma once
// The "Pinned cards" dock: one card per value pinned from the diagram, the support table or the printout (several at
// once). A card names the value (its path, layout, description and read-at place, and the TransformerLens hook that
// holds the same numbers) and, once a trace has read it, shows the tensor: its shape with the axis names, dtype,
// min / max / mean, NaN and Inf counts and the norm at each position of the shown prompt as a sparkline. Buttons plot,
// export, edit or unpin it; Copy puts its path, its values as CSV or an nnterp snippet that reads it on the clipboard.
#include "widgets/panels/blockdiagram.h"

#include "core/analysis/valuestats.h"
#include "widgets/views/featuresview.h"

#include <QFrame>

class QLabel;
class QMenu;
class QToolButton;
class QVBoxLayout;

namespace nnscope {

/// A small line of values drawn with QPainter (the norm per position); hovering names the position, its token and
/// the value.
class Sparkline : public QWidget {
    Q_OBJECT
public:
    explicit Sparkline(QWidget* parent = nullptr);
    void setValues(std::vector<double> values, QStringList labels = {});
    const std::vector<double>& values() const { return values_; }
    /// The polyline's points in widget coordinates, one per value (NaN and Inf values are left out).
    QVector<QPointF> points() const;
    QSize sizeHint() const override { return {220, 40}; }
    QSize minimumSizeHint() const override { return {80, 28}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    std::vector<double> values_;
    QStringList labels_;
    int hovered_ = -1;
};

class ValueCard : public QFrame {
    Q_OBJECT
public:
    ValueCard(const PartInfo& info, QWidget* parent = nullptr);
    const ValueKey& key() const { return key_; }
    const PartInfo& info() const { return info_; }
    /// The model the value belongs to: names its TransformerLens hook and its nnterp snippet.
    void setModel(ModelPtr model);
    /// Shows the value as `snapshot` holds it (the sparkline for prompt `row`), or `unread` when it holds none.
    void setSnapshot(const TraceSnapshot* snapshot, int row = 0, const QString& unread = {});
    QToolButton* plotButton() const { return plot_; }
    QToolButton* exportButton() const { return export_; }
    QToolButton* unpinButton() const { return unpin_; }
    QToolButton* editButton() const { return edit_; }
    QToolButton* copyButton() const { return copy_; }
    QMenu* copyMenu() const { return copyMenu_; }
    Sparkline* sparkline() const { return sparkline_; }
    QString statusText() const;
    /// The statistics shown (valid once the value is read).
    const ValueStats& stats() const { return stats_; }
    bool hasValue() const { return value_.defined(); }
    /// The TransformerLens hook shown ("" when none holds the value).
    QString hookName() const { return hook_; }
    QString hookText() const;
    /// What Copy puts on the clipboard: the value path, the values as CSV (csvText, no metadata lines), an nnterp
    /// snippet. "" when there is nothing to copy (no value read, no model).
    QString pathText() const { return info_.path; }
    QString csvText() const;
    QString nnterpText() const;

signals:
    void plotRequested(const nnscope::ValueKey& key);
    void exportRequested(const nnscope::ValueKey& key);
    void unpinRequested(const nnscope::ValueKey& key);
    void editRequested(const nnscope::ValueKey& key);
    /// A sentence for the status bar ("Copied ...", or why nothing was copied).
    void message(const QString& text);

private:
    void copy(const QString& what, const QString& text);

    ValueKey key_;
    PartInfo info_;
    QString hook_, hookNote_;
    torch::Tensor value_;
    ValueStats stats_;
    ModelPtr model_;
    std::vector<std::string> prompts_;
    QLabel* hookLabel_;
    QLabel* status_;
    QLabel* stats_label_;
    QLabel* sparkTitle_;
    Sparkline* sparkline_;
    QToolButton* plot_;
    QToolButton* export_;
    QToolButton* unpin_;
    QToolButton* edit_;
    QToolButton* copy_;
    QMenu* copyMenu_;
};

/// A pinned feature of a sparse dictionary: its number, dictionary and site, and once the dictionary has run on a trace
/// its activation over the shown prompt (a sparkline with the tokens), its largest activation and where.
class FeatureCard : public QFrame {
    Q_OBJECT
public:
    /// Feature `feature` of the dictionary read from folder `dir` (`name`: the folder's name; `site`: its value path).
    FeatureCard(const QString& dir, const QString& name, const QString& site, int64_t feature, QWidget* parent = nullptr);
    const QString& dir() const { return dir_; }
    int64_t feature() const { return feature_; }
    /// Shows the feature as `runs` computed it on prompt `row` (nullptr, or runs without its dictionary: says so).
    void setRuns(const FeatureRuns* runs, int row);
    Sparkline* sparkline() const { return sparkline_; }
    QString statusText() const;
    QToolButton* showButton() const { return show_; }
    QToolButton* unpinButton() const { return unpin_; }

signals:
    void showRequested(const QString& dir, qint64 feature);
    void unpinRequested(const QString& dir, qint64 feature);

private:
    QString dir_;
    int64_t feature_;
    QLabel* status_;
    Sparkline* sparkline_;
    QToolButton* show_;
    QToolButton* unpin_;
};

class PinnedCardsPanel : public QWidget {
    Q_OBJECT
public:
    explicit PinnedCardsPanel(QWidget* parent = nullptr);

    /// The model of the pinned values (the cards' hook names and snippets).
    void setModel(ModelPtr model);
    /// Pins the value `info` describes; returns false when it has no value or is pinned already.
    bool pin(const PartInfo& info);
    void unpin(const ValueKey& key);
    void clear();
    std::vector<ValueKey> keys() const;
    const std::vector<ValueCard*>& cards() const { return cards_; }
    ValueCard* card(const ValueKey& key) const;
    void setSnapshot(SnapshotPtr snapshot);
    /// The prompt whose norms the sparklines draw.
    void setPrompt(int row);
    /// Pins feature `feature` of the dictionary of folder `dir` (see FeatureCard); false when pinned already.
    bool pinFeature(const QString& dir, const QString& name, const QString& site, int64_t feature);
    void unpinFeature(const QString& dir, int64_t feature);
    const std::vector<FeatureCard*>& featureCards() const { return featureCards_; }
    /// The attached dictionaries' runs on the trace shown (the feature cards read them).
    void setFeatureRuns(FeatureRunsPtr runs);
    /// What a card whose value the snapshot lacks says (reading it now, the next run reads it, ...).
    void setUnreadText(const QString& text);

signals:
    void plotRequested(const nnscope::ValueKey& key);
    void exportRequested(const nnscope::ValueKey& key);
    /// A card's Edit…: start an intervention on this value (the window fills the Interventions input).
    void editRequested(const nnscope::ValueKey& key);
    void pinsChanged();
    void message(const QString& text);
    /// A feature card's Show: select the feature in the Features view.
    void featureShowRequested(const QString& dir, qint64 feature);

private:
    void refreshCards();

    QVBoxLayout* list_;
    QLabel* empty_;
    std::vector<ValueCard*> cards_;
    std::vector<FeatureCard*> featureCards_;
    FeatureRunsPtr featureRuns_;
    SnapshotPtr snapshot_;
    ModelPtr model_;
    int row_ = 0;
    QString unread_;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::ValueKey)
