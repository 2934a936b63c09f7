//! The VJP of the symmetric eigendecomposition fused per matrix ([`eigh_backward`], the
//! backward pass's fast path when it is not recorded): `gA = V (diag(gw) + F ∘ skew(VᵀgV))
//! Vᵀ`, each matrix's three products with FMAs in the CPU's widest vector instructions
//! ([`backward_simd`]), and the plain reference it is tested against.

use super::super::lanes::LaneBits;
use super::super::order::by_order_simd;
use super::super::{Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::for_each_chunk;
use crate::layout::Layout;

/// The VJP of [`eigh`](fn@super::eigh), fused per matrix (the backward pass's fast path
/// when it is not recorded): `gA = V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ`,
/// `F_ij = 1/(w_j − w_i)`, from the
/// eigenvalues `w: (*, n)`, the eigenvectors `v: (*, n, n)` and the cotangents (`None`
/// is zero; not both), as `crate::linalg::eigh`'s tensor-op VJP computes it, with the
/// same rule at a zero gap (the pair's term is dropped where the projected cotangent is
/// negligible). Returns `gA` (contiguous `(*, n, n)`), or `None` if at some matrix the
/// cotangent is not negligible at a zero gap (the gradient is undefined there).
///
/// Each matrix is done by [`backward_simd`] (allocation-free, the three products with
/// FMAs on the CPU's vector units); the batch is split over rayon in runs of matrices
/// (each matrix's result does not depend on the split).
pub(crate) fn eigh_backward<T: LinalgElem + LaneBits>(
    w: (&[T], &Layout),
    v: (&[T], &Layout),
    gw: Option<(&[T], &Layout)>,
    gv: Option<(&[T], &Layout)>,
) -> Option<(Vec<T>, Layout)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let bv = Batch::of(v.1);
    let n = bv.n;
    let bw = Batch::of_vector(w.1);
    let bgw = gw.map(|g| Batch::of_vector(g.1));
    let bgv = gv.map(|g| Batch::of(g.1));
    let size = n * n;
    let count = bv.len();
    let mut out = crate::backend::cpu::pool::overwritten(count * size, T::ZERO);
    let layout = Layout::contiguous(v.1.shape().clone());
    if size == 0 || count == 0 {
        return Some((out, layout));
    }
    let inputs = BackwardInputs {
        v: (v.0, &bv),
        w: (w.0, &bw),
        gw: gw.zip(bgw.as_ref()).map(|(g, b)| (g.0, b)),
        gv: gv.zip(bgv.as_ref()).map(|(g, b)| (g.0, b)),
    };
    let degenerate = AtomicBool::new(false);
    let run = |first: usize, chunk: &mut [T]| {
        if !backward_simd(&inputs, first, chunk) {
            degenerate.store(true, Ordering::Relaxed);
        }
    };
    let work = 6 * n * n * n;
    if count > 1 && count * work >= 2 * TASK_WORK {
        // runs of a few matrices per task (the scratch is set up once per run)
        let per = (TASK_WORK / work).max(BACKWARD_RUN);
        for_each_chunk(&mut out, size * per, |t, c| run(t * per, c));
    } else {
        run(0, &mut out);
    }
    if degenerate.load(Ordering::Relaxed) {
        return None;
    }
    Some((out, layout))
}

/// The least number of matrices per rayon task in [`eigh_backward`].
const BACKWARD_RUN: usize = 8;

/// The inputs of [`eigh_backward`]: each array with its batch.
struct BackwardInputs<'a, T> {
    v: (&'a [T], &'a Batch),
    w: (&'a [T], &'a Batch),
    gw: Option<(&'a [T], &'a Batch)>,
    gv: Option<(&'a [T], &'a Batch)>,
}

/// The matrices `first..` of [`eigh_backward`] (as many as `out` holds, row-major
/// `n x n` each), through [`backward_simd_n`] in the CPU's widest vector instructions.
/// False if the gradient is undefined at one of them.
fn backward_simd<T: LinalgElem + LaneBits>(
    inputs: &BackwardInputs<'_, T>,
    first: usize,
    out: &mut [T],
) -> bool {
    struct Kernel<'a, 'b, T, const N: usize> {
        inputs: &'a BackwardInputs<'a, T>,
        first: usize,
        out: &'b mut [T],
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = bool;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) -> bool {
            let Kernel { inputs, first, out } = self;
            let n = if N > 0 { N } else { inputs.v.1.n };
            let size = n * n;
            let eps = T::EPSILON.to_f64();
            // scratch: V (where it is not column-major contiguous in place), Vᵀ then Xᵀ,
            // X then V M, the middle matrix M; w and gw
            let mut tmp = vec![T::ZERO; 4 * size + 2 * n];
            let (vbuf, rest) = tmp.split_at_mut(size);
            let (t, rest) = rest.split_at_mut(size);
            let (x, rest) = rest.split_at_mut(size);
            let (m, rest) = rest.split_at_mut(size);
            let (wi, gwi) = rest.split_at_mut(n);
            let (vd, bv) = inputs.v;
            let in_place = bv.rs == 1 && bv.cs == n;
            let mut ok = true;
            for (j, dst) in out.chunks_exact_mut(size).enumerate() {
                let i = first + j;
                let vm: &[T] = if in_place {
                    let off = bv.offset(i);
                    &vd[off..off + size]
                } else {
                    bv.load(vd, i, vbuf);
                    vbuf
                };
                inputs.w.1.load(inputs.w.0, i, wi);
                match inputs.gw {
                    Some((g, b)) => b.load(g, i, gwi),
                    None => gwi.fill(T::ZERO),
                }
                let gv = inputs.gv.map(|(g, b)| {
                    let off = b.offset(i);
                    if b.cs == 1 && b.rs >= n {
                        // rows contiguous: read in place
                        GvRef::Rows(&g[off..], b.rs)
                    } else if b.rs == 1 && b.cs >= n {
                        GvRef::Columns(&g[off..], b.cs)
                    } else {
                        // column-major into dst (scratch until the last product)
                        b.load(g, i, dst);
                        GvRef::Loaded
                    }
                });
                ok &= backward_simd_n::<T, N>(n, vm, wi, gwi, gv, t, x, m, dst, eps);
            }
            ok
        }
    }
    let n = inputs.v.1.n;
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        2 3 4 8 16 => |N| Kernel::<T, N> { inputs, first, out },
        _ => Kernel::<T, 0> { inputs, first, out })
}

/// Where [`backward_simd_n`] reads `gV` from: rows or columns in place (the slice from
/// the matrix's start, and the stride between rows or columns), or column-major in `dst`.
#[derive(Clone, Copy)]
enum GvRef<'a, T> {
    Rows(&'a [T], usize),
    Columns(&'a [T], usize),
    Loaded,
}

/// One matrix of [`backward_simd`] for the order `N` (`N = 0`: `n`): `vm` is `V`
/// (column-major), `wi` and `gwi` the eigenvalues and their cotangent, `gv` the
/// eigenvectors' cotangent if any (in place, or column-major in `dst`); `t`, `x`, `m`
/// scratch; `gA` (row-major) into `dst`. False if the gradient is undefined (a cotangent
/// not negligible at a zero gap). The operations of the tensor-op VJP, each product
/// summed over `k` in order with FMAs (whichever way `gV` is read: the same bits), each
/// inner loop running down contiguous rows or columns (vectorised).
// bitwise `&` on bools on purpose (no branches in the vectorised loop)
#[allow(clippy::too_many_arguments, clippy::needless_range_loop, clippy::needless_bitwise_bool)]
#[inline(always)]
fn backward_simd_n<T: LinalgElem + LaneBits, const N: usize>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<GvRef<'_, T>>,
    t: &mut [T],
    x: &mut [T],
    m: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    let n = if N == 0 { n } else { N };
    let size = n * n;
    let (vm, t, x, m, dst) =
        (&vm[..size], &mut t[..size], &mut x[..size], &mut m[..size], &mut dst[..size]);
    let (wi, gwi) = (&wi[..n], &gwi[..n]);
    // the middle matrix M (column-major): diag(gw) + F ∘ skew(VᵀgV)
    if let Some(gv) = gv {
        // X = VᵀgV, X_ij = Σ_k V_ki gV_kj (k in order), into x (column-major), and its
        // transpose into t
        if let GvRef::Rows(g, rs) = gv {
            // row i of X at once: Σ_k V_ki gV_k:, into t (column-major Xᵀ)
            products(n, t, |i, k| vm[i * n + k], |k| &g[k * rs..k * rs + n]);
            for j in 0..n {
                for i in 0..n {
                    x[j * n + i] = t[i * n + j];
                }
            }
        } else {
            // column j of X at once: Σ_k V_k: gV_kj, with the rows of V (Vᵀ in t)
            for k in 0..n {
                for i in 0..n {
                    t[k * n + i] = vm[i * n + k];
                }
            }
            let vt = &*t;
            match gv {
                GvRef::Columns(g, cs) => {
                    products(n, x, |j, k| g[j * cs + k], |k| &vt[k * n..(k + 1) * n]);
                }
                _ => products(n, x, |j, k| dst[j * n + k], |k| &vt[k * n..(k + 1) * n]),
            }
            for j in 0..n {
                for i in 0..n {
                    t[j * n + i] = x[i * n + j];
                }
            }
        }
        // skew_ij = (X_ij − X_ji) / 2 into m, and its largest magnitude (NaNs skipped, as
        // `f64::max` skips them)
        let half = T::of(0.5);
        let mut smax = [0.0f64; 4];
        for ((mj, xj), tj) in m.chunks_exact_mut(n).zip(x.chunks_exact(n)).zip(t.chunks_exact(n)) {
            for i in 0..n {
                let sk = (xj[i] - tj[i]) * half;
                mj[i] = sk;
                let a = sk.to_f64().abs();
                let s = &mut smax[i % 4];
                *s = if a > *s { a } else { *s };
            }
        }
        let smax = smax.iter().fold(0.0f64, |mx, &s| mx.max(s));
        let wmax = wi.iter().fold(0.0f64, |mx, w| mx.max(w.to_f64().abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let skew_tol = eps.sqrt() * smax;
        // F ∘ skew, the pairs with a zero gap dropped (the diagonal too); a zero gap
        // with a skew that is not negligible is an undefined gradient
        let mut bad = false;
        for j in 0..n {
            let wj = wi[j];
            let mj = &mut m[j * n..(j + 1) * n];
            for i in 0..n {
                let sk = mj[i];
                // NaN gaps are not degenerate: the NaN goes through
                let degenerate = i == j || (wj.to_f64() - wi[i].to_f64()).abs() <= gap_tol;
                bad |= degenerate & (i != j) & (sk.to_f64().abs() > skew_tol);
                let q = sk / (wj - wi[i]);
                mj[i] = if degenerate { T::ZERO } else { q };
            }
        }
        if bad && smax > 0.0 {
            return false;
        }
    } else {
        m.fill(T::ZERO);
    }
    for i in 0..n {
        m[i * n + i] += gwi[i];
    }
    // X = V M (column-major): column j is Σ_k V_:k M_kj, k in order
    products(n, x, |j, k| m[j * n + k], |k| &vm[k * n..(k + 1) * n]);
    // gA = X Vᵀ, row-major: row r is Σ_k X_rk V_:k, k in order
    products(n, dst, |r, k| x[k * n + r], |k| &vm[k * n..(k + 1) * n]);
    true
}

/// Row `i` of `out` (`n x n`, rows contiguous) is `Σ_k c(i, k) r(k)` over `k = 0..n` in
/// order, one FMA per term and entry (`r(k)` at least `n` long), summed in registers
/// (local arrays, in blocks of 32 entries) and stored once; two rows at a time, sharing
/// the loads of `r(k)` (twice the independent FMA chains of one row: the FMAs' latency,
/// not their throughput, bounds one row).
#[inline(always)]
fn products<'a, T: LinalgElem + LaneBits>(
    n: usize,
    out: &mut [T],
    c: impl Fn(usize, usize) -> T,
    r: impl Fn(usize) -> &'a [T],
) {
    const B: usize = 32;
    let mut i = 0;
    while i + 1 < n {
        let mut j0 = 0;
        while j0 < n {
            let len = (n - j0).min(B);
            let (mut acc0, mut acc1) = ([T::ZERO; B], [T::ZERO; B]);
            for k in 0..n {
                let (c0, c1, rk) = (c(i, k), c(i + 1, k), &r(k)[j0..j0 + len]);
                for j in 0..len {
                    acc0[j] = c0.mul_add(rk[j], acc0[j]);
                    acc1[j] = c1.mul_add(rk[j], acc1[j]);
                }
            }
            out[i * n + j0..i * n + j0 + len].copy_from_slice(&acc0[..len]);
            out[(i + 1) * n + j0..(i + 1) * n + j0 + len].copy_from_slice(&acc1[..len]);
            j0 += B;
        }
        i += 2;
    }
    if i < n {
        let mut j0 = 0;
        while j0 < n {
            let len = (n - j0).min(B);
            let mut acc = [T::ZERO; B];
            for k in 0..n {
                let (c0, rk) = (c(i, k), &r(k)[j0..j0 + len]);
                for j in 0..len {
                    acc[j] = c0.mul_add(rk[j], acc[j]);
                }
            }
            out[i * n + j0..i * n + j0 + len].copy_from_slice(&acc[..len]);
            j0 += B;
        }
    }
}

/// The per-matrix VJP of [`eigh_backward`] before [`backward_simd`] (plain products, no
/// FMA): the reference the vectorised one is tested against. `vm` is `V` (column-major),
/// `wi` and `gwi` the eigenvalues and their cotangent, `gv` the eigenvectors' cotangent
/// (matrix `i` of a batch), `x` and `y` scratch; `gA` (row-major) into `dst`. False if the
/// gradient is undefined (a cotangent not negligible at a zero gap).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn backward_one<T: LinalgElem>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<(&[T], &Batch, usize)>,
    x: &mut [T],
    y: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    super::super::order::by_order!(n;
        1 2 3 4 8 16 => |N| backward_n::<T, N>(n, vm, wi, gwi, gv, x, y, dst, eps),
        _ => backward_n::<T, 0>(n, vm, wi, gwi, gv, x, y, dst, eps))
}

/// [`backward_one`] for the order `N` (`N = 0`: `n`).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn backward_n<T: LinalgElem, const N: usize>(
    n: usize,
    vm: &[T],
    wi: &[T],
    gwi: &[T],
    gv: Option<(&[T], &Batch, usize)>,
    x: &mut [T],
    m: &mut [T],
    dst: &mut [T],
    eps: f64,
) -> bool {
    let n = if N == 0 { n } else { N };
    let size = n * n;
    let (vm, x, m, dst) = (&vm[..size], &mut x[..size], &mut m[..size], &mut dst[..size]);
    // the middle matrix M (column-major): diag(gw) + F ∘ skew(VᵀgV)
    m.fill(T::ZERO);
    if let Some((g, b, i)) = gv {
        // gV column-major into dst (scratch), then X = VᵀgV: X_ij = v_i · gv_j, summed
        // over k in order as a dot product would, but for all i at once (the rows of V
        // in m, the transpose, for now): vectorises
        b.load(g, i, dst);
        for k in 0..n {
            for i in 0..n {
                m[k * n + i] = vm[i * n + k];
            }
        }
        for j in 0..n {
            let gj = &dst[j * n..(j + 1) * n];
            let xj = &mut x[j * n..(j + 1) * n];
            xj.fill(T::ZERO);
            for k in 0..n {
                let (gkj, vk) = (gj[k], &m[k * n..(k + 1) * n]);
                for i in 0..n {
                    xj[i] += vk[i] * gkj;
                }
            }
        }
        let half = T::of(0.5);
        let mut smax = 0.0f64;
        for j in 0..n {
            for i in 0..n {
                // skew_ij = (X_ij − X_ji) / 2, kept in m for now
                let sk = (x[j * n + i] - x[i * n + j]) * half;
                m[j * n + i] = sk;
                smax = smax.max(sk.to_f64().abs());
            }
        }
        let wmax = wi.iter().fold(0.0f64, |mx, w| mx.max(w.to_f64().abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let skew_tol = eps.sqrt() * smax;
        for j in 0..n {
            for i in 0..n {
                let sk = m[j * n + i];
                // NaN gaps are not degenerate: the NaN goes through
                let degenerate = i == j || (wi[j].to_f64() - wi[i].to_f64()).abs() <= gap_tol;
                m[j * n + i] = if degenerate {
                    if i != j && sk.to_f64().abs() > skew_tol && smax > 0.0 {
                        return false;
                    }
                    T::ZERO
                } else {
                    sk / (wi[j] - wi[i])
                };
            }
        }
    }
    for i in 0..n {
        m[i * n + i] += gwi[i];
    }
    // X = V M (column-major)
    for j in 0..n {
        let xj = &mut x[j * n..(j + 1) * n];
        xj.fill(T::ZERO);
        for k in 0..n {
            let mkj = m[j * n + k];
            let vk = &vm[k * n..(k + 1) * n];
            for r in 0..n {
                xj[r] += vk[r] * mkj;
            }
        }
    }
    // gA = X Vᵀ, row-major: gA_rc = Σ_k X_rk V_ck; column by column of Vᵀ
    dst.fill(T::ZERO);
    for k in 0..n {
        let xk = &x[k * n..(k + 1) * n];
        let vk = &vm[k * n..(k + 1) * n];
        for r in 0..n {
            let xr = xk[r];
            let row = &mut dst[r * n..(r + 1) * n];
            for c in 0..n {
                row[c] += xr * vk[c];
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rnd(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// `gA` of each matrix by the reference [`backward_one`] (`None` where the gradient is
    /// undefined).
    #[allow(clippy::type_complexity)]
    fn reference<T: LinalgElem>(
        w: (&[T], &Layout),
        v: (&[T], &Layout),
        gw: Option<(&[T], &Layout)>,
        gv: Option<(&[T], &Layout)>,
    ) -> Vec<Option<Vec<T>>> {
        let bv = Batch::of(v.1);
        let n = bv.n;
        let (bw, bgw, bgv) =
            (Batch::of_vector(w.1), gw.map(|g| Batch::of_vector(g.1)), gv.map(|g| Batch::of(g.1)));
        (0..bv.len())
            .map(|i| {
                let mut vm = vec![T::ZERO; n * n];
                let (mut x, mut y, mut dst) = (vm.clone(), vm.clone(), vm.clone());
                let (mut wi, mut gwi) = (vec![T::ZERO; n], vec![T::ZERO; n]);
                bv.load(v.0, i, &mut vm);
                bw.load(w.0, i, &mut wi);
                if let (Some(g), Some(b)) = (gw, &bgw) {
                    b.load(g.0, i, &mut gwi);
                }
                let g = gv.zip(bgv.as_ref()).map(|(g, b)| (g.0, b, i));
                let eps = T::EPSILON.to_f64();
                backward_one(n, &vm, &wi, &gwi, g, &mut x, &mut y, &mut dst, eps).then_some(dst)
            })
            .collect()
    }

    /// A batch `(count, rows, cols)` of random entries stored in `order` ("row", "col",
    /// "gap": rows with a gap of 2 entries, "bcast": one matrix for all).
    fn mats(count: usize, n: usize, order: &str, seed: u64) -> (Vec<f64>, Layout) {
        let mut s = seed;
        let (len, strides) = match order {
            "row" => (count * n * n, vec![n * n, n, 1]),
            "col" => (count * n * n, vec![n * n, 1, n]),
            "gap" => (count * n * (n + 2) + 5, vec![n * (n + 2), n + 2, 1]),
            _ => (n * n, vec![0, n, 1]),
        };
        let data = (0..len).map(|_| rnd(&mut s)).collect();
        (data, Layout::new(vec![count, n, n].into(), strides, 0))
    }

    fn compare<T: LinalgElem + LaneBits>(
        count: usize,
        n: usize,
        vorder: &str,
        gorder: &str,
        cots: (bool, bool),
        special: u8,
        seed: u64,
    ) {
        let of = |x: Vec<f64>| x.into_iter().map(T::of).collect::<Vec<T>>();
        let (v, vl) = mats(count, n, vorder, seed);
        let (gv, gvl) = mats(count, n, gorder, seed + 1);
        let mut s = seed + 2;
        // eigenvalues ascending; `special` 1: a NaN in gV and in w of some matrices, 2: a
        // repeated pair in some
        let mut w = vec![0.0; count * n];
        for (b, wb) in w.chunks_exact_mut(n).enumerate() {
            let mut acc = rnd(&mut s);
            for x in wb.iter_mut() {
                acc += 0.1 + rnd(&mut s).abs();
                *x = acc;
            }
            if special == 2 && n > 2 && b % 5 == 3 {
                wb[2] = wb[1];
            }
        }
        let gw: Vec<f64> = (0..count * n).map(|_| rnd(&mut s)).collect();
        let (v, mut gv, mut w, gw) = (of(v), of(gv), of(w), of(gw));
        if special == 1 {
            if count > 4 && n > 1 {
                gv[gvl.offset() + 4 * gvl.strides()[0] + 1] = T::NAN;
            }
            if count > 6 && gorder != "bcast" {
                w[6 * n] = T::NAN;
            }
        }
        let wl = Layout::contiguous(vec![count, n].into());
        let gwl = Layout::new(vec![count, n].into(), vec![n, 1], 0);
        let w_ = (&w[..], &wl);
        let v_ = (&v[..], &vl);
        let gw_ = cots.0.then_some((&gw[..], &gwl));
        let gv_ = cots.1.then_some((&gv[..], &gvl));
        let what = format!("n {n} count {count} V {vorder} gV {gorder} {cots:?} {special}");
        let want = reference(w_, v_, gw_, gv_);
        let got = eigh_backward(w_, v_, gw_, gv_);
        if want.iter().any(Option::is_none) {
            assert!(got.is_none(), "{what}: expected the undefined gradient");
            assert!(special == 2 && cots.1, "{what}");
            return;
        }
        assert!(special != 2 || !cots.1 || count < 4 || n < 3, "{what}: expected undefined");
        let (got, l) = got.expect(&what);
        assert_eq!(l.dims(), vl.dims(), "{what}");
        let tol = if T::EPSILON.to_f64() > 1e-10 { 1e-4 } else { 1e-12 };
        let mut nans = 0;
        for (i, (want, got)) in want.iter().zip(got.chunks_exact(n * n)).enumerate() {
            let want = want.as_ref().unwrap();
            let scale = want.iter().fold(1.0f64, |m, x| m.max(x.to_f64().abs()));
            for (a, b) in want.iter().zip(got) {
                let (a, b) = (a.to_f64(), b.to_f64());
                assert_eq!(a.is_nan(), b.is_nan(), "{what} matrix {i}: {a} vs {b}");
                nans += usize::from(a.is_nan());
                assert!(
                    a.is_nan() || (a - b).abs() <= tol * scale,
                    "{what} matrix {i}: {a} vs {b}"
                );
            }
        }
        // the NaNs reach the gradient of their matrices only
        if special == 1 && cots.1 && count > 4 && n > 1 {
            assert!(nans > 0 && (gorder == "bcast" || nans < count * n * n), "{what}");
        }
    }

    #[test]
    fn backward_simd_matches_the_reference() {
        // every dispatched order and some others, batches around the task run, V and gV
        // in every layout (rows, columns in place; gapped rows and broadcast loaded),
        // either cotangent alone or both, f64 and f32, repeated eigenvalues (an undefined
        // gradient where gV is used), NaN in gV and in w among regular matrices
        for n in [1, 2, 3, 4, 5, 8, 11, 16, 17] {
            for count in [1, 3, 9, 21] {
                for (k, vorder) in ["row", "col", "gap"].into_iter().enumerate() {
                    for gorder in ["row", "col", "gap", "bcast"] {
                        for cots in [(true, true), (true, false), (false, true)] {
                            for special in [0, 1, 2] {
                                let seed = (n * 1000 + count * 10 + k) as u64;
                                compare::<f64>(count, n, vorder, gorder, cots, special, seed);
                                if count == 9 {
                                    compare::<f32>(count, n, vorder, gorder, cots, special, seed);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn backward_simd_is_thread_independent() {
        let (n, count) = (16, 37);
        let (v, vl) = mats(count, n, "col", 7);
        let (gv, gvl) = mats(count, n, "row", 8);
        let w: Vec<f64> = (0..count * n).map(|i| (i % n) as f64 + 0.01 * (i / n) as f64).collect();
        let wl = Layout::contiguous(vec![count, n].into());
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                eigh_backward((&w[..], &wl), (&v[..], &vl), None, Some((&gv[..], &gvl))).unwrap().0
            })
        };
        let one: Vec<u64> = run(1).iter().map(|x| x.to_bits()).collect();
        let three: Vec<u64> = run(3).iter().map(|x| x.to_bits()).collect();
        assert_eq!(one, three);
    }
}
