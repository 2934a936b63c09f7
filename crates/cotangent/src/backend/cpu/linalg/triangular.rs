//! Triangular solves `A X = B` / `X A = B`, batched (faer's blocked substitution).

use faer::linalg::triangular_solve as ts;
use faer::{MatMut, MatRef, Par};

use super::{colmajor_layout, colmajor_mut, for_each_matrix, load_colmajor, Batch, LinalgElem};
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::backend::TriSolve;
use crate::layout::Layout;

/// Work (n² k per matrix) above which faer may use both threads on one matrix.
const PAR_WORK: usize = 512 * 512 * 512;
/// Work (n² k per matrix) from which one matrix's right-hand sides are split across
/// threads by column ranges, each solved by faer's sequential kernel (on a two-core
/// Intel AVX-512 host faer's parallel triangular solve scaled far worse than independent
/// halves).
const SPLIT_WORK: usize = 128 * 128 * 128;
/// Fewest right-hand sides per thread of a split solve.
const SPLIT_COLS: usize = 32;

/// Solves with the `upper` (else lower) triangle of `a` in place of `x` (unit diagonal
/// if `unit`), real or complex.
pub(crate) fn solve_in_place<T: faer::traits::ComplexField>(
    a: MatRef<'_, T>,
    x: MatMut<'_, T>,
    upper: bool,
    unit: bool,
    par: Par,
) {
    match (upper, unit) {
        (false, false) => ts::solve_lower_triangular_in_place(a, x, par),
        (false, true) => ts::solve_unit_lower_triangular_in_place(a, x, par),
        (true, false) => ts::solve_upper_triangular_in_place(a, x, par),
        (true, true) => ts::solve_unit_upper_triangular_in_place(a, x, par),
    }
}

/// The batches of a triangular solve's `A` and right-hand side, and the result's layout:
/// left, `B` as it is and the result column-major; right, `B`'s batch read as `Bᵀ`
/// (`n x k` column-major is `B` row-major) and the result row-major (contiguous).
pub(crate) fn batches(al: &Layout, bl: &Layout, spec: TriSolve) -> (Batch, Batch, Layout) {
    let ba = Batch::of(al);
    let mut bb = Batch::of(bl);
    let (rows, cols) = (bb.m, bb.n); // of B
    let out_layout = if spec.left {
        colmajor_layout(&bb.dims, rows, cols)
    } else {
        let mut dims = bb.dims.clone();
        dims.extend([rows, cols]);
        Layout::contiguous(crate::shape::Shape::new(dims))
    };
    if !spec.left {
        std::mem::swap(&mut bb.m, &mut bb.n);
        std::mem::swap(&mut bb.rs, &mut bb.cs);
    }
    (ba, bb, out_layout)
}

/// Solves with the triangle of each `a: (*, n, n)` for each `b` (same batch dims):
/// `left`: `b: (*, n, k)`, `A X = B`, result column-major; right: `b: (*, k, n)`,
/// `X A = B` solved as `Aᵀ Xᵀ = Bᵀ`, result row-major (contiguous).
pub(crate) fn solve_triangular<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    b: &[T],
    bl: &Layout,
    spec: TriSolve,
) -> (Vec<T>, Layout) {
    let (ba, bb, out_layout) = batches(al, bl, spec);
    let n = ba.n;
    let (xm, xn) = (bb.m, bb.n); // n x k
    let size = xm * xn;
    let mut out = crate::backend::cpu::pool::filled(ba.len() * size, T::ZERO);
    if size == 0 {
        return (out, out_layout);
    }
    let work = n * n * xn;
    let threads = rayon::current_num_threads();
    if work >= SPLIT_WORK && xn >= 2 * SPLIT_COLS && threads > 1 && ba.len() < 2 * threads {
        // one matrix at a time, its right-hand sides by column ranges, one per thread,
        // each loaded and solved by faer's sequential kernel: columns are independent, so
        // the bits do not depend on the split
        let parts = threads.min(xn / SPLIT_COLS);
        let per = xn.div_ceil(parts);
        for (i, dst) in out.chunks_exact_mut(size).enumerate() {
            let mut tmp = Vec::new();
            let am = ba.mat(a, i, &mut tmp);
            let (am, upper) =
                if spec.left { (am, spec.upper) } else { (am.transpose(), !spec.upper) };
            let ranges = Parts::new(dst, per * xm);
            let off = bb.offset(i);
            run_tasks(ranges.len(), |t| {
                let cols = ranges.take(t);
                let len = cols.len() / xm;
                load_colmajor(b, off + t * per * bb.cs, xm, len, bb.rs, bb.cs, cols);
                solve_in_place(am, colmajor_mut(cols, xm, len), upper, spec.unit, Par::Seq);
            });
        }
        return (out, out_layout);
    }
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, par: Par| {
        bb.load(b, i, dst);
        let am = ba.mat(a, i, tmp);
        let (am, upper) = if spec.left { (am, spec.upper) } else { (am.transpose(), !spec.upper) };
        solve_in_place(am, colmajor_mut(dst, xm, xn), upper, spec.unit, par);
    };
    for_each_matrix(&mut out, size, work, work >= PAR_WORK, one);
    (out, out_layout)
}
