// SPDX-License-Identifier: MIT
// How a pass computes, not what: the compute dtype chosen for the CPU (issue 12: bfloat16 only where the CPU has it,
// float32 elsewhere and said so, never a float32 copy that does not fit), and the single-row float32 linear that
// one-token passes use (core/model/gemv.h) against libtorch's.
#include "core/io/safetensors.h"
#include "core/model/allocator.h"
#include "core/model/attention_kernels.h"
#include "core/model/compute_dtype.h"
#include "core/model/error.h"
#include "core/model/gemv.h"
#include "core/model/model.h"
#include "core/run/trace.h"
#include "core/run/openblas.h"
#include "testutil.h"

#include "testsuite.h"

#include <dlfcn.h>

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

/// The bfloat16 kernels this CPU runs: the widening one everywhere, AVX512-BF16's where the CPU has it.
std::vector<Bf16DotKernel> bf16Kernels() {
    std::vector<Bf16DotKernel> kernels{Bf16DotKernel::Widening};
    if (cpuHasAvx512Bf16Dot()) kernels.push_back(Bf16DotKernel::Avx512Bf16);
    return kernels;
}

/// Chooses singleRowLinear's bfloat16 kernel for a scope and puts the previous one back.
class KernelChoice {
public:
    explicit KernelChoice(Bf16DotKernel kernel) : previous_(bf16DotKernel()) { setBf16DotKernel(kernel); }
    ~KernelChoice() { setBf16DotKernel(previous_); }
    KernelChoice(const KernelChoice&) = delete;
    KernelChoice& operator=(const KernelChoice&) = delete;

private:
    Bf16DotKernel previous_;
};

/// What `nnscope --version` prints on stdout ("" when it did not finish within 30 s).
QString nnscopeVersion() {
    QProcess p;
    p.start(NNSCOPE_BINARY, {"--version"});
    if (!p.waitForFinished(30000)) return QString();
    return QString::fromUtf8(p.readAllStandardOutput());
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
    /// libblas.so.3 and as libopenblas.so.0, each a Debian alternative of its own) is the OpenMP build
    /// (openblas_get_parallel() == 2), never the pthreads one whose pool fights libtorch's over the cores, nor a
    /// sequential one that leaves every core but one idle in float32 products (#29; packaging/install-deps.sh installs
    /// libopenblas0-openmp and points both alternatives at it). `nnscope --version` says which it runs.
    void blasSharesLibtorchsThreadPool() {
        torch::mm(torch::ones({64, 64}), torch::ones({64, 64}));  // the BLAS is loaded and has started its threads
        const std::vector<BlasLibrary> libs = loadedBlasLibraries();
        int openBlas = 0;
        for (const auto& lib : libs) {
            if (lib.threading == "unknown") continue;  // not OpenBLAS (the reference BLAS has no openblas_get_parallel)
            QVERIFY2(lib.threading == "OpenMP",
                     qPrintable(QString::fromStdString(lib.path) + " is the " + QString::fromStdString(lib.threading) +
                                " build of OpenBLAS, not the OpenMP one that shares libtorch's thread pool (run "
                                "packaging/install-deps.sh: libopenblas0-openmp for libblas.so.3 and libopenblas.so.0)"));
            ++openBlas;
        }
        // the symbol libtorch's own calls resolve to, whichever file exports it first
        using GetParallel = int (*)();
        if (auto* parallel = reinterpret_cast<GetParallel>(dlsym(RTLD_DEFAULT, "openblas_get_parallel")))
            QCOMPARE(parallel(), 2);
        if (openBlas == 0) QSKIP("this build's BLAS is not OpenBLAS");
        const QString out = nnscopeVersion();
        QVERIFY2(out.contains(QRegularExpression("BLAS: OpenBLAS .*USE_OPENMP.*\\(OpenMP: one thread pool with libtorch\\)")),
                 qPrintable(out));
    }

    /// Large CPU tensors on transparent huge pages (core/model/allocator.h): Model::load installs the allocator; a tensor
    /// of 2 MiB or more starts at a 2 MiB boundary and the kernel holds its whole 2 MiB pages madvised for huge pages
    /// (the "hg" flag of its mapping in /proc/self/smaps), its tail and every smaller tensor not; small tensors keep
    /// libtorch's 64-byte alignment; a tensor freed and made again reads back what is written. `nnscope --version`
    /// names the allocator.
    void largeTensorsOnHugePages() {
        if (qEnvironmentVariable("NNSCOPE_HUGE_PAGES") == "0") QSKIP("NNSCOPE_HUGE_PAGES=0 keeps libtorch's allocator");
        auto model = Model::load(test::fixture("tiny-llama"), LoadOptions().withTokenizer(false));
        QVERIFY(hugePageCpuAllocatorInUse());
        // Whether [from, to) lies in one mapping of /proc/self/smaps carrying the "hg" flag (madvise MADV_HUGEPAGE).
        auto madvisedHuge = [](uintptr_t from, uintptr_t to) {
            QFile smaps("/proc/self/smaps");
            if (!smaps.open(QIODevice::ReadOnly)) return false;
            const QStringList lines = QString::fromUtf8(smaps.readAll()).split('\n');
            bool inside = false;
            for (const QString& line : lines) {
                const QRegularExpressionMatch m = QRegularExpression("^([0-9a-f]+)-([0-9a-f]+) ").match(line);
                if (m.hasMatch()) {
                    inside = m.captured(1).toULongLong(nullptr, 16) <= from && to <= m.captured(2).toULongLong(nullptr, 16);
                } else if (inside && line.startsWith("VmFlags:")) {
                    return line.split(' ', Qt::SkipEmptyParts).contains("hg");
                }
            }
            return false;
        };
        const int64_t mib = int64_t(1) << 20;
        // A fresh block: a kept one, freed by an earlier test, carries the madvised range of the size it was made for.
        releaseKeptCpuBlocks();
        const torch::Tensor big = torch::empty({5 * mib / 4}, torch::kFloat32);  // 5 MiB: two whole huge pages and a tail
        const auto at = reinterpret_cast<uintptr_t>(big.data_ptr());
        QCOMPARE(at % kHugePageBytes, uintptr_t(0));
        const bool kernelHasThp = QFile::exists("/sys/kernel/mm/transparent_hugepage/enabled");
        if (kernelHasThp) {
            QVERIFY2(madvisedHuge(at, at + 4 * mib), "the tensor's whole 2 MiB pages are not madvised for huge pages");
            QVERIFY2(!madvisedHuge(at + 4 * mib, at + 5 * mib), "the last partial page was madvised: it may take a whole 2 MiB");
        }
        const torch::Tensor small = torch::empty({1000}, torch::kFloat32);  // 4 kB: libtorch's alignment, no madvise
        QCOMPARE(reinterpret_cast<uintptr_t>(small.data_ptr()) % 64, uintptr_t(0));
        for (int round = 0; round < 3; ++round) {  // freed and made again: the memory holds what is written
            torch::Tensor t = torch::arange(3 * mib, torch::kFloat32);
            QCOMPARE(reinterpret_cast<uintptr_t>(t.data_ptr()) % kHugePageBytes, uintptr_t(0));
            QCOMPARE(t.sum(torch::kFloat64).item<double>(), double(3 * mib) * double(3 * mib - 1) / 2);
        }
        const QString out = nnscopeVersion();
        QVERIFY2(out.contains(QRegularExpression("CPU tensors: tensors of 2 MiB and more (on transparent huge pages|2 MiB-aligned).*freed ones kept for reuse")),
                 qPrintable(out));
    }

    /// A freed tensor of 2 MiB or more is kept and handed out again for the same size rounded up to 2 MiB; an allocation
    /// of another size first frees kept blocks of at least its own size; a destroyed Model gives every kept block back.
    void freedLargeBlocksKeptForReuse() {
        // Sums over the memory itself: a libtorch reduction would make (and keep) blocks of its own.
        auto sumOf = [](const torch::Tensor& t) {
            double total = 0;
            const float* d = t.data_ptr<float>();
            for (int64_t i = 0; i < t.numel(); ++i) total += d[i];
            return total;
        };
        if (qEnvironmentVariable("NNSCOPE_HUGE_PAGES") == "0") QSKIP("NNSCOPE_HUGE_PAGES=0 keeps libtorch's allocator");
        auto model = Model::load(test::fixture("tiny-llama"), LoadOptions().withTokenizer(false));
        QVERIFY(hugePageCpuAllocatorInUse());
        model.reset();  // its weights' kept blocks (if any) given back
        QCOMPARE(keptCpuBytes(), std::size_t(0));
        const int64_t mib = int64_t(1) << 20;
        torch::Tensor a = torch::empty({3 * mib / 4}, torch::kFloat32);  // 3 MiB: a 4 MiB block
        void* const first = a.data_ptr();
        a = torch::Tensor();
        QCOMPARE(keptCpuBytes(), std::size_t(4 * mib));
        // 3.5 MiB rounds up to the same 4 MiB: the same block, its old contents overwritten by what the kernel writes.
        torch::Tensor b = torch::arange(7 * mib / 8, torch::kFloat32);
        QCOMPARE(b.data_ptr(), first);
        QCOMPARE(keptCpuBytes(), std::size_t(0));
        QCOMPARE(sumOf(b), double(7 * mib / 8) * double(7 * mib / 8 - 1) / 2);
        b = torch::Tensor();
        QCOMPARE(keptCpuBytes(), std::size_t(4 * mib));
        // 5 MiB (a 6 MiB block) finds none of its size: the 4 MiB one is freed first, so nothing is kept beside it.
        torch::Tensor c = torch::ones({5 * mib / 4}, torch::kFloat32);
        QCOMPARE(keptCpuBytes(), std::size_t(0));
        QCOMPARE(sumOf(c), double(5 * mib / 4));
        // Small tensors are never kept.
        torch::Tensor small = torch::ones({1000}, torch::kFloat32);
        small = torch::Tensor();
        c = torch::Tensor();
        QCOMPARE(keptCpuBytes(), std::size_t(6 * mib));
        // A saved value outliving its pass is untouched by later allocations of its size.
        torch::Tensor saved = torch::full({3 * mib / 4}, 2.0f);
        torch::Tensor other = torch::full({3 * mib / 4}, 3.0f);
        QVERIFY(saved.data_ptr() != other.data_ptr());
        QCOMPARE(sumOf(saved), 2.0 * double(3 * mib / 4));
        saved = torch::Tensor();
        other = torch::Tensor();
        QVERIFY(keptCpuBytes() >= std::size_t(8 * mib));
        model = Model::load(test::fixture("tiny-llama"), LoadOptions().withTokenizer(false));
        model.reset();
        QCOMPARE(keptCpuBytes(), std::size_t(0));
        releaseKeptCpuBlocks();  // a no-op with nothing kept
        QCOMPARE(keptCpuBytes(), std::size_t(0));
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
        QTest::newRow("auto, bf16 stored, no bf16, no room") << bf16 << -1 << false << little << bf16 << "only 1.0 GB" << "";
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
            // how to ask for the other dtype
            QVERIFY2(QString::fromStdString(d.note).contains(dtype == int(torch::kBFloat16) ? "--dtype float32" : "--dtype bfloat16"), d.note.c_str());
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
    /// Both bfloat16 kernels (AVX512-BF16's VDPBF16PS where this CPU has it, and the widening one that runs everywhere)
    /// are checked on every CPU that can run them, each on one thread and on several.
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
        const auto exact = exactLinear(x, w, b);
        const auto lib = b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
        const auto scale = torch::matmul(x.abs().to(torch::kFloat64), w.abs().to(torch::kFloat64).t()) + exact.abs() + 1e-30;
        const double theirs = ((lib.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
        const int threads = at::get_num_threads();
        for (const Bf16DotKernel kernel : bf16Kernels()) {
            const KernelChoice choice(kernel);
            for (int n : {1, 2}) {
                at::set_num_threads(n);
                const auto y = singleRowLinear(x, w, b);
                QCOMPARE(y.scalar_type(), torch::kBFloat16);
                QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{1, 1, out}));
                const double ours = ((y.to(torch::kFloat64) - exact).abs() / scale).max().item<double>();
                const QString what = QString("%1, %2 threads: relative error %3 (libtorch: %4)")
                                         .arg(bf16DotKernelName(kernel)).arg(n).arg(ours).arg(theirs);
                // one bfloat16 rounding (2^-9 of the value) plus the float32 sum's error
                QVERIFY2(ours <= std::pow(2.0, -9) * 1.001 + 4 * in * 6e-8, qPrintable(what));
                QVERIFY2(ours <= theirs * 1.001 + 1e-6, qPrintable(what + " above libtorch's"));
            }
        }
        at::set_num_threads(threads);
    }

    /// The bfloat16 kernel follows the CPU: VDPBF16PS exactly where lscpu would list avx512_bf16 (here: what the CPU
    /// says through cpuid, which is what /proc/cpuinfo's flags show); asking for it elsewhere is an error, not a crash.
    void bf16KernelFollowsCpu() {
        QFile cpuinfo("/proc/cpuinfo");
        if (!cpuinfo.open(QIODevice::ReadOnly)) QSKIP("no /proc/cpuinfo");
        const QString flags = QString::fromUtf8(cpuinfo.readAll());
        const bool listed = flags.contains(QRegularExpression("^flags\\s*:.*\\bavx512_bf16\\b", QRegularExpression::MultilineOption)) &&
                            flags.contains(QRegularExpression("^flags\\s*:.*\\bavx512vl\\b", QRegularExpression::MultilineOption));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
        QCOMPARE(cpuHasAvx512Bf16Dot(), listed);
#endif
        QCOMPARE(bf16DotKernel(), cpuHasAvx512Bf16Dot() ? Bf16DotKernel::Avx512Bf16 : Bf16DotKernel::Widening);
        const QString out = nnscopeVersion();  // and `nnscope --version` names it
        QVERIFY2(out.contains(QString("One-token bfloat16 products: ") + bf16DotKernelName(bf16DotKernel())), qPrintable(out));
        if (!cpuHasAvx512Bf16Dot()) {
            try {
                setBf16DotKernel(Bf16DotKernel::Avx512Bf16);
                QFAIL("the AVX512-BF16 kernel was accepted on a CPU without it");
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).contains("avx512_bf16"), e.what());
            }
        }
    }

    /// On real weights and activations: the bfloat16 projections of two fixtures (tiny-llama; tiny-persimmon, every
    /// projection biased, q/k/v fused), fed the inputs transformers computed for them (golden_bfloat16.safetensors, the
    /// 9-token prompt, one position at a time). Each output is within one bfloat16 rounding of the float64 product,
    /// within one bfloat16 step of libtorch 1.13's own bfloat16 linear on the same row, and, where transformers saved
    /// the product (the attention's out-projection: attention_output; the MLP's: mlp_output; lm_head_output: torch
    /// 2.15's bfloat16 linear over all 9 rows), within one bfloat16 step of transformers' value.
    void singleRowLinearBf16OnFixture_data() {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QStringList>("attentionIn");  // the projections of attention_norm_output
        QTest::addColumn<QString>("attentionOut");     // of attention_premix (the heads side by side)
        QTest::addColumn<QStringList>("mlpIn");        // of mlp_norm_output
        QTest::addColumn<QString>("mlpOut");           // of mlp_neurons
        QTest::newRow("tiny-llama") << "tiny-llama" << QStringList{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}
                                    << "self_attn.o_proj" << QStringList{"mlp.gate_proj", "mlp.up_proj"} << "mlp.down_proj";
        QTest::newRow("tiny-persimmon (biases)") << "tiny-persimmon" << QStringList{"self_attn.query_key_value"}
                                                 << "self_attn.dense" << QStringList{"mlp.dense_h_to_4h"} << "mlp.dense_4h_to_h";
    }
    void singleRowLinearBf16OnFixture() {
        QFETCH(QString, fixture);
        QFETCH(QStringList, attentionIn);
        QFETCH(QString, attentionOut);
        QFETCH(QStringList, mlpIn);
        QFETCH(QString, mlpOut);
        c10::InferenceMode guard;
        const std::string dir = test::fixture(fixture.toStdString());
        SafetensorsFile weights(dir + "/model.safetensors");
        SafetensorsFile golden(dir + "/golden_bfloat16.safetensors");
        const auto bias = [&](const std::string& name) { return weights.contains(name) ? weights.tensor(name) : torch::Tensor(); };
        struct Product {
            std::string weight, input, output;  // output: "" where transformers saved no product of this weight alone
        };
        std::vector<Product> products;
        for (int layer = 0; layer < 2; ++layer) {
            const std::string l = "model.layers." + std::to_string(layer) + ".", g = "single.layers." + std::to_string(layer) + ".";
            for (const QString& p : attentionIn) products.push_back({l + p.toStdString(), g + "attention_norm_output", ""});
            products.push_back({l + attentionOut.toStdString(), g + "self_attn.attention_premix", g + "self_attn.attention_output"});
            for (const QString& p : mlpIn) products.push_back({l + p.toStdString(), g + "mlp_norm_output", ""});
            products.push_back({l + mlpOut.toStdString(), g + "mlp.mlp_neurons", g + "mlp.mlp_output"});
        }
        products.push_back({weights.contains("lm_head.weight") ? "lm_head" : "model.embed_tokens", "single.final_norm_output",
                            "single.lm_head_output"});
        int compared = 0, withTransformers = 0;
        for (const Product& p : products) {
            const torch::Tensor w = weights.tensor(p.weight + ".weight"), b = bias(p.weight + ".bias");
            QCOMPARE(w.scalar_type(), torch::kBFloat16);
            const torch::Tensor inputs = golden.tensor(p.input).flatten(2);  // [1, seq, in]: the heads side by side
            const torch::Tensor outputs = p.output.empty() ? torch::Tensor() : golden.tensor(p.output);
            for (int64_t pos = 0; pos < inputs.size(1); ++pos) {
                const torch::Tensor x = inputs.index({0, pos}).reshape({1, 1, -1});
                const auto exact = exactLinear(x, w, b);
                const auto scale = torch::matmul(x.abs().to(torch::kFloat64), w.abs().to(torch::kFloat64).t()) + exact.abs() + 1e-30;
                const double bound = std::pow(2.0, -9) * 1.001 + 4 * w.size(1) * 6e-8;  // one rounding + the float32 sum's
                const auto lib = b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
                for (const Bf16DotKernel kernel : bf16Kernels()) {
                    const KernelChoice choice(kernel);
                    QVERIFY(singleRowLinearApplies(x, w, b));
                    const auto y = singleRowLinear(x, w, b).to(torch::kFloat64);
                    const QString where = QString("%1 at position %2, %3").arg(QString::fromStdString(p.weight)).arg(pos)
                                              .arg(bf16DotKernelName(kernel));
                    const double ours = ((y - exact).abs() / scale).max().item<double>();
                    QVERIFY2(ours <= bound, qPrintable(where + QString(": relative error %1").arg(ours)));
                    const double fromLib = ((y - lib.to(torch::kFloat64)).abs() / scale).max().item<double>();
                    QVERIFY2(fromLib <= 2 * bound, qPrintable(where + QString(": %1 from libtorch's").arg(fromLib)));
                    if (outputs.defined()) {
                        const auto want = outputs.index({0, pos}).to(torch::kFloat64).reshape({1, 1, -1});
                        const double fromHf = ((y - want).abs() / scale).max().item<double>();
                        QVERIFY2(fromHf <= 2 * bound, qPrintable(where + QString(": %1 from transformers'").arg(fromHf)));
                        ++withTransformers;
                    }
                    ++compared;
                }
            }
        }
        const int kernels = static_cast<int>(bf16Kernels().size());
        QCOMPARE(compared, static_cast<int>(products.size()) * 9 * kernels);
        QCOMPARE(withTransformers, 5 * 9 * kernels);
    }

    /// Where it does not apply (several rows, mixed dtypes, a transposed weight, autograd), the engine keeps torch::linear
    /// and singleRowLinear refuses, naming the shapes.
    void singleRowLinearScope() {
        const auto w = torch::randn({8, 4});
        QVERIFY(!singleRowLinearApplies(torch::randn({2, 4}), w, {}));
        QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}).to(torch::kBFloat16), w, {}));  // mixed dtypes
        {
            const KernelChoice libtorch(Bf16DotKernel::Libtorch);  // the benchmarks' baseline: bfloat16 to torch::linear
            QVERIFY(!singleRowLinearApplies(torch::randn({1, 4}).to(torch::kBFloat16), w.to(torch::kBFloat16), {}));
            QVERIFY(singleRowLinearApplies(torch::randn({1, 4}), w, {}));
        }
        QVERIFY(singleRowLinearApplies(torch::randn({1, 4}).to(torch::kBFloat16), w.to(torch::kBFloat16), {}));
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

    void maskedScoresMatchesSteps_data() {
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<int>("threads");
        QTest::addColumn<QString>("maskShape");
        for (bool bf16 : {false, true})
            for (int threads : {1, 2})
                for (const char* shape : {"b,1,q,k", "1,1,q,k", "b,h,q,k", "b,1,q,k sliced"})
                    QTest::newRow(qPrintable(QString("%1, %2 thread(s), mask %3").arg(bf16 ? "bfloat16" : "float32").arg(threads).arg(shape)))
                        << bf16 << threads << QString(shape);
    }
    /// maskedScores (core/model/attention_kernels.h) gives the bits of the steps it replaces, `scores * scaling` (in
    /// float32 with the scale as a float, rounded: timesNumber) then `+ mask` in the scores' dtype, on random scores
    /// with NaN, infinities, signed zeros, subnormals and values near the bfloat16 range's ends, with a causal mask at
    /// bfloat16's and float32's most negative value, at several scales, the mask broadcast over heads or batch.
    void maskedScoresMatchesSteps() {
        QFETCH(bool, bf16);
        QFETCH(int, threads);
        QFETCH(QString, maskShape);
        const int before = at::get_num_threads();
        at::set_num_threads(threads);
        const auto dt = bf16 ? torch::kBFloat16 : torch::kFloat32;
        torch::manual_seed(7);
        const int64_t B = 2, H = 3, Q = 37, K = 45;  // K: not a multiple of any vector width
        torch::Tensor x = (torch::randn({B, H, Q, K}) * 8).to(dt);
        auto flat = x.view({-1});
        const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0, 1e-39, -3e-39, 3.3e38, -3.38e38, 65504.0};
        for (int i = 0; i < 10; ++i) flat[i * 97] = specials[i];
        const torch::Tensor allowed = torch::ones({Q, K}, torch::kBool).tril(K - Q);
        const double minValue = bf16 ? -3.3895313892515355e38 : -std::numeric_limits<float>::max();
        torch::Tensor mask = torch::where(allowed, torch::zeros({}, torch::dtype(dt)), torch::full({}, minValue, torch::dtype(dt)));
        if (maskShape == "b,1,q,k") mask = mask.expand({B, 1, Q, K}).contiguous();
        else if (maskShape == "1,1,q,k") mask = mask.view({1, 1, Q, K});
        else if (maskShape == "b,h,q,k") mask = (mask + torch::randn({B, H, Q, K}).to(dt)).contiguous();  // a mask of any values
        else mask = torch::cat({mask, mask}, -1).view({1, 1, Q, 2 * K}).narrow(-1, K, K);  // rows not contiguous
        for (double scale : {0.08838834764831845, 1 / std::sqrt(24.0), 1.0, 3e-30, 7.5e37}) {
            QVERIFY(maskedScoresApplies(x, scale, mask));
            const torch::Tensor got = maskedScores(x, scale, mask);
            QCOMPARE(got.scalar_type(), torch::kFloat32);
            QCOMPARE(got.sizes().vec(), x.sizes().vec());
            // The replaced steps: timesNumber (float32 with the scale as a float, rounded once) and libtorch's add.
            const torch::Tensor steps = ((x.to(torch::kFloat32) * scale).to(dt) + mask).to(torch::kFloat32);
            // torch 2.x's add of two bfloat16 tensors: in float32, rounded once.
            const torch::Tensor torch2 = ((x.to(torch::kFloat32) * scale).to(dt).to(torch::kFloat32) + mask.to(torch::kFloat32)).to(dt).to(torch::kFloat32);
            for (const torch::Tensor& want : {steps, torch2}) {
                const torch::Tensor bothNan = got.isnan() & want.isnan();
                QVERIFY2(torch::equal(got.isnan(), want.isnan()), qPrintable(QString("scale %1: NaN where the steps have none").arg(scale)));
                const torch::Tensor gotBits = got.masked_fill(bothNan, 0).view(torch::kInt32);
                const torch::Tensor wantBits = want.masked_fill(bothNan, 0).view(torch::kInt32);
                QVERIFY2(torch::equal(gotBits, wantBits),
                         qPrintable(QString("scale %1: %2 of %3 elements differ")
                                        .arg(scale).arg((gotBits != wantBits).sum().item<int64_t>()).arg(got.numel())));
            }
            if (bf16) QVERIFY(torch::equal(got.to(dt).to(torch::kFloat32).view(torch::kInt32).masked_fill(got.isnan(), 0),
                                           got.view(torch::kInt32).masked_fill(got.isnan(), 0)));  // bfloat16 numbers
        }
        at::set_num_threads(before);
    }

    void rotatedMatchesSteps_data() {
        QTest::addColumn<QString>("dtypes");
        QTest::addColumn<bool>("adjacentPairs");
        QTest::addColumn<int>("threads");
        for (const char* dtypes : {"float32/float32", "bfloat16/float32", "bfloat16/bfloat16"})
            for (bool adjacent : {false, true})
                for (int threads : {1, 2})
                    QTest::newRow(qPrintable(QString("%1, %2, %3 thread(s)").arg(dtypes).arg(adjacent ? "adjacent pairs" : "rotate_half").arg(threads)))
                        << QString(dtypes) << adjacent << threads;
    }
    /// rotated (core/model/attention_kernels.h) gives the bits of the ops Model::applyRotary ran before it: rotate_half
    /// (cat) or ERNIE's adjacent pairs (stack, cos and sin's first half repeated), the products and the sum in cos's
    /// dtype, the result in x's; on queries viewed as transformers makes them ([b, s, h, d] transposed, not contiguous),
    /// a partial rotary's first dimensions, cos and sin per batch row or shared, NaN, infinities, signed zeros,
    /// subnormals and values near the float range's ends among x.
    void rotatedMatchesSteps() {
        QFETCH(QString, dtypes);
        QFETCH(bool, adjacentPairs);
        QFETCH(int, threads);
        const int before = at::get_num_threads();
        at::set_num_threads(threads);
        const auto xt = dtypes.startsWith("bfloat16") ? torch::kBFloat16 : torch::kFloat32;
        const auto ct = dtypes.endsWith("bfloat16") ? torch::kBFloat16 : torch::kFloat32;
        using torch::indexing::None;
        using torch::indexing::Slice;
        auto reference = [&](const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
            if (adjacentPairs) {
                const auto half = cos.size(-1) / 2;
                auto pairs = [&](const torch::Tensor& t) {
                    const torch::Tensor h = t.index({"...", Slice(None, half)});
                    return torch::stack({h, h}, -1).flatten(-2);
                };
                const torch::Tensor rot = torch::stack({-x.index({"...", Slice(1, None, 2)}), x.index({"...", Slice(0, None, 2)})}, -1).flatten(-2);
                return (x.to(ct) * pairs(cos) + rot.to(ct) * pairs(sin)).to(x.scalar_type());
            }
            const auto half = x.size(-1) / 2;
            const torch::Tensor rot = torch::cat({-x.index({"...", Slice(half, None)}), x.index({"...", Slice(None, half)})}, -1);
            return (x.to(ct) * cos + rot.to(ct) * sin).to(x.scalar_type());
        };
        torch::manual_seed(11);
        const int64_t B = 2, S = 9, Hh = 5, D = 24;
        for (int64_t R : {D, int64_t(8)}) {  // full and partial rotary
            torch::Tensor full = (torch::randn({B, S, Hh, D}) * 4).to(xt);
            auto flat = full.view({-1});
            const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0, 1e-39, -3e-39, 3.3e38, -3.38e38, 1e-45};
            for (int i = 0; i < 10; ++i) flat[i * 41] = specials[i];
            const torch::Tensor x = full.transpose(1, 2).index({"...", Slice(None, R)});  // [b, h, s, R], not contiguous
            for (bool perRow : {true, false}) {
                torch::Tensor angles = torch::rand({perRow ? B : 1, 1, S, R}) * 40;
                angles.view({-1})[0] = 0.0;
                const torch::Tensor cos = angles.cos().to(ct), sin = angles.sin().to(ct);
                QVERIFY(rotatedApplies(x, cos, sin));
                const torch::Tensor got = rotated(x, cos, sin, adjacentPairs);
                const torch::Tensor want = reference(x, cos, sin);
                QCOMPARE(got.scalar_type(), xt);
                QCOMPARE(got.sizes().vec(), want.sizes().vec());
                QVERIFY(got.is_contiguous());
                const torch::Tensor g = got.to(torch::kFloat32), w = want.to(torch::kFloat32);
                QVERIFY2(torch::equal(g.isnan(), w.isnan()), "NaN in other places");
                const torch::Tensor gb = g.masked_fill(g.isnan(), 0).view(torch::kInt32), wb = w.masked_fill(w.isnan(), 0).view(torch::kInt32);
                QVERIFY2(torch::equal(gb, wb), qPrintable(QString("rotary_dim %1, cos per row %2: %3 of %4 elements differ")
                                                              .arg(R).arg(perRow).arg((gb != wb).sum().item<int64_t>()).arg(g.numel())));
            }
        }
        at::set_num_threads(before);
    }

    void rotatedScope() {
        const auto x = torch::randn({1, 2, 3, 4}), cos = torch::randn({1, 1, 3, 4});
        QVERIFY(rotatedApplies(x, cos, cos));
        QVERIFY(!rotatedApplies(x, cos.to(torch::kBFloat16), cos.to(torch::kBFloat16)));  // float32 x, bfloat16 cos
        QVERIFY(!rotatedApplies(x, cos, cos.to(torch::kBFloat16)));                        // cos and sin apart
        QVERIFY(!rotatedApplies(torch::randn({1, 2, 3, 5}), torch::randn({1, 1, 3, 5}), torch::randn({1, 1, 3, 5})));  // odd
        QVERIFY(!rotatedApplies(x, torch::randn({1, 1, 2, 4}), torch::randn({1, 1, 2, 4})));  // another sequence length
        QVERIFY(!rotatedApplies(x.transpose(2, 3), cos, cos));                            // last axis not contiguous
        QVERIFY(!rotatedApplies(x.clone().requires_grad_(true), cos, cos));              // autograd keeps libtorch's ops
        try {
            rotated(x, torch::randn({1, 1, 3, 6}), torch::randn({1, 1, 3, 6}), false);
            QFAIL("cos of another rotary_dim was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("[1, 1, 3, 6]"), e.what());
        }
    }

    /// headsProduct (core/model/attention_kernels.h) gives torch::matmul's bits on the attention's two products (queries
    /// times transposed keys, probabilities times values) at 1 and 2 threads, and refuses what it does not take.
    void headsProductMatchesMatmul() {
        if (at::hasMKL()) QSKIP("a libtorch with MKL keeps its own batched product");
        torch::manual_seed(5);
        const int before = at::get_num_threads();
        for (int threads : {1, 2}) {
            at::set_num_threads(threads);
            for (bool inference : {false, true}) {  // a trace runs under InferenceMode, which other threads do not inherit
                c10::InferenceMode mode(inference);
                for (int64_t T : {int64_t(7), int64_t(33), int64_t(130)}) {
                    const torch::Tensor q = torch::randn({2, 3, T, 24}), k = torch::randn({2, 3, T, 24}), v = torch::randn({2, 3, T, 24});
                    const torch::Tensor kt = k.transpose(2, 3);  // as the attention passes it: not contiguous
                    const torch::Tensor p = torch::softmax(torch::randn({2, 3, T, T}), -1);
                    QVERIFY(headsProductApplies(q, kt));
                    QVERIFY(torch::equal(headsProduct(q, kt), torch::matmul(q, kt)));
                    QVERIFY(torch::equal(headsProduct(p, v), torch::matmul(p, v)));
                    QVERIFY(headsProduct(p, v).is_contiguous());
                }
            }
        }
        at::set_num_threads(before);
        const torch::Tensor a = torch::randn({1, 2, 3, 4});
        QVERIFY(!headsProductApplies(torch::randn({1, 2, 2, 24}), torch::randn({1, 2, 24, 2})));  // libtorch's own loop
        const torch::Tensor big = torch::randn({1, 2, 8, 24});
        QVERIFY(headsProductApplies(big, torch::randn({1, 2, 24, 3})));
        QVERIFY(!headsProductApplies(a, torch::randn({1, 2, 5, 3})));                      // k apart
        QVERIFY(!headsProductApplies(big, torch::randn({1, 1, 24, 3})));                   // heads broadcast
        QVERIFY(!headsProductApplies(big.to(torch::kBFloat16), torch::randn({1, 2, 24, 3}).to(torch::kBFloat16)));
        QVERIFY(!headsProductApplies(big.clone().requires_grad_(true), torch::randn({1, 2, 24, 3})));
        try {
            headsProduct(a, torch::randn({1, 2, 5, 3}));
            QFAIL("mismatched inner sizes were accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("[1, 2, 5, 3]"), e.what());
        }
    }

    void maskedScoresScope() {
        const auto x = torch::randn({1, 2, 3, 4});
        const auto mask = torch::zeros({1, 1, 3, 4});
        QVERIFY(maskedScoresApplies(x, 0.5, mask));
        QVERIFY(!maskedScoresApplies(x, 0.5, mask.to(torch::kBFloat16)));                  // mixed dtypes
        QVERIFY(!maskedScoresApplies(x.to(torch::kFloat64), 0.5, mask.to(torch::kFloat64)));  // float64
        QVERIFY(!maskedScoresApplies(x.transpose(2, 3), 0.5, mask.transpose(2, 3)));        // scores not contiguous
        QVERIFY(!maskedScoresApplies(x, 0.5, torch::zeros({1, 1, 3, 5})));                  // another key axis
        QVERIFY(!maskedScoresApplies(x, 0.5, torch::zeros({1, 2, 2, 4})));                  // a query axis neither 1 nor 3
        QVERIFY(!maskedScoresApplies(x, INFINITY, mask));
        QVERIFY(!maskedScoresApplies(x.clone().requires_grad_(true), 0.5, mask));  // autograd keeps libtorch's ops
        QVERIFY(!maskedScoresApplies(torch::empty({1, 2, 3, 4}, torch::kMeta), 0.5, torch::empty({1, 1, 3, 4}, torch::kMeta)));
        try {
            maskedScores(x, 0.5, torch::zeros({1, 1, 3, 5}));
            QFAIL("a mask of another key axis was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("[1, 1, 3, 5]"), e.what());
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
