// SPDX-License-Identifier: MIT
#pragma once
// The printout (what print(model) shows under nnterp, core/pages/support.h's printout()), one line per row, each line
// tied to the value or native module it names so that selecting it can highlight the diagram.
#include "core/model/model.h"

#include <QAbstractListModel>

#include <optional>

namespace nnscope {

class PrintoutModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Role { ValueRole = Qt::UserRole + 1, ModuleRole };
    explicit PrintoutModel(QObject* parent = nullptr) : QAbstractListModel(parent) {}

    void setModel(const Model* model);
    std::optional<Value> valueAt(int row) const;
    std::optional<Module> moduleAt(int row) const;
    /// The first line that names value `v` / module `m`, or -1.
    int rowOf(Value v) const;
    int rowOf(Module m) const;
    const QStringList& lines() const { return lines_; }

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : lines_.size(); }
    QVariant data(const QModelIndex& index, int role) const override;

private:
    QStringList lines_;
    std::vector<std::optional<Value>> values_;
    std::vector<std::optional<Module>> modules_;
};

}  // namespace nnscope
