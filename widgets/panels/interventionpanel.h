// SPDX-License-Identifier: MIT
#pragma once
// The "Interventions" dock: the edits, skipped blocks and steering vectors the next trace applies, one per line in
// the syntax the command line shares (core/run/edit.h's addIntervention):
//   layers.1.self_attn.attention_queries[:, 1] *= 2     an edit of any writable value (set, add, scale; indices, slices)
//   layers.0.self_attn.attention_head_outputs[:, :, 3] = mean    mean-ablation of a head
//   skip 2                                              block 2 passes the stream through unchanged
//   steer 1:4:/path/vector.npy:-1                       add 4 x the vector to layers.1.layer_output at the last position
// Each line has a check box (applied or not); a line is checked against the open model when it is added, so a typo
// is refused at once with the reason. Views add lines through their right-click menus (a head: ablate; a neuron:
// zero), pinned cards through Edit…. "Compare with the unedited run" makes the trace run the prompts twice, so the
// Before / after view can set the two side by side.
#include "widgets/views/tracesnapshot.h"

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QPushButton;

namespace nnscope {

class InterventionPanel : public QWidget {
    Q_OBJECT
public:
    explicit InterventionPanel(QWidget* parent = nullptr);

    /// The model the lines are checked against (nullptr: none; adding is refused). Lines that no longer parse on a
    /// newly opened model are unchecked and say why in their tooltip.
    void setModel(ModelPtr model);
    /// Checks `text` against the model and appends it, checked. Returns "" or the reason it was refused (also shown
    /// under the input line). A line already in the list is checked again rather than added twice.
    QString add(const QString& text);
    /// The checked lines, in list order: what the next trace applies.
    QStringList active() const;
    /// Every line, checked or not.
    QStringList all() const;
    void setChecked(int row, bool checked);
    void removeRow(int row);
    void clear();
    /// Whether the trace also runs without the interventions for the Before / after view (default true).
    bool compare() const;
    void setCompare(bool compare);
    /// Puts `text` in the input line and focuses it, the cursor at the end (a pinned card's Edit…).
    void beginEdit(const QString& text);
    /// Folder relative .npy paths are resolved against (the working folder when the line was added).
    QString baseDir() const { return baseDir_; }

    /// Makes a steering vector from the last trace, as in contrastive activation addition (Rimsky et al. 2024):
    /// layer_output of block `block` at the last position of prompt `rowA` minus that of prompt `rowB` (the unedited
    /// run's values when the snapshot has a baseline), float32 [hidden_size]. Writes it to `npyPath` and adds
    /// `steer BLOCK:FACTOR:npyPath[:POSITIONS]`. Returns "" or the reason (missing value, bad rows, write error).
    QString addSteeringFromPrompts(const TraceSnapshot& snapshot, int block, int rowA, int rowB, double factor,
                                   const QString& positions, const QString& npyPath);

    /// Asks, in the panel, whether the checked lines carried over from the checkpoint `previous` stay on for the one
    /// just opened: "Keep them" leaves them checked, "Turn them off" unchecks them. Until answered they stay as they
    /// were (checked). Nothing is asked when no line is checked. The question goes when answered, when the lines change
    /// or when asked again.
    void askKeepAfterModelChange(const QString& previous);
    /// Whether the question is on screen.
    bool askingKeep() const;
    QPushButton* keepButton() const { return keep_; }
    QPushButton* turnOffButton() const { return turnOff_; }

    QLineEdit* input() const { return input_; }
    QListWidget* list() const { return list_; }
    QLabel* errorLabel() const { return error_; }
    QPushButton* steerButton() const { return steer_; }

signals:
    /// The lines or their check marks changed.
    void changed();
    /// Steering vector… was pressed (the window opens its dialog on the last trace).
    void steeringDialogRequested();

private:
    QString validate(const QString& text) const;
    void addItem(const QString& text);

    ModelPtr model_;
    QString baseDir_;
    QListWidget* list_;
    QLineEdit* input_;
    QLabel* error_;
    QCheckBox* compare_;
    QPushButton* add_;
    QPushButton* remove_;
    QPushButton* clear_;
    QPushButton* steer_;
    QWidget* keepBar_;  ///< the question of askKeepAfterModelChange
    QLabel* keepText_;
    QPushButton* keep_;
    QPushButton* turnOff_;
};

}  // namespace nnscope
