// SPDX-License-Identifier: MIT
// The family registry, keyed by config.json's "model_type" (then "architectures").
#include "families/families.h"

// `Family <name>Family();` for every family defined in families/*.cpp and NNSCOPE_FAMILIES, the list of their calls
// (Llama first), written by core/CMakeLists.txt: a family file is registered by being there.
namespace nnscope {

#include "families_registry.inc"

const std::vector<Family>& families() {
    static const std::vector<Family> all = {NNSCOPE_FAMILIES};
    return all;
}

}  // namespace nnscope
