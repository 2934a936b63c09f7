//! Dense factorisations and solvers over batches of strided matrices, on faer.
//!
//! Conventions shared by every kernel here:
//! - an input is a [`Layout`] of rank >= 2 whose leading dims are the batch (already
//!   broadcast above the seam: two operands of one kernel have the same batch dims);
//! - [`Batch`] lists the offset of each matrix; a matrix is read through its strides with
//!   no copy when one stride is 1 ([`mat_ref`]), else copied once;
//! - results are fresh buffers of column-major matrices, one after another (PyTorch's
//!   and LAPACK's layout); [`colmajor_layout`] describes them honestly with strides
//!   `(…, 1, m)`, and `mT` of such a result is contiguous;
//! - per-matrix status (`info`) is returned as LAPACK numbers it: 0 for success, `k > 0`
//!   for the 1-based index of the failing pivot or leading minor.

pub(crate) mod bidiag_dc;
pub(crate) mod bidiag_split;
pub(crate) mod cholesky;
pub(crate) mod cholesky_jvp;
pub(crate) mod complex;
pub(crate) mod eigh;
pub(crate) mod householder;
mod jacobi;
pub(crate) mod lanes;
pub(crate) mod ldl;
pub(crate) mod lu;
pub(crate) mod matrix_exp;
mod order;
pub(crate) mod qr;
mod secular;
pub(crate) mod svd;
pub(crate) mod svd_split;
pub(crate) mod triangular;
pub(crate) mod tridiag_dc;
pub(crate) mod tridiag_qr;
pub(crate) mod tridiag_split;

use faer::{MatMut, MatRef, Par};

use crate::dtype::Float;
use crate::layout::Layout;
use crate::shape::Shape;

use super::strided::walk;

/// Elements faer factorises: `f32`, `f64`.
pub(crate) trait LinalgElem:
    Float
    + faer::traits::RealField
    + super::pool::Pooled
    + lanes::LaneMoves
    + lu::WideLu
    + tridiag_split::SymvSimd
{
}
impl LinalgElem for f32 {}
impl LinalgElem for f64 {}

/// The matrices of a batched layout `(*, m, n)`.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    /// The batch dims.
    pub(crate) dims: Vec<usize>,
    /// Where each matrix starts.
    offsets: Offsets,
    pub(crate) m: usize,
    pub(crate) n: usize,
    /// Row and column strides.
    pub(crate) rs: usize,
    pub(crate) cs: usize,
}

/// The storage offset of each matrix of a [`Batch`], in row-major order of the batch dims.
#[derive(Debug, Clone)]
enum Offsets {
    /// Matrix `i` at `base + i * step` (the batch dims merge into one, as in any
    /// contiguous or transposed tensor): nothing to list.
    Even { base: usize, step: usize, len: usize },
    /// Every offset, for batch dims that do not merge (a permuted or sliced batch).
    Listed(Vec<usize>),
}

impl Batch {
    pub(crate) fn of(l: &Layout) -> Batch {
        let r = l.rank();
        debug_assert!(r >= 2);
        let dims = l.dims()[..r - 2].to_vec();
        let strides = &l.strides()[..r - 2];
        let len: usize = dims.iter().product();
        // the batch dims merge into one of stride `step` (the innermost one's) when each
        // dim's stride is the next inner one's times that one's size (dims of size 1 do
        // not count)
        let mut step = None;
        let mut even = true;
        let mut inner: Option<(usize, usize)> = None;
        for (&d, &s) in dims.iter().zip(strides).rev() {
            if d == 1 {
                continue;
            }
            match inner {
                None => step = Some(s),
                Some((id, is)) => even &= s == id * is,
            }
            inner = Some((d, s));
        }
        let offsets = if even {
            Offsets::Even { base: l.offset(), step: step.unwrap_or(0), len }
        } else {
            let mut offsets = Vec::with_capacity(len);
            walk(&dims, [strides], [l.offset()], |[o]| offsets.push(o));
            Offsets::Listed(offsets)
        };
        Batch {
            dims,
            offsets,
            m: l.dims()[r - 2],
            n: l.dims()[r - 1],
            rs: l.strides()[r - 2],
            cs: l.strides()[r - 1],
        }
    }

    /// Where matrix 0 starts if the matrices are column-major blocks one after another
    /// (matrix `i` at that plus `i * m * n`), as a contiguous batch's transposes are.
    pub(crate) fn packed(&self) -> Option<usize> {
        let col_major = self.rs == 1 && (self.cs == self.m || self.n == 1);
        match self.offsets {
            Offsets::Even { base, step, len }
                if col_major && (step == self.m * self.n || len <= 1) =>
            {
                Some(base)
            }
            _ => None,
        }
    }

    /// A batch of `m x n` matrices with strides `rs`, `cs` at the given offsets.
    pub(crate) fn listed(offsets: Vec<usize>, m: usize, n: usize, rs: usize, cs: usize) -> Batch {
        Batch { dims: vec![offsets.len()], offsets: Offsets::Listed(offsets), m, n, rs, cs }
    }

    /// The number of matrices.
    pub(crate) fn len(&self) -> usize {
        match &self.offsets {
            Offsets::Even { len, .. } => *len,
            Offsets::Listed(o) => o.len(),
        }
    }

    /// Where matrix `i` starts in the storage.
    #[inline]
    pub(crate) fn offset(&self, i: usize) -> usize {
        match &self.offsets {
            Offsets::Even { base, step, len } => {
                assert!(i < *len, "matrix {i} of a batch of {len}");
                base + i * step
            }
            Offsets::Listed(o) => o[i],
        }
    }

    /// Sets where matrix `i` starts (a [`Batch::listed`] batch).
    pub(crate) fn set_offset(&mut self, i: usize, off: usize) {
        match &mut self.offsets {
            Offsets::Listed(o) => o[i] = off,
            Offsets::Even { .. } => unreachable!("set_offset on an evenly spaced batch"),
        }
    }

    /// Matrix `i`, read in place when a stride is 1, else copied into `tmp`.
    pub(crate) fn mat<'a, T: Copy>(
        &self,
        data: &'a [T],
        i: usize,
        tmp: &'a mut Vec<T>,
    ) -> MatRef<'a, T> {
        mat_ref(data, self.offset(i), self.m, self.n, self.rs, self.cs, tmp)
    }

    /// A vector layout `(*, n)` read as a batch of `n x 1` matrices.
    pub(crate) fn of_vector(l: &Layout) -> Batch {
        let mut dims = l.dims().to_vec();
        dims.push(1);
        let mut strides = l.strides().to_vec();
        strides.push(1);
        Batch::of(&Layout::new(dims.into(), strides, l.offset()))
    }

    /// Copies matrix `i` into `dst` (column-major, `m * n`).
    pub(crate) fn load<T: Copy>(&self, data: &[T], i: usize, dst: &mut [T]) {
        load_colmajor(data, self.offset(i), self.m, self.n, self.rs, self.cs, dst);
    }

    /// Copies the transpose of matrix `i` into `dst` (column-major `n x m`, `m * n`).
    pub(crate) fn load_t<T: Copy>(&self, data: &[T], i: usize, dst: &mut [T]) {
        load_colmajor(data, self.offset(i), self.n, self.m, self.cs, self.rs, dst);
    }
}

/// A view of the `m x n` matrix at `off` with strides `rs`, `cs`: in place when one
/// stride is 1 (or the matrix is a vector), otherwise a column-major copy into `tmp`.
pub(crate) fn mat_ref<'a, T: Copy>(
    data: &'a [T],
    off: usize,
    m: usize,
    n: usize,
    rs: usize,
    cs: usize,
    tmp: &'a mut Vec<T>,
) -> MatRef<'a, T> {
    if m == 0 || n == 0 {
        return MatRef::from_column_major_slice(&data[..0], m, n);
    }
    let s = &data[off..];
    if rs == 1 || n == 1 {
        MatRef::from_column_major_slice_with_stride(s, m, n, cs.max(m))
    } else if cs == 1 || m == 1 {
        MatRef::from_row_major_slice_with_stride(s, m, n, rs.max(n))
    } else {
        tmp.clear();
        tmp.resize(m * n, s[0]);
        load_colmajor(data, off, m, n, rs, cs, tmp);
        MatRef::from_column_major_slice(tmp.as_slice(), m, n)
    }
}

/// Copies the `m x n` matrix at `off` (strides `rs`, `cs`) into `dst`, column-major.
pub(crate) fn load_colmajor<T: Copy>(
    data: &[T],
    off: usize,
    m: usize,
    n: usize,
    rs: usize,
    cs: usize,
    dst: &mut [T],
) {
    debug_assert_eq!(dst.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    if rs == 1 {
        for (j, col) in dst.chunks_exact_mut(m.max(1)).enumerate().take(n) {
            let start = off + j * cs;
            col.copy_from_slice(&data[start..start + m]);
        }
    } else if rs == 0 && cs == 0 {
        // one broadcast value
        dst.fill(data[off]);
    } else {
        for j in 0..n {
            for i in 0..m {
                dst[j * m + i] = data[off + i * rs + j * cs];
            }
        }
    }
}

/// A mutable column-major view of an `m x n` block.
pub(crate) fn colmajor_mut<T>(dst: &mut [T], m: usize, n: usize) -> MatMut<'_, T> {
    MatMut::from_column_major_slice_mut(dst, m, n)
}

/// Work per rayon task when a batch of small matrices is split across threads.
pub(crate) const TASK_WORK: usize = 1 << 15;

/// Runs `one(i, dst, tmp, par)` for each matrix `i` of a batch whose results are `size`
/// elements each in `out`. Matrices that are `big` run one after the other, each allowed
/// faer's parallelism (`par`); small ones, when there are enough of them (`work` per
/// matrix), are split across rayon tasks (about [`TASK_WORK`] each, and at least a
/// sixteenth of the batch) and run sequentially inside. `tmp` is scratch reused within a
/// task.
pub(crate) fn for_each_matrix<T: Send, F>(
    out: &mut [T],
    size: usize,
    work: usize,
    big: bool,
    one: F,
) where
    F: Fn(usize, &mut [T], &mut Vec<T>, Par) + Sync,
{
    for_each_matrix_with(out, size, work, big, Vec::new, one);
}

/// [`for_each_matrix`] with the scratch of each task made by `make`.
pub(crate) fn for_each_matrix_with<T: Send, W, F>(
    out: &mut [T],
    size: usize,
    work: usize,
    big: bool,
    make: impl Fn() -> W + Sync,
    one: F,
) where
    F: Fn(usize, &mut [T], &mut W, Par) + Sync,
{
    if size == 0 {
        return;
    }
    let len = out.len() / size;
    let work = work.max(1);
    if len > 1 && !big && len * work >= 2 * TASK_WORK {
        // at least a sixteenth of the batch per task: each task makes its own scratch, and
        // one matrix per task (work above TASK_WORK) zeroed a fresh scratch for every
        // matrix (18 KiB per 16 x 16 SVD backward, a large share of its instructions)
        let per_task = (TASK_WORK / work).max(len / 16).max(1);
        super::par::for_each_chunk(out, size * per_task, |t, chunk| {
            let mut tmp = make();
            for (j, dst) in chunk.chunks_exact_mut(size).enumerate() {
                one(t * per_task + j, dst, &mut tmp, Par::Seq);
            }
        });
    } else {
        super::par::with_par(big, |par| {
            let mut tmp = make();
            for (i, dst) in out.chunks_exact_mut(size).enumerate() {
                one(i, dst, &mut tmp, par);
            }
        });
    }
}

/// The layout of a batch of column-major `m x n` matrices stored one after another.
pub(crate) fn colmajor_layout(batch: &[usize], m: usize, n: usize) -> Layout {
    let mut dims = crate::shape::Dims::from_slice(batch);
    dims.push(m);
    dims.push(n);
    let shape = Shape::of(dims);
    let mut strides = Shape::of(batch).strides_contiguous();
    for s in strides.iter_mut() {
        *s *= m * n;
    }
    strides.push(1);
    strides.push(m.max(1));
    Layout::new(shape, strides, 0)
}

/// Calls `f(c, r)` for every `r > c` (the strictly lower triangle of an `n x n` matrix)
/// tile by tile, so that the mirrored accesses `r * n + c` stay within a few pages: row by
/// row, each was a stride of `n` elements, and at n = 1024 the three mirrorings of
/// Cholesky's backward were a large share of a fwd+bwd.
pub(crate) fn lower_tiles(n: usize, mut f: impl FnMut(usize, usize)) {
    const TILE: usize = 32;
    for cb in (0..n).step_by(TILE) {
        for rb in (cb..n).step_by(TILE) {
            for c in cb..(cb + TILE).min(n) {
                for r in rb.max(c + 1)..(rb + TILE).min(n) {
                    f(c, r);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every matrix offset, listed by walking the batch dims one element at a time.
    fn walked(l: &Layout) -> Vec<usize> {
        let r = l.rank();
        let mut v = Vec::new();
        walk(&l.dims()[..r - 2], [&l.strides()[..r - 2]], [l.offset()], |[o]| v.push(o));
        v
    }

    #[test]
    fn batch_offsets_match_a_walk_of_the_batch_dims() {
        let cases: Vec<(Vec<usize>, Vec<usize>, usize)> = vec![
            (vec![3, 4], vec![4, 1], 0),                      // one matrix
            (vec![5, 3, 4], vec![12, 4, 1], 7),               // contiguous batch
            (vec![2, 3, 3, 4], vec![36, 12, 4, 1], 0),        // two batch dims that merge
            (vec![2, 1, 3, 3, 4], vec![36, 99, 12, 4, 1], 2), // a size-1 dim between
            (vec![3, 2, 3, 4], vec![12, 36, 4, 1], 0),        // permuted batch dims
            (vec![4, 3, 3], vec![0, 3, 1], 5),                // broadcast batch
            (vec![4, 2, 3, 3], vec![0, 9, 3, 1], 0),          // broadcast outer dim
            (vec![2, 3, 2, 2], vec![24, 4, 2, 1], 1),         // sliced (stride gap)
            (vec![0, 3, 3], vec![9, 3, 1], 0),                // empty batch
            (vec![1, 1, 2, 2], vec![4, 4, 2, 1], 3),          // batch of one
        ];
        for (dims, strides, off) in cases {
            let l = Layout::new(Shape::new(dims.clone()), strides.clone(), off);
            let b = Batch::of(&l);
            let want = walked(&l);
            assert_eq!(b.len(), want.len(), "{dims:?} {strides:?}");
            let got: Vec<usize> = (0..b.len()).map(|i| b.offset(i)).collect();
            assert_eq!(got, want, "{dims:?} {strides:?}");
        }
    }
}
