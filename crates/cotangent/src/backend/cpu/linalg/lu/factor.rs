//! The factorisation `A = P L U` of a batch (LAPACK's `getrf` outputs): the
//! allocation-free right-looking loop of small matrices ([`lu_unblocked`], LAPACK's
//! `getf2`); the same loop over [`LANES`] small square matrices at once in SIMD lanes
//! ([`factor_lanes`]), each lane's factors those of the one-matrix loop; faer's recursive
//! blocked LU for larger ones ([`lu_blocked`]), its row permutation turned back into
//! LAPACK's interchanges; and for one large matrix a right-looking blocked LU whose
//! trailing updates split across threads by column ranges ([`lu_split`]). A matrix that
//! meets an exactly zero or a subnormal pivot on the blocked paths is redone by the
//! unblocked loop, for LAPACK's partial state and `info`.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor as pp;
use faer::linalg::triangular_solve as ts;
use faer::{MatRef, Par, Spec};

use super::super::lanes::{lane_offsets, lane_task_len, load_lanes, store_lanes, LANES, LANES_MAX};
use super::super::order::{by_order, by_order_simd};
use super::super::{colmajor_layout, colmajor_mut, Batch, LinalgElem, TASK_WORK};
use super::det::{det_one, is_normal, ln_normal, logabs_of, DetOut, DetSpec};
use super::PAR_WORK;
use super::ROWS;
use crate::backend::cpu::par::{run_tasks, with_par, Parts};
use crate::layout::Layout;

/// `min(m, n)` up to which the unblocked loop is used.
const UNBLOCKED: usize = 48;
/// LAPACK's `getf2` on the column-major `m x n` matrix `a` (leading dimension `m`):
/// `ipiv` gets the 1-based row interchanges; returns `info` (0, or the 1-based index of
/// the first exactly zero pivot, whose column is then left unscaled as LAPACK does).
/// NaN never stops the loop: every step is a fixed amount of work.
pub(super) fn lu_unblocked<T: LinalgElem>(
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

/// LU of the square matrices `first..first + LANES` of `ba` (`n <= LANES_MAX`) into
/// `dst` (`LANES` column-major blocks), `ipiv` and `info`, with the order a constant
/// where it is small (unrolled loops) and the widest instruction set the CPU has.
#[allow(clippy::too_many_arguments)]
pub(super) fn factor_lanes<T: LinalgElem>(
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
    by_order_simd!(crate::backend::cpu::simd::arch(), ba.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N> { ba, a, first, dst, ipiv, info, buf, det },
        _ => Kernel::<T, 0> { ba, a, first, dst, ipiv, info, buf, det });
}

/// [`lu_unblocked`] on [`LANES`] square `n x n` matrices at once, every operation over the
/// lanes, in the same order as the one-matrix loop (so the factors are the same). A matrix
/// that meets an exactly zero pivot or a value that is not finite is redone alone by
/// [`lu_unblocked`], for LAPACK's partial state and `info`. With `det`, each matrix's
/// determinant too ([`DetOne`](super::det::DetOne)), over the lanes, in [`det_one`]'s
/// order.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign;
// x − x tests finiteness
#[allow(
    clippy::needless_range_loop,
    clippy::assign_op_pattern,
    clippy::too_many_arguments,
    clippy::eq_op
)]
#[inline(always)]
pub(super) fn factor_lanes_n<T: LinalgElem, S: pulp::Simd>(
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
/// sequence of interchanges `swap row j with row ipiv[j] - 1 >= j`, which it determines
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
/// ranges (see [`scaled_inverse`](super::inverse::scaled_inverse)).
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

/// Batched LU with partial pivoting of `a: (*, m, n)`: the packed factors (column-major
/// `(*, m, n)`: `L` strictly below the diagonal with an implied unit diagonal, `U` on and
/// above), the 1-based interchanges `(*, min(m, n))`, and `info` per matrix.
pub(crate) fn lu_factor<T: LinalgElem>(
    a: &[T],
    al: &Layout,
) -> (Vec<T>, Layout, Vec<i64>, Vec<i64>) {
    lu_factor_impl::<T>(a, al, None)
}

/// [`lu_factor`], and with `det` (square matrices only) each matrix's
/// [`DetOne`](super::det::DetOne) into its outputs (one entry per matrix).
pub(super) fn lu_factor_impl<T: LinalgElem>(
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
    let mut out = crate::backend::cpu::pool::overwritten(ba.len() * size, T::ZERO);
    // every pivot is written (each path sets all k of its matrix)
    let mut piv = crate::backend::cpu::pool::overwritten(ba.len() * k, 0i64);
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
