//! The matrix exponential by scaling and squaring with Padé approximants (Higham 2005,
//! "The scaling and squaring method for the matrix exponential revisited", SIAM J. Matrix
//! Anal. Appl. 26(4), Algorithm 2.3), batched.
//!
//! Per matrix: the degree `m ∈ {3, 5, 7, 9, 13}` (f32: `{3, 5, 7}`) is the smallest whose
//! bound `θ_m` the 1-norm does not exceed; above the largest, `A` is scaled by `2⁻ˢ` so
//! that it does, and the approximant is squared `s` times. The approximant
//! `r_m(A) = (V − U)⁻¹ (V + U)` (`U` the odd part, `V` the even part) is one LU solve.
//! Products and the solve run through own loops for small matrices (compiled for the
//! CPU's FMA and vector width by `pulp`'s dispatch, unrolled for some orders) and faer's
//! GEMM and LU above. A matrix with a NaN or an infinity gives NaN everywhere (as
//! PyTorch), without a loop; a `1 x 1` matrix is the scalar exponential (as PyTorch:
//! `exp(inf) = inf`).
//!
//! The Fréchet derivative `L(X, E) = [exp([[X, E], [0, X]])]₁₂` (the VJP of the
//! exponential) is the same algorithm on the `2n x 2n` block matrix, with its structure
//! used: every polynomial and rational function of `M = [[X, E], [0, X]]` is
//! `[[p(X), D], [0, p(X)]]`, so each is held as the pair `(p(X), D)`. A product of pairs is
//! three `n x n` products (`(P₁P₂, P₁D₂ + D₁P₂)`) instead of the eight of a `2n x 2n`
//! product, and the solve with `[[Q, Q'], [0, Q]]` factorises `Q` once (Al-Mohy and Higham
//! 2009, "Computing the Fréchet derivative of the matrix exponential, with an application
//! to condition number estimation", SIAM J. Matrix Anal. Appl. 30(4)). As `L` is linear in
//! `E`, `E` is first scaled by a power of two to about `X`'s 1-norm (and the result scaled
//! back, both exactly): the degree and the number of squarings are chosen from the block
//! matrix's 1-norm as for any matrix, and a large `E` (the cotangent of a sum over a large
//! matrix has 1-norm `n`) no longer adds squarings.

use faer::linalg::matmul::matmul as faer_matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, MatMut, MatRef, Par};

use super::lanes::LaneBits;
use super::order::by_order_simd;
use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem};
use crate::layout::Layout;

/// Up to this order products and the solve run through the own loops.
const SMALL_N: usize = 24;
/// From this order faer may use every thread on one matrix.
const PAR_N: usize = 256;

/// Higham's `θ_m` for double precision, degrees 3, 5, 7, 9, 13 (his published digits).
#[allow(clippy::excessive_precision)]
const THETA_F64: [(usize, f64); 5] = [
    (3, 1.495_585_217_958_292e-2),
    (5, 2.539_398_330_063_230e-1),
    (7, 9.504_178_996_162_932e-1),
    (9, 2.097_847_961_257_068e0),
    (13, 5.371_920_351_148_152e0),
];
/// Higham's `θ_m` for single precision, degrees 3, 5, 7.
#[allow(clippy::excessive_precision)]
const THETA_F32: [(usize, f64); 3] =
    [(3, 4.258_730_016_922_831e-1), (5, 1.880_152_677_804_762e0), (7, 3.925_724_783_138_660e0)];

/// Padé coefficients `b_0..b_m`.
pub(super) fn coefficients(m: usize) -> &'static [f64] {
    match m {
        3 => &[120.0, 60.0, 12.0, 1.0],
        5 => &[30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
        7 => &[17_297_280.0, 8_648_640.0, 1_995_840.0, 277_200.0, 25200.0, 1512.0, 56.0, 1.0],
        9 => &[
            17_643_225_600.0,
            8_821_612_800.0,
            2_075_673_600.0,
            302_702_400.0,
            30_270_240.0,
            2_162_160.0,
            110_880.0,
            3960.0,
            90.0,
            1.0,
        ],
        _ => &[
            64_764_752_532_480_000.0,
            32_382_376_266_240_000.0,
            7_771_770_303_897_600.0,
            1_187_353_796_428_800.0,
            129_060_195_264_000.0,
            10_559_470_521_600.0,
            670_442_572_800.0,
            33_522_128_640.0,
            1_323_241_920.0,
            40_840_800.0,
            960_960.0,
            16380.0,
            182.0,
            1.0,
        ],
    }
}

/// Working buffers of one Padé evaluation, each of `K` parts of `n * n`: powers `A²`,
/// `A⁴`, `A⁶`, `U`, `V`, and two scratch.
const BUFS: usize = 7;

/// `c = a b` (or `c += a b` if `acc_in`) for column-major `n x n` blocks (`N` is `n` when
/// not 0: the loops unroll).
#[inline(always)]
fn mm<T: LinalgElem + LaneBits, const N: usize>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    n: usize,
    acc_in: bool,
    par: Par,
) {
    let n = if N > 0 { N } else { n };
    if N > 0 {
        // each column of c accumulated in registers
        for j in 0..N {
            let mut acc = [T::ZERO; N];
            if acc_in {
                acc.copy_from_slice(&c[j * N..(j + 1) * N]);
            }
            for k in 0..N {
                let bkj = b[j * N + k];
                let ak = &a[k * N..(k + 1) * N];
                for i in 0..N {
                    acc[i] = ak[i].mul_add(bkj, acc[i]);
                }
            }
            c[j * N..(j + 1) * N].copy_from_slice(&acc);
        }
    } else if n <= SMALL_N {
        let nn = n * n;
        let (c, a, b) = (&mut c[..nn], &a[..nn], &b[..nn]);
        if !acc_in {
            c.fill(T::ZERO);
        }
        for j in 0..n {
            let cj = &mut c[j * n..(j + 1) * n];
            for k in 0..n {
                let bkj = b[j * n + k];
                for (x, &y) in cj.iter_mut().zip(&a[k * n..(k + 1) * n]) {
                    *x += y * bkj;
                }
            }
        }
    } else {
        faer_matmul(
            MatMut::from_column_major_slice_mut(c, n, n),
            if acc_in { Accum::Add } else { Accum::Replace },
            MatRef::from_column_major_slice(a, n, n),
            MatRef::from_column_major_slice(b, n, n),
            T::ONE,
            par,
        );
    }
}

/// The product of `K`-part values: `c = a b` for `K = 1`; for pairs,
/// `(c, c') = (a b, a b' + a' b)`.
#[inline(always)]
fn mmk<T: LinalgElem + LaneBits, const N: usize, const K: usize>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    n: usize,
    par: Par,
) {
    let nn = n * n;
    mm::<T, N>(&mut c[..nn], &a[..nn], &b[..nn], n, false, par);
    if K == 2 {
        let c1 = &mut c[nn..2 * nn];
        mm::<T, N>(c1, &a[..nn], &b[nn..2 * nn], n, false, par);
        mm::<T, N>(c1, &a[nn..2 * nn], &b[..nn], n, true, par);
    }
}

/// `out = Σ_k c_k P_k + c_I I` over `K`-part values (the identity only in the first part:
/// the identity of the block matrix is the pair `(I, 0)`), in one pass.
#[inline(always)]
fn combo<T: LinalgElem + LaneBits>(out: &mut [T], terms: &[(f64, &[T])], c_eye: f64, n: usize) {
    let len = out.len();
    let c: [T; 4] = std::array::from_fn(|i| terms.get(i).map_or(T::ZERO, |t| T::of(t.0)));
    let p = |i: usize| &terms[i].1[..len];
    match terms.len() {
        1 => {
            for (x, &a) in out.iter_mut().zip(p(0)) {
                *x = c[0] * a;
            }
        }
        2 => {
            for ((x, &a), &b) in out.iter_mut().zip(p(0)).zip(p(1)) {
                *x = b.mul_add(c[1], c[0] * a);
            }
        }
        3 => {
            for (((x, &a), &b), &d) in out.iter_mut().zip(p(0)).zip(p(1)).zip(p(2)) {
                *x = d.mul_add(c[2], b.mul_add(c[1], c[0] * a));
            }
        }
        4 => {
            let it = out.iter_mut().zip(p(0)).zip(p(1)).zip(p(2)).zip(p(3));
            for ((((x, &a), &b), &d), &e) in it {
                *x = e.mul_add(c[3], d.mul_add(c[2], b.mul_add(c[1], c[0] * a)));
            }
        }
        _ => out.fill(T::ZERO),
    }
    for j in 0..n {
        out[j * n + j] += T::of(c_eye);
    }
}

/// The first row `p >= k` of largest magnitude in column `k` of the column-major `n x n`
/// block `q`, swapped with row `k`.
#[inline(always)]
fn pivot<T: LinalgElem>(q: &mut [T], n: usize, k: usize) -> usize {
    let mut p = k;
    let mut best = q[k * n + k].abs();
    for i in k + 1..n {
        let v = q[k * n + i].abs();
        if v > best {
            best = v;
            p = i;
        }
    }
    if p != k {
        for j in 0..n {
            q.swap(j * n + k, j * n + p);
        }
    }
    p
}

/// LU with partial pivoting of the column-major `n x n` block `q` in place (unit lower
/// `L` below the diagonal, `U` on and above), row interchanges in `piv`.
#[inline(always)]
fn lu_small<T: LinalgElem + LaneBits, const N: usize>(q: &mut [T], n: usize, piv: &mut [usize]) {
    if N > 0 {
        // the updates run over whole columns (constant length, no masked accesses), with
        // the multipliers of the rows at and above the pivot zero
        for k in 0..N {
            piv[k] = pivot(q, N, k);
            let d = q[k * N + k];
            let inv = if d == T::ZERO { T::ZERO } else { T::ONE / d };
            let l: [T; N] =
                std::array::from_fn(|i| if i > k { q[k * N + i] * inv } else { T::ZERO });
            q[k * N + k + 1..(k + 1) * N].copy_from_slice(&l[k + 1..]);
            for j in k + 1..N {
                let col = &mut q[j * N..(j + 1) * N];
                let f = -col[k];
                for (x, &li) in col.iter_mut().zip(&l) {
                    *x = li.mul_add(f, *x);
                }
            }
        }
        return;
    }
    for k in 0..n {
        piv[k] = pivot(q, n, k);
        let d = q[k * n + k];
        if d != T::ZERO {
            let inv = T::ONE / d;
            for i in k + 1..n {
                q[k * n + i] *= inv;
            }
        }
        let (left, right) = q.split_at_mut((k + 1) * n);
        let lk = &left[k * n + k + 1..k * n + n];
        for j in 0..n - k - 1 {
            let col = &mut right[j * n..(j + 1) * n];
            let f = -col[k];
            for (x, &l) in col[k + 1..].iter_mut().zip(lk) {
                *x = l.mul_add(f, *x);
            }
        }
    }
}

/// Solves `Q X = R` in place in `r` (`n x n`) with the factors of [`lu_small`]; `t`
/// (`n²`) is scratch.
#[inline(always)]
fn lu_solve_small<T: LinalgElem + LaneBits, const N: usize>(
    q: &[T],
    piv: &[usize],
    r: &mut [T],
    t: &mut [T],
    n: usize,
) {
    if N > 0 {
        // on the transpose, so that each step is a row operation over all N right-hand
        // sides (contiguous, of constant length)
        let t = &mut t[..N * N];
        for c in 0..N {
            for i in 0..N {
                t[i * N + c] = r[c * N + i];
            }
        }
        for (k, &p) in piv.iter().enumerate().take(N) {
            if p != k {
                for c in 0..N {
                    t.swap(k * N + c, p * N + c);
                }
            }
        }
        for k in 0..N {
            let rk: [T; N] = std::array::from_fn(|c| t[k * N + c]);
            for i in k + 1..N {
                let l = -q[k * N + i];
                for (y, &x) in t[i * N..(i + 1) * N].iter_mut().zip(&rk) {
                    *y = x.mul_add(l, *y);
                }
            }
        }
        for k in (0..N).rev() {
            let d = q[k * N + k];
            let rk: [T; N] = std::array::from_fn(|c| t[k * N + c] / d);
            t[k * N..(k + 1) * N].copy_from_slice(&rk);
            for i in 0..k {
                let u = -q[k * N + i];
                for (y, &x) in t[i * N..(i + 1) * N].iter_mut().zip(&rk) {
                    *y = x.mul_add(u, *y);
                }
            }
        }
        for c in 0..N {
            for i in 0..N {
                r[c * N + i] = t[i * N + c];
            }
        }
        return;
    }
    for c in 0..n {
        let col = &mut r[c * n..(c + 1) * n];
        for (k, &p) in piv.iter().enumerate().take(n) {
            col.swap(k, p);
        }
        for k in 0..n {
            let x = -col[k];
            for (y, &l) in col[k + 1..].iter_mut().zip(&q[k * n + k + 1..k * n + n]) {
                *y = l.mul_add(x, *y);
            }
        }
        for k in (0..n).rev() {
            col[k] /= q[k * n + k];
            let x = -col[k];
            for (y, &u) in col[..k].iter_mut().zip(&q[k * n..k * n + k]) {
                *y = u.mul_add(x, *y);
            }
        }
    }
}

/// `p ← q⁻¹ p` for `K`-part values: for pairs, `[[Q, Q'], [0, Q]]⁻¹ [[P, P'], [0, P]]` is
/// `(R, Q⁻¹ (P' − Q' R))` with `R = Q⁻¹ P` (one factorisation). `x` is scratch.
#[inline(always)]
fn solve<T: LinalgElem + LaneBits, const N: usize, const K: usize>(
    q: &mut [T],
    p: &mut [T],
    x: &mut [T],
    n: usize,
    par: Par,
) {
    let nn = n * n;
    if N > 0 || n <= SMALL_N {
        let mut piv = [0usize; SMALL_N];
        lu_small::<T, N>(&mut q[..nn], n, &mut piv);
        lu_solve_small::<T, N>(&q[..nn], &piv, &mut p[..nn], x, n);
        if K == 2 {
            mm::<T, N>(&mut x[..nn], &q[nn..2 * nn], &p[..nn], n, false, par);
            for (y, &z) in p[nn..2 * nn].iter_mut().zip(&x[..nn]) {
                *y -= z;
            }
            lu_solve_small::<T, N>(&q[..nn], &piv, &mut p[nn..2 * nn], x, n);
        }
    } else {
        let lu = MatRef::from_column_major_slice(&q[..nn], n, n).partial_piv_lu();
        let (p0, p1) = p.split_at_mut(nn);
        lu.solve_in_place(MatMut::from_column_major_slice_mut(p0, n, n));
        if K == 2 {
            faer_matmul(
                MatMut::from_column_major_slice_mut(&mut p1[..nn], n, n),
                Accum::Add,
                MatRef::from_column_major_slice(&q[nn..2 * nn], n, n),
                MatRef::from_column_major_slice(p0, n, n),
                -T::ONE,
                par,
            );
            lu.solve_in_place(MatMut::from_column_major_slice_mut(&mut p1[..nn], n, n));
        }
    }
}

/// The Padé degree and the number of squarings for a (block) matrix of 1-norm `norm`.
///
/// A matrix of finite entries whose column sums overflow has an infinite `norm`: its true
/// norm is below `n` times the largest finite value, so the squarings are capped at what
/// that needs for any `n < 2⁶⁴` (an uncapped count, `i32::MAX`, ran for ever).
pub(super) fn degree<T: LinalgElem>(norm: f64) -> (usize, i32) {
    let f32 = T::EPSILON.to_f64() > 1e-10;
    let thetas: &[(usize, f64)] = if f32 { &THETA_F32 } else { &THETA_F64 };
    for &(deg, th) in thetas {
        if norm <= th {
            return (deg, 0);
        }
    }
    let (deg, th) = thetas[thetas.len() - 1];
    let cap = if f32 { 128.0 + 64.0 } else { 1024.0 + 64.0 };
    (deg, (norm / th).log2().ceil().clamp(0.0, cap) as i32)
}

/// The Padé degree and number of squarings of Al-Mohy and Higham (2009, "A new scaling
/// and squaring algorithm for the matrix exponential", SIAM J. Matrix Anal. Appl. 31,
/// Algorithm 5.1) for the `n x n` matrix `a`, or `None` where its powers overflow. The
/// degrees and the squarings follow `d_k = ‖Aᵏ‖₁^{1/k}` (k = 4, 6, 8, 10) instead of
/// `‖A‖₁`: a degree `m` below the largest where `max(d₄, d₆)` (`max(d₆, d₈)` above 5)
/// is within `θ_m`, else the largest with `s = ⌈log₂(η / θ_m)⌉`,
/// `η = min(max(d₆, d₈), max(d₈, d₁₀))`; each with `ℓ`, the squarings more that the
/// bound on the Padé error's leading term, `|c_{2m+1}| ‖|2⁻ˢA|^{2m+1}‖₁ / ‖2⁻ˢA‖₁ ≤ u`,
/// asks for (a lower degree is taken only where `ℓ = 0`).
///
/// Why: `‖A‖₁` overestimates how far a non-normal matrix must be scaled (a nilpotent `A`
/// with a large entry needs no scaling at all), and each squaring doubles the rounding
/// error of the scaled approximant's diagonal: `exp([[0, 0], [1e20, 0]])` came out NaN
/// (as PyTorch gets `I + A`); with the `d_k` (zero from `k = 2`) it is `I + A` to the
/// last bit or two.
fn squarings<T: LinalgElem + LaneBits, const N: usize>(
    a: &[T],
    n: usize,
    tmp: &mut [T],
    par: Par,
) -> Option<(usize, i32)> {
    let nn = n * n;
    let (a2, rest) = tmp.split_at_mut(nn);
    let (a4, rest) = rest.split_at_mut(nn);
    let (a6, rest) = rest.split_at_mut(nn);
    let (a8, rest) = rest.split_at_mut(nn);
    let a10 = &mut rest[..nn];
    mm::<T, N>(a2, &a[..nn], &a[..nn], n, false, par);
    mm::<T, N>(a4, a2, a2, n, false, par);
    mm::<T, N>(a6, a4, a2, n, false, par);
    mm::<T, N>(a8, a4, a4, n, false, par);
    mm::<T, N>(a10, a6, a4, n, false, par);
    let d = |x: &[T], k: i32| col_sums(x, n, None).powf(1.0 / f64::from(k));
    let (d4, d6, d8, d10) = (d(a4, 4), d(a6, 6), d(a8, 8), d(a10, 10));
    if ![d4, d6, d8, d10].iter().all(|x| x.is_finite()) {
        return None;
    }
    let norm = col_sums(a, n, None);
    if norm == 0.0 || !norm.is_finite() {
        return None;
    }
    // log₂ ‖|A|ᵖ‖₁: the largest entry of 1ᵀ|A|ᵖ (non-negative), by p products with |A|,
    // rescaled as it goes; −inf where it is zero
    let log_abs_pow = |p: usize| -> f64 {
        let mut v = vec![1.0f64; n];
        let mut log_scale = 0.0f64;
        for _ in 0..p {
            let w: Vec<f64> =
                (0..n).map(|j| (0..n).map(|i| v[i] * a[j * n + i].abs().to_f64()).sum()).collect();
            let top = w.iter().fold(0.0f64, |x, &y| x.max(y));
            if top == 0.0 {
                return f64::NEG_INFINITY;
            }
            log_scale += top.log2();
            v = w.iter().map(|x| x / top).collect();
        }
        log_scale
    };
    let log_u = (T::EPSILON.to_f64() / 2.0).log2();
    // ℓ for degree m after s squarings
    let ell = |m: usize, s: i32| -> f64 {
        let p = 2 * m + 1;
        // log₂ |c_{2m+1}| = log₂ (m!)² / ((2m)! (2m+1)!)
        let lf = |k: usize| (1..=k).map(|i| (i as f64).log2()).sum::<f64>();
        let log_c = 2.0 * lf(m) - lf(2 * m) - lf(p);
        let log_alpha = log_c + log_abs_pow(p) - norm.log2() - f64::from(s) * (p as f64 - 1.0);
        ((log_alpha - log_u) / (2.0 * m as f64)).ceil().max(0.0)
    };
    let thetas: &[(usize, f64)] = if T::EPSILON.to_f64() > 1e-10 { &THETA_F32 } else { &THETA_F64 };
    let (&(top, th), lower) = thetas.split_last()?;
    for &(m, th_m) in lower {
        let eta = if m <= 5 { d4.max(d6) } else { d6.max(d8) };
        if eta <= th_m && ell(m, 0) == 0.0 {
            return Some((m, 0));
        }
    }
    let eta = d6.max(d8).min(d8.max(d10));
    let s = if eta > th { (eta / th).log2().ceil() as i32 } else { 0 };
    let more = ell(top, s);
    more.is_finite().then(|| (top, s + more as i32))
}

/// Multiplies `a` by `2⁻ˢ` exactly (but for underflow), in steps whose factors are normal
/// numbers of `T` (a single factor of `2⁻¹¹⁰⁰` would be zero).
fn scale_down<T: LinalgElem>(a: &mut [T], s: i32) {
    let step = if T::EPSILON.to_f64() > 1e-10 { 100 } else { 1000 };
    let mut left = s;
    while left > 0 {
        let k = left.min(step);
        let f = T::of(2.0f64.powi(-k));
        for x in a.iter_mut() {
            *x *= f;
        }
        left -= k;
    }
}

/// `exp` of the `K`-part value `a` (finite, of block 1-norm `norm`) in place, by scaling
/// and squaring; `tmp` holds [`BUFS`] values of `K` parts.
#[inline(always)]
fn pade<T: LinalgElem + LaneBits, const N: usize, const K: usize>(
    a: &mut [T],
    n: usize,
    norm: f64,
    tmp: &mut [T],
    par: Par,
) {
    let n = if N > 0 { N } else { n };
    let sz = K * n * n;
    let (mut m, mut s) = degree::<T>(norm);
    if K == 1 && s > 0 {
        // taken where it saves more than two squarings: the matrices whose norm misleads
        // (a squaring or two less changes the last bits of ordinary results, not their
        // accuracy, and those bits are what the PyTorch fixtures compare)
        if let Some((m2, s2)) = squarings::<T, N>(a, n, tmp, par) {
            if s2 + 2 < s {
                (m, s) = (m2, s2);
            }
        }
    }
    scale_down(a, s);
    let (a2, rest) = tmp.split_at_mut(sz);
    let (a4, rest) = rest.split_at_mut(sz);
    let (a6, rest) = rest.split_at_mut(sz);
    let (u, rest) = rest.split_at_mut(sz);
    let (v, rest) = rest.split_at_mut(sz);
    let (w, rest) = rest.split_at_mut(sz);
    let x = &mut rest[..sz];
    let b = coefficients(m);
    mmk::<T, N, K>(a2, a, a, n, par);
    if m == 13 {
        mmk::<T, N, K>(a4, a2, a2, n, par);
        mmk::<T, N, K>(a6, a4, a2, n, par);
        // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
        combo(w, &[(b[13], a6), (b[11], a4), (b[9], a2)], 0.0, n);
        mmk::<T, N, K>(x, a6, w, n, par);
        combo(w, &[(1.0, x), (b[7], a6), (b[5], a4), (b[3], a2)], b[1], n);
        mmk::<T, N, K>(u, a, w, n, par);
        // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
        combo(w, &[(b[12], a6), (b[10], a4), (b[8], a2)], 0.0, n);
        mmk::<T, N, K>(x, a6, w, n, par);
        combo(v, &[(1.0, x), (b[6], a6), (b[4], a4), (b[2], a2)], b[0], n);
    } else {
        // powers A², A⁴, …, A^(m−1) in a2, a4, a6, x
        if m >= 5 {
            mmk::<T, N, K>(a4, a2, a2, n, par);
        }
        if m >= 7 {
            mmk::<T, N, K>(a6, a4, a2, n, par);
        }
        if m >= 9 {
            mmk::<T, N, K>(x, a6, a2, n, par);
        }
        let pows: [&[T]; 4] = [a2, a4, a6, x];
        let k = (m - 1) / 2; // number of even powers used
        let odd: [(f64, &[T]); 4] = std::array::from_fn(|i| (b[(2 * i + 3).min(m)], pows[i]));
        combo(w, &odd[..k], b[1], n);
        mmk::<T, N, K>(u, a, w, n, par);
        let even: [(f64, &[T]); 4] = std::array::from_fn(|i| (b[(2 * i + 2).min(m)], pows[i]));
        combo(v, &even[..k], b[0], n);
    }
    // r = (V − U)⁻¹ (V + U)
    for ((p, q), (&uu, &vv)) in a.iter_mut().zip(w.iter_mut()).zip(u.iter().zip(v.iter())) {
        *p = vv + uu;
        *q = vv - uu;
    }
    solve::<T, N, K>(w, a, x, n, par);
    for _ in 0..s {
        u.copy_from_slice(a);
        mmk::<T, N, K>(a, u, u, n, par);
    }
}

/// The largest column sum of `|a|` (`n x n`, column-major), and each column's sum into
/// `sums` when given.
fn col_sums<T: LinalgElem>(a: &[T], n: usize, mut sums: Option<&mut [f64]>) -> f64 {
    let mut best = 0.0f64;
    for j in 0..n {
        let s = a[j * n..(j + 1) * n].iter().fold(0.0f64, |s, x| s + x.abs().to_f64());
        if let Some(sums) = sums.as_deref_mut() {
            sums[j] = s;
        }
        best = best.max(s);
    }
    best
}

/// `exp(A)` of the column-major `n x n` block `a`, in place; `tmp` is scratch.
#[inline(always)]
fn expm_one<T: LinalgElem + LaneBits, const N: usize>(
    a: &mut [T],
    n: usize,
    tmp: &mut Vec<T>,
    par: Par,
) {
    if n == 1 {
        // the scalar exponential (as PyTorch: exp(inf) = inf)
        a[0] = a[0].exp();
        return;
    }
    if a.iter().any(|x| !x.is_finite()) {
        a.fill(T::NAN);
        return;
    }
    let norm = col_sums(a, n, None);
    tmp.resize(BUFS * n * n, T::ZERO);
    pade::<T, N, 1>(a, n, norm, tmp, par);
}

/// `L(X, E) = [exp([[X, E], [0, X]])]₁₂` into `dst` (`n x n`), for `x` and `e` loaded one
/// after the other at the start of `work` (`(BUFS + 1) 2 n²`: the pair, then the Padé
/// buffers; overwritten).
#[inline(always)]
fn frechet_one<T: LinalgElem + LaneBits, const N: usize>(
    work: &mut [T],
    dst: &mut [T],
    n: usize,
    par: Par,
) {
    let nn = n * n;
    let (xe, tmp) = work.split_at_mut(2 * nn);
    if xe.iter().any(|x| !x.is_finite()) {
        // as the exponential of the block matrix
        dst.fill(T::NAN);
        return;
    }
    let mut sums = [0.0f64; 2 * SMALL_N];
    let mut big = Vec::new();
    let (sx, se) = if n <= SMALL_N {
        sums.split_at_mut(n)
    } else {
        big.resize(2 * n, 0.0);
        big.split_at_mut(n)
    };
    let (x, e) = xe.split_at_mut(nn);
    let nx = col_sums(x, n, Some(sx));
    let ne = col_sums(e, n, Some(&mut se[..n]));
    if ne == 0.0 {
        dst.fill(T::ZERO);
        return;
    }
    // L is linear in E: scale E by 2⁻ᵏ to about X's 1-norm (exactly), and L back by 2ᵏ
    let kmax = if T::EPSILON.to_f64() > 1e-10 { 120 } else { 1000 };
    let target = if nx > 0.0 { nx } else { 1.0 };
    let k = ((ne / target).log2().round() as i32).clamp(-kmax, kmax);
    let f = 2.0f64.powi(-k);
    for y in e.iter_mut() {
        *y *= T::of(f);
    }
    // the block matrix's 1-norm: its column j + n sums column j of E and of X (E's sums
    // again after the scaling where they overflowed before it)
    if ne.is_finite() {
        for v in &mut se[..n] {
            *v *= f;
        }
    } else {
        col_sums(e, n, Some(&mut se[..n]));
    }
    let norm = sx.iter().zip(&se[..n]).fold(0.0f64, |m, (a, b)| m.max(a + b));
    pade::<T, N, 2>(xe, n, norm, tmp, par);
    let back = T::of(2.0f64.powi(k));
    for (d, &y) in dst.iter_mut().zip(&xe[nn..]) {
        *d = y * back;
    }
}

/// `exp(A)` of each square matrix of `a: (*, n, n)`; column-major results, with their
/// layout.
pub(crate) fn matrix_exp<T: LinalgElem + LaneBits>(a: &[T], l: &Layout) -> (Vec<T>, Layout) {
    struct Kernel<'a, T, const N: usize> {
        dst: &'a mut [T],
        tmp: &'a mut Vec<T>,
        n: usize,
        par: Par,
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            expm_one::<T, N>(self.dst, self.n, self.tmp, self.par);
        }
    }
    let b = Batch::of(l);
    let n = b.n;
    let mut out = crate::backend::cpu::pool::filled(b.len() * n * n, T::ZERO);
    let work = 20 * n * n * n;
    for_each_matrix(&mut out, n * n, work, n >= PAR_N, |i, dst, tmp, par| {
        b.load(a, i, dst);
        // compiled by `pulp`'s dispatch (the CPU's FMA and vector width), with `N` the
        // order for the orders whose loops unroll, else 0
        by_order_simd!(crate::backend::cpu::simd::arch(), n;
            2 3 4 16 => |N| Kernel::<T, N> { dst, tmp, n, par },
            _ => Kernel::<T, 0> { dst, tmp, n, par });
    });
    (out, colmajor_layout(&b.dims, n, n))
}

/// The Fréchet derivative `L(X, E) = [exp([[X, E], [0, X]])]₁₂` for each pair of square
/// matrices of `x` and `e` (one shape `(*, n, n)`); column-major results, with their
/// layout.
pub(crate) fn matrix_exp_frechet<T: LinalgElem + LaneBits>(
    x: &[T],
    xl: &Layout,
    e: &[T],
    el: &Layout,
) -> (Vec<T>, Layout) {
    struct Kernel<'a, T, const N: usize> {
        work: &'a mut [T],
        dst: &'a mut [T],
        n: usize,
        par: Par,
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            frechet_one::<T, N>(self.work, self.dst, self.n, self.par);
        }
    }
    let (bx, be) = (Batch::of(xl), Batch::of(el));
    let n = bx.n;
    let nn = n * n;
    let mut out = crate::backend::cpu::pool::filled(bx.len() * nn, T::ZERO);
    let work = 50 * n * n * n;
    for_each_matrix(&mut out, nn, work, n >= PAR_N, |i, dst, tmp, par| {
        tmp.resize((BUFS + 1) * 2 * nn, T::ZERO);
        bx.load(x, i, &mut tmp[..nn]);
        be.load(e, i, &mut tmp[nn..2 * nn]);
        let work = &mut tmp[..];
        // (as in `matrix_exp`)
        by_order_simd!(crate::backend::cpu::simd::arch(), n;
            2 3 4 16 => |N| Kernel::<T, N> { work, dst, n, par },
            _ => Kernel::<T, 0> { work, dst, n, par });
    });
    (out, colmajor_layout(&bx.dims, n, n))
}
