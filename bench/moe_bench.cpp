// SPDX-License-Identifier: MIT
// nnscope_moe_bench: the memory a mixture of experts takes at its real size. Writes a random checkpoint of OLMoE-1B-7B's
// shape (16 blocks of width 2048, 64 experts of 1024 per block, 8 per token, a 50304-token vocabulary: 6.9 billion
// parameters, 13.8 GB in bfloat16, one tensor per expert as the hub files store them) or of gpt-oss-20b's (24 blocks
// of width 2880, 32 experts of 2880 per block in MXFP4, 4 per token, a 201088-token vocabulary: 12.8 GB), sharded
// with a model.safetensors.index.json, then loads it and traces prompts of the given lengths, printing the load time,
// each trace's time and the process's peak resident memory, split into the mapped file's pages (RssFile: the page
// cache, given back under pressure) and the process's own memory (RssAnon). Run with --help for the options; results
// in docs/PERFORMANCE.md. Not used by nnscope itself.
#include "options.h"
#include "core/analysis/routing.h"
#include "core/io/safetensors.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/trace.h"

#include <nlohmann/json.hpp>

#include <torch/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace nnscope;
using bench::now;
using bench::parseCount;
using bench::splitList;
using bench::usageError;
namespace fs = std::filesystem;

namespace {

const char* kUsage =
    "Usage: nnscope_moe_bench [options]\n"
    "Writes a random mixture-of-experts checkpoint of a real model's shape (once), loads it, traces prompts, and prints\n"
    "the times and the peak resident memory (the mapped file's pages and the process's own memory apart).\n\n"
    "  --shape NAME      olmoe (OLMoE-1B-7B, bfloat16 experts one tensor each, 13.8 GB; the default), gpt-oss-20b\n"
    "                    (MXFP4 experts, 12.8 GB) or tiny-olmoe / tiny-gpt-oss (a few MB: a check of the program)\n"
    "  --dir DIR         the checkpoint's folder, written there first when it holds none\n"
    "                    (default: $TMPDIR/nnscope-moe-bench-SHAPE)\n"
    "  --lengths LIST    prompt lengths in tokens, comma-separated (default: 16,128)\n"
    "  --dtype NAME      bfloat16 (the default), float32, or auto (what nnscope chooses: the stored dtype where the CPU\n"
    "                    multiplies it natively or a float32 copy would not fit, float32 elsewhere)\n"
    "  --threads N       CPU threads, 0 = every core (default: 0)\n"
    "  -h, --help        print this and exit\n";

/// Resident memory from /proc/self/status in bytes: {VmHWM, RssFile, RssAnon, VmRSS}.
struct Resident {
    int64_t peak = 0, file = 0, anon = 0, now = 0;
};
Resident resident() {
    std::ifstream in("/proc/self/status");
    Resident r;
    for (std::string line; std::getline(in, line);) {
        auto kb = [&](const char* key, int64_t& v) {
            if (line.rfind(key, 0) == 0) v = std::stoll(line.substr(std::string(key).size())) * 1024;
        };
        kb("VmHWM:", r.peak);
        kb("RssFile:", r.file);
        kb("RssAnon:", r.anon);
        kb("VmRSS:", r.now);
    }
    return r;
}
double gb(int64_t bytes) { return static_cast<double>(bytes) / 1e9; }

/// The sizes of a mixture.
struct MoeShape {
    std::string family;  ///< "olmoe" or "gpt_oss"
    int64_t layers, hidden, heads, kvHeads, headDim, experts, topK, expertWidth, vocab;
};

/// One shard: its tensors, written and dropped before the next is made (at most one block in memory).
class ShardWriter {
public:
    ShardWriter(std::string dir, int shards) : dir_(std::move(dir)), shards_(shards) {}
    void add(const std::string& name, torch::Tensor t) {
        bytes_ += static_cast<int64_t>(t.numel() * t.element_size());
        tensors_.emplace_back(name, std::move(t));
    }
    void flush() {
        char file[64];
        std::snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", ++written_, shards_);
        for (const auto& [name, t] : tensors_) map_[name] = file;
        writeSafetensors(dir_ + "/" + file, tensors_, {{"format", "pt"}});
        tensors_.clear();
    }
    void finish() {
        const nlohmann::json index = {{"metadata", {{"total_size", bytes_}}}, {"weight_map", map_}};
        std::ofstream(dir_ + "/model.safetensors.index.json") << index.dump(1);
    }
    int64_t bytes() const { return bytes_; }

private:
    std::string dir_;
    int shards_, written_ = 0;
    int64_t bytes_ = 0;
    std::vector<std::pair<std::string, torch::Tensor>> tensors_;
    nlohmann::json map_ = nlohmann::json::object();
};

torch::Tensor normal(std::vector<int64_t> shape, double scale) { return (torch::randn(shape) * scale).to(torch::kBFloat16); }

/// Writes the checkpoint of `s` into `dir` (created): config.json as the family's hub config, one shard per block and
/// one for the embeddings, the index. The weights are normal(0, 0.02) (OLMoE) or random MXFP4 codes with scales
/// 2^-7..2^-5 (gpt-oss); norms are ones. Returns the bytes written.
int64_t writeCheckpoint(const std::string& dir, const MoeShape& s) {
    fs::create_directories(dir);
    torch::manual_seed(0);
    const bool oss = s.family == "gpt_oss";
    nlohmann::json c = {{"model_type", s.family}, {"hidden_size", s.hidden}, {"num_hidden_layers", s.layers},
                        {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kvHeads}, {"head_dim", s.headDim},
                        {"vocab_size", s.vocab}, {"num_experts_per_tok", s.topK}, {"intermediate_size", s.expertWidth},
                        {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}, {"max_position_embeddings", 4096}};
    if (oss) {
        c["architectures"] = {"GptOssForCausalLM"};
        c["num_local_experts"] = s.experts;
        c["sliding_window"] = 128;
        c["attention_bias"] = true;
        c["rms_norm_eps"] = 1e-5;
        nlohmann::json types = nlohmann::json::array();
        for (int64_t i = 0; i < s.layers; ++i) types.push_back(i % 2 ? "full_attention" : "sliding_attention");
        c["layer_types"] = types;
        c["quantization_config"] = {{"quant_method", "mxfp4"}};
    } else {
        c["architectures"] = {"OlmoeForCausalLM"};
        c["num_experts"] = s.experts;
        c["rms_norm_eps"] = 1e-5;
        c["rope_theta"] = 10000.0;
        c["norm_topk_prob"] = false;
        c["pad_token_id"] = 1;
        c["eos_token_id"] = 50279 % s.vocab;
    }
    ShardWriter w(dir, static_cast<int>(s.layers) + 1);
    w.add("model.embed_tokens.weight", normal({s.vocab, s.hidden}, 0.02));
    w.add("lm_head.weight", normal({s.vocab, s.hidden}, 0.02));
    w.add("model.norm.weight", torch::ones({s.hidden}).to(torch::kBFloat16));
    w.flush();
    const int64_t Q = s.heads * s.headDim, K = s.kvHeads * s.headDim, H = s.hidden, I = s.expertWidth, E = s.experts;
    for (int64_t i = 0; i < s.layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        w.add(p + "input_layernorm.weight", torch::ones({H}).to(torch::kBFloat16));
        w.add(p + "post_attention_layernorm.weight", torch::ones({H}).to(torch::kBFloat16));
        w.add(p + "self_attn.q_proj.weight", normal({Q, H}, 0.02));
        w.add(p + "self_attn.k_proj.weight", normal({K, H}, 0.02));
        w.add(p + "self_attn.v_proj.weight", normal({K, H}, 0.02));
        w.add(p + "self_attn.o_proj.weight", normal({H, Q}, 0.02));
        if (oss) {
            for (const char* proj : {"q_proj", "k_proj", "v_proj"})
                w.add(p + "self_attn." + proj + ".bias", normal({std::string(proj) == "q_proj" ? Q : K}, 0.02));
            w.add(p + "self_attn.o_proj.bias", normal({H}, 0.02));
            w.add(p + "self_attn.sinks", normal({s.heads}, 1.0));
            w.add(p + "mlp.router.weight", normal({E, H}, 0.02));
            w.add(p + "mlp.router.bias", normal({E}, 0.02));
            // MXFP4: two e2m1 codes per byte (any byte is a pair of finite values), one e8m0 exponent per 32 inputs
            const auto codes = [](std::vector<int64_t> shape) { return torch::randint(0, 256, shape, torch::kUInt8); };
            const auto scales = [](std::vector<int64_t> shape) { return torch::randint(120, 123, shape, torch::kUInt8); };
            w.add(p + "mlp.experts.gate_up_proj_blocks", codes({E, 2 * I, H / 32, 16}));
            w.add(p + "mlp.experts.gate_up_proj_scales", scales({E, 2 * I, H / 32}));
            w.add(p + "mlp.experts.gate_up_proj_bias", normal({E, 2 * I}, 0.02));
            w.add(p + "mlp.experts.down_proj_blocks", codes({E, H, I / 32, 16}));
            w.add(p + "mlp.experts.down_proj_scales", scales({E, H, I / 32}));
            w.add(p + "mlp.experts.down_proj_bias", normal({E, H}, 0.02));
        } else {
            w.add(p + "self_attn.q_norm.weight", torch::ones({Q}).to(torch::kBFloat16));
            w.add(p + "self_attn.k_norm.weight", torch::ones({K}).to(torch::kBFloat16));
            w.add(p + "mlp.gate.weight", normal({E, H}, 0.02));
            for (int64_t e = 0; e < E; ++e) {
                const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
                w.add(x + "gate_proj.weight", normal({I, H}, 0.02));
                w.add(x + "up_proj.weight", normal({I, H}, 0.02));
                w.add(x + "down_proj.weight", normal({H, I}, 0.02));
            }
        }
        w.flush();
    }
    w.finish();
    std::ofstream(dir + "/config.json") << c.dump(2);  // last: a folder with a config is a finished checkpoint
    return w.bytes();
}

}  // namespace

int main(int argc, char** argv) {
    bench::programName() = "nnscope_moe_bench";
    std::string shapeName = "olmoe", dir;
    std::vector<int64_t> lengths = {16, 128};
    std::optional<torch::ScalarType> dtype = torch::kBFloat16;
    int threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return 0;
        }
        if (i + 1 >= argc) usageError(a.rfind("--", 0) == 0 ? a + " needs a value" : "unexpected argument '" + a + "'");
        const std::string v = argv[++i];
        if (a == "--shape") shapeName = v;
        else if (a == "--dir") dir = v;
        else if (a == "--threads") threads = static_cast<int>(parseCount(a, v, 0));
        else if (a == "--lengths") {
            lengths.clear();
            for (const std::string& x : splitList(v)) lengths.push_back(parseCount(a, x, 1));
        } else if (a == "--dtype") {
            try {
                dtype = parseDtypeRequest(v);
            } catch (const Error& e) {
                usageError(std::string("--dtype: ") + e.what());
            }
        } else
            usageError("unknown option '" + a + "'");
    }
    const std::map<std::string, MoeShape> shapes = {
        {"olmoe", {"olmoe", 16, 2048, 16, 16, 128, 64, 8, 1024, 50304}},
        {"gpt-oss-20b", {"gpt_oss", 24, 2880, 64, 8, 64, 32, 4, 2880, 201088}},
        {"tiny-olmoe", {"olmoe", 2, 64, 4, 4, 16, 8, 2, 32, 512}},
        {"tiny-gpt-oss", {"gpt_oss", 2, 64, 4, 2, 16, 4, 2, 64, 512}}};
    if (!shapes.count(shapeName)) usageError("--shape takes olmoe, gpt-oss-20b, tiny-olmoe or tiny-gpt-oss, not '" + shapeName + "'");
    if (lengths.empty()) usageError("--lengths needs at least one length");
    const MoeShape& shape = shapes.at(shapeName);
    if (dir.empty()) dir = (fs::temp_directory_path() / ("nnscope-moe-bench-" + shapeName)).string();
    configureThreads(threads);
    try {
        if (!fs::exists(fs::path(dir) / "config.json")) {
            const double t0 = now();
            const int64_t bytes = writeCheckpoint(dir, shape);
            std::printf("wrote %s: %.2f GB in %.0f s\n", dir.c_str(), gb(bytes), now() - t0);
        }
        int64_t fileBytes = 0;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".safetensors") fileBytes += static_cast<int64_t>(e.file_size());
        {
            std::ofstream reset("/proc/self/clear_refs");  // VmHWM from here (Linux >= 4.0)
            reset << "5";
        }
        const Resident start = resident();  // the libraries (libtorch's are mapped files too) and the allocator
        const double t0 = now();
        auto model = Model::load(dir, LoadOptions().withDtype(dtype));
        const double loadS = now() - t0;
        const Resident loaded = resident();
        std::printf("%s-shaped checkpoint, %.2f GB of safetensors, computed in %s (--dtype %s), %d threads\n", shapeName.c_str(),
                    gb(fileBytes), dtypeName(model->dtype()).c_str(), dtype ? dtypeName(*dtype).c_str() : "auto", at::get_num_threads());
        for (const std::string& note : model->notes()) std::printf("note: %s\n", note.c_str());
        std::printf("before the load: resident %.2f GB (mapped files %.2f GB: the libraries); the figures below are above it\n",
                    gb(start.now), gb(start.file));
        std::printf("load: %.1f s; resident after load +%.2f GB (mapped checkpoint +%.2f GB, own +%.2f GB)\n\n", loadS,
                    gb(loaded.now - start.now), gb(loaded.file - start.file), gb(loaded.anon - start.anon));
        std::printf("| tokens | saved | trace s | peak resident since the load began, GB | mapped file pages now, GB | own memory now, GB |\n"
                    "|---|---|---|---|---|---|\n");
        for (int64_t n : lengths) {
            std::vector<int64_t> ids(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) ids[static_cast<size_t>(j)] = (j * 7919 + 13) % shape.vocab;
            const Batch batch = batchFromIds({ids});
            for (const bool routing : {false, true}) {
                TraceOptions o;
                o.save = {{Value::Logits, -1}};
                if (routing)
                    for (const ValueKey& k : routingValueKeys(*model)) o.save.push_back(k);
                const double a = now();
                const TraceResult r = trace(*model, batch, o);
                const double s = now() - a;
                const Resident after = resident();
                if (!torch::isfinite(r.value({Value::Logits, -1})).all().item<bool>()) std::printf("(non-finite logits)\n");
                std::printf("| %lld | %s | %.2f | %.2f | %.2f | %.2f |\n", static_cast<long long>(n),
                            routing ? "logits + every block's routing values" : "logits", s, gb(after.peak - start.now),
                            gb(after.file - start.file), gb(after.anon - start.anon));
            }
        }
    } catch (const Error& e) {
        std::cerr << "nnscope_moe_bench: " << e.what() << std::endl;
        return 1;
    }
    return 0;
}
