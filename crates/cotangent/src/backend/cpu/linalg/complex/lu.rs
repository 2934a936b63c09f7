//! LU factorisation of complex matrices, `A = P L U` (LAPACK `zgetrf`'s conventions), the
//! solves with its packed factors (`zgetrs`, `A X = B` and `Aᴴ X = B`), and determinants
//! read off the factors.
//!
//! Pivots are chosen as LAPACK's `izamax` chooses them, by the largest `|re| + |im|` (the
//! first on ties), which is also faer's rule: faer's recursive kernel factorises matrices
//! above [`SMALL`], and its final permutation is turned back into LAPACK's sequence of
//! interchanges (the sequence is determined by the permutation: step `j` must bring the
//! row that ends at position `j`). faer divides by a zero pivot, where LAPACK leaves the
//! (zero) column unscaled and reports it; a matrix whose factors show a zero or
//! non-finite pivot is therefore factorised again by [`getf2`], LAPACK's unblocked loop,
//! which also serves small matrices and the unpivoted factorisation.

use std::sync::atomic::{AtomicI64, Ordering};

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::linalg::triangular_solve as ts;
use faer::Spec;

use super::{zero, ComplexElem, PAR_N, R};
use crate::backend::cpu::linalg::{colmajor_layout, colmajor_mut, for_each_matrix, Batch};
use crate::backend::cpu::pool;
use crate::complex::ComplexFloat;
use crate::dtype::{Element, Float};
use crate::layout::Layout;

/// Orders up to which [`getf2`] factorises directly.
const SMALL: usize = 16;

/// LAPACK's `|re| + |im|`, the magnitude pivots are chosen by.
fn abs1<T: ComplexElem>(z: T) -> R<T> {
    z.re().abs() + z.im().abs()
}

/// The unblocked right-looking LU of the column-major `m x n` matrix `a`, in place, with
/// partial pivoting (or none): LAPACK's `getf2`. Writes the 1-based interchanges into
/// `ipiv` (`min(m, n)` of them; `j + 1` at step `j` without pivoting). A zero pivot
/// leaves its column unscaled (under partial pivoting that column is zero below it) and
/// the elimination goes on.
fn getf2<T: ComplexElem>(a: &mut [T], m: usize, n: usize, pivot: bool, ipiv: &mut [i64]) {
    let k = m.min(n);
    for j in 0..k {
        let mut p = j;
        if pivot {
            let mut best = abs1(a[j * m + j]);
            for r in j + 1..m {
                let v = abs1(a[j * m + r]);
                if v > best {
                    best = v;
                    p = r;
                }
            }
        }
        ipiv[j] = p as i64 + 1;
        let d = a[j * m + p];
        if d != zero::<T>() {
            if p != j {
                for c in 0..n {
                    a.swap(c * m + j, c * m + p);
                }
            }
            for r in j + 1..m {
                a[j * m + r] = ComplexFloat::div(a[j * m + r], d);
            }
        }
        let (done, rest) = a.split_at_mut((j + 1) * m);
        let lcol = &done[j * m + j + 1..];
        for c in rest.chunks_exact_mut(m) {
            let f = c[j];
            if f != zero::<T>() {
                for (x, &l) in c[j + 1..].iter_mut().zip(lcol) {
                    *x -= ComplexFloat::mul(l, f);
                }
            }
        }
    }
}

/// LAPACK's interchanges (1-based) of a permutation given as `perm[i]`, the original row
/// at position `i` after the interchanges, for the first `ipiv.len()` steps.
fn interchanges(perm: &[usize], ipiv: &mut [i64]) {
    let m = perm.len();
    // cur[p]: the original row now at position p; pos[r]: where original row r is
    let mut cur: Vec<usize> = (0..m).collect();
    let mut pos: Vec<usize> = (0..m).collect();
    for (j, ip) in ipiv.iter_mut().enumerate() {
        let p = pos[perm[j]];
        *ip = p as i64 + 1;
        cur.swap(j, p);
        pos[cur[j]] = j;
        pos[cur[p]] = p;
    }
}

/// Factorises the column-major `m x n` block `dst` (holding the matrix) in place, with
/// its interchanges in `ipiv`; `reload` puts the matrix back for [`getf2`]'s retry.
fn factor_one<T: ComplexElem>(
    dst: &mut [T],
    m: usize,
    n: usize,
    pivot: bool,
    ipiv: &mut [i64],
    par: faer::Par,
    reload: impl Fn(&mut [T]),
) {
    let k = m.min(n);
    if !pivot || k <= SMALL {
        getf2(dst, m, n, pivot, ipiv);
        return;
    }
    let mut perm = vec![0usize; m];
    let mut perm_inv = vec![0usize; m];
    let req = lu_in_place_scratch::<usize, T>(m, n, par, Spec::default());
    let mut buf = MemBuffer::new(req);
    lu_in_place(
        colmajor_mut(dst, m, n),
        &mut perm,
        &mut perm_inv,
        par,
        MemStack::new(&mut buf),
        Spec::default(),
    );
    let bad = (0..k).any(|j| {
        let d = dst[j * m + j];
        d == zero::<T>() || !(d.re().is_finite() && d.im().is_finite())
    });
    if bad {
        reload(dst);
        getf2(dst, m, n, pivot, ipiv);
    } else {
        interchanges(&perm, ipiv);
    }
}

/// The LU of each `a: (*, m, n)`, with partial pivoting or none: the packed factors
/// (column-major), the 1-based interchanges `(*, min(m, n))` and `info` per matrix (the
/// 1-based index of the first exactly zero pivot, or 0), as `zgetrf`.
pub(crate) fn lu_factor<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    pivot: bool,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let size = m * n;
    let len = ba.len();
    let piv: Vec<AtomicI64> = (0..len * k).map(|_| AtomicI64::new(0)).collect();
    let mut out = pool::filled(len * size, zero::<T>());
    for_each_matrix(&mut out, size, size * k, k >= PAR_N, |i, dst, _, par| {
        ba.load(a, i, dst);
        let (mut small, mut big) = ([0i64; SMALL], Vec::new());
        let ipiv = if k <= SMALL {
            &mut small[..k]
        } else {
            big.resize(k, 0);
            &mut big[..]
        };
        factor_one(dst, m, n, pivot, ipiv, par, |d| ba.load(a, i, d));
        for (slot, &p) in piv[i * k..(i + 1) * k].iter().zip(ipiv.iter()) {
            slot.store(p, Ordering::Relaxed);
        }
    });
    let piv: Vec<i64> = piv.into_iter().map(AtomicI64::into_inner).collect();
    let info = if size == 0 {
        vec![0; len]
    } else {
        out.chunks_exact(size)
            .map(|f| (0..k).find(|&j| f[j * m + j] == zero::<T>()).map_or(0, |j| j as i64 + 1))
            .collect()
    };
    (out, colmajor_layout(&ba.dims, m, n), piv, info)
}

/// Solves `A X = B` (`Aᴴ X = B` if `adjoint`, the conjugate transpose) for each
/// `A = P L U` given by packed factors `lu: (*, n, n)` and interchanges `piv` (contiguous
/// `(*, n)`, in `1..=n`), with `b: (*, n, k)` of the same batch dims. Column-major result.
pub(crate) fn lu_solve<T: ComplexElem>(
    lu: &[T],
    lul: &Layout,
    piv: &[i64],
    b: &[T],
    bl: &Layout,
    adjoint: bool,
) -> (Vec<T>, Layout) {
    let ba = Batch::of(lul);
    let bb = Batch::of(bl);
    let n = ba.n;
    let (rows, k) = (bb.m, bb.n);
    debug_assert_eq!(rows, n);
    let size = rows * k;
    let mut out = pool::filled(bb.len() * size, zero::<T>());
    for_each_matrix(&mut out, size, n * n * k.max(1), n >= PAR_N, |i, dst, tmp, par| {
        bb.load(b, i, dst);
        let ipiv = &piv[i * n..(i + 1) * n];
        let f = ba.mat(lu, i, tmp);
        let swap = |dst: &mut [T], j: usize| {
            let p = ipiv[j] as usize - 1;
            if p != j {
                for c in 0..k {
                    dst.swap(c * n + j, c * n + p);
                }
            }
        };
        if adjoint {
            // Aᴴ = Uᴴ Lᴴ Pᵀ: Uᴴ is lower, Lᴴ unit upper; then P, the interchanges undone
            let x = colmajor_mut(dst, n, k);
            ts::solve_lower_triangular_in_place(f.adjoint(), x, par);
            ts::solve_unit_upper_triangular_in_place(f.adjoint(), colmajor_mut(dst, n, k), par);
            for j in (0..n).rev() {
                swap(dst, j);
            }
        } else {
            for j in 0..n {
                swap(dst, j);
            }
            ts::solve_unit_lower_triangular_in_place(f, colmajor_mut(dst, n, k), par);
            ts::solve_upper_triangular_in_place(f, colmajor_mut(dst, n, k), par);
        }
    });
    (out, colmajor_layout(&bb.dims, rows, k))
}

/// The determinants of the square `a: (*, n, n)` from their LU, per matrix: `det A`,
/// its phase `det A / |det A|` (0 for a singular matrix), `log |det A|` (real; `-inf`
/// for a singular matrix; 0 unless `want_log`) and whether the matrix is near singular
/// (its smallest pivot at most `√ε` times its largest, in modulus; never for
/// non-finite factors), with the factors, interchanges and `info` of [`lu_factor`].
#[allow(clippy::type_complexity)]
pub(crate) fn lu_det<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    want_log: bool,
) -> crate::backend::LuDet<Vec<T>, Vec<i64>, Vec<bool>, Vec<R<T>>> {
    let (lu, layout, piv, info) = lu_factor(a, al, true);
    let n = Batch::of(al).n;
    let len = info.len();
    let one = T::new(<R<T> as Float>::ONE, <R<T> as Float>::ZERO);
    let eps = Element::to_f64(<R<T> as Float>::EPSILON);
    let (mut det, mut sign) = (Vec::with_capacity(len), Vec::with_capacity(len));
    let (mut logabs, mut loose) = (Vec::with_capacity(len), Vec::with_capacity(len));
    for i in 0..len {
        let f = &lu[i * n * n..(i + 1) * n * n];
        let ipiv = &piv[i * n..(i + 1) * n];
        let swaps = ipiv.iter().enumerate().filter(|&(j, &q)| q as usize != j + 1).count();
        let s0 = if swaps % 2 == 1 { -one } else { one };
        let (mut d, mut s, mut l) = (s0, s0, 0.0f64);
        let (mut max, mut min, mut finite) = (0.0f64, f64::INFINITY, true);
        for j in 0..n {
            let u = f[j * n + j];
            let r = u.abs();
            d = ComplexFloat::mul(d, u);
            // the phase u / |u| (0 for a zero pivot)
            let phase = if r == <R<T> as Float>::ZERO {
                zero::<T>()
            } else {
                T::new(u.re() / r, u.im() / r)
            };
            s = ComplexFloat::mul(s, phase);
            let r = Element::to_f64(r);
            l += r.ln();
            max = max.max(r);
            min = min.min(r);
            finite &= u.re().is_finite() && u.im().is_finite();
        }
        det.push(d);
        sign.push(s);
        logabs.push(if want_log { <R<T> as Float>::of(l) } else { <R<T> as Float>::ZERO });
        loose.push(finite && n > 0 && min <= eps.sqrt() * max);
    }
    crate::backend::LuDet { lu, layout, piv, info, det, sign, logabs, loose }
}
