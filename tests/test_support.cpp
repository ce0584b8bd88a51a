// SPDX-License-Identifier: MIT
// `support` and `print` against the seeds (../shared/seeds, read at test time): for each seed family, the values by
// host with their layouts, descriptions and read-at places, and the printout of the native modules with the standard
// names, generated from families/ and a config built from the seed's own Config table.
#include "core/model/family.h"
#include "core/model/model.h"
#include "core/pages/support.h"
#include "core/model/weights.h"
#include "manifest.h"
#include "testutil.h"

#include "testsuite.h"

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <regex>

using namespace nnscope;
namespace fs = std::filesystem;

namespace supporttest {  // named, not anonymous: TestSupport (global) holds a vector of its Seed

struct Seed {
    std::string family;
    std::vector<std::string> lines;
};

std::vector<Seed> loadSeeds() {
    std::vector<Seed> out;
    const fs::path dir = fs::path(test::sharedModels()) / ".." / "seeds";
    if (!fs::exists(dir)) return out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        Seed s;
        std::ifstream in(f);
        std::string l;
        while (std::getline(in, l)) s.lines.push_back(l);
        for (const auto& line : s.lines)
            if (line.rfind("family ", 0) == 0) s.family = line.substr(7);
        out.push_back(std::move(s));
    }
    return out;
}

size_t indexOf(const Seed& s, const std::string& line, size_t from = 0) {
    for (size_t i = from; i < s.lines.size(); ++i)
        if (s.lines[i] == line) return i;
    return std::string::npos;
}

/// The seed's Config table as config.json keys ("num_hidden_layers36" -> {"num_hidden_layers": 36}).
nlohmann::json seedConfig(const Seed& s) {
    const size_t a = indexOf(s, "Config"), b = indexOf(s, "The Notes", a);
    static const std::vector<std::string> keys = {
        "architectures", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
        "head_dim", "vocab_size", "max_position_embeddings", "hidden_act", "rms_norm_eps", "layer_norm_eps",
        "tie_word_embeddings", "dtype", "attention_bias", "qk_layernorm", "use_bias"};
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = a + 1; i < b; ++i) {
        const std::string& l = s.lines[i];
        if (l.rfind("model.", 0) == 0) continue;  // nnterp's standard sizes
        for (const auto& k : keys) {
            if (l.rfind(k, 0) != 0) continue;
            const std::string v = l.substr(k.size());
            if (v == "True" || v == "False") j[k] = v == "True";
            else if (k == "architectures") j[k] = {v};
            else if (std::regex_match(v, std::regex("-?[0-9]+"))) j[k] = std::stoll(v);
            else if (std::regex_match(v, std::regex("-?[0-9.]+(e-?[0-9]+)?"))) j[k] = std::stod(v);
            else j[k] = v;
            break;
        }
    }
    j["model_type"] = s.family;
    return j;
}

}  // namespace supporttest
using namespace supporttest;

class TestSupport : public QObject {
    Q_OBJECT
    std::vector<Seed> seeds_;

private slots:
    /// Every fixture family's printout names every module that owns a weight (from the weight schema, so a fused or
    /// renamed module is printed under its own name) and no line lacks its module's name.
    void printoutNamesEveryModule_data() {
        QTest::addColumn<QString>("fixture");
        for (const auto& f : test::fixtureNames(test::fixturesDir() + "/models")) QTest::newRow(f.c_str()) << QString::fromStdString(f);
    }
    void printoutNamesEveryModule() {
        QFETCH(QString, fixture);
        auto m = Model::load(test::fixture(fixture.toStdString()), LoadOptions().withTokenizer(false));
        const std::string text = printout(*m);
        QVERIFY2(text.find("(): ") == std::string::npos, text.c_str());
        QVERIFY2(text.rfind(m->config().architectures.front() + "(", 0) == 0, text.c_str());
        for (const WeightSpec& w : weightSchema(m->family(), m->config())) {
            if (w.key.module == Module::ActFn) continue;  // xIELU's scalars: act_fn has no line of its own for them
            // one expert's projections are the experts module's stacked parameters, printed on its line (as transformers'
            // Qwen3MoeExperts has no child modules)
            const bool expert = w.key.module == Module::ExpertGateProj || w.key.module == Module::ExpertUpProj ||
                                w.key.module == Module::ExpertDownProj;
            QVERIFY2(text.find("(" + m->family().moduleLabel(expert ? Module::Experts : w.key.module) + "): ") != std::string::npos,
                     (w.name + " has no module line in:\n" + text).c_str());
        }
    }

    void initTestCase() {
        seeds_ = loadSeeds();
        QCOMPARE(seeds_.size(), size_t(4));
    }

    void printoutEqualsSeed_data() {
        QTest::addColumn<int>("seed");
        for (size_t i = 0; i < seeds_.size(); ++i) QTest::newRow(seeds_[i].family.c_str()) << static_cast<int>(i);
    }
    void printoutEqualsSeed() {
        QFETCH(int, seed);
        const Seed& s = seeds_[static_cast<size_t>(seed)];
        const nlohmann::json raw = seedConfig(s);
        const Family* fam = nullptr;
        const ModelConfig cfg = resolveModelConfig(raw, "seed config", &fam);
        QCOMPARE(fam->modelType, s.family);
        std::istringstream ours(printout(*fam, cfg));
        std::vector<std::string> got;
        for (std::string l; std::getline(ours, l);) got.push_back(l);
        const size_t start = indexOf(s, hostClass(*fam, Host::Model) + "(");
        QVERIFY(start != std::string::npos);
        std::vector<std::string> want;
        for (size_t i = start; i < s.lines.size() && s.lines[i] != "Config"; ++i)
            if (!s.lines[i].empty()) want.push_back(s.lines[i]);
        QCOMPARE(got.size(), want.size());
        const std::regex digits("[0-9.]+");
        for (size_t i = 0; i < want.size(); ++i) {
            std::string g = got[i], w = want[i];
            if (w.find("Dropout(") != std::string::npos) {  // the dropout rate is the checkpoint's, not in the seed's table
                g = std::regex_replace(g, digits, "N");
                w = std::regex_replace(w, digits, "N");
            }
            QVERIFY2(g == w, ("line " + std::to_string(i) + ":\n  ours: " + got[i] + "\n  seed: " + want[i]).c_str());
        }
    }

    void supportTableEqualsSeed_data() { printoutEqualsSeed_data(); }
    void supportTableEqualsSeed() {
        QFETCH(int, seed);
        const Seed& s = seeds_[static_cast<size_t>(seed)];
        const Family* fam = nullptr;
        resolveModelConfig(seedConfig(s), "seed config", &fam);
        // the seed: host header lines, then pairs (value line, read-at line)
        std::vector<std::string> want;
        const size_t a = indexOf(s, "Values, by host"), b = indexOf(s, "Printout", a);
        QVERIFY(a != std::string::npos && b != std::string::npos);
        for (size_t i = a + 1; i < b; ++i) {
            const std::string& l = s.lines[i];
            if (l.empty() || l.rfind("⚠︎ marks", 0) == 0) continue;
            want.push_back(l);
        }
        std::vector<std::string> got;
        Host last = Host::Mlp;
        bool first = true;
        for (const auto& r : supportTable(*fam)) {
            if (first || r.host != last) got.push_back(r.hostPath + " " + r.hostClass + "layoutwhat it isread at");
            first = false;
            last = r.host;
            got.push_back((r.eagerOnly ? "⚠︎" : "") + r.name + " " + r.layout + " " + r.description);
            got.push_back(r.readAt);
        }
        QCOMPARE(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i)
            QVERIFY2(got[i] == want[i], ("row " + std::to_string(i) + ":\n  ours: " + got[i] + "\n  seed: " + want[i]).c_str());
    }

    void supportCommandPrintsEveryValue() {
        auto m = Model::load(test::fixture("tiny-apertus"), LoadOptions().withTokenizer(false));
        const auto j = supportJson(*m);
        QCOMPARE(j["family"].get<std::string>(), std::string("apertus"));
        size_t n = 0;
        for (const auto& h : j["hosts"]) n += h["values"].size();
        QCOMPARE(n, standardValues().size());
        QCOMPARE(j["sizes"]["num_layers"].get<int64_t>(), int64_t(3));
        const std::string text = supportText(*m);
        for (Value v : standardValues()) QVERIFY(text.find(valueInfo(v).name) != std::string::npos);
    }

    // Native values are listed after the sizes with their availability: Gemma 2's pre-MLP norm before its gain by its
    // path; on OLMo 2 (no pre-norms) it is missing, with the reason.
    void supportListsNativeValues() {
        auto gemma2 = Model::load(test::fixture("tiny-gemma2"), LoadOptions().withTokenizer(false));
        bool found = false;
        const nlohmann::json j = supportJson(*gemma2);
        for (const auto& n : j["native_values"])
            if (n["available"].get<bool>() && n["path"] == "layers.i.pre_feedforward_layernorm.normalized") found = true;
        QVERIFY(found);
        QVERIFY(supportText(*gemma2).find("layers.i.pre_feedforward_layernorm.normalized\tResidual [batch seq hidden_size]") != std::string::npos);
        auto olmo2 = Model::load(test::fixture("tiny-olmo2"), LoadOptions().withTokenizer(false));
        for (const NativeValueRow& r : nativeValueRows(*olmo2))
            if (r.value == Value::NativePostAttentionNormNormalized) {
                QVERIFY(!r.available);
                QVERIFY2(r.whyNot.find("unnormed") != std::string::npos, r.whyNot.c_str());
            }
    }
};

NNSCOPE_TEST_SUITE(TestSupport, "test_support")
#include "test_support.moc"
