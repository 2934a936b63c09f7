//! What the AVX-512 kernels (`linalg::lu_wide`, `norm_wide`) share: the CPU check and
//! unaligned loads and stores of whole eight-element arrays.
//!
//! Unsafe code (a per-module `allow`, as the architecture allows): the loads and stores
//! are `core::arch` intrinsics on references to whole arrays, so every access is in
//! bounds; the functions are `#[target_feature(enable = "avx512f")]`, callable only from
//! code compiled for AVX-512F (the kernels, entered after [`avx512`]).
#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m512d, __m512i, _mm512_loadu_epi64, _mm512_loadu_pd, _mm512_storeu_epi64, _mm512_storeu_pd,
};

/// Whether the AVX-512 kernels may run: the CPU has AVX-512F (the only extension they use)
/// and `COTANGENT_SIMD` does not ask for a lower level ([`super::simd::level`]).
pub(crate) fn avx512() -> bool {
    super::simd::level() == super::simd::Level::Avx512
}

/// The register of the eight `f64` of `a`.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn load8(a: &[f64; 8]) -> __m512d {
    // SAFETY: `a` is 64 readable bytes; the load needs no alignment
    unsafe { _mm512_loadu_pd(a.as_ptr()) }
}

/// `x` into the eight `f64` of `a`.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn store8(x: __m512d, a: &mut [f64; 8]) {
    // SAFETY: `a` is 64 writable bytes; the store needs no alignment
    unsafe { _mm512_storeu_pd(a.as_mut_ptr(), x) }
}

/// The register of the eight `i64` of `a`.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn load8i(a: &[i64; 8]) -> __m512i {
    // SAFETY: `a` is 64 readable bytes; the load needs no alignment
    unsafe { _mm512_loadu_epi64(a.as_ptr()) }
}

/// `x` into the eight `i64` of `a`.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn store8i(x: __m512i, a: &mut [i64; 8]) {
    // SAFETY: `a` is 64 writable bytes; the store needs no alignment
    unsafe { _mm512_storeu_epi64(a.as_mut_ptr(), x) }
}
