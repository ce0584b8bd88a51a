// SPDX-License-Identifier: MIT
#pragma once
// The Circuit view: an attribution graph (core/analysis/circuitgraph.h) laid out as Neuronpedia's attribution-graph
// frontend lays it out: one column per prompt position, one row per layer (the input tokens at the bottom, the target
// logits at the top), each node a mark sized by its influence (circles for features, squares for errors, tokens and
// logits); edges blue where positive and red where negative, their width and opacity following |weight|. The node and
// edge threshold sliders prune the whole graph again at once (core/analysis/circuitprune.h, circuit-tracer's
// prune_graph); at 1.00 / 1.00 the graph is shown as it was given (a file from circuit-tracer or Neuronpedia is already
// pruned). Click a node for its card; Ctrl+click pins it (the subgraph); "Group" makes a named supernode of the pinned
// nodes; the label field edits the node's clerp. Wheel zooms about the cursor, dragging pans, double-click fits.
// Level of detail: only edges crossing the visible area are drawn, strongest first, at most a budget that grows as
// the view zooms in (a million-edge graph draws its strongest 5000 when it is whole on screen).
#include "core/analysis/circuitgraph.h"
#include "core/analysis/circuitprune.h"

#include <QMetaType>
#include <QWidget>

#include <functional>
#include <memory>
#include <optional>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QTextBrowser;

namespace nnscope {

class CircuitCanvas;

class CircuitView : public QWidget {
    Q_OBJECT
public:
    explicit CircuitView(QWidget* parent = nullptr);
    ~CircuitView() override;

    /// Shows `graph`, the whole graph the sliders prune. A graph with a model folder (computed by nnscope) starts at
    /// its thresholds (0.8 / 0.98 by default); one read from a file starts at 1.00 / 1.00 (as the file has it).
    void setGraph(AttributionGraph graph);
    bool hasGraph() const { return hasGraph_; }
    /// Reads a graph JSON (core/io/graphjson.h) and shows it; the file's name is remembered for saving. Returns "" or
    /// the error (naming the file).
    QString openGraph(const QString& path);
    /// Writes the graph shown (the pruned one at the sliders' thresholds) with its labels, pins and supernodes.
    /// Returns "" or the error.
    QString saveGraph(const QString& path) const;
    /// The whole graph, holding the researcher's labels, pins and supernodes.
    const AttributionGraph& graph() const { return full_; }
    /// The graph drawn: the whole graph pruned at the thresholds, with the state carried over (prunedSubgraph).
    const AttributionGraph& shown() const { return shown_; }
    QString fileName() const { return file_; }

    void setThresholds(double node, double edge);
    double nodeThreshold() const;
    double edgeThreshold() const;
    void setHideErrors(bool hide);
    /// The nodes and edges drawable now (the shown graph less hidden error nodes and their edges).
    int visibleNodeCount() const;
    int visibleEdgeCount() const;

    /// Selects the node with id `id` (its card), or none for "".
    void selectNode(const std::string& id);
    std::string selectedNode() const;
    /// Pins or unpins the node (Ctrl+click).
    void togglePin(const std::string& id);
    /// Makes a supernode named `name` of the pinned nodes (they stay pinned). False when none is pinned.
    bool groupPinned(const QString& name);
    /// Sets the label (clerp) of the node.
    void setLabel(const std::string& id, const QString& label);

    /// The compute row: the transcoders folder a graph of the current trace's prompt is computed with (the window runs it
    /// in its worker: computeRequested), whether computing is possible now (`reason`: why not, shown beside the
    /// disabled button), and the estimate or outcome line.
    void setTranscodersDir(const QString& dir);
    QString transcodersDir() const;
    void setComputeEnabled(bool enabled, const QString& reason);
    void setComputeMessage(const QString& text);
    QPushButton* computeButton() const { return compute_; }
    QPushButton* steerButton() const { return steer_; }
    /// The pinned nodes of the whole graph that are features.
    std::vector<GraphNode> pinnedFeatures() const;
    QLabel* computeMessage() const { return computeMessage_; }

    /// What a feature's card adds from the model and the transcoders the graph was computed with (its top logit effects,
    /// as HTML), or none for a graph opened from a file. Called on the window's thread when a feature is selected.
    void setFeatureDetails(std::function<QString(const GraphNode&)> details);

    QSlider* nodeSlider() const { return nodeSlider_; }
    QSlider* edgeSlider() const { return edgeSlider_; }
    QCheckBox* hideErrorsBox() const { return hideErrors_; }
    QLabel* statusLabel() const { return status_; }
    QTextBrowser* card() const { return card_; }
    QLineEdit* labelEdit() const { return label_; }
    QWidget* canvas() const;
    /// The node under canvas point `point` (widget coordinates), or -1 (an index into shown()).
    int nodeAt(const QPoint& point) const;
    /// Where node `index` of shown() is drawn, in canvas widget coordinates.
    QPointF nodePoint(int index) const;

signals:
    /// The graph, its thresholds or its researcher state changed.
    void graphChanged();
    /// Compute was pressed: a graph of the trace's prompt through the transcoders in `dir`.
    void computeRequested(const QString& dir);
    /// Steer pinned… was pressed: scale the pinned feature nodes' features by `value` (0 ablates them), or with `clamp`
    /// set them to `value`, at each node's own prompt position (`atOwnPosition`, circuit-tracer's interventions) or
    /// wherever they fire, to check the graph's story on the model.
    void steerRequested(const std::vector<nnscope::GraphNode>& features, double value, bool clamp, bool atOwnPosition);

private:
    void reprune();
    void updateCard();
    void updateStatus();
    void groupDialog();
    int shownIndex(const std::string& id) const;

    AttributionGraph full_, shown_;
    bool hasGraph_ = false;
    std::optional<GraphScores> scores_;  ///< of the full graph; none for a pruned graph read from a file
    bool prunedFile_ = false;            ///< the graph was read from a file that holds a pruned graph
    QString file_;
    std::string selected_;
    QSlider* nodeSlider_;
    QSlider* edgeSlider_;
    QLabel* nodeValue_;
    QLabel* edgeValue_;
    QCheckBox* hideErrors_;
    QLabel* status_;
    QTextBrowser* card_;
    QLineEdit* label_;
    QPushButton* pin_;
    QPushButton* group_;
    QLabel* groups_;
    CircuitCanvas* canvas_;
    std::function<QString(const GraphNode&)> featureDetails_;
    QLineEdit* transcoders_;
    QPushButton* chooseTranscoders_;
    QPushButton* compute_;
    QPushButton* steer_;
    QLabel* computeMessage_;
};

}  // namespace nnscope
