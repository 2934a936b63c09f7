//! Inverses from the LU: the scaled inverse transposes `c A⁻ᵀ` of packed factors
//! ([`lu_inv_t`]: [`super::backward`]'s `P L⁻ᵀ X U⁻ᵀ` with `X = c I` for small orders,
//! column blocks of `c A⁻¹` split across threads above, [`scaled_inverse`]), and `A⁻¹` of
//! batches of small matrices in one pass, each lane group factorised and inverted while
//! its factors are in the lanes ([`lu_inv`]).

use faer::linalg::triangular_solve as ts;
use faer::{MatRef, Par};
use std::sync::Mutex;

use super::super::lanes::{group_batch, lane_task_len, LANES, LANES_MAX};
use super::super::{colmajor_layout, colmajor_mut, Batch, LinalgElem, TASK_WORK};
use super::backward::{lu_middle, middle_lanes, Factors, Middle, MiddleBufs};
use super::factor::factor_lanes;
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::layout::Layout;

/// `c_i A_i⁻ᵀ = c_i P L⁻ᵀ U⁻ᵀ` for each `A = P L U` given by square packed factors
/// `lu: (*, n, n)` and contiguous interchanges `piv: (*, n)`, with one scale per matrix
/// (`c`, contiguous). (`A⁻¹` when the factors are those of `Aᵀ` and `c = 1`.) For
/// `n <=` `SMALL_BACKWARD` the result is row-major if `row_major`, else column-major;
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

/// `n` from which one matrix's [`scaled_inverse`] splits its columns across threads.
pub(super) const PAR_INVERSE_N: usize = 128;

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
pub(super) fn scaled_inverse<T: LinalgElem>(
    lu: &[T],
    ipiv: &[i64],
    c: T,
    x: &mut [T],
    n: usize,
    split: bool,
) {
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

/// Scratch of [`lu_inv`]: one lane group's interchanges and `info`, its factors in lanes,
/// and the inverse's buffer.
struct InvBufs<T> {
    piv: Vec<i64>,
    info: [i64; LANES],
    factor: Vec<[T; LANES]>,
    mid: MiddleBufs<T>,
}

/// `A⁻¹` for batches (at least [`LANES`]) of small square matrices (`n <=` `LANES_MAX`) in
/// one pass: each lane group is factorised ([`factor_lanes`], of `Aᵀ` given as `al`, so
/// `info` is that of `Aᵀ` as PyTorch's) and inverted from its factors while they are in
/// cache, still in lanes ([`middle_lanes`] with `X = I` on [`Factors::Lanes`]), as
/// [`lu_factor`](super::lu_factor) then [`lu_inv_t`] would, with no factor buffers and one
/// split across threads. The last, partial group of a task is padded with repeats of its
/// last matrix. `None` for other shapes. The result is column-major (`(*, n, n)`, `A⁻¹` of
/// each `A`), with `info` per matrix.
pub(crate) fn lu_inv<T: LinalgElem>(a: &[T], al: &Layout) -> Option<(Vec<T>, Layout, Vec<i64>)> {
    let ba = Batch::of(al);
    let n = ba.n;
    let len = ba.len();
    if ba.m != n || n == 0 || n > LANES_MAX || len < LANES {
        return None;
    }
    let size = n * n;
    let layout = colmajor_layout(&ba.dims, n, n);
    let mut out = crate::backend::cpu::pool::overwritten(len * size, T::ZERO);
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
