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

/// A cheap identity of a large file: the lowercase hex SHA-256 of its size and of `samples` evenly spaced chunks of
/// `chunkBytes` (the whole file when it is smaller than that). Two checkpoints that differ in most weights (a fine-tune)
/// differ here; reading a 16 GB file whole to hash it would take minutes. Throws nnscope::Error naming the file.
std::string fileFingerprint(const std::string& path, int samples = 16, int64_t chunkBytes = 65536);

/// "name:hex, name:hex" over `paths` (file names without their folders), in order: a dictionary's weights files.
std::string filesSha256(const std::vector<std::string>& paths);

}  // namespace nnscope
