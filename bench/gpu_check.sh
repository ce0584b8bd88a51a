#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU check of nnscope, in one short run on a machine with an NVIDIA GPU (docs/PERFORMANCE.md, "On a GPU"):
#   1. names the machine (CPU model and flags, GPU, driver);
#   2. finds a libtorch with CUDA: .torch-wheel/ (packaging/install-deps.sh --torch wheel --cuda), else the machine's own
#      Python torch when it has CUDA, else installs the pinned wheel with install-deps.sh (which needs PyPI);
#   3. checks the build's other needs (cmake, ninja, a C++20 compiler, Qt 6 Core and Test, nlohmann-json, yaml-cpp,
#      cargo) and stops naming what is missing;
#   4. builds nnscope on it without the window (-DNNSCOPE_TORCH=wheel -DNNSCOPE_CUDA=ON -DNNSCOPE_BUILD_GUI=OFF);
#   5. runs test_device (every fixture family's values on the GPU against the CPU's, float32 tolerance; the fixtures
#      travel with the checkout, the shared real checkpoints are not needed);
#   6. times tracing (1 / 128 / 512 tokens) and greedy generation (32 + 32) of a 1B-parameter-shaped random checkpoint
#      on cuda and cpu in float32 and bfloat16 (nnscope_device_bench), with the largest logit difference from the CPU.
# Everything it prints also goes to $OUT (when set; else ./gpu-check-out): gpu_check.log, summary.md, machine.txt,
# test_device.log, device_bench.json. About 5-8 minutes on 16 cores with the libtorch already there.
#
# Usage: bench/gpu_check.sh [--dry-run] [--jobs N] [--build-dir DIR] [--torch-site DIR] [--shape 1b|tiny]
#   --dry-run         print the steps and the commands it would run, run nothing
#   --jobs N          build jobs (default: every core)
#   --build-dir DIR   the build folder (default: build-gpu)
#   --torch-site DIR  a site-packages folder holding torch/ (and nvidia/) with CUDA, instead of looking for one
#   --shape NAME      the benchmark's checkpoint: 1b (default) or tiny (a quick check of this script)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dry_run=0
jobs="$(nproc 2>/dev/null || echo 4)"
build_dir="$root/build-gpu"
torch_site=""
shape=1b
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1; shift ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift 2 ;;
    --torch-site) torch_site="${2:?--torch-site needs a folder}"; shift 2 ;;
    --shape) shape="${2:?--shape needs 1b or tiny}"; shift 2 ;;
    -h|--help) sed -n '3,25p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown option '$1' (see --help)." >&2; exit 2 ;;
  esac
done
case "$shape" in 1b|tiny) ;; *) echo "gpu_check: --shape must be 1b or tiny, not '$shape'." >&2; exit 2 ;; esac
case "$jobs" in ''|*[!0-9]*) echo "gpu_check: --jobs must be a number, not '$jobs'." >&2; exit 2 ;; esac

out="${OUT:-$root/gpu-check-out}"
log="$out/gpu_check.log"
step_no=0
started=$(date +%s)

step() {  # step TITLE: a numbered heading, with the seconds since the start
  step_no=$((step_no + 1))
  printf '\n== %d. %s (t=%ds)\n' "$step_no" "$1" "$(( $(date +%s) - started ))"
}
run() {  # run CMD...: prints the command, then runs it unless --dry-run
  printf '+ %s\n' "$*"
  [ "$dry_run" = 1 ] || "$@"
}
die() {
  echo "gpu_check: $*" >&2
  [ -d "$out" ] && echo "gpu_check: $*" >>"$out/summary.md"
  exit 1
}

if [ "$dry_run" = 0 ]; then
  mkdir -p "$out"
  exec > >(tee -a "$log") 2>&1
fi
echo "gpu_check: nnscope's GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), output in $out"

step "the machine"
if [ "$dry_run" = 1 ]; then
  echo "+ lscpu; nvidia-smi; nproc; free -g  (into $out/machine.txt)"
else
  {
    lscpu | grep -E '^(Model name|Architecture|CPU\(s\)|Thread|Core|Socket|L3)' || true
    echo "Flags (vector): $(grep -o -w -E 'avx2|avx512f|avx512_bf16|avx512_vnni|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    echo "Memory: $(free -g | awk '/^Mem:/{print $2 " GiB"}')"
    if command -v nvidia-smi >/dev/null 2>&1; then
      echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n1)"
    else
      echo "GPU: none (nvidia-smi not found)"
    fi
  } | tee "$out/machine.txt"
  # nothing below is worth its time without a GPU: the CPU-side checks run in the normal test suite
  if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    die "no NVIDIA GPU here (nvidia-smi lists none): this check is for a machine with one."
  fi
fi

step "a libtorch with CUDA"
cuda_libs_in() {  # cuda_libs_in SITE: SITE holds torch with its CUDA part and NVIDIA's libraries
  [ -f "$1/torch/lib/libtorch_cuda.so" ] && compgen -G "$1/nvidia/*/lib/libcublas.so.*" >/dev/null
}
if [ -n "$torch_site" ]; then
  torch_site="$(cd "$torch_site" 2>/dev/null && pwd || echo "$torch_site")"
  cuda_libs_in "$torch_site" || [ "$dry_run" = 1 ] || die "--torch-site $torch_site holds no torch with CUDA (torch/lib/libtorch_cuda.so, nvidia/*/lib/libcublas.so.*)."
elif cuda_libs_in "$root/.torch-wheel/site-packages"; then
  torch_site="$root/.torch-wheel/site-packages"
else
  # The machine's own Python torch (a GPU image usually has one): the folder that holds its torch/ package.
  py_site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null || true)
  if [ -n "$py_site" ] && cuda_libs_in "$py_site"; then
    torch_site="$py_site"
  else
    echo "no libtorch with CUDA here: installing the pinned wheel (needs PyPI)"
    run "$root/packaging/install-deps.sh" --torch wheel --cuda --wheel-only
    torch_site="$root/.torch-wheel/site-packages"
  fi
fi
torch_version=$(sed -n 's/^__version__ = .\(.*\).$/\1/p' "$torch_site/torch/version.py" 2>/dev/null || echo unknown)
echo "libtorch: $torch_site/torch ($torch_version)"

step "the build's other needs"
missing=()
for tool in cmake ninja g++ cargo; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
for pkg in Qt6Core Qt6Test nlohmann_json yaml-cpp; do
  found=$(find /usr/lib /usr/local/lib /usr/share /opt -maxdepth 6 \( -name "${pkg}Config.cmake" -o -name "${pkg}-config.cmake" \) \
          -print -quit 2>/dev/null || true)
  [ -n "$found" ] || missing+=("$pkg (its CMake package)")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]}"
  if [ "$dry_run" = 1 ]; then
    echo "(a real run stops here, or installs them with packaging/install-deps.sh where apt can reach Debian)"
  elif command -v apt-get >/dev/null 2>&1 && timeout 20 apt-get -q update >/dev/null 2>&1; then
    run "$root/packaging/install-deps.sh"
  else
    die "cannot build: ${missing[*]} missing and no package registry reachable (packaging/install-deps.sh lists what the build needs)."
  fi
else
  echo "cmake $(cmake --version | head -n1 | awk '{print $3}'), ninja $(ninja --version), $(g++ --version | head -n1), $(cargo --version)"
fi

step "build nnscope on it (CUDA, no window; $jobs jobs)"
run cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNSCOPE_TORCH=wheel -DNNSCOPE_CUDA=ON \
  "-DNNSCOPE_TORCH_SITE=$torch_site" -DNNSCOPE_BUILD_GUI=OFF -DNNSCOPE_UNITY_BUILD=ON
run cmake --build "$build_dir" -j "$jobs" --target nnscope nnscope_tests nnscope_device_bench
if [ "$dry_run" = 0 ]; then
  "$build_dir/app/nnscope" --version | tee "$out/version.txt"
  grep -q '^CUDA: [0-9]' "$out/version.txt" || die "this build does not see CUDA: $(grep '^CUDA:' "$out/version.txt")"
fi

step "test_device: every fixture family on the GPU against the CPU"
test_status=0
if [ "$dry_run" = 1 ]; then
  echo "+ ctest --test-dir $build_dir -R '^test_device\$' --output-on-failure  (into $out/test_device.log)"
else
  ctest --test-dir "$build_dir" -R '^test_device$' --output-on-failure >"$out/test_device.log" 2>&1 || test_status=$?
  tail -n 25 "$out/test_device.log"
  # the suite's own lines: which family passed on the GPU, and whether any was skipped
  "$build_dir/tests/nnscope_tests" test_device -o "$out/test_device.txt,txt" >/dev/null 2>&1 || true
fi

step "trace and generate a ${shape}-shaped random checkpoint on cuda and cpu"
bench_status=0
if [ "$dry_run" = 1 ]; then
  echo "+ $build_dir/bench/nnscope_device_bench --shape $shape --devices cpu,cuda --dtypes float32,bfloat16 --lengths 1,128,512 --generate 32 --repeats 3"
else
  # cpu first: each device's logits are compared with the CPU's
  "$build_dir/bench/nnscope_device_bench" --shape "$shape" --devices cpu,cuda --dtypes float32,bfloat16 --lengths 1,128,512 \
    --generate 32 --repeats 3 --dir "${TMPDIR:-/tmp}/nnscope-device-bench-$shape" | tee "$out/device_bench.md" || bench_status=$?
  "$build_dir/bench/nnscope_device_bench" --shape "$shape" --devices cpu,cuda --dtypes float32,bfloat16 --lengths 128 \
    --generate 0 --repeats 1 --dir "${TMPDIR:-/tmp}/nnscope-device-bench-$shape" --json >"$out/device_bench.json" || true
fi

step "summary"
if [ "$dry_run" = 0 ]; then
  {
    echo "# nnscope GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(( $(date +%s) - started )) s"
    echo
    echo '```'
    cat "$out/machine.txt"
    echo "libtorch: $torch_version ($torch_site)"
    echo '```'
    echo
    echo "test_device: $([ "$test_status" = 0 ] && echo passed || echo "FAILED (status $test_status; test_device.log)")"
    echo
    cat "$out/device_bench.md" 2>/dev/null || echo "nnscope_device_bench failed (status $bench_status)"
  } >"$out/summary.md"
  cat "$out/summary.md"
fi
echo "gpu_check: done in $(( $(date +%s) - started )) s"
[ "$test_status" = 0 ] && [ "$bench_status" = 0 ]
