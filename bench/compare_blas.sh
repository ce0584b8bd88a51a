#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# OpenBLAS's pthreads build against its OpenMP build, side by side in one run (#29; docs/PERFORMANCE.md): the same
# nnscope_bench binary, interleaved (pthreads, OpenMP, pthreads, OpenMP, ...), the Debian alternatives libtorch loads
# (libblas.so.3, liblapack.so.3, libopenblas.so.0) switched to one build or the other before each run and put back as
# they were at the end (also on Ctrl-C or an error). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for the benchmark
# alone. Prints the CPU (lscpu's model name, family, model and flags), each run's BLAS line, and one Markdown table
# with the better of the rounds for each figure.
#
# Usage (root: update-alternatives --set; both libopenblas0-pthread and libopenblas0-openmp installed):
#   bench/compare_blas.sh BENCH [--rounds N] [nnscope_bench options...]
#   e.g. bench/compare_blas.sh build/bench/nnscope_bench --rounds 2 --threads 2 --repeats 2 --lengths 1,128,512 --generate 32
# Run it alone on the machine (other work moves the figures): on a shared machine, under the build lock.
set -euo pipefail
bench=${1:?usage: compare_blas.sh BENCH [--rounds N] [nnscope_bench options...]}
shift
rounds=2
if [ "${1:-}" = "--rounds" ]; then rounds=${2:?--rounds needs a count}; shift 2; fi
[ "$(id -u)" = 0 ] || { echo "compare_blas.sh: run as root (it switches Debian alternatives)" >&2; exit 1; }
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
alts=(libblas.so.3 liblapack.so.3 libopenblas.so.0)
for build in openblas-pthread openblas-openmp; do
  [ -e "/usr/lib/$arch/$build/libopenblas.so.0" ] ||
    { echo "compare_blas.sh: /usr/lib/$arch/$build is missing: apt-get install libopenblas0-${build#openblas-}" >&2; exit 1; }
done

# What each alternative is now (auto, or manual with its choice), to put back at the end.
declare -A mode value
for a in "${alts[@]}"; do
  mode[$a]=$(update-alternatives --query "$a-$arch" | sed -n 's/^Status: //p')
  value[$a]=$(update-alternatives --query "$a-$arch" | sed -n 's/^Value: //p')
done
restore() {
  for a in "${alts[@]}"; do
    if [ "${mode[$a]}" = auto ]; then update-alternatives --quiet --auto "$a-$arch"
    else update-alternatives --quiet --set "$a-$arch" "${value[$a]}"; fi
  done
}
trap restore EXIT
use() {  # use openblas-pthread|openblas-openmp
  for a in "${alts[@]}"; do update-alternatives --quiet --set "$a-$arch" "/usr/lib/$arch/$1/$a"; done
}

out=$(mktemp -d)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores"
echo "flags: $(lscpu | sed -n 's/^Flags: *//p')"
for r in $(seq 1 "$rounds"); do
  for build in openblas-pthread openblas-openmp; do
    use "$build"
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bench" --json "$@" >"$out/$build.$r.json"
    echo "round $r, $build: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas"])' "$out/$build.$r.json")"
  done
done
restore
trap - EXIT

python3 - "$out" "$rounds" <<'EOF'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {b: [json.load(open(f"{out}/{b}.{r}.json")) for r in range(1, rounds + 1)] for b in ("openblas-pthread", "openblas-openmp")}
def best(build, section, key, pick, value):
    vals = [x[value] for doc in runs[build] for x in doc[section] if key(x)]
    return pick(vals) if vals else float("nan")
first = runs["openblas-openmp"][0]
print(f"\nthreads {first['threads']}; OpenBLAS core {first['openblas_core']}; memcpy "
      + " / ".join(f"{b.split('-')[1]} {min(d['memcpy_gb_s'] for d in runs[b]):.1f}-{max(d['memcpy_gb_s'] for d in runs[b]):.1f} GB/s" for b in runs)
      + f"; best of {rounds} rounds\n")
print("| dtype | tokens | saved | pthreads trace s | OpenMP trace s | OpenMP / pthreads |")
print("|---|---|---|---|---|---|")
for x in first["runs"]:
    k = lambda y, x=x: (y["dtype"], y["tokens"], y["saved"]) == (x["dtype"], x["tokens"], x["saved"])
    p, o = best("openblas-pthread", "runs", k, min, "trace_s"), best("openblas-openmp", "runs", k, min, "trace_s")
    print(f"| {x['compute_dtype']} | {x['tokens']} | {x['saved']} | {p:.3f} | {o:.3f} | {o / p:.2f} |")
for x in first["generate"]:
    k = lambda y, x=x: y["dtype"] == x["dtype"]
    p, o = best("openblas-pthread", "generate", k, max, "tokens_per_s"), best("openblas-openmp", "generate", k, max, "tokens_per_s")
    print(f"| {x['compute_dtype']} | generation {x['prompt']} + {x['new_tokens']} (new tokens/s) | | {p:.1f} | {o:.1f} | {o / p:.2f}x the rate |")
EOF
rm -rf "$out"
