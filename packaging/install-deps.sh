#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and checks the Rust toolchain that builds
# the small crate wrapping HuggingFace `tokenizers`. Run as root (or with sudo) on Debian 12.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
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
