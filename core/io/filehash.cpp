// SPDX-License-Identifier: MIT
#include "core/io/filehash.h"

#include "core/model/error.h"

#include <QCryptographicHash>
#include <QFile>

#include <filesystem>

namespace nnscope {

std::string fileSha256(const std::string& path, int64_t* lines) {
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
    if (lines) *lines = newlines + (last != '\n' ? 1 : 0);
    return hash.result().toHex().toStdString();
}

std::string filesSha256(const std::vector<std::string>& paths) {
    std::string out;
    for (const std::string& path : paths)
        out += (out.empty() ? "" : ", ") + std::filesystem::path(path).filename().string() + ":" + fileSha256(path);
    return out;
}

}  // namespace nnscope
