//! [`super::norm`]'s order-2 kernels for runs of a multiple of eight `f64` tiling a block
//! (a norm over the trailing dims of a contiguous batch, such as the Frobenius norms of
//! 4 x 4 matrices), in AVX-512 registers, where the CPU has them.
//!
//! Why: a 4 x 4 run is sixteen elements, two 512-bit registers; the portable kernels
//! (AVX2) spend more instructions on each run's reduction and bookkeeping than on its
//! arithmetic. Here eight runs' accumulators are reduced together by register shuffles
//! that pair the lanes as `norm2_groups`' tree does (so the sums are the same, bit for
//! bit), and the backward's `x s` is two loads, two products and two stores per run.
//!
//! Unsafe code, as in `linalg::lu_wide` (which says why not pulp's AVX-512 level): the
//! kernels are `#[target_feature(enable = "avx512f")]` functions, entered only after
//! `is_x86_feature_detected!("avx512f")`; their loads and stores are `super::wide`'s.
#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m512d, _mm512_add_pd, _mm512_cmp_pd_mask, _mm512_mask_blend_pd, _mm512_mul_pd,
    _mm512_permutex2var_pd, _mm512_set1_pd, _mm512_shuffle_f64x2, _mm512_sqrt_pd,
    _mm512_unpackhi_pd, _mm512_unpacklo_pd, _CMP_GE_OQ, _CMP_LT_OQ,
};

use super::wide::{avx512, load8, load8i, store8};

/// The order-2 norms of the runs of `len` elements (a positive multiple of 8) tiling
/// `xs`, one per entry of `out` (a multiple of 8 of them): each run's fast sum of
/// squares as `norm::norm2_groups` forms it (the same bits), and its square root where
/// that sum is finite and at least `MIN_POSITIVE / EPSILON`; elsewhere the sum itself,
/// with the run's index pushed on `redo` (for the caller's scaled recomputation).
/// `false`, with nothing written, where the kernel does not apply (no AVX-512, lengths
/// that do not match).
pub(super) fn norm2_runs(xs: &[f64], len: usize, out: &mut [f64], redo: &mut Vec<usize>) -> bool {
    if !avx512()
        || len == 0
        || !len.is_multiple_of(8)
        || !out.len().is_multiple_of(8)
        || xs.len() != out.len() * len
    {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (checked above), the only extension the kernels use
    unsafe {
        if len == 16 {
            // 4 x 4 matrices: the run length a constant (the loops unroll)
            run_norm2::<2>(2, xs, out, redo);
        } else {
            run_norm2::<0>(len / 8, xs, out, redo);
        }
    }
    true
}

/// The kernel of [`norm2_runs`], `per` chunks of eight per run (`PER` if not 0).
///
/// Eight runs at a time: run `r`'s accumulator `a_r` (lane `k`: `Σ c_k²` over its chunks
/// in order; the first term alone, as `0 + c²` is `c²`) is reduced as `norm2_groups`'
/// tree `((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7))`, eight runs together: the
/// halves of two runs' registers added (`p_k = a_k + a_{k+4}`, two runs per register),
/// then the even and odd lanes of two such registers (`p0 + p1` and `p2 + p3`, four runs
/// per register), then those two sums of each run gathered into two registers in run
/// order and added.
#[target_feature(enable = "avx512f")]
fn run_norm2<const PER: usize>(per: usize, xs: &[f64], out: &mut [f64], redo: &mut Vec<usize>) {
    let per = if PER > 0 { PER } else { per };
    let chunks = xs.as_chunks::<8>().0;
    let tiny = _mm512_set1_pd(f64::MIN_POSITIVE / f64::EPSILON);
    let inf = _mm512_set1_pd(f64::INFINITY);
    // lanes of (q0, q1) below: the `p0 + p1` of runs 0..8, and their `p2 + p3`
    let (lo, hi) = (load8i(&[0, 4, 1, 5, 8, 12, 9, 13]), load8i(&[2, 6, 3, 7, 10, 14, 11, 15]));
    for (g, o) in out.as_chunks_mut::<8>().0.iter_mut().enumerate() {
        let runs = &chunks[g * 8 * per..(g + 1) * 8 * per];
        let acc: [__m512d; 8] = std::array::from_fn(|r| {
            let run = &runs[r * per..(r + 1) * per];
            let first = load8(&run[0]);
            let mut a = _mm512_mul_pd(first, first);
            for c in &run[1..] {
                let v = load8(c);
                a = _mm512_add_pd(a, _mm512_mul_pd(v, v));
            }
            a
        });
        // p[i]: runs 2i (low half) and 2i + 1 (high half), lanes k = a_k + a_{k+4}
        let p: [__m512d; 4] = std::array::from_fn(|i| {
            let (a, b) = (acc[2 * i], acc[2 * i + 1]);
            _mm512_add_pd(
                _mm512_shuffle_f64x2::<0b01_00_01_00>(a, b),
                _mm512_shuffle_f64x2::<0b11_10_11_10>(a, b),
            )
        });
        // q0: p0 + p1 and p2 + p3 of runs 0, 2 (first half) and 1, 3 (second half),
        // as [r0, r2, r0', r2', r1, r3, r1', r3'] (' for p2 + p3); q1 of runs 4..8
        let q0 = _mm512_add_pd(_mm512_unpacklo_pd(p[0], p[1]), _mm512_unpackhi_pd(p[0], p[1]));
        let q1 = _mm512_add_pd(_mm512_unpacklo_pd(p[2], p[3]), _mm512_unpackhi_pd(p[2], p[3]));
        let s =
            _mm512_add_pd(_mm512_permutex2var_pd(q0, lo, q1), _mm512_permutex2var_pd(q0, hi, q1));
        let ok =
            _mm512_cmp_pd_mask::<_CMP_GE_OQ>(s, tiny) & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(s, inf);
        store8(_mm512_mask_blend_pd(ok, s, _mm512_sqrt_pd(s)), o);
        if ok != 0xFF {
            redo.extend((0..8).filter(|w| ok >> w & 1 == 0).map(|w| g * 8 + w));
        }
    }
}

/// `out = x s` over the runs of `len` elements (a positive multiple of 8) tiling `xs`,
/// one scale per run in `scale` (the order-2 backward's `x (g / y)`; one product per
/// element, as the portable loop). `false`, with nothing written, where the kernel does
/// not apply.
pub(super) fn scale_runs(xs: &[f64], len: usize, scale: &[f64], out: &mut [f64]) -> bool {
    if !avx512()
        || len == 0
        || !len.is_multiple_of(8)
        || xs.len() != scale.len() * len
        || out.len() != xs.len()
    {
        return false;
    }
    // SAFETY: the CPU has AVX-512F (checked above), the only extension the kernel uses
    unsafe {
        if len == 16 {
            run_scale::<2>(2, xs, scale, out);
        } else {
            run_scale::<0>(len / 8, xs, scale, out);
        }
    }
    true
}

/// The kernel of [`scale_runs`], `per` chunks of eight per run (`PER` if not 0).
#[target_feature(enable = "avx512f")]
fn run_scale<const PER: usize>(per: usize, xs: &[f64], scale: &[f64], out: &mut [f64]) {
    let per = if PER > 0 { PER } else { per };
    let x = xs.as_chunks::<8>().0;
    let o = out.as_chunks_mut::<8>().0;
    for ((xr, or), &s) in x.chunks_exact(per).zip(o.chunks_exact_mut(per)).zip(scale) {
        let s = _mm512_set1_pd(s);
        for (xc, oc) in xr.iter().zip(or) {
            store8(_mm512_mul_pd(load8(xc), s), oc);
        }
    }
}
