#!/usr/bin/env python3
"""Times in PyTorch the workloads of crates/cotangent/benches/engine.rs.

- abc_sum/{f64,f32}/fwd_bwd: (a*b + c).sum() and its backward, a, b, c 2x2 leaves that
  require grad;
- chain/f64/fwd_bwd and chain/f64/fwd: a chain of CHAIN ops cycling through x*(-0.5),
  exp(x), x + k (k a constant 2x2 tensor) starting from a 2x2 leaf, then .sum(), with and
  without its backward.

Each workload runs `--inner` times per sample after a warm-up, for `--samples` samples;
the table shows the median time per iteration (and per op for the chains), for each
thread count in `--threads`. `--json FILE` also writes the medians (seconds).

Usage: /tmp/torch/bin/python scripts/bench_engine_torch.py [--threads 1 2] [--json out.json]
"""

import argparse
import json
import statistics
import time

import torch

CHAIN = 100


def leaf(v, dtype):
    return torch.tensor(v, dtype=dtype).reshape(2, 2).requires_grad_(True)


def make_workloads():
    out = {}
    for name, dtype in (("f64", torch.float64), ("f32", torch.float32)):
        a = leaf([1.0, 2.0, 3.0, 4.0], dtype)
        b = leaf([0.5, -1.0, 1.5, -2.0], dtype)
        c = leaf([0.1, 0.2, 0.3, 0.4], dtype)

        def abc_sum(a=a, b=b, c=c):
            # backward() returns every leaf's gradient in cotangent; here it accumulates
            # into .grad, which we reset so each iteration does the same work
            a.grad = b.grad = c.grad = None
            (a * b + c).sum().backward()
            return a.grad

        out[f"abc_sum/{name}/fwd_bwd"] = (abc_sum, 1)

    x = leaf([1.0, 2.0, 3.0, 4.0], torch.float64)
    k = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64).reshape(2, 2)

    def chain():
        h = x
        for i in range(CHAIN):
            r = i % 3
            if r == 0:
                h = h * -0.5
            elif r == 1:
                h = h.exp()
            else:
                h = h + k
        return h.sum()

    def chain_fwd_bwd():
        x.grad = None
        chain().backward()
        return x.grad

    out["chain/f64/fwd_bwd"] = (chain_fwd_bwd, CHAIN)
    out["chain/f64/fwd"] = (chain, CHAIN)
    return out


def check():
    # the same sanity check as the Rust bench: d/da Σ(a*b + c) = b
    a = leaf([1.0, 2.0, 3.0, 4.0], torch.float64)
    b = leaf([0.5, -1.0, 1.5, -2.0], torch.float64)
    c = leaf([0.1, 0.2, 0.3, 0.4], torch.float64)
    (a * b + c).sum().backward()
    assert torch.equal(a.grad, b.detach())


def time_one(fn, samples, inner, warmup_s):
    t_end = time.perf_counter() + warmup_s
    while time.perf_counter() < t_end:
        fn()
    per_iter = []
    for _ in range(samples):
        t0 = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        per_iter.append((time.perf_counter_ns() - t0) / inner / 1e9)
    return statistics.median(per_iter), min(per_iter)


def fmt(s):
    return f"{s * 1e6:9.3f} us"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--samples", type=int, default=31)
    p.add_argument("--target-sample-s", type=float, default=0.05,
                   help="approximate duration of one sample (sets the inner loop count)")
    p.add_argument("--warmup-s", type=float, default=0.5)
    p.add_argument("--json", help="write the medians (seconds per iteration) here")
    args = p.parse_args()

    torch.set_grad_enabled(True)
    workloads = make_workloads()
    check()
    results = {}
    print(f"torch {torch.__version__}, medians of {args.samples} samples after warm-up")
    print(f"{'threads':>7}  {'workload':<22} {'median/iter':>12} {'min/iter':>12} "
          f"{'median/op':>12}")
    for nt in args.threads:
        torch.set_num_threads(nt)
        for name, (fn, nops) in workloads.items():
            # size the inner loop so one sample takes about target_sample_s
            t0 = time.perf_counter()
            fn()
            once = max(time.perf_counter() - t0, 1e-7)
            inner = max(1, int(args.target_sample_s / once))
            med, best = time_one(fn, args.samples, inner, args.warmup_s)
            results[f"{name}@{nt}"] = {"median_s": med, "min_s": best, "ops": nops,
                                       "threads": nt}
            print(f"{nt:>7}  {name:<22} {fmt(med)} {fmt(best)} {fmt(med / nops)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
