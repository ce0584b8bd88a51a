// SPDX-License-Identifier: MIT
#pragma once
// The Generate view: generation (core/run/generate.h) from a prompt, greedy or sampled (temperature, top-k, top-p, a
// seed), with the Interventions dock's active edits applied at every step; with interventions the unedited
// continuation is generated with the same seed and shown beside the edited one, the tokens where they part marked.
#include "widgets/views/traceview.h"

#include "core/run/generate.h"

#include <QStringList>

#include <memory>
#include <optional>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace nnscope {

/// What one Generate request made: the continuation with the interventions and, when there were any, without them.
struct GenerationPair {
    Generation edited;                   ///< with the interventions (the only run when there are none)
    std::optional<Generation> unedited;  ///< the same options and seed without the interventions
    QStringList interventions;           ///< as applied (addIntervention syntax)
    GenerateOptions options;             ///< as run (seed included; no intervention or cancel flag kept)
};
using GenerationPairPtr = std::shared_ptr<const GenerationPair>;

/// What the view asks the window to run.
struct GenerateRequest {
    QString prompt;
    GenerateOptions options;  ///< maxNewTokens, sampling settings, seed (eos ids are the model's)
};

class GenerateView : public TraceView {
    Q_OBJECT
public:
    explicit GenerateView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;  ///< fills an empty prompt box with the trace's first prompt
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    /// Takes the defaults of a newly opened model (generation_config.json's sampling settings, max_new_tokens).
    void setModel(ModelPtr model);
    void setPrompt(const QString& prompt);
    GenerateRequest request() const;
    void setSampling(bool sample, double temperature, int topK, double topP, quint64 seed);
    void setMaxNewTokens(int n);
    void setRunning(bool running);
    void setResult(GenerationPairPtr result);
    void setFailed(const QString& message);

    GenerationPairPtr result() const { return result_; }
    QPushButton* runButton() const { return run_; }
    QTextBrowser* editedText() const { return edited_; }
    QTextBrowser* uneditedText() const { return unedited_; }
    QLabel* statusLabel() const { return status_; }

signals:
    void generateRequested(const nnscope::GenerateRequest& request);
    void cancelRequested();

private:
    ModelPtr model_;
    QLineEdit* prompt_;
    QSpinBox* maxNew_;
    QCheckBox* sample_;
    QDoubleSpinBox* temperature_;
    QSpinBox* topK_;
    QDoubleSpinBox* topP_;
    QSpinBox* seed_;
    QPushButton* run_;
    QPushButton* cancel_;
    QLabel* status_;
    QLabel* uneditedTitle_;
    QLabel* editedTitle_;
    QTextBrowser* unedited_;
    QTextBrowser* edited_;
    GenerationPairPtr result_;
    bool running_ = false;
};

}  // namespace nnscope

Q_DECLARE_METATYPE(nnscope::GenerationPairPtr)
