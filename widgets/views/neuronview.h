// SPDX-License-Identifier: MIT
#pragma once
// The neuron view: a block's mlp_neurons (what down_proj reads) as a token × neuron heatmap, the top-k neurons of
// the selected token, and the selected neuron across the prompt. Click a cell to select its token and neuron.
#include "widgets/plots/heatmapplot.h"
#include "widgets/views/traceview.h"

class QCheckBox;
class QComboBox;
class QSpinBox;

namespace nnscope {

class NeuronView : public TraceView {
    Q_OBJECT
public:
    explicit NeuronView(QWidget* parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    void setBlock(int block) override;
    PlotSource plotSource() const override;
    QMap<QString, QString> settings() const override;
    /// Zero- and mean-ablating the selected neuron of the block, skipping the block.
    QVector<InterventionOffer> interventionOffers() const override;
    /// The log scale and the ranking by |activation|, remembered by the window.
    QVariantMap choices() const override;
    void restoreChoices(const QVariantMap& choices) override;
    /// The symmetric log scale's linear part: within ±kSymLogThreshold × the largest |activation|.
    static constexpr double kSymLogThreshold = 1e-3;
    void setLogScale(bool on);

    /// Shows value `v` (any value whose layout is "Neurons": mlp_neurons, mlp_activation, the gate's, up_proj's and the
    /// activation's native values) instead of mlp_neurons; false when `v` is not a Neurons value this model has.
    bool setValue(Value v);
    Value value() const { return value_; }
    /// The Neurons-layout values of `model`, standard ones first: what the view can show.
    static std::vector<Value> neuronValues(const Model& model);
    /// The same trace with values read since (a pinned value): the view keeps its block, token and neuron and shows
    /// its value if it just arrived.
    void valuesAdded(SnapshotPtr snapshot);
    void setTopK(int k);
    void setToken(int position);
    void setNeuron(int neuron);
    int block() const;
    int token() const { return token_; }
    int neuron() const;
    HeatmapPlot* heatmap() const { return heatmap_; }
    QCustomPlot* topPlot() const { return topPlot_; }
    QCPBars* topBars() const { return topBars_; }
    QCustomPlot* neuronPlot() const { return neuronPlot_; }
    QCPBars* neuronBars() const { return neuronBars_; }
    /// The neuron ids of the top-k bars, left to right.
    const QVector<qint64>& topNeuronIds() const { return topIds_; }

private:
    void refresh();
    void refreshDetails();

    void fillValueCombo();
    Value value_ = Value::MlpNeurons;
    QComboBox* valueCombo_;
    QSpinBox* blockSpin_;
    QSpinBox* topKSpin_;
    QCheckBox* magnitudeCheck_;
    QCheckBox* logCheck_;
    QSpinBox* neuronSpin_;
    HeatmapPlot* heatmap_;
    MatrixModel* model_;
    QCustomPlot* topPlot_;
    QCPBars* topBars_;
    QCustomPlot* neuronPlot_;
    QCPBars* neuronBars_;
    QVector<qint64> topIds_;
    int token_ = -1;
    bool neuronPicked_ = false;  ///< the user chose a neuron: keep it across blocks and prompts
};

}  // namespace nnscope
