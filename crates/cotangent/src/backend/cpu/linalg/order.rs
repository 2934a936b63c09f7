//! The size ladder of the kernels: a runtime order dispatched to an instance compiled for
//! it.
//!
//! Many kernels here have a copy with the order `N` a constant (loops unrolled, no bounds
//! checks) for the few orders worth it, and a generic copy (`N = 0`, the order read at run
//! time) for the rest. Each call site lists its own orders (each one an instance compiled,
//! and each one's speed measured on its own): [`by_order!`] writes the `match` that picks
//! the instance, once for all of them.
//!
//! Every instance is paid for in build time by every user, so the lists hold the orders
//! most programs use (at most 1, 2, 3, 4, 8 and 16), not every order up to the kernel's
//! largest: the orders between run the any-order copy, which does the same operations
//! with the loop bounds read at run time (docs/benchmarks.md, "Build time", has what
//! that costs).

/// `by_order!(n; 1 2 3 4 => |N| f::<T, N>(..), _ => f::<T, 0>(..))`: the first expression
/// with `N` a `const usize` equal to `n` when `n` is one of the listed orders, else the
/// fallback expression. (`n` an expression of type `usize`; pass an order no list holds,
/// such as 0, to take the fallback, as for a non-square shape.)
macro_rules! by_order {
    ($n:expr; $($k:literal)+ => |$N:ident| $body:expr, _ => $fallback:expr $(,)?) => {
        match $n {
            $($k => {
                const $N: usize = $k;
                $body
            })+
            _ => $fallback,
        }
    };
}

pub(crate) use by_order;

/// `by_order_simd!(arch, n; 2 3 4 => |N| Kernel::<T, N> { .. }, _ => Kernel::<T, 0> { .. })`:
/// [`by_order!`] for the SIMD kernels (`pulp::WithSimd`). The kernel of order `N` runs
/// when `n` is listed and `arch` is the level the fixed-order kernels are compiled for
/// ([`simd::sized`](crate::backend::cpu::simd::sized): AVX2 on x86-64); otherwise the
/// any-order kernel runs under `arch`. A fixed-order kernel exists only to be fast, so it
/// is compiled for that one level and not also for the portable one: each instance costs
/// build time, and most of the crate's machine code is such instances.
macro_rules! by_order_simd {
    ($arch:expr, $n:expr; $($k:literal)+ => |$N:ident| $kernel:expr, _ => $any:expr $(,)?) => {{
        let arch: pulp::Arch = $arch;
        match ($crate::backend::cpu::simd::sized(arch), $n) {
            $((Some(simd), $k) => {
                const $N: usize = $k;
                $crate::backend::cpu::simd::vectorize(simd, $kernel)
            })+
            _ => arch.dispatch($any),
        }
    }};
}

pub(crate) use by_order_simd;
