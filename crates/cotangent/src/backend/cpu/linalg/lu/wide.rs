//! The batched 4 x 4 kernels of the LU ([`super`]) in AVX-512 registers: the LU-and-solve and
//! the solve with its saved factors (`solve`), the LU with each matrix's determinant
//! (`lu_factor`, `det`, `slogdet`), the scaled inverses from saved factors (their
//! backward) and the inverse (`inv`). One lane group (eight `f64` matrices) is one
//! 512-bit register per matrix entry, so a group's factors (16 registers) and right-hand
//! sides stay in registers from the load to the store, the pivot rows are swapped by
//! masked blends instead of a branch and scalar moves per lane, and the blocks move in
//! and out of the lanes by 8 x 8 and 8 x 4 register transposes.
//!
//! Why: the AVX2 kernel keeps a group in memory (32 vector registers' worth for 16
//! registers) and is latency-bound; this one does the same arithmetic in the same order
//! (so the same factors, interchanges and solutions, bit for bit), with half the
//! instructions, and two groups' dependency chains side by side. It takes only whole
//! groups of contiguous matrices whose factors are all finite with nonzero pivots (the
//! scaled inverses: whose interchanges are an LU's); the caller runs the portable kernel
//! on anything else.
//!
//! Unsafe code, and why not pulp: pulp's AVX-512 support (its `x86-v4` feature) also
//! switches faer's own pulp kernels to AVX-512, which made `inv`, `det`, `slogdet` and
//! `pinv` at n = 256 slower here. So this module calls `core::arch` directly: the
//! kernels are `#[target_feature(enable = "avx512f")]` functions, entered only after
//! `is_x86_feature_detected!("avx512f")`, and the only other unsafe operations are
//! unaligned loads and stores of whole `[f64; 4]` arrays here, and of `[f64; 8]` and
//! `[i64; 8]` arrays in `crate::backend::cpu::wide`.
#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m256d, __m512d, __m512i, __mmask8, _mm256_loadu_pd, _mm256_storeu_pd, _mm512_abs_pd,
    _mm512_add_pd, _mm512_and_si512, _mm512_castpd256_pd512, _mm512_castpd_si512,
    _mm512_castsi512_pd, _mm512_cmp_pd_mask, _mm512_cmpeq_epi64_mask, _mm512_div_pd,
    _mm512_extractf64x4_pd, _mm512_insertf64x4, _mm512_mask_blend_epi64, _mm512_mask_blend_pd,
    _mm512_mul_pd, _mm512_or_si512, _mm512_permutex2var_pd, _mm512_set1_epi64, _mm512_set1_pd,
    _mm512_setzero_pd, _mm512_shuffle_f64x2, _mm512_slli_epi64, _mm512_srli_epi64, _mm512_sub_pd,
    _mm512_unpackhi_pd, _mm512_unpacklo_pd, _mm512_xor_si512, _CMP_EQ_OQ, _CMP_GT_OQ, _CMP_NEQ_UQ,
};
use core::arch::x86_64::{
    _mm512_add_epi64, _mm512_cmpge_epi64_mask, _mm512_cmpge_epu64_mask, _mm512_cmplt_epi64_mask,
    _mm512_cmpneq_epi64_mask, _mm512_mask_add_epi64, _mm512_mask_xor_epi64, _mm512_sub_epi64,
    _CMP_GE_OQ, _CMP_LE_OQ, _CMP_LT_OQ,
};

use super::super::lanes::LANES;
use super::super::order::by_order;
use super::det::{logabs_of, DetOut, DetSpec, HALF_BITS, LG, LN2_HI, LN2_LO, ONE_BITS};
use crate::backend::cpu::wide::{avx512, load8, load8i, store8, store8i};

/// The order of the matrices this kernel factorises.
const N: usize = 4;
/// At most this many right-hand sides per matrix.
const K_MAX: usize = 4;

/// The register of the four `f64` of `a` in both halves' order: `a` low, `b` high.
#[target_feature(enable = "avx512f")]
#[inline]
fn load4x2(a: &[f64; 4], b: &[f64; 4]) -> __m512d {
    // SAFETY: `a` and `b` are 32 readable bytes each; the loads need no alignment
    let (lo, hi): (__m256d, __m256d) =
        unsafe { (_mm256_loadu_pd(a.as_ptr()), _mm256_loadu_pd(b.as_ptr())) };
    _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(lo), hi)
}

/// The halves of `x` into `a` (low) and `b` (high).
#[target_feature(enable = "avx512f")]
#[inline]
fn store4x2(x: __m512d, a: &mut [f64; 4], b: &mut [f64; 4]) {
    let (lo, hi) = (_mm512_extractf64x4_pd::<0>(x), _mm512_extractf64x4_pd::<1>(x));
    // SAFETY: `a` and `b` are 32 writable bytes each; the stores need no alignment
    unsafe {
        _mm256_storeu_pd(a.as_mut_ptr(), lo);
        _mm256_storeu_pd(b.as_mut_ptr(), hi);
    }
}

/// Consecutive whole lane groups of [`super::lu_factor_solve`] with `n = 4`: the
/// inputs as contiguous blocks and the outputs, in the layouts of that function.
pub(super) struct Run<'a> {
    /// The matrices to factorise, one 16-element column-major block each (a multiple of
    /// [`LANES`] of them).
    pub(super) a: &'a [f64],
    /// Their right-hand sides, one `4 x k` column-major block each.
    pub(super) b: &'a [f64],
    pub(super) k: usize,
    /// Solve with the transposed factors (`Aᵀ x = b` for the factors of `A`).
    pub(super) adjoint: bool,
    /// The factors as the lanes hold them (16 arrays of [`LANES`] per group).
    pub(super) factors: &'a mut [f64],
    /// The lane permutation words (one per matrix).
    pub(super) perms: &'a mut [i64],
    /// The per-matrix `info`.
    pub(super) info: &'a mut [i64],
    /// The solutions, `4 x k` column-major each.
    pub(super) x: &'a mut [f64],
}

/// Factorises and solves the groups of `r` (see the module's doc), two at a time (their
/// dependency chains overlap: one group alone is latency-bound). Returns the groups it
/// left unwritten (a lane with a zero pivot or a factor that is not finite, in the group
/// or in its pair); `None`, with nothing written, where the kernel does not apply (no
/// AVX-512, `k` 0 or above 4, lengths that do not match).
pub(super) fn factor_solve(r: Run<'_>) -> Option<Vec<usize>> {
    let (size, xsize) = (N * N, N * r.k);
    let groups = r.a.len() / (LANES * size);
    if !avx512()
        || r.k == 0
        || r.k > K_MAX
        || r.a.len() != groups * LANES * size
        || r.b.len() != groups * LANES * xsize
        || r.factors.len() != groups * LANES * size
        || r.perms.len() != groups * LANES
        || r.info.len() != groups * LANES
        || r.x.len() != groups * LANES * xsize
    {
        return None;
    }
    let mut undone = Vec::new();
    // SAFETY: the CPU has AVX-512F (asserted above), the only extension `run` uses
    unsafe {
        // (`XS = 4 k` entries of right-hand sides per matrix)
        by_order!(r.k;
            1 2 3 => |K| run::<{ 4 * K }>(r, &mut undone),
            _ => run::<16>(r, &mut undone));
    }
    Some(undone)
}

/// Exchanges entries `i` and `j` of `x` in the lanes of `m`.
#[target_feature(enable = "avx512f")]
#[inline]
fn swap_in<const L: usize>(m: __mmask8, x: &mut [__m512d; L], i: usize, j: usize) {
    let (a, b) = (x[i], x[j]);
    x[i] = _mm512_mask_blend_pd(m, a, b);
    x[j] = _mm512_mask_blend_pd(m, b, a);
}

/// The state of the factorisation: the entries, the pivot rows, the original row at each
/// position, and the lanes met with a zero pivot.
#[derive(Clone, Copy)]
struct Lu {
    f: [__m512d; N * N],
    piv: [__m512i; N],
    rows: [__m512i; N],
    bad: __mmask8,
}

/// Column `K` of the factorisation (a constant, so that every loop unrolls and the
/// entries stay in registers): left-looking (as `crout_rows`), entry `i` less
/// `Σ_{q < min(i, K)} L_iq U_qK` in increasing `q`, each term a product then a
/// subtraction; the first row of largest absolute value from row `K` (NaN never wins);
/// the rows exchanged in every column; the entries below the pivot times its reciprocal.
#[target_feature(enable = "avx512f")]
#[inline]
fn column<const K: usize>(lu: &mut Lu) {
    let f = &mut lu.f;
    for i in 0..N {
        let mut acc = f[K * N + i];
        for q in 0..i.min(K) {
            acc = _mm512_sub_pd(acc, _mm512_mul_pd(f[q * N + i], f[K * N + q]));
        }
        f[K * N + i] = acc;
    }
    let mut max = _mm512_abs_pd(f[K * N + K]);
    let mut p = _mm512_set1_epi64(K as i64);
    for i in K + 1..N {
        let a = _mm512_abs_pd(f[K * N + i]);
        let gt = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, max);
        max = _mm512_mask_blend_pd(gt, max, a);
        p = _mm512_mask_blend_epi64(gt, p, _mm512_set1_epi64(i as i64));
    }
    lu.piv[K] = p;
    for q in K + 1..N {
        let m = _mm512_cmpeq_epi64_mask(p, _mm512_set1_epi64(q as i64));
        for c in 0..N {
            swap_in(m, f, c * N + K, c * N + q);
        }
        let (a, b) = (lu.rows[K], lu.rows[q]);
        lu.rows[K] = _mm512_mask_blend_epi64(m, a, b);
        lu.rows[q] = _mm512_mask_blend_epi64(m, b, a);
    }
    let d = f[K * N + K];
    lu.bad |= _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(d, _mm512_setzero_pd());
    let r = _mm512_div_pd(_mm512_set1_pd(1.0), d);
    for i in K + 1..N {
        f[K * N + i] = _mm512_mul_pd(f[K * N + i], r);
    }
}

/// The row interchange `J` (row `J` with row `piv[J]`, per lane) applied to the `XS / 4`
/// columns of `x`.
#[target_feature(enable = "avx512f")]
#[inline]
fn interchange<const J: usize, const XS: usize>(piv: &[__m512i; N], x: &mut [__m512d; XS]) {
    for q in J + 1..N {
        let m = _mm512_cmpeq_epi64_mask(piv[J], _mm512_set1_epi64(q as i64));
        for c in 0..XS / N {
            swap_in(m, x, c * N + J, c * N + q);
        }
    }
}

/// The group of blocks `a` (32 groups of four entries) in lanes, before factorisation.
#[target_feature(enable = "avx512f")]
#[inline]
fn factor(a: &[[f64; 4]]) -> Lu {
    let mut lu = Lu {
        f: [_mm512_setzero_pd(); N * N],
        piv: [_mm512_set1_epi64(0); N],
        rows: std::array::from_fn(|r| _mm512_set1_epi64(r as i64)),
        bad: 0,
    };
    to_lanes(a, &mut lu.f);
    lu
}

/// Whether some lane of `lu` met a zero pivot or holds a factor that is not finite.
#[target_feature(enable = "avx512f")]
#[inline]
fn failed(lu: &Lu) -> bool {
    // x − x is 0 exactly for a finite x, NaN otherwise
    let zero = _mm512_setzero_pd();
    let mut nonfinite = zero;
    for x in &lu.f {
        nonfinite = _mm512_add_pd(nonfinite, _mm512_sub_pd(*x, *x));
    }
    (lu.bad | _mm512_cmp_pd_mask::<_CMP_NEQ_UQ>(nonfinite, zero)) != 0
}

/// The factors, interchanges and (zero) `info` of one group out.
#[target_feature(enable = "avx512f")]
#[inline]
fn write_factors(lu: &Lu, factors: &mut [[f64; 8]], perms: &mut [i64; 8], info: &mut [i64]) {
    for (o, x) in factors.iter_mut().zip(&lu.f) {
        store8(*x, o);
    }
    // lane_perms' words: the fields past the order are the identity's
    let rows = &lu.rows;
    let mut word = _mm512_set1_epi64((0xFEDC_BA98_7654_3210u64 & !0xFFFF) as i64);
    word = _mm512_or_si512(word, rows[0]);
    word = _mm512_or_si512(word, _mm512_slli_epi64::<4>(rows[1]));
    word = _mm512_or_si512(word, _mm512_slli_epi64::<8>(rows[2]));
    word = _mm512_or_si512(word, _mm512_slli_epi64::<12>(rows[3]));
    store8i(word, perms);
    info.fill(0);
}

/// The solutions of one group with the factors of `lu`, right-hand sides `b` (blocks of
/// `XS` entries, as groups of four), in lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn solve<const XS: usize>(lu: &Lu, b: &[[f64; 4]], adjoint: bool) -> [__m512d; XS] {
    let piv = &lu.piv;
    let mut x = [_mm512_setzero_pd(); XS];
    to_lanes(b, &mut x);
    if adjoint {
        substitute(&lu.f, &mut x, true);
        // P Z: the interchanges undone, last first
        interchange::<3, XS>(piv, &mut x);
        interchange::<2, XS>(piv, &mut x);
        interchange::<1, XS>(piv, &mut x);
        interchange::<0, XS>(piv, &mut x);
    } else {
        // Pᵀ B: the interchanges in order
        interchange::<0, XS>(piv, &mut x);
        interchange::<1, XS>(piv, &mut x);
        interchange::<2, XS>(piv, &mut x);
        interchange::<3, XS>(piv, &mut x);
        substitute(&lu.f, &mut x, false);
    }
    x
}

/// The substitutions of `solve::substitute_lanes` on the `XS / 4` columns of `x` in place,
/// with the factors `f`: `Uᵀ y = b`, then `Lᵀ x = y` (`adjoint`), or `L y = b`, then
/// `U x = y`; the same operations in the same order.
#[target_feature(enable = "avx512f")]
#[inline]
fn substitute<const XS: usize>(f: &[__m512d; N * N], x: &mut [__m512d; XS], adjoint: bool) {
    let zero = _mm512_setzero_pd();
    for c in 0..XS / N {
        if adjoint {
            for i in 0..N {
                let mut s = zero;
                for p in 0..i {
                    s = _mm512_add_pd(s, _mm512_mul_pd(f[i * N + p], x[c * N + p]));
                }
                x[c * N + i] = _mm512_div_pd(_mm512_sub_pd(x[c * N + i], s), f[i * N + i]);
            }
            for i in (0..N).rev() {
                let mut s = zero;
                for p in i + 1..N {
                    s = _mm512_add_pd(s, _mm512_mul_pd(f[i * N + p], x[c * N + p]));
                }
                x[c * N + i] = _mm512_sub_pd(x[c * N + i], s);
            }
        } else {
            for j in 0..N {
                let xj = x[c * N + j];
                for i in j + 1..N {
                    x[c * N + i] = _mm512_sub_pd(x[c * N + i], _mm512_mul_pd(f[j * N + i], xj));
                }
            }
            for j in (0..N).rev() {
                let xj = _mm512_div_pd(x[c * N + j], f[j * N + j]);
                x[c * N + j] = xj;
                for i in 0..j {
                    x[c * N + i] = _mm512_sub_pd(x[c * N + i], _mm512_mul_pd(f[j * N + i], xj));
                }
            }
        }
    }
}

/// The kernel (see [`factor_solve`]) with `XS = 4 k` entries per right-hand side block:
/// groups two at a time, each step of one followed by the same step of the other, then
/// a last one alone; the groups left to the caller pushed on `undone`.
#[target_feature(enable = "avx512f")]
fn run<const XS: usize>(r: Run<'_>, undone: &mut Vec<usize>) {
    let (a, b) = (r.a.as_chunks::<4>().0, r.b.as_chunks::<4>().0);
    let (x, factors) = (r.x.as_chunks_mut::<4>().0, r.factors.as_chunks_mut::<LANES>().0);
    let perms = r.perms.as_chunks_mut::<LANES>().0;
    // per group: blocks of four entries of a, b and x; factor arrays
    let (ga, gx, gf) = (LANES * N * N / 4, LANES * XS / 4, N * N);
    let groups = a.len() / ga;
    let mut g = 0;
    while g < groups {
        let two = g + 1 < groups;
        let mut l0 = factor(&a[g * ga..(g + 1) * ga]);
        let mut l1 = if two { factor(&a[(g + 1) * ga..(g + 2) * ga]) } else { l0 };
        column::<0>(&mut l0);
        if two {
            column::<0>(&mut l1);
        }
        column::<1>(&mut l0);
        if two {
            column::<1>(&mut l1);
        }
        column::<2>(&mut l0);
        if two {
            column::<2>(&mut l1);
        }
        column::<3>(&mut l0);
        if two {
            column::<3>(&mut l1);
        }
        let pair = if two { 2 } else { 1 };
        if failed(&l0) || (two && failed(&l1)) {
            undone.extend(g..g + pair);
            g += pair;
            continue;
        }
        let x0 = solve::<XS>(&l0, &b[g * gx..(g + 1) * gx], r.adjoint);
        let x1 = if two { solve::<XS>(&l1, &b[(g + 1) * gx..(g + 2) * gx], r.adjoint) } else { x0 };
        for (t, (lu, xl)) in [(&l0, &x0), (&l1, &x1)].into_iter().take(pair).enumerate() {
            let h = g + t;
            write_factors(
                lu,
                &mut factors[h * gf..(h + 1) * gf],
                &mut perms[h],
                &mut r.info[h * LANES..(h + 1) * LANES],
            );
            from_lanes(xl, &mut x[h * gx..(h + 1) * gx]);
        }
        g += pair;
    }
}

/// Consecutive whole lane groups of [`super::lu_solve_saved`] with `n = 4`: the
/// saved factors and interchanges, the right-hand sides and the solutions' outer
/// operand as contiguous blocks, and the outputs, in the layouts of that function.
pub(super) struct SavedRun<'a> {
    /// The factors as the lanes hold them (16 arrays of [`LANES`] per group).
    pub(super) factors: &'a [f64],
    /// The lane permutation words (one per matrix).
    pub(super) perms: &'a [i64],
    /// The right-hand sides.
    pub(super) b: Rhs<'a>,
    pub(super) k: usize,
    /// Solve with the transposed factors.
    pub(super) adjoint: bool,
    /// `Y` of the outer products `−X Yᵀ`, one `4 x k` column-major block each.
    pub(super) y: Option<&'a [f64]>,
    /// The solutions `X`, `4 x k` column-major each.
    pub(super) x: &'a mut [f64],
    /// The outer products, row-major `4 x 4` each (with `y`).
    pub(super) outer: Option<&'a mut [f64]>,
}

/// The right-hand sides of a [`SavedRun`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Rhs<'a> {
    /// One `4 x k` column-major block each.
    Blocks(&'a [f64]),
    /// One value everywhere (a broadcast scalar: the cotangent of a sum).
    Splat(f64),
}

/// Solves with the saved factors of `r` and forms the outer products (see
/// [`SavedRun`]), a group at a time: the same bits as the lane kernel and
/// `fused::neg_outer`. `false`, with nothing written, where the kernel does not apply (no
/// AVX-512, `k` 0 or above 4, lengths that do not match, an outer operand without its
/// output or the other way round).
pub(super) fn solve_saved(r: SavedRun<'_>) -> bool {
    let (size, xsize) = (N * N, N * r.k);
    let groups = r.perms.len() / LANES;
    let outer_ok = match (&r.y, &r.outer) {
        (Some(y), Some(o)) => y.len() == groups * LANES * xsize && o.len() == groups * LANES * size,
        (None, None) => true,
        _ => false,
    };
    if !avx512()
        || r.k == 0
        || r.k > K_MAX
        || !outer_ok
        || r.perms.len() != groups * LANES
        || r.factors.len() != groups * LANES * size
        || matches!(r.b, Rhs::Blocks(b) if b.len() != groups * LANES * xsize)
        || r.x.len() != groups * LANES * xsize
    {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (asserted above), the only extension `run_saved` uses
    unsafe {
        by_order!(r.k; 1 2 3 => |K| run_saved::<{ 4 * K }>(r), _ => run_saved::<16>(r));
    }
    true
}

/// Field `R` (the original row at position `R`) of each lane's permutation word.
#[target_feature(enable = "avx512f")]
#[inline]
fn field<const R: u32>(perm: __m512i) -> __m512i {
    let shifted = match R {
        0 => perm,
        1 => _mm512_srli_epi64::<4>(perm),
        2 => _mm512_srli_epi64::<8>(perm),
        _ => _mm512_srli_epi64::<12>(perm),
    };
    _mm512_and_si512(shifted, _mm512_set1_epi64(15))
}

/// The kernel of [`solve_saved`] with `XS = 4 k` entries per right-hand side block.
#[target_feature(enable = "avx512f")]
fn run_saved<const XS: usize>(r: SavedRun<'_>) {
    let factors = r.factors.as_chunks::<LANES>().0;
    let perms = r.perms.as_chunks::<LANES>().0;
    let x = r.x.as_chunks_mut::<4>().0;
    let y = r.y.map(|y| y.as_chunks::<4>().0);
    let mut outer = r.outer.map(|o| o.as_chunks_mut::<4>().0);
    let (gx, gf, go) = (LANES * XS / 4, N * N, LANES * N * N / 4);
    for (h, perm) in perms.iter().enumerate() {
        let f: [__m512d; N * N] = std::array::from_fn(|e| load8(&factors[h * gf + e]));
        let perm = load8i(perm);
        let fields = [field::<0>(perm), field::<1>(perm), field::<2>(perm), field::<3>(perm)];
        let mut bl = [_mm512_setzero_pd(); XS];
        match r.b {
            Rhs::Blocks(b) => to_lanes(&b.as_chunks::<4>().0[h * gx..(h + 1) * gx], &mut bl),
            Rhs::Splat(s) => bl = [_mm512_set1_pd(s); XS],
        }
        let mut xl = bl;
        // (a value everywhere is left as it is by a permutation)
        if !r.adjoint && matches!(r.b, Rhs::Blocks(_)) {
            // Pᵀ B: row i from row perm(i)
            for c in 0..XS / N {
                for i in 0..N {
                    let mut t = bl[c * N];
                    for q in 1..N {
                        let m = _mm512_cmpeq_epi64_mask(fields[i], _mm512_set1_epi64(q as i64));
                        t = _mm512_mask_blend_pd(m, t, bl[c * N + q]);
                    }
                    xl[c * N + i] = t;
                }
            }
        }
        substitute(&f, &mut xl, r.adjoint);
        if r.adjoint {
            // P Z: row perm(i) from row i
            let z = xl;
            for c in 0..XS / N {
                for i in 0..N {
                    let mut t = z[c * N];
                    for q in 1..N {
                        let m = _mm512_cmpeq_epi64_mask(fields[q], _mm512_set1_epi64(i as i64));
                        t = _mm512_mask_blend_pd(m, t, z[c * N + q]);
                    }
                    xl[c * N + i] = t;
                }
            }
        }
        from_lanes(&xl, &mut x[h * gx..(h + 1) * gx]);
        if let (Some(y), Some(outer)) = (y, outer.as_deref_mut()) {
            let mut yl = [_mm512_setzero_pd(); XS];
            to_lanes(&y[h * gx..(h + 1) * gx], &mut yl);
            // −X Yᵀ, row-major: each sum in ascending columns of the negated terms
            let mut o = [_mm512_setzero_pd(); N * N];
            let sign = _mm512_set1_epi64(i64::MIN);
            for c in 0..XS / N {
                for i in 0..N {
                    let nx = _mm512_castsi512_pd(_mm512_xor_si512(
                        _mm512_castpd_si512(xl[c * N + i]),
                        sign,
                    ));
                    for j in 0..N {
                        let t = _mm512_mul_pd(nx, yl[c * N + j]);
                        o[i * N + j] = if c == 0 { t } else { _mm512_add_pd(o[i * N + j], t) };
                    }
                }
            }
            from_lanes(&o, &mut outer[h * go..(h + 1) * go]);
        }
    }
}

/// Groups written by [`factor_det`], [`inv_t`] and [`invert`] (for the tests that check
/// that the callers hand them their batches).
#[cfg(test)]
pub(super) static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Consecutive whole lane groups of `factor::lu_factor_impl` with `n = 4` (a plain LU, or
/// one with each matrix's determinant): the matrices as contiguous blocks, and the
/// outputs in the layouts of that function.
pub(super) struct FactorRun<'a, 'd> {
    /// The matrices, one 16-element column-major block each (a multiple of [`LANES`]).
    pub(super) a: &'a [f64],
    /// Their packed factors, column-major `4 x 4` each.
    pub(super) factors: &'a mut [f64],
    /// The interchanges, 1-based, four per matrix.
    pub(super) ipiv: &'a mut [i64],
    /// The per-matrix `info`.
    pub(super) info: &'a mut [i64],
    /// The determinants' outputs, one entry per matrix, and what to compute.
    pub(super) det: Option<(&'a mut DetOut<'d, f64>, DetSpec)>,
}

/// Factorises the groups of `r` (and reads each matrix's determinant off its factors),
/// two at a time, with the operations of `factor::factor_lanes_n` in its order: the same
/// bits. Returns the groups it left unwritten (a lane with a zero pivot or a factor that
/// is not finite, in the group or in its pair); `None`, with nothing written, where the
/// kernel does not apply (no AVX-512, lengths that do not match).
pub(super) fn factor_det(r: FactorRun<'_, '_>) -> Option<Vec<usize>> {
    let size = N * N;
    let groups = r.a.len() / (LANES * size);
    let len = groups * LANES;
    if !avx512()
        || r.a.len() != len * size
        || r.factors.len() != len * size
        || r.ipiv.len() != len * N
        || r.info.len() != len
        || r.det.as_ref().is_some_and(|(d, _)| d.len() != len)
    {
        return None;
    }
    let mut undone = Vec::new();
    // SAFETY: the CPU has AVX-512F (asserted above), the only extension `run_factor` uses
    unsafe { run_factor(r, &mut undone) };
    Some(undone)
}

/// The two groups of matrices of `a` from group `g` (or one, the last, then `lus[1]` is
/// left as it was) factorised into `lus`, as [`factor_det`]'s and [`invert`]'s kernels
/// need them. `false` if a lane failed (see [`failed`]). (Into the caller's state: a
/// returned pair was copied by `memmove`, visible in a batched slogdet's profile.)
#[target_feature(enable = "avx512f")]
#[inline]
fn factor_pair(a: &[[f64; 4]], g: usize, two: bool, lus: &mut [Lu; 2]) -> bool {
    let ga = LANES * N * N / 4;
    let [l0, l1] = lus;
    *l0 = factor(&a[g * ga..(g + 1) * ga]);
    if two {
        *l1 = factor(&a[(g + 1) * ga..(g + 2) * ga]);
    }
    column::<0>(l0);
    if two {
        column::<0>(l1);
    }
    column::<1>(l0);
    if two {
        column::<1>(l1);
    }
    column::<2>(l0);
    if two {
        column::<2>(l1);
    }
    column::<3>(l0);
    if two {
        column::<3>(l1);
    }
    !(failed(l0) || (two && failed(l1)))
}

/// A factorisation's state before [`factor`] sets it.
#[target_feature(enable = "avx512f")]
#[inline]
fn blank() -> Lu {
    let zero = _mm512_set1_epi64(0);
    Lu { f: [_mm512_setzero_pd(); N * N], piv: [zero; N], rows: [zero; N], bad: 0 }
}

/// The kernel of [`factor_det`].
#[target_feature(enable = "avx512f")]
fn run_factor(r: FactorRun<'_, '_>, undone: &mut Vec<usize>) {
    let a = r.a.as_chunks::<4>().0;
    let factors = r.factors.as_chunks_mut::<4>().0;
    let ipiv = r.ipiv.as_chunks_mut::<8>().0;
    let mut det = r.det;
    // per group: blocks of four entries of the factors, pairs of interchanges
    let (ga, gp) = (LANES * N * N / 4, LANES * N / 8);
    let one = _mm512_set1_epi64(1);
    factored_groups(a, undone, |h, lu| {
        from_lanes(&lu.f, &mut factors[h * ga..(h + 1) * ga]);
        let piv: [__m512d; N] =
            std::array::from_fn(|k| _mm512_castsi512_pd(_mm512_add_epi64(lu.piv[k], one)));
        for (o, x) in ipiv[h * gp..(h + 1) * gp].iter_mut().zip(lanes8x4_back(piv)) {
            store8i(_mm512_castpd_si512(x), o);
        }
        r.info[h * LANES..(h + 1) * LANES].fill(0);
        if let Some((d, spec)) = det.as_mut() {
            dets(lu, &mut d.sub(h * LANES..(h + 1) * LANES), *spec);
        }
    });
}

/// The groups of matrices of `a` factorised two at a time ([`factor_pair`]), each group
/// of a pair that did not fail handed to `each(group, factors)`; the groups of a failed
/// pair pushed on `undone`. (The one loop of [`factor_det`]'s and [`invert`]'s kernels.)
#[target_feature(enable = "avx512f")]
#[inline]
fn factored_groups(a: &[[f64; 4]], undone: &mut Vec<usize>, mut each: impl FnMut(usize, &Lu)) {
    let groups = a.len() / (LANES * N * N / 4);
    let mut lus = [blank(), blank()];
    let mut g = 0;
    while g < groups {
        let two = g + 1 < groups;
        let pair = if two { 2 } else { 1 };
        if factor_pair(a, g, two, &mut lus) {
            for (t, lu) in lus.iter().take(pair).enumerate() {
                each(g + t, lu);
                #[cfg(test)]
                WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        } else {
            undone.extend(g..g + pair);
        }
        g += pair;
    }
}

/// The determinants of one group's matrices from its factors, as `factor::factor_lanes_n`
/// computes them for lanes with finite nonzero pivots (the same operations): the sign of
/// the interchanges times the pivots in order, the sign of that product, its logarithm
/// ([`ln_normal`], or `det::logabs_of`'s sum where the product is not a normal number),
/// and whether the smallest pivot is at most `√eps` times the largest.
#[target_feature(enable = "avx512f")]
#[inline]
fn dets(lu: &Lu, out: &mut DetOut<'_, f64>, spec: DetSpec) {
    let sign = _mm512_set1_epi64(i64::MIN);
    let mut prod = _mm512_set1_pd(1.0);
    for (k, p) in lu.piv.iter().enumerate() {
        let swapped = _mm512_cmpneq_epi64_mask(*p, _mm512_set1_epi64(k as i64));
        let bits = _mm512_castpd_si512(prod);
        prod = _mm512_castsi512_pd(_mm512_mask_xor_epi64(bits, swapped, bits, sign));
    }
    let (mut max, mut min) = (_mm512_setzero_pd(), _mm512_set1_pd(f64::INFINITY));
    let diag: [__m512d; N] = std::array::from_fn(|k| lu.f[k * N + k]);
    for d in diag {
        prod = _mm512_mul_pd(prod, d);
        let a = _mm512_abs_pd(d);
        max = _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, max), max, a);
        min = _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, min), min, a);
    }
    let abs = _mm512_abs_pd(prod);
    let normal = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(abs, _mm512_set1_pd(f64::MIN_POSITIVE))
        & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(abs, _mm512_set1_pd(f64::INFINITY));
    let ln = if spec.want_log {
        ln_normal(_mm512_mask_blend_pd(normal, _mm512_set1_pd(1.0), abs))
    } else {
        _mm512_setzero_pd()
    };
    // copysign(1, prod)
    let one = _mm512_castpd_si512(_mm512_set1_pd(1.0));
    let sg = _mm512_or_si512(_mm512_and_si512(_mm512_castpd_si512(prod), sign), one);
    let tol = _mm512_set1_pd(spec.eps.sqrt());
    let loose = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(min, _mm512_mul_pd(tol, max));
    // (through arrays: the outputs are slices of the group's eight entries)
    let (mut dt, mut sn, mut lg) = ([0.0; 8], [0.0; 8], [0.0; 8]);
    store8(prod, &mut dt);
    store8(_mm512_castsi512_pd(sg), &mut sn);
    store8(ln, &mut lg);
    if spec.want_log && normal != 0xFF {
        // (rare) the sum of the pivots' logarithms
        let mut d = [[0.0; 8]; N];
        for (o, x) in d.iter_mut().zip(diag) {
            store8(x, o);
        }
        for w in (0..LANES).filter(|w| normal >> w & 1 == 0) {
            lg[w] = logabs_of(dt[w], d.iter().map(|d| d[w]));
        }
    }
    out.det.copy_from_slice(&dt);
    out.sign.copy_from_slice(&sn);
    out.logabs.copy_from_slice(&lg);
    for (w, l) in out.loose.iter_mut().enumerate() {
        *l = loose >> w & 1 != 0;
    }
}

/// `det::ln_normal` of each lane of `x` (positive normal numbers), the same operations:
/// the same bits. The exponent becomes a double exactly as the bits of `2^52 + e`
/// less `2^52` (`e < 2^52`), then less the bias.
#[target_feature(enable = "avx512f")]
#[inline]
fn ln_normal(x: __m512d) -> __m512d {
    const MANTISSA: i64 = (1 << 52) - 1;
    let set = _mm512_set1_pd;
    let bits = _mm512_castpd_si512(x);
    let frac = _mm512_and_si512(bits, _mm512_set1_epi64(MANTISSA));
    let root = (std::f64::consts::SQRT_2.to_bits() & MANTISSA as u64) as i64;
    let high = _mm512_cmpge_epu64_mask(frac, _mm512_set1_epi64(root));
    let (one, half) = (_mm512_set1_epi64(ONE_BITS as i64), _mm512_set1_epi64(HALF_BITS as i64));
    let m = _mm512_castsi512_pd(_mm512_or_si512(frac, _mm512_mask_blend_epi64(high, one, half)));
    let e = _mm512_srli_epi64::<52>(bits);
    let e = _mm512_mask_add_epi64(e, high, e, _mm512_set1_epi64(1));
    let two52 = _mm512_set1_epi64(0x4330_0000_0000_0000);
    let e =
        _mm512_sub_pd(_mm512_castsi512_pd(_mm512_or_si512(e, two52)), set(4_503_599_627_370_496.0));
    let k = _mm512_sub_pd(e, set(1023.0));
    let f = _mm512_sub_pd(m, set(1.0));
    let s = _mm512_div_pd(f, _mm512_add_pd(set(2.0), f));
    let z = _mm512_mul_pd(s, s);
    let w = _mm512_mul_pd(z, z);
    let (mul, add) = (_mm512_mul_pd, _mm512_add_pd);
    let lg = |i: usize| set(LG[i]);
    let t1 = mul(w, add(lg(1), mul(w, add(lg(3), mul(w, lg(5))))));
    let t2 = mul(z, add(lg(0), mul(w, add(lg(2), mul(w, add(lg(4), mul(w, lg(6))))))));
    let r = add(t2, t1);
    let hfsq = mul(mul(set(0.5), f), f);
    let inner = add(mul(s, add(hfsq, r)), mul(k, set(LN2_LO)));
    _mm512_sub_pd(mul(k, set(LN2_HI)), _mm512_sub_pd(_mm512_sub_pd(hfsq, inner), f))
}

/// Consecutive whole lane groups of `backward::lu_middle`'s scaled inverses with `n = 4`:
/// `c_i A_i⁻ᵀ` from packed factors and interchanges.
pub(super) struct InvRun<'a> {
    /// The packed factors, column-major `4 x 4` each (a multiple of [`LANES`]).
    pub(super) factors: &'a [f64],
    /// The interchanges, 1-based, four per matrix.
    pub(super) ipiv: &'a [i64],
    /// One scale per matrix.
    pub(super) c: &'a [f64],
    /// The results, `4 x 4` each, row-major if `row_major`, else column-major.
    pub(super) out: &'a mut [f64],
    pub(super) row_major: bool,
}

/// `c_i A_i⁻ᵀ = c_i P L⁻ᵀ U⁻ᵀ` for the groups of `r`, with the operations of
/// `backward::middle_lanes_n` (with `X = c I`) in its order: the same bits. Returns the groups
/// it left unwritten (an interchange that is not one of LU's, `j <= p < 4` at step `j`);
/// `None`, with nothing written, where the kernel does not apply.
pub(super) fn inv_t(r: InvRun<'_>) -> Option<Vec<usize>> {
    let size = N * N;
    let len = r.c.len();
    if !avx512()
        || !len.is_multiple_of(LANES)
        || r.factors.len() != len * size
        || r.ipiv.len() != len * N
        || r.out.len() != len * size
    {
        return None;
    }
    let mut undone = Vec::new();
    // SAFETY: the CPU has AVX-512F (asserted above), the only extension `run_inv_t` uses
    unsafe { run_inv_t(r, &mut undone) };
    Some(undone)
}

/// The kernel of [`inv_t`].
#[target_feature(enable = "avx512f")]
fn run_inv_t(r: InvRun<'_>, undone: &mut Vec<usize>) {
    let factors = r.factors.as_chunks::<4>().0;
    let ipiv = r.ipiv.as_chunks::<8>().0;
    let c = r.c.as_chunks::<8>().0;
    let out = r.out.as_chunks_mut::<4>().0;
    let (gf, gp) = (LANES * N * N / 4, LANES * N / 8);
    let mut x = [_mm512_setzero_pd(); N * N];
    for (h, c) in c.iter().enumerate() {
        let mut f = [_mm512_setzero_pd(); N * N];
        to_lanes(&factors[h * gf..(h + 1) * gf], &mut f);
        // the interchanges in lanes, 0-based: registers of two matrices' four each
        let pairs: [__m512d; 4] =
            std::array::from_fn(|j| _mm512_castsi512_pd(load8i(&ipiv[h * gp + j])));
        let one = _mm512_set1_epi64(1);
        let piv = transpose8x4(pairs).map(|x| _mm512_sub_epi64(_mm512_castpd_si512(x), one));
        if !lu_interchanges(&piv) {
            undone.push(h);
            continue;
        }
        scaled_inverse_t(&f, &piv, load8(c), &mut x);
        store_square(&x, &mut out[h * gf..(h + 1) * gf], r.row_major);
        #[cfg(test)]
        WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether every lane's interchange `j` is to a row `p` with `j <= p < 4`.
#[target_feature(enable = "avx512f")]
#[inline]
fn lu_interchanges(piv: &[__m512i; N]) -> bool {
    let mut ok: __mmask8 = 0xFF;
    for (j, p) in piv.iter().enumerate() {
        ok &= _mm512_cmpge_epi64_mask(*p, _mm512_set1_epi64(j as i64))
            & _mm512_cmplt_epi64_mask(*p, _mm512_set1_epi64(N as i64));
    }
    ok == 0xFF
}

/// `c P L⁻ᵀ U⁻ᵀ` into the lanes of `x` (column-major entries) from the factors `f` and 0-based
/// interchanges `piv`: `W = c U⁻ᵀ` column by column from the last (`W_ij = (c δ_ij −
/// Σ_{j<k<=i} U_jk W_ik) · (1 / U_jj)`, zero above the diagonal as `0 · (1 / U_jj)`),
/// `Z = L⁻ᵀ W` row by row from the last (`Z_ic = W_ic − Σ_{k>i} L_ki Z_kc`), then the
/// rows interchanged in reverse order: `backward::w_rows` and `backward::z_cols`'s operations.
#[target_feature(enable = "avx512f")]
#[inline]
fn scaled_inverse_t(
    f: &[__m512d; N * N],
    piv: &[__m512i; N],
    c: __m512d,
    x: &mut [__m512d; N * N],
) {
    let zero = _mm512_setzero_pd();
    let inv: [__m512d; N] =
        std::array::from_fn(|j| _mm512_div_pd(_mm512_set1_pd(1.0), f[j * N + j]));
    for j in (0..N).rev() {
        let inv = inv[j];
        for i in 0..N {
            let mut acc = if i == j { c } else { zero };
            // (an exclusive range: an inclusive one's loop was not unrolled)
            for k in j + 1..i + 1 {
                acc = _mm512_sub_pd(acc, _mm512_mul_pd(f[k * N + j], x[k * N + i]));
            }
            x[j * N + i] = _mm512_mul_pd(acc, inv);
        }
    }
    for i in (0..N).rev() {
        for col in 0..N {
            let mut acc = x[col * N + i];
            for k in i + 1..N {
                acc = _mm512_sub_pd(acc, _mm512_mul_pd(f[i * N + k], x[col * N + k]));
            }
            x[col * N + i] = acc;
        }
    }
    interchange::<3, { N * N }>(piv, x);
    interchange::<2, { N * N }>(piv, x);
    interchange::<1, { N * N }>(piv, x);
    interchange::<0, { N * N }>(piv, x);
}

/// The `4 x 4` matrices in lanes `x` (column-major entries) out to their blocks in
/// `dst`, row-major if `row_major`, else column-major.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_square(x: &[__m512d; N * N], dst: &mut [[f64; 4]], row_major: bool) {
    if row_major {
        let t: [__m512d; N * N] = std::array::from_fn(|e| x[(e % N) * N + e / N]);
        from_lanes(&t, dst);
    } else {
        from_lanes(x, dst);
    }
}

/// Consecutive whole lane groups of `inverse::lu_inv` with `n = 4`: `A⁻¹` (of `Aᵀ` given as
/// `a`'s blocks, so the result is column-major `A⁻¹`), as its lane kernel computes it.
pub(super) struct InvertRun<'a> {
    /// The matrices, one 16-element column-major block each (a multiple of [`LANES`]).
    pub(super) a: &'a [f64],
    /// The inverses' blocks.
    pub(super) out: &'a mut [f64],
    /// The per-matrix `info`.
    pub(super) info: &'a mut [i64],
}

/// Factorises and inverts the groups of `r` (`factor::factor_lanes_n`, then
/// `backward::middle_lanes_n` with `X = I` on the factors in lanes: the same operations, so
/// the same bits), two at a time. Returns the groups it left unwritten (as
/// [`factor_det`]); `None`, with nothing written, where it does not apply.
pub(super) fn invert(r: InvertRun<'_>) -> Option<Vec<usize>> {
    let size = N * N;
    let len = r.info.len();
    if !avx512()
        || !len.is_multiple_of(LANES)
        || r.a.len() != len * size
        || r.out.len() != len * size
    {
        return None;
    }
    let mut undone = Vec::new();
    // SAFETY: the CPU has AVX-512F (checked above), the only extension `run_invert` uses
    unsafe { run_invert(r, &mut undone) };
    Some(undone)
}

/// The kernel of [`invert`].
#[target_feature(enable = "avx512f")]
fn run_invert(r: InvertRun<'_>, undone: &mut Vec<usize>) {
    let a = r.a.as_chunks::<4>().0;
    let out = r.out.as_chunks_mut::<4>().0;
    let ga = LANES * N * N / 4;
    let one = _mm512_set1_pd(1.0);
    let mut x = [_mm512_setzero_pd(); N * N];
    factored_groups(a, undone, |h, lu| {
        scaled_inverse_t(&lu.f, &lu.piv, one, &mut x);
        store_square(&x, &mut out[h * ga..(h + 1) * ga], false);
        r.info[h * LANES..(h + 1) * LANES].fill(0);
    });
}

/// The register of entries `e..e + 8` of the block of lane `w` in `src` (blocks of `size`
/// entries, one after another, as groups of four).
#[target_feature(enable = "avx512f")]
#[inline]
fn row8(src: &[[f64; 4]], size: usize, w: usize, e: usize) -> __m512d {
    let i = (w * size + e) / 4;
    load4x2(&src[i], &src[i + 1])
}

/// `x[e]` lane `w` = entry `e` of lane `w`'s block in `src` (blocks of `S` entries, `S` a
/// multiple of 4, one after another, as groups of four): 8 x 8 register transposes, and
/// an 8 x 4 one for a last four entries.
#[target_feature(enable = "avx512f")]
#[inline]
fn to_lanes<const S: usize>(src: &[[f64; 4]], x: &mut [__m512d; S]) {
    let src = &src[..LANES * S / 4];
    let mut e0 = 0;
    while e0 + 8 <= S {
        let r = std::array::from_fn(|w| row8(src, S, w, e0));
        x[e0..e0 + 8].copy_from_slice(&transpose8(r));
        e0 += 8;
    }
    if e0 + 4 <= S {
        // register j: lanes 2j and 2j + 1's four entries
        let r = std::array::from_fn(|j| {
            load4x2(&src[(2 * j * S + e0) / 4], &src[((2 * j + 1) * S + e0) / 4])
        });
        x[e0..e0 + 4].copy_from_slice(&transpose8x4(r));
    }
}

/// The inverse of [`to_lanes`].
#[target_feature(enable = "avx512f")]
#[inline]
fn from_lanes<const S: usize>(x: &[__m512d; S], dst: &mut [[f64; 4]]) {
    let dst = &mut dst[..LANES * S / 4];
    let mut e0 = 0;
    while e0 + 8 <= S {
        let r = std::array::from_fn(|i| x[e0 + i]);
        for (w, row) in transpose8(r).into_iter().enumerate() {
            let i = (w * S + e0) / 4;
            let (lo, hi) = dst[i..i + 2].split_at_mut(1);
            store4x2(row, &mut lo[0], &mut hi[0]);
        }
        e0 += 8;
    }
    if e0 + 4 <= S {
        let r = std::array::from_fn(|i| x[e0 + i]);
        for (j, row) in lanes8x4_back(r).into_iter().enumerate() {
            let (a, b) = ((2 * j * S + e0) / 4, ((2 * j + 1) * S + e0) / 4);
            let (lo, hi) = dst.split_at_mut(b);
            store4x2(row, &mut lo[a], &mut hi[0]);
        }
    }
}

/// The 8 x 8 transpose of registers `r` (register `i` lane `j` to register `j` lane `i`).
// (inlined: the array is eight registers, not memory)
#[allow(clippy::large_types_passed_by_value)]
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose8(r: [__m512d; 8]) -> [__m512d; 8] {
    // pairs of rows interleaved: t[2i] = r[2i][0] r[2i+1][0] r[2i][2] r[2i+1][2] ...
    let t = [
        _mm512_unpacklo_pd(r[0], r[1]),
        _mm512_unpackhi_pd(r[0], r[1]),
        _mm512_unpacklo_pd(r[2], r[3]),
        _mm512_unpackhi_pd(r[2], r[3]),
        _mm512_unpacklo_pd(r[4], r[5]),
        _mm512_unpackhi_pd(r[4], r[5]),
        _mm512_unpacklo_pd(r[6], r[7]),
        _mm512_unpackhi_pd(r[6], r[7]),
    ];
    // 128-bit pairs: u[0] = r0[0] r1[0] | r0[4] r1[4] | r2[0] r3[0] | r2[4] r3[4], ...
    let u = [
        _mm512_shuffle_f64x2::<0b10_00_10_00>(t[0], t[2]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(t[1], t[3]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(t[0], t[2]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(t[1], t[3]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(t[4], t[6]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(t[5], t[7]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(t[4], t[6]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(t[5], t[7]),
    ];
    [
        _mm512_shuffle_f64x2::<0b10_00_10_00>(u[0], u[4]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(u[1], u[5]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(u[2], u[6]),
        _mm512_shuffle_f64x2::<0b10_00_10_00>(u[3], u[7]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(u[0], u[4]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(u[1], u[5]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(u[2], u[6]),
        _mm512_shuffle_f64x2::<0b11_01_11_01>(u[3], u[7]),
    ]
}

/// The index vectors of the two-register permutes of [`transpose8x4`]: entries 0, 1 (2, 3)
/// of both lanes of each register, from two registers (indices 8.. are the second).
#[target_feature(enable = "avx512f")]
#[inline]
fn picks() -> (__m512i, __m512i) {
    let lo = [0i64, 4, 8, 12, 1, 5, 9, 13];
    let hi = [2i64, 6, 10, 14, 3, 7, 11, 15];
    (load8i(&lo), load8i(&hi))
}

/// Register `j` of the result, lane `w`: entry `j` of lane `w` of `r` (register `i` holds
/// lanes `2i` and `2i + 1`, four entries each).
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose8x4(r: [__m512d; 4]) -> [__m512d; 4] {
    let (lo, hi) = picks();
    // p0: entries 0 and 1 of lanes 0..4; p1: entries 2 and 3; q: of lanes 4..8
    let p0 = _mm512_permutex2var_pd(r[0], lo, r[1]);
    let p1 = _mm512_permutex2var_pd(r[0], hi, r[1]);
    let q0 = _mm512_permutex2var_pd(r[2], lo, r[3]);
    let q1 = _mm512_permutex2var_pd(r[2], hi, r[3]);
    [
        _mm512_shuffle_f64x2::<0b01_00_01_00>(p0, q0),
        _mm512_shuffle_f64x2::<0b11_10_11_10>(p0, q0),
        _mm512_shuffle_f64x2::<0b01_00_01_00>(p1, q1),
        _mm512_shuffle_f64x2::<0b11_10_11_10>(p1, q1),
    ]
}

/// The inverse of [`transpose8x4`].
#[target_feature(enable = "avx512f")]
#[inline]
fn lanes8x4_back(o: [__m512d; 4]) -> [__m512d; 4] {
    let (lo, hi) = picks();
    let p0 = _mm512_shuffle_f64x2::<0b01_00_01_00>(o[0], o[1]);
    let q0 = _mm512_shuffle_f64x2::<0b11_10_11_10>(o[0], o[1]);
    let p1 = _mm512_shuffle_f64x2::<0b01_00_01_00>(o[2], o[3]);
    let q1 = _mm512_shuffle_f64x2::<0b11_10_11_10>(o[2], o[3]);
    [
        _mm512_permutex2var_pd(p0, lo, p1),
        _mm512_permutex2var_pd(p0, hi, p1),
        _mm512_permutex2var_pd(q0, lo, q1),
        _mm512_permutex2var_pd(q0, hi, q1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The register form of `ln_normal` gives the scalar form's bits: random mantissas at
    /// every exponent, both sides of the √2 reduction boundary, around 1, the extremes.
    #[test]
    #[cfg_attr(not(cotangent_test_avx512), ignore = "needs AVX-512F, which this host lacks")]
    fn ln_normal_in_registers_gives_the_scalar_bits() {
        // (the kernels themselves, whatever COTANGENT_SIMD asks of the library)
        assert!(std::arch::is_x86_feature_detected!("avx512f"), "built on a host with AVX-512F");
        let mut rng = crate::backend::cpu::XorShift(0x2545_F491_4F6C_DD1D);
        let mut next = || rng.next_u64();
        let mut xs = vec![f64::MIN_POSITIVE, f64::MAX, 1.0, 2.0, 0.5, 1.0 + f64::EPSILON];
        for e in 1..2047u64 {
            for _ in 0..16 {
                xs.push(f64::from_bits((e << 52) | (next() >> 12)));
            }
        }
        let root = std::f64::consts::SQRT_2;
        for d in -64i64..64 {
            let r = f64::from_bits((root.to_bits() as i64 + d) as u64);
            xs.extend([r, r * 0.5, r * 1e300, 1.0 + d as f64 * 1e-9]);
        }
        xs.resize(xs.len().next_multiple_of(8), 3.0);
        #[target_feature(enable = "avx512f")]
        fn all(xs: &[f64]) -> Vec<f64> {
            let mut out = vec![0.0; xs.len()];
            for (o, x) in out.as_chunks_mut::<8>().0.iter_mut().zip(xs.as_chunks::<8>().0) {
                store8(ln_normal(load8(x)), o);
            }
            out
        }
        // SAFETY: the CPU has AVX-512F (asserted above)
        let got = unsafe { all(&xs) };
        for (&x, &y) in xs.iter().zip(&got) {
            assert_eq!(y.to_bits(), super::super::det::ln_normal(x).to_bits(), "ln {x:e}");
        }
    }

    /// The transposes against their definitions, where the CPU has AVX-512.
    #[test]
    #[cfg_attr(not(cotangent_test_avx512), ignore = "needs AVX-512F, which this host lacks")]
    fn register_transposes_move_the_right_entries() {
        // (the kernels themselves, whatever COTANGENT_SIMD asks of the library)
        assert!(std::arch::is_x86_feature_detected!("avx512f"), "built on a host with AVX-512F");
        #[target_feature(enable = "avx512f")]
        fn check<const S: usize>() {
            let src: Vec<[f64; 4]> =
                (0..LANES * S / 4).map(|i| std::array::from_fn(|j| (4 * i + j) as f64)).collect();
            let mut x = [_mm512_setzero_pd(); S];
            to_lanes(&src, &mut x);
            for (e, r) in x.iter().enumerate() {
                let mut lanes = [0.0; 8];
                store8(*r, &mut lanes);
                for (w, &y) in lanes.iter().enumerate() {
                    assert_eq!(y, (w * S + e) as f64, "size {S} entry {e} lane {w}");
                }
            }
            let mut back = vec![[-1.0; 4]; LANES * S / 4];
            from_lanes(&x, &mut back);
            assert_eq!(back, src, "size {S}");
        }
        // SAFETY: the CPU has AVX-512F (asserted above)
        unsafe {
            check::<4>();
            check::<8>();
            check::<12>();
            check::<16>();
        }
    }
}
