//! Cholesky factorisation `A = L Lᵀ`, batched: a direct right-looking loop for small
//! matrices (up to 16, eight matrices at a time in batches; the loops unrolled at the
//! orders of [`by_order!`]'s lists), faer's blocked left-looking factorisation above.
//!
//! Only the lower triangle of `A` is read (the upper one, for `upper`, by reading `Aᵀ`).
//! A matrix that is not positive definite (a pivot `≤ 0` or NaN, LAPACK's test) gets
//! `info = k`, the order of its first failing leading minor, and is left in the state of
//! LAPACK's unblocked `potf2`: columns `< k − 1` of the factor, the non-positive pivot
//! `a_kk − Σ l_kj²` on the diagonal at `k`, and `A`'s own entries below it and to its right.
//! (PyTorch's LAPACK leaves the same state up to `n ≈ 100`, where it switches to a blocked
//! algorithm.)

use crate::backend::cpu::par::{for_each_chunk, run_tasks, with_par, Parts};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{
    cholesky_in_place, cholesky_in_place_scratch, LltRegularization,
};
use faer::{Par, Spec};

use super::lanes::{lane_offsets, load_lanes, store_lanes, LANES, LANES_MAX};
use super::order::{by_order, by_order_simd};
use super::{colmajor_layout, colmajor_mut, lower_tiles, Batch, LinalgElem};
use crate::dtype::Float;
use crate::layout::Layout;
use crate::shape::Shape;

/// Largest order factorised by the direct loop (faer above).
pub(crate) const DIRECT_MAX: usize = 48;
/// Work (about n³ / 3 flops per matrix) per rayon task when the batch is split.
const TASK_WORK: usize = 1 << 15;
/// Order above which faer may use both threads on one matrix.
pub(super) const PAR_N: usize = 768;

/// Matrices per rayon task: about [`TASK_WORK`] flops, but at least four tasks per thread
/// (the batch splits evenly).
fn per_task(len: usize, work: usize) -> usize {
    let even = len.div_ceil(4 * rayon::current_num_threads());
    (TASK_WORK / work).min(even).max(1)
}

/// [`per_task`] for matrices of order `n` that the lane kernels take, in whole groups of
/// [`LANES`]: at least a sixteenth of the batch there, as the LU lanes do
/// ([`super::lanes::lane_task_len`]). Each task makes its own lane scratch (48 KiB for the
/// backward at n = 16); with groups of eight per task a 1024x16x16 fwd+bwd made 680
/// allocations and zeroed them (`memset` showed in its profile).
fn per_lane_task(len: usize, work: usize, n: usize) -> usize {
    let per = per_task(len, work);
    let per = if n <= LANES_MAX { per.max(len / 16) } else { per };
    per.next_multiple_of(LANES)
}

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
        if d <= T::ZERO || Float::is_nan(d) {
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

/// Right-looking Cholesky in place on the column-major `n x n` matrix `l` whose lower
/// triangle holds `A`'s: contiguous column updates, reciprocal scaling as `potf2`. Returns
/// false at the first pivot that is not positive (the state is then not LAPACK's).
#[inline(always)]
fn right_looking<T: Float>(l: &mut [T], n: usize) -> bool {
    for k in 0..n {
        let (head, tail) = l.split_at_mut((k + 1) * n);
        let col = &mut head[k * n + k..];
        let d = col[0];
        if d <= T::ZERO || Float::is_nan(d) {
            return false;
        }
        let d = Float::sqrt(d);
        col[0] = d;
        let r = T::ONE / d;
        for x in &mut col[1..] {
            *x *= r;
        }
        let col = &col[1..]; // rows k+1.. of column k
        for (j, cj) in tail.chunks_exact_mut(n).enumerate() {
            // column k + 1 + j, rows k + 1 + j..
            axpy_sub(&mut cj[k + 1 + j..], col[j], &col[j..]);
        }
    }
    true
}

/// [`right_looking`] with `n` a constant for small orders (unrolled loops).
fn right_looking_small<T: Float>(l: &mut [T], n: usize) -> bool {
    fn fixed<T: Float, const N: usize>(l: &mut [T]) -> bool {
        right_looking(&mut l[..N * N], N)
    }
    by_order!(n;
        1 2 3 4 8 16 => |N| fixed::<T, N>(l),
        _ => right_looking(l, n))
}

/// Loads the lower triangle of matrix `i` of `ba` into `dst` (row-major, zero above).
fn load_lower_rows<T: Copy>(ba: &Batch, a: &[T], i: usize, dst: &mut [T]) {
    let (n, off) = (ba.n, ba.offset(i));
    for r in 0..n {
        let base = off + r * ba.rs;
        for (c, d) in dst[r * n..r * n + r + 1].iter_mut().enumerate() {
            *d = a[base + c * ba.cs];
        }
    }
}

/// Factorises matrix `i` of `ba` into `dst` (column-major `L`); returns its `info`.
fn factor_one<T: LinalgElem>(
    ba: &Batch,
    a: &[T],
    i: usize,
    dst: &mut [T],
    par: Par,
    scratch: &mut Option<MemBuffer>,
) -> i64 {
    let n = ba.n;
    // column-major lower triangle, the upper one zero (`dst` may hold anything)
    let off = ba.offset(i);
    for c in 0..n {
        dst[c * n..c * n + c].fill(T::ZERO);
        let base = off + c * ba.cs;
        for (r, d) in dst[c * n + c..(c + 1) * n].iter_mut().enumerate() {
            *d = a[base + (c + r) * ba.rs];
        }
    }
    let ok = if n <= DIRECT_MAX {
        right_looking_small(dst, n)
    } else {
        let buf = scratch.get_or_insert_with(|| {
            MemBuffer::new(cholesky_in_place_scratch::<T>(n, par, Spec::default()))
        });
        let res = cholesky_in_place(
            colmajor_mut(dst, n, n),
            LltRegularization::default(),
            par,
            MemStack::new(buf),
            Spec::default(),
        );
        let ok = res.is_ok() && (0..n).all(|k| dst[k * n + k].is_finite());
        if ok {
            // faer may leave workspace values above the diagonal
            for c in 1..n {
                dst[c * n..c * n + c].fill(T::ZERO);
            }
        }
        ok
    };
    if ok {
        return 0;
    }
    // rerun with the unblocked left-looking loop for LAPACK's order and state
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

/// Factorises the consecutive matrices `start..` of `ba` into `dst` and `info`: groups of
/// [`LANES`] tiny matrices at once, the rest one by one. `L` column-major, or row-major
/// if `rows`.
fn factor_range<T: LinalgElem>(
    ba: &Batch,
    a: &[T],
    start: usize,
    dst: &mut [T],
    info: &mut [i64],
    par: Par,
    rows: bool,
) {
    let n = ba.n;
    let size = n * n;
    let mut done = 0;
    if n <= LANES_MAX {
        let mut buf = vec![[T::ZERO; LANES]; size];
        for (g, (chunk, inf)) in
            dst.chunks_exact_mut(size * LANES).zip(info.chunks_exact_mut(LANES)).enumerate()
        {
            factor_lanes(ba, a, start + g * LANES, chunk, inf, &mut buf, rows);
            done += LANES;
        }
    }
    let mut scratch = None;
    for (j, (d, k)) in dst[done * size..].chunks_exact_mut(size).zip(&mut info[done..]).enumerate()
    {
        *k = factor_one(ba, a, start + done + j, d, par, &mut scratch);
        if rows {
            transpose_in_place(d, n);
        }
    }
}

/// Transposes the square `n x n` block `d` in place.
fn transpose_in_place<T: Copy>(d: &mut [T], n: usize) {
    for c in 0..n {
        for r in c + 1..n {
            d.swap(c * n + r, r * n + c);
        }
    }
}

/// [`factor_lanes_n`] with the order a constant (unrolled loops).
fn factor_lanes<T: LinalgElem>(
    ba: &Batch,
    a: &[T],
    first: usize,
    dst: &mut [T],
    info: &mut [i64],
    buf: &mut [[T; LANES]],
    rows: bool,
) {
    struct Kernel<'a, T, const N: usize> {
        ba: &'a Batch,
        a: &'a [T],
        first: usize,
        dst: &'a mut [T],
        info: &'a mut [i64],
        buf: &'a mut [[T; LANES]],
        rows: bool,
    }
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let Kernel { ba, a, first, dst, info, buf, rows } = self;
            let n = if N > 0 { N } else { ba.n };
            factor_lanes_n(simd, ba, a, first, dst, info, &mut buf[..n * n], n, rows);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), ba.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N> { ba, a, first, dst, info, buf, rows },
        _ => Kernel::<T, 0> { ba, a, first, dst, info, buf, rows });
}

/// [`right_looking`] on [`LANES`] matrices `first..` at once, each operation over the
/// lanes (which the compiler vectorises). A matrix that fails is redone alone for
/// LAPACK's order and state.
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern, clippy::too_many_arguments)]
#[inline(always)]
fn factor_lanes_n<T: LinalgElem, S: pulp::Simd>(
    simd: S,
    ba: &Batch,
    a: &[T],
    first: usize,
    dst: &mut [T],
    info: &mut [i64],
    buf: &mut [[T; LANES]],
    n: usize,
    rows: bool,
) {
    // the whole matrices, column-major (the loop below reads only the lower triangles),
    // by register transposes where the layout and [`super::lanes::LaneMoves`] allow
    load_lanes(simd, buf, a, &lane_offsets(ba, first), (ba.rs, ba.cs), n, n);
    let mut ok = [true; LANES];
    for k in 0..n {
        let mut r = [T::ZERO; LANES];
        let d = &mut buf[k * n + k];
        for w in 0..LANES {
            let x = d[w];
            ok[w] &= x > T::ZERO;
            let s = Float::sqrt(x);
            d[w] = s;
            r[w] = T::ONE / s;
        }
        for i in k + 1..n {
            let x = &mut buf[k * n + i];
            for w in 0..LANES {
                x[w] *= r[w];
            }
        }
        for j in k + 1..n {
            let ljk = buf[k * n + j];
            for i in j..n {
                let lik = buf[k * n + i];
                let x = &mut buf[j * n + i];
                for w in 0..LANES {
                    x[w] = x[w] - lik[w] * ljk[w];
                }
            }
        }
    }
    // the other triangle zero, then whole blocks out of the lanes (`rows`: transposed)
    for c in 1..n {
        buf[c * n..c * n + c].fill([T::ZERO; LANES]);
    }
    let size = n * n;
    store_lanes(simd, buf, dst, n, rows);
    for (w, d) in dst.chunks_exact_mut(size).enumerate() {
        if ok[w] {
            info[w] = 0;
        } else {
            info[w] = factor_one(ba, a, first + w, d, Par::Seq, &mut None);
            if rows {
                transpose_in_place(d, n);
            }
        }
    }
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
    // L column-major, so U = Lᵀ row-major; up to LANES_MAX, L row-major (`rows`): small
    // factors contiguous, for the elementwise ops that usually follow
    let rows = !upper && n <= LANES_MAX;
    let layout = if upper || rows {
        let mut dims = ba.dims.clone();
        dims.extend([n, n]);
        Layout::contiguous(Shape::new(dims))
    } else {
        colmajor_layout(&ba.dims, n, n)
    };
    // every element is written: the lane groups store whole blocks, `factor_one` zeroes
    // the triangle it does not factorise
    let mut out = crate::backend::cpu::pool::overwritten(ba.len() * size, T::ZERO);
    let mut info = vec![0i64; ba.len()];
    if size == 0 {
        return (out, layout, info);
    }
    let work = (size * n / 3).max(1);
    if ba.len() > 1 && n < PAR_N && ba.len() * work >= 2 * TASK_WORK {
        // whole groups of LANES per task
        let per_task = per_lane_task(ba.len(), work, n);
        let (po, pi) = (Parts::new(&mut out, size * per_task), Parts::new(&mut info, per_task));
        run_tasks(pi.len(), |t| {
            factor_range(&ba, a, t * per_task, po.take(t), pi.take(t), Par::Seq, rows);
        });
    } else {
        with_par(n >= PAR_N, |par| factor_range(&ba, a, 0, &mut out, &mut info, par, rows));
    }
    (out, layout, info)
}

// ------------------------------------------------------------------------------------
// the VJP, fused for small matrices

/// `x[..] -= a * y[..]`.
#[inline(always)]
fn axpy_sub<T: Float>(x: &mut [T], a: T, y: &[T]) {
    for (x, &y) in x.iter_mut().zip(y) {
        *x = *x - a * y;
    }
}

/// Solves `Lᵀ Y = B` in place (`b` row-major `n x n`, `l` row-major lower).
#[inline(always)]
fn solve_lt_rows<T: Float>(l: &[T], b: &mut [T], n: usize) {
    for i in (0..n).rev() {
        let (head, tail) = b.split_at_mut((i + 1) * n);
        let row = &mut head[i * n..];
        for k in i + 1..n {
            axpy_sub(row, l[k * n + i], &tail[(k - i - 1) * n..(k - i) * n]);
        }
        let d = T::ONE / l[i * n + i];
        for x in row.iter_mut() {
            *x *= d;
        }
    }
}

/// `gA` for one factor: `l` (row-major lower `L`), `g` (row-major, lower triangle of
/// `gL`; overwritten as scratch), into `dst` (row-major, symmetric).
#[inline(always)]
fn backward_one<T: Float>(l: &[T], g: &mut [T], dst: &mut [T], n: usize) {
    // P = tril(Lᵀ G): P_ij = Σ_{k ≥ i} L_ki G_kj (j ≤ i)
    dst.fill(T::ZERO);
    for k in 0..n {
        for i in 0..=k {
            let a = l[k * n + i];
            let (p, gk) = (&mut dst[i * n..i * n + i + 1], &g[k * n..k * n + i + 1]);
            for (p, &y) in p.iter_mut().zip(gk) {
                *p += a * y;
            }
        }
    }
    // S = ½ (P + tril(P, −1)ᵀ): P mirrored, its diagonal halved
    let half = T::of(0.5);
    for i in 0..n {
        for j in 0..i {
            let v = dst[i * n + j] * half;
            dst[i * n + j] = v;
            dst[j * n + i] = v;
        }
        dst[i * n + i] *= half;
    }
    // Y = L⁻ᵀ S; Z = L⁻ᵀ S L⁻¹ = L⁻ᵀ Yᵀ (S is symmetric), of which the lower triangle
    // is enough: row i of it needs only the lower triangle of the rows below
    solve_lt_rows(l, dst, n);
    for i in 0..n {
        for j in 0..=i {
            g[i * n + j] = dst[j * n + i];
        }
    }
    for i in (0..n).rev() {
        let (head, tail) = g.split_at_mut((i + 1) * n);
        let row = &mut head[i * n..i * n + i + 1];
        for k in i + 1..n {
            axpy_sub(row, l[k * n + i], &tail[(k - i - 1) * n..(k - i - 1) * n + i + 1]);
        }
        let d = T::ONE / l[i * n + i];
        for x in row.iter_mut() {
            *x *= d;
        }
    }
    // Z is symmetric: its lower triangle mirrored
    for i in 0..n {
        for j in 0..=i {
            let v = g[i * n + j];
            dst[i * n + j] = v;
            dst[j * n + i] = v;
        }
    }
}

/// [`backward_one`] with `n` a constant for the smallest orders.
fn backward_small<T: Float>(l: &[T], g: &mut [T], dst: &mut [T], n: usize) {
    fn fixed<T: Float, const N: usize>(l: &[T], g: &mut [T], dst: &mut [T]) {
        backward_one(&l[..N * N], &mut g[..N * N], &mut dst[..N * N], N);
    }
    by_order!(n;
        1 2 3 4 8 16 => |N| fixed::<T, N>(l, g, dst),
        _ => backward_one(l, g, dst, n));
}

/// One lane group of [`cholesky_backward`]: the factors `f` and cotangents `g` of the
/// [`LANES`] matrices `first..`, the lanes' scratch, and the group's `gA` blocks.
struct LaneGroup<'a, T> {
    f: (&'a Batch, &'a [T]),
    g: (&'a Batch, &'a [T]),
    first: usize,
    lb: &'a mut [[T; LANES]],
    gb: &'a mut [[T; LANES]],
    db: &'a mut [[T; LANES]],
    dst: &'a mut [T],
}

/// [`backward_one`] on a [`LaneGroup`] (`n <= LANES_MAX`): the factors and cotangents
/// loaded into row-major lanes, [`backward_lanes_n`], and `gA` moved from the lanes to
/// the group's blocks, the moves by register transposes where
/// [`super::lanes::LaneMoves`] has them (scalar loads and stores lane by lane were a fifth
/// of a 1024x16x16 fwd+bwd), with the order a constant (unrolled loops).
///
/// The whole matrices are loaded: the kernel reads only the lower triangles of `L` and
/// `gL` (the upper one of `gL` does not enter `tril(Lᵀ gL)`).
fn backward_lanes<T: LinalgElem>(grp: LaneGroup<'_, T>) {
    struct Kernel<'a, T, const N: usize>(LaneGroup<'a, T>);
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let LaneGroup { f: (bf, f), g: (bg, g), first, lb, gb, db, dst } = self.0;
            let n = if N > 0 { N } else { bf.n };
            let size = n * n;
            let (lb, gb, db) = (&mut lb[..size], &mut gb[..size], &mut db[..size]);
            // row-major lanes: the column-major load of the transposes
            load_lanes(simd, lb, f, &lane_offsets(bf, first), (bf.cs, bf.rs), n, n);
            load_lanes(simd, gb, g, &lane_offsets(bg, first), (bg.cs, bg.rs), n, n);
            backward_lanes_n(lb, gb, db, n);
            store_lanes(simd, db, dst, n, false);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), grp.f.0.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N>(grp),
        _ => Kernel::<T, 0>(grp));
}

// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn backward_lanes_n<T: Float>(
    l: &[[T; LANES]],
    g: &mut [[T; LANES]],
    dst: &mut [[T; LANES]],
    n: usize,
) {
    let half = T::of(0.5);
    // P = tril(Lᵀ G)
    for x in dst.iter_mut() {
        *x = [T::ZERO; LANES];
    }
    for k in 0..n {
        for i in 0..=k {
            let a = l[k * n + i];
            for j in 0..=i {
                let y = g[k * n + j];
                let p = &mut dst[i * n + j];
                for w in 0..LANES {
                    p[w] += a[w] * y[w];
                }
            }
        }
    }
    // S: P mirrored, its diagonal halved
    for i in 0..n {
        for j in 0..i {
            let mut v = dst[i * n + j];
            for x in &mut v {
                *x *= half;
            }
            dst[i * n + j] = v;
            dst[j * n + i] = v;
        }
        for x in &mut dst[i * n + i] {
            *x *= half;
        }
    }
    // reciprocal diagonal of L
    let mut rd = [[T::ZERO; LANES]; LANES_MAX];
    for i in 0..n {
        for w in 0..LANES {
            rd[i][w] = T::ONE / l[i * n + i][w];
        }
    }
    // Y = L⁻ᵀ S (rows from the bottom)
    for i in (0..n).rev() {
        for k in i + 1..n {
            let a = l[k * n + i];
            for j in 0..n {
                let y = dst[k * n + j];
                let x = &mut dst[i * n + j];
                for w in 0..LANES {
                    x[w] = x[w] - a[w] * y[w];
                }
            }
        }
        for j in 0..n {
            let x = &mut dst[i * n + j];
            for w in 0..LANES {
                x[w] *= rd[i][w];
            }
        }
    }
    // Z = L⁻ᵀ Yᵀ, its lower triangle
    for i in 0..n {
        for j in 0..=i {
            g[i * n + j] = dst[j * n + i];
        }
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            let a = l[k * n + i];
            for j in 0..=i {
                let y = g[k * n + j];
                let x = &mut g[i * n + j];
                for w in 0..LANES {
                    x[w] = x[w] - a[w] * y[w];
                }
            }
        }
        for j in 0..=i {
            let x = &mut g[i * n + j];
            for w in 0..LANES {
                x[w] *= rd[i][w];
            }
        }
    }
    // mirrored
    for i in 0..n {
        for j in 0..=i {
            let v = g[i * n + j];
            dst[i * n + j] = v;
            dst[j * n + i] = v;
        }
    }
}

/// `gA` for one factor above the direct loop's size, on faer: `l` the column-major lower
/// `L`, `g` the column-major lower triangle of `gL`, into `dst` (symmetric).
fn backward_faer<T: LinalgElem>(l: &[T], g: &[T], dst: &mut [T], n: usize, par: Par) {
    use faer::linalg::matmul::triangular::{matmul, BlockStructure as B};
    use faer::linalg::triangular_solve::solve_upper_triangular_in_place;
    use faer::{Accum, MatRef};
    let lm = MatRef::from_column_major_slice(l, n, n);
    let gm = MatRef::from_column_major_slice(g, n, n);
    // P = tril(Lᵀ tril(G)): a triangular product (a third of a full one)
    matmul(
        colmajor_mut(dst, n, n),
        B::TriangularLower,
        Accum::Replace,
        lm.transpose(),
        B::TriangularUpper,
        gm,
        B::TriangularLower,
        T::ONE,
        par,
    );
    // S = ½ (P + tril(P, −1)ᵀ)
    let half = T::of(0.5);
    for c in 0..n {
        dst[c * n + c] *= half;
    }
    lower_tiles(n, |c, r| {
        let v = dst[c * n + r] * half;
        dst[c * n + r] = v;
        dst[r * n + c] = v;
    });
    // Y = L⁻ᵀ S; Z = L⁻ᵀ Yᵀ (S is symmetric), solved on the transposed view of Y in
    // place (no transposed copy): `dst` then holds Zᵀ
    solve_upper_triangular_in_place(lm.transpose(), colmajor_mut(dst, n, n), par);
    solve_upper_triangular_in_place(lm.transpose(), colmajor_mut(dst, n, n).transpose_mut(), par);
    // exactly symmetric: ½ (Z + Zᵀ)
    lower_tiles(n, |c, r| {
        let v = (dst[c * n + r] + dst[r * n + c]) * half;
        dst[c * n + r] = v;
        dst[r * n + c] = v;
    });
}

/// Loads the lower triangle of matrix `i` of `b` into `dst` (column-major, zero above).
pub(super) fn load_lower_cols<T: Copy>(b: &Batch, a: &[T], i: usize, dst: &mut [T], zero: T) {
    let (n, off) = (b.n, b.offset(i));
    for c in 0..n {
        let base = off + c * b.cs;
        dst[c * n..c * n + c].fill(zero);
        for (r, d) in dst[c * n + c..(c + 1) * n].iter_mut().enumerate() {
            *d = a[base + (c + r) * b.rs];
        }
    }
}

/// The VJP of [`cholesky`] for each factor `f: (*, n, n)` (`L`, or `U` if `upper`) and
/// cotangent `g` (same shape), without a graph: the symmetric `gA = L⁻ᵀ S L⁻¹`,
/// `S = Φ*(tril(Lᵀ gL))`. Small `n`: one allocation-free pass per matrix (its lower
/// triangle, mirrored); above [`DIRECT_MAX`]: faer's triangular product and solves
/// (symmetrised as `½ (Z + Zᵀ)`).
pub(crate) fn cholesky_backward<T: LinalgElem>(
    f: &[T],
    fl: &Layout,
    g: &[T],
    gl: &Layout,
    upper: bool,
) -> (Vec<T>, Layout) {
    let mut bf = Batch::of(fl);
    let mut bg = Batch::of(gl);
    if upper {
        // L = Uᵀ, gL = gUᵀ; gA is symmetric, so needs no transpose
        std::mem::swap(&mut bf.rs, &mut bf.cs);
        std::mem::swap(&mut bg.rs, &mut bg.cs);
    }
    let n = bf.n;
    let size = n * n;
    let mut dims = bf.dims.clone();
    dims.extend([n, n]);
    // exactly symmetric: row-major and column-major are the same
    let layout = Layout::contiguous(Shape::new(dims));
    // every element is written (the lane groups and `backward_small` write whole
    // symmetric matrices), so a cached buffer need not be zeroed first; faer's path is
    // given a zeroed one
    let mut out = if n <= DIRECT_MAX {
        crate::backend::cpu::pool::overwritten(bf.len() * size, T::ZERO)
    } else {
        crate::backend::cpu::pool::filled(bf.len() * size, T::ZERO)
    };
    if size == 0 {
        return (out, layout);
    }
    let one = |i: usize, dst: &mut [T], lw: &mut [T], gw: &mut [T], par: Par| {
        if n <= DIRECT_MAX {
            load_lower_rows(&bf, f, i, lw);
            load_lower_rows(&bg, g, i, gw);
            backward_small(lw, gw, dst, n);
        } else {
            load_lower_cols(&bf, f, i, lw, T::ZERO);
            load_lower_cols(&bg, g, i, gw, T::ZERO);
            backward_faer(lw, gw, dst, n, par);
        }
    };
    // the consecutive matrices `start..` into `chunk`: groups of LANES tiny ones at once
    let range = |start: usize, chunk: &mut [T], par: Par| {
        let mut done = 0;
        if n <= LANES_MAX {
            let mut lb = vec![[T::ZERO; LANES]; size];
            let mut gb = vec![[T::ZERO; LANES]; size];
            let mut db = vec![[T::ZERO; LANES]; size];
            for (k, group) in chunk.chunks_exact_mut(size * LANES).enumerate() {
                let first = start + k * LANES;
                backward_lanes(LaneGroup {
                    f: (&bf, f),
                    g: (&bg, g),
                    first,
                    lb: &mut lb,
                    gb: &mut gb,
                    db: &mut db,
                    dst: group,
                });
                done += LANES;
            }
        }
        if done * size == chunk.len() {
            return;
        }
        // above DIRECT_MAX the loads write every element (zeros above the diagonal), so
        // cached buffers will do; fresh ones were page faults on every call (a visible
        // share of a 256 x 256 fwd+bwd)
        let scratch = |v: T| {
            if n > DIRECT_MAX {
                crate::backend::cpu::pool::overwritten(size, v)
            } else {
                vec![v; size]
            }
        };
        let (mut lw, mut gw) = (scratch(T::ZERO), scratch(T::ZERO));
        for (j, dst) in chunk[done * size..].chunks_exact_mut(size).enumerate() {
            one(start + done + j, dst, &mut lw, &mut gw, par);
        }
        if n > DIRECT_MAX {
            crate::backend::cpu::pool::give(lw);
            crate::backend::cpu::pool::give(gw);
        }
    };
    let work = (size * n * 4 / 3).max(1);
    if bf.len() > 1 && n < PAR_N && bf.len() * work >= 2 * TASK_WORK {
        let per_task = per_lane_task(bf.len(), work, n);
        for_each_chunk(&mut out, size * per_task, |t, chunk| {
            range(t * per_task, chunk, Par::Seq);
        });
    } else {
        with_par(n >= PAR_N, |par| range(0, &mut out, par));
    }
    (out, layout)
}
