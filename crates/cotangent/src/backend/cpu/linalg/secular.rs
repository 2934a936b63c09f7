//! The secular equation of the divide and conquer merges, shared by the symmetric
//! tridiagonal eigensolver ([`super::tridiag_dc`], LAPACK's `dlaed4`) and the bidiagonal
//! SVD ([`super::bidiag_dc`], `dlasd4`): its roots ([`roots`]) and the rank-one term for
//! which the computed roots are exact ([`z_hat`], Gu & Eisenstat).
//!
//! The equation is `1/ρ + Σ_j z_j² / (δ_j − x) = 0` with one root in each gap of the
//! ascending poles `δ_j` and one above the largest. Each root is stored as its nearer pole
//! plus an offset, so that every difference `δ_j − x` is the difference of two poles
//! plus the offset, never the difference of two rounded values; each is found by the
//! "middle way" rational interpolation of its two nearest poles (Li), kept inside a
//! bracket by bisection.
//!
//! The two solvers differ only in how the poles are held ([`Poles`]): the eigenvalue
//! problem's poles are the `d_j` themselves (`x = λ`); the SVD's are their squares
//! (`x = σ²`), each difference `d_a² − d_b²` formed as `(d_a − d_b)(d_a + d_b)` from the
//! `d_j`, as `dlasd4` keeps them. Its `ρ` is 1 (folded into `z`), which the shared
//! arithmetic takes as it is: `1/1`, `1 · x` and `2 · 1` are exact, so each solver's
//! roots are the bits its own loop gave.

use super::LinalgElem;

/// After this many rational steps without convergence a root is bisected; the bracket
/// then halves each step, so `MAX_STEPS` bounds the work on any input.
const BISECT_AFTER: usize = 24;
const MAX_STEPS: usize = 200;

/// How the poles of a secular equation are held: the difference `gap(a, b)` of the
/// equation's variable between the poles whose stored values are `a` and `b`.
pub(super) trait Poles: Copy + Send + Sync {
    /// The variable at the pole of `a` less that at the pole of `b`.
    fn gap<T: LinalgElem>(a: T, b: T) -> T;
}

/// The poles are the stored values (the symmetric eigenproblem's `d_j`): `a − b`.
#[derive(Clone, Copy)]
pub(super) struct Plain;

impl Poles for Plain {
    #[inline(always)]
    fn gap<T: LinalgElem>(a: T, b: T) -> T {
        a - b
    }
}

/// The poles are the squares of the stored values (the bidiagonal SVD's `d_j²`):
/// `a² − b²` as `(a − b)(a + b)`, accurate where `a` and `b` are close.
#[derive(Clone, Copy)]
pub(super) struct Squares;

impl Poles for Squares {
    #[inline(always)]
    fn gap<T: LinalgElem>(a: T, b: T) -> T {
        (a - b) * (a + b)
    }
}

/// The roots of the secular equation with poles `P` at the stored values `d` (strictly
/// ascending, no `z_j` zero), `1/rho + Σ_j z_j² / (gap(d_j, d_o) − τ) = 0`: root `i` is
/// the pole of `d[origin[i]]` plus `tau[i]`, in the gap between the poles of `d_i` and
/// `d_{i+1}`, the last one above the largest pole by at most `ρ‖z‖²`. In the CPU's
/// widest vector instructions; in two halves on two threads if `parallel`.
pub(super) fn roots<T: LinalgElem, P: Poles>(
    d: &[T],
    z: &[T],
    rho: T,
    origin: &mut [usize],
    tau: &mut [T],
    parallel: bool,
) {
    let solve = |first: usize, origin: &mut [usize], tau: &mut [T]| {
        crate::backend::cpu::simd::arch().dispatch(Roots::<T, P> {
            d,
            z,
            rho,
            first,
            origin,
            tau,
            poles: std::marker::PhantomData,
        });
    };
    if parallel {
        let h = origin.len() / 2;
        let (o0, o1) = origin.split_at_mut(h);
        let (t0, t1) = tau.split_at_mut(h);
        rayon::join(|| solve(0, o0, t0), || solve(h, o1, t1));
    } else {
        solve(0, origin, tau);
    }
}

/// The roots `first..first + tau.len()` of [`roots`]'s equation.
struct Roots<'a, T, P> {
    d: &'a [T],
    z: &'a [T],
    rho: T,
    first: usize,
    origin: &'a mut [usize],
    tau: &'a mut [T],
    poles: std::marker::PhantomData<P>,
}

impl<T: LinalgElem, P: Poles> pulp::WithSimd for Roots<'_, T, P> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Roots { d, z, rho, first, origin, tau, .. } = self;
        for (r, (o, t)) in origin.iter_mut().zip(tau.iter_mut()).enumerate() {
            (*o, *t) = secular_root::<T, P>(d, z, rho, first + r);
        }
    }
}

/// `Σ_{j in range} z_j² / (δ_j - τ)` and its derivative in `τ`, with `δ_j = delta(d_j)`
/// the pole's offset from the root's origin: four independent sums (the divisions
/// pipelined).
#[inline(always)]
fn sums<T: LinalgElem>(d: &[T], z: &[T], delta: impl Fn(T) -> T, t: T) -> (T, T) {
    let mut f = [T::ZERO; 4];
    let mut g = [T::ZERO; 4];
    let mut dc = d.chunks_exact(4);
    let mut zc = z.chunks_exact(4);
    for (dd, zz) in (&mut dc).zip(&mut zc) {
        for l in 0..4 {
            let inv = T::ONE / (delta(dd[l]) - t);
            let a = zz[l] * inv;
            f[l] += zz[l] * a;
            g[l] += a * a;
        }
    }
    for (&dd, &zz) in dc.remainder().iter().zip(zc.remainder()) {
        let inv = T::ONE / (delta(dd) - t);
        let a = zz * inv;
        f[0] += zz * a;
        g[0] += a * a;
    }
    ((f[0] + f[1]) + (f[2] + f[3]), (g[0] + g[1]) + (g[2] + g[3]))
}

/// Root `i` of [`roots`]'s equation: `(origin, tau)`.
#[inline(always)]
fn secular_root<T: LinalgElem, P: Poles>(d: &[T], z: &[T], rho: T, i: usize) -> (usize, T) {
    let k = d.len();
    let rinv = T::ONE / rho;
    let eps = T::EPSILON;
    let two = T::of(2.0);
    let last = i + 1 == k;
    if k == 1 {
        return (0, rho * z[0] * z[0]);
    }
    // the two poles of the model: i and i + 1, or for the last root i - 1 and i
    let (p1, p2) = if last { (i - 1, i) } else { (i, i + 1) };
    // the origin (the nearer pole), the bracket for tau, and the first point
    let (o, mut lo, mut hi, mut t, mut at) = if last {
        let zz: T = z.iter().fold(T::ZERO, |s, &x| s + x * x);
        let hi = rho * zz;
        (i, T::ZERO, hi, hi / two, None)
    } else {
        // the midpoint of the gap decides the nearer pole; its sums start the iteration
        let mid = P::gap(d[i + 1], d[i]) / two;
        let (psi, dpsi) = sums(&d[..=p1], &z[..=p1], |x| P::gap(x, d[i]), mid);
        let (phi, dphi) = sums(&d[p2..], &z[p2..], |x| P::gap(x, d[i]), mid);
        let at = Some((psi, dpsi, phi, dphi));
        if rinv + psi + phi >= T::ZERO {
            (i, T::ZERO, mid, mid, at)
        } else {
            (i + 1, -mid, T::ZERO, -mid, at)
        }
    };
    let dor = d[o];
    let (del1, del2) = (P::gap(d[p1], dor), P::gap(d[p2], dor));
    if t == T::ZERO {
        return (o, t);
    }
    for step in 0..MAX_STEPS {
        // ψ: poles up to p1; φ: from p2 (the last root: ψ all but the last pole, φ it)
        let (psi, dpsi, phi, dphi) = if let Some(s) = at.take() {
            s
        } else {
            let (psi, dpsi) = sums(&d[..=p1], &z[..=p1], |x| P::gap(x, dor), t);
            let (phi, dphi) = sums(&d[p2..], &z[p2..], |x| P::gap(x, dor), t);
            (psi, dpsi, phi, dphi)
        };
        let w = rinv + psi + phi;
        if w == T::ZERO {
            break;
        }
        let err = T::of(8.0) * (phi.abs() + psi.abs())
            + two * rinv
            + T::of(3.0) * t.abs() * (dpsi + dphi);
        if w.abs() <= eps * err {
            break;
        }
        if w > T::ZERO {
            hi = t;
        } else {
            lo = t;
        }
        if hi - lo <= two * eps * if lo.abs() > hi.abs() { lo.abs() } else { hi.abs() } {
            break;
        }
        let next = if step < BISECT_AFTER {
            middle_way(w, (dpsi, dphi), (del1, del2), t, (lo, hi))
        } else {
            (lo + hi) / two
        };
        if next == t {
            break;
        }
        t = next;
    }
    (o, t)
}

/// The next iterate of a secular root in the bracket `(lo, hi)` from `t`: the root in the
/// bracket of the model `c + s₁/(δ₁ − x) + s₂/(δ₂ − x)` (its two nearest poles `δ₁`,
/// `δ₂`) that matches the secular function's value `w` and the derivatives `ψ'`, `φ'` of
/// its two parts at `t` (Li's "middle way"), or the bracket's midpoint when the model has
/// no root there.
fn middle_way<T: LinalgElem>(
    w: T,
    (dpsi, dphi): (T, T),
    (del1, del2): (T, T),
    t: T,
    (lo, hi): (T, T),
) -> T {
    let two = T::of(2.0);
    let (a1, a2) = (del1 - t, del2 - t);
    let s1 = dpsi * a1 * a1;
    let s2 = dphi * a2 * a2;
    let c = w - s1 / a1 - s2 / a2;
    // c x² - b x + cc = 0
    let b = c * (del1 + del2) + s1 + s2;
    let cc = c * del1 * del2 + s1 * del2 + s2 * del1;
    let disc = b * b - T::of(4.0) * c * cc;
    if disc >= T::ZERO {
        let sq = disc.sqrt();
        let big = if b >= T::ZERO { b + sq } else { b - sq };
        let r1 = if big == T::ZERO { T::NAN } else { two * cc / big };
        let r2 = if c == T::ZERO { T::NAN } else { big / (two * c) };
        if r1 > lo && r1 < hi {
            return r1;
        }
        if r2 > lo && r2 < hi {
            return r2;
        }
    }
    (lo + hi) / two
}

/// [`ZHat`] over all of `zh` (`d.len()` entries) for the roots of [`roots`] (`origin`,
/// `tau`), in two halves on two threads if `parallel`.
pub(super) fn z_hat<T: LinalgElem, P: Poles>(
    d: &[T],
    z: &[T],
    origin: &[usize],
    tau: &[T],
    zh: &mut [T],
    parallel: bool,
) {
    let run = |first: usize, zh: &mut [T]| {
        let poles = std::marker::PhantomData::<P>;
        crate::backend::cpu::simd::arch().dispatch(ZHat { d, z, origin, tau, first, zh, poles });
    };
    if parallel {
        let h = zh.len() / 2;
        let (z0, z1) = zh.split_at_mut(h);
        rayon::join(|| run(0, z0), || run(h, z1));
    } else {
        run(0, zh);
    }
}

/// `ẑ_j` for `j` in `first..first + zh.len()` (Gu & Eisenstat): the rank-one term for
/// which the computed roots are exact, `ẑ_j² = Π_i gap(λ_i, d_j) / Π_{i≠j} gap(d_i, d_j)`
/// (up to the common factor `1/ρ`, which the normalisation of the vectors removes), a
/// product of ratios of order one (the roots interlace the poles); the sign of `z_j`.
/// Each root is held as its pole `d[origin[i]]` and offset `tau[i]`, so
/// `gap(λ_i, x) = gap(d[origin[i]], x) + tau[i]`, `gap` that of the poles `P`.
struct ZHat<'a, T, P> {
    d: &'a [T],
    z: &'a [T],
    origin: &'a [usize],
    tau: &'a [T],
    first: usize,
    zh: &'a mut [T],
    poles: std::marker::PhantomData<P>,
}

impl<T: LinalgElem, P: Poles> pulp::WithSimd for ZHat<'_, T, P> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let ZHat { d, z, origin, tau, first, zh, .. } = self;
        let gap = P::gap::<T>;
        let k = d.len();
        let dj = &d[first..first + zh.len()];
        for (r, p) in zh.iter_mut().enumerate() {
            let j = first + r;
            *p = gap(d[origin[j]], d[j]) + tau[j];
        }
        // for each root i, the factor of every j != i (contiguous: vectorised)
        for i in 0..k {
            let (di, oi, ti) = (d[i], d[origin[i]], tau[i]);
            let factor = |(p, &x): (&mut T, &T)| *p *= (gap(oi, x) + ti) / gap(di, x);
            if i < first || i >= first + zh.len() {
                zh.iter_mut().zip(dj).for_each(factor);
            } else {
                let r = i - first;
                zh[..r].iter_mut().zip(&dj[..r]).for_each(factor);
                zh[r + 1..].iter_mut().zip(&dj[r + 1..]).for_each(factor);
            }
        }
        for (r, p) in zh.iter_mut().enumerate() {
            let x = p.abs().sqrt();
            *p = if z[first + r] < T::ZERO { -x } else { x };
        }
    }
}
