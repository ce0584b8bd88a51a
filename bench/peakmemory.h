// SPDX-License-Identifier: MIT
#pragma once
// The peak resident memory of a stretch of code, from /proc/self/status (Linux): for nnscope_circuit_bench and
// test_circuit's check of estimateCircuit.
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

namespace nnscope::bench {

/// The memory this process holds now and at most since the last reset (VmRSS, VmHWM), in bytes; {0, 0} where
/// /proc/self/status is not there.
inline std::pair<int64_t, int64_t> residentMemory() {
    std::ifstream in("/proc/self/status");
    std::string line;
    int64_t rss = 0, hwm = 0;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) rss = std::stoll(line.substr(6)) * 1024;
        if (line.rfind("VmHWM:", 0) == 0) hwm = std::stoll(line.substr(6)) * 1024;
    }
    return {rss, hwm};
}

/// Made before the code to measure: resets VmHWM to the resident size (writing 5 to /proc/self/clear_refs, Linux >= 4.0)
/// and remembers that size; peakBytes() then gives the most the process held above it since.
class PeakMemory {
public:
    PeakMemory() {
        {
            std::ofstream reset("/proc/self/clear_refs");
            reset << "5";
        }
        start_ = residentMemory().first;
    }
    int64_t peakBytes() const { return residentMemory().second - start_; }

private:
    int64_t start_ = 0;
};

}  // namespace nnscope::bench
