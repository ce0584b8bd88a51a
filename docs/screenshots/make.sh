#!/bin/sh
# SPDX-License-Identifier: MIT
# Renews the screenshots of docs/ and README.md from a build, each one `nnscope gui --screenshot` (drawn offscreen in
# a 1600 x 1000 window, the saved settings left alone). attention.png, attention-zoomed.png, heads.png, text.png and
# pinned-card.png show a chosen head, a zoom, a hovered token or a menu that only a pointer makes: they are taken in
# the real window under Xvfb (docs/DEVELOPING.md) and not here; so is routing-qwen3-moe.png (tiny-qwen3-moe, "Tom and
# Lily went to the park", the window at 1280 x 800 with the Pinned cards dock closed, block 2's expert 3 clicked on the
# load map; reduced to 96 colours to stay under 150 KB).
#
#   docs/screenshots/make.sh [BUILD_DIR]            the screenshots of the docs, into docs/screenshots/
#   docs/screenshots/make.sh --review OUT [BUILD]   every view at 18, 300 and 2048 tokens into OUT, to look at
#                                                   (the demo model; stories260K-llama; tests/fixtures tiny-llama)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
review=
if [ "${1:-}" = "--review" ]; then
  review=${2:?--review needs a folder}
  shift 2
fi
build=${1:-$root/build}
nnscope=$build/app/nnscope
[ -x "$nnscope" ] || { echo "make.sh: no $nnscope: build first (README)" >&2; exit 2; }
shared=$root/../shared/models
# The story of the Attention section, told twice: the second telling shows the induction stripe.
story="Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog, Max. One day, Lily saw a big red ball under a tree. She ran to the ball and picked it up. Max barked and jumped. Lily threw the ball and Max ran after it. They played all day until the sun went down. Then they went home, happy and tired. Lily gave Max a hug."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
shot() {  # shot FILE.png ARGS...: one screenshot; says which, and stops the script with Qt's messages when it fails
  file=$1
  shift
  echo "  $file"
  QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} "$nnscope" gui "$@" --screenshot "$file" >/dev/null 2>"$log" ||
    { cat "$log" >&2; exit 1; }
}

if [ -n "$review" ]; then
  mkdir -p "$review"
  long=$(python3 -c "print(' '.join(['the cat sat on the mat and looked at the dog.'] * 73))")
  for views in attention neurons lens heads text attribution flow; do
    shot "$review/18-$views.png" --view "$views"
    shot "$review/300-$views.png" --model "$shared/stories260K-llama" --prompt "$story $story" --view "$views"
    shot "$review/2048-$views.png" --model "$root/tests/fixtures/models/tiny-llama" --prompt "$long" --view "$views"
  done
  exit 0
fi

out=$here
shot "$out/demo-attention.png"
shot "$out/neurons.png" --view neurons
shot "$out/logit-lens.png" --view lens
shot "$out/attribution.png" --view attribution
shot "$out/flow.png" --view flow
shot "$out/family.png" --view family
shot "$out/diagram-pinned.png" --pin layers.1.self_attn.attention_probabilities --pin layers.1.layer_output --view attention
# the demo's three induction heads of block 1 zeroed: the copied token loses its probability
shot "$out/before-after.png" --edit "layers.1.self_attn.attention_head_outputs[:, :, 1] = 0" \
  --edit "layers.1.self_attn.attention_head_outputs[:, :, 2] = 0" --edit "layers.1.self_attn.attention_head_outputs[:, :, 3] = 0" \
  --view compare
shot "$out/patching.png" --clean "tom saw a red ball . tom saw a" --corrupted "tom saw a big dog . tom saw a" \
  --answer red --wrong big --view patching
# the demo's sparse autoencoder: a token's top features, feature 182 over the prompt, its logit effects and its
# dashboard on the demo's training text
shot "$out/features.png" --view features
