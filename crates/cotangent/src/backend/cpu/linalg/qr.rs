//! Householder QR `A = Q R`, batched: LAPACK's conventions (`geqrf` + `orgqr`), so that
//! the signs of `diag(R)` are LAPACK's (PyTorch's).
//!
//! Each matrix is copied once into a work block and factorised in place:
//! - small matrices (`min(m, n) <= SMALL_K` or `m n <= SMALL_MN`): an unblocked Householder
//!   loop written here (LAPACK's `geqr2` / `org2r`) on a row-major block, so that every
//!   inner loop runs along a row (contiguous, no reduction: it vectorises); allocation-free
//!   per matrix (scratch reused across a rayon task's matrices);
//! - larger ones: faer's blocked Householder QR on a column-major block, and its block
//!   reflector application to form `Q`;
//! - from `min(m, n)` = [`SPLIT_K`]: panels of faer's sequential QR, each panel's block
//!   reflector applied to the trailing columns in one column range per thread
//!   ([`qr_split`]), and `Q` formed from the last block reflector to the first on the
//!   columns it changes, also by column ranges ([`form_q_split`]).
//!
//! Batches of square matrices up to 16 x 16 run [`LANES`] matrices at a time, one per
//! SIMD lane (`qr_lanes`): the same reflectors, applied four columns at a time with fused
//! multiply-adds.
//!
//! [`qr_backward`] is the VJP of tall or square factorisations, fused per matrix (used
//! when the backward pass is not recorded): own loops up to order [`BLOCKED_N`], faer's
//! sequential products and triangular solve above, on column ranges split across threads
//! ([`backward_blocked`]); for batches of small square matrices, [`LANES`] at a time, each
//! product summed a few entries at a time in registers.
//!
//! The reflector of column `j` is LAPACK's `larfg`: `H = I − τ v vᵀ`, `v₀ = 1`, mapping
//! `x` to `β e₀` with `β = −sign(x₀) ‖x‖` (and `H = I`, `β = x₀` when the rest of `x` is
//! zero). faer follows the same sign rule; it differs from LAPACK only on numerically
//! rank-deficient columns (it then skips the column, which gives another valid
//! factorisation), which only the large-matrix path can meet.

use crate::backend::cpu::par::{for_each_chunk, run_tasks, Parts};
use crate::backend::cpu::pool;
use faer::{MatMut, MatRef, Par};

use super::householder as hh;
use super::lanes::{lane_offsets, load_lanes, LANES, LANES_MAX};
use super::order::{by_order, by_order_simd};
use super::{colmajor_layout, load_colmajor, Batch, LinalgElem};
use crate::backend::QrSpec;
use crate::layout::Layout;

/// Below these sizes the unblocked loop is used.
const SMALL_K: usize = 16;
const SMALL_MN: usize = 48 * 48;
/// Work (m n k per matrix), or `min(m, n)`, from which a matrix's trailing updates run over
/// every thread (in column ranges: the same bits on any number of threads).
const PAR_WORK: usize = 512 * 512 * 512;
const PAR_K: usize = 128;
/// Work per rayon task when the batch is split across threads.
const TASK_WORK: usize = 1 << 15;

/// The scalar helpers the reflectors need.
pub(crate) trait QrElem: LinalgElem {
    /// The smallest positive normal number.
    const MIN_POSITIVE: Self;
    fn hypot(self, o: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
    /// `self * a + b` with one rounding (an FMA instruction inside the lane kernels,
    /// which run with the CPU's FMA enabled).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Runs `f` on `len` lane entries of this thread's scratch, reused from call to call
    /// (with its old contents: the lane kernels write before they read), so that the many
    /// small tasks of a batch neither allocate nor zero their work blocks.
    fn with_lanes<R>(len: usize, f: impl FnOnce(&mut [[Self; LANES]]) -> R) -> R;
}

/// The lane scratch of a thread for one element type (see [`QrElem::with_lanes`]).
type LaneScratch<T> = std::thread::LocalKey<std::cell::RefCell<Vec<[T; LANES]>>>;

/// [`QrElem::with_lanes`] on the scratch `key` (a fresh block if it is in use).
fn with_lanes_in<T: QrElem, R>(
    key: &'static LaneScratch<T>,
    len: usize,
    f: impl FnOnce(&mut [[T; LANES]]) -> R,
) -> R {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut v) => {
            if v.len() < len {
                v.resize(len, [T::ZERO; LANES]);
            }
            f(&mut v[..len])
        }
        Err(_) => f(&mut vec![[T::ZERO; LANES]; len]),
    })
}

impl QrElem for f32 {
    const MIN_POSITIVE: Self = f32::MIN_POSITIVE;
    fn hypot(self, o: Self) -> Self {
        f32::hypot(self, o)
    }
    fn copysign(self, sign: Self) -> Self {
        f32::copysign(self, sign)
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f32::mul_add(self, a, b)
    }
    fn with_lanes<R>(len: usize, f: impl FnOnce(&mut [[Self; LANES]]) -> R) -> R {
        thread_local! {
            static LANES_F32: std::cell::RefCell<Vec<[f32; LANES]>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        with_lanes_in(&LANES_F32, len, f)
    }
}

impl QrElem for f64 {
    const MIN_POSITIVE: Self = f64::MIN_POSITIVE;
    fn hypot(self, o: Self) -> Self {
        f64::hypot(self, o)
    }
    fn copysign(self, sign: Self) -> Self {
        f64::copysign(self, sign)
    }
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        f64::mul_add(self, a, b)
    }
    fn with_lanes<R>(len: usize, f: impl FnOnce(&mut [[Self; LANES]]) -> R) -> R {
        thread_local! {
            static LANES_F64: std::cell::RefCell<Vec<[f64; LANES]>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        with_lanes_in(&LANES_F64, len, f)
    }
}

/// Applies `H = I − τ v vᵀ` (`v₀ = 1`, `v_i = w[(j + i) n + j]` for `i >= 1`) from the left
/// to rows `j..` and columns `c0..` of the row-major block `c` (`ld` columns), with the
/// row scratch `wv`: `wv = vᵀ C` accumulated row by row, then `C −= τ v wv`. Every inner
/// loop runs along a row: contiguous, no reduction, so it vectorises.
#[allow(clippy::too_many_arguments)]
fn apply_reflector<T: QrElem>(
    w: &[T],
    n: usize,
    j: usize,
    tau: T,
    c: &mut [T],
    ld: usize,
    c0: usize,
    wv: &mut [T],
) {
    let rows = c.len() / ld.max(1);
    let wv = &mut wv[c0..ld];
    wv.copy_from_slice(&c[j * ld + c0..(j + 1) * ld]);
    for i in j + 1..rows {
        let vi = w[i * n + j];
        for (x, &y) in wv.iter_mut().zip(&c[i * ld + c0..(i + 1) * ld]) {
            *x += vi * y;
        }
    }
    for x in wv.iter_mut() {
        *x = -(*x * tau);
    }
    for (x, &y) in c[j * ld + c0..(j + 1) * ld].iter_mut().zip(wv.iter()) {
        *x += y;
    }
    for i in j + 1..rows {
        let vi = w[i * n + j];
        for (x, &y) in c[i * ld + c0..(i + 1) * ld].iter_mut().zip(wv.iter()) {
            *x += vi * y;
        }
    }
}

/// LAPACK `geqr2` on the row-major `m x n` block `w`: `R` in the upper triangle, the
/// reflectors' vectors below the diagonal, their `τ` in `tau` (`min(m, n)` entries);
/// `wv`: `n` scratch entries.
fn geqr2<T: QrElem>(w: &mut [T], m: usize, n: usize, tau: &mut [T], wv: &mut [T]) {
    let k = m.min(n);
    for j in 0..k {
        let alpha = w[j * n + j];
        let xnorm = hh::norm2((j + 1..m).map(|i| w[i * n + j]));
        let (beta, t) = hh::larfg(alpha, xnorm, |f| {
            for i in j + 1..m {
                w[i * n + j] *= f;
            }
            hh::norm2((j + 1..m).map(|i| w[i * n + j]))
        });
        tau[j] = t;
        if t == T::ZERO {
            continue;
        }
        w[j * n + j] = beta;
        if j + 1 < n {
            apply_in_place(w, n, m, j, tau[j], wv);
        }
    }
}

/// [`apply_reflector`] of reflector `j` (stored in column `j` of `w`) to `w`'s own
/// columns `j + 1..`.
fn apply_in_place<T: QrElem>(w: &mut [T], n: usize, m: usize, j: usize, tau: T, wv: &mut [T]) {
    let c0 = j + 1;
    let wv = &mut wv[c0..n];
    wv.copy_from_slice(&w[j * n + c0..(j + 1) * n]);
    for i in j + 1..m {
        let row = &w[i * n..(i + 1) * n];
        let vi = row[j];
        for (x, &y) in wv.iter_mut().zip(&row[c0..]) {
            *x += vi * y;
        }
    }
    for x in wv.iter_mut() {
        *x = -(*x * tau);
    }
    for (x, &y) in w[j * n + c0..(j + 1) * n].iter_mut().zip(wv.iter()) {
        *x += y;
    }
    for i in j + 1..m {
        let row = &mut w[i * n..(i + 1) * n];
        let vi = row[j];
        for (x, &y) in row[c0..].iter_mut().zip(wv.iter()) {
            *x += vi * y;
        }
    }
}

/// LAPACK `org2r`: the first `kq` columns of `H₀ H₁ … H_{k−1}` into the row-major `m x kq`
/// block `q`, from the reflectors stored in the row-major `w` (`n` columns) and `tau`.
fn org2r<T: QrElem>(w: &[T], n: usize, tau: &[T], q: &mut [T], kq: usize, wv: &mut [T]) {
    let m = q.len() / kq.max(1);
    q.fill(T::ZERO);
    for c in 0..kq.min(m) {
        q[c * kq + c] = T::ONE;
    }
    for j in (0..tau.len()).rev() {
        if tau[j] != T::ZERO {
            // columns < j of q are unit vectors above row j: untouched
            apply_reflector(w, n, j, tau[j], q, kq, j, wv);
        }
    }
}

/// Scratch reused across the matrices of one task.
struct Scratch<T> {
    w: Vec<T>,
    tau: Vec<T>,
    tmp: Vec<T>,
    wv: Vec<T>,
    hh: hh::Scratch<T>,
}

impl<T> Scratch<T> {
    fn new() -> Self {
        Scratch {
            w: Vec::new(),
            tau: Vec::new(),
            tmp: Vec::new(),
            wv: Vec::new(),
            hh: hh::Scratch::default(),
        }
    }
}

/// Factorises matrix `i` of `ba` into `q` (column-major `m x kq`, or empty) and `r`
/// (column-major `kr x n`, zeros below the diagonal).
fn one<T: QrElem>(
    a: &[T],
    ba: &Batch,
    i: usize,
    q: &mut [T],
    r: &mut [T],
    kr: usize,
    s: &mut Scratch<T>,
    parts: usize,
) {
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    s.w.clear();
    s.w.resize(m * n, T::ZERO);
    let small = k <= SMALL_K || m * n <= SMALL_MN;
    if small {
        // row-major: A's transpose loaded column-major
        load_colmajor(a, ba.offset(i), n, m, ba.cs, ba.rs, &mut s.w);
        s.tau.clear();
        s.tau.resize(k, T::ZERO);
        let kq = q.len() / m;
        s.wv.clear();
        s.wv.resize(n.max(kq), T::ZERO);
        geqr2(&mut s.w, m, n, &mut s.tau, &mut s.wv);
        if !q.is_empty() {
            // Q row-major in tmp, then column-major into q
            s.tmp.clear();
            s.tmp.resize(m * kq, T::ZERO);
            org2r(&s.w, n, &s.tau, &mut s.tmp, kq, &mut s.wv);
            for (c, col) in q.chunks_exact_mut(m).enumerate() {
                for (row, x) in col.iter_mut().enumerate() {
                    *x = s.tmp[row * kq + c];
                }
            }
        }
    } else {
        ba.load(a, i, &mut s.w);
        s.tau.clear();
        s.tau.resize(k, T::ZERO);
        let nb = hh::block_size(k);
        hh::geqrf(&mut s.w, m, n, &mut s.tau, nb, parts, &mut s.hh);
        if !q.is_empty() {
            hh::orgqr(&s.w, m, &s.tau, q, parts, &mut s.hh);
        }
    }
    // R: the upper triangle of the first kr rows (rows beyond k are zero)
    for (c, col) in r.chunks_exact_mut(kr.max(1)).enumerate().take(n) {
        for (row, x) in col.iter_mut().enumerate() {
            let v = if small { s.w[row * n + c] } else { s.w[c * m + row] };
            *x = if row <= c && row < k { v } else { T::ZERO };
        }
    }
}

/// A factor's buffer and layout.
type Factor<T> = (Vec<T>, Layout);

/// One lane group's value: entry `l` belongs to matrix `l` of the group.
type V<T> = [T; LANES];

/// `a b + c` in every lane (one rounding).
#[inline(always)]
fn fma<T: QrElem>(a: V<T>, b: V<T>, c: V<T>) -> V<T> {
    std::array::from_fn(|l| a[l].mul_add(b[l], c[l]))
}

/// `c − a b` in every lane (one rounding).
#[inline(always)]
fn fnma<T: QrElem>(a: V<T>, b: V<T>, c: V<T>) -> V<T> {
    std::array::from_fn(|l| (-a[l]).mul_add(b[l], c[l]))
}

/// [`reflect`] on the `W` columns `c..c + W` of `buf`: `wᵀ = bufⱼ + Σᵢ vᵢ bufᵢ` summed in
/// registers (`W` independent chains), then `bufⱼ −= τ w`, `bufᵢ −= τ vᵢ w`.
#[inline(always)]
fn reflect_block<T: QrElem, const W: usize>(
    buf: &mut [V<T>],
    n: usize,
    j: usize,
    v: &[V<T>],
    tau: V<T>,
    c: usize,
) {
    let mut acc: [V<T>; W] = std::array::from_fn(|t| buf[j * n + c + t]);
    for i in j + 1..n {
        let vi = v[i];
        for t in 0..W {
            acc[t] = fma(vi, buf[i * n + c + t], acc[t]);
        }
    }
    for t in 0..W {
        acc[t] = std::array::from_fn(|l| -(acc[t][l] * tau[l]));
        let x = &mut buf[j * n + c + t];
        *x = std::array::from_fn(|l| x[l] + acc[t][l]);
    }
    for i in j + 1..n {
        let vi = v[i];
        for t in 0..W {
            let x = &mut buf[i * n + c + t];
            *x = fma(vi, acc[t], *x);
        }
    }
}

/// Applies `H = I − τ v vᵀ` (`vⱼ = 1`, `vᵢ = v[i]` for `i > j`) from the left to rows
/// `j..n` and columns `c0..n` of the row-major lanes `buf` (`n` columns), four columns at
/// a time.
#[inline(always)]
fn reflect<T: QrElem>(buf: &mut [V<T>], n: usize, j: usize, v: &[V<T>], tau: V<T>, c0: usize) {
    let mut c = c0;
    while c + 4 <= n {
        reflect_block::<T, 4>(buf, n, j, v, tau, c);
        c += 4;
    }
    by_order!(n - c; 3 2 1 => |W| reflect_block::<T, W>(buf, n, j, v, tau, c), _ => {});
}

/// `geqr2` and `org2r` on [`LANES`] square `n x n` matrices `first..` of `ba` at once: the
/// same reflectors as the row-major loop of [`one`], applied a few columns at a time with
/// fused multiply-adds (so the same results to rounding), into `q` and `r` (row-major,
/// `n x n` each, `LANES` of them; `q` empty if not wanted). Returns which lanes are done:
/// a lane whose column norms need scaling (or are zero, or not finite) is not, and is
/// redone by [`one`].
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn qr_lanes_n<T: QrElem, S: pulp::Simd>(
    simd: S,
    ba: &Batch,
    a: &[T],
    first: usize,
    q: &mut [T],
    r: &mut [T],
    w: &mut [[T; LANES]],
    qb: &mut [[T; LANES]],
    n: usize,
) -> [bool; LANES] {
    // row-major lanes: the column-major load of the transposes
    load_lanes(simd, w, a, &lane_offsets(ba, first), (ba.cs, ba.rs), n, n);
    let mut ok = [true; LANES];
    let mut taus = [[T::ZERO; LANES]; LANES_MAX];
    let mut v = [[T::ZERO; LANES]; LANES_MAX];
    // the last column has no reflector (τ = 0)
    for j in 0..n.saturating_sub(1) {
        let mut s = [T::ZERO; LANES];
        for i in j + 1..n {
            let x = w[i * n + j];
            s = fma(x, x, s);
        }
        let mut tau = [T::ZERO; LANES];
        let mut inv = [T::ZERO; LANES];
        let mut beta = [T::ZERO; LANES];
        for l in 0..LANES {
            let alpha = w[j * n + j][l];
            let ss = alpha.mul_add(alpha, s[l]);
            ok[l] &= s[l].is_finite()
                && s[l] >= T::MIN_POSITIVE
                && ss.is_finite()
                && ss >= T::MIN_POSITIVE;
            let b = -ss.sqrt().copysign(alpha);
            beta[l] = b;
            tau[l] = (b - alpha) / b;
            inv[l] = T::ONE / (alpha - b);
        }
        taus[j] = tau;
        for i in j + 1..n {
            let x = w[i * n + j];
            let y = std::array::from_fn(|l| x[l] * inv[l]);
            w[i * n + j] = y;
            v[i] = y;
        }
        w[j * n + j] = beta;
        reflect(w, n, j, &v, tau, j + 1);
    }
    let size = n * n;
    if !q.is_empty() {
        // org2r: H₀ … H_{n−2} applied to I, the last reflector first (columns < j of the
        // partial product are still unit vectors above row j: untouched)
        for x in qb.iter_mut() {
            *x = [T::ZERO; LANES];
        }
        for c in 0..n {
            qb[c * n + c] = [T::ONE; LANES];
        }
        for j in (0..n.saturating_sub(1)).rev() {
            for i in j + 1..n {
                v[i] = w[i * n + j];
            }
            reflect(qb, n, j, &v, taus[j], j);
        }
        for (l, d) in q.chunks_exact_mut(size).enumerate() {
            if ok[l] {
                for (d, x) in d.iter_mut().zip(&*qb) {
                    *d = x[l];
                }
            }
        }
    }
    for (l, d) in r.chunks_exact_mut(size).enumerate() {
        if ok[l] {
            for i in 0..n {
                for c in 0..n {
                    d[i * n + c] = if i <= c { w[i * n + c][l] } else { T::ZERO };
                }
            }
        }
    }
    ok
}

/// [`qr_lanes_n`] with the order a constant (unrolled loops).
#[allow(clippy::too_many_arguments)]
fn qr_lanes<T: QrElem>(
    ba: &Batch,
    a: &[T],
    first: usize,
    q: &mut [T],
    r: &mut [T],
    w: &mut [[T; LANES]],
    qb: &mut [[T; LANES]],
) -> [bool; LANES] {
    struct Kernel<'a, T, const N: usize> {
        ba: &'a Batch,
        a: &'a [T],
        first: usize,
        q: &'a mut [T],
        r: &'a mut [T],
        w: &'a mut [[T; LANES]],
        qb: &'a mut [[T; LANES]],
    }
    impl<T: QrElem, const N: usize> pulp::WithSimd for Kernel<'_, T, N> {
        type Output = [bool; LANES];
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) -> [bool; LANES] {
            let Kernel { ba, a, first, q, r, w, qb } = self;
            let n = if N > 0 { N } else { ba.n };
            qr_lanes_n(simd, ba, a, first, q, r, &mut w[..n * n], &mut qb[..n * n], n)
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), ba.n;
        1 2 3 4 8 16 => |N| Kernel::<T, N> { ba, a, first, q, r, w, qb },
        _ => Kernel::<T, 0> { ba, a, first, q, r, w, qb })
}

/// [`one`] into row-major `q` and `r` (square `n x n` matrices), through column-major
/// scratch.
fn one_rows<T: QrElem>(
    a: &[T],
    ba: &Batch,
    i: usize,
    q: &mut [T],
    r: &mut [T],
    s: &mut Scratch<T>,
    cm: &mut [Vec<T>; 2],
) {
    let n = ba.n;
    let [qc, rc] = cm;
    qc.clear();
    qc.resize(q.len(), T::ZERO);
    rc.clear();
    rc.resize(n * n, T::ZERO);
    one(a, ba, i, qc, rc, n, s, 1);
    for c in 0..n {
        for row in 0..n {
            r[row * n + c] = rc[c * n + row];
            if !q.is_empty() {
                q[row * n + c] = qc[c * n + row];
            }
        }
    }
}

/// The batched square case up to [`LANES_MAX`]: groups of [`LANES`] matrices through
/// [`qr_lanes`], the rest (and the lanes it leaves) through [`one`]. Row-major factors.
fn qr_small_rows<T: QrElem>(a: &[T], ba: &Batch, want_q: bool) -> (Vec<T>, Vec<T>) {
    use crate::backend::cpu::pool;
    let n = ba.n;
    let size = n * n;
    let nb = ba.len();
    // every entry is written (by the lane kernel or, for the lanes it leaves, by `one`)
    let mut qv = pool::overwritten(if want_q { nb * size } else { 0 }, T::ZERO);
    let mut rv = pool::overwritten(nb * size, T::ZERO);
    let run = |start: usize, qc: &mut [T], rc: &mut [T]| {
        let mut s = Scratch::new();
        let mut cm: [Vec<T>; 2] = Default::default();
        let groups = rc.len() / (size * LANES);
        let qstep = if want_q { size } else { 0 };
        T::with_lanes(2 * size, |buf| {
            let (w, qb) = buf.split_at_mut(size);
            for g in 0..groups {
                let first = start + g * LANES;
                let qg = &mut qc[g * LANES * qstep..(g + 1) * LANES * qstep];
                let rg = &mut rc[g * LANES * size..(g + 1) * LANES * size];
                let ok = qr_lanes(ba, a, first, qg, rg, w, qb);
                for (l, &done) in ok.iter().enumerate() {
                    if !done {
                        let q = &mut qg[l * qstep..(l + 1) * qstep];
                        let r = &mut rg[l * size..(l + 1) * size];
                        one_rows(a, ba, first + l, q, r, &mut s, &mut cm);
                    }
                }
            }
        });
        for j in groups * LANES..rc.len() / size {
            let q = &mut qc[j * qstep..(j + 1) * qstep];
            let r = &mut rc[j * size..(j + 1) * size];
            one_rows(a, ba, start + j, q, r, &mut s, &mut cm);
        }
    };
    let work = size * n;
    if nb * work >= 2 * TASK_WORK {
        // whole groups of LANES per task, at least four tasks per thread
        let even = nb.div_ceil(4 * rayon::current_num_threads());
        let per = (TASK_WORK / work).min(even).max(1).next_multiple_of(LANES);
        if want_q {
            let (pq, pr) = (Parts::new(&mut qv, size * per), Parts::new(&mut rv, size * per));
            run_tasks(pr.len(), |t| run(t * per, pq.take(t), pr.take(t)));
        } else {
            for_each_chunk(&mut rv, size * per, |t, rc| run(t * per, &mut [], rc));
        }
    } else {
        run(0, &mut qv, &mut rv);
    }
    (qv, rv)
}

/// QR of each matrix of `a: (*, m, n)`. Returns `Q` (`(*, m, k)`, or `(*, m, m)` with
/// `spec.complete`; `None` without `spec.want_q`) and `R` (`(*, k, n)`, or `(*, m, n)`
/// with `spec.complete`), `k = min(m, n)`: row-major for batches of small square
/// matrices (contiguous, for the elementwise ops that usually follow), else column-major.
pub(crate) fn qr<T: QrElem>(a: &[T], al: &Layout, spec: QrSpec) -> (Option<Factor<T>>, Factor<T>) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    if m == n && (1..=LANES_MAX).contains(&n) && ba.len() >= LANES {
        let (qv, rv) = qr_small_rows(a, &ba, spec.want_q);
        let mut dims = ba.dims.clone();
        dims.extend([n, n]);
        let layout = Layout::contiguous(crate::shape::Shape::new(dims));
        return (spec.want_q.then(|| (qv, layout.clone())), (rv, layout));
    }
    let k = m.min(n);
    let (kq, kr) = if spec.complete { (m, m) } else { (k, k) };
    let (qsize, rsize) = (if spec.want_q { m * kq } else { 0 }, kr * n);
    let nb = ba.len();
    let mut qv = crate::backend::cpu::pool::filled(nb * qsize, T::ZERO);
    let mut rv = crate::backend::cpu::pool::filled(nb * rsize, T::ZERO);
    let q_layout = colmajor_layout(&ba.dims, m, kq);
    let r_layout = colmajor_layout(&ba.dims, kr, n);
    let q_out = |qv: Vec<T>| spec.want_q.then_some((qv, q_layout.clone()));
    if k == 0 {
        // nothing to factorise: Q is the identity, R is empty or zero
        for q in qv.chunks_exact_mut(qsize.max(1)) {
            for c in 0..kq {
                q[c * m + c] = T::ONE;
            }
        }
        return (q_out(qv), (rv, r_layout));
    }
    let work = m * n * k;
    if nb > 1 && work < PAR_WORK && nb * work >= 2 * TASK_WORK {
        let per = (TASK_WORK / work.max(1)).max(1);
        let run = |t: usize, qc: Option<&mut [T]>, rc: &mut [T]| {
            let mut s = Scratch::new();
            let mut qc = qc;
            for (j, r) in rc.chunks_exact_mut(rsize).enumerate() {
                let q = match qc.as_deref_mut() {
                    Some(qc) => &mut qc[j * qsize..(j + 1) * qsize],
                    None => &mut [],
                };
                one(a, &ba, t * per + j, q, r, kr, &mut s, 1);
            }
        };
        if spec.want_q {
            let (pq, pr) = (Parts::new(&mut qv, qsize * per), Parts::new(&mut rv, rsize * per));
            run_tasks(pr.len(), |t| run(t, Some(pq.take(t)), pr.take(t)));
        } else {
            for_each_chunk(&mut rv, rsize * per, |t, rc| run(t, None, rc));
        }
    } else {
        // a large matrix on every thread, by column ranges (run_tasks, from the caller)
        let parts = if k >= PAR_K || work >= PAR_WORK { rayon::current_num_threads() } else { 1 };
        let mut s = Scratch::new();
        for i in 0..nb {
            let q = if spec.want_q { &mut qv[i * qsize..(i + 1) * qsize] } else { &mut [] };
            one(a, &ba, i, q, &mut rv[i * rsize..(i + 1) * rsize], kr, &mut s, parts);
        }
    }
    (q_out(qv), (rv, r_layout))
}

/// One operand of [`qr_backward`]: its data and batch (`None`: a zero cotangent).
type Operand<'a, T> = Option<(&'a [T], &'a Batch)>;

/// Loads matrix `idx[l]` of `x` (square `n x n`) into lane `l` of `dst` (row-major: the
/// column-major [`load_lanes`] of the transposes), or zeros without `x`.
#[inline(always)]
fn load_operand<T: QrElem, S: pulp::Simd>(
    simd: S,
    x: Operand<'_, T>,
    idx: &[usize; LANES],
    dst: &mut [[T; LANES]],
    n: usize,
) {
    match x {
        None => dst.iter_mut().for_each(|v| *v = [T::ZERO; LANES]),
        Some((d, b)) => load_lanes(simd, dst, d, &idx.map(|i| b.offset(i)), (b.cs, b.rs), n, n),
    }
}

/// Rows `i0..i0 + W` of column `j` of `M = gR Rᵀ − Qᵀ gQ` (row-major lanes), mirrored
/// into row `j`: `M[i, j] = Σ_{k ≥ j} gR[i, k] R[j, k] − Σ_p Q[p, i] gQ[p, j]`, `W`
/// independent sums.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn m_block<T: QrElem, const W: usize>(
    q: &[V<T>],
    r: &[V<T>],
    gq: &[V<T>],
    gr: &[V<T>],
    mm: &mut [V<T>],
    n: usize,
    j: usize,
    i0: usize,
) {
    let mut acc = [[T::ZERO; LANES]; W];
    for k in j..n {
        let b = r[j * n + k];
        for t in 0..W {
            acc[t] = fma(gr[(i0 + t) * n + k], b, acc[t]);
        }
    }
    for p in 0..n {
        let b = gq[p * n + j];
        for t in 0..W {
            acc[t] = fnma(q[p * n + i0 + t], b, acc[t]);
        }
    }
    for t in 0..W {
        mm[(i0 + t) * n + j] = acc[t];
        mm[j * n + i0 + t] = acc[t];
    }
}

/// Columns `j0..j0 + W` of row `p` of `B = gQ + Q S` into `gq` (`S` symmetric, all of it
/// in `mm`): `B[p, j] = gQ[p, j] + Σ_i Q[p, i] S[i, j]`.
#[inline(always)]
fn b_block<T: QrElem, const W: usize>(
    q: &[V<T>],
    mm: &[V<T>],
    gq: &mut [V<T>],
    n: usize,
    p: usize,
    j0: usize,
) {
    let mut acc: [V<T>; W] = std::array::from_fn(|t| gq[p * n + j0 + t]);
    for i in 0..n {
        let a = q[p * n + i];
        for t in 0..W {
            acc[t] = fma(a, mm[i * n + j0 + t], acc[t]);
        }
    }
    for t in 0..W {
        gq[p * n + j0 + t] = acc[t];
    }
}

/// Rows `p0..p0 + W` of `X Rᵀ = B` (`B` in `x`, overwritten by `X`), by back substitution:
/// `X[p, j] = (B[p, j] − Σ_{k > j} R[j, k] X[p, k]) / R[j, j]` (`d[j] = 1 / R[j, j]`).
#[inline(always)]
fn solve_block<T: QrElem, const W: usize>(
    r: &[V<T>],
    d: &[V<T>],
    x: &mut [V<T>],
    n: usize,
    p0: usize,
) {
    for j in (0..n).rev() {
        let mut acc: [V<T>; W] = std::array::from_fn(|t| x[(p0 + t) * n + j]);
        for k in j + 1..n {
            let b = r[j * n + k];
            for t in 0..W {
                acc[t] = fnma(x[(p0 + t) * n + k], b, acc[t]);
            }
        }
        for t in 0..W {
            x[(p0 + t) * n + j] = std::array::from_fn(|l| acc[t][l] * d[j][l]);
        }
    }
}

/// Calls `$f::<W>($args.., at)` over `at = start..end` in blocks of four, then the rest.
macro_rules! blocks {
    ($f:ident, $start:expr, $end:expr, ($($arg:expr),*)) => {{
        let (mut at, end) = ($start, $end);
        while at + 4 <= end {
            $f::<T, 4>($($arg,)* at);
            at += 4;
        }
        by_order!(end - at; 3 2 1 => |W| $f::<T, W>($($arg,)* at), _ => {});
    }};
}

/// [`qr_backward`]'s formula on [`LANES`] square `n x n` factorisations at once (lanes
/// `idx`), into the third `n x n` block of `buf` (row-major lanes; the other four hold the
/// other operands and `M`). Each step sums a
/// few entries at a time in registers (independent chains of fused multiply-adds).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn backward_lanes_n<T: QrElem, S: pulp::Simd>(
    simd: S,
    ops: [Operand<'_, T>; 4],
    idx: &[usize; LANES],
    buf: &mut [[T; LANES]],
    n: usize,
) {
    // five n x n blocks: the operands (the result in gq's) and M
    let size = n * n;
    let (q, rest) = buf[..5 * size].split_at_mut(size);
    let (r, rest) = rest.split_at_mut(size);
    let (gq, rest) = rest.split_at_mut(size);
    let (gr, mm) = rest.split_at_mut(size);
    load_operand(simd, ops[0], idx, q, n);
    load_operand(simd, ops[1], idx, r, n);
    load_operand(simd, ops[2], idx, gq, n);
    load_operand(simd, ops[3], idx, gr, n);
    // M = gR Rᵀ − Qᵀ gQ, its upper triangle (rows 0..=j of column j), mirrored: S = Φ*(M)
    for j in 0..n {
        blocks!(m_block, 0, j + 1, (q, r, gq, gr, mm, n, j));
    }
    // B = gQ + Q S, into gq
    for p in 0..n {
        blocks!(b_block, 0, n, (q, mm, gq, n, p));
    }
    // X Rᵀ = B, into gq
    let mut d = [[T::ZERO; LANES]; LANES_MAX];
    for j in 0..n {
        d[j] = std::array::from_fn(|l| T::ONE / r[j * n + j][l]);
    }
    blocks!(solve_block, 0, n, (r, &d, gq, n));
}

/// [`backward_lanes_n`] with the order a constant (unrolled loops).
fn backward_lanes<T: QrElem>(
    ops: [Operand<'_, T>; 4],
    idx: &[usize; LANES],
    buf: &mut [[T; LANES]],
    n: usize,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        ops: [Operand<'b, T>; 4],
        idx: &'a [usize; LANES],
        buf: &'a mut [[T; LANES]],
        n: usize,
    }
    impl<T: QrElem, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            let n = if N > 0 { N } else { self.n };
            backward_lanes_n(simd, self.ops, self.idx, self.buf, n);
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        1 2 3 4 8 16 => |N| Kernel::<T, N> { ops, idx, buf, n },
        _ => Kernel::<T, 0> { ops, idx, buf, n });
}

/// [`qr_backward`] for batches of square matrices up to [`LANES_MAX`]: [`LANES`] at a
/// time (the last group padded with repeats), row-major results.
fn qr_backward_small<T: QrElem>(ops: [Operand<'_, T>; 4], nb: usize, n: usize) -> Vec<T> {
    let size = n * n;
    // every entry is written (the last group's repeats are not copied out)
    let mut out = crate::backend::cpu::pool::overwritten(nb * size, T::ZERO);
    let run = |start: usize, chunk: &mut [T]| {
        let count = chunk.len() / size;
        T::with_lanes(5 * size, |buf| {
            for g in (0..count).step_by(LANES) {
                let idx: [usize; LANES] = std::array::from_fn(|l| start + (g + l).min(count - 1));
                backward_lanes(ops, &idx, buf, n);
                for l in 0..LANES.min(count - g) {
                    let d = &mut chunk[(g + l) * size..(g + l + 1) * size];
                    for (d, x) in d.iter_mut().zip(&buf[2 * size..3 * size]) {
                        *d = x[l];
                    }
                }
            }
        });
    };
    let work = size * n;
    if nb * work >= 2 * TASK_WORK {
        let even = nb.div_ceil(4 * rayon::current_num_threads());
        let per = (TASK_WORK / work).min(even).max(1).next_multiple_of(LANES);
        for_each_chunk(&mut out, size * per, |t, c| run(t * per, c));
    } else {
        run(0, &mut out);
    }
    out
}

/// From this order on, [`qr_backward`] runs on faer's sequential products and triangular
/// solve ([`backward_blocked`]) instead of its own loops.
const BLOCKED_N: usize = 32;
/// Column blocks of [`backward_blocked`]: its products are cut on this grid (which
/// depends on the order only, so the bits do not depend on the number of threads).
const GRID: usize = 64;
/// From this order on, one matrix's [`backward_blocked`] is split across threads.
const SPLIT_N: usize = 128;

/// Cuts `0..units` (a multiple of `grid` apart, the last at `units`) into at most `parts`
/// contiguous ranges of about equal `cost` (of each grid block's first unit); returns the
/// inner cut points, increasing, none at 0 or `units`.
fn grid_cuts(units: usize, grid: usize, parts: usize, cost: impl Fn(usize) -> f64) -> Vec<usize> {
    let starts: Vec<usize> = (0..units).step_by(grid).collect();
    let costs: Vec<f64> = starts.iter().map(|&b| cost(b)).collect();
    let total: f64 = costs.iter().sum();
    let mut cuts = Vec::new();
    let mut acc = 0.0;
    for (i, &c) in costs.iter().enumerate() {
        acc += c;
        let want = (cuts.len() + 1) as f64 * total / parts as f64;
        if i + 1 < costs.len() && cuts.len() + 1 < parts && acc >= want {
            cuts.push(starts[i + 1]);
        }
    }
    cuts
}

/// `src` (`r x c`, any strides) transposed into `dst`, column-major `c x r` (`src`
/// row-major): a row-major source row by row, a column-major one eight rows at a time,
/// column by column (one cache line of each column, eight rows of `dst` in flight).
fn transpose_into<T: Copy>(src: MatRef<'_, T>, dst: &mut [T]) {
    const TILE: usize = 8;
    let (r, c) = (src.nrows(), src.ncols());
    debug_assert_eq!(dst.len(), r * c);
    if r == 0 || c == 0 {
        return;
    }
    if let Some(rows) = src.try_as_row_major() {
        for (i, d) in dst.chunks_exact_mut(c).enumerate() {
            d.copy_from_slice(rows.row(i).try_as_row_major().map_or(&[][..], |x| x.as_slice()));
        }
    } else if let Some(cols) = src.try_as_col_major() {
        for i0 in (0..r).step_by(TILE) {
            let i1 = (i0 + TILE).min(r);
            for j in 0..c {
                let col = &cols.col(j).try_as_col_major().map_or(&[][..], |x| x.as_slice())[i0..i1];
                for (k, &x) in col.iter().enumerate() {
                    dst[(i0 + k) * c + j] = x;
                }
            }
        }
    } else {
        for i in 0..r {
            for j in 0..c {
                dst[i * c + j] = src[(i, j)];
            }
        }
    }
}

/// A column-major view of `x` (`r x c`): itself when its rows are contiguous, else a
/// copy into `tmp`.
fn colmajor_of<'a, T: pool::Pooled>(x: MatRef<'a, T>, tmp: &'a mut Vec<T>) -> MatRef<'a, T> {
    if x.row_stride() == 1 || x.nrows() <= 1 {
        return x;
    }
    *tmp = pool::overwritten(x.nrows() * x.ncols(), x[(0, 0)]);
    transpose_into(x.transpose(), tmp);
    MatRef::from_column_major_slice(tmp.as_slice(), x.nrows(), x.ncols())
}

/// The VJP of one tall or square QR (`m >= n`, `n` above [`BLOCKED_N`]) by faer's
/// sequential kernels: `gA = (gQ + Q S) R⁻ᵀ`, `S = Φ*(M)`, `M = gR Rᵀ − Qᵀ gQ` (see
/// [`qr_backward`]), written into `xt` as `gAᵀ` column-major (`gA` row-major), on up to
/// `parts` threads.
///
/// Only `M`'s upper triangle is needed: column block `[b0, b1)` of it is
/// `−Q[:, ..b1]ᵀ gQ[:, b0..b1] + gR[..b1, b0..] R[b0..b1, b0..]ᵀ` (`R` is upper
/// triangular, so the columns of `gR` left of `b0` meet zeros of `Rᵀ`): about a half and a
/// third of the two full products. `S` mirrors that triangle. Then `gAᵀ = R⁻¹ (gQᵀ + S
/// Qᵀ)`, column by column: each thread takes a range of rows of `gA` (columns of `gAᵀ`),
/// its product and its triangular solve, all column-major.
fn backward_blocked<T: QrElem>(
    q: MatRef<'_, T>,
    r: MatRef<'_, T>,
    gq: Option<MatRef<'_, T>>,
    gr: Option<MatRef<'_, T>>,
    xt: &mut [T],
    parts: usize,
) {
    use faer::linalg::matmul::matmul;
    use faer::linalg::triangular_solve::solve_upper_triangular_in_place;
    use faer::Accum;
    let (m, n) = (q.nrows(), q.ncols());

    // Qᵀ and Rᵀ column-major (Q and R row-major), the others column-major
    let mut qt_buf = pool::overwritten(n * m, T::ZERO);
    transpose_into(q, &mut qt_buf);
    let qt = MatRef::from_column_major_slice(qt_buf.as_slice(), n, m);
    let (mut t_r, mut t_gq, mut t_gr) = (Vec::new(), Vec::new(), Vec::new());
    let r = colmajor_of(r, &mut t_r);
    let gq = gq.map(|g| colmajor_of(g, &mut t_gq));
    let gr = gr.map(|g| colmajor_of(g, &mut t_gr));
    let rt_buf = gr.map(|_| {
        let mut v = pool::overwritten(n * n, T::ZERO);
        transpose_into(r, &mut v);
        v
    });
    let rt = rt_buf.as_deref().map(|v| MatRef::from_column_major_slice(v, n, n));
    // M's upper triangle, column block by column block (every entry is written: the
    // upper triangle here, the lower one by the mirroring below)
    let mut mm = pool::overwritten(n * n, T::ZERO);
    {
        let cost = |b0: usize| {
            let b1 = (b0 + GRID).min(n);
            (b1 * (if gq.is_some() { m } else { 0 } + if gr.is_some() { n - b0 } else { 0 })) as f64
        };
        let cuts = grid_cuts(n, GRID, parts, cost);
        let offs: Vec<usize> = cuts.iter().map(|c| c * n).collect();
        let chunks = Parts::at(&mut mm, &offs);
        let starts: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).collect();
        run_tasks(chunks.len(), |t| {
            let chunk = chunks.take(t);
            let c0 = starts[t];
            let mut dst = MatMut::from_column_major_slice_mut(chunk, n, chunk.len() / n);
            for b0 in (c0..c0 + dst.ncols()).step_by(GRID) {
                let w = GRID.min(n - b0);
                let b1 = b0 + w;
                let mut d = dst.as_mut().submatrix_mut(0, b0 - c0, b1, w);
                let mut accum = Accum::Replace;
                if let Some(gq) = gq {
                    matmul(
                        d.as_mut(),
                        accum,
                        qt.subrows(0, b1),
                        gq.subcols(b0, w),
                        -T::ONE,
                        Par::Seq,
                    );
                    accum = Accum::Add;
                }
                if let (Some(gr), Some(rt)) = (gr, rt) {
                    let k = n - b0;
                    matmul(
                        d.as_mut(),
                        accum,
                        gr.submatrix(0, b0, b1, k),
                        rt.submatrix(b0, b0, k, w),
                        T::ONE,
                        Par::Seq,
                    );
                }
            }
        });
    }
    // S = Φ*(M): the strict lower triangle mirrors the upper one
    const TILE: usize = 32;
    for j0 in (0..n).step_by(TILE) {
        for i0 in (j0..n).step_by(TILE) {
            for j in j0..(j0 + TILE).min(n) {
                for i in i0.max(j + 1)..(i0 + TILE).min(n) {
                    mm[j * n + i] = mm[i * n + j];
                }
            }
        }
    }
    let sm = MatRef::from_column_major_slice(mm.as_slice(), n, n);
    // gAᵀ = R⁻¹ (gQᵀ + S Qᵀ), by ranges of its columns
    let cuts = grid_cuts(m, GRID, parts, |b0| (GRID.min(m - b0)) as f64);
    let offs: Vec<usize> = cuts.iter().map(|c| c * n).collect();
    let chunks = Parts::at(xt, &offs);
    let starts: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).collect();
    run_tasks(chunks.len(), |t| {
        let chunk = chunks.take(t);
        let (p0, len) = (starts[t], chunk.len() / n);
        let accum = match gq {
            Some(gq) => {
                transpose_into(gq.subrows(p0, len), chunk);
                Accum::Add
            }
            None => Accum::Replace,
        };
        let mut x = MatMut::from_column_major_slice_mut(chunk, n, len);
        matmul(x.as_mut(), accum, sm, qt.subcols(p0, len), T::ONE, Par::Seq);
        solve_upper_triangular_in_place(r, x, Par::Seq);
    });
    for v in [qt_buf, mm, t_r, t_gq, t_gr].into_iter().chain(rt_buf) {
        pool::give(v);
    }
}

/// The VJP of a tall or square QR (`m >= n`) without recording, fused per matrix:
/// `gA = (gQ + Q Φ*(gR Rᵀ − Qᵀ gQ)) R⁻ᵀ` with `Φ*(M) = triu(M) + striu(M)ᵀ` (the
/// derivation is at `QrOp::vjp`). `q: (*, m, n)`, `r: (*, n, n)`, cotangents of the same
/// shapes (any strides; `None` is zero). The result is column-major `(*, m, n)` up to
/// order [`BLOCKED_N`], row-major above it and for batches of small square matrices.
pub(crate) fn qr_backward<T: QrElem>(
    q: (&[T], &Layout),
    r: (&[T], &Layout),
    gq: Option<(&[T], &Layout)>,
    gr: Option<(&[T], &Layout)>,
) -> Factor<T> {
    let bq = Batch::of(q.1);
    let br = Batch::of(r.1);
    let bgq = gq.map(|g| Batch::of(g.1));
    let bgr = gr.map(|g| Batch::of(g.1));
    let (m, n) = (bq.m, bq.n);
    let size = m * n;
    if m == n && (1..=LANES_MAX).contains(&n) && bq.len() >= LANES {
        let ops = [
            Some((q.0, &bq)),
            Some((r.0, &br)),
            gq.zip(bgq.as_ref()).map(|((d, _), b)| (d, b)),
            gr.zip(bgr.as_ref()).map(|((d, _), b)| (d, b)),
        ];
        let out = qr_backward_small(ops, bq.len(), n);
        let mut dims = bq.dims.clone();
        dims.extend([n, n]);
        return (out, Layout::contiguous(crate::shape::Shape::new(dims)));
    }
    let mut out = crate::backend::cpu::pool::filled(bq.len() * size, T::ZERO);
    if n > BLOCKED_N && m >= n {
        // row-major results (gAᵀ column-major)
        let mut dims = bq.dims.clone();
        dims.extend([m, n]);
        let layout = Layout::contiguous(crate::shape::Shape::new(dims));
        let one = |i: usize, xt: &mut [T], parts: usize| {
            let (mut t0, mut t1, mut t2, mut t3) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let qm = bq.mat(q.0, i, &mut t0);
            let rm = br.mat(r.0, i, &mut t1);
            let gqm = bgq.as_ref().zip(gq).map(|(b, g)| b.mat(g.0, i, &mut t2));
            let grm = bgr.as_ref().zip(gr).map(|(b, g)| b.mat(g.0, i, &mut t3));
            backward_blocked(qm, rm, gqm, grm, xt, parts);
            for v in [t0, t1, t2, t3] {
                pool::give(v);
            }
        };
        let threads = rayon::current_num_threads();
        if bq.len() >= 2 * threads || n < SPLIT_N {
            for_each_chunk(&mut out, size, |i, xt| one(i, xt, 1));
        } else {
            for (i, xt) in out.chunks_exact_mut(size).enumerate() {
                one(i, xt, threads);
            }
        }
        return (out, layout);
    }
    let layout = colmajor_layout(&bq.dims, m, n);
    if size == 0 {
        return (out, layout);
    }
    let one = |i: usize, ga: &mut [T], s: &mut [Vec<T>; 6]| {
        let [qm, qt, rm, gqm, grm, mm] = s;
        for (v, len) in [
            (&mut *qm, m * n),
            (&mut *qt, m * n),
            (&mut *rm, n * n),
            (&mut *gqm, m * n),
            (&mut *grm, n * n),
            (&mut *mm, n * n),
        ] {
            v.clear();
            v.resize(len, T::ZERO);
        }
        bq.load(q.0, i, qm);
        // Q row-major too (its transpose column-major): rows of Q contiguous
        load_colmajor(q.0, bq.offset(i), n, m, bq.cs, bq.rs, qt);
        br.load(r.0, i, rm);
        if let (Some(b), Some(g)) = (&bgq, gq) {
            b.load(g.0, i, gqm);
        }
        if let (Some(b), Some(g)) = (&bgr, gr) {
            b.load(g.0, i, grm);
        }
        // M = gR Rᵀ − Qᵀ gQ, only its upper triangle (rows 0..=j of column j) is needed:
        //   M[:, j] = Σ_{k >= j} R[j, k] gR[:, k] − Σ_p gQ[p, j] Q[p, :]ᵀ
        // (R is upper triangular), each term a contiguous axpy
        for j in 0..n {
            let col = &mut mm[j * n..j * n + j + 1];
            if gr.is_some() {
                for k in j..n {
                    let rjk = rm[k * n + j];
                    for (x, &y) in col.iter_mut().zip(&grm[k * n..k * n + j + 1]) {
                        *x += rjk * y;
                    }
                }
            }
            if gq.is_some() {
                for p in 0..m {
                    let g = -gqm[j * m + p];
                    for (x, &y) in col.iter_mut().zip(&qt[p * n..p * n + j + 1]) {
                        *x += g * y;
                    }
                }
            }
        }
        // B = Q S + gQ with S = Φ*(M) symmetric (S[i, j] = M[min, max]), into ga
        for j in 0..n {
            let col = &mut ga[j * m..(j + 1) * m];
            col.copy_from_slice(&gqm[j * m..(j + 1) * m]);
            for i in 0..n {
                let sij = if i <= j { mm[j * n + i] } else { mm[i * n + j] };
                for (x, &qv) in col.iter_mut().zip(&qm[i * m..(i + 1) * m]) {
                    *x += qv * sij;
                }
            }
        }
        // X Rᵀ = B: each row x of X solves R xᵀ = bᵀ (back substitution, column-oriented)
        for j in (0..n).rev() {
            let d = T::ONE / rm[j * n + j];
            for p in 0..m {
                ga[j * m + p] *= d;
            }
            for k in 0..j {
                let rkj = rm[j * n + k];
                let (lo, hi) = ga.split_at_mut(j * m);
                for (x, &y) in lo[k * m..(k + 1) * m].iter_mut().zip(&hi[..m]) {
                    *x += -(rkj * y);
                }
            }
        }
    };
    let work = m * n * n;
    if bq.len() > 1 && bq.len() * work >= 2 * TASK_WORK {
        let per = (TASK_WORK / work.max(1)).max(1);
        for_each_chunk(&mut out, size * per, |t, chunk| {
            let mut s: [Vec<T>; 6] = Default::default();
            for (j, ga) in chunk.chunks_exact_mut(size).enumerate() {
                one(t * per + j, ga, &mut s);
            }
        });
    } else {
        let mut s: [Vec<T>; 6] = Default::default();
        for (i, ga) in out.chunks_exact_mut(size).enumerate() {
            one(i, ga, &mut s);
        }
    }
    (out, layout)
}
