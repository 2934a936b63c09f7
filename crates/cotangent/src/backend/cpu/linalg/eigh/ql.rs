//! The symmetric eigendecomposition of small matrices (`ROTATE_N < n <= SMALL_N`):
//! Householder tridiagonalisation and the implicit QL iteration (EISPACK's `tred2` and
//! `tql2`), allocation-free, one matrix at a time ([`tridiagonal_ql`]) or in batches
//! [`LANES`] at a time in SIMD lanes ([`ql_lanes`]), every lane running the one-matrix
//! loop's operations and taking its own branches through selects, so that each matrix
//! gets the bits it gets alone.

use super::super::jacobi::pow2_near;
use super::super::lanes::{load_symmetric_lanes, masks, sel, LaneBits, LANES};
use super::super::order::by_order_simd;
use super::super::{Batch, LinalgElem};
use super::{gauge, hypot, sort_and_gauge, LaneBufs, LaneOut, SMALL_N};

/// The most QL iterations per eigenvalue (two or three are typical); a bound so that no
/// input can loop forever.
const MAX_QL_ITER: usize = 60;

/// The symmetric eigenproblem of the column-major `n x n` block `a` (overwritten; its
/// lower triangle is read) by Householder tridiagonalisation and the implicit QL
/// iteration with Wilkinson-type shifts (EISPACK's `tred2` and `tql2`, as in JAMA), with
/// the transformations accumulated into `v` (column-major `n x n`); `e` is `n` scratch
/// entries. Eigenvalues into `w` (unsorted). The entries must be finite; the matrix is
/// scaled by a power of two near its largest entry first.
pub(super) fn tridiagonal_ql<T: LinalgElem>(
    a: &[T],
    n: usize,
    w: &mut [T],
    v: &mut [T],
    e: &mut [T],
) {
    let amax = a.iter().fold(T::ZERO, |m, &x| if x.abs() > m { x.abs() } else { m });
    if amax == T::ZERO {
        w.fill(T::ZERO);
        v.fill(T::ZERO);
        for j in 0..n {
            v[j * n + j] = T::ONE;
        }
        return;
    }
    let scale = pow2_near(amax);
    let inv = T::ONE / scale;
    // V[i][j] is v[j * n + i]
    for (x, &y) in v.iter_mut().zip(a) {
        *x = y * inv;
    }
    let ix = |i: usize, j: usize| j * n + i;
    let d = w;
    // tred2: Householder reduction to tridiagonal form
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
    }
    for i in (1..n).rev() {
        let mut scl = T::ZERO;
        let mut h = T::ZERO;
        for &dk in d.iter().take(i) {
            scl += dk.abs();
        }
        if scl == T::ZERO {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = T::ZERO;
                v[ix(j, i)] = T::ZERO;
            }
        } else {
            for dk in d.iter_mut().take(i) {
                *dk /= scl;
                h += *dk * *dk;
            }
            let mut f = d[i - 1];
            let mut g = h.sqrt();
            if f > T::ZERO {
                g = -g;
            }
            e[i] = scl * g;
            h -= f * g;
            d[i - 1] = f - g;
            for ej in e.iter_mut().take(i) {
                *ej = T::ZERO;
            }
            for j in 0..i {
                f = d[j];
                v[ix(j, i)] = f;
                g = e[j] + v[ix(j, j)] * f;
                for k in j + 1..i {
                    g += v[ix(k, j)] * d[k];
                    e[k] += v[ix(k, j)] * f;
                }
                e[j] = g;
            }
            f = T::ZERO;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            for j in 0..i {
                f = d[j];
                g = e[j];
                for k in j..i {
                    v[ix(k, j)] -= f * e[k] + g * d[k];
                }
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = T::ZERO;
            }
        }
        d[i] = h;
    }
    // accumulate the transformations
    for i in 0..n - 1 {
        v[ix(n - 1, i)] = v[ix(i, i)];
        v[ix(i, i)] = T::ONE;
        let h = d[i + 1];
        if h != T::ZERO {
            for k in 0..=i {
                d[k] = v[ix(k, i + 1)] / h;
            }
            for j in 0..=i {
                let mut g = T::ZERO;
                for k in 0..=i {
                    g += v[ix(k, i + 1)] * v[ix(k, j)];
                }
                for k in 0..=i {
                    v[ix(k, j)] -= g * d[k];
                }
            }
        }
        for k in 0..=i {
            v[ix(k, i + 1)] = T::ZERO;
        }
    }
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
        v[ix(n - 1, j)] = T::ZERO;
    }
    v[ix(n - 1, n - 1)] = T::ONE;
    e[0] = T::ZERO;
    // tql2: the implicit QL iteration on the tridiagonal (d, e)
    for i in 1..n {
        e[i - 1] = e[i];
    }
    e[n - 1] = T::ZERO;
    let mut f = T::ZERO;
    let mut tst1 = T::ZERO;
    let eps = T::EPSILON;
    for l in 0..n {
        let t = d[l].abs() + e[l].abs();
        if t > tst1 {
            tst1 = t;
        }
        let mut m = l;
        while m < n - 1 && e[m].abs() > eps * tst1 {
            m += 1;
        }
        if m > l {
            for _ in 0..MAX_QL_ITER {
                let mut g = d[l];
                let mut p = (d[l + 1] - g) / (e[l] + e[l]);
                let mut r = hypot(p, T::ONE);
                if p < T::ZERO {
                    r = -r;
                }
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let mut h = g - d[l];
                for di in d.iter_mut().take(n).skip(l + 2) {
                    *di -= h;
                }
                f += h;
                p = d[m];
                let (mut c, mut c2, mut c3) = (T::ONE, T::ONE, T::ONE);
                let el1 = e[l + 1];
                let (mut s, mut s2) = (T::ZERO, T::ZERO);
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e[i];
                    h = c * p;
                    r = hypot(p, e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    let (lo, hi) = v.split_at_mut((i + 1) * n);
                    for (vi, vi1) in lo[i * n..].iter_mut().zip(hi[..n].iter_mut()) {
                        let hv = *vi1;
                        *vi1 = s * *vi + c * hv;
                        *vi = c * *vi - s * hv;
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if e[l].abs() <= eps * tst1 {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = T::ZERO;
    }
    for x in d.iter_mut() {
        *x *= scale;
    }
}

/// `√(x² + y²)` per lane, with the operations of [`hypot`] (the same bits).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn hypot_lanes<T: LinalgElem>(x: &[T; LANES], y: &[T; LANES]) -> [T; LANES] {
    // without branches (they keep the compiler from vectorising): where `big = 0` (so
    // `small = 0`), `0 · √(1 + 0)` is the scalar code's early `0`
    let mut out = [T::ZERO; LANES];
    for l in 0..LANES {
        let (a, b) = (x[l].abs(), y[l].abs());
        let gt = a > b;
        let big = if gt { a } else { b };
        let small = if gt { b } else { a };
        let r = small / if big == T::ZERO { T::ONE } else { big };
        out[l] = big * (T::ONE + r * r).sqrt();
    }
    out
}

/// Rotates columns `i` and `i + 1` of the lanes' `V` (`n x n`, column-major):
/// `(x, y) <- (c x − s y, s x + c y)` where the mask `m` is set (every lane when `all`),
/// the scalar QL loop's operations.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn rotate_cols<T: LinalgElem + LaneBits>(
    v: &mut [[T; LANES]],
    n: usize,
    i: usize,
    c: &[T; LANES],
    s: &[T; LANES],
    m: &[T; LANES],
    all: bool,
) {
    let (lo, hi) = v.split_at_mut((i + 1) * n);
    let (xs, ys) = (&mut lo[i * n..], &mut hi[..n]);
    for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
        let (mut nx, mut ny) = (*x, *y);
        for k in 0..LANES {
            ny[k] = s[k] * x[k] + c[k] * y[k];
            nx[k] = c[k] * x[k] - s[k] * y[k];
        }
        if all {
            (*x, *y) = (nx, ny);
        } else {
            (*x, *y) = (sel(m, &nx, x), sel(m, &ny, y));
        }
    }
}

/// The matrices `first..first + count` (`count <= LANES`, `ROTATE_N < n <= SMALL_N`) of
/// `b`, decomposed at once by the Householder tridiagonalisation and implicit QL
/// iteration of [`tridiagonal_ql`] run over the lanes ([`ql_lanes_n`]), then sorted and
/// gauged one at a time as [`one`](super::one) does.
#[allow(clippy::too_many_arguments)]
pub(super) fn ql_lanes<T: LinalgElem + LaneBits>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
) {
    struct Kernel<'a, 'b, T, const N: usize> {
        data: &'a [T],
        b: &'a Batch,
        first: usize,
        count: usize,
        upper: bool,
        out: LaneOut<'b, T>,
        bufs: &'a mut LaneBufs<T>,
    }
    impl<T: LinalgElem + LaneBits, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { data, b, first, count, upper, out, bufs } = self;
            let n = if N > 0 { N } else { b.n };
            ql_lanes_n(data, b, first, count, upper, out, bufs, n);
        }
    }
    let n = b.n;
    bufs.v.resize(n * n, [T::ZERO; LANES]);
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        8 16 => |N| Kernel::<T, N> { data, b, first, count, upper, out, bufs },
        _ => Kernel::<T, 0> { data, b, first, count, upper, out, bufs });
}

/// [`ql_lanes`] for the order `n` (a constant where it is small): the operations of
/// [`tridiagonal_ql`] in the same order on every lane. Where the scalar code branches on
/// a lane's values (a zero Householder column, a zero transformation, the split point
/// and the convergence of the QL iteration), each lane computes the branch it takes and
/// the others keep their values (selects), the QL iteration at `l` runs over the union
/// of the lanes' ranges and is repeated until every lane has converged there (a lane
/// that has is left as it is): so each lane gets the bits of the scalar code.
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn ql_lanes_n<T: LinalgElem + LaneBits>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
    n: usize,
) {
    type L<T> = [T; LANES];
    let nn = n * n;
    let v = &mut bufs.v[..nn];
    let vectors = out.v.is_some();
    let zero: L<T> = [T::ZERO; LANES];
    let one: L<T> = [T::ONE; LANES];
    // load as `load_symmetric` (unused and non-finite lanes hold zeros)
    let bad = load_symmetric_lanes(data, b, first, count, upper, n, v);
    // scale each lane by a power of two near its largest entry (a zero lane: by one; its
    // result is replaced by the scalar code's early answer below)
    let mut amax = zero;
    for x in v.iter() {
        for l in 0..LANES {
            if x[l].abs() > amax[l] {
                amax[l] = x[l].abs();
            }
        }
    }
    let mut scale = one;
    let mut inv = one;
    for l in 0..LANES {
        if amax[l] != T::ZERO {
            scale[l] = pow2_near(amax[l]);
            inv[l] = T::ONE / scale[l];
        }
    }
    for x in v.iter_mut() {
        for l in 0..LANES {
            x[l] *= inv[l];
        }
    }
    let ix = |i: usize, j: usize| j * n + i;
    let mut d = [zero; SMALL_N];
    let mut e = [zero; SMALL_N];
    let d = &mut d[..n];
    let e = &mut e[..n];
    // tred2
    for j in 0..n {
        d[j] = v[ix(n - 1, j)];
    }
    for i in (1..n).rev() {
        let mut scl = zero;
        for k in 0..i {
            for l in 0..LANES {
                scl[l] += d[k][l].abs();
            }
        }
        // the lanes taking the Householder branch (the others: a zero column)
        let mut act = [false; LANES];
        for l in 0..LANES {
            act[l] = scl[l] != T::ZERO;
        }
        if !act.iter().any(|&a| a) {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[ix(i - 1, j)];
                v[ix(i, j)] = zero;
                v[ix(j, i)] = zero;
            }
            d[i] = zero;
            continue;
        }
        let mut sdiv = one;
        for l in 0..LANES {
            if act[l] {
                sdiv[l] = scl[l];
            }
        }
        let mut h = zero;
        for k in 0..i {
            for l in 0..LANES {
                let q = d[k][l] / sdiv[l];
                d[k][l] = if act[l] { q } else { d[k][l] };
                h[l] += d[k][l] * d[k][l];
            }
        }
        let f = d[i - 1];
        let mut g = zero;
        for l in 0..LANES {
            let r = h[l].sqrt();
            g[l] = if f[l] > T::ZERO { -r } else { r };
            e[i][l] = if act[l] { scl[l] * g[l] } else { d[i - 1][l] };
            h[l] -= f[l] * g[l];
            d[i - 1][l] = if act[l] { f[l] - g[l] } else { d[i - 1][l] };
        }
        for ej in e.iter_mut().take(i) {
            *ej = zero;
        }
        for j in 0..i {
            let f = d[j];
            let mut vf = zero;
            for l in 0..LANES {
                vf[l] = if act[l] { f[l] } else { T::ZERO };
            }
            v[ix(j, i)] = vf;
            let mut g = e[j];
            let vjj = v[ix(j, j)];
            for l in 0..LANES {
                g[l] += vjj[l] * f[l];
            }
            for k in j + 1..i {
                let vkj = v[ix(k, j)];
                let dk = d[k];
                let ek = &mut e[k];
                for l in 0..LANES {
                    g[l] += vkj[l] * dk[l];
                    ek[l] += vkj[l] * f[l];
                }
            }
            e[j] = g;
        }
        let mut hdiv = one;
        for l in 0..LANES {
            if act[l] {
                hdiv[l] = h[l];
            }
        }
        let mut f = zero;
        for j in 0..i {
            for l in 0..LANES {
                e[j][l] /= hdiv[l];
                f[l] += e[j][l] * d[j][l];
            }
        }
        let mut hh = zero;
        for l in 0..LANES {
            hh[l] = f[l] / (hdiv[l] + hdiv[l]);
        }
        for j in 0..i {
            for l in 0..LANES {
                e[j][l] -= hh[l] * d[j][l];
            }
        }
        let all = act.iter().all(|&a| a);
        let actm = masks::<T>(&act);
        for j in 0..i {
            let (f, g) = (d[j], e[j]);
            for k in j..i {
                let (ek, dk) = (e[k], d[k]);
                let x = &mut v[ix(k, j)];
                let mut y = *x;
                for l in 0..LANES {
                    y[l] = x[l] - (f[l] * ek[l] + g[l] * dk[l]);
                }
                *x = if all { y } else { sel(&actm, &y, x) };
            }
            d[j] = v[ix(i - 1, j)];
            v[ix(i, j)] = zero;
        }
        for l in 0..LANES {
            d[i][l] = if act[l] { h[l] } else { T::ZERO };
        }
    }
    if vectors {
        // accumulate the transformations
        for i in 0..n - 1 {
            v[ix(n - 1, i)] = v[ix(i, i)];
            v[ix(i, i)] = one;
            let h = d[i + 1];
            let mut act = [false; LANES];
            let mut hdiv = one;
            for l in 0..LANES {
                act[l] = h[l] != T::ZERO;
                if act[l] {
                    hdiv[l] = h[l];
                }
            }
            if act.iter().any(|&a| a) {
                for k in 0..=i {
                    let x = v[ix(k, i + 1)];
                    let mut q = zero;
                    for l in 0..LANES {
                        q[l] = x[l] / hdiv[l];
                    }
                    d[k] = q;
                }
                let all = act.iter().all(|&a| a);
                let actm = masks::<T>(&act);
                for j in 0..=i {
                    let mut g = zero;
                    for k in 0..=i {
                        let (x, y) = (v[ix(k, i + 1)], v[ix(k, j)]);
                        for l in 0..LANES {
                            g[l] += x[l] * y[l];
                        }
                    }
                    for k in 0..=i {
                        let dk = d[k];
                        let x = &mut v[ix(k, j)];
                        let mut y = *x;
                        for l in 0..LANES {
                            y[l] = x[l] - g[l] * dk[l];
                        }
                        *x = if all { y } else { sel(&actm, &y, x) };
                    }
                }
            }
            for k in 0..=i {
                v[ix(k, i + 1)] = zero;
            }
        }
        for j in 0..n {
            d[j] = v[ix(n - 1, j)];
            v[ix(n - 1, j)] = zero;
        }
        v[ix(n - 1, n - 1)] = one;
    } else {
        // the diagonal the accumulation above saves and restores
        for j in 0..n {
            d[j] = v[ix(j, j)];
        }
    }
    // tql2
    for i in 1..n {
        e[i - 1] = e[i];
    }
    e[n - 1] = zero;
    let mut f = zero;
    let mut tst1 = zero;
    let eps = T::EPSILON;
    // the rotations of one QL sweep (cosines, sines, lane masks, whether all lanes)
    let (mut rc, mut rs) = ([zero; SMALL_N], [zero; SMALL_N]);
    let mut rm = [zero; SMALL_N];
    let mut rall = [false; SMALL_N];
    for l in 0..n {
        let mut m = [l; LANES];
        let mut active = [false; LANES];
        for k in 0..LANES {
            let t = d[l][k].abs() + e[l][k].abs();
            if t > tst1[k] {
                tst1[k] = t;
            }
            while m[k] < n - 1 && e[m[k]][k].abs() > eps * tst1[k] {
                m[k] += 1;
            }
            active[k] = m[k] > l;
        }
        let mut iters = [0usize; LANES];
        loop {
            let mut mmax = l;
            for k in 0..LANES {
                if active[k] && m[k] > mmax {
                    mmax = m[k];
                }
            }
            if mmax == l {
                break;
            }
            // the shift
            let (dl, dl1, el) = (d[l], d[l + 1], e[l]);
            let mut p = zero;
            for k in 0..LANES {
                p[k] = (dl1[k] - dl[k]) / (el[k] + el[k]);
            }
            let mut r = hypot_lanes(&p, &one);
            let (mut h, mut nl, mut nl1, mut fh) = (zero, zero, zero, zero);
            for k in 0..LANES {
                if p[k] < T::ZERO {
                    r[k] = -r[k];
                }
                nl[k] = el[k] / (p[k] + r[k]);
                nl1[k] = el[k] * (p[k] + r[k]);
                h[k] = dl[k] - nl[k];
                fh[k] = f[k] + h[k];
            }
            let am = masks::<T>(&active);
            d[l] = sel(&am, &nl, &dl);
            d[l + 1] = sel(&am, &nl1, &dl1);
            f = sel(&am, &fh, &f);
            for di in d.iter_mut().take(n).skip(l + 2) {
                let mut y = zero;
                for k in 0..LANES {
                    y[k] = di[k] - h[k];
                }
                *di = sel(&am, &y, di);
            }
            for k in 0..LANES {
                p[k] = d[m[k]][k];
            }
            let (mut c, mut c2, mut c3) = (one, one, one);
            let el1 = e[l + 1];
            let (mut s, mut s2) = (zero, zero);
            for i in (l..mmax).rev() {
                let mut on = [false; LANES];
                for k in 0..LANES {
                    on[k] = active[k] && i < m[k];
                }
                let all = on.iter().all(|&o| o);
                let onm = masks::<T>(&on);
                // each step in its own loop over the lanes, the state updated by selects
                // (so that all of it vectorises)
                let (ei, di) = (e[i], d[i]);
                let r = hypot_lanes(&p, &ei);
                let (mut g, mut hk, mut e1, mut sn, mut cn) = (zero, zero, zero, zero, zero);
                for k in 0..LANES {
                    g[k] = c[k] * ei[k];
                    hk[k] = c[k] * p[k];
                    e1[k] = s[k] * r[k];
                    sn[k] = ei[k] / r[k];
                    cn[k] = p[k] / r[k];
                }
                let (mut pn, mut d1) = (zero, zero);
                for k in 0..LANES {
                    pn[k] = cn[k] * di[k] - sn[k] * g[k];
                    d1[k] = hk[k] + sn[k] * (cn[k] * g[k] + sn[k] * di[k]);
                }
                c3 = sel(&onm, &c2, &c3);
                c2 = sel(&onm, &c, &c2);
                s2 = sel(&onm, &s, &s2);
                e[i + 1] = sel(&onm, &e1, &e[i + 1]);
                s = sel(&onm, &sn, &s);
                c = sel(&onm, &cn, &c);
                p = sel(&onm, &pn, &p);
                d[i + 1] = sel(&onm, &d1, &d[i + 1]);
                // the rotation of columns i, i + 1 of V
                rc[i] = c;
                rs[i] = s;
                rm[i] = onm;
                rall[i] = all;
                // V gets the previous rotation (i + 1) now: its independent work runs
                // while this step's divisions and square root, on which the next step
                // waits, are in flight (applied after the whole sweep, the sweep's
                // chain of steps ran alone, bound by their latency). Each entry gets
                // the same operations in the same order either way.
                if vectors && i + 1 < mmax {
                    rotate_cols(v, n, i + 1, &rc[i + 1], &rs[i + 1], &rm[i + 1], rall[i + 1]);
                }
            }
            if vectors {
                // the sweep's last rotation (the others were applied in the loop)
                rotate_cols(v, n, l, &rc[l], &rs[l], &rm[l], rall[l]);
            }
            let el = e[l];
            for k in 0..LANES {
                let pk = -s[k] * s2[k] * c3[k] * el1[k] * el[k] / nl1[k];
                if active[k] {
                    e[l][k] = s[k] * pk;
                    d[l][k] = c[k] * pk;
                    iters[k] += 1;
                    // as the scalar loop: a NaN never converges
                    let converged = e[l][k].abs() <= eps * tst1[k];
                    active[k] = !converged && iters[k] < MAX_QL_ITER;
                }
            }
        }
        for k in 0..LANES {
            d[l][k] += f[k];
        }
        e[l] = zero;
    }
    let LaneOut { w: wout, v: mut vout } = out;
    for (k, wl) in wout.chunks_exact_mut(n).enumerate().take(count) {
        let mut vl = vout.as_deref_mut().map(|vo| &mut vo[k * nn..(k + 1) * nn]);
        if bad[k] {
            wl.fill(T::NAN);
            if let Some(vl) = vl {
                vl.fill(T::NAN);
            }
            continue;
        }
        if amax[k] == T::ZERO {
            // as the scalar code's early return
            wl.fill(T::ZERO);
            if let Some(vl) = vl.as_deref_mut() {
                vl.fill(T::ZERO);
                for j in 0..n {
                    vl[j * n + j] = T::ONE;
                }
            }
            sort_and_gauge(wl, vl);
        } else {
            // as `sort_and_gauge`, without moving columns: the same insertion sort (the
            // same comparisons, so the same order) on the indices, then each column is
            // copied out of the lanes once, to its place
            for (j, x) in wl.iter_mut().enumerate() {
                *x = d[j][k] * scale[k];
            }
            let mut idx = [0usize; SMALL_N];
            for (j, x) in idx.iter_mut().enumerate() {
                *x = j;
            }
            for j in 1..n {
                let mut q = j;
                while q > 0 && wl[q - 1] > wl[q] {
                    wl.swap(q - 1, q);
                    idx.swap(q - 1, q);
                    q -= 1;
                }
            }
            if let Some(vl) = vl {
                for (col, &src) in vl.chunks_exact_mut(n).zip(&idx[..n]) {
                    for (x, y) in col.iter_mut().zip(&v[src * n..(src + 1) * n]) {
                        *x = y[k];
                    }
                    gauge(col);
                }
            }
        }
    }
}
