//! The SVD of one matrix (`min(m, n) >= 2`) from our own stages: the blocked
//! bidiagonalisation [`bidiag_split`], the bidiagonal divide and conquer [`bidiag_dc`],
//! and faer's blocked application of the reflectors to the bidiagonal's singular vectors
//! (the stages of LAPACK's `dgesdd`; faer's own `svd` bidiagonalises unblocked, and its
//! bidiagonal solver is not public). A matrix taller (wider) than [`SPLIT_RATIO`] is first
//! factorised by LAPACK's blocked Householder QR ([`householder`](super::householder)),
//! and its `R` goes through the same stages ([`svd_tall`]), as `dgesdd` does
//! (docs/benchmarks.md has the timings).

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::recommended_block_size;
use faer::{Conj, MatMut, MatRef, Par};

use super::bidiag_dc::{bidiag_dc, Work};
use super::bidiag_split::{bidiag_split, Scratch as SplitScratch};
use super::householder as hh;
use super::jacobi::pow2_near;
use super::qr::QrElem;
use super::LinalgElem;
use crate::backend::cpu::par::with_par;
use crate::backend::cpu::pool::{self, Pooled};

/// Largest `max(m, n) / min(m, n)` that [`svd_split`] bidiagonalises directly; a taller
/// (wider) matrix is first factorised by QR (LQ), and its `R` decomposed ([`svd_tall`]),
/// as LAPACK's `dgesdd` does from about this ratio (faer's `svd` uses the same, `11 / 6`).
const SPLIT_RATIO: f64 = 11.0 / 6.0;

/// Order from which the bidiagonal divide and conquer may run its halves in parallel, and
/// work `m k²` from which faer applies the reflectors on every thread. On two threads
/// each made svdvals fwd+bwd at 256 faster, and both together the fastest.
const DC_PAR: usize = 128;
const BACK_PAR: usize = 200 * 200 * 200;

/// Workspace of [`svd_split`], reused across the matrices of one task.
#[derive(Default)]
pub(crate) struct Scratch<T: Pooled> {
    /// The (transposed, scaled) matrix, reduced in place.
    a: Vec<T>,
    hl: Vec<T>,
    hr: Vec<T>,
    e: Vec<T>,
    /// The bidiagonal's singular vectors, `k x k` each.
    ub: Vec<T>,
    vb: Vec<T>,
    /// The signs that make the bidiagonal's entries non-negative.
    rs: Vec<T>,
    cs: Vec<T>,
    split: SplitScratch<T>,
    dc: Work<T>,
    /// The right reflectors as columns, `k x k`.
    r: Vec<T>,
    /// faer's workspaces (applying `Q`, applying `P`), with the requirement each was sized
    /// for.
    mem: Option<(StackReq, MemBuffer)>,
    mem2: Option<(StackReq, MemBuffer)>,
    /// [`svd_tall`]: the QR factorisation (`mm x k`) and its `τ`, `R`, and `R`'s
    /// left singular vectors.
    qa: Vec<T>,
    qh: Vec<T>,
    rk: Vec<T>,
    ur: Vec<T>,
    hh: hh::Scratch<T>,
}

impl<T: Pooled> Drop for Scratch<T> {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.a));
        pool::give(std::mem::take(&mut self.ub));
        pool::give(std::mem::take(&mut self.vb));
        pool::give(std::mem::take(&mut self.r));
        pool::give(std::mem::take(&mut self.qa));
        pool::give(std::mem::take(&mut self.rk));
        pool::give(std::mem::take(&mut self.ur));
    }
}

/// The SVD of the `m x n` column-major `a` (finite entries; `min(m, n) >= 2`):
/// the singular values into `s` (`k = min(m, n)`, descending), and with `uv = Some((u,
/// ku, v, kv))` the singular vectors, `U` `m x ku` and `V` `n x kv` column-major (`ku`
/// is `k` or `m`, `kv` is `k` or `n`: thin or full; completion columns of `U`, `V` are an
/// orthonormal basis of the rest). `threads`: the stages of a large enough matrix may use
/// every thread of the pool (the result does not depend on it). False if the bidiagonal
/// divide and conquer failed. A matrix taller or wider than [`SPLIT_RATIO`] goes through
/// [`svd_tall`].
pub(crate) fn svd_split<T: QrElem>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], usize, &mut [T], usize)>,
    threads: bool,
    sc: &mut Scratch<T>,
) -> bool {
    let k = m.min(n);
    debug_assert!(k >= 2 && a.len() == m * n && s.len() == k);
    // the reduction of the taller of A and Aᵀ (`mm x k`): A = Q B Pᵀ, or Aᵀ = Q B Pᵀ
    let tall = m >= n;
    let mm = m.max(n);
    if mm as f64 > SPLIT_RATIO * k as f64 {
        return svd_tall(a, m, n, s, uv, threads, sc);
    }
    let scale = load_taller(a, m, n, &mut sc.a);
    let bs = recommended_block_size::<T>(mm, k);
    sc.hl.resize(bs * k, T::ZERO);
    sc.hr.resize(bs * (k - 1), T::ZERO);
    bidiag_split(&mut sc.a, mm, k, &mut sc.hl, &mut sc.hr, bs, threads, &mut sc.split);
    // B = R |B| C with R, C diagonal signs: |B| = U' Σ V'ᵀ gives U_B = R U', V_B = C V'
    sc.e.clear();
    sc.e.resize(k, T::ZERO);
    sc.rs.resize(k, T::ONE);
    sc.cs.resize(k, T::ONE);
    // r₀ = 1, c₀ = sign(d₀); c_j = sign(r_{j−1} e_{j−1}), r_j = sign(c_j d_j)
    let sign = |x: T| if x < T::ZERO { -T::ONE } else { T::ONE };
    for (j, sj) in s.iter_mut().enumerate() {
        let dj = sc.a[j * mm + j];
        let (r, c) = if j == 0 {
            (T::ONE, sign(dj))
        } else {
            let ej = sc.a[j * mm + j - 1];
            sc.e[j - 1] = ej.abs();
            let c = sign(sc.rs[j - 1] * ej);
            (sign(c * dj), c)
        };
        sc.rs[j] = r;
        sc.cs[j] = c;
        *sj = dj.abs();
    }
    let Some((u, ku, v, kv)) = uv else {
        let parallel = threads && k >= DC_PAR;
        let (d, e, dc) = (&mut *s, &mut sc.e, &mut sc.dc);
        if !with_par(parallel, move |_| bidiag_dc(d, e, None, parallel, dc)) {
            return false;
        }
        for x in s.iter_mut() {
            *x *= scale;
        }
        return true;
    };
    for buf in [&mut sc.ub, &mut sc.vb] {
        buf.clear();
        pool::reserve(buf, k * k);
        buf.resize(k * k, T::ZERO);
    }
    let parallel = threads && k >= DC_PAR;
    // on a worker of the pool when parallel, for the merges' joins (from outside the pool
    // each join waited for a wake-up, which made n = 256 slower and erratic)
    let (d, e, ub, vb, dc) = (&mut *s, &mut sc.e, &mut sc.ub, &mut sc.vb, &mut sc.dc);
    let ok = with_par(parallel, move |_| bidiag_dc(d, e, Some((ub, vb)), parallel, dc));
    if !ok {
        return false;
    }
    for x in s.iter_mut() {
        *x *= scale;
    }
    // the left and right vectors of the taller matrix (`mm x kq`, `k x kp`)
    let (q, kq, p, kp) = if tall { (u, ku, v, kv) } else { (v, kv, u, ku) };
    fill_factor(q, mm, kq, &sc.ub, &sc.rs, k);
    fill_factor(p, k, kp, &sc.vb, &sc.cs, k);
    // the right reflectors (rows of the reduced matrix right of the superdiagonal) as the
    // columns of their own matrix, below its diagonal; then Q and P applied at once, one
    // per thread when there are threads (each in sequence: faster than two parallel
    // applications one after the other)
    sc.r.clear();
    pool::reserve(&mut sc.r, k * k);
    sc.r.resize(k * k, T::ZERO);
    for j in 1..k {
        for (i, &x) in sc.a[j * mm..j * mm + j].iter().enumerate() {
            sc.r[i * k + j] = x;
        }
    }
    let req = apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(mm, bs, kq);
    let mem = match &mut sc.mem {
        Some((r, mem)) if *r == req => mem,
        slot => &mut slot.insert((req, MemBuffer::new(req))).1,
    };
    let req2 = apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(k - 1, bs, kp);
    let mem2 = match &mut sc.mem2 {
        Some((r, mem)) if *r == req2 => mem,
        slot => &mut slot.insert((req2, MemBuffer::new(req2))).1,
    };
    let (a, hl, r, hr) = (&sc.a, &sc.hl, &sc.r, &sc.hr);
    let mut left = move || {
        apply_block_householder_sequence_on_the_left_in_place_with_conj(
            MatRef::from_column_major_slice(a, mm, k),
            MatRef::from_column_major_slice(hl, bs, k),
            Conj::No,
            MatMut::from_column_major_slice_mut(q, mm, kq),
            Par::Seq,
            MemStack::new(mem),
        );
    };
    let mut right = move || {
        apply_block_householder_sequence_on_the_left_in_place_with_conj(
            MatRef::from_column_major_slice(r, k, k).submatrix(1, 0, k - 1, k - 1),
            MatRef::from_column_major_slice(hr, bs, k - 1),
            Conj::No,
            MatMut::from_column_major_slice_mut(p, k, kp).subrows_mut(1, k - 1),
            Par::Seq,
            MemStack::new(mem2),
        );
    };
    if threads && mm * k * k >= BACK_PAR {
        with_par(true, move |_| rayon::join(left, right));
    } else {
        left();
        right();
    }
    true
}

/// [`svd_split`] of a matrix taller than [`SPLIT_RATIO`] (or wider, through its
/// transpose), as LAPACK's `dgesdd` does it: `A = Q R` by the blocked Householder QR
/// of the taller of `A` and `Aᵀ` (`mm x k`), the SVD `R = U_R S Vᵀ` of the `k x k`
/// triangle by [`svd_split`], then `U = Q [U_R; 0]` (thin) or `Q [U_R, 0; 0, I]` (full)
/// by the blocked application of the QR's reflectors. The bidiagonalisation then
/// works on `k x k` instead of `mm x k`: `4 k³ / 3` of its flops instead of
/// `4 mm k² − 4 k³ / 3`, for `2 mm k² − 2 k³ / 3` of the QR's, at GEMM speed. Same
/// arguments and result as [`svd_split`].
fn svd_tall<T: QrElem>(
    a: &[T],
    m: usize,
    n: usize,
    s: &mut [T],
    uv: Option<(&mut [T], usize, &mut [T], usize)>,
    threads: bool,
    sc: &mut Scratch<T>,
) -> bool {
    let k = m.min(n);
    let tall = m >= n;
    let mm = m.max(n);
    // (scaled, so that the QR's norms neither overflow nor lose digits to underflow)
    let mut qa = std::mem::take(&mut sc.qa);
    let scale = load_taller(a, m, n, &mut qa);
    let mut tau = std::mem::take(&mut sc.qh);
    tau.clear();
    tau.resize(k, T::ZERO);
    let parts = if threads && mm * k * k >= BACK_PAR { rayon::current_num_threads() } else { 1 };
    hh::geqrf(&mut qa, mm, k, &mut tau, hh::block_size(k), parts, &mut sc.hh);
    // R, the upper triangle of the first k rows
    let mut rk = std::mem::take(&mut sc.rk);
    rk.clear();
    pool::reserve(&mut rk, k * k);
    rk.resize(k * k, T::ZERO);
    for j in 0..k {
        rk[j * k..j * k + j + 1].copy_from_slice(&qa[j * mm..j * mm + j + 1]);
    }
    let mut ur = std::mem::take(&mut sc.ur);
    let ok = match uv {
        None => svd_split(&rk, k, k, s, None, threads, sc),
        Some((u, ku, v, kv)) => {
            // the left vectors of the taller matrix (`mm x kq`) and its right ones (`k x k`)
            let (q, kq, p, kp) = if tall { (u, ku, v, kv) } else { (v, kv, u, ku) };
            debug_assert_eq!(kp, k);
            ur.clear();
            pool::reserve(&mut ur, k * k);
            ur.resize(k * k, T::ZERO);
            let ok = svd_split(&rk, k, k, s, Some((&mut ur[..], k, p, kp)), threads, sc);
            if ok {
                q.fill(T::ZERO);
                for j in 0..k {
                    q[j * mm..j * mm + k].copy_from_slice(&ur[j * k..(j + 1) * k]);
                }
                for j in k..kq {
                    q[j * mm + j] = T::ONE;
                }
                hh::apply_q(&qa, mm, &tau, q, false, parts, &mut sc.hh);
            }
            ok
        }
    };
    (sc.qa, sc.qh, sc.rk, sc.ur) = (qa, tau, rk, ur);
    if ok {
        for x in s.iter_mut() {
            *x *= scale;
        }
    }
    ok
}

/// The taller of the `m x n` column-major `a` and its transpose (`max(m, n) x min(m, n)`,
/// column-major) into `dst`, divided by a power of two near its largest magnitude (exact,
/// undone by multiplying the singular values by it: the scaled matrix's squares neither
/// overflow nor underflow); returns that power (1 for a zero matrix).
fn load_taller<T: LinalgElem>(a: &[T], m: usize, n: usize, dst: &mut Vec<T>) -> T {
    let amax = a.iter().fold(T::ZERO, |x, &y| if y.abs() > x { y.abs() } else { x });
    let scale = if amax == T::ZERO { T::ONE } else { pow2_near(amax) };
    let inv = T::ONE / scale;
    dst.clear();
    pool::reserve(dst, m * n);
    if m >= n {
        dst.extend(a.iter().map(|&x| x * inv));
    } else {
        dst.resize(m * n, T::ZERO);
        for j in 0..n {
            for i in 0..m {
                dst[i * n + j] = a[j * m + i] * inv;
            }
        }
    }
    scale
}

/// `dst` (`rows x cols`, column-major) = `[diag(signs) w, 0; 0, I]` with `w` the `k x k`
/// column-major bidiagonal vectors: the factor before its reflectors are applied.
fn fill_factor<T: LinalgElem>(
    dst: &mut [T],
    rows: usize,
    cols: usize,
    w: &[T],
    signs: &[T],
    k: usize,
) {
    dst.fill(T::ZERO);
    for j in 0..k {
        for ((d, &x), &sg) in
            dst[j * rows..j * rows + k].iter_mut().zip(&w[j * k..(j + 1) * k]).zip(signs)
        {
            *d = x * sg;
        }
    }
    for j in k..cols {
        dst[j * rows + j] = T::ONE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::linalg::tridiag_qr::tests::rnd;
    use faer::linalg::svd::{self as fsvd, ComputeSvdVectors};

    /// `max |Xᵀ X − I|` of the `rows x cols` column-major `x`.
    fn orthogonality(x: &[f64], rows: usize, cols: usize) -> f64 {
        let mut worst = 0.0f64;
        for i in 0..cols {
            for j in 0..cols {
                let dot: f64 = (0..rows).map(|r| x[i * rows + r] * x[j * rows + r]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                worst = worst.max((dot - want).abs());
            }
        }
        worst
    }

    /// Square, tall and wide matrices (the wide ones through their transpose; beyond
    /// `SPLIT_RATIO` by QR first), thin and
    /// full, full rank and of rank `k / 2`, scaled by 1e-200 and 1e200: `U diag(S) Vᵀ`
    /// reconstructs the matrix, `U` and `V` are orthonormal, and `S` is faer's (an
    /// independent SVD) to rounding; the values-only run gives the same `S`.
    #[test]
    fn factors_of_square_tall_and_wide_matrices() {
        let mut state = 11;
        let mut sc = Scratch::default();
        let shapes = [
            (64, 64),
            (70, 64),
            (64, 70),
            (97, 97),
            (150, 100),
            (100, 150),
            (200, 200),
            // QR (LQ) first
            (130, 64),
            (64, 130),
            (300, 70),
            (70, 300),
        ];
        for (m, n) in shapes {
            let base: Vec<f64> = (0..m * n).map(|_| rnd(&mut state)).collect();
            for (rank_def, scale) in [(false, 1.0), (true, 1.0), (false, 1e-200), (false, 1e200)] {
                let k = m.min(n);
                let mut a = base.clone();
                if rank_def {
                    // the product of m x k/2 and k/2 x n factors
                    let r = k / 2;
                    let l: Vec<f64> = (0..m * r).map(|_| rnd(&mut state)).collect();
                    let rt: Vec<f64> = (0..r * n).map(|_| rnd(&mut state)).collect();
                    for j in 0..n {
                        for i in 0..m {
                            a[j * m + i] = (0..r).map(|p| l[p * m + i] * rt[j * r + p]).sum();
                        }
                    }
                }
                for x in &mut a {
                    *x *= scale;
                }
                let mut want = vec![0.0; k];
                let req = fsvd::svd_scratch::<f64>(
                    m,
                    n,
                    ComputeSvdVectors::No,
                    ComputeSvdVectors::No,
                    Par::Seq,
                    faer::Spec::default(),
                );
                let mut mem = MemBuffer::new(req);
                // (faer's own SVD of the scaled matrix is wrong at 1e-200: its singular
                // values are taken from the unscaled one)
                let unscaled: Vec<f64> = a.iter().map(|x| x / scale).collect();
                fsvd::svd(
                    MatRef::from_column_major_slice(&unscaled, m, n),
                    faer::diag::DiagMut::from_slice_mut(&mut want),
                    None,
                    None,
                    Par::Seq,
                    MemStack::new(&mut mem),
                    faer::Spec::default(),
                )
                .unwrap();
                for w in &mut want {
                    *w *= scale;
                }
                let anorm = want[0];
                let mut vals = vec![0.0; k];
                assert!(svd_split(&a, m, n, &mut vals, None, false, &mut sc));
                for full in [false, true] {
                    let (ku, kv) = if full { (m, n) } else { (k, k) };
                    let (mut u, mut v, mut s) =
                        (vec![0.0; m * ku], vec![0.0; n * kv], vec![0.0; k]);
                    let uv = Some((&mut u[..], ku, &mut v[..], kv));
                    assert!(svd_split(&a, m, n, &mut s, uv, false, &mut sc));
                    let tol = 1e-14 * (m + n) as f64;
                    let what = format!("{m}x{n} rank_def {rank_def} scale {scale:e} full {full}");
                    for (j, (&x, &y)) in s.iter().zip(&want).enumerate() {
                        assert!((x - y).abs() <= tol * anorm, "{what}: s[{j}] {x} vs {y}");
                        assert!(x >= 0.0 && (j == 0 || x <= s[j - 1]), "{what}: order");
                        let vj = vals[j];
                        assert!((x - vj).abs() <= tol * anorm, "{what}: values only {vj}");
                    }
                    assert!(orthogonality(&u, m, ku) <= tol, "{what}: U");
                    assert!(orthogonality(&v, n, kv) <= tol, "{what}: V");
                    for j in 0..n {
                        for i in 0..m {
                            let r: f64 = (0..k).map(|p| u[p * m + i] * s[p] * v[p * n + j]).sum();
                            let x = a[j * m + i];
                            assert!((r - x).abs() <= tol * anorm, "{what}: A[{i}, {j}]");
                        }
                    }
                }
            }
        }
    }

    /// The same bits on one thread and in pools of two and three (the bidiagonalisation's
    /// threaded products from 320 x 320, the divide and conquer's parallel merges from
    /// order 256).
    #[test]
    fn the_same_bits_on_any_number_of_threads() {
        let mut state = 3;
        let (m, n) = (340, 330);
        let a: Vec<f64> = (0..m * n).map(|_| rnd(&mut state)).collect();
        let run = |threads: usize, parallel: bool| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut sc = Scratch::default();
                let (mut u, mut v, mut s) = (vec![0.0; m * n], vec![0.0; n * n], vec![0.0; n]);
                let uv = Some((&mut u[..], n, &mut v[..], n));
                assert!(svd_split(&a, m, n, &mut s, uv, parallel, &mut sc));
                let all = s.iter().chain(&u).chain(&v);
                all.map(|x| x.to_bits()).collect::<Vec<u64>>()
            })
        };
        let one = run(1, false);
        assert!(one == run(2, true), "2 threads");
        assert!(one == run(3, true), "3 threads");
    }

    /// f32 (the bidiagonalisation's f32 kernels, threaded from 320 x 320; 200 x 64 and
    /// 64 x 200 by QR first): the factors reconstruct the matrix and are orthonormal to f32
    /// rounding, and `S` is the f64 decomposition's of the same matrix to f32 rounding.
    #[test]
    fn f32_factors() {
        let mut state = 7;
        let mut sc32 = Scratch::<f32>::default();
        let mut sc64 = Scratch::<f64>::default();
        for (m, n) in [(100, 80), (80, 100), (330, 330), (200, 64), (64, 200)] {
            let k = m.min(n);
            let a: Vec<f64> = (0..m * n).map(|_| rnd(&mut state)).collect();
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let a_of32: Vec<f64> = a32.iter().map(|&x| f64::from(x)).collect();
            let mut want = vec![0.0f64; k];
            assert!(svd_split(&a_of32, m, n, &mut want, None, true, &mut sc64));
            let (mut u, mut v, mut s) = (vec![0.0f32; m * k], vec![0.0f32; n * k], vec![0.0f32; k]);
            assert!(svd_split(
                &a32,
                m,
                n,
                &mut s,
                Some((&mut u[..], k, &mut v[..], k)),
                true,
                &mut sc32
            ));
            let tol = 4.0 * f64::from(f32::EPSILON) * (m + n) as f64;
            let (u, v): (Vec<f64>, Vec<f64>) =
                (u.iter().map(|&x| x.into()).collect(), v.iter().map(|&x| x.into()).collect());
            assert!(orthogonality(&u, m, k) <= tol, "{m}x{n}: U");
            assert!(orthogonality(&v, n, k) <= tol, "{m}x{n}: V");
            for (j, (&x, &y)) in s.iter().zip(&want).enumerate() {
                assert!((f64::from(x) - y).abs() <= tol * want[0], "{m}x{n}: s[{j}] {x} vs {y}");
            }
            for j in 0..n {
                for i in 0..m {
                    let r: f64 =
                        (0..k).map(|p| u[p * m + i] * f64::from(s[p]) * v[p * n + j]).sum();
                    assert!((r - a_of32[j * m + i]).abs() <= tol * want[0], "{m}x{n}: A[{i}, {j}]");
                }
            }
        }
    }
}
