// SPDX-License-Identifier: MIT
// The one list of model fixtures: tests/fixtures/models/manifest.json, written by tests/fixtures/make_fixtures.py.
// Every test that walks the fixtures reads it here (no fixture names copied into test files).
#pragma once
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <stdexcept>
#include <string>
#include <vector>

namespace nnscope::test {

struct FixtureEntry {
    std::string name;        ///< folder under tests/fixtures/models ("tiny-gemma2")
    std::string modelType;   ///< config.json model_type ("gemma2")
    bool bf16 = false;       ///< golden_bfloat16.safetensors exists
    bool greedy = false;     ///< golden_float32 holds greedy.ids (transformers' greedy continuation)
    std::vector<std::string> edits;
};

/// The manifest's entries, in its order. Throws std::runtime_error when the file is missing or malformed.
inline const std::vector<FixtureEntry>& fixtureManifest(const std::string& modelsDir) {
    static std::vector<FixtureEntry> entries;
    if (!entries.empty()) return entries;
    QFile f(QString::fromStdString(modelsDir + "/manifest.json"));
    if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error(modelsDir + "/manifest.json: cannot be read");
    const QJsonArray all = QJsonDocument::fromJson(f.readAll()).array();
    for (const auto& v : all) {
        const QJsonObject o = v.toObject();
        FixtureEntry e;
        e.name = o["name"].toString().toStdString();
        e.modelType = o["model_type"].toString().toStdString();
        e.bf16 = o["bf16"].toBool();
        e.greedy = o["greedy"].toBool();
        for (const auto& x : o["edits"].toArray()) e.edits.push_back(x.toString().toStdString());
        entries.push_back(e);
    }
    if (entries.empty()) throw std::runtime_error(modelsDir + "/manifest.json: no fixtures listed");
    return entries;
}

/// The fixture names alone.
inline std::vector<std::string> fixtureNames(const std::string& modelsDir) {
    std::vector<std::string> out;
    for (const auto& e : fixtureManifest(modelsDir)) out.push_back(e.name);
    return out;
}

}  // namespace nnscope::test
