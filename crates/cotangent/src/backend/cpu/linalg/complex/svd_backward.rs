//! The VJP of the complex SVD fused per matrix ([`svd_backward`], the backward pass's
//! fast path at small orders when it is not recorded): the formula, the classification of
//! singular pairs, the phase test and the errors of `crate::linalg::svd`'s tensor-op VJP,
//! each matrix in scratch with plain loops (the orders it serves are small).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{zero, ComplexElem, R};
use crate::backend::cpu::linalg::{for_each_matrix_with, Batch};
use crate::backend::SvdGradFail;
use crate::complex::ComplexFloat as C;
use crate::dtype::{Element, Float};
use crate::layout::Layout;

/// The VJP of a reduced complex SVD `A = U diag(S) Vh` (`u: (*, m, k)`, `s: (*, k)` real
/// and contiguous, `vh: (*, k, n)`) from the cotangents (`None` is zero; `gs` real and
/// contiguous): `gA`, contiguous `(*, m, n)`. A failure of any matrix fails the batch, in
/// the tensor path's order: a phase-dependent loss first, then a zero gap, then a zero
/// singular value.
pub(crate) fn svd_backward<T: ComplexElem>(
    u: (&[T], &Layout),
    s: &[R<T>],
    vh: (&[T], &Layout),
    gu: Option<(&[T], &Layout)>,
    gs: Option<&[R<T>]>,
    gvh: Option<(&[T], &Layout)>,
) -> Result<(Vec<T>, Layout), SvdGradFail> {
    let bu = Batch::of(u.1);
    let bv = Batch::of(vh.1);
    let (m, k, n) = (bu.m, bu.n, bv.n);
    let bgu = gu.map(|g| (g.0, Batch::of(g.1)));
    let bgv = gvh.map(|g| (g.0, Batch::of(g.1)));
    let size = m * n;
    let count = bu.len();
    let mut dims = u.1.dims().to_vec();
    let last = dims.len() - 1;
    dims[last] = n;
    let layout = Layout::contiguous(crate::shape::Shape::from(dims));
    let mut out = crate::backend::cpu::pool::overwritten(count * size, zero::<T>());
    if size == 0 || count == 0 {
        return Ok((out, layout));
    }
    // the first failing matrix of each kind
    let fails =
        [AtomicUsize::new(usize::MAX), AtomicUsize::new(usize::MAX), AtomicUsize::new(usize::MAX)];
    let r = m.max(n);
    let (kk, rk) = (k * k, r * k);
    // U, gU (m x k), Vh, gVh (k x n) as loaded; U', gU' (r x k), V', gV' (k x k);
    // U'ᴴgU', V'ᴴgV', inner (k x k); gA' (r x k), the product gA' V'ᴴ (r x k)
    let make = || vec![zero::<T>(); 4 * m.max(1) * n.max(1) + 4 * rk + 5 * kk];
    for_each_matrix_with(&mut out, size, 8 * r * k * k, false, make, |i, dst, tmp, _| {
        let (lu, rest) = tmp.split_at_mut(m * k);
        let (lgu, rest) = rest.split_at_mut(m * k);
        let (lvh, rest) = rest.split_at_mut(k * n);
        let (lgv, rest) = rest.split_at_mut(k * n);
        let (up, rest) = rest.split_at_mut(rk);
        let (gup, rest) = rest.split_at_mut(rk);
        let (vp, rest) = rest.split_at_mut(kk);
        let (gvp, rest) = rest.split_at_mut(kk);
        let (utgu, rest) = rest.split_at_mut(kk);
        let (vtgv, rest) = rest.split_at_mut(kk);
        let (inner, rest) = rest.split_at_mut(kk);
        let (ga, rest) = rest.split_at_mut(rk);
        let prod = &mut rest[..rk];
        bu.load(u.0, i, lu);
        bv.load(vh.0, i, lvh);
        if let Some((d, b)) = &bgu {
            b.load(d, i, lgu);
        }
        if let Some((d, b)) = &bgv {
            b.load(d, i, lgv);
        }
        let wide = m < n;
        // Vhᴴ (n x k) from the column-major k x n `x`
        let adj = |x: &[T], to: &mut [T]| {
            for c in 0..k {
                for rr in 0..n {
                    to[rr + c * n] = x[c + rr * k].conj();
                }
            }
        };
        // tall: U' = U, V' = Vhᴴ; wide (the SVD of Aᴴ = V S Uᴴ): U' = Vhᴴ, V' = U
        let (has_gu, has_gv) = if wide {
            adj(lvh, up);
            vp.copy_from_slice(&lu[..kk]);
            if bgv.is_some() {
                adj(lgv, gup);
            }
            if bgu.is_some() {
                gvp.copy_from_slice(&lgu[..kk]);
            }
            (bgv.is_some(), bgu.is_some())
        } else {
            up.copy_from_slice(lu);
            adj(lvh, vp);
            if bgu.is_some() {
                gup.copy_from_slice(lgu);
            }
            if bgv.is_some() {
                adj(lgv, gvp);
            }
            (bgu.is_some(), bgv.is_some())
        };
        let sv = &s[i * k..(i + 1) * k];
        let gsv = gs.map(|g| &g[i * k..(i + 1) * k]);
        if has_gu {
            adj_mul(utgu, up, gup, r, k);
        }
        if has_gv {
            adj_mul(vtgv, vp, gvp, k, k);
        }
        let cot = Cotangents { utgu, vtgv, has_gu, has_gv, gs: gsv };
        if let Err(f) = fill_inner(inner, &cot, sv, k) {
            let at = match f {
                Fail::Phase => 0,
                Fail::Gap => 1,
            };
            fails[at].fetch_min(i, Ordering::Relaxed);
            return;
        }
        // gA' = U' inner
        for c in 0..k {
            for rr in 0..r {
                let mut acc = zero::<T>();
                for p in 0..k {
                    acc += C::mul(up[rr + p * r], inner[p + c * k]);
                }
                ga[rr + c * r] = acc;
            }
        }
        if has_gu && r > k && !add_projection(ga, up, gup, utgu, sv, r, k) {
            fails[2].fetch_min(i, Ordering::Relaxed);
            return;
        }
        // gA' V'ᴴ (r x k)
        for c in 0..k {
            for rr in 0..r {
                let mut acc = zero::<T>();
                for p in 0..k {
                    acc += C::mul(ga[rr + p * r], vp[c + p * k].conj());
                }
                prod[rr + c * r] = acc;
            }
        }
        // row-major gA: gA' (tall, m x n) or its adjoint (wide)
        for rr in 0..m {
            for c in 0..n {
                dst[rr * n + c] = if wide { prod[c + rr * r].conj() } else { prod[rr + c * r] };
            }
        }
    });
    if fails[0].load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Phase);
    }
    if fails[1].load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Gap);
    }
    if fails[2].load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Zero);
    }
    Ok((out, layout))
}

/// `X = Aᴴ B` (`k x k`) for column-major `A`, `B` (`rows x k`).
fn adj_mul<T: ComplexElem>(x: &mut [T], a: &[T], b: &[T], rows: usize, k: usize) {
    for c in 0..k {
        for rr in 0..k {
            let mut acc = zero::<T>();
            for p in 0..rows {
                acc += C::mul(a[p + rr * rows].conj(), b[p + c * rows]);
            }
            x[rr + c * k] = acc;
        }
    }
}

/// Why one matrix's inner matrix has no value.
enum Fail {
    Phase,
    Gap,
}

/// The products of one matrix's cotangents with its factors (column-major `k x k`, valid
/// where the flag says so) and its `gS`.
struct Cotangents<'a, T: ComplexElem> {
    utgu: &'a [T],
    vtgv: &'a [T],
    has_gu: bool,
    has_gv: bool,
    gs: Option<&'a [R<T>]>,
}

/// The inner matrix of the VJP (`gA' = U' inner V'ᴴ` before the projection term), `k x k`
/// column-major: off the diagonal `(skU_ij s_j + s_i skV_ij) / (s_j² − s_i²)` for pairs
/// with a gap, `(skU − skV)_ij / (2 (s_i + s_j))` for degenerate pairs with `s > 0` whose
/// loss is invariant, 0 within a zero block; on it `gS_j + i Im(skU − skV)_jj / (4 s_j)`
/// (no phase term where `s_j` is zero); `skU = U'ᴴgU' − (U'ᴴgU')ᴴ`, likewise `V`. The
/// tolerances are the tensor path's.
fn fill_inner<T: ComplexElem>(
    inner: &mut [T],
    cot: &Cotangents<'_, T>,
    s: &[R<T>],
    k: usize,
) -> Result<(), Fail> {
    let Cotangents { utgu, vtgv, has_gu, has_gv, gs } = *cot;
    let eps = <R<T> as Float>::EPSILON.to_f64();
    let tiny = f64::MIN_POSITIVE;
    let maxabs = |x: &[T], on: bool| {
        if on {
            x.iter().fold(0.0f64, |a, v| a.max(v.abs().to_f64()))
        } else {
            0.0
        }
    };
    let (su, sv) = (maxabs(utgu, has_gu), maxabs(vtgv, has_gv));
    // the phase test: Im((U'ᴴgU')_jj + (V'ᴴgV')_jj) within √ε of the scale
    let im_diag = |x: &[T], on: bool, j: usize| if on { x[j + j * k].im().to_f64() } else { 0.0 };
    let phase_tol = eps.sqrt() * (su + sv);
    if (0..k).any(|j| (im_diag(utgu, has_gu, j) + im_diag(vtgv, has_gv, j)).abs() > phase_tol) {
        return Err(Fail::Phase);
    }
    let smax = s[0].to_f64();
    let gap_tol = 16.0 * (k as f64) * eps * smax * smax;
    let zero_tol = (k as f64) * eps * smax;
    let thr = eps.sqrt() * (su + sv).max(tiny);
    let thr_s = eps.sqrt()
        * gs.map_or(0.0, |g| g.iter().fold(0.0f64, |a, v| a.max(v.to_f64().abs()))).max(tiny);
    // entry (i, j) of a skew-Hermitian part
    let sk = |x: &[T], on: bool, i: usize, j: usize| {
        if on {
            x[i + j * k] - x[j + i * k].conj()
        } else {
            zero::<T>()
        }
    };
    for j in 0..k {
        for i in 0..k {
            let (a, c) = (sk(utgu, has_gu, i, j), sk(vtgv, has_gv, i, j));
            let idx = i + j * k;
            if i == j {
                let g = gs.map_or(<R<T> as Float>::ZERO, |g| g[j]);
                let im = if s[j].to_f64() > zero_tol {
                    (a - c).im() / (s[j] * <R<T> as Float>::of(4.0))
                } else {
                    <R<T> as Float>::ZERO
                };
                inner[idx] = T::new(g, im);
                continue;
            }
            let (si, sj) = (s[i].to_f64(), s[j].to_f64());
            if (sj * sj - si * si).abs() > gap_tol {
                let e = s[j] * s[j] - s[i] * s[i];
                inner[idx] = (a.scale(s[j]) + c.scale(s[i])).scale(<R<T> as Float>::ONE / e);
                continue;
            }
            let (af, cf) = (a.abs().to_f64(), c.abs().to_f64());
            if si <= zero_tol && sj <= zero_tol {
                // U and V rotate independently within a zero block
                if af > thr || cf > thr {
                    return Err(Fail::Gap);
                }
                inner[idx] = zero();
                continue;
            }
            let sum = if has_gu && has_gv { (a + c).abs().to_f64() } else { af + cf };
            let dgs = gs.map_or(0.0, |g| g[i].to_f64() - g[j].to_f64());
            if sum > thr || dgs.abs() > thr_s {
                return Err(Fail::Gap);
            }
            let den = (s[j] + s[i]) * <R<T> as Float>::of(2.0);
            inner[idx] = (a - c).scale(<R<T> as Float>::ONE / den);
        }
    }
    Ok(())
}

/// `gA' += (I − U'U'ᴴ) gU' S⁻¹` (`utgu = U'ᴴ gU'`), `gU'` overwritten by the projection;
/// false where a zero singular value meets a projected column beyond `√ε max|gU'|`.
fn add_projection<T: ComplexElem>(
    ga: &mut [T],
    up: &[T],
    gup: &mut [T],
    utgu: &[T],
    s: &[R<T>],
    r: usize,
    k: usize,
) -> bool {
    let eps = <R<T> as Float>::EPSILON.to_f64();
    let zero_tol = (k as f64) * eps * s[0].to_f64();
    let gmax = gup.iter().fold(0.0f64, |a, x| a.max(x.abs().to_f64()));
    let thr = eps.sqrt() * gmax.max(f64::MIN_POSITIVE);
    for c in 0..k {
        let pc = &mut gup[c * r..(c + 1) * r];
        for (rr, y) in pc.iter_mut().enumerate() {
            let mut acc = *y;
            for p in 0..k {
                acc += -C::mul(up[rr + p * r], utgu[p + c * k]);
            }
            *y = acc;
        }
        if s[c].to_f64() <= zero_tol {
            if pc.iter().any(|x| x.abs().to_f64() > thr) {
                return false;
            }
            continue;
        }
        let inv = <R<T> as Float>::ONE / s[c];
        for (y, &p) in ga[c * r..(c + 1) * r].iter_mut().zip(pc.iter()) {
            *y += p.scale(inv);
        }
    }
    true
}
