// SPDX-License-Identifier: MIT
#include "core/io/jsonfile.h"

#include "core/model/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

using json = nlohmann::json;

namespace nnscope {
namespace {

std::string sizeText(uint64_t bytes) {
    if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
    return std::to_string(bytes) + " bytes";
}

const char* kindOf(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

/// Thrown from the parser callback when an object repeats a key; turned into an Error by parseJson.
struct DuplicateKey {
    std::string key;
    size_t depth;
};

/// "parse error at line 1, column 9: syntax error while parsing object key - invalid literal" from
/// nlohmann's message, without its "[json.exception...]" tag and without "; last read: '<the bytes>'".
std::string parseErrorReason(const std::string& what) {
    std::string m = what;
    const auto tag = m.find("] ");
    if (m.rfind("[json.exception", 0) == 0 && tag != std::string::npos) m = m.substr(tag + 2);
    const auto lastRead = m.find("; last read");
    if (lastRead != std::string::npos) m = m.substr(0, lastRead);
    return shortText(m, 300);
}

}  // namespace

int openRegularFile(const std::string& path, uint64_t maxBytes, uint64_t& size) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) throw Error(path + ": the file does not exist (or is a symlink to nothing).");
        throw Error(path + ": cannot open the file (" + std::strerror(err) + ").");
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(path + ": cannot read the file's type and size (" + std::strerror(err) + ").");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path + ": could not be read: it is " + kindOf(st.st_mode) + ", not a regular file; nnscope reads "
                    "checkpoint files only from regular files (replace it with the real file).");
    }
    size = static_cast<uint64_t>(st.st_size);
    if (maxBytes != 0 && size > maxBytes) {
        ::close(fd);
        throw Error(path + ": the file has " + std::to_string(size) + " bytes, more than the " + sizeText(maxBytes) +
                    " nnscope reads for such a file; it is damaged or not the file its name says.");
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

std::string readRegularFile(const std::string& path, uint64_t maxBytes) {
    uint64_t size = 0;
    const int fd = openRegularFile(path, maxBytes, size);
    std::string data(static_cast<size_t>(size), '\0');
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::read(fd, &data[done], data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            throw Error(path + ": reading the file failed (" + std::strerror(err) + ").");
        }
        if (n == 0) break;  // the file shrank while being read: keep what is there
        done += static_cast<size_t>(n);
    }
    ::close(fd);
    data.resize(done);
    return data;
}

void checkJsonDepth(std::string_view text, const std::string& file, int maxDepth) {
    int depth = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\') ++i;  // the escaped character cannot end the string
            else if (c == '"') inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > maxDepth)
                throw Error(file + ": arrays and objects nest deeper than " + std::to_string(maxDepth) + " levels (at byte " +
                            std::to_string(i) + "); nnscope refuses such JSON, which no checkpoint needs: the file is "
                            "damaged or hostile.");
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

json parseJson(std::string_view text, const std::string& file, const JsonParseOptions& options) {
    checkJsonDepth(text, file, options.maxDepth);
    // The keys seen in each open object, innermost last: a repeated key is refused (nlohmann keeps the last).
    std::vector<std::set<std::string>> open;
    const json::parser_callback_t callback = [&open](int, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start: open.emplace_back(); break;
            case json::parse_event_t::object_end:
                if (!open.empty()) open.pop_back();
                break;
            case json::parse_event_t::key:
                if (!open.empty() && parsed.is_string() && !open.back().insert(parsed.get_ref<const std::string&>()).second)
                    throw DuplicateKey{parsed.get<std::string>(), open.size()};
                break;
            default: break;
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), callback);
    } catch (const DuplicateKey& d) {
        const std::string noun = d.depth == 1 ? options.topLevelKeyNoun : std::string("key");
        throw Error(file + ": the " + noun + " " + jsonExcerpt(json(d.key), 120) + " appears twice in one object" +
                    (d.depth == 1 ? "" : " (nested " + std::to_string(d.depth) + " levels deep)") +
                    "; JSON readers silently keep one of the two, so nnscope refuses the ambiguous file.");
    } catch (const json::parse_error& e) {
        throw Error(file + ": not valid JSON (" + parseErrorReason(e.what()) + "); the file is damaged or not JSON.");
    } catch (const json::exception& e) {
        throw Error(file + ": not valid JSON (" + parseErrorReason(e.what()) + ").");
    }
}

json readJsonObjectFile(const std::string& path, uint64_t maxBytes) {
    const std::string text = readRegularFile(path, maxBytes);
    json j = parseJson(text, path);
    if (!j.is_object())
        throw Error(path + ": should hold a JSON object ({...}), but holds a JSON " + std::string(j.type_name()) + ".");
    return j;
}

std::optional<json> readOptionalJsonObjectFile(const std::string& path, uint64_t maxBytes) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
    return readJsonObjectFile(path, maxBytes);
}

std::string jsonExcerpt(const json& value, size_t maxChars) {
    std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
    if (text.size() > maxChars) text = text.substr(0, maxChars) + "\xE2\x80\xA6";  // "…"
    return text;
}

std::string shortText(const std::string& text, size_t maxChars) {
    std::string out = text.size() > maxChars ? text.substr(0, maxChars) : text;
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    // Do not end inside a UTF-8 sequence.
    if (text.size() > maxChars) {
        size_t end = out.size();
        while (end > 0 && (static_cast<unsigned char>(out[end - 1]) & 0xC0) == 0x80) --end;
        if (end > 0 && static_cast<unsigned char>(out[end - 1]) >= 0xC0) --end;
        else end = out.size();
        out = out.substr(0, end) + "\xE2\x80\xA6";
    }
    return out;
}

}  // namespace nnscope
