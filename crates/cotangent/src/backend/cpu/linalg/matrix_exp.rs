//! The matrix exponential by scaling and squaring with Padé approximants (Higham 2005,
//! "The scaling and squaring method for the matrix exponential revisited", SIAM J. Matrix
//! Anal. Appl. 26(4), Algorithm 2.3), batched.
//!
//! Per matrix: the degree `m ∈ {3, 5, 7, 9, 13}` (f32: `{3, 5, 7}`) is the smallest whose
//! bound `θ_m` the 1-norm does not exceed; above the largest, `A` is scaled by `2⁻ˢ` so
//! that it does, and the approximant is squared `s` times. The approximant
//! `r_m(A) = (V − U)⁻¹ (V + U)` (`U` the odd part, `V` the even part) is one LU solve.
//! Products run through own loops for small matrices and faer's GEMM above.
//! A matrix with a NaN or an infinity gives NaN everywhere (as PyTorch), without a loop;
//! a `1 x 1` matrix is the scalar exponential (as PyTorch: `exp(inf) = inf`).

use faer::linalg::matmul::matmul as faer_matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, MatMut, MatRef, Par};

use super::{colmajor_layout, for_each_matrix, Batch, LinalgElem};
use crate::layout::Layout;

/// Up to this order products run through the direct loop.
const SMALL_N: usize = 24;
/// From this order faer may use every thread on one matrix.
const PAR_N: usize = 256;

/// Higham's `θ_m` for double precision, degrees 3, 5, 7, 9, 13 (his published digits).
#[allow(clippy::excessive_precision)]
const THETA_F64: [(usize, f64); 5] = [
    (3, 1.495_585_217_958_292e-2),
    (5, 2.539_398_330_063_230e-1),
    (7, 9.504_178_996_162_932e-1),
    (9, 2.097_847_961_257_068e0),
    (13, 5.371_920_351_148_152e0),
];
/// Higham's `θ_m` for single precision, degrees 3, 5, 7.
#[allow(clippy::excessive_precision)]
const THETA_F32: [(usize, f64); 3] =
    [(3, 4.258_730_016_922_831e-1), (5, 1.880_152_677_804_762e0), (7, 3.925_724_783_138_660e0)];

/// Padé coefficients `b_0..b_m`.
fn coefficients(m: usize) -> &'static [f64] {
    match m {
        3 => &[120.0, 60.0, 12.0, 1.0],
        5 => &[30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
        7 => &[17_297_280.0, 8_648_640.0, 1_995_840.0, 277_200.0, 25200.0, 1512.0, 56.0, 1.0],
        9 => &[
            17_643_225_600.0,
            8_821_612_800.0,
            2_075_673_600.0,
            302_702_400.0,
            30_270_240.0,
            2_162_160.0,
            110_880.0,
            3960.0,
            90.0,
            1.0,
        ],
        _ => &[
            64_764_752_532_480_000.0,
            32_382_376_266_240_000.0,
            7_771_770_303_897_600.0,
            1_187_353_796_428_800.0,
            129_060_195_264_000.0,
            10_559_470_521_600.0,
            670_442_572_800.0,
            33_522_128_640.0,
            1_323_241_920.0,
            40_840_800.0,
            960_960.0,
            16380.0,
            182.0,
            1.0,
        ],
    }
}

/// `c = a b` for column-major `n x n` blocks.
fn mm<T: LinalgElem>(c: &mut [T], a: &[T], b: &[T], n: usize, par: Par) {
    if n <= SMALL_N {
        c.fill(T::ZERO);
        for j in 0..n {
            let cj = &mut c[j * n..(j + 1) * n];
            for k in 0..n {
                let bkj = b[j * n + k];
                for (x, &y) in cj.iter_mut().zip(&a[k * n..(k + 1) * n]) {
                    *x += y * bkj;
                }
            }
        }
    } else {
        faer_matmul(
            MatMut::from_column_major_slice_mut(c, n, n),
            Accum::Replace,
            MatRef::from_column_major_slice(a, n, n),
            MatRef::from_column_major_slice(b, n, n),
            T::ONE,
            par,
        );
    }
}

/// `out = Σ_k c_k P_k + c_I I` over the given powers (`out` overwritten).
fn combo<T: LinalgElem>(out: &mut [T], terms: &[(f64, &[T])], c_eye: f64, n: usize) {
    out.fill(T::ZERO);
    for &(c, p) in terms {
        let c = T::of(c);
        for (x, &y) in out.iter_mut().zip(p) {
            *x += c * y;
        }
    }
    for j in 0..n {
        out[j * n + j] += T::of(c_eye);
    }
}

/// `exp(A)` of the column-major `n x n` block `a`, in place; `tmp` is scratch.
fn expm_one<T: LinalgElem>(a: &mut [T], n: usize, tmp: &mut Vec<T>, par: Par) {
    if n == 1 {
        // the scalar exponential (as PyTorch: exp(inf) = inf)
        a[0] = a[0].exp();
        return;
    }
    if a.iter().any(|x| !x.is_finite()) {
        a.fill(T::NAN);
        return;
    }
    let norm = (0..n)
        .map(|j| a[j * n..(j + 1) * n].iter().fold(0.0f64, |s, x| s + x.abs().to_f64()))
        .fold(0.0f64, f64::max);
    let thetas: &[(usize, f64)] = if T::EPSILON.to_f64() > 1e-10 { &THETA_F32 } else { &THETA_F64 };
    let (mut m, mut s) = (0, 0i32);
    for &(deg, th) in thetas {
        if norm <= th {
            m = deg;
            break;
        }
    }
    if m == 0 {
        let (deg, th) = thetas[thetas.len() - 1];
        m = deg;
        s = (norm / th).log2().ceil().max(0.0) as i32;
        let f = T::of(2.0f64.powi(-s));
        for x in a.iter_mut() {
            *x *= f;
        }
    }
    let nn = n * n;
    tmp.clear();
    tmp.resize(7 * nn, T::ZERO);
    let (a2, rest) = tmp.split_at_mut(nn);
    let (a4, rest) = rest.split_at_mut(nn);
    let (a6, rest) = rest.split_at_mut(nn);
    let (u, rest) = rest.split_at_mut(nn);
    let (v, rest) = rest.split_at_mut(nn);
    let (w, rest) = rest.split_at_mut(nn);
    let x = &mut rest[..nn];
    let b = coefficients(m);
    mm(a2, a, a, n, par);
    if m == 13 {
        mm(a4, a2, a2, n, par);
        mm(a6, a4, a2, n, par);
        // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
        combo(w, &[(b[13], a6), (b[11], a4), (b[9], a2)], 0.0, n);
        mm(x, a6, w, n, par);
        combo(w, &[(1.0, x), (b[7], a6), (b[5], a4), (b[3], a2)], b[1], n);
        mm(u, a, w, n, par);
        // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
        combo(w, &[(b[12], a6), (b[10], a4), (b[8], a2)], 0.0, n);
        mm(x, a6, w, n, par);
        combo(v, &[(1.0, x), (b[6], a6), (b[4], a4), (b[2], a2)], b[0], n);
    } else {
        // powers A², A⁴, …, A^(m−1) in a2, a4, a6, x
        if m >= 5 {
            mm(a4, a2, a2, n, par);
        }
        if m >= 7 {
            mm(a6, a4, a2, n, par);
        }
        if m >= 9 {
            mm(x, a6, a2, n, par);
        }
        let pows: [&[T]; 4] = [a2, a4, a6, x];
        let k = (m - 1) / 2; // number of even powers used
        let odd: Vec<(f64, &[T])> = (0..k).map(|i| (b[2 * i + 3], pows[i])).collect();
        combo(w, &odd, b[1], n);
        mm(u, a, w, n, par);
        let even: Vec<(f64, &[T])> = (0..k).map(|i| (b[2 * i + 2], pows[i])).collect();
        combo(v, &even, b[0], n);
    }
    // r = (V − U)⁻¹ (V + U)
    for ((p, q), (&uu, &vv)) in a.iter_mut().zip(w.iter_mut()).zip(u.iter().zip(v.iter())) {
        *p = vv + uu;
        *q = vv - uu;
    }
    let lu = MatRef::from_column_major_slice(&*w, n, n).partial_piv_lu();
    lu.solve_in_place(MatMut::from_column_major_slice_mut(a, n, n));
    for _ in 0..s {
        u.copy_from_slice(a);
        mm(a, u, u, n, par);
    }
}

/// `exp(A)` of each square matrix of `a: (*, n, n)`; column-major results, with their
/// layout.
pub(crate) fn matrix_exp<T: LinalgElem>(a: &[T], l: &Layout) -> (Vec<T>, Layout) {
    let b = Batch::of(l);
    let n = b.n;
    let mut out = crate::backend::cpu::pool::filled(b.len() * n * n, T::ZERO);
    let work = 20 * n * n * n;
    for_each_matrix(&mut out, n * n, work, n >= PAR_N, |i, dst, tmp, par| {
        b.load(a, i, dst);
        expm_one(dst, n, tmp, par);
    });
    (out, colmajor_layout(&b.dims, n, n))
}
