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
        let am = faer::MatRef::from_column_major_slice(tmp.as_slice(), m, n);
        let req = fsvd::svd_scratch::<T>(m, n, compute, compute, par, faer::Spec::default());
        let mut mem = MemBuffer::new(req);
        let stack = MemStack::new(&mut mem);
        let um = want_uv.then(|| MatMut::from_column_major_slice_mut(&mut *u, m, ku));
        let vm = want_uv.then(|| MatMut::from_column_major_slice_mut(&mut *v, n, kv));
        let sd = DiagMut::from_slice_mut(s);
        if fsvd::svd(am, sd, um, vm, par, stack, faer::Spec::default()).is_err() {
            failed.fetch_min(i, Ordering::Relaxed);
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
