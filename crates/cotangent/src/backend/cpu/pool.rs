//! A cache of large and middle-sized f32/f64/complex (and i64: LU pivots) buffers, reused
//! instead of returned to the system.
//!
//! Why: a tensor program over big matrices (a Gaussian process on 2,000 points allocates
//! dozens of 40 MB temporaries per evaluation) otherwise pays for every temporary twice
//! in the kernel: glibc serves allocations above its mmap threshold (at most 32 MiB) with
//! fresh `mmap`s, whose pages fault in one by one and are zeroed, and returns them with
//! `munmap` on free. Profiles showed much of such a program's time in page faults. The
//! buffers of dropped storages are kept here (up to [`limit`] bytes, all dtypes together)
//! and handed to the next kernel that needs one of a similar size; buffers below
//! [`SMALL_BYTES`] are
//! left to the allocator, which serves them well. (Glibc's default mmap threshold is 128
//! KiB, and even below its dynamic one, freeing a buffer at the top of the heap trims
//! it: a batch of 4,096 4 x 4 matrices, 512 KiB, faulted its pages in on every use.)
//!
//! Middle-sized buffers ([`SMALL_BYTES`] to [`MIN_BYTES`]: a 64 x 64 f64 matrix is 32
//! KiB) have a cache of their own, of at most [`MAX_SMALL_BUFFERS`]: alone each is served
//! well by the allocator, but an op's temporaries together (a 64 x 64 SVD's forward and
//! backward: a dozen) grow the top of the heap past glibc's trim threshold (128 KiB), and
//! freeing them at the end of each call trimmed it, to be grown and faulted in again by the
//! next: `svd` forward and backward at 64 x 64 was much slower in such a process than
//! with the trim threshold raised (`GLIBC_TUNABLES=glibc.malloc.trim_threshold=...`),
//! which is what this cache gives. Whether a process trimmed depended on its history
//! (a larger buffer freed earlier raises glibc's dynamic thresholds), so the same
//! benchmark ran at either speed from one run to the next. Kept apart from the large
//! buffers so that they never evict one.
//!
//! The bound: a quarter of the machine's memory by default. A forward-over-reverse pass
//! over 2,000-point kernel matrices keeps a few gigabytes of 40 MB temporaries alive at
//! its peak; with a cache smaller than that working set, every pass faulted the excess in
//! again (a fixed 1 GiB did). Users set it with `cotangent::memory::set_cache_limit`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use half::{bf16, f16};
use num_complex::Complex;

/// Buffers from this size are cached among the large ones.
const MIN_BYTES: usize = 1 << 17;
/// Buffers from this size up to [`MIN_BYTES`] are cached among the middle-sized ones;
/// smaller ones are not cached.
const SMALL_BYTES: usize = 1 << 14;
/// At most this many middle-sized buffers are cached per dtype (at most 4 MiB).
const MAX_SMALL_BUFFERS: usize = 32;
/// At most this many large buffers are cached per dtype.
const MAX_BUFFERS: usize = 256;
/// The bound where the machine's memory is not known.
const FALLBACK_LIMIT: usize = 1 << 30;

/// The bound on the bytes cached, all caches together; `usize::MAX` until set.
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The bytes in all caches (updated under each cache's lock, so exact once they are
/// released; two caches filling at once may overshoot the bound by a buffer each).
static CACHED: AtomicUsize = AtomicUsize::new(0);

/// The bound on the bytes the caches hold, all dtypes together: what [`set_limit`] set,
/// else a quarter of the memory available to the process (the machine's, or its
/// cgroup's if lower; Linux), else 1 GiB.
pub(crate) fn limit() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    match LIMIT.load(Ordering::Relaxed) {
        usize::MAX => *DEFAULT.get_or_init(|| memory_bytes().map_or(FALLBACK_LIMIT, |b| b / 4)),
        set => set,
    }
}

/// Sets the bound (bytes, all dtypes together) and gives back to the system what the
/// caches hold beyond it, oldest first; 0 turns caching off.
pub(crate) fn set_limit(bytes: usize) {
    LIMIT.store(bytes.min(usize::MAX - 1), Ordering::Relaxed);
    trim_to(limit());
}

/// Gives every cached buffer back to the system (the bound stays).
pub(crate) fn empty() {
    trim_to(0);
}

/// Evicts the oldest buffers of each cache until at most `target` bytes are cached.
fn trim_to(target: usize) {
    fn trim<T: Pooled>(target: usize) {
        let Some(pool) = T::pool() else { return };
        for cache in [&pool.large, &pool.small] {
            let Ok(mut p) = cache.lock() else { continue };
            while !p.is_empty() && CACHED.load(Ordering::Relaxed) > target {
                let old = p.remove(0);
                CACHED.fetch_sub(bytes::<T>(old.capacity()), Ordering::Relaxed);
            }
        }
    }
    trim::<f64>(target);
    trim::<f32>(target);
    trim::<i64>(target);
    trim::<Complex<f64>>(target);
    trim::<Complex<f32>>(target);
}

/// The bytes the caches hold now.
pub(crate) fn cached_bytes() -> usize {
    CACHED.load(Ordering::Relaxed)
}

/// The memory available to the process, where known: the machine's (`MemTotal` of
/// `/proc/meminfo`) or its cgroup's limit (`memory.max`, cgroup v2) if lower.
fn memory_bytes() -> Option<usize> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kb.checked_mul(1024)
    })?;
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    Some(cgroup.map_or(total, |c| c.min(total)))
}

/// A cache: the large buffers and the middle-sized ones.
pub(crate) struct Caches<T> {
    large: Mutex<Vec<Vec<T>>>,
    small: Mutex<Vec<Vec<T>>>,
}

impl<T> Caches<T> {
    const fn new() -> Self {
        Caches { large: Mutex::new(Vec::new()), small: Mutex::new(Vec::new()) }
    }
}

/// Element types of CPU buffers; f32, f64, i64 and the complex types have a cache (i64
/// for the pivots of batched LU factorisations, which were zero-filled anew on every
/// call; complex for the same reason as real: a fresh buffer of a large matrix is paid
/// in page faults on every op of a backward).
pub(crate) trait Pooled: Copy + Default + Send + Sync + 'static {
    /// The caches of this type, if it has them.
    fn pool() -> Option<&'static Caches<Self>> {
        None
    }
}

impl Pooled for f64 {
    fn pool() -> Option<&'static Caches<f64>> {
        static POOL: Caches<f64> = Caches::new();
        Some(&POOL)
    }
}

impl Pooled for f32 {
    fn pool() -> Option<&'static Caches<f32>> {
        static POOL: Caches<f32> = Caches::new();
        Some(&POOL)
    }
}

impl Pooled for i64 {
    fn pool() -> Option<&'static Caches<i64>> {
        static POOL: Caches<i64> = Caches::new();
        Some(&POOL)
    }
}

impl Pooled for bool {}
impl Pooled for bf16 {}
impl Pooled for f16 {}
impl Pooled for Complex<f32> {
    fn pool() -> Option<&'static Caches<Complex<f32>>> {
        static POOL: Caches<Complex<f32>> = Caches::new();
        Some(&POOL)
    }
}

impl Pooled for Complex<f64> {
    fn pool() -> Option<&'static Caches<Complex<f64>>> {
        static POOL: Caches<Complex<f64>> = Caches::new();
        Some(&POOL)
    }
}

fn bytes<T>(n: usize) -> usize {
    n.saturating_mul(std::mem::size_of::<T>())
}

/// The cache for buffers of `size` bytes, and how many buffers it may hold; `None` if
/// such buffers are not cached.
fn cache_of<T: Pooled>(size: usize) -> Option<(&'static Mutex<Vec<Vec<T>>>, usize)> {
    let pool = T::pool()?;
    if size >= MIN_BYTES {
        Some((&pool.large, MAX_BUFFERS))
    } else if (SMALL_BYTES..MIN_BYTES).contains(&size) {
        Some((&pool.small, MAX_SMALL_BUFFERS))
    } else {
        None
    }
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
/// batch of small matrices was a large share of a solve's time; only the elements past its
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
    if let Some((pool, _)) = cache_of::<T>(bytes::<T>(n)) {
        if let Ok(mut p) = pool.lock() {
            let best = p
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= n && v.capacity() <= 2 * n)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i);
            if let Some(i) = best {
                let v = p.swap_remove(i);
                CACHED.fetch_sub(bytes::<T>(v.capacity()), Ordering::Relaxed);
                return v;
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

/// Returns a buffer to the cache, evicting the cache's oldest buffers to stay within
/// [`limit`]; to the allocator if it is small, larger than the bound, or the bound is
/// reached with nothing of this cache left to evict.
pub(crate) fn give<T: Pooled>(v: Vec<T>) {
    let size = bytes::<T>(v.capacity());
    let Some((pool, max_buffers)) = cache_of::<T>(size) else { return };
    let limit = limit();
    if size > limit {
        return;
    }
    let Ok(mut p) = pool.lock() else { return };
    while !p.is_empty() && (CACHED.load(Ordering::Relaxed) + size > limit || p.len() >= max_buffers)
    {
        let old = p.remove(0);
        CACHED.fetch_sub(bytes::<T>(old.capacity()), Ordering::Relaxed);
    }
    if CACHED.load(Ordering::Relaxed) + size <= limit {
        CACHED.fetch_add(size, Ordering::Relaxed);
        p.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::{
        cache_of, give, take, Pooled, MAX_BUFFERS, MAX_SMALL_BUFFERS, MIN_BYTES, SMALL_BYTES,
    };
    use std::sync::Mutex;

    /// A buffer of `n` given back and a request for `n - less` that got it back, emptied,
    /// with its address. The cache is shared with the tests running alongside, which may
    /// take the buffer first: a few tries.
    fn reused(n: usize, less: usize) -> (Vec<f64>, *const f64) {
        for _ in 0..100 {
            let v: Vec<f64> = take(n);
            let ptr = v.as_ptr();
            give(v);
            let w: Vec<f64> = take(n - less);
            if w.as_ptr() == ptr {
                assert!(w.is_empty() && w.capacity() >= n - less);
                return (w, ptr);
            }
        }
        panic!("a buffer of {n} given back was never reused");
    }

    /// Whether buffers of `bytes` go to `cache`, which holds at most `most`.
    fn cached_in(bytes: usize, cache: &Mutex<Vec<Vec<f64>>>, most: usize) -> bool {
        matches!(cache_of::<f64>(bytes), Some((c, m)) if std::ptr::eq(c, cache) && m == most)
    }

    #[test]
    fn large_buffers_are_reused_small_ones_are_not() {
        // a request of a similar size gets the same buffer back
        let n = MIN_BYTES / 8 + 10;
        let (w, ptr) = reused(n, 5);
        // one less than half the size does not (it would waste the buffer)
        give(w);
        let small: Vec<f64> = take(n / 2 - 1);
        assert_ne!(small.as_ptr(), ptr);
        let tiny: Vec<f64> = take(10);
        assert!(tiny.capacity() >= 10);
    }

    #[test]
    fn middle_sized_buffers_are_reused_apart_from_large_ones() {
        // a 64 x 64 f64 matrix (32 KiB): the middle-sized cache
        let n = 64 * 64;
        assert!(n * 8 >= SMALL_BYTES && n * 8 < MIN_BYTES);
        give(reused(n, 1).0);
        // each size has its cache: a large request never looks among the middle-sized
        // buffers, and below SMALL_BYTES nothing is cached
        let caches = f64::pool().unwrap();
        assert!(cached_in(MIN_BYTES, &caches.large, MAX_BUFFERS));
        assert!(cached_in(MIN_BYTES - 8, &caches.small, MAX_SMALL_BUFFERS));
        assert!(cached_in(SMALL_BYTES, &caches.small, MAX_SMALL_BUFFERS));
        assert!(cache_of::<f64>(SMALL_BYTES - 8).is_none());
    }
}
