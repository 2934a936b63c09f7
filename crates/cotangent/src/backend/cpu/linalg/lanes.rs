//! The SIMD-lane infrastructure of the kernel library. A batch of small matrices runs
//! [`LANES`] matrices at a time, matrix `w` of a group in lane `w` of every array (one
//! `[T; LANES]` per matrix entry), so that each operation of a one-matrix loop is one
//! vector operation over the group and each matrix gets the bits it gets alone.
//!
//! Here, shared by the lane kernels of the LU, Cholesky, QR, SVD and symmetric
//! eigendecomposition: the lane count and the largest order they take; the moves
//! between a batch's strided blocks and the lanes ([`load_lanes`], [`store_lanes`],
//! [`gather_blocks`], the register transposes of [`LaneMoves`], the mirrored triangles of
//! [`load_symmetric_lanes`]); the selects of [`LaneBits`] that let a lane take its own
//! branch; and the scheduling of a batch in lane groups over rayon tasks
//! ([`lane_task_len`], [`lane_split`], [`for_each_lane_group`], [`group_batch`]).

use faer::Par;

use super::{Batch, LinalgElem, TASK_WORK};

/// Matrices run together by a lane kernel, one per lane: each operation of the
/// one-matrix loop is one vector operation over them (which the compiler vectorises: no
/// reductions across lanes, no short rows), and their independent dependency chains
/// (pivot searches, divisions, square roots) overlap, each one's latency hidden behind
/// the others'.
pub(crate) const LANES: usize = 8;
/// Largest order of square matrices the LU, Cholesky and QR lane kernels take.
pub(crate) const LANES_MAX: usize = 16;

/// Where the [`LANES`] matrices `first..` of `b` start.
#[inline(always)]
pub(crate) fn lane_offsets(b: &Batch, first: usize) -> [usize; LANES] {
    let mut offs = [0; LANES];
    for (w, o) in offs.iter_mut().enumerate() {
        *o = b.offset(first + w);
    }
    offs
}

/// The `len` elements at each of `offs` in `a`, one slice per lane.
#[inline(always)]
pub(crate) fn lane_slices<'a, T>(
    a: &'a [T],
    offs: &[usize; LANES],
    len: usize,
) -> [&'a [T]; LANES] {
    let mut s: [&[T]; LANES] = [&[]; LANES];
    for (x, &o) in s.iter_mut().zip(offs) {
        *x = &a[o..o + len];
    }
    s
}

/// The blocks of `d` at `offs` (each `dst.len()` long) into the lanes of `dst`, entry by
/// entry: each entry's lanes read from [`LANES`] sequential streams and stored as one
/// array (one cache line). Lane by lane, every store went to a different line of a
/// scratch larger than the L1 cache: a large share of the 16 x 16 backward's time.
#[inline(always)]
pub(crate) fn gather_blocks<T: Copy>(d: &[T], offs: &[usize; LANES], dst: &mut [[T; LANES]]) {
    let src = lane_slices(d, offs, dst.len());
    for (k, v) in dst.iter_mut().enumerate() {
        *v = std::array::from_fn(|l| src[l][k]);
    }
}

/// The element of each lane's matrix that `at(w)` gives, as one array.
#[inline(always)]
pub(crate) fn gather<T: LinalgElem>(at: impl Fn(usize) -> T) -> [T; LANES] {
    let mut v = [T::ZERO; LANES];
    for (w, x) in v.iter_mut().enumerate() {
        *x = at(w);
    }
    v
}

/// Moves between [`LANES`] consecutive blocks (one matrix each, `size` elements) and
/// lanes (`size` arrays of [`LANES`], lane `w` matrix `w`) by 4 x 4 transposes of vector
/// registers, where the element type and the instruction set allow it: `f64` with 4-wide
/// vectors (AVX2). LLVM leaves the same moves written as loops element by element (one
/// scalar load and store per element); they were a large share of a batched 4 x 4 LU.
/// Each returns `false`, having written nothing, where it does not apply (the caller
/// then moves the elements one by one: the same values).
pub(crate) trait LaneMoves: Copy {
    /// `dst[w * size + o] = x[src(o)][w]` for every lane `w` and `o < size`
    /// (`dst.len() == LANES * size`, `size.is_multiple_of(4)`, `src(o) < x.len()`).
    #[inline(always)]
    fn blocks_from_lanes<S: pulp::Simd>(
        _simd: S,
        _x: &[[Self; LANES]],
        _src: impl Fn(usize) -> usize,
        _dst: &mut [Self],
    ) -> bool {
        false
    }

    /// `x[e][w] = src[w * size + e]` for every lane `w` and `e < size = x.len()`
    /// (`src.len() == LANES * size`, `size.is_multiple_of(4)`).
    #[inline(always)]
    fn lanes_from_blocks<S: pulp::Simd>(_simd: S, _src: &[Self], _x: &mut [[Self; LANES]]) -> bool {
        false
    }
}

impl LaneMoves for f32 {}

impl LaneMoves for f64 {
    #[inline(always)]
    fn blocks_from_lanes<S: pulp::Simd>(
        simd: S,
        x: &[[f64; LANES]],
        src: impl Fn(usize) -> usize,
        dst: &mut [f64],
    ) -> bool {
        let size = dst.len() / LANES;
        if core::mem::size_of::<S::f64s>() != 32
            || !size.is_multiple_of(4)
            || dst.len() != LANES * size
        {
            return false;
        }
        // registers: lanes 0..4 and 4..8 of x[e] are 2e and 2e + 1; entries 4c..4c + 4 of
        // block w are w * q + c
        let q = size / 4;
        let (xs, _) = S::as_simd_f64s(x.as_flattened());
        let (ds, _) = S::as_mut_simd_f64s(dst);
        for c in 0..q {
            let e = [src(4 * c), src(4 * c + 1), src(4 * c + 2), src(4 * c + 3)];
            for h in 0..2 {
                let r = [xs[2 * e[0] + h], xs[2 * e[1] + h], xs[2 * e[2] + h], xs[2 * e[3] + h]];
                let t: [S::f64s; 4] = simd.deinterleave_shfl_f64s(r);
                for (i, v) in t.into_iter().enumerate() {
                    ds[(4 * h + i) * q + c] = v;
                }
            }
        }
        true
    }

    #[inline(always)]
    fn lanes_from_blocks<S: pulp::Simd>(simd: S, src: &[f64], x: &mut [[f64; LANES]]) -> bool {
        let size = x.len();
        if core::mem::size_of::<S::f64s>() != 32
            || !size.is_multiple_of(4)
            || src.len() != LANES * size
        {
            return false;
        }
        let q = size / 4;
        let (ss, _) = S::as_simd_f64s(src);
        let (xs, _) = S::as_mut_simd_f64s(x.as_flattened_mut());
        for c in 0..q {
            for h in 0..2 {
                let r = [
                    ss[4 * h * q + c],
                    ss[(4 * h + 1) * q + c],
                    ss[(4 * h + 2) * q + c],
                    ss[(4 * h + 3) * q + c],
                ];
                let t: [S::f64s; 4] = simd.deinterleave_shfl_f64s(r);
                for (j, v) in t.into_iter().enumerate() {
                    xs[2 * (4 * c + j) + h] = v;
                }
            }
        }
        true
    }
}

/// Copies the `m x n` matrices at `offs` of `a` (strides `(rs, cs)`), matrix `w` into
/// lane `w` of `buf` (column-major). Each element's lanes are gathered and stored as one
/// array (the kernel's vector loads then forward from whole stores, not from [`LANES`]
/// scalar ones); contiguous matrices (either order) by loops with no stride arithmetic,
/// which unroll when the sizes are constants.
#[inline(always)]
pub(crate) fn load_lanes<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    buf: &mut [[T; LANES]],
    a: &[T],
    offs: &[usize; LANES],
    (rs, cs): (usize, usize),
    m: usize,
    n: usize,
) {
    let size = m * n;
    let buf = &mut buf[..size];
    if size == 0 {
        return;
    }
    let packed = (1..LANES).all(|w| offs[w] == offs[0] + w * size);
    if rs == 1 && (cs == m || n == 1) && packed {
        // consecutive matrices (a contiguous batch): one block, each element at a fixed
        // distance from its start (no per-lane pointers)
        let src = &a[offs[0]..offs[0] + LANES * size];
        if !T::lanes_from_blocks(simd, src, buf) {
            for (e, v) in buf.iter_mut().enumerate() {
                *v = gather(|w| src[w * size + e]);
            }
        }
    } else if rs == 1 && (cs == m || n == 1) {
        gather_blocks(a, offs, buf);
    } else if rs == 0 && cs == 0 {
        // one broadcast value per matrix
        buf.fill(gather(|w| a[offs[w]]));
    } else if cs == 1 && (rs == n || m == 1) {
        let src = lane_slices(a, offs, size);
        for c in 0..n {
            for r in 0..m {
                buf[c * m + r] = gather(|w| src[w][r * n + c]);
            }
        }
    } else {
        for c in 0..n {
            for r in 0..m {
                buf[c * m + r] = gather(|w| a[offs[w] + r * rs + c * cs]);
            }
        }
    }
}

/// Lane `w` of the column-major `n x n` matrix in `x` into block `w` of `dst` (as many
/// blocks as `dst` holds), column-major, or row-major if `row_major`, in 4 x 4 blocks
/// (four elements of four lanes at a time, no index arithmetic per element). LLVM still
/// stores element by element; with the interchanges applied afterwards in each block,
/// this was faster on a batched 16 x 16 inverse than the per-element copy through a
/// row permutation it replaced.
// lanes are indexed on purpose
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn store_lanes<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    x: &[[T; LANES]],
    dst: &mut [T],
    n: usize,
    row_major: bool,
) {
    let size = n * n;
    let count = dst.len() / size.max(1);
    // source of output element o of a block
    let src = |o: usize| if row_major { (o % n) * n + o / n } else { o };
    if size.is_multiple_of(4) && count == LANES && T::blocks_from_lanes(simd, x, src, dst) {
        return;
    }
    if !size.is_multiple_of(4) || count != LANES {
        for (w, d) in dst.chunks_exact_mut(size).enumerate() {
            for (o, v) in d.iter_mut().enumerate() {
                *v = x[src(o)][w];
            }
        }
        return;
    }
    for o in (0..size).step_by(4) {
        let s = [src(o), src(o + 1), src(o + 2), src(o + 3)];
        for w0 in (0..LANES).step_by(4) {
            let mut b = [[T::ZERO; 4]; 4];
            for i in 0..4 {
                for j in 0..4 {
                    b[i][j] = x[s[i]][w0 + j];
                }
            }
            for j in 0..4 {
                let d = &mut dst[(w0 + j) * size + o..(w0 + j) * size + o + 4];
                for i in 0..4 {
                    d[i] = b[i][j];
                }
            }
        }
    }
}

/// Loads the symmetric matrices `first..first + count` of the batch (the triangle `upper`
/// or lower, mirrored) into the lanes of `dst` (`n x n`, row-major); unused lanes and
/// lanes with a non-finite entry hold zeros (the eigendecomposition's lane loops finish a
/// zero matrix at once). Returns which lanes were non-finite.
#[inline(always)]
pub(crate) fn load_symmetric_lanes<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    n: usize,
    dst: &mut [[T; LANES]],
) -> [bool; LANES] {
    let mut bad = [false; LANES];
    for l in 0..LANES {
        if l >= count {
            for x in dst.iter_mut() {
                x[l] = T::ZERO;
            }
            continue;
        }
        let off = b.offset(first + l);
        let mut finite = true;
        for j in 0..n {
            for k in j..n {
                let x = if upper {
                    data[off + j * b.rs + k * b.cs]
                } else {
                    data[off + k * b.rs + j * b.cs]
                };
                finite &= x.is_finite();
                dst[j * n + k][l] = x;
                dst[k * n + j][l] = x;
            }
        }
        if !finite {
            bad[l] = true;
            for x in dst.iter_mut() {
                x[l] = T::ZERO;
            }
        }
    }
    bad
}

/// Selects on the bits of a float: the lane kernels blend with masks of this type rather
/// than with `if`, which the compiler may turn into branches or masked stores (slow).
pub(crate) trait LaneBits: Copy {
    /// All bits set where `on`, none elsewhere (not a number to compute with).
    fn mask(on: bool) -> Self;
    /// `a` where the mask `m` is set, else `b` (bit for bit).
    fn blend(m: Self, a: Self, b: Self) -> Self;
    /// `self * a + b` with one rounding (an FMA instruction inside the kernels run
    /// through `pulp`'s dispatch, which enable the CPU's FMA).
    fn mul_add(self, a: Self, b: Self) -> Self;
}

impl LaneBits for f64 {
    #[inline(always)]
    fn mask(on: bool) -> f64 {
        f64::from_bits(0u64.wrapping_sub(u64::from(on)))
    }
    #[inline(always)]
    fn blend(m: f64, a: f64, b: f64) -> f64 {
        let m = m.to_bits();
        f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
    #[inline(always)]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
}

impl LaneBits for f32 {
    #[inline(always)]
    fn mask(on: bool) -> f32 {
        f32::from_bits(0u32.wrapping_sub(u32::from(on)))
    }
    #[inline(always)]
    fn blend(m: f32, a: f32, b: f32) -> f32 {
        let m = m.to_bits();
        f32::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
    }
    #[inline(always)]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
}

/// The masks of `on` (see [`LaneBits`]), opaque to the compiler (else it sees through
/// them back to the `bool`s and branches again).
#[inline(always)]
pub(crate) fn masks<T: LaneBits>(on: &[bool; LANES]) -> [T; LANES] {
    let mut m = [T::mask(false); LANES];
    for l in 0..LANES {
        m[l] = T::mask(on[l]);
    }
    std::hint::black_box(m)
}

/// `a` where the mask `m` is set, else `b`, per lane.
#[inline(always)]
pub(crate) fn sel<T: LaneBits>(m: &[T; LANES], a: &[T; LANES], b: &[T; LANES]) -> [T; LANES] {
    let mut out = *b;
    for l in 0..LANES {
        out[l] = T::blend(m[l], a[l], b[l]);
    }
    out
}

/// Matrices per task for a batch of `len` small ones of `work` each that the lane kernels
/// take: about [`TASK_WORK`], a multiple of [`LANES`], and at least a sixteenth of the
/// batch (each task makes its own lane scratch, 48 KiB at n = 16, whose zeroing cost as
/// much as the factorisations when a task was one group of eight).
pub(crate) fn lane_task_len(len: usize, work: usize) -> usize {
    (TASK_WORK / work.max(1)).max(len / 16).max(1).div_ceil(LANES) * LANES
}

/// Runs a batch of small matrices whose results are `size` elements each in `out`:
/// `wide(first, chunk)` on each task's whole groups of [`LANES`] consecutive matrices
/// (a faster kernel; it returns the groups it left, or `None` where it does not apply),
/// `group(scratch, first, chunk)` on each group left, and `one(i, dst, tmp, Par::Seq)`
/// on the few matrices at the end of each task; split across rayon tasks (a multiple of
/// [`LANES`] matrices each) when there is enough `work` per matrix. `scratch` makes one
/// task's buffers.
pub(crate) fn for_each_lane_group<T: Send, S>(
    out: &mut [T],
    size: usize,
    work: usize,
    scratch: impl Fn() -> S + Sync,
    wide: impl Fn(usize, &mut [T]) -> Option<Vec<usize>> + Sync,
    group: impl Fn(&mut S, usize, &mut [T]) + Sync,
    one: impl Fn(usize, &mut [T], &mut Vec<T>, Par) + Sync,
) {
    let range = |start: usize, o: &mut [T]| {
        let mut bufs = scratch();
        let done = o.len() / (size * LANES).max(1) * LANES;
        let groups = match done {
            0 => None,
            _ => wide(start, &mut o[..done * size]),
        };
        for g in
            groups.unwrap_or_else(|| (0..done / LANES).collect()).into_iter().map(|h| h * LANES)
        {
            group(&mut bufs, start + g, &mut o[g * size..(g + LANES) * size]);
        }
        let mut tmp = Vec::new();
        for (j, dst) in o[done * size..].chunks_exact_mut(size).enumerate() {
            one(start + done + j, dst, &mut tmp, Par::Seq);
        }
    };
    let len = out.len() / size.max(1);
    if len * work >= 2 * TASK_WORK {
        let per = lane_task_len(len, work);
        crate::backend::cpu::par::for_each_chunk(out, size * per, |t, o| range(t * per, o));
    } else {
        range(0, out);
    }
}

/// Where the lane group of `b`'s matrices `first..first + count` is read from, as a
/// batch and the group's first matrix in it. A whole group (`count == LANES`) reads `b`
/// where it is. A partial one (a task's last) reads `lanes` (a [`Batch::listed`] of
/// [`LANES`]) from 0, set to the group's offsets with the last repeated past `count`.
/// (Listing the offsets of every group showed in a batched 4 x 4 solve's profile.)
pub(crate) fn group_batch<'a>(
    lanes: &'a mut Batch,
    b: &'a Batch,
    first: usize,
    count: usize,
) -> (&'a Batch, usize) {
    if count == LANES {
        return (b, first);
    }
    for w in 0..LANES {
        lanes.set_offset(w, b.offset(first + w.min(count - 1)));
    }
    (lanes, 0)
}

/// Matrices per task of a batch of `len` small systems of `work` each that run in lane
/// groups with per-group outputs ([`lane_task_len`] when the batch is worth splitting,
/// else the whole batch in one task), a multiple of [`LANES`]; and whether to split.
pub(crate) fn lane_split(len: usize, work: usize) -> (usize, bool) {
    if len * work >= 2 * TASK_WORK {
        (lane_task_len(len, work), true)
    } else {
        (len.div_ceil(LANES) * LANES, false)
    }
}
