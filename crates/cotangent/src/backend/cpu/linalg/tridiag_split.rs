//! Householder tridiagonalisation of one symmetric matrix, `A = Q T Qᵀ`, blocked as
//! LAPACK's `dsytrd` (lower triangle): panels of [`NB`] columns reduced with `dlatrd`'s
//! deferred updates (each column's reflector from the panel's earlier ones, `W`), then
//! one update `A₂₂ −= V Wᵀ + W Vᵀ` of the trailing matrix per panel. Half the work is
//! the symmetric matrix-vector product `A₂₂ v` of each column; it and the trailing
//! updates run in [`PARTS`] column ranges of equal cost (the lower triangle's area), one
//! task each over the threads.
//!
//! Why not faer's `tridiag_in_place`: it is unblocked (a rank-two update of the whole
//! trailing matrix fused with the next column's product: each entry read and written
//! once per column) and its AVX2 kernel barely scaled on two threads (a two-core Intel
//! AVX-512 host, where MKL's `dsytrd` was faster still). Here the product only reads each
//! entry, the rank-`2 NB` updates are faer's sequential matrix products, and the column
//! ranges stay with the same tasks from one column to the next, so that each thread's
//! share stays in its own cache.
//!
//! The output is faer's: the diagonal and subdiagonal of `T` in place, the essential
//! parts of the reflectors below the subdiagonal, and their block factors in `hh` (as
//! [`faer::linalg::evd::tridiag::tridiag_in_place`] leaves them, for its blocked
//! application of `Q`). The ranges depend on `n` alone, so the result does not depend on
//! the number of threads.

use faer::linalg::householder::upgrade_householder_factor;
use faer::linalg::matmul::matmul;
use faer::{Accum, ColRef, MatMut, MatRef, Par};

use super::eigh::hypot;
use super::LinalgElem;
use crate::backend::cpu::par::{run_tasks, Parts};

/// Order from which the symmetric eigendecomposition tridiagonalises with
/// [`tridiag_split`] (below, faer's unblocked `tridiag_in_place`, which is faster there
/// on one thread on this host; the two cross between n = 128 and 192).
pub(crate) const SPLIT_N: usize = 160;
/// Panel width (LAPACK's `dsytrd` block size).
const NB: usize = 32;
/// Column ranges of each product and update (a constant: the bits of the result do not
/// depend on the thread count).
const PARTS: usize = 4;
/// Order of the matrix from which its products and updates run over the threads, and
/// order of the trailing matrix below which they run on the calling thread (a parallel
/// region costs a few microseconds: two threads were slower than one at n = 256, and
/// faster from 512).
const PAR_N: usize = 384;
const PAR_M: usize = 160;
/// Columns per matrix product of a trailing update (the diagonal blocks' upper halves
/// are computed and ignored: `BLOCK / 2` wasted columns per block).
const BLOCK: usize = 64;

/// Workspace of [`tridiag_split`], reused across calls.
#[derive(Default)]
pub(crate) struct Scratch<T> {
    /// `W`: `n x NB`, column-major.
    w: Vec<T>,
    /// One partial product per range: `PARTS x n`.
    z: Vec<T>,
    /// The subdiagonal of the current panel (its place in `A` holds `1` meanwhile).
    e: Vec<T>,
    /// `Wᵀ v` and `Vᵀ v` of the current column.
    t: Vec<T>,
}

/// `[q₀ = 0, q₁, …, q_PARTS = m]`: the columns of an order-`m` lower triangle cut into
/// [`PARTS`] ranges of about equal area (column `q` has `m − q` entries).
fn area_cuts(m: usize) -> [usize; PARTS + 1] {
    let mut cuts = [m; PARTS + 1];
    cuts[0] = 0;
    for (t, cut) in cuts.iter_mut().enumerate().take(PARTS).skip(1) {
        let f = 1.0 - (1.0 - t as f64 / PARTS as f64).sqrt();
        *cut = ((f * m as f64).round() as usize).min(m);
    }
    for t in 1..=PARTS {
        cuts[t] = cuts[t].max(cuts[t - 1]);
    }
    cuts
}

/// Tridiagonalises the symmetric `n x n` column-major `a` (its lower triangle is read;
/// entries above the diagonal may be overwritten), `n >= 2`, into faer's storage (see
/// the module's documentation); `hh` is `bs x (n − 1)`, column-major.
pub(crate) fn tridiag_split<T: LinalgElem>(
    a: &mut [T],
    n: usize,
    hh: &mut [T],
    bs: usize,
    sc: &mut Scratch<T>,
) {
    debug_assert!(n >= 2 && a.len() == n * n && hh.len() == bs * (n - 1));
    sc.w.clear();
    sc.w.resize(n * NB, T::ZERO);
    sc.z.resize(PARTS * n, T::ZERO);
    sc.e.resize(n, T::ZERO);
    sc.t.resize(2 * NB, T::ZERO);
    let mut j0 = 0;
    while j0 < n - 1 {
        let wd = NB.min(n - 1 - j0);
        for i in 0..wd {
            let c = j0 + i;
            if i > 0 {
                crate::backend::cpu::simd::arch().dispatch(UpdateColumn {
                    a: &mut *a,
                    w: &sc.w,
                    n,
                    j0,
                    i,
                });
            }
            // the reflector of column c: H = I − v vᵀ / τ, v = [1; essential] on rows c + 1..
            let col = &mut a[c * n + c + 1..(c + 1) * n];
            let Some((head, tail)) = col.split_first_mut() else {
                break; // (c + 1 < n: not reached)
            };
            let tau_f = crate::backend::cpu::simd::arch().dispatch(Reflector { head, tail });
            hh[c * bs] = tau_f;
            sc.e[c] = *head;
            *head = T::ONE;
            // LAPACK's τ (the reflector is I − τ_L v vᵀ): 0 for the identity (τ infinite)
            let tau = T::ONE / tau_f;
            w_column(a, n, j0, i, tau, sc);
        }
        let j1 = j0 + wd;
        trailing_update(a, n, j0, j1, &sc.w);
        for c in j0..j1 {
            a[c * n + c + 1] = sc.e[c];
        }
        j0 = j1;
    }
    // the block factors of each `bs` reflectors, from their τ (as faer's `tridiag_in_place`)
    let am = MatRef::from_column_major_slice(a, n, n).submatrix(1, 0, n - 1, n - 1);
    let mut j = 0;
    while j < n - 1 {
        let b = bs.min(n - 1 - j);
        let mut h = MatMut::from_column_major_slice_with_stride_mut(&mut hh[j * bs..], b, b, bs);
        for k in 1..b {
            let tk = h[(0, k)];
            h[(k, k)] = tk;
        }
        upgrade_householder_factor(h, am.submatrix(j, j, n - 1 - j, b), b, 1, Par::Seq);
        j += b;
    }
}

/// The reflector `H = I − v vᵀ / τ` with `H [head; tail] = [β; 0]`, `v = [1; tail']`:
/// faer's `make_householder_in_place` (its conventions: `β` into `head`, the essential
/// part into `tail`, `τ` returned, infinite for the identity), with the tail's norm from
/// one vector dot product where its squares cannot under- or overflow (faer's scaled
/// `norm_l2`, kept for the other cases, showed in an order-1024 tridiagonalisation).
pub(super) struct Reflector<'a, T> {
    pub(super) head: &'a mut T,
    pub(super) tail: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Reflector<'_, T> {
    type Output = T;
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> T {
        let Reflector { head, tail } = self;
        let tiny = T::min_positive_impl();
        let ss = T::dot(simd, tail, tail);
        // each square that underflows loses at most `tiny`: negligible against this
        let safe = tiny / T::EPSILON * T::of(tail.len() as f64 + 1.0);
        let tail_norm = if ss.is_finite() && ss >= safe {
            ss.sqrt()
        } else {
            ColRef::from_slice(tail).norm_l2()
        };
        let mut head_norm = head.abs();
        if head_norm < tiny {
            *head = T::ZERO;
            head_norm = T::ZERO;
        }
        if tail_norm < tiny {
            return T::INFINITY;
        }
        let norm = hypot(head_norm, tail_norm);
        let sign = if head_norm == T::ZERO { T::ONE } else { *head / head_norm };
        let signed = sign * norm;
        let inv = T::ONE / (*head + signed);
        for x in tail.iter_mut() {
            *x *= inv;
        }
        *head = -signed;
        let r = tail_norm * inv.abs();
        T::of(0.5) * (T::ONE + r * r)
    }
}

/// Column `c = j0 + i` on rows `c..` less the panel's earlier reflectors' share:
/// `a[c.., c] −= V[c.., ..i] W[c, ..i]ᵀ + W[c.., ..i] V[c, ..i]ᵀ` (`V`'s columns are
/// `a`'s columns `j0..j0 + i`, their unit entries in place).
struct UpdateColumn<'a, T> {
    a: &'a mut [T],
    w: &'a [T],
    n: usize,
    j0: usize,
    i: usize,
}

impl<T: LinalgElem> pulp::WithSimd for UpdateColumn<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let UpdateColumn { a, w, n, j0, i } = self;
        let c = j0 + i;
        let (left, right) = a.split_at_mut(c * n);
        let dst = &mut right[c..n];
        for p in 0..i {
            let vp = &left[(j0 + p) * n + c..(j0 + p + 1) * n];
            let wp = &w[p * n + c..(p + 1) * n];
            let (wc, vc) = (wp[0], vp[0]);
            for ((d, &v), &x) in dst.iter_mut().zip(vp).zip(wp) {
                *d -= v * wc + x * vc;
            }
        }
    }
}

/// Column `i` of `W` for column `c = j0 + i` (rows `c + 1..`), with `v` the reflector in
/// `a[c + 1.., c]` and `τ` LAPACK's:
/// `w = τ (A₂₂ v − V (Wᵀ v) − W (Vᵀ v))`, then `w −= (τ/2)(wᵀ v) v`.
fn w_column<T: LinalgElem>(a: &[T], n: usize, j0: usize, i: usize, tau: T, sc: &mut Scratch<T>) {
    let c = j0 + i;
    let c1 = c + 1;
    let m = n - c1;
    let cuts = area_cuts(m);
    let v = &a[c * n + c1..(c + 1) * n];
    // the partial products A₂₂ v of the column ranges
    {
        let parts = Parts::new(&mut sc.z[..PARTS * m], m);
        let task = |t: usize| {
            if cuts[t] == cuts[t + 1] {
                return; // (an empty range writes nothing; Finish skips it)
            }
            let z = parts.take(t);
            crate::backend::cpu::simd::arch().dispatch(Symv {
                a,
                n,
                c1,
                v,
                q0: cuts[t],
                q1: cuts[t + 1],
                z,
            });
        };
        if n >= PAR_N && m >= PAR_M {
            run_tasks(PARTS, task);
        } else {
            (0..PARTS).for_each(task);
        }
    }
    let (wl, wr) = sc.w.split_at_mut(i * n);
    let wcol = &mut wr[c1..n];
    crate::backend::cpu::simd::arch().dispatch(Finish {
        a,
        n,
        j0,
        i,
        c1,
        tau,
        z: &sc.z[..PARTS * m],
        cuts,
        wl,
        wcol,
        t: &mut sc.t,
    });
}

/// The partial product of the columns `q0..q1` of `A₂₂ = a[c1.., c1..]` (lower triangle,
/// order `m = v.len()`) with `v`, into rows `q0..` of `z` (the rows above are not
/// written: no column of the range reaches them).
struct Symv<'a, T> {
    a: &'a [T],
    n: usize,
    c1: usize,
    v: &'a [T],
    q0: usize,
    q1: usize,
    z: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Symv<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let Symv { a, n, c1, v, q0, q1, z } = self;
        let m = v.len();
        if q0 >= q1 {
            return;
        }
        z[q0..m].fill(T::ZERO);
        // column q of A₂₂ from its diagonal entry down
        let col = |q: usize| &a[(c1 + q) * n + c1 + q..(c1 + q + 1) * n];
        let mut q = q0;
        // two columns at a time: each entry of z loaded and stored once per pair
        while q + 1 < q1 {
            let (x0, x1) = (col(q), col(q + 1));
            let (v0, v1) = (v[q], v[q + 1]);
            let (a00, a10, a11) = (x0[0], x0[1], x1[0]);
            let (zl, zr) = z.split_at_mut(q + 2);
            let (s0, s1) =
                T::pair(simd, &mut zr[..m - q - 2], &v[q + 2..m], &x0[2..], &x1[1..], v0, v1);
            zl[q] += (a00 * v0 + a10 * v1) + s0;
            zl[q + 1] += (a10 * v0 + a11 * v1) + s1;
            q += 2;
        }
        if q < q1 {
            let x0 = col(q);
            let v0 = v[q];
            let (zl, zr) = z.split_at_mut(q + 1);
            let rest = &x0[1..];
            let (s0, _) =
                T::pair(simd, &mut zr[..m - q - 1], &v[q + 1..m], rest, rest, v0, T::ZERO);
            zl[q] += x0[0] * v0 + s0;
        }
    }
}

/// The vector kernels of [`tridiag_split`], written with explicit SIMD: LLVM left the
/// same loops (a fused `z += x₀ v₀ + x₁ v₁` and two dot products) mostly scalar, and
/// much slower per entry (an order-256 product in cache, AVX2).
pub(crate) trait SymvSimd: Sized + Copy {
    /// `z += x₀ v₀ + x₁ v₁` and `(x₀ᵀ y, x₁ᵀ y)` (the slices as long as `z` or longer).
    fn pair<S: pulp::Simd>(
        simd: S,
        z: &mut [Self],
        y: &[Self],
        x0: &[Self],
        x1: &[Self],
        v0: Self,
        v1: Self,
    ) -> (Self, Self);

    /// `xᵀ y` (`y` as long as `x` or longer).
    fn dot<S: pulp::Simd>(simd: S, x: &[Self], y: &[Self]) -> Self;

    /// `(x₀ᵀ y, x₁ᵀ y)` (`x₀`, `x₁` as long as `y` or longer): `y` loaded once for both.
    fn dot2<S: pulp::Simd>(simd: S, x0: &[Self], x1: &[Self], y: &[Self]) -> (Self, Self);

    /// `z += x₀ v₀ + x₁ v₁` (`x₀`, `x₁` as long as `z` or longer).
    fn axpy2<S: pulp::Simd>(simd: S, z: &mut [Self], x0: &[Self], x1: &[Self], v0: Self, v1: Self);
}

macro_rules! symv_simd {
    ($t:ty, $as:ident, $asm:ident, $splat:ident, $fma:ident, $add:ident, $red:ident) => {
        impl SymvSimd for $t {
            #[inline(always)]
            fn pair<S: pulp::Simd>(
                simd: S,
                z: &mut [$t],
                y: &[$t],
                x0: &[$t],
                x1: &[$t],
                v0: $t,
                v1: $t,
            ) -> ($t, $t) {
                let len = z.len();
                let (zh, zt) = S::$asm(z);
                let (yh, yt) = S::$as(&y[..len]);
                let (ah, at) = S::$as(&x0[..len]);
                let (bh, bt) = S::$as(&x1[..len]);
                let h = zh.len();
                let (yh, ah, bh) = (&yh[..h], &ah[..h], &bh[..h]);
                let (s0, s1) = (simd.$splat(v0), simd.$splat(v1));
                let zero = simd.$splat(0.0);
                // two accumulators per dot product (the additions' latency)
                let (mut d0, mut d1, mut e0, mut e1) = (zero, zero, zero, zero);
                let mut k = 0;
                while k + 1 < h {
                    let (a0, b0, w0) = (ah[k], bh[k], yh[k]);
                    let (a1, b1, w1) = (ah[k + 1], bh[k + 1], yh[k + 1]);
                    zh[k] = simd.$fma(b0, s1, simd.$fma(a0, s0, zh[k]));
                    zh[k + 1] = simd.$fma(b1, s1, simd.$fma(a1, s0, zh[k + 1]));
                    d0 = simd.$fma(a0, w0, d0);
                    d1 = simd.$fma(b0, w0, d1);
                    e0 = simd.$fma(a1, w1, e0);
                    e1 = simd.$fma(b1, w1, e1);
                    k += 2;
                }
                if k < h {
                    let (a0, b0, w0) = (ah[k], bh[k], yh[k]);
                    zh[k] = simd.$fma(b0, s1, simd.$fma(a0, s0, zh[k]));
                    d0 = simd.$fma(a0, w0, d0);
                    d1 = simd.$fma(b0, w0, d1);
                }
                let mut r0 = simd.$red(simd.$add(d0, e0));
                let mut r1 = simd.$red(simd.$add(d1, e1));
                for (((z, &w), &a), &b) in zt.iter_mut().zip(yt).zip(at).zip(bt) {
                    *z += a * v0 + b * v1;
                    r0 += a * w;
                    r1 += b * w;
                }
                (r0, r1)
            }

            #[inline(always)]
            fn dot<S: pulp::Simd>(simd: S, x: &[$t], y: &[$t]) -> $t {
                let (xh, xt) = S::$as(x);
                let (yh, yt) = S::$as(&y[..x.len()]);
                let h = xh.len();
                let yh = &yh[..h];
                let zero = simd.$splat(0.0);
                let (mut d0, mut d1) = (zero, zero);
                let mut k = 0;
                while k + 1 < h {
                    d0 = simd.$fma(xh[k], yh[k], d0);
                    d1 = simd.$fma(xh[k + 1], yh[k + 1], d1);
                    k += 2;
                }
                if k < h {
                    d0 = simd.$fma(xh[k], yh[k], d0);
                }
                let mut r = simd.$red(simd.$add(d0, d1));
                for (&a, &b) in xt.iter().zip(yt) {
                    r += a * b;
                }
                r
            }

            #[inline(always)]
            fn dot2<S: pulp::Simd>(simd: S, x0: &[$t], x1: &[$t], y: &[$t]) -> ($t, $t) {
                let len = y.len();
                let (yh, yt) = S::$as(y);
                let (ah, at) = S::$as(&x0[..len]);
                let (bh, bt) = S::$as(&x1[..len]);
                let h = yh.len();
                let (ah, bh) = (&ah[..h], &bh[..h]);
                let zero = simd.$splat(0.0);
                let (mut d0, mut d1, mut e0, mut e1) = (zero, zero, zero, zero);
                let mut k = 0;
                while k + 1 < h {
                    d0 = simd.$fma(ah[k], yh[k], d0);
                    d1 = simd.$fma(bh[k], yh[k], d1);
                    e0 = simd.$fma(ah[k + 1], yh[k + 1], e0);
                    e1 = simd.$fma(bh[k + 1], yh[k + 1], e1);
                    k += 2;
                }
                if k < h {
                    d0 = simd.$fma(ah[k], yh[k], d0);
                    d1 = simd.$fma(bh[k], yh[k], d1);
                }
                let mut r0 = simd.$red(simd.$add(d0, e0));
                let mut r1 = simd.$red(simd.$add(d1, e1));
                for ((&w, &a), &b) in yt.iter().zip(at).zip(bt) {
                    r0 += a * w;
                    r1 += b * w;
                }
                (r0, r1)
            }

            #[inline(always)]
            fn axpy2<S: pulp::Simd>(
                simd: S,
                z: &mut [$t],
                x0: &[$t],
                x1: &[$t],
                v0: $t,
                v1: $t,
            ) {
                let len = z.len();
                let (zh, zt) = S::$asm(z);
                let (ah, at) = S::$as(&x0[..len]);
                let (bh, bt) = S::$as(&x1[..len]);
                let h = zh.len();
                let (ah, bh) = (&ah[..h], &bh[..h]);
                let (s0, s1) = (simd.$splat(v0), simd.$splat(v1));
                for ((z, &a), &b) in zh.iter_mut().zip(ah).zip(bh) {
                    *z = simd.$fma(b, s1, simd.$fma(a, s0, *z));
                }
                for ((z, &a), &b) in zt.iter_mut().zip(at).zip(bt) {
                    *z += a * v0 + b * v1;
                }
            }
        }
    };
}

symv_simd!(
    f64,
    as_simd_f64s,
    as_mut_simd_f64s,
    splat_f64s,
    mul_add_f64s,
    add_f64s,
    reduce_sum_f64s
);
symv_simd!(
    f32,
    as_simd_f32s,
    as_mut_simd_f32s,
    splat_f32s,
    mul_add_f32s,
    add_f32s,
    reduce_sum_f32s
);

/// The rest of [`w_column`] after the product: the partial products summed (range by
/// range, in order), the panel's corrections, the scaling.
struct Finish<'a, T> {
    a: &'a [T],
    n: usize,
    j0: usize,
    i: usize,
    c1: usize,
    tau: T,
    z: &'a [T],
    cuts: [usize; PARTS + 1],
    /// `W`'s columns before `i`.
    wl: &'a [T],
    /// Rows `c1..` of `W`'s column `i`.
    wcol: &'a mut [T],
    t: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Finish<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let Finish { a, n, j0, i, c1, tau, z, cuts, wl, wcol, t } = self;
        let m = n - c1;
        let v = &a[(c1 - 1) * n + c1..c1 * n];
        wcol.fill(T::ZERO);
        for p in 0..PARTS {
            let q0 = cuts[p];
            if q0 == cuts[p + 1] {
                // an empty range wrote nothing
                continue;
            }
            for (w, &x) in wcol[q0..].iter_mut().zip(&z[p * m + q0..(p + 1) * m]) {
                *w += x;
            }
        }
        let vcol = |p: usize| &a[(j0 + p) * n + c1..(j0 + p + 1) * n];
        let wpcol = |p: usize| &wl[p * n + c1..(p + 1) * n];
        let (t1, t2) = t.split_at_mut(NB);
        for p in 0..i {
            t1[p] = T::dot(simd, wpcol(p), v);
            t2[p] = T::dot(simd, vcol(p), v);
        }
        for p in 0..i {
            let (x1, x2) = (t1[p], t2[p]);
            for ((w, &vp), &wp) in wcol.iter_mut().zip(vcol(p)).zip(wpcol(p)) {
                *w -= vp * x1 + wp * x2;
            }
        }
        for w in wcol.iter_mut() {
            *w *= tau;
        }
        let alpha = -(T::of(0.5) * tau * T::dot(simd, wcol, v));
        for (w, &x) in wcol.iter_mut().zip(v) {
            *w += alpha * x;
        }
    }
}

/// `A[j1.., j1..] −= V Wᵀ + W Vᵀ` (lower triangle; the upper halves of the diagonal
/// blocks get the same update, ignored) with `V = a[j1.., j0..j1]`, `W = w[j1.., ..]`,
/// by column ranges ([`area_cuts`]), each in blocks of [`BLOCK`] columns, each block two
/// sequential faer products.
fn trailing_update<T: LinalgElem>(a: &mut [T], n: usize, j0: usize, j1: usize, w: &[T]) {
    let m2 = n - j1;
    if m2 == 0 {
        return;
    }
    let wd = j1 - j0;
    let (left, right) = a.split_at_mut(j1 * n);
    let left: &[T] = left;
    let vm = MatRef::from_column_major_slice_with_stride(&left[j0 * n + j1..], m2, wd, n);
    let wm = MatRef::from_column_major_slice_with_stride(&w[j1..], m2, wd, n);
    let cuts = area_cuts(m2);
    let offsets: Vec<usize> = cuts[1..PARTS].iter().map(|&q| q * n).collect();
    let parts = Parts::at(right, &offsets);
    let task = |t: usize| {
        if cuts[t] == cuts[t + 1] {
            return; // (an empty chunk: nothing to take)
        }
        let cols = parts.take(t);
        let (qa, qb) = (cuts[t], cuts[t + 1]);
        let mut q0 = qa;
        while q0 < qb {
            let q1 = (q0 + BLOCK).min(qb);
            let rows = m2 - q0;
            let dst = &mut cols[(q0 - qa) * n + j1 + q0..];
            let mut cm = MatMut::from_column_major_slice_with_stride_mut(dst, rows, q1 - q0, n);
            let (vr, wr) = (vm.subrows(q0, rows), wm.subrows(q0, rows));
            let (vb, wb) = (vm.subrows(q0, q1 - q0), wm.subrows(q0, q1 - q0));
            matmul(cm.as_mut(), Accum::Add, vr, wb.transpose(), -T::ONE, Par::Seq);
            matmul(cm.as_mut(), Accum::Add, wr, vb.transpose(), -T::ONE, Par::Seq);
            q0 = q1;
        }
    };
    if n >= PAR_N && m2 >= PAR_M {
        run_tasks(PARTS, task);
    } else {
        (0..PARTS).for_each(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd::tridiag::{tridiag_in_place, tridiag_in_place_scratch};
    use faer::linalg::qr::no_pivoting::factor::recommended_block_size;

    use crate::backend::cpu::linalg::tridiag_qr::tests::rnd;

    /// The same output as faer's `tridiag_in_place` (to rounding): `T`, the reflectors
    /// and their block factors, on sizes across panel and range boundaries (the threaded
    /// products from 384), and scaled so that the squares of the entries underflow or
    /// overflow (the reflectors' norms then taken by faer's scaled `norm_l2`).
    #[test]
    fn as_faer_tridiag() {
        let mut state = 3;
        let mut sc = Scratch::default();
        let cases = [2, 3, 5, 31, 32, 33, 64, 65, 100, 161, 300, 400].map(|n| (n, 1.0));
        for (n, scale) in cases.into_iter().chain([(40, 1e-160), (70, 1e160), (400, 1e-170)]) {
            let mut a = vec![0.0f64; n * n];
            for j in 0..n {
                for i in j..n {
                    let x = rnd(&mut state) * scale;
                    a[j * n + i] = x;
                    a[i * n + j] = x;
                }
            }
            let bs = recommended_block_size::<f64>(n, n);
            let (mut ours, mut hh) = (a.clone(), vec![0.0; bs * (n - 1)]);
            tridiag_split(&mut ours, n, &mut hh, bs, &mut sc);
            let (mut theirs, mut hf) = (a.clone(), vec![0.0; bs * (n - 1)]);
            let mut mem =
                MemBuffer::new(tridiag_in_place_scratch::<f64>(n, Par::Seq, faer::Spec::default()));
            tridiag_in_place(
                MatMut::from_column_major_slice_mut(&mut theirs, n, n),
                MatMut::from_column_major_slice_mut(&mut hf, bs, n - 1),
                Par::Seq,
                MemStack::new(&mut mem),
                faer::Spec::default(),
            );
            let tol = 1e-12 * n as f64;
            for j in 0..n {
                for i in j..n {
                    let (x, y) = (ours[j * n + i], theirs[j * n + i]);
                    // T's entries are of the order of the scale; the reflectors' of one
                    let s = if i <= j + 1 { scale } else { 1.0 };
                    assert!((x - y).abs() <= tol * s, "n {n} ({i}, {j}): {x} vs {y}");
                }
            }
            for j in 0..n - 1 {
                let b0 = j / bs * bs;
                for i in 0..=(j - b0) {
                    let (x, y) = (hh[j * bs + i], hf[j * bs + i]);
                    // (the last reflector is the identity: τ infinite in both)
                    let same = x == y || (x - y).abs() <= tol * (1.0 + y.abs());
                    assert!(same, "n {n} hh ({i}, {j}): {x} vs {y}");
                }
            }
        }
    }
}
