"""The independent reference for examples/gaussian_process.rs: the same Gaussian process
fitted with scikit-learn's GaussianProcessRegressor on the same data, conventions and
starting point. Not needed by the tests; its output is quoted in the README.

    /tmp/torch/bin/pip install scikit-learn
    /tmp/torch/bin/python scripts/gp_sklearn.py [--points N] [--eval THETA_CSV]

Conventions (as the example): x = year + (month - 1)/12 + (day - 1)/365.25, y = ppmv minus
its mean, no jitter (alpha = 0) beyond the white-noise term, kernel
C*RBF + C*RBF*ExpSineSquared(periodicity=1, fixed) + C*RationalQuadratic + C*RBF +
WhiteKernel, theta = natural logs in kernel.theta order. Prints one JSON line: theta,
log marginal likelihood and its gradient at the start and at the optimum, seconds.
"""

import argparse
import csv
import json
import os
import time

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C, ExpSineSquared, RationalQuadratic, WhiteKernel

START = [66.0**2, 67.0, 2.4**2, 90.0, 1.3, 0.66**2, 0.78, 1.2, 0.18**2, 0.134, 0.19**2]


def load(points=None):
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "cotangent", "examples", "data", "mauna_loa_co2_weekly.csv")
    xs, ys = [], []
    with open(path) as fh:
        for row in csv.DictReader(fh):
            if not row["co2"]:
                continue
            d = row["date"]
            year, month, day = int(d[:4]), int(d[4:6]), int(d[6:8])
            xs.append(year + (month - 1) / 12 + (day - 1) / 365.25)
            ys.append(float(row["co2"]))
    x, y = np.array(xs), np.array(ys)
    if points is not None and points < len(x):
        idx = np.round(np.linspace(0, len(x) - 1, points)).astype(int)
        x, y = x[idx], y[idx]
    return x[:, None], y - y.mean()


def kernel(v):
    s1, l1, s2, l2, lp, s3, a, l3, s4, l4, noise = v
    return (
        C(s1) * RBF(l1)
        + C(s2) * RBF(l2) * ExpSineSquared(length_scale=lp, periodicity=1.0, periodicity_bounds="fixed")
        + C(s3) * RationalQuadratic(alpha=a, length_scale=l3)
        + C(s4) * RBF(l4)
        + WhiteKernel(noise)
    )


def write_fixture():
    here = os.path.dirname(__file__)
    with open(os.path.join(here, "gp_sklearn_full_result.json")) as fh:
        optimum = json.load(fh)["theta"]
    lines = []
    for points in (150, 300):
        x, y = load(points)
        gp = GaussianProcessRegressor(kernel=kernel(START), alpha=0.0, normalize_y=False, optimizer=None).fit(x, y)
        for at, th in (("start", gp.kernel.theta), ("scikit-learn optimum (all points)", np.array(optimum))):
            lml, grad = gp.log_marginal_likelihood(th, eval_gradient=True)
            lines.append({"points": points, "theta": th.tolist(), "lml": lml, "grad": grad.tolist(), "at": at})
    path = os.path.join(here, "..", "crates", "cotangent", "tests", "fixtures", "gp_sklearn.json")
    with open(path, "w") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int)
    ap.add_argument("--eval", help="comma-separated theta (logs) to evaluate only")
    ap.add_argument("--fixture", action="store_true", help="write crates/cotangent/tests/fixtures/gp_sklearn.json: "
                    "the log marginal likelihood and gradient on 150 and 300 points at the start and at the optimum "
                    "recorded in scripts/gp_sklearn_full_result.json (the output of a full run)")
    args = ap.parse_args()
    if args.fixture:
        write_fixture()
        return
    x, y = load(args.points)
    k = kernel(START)
    gp = GaussianProcessRegressor(kernel=k, alpha=0.0, normalize_y=False, optimizer=None)
    gp.fit(x, y)
    theta0 = k.theta
    lml0, grad0 = gp.log_marginal_likelihood(theta0, eval_gradient=True)
    out = {"points": len(x), "theta_start": theta0.tolist(), "lml_start": lml0, "grad_start": grad0.tolist()}
    if args.eval:
        th = np.array([float(v) for v in args.eval.split(",")])
        lml, grad = gp.log_marginal_likelihood(th, eval_gradient=True)
        out.update({"theta": th.tolist(), "lml": lml, "grad": grad.tolist()})
        print(json.dumps(out))
        return
    t0 = time.time()
    gp = GaussianProcessRegressor(kernel=k, alpha=0.0, normalize_y=False, n_restarts_optimizer=0)
    gp.fit(x, y)
    secs = time.time() - t0
    th = gp.kernel_.theta
    lml, grad = gp.log_marginal_likelihood(th, eval_gradient=True)
    out.update({"theta": th.tolist(), "lml": lml, "grad": grad.tolist(), "seconds": secs, "kernel": str(gp.kernel_)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
