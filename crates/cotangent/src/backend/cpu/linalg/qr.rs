//! Householder QR `A = Q R`, batched: LAPACK's conventions (`geqrf` + `orgqr`), so that
//! the signs of `diag(R)` are LAPACK's (PyTorch's).
//!
//! Each matrix is copied once into a column-major work block and factorised in place:
//! - small matrices (`min(m, n) <= SMALL_K` or `m n <= SMALL_MN`): an unblocked Householder
//!   loop written here (LAPACK's `geqr2` / `org2r`), allocation-free per matrix (scratch
//!   reused across a rayon task's matrices);
//! - larger ones: faer's blocked Householder QR and its block reflector application to
//!   form `Q`.
//!
//! The reflector of column `j` is LAPACK's `larfg`: `H = I − τ v vᵀ`, `v₀ = 1`, mapping
//! `x` to `β e₀` with `β = −sign(x₀) ‖x‖` (and `H = I`, `β = x₀` when the rest of `x` is
//! zero). faer follows the same sign rule; it differs from LAPACK only on numerically
//! rank-deficient columns (it then skips the column, which gives another valid
//! factorisation), which only the large-matrix path can meet.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::{householder, qr::no_pivoting::factor as qrf};
use faer::{Conj, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::{colmajor_layout, Batch, LinalgElem};
use crate::backend::QrSpec;
use crate::layout::Layout;

/// Below these sizes the unblocked loop is used.
const SMALL_K: usize = 16;
const SMALL_MN: usize = 48 * 48;
/// Work (m n k per matrix) above which faer may use both threads on one matrix.
const PAR_WORK: usize = 512 * 512 * 512;
/// Work per rayon task when the batch is split across threads.
const TASK_WORK: usize = 1 << 15;

/// The scalar helpers the reflectors need.
pub(crate) trait QrElem: LinalgElem {
    /// The smallest positive normal number.
    const MIN_POSITIVE: Self;
    fn hypot(self, o: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
}

impl QrElem for f32 {
    const MIN_POSITIVE: Self = f32::MIN_POSITIVE;
    fn hypot(self, o: Self) -> Self {
        f32::hypot(self, o)
    }
    fn copysign(self, sign: Self) -> Self {
        f32::copysign(self, sign)
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
}

/// `‖x‖₂` without overflow or underflow (a scaled sum when the plain one is out of range).
fn norm2<T: QrElem>(x: &[T]) -> T {
    let s: T = x.iter().map(|&v| v * v).sum();
    if s.is_finite() && s >= T::MIN_POSITIVE {
        return s.sqrt();
    }
    if s.is_nan() {
        return s;
    }
    let scale = x.iter().fold(T::ZERO, |m, &v| if v.abs() > m { v.abs() } else { m });
    if scale == T::ZERO || !scale.is_finite() {
        return scale;
    }
    let s: T = x.iter().map(|&v| (v / scale) * (v / scale)).sum();
    scale * s.sqrt()
}

/// LAPACK `geqr2` on the column-major `m x n` block `w`: `R` in the upper triangle, the
/// reflectors' vectors below the diagonal, their `τ` in `tau` (`min(m, n)` entries).
fn geqr2<T: QrElem>(w: &mut [T], m: usize, n: usize, tau: &mut [T]) {
    let k = m.min(n);
    for j in 0..k {
        let (left, right) = w.split_at_mut((j + 1) * m);
        let col = &mut left[j * m + j..];
        let alpha = col[0];
        let xnorm = norm2(&col[1..]);
        if xnorm == T::ZERO {
            tau[j] = T::ZERO;
            continue;
        }
        // ‖x‖ with the head: a plain square root when it cannot overflow or underflow
        // (libm's hypot costs as much as the rest of a 4 x 4 step)
        let ss = alpha * alpha + xnorm * xnorm;
        let norm =
            if ss.is_finite() && ss >= T::MIN_POSITIVE { ss.sqrt() } else { alpha.hypot(xnorm) };
        let beta = -norm.copysign(alpha);
        tau[j] = (beta - alpha) / beta;
        let inv = T::ONE / (alpha - beta);
        for v in &mut col[1..] {
            *v *= inv;
        }
        col[0] = beta;
        let (v, t) = (&col[1..], tau[j]);
        // H applied to the trailing columns: c ← c − τ v (vᵀ c), with v₀ = 1
        for c in right.chunks_exact_mut(m) {
            let c = &mut c[j..];
            let mut s = c[0];
            for (x, &y) in c[1..].iter().zip(v) {
                s += *x * y;
            }
            let s = -(s * t);
            c[0] += s;
            for (x, &y) in c[1..].iter_mut().zip(v) {
                *x += s * y;
            }
        }
    }
}

/// LAPACK `org2r`: the first `q.len() / m` columns of `H₀ H₁ … H_{k−1}` into the
/// column-major `q`, from the reflectors stored in `w` (`m` rows) and `tau` (`k`).
fn org2r<T: QrElem>(w: &[T], m: usize, tau: &[T], q: &mut [T]) {
    let kq = q.len() / m.max(1);
    q.fill(T::ZERO);
    for c in 0..kq.min(m) {
        q[c * m + c] = T::ONE;
    }
    for j in (0..tau.len()).rev() {
        let t = tau[j];
        if t == T::ZERO {
            continue;
        }
        let v = &w[j * m + j + 1..(j + 1) * m];
        // only columns j.. are touched: the others are unit vectors above row j
        for c in q.chunks_exact_mut(m).skip(j) {
            let c = &mut c[j..];
            let mut s = c[0];
            for (x, &y) in c[1..].iter().zip(v) {
                s += *x * y;
            }
            let s = -(s * t);
            c[0] += s;
            for (x, &y) in c[1..].iter_mut().zip(v) {
                *x += s * y;
            }
        }
    }
}

/// Scratch reused across the matrices of one task.
struct Scratch<T> {
    w: Vec<T>,
    tau: Vec<T>,
    tmp: Vec<T>,
    mem: Option<MemBuffer>,
}

impl<T> Scratch<T> {
    fn new() -> Self {
        Scratch { w: Vec::new(), tau: Vec::new(), tmp: Vec::new(), mem: None }
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
    par: Par,
) {
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    s.w.clear();
    s.w.resize(m * n, T::ZERO);
    ba.load(a, i, &mut s.w);
    if k <= SMALL_K || m * n <= SMALL_MN {
        s.tau.clear();
        s.tau.resize(k, T::ZERO);
        geqr2(&mut s.w, m, n, &mut s.tau);
        if !q.is_empty() {
            org2r(&s.w, m, &s.tau, q);
        }
    } else {
        let bs = qrf::recommended_block_size::<T>(m, n);
        s.tmp.clear();
        s.tmp.resize(bs * k, T::ZERO);
        let req = qrf::qr_in_place_scratch::<T>(m, n, bs, par, faer::Spec::default()).or(
            householder::apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(
                m,
                bs,
                q.len() / m,
            ),
        );
        // every matrix of a batch has one size: one buffer serves them all
        let mem = s.mem.get_or_insert_with(|| MemBuffer::new(req));
        let stack = MemStack::new(mem);
        let mut hf = MatMut::from_column_major_slice_mut(&mut s.tmp, bs, k);
        qrf::qr_in_place(
            MatMut::from_column_major_slice_mut(&mut s.w, m, n),
            hf.as_mut(),
            par,
            stack,
            faer::Spec::default(),
        );
        if !q.is_empty() {
            let kq = q.len() / m;
            q.fill(T::ZERO);
            for c in 0..kq.min(m) {
                q[c * m + c] = T::ONE;
            }
            let basis = MatRef::from_column_major_slice(&s.w, m, n).get(.., ..k);
            householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
                basis,
                hf.as_ref(),
                Conj::No,
                MatMut::from_column_major_slice_mut(q, m, kq),
                par,
                stack,
            );
        }
    }
    // R: the upper triangle of the first kr rows (rows beyond k are zero)
    for (c, col) in r.chunks_exact_mut(kr.max(1)).enumerate().take(n) {
        for (row, x) in col.iter_mut().enumerate() {
            *x = if row <= c && row < k { s.w[c * m + row] } else { T::ZERO };
        }
    }
}

/// A factor's buffer and layout.
type Factor<T> = (Vec<T>, Layout);

/// QR of each matrix of `a: (*, m, n)`. Returns `Q` (`(*, m, k)`, or `(*, m, m)` with
/// `spec.complete`; `None` without `spec.want_q`) and `R` (`(*, k, n)`, or `(*, m, n)`
/// with `spec.complete`), `k = min(m, n)`, both column-major.
pub(crate) fn qr<T: QrElem>(a: &[T], al: &Layout, spec: QrSpec) -> (Option<Factor<T>>, Factor<T>) {
    let ba = Batch::of(al);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let (kq, kr) = if spec.complete { (m, m) } else { (k, k) };
    let (qsize, rsize) = (if spec.want_q { m * kq } else { 0 }, kr * n);
    let nb = ba.len();
    let mut qv = vec![T::ZERO; nb * qsize];
    let mut rv = vec![T::ZERO; nb * rsize];
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
                one(a, &ba, t * per + j, q, r, kr, &mut s, Par::Seq);
            }
        };
        if spec.want_q {
            qv.par_chunks_mut(qsize * per)
                .zip(rv.par_chunks_mut(rsize * per))
                .enumerate()
                .for_each(|(t, (qc, rc))| run(t, Some(qc), rc));
        } else {
            rv.par_chunks_mut(rsize * per).enumerate().for_each(|(t, rc)| run(t, None, rc));
        }
    } else {
        let par = if work >= PAR_WORK { Par::rayon(0) } else { Par::Seq };
        let mut s = Scratch::new();
        for i in 0..nb {
            let q = if spec.want_q { &mut qv[i * qsize..(i + 1) * qsize] } else { &mut [] };
            one(a, &ba, i, q, &mut rv[i * rsize..(i + 1) * rsize], kr, &mut s, par);
        }
    }
    (q_out(qv), (rv, r_layout))
}
