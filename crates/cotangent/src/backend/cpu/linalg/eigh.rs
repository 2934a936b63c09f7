//! The symmetric eigendecomposition `A = V diag(w) Vᵀ`, batched, reading one triangle.
//!
//! - batches (more than one matrix) of small ones (`2 <= n <= SMALL_N`): the single-matrix
//!   loops below run on [`LANES`] matrices at once, one per SIMD lane, lane groups split
//!   over rayon: cyclic Jacobi to `n = ROTATE_N` ([`jacobi_lanes`]), tridiagonal QL above
//!   ([`ql_lanes`]); each matrix gets exactly the bits it gets alone (the same operations;
//!   where the scalar loops branch on a matrix's values, each lane takes its own branch
//!   through selects);
//! - single tiny matrices (`n <= ROTATE_N`): an allocation-free cyclic Jacobi loop
//!   (rotations skip entries negligible relative to their diagonal, Demmel & Veselić's
//!   criterion, or to the largest diagonal entry); with eigenvectors, the eigenvalues
//!   are then the Rayleigh quotients of the final vectors with the original matrix (the
//!   rotated diagonal accumulates a rounding per rotation);
//! - single small ones (`n <= SMALL_N`): Householder tridiagonalisation and the implicit
//!   QL iteration (EISPACK's `tred2` + `tql2`), allocation-free;
//! - larger ones: Householder tridiagonalisation (faer's, or from order 160 our blocked
//!   one, [`super::tridiag_split`]), then on the tridiagonal
//!   ([`super::tridiag_qr`]) the root-free QL iteration for the eigenvalues alone; with
//!   eigenvectors our implicit QR iteration below n = 128, our divide and conquer
//!   ([`super::tridiag_dc`]) from it; then faer's blocked back-transformation; on every
//!   thread from `PAR_N`.
//!
//! The results of a batch do not depend on the thread count (the lane groups are fixed
//! by the batch alone). [`eigh_backward`] is the VJP fused per matrix.
//!
//! Every path then sorts the eigenvalues ascending and apply one sign gauge: each
//! eigenvector's component of largest magnitude (the first one on ties) is made positive.
//! A matrix whose read triangle holds a NaN or an infinity is not decomposed (no loop runs
//! on it): its outputs are NaN, and it is reported as failed (the first such matrix).

use crate::backend::cpu::par::{for_each_chunk, run_tasks, Parts};
use crate::backend::cpu::pool;

use super::jacobi::{
    pow2_near, rotate, rotate_lanes, rotate_pair, rotation_tangent, sine_tau, sweep_pairs, tangent,
    tangent_theta, tiny_pair,
};
use super::lanes::{load_symmetric_lanes, masks, sel, LaneBits, LANES};
use super::order::by_order;
use super::{colmajor_layout, Batch, LinalgElem, TASK_WORK};
use crate::layout::Layout;

/// Up to this order the own allocation-free loops are used; above, the tridiagonal paths
/// of [`super::tridiag_qr`] (on faer's tridiagonalisation).
pub(crate) const SMALL_N: usize = 16;
/// From this order one matrix may use every thread (faer's tridiagonalisation and
/// back-transformation, the divide and conquer's merges).
const PAR_N: usize = 256;
/// The most Jacobi sweeps (convergence is quadratic: a handful suffice); a bound so that
/// no input can loop forever.
const MAX_SWEEPS: usize = 60;

/// Loads the `uplo` triangle of matrix `i` of `b` into the full symmetric column-major
/// `n x n` block `a`; returns false if a read entry is not finite.
fn load_symmetric<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    i: usize,
    upper: bool,
    a: &mut [T],
) -> bool {
    let n = b.n;
    let off = b.offset(i);
    let mut finite = true;
    // (k, j) with k >= j in the lower triangle; (j, k) in the upper
    let mut put = |j: usize, k: usize| {
        let x =
            if upper { data[off + j * b.rs + k * b.cs] } else { data[off + k * b.rs + j * b.cs] };
        finite &= x.is_finite();
        a[j * n + k] = x;
        a[k * n + j] = x;
    };
    for j in 0..n {
        put(j, j);
    }
    // in tiles: one of the reads and one of the writes is strided (a column of a
    // row-major block); element by element down whole columns, an order-1024 load was
    // slow, most of it cache misses
    super::lower_tiles(n, put);
    finite
}

/// Cyclic Jacobi (in the order of [`sweep_pairs`]) on the symmetric column-major `n x n`
/// block `a`, `n <= ROTATE_N` (overwritten); the eigenvalues go to `w` (unsorted), the
/// rotations are accumulated into `v` (column-major, set to the identity first) when
/// given. The entries must be finite. Returns the power of two the matrix was scaled by
/// (`a` is left scaled).
fn jacobi<T: LinalgElem>(a: &mut [T], n: usize, w: &mut [T], v: Option<&mut [T]>) -> T {
    // one instance per order: the loops get constant bounds (unrolled, no bounds checks)
    by_order!(n; 1 2 3 4 => |N| jacobi_n::<T, N>(a, w, v), _ => jacobi_n::<T, 0>(a, w, v))
}

/// [`jacobi`] for the order `N` (`N = 0`: the order of `w`).
fn jacobi_n<T: LinalgElem, const N: usize>(a: &mut [T], w: &mut [T], v: Option<&mut [T]>) -> T {
    let n = if N == 0 { w.len() } else { N };
    let a = &mut a[..n * n];
    let w = &mut w[..n];
    let mut v = v.map(|v| &mut v[..n * n]);
    if let Some(v) = v.as_deref_mut() {
        v.fill(T::ZERO);
        for j in 0..n {
            v[j * n + j] = T::ONE;
        }
    }
    // scale by a power of two near the largest entry (exact), so nothing overflows
    let amax = a.iter().fold(T::ZERO, |m, &x| if x.abs() > m { x.abs() } else { m });
    if amax == T::ZERO {
        w.fill(T::ZERO);
        return T::ONE;
    }
    let scale = pow2_near(amax);
    for x in a.iter_mut() {
        *x /= scale;
    }
    let eps = T::EPSILON;
    for _ in 0..MAX_SWEEPS {
        // an entry is negligible below ε times its diagonal's geometric mean (relative
        // accuracy where the diagonal is large) or ε times the largest diagonal entry (an
        // absolute floor, as LAPACK's accuracy: without it, near-zero eigenvalues keep
        // rotating rounding-level fill-in)
        let dmax = (0..n).fold(T::ZERO, |m, i| {
            let d = a[i * n + i].abs();
            if d > m {
                d
            } else {
                m
            }
        });
        let floor = eps * dmax;
        let mut rotated = false;
        for &(p, q) in sweep_pairs(n) {
            let apq = a[q * n + p];
            let (app, aqq) = (a[p * n + p], a[q * n + q]);
            if apq.abs() <= floor || apq.abs() <= eps * (app.abs() * aqq.abs()).sqrt() {
                continue;
            }
            rotated = true;
            let t = rotation_tangent(aqq - app, apq + apq);
            let (s, tau) = sine_tau(t);
            a[p * n + p] = app - t * apq;
            a[q * n + q] = aqq + t * apq;
            a[q * n + p] = T::ZERO;
            a[p * n + q] = T::ZERO;
            for k in 0..n {
                if k == p || k == q {
                    continue;
                }
                let (gp, hq) = rotate_pair(a[p * n + k], a[q * n + k], s, tau);
                a[p * n + k] = gp;
                a[k * n + p] = gp;
                a[q * n + k] = hq;
                a[k * n + q] = hq;
            }
            if let Some(v) = v.as_deref_mut() {
                rotate(v, n, p, q, tau, s);
            }
        }
        if !rotated {
            break;
        }
    }
    for j in 0..n {
        w[j] = a[j * n + j] * scale;
    }
    scale
}

/// Replaces the eigenvalues by the Rayleigh quotients `w_j = v_jᵀ A v_j` of the final
/// eigenvectors with the original matrix `a0` (column-major, symmetric), computed on
/// `a0 / scale`: the diagonal Jacobi accumulates one rounding per rotation, the quotient
/// has the accuracy of a backward-stable solver (its error is second order in that of
/// `v_j`).
fn rayleigh<T: LinalgElem>(a0: &[T], n: usize, scale: T, w: &mut [T], v: &[T]) {
    let inv = T::ONE / scale;
    for (j, wj) in w.iter_mut().enumerate() {
        let vj = &v[j * n..(j + 1) * n];
        let mut acc = T::ZERO;
        for (k, &vkj) in vj.iter().enumerate() {
            let ak = &a0[k * n..(k + 1) * n];
            let mut y = T::ZERO;
            for (&x, &z) in ak.iter().zip(vj) {
                y += x * inv * z;
            }
            acc += y * vkj;
        }
        *wj = acc * scale;
    }
}

/// Up to this order the Jacobi loop is used; above (to [`SMALL_N`]), Householder
/// tridiagonalisation and the implicit QL iteration ([`tridiagonal_ql`]).
pub(crate) const ROTATE_N: usize = 4;
/// The most QL iterations per eigenvalue (two or three are typical); a bound so that no
/// input can loop forever.
const MAX_QL_ITER: usize = 60;

/// `√(x² + y²)` without overflow or harmful underflow.
pub(crate) fn hypot<T: LinalgElem>(x: T, y: T) -> T {
    let (a, b) = (x.abs(), y.abs());
    let (big, small) = if a > b { (a, b) } else { (b, a) };
    if big == T::ZERO {
        return T::ZERO;
    }
    let r = small / big;
    big * (T::ONE + r * r).sqrt()
}

/// The symmetric eigenproblem of the column-major `n x n` block `a` (overwritten; its
/// lower triangle is read) by Householder tridiagonalisation and the implicit QL
/// iteration with Wilkinson-type shifts (EISPACK's `tred2` and `tql2`, as in JAMA), with
/// the transformations accumulated into `v` (column-major `n x n`); `e` is `n` scratch
/// entries. Eigenvalues into `w` (unsorted). The entries must be finite; the matrix is
/// scaled by a power of two near its largest entry first.
fn tridiagonal_ql<T: LinalgElem>(a: &[T], n: usize, w: &mut [T], v: &mut [T], e: &mut [T]) {
    let amax = a.iter().fold(T::ZERO, |m, &x| if x.abs() > m { x.abs() } else { m });
    if amax == T::ZERO {
        w.fill(T::ZERO);
        v.fill(T::ZERO);
        for j in 0..n {
            v[j * n + j] = T::ONE;
        }
        return;
    }
    let scale = pow2_near(amax);
    let inv = T::ONE / scale;
    // V[i][j] is v[j * n + i]
    for (x, &y) in v.iter_mut().zip(a) {
        *x = y * inv;
    }
    let ix = |i: usize, j: usize| j * n + i;
    let d = w;
    // tred2: Householder reduction to tridiagonal form
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
    }
    for i in (1..n).rev() {
        let mut scl = T::ZERO;
        let mut h = T::ZERO;
        for &dk in d.iter().take(i) {
            scl += dk.abs();
        }
        if scl == T::ZERO {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = T::ZERO;
                v[ix(j, i)] = T::ZERO;
            }
        } else {
            for dk in d.iter_mut().take(i) {
                *dk /= scl;
                h += *dk * *dk;
            }
            let mut f = d[i - 1];
            let mut g = h.sqrt();
            if f > T::ZERO {
                g = -g;
            }
            e[i] = scl * g;
            h -= f * g;
            d[i - 1] = f - g;
            for ej in e.iter_mut().take(i) {
                *ej = T::ZERO;
            }
            for j in 0..i {
                f = d[j];
                v[ix(j, i)] = f;
                g = e[j] + v[ix(j, j)] * f;
                for k in j + 1..i {
                    g += v[ix(k, j)] * d[k];
                    e[k] += v[ix(k, j)] * f;
                }
                e[j] = g;
            }
            f = T::ZERO;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            for j in 0..i {
                f = d[j];
                g = e[j];
                for k in j..i {
                    v[ix(k, j)] -= f * e[k] + g * d[k];
                }
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = T::ZERO;
            }
        }
        d[i] = h;
    }
    // accumulate the transformations
    for i in 0..n - 1 {
        v[ix(n - 1, i)] = v[ix(i, i)];
        v[ix(i, i)] = T::ONE;
        let h = d[i + 1];
        if h != T::ZERO {
            for k in 0..=i {
                d[k] = v[ix(k, i + 1)] / h;
            }
            for j in 0..=i {
                let mut g = T::ZERO;
                for k in 0..=i {
                    g += v[ix(k, i + 1)] * v[ix(k, j)];
                }
                for k in 0..=i {
                    v[ix(k, j)] -= g * d[k];
                }
            }
        }
        for k in 0..=i {
            v[ix(k, i + 1)] = T::ZERO;
        }
    }
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
        v[ix(n - 1, j)] = T::ZERO;
    }
    v[ix(n - 1, n - 1)] = T::ONE;
    e[0] = T::ZERO;
    // tql2: the implicit QL iteration on the tridiagonal (d, e)
    for i in 1..n {
        e[i - 1] = e[i];
    }
    e[n - 1] = T::ZERO;
    let mut f = T::ZERO;
    let mut tst1 = T::ZERO;
    let eps = T::EPSILON;
    for l in 0..n {
        let t = d[l].abs() + e[l].abs();
        if t > tst1 {
            tst1 = t;
        }
        let mut m = l;
        while m < n - 1 && e[m].abs() > eps * tst1 {
            m += 1;
        }
        if m > l {
            for _ in 0..MAX_QL_ITER {
                let mut g = d[l];
                let mut p = (d[l + 1] - g) / (e[l] + e[l]);
                let mut r = hypot(p, T::ONE);
                if p < T::ZERO {
                    r = -r;
                }
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let mut h = g - d[l];
                for di in d.iter_mut().take(n).skip(l + 2) {
                    *di -= h;
                }
                f += h;
                p = d[m];
                let (mut c, mut c2, mut c3) = (T::ONE, T::ONE, T::ONE);
                let el1 = e[l + 1];
                let (mut s, mut s2) = (T::ZERO, T::ZERO);
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e[i];
                    h = c * p;
                    r = hypot(p, e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    let (lo, hi) = v.split_at_mut((i + 1) * n);
                    for (vi, vi1) in lo[i * n..].iter_mut().zip(hi[..n].iter_mut()) {
                        let hv = *vi1;
                        *vi1 = s * *vi + c * hv;
                        *vi = c * *vi - s * hv;
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if e[l].abs() <= eps * tst1 {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = T::ZERO;
    }
    for x in d.iter_mut() {
        *x *= scale;
    }
}

/// Sorts `w` ascending (stable: equal values keep their order), moving the columns of
/// the column-major `v` along, then applies the sign gauge to each column of `v`.
fn sort_and_gauge<T: LinalgElem>(w: &mut [T], mut v: Option<&mut [T]>) {
    let n = w.len();
    // insertion sort: already sorted (faer) costs n comparisons
    for j in 1..n {
        let mut k = j;
        while k > 0 && w[k - 1] > w[k] {
            w.swap(k - 1, k);
            if let Some(v) = v.as_deref_mut() {
                let (lo, hi) = v.split_at_mut(k * n);
                lo[(k - 1) * n..].swap_with_slice(&mut hi[..n]);
            }
            k -= 1;
        }
    }
    if let Some(v) = v {
        for col in v.chunks_exact_mut(n.max(1)).take(n) {
            gauge(col);
        }
    }
}

/// The sign gauge of one eigenvector: its component of largest magnitude (the first on
/// ties) is made positive.
pub(crate) fn gauge<T: LinalgElem>(col: &mut [T]) {
    let mut best = T::ZERO;
    let mut neg = false;
    for &x in col.iter() {
        if x.abs() > best {
            best = x.abs();
            neg = x < T::ZERO;
        }
    }
    if neg {
        for x in col.iter_mut() {
            *x = -*x;
        }
    }
}

/// Scratch reused across the matrices of one task.
#[derive(Default)]
struct Scratch<T: pool::Pooled> {
    a: Vec<T>,
    a0: Vec<T>,
    e: Vec<T>,
    qr: super::tridiag_qr::Scratch<T>,
}

impl<T: pool::Pooled> Drop for Scratch<T> {
    fn drop(&mut self) {
        // (an order-1024 matrix's 8 MB faulted in anew on every call, slowing eigvalsh)
        pool::give(std::mem::take(&mut self.a));
        pool::give(std::mem::take(&mut self.a0));
    }
}

/// One matrix: eigenvalues into `w`, eigenvectors (column-major) into `v` if given.
fn one<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    i: usize,
    upper: bool,
    w: &mut [T],
    mut v: Option<&mut [T]>,
    s: &mut Scratch<T>,
) {
    let n = b.n;
    if n == 0 {
        return;
    }
    pool::reserve(&mut s.a, n * n);
    s.a.resize(n * n, T::ZERO);
    if !load_symmetric(data, b, i, upper, &mut s.a) {
        w.fill(T::NAN);
        if let Some(v) = v {
            v.fill(T::NAN);
        }
        return;
    }
    if n > SMALL_N {
        if !super::tridiag_qr::eigh_tridiag_qr(&s.a, n, w, v.as_deref_mut(), n >= PAR_N, &mut s.qr)
        {
            w.fill(T::NAN);
            if let Some(v) = v {
                v.fill(T::NAN);
            }
            return;
        }
    } else if n > ROTATE_N {
        s.e.resize(n, T::ZERO);
        if let Some(v) = v.as_deref_mut() {
            tridiagonal_ql(&s.a, n, w, v, &mut s.e);
        } else {
            // the transformations are accumulated anyway (into scratch)
            pool::reserve(&mut s.a0, n * n);
            s.a0.resize(n * n, T::ZERO);
            tridiagonal_ql(&s.a, n, w, &mut s.a0, &mut s.e);
        }
    } else {
        match v.as_deref_mut() {
            Some(v) => {
                s.a0.clear();
                pool::reserve(&mut s.a0, n * n);
                s.a0.extend_from_slice(&s.a);
                let scale = jacobi(&mut s.a, n, w, Some(&mut *v));
                rayleigh(&s.a0, n, scale, w, v);
            }
            None => {
                jacobi(&mut s.a, n, w, None);
            }
        }
    }
    sort_and_gauge(w, v);
}

/// Eigenvalues `(*, n)` (contiguous) and, if `vectors`, eigenvectors `(*, n, n)`
/// (column-major, with their layout) of each symmetric matrix of `a: (*, n, n)`, reading
/// its lower (or, if `upper`, upper) triangle; with the index of the first matrix that
/// could not be decomposed (non-finite input), if any.
#[allow(clippy::type_complexity)]
pub(crate) fn eigh<T: LinalgElem + LaneBits>(
    a: &[T],
    l: &Layout,
    upper: bool,
    vectors: bool,
) -> (Vec<T>, Option<(Vec<T>, Layout)>, Option<usize>) {
    let b = Batch::of(l);
    let n = b.n;
    let count = b.len();
    let lanes = (2..=LANES_MAX_N).contains(&n) && count > 1;
    // the lane kernels write every output entry (the other paths may skip some)
    let buffer = |len: usize| {
        if lanes {
            crate::backend::cpu::pool::overwritten(len, T::ZERO)
        } else {
            crate::backend::cpu::pool::filled(len, T::ZERO)
        }
    };
    let mut w = buffer(count * n);
    let mut v = if vectors { Some(buffer(count * n * n)) } else { None };
    if lanes {
        let work = n * n * n * 8;
        for_each_lane_group(n, work, &mut w, v.as_deref_mut(), |first, len, out, bufs| {
            if n <= ROTATE_N {
                jacobi_lanes(a, &b, first, len, upper, out, bufs);
            } else {
                ql_lanes(a, &b, first, len, upper, out, bufs);
            }
        });
    } else if n > 0 && count > 0 {
        let work = (n * n * n * if n <= SMALL_N { 8 } else { 10 }).max(1);
        let parallel = count > 1 && n < PAR_N && count * work >= 2 * TASK_WORK;
        let per_task = if parallel { (TASK_WORK / work).max(1) } else { count };
        if let Some(v) = v.as_deref_mut() {
            let run = |(t, (wc, vc)): (usize, (&mut [T], &mut [T]))| {
                let mut s = Scratch::default();
                for (j, (wi, vi)) in
                    wc.chunks_exact_mut(n).zip(vc.chunks_exact_mut(n * n)).enumerate()
                {
                    one(a, &b, t * per_task + j, upper, wi, Some(vi), &mut s);
                }
            };
            if parallel {
                let (pw, pv) = (Parts::new(&mut w, n * per_task), Parts::new(v, n * n * per_task));
                run_tasks(pw.len(), |t| run((t, (pw.take(t), pv.take(t)))));
            } else {
                run((0, (&mut w[..], v)));
            }
        } else {
            let run = |(t, wc): (usize, &mut [T])| {
                let mut s = Scratch::default();
                for (j, wi) in wc.chunks_exact_mut(n).enumerate() {
                    one(a, &b, t * per_task + j, upper, wi, None, &mut s);
                }
            };
            if parallel {
                for_each_chunk(&mut w, n * per_task, |t, wc| run((t, wc)));
            } else {
                run((0, &mut w[..]));
            }
        }
    }
    let vl = colmajor_layout(&b.dims, n, n);
    // a failed matrix has NaN eigenvalues; a decomposed one never has
    let failed = w.chunks_exact(n.max(1)).position(|c| c.iter().any(|x| x.is_nan()));
    (w, v.map(|v| (v, vl)), failed)
}

/// Up to this order a batch goes through the lane kernels ([`jacobi_lanes`] to
/// [`ROTATE_N`], [`ql_lanes`] above).
const LANES_MAX_N: usize = SMALL_N;

/// Scratch of the lane kernel: the matrices, their copy and the eigenvectors, per lane.
#[derive(Default)]
struct LaneBufs<T> {
    a: Vec<[T; LANES]>,
    a0: Vec<[T; LANES]>,
    v: Vec<[T; LANES]>,
}

/// The outputs of one lane group: `count * n` eigenvalues and, if wanted, `count * n * n`
/// eigenvector entries (column-major per matrix).
struct LaneOut<'a, T> {
    w: &'a mut [T],
    v: Option<&'a mut [T]>,
}

/// The matrices `first..first + count` (`count <= LANES`) of `b`, decomposed at once by
/// the cyclic Jacobi loop of [`jacobi`] run over the lanes ([`jacobi_lanes_n`]), then
/// finished one at a time as [`one`] finishes them (Rayleigh quotients, sorting, gauge).
#[allow(clippy::too_many_arguments)]
fn jacobi_lanes<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        data: &'a [T],
        b: &'a Batch,
        first: usize,
        count: usize,
        upper: bool,
        out: LaneOut<'b, T>,
        bufs: &'a mut LaneBufs<T>,
    }
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { data, b, first, count, upper, out, bufs } = self;
            let n = if N > 0 { N } else { b.n };
            jacobi_lanes_n(data, b, first, count, upper, out, bufs, n);
        }
    }
    let n = b.n;
    for buf in [&mut bufs.a, &mut bufs.a0, &mut bufs.v] {
        buf.resize(n * n, [T::ZERO; LANES]);
    }
    let arch = crate::backend::cpu::simd::arch();
    by_order!(n;
        2 3 4 => |N| arch.dispatch(Kernel::<T, N> { data, b, first, count, upper, out, bufs }),
        _ => arch.dispatch(Kernel::<T, 0> { data, b, first, count, upper, out, bufs }));
}

/// [`jacobi_lanes`] for the order `n` (a constant where it is small): the operations of
/// [`jacobi_n`] and [`rayleigh`] in the same order, each lane rotating only where the
/// scalar loop rotates (elsewhere the rotation is the identity, `t = 0`); the sweeps go on
/// until no lane rotates (a converged lane is left unchanged by further sweeps), so each
/// lane gets the scalar loop's result (up to the sign of zero entries).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn jacobi_lanes_n<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
    n: usize,
) {
    let nn = n * n;
    let a = &mut bufs.a[..nn];
    let a0 = &mut bufs.a0[..nn];
    let v = &mut bufs.v[..nn];
    let vectors = out.v.is_some();
    // load (unused and non-finite lanes hold zeros: they converge at once)
    let bad = load_symmetric_lanes(data, b, first, count, upper, n, a);
    if vectors {
        a0.copy_from_slice(a);
        for x in v.iter_mut() {
            *x = [T::ZERO; LANES];
        }
        for j in 0..n {
            v[j * n + j] = [T::ONE; LANES];
        }
    }
    // scale each lane by a power of two near its largest entry (exact)
    let mut amax = [T::ZERO; LANES];
    for x in a.iter() {
        for l in 0..LANES {
            if x[l].abs() > amax[l] {
                amax[l] = x[l].abs();
            }
        }
    }
    let mut scale = [T::ONE; LANES];
    for l in 0..LANES {
        if amax[l] != T::ZERO {
            scale[l] = pow2_near(amax[l]);
        }
    }
    for x in a.iter_mut() {
        for l in 0..LANES {
            x[l] /= scale[l];
        }
    }
    let eps = T::EPSILON;
    for _ in 0..MAX_SWEEPS {
        let mut floor = [T::ZERO; LANES];
        for i in 0..n {
            let d = a[i * n + i];
            for l in 0..LANES {
                if d[l].abs() > floor[l] {
                    floor[l] = d[l].abs();
                }
            }
        }
        for f in &mut floor {
            *f = eps * *f;
        }
        let mut rotated = false;
        for &(p, q) in sweep_pairs(n) {
            let (apq, app, aqq) = (a[q * n + p], a[p * n + p], a[q * n + q]);
            let mut rot = [false; LANES];
            let mut t = [T::ZERO; LANES];
            let mut tiny = false;
            for l in 0..LANES {
                let x = apq[l].abs();
                let skip = (x <= floor[l]) | (x <= eps * (app[l].abs() * aqq[l].abs()).sqrt());
                rot[l] = !skip;
                // (a skipped lane may make a NaN here: it is not selected)
                let tl = tangent(aqq[l] - app[l], apq[l] + apq[l]);
                t[l] = if skip { T::ZERO } else { tl };
                tiny |= !skip & tiny_pair(aqq[l] - app[l], apq[l] + apq[l]);
            }
            if tiny {
                for l in 0..LANES {
                    let (d, two) = (aqq[l] - app[l], apq[l] + apq[l]);
                    if rot[l] && tiny_pair(d, two) {
                        t[l] = tangent_theta(d, two);
                    }
                }
            }
            if !rot.iter().any(|&r| r) {
                continue;
            }
            rotated = true;
            let mut s = [T::ZERO; LANES];
            let mut tau = [T::ZERO; LANES];
            let (mut npp, mut nqq, mut npq) = (app, aqq, apq);
            for l in 0..LANES {
                (s[l], tau[l]) = sine_tau(t[l]);
                if rot[l] {
                    npp[l] = app[l] - t[l] * apq[l];
                    nqq[l] = aqq[l] + t[l] * apq[l];
                    npq[l] = T::ZERO;
                }
            }
            a[p * n + p] = npp;
            a[q * n + q] = nqq;
            a[q * n + p] = npq;
            a[p * n + q] = npq;
            for k in 0..n {
                if k == p || k == q {
                    continue;
                }
                let g = a[p * n + k];
                let h = a[q * n + k];
                let mut gp = [T::ZERO; LANES];
                let mut hq = [T::ZERO; LANES];
                for l in 0..LANES {
                    (gp[l], hq[l]) = rotate_pair(g[l], h[l], s[l], tau[l]);
                }
                a[p * n + k] = gp;
                a[k * n + p] = gp;
                a[q * n + k] = hq;
                a[k * n + q] = hq;
            }
            if vectors {
                rotate_lanes(v, n, p, q, &tau, &s);
            }
        }
        if !rotated {
            break;
        }
    }
    // eigenvalues: the diagonal scaled back, or the Rayleigh quotients of the vectors
    let mut w = [[T::ZERO; LANES]; SMALL_N];
    for j in 0..n {
        for l in 0..LANES {
            w[j][l] = a[j * n + j][l] * scale[l];
        }
    }
    if vectors {
        let mut inv = [T::ZERO; LANES];
        for l in 0..LANES {
            inv[l] = T::ONE / scale[l];
        }
        for j in 0..n {
            let mut acc = [T::ZERO; LANES];
            for k in 0..n {
                let mut y = [T::ZERO; LANES];
                for i in 0..n {
                    let (x, z) = (a0[k * n + i], v[j * n + i]);
                    for l in 0..LANES {
                        y[l] += x[l] * inv[l] * z[l];
                    }
                }
                let z = v[j * n + k];
                for l in 0..LANES {
                    acc[l] += y[l] * z[l];
                }
            }
            for l in 0..LANES {
                w[j][l] = acc[l] * scale[l];
            }
        }
    } else {
        // as the scalar loop: a zero matrix has zero eigenvalues (not -0)
        for l in 0..LANES {
            if amax[l] == T::ZERO {
                for wj in w.iter_mut().take(n) {
                    wj[l] = T::ZERO;
                }
            }
        }
    }
    let LaneOut { w: wout, v: mut vout } = out;
    for (l, wl) in wout.chunks_exact_mut(n).enumerate().take(count) {
        let mut vl = vout.as_deref_mut().map(|vo| &mut vo[l * nn..(l + 1) * nn]);
        if bad[l] {
            wl.fill(T::NAN);
            if let Some(vl) = vl {
                vl.fill(T::NAN);
            }
            continue;
        }
        for (j, x) in wl.iter_mut().enumerate() {
            *x = w[j][l];
        }
        if let Some(vl) = vl.as_deref_mut() {
            for (x, y) in vl.iter_mut().zip(v.iter()) {
                *x = y[l];
            }
        }
        sort_and_gauge(wl, vl);
    }
}

/// `√(x² + y²)` per lane, with the operations of [`hypot`] (the same bits).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn hypot_lanes<T: LinalgElem>(x: &[T; LANES], y: &[T; LANES]) -> [T; LANES] {
    // without branches (they keep the compiler from vectorising): where `big = 0` (so
    // `small = 0`), `0 · √(1 + 0)` is the scalar code's early `0`
    let mut out = [T::ZERO; LANES];
    for l in 0..LANES {
        let (a, b) = (x[l].abs(), y[l].abs());
        let gt = a > b;
        let big = if gt { a } else { b };
        let small = if gt { b } else { a };
        let r = small / if big == T::ZERO { T::ONE } else { big };
        out[l] = big * (T::ONE + r * r).sqrt();
    }
    out
}

/// Rotates columns `i` and `i + 1` of the lanes' `V` (`n x n`, column-major):
/// `(x, y) <- (c x − s y, s x + c y)` where the mask `m` is set (every lane when `all`),
/// the scalar QL loop's operations.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn rotate_cols<T: LinalgElem + LaneBits>(
    v: &mut [[T; LANES]],
    n: usize,
    i: usize,
    c: &[T; LANES],
    s: &[T; LANES],
    m: &[T; LANES],
    all: bool,
) {
    let (lo, hi) = v.split_at_mut((i + 1) * n);
    let (xs, ys) = (&mut lo[i * n..], &mut hi[..n]);
    for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
        let (mut nx, mut ny) = (*x, *y);
        for k in 0..LANES {
            ny[k] = s[k] * x[k] + c[k] * y[k];
            nx[k] = c[k] * x[k] - s[k] * y[k];
        }
        if all {
            (*x, *y) = (nx, ny);
        } else {
            (*x, *y) = (sel(m, &nx, x), sel(m, &ny, y));
        }
    }
}

/// The matrices `first..first + count` (`count <= LANES`, `ROTATE_N < n <= SMALL_N`) of
/// `b`, decomposed at once by the Householder tridiagonalisation and implicit QL
/// iteration of [`tridiagonal_ql`] run over the lanes ([`ql_lanes_n`]), then sorted and
/// gauged one at a time as [`one`] does.
#[allow(clippy::too_many_arguments)]
fn ql_lanes<T: LinalgElem + LaneBits>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        data: &'a [T],
        b: &'a Batch,
        first: usize,
        count: usize,
        upper: bool,
        out: LaneOut<'b, T>,
        bufs: &'a mut LaneBufs<T>,
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { data, b, first, count, upper, out, bufs } = self;
            let n = if N > 0 { N } else { b.n };
            ql_lanes_n(data, b, first, count, upper, out, bufs, n);
        }
    }
    let n = b.n;
    bufs.v.resize(n * n, [T::ZERO; LANES]);
    let arch = crate::backend::cpu::simd::arch();
    by_order!(n;
        8 16 => |N| arch.dispatch(Kernel::<T, N> { data, b, first, count, upper, out, bufs }),
        _ => arch.dispatch(Kernel::<T, 0> { data, b, first, count, upper, out, bufs }));
}

/// [`ql_lanes`] for the order `n` (a constant where it is small): the operations of
/// [`tridiagonal_ql`] in the same order on every lane. Where the scalar code branches on
/// a lane's values (a zero Householder column, a zero transformation, the split point
/// and the convergence of the QL iteration), each lane computes the branch it takes and
/// the others keep their values (selects), the QL iteration at `l` runs over the union
/// of the lanes' ranges and is repeated until every lane has converged there (a lane
/// that has is left as it is): so each lane gets the bits of the scalar code.
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn ql_lanes_n<T: LinalgElem + LaneBits>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
    n: usize,
) {
    type L<T> = [T; LANES];
    let nn = n * n;
    let v = &mut bufs.v[..nn];
    let vectors = out.v.is_some();
    let zero: L<T> = [T::ZERO; LANES];
    let one: L<T> = [T::ONE; LANES];
    // load as `load_symmetric` (unused and non-finite lanes hold zeros)
    let bad = load_symmetric_lanes(data, b, first, count, upper, n, v);
    // scale each lane by a power of two near its largest entry (a zero lane: by one; its
    // result is replaced by the scalar code's early answer below)
    let mut amax = zero;
    for x in v.iter() {
        for l in 0..LANES {
            if x[l].abs() > amax[l] {
                amax[l] = x[l].abs();
            }
        }
    }
    let mut scale = one;
    let mut inv = one;
    for l in 0..LANES {
        if amax[l] != T::ZERO {
            scale[l] = pow2_near(amax[l]);
            inv[l] = T::ONE / scale[l];
        }
    }
    for x in v.iter_mut() {
        for l in 0..LANES {
            x[l] *= inv[l];
        }
    }
    let ix = |i: usize, j: usize| j * n + i;
    let mut d = [zero; SMALL_N];
    let mut e = [zero; SMALL_N];
    let d = &mut d[..n];
    let e = &mut e[..n];
    // tred2
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
    }
    for i in (1..n).rev() {
        let mut scl = zero;
        for k in 0..i {
            for l in 0..LANES {
                scl[l] += d[k][l].abs();
            }
        }
        // the lanes taking the Householder branch (the others: a zero column)
        let mut act = [false; LANES];
        for l in 0..LANES {
            act[l] = scl[l] != T::ZERO;
        }
        if !act.iter().any(|&a| a) {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = zero;
                v[ix(j, i)] = zero;
            }
            d[i] = zero;
            continue;
        }
        let mut sdiv = one;
        for l in 0..LANES {
            if act[l] {
                sdiv[l] = scl[l];
            }
        }
        let mut h = zero;
        for k in 0..i {
            for l in 0..LANES {
                let q = d[k][l] / sdiv[l];
                d[k][l] = if act[l] { q } else { d[k][l] };
                h[l] += d[k][l] * d[k][l];
            }
        }
        let f = d[i - 1];
        let mut g = zero;
        for l in 0..LANES {
            let r = h[l].sqrt();
            g[l] = if f[l] > T::ZERO { -r } else { r };
            e[i][l] = if act[l] { scl[l] * g[l] } else { d[i - 1][l] };
            h[l] -= f[l] * g[l];
            d[i - 1][l] = if act[l] { f[l] - g[l] } else { d[i - 1][l] };
        }
        for ej in e.iter_mut().take(i) {
            *ej = zero;
        }
        for j in 0..i {
            let f = d[j];
            let mut vf = zero;
            for l in 0..LANES {
                vf[l] = if act[l] { f[l] } else { T::ZERO };
            }
            v[ix(j, i)] = vf;
            let mut g = e[j];
            let vjj = v[ix(j, j)];
            for l in 0..LANES {
                g[l] += vjj[l] * f[l];
            }
            for k in j + 1..i {
                let vkj = v[ix(k, j)];
                let dk = d[k];
                let ek = &mut e[k];
                for l in 0..LANES {
                    g[l] += vkj[l] * dk[l];
                    ek[l] += vkj[l] * f[l];
                }
            }
            e[j] = g;
        }
        let mut hdiv = one;
        for l in 0..LANES {
            if act[l] {
                hdiv[l] = h[l];
            }
        }
        let mut f = zero;
        for j in 0..i {
            for l in 0..LANES {
                e[j][l] /= hdiv[l];
                f[l] += e[j][l] * d[j][l];
            }
        }
        let mut hh = zero;
        for l in 0..LANES {
            hh[l] = f[l] / (hdiv[l] + hdiv[l]);
        }
        for j in 0..i {
            for l in 0..LANES {
                e[j][l] -= hh[l] * d[j][l];
            }
        }
        let all = act.iter().all(|&a| a);
        let actm = masks::<T>(&act);
        for j in 0..i {
            let (f, g) = (d[j], e[j]);
            for k in j..i {
                let (ek, dk) = (e[k], d[k]);
                let x = &mut v[ix(k, j)];
                let mut y = *x;
                for l in 0..LANES {
                    y[l] = x[l] - (f[l] * ek[l] + g[l] * dk[l]);
                }
                *x = if all { y } else { sel(&actm, &y, x) };
            }
            d[j] = v[ix(i - 1, j)];
            v[ix(i, j)] = zero;
        }
        for l in 0..LANES {
            d[i][l] = if act[l] { h[l] } else { T::ZERO };
        }
    }
    if vectors {
        // accumulate the transformations
        for i in 0..n - 1 {
            v[ix(n - 1, i)] = v[ix(i, i)];
            v[ix(i, i)] = one;
            let h = d[i + 1];
            let mut act = [false; LANES];
            let mut hdiv = one;
            for l in 0..LANES {
                act[l] = h[l] != T::ZERO;
                if act[l] {
                    hdiv[l] = h[l];
                }
            }
            if act.iter().any(|&a| a) {
                for k in 0..=i {
                    let x = v[ix(k, i + 1)];
                    let mut q = zero;
                    for l in 0..LANES {
                        q[l] = x[l] / hdiv[l];
                    }
                    d[k] = q;
                }
                let all = act.iter().all(|&a| a);
                let actm = masks::<T>(&act);
                for j in 0..=i {
                    let mut g = zero;
                    for k in 0..=i {
                        let (x, y) = (v[ix(k, i + 1)], v[ix(k, j)]);
                        for l in 0..LANES {
                            g[l] += x[l] * y[l];
                        }
                    }
                    for k in 0..=i {
                        let dk = d[k];
                        let x = &mut v[ix(k, j)];
                        let mut y = *x;
                        for l in 0..LANES {
                            y[l] = x[l] - g[l] * dk[l];
                        }
                        *x = if all { y } else { sel(&actm, &y, x) };
                    }
                }
            }
            for k in 0..=i {
                v[ix(k, i + 1)] = zero;
            }
        }
        for j in 0..n {
            d[j] = v[ix(n - 1, j)];
            v[ix(n - 1, j)] = zero;
        }
        v[ix(n - 1, n - 1)] = one;
    } else {
        // the diagonal the accumulation above saves and restores
        for j in 0..n {
            d[j] = v[ix(j, j)];
        }
    }
    // tql2
    for i in 1..n {
        e[i - 1] = e[i];
    }
    e[n - 1] = zero;
    let mut f = zero;
    let mut tst1 = zero;
    let eps = T::EPSILON;
    // the rotations of one QL sweep (cosines, sines, lane masks, whether all lanes)
    let (mut rc, mut rs) = ([zero; SMALL_N], [zero; SMALL_N]);
    let mut rm = [zero; SMALL_N];
    let mut rall = [false; SMALL_N];
    for l in 0..n {
        let mut m = [l; LANES];
        let mut active = [false; LANES];
        for k in 0..LANES {
            let t = d[l][k].abs() + e[l][k].abs();
            if t > tst1[k] {
                tst1[k] = t;
            }
            while m[k] < n - 1 && e[m[k]][k].abs() > eps * tst1[k] {
                m[k] += 1;
            }
            active[k] = m[k] > l;
        }
        let mut iters = [0usize; LANES];
        loop {
            let mut mmax = l;
            for k in 0..LANES {
                if active[k] && m[k] > mmax {
                    mmax = m[k];
                }
            }
            if mmax == l {
                break;
            }
            // the shift
            let (dl, dl1, el) = (d[l], d[l + 1], e[l]);
            let mut p = zero;
            for k in 0..LANES {
                p[k] = (dl1[k] - dl[k]) / (el[k] + el[k]);
            }
            let mut r = hypot_lanes(&p, &one);
            let (mut h, mut nl, mut nl1, mut fh) = (zero, zero, zero, zero);
            for k in 0..LANES {
                if p[k] < T::ZERO {
                    r[k] = -r[k];
                }
                nl[k] = el[k] / (p[k] + r[k]);
                nl1[k] = el[k] * (p[k] + r[k]);
                h[k] = dl[k] - nl[k];
                fh[k] = f[k] + h[k];
            }
            let am = masks::<T>(&active);
            d[l] = sel(&am, &nl, &dl);
            d[l + 1] = sel(&am, &nl1, &dl1);
            f = sel(&am, &fh, &f);
            for di in d.iter_mut().take(n).skip(l + 2) {
                let mut y = zero;
                for k in 0..LANES {
                    y[k] = di[k] - h[k];
                }
                *di = sel(&am, &y, di);
            }
            for k in 0..LANES {
                p[k] = d[m[k]][k];
            }
            let (mut c, mut c2, mut c3) = (one, one, one);
            let el1 = e[l + 1];
            let (mut s, mut s2) = (zero, zero);
            for i in (l..mmax).rev() {
                let mut on = [false; LANES];
                for k in 0..LANES {
                    on[k] = active[k] && i < m[k];
                }
                let all = on.iter().all(|&o| o);
                let onm = masks::<T>(&on);
                // each step in its own loop over the lanes, the state updated by selects
                // (so that all of it vectorises)
                let (ei, di) = (e[i], d[i]);
                let r = hypot_lanes(&p, &ei);
                let (mut g, mut hk, mut e1, mut sn, mut cn) = (zero, zero, zero, zero, zero);
                for k in 0..LANES {
                    g[k] = c[k] * ei[k];
                    hk[k] = c[k] * p[k];
                    e1[k] = s[k] * r[k];
                    sn[k] = ei[k] / r[k];
                    cn[k] = p[k] / r[k];
                }
                let (mut pn, mut d1) = (zero, zero);
                for k in 0..LANES {
                    pn[k] = cn[k] * di[k] - sn[k] * g[k];
                    d1[k] = hk[k] + sn[k] * (cn[k] * g[k] + sn[k] * di[k]);
                }
                c3 = sel(&onm, &c2, &c3);
                c2 = sel(&onm, &c, &c2);
                s2 = sel(&onm, &s, &s2);
                e[i + 1] = sel(&onm, &e1, &e[i + 1]);
                s = sel(&onm, &sn, &s);
                c = sel(&onm, &cn, &c);
                p = sel(&onm, &pn, &p);
                d[i + 1] = sel(&onm, &d1, &d[i + 1]);
                // the rotation of columns i, i + 1 of V
                rc[i] = c;
                rs[i] = s;
                rm[i] = onm;
                rall[i] = all;
                // V gets the previous rotation (i + 1) now: its independent work runs
                // while this step's divisions and square root, on which the next step
                // waits, are in flight (applied after the whole sweep, the sweep's
                // chain of steps ran alone, bound by their latency). Each entry gets
                // the same operations in the same order either way.
                if vectors && i + 1 < mmax {
                    rotate_cols(v, n, i + 1, &rc[i + 1], &rs[i + 1], &rm[i + 1], rall[i + 1]);
                }
            }
            if vectors {
                // the sweep's last rotation (the others were applied in the loop)
                rotate_cols(v, n, l, &rc[l], &rs[l], &rm[l], rall[l]);
            }
            let el = e[l];
            for k in 0..LANES {
                let pk = -s[k] * s2[k] * c3[k] * el1[k] * el[k] / nl1[k];
                if active[k] {
                    e[l][k] = s[k] * pk;
                    d[l][k] = c[k] * pk;
                    iters[k] += 1;
                    // as the scalar loop: a NaN never converges
                    let converged = e[l][k].abs() <= eps * tst1[k];
                    active[k] = !converged && iters[k] < MAX_QL_ITER;
                }
            }
        }
        for k in 0..LANES {
            d[l][k] += f[k];
        }
        e[l] = zero;
    }
    let LaneOut { w: wout, v: mut vout } = out;
    for (k, wl) in wout.chunks_exact_mut(n).enumerate().take(count) {
        let mut vl = vout.as_deref_mut().map(|vo| &mut vo[k * nn..(k + 1) * nn]);
        if bad[k] {
            wl.fill(T::NAN);
            if let Some(vl) = vl {
                vl.fill(T::NAN);
            }
            continue;
        }
        if amax[k] == T::ZERO {
            // as the scalar code's early return
            wl.fill(T::ZERO);
            if let Some(vl) = vl.as_deref_mut() {
                vl.fill(T::ZERO);
                for j in 0..n {
                    vl[j * n + j] = T::ONE;
                }
            }
            sort_and_gauge(wl, vl);
        } else {
            // as `sort_and_gauge`, without moving columns: the same insertion sort (the
            // same comparisons, so the same order) on the indices, then each column is
            // copied out of the lanes once, to its place
            for (j, x) in wl.iter_mut().enumerate() {
                *x = d[j][k] * scale[k];
            }
            let mut idx = [0usize; SMALL_N];
            for (j, x) in idx.iter_mut().enumerate() {
                *x = j;
            }
            for j in 1..n {
                let mut q = j;
                while q > 0 && wl[q - 1] > wl[q] {
                    wl.swap(q - 1, q);
                    idx.swap(q - 1, q);
                    q -= 1;
                }
            }
            if let Some(vl) = vl {
                for (col, &src) in vl.chunks_exact_mut(n).zip(&idx[..n]) {
                    for (x, y) in col.iter_mut().zip(&v[src * n..(src + 1) * n]) {
                        *x = y[k];
                    }
                    gauge(col);
                }
            }
        }
    }
}

/// Runs a batch of `count` matrices of order `n` in lane groups: `group(first, len,
/// out, scratch)` on each run of up to [`LANES`] consecutive matrices (`len` of them; the
/// outputs their slices of `w` and `v`), split across rayon tasks (a multiple of
/// [`LANES`] matrices each, independent of the thread count) when there is enough `work`
/// per matrix.
fn for_each_lane_group<T: LinalgElem>(
    n: usize,
    work: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    group: impl Fn(usize, usize, LaneOut<'_, T>, &mut LaneBufs<T>) + Sync,
) {
    let count = w.len() / n;
    let range = |start: usize, w: &mut [T], mut v: Option<&mut [T]>| {
        let mut bufs = LaneBufs::default();
        for (g, wc) in w.chunks_mut(n * LANES).enumerate() {
            let len = wc.len() / n;
            let vc = v.as_deref_mut().map(|v| &mut v[g * LANES * n * n..][..len * n * n]);
            group(start + g * LANES, len, LaneOut { w: wc, v: vc }, &mut bufs);
        }
    };
    if count * work >= 2 * TASK_WORK {
        let per = (TASK_WORK / work.max(1)).max(1).div_ceil(LANES) * LANES;
        match v {
            Some(v) => {
                let (pw, pv) = (Parts::new(w, n * per), Parts::new(v, n * n * per));
                run_tasks(pw.len(), |t| range(t * per, pw.take(t), Some(pv.take(t))));
            }
            None => for_each_chunk(w, n * per, |t, wc| range(t * per, wc, None)),
        }
    } else {
        range(0, w, v);
    }
}

/// A vector layout `(*, n)` read as a batch of `n x 1` matrices.
fn column(l: &Layout) -> Batch {
    let mut dims = l.dims().to_vec();
    dims.push(1);
    let mut strides = l.strides().to_vec();
    strides.push(1);
    Batch::of(&Layout::new(dims.into(), strides, l.offset()))
}

/// The VJP of [`eigh`], fused per matrix (the backward pass's fast path when it is not
/// recorded): `gA = V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ`, `F_ij = 1/(w_j − w_i)`, from the
/// eigenvalues `w: (*, n)`, the eigenvectors `v: (*, n, n)` and the cotangents (`None`
/// is zero; not both), as `crate::linalg::eigh`'s tensor-op VJP computes it, with the
/// same rule at a zero gap (the pair's term is dropped where the projected cotangent is
/// negligible). Returns `gA` (contiguous `(*, n, n)`), or `None` if at some matrix the
/// cotangent is not negligible at a zero gap (the gradient is undefined there).
///
/// Each matrix is done by [`backward_simd`] (allocation-free, the three products with
/// FMAs on the CPU's vector units); the batch is split over rayon in runs of matrices
/// (each matrix's result does not depend on the split).
pub(crate) fn eigh_backward<T: LinalgElem + LaneBits>(
    w: (&[T], &Layout),
    v: (&[T], &Layout),
    gw: Option<(&[T], &Layout)>,
    gv: Option<(&[T], &Layout)>,
) -> Option<(Vec<T>, Layout)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let bv = Batch::of(v.1);
    let n = bv.n;
    let bw = column(w.1);
    let bgw = gw.map(|g| column(g.1));
    let bgv = gv.map(|g| Batch::of(g.1));
    let size = n * n;
    let count = bv.len();
    let mut out = crate::backend::cpu::pool::overwritten(count * size, T::ZERO);
    let layout = Layout::contiguous(v.1.shape().clone());
    if size == 0 || count == 0 {
        return Some((out, layout));
    }
    let inputs = BackwardInputs {
        v: (v.0, &bv),
        w: (w.0, &bw),
        gw: gw.zip(bgw.as_ref()).map(|(g, b)| (g.0, b)),
        gv: gv.zip(bgv.as_ref()).map(|(g, b)| (g.0, b)),
    };
    let degenerate = AtomicBool::new(false);
    let run = |first: usize, chunk: &mut [T]| {
        if !backward_simd(&inputs, first, chunk) {
            degenerate.store(true, Ordering::Relaxed);
        }
    };
    let work = 6 * n * n * n;
    if count > 1 && count * work >= 2 * TASK_WORK {
        // runs of a few matrices per task (the scratch is set up once per run)
        let per = (TASK_WORK / work).max(BACKWARD_RUN);
        for_each_chunk(&mut out, size * per, |t, c| run(t * per, c));
    } else {
        run(0, &mut out);
    }
    if degenerate.load(Ordering::Relaxed) {
        return None;
    }
    Some((out, layout))
}

/// The least number of matrices per rayon task in [`eigh_backward`].
const BACKWARD_RUN: usize = 8;

/// The inputs of [`eigh_backward`]: each array with its batch.
struct BackwardInputs<'a, T> {
    v: (&'a [T], &'a Batch),
    w: (&'a [T], &'a Batch),
    gw: Option<(&'a [T], &'a Batch)>,
    gv: Option<(&'a [T], &'a Batch)>,
}

/// The matrices `first..` of [`eigh_backward`] (as many as `out` holds, row-major
/// `n x n` each), through [`backward_simd_n`] in the CPU's widest vector instructions.
/// False if the gradient is undefined at one of them.
fn backward_simd<T: LinalgElem + LaneBits>(
    inputs: &BackwardInputs<'_, T>,
    first: usize,
    out: &mut [T],
) -> bool {
    struct Kernel<'a, 'b, T, const N: usize> {
        inputs: &'a BackwardInputs<'a, T>,
        first: usize,
        out: &'b mut [T],
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = bool;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) -> bool {
            let Kernel { inputs, first, out } = self;
            let n = if N > 0 { N } else { inputs.v.1.n };
            let size = n * n;
            let eps = T::EPSILON.to_f64();
            // scratch: V (where it is not column-major contiguous in place), Vᵀ then Xᵀ,
            // X then V M, the middle matrix M; w and gw
            let mut tmp = vec![T::ZERO; 4 * size + 2 * n];
            let (vbuf, rest) = tmp.split_at_mut(size);
            let (t, rest) = rest.split_at_mut(size);
            let (x, rest) = rest.split_at_mut(size);
            let (m, rest) = rest.split_at_mut(size);
            let (wi, gwi) = rest.split_at_mut(n);
            let (vd, bv) = inputs.v;
            let in_place = bv.rs == 1 && bv.cs == n;
            let mut ok = true;
            for (j, dst) in out.chunks_exact_mut(size).enumerate() {
                let i = first + j;
                let vm: &[T] = if in_place {
                    let off = bv.offset(i);
                    &vd[off..off + size]
                } else {
                    bv.load(vd, i, vbuf);
                    vbuf
                };
                inputs.w.1.load(inputs.w.0, i, wi);
                match inputs.gw {
                    Some((g, b)) => b.load(g, i, gwi),
                    None => gwi.fill(T::ZERO),
                }
                let gv = inputs.gv.map(|(g, b)| {
                    let off = b.offset(i);
                    if b.cs == 1 && b.rs >= n {
                        // rows contiguous: read in place
                        GvRef::Rows(&g[off..], b.rs)
                    } else if b.rs == 1 && b.cs >= n {
                        GvRef::Columns(&g[off..], b.cs)
                    } else {
                        // column-major into dst (scratch until the last product)
                        b.load(g, i, dst);
                        GvRef::Loaded
                    }
                });
                ok &= backward_simd_n::<T, N>(n, vm, wi, gwi, gv, t, x, m, dst, eps);
            }
            ok
        }
    }
    let n = inputs.v.1.n;
    let arch = crate::backend::cpu::simd::arch();
    by_order!(n;
        2 3 4 8 16 => |N| arch.dispatch(Kernel::<T, N> { inputs, first, out }),
        _ => arch.dispatch(Kernel::<T, 0> { inputs, first, out }))
}

/// Where [`backward_simd_n`] reads `gV` from: rows or columns in place (the slice from
/// the matrix's start, and the stride between rows or columns), or column-major in `dst`.
#[derive(Clone, Copy)]
enum GvRef<'a, T> {
    Rows(&'a [T], usize),
    Columns(&'a [T], usize),
    Loaded,
}

/// One matrix of [`backward_simd`] for the order `N` (`N = 0`: `n`): `vm` is `V`
/// (column-major), `wi` and `gwi` the eigenvalues and their cotangent, `gv` the
/// eigenvectors' cotangent if any (in place, or column-major in `dst`); `t`, `x`, `m`
/// scratch; `gA` (row-major) into `dst`. False if the gradient is undefined (a cotangent
/// not negligible at a zero gap). The operations of the tensor-op VJP, each product
/// summed over `k` in order with FMAs (whichever way `gV` is read: the same bits), each
/// inner loop running down contiguous rows or columns (vectorised).
// bitwise `&` on bools on purpose (no branches in the vectorised loop)
#[allow(clippy::too_many_arguments, clippy::needless_range_loop, clippy::needless_bitwise_bool)]
#[inline(always)]
fn backward_simd_n<T: LinalgElem + LaneBits, const N: usize>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<GvRef<'_, T>>,
    t: &mut [T],
    x: &mut [T],
    m: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    let n = if N == 0 { n } else { N };
    let size = n * n;
    let (vm, t, x, m, dst) =
        (&vm[..size], &mut t[..size], &mut x[..size], &mut m[..size], &mut dst[..size]);
    let (wi, gwi) = (&wi[..n], &gwi[..n]);
    // the middle matrix M (column-major): diag(gw) + F ∘ skew(VᵀgV)
    if let Some(gv) = gv {
        // X = VᵀgV, X_ij = Σ_k V_ki gV_kj (k in order), into x (column-major), and its
        // transpose into t
        if let GvRef::Rows(g, rs) = gv {
            // row i of X at once: Σ_k V_ki gV_k:, into t (column-major Xᵀ)
            products(n, t, |i, k| vm[i * n + k], |k| &g[k * rs..k * rs + n]);
            for j in 0..n {
                for i in 0..n {
                    x[j * n + i] = t[i * n + j];
                }
            }
        } else {
            // column j of X at once: Σ_k V_k: gV_kj, with the rows of V (Vᵀ in t)
            for k in 0..n {
                for i in 0..n {
                    t[k * n + i] = vm[i * n + k];
                }
            }
            let vt = &*t;
            match gv {
                GvRef::Columns(g, cs) => {
                    products(n, x, |j, k| g[j * cs + k], |k| &vt[k * n..(k + 1) * n]);
                }
                _ => products(n, x, |j, k| dst[j * n + k], |k| &vt[k * n..(k + 1) * n]),
            }
            for j in 0..n {
                for i in 0..n {
                    t[j * n + i] = x[i * n + j];
                }
            }
        }
        // skew_ij = (X_ij − X_ji) / 2 into m, and its largest magnitude (NaNs skipped, as
        // `f64::max` skips them)
        let half = T::of(0.5);
        let mut smax = [0.0f64; 4];
        for ((mj, xj), tj) in m.chunks_exact_mut(n).zip(x.chunks_exact(n)).zip(t.chunks_exact(n)) {
            for i in 0..n {
                let sk = (xj[i] - tj[i]) * half;
                mj[i] = sk;
                let a = sk.to_f64().abs();
                let s = &mut smax[i % 4];
                *s = if a > *s { a } else { *s };
            }
        }
        let smax = smax.iter().fold(0.0f64, |mx, &s| mx.max(s));
        let wmax = wi.iter().fold(0.0f64, |mx, w| mx.max(w.to_f64().abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let skew_tol = eps.sqrt() * smax;
        // F ∘ skew, the pairs with a zero gap dropped (the diagonal too); a zero gap
        // with a skew that is not negligible is an undefined gradient
        let mut bad = false;
        for j in 0..n {
            let wj = wi[j];
            let mj = &mut m[j * n..(j + 1) * n];
            for i in 0..n {
                let sk = mj[i];
                // NaN gaps are not degenerate: the NaN goes through
                let degenerate = i == j || (wj.to_f64() - wi[i].to_f64()).abs() <= gap_tol;
                bad |= degenerate & (i != j) & (sk.to_f64().abs() > skew_tol);
                let q = sk / (wj - wi[i]);
                mj[i] = if degenerate { T::ZERO } else { q };
            }
        }
        if bad && smax > 0.0 {
            return false;
        }
    } else {
        m.fill(T::ZERO);
    }
    for i in 0..n {
        m[i * n + i] += gwi[i];
    }
    // X = V M (column-major): column j is Σ_k V_:k M_kj, k in order
    products(n, x, |j, k| m[j * n + k], |k| &vm[k * n..(k + 1) * n]);
    // gA = X Vᵀ, row-major: row r is Σ_k X_rk V_:k, k in order
    products(n, dst, |r, k| x[k * n + r], |k| &vm[k * n..(k + 1) * n]);
    true
}

/// Row `i` of `out` (`n x n`, rows contiguous) is `Σ_k c(i, k) r(k)` over `k = 0..n` in
/// order, one FMA per term and entry (`r(k)` at least `n` long), summed in registers
/// (local arrays, in blocks of 32 entries) and stored once; two rows at a time, sharing
/// the loads of `r(k)` (twice the independent FMA chains of one row: the FMAs' latency,
/// not their throughput, bounds one row).
#[inline(always)]
fn products<'a, T: LinalgElem + LaneBits>(
    n: usize,
    out: &mut [T],
    c: impl Fn(usize, usize) -> T,
    r: impl Fn(usize) -> &'a [T],
) {
    const B: usize = 32;
    let mut i = 0;
    while i + 1 < n {
        let mut j0 = 0;
        while j0 < n {
            let len = (n - j0).min(B);
            let (mut acc0, mut acc1) = ([T::ZERO; B], [T::ZERO; B]);
            for k in 0..n {
                let (c0, c1, rk) = (c(i, k), c(i + 1, k), &r(k)[j0..j0 + len]);
                for j in 0..len {
                    acc0[j] = c0.mul_add(rk[j], acc0[j]);
                    acc1[j] = c1.mul_add(rk[j], acc1[j]);
                }
            }
            out[i * n + j0..i * n + j0 + len].copy_from_slice(&acc0[..len]);
            out[(i + 1) * n + j0..(i + 1) * n + j0 + len].copy_from_slice(&acc1[..len]);
            j0 += B;
        }
        i += 2;
    }
    if i < n {
        let mut j0 = 0;
        while j0 < n {
            let len = (n - j0).min(B);
            let mut acc = [T::ZERO; B];
            for k in 0..n {
                let (c0, rk) = (c(i, k), &r(k)[j0..j0 + len]);
                for j in 0..len {
                    acc[j] = c0.mul_add(rk[j], acc[j]);
                }
            }
            out[i * n + j0..i * n + j0 + len].copy_from_slice(&acc[..len]);
            j0 += B;
        }
    }
}

/// The per-matrix VJP of [`eigh_backward`] before [`backward_simd`] (plain products, no
/// FMA): the reference the vectorised one is tested against. `vm` is `V` (column-major),
/// `wi` and `gwi` the eigenvalues and their cotangent, `gv` the eigenvectors' cotangent
/// (matrix `i` of a batch), `x` and `y` scratch; `gA` (row-major) into `dst`. False if the
/// gradient is undefined (a cotangent not negligible at a zero gap).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn backward_one<T: LinalgElem>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<(&[T], &Batch, usize)>,
    x: &mut [T],
    y: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    by_order!(n;
        1 2 3 4 8 16 => |N| backward_n::<T, N>(n, vm, wi, gwi, gv, x, y, dst, eps),
        _ => backward_n::<T, 0>(n, vm, wi, gwi, gv, x, y, dst, eps))
}

/// [`backward_one`] for the order `N` (`N = 0`: `n`).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn backward_n<T: LinalgElem, const N: usize>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<(&[T], &Batch, usize)>,
    x: &mut [T],
    m: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    let n = if N == 0 { n } else { N };
    let size = n * n;
    let (vm, x, m, dst) = (&vm[..size], &mut x[..size], &mut m[..size], &mut dst[..size]);
    // the middle matrix M (column-major): diag(gw) + F ∘ skew(VᵀgV)
    m.fill(T::ZERO);
    if let Some((g, b, i)) = gv {
        // gV column-major into dst (scratch), then X = VᵀgV: X_ij = v_i · gv_j, summed
        // over k in order as a dot product would, but for all i at once (the rows of V
        // in m, the transpose, for now): vectorises
        b.load(g, i, dst);
        for k in 0..n {
            for i in 0..n {
                m[k * n + i] = vm[i * n + k];
            }
        }
        for j in 0..n {
            let gj = &dst[j * n..(j + 1) * n];
            let xj = &mut x[j * n..(j + 1) * n];
            xj.fill(T::ZERO);
            for k in 0..n {
                let (gkj, vk) = (gj[k], &m[k * n..(k + 1) * n]);
                for i in 0..n {
                    xj[i] += vk[i] * gkj;
                }
            }
        }
        let half = T::of(0.5);
        let mut smax = 0.0f64;
        for j in 0..n {
            for i in 0..n {
                // skew_ij = (X_ij − X_ji) / 2, kept in m for now
                let sk = (x[j * n + i] - x[i * n + j]) * half;
                m[j * n + i] = sk;
                smax = smax.max(sk.to_f64().abs());
            }
        }
        let wmax = wi.iter().fold(0.0f64, |mx, w| mx.max(w.to_f64().abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let skew_tol = eps.sqrt() * smax;
        for j in 0..n {
            for i in 0..n {
                let sk = m[j * n + i];
                // NaN gaps are not degenerate: the NaN goes through
                let degenerate = i == j || (wi[j].to_f64() - wi[i].to_f64()).abs() <= gap_tol;
                m[j * n + i] = if degenerate {
                    if i != j && sk.to_f64().abs() > skew_tol && smax > 0.0 {
                        return false;
                    }
                    T::ZERO
                } else {
                    sk / (wi[j] - wi[i])
                };
            }
        }
    }
    for i in 0..n {
        m[i * n + i] += gwi[i];
    }
    // X = V M (column-major)
    for j in 0..n {
        let xj = &mut x[j * n..(j + 1) * n];
        xj.fill(T::ZERO);
        for k in 0..n {
            let mkj = m[j * n + k];
            let vk = &vm[k * n..(k + 1) * n];
            for r in 0..n {
                xj[r] += vk[r] * mkj;
            }
        }
    }
    // gA = X Vᵀ, row-major: gA_rc = Σ_k X_rk V_ck; column by column of Vᵀ
    dst.fill(T::ZERO);
    for k in 0..n {
        let xk = &x[k * n..(k + 1) * n];
        let vk = &vm[k * n..(k + 1) * n];
        for r in 0..n {
            let xr = xk[r];
            let row = &mut dst[r * n..(r + 1) * n];
            for c in 0..n {
                row[c] += xr * vk[c];
            }
        }
    }
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A batch of `count` symmetric `n x n` matrices stored with a gap of 3 entries between
    /// matrices, each read through the strides `(rs, cs)` (transposed if `transposed`):
    /// random ones, and among them a zero matrix, a diagonal one with repeated entries,
    /// one with a repeated eigenvalue, tiny and huge ones, one with a zero row and column,
    /// an already tridiagonal one, a rank-one one, and (if `non_finite`) a NaN and an inf
    /// in the triangle read.
    fn batch(
        count: usize,
        n: usize,
        seed: u64,
        transposed: bool,
        non_finite: bool,
    ) -> (Vec<f64>, Layout) {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let stride = n * n + 3;
        let mut data = vec![0.0; count * stride];
        for b in 0..count {
            let mut m = symmetric(n, b % 11, &mut rnd);
            match b % 11 {
                9 if non_finite => m[n * n - 1] = f64::NAN,
                10 if non_finite => m[n] = f64::INFINITY,
                _ => {}
            }
            data[b * stride..b * stride + n * n].copy_from_slice(&m);
        }
        let (rs, cs) = if transposed { (1, n) } else { (n, 1) };
        (data, Layout::new(vec![count, n, n].into(), vec![stride, rs, cs], 0))
    }

    /// A symmetric `n x n` matrix (row-major, so also column-major) of kind `kind`, its
    /// entries from `rnd`: random (any kind not below), 1 zero, 2 diagonal with repeated
    /// entries, 3 a repeated eigenvalue (`H diag(1, 1, 3, 4, ...) H` with a Householder
    /// reflector `H`), 4 tiny (1e-300), 5 huge (1e250), 6 a zero row and column, 7
    /// tridiagonal, 8 rank one.
    pub(crate) fn symmetric(n: usize, kind: usize, rnd: &mut impl FnMut() -> f64) -> Vec<f64> {
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let x = rnd();
                m[i * n + j] = x;
                m[j * n + i] = x;
            }
        }
        match kind {
            1 => m.fill(0.0),
            2 => {
                m.fill(0.0);
                for i in 0..n {
                    m[i * n + i] = if i < 3 { 2.0 } else { i as f64 };
                }
            }
            3 => {
                // H diag(1, 1, 3, 4, ...) H with a Householder reflector H
                let u: Vec<f64> = (0..n).map(|_| rnd()).collect();
                let uu: f64 = u.iter().map(|x| x * x).sum();
                let h = |i: usize, j: usize| f64::from(u8::from(i == j)) - 2.0 * u[i] * u[j] / uu;
                let dg = |k: usize| if k < 2 { 1.0 } else { 1.0 + k as f64 };
                for i in 0..n {
                    for j in 0..=i {
                        let x: f64 = (0..n).map(|k| h(i, k) * dg(k) * h(k, j)).sum();
                        m[i * n + j] = x;
                        m[j * n + i] = x;
                    }
                }
            }
            4 => m.iter_mut().for_each(|x| *x *= 1e-300),
            5 => m.iter_mut().for_each(|x| *x *= 1e250),
            6 => {
                let k = n / 2;
                for i in 0..n {
                    m[i * n + k] = 0.0;
                    m[k * n + i] = 0.0;
                }
            }
            7 => {
                for i in 0..n {
                    for j in 0..n {
                        if i.abs_diff(j) > 1 {
                            m[i * n + j] = 0.0;
                        }
                    }
                }
            }
            8 => {
                let u: Vec<f64> = (0..n).map(|_| rnd()).collect();
                for i in 0..n {
                    for j in 0..n {
                        m[i * n + j] = u[i] * u[j];
                    }
                }
            }
            _ => {}
        }
        m
    }

    fn bits<T: LinalgElem>(x: &[T]) -> Vec<u64> {
        x.iter().map(|v| v.to_f64().to_bits()).collect()
    }

    /// Matrix `i` of `l` alone.
    fn single(l: &Layout, i: usize) -> Layout {
        let s = l.strides();
        Layout::new(l.dims()[1..].to_vec().into(), s[1..].to_vec(), l.offset() + i * s[0])
    }

    fn check<T: LinalgElem + LaneBits>(data: &[T], l: &Layout, what: &str) {
        let (n, count) = (l.dims()[1], l.dims()[0]);
        for upper in [false, true] {
            let (w, v, failed) = eigh(data, l, upper, true);
            let (wv, _, failed_v) = eigh(data, l, upper, false);
            let v = v.unwrap().0;
            assert_eq!(failed, failed_v, "{what}");
            for i in 0..count {
                let (w1, v1, f1) = eigh(data, &single(l, i), upper, true);
                let (wv1, _, _) = eigh(data, &single(l, i), upper, false);
                let what = format!("{what} upper {upper} matrix {i}");
                assert_eq!(bits(&w[i * n..][..n]), bits(&w1), "{what}: eigenvalues");
                assert_eq!(bits(&v[i * n * n..][..n * n]), bits(&v1.unwrap().0), "{what}: vectors");
                assert_eq!(bits(&wv[i * n..][..n]), bits(&wv1), "{what}: eigvalsh");
                assert_eq!(f1.is_some(), w1.iter().any(|x| x.is_nan()), "{what}");
            }
        }
    }

    #[test]
    fn jacobi_takes_tiny_pairs_through_theta() {
        // a zero diagonal, (0, 1) = ε and one entry 1 elsewhere: the first rotation has
        // aqq − app = 0 and 2 apq = 2ε below √(min positive), where the squares of
        // `tangent` lose digits (1e-160) or vanish (1e-170: a division by zero, then NaN)
        // and `tangent_theta` takes over; eigenvalues ±ε, ±1 (n = 4) and 0,
        // ±√(1 + ε²) (n = 3), in the lanes and alone
        for (eps, f32_eps) in [(1e-160, 1e-21f32), (1e-170, 1e-25)] {
            for n in [3, 4] {
                let mut m = vec![0.0f64; n * n];
                m[1] = eps;
                m[n] = eps;
                let (p, q) = if n == 4 { (2, 3) } else { (1, 2) };
                m[p * n + q] = 1.0;
                m[q * n + p] = 1.0;
                let expect = if n == 4 { vec![-1.0, -eps, eps, 1.0] } else { vec![-1.0, 0.0, 1.0] };
                let neg: Vec<f64> = m.iter().map(|x| -x).collect();
                let data: Vec<f64> = [m.clone(), neg, m].concat();
                let l = Layout::contiguous(vec![3, n, n].into());
                check(&data, &l, &format!("tiny {eps} n {n}"));
                for vectors in [false, true] {
                    let (w, _, failed) = eigh(&data, &single(&l, 0), false, vectors);
                    assert!(failed.is_none());
                    for (x, y) in w.iter().zip(&expect) {
                        // relative; absolute at the zero eigenvalue
                        let tol = 1e-15 * if *y == 0.0 { 1.0 } else { y.abs() };
                        assert!((x - y).abs() <= tol, "{eps} n {n}: {w:?}");
                    }
                }
                let data32: Vec<f32> = data
                    .iter()
                    .map(|&x| if x.abs() == eps { x.signum() as f32 * f32_eps } else { x as f32 })
                    .collect();
                check(&data32, &l, &format!("f32 tiny {f32_eps} n {n}"));
                let (w, _, _) = eigh(&data32, &single(&l, 0), false, false);
                if n == 4 {
                    assert!((w[1] + f32_eps).abs() <= 1e-6 * f32_eps, "f32 {w:?}");
                    assert!((w[2] - f32_eps).abs() <= 1e-6 * f32_eps, "f32 {w:?}");
                }
                assert!(w.iter().all(|x| x.is_finite()), "f32 {w:?}");
            }
        }
    }

    #[test]
    fn lanes_give_the_bits_of_a_single_matrix() {
        // every order of the lane kernels (Jacobi to ROTATE_N, QL above), batches around
        // the lane count, both triangles, strided and transposed input, f64 and f32,
        // awkward matrices and NaN/inf ones among regular ones
        for n in 2..=SMALL_N {
            for count in [2, 9, 11, 21] {
                for transposed in [false, true] {
                    let seed = (n * 100 + count) as u64 + u64::from(transposed);
                    let (data, l) = batch(count, n, seed, transposed, count != 9);
                    check(&data, &l, &format!("f64 n {n} count {count} t {transposed}"));
                    if count == 21 {
                        let data32: Vec<f32> = data.iter().map(|&x| x as f32).collect();
                        check(&data32, &l, &format!("f32 n {n} count {count} t {transposed}"));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod backward_tests {
    use super::*;

    fn rnd(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// `gA` of each matrix by the reference [`backward_one`] (`None` where the gradient is
    /// undefined).
    #[allow(clippy::type_complexity)]
    fn reference<T: LinalgElem>(
        w: (&[T], &Layout),
        v: (&[T], &Layout),
        gw: Option<(&[T], &Layout)>,
        gv: Option<(&[T], &Layout)>,
    ) -> Vec<Option<Vec<T>>> {
        let bv = Batch::of(v.1);
        let n = bv.n;
        let (bw, bgw, bgv) = (column(w.1), gw.map(|g| column(g.1)), gv.map(|g| Batch::of(g.1)));
        (0..bv.len())
            .map(|i| {
                let mut vm = vec![T::ZERO; n * n];
                let (mut x, mut y, mut dst) = (vm.clone(), vm.clone(), vm.clone());
                let (mut wi, mut gwi) = (vec![T::ZERO; n], vec![T::ZERO; n]);
                bv.load(v.0, i, &mut vm);
                bw.load(w.0, i, &mut wi);
                if let (Some(g), Some(b)) = (gw, &bgw) {
                    b.load(g.0, i, &mut gwi);
                }
                let g = gv.zip(bgv.as_ref()).map(|(g, b)| (g.0, b, i));
                let eps = T::EPSILON.to_f64();
                backward_one(n, &vm, &wi, &gwi, g, &mut x, &mut y, &mut dst, eps).then_some(dst)
            })
            .collect()
    }

    /// A batch `(count, rows, cols)` of random entries stored in `order` ("row", "col",
    /// "gap": rows with a gap of 2 entries, "bcast": one matrix for all).
    fn mats(count: usize, n: usize, order: &str, seed: u64) -> (Vec<f64>, Layout) {
        let mut s = seed;
        let (len, strides) = match order {
            "row" => (count * n * n, vec![n * n, n, 1]),
            "col" => (count * n * n, vec![n * n, 1, n]),
            "gap" => (count * n * (n + 2) + 5, vec![n * (n + 2), n + 2, 1]),
            _ => (n * n, vec![0, n, 1]),
        };
        let data = (0..len).map(|_| rnd(&mut s)).collect();
        (data, Layout::new(vec![count, n, n].into(), strides, 0))
    }

    fn compare<T: LinalgElem + LaneBits>(
        count: usize,
        n: usize,
        vorder: &str,
        gorder: &str,
        cots: (bool, bool),
        special: u8,
        seed: u64,
    ) {
        let of = |x: Vec<f64>| x.into_iter().map(T::of).collect::<Vec<T>>();
        let (v, vl) = mats(count, n, vorder, seed);
        let (gv, gvl) = mats(count, n, gorder, seed + 1);
        let mut s = seed + 2;
        // eigenvalues ascending; `special` 1: a NaN in gV and in w of some matrices, 2: a
        // repeated pair in some
        let mut w = vec![0.0; count * n];
        for (b, wb) in w.chunks_exact_mut(n).enumerate() {
            let mut acc = rnd(&mut s);
            for x in wb.iter_mut() {
                acc += 0.1 + rnd(&mut s).abs();
                *x = acc;
            }
            if special == 2 && n > 2 && b % 5 == 3 {
                wb[2] = wb[1];
            }
        }
        let gw: Vec<f64> = (0..count * n).map(|_| rnd(&mut s)).collect();
        let (v, mut gv, mut w, gw) = (of(v), of(gv), of(w), of(gw));
        if special == 1 {
            if count > 4 && n > 1 {
                gv[gvl.offset() + 4 * gvl.strides()[0] + 1] = T::NAN;
            }
            if count > 6 && gorder != "bcast" {
                w[6 * n] = T::NAN;
            }
        }
        let wl = Layout::contiguous(vec![count, n].into());
        let gwl = Layout::new(vec![count, n].into(), vec![n, 1], 0);
        let w_ = (&w[..], &wl);
        let v_ = (&v[..], &vl);
        let gw_ = cots.0.then_some((&gw[..], &gwl));
        let gv_ = cots.1.then_some((&gv[..], &gvl));
        let what = format!("n {n} count {count} V {vorder} gV {gorder} {cots:?} {special}");
        let want = reference(w_, v_, gw_, gv_);
        let got = eigh_backward(w_, v_, gw_, gv_);
        if want.iter().any(Option::is_none) {
            assert!(got.is_none(), "{what}: expected the undefined gradient");
            assert!(special == 2 && cots.1, "{what}");
            return;
        }
        assert!(special != 2 || !cots.1 || count < 4 || n < 3, "{what}: expected undefined");
        let (got, l) = got.expect(&what);
        assert_eq!(l.dims(), vl.dims(), "{what}");
        let tol = if T::EPSILON.to_f64() > 1e-10 { 1e-4 } else { 1e-12 };
        let mut nans = 0;
        for (i, (want, got)) in want.iter().zip(got.chunks_exact(n * n)).enumerate() {
            let want = want.as_ref().unwrap();
            let scale = want.iter().fold(1.0f64, |m, x| m.max(x.to_f64().abs()));
            for (a, b) in want.iter().zip(got) {
                let (a, b) = (a.to_f64(), b.to_f64());
                assert_eq!(a.is_nan(), b.is_nan(), "{what} matrix {i}: {a} vs {b}");
                nans += usize::from(a.is_nan());
                assert!(
                    a.is_nan() || (a - b).abs() <= tol * scale,
                    "{what} matrix {i}: {a} vs {b}"
                );
            }
        }
        // the NaNs reach the gradient of their matrices only
        if special == 1 && cots.1 && count > 4 && n > 1 {
            assert!(nans > 0 && (gorder == "bcast" || nans < count * n * n), "{what}");
        }
    }

    #[test]
    fn backward_simd_matches_the_reference() {
        // every dispatched order and some others, batches around the task run, V and gV
        // in every layout (rows, columns in place; gapped rows and broadcast loaded),
        // either cotangent alone or both, f64 and f32, repeated eigenvalues (an undefined
        // gradient where gV is used), NaN in gV and in w among regular matrices
        for n in [1, 2, 3, 4, 5, 8, 11, 16, 17] {
            for count in [1, 3, 9, 21] {
                for (k, vorder) in ["row", "col", "gap"].into_iter().enumerate() {
                    for gorder in ["row", "col", "gap", "bcast"] {
                        for cots in [(true, true), (true, false), (false, true)] {
                            for special in [0, 1, 2] {
                                let seed = (n * 1000 + count * 10 + k) as u64;
                                compare::<f64>(count, n, vorder, gorder, cots, special, seed);
                                if count == 9 {
                                    compare::<f32>(count, n, vorder, gorder, cots, special, seed);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn backward_simd_is_thread_independent() {
        let (n, count) = (16, 37);
        let (v, vl) = mats(count, n, "col", 7);
        let (gv, gvl) = mats(count, n, "row", 8);
        let w: Vec<f64> = (0..count * n).map(|i| (i % n) as f64 + 0.01 * (i / n) as f64).collect();
        let wl = Layout::contiguous(vec![count, n].into());
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                eigh_backward((&w[..], &wl), (&v[..], &vl), None, Some((&gv[..], &gvl))).unwrap().0
            })
        };
        let one: Vec<u64> = run(1).iter().map(|x| x.to_bits()).collect();
        let three: Vec<u64> = run(3).iter().map(|x| x.to_bits()).collect();
        assert_eq!(one, three);
    }
}
