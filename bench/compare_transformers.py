#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nnscope against transformers (eager attention) on the same checkpoint, in one run (issue 12).

For the checkpoint's float32 and its default dtype (nnscope: --dtype auto; transformers: from_pretrained's default,
the dtype config.json names), both tools trace 1, 128 and 512 tokens, saving nothing and saving every value
(transformers: output_hidden_states and output_attentions, the closest it has), time the load, and generate greedily
(a 32-token prompt, 32 new tokens, with the key/value cache). With --attention sdpa, transformers computes attention
with scaled_dot_product_attention (its default) and only "saving nothing" is timed: neither tool can return attention
probabilities through SDPA (nnscope's wheel build uses it exactly when no pattern is asked for; its README build, on
libtorch 1.13, always computes eagerly, and the table's header says which). The two tools alternate, repetition by repetition
(nnscope_bench runs as a subprocess, transformers in this process while nnscope is not running), on the same number
of threads; each figure is the best of its repetitions. Prints one Markdown table of times and the ratio
nnscope / transformers (below 1: nnscope is faster).

  /work/main/.venv-fixtures/bin/python bench/compare_transformers.py --bench build/bench/nnscope_bench \\
      [--dir DIR] [--threads 2] [--repeats 2] [--lengths 1,128,512] [--dtypes float32,default] [--attention eager|sdpa]

Without --dir, nnscope_bench's random ERNIE-4.5-0.3B-shaped checkpoint is used (written first if missing).
Python is used here, as for the fixtures; never at run time or in CI.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def nnscope_run(bench, ckpt, dtype, lengths, threads, new_tokens, saved):
    cmd = [bench, "--dir", ckpt, "--dtypes", dtype, "--lengths", ",".join(map(str, lengths)), "--repeats", "1",
           "--threads", str(threads), "--generate", str(new_tokens), "--saved", saved, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def token_ids(n, vocab):  # nnscope_bench's ids
    return [(j * 7919 + 13) % vocab for j in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default="build/bench/nnscope_bench", help="the nnscope_bench program")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "nnscope-bench-ernie-0.3b"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--lengths", default="1,128,512")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--dtypes", default="float32,default",
                    help="which comparisons: float32 (both tools in float32), default (each tool's default dtype)")
    ap.add_argument("--attention", default="eager", choices=("eager", "sdpa"),
                    help="transformers' attention: eager (every value comparable) or sdpa (saving nothing only)")
    args = ap.parse_args()
    labels = [d for d in args.dtypes.split(",") if d]
    if not labels or any(d not in ("float32", "default") for d in labels):
        ap.error("--dtypes takes float32 and/or default, comma-separated")
    lengths = [int(x) for x in args.lengths.split(",")]
    # what each trace saves (transformers' arguments for it); through SDPA neither tool returns attention probabilities
    extras = {"nothing": {}, "every value": {"output_hidden_states": True, "output_attentions": True}}
    saveds = ("nothing", "every value") if args.attention == "eager" else ("nothing",)

    import torch
    import transformers
    torch.set_num_threads(args.threads)
    if not os.path.exists(os.path.join(args.dir, "config.json")):  # let nnscope_bench write its checkpoint
        subprocess.run([args.bench, "--dir", args.dir, "--dtypes", "float32", "--lengths", "1", "--repeats", "1",
                        "--generate", "0"], check=True, capture_output=True)
    cfg = json.load(open(os.path.join(args.dir, "config.json")))
    vocab = cfg["vocab_size"]
    best = {}  # (tool, dtype label, what) -> seconds

    def keep(key, s):
        best[key] = min(best.get(key, float("inf")), s)

    info = {}
    for rep in range(args.repeats):
        for label, nn_dtype, hf_dtype in (("float32", "float32", torch.float32), ("default", "auto", None)):
            if label not in labels:
                continue
            # nnscope: one process loads, traces every length both ways and generates
            r = nnscope_run(args.bench, args.dir, nn_dtype, lengths, args.threads, args.new_tokens,
                            "both" if len(saveds) == 2 else "nothing")
            info[("nnscope", label)] = r["runs"][0]["compute_dtype"]
            info["nnscope attention"] = r["attention_without_patterns"]
            info["memcpy"] = r["memcpy_gb_s"]
            keep(("nnscope", label, "load"), r["runs"][0]["load_s"])
            for run in r["runs"]:
                keep(("nnscope", label, f"{run['tokens']} {run['saved']}"), run["trace_s"])
            for g in r["generate"]:
                keep(("nnscope", label, "generate"), g["s"])
            # transformers, eager attention (or SDPA)
            t0 = time.perf_counter()
            kw = {"attn_implementation": args.attention}
            if hf_dtype is not None:
                kw["dtype"] = hf_dtype
            model = transformers.AutoModelForCausalLM.from_pretrained(args.dir, **kw).eval()
            keep(("transformers", label, "load"), time.perf_counter() - t0)
            info[("transformers", label)] = str(model.dtype).replace("torch.", "")
            with torch.inference_mode():
                for n in lengths:
                    ids = torch.tensor([token_ids(n, vocab)])
                    for saved in saveds:
                        t0 = time.perf_counter()
                        model(ids, use_cache=False, **extras[saved])
                        keep(("transformers", label, f"{n} {saved}"), time.perf_counter() - t0)
                if args.new_tokens > 0:
                    ids = torch.tensor([token_ids(32, vocab)])
                    t0 = time.perf_counter()
                    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=args.new_tokens,
                                   min_new_tokens=args.new_tokens, do_sample=False, pad_token_id=0)
                    keep(("transformers", label, "generate"), time.perf_counter() - t0)
            del model
        print(f"repetition {rep + 1}/{args.repeats} done", file=sys.stderr)

    print(f"checkpoint {args.dir}; {args.threads} threads each; best of {args.repeats}; "
          f"torch {torch.__version__}, transformers {transformers.__version__}; memcpy {info['memcpy']:.1f} GB/s; "
          f"attention saving nothing: nnscope {info['nnscope attention']}, transformers {args.attention}")
    print()
    print("| dtype (nnscope / transformers) | what | nnscope s | transformers s | ratio |")
    print("|---|---|---|---|---|")
    whats = ["load"] + [f"{n} {s}" for n in lengths for s in saveds]
    if args.new_tokens > 0:
        whats.append("generate")
    for label in labels:
        dt = f"{label}: {info[('nnscope', label)]} / {info[('transformers', label)]}"
        for w in whats:
            a, b = best[("nnscope", label, w)], best[("transformers", label, w)]
            name = w if w != "generate" else f"generate 32 + {args.new_tokens} (s)"
            if w[0].isdigit():
                n, s = w.split(" ", 1)
                name = f"{n} tokens, saving {s}"
            print(f"| {dt} | {name} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
