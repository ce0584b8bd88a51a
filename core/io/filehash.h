// SPDX-License-Identifier: MIT
#pragma once
// SHA-256 of files, for provenance (an export's dictionary, a dashboard's dataset and dictionary): Qt's
// QCryptographicHash (FIPS 180-4), read in chunks so a large file is never held in memory.
#include <cstdint>
#include <string>
#include <vector>

namespace nnscope {

/// The lowercase hex SHA-256 of the file at `path`. `lines`, when given, receives the number of lines the file holds
/// (newline characters, plus one when the last byte is not a newline), counted in the same read. Throws nnscope::Error
/// naming the file when it cannot be read.
std::string fileSha256(const std::string& path, int64_t* lines = nullptr);

/// "name:hex, name:hex" over `paths` (file names without their folders), in order: a dictionary's weights files.
std::string filesSha256(const std::vector<std::string>& paths);

}  // namespace nnscope
