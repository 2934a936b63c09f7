//! Householder bidiagonalisation of one `m x n` matrix (`m >= n`), `A = Q B Pᵀ` with `B`
//! upper bidiagonal, blocked as LAPACK's `dgebrd`: panels of [`NB`] columns (and rows)
//! reduced with `dlabrd`'s deferred updates (each column and row of the panel brought up
//! to date from the panel's earlier reflectors, `X` and `Y`), then one update
//! `A₂₂ −= U Yᵀ + X Vᵀ` of the trailing matrix per panel. Half the work is the two
//! matrix-vector products of each step with the trailing matrix (`A₂₂ᵀ u` and `A₂₂ v`);
//! they and the trailing updates run in [`PARTS`] column ranges of equal width, one task
//! each over the threads.
//!
//! Why not faer's `bidiag_in_place`: it is unblocked (each column's rank-two update of
//! the whole trailing matrix fused with the next product: each entry read and written
//! twice per column) and did not scale on two threads: on a two-core Intel AVX-512 host
//! at n = 1024 two threads were slower than one. Here the products only read the
//! trailing matrix, the rank-`2 NB` updates are faer's sequential matrix products, and
//! each column range stays with its task from one step to the next.
//!
//! The output is faer's: the diagonal and superdiagonal of `B` in place, the essential
//! parts of the left reflectors below the diagonal and of the right reflectors right of
//! the superdiagonal, and their block factors in `hl` and `hr` (as
//! [`faer::linalg::svd::bidiag::bidiag_in_place`] leaves them, for its blocked
//! application of `Q` and `P`). The ranges depend on `m` and `n` alone, so the result
//! does not depend on the number of threads.

use faer::linalg::householder::upgrade_householder_factor;
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::tridiag_split::Reflector;
use super::LinalgElem;
use crate::backend::cpu::par::{run_tasks, Parts};

/// Panel width (LAPACK's `dgebrd` block size).
const NB: usize = 32;
/// Column ranges of each product and update (a constant: the bits of the result do not
/// depend on the thread count).
const PARTS: usize = 4;
/// Work `m n` of the matrix from which its products and updates run over the threads,
/// and width of the trailing matrix below which they run on the calling thread.
const PAR_MN: usize = 320 * 320;
const PAR_W: usize = 128;
/// Columns per matrix product of a trailing update.
const BLOCK: usize = 64;

/// Workspace of [`bidiag_split`], reused across calls.
#[derive(Default)]
pub(crate) struct Scratch<T> {
    /// `X`: `m x NB`, column-major.
    x: Vec<T>,
    /// `Y`: `n x NB`, column-major.
    y: Vec<T>,
    /// The panel's right reflectors, each a contiguous row of `n` (`NB x n` row-major),
    /// their unit heads in place and zeros left of them.
    vr: Vec<T>,
    /// One partial product `A₂₂ v` per column range: `PARTS x m`.
    zx: Vec<T>,
    /// The current row, contiguous.
    row: Vec<T>,
    /// The panel's rows as they were at its start, `NB x n` row-major.
    rp: Vec<T>,
    /// Small products with the panel's reflectors.
    t: Vec<T>,
}

/// `[q₀ = lo, …, q_PARTS = hi]`: the columns `lo..hi` cut into [`PARTS`] ranges of about
/// equal width.
fn cuts(lo: usize, hi: usize) -> [usize; PARTS + 1] {
    let mut c = [hi; PARTS + 1];
    for (t, q) in c.iter_mut().enumerate().take(PARTS) {
        *q = lo + (hi - lo) * t / PARTS;
    }
    c
}

/// Bidiagonalises the `m x n` column-major `a` (`m >= n >= 1`) into faer's storage (see
/// the module's documentation); `hl` is `bs x n` and `hr` is `bs x (n − 1)`, column-major.
/// With `threads`, the products and updates of a large enough matrix run over the threads
/// of the pool (the result is the same).
pub(crate) fn bidiag_split<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    hl: &mut [T],
    hr: &mut [T],
    bs: usize,
    threads: bool,
    sc: &mut Scratch<T>,
) {
    debug_assert!(m >= n && n >= 1 && a.len() == m * n);
    debug_assert!(hl.len() == bs * n && hr.len() == bs * (n - 1));
    for (v, len) in
        [(&mut sc.x, m * NB), (&mut sc.y, n * NB), (&mut sc.vr, n * NB), (&mut sc.rp, n * NB)]
    {
        v.clear();
        v.resize(len, T::ZERO);
    }
    sc.zx.resize(PARTS * m, T::ZERO);
    sc.row.resize(n, T::ZERO);
    sc.t.resize(4 * NB, T::ZERO);
    let par = threads && m * n >= PAR_MN;
    let mut j0 = 0;
    while j0 < n {
        let wd = NB.min(n - j0);
        // the panel's rows right of the diagonal, row-major (each row then read whole;
        // in place it is one cache line per entry)
        for q in j0 + 1..n {
            for (r, &x) in a[q * m + j0..q * m + j0 + wd].iter().enumerate() {
                sc.rp[r * n + q] = x;
            }
        }
        for i in 0..wd {
            let c = j0 + i;
            let Some(tq) = left_step(a, m, n, j0, i, hl, bs, sc) else {
                // the last column: no right reflector, nothing to update
                continue;
            };
            y_column(a, m, n, j0, i, tq, par, sc);
            let tp = right_step(a, m, n, j0, i, hr, bs, sc);
            x_column(a, m, n, j0, i, tp, par, sc);
            // the head of the left reflector (1 meanwhile) back to B's diagonal entry
            a[c * m + c] = sc.t[3 * NB];
        }
        // the right reflectors' essential parts into the panel's rows
        for q in j0 + 2..n {
            let rows = wd.min(q - j0 - 1);
            for (r, x) in a[q * m + j0..q * m + j0 + rows].iter_mut().enumerate() {
                *x = sc.vr[r * n + q];
            }
        }
        let j1 = j0 + wd;
        trailing_update(a, m, n, j0, j1, par, sc);
        j0 = j1;
    }
    block_factors(a, m, n, hl, hr, bs);
}

/// Column `c = j0 + i` brought up to date, its left reflector made (`B`'s diagonal entry
/// kept in `t[3 NB]`, the reflector's head set to 1 in `a`) and its `τ` stored in `hl`;
/// LAPACK's `τ` returned, `None` for the last column (its diagonal entry left in place).
#[allow(clippy::too_many_arguments)]
fn left_step<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    hl: &mut [T],
    bs: usize,
    sc: &mut Scratch<T>,
) -> Option<T> {
    let c = j0 + i;
    if i > 0 {
        // a[c.., c] −= U[c.., ..i] Y[c, ..i]ᵀ + X[c.., ..i] V[..i, c]
        let (left, right) = a.split_at_mut(c * m);
        let dst = &mut right[c..m];
        crate::backend::cpu::simd::arch().dispatch(UpdateColumn {
            dst,
            left,
            m,
            n,
            j0,
            i,
            row: c,
            x: &sc.x,
            y: &sc.y,
            vr: &sc.vr,
        });
    }
    let col = &mut a[c * m + c..(c + 1) * m];
    let (head, tail) = col.split_first_mut()?;
    let tau_f = crate::backend::cpu::simd::arch().dispatch(Reflector { head, tail });
    hl[c * bs] = tau_f;
    if c + 1 == n {
        return None;
    }
    sc.t[3 * NB] = *head;
    *head = T::ONE;
    Some(T::ONE / tau_f)
}

/// `dst −= U[row.., ..i] Y[row, ..i]ᵀ + X[row.., ..i] V[..i, row]` for a column `row` of
/// the panel (`left` holds `a`'s columns before it: `U`'s are `j0..j0 + i`).
struct UpdateColumn<'a, T> {
    dst: &'a mut [T],
    left: &'a [T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    row: usize,
    x: &'a [T],
    y: &'a [T],
    vr: &'a [T],
}

impl<T: LinalgElem> pulp::WithSimd for UpdateColumn<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let UpdateColumn { dst, left, m, n, j0, i, row: c, x, y, vr } = self;
        let mut p = 0;
        while p < i {
            let u0 = &left[(j0 + p) * m + c..(j0 + p + 1) * m];
            let x0 = &x[p * m + c..(p + 1) * m];
            T::axpy2(simd, dst, u0, x0, -y[p * n + c], -vr[p * n + c]);
            p += 1;
        }
    }
}

/// Column `i` of `Y` (rows `c + 1..`, `c = j0 + i`), with `u = a[c.., c]` (head 1):
/// `y = τ (A[c.., c+1..]ᵀ u − Y (Uᵀ u) − Vᵀ (Xᵀ u))` over the panel's earlier columns.
#[allow(clippy::too_many_arguments)]
fn y_column<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    tau: T,
    par: bool,
    sc: &mut Scratch<T>,
) {
    let c = j0 + i;
    let u = &a[c * m + c..(c + 1) * m];
    let q = cuts(c + 1, n);
    {
        let ycol = &mut sc.y[i * n + c + 1..(i + 1) * n];
        let at = q.map(|x| x - (c + 1));
        for_ranges(ycol, at, par && n - c > PAR_W, |t, dst| {
            crate::backend::cpu::simd::arch().dispatch(Dots { a, m, c, u, q0: q[t], dst });
        });
    }
    crate::backend::cpu::simd::arch().dispatch(YFinish { a, m, n, j0, i, tau, sc });
}

/// `dst[k] = a[c.., q0 + k]ᵀ u`, two columns at a time.
struct Dots<'a, T> {
    a: &'a [T],
    m: usize,
    c: usize,
    u: &'a [T],
    q0: usize,
    dst: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Dots<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let Dots { a, m, c, u, q0, dst } = self;
        let col = |q: usize| &a[q * m + c..(q + 1) * m];
        let mut k = 0;
        while k + 1 < dst.len() {
            let (s0, s1) = T::dot2(simd, col(q0 + k), col(q0 + k + 1), u);
            dst[k] = s0;
            dst[k + 1] = s1;
            k += 2;
        }
        if k < dst.len() {
            dst[k] = T::dot(simd, col(q0 + k), u);
        }
    }
}

/// The rest of [`y_column`] after the product.
struct YFinish<'a, T> {
    a: &'a [T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    tau: T,
    sc: &'a mut Scratch<T>,
}

impl<T: LinalgElem> pulp::WithSimd for YFinish<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let YFinish { a, m, n, j0, i, tau, sc } = self;
        let c = j0 + i;
        let u = &a[c * m + c..(c + 1) * m];
        let (t1, rest) = sc.t.split_at_mut(NB);
        let t2 = &mut rest[..NB];
        for p in 0..i {
            let (s1, s2) = T::dot2(
                simd,
                &a[(j0 + p) * m + c..(j0 + p + 1) * m],
                &sc.x[p * m + c..(p + 1) * m],
                u,
            );
            t1[p] = -s1;
            t2[p] = -s2;
        }
        let (yl, yr) = sc.y.split_at_mut(i * n);
        let ycol = &mut yr[c + 1..n];
        for p in 0..i {
            T::axpy2(
                simd,
                ycol,
                &yl[p * n + c + 1..(p + 1) * n],
                &sc.vr[p * n + c + 1..(p + 1) * n],
                t1[p],
                t2[p],
            );
        }
        for y in ycol.iter_mut() {
            *y *= tau;
        }
    }
}

/// Row `c = j0 + i` (columns `c + 1..`, from the panel's copy `sc.rp`) brought up to date
/// into `sc.row`, its right reflector made (`B`'s superdiagonal entry written to `a`, the
/// reflector with its unit head into `sc.vr`'s row `i`), its `τ` stored in `hr`; LAPACK's
/// `τ` returned.
#[allow(clippy::too_many_arguments)]
fn right_step<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    hr: &mut [T],
    bs: usize,
    sc: &mut Scratch<T>,
) -> T {
    let c = j0 + i;
    let row = &mut sc.row[c + 1..n];
    row.copy_from_slice(&sc.rp[i * n + c + 1..(i + 1) * n]);
    // row −= Y[c+1.., ..=i] U[c, ..=i]ᵀ + V[..i, c+1..]ᵀ X[c, ..i]ᵀ (U[c, i] = 1)
    for p in 0..i {
        let (ucp, xcp) = (a[(j0 + p) * m + c], sc.x[p * m + c]);
        let yp = &sc.y[p * n + c + 1..(p + 1) * n];
        let vp = &sc.vr[p * n + c + 1..(p + 1) * n];
        for ((r, &y), &v) in row.iter_mut().zip(yp).zip(vp) {
            *r -= y * ucp + v * xcp;
        }
    }
    for (r, &y) in row.iter_mut().zip(&sc.y[i * n + c + 1..(i + 1) * n]) {
        *r -= y;
    }
    let Some((head, tail)) = row.split_first_mut() else {
        return T::ZERO; // (c + 1 < n: not reached)
    };
    let tau_f = crate::backend::cpu::simd::arch().dispatch(Reflector { head, tail });
    hr[c * bs] = tau_f;
    // (the essential part goes to `a` from `vr` at the end of the panel)
    a[(c + 1) * m + c] = *head;
    *head = T::ONE;
    let vrow = &mut sc.vr[i * n..(i + 1) * n];
    vrow[..c + 1].fill(T::ZERO);
    vrow[c + 1..].copy_from_slice(row);
    T::ONE / tau_f
}

/// Column `i` of `X` (rows `c + 1..`, `c = j0 + i`), with `v` the right reflector of row
/// `c` (columns `c + 1..`): `x = τ (A[c+1.., c+1..] v − U (Yᵀ v) − X (V v))` over the
/// panel's columns (`U` and `Y` up to `i`, `X` and `V` before it).
#[allow(clippy::too_many_arguments)]
fn x_column<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    tau: T,
    par: bool,
    sc: &mut Scratch<T>,
) {
    let c = j0 + i;
    let c1 = c + 1;
    let rows = m - c1;
    let q = cuts(c1, n);
    let v = &sc.row[c1..n];
    {
        let at: [usize; PARTS + 1] = core::array::from_fn(|t| t * rows);
        for_ranges(&mut sc.zx[..PARTS * rows], at, par && n - c1 >= PAR_W, |t, z| {
            crate::backend::cpu::simd::arch().dispatch(Axpys {
                a,
                m,
                c1,
                v,
                q0: q[t] - c1,
                q1: q[t + 1] - c1,
                z,
            });
        });
    }
    let (xl, xr) = sc.x.split_at_mut(i * m);
    let xcol = &mut xr[c1..m];
    crate::backend::cpu::simd::arch().dispatch(XFinish {
        a,
        m,
        n,
        j0,
        i,
        tau,
        zx: &sc.zx[..PARTS * rows],
        xl,
        xcol,
        y: &sc.y,
        vr: &sc.vr,
        v: &sc.row[c1..n],
        t: &mut sc.t,
    });
}

/// `z = a[c1.., c1 + q0..c1 + q1] v[q0..q1]`, two columns at a time.
struct Axpys<'a, T> {
    a: &'a [T],
    m: usize,
    c1: usize,
    v: &'a [T],
    q0: usize,
    q1: usize,
    z: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for Axpys<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let Axpys { a, m, c1, v, q0, q1, z } = self;
        z.fill(T::ZERO);
        let col = |q: usize| &a[(c1 + q) * m + c1..(c1 + q + 1) * m];
        let mut q = q0;
        while q + 1 < q1 {
            T::axpy2(simd, z, col(q), col(q + 1), v[q], v[q + 1]);
            q += 2;
        }
        if q < q1 {
            let x = col(q);
            T::axpy2(simd, z, x, x, v[q], T::ZERO);
        }
    }
}

/// The rest of [`x_column`] after the product: the partial products summed (range by
/// range, in order), the panel's corrections, the scaling.
struct XFinish<'a, T> {
    a: &'a [T],
    m: usize,
    n: usize,
    j0: usize,
    i: usize,
    tau: T,
    zx: &'a [T],
    /// `X`'s columns before `i`.
    xl: &'a [T],
    /// Rows `c + 1..` of `X`'s column `i`.
    xcol: &'a mut [T],
    y: &'a [T],
    vr: &'a [T],
    v: &'a [T],
    t: &'a mut [T],
}

impl<T: LinalgElem> pulp::WithSimd for XFinish<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let XFinish { a, m, n, j0, i, tau, zx, xl, xcol, y, vr, v, t } = self;
        let c1 = j0 + i + 1;
        let rows = m - c1;
        xcol.copy_from_slice(&zx[..rows]);
        for p in 1..PARTS {
            for (x, &z) in xcol.iter_mut().zip(&zx[p * rows..(p + 1) * rows]) {
                *x += z;
            }
        }
        let (t3, rest) = t.split_at_mut(NB);
        let t4 = &mut rest[..NB];
        for p in 0..=i {
            let yp = &y[p * n + c1..(p + 1) * n];
            if p < i {
                let (s3, s4) = T::dot2(simd, yp, &vr[p * n + c1..(p + 1) * n], v);
                t3[p] = -s3;
                t4[p] = -s4;
            } else {
                t3[p] = -T::dot(simd, yp, v);
            }
        }
        let ucol = |p: usize| &a[(j0 + p) * m + c1..(j0 + p + 1) * m];
        let mut p = 0;
        while p < i {
            T::axpy2(simd, xcol, ucol(p), &xl[p * m + c1..(p + 1) * m], t3[p], t4[p]);
            p += 1;
        }
        let ui = ucol(i);
        T::axpy2(simd, xcol, ui, ui, t3[i], T::ZERO);
        for x in xcol.iter_mut() {
            *x *= tau;
        }
    }
}

/// `A[j1.., j1..] −= U Y[j1.., ..]ᵀ + X[j1.., ..] V[.., j1..]` with `U = a[j1.., j0..j1]`,
/// by column ranges, each in blocks of [`BLOCK`] columns, each block two sequential faer
/// products.
fn trailing_update<T: LinalgElem>(
    a: &mut [T],
    m: usize,
    n: usize,
    j0: usize,
    j1: usize,
    par: bool,
    sc: &Scratch<T>,
) {
    if j1 >= n {
        return;
    }
    let wd = j1 - j0;
    let rows = m - j1;
    let (left, right) = a.split_at_mut(j1 * m);
    let left: &[T] = left;
    let um = MatRef::from_column_major_slice_with_stride(&left[j0 * m + j1..], rows, wd, m);
    let xm = MatRef::from_column_major_slice_with_stride(&sc.x[j1..], rows, wd, m);
    let ym = MatRef::from_column_major_slice_with_stride(&sc.y[..], n, wd, n);
    // V as `n x wd` column-major (its rows are `vr`'s contiguous rows), transposed in use
    let vm = MatRef::from_column_major_slice_with_stride(&sc.vr[..], n, wd, n);
    let q = cuts(j1, n);
    let at = q.map(|x| (x - j1) * m);
    for_ranges(right, at, par && n - j1 >= PAR_W, |t, cols| {
        let (qa, qb) = (q[t], q[t + 1]);
        let mut q0 = qa;
        while q0 < qb {
            let q1 = (q0 + BLOCK).min(qb);
            let dst = &mut cols[(q0 - qa) * m + j1..];
            let mut cm = MatMut::from_column_major_slice_with_stride_mut(dst, rows, q1 - q0, m);
            let yb = ym.subrows(q0, q1 - q0);
            let vb = vm.subrows(q0, q1 - q0);
            matmul(cm.as_mut(), Accum::Add, um, yb.transpose(), -T::ONE, Par::Seq);
            matmul(cm.as_mut(), Accum::Add, xm, vb.transpose(), -T::ONE, Par::Seq);
            q0 = q1;
        }
    });
}

/// `f(t, s[at[t]..at[t + 1]])` for the [`PARTS`] ranges of `s` at the increasing offsets
/// `at` (the last range runs to the end of `s`), the non-empty ones, as tasks over the
/// threads if `threaded` (else in order on this thread, with no allocation).
fn for_ranges<T: Send>(
    s: &mut [T],
    at: [usize; PARTS + 1],
    threaded: bool,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    if threaded {
        let parts = Parts::at(s, &at[1..PARTS]);
        run_tasks(PARTS, |t| {
            if at[t] < at[t + 1] {
                f(t, parts.take(t));
            }
        });
        return;
    }
    let mut rest = s;
    for t in 0..PARTS {
        let len = if t + 1 < PARTS { at[t + 1] - at[t] } else { rest.len() };
        let (head, tail) = rest.split_at_mut(len);
        if at[t] < at[t + 1] {
            f(t, head);
        }
        rest = tail;
    }
}

/// The block factors of each `bs` reflectors from their `τ` (as faer's `bidiag_in_place`).
fn block_factors<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    hl: &mut [T],
    hr: &mut [T],
    bs: usize,
) {
    let am = MatRef::from_column_major_slice(a, m, n);
    let mut j = 0;
    while j < n {
        let b = bs.min(n - j);
        let mut h = MatMut::from_column_major_slice_with_stride_mut(&mut hl[j * bs..], b, b, bs);
        for k in 1..b {
            let tk = h[(0, k)];
            h[(k, k)] = tk;
        }
        upgrade_householder_factor(h, am.submatrix(j, j, m - j, b), b, 1, Par::Seq);
        j += b;
    }
    let size = n - 1;
    let at = am.submatrix(0, 1, size, size).transpose();
    let mut j = 0;
    while j < size {
        let b = bs.min(size - j);
        let mut h = MatMut::from_column_major_slice_with_stride_mut(&mut hr[j * bs..], b, b, bs);
        for k in 1..b {
            let tk = h[(0, k)];
            h[(k, k)] = tk;
        }
        upgrade_householder_factor(h, at.submatrix(j, j, size - j, b), b, 1, Par::Seq);
        j += b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
    use faer::linalg::svd::bidiag::{bidiag_in_place, bidiag_in_place_scratch};

    use crate::backend::cpu::linalg::tridiag_qr::tests::rnd;

    /// The same output as faer's `bidiag_in_place` (to rounding): `B`, the reflectors and
    /// their block factors, on shapes across panel and range boundaries (threaded from
    /// 320 x 320), square and tall, and scaled so that the squares of the entries
    /// underflow or overflow (the reflectors' norms then taken by faer's `norm_l2`).
    #[test]
    fn as_faer_bidiag() {
        let mut state = 5;
        let mut sc = Scratch::default();
        let shapes = [(1, 1), (2, 2), (3, 2), (5, 5), (31, 31), (33, 32), (40, 33), (64, 64)];
        let more = [(65, 65), (100, 70), (161, 161), (300, 200), (400, 400), (450, 330)];
        let scaled = [((40, 40), 1e-160), ((70, 50), 1e160), ((400, 400), 1e-170)];
        let cases = shapes.into_iter().chain(more).map(|s| (s, 1.0)).chain(scaled);
        for ((m, n), scale) in cases {
            let a: Vec<f64> = (0..m * n).map(|_| rnd(&mut state)).collect();
            let bs = recommended_block_size::<f64>(m, n);
            let (mut ours, mut hl, mut hr) =
                (vec![0.0; m * n], vec![0.0; bs * n], vec![0.0; bs * (n - 1)]);
            // (faer's own reduction of the scaled matrix overflows at 1e160: it is compared
            // with faer's of the unscaled one, B scaled and the reflectors the same)
            for (o, &x) in ours.iter_mut().zip(&a) {
                *o = x * scale;
            }
            bidiag_split(&mut ours, m, n, &mut hl, &mut hr, bs, true, &mut sc);
            let (mut theirs, mut gl, mut gr) =
                (a.clone(), vec![0.0; bs * n], vec![0.0; bs * (n - 1)]);
            let req = bidiag_in_place_scratch::<f64>(m, n, Par::Seq, faer::Spec::default());
            let mut mem = MemBuffer::new(req);
            bidiag_in_place(
                MatMut::from_column_major_slice_mut(&mut theirs, m, n),
                MatMut::from_column_major_slice_mut(&mut gl, bs, n),
                MatMut::from_column_major_slice_mut(&mut gr, bs, n - 1),
                Par::Seq,
                MemStack::new(&mut mem),
                faer::Spec::default(),
            );
            let tol = 1e-12 * m as f64;
            for j in 0..n {
                for i in 0..m {
                    // B's entries are of the order of the scale; the reflectors' of one
                    let s = if i == j || i + 1 == j { scale } else { 1.0 };
                    let (x, y) = (ours[j * m + i], theirs[j * m + i] * s);
                    assert!((x - y).abs() <= tol * s, "{m}x{n} ({i}, {j}): {x} vs {y}");
                }
            }
            for (h, g, w, name) in [(&hl, &gl, n, "hl"), (&hr, &gr, n - 1, "hr")] {
                for j in 0..w {
                    let b0 = j / bs * bs;
                    for i in 0..=(j - b0) {
                        let (x, y) = (h[j * bs + i], g[j * bs + i]);
                        // (identity reflectors: τ infinite in both)
                        let same = x == y || (x - y).abs() <= tol * (1.0 + y.abs());
                        assert!(same, "{m}x{n} {name} ({i}, {j}): {x} vs {y}");
                    }
                }
            }
        }
    }
}
