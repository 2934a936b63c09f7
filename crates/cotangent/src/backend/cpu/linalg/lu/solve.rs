//! The solve with packed factors (LAPACK's `getrs`, [`lu_solve`]): direct substitution
//! for small orders, one system at a time ([`solve_small`]) or [`LANES`] at once in SIMD
//! lanes ([`solve_lanes`], each system's interchanges applied as a row permutation when
//! its right-hand sides are loaded or its solutions stored); faer's blocked triangular
//! solves above.

use faer::linalg::triangular_solve as ts;
use faer::{MatRef, Par};

use super::super::lanes::{
    for_each_lane_group, gather, lane_offsets, lane_slices, load_lanes, LANES, LANES_MAX,
};
use super::super::order::{by_order, by_order_simd};
use super::super::{colmajor_layout, colmajor_mut, for_each_matrix, Batch, LinalgElem};
use super::PAR_WORK;
use super::{dot, swap_rows};
use crate::layout::Layout;

/// `n` up to which [`lu_solve`] substitutes with its own loops.
const SMALL_SOLVE: usize = 32;
/// Solves `A X = B` (or `Aᵀ X = B` if `adjoint`) in place in `x` (`n x k`, column-major)
/// with `A = P L U` packed in `lu`, by faer's blocked triangular solves.
fn solve_blocked<T: LinalgElem>(
    lu: MatRef<'_, T>,
    ipiv: &[i64],
    x: &mut [T],
    n: usize,
    k: usize,
    adjoint: bool,
    par: Par,
) {
    if adjoint {
        ts::solve_lower_triangular_in_place(lu.transpose(), colmajor_mut(x, n, k), par);
        ts::solve_unit_upper_triangular_in_place(lu.transpose(), colmajor_mut(x, n, k), par);
        swap_rows(x, n, k, ipiv, false);
    } else {
        swap_rows(x, n, k, ipiv, true);
        ts::solve_unit_lower_triangular_in_place(lu, colmajor_mut(x, n, k), par);
        ts::solve_upper_triangular_in_place(lu, colmajor_mut(x, n, k), par);
    }
}

/// [`solve_blocked`] by direct substitution for small `n`, with the factors `lu`
/// column-major (`n x n`): every inner loop runs along a column of `lu`.
fn solve_small<T: LinalgElem>(lu: &[T], ipiv: &[i64], x: &mut [T], n: usize, adjoint: bool) {
    // constant sizes up to 4 let the compiler unroll the substitutions
    by_order!(n;
        1 2 3 4 => |N| solve_small_n::<T, N>(lu, ipiv, x, n, adjoint),
        _ => solve_small_n::<T, 0>(lu, ipiv, x, n, adjoint));
}

/// [`solve_small`] with `n = N` known at compile time when `N > 0`.
#[inline(always)]
fn solve_small_n<T: LinalgElem, const N: usize>(
    lu: &[T],
    ipiv: &[i64],
    x: &mut [T],
    n: usize,
    adjoint: bool,
) {
    let n = if N > 0 { N } else { n };
    let lu = &lu[..n * n];
    let ipiv = &ipiv[..n];
    let k = x.len() / n.max(1);
    if !adjoint {
        swap_rows(x, n, k, ipiv, true);
    }
    for col in x.chunks_exact_mut(n) {
        if adjoint {
            // Uᵀ y = b (lower; row i of Uᵀ is column i of U), then Lᵀ x = y (unit upper)
            for i in 0..n {
                let s = dot(&lu[i * n..i * n + i], &col[..i]);
                col[i] = (col[i] - s) / lu[i * n + i];
            }
            for i in (0..n).rev() {
                let s = dot(&lu[i * n + i + 1..(i + 1) * n], &col[i + 1..]);
                col[i] -= s;
            }
        } else {
            // L y = b (unit lower), then U x = y, column-oriented
            for j in 0..n {
                let xj = col[j];
                for (y, &l) in col[j + 1..].iter_mut().zip(&lu[j * n + j + 1..(j + 1) * n]) {
                    *y -= l * xj;
                }
            }
            for j in (0..n).rev() {
                let xj = col[j] / lu[j * n + j];
                col[j] = xj;
                for (y, &u) in col[..j].iter_mut().zip(&lu[j * n..j * n + j]) {
                    *y -= u * xj;
                }
            }
        }
    }
    if adjoint {
        swap_rows(x, n, k, ipiv, false);
    }
}

/// Solves `A X = B` (`Aᵀ X = B` if `adjoint`) for each `A = P L U` given by its packed
/// factors `lu: (*, n, n)` and interchanges `piv` (contiguous `(*, n)`, checked in
/// `1..=n`), with `b: (*, n, k)` of the same batch dims. The result is column-major.
pub(crate) fn lu_solve<T: LinalgElem>(
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
    let layout = colmajor_layout(&bb.dims, rows, k);
    let size = rows * k;
    // every right-hand side is loaded into its block before it is solved
    let mut out = crate::backend::cpu::pool::overwritten(bb.len() * size, T::ZERO);
    let work = n * n * k.max(1);
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, par: Par| {
        bb.load(b, i, dst);
        let ipiv = &piv[i * n..(i + 1) * n];
        if n <= SMALL_SOLVE {
            let off = ba.offset(i);
            if ba.rs == 1 && ba.cs == n {
                // column-major already (the factors lu_factor returns): read in place
                solve_small(&lu[off..off + n * n], ipiv, dst, n, adjoint);
            } else {
                tmp.clear();
                tmp.resize(n * n, T::ZERO);
                ba.load(lu, i, tmp);
                solve_small(tmp, ipiv, dst, n, adjoint);
            }
        } else {
            solve_blocked(ba.mat(lu, i, tmp), ipiv, dst, n, k, adjoint, par);
        }
    };
    if n <= LANES_MAX && size > 0 && bb.len() >= LANES {
        let scratch = || (vec![[T::ZERO; LANES]; n * n], vec![[T::ZERO; LANES]; size]);
        let group = |bufs: &mut (Vec<_>, Vec<_>), first: usize, oc: &mut [T]| {
            let sys = LaneSystems { lu: (&ba, lu), piv, b: (&bb, b), first };
            solve_lanes(&sys, oc, &mut bufs.0, &mut bufs.1, k, adjoint);
        };
        for_each_lane_group(&mut out, size, work, scratch, |_, _| None, group, one);
        return (out, layout);
    }
    for_each_matrix(&mut out, size, work, work >= PAR_WORK, one);
    (out, layout)
}

/// [`LANES`] consecutive systems of a batched [`lu_solve`]: the factors, the pivots and
/// the right-hand sides, from matrix `first`.
struct LaneSystems<'a, T> {
    lu: (&'a Batch, &'a [T]),
    piv: &'a [i64],
    b: (&'a Batch, &'a [T]),
    first: usize,
}

/// [`solve_small`] on [`LANES`] systems at once (`n <= LANES_MAX`), every operation over
/// the lanes; the order a constant where it is small.
fn solve_lanes<T: LinalgElem>(
    sys: &LaneSystems<'_, T>,
    dst: &mut [T],
    lub: &mut [[T; LANES]],
    xb: &mut [[T; LANES]],
    k: usize,
    adjoint: bool,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        sys: &'a LaneSystems<'b, T>,
        dst: &'a mut [T],
        lub: &'a mut [[T; LANES]],
        xb: &'a mut [[T; LANES]],
        k: usize,
        adjoint: bool,
    }
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let Kernel { sys, dst, lub, xb, k, adjoint } = self;
            let n = if N > 0 { N } else { sys.lu.0.n };
            solve_lanes_n(simd, sys, dst, lub, xb, n, k, adjoint);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), sys.lu.0.n;
        2 3 4 8 16 => |N| Kernel::<T, N> { sys, dst, lub, xb, k, adjoint },
        _ => Kernel::<T, 0> { sys, dst, lub, xb, k, adjoint });
}

/// The row permutation of each of the [`LANES`] systems `first..` from its interchanges
/// (`piv`, `n` per system, 1-based, in `1..=n`, `n <= 16`): `(Pᵀ y)[r] = y[perm_at(p, r)]`
/// (the interchanges applied in order to `0..n`), as 4-bit fields of one word per lane.
/// Each swap is a few shifts and masks over the lanes in registers (swapping bytes in
/// memory made a chain of dependent loads and stores: a batched 4 x 4 solve's fwd+bwd
/// took measurably longer).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(super) fn lane_perms(piv: &[i64], first: usize, n: usize) -> [u64; LANES] {
    debug_assert!(n <= 16);
    let mut offs = [0; LANES];
    for (w, o) in offs.iter_mut().enumerate() {
        *o = (first + w) * n;
    }
    let rows = lane_slices(piv, &offs, n);
    let mut x = [0xFEDC_BA98_7654_3210u64; LANES];
    for j in 0..n {
        let sj = 4 * j as u64;
        let mut sq = [0u64; LANES];
        for w in 0..LANES {
            sq[w] = 4 * (rows[w][j] - 1) as u64;
        }
        for w in 0..LANES {
            // fields j and q exchanged: both xor-ed with their difference (none if q = j)
            let t = ((x[w] >> sj) ^ (x[w] >> sq[w])) & 15;
            x[w] ^= (t << sj) | (t << sq[w]);
        }
    }
    x
}

/// Field `r` of a [`lane_perms`] word.
#[inline(always)]
fn perm_at(p: u64, r: usize) -> usize {
    ((p >> (4 * r)) & 15) as usize
}

/// The substitutions of [`solve_small_n`] over [`LANES`] systems (`x` in `xb`, `n x k`
/// column-major per lane; the factors in `lub`, column-major per lane). The
/// interchanges are applied as each lane's row permutation, when the right-hand sides
/// are loaded (`Pᵀ B`) or the solutions stored (`P Z`, adjoint), with no branches.
#[inline(always)]
fn solve_lanes_n<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    sys: &LaneSystems<'_, T>,
    dst: &mut [T],
    lub: &mut [[T; LANES]],
    xb: &mut [[T; LANES]],
    n: usize,
    k: usize,
    adjoint: bool,
) {
    let (ba, lu) = sys.lu;
    let lub = &mut lub[..n * n];
    load_lanes(simd, lub, lu, &lane_offsets(ba, sys.first), (ba.rs, ba.cs), n, n);
    let perm = lane_perms(sys.piv, sys.first, n);
    solve_from_lanes(simd, lub, &perm, sys.first, sys.b, dst, xb, n, k, adjoint);
}

/// [`solve_lanes_n`] with the factors already in lanes (`lub`) and the row permutations
/// of their interchanges in `perm` ([`lane_perms`]): the right-hand sides `b` of systems
/// `first..` loaded into `xb`, the solutions stored into `dst` (`n x k` column-major
/// each, as many systems as it holds).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn solve_from_lanes<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    lub: &[[T; LANES]],
    perm: &[u64; LANES],
    first: usize,
    (bb, b): (&Batch, &[T]),
    dst: &mut [T],
    xb: &mut [[T; LANES]],
    n: usize,
    k: usize,
    adjoint: bool,
) {
    let xb = &mut xb[..n * k];
    let ob = lane_offsets(bb, first);
    let (rs, cs) = (bb.rs, bb.cs);
    if adjoint || (rs == 0 && cs == 0) {
        // (a broadcast value is left as it is by a permutation)
        load_lanes(simd, xb, b, &ob, (rs, cs), n, k);
    } else if rs == 1 && (cs == n || k == 1) {
        let src = lane_slices(b, &ob, n * k);
        for c in 0..k {
            for r in 0..n {
                xb[c * n + r] = gather(|w| src[w][c * n + perm_at(perm[w], r)]);
            }
        }
    } else {
        for c in 0..k {
            for r in 0..n {
                xb[c * n + r] = gather(|w| b[ob[w] + perm_at(perm[w], r) * rs + c * cs]);
            }
        }
    }
    substitute_lanes(xb, lub, n, adjoint);
    for (w, d) in dst.chunks_exact_mut(n * k).enumerate() {
        if adjoint {
            let p = perm[w];
            for c in 0..k {
                for r in 0..n {
                    d[c * n + perm_at(p, r)] = xb[c * n + r][w];
                }
            }
        } else {
            for (o, x) in d.iter_mut().zip(xb.iter()) {
                *o = x[w];
            }
        }
    }
}

/// The substitutions of [`solve_lanes_n`] in place in `xb` (`n x k` per lane), with the
/// factors in `lub`.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn substitute_lanes<T: LinalgElem>(
    xb: &mut [[T; LANES]],
    lub: &[[T; LANES]],
    n: usize,
    adjoint: bool,
) {
    for col in xb.chunks_exact_mut(n) {
        if adjoint {
            // Uᵀ y = b, then Lᵀ x = y
            for i in 0..n {
                let mut s = [T::ZERO; LANES];
                for p in 0..i {
                    let (u, y) = (lub[i * n + p], col[p]);
                    for w in 0..LANES {
                        s[w] = s[w] + u[w] * y[w];
                    }
                }
                let d = lub[i * n + i];
                for w in 0..LANES {
                    col[i][w] = (col[i][w] - s[w]) / d[w];
                }
            }
            for i in (0..n).rev() {
                let mut s = [T::ZERO; LANES];
                for p in i + 1..n {
                    let (l, y) = (lub[i * n + p], col[p]);
                    for w in 0..LANES {
                        s[w] = s[w] + l[w] * y[w];
                    }
                }
                for w in 0..LANES {
                    col[i][w] = col[i][w] - s[w];
                }
            }
        } else {
            // L y = b (unit lower), then U x = y, column-oriented
            for j in 0..n {
                let xj = col[j];
                for i in j + 1..n {
                    let l = lub[j * n + i];
                    for w in 0..LANES {
                        col[i][w] = col[i][w] - l[w] * xj[w];
                    }
                }
            }
            for j in (0..n).rev() {
                let d = lub[j * n + j];
                let mut xj = col[j];
                for w in 0..LANES {
                    xj[w] = xj[w] / d[w];
                }
                col[j] = xj;
                for i in 0..j {
                    let u = lub[j * n + i];
                    for w in 0..LANES {
                        col[i][w] = col[i][w] - u[w] * xj[w];
                    }
                }
            }
        }
    }
}
