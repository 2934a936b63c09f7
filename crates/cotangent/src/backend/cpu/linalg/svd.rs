//! Singular value decomposition of a batch of strided matrices (faer's bidiagonal
//! divide-and-conquer SVD), with a deterministic sign gauge.

use std::sync::atomic::{AtomicUsize, Ordering};

use faer::diag::DiagMut;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::svd::{self as fsvd, ComputeSvdVectors};
use faer::{MatMut, Par};

use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem};
use crate::layout::Layout;
use crate::shape::Shape;

/// Work (m n k per matrix) above which faer may use both threads on one matrix.
const PAR_WORK: usize = 512 * 512 * 512;

/// The factors of a batched SVD: `U` column-major `(*, m, ku)`, `S` contiguous `(*, k)`,
/// `Vh` contiguous `(*, kv, n)` (`V` column-major), `U` and `Vh` only when asked.
pub(crate) struct SvdOut<T> {
    pub(crate) u: Option<(Vec<T>, Layout)>,
    pub(crate) s: (Vec<T>, Layout),
    pub(crate) vh: Option<(Vec<T>, Layout)>,
}

/// Largest `max(m, n)` for the one-sided Jacobi kernel (stack arrays, no allocation).
/// Measured (f64, one matrix): Jacobi 1.3 us vs faer 3.1 us at 4 x 4, 6.0 us vs 9.0 us at
/// 8 x 8, but 43 us vs 31 us at 16 x 16 (Jacobi's flops grow as sweeps · n³).
const JACOBI_MAX: usize = 8;
/// Room of the Jacobi kernel's stack arrays.
const JACOBI_ROOM: usize = 16;
/// Sweeps after which the Jacobi kernel gives up (faer then factorises the matrix).
const JACOBI_SWEEPS: usize = 40;

/// One-sided (Hestenes) Jacobi SVD of a small column-major `m x n` matrix `a`
/// (`max(m, n) <= JACOBI_MAX`, finite): rotations of the columns of `W = A` (of `Aᵀ` when
/// wide) until they are orthogonal to `rows · eps`, accumulated in `Q`; then
/// `S` = the column norms, sorted descending, `U = W S⁻¹` and `V = Q` (swapped when wide).
/// Writes `s` (`k`) and, when given, `u` (`m x k`) and `v` (`n x k`), column-major.
/// Returns `false` (and nothing usable) when singular vectors are asked and a singular
/// value is numerically zero (no orthonormal completion here), or on no convergence: the
/// caller then uses faer.
fn jacobi_small<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
) -> bool {
    let wide = m < n;
    let (rows, cols) = if wide { (n, m) } else { (m, n) };
    let mut w = [T::ZERO; JACOBI_ROOM * JACOBI_ROOM];
    let mut q = [T::ZERO; JACOBI_ROOM * JACOBI_ROOM];
    // scale by a power of two so that squared norms neither overflow nor underflow
    let amax = a.iter().fold(T::ZERO, |acc, x| if x.abs() > acc { x.abs() } else { acc });
    if amax == T::ZERO {
        if uv.is_some() {
            return false;
        }
        s.fill(T::ZERO);
        return true;
    }
    let e = amax.to_f64().log2().floor() as i32;
    let scale = T::of(2f64.powi(-e));
    let unscale = T::of(2f64.powi(e));
    for c in 0..cols {
        for r in 0..rows {
            w[c * rows + r] = scale * if wide { a[r * m + c] } else { a[c * m + r] };
        }
    }
    let want = uv.is_some();
    if want {
        for c in 0..cols {
            q[c * cols + c] = T::ONE;
        }
    }
    let tol = T::of(rows as f64) * T::EPSILON;
    let big = T::ONE / T::EPSILON.sqrt();
    let two = T::of(2.0);
    let mut converged = false;
    for _ in 0..JACOBI_SWEEPS {
        let mut rotated = false;
        for p in 0..cols {
            for qq in p + 1..cols {
                let (wp, wq) = (&w[p * rows..(p + 1) * rows], &w[qq * rows..(qq + 1) * rows]);
                let mut alpha = T::ZERO;
                let mut beta = T::ZERO;
                let mut gamma = T::ZERO;
                for i in 0..rows {
                    alpha += wp[i] * wp[i];
                    beta += wq[i] * wq[i];
                    gamma += wp[i] * wq[i];
                }
                if gamma == T::ZERO || gamma.abs() <= tol * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (two * gamma);
                let t = if zeta.abs() > big {
                    T::ONE / (two * zeta)
                } else {
                    let sg = if zeta < T::ZERO { -T::ONE } else { T::ONE };
                    sg / (zeta.abs() + (T::ONE + zeta * zeta).sqrt())
                };
                let c = T::ONE / (T::ONE + t * t).sqrt();
                let sn = c * t;
                rotate(&mut w, rows, p, qq, c, sn);
                if want {
                    rotate(&mut q, cols, p, qq, c, sn);
                }
            }
        }
        if !rotated {
            converged = true;
            break;
        }
    }
    if !converged {
        return false;
    }
    // norms, and the order of the columns by decreasing norm
    let mut norms = [T::ZERO; JACOBI_ROOM];
    let mut order = [0usize; JACOBI_ROOM];
    for c in 0..cols {
        let col = &w[c * rows..(c + 1) * rows];
        norms[c] = col.iter().fold(T::ZERO, |acc, &x| acc + x * x).sqrt();
        order[c] = c;
    }
    for i in 0..cols {
        let mut best = i;
        for j in i + 1..cols {
            if norms[order[j]] > norms[order[best]] {
                best = j;
            }
        }
        order.swap(i, best);
    }
    for (j, x) in s.iter_mut().enumerate().take(cols) {
        *x = norms[order[j]] * unscale;
    }
    let Some((u, v)) = uv else { return true };
    let smax = norms[order[0]];
    let thresh = T::of(rows as f64) * T::EPSILON * smax;
    if norms[order[cols - 1]] <= thresh {
        return false;
    }
    // the normalised columns of W and the columns of Q, in the sorted order
    let (wd, qd) = if wide { (v, u) } else { (u, v) };
    for (j, &c) in order.iter().enumerate().take(cols) {
        let inv = T::ONE / norms[c];
        for r in 0..rows {
            wd[j * rows + r] = w[c * rows + r] * inv;
        }
        qd[j * cols..(j + 1) * cols].copy_from_slice(&q[c * cols..(c + 1) * cols]);
    }
    true
}

/// Rotates columns `p` and `q` (`rows` long) of a column-major array in place:
/// `(x_p, x_q) <- (c x_p − s x_q, s x_p + c x_q)`.
#[inline]
fn rotate<T: LinalgElem>(x: &mut [T], rows: usize, p: usize, q: usize, c: T, s: T) {
    let (lo, hi) = x.split_at_mut(q * rows);
    let xp = &mut lo[p * rows..(p + 1) * rows];
    let xq = &mut hi[..rows];
    for (a, b) in xp.iter_mut().zip(xq.iter_mut()) {
        let (ap, bq) = (*a, *b);
        *a = c * ap - s * bq;
        *b = s * ap + c * bq;
    }
}

thread_local! {
    /// faer's SVD workspace of this thread, with the requirement it was sized for.
    static SCRATCH: std::cell::RefCell<Option<(faer::dyn_stack::StackReq, MemBuffer)>> =
        const { std::cell::RefCell::new(None) };
}

/// Flips the sign of column `j` of `u` (`m` rows) and of column `j` of `v` (`n` rows,
/// the row `j` of `Vh`) when the entry of largest magnitude of `u`'s column (the first on
/// ties) is negative.
fn fix_gauge<T: LinalgElem>(u: &mut [T], m: usize, v: &mut [T], n: usize, cols: usize) {
    for j in 0..cols {
        let uc = &mut u[j * m..(j + 1) * m];
        let mut best = T::ZERO;
        let mut neg = false;
        for &x in uc.iter() {
            if x.abs() > best {
                best = x.abs();
                neg = x < T::ZERO;
            }
        }
        if neg {
            for x in uc.iter_mut() {
                *x = -*x;
            }
            if j * n < v.len() {
                for x in &mut v[j * n..(j + 1) * n] {
                    *x = -*x;
                }
            }
        }
    }
}

/// The SVD of each matrix of `a` (layout `l`, `(*, m, n)`): singular values in
/// descending order; with `want_uv`, `U` and `V` (`full`: `m x m` and `n x n`, else
/// `m x k` and `n x k`). Gauge: the entry of largest magnitude of each column of `U` is
/// positive (the first such entry on ties), the matching column of `V` flipped with it;
/// for `full` the completion columns follow the same rule, each on its own. `Err(i)`: matrix
/// `i` has a non-finite entry or did not converge.
pub(crate) fn svd<T: LinalgElem>(
    a: &[T],
    l: &Layout,
    want_uv: bool,
    full: bool,
) -> Result<SvdOut<T>, usize> {
    let ba = Batch::of(l);
    let (m, n) = (ba.m, ba.n);
    let k = m.min(n);
    let (ku, kv) = if !want_uv {
        (0, 0)
    } else if full {
        (m, n)
    } else {
        (k, k)
    };
    let (usz, vsz) = (m * ku, n * kv);
    let size = usz + k + vsz;
    let len = ba.len();
    let mut packed = crate::backend::cpu::pool::filled(len * size, T::ZERO);
    let failed = AtomicUsize::new(usize::MAX);
    let work = m * n * k.max(1);
    let compute = if !want_uv {
        ComputeSvdVectors::No
    } else if full {
        ComputeSvdVectors::Full
    } else {
        ComputeSvdVectors::Thin
    };
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, par: Par| {
        let (u, rest) = dst.split_at_mut(usz);
        let (s, v) = rest.split_at_mut(k);
        if k == 0 {
            // U and V are identities (full) or empty
            for c in 0..ku.min(m) {
                u[c * m + c] = T::ONE;
            }
            for c in 0..kv.min(n) {
                v[c * n + c] = T::ONE;
            }
            return;
        }
        tmp.clear();
        tmp.resize(m * n, T::ZERO);
        ba.load(a, i, tmp);
        if tmp.iter().any(|x| !x.is_finite()) {
            failed.fetch_min(i, Ordering::Relaxed);
            return;
        }
        if m.max(n) <= JACOBI_MAX && (!want_uv || ku == k && kv == k) {
            let uv = want_uv.then_some((&mut *u, &mut *v));
            if jacobi_small(tmp, m, n, s, uv) {
                if want_uv {
                    fix_gauge(u, m, v, n, k);
                }
                return;
            }
        }
        let am = faer::MatRef::from_column_major_slice(tmp.as_slice(), m, n);
        let req = fsvd::svd_scratch::<T>(m, n, compute, compute, par, faer::Spec::default());
        SCRATCH.with_borrow_mut(|cache| {
            // one buffer per thread, reused while the requirement is the same (a batch)
            let mem = match cache {
                Some((r, mem)) if *r == req => mem,
                _ => &mut cache.insert((req, MemBuffer::new(req))).1,
            };
            let stack = MemStack::new(mem);
            let um = want_uv.then(|| MatMut::from_column_major_slice_mut(&mut *u, m, ku));
            let vm = want_uv.then(|| MatMut::from_column_major_slice_mut(&mut *v, n, kv));
            let sd = DiagMut::from_slice_mut(s);
            if fsvd::svd(am, sd, um, vm, par, stack, faer::Spec::default()).is_err() {
                failed.fetch_min(i, Ordering::Relaxed);
            }
        });
        if failed.load(Ordering::Relaxed) <= i {
            return;
        }
        if want_uv {
            fix_gauge(u, m, v, n, k);
            if ku > k {
                // completion columns of U: no matching row of Vh
                fix_gauge(&mut u[k * m..], m, &mut [], n, ku - k);
            }
            if kv > k {
                fix_gauge(&mut v[k * n..], n, &mut [], m, kv - k);
            }
        }
    };
    for_each_matrix(&mut packed, size, work, work >= PAR_WORK, one);
    let f = failed.load(Ordering::Relaxed);
    if f != usize::MAX {
        return Err(f);
    }
    let mut uo = Vec::with_capacity(len * usz);
    let mut so = Vec::with_capacity(len * k);
    let mut vo = Vec::with_capacity(len * vsz);
    if size > 0 {
        for c in packed.chunks_exact(size) {
            uo.extend_from_slice(&c[..usz]);
            so.extend_from_slice(&c[usz..usz + k]);
            vo.extend_from_slice(&c[usz + k..]);
        }
    }
    let mut sdims = ba.dims.clone();
    sdims.push(k);
    let s = (so, Layout::contiguous(Shape::new(sdims)));
    if !want_uv {
        return Ok(SvdOut { u: None, s, vh: None });
    }
    let mut vdims = ba.dims.clone();
    vdims.extend([kv, n]);
    Ok(SvdOut {
        u: Some((uo, colmajor_layout(&ba.dims, m, ku))),
        s,
        vh: Some((vo, Layout::contiguous(Shape::new(vdims)))),
    })
}
