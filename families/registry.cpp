// SPDX-License-Identifier: MIT
// The family registry, keyed by config.json's "model_type" (then "architectures").
#include "families/families.h"

namespace nnscope {

const std::vector<Family>& families() {
    static const std::vector<Family> all = {llamaFamily(), arceeFamily(), apertusFamily(), ernie4_5Family(), persimmonFamily()};
    return all;
}

}  // namespace nnscope
