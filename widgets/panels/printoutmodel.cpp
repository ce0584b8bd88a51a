// SPDX-License-Identifier: MIT
#include "widgets/panels/printoutmodel.h"

#include "core/pages/support.h"

#include <QFont>

namespace nnscope {

void PrintoutModel::setModel(const Model* model) {
    beginResetModel();
    lines_.clear();
    values_.clear();
    modules_.clear();
    if (model) {
        for (const PrintoutLine& line : printoutLines(model->family(), model->config())) {
            lines_.push_back(QString::fromStdString(line.text));
            values_.push_back(line.value);
            modules_.push_back(line.module);
        }
    }
    endResetModel();
}

std::optional<Value> PrintoutModel::valueAt(int row) const {
    return row >= 0 && row < rowCount() ? values_[static_cast<size_t>(row)] : std::nullopt;
}

std::optional<Module> PrintoutModel::moduleAt(int row) const {
    return row >= 0 && row < rowCount() ? modules_[static_cast<size_t>(row)] : std::nullopt;
}

int PrintoutModel::rowOf(Value v) const {
    for (size_t i = 0; i < values_.size(); ++i)
        if (values_[i] == v) return static_cast<int>(i);
    return -1;
}

int PrintoutModel::rowOf(Module m) const {
    for (size_t i = 0; i < modules_.size(); ++i)
        if (modules_[i] == m) return static_cast<int>(i);
    return -1;
}

QVariant PrintoutModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const size_t row = static_cast<size_t>(index.row());
    switch (role) {
        case Qt::DisplayRole: return lines_[index.row()];
        case Qt::FontRole: {
            QFont f("monospace");
            f.setStyleHint(QFont::TypeWriter);
            return f;
        }
        case ValueRole: return values_[row] ? QVariant(static_cast<int>(*values_[row])) : QVariant();
        case ModuleRole: return modules_[row] ? QVariant(static_cast<int>(*modules_[row])) : QVariant();
        default: return {};
    }
}

}  // namespace nnscope
