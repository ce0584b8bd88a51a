// SPDX-License-Identifier: MIT
// One function per family file; registry.cpp lists them.
#pragma once
#include "core/family.h"

namespace nnscope {
Family arceeFamily();
Family apertusFamily();
Family ernie4_5Family();
Family persimmonFamily();
Family qwen2Family();
Family qwen3Family();
Family mistralFamily();
Family gemma2Family();
Family gemma3Family();
Family olmo2Family();
Family gptNeoxFamily();
Family gpt2Family();
Family phi3Family();

/// Reads a Llama-like config whose sliding_window, when set, applies to every layer (Mistral, Phi-3: transformers picks
/// the sliding mask for the whole model from config.sliding_window). Throws nnscope::Error naming the key.
void readLlamaLikeSlidingConfig(const nlohmann::json& j, const std::string& file, const Family& fam, ModelConfig& c);
}  // namespace nnscope
