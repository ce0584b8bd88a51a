// SPDX-License-Identifier: MIT
// The command-line helpers every benchmark program shares (not used by nnscope itself).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace nnscope::bench {

/// The program's name in its messages ("nnscope_bench"); each main sets it first.
inline std::string& programName() {
    static std::string name = "nnscope_bench";
    return name;
}

/// Refuses the command line: the message and a pointer to --help on stderr, exit status 2.
[[noreturn]] inline void usageError(const std::string& message) {
    std::cerr << programName() << ": " << message << " (see " << programName() << " --help)" << std::endl;
    std::exit(2);
}

/// `text` as an integer of at least `min`; anything else (not a number, trailing characters, too small) is refused
/// naming `option`.
inline int64_t parseCount(const std::string& option, const std::string& text, int64_t min) {
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size() || v < min) usageError(option + " takes an integer >= " + std::to_string(min) + ", not '" + text + "'");
    return v;
}

/// The comma-separated entries of `text`, empty ones left out.
inline std::vector<std::string> splitList(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string x; std::getline(ss, x, ',');)
        if (!x.empty()) out.push_back(x);
    return out;
}

/// Seconds on the steady clock.
inline double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace nnscope::bench
