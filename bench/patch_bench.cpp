// SPDX-License-Identifier: MIT
// Activation patching at research scale (a program, not a test; figures in docs/PERFORMANCE.md): the wall time of one
// patching grid with one patched run per forward pass (--batch 1, as nnscope did before) and with several patched runs
// per pass (the default, PatchingOptions::batch 0), best of R, and the largest difference between the two grids' cells.
//   nnscope_patch_bench MODEL_DIR CLEAN CORRUPTED ANSWER WRONG [SITE] [REPEATS]
// ANSWER and WRONG are tokens as the command line takes them (text of one token, or #ID); SITE is parsePatchSite's
// spelling (layer_output by default, `heads` for every head).
#include "options.h"
#include "core/model/model.h"
#include "core/run/patching.h"
#include "core/run/trace.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

using namespace nnscope;
using bench::now;

int main(int argc, char** argv) {
    if (argc < 6) {
        std::cerr << "usage: nnscope_patch_bench MODEL_DIR CLEAN CORRUPTED ANSWER WRONG [SITE] [REPEATS]\n";
        return 2;
    }
    try {
        configureThreads(0);
        const auto model = Model::load(argv[1], LoadOptions().withDtype(torch::kFloat32));
        const Batch b = encodeBatch(*model, {argv[2], argv[3]});
        PatchingOptions o;
        o.metric.answer = parseTokenArgument(*model, argv[4], "answer");
        o.metric.wrong = parseTokenArgument(*model, argv[5], "wrong");
        o.site = parsePatchSite(argc > 6 ? argv[6] : "layer_output", &o.head);
        const int repeats = argc > 7 ? std::atoi(argv[7]) : 3;
        std::printf("model %s: %lld blocks x %lld heads, %zu tokens, site %s, %d threads\n", argv[1],
                    static_cast<long long>(model->config().numLayers), static_cast<long long>(model->config().numHeads), b.ids[0].size(),
                    argc > 6 ? argv[6] : "layer_output", at::get_num_threads());
        PatchingResult one, batched;
        auto timed = [&](int batch, PatchingResult* out) {
            o.batch = batch;
            double best = 1e9;
            for (int r = 0; r < repeats; ++r) {
                const double t0 = now();
                *out = activationPatching(*model, b.ids[0], b.ids[1], o);
                best = std::min(best, now() - t0);
            }
            return best;
        };
        const double tOne = timed(1, &one);
        const int cells = static_cast<int>(one.grid.size() * one.grid[0].size());
        std::printf("  one patched run per pass:   %4d cells in %8.3f s (%.2f ms a cell)\n", cells, tOne, 1000 * tOne / cells);
        for (int batch : {0, 8, 64}) {
            const double t = timed(batch, &batched);
            double worst = 0;
            for (size_t i = 0; i < one.grid.size(); ++i)
                for (size_t p = 0; p < one.grid[i].size(); ++p) worst = std::max(worst, std::abs(one.grid[i][p] - batched.grid[i][p]));
            std::printf("  %2d patched runs per pass%s: %4d cells in %8.3f s (%.2f ms a cell), %.1fx faster; largest cell difference %.3g\n",
                        batch ? batch : defaultPatchBatch(static_cast<int64_t>(b.ids[0].size())), batch ? "" : " (default)", cells, t,
                        1000 * t / cells, tOne / t, worst);
        }
    } catch (const std::exception& e) {
        std::cerr << "nnscope_patch_bench: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
