#!/usr/bin/env python3
"""LAPACK's test ratios on the accuracy suite's matrices: the reference that
crates/cotangent/tests/accuracy.rs compares ours against (no more than ten times
LAPACK's ratio on the same matrix).

    cargo test --release -p cotangent --test accuracy dump_cases -- --ignored
    python3 scripts/lapack_accuracy.py            # writes tests/fixtures/lapack_accuracy.json
    python3 scripts/lapack_accuracy.py --only nonsymmetric   # only these case sets
    python3 scripts/lapack_accuracy.py --table    # after the suite ran: docs/accuracy.md's table

(`COTANGENT_ACCURACY=full` on both cargo commands for the full sweep.)

The matrices come from the Rust suite (target/accuracy/cases.{json,bin}); the ratios
are the ones tests/accuracy.rs computes, on LAPACK's factors from scipy.linalg.lapack in
the matrix's own precision (s* routines for f32: numpy would compute f32 input in f64),
with the drivers PyTorch calls on the CPU: gesdd (svd, svdvals, pinv), geqrf + orgqr
(qr), syevd (eigh, eigvalsh), geev (eig, eigvals), potrf (cholesky), getrf/getrs/getri (lu, solve, inv,
det, slogdet), gelsd (lstsq); matrix_exp against scipy.linalg.expm.
"""
import json
import math
import os
import sys

import numpy as np
import scipy
import scipy.linalg
from scipy.linalg import lapack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "target", "accuracy")
OUT = os.path.join(ROOT, "crates", "cotangent", "tests", "fixtures", "lapack_accuracy.json")
DOC = os.path.join(ROOT, "docs", "accuracy.md")
TINY = np.finfo(np.float64).tiny


def eps(dtype):
    return float(np.finfo(np.float32).eps) if dtype == "F32" else float(np.finfo(np.float64).eps)


def pow2_near(x):
    if x == 0.0 or not math.isfinite(x):
        return 1.0
    return 2.0 ** math.floor(math.log2(x))


def norm1(x):
    if x.size == 0:
        return 0.0
    return float(np.abs(x).sum(axis=0).max())


def amax(x):
    return float(np.abs(x).max()) if x.size else 0.0


def backward_ratio(a, b_over_unit, unit, order, e):
    an = a / unit
    r = norm1(an - b_over_unit)
    norm = norm1(an)
    order = max(order, 1)
    if math.isnan(r):
        return math.inf
    if norm == 0.0:
        return 0.0 if r == 0.0 else r / (order * e)
    return r / norm / (order * e)


def orthogonality(x, e):
    g = x.T @ x
    return norm1(g - np.eye(x.shape[1])) / (max(x.shape[0], 1) * e)


def value_ratio(x, y, scale, order, e):
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape:
        return math.inf
    if x.size == 0:
        return 0.0
    d = np.abs(x - y)
    if np.isnan(d).any():
        return math.inf
    worst = float(d.max())
    if worst == 0.0:
        return 0.0
    return worst / (scale * max(order, 1) * e)


def f(name, dtype):
    """The LAPACK routine `name` (without its prefix) of the dtype's precision."""
    return getattr(lapack, ("s" if dtype == "F32" else "d") + name)


def npdt(dtype):
    return np.float32 if dtype == "F32" else np.float64


def svd_parts(a, dtype):
    m, n = a.shape
    k = min(m, n)
    if k == 0:
        return np.zeros((m, 0)), np.zeros(0), np.zeros((0, n))
    u, s, vt, info = f("gesdd", dtype)(a.astype(npdt(dtype)), compute_uv=1, full_matrices=0)
    if info != 0:
        raise RuntimeError(f"gesdd info {info}")
    return u.astype(float), s.astype(float), vt.astype(float)


def svd_ratios(a, values, dtype):
    e = eps(dtype)
    m, n = a.shape
    k = min(m, n)
    u, s, vt = svd_parts(a, dtype)
    _, vals, _, info = f("gesdd", dtype)(a.astype(npdt(dtype)), compute_uv=0)
    vals = vals.astype(float)[:k]
    unit = pow2_near(amax(a))
    back = (u * (s / unit)) @ vt
    smax = s[0] if k else 0.0
    srt = bool(np.all(s[:-1] >= s[1:]) and np.all(s >= 0))
    r = [
        backward_ratio(a, back, unit, max(m, n), e),
        orthogonality(u, e),
        orthogonality(vt.T, e),
        0.0 if srt else math.inf,
        value_ratio(vals, s, max(smax, TINY), k, e),
    ]
    if values is not None:
        top = values[0] * (amax(a) / max(amax(a), TINY))
        r.append(value_ratio(s, values, top, max(m, n), e))
    return r


def qr_ratios(a, values, dtype):
    e = eps(dtype)
    m, n = a.shape
    k = min(m, n)
    qr, tau, _, info = f("geqrf", dtype)(a.astype(npdt(dtype)))
    q, _, info = f("orgqr", dtype)(qr[:, :k], tau)
    q = q.astype(float)
    r = np.triu(qr[:k, :]).astype(float)
    unit = pow2_near(amax(a))
    return [backward_ratio(a, q @ (r / unit), unit, m, e), orthogonality(q, e)]


def eigh_ratios(a, values, dtype):
    e = eps(dtype)
    n = a.shape[0]
    w, v, info = f("syevd", dtype)(a.astype(npdt(dtype)), compute_v=1, lower=1)
    if info != 0:
        raise RuntimeError(f"syevd info {info}")
    wv, _, info = f("syevd", dtype)(a.astype(npdt(dtype)), compute_v=0, lower=1)
    w, v, wv = w.astype(float), v.astype(float), wv.astype(float)
    unit = pow2_near(amax(a))
    back = (v * (w / unit)) @ v.T
    top = float(np.abs(w).max()) if n else 0.0
    r = [
        backward_ratio(a, back, unit, n, e),
        orthogonality(v, e),
        0.0 if bool(np.all(w[:-1] <= w[1:])) else math.inf,
        value_ratio(wv, w, max(top, TINY), n, e),
    ]
    if values is not None:
        wtop = float(np.abs(values).max())
        r.append(value_ratio(w, values, wtop, n, e))
    return r


def complexified(a, dtype):
    """tests/accuracy.rs's complexified: D A D^H with D = diag(exp(0.7 i k)), rounded."""
    n = a.shape[0]
    t = 0.7 * (np.arange(n)[:, None] - np.arange(n)[None, :])
    c = a * np.cos(t) + 1j * (a * np.sin(t))
    return c.astype(np.complex64) if dtype == "F32" else c


def eig_complex_ratios(a, values, dtype):
    """eig_ratios of the complexified matrix, by zgeev/cgeev."""
    x = complexified(a, dtype)
    geev = getattr(lapack, ("c" if dtype == "F32" else "z") + "geev")
    w, _, v, info = geev(x, compute_vl=0, compute_vr=1)
    if info != 0:
        raise RuntimeError(f"geev info {info}")
    w2, _, _, info = geev(x, compute_vl=0, compute_vr=0)
    if info != 0:
        raise RuntimeError(f"geev info {info}")
    return eig_parts_ratios(x.astype(complex), w.astype(complex), v.astype(complex),
                            w2.astype(complex), dtype)


def eig_ratios(a, values, dtype):
    """ddrvev's ratios, as tests/accuracy.rs's eig_ratios: |A V - V W|_1 / (|A|_1 n eps),
    ||v_j| - 1| / eps, each eigenvector's largest component real, eigvals against W."""
    n = a.shape[0]
    x = a.astype(npdt(dtype))
    wr, wi, _, vr, info = f("geev", dtype)(x, compute_vl=0, compute_vr=1)
    if info != 0:
        raise RuntimeError(f"geev info {info}")
    wr2, wi2, _, _, info = f("geev", dtype)(x, compute_vl=0, compute_vr=0)
    if info != 0:
        raise RuntimeError(f"geev info {info}")
    wr, wi, vr = wr.astype(float), wi.astype(float), vr.astype(float)
    w = wr + 1j * wi
    w2 = wr2.astype(float) + 1j * wi2.astype(float)
    v = vr.astype(complex)
    k = 0
    while k < n:
        if wi[k] != 0.0 and k + 1 < n:
            v[:, k] = vr[:, k] + 1j * vr[:, k + 1]
            v[:, k + 1] = vr[:, k] - 1j * vr[:, k + 1]
            k += 2
        else:
            k += 1
    return eig_parts_ratios(x.astype(float), w, v, w2, dtype)


def eig_parts_ratios(a, w, v, w2, dtype):
    """The ratios of eig_ratios from the eigenpairs of a (real or complex)."""
    e = eps(dtype)
    n = a.shape[0]
    unit = pow2_near(amax(a))
    an = a / unit
    r = an @ v - v * (w / unit)
    res = float(np.abs(r).sum(axis=0).max()) if n else 0.0
    anorm = norm1(an)
    if not math.isfinite(res):
        back = math.inf
    elif anorm == 0.0:
        back = res / (max(n, 1) * e)
    else:
        back = res / anorm / (max(n, 1) * e)
    unitnorm = float(np.abs(np.linalg.norm(v, axis=0) - 1.0).max()) / e if n else 0.0
    gauge = 0.0
    for k in range(n):
        mod = np.abs(v[:, k])
        near = mod >= mod.max() * (1.0 - 4.0 * n * e)
        if not np.any(near & (v[:, k].imag == 0.0)):
            gauge = math.inf
    top = float(np.abs(w).max()) if n else 0.0
    dv = np.abs(w2 - w)
    return [back, unitnorm, gauge, value_ratio(dv, np.zeros(n), max(top, TINY), n, e)]


def cholesky_ratios(a, values, dtype):
    e = eps(dtype)
    c, info = f("potrf", dtype)(a.astype(npdt(dtype)), lower=1, clean=1)
    if info != 0:
        raise RuntimeError(f"potrf info {info}")
    unit = pow2_near(amax(a))
    ls = c.astype(float) / math.sqrt(unit)
    return [backward_ratio(a, ls @ ls.T, unit, a.shape[0], e)]


def lu_parts(a, dtype):
    m, n = a.shape
    k = min(m, n)
    lu, piv, info = f("getrf", dtype)(a.astype(npdt(dtype)))
    lu = lu.astype(float)
    perm = np.arange(m)
    for j, p in enumerate(piv[:k]):
        perm[[j, p]] = perm[[p, j]]
    pm = np.zeros((m, m))
    pm[perm, np.arange(m)] = 1.0
    l = np.tril(lu[:, :k], -1) + np.eye(m, k)
    u = np.triu(lu[:k, :])
    return pm, l, u, piv, info


def lu_ratios(a, values, dtype):
    e = eps(dtype)
    m, n = a.shape
    pm, l, u, _, _ = lu_parts(a, dtype)
    unit = pow2_near(amax(a))
    return [backward_ratio(a, pm @ (l @ (u / unit)), unit, max(m, n), e)]


def normals(seed, count):
    """The Rust suite's splitmix64 + Box-Muller stream (hard::Rng)."""
    state = seed
    mask = (1 << 64) - 1
    out = []

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    for _ in range(count):
        u = ((nxt() >> 11) + 0.5) * (1.0 / (1 << 53))
        v = ((nxt() >> 11) + 0.5) * (1.0 / (1 << 53))
        out.append(math.sqrt(-2.0 * math.log(u)) * math.cos(2.0 * math.pi * v))
    return np.array(out)


def rounded(x, dtype):
    return x.astype(np.float32).astype(float) if dtype == "F32" else x


def solvers_ratios(a, values, dtype):
    m, n = a.shape
    if m != n:
        return []
    e = eps(dtype)
    r = []
    b = rounded(normals(n, 2 * n).reshape(n, 2), dtype)
    _, _, u, piv, info = lu_parts(a, dtype)
    small = float(np.abs(np.diag(u)).min()) if n else math.inf
    near_singular = small <= amax(a) * n * e
    lu, piv, info = f("getrf", dtype)(a.astype(npdt(dtype)))
    if info == 0:
        x, info2 = f("getrs", dtype)(lu, piv, b.astype(npdt(dtype)))
        x = x.astype(float)
        if not (near_singular and not np.isfinite(x).all()):
            ua, ux = pow2_near(amax(a)), pow2_near(amax(x))
            ax = (a / ua) @ (x / ux)
            res = norm1(b / (ua * ux) - ax)
            den = norm1(a / ua) * norm1(x / ux) * n * e
            r.append(0.0 if den == 0.0 else res / den)
        inv, info3 = f("getri", dtype)(lu, piv)
        inv = inv.astype(float)
        if not (near_singular and not np.isfinite(inv).all()):
            ua, ux = pow2_near(amax(a)), pow2_near(amax(inv))
            xa = (inv / ux) @ (a / ua)
            res = norm1(np.eye(n) / (ua * ux) - xa)
            den = norm1(a / ua) * norm1(inv / ux) * n * e
            r.append(0.0 if den == 0.0 else res / den)
    d = np.diag(lu).astype(float)
    swaps = int(np.sum(piv[:n] != np.arange(n)))
    if values is not None and np.all(d != 0):
        logabs = float(np.sum(np.log(np.abs(d))))
        want = float(np.sum(np.log(values)))
        kappa = values[0] / values[-1]
        if kappa * n * e < 0.5:
            r.append(abs(logabs - want) / (kappa * n * e))
    return r


def pinv_lstsq_ratios(a, values, dtype):
    m, n = a.shape
    order = max(m, n)
    e = eps(dtype)
    u, s, vt = svd_parts(a, dtype)
    cut = e * order * (s[0] if s.size else 0.0)
    keep = s > cut
    dt = npdt(dtype)
    x = ((vt[keep].T.astype(dt) / s[keep].astype(dt)) @ u[:, keep].T.astype(dt)).astype(float)
    if x.size == 0:
        x = np.zeros((n, m))
    ua, ux = pow2_near(amax(a)), pow2_near(amax(x))
    a1, x1 = a / ua, x / ux
    kappa = max(norm1(a1) * ua * norm1(x1) * ux, 1.0)
    ek = e * kappa
    r = [
        backward_ratio(a, (a1 @ x1 @ a1) * (ua * ux), ua, order, ek),
        backward_ratio(x, (x1 @ a1 @ x1) * (ua * ux), ux, order, ek),
    ]
    b = rounded(normals(order, 2 * m).reshape(m, 2), dtype)
    sol, _, _, _ = scipy.linalg.lstsq(
        a.astype(dt), b.astype(dt), cond=e * order, lapack_driver="gelsd", check_finite=False
    )
    sol = sol.astype(float)
    us = pow2_near(amax(sol))
    res = b - (a1 @ (sol / us)) * (ua * us)
    ur = pow2_near(amax(res))
    atr = norm1(a1.T @ (res / ur))
    den = norm1(a1) * norm1(b / ur) * order * ek
    r.append(0.0 if den == 0.0 else atr / den)
    return r


def exp_ratios(a, want, dtype):
    """The matrix exponential (scipy.linalg.expm, Al-Mohy and Higham's scaling and
    squaring, in the matrix's own precision) against the exact exp(A) the suite built."""
    e = eps(dtype)
    n = a.shape[0]
    got = scipy.linalg.expm(a.astype(npdt(dtype))).astype(float)
    unit = pow2_near(amax(want))
    err = norm1(got / unit - want / unit)
    den = norm1(want / unit) * max(norm1(a), 1.0) * n * e
    return [0.0 if err == 0.0 else err / den]


OPS = {
    "general": [("svd", svd_ratios), ("qr", qr_ratios), ("lu", lu_ratios),
                ("solvers", solvers_ratios), ("pinv-lstsq", pinv_lstsq_ratios)],
    "batch": [("svd-batched", svd_ratios), ("qr-batched", qr_ratios), ("lu-batched", lu_ratios)],
    "symmetric-batch": [("eigh-batched", eigh_ratios)],
    "spd-batch": [("cholesky-batched", cholesky_ratios)],
    "symmetric": [("eigh", eigh_ratios)],
    "nonsymmetric": [("eig", eig_ratios), ("eig-complex", eig_complex_ratios)],
    "nonsymmetric-batch": [("eig-batched", eig_ratios)],
    "spd": [("cholesky", cholesky_ratios)],
    "invertible-batch": [("solvers-batched", solvers_ratios)],
    "exp": [("matrix_exp", exp_ratios)],
    "exp-batch": [("matrix_exp-batched", exp_ratios)],
}


def reference(only=None):
    index = json.load(open(os.path.join(CASES, "cases.json")))
    if only:
        index = [c for c in index if c["set"] in only]
    data = np.fromfile(os.path.join(CASES, "cases.bin"), dtype="<f8")
    out = {}
    for c in index:
        m, n = c["m"], c["n"]
        a = data[c["offset"]:c["offset"] + m * n].reshape(m, n)
        values = np.array(c["values"]) if c["values"] is not None else None
        if c.get("reference") is not None:
            # (the exact result the suite built, in place of prescribed values)
            values = data[c["reference"]:c["reference"] + m * n].reshape(m, n)
        for op, fn in OPS[c["set"]]:
            key = f"{op}|{c['key']}"
            try:
                with np.errstate(all="ignore"):
                    r = fn(a, values, c["dtype"])
                worst = max(r) if r else 0.0
                out[key] = worst if math.isfinite(worst) else None
            except (RuntimeError, np.linalg.LinAlgError, ValueError):
                out[key] = None
    if os.path.exists(OUT):
        old = json.load(open(OUT))["ratios"]
        old.update(out)
        out = old
    doc = {
        "made_by": "scripts/lapack_accuracy.py",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
        "lapack": "scipy.linalg.lapack (OpenBLAS's LAPACK in scipy's wheel)",
        "ratios": {k: (round(v, 4) if v is not None else None) for k, v in sorted(out.items())},
    }
    with open(OUT, "w") as fh:
        json.dump(doc, fh, indent=0, separators=(",", ":"))
        fh.write("\n")
    print(f"{len(out)} reference ratios -> {OUT}")


def family(name):
    if name.startswith("sym-mode"):
        return "sym-" + name.split("-")[2]
    for prefix in ["rank-half-scaled", "scaled", "mode"]:
        if name.startswith(prefix):
            if prefix == "mode":
                return name.split("-")[0] + "-" + name.split("-")[1]
            return prefix
    return name


def table():
    """docs/accuracy.md's table: per op, dtype and family, the worst ratio of ours (from
    the suite's last run, target/accuracy/*.json) and LAPACK's on the same matrices."""
    ref = json.load(open(OUT))["ratios"]
    rows = {}
    for fn in sorted(os.listdir(CASES)):
        if not fn.endswith(".json") or fn == "cases.json":
            continue
        for key, v in json.load(open(os.path.join(CASES, fn))).items():
            op, dtype, shape, name = key.split("|")
            fam = family(name)
            ours = v if isinstance(v, (int, float)) else math.inf
            lap = ref.get(key)
            row = rows.setdefault((op, dtype, fam), [0.0, 0.0, 0, 0.0])
            row[0] = max(row[0], ours)
            if lap is not None:
                row[1] = max(row[1], lap)
                row[3] = max(row[3], ours / max(lap, 0.1))
            row[2] += 1
    summary = {}
    for (op, dtype, fam), (o, l, cnt, q) in rows.items():
        srow = summary.setdefault((op, dtype), [0.0, "", 0.0, 0, 0.0, ""])
        if o > srow[0]:
            srow[0], srow[1] = o, fam
        srow[2] = max(srow[2], l)
        srow[3] += cnt
        if q > srow[4]:
            srow[4], srow[5] = q, fam
    lines = ["| op | dtype | cases | worst ours (family) | worst LAPACK | worst ours / max(LAPACK, 0.1) (family) |",
             "|---|---|---|---|---|---|"]
    for (op, dtype), (o, fo, l, cnt, q, fq) in sorted(summary.items()):
        lines.append(f"| {op} | {dtype} | {cnt} | {o:.3g} ({fo}) | {l:.3g} | {q:.3g} ({fq}) |")
    lines += ["", "| op | dtype | family | cases | worst ours | worst LAPACK | worst ours / max(LAPACK, 0.1) |",
              "|---|---|---|---|---|---|---|"]
    for (op, dtype, fam), (o, l, cnt, q) in sorted(rows.items()):
        lines.append(f"| {op} | {dtype} | {fam} | {cnt} | {o:.3g} | {l:.3g} | {q:.3g} |")
    print("\n".join(lines))


if __name__ == "__main__":
    if "--table" in sys.argv:
        table()
    elif "--only" in sys.argv:
        reference(set(sys.argv[sys.argv.index("--only") + 1:]))
    else:
        reference()
