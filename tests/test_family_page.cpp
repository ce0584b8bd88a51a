// SPDX-License-Identifier: MIT
// The family pages (core/pages/family_page.h) and the checks behind their notes (core/pages/checks.h):
//  - every check of every family passes on its fixtures (and on the real stories260K-llama);
//  - a deliberately broken copy of a fixture (one weight perturbed, a config key changed) turns the matching check to ✗;
//  - the figures the seeds quote for one checkpoint are computed live (they follow a changed weight);
//  - the Markdown page of each seed family (shared/seeds/, read at test time) lists exactly the seed's values, layouts,
//    descriptions and read-at places, the same title, quirk chips and block formulas, and the same sections in the same
//    order; the HTML page has the same sections in the same order, escaped;
//  - `nnscope family` writes the page atomically, prints the summary line and exits 0 even when a check fails.
#include "core/model/block.h"
#include "core/pages/checks.h"
#include "core/model/error.h"
#include "core/pages/family_page.h"
#include "core/model/model.h"
#include "core/io/safetensors.h"
#include "core/pages/support.h"
#include "core/run/trace.h"
#include "manifest.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include "testsuite.h"

#include <QtTest>
#include <QFile>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace nnscope;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFixtures = nnscope::test::fixtureNames(nnscope::test::fixturesDir() + "/models");

std::string readText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void writeText(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string describe(const std::vector<CheckResult>& results) {
    std::string s;
    for (const auto& r : results) s += std::string(checkMark(r)) + " " + r.id + ": " + r.figure + " | " + r.detail + "\n";
    return s;
}

const CheckResult* findResult(const std::vector<CheckResult>& results, const std::string& id) {
    for (const auto& r : results)
        if (r.id == id || r.id.rfind(id + ":", 0) == 0) return &r;
    return nullptr;
}

/// A copy of a fixture folder in `tmp`, changed by `config` (config.json), `tokenizerConfig` (tokenizer_config.json)
/// and `weights` (the tensors of model.safetensors, cloned, written back with writeSafetensors).
using TensorMap = std::map<std::string, torch::Tensor>;
std::string brokenCopy(const QTemporaryDir& tmp, const std::string& fixture, const std::function<void(nlohmann::json&)>& config,
                       const std::function<void(TensorMap&)>& weights, const std::function<void(nlohmann::json&)>& tokenizerConfig = {}) {
    const std::string dir = tmp.path().toStdString() + "/" + fixture;
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(nnscope::test::fixture(fixture))) {
        const std::string name = e.path().filename().string();
        if (name.rfind("golden", 0) == 0) continue;
        fs::copy_file(e.path(), dir + "/" + name, fs::copy_options::overwrite_existing);
    }
    if (config) {
        auto j = nlohmann::json::parse(readText(dir + "/config.json"));
        config(j);
        writeText(dir + "/config.json", j.dump(2));
    }
    if (tokenizerConfig) {
        auto j = nlohmann::json::parse(readText(dir + "/tokenizer_config.json"));
        tokenizerConfig(j);
        writeText(dir + "/tokenizer_config.json", j.dump(2));
    }
    if (weights) {
        TensorMap tensors;
        {
            SafetensorsFile file(dir + "/model.safetensors");
            for (const auto& [name, entry] : file.entries()) tensors[name] = file.tensor(name).clone();
        }
        weights(tensors);
        std::vector<std::pair<std::string, torch::Tensor>> list(tensors.begin(), tensors.end());
        writeSafetensors(dir + "/model.safetensors", list, {{"format", "pt"}});
    }
    return dir;
}

/// Sets element [0, 0] of a tensor (a copy) to `v`.
void setFirst(TensorMap& t, const std::string& name, double v) {
    QVERIFY2(t.count(name), name.c_str());
    auto x = t[name].clone();
    x.view({-1})[0] = v;
    t[name] = x;
}

/// Sets the element at flat index `at` of a tensor (a copy) to `v`.
void setAt(TensorMap& t, const std::string& name, int64_t at, double v) {
    QVERIFY2(t.count(name), name.c_str());
    auto x = t[name].clone();
    x.view({-1})[at] = v;
    t[name] = x;
}

/// Sets a whole scalar-ish tensor to `v`, keeping its dtype and shape.
void setAll(TensorMap& t, const std::string& name, double v) {
    QVERIFY2(t.count(name), name.c_str());
    t[name] = torch::full_like(t[name], v);
}

// ----- the seeds -----

struct SeedRow {
    std::string host, hostClass, name, layout, description, readAt;
    bool eager = false;
    bool operator==(const SeedRow& o) const {
        return host == o.host && hostClass == o.hostClass && name == o.name && layout == o.layout && description == o.description &&
               readAt == o.readAt && eager == o.eager;
    }
};

std::string rowText(const SeedRow& r) {
    return r.host + " " + r.hostClass + " | " + (r.eager ? "⚠︎" : "") + r.name + " | " + r.layout + " | " + r.description + " | " + r.readAt;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream s(text);
    std::string l;
    while (std::getline(s, l)) out.push_back(l);
    return out;
}

std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::string seedsDir() { return (fs::path(nnscope::test::sharedModels()).parent_path() / "seeds").string(); }

/// The seed page of `family` (the file whose first line names "encyclopedia <family>"), or "".
std::string seedText(const std::string& family) {
    if (!fs::exists(seedsDir())) return {};
    for (const auto& e : fs::directory_iterator(seedsDir())) {
        const std::string text = readText(e.path().string());
        const auto first = text.substr(0, text.find('\n'));
        if (first.find("encyclopedia " + family + " ") != std::string::npos) return text;
    }
    return {};
}

/// "Values, by host" of a seed: host header lines "model.layers[i] ApertusDecoderLayerlayoutwhat it isread at", rows
/// "⚠︎name Layout [axes] description" followed by the read-at line.
std::vector<SeedRow> seedRows(const std::string& text) {
    const auto ls = lines(text);
    std::vector<SeedRow> rows;
    static const std::regex header(R"(^(model(?:\.layers\[i\](?:\.self_attn|\.mlp)?)?) (\S+?)layoutwhat it isread at$)");
    static const std::regex row(R"(^(⚠︎)?([a-z_]+) (scalar|[A-Za-z]+ \[[^\]]*\]) (.*)$)");
    std::string host, cls;
    bool inside = false;
    for (size_t i = 0; i < ls.size(); ++i) {
        const std::string l = trim(ls[i]);
        if (l == "Values, by host") inside = true;
        if (l == "Printout") break;
        if (!inside) continue;
        std::smatch m;
        if (std::regex_match(l, m, header)) {
            host = m[1];
            cls = m[2];
            continue;
        }
        if (!host.empty() && std::regex_match(l, m, row)) {
            SeedRow r{host, cls, m[2], m[3], m[4], "", m[1].matched};
            size_t j = i + 1;
            while (j < ls.size() && trim(ls[j]).empty()) ++j;
            r.readAt = j < ls.size() ? trim(ls[j]) : "";
            rows.push_back(r);
            i = j;
        }
    }
    return rows;
}

/// The text of a section of a seed: the lines after `heading` up to the next of `stops`.
std::vector<std::string> seedSection(const std::string& text, const std::string& heading, const std::vector<std::string>& stops) {
    std::vector<std::string> out;
    bool inside = false;
    for (const auto& raw : lines(text)) {
        const std::string l = trim(raw);
        if (!inside) {
            inside = l == heading;
            continue;
        }
        if (std::find(stops.begin(), stops.end(), l) != stops.end()) break;
        out.push_back(raw);
    }
    return out;
}

// ----- the Markdown page -----

std::string mdUnescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            out += s[++i];
            continue;
        }
        out += s[i];
    }
    return out;
}

std::vector<std::string> splitCells(const std::string& line) {
    std::vector<std::string> cells;
    std::string cur;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
            cur += line[i];
            cur += line[++i];
            continue;
        }
        if (line[i] == '|') {
            cells.push_back(trim(cur));
            cur.clear();
            continue;
        }
        cur += line[i];
    }
    // drop the empty cells outside the first and last bar
    if (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());
    return cells;
}

std::string stripCode(const std::string& s) {
    std::string t = trim(s);
    if (t.size() >= 2 && t.front() == '`' && t.back() == '`') return trim(t.substr(1, t.size() - 2));
    return mdUnescape(t);
}

std::vector<SeedRow> pageRows(const std::string& md) {
    std::vector<SeedRow> rows;
    std::string host, cls;
    bool inside = false;
    static const std::regex header(R"(^(model(?:\.layers\[i\](?:\.self_attn|\.mlp)?)?) (\S+)$)");
    for (const auto& l : lines(md)) {
        if (l == "### Values, by host") inside = true;
        if (l == "### Printout") break;
        if (!inside || l.rfind("|", 0) != 0 || l.rfind("|---", 0) == 0) continue;
        auto cells = splitCells(l);
        if (cells.size() < 4) continue;
        std::smatch m;
        const std::string first = mdUnescape(cells[0]);
        if (cells[1] == "layout" && std::regex_match(first, m, header)) {
            host = m[1];
            cls = m[2];
            continue;
        }
        SeedRow r;
        r.host = host;
        r.hostClass = cls;
        std::string name = cells[0];
        const std::string warn = "⚠︎";
        if (name.rfind(warn, 0) == 0) {
            r.eager = true;
            name = name.substr(warn.size());
        }
        r.name = stripCode(name);
        r.layout = stripCode(cells[1]);
        r.description = mdUnescape(cells[2]);
        r.readAt = mdUnescape(cells[3]);
        rows.push_back(r);
    }
    return rows;
}

std::vector<std::string> mdHeadings(const std::string& md, bool withLevel = false) {
    std::vector<std::string> out;
    bool fence = false;
    for (const auto& l : lines(md)) {
        if (l.rfind("```", 0) == 0) fence = !fence;
        if (fence) continue;
        for (const std::string mark : {"## ", "### "})
            if (l.rfind(mark, 0) == 0) out.push_back((withLevel ? mark : std::string()) + mdUnescape(l.substr(mark.size())));
    }
    return out;
}

std::string htmlUnescape(std::string s) {
    const std::vector<std::pair<std::string, std::string>> ents = {{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
    for (const auto& [e, c] : ents)
        for (size_t p = s.find(e); p != std::string::npos; p = s.find(e, p + c.size())) s.replace(p, e.size(), c);
    return s;
}

std::vector<std::string> htmlHeadings(const std::string& html) {
    std::vector<std::string> out;
    static const std::regex re(R"(<(h2|h3)[^>]*>(.*?)</\1>)");
    for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back(std::string((*it)[1] == "h2" ? "## " : "### ") + htmlUnescape((*it)[2]));
    return out;
}

std::string fixtureOfSeed(const std::string& family) { return "tiny-" + family; }

}  // namespace

class TestFamilyPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { configureThreads(0); }

    // ---- every check passes on every fixture and on a real checkpoint ----
    void checksPass_data() {
        QTest::addColumn<QString>("dir");
        for (const auto& f : kFixtures) QTest::newRow(f.c_str()) << QString::fromStdString(nnscope::test::fixture(f));
        const std::string stories = nnscope::test::sharedModels() + "/stories260K-llama";
        if (fs::exists(stories)) QTest::newRow("stories260K-llama") << QString::fromStdString(stories);
    }
    void checksPass() {
        QFETCH(QString, dir);
        auto model = Model::load(dir.toStdString(), nnscope::test::float32());
        const auto results = runFamilyChecks(*model);
        const auto ids = familyCheckIds(model->family());
        QCOMPARE(results.size(), ids.size());
        QVERIFY2(!results.empty(), "a family without checks");
        for (const auto& r : results) {
            QVERIFY2(r.passed, (r.id + " failed:\n" + describe(results)).c_str());
            QVERIFY2(!r.figure.empty(), (r.id + " has no figure").c_str());
            QVERIFY2(r.figure.find("unknown check") == std::string::npos, r.id.c_str());
        }
        // the identity and the lens run on every family
        QVERIFY(findResult(results, "contribution_identity"));
        QVERIFY(findResult(results, "lens_equals_logits"));
        // the relu² claim of Persimmon applies only to relu2 checkpoints
        if (model->config().modelType == "persimmon") {
            const CheckResult* r = findResult(results, "relu2_zeros");
            QVERIFY(r);
            QCOMPARE(r->kind == CheckKind::Skipped, model->config().hiddenAct != "relu2");
        }
    }

    void docsListEveryCheck() {
        const std::string doc = readText((fs::path(nnscope::test::fixturesDir()).parent_path().parent_path() / "docs" / "FAMILIES.md").string());
        QVERIFY2(!doc.empty(), "docs/FAMILIES.md is missing");
        for (const auto& [id, what] : knownChecks()) QVERIFY2(doc.find("| `" + id + "` |") != std::string::npos, id.c_str());
    }

    void everyCheckIdIsKnown() {
        std::set<std::string> known;
        for (const auto& [id, doc] : knownChecks()) known.insert(id);
        for (const Family& f : families())
            for (const auto& id : familyCheckIds(f)) QVERIFY2(known.count(id.substr(0, id.find(':'))), (f.modelType + ": " + id).c_str());
    }

    // ---- broken copies turn the matching check to ✗ ----
    void brokenCopies_data() {
        QTest::addColumn<QString>("caseName");
        for (const char* c : {"arcee-silu", "arcee-yarn-tied", "arcee-no-bos", "arcee-gate", "arcee-yarn-linear", "apertus-same-scalars",
                              "apertus-beta", "apertus-alpha-n", "apertus-yarn", "apertus-eps", "ernie-linear", "ernie-use-bias",
                              "ernie-architecture", "persimmon-full-rotary", "persimmon-qkv-nan", "persimmon-gelu-nan", "llama-o-proj-nan",
                              "llama-final-norm-nan", "llama-k-proj-nan", "arcee-up-nan", "apertus-up-nan", "qwen3-moe-router-nan",
                              "qwen3-moe-expert-nan", "smollm3-nope-k-proj-nan", "gemma3-mm-stray-tensor", "olmo3-k-proj-nan",
                              "gpt-oss-sink-nan", "gpt-oss-expert-bias-nan"})
            QTest::newRow(c) << QString(c);
    }
    void brokenCopies() {
        QFETCH(QString, caseName);
        const std::string c = caseName.toStdString();
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        std::string dir, expectFail, alsoFail;
        const double nan = std::nan("");
        auto rope = [](nlohmann::json& j, nlohmann::json params) {
            j.erase("rope_scaling");
            j["rope_parameters"] = params;
        };
        if (c == "arcee-silu") {  // the note: hidden_act is relu2 on every checkpoint
            dir = brokenCopy(tmp, "tiny-arcee", [](auto& j) { j["hidden_act"] = "silu"; }, {});
            expectFail = "relu2_zeros";
        } else if (c == "arcee-yarn-tied") {  // the config ties, but the file stores a different head (used untied, as
                                              // transformers does; the check still marks the disagreement)
            dir = brokenCopy(tmp, "tiny-arcee-yarn", [](auto& j) { j["tie_word_embeddings"] = true; }, {});
            expectFail = "tied_head";
        } else if (c == "arcee-no-bos") {  // a tokenizer.json whose post-processor adds nothing
            dir = brokenCopy(tmp, "tiny-arcee", {}, {});
            auto j = nlohmann::json::parse(readText(dir + "/tokenizer.json"));
            j["post_processor"] = nullptr;
            writeText(dir + "/tokenizer.json", j.dump());
            expectFail = "bos_prepended";
        } else if (c == "arcee-gate") {  // a gate tensor the ungated MLP has no place for
            dir = brokenCopy(tmp, "tiny-arcee", {}, [](TensorMap& t) {
                t["model.layers.0.mlp.gate_proj.weight"] = torch::randn({128, 64});
            });
            expectFail = "no_gate";
        } else if (c == "arcee-yarn-linear") {  // a rotary the note does not name
            dir = brokenCopy(tmp, "tiny-arcee-yarn", [&](auto& j) { rope(j, {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 10000.0}}); }, {});
            expectFail = "rope_kind";
        } else if (c == "apertus-same-scalars") {  // learned per block: block 1 copies block 0's scalars
            dir = brokenCopy(tmp, "tiny-apertus", {}, [](TensorMap& t) {
                t["model.layers.1.mlp.act_fn.alpha_p"] = t["model.layers.0.mlp.act_fn.alpha_p"].clone();
                t["model.layers.1.mlp.act_fn.alpha_n"] = t["model.layers.0.mlp.act_fn.alpha_n"].clone();
            });
            expectFail = "xielu_scalars";
        } else if (c == "apertus-beta") {  // the note's beta is 0.5
            dir = brokenCopy(tmp, "tiny-apertus", {}, [](TensorMap& t) { setAll(t, "model.layers.0.mlp.act_fn.beta", 0.25); });
            expectFail = "xielu_formula";
        } else if (c == "apertus-alpha-n") {  // alpha_n ≈ beta: the negative branch no longer grows again
            dir = brokenCopy(tmp, "tiny-apertus", {}, [](TensorMap& t) { setAll(t, "model.layers.2.mlp.act_fn.alpha_n", -30.0); });
            expectFail = "xielu_negative";
        } else if (c == "apertus-yarn") {  // an attention factor: position 0 is no longer the identity
            dir = brokenCopy(tmp, "tiny-apertus", [&](auto& j) {
                rope(j, {{"rope_type", "yarn"}, {"factor", 2.0}, {"attention_factor", 1.5}, {"original_max_position_embeddings", 256},
                         {"rope_theta", 10000.0}});
            }, {});
            expectFail = "qk_norm_position0";
        } else if (c == "apertus-eps") {  // an epsilon larger than the heads' mean square: the norm no longer renormalises
            dir = brokenCopy(tmp, "tiny-apertus", [](auto& j) { j["rms_norm_eps"] = 100.0; }, {});
            expectFail = "qk_norm_renormalizes";
        } else if (c == "ernie-linear") {  // scaled frequencies: position 1 is not turned by one radian
            dir = brokenCopy(tmp, "tiny-ernie4_5", [&](auto& j) { rope(j, {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 10000.0}}); }, {});
            expectFail = "rotation_position1";
        } else if (c == "ernie-use-bias") {  // the file stores biases that use_bias false leaves off
            dir = brokenCopy(tmp, "tiny-ernie4_5", [](auto& j) { j["use_bias"] = false; }, {});
            expectFail = "projection_biases";
        } else if (c == "ernie-architecture") {
            dir = brokenCopy(tmp, "tiny-ernie4_5", [](auto& j) { j["architectures"] = {"LlamaForCausalLM"}; }, {});
            expectFail = "loads_as";
        } else if (c == "persimmon-full-rotary") {  // nothing left unrotated
            dir = brokenCopy(tmp, "tiny-persimmon", [](auto& j) {
                j["rope_parameters"]["partial_rotary_factor"] = 1.0;
                j["partial_rotary_factor"] = 1.0;
            }, {});
            expectFail = "unrotated_half";
        } else if (c == "persimmon-qkv-nan") {
            // row 2·head_dim is head 0's first value dimension ([num_heads, 3, head_dim] rows)
            dir = brokenCopy(tmp, "tiny-persimmon", {}, [&](TensorMap& t) {
                setAt(t, "model.layers.1.self_attn.query_key_value.weight", 2 * 16 * 64, nan);
            });
            expectFail = "fused_qkv_values";
        } else if (c == "persimmon-gelu-nan") {
            dir = brokenCopy(tmp, "tiny-persimmon-gelu", {}, [&](TensorMap& t) { setFirst(t, "model.layers.0.mlp.dense_h_to_4h.weight", nan); });
            expectFail = "act_from_config";
        } else if (c == "llama-o-proj-nan") {
            dir = brokenCopy(tmp, "tiny-llama", {}, [&](TensorMap& t) { setFirst(t, "model.layers.1.self_attn.o_proj.weight", nan); });
            expectFail = "contribution_identity";
        } else if (c == "llama-final-norm-nan") {
            dir = brokenCopy(tmp, "tiny-llama", {}, [&](TensorMap& t) { setFirst(t, "model.norm.weight", nan); });
            expectFail = "lens_equals_logits";
        } else if (c == "llama-k-proj-nan") {
            dir = brokenCopy(tmp, "tiny-llama", {}, [&](TensorMap& t) { setFirst(t, "model.layers.1.self_attn.k_proj.weight", nan); });
            expectFail = "gqa_scores";
            alsoFail = "pattern_softmax";
        } else if (c == "apertus-up-nan") {
            dir = brokenCopy(tmp, "tiny-apertus", {}, [&](TensorMap& t) { setFirst(t, "model.layers.1.mlp.up_proj.weight", nan); });
            expectFail = "act_input_is_up";
        } else if (c == "arcee-up-nan") {
            dir = brokenCopy(tmp, "tiny-arcee", {}, [&](TensorMap& t) { setFirst(t, "model.layers.0.mlp.up_proj.weight", nan); });
            expectFail = "relu2_zeros";
        } else if (c == "qwen3-moe-router-nan") {
            dir = brokenCopy(tmp, "tiny-qwen3-moe", {}, [&](TensorMap& t) { setFirst(t, "model.layers.2.mlp.gate.weight", nan); });
            expectFail = "router_topk";
        } else if (c == "qwen3-moe-expert-nan") {  // every expert of block 0, so whichever the tokens choose
            dir = brokenCopy(tmp, "tiny-qwen3-moe", {}, [&](TensorMap& t) {
                for (int e = 0; e < 6; ++e) setFirst(t, "model.layers.0.mlp.experts." + std::to_string(e) + ".down_proj.weight", nan);
            });
            expectFail = "routed_is_weighted_sum";
        } else if (c == "smollm3-nope-k-proj-nan") {  // the NoPE block's keys are no longer k_proj's finite output
            dir = brokenCopy(tmp, "tiny-smollm3", {}, [&](TensorMap& t) { setFirst(t, "model.layers.1.self_attn.k_proj.weight", nan); });
            expectFail = "no_rope_layers";
        } else if (c == "olmo3-k-proj-nan") {  // a sliding block's probabilities are no longer 0 outside its window
            dir = brokenCopy(tmp, "tiny-olmo3", {}, [&](TensorMap& t) { setFirst(t, "model.layers.0.self_attn.k_proj.weight", nan); });
            expectFail = "sliding_window";
        } else if (c == "gemma3-mm-stray-tensor") {  // the vision tower is skipped, but a stray language-model tensor is not
            dir = brokenCopy(tmp, "tiny-gemma3-mm", {}, [](TensorMap& t) {
                t["language_model.model.layers.0.mlp.extra_proj.weight"] = torch::randn({96, 64});
            });
            expectFail = "loads_as";
        } else if (c == "gpt-oss-sink-nan") {  // a sink that is not a number: rows no longer sum to 1 - a share
            dir = brokenCopy(tmp, "tiny-gpt-oss", {}, [&](TensorMap& t) { setFirst(t, "model.layers.1.self_attn.sinks", nan); });
            expectFail = "attention_sinks";
            alsoFail = "pattern_softmax";
        } else if (c == "gpt-oss-expert-bias-nan") {  // every expert's down_proj bias of block 0
            dir = brokenCopy(tmp, "tiny-gpt-oss", {}, [&](TensorMap& t) { setFirst(t, "model.layers.0.mlp.experts.down_proj_bias", nan); });
            expectFail = "routed_is_weighted_sum";
        } else {
            QFAIL("unknown case");
        }
        if (QTest::currentTestFailed()) return;
        auto model = Model::load(dir, nnscope::test::float32());
        const auto results = runFamilyChecks(*model);
        const CheckResult* r = findResult(results, expectFail);
        QVERIFY2(r, (expectFail + " not run:\n" + describe(results)).c_str());
        QVERIFY2(r->kind == CheckKind::Claim && !r->passed, (expectFail + " did not fail:\n" + describe(results)).c_str());
        if (!alsoFail.empty()) {
            const CheckResult* a = findResult(results, alsoFail);
            QVERIFY2(a && !a->passed, (alsoFail + " did not fail:\n" + describe(results)).c_str());
        }
        // the page shows it
        const std::string md = familyPage(*model, results, PageFormat::Markdown);
        QVERIFY(md.find("- ✗ `" + r->id + "`") != std::string::npos);
    }

    // ---- figures are computed live ----
    void figuresFollowTheCheckpoint() {
        QTemporaryDir tmp;
        // block 0's raw alpha_p set to 3: softplus(3) = 3.0486 becomes the largest effective alpha_p
        const std::string dir = brokenCopy(tmp, "tiny-apertus", {}, [](TensorMap& t) { setAll(t, "model.layers.0.mlp.act_fn.alpha_p", 3.0); });
        auto model = Model::load(dir, nnscope::test::float32());
        auto results = runFamilyChecks(*model);
        const CheckResult* s = findResult(results, "xielu_scalars");
        QVERIFY(s);
        QVERIFY2(s->passed, describe(results).c_str());
        QVERIFY2(s->figure.find("largest at block 0 (3.05)") != std::string::npos, s->figure.c_str());
        // the unchanged fixture: block 2's raw 2.09375 gives 2.21
        auto original = Model::load(nnscope::test::fixture("tiny-apertus"), nnscope::test::float32());
        results = runFamilyChecks(*original);
        s = findResult(results, "xielu_scalars");
        QVERIFY2(s->figure.find("largest at block 2 (2.21)") != std::string::npos, s->figure.c_str());
        // the sink figure is the norm the engine computes
        const CheckResult* sink = findResult(results, "sink_norm");
        QVERIFY(sink && sink->kind == CheckKind::Figure);
        QVERIFY2(sink->figure.find("block ") == 0 && sink->figure.find("×") != std::string::npos, sink->figure.c_str());
    }

    // A GPT-NeoX checkpoint with attention_bias false computes what transformers does without the biases: the note that
    // every projection is biased does not apply to it, and says so instead of failing.
    void projectionBiasesOffIsNotAFailure() {
        QTemporaryDir tmp;
        const std::string src = nnscope::test::fixture("tiny-gpt-neox"), dir = tmp.path().toStdString();
        for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
            QVERIFY(QFile::copy(QString::fromStdString(src + "/" + f), QString::fromStdString(dir + "/" + f)));
        std::ifstream in(src + "/config.json");
        nlohmann::json config = nlohmann::json::parse(in);
        config["attention_bias"] = false;
        std::ofstream(dir + "/config.json") << config.dump(2);
        SafetensorsFile weights(src + "/model.safetensors");
        std::vector<std::pair<std::string, torch::Tensor>> kept;
        for (const auto& [name, entry] : weights.entries()) {
            const bool attentionBias = name.find(".attention.") != std::string::npos && name.size() > 5 && name.rfind(".bias") == name.size() - 5;
            if (!attentionBias) kept.emplace_back(name, weights.tensor(name).clone());
        }
        writeSafetensors(dir + "/model.safetensors", kept, {{"format", "pt"}});
        auto model = Model::load(dir, nnscope::test::float32());
        const auto results = runFamilyChecks(*model);
        const CheckResult* r = findResult(results, "projection_biases:all");
        QVERIFY(r);
        QCOMPARE(r->kind, CheckKind::Skipped);
        QVERIFY2(r->detail.find("attention_bias is false") != std::string::npos, r->detail.c_str());
        // the unchanged fixture still passes it
        auto biased = Model::load(src, nnscope::test::float32());
        const auto biasedResults = runFamilyChecks(*biased);
        const CheckResult* b = findResult(biasedResults, "projection_biases:all");
        QVERIFY(b && b->kind == CheckKind::Claim && b->passed);
    }

    // "The block, in order" follows the checkpoint's config: GPT-NeoX's parallel residual is one line, and a checkpoint
    // with use_parallel_residual false gets the sequential block it computes (it had the parallel formula).
    void blockFormulasFollowTheConfig() {
        auto model = Model::load(nnscope::test::fixture("tiny-gpt-neox"), nnscope::test::float32());
        const Family& f = model->family();
        nlohmann::json raw = model->config().raw;
        raw["use_parallel_residual"] = true;
        const std::vector<std::string> parallel = blockFormulas(f, resolveModelConfig(raw, "parallel"));
        QCOMPARE(parallel.front(), std::string("out = x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x))   # use_parallel_residual"));
        raw["use_parallel_residual"] = false;
        const std::vector<std::string> sequential = blockFormulas(f, resolveModelConfig(raw, "sequential"));
        QCOMPARE(sequential.size(), size_t(3));
        QCOMPARE(sequential[0], std::string("h   = x + attention(input_layernorm(x))"));
        QCOMPARE(sequential[1], std::string("out = h + mlp(post_attention_layernorm(h))"));
        QCOMPARE(sequential[2], std::string("mlp(z) = dense_4h_to_h(gelu(dense_h_to_4h(z)))"));
        // the branch norms around the branches (Gemma 2), GPT-2's learned positions first
        auto gemma = Model::load(nnscope::test::fixture("tiny-gemma2"), nnscope::test::float32());
        QCOMPARE(blockFormulas(gemma->family(), gemma->config()).front(),
                 std::string("h   = x + post_attention_layernorm(self_attn(input_layernorm(x)))"));
        auto gpt2 = Model::load(nnscope::test::fixture("tiny-gpt2"), nnscope::test::float32());
        QCOMPARE(blockFormulas(gpt2->family(), gpt2->config()).front(), std::string("x0  = wte(ids) + wpe(positions)"));
    }

    // ---- the seed pages ----
    void seedPages_data() {
        QTest::addColumn<QString>("family");
        for (const char* f : {"arcee", "apertus", "ernie4_5", "persimmon"}) QTest::newRow(f) << QString(f);
    }
    void seedPages() {
        QFETCH(QString, family);
        const std::string fam = family.toStdString();
        const std::string seed = seedText(fam);
        if (seed.empty()) QSKIP(("no seed page for " + fam + " under " + seedsDir()).c_str());
        auto model = Model::load(nnscope::test::fixture(fixtureOfSeed(fam)), nnscope::test::float32());
        const Family& f = model->family();
        const auto results = runFamilyChecks(*model);
        const std::string md = familyPage(*model, results, PageFormat::Markdown);

        // title and quirk chips: the seed's lines after "family <name>"
        std::vector<std::string> nonEmpty;
        for (const auto& l : lines(seed))
            if (!trim(l).empty()) nonEmpty.push_back(trim(l));
        QCOMPARE(nonEmpty[1], "family " + fam);
        QCOMPARE(nonEmpty[2], f.title);
        std::string chips;
        for (const auto& q : f.quirks) chips += q;
        QCOMPARE(nonEmpty[4], chips);
        QVERIFY(md.rfind("# " + f.title + "\n", 0) == 0);
        for (const auto& q : f.quirks) QVERIFY2(md.find("`" + q + "`") != std::string::npos, q.c_str());

        // values, by host: exactly the seed's rows
        const auto expected = seedRows(seed);
        const auto actual = pageRows(md);
        QVERIFY2(expected.size() == 25, ("the seed parser found " + std::to_string(expected.size()) + " rows").c_str());
        QCOMPARE(actual.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            QVERIFY2(actual[i] == expected[i], ("row " + std::to_string(i) + ":\n page " + rowText(actual[i]) + "\n seed " + rowText(expected[i])).c_str());

        // sections in the seed's order
        const std::vector<std::string> order = {"The block", "The API", "Values, by host", "Printout", "Config", "The Notes", "The block, in order",
                                                "From the family module"};
        size_t at = 0;
        for (const auto& want : order) {
            auto ls = lines(seed);
            auto it = std::find_if(ls.begin() + static_cast<long>(at), ls.end(), [&](const std::string& l) { return trim(l) == want; });
            QVERIFY2(it != ls.end(), ("the seed lacks \"" + want + "\" in order").c_str());
            at = static_cast<size_t>(it - ls.begin()) + 1;
        }
        const auto heads = mdHeadings(md, true);
        const std::vector<std::string> sections = {"## The block", "## The API", "## The Notes", "## From the family module"};
        std::vector<std::string> level2;
        for (const auto& hd : heads)
            if (hd.rfind("## ", 0) == 0) level2.push_back(hd);
        QCOMPARE(level2, sections);
        std::vector<std::string> plain = mdHeadings(md);
        QCOMPARE(plain, familyPageSections(f));
        for (const std::string kicker : {"*01 · the residual stream*", "*02 · support()*", "*03 · what to know before you run*"})
            QVERIFY2(md.find(kicker) != std::string::npos, kicker.c_str());

        // the block, in order: the seed's formulas
        std::vector<std::string> seedFormulas;
        for (const auto& l : seedSection(seed, "The block, in order", {})) {
            if (trim(l).empty()) {
                if (seedFormulas.empty()) continue;  // the blank line under the heading
                break;                               // the blank line after the formulas
            }
            seedFormulas.push_back(l);
        }
        QCOMPARE(seedFormulas, blockFormulas(f, model->config()));
        std::string fenced = "### The block, in order\n\n```python\n";
        for (const auto& l : blockFormulas(f, model->config())) fenced += l + "\n";
        QVERIFY(md.find(fenced + "```") != std::string::npos);

        // the family module's description: the seed's words
        auto desc = seedSection(seed, "04 · nnterp/families/" + fam + ".py", {});
        std::string seedDesc, ourDesc;
        for (const auto& l : desc)
            if (!trim(l).empty()) seedDesc += (seedDesc.empty() ? "" : " ") + trim(l);
        for (const auto& l : lines(f.description))
            if (!trim(l).empty()) ourDesc += (ourDesc.empty() ? "" : " ") + trim(l);
        QCOMPARE(ourDesc, seedDesc);
        QVERIFY(md.find("*04 · families/" + fam + ".cpp*") != std::string::npos);

        // the printout of this checkpoint, verbatim
        QVERIFY(md.find("```text\n" + printout(*model) + "```") != std::string::npos);
        // the config table: the standard sizes, then the raw keys
        for (const auto& [k, v] : standardSizes(model->config()))
            QVERIFY2(md.find("| `model." + k + "` | " + std::to_string(v) + " |") != std::string::npos, k.c_str());
        for (auto it = model->config().raw.begin(); it != model->config().raw.end(); ++it)
            QVERIFY2(md.find("| `" + it.key() + "` |") != std::string::npos, it.key().c_str());
        // every note, with its checks marked
        for (const auto& note : f.notes) {
            QVERIFY2(mdUnescape(md).find(note.text) != std::string::npos, note.title.c_str());
            for (const auto& id : note.checks) QVERIFY2(md.find("- ✔ `" + id + "`") != std::string::npos || md.find("- ℹ `" + id + "`") != std::string::npos ||
                                                            md.find("- – `" + id + "`") != std::string::npos,
                                                        id.c_str());
        }

        // the HTML page: the same sections in the same order, escaped, self-contained
        const std::string html = familyPage(*model, results, PageFormat::Html);
        QVERIFY(html.rfind("<!DOCTYPE html>", 0) == 0);
        QCOMPARE(htmlHeadings(html), heads);
        QVERIFY(html.find("<title>" + f.title) != std::string::npos);
        QVERIFY(html.find("<script") == std::string::npos);
        QVERIFY(html.find("http://") == std::string::npos && html.find("https://") == std::string::npos);
        QVERIFY(html.find("<s>") == std::string::npos);  // the BOS token is text, not a tag
        QVERIFY(html.find("⚠︎") != std::string::npos);
        // colours: a saved page follows the reader's dark mode; the window's light and dark pages carry one scheme each
        const std::string light = familyPage(*model, results, PageFormat::Html, PageColours::Light);
        const std::string dark = familyPage(*model, results, PageFormat::Html, PageColours::Dark);
        QVERIFY(html.find("@media (prefers-color-scheme: dark)") != std::string::npos);
        QVERIFY(light.find("@media") == std::string::npos && dark.find("@media") == std::string::npos);
        QVERIFY(light.find("background: #1e2129") == std::string::npos);
        QVERIFY(dark.find("body { color: #dfe3ec; background: #1e2129; }") > dark.find("background: #fff"));  // after the light rules
        QCOMPARE(htmlHeadings(dark), heads);
    }

    void markdownEscapes() {
        auto model = Model::load(nnscope::test::fixture("tiny-apertus"), nnscope::test::float32());
        const std::string md = familyPage(*model, runFamilyChecks(*model), PageFormat::Markdown);
        // "<s>" in a note must not become an HTML tag in a Markdown renderer
        QVERIFY(md.find("prepends \\<s>") != std::string::npos);
        QVERIFY(md.find(" <s>") == std::string::npos);
    }

    void formatNames() {
        QCOMPARE(parsePageFormat("md"), PageFormat::Markdown);
        QCOMPARE(parsePageFormat("Markdown"), PageFormat::Markdown);
        QCOMPARE(parsePageFormat("HTML"), PageFormat::Html);
        QVERIFY_EXCEPTION_THROWN(parsePageFormat("pdf"), Error);
    }

    // ---- the command line ----
    void commandLine() {
        const QString binary = NNSCOPE_BINARY;
        if (!QFileInfo::exists(binary)) QSKIP("the nnscope binary is not built");
        QTemporaryDir tmp;
        const QString out = tmp.path() + "/page.html";
        QProcess p;
        p.start(binary, {"family", "--model", QString::fromStdString(nnscope::test::fixture("tiny-persimmon")), "--format", "html", "--out", out,
                         "--threads", "1"});
        QVERIFY(p.waitForFinished(120000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(err.contains(QRegularExpression("checks: \\d+ passed, 0 failed")), qPrintable(err));
        QVERIFY(p.readAllStandardOutput().isEmpty());
        const std::string html = readText(out.toStdString());
        QVERIFY(html.rfind("<!DOCTYPE html>", 0) == 0);
        QVERIFY(html.find("Persimmon") != std::string::npos);

        // a failing check: still exit 0, the summary counts it, Markdown on stdout
        const std::string broken = brokenCopy(tmp, "tiny-arcee", [](auto& j) { j["hidden_act"] = "silu"; }, {});
        p.start(binary, {"family", "--model", QString::fromStdString(broken), "--prompt", "Tom and Lily went to the park"});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        const QString err2 = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err2.contains(QRegularExpression("checks: \\d+ passed, [1-9]\\d* failed")), qPrintable(err2));
        QVERIFY(err2.contains("relu2_zeros"));
        QVERIFY(p.readAllStandardOutput().startsWith("# Arcee AFM\n"));

        // errors: non-zero, nothing written
        const QString never = tmp.path() + "/never.md";
        p.start(binary, {"family", "--model", QString::fromStdString(nnscope::test::fixture("tiny-arcee")), "--format", "pdf", "--out", never});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY(p.exitCode() != 0);
        QVERIFY(!QFileInfo::exists(never));
        p.start(binary, {"family", "--model", tmp.path() + "/missing", "--out", never});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY(p.exitCode() != 0);
        QVERIFY(!QFileInfo::exists(never));
        QVERIFY(!QString::fromUtf8(p.readAllStandardError()).isEmpty());
        // a prompt too short for the checks: refused with the reason (the checkpoint is not to blame), nothing written
        p.start(binary, {"family", "--model", QString::fromStdString(nnscope::test::fixture("tiny-llama")), "--prompt", "a", "--out", never});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        const QString err3 = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err3.contains("need at least 3 positions"), qPrintable(err3));
        QVERIFY(!QFileInfo::exists(never));
    }

    /// The three families that vary per block or wrap their language model: `family`, `support --json` and `print` on
    /// their fixtures, every check passing; the multimodal wrapper says on stderr and in its printout that the vision
    /// tower is skipped.
    void newFamiliesOnTheCommandLine_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("title");
        QTest::addColumn<QString>("modelType");
        QTest::newRow("smollm3") << "tiny-smollm3" << "SmolLM3" << "smollm3";
        QTest::newRow("olmo3") << "tiny-olmo3" << "OLMo 3" << "olmo3";
        QTest::newRow("gemma3") << "tiny-gemma3-mm" << "Gemma 3 (multimodal, text tower)" << "gemma3";
    }
    void newFamiliesOnTheCommandLine() {
        QFETCH(QString, fixture);
        QFETCH(QString, title);
        QFETCH(QString, modelType);
        const QString binary = NNSCOPE_BINARY;
        if (!QFileInfo::exists(binary)) QSKIP("the nnscope binary is not built");
        const QString dir = QString::fromStdString(nnscope::test::fixture(fixture.toStdString()));
        const bool wrapper = modelType == "gemma3";
        QProcess p;
        p.start(binary, {"family", "--model", dir, "--threads", "1"});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains(QRegularExpression("checks: [1-9]\\d* passed, 0 failed")), qPrintable(err));
        const QString page = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(page.startsWith("# " + title + "\n"), qPrintable(page.left(200)));
        if (modelType == "smollm3") QVERIFY(page.contains("NoPE blocks") && page.contains("no_rope_layers"));
        if (modelType == "olmo3") QVERIFY(page.contains("A sliding window per block"));
        if (wrapper) QVERIFY(page.contains("Vision tower skipped: text prompts only"));

        p.start(binary, {"support", "--model", dir, "--json"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const nlohmann::json j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(QString::fromStdString(j["family"].get<std::string>()), modelType);
        const QString supportErr = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(supportErr.contains("vision tower skipped: text prompts only"), wrapper);
        QVERIFY2(!supportErr.contains("warning"), qPrintable(supportErr));

        p.start(binary, {"print", "--model", dir});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString printed = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(printed.contains("(q_proj): Linear("), qPrintable(printed));
        QCOMPARE(printed.contains("(vision_tower, multi_modal_projector): vision tower skipped: text prompts only"), wrapper);
    }

    void shortPromptRunsNoCheck() {
        // Fewer than 3 tokens: an error saying so, not a page of checks marked failed.
        auto m = Model::load(nnscope::test::fixture("tiny-llama"));
        const std::vector<int64_t> ids = encodeBatch(*m, {"a"}).ids[0];
        QVERIFY(ids.size() < 3);
        try {
            runFamilyChecks(*m, "a");
            QFAIL("a prompt of fewer than 3 tokens ran the checks");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("at least 3 positions"), e.what());
        }
        const auto results = runFamilyChecks(*m);  // the default prompt: every check runs
        QVERIFY(!results.empty());
        for (const auto& r : results) QVERIFY2(r.figure != "could not run", r.detail.c_str());
    }
};

NNSCOPE_TEST_SUITE(TestFamilyPage, "test_family_page")
#include "test_family_page.moc"
