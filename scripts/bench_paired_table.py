#!/usr/bin/env python3
"""Ratio table of alternating runs written by scripts/bench_paired.sh.

    python3 scripts/bench_paired_table.py DIR [DIR ...]

Each DIR (a window) holds c_<run>.json (cotangent-bench) and t_<run>.json
(torch_linalg.py), <run> being <round>_<op> (or <round> in older windows); the two files of
a run were measured one right after the other. Prints, for each f64 fwd+bwd batched row,
cotangent / PyTorch per window (medians of the window's runs), both libraries' medians
over all runs and their ratio, and the median over all runs of each run's own ratio (the
least sensitive to the host's load changing between runs). Below 1: cotangent is faster.
Where the windows hold r_<run>.txt (the cache-line round trip between two cores, in ns,
probed before the run), the last column counts the runs with far cores (at least
FAR_NS): parallel kernels are slower in those (see
crates/cotangent-bench/src/bin/core_roundtrip.rs).
Standard library only.
"""
import glob
import json
import os
import statistics
import sys


def load(path):
    with open(path) as fh:
        doc = json.load(fh)
    return {(r["op"], r["shape"]): r["median"] for r in doc["results"]
            if "median" in r and r.get("mode") == "fwdbwd" and r["dtype"] == "float64"
            and "x" in r["shape"]}


# a round trip from which the cores count as far apart (the probe gave 40-180 ns or
# 350-620 ns on the benchmark hosts)
FAR_NS = 250


def fmt(s):
    return f"{s * 1e6:.1f}us" if s < 1e-3 else f"{s * 1e3:.2f}ms"


def main():
    dirs = sys.argv[1:]
    rows = {}
    paired = {}
    # (op, shape) -> [far run?] over the runs with a probe
    far = {}
    for w, d in enumerate(dirs):
        for side in "ct":
            for path in sorted(glob.glob(os.path.join(d, f"{side}_*.json"))):
                for k, v in load(path).items():
                    rows.setdefault(k, {}).setdefault((w, side), []).append(v)
        # each run's own ratio: the cotangent and PyTorch files of the same run
        for path in sorted(glob.glob(os.path.join(d, "c_*.json"))):
            other = os.path.join(d, "t_" + os.path.basename(path)[2:])
            if os.path.exists(other):
                theirs = load(other)
                probe = os.path.join(d, "r_" + os.path.basename(path)[2:-5] + ".txt")
                ns = None
                if os.path.exists(probe):
                    with open(probe) as fh:
                        ns = float(fh.read().split()[0])
                for k, v in load(path).items():
                    if k in theirs:
                        paired.setdefault(k, []).append(v / theirs[k])
                        if ns is not None:
                            far.setdefault(k, []).append(ns >= FAR_NS)
    wins = " | ".join(f"window {w + 1}" for w in range(len(dirs)))
    print(f"| op | shape | {wins} | cotangent | PyTorch | cotangent / PyTorch "
          "| median run ratio | runs with far cores |")
    print("|---|---|" + "---|" * (len(dirs) + 5))
    for k in sorted(rows):
        r = rows[k]
        cells, ours, theirs = [], [], []
        for w in range(len(dirs)):
            c, t = r.get((w, "c"), []), r.get((w, "t"), [])
            ours += c
            theirs += t
            cells.append(f"{statistics.median(c) / statistics.median(t):.2f}" if c and t else "-")
        if ours and theirs:
            mc, mt = statistics.median(ours), statistics.median(theirs)
            pr = paired.get(k)
            runs = f"{statistics.median(pr):.2f}" if pr else "-"
            fr = far.get(k)
            fars = f"{sum(fr)}/{len(fr)}" if fr else "-"
            print(f"| {k[0]} | {k[1]} | " + " | ".join(cells)
                  + f" | {fmt(mc)} | {fmt(mt)} | {mc / mt:.2f} | {runs} | {fars} |")


if __name__ == "__main__":
    main()
