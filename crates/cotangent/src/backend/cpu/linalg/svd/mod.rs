//! Singular value decomposition of a batch of strided matrices, with a deterministic sign
//! gauge, by stage:
//! - here, the batch: which path each matrix takes, the sign gauge, the factors' layouts,
//!   and a vector (`min(m, n) = 1`) by its scaled norm ([`svd_vector`]);
//! - [`one_sided`]: one-sided Jacobi for small matrices (one at a time, or [`LANES`] at a
//!   time in SIMD lanes for batches);
//! - our own stages otherwise (the blocked bidiagonalisation and bidiagonal divide and
//!   conquer of [`svd_split`], by QR first beyond a ratio of 11/6);
//! - [`backward`]: the fused per-matrix VJP [`svd_backward`] (used when the backward pass
//!   is not recorded).
//!
//! faer's `svd` is not used: on rank-deficient matrices and on matrices scaled near
//! underflow or overflow it returned wrong factors without an error, or failed to
//! converge (docs/accuracy.md; tests/accuracy.rs has the cases).

mod backward;
mod one_sided;

use std::sync::atomic::{AtomicUsize, Ordering};

use super::jacobi::{pow2_near, JACOBI_ROOM};
use super::lanes::{lane_split, LANES};
use super::svd_split;
use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::backend::cpu::pool;
use crate::layout::Layout;
use crate::shape::Shape;
pub(crate) use backward::svd_backward;
pub(crate) use one_sided::JacobiElem;
use one_sided::{jacobi_lanes, jacobi_small, LaneScratch, JACOBI_MAX};

/// The factors of a batched SVD: `U` column-major `(*, m, ku)`, `S` contiguous `(*, k)`,
/// `Vh` contiguous `(*, kv, n)` (`V` column-major), `U` and `Vh` only when asked.
pub(crate) struct SvdOut<T> {
    pub(crate) u: Option<(Vec<T>, Layout)>,
    pub(crate) s: (Vec<T>, Layout),
    pub(crate) vh: Option<(Vec<T>, Layout)>,
}

/// The factors `(U, S, V)` of each matrix, `(usz, k, vsz)` elements one after the other in
/// `packed`, as three arrays; split over the threads for a large batch (the serial copy
/// showed in the profile of a 1024 x 16 x 16 SVD's forward and backward).
fn unpack<T: LinalgElem>(
    packed: &[T],
    (usz, k, vsz): (usize, usize, usize),
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let size = usz + k + vsz;
    let len = packed.len() / size.max(1);
    // every element is copied in
    let mut uo = pool::overwritten(len * usz, T::ZERO);
    let mut so = pool::overwritten(len * k, T::ZERO);
    let mut vo = pool::overwritten(len * vsz, T::ZERO);
    let copy = |first: usize, u: &mut [T], s: &mut [T], v: &mut [T]| {
        let count = (u.len() + s.len() + v.len()).checked_div(size).unwrap_or(0);
        for j in 0..count {
            let c = &packed[(first + j) * size..(first + j + 1) * size];
            u[j * usz..(j + 1) * usz].copy_from_slice(&c[..usz]);
            s[j * k..(j + 1) * k].copy_from_slice(&c[usz..usz + k]);
            v[j * vsz..(j + 1) * vsz].copy_from_slice(&c[usz + k..]);
        }
    };
    if len > 1 && packed.len() >= 2 * TASK_WORK {
        let per = (TASK_WORK / size).max(1);
        let (pu, ps, pv) = (
            Parts::new(&mut uo, usz * per),
            Parts::new(&mut so, k * per),
            Parts::new(&mut vo, vsz * per),
        );
        run_tasks(len.div_ceil(per), |t| copy(t * per, pu.take(t), ps.take(t), pv.take(t)));
    } else {
        copy(0, &mut uo, &mut so, &mut vo);
    }
    (uo, so, vo)
}

/// Flips the sign of column `j` of `u` (`m` rows) and of column `j` of `v` (`n` rows,
/// the row `j` of `Vh`) when the entry of largest magnitude of `u`'s column (the first on
/// ties) is negative.
fn fix_gauge<T: LinalgElem>(u: &mut [T], m: usize, v: &mut [T], n: usize, cols: usize) {
    for j in 0..cols {
        let uc = &mut u[j * m..(j + 1) * m];
        if largest_is_negative(uc) {
            for x in uc.iter_mut() {
                *x = -*x;
            }
            if j * n < v.len() {
                for x in &mut v[j * n..(j + 1) * n] {
                    *x = -*x;
                }
            }
        }
    }
}

/// Whether the entry of largest magnitude of `col` (the first one on ties) is negative.
#[inline(always)]
fn largest_is_negative<T: LinalgElem>(col: &[T]) -> bool {
    // (selects, not branches: which entry is largest is data, a branch mispredicts)
    let mut best = T::ZERO;
    let mut neg = false;
    for &x in col {
        let gt = x.abs() > best;
        best = if gt { x.abs() } else { best };
        neg = if gt { x < T::ZERO } else { neg };
    }
    neg
}

/// The SVD of each matrix of `a` (layout `l`, `(*, m, n)`), per matrix: one-sided Jacobi
/// up to [`JACOBI_MAX`] (up to [`JACOBI_ROOM`] in batches of at least [`LANES`] matrices,
/// every matrix of such a batch in lanes, the last partial group padded: up to
/// [`JACOBI_MAX`] the bits the matrix gets alone; so a matrix of 9 to 16 rows or columns
/// may differ in the last bits from the same matrix decomposed alone),
/// [`svd_split`] otherwise and for matrices Jacobi does not finish (a
/// zero singular value with vectors asked, `full`, no convergence), [`svd_vector`] when
/// `min(m, n) = 1`. Singular values in
/// descending order; with `want_uv`, `U` and `V` (`full`: `m x m` and `n x n`, else
/// `m x k` and `n x k`). Gauge: the entry of largest magnitude of each column of `U` is
/// positive (the first such entry on ties), the matching column of `V` flipped with it;
/// for `full` the completion columns follow the same rule, each on its own. `Err(i)`: matrix
/// `i` has a non-finite entry or did not converge.
pub(crate) fn svd<T: JacobiElem>(
    a: &[T],
    l: &Layout,
    want_uv: bool,
    full: bool,
) -> Result<SvdOut<T>, usize> {
    let ba = Batch::of(l);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let (ku, kv) = if !want_uv {
        (0, 0)
    } else if full {
        (m, n)
    } else {
        (k, k)
    };
    let (usz, vsz) = (m * ku, n * kv);
    let size = usz + k + vsz;
    let len = ba.len();
    let failed = AtomicUsize::new(usize::MAX);
    let work = m * n * k.max(1);
    // Jacobi up to JACOBI_MAX, and up to JACOBI_ROOM for batches of a lane group or more
    // (every matrix of such a batch in lanes; alone, the ones the lanes leave)
    let lanes = len >= LANES && m.max(n) <= JACOBI_ROOM && k > 0;
    let jacobi = (m.max(n) <= JACOBI_MAX || lanes) && (!want_uv || ku == k && kv == k);
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, threaded: bool| {
        let (u, rest) = dst.split_at_mut(usz);
        let (s, v) = rest.split_at_mut(k);
        if k == 0 {
            // U and V are identities (full) or empty
            for c in 0..ku.min(m) {
                u[c * m + c] = T::ONE;
            }
            for c in 0..kv.min(n) {
                v[c * n + c] = T::ONE;
            }
            return;
        }
        tmp.clear();
        tmp.resize(m * n, T::ZERO);
        ba.load(a, i, tmp);
        if tmp.iter().any(|x| !x.is_finite()) {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        if jacobi {
            let uv = want_uv.then_some((&mut *u, &mut *v));
            // (the sign gauge applied in jacobi_finish)
            if jacobi_small(tmp, m, n, s, uv) {
                return;
            }
        }
        let uvs = want_uv.then_some((&mut *u, ku, &mut *v, kv));
        if k == 1 {
            svd_vector(tmp, m, n, s, uvs);
        } else {
            let mut sc = svd_split::Scratch::default();
            if !svd_split::svd_split(tmp, m, n, s, uvs, threaded, &mut sc) {
                failed.fetch_min(i, Ordering::Relaxed);
                return;
            }
        }
        if want_uv {
            fix_gauge(u, m, v, n, k);
            if ku > k {
                // completion columns of U: no matching row of Vh
                fix_gauge(&mut u[k * m..], m, &mut [], n, ku - k);
            }
            if kv > k {
                fix_gauge(&mut v[k * n..], n, &mut [], m, kv - k);
            }
        }
    };
    if jacobi && lanes {
        // straight into U, S and V, each task a run of lane groups (the batch's last,
        // partial group in lanes too: every matrix alike), no packed copy
        let mut uo = pool::overwritten(len * usz, T::ZERO);
        let mut so = pool::overwritten(len * k, T::ZERO);
        let mut vo = pool::overwritten(len * vsz, T::ZERO);
        let per = lane_split(len, work).0;
        let (pu, ps, pv) = (
            Parts::new(&mut uo, usz * per),
            Parts::new(&mut so, k * per),
            Parts::new(&mut vo, vsz * per),
        );
        run_tasks(len.div_ceil(per), |t| {
            let (u, s, v) = (pu.take(t), ps.take(t), pv.take(t));
            let mut sc = LaneScratch::new(m, n);
            let mut one_out = Vec::new();
            let groups = (s.len() / k).div_ceil(LANES);
            for g in 0..groups {
                let first = t * per + g * LANES;
                let at = g * LANES;
                let count = (s.len() / k - at).min(LANES);
                let ug = &mut u[at * usz..(at + count) * usz];
                let sg = &mut s[at * k..(at + count) * k];
                let vg = &mut v[at * vsz..(at + count) * vsz];
                let bad = jacobi_lanes(&ba, a, first, count, want_uv, (ug, sg, vg), &mut sc);
                for (l, _) in bad.iter().enumerate().take(count).filter(|(_, &b)| b) {
                    one_out.clear();
                    one_out.resize(size, T::ZERO);
                    one(first + l, &mut one_out, &mut sc.tmp, false);
                    let (i, j) = (at + l, &one_out);
                    u[i * usz..(i + 1) * usz].copy_from_slice(&j[..usz]);
                    s[i * k..(i + 1) * k].copy_from_slice(&j[usz..usz + k]);
                    v[i * vsz..(i + 1) * vsz].copy_from_slice(&j[usz + k..]);
                }
            }
        });
        drop((pu, ps, pv));
        let f = failed.load(Ordering::Relaxed);
        if f != usize::MAX {
            return Err(f);
        }
        return Ok(out_of(&ba, (uo, so, vo), want_uv, (m, n, k, ku, kv)));
    }
    let mut packed = pool::filled(len * size, T::ZERO);
    if len == 1 {
        // from the calling thread, not a worker of the pool: the bidiagonalisation's
        // column ranges then stay with the same threads from one column to the next
        // (on a worker its tasks are rayon's parallel loop)
        one(0, &mut packed, &mut Vec::new(), true);
    } else {
        for_each_matrix(&mut packed, size, work, false, |i, dst, tmp, _| one(i, dst, tmp, false));
    }
    let f = failed.load(Ordering::Relaxed);
    if f != usize::MAX {
        return Err(f);
    }
    let (uo, so, vo) = unpack(&packed, (usz, k, vsz));
    pool::give(packed);
    Ok(out_of(&ba, (uo, so, vo), want_uv, (m, n, k, ku, kv)))
}

/// The SVD of an `m x n` matrix with `min(m, n) = 1` (a column or a row `x`, finite):
/// `s = ‖x‖` (computed on `x` divided by a power of two near its largest entry, so that
/// the squares neither overflow nor underflow), the unit vector `x / s` (`e₀` for `x = 0`)
/// as the one column of `U` (tall) or `V` (wide), and `1` as the other factor. With
/// `ku = m` (`kv = n`), the completion columns are the other columns of the Householder
/// reflector that maps `e₀` to `±x / s`: orthonormal, and orthogonal to `x`.
fn svd_vector<T: LinalgElem>(
    x: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], usize, &mut [T], usize)>,
) {
    let amax = x.iter().fold(T::ZERO, |a, &v| if v.abs() > a { v.abs() } else { a });
    let unit = if amax == T::ZERO { T::ONE } else { pow2_near(amax) };
    let norm = x.iter().map(|&v| (v / unit) * (v / unit)).sum::<T>().sqrt();
    s[0] = norm * unit;
    let Some((u, ku, v, kv)) = uv else { return };
    // the long factor (`len x cols`) takes x / s, the other is [1] (its completion, if
    // any, is empty: its order is 1)
    let tall = m >= n;
    let (long, cols, short) = if tall { (u, ku, v) } else { (v, kv, u) };
    let len = m.max(n);
    let col: Vec<T> = if norm == T::ZERO {
        (0..len).map(|i| if i == 0 { T::ONE } else { T::ZERO }).collect()
    } else {
        x.iter().map(|&v| (v / unit) / norm).collect()
    };
    short[0] = T::ONE;
    long[..len].copy_from_slice(&col);
    if cols > 1 {
        // H = I − 2 w wᵀ / (wᵀw), w = x̂ + σ e₀ with σ the sign of x̂₀: wᵀw = 2 + 2 |x̂₀|
        let sigma = if col[0] < T::ZERO { -T::ONE } else { T::ONE };
        let mut w = col;
        w[0] += sigma;
        let f = T::of(2.0) / w.iter().map(|&v| v * v).sum::<T>();
        for j in 1..cols {
            let dst = &mut long[j * len..(j + 1) * len];
            for (i, y) in dst.iter_mut().enumerate() {
                let e = if i == j { T::ONE } else { T::ZERO };
                *y = e - f * w[i] * w[j];
            }
        }
    }
}

/// [`SvdOut`] of a batch `ba` from its factors `U` (`(*, m, ku)` column-major), `S`
/// (`(*, k)`) and `V` (`(*, n, kv)` column-major, so `Vh` `(*, kv, n)` contiguous).
fn out_of<T>(
    ba: &Batch,
    (uo, so, vo): (Vec<T>, Vec<T>, Vec<T>),
    want_uv: bool,
    (m, n, k, ku, kv): (usize, usize, usize, usize, usize),
) -> SvdOut<T> {
    let mut sdims = ba.dims.clone();
    sdims.push(k);
    let s = (so, Layout::contiguous(Shape::new(sdims)));
    if !want_uv {
        return SvdOut { u: None, s, vh: None };
    }
    let mut vdims = ba.dims.clone();
    vdims.extend([kv, n]);
    SvdOut {
        u: Some((uo, colmajor_layout(&ba.dims, m, ku))),
        s,
        vh: Some((vo, Layout::contiguous(Shape::new(vdims)))),
    }
}
