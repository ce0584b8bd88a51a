// SPDX-License-Identifier: MIT
// Helpers shared by the Qt Test programs: paths of the fixtures and tensor comparison with a message.
#pragma once
#include "core/model/model.h"
#include "core/io/safetensors.h"

#include <torch/types.h>

#include <QString>
#include <QTest>

#include <sstream>
#include <string>

namespace nnscope::test {

inline std::string fixturesDir() { return NNSCOPE_FIXTURES_DIR; }
/// Loading in float32 whatever the CPU: tests whose tolerances are float32's must not follow "auto" into bfloat16 on a
/// CPU with native bfloat16.
inline nnscope::LoadOptions float32() { return nnscope::LoadOptions().withDtype(torch::kFloat32); }
inline std::string fixture(const std::string& name) { return fixturesDir() + "/models/" + name; }
inline std::string sharedModels() { return NNSCOPE_SHARED_MODELS_DIR; }
/// The token ids of fixture `name`'s single golden prompt (golden_float32.safetensors "single.input_ids"), [seq].
inline std::vector<int64_t> goldenIds(const std::string& name) {
    nnscope::SafetensorsFile golden(fixture(name) + "/golden_float32.safetensors");
    const torch::Tensor ids = golden.tensor("single.input_ids");
    return std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
}

/// Max |a - b| and whether allclose(a, b, rtol, atol) holds (torch's definition: |a-b| <= atol + rtol*|b|).
struct Closeness {
    bool ok;
    double maxAbs;
    std::string message;
};

inline Closeness compare(const torch::Tensor& actual, const torch::Tensor& expected, double rtol, double atol) {
    std::ostringstream s;
    if (actual.sizes() != expected.sizes()) {
        s << "shape " << actual.sizes() << " != expected " << expected.sizes();
        return {false, INFINITY, s.str()};
    }
    auto a = actual.to(torch::kFloat64), b = expected.to(torch::kFloat64);
    auto diff = (a - b).abs();
    const double maxAbs = diff.numel() ? diff.max().item<double>() : 0.0;
    auto bad = diff > (atol + rtol * b.abs());
    const int64_t nbad = bad.sum().item<int64_t>();
    if (nbad) {
        auto idx = bad.flatten().nonzero().index({0}).item<int64_t>();
        s << nbad << " of " << a.numel() << " elements differ; max |diff| " << maxAbs << "; first at flat index " << idx
          << ": " << a.flatten()[idx].item<double>() << " vs expected " << b.flatten()[idx].item<double>()
          << " (rtol " << rtol << ", atol " << atol << ")";
    }
    return {nbad == 0, maxAbs, s.str()};
}

}  // namespace nnscope::test

#define NNSCOPE_COMPARE_TENSORS(actual, expected, rtol, atol)                                            \
    do {                                                                                                  \
        const auto _c = nnscope::test::compare((actual), (expected), (rtol), (atol));                     \
        QVERIFY2(_c.ok, _c.message.c_str());                                                              \
    } while (0)
