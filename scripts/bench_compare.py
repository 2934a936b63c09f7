#!/usr/bin/env python3
"""Ratio table of cotangent against PyTorch on the same workloads.

    python3 scripts/bench_compare.py cotangent.json [cotangent2.json ...] torch.json [--md out.md]

The files hold records with op, dtype, shape, mode and median (seconds): the first
written by `cargo run --release -p cotangent-bench`, the second by
shared/bench/torch_linalg.py (the last file). With several cotangent files (repeated
runs), each row takes the median of their medians. Each cell is cotangent / PyTorch (below 1: cotangent is
faster), with both medians. Standard library only.
"""
import argparse
import json
import statistics


def load(path):
    with open(path) as fh:
        doc = json.load(fh)
    return {(r["op"], r["dtype"], r["shape"], r["mode"]): r for r in doc["results"] if "median" in r}


def fmt(s):
    if s < 1e-6:
        return f"{s * 1e9:.0f}ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f}us"
    if s < 1:
        return f"{s * 1e3:.2f}ms"
    return f"{s:.2f}s"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cotangent", nargs="+")
    p.add_argument("torch")
    p.add_argument("--md")
    a = p.parse_args()
    runs = [load(path) for path in a.cotangent]
    theirs = load(a.torch)
    ours = {}
    for k in runs[0]:
        meds = [r[k]["median"] for r in runs if k in r]
        ours[k] = {"median": statistics.median(meds)}
    keys = [k for k in ours if k in theirs]
    lines = ["| op | dtype | shape | mode | cotangent | PyTorch | ratio |", "|---|---|---|---|---|---|---|"]
    for k in keys:
        o, t = ours[k]["median"], theirs[k]["median"]
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {fmt(o)} | {fmt(t)} | {o / t:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
