// SPDX-License-Identifier: MIT
#include "widgets/plots/matrixmodel.h"

#include <torch/types.h>

namespace nnscope {

void MatrixModel::setMatrix(Matrix matrix) {
    beginResetModel();
    matrix_ = std::move(matrix);
    if (matrix_.values.defined()) {
        TORCH_CHECK(matrix_.values.dim() == 2, "MatrixModel: expected a matrix, got shape ", matrix_.values.sizes());
        matrix_.values = matrix_.values.to(torch::kFloat32).contiguous();
        rows_ = static_cast<int>(matrix_.values.size(0));
        columns_ = static_cast<int>(matrix_.values.size(1));
        data_ = matrix_.values.data_ptr<float>();
    } else {
        rows_ = columns_ = 0;
        data_ = nullptr;
    }
    endResetModel();
}

QVariant MatrixModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_ || index.column() >= columns_) return {};
    const int r = index.row(), c = index.column();
    switch (role) {
        case Qt::DisplayRole:
        case ValueRole: return value(r, c);
        case CellTextRole: return matrix_.cellText ? matrix_.cellText(r, c) : QVariant();
        case Qt::ToolTipRole: {
            if (matrix_.toolTip) return matrix_.toolTip(r, c);
            const QString row = r < matrix_.rowLabels.size() ? matrix_.rowLabels[r] : QString::number(r);
            const QString col = c < matrix_.columnLabels.size() ? matrix_.columnLabels[c] : QString::number(c);
            return tr("%1 %2 “%3”\n%4 %5 “%6”\n%7 = %8")
                .arg(matrix_.rowTitle).arg(r).arg(row).arg(matrix_.columnTitle).arg(c).arg(col)
                .arg(matrix_.valueName).arg(value(r, c), 0, 'g', 6);
        }
        default: return {};
    }
}

QVariant MatrixModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    const QStringList& labels = orientation == Qt::Horizontal ? matrix_.columnLabels : matrix_.rowLabels;
    return section >= 0 && section < labels.size() ? labels[section] : QString::number(section);
}

}  // namespace nnscope
