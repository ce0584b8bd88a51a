// SPDX-License-Identifier: MIT
#include "safetensors.h"

#include "error.h"

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
#include <fstream>
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

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path), map_(std::make_shared<Mapping>()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot open the file (" + std::strerror(errno) + ").");
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        ::close(fd);
        throw Error(path + ": cannot read the file's size (" + std::strerror(errno) + ").");
    }
    const size_t fileSize = static_cast<size_t>(st.st_size);
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
    const auto* bytes = static_cast<const unsigned char*>(data);

    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i) headerLen = (headerLen << 8) | bytes[i];
    if (headerLen > fileSize - 8)
        throw Error(path + ": the header length (" + std::to_string(headerLen) + " bytes) runs past the end of the file (" +
                    std::to_string(fileSize) + " bytes): the file is truncated or not safetensors.");
    const size_t dataStart = 8 + static_cast<size_t>(headerLen);
    json header;
    try {
        header = json::parse(reinterpret_cast<const char*>(bytes + 8), reinterpret_cast<const char*>(bytes + dataStart));
    } catch (const json::exception& e) {
        throw Error(path + ": the header is not valid JSON (" + e.what() + ").");
    }
    if (!header.is_object()) throw Error(path + ": the header is not a JSON object.");

    struct Range { size_t begin, end; std::string name; };
    std::vector<Range> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        if (name == "__metadata__") {
            if (!it->is_object()) throw Error(path + ": __metadata__ is not an object of strings.");
            for (auto m = it->begin(); m != it->end(); ++m) {
                if (!m->is_string()) throw Error(path + ": __metadata__ entry '" + m.key() + "' is not a string.");
                metadata_[m.key()] = m->get<std::string>();
            }
            continue;
        }
        const json& e = *it;
        auto bad = [&](const std::string& why) { return Error(path + ": tensor '" + name + "': " + why); };
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            throw bad("the header entry needs dtype, shape and data_offsets.");
        if (!e["dtype"].is_string()) throw bad("dtype is not a string.");
        const std::string dt = e["dtype"].get<std::string>();
        const DtypeInfo* info = dtypeByName(dt);
        if (!info) throw bad("unknown dtype '" + dt + "' (nnscope reads F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL).");
        Entry entry;
        entry.dtype = info->type;
        if (!e["shape"].is_array()) throw bad("shape is not a list.");
        uint64_t numel = 1;
        for (const auto& d : e["shape"]) {
            if (!d.is_number_unsigned()) throw bad("shape has a dimension that is not a non-negative integer.");
            const uint64_t v = d.get<uint64_t>();
            if (v != 0 && numel > (UINT64_MAX / 4) / v) throw bad("shape is too large.");
            numel *= v;
            entry.shape.push_back(static_cast<int64_t>(v));
        }
        const json& off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            throw bad("data_offsets must be two non-negative integers.");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (en < b) throw bad("data_offsets end before they begin.");
        if (en > fileSize - dataStart)
            throw bad("its bytes [" + std::to_string(b) + ", " + std::to_string(en) + ") lie past the end of the file's data (" +
                      std::to_string(fileSize - dataStart) + " bytes): the file is truncated.");
        if (en - b != numel * info->bytes)
            throw bad("shape " + shapeString(entry.shape) + " of " + dt + " needs " + std::to_string(numel * info->bytes) +
                      " bytes but data_offsets give " + std::to_string(en - b) + ".");
        entry.begin = dataStart + b;
        entry.end = dataStart + en;
        if (en > b) ranges.push_back({entry.begin, entry.end, name});
        entries_.emplace(name, std::move(entry));
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& x, const Range& y) { return x.begin < y.begin; });
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].begin < ranges[i - 1].end)
            throw Error(path + ": tensors '" + ranges[i - 1].name + "' and '" + ranges[i].name +
                        "' overlap in the file (their data_offsets share bytes).");
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
    std::vector<std::string> files;
    const fs::path index = d / "model.safetensors.index.json";
    if (fs::exists(index)) {
        std::ifstream in(index);
        json j;
        try {
            j = json::parse(in);
        } catch (const json::exception& e) {
            throw Error(index.string() + ": not valid JSON (" + e.what() + ").");
        }
        if (!j.contains("weight_map") || !j["weight_map"].is_object())
            throw Error(index.string() + ": has no \"weight_map\" object naming the shard of each tensor.");
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it->is_string()) throw Error(index.string() + ": the shard of '" + it.key() + "' is not a file name.");
            const std::string f = it->get<std::string>();
            if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
                throw Error(index.string() + ": shard name '" + f + "' is not a plain file name.");
            if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
        }
    } else if (fs::exists(d / "model.safetensors")) {
        files.push_back("model.safetensors");
    } else {
        for (const char* pickled : {"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.pth", "model.ckpt"})
            if (fs::exists(d / pickled))
                throw Error((d / pickled).string() +
                            ": pickled PyTorch weights are refused: unpickling can run arbitrary code. Convert the checkpoint to "
                            "safetensors (e.g. in Python: model.save_pretrained(dir, safe_serialization=True)).");
        throw Error(dir + ": no model.safetensors or model.safetensors.index.json in this folder.");
    }
    for (const auto& f : files) {
        const fs::path p = d / f;
        if (!fs::exists(p)) throw Error(p.string() + ": the shard named in model.safetensors.index.json is missing.");
        files_.push_back(std::make_unique<SafetensorsFile>(p.string()));
        const size_t k = files_.size() - 1;
        for (const auto& [name, e] : files_.back()->entries()) {
            (void)e;
            if (!where_.emplace(name, k).second)
                throw Error(p.string() + ": tensor '" + name + "' is stored in two shards.");
        }
    }
}

WeightStore::WeightStore(const std::string& label, std::map<std::string, torch::Tensor> tensors)
    : dir_(label), memory_(std::move(tensors)) {
    for (const auto& [name, t] : memory_) where_[name] = 0;
}

torch::Tensor WeightStore::get(const std::string& name) const {
    if (auto m = memory_.find(name); m != memory_.end()) return m->second;
    auto it = where_.find(name);
    if (it == where_.end())
        throw Error(dir_ + ": the checkpoint has no tensor '" + name + "' (missing weight; is the folder complete and of the family its config.json names?).");
    return files_[it->second]->tensor(name);
}

torch::Tensor WeightStore::get(const std::string& name, const std::vector<int64_t>& shape) const {
    torch::Tensor t = get(name);
    if (t.sizes().vec() != shape)
        throw Error(fileOf(name) + ": tensor '" + name + "' has shape " + shapeString(t.sizes().vec()) + " but config.json implies " +
                    shapeString(shape) + ".");
    return t;
}

std::vector<std::string> WeightStore::names() const {
    std::vector<std::string> out;
    for (const auto& [n, k] : where_) out.push_back(n);
    return out;
}

std::string WeightStore::fileOf(const std::string& name) const {
    auto it = where_.find(name);
    return it == where_.end() || memory_.count(name) ? dir_ : files_[it->second]->path();
}

void writeFileAtomically(const std::string& path, const std::string& data) {
    const std::string tmp = path + ".part";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error(path + ": cannot write the file (" + std::strerror(errno) + ").");
        out.write(data.data(), static_cast<std::streamsize>(data.size()));
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw Error(path + ": writing failed (disk full?).");
        }
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error(path + ": cannot move the written file into place (" + ec.message() + ").");
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

torch::Tensor readNpy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open the .npy file.");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
    if (hstart + hlen > all.size()) throw Error(path + ": truncated .npy header.");
    const std::string h = all.substr(hstart, hlen);
    auto field = [&](const std::string& key) {
        auto p = h.find("'" + key + "'");
        if (p == std::string::npos) throw Error(path + ": .npy header lacks '" + key + "'.");
        return h.substr(h.find(':', p) + 1);
    };
    std::string descr = field("descr");
    descr = descr.substr(descr.find('\'') + 1);
    descr = descr.substr(0, descr.find('\''));
    if (field("fortran_order").find("True") < field("fortran_order").find(','))
        throw Error(path + ": Fortran-ordered .npy arrays are not supported; save with np.ascontiguousarray.");
    std::string shp = field("shape");
    shp = shp.substr(shp.find('(') + 1, shp.find(')') - shp.find('(') - 1);
    std::vector<int64_t> shape;
    std::stringstream ss(shp);
    std::string tok;
    while (std::getline(ss, tok, ','))
        if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
    torch::ScalarType type;
    if (descr == "<f4") type = torch::kFloat32;
    else if (descr == "<f8") type = torch::kFloat64;
    else if (descr == "<f2") type = torch::kFloat16;
    else if (descr == "<i8") type = torch::kInt64;
    else if (descr == "<i4") type = torch::kInt32;
    else throw Error(path + ": .npy dtype '" + descr + "' is not supported (use float32, float64, float16, int64 or int32).");
    auto t = torch::empty(shape, torch::TensorOptions().dtype(type));
    const size_t n = t.numel() * t.element_size();
    if (hstart + hlen + n != all.size())
        throw Error(path + ": the .npy data has " + std::to_string(all.size() - hstart - hlen) + " bytes but its shape needs " + std::to_string(n) + ".");
    std::memcpy(t.data_ptr(), all.data() + hstart + hlen, n);
    return t;
}

}  // namespace nnscope
