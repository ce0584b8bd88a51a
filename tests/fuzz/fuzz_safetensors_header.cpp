// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a whole .safetensors file. parseSafetensorsHeader must either return entries that
// lie inside the data section and tile it, or throw nnscope::Error; nothing else (no crash, no other exception).
#include "core/model/error.h"
#include "core/io/safetensors.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const nnscope::SafetensorsHeader h = nnscope::parseSafetensorsHeader(data, size, "fuzz.safetensors");
        for (const auto& [name, e] : h.entries)
            if (e.begin > e.end || e.end > size) std::abort();  // a range outside the file passed the checks
    } catch (const nnscope::Error&) {
    }
    return 0;
}
