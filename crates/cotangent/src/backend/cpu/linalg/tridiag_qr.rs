//! The symmetric eigendecomposition of one mid-size matrix: Householder
//! tridiagonalisation `A = Q T Qᵀ` (faer's, or from order [`SPLIT_N`] the blocked one of
//! [`super::tridiag_split`], which leaves the same storage), then our own implicit QR
//! iteration with Wilkinson shifts on the tridiagonal `T` (Golub & Van Loan, algorithm
//! 8.3.3), then `V = Q Z` by faer's blocked Householder application.
//!
//! Eigenvalues alone take the root-free variant of the QL iteration instead (Pal, Walker
//! and Kahan; LAPACK's `dsterf`): no square root per step. With eigenvectors from
//! `DC_N`, the tridiagonal goes to the divide and conquer of [`super::tridiag_dc`]
//! (whose leaves are solved by the QR iteration here).
//!
//! faer's own tridiagonal QR (the path of its `self_adjoint_evd` below 128 and for
//! eigenvalues alone at every size) spends most of its time in the library `hypot`
//! (one per rotation and one per off-diagonal entry per sweep) and applies each
//! rotation to its two columns of `Z` as it is made. Here, with eigenvectors:
//! - a rotation takes one square root: the matrix is first scaled by a power of two
//!   (exactly) to entries of order one, and the guarded `hypot` is only taken where
//!   `x² + z²` could under- or overflow;
//! - the negligibility test squares (`e_i² <= ε² |d_i| |d_{i+1}|`, LAPACK's `dsteqr`);
//! - the rotations of one sweep are applied to `Z` while the next sweep is made, one
//!   per rotation: the sweep is a chain of dependent scalar operations and applying a
//!   rotation is independent vector work, so the processor overlaps the two (faster
//!   than faer's at n = 64 with eigenvectors).

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::evd::tridiag::{tridiag_in_place, tridiag_in_place_scratch};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::{Conj, MatMut, MatRef, Par, Spec};

use super::eigh::hypot;
use super::jacobi::pow2_near;
use super::tridiag_dc::{tridiag_dc, Work};
use super::tridiag_split::{tridiag_split, SPLIT_N};
use super::LinalgElem;
use crate::backend::cpu::par::with_par;
use crate::backend::cpu::pool;

/// The most QR sweeps per eigenvalue on average (two or three are typical; LAPACK's
/// `dsteqr` allows 30); a bound so that no input can loop forever.
const MAX_SWEEPS_PER_EIGENVALUE: usize = 30;

/// With eigenvectors, from this order the tridiagonal is solved by divide and conquer
/// ([`tridiag_dc`]), below by the QR iteration. The two tie a little below this order on
/// this host (one thread); above it, the tridiagonal stage by divide and conquer is well
/// ahead of faer's (whose blocks below 128 go to its QR iteration).
pub(crate) const DC_N: usize = 128;

/// Scratch reused across the matrices of one task.
#[derive(Default)]
pub(crate) struct Scratch<T: pool::Pooled> {
    /// The tridiagonalised matrix (Householder vectors below the subdiagonal).
    trid: Vec<T>,
    /// The Householder block factors.
    hh: Vec<T>,
    /// The off-diagonal of `T`.
    e: Vec<T>,
    /// The cosines and sines of one sweep.
    c: Vec<T>,
    s: Vec<T>,
    /// The previous sweep's.
    pc: Vec<T>,
    ps: Vec<T>,
    /// The divide and conquer's buffers.
    dc: Work<T>,
    /// faer's workspace, with the order and parallelism it was sized for.
    mem: Option<((usize, bool), MemBuffer)>,
    /// The blocked tridiagonalisation's buffers.
    split: super::tridiag_split::Scratch<T>,
}

impl<T: pool::Pooled> Drop for Scratch<T> {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.trid));
    }
}

/// The plane rotation `P = [[c, s], [-s, c]]` with `P [x, z]ᵀ = [r, 0]ᵀ`: `(c, s, r)`.
#[inline(always)]
fn givens<T: LinalgElem>(x: T, z: T, lo: T, hi: T) -> (T, T, T) {
    let r2 = x * x + z * z;
    if r2 >= lo && r2 <= hi {
        let r = r2.sqrt();
        let inv = T::ONE / r;
        (x * inv, z * inv, r)
    } else if z == T::ZERO {
        (T::ONE, T::ZERO, x)
    } else {
        let r = hypot(x, z);
        (x / r, z / r, r)
    }
}

/// One implicit QR sweep with a Wilkinson shift on the unreduced block `start..=end` of
/// the tridiagonal `(d, e)`: `T ← P T Pᵀ` with `P = P_{end-1} ⋯ P_start`, the rotation
/// `P_k` (in the plane `k, k + 1`) stored in `c[k], s[k]`. `hook` runs once per rotation
/// (independent work for the processor to overlap with this sweep's dependency chain).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn qr_sweep<T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    start: usize,
    end: usize,
    c: &mut [T],
    s: &mut [T],
    lo: T,
    hi: T,
    mut hook: impl FnMut(),
) {
    let half = T::of(0.5);
    // the eigenvalue of the trailing 2 x 2 block nearer to its last diagonal entry
    let td = (d[end - 1] - d[end]) * half;
    let b = e[end - 1];
    let mu = if td == T::ZERO {
        d[end] - b.abs()
    } else {
        let h = hypot(td, b);
        let h = if td > T::ZERO { h } else { -h };
        d[end] - b * (b / (td + h))
    };
    let mut x = d[start] - mu;
    let mut z = e[start];
    for k in start..end {
        let (ck, sk, r) = givens(x, z, lo, hi);
        if k > start {
            e[k - 1] = r;
        }
        let (dk, dk1, ek) = (d[k], d[k + 1], e[k]);
        // rows k, k + 1 of P B, then (P B) Pᵀ for the 2 x 2 block B
        let u = ck * dk + sk * ek;
        let v = ck * ek + sk * dk1;
        let p = ck * ek - sk * dk;
        let q = ck * dk1 - sk * ek;
        d[k] = ck * u + sk * v;
        e[k] = ck * v - sk * u;
        d[k + 1] = ck * q - sk * p;
        if k + 1 < end {
            z = sk * e[k + 1];
            e[k + 1] = ck * e[k + 1];
            x = e[k];
        }
        c[k] = ck;
        s[k] = sk;
        hook();
    }
}

/// `Z ← Z P_kᵀ` for the rotation `(c, s)` in the plane `k, k + 1`: columns `k` and `k + 1`
/// of the column-major `z` (`n` rows).
#[inline(always)]
fn rotate_pair<T: LinalgElem>(z: &mut [T], n: usize, k: usize, c: T, s: T) {
    let (left, right) = z.split_at_mut((k + 1) * n);
    for (x, y) in left[k * n..].iter_mut().zip(right[..n].iter_mut()) {
        let (a, b) = (*x, *y);
        *x = c * a + s * b;
        *y = c * b - s * a;
    }
}

/// The implicit QR iteration on the tridiagonal `(d, e)` (`e[i]` couples `i` and `i + 1`;
/// entries of order one), accumulating `Z ← Z Pᵀ` into the column-major `n x n` `z` if
/// given (which must hold the identity, or the matrix to multiply); without `z`,
/// [`root_free_ql`]. Eigenvalues into `d` (unsorted). False if it did not converge.
/// `c, s, pc, ps` are `n` entries of scratch each.
///
/// With `z`, the rotations of one sweep are applied to `z` during the next sweep, one per
/// rotation made: a sweep is a chain of dependent scalar operations (a square root and a
/// division per rotation), and the vector work of applying the previous sweep's rotations
/// is independent of it, so the processor runs both at once.
pub(super) fn tridiag_qr<T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    z: Option<&mut [T]>,
    c: &mut [T],
    s: &mut [T],
    pc: &mut [T],
    ps: &mut [T],
) -> bool {
    struct Kernel<'a, T> {
        d: &'a mut [T],
        e: &'a mut [T],
        z: &'a mut [T],
        c: &'a mut [T],
        s: &'a mut [T],
        pc: &'a mut [T],
        ps: &'a mut [T],
    }
    impl<T: LinalgElem> pulp::WithSimd for Kernel<'_, T> {
        type Output = bool;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) -> bool {
            let Kernel { d, e, z, c, s, pc, ps } = self;
            qr_iterate(d, e, z, c, s, pc, ps)
        }
    }
    if d.len() < 2 {
        return true;
    }
    match z {
        None => root_free_ql(d, e),
        Some(z) => crate::backend::cpu::simd::arch().dispatch(Kernel { d, e, z, c, s, pc, ps }),
    }
}

/// The eigenvalues `(rt1, rt2)` of the symmetric `[[a, b], [b, c]]`, `rt1` the larger in
/// magnitude; the smaller from the determinant (no cancellation).
fn eig2<T: LinalgElem>(a: T, b: T, c: T) -> (T, T) {
    let half = T::of(0.5);
    let sm = a + c;
    let adf = (a - c).abs();
    let ab = (b + b).abs();
    let (acmx, acmn) = if a.abs() > c.abs() { (a, c) } else { (c, a) };
    let rt = if adf > ab {
        adf * (T::ONE + (ab / adf) * (ab / adf)).sqrt()
    } else if adf < ab {
        ab * (T::ONE + (adf / ab) * (adf / ab)).sqrt()
    } else {
        ab * T::of(2f64.sqrt())
    };
    if sm == T::ZERO {
        return (half * rt, -half * rt);
    }
    let rt1 = if sm < T::ZERO { half * (sm - rt) } else { half * (sm + rt) };
    (rt1, (acmx / rt1) * acmn - (b / rt1) * b)
}

/// The eigenvalues alone (into `d`, unsorted) of the tridiagonal `(d, e)` (entries of
/// order one; `e` is overwritten) by the Pal-Walker-Kahan root-free variant of the
/// implicit QL iteration (LAPACK's `dsterf`): it works on the squares of the off-diagonal
/// entries, so a step takes no square root, and its two divisions are independent of
/// each other (`dsterf`'s two are chained: `c = p/r`, then `p' = γ²/c`; here
/// `p' = γ² (r/p)`): one division on the dependency chain of a sweep (measurably faster
/// than the chained form from n = 64 to 256). Deflation at the top; 2 x 2 blocks are
/// solved directly. False if it did not converge.
fn root_free_ql<T: LinalgElem>(d: &mut [T], e: &mut [T]) -> bool {
    let n = d.len();
    let eps2 = T::EPSILON * T::EPSILON;
    let tiny = T::min_positive_impl();
    let two = T::of(2.0);
    for x in e.iter_mut().take(n - 1) {
        *x = *x * *x;
    }
    let mut budget = MAX_SWEEPS_PER_EIGENVALUE * n;
    let mut l = 0;
    while l + 1 < n {
        // the unreduced block l..=m
        let mut m = l;
        while m + 1 < n && e[m] > eps2 * (d[m] * d[m + 1]).abs() + tiny {
            m += 1;
        }
        if m + 1 < n {
            e[m] = T::ZERO;
        }
        if m == l {
            l += 1;
            continue;
        }
        if m == l + 1 {
            let (r1, r2) = eig2(d[l], e[l].sqrt(), d[l + 1]);
            (d[l], d[l + 1], e[l]) = (r1, r2, T::ZERO);
            l += 2;
            continue;
        }
        if budget == 0 {
            return false;
        }
        budget -= 1;
        #[cfg(test)]
        tests::SWEEPS.with(|c| c.set(c.get() + 1));
        // the shift: the eigenvalue of the leading 2 x 2 block nearer to d[l]
        let p = d[l];
        let rte = e[l].sqrt();
        let sigma = (d[l + 1] - p) / (two * rte);
        let r = hypot(sigma, T::ONE);
        let sigma = p - rte / (sigma + if sigma < T::ZERO { -r } else { r });
        let (mut c, mut s) = (T::ONE, T::ZERO);
        let mut gamma = d[m] - sigma;
        let mut pp = gamma * gamma;
        for i in (l..m).rev() {
            let bb = e[i];
            let r = pp + bb;
            if i + 1 != m {
                e[i + 1] = s * r;
            }
            let oldc = c;
            // 1/r and 1/pp are taken at once, so that one division (not two) lies on
            // the chain from one step's pp to the next: pp' = γ² / c = γ² r / pp
            let ir = T::ONE / r;
            let rp = r / pp;
            c = pp * ir;
            s = bb * ir;
            let oldgam = gamma;
            let alpha = d[i];
            gamma = c * (alpha - sigma) - s * oldgam;
            d[i + 1] = oldgam + (alpha - gamma);
            pp = if c == T::ZERO { oldc * bb } else { gamma * gamma * rp };
        }
        e[l] = s * pp;
        d[l] = sigma + gamma;
    }
    true
}

/// The body of [`tridiag_qr`] (compiled for the instruction set of its caller).
#[inline(always)]
fn qr_iterate<'a, T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    z: &mut [T],
    mut c: &'a mut [T],
    mut s: &'a mut [T],
    mut pc: &'a mut [T],
    mut ps: &'a mut [T],
) -> bool {
    let n = d.len();
    let eps2 = T::EPSILON * T::EPSILON;
    let tiny = T::min_positive_impl();
    // x² + z² within [lo, hi]: no harmful under- or overflow
    let (lo, hi) = (tiny / T::EPSILON, T::ONE / (tiny / T::EPSILON));
    let negligible =
        |d: &[T], e: &[T], i: usize| e[i] * e[i] <= eps2 * d[i].abs() * d[i + 1].abs() + tiny;
    let mut end = n - 1;
    let mut budget = MAX_SWEEPS_PER_EIGENVALUE * n;
    // the rotations pc[next..last] of the previous sweep are still to be applied to z
    let (mut next, mut last) = (0, 0);
    loop {
        while end > 0 && negligible(d, e, end - 1) {
            e[end - 1] = T::ZERO;
            end -= 1;
        }
        if end == 0 || budget == 0 {
            break;
        }
        budget -= 1;
        let mut start = end - 1;
        while start > 0 {
            if negligible(d, e, start - 1) {
                e[start - 1] = T::ZERO;
                break;
            }
            start -= 1;
        }
        #[cfg(test)]
        tests::SWEEPS.with(|c| c.set(c.get() + 1));
        let (zc, zs) = (&*pc, &*ps);
        qr_sweep(d, e, start, end, c, s, lo, hi, || {
            if next < last {
                rotate_pair(z, n, next, zc[next], zs[next]);
                next += 1;
            }
        });
        for k in next..last {
            rotate_pair(z, n, k, pc[k], ps[k]);
        }
        std::mem::swap(&mut c, &mut pc);
        std::mem::swap(&mut s, &mut ps);
        (next, last) = (start, end);
    }
    for k in next..last {
        rotate_pair(z, n, k, pc[k], ps[k]);
    }
    end == 0
}

/// The `n x n` identity into the column-major `u`.
pub(super) fn identity<T: LinalgElem>(u: &mut [T], n: usize) {
    u.fill(T::ZERO);
    for j in 0..n {
        u[j * n + j] = T::ONE;
    }
}

/// Sorts `d` ascending, with the columns of the column-major `u` (`d.len()` rows) if
/// given, by selection: at most `d.len() - 1` column swaps.
pub(super) fn sort_ascending<T: LinalgElem>(d: &mut [T], mut u: Option<&mut [T]>) {
    let n = d.len();
    for i in 0..n.saturating_sub(1) {
        let mut m = i;
        for k in i + 1..n {
            if d[k] < d[m] {
                m = k;
            }
        }
        if m != i {
            d.swap(i, m);
            if let Some(u) = u.as_deref_mut() {
                let (left, right) = u.split_at_mut(m * n);
                left[i * n..(i + 1) * n].swap_with_slice(&mut right[..n]);
            }
        }
    }
}

/// The eigenvalues (unsorted, into `w`) and, if `v` is given, the eigenvectors (columns of
/// the column-major `n x n` `v`) of the symmetric `n x n` column-major `a` (finite; its
/// lower triangle is read), `n >= 2`. False if the iteration did not converge (then the
/// outputs are unspecified). If `parallel`, faer's kernels may use every thread of
/// rayon's global pool (on one of its workers: [`with_par`]).
pub(crate) fn eigh_tridiag_qr<T: LinalgElem>(
    a: &[T],
    n: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    parallel: bool,
    sc: &mut Scratch<T>,
) -> bool {
    debug_assert!(n >= 2 && a.len() == n * n && w.len() == n);
    let amax = a.iter().fold(T::ZERO, |m, &x| if x.abs() > m { x.abs() } else { m });
    if amax == T::ZERO {
        w.fill(T::ZERO);
        if let Some(v) = v {
            identity(v, n);
        }
        return true;
    }
    // a power of two: the scaling is exact
    let scale = pow2_near(amax);
    let inv = T::ONE / scale;
    sc.trid.clear();
    pool::reserve(&mut sc.trid, n * n);
    sc.trid.extend(a.iter().map(|&x| x * inv));
    let bs = recommended_block_size::<T>(n, n);
    sc.hh.resize(bs * (n - 1), T::ZERO);
    let params = Spec::default();
    // the thread count `with_par` runs faer with
    let par = if parallel { Par::rayon(0) } else { Par::Seq };
    let mem = match &mut sc.mem {
        Some((key, mem)) if *key == (n, parallel) => mem,
        slot => {
            let req = StackReq::any_of(&[
                tridiag_in_place_scratch::<T>(n, par, params),
                apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(n - 1, bs, n),
            ]);
            &mut slot.insert(((n, parallel), MemBuffer::new(req))).1
        }
    };
    if n >= SPLIT_N {
        tridiag_split(&mut sc.trid, n, &mut sc.hh, bs, &mut sc.split);
    } else {
        let trid = MatMut::from_column_major_slice_mut(&mut sc.trid, n, n);
        let hh = MatMut::from_column_major_slice_mut(&mut sc.hh, bs, n - 1);
        let stack = MemStack::new(mem);
        with_par(parallel, move |par| tridiag_in_place(trid, hh, par, stack, params));
    }
    let d = w;
    sc.e.resize(n, T::ZERO);
    for (i, (di, ei)) in d.iter_mut().zip(sc.e.iter_mut()).enumerate() {
        *di = sc.trid[i * n + i];
        *ei = if i + 1 < n { sc.trid[i * n + i + 1] } else { T::ZERO };
    }
    sc.c.resize(n, T::ZERO);
    sc.s.resize(n, T::ZERO);
    let mut v = v;
    sc.pc.resize(n, T::ZERO);
    sc.ps.resize(n, T::ZERO);
    let (c, s, pc, ps) = (&mut sc.c, &mut sc.s, &mut sc.pc, &mut sc.ps);
    if let Some(vv) = v.as_deref_mut().filter(|_| n >= DC_N) {
        // on a worker of the pool if parallel, for the merges' joins
        let (dd, e, wk) = (&mut *d, &mut sc.e, &mut sc.dc);
        if !with_par(parallel, move |_| tridiag_dc(dd, e, vv, parallel, wk)) {
            return false;
        }
    } else {
        if let Some(v) = v.as_deref_mut() {
            identity(v, n);
        }
        if !tridiag_qr(d, &mut sc.e, v.as_deref_mut(), c, s, pc, ps) {
            return false;
        }
    }
    sort_ascending(d, v.as_deref_mut());
    if let Some(v) = v {
        let trid = MatRef::from_column_major_slice(&sc.trid, n, n);
        let hh = MatRef::from_column_major_slice(&sc.hh, bs, n - 1);
        let vm = MatMut::from_column_major_slice_mut(v, n, n);
        let stack = MemStack::new(mem);
        with_par(parallel, move |par| {
            apply_block_householder_sequence_on_the_left_in_place_with_conj(
                trid.submatrix(1, 0, n - 1, n - 1),
                hh,
                Conj::No,
                vm.subrows_mut(1, n - 1),
                par,
                stack,
            );
        });
    }
    for x in d.iter_mut() {
        *x *= scale;
    }
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use faer::linalg::evd::{self_adjoint_evd, self_adjoint_evd_scratch, ComputeEigenvectors};

    pub(crate) fn rnd(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// A symmetric `n x n` matrix of kind `kind`: those of the eigh tests' generator
    /// (random, zero, diagonal with repeated entries, a repeated eigenvalue, tiny, huge, a
    /// zero row and column, tridiagonal, rank one: kinds 0-8), 9 graded (`D R D`, `D`
    /// from 1 to 1e-12), 10 a Wilkinson-like tridiagonal (clustered eigenvalue pairs).
    fn matrix(n: usize, kind: usize, state: &mut u64) -> Vec<f64> {
        let mut m =
            crate::backend::cpu::linalg::eigh::tests::symmetric(n, kind, &mut || rnd(state));
        match kind {
            9 => {
                let dg = |i: usize| 10f64.powf(-12.0 * i as f64 / n as f64);
                for j in 0..n {
                    for i in 0..n {
                        m[j * n + i] *= dg(i) * dg(j);
                    }
                }
            }
            10 => {
                m.fill(0.0);
                let h = (n / 2) as f64;
                for i in 0..n {
                    m[i * n + i] = (i as f64 - h).abs();
                    if i + 1 < n {
                        m[i * n + i + 1] = 1.0;
                        m[(i + 1) * n + i] = 1.0;
                    }
                }
            }
            _ => {}
        }
        m
    }

    /// Eigenvalues sorted by faer's `self_adjoint_evd` (the reference).
    fn faer_eigenvalues(a: &[f64], n: usize) -> Vec<f64> {
        let req =
            self_adjoint_evd_scratch::<f64>(n, ComputeEigenvectors::No, Par::Seq, Spec::default());
        let mut mem = MemBuffer::new(req);
        let mut w = vec![0.0; n];
        let am = MatRef::from_column_major_slice(a, n, n);
        let wd = faer::ColMut::from_slice_mut(&mut w).as_diagonal_mut();
        self_adjoint_evd(am, wd, None, Par::Seq, MemStack::new(&mut mem), Spec::default()).unwrap();
        w
    }

    fn check<T: LinalgElem>(a64: &[f64], n: usize, parallel: bool, what: &str) {
        let a: Vec<T> = a64.iter().map(|&x| T::of(x)).collect();
        let mut sc = Scratch::default();
        let (mut w, mut v) = (vec![T::ZERO; n], vec![T::ZERO; n * n]);
        assert!(eigh_tridiag_qr(&a, n, &mut w, Some(&mut v), parallel, &mut sc), "{what}");
        let mut wv = vec![T::ZERO; n];
        assert!(eigh_tridiag_qr(&a, n, &mut wv, None, parallel, &mut sc), "{what}");
        let eps = T::EPSILON.to_f64();
        let norm = a64.iter().fold(0f64, |m, x| m.max(x.abs())) * n as f64;
        let reference = faer_eigenvalues(a64, n);
        for i in 0..n {
            let (x, y) = (w[i].to_f64(), wv[i].to_f64());
            assert!(i == 0 || w[i - 1] <= w[i], "{what}: not ascending");
            // the same values with and without vectors, and faer's to backward accuracy
            // (each within about n ε ‖A‖ of the exact ones; `norm` is n max |a_ij|)
            assert!((x - y).abs() <= 8.0 * eps * norm, "{what}: {x} vs {y}");
            assert!(
                (x - reference[i]).abs() <= 32.0 * eps * norm,
                "{what}: {x} vs {}",
                reference[i]
            );
        }
        // A V = V diag(w) and Vᵀ V = I
        for j in 0..n {
            for i in 0..n {
                let av: f64 = (0..n).map(|k| a64[k * n + i] * v[j * n + k].to_f64()).sum();
                let r = av - v[j * n + i].to_f64() * w[j].to_f64();
                assert!(r.abs() <= 16.0 * eps * norm, "{what}: residual {r:e}");
                let g: f64 = (0..n).map(|k| v[i * n + k].to_f64() * v[j * n + k].to_f64()).sum();
                let want = f64::from(u8::from(i == j));
                assert!((g - want).abs() <= 16.0 * n as f64 * eps, "{what}: VᵀV {g}");
            }
        }
    }

    #[test]
    fn eigenpairs_of_awkward_matrices() {
        let mut state = 7;
        for n in [2, 3, 17, 33, 64, 100, 130, 200] {
            for kind in 0..12 {
                let a = matrix(n, kind, &mut state);
                check::<f64>(&a, n, false, &format!("f64 n {n} kind {kind}"));
                if kind != 4 && kind != 5 {
                    check::<f32>(&a, n, false, &format!("f32 n {n} kind {kind}"));
                }
            }
        }
    }

    #[test]
    fn faer_kernels_on_every_thread() {
        // the workspace sized for the global pool's thread count, on one of its workers
        let mut state = 5;
        for kind in [0, 3, 9] {
            let a = matrix(260, kind, &mut state);
            check::<f64>(&a, 260, true, &format!("parallel kind {kind}"));
        }
    }

    #[test]
    fn a_few_sweeps_per_eigenvalue() {
        // the Wilkinson shift converges cubically: about 2 sweeps per eigenvalue on random
        // matrices (2.1 here); a wrong shift converges linearly, tens of sweeps each
        let mut state = 11;
        let (mut sum_n, mut sc) = (0, Scratch::default());
        SWEEPS.with(|c| c.set(0));
        for n in [20, 50, 64, 100, 150] {
            for _ in 0..4 {
                let a = matrix(n, 0, &mut state);
                let (mut w, mut v) = (vec![0.0; n], vec![0.0; n * n]);
                assert!(eigh_tridiag_qr(&a, n, &mut w, Some(&mut v), false, &mut sc));
                sum_n += n;
            }
        }
        let per = SWEEPS.with(std::cell::Cell::get) as f64 / sum_n as f64;
        assert!(per > 0.5 && per < 3.0, "{per} sweeps per eigenvalue");
        // the root-free QL (eigenvalues alone) likewise
        SWEEPS.with(|c| c.set(0));
        for n in [20, 50, 64, 100, 150] {
            for _ in 0..4 {
                let a = matrix(n, 0, &mut state);
                let mut w = vec![0.0; n];
                assert!(eigh_tridiag_qr(&a, n, &mut w, None, false, &mut sc));
            }
        }
        let per = SWEEPS.with(std::cell::Cell::get) as f64 / sum_n as f64;
        assert!(per > 0.5 && per < 3.0, "{per} root-free sweeps per eigenvalue");
    }

    thread_local! {
        /// The QR sweeps run on this thread.
        pub(super) static SWEEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
}
