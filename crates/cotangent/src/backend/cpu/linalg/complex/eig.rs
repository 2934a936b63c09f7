//! The general (non-Hermitian) eigendecomposition, `A V = V diag(w)` (LAPACK `geev`'s
//! problem), batched, through faer's complex Schur-based solver (Hessenberg reduction,
//! the implicit shifted QR iteration, eigenvectors from the triangular Schur form). Real
//! input goes through faer's real solver instead (the real Schur form, as LAPACK's
//! `dgeev`: a few times less arithmetic), whose complex conjugate pairs are unpacked
//! into complex eigenvalues and eigenvectors.
//!
//! Real input of small order goes through [`small_eig`](super::small_eig) instead
//! (LAPACK's unblocked path, written here), as faer's per-call costs dominate there.
//!
//! The gauge: each eigenvector has unit 2-norm (as LAPACK's) and its component of
//! largest modulus (the first on ties) real and positive. The eigenvalues come in the
//! order the Schur form leaves them (not sorted, as LAPACK's).

use std::sync::atomic::{AtomicUsize, Ordering};

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::evd::{evd_cplx, evd_real, evd_scratch, ComputeEigenvectors};
use faer::{ColMut, MatMut, MatRef, Par, Spec};
use num_complex::Complex;

use super::small_eig::{SmallEig, SMALL_N};
use crate::backend::cpu::linalg::jacobi::pow2_near;
use crate::backend::cpu::linalg::qr::QrElem;
use crate::backend::cpu::linalg::{colmajor_layout, for_each_matrix_with, Batch, LinalgElem};
use crate::backend::cpu::pool;
use crate::layout::Layout;

/// [`eig`]'s result: eigenvalues, eigenvectors with their layout, the first failure.
pub(crate) type EigOut<R> = (Vec<Complex<R>>, Option<(Vec<Complex<R>>, Layout)>, Option<usize>);

/// Eigenvalues `(*, n)` and, if `vectors`, unit eigenvectors (column-major `(*, n, n)`)
/// of each square `a: (*, n, n)`, its entries read as complex numbers by `to_complex`
/// (`real_input`: their imaginary parts are zero, and the real solver runs); with the
/// index of the first matrix not decomposed (a NaN or an infinity, or no convergence).
pub(crate) fn eig<R: QrElem, S: Copy + Sync>(
    a: &[S],
    al: &Layout,
    vectors: bool,
    real_input: bool,
    to_complex: impl Fn(S) -> Complex<R> + Sync,
) -> EigOut<R>
where
    Complex<R>: super::ComplexElem,
{
    let ba = Batch::of(al);
    let n = ba.n;
    let len = ba.len();
    let zero = Complex::new(R::ZERO, R::ZERO);
    let size = n + if vectors { n * n } else { 0 };
    let failed = AtomicUsize::new(usize::MAX);
    let mut out = pool::filled(len * size, zero);
    let big = n >= super::PAR_N;
    let small = real_input && n <= SMALL_N;
    let make = || (Vec::new(), small.then(|| SmallEig::new(n)));
    let work = (n * n * n * 25).max(1);
    for_each_matrix_with(&mut out, size, work, big, make, |i, dst, (m, se), par| {
        // the matrix, column-major, complex, scaled to order one by a power of two
        let off = ba.offset(i);
        m.clear();
        for c in 0..n {
            for r in 0..n {
                m.push(to_complex(a[off + r * ba.rs + c * ba.cs]));
            }
        }
        if m.iter().any(|z| !(z.re.is_finite() && z.im.is_finite())) {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        let amax = m.iter().fold(R::ZERO, |x, z| {
            let v = z.re.abs() + z.im.abs();
            if v > x {
                v
            } else {
                x
            }
        });
        let scale = if amax == R::ZERO { R::ONE } else { pow2_near(amax) };
        let inv = R::ONE / scale;
        for z in m.iter_mut() {
            *z = Complex::new(z.re * inv, z.im * inv);
        }
        let (w, v) = dst.split_at_mut(n);
        let ok = if let Some(se) = se {
            run_small(se, m, w, vectors.then_some(v))
        } else if real_input {
            // faer's real solver, its eigenpairs certified by their backward error (it
            // loses accuracy on some hard matrices: graded, near-singular), else LAPACK's
            // unblocked path; eigenvalues alone take the same route, so that they are
            // eig's eigenvalues
            let mut full = if vectors { None } else { Some(vec![zero; n * n]) };
            let vv = full.as_deref_mut().unwrap_or(v);
            let fast = decompose_real(m, n, w, Some(&mut *vv), par);
            fast && certified(m, n, w, vv, par) || {
                let mut se = SmallEig::new(n);
                run_small(&mut se, m, w, vectors.then_some(vv))
            }
        } else {
            // eigenvalues alone through the eigenvector call too: faer's eigenvalue-only
            // call leaves them in another order, and they should be eig's
            let mut full = if vectors { None } else { Some(vec![zero; n * n]) };
            decompose(m, n, w, Some(full.as_deref_mut().unwrap_or(v)), par)
        };
        if !ok {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        for z in w.iter_mut() {
            *z = Complex::new(z.re * scale, z.im * scale);
        }
    });
    let f = failed.into_inner();
    let failed = (f != usize::MAX).then_some(f);
    let mut w = Vec::with_capacity(len * n);
    let mut vo = vectors.then(|| pool::filled(len * n * n, zero));
    if size > 0 {
        for (b, blk) in out.chunks_exact(size).enumerate() {
            w.extend_from_slice(&blk[..n]);
            if let Some(v) = vo.as_mut() {
                v[b * n * n..(b + 1) * n * n].copy_from_slice(&blk[n..]);
            }
        }
    }
    (w, vo.map(|v| (v, colmajor_layout(&ba.dims, n, n))), failed)
}

/// [`SmallEig::run`] on the complex `m` (real parts), the eigenvectors normalised.
fn run_small<R: QrElem>(
    se: &mut SmallEig<R>,
    m: &[Complex<R>],
    w: &mut [Complex<R>],
    v: Option<&mut [Complex<R>]>,
) -> bool {
    let n = w.len();
    let vectors = v.is_some();
    let mut v = v;
    let ok = se.run(|r, c| m[r + c * n].re, w, v.as_deref_mut());
    if let (true, Some(v)) = (ok && vectors, v) {
        v.chunks_exact_mut(n).for_each(normalize);
    }
    ok
}

/// Whether the eigenpairs `w`, `v` (unit columns, column-major) of the real `a` (the
/// real parts of the column-major `m`) have LAPACK's backward error:
/// `‖A V − V diag(w)‖₁ ≤ 8 n ε ‖A‖₁` (its test passes below 30 times that).
fn certified<R: QrElem>(
    m: &[Complex<R>],
    n: usize,
    w: &[Complex<R>],
    v: &[Complex<R>],
    par: Par,
) -> bool {
    let a: Vec<R> = m.iter().map(|z| z.re).collect();
    let (vr, vi): (Vec<R>, Vec<R>) = v.iter().map(|z| (z.re, z.im)).unzip();
    let mut ar = vec![R::ZERO; n * n];
    let mut ai = vec![R::ZERO; n * n];
    let am = MatRef::from_column_major_slice(&a, n, n);
    for (x, y) in [(&vr, &mut ar), (&vi, &mut ai)] {
        let dst = MatMut::from_column_major_slice_mut(y, n, n);
        let rhs = MatRef::from_column_major_slice(x, n, n);
        faer::linalg::matmul::matmul(dst, faer::Accum::Replace, am, rhs, R::ONE, par);
    }
    let mut anorm = R::ZERO;
    let mut res = R::ZERO;
    for j in 0..n {
        let col = a[j * n..(j + 1) * n].iter().fold(R::ZERO, |s, x| s + x.abs());
        anorm = if col > anorm { col } else { anorm };
        let mut r = R::ZERO;
        for i in 0..n {
            let k = i + j * n;
            let z = v[k];
            let (dr, di) = (
                ar[k] - (z.re * w[j].re - z.im * w[j].im),
                ai[k] - (z.re * w[j].im + z.im * w[j].re),
            );
            r += (dr * dr + di * di).sqrt();
        }
        if r.is_nan() || r > res {
            res = r;
        }
    }
    res <= R::of(8.0 * n as f64) * R::EPSILON * anorm
}

/// Workspace for faer's eigendecomposition of order `n` over `E` (right eigenvectors if
/// `vectors`).
fn scratch<E: faer::traits::ComplexField>(n: usize, vectors: bool, par: Par) -> MemBuffer {
    let want = if vectors { ComputeEigenvectors::Yes } else { ComputeEigenvectors::No };
    MemBuffer::new(evd_scratch::<E>(n, ComputeEigenvectors::No, want, par, Spec::default()))
}

/// The eigendecomposition of the column-major complex `n x n` `a` (finite): eigenvalues
/// into `w`, unit eigenvectors in the gauge above into `v` if given. False if faer's
/// iteration did not converge.
fn decompose<R: LinalgElem>(
    a: &[Complex<R>],
    n: usize,
    w: &mut [Complex<R>],
    v: Option<&mut [Complex<R>]>,
    par: Par,
) -> bool
where
    Complex<R>: super::ComplexElem,
{
    if n == 0 {
        return true;
    }
    let mut buf = scratch::<Complex<R>>(n, v.is_some(), par);
    let s = ColMut::from_slice_mut(w).as_diagonal_mut();
    let am = MatRef::from_column_major_slice(a, n, n);
    let mut v = v;
    let u = v.as_deref_mut().map(|v| MatMut::from_column_major_slice_mut(v, n, n));
    if evd_cplx::<R>(am, s, None, u, par, MemStack::new(&mut buf), Spec::default()).is_err() {
        return false;
    }
    if let Some(v) = v {
        for col in v.chunks_exact_mut(n) {
            normalize(col);
        }
    }
    true
}

/// [`decompose`] of a complex `a` whose imaginary parts are zero, by faer's real solver:
/// a conjugate pair `λ, conj(λ)` comes back as `(re, im)` in two columns `x, y` (LAPACK's
/// packing), unpacked into the eigenvectors `x + iy` and `x − iy`.
fn decompose_real<R: LinalgElem>(
    a: &[Complex<R>],
    n: usize,
    w: &mut [Complex<R>],
    v: Option<&mut [Complex<R>]>,
    par: Par,
) -> bool
where
    Complex<R>: super::ComplexElem,
{
    if n == 0 {
        return true;
    }
    let mut buf = scratch::<R>(n, v.is_some(), par);
    let ar: Vec<R> = a.iter().map(|z| z.re).collect();
    let (mut wr, mut wi) = (vec![R::ZERO; n], vec![R::ZERO; n]);
    let mut vr = v.is_some().then(|| vec![R::ZERO; n * n]);
    let am = MatRef::from_column_major_slice(&ar, n, n);
    let sr = ColMut::from_slice_mut(&mut wr).as_diagonal_mut();
    let si = ColMut::from_slice_mut(&mut wi).as_diagonal_mut();
    let u = vr.as_deref_mut().map(|x| MatMut::from_column_major_slice_mut(x, n, n));
    if evd_real::<R>(am, sr, si, None, u, par, MemStack::new(&mut buf), Spec::default()).is_err() {
        return false;
    }
    for (k, z) in w.iter_mut().enumerate() {
        *z = Complex::new(wr[k], wi[k]);
    }
    if let (Some(v), Some(vr)) = (v, vr) {
        let mut k = 0;
        while k < n {
            let x = &vr[k * n..(k + 1) * n];
            if wi[k] == R::ZERO || k + 1 == n {
                for (d, &re) in v[k * n..(k + 1) * n].iter_mut().zip(x) {
                    *d = Complex::new(re, R::ZERO);
                }
                normalize(&mut v[k * n..(k + 1) * n]);
                k += 1;
            } else {
                let y = &vr[(k + 1) * n..(k + 2) * n];
                for r in 0..n {
                    v[k * n + r] = Complex::new(x[r], y[r]);
                    v[(k + 1) * n + r] = Complex::new(x[r], -y[r]);
                }
                normalize(&mut v[k * n..(k + 1) * n]);
                normalize(&mut v[(k + 1) * n..(k + 2) * n]);
                k += 2;
            }
        }
    }
    true
}

/// Scales `col` to unit 2-norm with its component of largest modulus (the first on
/// ties) real and positive.
fn normalize<R: LinalgElem>(col: &mut [Complex<R>]) {
    // the 2-norm, scaled against overflow
    let big = col.iter().fold(R::ZERO, |m, z| {
        let v = if z.re.abs() > z.im.abs() { z.re.abs() } else { z.im.abs() };
        if v > m {
            v
        } else {
            m
        }
    });
    if big == R::ZERO {
        return;
    }
    // scale by a power of two (exact) to a largest part in [1/2, 2)
    let inv = R::ONE / pow2_near(big);
    for z in col.iter_mut() {
        *z = Complex::new(z.re * inv, z.im * inv);
    }
    // the sum of squares compensated (Neumaier): the unit norm to a few ulps at any order
    let (mut ss, mut comp) = (R::ZERO, R::ZERO);
    for z in col.iter() {
        for x in [z.re * z.re, z.im * z.im] {
            let t = ss + x;
            comp += if ss.abs() >= x { (ss - t) + x } else { (x - t) + ss };
            ss = t;
        }
    }
    let norm = (ss + comp).sqrt();
    let mut best = (0, R::ZERO);
    for (k, z) in col.iter().enumerate() {
        let m = (z.re * z.re + z.im * z.im).sqrt();
        if m > best.1 {
            best = (k, m);
        }
    }
    let p = col[best.0];
    // multiply by conj(p) / (|p| norm)
    let d = best.1 * norm;
    let f = Complex::new(p.re / d, -p.im / d);
    for z in col.iter_mut() {
        *z = Complex::new(z.re * f.re - z.im * f.im, z.re * f.im + z.im * f.re);
    }
    col[best.0] = Complex::new(best.1 / norm, R::ZERO);
}
