//! The accuracy suite: LAPACK's test ratios of every decomposition on hard matrices
//! (prescribed spectra, rank-deficient, graded, scaled near underflow and overflow, the
//! named matrices), in f64 and f32, one matrix at a time and in batches; a ratio of 30 or
//! more fails, as in LAPACK's testing. The matrices and the ratios are in
//! `hard/mod.rs`; docs/accuracy.md holds the table and the full sweep's command
//! (`COTANGENT_ACCURACY=full`), which takes every order that crosses a kernel's threshold.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    // (the per-matrix ratio functions share `batched`'s fn-pointer signature, which takes
    // a Result for the ops that can fail)
    clippy::unnecessary_wraps,
    missing_docs
)]

mod hard;

use cotangent::autograd::{gradcheck, gradgradcheck, GradcheckOptions};
use cotangent::linalg::{
    cholesky, det, eig, eigh, eigvals, eigvalsh, inv, lstsq, lu, matrix_exp, pinv, qr, slogdet,
    solve, svd, svdvals, LstsqDriver, PinvOptions, QrMode, Side, Uplo,
};
use cotangent::{DType, Tensor};
use hard::{
    backward_ratio, eps, exp_cases, general_cases, nonsymmetric_cases, orthogonality, pow2_near,
    spd_cases, symmetric_cases, value_ratio, Case, Mat, THRESH,
};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Whether the full sweep was asked (`COTANGENT_ACCURACY=full`).
fn full() -> bool {
    std::env::var("COTANGENT_ACCURACY").is_ok_and(|v| v == "full")
}

/// The shapes of the general tests: every order to 20 and across the kernels' thresholds
/// (Jacobi 8 / 16, the SVD's own stages 64, the QR's 16 / 48² / 128), tall and wide; the
/// full sweep takes every order to 70 and 127-129, 255-257, 383-385, 511-513.
fn shapes() -> Vec<(usize, usize)> {
    let orders: Vec<usize> = if full() {
        (1..=70).chain(127..=129).chain(255..=257).chain(383..=385).chain(511..=513).collect()
    } else {
        (1..=20).chain([24, 31, 32, 33, 40, 47, 48, 49, 55, 63, 64, 65, 127, 128, 129]).collect()
    };
    let mut s: Vec<(usize, usize)> = orders.iter().map(|&n| (n, n)).collect();
    let rect: &[(usize, usize)] = &[
        (33, 17),
        (17, 33),
        (512, 16),
        (16, 512),
        (70, 300),
        (300, 70),
        (130, 64),
        (9, 5),
        (40, 20),
        (20, 40),
        (100, 60),
    ];
    s.extend_from_slice(rect);
    s
}

/// One case's ratios (each named), or the error the op returned.
type Ratios = Result<Vec<(&'static str, f64)>, String>;

/// One case of one op: its key (`dtype|mxn|family`, as the LAPACK reference data names
/// it) and its ratios.
struct Outcome {
    key: String,
    ratios: Ratios,
}

/// The worst ratio of LAPACK on each case, by `op|dtype|mxn|family`
/// (`tests/fixtures/lapack_accuracy.json`, made by `scripts/lapack_accuracy.py`).
fn lapack() -> &'static HashMap<String, f64> {
    static DATA: OnceLock<HashMap<String, f64>> = OnceLock::new();
    DATA.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lapack_accuracy.json");
        let text = std::fs::read_to_string(path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["ratios"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, x)| (k.clone(), x.as_f64().unwrap_or(f64::INFINITY)))
            .collect()
    })
}

/// A worst ratio below this passes whatever LAPACK's on the same matrix (a third of
/// LAPACK's own pass mark): LAPACK's ratio can be far below one where its rounding happens
/// to cancel exactly (the all-ones matrix's trailing columns become exact zeros in its QR,
/// rounding noise of the order of eps in ours: orthogonality ratios 0.15-0.4 against 2-5),
/// and a factor of ten on such a ratio says nothing of the algorithm.
const FLOOR: f64 = 10.0;

/// Whether a ratio fails LAPACK's test (a NaN fails).
fn fails(x: f64) -> bool {
    x.is_nan() || x >= THRESH
}

/// Asserts that every case of `test` (`op-dtype`) passes: no error, every ratio below 30,
/// and the worst within ten times LAPACK's on the same matrix, or below [`FLOOR`].
/// Writes the worst ratios to `target/accuracy/<test>.json` (for docs/accuracy.md's
/// table).
fn report(test: &str, outcomes: Vec<Outcome>) {
    let op = test.rsplit_once('-').map_or(test, |x| x.0);
    let reference = lapack();
    let mut fails_out = Vec::new();
    let mut ours = serde_json::Map::new();
    let mut compared = 0;
    for o in outcomes {
        let key = format!("{op}|{}", o.key);
        match o.ratios {
            Err(e) => {
                fails_out.push(format!("{key}: error {e}"));
                ours.insert(key, serde_json::Value::String(format!("error: {e}")));
            }
            Ok(r) => {
                let worst = r.iter().map(|x| x.1).fold(0.0f64, |m, x| {
                    if x.is_nan() {
                        f64::NAN
                    } else {
                        m.max(x)
                    }
                });
                for (name, x) in &r {
                    if fails(*x) {
                        fails_out.push(format!("{key}: {name} ratio {x:.3e}"));
                    }
                }
                if let Some(&l) = reference.get(&key) {
                    compared += 1;
                    if worst > (10.0 * l).max(FLOOR) {
                        fails_out.push(format!("{key}: worst ratio {worst:.3e}, LAPACK's {l:.3e}"));
                    }
                }
                ours.insert(
                    key,
                    serde_json::json!(if worst.is_finite() { worst } else { f64::MAX }),
                );
            }
        }
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/accuracy");
    if std::fs::create_dir_all(dir).is_ok() {
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(ours)).unwrap();
        let _ = std::fs::write(format!("{dir}/{test}.json"), text);
    }
    assert!(fails_out.is_empty(), "{} failing ratios:\n{}", fails_out.len(), fails_out.join("\n"));
    assert!(compared > 0 || full(), "{op}: no case has LAPACK's reference ratio");
}

/// The worst of LAPACK's SVD ratios (`dbdt01`/`dort01`-style) of `svd` and `svdvals` on one
/// matrix, given its factors: the backward error, the orthogonality of `U` and `V`, the
/// order and signs of `S`, `S` against the prescribed values, and `svdvals` against `S`.
fn svd_ratios(
    c: &Case,
    u: &Mat,
    s: &[f64],
    vh: &Mat,
    vals: &[f64],
    e: f64,
) -> Vec<(&'static str, f64)> {
    let (m, n) = (c.a.m, c.a.n);
    let k = m.min(n);
    let order = m.max(n);
    let unit = pow2_near(c.a.amax());
    let mut us = u.clone();
    for i in 0..m {
        for j in 0..k {
            us.set(i, j, u.at(i, j) * (s[j] / unit));
        }
    }
    let back = us.matmul(vh);
    let smax = s.first().copied().unwrap_or(0.0);
    let sorted = s.windows(2).all(|w| w[0] >= w[1]) && s.iter().all(|&x| x >= 0.0);
    let mut r = vec![
        ("A - U S Vh", backward_ratio(&c.a, &back, unit, order, e)),
        ("I - U'U", orthogonality(u, e)),
        ("I - V'V", orthogonality(&vh.t(), e)),
        ("S sorted, >= 0", if sorted { 0.0 } else { f64::INFINITY }),
        ("svdvals - S", value_ratio(vals, s, smax.max(f64::MIN_POSITIVE), k, e)),
    ];
    if let Some(want) = &c.values {
        let top = want[0] * (c.a.amax() / c.a.amax().max(f64::MIN_POSITIVE));
        r.push(("S - prescribed", value_ratio(s, want, top, order, e)));
    }
    r
}

/// Runs `check` on every general case of every shape in `dtype`, one matrix at a time.
fn sweep(
    dtype: DType,
    shapes: &[(usize, usize)],
    check: impl Fn(&Case, DType) -> Ratios,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for &(m, n) in shapes {
        for c in general_cases(m, n, dtype, 1) {
            out.push(Outcome {
                key: format!("{dtype:?}|{m}x{n}|{}", c.name),
                ratios: check(&c, dtype),
            });
        }
    }
    out
}

fn svd_check(c: &Case, dtype: DType) -> Ratios {
    let t = c.a.tensor(dtype);
    let f = svd(&t, false).map_err(|e| e.to_string())?;
    let vals = svdvals(&t).map_err(|e| e.to_string())?.to_vec_f64();
    let u = &Mat::of_tensor(&f.u)[0];
    let vh = &Mat::of_tensor(&f.vh)[0];
    Ok(svd_ratios(c, u, &f.s.to_vec_f64(), vh, &vals, eps(dtype)))
}

#[test]
fn svd_f64() {
    report("svd-f64", sweep(DType::F64, &shapes(), svd_check));
}

#[test]
fn svd_f32() {
    report("svd-f32", sweep(DType::F32, &shapes(), svd_check));
}

fn svd_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let f = svd(t, false).map_err(|e| e.to_string())?;
    let vals = svdvals(t).map_err(|e| e.to_string())?;
    Ok(vec![f.u, f.s, f.vh, vals])
}

/// [`svd_ratios`] of matrix `i` of the outputs `[U, S, Vh, svdvals]` of a square batch.
fn svd_ratios_of(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let n = c.a.n;
    let (s, vals) = (outs[1].to_vec_f64(), outs[3].to_vec_f64());
    let (u, vh) = (&Mat::of_tensor(&outs[0])[i], &Mat::of_tensor(&outs[2])[i]);
    let (s, vals) = (&s[i * n..(i + 1) * n], &vals[i * n..(i + 1) * n]);
    Ok(svd_ratios(c, u, s, vh, vals, eps(dtype)))
}

#[test]
fn svd_batched_f64() {
    report("svd-batched-f64", batched(DType::F64, square, svd_op, svd_ratios_of));
}

#[test]
fn svd_batched_f32() {
    report("svd-batched-f32", batched(DType::F32, square, svd_op, svd_ratios_of));
}

/// LAPACK's QR ratios (`dqrt01`): `‖A − QR‖ / (‖A‖ m eps)`, `‖I − QᵀQ‖ / (m eps)`, and `R`
/// upper triangular.
fn qr_check(c: &Case, dtype: DType) -> Ratios {
    qr_ratios(c, dtype, &qr_op(&c.a.tensor(dtype))?, 0)
}

fn qr_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let f = qr(t, QrMode::Reduced).map_err(|e| e.to_string())?;
    Ok(vec![f.q, f.r])
}

/// [`qr_check`]'s ratios of matrix `i` of the outputs `[Q, R]`.
fn qr_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let q = &Mat::of_tensor(&outs[0])[i];
    let r = &Mat::of_tensor(&outs[1])[i];
    let e = eps(dtype);
    let unit = pow2_near(c.a.amax());
    let back = q.matmul(&r.scaled(1.0 / unit));
    let upper = (0..r.m).all(|i| (0..i.min(r.n)).all(|j| r.at(i, j) == 0.0));
    Ok(vec![
        ("A - QR", backward_ratio(&c.a, &back, unit, c.a.m, e)),
        ("I - Q'Q", orthogonality(q, e)),
        ("R upper", if upper { 0.0 } else { f64::INFINITY }),
    ])
}

#[test]
fn qr_f64() {
    report("qr-f64", sweep(DType::F64, &shapes(), qr_check));
}

#[test]
fn qr_f32() {
    report("qr-f32", sweep(DType::F32, &shapes(), qr_check));
}

/// Runs `check` on every case that `cases` makes at each order, one matrix at a time.
fn sweep_square(
    dtype: DType,
    orders: &[usize],
    cases: fn(usize, DType, u64) -> Vec<Case>,
    check: impl Fn(&Case, DType) -> Ratios,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for &n in orders {
        for c in cases(n, dtype, 1) {
            out.push(Outcome {
                key: format!("{dtype:?}|{n}x{n}|{}", c.name),
                ratios: check(&c, dtype),
            });
        }
    }
    out
}

/// The orders of the square tests: every order to 20 and across the kernels' thresholds
/// (the small Jacobi and QL kernels, the blocked reductions, the divide and conquer);
/// the full sweep as [`shapes`].
fn orders() -> Vec<usize> {
    if full() {
        (1..=70).chain(127..=129).chain(255..=257).chain(383..=385).chain(511..=513).collect()
    } else {
        (1..=20).chain([24, 25, 26, 31, 32, 33, 47, 48, 63, 64, 65, 127, 128, 129]).collect()
    }
}

/// LAPACK's symmetric eigenproblem ratios (`dsyt21`, `ddrvst`): `‖A − V Λ Vᵀ‖ / (‖A‖ n
/// eps)`, `‖I − VᵀV‖ / (n eps)`, `Λ` ascending, `Λ` against the prescribed eigenvalues
/// (over `max |λ| n eps`), and `eigvalsh` against `eigh`'s `Λ`.
fn eigh_check(c: &Case, dtype: DType) -> Ratios {
    eigh_ratios(c, dtype, &eigh_op(&c.a.tensor(dtype))?, 0)
}

fn eigh_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let f = eigh(t, Uplo::Lower).map_err(|e| e.to_string())?;
    let vals = eigvalsh(t, Uplo::Lower).map_err(|e| e.to_string())?;
    Ok(vec![f.eigenvalues, f.eigenvectors, vals])
}

/// [`eigh_check`]'s ratios of matrix `i` of the outputs `[Λ, V, eigvalsh]`.
fn eigh_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let n = c.a.n;
    let lam = outs[0].to_vec_f64()[i * n..(i + 1) * n].to_vec();
    let v = &Mat::of_tensor(&outs[1])[i];
    let vals = outs[2].to_vec_f64()[i * n..(i + 1) * n].to_vec();
    let e = eps(dtype);
    let unit = pow2_near(c.a.amax());
    let mut vl = v.clone();
    for i in 0..n {
        for j in 0..n {
            vl.set(i, j, v.at(i, j) * (lam[j] / unit));
        }
    }
    let back = vl.matmul(&v.t());
    let top = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let sorted = lam.windows(2).all(|w| w[0] <= w[1]);
    let mut r = vec![
        ("A - V L V'", backward_ratio(&c.a, &back, unit, n, e)),
        ("I - V'V", orthogonality(v, e)),
        ("L sorted", if sorted { 0.0 } else { f64::INFINITY }),
        ("eigvalsh - L", value_ratio(&vals, &lam, top.max(f64::MIN_POSITIVE), n, e)),
    ];
    if let Some(want) = &c.values {
        let wtop = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        r.push(("L - prescribed", value_ratio(&lam, want, wtop, n, e)));
    }
    Ok(r)
}

#[test]
fn eigh_f64() {
    report("eigh-f64", sweep_square(DType::F64, &orders(), symmetric_cases, eigh_check));
}

#[test]
fn eigh_f32() {
    report("eigh-f32", sweep_square(DType::F32, &orders(), symmetric_cases, eigh_check));
}

/// LAPACK's nonsymmetric eigenproblem ratios (`ddrvev`): `‖A V − V W‖₁ / (‖A‖₁ n eps)`
/// (complex), `|‖v_j‖₂ − 1| / eps`, each eigenvector's largest component (to rounding) real (0, or
/// infinite), and `eigvals` against `eig`'s `W` (over `max |w| n eps`).
fn eig_check(c: &Case, dtype: DType) -> Ratios {
    eig_ratios(c, dtype, &eig_op(&c.a.tensor(dtype))?, 0)
}

fn eig_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let f = eig(t).map_err(|e| e.to_string())?;
    let vals = eigvals(t).map_err(|e| e.to_string())?;
    Ok(vec![f.eigenvalues, f.eigenvectors, vals])
}

/// The real and imaginary parts of a complex tensor, as f64 vectors.
fn parts(t: &Tensor) -> (Vec<f64>, Vec<f64>) {
    (t.real().unwrap().to_vec_f64(), t.imag().unwrap().to_vec_f64())
}

/// [`eig_check`]'s ratios of matrix `i` of the outputs `[W, V, eigvals]`.
fn eig_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    eig_ratios_of(&|r, p| (c.a.at(r, p), 0.0), c.a.n, dtype, outs, i)
}

/// Entry `(r, p)` of `D A Dᴴ`, rounded to `dtype`'s precision: a real case made complex
/// by the unitary diagonal `D = diag(e^{iθ_k})`, `θ_k = 0.7 k` (`A`'s eigenvalues and
/// conditioning, complex entries).
fn complexified(a: &Mat, dtype: DType, r: usize, p: usize) -> (f64, f64) {
    let t = 0.7 * (r as f64 - p as f64);
    let (re, im) = (a.at(r, p) * t.cos(), a.at(r, p) * t.sin());
    if dtype == DType::C64 {
        (f64::from(re as f32), f64::from(im as f32))
    } else {
        (re, im)
    }
}

/// [`eig_ratios`] of the complex `D A Dᴴ` ([`complexified`]), solved as complex.
fn eig_complex_check(c: &Case, dtype: DType) -> Ratios {
    let n = c.a.n;
    let ct = if dtype == DType::F32 { DType::C64 } else { DType::C128 };
    let (mut re, mut im) = (vec![0.0f64; n * n], vec![0.0f64; n * n]);
    for r in 0..n {
        for p in 0..n {
            (re[r * n + p], im[r * n + p]) = complexified(&c.a, ct, r, p);
        }
    }
    let t = Tensor::complex(
        &Tensor::from_vec(re, (n, n)).unwrap(),
        &Tensor::from_vec(im, (n, n)).unwrap(),
    )
    .unwrap()
    .to_dtype(ct)
    .unwrap();
    eig_ratios_of(&|r, p| complexified(&c.a, ct, r, p), n, dtype, &eig_op(&t)?, 0)
}

/// [`eig_ratios`] for the matrix whose entries `a(r, p)` gives (real and imaginary parts).
fn eig_ratios_of(
    a: &dyn Fn(usize, usize) -> (f64, f64),
    n: usize,
    dtype: DType,
    outs: &[Tensor],
    i: usize,
) -> Ratios {
    let e = eps(dtype);
    let (wr, wi) = parts(&outs[0]);
    let (vr, vi) = parts(&outs[1]);
    let (er, ei) = parts(&outs[2]);
    let w: Vec<(f64, f64)> = (0..n).map(|k| (wr[i * n + k], wi[i * n + k])).collect();
    let vals: Vec<(f64, f64)> = (0..n).map(|k| (er[i * n + k], ei[i * n + k])).collect();
    // V row-major: v(r, k)
    let v = |r: usize, k: usize| (vr[i * n * n + r * n + k], vi[i * n * n + r * n + k]);
    let amax = (0..n * n).fold(0.0f64, |m, k| {
        let (x, y) = a(k / n, k % n);
        m.max(x.abs()).max(y.abs())
    });
    let unit = pow2_near(amax);
    // ‖A V − V W‖₁ over ‖A‖₁, both divided by unit
    let mut res = 0.0f64;
    for k in 0..n {
        let mut col = 0.0;
        for r in 0..n {
            let (mut sr, mut si) = (0.0, 0.0);
            for p in 0..n {
                let (ar, ai) = a(r, p);
                let (ar, ai) = (ar / unit, ai / unit);
                let (x, y) = v(p, k);
                sr += ar * x - ai * y;
                si += ar * y + ai * x;
            }
            let (x, y) = v(r, k);
            let (lr, li) = (w[k].0 / unit, w[k].1 / unit);
            sr -= x * lr - y * li;
            si -= x * li + y * lr;
            col += sr.hypot(si);
        }
        res = if col.is_nan() { f64::NAN } else { res.max(col) };
    }
    let anorm = (0..n)
        .fold(0.0f64, |m, p| m.max((0..n).map(|r| a(r, p).0.hypot(a(r, p).1) / unit).sum::<f64>()));
    let back = if res.is_nan() {
        f64::INFINITY
    } else if anorm == 0.0 {
        res / (n.max(1) as f64 * e)
    } else {
        res / anorm / (n.max(1) as f64 * e)
    };
    let mut unitnorm = 0.0f64;
    let mut gauge = 0.0f64;
    for k in 0..n {
        let norm = (0..n).map(|r| v(r, k).0.hypot(v(r, k).1).powi(2)).sum::<f64>().sqrt();
        unitnorm = unitnorm.max((norm - 1.0).abs() / e);
        // a real positive component of the largest modulus, to rounding (moduli that tie
        // exactly in exact arithmetic, as in the all-ones matrix's, differ in the last
        // bits, and the kernel picks one of them)
        let modulus = |r: usize| v(r, k).0.hypot(v(r, k).1);
        let top = (0..n).map(modulus).fold(0.0f64, f64::max);
        let near = |r: usize| modulus(r) >= top * (1.0 - 4.0 * n as f64 * e);
        if n > 0 && !(0..n).any(|r| near(r) && v(r, k).1 == 0.0 && v(r, k).0 >= 0.0) {
            gauge = f64::INFINITY;
        }
    }
    let top = w.iter().fold(0.0f64, |m, z| m.max(z.0.hypot(z.1)));
    let dv: Vec<f64> = vals.iter().zip(&w).map(|(a, b)| (a.0 - b.0).hypot(a.1 - b.1)).collect();
    let zeros = vec![0.0; n];
    Ok(vec![
        ("AV - VW", back),
        ("|v| - 1", unitnorm),
        ("largest real", gauge),
        ("eigvals - W", value_ratio(&dv, &zeros, top.max(f64::MIN_POSITIVE), n, e)),
    ])
}

/// The orders of the eig tests: every order to 20, across the small kernel's bound (32)
/// and faer's blocked solver above it; the full sweep as [`shapes`].
fn eig_orders() -> Vec<usize> {
    if full() {
        orders()
    } else {
        (1..=20).chain([24, 31, 32, 33, 48, 64, 65, 128]).collect()
    }
}

#[test]
fn eig_f64() {
    report("eig-f64", sweep_square(DType::F64, &eig_orders(), nonsymmetric_cases, eig_check));
}

#[test]
fn eig_f32() {
    report("eig-f32", sweep_square(DType::F32, &eig_orders(), nonsymmetric_cases, eig_check));
}

#[test]
fn eig_complex_f64() {
    let o = sweep_square(DType::F64, &eig_orders(), nonsymmetric_cases, eig_complex_check);
    report("eig-complex-f64", o);
}

#[test]
fn eig_complex_f32() {
    let o = sweep_square(DType::F32, &eig_orders(), nonsymmetric_cases, eig_complex_check);
    report("eig-complex-f32", o);
}

#[test]
fn eig_batched() {
    for dtype in [DType::F64, DType::F32] {
        let o = batched(dtype, nonsymmetric_cases, eig_op, eig_ratios);
        report(&format!("eig-batched-{dtype:?}"), o);
    }
}

/// LAPACK's Cholesky ratio (`dpot01`): `‖A − L Lᵀ‖ / (‖A‖ n eps)`, `L` lower triangular.
fn cholesky_check(c: &Case, dtype: DType) -> Ratios {
    cholesky_ratios(c, dtype, &cholesky_op(&c.a.tensor(dtype))?, 0)
}

fn cholesky_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    Ok(vec![cholesky(t, Uplo::Lower).map_err(|e| e.to_string())?])
}

/// [`cholesky_check`]'s ratios of matrix `i` of the output `[L]`.
fn cholesky_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let l = &Mat::of_tensor(&outs[0])[i];
    let unit = pow2_near(c.a.amax());
    let ls = l.scaled(1.0 / unit.sqrt());
    let back = ls.matmul(&ls.t());
    let lower = (0..l.m).all(|i| (i + 1..l.n).all(|j| l.at(i, j) == 0.0));
    Ok(vec![
        ("A - L L'", backward_ratio(&c.a, &back, unit, c.a.n, eps(dtype))),
        ("L lower", if lower { 0.0 } else { f64::INFINITY }),
    ])
}

#[test]
fn cholesky_f64() {
    report("cholesky-f64", sweep_square(DType::F64, &orders(), spd_cases, cholesky_check));
}

#[test]
fn cholesky_f32() {
    report("cholesky-f32", sweep_square(DType::F32, &orders(), spd_cases, cholesky_check));
}

/// LAPACK's LU ratio (`dget01`): `‖P L U − A‖ / (‖A‖ n eps)` from `lu` (the factors of
/// `lu_factor`, unpacked).
fn lu_check(c: &Case, dtype: DType) -> Ratios {
    lu_ratios(c, dtype, &lu_op(&c.a.tensor(dtype))?, 0)
}

fn lu_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let f = lu(t, true).map_err(|e| e.to_string())?;
    Ok(vec![f.p, f.l, f.u])
}

/// [`lu_check`]'s ratios of matrix `i` of the outputs `[P, L, U]`.
fn lu_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let (p, l, u) =
        (&Mat::of_tensor(&outs[0])[i], &Mat::of_tensor(&outs[1])[i], &Mat::of_tensor(&outs[2])[i]);
    let unit = pow2_near(c.a.amax());
    let back = p.matmul(&l.matmul(&u.scaled(1.0 / unit)));
    let tri = (0..l.m).all(|i| (i..l.n).all(|j| l.at(i, j) == if i == j { 1.0 } else { 0.0 }))
        && (0..u.m).all(|i| (0..i.min(u.n)).all(|j| u.at(i, j) == 0.0))
        && (0..l.m).all(|i| (0..i.min(l.n)).all(|j| l.at(i, j).abs() <= 1.0));
    Ok(vec![
        ("P L U - A", backward_ratio(&c.a, &back, unit, c.a.m.max(c.a.n), eps(dtype))),
        ("L unit lower, |l| <= 1, U upper", if tri { 0.0 } else { f64::INFINITY }),
    ])
}

#[test]
fn lu_f64() {
    report("lu-f64", sweep(DType::F64, &shapes(), lu_check));
}

#[test]
fn lu_f32() {
    report("lu-f32", sweep(DType::F32, &shapes(), lu_check));
}

/// Whether an error is the singular-matrix error that LAPACK's `getrf` reports for an
/// exactly zero pivot (which the same partial pivoting meets on the same matrix).
fn singular(e: &cotangent::Error) -> bool {
    e.to_string().contains("singular")
}

/// The solvers on a square matrix: LAPACK's `dget02` for `solve` (`‖B − A X‖ / (‖A‖ ‖X‖ n
/// eps)`, two right-hand sides), `dget03` for `inv` (`‖I − A A⁻¹‖ / (‖A‖ ‖A⁻¹‖ n eps)`),
/// and `slogdet`/`det` against the prescribed singular values (`|log|det| − Σ log σᵢ|`
/// over `κ n eps`, the first-order bound) and against each other. A singular-matrix
/// error passes (see [`singular`]).
fn solvers_check(c: &Case, dtype: DType) -> Ratios {
    if c.a.m != c.a.n {
        return Ok(Vec::new());
    }
    let t = c.a.tensor(dtype);
    let lu_u = lu(&t, true).map_err(|e| e.to_string())?.u;
    let b = solvers_rhs(c.a.n).tensor(dtype);
    let e = t.zeros_like().unwrap();
    let x = match solve(&t, &b, Side::Left) {
        Err(err) if singular(&err) => b.zeros_like().unwrap().mul_scalar(f64::NAN).unwrap(),
        Err(err) => return Err(err.to_string()),
        Ok(x) => x,
    };
    let xi = match inv(&t) {
        Err(err) if singular(&err) => e.mul_scalar(f64::NAN).unwrap(),
        Err(err) => return Err(err.to_string()),
        Ok(x) => x,
    };
    let sl = slogdet(&t).map_err(|e| e.to_string())?;
    let d = det(&t).map_err(|e| e.to_string())?;
    solvers_ratios(c, dtype, &[lu_u, x, xi, sl.sign, sl.logabsdet, d], 0)
}

/// The two right-hand sides of [`solvers_check`] at order `n`.
fn solvers_rhs(n: usize) -> Mat {
    Mat { m: n, n: 2, a: hard::Rng::new(n as u64).normals(2 * n) }
}

/// `lu`'s `U`, `solve`'s `X` (NaN where it refused a singular matrix), `inv` (the same),
/// `slogdet`'s sign and log, and `det`, of a square batch.
fn solvers_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    let n = t.dims()[t.rank() - 1];
    let b = solvers_rhs(n).tensor(t.dtype());
    let sl = slogdet(t).map_err(|e| e.to_string())?;
    Ok(vec![
        lu(t, true).map_err(|e| e.to_string())?.u,
        solve(t, &b, Side::Left).map_err(|e| e.to_string())?,
        inv(t).map_err(|e| e.to_string())?,
        sl.sign,
        sl.logabsdet,
        det(t).map_err(|e| e.to_string())?,
    ])
}

/// [`solvers_check`]'s ratios of matrix `i` of [`solvers_op`]'s outputs (a NaN `X` or
/// inverse: refused as singular, not counted).
fn solvers_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let n = c.a.n;
    let e = eps(dtype);
    let mut r = Vec::new();
    let b = solvers_rhs(n).rounded(dtype);
    // numerically singular (a pivot below n eps ‖A‖): the solution may overflow, as
    // LAPACK's does, and a non-finite one is not counted
    let pivots = &Mat::of_tensor(&outs[0])[i];
    let small = (0..n).map(|i| pivots.at(i, i).abs()).fold(f64::INFINITY, f64::min);
    let near_singular = small <= c.a.amax() * n as f64 * e;
    let finite = |x: &Mat| x.a.iter().all(|v| v.is_finite());
    let refused = |x: &Mat| x.a.iter().any(|v| v.is_nan()) && small == 0.0;
    let counted = |x: &Mat| !refused(x) && (!near_singular || finite(x));
    let x = &Mat::of_tensor(&outs[1])[i];
    if counted(x) {
        // (all divided by powers of two near ‖A‖ and ‖X‖: exact)
        let (ua, ux) = (pow2_near(c.a.amax()), pow2_near(x.amax()));
        let ax = c.a.scaled(1.0 / ua).matmul(&x.scaled(1.0 / ux));
        let res = b.scaled(1.0 / (ua * ux)).sub(&ax).norm1();
        let den = c.a.scaled(1.0 / ua).norm1() * x.scaled(1.0 / ux).norm1() * n as f64 * e;
        r.push(("B - A X", if den == 0.0 { 0.0 } else { res / den }));
    }
    let x = &Mat::of_tensor(&outs[2])[i];
    if counted(x) {
        let (ua, ux) = (pow2_near(c.a.amax()), pow2_near(x.amax()));
        // (dget03's I − A⁻¹ A: the residual the LU-based inverse keeps small)
        let xa = x.scaled(1.0 / ux).matmul(&c.a.scaled(1.0 / ua));
        let res = Mat::eye(n).scaled(1.0 / (ua * ux)).sub(&xa).norm1();
        let den = c.a.scaled(1.0 / ua).norm1() * x.scaled(1.0 / ux).norm1() * n as f64 * e;
        r.push(("I - inv(A) A", if den == 0.0 { 0.0 } else { res / den }));
    }
    let (sign, logabs) = (outs[3].to_vec_f64()[i], outs[4].to_vec_f64()[i]);
    let d = outs[5].to_vec_f64()[i];
    if let Some(s) = &c.values {
        let want: f64 = s.iter().map(|x| x.ln()).sum();
        let kappa = s[0] / s[s.len() - 1];
        // (the first-order bound κ n eps on the relative change of det; beyond one the
        // rounded matrix may be singular)
        if kappa * (n as f64) * e < 0.5 {
            let err = (logabs - want).abs();
            r.push(("log|det| - sum log s", err / (kappa * n as f64 * e)));
        }
    }
    // det = sign exp(log|det|) where that is finite and normal (exp multiplies log|det|'s
    // rounding by |log|det||)
    let via = sign * logabs.exp();
    let normal =
        f64::from(if dtype == DType::F32 { f32::MIN_POSITIVE } else { 0.0 }).max(f64::MIN_POSITIVE);
    if via.is_finite() && via.abs() >= normal && d.is_finite() {
        let scale = via.abs() * (1.0 + logabs.abs());
        r.push(("det - sign exp(logabsdet)", value_ratio(&[d], &[via], scale, n, e)));
    }
    Ok(r)
}

#[test]
fn solvers_f64() {
    report("solvers-f64", sweep(DType::F64, &shapes(), solvers_check));
}

#[test]
fn solvers_f32() {
    report("solvers-f32", sweep(DType::F32, &shapes(), solvers_check));
}

/// `pinv` by the Moore-Penrose conditions and `lstsq` (`gelsd`) by LAPACK's `dqrt17`,
/// each over `κ max(m, n) eps` with `κ = ‖A‖ ‖A⁺‖` (as `dget03` normalises the inverse's
/// residual by `‖A‖ ‖A⁻¹‖`: the computed pseudo-inverse of a backward-stable SVD is
/// accurate to `κ eps`, and so is the test's own arithmetic on `A X A`):
/// `‖A X A − A‖ / ‖A‖`, `‖X A X − X‖ / ‖X‖`, `‖Aᵀ (B − A X)‖ / (‖A‖ ‖B‖)`.
fn pinv_lstsq_check(c: &Case, dtype: DType) -> Ratios {
    let (m, n) = (c.a.m, c.a.n);
    let order = m.max(n);
    let e = eps(dtype);
    let t = c.a.tensor(dtype);
    let x = &Mat::of_tensor(&pinv(&t, PinvOptions::default()).map_err(|e| e.to_string())?)[0];
    let (ua, ux) = (pow2_near(c.a.amax()), pow2_near(x.amax()));
    let (a1, x1) = (c.a.scaled(1.0 / ua), x.scaled(1.0 / ux));
    let kappa = (a1.norm1() * ua * x1.norm1() * ux).max(1.0);
    let ek = e * kappa;
    let axa = a1.matmul(&x1).matmul(&a1).scaled(ua * ux);
    let xax = x1.matmul(&a1).matmul(&x1).scaled(ua * ux);
    let mut r = vec![
        ("A X A - A", backward_ratio(&c.a, &axa, ua, order, ek)),
        ("X A X - X", backward_ratio(x, &xax, ux, order, ek)),
    ];
    let mut rng = hard::Rng::new(order as u64);
    let b = Mat { m, n: 2, a: rng.normals(2 * m) }.rounded(dtype);
    let s = lstsq(&t, &b.tensor(dtype), LstsqDriver::Gelsd).map_err(|e| e.to_string())?;
    let sol = &Mat::of_tensor(&s.solution)[0];
    let us = pow2_near(sol.amax());
    let res = b.sub(&a1.matmul(&sol.scaled(1.0 / us)).scaled(ua * us));
    let ur = pow2_near(res.amax());
    let atr = a1.t().matmul(&res.scaled(1.0 / ur)).norm1();
    let den = a1.norm1() * b.scaled(1.0 / ur).norm1() * order as f64 * ek;
    r.push(("A'(B - A X)", if den == 0.0 { 0.0 } else { atr / den }));
    Ok(r)
}

#[test]
fn pinv_lstsq_f64() {
    report("pinv-lstsq-f64", sweep(DType::F64, &shapes(), pinv_lstsq_check));
}

#[test]
fn pinv_lstsq_f32() {
    report("pinv-lstsq-f32", sweep(DType::F32, &shapes(), pinv_lstsq_check));
}

/// The general cases of the square order `n`.
fn square(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    general_cases(n, n, dtype, seed)
}

/// The `n x n` matrices of `cs` as one `(len, n, n)` tensor of `dtype`.
fn stack(cs: &[Case], n: usize, dtype: DType) -> Tensor {
    let data: Vec<f64> = cs.iter().flat_map(|c| c.a.a.iter().copied()).collect();
    match dtype {
        DType::F32 => {
            Tensor::from_vec(data.iter().map(|&x| x as f32).collect::<Vec<f32>>(), (cs.len(), n, n))
        }
        _ => Tensor::from_vec(data, (cs.len(), n, n)),
    }
    .unwrap()
}

/// Every case that `cases` makes at orders 4, 16 and 32 (seed 2) in one batch, so that
/// the batched kernels (the SIMD lanes of the SVD's Jacobi, QR, LU, Cholesky and the
/// symmetric eigensolver up to 16 x 16) take them; `op` on the batch, `ratios` per
/// matrix.
fn batched(
    dtype: DType,
    cases: fn(usize, DType, u64) -> Vec<Case>,
    op: fn(&Tensor) -> Result<Vec<Tensor>, String>,
    ratios: fn(&Case, DType, &[Tensor], usize) -> Ratios,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for n in [4, 16, 32] {
        let cs = cases(n, dtype, 2);
        match op(&stack(&cs, n, dtype)) {
            Err(e) => {
                let key = format!("{dtype:?}|{n}x{n}|the batch");
                out.push(Outcome { key, ratios: Err(e) });
            }
            Ok(outs) => {
                for (i, c) in cs.iter().enumerate() {
                    let key = format!("{dtype:?}|{n}x{n}|{}", c.name);
                    out.push(Outcome { key, ratios: ratios(c, dtype, &outs, i) });
                }
            }
        }
    }
    out
}

#[test]
fn qr_batched() {
    for dtype in [DType::F64, DType::F32] {
        report(&format!("qr-batched-{dtype:?}"), batched(dtype, square, qr_op, qr_ratios));
    }
}

#[test]
fn lu_batched() {
    for dtype in [DType::F64, DType::F32] {
        report(&format!("lu-batched-{dtype:?}"), batched(dtype, square, lu_op, lu_ratios));
    }
}

#[test]
fn eigh_batched() {
    for dtype in [DType::F64, DType::F32] {
        let o = batched(dtype, symmetric_cases, eigh_op, eigh_ratios);
        report(&format!("eigh-batched-{dtype:?}"), o);
    }
}

#[test]
fn cholesky_batched() {
    for dtype in [DType::F64, DType::F32] {
        let o = batched(dtype, spd_cases, cholesky_op, cholesky_ratios);
        report(&format!("cholesky-batched-{dtype:?}"), o);
    }
}

/// The general square cases at order `n` that the batched `solve` and `inv` do not refuse
/// as singular (they refuse the whole batch for one matrix with an exactly zero pivot, as
/// PyTorch's; which matrices that is depends on the rounding of the kernel that takes the
/// batch): dropped one at a time as they are named.
fn invertible(n: usize, dtype: DType, seed: u64) -> Vec<Case> {
    let mut cs = general_cases(n, n, dtype, seed);
    loop {
        let t = stack(&cs, n, dtype);
        let b = solvers_rhs(n).tensor(dtype);
        match solve(&t, &b, Side::Left).and_then(|_| inv(&t)) {
            Err(cotangent::Error::Singular { batch, .. }) => {
                cs.remove(batch);
            }
            _ => return cs,
        }
    }
}

#[test]
fn solvers_batched() {
    for dtype in [DType::F64, DType::F32] {
        let o = batched(dtype, invertible, solvers_op, solvers_ratios);
        report(&format!("solvers-batched-{dtype:?}"), o);
    }
}

/// The matrix exponential against the exact `exp(A)` of [`hard::exp_cases`]:
/// `‖exp(A) − E‖₁ / (‖E‖₁ max(1, ‖A‖₁) n eps)`, the relative error over the first-order
/// bound of a backward-stable method (the exponential's relative condition number at a
/// normal matrix is `‖A‖₂`).
fn exp_ratios(c: &Case, dtype: DType, outs: &[Tensor], i: usize) -> Ratios {
    let want = c.reference.as_ref().unwrap();
    let got = &Mat::of_tensor(&outs[0])[i];
    let unit = pow2_near(want.amax());
    let err = got.scaled(1.0 / unit).sub(&want.scaled(1.0 / unit)).norm1();
    let den = want.scaled(1.0 / unit).norm1() * c.a.norm1().max(1.0) * c.a.n as f64 * eps(dtype);
    Ok(vec![("exp(A) - E", if err == 0.0 { 0.0 } else { err / den })])
}

fn exp_op(t: &Tensor) -> Result<Vec<Tensor>, String> {
    Ok(vec![matrix_exp(t).map_err(|e| e.to_string())?])
}

fn exp_check(c: &Case, dtype: DType) -> Ratios {
    exp_ratios(c, dtype, &exp_op(&c.a.tensor(dtype))?, 0)
}

#[test]
fn matrix_exp_f64() {
    report("matrix_exp-f64", sweep_square(DType::F64, &orders(), exp_cases, exp_check));
}

#[test]
fn matrix_exp_f32() {
    report("matrix_exp-f32", sweep_square(DType::F32, &orders(), exp_cases, exp_check));
}

#[test]
fn matrix_exp_batched() {
    for dtype in [DType::F64, DType::F32] {
        let o = batched(dtype, exp_cases, exp_op, exp_ratios);
        report(&format!("matrix_exp-batched-{dtype:?}"), o);
    }
}

/// Writes every case of the sweep (the full one with `COTANGENT_ACCURACY=full`) to
/// `target/accuracy/cases.json` (an index: set, key, shape, dtype, prescribed values,
/// offset) and `cases.bin` (the matrices, row-major little-endian f64, as rounded to
/// their dtype), for `scripts/lapack_accuracy.py`, which computes LAPACK's ratios on
/// them. Run by that script; not part of the suite.
#[test]
#[ignore = "writes the cases for scripts/lapack_accuracy.py"]
fn dump_cases() {
    let mut index = Vec::new();
    let mut bin: Vec<u8> = Vec::new();
    let mut put = |set: &str, dtype: DType, c: &Case| {
        let reference = c.reference.as_ref().map(|e| {
            let at = bin.len() / 8;
            for x in &e.a {
                bin.extend_from_slice(&x.to_le_bytes());
            }
            at
        });
        index.push(serde_json::json!({
            "set": set,
            "key": format!("{dtype:?}|{}x{}|{}", c.a.m, c.a.n, c.name),
            "dtype": format!("{dtype:?}"),
            "m": c.a.m,
            "n": c.a.n,
            "values": c.values,
            "reference": reference,
            "offset": bin.len() / 8,
        }));
        for x in &c.a.a {
            bin.extend_from_slice(&x.to_le_bytes());
        }
    };
    for dtype in [DType::F64, DType::F32] {
        for (m, n) in shapes() {
            for c in general_cases(m, n, dtype, 1) {
                put("general", dtype, &c);
            }
        }
        for n in [4, 16, 32] {
            for c in general_cases(n, n, dtype, 2) {
                put("batch", dtype, &c);
            }
            for c in symmetric_cases(n, dtype, 2) {
                put("symmetric-batch", dtype, &c);
            }
            for c in spd_cases(n, dtype, 2) {
                put("spd-batch", dtype, &c);
            }
            for c in invertible(n, dtype, 2) {
                put("invertible-batch", dtype, &c);
            }
            for c in exp_cases(n, dtype, 2) {
                put("exp-batch", dtype, &c);
            }
        }
        for n in [4, 16, 32] {
            for c in nonsymmetric_cases(n, dtype, 2) {
                put("nonsymmetric-batch", dtype, &c);
            }
        }
        for n in eig_orders() {
            for c in nonsymmetric_cases(n, dtype, 1) {
                put("nonsymmetric", dtype, &c);
            }
        }
        for n in orders() {
            for c in symmetric_cases(n, dtype, 1) {
                put("symmetric", dtype, &c);
            }
            for c in spd_cases(n, dtype, 1) {
                put("spd", dtype, &c);
            }
            for c in exp_cases(n, dtype, 1) {
                put("exp", dtype, &c);
            }
        }
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/accuracy");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(format!("{dir}/cases.bin"), bin).unwrap();
    let text = serde_json::to_string(&serde_json::Value::Array(index)).unwrap();
    std::fs::write(format!("{dir}/cases.json"), text).unwrap();
}

/// Gradients on the suite's matrices (f64). Where the gradient is defined (distinct
/// singular values and eigenvalues: the prescribed geometric, arithmetic and random
/// spectra at condition 10) the analytic gradient matches finite differences, through
/// every kernel (Jacobi at 5, the bidiagonal stages from 9; the small and blocked QR);
/// where it is not (repeated or zero singular values, a loss that depends on the basis of
/// their subspace), the backward pass returns a named error or a finite gradient, never a
/// NaN in silence.
#[test]
fn gradients_on_hard_matrices() {
    let defined = ["mode3-cond1e1", "mode4-cond1e1", "mode5-cond1e1"];
    let undefined = ["repeated", "rank-half", "rank-one", "ones", "zero"];
    let opts = GradcheckOptions::default();
    let (mut checked, mut refused) = (0, 0);
    for (m, n) in [(5, 5), (9, 9), (12, 7), (7, 12), (17, 17)] {
        let w = Tensor::from_vec(hard::Rng::new(7).normals(m * n), (m, n)).unwrap();
        let w = &w;
        for c in general_cases(m, n, DType::F64, 3) {
            let a = c.a.tensor(DType::F64).with_requires_grad(true).unwrap();
            let what = format!("{m}x{n} {}", c.name);
            if defined.contains(&c.name.as_str()) {
                let r = gradcheck(
                    |x| {
                        let f = svd(&x[0], false)?;
                        let polar = f.u.mul(&f.s.unsqueeze(-2)?)?.matmul(&f.vh)?.mul(w)?.sum()?;
                        let proj = f.u.matmul(&f.u.mT()?)?.sum()?;
                        Ok(vec![polar.add(&proj)?, svdvals(&x[0])?.sum()?])
                    },
                    std::slice::from_ref(&a),
                    &opts,
                )
                .unwrap();
                assert!(r.passed, "svd {what}: {r}");
                checked += 1;
                if m >= n {
                    let r = gradcheck(
                        |x| {
                            let f = qr(&x[0], QrMode::Reduced)?;
                            Ok(vec![f.q.sum()?, f.r.mul(&w.narrow(0, 0, n)?)?.sum()?])
                        },
                        std::slice::from_ref(&a),
                        &opts,
                    )
                    .unwrap();
                    assert!(r.passed, "qr {what}: {r}");
                }
            } else if undefined.contains(&c.name.as_str()) {
                let f = svd(&a, false).unwrap();
                let loss = f.u.mul(&w.narrow(1, 0, m.min(n)).unwrap()).unwrap().sum().unwrap();
                match loss.backward() {
                    Err(cotangent::Error::NotDifferentiable { op: "linalg.svd", .. }) => {
                        refused += 1;
                    }
                    Err(e) => panic!("svd {what}: {e:?}"),
                    Ok(grads) => {
                        let g = grads.get(&a).unwrap().to_vec_f64();
                        assert!(
                            g.iter().all(|x| x.is_finite()),
                            "svd {what}: a NaN or inf gradient"
                        );
                    }
                }
                // S alone is differentiable everywhere it is defined: finite
                let a2 = c.a.tensor(DType::F64).with_requires_grad(true).unwrap();
                let grads = svdvals(&a2).unwrap().sum().unwrap().backward().unwrap();
                let g = grads.get(&a2).unwrap().to_vec_f64();
                assert!(g.iter().all(|x| x.is_finite()), "svdvals {what}: a NaN or inf gradient");
            }
        }
    }
    for n in [5, 9, 17] {
        let w = Tensor::from_vec(hard::Rng::new(8).normals(n * n), (n, n)).unwrap();
        let w = &w;
        for c in symmetric_cases(n, DType::F64, 3) {
            if !defined.contains(&c.name.as_str()) {
                continue;
            }
            let a = c.a.tensor(DType::F64).with_requires_grad(true).unwrap();
            let r = gradcheck(
                |x| {
                    // (symmetrised: eigh reads one triangle)
                    let s = x[0].add(&x[0].mT()?)?.mul_scalar(0.5)?;
                    let f = eigh(&s, Uplo::Lower)?;
                    let v = f.eigenvectors;
                    let proj =
                        v.mul(&f.eigenvalues.unsqueeze(-2)?)?.matmul(&v.mT()?)?.mul(w)?.sum()?;
                    Ok(vec![proj, eigvalsh(&s, Uplo::Lower)?.sum()?])
                },
                std::slice::from_ref(&a),
                &opts,
            )
            .unwrap();
            assert!(r.passed, "eigh {n}x{n} {}: {r}", c.name);
            checked += 1;
        }
    }
    // (every defined family at every shape; the rank-deficient ones refused)
    assert_eq!(checked, 3 * 5 + 3 * 3, "gradchecks run");
    assert!(refused >= 5, "NotDifferentiable errors: {refused}");
}

/// Gradients of the other decompositions and solvers on the suite's matrices (f64), where
/// they are defined: the prescribed spectra at condition 10 (`mode*-cond1e1`; the
/// exponential's of norm 1, the defective Jordan block and the nilpotent shift among
/// them), first order at orders 5 and 17 and tall and wide shapes, second order at order
/// 5. Symmetric ops take `(X + Xᵀ) / 2` (they read one triangle).
#[test]
fn more_gradients_on_hard_matrices() {
    let opts = GradcheckOptions::default();
    let defined = |name: &str| name.ends_with("-cond1e1");
    let check = |what: &str,
                 a: &Tensor,
                 second: bool,
                 f: &dyn Fn(&Tensor) -> cotangent::Result<Vec<Tensor>>| {
        let a = a.with_requires_grad(true).unwrap();
        let r = gradcheck(|x| f(&x[0]), std::slice::from_ref(&a), &opts).unwrap();
        assert!(r.passed, "{what}: {r}");
        if second {
            let r = gradgradcheck(|x| f(&x[0]), std::slice::from_ref(&a), &opts).unwrap();
            assert!(r.passed, "{what} (second order): {r}");
        }
    };
    let mut count = 0;
    for n in [5, 17] {
        let w = Tensor::from_vec(hard::Rng::new(9).normals(n * n), (n, n)).unwrap();
        let w = &w;
        let b = Tensor::from_vec(hard::Rng::new(10).normals(2 * n), (n, 2)).unwrap();
        let b = &b;
        for c in spd_cases(n, DType::F64, 4).iter().filter(|c| defined(&c.name)) {
            check(&format!("cholesky {n} {}", c.name), &c.a.tensor(DType::F64), n == 5, &|x| {
                let s = x.add(&x.mT()?)?.mul_scalar(0.5)?;
                Ok(vec![cholesky(&s, Uplo::Lower)?.mul(w)?.sum()?])
            });
            count += 1;
        }
        for c in square(n, DType::F64, 4).iter().filter(|c| defined(&c.name)) {
            check(
                &format!("lu, solve, inv, det {n} {}", c.name),
                &c.a.tensor(DType::F64),
                n == 5,
                &|x| {
                    let f = lu(x, true)?;
                    let sl = slogdet(x)?;
                    Ok(vec![
                        f.l.mul(w)?.sum()?.add(&f.u.mul(w)?.sum()?)?,
                        solve(x, b, Side::Left)?.sum()?,
                        inv(x)?.mul(w)?.sum()?,
                        det(x)?.add(&sl.logabsdet)?,
                    ])
                },
            );
            count += 1;
        }
        for c in exp_cases(n, DType::F64, 4).iter().filter(|c| {
            c.name.ends_with("-norm1") || ["jordan", "shift", "skew"].contains(&c.name.as_str())
        }) {
            check(&format!("matrix_exp {n} {}", c.name), &c.a.tensor(DType::F64), n == 5, &|x| {
                Ok(vec![matrix_exp(x)?.mul(w)?.sum()?])
            });
            count += 1;
        }
    }
    for (m, n) in [(5, 5), (12, 7), (7, 12)] {
        let w = Tensor::from_vec(hard::Rng::new(11).normals(m * n), (n, m)).unwrap();
        let w = &w;
        for c in general_cases(m, n, DType::F64, 4).iter().filter(|c| defined(&c.name)) {
            check(&format!("pinv {m}x{n} {}", c.name), &c.a.tensor(DType::F64), m == 5, &|x| {
                Ok(vec![pinv(x, PinvOptions::default())?.mul(w)?.sum()?])
            });
            count += 1;
        }
    }
    // (modes 1-5 at condition 10 for cholesky, LU and pinv; three exponential families
    // per order besides the symmetric ones)
    assert_eq!(count, 2 * 5 + 2 * 5 + 2 * 6 + 3 * 5, "gradchecks run");
}
