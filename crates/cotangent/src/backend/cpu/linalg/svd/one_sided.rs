//! The one-sided (Hestenes) Jacobi SVD of small matrices, one at a time ([`jacobi_small`],
//! allocation-free) or [`LANES`] at a time in SIMD lanes for batches ([`jacobi_lanes`]):
//! round-robin pair order and cached squared column norms, as LAPACK's `dgesvj`, so one
//! inner product per pair; f64 lanes beyond [`JACOBI_MAX`] columns start in f32
//! ([`mixed_start`]). Up to [`JACOBI_MAX`] columns a matrix gets the same bits in lanes
//! and alone. The rotation and its angle are the library's one Jacobi rotation
//! ([`super::super::jacobi`]).

use super::super::jacobi::{
    pow2_near, rotate, rotate_lanes, rotation_tangent, sine_tau, tiny_pair, Pairs, JACOBI_ROOM,
};
use super::super::lanes::{load_lanes, LANES};
use super::super::order::{by_order, by_order_simd};
use super::super::{Batch, LinalgElem};
use super::largest_is_negative;

/// Largest `max(m, n)` for the one-sided Jacobi kernel on a matrix alone (stack arrays, no
/// allocation): on one matrix it beat faer at 4 x 4 and 8 x 8 but not at 16 x 16
/// (Jacobi's flops grow as sweeps · n³).
/// Batches of at least [`LANES`] matrices take Jacobi up to [`JACOBI_ROOM`]: [`LANES`]
/// matrices at a time in SIMD lanes, faster than faer per matrix at 16 x 16.
pub(super) const JACOBI_MAX: usize = 8;
/// Sweeps after which the Jacobi kernel gives up (the matrix then goes to
/// [`svd_split`](super::super::svd_split)).
const JACOBI_SWEEPS: usize = 40;
/// Sweeps of the f32 start of the f64 lane kernel ([`mixed_start`]). Simulated on 16 x 16
/// Gaussian matrices (the largest count of a group of eight): 5 f32 sweeps leave 3.1 f64
/// sweeps, against 8.1 from the start (4: 4.0, 6: 3.1).
const MIXED_SWEEPS: usize = 5;

/// The power-of-two scale for the Jacobi kernels of a matrix whose largest entry in
/// magnitude is `amax` (so that squared norms neither overflow nor underflow), and its
/// inverse ([`pow2_near`]'s, whose reciprocal is always finite); `None` for a zero matrix.
#[inline(always)]
fn jacobi_scale<T: LinalgElem>(amax: T) -> Option<(T, T)> {
    if amax == T::ZERO {
        return None;
    }
    let unscale = pow2_near(amax);
    Some((T::ONE / unscale, unscale))
}

/// Copies the column-major `m x n` matrix `a` into `w` (`rows x cols` column-major, the
/// transpose when wide), scaled by [`jacobi_scale`]'s power of two. Returns the inverse
/// scale, or `None` for a zero matrix (`w` untouched). `a` is finite.
fn jacobi_load<T: LinalgElem>(a: &[T], m: usize, n: usize, w: &mut [T]) -> Option<T> {
    let wide = m < n;
    let rows = m.max(n);
    let cols = m.min(n);
    let amax = a.iter().fold(T::ZERO, |acc, &x| if x.abs() > acc { x.abs() } else { acc });
    let (scale, unscale) = jacobi_scale(amax)?;
    for c in 0..cols {
        for r in 0..rows {
            w[c * rows + r] = scale * if wide { a[r * m + c] } else { a[c * m + r] };
        }
    }
    Some(unscale)
}

/// Whether the columns with squared norms `alpha`, `beta` and inner product `gamma` are
/// orthogonal to `tol` (no rotation).
#[inline(always)]
fn jacobi_skip<T: LinalgElem>(alpha: T, beta: T, gamma: T, tol: T) -> bool {
    // (√α √β: α β underflows for columns below √(min positive), which would then never
    // count as orthogonal)
    gamma == T::ZERO || gamma.abs() <= tol * (alpha.sqrt() * beta.sqrt())
}

/// The Jacobi rotation `(c, s)` that orthogonalises two columns with squared norms
/// `alpha`, `beta` and inner product `gamma`, as `(tau, s, t)`: `tau = s / (1 + c)` (for
/// Rutishauser's form of the rotation, see [`rotate`]) and the tangent `t`, with which the
/// squared norms become `alpha − t gamma` and `beta + t gamma`; by the two-sided Jacobi's
/// formulas ([`rotation_tangent`] of `d = beta − alpha`, `two = 2 gamma`, and
/// [`sine_tau`]). [`JacobiElem::rotations`] does the same operations over the lanes, so
/// the scalar and lane kernels give the same bits.
#[inline(always)]
fn jacobi_rotation<T: LinalgElem>(alpha: T, beta: T, gamma: T) -> (T, T, T) {
    let t = rotation_tangent(beta - alpha, gamma + gamma);
    let (s, tau) = sine_tau(t);
    (tau, s, t)
}

/// `xᵀ y` summed in order (the scalar and lane kernels alike).
#[inline(always)]
fn dot<T: LinalgElem>(x: &[T], y: &[T]) -> T {
    let mut acc = T::ZERO;
    for (&a, &b) in x.iter().zip(y) {
        acc += a * b;
    }
    acc
}

/// One-sided (Hestenes) Jacobi SVD of a small column-major `m x n` matrix `a`
/// (`max(m, n) <= JACOBI_ROOM`, finite): rotations of the columns of `W = A` (of `Aᵀ` when
/// wide) until they are orthogonal to `rows · eps`, accumulated in `Q`; then
/// `S` = the column norms, sorted descending, `U = W S⁻¹` and `V = Q` (swapped when wide).
/// Each sweep visits the pairs in the round-robin order of [`Pairs`] and keeps the squared
/// column norms (recomputed at the start of each sweep) updated by each rotation's
/// tangent, as LAPACK's `dgesvj`: one inner product per pair instead of three; a norm that
/// the update more than halves is recomputed (the update has lost digits).
/// Writes `s` (`k`) and, when given, `u` (`m x k`) and `v` (`n x k`), column-major, in
/// the sign gauge of [`fix_gauge`](super::fix_gauge).
/// Returns `false` (and nothing usable) when singular vectors are asked and a singular
/// value is numerically zero (no orthonormal completion here), or on no convergence: the
/// caller then uses [`svd_split`](super::super::svd_split).
pub(super) fn jacobi_small<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
) -> bool {
    // `W` and `Q` on the stack, as large as the order needs (zeroing the largest, 4 KiB
    // in f64, showed in a 4 x 4 SVD's profile)
    // and for square orders to 4 the order as a constant (loops unrolled)
    by_order!(if m == n { n } else { 0 };
        2 3 4 => |N| jacobi_small_in::<T, 4, 16, N>(a, m, n, s, uv),
        _ => jacobi_small_any(a, m, n, s, uv))
}

/// [`jacobi_small`] of any shape, with `W` and `Q` in the smallest of the stack arrays
/// that holds them.
fn jacobi_small_any<T: LinalgElem>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
) -> bool {
    match m.max(n) {
        0..=4 => jacobi_small_in::<T, 4, 16, 0>(a, m, n, s, uv),
        5..=8 => jacobi_small_in::<T, 8, 64, 0>(a, m, n, s, uv),
        _ => jacobi_small_in::<T, JACOBI_ROOM, { JACOBI_ROOM * JACOBI_ROOM }, 0>(a, m, n, s, uv),
    }
}

/// [`jacobi_small`] with `W` and `Q` in arrays of `AREA = ROOM²` entries
/// (`max(m, n) <= ROOM`), for `N x N` matrices if `N > 0`.
fn jacobi_small_in<T: LinalgElem, const ROOM: usize, const AREA: usize, const N: usize>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
) -> bool {
    let (rows, cols) = if N > 0 { (N, N) } else { (m.max(n), m.min(n)) };
    let mut w = [T::ZERO; AREA];
    let mut q = [T::ZERO; AREA];
    let Some(unscale) = jacobi_load(a, m, n, &mut w) else {
        if uv.is_some() {
            return false;
        }
        s.fill(T::ZERO);
        return true;
    };
    let want = uv.is_some();
    if want {
        for c in 0..cols {
            q[c * cols + c] = T::ONE;
        }
    }
    let tol = T::of(rows as f64) * T::EPSILON;
    let half = T::of(0.5);
    let pairs = Pairs::new(cols);
    let mut norms = [T::ZERO; ROOM];
    let mut converged = false;
    for _ in 0..JACOBI_SWEEPS {
        for (c, x) in norms.iter_mut().enumerate().take(cols) {
            let col = &w[c * rows..(c + 1) * rows];
            *x = dot(col, col);
        }
        let mut rotated = false;
        for &(p, qq) in pairs.all() {
            let gamma = dot(&w[p * rows..(p + 1) * rows], &w[qq * rows..(qq + 1) * rows]);
            let (alpha, beta) = (norms[p], norms[qq]);
            if jacobi_skip(alpha, beta, gamma, tol) {
                continue;
            }
            let (tau, sn, t) = jacobi_rotation(alpha, beta, gamma);
            rotated = true;
            rotate(&mut w, rows, p, qq, tau, sn);
            if want {
                rotate(&mut q, cols, p, qq, tau, sn);
            }
            let (np, nq) = (alpha - t * gamma, beta + t * gamma);
            norms[p] = if np < half * alpha {
                let col = &w[p * rows..(p + 1) * rows];
                dot(col, col)
            } else {
                np
            };
            norms[qq] = if nq < half * beta {
                let col = &w[qq * rows..(qq + 1) * rows];
                dot(col, col)
            } else {
                nq
            };
        }
        if !rotated {
            converged = true;
            break;
        }
    }
    if !converged {
        return false;
    }
    for (c, x) in norms.iter_mut().enumerate().take(cols) {
        let col = &w[c * rows..(c + 1) * rows];
        *x = dot(col, col);
    }
    jacobi_finish(|i| w[i], |i| q[i], &norms[..cols], m, n, unscale, s, uv)
}

/// The end of [`jacobi_small`] from the converged `W` and `Q` (`rows x cols` and
/// `cols x cols`, column-major, element `i` read by `w(i)` and `q(i)`, so that the lane
/// kernel reads its lanes in place) of the scaled matrix and the squared norms `sq` of
/// `W`'s columns (each summed in row order, as [`dot`]): the singular values (times
/// `unscale`) in descending order and, with `uv`, the vectors in the sign gauge of
/// [`fix_gauge`](super::fix_gauge) (each column pair negated as it is written: the same bits as negating
/// after); `false` when vectors are asked and a singular value is numerically zero.
#[inline(always)]
fn jacobi_finish<T: LinalgElem>(
    w: impl Fn(usize) -> T,
    q: impl Fn(usize) -> T,
    sq: &[T],
    m: usize,
    n: usize,
    unscale: T,
    s: &mut [T],
    uv: Option<(&mut [T], &mut [T])>,
) -> bool {
    let (rows, cols) = (m.max(n), m.min(n));
    // norms, and the order of the columns by decreasing norm
    let mut norms = [T::ZERO; JACOBI_ROOM];
    let mut order = [0usize; JACOBI_ROOM];
    for c in 0..cols {
        norms[c] = sq[c].sqrt();
        order[c] = c;
    }
    for i in 0..cols {
        let mut best = i;
        let mut top = norms[order[i]];
        for j in i + 1..cols {
            // (selects, not branches)
            let x = norms[order[j]];
            let gt = x > top;
            best = if gt { j } else { best };
            top = if gt { x } else { top };
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
    let wide = m < n;
    let (wd, qd) = if wide { (v, u) } else { (u, v) };
    for (j, &c) in order.iter().enumerate().take(cols) {
        let inv = T::ONE / norms[c];
        let wcol = &mut wd[j * rows..(j + 1) * rows];
        for (r, y) in wcol.iter_mut().enumerate() {
            *y = w(c * rows + r) * inv;
        }
        let qcol = &mut qd[j * cols..(j + 1) * cols];
        for (r, y) in qcol.iter_mut().enumerate() {
            *y = q(c * cols + r);
        }
        // U's column is W's when tall, Q's when wide
        if largest_is_negative(if wide { &*qcol } else { &*wcol }) {
            for x in wcol.iter_mut().chain(qcol.iter_mut()) {
                *x = -*x;
            }
        }
    }
    true
}

/// Scratch of the lane kernel, reused across one task's groups.
pub(super) struct LaneScratch<T> {
    /// One matrix, column-major.
    pub(super) tmp: Vec<T>,
    /// The lanes' `W` (`rows x cols`) and `Q` (`cols x cols`), column-major per lane.
    w: Vec<[T; LANES]>,
    q: Vec<[T; LANES]>,
    /// [`mixed_start`]'s buffers (empty without it): `W`'s other buffer (`rows x cols`:
    /// `W Q` is written there, then it and `w` swap), the Cholesky factor of `QᵀQ`
    /// (`cols x cols`), and the f32 `W` and `Q`.
    w0: Vec<[T; LANES]>,
    r: Vec<[T; LANES]>,
    w32: Vec<[f32; LANES]>,
    q32: Vec<[f32; LANES]>,
}

impl<T: JacobiElem> LaneScratch<T> {
    pub(super) fn new(m: usize, n: usize) -> Self {
        let (rows, cols) = (m.max(n), m.min(n));
        let mix = usize::from(mixed::<T>(cols));
        LaneScratch {
            tmp: vec![T::ZERO; m * n],
            w: vec![[T::ZERO; LANES]; rows * cols],
            q: vec![[T::ZERO; LANES]; cols * cols],
            w0: vec![[T::ZERO; LANES]; mix * rows * cols],
            r: vec![[T::ZERO; LANES]; mix * cols * cols],
            w32: vec![[0.0; LANES]; mix * rows * cols],
            q32: vec![[0.0; LANES]; mix * cols * cols],
        }
    }
}

/// Whether the lane kernel starts matrices of `cols` columns (after the transpose of a
/// wide one) with [`mixed_start`]: f64 beyond [`JACOBI_MAX`] columns, so that a matrix
/// that may be decomposed alone by [`jacobi_small`] (up to [`JACOBI_MAX`]) gets the same
/// bits in lanes.
fn mixed<T: JacobiElem>(cols: usize) -> bool {
    T::MIXED && cols > JACOBI_MAX
}

/// [`jacobi_small`] on the matrices `first..first + count` of `ba` at once (`count <=`
/// [`LANES`]; a partial group is padded with repeats of its last matrix): every operation
/// over the lanes (a lane whose pair is already orthogonal rotates by the identity,
/// `tau = s = 0`), sweeps until every lane has had a sweep without rotation. Up to
/// [`JACOBI_MAX`] columns each lane gets the bits [`jacobi_small`] gives its matrix
/// alone; beyond, f64 starts with [`mixed_start`]. Writes the factors of matrix
/// `first + l` into `U` (`m x k`, column-major, `u[l * m * k..]`) and `V` (`n x k`,
/// `v[l * n * k..]`) when `want` (else `u` and `v` are empty) and `S` (`s[l * k..]`), sign
/// gauge included; returns the lanes that need the one-matrix path instead (non-finite or
/// zero matrix, no convergence, a zero singular value with vectors asked).
#[allow(clippy::too_many_arguments)]
pub(super) fn jacobi_lanes<T: JacobiElem>(
    ba: &Batch,
    a: &[T],
    first: usize,
    count: usize,
    want: bool,
    (uo, so, vo): (&mut [T], &mut [T], &mut [T]),
    sc: &mut LaneScratch<T>,
) -> [bool; LANES] {
    let (m, n) = (ba.m, ba.n);
    let (rows, cols) = (m.max(n), m.min(n));
    let k = cols;
    let mut bad = [false; LANES];
    let mut unscale = [T::ONE; LANES];
    let wide = m < n;
    // each lane's matrix (transposed when wide) straight into its lane, then the scale of
    // jacobi_load (the same largest entry and power of two) over the lanes
    let (rs, cs) = if wide { (ba.cs, ba.rs) } else { (ba.rs, ba.cs) };
    let w = &mut sc.w[..rows * cols];
    let offs: [usize; LANES] = std::array::from_fn(|l| ba.offset(first + l.min(count - 1)));
    // (outside the CPU's dispatch: the portable moves)
    load_lanes(pulp::Scalar::new(), w, a, &offs, (rs, cs), rows, cols);
    // the largest magnitude, and x · 0 summed (0 when every entry is finite, else NaN)
    let mut amax = [T::ZERO; LANES];
    let mut nan = [T::ZERO; LANES];
    for x in w.iter() {
        for l in 0..LANES {
            let v = x[l].abs();
            amax[l] = if v > amax[l] { v } else { amax[l] };
            nan[l] += x[l] * T::ZERO;
        }
    }
    let mut scale = [T::ZERO; LANES];
    for l in 0..LANES {
        match jacobi_scale(amax[l]) {
            Some((sl, us)) if nan[l] == T::ZERO => (scale[l], unscale[l]) = (sl, us),
            _ => bad[l] = true,
        }
    }
    for x in w.iter_mut() {
        for l in 0..LANES {
            // (a bad lane is zeroed: a zero matrix, no rotation)
            x[l] = if bad[l] { T::ZERO } else { scale[l] * x[l] };
        }
    }
    if mixed::<T>(cols) {
        // Q from the f32 sweeps, W = A Q (for the values alone too: the same bits)
        mixed_start(sc, rows, cols);
    } else if want {
        for (i, x) in sc.q.iter_mut().enumerate() {
            *x = if i % (cols + 1) == 0 { [T::ONE; LANES] } else { [T::ZERO; LANES] };
        }
    }
    let converged = sweep_lanes(&mut sc.w, &mut sc.q, rows, cols, want, JACOBI_SWEEPS);
    // the squared column norms of every lane (in row order, as jacobi_small's)
    let mut sqn = [[T::ZERO; LANES]; JACOBI_ROOM];
    for (x, col) in sqn.iter_mut().zip(sc.w.chunks_exact(rows)) {
        *x = dot_lanes(col, col);
    }
    let (usz, vsz) = if want { (m * k, n * k) } else { (0, 0) };
    for l in 0..count {
        if bad[l] || !converged[l] {
            bad[l] = true;
            continue;
        }
        let s = &mut so[l * k..(l + 1) * k];
        let u = &mut uo[l * usz..(l + 1) * usz];
        let v = &mut vo[l * vsz..(l + 1) * vsz];
        let uv = want.then_some((u, v));
        let (w, q) = (&sc.w, &sc.q);
        let sq: [T; JACOBI_ROOM] = std::array::from_fn(|c| sqn[c][l]);
        if !jacobi_finish(|i| w[i][l], |i| q[i][l], &sq[..cols], m, n, unscale[l], s, uv) {
            bad[l] = true;
        }
    }
    bad
}

/// The sweeps of [`jacobi_lanes`] on `w` and `q` (`rows x cols` and `cols x cols` per
/// lane), at most `sweeps`, with the order a constant where it is common (unrolled loops)
/// and the widest instruction set the CPU has. Returns the lanes that converged.
fn sweep_lanes<T: JacobiElem>(
    w: &mut [[T; LANES]],
    q: &mut [[T; LANES]],
    rows: usize,
    cols: usize,
    want: bool,
    sweeps: usize,
) -> [bool; LANES] {
    struct Kernel<'a, T, const R: usize, const C: usize> {
        w: &'a mut [[T; LANES]],
        q: &'a mut [[T; LANES]],
        rows: usize,
        cols: usize,
        want: bool,
        sweeps: usize,
    }
    impl<T: JacobiElem, const R: usize, const C: usize> pulp::WithSimd for Kernel<'_, T, R, C> {
        type Output = [bool; LANES];
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) -> [bool; LANES] {
            let Kernel { w, q, rows, cols, want, sweeps } = self;
            let rows = if R > 0 { R } else { rows };
            let cols = if C > 0 { C } else { cols };
            sweep_lanes_n(simd, w, q, rows, cols, want, sweeps)
        }
    }
    by_order_simd!(crate::backend::cpu::simd::arch(), if rows == cols { cols } else { 0 };
        2 3 4 8 16 => |N| Kernel::<T, N, N> { w, q, rows, cols, want, sweeps },
        _ => Kernel::<T, 0, 0> { w, q, rows, cols, want, sweeps })
}

/// The start of the f64 lane kernel beyond [`JACOBI_MAX`] columns: [`MIXED_SWEEPS`]
/// sweeps in f32 (eight f32 lanes fill the register that holds four f64 ones: half the
/// loads, stores and arithmetic per row), from which `Q` (accumulated in f32, so
/// orthogonal to about f32's rounding) is made orthonormal in f64 by a Cholesky QR
/// (`QᵀQ = RᵀR`, `Q ← Q R⁻¹`), and `W ← W Q`; the f64 sweeps then go on from these `W`
/// and `Q` (about 3 instead of 8 on Gaussian matrices). `Q` is accumulated whether or not
/// vectors are asked, so the singular values have the same bits either way. A lane whose
/// Cholesky pivot is not above 1/2 (not orthogonal enough: f32 overflow or NaN) keeps
/// `Q = I`, `W` unchanged (`W I` is `W` exactly). The cost in accuracy: `W Q` rounds each
/// column to `ε ‖W‖`, so small singular values are accurate to `ε σ_max` (as
/// bidiagonalisation's, LAPACK's `gesdd` and faer's), not to one-sided Jacobi's relative
/// accuracy on matrices with badly scaled columns.
fn mixed_start<T: JacobiElem>(sc: &mut LaneScratch<T>, rows: usize, cols: usize) {
    struct Kernel<'a, T> {
        sc: &'a mut LaneScratch<T>,
        rows: usize,
        cols: usize,
    }
    impl<T: JacobiElem> pulp::WithSimd for Kernel<'_, T> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _simd: S) {
            let Kernel { sc, rows, cols } = self;
            mixed_start_n(sc, rows, cols);
        }
    }
    crate::backend::cpu::simd::arch().dispatch(Kernel { sc, rows, cols });
}

/// The body of [`mixed_start`] (compiled for the instruction set of its caller).
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn mixed_start_n<T: JacobiElem>(sc: &mut LaneScratch<T>, rows: usize, cols: usize) {
    let LaneScratch { w, q, w0, r, w32, q32, .. } = &mut *sc;
    let (w, q) = (&mut w[..rows * cols], &mut q[..cols * cols]);
    let (w0, r) = (&mut w0[..rows * cols], &mut r[..cols * cols]);
    for (x, y) in w.iter().zip(w32.iter_mut()) {
        for l in 0..LANES {
            y[l] = x[l].to_f64() as f32;
        }
    }
    for (i, x) in q32.iter_mut().enumerate() {
        *x = if i % (cols + 1) == 0 { [1.0; LANES] } else { [0.0; LANES] };
    }
    sweep_lanes::<f32>(w32, q32, rows, cols, true, MIXED_SWEEPS);
    for (x, y) in q32.iter().zip(q.iter_mut()) {
        for l in 0..LANES {
            y[l] = T::of(f64::from(x[l]));
        }
    }
    // Cholesky QR: R upper with RᵀR = QᵀQ, column by column, then Q ← Q R⁻¹ in place
    // (column j of the new Q is (q_j − Σ_{i<j} r_ij q_i) / r_jj, the q_i already new)
    let half = T::of(0.5);
    let mut ok = [true; LANES];
    for j in 0..cols {
        let qj = &q[j * cols..(j + 1) * cols];
        for i in 0..=j {
            let mut g = dot_lanes(&q[i * cols..(i + 1) * cols], qj);
            for kk in 0..i {
                let (a, b) = (r[i * cols + kk], r[j * cols + kk]);
                for l in 0..LANES {
                    g[l] = g[l] - a[l] * b[l];
                }
            }
            if i < j {
                let d = r[i * cols + i];
                for l in 0..LANES {
                    g[l] = g[l] / d[l];
                }
            } else {
                for l in 0..LANES {
                    ok[l] &= g[l] > half;
                    g[l] = g[l].sqrt();
                }
            }
            // r is stored by columns of R: r[j * cols + i] = R[i][j]
            r[j * cols + i] = g;
        }
    }
    // (the Gram entries above use the old Q: all of R first, then the solve)
    for j in 0..cols {
        let (done, rest) = q.split_at_mut(j * cols);
        let d = r[j * cols + j].map(|x| T::ONE / x);
        let rj = &r[j * cols..j * cols + j];
        let neg = |i: usize| rj[i].map(|x| -x);
        combine_lanes(&mut rest[..cols], cols, j, |i| (neg(i), &done[i * cols..]), Some(d));
    }
    if ok.iter().any(|&x| !x) {
        for (i, x) in q.iter_mut().enumerate() {
            let e = if i % (cols + 1) == 0 { T::ONE } else { T::ZERO };
            for l in 0..LANES {
                if !ok[l] {
                    x[l] = e;
                }
            }
        }
    }
    // W ← W Q: column c is Σ_k q_kc w_k, into w0, which then becomes W
    for c in 0..cols {
        let qc = &q[c * cols..(c + 1) * cols];
        combine_lanes(
            &mut w0[c * rows..(c + 1) * rows],
            rows,
            cols,
            |k| (qc[k], &w[k * rows..]),
            None,
        );
    }
    std::mem::swap(&mut sc.w, &mut sc.w0);
}

/// A linear combination of columns over the lanes, `len` rows of `y`: with
/// `scale = Some(d)`, `y ← (y + Σ_k c_k x_k) · d`; with `None`, `y ← Σ_k c_k x_k`, where
/// `term(k) = (c_k, x_k)` for `k < nk` (`x_k` at least `len` rows), summed in the order of
/// `k`; four rows at a time in registers (one load of `c_k` per four rows, no store until
/// the end).
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn combine_lanes<'a, T: LinalgElem + 'a>(
    y: &mut [[T; LANES]],
    len: usize,
    nk: usize,
    term: impl Fn(usize) -> ([T; LANES], &'a [[T; LANES]]),
    scale: Option<[T; LANES]>,
) {
    const B: usize = 4;
    let mut r0 = 0;
    while r0 + B <= len {
        let mut acc = [[T::ZERO; LANES]; B];
        if scale.is_some() {
            acc.copy_from_slice(&y[r0..r0 + B]);
        }
        for k in 0..nk {
            let (c, x) = term(k);
            let x = &x[r0..r0 + B];
            for i in 0..B {
                for l in 0..LANES {
                    acc[i][l] = acc[i][l] + c[l] * x[i][l];
                }
            }
        }
        if let Some(d) = scale {
            for i in 0..B {
                for l in 0..LANES {
                    acc[i][l] = acc[i][l] * d[l];
                }
            }
        }
        y[r0..r0 + B].copy_from_slice(&acc);
        r0 += B;
    }
    for r in r0..len {
        let mut acc = if scale.is_some() { y[r] } else { [T::ZERO; LANES] };
        for k in 0..nk {
            let (c, x) = term(k);
            for l in 0..LANES {
                acc[l] = acc[l] + c[l] * x[r][l];
            }
        }
        if let Some(d) = scale {
            for l in 0..LANES {
                acc[l] = acc[l] * d[l];
            }
        }
        y[r] = acc;
    }
}

/// `xᵀ y` of each lane, summed in order as [`dot`].
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn dot_lanes<T: LinalgElem>(x: &[[T; LANES]], y: &[[T; LANES]]) -> [T; LANES] {
    let mut acc = [T::ZERO; LANES];
    for (a, b) in x.iter().zip(y) {
        for l in 0..LANES {
            acc[l] += a[l] * b[l];
        }
    }
    acc
}

/// The loop of [`sweep_lanes`]: [`jacobi_small`]'s sweeps over the lanes, a round of
/// [`Pairs`] at a time (its inner products first, then its rotations).
// lanes are indexed on purpose (the loops over them vectorise); Float has no SubAssign
#[allow(clippy::needless_range_loop, clippy::assign_op_pattern)]
#[inline(always)]
fn sweep_lanes_n<T: JacobiElem, S: pulp::Simd>(
    simd: S,
    w: &mut [[T; LANES]],
    q: &mut [[T; LANES]],
    rows: usize,
    cols: usize,
    want: bool,
    sweeps: usize,
) -> [bool; LANES] {
    let w = &mut w[..rows * cols];
    let q = &mut q[..cols * cols];
    let tol = T::of(rows as f64) * T::EPSILON;
    let half = T::of(0.5);
    let pairs = Pairs::new(cols);
    let mut norms = [[T::ZERO; LANES]; JACOBI_ROOM];
    let mut converged = [false; LANES];
    for _ in 0..sweeps {
        for c in 0..cols {
            let col = &w[c * rows..(c + 1) * rows];
            norms[c] = dot_lanes(col, col);
        }
        // rotated[l] != 0: lane l rotated in this sweep
        let mut rotated = [T::ZERO; LANES];
        for r in 0..pairs.rounds {
            let round = pairs.round(r);
            let mut gammas = [[T::ZERO; LANES]; JACOBI_ROOM / 2];
            for (g, &(p, qq)) in gammas.iter_mut().zip(round) {
                *g = dot_lanes(&w[p * rows..(p + 1) * rows], &w[qq * rows..(qq + 1) * rows]);
            }
            // the rotations of the whole round before any is applied: their divisions
            // and square roots overlap the rotations (each column is in one pair of the
            // round: its norm is the round's)
            const H: usize = JACOBI_ROOM / 2;
            let mut rots = [[T::ZERO; LANES]; H];
            let mut taus = [[T::ZERO; LANES]; H];
            let mut ss = [[T::ZERO; LANES]; H];
            let mut ts = [[T::ZERO; LANES]; H];
            let mut any = [false; H];
            for (j, &(p, qq)) in round.iter().enumerate() {
                let (alpha, beta, gamma) = (&norms[p], &norms[qq], &gammas[j]);
                T::skips(simd, alpha, beta, gamma, tol, &mut rots[j]);
                any[j] = rots[j].iter().any(|&x| x != T::ZERO);
                if any[j] {
                    let (tau, s, t) = (&mut taus[j], &mut ss[j], &mut ts[j]);
                    T::rotations(simd, alpha, beta, gamma, &rots[j], tau, s, t);
                }
            }
            for (j, &(p, qq)) in round.iter().enumerate() {
                if !any[j] {
                    continue;
                }
                let (alpha, beta, gamma) = (norms[p], norms[qq], &gammas[j]);
                let (rot, tau, s, t) = (&rots[j], &taus[j], &ss[j], &ts[j]);
                for l in 0..LANES {
                    rotated[l] = rotated[l] + rot[l];
                }
                rotate_lanes(w, rows, p, qq, tau, s);
                if want {
                    rotate_lanes(q, cols, p, qq, tau, s);
                }
                // the updated norms (t = 0 where a lane does not rotate: unchanged), and
                // the lanes whose update more than halves a norm recomputed
                let mut np = [T::ZERO; LANES];
                let mut nq = [T::ZERO; LANES];
                for l in 0..LANES {
                    np[l] = alpha[l] - t[l] * gamma[l];
                    nq[l] = beta[l] + t[l] * gamma[l];
                }
                for (x, old, col) in [(&mut np, &alpha, p), (&mut nq, &beta, qq)] {
                    if (0..LANES).any(|l| x[l] < half * old[l]) {
                        let wc = &w[col * rows..(col + 1) * rows];
                        let d = dot_lanes(wc, wc);
                        for l in 0..LANES {
                            if x[l] < half * old[l] {
                                x[l] = d[l];
                            }
                        }
                    }
                }
                norms[p] = np;
                norms[qq] = nq;
            }
        }
        for l in 0..LANES {
            converged[l] |= rotated[l] == T::ZERO;
        }
        if converged.iter().all(|&x| x) {
            break;
        }
    }
    converged
}

/// Elements of the Jacobi lane kernel: [`jacobi_skip`] and [`jacobi_rotation`] over the
/// lanes in explicit SIMD operations (the compiler leaves their selects, divisions and
/// square roots scalar).
pub(crate) trait JacobiElem: LinalgElem + super::super::qr::QrElem {
    /// Whether the lane kernel starts with f32 sweeps ([`mixed_start`]; f64 only).
    const MIXED: bool;

    /// `rot` 1 where a lane rotates (not [`jacobi_skip`]), 0 where it does not.
    fn skips<S: pulp::Simd>(
        simd: S,
        alpha: &[Self; LANES],
        beta: &[Self; LANES],
        gamma: &[Self; LANES],
        tol: Self,
        rot: &mut [Self; LANES],
    );

    /// `(tau, s, t)` of [`jacobi_rotation`] for each lane where `rot` is 1, `(0, 0, 0)`
    /// where it is 0; the same operations, so the same bits.
    #[allow(clippy::too_many_arguments)]
    fn rotations<S: pulp::Simd>(
        simd: S,
        alpha: &[Self; LANES],
        beta: &[Self; LANES],
        gamma: &[Self; LANES],
        rot: &[Self; LANES],
        tau: &mut [Self; LANES],
        s: &mut [Self; LANES],
        t: &mut [Self; LANES],
    );
}

macro_rules! jacobi_elem {
    ($t:ty, $mixed:expr, $as:ident, $as_mut:ident, $splat:ident, $add:ident, $sub:ident, $mul:ident,
     $div:ident, $sqrt:ident, $abs:ident, $eq:ident, $le:ident, $lt:ident, $gt:ident,
     $or:ident, $sel:ident) => {
        impl JacobiElem for $t {
            const MIXED: bool = $mixed;

            #[inline(always)]
            fn skips<S: pulp::Simd>(
                simd: S,
                alpha: &[$t; LANES],
                beta: &[$t; LANES],
                gamma: &[$t; LANES],
                tol: $t,
                rot: &mut [$t; LANES],
            ) {
                let (av, at) = S::$as(alpha);
                let (bv, _) = S::$as(beta);
                let (gv, _) = S::$as(gamma);
                let done = LANES - at.len();
                {
                    let (rv, _) = S::$as_mut(&mut rot[..]);
                    let zero = simd.$splat(0.0);
                    let one = simd.$splat(1.0);
                    let tolv = simd.$splat(tol);
                    for i in 0..av.len() {
                        let (a, b, g) = (av[i], bv[i], gv[i]);
                        let ab = simd.$mul(simd.$sqrt(a), simd.$sqrt(b));
                        let skip = simd
                            .$or(simd.$eq(g, zero), simd.$le(simd.$abs(g), simd.$mul(tolv, ab)));
                        rv[i] = simd.$sel(skip, zero, one);
                    }
                }
                // lanes beyond a whole number of vectors: the scalar test
                for l in done..LANES {
                    let skip = jacobi_skip(alpha[l], beta[l], gamma[l], tol);
                    rot[l] = if skip { 0.0 } else { 1.0 };
                }
            }

            #[inline(always)]
            fn rotations<S: pulp::Simd>(
                simd: S,
                alpha: &[$t; LANES],
                beta: &[$t; LANES],
                gamma: &[$t; LANES],
                rot: &[$t; LANES],
                tau: &mut [$t; LANES],
                s: &mut [$t; LANES],
                t: &mut [$t; LANES],
            ) {
                let (av, at) = S::$as(alpha);
                let (bv, _) = S::$as(beta);
                let (gv, _) = S::$as(gamma);
                let (rv, _) = S::$as(rot);
                let done = LANES - at.len();
                let mut flags = [0.0 as $t; LANES];
                {
                    let (uv, _) = S::$as_mut(&mut tau[..]);
                    let (sv, _) = S::$as_mut(&mut s[..]);
                    let (tv, _) = S::$as_mut(&mut t[..]);
                    let zero = simd.$splat(0.0);
                    let one = simd.$splat(1.0);
                    let minus = simd.$splat(-1.0);
                    let tinyv =
                        simd.$splat(<$t as faer::traits::RealField>::sqrt_min_positive_impl());
                    let mut tiny = zero;
                    for i in 0..av.len() {
                        let (a, b, g) = (av[i], bv[i], gv[i]);
                        let skip = simd.$eq(rv[i], zero);
                        let d = simd.$sub(b, a);
                        let two = simd.$add(g, g);
                        let ad = simd.$abs(d);
                        let r = simd.$sqrt(simd.$add(simd.$mul(d, d), simd.$mul(two, two)));
                        let tn = simd.$div(two, simd.$add(ad, r));
                        // (−1 · tn: the scalar `-t`, signed zeros too)
                        let tl = simd.$sel(simd.$lt(d, zero), simd.$mul(minus, tn), tn);
                        let h = simd.$sqrt(simd.$add(simd.$mul(tl, tl), one));
                        let cl = simd.$div(one, h);
                        let sl = simd.$mul(tl, cl);
                        let ul = simd.$div(tl, simd.$add(one, h));
                        uv[i] = simd.$sel(skip, zero, ul);
                        sv[i] = simd.$sel(skip, zero, sl);
                        tv[i] = simd.$sel(skip, zero, tl);
                        // lanes for `tangent_theta`: rotating, both `|d|` and `|2 gamma|` tiny
                        let small = simd.$sel(simd.$lt(ad, tinyv), rv[i], zero);
                        let small = simd.$sel(simd.$lt(simd.$abs(two), tinyv), small, zero);
                        tiny = simd.$add(tiny, small);
                    }
                    if let Some(f) = S::$as_mut(&mut flags[..]).0.first_mut() {
                        *f = tiny;
                    }
                }
                if flags.iter().any(|&x| x != 0.0) {
                    // rare: those lanes by the scalar formula, which takes them through `θ`
                    for l in 0..done {
                        if rot[l] != 0.0 && tiny_pair(beta[l] - alpha[l], gamma[l] + gamma[l]) {
                            let (ul, sl, tl) = jacobi_rotation(alpha[l], beta[l], gamma[l]);
                            tau[l] = ul;
                            s[l] = sl;
                            t[l] = tl;
                        }
                    }
                }
                // lanes beyond a whole number of vectors: the scalar formula
                for l in done..LANES {
                    let (ul, sl, tl) = jacobi_rotation(alpha[l], beta[l], gamma[l]);
                    let skip = rot[l] == 0.0;
                    tau[l] = if skip { 0.0 } else { ul };
                    s[l] = if skip { 0.0 } else { sl };
                    t[l] = if skip { 0.0 } else { tl };
                }
            }
        }
    };
}

jacobi_elem!(
    f64,
    true,
    as_simd_f64s,
    as_mut_simd_f64s,
    splat_f64s,
    add_f64s,
    sub_f64s,
    mul_f64s,
    div_f64s,
    sqrt_f64s,
    abs_f64s,
    equal_f64s,
    less_than_or_equal_f64s,
    less_than_f64s,
    greater_than_f64s,
    or_m64s,
    select_f64s
);
jacobi_elem!(
    f32,
    false,
    as_simd_f32s,
    as_mut_simd_f32s,
    splat_f32s,
    add_f32s,
    sub_f32s,
    mul_f32s,
    div_f32s,
    sqrt_f32s,
    abs_f32s,
    equal_f32s,
    less_than_or_equal_f32s,
    less_than_f32s,
    greater_than_f32s,
    or_m32s,
    select_f32s
);
