// SPDX-License-Identifier: MIT
#include "widgets/panels/valueexport.h"

#include "core/model/error.h"
#include "core/io/export.h"
#include "core/io/safetensors.h"

#include <QFileInfo>

#include <nlohmann/json.hpp>
#include <torch/types.h>

namespace nnscope {

QString valueFileFilter() {
    return QObject::tr("NumPy array (*.npy);;safetensors (*.safetensors);;CSV table (*.csv)");
}

QString exportValue(const TraceSnapshot& snapshot, const ValueKey& key, const QString& path, const QMap<QString, QString>& settings) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    const torch::Tensor t = snapshot.result.value(key);
    if (!t.defined())
        return QObject::tr("Cannot export %1: the last trace did not save it; run the trace again.").arg(snapshot.path(key));
    try {
        const std::string file = path.toStdString();
        TraceResult one;  // the value alone, so the engine's metadata describes it
        one.batch = snapshot.result.batch;
        one.values = {{key, t}};
        std::map<std::string, std::string> extra;
        for (auto it = settings.begin(); it != settings.end(); ++it) extra[it.key().toStdString()] = it.value().toStdString();
        const auto metadata = exportMetadata(*snapshot.model, one, extra);
        if (suffix == "safetensors") {
            exportValues(file, *snapshot.model, one, extra);
        } else if (suffix == "npy") {
            // NumPy has no bfloat16: a bf16 value is written as float32.
            writeNpy(file, t.scalar_type() == torch::kBFloat16 ? t.to(torch::kFloat32) : t);
            writeFileAtomically(file + ".json", nlohmann::json(metadata).dump(2) + "\n");
        } else if (suffix == "csv") {
            std::vector<std::string> axes;
            for (const char* a : valueInfo(key.value).axes) axes.emplace_back(a);
            writeCsv(file, t, axes, metadata);
        } else {
            return QObject::tr("Cannot export to %1: the file name must end in .npy, .safetensors or .csv.").arg(path);
        }
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QObject::tr("Cannot write %1: %2").arg(path, QString::fromStdString(e.what()));
    }
    return {};
}

}  // namespace nnscope
