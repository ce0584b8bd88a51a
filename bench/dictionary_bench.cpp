// SPDX-License-Identifier: MIT
// What a sparse dictionary costs beside a trace (a program, not a test; figures in docs/PERFORMANCE.md): on the
// benchmark's random ERNIE-4.5-0.3B-shaped checkpoint (18 blocks, width 1024), a random SAELens jumprelu SAE at
// layers.8.layer_output, 16k and 262k features wide (float32, as the published ones). It times, best of R, side by side
// in one run: a 512-token trace that saves the site, the 16k dictionary on those 512 positions, opening the 262k one
// (loadDictionary + attach: mapped, not read), and a 128-token trace with the 262k dictionary's top features.
#include "options.h"
#include "random_checkpoint.h"

#include "core/io/dictionary.h"
#include "core/io/filehash.h"
#include "core/io/safetensors.h"
#include "core/run/dashboard.h"
#include "core/run/features.h"
#include "core/run/trace.h"
#include "core/run/train_demo.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

using namespace nnscope;
using bench::now;
namespace fs = std::filesystem;

namespace {

constexpr int64_t H = bench::kErnie03bShape.hidden, V = bench::kErnie03bShape.vocab;


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

/// --dashboard: makeDashboard's tokens/s against a plain trace (no value saved: next-token probabilities only, as
/// `nnscope trace` runs) of the same windows in the same batches, on `modelDir` with `dictionaryDir`, over `rows` rows of
/// the demo's training text (words, one document per line). Prints one table row.
void dashboardRow(const std::string& label, const std::string& modelDir, const std::string& dictionaryDir, int rows, int batchSize,
                  const std::string& root, int repeats) {
    auto model = Model::load(modelDir, LoadOptions().withDtype(torch::kFloat32));
    const AttachedDictionary attached = AttachedDictionary::attach(*model, loadDictionary(dictionaryDir));
    const std::vector<std::string> lines = demoTrainingText(rows, 64, 3);
    DashboardOptions o;
    o.dataset = root + "/dashboard-dataset.txt";
    o.out = root + "/dashboard.safetensors";
    o.batchSize = batchSize;
    o.saveEverySeconds = 1e9;  // written once, at the end (timed)
    {
        std::ofstream out(o.dataset);
        for (const auto& l : lines) out << l << "\n";
    }
    int64_t tokens = 0;
    const double dash = best(repeats, [&] {
        fs::remove(o.out);
        tokens = makeDashboard(*model, attached, o).progress.tokensThisRun;
    });
    // the same windows (each after its BOS, at most contextSize tokens) in the same batches
    std::vector<Batch> batches;
    std::vector<std::vector<int64_t>> rowsIds;
    for (const auto& l : lines) {
        const std::vector<int64_t> ids = model->tokenizer()->encode(l, true);
        for (size_t from = 1; from < ids.size(); from += static_cast<size_t>(o.contextSize - 1)) {
            std::vector<int64_t> w{ids[0]};
            w.insert(w.end(), ids.begin() + static_cast<long>(from), ids.begin() + static_cast<long>(std::min(ids.size(), from + static_cast<size_t>(o.contextSize - 1))));
            rowsIds.push_back(std::move(w));
            if (static_cast<int>(rowsIds.size()) == batchSize) batches.push_back(batchFromIds(std::exchange(rowsIds, {})));
        }
    }
    if (!rowsIds.empty()) batches.push_back(batchFromIds(rowsIds));
    const double plain = best(repeats, [&] {
        for (const Batch& b : batches) trace(*model, b, TraceOptions{});
    });
    // makeDashboard's fixed cost: the sha256 of the dictionary's weights (a resume checks them; the model's are sampled)
    const double hashing = best(repeats, [&] { filesSha256(attached.dictionary->weightFiles); });
    std::printf("| %s | %lld | %.2f (%.2f hashing) | %.0f (%.0f) | %.2f | %.0f | %.2f (%.2f) |\n", label.c_str(), static_cast<long long>(tokens), dash,
                hashing, tokens / dash, tokens / (dash - hashing), plain, tokens / plain, plain / dash, plain / (dash - hashing));
}

}  // namespace

int main(int argc, char** argv) {
    std::string root = (fs::temp_directory_path() / "nnscope-bench-dictionaries").string();
    int repeats = 3;
    bool dashboard = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::cout << "Usage: nnscope_dictionary_bench [--dir DIR] [--repeats R] [--dashboard]\n"
                         "Times a sparse dictionary beside a trace; writes a random checkpoint (0.7 GB) and two random SAEs\n"
                         "(16k: 134 MB, 262k: 2.1 GB, float32) under DIR the first time.\n"
                         "--dashboard: instead, a feature dashboard's tokens/s (nnscope features --dataset) against a plain trace of\n"
                         "the same windows, on the demo model with its SAE and on a random 0.3B-shaped Llama with the Llama 3\n"
                         "tokenizer (0.8 GB, written under DIR the first time) with a random 16k SAE at layers.8.layer_output.\n";
            return 0;
        }
        if (a == "--dashboard") dashboard = true;
        else if (a == "--dir" && i + 1 < argc) root = argv[++i];
        else if (a == "--repeats" && i + 1 < argc) repeats = std::max(1, std::atoi(argv[++i]));
        else {
            std::cerr << "nnscope_dictionary_bench: unknown option " << a << " (see --help)" << std::endl;
            return 2;
        }
    }
    configureThreads(0);
    if (dashboard) {
        fs::create_directories(root);
        const std::string llama = root + "/model-llama3-tokenizer";
        if (!fs::exists(llama + "/model.safetensors")) {
            fs::create_directories(llama);
            bench::RandomShape s = bench::kErnie03bShape;
            s.vocab = 128256;  // the Llama 3 tokenizer's
            bench::writeRandomLlamaWeights(llama, s);
            const nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", s.hidden},
                                      {"intermediate_size", s.intermediate}, {"num_hidden_layers", s.layers}, {"num_attention_heads", s.heads},
                                      {"num_key_value_heads", s.kvHeads}, {"head_dim", s.headDim}, {"vocab_size", s.vocab}, {"rms_norm_eps", 1e-5},
                                      {"max_position_embeddings", 131072}, {"rope_theta", 500000.0}, {"tie_word_embeddings", true},
                                      {"bos_token_id", 128000}, {"eos_token_id", 128001}, {"hidden_act", "silu"}, {"torch_dtype", "bfloat16"}};
            std::ofstream(llama + "/config.json") << c.dump(2);
            for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
                fs::copy_file(std::string(NNSCOPE_SHARED_MODELS_DIR) + "/llama3-tokenizer/" + f, llama + "/" + f, fs::copy_options::overwrite_existing);
        }
        // a random 16k SAE made sparse as trained ones are: each feature's threshold is the 99.6th percentile of its
        // pre-activation over the dataset's kind of text, so about 0.4% of the features fire (L0 about 65)
        const std::string sparse = root + "/sae-16k-sparse";
        if (!fs::exists(sparse + "/sae_weights.safetensors")) {
            makeDictionary(sparse, 16384);
            auto m = Model::load(llama, LoadOptions().withDtype(torch::kFloat32));
            const auto d = loadDictionary(sparse);
            TraceOptions t;
            t.save = {{Value::LayerOutput, 8}};
            t.stopAfterLayer = 8;
            std::vector<std::string> sample = demoTrainingText(8, 64, 11);
            const TraceResult r = trace(*m, encodeBatch(*m, sample), t);
            const torch::Tensor x = r.value({Value::LayerOutput, 8}).index({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None)}).reshape({-1, H});
            const torch::Tensor pre = torch::matmul(x - d->bDec, d->wEnc) + d->bEnc;
            const torch::Tensor threshold = std::get<0>(pre.sort(0)).select(0, static_cast<int64_t>(0.996 * (pre.size(0) - 1))).contiguous();
            writeSafetensors(sparse + "/sae_weights.safetensors",
                             {{"W_enc", d->wEnc.clone()}, {"W_dec", d->wDec.clone()}, {"b_enc", d->bEnc.clone()}, {"b_dec", d->bDec.clone()},
                              {"threshold", threshold}},
                             {{"format", "pt"}});
        }
        std::printf("| model, dictionary | tokens | dashboard s (of which sha256) | dashboard tokens/s (without the sha256) | plain trace s | "
                    "trace tokens/s | dashboard speed / trace speed (without the sha256) |\n"
                    "|---|---|---|---|---|---|---|\n");
        dashboardRow("demo model (2 blocks, width 64), its 256-feature SAE at layers.0", NNSCOPE_DEMO_MODEL_DIR,
                     std::string(NNSCOPE_DEMO_MODEL_DIR) + "/" + kDemoDictionaryFolder, 1000, 16, root, repeats);
        dashboardRow("random 0.3B-shaped Llama (18 blocks, width 1024, vocab 128256), 16k SAE at layers.8 (L0 ≈ 65)", llama, sparse, 32, 16,
                     root, repeats);
        return 0;
    }
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
