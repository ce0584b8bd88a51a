// SPDX-License-Identifier: MIT
// nnscope_device_bench: one random checkpoint (by default of Llama 3.2 1B's shape: 16 blocks of width 2048, 32 query
// heads over 8 key/value heads of 64, an MLP of 8192, a 128256-token vocabulary, tied embeddings; 1.24 billion
// parameters, 2.5 GB in bfloat16) traced and generated on each device asked (cpu, cuda), in float32 and bfloat16:
// the load time (the weights copied to the device once), the best trace time at each length, greedy generation's
// tokens/s, and the largest difference between each device's logits and the CPU's. bench/gpu_check.sh runs it on a
// machine with a GPU; results: docs/PERFORMANCE.md. Run with --help for the options.
#include "options.h"
#include "core/model/device.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/trace.h"
#include "random_checkpoint.h"

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/types.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

using namespace nnscope;
using bench::now;
using bench::parseCount;
using bench::splitList;
using bench::usageError;
namespace fs = std::filesystem;

namespace {

const char* kUsage =
    "Usage: nnscope_device_bench [options]\n"
    "Times the forward pass and greedy generation of one random checkpoint on each device, and compares every device's\n"
    "logits with the CPU's. Prints a Markdown table (or one JSON document with --json) on stdout.\n\n"
    "  --shape NAME       1b (Llama 3.2 1B's shape, 2.5 GB; the default) or tiny (2 blocks of 64: a check of the program)\n"
    "  --dir DIR          the checkpoint's folder, written there first when it holds none\n"
    "                     (default: $TMPDIR/nnscope-device-bench-SHAPE)\n"
    "  --devices LIST     comma-separated: cpu, cuda, cuda:N (default: cpu,cuda; a device this build or machine\n"
    "                     lacks is reported and skipped)\n"
    "  --dtypes LIST      float32, bfloat16 (default: float32,bfloat16)\n"
    "  --lengths LIST     prompt lengths in tokens (default: 1,128,512)\n"
    "  --generate N       greedy generation: a 32-token prompt then N new tokens; 0 skips it (default: 32)\n"
    "  --repeats R        timed runs per figure, the best is kept (default: 3)\n"
    "  --threads N        CPU threads, 0 = every core (default: 0)\n"
    "  --json             print one JSON document instead of the table\n"
    "  -h, --help         print this and exit\n";

/// Waits until `device` has finished what was queued on it (a GPU computes asynchronously: a time read without this
/// measures the queueing).
void synchronize(const torch::Device& device) {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

/// Deterministic ids spread over the vocabulary.
std::vector<int64_t> tokenIds(int64_t n, int64_t vocab) {
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) ids[static_cast<size_t>(j)] = (j * 7919 + 13) % vocab;
    return ids;
}

/// Writes the random checkpoint of `shape` into `dir` unless it holds one (config.json as Llama's).
void writeCheckpoint(const std::string& dir, const bench::RandomShape& s) {
    if (fs::exists(fs::path(dir) / "model.safetensors")) return;
    fs::create_directories(dir);
    bench::writeRandomLlamaWeights(dir, s);
    const nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", s.hidden},
                              {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
                              {"num_key_value_heads", s.kvHeads}, {"head_dim", s.headDim}, {"vocab_size", s.vocab}, {"rms_norm_eps", 1e-5},
                              {"max_position_embeddings", 131072}, {"rope_theta", 500000.0}, {"tie_word_embeddings", s.tiedLmHead},
                              {"hidden_act", "silu"}, {"torch_dtype", "bfloat16"}};
    std::ofstream(dir + "/config.json") << c.dump(2);
}

}  // namespace

int main(int argc, char** argv) {
    bench::programName() = "nnscope_device_bench";
    std::string shapeName = "1b", dir;
    std::vector<std::string> devices = {"cpu", "cuda"};
    std::vector<torch::ScalarType> dtypes = {torch::kFloat32, torch::kBFloat16};
    std::vector<int64_t> lengths = {1, 128, 512};
    int generate = 32, repeats = 3, threads = 0;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return 0;
        }
        if (a == "--json") {
            json = true;
            continue;
        }
        if (i + 1 >= argc) usageError(a.rfind("--", 0) == 0 ? a + " needs a value" : "unexpected argument '" + a + "'");
        const std::string v = argv[++i];
        if (a == "--shape") shapeName = v;
        else if (a == "--dir") dir = v;
        else if (a == "--devices") devices = splitList(v);
        else if (a == "--generate") generate = static_cast<int>(parseCount(a, v, 0));
        else if (a == "--repeats") repeats = static_cast<int>(parseCount(a, v, 1));
        else if (a == "--threads") threads = static_cast<int>(parseCount(a, v, 0));
        else if (a == "--lengths") {
            lengths.clear();
            for (const std::string& x : splitList(v)) lengths.push_back(parseCount(a, x, 1));
        } else if (a == "--dtypes") {
            dtypes.clear();
            for (const std::string& x : splitList(v)) {
                try {
                    dtypes.push_back(parseDtype(x));
                } catch (const Error& e) {
                    usageError(std::string("--dtypes: ") + e.what());
                }
            }
        } else
            usageError("unknown option '" + a + "'");
    }
    const std::map<std::string, bench::RandomShape> shapes = {
        {"1b", {16, 2048, 32, 8, 64, 8192, 128256, /*tiedLmHead=*/true}},
        {"tiny", {2, 64, 4, 2, 16, 128, 512, /*tiedLmHead=*/true}}};
    if (!shapes.count(shapeName)) usageError("--shape takes 1b or tiny, not '" + shapeName + "'");
    if (devices.empty() || dtypes.empty() || lengths.empty()) usageError("--devices, --dtypes and --lengths need at least one entry");
    const bench::RandomShape& shape = shapes.at(shapeName);
    if (dir.empty()) dir = (fs::temp_directory_path() / ("nnscope-device-bench-" + shapeName)).string();
    configureThreads(threads);
    auto say = [json](const char* fmt, auto... args) {
        if (!json) std::printf(fmt, args...);
        std::fflush(stdout);
    };
    const DeviceSupport& support = deviceSupport();
    nlohmann::json out = {{"shape", shapeName}, {"checkpoint", dir}, {"libtorch", libtorchVersion()}, {"cuda", cudaSummary(support)},
                          {"threads", at::get_num_threads()}, {"runs", nlohmann::json::array()}, {"generate", nlohmann::json::array()},
                          {"skipped", nlohmann::json::array()}};
    say("libtorch %s; CUDA: %s; CPU threads %d\n", libtorchVersion().c_str(), cudaSummary(support).c_str(), at::get_num_threads());
    try {
        double t0 = now();
        writeCheckpoint(dir, shape);
        say("checkpoint %s (%s-shaped, ready in %.1f s)\n\n", dir.c_str(), shapeName.c_str(), now() - t0);
        say("| device | dtype | tokens | load s | trace s | tokens/s | largest logit difference from cpu | largest logit magnitude |\n");
        say("|---|---|---|---|---|---|---|---|\n");
        std::vector<std::string> genLines;
        for (torch::ScalarType dt : dtypes) {
            std::map<int64_t, torch::Tensor> cpuLogits;  // by length: the reference of every other device
            for (const std::string& name : devices) {
                torch::Device device = torch::kCPU;
                try {
                    device = parseDevice(name);
                } catch (const Error& e) {
                    usageError(std::string("--devices: ") + e.what());
                }
                if (const std::string why = deviceUnavailableReason(device, support); !why.empty()) {
                    say("| %s | %s | - | skipped: %s |\n", name.c_str(), dtypeName(dt).c_str(), why.c_str());
                    out["skipped"].push_back({{"device", name}, {"dtype", dtypeName(dt)}, {"why", why}});
                    continue;
                }
                t0 = now();
                auto model = Model::load(dir, LoadOptions().withDtype(dt).withTokenizer(false).withDevice(device));
                synchronize(device);
                const double loadS = now() - t0;
                TraceOptions o;
                o.save = {{Value::Logits, -1}};
                for (int64_t n : lengths) {
                    const Batch b = batchFromIds({tokenIds(n, shape.vocab)});
                    double best = 1e30;
                    torch::Tensor logits;
                    for (int r = 0; r < repeats + 1; ++r) {  // the first run warms up (a GPU's kernels load, caches fill)
                        const double a = now();
                        TraceResult res = trace(*model, b, o);
                        synchronize(device);
                        if (r > 0) best = std::min(best, now() - a);
                        logits = res.value({Value::Logits, -1}).to(torch::kFloat32);
                    }
                    const bool isCpu = device.is_cpu();
                    if (isCpu) cpuLogits[n] = logits;
                    const double diff = !isCpu && cpuLogits.count(n) ? (logits - cpuLogits[n]).abs().max().item<double>() : 0.0;
                    const double peak = logits.abs().max().item<double>();
                    const std::string diffText = isCpu ? "(reference)" : cpuLogits.count(n) ? std::to_string(diff) : "(no cpu run)";
                    say("| %s | %s | %lld | %.2f | %.4f | %.1f | %s | %.2f |\n", deviceName(device).c_str(), dtypeName(dt).c_str(),
                        static_cast<long long>(n), loadS, best, n / best, diffText.c_str(), peak);
                    out["runs"].push_back({{"device", deviceName(device)}, {"dtype", dtypeName(dt)}, {"tokens", n}, {"load_s", loadS},
                                           {"trace_s", best}, {"tokens_per_s", n / best},
                                           {"max_abs_diff_vs_cpu", isCpu || !cpuLogits.count(n) ? nlohmann::json() : nlohmann::json(diff)},
                                           {"max_abs_logit", peak}});
                }
                if (generate > 0) {
                    const std::vector<int64_t> prompt = tokenIds(32, shape.vocab);
                    double best = 1e30;
                    std::vector<int64_t> ids;
                    for (int r = 0; r < repeats + 1; ++r) {
                        const double a = now();
                        ids = generateGreedy(*model, prompt, generate, /*stopAtEos=*/false);
                        synchronize(device);
                        if (r > 0) best = std::min(best, now() - a);
                    }
                    char line[256];
                    std::snprintf(line, sizeof line, "| %s | %s | 32 prompt + %d new | %.3f | %.1f |\n", deviceName(device).c_str(),
                                  dtypeName(dt).c_str(), generate, best, generate / best);
                    genLines.push_back(line);
                    out["generate"].push_back({{"device", deviceName(device)}, {"dtype", dtypeName(dt)}, {"prompt", 32},
                                               {"new_tokens", generate}, {"s", best}, {"tokens_per_s", generate / best}, {"ids", ids}});
                }
            }
        }
        if (!genLines.empty()) {
            say("\n| device | dtype | greedy generation | s | new tokens/s |\n|---|---|---|---|---|\n");
            for (const std::string& l : genLines) say("%s", l.c_str());
        }
    } catch (const std::exception& e) {
        std::cerr << "nnscope_device_bench: " << e.what() << std::endl;
        return 1;
    }
    if (json) std::cout << out.dump(1) << std::endl;
    return 0;
}
