// SPDX-License-Identifier: MIT
// The family registry, keyed by config.json's "model_type" (then "architectures").
#include "families/families.h"

namespace nnscope {

const std::vector<Family>& families() {
    static const std::vector<Family> all = {llamaFamily(),  arceeFamily(),   apertusFamily(), ernie4_5Family(),
                                            persimmonFamily(), qwen2Family(), qwen3Family(),   mistralFamily(),
                                            gemma2Family(), gemma3Family(),  olmo2Family(),   gptNeoxFamily(),
                                            gpt2Family(),   phi3Family()};
    return all;
}

}  // namespace nnscope
