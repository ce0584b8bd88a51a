#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and checks the Rust toolchain that builds
# the small crate wrapping HuggingFace `tokenizers`. Run as root (or with sudo) on Debian 12.
#
#   packaging/install-deps.sh                      the README build: Debian's libtorch 1.13 (CPU, OpenBLAS)
#   packaging/install-deps.sh --torch wheel        also PyPI's torch 2.15.0 wheel (its libtorch, and the two NVIDIA
#                                                  runtime libraries its CPU part loads) in .torch-wheel/ of this checkout;
#                                                  build with cmake -DNNSCOPE_TORCH=wheel (docs/DEVELOPING.md)
#   packaging/install-deps.sh --torch wheel --cuda also every CUDA library the wheel's GPU part needs (about 5 GB);
#                                                  build with -DNNSCOPE_TORCH=wheel -DNNSCOPE_CUDA=ON for --device cuda
#   --prefix DIR    the wheel's folder instead of .torch-wheel/ (cmake -DNNSCOPE_TORCH_PREFIX=DIR)
#   --wheel-only    the wheel alone: skip the Debian packages and the Rust check (they are installed already)
# The wheel goes into DIR/site-packages with pip --target: no virtual environment, never the system Python's packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
torch_kind=debian
cuda=0
wheel_only=0
prefix="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.torch-wheel"
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) torch_kind="${2:-}"; shift 2 ;;
    --torch=*) torch_kind="${1#--torch=}"; shift ;;
    --cuda) cuda=1; shift ;;
    --prefix) prefix="${2:-}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --wheel-only) wheel_only=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown option '$1' (see --help)." >&2; exit 2 ;;
  esac
done
case "$torch_kind" in
  debian|wheel) ;;
  *) echo "install-deps: --torch must be debian or wheel, not '$torch_kind'." >&2; exit 2 ;;
esac
if [ "$cuda" = 1 ] && [ "$torch_kind" != wheel ]; then
  echo "install-deps: --cuda needs --torch wheel (Debian's libtorch has no CUDA)." >&2
  exit 2
fi
if [ "$wheel_only" = 1 ] && [ "$torch_kind" != wheel ]; then
  echo "install-deps: --wheel-only needs --torch wheel." >&2
  exit 2
fi

# The pinned wheel: torch 2.15.0 from PyPI (the version tests/fixtures/requirements.txt pins for the goldens). Its
# libtorch_cpu.so needs libcudart.so.13 and libcupti.so.13 even to compute on the CPU; they come from NVIDIA's wheels
# of the versions torch 2.15.0's cuda-toolkit 13.2.2 requirement resolves to.
TORCH_WHEEL_VERSION=2.15.0
TORCH_CPU_RUNTIME=(nvidia-cuda-runtime==13.2.86 nvidia-cuda-cupti==13.2.86)

install_torch_wheel() {
  local site="$prefix/site-packages" py
  py=$(command -v python3 || true)
  if [ -z "$py" ] || ! "$py" -m pip --version >/dev/null 2>&1; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends python3 python3-pip
    py=$(command -v python3)
  fi
  mkdir -p "$site"
  local have_torch=0 have_cuda=0
  [ -d "$site/torch-$TORCH_WHEEL_VERSION.dist-info" ] && [ -f "$site/torch/lib/libtorch_cpu.so" ] && have_torch=1
  [ -f "$site/nvidia/cu13/lib/libcublas.so.13" ] && [ -d "$site/nvidia/cudnn" ] && have_cuda=1
  if [ "$cuda" = 1 ]; then
    if [ "$have_torch" = 1 ] && [ "$have_cuda" = 1 ]; then
      echo "install-deps: torch $TORCH_WHEEL_VERSION with CUDA is already in $site."
    else
      # torch with its own requirements: every NVIDIA library its GPU part loads (cuBLAS, cuDNN, NCCL, ...)
      "$py" -m pip install --disable-pip-version-check --no-warn-script-location --upgrade --only-binary=:all: \
        --target "$site" "torch==$TORCH_WHEEL_VERSION"
    fi
  elif [ "$have_torch" = 1 ] && [ -f "$site/nvidia/cu13/lib/libcudart.so.13" ] && [ -f "$site/nvidia/cu13/lib/libcupti.so.13" ]; then
    echo "install-deps: torch $TORCH_WHEEL_VERSION is already in $site."
  else
    # the CPU build: the wheel and the two runtime libraries libtorch_cpu loads, nothing else (no Python packages)
    "$py" -m pip install --disable-pip-version-check --no-warn-script-location --upgrade --only-binary=:all: --no-deps \
      --target "$site" "torch==$TORCH_WHEEL_VERSION" "${TORCH_CPU_RUNTIME[@]}"
  fi
  [ -f "$site/torch/lib/libtorch_cpu.so" ] || { echo "install-deps: pip did not leave $site/torch/lib/libtorch_cpu.so." >&2; exit 1; }
  local cmake_args="-DNNSCOPE_TORCH=wheel"
  [ "$cuda" = 1 ] && cmake_args="$cmake_args -DNNSCOPE_CUDA=ON"
  [ "$prefix" != "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.torch-wheel" ] && cmake_args="$cmake_args -DNNSCOPE_TORCH_PREFIX=$prefix"
  echo "install-deps: the torch wheel's libtorch is in $site/torch; configure with: cmake -S . -B build-wheel -G Ninja $cmake_args"
}

if [ "$wheel_only" = 1 ]; then
  install_torch_wheel
  exit 0
fi
pkgs=(
  build-essential cmake ninja-build pkg-config ccache git curl
  ca-certificates   # cargo fetches the tokenizer crates over HTTPS (a bare Debian has no CA certificates)
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl1-mesa-dev
  libtorch-dev libopenblas0-openmp   # OpenBLAS on libgomp: one thread pool with libtorch's (see below)
  libqcustomplot-dev nlohmann-json3-dev binutils
  libyaml-cpp-dev   # circuit-tracer's config.yaml (core/io/transcoderset.cpp); the .deb's Depends gains libyaml-cpp0.7 by itself
  xvfb xauth
  help2man desktop-file-utils file   # the man page made from --help; the menu entry's check; cpack's Depends (file)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Debian's libtorch loads OpenBLAS as libblas.so.3 and as libopenblas.so.0, each a Debian alternative chosen on its own.
# The pthreads build (libopenblas0-pthread, preferred when installed) runs a thread pool of its own beside libtorch's
# OpenMP pool and the two fight over the cores (docs/PERFORMANCE.md); point every OpenBLAS alternative at the OpenMP
# build, which shares libgomp's pool. Nothing is removed: `update-alternatives --auto NAME` goes back.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
for alt in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  name="$alt-$arch"
  choice=$(update-alternatives --list "$name" 2>/dev/null | grep '/openblas-openmp/' | head -n1 || true)
  [ -n "$choice" ] || continue
  current=$(readlink -f "/etc/alternatives/$name" 2>/dev/null || true)
  if [ "$current" != "$(readlink -f "$choice")" ]; then
    $SUDO update-alternatives --set "$name" "$choice"
  fi
done
# Rust (cargo) builds core/hf_tokenizers: HuggingFace tokenizers and SentencePiece (from the source in the
# sentencepiece-sys crate; Debian's libsentencepiece embeds a protobuf that clashes with libtorch's). The crates need
# Rust >= 1.75. Used in this order: a cargo on PATH that is new enough, rustup's ~/.cargo/bin/cargo, else Debian's
# own current Rust (cargo-web / rustc-web: the toolchain bookworm ships for building browsers), installed here.
# Debian's plain `cargo` package (Rust 1.65) is too old.
rust_ok() {  # rust_ok CARGO: the cargo runs and its rustc is new enough
  local v
  v=$("$1" --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] || return 1
  [ "$(printf '%s\n1.75.0\n' "${v%%-*}" | sort -V | head -n1)" = "1.75.0" ]
}
cargo_bin=""
if command -v cargo >/dev/null 2>&1 && rust_ok cargo; then
  cargo_bin=$(command -v cargo)
elif [ -x "$HOME/.cargo/bin/cargo" ] && rust_ok "$HOME/.cargo/bin/cargo"; then
  cargo_bin="$HOME/.cargo/bin/cargo"
else
  echo "install-deps: no Rust >= 1.75 found; installing Debian's cargo-web and rustc-web." >&2
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends cargo-web rustc-web
  cargo_bin=/usr/bin/cargo
  rust_ok "$cargo_bin" || { echo "install-deps: $cargo_bin is older than Rust 1.75." >&2; exit 1; }
fi
"$cargo_bin" --version
if [ "$torch_kind" = wheel ]; then
  install_torch_wheel
fi
