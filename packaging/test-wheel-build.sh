#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds nnscope on the torch wheel's libtorch (-DNNSCOPE_TORCH=wheel, docs/DEVELOPING.md "The wheel build") and runs
# the whole test suite on that build. CI keeps the README build; run this where the wheel is installed
# (packaging/install-deps.sh --torch wheel [--cuda]; this script installs it when it is missing).
#
# Usage: packaging/test-wheel-build.sh [--cuda] [--build-dir DIR] [--prefix DIR] [--jobs N] [--stage core|all]
#                                      [--tests REGEX] [--lock FILE]
#   --cuda          link libtorch's CUDA part too (-DNNSCOPE_CUDA=ON; test_device then runs on the GPU where there is one)
#   --build-dir DIR the build folder (default: build-wheel)
#   --prefix DIR    the wheel's folder (default: .torch-wheel)
#   --jobs N        build and test jobs (default: 2)
#   --stage core    build only the engine and its test program, then run the engine suites (a first, shorter step);
#           all     everything, then the whole suite (the default)
#   --tests REGEX   run only the ctest entries matching REGEX
#   --lock FILE     run each configure, build and test command under `flock FILE` (a machine shared by several builds)
# Every compile runs at nice 10. Exit status: ctest's.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cuda=0
build_dir="$root/build-wheel"
prefix="$root/.torch-wheel"
jobs=2
stage=all
tests=""
lock=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) cuda=1; shift ;;
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift 2 ;;
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --stage) stage="${2:?--stage needs core or all}"; shift 2 ;;
    --tests) tests="${2:?--tests needs a regular expression}"; shift 2 ;;
    --lock) lock="${2:?--lock needs a file}"; shift 2 ;;
    -h|--help) sed -n '3,18p' "$0"; exit 0 ;;
    *) echo "test-wheel-build: unknown option '$1' (see --help)." >&2; exit 2 ;;
  esac
done
case "$stage" in core|all) ;; *) echo "test-wheel-build: --stage must be core or all, not '$stage'." >&2; exit 2 ;; esac

locked() {  # locked CMD...: CMD, under the lock when one was given
  if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi
}

site="$prefix/site-packages"
if [ ! -f "$site/torch/lib/libtorch_cpu.so" ] || { [ "$cuda" = 1 ] && [ ! -f "$site/torch/lib/libtorch_cuda.so" ]; }; then
  install_args=(--torch wheel --wheel-only --prefix "$prefix")
  [ "$cuda" = 1 ] && install_args+=(--cuda)
  "$root/packaging/install-deps.sh" "${install_args[@]}"
fi

cmake_args=(-S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNSCOPE_TORCH=wheel
            "-DNNSCOPE_TORCH_PREFIX=$prefix" "-DNNSCOPE_TORCH_SITE=$site")
if [ "$cuda" = 1 ]; then cmake_args+=(-DNNSCOPE_CUDA=ON); else cmake_args+=(-DNNSCOPE_CUDA=OFF); fi
locked cmake "${cmake_args[@]}"

if [ "$stage" = core ]; then
  locked nice -n 10 cmake --build "$build_dir" -j "$jobs" --target nnscope nnscope_tests
  # the engine's suites (nnscope_tests; the program they drive is built too), not the window's, the package's nor the
  # benchmark programs' option checks (none of those is built at this stage)
  locked ctest --test-dir "$build_dir" -j "$jobs" --output-on-failure -E 'test_gui|package|bench_' ${tests:+-R "$tests"}
else
  locked nice -n 10 cmake --build "$build_dir" -j "$jobs"
  locked ctest --test-dir "$build_dir" -j "$jobs" --output-on-failure ${tests:+-R "$tests"}
fi
