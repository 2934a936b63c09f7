//! The forward-mode derivative (JVP) of the Cholesky factorisation, fused: for factors
//! `L` of `A = L Lᵀ` and a symmetric tangent `dA`, the lower-triangular `dL` with
//! `dL Lᵀ + L dLᵀ = dA`, which is the tensor-op rule's `L Φ(L⁻¹ dA L⁻ᵀ)` (`Φ` the lower
//! triangle with the diagonal halved) for symmetric `dA`.
//!
//! Why a kernel: that rule costs two triangular solves with `n` right-hand sides and a
//! product, about `4n³` flops, twelve times the factorisation's `n³/3`. The recurrence
//! of the factorisation, differentiated, costs `2n³/3`, most of it in two matrix products
//! per block of columns. Let `C = dA − Σ_{k<j} (dL_{:k} L_{jk} + L_{:k} dL_{jk})`, the
//! lower triangle of column `j` with the terms of the columns before it moved over; then
//!
//! ```text
//!     dL_jj = C_jj / (2 L_jj),      dL_ij = (C_ij − L_ij dL_jj) / L_jj   (i > j).
//! ```
//!
//! Orders up to [`NB`] run it right-looking (each column's terms subtracted from the
//! columns to its right once it is known; batches of them [`LANES`] matrices at a time).
//! Larger ones run left-looking by blocks of [`block_width`] columns: the block's `C` by
//! two matrix products with the columns before it, its diagonal block by the recurrence,
//! the rows below from `C₂₁ = dL₂₁ L₁₁ᵀ + L₂₁ dL₁₁ᵀ`, that is
//! `dL₂₁ = (C₂₁ − L₂₁ dL₁₁ᵀ) L₁₁⁻ᵀ`: a product and a triangular solve.
//!
//! Only `dA`'s lower triangle enters the recurrence, so the kernel takes symmetric
//! tangents only (checked): for others the tensor-op rule, which reads all of `dA` as
//! PyTorch's does, stays the definition.

use std::sync::atomic::{AtomicBool, Ordering};

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, MatMut, MatRef, Par};

use super::cholesky::{load_lower_cols, PAR_N};
use super::lanes::{for_each_lane_group, lane_offsets, load_lanes, store_lanes, LANES, LANES_MAX};
use super::order::{by_order, by_order_simd};
use super::{colmajor_layout, for_each_matrix_with, Batch, LinalgElem};
use crate::backend::cpu::pool;
use crate::dtype::Float;
use crate::layout::Layout;
use crate::shape::Shape;

/// Orders up to this run the recurrence directly; above, blocks of [`block_width`]
/// columns.
const NB: usize = 16;

/// Columns per block of the left-looking sweep at order `n`: narrow blocks at small
/// orders (the recurrence on the diagonal blocks is a small share), wider ones at large
/// orders, where the two products per block are the work and skinny ones run slowly.
fn block_width(n: usize) -> usize {
    (n / 16).next_power_of_two().clamp(NB, 128)
}

/// Whether the `n x n` matrix at `off` (strides `rs`, `cs`) of `a` is exactly symmetric.
fn symmetric<T: Float>(a: &[T], off: usize, n: usize, rs: usize, cs: usize) -> bool {
    (0..n).all(|c| (c + 1..n).all(|r| a[off + r * rs + c * cs] == a[off + c * rs + r * cs]))
}

/// The JVP of the Cholesky factorisation for factors `f: (*, n, n)` (`L`, or `U = Lᵀ` if
/// `upper`) and tangents `da` (the same batch dims, any strides): `dL` column-major (or
/// `dU = dLᵀ`, the same buffer read row-major). `None` if some `dA` is not exactly
/// symmetric (the caller's tensor-op rule then computes it).
pub(crate) fn cholesky_jvp<T: LinalgElem>(
    f: &[T],
    fl: &Layout,
    da: &[T],
    dal: &Layout,
    upper: bool,
) -> Option<(Vec<T>, Layout)> {
    let mut bf = Batch::of(fl);
    if upper {
        // L = Uᵀ
        std::mem::swap(&mut bf.rs, &mut bf.cs);
    }
    let bd = Batch::of(dal);
    let n = bf.n;
    let size = n * n;
    let layout = if upper {
        let mut dims = bf.dims.clone();
        dims.extend([n, n]);
        Layout::contiguous(Shape::new(dims))
    } else {
        colmajor_layout(&bf.dims, n, n)
    };
    // every element is written (the strict upper triangle zeroed last)
    let mut out = pool::overwritten(bf.len() * size, T::ZERO);
    if out.is_empty() {
        return Some((out, layout));
    }
    let asymmetric = AtomicBool::new(false);
    let sym = |i: usize| {
        let ok = symmetric(da, bd.offset(i), n, bd.rs, bd.cs);
        if !ok {
            asymmetric.store(true, Ordering::Relaxed);
        }
        ok
    };
    let one = |i: usize, dst: &mut [T], lw: &mut Vec<T>, par: Par| {
        if !sym(i) {
            return;
        }
        let (off, rs, cs) = (bd.offset(i), bd.rs, bd.cs);
        // a symmetric matrix stored whole reads the same either way: copied as it is
        if (rs, cs) == (1, n) || (rs, cs) == (n, 1) {
            dst.copy_from_slice(&da[off..off + size]);
        } else {
            load_lower_cols(&bd, da, i, dst, T::ZERO);
        }
        // only the lower triangle of L is read: a factor stored whole is read in place
        // (small ones, row-major, by the recurrence alone)
        let o = bf.offset(i);
        if n <= NB && (bf.rs, bf.cs) == (n, 1) {
            whole::<T, true>(dst, &f[o..o + size], n);
        } else {
            let l: &[T] = if (bf.rs, bf.cs) == (1, n) {
                &f[o..o + size]
            } else {
                lw.resize(size, T::ZERO);
                load_lower_cols(&bf, f, i, lw, T::ZERO);
                lw
            };
            if n <= NB {
                whole::<T, false>(dst, l, n);
            } else {
                blocked(dst, l, n, par);
            }
        }
        for c in 1..n {
            dst[c * n..c * n + c].fill(T::ZERO);
        }
    };
    let work = (2 * size * n / 3).max(1);
    if n <= LANES_MAX && bf.len() >= LANES {
        // groups of LANES matrices at once, each operation over the group
        let scratch = || (vec![[T::ZERO; LANES]; size], vec![[T::ZERO; LANES]; size]);
        let group = |(lb, sb): &mut (Vec<[T; LANES]>, Vec<[T; LANES]>), first, dst: &mut [T]| {
            if !lanes(Group { f: (&bf, f), da: (&bd, da), first, lb, sb, dst }) {
                asymmetric.store(true, Ordering::Relaxed);
            }
        };
        for_each_lane_group(&mut out, size, work, scratch, |_, _| None, group, one);
    } else {
        for_each_matrix_with(&mut out, size, work, n >= PAR_N, Vec::new, one);
    }
    if asymmetric.into_inner() {
        pool::give(out);
        return None;
    }
    Some((out, layout))
}

/// The left-looking blocked sweep on the column-major `n x n` matrices `s` (`dA`'s lower
/// triangle in, `dL` out) and `l` (`L`).
fn blocked<T: LinalgElem>(s: &mut [T], l: &[T], n: usize, par: Par) {
    let lm = MatRef::from_column_major_slice(l, n, n);
    let nb = block_width(n);
    for j0 in (0..n).step_by(nb) {
        let w = nb.min(n - j0);
        let rows = n - j0;
        let (done, rest) = s.split_at_mut(j0 * n);
        let block = &mut rest[..w * n];
        if j0 > 0 {
            // C −= dL[j0.., ..j0] L[j0..j1, ..j0]ᵀ + L[j0.., ..j0] dL[j0..j1, ..j0]ᵀ
            let dl = MatRef::from_column_major_slice(done, n, j0);
            let mut c = MatMut::from_column_major_slice_mut(block, n, w).subrows_mut(j0, rows);
            let lb = lm.submatrix(j0, 0, w, j0);
            matmul(c.as_mut(), Accum::Add, dl.subrows(j0, rows), lb.transpose(), -T::ONE, par);
            let la = lm.submatrix(j0, 0, rows, j0);
            matmul(c.as_mut(), Accum::Add, la, dl.subrows(j0, w).transpose(), -T::ONE, par);
        }
        // the diagonal block by the recurrence (its column offset in `block` is 0)
        recurrence::<T, false>(block, l, n, j0, w);
        // its strict upper triangle took the products' terms: dL is lower triangular
        for c in 1..w {
            block[c * n + j0..c * n + j0 + c].fill(T::ZERO);
        }
        if rows > w {
            let c = MatMut::from_column_major_slice_mut(block, n, w).subrows_mut(j0, rows);
            let (dl11, mut c21) = c.split_at_row_mut(w);
            // dL₂₁ = (C₂₁ − L₂₁ dL₁₁ᵀ) L₁₁⁻ᵀ
            let l21 = lm.submatrix(j0 + w, j0, rows - w, w);
            matmul(c21.as_mut(), Accum::Add, l21, dl11.as_ref().transpose(), -T::ONE, par);
            solve_lower_triangular_in_place(lm.submatrix(j0, j0, w, w), c21.transpose_mut(), par);
        }
    }
}

/// [`recurrence`] on a whole `n x n` matrix, with `n` a constant for small orders
/// (unrolled loops, no bounds checks: a batch of 4 x 4 tangents spent most of its time
/// on the loops' bookkeeping); `L` row-major if `LROWS`.
fn whole<T: Float, const LROWS: bool>(s: &mut [T], l: &[T], n: usize) {
    fn fixed<T: Float, const LROWS: bool, const N: usize>(s: &mut [T], l: &[T]) {
        recurrence::<T, LROWS>(&mut s[..N * N], &l[..N * N], N, 0, N);
    }
    by_order!(n;
        1 2 3 4 8 16 => |N| fixed::<T, LROWS, N>(s, l),
        _ => recurrence::<T, LROWS>(s, l, n, 0, n));
}

/// The recurrence, right-looking, on the `w x w` diagonal block of the block of columns
/// `j0..j0 + w` held in `block` (column `c` of the block at `c * n`; `C` in, `dL` out),
/// `l` the whole `n x n` factor, column-major (row-major if `LROWS`). Writes the block's
/// lower triangle only.
#[inline(always)]
fn recurrence<T: Float, const LROWS: bool>(
    block: &mut [T],
    l: &[T],
    n: usize,
    j0: usize,
    w: usize,
) {
    let at = |r: usize, c: usize| c * n + j0 + r;
    let lat = |r: usize, c: usize| {
        if LROWS {
            (j0 + r) * n + j0 + c
        } else {
            (j0 + c) * n + j0 + r
        }
    };
    let half = T::of(0.5);
    for j in 0..w {
        let inv = T::ONE / l[lat(j, j)];
        let d = block[at(j, j)] * half * inv;
        block[at(j, j)] = d;
        for i in j + 1..w {
            block[at(i, j)] = (block[at(i, j)] - l[lat(i, j)] * d) * inv;
        }
        for c in j + 1..w {
            let (dc, lc) = (block[at(c, j)], l[lat(c, j)]);
            for r in c..w {
                let v = block[at(r, j)] * lc + l[lat(r, j)] * dc;
                block[at(r, c)] = block[at(r, c)] - v;
            }
        }
    }
}

/// One lane group: the factors `f` and tangents `da` of the [`LANES`] matrices `first..`,
/// the lanes' scratch (`L`, and `dA` then `dL`), and the group's output blocks.
struct Group<'a, T> {
    f: (&'a Batch, &'a [T]),
    da: (&'a Batch, &'a [T]),
    first: usize,
    lb: &'a mut [[T; LANES]],
    sb: &'a mut [[T; LANES]],
    dst: &'a mut [T],
}

/// The recurrence on a [`Group`] (`n <= LANES_MAX`): `L` and `dA` loaded column-major
/// into the lanes, `dA`'s symmetry checked there, [`recurrence_lanes`], `dL` stored
/// column-major; with the order a constant (unrolled loops). False (nothing stored) if
/// some `dA` is not exactly symmetric.
fn lanes<T: LinalgElem>(grp: Group<'_, T>) -> bool {
    struct Kernel<'a, T, const N: usize>(Group<'a, T>);
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = bool;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) -> bool {
            let Group { f: (bf, f), da: (bd, da), first, lb, sb, dst } = self.0;
            let n = if N > 0 { N } else { bf.n };
            let size = n * n;
            let (lb, sb) = (&mut lb[..size], &mut sb[..size]);
            load_lanes(simd, sb, da, &lane_offsets(bd, first), (bd.rs, bd.cs), n, n);
            let mut same = true;
            for c in 0..n {
                for r in c + 1..n {
                    same &= sb[c * n + r] == sb[r * n + c];
                }
            }
            if !same {
                return false;
            }
            load_lanes(simd, lb, f, &lane_offsets(bf, first), (bf.rs, bf.cs), n, n);
            recurrence_lanes(sb, lb, n);
            store_lanes(simd, sb, dst, n, false);
            true
        }
    }
    let n = grp.f.0.n;
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        1 2 3 4 8 16 => |N| Kernel::<T, N>(grp),
        _ => Kernel::<T, 0>(grp))
}

/// [`recurrence`] on a whole `n x n` matrix in each lane (column-major `s` and `l`),
/// the strict upper triangle of `dL` zeroed.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn recurrence_lanes<T: Float>(s: &mut [[T; LANES]], l: &[[T; LANES]], n: usize) {
    let half = T::of(0.5);
    for j in 0..n {
        let mut inv = [T::ZERO; LANES];
        let mut d = s[j * n + j];
        for w in 0..LANES {
            inv[w] = T::ONE / l[j * n + j][w];
            d[w] = d[w] * half * inv[w];
        }
        s[j * n + j] = d;
        for i in j + 1..n {
            let y = l[j * n + i];
            let x = &mut s[j * n + i];
            for w in 0..LANES {
                x[w] = (x[w] - y[w] * d[w]) * inv[w];
            }
        }
        for c in j + 1..n {
            let (dc, lc) = (s[j * n + c], l[j * n + c]);
            for r in c..n {
                let (a, b) = (s[j * n + r], l[j * n + r]);
                let x = &mut s[c * n + r];
                for w in 0..LANES {
                    x[w] = x[w] - (a[w] * lc[w] + b[w] * dc[w]);
                }
            }
        }
    }
    for c in 1..n {
        s[c * n..c * n + c].fill([T::ZERO; LANES]);
    }
}
