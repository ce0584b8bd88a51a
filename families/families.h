// SPDX-License-Identifier: MIT
// What family files share. Each file defines `Family <name>Family()`; the build registers every such function it finds
// in families/*.cpp (core/CMakeLists.txt writes the list registry.cpp includes).
#pragma once
#include "core/model/family.h"

namespace nnscope {

/// Reads a Llama-like config whose sliding_window, when set, applies to every layer (Mistral, Phi-3: transformers picks
/// the sliding mask for the whole model from config.sliding_window). Throws nnscope::Error naming the key.
void readLlamaLikeSlidingConfig(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c);
}  // namespace nnscope
