//! LU with partial pivoting (LAPACK `getrf` semantics), its solver (`getrs`), and the
//! SVD-based cofactor matrix that `det`'s gradient needs at singular matrices.
//!
//! Small matrices (`min(m, n) <= UNBLOCKED`) go through an allocation-free right-looking
//! loop ([`lu_unblocked`]); larger ones through faer's recursive blocked LU, whose row
//! permutation is converted back to LAPACK's interchange sequence. faer divides by a zero
//! pivot (filling the rest with NaN) where LAPACK skips the column, so a factorisation
//! that meets an exactly zero pivot is redone by the unblocked loop, which matches LAPACK;
//! so is one with a subnormal pivot, whose reciprocal overflows (the unblocked loop then
//! divides by it, as LAPACK's `dgetf2` does).
//!
//! Batches of small square matrices (`n <=` `LANES_MAX`, at least [`LANES`] of them) run
//! [`LANES`] at a time, one matrix per SIMD lane ([`factor_lanes`], [`solve_lanes`],
//! [`middle_lanes`]), with the operations of the one-matrix loops in their order. Where
//! the factors only feed a following step, fused passes keep them in the lanes:
//! [`lu_inv`] (factorise and invert) and [`lu_factor_solve`] (factorise and solve, the
//! factors saved in lane order for the solve's backward, [`lu_solve_saved`]).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor as pp;
use faer::linalg::triangular_solve as ts;
use faer::{MatRef, Par, Spec};

use super::lanes::{
    for_each_lane_group, gather, group_batch, lane_offsets, lane_slices, lane_split, lane_task_len,
    load_lanes, store_lanes, LANES, LANES_MAX,
};
use super::order::by_order;
use super::{colmajor_layout, colmajor_mut, for_each_matrix, Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::{run_tasks, with_par, Parts};
use crate::layout::Layout;
use crate::shape::Shape;
use std::sync::Mutex;

/// `min(m, n)` up to which the unblocked loop is used.
const UNBLOCKED: usize = 48;
/// `n` up to which [`lu_solve`] substitutes with its own loops.
const SMALL_SOLVE: usize = 32;
/// Work per matrix above which faer may use both threads.
const PAR_WORK: usize = 512 * 512 * 512;

/// LAPACK's `getf2` on the column-major `m x n` matrix `a` (leading dimension `m`):
/// `ipiv` gets the 1-based row interchanges; returns `info` (0, or the 1-based index of
/// the first exactly zero pivot, whose column is then left unscaled as LAPACK does).
/// NaN never stops the loop: every step is a fixed amount of work.
pub(crate) fn lu_unblocked<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    ipiv: &mut [i64],
) -> i64 {
    // square matrices up to 4 x 4 get a copy of the loop with constant sizes, which the
    // compiler unrolls
    by_order!(if m == n { n } else { 0 };
        1 2 3 4 => |N| lu_unblocked_n::<T, N>(a, m, n, ipiv),
        _ => lu_unblocked_n::<T, 0>(a, m, n, ipiv))
}

/// [`lu_unblocked`] for `N x N` matrices when `N > 0` (sizes known at compile time),
/// for any `m x n` when `N = 0`.
#[inline(always)]
fn lu_unblocked_n<T: LinalgElem, const N: usize>(
    a: &mut [T],
    m: usize,
    n: usize,
    ipiv: &mut [i64],
) -> i64 {
    let (m, n) = if N > 0 { (N, N) } else { (m, n) };
    let a = &mut a[..m * n];
    let k = m.min(n);
    let mut info = 0;
    for j in 0..k {
        let cj = j * m;
        // the first row of largest absolute value in column j, from row j
        let (mut p, mut max) = (j, a[cj + j].abs());
        for (i, v) in a[cj + j + 1..cj + m].iter().enumerate() {
            let v = v.abs();
            if v > max {
                max = v;
                p = j + 1 + i;
            }
        }
        ipiv[j] = (p + 1) as i64;
        if a[cj + p] != T::ZERO {
            if p != j {
                for col in a.chunks_exact_mut(m) {
                    col.swap(j, p);
                }
            }
            let d = a[cj + j];
            if d.abs() >= <T as faer::traits::RealField>::min_positive_impl() {
                let inv = T::ONE / d;
                for v in &mut a[cj + j + 1..cj + m] {
                    *v *= inv;
                }
            } else {
                // (a subnormal pivot's reciprocal overflows: LAPACK's dgetf2 divides)
                for v in &mut a[cj + j + 1..cj + m] {
                    *v /= d;
                }
            }
        } else if info == 0 {
            info = (j + 1) as i64;
        }
        // rank-1 update of the trailing columns (all of them: U's extra block when wide)
        let (left, right) = a.split_at_mut(cj + m);
        let lcol = &left[cj + j + 1..cj + m];
        for col in right.chunks_exact_mut(m) {
            let (top, below) = col.split_at_mut(j + 1);
            let f = top[j];
            if f != T::ZERO {
                for (x, &l) in below.iter_mut().zip(lcol) {
                    *x -= l * f;
                }
            }
        }
    }
    info
}

/// The AVX-512 kernels of `lu_wide` for the whole lane groups of 4 x 4 matrices of the
/// LU paths, where the element type (`f64`) and the CPU allow them: each gives the
/// outputs of the lane kernel it stands in for, bit for bit, or declines (`None` or
/// `false`, having written nothing) where it does not apply. A trait because the kernels
/// exist for `f64` alone and the LU paths are generic over the element type.
pub(crate) trait WideLu: Copy {
    /// The whole lane groups of one task of [`lu_factor_solve`] with `n = 4` (`a`: the
    /// matrices' contiguous column-major blocks; `b`: their `4 x k` right-hand sides, the
    /// same way; the outputs as [`factor_solve_lanes`] writes them, group after group) by
    /// the AVX-512 kernel of `lu_wide`, where the element type (`f64`) and the CPU allow
    /// it: the same outputs. Returns the groups it left unwritten (a lane with a zero
    /// pivot or a factor that is not finite), for the portable kernel; `None`, having
    /// written nothing, where it does not apply.
    #[allow(clippy::too_many_arguments)]
    fn factor_solve_wide(
        _a: &[Self],
        _b: &[Self],
        _k: usize,
        _adjoint: bool,
        _factors: &mut [Self],
        _perms: &mut [i64],
        _info: &mut [i64],
        _x: &mut [Self],
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_solve_saved`] with `n = 4` (the saved
    /// factors and interchanges of the groups; `b` and `y`: the contiguous column-major
    /// `4 x k` blocks of the right-hand sides, or `Err` of the one value of a broadcast
    /// scalar, and of the outer products' other operand; the outputs as that function
    /// writes them) by the AVX-512 kernel of `lu_wide`, where the element type (`f64`)
    /// and the CPU allow it: the same outputs. `false`, having written nothing, where it
    /// does not apply.
    #[allow(clippy::too_many_arguments)]
    fn solve_saved_wide(
        _factors: &[Self],
        _perms: &[i64],
        _b: Result<&[Self], Self>,
        _k: usize,
        _adjoint: bool,
        _y: Option<&[Self]>,
        _x: &mut [Self],
        _outer: Option<&mut [Self]>,
    ) -> bool {
        false
    }

    /// The whole lane groups of one range of [`lu_factor_impl`] with `n = 4` (`a`: the
    /// matrices' contiguous column-major blocks; the outputs as that function writes
    /// them, with each matrix's determinant into `det`) by the AVX-512 kernel of
    /// `lu_wide`, where the element type (`f64`) and the CPU allow it: the same outputs
    /// as [`factor_lanes`]. Returns the groups it left unwritten, for the portable kernel;
    /// `None`, having written nothing, where it does not apply.
    fn factor_wide(
        _a: &[Self],
        _factors: &mut [Self],
        _ipiv: &mut [i64],
        _info: &mut [i64],
        _det: Option<(&mut DetOut<'_, Self>, DetSpec)>,
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_middle`]'s scaled inverses with `n = 4`
    /// (the packed factors, 1-based interchanges and scales of its matrices; the results'
    /// blocks, row-major if `row_major`) by the AVX-512 kernel of `lu_wide`, where the
    /// element type and the CPU allow it: the same results as [`middle_lanes`]. Returns
    /// the groups it left unwritten; `None`, having written nothing, where it does not
    /// apply.
    fn inv_t_wide(
        _factors: &[Self],
        _ipiv: &[i64],
        _c: &[Self],
        _out: &mut [Self],
        _row_major: bool,
    ) -> Option<Vec<usize>> {
        None
    }

    /// The whole lane groups of one task of [`lu_inv`] with `n = 4` (`a`: the contiguous
    /// column-major blocks it factorises) by the AVX-512 kernel of `lu_wide`, where the
    /// element type and the CPU allow it: the same inverses and `info` as its lane
    /// kernel. Returns the groups it left unwritten; `None`, having written nothing,
    /// where it does not apply.
    fn invert_wide(_a: &[Self], _out: &mut [Self], _info: &mut [i64]) -> Option<Vec<usize>> {
        None
    }
}

impl WideLu for f32 {}

impl WideLu for f64 {
    #[cfg(target_arch = "x86_64")]
    fn factor_solve_wide(
        a: &[f64],
        b: &[f64],
        k: usize,
        adjoint: bool,
        factors: &mut [f64],
        perms: &mut [i64],
        info: &mut [i64],
        x: &mut [f64],
    ) -> Option<Vec<usize>> {
        let run = super::lu_wide::Run { a, b, k, adjoint, factors, perms, info, x };
        super::lu_wide::factor_solve(run)
    }

    #[cfg(target_arch = "x86_64")]
    fn solve_saved_wide(
        factors: &[f64],
        perms: &[i64],
        b: Result<&[f64], f64>,
        k: usize,
        adjoint: bool,
        y: Option<&[f64]>,
        x: &mut [f64],
        outer: Option<&mut [f64]>,
    ) -> bool {
        let b = b.map_or_else(super::lu_wide::Rhs::Splat, super::lu_wide::Rhs::Blocks);
        let run = super::lu_wide::SavedRun { factors, perms, b, k, adjoint, y, x, outer };
        super::lu_wide::solve_saved(run)
    }

    #[cfg(target_arch = "x86_64")]
    fn factor_wide(
        a: &[f64],
        factors: &mut [f64],
        ipiv: &mut [i64],
        info: &mut [i64],
        det: Option<(&mut DetOut<'_, f64>, DetSpec)>,
    ) -> Option<Vec<usize>> {
        super::lu_wide::factor_det(super::lu_wide::FactorRun { a, factors, ipiv, info, det })
    }

    #[cfg(target_arch = "x86_64")]
    fn inv_t_wide(
        factors: &[f64],
        ipiv: &[i64],
        c: &[f64],
        out: &mut [f64],
        row_major: bool,
    ) -> Option<Vec<usize>> {
        super::lu_wide::inv_t(super::lu_wide::InvRun { factors, ipiv, c, out, row_major })
    }

    #[cfg(target_arch = "x86_64")]
    fn invert_wide(a: &[f64], out: &mut [f64], info: &mut [i64]) -> Option<Vec<usize>> {
        super::lu_wide::invert(super::lu_wide::InvertRun { a, out, info })
    }
}

/// LU of the square matrices `first..first + LANES` of `ba` (`n <= LANES_MAX`) into
/// `dst` (`LANES` column-major blocks), `ipiv` and `info`, with the order a constant
/// where it is small (unrolled loops) and the widest instruction set the CPU has.
#[allow(clippy::too_many_arguments)]
fn factor_lanes<T: LinalgElem>(
    ba: &Batch,
    a: &[T],
    first: usize,
    dst: Option<&mut [T]>,
    ipiv: &mut [i64],
    info: &mut [i64],
    buf: &mut [[T; LANES]],
    det: Option<(DetOut<'_, T>, DetSpec)>,
) {
    struct Kernel<'a, T, const N: usize> {
        ba: &'a Batch,
        a: &'a [T],
        first: usize,
        dst: Option<&'a mut [T]>,
        ipiv: &'a mut [i64],
        info: &'a mut [i64],
        buf: &'a mut [[T; LANES]],
        det: Option<(DetOut<'a, T>, DetSpec)>,
    }
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let Kernel { ba, a, first, dst, ipiv, info, buf, det } = self;
            let n = if N > 0 { N } else { ba.n };
            factor_lanes_n(simd, ba, a, first, dst, ipiv, info, &mut buf[..n * n], n, det);
        }
    }
    let arch = crate::backend::cpu::simd::arch();
    by_order!(ba.n;
        1 2 3 4 5 6 8 16 => |N| {
            arch.dispatch(Kernel::<T, N> { ba, a, first, dst, ipiv, info, buf, det });
        },
        _ => arch.dispatch(Kernel::<T, 0> { ba, a, first, dst, ipiv, info, buf, det }));
}

/// [`lu_unblocked`] on [`LANES`] square `n x n` matrices at once, every operation over
/// the lanes, in the same order as the one-matrix loop (so the factors are the same). A
/// matrix that meets an exactly zero pivot or a value that is not finite is redone
/// alone by [`lu_unblocked`], for LAPACK's partial state and `info`. With `det`, each
/// matrix's determinant too ([`DetOne`]), over the lanes, in [`det_one`]'s order.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign;
// x − x tests finiteness
#[allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::too_many_arguments,
    clippy::eq_op
)]
#[inline(always)]
fn factor_lanes_n<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    ba: &Batch,
    a: &[T],
    first: usize,
    dst: Option<&mut [T]>,
    ipiv: &mut [i64],
    info: &mut [i64],
    buf: &mut [[T; LANES]],
    n: usize,
    det: Option<(DetOut<'_, T>, DetSpec)>,
) {
    load_lanes(simd, buf, a, &lane_offsets(ba, first), (ba.rs, ba.cs), n, n);
    // pivot rows as bytes (n <= LANES_MAX): 128 bytes to clear per group instead of a
    // 1 KiB memset call, which showed in a batched 4 x 4 solve's profile
    let mut piv = [[0u8; LANES]; LANES_MAX];
    let mut bad = [false; LANES];
    for k in 0..n {
        // column k, left-looking (Crout): each entry takes its updates from the columns
        // before in increasing order, summed in registers, as the right-looking loop's
        // rank-one updates would bring them (the same operations, so the same factors;
        // the trailing columns are swapped as they stand)
        let mut i0 = 0;
        while i0 + ROWS <= n {
            crout_rows::<T, ROWS>(buf, n, k, i0);
            i0 += ROWS;
        }
        for i in i0..n {
            crout_rows::<T, 1>(buf, n, k, i);
        }
        // the first row of largest absolute value in column k, from row k
        let mut p = [k; LANES];
        let mut max = [T::ZERO; LANES];
        for w in 0..LANES {
            max[w] = buf[k * n + k][w].abs();
        }
        for i in k + 1..n {
            let col = buf[k * n + i];
            for w in 0..LANES {
                let v = col[w].abs();
                if v > max[w] {
                    max[w] = v;
                    p[w] = i;
                }
            }
        }
        // (a loop: `p.map(..)` went through an array drain, element by element, which
        // showed in a batched 4 x 4 slogdet's profile)
        for w in 0..LANES {
            piv[k][w] = p[w] as u8;
        }
        for w in 0..LANES {
            let q = p[w];
            if q != k {
                for c in 0..n {
                    let t = buf[c * n + k][w];
                    buf[c * n + k][w] = buf[c * n + q][w];
                    buf[c * n + q][w] = t;
                }
            }
        }
        let mut r = [T::ZERO; LANES];
        for w in 0..LANES {
            let d = buf[k * n + k][w];
            bad[w] |= d == T::ZERO;
            r[w] = T::ONE / d;
        }
        for i in k + 1..n {
            let x = &mut buf[k * n + i];
            for w in 0..LANES {
                x[w] *= r[w];
            }
        }
    }
    let size = n * n;
    // a lane whose factors hold an inf or NaN is redone: x − x is 0 for a finite x and
    // NaN otherwise, summed in the element type (vector code; the same test on bools,
    // element by element, stayed scalar and showed in a batched 4 x 4 solve's profile)
    // (four partial sums: one chain of n² dependent additions was a large share of a
    // 16 x 16 group's time)
    let mut nonfinite = [[T::ZERO; LANES]; 4];
    for xs in buf.chunks(4) {
        for (s, x) in nonfinite.iter_mut().zip(xs) {
            for w in 0..LANES {
                s[w] = s[w] + (x[w] - x[w]);
            }
        }
    }
    let mut redo = bad;
    for w in 0..LANES {
        let s = (nonfinite[0][w] + nonfinite[1][w]) + (nonfinite[2][w] + nonfinite[3][w]);
        redo[w] |= s != T::ZERO;
    }
    let mut det = det;
    if let Some((dv, spec)) = det.as_mut() {
        // det_one's passes over the diagonal, each lane a matrix
        let mut prod = [1.0f64; LANES];
        for (k, p) in piv[..n].iter().enumerate() {
            for w in 0..LANES {
                if usize::from(p[w]) != k {
                    prod[w] = -prod[w];
                }
            }
        }
        let (mut max, mut min) = ([0.0f64; LANES], [f64::INFINITY; LANES]);
        // one quantity per loop over the lanes, each in selects (so that each loop
        // vectorises; one loop updating all stayed scalar): the same values as `f64::max`
        // and `f64::min`. The lanes kept (not redone below) have finite nonzero pivots, so
        // det_one's sign is that of the product, overflowed or underflowed (a product of
        // finite nonzero numbers is never NaN), and its `finite` is true.
        for k in 0..n {
            let dk = buf[k * n + k];
            let mut d = [0.0f64; LANES];
            for w in 0..LANES {
                d[w] = dk[w].to_f64();
            }
            for w in 0..LANES {
                prod[w] *= d[w];
            }
            for w in 0..LANES {
                let a = d[w].abs();
                max[w] = if a > max[w] { a } else { max[w] };
                min[w] = if a < min[w] { a } else { min[w] };
            }
        }
        // the logarithms of the normal products over the lanes (the others, 1 here, take
        // logabs_of's sum below)
        let mut ln = [0.0f64; LANES];
        if spec.want_log {
            for w in 0..LANES {
                let a = prod[w].abs();
                ln[w] = ln_normal(if is_normal(a) { a } else { 1.0 });
            }
        }
        // every lane's outputs at once, as whole arrays (a loop over the kept lanes, a
        // branch and four scalar stores each, showed in the profile); a redone lane's are
        // overwritten below, and a product that is not a normal number (rare) takes
        // logabs_of's sum
        let tol = spec.eps.sqrt();
        let (mut dt, mut sg, mut lg) = ([T::ZERO; LANES], [T::ZERO; LANES], [T::ZERO; LANES]);
        let mut ls = [false; LANES];
        for w in 0..LANES {
            dt[w] = T::from_f64(prod[w]);
            sg[w] = T::from_f64(1.0f64.copysign(prod[w]));
            lg[w] = T::from_f64(ln[w]);
            ls[w] = n > 0 && min[w] <= tol * max[w];
        }
        dv.det.copy_from_slice(&dt);
        dv.sign.copy_from_slice(&sg);
        dv.logabs.copy_from_slice(&lg);
        dv.loose.copy_from_slice(&ls);
        if spec.want_log {
            for w in 0..LANES {
                if !redo[w] && !is_normal(prod[w].abs()) {
                    let diag = (0..n).map(|k| buf[k * n + k][w].to_f64());
                    dv.logabs[w] = T::from_f64(logabs_of(prod[w], diag));
                }
            }
        }
    }
    let mut dst = dst;
    // every lane's factors out at once (a redone lane's block is then overwritten below)
    if let Some(d) = dst.as_deref_mut() {
        store_lanes(simd, buf, d, n, false);
    }
    // every lane's interchanges and info (a redone lane's are overwritten below; with a
    // branch per lane, this showed in the kernel's profile)
    for (w, p) in ipiv.chunks_exact_mut(n).enumerate().take(LANES) {
        for (k, o) in p.iter_mut().enumerate() {
            *o = i64::from(piv[k][w]) + 1;
        }
    }
    info.fill(0);
    let mut spare = Vec::new();
    for (w, (p, inf)) in ipiv.chunks_exact_mut(n).zip(info.iter_mut()).enumerate() {
        let d = match dst.as_deref_mut() {
            Some(dst) => &mut dst[w * size..(w + 1) * size],
            None => &mut [][..],
        };
        if redo[w] {
            let d = if d.is_empty() {
                spare.resize(size, T::ZERO);
                &mut spare[..]
            } else {
                d
            };
            ba.load(a, first + w, d);
            *inf = lu_unblocked(d, n, n, p);
            if let Some((dv, spec)) = &mut det {
                dv.set(w, det_one(d, p, n, *spec));
            }
            // the lanes hold this matrix's factors too
            for (x, &v) in buf.iter_mut().zip(d.iter()) {
                x[w] = v;
            }
        }
    }
}

/// Rows `i0..i0 + R` of column `k` of [`factor_lanes_n`]'s factors before its pivot
/// search (columns `..k` final, `k..` as loaded and swapped): entry `i` less
/// `Σ_q L_iq U_qk` over `q < min(i, k)` in increasing `q`, where `U_qk` is the finished
/// entry `q` of the same column (from an earlier block, or from this one's registers).
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn crout_rows<T: LinalgElem, const R: usize>(
    buf: &mut [[T; LANES]],
    n: usize,
    k: usize,
    i0: usize,
) {
    let mut acc = [[T::ZERO; LANES]; R];
    for r in 0..R {
        acc[r] = buf[k * n + i0 + r];
    }
    // the terms every row takes
    for q in 0..i0.min(k) {
        let u = buf[k * n + q];
        for r in 0..R {
            let l = buf[q * n + i0 + r];
            for w in 0..LANES {
                acc[r][w] = acc[r][w] - l[w] * u[w];
            }
        }
    }
    // q = i0.. (< k): row i0 + s is finished once the rows above it in the block are
    for q in i0..(i0 + R - 1).min(k) {
        let u = acc[q - i0];
        for r in q - i0 + 1..R {
            let l = buf[q * n + i0 + r];
            for w in 0..LANES {
                acc[r][w] = acc[r][w] - l[w] * u[w];
            }
        }
    }
    for r in 0..R {
        buf[k * n + i0 + r] = acc[r];
    }
}

/// faer's blocked LU of `a` (column-major, `m x n`) with LAPACK's outputs; `None` when a
/// pivot is exactly zero or subnormal (the caller then redoes it with [`lu_unblocked`]).
fn lu_blocked<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    ipiv: &mut [i64],
    par: Par,
) -> Option<()> {
    let k = m.min(n);
    let mut perm = vec![0usize; m];
    let mut perm_inv = vec![0usize; m];
    let mut mem = MemBuffer::new(pp::lu_in_place_scratch::<usize, T>(m, n, par, Spec::default()));
    pp::lu_in_place(
        colmajor_mut(a, m, n),
        &mut perm,
        &mut perm_inv,
        par,
        MemStack::new(&mut mem),
        Spec::default(),
    );
    if (0..k).any(|i| a[i * m + i].abs() < <T as faer::traits::RealField>::min_positive_impl()) {
        // (a zero pivot, or a subnormal one whose reciprocal overflowed in L)
        return None;
    }
    interchanges(&perm, 0, &mut ipiv[..k]);
    Some(())
}

/// faer's row permutation `perm` (position `i` holds original row `perm[i]`) as the
/// sequence of interchanges "swap row j with row ipiv[j] - 1 >= j", which it determines
/// uniquely: one per entry of `ipiv`, rows counted from `first` (1-based in `ipiv`).
fn interchanges(perm: &[usize], first: usize, ipiv: &mut [i64]) {
    let rows = perm.len();
    let mut pos: Vec<usize> = (0..rows).collect(); // original row -> current position
    let mut cur: Vec<usize> = (0..rows).collect(); // position -> original row
    for (j, out) in ipiv.iter_mut().enumerate() {
        let p = pos[perm[j]];
        *out = (first + p + 1) as i64;
        let (rj, rp) = (cur[j], cur[p]);
        cur.swap(j, p);
        pos[rj] = p;
        pos[rp] = j;
    }
}

/// `min(m, n)` from which one matrix's LU is [`lu_split`] (on any number of threads, so
/// that the factors do not depend on it).
const SPLIT_LU_MIN: usize = 192;
/// Panel width of [`lu_split`].
const SPLIT_LU_PANEL: usize = 64;

/// Right-looking blocked LU with partial pivoting of `a` (column-major `m x n`) with
/// LAPACK's outputs, its trailing updates split across threads by column ranges; `None`
/// when a pivot is exactly zero or subnormal (the caller then redoes it with
/// [`lu_unblocked`]).
///
/// Per panel of [`SPLIT_LU_PANEL`] columns: faer's sequential LU of the panel (rows
/// `j0..`), then, each thread on its own range of the trailing columns, the panel's row
/// interchanges, `U₁₂ = L₁₁⁻¹ A₁₂` and `A₂₂ −= L₂₁ U₁₂` (faer's sequential triangular
/// solve and GEMM). The interchanges of the columns left of each panel are applied at
/// the end, column by column. Why not faer's parallel LU: on a two-core Intel AVX-512
/// host its two-thread GEMM and triangular solves scaled well below independent column
/// ranges (see [`scaled_inverse`]).
fn lu_split<T: LinalgElem>(a: &mut [T], m: usize, n: usize, ipiv: &mut [i64]) -> Option<()> {
    let k = m.min(n);
    let nb = SPLIT_LU_PANEL;
    let mut perm = vec![0usize; m];
    let mut perm_inv = vec![0usize; m];
    let mut mem = MemBuffer::new(pp::lu_in_place_scratch::<usize, T>(
        m,
        nb.min(k),
        Par::Seq,
        Spec::default(),
    ));
    let mut j0 = 0;
    while j0 < k {
        let w = nb.min(k - j0);
        let rows = m - j0;
        {
            let panel = colmajor_mut(a, m, n).submatrix_mut(j0, j0, rows, w);
            pp::lu_in_place(
                panel,
                &mut perm[..rows],
                &mut perm_inv[..rows],
                Par::Seq,
                MemStack::new(&mut mem),
                Spec::default(),
            );
        }
        interchanges(&perm[..rows], j0, &mut ipiv[j0..j0 + w]);
        let (left, right) = a.split_at_mut((j0 + w) * m);
        let left: &[T] = left;
        let tc = n - j0 - w;
        if tc > 0 {
            let piv = &ipiv[j0..j0 + w];
            let lv = MatRef::from_column_major_slice(left, m, j0 + w);
            let l11 = lv.submatrix(j0, j0, w, w);
            let l21 = lv.submatrix(j0 + w, j0, m - j0 - w, w);
            let update = |cols: &mut [T]| {
                let wc = cols.len() / m;
                for col in cols.chunks_exact_mut(m) {
                    for (jj, &p) in piv.iter().enumerate() {
                        let p = (p - 1) as usize;
                        if p != j0 + jj {
                            col.swap(j0 + jj, p);
                        }
                    }
                }
                let (top, bottom) = colmajor_mut(cols, m, wc).split_at_row_mut(j0 + w);
                let mut u12 = top.subrows_mut(j0, w);
                ts::solve_unit_lower_triangular_in_place(l11, u12.as_mut(), Par::Seq);
                faer::linalg::matmul::matmul(
                    bottom,
                    faer::Accum::Add,
                    l21,
                    u12.as_ref(),
                    -T::ONE,
                    Par::Seq,
                );
            };
            let parts = rayon::current_num_threads().min(tc / 32).max(1);
            if parts == 1 {
                update(right);
            } else {
                let chunk = tc.div_ceil(parts) * m;
                let ranges = Parts::new(right, chunk);
                run_tasks(ranges.len(), |t| update(ranges.take(t)));
            }
        }
        j0 += w;
    }
    if (0..k).any(|i| a[i * m + i].abs() < <T as faer::traits::RealField>::min_positive_impl()) {
        // (a zero pivot, or a subnormal one whose reciprocal overflowed in L)
        return None;
    }
    // the interchanges of later panels on each panel's columns
    let left_cols = |c0: usize, cols: &mut [T]| {
        for (c, col) in cols.chunks_exact_mut(m).enumerate() {
            let from = ((c0 + c) / nb + 1) * nb;
            for (jj, &p) in ipiv.iter().enumerate().take(k).skip(from) {
                let p = (p - 1) as usize;
                if p != jj {
                    col.swap(jj, p);
                }
            }
        }
    };
    let lc = k.min(n);
    let parts = rayon::current_num_threads().min(lc / 32).max(1);
    let chunk = lc.div_ceil(parts);
    let ranges = Parts::new(&mut a[..lc * m], chunk * m);
    run_tasks(ranges.len(), |t| left_cols(t * chunk, ranges.take(t)));
    Some(())
}

/// What [`lu_det`] computes besides the factors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DetSpec {
    pub(super) want_log: bool,
    /// The dtype's machine epsilon (the `loose` threshold is `√eps`).
    pub(super) eps: f64,
}

/// One matrix's determinant from its LU (see [`LuDet`](crate::backend::LuDet)).
#[derive(Debug, Clone, Copy, Default)]
struct DetOne {
    det: f64,
    sign: f64,
    logabs: f64,
    loose: bool,
}

/// Where [`DetOne`]s go: the per-matrix outputs of [`lu_det`], entry `i` of each for
/// matrix `i` (written straight into them: a vector of `DetOne`s, filled with defaults
/// and then copied out, showed in a batched 4 x 4 slogdet's profile).
pub(crate) struct DetOut<'a, T> {
    pub(super) det: &'a mut [T],
    pub(super) sign: &'a mut [T],
    pub(super) logabs: &'a mut [T],
    pub(super) loose: &'a mut [bool],
}

impl<T: LinalgElem> DetOut<'_, T> {
    /// The number of matrices.
    pub(super) fn len(&self) -> usize {
        self.loose.len()
    }

    /// Matrix `i`'s determinant.
    #[inline(always)]
    fn set(&mut self, i: usize, d: DetOne) {
        self.det[i] = T::from_f64(d.det);
        self.sign[i] = T::from_f64(d.sign);
        self.logabs[i] = T::from_f64(d.logabs);
        self.loose[i] = d.loose;
    }

    /// Entries `r` of each.
    pub(super) fn sub(&mut self, r: std::ops::Range<usize>) -> DetOut<'_, T> {
        DetOut {
            det: &mut self.det[r.clone()],
            sign: &mut self.sign[r.clone()],
            logabs: &mut self.logabs[r.clone()],
            loose: &mut self.loose[r],
        }
    }
}

/// 1, -1, 0 for a zero pivot, NaN for NaN.
#[inline(always)]
fn sign_of(d: f64) -> f64 {
    if d.is_nan() {
        f64::NAN
    } else {
        f64::from(u8::from(d > 0.0)) - f64::from(u8::from(d < 0.0))
    }
}

/// `log |det|` from the product `prod` of the pivots `diag`: one logarithm of the
/// product when it is a normal number ([`ln_normal`]; its rounding, n ε relative, is that
/// of the sum of n logarithms), else the sum (no overflow or underflow, -inf at a zero
/// pivot, NaN kept).
#[inline(always)]
pub(super) fn logabs_of(prod: f64, diag: impl Iterator<Item = f64>) -> f64 {
    let abs = prod.abs();
    if is_normal(abs) {
        ln_normal(abs)
    } else {
        diag.map(|d| d.abs().ln()).sum()
    }
}

/// `x` is a positive normal number (not NaN, infinite, zero or subnormal), in
/// comparisons (which vectorise).
#[inline(always)]
fn is_normal(x: f64) -> bool {
    (f64::MIN_POSITIVE..f64::INFINITY).contains(&x)
}

// [`ln_normal`]'s constants (the shortest decimals of fdlibm's bit patterns: ln2_hi
// 0x3FE62E42FEE00000, ln2_lo 0x3DEA39EF35793C76, Lg1..7 0x3FE5555555555593 …
// 0x3FC2F112DF3E5244), shared with its AVX-512 form in `lu_wide`.
/// `ln 2`'s leading bits (with trailing zeros: `k ln2_hi` is exact).
pub(super) const LN2_HI: f64 = 0.693_147_180_369_123_8;
/// `ln 2 − ln2_hi`.
pub(super) const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// The minimax coefficients of `R(s²)`.
pub(super) const LG: [f64; 7] = [
    0.666_666_666_666_673_5,
    0.399_999_999_994_094_2,
    0.285_714_287_436_623_9,
    0.222_221_984_321_497_84,
    0.181_835_721_616_180_5,
    0.153_138_376_992_093_73,
    0.147_981_986_051_165_86,
];
/// The bits of 1.0 and 0.5.
pub(super) const ONE_BITS: u64 = 0x3FF0_0000_0000_0000;
pub(super) const HALF_BITS: u64 = 0x3FE0_0000_0000_0000;

/// `ln x` for a positive normal `x` (any other input gives a meaningless value), within
/// one ulp, in arithmetic and bit operations only, so that a loop over lanes vectorises
/// (a libm call per matrix was a visible share of a batched 4 x 4 `slogdet`'s forward and
/// backward). The classic reduction and minimax rational form (as in fdlibm's `log`):
/// `x = 2^k (1 + f)` with `√2/2 <= 1 + f < √2`, `s = f / (2 + f)`,
/// `ln(1 + f) = 2 atanh s = f − f²/2 + s (f²/2 + R(s²))`, `R` a degree-7 polynomial in
/// `s²` (minimax coefficients for `|s| <= 0.1716`, near the series' `2/3, 2/5, 2/7, …`),
/// and `k ln 2` in two parts (`ln2_hi` has trailing zero bits, so `k ln2_hi` is exact).
#[inline(always)]
pub(super) fn ln_normal(x: f64) -> f64 {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = x.to_bits();
    // the mantissa as m in [1, 2), halved when at least √2 (its bits compared: the same
    // exponent), the exponent raised to match
    let frac = bits & MANTISSA;
    let high = frac >= (std::f64::consts::SQRT_2.to_bits() & MANTISSA);
    let m = f64::from_bits(frac | if high { HALF_BITS } else { ONE_BITS });
    let k = f64::from((bits >> 52) as i32 - 1023 + i32::from(high));
    // (exact: m is within a factor 2 of 1)
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)
}

/// The determinant of `A = P L U` from its packed factors `lu` (column-major `n x n`)
/// and interchanges `ipiv`: `sign(P) ∏ U_ii` in f64, the pivots in order.
fn det_one<T: LinalgElem>(lu: &[T], ipiv: &[i64], n: usize, spec: DetSpec) -> DetOne {
    let swaps = ipiv[..n].iter().enumerate().filter(|&(j, &q)| q as usize != j + 1).count();
    let mut prod = if swaps % 2 == 1 { -1.0 } else { 1.0 };
    let mut sign = prod;
    let (mut max, mut min) = (0.0f64, f64::INFINITY);
    let mut finite = true;
    let diag = |i: usize| lu[i * (n + 1)].to_f64();
    for i in 0..n {
        let d = diag(i);
        prod *= d;
        sign *= sign_of(d);
        max = max.max(d.abs());
        min = min.min(d.abs());
        finite &= d.is_finite();
    }
    let logabs = if spec.want_log { logabs_of(prod, (0..n).map(diag)) } else { 0.0 };
    // non-finite factors (NaN or inf input) are never loose: their gradient is
    // non-finite anyway, and the SVD behind the loose branch must not see NaN
    let loose = finite && n > 0 && min <= spec.eps.sqrt() * max;
    DetOne { det: prod, sign, logabs, loose }
}

/// Batched LU with partial pivoting of `a: (*, m, n)`: the packed factors (column-major
/// `(*, m, n)`: `L` strictly below the diagonal with an implied unit diagonal, `U` on and
/// above), the 1-based interchanges `(*, min(m, n))`, and `info` per matrix.
pub(crate) fn lu_factor<T: LinalgElem>(
    a: &[T],
    al: &Layout,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    lu_factor_impl::<T>(a, al, None)
}

/// [`lu_factor`] of square matrices with each one's determinant, read off its factors
/// while they are in cache (in the lane kernel, over the lanes).
pub(crate) fn lu_det<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    want_log: bool,
) -> crate::backend::LuDet<Vec<T>, Vec<i64>> {
    let eps = T::EPSILON.to_f64();
    let len = Batch::of(al).len();
    // (every entry is written, by the lanes or one by one)
    let mut det = super::super::pool::overwritten(len, T::ZERO);
    let mut sign = super::super::pool::overwritten(len, T::ZERO);
    let mut logabs = super::super::pool::overwritten(len, T::ZERO);
    let mut loose = vec![false; len];
    let out = DetOut { det: &mut det, sign: &mut sign, logabs: &mut logabs, loose: &mut loose };
    let (lu, layout, piv, info) = lu_factor_impl(a, al, Some((out, DetSpec { want_log, eps })));
    crate::backend::LuDet { lu, layout, piv, info, det, sign, logabs, loose }
}

impl<T> crate::backend::LuDet<Vec<T>, Vec<i64>> {
    /// The same result with its float buffers wrapped by `f` (the integer ones as `I64`).
    pub(crate) fn map(
        self,
        f: impl Fn(Vec<T>) -> crate::backend::CpuStorage,
    ) -> crate::backend::LuDet<crate::backend::CpuStorage> {
        use crate::backend::CpuStorage;
        crate::backend::LuDet {
            lu: f(self.lu),
            layout: self.layout,
            piv: CpuStorage::I64(self.piv),
            info: CpuStorage::I64(self.info),
            det: f(self.det),
            sign: f(self.sign),
            logabs: f(self.logabs),
            loose: self.loose,
        }
    }
}

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

/// [`lu_factor`], and with `det` (square matrices only) each matrix's [`DetOne`] into
/// its outputs (one entry per matrix).
fn lu_factor_impl<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    det: Option<(DetOut<'_, T>, DetSpec)>,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    debug_assert!(det.is_none() || m == n);
    let k = m.min(n);
    let size = m * n;
    // every matrix is loaded into its block before it is factorised
    let mut out = super::super::pool::overwritten(ba.len() * size, T::ZERO);
    // every pivot is written (each path sets all k of its matrix)
    let mut piv = super::super::pool::overwritten(ba.len() * k, 0i64);
    let mut info = vec![0i64; ba.len()];
    let (mut dets, spec) = match det {
        Some((d, spec)) => (Some(d), Some(spec)),
        None => (None, None),
    };
    let layout = colmajor_layout(&ba.dims, m, n);
    if size == 0 {
        // 0 x 0 matrices: det 1, log 0
        if let (Some(d), Some(spec)) = (&mut dets, spec) {
            for i in 0..d.len() {
                d.set(i, det_one::<T>(&[], &[], 0, spec));
            }
        }
        return (out, layout, piv, info);
    }
    let work = m * n * k;
    let split = ba.len() == 1 && k >= SPLIT_LU_MIN;
    let one = |i: usize, dst: &mut [T], ipiv: &mut [i64], par: Par| -> i64 {
        ba.load(a, i, dst);
        if split {
            if lu_split(dst, m, n, ipiv).is_some() {
                return 0;
            }
            ba.load(a, i, dst);
        } else if k > UNBLOCKED {
            if lu_blocked(dst, m, n, ipiv, par).is_some() {
                return 0;
            }
            ba.load(a, i, dst);
        }
        lu_unblocked(dst, m, n, ipiv)
    };
    // matrices start.. into o, p, f (and d): groups of LANES small square ones together,
    // the rest one by one
    let lanes = m == n && n <= LANES_MAX;
    let range = |start: usize,
                 o: &mut [T],
                 p: &mut [i64],
                 f: &mut [i64],
                 mut d: Option<DetOut<'_, T>>,
                 par: Par| {
        let mut done = 0;
        if lanes && f.len() >= LANES {
            let whole = f.len() / LANES * LANES;
            // the whole groups by the wide kernel where it applies (contiguous 4 x 4
            // blocks), the groups it leaves by the lanes'
            // (the determinants' outputs of those groups only)
            let wide = match (n, ba.packed()) {
                (4, Some(pa)) => T::factor_wide(
                    &a[pa + start * size..pa + (start + whole) * size],
                    &mut o[..whole * size],
                    &mut p[..whole * k],
                    &mut f[..whole],
                    d.as_mut().map(|d| d.sub(0..whole)).as_mut().zip(spec),
                ),
                _ => None,
            };
            let groups = wide.unwrap_or_else(|| (0..whole / LANES).collect());
            let mut buf = vec![[T::ZERO; LANES]; size];
            for g in groups.into_iter().map(|h| h * LANES) {
                let dc = match (&mut d, spec) {
                    (Some(d), Some(spec)) => Some((d.sub(g..g + LANES), spec)),
                    _ => None,
                };
                let (oc, pc) =
                    (&mut o[g * size..(g + LANES) * size], &mut p[g * k..(g + LANES) * k]);
                factor_lanes(&ba, a, start + g, Some(oc), pc, &mut f[g..g + LANES], &mut buf, dc);
            }
            done = whole;
        }
        for (j, ((dst, ipiv), inf)) in o[done * size..]
            .chunks_exact_mut(size)
            .zip(p[done * k..].chunks_exact_mut(k))
            .zip(&mut f[done..])
            .enumerate()
        {
            *inf = one(start + done + j, dst, ipiv, par);
            if let (Some(d), Some(spec)) = (&mut d, spec) {
                d.set(done + j, det_one(dst, ipiv, n, spec));
            }
        }
    };
    if ba.len() > 1 && work < PAR_WORK && ba.len() * work >= 2 * TASK_WORK {
        let per = if lanes { lane_task_len(ba.len(), work) } else { (TASK_WORK / work).max(1) };
        let (po, pp) = (Parts::new(&mut out, size * per), Parts::new(&mut piv, k * per));
        let pf = Parts::new(&mut info, per);
        let with_det = dets.is_some();
        // the determinants' outputs in the same chunks (none without them)
        let (pd, ps, pl, pb) = match &mut dets {
            Some(d) => (
                Parts::new(d.det, per),
                Parts::new(d.sign, per),
                Parts::new(d.logabs, per),
                Parts::new(d.loose, per),
            ),
            None => (
                Parts::new(&mut [], per),
                Parts::new(&mut [], per),
                Parts::new(&mut [], per),
                Parts::new(&mut [], per),
            ),
        };
        run_tasks(pf.len(), |t| {
            let d = with_det.then(|| DetOut {
                det: pd.take(t),
                sign: ps.take(t),
                logabs: pl.take(t),
                loose: pb.take(t),
            });
            range(t * per, po.take(t), pp.take(t), pf.take(t), d, Par::Seq);
        });
    } else {
        let d = dets.as_mut().map(|d| d.sub(0..d.len()));
        with_par(work >= PAR_WORK, |par| range(0, &mut out, &mut piv, &mut info, d, par));
    }
    (out, layout, piv, info)
}

/// Applies the interchanges `ipiv` (1-based) to the rows of the column-major `x`
/// (`n x k`), forward (`Pᵀ x`) or backward (`P x`).
fn swap_rows<T: Copy>(x: &mut [T], n: usize, k: usize, ipiv: &[i64], forward: bool) {
    let mut one = |j: usize| {
        let p = (ipiv[j] - 1) as usize;
        if p != j {
            for c in 0..k {
                x.swap(c * n + j, c * n + p);
            }
        }
    };
    if forward {
        (0..ipiv.len()).for_each(&mut one);
    } else {
        (0..ipiv.len()).rev().for_each(&mut one);
    }
}

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

/// `Σ a_i b_i` over the common length, with four partial sums (no serial chain of
/// dependent additions).
#[inline(always)]
fn dot<T: LinalgElem>(a: &[T], b: &[T]) -> T {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut acc = [T::ZERO; 4];
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for t in 0..4 {
            acc[t] += x[t] * y[t];
        }
    }
    let tail = len - len % 4;
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (&x, &y) in a[tail..].iter().zip(&b[tail..]) {
        s += x * y;
    }
    s
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
    let mut out = super::super::pool::overwritten(bb.len() * size, T::ZERO);
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
    fn fixed<T: LinalgElem, const N: usize>(
        sys: &LaneSystems<'_, T>,
        dst: &mut [T],
        lub: &mut [[T; LANES]],
        xb: &mut [[T; LANES]],
        k: usize,
        adjoint: bool,
    ) {
        crate::backend::cpu::simd::arch().dispatch(Kernel::<T, N> {
            sys,
            dst,
            lub,
            xb,
            k,
            adjoint,
        });
    }
    by_order!(sys.lu.0.n;
        2 3 4 8 16 => |N| fixed::<T, N>(sys, dst, lub, xb, k, adjoint),
        _ => fixed::<T, 0>(sys, dst, lub, xb, k, adjoint));
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
fn lane_perms(piv: &[i64], first: usize, n: usize) -> [u64; LANES] {
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
fn solve_from_lanes<T: LinalgElem, S: pulp::Simd>(
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

/// The cofactor matrix `C` (`C_ij = (-1)^(i+j) M_ij`, so `d det A = <C, dA>`) of each
/// square `a: (*, n, n)`, computed from an SVD `A = U S Vᵀ` as
/// `C = det(U) det(V) U diag(prod_{j != i} s_j) Vᵀ`, which stays exact at singular
/// matrices. Row-major result. `Err(batch index)` if the SVD does not converge (our own:
/// [`svd`](super::svd::svd), not faer's, which is wrong on hard matrices).
pub(crate) fn cofactor<T: super::svd::JacobiElem>(a: &[T], al: &Layout) -> Result<Vec<T>, usize> {
    let ba = Batch::of(al);
    let n = ba.n;
    let size = n * n;
    let mut out = vec![T::ZERO; ba.len() * size];
    if n == 0 {
        return Ok(out);
    }
    let f = super::svd::svd(a, al, true, false)?;
    let (Some((uo, _)), (so, _), Some((vo, _))) = (f.u, f.s, f.vh) else {
        unreachable!("the vectors were asked")
    };
    for (i, dst) in out.chunks_exact_mut(size).enumerate() {
        // U and V column-major (V's columns are Vh's rows)
        let u = MatRef::from_column_major_slice(&uo[i * size..(i + 1) * size], n, n);
        let v = MatRef::from_column_major_slice(&vo[i * size..(i + 1) * size], n, n);
        let s = &so[i * n..(i + 1) * n];
        let sign = det_sign(u) * det_sign(v);
        // prod_{j != i} s_j without division (exact with zeros)
        let mut d = vec![T::ONE; n];
        let mut acc = T::ONE;
        for j in 0..n {
            d[j] = acc;
            acc *= s[j];
        }
        acc = T::ONE;
        for j in (0..n).rev() {
            d[j] *= acc;
            acc *= s[j];
        }
        for r in 0..n {
            for c in 0..n {
                let t: T =
                    d.iter().enumerate().map(|(j, &dj)| *u.get(r, j) * dj * *v.get(c, j)).sum();
                dst[r * n + c] = sign * t;
            }
        }
    }
    Ok(out)
}

/// The sign (±1) of the determinant of an orthogonal matrix, from its LU.
fn det_sign<T: LinalgElem>(q: MatRef<'_, T>) -> T {
    let n = q.nrows();
    let mut a = vec![T::ZERO; n * n];
    for j in 0..n {
        for i in 0..n {
            a[j * n + i] = *q.get(i, j);
        }
    }
    let mut ipiv = vec![0i64; n];
    lu_unblocked(&mut a, n, n, &mut ipiv);
    let mut neg = false;
    for (j, &p) in ipiv.iter().enumerate() {
        neg ^= p as usize != j + 1;
        neg ^= a[j * n + j] < T::ZERO;
    }
    if neg {
        -T::ONE
    } else {
        T::ONE
    }
}

/// `n` up to which [`lu_factor_backward`] and [`lu_inv_t`] work with their own loops
/// (above: faer's triangular products and solves).
const SMALL_BACKWARD: usize = 32;
/// `n` from which one matrix's backward may use both threads.
const PAR_BACKWARD_N: usize = 192;

/// The middle factor `X` of `gA = P L⁻ᵀ X U⁻ᵀ`.
enum Middle<'a, T> {
    /// `X = tril(Lᵀ gL, -1) + triu(gU Uᵀ)` from the cotangent `g` of the packed factors.
    Grad(&'a [T], Batch),
    /// `X = c_i I`, `c` one scale per matrix.
    Scale(&'a [T]),
}

/// The VJP of [`lu_factor`] for square factors `lu: (*, n, n)` (packed, any strides), their
/// contiguous interchanges `piv: (*, n)` and the cotangent `g` of the packed factors (same
/// batch), without a graph: `gA = P L⁻ᵀ [tril(Lᵀ gL, -1) + triu(gU Uᵀ)] U⁻ᵀ` with
/// `gL = tril(g, -1)`, `gU = triu(g)` (PyTorch's `linalg_lu_backward`, square case).
/// Row-major result for `n <=` [`SMALL_BACKWARD`], column-major above.
pub(crate) fn lu_factor_backward<T: LinalgElem>(
    lu: &[T],
    lul: &Layout,
    piv: &[i64],
    g: &[T],
    gl: &Layout,
) -> (Vec<T>, Layout) {
    lu_middle(lu, lul, piv, Middle::Grad(g, Batch::of(gl)), true)
}

/// `c_i A_i⁻ᵀ = c_i P L⁻ᵀ U⁻ᵀ` for each `A = P L U` given by square packed factors
/// `lu: (*, n, n)` and contiguous interchanges `piv: (*, n)`, with one scale per matrix
/// (`c`, contiguous). (`A⁻¹` when the factors are those of `Aᵀ` and `c = 1`.) For
/// `n <=` [`SMALL_BACKWARD`] the result is row-major if `row_major`, else column-major;
/// above, row-major ([`scaled_inverse`]).
pub(crate) fn lu_inv_t<T: LinalgElem>(
    lu: &[T],
    lul: &Layout,
    piv: &[i64],
    c: &[T],
    row_major: bool,
) -> (Vec<T>, Layout) {
    lu_middle(lu, lul, piv, Middle::Scale(c), row_major)
}

/// `P L⁻ᵀ X U⁻ᵀ` for each matrix: see [`Middle`]. Row-major result for small `n` if
/// `row_major`, and for large scaled inverses; else column-major.
fn lu_middle<T: LinalgElem>(
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
    let mut out = super::super::pool::overwritten(ba.len() * size, T::ZERO);
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

/// `n` from which one matrix's [`scaled_inverse`] splits its columns across threads.
const PAR_INVERSE_N: usize = 128;

/// `X = c A⁻¹ = c U⁻¹ L⁻¹ Pᵀ` into `x` (`n x n`, column-major) from the packed factors of
/// `A = P L U` (`lu`, column-major) and their interchanges.
///
/// Column block by column block: `X[:, j] = c U⁻¹ L⁻¹ e_j` before the interchanges.
/// Block `[j0, j1)` solves `L[j0.., j0..] Y = c [I; 0]` (the rows above `j0` are zero)
/// and then `U X = Y`, both with faer's blocked triangular solves on column-major
/// operands. The interchanges then swap whole (contiguous) columns. Column `j` costs
/// about `((n − j)² + n²) / 2` multiply-adds (`2 n³ / 3` in all, as LAPACK's `getri`).
/// The blocks are `n / 8` columns wide (32 to 128), a grid that depends on `n` only, so
/// that the result does not depend on the number of threads.
///
/// If `split`, the blocks are dealt out as one contiguous range per thread of about
/// equal cost, each solved sequentially. faer's own parallel solves scaled poorly on two
/// cores (on an Intel AVX-512 host, well below MKL's), while independent column ranges
/// need no synchronisation until the end.
fn scaled_inverse<T: LinalgElem>(lu: &[T], ipiv: &[i64], c: T, x: &mut [T], n: usize, split: bool) {
    let lu = MatRef::from_column_major_slice(lu, n, n);
    let bw = (n / 8).clamp(32, 128);
    // the columns `c0..` in `cols`, block by block on the grid of width `bw`
    let range = |c0: usize, cols: &mut [T]| {
        for (b, blk) in cols.chunks_mut(bw * n).enumerate() {
            let j0 = c0 + b * bw;
            let w = blk.len() / n;
            blk.fill(T::ZERO);
            for k in 0..w {
                blk[k * n + j0 + k] = c;
            }
            let mut y = colmajor_mut(blk, n, w);
            ts::solve_unit_lower_triangular_in_place(
                lu.submatrix(j0, j0, n - j0, n - j0),
                y.as_mut().subrows_mut(j0, n - j0),
                Par::Seq,
            );
            ts::solve_upper_triangular_in_place(lu, y, Par::Seq);
        }
    };
    let blocks = n.div_ceil(bw);
    let threads = if split { rayon::current_num_threads().min(blocks) } else { 1 };
    if threads <= 1 {
        range(0, x);
    } else {
        // cut between blocks where the running cost passes each thread's share
        let cost = |b: usize| {
            let (j0, w) = (b * bw, bw.min(n - b * bw));
            (((n - j0) * (n - j0) + n * n) * w) as f64
        };
        let total: f64 = (0..blocks).map(cost).sum();
        let mut bounds = vec![0];
        let mut acc = 0.0;
        for b in 0..blocks {
            let share = total * bounds.len() as f64 / threads as f64;
            if b > *bounds.last().unwrap_or(&0) && acc + cost(b) / 2.0 >= share {
                bounds.push(b);
                if bounds.len() == threads {
                    break;
                }
            }
            acc += cost(b);
        }
        bounds.push(blocks);
        let mut rest = &mut *x;
        let mut parts = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let cols = (w[1] * bw).min(n) - w[0] * bw;
            let (head, tail) = rest.split_at_mut(cols * n);
            parts.push(Mutex::new((w[0] * bw, head)));
            rest = tail;
        }
        run_tasks(parts.len(), |t| {
            let mut part = parts[t].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let (c0, ref mut cols) = *part;
            range(c0, cols);
        });
    }
    // A⁻¹ = (U⁻¹ L⁻¹) Sₙ₋₁ ⋯ S₀: column interchanges, last first
    for j in (0..n).rev() {
        let p = (ipiv[j] - 1) as usize;
        if p != j {
            let (lo, hi) = (j.min(p), j.max(p));
            let (left, right) = x.split_at_mut(hi * n);
            left[lo * n..(lo + 1) * n].swap_with_slice(&mut right[..n]);
        }
    }
}

/// Where [`middle_lanes`] takes the packed factors of its [`LANES`] matrices from.
#[derive(Clone, Copy)]
enum Factors<'a, T> {
    /// Matrices `first..` of a batch of packed factors.
    Packed(&'a Batch, &'a [T]),
    /// Already in lanes (column-major per lane), as [`factor_lanes_n`] leaves them.
    Lanes(&'a [[T; LANES]]),
}

/// Scratch of [`middle_lanes`]: the factors, the cotangent and the result, per lane.
struct MiddleBufs<T> {
    a: Vec<[T; LANES]>,
    g: Vec<[T; LANES]>,
    x: Vec<[T; LANES]>,
}

/// `P L⁻ᵀ X U⁻ᵀ` (see [`lu_middle`]) for the [`LANES`] matrices `first..` at once
/// (`n <= LANES_MAX`), with the order a constant where it is small.
#[allow(clippy::too_many_arguments)]
fn middle_lanes<T: LinalgElem>(
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
    let arch = crate::backend::cpu::simd::arch();
    by_order!(n;
        2 3 4 8 16 => |N| {
            arch.dispatch(Kernel::<T, N> { fac, n, piv, mid, first, dst, bufs, row_major });
        },
        _ => arch.dispatch(Kernel::<T, 0> { fac, n, piv, mid, first, dst, bufs, row_major }));
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

/// Rows (or columns) that [`middle_lanes_n`]'s substitutions finish together: their sums
/// stay in registers, and each factor entry is loaded once for all of them.
const ROWS: usize = 4;

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
/// back row-major if `row_major` (else column-major); `tmp` is scratch of `n²`. `diag`: `X` is diagonal (so `X U⁻ᵀ` is
/// lower triangular).
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
    let arch = crate::backend::cpu::simd::arch();
    by_order!(g.a.0.n;
        1 2 3 4 5 6 8 16 => |N| arch.dispatch(Kernel::<T, N>(g)),
        _ => arch.dispatch(Kernel::<T, 0>(g)));
}

/// [`lu_factor`] of square `a: (*, n, n)` and [`lu_solve`] with those factors of
/// `b: (*, n, k)` (the same batch dims) for batches (at least [`LANES`]) of small
/// matrices (`n <=` `LANES_MAX`), in one pass: each lane group is factorised and solved
/// while its factors are in lanes (the same factors and solutions as the two calls, with
/// no second gathering of the factors). The last, partial group of a task is padded with
/// repeats of its last matrix. `None` for other shapes. The factors and interchanges are
/// kept as the lanes hold them, for [`lu_solve_saved`]: `n * n * LANES` elements and
/// [`LANES`] [`lane_perms`] words per group of [`LANES`] matrices; the solutions are
/// column-major `(*, n, k)`.
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
    let mut factors = super::super::pool::overwritten(groups * LANES * size, T::ZERO);
    let mut perms = super::super::pool::overwritten(groups * LANES, 0i64);
    let mut info = vec![0i64; len];
    let mut x = super::super::pool::overwritten(len * xsize, T::ZERO);
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
    let arch = crate::backend::cpu::simd::arch();
    by_order!(g.n;
        1 2 3 4 5 6 8 16 => |N| arch.dispatch(Kernel::<T, N>(g)),
        _ => arch.dispatch(Kernel::<T, 0>(g)));
}

/// [`lu_solve`] with the factors of order `n` that [`lu_factor_solve`] saved (`factors`
/// and `perms` as it returned them) for `b: (*, n, k)` with the factorised batch's
/// dims: `A X = B` (`Aᵀ X = B` if `adjoint`), lane group by lane group, the factors
/// copied as they are instead of gathered. The result is column-major. With `outer =
/// Some(Y)` (`(*, n, k)`, `b`'s dims), also `−X Yᵀ` of each matrix (row-major `(*, n,
/// n)`) from each group's solutions while they are in cache: a solve's `gA = −gB Xᵀ`
/// in the pass that makes `gB`, each thread on the matrices whose factors it made.
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
    let mut x = super::super::pool::overwritten(len * xsize, T::ZERO);
    let outer = outer.map(|(y, yl)| (y, Batch::of(yl)));
    let mut prods = outer.as_ref().map(|_| super::super::pool::overwritten(len * size, T::ZERO));
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

/// Scratch of [`lu_inv`]: one lane group's interchanges and `info`, its factors in lanes,
/// and the inverse's buffer.
struct InvBufs<T> {
    piv: Vec<i64>,
    info: [i64; LANES],
    factor: Vec<[T; LANES]>,
    mid: MiddleBufs<T>,
}

/// `A⁻¹` for batches (at least [`LANES`]) of small square matrices (`n <=` `LANES_MAX`)
/// in one pass: each lane group is factorised ([`factor_lanes`], of `Aᵀ` given as `al`,
/// so `info` is that of `Aᵀ` as PyTorch's) and inverted from its factors while they are
/// in cache, still in lanes ([`middle_lanes`] with `X = I` on [`Factors::Lanes`]), as
/// [`lu_factor`] then [`lu_inv_t`] would, with no factor buffers and one split across
/// threads. The last, partial group of a
/// task is padded with repeats of its last matrix. `None` for other shapes. The result
/// is column-major (`(*, n, n)`, `A⁻¹` of each `A`), with `info` per matrix.
pub(crate) fn lu_inv<T: LinalgElem>(a: &[T], al: &Layout) -> Option<(Vec<T>, Layout, Vec<i64>)> {
    let ba = Batch::of(al);
    let n = ba.n;
    let len = ba.len();
    if ba.m != n || n == 0 || n > LANES_MAX || len < LANES {
        return None;
    }
    let size = n * n;
    let layout = colmajor_layout(&ba.dims, n, n);
    let mut out = super::super::pool::overwritten(len * size, T::ZERO);
    let mut info = vec![0i64; len];
    let ones = [T::ONE; LANES];
    let scratch = || InvBufs {
        piv: vec![0; LANES * n],
        info: [0; LANES],
        factor: vec![[T::ZERO; LANES]; size],
        // the factors stay in `factor`, and X = I needs no cotangent
        mid: MiddleBufs { a: Vec::new(), g: Vec::new(), x: vec![[T::ZERO; LANES]; size] },
    };
    // the lane group of matrices `src` (a batch of LANES) into `o` and `f`
    let group = |b: &mut InvBufs<T>, src: &Batch, first: usize, o: &mut [T], f: &mut [i64]| {
        factor_lanes(src, a, first, None, &mut b.piv, &mut b.info, &mut b.factor, None);
        let mid = Middle::Scale(&ones);
        middle_lanes(Factors::Lanes(&b.factor), n, &b.piv, &mid, 0, o, &mut b.mid, false);
        f.copy_from_slice(&b.info[..f.len()]);
    };
    let range = |start: usize, o: &mut [T], f: &mut [i64]| {
        let mut b = scratch();
        let count = f.len();
        let mut src = Batch::listed(vec![0; LANES], n, n, ba.rs, ba.cs);
        // the whole groups by the wide kernel where it applies (contiguous 4 x 4 blocks),
        // the groups it leaves and a last partial one by the lanes'
        let whole = count / LANES * LANES;
        let wide = match (n, ba.packed()) {
            (4, Some(pa)) if whole > 0 => T::invert_wide(
                &a[pa + start * size..pa + (start + whole) * size],
                &mut o[..whole * size],
                &mut f[..whole],
            ),
            _ => None,
        };
        let (undone, rest) = match wide {
            Some(u) => (u, whole),
            None => (Vec::new(), 0),
        };
        for g in undone.into_iter().map(|h| h * LANES).chain((rest..count).step_by(LANES)) {
            let k = LANES.min(count - g);
            let (gs, first) = group_batch(&mut src, &ba, start + g, k);
            // (middle_lanes writes the first k lanes only)
            group(&mut b, gs, first, &mut o[g * size..(g + k) * size], &mut f[g..g + k]);
        }
    };
    let work = size * n * 5;
    if len * work >= 2 * TASK_WORK {
        let per = lane_task_len(len, work);
        let (po, pf) = (Parts::new(&mut out, size * per), Parts::new(&mut info, per));
        run_tasks(pf.len(), |t| range(t * per, po.take(t), pf.take(t)));
    } else {
        range(0, &mut out, &mut info);
    }
    Some((out, layout, info))
}

#[cfg(test)]
mod tests {
    use super::{
        is_normal, ln_normal, lu_det, lu_factor_solve, lu_inv, lu_inv_t, lu_solve_saved, LANES,
    };
    use crate::layout::Layout;
    use crate::shape::Shape;

    /// The groups the wide kernels of `lu_wide` have written so far, and whether they run
    /// here at all (x86-64 with AVX-512). Other tests may add to the count meanwhile, so
    /// a test checks that it grew by at least its own share.
    fn wide_groups() -> (usize, bool) {
        #[cfg(target_arch = "x86_64")]
        {
            let n = super::super::lu_wide::WRITTEN.load(std::sync::atomic::Ordering::Relaxed);
            (n, crate::backend::cpu::wide::avx512())
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0, false)
        }
    }

    /// `len` matrices of `size` entries for the wide kernels' tests, from `next` (uniform
    /// in `[0, 1)`): entries in `[-1, 1)`, every fifth matrix small integers (ties in the
    /// pivot search), and past 20 matrices a singular one (9), one with an infinity (17)
    /// and one with a NaN (19).
    fn mixed_matrices(next: &mut impl FnMut() -> f64, len: usize, size: usize) -> Vec<f64> {
        let mut a: Vec<f64> = (0..len * size)
            .map(|i| {
                let u = next();
                if (i / size) % 5 == 2 {
                    (u * 7.0).floor() - 3.0
                } else {
                    2.0 * u - 1.0
                }
            })
            .collect();
        if len > 20 {
            a[9 * size..10 * size].fill(0.0);
            a[17 * size + 5] = f64::INFINITY;
            a[19 * size + 10] = f64::NAN;
        }
        a
    }

    /// `lu_factor_solve` of a contiguous batch of 4 x 4 matrices (the AVX-512 kernel where
    /// the CPU has it) gives the same bits as of the same matrices spaced apart in storage
    /// (the lane kernel): factors, interchanges, info and solutions, both ways round,
    /// with one to five right-hand sides, with random and tied (small integer) entries,
    /// and with singular, infinite and NaN matrices among them (the groups the wide kernel
    /// hands back). Whole and partial groups, on one thread and split across threads.
    #[test]
    #[allow(clippy::float_cmp)]
    fn wide_kernel_gives_the_lane_kernels_bits() {
        let mut rng = crate::backend::cpu::XorShift(0x2545_F491_4F6C_DD1D);
        let mut next = || rng.uniform();
        let n = 4;
        for len in [8usize, 16, 24, 40, 37, 4096 + 13] {
            for k in 1..=5usize {
                let (size, xsize) = (n * n, n * k);
                let a = mixed_matrices(&mut next, len, size);
                let b: Vec<f64> = (0..len * xsize).map(|_| 2.0 * next() - 1.0).collect();
                // the same matrices, one element apart
                let spaced = |v: &[f64], m: usize, c: usize| {
                    let mut out = vec![f64::NAN; len * (m * c + 1)];
                    for i in 0..len {
                        let o = i * (m * c + 1);
                        out[o..o + m * c].copy_from_slice(&v[i * m * c..(i + 1) * m * c]);
                    }
                    let lay = Layout::new(Shape::of([len, m, c]), vec![m * c + 1, 1, m], 0);
                    (out, lay)
                };
                let packed =
                    |m: usize, c: usize| Layout::new(Shape::of([len, m, c]), vec![m * c, 1, m], 0);
                let (sa, sal) = spaced(&a, n, n);
                let (sb, sbl) = spaced(&b, n, k);
                for adjoint in [false, true] {
                    let wide = lu_factor_solve(&a, &packed(n, n), &b, &packed(n, k), adjoint);
                    let lanes = lu_factor_solve(&sa, &sal, &sb, &sbl, adjoint);
                    let (Some(w), Some(l)) = (wide, lanes) else { panic!("no lane path") };
                    let what = format!("len {len} k {k} adjoint {adjoint}");
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&w.factors), bits(&l.factors), "{what}: factors");
                    assert_eq!(w.perms, l.perms, "{what}: interchanges");
                    assert_eq!(w.info, l.info, "{what}: info");
                    assert_eq!(bits(&w.x), bits(&l.x), "{what}: solutions");
                    if len > 20 {
                        assert!(w.info[9] > 0, "{what}: the singular matrix's info");
                    }
                    assert_eq!(w.factors.len(), len.div_ceil(LANES) * LANES * size);
                    // the saved factors' solve and outer products: contiguous right-hand
                    // sides and operand (the wide kernel) against spaced ones (the lanes')
                    let y: Vec<f64> = (0..len * xsize).map(|_| 2.0 * next() - 1.0).collect();
                    let (sy, syl) = spaced(&y, n, k);
                    for with_outer in [false, true] {
                        let yw = with_outer.then(|| (&y[..], packed(n, k)));
                        let yl = with_outer.then(|| (&sy[..], syl.clone()));
                        let saved = |b: &[f64], bl: &Layout, y: Option<(&[f64], Layout)>| {
                            let y = y.as_ref().map(|(v, l)| (*v, l));
                            lu_solve_saved(&w.factors, &w.perms, n, b, bl, adjoint, y)
                        };
                        let sw = saved(&b, &packed(n, k), yw);
                        let sl = saved(&sb, &sbl, yl);
                        let what = format!("{what} outer {with_outer}");
                        assert_eq!(bits(&sw.x), bits(&sl.x), "{what}: saved solve");
                        let (ow, ol) = (sw.outer.map(|o| bits(&o.0)), sl.outer.map(|o| bits(&o.0)));
                        assert_eq!(ow, ol, "{what}: outer products");
                        assert_eq!(ow.is_some(), with_outer);
                        // one value broadcast (a sum's cotangent) against the same value
                        // in every spaced block
                        let one = [0.375];
                        let splat = Layout::new(Shape::of([len, n, k]), vec![0, 0, 0], 0);
                        let yw = with_outer.then(|| (&y[..], packed(n, k)));
                        let yl = with_outer.then(|| (&sy[..], syl.clone()));
                        let (filled, fl) = spaced(&vec![one[0]; len * xsize], n, k);
                        let (sw, sl) = (saved(&one, &splat, yw), saved(&filled, &fl, yl));
                        assert_eq!(bits(&sw.x), bits(&sl.x), "{what}: broadcast saved solve");
                        let (ow, ol) = (sw.outer.map(|o| bits(&o.0)), sl.outer.map(|o| bits(&o.0)));
                        assert_eq!(ow, ol, "{what}: broadcast outer products");
                    }
                }
            }
        }
    }

    /// `lu_det`, `lu_inv_t` and `lu_inv` of contiguous batches of 4 x 4 matrices (the
    /// AVX-512 kernels where the CPU has them) give the same bits as of the same matrices
    /// spaced apart in storage (the lane kernels): factors, interchanges, info, each
    /// determinant's four outputs, the scaled inverses (both orders) and the inverses.
    /// Random and tied entries; singular, infinite and NaN matrices; products of pivots
    /// that overflow, underflow or are subnormal (the logarithm's fallback sum); a
    /// near-singular matrix (`loose`); whole and partial groups.
    #[test]
    #[allow(clippy::float_cmp)]
    fn wide_det_and_inverse_kernels_give_the_lane_kernels_bits() {
        let mut rng = crate::backend::cpu::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.uniform();
        let (n, size) = (4, 16);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for len in [8usize, 16, 24, 40, 37, 4096 + 13] {
            let mut a = mixed_matrices(&mut next, len, size);
            if len > 20 {
                // diagonal matrices whose pivots' product overflows, underflows, is
                // subnormal; one near-singular (a column nearly twice another)
                for (m, d) in [(3, 1e200), (11, 1e-200), (12, 1e-78)] {
                    a[m * size..(m + 1) * size].fill(0.0);
                    for i in 0..n {
                        a[m * size + i * (n + 1)] = if i == 1 { -d } else { d };
                    }
                }
                for i in 0..n {
                    a[13 * size + 4 + i] = 2.0 * a[13 * size + i] * (1.0 + 1e-12);
                }
            }
            let spaced = |v: &[f64]| {
                let mut out = vec![f64::NAN; len * (size + 1)];
                for i in 0..len {
                    out[i * (size + 1)..i * (size + 1) + size]
                        .copy_from_slice(&v[i * size..(i + 1) * size]);
                }
                (out, Layout::new(Shape::of([len, n, n]), vec![size + 1, 1, n], 0))
            };
            let packed = Layout::new(Shape::of([len, n, n]), vec![size, 1, n], 0);
            let (sa, sal) = spaced(&a);
            // every whole group by the wide kernels but those with a zero pivot or a
            // factor that is not finite (the singular, infinite and NaN matrices, and
            // singular small-integer ones) and at most one partner of each
            let factors = lu_det(&sa, &sal, false);
            let bad = (0..len / LANES)
                .filter(|g| {
                    let (m, blocks) =
                        (g * LANES..(g + 1) * LANES, g * LANES * size..(g + 1) * LANES * size);
                    factors.info[m].iter().any(|&i| i > 0)
                        || factors.lu[blocks].iter().any(|x| !x.is_finite())
                })
                .count();
            let share = (len / LANES).saturating_sub(2 * bad);
            for want_log in [false, true] {
                let what = format!("len {len} log {want_log}");
                let before = wide_groups();
                let w = lu_det(&a, &packed, want_log);
                let after = wide_groups();
                let ran = after.0 - before.0;
                assert!(!after.1 || ran >= share, "{what}: wide groups {ran} of {share}");
                let l = lu_det(&sa, &sal, want_log);
                assert_eq!(bits(&w.lu), bits(&l.lu), "{what}: factors");
                assert_eq!(w.piv, l.piv, "{what}: interchanges");
                assert_eq!(w.info, l.info, "{what}: info");
                assert_eq!(bits(&w.det), bits(&l.det), "{what}: det");
                assert_eq!(bits(&w.sign), bits(&l.sign), "{what}: sign");
                assert_eq!(bits(&w.logabs), bits(&l.logabs), "{what}: logabs");
                assert_eq!(w.loose, l.loose, "{what}: loose");
                if len > 20 && want_log {
                    assert!(w.info[9] > 0, "{what}: the singular matrix's info");
                    assert_eq!(w.det[3], f64::NEG_INFINITY, "{what}: overflowed det");
                    let logs = [(3, 1e200f64), (11, 1e-200), (12, 1e-78)];
                    for (m, d) in logs {
                        let want = 4.0 * d.ln();
                        assert!((w.logabs[m] - want).abs() <= 1e-12 * want.abs(), "{what} {m}");
                        assert_eq!(w.sign[m], -1.0, "{what}: sign {m}");
                    }
                    assert!(w.loose[13] && !w.loose[0], "{what}: loose");
                }
                // the scaled inverses from these factors (contiguous against spaced)
                let c: Vec<f64> = (0..len).map(|_| 2.0 * next() - 1.0).collect();
                let (sf, sfl) = spaced(&w.lu);
                for row_major in [false, true] {
                    let before = wide_groups();
                    let (xw, lw) = lu_inv_t(&w.lu, &w.layout, &w.piv, &c, row_major);
                    let after = wide_groups();
                    // (every whole group: the interchanges are an LU's)
                    assert!(!after.1 || after.0 - before.0 >= len / LANES, "{what}: inv_t ran");
                    let (xl, ll) = lu_inv_t(&sf, &sfl, &w.piv, &c, row_major);
                    assert_eq!(bits(&xw), bits(&xl), "{what} row-major {row_major}: inverse");
                    assert_eq!(lw, ll, "{what}: layout");
                }
            }
            let before = wide_groups();
            let wide = lu_inv(&a, &packed);
            let after = wide_groups();
            assert!(!after.1 || after.0 - before.0 >= share, "len {len}: invert ran");
            let (Some(w), Some(l)) = (wide, lu_inv(&sa, &sal)) else { panic!("no lane path") };
            assert_eq!(bits(&w.0), bits(&l.0), "len {len}: inv");
            assert_eq!(w.2, l.2, "len {len}: inv info");
            // the inverse does invert (a well-conditioned matrix): the layout is that of
            // M = Aᵀ, the result X = A⁻¹ = M⁻ᵀ column-major, so M Xᵀ = I
            let (m, x) = (&a[..size], &w.0[..size]);
            for i in 0..n {
                for j in 0..n {
                    let e: f64 = (0..n).map(|q| m[q * n + i] * x[q * n + j]).sum();
                    let id = if i == j { 1.0 } else { 0.0 };
                    assert!((e - id).abs() < 1e-10, "len {len}: A⁻¹ A at {i} {j}: {e}");
                }
            }
        }
    }

    /// The distance between two finite doubles of one sign, in units in the last place.
    fn ulps(a: f64, b: f64) -> u64 {
        let (x, y) = (a.to_bits() as i64, b.to_bits() as i64);
        if (x < 0) != (y < 0) {
            return a.to_bits().max(b.to_bits()) - a.to_bits().min(b.to_bits());
        }
        x.abs_diff(y)
    }

    /// `ln_normal` is within one ulp of the platform's `ln` over the normal range: random
    /// mantissas at every exponent, around 1 (where the result is tiny), on either side
    /// of the √2 reduction boundary, and the extremes; exact at 1 and at powers of 2
    /// within an ulp of k ln 2.
    #[test]
    #[allow(clippy::float_cmp)]
    fn ln_normal_is_within_an_ulp_of_ln() {
        let mut rng = crate::backend::cpu::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.next_u64();
        let mut xs = vec![f64::MIN_POSITIVE, f64::MAX, 1.0, 2.0, 0.5];
        for e in 1..2047u64 {
            for _ in 0..64 {
                xs.push(f64::from_bits((e << 52) | (next() >> 12)));
            }
        }
        for _ in 0..20_000 {
            let t = (next() >> 11) as f64 / (1u64 << 53) as f64;
            xs.push(1.0 + (t - 0.5) * 1e-3);
            xs.push(1.0 + (t - 0.5) * 1e-12);
        }
        let root = std::f64::consts::SQRT_2;
        for d in -1000i64..1000 {
            let r = f64::from_bits((root.to_bits() as i64 + d) as u64);
            xs.extend([r, r * 0.5, r * 1024.0]);
        }
        let mut off = 0usize;
        for &x in &xs {
            assert!(is_normal(x), "{x}");
            let (got, want) = (ln_normal(x), x.ln());
            let d = ulps(got, want);
            assert!(d <= 1, "ln {x:e}: {got:e} vs {want:e} ({d} ulps)");
            off += usize::from(d > 0);
        }
        // (the rounding differs from the platform's on a small share of the inputs)
        // (705 of 176949 when written)
        assert!(off * 100 < xs.len(), "{off} of {} off by an ulp", xs.len());
        assert_eq!(ln_normal(1.0), 0.0);
        for k in -1022i32..1024 {
            let x = 2f64.powi(k);
            assert!(ulps(ln_normal(x), f64::from(k) * std::f64::consts::LN_2) <= 1, "2^{k}");
        }
        for x in [0.0, -1.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE / 2.0] {
            assert!(!is_normal(x), "{x}");
        }
    }
}
