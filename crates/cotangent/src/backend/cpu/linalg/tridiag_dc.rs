//! The eigenvalues and eigenvectors of a symmetric tridiagonal matrix by divide and
//! conquer (Cuppen; Gu & Eisenstat; the scheme of LAPACK's `dstedc`):
//! - tear `T` at the middle into two tridiagonals and a rank-one term,
//!   `T = diag(T₁, T₂) + |β| w wᵀ` (`β` the coupling entry), and solve the halves
//!   (recursively; blocks of at most [`LEAF`] by our implicit QR iteration);
//! - with `T₁ = Q₁ D₁ Q₁ᵀ`, `T₂ = Q₂ D₂ Q₂ᵀ`, the matrix is `Q (D + ρ z zᵀ) Qᵀ` with
//!   `Q = diag(Q₁, Q₂)`, `z` the last row of `Q₁` and the first of `Q₂` (times the sign
//!   of `β`) over `√2`, `ρ = 2|β|`;
//! - deflation: a component `z_j` negligible against `ρ` keeps `(d_j, q_j)` as an
//!   eigenpair; two nearly equal `d_j` are made exactly equal by a rotation of their
//!   columns of `Q` that zeroes one of their `z` components;
//! - the other eigenvalues are the roots of the secular equation
//!   `1/ρ + Σ_j z_j² / (d_j - λ) = 0`, one in each gap of the sorted `d_j` and one above
//!   the largest, each stored as its nearer pole plus an offset so that every difference
//!   `d_j - λ` is accurate; each is found by the "middle way" rational interpolation of
//!   its two nearest poles (Li), kept inside a bracket by bisection ([`super::secular`],
//!   shared with the bidiagonal SVD);
//! - the eigenvectors of `D + ρ z zᵀ` are `(ẑ_j / (d_j - λ))_j`, normalised, where `ẑ` is
//!   recomputed from the computed roots (Gu & Eisenstat's formula, Löwner's theorem):
//!   `ẑ` is the exact rank-one term for those roots, so the vectors are orthogonal to
//!   working precision however close the roots are;
//! - `Q` times them by matrix products that skip the zero blocks of `Q`.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::eigh::hypot;
use super::secular::{roots, z_hat, Plain};
use super::tridiag_qr::{identity, sort_ascending, tridiag_qr};
use super::LinalgElem;
use crate::backend::cpu::pool::{self, Pooled};

/// Blocks of at most this order are solved by the implicit QR iteration.
pub(super) const LEAF: usize = 32;
/// From this order a merge (its two halves, its roots, its products) uses every thread
/// of the pool when allowed to.
const PAR_MERGE: usize = 128;
/// Which rows of a column of `Q = diag(Q₁, Q₂)` can be nonzero.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rows {
    Top,
    Bottom,
    Both,
}

/// Buffers reused by the merges (of one matrix and across calls): nothing is allocated
/// once they have grown. (Fresh buffers of 100-500 KiB per merge cost page faults on
/// every call: a large share of the time at n = 256.)
#[derive(Default)]
pub(crate) struct Work<T: Pooled> {
    q: Vec<T>,
    z: Vec<T>,
    rows: Vec<Rows>,
    order: Vec<usize>,
    kept: Vec<usize>,
    deflated: Vec<usize>,
    dk: Vec<T>,
    zk: Vec<T>,
    origin: Vec<usize>,
    tau: Vec<T>,
    pos: Vec<usize>,
    zh: Vec<T>,
    dpos: Vec<T>,
    zpos: Vec<T>,
    sv: Vec<T>,
    out: Vec<T>,
    qt: Vec<T>,
    qb: Vec<T>,
    all: Vec<(T, usize)>,
    /// The workspace of the second half when the halves are solved in parallel.
    other: Option<Box<Work<T>>>,
}

impl<T: Pooled> Drop for Work<T> {
    fn drop(&mut self) {
        // the order-n buffers back to the cache: a workspace lives for one call, and the
        // top merge's fresh buffers (27 MB at n = 1024) faulted in on every call (the
        // faults were most of the time of the merge's vectors)
        for v in [&mut self.q, &mut self.sv, &mut self.out, &mut self.qt, &mut self.qb] {
            pool::give(std::mem::take(v));
        }
    }
}

/// The eigenvalues (ascending, into `d`) and eigenvectors (columns of the column-major
/// `m x m` `u`) of the symmetric tridiagonal `(d, e)` (`e[i]` couples `i` and `i + 1`,
/// `e.len() >= m - 1`; entries of order one, finite; `e` is overwritten). False if an
/// iteration did not converge. If `parallel`, large merges run on every thread of the
/// current rayon pool (the caller should be on one of its workers).
pub(super) fn tridiag_dc<T: LinalgElem>(
    d: &mut [T],
    e: &mut [T],
    u: &mut [T],
    parallel: bool,
    w: &mut Work<T>,
) -> bool {
    let m = d.len();
    debug_assert!(u.len() == m * m && e.len() + 1 >= m);
    if m <= LEAF {
        return leaf(d, e, u);
    }
    let n1 = m / 2;
    let n2 = m - n1;
    let beta = e[n1 - 1];
    d[n1 - 1] -= beta.abs();
    d[n1] -= beta.abs();
    let parallel = parallel && m >= PAR_MERGE;
    // the halves' eigenvectors in the first n1² + n2² <= m² entries of u
    let (ok0, ok1) = {
        let (d0, d1) = d.split_at_mut(n1);
        let (e0, e1) = e.split_at_mut(n1);
        let e1 = &mut e1[..n2.saturating_sub(1)];
        let e0 = &mut e0[..n1 - 1];
        let (u0, rest) = u.split_at_mut(n1 * n1);
        let u1 = &mut rest[..n2 * n2];
        if parallel {
            let mut other = w.other.take().unwrap_or_default();
            let r = rayon::join(
                || tridiag_dc(d0, e0, u0, true, w),
                || tridiag_dc(d1, e1, u1, true, &mut other),
            );
            w.other = Some(other);
            r
        } else {
            (tridiag_dc(d0, e0, u0, false, w), tridiag_dc(d1, e1, u1, false, w))
        }
    };
    if !(ok0 && ok1) {
        return false;
    }
    merge(d, n1, beta, u, parallel, w);
    true
}

/// A block of at most [`LEAF`]: the implicit QR iteration from `u = I`, then sorted.
fn leaf<T: LinalgElem>(d: &mut [T], e: &mut [T], u: &mut [T]) -> bool {
    let m = d.len();
    identity(u, m);
    let mut buf = [T::ZERO; 4 * LEAF];
    let (c, rest) = buf.split_at_mut(LEAF);
    let (s, rest) = rest.split_at_mut(LEAF);
    let (pc, ps) = rest.split_at_mut(LEAF);
    let mut ee = [T::ZERO; LEAF];
    ee[..m - 1].copy_from_slice(&e[..m - 1]);
    if !tridiag_qr(d, &mut ee[..m], Some(u), &mut c[..m], &mut s[..m], &mut pc[..m], &mut ps[..m]) {
        return false;
    }
    sort_ascending(d, Some(u));
    true
}

/// `v` cleared and resized to `n` copies of `x`.
pub(super) fn reset<X: Copy>(v: &mut Vec<X>, n: usize, x: X) {
    v.clear();
    v.resize(n, x);
}

/// [`reset`] for the large buffers: room made from the buffer cache.
pub(super) fn reset_big<T: Pooled>(v: &mut Vec<T>, n: usize, x: T) {
    pool::reserve(v, n);
    reset(v, n, x);
}

/// The merge: `d[..n1]`, `d[n1..]` hold the (ascending) eigenvalues of the torn halves
/// and `u[..n1²]`, `u[n1²..n1² + n2²]` their eigenvectors (column-major); `beta` the
/// coupling entry. Writes the eigenvalues of the whole (ascending) into `d` and its
/// eigenvectors into `u`.
fn merge<T: LinalgElem>(
    d: &mut [T],
    n1: usize,
    beta: T,
    u: &mut [T],
    parallel: bool,
    w: &mut Work<T>,
) {
    let m = d.len();
    let n2 = m - n1;
    let par = if parallel { Par::rayon(0) } else { Par::Seq };
    let half = T::of(0.5).sqrt();
    let neg = beta < T::ZERO;
    let rho = (beta + beta).abs();
    // Q = diag(Q₁, Q₂) and z
    let Work {
        q,
        z,
        rows,
        order,
        kept,
        deflated,
        dk,
        zk,
        origin,
        tau,
        pos,
        zh,
        dpos,
        zpos,
        sv,
        out,
        qt,
        qb,
        all,
        ..
    } = w;
    {
        let (u0, u1) = u.split_at(n1 * n1);
        reset_big(q, m * m, T::ZERO);
        reset(z, m, T::ZERO);
        reset(rows, m, Rows::Top);
        for j in 0..n1 {
            q[j * m..j * m + n1].copy_from_slice(&u0[j * n1..(j + 1) * n1]);
            z[j] = u0[j * n1 + n1 - 1] * half;
        }
        for j in 0..n2 {
            let col = n1 + j;
            q[col * m + n1..(col + 1) * m].copy_from_slice(&u1[j * n2..(j + 1) * n2]);
            let x = u1[j * n2] * half;
            z[col] = if neg { -x } else { x };
            rows[col] = Rows::Bottom;
        }
    }
    // the poles in ascending order (the halves are each ascending)
    order.clear();
    {
        let (mut i, mut j) = (0, n1);
        while i < n1 || j < m {
            if j == m || (i < n1 && d[i] <= d[j]) {
                order.push(i);
                i += 1;
            } else {
                order.push(j);
                j += 1;
            }
        }
    }
    let dmax = d.iter().fold(T::ZERO, |a, &x| if x.abs() > a { x.abs() } else { a });
    let zmax = z.iter().fold(T::ZERO, |a, &x| if x.abs() > a { x.abs() } else { a });
    let tol = T::of(8.0) * T::EPSILON * if dmax > zmax { dmax } else { zmax };
    // deflation, in ascending order of the poles
    kept.clear();
    deflated.clear();
    if rho * zmax <= tol {
        deflated.extend_from_slice(order);
    } else {
        let mut prev: Option<usize> = None;
        for &j in order.iter() {
            if rho * z[j].abs() <= tol {
                deflated.push(j);
                continue;
            }
            if let Some(p) = prev {
                let r = hypot(z[p], z[j]);
                let (c, s) = (z[j] / r, -z[p] / r);
                let t = d[j] - d[p];
                if (t * c * s).abs() <= tol {
                    // the rotation in the plane (p, j) that zeroes z_p; drop the
                    // off-diagonal t c s it leaves
                    z[j] = r;
                    z[p] = T::ZERO;
                    let (lo, hi) = q.split_at_mut(p.max(j) * m);
                    let (qp, qj) = if p < j {
                        (&mut lo[p * m..(p + 1) * m], &mut hi[..m])
                    } else {
                        (&mut hi[..m], &mut lo[j * m..(j + 1) * m])
                    };
                    for (x, y) in qp.iter_mut().zip(qj.iter_mut()) {
                        let (a, b) = (*x, *y);
                        *x = c * a + s * b;
                        *y = c * b - s * a;
                    }
                    let (dp, dj) = (d[p], d[j]);
                    d[p] = dp * c * c + dj * s * s;
                    d[j] = dp * s * s + dj * c * c;
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
    }
    let k = kept.len();
    // the secular equation on the kept poles (ascending)
    dk.clear();
    dk.extend(kept.iter().map(|&j| d[j]));
    zk.clear();
    zk.extend(kept.iter().map(|&j| z[j]));
    reset(origin, k, 0);
    reset(tau, k, T::ZERO);
    let (dk, zk) = (&dk[..], &zk[..]);
    if k > 0 {
        roots::<T, Plain>(dk, zk, rho, origin, tau, parallel);
    }
    let (origin, tau) = (&origin[..], &tau[..]);
    // the columns of Q for the kept poles: those with rows in the top half only, both,
    // the bottom half only (in that order), so that the products skip Q's zero blocks
    let rank = |r: Rows| match r {
        Rows::Top => 0,
        Rows::Both => 1,
        Rows::Bottom => 2,
    };
    pos.clear();
    pos.extend(0..k);
    pos.sort_by_key(|&i| rank(rows[kept[i]]));
    let n_top = pos.iter().filter(|&&i| rows[kept[i]] == Rows::Top).count();
    let n_bottom = pos.iter().filter(|&&i| rows[kept[i]] == Rows::Bottom).count();
    // the eigenvectors of D + ρ z zᵀ, their rows in the order of `pos`
    reset(zh, k, T::ZERO);
    if k > 0 {
        z_hat::<T, Plain>(dk, zk, origin, tau, zh, parallel);
    }
    dpos.clear();
    dpos.extend(pos.iter().map(|&i| dk[i]));
    zpos.clear();
    zpos.extend(pos.iter().map(|&i| zh[i]));
    reset_big(sv, k * k, T::ZERO);
    if k > 0 {
        let (dpos, zpos) = (&dpos[..], &zpos[..]);
        let vectors = |first: usize, cols: &mut [T]| {
            crate::backend::cpu::simd::arch().dispatch(Vectors {
                d: dk,
                dpos,
                zpos,
                origin,
                tau,
                first,
                cols,
            });
        };
        if parallel {
            let (c0, c1) = sv.split_at_mut((k / 2) * k);
            rayon::join(|| vectors(0, c0), || vectors(k / 2, c1));
        } else {
            vectors(0, sv);
        }
    }
    // Q's kept columns times them: rows 0..n1 from the top and mixed columns, rows
    // n1..m from the mixed and bottom ones
    reset_big(out, m * k, T::ZERO);
    if k > 0 {
        let nt = k - n_bottom;
        let nb = k - n_top;
        reset_big(qt, n1 * nt, T::ZERO);
        reset_big(qb, n2 * nb, T::ZERO);
        for (r, &i) in pos.iter().enumerate() {
            let col = &q[kept[i] * m..(kept[i] + 1) * m];
            if r < nt {
                qt[r * n1..(r + 1) * n1].copy_from_slice(&col[..n1]);
            }
            if r >= n_top {
                let r = r - n_top;
                qb[r * n2..(r + 1) * n2].copy_from_slice(&col[n1..]);
            }
        }
        let svm = MatRef::from_column_major_slice(sv, k, k);
        let om = MatMut::from_column_major_slice_mut(out, m, k);
        let (ot, ob) = om.split_at_row_mut(n1);
        let qtm = MatRef::from_column_major_slice(qt, n1, nt);
        let qbm = MatRef::from_column_major_slice(qb, n2, nb);
        if parallel {
            rayon::join(
                || matmul(ot, Accum::Replace, qtm, svm.subrows(0, nt), T::ONE, par),
                || matmul(ob, Accum::Replace, qbm, svm.subrows(n_top, nb), T::ONE, par),
            );
        } else {
            matmul(ot, Accum::Replace, qtm, svm.subrows(0, nt), T::ONE, par);
            matmul(ob, Accum::Replace, qbm, svm.subrows(n_top, nb), T::ONE, par);
        }
    }
    // the eigenpairs, ascending
    all.clear();
    all.extend((0..k).map(|i| (dk[origin[i]] + tau[i], i)));
    all.extend(deflated.iter().map(|&j| (d[j], k + j)));
    all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    for (c, &(wv, src)) in all.iter().enumerate() {
        d[c] = wv;
        let col = &mut u[c * m..(c + 1) * m];
        if src < k {
            col.copy_from_slice(&out[src * m..(src + 1) * m]);
        } else {
            let j = src - k;
            col.copy_from_slice(&q[j * m..(j + 1) * m]);
        }
    }
}

/// Columns `first..` of the eigenvectors of `D + ρ z zᵀ` into `cols` (`k` entries each):
/// `(ẑ_j / (d_j - λ_i))_j`, normalised, with their rows in the permuted order of `dpos`
/// and `zpos` (the poles and `ẑ`).
struct Vectors<'a, T> {
    d: &'a [T],
    dpos: &'a [T],
    zpos: &'a [T],
    origin: &'a [usize],
    tau: &'a [T],
    first: usize,
    cols: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Vectors<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Vectors { d, dpos, zpos, origin, tau, first, cols } = self;
        let k = d.len();
        for (c, col) in cols.chunks_exact_mut(k).enumerate() {
            let i = first + c;
            let (dor, t) = (d[origin[i]], tau[i]);
            let mut ss = [T::ZERO; 4];
            let mut cc = col.chunks_exact_mut(4);
            let mut dc = dpos.chunks_exact(4);
            let mut zc = zpos.chunks_exact(4);
            for ((x, dd), zz) in (&mut cc).zip(&mut dc).zip(&mut zc) {
                for l in 0..4 {
                    let v = zz[l] / ((dd[l] - dor) - t);
                    x[l] = v;
                    ss[l] += v * v;
                }
            }
            for ((x, &dd), &zz) in
                cc.into_remainder().iter_mut().zip(dc.remainder()).zip(zc.remainder())
            {
                let v = zz / ((dd - dor) - t);
                *x = v;
                ss[0] += v * v;
            }
            let inv = T::ONE / ((ss[0] + ss[1]) + (ss[2] + ss[3])).sqrt();
            for x in col.iter_mut() {
                *x *= inv;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::cpu::linalg::tridiag_qr::tests::rnd;

    /// Tridiagonals of kind `kind`: random; Wilkinson's W⁺ (pairs of nearly equal
    /// eigenvalues); glued Wilkinson blocks (clusters of many); constant (eigenvalues
    /// 2cos(kπ/(n+1)) with many close); graded; with zero couplings; all equal diagonal
    /// and tiny couplings.
    fn tridiagonal(n: usize, kind: usize, state: &mut u64) -> (Vec<f64>, Vec<f64>) {
        let mut d = vec![0.0; n];
        let mut e = vec![0.0; n];
        for i in 0..n {
            let (x, y) = (rnd(state), rnd(state));
            (d[i], e[i]) = match kind {
                0 => (x, y),
                1 => {
                    (((i as f64) - (n / 2) as f64).abs() / (n as f64 / 8.0), 1.0 / (n as f64 / 8.0))
                }
                2 => (
                    (((i % 21) as f64) - 10.0).abs() / 10.0,
                    if i % 21 == 20 { 1e-14 } else { 0.1 },
                ),
                3 => (0.0, 0.5),
                4 => (
                    x * 10f64.powf(-8.0 * i as f64 / n as f64),
                    y * 10f64.powf(-8.0 * i as f64 / n as f64),
                ),
                5 => (x, if i % 7 == 3 { 0.0 } else { y }),
                _ => (0.25, 1e-9 * y),
            };
        }
        e[n - 1] = 0.0;
        (d, e)
    }

    fn check<T: LinalgElem>(d64: &[f64], e64: &[f64], parallel: bool, what: &str) {
        let n = d64.len();
        let mut d: Vec<T> = d64.iter().map(|&x| T::of(x)).collect();
        let mut e: Vec<T> = e64.iter().map(|&x| T::of(x)).collect();
        let mut u = vec![T::ZERO; n * n];
        assert!(tridiag_dc(&mut d, &mut e, &mut u, parallel, &mut Work::default()), "{what}");
        // against the QR iteration's eigenvalues
        let mut dq: Vec<T> = d64.iter().map(|&x| T::of(x)).collect();
        let mut eq: Vec<T> = e64.iter().map(|&x| T::of(x)).collect();
        let mut z = vec![T::ZERO; n * n];
        identity(&mut z, n);
        let mut sc = vec![T::ZERO; 4 * n];
        let (c, rest) = sc.split_at_mut(n);
        let (s, rest) = rest.split_at_mut(n);
        let (pc, ps) = rest.split_at_mut(n);
        assert!(tridiag_qr(&mut dq, &mut eq, Some(&mut z), c, s, pc, ps));
        sort_ascending(&mut dq, Some(&mut z));
        let eps = T::EPSILON.to_f64();
        let norm = d64.iter().chain(e64).fold(0f64, |m, x| m.max(x.abs())) * 3.0;
        for i in 0..n {
            assert!(i == 0 || d[i - 1] <= d[i], "{what}: not ascending");
            let (x, y) = (d[i].to_f64(), dq[i].to_f64());
            assert!((x - y).abs() <= 8.0 * n as f64 * eps * norm, "{what} {i}: {x} vs {y}");
        }
        for j in 0..n {
            let col = &u[j * n..(j + 1) * n];
            for i in 0..n {
                let mut tv = d64[i] * col[i].to_f64();
                if i > 0 {
                    tv += e64[i - 1] * col[i - 1].to_f64();
                }
                if i + 1 < n {
                    tv += e64[i] * col[i + 1].to_f64();
                }
                let r = tv - col[i].to_f64() * d[j].to_f64();
                assert!(
                    r.abs() <= 8.0 * n as f64 * eps * norm,
                    "{what}: residual {r:e} ({i}, {j})"
                );
            }
            for k in 0..=j {
                let g: f64 = (0..n).map(|i| u[k * n + i].to_f64() * u[j * n + i].to_f64()).sum();
                let want = f64::from(u8::from(k == j));
                assert!((g - want).abs() <= 8.0 * n as f64 * eps, "{what}: VᵀV {g} ({k}, {j})");
            }
        }
    }

    #[test]
    fn eigenpairs_of_awkward_tridiagonals() {
        let mut state = 3;
        for n in [33, 40, 64, 65, 100, 150, 257] {
            for kind in 0..7 {
                let (d, e) = tridiagonal(n, kind, &mut state);
                check::<f64>(&d, &e, false, &format!("f64 n {n} kind {kind}"));
                check::<f32>(&d, &e, false, &format!("f32 n {n} kind {kind}"));
            }
        }
    }

    #[test]
    fn merges_on_every_thread() {
        let mut state = 9;
        for kind in 0..7 {
            let (d, e) = tridiagonal(300, kind, &mut state);
            check::<f64>(&d, &e, true, &format!("parallel kind {kind}"));
        }
    }
}
