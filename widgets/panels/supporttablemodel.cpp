// SPDX-License-Identifier: MIT
#include "widgets/panels/supporttablemodel.h"

#include <QFont>
#include <QGuiApplication>
#include <QPalette>

namespace nnscope {

void SupportTableModel::setFamily(const Family* family) {
    beginResetModel();
    rows_.clear();
    if (family) {
        const auto table = supportTable(*family);
        for (Host h : {Host::Model, Host::Layer, Host::Attention, Host::Mlp}) {
            Row header;
            header.host = true;
            header.hostPath = QString::fromUtf8(hostPath(h));
            header.hostClass = QString::fromStdString(hostClass(*family, h));
            rows_.push_back(header);
            for (const auto& r : table)
                if (r.host == h) {
                    Row row;
                    row.value = r;
                    rows_.push_back(row);
                }
        }
    }
    endResetModel();
}

int SupportTableModel::rowOf(Value v) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (!rows_[i].host && rows_[i].value.value == v) return static_cast<int>(i);
    return -1;
}

std::optional<Value> SupportTableModel::valueAt(int row) const {
    if (row < 0 || row >= rowCount() || rows_[static_cast<size_t>(row)].host) return std::nullopt;
    return rows_[static_cast<size_t>(row)].value.value;
}

bool SupportTableModel::isHostRow(int row) const { return row >= 0 && row < rowCount() && rows_[static_cast<size_t>(row)].host; }

QVariant SupportTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const Row& row = rows_[static_cast<size_t>(index.row())];
    if (row.host) {
        switch (role) {
            case Qt::DisplayRole:
                if (index.column() == NameColumn) return QString("%1 %2").arg(row.hostPath, row.hostClass);
                return {};
            case Qt::FontRole: {
                QFont f;
                f.setBold(true);
                return f;
            }
            case Qt::BackgroundRole: return QGuiApplication::palette().alternateBase();
            case HostRowRole: return true;
            default: return {};
        }
    }
    const SupportRow& r = row.value;
    switch (role) {
        case Qt::DisplayRole:
            switch (index.column()) {
                case NameColumn: return QString::fromStdString((r.eagerOnly ? "⚠︎" : "") + r.name);
                case LayoutColumn: return QString::fromStdString(r.layout);
                case WhatColumn: return QString::fromStdString(r.description);
                case ReadAtColumn: return QString::fromStdString(r.readAt);
            }
            return {};
        case Qt::ToolTipRole: {
            // the whole row on any cell: in the narrow dock the description and where it is read sit off to the right
            QString tip = QString::fromStdString(r.name + "  " + r.layout + "\n" + r.description) + "\n" + tr("read at: %1").arg(QString::fromStdString(r.readAt));
            if (r.eagerOnly) tip += "\n" + tr("transformers has this value only under attn_implementation=\"eager\"; nnscope always computes it.");
            if (r.readOnly) tip += "\n" + tr("Derived and read-only.");
            return tip;
        }
        case Qt::FontRole:
            if (index.column() == NameColumn || index.column() == LayoutColumn) {
                QFont f("monospace");
                f.setStyleHint(QFont::TypeWriter);
                return f;
            }
            return {};
        case ValueRole: return static_cast<int>(r.value);
        case HostRowRole: return false;
        default: return {};
    }
}

QVariant SupportTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case NameColumn: return tr("value");
        case LayoutColumn: return tr("layout");
        case WhatColumn: return tr("what it is");
        case ReadAtColumn: return tr("read at");
    }
    return {};
}

}  // namespace nnscope
