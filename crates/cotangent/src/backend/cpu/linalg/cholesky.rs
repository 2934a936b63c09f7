//! Cholesky factorisation `A = L Lᵀ`, batched: a direct loop for small matrices, faer's
//! blocked left-looking factorisation above.
//!
//! Only the lower triangle of `A` is read (the upper one, for `upper`, by reading `Aᵀ`).
//! A matrix that is not positive definite (a pivot `≤ 0` or NaN, LAPACK's test) gets
//! `info = k`, the order of its first failing leading minor, and is left in the state of
//! LAPACK's unblocked `potf2`: columns `< k − 1` of the factor, the non-positive pivot
//! `a_kk − Σ l_kj²` on the diagonal at `k`, and `A`'s own entries below it and to its right.
//! (PyTorch's LAPACK leaves the same state up to `n ≈ 100`, where it switches to a blocked
//! algorithm.)

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::{Par, Spec};
use rayon::prelude::*;

use super::{colmajor_layout, colmajor_mut, Batch, LinalgElem};
use crate::dtype::Float;
use crate::layout::Layout;
use crate::shape::Shape;

/// Largest order factorised by the direct loop (faer above).
pub(crate) const DIRECT_MAX: usize = 48;
/// Work (about n³ / 3 flops per matrix) per rayon task when the batch is split.
const TASK_WORK: usize = 1 << 15;
/// Order above which faer may use both threads on one matrix.
const PAR_N: usize = 768;

#[inline(always)]
fn dot<T: Float>(a: &[T], b: &[T]) -> T {
    let mut s = T::ZERO;
    for (&x, &y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// Row `i` of the factor, columns `..cols`, from the rows above it (already final) and
/// `A`'s entries in place: `l_ij = (a_ij − Σ_{k<j} l_ik l_jk) / l_jj`.
#[inline(always)]
fn row_below<T: Float>(l: &mut [T], n: usize, i: usize, cols: usize) {
    let (done, rest) = l.split_at_mut(i * n);
    let row = &mut rest[..n];
    for j in 0..cols {
        let lj = &done[j * n..j * n + j + 1];
        let s = row[j] - dot(&row[..j], &lj[..j]);
        row[j] = s / lj[j];
    }
}

/// Factorises in place the row-major `n x n` matrix `l` whose lower triangle holds `A`'s
/// (the strict upper triangle is zero and stays so). Returns 0 or the order of the first
/// non-positive leading minor, leaving `potf2`'s state (see the module docs).
pub(crate) fn potf2_rows<T: Float>(l: &mut [T], n: usize) -> usize {
    for i in 0..n {
        row_below(l, n, i, i);
        let row = &mut l[i * n..i * n + i + 1];
        let d = row[i] - dot(&row[..i], &row[..i]);
        if !(d > T::ZERO) {
            row[i] = d;
            // potf2 is column-oriented: columns < i are complete in every row below
            for r in i + 1..n {
                row_below(l, n, r, i);
            }
            return i + 1;
        }
        row[i] = Float::sqrt(d);
    }
    0
}

/// Loads the lower triangle of matrix `i` of `ba` into `dst` (row-major, zero above).
fn load_lower_rows<T: Copy>(ba: &Batch, a: &[T], i: usize, dst: &mut [T]) {
    let (n, off) = (ba.n, ba.offsets[i]);
    for r in 0..n {
        let base = off + r * ba.rs;
        for (c, d) in dst[r * n..r * n + r + 1].iter_mut().enumerate() {
            *d = a[base + c * ba.cs];
        }
    }
}

/// Factorises matrix `i` of `ba` into `dst` (row-major for the direct loop, else
/// column-major); returns its `info`.
fn factor_one<T: LinalgElem>(
    ba: &Batch,
    a: &[T],
    i: usize,
    dst: &mut [T],
    direct: bool,
    par: Par,
    scratch: &mut Option<MemBuffer>,
) -> i64 {
    let n = ba.n;
    if direct {
        load_lower_rows(ba, a, i, dst);
        return potf2_rows(dst, n) as i64;
    }
    // column-major lower triangle for faer (the upper triangle stays zero)
    let off = ba.offsets[i];
    for c in 0..n {
        for r in c..n {
            dst[c * n + r] = a[off + r * ba.rs + c * ba.cs];
        }
    }
    let buf = scratch.get_or_insert_with(|| {
        MemBuffer::new(cholesky_in_place_scratch::<T>(n, par, Spec::default()))
    });
    let res = cholesky_in_place(
        colmajor_mut(dst, n, n),
        Default::default(),
        par,
        MemStack::new(buf),
        Spec::default(),
    );
    let failed = res.is_err() || (0..n).any(|k| !dst[k * n + k].is_finite());
    if !failed {
        // faer may leave workspace values above the diagonal
        for c in 1..n {
            dst[c * n..c * n + c].fill(T::ZERO);
        }
        return 0;
    }
    // rerun with the direct loop for LAPACK's order and state
    let mut rows = vec![T::ZERO; n * n];
    load_lower_rows(ba, a, i, &mut rows);
    let info = potf2_rows(&mut rows, n);
    for r in 0..n {
        for c in 0..n {
            dst[c * n + r] = rows[r * n + c];
        }
    }
    info as i64
}

/// Factorises each `a: (*, n, n)` (reading its lower triangle, or its upper one if
/// `upper`) into `L` (or `U = Lᵀ` if `upper`). Returns the factors (with their layout)
/// and each matrix's `info`: 0, or the order of its first non-positive leading minor.
pub(crate) fn cholesky<T: LinalgElem>(
    a: &[T],
    al: &Layout,
    upper: bool,
) -> (Vec<T>, Layout, Vec<i64>) {
    let mut ba = Batch::of(al);
    if upper {
        // the upper triangle of A is the lower one of Aᵀ, and U = (chol Aᵀ)ᵀ
        std::mem::swap(&mut ba.rs, &mut ba.cs);
    }
    let n = ba.n;
    let size = n * n;
    let direct = n <= DIRECT_MAX;
    // the direct loop writes L row-major (so U column-major), faer L column-major
    let layout = if direct != upper {
        let mut dims = ba.dims.clone();
        dims.extend([n, n]);
        Layout::contiguous(Shape::new(dims))
    } else {
        colmajor_layout(&ba.dims, n, n)
    };
    let mut out = crate::backend::cpu::pool::filled(ba.len() * size, T::ZERO);
    let mut info = vec![0i64; ba.len()];
    if size == 0 {
        return (out, layout, info);
    }
    let work = (size * n / 3).max(1);
    if ba.len() > 1 && n < PAR_N && ba.len() * work >= 2 * TASK_WORK {
        let per_task = (TASK_WORK / work).max(1);
        out.par_chunks_mut(size * per_task)
            .zip(info.par_chunks_mut(per_task))
            .enumerate()
            .for_each(|(t, (chunk, inf))| {
                let mut scratch = None;
                for (j, (dst, k)) in chunk.chunks_exact_mut(size).zip(inf).enumerate() {
                    *k = factor_one(&ba, a, t * per_task + j, dst, direct, Par::Seq, &mut scratch);
                }
            });
    } else {
        let par = if n >= PAR_N { Par::rayon(0) } else { Par::Seq };
        let mut scratch = None;
        for (i, (dst, k)) in out.chunks_exact_mut(size).zip(&mut info).enumerate() {
            *k = factor_one(&ba, a, i, dst, direct, par, &mut scratch);
        }
    }
    (out, layout, info)
}
