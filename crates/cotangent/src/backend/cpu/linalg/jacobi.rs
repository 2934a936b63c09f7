//! The Jacobi rotation and its helpers, shared by the two Jacobi kernels of the library:
//! the two-sided one of the symmetric eigendecomposition of tiny matrices
//! ([`super::eigh`]) and the one-sided (Hestenes) one of the SVD of small matrices
//! ([`super::svd`]), scalar and in lanes.
//!
//! Both take the angle from the same formulas ([`rotation_tangent`], [`sine_tau`]) and
//! apply it in the same form ([`rotate_pair`]), so each kernel's lanes and its
//! one-matrix loop give the same bits; each visits its pairs in its own sweep order
//! ([`sweep_pairs`], [`Pairs`]). Here too is [`pow2_near`], the power-of-two scale that
//! the two-sided kernel and other paths of the eigendecomposition and the SVD apply
//! first, so that nothing overflows.

use super::lanes::LANES;
use super::LinalgElem;

/// The tangent `t` of a Jacobi rotation from `d` and `two`: for the two-sided rotation
/// that zeroes `apq` in the symmetric block `[[app, apq], [apq, aqq]]`, `d = aqq − app` and
/// `two = 2 apq`; for the one-sided one that orthogonalises two columns of squared norms
/// `α`, `β` and inner product `γ` ([`super::svd`]), `d = β − α` and `two = 2γ`. It is the
/// root of smaller magnitude of `t² + 2θt − 1 = 0`, `θ = d / two`:
/// `sgn(θ) / (|θ| + √(θ² + 1))`, here multiplied through by `|two|` as
/// `t = sgn(d) two / (|d| + √(d² + two²))`, one square root and one division (θ's form
/// takes a division more, on the path to the next rotation). The entries are of a matrix
/// scaled by a power of two near its largest entry: nothing overflows; where both `|d|`
/// and `|two|` are below `√(min positive)` the squares lose digits ([`tiny_pair`]) and
/// [`tangent_theta`] takes over ([`rotation_tangent`] picks).
#[inline(always)]
pub(crate) fn tangent<T: LinalgElem>(d: T, two: T) -> T {
    let t = two / (d.abs() + (d * d + two * two).sqrt());
    if d < T::ZERO {
        -t
    } else {
        t
    }
}

/// Whether [`tangent`]'s squares would lose digits (both `|d|` and `|two|` below
/// `√(min positive)`).
#[inline(always)]
pub(crate) fn tiny_pair<T: LinalgElem>(d: T, two: T) -> bool {
    let tiny = T::sqrt_min_positive_impl();
    d.abs() < tiny && two.abs() < tiny
}

/// [`tangent`] through `θ = d / two` (`two != 0`), for a [`tiny_pair`]. Beyond
/// `1 / √ε`, `√(θ² + 1)` is `|θ|` in the rounding (and its square would overflow
/// further): then `t = 1 / (2θ)`.
#[inline(always)]
pub(crate) fn tangent_theta<T: LinalgElem>(d: T, two: T) -> T {
    let theta = d / two;
    let sg = if theta < T::ZERO { -T::ONE } else { T::ONE };
    let at = theta.abs();
    let root = if at > T::ONE / T::EPSILON.sqrt() { at } else { (T::ONE + theta * theta).sqrt() };
    sg / (at + root)
}

/// [`tangent`], or [`tangent_theta`] for a [`tiny_pair`].
#[inline(always)]
pub(crate) fn rotation_tangent<T: LinalgElem>(d: T, two: T) -> T {
    if tiny_pair(d, two) {
        tangent_theta(d, two)
    } else {
        tangent(d, two)
    }
}

/// The sine `s` and `τ = s / (1 + c)` (Rutishauser's form of the update) of the rotation
/// of tangent `t`: with `h = √(1 + t²)`, `c = 1 / h`, `s = t c` and `τ = t / (1 + h)`, the
/// two divisions independent of each other.
#[inline(always)]
pub(crate) fn sine_tau<T: LinalgElem>(t: T) -> (T, T) {
    let h = (t * t + T::ONE).sqrt();
    let c = T::ONE / h;
    (t * c, t / (T::ONE + h))
}

/// The rotation of a Jacobi step, Rutishauser's form: the entries `(g, h)` of the two
/// rows or columns it combines become `(g − s (h + τ g), h + s (g − τ h))`, with `s` the
/// sine and `τ = s / (1 + c)` ([`sine_tau`]). That is `(c g − s h, s g + c h)`, but the
/// small rotations of the last sweeps change the entries by small corrections, which
/// round less than `c g − s h`. The one copy of it: the two-sided and one-sided kernels,
/// scalar and in lanes, all rotate through it, so that they get the same bits.
#[inline(always)]
pub(crate) fn rotate_pair<T: LinalgElem>(g: T, h: T, s: T, tau: T) -> (T, T) {
    (g - s * (h + tau * g), h + s * (g - tau * h))
}

/// Rotates columns `p < q` (`rows` long) of a column-major array in place by
/// [`rotate_pair`].
#[inline]
pub(crate) fn rotate<T: LinalgElem>(x: &mut [T], rows: usize, p: usize, q: usize, tau: T, s: T) {
    let (lo, hi) = x.split_at_mut(q * rows);
    let xp = &mut lo[p * rows..(p + 1) * rows];
    let xq = &mut hi[..rows];
    for (a, b) in xp.iter_mut().zip(xq.iter_mut()) {
        (*a, *b) = rotate_pair(*a, *b, s, tau);
    }
}

/// [`rotate`] over the lanes, each with its own `(tau, s)`.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub(crate) fn rotate_lanes<T: LinalgElem>(
    x: &mut [[T; LANES]],
    rows: usize,
    p: usize,
    q: usize,
    tau: &[T; LANES],
    s: &[T; LANES],
) {
    let (lo, hi) = x.split_at_mut(q * rows);
    let xp = &mut lo[p * rows..(p + 1) * rows];
    let xq = &mut hi[..rows];
    for (a, b) in xp.iter_mut().zip(xq.iter_mut()) {
        for l in 0..LANES {
            (a[l], b[l]) = rotate_pair(a[l], b[l], s[l], tau[l]);
        }
    }
}

/// The pairs `(p, q)`, `p < q`, of one Jacobi sweep of order `n <= ROTATE_N`. For
/// `n = 4`, in three rounds of two disjoint pairs (`(0, 1), (2, 3)`, then `(0, 2), (1, 3)`,
/// then `(0, 3), (1, 2)`): the two angles of a round are computed from entries the other
/// rotation does not touch, so their chains of square roots and divisions (most of a
/// rotation's time) overlap; row by row, each rotation waits for the one before.
/// Otherwise row by row (every pair shares an index for `n <= 3`).
pub(crate) fn sweep_pairs(n: usize) -> &'static [(usize, usize)] {
    const _: () = assert!(super::eigh::ROTATE_N == 4);
    match n {
        4 => &[(0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2)],
        3 => &[(0, 1), (0, 2), (1, 2)],
        2 => &[(0, 1)],
        _ => &[],
    }
}

/// Room of the one-sided Jacobi kernel's stack arrays and of [`Pairs`] (the largest
/// `max(m, n)` it takes).
pub(crate) const JACOBI_ROOM: usize = 16;
/// The pairs of columns of one Jacobi sweep over `cols <= JACOBI_ROOM` columns, every pair
/// once: rounds of disjoint pairs (the round-robin "circle" order; an odd number of columns
/// gets a dummy one). The pairs of a round commute (they touch different columns), so the
/// lane kernel computes a round's inner products before rotating, and the scalar kernel
/// runs the same pairs in the same order: the same bits.
pub(crate) struct Pairs {
    pairs: [(usize, usize); JACOBI_ROOM * (JACOBI_ROOM - 1) / 2],
    /// Round `r` is `pairs[ends[r - 1]..ends[r]]` (`ends[-1] = 0`).
    ends: [usize; JACOBI_ROOM],
    pub(crate) rounds: usize,
}

impl Pairs {
    pub(crate) fn new(cols: usize) -> Self {
        let m = cols + cols % 2;
        let mut idx = [0usize; JACOBI_ROOM];
        for (i, x) in idx.iter_mut().enumerate().take(m) {
            *x = i;
        }
        let mut pairs = [(0, 0); JACOBI_ROOM * (JACOBI_ROOM - 1) / 2];
        let mut ends = [0usize; JACOBI_ROOM];
        let rounds = m.saturating_sub(1);
        let mut len = 0;
        for end in ends.iter_mut().take(rounds) {
            for i in 0..m / 2 {
                let (a, b) = (idx[i], idx[m - 1 - i]);
                if a < cols && b < cols {
                    pairs[len] = (a.min(b), a.max(b));
                    len += 1;
                }
            }
            *end = len;
            idx[1..m].rotate_right(1);
        }
        Pairs { pairs, ends, rounds }
    }

    /// The pairs of round `r`.
    pub(crate) fn round(&self, r: usize) -> &[(usize, usize)] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        &self.pairs[start..self.ends[r]]
    }

    /// Every pair of a sweep, round after round.
    pub(crate) fn all(&self) -> &[(usize, usize)] {
        &self.pairs[..if self.rounds == 0 { 0 } else { self.ends[self.rounds - 1] }]
    }
}

/// A power of two within a factor 2 of `x > 0` (finite), but at least the smallest normal
/// number: the callers divide by it or multiply by its reciprocal, which must be finite
/// (for a subnormal `x` the power of two near it has none), and `x` over it is then at
/// least `2⁻ᵖ` (`p` the precision), far from underflow in the squares they form.
pub(crate) fn pow2_near<T: LinalgElem>(x: T) -> T {
    if !x.is_finite() {
        // (a caller's broken promise: one, rather than halving an infinity forever)
        return T::ONE;
    }
    let mut s = T::ONE;
    let two = T::of(2.0);
    let mut y = x;
    while y >= two {
        y /= two;
        s *= two;
    }
    let smallest = <T as faer::traits::RealField>::min_positive_impl();
    while y < T::ONE && s > smallest {
        y *= two;
        s /= two;
    }
    s
}
