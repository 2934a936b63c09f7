//! The symmetric indefinite factorisation `A = P L D Lᵀ Pᵀ` with Bunch–Kaufman pivoting
//! (LAPACK's `dsytf2` and `dsytrs`, lower triangle), for `linalg.ldl_factor` and
//! `linalg.ldl_solve`.
//!
//! The compact format is LAPACK's, which PyTorch returns: `D`'s 1 x 1 and 2 x 2 diagonal
//! blocks on and beside the diagonal, `L`'s multipliers below them (unit diagonal
//! implied), and `ipiv` (1-based): `ipiv[k] = p > 0` for a 1 x 1 block at `k` after rows
//! and columns `k` and `p − 1` were interchanged; `ipiv[k] = ipiv[k + 1] = −p` for a 2 x 2
//! block at `k, k + 1` after `k + 1` and `p − 1` were. The pivot choices are
//! `dsytf2`'s to the letter (the first largest entry on ties, NaN never chosen after the
//! first), so that the same matrix gives PyTorch's pivots; PyTorch's LAPACK switches to
//! the blocked `dlasyf` above order 64, which makes the same choices in exact arithmetic.

use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::layout::Layout;

/// Bunch and Kaufman's `α = (1 + √17) / 8`: the growth bound of the 1 x 1 pivots.
fn alpha<T: LinalgElem>() -> T {
    T::from_f64((1.0 + 17f64.sqrt()) / 8.0)
}

/// The index and absolute value of the first largest `|x|` of `x` (BLAS `idamax`: a NaN
/// is never larger, so only a first NaN is returned).
fn amax<T: LinalgElem>(x: impl Iterator<Item = T>) -> (usize, T) {
    let mut best = (0, T::ZERO);
    for (i, v) in x.enumerate() {
        let v = v.abs();
        if i == 0 || v > best.1 {
            best = (i, v);
        }
    }
    best
}

/// `dsytf2` (lower) on the column-major `n x n` matrix `a`, in place: the lower triangle
/// becomes the compact factors and the strict upper triangle is zeroed (as PyTorch
/// returns it). `ipiv` gets the pivots; returns `info` (the 1-based index of the first
/// exactly zero 1 x 1 block of `D`, or 0; the factorisation is completed regardless).
pub(crate) fn sytf2_lower<T: LinalgElem>(a: &mut [T], n: usize, ipiv: &mut [i64]) -> i64 {
    let at = |i: usize, j: usize| j * n + i;
    let alpha = alpha::<T>();
    let mut info = 0;
    let mut k = 0;
    while k < n {
        let mut kstep = 1;
        let absakk = a[at(k, k)].abs();
        let (imax, colmax) = if k + 1 < n {
            let (i, v) = amax(a[at(k + 1, k)..at(n, k)].iter().copied());
            (k + 1 + i, v)
        } else {
            (k, T::ZERO)
        };
        let mut kp = k;
        // Fortran's MAX(ABSAKK, COLMAX) of the LAPACK behind PyTorch (the second
        // operand when the first is NaN): a NaN diagonal beside a zero column counts as
        // zero, as there (a NaN diagonal at the last column took the 2 x 2 branch below,
        // past the matrix's end)
        let most = if absakk > colmax { absakk } else { colmax };
        if most == T::ZERO {
            // the column is zero: D's block is zero, nothing to eliminate
            if info == 0 {
                info = k as i64 + 1;
            }
        } else {
            // (written as dsytf2's test, so that a NaN takes its branch)
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(absakk >= alpha * colmax) {
                // the largest off-diagonal entry of row (and column) imax
                let (_, mut rowmax) = amax((k..imax).map(|j| a[at(imax, j)]));
                if imax + 1 < n {
                    let (_, below) = amax(a[at(imax + 1, imax)..at(n, imax)].iter().copied());
                    if below > rowmax {
                        rowmax = below;
                    }
                }
                if absakk >= alpha * colmax * (colmax / rowmax) {
                    kp = k;
                } else if a[at(imax, imax)].abs() >= alpha * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                // interchange rows and columns kk and kp of the trailing (lower) matrix
                for i in kp + 1..n {
                    a.swap(at(i, kk), at(i, kp));
                }
                for j in kk + 1..kp {
                    a.swap(at(j, kk), at(kp, j));
                }
                a.swap(at(kk, kk), at(kp, kp));
                if kstep == 2 {
                    a.swap(at(k + 1, k), at(kp, k));
                }
            }
            if kstep == 1 {
                // A22 −= x xᵀ / d (lower triangle, as dsyr), then L's column x / d
                let r = T::ONE / a[at(k, k)];
                for j in k + 1..n {
                    let t = -r * a[at(j, k)];
                    for i in j..n {
                        let v = a[at(i, k)] * t;
                        a[at(i, j)] += v;
                    }
                }
                for i in k + 1..n {
                    a[at(i, k)] *= r;
                }
            } else if k + 2 < n {
                // A22 −= [x y] D⁻¹ [x y]ᵀ, and L's columns [x y] D⁻¹, with D⁻¹ written
                // through d21 as dsytf2 does
                let mut d21 = a[at(k + 1, k)];
                let d11 = a[at(k + 1, k + 1)] / d21;
                let d22 = a[at(k, k)] / d21;
                let t = T::ONE / (d11 * d22 - T::ONE);
                d21 = t / d21;
                for j in k + 2..n {
                    let wk = d21 * (d11 * a[at(j, k)] - a[at(j, k + 1)]);
                    let wkp1 = d21 * (d22 * a[at(j, k + 1)] - a[at(j, k)]);
                    for i in j..n {
                        let v = a[at(i, j)] - a[at(i, k)] * wk - a[at(i, k + 1)] * wkp1;
                        a[at(i, j)] = v;
                    }
                    a[at(j, k)] = wk;
                    a[at(j, k + 1)] = wkp1;
                }
            }
        }
        if kstep == 1 {
            ipiv[k] = kp as i64 + 1;
        } else {
            ipiv[k] = -(kp as i64 + 1);
            ipiv[k + 1] = -(kp as i64 + 1);
        }
        k += kstep;
    }
    for j in 1..n {
        for i in 0..j {
            a[at(i, j)] = T::ZERO;
        }
    }
    info
}

/// `dsytrs` (lower): solves `A X = B` in place for the column-major `n x k` right-hand
/// sides `b`, with `A`'s compact factors `f` (column-major `n x n`) and pivots `ipiv`
/// (checked by the caller).
pub(crate) fn sytrs_lower<T: LinalgElem>(f: &[T], ipiv: &[i64], b: &mut [T], n: usize, k: usize) {
    let at = |i: usize, j: usize| j * n + i;
    let swap = |b: &mut [T], r: usize, s: usize| {
        if r != s {
            for c in 0..k {
                b.swap(c * n + r, c * n + s);
            }
        }
    };
    // L D Y = P B
    let mut j = 0;
    while j < n {
        if ipiv[j] > 0 {
            swap(b, j, ipiv[j] as usize - 1);
            for c in 0..k {
                let y = b[c * n + j];
                for i in j + 1..n {
                    b[c * n + i] -= f[at(i, j)] * y;
                }
                b[c * n + j] = y * (T::ONE / f[at(j, j)]);
            }
            j += 1;
        } else {
            swap(b, j + 1, (-ipiv[j]) as usize - 1);
            let akm1k = f[at(j + 1, j)];
            let akm1 = f[at(j, j)] / akm1k;
            let ak = f[at(j + 1, j + 1)] / akm1k;
            let denom = akm1 * ak - T::ONE;
            for c in 0..k {
                let (y0, y1) = (b[c * n + j], b[c * n + j + 1]);
                for i in j + 2..n {
                    b[c * n + i] -= f[at(i, j)] * y0;
                }
                for i in j + 2..n {
                    b[c * n + i] -= f[at(i, j + 1)] * y1;
                }
                let (bkm1, bk) = (y0 / akm1k, y1 / akm1k);
                b[c * n + j] = (ak * bkm1 - bk) / denom;
                b[c * n + j + 1] = (akm1 * bk - bkm1) / denom;
            }
            j += 2;
        }
    }
    // Lᵀ X = Y, then the interchanges undone
    let mut j = n;
    while j > 0 {
        let c1 = j - 1;
        if ipiv[c1] > 0 {
            for c in 0..k {
                let dot = (j..n).fold(T::ZERO, |s, i| s + f[at(i, c1)] * b[c * n + i]);
                b[c * n + c1] -= dot;
            }
            swap(b, c1, ipiv[c1] as usize - 1);
            j -= 1;
        } else {
            // the 2 x 2 block at c1 − 1, c1
            for c in 0..k {
                let d1 = (j..n).fold(T::ZERO, |s, i| s + f[at(i, c1)] * b[c * n + i]);
                b[c * n + c1] -= d1;
                let d0 = (j..n).fold(T::ZERO, |s, i| s + f[at(i, c1 - 1)] * b[c * n + i]);
                b[c * n + c1 - 1] -= d0;
            }
            swap(b, c1, (-ipiv[c1]) as usize - 1);
            j -= 2;
        }
    }
}

/// Batched [`sytf2_lower`] of `a: (*, n, n)` (its lower triangle): the compact factors
/// (column-major), the pivots `(*, n)` and `info` per matrix.
pub(crate) fn ldl_factor<T: LinalgElem>(
    a: &[T],
    al: &Layout,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    factor_batch(a, al, T::ZERO, 1, sytf2_lower)
}

/// Runs `factor` (an in-place `sytf2`: column-major `n x n` matrix, its order, its
/// pivots; returns `info`) on each matrix of `a: (*, n, n)`: the compact factors
/// (column-major), the pivots `(*, n)` and `info` per matrix. `cost` weighs one
/// multiply-add of `T` against a real one (a complex one is about 4), for the split over
/// the threads. Shared by the real and complex factorisations.
pub(crate) fn factor_batch<T: Copy + Send + Sync>(
    a: &[T],
    al: &Layout,
    zero: T,
    cost: usize,
    factor: impl Fn(&mut [T], usize, &mut [i64]) -> i64 + Sync,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    let ba = Batch::of(al);
    let n = ba.n;
    let size = n * n;
    let mut out = vec![zero; ba.len() * size];
    let mut piv = vec![0i64; ba.len() * n];
    let mut info = vec![0i64; ba.len()];
    if size > 0 {
        let per = (TASK_WORK / (cost * n * n * n / 3 + 1)).max(1);
        let (po, pp) = (Parts::new(&mut out, size * per), Parts::new(&mut piv, n * per));
        let pf = Parts::new(&mut info, per);
        run_tasks(pf.len(), |t| {
            let (o, p, f) = (po.take(t), pp.take(t), pf.take(t));
            let mats = o.chunks_exact_mut(size).zip(p.chunks_exact_mut(n)).zip(f.iter_mut());
            for (j, ((m, p), f)) in mats.enumerate() {
                ba.load(a, t * per + j, m);
                *f = factor(m, n, p);
            }
        });
    }
    (out, colmajor_layout(&ba.dims, n, n), piv, info)
}

/// Batched [`sytrs_lower`]: `A X = B` for compact factors `f: (*, n, n)` with contiguous
/// pivots `piv: (*, n)` and `b: (*, n, k)` of the same batch; column-major result.
pub(crate) fn ldl_solve<T: LinalgElem>(
    f: &[T],
    fl: &Layout,
    piv: &[i64],
    b: &[T],
    bl: &Layout,
) -> (Vec<T>, Layout) {
    solve_batch(f, fl, piv, b, bl, T::ZERO, 1, sytrs_lower)
}

/// Runs `solve` (an in-place `sytrs`: compact factors, pivots, right-hand sides, `n`,
/// `k`) on each matrix of `b: (*, n, k)` with the factors `f: (*, n, n)` and contiguous
/// pivots `piv: (*, n)` of the same batch; column-major result. `cost` as in
/// [`factor_batch`].
pub(crate) fn solve_batch<T: Copy + Send + Sync>(
    f: &[T],
    fl: &Layout,
    piv: &[i64],
    b: &[T],
    bl: &Layout,
    zero: T,
    cost: usize,
    solve: impl Fn(&[T], &[i64], &mut [T], usize, usize) + Sync,
) -> (Vec<T>, Layout) {
    let bf = Batch::of(fl);
    let bb = Batch::of(bl);
    let (n, k) = (bb.m, bb.n);
    let size = n * k;
    let mut out = vec![zero; bb.len() * size];
    for_each_matrix(&mut out, size, cost * n * n * k.max(1), false, |i, dst, tmp, _| {
        bb.load(b, i, dst);
        tmp.clear();
        tmp.resize(n * n, zero);
        bf.load(f, i, tmp);
        solve(tmp, &piv[i * n..(i + 1) * n], dst, n, k);
    });
    (out, colmajor_layout(&bb.dims, n, k))
}
