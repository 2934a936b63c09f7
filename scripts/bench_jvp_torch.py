#!/usr/bin/env python3
"""Times PyTorch's forward mode on the shared benchmark's workloads (issue 48's speed
target): for each op, the forward alone (`fwd`, under no_grad) and `torch.func.jvp` of
the same forward along random tangents of every input (`jvp`), with the inputs,
shapes, timing loop and JSON fields of ../shared/bench/torch_linalg.py (whose
functions it imports), so that `scripts/bench_compare.py` pairs its rows with
`cotangent-bench --jvp`'s.

    python3 scripts/bench_jvp_torch.py --ops matmul cholesky solve eigh svd \\
        --sizes 256 --dtypes float64 --out-json torch_jvp.json
"""

import argparse
import json
import os
import sys

import torch
from torch.func import jvp

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("TORCH_BENCH_DIR", os.path.join(HERE, "..", "..", "shared", "bench"))
sys.path.insert(0, SHARED)
import torch_linalg as tl  # noqa: E402  (the shared script, for its inputs and timing)


# ops whose input is symmetric (Hermitian): their tangents are made so, as
# cotangent-bench --jvp makes them
SYMMETRIC = ("cholesky", "eigh", "eigvalsh")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-json", default="torch_jvp.json")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtypes", nargs="+", default=["float64"])
    p.add_argument("--ops", nargs="+", default=["matmul", "cholesky", "solve", "eigh", "svd"])
    p.add_argument("--sizes", nargs="+", type=int, default=[256])
    p.add_argument("--no-batched", action="store_true")
    p.add_argument("--batched", nargs="+", default=["4096x4"])
    a = p.parse_args()
    # the shared script's timing defaults
    a.max_call_s, a.sample_s, a.min_time, a.min_reps, a.max_reps = 2.0, 0.01, 0.3, 7, 41
    a.big_budget_s, a.warmup_s = 6.0, 0.05
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(0)
    shapes = [(None, n) for n in a.sizes]
    if not a.no_batched:
        shapes += [(int(b), int(n)) for b, n in (s.split("x") for s in a.batched)]
    out = []
    for dname in a.dtypes:
        dt = tl.DTYPES[dname]
        for op in a.ops:
            f = tl.fwd_fn(op)
            for batch, n in shapes:
                if not tl.applicable(op, batch):
                    continue
                xs = tl.make_inputs(op, batch, n, dt, gen)
                ts = [torch.randn(x.shape, dtype=x.dtype, generator=gen) for x in xs]
                if op in SYMMETRIC:
                    # the tangent of a symmetric (Hermitian) input is symmetric
                    ts = [t + t.mH for t in ts]

                def fwd():
                    with torch.no_grad():
                        return f(*xs)

                def fjvp():
                    return jvp(f, tuple(xs), tuple(ts))

                for mode, fn in (("fwd", fwd), ("jvp", fjvp)):
                    r = tl.bench(fn, a)
                    r.update({"op": op, "dtype": dname, "shape": tl.shape_key(batch, n), "batch": batch,
                              "n": n, "mode": mode})
                    print(f"{dname:8s} {op:10s} {r['shape']:10s} {mode:4s} {r['median']:.3e} s", flush=True)
                    out.append(r)
    env = {"torch": torch.__version__, "threads": a.threads, "argv": sys.argv}
    with open(a.out_json, "w") as fh:
        json.dump({"env": env, "results": out}, fh, indent=1)


if __name__ == "__main__":
    main()
