#!/usr/bin/env python3
"""Times in PyTorch the ops of cotangent-bench that torch_linalg.py lacks.

Ops (inputs randn; loss = output.sum(); fwdbwd = torch.autograd.grad(loss, inputs)):
  addmm    addmm(C, A, B)      C, A, B (n, n), square sizes
  baddbmm  baddbmm(C, A, B)    C, A, B (B, n, n), batched shapes 4096x4x4, 1024x16x16
  linear   linear(x, W, b)     x (64, n), W (n, n) / sqrt(n), b (n), square sizes
  matrix_exp  linalg.matrix_exp(A)  A = I + 0.5 randn / sqrt(n), square and batched
Records carry the fields of torch_linalg.py (op, dtype, shape, mode, median), so
scripts/bench_compare.py reads them beside `cotangent-bench --ops addmm baddbmm linear
matrix_exp`.
Timing: torch.set_num_threads(T); warm-up; an inner loop sized so one sample lasts
>= --sample-s; the median of >= --min-reps samples and >= --min-time seconds.

Usage: /tmp/torch/bin/python scripts/bench_products_torch.py --out-json torch_products.json
    [--ops addmm baddbmm linear matrix_exp] [--dtypes float64 float32] [--sizes 4 256 1024]
    [--no-batched] [--threads 2]
"""

import argparse
import json
import statistics
import time

import torch

OPS = ["addmm", "baddbmm", "linear", "matrix_exp"]
SQUARE = [4, 16, 64, 256, 1024]
BATCHED = [(4096, 4), (1024, 16)]
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def inputs(op, batch, n, dt):
    shape = (n, n) if batch is None else (batch, n, n)
    if op == "matrix_exp":
        return [torch.eye(n, dtype=dt) + 0.5 * torch.randn(shape, dtype=dt) / n ** 0.5]
    if op in ("addmm", "baddbmm"):
        return [torch.randn(shape, dtype=dt) for _ in range(3)]
    return [torch.randn(64, n, dtype=dt), torch.randn(n, n, dtype=dt) / n ** 0.5,
            torch.randn(n, dtype=dt)]


def forward(op, xs):
    if op == "addmm":
        return torch.addmm(xs[0], xs[1], xs[2])
    if op == "matrix_exp":
        return torch.linalg.matrix_exp(xs[0])
    if op == "baddbmm":
        return torch.baddbmm(xs[0], xs[1], xs[2])
    return torch.nn.functional.linear(xs[0], xs[1], xs[2])


def applicable(op, batch):
    if op == "matrix_exp":
        return True
    return (batch is not None) == (op == "baddbmm")


def bench(f, sample_s, min_reps, min_time):
    f()
    t0 = time.perf_counter()
    k = 0
    while k < 2 or (time.perf_counter() - t0 < 0.05 and k < 10000):
        f()
        k += 1
    est = (time.perf_counter() - t0) / k
    inner = max(1, int(sample_s / max(est, 1e-9)))
    reps = max(min_reps, int(min_time / max(est * inner, 1e-9)))
    reps = min(reps, 41)
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            f()
        samples.append((time.perf_counter() - t) / inner)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out-json", default="torch_products.json")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    p.add_argument("--ops", nargs="+", default=OPS)
    p.add_argument("--sizes", nargs="*", type=int, default=SQUARE)
    p.add_argument("--no-batched", action="store_true")
    p.add_argument("--sample-s", type=float, default=0.01)
    p.add_argument("--min-reps", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.3)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shapes = [(None, n) for n in args.sizes]
    if not args.no_batched:
        shapes += BATCHED
    records = []
    for dname in args.dtypes:
        dt = DTYPES[dname]
        for op in args.ops:
            for batch, n in shapes:
                if not applicable(op, batch):
                    continue
                xs = inputs(op, batch, n, dt)
                leaves = [x.clone().requires_grad_(True) for x in xs]
                key = str(n) if batch is None else f"{batch}x{n}x{n}"

                def fwd():
                    with torch.no_grad():
                        forward(op, xs)

                def fwdbwd():
                    torch.autograd.grad(forward(op, leaves).sum(), leaves)

                for mode, f in (("fwd", fwd), ("fwdbwd", fwdbwd)):
                    m = bench(f, args.sample_s, args.min_reps, args.min_time)
                    print(f"{dname:8} {op:8} {key:12} {mode:7} {m:.3e} s", flush=True)
                    records.append({"op": op, "dtype": dname, "shape": key, "mode": mode,
                                    "median": m})
    with open(args.out_json, "w") as fh:
        json.dump({"results": records}, fh, indent=1)


if __name__ == "__main__":
    main()
