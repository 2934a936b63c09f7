//! The symmetric eigendecomposition `A = V diag(w) Vᵀ`, batched, reading one triangle.
//!
//! - batches (more than one matrix) of small ones (`2 <= n <= SMALL_N`): the single-matrix
//!   loops run on [`LANES`] matrices at once, one per SIMD lane, lane groups split
//!   over rayon: cyclic Jacobi to `n = ROTATE_N` ([`jacobi_lanes`]), tridiagonal QL above
//!   ([`ql_lanes`]); each matrix gets exactly the bits it gets alone (the same operations;
//!   where the scalar loops branch on a matrix's values, each lane takes its own branch
//!   through selects);
//! - single tiny matrices (`n <= ROTATE_N`): an allocation-free cyclic Jacobi loop
//!   (rotations skip entries negligible relative to their diagonal, Demmel & Veselić's
//!   criterion, or to the largest diagonal entry); with eigenvectors, the eigenvalues
//!   are then the Rayleigh quotients of the final vectors with the original matrix (the
//!   rotated diagonal accumulates a rounding per rotation);
//! - single small ones (`n <= SMALL_N`): Householder tridiagonalisation and the implicit
//!   QL iteration (EISPACK's `tred2` + `tql2`), allocation-free;
//! - larger ones: Householder tridiagonalisation (faer's, or from order 160 our blocked
//!   one, [`super::tridiag_split`]), then on the tridiagonal
//!   ([`super::tridiag_qr`]) the root-free QL iteration for the eigenvalues alone; with
//!   eigenvectors our implicit QR iteration below n = 128, our divide and conquer
//!   ([`super::tridiag_dc`]) from it; then faer's blocked back-transformation; on every
//!   thread from `PAR_N`.
//!
//! The results of a batch do not depend on the thread count (the lane groups are fixed
//! by the batch alone). [`eigh_backward`] is the VJP fused per matrix.
//!
//! Every path then sorts the eigenvalues ascending and apply one sign gauge: each
//! eigenvector's component of largest magnitude (the first one on ties) is made positive.
//! A matrix whose read triangle holds a NaN or an infinity is not decomposed (no loop runs
//! on it): its outputs are NaN, and it is reported as failed (the first such matrix).
//!
//! By stage: here, the batch (which path each matrix takes, the lane groups, the load of
//! one triangle, the sorting and sign gauge); [`two_sided`], the Jacobi loops of tiny
//! matrices; [`ql`], the QL loops of small ones; [`backward`], the fused VJP.

mod backward;
pub(crate) mod inner;
mod ql;
mod two_sided;

use super::lanes::{LaneBits, LANES};
use super::{colmajor_layout, Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::{for_each_chunk, run_tasks, Parts};
use crate::backend::cpu::pool;
use crate::layout::Layout;
pub(crate) use backward::eigh_backward;
use ql::{ql_lanes, tridiagonal_ql};
use two_sided::{jacobi, jacobi_lanes, rayleigh};

/// Up to this order the own allocation-free loops are used; above, the tridiagonal paths
/// of [`super::tridiag_qr`] (on faer's tridiagonalisation).
pub(crate) const SMALL_N: usize = 16;
/// From this order one matrix may use every thread (faer's tridiagonalisation and
/// back-transformation, the divide and conquer's merges).
const PAR_N: usize = 256;

/// Loads the `uplo` triangle of matrix `i` of `b` into the full symmetric column-major
/// `n x n` block `a`; returns false if a read entry is not finite.
fn load_symmetric<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    i: usize,
    upper: bool,
    a: &mut [T],
) -> bool {
    let n = b.n;
    let off = b.offset(i);
    let mut finite = true;
    // (k, j) with k >= j in the lower triangle; (j, k) in the upper
    let mut put = |j: usize, k: usize| {
        let x =
            if upper { data[off + j * b.rs + k * b.cs] } else { data[off + k * b.rs + j * b.cs] };
        finite &= x.is_finite();
        a[j * n + k] = x;
        a[k * n + j] = x;
    };
    for j in 0..n {
        put(j, j);
    }
    // in tiles: one of the reads and one of the writes is strided (a column of a
    // row-major block); element by element down whole columns, an order-1024 load was
    // slow, most of it cache misses
    super::lower_tiles(n, put);
    finite
}

/// Up to this order the Jacobi loop is used; above (to [`SMALL_N`]), Householder
/// tridiagonalisation and the implicit QL iteration ([`tridiagonal_ql`]).
pub(crate) const ROTATE_N: usize = 4;
/// `√(x² + y²)` without overflow or harmful underflow.
pub(crate) fn hypot<T: LinalgElem>(x: T, y: T) -> T {
    let (a, b) = (x.abs(), y.abs());
    let (big, small) = if a > b { (a, b) } else { (b, a) };
    if big == T::ZERO {
        return T::ZERO;
    }
    let r = small / big;
    big * (T::ONE + r * r).sqrt()
}

/// Sorts `w` ascending (stable: equal values keep their order), moving the columns of
/// the column-major `v` along, then applies the sign gauge to each column of `v`.
fn sort_and_gauge<T: LinalgElem>(w: &mut [T], mut v: Option<&mut [T]>) {
    let n = w.len();
    // insertion sort: already sorted (faer) costs n comparisons
    for j in 1..n {
        let mut k = j;
        while k > 0 && w[k - 1] > w[k] {
            w.swap(k - 1, k);
            if let Some(v) = v.as_deref_mut() {
                let (lo, hi) = v.split_at_mut(k * n);
                lo[(k - 1) * n..].swap_with_slice(&mut hi[..n]);
            }
            k -= 1;
        }
    }
    if let Some(v) = v {
        for col in v.chunks_exact_mut(n.max(1)).take(n) {
            gauge(col);
        }
    }
}

/// The sign gauge of one eigenvector: its component of largest magnitude (the first on
/// ties) is made positive.
pub(crate) fn gauge<T: LinalgElem>(col: &mut [T]) {
    let mut best = T::ZERO;
    let mut neg = false;
    for &x in col.iter() {
        if x.abs() > best {
            best = x.abs();
            neg = x < T::ZERO;
        }
    }
    if neg {
        for x in col.iter_mut() {
            *x = -*x;
        }
    }
}

/// Scratch reused across the matrices of one task.
#[derive(Default)]
struct Scratch<T: pool::Pooled> {
    a: Vec<T>,
    a0: Vec<T>,
    e: Vec<T>,
    qr: super::tridiag_qr::Scratch<T>,
}

impl<T: pool::Pooled> Drop for Scratch<T> {
    fn drop(&mut self) {
        // (an order-1024 matrix's 8 MB faulted in anew on every call, slowing eigvalsh)
        pool::give(std::mem::take(&mut self.a));
        pool::give(std::mem::take(&mut self.a0));
    }
}

/// One matrix: eigenvalues into `w`, eigenvectors (column-major) into `v` if given.
fn one<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    i: usize,
    upper: bool,
    w: &mut [T],
    mut v: Option<&mut [T]>,
    s: &mut Scratch<T>,
) {
    let n = b.n;
    if n == 0 {
        return;
    }
    pool::reserve(&mut s.a, n * n);
    s.a.resize(n * n, T::ZERO);
    if !load_symmetric(data, b, i, upper, &mut s.a) {
        w.fill(T::NAN);
        if let Some(v) = v {
            v.fill(T::NAN);
        }
        return;
    }
    if n > SMALL_N {
        if !super::tridiag_qr::eigh_tridiag_qr(&s.a, n, w, v.as_deref_mut(), n >= PAR_N, &mut s.qr)
        {
            w.fill(T::NAN);
            if let Some(v) = v {
                v.fill(T::NAN);
            }
            return;
        }
    } else if n > ROTATE_N {
        s.e.resize(n, T::ZERO);
        if let Some(v) = v.as_deref_mut() {
            tridiagonal_ql(&s.a, n, w, v, &mut s.e);
        } else {
            // the transformations are accumulated anyway (into scratch)
            pool::reserve(&mut s.a0, n * n);
            s.a0.resize(n * n, T::ZERO);
            tridiagonal_ql(&s.a, n, w, &mut s.a0, &mut s.e);
        }
    } else {
        match v.as_deref_mut() {
            Some(v) => {
                s.a0.clear();
                pool::reserve(&mut s.a0, n * n);
                s.a0.extend_from_slice(&s.a);
                let scale = jacobi(&mut s.a, n, w, Some(&mut *v));
                rayleigh(&s.a0, n, scale, w, v);
            }
            None => {
                jacobi(&mut s.a, n, w, None);
            }
        }
    }
    sort_and_gauge(w, v);
}

/// Eigenvalues `(*, n)` (contiguous) and, if `vectors`, eigenvectors `(*, n, n)`
/// (column-major, with their layout) of each symmetric matrix of `a: (*, n, n)`, reading
/// its lower (or, if `upper`, upper) triangle; with the index of the first matrix that
/// could not be decomposed (non-finite input), if any.
#[allow(clippy::type_complexity)]
pub(crate) fn eigh<T: LinalgElem + LaneBits>(
    a: &[T],
    l: &Layout,
    upper: bool,
    vectors: bool,
) -> (Vec<T>, Option<(Vec<T>, Layout)>, Option<usize>) {
    let b = Batch::of(l);
    let n = b.n;
    let count = b.len();
    let lanes = (2..=LANES_MAX_N).contains(&n) && count > 1;
    // the lane kernels write every output entry (the other paths may skip some)
    let buffer = |len: usize| {
        if lanes {
            crate::backend::cpu::pool::overwritten(len, T::ZERO)
        } else {
            crate::backend::cpu::pool::filled(len, T::ZERO)
        }
    };
    let mut w = buffer(count * n);
    let mut v = if vectors { Some(buffer(count * n * n)) } else { None };
    if lanes {
        let work = n * n * n * 8;
        for_each_lane_group(n, work, &mut w, v.as_deref_mut(), |first, len, out, bufs| {
            if n <= ROTATE_N {
                jacobi_lanes(a, &b, first, len, upper, out, bufs);
            } else {
                ql_lanes(a, &b, first, len, upper, out, bufs);
            }
        });
    } else if n > 0 && count > 0 {
        let work = (n * n * n * if n <= SMALL_N { 8 } else { 10 }).max(1);
        let parallel = count > 1 && n < PAR_N && count * work >= 2 * TASK_WORK;
        let per_task = if parallel { (TASK_WORK / work).max(1) } else { count };
        if let Some(v) = v.as_deref_mut() {
            let run = |(t, (wc, vc)): (usize, (&mut [T], &mut [T]))| {
                let mut s = Scratch::default();
                for (j, (wi, vi)) in
                    wc.chunks_exact_mut(n).zip(vc.chunks_exact_mut(n * n)).enumerate()
                {
                    one(a, &b, t * per_task + j, upper, wi, Some(vi), &mut s);
                }
            };
            if parallel {
                let (pw, pv) = (Parts::new(&mut w, n * per_task), Parts::new(v, n * n * per_task));
                run_tasks(pw.len(), |t| run((t, (pw.take(t), pv.take(t)))));
            } else {
                run((0, (&mut w[..], v)));
            }
        } else {
            let run = |(t, wc): (usize, &mut [T])| {
                let mut s = Scratch::default();
                for (j, wi) in wc.chunks_exact_mut(n).enumerate() {
                    one(a, &b, t * per_task + j, upper, wi, None, &mut s);
                }
            };
            if parallel {
                for_each_chunk(&mut w, n * per_task, |t, wc| run((t, wc)));
            } else {
                run((0, &mut w[..]));
            }
        }
    }
    let vl = colmajor_layout(&b.dims, n, n);
    // a failed matrix has NaN eigenvalues; a decomposed one never has
    let failed = w.chunks_exact(n.max(1)).position(|c| c.iter().any(|x| x.is_nan()));
    (w, v.map(|v| (v, vl)), failed)
}

/// Up to this order a batch goes through the lane kernels ([`jacobi_lanes`] to
/// [`ROTATE_N`], [`ql_lanes`] above).
const LANES_MAX_N: usize = SMALL_N;

/// Scratch of the lane kernel: the matrices, their copy and the eigenvectors, per lane.
#[derive(Default)]
struct LaneBufs<T> {
    a: Vec<[T; LANES]>,
    a0: Vec<[T; LANES]>,
    v: Vec<[T; LANES]>,
}

/// The outputs of one lane group: `count * n` eigenvalues and, if wanted, `count * n * n`
/// eigenvector entries (column-major per matrix).
struct LaneOut<'a, T> {
    w: &'a mut [T],
    v: Option<&'a mut [T]>,
}

/// Runs a batch of `count` matrices of order `n` in lane groups: `group(first, len,
/// out, scratch)` on each run of up to [`LANES`] consecutive matrices (`len` of them; the
/// outputs their slices of `w` and `v`), split across rayon tasks (a multiple of
/// [`LANES`] matrices each, independent of the thread count) when there is enough `work`
/// per matrix.
fn for_each_lane_group<T: LinalgElem>(
    n: usize,
    work: usize,
    w: &mut [T],
    v: Option<&mut [T]>,
    group: impl Fn(usize, usize, LaneOut<'_, T>, &mut LaneBufs<T>) + Sync,
) {
    let count = w.len() / n;
    let range = |start: usize, w: &mut [T], mut v: Option<&mut [T]>| {
        let mut bufs = LaneBufs::default();
        for (g, wc) in w.chunks_mut(n * LANES).enumerate() {
            let len = wc.len() / n;
            let vc = v.as_deref_mut().map(|v| &mut v[g * LANES * n * n..][..len * n * n]);
            group(start + g * LANES, len, LaneOut { w: wc, v: vc }, &mut bufs);
        }
    };
    if count * work >= 2 * TASK_WORK {
        let per = (TASK_WORK / work.max(1)).max(1).div_ceil(LANES) * LANES;
        match v {
            Some(v) => {
                let (pw, pv) = (Parts::new(w, n * per), Parts::new(v, n * n * per));
                run_tasks(pw.len(), |t| range(t * per, pw.take(t), Some(pv.take(t))));
            }
            None => for_each_chunk(w, n * per, |t, wc| range(t * per, wc, None)),
        }
    } else {
        range(0, w, v);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A batch of `count` symmetric `n x n` matrices stored with a gap of 3 entries between
    /// matrices, each read through the strides `(rs, cs)` (transposed if `transposed`):
    /// random ones, and among them a zero matrix, a diagonal one with repeated entries,
    /// one with a repeated eigenvalue, tiny and huge ones, one with a zero row and column,
    /// an already tridiagonal one, a rank-one one, and (if `non_finite`) a NaN and an inf
    /// in the triangle read.
    fn batch(
        count: usize,
        n: usize,
        seed: u64,
        transposed: bool,
        non_finite: bool,
    ) -> (Vec<f64>, Layout) {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut rnd = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let stride = n * n + 3;
        let mut data = vec![0.0; count * stride];
        for b in 0..count {
            let mut m = symmetric(n, b % 11, &mut rnd);
            match b % 11 {
                9 if non_finite => m[n * n - 1] = f64::NAN,
                10 if non_finite => m[n] = f64::INFINITY,
                _ => {}
            }
            data[b * stride..b * stride + n * n].copy_from_slice(&m);
        }
        let (rs, cs) = if transposed { (1, n) } else { (n, 1) };
        (data, Layout::new(vec![count, n, n].into(), vec![stride, rs, cs], 0))
    }

    /// A symmetric `n x n` matrix (row-major, so also column-major) of kind `kind`, its
    /// entries from `rnd`: random (any kind not below), 1 zero, 2 diagonal with repeated
    /// entries, 3 a repeated eigenvalue (`H diag(1, 1, 3, 4, ...) H` with a Householder
    /// reflector `H`), 4 tiny (1e-300), 5 huge (1e250), 6 a zero row and column, 7
    /// tridiagonal, 8 rank one.
    pub(crate) fn symmetric(n: usize, kind: usize, rnd: &mut impl FnMut() -> f64) -> Vec<f64> {
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let x = rnd();
                m[i * n + j] = x;
                m[j * n + i] = x;
            }
        }
        match kind {
            1 => m.fill(0.0),
            2 => {
                m.fill(0.0);
                for i in 0..n {
                    m[i * n + i] = if i < 3 { 2.0 } else { i as f64 };
                }
            }
            3 => {
                // H diag(1, 1, 3, 4, ...) H with a Householder reflector H
                let u: Vec<f64> = (0..n).map(|_| rnd()).collect();
                let uu: f64 = u.iter().map(|x| x * x).sum();
                let h = |i: usize, j: usize| f64::from(u8::from(i == j)) - 2.0 * u[i] * u[j] / uu;
                let dg = |k: usize| if k < 2 { 1.0 } else { 1.0 + k as f64 };
                for i in 0..n {
                    for j in 0..=i {
                        let x: f64 = (0..n).map(|k| h(i, k) * dg(k) * h(k, j)).sum();
                        m[i * n + j] = x;
                        m[j * n + i] = x;
                    }
                }
            }
            4 => m.iter_mut().for_each(|x| *x *= 1e-300),
            5 => m.iter_mut().for_each(|x| *x *= 1e250),
            6 => {
                let k = n / 2;
                for i in 0..n {
                    m[i * n + k] = 0.0;
                    m[k * n + i] = 0.0;
                }
            }
            7 => {
                for i in 0..n {
                    for j in 0..n {
                        if i.abs_diff(j) > 1 {
                            m[i * n + j] = 0.0;
                        }
                    }
                }
            }
            8 => {
                let u: Vec<f64> = (0..n).map(|_| rnd()).collect();
                for i in 0..n {
                    for j in 0..n {
                        m[i * n + j] = u[i] * u[j];
                    }
                }
            }
            _ => {}
        }
        m
    }

    fn bits<T: LinalgElem>(x: &[T]) -> Vec<u64> {
        x.iter().map(|v| v.to_f64().to_bits()).collect()
    }

    /// Matrix `i` of `l` alone.
    fn single(l: &Layout, i: usize) -> Layout {
        let s = l.strides();
        Layout::new(l.dims()[1..].to_vec().into(), s[1..].to_vec(), l.offset() + i * s[0])
    }

    fn check<T: LinalgElem + LaneBits>(data: &[T], l: &Layout, what: &str) {
        let (n, count) = (l.dims()[1], l.dims()[0]);
        for upper in [false, true] {
            let (w, v, failed) = eigh(data, l, upper, true);
            let (wv, _, failed_v) = eigh(data, l, upper, false);
            let v = v.unwrap().0;
            assert_eq!(failed, failed_v, "{what}");
            for i in 0..count {
                let (w1, v1, f1) = eigh(data, &single(l, i), upper, true);
                let (wv1, _, _) = eigh(data, &single(l, i), upper, false);
                let what = format!("{what} upper {upper} matrix {i}");
                assert_eq!(bits(&w[i * n..][..n]), bits(&w1), "{what}: eigenvalues");
                assert_eq!(bits(&v[i * n * n..][..n * n]), bits(&v1.unwrap().0), "{what}: vectors");
                assert_eq!(bits(&wv[i * n..][..n]), bits(&wv1), "{what}: eigvalsh");
                assert_eq!(f1.is_some(), w1.iter().any(|x| x.is_nan()), "{what}");
            }
        }
    }

    #[test]
    fn jacobi_takes_tiny_pairs_through_theta() {
        // a zero diagonal, (0, 1) = ε and one entry 1 elsewhere: the first rotation has
        // aqq − app = 0 and 2 apq = 2ε below √(min positive), where the squares of
        // `tangent` lose digits (1e-160) or vanish (1e-170: a division by zero, then NaN)
        // and `tangent_theta` takes over; eigenvalues ±ε, ±1 (n = 4) and 0,
        // ±√(1 + ε²) (n = 3), in the lanes and alone
        for (eps, f32_eps) in [(1e-160, 1e-21f32), (1e-170, 1e-25)] {
            for n in [3, 4] {
                let mut m = vec![0.0f64; n * n];
                m[1] = eps;
                m[n] = eps;
                let (p, q) = if n == 4 { (2, 3) } else { (1, 2) };
                m[p * n + q] = 1.0;
                m[q * n + p] = 1.0;
                let expect = if n == 4 { vec![-1.0, -eps, eps, 1.0] } else { vec![-1.0, 0.0, 1.0] };
                let neg: Vec<f64> = m.iter().map(|x| -x).collect();
                let data: Vec<f64> = [m.clone(), neg, m].concat();
                let l = Layout::contiguous(vec![3, n, n].into());
                check(&data, &l, &format!("tiny {eps} n {n}"));
                for vectors in [false, true] {
                    let (w, _, failed) = eigh(&data, &single(&l, 0), false, vectors);
                    assert!(failed.is_none());
                    for (x, y) in w.iter().zip(&expect) {
                        // relative; absolute at the zero eigenvalue
                        let tol = 1e-15 * if *y == 0.0 { 1.0 } else { y.abs() };
                        assert!((x - y).abs() <= tol, "{eps} n {n}: {w:?}");
                    }
                }
                let data32: Vec<f32> = data
                    .iter()
                    .map(|&x| if x.abs() == eps { x.signum() as f32 * f32_eps } else { x as f32 })
                    .collect();
                check(&data32, &l, &format!("f32 tiny {f32_eps} n {n}"));
                let (w, _, _) = eigh(&data32, &single(&l, 0), false, false);
                if n == 4 {
                    assert!((w[1] + f32_eps).abs() <= 1e-6 * f32_eps, "f32 {w:?}");
                    assert!((w[2] - f32_eps).abs() <= 1e-6 * f32_eps, "f32 {w:?}");
                }
                assert!(w.iter().all(|x| x.is_finite()), "f32 {w:?}");
            }
        }
    }

    #[test]
    fn lanes_give_the_bits_of_a_single_matrix() {
        // every order of the lane kernels (Jacobi to ROTATE_N, QL above), batches around
        // the lane count, both triangles, strided and transposed input, f64 and f32,
        // awkward matrices and NaN/inf ones among regular ones
        for n in 2..=SMALL_N {
            for count in [2, 9, 11, 21] {
                for transposed in [false, true] {
                    let seed = (n * 100 + count) as u64 + u64::from(transposed);
                    let (data, l) = batch(count, n, seed, transposed, count != 9);
                    check(&data, &l, &format!("f64 n {n} count {count} t {transposed}"));
                    if count == 21 {
                        let data32: Vec<f32> = data.iter().map(|&x| x as f32).collect();
                        check(&data32, &l, &format!("f32 n {n} count {count} t {transposed}"));
                    }
                }
            }
        }
    }
}
