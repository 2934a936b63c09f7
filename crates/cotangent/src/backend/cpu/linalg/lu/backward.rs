//! The VJP of the LU factorisation of square matrices ([`lu_factor_backward`]):
//! `gA = P L⁻ᵀ X U⁻ᵀ` with the middle factor `X` from the cotangent of the packed factors
//! (PyTorch's `linalg_lu_backward`), by own loops for small orders (one matrix at a time,
//! or [`LANES`] at once in SIMD lanes, [`middle_lanes`]) and faer's triangular products
//! and solves above ([`lu_middle`]). The same product with a diagonal `X` is the scaled
//! inverse transpose of [`super::inverse`].

use faer::linalg::triangular_solve as ts;
use faer::{MatRef, Par};

use super::super::lanes::{
    for_each_lane_group, lane_offsets, load_lanes, store_lanes, LANES, LANES_MAX,
};
use super::super::order::{by_order, by_order_simd};
use super::super::{colmajor_layout, colmajor_mut, for_each_matrix, Batch, LinalgElem};
use super::inverse::{scaled_inverse, PAR_INVERSE_N};
use super::{dot, swap_rows, ROWS};
use crate::layout::Layout;

/// `n` up to which [`lu_factor_backward`] and [`lu_inv_t`](super::lu_inv_t) work with their
/// own loops (above: faer's triangular products and solves).
const SMALL_BACKWARD: usize = 32;
/// `n` from which one matrix's backward may use both threads.
const PAR_BACKWARD_N: usize = 192;

/// The middle factor `X` of `gA = P L⁻ᵀ X U⁻ᵀ`.
pub(super) enum Middle<'a, T> {
    /// `X = tril(Lᵀ gL, -1) + triu(gU Uᵀ)` from the cotangent `g` of the packed factors.
    Grad(&'a [T], Batch),
    /// `X = c_i I`, `c` one scale per matrix.
    Scale(&'a [T]),
}

/// The VJP of [`lu_factor`](super::lu_factor) for square factors `lu: (*, n, n)` (packed,
/// any strides), their contiguous interchanges `piv: (*, n)` and the cotangent `g` of the
/// packed factors (same batch), without a graph:
/// `gA = P L⁻ᵀ [tril(Lᵀ gL, -1) + triu(gU Uᵀ)] U⁻ᵀ` with `gL = tril(g, -1)`, `gU = triu(g)`
/// (PyTorch's `linalg_lu_backward`, square case). Row-major result for `n <=`
/// [`SMALL_BACKWARD`], column-major above.
pub(crate) fn lu_factor_backward<T: LinalgElem>(
    lu: &[T],
    lul: &Layout,
    piv: &[i64],
    g: &[T],
    gl: &Layout,
) -> (Vec<T>, Layout) {
    lu_middle(lu, lul, piv, Middle::Grad(g, Batch::of(gl)), true)
}

/// `P L⁻ᵀ X U⁻ᵀ` for each matrix: see [`Middle`]. Row-major result for small `n` if
/// `row_major`, and for large scaled inverses; else column-major.
pub(super) fn lu_middle<T: LinalgElem>(
    lu: &[T],
    lul: &Layout,
    piv: &[i64],
    mid: Middle<'_, T>,
    row_major: bool,
) -> (Vec<T>, Layout) {
    let ba = Batch::of(lul);
    let n = ba.n;
    debug_assert_eq!(ba.m, n);
    let size = n * n;
    let small = n <= SMALL_BACKWARD;
    let scale = matches!(mid, Middle::Scale(_));
    // large scaled inverses are computed as `c A⁻¹` column-major ([`scaled_inverse`]):
    // the same memory as `c A⁻ᵀ` row-major
    let row_major = (row_major && small) || (scale && !small);
    let layout = if row_major {
        let mut dims = ba.dims.clone();
        dims.extend([n, n]);
        Layout::contiguous(crate::shape::Shape::new(dims))
    } else {
        colmajor_layout(&ba.dims, n, n)
    };
    // every path below writes each block whole (the small ones through X, the large
    // ones fill it first)
    let mut out = crate::backend::cpu::pool::overwritten(ba.len() * size, T::ZERO);
    if size == 0 {
        return (out, layout);
    }
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, par: Par| {
        let ipiv = &piv[i * n..(i + 1) * n];
        let off = ba.offset(i);
        let packed = ba.rs == 1 && ba.cs == n;
        // scratch: the factors (unless packed column-major already), then the cotangent
        // (or the small kernels' workspace); a large scaled inverse needs no workspace
        let inverse = scale && !small;
        let need = match (inverse, packed) {
            (true, true) => 0,
            (true, false) => size,
            (false, _) => 2 * size,
        };
        tmp.clear();
        tmp.resize(need, T::ZERO);
        let (a, gw) = tmp.split_at_mut(need.min(size));
        let a: &[T] = if packed {
            &lu[off..off + size]
        } else {
            ba.load(lu, i, a);
            a
        };
        if let (Middle::Scale(c), true) = (&mid, inverse) {
            scaled_inverse(a, ipiv, c[i], dst, n, ba.len() == 1 && n >= PAR_INVERSE_N);
            return;
        }
        // X into dst (column-major)
        match &mid {
            Middle::Grad(g, bg) => {
                bg.load(g, i, gw);
                if small {
                    middle_small(a, gw, dst, n);
                } else {
                    middle_blocked(a, gw, dst, n, par);
                }
            }
            Middle::Scale(c) => {
                if small {
                    dst.fill(T::ZERO);
                    for j in 0..n {
                        dst[j * n + j] = c[i];
                    }
                }
            }
        }
        let diag = matches!(mid, Middle::Scale(_));
        if small {
            outer_small(a, dst, gw, ipiv, n, diag, row_major);
        } else {
            let lu = MatRef::from_column_major_slice(a, n, n);
            // W = X U⁻ᵀ ⇔ U Wᵀ = Xᵀ
            let xt = colmajor_mut(dst, n, n).transpose_mut();
            ts::solve_upper_triangular_in_place(lu, xt, par);
            // Z = L⁻ᵀ W
            ts::solve_unit_upper_triangular_in_place(lu.transpose(), colmajor_mut(dst, n, n), par);
            swap_rows(dst, n, n, ipiv, false);
        }
    };
    let work = size * n * 4;
    if n <= LANES_MAX && ba.len() >= LANES {
        let scratch = || MiddleBufs {
            a: vec![[T::ZERO; LANES]; size],
            g: vec![[T::ZERO; LANES]; size],
            x: vec![[T::ZERO; LANES]; size],
        };
        let group = |bufs: &mut MiddleBufs<T>, first: usize, oc: &mut [T]| {
            middle_lanes(Factors::Packed(&ba, lu), n, piv, &mid, first, oc, bufs, row_major);
        };
        // (the scaled inverses of contiguous 4 x 4 factors by the wide kernel)
        let packed = ba.packed();
        let wide = |first: usize, oc: &mut [T]| {
            let (Middle::Scale(c), 4, Some(pf)) = (&mid, n, packed) else { return None };
            let to = first + oc.len() / size;
            let f = &lu[pf + first * size..pf + to * size];
            T::inv_t_wide(f, &piv[first * n..to * n], &c[first..to], oc, row_major)
        };
        for_each_lane_group(&mut out, size, work, scratch, wide, group, one);
        return (out, layout);
    }
    // a single large inverse splits its columns across threads itself
    for_each_matrix(&mut out, size, work, !scale && n >= PAR_BACKWARD_N, one);
    (out, layout)
}

/// Where [`middle_lanes`] takes the packed factors of its [`LANES`] matrices from.
#[derive(Clone, Copy)]
pub(super) enum Factors<'a, T> {
    /// Matrices `first..` of a batch of packed factors.
    Packed(&'a Batch, &'a [T]),
    /// Already in lanes (column-major per lane), as
    /// [`factor_lanes_n`](super::factor::factor_lanes_n) leaves them.
    Lanes(&'a [[T; LANES]]),
}

/// Scratch of [`middle_lanes`]: the factors, the cotangent and the result, per lane.
pub(super) struct MiddleBufs<T> {
    pub(super) a: Vec<[T; LANES]>,
    pub(super) g: Vec<[T; LANES]>,
    pub(super) x: Vec<[T; LANES]>,
}

/// `P L⁻ᵀ X U⁻ᵀ` (see [`lu_middle`]) for the [`LANES`] matrices `first..` at once
/// (`n <= LANES_MAX`), with the order a constant where it is small.
#[allow(clippy::too_many_arguments)]
pub(super) fn middle_lanes<T: LinalgElem>(
    fac: Factors<'_, T>,
    n: usize,
    piv: &[i64],
    mid: &Middle<'_, T>,
    first: usize,
    dst: &mut [T],
    bufs: &mut MiddleBufs<T>,
    row_major: bool,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        fac: Factors<'a, T>,
        n: usize,
        piv: &'a [i64],
        mid: &'a Middle<'b, T>,
        first: usize,
        dst: &'a mut [T],
        bufs: &'a mut MiddleBufs<T>,
        row_major: bool,
    }
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let Kernel { fac, n, piv, mid, first, dst, bufs, row_major } = self;
            let n = if N > 0 { N } else { n };
            middle_lanes_n(simd, fac, piv, mid, first, dst, bufs, n, row_major);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        2 3 4 8 16 => |N| Kernel::<T, N> { fac, n, piv, mid, first, dst, bufs, row_major },
        _ => Kernel::<T, 0> { fac, n, piv, mid, first, dst, bufs, row_major });
}

/// The loops of [`middle_small_n`] and [`outer_small_n`] over [`LANES`] matrices, every
/// operation over the lanes, in the same order (up to the grouping of the sums in
/// `X`'s lower triangle).
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::too_many_arguments,
    clippy::many_single_char_names
)]
#[inline(always)]
fn middle_lanes_n<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    fac: Factors<'_, T>,
    piv: &[i64],
    mid: &Middle<'_, T>,
    first: usize,
    dst: &mut [T],
    bufs: &mut MiddleBufs<T>,
    n: usize,
    row_major: bool,
) {
    let size = n * n;
    let x = &mut bufs.x[..size];
    let a: &[[T; LANES]] = match fac {
        Factors::Packed(ba, lu) => {
            let a = &mut bufs.a[..size];
            load_lanes(simd, a, lu, &lane_offsets(ba, first), (ba.rs, ba.cs), n, n);
            a
        }
        Factors::Lanes(f) => &f[..size],
    };
    let g: &[[T; LANES]] = match mid {
        Middle::Grad(gv, bg) => {
            let g = &mut bufs.g[..size];
            load_lanes(simd, g, gv, &lane_offsets(bg, first), (bg.rs, bg.cs), n, n);
            g
        }
        Middle::Scale(_) => &[],
    };
    let diag = matches!(mid, Middle::Scale(_));
    let mut scale = [T::ZERO; LANES];
    match mid {
        Middle::Grad(..) => {
            //   i <= j: X_ij = Σ_{k>=j} U_jk G_ik;  i > j: X_ij = G_ij + Σ_{k>i} L_ki G_kj
            for j in 0..n {
                for i in 0..=j {
                    x[j * n + i] = [T::ZERO; LANES];
                }
                for k in j..n {
                    let u = a[k * n + j];
                    for i in 0..=j {
                        let gv = g[k * n + i];
                        let v = &mut x[j * n + i];
                        for w in 0..LANES {
                            v[w] = v[w] + u[w] * gv[w];
                        }
                    }
                }
                for i in j + 1..n {
                    let mut s = g[j * n + i];
                    for k in i + 1..n {
                        let (l, gv) = (a[i * n + k], g[j * n + k]);
                        for w in 0..LANES {
                            s[w] = s[w] + l[w] * gv[w];
                        }
                    }
                    x[j * n + i] = s;
                }
            }
        }
        Middle::Scale(c) => {
            // X = c_w I is not stored: W's substitution starts each column from it (storing
            // it, or zeroing X first, was a visible share of the kernel at n = 4)
            scale.copy_from_slice(&c[first..first + LANES]);
        }
    }
    let diag = diag.then_some(&scale);
    // W = X U⁻ᵀ, from the last column (a diagonal X keeps W zero above row k, so row i
    // takes the columns k <= i only)
    for j in (0..n).rev() {
        let d = a[j * n + j];
        let mut inv = [T::ZERO; LANES];
        for w in 0..LANES {
            inv[w] = T::ONE / d[w];
        }
        let mut i0 = 0;
        while i0 + ROWS <= n {
            w_rows::<T, ROWS>(a, x, n, j, i0, diag, &inv);
            i0 += ROWS;
        }
        for i in i0..n {
            w_rows::<T, 1>(a, x, n, j, i, diag, &inv);
        }
    }
    // Z = L⁻ᵀ W (Z[i, :] = W[i, :] − Σ_{k>i} L_ki Z[k, :]), from the last row
    for i in (0..n).rev() {
        let mut c0 = 0;
        while c0 + ROWS <= n {
            z_cols::<T, ROWS>(a, x, n, i, c0);
            c0 += ROWS;
        }
        for c in c0..n {
            z_cols::<T, 1>(a, x, n, i, c);
        }
    }
    // Z out of the lanes, then P Z: each matrix's rows swapped in reverse order of its
    // interchanges (in its own block, where they are contiguous or at a fixed stride)
    store_lanes(simd, x, dst, n, row_major);
    for (w, d) in dst.chunks_exact_mut(size).enumerate() {
        let ipiv = &piv[(first + w) * n..(first + w + 1) * n];
        for j in (0..n).rev() {
            let p = (ipiv[j] - 1) as usize;
            if p != j {
                for c in 0..n {
                    let (a, b) =
                        if row_major { (j * n + c, p * n + c) } else { (c * n + j, c * n + p) };
                    d.swap(a, b);
                }
            }
        }
    }
}

/// Rows `i0..i0 + R` of column `j` of `W = X U⁻ᵀ` (see [`middle_lanes_n`]; `x` holds
/// `X`, and `W` from column `j + 1` on): `W_ij = (X_ij − Σ_k U_jk W_ik) / U_jj` over
/// `k = j + 1..n` in increasing order, with `inv = 1 / U_jj`. With `diag = Some(c)`, `X`
/// is `c_w I`, taken from `c` and not from `x` (whose column `j` need not be set), and
/// the sum stops at `k <= i`.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern, clippy::too_many_arguments)]
#[inline(always)]
fn w_rows<T: LinalgElem, const R: usize>(
    a: &[[T; LANES]],
    x: &mut [[T; LANES]],
    n: usize,
    j: usize,
    i0: usize,
    diag: Option<&[T; LANES]>,
    inv: &[T; LANES],
) {
    let mut acc = [[T::ZERO; LANES]; R];
    for r in 0..R {
        acc[r] = match diag {
            Some(c) if i0 + r == j => *c,
            Some(_) => [T::ZERO; LANES],
            None => x[j * n + i0 + r],
        };
    }
    // the terms every row takes: all k, or k <= i0 when diag
    let end = if diag.is_some() { i0 + 1 } else { n };
    for k in j + 1..end {
        let u = a[k * n + j];
        for r in 0..R {
            let v = x[k * n + i0 + r];
            for w in 0..LANES {
                acc[r][w] = acc[r][w] - u[w] * v[w];
            }
        }
    }
    if diag.is_some() {
        // row i0 + r's own last terms, k in i0 + 1..=i0 + r
        for r in 1..R {
            for k in (j + 1).max(i0 + 1)..=i0 + r {
                let (u, v) = (a[k * n + j], x[k * n + i0 + r]);
                for w in 0..LANES {
                    acc[r][w] = acc[r][w] - u[w] * v[w];
                }
            }
        }
    }
    for r in 0..R {
        let y = &mut x[j * n + i0 + r];
        for w in 0..LANES {
            y[w] = acc[r][w] * inv[w];
        }
    }
}

/// Columns `c0..c0 + R` of row `i` of `Z = L⁻ᵀ W` (see [`middle_lanes_n`]; `x` holds `W`,
/// and `Z` from row `i + 1` on): `Z_ic = W_ic − Σ_{k>i} L_ki Z_kc` in increasing `k`.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn z_cols<T: LinalgElem, const R: usize>(
    a: &[[T; LANES]],
    x: &mut [[T; LANES]],
    n: usize,
    i: usize,
    c0: usize,
) {
    let mut acc = [[T::ZERO; LANES]; R];
    for r in 0..R {
        acc[r] = x[(c0 + r) * n + i];
    }
    for k in i + 1..n {
        let l = a[i * n + k];
        for r in 0..R {
            let v = x[(c0 + r) * n + k];
            for w in 0..LANES {
                acc[r][w] = acc[r][w] - l[w] * v[w];
            }
        }
    }
    for r in 0..R {
        x[(c0 + r) * n + i] = acc[r];
    }
}

/// `X = tril(Lᵀ gL, -1) + triu(gU Uᵀ)` into `x` for one small matrix (`a` the packed
/// factors, `g` the cotangent; all column-major).
fn middle_small<T: LinalgElem>(a: &[T], g: &[T], x: &mut [T], n: usize) {
    by_order!(n;
        1 2 3 4 => |N| middle_small_n::<T, N>(a, g, x, n),
        _ => middle_small_n::<T, 0>(a, g, x, n));
}

/// [`middle_small`] with `n = N` known at compile time when `N > 0`.
#[inline(always)]
fn middle_small_n<T: LinalgElem, const N: usize>(a: &[T], g: &[T], x: &mut [T], n: usize) {
    let n = if N > 0 { N } else { n };
    let (a, g, x) = (&a[..n * n], &g[..n * n], &mut x[..n * n]);
    //   i <= j: X_ij = Σ_{k>=j} U_jk G_ik (column updates);
    //   i > j:  X_ij = G_ij + Σ_{k>i} L_ki G_kj (contiguous dot products)
    for (j, xc) in x.chunks_exact_mut(n).enumerate() {
        let (up, low) = xc.split_at_mut(j + 1);
        up.fill(T::ZERO);
        for k in j..n {
            let u = a[k * n + j];
            for (v, &gv) in up.iter_mut().zip(&g[k * n..k * n + j + 1]) {
                *v += u * gv;
            }
        }
        for (r, v) in low.iter_mut().enumerate() {
            let i = j + 1 + r;
            *v = g[j * n + i] + dot(&a[i * n + i + 1..(i + 1) * n], &g[j * n + i + 1..(j + 1) * n]);
        }
    }
}

/// `P L⁻ᵀ X U⁻ᵀ` in place of `x` for one small matrix (`a` the packed factors), written
/// back row-major if `row_major` (else column-major); `tmp` is scratch of `n²`. `diag`: `X`
/// is diagonal (so `X U⁻ᵀ` is lower triangular).
fn outer_small<T: LinalgElem>(
    a: &[T],
    x: &mut [T],
    tmp: &mut [T],
    ipiv: &[i64],
    n: usize,
    diag: bool,
    row_major: bool,
) {
    by_order!(n;
        1 2 3 4 => |N| outer_small_n::<T, N>(a, x, tmp, ipiv, n, diag, row_major),
        _ => outer_small_n::<T, 0>(a, x, tmp, ipiv, n, diag, row_major));
}

/// [`outer_small`] with `n = N` known at compile time when `N > 0`.
#[inline(always)]
fn outer_small_n<T: LinalgElem, const N: usize>(
    a: &[T],
    x: &mut [T],
    tmp: &mut [T],
    ipiv: &[i64],
    n: usize,
    diag: bool,
    row_major: bool,
) {
    let n = if N > 0 { N } else { n };
    let (a, x, tmp) = (&a[..n * n], &mut x[..n * n], &mut tmp[..n * n]);
    // W = X U⁻ᵀ (W Uᵀ = X: X[:, j] = Σ_{k>=j} U_jk W[:, k]), from the last column; with
    // a diagonal X, W[:, k] is zero above row k
    for j in (0..n).rev() {
        for k in j + 1..n {
            let u = a[k * n + j];
            let from = if diag { k } else { 0 };
            let (left, right) = x.split_at_mut(k * n);
            for (w, &v) in left[j * n + from..(j + 1) * n].iter_mut().zip(&right[from..n]) {
                *w -= u * v;
            }
        }
        let inv = T::ONE / a[j * n + j];
        for w in &mut x[j * n..(j + 1) * n] {
            *w *= inv;
        }
    }
    // Z = L⁻ᵀ W row by row (Lᵀ unit upper: Z[i, :] = W[i, :] − Σ_{k>i} L_ki Z[k, :]), on
    // a row-major copy so that every update runs along a row
    for r in 0..n {
        for c in 0..n {
            tmp[r * n + c] = x[c * n + r];
        }
    }
    for i in (0..n).rev() {
        let (head, tail) = tmp.split_at_mut((i + 1) * n);
        let zi = &mut head[i * n..];
        for (&l, zk) in a[i * n + i + 1..(i + 1) * n].iter().zip(tail.chunks_exact(n)) {
            if l != T::ZERO {
                for (z, &v) in zi.iter_mut().zip(zk) {
                    *z -= l * v;
                }
            }
        }
    }
    // P Z (rows swapped in reverse order), row-major
    for j in (0..n).rev() {
        let p = (ipiv[j] - 1) as usize;
        if p != j {
            let (lo, hi) = tmp.split_at_mut(p * n);
            lo[j * n..(j + 1) * n].swap_with_slice(&mut hi[..n]);
        }
    }
    if row_major {
        x.copy_from_slice(tmp);
    } else {
        for c in 0..n {
            for r in 0..n {
                x[c * n + r] = tmp[r * n + c];
            }
        }
    }
}

/// `X = tril(Lᵀ gL, -1) + triu(gU Uᵀ)` into `x` by faer's triangular products (`a` the
/// packed factors, `g` the cotangent; all column-major).
fn middle_blocked<T: LinalgElem>(a: &[T], g: &[T], x: &mut [T], n: usize, par: Par) {
    use faer::linalg::matmul::triangular::{matmul, BlockStructure as B};
    use faer::Accum;
    let lu = MatRef::from_column_major_slice(a, n, n);
    let gm = MatRef::from_column_major_slice(g, n, n);
    // strict lower part: Lᵀ gL (Lᵀ unit upper, read from the strictly lower triangle)
    matmul(
        colmajor_mut(x, n, n),
        B::StrictTriangularLower,
        Accum::Replace,
        lu.transpose(),
        B::UnitTriangularUpper,
        gm,
        B::StrictTriangularLower,
        T::ONE,
        par,
    );
    // upper part with the diagonal: gU Uᵀ
    matmul(
        colmajor_mut(x, n, n),
        B::TriangularUpper,
        Accum::Replace,
        gm,
        B::TriangularUpper,
        lu.transpose(),
        B::TriangularLower,
        T::ONE,
        par,
    );
}
