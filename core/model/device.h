// SPDX-License-Identifier: MIT
// Where a model computes: the CPU, or a CUDA GPU on a build whose libtorch has CUDA (the wheel build with --cuda,
// docs/DEVELOPING.md). Parsing --device, finding out what this build and this machine offer, and the one sentence that
// says why a device cannot be used.
#pragma once
#include <torch/types.h>

#include <string>

namespace nnscope {

/// What this process can compute on besides the CPU.
struct DeviceSupport {
    /// Whether the libtorch this nnscope is linked with carries CUDA (its CUDA part, libtorch_cuda, is loaded and
    /// registered; Debian's libtorch 1.13 and the wheel build without --cuda have none).
    bool builtWithCuda = false;
    /// The CUDA devices the driver reports (0 without a GPU, a driver, or CUDA in the build).
    int cudaDevices = 0;
    /// The CUDA runtime version libtorch was built with (major * 1000 + minor * 10, e.g. 13020); 0 without CUDA.
    long cudaRuntimeVersion = 0;
};

/// This process's DeviceSupport, asked of libtorch's CUDA hooks once (later calls return the first answer).
const DeviceSupport& deviceSupport();

/// One line for `nnscope --version`: "none (this libtorch was built without CUDA)", "13.2, no device" or
/// "13.2, 1 device (cuda:0)".
std::string cudaSummary(const DeviceSupport& support);
/// The libtorch this nnscope was compiled against, "1.13.0" or "2.15.0" (torch/version.h).
std::string libtorchVersion();

/// Parses --device: "cpu", "cuda" (the first GPU, cuda:0) or "cuda:N". Throws nnscope::Error for anything else
/// ("--device must be cpu, cuda or cuda:N, not \"x\"."). Says nothing about whether the device is present: see
/// deviceUnavailableReason.
torch::Device parseDevice(const std::string& name);
/// "cpu", "cuda:0": what parseDevice reads back (a CUDA device always with its index).
std::string deviceName(const torch::Device& device);

/// Why `device` cannot hold a model here, as one sentence naming what is missing; "" when it can (the CPU always;
/// the meta device, which computes shapes only, too). A pure function of `support`, so every branch is testable
/// on any machine:
/// - CUDA without CUDA in the build: "this nnscope was built on a libtorch without CUDA ...";
/// - CUDA with it but no GPU: "no CUDA device: ...";
/// - cuda:N beyond the devices present: "no CUDA device N: this machine has M ...";
/// - any other device type: not supported.
std::string deviceUnavailableReason(const torch::Device& device, const DeviceSupport& support);
/// Throws nnscope::Error with deviceUnavailableReason(device, deviceSupport()) when it is not empty.
void requireDevice(const torch::Device& device);

/// `t` on the CPU: `t` itself when it is there (or undefined), else a copy. The boundary where values computed on a
/// GPU become the CPU tensors the views, exports and analyses read (core/run/trace.cpp's taps call it).
torch::Tensor toHost(const torch::Tensor& t);

}  // namespace nnscope
