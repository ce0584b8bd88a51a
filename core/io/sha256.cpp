// SPDX-License-Identifier: MIT
// SHA-256 by OpenSSL's libcrypto (EVP), the well-kept implementation every Debian machine has.
#include "core/io/sha256.h"

#include "core/model/error.h"

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace nnscope {
namespace {

/// A running SHA-256 digest (EVP_sha256).
class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw Error("sha256: OpenSSL could not start a digest.");
    }
    void update(const unsigned char* data, size_t size) {
        if (size && EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw Error("sha256: OpenSSL could not hash the data.");
    }
    /// The digest as 64 lower-case hex digits.
    std::string digest() {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int size = 0;
        if (EVP_DigestFinal_ex(ctx_.get(), md, &size) != 1) throw Error("sha256: OpenSSL could not finish the digest.");
        static const char* hex = "0123456789abcdef";
        std::string out;
        for (unsigned int i = 0; i < size; ++i) {
            out += hex[md[i] >> 4];
            out += hex[md[i] & 15];
        }
        return out;
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace

std::string sha256Hex(const std::string& bytes) {
    Sha256 h;
    h.update(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    return h.digest();
}

std::string fileSha256(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw Error(path + ": cannot be read to compute its sha256: " + ec.message() + ".");
    const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
    using Stamp = std::tuple<std::string, uintmax_t, long long>;
    static std::mutex mutex;
    static std::map<Stamp, std::string> known;
    const Stamp stamp{fs::absolute(path, ec).string(), size, static_cast<long long>(mtime)};
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = known.find(stamp); it != known.end()) return it->second;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be opened to compute its sha256.");
    Sha256 h;
    std::vector<char> piece(size_t(1) << 20);
    while (in) {
        in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
        if (in.bad()) throw Error(path + ": a read failed while computing its sha256.");
        h.update(reinterpret_cast<const unsigned char*>(piece.data()), static_cast<size_t>(in.gcount()));
    }
    const std::string digest = h.digest();
    std::lock_guard<std::mutex> lock(mutex);
    known[stamp] = digest;
    return digest;
}

}  // namespace nnscope
