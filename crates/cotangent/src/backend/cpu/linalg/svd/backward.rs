//! The VJP of the SVD fused per matrix ([`svd_backward`], used when the backward pass is
//! not recorded): PyTorch's `svd_backward` formula and its handling of degenerate pairs,
//! each matrix's products in the CPU's widest vector instructions.

use std::sync::atomic::{AtomicUsize, Ordering};

use faer::Par;

use super::super::order::by_order_simd;
use super::super::{colmajor_layout, for_each_matrix, Batch, LinalgElem};
use crate::backend::SvdGradFail;
use crate::layout::Layout;

/// The VJP of a reduced SVD `A = U diag(S) Vh` (`u: (*, m, k)`, `s: (*, k)` contiguous,
/// `vh: (*, k, n)`) from the cotangents (`None` is zero; `gs` contiguous), fused per
/// matrix: the formula and the degenerate-pair handling of the tensor-op VJP
/// (`crate::linalg::svd`), the classification of pairs in f64 as there. Returns `gA`
/// column-major `(*, m, n)` with its layout; a failure of any matrix fails the batch (a
/// gap failure first, as the tensor path reports).
pub(crate) fn svd_backward<T: LinalgElem>(
    u: (&[T], &Layout),
    s: &[T],
    vh: (&[T], &Layout),
    gu: Option<(&[T], &Layout)>,
    gs: Option<&[T]>,
    gvh: Option<(&[T], &Layout)>,
) -> Result<(Vec<T>, Layout), SvdGradFail> {
    let bu = Batch::of(u.1);
    let bv = Batch::of(vh.1);
    let (m, k, n) = (bu.m, bu.n, bv.n);
    let bgu = gu.map(|g| Batch::of(g.1));
    let bgv = gvh.map(|g| Batch::of(g.1));
    let size = m * n;
    let len = bu.len();
    let layout = colmajor_layout(&bu.dims, m, n);
    let mut out = crate::backend::cpu::pool::overwritten(len * size, T::ZERO);
    // 1: gap failure, 2: zero failure (the first matrix of each kind)
    let gap = AtomicUsize::new(usize::MAX);
    let zero = AtomicUsize::new(usize::MAX);
    let r = m.max(n);
    let vector = gu.is_some() || gvh.is_some();
    // scratch: U' (r x k), V' (k x k), gU' (r x k), gV' (k x k), Uᵀ' gU', V'ᵀ gV',
    // inner (k x k), gA' (r x k), one column-major block of U or Vh (m x k / k x n)
    let kk = k * k;
    let scratch = 3 * r * k + 5 * kk + m.max(k) * n.max(k);
    let work = r * k * k * 6;
    let cx = SvdBack {
        u,
        vh,
        gu,
        gvh,
        bu: &bu,
        bv: &bv,
        bgu: &bgu,
        bgv: &bgv,
        s,
        gs,
        dims: (m, k, n),
        vector,
        gap: &gap,
        zero: &zero,
    };
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, _: Par| {
        // every block is written before it is read (utgu, vtgv only when used): no fill
        // per matrix
        if tmp.len() != scratch {
            tmp.clear();
            tmp.resize(scratch, T::ZERO);
        }
        svd_backward_simd(&cx, i, dst, tmp);
    };
    for_each_matrix(&mut out, size, work, false, one);
    if gap.load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Gap);
    }
    if zero.load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Zero);
    }
    Ok((out, layout))
}

/// The inputs of [`svd_backward`] (each array with its batch), the orders `(m, k, n)`,
/// whether a vector has a cotangent, and the first failing matrix of each kind.
struct SvdBack<'a, T> {
    u: (&'a [T], &'a Layout),
    vh: (&'a [T], &'a Layout),
    gu: Option<(&'a [T], &'a Layout)>,
    gvh: Option<(&'a [T], &'a Layout)>,
    bu: &'a Batch,
    bv: &'a Batch,
    bgu: &'a Option<Batch>,
    bgv: &'a Option<Batch>,
    s: &'a [T],
    gs: Option<&'a [T]>,
    dims: (usize, usize, usize),
    vector: bool,
    gap: &'a AtomicUsize,
    zero: &'a AtomicUsize,
}

/// Matrix `i` of [`svd_backward`] into `dst` through [`svd_backward_one`] in the CPU's
/// widest vector instructions (its products are loops over contiguous columns, which the
/// compiler vectorises; `k` a constant where it is common). `tmp` is the scratch.
fn svd_backward_simd<T: LinalgElem>(cx: &SvdBack<'_, T>, i: usize, dst: &mut [T], tmp: &mut [T]) {
    struct Kernel<'a, 'b, T, const K: usize> {
        cx: &'a SvdBack<'a, T>,
        i: usize,
        dst: &'b mut [T],
        tmp: &'b mut [T],
    }
    impl<T: LinalgElem, const K: usize> pulp::WithSimd for Kernel<'_, '_, T, K> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            svd_backward_one::<T, K>(self.cx, self.i, self.dst, self.tmp);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), cx.dims.1;
        2 3 4 8 16 => |K| Kernel::<T, K> { cx, i, dst, tmp },
        _ => Kernel::<T, 0> { cx, i, dst, tmp });
}

/// One matrix of [`svd_backward`] for `k = K` (`K = 0`: any `k`): `gA` column-major into
/// `dst`, or a failure recorded in `cx`.
#[inline(always)]
fn svd_backward_one<T: LinalgElem, const K: usize>(
    cx: &SvdBack<'_, T>,
    i: usize,
    dst: &mut [T],
    tmp: &mut [T],
) {
    let SvdBack { u, vh, gu, gvh, bu, bv, bgu, bgv, s, gs, vector, gap, zero, .. } = *cx;
    let (m, k, n) = cx.dims;
    let k = if K > 0 { K } else { k };
    let (wide, r, size, kk) = (m < n, m.max(n), m * n, k * k);
    let (uu, rest) = tmp.split_at_mut(r * k);
    let (vv, rest) = rest.split_at_mut(kk);
    let (gu_, rest) = rest.split_at_mut(r * k);
    let (gv_, rest) = rest.split_at_mut(kk);
    let (utgu, rest) = rest.split_at_mut(kk);
    let (vtgv, rest) = rest.split_at_mut(kk);
    let (inner, rest) = rest.split_at_mut(kk);
    let (ga, blk) = rest.split_at_mut(r * k);
    let sv = &s[i * k..(i + 1) * k];
    let gsv = gs.map(|g| &g[i * k..(i + 1) * k]);
    // U' = U, V' = V (tall) or U' = V, V' = U (wide), column-major, and their cotangents:
    // each source with whether it is read transposed (V = Vhᵀ, straight off Vh)
    let src_u = (bu, u.0, false);
    let src_v = (bv, vh.0, true);
    let src_gu = bgu.as_ref().zip(gu).map(|(b, g)| (b, g.0, false));
    let src_gv = bgv.as_ref().zip(gvh).map(|(b, g)| (b, g.0, true));
    let (left, right, gleft, gright) =
        if wide { (src_v, src_u, src_gv, src_gu) } else { (src_u, src_v, src_gu, src_gv) };
    let load = |dst: &mut [T], (b, d, t): (&Batch, &[T], bool)| {
        if t {
            b.load_t(d, i, &mut dst[..n * k]);
        } else {
            b.load(d, i, &mut dst[..m * k]);
        }
    };
    load(uu, left);
    load(vv, right);
    if let Some(g) = gleft {
        load(gu_, g);
    }
    if let Some(g) = gright {
        load(gv_, g);
    }
    let (has_gu, has_gv) = (gleft.is_some(), gright.is_some());
    if vector {
        inner.fill(T::ZERO);
        if has_gu {
            atb::<T, K>(utgu, uu, gu_, (r, k), blk);
        }
        if has_gv {
            atb::<T, K>(vtgv, vv, gv_, (k, k), blk);
        }
        if let Err(f) = fill_inner(inner, utgu, vtgv, has_gu, has_gv, sv, gsv, k) {
            let at = if f == SvdGradFail::Gap { gap } else { zero };
            at.fetch_min(i, Ordering::Relaxed);
            return;
        }
        if let Some(g) = gsv {
            for j in 0..k {
                inner[j * k + j] += g[j];
            }
        }
        // gA' = U' inner
        for c in 0..k {
            let col = &mut ga[c * r..(c + 1) * r];
            col.fill(T::ZERO);
            gaxpy::<T, K>(col, uu, &inner[c * k..], 1, false, k);
        }
    } else {
        // a loss through S only: inner = diag(gS), so gA' = U' inner scales U''s
        // columns (one product in all instead of two)
        for c in 0..k {
            let g = gsv.map_or(T::ZERO, |g| g[c]);
            for (y, &uv) in ga[c * r..(c + 1) * r].iter_mut().zip(&uu[c * r..(c + 1) * r]) {
                *y = uv * g;
            }
        }
    }
    if has_gu && r > k {
        // + (I − U'U'ᵀ) gU' S⁻¹ (utgu = U'ᵀ gU')
        let eps = T::EPSILON.to_f64();
        let smax = sv[0].to_f64();
        let zero_tol = (k as f64) * eps * smax;
        let gmax = gu_.iter().fold(0.0f64, |a, x| a.max(x.to_f64().abs()));
        let thr = eps.sqrt() * gmax.max(f64::MIN_POSITIVE);
        for c in 0..k {
            // the column c of the projection, into the last column of gu_ in place
            let pc = &mut gu_[c * r..(c + 1) * r];
            gaxpy::<T, K>(pc, uu, &utgu[c * k..], 1, true, k);
            if sv[c].to_f64() <= zero_tol {
                if pc.iter().any(|x| x.to_f64().abs() > thr) {
                    zero.fetch_min(i, Ordering::Relaxed);
                    return;
                }
                continue;
            }
            let inv = T::ONE / sv[c];
            for (y, &p) in ga[c * r..(c + 1) * r].iter_mut().zip(pc.iter()) {
                *y += p * inv;
            }
        }
    }
    // gA' V'ᵀ (r x k), transposed into gA when wide
    for c in 0..k {
        let col = &mut gu_[c * r..(c + 1) * r];
        col.fill(T::ZERO);
        gaxpy::<T, K>(col, ga, &vv[c..], k, false, k);
    }
    if wide {
        for c in 0..k {
            for rr in 0..r {
                dst[rr * m + c] = gu_[c * r + rr];
            }
        }
    } else {
        dst.copy_from_slice(&gu_[..size]);
    }
}

/// `X = Aᵀ B` (`k x k`; `k = K` when `K > 0`) for column-major `A`, `B` (`rows x k`):
/// column `c` of `X` is the sum over `p` of `B[p, c]` times row `p` of `A`
/// ([`gaxpy`]), each entry summed over `p` in order, the bits of a dot product per entry;
/// `Aᵀ` (row-major `A`) into `at` first.
#[inline(always)]
fn atb<T: LinalgElem, const K: usize>(
    x: &mut [T],
    a: &[T],
    b: &[T],
    (rows, k): (usize, usize),
    at: &mut [T],
) {
    let k = if K > 0 { K } else { k };
    for rr in 0..k {
        for (p, &v) in a[rr * rows..(rr + 1) * rows].iter().enumerate() {
            at[p * k + rr] = v;
        }
    }
    for c in 0..k {
        let xc = &mut x[c * k..(c + 1) * k];
        xc.fill(T::ZERO);
        gaxpy::<T, K>(xc, at, &b[c * rows..], 1, false, rows);
    }
}

/// `dst ← dst ± Σ_p coef[p · stride] · src[p · len .. (p + 1) · len]` for `p` in
/// `0..terms` (`len = dst.len()`), each element summed in order of `p` (`−` when `neg`:
/// `y − a b` and `y + a (−b)` are the same bits). With `len = L` the sums stay in
/// registers (a local array) instead of going through `dst` for each term. Inlined into
/// [`svd_backward_one`], for its vector instructions (a closure there was not).
#[inline(always)]
fn gaxpy<T: LinalgElem, const L: usize>(
    dst: &mut [T],
    src: &[T],
    coef: &[T],
    stride: usize,
    neg: bool,
    terms: usize,
) {
    let len = dst.len();
    let c = |p: usize| if neg { -coef[p * stride] } else { coef[p * stride] };
    if L > 0 && len == L {
        let mut acc = [T::ZERO; L];
        acc.copy_from_slice(dst);
        for (p, s) in src.chunks_exact(L).take(terms).enumerate() {
            let x = c(p);
            for (y, &v) in acc.iter_mut().zip(s) {
                *y += v * x;
            }
        }
        dst.copy_from_slice(&acc);
    } else {
        for (p, s) in src.chunks_exact(len.max(1)).take(terms).enumerate() {
            let x = c(p);
            for (y, &v) in dst.iter_mut().zip(s) {
                *y += v * x;
            }
        }
    }
}

/// The off-diagonal part of the inner matrix of [`svd_backward`] (`k x k`,
/// column-major): `(skU_ij s_j + s_i skV_ij) / (s_j² − s_i²)` for pairs with a gap,
/// `(skU − skV)_ij / (2 (s_i + s_j))` for degenerate pairs with `s > 0` whose loss is
/// invariant, 0 within a zero block; `skU = UᵀgU − (UᵀgU)ᵀ` from `utgu` (likewise `V`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fill_inner<T: LinalgElem>(
    inner: &mut [T],
    utgu: &[T],
    vtgv: &[T],
    has_gu: bool,
    has_gv: bool,
    s: &[T],
    gs: Option<&[T]>,
    k: usize,
) -> Result<(), SvdGradFail> {
    let eps = T::EPSILON.to_f64();
    let tiny = f64::MIN_POSITIVE;
    let smax = s[0].to_f64();
    let gap_tol = 16.0 * (k as f64) * eps * smax * smax;
    // the usual case, every pair with a gap: the first formula alone, in loops with no
    // branch (the same operations as below; the per-entry tests and the thresholds' scans
    // were half the backward's instructions at k = 16)
    let mut gapped = true;
    for j in 0..k {
        let sj = s[j].to_f64();
        for (i, si) in s[..k].iter().enumerate() {
            let si = si.to_f64();
            gapped &= i == j || (sj * sj - si * si).abs() > gap_tol;
        }
    }
    if gapped {
        for j in 0..k {
            let diag = inner[j * k + j];
            let sj = s[j];
            let sj2 = s[j] * s[j];
            for i in 0..k {
                let a = if has_gu { utgu[j * k + i] - utgu[i * k + j] } else { T::ZERO };
                let c = if has_gv { vtgv[j * k + i] - vtgv[i * k + j] } else { T::ZERO };
                // (0 / 0 on the diagonal, put back below)
                inner[j * k + i] = (a * sj + s[i] * c) / (sj2 - s[i] * s[i]);
            }
            inner[j * k + j] = diag;
        }
        return Ok(());
    }
    let zero_tol = (k as f64) * eps * smax;
    let maxabs = |x: &[T], on: bool| {
        if on {
            x.iter().fold(0.0f64, |a, v| a.max(v.to_f64().abs()))
        } else {
            0.0
        }
    };
    let sc = maxabs(utgu, has_gu) + maxabs(vtgv, has_gv);
    let thr = eps.sqrt() * sc.max(tiny);
    let thr_s = eps.sqrt() * gs.map_or(0.0, |g| maxabs(g, true)).max(tiny);
    // entry (i, j) of a column-major k x k block
    let sk = |x: &[T], on: bool, i: usize, j: usize| {
        if on {
            x[j * k + i] - x[i * k + j]
        } else {
            T::ZERO
        }
    };
    for j in 0..k {
        for i in 0..k {
            if i == j {
                continue;
            }
            let (a, c) = (sk(utgu, has_gu, i, j), sk(vtgv, has_gv, i, j));
            let (si, sj) = (s[i].to_f64(), s[j].to_f64());
            let idx = j * k + i;
            if (sj * sj - si * si).abs() > gap_tol {
                let e = s[j] * s[j] - s[i] * s[i];
                inner[idx] = (a * s[j] + s[i] * c) / e;
                continue;
            }
            let (af, cf) = (a.to_f64(), c.to_f64());
            if si <= zero_tol && sj <= zero_tol {
                if af.abs() > thr || cf.abs() > thr {
                    return Err(SvdGradFail::Gap);
                }
                continue;
            }
            let dgs = gs.map_or(0.0, |g| g[i].to_f64() - g[j].to_f64());
            if (af + cf).abs() > thr || dgs.abs() > thr_s {
                return Err(SvdGradFail::Gap);
            }
            inner[idx] = (a - c) / ((s[j] + s[i]) * T::of(2.0));
        }
    }
    Ok(())
}
