// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a config.json. parseJson (depth limit, duplicate keys) and cfg::readCommon (the keys
// every family reads, their types and limits) either give a configuration whose sizes are within nnscope's limits or
// throw nnscope::Error; nothing else.
#include "core/model/config.h"
#include "core/model/error.h"
#include "core/io/jsonfile.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const nlohmann::json j = nnscope::parseJson(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
        if (!j.is_object()) return 0;
        nnscope::ModelConfig c;
        nnscope::cfg::readCommon(j, "config.json", "rms_norm_eps", c);
        if (c.headDim <= 0 || c.headDim > (1 << 16) || c.hiddenSize <= 0 || c.numHeads <= 0) std::abort();
        (void)c.rotaryDim();
    } catch (const nnscope::Error&) {
    }
    return 0;
}
