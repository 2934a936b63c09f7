//! Singular value decomposition of a batch of strided matrices, with a deterministic sign
//! gauge: one-sided Jacobi for small matrices (one at a time, or [`LANES`] at a time in
//! SIMD lanes for batches; round-robin pair order and cached squared column norms, as
//! LAPACK's `dgesvj`, so one inner product per pair; f64 lanes beyond [`JACOBI_MAX`]
//! columns start in f32, [`mixed_start`]), our own stages otherwise (the blocked
//! bidiagonalisation and bidiagonal divide and conquer of
//! [`svd_split`](super::svd_split), by QR first beyond a ratio of 11/6; a vector by its
//! scaled norm, [`svd_vector`]); and the fused per-matrix VJP [`svd_backward`] (used
//! when the backward pass is not recorded).
//!
//! faer's `svd` is not used: on rank-deficient matrices and on matrices scaled near
//! underflow or overflow it returned wrong factors without an error, or failed to
//! converge (docs/accuracy.md; tests/accuracy.rs has the cases).

use std::sync::atomic::{AtomicUsize, Ordering};

use faer::Par;

use super::jacobi::{
    pow2_near, rotate, rotate_lanes, rotation_tangent, sine_tau, tiny_pair, Pairs, JACOBI_ROOM,
};
use super::lanes::{lane_split, load_lanes, LANES};
use super::order::by_order;
use super::svd_split;
use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem, TASK_WORK};
use crate::backend::cpu::par::{run_tasks, Parts};
use crate::backend::cpu::pool;
use crate::backend::SvdGradFail;
use crate::layout::Layout;
use crate::shape::Shape;

/// The factors of a batched SVD: `U` column-major `(*, m, ku)`, `S` contiguous `(*, k)`,
/// `Vh` contiguous `(*, kv, n)` (`V` column-major), `U` and `Vh` only when asked.
pub(crate) struct SvdOut<T> {
    pub(crate) u: Option<(Vec<T>, Layout)>,
    pub(crate) s: (Vec<T>, Layout),
    pub(crate) vh: Option<(Vec<T>, Layout)>,
}

/// Largest `max(m, n)` for the one-sided Jacobi kernel on a matrix alone (stack arrays, no
/// allocation): on one matrix it beat faer at 4 x 4 and 8 x 8 but not at 16 x 16
/// (Jacobi's flops grow as sweeps · n³).
/// Batches of at least [`LANES`] matrices take Jacobi up to [`JACOBI_ROOM`]: [`LANES`]
/// matrices at a time in SIMD lanes, faster than faer per matrix at 16 x 16.
const JACOBI_MAX: usize = 8;
/// Sweeps after which the Jacobi kernel gives up (the matrix then goes to
/// [`svd_split`](super::svd_split)).
const JACOBI_SWEEPS: usize = 40;
/// Sweeps of the f32 start of the f64 lane kernel ([`mixed_start`]). Simulated on 16 x 16
/// Gaussian matrices (the largest count of a group of eight): 5 f32 sweeps leave 3.1 f64
/// sweeps, against 8.1 from the start (4: 4.0, 6: 3.1).
const MIXED_SWEEPS: usize = 5;

/// The power-of-two scale for the Jacobi kernels of a matrix whose largest entry in
/// magnitude is `amax` (so that squared norms neither overflow nor underflow), and its
/// inverse; `None` for a zero matrix.
#[inline(always)]
fn jacobi_scale<T: LinalgElem>(amax: T) -> Option<(T, T)> {
    if amax == T::ZERO {
        return None;
    }
    let e = amax.to_f64().log2().floor() as i32;
    Some((T::of(2f64.powi(-e)), T::of(2f64.powi(e))))
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
/// the sign gauge of [`fix_gauge`].
/// Returns `false` (and nothing usable) when singular vectors are asked and a singular
/// value is numerically zero (no orthonormal completion here), or on no convergence: the
/// caller then uses [`svd_split`](super::svd_split).
fn jacobi_small<T: LinalgElem>(
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
/// [`fix_gauge`] (each column pair negated as it is written: the same bits as negating
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
struct LaneScratch<T> {
    /// One matrix, column-major.
    tmp: Vec<T>,
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
    fn new(m: usize, n: usize) -> Self {
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
fn jacobi_lanes<T: JacobiElem>(
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
    let k = Kernel::<T, 0, 0> { w, q, rows, cols, want, sweeps };
    fn fixed<T: JacobiElem, const R: usize, const C: usize>(
        k: Kernel<'_, T, 0, 0>,
    ) -> [bool; LANES] {
        let Kernel { w, q, rows, cols, want, sweeps } = k;
        crate::backend::cpu::simd::arch().dispatch(Kernel::<T, R, C> {
            w,
            q,
            rows,
            cols,
            want,
            sweeps,
        })
    }
    by_order!(if rows == cols { cols } else { 0 };
        2 3 4 8 16 => |N| fixed::<T, N, N>(k),
        _ => fixed::<T, 0, 0>(k))
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
pub(crate) trait JacobiElem: LinalgElem + super::qr::QrElem {
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

/// The VJP of a reduced SVD `A = U diag(S) Vh` (`u: (*, m, k)`, `s: (*, k)` contiguous,
/// `vh: (*, k, n)`) from the cotangents (`None` is zero; `gs` contiguous), fused per
/// matrix: the formula and the degenerate-pair handling of the tensor-op VJP
/// (`crate::linalg::svd`), the classification of pairs in f64 as there. Returns `gA`
/// column-major `(*, m, n)` with its layout; a failure of any matrix fails the batch (a
/// gap failure first, as the tensor path reports).
pub(crate) fn svd_backward<T: LinalgElem>(
    u: (&[T], &Layout),
    s: &[T],
    vh: (&[T], &Layout),
    gu: Option<(&[T], &Layout)>,
    gs: Option<&[T]>,
    gvh: Option<(&[T], &Layout)>,
) -> Result<(Vec<T>, Layout), SvdGradFail> {
    let bu = Batch::of(u.1);
    let bv = Batch::of(vh.1);
    let (m, k, n) = (bu.m, bu.n, bv.n);
    let bgu = gu.map(|g| Batch::of(g.1));
    let bgv = gvh.map(|g| Batch::of(g.1));
    let size = m * n;
    let len = bu.len();
    let layout = colmajor_layout(&bu.dims, m, n);
    let mut out = crate::backend::cpu::pool::overwritten(len * size, T::ZERO);
    // 1: gap failure, 2: zero failure (the first matrix of each kind)
    let gap = AtomicUsize::new(usize::MAX);
    let zero = AtomicUsize::new(usize::MAX);
    let r = m.max(n);
    let vector = gu.is_some() || gvh.is_some();
    // scratch: U' (r x k), V' (k x k), gU' (r x k), gV' (k x k), Uᵀ' gU', V'ᵀ gV',
    // inner (k x k), gA' (r x k), one column-major block of U or Vh (m x k / k x n)
    let kk = k * k;
    let scratch = 3 * r * k + 5 * kk + m.max(k) * n.max(k);
    let work = r * k * k * 6;
    let cx = SvdBack {
        u,
        vh,
        gu,
        gvh,
        bu: &bu,
        bv: &bv,
        bgu: &bgu,
        bgv: &bgv,
        s,
        gs,
        dims: (m, k, n),
        vector,
        gap: &gap,
        zero: &zero,
    };
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, _: Par| {
        // every block is written before it is read (utgu, vtgv only when used): no fill
        // per matrix
        if tmp.len() != scratch {
            tmp.clear();
            tmp.resize(scratch, T::ZERO);
        }
        svd_backward_simd(&cx, i, dst, tmp);
    };
    for_each_matrix(&mut out, size, work, false, one);
    if gap.load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Gap);
    }
    if zero.load(Ordering::Relaxed) != usize::MAX {
        return Err(SvdGradFail::Zero);
    }
    Ok((out, layout))
}

/// The factors `(U, S, V)` of each matrix, `(usz, k, vsz)` elements one after the other in
/// `packed`, as three arrays; split over the threads for a large batch (the serial copy
/// showed in the profile of a 1024 x 16 x 16 SVD's forward and backward).
fn unpack<T: LinalgElem>(
    packed: &[T],
    (usz, k, vsz): (usize, usize, usize),
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let size = usz + k + vsz;
    let len = packed.len() / size.max(1);
    // every element is copied in
    let mut uo = pool::overwritten(len * usz, T::ZERO);
    let mut so = pool::overwritten(len * k, T::ZERO);
    let mut vo = pool::overwritten(len * vsz, T::ZERO);
    let copy = |first: usize, u: &mut [T], s: &mut [T], v: &mut [T]| {
        let count = (u.len() + s.len() + v.len()).checked_div(size).unwrap_or(0);
        for j in 0..count {
            let c = &packed[(first + j) * size..(first + j + 1) * size];
            u[j * usz..(j + 1) * usz].copy_from_slice(&c[..usz]);
            s[j * k..(j + 1) * k].copy_from_slice(&c[usz..usz + k]);
            v[j * vsz..(j + 1) * vsz].copy_from_slice(&c[usz + k..]);
        }
    };
    if len > 1 && packed.len() >= 2 * TASK_WORK {
        let per = (TASK_WORK / size).max(1);
        let (pu, ps, pv) = (
            Parts::new(&mut uo, usz * per),
            Parts::new(&mut so, k * per),
            Parts::new(&mut vo, vsz * per),
        );
        run_tasks(len.div_ceil(per), |t| copy(t * per, pu.take(t), ps.take(t), pv.take(t)));
    } else {
        copy(0, &mut uo, &mut so, &mut vo);
    }
    (uo, so, vo)
}

/// The inputs of [`svd_backward`] (each array with its batch), the orders `(m, k, n)`,
/// whether a vector has a cotangent, and the first failing matrix of each kind.
struct SvdBack<'a, T> {
    u: (&'a [T], &'a Layout),
    vh: (&'a [T], &'a Layout),
    gu: Option<(&'a [T], &'a Layout)>,
    gvh: Option<(&'a [T], &'a Layout)>,
    bu: &'a Batch,
    bv: &'a Batch,
    bgu: &'a Option<Batch>,
    bgv: &'a Option<Batch>,
    s: &'a [T],
    gs: Option<&'a [T]>,
    dims: (usize, usize, usize),
    vector: bool,
    gap: &'a AtomicUsize,
    zero: &'a AtomicUsize,
}

/// Matrix `i` of [`svd_backward`] into `dst` through [`svd_backward_one`] in the CPU's
/// widest vector instructions (its products are loops over contiguous columns, which the
/// compiler vectorises; `k` a constant where it is common). `tmp` is the scratch.
fn svd_backward_simd<T: LinalgElem>(cx: &SvdBack<'_, T>, i: usize, dst: &mut [T], tmp: &mut [T]) {
    struct Kernel<'a, 'b, T, const K: usize> {
        cx: &'a SvdBack<'a, T>,
        i: usize,
        dst: &'b mut [T],
        tmp: &'b mut [T],
    }
    impl<T: LinalgElem, const K: usize> pulp::WithSimd for Kernel<'_, '_, T, K> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            svd_backward_one::<T, K>(self.cx, self.i, self.dst, self.tmp);
        }
    }
    let arch = crate::backend::cpu::simd::arch();
    by_order!(cx.dims.1;
        2 3 4 8 16 => |K| arch.dispatch(Kernel::<T, K> { cx, i, dst, tmp }),
        _ => arch.dispatch(Kernel::<T, 0> { cx, i, dst, tmp }));
}

/// One matrix of [`svd_backward`] for `k = K` (`K = 0`: any `k`): `gA` column-major into
/// `dst`, or a failure recorded in `cx`.
#[inline(always)]
fn svd_backward_one<T: LinalgElem, const K: usize>(
    cx: &SvdBack<'_, T>,
    i: usize,
    dst: &mut [T],
    tmp: &mut [T],
) {
    let SvdBack { u, vh, gu, gvh, bu, bv, bgu, bgv, s, gs, vector, gap, zero, .. } = *cx;
    let (m, k, n) = cx.dims;
    let k = if K > 0 { K } else { k };
    let (wide, r, size, kk) = (m < n, m.max(n), m * n, k * k);
    let (uu, rest) = tmp.split_at_mut(r * k);
    let (vv, rest) = rest.split_at_mut(kk);
    let (gu_, rest) = rest.split_at_mut(r * k);
    let (gv_, rest) = rest.split_at_mut(kk);
    let (utgu, rest) = rest.split_at_mut(kk);
    let (vtgv, rest) = rest.split_at_mut(kk);
    let (inner, rest) = rest.split_at_mut(kk);
    let (ga, blk) = rest.split_at_mut(r * k);
    let sv = &s[i * k..(i + 1) * k];
    let gsv = gs.map(|g| &g[i * k..(i + 1) * k]);
    // U' = U, V' = V (tall) or U' = V, V' = U (wide), column-major, and their cotangents:
    // each source with whether it is read transposed (V = Vhᵀ, straight off Vh)
    let src_u = (bu, u.0, false);
    let src_v = (bv, vh.0, true);
    let src_gu = bgu.as_ref().zip(gu).map(|(b, g)| (b, g.0, false));
    let src_gv = bgv.as_ref().zip(gvh).map(|(b, g)| (b, g.0, true));
    let (left, right, gleft, gright) =
        if wide { (src_v, src_u, src_gv, src_gu) } else { (src_u, src_v, src_gu, src_gv) };
    let load = |dst: &mut [T], (b, d, t): (&Batch, &[T], bool)| {
        if t {
            b.load_t(d, i, &mut dst[..n * k]);
        } else {
            b.load(d, i, &mut dst[..m * k]);
        }
    };
    load(uu, left);
    load(vv, right);
    if let Some(g) = gleft {
        load(gu_, g);
    }
    if let Some(g) = gright {
        load(gv_, g);
    }
    let (has_gu, has_gv) = (gleft.is_some(), gright.is_some());
    if vector {
        inner.fill(T::ZERO);
        if has_gu {
            atb::<T, K>(utgu, uu, gu_, (r, k), blk);
        }
        if has_gv {
            atb::<T, K>(vtgv, vv, gv_, (k, k), blk);
        }
        if let Err(f) = fill_inner(inner, utgu, vtgv, has_gu, has_gv, sv, gsv, k) {
            let at = if f == SvdGradFail::Gap { gap } else { zero };
            at.fetch_min(i, Ordering::Relaxed);
            return;
        }
        if let Some(g) = gsv {
            for j in 0..k {
                inner[j * k + j] += g[j];
            }
        }
        // gA' = U' inner
        for c in 0..k {
            let col = &mut ga[c * r..(c + 1) * r];
            col.fill(T::ZERO);
            gaxpy::<T, K>(col, uu, &inner[c * k..], 1, false, k);
        }
    } else {
        // a loss through S only: inner = diag(gS), so gA' = U' inner scales U''s
        // columns (one product in all instead of two)
        for c in 0..k {
            let g = gsv.map_or(T::ZERO, |g| g[c]);
            for (y, &uv) in ga[c * r..(c + 1) * r].iter_mut().zip(&uu[c * r..(c + 1) * r]) {
                *y = uv * g;
            }
        }
    }
    if has_gu && r > k {
        // + (I − U'U'ᵀ) gU' S⁻¹ (utgu = U'ᵀ gU')
        let eps = T::EPSILON.to_f64();
        let smax = sv[0].to_f64();
        let zero_tol = (k as f64) * eps * smax;
        let gmax = gu_.iter().fold(0.0f64, |a, x| a.max(x.to_f64().abs()));
        let thr = eps.sqrt() * gmax.max(f64::MIN_POSITIVE);
        for c in 0..k {
            // the column c of the projection, into the last column of gu_ in place
            let pc = &mut gu_[c * r..(c + 1) * r];
            gaxpy::<T, K>(pc, uu, &utgu[c * k..], 1, true, k);
            if sv[c].to_f64() <= zero_tol {
                if pc.iter().any(|x| x.to_f64().abs() > thr) {
                    zero.fetch_min(i, Ordering::Relaxed);
                    return;
                }
                continue;
            }
            let inv = T::ONE / sv[c];
            for (y, &p) in ga[c * r..(c + 1) * r].iter_mut().zip(pc.iter()) {
                *y += p * inv;
            }
        }
    }
    // gA' V'ᵀ (r x k), transposed into gA when wide
    for c in 0..k {
        let col = &mut gu_[c * r..(c + 1) * r];
        col.fill(T::ZERO);
        gaxpy::<T, K>(col, ga, &vv[c..], k, false, k);
    }
    if wide {
        for c in 0..k {
            for rr in 0..r {
                dst[rr * m + c] = gu_[c * r + rr];
            }
        }
    } else {
        dst.copy_from_slice(&gu_[..size]);
    }
}

/// `X = Aᵀ B` (`k x k`; `k = K` when `K > 0`) for column-major `A`, `B` (`rows x k`):
/// column `c` of `X` is the sum over `p` of `B[p, c]` times row `p` of `A`
/// ([`gaxpy`]), each entry summed over `p` in order, the bits of a dot product per entry;
/// `Aᵀ` (row-major `A`) into `at` first.
#[inline(always)]
fn atb<T: LinalgElem, const K: usize>(
    x: &mut [T],
    a: &[T],
    b: &[T],
    (rows, k): (usize, usize),
    at: &mut [T],
) {
    let k = if K > 0 { K } else { k };
    for rr in 0..k {
        for (p, &v) in a[rr * rows..(rr + 1) * rows].iter().enumerate() {
            at[p * k + rr] = v;
        }
    }
    for c in 0..k {
        let xc = &mut x[c * k..(c + 1) * k];
        xc.fill(T::ZERO);
        gaxpy::<T, K>(xc, at, &b[c * rows..], 1, false, rows);
    }
}

/// `dst ← dst ± Σ_p coef[p · stride] · src[p · len .. (p + 1) · len]` for `p` in
/// `0..terms` (`len = dst.len()`), each element summed in order of `p` (`−` when `neg`:
/// `y − a b` and `y + a (−b)` are the same bits). With `len = L` the sums stay in
/// registers (a local array) instead of going through `dst` for each term. Inlined into
/// [`svd_backward_one`], for its vector instructions (a closure there was not).
#[inline(always)]
fn gaxpy<T: LinalgElem, const L: usize>(
    dst: &mut [T],
    src: &[T],
    coef: &[T],
    stride: usize,
    neg: bool,
    terms: usize,
) {
    let len = dst.len();
    let c = |p: usize| if neg { -coef[p * stride] } else { coef[p * stride] };
    if L > 0 && len == L {
        let mut acc = [T::ZERO; L];
        acc.copy_from_slice(dst);
        for (p, s) in src.chunks_exact(L).take(terms).enumerate() {
            let x = c(p);
            for (y, &v) in acc.iter_mut().zip(s) {
                *y += v * x;
            }
        }
        dst.copy_from_slice(&acc);
    } else {
        for (p, s) in src.chunks_exact(len.max(1)).take(terms).enumerate() {
            let x = c(p);
            for (y, &v) in dst.iter_mut().zip(s) {
                *y += v * x;
            }
        }
    }
}

/// The off-diagonal part of the inner matrix of [`svd_backward`] (`k x k`,
/// column-major): `(skU_ij s_j + s_i skV_ij) / (s_j² − s_i²)` for pairs with a gap,
/// `(skU − skV)_ij / (2 (s_i + s_j))` for degenerate pairs with `s > 0` whose loss is
/// invariant, 0 within a zero block; `skU = UᵀgU − (UᵀgU)ᵀ` from `utgu` (likewise `V`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fill_inner<T: LinalgElem>(
    inner: &mut [T],
    utgu: &[T],
    vtgv: &[T],
    has_gu: bool,
    has_gv: bool,
    s: &[T],
    gs: Option<&[T]>,
    k: usize,
) -> Result<(), SvdGradFail> {
    let eps = T::EPSILON.to_f64();
    let tiny = f64::MIN_POSITIVE;
    let smax = s[0].to_f64();
    let gap_tol = 16.0 * (k as f64) * eps * smax * smax;
    // the usual case, every pair with a gap: the first formula alone, in loops with no
    // branch (the same operations as below; the per-entry tests and the thresholds' scans
    // were half the backward's instructions at k = 16)
    let mut gapped = true;
    for j in 0..k {
        let sj = s[j].to_f64();
        for (i, si) in s[..k].iter().enumerate() {
            let si = si.to_f64();
            gapped &= i == j || (sj * sj - si * si).abs() > gap_tol;
        }
    }
    if gapped {
        for j in 0..k {
            let diag = inner[j * k + j];
            let sj = s[j];
            let sj2 = s[j] * s[j];
            for i in 0..k {
                let a = if has_gu { utgu[j * k + i] - utgu[i * k + j] } else { T::ZERO };
                let c = if has_gv { vtgv[j * k + i] - vtgv[i * k + j] } else { T::ZERO };
                // (0 / 0 on the diagonal, put back below)
                inner[j * k + i] = (a * sj + s[i] * c) / (sj2 - s[i] * s[i]);
            }
            inner[j * k + j] = diag;
        }
        return Ok(());
    }
    let zero_tol = (k as f64) * eps * smax;
    let maxabs = |x: &[T], on: bool| {
        if on {
            x.iter().fold(0.0f64, |a, v| a.max(v.to_f64().abs()))
        } else {
            0.0
        }
    };
    let sc = maxabs(utgu, has_gu) + maxabs(vtgv, has_gv);
    let thr = eps.sqrt() * sc.max(tiny);
    let thr_s = eps.sqrt() * gs.map_or(0.0, |g| maxabs(g, true)).max(tiny);
    // entry (i, j) of a column-major k x k block
    let sk = |x: &[T], on: bool, i: usize, j: usize| {
        if on {
            x[j * k + i] - x[i * k + j]
        } else {
            T::ZERO
        }
    };
    for j in 0..k {
        for i in 0..k {
            if i == j {
                continue;
            }
            let (a, c) = (sk(utgu, has_gu, i, j), sk(vtgv, has_gv, i, j));
            let (si, sj) = (s[i].to_f64(), s[j].to_f64());
            let idx = j * k + i;
            if (sj * sj - si * si).abs() > gap_tol {
                let e = s[j] * s[j] - s[i] * s[i];
                inner[idx] = (a * s[j] + s[i] * c) / e;
                continue;
            }
            let (af, cf) = (a.to_f64(), c.to_f64());
            if si <= zero_tol && sj <= zero_tol {
                if af.abs() > thr || cf.abs() > thr {
                    return Err(SvdGradFail::Gap);
                }
                continue;
            }
            let dgs = gs.map_or(0.0, |g| g[i].to_f64() - g[j].to_f64());
            if (af + cf).abs() > thr || dgs.abs() > thr_s {
                return Err(SvdGradFail::Gap);
            }
            inner[idx] = (a - c) / ((s[j] + s[i]) * T::of(2.0));
        }
    }
    Ok(())
}

/// Flips the sign of column `j` of `u` (`m` rows) and of column `j` of `v` (`n` rows,
/// the row `j` of `Vh`) when the entry of largest magnitude of `u`'s column (the first on
/// ties) is negative.
fn fix_gauge<T: LinalgElem>(u: &mut [T], m: usize, v: &mut [T], n: usize, cols: usize) {
    for j in 0..cols {
        let uc = &mut u[j * m..(j + 1) * m];
        if largest_is_negative(uc) {
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

/// Whether the entry of largest magnitude of `col` (the first one on ties) is negative.
#[inline(always)]
fn largest_is_negative<T: LinalgElem>(col: &[T]) -> bool {
    // (selects, not branches: which entry is largest is data, a branch mispredicts)
    let mut best = T::ZERO;
    let mut neg = false;
    for &x in col {
        let gt = x.abs() > best;
        best = if gt { x.abs() } else { best };
        neg = if gt { x < T::ZERO } else { neg };
    }
    neg
}

/// The SVD of each matrix of `a` (layout `l`, `(*, m, n)`), per matrix: one-sided Jacobi
/// up to [`JACOBI_MAX`] (up to [`JACOBI_ROOM`] in batches of at least [`LANES`] matrices,
/// every matrix of such a batch in lanes, the last partial group padded: up to
/// [`JACOBI_MAX`] the bits the matrix gets alone; so a matrix of 9 to 16 rows or columns
/// may differ in the last bits from the same matrix decomposed alone),
/// [`svd_split`](super::svd_split) otherwise and for matrices Jacobi does not finish (a
/// zero singular value with vectors asked, `full`, no convergence), [`svd_vector`] when
/// `min(m, n) = 1`. Singular values in
/// descending order; with `want_uv`, `U` and `V` (`full`: `m x m` and `n x n`, else
/// `m x k` and `n x k`). Gauge: the entry of largest magnitude of each column of `U` is
/// positive (the first such entry on ties), the matching column of `V` flipped with it;
/// for `full` the completion columns follow the same rule, each on its own. `Err(i)`: matrix
/// `i` has a non-finite entry or did not converge.
pub(crate) fn svd<T: JacobiElem>(
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
    let failed = AtomicUsize::new(usize::MAX);
    let work = m * n * k.max(1);
    // Jacobi up to JACOBI_MAX, and up to JACOBI_ROOM for batches of a lane group or more
    // (every matrix of such a batch in lanes; alone, the ones the lanes leave)
    let lanes = len >= LANES && m.max(n) <= JACOBI_ROOM && k > 0;
    let jacobi = (m.max(n) <= JACOBI_MAX || lanes) && (!want_uv || ku == k && kv == k);
    let one = |i: usize, dst: &mut [T], tmp: &mut Vec<T>, threaded: bool| {
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
        if jacobi {
            let uv = want_uv.then_some((&mut *u, &mut *v));
            // (the sign gauge applied in jacobi_finish)
            if jacobi_small(tmp, m, n, s, uv) {
                return;
            }
        }
        let uvs = want_uv.then_some((&mut *u, ku, &mut *v, kv));
        if k == 1 {
            svd_vector(tmp, m, n, s, uvs);
        } else {
            let mut sc = svd_split::Scratch::default();
            if !svd_split::svd_split(tmp, m, n, s, uvs, threaded, &mut sc) {
                failed.fetch_min(i, Ordering::Relaxed);
                return;
            }
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
    if jacobi && lanes {
        // straight into U, S and V, each task a run of lane groups (the batch's last,
        // partial group in lanes too: every matrix alike), no packed copy
        let mut uo = pool::overwritten(len * usz, T::ZERO);
        let mut so = pool::overwritten(len * k, T::ZERO);
        let mut vo = pool::overwritten(len * vsz, T::ZERO);
        let per = lane_split(len, work).0;
        let (pu, ps, pv) = (
            Parts::new(&mut uo, usz * per),
            Parts::new(&mut so, k * per),
            Parts::new(&mut vo, vsz * per),
        );
        run_tasks(len.div_ceil(per), |t| {
            let (u, s, v) = (pu.take(t), ps.take(t), pv.take(t));
            let mut sc = LaneScratch::new(m, n);
            let mut one_out = Vec::new();
            let groups = (s.len() / k).div_ceil(LANES);
            for g in 0..groups {
                let first = t * per + g * LANES;
                let at = g * LANES;
                let count = (s.len() / k - at).min(LANES);
                let ug = &mut u[at * usz..(at + count) * usz];
                let sg = &mut s[at * k..(at + count) * k];
                let vg = &mut v[at * vsz..(at + count) * vsz];
                let bad = jacobi_lanes(&ba, a, first, count, want_uv, (ug, sg, vg), &mut sc);
                for (l, _) in bad.iter().enumerate().take(count).filter(|(_, &b)| b) {
                    one_out.clear();
                    one_out.resize(size, T::ZERO);
                    one(first + l, &mut one_out, &mut sc.tmp, false);
                    let (i, j) = (at + l, &one_out);
                    u[i * usz..(i + 1) * usz].copy_from_slice(&j[..usz]);
                    s[i * k..(i + 1) * k].copy_from_slice(&j[usz..usz + k]);
                    v[i * vsz..(i + 1) * vsz].copy_from_slice(&j[usz + k..]);
                }
            }
        });
        drop((pu, ps, pv));
        let f = failed.load(Ordering::Relaxed);
        if f != usize::MAX {
            return Err(f);
        }
        return Ok(out_of(&ba, (uo, so, vo), want_uv, (m, n, k, ku, kv)));
    }
    let mut packed = pool::filled(len * size, T::ZERO);
    if len == 1 {
        // from the calling thread, not a worker of the pool: the bidiagonalisation's
        // column ranges then stay with the same threads from one column to the next
        // (on a worker its tasks are rayon's parallel loop)
        one(0, &mut packed, &mut Vec::new(), true);
    } else {
        for_each_matrix(&mut packed, size, work, false, |i, dst, tmp, _| one(i, dst, tmp, false));
    }
    let f = failed.load(Ordering::Relaxed);
    if f != usize::MAX {
        return Err(f);
    }
    let (uo, so, vo) = unpack(&packed, (usz, k, vsz));
    pool::give(packed);
    Ok(out_of(&ba, (uo, so, vo), want_uv, (m, n, k, ku, kv)))
}

/// The SVD of an `m x n` matrix with `min(m, n) = 1` (a column or a row `x`, finite):
/// `s = ‖x‖` (computed on `x` divided by a power of two near its largest entry, so that
/// the squares neither overflow nor underflow), the unit vector `x / s` (`e₀` for `x = 0`)
/// as the one column of `U` (tall) or `V` (wide), and `1` as the other factor. With
/// `ku = m` (`kv = n`), the completion columns are the other columns of the Householder
/// reflector that maps `e₀` to `±x / s`: orthonormal, and orthogonal to `x`.
fn svd_vector<T: LinalgElem>(
    x: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], usize, &mut [T], usize)>,
) {
    let amax = x.iter().fold(T::ZERO, |a, &v| if v.abs() > a { v.abs() } else { a });
    let unit = if amax == T::ZERO { T::ONE } else { pow2_near(amax) };
    let norm = x.iter().map(|&v| (v / unit) * (v / unit)).sum::<T>().sqrt();
    s[0] = norm * unit;
    let Some((u, ku, v, kv)) = uv else { return };
    // the long factor (`len x cols`) takes x / s, the other is [1] (its completion, if
    // any, is empty: its order is 1)
    let tall = m >= n;
    let (long, cols, short) = if tall { (u, ku, v) } else { (v, kv, u) };
    let len = m.max(n);
    let col: Vec<T> = if norm == T::ZERO {
        (0..len).map(|i| if i == 0 { T::ONE } else { T::ZERO }).collect()
    } else {
        x.iter().map(|&v| (v / unit) / norm).collect()
    };
    short[0] = T::ONE;
    long[..len].copy_from_slice(&col);
    if cols > 1 {
        // H = I − 2 w wᵀ / (wᵀw), w = x̂ + σ e₀ with σ the sign of x̂₀: wᵀw = 2 + 2 |x̂₀|
        let sigma = if col[0] < T::ZERO { -T::ONE } else { T::ONE };
        let mut w = col;
        w[0] += sigma;
        let f = T::of(2.0) / w.iter().map(|&v| v * v).sum::<T>();
        for j in 1..cols {
            let dst = &mut long[j * len..(j + 1) * len];
            for (i, y) in dst.iter_mut().enumerate() {
                let e = if i == j { T::ONE } else { T::ZERO };
                *y = e - f * w[i] * w[j];
            }
        }
    }
}

/// [`SvdOut`] of a batch `ba` from its factors `U` (`(*, m, ku)` column-major), `S`
/// (`(*, k)`) and `V` (`(*, n, kv)` column-major, so `Vh` `(*, kv, n)` contiguous).
fn out_of<T>(
    ba: &Batch,
    (uo, so, vo): (Vec<T>, Vec<T>, Vec<T>),
    want_uv: bool,
    (m, n, k, ku, kv): (usize, usize, usize, usize, usize),
) -> SvdOut<T> {
    let mut sdims = ba.dims.clone();
    sdims.push(k);
    let s = (so, Layout::contiguous(Shape::new(sdims)));
    if !want_uv {
        return SvdOut { u: None, s, vh: None };
    }
    let mut vdims = ba.dims.clone();
    vdims.extend([kv, n]);
    SvdOut {
        u: Some((uo, colmajor_layout(&ba.dims, m, ku))),
        s,
        vh: Some((vo, Layout::contiguous(Shape::new(vdims)))),
    }
}
