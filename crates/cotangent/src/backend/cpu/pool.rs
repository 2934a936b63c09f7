//! A cache of large f32/f64 (and i64: LU pivots) buffers, reused instead of returned to
//! the system.
//!
//! Why: a tensor program over big matrices (a Gaussian process on 2,000 points allocates
//! dozens of 40 MB temporaries per evaluation) otherwise pays for every temporary twice
//! in the kernel: glibc serves allocations above its mmap threshold (at most 32 MiB) with
//! fresh `mmap`s, whose pages fault in one by one and are zeroed, and returns them with
//! `munmap` on free. Profiles showed a third of such a program's time in page faults. The
//! buffers of dropped storages are kept here (up to [`MAX_BYTES`] per dtype) and handed
//! to the next kernel that needs one of a similar size; buffers below [`MIN_BYTES`] are
//! left to the allocator, which serves them well. (Glibc's default mmap threshold is 128
//! KiB, and even below its dynamic one, freeing a buffer at the top of the heap trims
//! it: a batch of 4,096 4 x 4 matrices, 512 KiB, faulted its pages in on every use.)

use std::sync::Mutex;

use half::{bf16, f16};
use num_complex::Complex;

/// Buffers smaller than this are not cached.
const MIN_BYTES: usize = 1 << 17;
/// At most this many bytes are cached per dtype.
const MAX_BYTES: usize = 1 << 30;
/// At most this many buffers are cached per dtype.
const MAX_BUFFERS: usize = 64;

/// Element types of CPU buffers; f32, f64 and i64 have a cache (i64 for the pivots of
/// batched LU factorisations: 4,096 4 x 4 matrices have 128 KiB of them, which were
/// zero-filled anew on every call, 4% of a batched solve).
pub(crate) trait Pooled: Copy + Default + Send + Sync + 'static {
    /// The cache of this type, if it has one.
    fn pool() -> Option<&'static Mutex<Vec<Vec<Self>>>> {
        None
    }
}

impl Pooled for f64 {
    fn pool() -> Option<&'static Mutex<Vec<Vec<f64>>>> {
        static POOL: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());
        Some(&POOL)
    }
}

impl Pooled for f32 {
    fn pool() -> Option<&'static Mutex<Vec<Vec<f32>>>> {
        static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());
        Some(&POOL)
    }
}

impl Pooled for i64 {
    fn pool() -> Option<&'static Mutex<Vec<Vec<i64>>>> {
        static POOL: Mutex<Vec<Vec<i64>>> = Mutex::new(Vec::new());
        Some(&POOL)
    }
}

impl Pooled for bool {}
impl Pooled for bf16 {}
impl Pooled for f16 {}
impl Pooled for Complex<f32> {}
impl Pooled for Complex<f64> {}

fn bytes<T>(n: usize) -> usize {
    n.saturating_mul(std::mem::size_of::<T>())
}

/// An empty vector with room for `n` elements: a cached buffer of capacity `n..=2n` if
/// there is one, else a new allocation.
pub(crate) fn take<T: Pooled>(n: usize) -> Vec<T> {
    let mut v = reuse(n);
    v.clear();
    v
}

/// `n` elements for a kernel that writes every one of them before reading any: a cached
/// buffer keeps its old (initialised) values instead of being filled first, which for a
/// batch of small matrices was a fifth of a solve's time; only the elements past its
/// old length (all of a new allocation) are filled with `value`.
pub(crate) fn overwritten<T: Pooled>(n: usize, value: T) -> Vec<T> {
    let mut v = reuse(n);
    if v.len() >= n {
        v.truncate(n);
    } else {
        v.resize(n, value);
    }
    v
}

/// A cached buffer of capacity `n..=2n` with its old contents, or an empty new one.
fn reuse<T: Pooled>(n: usize) -> Vec<T> {
    if bytes::<T>(n) >= MIN_BYTES {
        if let Some(pool) = T::pool() {
            if let Ok(mut p) = pool.lock() {
                let best = p
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.capacity() >= n && v.capacity() <= 2 * n)
                    .min_by_key(|(_, v)| v.capacity())
                    .map(|(i, _)| i);
                if let Some(i) = best {
                    return p.swap_remove(i);
                }
            }
        }
    }
    Vec::with_capacity(n)
}

/// `n` copies of `value` in a (possibly cached) buffer.
pub(crate) fn filled<T: Pooled>(n: usize, value: T) -> Vec<T> {
    let mut v = take(n);
    v.resize(n, value);
    v
}

/// Makes room for `n` elements in the scratch vector `v` (its contents are kept only if
/// it already had the room): a too small `v` goes back to the cache and a cached buffer
/// (or a new one) takes its place, empty. For workspaces that live across calls in a
/// struct, whose `Drop` returns them with [`give`].
pub(crate) fn reserve<T: Pooled>(v: &mut Vec<T>, n: usize) {
    if v.capacity() < n {
        give(std::mem::replace(v, take(n)));
    }
}

/// Returns a buffer to the cache (or to the allocator, if small or the cache is full;
/// the oldest buffers are evicted first).
pub(crate) fn give<T: Pooled>(v: Vec<T>) {
    let size = bytes::<T>(v.capacity());
    if !(MIN_BYTES..=MAX_BYTES).contains(&size) {
        return;
    }
    let Some(pool) = T::pool() else { return };
    let Ok(mut p) = pool.lock() else { return };
    let mut total: usize = p.iter().map(|b| bytes::<T>(b.capacity())).sum();
    while !p.is_empty() && (total + size > MAX_BYTES || p.len() >= MAX_BUFFERS) {
        let old = p.remove(0);
        total -= bytes::<T>(old.capacity());
    }
    p.push(v);
}

#[cfg(test)]
mod tests {
    use super::{give, take, MIN_BYTES};

    #[test]
    fn large_buffers_are_reused_small_ones_are_not() {
        let n = MIN_BYTES / 8 + 10;
        // a request of a similar size gets the same buffer back, emptied (the pool is
        // shared with the tests running alongside, which may take the buffer first: a
        // few tries)
        let mut found = None;
        for _ in 0..100 {
            let v: Vec<f64> = take(n);
            let ptr = v.as_ptr();
            give(v);
            let w: Vec<f64> = take(n - 5);
            if w.as_ptr() == ptr {
                assert!(w.is_empty() && w.capacity() >= n - 5);
                found = Some((w, ptr));
                break;
            }
        }
        let Some((w, ptr)) = found else {
            panic!("a buffer given back was never reused");
        };
        // one less than half the size does not (it would waste the buffer)
        give(w);
        let small: Vec<f64> = take(n / 2 - 1);
        assert_ne!(small.as_ptr(), ptr);
        let tiny: Vec<f64> = take(10);
        assert!(tiny.capacity() >= 10);
    }
}
