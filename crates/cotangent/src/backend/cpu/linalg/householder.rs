//! Householder QR as LAPACK computes it, for matrices past the small kernels of
//! [`qr`](super::qr): `dgeqrf` (blocks of [`block_size`] columns, each panel factorised
//! recursively, the trailing columns updated by the panel's block reflector through two
//! matrix products), `dorgqr` (`Q` formed from the last block to the first) and `dormqr`
//! (`Q` applied to a matrix), with LAPACK's `dlarfg` reflectors ([`larfg`]).
//!
//! Why not faer's QR: it treats a column whose remaining norm is below `16 (m − j) eps`
//! times the column's norm as numerically zero and skips it (no reflector), which on
//! graded and rank-deficient matrices leaves a backward error about a thousand times
//! LAPACK's, and it takes a tail norm below the smallest normal number as zero; LAPACK
//! reflects every column, and rescales a tiny one first.
//!
//! Storage is LAPACK's: column-major, `R` on and above the diagonal, the reflectors'
//! vectors `v` below it (`v₀ = 1` implied), `τ` apart; `H = I − τ v vᵀ`, `Q = H₀ H₁ ⋯`.
//! The block reflector of columns `j₀..j₀ + b` is `I − V T Vᵀ` with `T` upper triangular
//! (`dlarft`), made from `τ` and the Gram matrix `VᵀV` whenever it is needed.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::qr::QrElem;
use crate::backend::cpu::par::{run_tasks, Parts};

/// Panels of at most this many columns are factorised column by column.
const LEAF: usize = 8;
/// Fewest columns of a trailing update per thread.
const PAR_COLS: usize = 32;

/// Columns per block of [`geqrf`] for a matrix with `k = min(m, n)`: narrow blocks
/// below 512 (more of the work in the trailing products, whose small shapes are cheap
/// there), wider ones above (docs/benchmarks.md, 2026-12-06).
pub(crate) fn block_size(k: usize) -> usize {
    if k >= 512 {
        32
    } else {
        16
    }
}

/// `‖x‖₂` without overflow, and without underflow's loss of digits: the plain sum of
/// squares when it lies where every square that matters is a normal number (at least
/// `min positive / eps`: squares that underflow then weigh less than `eps` of it), else
/// the sum over `x` divided by its largest magnitude (LAPACK's `dnrm2` scales likewise).
pub(crate) fn norm2<T: QrElem>(x: impl Iterator<Item = T> + Clone) -> T {
    let s: T = x.clone().map(|v| v * v).sum();
    if s.is_finite() && s >= T::MIN_POSITIVE / T::EPSILON {
        return s.sqrt();
    }
    if s.is_nan() {
        return s;
    }
    let scale = x.clone().fold(T::ZERO, |m, v| if v.abs() > m { v.abs() } else { m });
    if scale == T::ZERO || !scale.is_finite() {
        return scale;
    }
    let s: T = x.map(|v| (v / scale) * (v / scale)).sum();
    scale * s.sqrt()
}

/// `sqrt(x² + y²)` without overflow or underflow (LAPACK's `dlapy2`): the plain form when
/// its square lies in the normal range.
fn lapy2<T: QrElem>(x: T, y: T) -> T {
    let ss = x * x + y * y;
    if ss.is_finite() && ss >= T::MIN_POSITIVE / T::EPSILON {
        ss.sqrt()
    } else {
        x.hypot(y)
    }
}

/// LAPACK's `dlarfg`: the reflector `H = I − τ v vᵀ` (`v₀ = 1`) with
/// `H [alpha; x] = [β; 0]`, `β = −sign(alpha) ‖[alpha; x]‖`. `xnorm = ‖x‖`; `scale_x(f)`
/// multiplies `x` by `f` in place and returns the new `‖x‖` (so `x` becomes `v₁..`).
/// Returns `(β, τ)`; `τ = 0` (`H = I`, `β = alpha`) when `x = 0`. When `|β|` is below
/// `min positive / eps`, `alpha` and `x` are scaled up first (at most 20 times by its
/// inverse, as LAPACK does), so that `1 / (alpha − β)` stays finite and `v` accurate.
pub(crate) fn larfg<T: QrElem>(alpha: T, xnorm: T, mut scale_x: impl FnMut(T) -> T) -> (T, T) {
    if xnorm == T::ZERO {
        return (alpha, T::ZERO);
    }
    let safmin = T::MIN_POSITIVE / T::EPSILON;
    let mut alpha = alpha;
    let mut beta = -lapy2(alpha, xnorm).copysign(alpha);
    let mut knt = 0;
    if beta.abs() < safmin {
        let rsafmn = T::ONE / safmin;
        let mut xn = xnorm;
        while beta.abs() < safmin && knt < 20 {
            knt += 1;
            xn = scale_x(rsafmn);
            beta *= rsafmn;
            alpha *= rsafmn;
        }
        beta = -lapy2(alpha, xn).copysign(alpha);
    }
    let tau = (beta - alpha) / beta;
    scale_x(T::ONE / (alpha - beta));
    for _ in 0..knt {
        beta *= safmin;
    }
    (beta, tau)
}

/// Scratch of the blocked routines, reused across calls.
pub(crate) struct Scratch<T> {
    /// The explicit reflectors `V` of a block (unit diagonal, zeros above).
    v: Vec<T>,
    /// `T` of the block reflector, and the Gram matrix `VᵀV`.
    t: Vec<T>,
    g: Vec<T>,
    /// `W = Vᵀ C` and `op(T) W` of each column range.
    w: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch { v: Vec::new(), t: Vec::new(), g: Vec::new(), w: Vec::new() }
    }
}

/// Factorises the column-major `m x n` matrix `a` in place (LAPACK's `dgeqrf`: `R` on and
/// above the diagonal, the reflectors below, `τ` into `tau`, `min(m, n)` entries), in
/// blocks of `nb` columns; the trailing updates of a large matrix run in column ranges
/// on up to `parts` threads (the result does not depend on their number).
pub(crate) fn geqrf<T: QrElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    tau: &mut [T],
    nb: usize,
    parts: usize,
    sc: &mut Scratch<T>,
) {
    let k = m.min(n);
    debug_assert!(a.len() >= m * n && tau.len() >= k);
    let mut j0 = 0;
    while j0 < k {
        let jb = nb.min(k - j0);
        panel(a, m, j0, jb, &mut tau[j0..j0 + jb], sc);
        if j0 + jb < n {
            let (left, right) = a.split_at_mut((j0 + jb) * m);
            block_reflector(left, m, j0, &tau[j0..j0 + jb], sc);
            apply_block(&mut right[..(n - j0 - jb) * m], m, j0, jb, true, parts, sc);
        }
        j0 += jb;
    }
}

/// `xᵀ y` in four interleaved partial sums (independent chains, which the compiler can
/// keep in vector registers; one running sum is bound by the addition's latency).
fn dot<T: QrElem>(x: &[T], y: &[T]) -> T {
    let mut acc = [T::ZERO; 4];
    let (xc, xr) = x.as_chunks::<4>();
    let (yc, yr) = y[..x.len()].as_chunks::<4>();
    for (a, b) in xc.iter().zip(yc) {
        for k in 0..4 {
            acc[k] += a[k] * b[k];
        }
    }
    let mut tail = T::ZERO;
    for (&a, &b) in xr.iter().zip(yr) {
        tail += a * b;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Factorises the `w` columns from `j0` (rows `j0..m`) of `a`: column by column up to
/// [`LEAF`], else its left half, the left half's block reflector applied to the right
/// half, then the right half (most of the work in matrix products, as LAPACK's recursive
/// `dgeqrt3`).
fn panel<T: QrElem>(
    a: &mut [T],
    m: usize,
    j0: usize,
    w: usize,
    tau: &mut [T],
    sc: &mut Scratch<T>,
) {
    if w <= LEAF {
        for j in j0..j0 + w {
            let (col, rest) = a[j * m..].split_at_mut(m);
            let (head, tail) = col[j..].split_at_mut(1);
            let xnorm = norm2(tail.iter().copied());
            let (beta, t) = larfg(head[0], xnorm, |f| {
                for x in tail.iter_mut() {
                    *x *= f;
                }
                norm2(tail.iter().copied())
            });
            col[j] = beta;
            tau[j - j0] = t;
            if t == T::ZERO {
                continue;
            }
            // H (the rest of the panel): c −= τ v (vᵀ c)
            let v = &col[j + 1..];
            for c in rest.chunks_exact_mut(m).take(j0 + w - j - 1) {
                let f = (c[j] + dot(v, &c[j + 1..])) * t;
                c[j] -= f;
                for (ci, &vi) in c[j + 1..].iter_mut().zip(v) {
                    *ci -= f * vi;
                }
            }
        }
        return;
    }
    let w1 = w / 2;
    panel(a, m, j0, w1, &mut tau[..w1], sc);
    let (left, right) = a.split_at_mut((j0 + w1) * m);
    block_reflector(left, m, j0, &tau[..w1], sc);
    apply_block(&mut right[..(w - w1) * m], m, j0, w1, true, 1, sc);
    panel(a, m, j0 + w1, w - w1, &mut tau[w1..], sc);
}

/// The block reflector of the reflectors stored in columns `j0..j0 + b` of `a`
/// (`b = tau.len()`, rows `j0..m`) into the scratch: `V` explicit (`(m − j0) x b`) and
/// `T` (`b x b`, upper triangular; LAPACK's `dlarft`, forward and columnwise):
/// `T_ii = τ_i`, `T[..i, i] = −τ_i T[..i, ..i] (VᵀV)[..i, i]`.
fn block_reflector<T: QrElem>(a: &[T], m: usize, j0: usize, tau: &[T], sc: &mut Scratch<T>) {
    let b = tau.len();
    let rows = m - j0;
    sc.v.clear();
    sc.v.resize(rows * b, T::ZERO);
    for c in 0..b {
        let src = &a[(j0 + c) * m + j0..(j0 + c + 1) * m];
        let dst = &mut sc.v[c * rows..(c + 1) * rows];
        dst[c] = T::ONE;
        dst[c + 1..].copy_from_slice(&src[c + 1..]);
    }
    sc.g.clear();
    sc.g.resize(b * b, T::ZERO);
    let v = MatRef::from_column_major_slice(&sc.v, rows, b);
    matmul(
        MatMut::from_column_major_slice_mut(&mut sc.g, b, b),
        Accum::Replace,
        v.transpose(),
        v,
        T::ONE,
        Par::Seq,
    );
    sc.t.clear();
    sc.t.resize(b * b, T::ZERO);
    for (i, &ti) in tau.iter().enumerate() {
        sc.t[i * b + i] = ti;
        for r in 0..i {
            let mut acc = T::ZERO;
            for p in r..i {
                acc += sc.t[p * b + r] * sc.g[i * b + p];
            }
            sc.t[i * b + r] = -ti * acc;
        }
    }
}

/// Applies the block reflector in the scratch (`b` reflectors from row `j0`, made by
/// [`block_reflector`]) to rows `j0..m` of the columns `c` (column-major, `m` rows each):
/// `C −= V op(T) (Vᵀ C)`, `op(T) = Tᵀ` when `transpose` (`Hᵀ C`, the factorisation's
/// update) else `T` (`H C`, forming or applying `Q`); in column ranges of at least
/// [`PAR_COLS`] columns on up to `parts` threads.
fn apply_block<T: QrElem>(
    c: &mut [T],
    m: usize,
    j0: usize,
    b: usize,
    transpose: bool,
    parts: usize,
    sc: &mut Scratch<T>,
) {
    let cols = c.len() / m;
    if cols == 0 || b == 0 {
        return;
    }
    let rows = m - j0;
    let tasks = parts.min(cols / PAR_COLS).max(1);
    let per = cols.div_ceil(tasks);
    sc.w.clear();
    sc.w.resize(2 * b * cols, T::ZERO);
    let (v, t) = (&sc.v[..rows * b], &sc.t[..b * b]);
    let one = |c: &mut [T], w: &mut [T]| {
        let nc = c.len() / m;
        let (w, tw) = w[..2 * b * nc].split_at_mut(b * nc);
        let v = MatRef::from_column_major_slice(v, rows, b);
        let t = MatRef::from_column_major_slice(t, b, b);
        let cm = MatRef::from_column_major_slice(&*c, m, nc).subrows(j0, rows);
        let wm = MatMut::from_column_major_slice_mut(&mut *w, b, nc);
        matmul(wm, Accum::Replace, v.transpose(), cm, T::ONE, Par::Seq);
        // op(T) W as a full product (T's zeros included: a matrix product's kernels beat
        // a triangular loop's dependent sums)
        let op_t = if transpose { t.transpose() } else { t };
        let w = MatRef::from_column_major_slice(&*w, b, nc);
        matmul(
            MatMut::from_column_major_slice_mut(&mut *tw, b, nc),
            Accum::Replace,
            op_t,
            w,
            T::ONE,
            Par::Seq,
        );
        let cm = MatMut::from_column_major_slice_mut(c, m, nc).subrows_mut(j0, rows);
        matmul(cm, Accum::Add, v, MatRef::from_column_major_slice(&*tw, b, nc), -T::ONE, Par::Seq);
    };
    if tasks == 1 {
        one(c, &mut sc.w);
    } else {
        let (pc, pw) = (Parts::new(c, per * m), Parts::new(&mut sc.w, 2 * per * b));
        run_tasks(pc.len(), |i| one(pc.take(i), pw.take(i)));
    }
}

/// `C = Q C` for the `m x cols` column-major `c` with `Q = H₀ ⋯ H_{k−1}` from [`geqrf`]'s
/// reflectors (`a`, `m x k` at least, and `tau`, `k` entries), LAPACK's `dormqr`
/// (left, no transpose): the blocks from the last to the first. With `from_block`
/// (`dorgqr`: `c` starts as the identity's first columns), the block from column `j₀`
/// touches only the columns from `j₀` (to their left `C` is still the identity's columns,
/// zero in the block's rows).
pub(crate) fn apply_q<T: QrElem>(
    a: &[T],
    m: usize,
    tau: &[T],
    c: &mut [T],
    from_block: bool,
    parts: usize,
    sc: &mut Scratch<T>,
) {
    let k = tau.len();
    let nb = block_size(k);
    for j0 in (0..k).step_by(nb).rev() {
        let jb = nb.min(k - j0);
        block_reflector(a, m, j0, &tau[j0..j0 + jb], sc);
        let first = if from_block { j0 * m } else { 0 };
        apply_block(&mut c[first..], m, j0, jb, false, parts, sc);
    }
}

/// `Q`'s first `kq` columns (`m x kq`, column-major, into `q`) from [`geqrf`]'s
/// reflectors: LAPACK's `dorgqr`.
pub(crate) fn orgqr<T: QrElem>(
    a: &[T],
    m: usize,
    tau: &[T],
    q: &mut [T],
    parts: usize,
    sc: &mut Scratch<T>,
) {
    let kq = q.len() / m.max(1);
    q.fill(T::ZERO);
    for c in 0..kq.min(m) {
        q[c * m + c] = T::ONE;
    }
    apply_q(a, m, tau, q, true, parts, sc);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A splitmix stream of normal-ish numbers for the tests.
    fn entries(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    /// `‖A − QR‖ / ‖A‖` and `‖QᵀQ − I‖` (max entries) of the factorisation of `a`.
    fn errors(a: &[f64], m: usize, n: usize, parts: usize) -> (f64, f64) {
        let k = m.min(n);
        let mut f = a.to_vec();
        let mut tau = vec![0.0; k];
        let mut sc = Scratch::default();
        geqrf(&mut f, m, n, &mut tau, block_size(k), parts, &mut sc);
        let mut q = vec![0.0; m * k];
        orgqr(&f, m, &tau, &mut q, parts, &mut sc);
        let amax = a.iter().fold(0.0f64, |x, y| x.max(y.abs()));
        let mut back = 0.0f64;
        for j in 0..n {
            for i in 0..m {
                let qr: f64 = (0..=j.min(k - 1)).map(|p| q[p * m + i] * f[j * m + p]).sum();
                back = back.max((qr - a[j * m + i]).abs() / amax);
            }
        }
        let mut orth = 0.0f64;
        for i in 0..k {
            for j in 0..k {
                let d: f64 = (0..m).map(|r| q[i * m + r] * q[j * m + r]).sum();
                orth = orth.max((d - if i == j { 1.0 } else { 0.0 }).abs());
            }
        }
        (back, orth)
    }

    /// Blocked, recursive and threaded: `QR = A` and `QᵀQ = I` to rounding over shapes
    /// that cross the leaf, the block and the thread split, square, tall and wide.
    #[test]
    fn factors_reconstruct() {
        for (m, n) in [
            (1, 1),
            (5, 3),
            (3, 5),
            (9, 9),
            (40, 17),
            (17, 40),
            (70, 70),
            (130, 100),
            (100, 130),
            (300, 300),
        ] {
            let a = entries(m * n, (m * 1000 + n) as u64);
            for parts in [1, 3] {
                let (back, orth) = errors(&a, m, n, parts);
                let tol = 1e-15 * m.max(n) as f64 * 4.0;
                assert!(back < tol && orth < tol, "{m}x{n} parts {parts}: {back:e} {orth:e}");
            }
        }
    }

    /// The same bits on any number of threads.
    #[test]
    fn the_same_bits_on_any_number_of_threads() {
        let (m, n) = (300, 260);
        let a = entries(m * n, 3);
        let run = |parts: usize| {
            let mut f = a.clone();
            let mut tau = vec![0.0; n];
            let mut sc = Scratch::default();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(parts).build().unwrap();
            pool.install(|| geqrf(&mut f, m, n, &mut tau, block_size(n), parts, &mut sc));
            f.iter().chain(&tau).map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert!(run(1) == run(2));
        assert!(run(1) == run(3));
    }

    /// `dlarfg` on a tail whose norm is far below the smallest normal number (f32 and
    /// f64): finite `τ` and `v`, `β` the exact norm, and `H x = β e₀`.
    #[test]
    fn tiny_reflectors_are_rescaled() {
        let x = [3e-39f32, 4e-39];
        let mut tail = [x[1]];
        let (beta, tau) = larfg(x[0], norm2(tail.iter().copied()), |f| {
            tail[0] *= f;
            norm2(tail.iter().copied())
        });
        assert!(tau.is_finite() && tail[0].is_finite(), "{tau} {}", tail[0]);
        assert!((beta + 5e-39).abs() <= 5e-39 * 4.0 * f32::EPSILON, "{beta:e}");
        let x64 = [3e-310f64, 4e-310];
        let mut tail = [x64[1]];
        let (beta, tau) = larfg(x64[0], norm2(tail.iter().copied()), |f| {
            tail[0] *= f;
            norm2(tail.iter().copied())
        });
        assert!(tau.is_finite() && tail[0].is_finite());
        assert!((beta + 5e-310).abs() <= 5e-310 * 1e-3, "{beta:e}");
        // H x = x − τ v (vᵀ x) with v = [1, tail]
        let vx = x64[0] + tail[0] * x64[1];
        let hx1 = x64[1] - tau * tail[0] * vx;
        assert!(hx1.abs() <= 1e-3 * 5e-310, "{hx1:e}");
    }
}
