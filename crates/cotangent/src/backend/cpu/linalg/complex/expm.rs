//! The matrix exponential of complex matrices, batched: scaling and squaring with Padé
//! approximants (Higham 2005), the degree and the squarings chosen per matrix from its
//! 1-norm by the real kernel's rule, the products by faer, the Padé quotient by faer's
//! LU with partial pivoting. (The real kernel's fused lane loops are not generic over
//! complex numbers.)

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, MatMut, MatRef, Par};

use super::{zero, ComplexElem, PAR_N, R};
use crate::backend::cpu::linalg::matrix_exp::{coefficients, degree};
use crate::backend::cpu::linalg::{colmajor_layout, for_each_matrix, Batch};
use crate::backend::cpu::pool;
use crate::dtype::{Element, Float};
use crate::layout::Layout;

fn one<T: ComplexElem>() -> T {
    T::new(<R<T> as Float>::ONE, <R<T> as Float>::ZERO)
}

/// `a · b` of column-major `n x n` matrices.
fn product<T: ComplexElem>(a: &[T], b: &[T], n: usize, par: Par) -> Vec<T> {
    let mut out = vec![zero::<T>(); n * n];
    matmul(
        MatMut::from_column_major_slice_mut(&mut out, n, n),
        Accum::Replace,
        MatRef::from_column_major_slice(a, n, n),
        MatRef::from_column_major_slice(b, n, n),
        one::<T>(),
        par,
    );
    out
}

/// `exp(a)` of the column-major `n x n` `a`, in place.
fn expm_one<T: ComplexElem>(a: &mut [T], n: usize, par: Par) {
    if n == 0 {
        return;
    }
    if n == 1 {
        a[0] = a[0].exp();
        return;
    }
    if a.iter().any(|z| !(z.re().is_finite() && z.im().is_finite())) {
        a.fill(T::new(<R<T> as Float>::NAN, <R<T> as Float>::NAN));
        return;
    }
    let norm = (0..n)
        .map(|c| (0..n).map(|r| Element::to_f64(a[c * n + r].abs())).sum::<f64>())
        .fold(0.0f64, f64::max);
    let (m, s) = degree::<R<T>>(norm);
    // 2⁻ˢ in steps whose factors are normal numbers (s may exceed the exponent range
    // when the norm overflowed, see `degree`)
    let step = if <R<T> as Float>::EPSILON.to_f64() > 1e-10 { 100 } else { 1000 };
    let mut left = s;
    while left > 0 {
        let k = left.min(step);
        let f = <R<T> as Float>::of(2f64.powi(-k));
        for z in a.iter_mut() {
            *z = z.scale(f);
        }
        left -= k;
    }
    let b = coefficients(m);
    // the even powers A², A⁴, …, A^(m−1) (m odd)
    let a2 = product(a, a, n, par);
    let mut powers = vec![a2.clone()];
    while powers.len() < (m - 1) / 2 {
        let next = product(powers.last().map_or(&a2[..], |p| &p[..]), &a2, n, par);
        powers.push(next);
    }
    // U = A Σ b_(2k+1) A^(2k), V = Σ b_(2k) A^(2k)
    let mut u0 = vec![zero::<T>(); n * n];
    let mut v = vec![zero::<T>(); n * n];
    for k in 0..n {
        u0[k * n + k] = T::new(<R<T> as Float>::of(b[1]), <R<T> as Float>::ZERO);
        v[k * n + k] = T::new(<R<T> as Float>::of(b[0]), <R<T> as Float>::ZERO);
    }
    for (j, p) in powers.iter().enumerate() {
        let (be, bo) = (<R<T> as Float>::of(b[2 * j + 2]), <R<T> as Float>::of(b[2 * j + 3]));
        for (x, &y) in v.iter_mut().zip(p) {
            *x += y.scale(be);
        }
        for (x, &y) in u0.iter_mut().zip(p) {
            *x += y.scale(bo);
        }
    }
    let u = product(a, &u0, n, par);
    // (V − U) R = V + U
    let q = Mat::<T>::from_fn(n, n, |r, c| v[c * n + r] - u[c * n + r]);
    let mut p = Mat::<T>::from_fn(n, n, |r, c| v[c * n + r] + u[c * n + r]);
    q.partial_piv_lu().solve_in_place(p.as_mut());
    for c in 0..n {
        for r in 0..n {
            a[c * n + r] = p[(r, c)];
        }
    }
    for _ in 0..s {
        let sq = product(a, a, n, par);
        a.copy_from_slice(&sq);
    }
}

/// `exp(A)` of each square complex `a: (*, n, n)`, column-major, with its layout. A
/// matrix with a NaN or an infinity gives NaN everywhere (a `1 x 1` one the scalar
/// exponential), as the real kernel.
pub(crate) fn matrix_exp<T: ComplexElem>(a: &[T], al: &Layout) -> (Vec<T>, Layout) {
    let ba = Batch::of(al);
    let n = ba.n;
    let mut out = pool::filled(ba.len() * n * n, zero::<T>());
    for_each_matrix(&mut out, n * n, n * n * n * 8, n >= PAR_N, |i, dst, _, par| {
        ba.load(a, i, dst);
        expm_one(dst, n, par);
    });
    (out, colmajor_layout(&ba.dims, n, n))
}
