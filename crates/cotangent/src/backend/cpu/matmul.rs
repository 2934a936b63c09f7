//! Batched matrix products on strided layouts: a direct loop for small matrices (no
//! allocation, no dispatch cost), a row kernel for square orders 8 and 16, faer's GEMM
//! for the rest, rayon over batches.

use faer::linalg::matmul::matmul as faer_matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::strided::walk;
use crate::dtype::Float;
use crate::layout::Layout;

/// Work (m·n·k) below which the direct loop beats faer's dispatch.
const SMALL: usize = 8 * 8 * 8;
/// Work above which one product uses every thread ([`one_split`]).
const PAR_THRESHOLD: usize = 192 * 192 * 192;

/// Elements that faer multiplies: `f32`, `f64`.
pub(crate) trait GemmElem:
    Float + faer::traits::ComplexField + super::pool::Pooled + ProductRows
{
}
impl GemmElem for f32 {}
impl GemmElem for f64 {}

/// One matrix operand: base offset, and row/col strides.
#[derive(Clone, Copy)]
struct Mat {
    off: usize,
    rs: usize,
    cs: usize,
}

fn view<'a, T: Copy>(
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
    } else if m.rs == 0 && m.cs == 0 {
        // an expanded scalar (the cotangent of a sum)
        tmp.clear();
        tmp.resize(rows * cols, s[0]);
        MatRef::from_row_major_slice(tmp.as_slice(), rows, cols)
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

/// `out = a · b` for small matrices, into a row-major `m x n` block, with the loop
/// order that keeps the innermost loop contiguous (so it vectorises) where the layouts
/// allow it.
#[inline]
fn small<T: GemmElem>(
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
) {
    if bm.cs == 1 {
        // C[i, :] += A[i, p] · B[p, :], the first term added to 0 as it is written (the
        // same sums as from a zeroed row, without a memset call per row: an outer
        // product's rows are short)
        for (i, crow) in out.chunks_exact_mut(n).enumerate().take(m) {
            if k > 0 {
                let aip = a[am.off + i * am.rs];
                for (c, &bv) in crow.iter_mut().zip(&b[bm.off..bm.off + n]) {
                    *c = T::ZERO + aip * bv;
                }
            } else {
                crow.fill(T::ZERO);
            }
            for p in 1..k {
                let aip = a[am.off + i * am.rs + p * am.cs];
                let start = bm.off + p * bm.rs;
                for (c, &bv) in crow.iter_mut().zip(&b[start..start + n]) {
                    *c += aip * bv;
                }
            }
        }
    } else if am.cs == 1 && bm.rs == 1 {
        // C[i, j] = A[i, :] · B[:, j], both contiguous
        for i in 0..m {
            let arow = &a[am.off + i * am.rs..am.off + i * am.rs + k];
            for j in 0..n {
                let start = bm.off + j * bm.cs;
                let bcol = &b[start..start + k];
                out[i * n + j] = arow.iter().zip(bcol).fold(T::ZERO, |acc, (&x, &y)| acc + x * y);
            }
        }
    } else {
        for i in 0..m {
            for j in 0..n {
                let mut acc = T::ZERO;
                for p in 0..k {
                    acc += a[am.off + i * am.rs + p * am.cs] * b[bm.off + p * bm.rs + j * bm.cs];
                }
                out[i * n + j] = acc;
            }
        }
    }
}

/// The `R x C` matrix `m` of `v` as an array (see [`fill`]).
#[inline(always)]
fn load<T: GemmElem, const R: usize, const C: usize>(v: &[T], m: Mat) -> [[T; C]; R] {
    let mut x = [[T::ZERO; C]; R];
    fill(v, m, &mut x);
    x
}

/// The `R x C` matrix `m` of `v` into `x`, in place: row-major and column-major matrices
/// are read from one slice (no bounds check per element), other strides element by
/// element.
#[inline(always)]
fn fill<T: GemmElem, const R: usize, const C: usize>(v: &[T], m: Mat, x: &mut [[T; C]; R]) {
    if m.rs == 0 && m.cs == 0 {
        // an expanded scalar (the cotangent of a sum); element by element, as a whole
        // array assigned here would be built and copied
        let s = v[m.off];
        for row in x.iter_mut() {
            for e in row.iter_mut() {
                *e = s;
            }
        }
    } else if m.cs == 1 && (m.rs == C || R == 1) {
        let s = &v[m.off..m.off + R * C];
        for (i, row) in x.iter_mut().enumerate() {
            row.copy_from_slice(&s[i * C..i * C + C]);
        }
    } else if m.rs == 1 && (m.cs == R || C == 1) {
        let s = &v[m.off..m.off + R * C];
        for (i, row) in x.iter_mut().enumerate() {
            for (j, e) in row.iter_mut().enumerate() {
                *e = s[j * R + i];
            }
        }
    } else {
        for (i, row) in x.iter_mut().enumerate() {
            for (j, e) in row.iter_mut().enumerate() {
                *e = v[m.off + i * m.rs + j * m.cs];
            }
        }
    }
}

/// `x · y` for arrays, each entry summed over `p` in order from zero (fully unrolled
/// for small sizes).
#[inline(always)]
fn product<T: GemmElem, const M: usize, const K: usize, const N: usize>(
    x: &[[T; K]; M],
    y: &[[T; N]; K],
) -> [[T; N]; M] {
    let mut c = [[T::ZERO; N]; M];
    for i in 0..M {
        for p in 0..K {
            for j in 0..N {
                c[i][j] += x[i][p] * y[p][j];
            }
        }
    }
    c
}

/// [`product`] of two `N x N` arrays with each row of `y` and of the result in one vector
/// register, where the element type and the instruction set have a register of `N`
/// elements (`f64` at `N = 4` with AVX2): `c_i = Σ_p x_ip y_p` from zero over `p` in
/// order, each product rounded before its sum, so the same bits as [`product`]. LLVM
/// leaves [`product`]'s 4 x 4 loops scalar (a multiply and an add per entry and term):
/// they were a large share of a batched 4 x 4 inverse's fwd+bwd, through [`sandwich_one`].
/// `None` where it does not apply.
pub(crate) trait ProductRows: Sized + Copy {
    #[inline(always)]
    fn product_rows<S: pulp::Simd, const N: usize>(
        _simd: S,
        _x: &[[Self; N]; N],
        _y: &[[Self; N]; N],
    ) -> Option<[[Self; N]; N]> {
        None
    }
}

impl ProductRows for f32 {}

impl ProductRows for f64 {
    #[inline(always)]
    fn product_rows<S: pulp::Simd, const N: usize>(
        simd: S,
        x: &[[f64; N]; N],
        y: &[[f64; N]; N],
    ) -> Option<[[f64; N]; N]> {
        if N != 4 || core::mem::size_of::<S::f64s>() != 4 * core::mem::size_of::<f64>() {
            return None;
        }
        // one register per row (N = 4 elements)
        let (yr, _) = S::as_simd_f64s(y.as_flattened());
        let mut c = [[0.0f64; N]; N];
        {
            let (cr, _) = S::as_mut_simd_f64s(c.as_flattened_mut());
            for i in 0..N {
                let mut acc = simd.splat_f64s(0.0);
                for p in 0..N {
                    acc = simd.add_f64s(acc, simd.mul_f64s(simd.splat_f64s(x[i][p]), yr[p]));
                }
                cr[i] = acc;
            }
        }
        Some(c)
    }
}

/// [`product`] of square arrays, through [`ProductRows`] where it applies (a function, not
/// a closure: inlined, it takes the caller's instruction set).
#[inline(always)]
fn product_sq<T: GemmElem, S: pulp::Simd, const N: usize>(
    simd: S,
    x: &[[T; N]; N],
    y: &[[T; N]; N],
) -> [[T; N]; N] {
    match T::product_rows(simd, x, y) {
        Some(c) => c,
        None => product(x, y),
    }
}

/// `out = a · b` for `M x K` and `K x N` matrices of any strides: both are loaded into
/// arrays, so the product is fully unrolled and free of bounds checks.
#[inline(always)]
fn fixed<T: GemmElem, const M: usize, const K: usize, const N: usize>(
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    out: &mut [T],
) {
    let c = product(&load::<T, M, K>(a, am), &load::<T, K, N>(b, bm));
    for (o, row) in out.chunks_exact_mut(N).zip(&c) {
        // an unrolled loop: `copy_from_slice` calls libc's memmove for these few elements
        #[allow(clippy::manual_memcpy)]
        for j in 0..N {
            o[j] = row[j];
        }
    }
}

/// [`fixed`] over consecutive batch elements: `out` holds the blocks of elements
/// `first, first + 1, ...`; one instance per shape, so the loop body is the unrolled
/// product (no dispatch per matrix), compiled for the best SIMD level the CPU has (AVX2 by
/// pulp's runtime dispatch; the arithmetic is the same, so the bits are too).
fn fixed_run<
    T: GemmElem,
    F: Fn(usize) -> (Mat, Mat),
    const M: usize,
    const K: usize,
    const N: usize,
>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    mats: &F,
) {
    struct Kernel<'a, T, F, const M: usize, const K: usize, const N: usize> {
        a: &'a [T],
        b: &'a [T],
        out: &'a mut [T],
        first: usize,
        mats: &'a F,
    }
    impl<
            T: GemmElem,
            F: Fn(usize) -> (Mat, Mat),
            const M: usize,
            const K: usize,
            const N: usize,
        > pulp::WithSimd for Kernel<'_, T, F, M, K, N>
    {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { a, b, out, first, mats } = self;
            for (j, o) in out.chunks_exact_mut(M * N).enumerate() {
                let (am, bm) = mats(first + j);
                fixed::<T, M, K, N>(a, am, b, bm, o);
            }
        }
    }
    crate::backend::cpu::simd::arch().dispatch(Kernel::<T, F, M, K, N> { a, b, out, first, mats });
}

/// Matches `$shape` against the shapes with unrolled kernels (`m = k = n <= 4`, outer
/// products `(n, 1, n)` and matrix-vector products `(n, n, 1)`, `n <= 4`): for each, `$body`
/// with the consts `$m`, `$k`, `$n` set to it; `$other` for any other shape. The one list
/// of those shapes, so that [`has_fixed`] and the kernels that dispatch on it agree.
macro_rules! fixed_shapes {
    ($shape:expr, $m:ident, $k:ident, $n:ident => $body:expr, _ => $other:expr) => {
        fixed_shapes!(@arms $shape, $m, $k, $n, $body, $other;
            (1, 1, 1) (2, 2, 2) (3, 3, 3) (4, 4, 4) (2, 1, 2) (3, 1, 3) (4, 1, 4) (2, 2, 1)
            (3, 3, 1) (4, 4, 1))
    };
    (@arms $shape:expr, $m:ident, $k:ident, $n:ident, $body:expr, $other:expr;
        $(($mv:literal, $kv:literal, $nv:literal))*) => {
        match $shape {
            $(($mv, $kv, $nv) => {
                // unused where only the match matters ([`has_fixed`])
                #[allow(dead_code)]
                const $m: usize = $mv;
                #[allow(dead_code)]
                const $k: usize = $kv;
                #[allow(dead_code)]
                const $n: usize = $nv;
                $body
            })*
            _ => $other,
        }
    };
}

/// Whether the shape `(m, k, n)` has an unrolled kernel in [`fixed_dispatch`].
fn has_fixed(shape: (usize, usize, usize)) -> bool {
    fixed_shapes!(shape, M, K, N => true, _ => false)
}

/// Runs [`fixed_run`] for the shape `(m, k, n)` if it has an instance (`m = k = n <= 4`,
/// outer products `(n, 1, n)` and matrix-vector products `(n, n, 1)`, `n <= 4`); `false`
/// otherwise.
fn fixed_dispatch<T: GemmElem, F: Fn(usize) -> (Mat, Mat)>(
    shape: (usize, usize, usize),
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    mats: &F,
) -> bool {
    fixed_shapes!(shape, M, K, N => fixed_run::<T, F, M, K, N>(a, b, out, first, mats),
        _ => return false);
    true
}

/// `out = da · b + a · db` for `M x K` and `K x N` matrices of any strides: the two
/// products of [`fixed`] and their sum, entry by entry (so the bits of the two products
/// rounded and then added, as the tensor ops would give them).
#[inline(always)]
fn fixed_jvp<T: GemmElem, const M: usize, const K: usize, const N: usize>(
    (a, am): (&[T], Mat),
    (b, bm): (&[T], Mat),
    (da, dam): (&[T], Mat),
    (db, dbm): (&[T], Mat),
    out: &mut [T],
) {
    let x = product(&load::<T, M, K>(da, dam), &load::<T, K, N>(b, bm));
    let y = product(&load::<T, M, K>(a, am), &load::<T, K, N>(db, dbm));
    for ((o, xr), yr) in out.chunks_exact_mut(N).zip(&x).zip(&y) {
        for j in 0..N {
            o[j] = xr[j] + yr[j];
        }
    }
}

/// The operands of [`matmul_jvp`]: the primal pair, the tangent pair, and where each
/// batch element's matrices lie (`(da, b)` and `(a, db)`).
struct JvpOperands<'a, T> {
    a: &'a [T],
    b: &'a [T],
    da: &'a [T],
    db: &'a [T],
    tangent_a: Placement,
    tangent_b: Placement,
}

/// [`fixed_jvp`] over consecutive batch elements from `first` (as [`fixed_run`]).
fn fixed_jvp_run<T: GemmElem, const M: usize, const K: usize, const N: usize>(
    ops: &JvpOperands<'_, T>,
    out: &mut [T],
    first: usize,
) {
    struct Kernel<'a, 'b, T, const M: usize, const K: usize, const N: usize> {
        ops: &'a JvpOperands<'b, T>,
        out: &'a mut [T],
        first: usize,
    }
    impl<T: GemmElem, const M: usize, const K: usize, const N: usize> pulp::WithSimd
        for Kernel<'_, '_, T, M, K, N>
    {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { ops, out, first } = self;
            for (j, o) in out.chunks_exact_mut(M * N).enumerate() {
                let (dam, bm) = ops.tangent_a.mats(first + j);
                let (am, dbm) = ops.tangent_b.mats(first + j);
                fixed_jvp::<T, M, K, N>((ops.a, am), (ops.b, bm), (ops.da, dam), (ops.db, dbm), o);
            }
        }
    }
    crate::backend::cpu::simd::arch().dispatch(Kernel::<T, M, K, N> { ops, out, first });
}

/// The tangent of a batched product, `da · b + a · db` (`a, da: (*, m, k)`, `b, db:
/// (*, k, n)`, equal batch dims), row-major `(*, m, n)`, in one pass over the four
/// operands, for the shapes with an unrolled kernel ([`has_fixed`]): the same bits as the
/// two products and their sum. `None` for other shapes (GEMM-sized products gain nothing
/// from fusing the sum).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_jvp<T: GemmElem>(
    (a, al): (&[T], &Layout),
    (b, bl): (&[T], &Layout),
    (da, dal): (&[T], &Layout),
    (db, dbl): (&[T], &Layout),
) -> Option<Vec<T>> {
    let r = al.rank();
    let (m, k, n) = (al.dims()[r - 2], al.dims()[r - 1], bl.dims()[r - 1]);
    if !has_fixed((m, k, n)) {
        return None;
    }
    let batch: usize = al.dims()[..r - 2].iter().product();
    // every kernel below writes its whole block
    let mut out = super::pool::overwritten(batch * m * n, T::ZERO);
    if out.is_empty() {
        return Some(out);
    }
    let ops = JvpOperands {
        a,
        b,
        da,
        db,
        tangent_a: Placement::of(dal, bl),
        tangent_b: Placement::of(al, dbl),
    };
    let run = |o: &mut [T], first: usize| {
        fixed_shapes!((m, k, n), M, K, N => fixed_jvp_run::<T, M, K, N>(&ops, o, first),
            _ => {});
    };
    let work = m * n * k;
    if batch * work >= 1 << 14 {
        let per_task = ((1usize << 13) / work).max(1);
        super::par::for_each_chunk(&mut out, m * n * per_task, |t, o| run(o, t * per_task));
    } else {
        run(&mut out, 0);
    }
    Some(out)
}

/// `out[b] = a[b] · b[b]` for one batch element, into its row-major `m x n` block (every
/// element written).
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
    if k == 0 {
        out.fill(T::ZERO);
        return;
    }
    if fixed_dispatch((m, k, n), a, b, out, 0, &|_| (am, bm)) {
        return;
    }
    if m * n * k <= SMALL {
        small(a, am, b, bm, out, m, k, n);
        return;
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    let av = if colmajor_lhs(am, m, k) {
        load_rows(a, am, 0, m, k, &mut ta);
        MatRef::from_row_major_slice(ta.as_slice(), m, k)
    } else {
        view(a, am, m, k, &mut ta)
    };
    let bv = view(b, bm, k, n, &mut tb);
    let dst = MatMut::from_row_major_slice_mut(out, m, n);
    faer_matmul(dst, Accum::Replace, av, bv, T::ONE, par);
}

/// Batched product of `a: (*, m, k)` and `b: (*, k, n)` whose batch dims are equal
/// (already broadcast). Returns the row-major `(*, m, n)` result.
pub(crate) fn matmul<T: GemmElem>(a: &[T], al: &Layout, b: &[T], bl: &Layout) -> Vec<T> {
    let r = al.rank();
    let (m, k, n) = (al.dims()[r - 2], al.dims()[r - 1], bl.dims()[r - 1]);
    // operands whose matrices have no unit stride (expanded cotangents, strided slices)
    // are copied once, so that the direct loop of small products reads rows or columns
    // contiguously; above that size each matrix is packed on its own where it is used
    // (`view`: a few KiB that stay in cache, instead of a copy of the whole batch)
    let fixed_size = has_fixed((m, k, n));
    let awkward = |l: &Layout, rows: usize, cols: usize| {
        let (rs, cs) = (l.strides()[r - 2], l.strides()[r - 1]);
        !fixed_size && m * n * k <= SMALL && rs != 1 && cs != 1 && rows > 1 && cols > 1
    };
    if awkward(al, m, k) {
        let c = super::map_strided(a, al, |x| x);
        return matmul(&c, &Layout::contiguous(al.shape().clone()), b, bl);
    }
    if awkward(bl, k, n) {
        let c = super::map_strided(b, bl, |x| x);
        return matmul(a, al, &c, &Layout::contiguous(bl.shape().clone()));
    }
    let batch_dims = &al.dims()[..r - 2];
    let batch: usize = batch_dims.iter().product();
    // every kernel below writes its whole block
    let mut out = super::pool::overwritten(batch * m * n, T::ZERO);
    if out.is_empty() {
        return out;
    }
    let placed = Placement::of(al, bl);
    let mats = |i: usize| placed.mats(i);
    let work = m * n * k;
    if m == k && k == n && (n == 8 || n == 16) {
        // square orders 8 and 16: two rows at a time from row buffers (faster than
        // faer's small kernel and its call, per matrix)
        let run = |o: &mut [T], first: usize| rows_run(a, b, o, first, n, &mats);
        if batch * work >= 1 << 15 {
            let per_task = ((1usize << 14) / work).max(1);
            super::par::for_each_chunk(&mut out, m * n * per_task, |t, o| run(o, t * per_task));
        } else {
            run(&mut out, 0);
        }
        return out;
    }
    if fixed_size && batch > 1 {
        // tiny products: the shape dispatched once per task, not per matrix
        let run = |o: &mut [T], first: usize| {
            fixed_dispatch((m, k, n), a, b, o, first, &mats);
        };
        if batch * work >= 1 << 15 {
            let per_task = ((1usize << 14) / work).max(1);
            super::par::for_each_chunk(&mut out, m * n * per_task, |t, o| run(o, t * per_task));
        } else {
            run(&mut out, 0);
        }
        return out;
    }
    let threads = rayon::current_num_threads();
    // large products one per thread when the batch deals out evenly (else each is split)
    let even = batch >= 4 * threads || (batch >= threads && batch.is_multiple_of(threads));
    if batch > 1 && batch * work >= 1 << 15 && (work < PAR_THRESHOLD || even) {
        // about 2^14 multiply-adds per task
        let per_task = ((1usize << 14) / work.max(1)).max(1);
        super::par::for_each_chunk(&mut out, m * n * per_task, |t, o| {
            for (j, o) in o.chunks_exact_mut(m * n).enumerate() {
                let (am, bm) = mats(t * per_task + j);
                one(a, am, b, bm, o, m, k, n, Par::Seq);
            }
        });
    } else if work >= PAR_THRESHOLD && threads > 1 {
        for (i, o) in out.chunks_exact_mut(m * n).enumerate() {
            let (am, bm) = mats(i);
            one_split(a, am, b, bm, o, m, k, n);
        }
    } else {
        for (i, o) in out.chunks_exact_mut(m * n).enumerate() {
            let (am, bm) = mats(i);
            one(a, am, b, bm, o, m, k, n, Par::Seq);
        }
    }
    out
}

/// Batched complex product of `a: (*, m, k)` and `b: (*, k, n)` with equal batch dims,
/// row-major `(*, m, n)`: each matrix through faer's complex GEMM (`one` is `1 + 0i`),
/// small batched products over the threads, one large product on all of them. (No
/// unrolled small-matrix kernels yet: faer's GEMM serves every size.)
pub(crate) fn matmul_complex<T>(a: &[T], al: &Layout, b: &[T], bl: &Layout, one: T) -> Vec<T>
where
    T: faer::traits::ComplexField + super::pool::Pooled,
{
    let r = al.rank();
    let (m, k, n) = (al.dims()[r - 2], al.dims()[r - 1], bl.dims()[r - 1]);
    let batch_dims = &al.dims()[..r - 2];
    let batch: usize = batch_dims.iter().product();
    let zero = T::default();
    let mut out = super::pool::overwritten(batch * m * n, zero);
    if out.is_empty() {
        return out;
    }
    let placed = Placement::of(al, bl);
    let product = |i: usize, o: &mut [T], par: Par| {
        if k == 0 {
            o.fill(zero);
            return;
        }
        let (am, bm) = placed.mats(i);
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        let av = view(a, am, m, k, &mut ta);
        let bv = view(b, bm, k, n, &mut tb);
        faer_matmul(MatMut::from_row_major_slice_mut(o, m, n), Accum::Replace, av, bv, one, par);
    };
    // a complex multiply-add is four real ones
    let work = 4 * m * n * k;
    if batch > 1 && batch * work >= 1 << 15 && work < PAR_THRESHOLD {
        let per_task = ((1usize << 14) / work.max(1)).max(1);
        super::par::for_each_chunk(&mut out, m * n * per_task, |t, o| {
            for (j, o) in o.chunks_exact_mut(m * n).enumerate() {
                product(t * per_task + j, o, Par::Seq);
            }
        });
    } else {
        for (i, o) in out.chunks_exact_mut(m * n).enumerate() {
            super::par::with_par(work >= PAR_THRESHOLD, |par| product(i, o, par));
        }
    }
    out
}

/// Rows (or columns) of output from which [`one_split`] gives each thread a range.
const SPLIT_MIN: usize = 64;

/// `out = a · b` (row-major `m x n` block) for one large product on every thread: the
/// output cut into one range of rows (of columns, when it is wider than tall) per
/// thread, each a sequential faer product. Too narrow to cut: faer's parallel product.
///
/// Why not faer's parallel product throughout: on a two-core Intel AVX-512 host two
/// independent half products were faster than its two-thread product, at n = 256 and
/// at 1024. Each range packs its own panels of the shared operand (`k` by its width), a
/// small cost against its `m n k / threads` multiply-adds.
#[allow(clippy::too_many_arguments)]
fn one_split<T: GemmElem>(
    a: &[T],
    am: Mat,
    b: &[T],
    bm: Mat,
    out: &mut [T],
    m: usize,
    k: usize,
    n: usize,
) {
    let rows = m >= n;
    let len = if rows { m } else { n };
    let parts = rayon::current_num_threads().min(len / SPLIT_MIN);
    if k == 0 || parts <= 1 {
        super::par::with_par(true, |par| one(a, am, b, bm, out, m, k, n, par));
        return;
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    // a column-major left operand: each row range copies its own rows
    let copy = colmajor_lhs(am, m, k);
    let av = if copy && !rows {
        load_rows(a, am, 0, m, k, &mut ta);
        MatRef::from_row_major_slice(ta.as_slice(), m, k)
    } else {
        view(a, am, m, k, &mut ta)
    };
    let bv = view(b, bm, k, n, &mut tb);
    let mut rest = MatMut::from_row_major_slice_mut(out, m, n);
    let mut ranges = Vec::with_capacity(parts);
    for t in 0..parts {
        let (start, end) = (t * len / parts, (t + 1) * len / parts);
        let (head, tail) = if rows {
            rest.split_at_row_mut(end - start)
        } else {
            rest.split_at_col_mut(end - start)
        };
        ranges.push(std::sync::Mutex::new(Some((start, end - start, head))));
        rest = tail;
    }
    super::par::run_tasks(parts, |t| {
        let taken = ranges[t].lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some((start, len, dst)) = taken {
            let mut own = Vec::new();
            let (x, y) = if rows && copy {
                load_rows(a, am, start, len, k, &mut own);
                (MatRef::from_row_major_slice(own.as_slice(), len, k), bv)
            } else if rows {
                (av.subrows(start, len), bv)
            } else {
                (av, bv.subcols(start, len))
            };
            faer_matmul(dst, Accum::Replace, x, y, T::ONE, Par::Seq);
        }
    });
}

/// `k` from which a column-major left operand is copied row-major before faer's product
/// into a row-major output: with it as it is, faer was much slower at orders 512 and
/// 1024 and slightly at 256 (an Intel AVX-512 host), and a transposed left operand is
/// the rule in backward passes (`Aᵀ G`). The copy costs `m k` moves against `m k n`
/// multiply-adds.
const LHS_COPY_K: usize = 384;

/// Whether the left operand `m x k` is column-major and long enough to copy
/// ([`LHS_COPY_K`]).
fn colmajor_lhs(am: Mat, m: usize, k: usize) -> bool {
    am.rs == 1 && am.cs != 1 && m > 1 && k >= LHS_COPY_K
}

/// Rows `r0..r0 + rows` of the `m x k` operand `a` (any strides) into `tmp`, row-major,
/// in 32 x 32 tiles (a column-major source is read a column run at a time).
fn load_rows<T: GemmElem>(a: &[T], am: Mat, r0: usize, rows: usize, k: usize, tmp: &mut Vec<T>) {
    const TILE: usize = 32;
    tmp.clear();
    tmp.resize(rows * k, T::ZERO);
    for i0 in (0..rows).step_by(TILE) {
        for j0 in (0..k).step_by(TILE) {
            for j in j0..(j0 + TILE).min(k) {
                let col = am.off + j * am.cs + r0 * am.rs;
                for i in i0..(i0 + TILE).min(rows) {
                    tmp[i * k + j] = a[col + i * am.rs];
                }
            }
        }
    }
}

/// Where each matrix of a batched product's two operands lies: the batch offsets and
/// the matrices' row and column strides.
struct Placement {
    offsets: BatchOffsets,
    a: (usize, usize),
    b: (usize, usize),
}

impl Placement {
    /// Of `a: (*, m, k)` and `b: (*, k, n)` with equal batch dims. The batch offsets are
    /// arithmetic when the batch dims collapse to one stride per operand (the usual
    /// case), else listed once.
    fn of(al: &Layout, bl: &Layout) -> Placement {
        let r = al.rank();
        let offsets = BatchOffsets::new(
            &al.dims()[..r - 2],
            &al.strides()[..r - 2],
            &bl.strides()[..r - 2],
            al.offset(),
            bl.offset(),
        );
        let a = (al.strides()[r - 2], al.strides()[r - 1]);
        let b = (bl.strides()[r - 2], bl.strides()[r - 1]);
        Placement { offsets, a, b }
    }

    /// The two matrices of batch element `i`.
    #[inline]
    fn mats(&self, i: usize) -> (Mat, Mat) {
        let (oa, ob) = self.offsets.get(i);
        (Mat { off: oa, rs: self.a.0, cs: self.a.1 }, Mat { off: ob, rs: self.b.0, cs: self.b.1 })
    }
}

/// The storage offsets of each batch element's matrices.
enum BatchOffsets {
    /// `base + i * stride` for each operand.
    Strided { a: (usize, usize), b: (usize, usize) },
    /// Listed, for batch dims that do not collapse.
    Listed(Vec<(usize, usize)>),
}

impl BatchOffsets {
    fn new(dims: &[usize], sa: &[usize], sb: &[usize], oa: usize, ob: usize) -> BatchOffsets {
        // collapse: dims of size 1 drop out; the rest must nest (stride = next stride x size)
        let mut last: Option<(usize, usize, usize)> = None; // (size, stride a, stride b) of the innermost
        let mut ok = true;
        for ((&d, &x), &y) in dims.iter().zip(sa).zip(sb).rev() {
            if d == 1 {
                continue;
            }
            last = match last {
                None => Some((d, x, y)),
                Some((n, ia, ib)) if x == ia * n && y == ib * n => Some((n * d, ia, ib)),
                Some(_) => {
                    ok = false;
                    break;
                }
            };
        }
        if ok {
            let (_, ia, ib) = last.unwrap_or((1, 0, 0));
            return BatchOffsets::Strided { a: (oa, ia), b: (ob, ib) };
        }
        let mut v = Vec::with_capacity(dims.iter().product());
        walk(dims, [sa, sb], [oa, ob], |[x, y]| v.push((x, y)));
        BatchOffsets::Listed(v)
    }

    #[inline]
    fn get(&self, i: usize) -> (usize, usize) {
        match self {
            BatchOffsets::Strided { a, b } => (a.0 + i * a.1, b.0 + i * b.1),
            BatchOffsets::Listed(v) => v[i],
        }
    }
}

/// The `n x n` matrix `m` of `v` in the top-left corner of an `N x N` array, zeros
/// elsewhere (`n <= N`); [`load`] when `n = N`.
#[inline(always)]
fn load_padded<T: GemmElem, const N: usize>(v: &[T], m: Mat, n: usize) -> [[T; N]; N] {
    if n == N {
        return load::<T, N, N>(v, m);
    }
    let mut x = [[T::ZERO; N]; N];
    for (i, row) in x.iter_mut().enumerate().take(n) {
        for (j, e) in row.iter_mut().enumerate().take(n) {
            *e = v[m.off + i * m.rs + j * m.cs];
        }
    }
    x
}

/// `out = alpha · Y G Y` for one matrix, `Y = Xᵀ` (`y` gives `X` with its strides
/// swapped), padded to `N x N`; `out` is the row-major `n x n` block. The products are
/// summed in the order of [`fixed`] (`(Y G) Y`): up to order 4 the bits are those of two
/// [`matmul`]s followed by the scaling (as they are at 8 and 16 through
/// [`sandwich_rows`]; other larger products there go through faer, which may sum in
/// another order).
#[inline(always)]
fn sandwich_one<T: GemmElem, S: pulp::Simd, const N: usize>(
    simd: S,
    x: &[T],
    ym: Mat,
    g: &[T],
    gm: Mat,
    alpha: T,
    out: &mut [T],
    n: usize,
) {
    // orders up to 4 have their own instance: n is the constant N there
    let n = if N <= 4 { N } else { n };
    let y = load_padded::<T, N>(x, ym, n);
    let gg = load_padded::<T, N>(g, gm, n);
    let c = product_sq(simd, &product_sq(simd, &y, &gg), &y);
    for (o, row) in out.chunks_exact_mut(n).zip(&c) {
        for (o, &v) in o.iter_mut().zip(row) {
            *o = alpha * v;
        }
    }
}

/// The `N x N` matrix `m` of `v`, row-major (`N²` elements): borrowed where its rows are
/// contiguous, else copied into `buf` (in place: no array returned by value, whose
/// copies and zeroing were an eighth of a batched 16 x 16 inverse's backward).
#[inline(always)]
fn rows_of<'a, T: GemmElem, const N: usize>(
    v: &'a [T],
    m: Mat,
    buf: &'a mut [[T; N]; N],
) -> &'a [T] {
    if m.cs == 1 && m.rs == N {
        return &v[m.off..m.off + N * N];
    }
    fill(v, m, buf);
    buf.as_flattened()
}

/// Row `i` of the row-major `N x N` matrix `v` (`N²` elements) as an array.
#[inline(always)]
fn row<T, const N: usize>(v: &[T], i: usize) -> &[T; N] {
    // the length is N by construction: the conversion cannot fail
    <&[T; N]>::try_from(&v[i * N..i * N + N]).unwrap_or_else(|_| unreachable!())
}

/// `out = alpha · (x · y)` for row-major `N x N` matrices (`N` even), two rows of `x` at
/// a time (each row of `y` loaded once for both); each entry summed over `p` in order
/// from zero, as [`product`] does.
#[inline(always)]
fn rows_product<T: GemmElem, const N: usize>(x: &[T], y: &[T], alpha: Option<T>, out: &mut [T]) {
    for (xs, os) in x.chunks_exact(2 * N).zip(out.chunks_exact_mut(2 * N)) {
        let (x0, x1) = (row::<T, N>(xs, 0), row::<T, N>(xs, 1));
        let (mut c0, mut c1) = ([T::ZERO; N], [T::ZERO; N]);
        for p in 0..N {
            let (a0, a1) = (x0[p], x1[p]);
            let yr = row::<T, N>(y, p);
            for j in 0..N {
                c0[j] += a0 * yr[j];
                c1[j] += a1 * yr[j];
            }
        }
        if let Some(alpha) = alpha {
            for j in 0..N {
                c0[j] = alpha * c0[j];
                c1[j] = alpha * c1[j];
            }
        }
        let (o0, o1) = os.split_at_mut(N);
        // an unrolled loop: `copy_from_slice` calls libc's memmove for these few elements
        #[allow(clippy::manual_memcpy)]
        for j in 0..N {
            o0[j] = c0[j];
            o1[j] = c1[j];
        }
    }
}

/// [`sandwich_one`] for `n = N` (even): `out = alpha · (Y G) Y` through row buffers,
/// with the same sums in the same order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sandwich_rows<T: GemmElem, const N: usize>(
    x: &[T],
    ym: Mat,
    g: &[T],
    gm: Mat,
    alpha: T,
    out: &mut [T],
    bufs: &mut [[[T; N]; N]; 3],
) {
    let [yb, gb, tb] = bufs;
    let y = rows_of::<T, N>(x, ym, yb);
    let gg = rows_of::<T, N>(g, gm, gb);
    let t = tb.as_flattened_mut();
    rows_product::<T, N>(y, gg, None, t);
    rows_product::<T, N>(t, y, Some(alpha), out);
}

/// `out_j = a_j · b_j` for the square `n x n` products `first, first + 1, ...` (`n` 8 or
/// 16; `mats` gives the operands), through [`rows_of`] and [`rows_product`], compiled for
/// the best SIMD level the CPU has.
fn rows_run<T: GemmElem, F: Fn(usize) -> (Mat, Mat)>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    n: usize,
    mats: &F,
) {
    struct Kernel<'a, T, F, const N: usize> {
        a: &'a [T],
        b: &'a [T],
        out: &'a mut [T],
        first: usize,
        mats: &'a F,
    }
    impl<T: GemmElem, F: Fn(usize) -> (Mat, Mat), const N: usize> pulp::WithSimd
        for Kernel<'_, T, F, N>
    {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { a, b, out, first, mats } = self;
            let mut bufs = [[[T::ZERO; N]; N]; 2];
            let [ab, bb] = &mut bufs;
            for (j, o) in out.chunks_exact_mut(N * N).enumerate() {
                let (am, bm) = mats(first + j);
                let x = rows_of::<T, N>(a, am, ab);
                let y = rows_of::<T, N>(b, bm, bb);
                rows_product::<T, N>(x, y, None, o);
            }
        }
    }
    let arch = crate::backend::cpu::simd::arch();
    if n == 8 {
        arch.dispatch(Kernel::<T, F, 8> { a, b, out, first, mats });
    } else {
        arch.dispatch(Kernel::<T, F, 16> { a, b, out, first, mats });
    }
}

/// Largest order that [`sandwich_t`] takes.
const SANDWICH_MAX: usize = 16;

/// `out_b = alpha · X_bᵀ G_b X_bᵀ` for square `x: (*, n, n)` and `g: (*, n, n)` with
/// equal batch dims, any strides (an expanded cotangent included): the first-order
/// gradient of the inverse (`alpha = −1`) in one pass over each matrix instead of two
/// products and a negation. Row-major result; `None` when `n >` [`SANDWICH_MAX`]
/// (the caller multiplies instead). Orders up to 4 are unrolled exactly, 8 and 16 go
/// through row buffers ([`sandwich_rows`]), the others are padded with zeros to 8 or 16:
/// a padded term is `0 · 0`, so it changes no sum (except that a sum of negative zeros
/// becomes `+0`).
pub(crate) fn sandwich_t<T: GemmElem>(
    x: &[T],
    xl: &Layout,
    g: &[T],
    gl: &Layout,
    alpha: T,
) -> Option<Vec<T>> {
    let r = xl.rank();
    let n = xl.dims()[r - 1];
    if n > SANDWICH_MAX {
        return None;
    }
    let batch_dims = &xl.dims()[..r - 2];
    let batch: usize = batch_dims.iter().product();
    let size = n * n;
    // every matrix's block is written whole
    let mut out = super::pool::overwritten(batch * size, T::ZERO);
    if out.is_empty() {
        return Some(out);
    }
    let offsets = BatchOffsets::new(
        batch_dims,
        &xl.strides()[..r - 2],
        &gl.strides()[..r - 2],
        xl.offset(),
        gl.offset(),
    );
    // Xᵀ: X's strides swapped
    let (yrs, ycs) = (xl.strides()[r - 1], xl.strides()[r - 2]);
    let (grs, gcs) = (gl.strides()[r - 2], gl.strides()[r - 1]);
    let run = |o: &mut [T], first: usize| {
        struct Kernel<'a, T, const N: usize> {
            x: &'a [T],
            g: &'a [T],
            o: &'a mut [T],
            first: usize,
            n: usize,
            alpha: T,
            offsets: &'a BatchOffsets,
            strides: [usize; 4],
        }
        impl<T: GemmElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
            type Output = ();
            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, simd: S) {
                let Kernel { x, g, o, first, n, alpha, offsets, strides: [yrs, ycs, grs, gcs] } =
                    self;
                if N > 4 && n == N {
                    let mut bufs = [[[T::ZERO; N]; N]; 3];
                    for (j, ob) in o.chunks_exact_mut(n * n).enumerate() {
                        let (ox, og) = offsets.get(first + j);
                        let ym = Mat { off: ox, rs: yrs, cs: ycs };
                        let gm = Mat { off: og, rs: grs, cs: gcs };
                        sandwich_rows::<T, N>(x, ym, g, gm, alpha, ob, &mut bufs);
                    }
                    return;
                }
                let n = if N <= 4 { N } else { n };
                for (j, ob) in o.chunks_exact_mut(n * n).enumerate() {
                    let (ox, og) = offsets.get(first + j);
                    let ym = Mat { off: ox, rs: yrs, cs: ycs };
                    let gm = Mat { off: og, rs: grs, cs: gcs };
                    sandwich_one::<T, S, N>(simd, x, ym, g, gm, alpha, ob, n);
                }
            }
        }
        let strides = [yrs, ycs, grs, gcs];
        let arch = crate::backend::cpu::simd::arch();
        macro_rules! go {
            ($nn:literal) => {
                arch.dispatch(Kernel::<T, $nn> {
                    x,
                    g,
                    o,
                    first,
                    n,
                    alpha,
                    offsets: &offsets,
                    strides,
                })
            };
        }
        match n {
            1 => go!(1),
            2 => go!(2),
            3 => go!(3),
            4 => go!(4),
            5..=8 => go!(8),
            _ => go!(16),
        }
    };
    let work = 2 * size * n;
    if batch > 1 && batch * work >= 1 << 15 {
        let per_task = ((1usize << 14) / work).max(1);
        super::par::for_each_chunk(&mut out, size * per_task, |t, o| run(o, t * per_task));
    } else {
        run(&mut out, 0);
    }
    Some(out)
}
