// SPDX-License-Identifier: MIT
#pragma once
// A table model over one immutable float32 matrix cut from a trace snapshot: the attention pattern of a head, a
// block's neurons, the logit lens. Heatmaps read it (Qt::DisplayRole = the number, CellTextRole = text drawn in
// the cell, Qt::ToolTipRole = what hovering shows); a new selection swaps the matrix between
// beginResetModel() and endResetModel(), as the pixelator example does with its image.
#include <torch/types.h>

#include <QAbstractTableModel>
#include <QStringList>

#include <functional>

namespace nnscope {

struct Matrix {
    torch::Tensor values;  ///< float32 [rows, columns], contiguous (undefined: empty)
    QStringList rowLabels, columnLabels;
    /// The labels carry their own numbers (a chosen subset of positions: "309 ␣moment"): the axis does not prefix its
    /// column index when it thins them.
    bool labelsNumbered = false;
    QString rowTitle, columnTitle, valueName;
    std::function<QString(int row, int column)> cellText;  ///< optional text drawn in a cell
    std::function<QString(int row, int column)> toolTip;   ///< optional; default: the labels and the value
};

class MatrixModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Role { CellTextRole = Qt::UserRole + 1, ValueRole };
    explicit MatrixModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

    void setMatrix(Matrix matrix);
    const Matrix& matrix() const { return matrix_; }
    /// The value at (row, column) as the model holds it.
    double value(int row, int column) const { return data_[static_cast<size_t>(row) * columns_ + column]; }

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : rows_; }
    int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : columns_; }
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    Matrix matrix_;
    const float* data_ = nullptr;
    int rows_ = 0, columns_ = 0;
};

}  // namespace nnscope
