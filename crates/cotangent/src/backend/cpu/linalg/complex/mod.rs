//! Dense complex linear algebra (`C64`, `C128`), batched: triangular solves and the
//! Cholesky factorisation of Hermitian matrices here, the LU family in [`lu`], the
//! Hermitian eigendecomposition in [`eigh`], the general one (of real input too) in
//! [`eig`], the matrix exponential in [`expm`], the symmetric and Hermitian indefinite
//! factorisations in [`ldl`], Householder QR in [`qr`], the SVD in
//! [`svd`]; each matrix through faer's generic kernels or products and the real
//! kernels' tridiagonal and bidiagonal solvers (no small-matrix lanes for complex yet).

pub(crate) mod eig;
pub(crate) mod eig_backward;
pub(crate) mod eigh;
pub(crate) mod expm;
pub(crate) mod ldl;
pub(crate) mod lu;
pub(crate) mod qr;
pub(crate) mod small_eig;
pub(crate) mod svd;
pub(crate) mod svd_backward;

use std::sync::atomic::{AtomicI64, Ordering};

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{
    cholesky_in_place, cholesky_in_place_scratch, LltRegularization,
};
use faer::{Par, Spec};

use super::{colmajor_layout, colmajor_mut, for_each_matrix, Batch};
use crate::backend::cpu::pool::{self, Pooled};
use crate::backend::TriSolve;
use crate::complex::ComplexFloat;
use crate::dtype::Float;
use crate::layout::Layout;

/// Complex elements faer factorises: `Complex<f32>`, `Complex<f64>`.
pub(crate) trait ComplexElem:
    ComplexFloat<Real: super::LinalgElem> + faer::traits::ComplexField + Pooled
{
}
impl ComplexElem for num_complex::Complex<f32> {}
impl ComplexElem for num_complex::Complex<f64> {}

/// The real type of `T`'s parts.
type R<T> = <T as ComplexFloat>::Real;

/// Order from which one matrix may use faer's parallel kernels.
const PAR_N: usize = 256;

fn zero<T: ComplexElem>() -> T {
    T::new(<R<T> as Float>::ZERO, <R<T> as Float>::ZERO)
}

/// Solves with the triangle of each `a: (*, n, n)` for each `b` (same batch dims): left,
/// `b: (*, n, k)`, `A X = B`, result column-major; right, `b: (*, k, n)`, `X A = B`
/// solved as `Aᵀ Xᵀ = Bᵀ` (a transpose, not a conjugate), result row-major — the layouts
/// of the real kernel.
pub(crate) fn solve_triangular<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    b: &[T],
    bl: &Layout,
    spec: TriSolve,
) -> (Vec<T>, Layout) {
    let (ba, bb, out_layout) = super::triangular::batches(al, bl, spec);
    let n = ba.n;
    let size = bb.m * bb.n;
    let mut out = pool::filled(ba.len() * size, zero::<T>());
    let work = n * n * bb.n;
    for_each_matrix(&mut out, size, work, n >= PAR_N, |i, dst, tmp, par| {
        bb.load(b, i, dst);
        let am = ba.mat(a, i, tmp);
        let (am, upper) = if spec.left { (am, spec.upper) } else { (am.transpose(), !spec.upper) };
        super::triangular::solve_in_place(am, colmajor_mut(dst, bb.m, bb.n), upper, spec.unit, par);
    });
    (out, out_layout)
}

/// The Cholesky factor of each Hermitian positive-definite `a: (*, n, n)`, reading its
/// lower triangle (`A = L Lᴴ`, returns `L`) or its upper one (`A = Uᴴ U`, returns `U`),
/// column-major, the other triangle zero; with LAPACK's `info` per matrix (0, or the order
/// of the first leading minor that is not positive definite, NaN included). The
/// imaginary parts of the diagonal are not read (as `zpotrf`).
pub(crate) fn cholesky<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    upper: bool,
) -> (Vec<T>, Layout, Vec<i64>) {
    let ba = Batch::of(al);
    let n = ba.n;
    let layout = colmajor_layout(&ba.dims, n, n);
    let info: Vec<AtomicI64> = (0..ba.len()).map(|_| AtomicI64::new(0)).collect();
    let mut out = pool::filled(ba.len() * n * n, zero::<T>());
    for_each_matrix(&mut out, n * n, n * n * n, n >= PAR_N, |i, dst, m, par| {
        // the triangle read, as the lower triangle of A: a_jk (j < k) of the upper one is
        // conj(a_kj); `m` the matrix as given, kept for the unblocked retry
        m.resize(n * n, zero::<T>());
        ba.load(a, i, m);
        let lower = |dst: &mut [T]| {
            for c in 0..n {
                for r in c..n {
                    let v = if upper { m[r * n + c].conj() } else { m[c * n + r] };
                    let v = if r == c { T::new(v.re(), <R<T> as Float>::ZERO) } else { v };
                    dst[c * n + r] = v;
                }
            }
        };
        lower(dst);
        let k = factor(dst, n, par, lower);
        info[i].store(k as i64, Ordering::Relaxed);
        for c in 0..n {
            for r in 0..c {
                dst[c * n + r] = zero::<T>();
            }
        }
        if upper {
            // U = Lᴴ
            for c in 0..n {
                for r in c + 1..n {
                    let l = dst[c * n + r];
                    dst[r * n + c] = l.conj();
                    dst[c * n + r] = zero::<T>();
                }
            }
        }
    });
    let info = info.into_iter().map(AtomicI64::into_inner).collect();
    (out, layout, info)
}

/// Factors the lower triangle of the column-major `n x n` block `l` in place (faer's
/// blocked kernel); on failure, `reload` puts the matrix back and the unblocked loop finds
/// LAPACK's `info` (faer reports no order). Returns `info`.
fn factor<T: ComplexElem>(l: &mut [T], n: usize, par: Par, reload: impl Fn(&mut [T])) -> usize {
    let mut buf = MemBuffer::new(cholesky_in_place_scratch::<T>(n, par, Spec::default()));
    let res = cholesky_in_place(
        colmajor_mut(l, n, n),
        LltRegularization::default(),
        par,
        MemStack::new(&mut buf),
        Spec::default(),
    );
    if res.is_ok() && (0..n).all(|k| l[k * n + k].re().is_finite()) {
        // a real diagonal, as LAPACK's (faer's may carry rounding in its imaginary parts)
        for k in 0..n {
            l[k * n + k] = T::new(l[k * n + k].re(), <R<T> as Float>::ZERO);
        }
        return 0;
    }
    reload(l);
    // the left-looking loop: column j from the columns before it
    for j in 0..n {
        let mut d = l[j * n + j].re();
        for k in 0..j {
            let x = l[k * n + j];
            d -= x.re() * x.re() + x.im() * x.im();
        }
        if d.is_nan() || d <= <R<T> as Float>::ZERO {
            // LAPACK's potf2 leaves the failed pivot where it stood
            l[j * n + j] = T::new(d, <R<T> as Float>::ZERO);
            return j + 1;
        }
        let djj = d.sqrt();
        l[j * n + j] = T::new(djj, <R<T> as Float>::ZERO);
        for i in j + 1..n {
            let mut s = l[j * n + i];
            for k in 0..j {
                s -= ComplexFloat::mul(l[k * n + i], l[k * n + j].conj());
            }
            l[j * n + i] = s.scale(<R<T> as Float>::ONE / djj);
        }
    }
    0
}
