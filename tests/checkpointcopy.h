// SPDX-License-Identifier: MIT
// Checkpoints the tests make from a fixture: a copy in a temporary folder with one thing changed, the way real
// checkpoints differ from the tiny ones (a vocabulary padded past the tokenizer's). Shared by nnscope_tests and test_gui.
#pragma once
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace nnscope::test {

/// Copies the files of checkpoint folder `source` into the existing folder `dir` (sub-folders are left out).
inline void copyCheckpoint(const std::string& source, const std::string& dir) {
    namespace fs = std::filesystem;
    for (const auto& entry : fs::directory_iterator(source))
        if (entry.is_regular_file()) fs::copy_file(entry.path(), fs::path(dir) / entry.path().filename(), fs::copy_options::overwrite_existing);
}

/// Pads the vocabulary of the single-file checkpoint in `dir` to `vocab` ids, past its tokenizer's, as Qwen2's (151936
/// rows for 151665 tokenizer ids), Phi-3's (32064 for 32011) and Pythia's (50304 for 50277) are: config.json's
/// vocab_size becomes `vocab`, and every weight with one row per id (embed_tokens, lm_head: [vocab_size, hidden_size])
/// gets rows up to it. The padded rows of lm_head are zeros but row `top`, which is 4 x row `like`: wherever `like`
/// has the largest logit and it is positive, `top` has a larger one and is the model's most probable token. The padded
/// rows of embed_tokens are `like`'s, so a generation that feeds `top` back goes on as after `like`.
inline void padVocabulary(const std::string& dir, int64_t vocab, int64_t top, int64_t like) {
    const std::string configPath = dir + "/config.json", weightsPath = dir + "/model.safetensors";
    nlohmann::json config;
    {
        std::ifstream in(configPath);
        config = nlohmann::json::parse(in);
    }
    const int64_t old = config.at("vocab_size").get<int64_t>();
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    {
        SafetensorsFile f(weightsPath);
        for (const auto& [name, entry] : f.entries()) {
            torch::Tensor t = f.tensor(name).clone();
            if (t.dim() == 2 && t.size(0) == old) {
                const bool head = name.find("lm_head") != std::string::npos || name.find("embed_out") != std::string::npos;
                torch::Tensor rows = head ? torch::zeros({vocab - old, t.size(1)}, t.options()) : t[like].expand({vocab - old, t.size(1)}).clone();
                if (head) rows[top - old] = t[like] * 4;
                t = torch::cat({t, rows});
            }
            tensors.emplace_back(name, t);
        }
    }
    writeSafetensors(weightsPath + ".new", tensors, {{"format", "pt"}});
    std::filesystem::rename(weightsPath + ".new", weightsPath);
    config["vocab_size"] = vocab;
    std::ofstream(configPath, std::ios::trunc) << config.dump(2);
}

}  // namespace nnscope::test
