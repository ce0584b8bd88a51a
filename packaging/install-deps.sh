#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and checks the Rust toolchain that builds
# the small crate wrapping HuggingFace `tokenizers`. Run as root (or with sudo) on Debian 12.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
pkgs=(
  build-essential cmake ninja-build pkg-config ccache git curl
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqt6svg6-dev libgl1-mesa-dev
  libtorch-dev libopenblas0-pthread
  libqcustomplot-dev nlohmann-json3-dev binutils
  xvfb xauth
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Rust (cargo) builds core/hf_tokenizers: HuggingFace tokenizers and SentencePiece (from the source in the
# sentencepiece-sys crate; Debian's libsentencepiece embeds a protobuf that clashes with libtorch's). Debian's cargo
# is too old for the tokenizers crate; rustup's is used when present.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "install-deps: cargo not found. Install Rust >= 1.75 with rustup (https://rustup.rs) and rerun." >&2
    exit 1
  fi
fi
cargo --version
