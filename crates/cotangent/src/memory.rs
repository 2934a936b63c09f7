//! The memory of the CPU device: its cache of buffers.
//!
//! Kernels take their output and scratch buffers from a cache of buffers that dropped
//! tensors gave back, instead of asking the system for fresh memory each time (which it
//! hands out as pages zeroed one fault at a time, a large share of the time of programs
//! over big matrices). Buffers from 16 KiB are cached, f32, f64, i64 and complex ones,
//! up to a bound on the bytes held: by default a quarter of the memory available to the
//! process (the machine's, or its cgroup's limit if lower, on Linux; 1 GiB where unknown).
//! Cached bytes stay resident: lower the bound where memory is scarce, raise it where a
//! program's working set of large temporaries is bigger (a forward-over-reverse Hessian
//! over 2,000-point kernel matrices keeps a few gigabytes alive at its peak).
//!
//! As PyTorch's `torch.cuda.empty_cache` and `set_per_process_memory_fraction` for its
//! caching allocator; its CPU allocator has no cache.
//!
//! ```
//! use cotangent::{memory, DType, Tensor};
//! memory::set_cache_limit(64 << 20); // 64 MiB
//! assert_eq!(memory::cache_limit(), 64 << 20);
//! drop(Tensor::zeros((512, 512), DType::F64)?); // its 2 MiB buffer goes to the cache
//! assert!(memory::cached_bytes() >= 2 << 20 && memory::cached_bytes() <= 64 << 20);
//! memory::empty_cache();
//! assert_eq!(memory::cached_bytes(), 0);
//! memory::set_cache_limit(0); // no caching
//! drop(Tensor::zeros((512, 512), DType::F64)?);
//! assert_eq!(memory::cached_bytes(), 0);
//! # Ok::<(), cotangent::Error>(())
//! ```

use crate::backend::cpu::pool;

/// Sets the bound on the bytes the buffer cache holds (all dtypes together) and gives
/// back to the system, oldest first, what it holds beyond it. 0 turns caching off.
/// Process-wide; takes effect for the buffers given back from then on.
pub fn set_cache_limit(bytes: usize) {
    pool::set_limit(bytes);
}

/// The bound on the bytes the buffer cache holds: the last [`set_cache_limit`], else the
/// default (a quarter of the memory available to the process; 1 GiB where unknown).
pub fn cache_limit() -> usize {
    pool::limit()
}

/// The bytes the buffer cache holds now (resident, not in use by any tensor).
pub fn cached_bytes() -> usize {
    pool::cached_bytes()
}

/// Gives every cached buffer back to the system (`torch.cuda.empty_cache`); the bound
/// stays.
pub fn empty_cache() {
    pool::empty();
}
