// SPDX-License-Identifier: MIT
#pragma once
#include <stdexcept>
#include <string>

namespace nnscope {

/// The one exception type the engine throws for bad input or misuse.
/// Its message is a full sentence for the user: what failed, where (the file, the tensor, the value
/// path, the config key), why, and what to do. Callers (CLI, window) show what() as is.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace nnscope
