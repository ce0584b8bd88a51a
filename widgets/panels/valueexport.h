// SPDX-License-Identifier: MIT
#pragma once
// Writing one traced value to a file with the engine's atomic writers: .npy (plus a .npy.json beside it, since a
// .npy header has no room for metadata), .safetensors (the tensor named by its value path, its layout and axes in
// the metadata) or .csv (metadata as leading "# key: value" lines). Each records the model, the prompts and the
// view's settings.
#include "widgets/views/tracesnapshot.h"

#include <QMap>
#include <QString>

namespace nnscope {

/// The file formats a value can be written to, as a QFileDialog filter.
QString valueFileFilter();
/// Writes value `key` of `snapshot` (every prompt, as traced) to `path`. Returns an empty string on success, or
/// a sentence naming the file and the reason.
QString exportValue(const TraceSnapshot& snapshot, const ValueKey& key, const QString& path,
                    const QMap<QString, QString>& settings = {});

}  // namespace nnscope
