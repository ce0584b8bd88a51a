// SPDX-License-Identifier: MIT
#include "core/io/export.h"

#include "core/io/filehash.h"
#include "core/model/error.h"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace nnscope {

static bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::map<std::string, std::string> exportMetadata(const Model& model, const TraceResult& result,
                                                  const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> md;
    // a folder given relative to where the command ran is recorded whole, so that a trace file finds it from anywhere
    std::error_code ec;
    md["model"] = std::filesystem::is_directory(model.dir(), ec) ? std::filesystem::absolute(model.dir(), ec).string() : model.dir();
    md["family"] = model.family().modelType;
    md["architecture"] = model.config().architectures.front();
    md["dtype"] = dtypeName(model.dtype());
    md["prompts"] = nlohmann::json(result.batch.prompts).dump();
    md["input_ids"] = nlohmann::json(result.batch.ids).dump();
    // what opening the file needs without the checkpoint (core/io/tracefile.h): config.json and each token's label
    md["config"] = model.config().raw.dump();
    if (const Tokenizer* tok = model.tokenizer()) {
        nlohmann::json labels = nlohmann::json::array();
        for (const auto& row : result.batch.ids) {
            nlohmann::json r = nlohmann::json::array();
            for (int64_t id : row) r.push_back(tok->tokenLabel(id));
            labels.push_back(std::move(r));
        }
        md["tokens"] = labels.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    md["nnscope_version"] = version();
    for (const auto& [key, t] : result.values) {
        const std::string p = valuePath(model.family(), key);
        const ValueInfo& info = valueInfo(key.value);
        md["layout:" + p] = info.layout;
        std::string axes;
        for (const char* a : info.axes) axes += (axes.empty() ? "" : " ") + std::string(a);
        md["axes:" + p] = axes;
    }
    if (!result.dictionaryValues.empty()) {
        nlohmann::json list = nlohmann::json::array();
        std::vector<const DictionarySource*> seen;
        for (const DictionaryValue& v : result.dictionaryValues) {
            md["layout:" + v.path] = v.layout();
            std::string axes;
            for (const std::string& a : v.axes()) axes += (axes.empty() ? "" : " ") + a;
            md["axes:" + v.path] = axes;
            md["dictionary:" + v.path] = v.source->name;
            const DictionarySource& s = *v.source;
            if (std::find(seen.begin(), seen.end(), &s) != seen.end()) continue;
            seen.push_back(&s);
            nlohmann::json weights = nlohmann::json::array();
            for (const auto& [file, digest] : s.weights) weights.push_back({{"file", file}, {"sha256", digest.empty() ? fileSha256(file) : digest}});
            list.push_back({{"name", s.name}, {"folder", s.folder}, {"format", s.format}, {"architecture", s.architecture},
                            {"transcoder", s.transcoder}, {"site", s.site}, {"site_out", s.siteOut}, {"d_in", s.dIn}, {"d_sae", s.dSae},
                            {"d_out", s.dOut}, {"weights", weights}});
        }
        md["dictionaries"] = list.dump();
    }
    for (const auto& [k, v] : extra) md[k] = v;
    return md;
}

std::map<std::string, std::shared_ptr<const DictionarySource>> readDictionarySources(const std::map<std::string, std::string>& md,
                                                                                     const std::string& file) {
    std::map<std::string, std::shared_ptr<const DictionarySource>> out;
    const auto it = md.find("dictionaries");
    if (it == md.end()) return out;
    try {
        for (const nlohmann::json& j : nlohmann::json::parse(it->second)) {
            auto s = std::make_shared<DictionarySource>();
            s->name = j.at("name").get<std::string>();
            s->folder = j.at("folder").get<std::string>();
            s->format = j.at("format").get<std::string>();
            s->architecture = j.at("architecture").get<std::string>();
            s->transcoder = j.at("transcoder").get<bool>();
            s->site = j.at("site").get<std::string>();
            s->siteOut = j.at("site_out").get<std::string>();
            s->dIn = j.at("d_in").get<int64_t>(), s->dSae = j.at("d_sae").get<int64_t>(), s->dOut = j.at("d_out").get<int64_t>();
            for (const nlohmann::json& w : j.at("weights")) s->weights.emplace_back(w.at("file").get<std::string>(), w.at("sha256").get<std::string>());
            out[s->name] = s;
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error(file + ": the metadata entry \"dictionaries\" is not the list of dictionaries an nnscope export writes (" + e.what() + ").");
    }
    return out;
}

void exportValues(const std::string& path, const Model& model, const TraceResult& result,
                  const std::map<std::string, std::string>& extra) {
    const size_t count = result.values.size() + result.dictionaryValues.size();
    if (count == 0) throw Error(path + ": nothing to write: no value was saved (use --save).");
    if (endsWith(path, ".npy")) {
        if (count != 1)
            throw Error(path + ": a .npy file holds one value but " + std::to_string(count) + " were saved; write a .safetensors file instead.");
        writeNpy(path, result.values.empty() ? result.dictionaryValues.front().tensor : result.values.front().second);
        return;
    }
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& [key, t] : result.values) tensors.emplace_back(valuePath(model.family(), key), t);
    for (const DictionaryValue& v : result.dictionaryValues) tensors.emplace_back(v.path, v.tensor);
    writeSafetensors(path, tensors, exportMetadata(model, result, extra));
}

std::string csvText(const torch::Tensor& value, const std::vector<std::string>& axes,
                    const std::map<std::string, std::string>& metadata) {
    torch::Tensor t = value.detach().to(torch::kFloat64).contiguous();
    if (t.dim() == 0) t = t.reshape({1});
    const int64_t last = t.size(-1);
    auto rows = t.reshape({-1, last});
    std::ostringstream out;
    for (const auto& [k, v] : metadata) out << "# " << k << ": " << v << "\n";
    for (int64_t d = 0; d + 1 < t.dim(); ++d) out << (d < static_cast<int64_t>(axes.size()) ? axes[d] : "axis" + std::to_string(d)) << ",";
    const std::string lastAxis = t.dim() - 1 < static_cast<int64_t>(axes.size()) ? axes[t.dim() - 1] : "value";
    for (int64_t j = 0; j < last; ++j) out << lastAxis << "=" << j << (j + 1 < last ? "," : "\n");
    const double* data = rows.data_ptr<double>();
    std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(t.dim() - 1, 0)), 0);
    out << std::setprecision(9);
    for (int64_t r = 0; r < rows.size(0); ++r) {
        for (size_t d = 0; d < idx.size(); ++d) out << idx[d] << ",";
        for (int64_t j = 0; j < last; ++j) out << data[r * last + j] << (j + 1 < last ? "," : "\n");
        for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {  // advance the row index
            if (++idx[static_cast<size_t>(d)] < t.size(d)) break;
            idx[static_cast<size_t>(d)] = 0;
        }
    }
    return out.str();
}

void writeCsv(const std::string& path, const torch::Tensor& value, const std::vector<std::string>& axes,
              const std::map<std::string, std::string>& metadata) {
    writeFileAtomically(path, csvText(value, axes, metadata));
}

}  // namespace nnscope
