//! The symmetric eigendecomposition `A = V diag(w) Vᵀ`, batched, reading one triangle.
//!
//! - small matrices (`n <= JACOBI_N`): an allocation-free cyclic Jacobi loop per matrix
//!   (rotations skip entries negligible relative to their diagonal, Demmel & Veselić's
//!   criterion, or to the largest diagonal entry), with rayon over the batch; with eigenvectors, the eigenvalues
//!   are then the Rayleigh quotients of the final vectors with the original matrix (the
//!   rotated diagonal accumulates a rounding per rotation);
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

/// Up to this order the Jacobi loop is used.
pub(crate) const JACOBI_N: usize = 16;
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
fn jacobi<T: LinalgElem>(a: &mut [T], n: usize, w: &mut [T], mut v: Option<&mut [T]>) -> T {
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
        *x = *x / scale;
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

/// A power of two within a factor 2 of `x > 0` (finite).
fn pow2_near<T: LinalgElem>(x: T) -> T {
    let mut s = T::ONE;
    let two = T::of(2.0);
    let mut y = x;
    while y >= two {
        y = y / two;
        s = s * two;
    }
    while y < T::ONE {
        y = y * two;
        s = s / two;
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
    if n <= JACOBI_N {
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
        let work = (n * n * n * if n <= JACOBI_N { 8 } else { 10 }).max(1);
        let parallel = count > 1 && n < PAR_N && count * work >= 2 * TASK_WORK;
        let per_task = if parallel { (TASK_WORK / work).max(1) } else { count };
        match v.as_deref_mut() {
            Some(v) => {
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
            }
            None => {
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
    }
    let vl = colmajor_layout(&b.dims, n, n);
    // a failed matrix has NaN eigenvalues; a decomposed one never has
    let failed = w.chunks_exact(n.max(1)).position(|c| c.iter().any(|x| x.is_nan()));
    (w, v.map(|v| (v, vl)), failed)
}
