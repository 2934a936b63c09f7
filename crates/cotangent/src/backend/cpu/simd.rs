//! Which SIMD instruction sets the CPU kernels use: the best this CPU has, or a lower one
//! forced by `COTANGENT_SIMD=portable|avx2|avx512` (read once, on first use), so that
//! every path can be run and tested on one host.
//!
//! `portable` runs the kernels written with `pulp` on its scalar backend (their any-order
//! copies: the fixed-order ones are compiled for AVX2 only, see
//! [`by_order_simd!`](super::linalg::order::by_order_simd)) and never enters the AVX-512
//! kernels; `avx2` allows `pulp`'s x86-64-v3 backend (AVX2 and FMA) but not
//! the AVX-512 kernels; `avx512` allows both. A level the CPU lacks is lowered to the best
//! it has; an unknown value is ignored. faer's own kernels choose their instruction sets
//! themselves and are not affected.

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level, ordered from the most portable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Scalar code only (`pulp`'s scalar backend).
    Portable,
    /// AVX2 and FMA (`pulp`'s x86-64-v3 backend).
    Avx2,
    /// AVX-512F as well (the `*_wide` kernels).
    Avx512,
}

/// The best level this CPU supports.
pub(crate) fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx2;
        }
    }
    Level::Portable
}

/// The level the kernels use: [`detected`], or lower where `COTANGENT_SIMD` asks for it.
#[inline]
pub(crate) fn level() -> Level {
    // (an atomic byte, 0 until decided: the kernels ask on every dispatch)
    static LEVEL: AtomicU8 = AtomicU8::new(0);
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Portable,
        2 => Level::Avx2,
        3 => Level::Avx512,
        _ => {
            let asked = match std::env::var("COTANGENT_SIMD").as_deref() {
                Ok("portable") => Level::Portable,
                Ok("avx2") => Level::Avx2,
                _ => Level::Avx512,
            };
            let l = asked.min(detected());
            LEVEL.store(l as u8 + 1, Ordering::Relaxed);
            l
        }
    }
}

/// The `pulp` dispatcher of [`level`]: the scalar backend at `portable`, else the best
/// `pulp` backend the CPU has (`pulp` is built without its AVX-512 backend).
#[inline]
pub(crate) fn arch() -> pulp::Arch {
    if level() == Level::Portable {
        pulp::Arch::Scalar
    } else {
        pulp::Arch::new()
    }
}

/// The SIMD level the fixed-order kernels are compiled for (see
/// [`by_order_simd!`](crate::backend::cpu::linalg::order::by_order_simd)): on x86-64,
/// pulp's x86-64-v3 backend (AVX2 and FMA), when `arch` is it; elsewhere `arch` itself.
#[cfg(target_arch = "x86_64")]
pub(crate) type Sized = pulp::x86::V3;
/// The SIMD level the fixed-order kernels are compiled for: off x86-64, every level.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) type Sized = pulp::Arch;

/// `arch` as the level the fixed-order kernels are compiled for, if it is that level.
#[inline]
pub(crate) fn sized(arch: pulp::Arch) -> Option<Sized> {
    #[cfg(target_arch = "x86_64")]
    {
        match arch {
            pulp::Arch::V3(simd) => Some(simd),
            _ => None,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Some(arch)
    }
}

/// Runs `op` at the level `simd`.
#[inline(always)]
pub(crate) fn vectorize<Op: pulp::WithSimd>(simd: Sized, op: Op) -> Op::Output {
    #[cfg(target_arch = "x86_64")]
    {
        pulp::Simd::vectorize(simd, op)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        simd.dispatch(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_never_exceeds_the_cpu() {
        assert!(level() <= detected());
        // the dispatcher agrees with the level
        let scalar = matches!(arch(), pulp::Arch::Scalar);
        assert_eq!(scalar, level() == Level::Portable || detected() == Level::Portable);
    }
}
