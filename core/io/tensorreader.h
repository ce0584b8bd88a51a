// SPDX-License-Identifier: MIT
#pragma once
// The dictionary readers' access to one safetensors file (core/io/dictionary.cpp, core/io/transcoderset.cpp): each
// tensor checked against the shape the dictionary's config implies, and read as float32 (a view of the mapped file
// where the file stores float32).
#include "core/io/safetensors.h"
#include "core/model/error.h"

#include <torch/types.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace nnscope::detail {

/// "[64, 48]".
inline std::string shapeText(const std::vector<int64_t>& shape) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    return s.str() + "]";
}

/// The tensors of one safetensors file, each checked against the shape the config implies, as float32 (a view of the
/// mapped file where it stores float32).
class TensorReader {
public:
    /// Maps `path`. Throws nnscope::Error naming the file (missing, not a safetensors file).
    explicit TensorReader(const std::string& path) : file_(std::make_shared<SafetensorsFile>(path)) {}
    std::shared_ptr<const SafetensorsFile> file() const { return file_; }
    bool has(const std::string& name) const { return file_->contains(name); }
    /// The tensor `name` of shape `shape` (a [n] vector may be stored [1, n], as some formats do). Throws
    /// nnscope::Error naming the file, the tensor and both shapes.
    torch::Tensor get(const std::string& name, const std::vector<int64_t>& shape) const {
        if (!file_->contains(name)) {
            std::string have;
            for (const auto& [n, e] : file_->entries()) have += (have.empty() ? "" : ", ") + n;
            throw Error(file_->path() + ": no tensor '" + name + "' (the file holds " + (have.empty() ? "none" : have) + ").");
        }
        torch::Tensor t = file_->tensor(name);
        if (t.sizes().vec() != shape && !(shape.size() == 1 && t.numel() == shape[0] && t.dim() == 2))
            throw Error(file_->path() + ": tensor '" + name + "' has shape " + shapeText(t.sizes().vec()) + ", expected " +
                        shapeText(shape) + " from the dictionary's config.");
        if (t.dim() != static_cast<int64_t>(shape.size())) t = t.reshape(shape);
        return t.scalar_type() == torch::kFloat32 ? t : t.to(torch::kFloat32);
    }
    /// The shape of the tensor `name`, which must have `rank` axes, for a format whose sizes come from its weights.
    /// Throws nnscope::Error naming the file and the tensor when it is absent or of another rank.
    std::vector<int64_t> shapeOf(const std::string& name, size_t rank) const {
        if (!file_->contains(name)) get(name, {});  // the error that lists what the file holds
        const std::vector<int64_t>& shape = file_->entries().at(name).shape;
        if (shape.size() != rank)
            throw Error(file_->path() + ": tensor '" + name + "' has shape " + shapeText(shape) + ", expected " + std::to_string(rank) +
                        (rank == 1 ? " axis." : " axes."));
        return shape;
    }
    /// shapeOf(name, 2).
    std::vector<int64_t> matrixShape(const std::string& name) const { return shapeOf(name, 2); }
    torch::Tensor optional(const std::string& name, const std::vector<int64_t>& shape) const {
        return has(name) ? get(name, shape) : torch::Tensor();
    }

private:
    std::shared_ptr<SafetensorsFile> file_;
};

}  // namespace nnscope::detail
