// SPDX-License-Identifier: MIT
#pragma once
// The "Pinned cards" dock: one card per value pinned from the diagram (several at once), each with its path, layout,
// description and read-at place, its shape in the last trace, and buttons to plot, export or unpin it. Pinned
// values are read by the next trace.
#include "blockdiagram.h"

#include <QFrame>

class QLabel;
class QPushButton;
class QVBoxLayout;

namespace nnscope {

class ValueCard : public QFrame {
    Q_OBJECT
public:
    ValueCard(const PartInfo& info, QWidget* parent = nullptr);
    const ValueKey& key() const { return key_; }
    const PartInfo& info() const { return info_; }
    void setSnapshot(const TraceSnapshot* snapshot);
    QPushButton* plotButton() const { return plot_; }
    QPushButton* exportButton() const { return export_; }
    QPushButton* unpinButton() const { return unpin_; }
    QPushButton* editButton() const { return edit_; }
    QString statusText() const;

signals:
    void plotRequested(const nnscope::ValueKey& key);
    void exportRequested(const nnscope::ValueKey& key);
    void unpinRequested(const nnscope::ValueKey& key);
    void editRequested(const nnscope::ValueKey& key);

private:
    ValueKey key_;
    PartInfo info_;
    QLabel* status_;
    QPushButton* plot_;
    QPushButton* export_;
    QPushButton* unpin_;
    QPushButton* edit_;
};

class PinnedCardsPanel : public QWidget {
    Q_OBJECT
public:
    explicit PinnedCardsPanel(QWidget* parent = nullptr);

    /// Pins the value `info` describes; returns false when it has no value or is pinned already.
    bool pin(const PartInfo& info);
    void unpin(const ValueKey& key);
    void clear();
    std::vector<ValueKey> keys() const;
    const std::vector<ValueCard*>& cards() const { return cards_; }
    ValueCard* card(const ValueKey& key) const;
    void setSnapshot(SnapshotPtr snapshot);

signals:
    void plotRequested(const nnscope::ValueKey& key);
    void exportRequested(const nnscope::ValueKey& key);
    /// A card's Edit…: start an intervention on this value (the window fills the Interventions input).
    void editRequested(const nnscope::ValueKey& key);
    void pinsChanged();

private:
    QVBoxLayout* list_;
    QLabel* empty_;
    std::vector<ValueCard*> cards_;
    SnapshotPtr snapshot_;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::ValueKey)
