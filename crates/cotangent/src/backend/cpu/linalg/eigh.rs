//! The symmetric eigendecomposition `A = V diag(w) Vᵀ`, batched, reading one triangle.
//!
//! - tiny matrices (`n <= ROTATE_N`): an allocation-free cyclic Jacobi loop per matrix
//!   (rotations skip entries negligible relative to their diagonal, Demmel & Veselić's
//!   criterion, or to the largest diagonal entry), with rayon over the batch; with eigenvectors, the eigenvalues
//!   are then the Rayleigh quotients of the final vectors with the original matrix (the
//!   rotated diagonal accumulates a rounding per rotation);
//! - small ones (`n <= SMALL_N`): Householder tridiagonalisation and the implicit QL
//!   iteration (EISPACK's `tred2` + `tql2`), allocation-free per matrix, rayon over the
//!   batch;
//! - larger ones: faer's self-adjoint eigendecomposition (Householder tridiagonalisation,
//!   then divide and conquer), sequential below `PAR_N`.
//!
//! Both paths then sort the eigenvalues ascending and apply one sign gauge: each
//! eigenvector's component of largest magnitude (the first one on ties) is made positive.
//! A matrix whose read triangle holds a NaN or an infinity is not decomposed (no loop runs
//! on it): its outputs are NaN, and it is reported as failed (the first such matrix).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{self_adjoint_evd, self_adjoint_evd_scratch, ComputeEigenvectors};
use faer::{ColMut, MatMut, Par, Spec};
use rayon::prelude::*;

use super::{colmajor_layout, Batch, LinalgElem, TASK_WORK};
use crate::layout::Layout;

/// Up to this order the own loops are used (faer above).
pub(crate) const SMALL_N: usize = 16;
/// From this order faer may use every thread on one matrix.
const PAR_N: usize = 512;
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
    let off = b.offsets[i];
    let mut finite = true;
    for j in 0..n {
        for k in j..n {
            // (k, j) with k >= j in the lower triangle; (j, k) in the upper
            let x = if upper {
                data[off + j * b.rs + k * b.cs]
            } else {
                data[off + k * b.rs + j * b.cs]
            };
            finite &= x.is_finite();
            a[j * n + k] = x;
            a[k * n + j] = x;
        }
    }
    finite
}

/// Cyclic Jacobi on the symmetric column-major `n x n` block `a` (overwritten); the
/// eigenvalues go to `w` (unsorted), the rotations are accumulated into `v` (column-major,
/// set to the identity first) when given. The entries must be finite. Returns the power
/// of two the matrix was scaled by (`a` is left scaled).
fn jacobi<T: LinalgElem>(a: &mut [T], n: usize, w: &mut [T], v: Option<&mut [T]>) -> T {
    // one instance per order: the loops get constant bounds (unrolled, no bounds checks)
    macro_rules! by_order {
        ($($k:literal)*) => {
            match n {
                $($k => jacobi_n::<T, $k>(a, w, v),)*
                _ => jacobi_n::<T, 0>(a, w, v),
            }
        };
    }
    by_order!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
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
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[q * n + p];
                let (app, aqq) = (a[p * n + p], a[q * n + q]);
                if apq.abs() <= floor || apq.abs() <= eps * (app.abs() * aqq.abs()).sqrt() {
                    continue;
                }
                rotated = true;
                let theta = (aqq - app) / (apq + apq);
                let t = if theta.abs() > T::of(1e30) {
                    T::ONE / (theta + theta)
                } else {
                    let t = T::ONE / (theta.abs() + (theta * theta + T::ONE).sqrt());
                    if theta < T::ZERO {
                        -t
                    } else {
                        t
                    }
                };
                let c = T::ONE / (t * t + T::ONE).sqrt();
                let s = t * c;
                let tau = s / (T::ONE + c);
                a[p * n + p] = app - t * apq;
                a[q * n + q] = aqq + t * apq;
                a[q * n + p] = T::ZERO;
                a[p * n + q] = T::ZERO;
                for k in 0..n {
                    if k == p || k == q {
                        continue;
                    }
                    let g = a[p * n + k];
                    let h = a[q * n + k];
                    let gp = g - s * (h + g * tau);
                    let hq = h + s * (g - h * tau);
                    a[p * n + k] = gp;
                    a[k * n + p] = gp;
                    a[q * n + k] = hq;
                    a[k * n + q] = hq;
                }
                if let Some(v) = v.as_deref_mut() {
                    // p < q: column p lies before column q
                    let (lo, hi) = v.split_at_mut(q * n);
                    let (vp, vq) = (&mut lo[p * n..p * n + n], &mut hi[..n]);
                    for (x, y) in vp.iter_mut().zip(vq.iter_mut()) {
                        let (g, h) = (*x, *y);
                        *x = g - s * (h + g * tau);
                        *y = h + s * (g - h * tau);
                    }
                }
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
            let y: T = ak.iter().zip(vj).map(|(&x, &y)| x * inv * y).sum();
            acc += y * vkj;
        }
        *wj = acc * scale;
    }
}

/// Up to this order the Jacobi loop is used; above (to [`SMALL_N`]), Householder
/// tridiagonalisation and the implicit QL iteration ([`tridiagonal_ql`]).
const ROTATE_N: usize = 4;
/// The most QL iterations per eigenvalue (two or three are typical); a bound so that no
/// input can loop forever.
const MAX_QL_ITER: usize = 60;

/// `√(x² + y²)` without overflow or harmful underflow.
fn hypot<T: LinalgElem>(x: T, y: T) -> T {
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

/// A power of two within a factor 2 of `x > 0` (finite).
fn pow2_near<T: LinalgElem>(x: T) -> T {
    let mut s = T::ONE;
    let two = T::of(2.0);
    let mut y = x;
    while y >= two {
        y /= two;
        s *= two;
    }
    while y < T::ONE {
        y *= two;
        s /= two;
    }
    s
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
struct Scratch<T> {
    a: Vec<T>,
    a0: Vec<T>,
    e: Vec<T>,
    mem: Option<MemBuffer>,
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
    s.a.resize(n * n, T::ZERO);
    if !load_symmetric(data, b, i, upper, &mut s.a) {
        w.fill(T::NAN);
        if let Some(v) = v {
            v.fill(T::NAN);
        }
        return;
    }
    if n > ROTATE_N && n <= SMALL_N {
        s.e.resize(n, T::ZERO);
        if let Some(v) = v.as_deref_mut() {
            tridiagonal_ql(&s.a, n, w, v, &mut s.e);
        } else {
            // the transformations are accumulated anyway (into scratch)
            s.a0.resize(n * n, T::ZERO);
            tridiagonal_ql(&s.a, n, w, &mut s.a0, &mut s.e);
        }
    } else if n <= SMALL_N {
        match v.as_deref_mut() {
            Some(v) => {
                s.a0.clear();
                s.a0.extend_from_slice(&s.a);
                let scale = jacobi(&mut s.a, n, w, Some(&mut *v));
                rayleigh(&s.a0, n, scale, w, v);
            }
            None => {
                jacobi(&mut s.a, n, w, None);
            }
        }
    } else {
        let par = if n >= PAR_N { Par::rayon(0) } else { Par::Seq };
        let comp = if v.is_some() { ComputeEigenvectors::Yes } else { ComputeEigenvectors::No };
        let mem = s.mem.get_or_insert_with(|| {
            MemBuffer::new(self_adjoint_evd_scratch::<T>(n, comp, par, Spec::default()))
        });
        let am = faer::MatRef::from_column_major_slice(&s.a, n, n);
        let u = v.as_deref_mut().map(|v| MatMut::from_column_major_slice_mut(v, n, n));
        let r = self_adjoint_evd(
            am,
            ColMut::from_slice_mut(w).as_diagonal_mut(),
            u,
            par,
            MemStack::new(mem),
            Spec::default(),
        );
        if r.is_err() {
            w.fill(T::NAN);
            if let Some(v) = v {
                v.fill(T::NAN);
            }
            return;
        }
    }
    sort_and_gauge(w, v);
}

/// Eigenvalues `(*, n)` (contiguous) and, if `vectors`, eigenvectors `(*, n, n)`
/// (column-major, with their layout) of each symmetric matrix of `a: (*, n, n)`, reading
/// its lower (or, if `upper`, upper) triangle; with the index of the first matrix that
/// could not be decomposed (non-finite input), if any.
#[allow(clippy::type_complexity)]
pub(crate) fn eigh<T: LinalgElem>(
    a: &[T],
    l: &Layout,
    upper: bool,
    vectors: bool,
) -> (Vec<T>, Option<(Vec<T>, Layout)>, Option<usize>) {
    let b = Batch::of(l);
    let n = b.n;
    let count = b.len();
    let mut w = crate::backend::cpu::pool::filled(count * n, T::ZERO);
    let mut v = if vectors {
        Some(crate::backend::cpu::pool::filled(count * n * n, T::ZERO))
    } else {
        None
    };
    if n > 0 && count > 0 {
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
                w.par_chunks_mut(n * per_task)
                    .zip(v.par_chunks_mut(n * n * per_task))
                    .enumerate()
                    .for_each(run);
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
                w.par_chunks_mut(n * per_task).enumerate().for_each(run);
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
