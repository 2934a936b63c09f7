//! Splitting a kernel's work across rayon's threads, the calling thread included.
//!
//! `par_chunks_mut(..).for_each(..)` called from a thread outside rayon's pool (the usual
//! case: a user's `main`) hands the whole job to the pool and puts the caller to sleep
//! until a worker has finished it. A batch of 4096 4x4 solves is over in tens of
//! microseconds, and the wake-ups on both sides (a worker at the start, the caller at
//! the end), the caller's thread sitting idle while two workers share two cores, and the
//! workers' spinning afterwards were a large share of such ops' profiles (figures in
//! docs/benchmarks.md, "Measurements behind the kernels").
//!
//! [`run_tasks`] instead numbers the work `0..tasks` and lets the caller start on it at
//! once. Each of the `current_num_threads()` threads (the caller and its helpers) starts
//! on its own contiguous share of the tasks, so that a repeated call finds its share's
//! data in the same core's cache (a forward and its backward split alike), then takes
//! what is left of the others'. The work of task `t` is the same whoever runs it, so
//! results do not depend on the scheduling. Called from inside a pool (nested, or a
//! user's own `install`), it is rayon's ordinary parallel loop.
//!
//! A caller from outside rayon's pools is helped by [`helpers`], a pool of its own with
//! one thread fewer than the global one, whose threads stay awake for a while after each
//! region ([`keep_warm`]); the caller waits for them by spinning. Without this, a batch of
//! 4096 4x4 solves (a few parallel regions per fwd+bwd) paid a wake-up as long as its
//! whole work at the start of a region (the helper) and at its end (the caller sleeping
//! in rayon's scope); with it, such batches' fwd+bwd ran much faster on two threads.
//! With a helper pool but no spinning (an earlier try) the time did not change: the
//! wake-ups were the cost, not the extra thread.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::time::Instant;

use faer::Par;

/// Runs `task(t)` for every `t` in `0..tasks`, on up to `rayon::current_num_threads()`
/// threads counting the caller, each task exactly once. Returns when all are done (a
/// panic in a task is propagated, as rayon does).
#[inline]
pub(crate) fn run_tasks(tasks: usize, task: impl Fn(usize) + Sync) {
    run_tasks_dyn(tasks, &task);
}

/// [`run_tasks`] behind a trait object: the scheduling (rayon's scopes and jobs, the
/// shares, the spinning) is compiled once rather than once per kernel, and a task is
/// coarse enough (a lane group, a chunk) that the indirect call costs nothing measurable.
fn run_tasks_dyn(tasks: usize, task: &(dyn Fn(usize) + Sync)) {
    let threads = rayon::current_num_threads();
    if tasks <= 1 || threads <= 1 {
        (0..tasks).for_each(task);
        return;
    }
    if rayon::current_thread_index().is_some() {
        use rayon::prelude::*;
        (0..tasks).into_par_iter().for_each(task);
        return;
    }
    // each thread starts on its own contiguous share of the tasks (so a repeated call
    // finds its share's data in the same core's cache), then takes what is left of the
    // others'
    let parts = threads.min(tasks);
    let bounds: Vec<usize> = (0..=parts).map(|i| i * tasks / parts).collect();
    let next: Vec<AtomicUsize> = bounds[..parts].iter().map(|&b| AtomicUsize::new(b)).collect();
    let work = |me: usize| {
        for j in (0..parts).map(|j| (me + j) % parts) {
            loop {
                let t = next[j].fetch_add(1, Ordering::Relaxed);
                if t >= bounds[j + 1] {
                    break;
                }
                task(t);
            }
        }
    };
    let work = &work;
    let Some(pool) = helpers() else {
        rayon::in_place_scope(|s| {
            for i in 1..parts {
                s.spawn(move |_| work(i));
            }
            work(0);
        });
        return;
    };
    // the caller waits for helpers at work by spinning, not in rayon's scope, which puts
    // a caller from outside the pool to sleep (and waking it is slow): the scope's end
    // then finds their jobs done. A helper that has not started when the caller is done
    // takes no task (none is left); the scope waits for it.
    let (started, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (started, done) = (&started, &done);
    pool.in_place_scope(|s| {
        for i in 1..parts {
            s.spawn(move |_| {
                started.fetch_add(1, Ordering::AcqRel);
                // counted done even if a task panics (rayon's scope then re-raises it)
                let _done = Count(done);
                work(i);
            });
        }
        work(0);
        let mut spins = 0u32;
        while started.load(Ordering::Acquire) > done.load(Ordering::Acquire) {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    });
    keep_warm(pool);
}

/// Adds one to its counter when dropped.
struct Count<'a>(&'a AtomicUsize);

impl Drop for Count<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// The helper threads of [`run_tasks`] called from outside rayon's pools: a pool of
/// their own, one thread fewer than the global pool (the caller is the other), made at
/// the first such call. `None` if that is no thread, if spinning is off ([`spin_ns`] 0:
/// the global pool's workers help then, as rayon schedules them), or if the pool cannot
/// be made.
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static HELPERS: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    HELPERS
        .get_or_init(|| {
            let k = rayon::current_num_threads().saturating_sub(1);
            if k == 0 || spin_ns() == 0 {
                return None;
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(k)
                .thread_name(|i| format!("cotangent-helper-{i}"))
                .build()
                .ok()
        })
        .as_ref()
}

/// The default of [`spin_ns`], in microseconds.
const DEFAULT_SPIN_US: u64 = 200;

/// How long the helpers stay awake after a parallel region, in nanoseconds:
/// `COTANGENT_SPIN_US` (microseconds; 0 turns the helpers and their spinning off) if it
/// is set to a number, else [`DEFAULT_SPIN_US`]. Read once.
fn spin_ns() -> u64 {
    static SPIN: OnceLock<u64> = OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = std::env::var("COTANGENT_SPIN_US").ok().and_then(|v| v.trim().parse().ok());
        us.unwrap_or(DEFAULT_SPIN_US).saturating_mul(1000)
    })
}

/// Nanoseconds since the first call.
fn clock_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    u64::try_from(EPOCH.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Until when (a [`clock_ns`] time) the spinners of [`keep_warm`] stay.
static SPIN_UNTIL: AtomicU64 = AtomicU64::new(0);
/// How many spinners of [`keep_warm`] are running or spawned.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);

/// Takes one of the `k` spinner places of [`keep_warm`]; false when all are taken.
fn claim_spinner(k: usize) -> bool {
    SPINNERS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < k).then_some(n + 1)).is_ok()
}

/// Keeps the helper threads awake for [`spin_ns`] after a parallel region: each runs a
/// spinner job that looks for rayon work (`rayon::yield_now`, which runs the next
/// region's helper job as soon as it is queued) until the time is up.
///
/// Why: rayon's idle workers sleep within tens of microseconds, and on the 2-core CI host
/// waking one took about as long as a small parallel kernel's whole work (a batch of
/// 4096 4x4 solves), paid once or twice per call, and a fwd+bwd has several.
/// OpenMP's workers (and so PyTorch's) spin after a parallel region for the same reason.
/// A spinner yields its core to the OS between rounds of polls, so that it does not
/// hold a core that the caller (or anything else) needs.
fn keep_warm(pool: &'static rayon::ThreadPool) {
    SPIN_UNTIL.fetch_max(clock_ns().saturating_add(spin_ns()), Ordering::Relaxed);
    let k = pool.current_num_threads();
    while claim_spinner(k) {
        pool.spawn(move || loop {
            while clock_ns() < SPIN_UNTIL.load(Ordering::Relaxed) {
                for _ in 0..16 {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::hint::spin_loop();
                    }
                }
                // every few microseconds, the core to any other runnable thread: on a
                // loaded host the caller may share this core, and a spinner that kept it
                // for a whole time slice made a 4096x4x4 solve's fwd+bwd slower than with
                // no spinning at all (with this, as fast as without spinning)
                std::thread::yield_now();
            }
            SPINNERS.fetch_sub(1, Ordering::AcqRel);
            // a region that ended after the last check and found every spinner running
            // extended the time without spawning one: stay for it
            let stay = clock_ns() < SPIN_UNTIL.load(Ordering::Relaxed) && claim_spinner(k);
            if !stay {
                return;
            }
        });
    }
}

/// A slice cut into chunks that [`run_tasks`]' tasks take one each, mutably.
pub(crate) struct Parts<'a, T>(Vec<Mutex<&'a mut [T]>>);

impl<'a, T> Parts<'a, T> {
    /// `s` in chunks of `chunk` elements (the last may be shorter; none if `s` is empty).
    pub(crate) fn new(s: &'a mut [T], chunk: usize) -> Parts<'a, T> {
        Parts(s.chunks_mut(chunk.max(1)).map(Mutex::new).collect())
    }

    /// `s` cut at the increasing element offsets `cuts` (`cuts.len() + 1` chunks, empty
    /// ones included).
    pub(crate) fn at(s: &'a mut [T], cuts: &[usize]) -> Parts<'a, T> {
        let mut v = Vec::with_capacity(cuts.len() + 1);
        let (mut rest, mut done) = (s, 0);
        for &c in cuts {
            let (head, tail) = rest.split_at_mut(c - done);
            v.push(Mutex::new(head));
            (rest, done) = (tail, c);
        }
        v.push(Mutex::new(rest));
        Parts(v)
    }

    /// The number of chunks.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Chunk `t`, to the one task that takes it; an empty slice past the end (zipped
    /// slices may have fewer chunks, e.g. when they are empty). [`run_tasks`] runs each
    /// task once, so a chunk is never asked for twice (a second take would be empty).
    pub(crate) fn take(&self, t: usize) -> &'a mut [T] {
        match self.0.get(t) {
            None => &mut [],
            Some(m) => {
                let mut c = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let c = std::mem::take(&mut *c);
                debug_assert!(!c.is_empty(), "chunk {t} taken twice");
                c
            }
        }
    }
}

/// `f(t, chunk)` for the chunks of `out` of `chunk` elements, over [`run_tasks`].
pub(crate) fn for_each_chunk<T: Send>(
    out: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let parts = Parts::new(out, chunk);
    run_tasks(parts.len(), |t| f(t, parts.take(t)));
}

/// Runs `f` with [`Par::rayon`] if `big` (else [`Par::Seq`]), and then on a worker of
/// rayon's global pool when the caller is outside every pool: for faer's parallel
/// kernels (one large matrix's factorisation, solve or product).
///
/// Why: faer forks and joins many times in one call (once per panel or column block).
/// Each `join` from a thread outside the pool hands its work to the pool and puts the
/// caller to sleep until a worker has done it, and each paid for waking a sleeping
/// worker and then the caller; on a worker, a join is a push on its own deque that the
/// other worker, spinning between joins, takes at once. On the 2-core host this lowered
/// the fwd+bwd medians of `inv`, `slogdet`, `eigh` and `svdvals` at n = 256 and 1024
/// (docs/benchmarks.md); the minimums barely moved (runs in which the workers happened
/// to be awake).
pub(crate) fn with_par<R: Send>(big: bool, f: impl FnOnce(Par) -> R + Send) -> R {
    if !big {
        return f(Par::Seq);
    }
    if rayon::current_thread_index().is_some() || rayon::current_num_threads() <= 1 {
        return f(Par::rayon(0));
    }
    // `scope` called from outside the pool runs its body on one of its workers; the body
    // goes through a trait object so that rayon's scope is compiled once, not per caller
    let mut f = Some(f);
    let mut out = None;
    on_worker(&mut || {
        if let Some(f) = f.take() {
            out = Some(f(Par::rayon(0)));
        }
    });
    match out {
        Some(r) => r,
        // on_worker runs its body exactly once (a panic in it is propagated)
        None => unreachable!("with_par: the body did not run"),
    }
}

/// Runs `body` once on a worker of rayon's global pool (the caller is outside it).
fn on_worker(body: &mut (dyn FnMut() + Send)) {
    rayon::scope(|_| body());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task runs once, whatever the pool (outside it, inside it, one thread).
    #[test]
    fn every_chunk_is_written_once_in_and_out_of_the_pool() {
        let check = || {
            let mut v = vec![0usize; 1000];
            for_each_chunk(&mut v, 7, |t, c| {
                for (j, x) in c.iter_mut().enumerate() {
                    *x += t * 7 + j + 1;
                }
            });
            assert!(v.iter().enumerate().all(|(i, &x)| x == i + 1));
        };
        check();
        for k in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(k).build().unwrap();
            pool.install(check);
        }
        let mut e: Vec<u8> = vec![];
        for_each_chunk(&mut e, 4, |_, _| unreachable!());
    }

    /// `with_par` runs a parallel `f` on a worker of the global pool when called from
    /// outside it (and in place from inside a pool), with the `Par` asked for, and
    /// raises a panic of `f`.
    #[test]
    fn with_par_runs_big_work_on_a_worker() {
        let seen = with_par(false, |p| (p, rayon::current_thread_index()));
        assert_eq!(seen, (Par::Seq, None));
        let (p, at) = with_par(true, |p| (p, rayon::current_thread_index()));
        assert_eq!(p, Par::rayon(0));
        assert_eq!(at.is_some(), rayon::current_num_threads() > 1);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let inside = pool.install(|| with_par(true, |p| (p, rayon::current_thread_index())));
        assert_eq!(inside.0, Par::rayon(3));
        assert!(inside.1.is_some());
        let r = std::panic::catch_unwind(|| with_par(true, |_| panic!("inside")));
        assert!(r.is_err());
    }

    /// A task that panics, on the caller's share or on a helper's, is raised to the
    /// caller (the caller's wait for its helpers does not hang on it).
    #[test]
    fn a_panicking_task_is_raised_not_hung() {
        for bad in [0, 50, 99] {
            let r = std::panic::catch_unwind(|| run_tasks(100, |t| assert_ne!(t, bad)));
            assert!(r.is_err(), "the panic of task {bad} was lost");
        }
    }

    #[test]
    fn parts_of_zipped_slices_line_up() {
        let mut a = vec![0u32; 10];
        let mut b = vec![0u32; 5];
        let (pa, pb) = (Parts::new(&mut a, 2), Parts::new(&mut b, 1));
        run_tasks(pa.len(), |t| {
            let (x, y) = (pa.take(t), pb.take(t));
            x.fill(t as u32);
            y.fill(t as u32);
        });
        assert_eq!(a, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
        assert_eq!(b, [0, 1, 2, 3, 4]);
    }
}
