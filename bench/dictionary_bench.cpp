// SPDX-License-Identifier: MIT
// What a sparse dictionary costs beside a trace (a program, not a test; figures in docs/PERFORMANCE.md): on the
// benchmark's random ERNIE-4.5-0.3B-shaped checkpoint (18 blocks, width 1024), a random SAELens jumprelu SAE at
// layers.8.layer_output, 16k and 262k features wide (float32, as the published ones). It times, best of R, side by side
// in one run: a 512-token trace that saves the site, the 16k dictionary on those 512 positions, opening the 262k one
// (loadDictionary + attach: mapped, not read), and a 128-token trace with the 262k dictionary's top features.
#include "random_checkpoint.h"

#include "core/io/dictionary.h"
#include "core/io/safetensors.h"
#include "core/run/features.h"
#include "core/run/trace.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace nnscope;
namespace fs = std::filesystem;

namespace {

constexpr int64_t H = bench::kErnie03bShape.hidden, V = bench::kErnie03bShape.vocab;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// A random SAELens jumprelu SAE of `width` features at blocks.8.hook_resid_post, float32, in `dir`.
void makeDictionary(const std::string& dir, int64_t width) {
    if (fs::exists(fs::path(dir) / "sae_weights.safetensors")) return;
    fs::create_directories(dir);
    torch::manual_seed(1);
    const nlohmann::json cfg = {{"architecture", "jumprelu"}, {"d_in", H}, {"d_sae", width}, {"dtype", "float32"},
                                {"apply_b_dec_to_input", true}, {"normalize_activations", "none"},
                                {"metadata", {{"hook_name", "blocks.8.hook_resid_post"}, {"model_name", "nnscope-bench"}}}};
    std::ofstream(dir + "/cfg.json") << cfg.dump(2);
    writeSafetensors(dir + "/sae_weights.safetensors",
                     {{"W_enc", torch::randn({H, width}) * 0.03}, {"W_dec", torch::randn({width, H}) * 0.03},
                      {"b_enc", torch::zeros({width})}, {"b_dec", torch::zeros({H})}, {"threshold", torch::full({width}, 0.5)}},
                     {{"format", "pt"}});
}

/// The best of `repeats` runs of `f`, in seconds.
template <class F>
double best(int repeats, F&& f) {
    double t = 1e9;
    for (int r = 0; r < repeats; ++r) {
        const double t0 = now();
        f();
        t = std::min(t, now() - t0);
    }
    return t;
}

std::vector<int64_t> ids(int64_t n) {
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = 1 + (i * 7919) % (V - 1);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string root = (fs::temp_directory_path() / "nnscope-bench-dictionaries").string();
    int repeats = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::cout << "Usage: nnscope_dictionary_bench [--dir DIR] [--repeats R]\n"
                         "Times a sparse dictionary beside a trace; writes a random checkpoint (0.7 GB) and two random SAEs\n"
                         "(16k: 134 MB, 262k: 2.1 GB, float32) under DIR the first time.\n";
            return 0;
        }
        if (a == "--dir" && i + 1 < argc) root = argv[++i];
        else if (a == "--repeats" && i + 1 < argc) repeats = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "nnscope_dictionary_bench: unknown option " << a << " (see --help)" << std::endl;
            return 2;
        }
    }
    configureThreads(0);
    const std::string modelDir = root + "/model", small = root + "/sae-16k", large = root + "/sae-262k";
    bench::writeRandomErnieCheckpoint(modelDir);
    makeDictionary(small, 16384);
    makeDictionary(large, 262144);
    auto model = Model::load(modelDir, LoadOptions().withDtype(torch::kFloat32).withTokenizer(false));
    c10::InferenceMode guard;

    const AttachedDictionary sae16k = AttachedDictionary::attach(*model, loadDictionary(small));
    TraceOptions options;
    options.save = sae16k.neededValues();
    const Batch batch512 = batchFromIds({ids(512)});
    TraceResult result;
    const double trace512 = best(repeats, [&] { result = trace(*model, batch512, options); });
    const double dict16k = best(repeats, [&] { runDictionary(*model, result, sae16k, 0); });

    std::shared_ptr<const Dictionary> d262k;
    AttachedDictionary sae262k;
    const double open262k = best(repeats, [&] { sae262k = AttachedDictionary::attach(*model, d262k = loadDictionary(large)); });
    const Batch batch128 = batchFromIds({ids(128)});
    int64_t active = 0;
    const double top262k = best(repeats, [&] {
        const TraceResult r = trace(*model, batch128, options);
        const FeatureRun run = runDictionary(*model, r, sae262k, 0);
        for (int64_t t = 0; t < run.features.size(0); ++t) active += static_cast<int64_t>(topFeatures(run.features[t], 10).size());
    });
    const double trace128 = best(repeats, [&] { trace(*model, batch128, options); });

    std::printf("| what | seconds |\n|---|---|\n");
    std::printf("| 512-token trace (float32, saving layers.8.layer_output) | %.3f |\n", trace512);
    std::printf("| the 16k dictionary on its 512 positions (encode, decode, error, quality) | %.3f (%.1f%% of the trace) |\n", dict16k,
                100.0 * dict16k / trace512);
    std::printf("| open the 262k dictionary (%.2f GB float32: loadDictionary + attach) | %.4f |\n",
                double(d262k->wEnc.numel() + d262k->wDec.numel()) * 4 / 1e9, open262k);
    std::printf("| 128-token trace + the 262k dictionary + top 10 features per position | %.3f (the trace alone %.3f) |\n", top262k,
                trace128);
    return active > 0 ? 0 : 1;
}
