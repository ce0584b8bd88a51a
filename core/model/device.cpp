// SPDX-License-Identifier: MIT
#include "core/model/device.h"

#include "core/model/error.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <cctype>

namespace nnscope {

const DeviceSupport& deviceSupport() {
    static const DeviceSupport support = [] {
        DeviceSupport s;
        const at::CUDAHooksInterface& hooks = at::detail::getCUDAHooks();
        // The default hooks (no libtorch_cuda loaded) refuse to name a CUDA runtime version; the real ones return the
        // version they were compiled against. The same call on libtorch 1.13 and 2.x.
        try {
            s.cudaRuntimeVersion = hooks.versionCUDART();
            s.builtWithCuda = true;
        } catch (const c10::Error&) {
            s.builtWithCuda = false;
        }
        if (s.builtWithCuda) {
            try {
                s.cudaDevices = hooks.getNumGPUs();  // 0 without a driver or a GPU (libtorch warns, does not throw)
            } catch (const c10::Error&) {
                s.cudaDevices = 0;
            }
        }
        return s;
    }();
    return support;
}

std::string cudaSummary(const DeviceSupport& support) {
    if (!support.builtWithCuda) return "none (this libtorch was built without CUDA)";
    const long v = support.cudaRuntimeVersion;
    std::string out = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) + ", ";
    if (support.cudaDevices <= 0) return out + "no device";
    return out + std::to_string(support.cudaDevices) + (support.cudaDevices == 1 ? " device (cuda:0)" : " devices");
}

std::string libtorchVersion() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH);
}

torch::Device parseDevice(const std::string& name) {
    std::string lower;
    for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "cpu") return torch::kCPU;
    if (lower == "cuda" || lower == "gpu") return torch::Device(torch::kCUDA, 0);
    if (lower.rfind("cuda:", 0) == 0) {
        const std::string index = lower.substr(5);
        if (!index.empty() && index.size() <= 3 && index.find_first_not_of("0123456789") == std::string::npos)
            return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(index)));
    }
    throw Error("--device must be cpu, cuda or cuda:N (N: the GPU's index, from 0), not \"" + name + "\".");
}

std::string deviceName(const torch::Device& device) {
    if (device.is_cuda()) return "cuda:" + std::to_string(device.has_index() ? device.index() : 0);
    return c10::DeviceTypeName(device.type(), /*lower_case=*/true);
}

std::string deviceUnavailableReason(const torch::Device& device, const DeviceSupport& support) {
    if (device.is_cpu() || device.is_meta()) return "";
    if (!device.is_cuda())
        return "nnscope computes on the CPU or a CUDA GPU, not on " + deviceName(device) + ".";
    if (!support.builtWithCuda)
        return "this nnscope was built on a libtorch without CUDA, so it cannot use a GPU (--device cuda): build it on the "
               "torch wheel's libtorch with CUDA (packaging/install-deps.sh --torch wheel --cuda, then cmake "
               "-DNNSCOPE_TORCH=wheel -DNNSCOPE_CUDA=ON; docs/DEVELOPING.md), or compute on the CPU (--device cpu).";
    if (support.cudaDevices <= 0)
        return "no CUDA device: this nnscope has CUDA, but the driver reports no GPU (check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES), so it cannot compute on " + deviceName(device) + "; use --device cpu.";
    const int index = device.has_index() ? device.index() : 0;
    if (index >= support.cudaDevices)
        return "no CUDA device " + std::to_string(index) + ": this machine has " + std::to_string(support.cudaDevices) +
               (support.cudaDevices == 1 ? " GPU (cuda:0)." : " GPUs (cuda:0 to cuda:" + std::to_string(support.cudaDevices - 1) + ").");
    return "";
}

void requireDevice(const torch::Device& device) {
    const std::string why = deviceUnavailableReason(device, deviceSupport());
    if (!why.empty()) throw Error(why);
}

torch::Tensor toHost(const torch::Tensor& t) {
    if (!t.defined() || t.device().is_cpu()) return t;
    return t.to(torch::kCPU);
}

}  // namespace nnscope
