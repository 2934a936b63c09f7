//! The eigendecomposition of Hermitian matrices (`zheevd`'s problem), batched: faer's
//! Householder reduction to a Hermitian tridiagonal matrix, its off-diagonal phases
//! scaled out (`T = D T_r Dᴴ` with `T_r` real symmetric and `D` a diagonal of unit
//! phases), then the real tridiagonal eigensolvers of the real `eigh` (the implicit QR
//! iteration, the root-free QL iteration for eigenvalues alone, divide and conquer from
//! order [`DC_N`]), and the back-transformation `V = Q D Z`. The tridiagonal stage is
//! the real one so that both dtypes share the solvers the real eigh tests on hard
//! matrices; the reduction is faer's, as the real eigh's below order 160 (its accuracy
//! relative to LAPACK's is recorded in docs/accuracy.md).
//!
//! The gauge: an eigenvector is defined up to a unit phase. Each one returned has its
//! component of largest modulus (the first one on ties) real and positive, so a given
//! input gives the same bits on every run.

use std::sync::atomic::{AtomicBool, Ordering};

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::evd::tridiag::{tridiag_in_place, tridiag_in_place_scratch};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::{Conj, MatMut, MatRef, Par, Spec};

use super::{zero, ComplexElem, PAR_N, R};
use crate::backend::cpu::linalg::jacobi::pow2_near;
use crate::backend::cpu::linalg::tridiag_dc::{tridiag_dc, Work};
use crate::backend::cpu::linalg::tridiag_qr::{identity, sort_ascending, tridiag_qr, DC_N};
use crate::backend::cpu::linalg::{colmajor_layout, for_each_matrix, Batch};
use crate::backend::cpu::pool;
use crate::complex::ComplexFloat;
use crate::dtype::Float;
use crate::layout::Layout;

/// Eigenvalues (ascending, real, contiguous `(*, n)`) and, if `vectors`, eigenvectors
/// (column-major `(*, n, n)`, the gauge above) of each Hermitian `a: (*, n, n)`, reading
/// its lower (or, if `upper`, upper) triangle; the imaginary parts of the diagonal are
/// not read (as `zheevd`). With the index of the first matrix not decomposed (a NaN or
/// an infinity in its triangle, or no convergence), if any.
#[allow(clippy::type_complexity)]
pub(crate) fn eigh<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    upper: bool,
    vectors: bool,
) -> (Vec<R<T>>, Option<(Vec<T>, Layout)>, Option<usize>) {
    let ba = Batch::of(al);
    let n = ba.n;
    let len = ba.len();
    let failed: Vec<AtomicBool> = (0..len).map(|_| AtomicBool::new(false)).collect();
    // (per matrix: the eigenvalues, then the eigenvectors if asked, in one block)
    let size = n + if vectors { n * n } else { 0 };
    let mut out = pool::filled(len * size, zero::<T>());
    for_each_matrix(&mut out, size, n * n * n * 8, n >= PAR_N, |i, dst, m, par| {
        // the Hermitian matrix's lower triangle, column-major, a real diagonal; the strict
        // upper triangle zeroed (it is not read, and may hold anything, infinities included)
        m.resize(n * n, zero::<T>());
        ba.load(a, i, m);
        let mut finite = true;
        for c in 0..n {
            for r in 0..c {
                m[c * n + r] = zero::<T>();
            }
            for r in c..n {
                let v = if upper { m[r * n + c].conj() } else { m[c * n + r] };
                let v = if r == c { T::new(v.re(), <R<T> as Float>::ZERO) } else { v };
                finite &= v.re().is_finite() && v.im().is_finite();
                m[c * n + r] = v;
            }
        }
        if !finite {
            failed[i].store(true, Ordering::Relaxed);
            return;
        }
        let (w, v) = dst.split_at_mut(n);
        if !decompose(m, n, w, vectors.then_some(v), par) {
            failed[i].store(true, Ordering::Relaxed);
            return;
        }
        if vectors {
            for col in v.chunks_exact_mut(n.max(1)).take(n) {
                fix_phase(col);
            }
        }
    });
    let failed = failed.iter().position(|f| f.load(Ordering::Relaxed));
    let w: Vec<R<T>> =
        out.chunks_exact(size.max(1)).flat_map(|b| b[..n].iter().map(|z| z.re())).collect();
    let v = vectors.then(|| {
        let mut v = pool::filled(len * n * n, zero::<T>());
        for (dst, b) in v.chunks_exact_mut((n * n).max(1)).zip(out.chunks_exact(size.max(1))) {
            dst.copy_from_slice(&b[n..]);
        }
        (v, colmajor_layout(&ba.dims, n, n))
    });
    (w, v, failed)
}

/// The eigendecomposition of the Hermitian `n x n` column-major `a` (its lower triangle,
/// finite, a real diagonal; overwritten): eigenvalues ascending into `w` (as complex
/// numbers with zero imaginary parts), eigenvectors into `v` if given. False if the
/// tridiagonal iteration did not converge.
fn decompose<T: ComplexElem>(
    a: &mut [T],
    n: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    par: Par,
) -> bool {
    let rzero = <R<T> as Float>::ZERO;
    if n == 1 {
        w[0] = a[0];
        if let Some(v) = v {
            v[0] = T::new(<R<T> as Float>::ONE, rzero);
        }
        return true;
    }
    // scaled by a power of two near the largest modulus (exact), to order one
    let amax = a.iter().fold(rzero, |m, z| if z.abs() > m { z.abs() } else { m });
    if amax == rzero {
        w.fill(zero::<T>());
        if let Some(v) = v {
            v.fill(zero::<T>());
            for k in 0..n {
                v[k * n + k] = T::new(<R<T> as Float>::ONE, rzero);
            }
        }
        return true;
    }
    let scale = pow2_near(amax);
    let inv = <R<T> as Float>::ONE / scale;
    for z in a.iter_mut() {
        *z = z.scale(inv);
    }
    let bs = recommended_block_size::<T>(n, n);
    let mut hh = vec![zero::<T>(); bs * (n - 1)];
    let req = StackReq::any_of(&[
        tridiag_in_place_scratch::<T>(n, par, Spec::default()),
        apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(n - 1, bs, n),
    ]);
    let mut mem = MemBuffer::new(req);
    tridiag_in_place(
        MatMut::from_column_major_slice_mut(a, n, n),
        MatMut::from_column_major_slice_mut(&mut hh, bs, n - 1),
        par,
        MemStack::new(&mut mem),
        Spec::default(),
    );
    // T = D T_r Dᴴ: d_0 = 1, d_(k+1) = d_k t_k / |t_k| for the subdiagonal t_k
    let mut d = vec![rzero; n];
    let mut e = vec![rzero; n];
    let mut phase = vec![T::new(<R<T> as Float>::ONE, rzero); n];
    for k in 0..n {
        d[k] = a[k * n + k].re();
        if k + 1 < n {
            let t = a[k * n + k + 1];
            let r = t.abs();
            e[k] = r;
            let u = if r == rzero {
                T::new(<R<T> as Float>::ONE, rzero)
            } else {
                T::new(t.re() / r, t.im() / r)
            };
            phase[k + 1] = ComplexFloat::mul(phase[k], u);
        }
    }
    let Some(v) = v else {
        // eigenvalues alone: the root-free QL iteration
        let mut sc = [vec![rzero; n], vec![rzero; n], vec![rzero; n], vec![rzero; n]];
        let [c, s, pc, ps] = &mut sc;
        if !tridiag_qr(&mut d, &mut e, None, c, s, pc, ps) {
            return false;
        }
        sort_ascending(&mut d, None);
        for (wk, dk) in w.iter_mut().zip(&d) {
            *wk = T::new(*dk * scale, rzero);
        }
        return true;
    };
    let mut z = vec![rzero; n * n];
    if n >= DC_N {
        let mut work = Work::default();
        if !tridiag_dc(&mut d, &mut e, &mut z, matches!(par, Par::Rayon(_)), &mut work) {
            return false;
        }
    } else {
        identity(&mut z, n);
        let mut sc = [vec![rzero; n], vec![rzero; n], vec![rzero; n], vec![rzero; n]];
        let [c, s, pc, ps] = &mut sc;
        if !tridiag_qr(&mut d, &mut e, Some(&mut z), c, s, pc, ps) {
            return false;
        }
    }
    sort_ascending(&mut d, Some(&mut z));
    // V = Q D Z
    for c in 0..n {
        for r in 0..n {
            v[c * n + r] = phase[r].scale(z[c * n + r]);
        }
    }
    apply_block_householder_sequence_on_the_left_in_place_with_conj(
        MatRef::from_column_major_slice(a, n, n).submatrix(1, 0, n - 1, n - 1),
        MatRef::from_column_major_slice(&hh, bs, n - 1),
        Conj::No,
        MatMut::from_column_major_slice_mut(v, n, n).subrows_mut(1, n - 1),
        par,
        MemStack::new(&mut mem),
    );
    for (wk, dk) in w.iter_mut().zip(&d) {
        *wk = T::new(*dk * scale, rzero);
    }
    true
}

/// Multiplies `col` by the unit phase that makes its component of largest modulus (the
/// first on ties) real and positive.
fn fix_phase<T: ComplexElem>(col: &mut [T]) {
    let mut best = (0, <R<T> as Float>::ZERO);
    for (k, z) in col.iter().enumerate() {
        let m = z.abs();
        if m > best.1 {
            best = (k, m);
        }
    }
    if best.1 == <R<T> as Float>::ZERO {
        return;
    }
    let p = col[best.0];
    let phase = T::new(p.re() / best.1, -p.im() / best.1);
    for z in col.iter_mut() {
        *z = ComplexFloat::mul(*z, phase);
    }
    col[best.0] = T::new(best.1, <R<T> as Float>::ZERO);
}
