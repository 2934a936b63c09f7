//! The two-sided (cyclic) Jacobi eigendecomposition of tiny symmetric matrices
//! (`n <=` [`ROTATE_N`](super::ROTATE_N)): one matrix at a time ([`jacobi`],
//! allocation-free, with the eigenvalues then the Rayleigh quotients of the vectors,
//! [`rayleigh`]), or [`LANES`] at a time in SIMD lanes ([`jacobi_lanes`]) with each
//! lane's bits those of the one-matrix loop. Rotations skip entries negligible relative
//! to their diagonal (Demmel & Veselić's criterion) or to the largest diagonal entry;
//! the rotation itself is the library's one Jacobi rotation ([`super::super::jacobi`]).

use super::super::jacobi::{
    pow2_near, rotate, rotate_lanes, rotate_pair, rotation_tangent, sine_tau, sweep_pairs, tangent,
    tangent_theta, tiny_pair,
};
use super::super::lanes::{load_symmetric_lanes, LANES};
use super::super::order::{by_order, by_order_simd};
use super::super::{Batch, LinalgElem};
use super::{sort_and_gauge, LaneBufs, LaneOut, SMALL_N};

/// The most Jacobi sweeps (convergence is quadratic: a handful suffice); a bound so that
/// no input can loop forever.
const MAX_SWEEPS: usize = 60;

/// Cyclic Jacobi (in the order of [`sweep_pairs`]) on the symmetric column-major `n x n`
/// block `a`, `n <= ROTATE_N` (overwritten); the eigenvalues go to `w` (unsorted), the
/// rotations are accumulated into `v` (column-major, set to the identity first) when
/// given. The entries must be finite. Returns the power of two the matrix was scaled by
/// (`a` is left scaled).
pub(super) fn jacobi<T: LinalgElem>(a: &mut [T], n: usize, w: &mut [T], v: Option<&mut [T]>) -> T {
    // one instance per order: the loops get constant bounds (unrolled, no bounds checks)
    by_order!(n; 1 2 3 4 => |N| jacobi_n::<T, N>(a, w, v), _ => jacobi_n::<T, 0>(a, w, v))
}

/// [`jacobi`] for the order `N` (`N = 0`: the order of `w`).
fn jacobi_n<T: LinalgElem, const N: usize>(a: &mut [T], w: &mut [T], v: Option<&mut [T]>) -> T {
    let n = if N == 0 { w.len() } else { N };
    let a = &mut a[..n * n];
    let w = &mut w[..n];
    let mut v = v.map(|v| &mut v[..n * n]);
    if let Some(v) = v.as_deref_mut() {
        v.fill(T::ZERO);
        for j in 0..n {
            v[j * n + j] = T::ONE;
        }
    }
    // scale by a power of two near the largest entry (exact), so nothing overflows
    let amax = a.iter().fold(T::ZERO, |m, &x| if x.abs() > m { x.abs() } else { m });
    if amax == T::ZERO {
        w.fill(T::ZERO);
        return T::ONE;
    }
    let scale = pow2_near(amax);
    for x in a.iter_mut() {
        *x /= scale;
    }
    let eps = T::EPSILON;
    for _ in 0..MAX_SWEEPS {
        // an entry is negligible below ε times its diagonal's geometric mean (relative
        // accuracy where the diagonal is large) or ε times the largest diagonal entry (an
        // absolute floor, as LAPACK's accuracy: without it, near-zero eigenvalues keep
        // rotating rounding-level fill-in)
        let dmax = (0..n).fold(T::ZERO, |m, i| {
            let d = a[i * n + i].abs();
            if d > m {
                d
            } else {
                m
            }
        });
        let floor = eps * dmax;
        let mut rotated = false;
        for &(p, q) in sweep_pairs(n) {
            let apq = a[q * n + p];
            let (app, aqq) = (a[p * n + p], a[q * n + q]);
            if apq.abs() <= floor || apq.abs() <= eps * (app.abs() * aqq.abs()).sqrt() {
                continue;
            }
            rotated = true;
            let t = rotation_tangent(aqq - app, apq + apq);
            let (s, tau) = sine_tau(t);
            a[p * n + p] = app - t * apq;
            a[q * n + q] = aqq + t * apq;
            a[q * n + p] = T::ZERO;
            a[p * n + q] = T::ZERO;
            for k in 0..n {
                if k == p || k == q {
                    continue;
                }
                let (gp, hq) = rotate_pair(a[p * n + k], a[q * n + k], s, tau);
                a[p * n + k] = gp;
                a[k * n + p] = gp;
                a[q * n + k] = hq;
                a[k * n + q] = hq;
            }
            if let Some(v) = v.as_deref_mut() {
                rotate(v, n, p, q, tau, s);
            }
        }
        if !rotated {
            break;
        }
    }
    for j in 0..n {
        w[j] = a[j * n + j] * scale;
    }
    scale
}

/// Replaces the eigenvalues by the Rayleigh quotients `w_j = v_jᵀ A v_j` of the final
/// eigenvectors with the original matrix `a0` (column-major, symmetric), computed on
/// `a0 / scale`: the diagonal Jacobi accumulates one rounding per rotation, the quotient
/// has the accuracy of a backward-stable solver (its error is second order in that of
/// `v_j`).
pub(super) fn rayleigh<T: LinalgElem>(a0: &[T], n: usize, scale: T, w: &mut [T], v: &[T]) {
    let inv = T::ONE / scale;
    for (j, wj) in w.iter_mut().enumerate() {
        let vj = &v[j * n..(j + 1) * n];
        let mut acc = T::ZERO;
        for (k, &vkj) in vj.iter().enumerate() {
            let ak = &a0[k * n..(k + 1) * n];
            let mut y = T::ZERO;
            for (&x, &z) in ak.iter().zip(vj) {
                y += x * inv * z;
            }
            acc += y * vkj;
        }
        *wj = acc * scale;
    }
}

/// The matrices `first..first + count` (`count <= LANES`) of `b`, decomposed at once by
/// the cyclic Jacobi loop of [`jacobi`] run over the lanes ([`jacobi_lanes_n`]), then
/// finished one at a time as [`one`](super::one) finishes them (Rayleigh quotients,
/// sorting, gauge).
#[allow(clippy::too_many_arguments)]
pub(super) fn jacobi_lanes<T: LinalgElem>(
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
    impl<T: LinalgElem, const N: usize> pulp::WithSimd for Kernel<'_, '_, T, N> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Kernel { data, b, first, count, upper, out, bufs } = self;
            let n = if N > 0 { N } else { b.n };
            jacobi_lanes_n(data, b, first, count, upper, out, bufs, n);
        }
    }
    let n = b.n;
    for buf in [&mut bufs.a, &mut bufs.a0, &mut bufs.v] {
        buf.resize(n * n, [T::ZERO; LANES]);
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), n;
        2 3 4 => |N| Kernel::<T, N> { data, b, first, count, upper, out, bufs },
        _ => Kernel::<T, 0> { data, b, first, count, upper, out, bufs });
}

/// [`jacobi_lanes`] for the order `n` (a constant where it is small): the operations of
/// [`jacobi_n`] and [`rayleigh`] in the same order, each lane rotating only where the
/// scalar loop rotates (elsewhere the rotation is the identity, `t = 0`); the sweeps go on
/// until no lane rotates (a converged lane is left unchanged by further sweeps), so each
/// lane gets the scalar loop's result (up to the sign of zero entries).
// lanes are indexed on purpose (the loops over them vectorise)
#[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
#[inline(always)]
fn jacobi_lanes_n<T: LinalgElem>(
    data: &[T],
    b: &Batch,
    first: usize,
    count: usize,
    upper: bool,
    out: LaneOut<'_, T>,
    bufs: &mut LaneBufs<T>,
    n: usize,
) {
    let nn = n * n;
    let a = &mut bufs.a[..nn];
    let a0 = &mut bufs.a0[..nn];
    let v = &mut bufs.v[..nn];
    let vectors = out.v.is_some();
    // load (unused and non-finite lanes hold zeros: they converge at once)
    let bad = load_symmetric_lanes(data, b, first, count, upper, n, a);
    if vectors {
        a0.copy_from_slice(a);
        for x in v.iter_mut() {
            *x = [T::ZERO; LANES];
        }
        for j in 0..n {
            v[j * n + j] = [T::ONE; LANES];
        }
    }
    // scale each lane by a power of two near its largest entry (exact)
    let mut amax = [T::ZERO; LANES];
    for x in a.iter() {
        for l in 0..LANES {
            if x[l].abs() > amax[l] {
                amax[l] = x[l].abs();
            }
        }
    }
    let mut scale = [T::ONE; LANES];
    for l in 0..LANES {
        if amax[l] != T::ZERO {
            scale[l] = pow2_near(amax[l]);
        }
    }
    for x in a.iter_mut() {
        for l in 0..LANES {
            x[l] /= scale[l];
        }
    }
    let eps = T::EPSILON;
    for _ in 0..MAX_SWEEPS {
        let mut floor = [T::ZERO; LANES];
        for i in 0..n {
            let d = a[i * n + i];
            for l in 0..LANES {
                if d[l].abs() > floor[l] {
                    floor[l] = d[l].abs();
                }
            }
        }
        for f in &mut floor {
            *f = eps * *f;
        }
        let mut rotated = false;
        for &(p, q) in sweep_pairs(n) {
            let (apq, app, aqq) = (a[q * n + p], a[p * n + p], a[q * n + q]);
            let mut rot = [false; LANES];
            let mut t = [T::ZERO; LANES];
            let mut tiny = false;
            for l in 0..LANES {
                let x = apq[l].abs();
                let skip = (x <= floor[l]) | (x <= eps * (app[l].abs() * aqq[l].abs()).sqrt());
                rot[l] = !skip;
                // (a skipped lane may make a NaN here: it is not selected)
                let tl = tangent(aqq[l] - app[l], apq[l] + apq[l]);
                t[l] = if skip { T::ZERO } else { tl };
                tiny |= !skip & tiny_pair(aqq[l] - app[l], apq[l] + apq[l]);
            }
            if tiny {
                for l in 0..LANES {
                    let (d, two) = (aqq[l] - app[l], apq[l] + apq[l]);
                    if rot[l] && tiny_pair(d, two) {
                        t[l] = tangent_theta(d, two);
                    }
                }
            }
            if !rot.iter().any(|&r| r) {
                continue;
            }
            rotated = true;
            let mut s = [T::ZERO; LANES];
            let mut tau = [T::ZERO; LANES];
            let (mut npp, mut nqq, mut npq) = (app, aqq, apq);
            for l in 0..LANES {
                (s[l], tau[l]) = sine_tau(t[l]);
                if rot[l] {
                    npp[l] = app[l] - t[l] * apq[l];
                    nqq[l] = aqq[l] + t[l] * apq[l];
                    npq[l] = T::ZERO;
                }
            }
            a[p * n + p] = npp;
            a[q * n + q] = nqq;
            a[q * n + p] = npq;
            a[p * n + q] = npq;
            for k in 0..n {
                if k == p || k == q {
                    continue;
                }
                let g = a[p * n + k];
                let h = a[q * n + k];
                let mut gp = [T::ZERO; LANES];
                let mut hq = [T::ZERO; LANES];
                for l in 0..LANES {
                    (gp[l], hq[l]) = rotate_pair(g[l], h[l], s[l], tau[l]);
                }
                a[p * n + k] = gp;
                a[k * n + p] = gp;
                a[q * n + k] = hq;
                a[k * n + q] = hq;
            }
            if vectors {
                rotate_lanes(v, n, p, q, &tau, &s);
            }
        }
        if !rotated {
            break;
        }
    }
    // eigenvalues: the diagonal scaled back, or the Rayleigh quotients of the vectors
    let mut w = [[T::ZERO; LANES]; SMALL_N];
    for j in 0..n {
        for l in 0..LANES {
            w[j][l] = a[j * n + j][l] * scale[l];
        }
    }
    if vectors {
        let mut inv = [T::ZERO; LANES];
        for l in 0..LANES {
            inv[l] = T::ONE / scale[l];
        }
        for j in 0..n {
            let mut acc = [T::ZERO; LANES];
            for k in 0..n {
                let mut y = [T::ZERO; LANES];
                for i in 0..n {
                    let (x, z) = (a0[k * n + i], v[j * n + i]);
                    for l in 0..LANES {
                        y[l] += x[l] * inv[l] * z[l];
                    }
                }
                let z = v[j * n + k];
                for l in 0..LANES {
                    acc[l] += y[l] * z[l];
                }
            }
            for l in 0..LANES {
                w[j][l] = acc[l] * scale[l];
            }
        }
    } else {
        // as the scalar loop: a zero matrix has zero eigenvalues (not -0)
        for l in 0..LANES {
            if amax[l] == T::ZERO {
                for wj in w.iter_mut().take(n) {
                    wj[l] = T::ZERO;
                }
            }
        }
    }
    let LaneOut { w: wout, v: mut vout } = out;
    for (l, wl) in wout.chunks_exact_mut(n).enumerate().take(count) {
        let mut vl = vout.as_deref_mut().map(|vo| &mut vo[l * nn..(l + 1) * nn]);
        if bad[l] {
            wl.fill(T::NAN);
            if let Some(vl) = vl {
                vl.fill(T::NAN);
            }
            continue;
        }
        for (j, x) in wl.iter_mut().enumerate() {
            *x = w[j][l];
        }
        if let Some(vl) = vl.as_deref_mut() {
            for (x, y) in vl.iter_mut().zip(v.iter()) {
                *x = y[l];
            }
        }
        sort_and_gauge(wl, vl);
    }
}
