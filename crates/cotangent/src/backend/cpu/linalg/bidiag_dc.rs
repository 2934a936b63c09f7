//! The singular value decomposition of a real upper bidiagonal matrix by divide and
//! conquer (Jessup & Sorensen; Gu & Eisenstat; the scheme of LAPACK's `dbdsdc` and
//! `dlasd0`-`dlasd8`), with its singular vectors:
//! - a subproblem is an upper bidiagonal `B` of `n` rows and `n + sqre` columns
//!   (`sqre` 0 or 1: with 1 the last superdiagonal entry sits in the extra column), with
//!   SVD `B = U [Σ 0] Vᵀ` (`U` `n x n`, `V` `(n + sqre) x (n + sqre)`, its last column
//!   then a null vector); the whole matrix is the square case;
//! - tear it at row `k = n/2`: the rows above form a `k x (k + 1)` bidiagonal `B₁`
//!   (`sqre = 1`), the rows below one `B₂` of the parent's `sqre`, and row `k` holds
//!   `α = d_k` in the last column of `B₁` and `β = e_k` in the first of `B₂`. Solve the
//!   halves (recursively; blocks of at most [`LEAF`] rows by faer's dense SVD);
//! - with `Bᵢ = Uᵢ [Σᵢ 0] Vᵢᵀ`, `diag(U₁, 1, U₂)ᵀ B diag(V₁, V₂)` is zero but for
//!   `Σ₁`, `Σ₂` on the diagonal and the middle row `(α l₁ᵀ, β f₂ᵀ)` (`l₁` the last row of
//!   `V₁`, `f₂` the first of `V₂`); permuted, an arrowhead `M` with first row `z` and
//!   diagonal `(0, Σ₁, Σ₂)`, the middle row first and the null column of `B₁` first.
//!   With `sqre = 1` the null column of `B₂` adds one more `z` entry: a rotation of the
//!   two null columns folds it into `z₀` and leaves a zero column, the null vector of
//!   the whole;
//! - deflation (`dlasd2`): a negligible `z_j` leaves `(d_j, u_j, v_j)` a singular
//!   triple; two nearly equal `d_j` are made equal by a rotation of their columns of
//!   both `U` and `V` that zeroes one of their `z` components; the smallest nonzero pole
//!   is kept away from `d₀ = 0`, and `z₀` from zero;
//! - `MᵀM = D² + z zᵀ`: the other singular values are the roots `σ` of the secular
//!   equation `1 + Σ_j z_j² / (d_j² - σ²) = 0`, one in each gap of the sorted `d_j²` and
//!   one above the largest. Each is stored as its nearer pole plus an offset,
//!   `σ² = d_o² + τ`, so that every difference `d_j² - σ²` is computed as
//!   `(d_j - d_o)(d_j + d_o) - τ`, never from rounded squares; each is found by the
//!   "middle way" rational interpolation of its two nearest poles (Li), kept inside a
//!   bracket by bisection ([`super::secular`], shared with the symmetric tridiagonal
//!   divide and conquer);
//! - the right singular vectors of `M` are `(ẑ_j / (d_j² - σ²))_j`, the left ones
//!   `(-1, d_1 v_1, …)` (the first entry from the secular equation), each normalised,
//!   where `ẑ` is recomputed from the computed roots (Gu & Eisenstat, Löwner): `ẑ` is the
//!   exact arrowhead for those roots, so the vectors are orthogonal to working precision
//!   however close the roots are;
//! - `diag(U₁, 1, U₂)` and `diag(V₁, V₂)` times them by matrix products that skip the
//!   known zero blocks.
//!
//! Each merge works on its entries divided by the largest of them (`dlasd1`), so that
//! the squares neither overflow nor underflow; the whole matrix is scaled to a largest
//! entry of one first.
//!
//! For the singular values alone (LAPACK's `dlasda` with `ICOMPQ = 0`) a merge needs
//! only the last row of `V₁` and the first of `V₂`, and its own `V`'s first and last
//! rows are those rows of `diag(V₁, V₂)` times the arrowhead's right vectors: each
//! subproblem carries just those two rows of `V`, and the products become two dot
//! products per root (`O(n²)` in all instead of `O(n³)`).

use std::cmp::Ordering;
use std::ops::Range;

use faer::diag::DiagMut;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::matmul::matmul;
use faer::linalg::svd::{self as fsvd, ComputeSvdVectors};
use faer::{Accum, MatMut, MatRef, Par};

use super::eigh::hypot;
use super::secular::{roots, z_hat, Squares};
use super::tridiag_dc::{reset, reset_big};
use super::tridiag_qr::identity;
use super::LinalgElem;
use crate::backend::cpu::pool::{self, Pooled};

/// Subproblems of at most this many rows are solved by faer's dense SVD (which
/// bidiagonalises them again: its cost grows as the cube of the leaf). Of 32, 16 and 8,
/// 8 was the fastest in `svdvals` and `svd` fwd+bwd timings on two threads.
pub(super) const LEAF: usize = 8;
/// From this order a subproblem solves its two halves in parallel and its merge (its
/// roots, its products) uses every thread of the pool, when allowed to.
const PAR_MERGE: usize = 128;

/// Which rows of a column of `diag(U₁, 1, U₂)` (and of the matching column of
/// `diag(V₁, V₂)`) can be nonzero: those of the upper child, both, the lower child.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rows {
    Top,
    Both,
    Bottom,
}

/// Buffers reused by the merges (of one matrix and across calls): nothing is allocated
/// once they have grown; the large ones go back to the buffer cache on drop.
#[derive(Default)]
pub(crate) struct Work<T: Pooled> {
    /// `diag(U₁, 1, U₂)`, its columns in the arrowhead's order (`n x n`).
    qu: Vec<T>,
    /// `diag(V₁, V₂)`, its columns in the arrowhead's order (`m x m`).
    qv: Vec<T>,
    z: Vec<T>,
    dd: Vec<T>,
    rows: Vec<Rows>,
    order: Vec<usize>,
    kept: Vec<usize>,
    deflated: Vec<usize>,
    dk: Vec<T>,
    zk: Vec<T>,
    origin: Vec<usize>,
    tau: Vec<T>,
    pos: Vec<usize>,
    kpos: Vec<usize>,
    zh: Vec<T>,
    dpos: Vec<T>,
    zpos: Vec<T>,
    /// The arrowhead's left and right singular vectors (`K x K` each).
    su: Vec<T>,
    sv: Vec<T>,
    /// The products' results (`n x K`, `m x K`).
    ou: Vec<T>,
    ov: Vec<T>,
    /// The packed blocks of the four products.
    packs: [Vec<T>; 4],
    all: Vec<(T, usize)>,
    /// The dense leaf and faer's scratch for its SVD.
    dense: Vec<T>,
    mem: Option<(StackReq, MemBuffer)>,
    /// The full `V` of a leaf when only the first and last rows are kept.
    leafv: Vec<T>,
    /// The first and last rows of `V` when only the singular values are wanted.
    ends: Vec<T>,
    /// The first and last rows of the kept columns of `diag(V₁, V₂)` (in the kept
    /// order), when only the singular values are wanted.
    g0: Vec<T>,
    g1: Vec<T>,
    /// The workspace of the second half when the halves are solved in parallel.
    other: Option<Box<Work<T>>>,
}

impl<T: Pooled> Drop for Work<T> {
    fn drop(&mut self) {
        let [p0, p1, p2, p3] = &mut self.packs;
        for v in [
            &mut self.qu,
            &mut self.qv,
            &mut self.su,
            &mut self.sv,
            &mut self.ou,
            &mut self.ov,
            p0,
            p1,
            p2,
            p3,
        ] {
            pool::give(std::mem::take(v));
        }
    }
}

/// SVD of the `n x n` upper bidiagonal `B` (diagonal `d[0..n]`, superdiagonal
/// `e[0..n-1]`, `e[i]` at `(i, i + 1)`; `e` may be longer, its extra entries ignored):
/// `B = U diag(s) Vᵀ`. On return `d` holds `s`, non-negative and in descending order;
/// `e` is overwritten. With `uv = Some((u, v))` (each `n * n`, column-major) `U` and `V`
/// are written; with `None` only the first and last rows of each subproblem's `V` are
/// carried (all that the merges need: `O(n²)` work). False if an entry is
/// not finite or the dense SVD of a leaf fails (then `d`, `u`, `v` hold no result). If
/// `parallel`, large subproblems run on every thread of the current rayon pool (the
/// caller should be on one of its workers); the result is the same to the bit either
/// way.
pub(crate) fn bidiag_dc<T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
    parallel: bool,
    w: &mut Work<T>,
) -> bool {
    let n = d.len();
    if n == 0 {
        return true;
    }
    debug_assert!(e.len() + 1 >= n);
    let e = &mut e[..n - 1];
    if d.iter().chain(e.iter()).any(|x| !x.is_finite()) {
        return false;
    }
    let scale =
        d.iter().chain(e.iter()).fold(T::ZERO, |a, &x| if x.abs() > a { x.abs() } else { a });
    if scale == T::ZERO {
        if let Some((u, v)) = uv {
            identity(u, n);
            identity(v, n);
        }
        return true;
    }
    for x in d.iter_mut().chain(e.iter_mut()) {
        *x /= scale;
    }
    let ok = if let Some((u, v)) = uv {
        debug_assert!(u.len() == n * n && v.len() == n * n);
        solve(d, e, (u, v), (0, true), parallel, w)
    } else {
        // only the first and last rows of each V (dlasda's ICOMPQ = 0): O(n²)
        let mut v = std::mem::take(&mut w.ends);
        reset(&mut v, 2 * n, T::ZERO);
        let ok = solve(d, e, (&mut [], &mut v), (0, false), parallel, w);
        w.ends = v;
        ok
    };
    for x in d.iter_mut() {
        *x *= scale;
    }
    ok
}

/// The SVD of the `n x (n + sqre)` upper bidiagonal `(d, e)` (`e.len() = n - 1 + sqre`,
/// entries of order at most one): the singular values (descending) into `d` and, with
/// `vecs`, `U` (`n x n`) into `u[..n²]` and `V` (`m x m`, `m = n + sqre`; with
/// `sqre = 1` its last column the null vector) into `v[..m²]`, column-major. Without
/// `vecs`, `u` is not used and `v[..2m]` receives only the first and last rows of `V`
/// (column-major `2 x m`: all that the merges need).
fn solve<T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    (u, v): (&mut [T], &mut [T]),
    (sqre, vecs): (usize, bool),
    parallel: bool,
    w: &mut Work<T>,
) -> bool {
    let n = d.len();
    debug_assert!(e.len() + 1 == n + sqre);
    if n <= LEAF {
        return leaf(d, e, (u, v), (sqre, vecs), w);
    }
    let k = n / 2;
    let k1 = k + 1;
    let n2 = n - k1;
    let m2 = n2 + sqre;
    let (alpha, beta) = (d[k], e[k]);
    let parallel = parallel && n >= PAR_MERGE;
    // the halves' U in the first k² + n2² <= n² entries of u, their V in the first
    // (k + 1)² + m2² <= m² of v (without vecs: their 2 x (k + 1) and 2 x m2 end rows)
    let (lu0, lu1, lv0, lv1) =
        if vecs { (k * k, n2 * n2, k1 * k1, m2 * m2) } else { (0, 0, 2 * k1, 2 * m2) };
    let (ok0, ok1) = {
        let (d0, rest) = d.split_at_mut(k);
        let d1 = &mut rest[1..];
        let (e0, rest) = e.split_at_mut(k);
        let e1 = &mut rest[1..];
        let (u0, rest) = u.split_at_mut(lu0);
        let u1 = &mut rest[..lu1];
        let (v0, rest) = v.split_at_mut(lv0);
        let v1 = &mut rest[..lv1];
        if parallel {
            let mut other = w.other.take().unwrap_or_default();
            let r = rayon::join(
                || solve(d0, e0, (u0, v0), (1, vecs), true, w),
                || solve(d1, e1, (u1, v1), (sqre, vecs), true, &mut other),
            );
            w.other = Some(other);
            r
        } else {
            (
                solve(d0, e0, (u0, v0), (1, vecs), false, w),
                solve(d1, e1, (u1, v1), (sqre, vecs), false, w),
            )
        }
    };
    if !(ok0 && ok1) {
        return false;
    }
    merge(d, (alpha, beta), (k, sqre, vecs), (u, v), parallel, w);
    true
}

/// A block of at most [`LEAF`] rows ([`solve`]'s arguments): faer's SVD of the dense
/// `n x (n + sqre)` matrix, with both full sets of vectors, or without `vecs` the full
/// `V` only, of which the first and last rows are kept (faer's singular values come
/// non-negative and nonincreasing).
fn leaf<T: LinalgElem>(
    d: &mut [T],
    e: &[T],
    (u, v): (&mut [T], &mut [T]),
    (sqre, vecs): (usize, bool),
    w: &mut Work<T>,
) -> bool {
    let n = d.len();
    let m = n + sqre;
    let Work { dense, mem, leafv, .. } = w;
    reset(dense, n * m, T::ZERO);
    for i in 0..n {
        dense[i * n + i] = d[i];
        if i + 1 < m {
            dense[(i + 1) * n + i] = e[i];
        }
    }
    let spec = faer::Spec::<fsvd::SvdParams, T>::default();
    let full = ComputeSvdVectors::Full;
    let want_u = if vecs { full } else { ComputeSvdVectors::No };
    let req = fsvd::svd_scratch::<T>(n, m, want_u, full, Par::Seq, spec);
    let mem = match mem {
        Some((r, buf))
            if r.size_bytes() >= req.size_bytes() && r.align_bytes() >= req.align_bytes() =>
        {
            buf
        }
        _ => {
            let r = mem.as_ref().map_or(req, |(r, _)| r.or(req));
            &mut mem.insert((r, MemBuffer::new(r))).1
        }
    };
    let mut s = [T::ZERO; LEAF];
    let vfull = if vecs {
        &mut v[..m * m]
    } else {
        reset(leafv, m * m, T::ZERO);
        &mut leafv[..]
    };
    let ok = fsvd::svd(
        MatRef::from_column_major_slice(dense, n, m),
        DiagMut::from_slice_mut(&mut s[..n]),
        vecs.then(|| MatMut::from_column_major_slice_mut(&mut u[..n * n], n, n)),
        Some(MatMut::from_column_major_slice_mut(vfull, m, m)),
        Par::Seq,
        MemStack::new(mem),
        spec,
    )
    .is_ok();
    if !vecs {
        for (c, col) in leafv.chunks_exact(m).enumerate() {
            v[2 * c] = col[0];
            v[2 * c + 1] = col[m - 1];
        }
    }
    d.copy_from_slice(&s[..n]);
    ok && d.iter().all(|x| x.is_finite())
}

/// The merge of a subproblem of `n = d.len()` rows and `m = n + sqre` columns torn at
/// row `k`: `d[..k]`, `d[k + 1..]` hold the halves' singular values (descending),
/// `u[..k²]`, `u[k²..k² + n2²]` their `U` and `v[..(k+1)²]`, `v[(k+1)²..(k+1)² + m2²]`
/// their `V` (column-major; `n2 = n - k - 1`, `m2 = n2 + sqre`); `(alpha, beta)` the
/// entries of row `k`. Writes the whole's singular values (descending) into `d`, its
/// `U` into `u[..n²]` and `V` into `v[..m²]`. Without `vecs`, `u` is not used and
/// `v[..2(k+1)]`, `v[2(k+1)..2(k+1) + 2 m2]` hold the first and last rows of the halves'
/// `V` (column-major, two rows), and the whole's go to `v[..2m]`: `V`'s columns are
/// combined exactly as with `vecs`, restricted to those two rows.
fn merge<T: LinalgElem>(
    d: &mut [T],
    (alpha, beta): (T, T),
    (k, sqre, vecs): (usize, usize, bool),
    (u, v): (&mut [T], &mut [T]),
    parallel: bool,
    w: &mut Work<T>,
) {
    let n = d.len();
    let m = n + sqre;
    let k1 = k + 1;
    let n2 = n - k1;
    let m2 = n2 + sqre;
    // the rows kept of V (of diag(V₁, V₂)), and the first of them in the lower half
    let (ldv, vsplit) = if vecs { (m, k1) } else { (2, 1) };
    let par = if parallel { Par::rayon(0) } else { Par::Seq };
    let Work {
        qu,
        qv,
        z,
        dd,
        rows,
        order,
        kept,
        deflated,
        dk,
        zk,
        origin,
        tau,
        pos,
        kpos,
        zh,
        dpos,
        zpos,
        su,
        sv,
        ou,
        ov,
        packs,
        all,
        g0,
        g1,
        ..
    } = w;
    let amax = |a: T, x: T| if x.abs() > a { x.abs() } else { a };
    let orgnrm = d[..k].iter().chain(&d[k1..]).fold(amax(alpha.abs(), beta), |a, &x| amax(a, x));
    // diag(U₁, 1, U₂) and diag(V₁, V₂) in the arrowhead's column order: the null column
    // of B₁ (U: the middle row), Σ₁'s, Σ₂'s, and for sqre = 1 the null column of B₂
    let mut zlast = T::ZERO;
    {
        reset(z, n, T::ZERO);
        reset(dd, n, T::ZERO);
        reset(rows, n, Rows::Top);
        reset_big(qv, m * ldv, T::ZERO);
        if vecs {
            let (u0, rest) = u.split_at(k * k);
            let u1 = &rest[..n2 * n2];
            let (v0, rest) = v.split_at(k1 * k1);
            let v1 = &rest[..m2 * m2];
            reset_big(qu, n * n, T::ZERO);
            qu[k] = T::ONE;
            qv[..k1].copy_from_slice(&v0[k * k1..]);
            for i in 0..k {
                let c = 1 + i;
                qu[c * n..c * n + k].copy_from_slice(&u0[i * k..(i + 1) * k]);
                qv[c * m..c * m + k1].copy_from_slice(&v0[i * k1..(i + 1) * k1]);
            }
            for i in 0..n2 {
                let c = k1 + i;
                qu[c * n + k1..(c + 1) * n].copy_from_slice(&u1[i * n2..(i + 1) * n2]);
                qv[c * m + k1..(c + 1) * m].copy_from_slice(&v1[i * m2..(i + 1) * m2]);
            }
            if sqre == 1 {
                qv[n * m + k1..].copy_from_slice(&v1[n2 * m2..]);
            }
        } else {
            // V₁'s first row is the whole's first, V₂'s last row its last
            let (v0, rest) = v.split_at(2 * k1);
            let v1 = &rest[..2 * m2];
            qv[0] = v0[2 * k];
            for i in 0..k {
                qv[2 * (1 + i)] = v0[2 * i];
            }
            for i in 0..n2 {
                qv[2 * (k1 + i) + 1] = v1[2 * i + 1];
            }
            if sqre == 1 {
                qv[2 * n + 1] = v1[2 * n2 + 1];
            }
        }
        // z: α times the last row of V₁, β times the first of V₂
        let (v0, v1) = v.split_at(if vecs { k1 * k1 } else { 2 * k1 });
        let (l1, ld1) = if vecs { (k, k1) } else { (1, 2) };
        let ld2 = if vecs { m2 } else { 2 };
        z[0] = alpha * v0[k * ld1 + l1];
        for i in 0..k {
            z[1 + i] = alpha * v0[i * ld1 + l1];
            dd[1 + i] = d[i];
        }
        for i in 0..n2 {
            z[k1 + i] = beta * v1[i * ld2];
            dd[k1 + i] = d[k1 + i];
            rows[k1 + i] = Rows::Bottom;
        }
        if sqre == 1 {
            zlast = beta * v1[n2 * ld2];
        }
    }
    if orgnrm == T::ZERO {
        // a zero block: any orthogonal U and V
        d.fill(T::ZERO);
        if vecs {
            u[..n * n].copy_from_slice(qu);
        }
        v[..m * ldv].copy_from_slice(qv);
        return;
    }
    for x in z.iter_mut().chain(dd.iter_mut()) {
        *x /= orgnrm;
    }
    zlast /= orgnrm;
    let dmax = dd.iter().fold(T::ZERO, |a, &x| amax(a, x));
    let tol = T::of(8.0) * T::EPSILON * amax(amax(dmax, alpha / orgnrm), beta / orgnrm);
    // fold the null column of B₂ into the first (V's last column becomes the null vector)
    if sqre == 1 {
        let r = hypot(z[0], zlast);
        let (c, s) = if r <= tol {
            z[0] = tol;
            (T::ONE, T::ZERO)
        } else {
            let cs = (z[0] / r, zlast / r);
            z[0] = r;
            cs
        };
        let (lo, hi) = qv.split_at_mut(n * ldv);
        let (c0, cn) = (&mut lo[..ldv], &mut hi[..ldv]);
        for (x, y) in c0[..vsplit].iter_mut().zip(&mut cn[..vsplit]) {
            (*x, *y) = (c * *x, -s * *x);
        }
        for (x, y) in c0[vsplit..].iter_mut().zip(&mut cn[vsplit..]) {
            (*x, *y) = (s * *y, c * *y);
        }
    } else if z[0].abs() <= tol {
        z[0] = tol;
    }
    // the poles other than d₀ = 0 in ascending order
    order.clear();
    order.extend(1..n);
    order.sort_by(|&a, &b| dd[a].partial_cmp(&dd[b]).unwrap_or(Ordering::Equal));
    // deflation, in ascending order of the poles; d₀ and z₀ are always kept
    kept.clear();
    kept.push(0);
    deflated.clear();
    let mut prev: Option<usize> = None;
    for &j in order.iter() {
        if z[j].abs() <= tol {
            deflated.push(j);
            continue;
        }
        if let Some(p) = prev {
            if dd[j] - dd[p] <= tol {
                // the rotation of columns (p, j) of both sides that zeroes z_p; it leaves
                // off-diagonal entries of at most |d_j - d_p| <= tol
                let r = hypot(z[p], z[j]);
                let (c, s) = (z[j] / r, -z[p] / r);
                z[j] = r;
                z[p] = T::ZERO;
                if vecs {
                    rotate(qu, n, p, j, c, s);
                }
                rotate(qv, ldv, p, j, c, s);
                if rows[p] != rows[j] {
                    rows[p] = Rows::Both;
                    rows[j] = Rows::Both;
                }
                deflated.push(p);
                prev = Some(j);
                continue;
            }
            kept.push(p);
        }
        prev = Some(j);
    }
    if let Some(p) = prev {
        kept.push(p);
    }
    // the smallest kept pole apart from d₀ = 0
    let half_tol = tol / T::of(2.0);
    if kept.len() > 1 && dd[kept[1]] <= half_tol {
        dd[kept[1]] = half_tol;
    }
    let kk = kept.len();
    // the secular equation on the kept poles (ascending, the first 0)
    dk.clear();
    dk.extend(kept.iter().map(|&j| dd[j]));
    zk.clear();
    zk.extend(kept.iter().map(|&j| z[j]));
    reset(origin, kk, 0);
    reset(tau, kk, T::ZERO);
    let (dk, zk) = (&dk[..], &zk[..]);
    // (ρ = 1: the equation is `1 + Σ_j z_j² / (d_j² − σ²)`)
    roots::<T, Squares>(dk, zk, T::ONE, origin, tau, parallel);
    let (origin, tau) = (&origin[..], &tau[..]);
    // the rows of the arrowhead's vectors in the order: upper child only, the first
    // (U: the middle row; V: the upper child, or both for sqre = 1), both, lower only;
    // so that each product takes a contiguous run of them
    let rank = |i: usize| match (kept[i], rows[kept[i]]) {
        (0, _) => 1,
        (_, Rows::Top) => 0,
        (_, Rows::Both) => 2,
        (_, Rows::Bottom) => 3,
    };
    pos.clear();
    pos.extend(0..kk);
    pos.sort_by_key(|&i| rank(i));
    let n_top = pos.iter().filter(|&&i| rank(i) == 0).count();
    let n_bottom = pos.iter().filter(|&&i| rank(i) == 3).count();
    kpos.clear();
    kpos.extend(pos.iter().map(|&i| kept[i]));
    // ẑ, then the arrowhead's singular vectors, their rows in the order of `pos`
    reset(zh, kk, T::ZERO);
    // the arrowhead for which the computed roots are exact (squared poles); its scale
    // matters here, unlike the symmetric case: the left vectors' first entry is -1
    z_hat::<T, Squares>(dk, zk, origin, tau, zh, parallel);
    if vecs {
        dpos.clear();
        dpos.extend(pos.iter().map(|&i| dk[i]));
        zpos.clear();
        zpos.extend(pos.iter().map(|&i| zh[i]));
        reset_big(su, kk * kk, T::ZERO);
        reset_big(sv, kk * kk, T::ZERO);
        {
            let (dpos, zpos) = (&dpos[..], &zpos[..]);
            let vectors = |first: usize, cu: &mut [T], cv: &mut [T]| {
                crate::backend::cpu::simd::arch().dispatch(Vectors {
                    d: dk,
                    dpos,
                    zpos,
                    origin,
                    tau,
                    first,
                    p0: n_top,
                    cu,
                    cv,
                });
            };
            if parallel {
                let h = kk / 2;
                let (u0, u1) = su.split_at_mut(h * kk);
                let (v0, v1) = sv.split_at_mut(h * kk);
                rayon::join(|| vectors(0, u0, v0), || vectors(h, u1, v1));
            } else {
                vectors(0, su, sv);
            }
        }
        // the products: U's rows 0..=k (U₁'s and the middle row) from the columns up to the
        // mixed ones, its rows k + 1.. from the mixed and lower ones; V's likewise, its lower
        // rows also from the first column when sqre = 1
        reset_big(ou, n * kk, T::ZERO);
        reset_big(ov, m * kk, T::ZERO);
        {
            let nt = kk - n_bottom;
            let vb = n_top + 1 - sqre;
            let (sum, svm) = (
                MatRef::from_column_major_slice(su, kk, kk),
                MatRef::from_column_major_slice(sv, kk, kk),
            );
            let (out, oub) = MatMut::from_column_major_slice_mut(ou, n, kk).split_at_row_mut(k1);
            let (ovt, ovb) = MatMut::from_column_major_slice_mut(ov, m, kk).split_at_row_mut(k1);
            let [p0, p1, p2, p3] = packs;
            let (qu, qv, kpos) = (&qu[..], &qv[..], &kpos[..]);
            let ub0 = n_top + 1;
            let ut = || product(qu, n, 0..k1, &kpos[..nt], sum.subrows(0, nt), out, p0, par);
            let ub =
                || product(qu, n, k1..n, &kpos[ub0..], sum.subrows(ub0, kk - ub0), oub, p1, par);
            let vt = || product(qv, m, 0..k1, &kpos[..nt], svm.subrows(0, nt), ovt, p2, par);
            let vbt = || product(qv, m, k1..m, &kpos[vb..], svm.subrows(vb, kk - vb), ovb, p3, par);
            if parallel {
                rayon::join(|| rayon::join(ut, ub), || rayon::join(vt, vbt));
            } else {
                ut();
                ub();
                vt();
                vbt();
            }
        }
    } else {
        // V's two rows times the arrowhead's right vectors, without forming them
        g0.clear();
        g0.extend(kept.iter().map(|&j| qv[2 * j]));
        g1.clear();
        g1.extend(kept.iter().map(|&j| qv[2 * j + 1]));
        reset(ov, 2 * kk, T::ZERO);
        let (g0, g1, zh) = (&g0[..], &g1[..], &zh[..]);
        let ends = |first: usize, out: &mut [T]| {
            crate::backend::cpu::simd::arch().dispatch(EndRows {
                d: dk,
                zh,
                origin,
                tau,
                g0,
                g1,
                first,
                out,
            });
        };
        if parallel {
            let (o0, o1) = ov.split_at_mut(2 * (kk / 2));
            rayon::join(|| ends(0, o0), || ends(kk / 2, o1));
        } else {
            ends(0, ov);
        }
    }
    // the singular triples, descending
    all.clear();
    all.extend((0..kk).map(|i| {
        let x = dk[origin[i]];
        let s2 = x * x + tau[i];
        ((if s2 > T::ZERO { s2 } else { T::ZERO }).sqrt(), i)
    }));
    all.extend(deflated.iter().map(|&j| (dd[j], kk + j)));
    all.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(Ordering::Equal));
    for (c, &(s, src)) in all.iter().enumerate() {
        d[c] = s * orgnrm;
        let vc = &mut v[c * ldv..(c + 1) * ldv];
        let (from, j) = if src < kk { (&ov[..], src) } else { (&qv[..], src - kk) };
        vc.copy_from_slice(&from[j * ldv..(j + 1) * ldv]);
        if vecs {
            let uc = &mut u[c * n..(c + 1) * n];
            let (from, j) = if src < kk { (&ou[..], src) } else { (&qu[..], src - kk) };
            uc.copy_from_slice(&from[j * n..(j + 1) * n]);
        }
    }
    if sqre == 1 {
        v[n * ldv..(n + 1) * ldv].copy_from_slice(&qv[n * ldv..]);
    }
}

/// Rotates columns `p` and `j` of the column-major `q` (columns of `len` entries):
/// `(x, y) <- (c x + s y, c y - s x)`.
fn rotate<T: LinalgElem>(q: &mut [T], len: usize, p: usize, j: usize, c: T, s: T) {
    let (lo, hi) = q.split_at_mut(p.max(j) * len);
    let (qp, qj) = if p < j {
        (&mut lo[p * len..(p + 1) * len], &mut hi[..len])
    } else {
        (&mut hi[..len], &mut lo[j * len..(j + 1) * len])
    };
    for (x, y) in qp.iter_mut().zip(qj.iter_mut()) {
        let (a, b) = (*x, *y);
        *x = c * a + s * b;
        *y = c * b - s * a;
    }
}

/// `out = Q[rows, cols] · small`, `Q` column-major with columns of `ld` entries, `cols`
/// the columns to take (gathered into `pack` first), `small` the matching rows of the
/// arrowhead's vectors.
#[allow(clippy::too_many_arguments)]
fn product<T: LinalgElem>(
    q: &[T],
    ld: usize,
    rows: Range<usize>,
    cols: &[usize],
    small: MatRef<'_, T>,
    mut out: MatMut<'_, T>,
    pack: &mut Vec<T>,
    par: Par,
) {
    let (r, c) = (rows.len(), cols.len());
    if c == 0 {
        out.fill(T::ZERO);
        return;
    }
    reset_big(pack, r * c, T::ZERO);
    for (t, &j) in cols.iter().enumerate() {
        pack[t * r..(t + 1) * r].copy_from_slice(&q[j * ld + rows.start..j * ld + rows.end]);
    }
    let pm = MatRef::from_column_major_slice(pack, r, c);
    matmul(out, Accum::Replace, pm, small, T::ONE, par);
}

/// Columns `first..` of the arrowhead's right singular vectors into `cv` and left ones
/// into `cu` (`k` entries each): `v = (ẑ_j / (d_j² - σ_i²))_j` and `u = (d_j v_j)_j`
/// with `-1` in the row of `d_0 = 0` (row `p0`), each normalised, their rows in the
/// permuted order of `dpos` and `zpos` (the poles and `ẑ`).
struct Vectors<'a, T> {
    d: &'a [T],
    dpos: &'a [T],
    zpos: &'a [T],
    origin: &'a [usize],
    tau: &'a [T],
    first: usize,
    p0: usize,
    cu: &'a mut [T],
    cv: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Vectors<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Vectors { d, dpos, zpos, origin, tau, first, p0, cu, cv } = self;
        let k = d.len();
        for (c, (ucol, vcol)) in cu.chunks_exact_mut(k).zip(cv.chunks_exact_mut(k)).enumerate() {
            let i = first + c;
            let (dor, t) = (d[origin[i]], tau[i]);
            let mut sv = [T::ZERO; 4];
            let mut su = [T::ZERO; 4];
            let mut uc = ucol.chunks_exact_mut(4);
            let mut vc = vcol.chunks_exact_mut(4);
            let mut dc = dpos.chunks_exact(4);
            let mut zc = zpos.chunks_exact(4);
            for (((xu, xv), dd), zz) in (&mut uc).zip(&mut vc).zip(&mut dc).zip(&mut zc) {
                for l in 0..4 {
                    let x = zz[l] / ((dd[l] - dor) * (dd[l] + dor) - t);
                    let y = dd[l] * x;
                    xv[l] = x;
                    xu[l] = y;
                    sv[l] += x * x;
                    su[l] += y * y;
                }
            }
            for (((xu, xv), &dd), &zz) in uc
                .into_remainder()
                .iter_mut()
                .zip(vc.into_remainder().iter_mut())
                .zip(dc.remainder())
                .zip(zc.remainder())
            {
                let x = zz / ((dd - dor) * (dd + dor) - t);
                let y = dd * x;
                *xv = x;
                *xu = y;
                sv[0] += x * x;
                su[0] += y * y;
            }
            // row p0 has d = 0, so it added nothing to su
            ucol[p0] = -T::ONE;
            let inv_v = T::ONE / ((sv[0] + sv[1]) + (sv[2] + sv[3])).sqrt();
            let inv_u = T::ONE / ((su[0] + su[1]) + (su[2] + su[3]) + T::ONE).sqrt();
            for x in vcol.iter_mut() {
                *x *= inv_v;
            }
            for x in ucol.iter_mut() {
                *x *= inv_u;
            }
        }
    }
}

/// For the roots `first..first + out.len() / 2`, the two rows `g0`, `g1` (in the kept
/// order) times the arrowhead's right singular vector `v = (ẑ_j / (d_j² - σ_i²))_j`,
/// normalised, into `out` (two entries per root): the first and last rows of the merged
/// `V` without forming the vectors.
struct EndRows<'a, T> {
    d: &'a [T],
    zh: &'a [T],
    origin: &'a [usize],
    tau: &'a [T],
    g0: &'a [T],
    g1: &'a [T],
    first: usize,
    out: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for EndRows<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let EndRows { d, zh, origin, tau, g0, g1, first, out } = self;
        for (c, o) in out.chunks_exact_mut(2).enumerate() {
            let i = first + c;
            let (dor, t) = (d[origin[i]], tau[i]);
            let mut ss = [T::ZERO; 4];
            let mut a0 = [T::ZERO; 4];
            let mut a1 = [T::ZERO; 4];
            let mut dc = d.chunks_exact(4);
            let mut zc = zh.chunks_exact(4);
            let mut c0 = g0.chunks_exact(4);
            let mut c1 = g1.chunks_exact(4);
            for (((dd, zz), x0), x1) in (&mut dc).zip(&mut zc).zip(&mut c0).zip(&mut c1) {
                for l in 0..4 {
                    let x = zz[l] / ((dd[l] - dor) * (dd[l] + dor) - t);
                    ss[l] += x * x;
                    a0[l] += x0[l] * x;
                    a1[l] += x1[l] * x;
                }
            }
            for (((&dd, &zz), &x0), &x1) in
                dc.remainder().iter().zip(zc.remainder()).zip(c0.remainder()).zip(c1.remainder())
            {
                let x = zz / ((dd - dor) * (dd + dor) - t);
                ss[0] += x * x;
                a0[0] += x0 * x;
                a1[0] += x1 * x;
            }
            let inv = T::ONE / ((ss[0] + ss[1]) + (ss[2] + ss[3])).sqrt();
            o[0] = ((a0[0] + a0[1]) + (a0[2] + a0[3])) * inv;
            o[1] = ((a1[0] + a1[1]) + (a1[2] + a1[3])) * inv;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::cpu::linalg::tridiag_qr::tests::rnd;

    /// Bidiagonals `(d, e)` of order `n` and kind `kind`: random; zeros on the diagonal
    /// (the first and last among them); zeros on the superdiagonal (split problems); the
    /// identity (all singular values repeated); ones and tiny couplings; graded
    /// (`10^-i`); random at `1e-150` and at `1e150`; zero; ones everywhere (singular
    /// values `2cos`, many close).
    fn bidiagonal(n: usize, kind: usize, state: &mut u64) -> (Vec<f64>, Vec<f64>) {
        let mut d = vec![0.0; n];
        let mut e = vec![0.0; n.saturating_sub(1)];
        for i in 0..n {
            let (x, y) = (rnd(state), rnd(state));
            let (di, ei) = match kind {
                0 => (x, y),
                1 => (if i % 5 == 2 || i == 0 || i + 1 == n { 0.0 } else { x }, y),
                2 => (x, if i % 7 == 3 || i == n / 2 { 0.0 } else { y }),
                3 => (1.0, 0.0),
                4 => (1.0, 1e-9 * y),
                5 => (10f64.powi(-(i as i32)), y * 10f64.powi(-(i as i32))),
                6 => (x * 1e-150, y * 1e-150),
                7 => (x * 1e150, y * 1e150),
                8 => (0.0, 0.0),
                _ => (1.0, 1.0),
            };
            d[i] = di;
            if i + 1 < n {
                e[i] = ei;
            }
        }
        (d, e)
    }

    /// faer's singular values of the dense `B` (descending).
    fn dense_values(d: &[f64], e: &[f64]) -> Vec<f64> {
        let n = d.len();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            a[i * n + i] = d[i];
            if i + 1 < n {
                a[(i + 1) * n + i] = e[i];
            }
        }
        let am = MatRef::from_column_major_slice(&a, n, n);
        let mut s = am.singular_values().unwrap();
        s.sort_by(|a, b| b.partial_cmp(a).unwrap());
        s
    }

    /// Runs `bidiag_dc` on `(d, e)` in `T` and checks `B = U diag(s) Vᵀ`, `UᵀU = I`,
    /// `VᵀV = I`, `s` descending and non-negative, `s` against faer's dense SVD, and the
    /// values-only run against `s`. Returns `(s, U, V)`.
    fn check<T: LinalgElem>(
        d64: &[f64],
        e64: &[f64],
        parallel: bool,
        what: &str,
    ) -> (Vec<T>, Vec<T>, Vec<T>) {
        let n = d64.len();
        let dt: Vec<T> = d64.iter().map(|&x| T::of(x)).collect();
        let et: Vec<T> = e64.iter().map(|&x| T::of(x)).collect();
        // the matrix as rounded to T
        let (dr, er): (Vec<f64>, Vec<f64>) =
            (dt.iter().map(|x| x.to_f64()).collect(), et.iter().map(|x| x.to_f64()).collect());
        let (mut d, mut e) = (dt.clone(), et.clone());
        let mut u = vec![T::ZERO; n * n];
        let mut v = vec![T::ZERO; n * n];
        let mut w = Work::default();
        assert!(bidiag_dc(&mut d, &mut e, Some((&mut u, &mut v)), parallel, &mut w), "{what}");
        let reference = dense_values(&dr, &er);
        let nrm = reference.first().copied().unwrap_or(0.0);
        let eps = T::EPSILON.to_f64();
        let tol = 4.0 * n as f64 * eps;
        let (uf, vf, sf): (Vec<f64>, Vec<f64>, Vec<f64>) = (
            u.iter().map(|x| x.to_f64()).collect(),
            v.iter().map(|x| x.to_f64()).collect(),
            d.iter().map(|x| x.to_f64()).collect(),
        );
        for i in 0..n {
            assert!(sf[i] >= 0.0, "{what}: s[{i}] = {}", sf[i]);
            assert!(i == 0 || sf[i - 1] >= sf[i], "{what}: not descending at {i}");
            let r = (sf[i] - reference[i]).abs();
            assert!(r <= tol * nrm, "{what}: s[{i}] {} vs {} ({:e})", sf[i], reference[i], r);
        }
        for i in 0..n {
            for j in 0..n {
                let want = if i == j {
                    dr[i]
                } else if j == i + 1 {
                    er[i]
                } else {
                    0.0
                };
                let got: f64 = (0..n).map(|c| uf[c * n + i] * sf[c] * vf[c * n + j]).sum();
                let r = (got - want).abs();
                assert!(r <= tol * nrm, "{what}: B - USVᵀ at ({i}, {j}): {r:e} (‖B‖ {nrm:e})");
            }
        }
        for (name, q) in [("U", &uf), ("V", &vf)] {
            for a in 0..n {
                for b in 0..=a {
                    let g: f64 = (0..n).map(|i| q[a * n + i] * q[b * n + i]).sum();
                    let want = f64::from(u8::from(a == b));
                    assert!((g - want).abs() <= tol, "{what}: {name}ᵀ{name} {g} at ({a}, {b})");
                }
            }
        }
        // values only
        let (mut d2, mut e2) = (dt.clone(), et.clone());
        assert!(bidiag_dc(&mut d2, &mut e2, None, parallel, &mut w), "{what}: values only");
        for i in 0..n {
            let r = (d2[i].to_f64() - sf[i]).abs();
            assert!(r <= tol * nrm, "{what}: values only s[{i}]: {r:e}");
        }
        (d, u, v)
    }

    #[test]
    fn svd_of_random_bidiagonals() {
        let mut state = 5;
        for n in [1, 2, 3, 5, 7, 8, 9, 10, 16, 17, 31, 32, 33, 34, 63, 64, 65, 100, 200, 300] {
            let (d, e) = bidiagonal(n, 0, &mut state);
            check::<f64>(&d, &e, false, &format!("f64 n {n}"));
            if n <= 100 {
                check::<f32>(&d, &e, false, &format!("f32 n {n}"));
            }
        }
    }

    #[test]
    fn svd_of_awkward_bidiagonals() {
        let mut state = 11;
        for n in [1, 2, 8, 9, 33, 65, 100, 160] {
            for kind in 1..10 {
                let (d, e) = bidiagonal(n, kind, &mut state);
                check::<f64>(&d, &e, false, &format!("f64 n {n} kind {kind}"));
                if !matches!(kind, 6 | 7) {
                    check::<f32>(&d, &e, false, &format!("f32 n {n} kind {kind}"));
                }
            }
        }
    }

    #[test]
    fn values_only_at_larger_orders() {
        let mut state = 23;
        for (n, kind) in [(500, 0), (500, 9), (700, 2), (600, 5)] {
            let (d, e) = bidiagonal(n, kind, &mut state);
            let reference = dense_values(&d, &e);
            let (mut s, mut e2) = (d.clone(), e.clone());
            assert!(bidiag_dc(&mut s, &mut e2, None, false, &mut Work::default()));
            let tol = 4.0 * n as f64 * f64::EPSILON * reference[0];
            for i in 0..n {
                assert!(i == 0 || s[i - 1] >= s[i], "n {n} kind {kind}: not descending at {i}");
                let r = (s[i] - reference[i]).abs();
                assert!(r <= tol, "n {n} kind {kind}: s[{i}] {} vs {} ({r:e})", s[i], reference[i]);
            }
        }
    }

    #[test]
    fn non_finite_input_fails() {
        let mut state = 2;
        for n in [1, 5, 40, 100] {
            for (at, x) in [(0, f64::NAN), (n - 1, f64::INFINITY), (n / 2, f64::NEG_INFINITY)] {
                for diag in [true, false] {
                    if !diag && n == 1 {
                        continue;
                    }
                    let (mut d, mut e) = bidiagonal(n, 0, &mut state);
                    if diag {
                        d[at] = x;
                    } else {
                        e[at.min(n - 2)] = x;
                    }
                    let mut u = vec![0.0; n * n];
                    let mut v = vec![0.0; n * n];
                    let mut w = Work::default();
                    let (mut d2, mut e2) = (d.clone(), e.clone());
                    assert!(!bidiag_dc(&mut d, &mut e, Some((&mut u, &mut v)), false, &mut w));
                    assert!(!bidiag_dc(&mut d2, &mut e2, None, false, &mut w));
                }
            }
        }
    }

    #[test]
    fn the_same_bits_on_any_number_of_threads() {
        let mut state = 17;
        for kind in [0, 4, 9] {
            let (d, e) = bidiagonal(300, kind, &mut state);
            let run = |threads: usize, parallel: bool| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let mut w = Work::default();
                    let (mut d1, mut e1) = (d.clone(), e.clone());
                    let mut u = vec![0.0; 300 * 300];
                    let mut v = vec![0.0; 300 * 300];
                    assert!(bidiag_dc(&mut d1, &mut e1, Some((&mut u, &mut v)), parallel, &mut w));
                    let (mut d2, mut e2) = (d.clone(), e.clone());
                    assert!(bidiag_dc(&mut d2, &mut e2, None, parallel, &mut w));
                    let all = d1.iter().chain(&u).chain(&v).chain(&d2);
                    all.map(|x| x.to_bits()).collect::<Vec<u64>>()
                })
            };
            let seq = run(1, false);
            assert!(seq == run(2, true), "kind {kind}: 2 threads");
            assert!(seq == run(3, true), "kind {kind}: 3 threads");
            // and the parallel run is correct
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            pool.install(|| check::<f64>(&d, &e, true, &format!("parallel kind {kind}")));
        }
    }
}
