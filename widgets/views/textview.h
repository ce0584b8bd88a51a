// SPDX-License-Identifier: MIT
#pragma once
// The Text view: every prompt of the batch as wrapped text, one under another, each token a box (its boundaries
// visible) coloured by a value at its position:
//   - the attention from the selected token to each token (attention_probabilities[head, selected, key]), or to the
//     selected token from each token ([head, query, selected]), of one head or the mean over the block's heads;
//   - one neuron's activation (mlp_neurons, what mlp.down_proj reads: the Neuron view's values);
//   - the norm per position of a value (a pinned value, or the block's layer_output), over all its other axes;
//   - one feature of an attached sparse dictionary (the Features view's feature; its runs come from the window).
// Hovering a token selects it (attention modes colour from / to it) and shows its position, text and value; a click
// keeps the selection while the mouse moves on (click again to let it follow the mouse). A legend gives the colour
// scale with its minimum and maximum.
#include "widgets/views/featuresview.h"
#include "widgets/views/traceview.h"

#include <qcustomplot.h>

#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

namespace nnscope {

/// The tokens of several prompts as wrapped text, each token a box filled with its value's colour on `gradient` over
/// `range` (NaN: unfilled). One widget paints them all (no widget per token).
class TokenText : public QWidget {
    Q_OBJECT
public:
    explicit TokenText(QWidget* parent = nullptr);

    struct Prompt {
        QString title;
        QStringList tokens;          ///< readable labels ("␣park": the leading space shown as one)
        std::vector<double> values;  ///< one per token
        int selected = -1;           ///< the selected token, outlined
    };
    void setPrompts(std::vector<Prompt> prompts);
    void setColours(const QCPColorGradient& gradient, QCPRange range);
    const std::vector<Prompt>& prompts() const { return prompts_; }
    QCPRange range() const { return range_; }
    const QCPColorGradient& gradient() const { return gradient_; }
    /// The fill colour of a value (what a token with that value is painted with).
    QColor colourOf(double value) const;
    /// Where token `position` of prompt `row` is drawn (widget coordinates; empty when absent).
    QRect tokenRect(int row, int position) const;
    /// A point of the token's box that shows its fill colour (inside the border, beside the text).
    QPoint fillPoint(int row, int position) const;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

signals:
    void tokenHovered(int row, int position);
    void tokenClicked(int row, int position);
    void left();

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    /// Lays the tokens out for `width`; returns the height used. Fills rects_ and titles_ when `store`.
    int layout(int width, bool store);
    QString display(const QString& label) const;
    bool tokenAt(QPoint pos, int* row, int* position) const;

    std::vector<Prompt> prompts_;
    std::vector<std::vector<QRect>> rects_;
    std::vector<QRect> titles_;
    mutable QCPColorGradient gradient_;  // QCPColorGradient::color() builds its lookup table on first use
    QCPRange range_{0, 1};
    int hoverRow_ = -1, hoverPos_ = -1;
};

/// The colour scale of a TokenText: the gradient from its minimum to its maximum, both printed, and the value's name.
class ColourLegend : public QWidget {
    Q_OBJECT
public:
    explicit ColourLegend(QWidget* parent = nullptr);
    void setScale(const QCPColorGradient& gradient, QCPRange range, const QString& name);
    QString text() const { return QString("%1: %2 … %3").arg(name_).arg(range_.lower, 0, 'g', 4).arg(range_.upper, 0, 'g', 4); }
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QCPColorGradient gradient_;
    QCPRange range_{0, 1};
    QString name_;
};

class TextView : public TraceView {
    Q_OBJECT
public:
    enum class Mode { AttentionFrom, AttentionTo, Neuron, Norm, Feature };

    explicit TextView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    void setBlock(int block) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;

    void setMode(Mode mode);
    Mode mode() const;
    /// Head `head`, or the mean over the block's heads when head < 0.
    void setHead(int head);
    int head() const;
    int block() const;
    void setNeuron(int neuron);
    int neuron() const;
    /// Takes the Neuron view's neuron when it changed since the last call (the Text view keeps its own pick otherwise).
    void followNeuron(int neuron);
    /// The values a pinned card holds (offered for the norm per position, beside the block's layer_output).
    void setPinnedKeys(const std::vector<ValueKey>& keys);
    /// The value whose norm is shown (Norm mode).
    std::optional<ValueKey> normKey() const;
    void setNormKey(const ValueKey& key);
    /// The attached dictionaries' runs on the trace shown (Feature mode reads them; nullptr: none).
    void setFeatureRuns(FeatureRunsPtr runs);
    /// The feature whose activation colours the tokens in Feature mode: `feature` of dictionary `dictionary` (attach order).
    void setFeature(int dictionary, int64_t feature);
    int64_t feature() const;
    int featureDictionary() const { return featureDictionary_; }
    /// Selects token `position` of prompt `row` (the attention modes colour from / to it).
    void selectToken(int row, int position);
    int selectedToken(int row) const;
    /// Keeps the selection while the mouse moves (a click toggles it).
    bool locked() const { return locked_; }

    TokenText* tokenText() const { return text_; }
    ColourLegend* legend() const { return legend_; }
    QComboBox* modeCombo() const { return modeCombo_; }
    /// The line under the legend: the hovered token's prompt, position, text and value.
    QString statusText() const;

private:
    void refresh();
    void updateControls();
    void fillNormCombo();
    void onHover(int row, int position);
    std::vector<double> valuesOf(int row, int selected) const;
    QString valueName() const;

    QComboBox* modeCombo_;
    QSpinBox* blockSpin_;
    QComboBox* headCombo_;
    QSpinBox* neuronSpin_;
    QComboBox* normCombo_;
    QSpinBox* featureSpin_;
    QLabel* featureLabel_;
    FeatureRunsPtr featureRuns_;
    int featureDictionary_ = 0;
    QLabel* headLabel_;
    QLabel* neuronLabel_;
    QLabel* normLabel_;
    ColourLegend* legend_;
    QLabel* status_;
    TokenText* text_;
    std::vector<int> selected_;
    std::vector<ValueKey> pinned_;
    bool locked_ = false;
    bool neuronPicked_ = false;
    int followed_ = -1;
};

}  // namespace nnscope
