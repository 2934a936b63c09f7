//! Factorise and solve in one pass ([`lu_factor_solve`]) for batches of small matrices:
//! each lane group's factors stay in the lanes from the factorisation to the solve, and
//! are saved in lane order for the solve's backward ([`lu_solve_saved`]), which solves
//! with them as they are (and forms the outer products `−X Yᵀ` of a solve's `gA` in the
//! same pass).

use super::super::lanes::{group_batch, lane_split, LANES, LANES_MAX};
use super::super::order::{by_order, by_order_simd};
use super::super::{colmajor_layout, Batch, LinalgElem};
use super::factor::factor_lanes_n;
use super::solve::{lane_perms, solve_from_lanes};
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::layout::Layout;
use crate::shape::Shape;

impl<T> crate::backend::LuSolved<Vec<T>, Vec<i64>> {
    /// The same result with its float buffers wrapped by `f` (the integer ones as `I64`).
    pub(crate) fn map(
        self,
        f: impl Fn(Vec<T>) -> crate::backend::CpuStorage,
    ) -> crate::backend::LuSolved<crate::backend::CpuStorage> {
        use crate::backend::CpuStorage;
        crate::backend::LuSolved {
            factors: f(self.factors),
            perms: CpuStorage::I64(self.perms),
            info: CpuStorage::I64(self.info),
            x: f(self.x),
            x_layout: self.x_layout,
        }
    }
}

/// The buffers of one task of [`lu_factor_solve`].
struct FactorSolveBufs<T> {
    piv: Vec<i64>,
    info: [i64; LANES],
    factor: Vec<[T; LANES]>,
    x: Vec<[T; LANES]>,
}

/// The outputs of one lane group of [`lu_factor_solve`] (`info` and `x` of its first
/// matrices: the rest of the group are repeats), with the group's inputs and buffers.
struct FactorSolveGroup<'a, T> {
    a: (&'a Batch, &'a [T]),
    b: (&'a Batch, &'a [T]),
    /// The group's first matrix in `a` and `b`.
    first: usize,
    bufs: &'a mut FactorSolveBufs<T>,
    /// The group's factors as they are in the lanes (`n * n * LANES`).
    factors: &'a mut [T],
    /// The group's [`lane_perms`] (`LANES`, the words' bits).
    perms: &'a mut [i64],
    info: &'a mut [i64],
    x: &'a mut [T],
    k: usize,
    adjoint: bool,
}

/// One lane group of [`lu_factor_solve`]: [`factor_lanes_n`], then [`solve_from_lanes`]
/// on the factors still in lanes, with the order a constant where it is small.
fn factor_solve_lanes<T: LinalgElem>(g: FactorSolveGroup<'_, T>) {
    struct Kernel<'a, T, const N: usize>(FactorSolveGroup<'a, T>);
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let FactorSolveGroup {
                a: (ba, a),
                b,
                first,
                bufs,
                factors,
                perms,
                info,
                x,
                k,
                adjoint,
            } = self.0;
            let n = if N > 0 { N } else { ba.n };
            let factor = &mut bufs.factor[..n * n];
            let (piv, inf) = (&mut bufs.piv, &mut bufs.info);
            factor_lanes_n(simd, ba, a, first, None, piv, inf, factor, n, None);
            // (redone lanes included: factor_lanes_n leaves their factors in the lanes)
            for (o, v) in factors.chunks_exact_mut(LANES).zip(factor.iter()) {
                o.copy_from_slice(v);
            }
            info.copy_from_slice(&bufs.info[..info.len()]);
            let perm = lane_perms(&bufs.piv, 0, n);
            for (o, &p) in perms.iter_mut().zip(&perm) {
                *o = p as i64;
            }
            solve_from_lanes(simd, factor, &perm, first, b, x, &mut bufs.x, n, k, adjoint);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), g.a.0.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N>(g),
        _ => Kernel::<T, 0>(g));
}

/// [`lu_factor`](super::lu_factor) of square `a: (*, n, n)` and
/// [`lu_solve`](super::lu_solve) with those factors of `b: (*, n, k)` (the same batch dims)
/// for batches (at least [`LANES`]) of small matrices (`n <=` `LANES_MAX`), in one pass:
/// each lane group is factorised and solved while its factors are in lanes (the same
/// factors and solutions as the two calls, with no second gathering of the factors). The
/// last, partial group of a task is padded with repeats of its last matrix. `None` for
/// other shapes. The factors and interchanges are kept as the lanes hold them, for
/// [`lu_solve_saved`]: `n * n * LANES` elements and [`LANES`] [`lane_perms`] words per
/// group of [`LANES`] matrices; the solutions are column-major `(*, n, k)`.
pub(crate) fn lu_factor_solve<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    b: &[T],
    bl: &Layout,
    adjoint: bool,
) -> Option<crate::backend::LuSolved<Vec<T>, Vec<i64>>> {
    let ba = Batch::of(al);
    let bb = Batch::of(bl);
    let (n, k, len) = (ba.n, bb.n, ba.len());
    if ba.m != n
        || n == 0
        || n > LANES_MAX
        || len < LANES
        || bb.dims != ba.dims
        || bb.m != n
        || k == 0
    {
        return None;
    }
    let (size, xsize, groups) = (n * n, n * k, len.div_ceil(LANES));
    let mut factors = crate::backend::cpu::pool::overwritten(groups * LANES * size, T::ZERO);
    let mut perms = crate::backend::cpu::pool::overwritten(groups * LANES, 0i64);
    let mut info = vec![0i64; len];
    let mut x = crate::backend::cpu::pool::overwritten(len * xsize, T::ZERO);
    let (per, split) = lane_split(len, size * n + size * k);
    {
        let (pf, pp) = (Parts::new(&mut factors, size * per), Parts::new(&mut perms, per));
        let (pi, px) = (Parts::new(&mut info, per), Parts::new(&mut x, xsize * per));
        let task = |t: usize| {
            let (fo, po, io, xo) = (pf.take(t), pp.take(t), pi.take(t), px.take(t));
            let mut bufs = FactorSolveBufs {
                piv: vec![0; LANES * n],
                info: [0; LANES],
                factor: vec![[T::ZERO; LANES]; size],
                x: vec![[T::ZERO; LANES]; xsize],
            };
            let (mut sa, mut sb) = (
                Batch::listed(vec![0; LANES], n, n, ba.rs, ba.cs),
                Batch::listed(vec![0; LANES], n, k, bb.rs, bb.cs),
            );
            let count = io.len();
            // the task's whole groups by the wide kernel where it applies (contiguous
            // 4 x 4 blocks), the groups it leaves and a last partial one by the lanes'
            let whole = count / LANES * LANES;
            let (mut start, mut undone) = (0, Vec::new());
            if let (4, true, Some(pa), Some(pb)) = (n, whole > 0, ba.packed(), bb.packed()) {
                let (m0, mf) = (t * per, t * per + whole);
                let wide = T::factor_solve_wide(
                    &a[pa + m0 * size..pa + mf * size],
                    &b[pb + m0 * xsize..pb + mf * xsize],
                    k,
                    adjoint,
                    &mut fo[..whole * size],
                    &mut po[..whole],
                    &mut io[..whole],
                    &mut xo[..whole * xsize],
                );
                if let Some(u) = wide {
                    (start, undone) = (whole, u);
                }
            }
            let mut group = |g: usize| {
                let c = LANES.min(count - g);
                let (ga, first) = group_batch(&mut sa, &ba, t * per + g, c);
                let (gb, _) = group_batch(&mut sb, &bb, t * per + g, c);
                factor_solve_lanes(FactorSolveGroup {
                    a: (ga, a),
                    b: (gb, b),
                    first,
                    bufs: &mut bufs,
                    factors: &mut fo[g * size..(g + LANES) * size],
                    perms: &mut po[g..g + LANES],
                    info: &mut io[g..g + c],
                    x: &mut xo[g * xsize..(g + c) * xsize],
                    k,
                    adjoint,
                });
            };
            for h in undone {
                group(h * LANES);
            }
            for g in (start..count).step_by(LANES) {
                group(g);
            }
        };
        if split {
            run_tasks(pi.len(), task);
        } else {
            task(0);
        }
    }
    Some(crate::backend::LuSolved {
        factors,
        perms,
        info,
        x,
        x_layout: colmajor_layout(&bb.dims, n, k),
    })
}

/// One lane group of [`lu_solve_saved`]: its saved factors and permutations, the
/// right-hand sides, buffers, and the solutions of its first systems.
struct SavedGroup<'a, T> {
    factors: &'a [T],
    perms: &'a [i64],
    b: (&'a Batch, &'a [T]),
    /// The group's first matrix in `b`.
    first: usize,
    lub: &'a mut [[T; LANES]],
    xb: &'a mut [[T; LANES]],
    x: &'a mut [T],
    n: usize,
    k: usize,
    adjoint: bool,
}

/// [`solve_from_lanes`] on one lane group of saved factors, with the order a constant
/// where it is small.
fn solve_saved_lanes<T: LinalgElem>(g: SavedGroup<'_, T>) {
    struct Kernel<'a, T, const N: usize>(SavedGroup<'a, T>);
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let SavedGroup { factors, perms, b, first, lub, xb, x, n, k, adjoint } = self.0;
            let n = if N > 0 { N } else { n };
            let lub = &mut lub[..n * n];
            for (d, v) in lub.iter_mut().zip(factors.chunks_exact(LANES)) {
                d.copy_from_slice(v);
            }
            let mut perm = [0u64; LANES];
            for (p, &v) in perm.iter_mut().zip(perms) {
                *p = v as u64;
            }
            solve_from_lanes(simd, lub, &perm, first, b, x, xb, n, k, adjoint);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), g.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N>(g),
        _ => Kernel::<T, 0>(g));
}

/// [`lu_solve`](super::lu_solve) with the factors of order `n` that [`lu_factor_solve`]
/// saved (`factors` and `perms` as it returned them) for `b: (*, n, k)` with the factorised
/// batch's dims: `A X = B` (`Aᵀ X = B` if `adjoint`), lane group by lane group, the factors
/// copied as they are instead of gathered. The result is column-major. With
/// `outer = Some(Y)` (`(*, n, k)`, `b`'s dims), also `−X Yᵀ` of each matrix (row-major
/// `(*, n, n)`) from each group's solutions while they are in cache: a solve's
/// `gA = −gB Xᵀ` in the pass that makes `gB`, each thread on the matrices whose factors it
/// made.
pub(crate) fn lu_solve_saved<T: LinalgElem>(
    factors: &[T],
    perms: &[i64],
    n: usize,
    b: &[T],
    bl: &Layout,
    adjoint: bool,
    outer: Option<(&[T], &Layout)>,
) -> crate::backend::SavedSolve<Vec<T>> {
    let bb = Batch::of(bl);
    let (k, len) = (bb.n, bb.len());
    let (size, xsize) = (n * n, n * k);
    debug_assert_eq!(perms.len(), len.div_ceil(LANES) * LANES);
    let x_layout = colmajor_layout(&bb.dims, n, k);
    let mut x = crate::backend::cpu::pool::overwritten(len * xsize, T::ZERO);
    let outer = outer.map(|(y, yl)| (y, Batch::of(yl)));
    let mut prods =
        outer.as_ref().map(|_| crate::backend::cpu::pool::overwritten(len * size, T::ZERO));
    if xsize == 0 {
        if let Some(p) = &mut prods {
            p.fill(T::ZERO);
        }
    } else {
        let (per, split) = lane_split(len, size * k);
        let px = Parts::new(&mut x, xsize * per);
        let pp = prods.as_mut().map(|p| Parts::new(p, size * per));
        let task = |t: usize| {
            let xo = px.take(t);
            let mut po = pp.as_ref().map(|p| p.take(t));
            let mut lub = vec![[T::ZERO; LANES]; size];
            let mut xb = vec![[T::ZERO; LANES]; xsize];
            let mut sb = Batch::listed(vec![0; LANES], n, k, bb.rs, bb.cs);
            let count = xo.len() / xsize;
            // the task's whole groups by the wide kernel where it applies (contiguous
            // 4 x 4 blocks), a last partial one by the lanes'
            let whole = count / LANES * LANES;
            let mut start = 0;
            let y_packed = match &outer {
                Some((y, by)) => by.packed().map(|o| Some((*y, o))),
                None => Some(None),
            };
            // (the cotangent of a sum is one value broadcast)
            let rhs = match bb.packed() {
                Some(pb) => Some(Ok(pb)),
                None => bl.is_scalar_broadcast().then(|| Err(b[bl.offset()])),
            };
            if let (4, true, Some(rhs), Some(yp)) = (n, whole > 0, rhs, y_packed) {
                let (m0, mf) = (t * per, t * per + whole);
                let done = T::solve_saved_wide(
                    &factors[m0 * size..mf * size],
                    &perms[m0..mf],
                    rhs.map(|pb| &b[pb + m0 * xsize..pb + mf * xsize]),
                    k,
                    adjoint,
                    yp.map(|(y, o)| &y[o + m0 * xsize..o + mf * xsize]),
                    &mut xo[..whole * xsize],
                    po.as_deref_mut().map(|p| &mut p[..whole * size]),
                );
                if done {
                    start = whole;
                }
            }
            for g in (start..count).step_by(LANES) {
                let (first, c) = (t * per + g, LANES.min(count - g));
                let (gb, bfirst) = group_batch(&mut sb, &bb, first, c);
                let xg = &mut xo[g * xsize..(g + c) * xsize];
                solve_saved_lanes(SavedGroup {
                    factors: &factors[first * size..(first + LANES) * size],
                    perms: &perms[first..first + LANES],
                    b: (gb, b),
                    first: bfirst,
                    lub: &mut lub,
                    xb: &mut xb,
                    x: xg,
                    n,
                    k,
                    adjoint,
                });
                if let (Some((y, by)), Some(po)) = (&outer, &mut po) {
                    let dst = &mut po[g * size..(g + c) * size];
                    neg_outer(xg, (y, by, first), dst, n, k);
                }
            }
        };
        if split {
            run_tasks(px.len(), task);
        } else {
            task(0);
        }
    }
    let outer =
        prods.map(|p| (p, Layout::contiguous(Shape::new([&bb.dims[..], &[n, n]].concat()))));
    crate::backend::SavedSolve { x, x_layout, outer }
}

/// `d_w = −x_w y_wᵀ` (row-major `n x n`) for the consecutive column-major `n x k`
/// matrices `x_w` of `xs` and the matrices `first + w` of `y`: each sum in ascending
/// order, of the negated terms (the bits of the product, then its negation). The order a
/// constant up to 4.
fn neg_outer<T: LinalgElem>(xs: &[T], y: (&[T], &Batch, usize), d: &mut [T], n: usize, k: usize) {
    by_order!(n;
        1 2 3 4 => |N| neg_outer_n::<T, N>(xs, y, d, n, k),
        _ => neg_outer_n::<T, 0>(xs, y, d, n, k));
}

/// [`neg_outer`] with `n = N` when `N > 0`.
#[inline(always)]
fn neg_outer_n<T: LinalgElem, const N: usize>(
    xs: &[T],
    (y, by, first): (&[T], &Batch, usize),
    d: &mut [T],
    n: usize,
    k: usize,
) {
    let n = if N > 0 { N } else { n };
    let mut yc = [T::ZERO; LANES_MAX];
    let yc = &mut yc[..n];
    for (w, (x, dw)) in xs.chunks_exact(n * k).zip(d.chunks_exact_mut(n * n)).enumerate() {
        let o = by.offset(first + w);
        for c in 0..k {
            for (j, v) in yc.iter_mut().enumerate() {
                *v = y[o + j * by.rs + c * by.cs];
            }
            let xc = &x[c * n..(c + 1) * n];
            // (−a) b + (−c) d is −(a b + c d) to the bit
            for (&xi, row) in xc.iter().zip(dw.chunks_exact_mut(n)) {
                let nx = -xi;
                if c == 0 {
                    for (r, &v) in row.iter_mut().zip(yc.iter()) {
                        *r = nx * v;
                    }
                } else {
                    for (r, &v) in row.iter_mut().zip(yc.iter()) {
                        *r += nx * v;
                    }
                }
            }
        }
    }
}

impl<T> crate::backend::SavedSolve<Vec<T>> {
    /// The same result with its buffers wrapped by `f`.
    pub(crate) fn map(
        self,
        f: impl Fn(Vec<T>) -> crate::backend::CpuStorage,
    ) -> crate::backend::SavedSolve<crate::backend::CpuStorage> {
        crate::backend::SavedSolve {
            x: f(self.x),
            x_layout: self.x_layout,
            outer: self.outer.map(|(p, l)| (f(p), l)),
        }
    }
}
