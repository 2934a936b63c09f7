//! The complex indefinite factorisations with Bunch–Kaufman pivoting, lower triangle, in
//! LAPACK's compact format (as the real [`ldl`](super::super::ldl)): complex symmetric
//! `A = P L D Lᵀ Pᵀ` (`zsytf2`, `zsytrs`: `Aᵀ = A`, no conjugate anywhere) and Hermitian
//! `A = P L D Lᴴ Pᵀ` (`zhetf2`, `zhetrs`: `D`'s diagonal real, the imaginary parts of
//! `A`'s diagonal not read).
//!
//! Pivots are chosen as LAPACK chooses them, by `|re| + |im|` (`izamax`, `cabs1`; the
//! Hermitian diagonal by `|re|`), the first largest on ties, so that the same matrix
//! gives PyTorch's pivots. PyTorch's LAPACK switches to the blocked `zlasyf`/`zlahef`
//! above order 64, which makes the same choices in exact arithmetic.

use super::super::ldl::{factor_batch, solve_batch};
use super::{zero, ComplexElem, R};
use crate::complex::ComplexFloat;
use crate::dtype::{Element, Float};
use crate::layout::Layout;

/// `a · b`.
fn mul<T: ComplexElem>(a: T, b: T) -> T {
    ComplexFloat::mul(a, b)
}

/// `a / b`, scaled as LAPACK's complex division.
fn div<T: ComplexElem>(a: T, b: T) -> T {
    ComplexFloat::div(a, b)
}

/// `|re| + |im|`, LAPACK's `cabs1`.
fn cabs1<T: ComplexElem>(z: T) -> R<T> {
    z.re().abs() + z.im().abs()
}

/// `x` as a complex number.
fn real<T: ComplexElem>(x: R<T>) -> T {
    T::new(x, <R<T> as Float>::ZERO)
}

/// The index and `cabs1` of the first largest `cabs1(x)` (`izamax`: a NaN is never
/// larger, so only a first NaN is returned).
fn amax<T: ComplexElem>(x: impl Iterator<Item = T>) -> (usize, R<T>) {
    let mut best = (0, <R<T> as Float>::ZERO);
    for (i, v) in x.enumerate() {
        let v = cabs1(v);
        if i == 0 || v > best.1 {
            best = (i, v);
        }
    }
    best
}

/// `zsytf2` (`herm = false`) or `zhetf2` (`herm = true`), lower, on the column-major
/// `n x n` matrix `a`, in place: the lower triangle becomes the compact factors and the
/// strict upper triangle is zeroed (as PyTorch returns it). `ipiv` gets the pivots;
/// returns `info` (the 1-based index of the first exactly zero 1 x 1 block of `D`, or 0;
/// the factorisation is completed regardless).
pub(crate) fn sytf2_lower<T: ComplexElem>(
    a: &mut [T],
    n: usize,
    ipiv: &mut [i64],
    herm: bool,
) -> i64 {
    let at = |i: usize, j: usize| j * n + i;
    let rzero = <R<T> as Float>::ZERO;
    let rone = <R<T> as Float>::ONE;
    let one = real::<T>(rone);
    let alpha = <R<T> as Element>::from_f64((1.0 + 17f64.sqrt()) / 8.0);
    // the magnitude that ranks a diagonal entry: the Hermitian diagonal is real
    let diag_mag = |z: T| if herm { z.re().abs() } else { cabs1(z) };
    let mut info = 0;
    let mut k = 0;
    while k < n {
        let mut kstep = 1;
        let absakk = diag_mag(a[at(k, k)]);
        let (imax, colmax) = if k + 1 < n {
            let (i, v) = amax(a[at(k + 1, k)..at(n, k)].iter().copied());
            (k + 1 + i, v)
        } else {
            (k, rzero)
        };
        let mut kp = k;
        // Fortran's MAX, as the real kernel (a NaN diagonal beside a zero column is zero)
        let most = if absakk > colmax { absakk } else { colmax };
        if most == rzero {
            // the column is zero: D's block is zero, nothing to eliminate
            if info == 0 {
                info = k as i64 + 1;
            }
            if herm {
                a[at(k, k)] = real(a[at(k, k)].re());
            }
        } else {
            // (written as LAPACK's test, so that a NaN takes its branch)
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
                } else if diag_mag(a[at(imax, imax)]) >= alpha * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                // interchange rows and columns kk and kp of the trailing (lower) matrix;
                // the entries that cross the diagonal are conjugated when Hermitian
                for i in kp + 1..n {
                    a.swap(at(i, kk), at(i, kp));
                }
                for j in kk + 1..kp {
                    if herm {
                        let t = a[at(j, kk)].conj();
                        a[at(j, kk)] = a[at(kp, j)].conj();
                        a[at(kp, j)] = t;
                    } else {
                        a.swap(at(j, kk), at(kp, j));
                    }
                }
                if herm {
                    a[at(kp, kk)] = a[at(kp, kk)].conj();
                    let r1 = a[at(kk, kk)].re();
                    a[at(kk, kk)] = real(a[at(kp, kp)].re());
                    a[at(kp, kp)] = real(r1);
                } else {
                    a.swap(at(kk, kk), at(kp, kp));
                }
                if kstep == 2 {
                    if herm {
                        a[at(k, k)] = real(a[at(k, k)].re());
                    }
                    a.swap(at(k + 1, k), at(kp, k));
                }
            } else if herm {
                a[at(k, k)] = real(a[at(k, k)].re());
                if kstep == 2 {
                    a[at(k + 1, k + 1)] = real(a[at(k + 1, k + 1)].re());
                }
            }
            if kstep == 1 {
                if herm {
                    // A22 −= x xᴴ / d with d real (zher: the diagonal kept real), then
                    // L's column x / d
                    let r1 = rone / a[at(k, k)].re();
                    for j in k + 1..n {
                        let t = a[at(j, k)].conj().scale(-r1);
                        let d = a[at(j, j)].re() + mul(a[at(j, k)], t).re();
                        a[at(j, j)] = real(d);
                        for i in j + 1..n {
                            let v = mul(a[at(i, k)], t);
                            a[at(i, j)] += v;
                        }
                    }
                    for i in k + 1..n {
                        a[at(i, k)] = a[at(i, k)].scale(r1);
                    }
                } else {
                    // A22 −= x xᵀ / d (zsyr), then L's column x / d
                    let r = div(one, a[at(k, k)]);
                    for j in k + 1..n {
                        let t = -mul(r, a[at(j, k)]);
                        for i in j..n {
                            let v = mul(a[at(i, k)], t);
                            a[at(i, j)] += v;
                        }
                    }
                    for i in k + 1..n {
                        a[at(i, k)] = mul(a[at(i, k)], r);
                    }
                }
            } else if k + 2 < n {
                // A22 −= [x y] D⁻¹ [x y]ᵀ (ᴴ when Hermitian), and L's columns
                // [x y] D⁻¹, with D⁻¹ written through d21 as LAPACK writes it
                if herm {
                    let d = a[at(k + 1, k)].abs();
                    let d11 = a[at(k + 1, k + 1)].re() / d;
                    let d22 = a[at(k, k)].re() / d;
                    let tt = rone / (d11 * d22 - rone);
                    let d21 = a[at(k + 1, k)].scale(rone / d);
                    let d = tt / d;
                    for j in k + 2..n {
                        let (xk, xk1) = (a[at(j, k)], a[at(j, k + 1)]);
                        let wk = (xk.scale(d11) - mul(d21, xk1)).scale(d);
                        let wkp1 = (xk1.scale(d22) - mul(d21.conj(), xk)).scale(d);
                        for i in j..n {
                            let v = a[at(i, j)]
                                - mul(a[at(i, k)], wk.conj())
                                - mul(a[at(i, k + 1)], wkp1.conj());
                            a[at(i, j)] = v;
                        }
                        a[at(j, k)] = wk;
                        a[at(j, k + 1)] = wkp1;
                        a[at(j, j)] = real(a[at(j, j)].re());
                    }
                } else {
                    let mut d21 = a[at(k + 1, k)];
                    let d11 = div(a[at(k + 1, k + 1)], d21);
                    let d22 = div(a[at(k, k)], d21);
                    let t = div(one, mul(d11, d22) - one);
                    d21 = div(t, d21);
                    for j in k + 2..n {
                        let wk = mul(d21, mul(d11, a[at(j, k)]) - a[at(j, k + 1)]);
                        let wkp1 = mul(d21, mul(d22, a[at(j, k + 1)]) - a[at(j, k)]);
                        for i in j..n {
                            let v = a[at(i, j)] - mul(a[at(i, k)], wk) - mul(a[at(i, k + 1)], wkp1);
                            a[at(i, j)] = v;
                        }
                        a[at(j, k)] = wk;
                        a[at(j, k + 1)] = wkp1;
                    }
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
            a[at(i, j)] = zero();
        }
    }
    info
}

/// `zsytrs` (`herm = false`) or `zhetrs` (`herm = true`), lower: solves `A X = B` in
/// place for the column-major `n x k` right-hand sides `b`, with `A`'s compact factors
/// `f` (column-major `n x n`) and pivots `ipiv` (checked by the caller).
pub(crate) fn sytrs_lower<T: ComplexElem>(
    f: &[T],
    ipiv: &[i64],
    b: &mut [T],
    n: usize,
    k: usize,
    herm: bool,
) {
    let at = |i: usize, j: usize| j * n + i;
    let one = real::<T>(<R<T> as Float>::ONE);
    // L's entries as the backward substitution reads them: conjugated for Lᴴ
    let lt = |z: T| if herm { z.conj() } else { z };
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
            let dinv = if herm {
                real(<R<T> as Float>::ONE / f[at(j, j)].re())
            } else {
                div(one, f[at(j, j)])
            };
            for c in 0..k {
                let y = b[c * n + j];
                for i in j + 1..n {
                    let v = mul(f[at(i, j)], y);
                    b[c * n + i] -= v;
                }
                b[c * n + j] = mul(y, dinv);
            }
            j += 1;
        } else {
            swap(b, j + 1, (-ipiv[j]) as usize - 1);
            let akm1k = f[at(j + 1, j)];
            // the 2 x 2 block [[a, conj(d)], [d, c]] (Hermitian) or [[a, d], [d, c]]
            let akm1k_up = lt(akm1k);
            let akm1 = div(f[at(j, j)], akm1k_up);
            let ak = div(f[at(j + 1, j + 1)], akm1k);
            let denom = mul(akm1, ak) - one;
            for c in 0..k {
                let (y0, y1) = (b[c * n + j], b[c * n + j + 1]);
                for i in j + 2..n {
                    let v = mul(f[at(i, j)], y0);
                    b[c * n + i] -= v;
                }
                for i in j + 2..n {
                    let v = mul(f[at(i, j + 1)], y1);
                    b[c * n + i] -= v;
                }
                let (bkm1, bk) = (div(y0, akm1k_up), div(y1, akm1k));
                b[c * n + j] = div(mul(ak, bkm1) - bk, denom);
                b[c * n + j + 1] = div(mul(akm1, bk) - bkm1, denom);
            }
            j += 2;
        }
    }
    // Lᵀ X = Y (Lᴴ when Hermitian), then the interchanges undone
    let dot = |b: &[T], c: usize, col: usize, from: usize| {
        (from..n).fold(zero::<T>(), |s, i| s + mul(lt(f[at(i, col)]), b[c * n + i]))
    };
    let mut j = n;
    while j > 0 {
        let c1 = j - 1;
        if ipiv[c1] > 0 {
            for c in 0..k {
                let d = dot(b, c, c1, j);
                b[c * n + c1] -= d;
            }
            swap(b, c1, ipiv[c1] as usize - 1);
            j -= 1;
        } else {
            // the 2 x 2 block at c1 − 1, c1
            for c in 0..k {
                let d1 = dot(b, c, c1, j);
                b[c * n + c1] -= d1;
                let d0 = dot(b, c, c1 - 1, j);
                b[c * n + c1 - 1] -= d0;
            }
            swap(b, c1, (-ipiv[c1]) as usize - 1);
            j -= 2;
        }
    }
}

/// Batched [`sytf2_lower`] of `a: (*, n, n)` (its lower triangle): the compact factors
/// (column-major), the pivots `(*, n)` and `info` per matrix.
pub(crate) fn ldl_factor<T: ComplexElem>(
    a: &[T],
    al: &Layout,
    herm: bool,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    // (a complex multiply-add is about four real ones)
    factor_batch(a, al, zero::<T>(), 4, |m, n, p| sytf2_lower(m, n, p, herm))
}

/// Batched [`sytrs_lower`]: `A X = B` for compact factors `f: (*, n, n)` with contiguous
/// pivots `piv: (*, n)` and `b: (*, n, k)` of the same batch; column-major result.
pub(crate) fn ldl_solve<T: ComplexElem>(
    f: &[T],
    fl: &Layout,
    piv: &[i64],
    b: &[T],
    bl: &Layout,
    herm: bool,
) -> (Vec<T>, Layout) {
    let solve = |f: &[T], p: &[i64], b: &mut [T], n, k| sytrs_lower(f, p, b, n, k, herm);
    solve_batch(f, fl, piv, b, bl, zero::<T>(), 4, solve)
}
