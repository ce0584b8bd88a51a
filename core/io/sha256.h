// SPDX-License-Identifier: MIT
#pragma once
// SHA-256 (FIPS 180-4, computed by OpenSSL's libcrypto), for the provenance an export records: the digest of each weights file a sparse dictionary was
// read from, so that a saved feature value names the exact weights that made it. No Qt here.
#include <cstdint>
#include <string>

namespace nnscope {

/// The SHA-256 digest of `bytes`, as 64 lower-case hex digits (FIPS 180-4, section 6.2; the same as `sha256sum`).
std::string sha256Hex(const std::string& bytes);

/// The SHA-256 digest of the file at `path`, as 64 lower-case hex digits, read in 1 MiB pieces. A digest already computed
/// for the same path, size and modification time is reused (the window exports the same dictionary's weights again and
/// again). Throws nnscope::Error naming the file when it cannot be opened or read.
std::string fileSha256(const std::string& path);

}  // namespace nnscope
