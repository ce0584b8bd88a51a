// SPDX-License-Identifier: MIT
#include "core/io/filehash.h"

#include "core/model/error.h"

#include <QCryptographicHash>
#include <QFile>

#include <filesystem>
#include <tuple>
#include <mutex>
#include <map>

namespace nnscope {

std::string fileSha256(const std::string& path, int64_t* lines) {
    // a digest computed for the same path, size and modification time is reused (the window exports the same
    // dictionary's weights again and again; a dashboard checks them on every resume)
    namespace fs = std::filesystem;
    std::error_code ec;
    using Stamp = std::tuple<std::string, uintmax_t, long long>;
    static std::mutex mutex;
    static std::map<Stamp, std::pair<std::string, int64_t>> known;
    const uintmax_t size = fs::file_size(path, ec);
    const Stamp stamp{fs::absolute(path, ec).string(), ec ? 0 : size,
                      ec ? 0 : static_cast<long long>(fs::last_write_time(path, ec).time_since_epoch().count())};
    const bool cacheable = !ec;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = known.find(stamp); it != known.end()) {
            if (lines) *lines = it->second.second;
            return it->second.first;
        }
    }
    QFile file(QString::fromStdString(path));
    if (!std::filesystem::is_regular_file(path) || !file.open(QIODevice::ReadOnly))
        throw Error(path + ": cannot be read to hash it: " +
                    (std::filesystem::exists(path) ? file.errorString().toStdString() + " (not a readable regular file)" : std::string("no such file")));
    QCryptographicHash hash(QCryptographicHash::Sha256);
    int64_t newlines = 0;
    char last = '\n';
    QByteArray chunk;
    while (!(chunk = file.read(1 << 20)).isEmpty()) {
        hash.addData(chunk);
        newlines += chunk.count('\n');
        last = chunk.back();
    }
    if (file.error() != QFileDevice::NoError) throw Error(path + ": reading it failed: " + file.errorString().toStdString());
    const int64_t counted = newlines + (last != '\n' ? 1 : 0);
    if (lines) *lines = counted;
    std::string digest = hash.result().toHex().toStdString();
    if (cacheable) {
        std::lock_guard<std::mutex> lock(mutex);
        known[stamp] = {digest, counted};
    }
    return digest;
}

std::string fileFingerprint(const std::string& path, int samples, int64_t chunkBytes) {
    QFile file(QString::fromStdString(path));
    if (!std::filesystem::is_regular_file(path) || !file.open(QIODevice::ReadOnly))
        throw Error(path + ": cannot be read to take its fingerprint: " + file.errorString().toStdString());
    const int64_t size = file.size();
    if (size <= static_cast<int64_t>(samples) * chunkBytes) return fileSha256(path);
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(QByteArray::number(static_cast<qlonglong>(size)));
    for (int i = 0; i < samples; ++i) {
        const int64_t at = (size - chunkBytes) * i / std::max(1, samples - 1);  // the first and the last chunk included
        if (!file.seek(at)) throw Error(path + ": seeking to byte " + std::to_string(at) + " failed: " + file.errorString().toStdString());
        const QByteArray chunk = file.read(chunkBytes);
        if (chunk.size() != chunkBytes) throw Error(path + ": reading it failed: " + file.errorString().toStdString());
        hash.addData(chunk);
    }
    return hash.result().toHex().toStdString();
}

std::string filesSha256(const std::vector<std::string>& paths) {
    std::string out;
    for (const std::string& path : paths)
        out += (out.empty() ? "" : ", ") + std::filesystem::path(path).filename().string() + ":" + fileSha256(path);
    return out;
}

}  // namespace nnscope
