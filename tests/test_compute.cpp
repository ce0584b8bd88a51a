// SPDX-License-Identifier: MIT
// How a pass computes, not what: the compute dtype chosen for the CPU (issue 12: bfloat16 only where the CPU has it,
// float32 elsewhere and said so, never a float32 copy that does not fit), and the single-row float32 linear that
// one-token passes use (core/model/gemv.h) against libtorch's.
#include "core/model/compute_dtype.h"
#include "core/model/error.h"
#include "core/model/gemv.h"
#include "core/model/model.h"
#include "core/run/trace.h"
#include "core/run/openblas.h"
#include "testutil.h"

#include "testsuite.h"

#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

using namespace nnscope;

namespace {

constexpr uint64_t GB = 1000ull * 1000 * 1000;

DtypeRequest request(std::optional<torch::ScalarType> stored, std::optional<torch::ScalarType> requested, bool cpuBf16,
                     uint64_t needed = 2 * GB, std::optional<uint64_t> available = 16 * GB) {
    DtypeRequest r;
    r.stored = stored;
    r.requested = requested;
    r.cpuHasBfloat16 = cpuBf16;
    r.float32Bytes = needed;
    r.availableBytes = available;
    r.checkpoint = "/models/big";
    return r;
}

/// linear(x, w, b) in float64, the reference both float32 paths round from.
torch::Tensor exactLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    auto y = torch::matmul(x.to(torch::kFloat64), w.to(torch::kFloat64).t());
    return b.defined() ? y + b.to(torch::kFloat64) : y;
}

}  // namespace

class TestCompute : public QObject {
    Q_OBJECT
private slots:
    /// Debian's OpenBLAS 0.3.21 falls back to its generic Prescott kernels on CPUs newer than it; nnscope restarts
    /// itself with OPENBLAS_CORETYPE so that libtorch's matrix products run this CPU's kernels (core/run/openblas.h).
    void openBlasRunsThisCpusKernels() {
        QProcess p;
        p.start(NNSCOPE_BINARY, {"--version"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        const int at = out.indexOf("OpenBLAS core: ");
        if (at < 0) QSKIP("this build's BLAS is not OpenBLAS");
        const QString core = out.mid(at + 15).trimmed();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            QVERIFY2(core != "Prescott", qPrintable("OpenBLAS runs its generic kernels: " + core));
        // and the way out is there: told to keep the core, the program keeps what OpenBLAS chose
        QProcess keep;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("OPENBLAS_CORETYPE", "Haswell");
        keep.setProcessEnvironment(env);
        keep.start(NNSCOPE_BINARY, {"--version"});
        QVERIFY(keep.waitForFinished(30000));
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            QVERIFY(QString::fromUtf8(keep.readAllStandardOutput()).contains("OpenBLAS core: Haswell"));
    }

    /// OpenBLAS and libtorch share one thread pool: every OpenBLAS this process loaded (Debian's libtorch loads it as
    /// libblas.so.3 and as libopenblas.so.0, each a Debian alternative of its own) is the OpenMP build, never the
    /// pthreads one whose pool fights libtorch's over the cores (#29; packaging/install-deps.sh installs
    /// libopenblas0-openmp in place of libopenblas0-pthread). `nnscope --version` says which it runs.
    void blasSharesLibtorchsThreadPool() {
        torch::mm(torch::ones({64, 64}), torch::ones({64, 64}));  // the BLAS is loaded and has started its threads
        const std::vector<BlasLibrary> libs = loadedBlasLibraries();
        bool openBlas = false;
        for (const auto& lib : libs) {
            QVERIFY2(lib.threading != "pthreads",
                     qPrintable(QString::fromStdString(lib.path) + " is the pthreads build of OpenBLAS: its own thread pool "
                                "beside libtorch's (install libopenblas0-openmp, remove libopenblas0-pthread)"));
            openBlas = openBlas || lib.threading == "OpenMP" || lib.threading == "sequential";
        }
        if (!openBlas) QSKIP("this build's BLAS is not OpenBLAS");
        QProcess p;
        p.start(NNSCOPE_BINARY, {"--version"});
        QVERIFY(p.waitForFinished(30000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains(QRegularExpression("BLAS: OpenBLAS .*\\((OpenMP: one thread pool with libtorch|threading:)")), qPrintable(out));
    }

    /// Every branch of resolveComputeDtype, on any CPU: the CPU's answer and the memory are inputs.
    void resolveDtype_data() {
        QTest::addColumn<int>("stored");     // -1: unknown
        QTest::addColumn<int>("requested");  // -1: auto
        QTest::addColumn<bool>("cpuBf16");
        QTest::addColumn<qulonglong>("available");  // 0: unknown
        QTest::addColumn<int>("dtype");
        QTest::addColumn<QString>("note");   // a word the note holds ("" = no note)
        QTest::addColumn<QString>("error");  // a word the error holds ("" = no error)
        const int f32 = int(torch::kFloat32), bf16 = int(torch::kBFloat16), f16 = int(torch::kFloat16);
        const qulonglong plenty = 16 * GB, little = 1 * GB;
        QTest::newRow("auto, bf16 stored, CPU with bf16") << bf16 << -1 << true << plenty << bf16 << "" << "";
        QTest::newRow("auto, bf16 stored, CPU without bf16") << bf16 << -1 << false << plenty << f32 << "no native bfloat16" << "";
        QTest::newRow("auto, bf16 stored, no bf16, no room") << bf16 << -1 << false << little << f32 << "" << "--dtype bfloat16";
        QTest::newRow("auto, bf16 stored, no bf16, memory unknown") << bf16 << -1 << false << 0ull << f32 << "computing in float32" << "";
        QTest::newRow("auto, bf16 stored, CPU with bf16, no room") << bf16 << -1 << true << little << bf16 << "" << "";
        QTest::newRow("auto, f32 stored") << f32 << -1 << false << little << f32 << "" << "";
        QTest::newRow("auto, f32 stored, CPU with bf16") << f32 << -1 << true << plenty << f32 << "" << "";
        QTest::newRow("auto, stored unknown") << -1 << -1 << true << plenty << f32 << "" << "";
        QTest::newRow("auto, f16 stored") << f16 << -1 << true << plenty << f32 << "stored in float16" << "";
        QTest::newRow("auto, f16 stored, no room") << f16 << -1 << true << little << f32 << "" << "half that size";
        QTest::newRow("float32 forced, bf16 stored, CPU with bf16") << bf16 << f32 << true << plenty << f32 << "" << "";
        QTest::newRow("float32 forced, no room: the user asked") << bf16 << f32 << false << little << f32 << "" << "";
        QTest::newRow("bfloat16 forced, CPU without bf16") << bf16 << bf16 << false << plenty << bf16 << "" << "";
        QTest::newRow("bfloat16 forced, f32 stored") << f32 << bf16 << false << little << bf16 << "" << "";
    }
    void resolveDtype() {
        QFETCH(int, stored);
        QFETCH(int, requested);
        QFETCH(bool, cpuBf16);
        QFETCH(qulonglong, available);
        QFETCH(int, dtype);
        QFETCH(QString, note);
        QFETCH(QString, error);
        auto opt = [](int v) { return v < 0 ? std::nullopt : std::optional<torch::ScalarType>(torch::ScalarType(v)); };
        const DtypeDecision d = resolveComputeDtype(request(opt(stored), opt(requested), cpuBf16, 2 * GB,
                                                            available ? std::optional<uint64_t>(available) : std::nullopt));
        if (!error.isEmpty()) {
            QVERIFY2(QString::fromStdString(d.error).contains(error), d.error.c_str());
            // the estimate, the memory available and the folder, so that the user can act
            QVERIFY2(QString::fromStdString(d.error).contains("2.0 GB"), d.error.c_str());
            QVERIFY2(QString::fromStdString(d.error).contains("1.0 GB"), d.error.c_str());
            QVERIFY2(QString::fromStdString(d.error).contains("/models/big"), d.error.c_str());
            QVERIFY(d.note.empty());
            return;
        }
        QVERIFY2(d.error.empty(), d.error.c_str());
        QCOMPARE(int(d.dtype), dtype);
        if (note.isEmpty()) {
            QVERIFY2(d.note.empty(), d.note.c_str());
        } else {
            QVERIFY2(QString::fromStdString(d.note).contains(note), d.note.c_str());
            QVERIFY2(QString::fromStdString(d.note).contains("/models/big"), d.note.c_str());
            QVERIFY2(QString::fromStdString(d.note).contains("--dtype bfloat16"), d.note.c_str());
        }
    }

    void parseRequest() {
        QVERIFY(!parseDtypeRequest("auto").has_value());
        QCOMPARE(*parseDtypeRequest("bf16"), torch::kBFloat16);
        QCOMPARE(*parseDtypeRequest("float32"), torch::kFloat32);
        QCOMPARE(dtypeRequestName(std::nullopt), std::string("auto"));
        QCOMPARE(dtypeRequestName(torch::kBFloat16), std::string("bfloat16"));
        QVERIFY_THROWS_EXCEPTION(Error, parseDtypeRequest("float13"));
        QCOMPARE(*configDtype("torch.bfloat16"), torch::kBFloat16);
        QCOMPARE(*configDtype("float16"), torch::kFloat16);
        QVERIFY(!configDtype("auto").has_value());
    }

    /// The detector agrees with what the kernel reports in /proc/cpuinfo (avx512_bf16 or amx_bf16 among the flags).
    void detectorAgreesWithCpuinfo() {
        QFile f("/proc/cpuinfo");
        if (!f.open(QIODevice::ReadOnly)) QSKIP("no /proc/cpuinfo here");
        QString flags;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("flags")) {
                flags = QString::fromUtf8(line);
                break;
            }
        if (flags.isEmpty()) QSKIP("/proc/cpuinfo lists no flags (not x86)");
        const QStringList words = flags.split(' ', Qt::SkipEmptyParts);
        QCOMPARE(cpuHasNativeBfloat16(), words.contains("avx512_bf16") || words.contains("amx_bf16"));
        QVERIFY(availableMemoryBytes().has_value());
        QVERIFY(*availableMemoryBytes() > 0);
    }

    /// A bfloat16-stored fixture with default options computes in float32 exactly where the CPU lacks bfloat16, and
    /// says so once; --dtype bfloat16 still gives bfloat16, with no note; the values are the float32 ones.
    void defaultFollowsTheCpu() {
        const std::string dir = test::fixture("tiny-llama");  // config.json: torch_dtype bfloat16
        auto m = Model::load(dir, LoadOptions().withTokenizer(false));
        const bool native = cpuHasNativeBfloat16();
        QCOMPARE(m->dtype(), native ? torch::kBFloat16 : torch::kFloat32);
        QCOMPARE(m->notes().size(), size_t(native ? 0 : 1));
        if (!native) QVERIFY2(QString::fromStdString(m->notes().front()).contains("computing in float32"), m->notes().front().c_str());
        QVERIFY(m->warnings().empty());  // a note is not a warning
        QCOMPARE(m->embedTokens().scalar_type(), m->dtype());

        auto forced = Model::load(dir, LoadOptions().withDtype(torch::kBFloat16).withTokenizer(false));
        QCOMPARE(forced->dtype(), torch::kBFloat16);
        QVERIFY(forced->notes().empty());
        auto f32 = Model::load(dir, LoadOptions().withDtype(torch::kFloat32).withTokenizer(false));
        QCOMPARE(f32->dtype(), torch::kFloat32);
        QVERIFY(f32->notes().empty());
        // a float32 checkpoint stays float32 under auto, with nothing to say
        auto stories = Model::load(test::sharedModels() + "/stories260K-llama", LoadOptions().withTokenizer(false));
        QCOMPARE(stories->dtype(), torch::kFloat32);
        QVERIFY(stories->notes().empty());
    }

    /// The command line prints the note once on stderr (where the CPU lacks bfloat16), and --dtype auto is the default.
    void commandLineSaysSo() {
        const QString dir = QString::fromStdString(test::fixture("tiny-llama"));
        for (const QStringList& extra : {QStringList{}, QStringList{"--dtype", "auto"}, QStringList{"--dtype", "bfloat16"}}) {
            QProcess p;
            p.start(NNSCOPE_BINARY, QStringList{"trace", "--model", dir, "--prompt", "Tom", "--json"} + extra);
            QVERIFY(p.waitForFinished(60000));
            QCOMPARE(p.exitCode(), 0);
            const QString err = QString::fromUtf8(p.readAllStandardError());
            const bool forced = extra.contains("bfloat16");
            QCOMPARE(err.count("nnscope: note:"), forced || cpuHasNativeBfloat16() ? 0 : 1);
            const auto json = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
            QCOMPARE(json.at("dtype").get<std::string>(),
                     std::string(forced || cpuHasNativeBfloat16() ? "bfloat16" : "float32"));
        }
    }

    /// singleRowLinear equals torch::linear within float32 rounding, on shapes with and without a vector tail, with a
    /// bias, with extra leading axes, on one thread and on several.
    void singleRowLinearMatches_data() {
        QTest::addColumn<int>("out");
        QTest::addColumn<int>("in");
        QTest::addColumn<bool>("bias");
        QTest::newRow("1024 -> 3072") << 3072 << 1024 << false;
        QTest::newRow("3072 -> 1024, bias") << 1024 << 3072 << true;
        QTest::newRow("odd 37 -> 5") << 5 << 37 << true;
        QTest::newRow("short 7 -> 130") << 130 << 7 << false;
        QTest::newRow("lm_head-like 256 -> 20000") << 20000 << 256 << false;
    }
    void singleRowLinearMatches() {
        QFETCH(int, out);
        QFETCH(int, in);
        QFETCH(bool, bias);
        c10::InferenceMode guard;
        torch::manual_seed(out * 31 + in);
        const auto x = torch::randn({1, 1, in}), w = torch::randn({out, in}) * 0.05;
        const auto b = bias ? torch::randn({out}) : torch::Tensor();
        QVERIFY(singleRowLinearApplies(x, w, b));
        const int threads = at::get_num_threads();
        for (int n : {1, 2, 4}) {
            at::set_num_threads(n);
            const auto y = singleRowLinear(x, w, b);
            QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{1, 1, out}));
            const auto exact = exactLinear(x, w, b);
            const auto lib = b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
            // float32 rounding of a sum of `in` products: a few ulps of the sum of |terms| (no more than torch's own error)
            const auto scale = torch::matmul(x.abs().to(torch::kFloat64), w.abs().to(torch::kFloat64).t()) + 1e-30;
            const double ours = ((y.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
            const double theirs = ((lib.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
            QVERIFY2(ours < 4 * in * 6e-8 + 1e-7, qPrintable(QString("relative error %1 (libtorch: %2)").arg(ours).arg(theirs)));
            QVERIFY(torch::allclose(y, lib, /*rtol=*/1e-4, /*atol=*/1e-5));
        }
        at::set_num_threads(threads);
    }

    /// bfloat16: singleRowLinear widens the weights to float32 as it reads them, sums in float32 and rounds once, so it
    /// is the float64 product rounded to bfloat16 within the float32 sum's error, and no further from it than libtorch's
    /// own bfloat16 linear (oneDNN) is.
    void singleRowLinearBf16Matches_data() { singleRowLinearMatches_data(); }
    void singleRowLinearBf16Matches() {
        QFETCH(int, out);
        QFETCH(int, in);
        QFETCH(bool, bias);
        c10::InferenceMode guard;
        torch::manual_seed(out * 17 + in);
        const auto x = torch::randn({1, 1, in}).to(torch::kBFloat16), w = (torch::randn({out, in}) * 0.05).to(torch::kBFloat16);
        const auto b = bias ? torch::randn({out}).to(torch::kBFloat16) : torch::Tensor();
        QVERIFY(singleRowLinearApplies(x, w, b));
        const auto y = singleRowLinear(x, w, b);
        QCOMPARE(y.scalar_type(), torch::kBFloat16);
        QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{1, 1, out}));
        const auto exact = exactLinear(x, w, b);
        const auto lib = b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
        const auto scale = torch::matmul(x.abs().to(torch::kFloat64), w.abs().to(torch::kFloat64).t()) + exact.abs() + 1e-30;
        const double ours = ((y.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
        const double theirs = ((lib.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
        // one bfloat16 rounding (2^-9 of the value) plus the float32 sum's error
        QVERIFY2(ours <= std::pow(2.0, -9) * 1.001 + 4 * in * 6e-8, qPrintable(QString("relative error %1 (libtorch: %2)").arg(ours).arg(theirs)));
        QVERIFY2(ours <= theirs * 1.001 + 1e-6, qPrintable(QString("relative error %1 above libtorch's %2").arg(ours).arg(theirs)));
    }

    /// Where it does not apply (several rows, mixed dtypes, a transposed weight, autograd), the engine keeps torch::linear
    /// and singleRowLinear refuses, naming the shapes.
    void singleRowLinearScope() {
        const auto w = torch::randn({8, 4});
        QVERIFY(!singleRowLinearApplies(torch::randn({2, 4}), w, {}));
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}).to(torch::kBFloat16), w, {}));  // mixed dtypes
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}), w, torch::randn({8}).to(torch::kBFloat16)));
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 8}), w.t(), {}));
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}), w, torch::randn({7})));
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}), w.clone().requires_grad_(true), {}));
        {
            torch::NoGradGuard noGrad;  // no gradient asked for: the fast path is fine
            QVERIFY(singleRowLinearApplies(torch::randn({1, 4}), w.clone().requires_grad_(true), {}));
        }
        try {
            singleRowLinear(torch::randn({2, 4}), w, {});
            QFAIL("two rows were accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("[2, 4]"), e.what());
        }
    }

    /// A one-token pass (which goes through singleRowLinear) gives the logits of the same token inside a longer pass
    /// (torch::linear's matrix product), on the trained stories260K model.
    void oneTokenPassEqualsLongerPass() {
        auto m = Model::load(test::sharedModels() + "/stories260K-llama", LoadOptions().withTokenizer(false));
        c10::InferenceMode guard;
        const auto ids = torch::tensor({{1, 403, 407, 261}}, torch::TensorOptions().dtype(torch::kInt64));
        const auto full = m->forward(ids, {}, nullptr);
        const auto first = m->forward(ids.index({torch::indexing::Slice(), torch::indexing::Slice(0, 1)}), {}, nullptr);
        QVERIFY(torch::allclose(first[0][0], full[0][0], /*rtol=*/1e-4, /*atol=*/1e-5));
    }
};

NNSCOPE_TEST_SUITE(TestCompute, "test_compute")
#include "test_compute.moc"
