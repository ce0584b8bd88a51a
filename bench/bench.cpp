// SPDX-License-Identifier: MIT
// nnscope_bench: trace time on a random checkpoint of ERNIE-4.5-0.3B's shape (18 layers, hidden 1024, 16 query heads
// of 128 over 2 kv heads, intermediate 3072, vocab 103424), for 1, 128 and 512 tokens, saving nothing and saving every
// standard value, in float32 and bfloat16; tokens/s and achieved GFLOP/s against the machine's measured matrix rate.
// Usage: nnscope_bench [--dir DIR] [--threads N] [--repeats R] [--lengths 1,128,512]. Results: docs/PERFORMANCE.md.
#include "core/model.h"
#include "core/safetensors.h"
#include "core/trace.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

using namespace nnscope;
namespace fs = std::filesystem;

namespace {

constexpr int64_t L = 18, H = 1024, NH = 16, KV = 2, D = 128, I = 3072, V = 103424;

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void makeCheckpoint(const std::string& dir) {
    if (fs::exists(fs::path(dir) / "model.safetensors")) return;
    fs::create_directories(dir);
    torch::manual_seed(0);
    std::vector<std::pair<std::string, torch::Tensor>> t;
    auto rnd = [](std::vector<int64_t> shape, double scale) { return (torch::randn(shape) * scale).to(torch::kBFloat16); };
    t.emplace_back("model.embed_tokens.weight", rnd({V, H}, 0.02));
    t.emplace_back("model.norm.weight", torch::ones({H}).to(torch::kBFloat16));
    for (int64_t i = 0; i < L; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        t.emplace_back(p + "input_layernorm.weight", torch::ones({H}).to(torch::kBFloat16));
        t.emplace_back(p + "post_attention_layernorm.weight", torch::ones({H}).to(torch::kBFloat16));
        t.emplace_back(p + "self_attn.q_proj.weight", rnd({NH * D, H}, 0.03));
        t.emplace_back(p + "self_attn.k_proj.weight", rnd({KV * D, H}, 0.03));
        t.emplace_back(p + "self_attn.v_proj.weight", rnd({KV * D, H}, 0.03));
        t.emplace_back(p + "self_attn.o_proj.weight", rnd({H, NH * D}, 0.02));
        t.emplace_back(p + "mlp.gate_proj.weight", rnd({I, H}, 0.03));
        t.emplace_back(p + "mlp.up_proj.weight", rnd({I, H}, 0.03));
        t.emplace_back(p + "mlp.down_proj.weight", rnd({H, I}, 0.02));
    }
    writeSafetensors(dir + "/model.safetensors", t, {{"format", "pt"}});
    nlohmann::json c = {{"architectures", {"Ernie4_5ForCausalLM"}}, {"model_type", "ernie4_5"}, {"hidden_size", H},
                        {"intermediate_size", I}, {"num_hidden_layers", L}, {"num_attention_heads", NH},
                        {"num_key_value_heads", KV}, {"head_dim", D}, {"vocab_size", V}, {"rms_norm_eps", 1e-5},
                        {"max_position_embeddings", 131072}, {"rope_theta", 500000.0}, {"tie_word_embeddings", true},
                        {"use_bias", false}, {"hidden_act", "silu"}, {"torch_dtype", "bfloat16"}};
    std::ofstream(dir + "/config.json") << c.dump(2);
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

/// FLOPs of one forward over `s` tokens: every linear map (2 per weight per token, lm_head included) plus the eager
/// attention's two [s, s] products per head (q·kᵀ and p·v, 2·s·s·D each, causal half not skipped).
double forwardFlops(int64_t s) {
    const double linear = L * (double(H) * NH * D * 2 + double(H) * KV * D * 2 + 3.0 * H * I) + double(H) * V;
    const double attention = L * NH * 4.0 * s * s * D;
    return 2.0 * linear * s + attention;
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = (fs::temp_directory_path() / "nnscope-bench-ernie-0.3b").string();
    int threads = 0, repeats = 3;
    std::vector<int64_t> lengths = {1, 128, 512};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--lengths")) {
            lengths.clear();
            std::stringstream ss(argv[i + 1]);
            for (std::string x; std::getline(ss, x, ',');) lengths.push_back(std::stoll(x));
        }
    }
    configureThreads(threads);
    std::printf("threads %d; checkpoint %s\n", at::get_num_threads(), dir.c_str());
    double t0 = now();
    makeCheckpoint(dir);
    std::printf("random ERNIE-4.5-0.3B-shaped checkpoint ready in %.1f s\n", now() - t0);
    const double peak32 = matmulGflops(torch::kFloat32, 2048), peak16 = matmulGflops(torch::kBFloat16, 2048);
    std::printf("matmul rate (torch::linear, 2048^3): float32 %.1f GFLOP/s, bfloat16 %.1f GFLOP/s\n\n", peak32, peak16);
    std::printf("| dtype | tokens | saved | load s | trace s | tokens/s | GFLOP/s | %% of matmul rate | saved MB |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    for (torch::ScalarType dt : {torch::kFloat32, torch::kBFloat16}) {
        t0 = now();
        auto model = Model::load(dir, LoadOptions().withDtype(dt).withTokenizer(false));
        const double loadS = now() - t0;
        for (int64_t s : lengths) {
            std::vector<int64_t> ids(static_cast<size_t>(s));
            for (int64_t j = 0; j < s; ++j) ids[static_cast<size_t>(j)] = (j * 7919 + 13) % V;
            const Batch b = batchFromIds({ids});
            for (bool saveAll : {false, true}) {
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
                const double gf = forwardFlops(s) / best / 1e9;
                const double peak = dt == torch::kFloat32 ? peak32 : peak16;
                std::printf("| %s | %lld | %s | %.2f | %.3f | %.1f | %.1f | %.0f%% | %.0f |\n", dtypeName(dt).c_str(),
                            static_cast<long long>(s), saveAll ? "every value" : "nothing", loadS, best, s / best, gf,
                            100 * gf / peak, mb);
                std::fflush(stdout);
            }
        }
    }
    // Greedy generation with the key/value cache: a 32-token prompt, then 32 new tokens one at a time.
    std::printf("\n| dtype | generate | s | new tokens/s |\n|---|---|---|---|\n");
    for (torch::ScalarType dt : {torch::kFloat32, torch::kBFloat16}) {
        auto model = Model::load(dir, LoadOptions().withDtype(dt).withTokenizer(false));
        std::vector<int64_t> ids(32);
        for (int64_t j = 0; j < 32; ++j) ids[static_cast<size_t>(j)] = (j * 7919 + 13) % V;
        double best = 1e9;
        for (int r = 0; r < repeats; ++r) {
            const double a = now();
            generateGreedy(*model, ids, 32, /*stopAtEos=*/false);
            best = std::min(best, now() - a);
        }
        std::printf("| %s | 32 prompt + 32 new | %.3f | %.1f |\n", dtypeName(dt).c_str(), best, 32 / best);
    }
    return 0;
}
