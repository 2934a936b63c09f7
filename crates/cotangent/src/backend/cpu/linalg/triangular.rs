//! Triangular solves `A X = B` / `X A = B`, batched (faer's blocked substitution).

use faer::linalg::triangular_solve as ts;
use faer::{MatMut, MatRef, Par};

use super::{colmajor_layout, colmajor_mut, for_each_matrix, Batch, LinalgElem};
use crate::backend::TriSolve;
use crate::layout::Layout;

/// Work (n² k per matrix) above which faer may use both threads on one matrix.
const PAR_WORK: usize = 512 * 512 * 512;

fn solve_in_place<T: LinalgElem>(
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
    let ba = Batch::of(al);
    let mut bb = Batch::of(bl);
    let n = ba.n;
    let (rows, cols) = (bb.m, bb.n); // of B
    let out_layout = if spec.left {
        colmajor_layout(&bb.dims, rows, cols)
    } else {
        let mut dims = bb.dims.clone();
        dims.extend([rows, cols]);
        Layout::contiguous(crate::shape::Shape::new(dims))
    };
    if !spec.left {
        // work on Bᵀ: (n x rows) column-major is B row-major
        std::mem::swap(&mut bb.m, &mut bb.n);
        std::mem::swap(&mut bb.rs, &mut bb.cs);
    }
    let (xm, xn) = (bb.m, bb.n); // n x k
    let size = xm * xn;
    let mut out = crate::backend::cpu::pool::filled(ba.len() * size, T::ZERO);
    if size == 0 {
        return (out, out_layout);
    }
    let work = n * n * xn;
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, par: Par| {
        bb.load(b, i, dst);
        let am = ba.mat(a, i, tmp);
        let (am, upper) = if spec.left { (am, spec.upper) } else { (am.transpose(), !spec.upper) };
        solve_in_place(am, colmajor_mut(dst, xm, xn), upper, spec.unit, par);
    };
    for_each_matrix(&mut out, size, work, work >= PAR_WORK, one);
    (out, out_layout)
}
