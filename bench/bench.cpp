// SPDX-License-Identifier: MIT
// nnscope_bench: trace time on a checkpoint (by default a random one of ERNIE-4.5-0.3B's shape: 18 layers, hidden 1024,
// 16 query heads of 128 over 2 kv heads, intermediate 3072, vocab 103424, stored in bfloat16), for 1, 128 and 512
// tokens, saving nothing and saving every standard value, in each dtype asked; tokens/s and achieved GFLOP/s against
// the machine's measured matrix rate; the weight-read rate of a one-token pass against a plain memory copy measured in
// the same run; greedy generation with the key/value cache. Run with --help for the options. Results:
// docs/PERFORMANCE.md (bench/compare_transformers.py runs it beside transformers).
#include "options.h"
#include "core/model/allocator.h"
#include "core/model/compute_dtype.h"
#include "core/model/error.h"
#include "core/model/gemv.h"
#include "core/model/model.h"
#include "core/run/openblas.h"
#include "core/io/safetensors.h"
#include "random_checkpoint.h"
#include "core/run/trace.h"

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/types.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using namespace nnscope;
using bench::now;
using bench::parseCount;
using bench::splitList;
using bench::usageError;
namespace fs = std::filesystem;

namespace {

constexpr int64_t L = bench::kErnie03bShape.layers, H = bench::kErnie03bShape.hidden, NH = bench::kErnie03bShape.heads,
                  KV = bench::kErnie03bShape.kvHeads, D = bench::kErnie03bShape.headDim, I = bench::kErnie03bShape.intermediate,
                  V = bench::kErnie03bShape.vocab;

const char* kUsage =
    "Usage: nnscope_bench [options]\n"
    "Times nnscope's forward pass; prints Markdown tables (or one JSON document with --json) on stdout.\n\n"
    "  --dir DIR          checkpoint folder; a folder without model.safetensors (or its index) gets a random\n"
    "                     ERNIE-4.5-0.3B-shaped checkpoint (0.7 GB, bfloat16) written there first\n"
    "                     (default: $TMPDIR/nnscope-bench-ernie-0.3b)\n"
    "  --dtypes LIST      compute dtypes, comma-separated: auto, float32, bfloat16 (default: float32,bfloat16)\n"
    "  --lengths LIST     prompt lengths in tokens, comma-separated (default: 1,128,512)\n"
    "  --repeats R        timed runs per figure, the best is kept (default: 3)\n"
    "  --threads N        libtorch intra-op threads, 0 = every core (default: 0)\n"
    "  --generate N       greedy generation: a 32-token prompt then N new tokens; 0 skips it (default: 32)\n"
    "  --saved WHAT       what each trace saves: nothing, every (every standard value) or both (default: both)\n"
    "  --bf16-dot KERNEL  one-token bfloat16 products: native (AVX512-BF16's VDPBF16PS, where the CPU has it) or\n"
    "                     widening (bfloat16 widened to float32, any x86-64), or libtorch (torch::linear: oneDNN,\n"
    "                     what they replace) (default: native where available)\n"
    "  --profile PREFIX   after the timed passes of each prompt, one more pass under libtorch's profiler, written\n"
    "                     as a Chrome trace to PREFIX-DTYPE-TOKENS-nothing.json or -every.json (every ATen op and\n"
    "                     nnscope's own kernels, with their times; chrome://tracing or Perfetto opens it)\n"
    "  --json             print one JSON document instead of the tables\n"
    "  -h, --help         print this and exit\n";

void makeCheckpoint(const std::string& dir) { bench::writeRandomErnieCheckpoint(dir); }

/// Plain memory copy rate: memcpy of a buffer larger than the caches (1 GiB, or four times the last-level cache),
/// best of five after a warm-up that also faults the pages in. Returns bytes copied per second (each byte is read once
/// and written once).
double memcpyRate() {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t n = std::max<size_t>(size_t(1) << 30, l3 > 0 ? 4 * static_cast<size_t>(l3) : 0);
    std::vector<char> a(n, 1), b(n, 2);
    std::memcpy(b.data(), a.data(), n);
    double best = 1e9;
    for (int r = 0; r < 5; ++r) {
        const double t0 = now();
        std::memcpy(b.data(), a.data(), n);
        best = std::min(best, now() - t0);
    }
    return double(n) / best;
}

/// Matrix-multiply rate of this machine through the op the engine's linear maps use (torch::linear: x · Wᵀ, which
/// in bfloat16 goes to oneDNN while torch::mm may not): [n, n] x [n, n]ᵀ, best of five after a warm-up.
double matmulGflops(torch::ScalarType dt, int64_t n) {
    c10::InferenceMode g;
    auto a = torch::randn({n, n}).to(dt), b = torch::randn({n, n}).to(dt);
    torch::linear(a, b);
    double best = 1e9;
    for (int r = 0; r < 5; ++r) {
        const double t0 = now();
        torch::linear(a, b);
        best = std::min(best, now() - t0);
    }
    return 2.0 * n * n * n / best / 1e9;
}

/// What a one-token pass reads and computes, from the loaded weights: every projection matrix and lm_head.
struct Shape {
    double linearParams = 0;  ///< elements of every projection matrix and of lm_head
    double weightBytes = 0;   ///< the same in the compute dtype's bytes: what one token's pass reads
    int64_t layers = 0, heads = 0, qkHeadDim = 0, headDim = 0, vocab = 0;
};

Shape shapeOf(const Model& m) {
    Shape s;
    auto add = [&s](const torch::Tensor& t) {
        if (t.defined() && t.dim() == 2) {
            s.linearParams += double(t.numel());
            s.weightBytes += double(t.numel() * t.element_size());
        }
    };
    for (int i = 0; i < m.config().numLayers; ++i) {
        const LayerWeights& w = m.layer(i);
        for (Module mod : {Module::QProj, Module::KProj, Module::VProj, Module::QkvProj, Module::OProj, Module::GateProj, Module::UpProj,
                           Module::GateUpProj, Module::DownProj})
            add(w[mod].weight);
    }
    add(m.lmHead());
    const ModelConfig& c = m.config();
    s.layers = c.numLayers;
    s.heads = c.numHeads;
    s.qkHeadDim = c.qkHeadDim();
    s.headDim = c.headDim;
    s.vocab = c.vocabSize;
    return s;
}

/// FLOPs of one forward over `n` tokens: every linear map (2 per weight per token, lm_head included) plus the eager
/// attention's two [n, n] products per head (q·kᵀ and p·v, causal half not skipped).
double forwardFlops(const Shape& s, int64_t n) {
    return 2.0 * s.linearParams * n + s.layers * s.heads * 2.0 * n * n * (s.qkHeadDim + s.headDim);
}

std::vector<int64_t> tokenIds(int64_t n, int64_t vocab) {
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) ids[static_cast<size_t>(j)] = (j * 7919 + 13) % vocab;
    return ids;
}

}  // namespace

int main(int argc, char** argv) {
    bench::programName() = "nnscope_bench";
    restartWithOpenBlasCoreType(argv);  // as nnscope does: OpenBLAS's own kernels for this CPU, not its generic ones
    useHugePageCpuAllocator();          // as nnscope does (NNSCOPE_HUGE_PAGES=0 keeps libtorch's allocator, to compare)
    std::string dir = (fs::temp_directory_path() / "nnscope-bench-ernie-0.3b").string();
    int threads = 0, repeats = 3, generate = 32;
    bool json = false;
    std::string profilePrefix;
    std::vector<int64_t> lengths = {1, 128, 512};
    std::vector<bool> saveds = {false, true};  // save nothing, save every standard value
    std::vector<std::optional<torch::ScalarType>> dtypes = {torch::kFloat32, torch::kBFloat16};
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
        if (a != "--dir" && a != "--dtypes" && a != "--lengths" && a != "--repeats" && a != "--threads" && a != "--generate" &&
            a != "--bf16-dot" && a != "--saved" && a != "--profile")
            usageError("unknown option '" + a + "'");
        if (i + 1 >= argc) usageError(a + " needs a value");
        const std::string v = argv[++i];
        if (a == "--dir") {
            if (v.empty()) usageError("--dir needs a folder");
            dir = v;
        } else if (a == "--profile") {
            if (v.empty()) usageError("--profile needs a file name prefix");
            profilePrefix = v;
        } else if (a == "--threads") {
            threads = static_cast<int>(parseCount(a, v, 0));
        } else if (a == "--repeats") {
            repeats = static_cast<int>(parseCount(a, v, 1));
        } else if (a == "--bf16-dot") {
            if (v != "native" && v != "widening" && v != "libtorch")
                usageError("--bf16-dot takes native, widening or libtorch, not '" + v + "'");
            try {
                setBf16DotKernel(v == "native"     ? Bf16DotKernel::Avx512Bf16
                                 : v == "widening" ? Bf16DotKernel::Widening
                                                   : Bf16DotKernel::Libtorch);
            } catch (const Error& e) {
                usageError(std::string("--bf16-dot: ") + e.what());
            }
        } else if (a == "--saved") {
            if (v != "nothing" && v != "every" && v != "both") usageError("--saved takes nothing, every or both, not '" + v + "'");
            saveds = v == "nothing" ? std::vector<bool>{false} : v == "every" ? std::vector<bool>{true} : std::vector<bool>{false, true};
        } else if (a == "--generate") {
            generate = static_cast<int>(parseCount(a, v, 0));
        } else if (a == "--lengths") {
            lengths.clear();
            for (const std::string& x : splitList(v)) lengths.push_back(parseCount(a, x, 1));
            if (lengths.empty()) usageError("--lengths needs at least one length");
        } else {  // --dtypes
            dtypes.clear();
            for (const std::string& x : splitList(v)) {
                try {
                    dtypes.push_back(parseDtypeRequest(x));
                } catch (const Error& e) {
                    usageError(std::string("--dtypes: ") + e.what());
                }
            }
            if (dtypes.empty()) usageError("--dtypes needs at least one dtype");
        }
    }
    configureThreads(threads);
    nlohmann::json out = {{"threads", at::get_num_threads()}, {"checkpoint", dir}, {"cpu_native_bfloat16", cpuHasNativeBfloat16()},
                          {"runs", nlohmann::json::array()}, {"generate", nlohmann::json::array()}};
    auto say = [json](const char* fmt, auto... args) {
        if (!json) std::printf(fmt, args...);
        std::fflush(stdout);
    };
    say("threads %d; checkpoint %s; CPU with native bfloat16: %s\n", at::get_num_threads(), dir.c_str(),
        cpuHasNativeBfloat16() ? "yes" : "no");
    double t0 = now();
    const bool stored = fs::exists(fs::path(dir) / "model.safetensors") || fs::exists(fs::path(dir) / "model.safetensors.index.json");
    if (!stored) {
        makeCheckpoint(dir);
        say("random ERNIE-4.5-0.3B-shaped checkpoint written in %.1f s\n", now() - t0);
    }
    say("OpenBLAS core: %s%s\n", openBlasCoreName()[0] ? openBlasCoreName() : "(not OpenBLAS)",
        std::getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE set)" : "");
    out["openblas_core"] = openBlasCoreName();
    out["blas"] = blasSummary();
    out["bf16_dot"] = bf16DotKernelName(bf16DotKernel());
    out["cpu_allocator"] = cpuAllocatorSummary();
    // A trace that asks for no attention pattern: torch::scaled_dot_product_attention on libtorch >= 2, else eager.
    const bool sdpa = scaledDotProductAttentionEnabled();
    out["attention_without_patterns"] = sdpa ? "sdpa" : "eager";
    say("BLAS: %s\none-token bfloat16 products: %s\nattention when no pattern is saved: %s\nCPU tensors: %s\n",
        blasSummary().c_str(), bf16DotKernelName(bf16DotKernel()), sdpa ? "scaled_dot_product_attention" : "eager",
        cpuAllocatorSummary().c_str());
    const double copy = memcpyRate();
    out["memcpy_gb_s"] = copy / 1e9;
    say("memory copy (memcpy, 1 GiB or more): %.1f GB/s copied (%.1f GB/s of reads and writes)\n", copy / 1e9, 2 * copy / 1e9);
    const double peak32 = matmulGflops(torch::kFloat32, 2048), peak16 = matmulGflops(torch::kBFloat16, 2048);
    out["matmul_gflops"] = {{"float32", peak32}, {"bfloat16", peak16}};
    say("matmul rate (torch::linear, 2048^3): float32 %.1f GFLOP/s, bfloat16 %.1f GFLOP/s\n\n", peak32, peak16);
    say("| dtype | tokens | saved | load s | trace s | tokens/s | GFLOP/s | %% of matmul rate | weights read GB/s | saved MB |\n");
    say("|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> notes;
    try {
        for (const auto& requested : dtypes) {
            t0 = now();
            auto model = Model::load(dir, LoadOptions().withDtype(requested).withTokenizer(false));
            const double loadS = now() - t0;
            for (const auto& n : model->notes()) notes.push_back(n);
            const Shape shape = shapeOf(*model);
            const torch::ScalarType dt = model->dtype();
            const std::string label = requested ? dtypeName(dt) : "auto (" + dtypeName(dt) + ")";
            for (int64_t s : lengths) {
                const Batch b = batchFromIds({tokenIds(s, shape.vocab)});
                for (bool saveAll : saveds) {
                    TraceOptions o;
                    if (saveAll) o.save = allValueKeys(*model, false);
                    double best = 1e9, mb = 0;
                    for (int r = 0; r < repeats; ++r) {
                        const double a = now();
                        TraceResult res = trace(*model, b, o);
                        best = std::min(best, now() - a);
                        mb = 0;
                        for (const auto& [k, t] : res.values) mb += double(t.numel() * t.element_size()) / 1e6;
                    }
                    if (!profilePrefix.empty()) {  // one more pass, untimed: the profiler's own cost stays out of the figures
                        const std::string file =
                            profilePrefix + "-" + dtypeName(dt) + "-" + std::to_string(s) + (saveAll ? "-every" : "-nothing") + ".json";
                        torch::autograd::profiler::RecordProfile profile(file);  // writes the file when it goes out of scope
                        trace(*model, b, o);
                    }
                    const double gf = forwardFlops(shape, s) / best / 1e9;
                    const double peak = dt == torch::kFloat32 ? peak32 : peak16;
                    // A one-token pass reads every weight once and does little else: its time is the time to read them
                    // (compare with the memcpy rate). With more tokens the products reuse what they read: not shown.
                    const double readRate = shape.weightBytes / best / 1e9;
                    const std::string read = s == 1 ? std::to_string(readRate).substr(0, std::to_string(readRate).find('.') + 2) : "-";
                    say("| %s | %lld | %s | %.2f | %.3f | %.1f | %.1f | %.0f%% | %s | %.0f |\n", label.c_str(),
                        static_cast<long long>(s), saveAll ? "every value" : "nothing", loadS, best, s / best, gf, 100 * gf / peak,
                        read.c_str(), mb);
                    out["runs"].push_back({{"dtype", dtypeRequestName(requested)}, {"compute_dtype", dtypeName(dt)},
                                           {"tokens", s}, {"saved", saveAll ? "every value" : "nothing"}, {"load_s", loadS},
                                           {"trace_s", best}, {"gflops", gf}, {"weights_gb", shape.weightBytes / 1e9},
                                           {"weight_read_gb_s", readRate}, {"saved_mb", mb}});
                }
            }
        }
        if (generate > 0) {
            // Greedy generation with the key/value cache: a 32-token prompt, then `generate` new tokens one at a time.
            say("\n| dtype | generate | s | new tokens/s |\n|---|---|---|---|\n");
            for (const auto& requested : dtypes) {
                auto model = Model::load(dir, LoadOptions().withDtype(requested).withTokenizer(false));
                const std::vector<int64_t> ids = tokenIds(32, model->config().vocabSize);
                double best = 1e9;
                for (int r = 0; r < repeats; ++r) {
                    const double a = now();
                    generateGreedy(*model, ids, generate, /*stopAtEos=*/false);
                    best = std::min(best, now() - a);
                }
                const std::string label = requested ? dtypeName(model->dtype()) : "auto (" + dtypeName(model->dtype()) + ")";
                say("| %s | 32 prompt + %d new | %.3f | %.1f |\n", label.c_str(), generate, best, generate / best);
                out["generate"].push_back({{"dtype", dtypeRequestName(requested)}, {"compute_dtype", dtypeName(model->dtype())},
                                           {"prompt", 32}, {"new_tokens", generate}, {"s", best}, {"tokens_per_s", generate / best}});
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "nnscope_bench: " << e.what() << std::endl;
        return 1;
    }
    for (const auto& n : notes) say("\nnote: %s\n", n.c_str());
    out["notes"] = notes;
    if (json) std::cout << out.dump(1) << std::endl;
    return 0;
}
