#!/usr/bin/env python3
"""Times PyTorch on the Gaussian-process example's likelihood (issue 48's Hessian target):
one gradient (`torch.func.grad`) and the Hessian (`torch.func.hessian`, forward-over-
reverse) of the negative log marginal likelihood in the eleven log-hyperparameters, at
scikit-learn's starting values, on `points` evenly spaced observations of the example's
data (the same kernel and the same Cholesky formulation as examples/gaussian_process/gp.rs).

    python3 scripts/bench_gp_hessian_torch.py [points] [--threads 2]
"""

import argparse
import math
import os
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CSV = os.path.join(HERE, "..", "crates", "cotangent", "examples", "data", "mauna_loa_co2_weekly.csv")
START = [66.0**2, 67.0, 2.4**2, 90.0, 1.3, 0.66**2, 0.78, 1.2, 0.18**2, 0.134, 0.19**2]


def load(points):
    x, ppmv = [], []
    for line in open(CSV).read().splitlines()[1:]:
        date, co2 = line.strip().split(",")
        if not co2:
            continue
        x.append(int(date[:4]) + (int(date[4:6]) - 1) / 12 + (int(date[6:]) - 1) / 365.25)
        ppmv.append(float(co2))
    if points and 2 <= points < len(x):
        idx = np.round(np.linspace(0, len(x) - 1, points)).astype(int)
        x, ppmv = list(np.array(x)[idx]), list(np.array(ppmv)[idx])
    x = torch.tensor(x, dtype=torch.float64)
    y = torch.tensor(ppmv, dtype=torch.float64)
    return x, y - y.mean()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("points", nargs="?", type=int, default=None)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    x, y = load(a.points)
    n = x.shape[0]
    d = x[:, None] - x[None, :]
    half_d2, periodic = -0.5 * d * d, -2.0 * torch.sin(math.pi * d) ** 2
    eye = torch.eye(n, dtype=torch.float64)

    def nlml(theta):
        h = theta.exp()
        rbf = lambda l: (half_d2 / l**2).exp()  # noqa: E731
        k = (rbf(h[1]) * h[0]
             + (half_d2 / h[3] ** 2 + periodic / h[4] ** 2).exp() * h[2]
             + (half_d2 / (-(h[6] * h[7] ** 2))).log1p().mul(-h[6]).exp() * h[5]
             + rbf(h[9]) * h[8]
             + eye * h[10])
        chol = torch.linalg.cholesky(k)
        z = torch.linalg.solve_triangular(chol, y[:, None], upper=False)
        return 0.5 * (z**2).sum() + chol.diagonal().log().sum() + 0.5 * n * math.log(2 * math.pi)

    theta = torch.tensor(START, dtype=torch.float64).log()
    grad = torch.func.grad(nlml)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        grad(theta)
        times.append(time.perf_counter() - t0)
    tg = min(times)
    t0 = time.perf_counter()
    torch.func.hessian(nlml)(theta)
    th = time.perf_counter() - t0
    print(f"points {n}: gradient {tg:.3f} s, hessian {th:.3f} s ({th / tg:.1f} gradients)")


if __name__ == "__main__":
    main()
