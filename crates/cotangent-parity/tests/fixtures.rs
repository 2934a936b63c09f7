//! Runs every PyTorch fixture (`tests/fixtures/<op>.jsonl`, written by
//! `scripts/torch_fixtures.py`) through the runner, in process, and compares the results
//! with PyTorch's.
//!
//! Tolerance, per element `i` of each float output or gradient `E` (the runner's value is
//! `A`):
//!
//! ```text
//! |A_i - E_i| <= 8 ε |E_i|  +  ε max_j |E_j|  +  4 min(1, ε/ε₃₂) δ
//! ```
//!
//! where `ε` is the machine epsilon of the tensor's dtype (`2^-52` for f64, `2^-23` for
//! f32, `2^-7` for bf16), `ε₃₂ = 2^-23`, and `δ` is the case's conditioning estimate
//! recorded by the script: the largest difference between PyTorch's f32 and f64 results
//! for that tensor (inputs rounded to f32). So: a few ulps per element, one ulp of the
//! tensor's scale, and the error PyTorch itself makes in f32, scaled to the dtype. NaN
//! must match NaN, infinities must match exactly, and integer and boolean tensors, dtypes
//! and shapes must match exactly. An expected error matches when the runner answers an
//! error of the same kind.
//!
//! The test prints a per-op table (op, cases, passed) and checks that `docs/parity.md`
//! shows the same table (`PARITY_BLESS=1` rewrites it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::BTreeMap;

use cotangent_parity::{op_names, run_line};
use serde_json::Value;

const EPS32: f64 = f32::EPSILON as f64;

fn eps(dtype: &str) -> Option<f64> {
    match dtype {
        // (complex: the epsilon of the parts)
        "f64" | "c128" => Some(f64::EPSILON),
        "f32" | "c64" => Some(EPS32),
        "bf16" => Some(2f64.powi(-7)),
        "f16" => Some(2f64.powi(-10)),
        _ => None,
    }
}

/// A float element of a tensor's `data`: a number or "nan", "inf", "-inf".
fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_str().parse().ok(),
        Value::String(s) => match s.as_str() {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Compares one tensor of the runner's result with PyTorch's.
fn compare_tensor(
    what: &str,
    expected: &Value,
    got: &Value,
    delta: Option<f64>,
    slack_factor: f64,
) -> Result<(), String> {
    if expected.is_null() || got.is_null() {
        return if expected.is_null() == got.is_null() {
            Ok(())
        } else {
            Err(format!("{what}: expected {expected}, got {got}"))
        };
    }
    let dtype = expected["dtype"].as_str().unwrap_or("?");
    if got["dtype"] != expected["dtype"] || got["shape"] != expected["shape"] {
        return Err(format!(
            "{what}: expected {dtype} {}, got {} {}",
            expected["shape"], got["dtype"], got["shape"]
        ));
    }
    let (Some(e), Some(a)) = (expected["data"].as_array(), got["data"].as_array()) else {
        return Err(format!("{what}: no data"));
    };
    if e.len() != a.len() {
        return Err(format!("{what}: {} elements, expected {}", a.len(), e.len()));
    }
    let Some(eps) = eps(dtype) else {
        // integers and booleans: exact
        return if e == a { Ok(()) } else { Err(format!("{what}: expected {e:?}, got {a:?}")) };
    };
    let vals = |a: &[Value]| -> Vec<f64> { a.iter().map(|v| num(v).unwrap_or(f64::NAN)).collect() };
    let (ev, av) = (vals(e), vals(a));
    // a complex tensor: its imaginary parts too, each element's modulus for the relative
    // term (a part may cancel to far below the element's size)
    let (ei, ai) = match (expected.get("imag"), got.get("imag")) {
        (None, None) => (vec![0.0; ev.len()], vec![0.0; av.len()]),
        (Some(Value::Array(x)), Some(Value::Array(y)))
            if x.len() == e.len() && y.len() == e.len() =>
        {
            (vals(x), vals(y))
        }
        _ => return Err(format!("{what}: imaginary parts missing or of the wrong length")),
    };
    let size: Vec<f64> = ev.iter().zip(&ei).map(|(x, y)| x.hypot(*y)).collect();
    let scale = size.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max(*x));
    let slack = slack_factor * (eps / EPS32).min(1.0) * delta.unwrap_or(0.0);
    // (the JVPs: a floor of a few hundred ulps of the tensor's scale, see slack_factor)
    let floor_factor = if slack_factor > 4.0 { 256.0 } else { 1.0 };
    let complex = expected.get("imag").is_some();
    let pairs =
        ev.iter().zip(&av).chain(ei.iter().zip(&ai).take(if complex { ei.len() } else { 0 }));
    for (k, (&x, &y)) in pairs.enumerate() {
        let i = k % ev.len().max(1);
        let part = if k < ev.len() { "" } else { " (imaginary part)" };
        let rel = if size[i].is_finite() { 8.0 * eps * size[i] } else { 0.0 };
        let tol = rel + floor_factor * eps * scale + slack;
        let ok = if x.is_nan() {
            y.is_nan()
        } else if x.is_infinite() {
            x == y
        } else {
            (y - x).abs() <= tol
        };
        if !ok {
            return Err(format!(
                "{what}[{i}]{part}: expected {x:e}, got {y:e} (|diff| {:e}, tolerance {tol:e})",
                (y - x).abs()
            ));
        }
    }
    Ok(())
}

/// The multiple of the precision delta (the f32 run's difference, scaled to the dtype)
/// allowed beside a few ulps: for outputs and gradients, whose kernels and formulas
/// follow PyTorch's closely, 4; for the JVPs, 64, as the library's forward rules are
/// other programs than PyTorch's (other associations of the products and sums, the
/// eigen- and singular-vector terms in another order), whose rounding the f32 run
/// estimates only to a small factor (and misses where it happens to cancel alike: a
/// floor of 256 ulps of the tensor's largest element covers that; a wrong rule is off by
/// far more).
fn slack_factor(what: &str) -> f64 {
    if what.starts_with("jvps") {
        64.0
    } else {
        4.0
    }
}

/// Compares lists of tensors (or of nested lists, for list inputs' gradients).
fn compare_list(what: &str, expected: &Value, got: &Value, deltas: &Value) -> Result<(), String> {
    let (Some(e), Some(a)) = (expected.as_array(), got.as_array()) else {
        return Err(format!("{what}: expected {expected}, got {got}"));
    };
    if e.len() != a.len() {
        return Err(format!("{what}: {} entries, expected {}", a.len(), e.len()));
    }
    for (k, (x, y)) in e.iter().zip(a).enumerate() {
        let d = &deltas[k];
        if x.is_array() {
            compare_list(&format!("{what}[{k}]"), x, y, d)?;
        } else {
            compare_tensor(&format!("{what}[{k}]"), x, y, d.as_f64(), slack_factor(what))?;
        }
    }
    Ok(())
}

/// How an op's outputs may legitimately differ from PyTorch's by a gauge.
///
/// Hook for the linear-algebra ops: `linalg.qr`, `linalg.svd`, `linalg.eigh` (a sign per
/// column of Q, U, V), `linalg.eig` (eigenvalue order, a phase per eigenvector). For them,
/// add a variant here, align the runner's outputs to PyTorch's in [`align_gauge`], and,
/// for the gradients, move the fixture's cotangents into the runner's gauge and run the
/// case again before comparing. Core ops have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gauge {
    None,
    /// A sign (a unit phase, for complex outputs) per column `j` of one output (the first
    /// part, which decides the phases by comparison with PyTorch's), shared by the listed
    /// outputs: a column of one moves together with the same column (or, conjugated, row)
    /// of the others. qr: Q's columns and R's rows; eigh: the eigenvectors' columns.
    Signs(&'static [SignPart]),
    /// `linalg.svd`: a sign per singular pair `j < k` (column `j` of U, row `j` of Vh);
    /// with `full_matrices`, the completion (U's columns and Vh's rows from `k` on) is any
    /// orthonormal basis of one subspace: it is checked to span PyTorch's (equal
    /// projectors) and then replaced by PyTorch's for the comparison (it gets no gradient).
    Svd,
    /// `linalg.eig` (with `vectors`) and `linalg.eigvals`: the eigenvalues in any order
    /// (matched to PyTorch's, nearest first) and each eigenvector's phase.
    Eig {
        vectors: bool,
    },
}

/// One output under a [`Gauge::Signs`] gauge, and which of its axes carries the sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SignPart {
    output: usize,
    /// The sign multiplies rows (the second-to-last dim) rather than columns (the last).
    rows: bool,
}

fn gauge_of(op: &str) -> Gauge {
    const QR: &[SignPart] =
        &[SignPart { output: 0, rows: false }, SignPart { output: 1, rows: true }];
    const EIGH: &[SignPart] = &[SignPart { output: 1, rows: false }];
    match op {
        "linalg.qr" => Gauge::Signs(QR),
        "linalg.svd" => Gauge::Svd,
        "linalg.eigh" => Gauge::Signs(EIGH),
        "linalg.eig" => Gauge::Eig { vectors: true },
        "linalg.eigvals" => Gauge::Eig { vectors: false },
        _ => Gauge::None,
    }
}

/// The float values of a tensor's `data` (`None` for a non-float or malformed tensor).
fn values(t: &Value) -> Option<Vec<f64>> {
    eps(t["dtype"].as_str()?)?;
    t["data"].as_array()?.iter().map(num).collect()
}

/// `(batch, rows, cols)` of a tensor of rank >= 2.
fn matrix_dims(t: &Value) -> Option<(usize, usize, usize)> {
    let shape: Vec<usize> = t["shape"]
        .as_array()?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize))
        .collect::<Option<_>>()?;
    let r = shape.len();
    if r < 2 {
        return None;
    }
    Some((shape[..r - 2].iter().product(), shape[r - 2], shape[r - 1]))
}

/// The imaginary parts of a complex tensor's `imag` (`None` for a real tensor).
fn imag_values(t: &Value) -> Option<Vec<f64>> {
    t.get("imag")?.as_array()?.iter().map(num).collect()
}

/// The unit phase per `(batch, column)` that takes `got` closest to `expected`,
/// `(re, im)`: `⟨got_j, expected_j⟩ / |⟨got_j, expected_j⟩|` (conjugating `got`); for a
/// real tensor the sign of the columns' dot product. `(1, 0)` when the product is zero
/// or NaN.
fn column_phases(expected: &Value, got: &Value) -> Option<Vec<(f64, f64)>> {
    let (b, m, k) = matrix_dims(expected)?;
    if matrix_dims(got)? != (b, m, k) {
        return None;
    }
    let (e, a) = (values(expected)?, values(got)?);
    let zeros = || vec![0.0; e.len()];
    let (ei, ai) =
        (imag_values(expected).unwrap_or_else(zeros), imag_values(got).unwrap_or_else(zeros));
    if ei.len() != e.len() || ai.len() != a.len() {
        return None;
    }
    let mut phases = vec![(1.0, 0.0); b * k];
    for (bi, chunk) in phases.chunks_mut(k.max(1)).enumerate().take(b) {
        for (j, p) in chunk.iter_mut().enumerate() {
            let (mut re, mut im) = (0.0, 0.0);
            for i in 0..m {
                let x = bi * m * k + i * k + j;
                // conj(a) e
                re += a[x] * e[x] + ai[x] * ei[x];
                im += a[x] * ei[x] - ai[x] * e[x];
            }
            let r = re.hypot(im);
            if r > 0.0 && r.is_finite() {
                *p = (re / r, im / r);
                // a phase within rounding of ±1 is that sign (multiplying by 1 + 1e-17 i
                // would only add rounding to the outputs and cotangents)
                if im.abs() <= 1e-8 * r {
                    *p = (if re < 0.0 { -1.0 } else { 1.0 }, 0.0);
                }
            }
        }
    }
    Some(phases)
}

/// Writes a float into a tensor's data (NaN and infinities as their strings).
fn float_value(x: f64) -> Value {
    match x {
        x if x.is_nan() => Value::from("nan"),
        x if x == f64::INFINITY => Value::from("inf"),
        x if x == f64::NEG_INFINITY => Value::from("-inf"),
        x => Value::from(x),
    }
}

/// Multiplies column (or, with `rows`, row) `j` of each matrix of `t` by
/// `phases[batch, j]`, conjugated if `conj` (for a real tensor, by the phase's sign).
fn apply_phases(t: &mut Value, phases: &[(f64, f64)], rows: bool, conj: bool) {
    let Some((b, m, n)) = matrix_dims(t) else { return };
    let k = if rows { m } else { n };
    if phases.len() != b * k {
        return;
    }
    let imag = imag_values(t);
    let Some(re) = values(t) else { return };
    let mut out_re = re.clone();
    let mut out_im = imag.clone();
    for bi in 0..b {
        for i in 0..m {
            for j in 0..n {
                let (c, s0) = phases[bi * k + if rows { i } else { j }];
                let s = if conj { -s0 } else { s0 };
                let x = bi * m * n + i * n + j;
                if (c, s) == (1.0, 0.0) {
                    continue;
                }
                match (&imag, &mut out_im) {
                    (Some(im), Some(oi)) => {
                        out_re[x] = re[x] * c - im[x] * s;
                        oi[x] = re[x] * s + im[x] * c;
                    }
                    // a real tensor: only a sign can move it
                    _ => out_re[x] = if c < 0.0 { -re[x] } else { re[x] },
                }
            }
        }
    }
    t["data"] = Value::Array(out_re.into_iter().map(float_value).collect());
    if let Some(oi) = out_im {
        t["imag"] = Value::Array(oi.into_iter().map(float_value).collect());
    }
}

/// [`apply_phases`] for real signs (±1).
fn apply_signs(t: &mut Value, signs: &[f64], rows: bool) {
    let phases: Vec<(f64, f64)> = signs.iter().map(|&s| (s, 0.0)).collect();
    apply_phases(t, &phases, rows, false);
}

/// Aligns `got` (the runner's result) with `expected` for ops with a gauge. Returns the
/// case to run again when the cotangents had to be moved into the runner's gauge.
///
/// For a sign gauge: PyTorch's outputs are ours up to a sign matrix `S` (`Q_torch = Q S`,
/// `R_torch = S R`); our outputs are flipped by `S` for the comparison, and PyTorch's loss
/// `⟨G_Q, Q_torch⟩ + ⟨G_R, R_torch⟩ = ⟨G_Q S, Q⟩ + ⟨S G_R, R⟩`, so the cotangents move
/// into our gauge by the same flips; the gradient of the input is then the same. For
/// complex outputs `S` is a diagonal of unit phases `P`: `Q_torch = Q P`,
/// `R_torch = P* R`, and with the real inner product `Re tr(Gᴴ X)` the cotangents move
/// to `G_Q P*` and `P G_R`.
fn align_gauge(op: &str, case: &Value, expected: &Value, got: &mut Value) -> Option<Value> {
    match gauge_of(op) {
        Gauge::None => None,
        Gauge::Svd => align_svd(case, expected, got),
        Gauge::Eig { vectors } => align_eig(case, expected, got, vectors),
        Gauge::Signs(parts) => {
            // our outputs move by P (columns) and P* (rows: Q_torch R_torch = Q P P* R);
            // the cotangents by the conjugates, so that PyTorch's loss is unchanged
            let first = parts[0].output;
            let phases = column_phases(&expected["outputs"][first], &got["outputs"][first])?;
            if phases.iter().all(|&p| p == (1.0, 0.0)) {
                return None;
            }
            for p in parts {
                apply_phases(&mut got["outputs"][p.output], &phases, p.rows, p.rows);
            }
            if case["cotangents"].is_array() {
                let mut moved = case.clone();
                for p in parts {
                    apply_phases(&mut moved["cotangents"][p.output], &phases, p.rows, !p.rows);
                }
                Some(moved)
            } else {
                None
            }
        }
    }
}

/// The float values of a matrix output as `(batch, rows, cols, values)`.
fn matrix_of(t: &Value) -> Option<(usize, usize, usize, Vec<f64>)> {
    let (b, m, n) = matrix_dims(t)?;
    Some((b, m, n, values(t)?))
}

/// `true` if columns `k..` of each `(m x c)` matrix of `e` and `g` (column-major view of
/// row-major data: entry `(i, j)` at `i * c + j`) span one subspace: equal projectors.
fn same_completion(e: &[f64], g: &[f64], b: usize, m: usize, c: usize, k: usize, tol: f64) -> bool {
    (0..b).all(|bi| {
        let at = |v: &[f64], i: usize, j: usize| v[bi * m * c + i * c + j];
        (0..m).all(|r| {
            (0..m).all(|s| {
                let pe: f64 = (k..c).map(|j| at(e, r, j) * at(e, s, j)).sum();
                let pg: f64 = (k..c).map(|j| at(g, r, j) * at(g, s, j)).sum();
                (pe - pg).abs() <= tol
            })
        })
    })
}

/// Copies columns `k..` of each matrix of `from` into `to` (same shape, row-major).
fn copy_completion(from: &Value, to: &mut Value, k: usize) {
    let (Some((b, m, c)), Some(src)) = (matrix_dims(from), from["data"].as_array().cloned()) else {
        return;
    };
    let Some(dst) = to["data"].as_array_mut() else { return };
    if dst.len() != src.len() {
        return;
    }
    for bi in 0..b {
        for i in 0..m {
            for j in k..c {
                dst[bi * m * c + i * c + j] = src[bi * m * c + i * c + j].clone();
            }
        }
    }
}

/// The transpose of each matrix of a tensor value (shape and data).
fn transposed(t: &Value) -> Option<Value> {
    let (b, m, n, v) = matrix_of(t)?;
    let mut shape: Vec<Value> = t["shape"].as_array()?.clone();
    let r = shape.len();
    shape.swap(r - 2, r - 1);
    let data = t["data"].as_array()?;
    let mut out = Vec::with_capacity(v.len());
    for bi in 0..b {
        for j in 0..n {
            for i in 0..m {
                out.push(data[bi * m * n + i * n + j].clone());
            }
        }
    }
    let mut t2 = t.clone();
    t2["shape"] = Value::Array(shape);
    t2["data"] = Value::Array(out);
    Some(t2)
}

/// [`Gauge::Svd`]: signs of the singular pairs, then the full_matrices completion.
fn align_svd(case: &Value, expected: &Value, got: &mut Value) -> Option<Value> {
    let (eu, ev) = (&expected["outputs"][0], &expected["outputs"][2]);
    let (b, m, ku, ue) = matrix_of(eu)?;
    let (_, _, _, ug) = matrix_of(&got["outputs"][0])?;
    if matrix_dims(&got["outputs"][0])? != (b, m, ku) || ue.len() != ug.len() {
        return None;
    }
    let k = got["outputs"][1]["shape"].as_array()?.last()?.as_u64()? as usize;
    let tol = 10.0 * eps(eu["dtype"].as_str()?)?.sqrt();
    // phases (signs, for real factors) of the pairs j < k, from U's columns: U moves by
    // P, Vh by P* (A = U P P* S Vh)
    let mut phases = column_phases(eu, &got["outputs"][0])?;
    for (x, p) in phases.iter_mut().enumerate() {
        if x % ku.max(1) >= k {
            *p = (1.0, 0.0);
        }
    }
    let kv = matrix_dims(ev)?.1;
    let vphases: Vec<(f64, f64)> = (0..b * kv)
        .map(|x| {
            let (bi, j) = (x / kv.max(1), x % kv.max(1));
            if j < k {
                phases[bi * ku + j]
            } else {
                (1.0, 0.0)
            }
        })
        .collect();
    apply_phases(&mut got["outputs"][0], &phases, false, false);
    apply_phases(&mut got["outputs"][2], &vphases, true, true);
    // the completion: U's columns k.., Vh's rows k.. (V's columns)
    if ku > k {
        let (_, _, _, ug) = matrix_of(&got["outputs"][0])?;
        if same_completion(&ue, &ug, b, m, ku, k, tol) {
            copy_completion(eu, &mut got["outputs"][0], k);
        }
    }
    if kv > k {
        let (evt, gvt) = (transposed(ev)?, transposed(&got["outputs"][2])?);
        let (_, n, _, ve) = matrix_of(&evt)?;
        let (_, _, _, vg) = matrix_of(&gvt)?;
        if same_completion(&ve, &vg, b, n, kv, k, tol) {
            let mut gvt = gvt;
            copy_completion(&evt, &mut gvt, k);
            got["outputs"][2] = transposed(&gvt)?;
        }
    }
    if phases.iter().all(|&p| p == (1.0, 0.0)) || !case["cotangents"].is_array() {
        return None;
    }
    let mut moved = case.clone();
    apply_phases(&mut moved["cotangents"][0], &phases, false, true);
    apply_phases(&mut moved["cotangents"][2], &vphases, true, false);
    Some(moved)
}

/// The complex entries of a tensor value, `(re, im)` (zero imaginary parts for a real one).
fn complex_values(t: &Value) -> Option<Vec<(f64, f64)>> {
    let re = values(t)?;
    let im = imag_values(t).unwrap_or_else(|| vec![0.0; re.len()]);
    (im.len() == re.len()).then(|| re.into_iter().zip(im).collect())
}

/// `t` with its last dim permuted per matrix (or vector) of the batch: entry `j` of the
/// result is entry `perms[batch][j]` of `t` (`rows` entries per batch item before the
/// last dim: 1 for vectors, `n` for `n x n` matrices).
fn permute_last(t: &Value, perms: &[Vec<usize>], rows: usize) -> Option<Value> {
    let data = t["data"].as_array()?.clone();
    let imag = t.get("imag").and_then(Value::as_array).cloned();
    let n = perms.first().map_or(0, Vec::len);
    let per = rows * n;
    let mut out = t.clone();
    let (mut d2, mut i2) = (data.clone(), imag.clone());
    for (b, perm) in perms.iter().enumerate() {
        for r in 0..rows {
            for (j, &src) in perm.iter().enumerate() {
                let (to, from) = (b * per + r * n + j, b * per + r * n + src);
                d2[to] = data.get(from)?.clone();
                if let (Some(i2), Some(im)) = (i2.as_mut(), imag.as_ref()) {
                    i2[to] = im.get(from)?.clone();
                }
            }
        }
    }
    out["data"] = Value::Array(d2);
    if let Some(i2) = i2 {
        out["imag"] = Value::Array(i2);
    }
    Some(out)
}

/// The inverse of each permutation.
fn inverses(perms: &[Vec<usize>]) -> Vec<Vec<usize>> {
    perms
        .iter()
        .map(|p| {
            let mut inv = vec![0; p.len()];
            for (j, &o) in p.iter().enumerate() {
                inv[o] = j;
            }
            inv
        })
        .collect()
}

/// [`Gauge::Eig`]: each of PyTorch's eigenvalues (in its order) takes the nearest of ours
/// not yet taken; our eigenvalues and eigenvectors are put in PyTorch's order, and the
/// eigenvectors' phases aligned as [`column_phases`] finds them. PyTorch's loss
/// `⟨G_w, w_t⟩ + ⟨G_V, V_t⟩` with `w_t = Π w`, `V_t = V Π P` moves the cotangents to
/// `Πᵀ G_w` and `G_V P* Πᵀ` (the permutation undone, the phases conjugated).
fn align_eig(case: &Value, expected: &Value, got: &mut Value, vectors: bool) -> Option<Value> {
    let (ew, gw) = (complex_values(&expected["outputs"][0])?, complex_values(&got["outputs"][0])?);
    let shape = expected["outputs"][0]["shape"].as_array()?;
    let n = shape.last()?.as_u64()? as usize;
    if ew.len() != gw.len() || n == 0 {
        return None;
    }
    let nb = ew.len() / n;
    let mut perms = Vec::with_capacity(nb);
    for b in 0..nb {
        let mut taken = vec![false; n];
        let mut perm = Vec::with_capacity(n);
        for t in 0..n {
            let (er, ei) = ew[b * n + t];
            let best = (0..n).filter(|&o| !taken[o]).min_by(|&x, &y| {
                let d = |o: usize| (gw[b * n + o].0 - er).hypot(gw[b * n + o].1 - ei);
                d(x).total_cmp(&d(y))
            })?;
            taken[best] = true;
            perm.push(best);
        }
        perms.push(perm);
    }
    got["outputs"][0] = permute_last(&got["outputs"][0], &perms, 1)?;
    let mut phases = vec![(1.0, 0.0); nb * n];
    if vectors {
        got["outputs"][1] = permute_last(&got["outputs"][1], &perms, n)?;
        phases = column_phases(&expected["outputs"][1], &got["outputs"][1])?;
        apply_phases(&mut got["outputs"][1], &phases, false, false);
    }
    if !case["cotangents"].is_array() {
        return None;
    }
    let back = inverses(&perms);
    let mut moved = case.clone();
    if !moved["cotangents"][0].is_null() {
        moved["cotangents"][0] = permute_last(&case["cotangents"][0], &back, 1)?;
    }
    if vectors && !moved["cotangents"][1].is_null() {
        let mut g = case["cotangents"][1].clone();
        apply_phases(&mut g, &phases, false, true);
        moved["cotangents"][1] = permute_last(&g, &back, n)?;
    }
    Some(moved)
}

/// Runs one fixture; `Err` says what differs.
fn check(fixture: &Value) -> Result<(), String> {
    let case = &fixture["case"];
    let expected = &fixture["expected"];
    let op = case["op"].as_str().unwrap_or("?");
    let run = |c: &Value| -> Result<Value, String> {
        serde_json::from_str(&run_line(&c.to_string()))
            .map_err(|e| format!("the runner's answer is not JSON: {e}"))
    };
    // an op with a gauge, expected to succeed, with cotangents: its forward alone first,
    // to find the gauge and move the cotangents into it before any backward sees them (a
    // cotangent in PyTorch's phases is, in ours, a phase-dependent loss, which complex
    // eigh refuses)
    let gauged = gauge_of(op) != Gauge::None
        && expected.get("error").is_none()
        && case["cotangents"].is_array();
    let forward_only = |c: &Value| {
        let mut c = c.clone();
        if let Some(o) = c.as_object_mut() {
            o.remove("cotangents");
        }
        c
    };
    let mut got = run(&if gauged { forward_only(case) } else { case.clone() })?;
    if gauged {
        let moved = align_gauge(op, case, expected, &mut got).unwrap_or_else(|| case.clone());
        got = run(&moved)?;
        let _ = align_gauge(op, &moved, expected, &mut got);
    }
    if got["id"] != case["id"] {
        return Err(format!("answered with id {}", got["id"]));
    }
    if let Some(err) = expected.get("error") {
        let kind = &got["error"]["kind"];
        return if kind == &err["kind"] {
            Ok(())
        } else {
            Err(format!(
                "PyTorch raised ({}), expected kind {}; the runner answered {}",
                err["torch"], err["kind"], got
            ))
        };
    }
    if !got["error"].is_null() {
        return Err(format!("unexpected error: {}", got["error"]));
    }
    if !gauged {
        if let Some(moved) = align_gauge(op, case, expected, &mut got) {
            // the rerun answers in our gauge again: align its outputs the same way (its
            // cotangents are already moved, so the case it would return is not needed)
            got = run(&moved)?;
            let _ = align_gauge(op, &moved, expected, &mut got);
        }
    }
    let deltas = &expected["delta"];
    compare_list("outputs", &expected["outputs"], &got["outputs"], &deltas["outputs"])?;
    match (expected.get("grads"), got.get("grads")) {
        (None, None) => Ok(()),
        (Some(e), Some(a)) => compare_list("grads", e, a, &deltas["grads"]),
        (e, a) => Err(format!("grads: expected {e:?}, got {a:?}")),
    }?;
    // forward mode (cases of ops without a gauge: the fixture script makes none for the
    // others)
    match (expected.get("jvps"), got.get("jvps")) {
        (None, None) => Ok(()),
        (Some(e), Some(a)) => compare_list("jvps", e, a, &deltas["jvps"]),
        (e, a) => Err(format!("jvps: expected {e:?}, got {a:?}")),
    }
}

/// The per-op table, in the runner's op order (fixtures of unknown ops last).
fn table(results: &BTreeMap<String, (usize, usize)>) -> String {
    let mut out = String::from("| op | cases | passed |\n|---|---:|---:|\n");
    let names = op_names();
    let known = names.iter().map(|s| (*s).to_string());
    let unknown = results.keys().filter(|k| !names.contains(&k.as_str())).cloned();
    for op in known.chain(unknown) {
        let (n, p) = results.get(&op).copied().unwrap_or((0, 0));
        out.push_str(&format!("| `{op}` | {n} | {p} |\n"));
    }
    let (n, p) = results.values().fold((0, 0), |(a, b), (n, p)| (a + n, b + p));
    out.push_str(&format!("| **all {} ops** | **{n}** | **{p}** |\n", results.len()));
    out
}

const START: &str =
    "<!-- parity-table:start (written by the fixtures test; PARITY_BLESS=1 updates it) -->\n";
const END: &str = "<!-- parity-table:end -->";

#[test]
fn fixtures_match_pytorch() {
    let mut results: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for (op, path) in common::fixture_files() {
        for fixture in common::read_fixtures(&path) {
            let id = fixture["case"]["id"].as_str().unwrap_or("?").to_string();
            let entry = results.entry(op.clone()).or_default();
            entry.0 += 1;
            match check(&fixture) {
                Ok(()) => entry.1 += 1,
                Err(e) => failures.push(format!("{id}: {e}")),
            }
        }
    }
    let table = table(&results);
    eprintln!("\nparity with PyTorch, per op:\n\n{table}");

    let docs = common::workspace_root().join("docs").join("parity.md");
    let text = std::fs::read_to_string(&docs).unwrap_or_default();
    let section = format!("{START}\n{table}\n{END}");
    let current =
        text.find(START).and_then(|s| text[s..].find(END).map(|e| (s, s + e + END.len())));
    if failures.is_empty() {
        match current {
            Some((s, e)) if text[s..e] != section => {
                if std::env::var_os("PARITY_BLESS").is_some() {
                    let updated = format!("{}{section}{}", &text[..s], &text[e..]);
                    std::fs::write(&docs, updated).expect("docs/parity.md is writable");
                } else {
                    failures.push(
                        "docs/parity.md: the coverage table is out of date; run the test with \
                         PARITY_BLESS=1 to update it"
                            .to_string(),
                    );
                }
            }
            Some(_) => {}
            None => failures.push(format!(
                "docs/parity.md: no coverage table between the markers {START:?} and {END:?}"
            )),
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn tolerance_rule() {
    let t = |e: f64, a: f64, d: Option<f64>, dtype: &str| {
        let v = |x: f64| serde_json::json!({"dtype": dtype, "shape": [1], "data": [x]});
        compare_tensor("t", &v(e), &v(a), d, 4.0).is_ok()
    };
    assert!(t(1.0, 1.0 + 4.0 * f64::EPSILON, None, "f64"));
    assert!(!t(1.0, 1.0 + 1e-12, None, "f64"));
    // δ from f32 scaled to f64: 1e-6 in f32 allows ~7.5e-15 in f64
    assert!(t(1.0, 1.0 + 5e-15, Some(1e-6), "f64"));
    assert!(t(1.0, 1.0 + 3e-6, Some(1e-6), "f32"));
    assert!(!t(1.0, 1.0 + 1e-5, Some(1e-6), "f32"));
}

#[test]
fn sign_gauge_is_aligned_for_outputs_and_cotangents() {
    // a QR fixture seen through another sign gauge: PyTorch's Q with columns flipped by S
    // and R's rows by S, and cotangents flipped alike (the loss, hence the input's
    // gradient, is then unchanged): it must pass, through align_gauge and a rerun with
    // the cotangents moved into the runner's gauge
    let path = common::fixture_files()
        .into_iter()
        .find(|(op, _)| op == "linalg.qr")
        .map(|(_, p)| p)
        .expect("qr fixtures");
    let mut tried = 0;
    for fixture in common::read_fixtures(&path) {
        let id = fixture["case"]["id"].as_str().unwrap_or("?").to_string();
        if fixture["expected"].get("error").is_some() || fixture["case"]["cotangents"].is_null() {
            continue;
        }
        let q = &fixture["expected"]["outputs"][0];
        let Some((b, _, k)) = matrix_dims(q) else { continue };
        if b * k == 0 {
            continue;
        }
        let signs: Vec<f64> = (0..b * k).map(|i| if i % 2 == 0 { -1.0 } else { 1.0 }).collect();
        let mut flipped = fixture.clone();
        apply_signs(&mut flipped["expected"]["outputs"][0], &signs, false);
        apply_signs(&mut flipped["expected"]["outputs"][1], &signs, true);
        apply_signs(&mut flipped["case"]["cotangents"][0], &signs, false);
        apply_signs(&mut flipped["case"]["cotangents"][1], &signs, true);
        assert!(check(&flipped).is_ok(), "{id}: {:?}", check(&flipped));
        // without moving the cotangents the gradients differ: the check must see it
        let mut outputs_only = fixture.clone();
        apply_signs(&mut outputs_only["expected"]["outputs"][0], &signs, false);
        apply_signs(&mut outputs_only["expected"]["outputs"][1], &signs, true);
        assert!(check(&outputs_only).is_err(), "{id}: a stale gradient passed");
        tried += 1;
    }
    assert!(tried >= 5, "{tried} cases");
}
