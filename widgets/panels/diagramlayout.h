// SPDX-License-Identifier: MIT
#pragma once
// The block diagram as data: every part (module box, operation, stream value, residual add) with the value it shows,
// the module it stands for, and its place; the arrows between them. It is computed from the family's description
// (norm kind, q/k norms, rotary style, fused projection, MLP kind, module names) and the config, never from a
// picture per family. BlockDiagram paints it; the tests walk it.
#include "core/model/config.h"
#include "core/model/family.h"

#include <QPolygonF>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace nnscope {

struct DiagramPart {
    enum Kind { ModuleBox, Operation, Stream, Add };
    QString id;      ///< stable id ("embed_tokens", "q_proj", "rotary_q", "layer_mid", ...)
    QString title;   ///< the native module label ("o_proj/dense") or the operation ("softmax")
    QString detail;  ///< the feature it shows ("RMSNorm", "rotate_half", "silu"), may be empty
    Kind kind = ModuleBox;
    std::optional<Value> value;                ///< the value read here
    std::optional<Module> module;             ///< the native module drawn, if any
    bool perBlock = true;                      ///< lives in layers[i] (false: the model's root)
    QRectF rect;                               ///< in diagram units
};

struct DiagramLayout {
    std::vector<DiagramPart> parts;
    std::vector<QPolygonF> arrows;   ///< polylines, arrow head at the last point
    QPolygonF stream;                ///< the residual stream through the block
    QRectF blockFrame, attentionFrame, mlpFrame;
    QString blockTitle, attentionTitle, mlpTitle;  ///< class names of the hosts ("LlamaDecoderLayer", ...)
    QSizeF size;

    const DiagramPart* part(const QString& id) const;
    /// The part that shows value `v` (nullptr if none).
    const DiagramPart* partForValue(Value v) const;
    /// The part that draws native module `m` (nullptr if none).
    const DiagramPart* partForModule(Module m) const;
};

/// Lays out the diagram of `family` with `config` (q/k norms and biases come from the config).
DiagramLayout layoutDiagram(const Family& family, const ModelConfig& config);

}  // namespace nnscope
