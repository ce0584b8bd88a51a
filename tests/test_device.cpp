// SPDX-License-Identifier: MIT
// Where the model computes (core/model/device.h): --device parsing, the sentence that says why a GPU cannot be used
// (every branch, on any machine), what this build and machine offer, the command line's refusals, results reaching
// the caller as CPU tensors; and, where a CUDA device is present, every value of every fixture family computed on it
// against the CPU's within the float32 tolerance (skipped, saying so, everywhere else).
#include "core/analysis/analysis.h"
#include "core/analysis/attribution.h"
#include "core/model/device.h"
#include "core/model/error.h"
#include "core/model/model.h"
#include "core/run/generate.h"
#include "core/run/trace.h"
#include "manifest.h"
#include "testutil.h"

#include "testsuite.h"

#include <torch/cuda.h>

#include <QDir>
#include <QProcess>
#include <QtTest>

using namespace nnscope;

namespace {

/// The float32 tolerance of the family tests (test_families.cpp): a GPU's float32 sums run in another order.
constexpr double kF32Rtol = 1e-4, kF32Atol = 1e-5;

struct CliRun {
    int exitCode;
    QString out, err;
};

CliRun runProgram(const QStringList& args) {
    QProcess p;
    p.start(QString::fromUtf8(NNSCOPE_BINARY), args);
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

/// Every tiny fixture family's folder (tests/fixtures/models, tests/fixtures/README.md).
QStringList fixtureFamilies() {
    QDir dir(QString::fromStdString(test::fixturesDir() + "/models"));
    return dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
}

}  // namespace

class TestDevice : public QObject {
    Q_OBJECT

private slots:
    /// --device's spellings: cpu, cuda (cuda:0), cuda:N, any case; the rest refused naming the option and the value.
    void parsesDevice_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("name");  // deviceName of the result; empty: refused
        QTest::newRow("cpu") << "cpu" << "cpu";
        QTest::newRow("CPU") << "CPU" << "cpu";
        QTest::newRow("cuda") << "cuda" << "cuda:0";
        QTest::newRow("cuda:0") << "cuda:0" << "cuda:0";
        QTest::newRow("cuda:3") << "cuda:3" << "cuda:3";
        QTest::newRow("gpu") << "gpu" << "cuda:0";
        QTest::newRow("cuda:") << "cuda:" << "";
        QTest::newRow("cuda:x") << "cuda:x" << "";
        QTest::newRow("cuda:-1") << "cuda:-1" << "";
        QTest::newRow("tpu") << "tpu" << "";
        QTest::newRow("empty") << "" << "";
    }
    void parsesDevice() {
        QFETCH(QString, text);
        QFETCH(QString, name);
        if (!name.isEmpty()) {
            QCOMPARE(QString::fromStdString(deviceName(parseDevice(text.toStdString()))), name);
            return;
        }
        try {
            parseDevice(text.toStdString());
            QFAIL("accepted");
        } catch (const Error& e) {
            const QString message = e.what();
            QVERIFY2(message.contains("--device must be cpu, cuda or cuda:N") && message.contains("\"" + text + "\""), e.what());
        }
    }

    /// Each reason deviceUnavailableReason gives, from a DeviceSupport made up for it: the CPU always works; CUDA on a
    /// libtorch without it, on CUDA without a GPU, and past the last GPU each say what is missing.
    void unavailableReasons() {
        const torch::Device cuda0(torch::kCUDA, 0), cuda1(torch::kCUDA, 1);
        DeviceSupport none;  // Debian's libtorch 1.13: no CUDA at all
        QCOMPARE(QString::fromStdString(deviceUnavailableReason(torch::kCPU, none)), QString());
        QCOMPARE(QString::fromStdString(deviceUnavailableReason(torch::Device(torch::kMeta), none)), QString());
        const QString noBuild = QString::fromStdString(deviceUnavailableReason(cuda0, none));
        QVERIFY2(noBuild.startsWith("this nnscope was built on a libtorch without CUDA"), qPrintable(noBuild));
        QVERIFY2(noBuild.contains("--torch wheel --cuda") && noBuild.contains("-DNNSCOPE_CUDA=ON") && noBuild.contains("--device cpu"),
                 qPrintable(noBuild));
        DeviceSupport noGpu;
        noGpu.builtWithCuda = true;
        noGpu.cudaRuntimeVersion = 13020;
        const QString noDevice = QString::fromStdString(deviceUnavailableReason(cuda0, noGpu));
        QVERIFY2(noDevice.startsWith("no CUDA device:") && noDevice.contains("nvidia-smi"), qPrintable(noDevice));
        DeviceSupport oneGpu = noGpu;
        oneGpu.cudaDevices = 1;
        QCOMPARE(QString::fromStdString(deviceUnavailableReason(cuda0, oneGpu)), QString());
        const QString past = QString::fromStdString(deviceUnavailableReason(cuda1, oneGpu));
        QVERIFY2(past.startsWith("no CUDA device 1: this machine has 1 GPU (cuda:0)"), qPrintable(past));
        QCOMPARE(QString::fromStdString(cudaSummary(none)), QString("none (this libtorch was built without CUDA)"));
        QCOMPARE(QString::fromStdString(cudaSummary(noGpu)), QString("13.2, no device"));
        QCOMPARE(QString::fromStdString(cudaSummary(oneGpu)), QString("13.2, 1 device (cuda:0)"));
    }

    /// What this build reports agrees with libtorch's own torch::cuda calls, and loading on a GPU it lacks fails
    /// before any weight is converted, with the sentence above.
    void thisBuild() {
        const DeviceSupport& s = deviceSupport();
        QCOMPARE(s.cudaDevices > 0, torch::cuda::is_available());
        QCOMPARE(static_cast<size_t>(s.cudaDevices), torch::cuda::device_count());
        if (s.cudaDevices > 0) QSKIP("a CUDA device is present: loading on it is what gpuMatchesCpu checks");
        try {
            Model::load(test::fixture("tiny-llama"), test::float32().withDevice(torch::Device(torch::kCUDA, 0)));
            QFAIL("loaded on a GPU this machine does not have");
        } catch (const Error& e) {
            const QString message = e.what();
            QVERIFY2(message.startsWith(s.builtWithCuda ? "no CUDA device" : "this nnscope was built on a libtorch without CUDA"),
                     e.what());
        }
    }

    /// The command line: a malformed --device is a usage error (status 2) on every command that runs the model, a GPU
    /// this machine lacks fails with the sentence (status 1), --device cpu runs, and --version says what CUDA there is.
    void commandLine() {
        const QString model = QString::fromStdString(test::fixture("tiny-llama"));
        const QList<QStringList> commands = {
            {"trace", "--model", model, "--prompt", ""},
            {"generate", "--model", model, "--prompt", "", "--max-new-tokens", "2"},
            {"heads", "--model", model, "--prompt", "a b a b"},
            {"family", "--model", model},
        };
        for (const QStringList& c : commands) {
            const CliRun bad = runProgram(c + QStringList{"--device", "tpu"});
            QVERIFY2(bad.exitCode == 2 && bad.err.contains("--device must be cpu, cuda or cuda:N") && bad.err.contains("not \"tpu\""),
                     qPrintable(c.front() + ": " + bad.err));
            if (deviceSupport().cudaDevices > 0) continue;
            const CliRun gpu = runProgram(c + QStringList{"--device", "cuda"});
            const QString expected = deviceSupport().builtWithCuda ? "no CUDA device" : "this nnscope was built on a libtorch without CUDA";
            QVERIFY2(gpu.exitCode == 1 && gpu.err.startsWith("nnscope: " + expected), qPrintable(c.front() + ": " + gpu.err));
        }
        const CliRun cpu = runProgram({"trace", "--model", model, "--prompt", "", "--device", "cpu", "--json"});
        QVERIFY2(cpu.exitCode == 0, qPrintable(cpu.err));
        const CliRun version = runProgram({"--version"});
        QVERIFY2(version.out.contains("\nCUDA: " + QString::fromStdString(cudaSummary(deviceSupport())) + "\n"), qPrintable(version.out));
        QVERIFY2(version.out.contains("\nlibtorch: " + QString::fromStdString(libtorchVersion()) + "\n"), qPrintable(version.out));
    }

    /// toHost is the boundary: a CPU tensor passes as itself (no copy), an undefined one stays undefined; a trace's
    /// saved values and next-token probabilities are CPU tensors, whatever device computed them (gpuMatchesCpu checks
    /// that on a GPU).
    void resultsOnCpu() {
        const torch::Tensor t = torch::arange(6, torch::kFloat32);
        QCOMPARE(toHost(t).data_ptr(), t.data_ptr());
        QVERIFY(!toHost(torch::Tensor()).defined());
        auto model = Model::load(test::fixture("tiny-llama"), test::float32());
        QVERIFY(model->device().is_cpu());
        TraceOptions o;
        o.save = allValueKeys(*model, /*includeNative=*/true);
        const TraceResult r = trace(*model, batchFromIds({{1, 5, 9}, {2, 3}}), o);
        QVERIFY(r.values.size() > 20);
        for (const auto& [key, value] : r.values) QVERIFY2(value.device().is_cpu(), valuePath(model->family(), key).c_str());
        QVERIFY(r.nextTokenProbs.device().is_cpu());
    }

    /// On a CUDA device, every standard and native value of every fixture family (a left-padded batch of two rows) equals
    /// the CPU's within the float32 tolerance and arrives as a CPU tensor; greedy generation with the key/value cache
    /// gives the CPU's tokens, sampling with one seed too, and direct logit attribution reads the GPU trace.
    void gpuMatchesCpu_data() {
        QTest::addColumn<QString>("family");
        for (const QString& f : fixtureFamilies()) QTest::newRow(qPrintable(f)) << f;
    }
    void gpuMatchesCpu() {
        QFETCH(QString, family);
        if (deviceSupport().cudaDevices <= 0)
            QSKIP(deviceSupport().builtWithCuda ? "no CUDA device: the GPU comparison runs where one is present"
                                                : "no CUDA device (this libtorch was built without CUDA): the GPU comparison runs on a CUDA build with a GPU");
        const std::string dir = test::fixture(family.toStdString());
        auto cpu = Model::load(dir, test::float32().withTokenizer(false));
        auto gpu = Model::load(dir, test::float32().withTokenizer(false).withDevice(torch::Device(torch::kCUDA, 0)));
        QVERIFY(gpu->device().is_cuda());
        QVERIFY(gpu->layer(0)[Module::OProj].weight.device().is_cuda());  // copied there once, at load
        const int64_t vocab = cpu->config().vocabSize;
        const Batch batch = batchFromIds({{1 % vocab, 7 % vocab, 42 % vocab, 99 % vocab, 5 % vocab}, {3 % vocab, 11 % vocab, 2 % vocab}});
        TraceOptions o;
        o.save = allValueKeys(*cpu, /*includeNative=*/true);
        const TraceResult want = trace(*cpu, batch, o);
        const TraceResult got = trace(*gpu, batch, o);
        QCOMPARE(got.values.size(), want.values.size());
        for (size_t i = 0; i < got.values.size(); ++i) {
            const std::string path = valuePath(cpu->family(), got.values[i].first);
            const torch::Tensor& g = got.values[i].second;
            QVERIFY2(g.device().is_cpu(), (path + " came back on " + deviceName(g.device())).c_str());
            if (!g.is_floating_point()) {
                QVERIFY2(g.equal(want.values[i].second), path.c_str());
                continue;
            }
            const auto cmp = test::compare(g, want.values[i].second, kF32Rtol, kF32Atol);
            QVERIFY2(cmp.ok, (family.toStdString() + " " + path + ": " + cmp.message).c_str());
        }
        QVERIFY(got.nextTokenProbs.device().is_cpu());
        NNSCOPE_COMPARE_TENSORS(got.nextTokenProbs, want.nextTokenProbs, kF32Rtol, kF32Atol);

        const std::vector<int64_t> prompt = batch.ids[0];
        QCOMPARE(generateGreedy(*gpu, prompt, 12, /*stopAtEos=*/false), generateGreedy(*cpu, prompt, 12, /*stopAtEos=*/false));
        GenerateOptions sampled;
        sampled.sample = true;
        sampled.seed = 7;
        sampled.maxNewTokens = 8;
        sampled.stopAtEos = false;
        QCOMPARE(generate(*gpu, prompt, sampled).ids, generate(*cpu, prompt, sampled).ids);

        // the logit lens (the window's Logit lens view) reads the GPU trace's CPU values through the GPU's weights
        TraceOptions lensOptions;
        for (int i = 0; i < cpu->config().numLayers; ++i) lensOptions.save.push_back({Value::LayerOutput, i});
        const LogitLens lensCpu = logitLens(*cpu, trace(*cpu, batch, lensOptions), 3), lensGpu = logitLens(*gpu, trace(*gpu, batch, lensOptions), 3);
        for (size_t row = 0; row < 2; ++row) {
            QVERIFY(lensGpu.topProbs[row].device().is_cpu() && lensGpu.normed[row].device().is_cpu());
            NNSCOPE_COMPARE_TENSORS(lensGpu.topProbs[row], lensCpu.topProbs[row], kF32Rtol, kF32Atol);
            NNSCOPE_COMPARE_TENSORS(lensTokenProbs(*gpu, lensGpu, static_cast<int64_t>(row), 1), lensTokenProbs(*cpu, lensCpu, static_cast<int64_t>(row), 1),
                                    kF32Rtol, kF32Atol);
        }
        TraceOptions attributionOptions;
        attributionOptions.save = attributionValueKeys(*cpu);
        const TraceResult cpuTrace = trace(*cpu, batch, attributionOptions), gpuTrace = trace(*gpu, batch, attributionOptions);
        const LogitAttribution a = directLogitAttribution(*cpu, cpuTrace, 0, -1, 2 % vocab);
        const LogitAttribution b = directLogitAttribution(*gpu, gpuTrace, 0, -1, 2 % vocab);
        QVERIFY2(std::abs(a.logit - b.logit) <= kF32Atol + kF32Rtol * std::abs(a.logit), qPrintable(QString("%1 vs %2").arg(b.logit).arg(a.logit)));
        QVERIFY2(std::abs(a.total - b.total) <= 1e-4 + kF32Rtol * std::abs(a.total), qPrintable(QString("%1 vs %2").arg(b.total).arg(a.total)));
    }
};

NNSCOPE_TEST_SUITE(TestDevice, "test_device")
#include "test_device.moc"
