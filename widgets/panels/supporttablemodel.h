// SPDX-License-Identifier: MIT
#pragma once
// The support table of the loaded family, "values, by host" as the seeds print it: a header row per host (its path
// and class), then one row per value with its name, layout with axes, what it is and where it is read.
#include "core/pages/support.h"

#include <QAbstractTableModel>

#include <optional>

namespace nnscope {

class SupportTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, LayoutColumn, WhatColumn, ReadAtColumn, ColumnCount };
    enum Role { ValueRole = Qt::UserRole + 1, HostRowRole };
    explicit SupportTableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

    /// Shows the table of `family` (nullptr: empty).
    void setFamily(const Family* family);
    /// The row of value `v`, or -1.
    int rowOf(Value v) const;
    /// The value of a row (nothing for a host header row).
    std::optional<Value> valueAt(int row) const;
    bool isHostRow(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
    int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : ColumnCount; }
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    struct Row {
        bool host = false;
        QString hostPath, hostClass;
        SupportRow value;
    };
    std::vector<Row> rows_;
};

}  // namespace nnscope
