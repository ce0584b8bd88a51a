// SPDX-License-Identifier: MIT
// SHA-256 written from its specification, FIPS 180-4 (sections 4.1.2, 4.2.2, 5.1.1, 5.3.3 and 6.2): eight 32-bit words
// of state, 64-byte blocks, the message padded with a 1 bit, zeros and its length in bits as a big-endian 64-bit number.
#include "core/io/sha256.h"

#include "core/model/error.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace nnscope {
namespace {

// the first 32 bits of the fractional parts of the cube roots of the first 64 primes (FIPS 180-4, 4.2.2)
constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/// The running hash: feed bytes with update(), then digest() once.
class Sha256 {
public:
    void update(const unsigned char* data, size_t size) {
        length_ += size;
        if (buffered_) {
            const size_t take = std::min(size, block_.size() - buffered_);
            std::memcpy(block_.data() + buffered_, data, take);
            buffered_ += take, data += take, size -= take;
            if (buffered_ < block_.size()) return;
            compress(block_.data());
            buffered_ = 0;
        }
        for (; size >= 64; data += 64, size -= 64) compress(data);
        std::memcpy(block_.data(), data, size);
        buffered_ = size;
    }
    std::string digest() {
        const uint64_t bits = length_ * 8;
        const unsigned char one = 0x80, zero = 0;
        update(&one, 1);
        while (buffered_ != 56) update(&zero, 1);
        unsigned char be[8];
        for (int i = 0; i < 8; ++i) be[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
        update(be, 8);
        static const char* hex = "0123456789abcdef";
        std::string out;
        for (uint32_t word : state_)
            for (int shift = 28; shift >= 0; shift -= 4) out += hex[(word >> shift) & 0xf];
        return out;
    }

private:
    void compress(const unsigned char* p) {
        uint32_t w[64];
        for (int t = 0; t < 16; ++t)
            w[t] = uint32_t(p[4 * t]) << 24 | uint32_t(p[4 * t + 1]) << 16 | uint32_t(p[4 * t + 2]) << 8 | uint32_t(p[4 * t + 3]);
        for (int t = 16; t < 64; ++t) {
            const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4], f = state_[5], g = state_[6], h = state_[7];
        for (int t = 0; t < 64; ++t) {
            const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        state_[0] += a, state_[1] += b, state_[2] += c, state_[3] += d, state_[4] += e, state_[5] += f, state_[6] += g, state_[7] += h;
    }

    // the first 32 bits of the fractional parts of the square roots of the first 8 primes (FIPS 180-4, 5.3.3)
    std::array<uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::array<unsigned char, 64> block_{};
    size_t buffered_ = 0;
    uint64_t length_ = 0;
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
