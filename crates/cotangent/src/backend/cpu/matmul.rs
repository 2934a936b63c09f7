//! Batched matrix products on strided layouts: a direct loop for small matrices (no
//! allocation, no dispatch cost), faer's GEMM for the rest, rayon over batches.

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::strided::walk;
use crate::dtype::Float;
use crate::layout::Layout;

/// Work (m·n·k) below which the direct loop beats faer's dispatch.
const SMALL: usize = 16 * 16 * 16;
/// Work above which faer is allowed to use both threads.
const PAR_THRESHOLD: usize = 192 * 192 * 192;

/// Elements that faer multiplies: `f32`, `f64`.
pub(crate) trait GemmElem: Float + faer::traits::ComplexField {}
impl GemmElem for f32 {}
impl GemmElem for f64 {}

/// One matrix operand: base offset, and row/col strides.
#[derive(Clone, Copy)]
struct Mat {
    off: usize,
    rs: usize,
    cs: usize,
}

fn view<'a, T: GemmElem>(
    data: &'a [T],
    m: Mat,
    rows: usize,
    cols: usize,
    tmp: &'a mut Vec<T>,
) -> MatRef<'a, T> {
    let s = &data[m.off..];
    if m.cs == 1 || cols <= 1 {
        MatRef::from_row_major_slice_with_stride(s, rows, cols, m.rs)
    } else if m.rs == 1 || rows <= 1 {
        MatRef::from_column_major_slice_with_stride(s, rows, cols, m.cs)
    } else {
        tmp.clear();
        for i in 0..rows {
            for j in 0..cols {
                tmp.push(s[i * m.rs + j * m.cs]);
            }
        }
        MatRef::from_row_major_slice(tmp.as_slice(), rows, cols)
    }
}

/// `out[b] = a[b] · b[b]` for one batch element, into a row-major `m x n` block.
fn one<T: GemmElem>(
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
    par: Par,
) {
    if m * n * k <= SMALL {
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::ZERO;
                for p in 0..k {
                    acc += a[am.off + i * am.rs + p * am.cs] * b[bm.off + p * bm.rs + j * bm.cs];
                }
                out[i * n + j] = acc;
            }
        }
        return;
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    let av = view(a, am, m, k, &mut ta);
    let bv = view(b, bm, k, n, &mut tb);
    let dst = MatMut::from_row_major_slice_mut(out, m, n);
    faer_matmul(dst, Accum::Replace, av, bv, T::ONE, par);
}

/// Batched product of `a: (*, m, k)` and `b: (*, k, n)` whose batch dims are equal
/// (already broadcast). Returns the row-major `(*, m, n)` result.
pub(crate) fn matmul<T: GemmElem>(a: &[T], al: &Layout, b: &[T], bl: &Layout) -> Vec<T> {
    let r = al.rank();
    let (m, k, n) = (al.dims()[r - 2], al.dims()[r - 1], bl.dims()[r - 1]);
    let batch_dims = &al.dims()[..r - 2];
    let batch: usize = batch_dims.iter().product();
    let mut out = vec![T::ZERO; batch * m * n];
    if out.is_empty() {
        return out;
    }
    let mut mats = Vec::with_capacity(batch);
    walk(
        batch_dims,
        [&al.strides()[..r - 2], &bl.strides()[..r - 2]],
        [al.offset(), bl.offset()],
        |[oa, ob]| {
            mats.push((
                Mat { off: oa, rs: al.strides()[r - 2], cs: al.strides()[r - 1] },
                Mat { off: ob, rs: bl.strides()[r - 2], cs: bl.strides()[r - 1] },
            ));
        },
    );
    let work = m * n * k;
    if batch == 1 {
        let par = if work >= PAR_THRESHOLD { Par::rayon(0) } else { Par::Seq };
        one(a, mats[0].0, b, mats[0].1, &mut out, m, k, n, par);
    } else if batch * work >= 1 << 15 && work < PAR_THRESHOLD {
        out.par_chunks_mut(m * n).zip(mats.par_iter()).for_each(|(o, &(am, bm))| {
            one(a, am, b, bm, o, m, k, n, Par::Seq);
        });
    } else {
        let par = if work >= PAR_THRESHOLD { Par::rayon(0) } else { Par::Seq };
        for (o, &(am, bm)) in out.chunks_mut(m * n).zip(&mats) {
            one(a, am, b, bm, o, m, k, n, par);
        }
    }
    out
}
