// SPDX-License-Identifier: MIT
#include "core/io/safetensors.h"
#include "core/io/tempfiles.h"

#include "core/model/error.h"
#include "core/io/jsonfile.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace nnscope {
namespace {

struct DtypeInfo {
    const char* name;
    torch::ScalarType type;
    size_t bytes;
};

const DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
    {"F64", torch::kFloat64, 8}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* dtypeByName(const std::string& name) {
    for (const auto& d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

std::string shapeString(const std::vector<int64_t>& shape) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
    s << "]";
    return s.str();
}

}  // namespace

std::string safetensorsDtypeName(torch::ScalarType t) {
    for (const auto& d : kDtypes)
        if (d.type == t) return d.name;
    throw Error(std::string("cannot store a tensor of dtype ") + c10::toString(t) + " in safetensors");
}

struct SafetensorsFile::Mapping {
    void* data = nullptr;
    size_t size = 0;
    ~Mapping() {
        if (data && data != MAP_FAILED) munmap(data, size);
    }
};

SafetensorsHeader parseSafetensorsHeader(const unsigned char* bytes, size_t fileSize, const std::string& path) {
    if (fileSize < 8)
        throw Error(path + ": not a safetensors file: it has " + std::to_string(fileSize) +
                    " bytes, fewer than the 8 of the header length (truncated file?).");
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i) headerLen = (headerLen << 8) | bytes[i];
    // The length is 8 raw bytes: when it is wrong, printing it as a number would only print the file's first
    // bytes (a text file gives a huge number), so the messages say what is wrong with it instead.
    if (headerLen > fileSize - 8)
        throw Error(path + ": the header length in the first 8 bytes is implausible: it runs past the end of the file (" +
                    std::to_string(fileSize) + " bytes). The file is truncated or is not a safetensors file.");
    if (headerLen > kSafetensorsHeaderMaxBytes)
        throw Error(path + ": the header length in the first 8 bytes is implausible: more than the " +
                    std::to_string(kSafetensorsHeaderMaxBytes / kMiB) + " MiB safetensors allows. The file is not a safetensors file.");
    if (headerLen < 2)
        throw Error(path + ": the header length in the first 8 bytes is implausible: too short for a JSON object. The file is "
                    "truncated or is not a safetensors file.");
    const size_t dataStart = 8 + static_cast<size_t>(headerLen);
    const size_t dataSize = fileSize - dataStart;
    const char* text = reinterpret_cast<const char*>(bytes + 8);
    if (text[0] != '{')
        throw Error(path + ": the header does not start with '{': the file is not a safetensors file.");
    // The writer pads the JSON with spaces (0x20) to align the data, and with nothing else; a header length one
    // byte short or long shows here as a header that does not end in '}' (or, cut in the padding, as bytes
    // left over after the last tensor below).
    size_t jsonEnd = static_cast<size_t>(headerLen);
    while (jsonEnd > 0 && text[jsonEnd - 1] == ' ') --jsonEnd;
    if (text[jsonEnd - 1] != '}')
        throw Error(path + ": the header is not valid JSON padded with spaces: it does not end with '}' followed only by spaces "
                    "(0x20). The header length in the first 8 bytes is wrong, or the header is damaged or padded with other bytes.");
    // JSON text holds no NUL byte (the reference's parser refuses one; a C-string reader would stop there)
    if (const void* nul = std::memchr(text, 0, jsonEnd))
        throw Error(path + ": the header holds a NUL byte at byte " + std::to_string(8 + (static_cast<const char*>(nul) - text)) +
                    " of the file: the header is damaged.");
    const std::string where = path + " (its JSON header)";
    const json header = parseJson(std::string_view(text, jsonEnd), where, JsonParseOptions().withTopLevelKeyNoun("tensor"));
    if (!header.is_object()) throw Error(where + ": the header is not a JSON object.");

    SafetensorsHeader out;
    struct Range { size_t begin, end; const std::string* name; };
    std::vector<Range> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        if (name == "__metadata__") {
            if (!it->is_object()) throw Error(path + ": __metadata__ is not an object of strings.");
            for (auto m = it->begin(); m != it->end(); ++m) {
                if (!m->is_string()) throw Error(path + ": __metadata__ entry '" + shortText(m.key()) + "' is not a string.");
                out.metadata[m.key()] = m->get<std::string>();
            }
            continue;
        }
        const json& e = *it;
        auto bad = [&](const std::string& why) { return Error(path + ": tensor '" + shortText(name) + "': " + why); };
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            throw bad("the header entry needs dtype, shape and data_offsets.");
        if (!e["dtype"].is_string()) throw bad("dtype is not a string.");
        const std::string dt = e["dtype"].get<std::string>();
        const DtypeInfo* info = dtypeByName(dt);
        if (!info)
            throw bad("unknown dtype " + jsonExcerpt(e["dtype"], 20) +
                      " (nnscope reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL).");
        SafetensorsFile::Entry entry;
        entry.dtype = info->type;
        if (!e["shape"].is_array()) throw bad("shape is not a list.");
        // Checked products: an 8-byte dtype times a large shape wraps around 64 bits, and a wrapped byte count could
        // match the data_offsets.
        uint64_t numel = 1;
        for (const auto& d : e["shape"]) {
            if (!d.is_number_unsigned()) throw bad("shape has a dimension that is not a non-negative integer.");
            const uint64_t v = d.get<uint64_t>();
            if (v > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, v, &numel))
                throw bad("shape " + jsonExcerpt(e["shape"], 80) + " has more elements than 64 bits can count: the header is damaged.");
            entry.shape.push_back(static_cast<int64_t>(v));
        }
        uint64_t needed = 0;
        if (__builtin_mul_overflow(numel, static_cast<uint64_t>(info->bytes), &needed))
            throw bad("shape " + shapeString(entry.shape) + " of " + dt + " needs more bytes than 64 bits can count: the header is damaged.");
        const json& off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            throw bad("data_offsets must be two non-negative integers.");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (en < b) throw bad("data_offsets end before they begin.");
        if (en > dataSize)
            throw bad("its bytes [" + std::to_string(b) + ", " + std::to_string(en) + ") lie past the end of the file's data (" +
                      std::to_string(dataSize) + " bytes): the file is truncated.");
        if (en - b != needed)
            throw bad("shape " + shapeString(entry.shape) + " of " + dt + " needs " + std::to_string(needed) +
                      " bytes but data_offsets give " + std::to_string(en - b) + ".");
        entry.begin = dataStart + b;
        entry.end = dataStart + en;
        auto placed = out.entries.emplace(name, std::move(entry)).first;
        if (en > b) ranges.push_back({static_cast<size_t>(b), static_cast<size_t>(en), &placed->first});
    }
    // The tensors must tile the data section exactly, as the reference reader requires: a gap, an overlap or bytes
    // left at the end mean the offsets or the header length are wrong (every tensor may then be read shifted).
    std::sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.begin < y.begin || (x.begin == y.begin && x.end < y.end); });
    size_t covered = 0;
    const std::string* previous = nullptr;
    for (const auto& r : ranges) {
        if (r.begin < covered)
            throw Error(path + ": tensors '" + shortText(*previous) + "' and '" + shortText(*r.name) +
                        "' overlap in the file (their data_offsets share bytes).");
        if (r.begin > covered)
            throw Error(path + ": bytes [" + std::to_string(covered) + ", " + std::to_string(r.begin) + ") of the data section, " +
                        (previous ? "between tensors '" + shortText(*previous) + "' and '" + shortText(*r.name) + "'"
                                  : "before the first tensor '" + shortText(*r.name) + "'") +
                        ", belong to no tensor: the data_offsets or the header length are wrong. The file is damaged.");
        covered = r.end;
        previous = r.name;
    }
    if (covered != dataSize)
        throw Error(path + ": the last " + std::to_string(dataSize - covered) + " byte(s) of the data section (bytes [" +
                    std::to_string(covered) + ", " + std::to_string(dataSize) + ")" +
                    (previous ? ", after the last tensor '" + shortText(*previous) + "'" : std::string()) +
                    ") belong to no tensor: the header length or the data_offsets are wrong, or bytes were appended. The file is "
                    "damaged.");
    return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path), map_(std::make_shared<Mapping>()) {
    uint64_t size = 0;
    const int fd = openRegularFile(path, /*maxBytes=*/0, size);
    const size_t fileSize = static_cast<size_t>(size);
    if (fileSize < 8) {
        ::close(fd);
        throw Error(path + ": not a safetensors file: it has " + std::to_string(fileSize) +
                    " bytes, fewer than the 8 of the header length (truncated file?).");
    }
    // Map the whole file once; tensors are views into it (no second copy in memory).
    void* data = mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) throw Error(path + ": cannot memory-map the file (" + std::strerror(errno) + ").");
    map_->data = data;
    map_->size = fileSize;
    SafetensorsHeader header = parseSafetensorsHeader(static_cast<const unsigned char*>(data), fileSize, path);
    entries_ = std::move(header.entries);
    metadata_ = std::move(header.metadata);
}

SafetensorsFile::~SafetensorsFile() = default;

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw Error(path_ + ": no tensor named '" + name + "'.");
    const Entry& e = it->second;
    auto* ptr = static_cast<char*>(map_->data) + e.begin;
    auto keep = map_;
    auto opts = torch::TensorOptions().dtype(e.dtype);
    if (e.end == e.begin) return torch::empty(e.shape, opts);
    // Tensors whose bytes are not aligned to their element size are copied; aligned ones are views.
    const size_t elem = c10::elementSize(e.dtype);
    if (reinterpret_cast<uintptr_t>(ptr) % elem != 0) {
        auto t = torch::empty(e.shape, opts);
        std::memcpy(t.data_ptr(), ptr, e.end - e.begin);
        return t;
    }
    return torch::from_blob(ptr, e.shape, [keep](void*) {}, opts);
}

WeightStore::WeightStore(const std::string& dir) : dir_(dir) {
    if (!fs::is_directory(dir)) throw Error(dir + ": not a folder (a checkpoint is a folder with config.json and model.safetensors).");
    const fs::path d(dir);
    std::error_code ec;
    const auto present = [&ec](const fs::path& p) { return fs::exists(fs::symlink_status(p, ec)); };
    std::vector<std::string> files;
    std::vector<std::pair<std::string, std::string>> indexEntries;  // tensor -> shard, as the index says
    const fs::path index = d / "model.safetensors.index.json";
    if (present(index)) {
        const json j = readJsonObjectFile(index.string(), kIndexMaxBytes);
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
            throw Error(index.string() + ": has no \"weight_map\" object naming the shard of each tensor.");
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it->is_string()) throw Error(index.string() + ": the shard of '" + shortText(it.key()) + "' is not a file name.");
            const std::string f = it->get<std::string>();
            if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos || f.find('\0') != std::string::npos)
                throw Error(index.string() + ": shard name " + jsonExcerpt(*it, 80) + " of tensor '" + shortText(it.key()) +
                            "' is not a plain file name in the checkpoint folder.");
            if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
            indexEntries.emplace_back(it.key(), f);
        }
    } else if (present(d / "model.safetensors")) {
        files.push_back("model.safetensors");
    } else {
        for (const char* pickled : {"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.pth", "model.ckpt"})
            if (present(d / pickled))
                throw Error((d / pickled).string() +
                            ": pickled PyTorch weights are refused: unpickling can run arbitrary code. Convert the checkpoint to "
                            "safetensors (e.g. in Python: model.save_pretrained(dir, safe_serialization=True)).");
        throw Error(dir + ": no model.safetensors or model.safetensors.index.json in this folder.");
    }
    for (const auto& f : files) {
        const fs::path p = d / f;
        if (!present(p)) throw Error(p.string() + ": the shard named in model.safetensors.index.json is missing.");
        files_.push_back(std::make_unique<SafetensorsFile>(p.string()));
        const size_t k = files_.size() - 1;
        for (const auto& [name, e] : files_.back()->entries()) {
            (void)e;
            if (!where_.emplace(name, k).second)
                throw Error(p.string() + ": tensor '" + shortText(name) + "' is stored in two shards (also in " +
                            files_[where_[name]]->path() + ").");
        }
    }
    // The index against the shards' headers. transformers trusts the index; a wrong entry means the folder was
    // assembled from different checkpoints or damaged, so a tensor the model reads must not come from a guess.
    for (const auto& [name, shard] : indexEntries) {
        auto it = where_.find(name);
        if (it == where_.end())
            indexProblems_[name] = index.string() + ": tensor '" + shortText(name) + "' is placed in shard " + shortText(shard) +
                                   ", but no shard holds it.";
        else if (fs::path(files_[it->second]->path()).filename().string() != shard)
            indexProblems_[name] = index.string() + ": tensor '" + shortText(name) + "' is placed in shard " + shortText(shard) +
                                   ", which does not hold it (" + fs::path(files_[it->second]->path()).filename().string() + " does).";
    }
}

WeightStore::WeightStore(const std::string& label, std::map<std::string, torch::Tensor> tensors)
    : dir_(label), memory_(std::move(tensors)) {
    for (const auto& [name, t] : memory_) where_[name] = 0;
}

torch::Tensor WeightStore::get(const std::string& name) const {
    {
        std::lock_guard<std::mutex> lock(requestedMutex_);
        requested_.insert(name);
    }
    auto problem = indexProblems_.find(name);
    if (problem != indexProblems_.end())
        throw Error(problem->second + " The model reads this tensor, so the checkpoint is refused: fix the index or "
                    "download the checkpoint again.");
    if (auto m = memory_.find(name); m != memory_.end()) return m->second;
    auto it = where_.find(name);
    if (it == where_.end())
        throw Error(dir_ + ": the checkpoint has no tensor '" + name + "'" + savedSpellings(name) +
                    " (missing weight; is the folder complete and of the family its config.json names?).");
    return files_[it->second]->tensor(storedName(name));
}

std::string WeightStore::savedSpellings(const std::string& name) const {
    std::string out;
    for (const auto& [saved, canonical] : renamed_)
        if (name.rfind(canonical, 0) == 0) out += (out.empty() ? " (nor '" : "' nor '") + saved + name.substr(canonical.size());
    return out.empty() ? out : out + "', as transformers saves it)";
}

std::string WeightStore::storedName(const std::string& name) const {
    auto it = stored_.find(name);
    return it == stored_.end() ? name : it->second;
}

size_t WeightStore::renamePrefixes(const std::vector<std::pair<std::string, std::string>>& savedToCanonical) {
    renamed_ = savedToCanonical;
    std::map<std::string, size_t> where;
    std::map<std::string, std::string> problems;
    size_t n = 0;
    for (const auto& [name, k] : where_) {
        std::string canonical = name;
        for (const auto& [saved, to] : savedToCanonical)
            if (name.rfind(saved, 0) == 0) {
                canonical = to + name.substr(saved.size());
                break;
            }
        if (canonical != name) {
            ++n;
            stored_[canonical] = name;
        }
        if (!where.emplace(canonical, k).second || (canonical != name && where_.count(canonical)))
            throw Error(fileOf(name) + ": tensor '" + shortText(canonical) + "' is stored twice, also as '" + shortText(name) +
                        "' (transformers reads the second spelling as the first): remove one of them.");
        if (auto p = indexProblems_.find(name); p != indexProblems_.end()) problems[canonical] = p->second;
    }
    where_ = std::move(where);
    indexProblems_ = std::move(problems);
    if (!memory_.empty()) {  // tensors in memory are keyed by name: they take the new names themselves
        std::map<std::string, torch::Tensor> memory;
        for (auto& [name, t] : memory_) memory[name] = t;
        for (const auto& [canonical, stored] : stored_) {
            memory.erase(stored);
            memory[canonical] = memory_.at(stored);
        }
        memory_ = std::move(memory);
        stored_.clear();  // nothing is read from a file under its stored name
    }
    return n;
}

torch::Tensor WeightStore::get(const std::string& name, const std::vector<int64_t>& shape) const {
    torch::Tensor t = get(name);
    if (t.sizes().vec() != shape)
        throw TensorShapeMismatch(fileOf(name) + ": tensor '" + storedName(name) + "' has shape " + shapeString(t.sizes().vec()) + " but config.json implies " +
                    shapeString(shape) + ".");
    if (!c10::isFloatingType(t.scalar_type()))
        throw Error(fileOf(name) + ": tensor '" + storedName(name) + "' is stored as " + safetensorsDtypeName(t.scalar_type()) +
                    ", but a model weight must be a floating type (F32, F16, BF16 or F64): the header is damaged.");
    return t;
}

std::set<std::string> WeightStore::requested() const {
    std::lock_guard<std::mutex> lock(requestedMutex_);
    return requested_;
}

std::vector<std::string> WeightStore::names() const {
    std::vector<std::string> out;
    for (const auto& [n, k] : where_) out.push_back(n);
    return out;
}

std::map<torch::ScalarType, int64_t> WeightStore::floatingElements(const std::function<bool(const std::string&)>& skip) const {
    std::map<torch::ScalarType, int64_t> out;
    for (const auto& [name, t] : memory_)
        if (c10::isFloatingType(t.scalar_type()) && !(skip && skip(name))) out[t.scalar_type()] += t.numel();
    std::map<std::string, std::string> canonicalOf;  // the file's name -> the name after renamePrefixes
    if (skip)
        for (const auto& [canonical, stored] : stored_) canonicalOf[stored] = canonical;
    for (const auto& file : files_)
        for (const auto& [name, e] : file->entries()) {
            const auto renamed = canonicalOf.find(name);
            if (!c10::isFloatingType(e.dtype) || (skip && skip(renamed == canonicalOf.end() ? name : renamed->second))) continue;
            int64_t n = 1;
            for (int64_t d : e.shape) n *= d;  // the header check bounded every product
            out[e.dtype] += n;
        }
    return out;
}

std::string WeightStore::fileOf(const std::string& name) const {
    auto it = where_.find(name);
    return it == where_.end() || memory_.count(name) ? dir_ : files_[it->second]->path();
}

namespace {
/// The folder a file `path` goes in ("." for a bare name); refuses a path that names a folder.
fs::path folderOfFileToWrite(const std::string& path) {
    const fs::path target(path);
    if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
        throw Error(path + ": names a folder, not a file to write.");
    return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

/// A new, empty temporary file beside `path` (`.NAME.XXXXXX`, mode 0600), opened for writing; `tmp` receives its name.
int createTemporaryBeside(const std::string& path, const fs::path& folder, std::string& tmp) {
    // A fresh, unguessable name in the target's folder (rename is atomic only within one file system), created
    // exclusively: mkostemp opens with O_CREAT | O_EXCL, which never follows a symlink someone planted there.
    tmp = (folder / ("." + fs::path(path).filename().string() + ".XXXXXX")).string();
    const int fd = mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        std::error_code ec;
        if (!fs::exists(folder, ec)) throw Error(path + ": the folder " + folder.string() + " does not exist.");
        if (!fs::is_directory(folder, ec)) throw Error(path + ": " + folder.string() + " is not a folder.");
        throw Error(path + ": cannot create a temporary file beside it in " + folder.string() + " (" + std::strerror(err) + ").");
    }
    return fd;
}
}  // namespace

void checkWritableFile(const std::string& path) {
    const fs::path folder = folderOfFileToWrite(path);
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error(path + ": is a folder; give a file name inside it.");
    std::string tmp;
    const int fd = createTemporaryBeside(path, folder, tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
}

void writeFileAtomically(const std::string& path, const std::string& data) {
    const fs::path folder = folderOfFileToWrite(path);
    std::string tmp;
    const int fd = createTemporaryBeside(path, folder, tmp);
    const TempFileRegistration removedOnSignal(tmp.c_str());  // Ctrl-C or SIGTERM mid-write leaves no partial file
    auto failWith = [&](const std::string& why) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return Error(path + ": " + why + " (" + std::strerror(err) + "); nothing was written.");
    };
    if (fchmod(fd, 0644) != 0) throw failWith("cannot set the new file's permissions");
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw failWith("writing failed (disk full?)");
        done += static_cast<size_t>(n);
    }
    if (fsync(fd) != 0) throw failWith("writing failed (disk full?)");
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw Error(path + ": writing failed (" + std::string(std::strerror(err)) + "); nothing was written.");
    }
    // rename replaces `path` itself, even when it is a symlink: the link is not followed.
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw Error(path + ": cannot move the written file into place (" + std::strerror(err) + "); nothing was written.");
    }
}

void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::vector<torch::Tensor> contiguous;
    size_t offset = 0;
    for (const auto& [name, t0] : tensors) {
        torch::Tensor t = t0.detach().to(torch::kCPU).contiguous();
        const size_t n = t.numel() * t.element_size();
        header[name] = {{"dtype", safetensorsDtypeName(t.scalar_type())},
                        {"shape", t.sizes().vec()},
                        {"data_offsets", {offset, offset + n}}};
        offset += n;
        contiguous.push_back(t);
    }
    std::string h = header.dump();
    while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // align the data to 8 bytes, as the reference writer does
    std::string out;
    out.reserve(8 + h.size() + offset);
    uint64_t len = h.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    out += h;
    for (const auto& t : contiguous) out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    writeFileAtomically(path, out);
}

namespace {
const char* npyDescr(torch::ScalarType t) {
    switch (t) {
        case torch::kFloat32: return "<f4";
        case torch::kFloat64: return "<f8";
        case torch::kFloat16: return "<f2";
        case torch::kInt64: return "<i8";
        case torch::kInt32: return "<i4";
        case torch::kUInt8: return "|u1";
        case torch::kBool: return "|b1";
        default: return nullptr;
    }
}
}  // namespace

void writeNpy(const std::string& path, const torch::Tensor& tensor) {
    torch::Tensor t = tensor.detach().to(torch::kCPU);
    if (t.scalar_type() == torch::kBFloat16) t = t.to(torch::kFloat32);  // NumPy has no bfloat16
    t = t.contiguous();
    const char* descr = npyDescr(t.scalar_type());
    if (!descr) throw Error(path + ": cannot write dtype " + std::string(c10::toString(t.scalar_type())) + " to .npy.");
    std::string shape = "(";
    for (int64_t d : t.sizes()) shape += std::to_string(d) + ", ";
    if (t.dim() > 1) shape.erase(shape.size() - 2);  // "(a, b)" but "(a,)" for one axis
    else if (t.dim() == 1) shape.erase(shape.size() - 1);
    shape += ")";
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    size_t total = 10 + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(dict.size() & 0xff));
    out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
    out += dict;
    out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
    writeFileAtomically(path, out);
}

namespace {

/// One .npy file's bytes `all` (named `path` in messages) as a tensor (a copy).
torch::Tensor parseNpy(const std::string& all, const std::string& path) {
    if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0) throw Error(path + ": not a .npy file (bad magic).");
    const int major = static_cast<unsigned char>(all[6]);
    size_t hlen, hstart;
    if (major == 1) {
        hlen = static_cast<unsigned char>(all[8]) | (static_cast<unsigned char>(all[9]) << 8);
        hstart = 10;
    } else {
        if (all.size() < 12) throw Error(path + ": truncated .npy header.");
        hlen = 0;
        for (int i = 3; i >= 0; --i) hlen = (hlen << 8) | static_cast<unsigned char>(all[8 + i]);
        hstart = 12;
    }
    if (hlen > all.size() - hstart) throw Error(path + ": truncated .npy header.");
    const std::string h = all.substr(hstart, hlen);
    auto field = [&](const std::string& key) {
        auto p = h.find("'" + key + "'");
        const auto colon = p == std::string::npos ? p : h.find(':', p);
        if (colon == std::string::npos) throw Error(path + ": .npy header lacks '" + key + "'.");
        return h.substr(colon + 1);
    };
    std::string descr = field("descr");
    descr = descr.substr(descr.find('\'') + 1);
    descr = descr.substr(0, descr.find('\''));
    if (field("fortran_order").find("True") < field("fortran_order").find(','))
        throw Error(path + ": Fortran-ordered .npy arrays are not supported; save with np.ascontiguousarray.");
    std::string shp = field("shape");
    const auto open = shp.find('('), close = shp.find(')');
    if (open == std::string::npos || close == std::string::npos || close < open) throw Error(path + ": the .npy header's shape is not a tuple.");
    shp = shp.substr(open + 1, close - open - 1);
    std::vector<int64_t> shape;
    std::stringstream ss(shp);
    std::string tok;
    uint64_t numel = 1;
    while (std::getline(ss, tok, ',')) {
        const auto first = tok.find_first_not_of(' ');
        if (first == std::string::npos) continue;
        const auto last = tok.find_last_not_of(' ');
        const std::string digits = tok.substr(first, last - first + 1);
        if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
            throw Error(path + ": the .npy header's shape has a dimension that is not a non-negative integer.");
        const uint64_t d = std::stoull(digits);
        if (__builtin_mul_overflow(numel, d, &numel)) throw Error(path + ": the .npy header's shape is too large.");
        shape.push_back(static_cast<int64_t>(d));
    }
    torch::ScalarType type;
    if (descr == "<f4") type = torch::kFloat32;
    else if (descr == "<f8") type = torch::kFloat64;
    else if (descr == "<f2") type = torch::kFloat16;
    else if (descr == "<i8") type = torch::kInt64;
    else if (descr == "<i4") type = torch::kInt32;
    else throw Error(path + ": .npy dtype '" + shortText(descr, 20) + "' is not supported (use float32, float64, float16, int64 or int32).");
    // The byte count is checked before anything is allocated from the header's shape.
    uint64_t n = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(c10::elementSize(type)), &n) || n != all.size() - hstart - hlen)
        throw Error(path + ": the .npy data has " + std::to_string(all.size() - hstart - hlen) + " bytes, not what its shape needs.");
    auto t = torch::empty(shape, torch::TensorOptions().dtype(type));
    std::memcpy(t.data_ptr(), all.data() + hstart + hlen, n);
    return t;
}

uint32_t le32(const std::string& b, size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}
uint16_t le16(const std::string& b, size_t at) {
    return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}

}  // namespace

torch::Tensor readNpy(const std::string& path) {
    // A steering vector is small; the limit keeps a wrong path (a huge file, /dev/zero) from eating the memory.
    return parseNpy(readRegularFile(path, /*maxBytes=*/4096 * kMiB), path);
}

std::map<std::string, torch::Tensor> readNpz(const std::string& path) {
    const std::string all = readRegularFile(path, /*maxBytes=*/16384 * kMiB);
    std::map<std::string, torch::Tensor> out;
    size_t at = 0;
    // The members' local headers, one after the other (zipfile writes their sizes there when it can seek, as np.savez
    // does); the central directory that follows them ends the walk.
    while (at + 30 <= all.size() && le32(all, at) == 0x04034b50) {
        const uint16_t flags = le16(all, at + 6), method = le16(all, at + 8);
        uint64_t size = le32(all, at + 18);
        const uint64_t stored = le32(all, at + 22);
        const size_t nameLength = le16(all, at + 26), extraLength = le16(all, at + 28);
        if (at + 30 + nameLength + extraLength > all.size()) throw Error(path + ": a truncated zip member header.");
        const std::string name = all.substr(at + 30, nameLength);
        const size_t extraAt = at + 30 + nameLength;
        if (size == 0xFFFFFFFFu) {  // ZIP64: the sizes are in the extra field (id 1: uncompressed, then compressed)
            for (size_t e = extraAt; e + 4 <= extraAt + extraLength;) {
                const uint16_t id = le16(all, e), len = le16(all, e + 2);
                if (id == 1 && len >= 16) size = le32(all, e + 4) | static_cast<uint64_t>(le32(all, e + 8)) << 32;
                e += 4 + len;
            }
        }
        if (method != 0)
            throw Error(path + ": member " + shortText(name, 60) + " is compressed (np.savez_compressed); nnscope reads np.savez's stored "
                        "archives: np.savez(out, **np.load(path)).");
        if ((flags & 8) && size == 0) throw Error(path + ": member " + shortText(name, 60) + " gives its size after its data, which nnscope does not read.");
        if (size != stored && stored != 0xFFFFFFFFu) throw Error(path + ": member " + shortText(name, 60) + " has two different sizes.");
        const size_t dataAt = extraAt + extraLength;
        if (size > all.size() - dataAt) throw Error(path + ": member " + shortText(name, 60) + " runs past the end of the file.");
        const std::string member = path + "/" + name;
        if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0) throw Error(member + ": not a .npy member.");
        out[name.substr(0, name.size() - 4)] = parseNpy(all.substr(dataAt, static_cast<size_t>(size)), member);
        at = dataAt + static_cast<size_t>(size);
    }
    if (out.empty()) throw Error(path + ": not a .npz archive (no zip member at its start).");
    return out;
}

}  // namespace nnscope
