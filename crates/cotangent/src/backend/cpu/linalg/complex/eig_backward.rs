//! The first-order VJP of the general eigendecomposition fused per matrix
//! ([`eig_backward`], the backward pass's fast path at small orders when it is not
//! recorded): `gA = V⁻ᴴ (diag(gw) + X / Ē) Vᴴ`, `X = VᴴgV − VᴴV diag(Re diag(VᴴgV))`, as
//! `crate::linalg::eig`'s tensor-op VJP computes it, with its checks; each matrix in
//! scratch, the solve with `Vᴴ` by LU with partial pivoting.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{zero, ComplexElem, R};
use crate::backend::cpu::linalg::{for_each_matrix_with, Batch};
use crate::complex::ComplexFloat as C;
use crate::dtype::Float;
use crate::layout::Layout;

/// The VJP of `eig` from the eigenvalues `w: (*, n)`, the eigenvectors `v: (*, n, n)`
/// and the cotangents (`None` is zero; not both): `gA`, contiguous `(*, n, n)`. `None`
/// where the composition must answer instead: at some matrix the loss depends on an
/// eigenvector's phase or on the basis of a repeated eigenvalue's eigenspace (the same
/// tests and tolerances as the composition, which raises the error), or `Vᴴ` has an
/// exactly zero pivot (the composition's solve reports it).
pub(crate) fn eig_backward<T: ComplexElem>(
    w: (&[T], &Layout),
    v: (&[T], &Layout),
    gw: Option<(&[T], &Layout)>,
    gv: Option<(&[T], &Layout)>,
) -> Option<(Vec<T>, Layout)> {
    let bv = Batch::of(v.1);
    let n = bv.n;
    let bw = Batch::of_vector(w.1);
    let bgw = gw.map(|g| (g.0, Batch::of_vector(g.1)));
    let bgv = gv.map(|g| (g.0, Batch::of(g.1)));
    let size = n * n;
    let count = bv.len();
    let mut out = crate::backend::cpu::pool::overwritten(count * size, zero::<T>());
    let layout = Layout::contiguous(v.1.shape().clone());
    if size == 0 || count == 0 {
        return Some((out, layout));
    }
    let eps = <R<T> as Float>::EPSILON;
    let failed = AtomicBool::new(false);
    let make = || vec![zero::<T>(); 5 * size + 2 * n];
    for_each_matrix_with(&mut out, size, 12 * n * n * n, false, make, |i, dst, tmp, _| {
        if failed.load(Ordering::Relaxed) {
            return;
        }
        let (vm, rest) = tmp.split_at_mut(size);
        let (g, rest) = rest.split_at_mut(size);
        let (x, rest) = rest.split_at_mut(size);
        let (gram, rest) = rest.split_at_mut(size);
        let (lu, rest) = rest.split_at_mut(size);
        let (wi, gwi) = rest.split_at_mut(n);
        // column-major V, w, gw
        bv.load(v.0, i, vm);
        bw.load(w.0, i, wi);
        match &bgw {
            Some((d, b)) => b.load(d, i, gwi),
            None => gwi.fill(zero()),
        }
        // the middle factor M into x (column-major)
        if let Some((d, b)) = &bgv {
            b.load(d, i, g);
            if !middle(vm, g, wi, gwi, x, gram, n, eps) {
                failed.store(true, Ordering::Relaxed);
                return;
            }
        } else {
            x.fill(zero());
            for j in 0..n {
                x[j + j * n] = gwi[j];
            }
        }
        // the right-hand side M Vᴴ into g, then Vᴴ Y = M Vᴴ
        for c in 0..n {
            for r in 0..n {
                let mut s = zero::<T>();
                for k in 0..n {
                    s += C::mul(x[r + k * n], vm[c + k * n].conj());
                }
                g[r + c * n] = s;
            }
        }
        for c in 0..n {
            for r in 0..n {
                lu[r + c * n] = vm[c + r * n].conj();
            }
        }
        if !lu_solve(lu, g, n) {
            failed.store(true, Ordering::Relaxed);
            return;
        }
        // row-major out
        for r in 0..n {
            for c in 0..n {
                dst[r * n + c] = g[r + c * n];
            }
        }
    });
    if failed.into_inner() {
        return None;
    }
    Some((out, layout))
}

/// The middle factor `diag(gw) + X / Ē` of one matrix into `m` (column-major), from
/// `V`, `gV` (column-major), `w`, `gw`, with `gram` scratch; false where the gradient is
/// undefined (the composition's tests: `Im((VᴴgV)_jj)` beyond `√ε max|VᴴgV|`, or a
/// projected entry beyond that at a gap below `8 n ε max|w|`).
#[allow(clippy::too_many_arguments)]
fn middle<T: ComplexElem>(
    v: &[T],
    gv: &[T],
    w: &[T],
    gw: &[T],
    m: &mut [T],
    gram: &mut [T],
    n: usize,
    eps: R<T>,
) -> bool {
    // X = VᴴgV and VᴴV
    let mut xmax = <R<T> as Float>::ZERO;
    for c in 0..n {
        for r in 0..n {
            let (mut s, mut t) = (zero::<T>(), zero::<T>());
            for k in 0..n {
                let a = v[k + r * n].conj();
                s += C::mul(a, gv[k + c * n]);
                t += C::mul(a, v[k + c * n]);
            }
            m[r + c * n] = s;
            gram[r + c * n] = t;
            let a = s.abs();
            if a > xmax {
                xmax = a;
            }
        }
    }
    let tol = eps.sqrt() * xmax;
    if (0..n).any(|j| m[j + j * n].im().abs() > tol) {
        return false;
    }
    let wmax = w.iter().fold(<R<T> as Float>::ZERO, |a, z| if z.abs() > a { z.abs() } else { a });
    let gap_tol = <R<T> as Float>::of(8.0 * n as f64) * eps * wmax;
    for c in 0..n {
        let re = m[c + c * n].re();
        for r in 0..n {
            let k = r + c * n;
            if r == c {
                continue;
            }
            let proj = m[k] - gram[k].scale(re);
            // Ē_rc = conj(w_c − w_r)
            let e = (w[c] - w[r]).conj();
            if e.abs() <= gap_tol {
                if proj.abs() > tol && xmax > <R<T> as Float>::ZERO {
                    return false;
                }
                m[k] = zero();
            } else {
                m[k] = C::div(proj, e);
            }
        }
    }
    for j in 0..n {
        m[j + j * n] = gw[j];
    }
    true
}

/// Solves `A Y = B` in place (`a` overwritten by its LU factors, `b` by `Y`; both
/// column-major `n x n`) by Gaussian elimination with partial pivoting (the pivot of
/// largest `|re| + |im|`); false at an exactly zero pivot.
fn lu_solve<T: ComplexElem>(a: &mut [T], b: &mut [T], n: usize) -> bool {
    let cabs1 = |z: T| z.re().abs() + z.im().abs();
    for k in 0..n {
        let mut p = k;
        for r in k + 1..n {
            if cabs1(a[r + k * n]) > cabs1(a[p + k * n]) {
                p = r;
            }
        }
        if cabs1(a[p + k * n]) == <R<T> as Float>::ZERO {
            return false;
        }
        if p != k {
            for c in 0..n {
                a.swap(k + c * n, p + c * n);
                b.swap(k + c * n, p + c * n);
            }
        }
        let piv = a[k + k * n];
        for r in k + 1..n {
            let l = C::div(a[r + k * n], piv);
            for c in k + 1..n {
                let u = a[k + c * n];
                a[r + c * n] += -C::mul(l, u);
            }
            for c in 0..n {
                let u = b[k + c * n];
                b[r + c * n] += -C::mul(l, u);
            }
        }
    }
    for c in 0..n {
        for r in (0..n).rev() {
            let mut s = b[r + c * n];
            for k in r + 1..n {
                s += -C::mul(a[r + k * n], b[k + c * n]);
            }
            b[r + c * n] = C::div(s, a[r + r * n]);
        }
    }
    true
}
