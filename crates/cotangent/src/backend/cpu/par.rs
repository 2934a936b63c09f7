//! Splitting a kernel's work across rayon's threads, the calling thread included.
//!
//! `par_chunks_mut(..).for_each(..)` called from a thread outside rayon's pool (the usual
//! case: a user's `main`) hands the whole job to the pool and puts the caller to sleep
//! until a worker has finished it. A batch of 4096 4x4 solves is over in tens of
//! microseconds, and the wake-ups on both sides (a worker at the start, the caller at
//! the end), the caller's thread sitting idle while two workers share two cores, and the
//! workers' spinning afterwards showed as 15-30% of the samples of such ops.
//!
//! [`run_tasks`] instead numbers the work `0..tasks` and lets the caller start on it at
//! once, with `current_num_threads() - 1` workers recruited to take tasks from the same
//! counter (so the caller plus the workers are as many threads as the pool has). The
//! work of task `t` is the same whoever runs it, so results do not depend on the
//! scheduling. Called from inside the pool (nested, or a user's own `install`), it is
//! rayon's ordinary parallel loop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `task(t)` for every `t` in `0..tasks`, on up to `rayon::current_num_threads()`
/// threads counting the caller, each task exactly once. Returns when all are done (a
/// panic in a task is propagated, as rayon does).
pub(crate) fn run_tasks(tasks: usize, task: impl Fn(usize) + Sync) {
    let threads = rayon::current_num_threads();
    if tasks <= 1 || threads <= 1 {
        (0..tasks).for_each(task);
        return;
    }
    if rayon::current_thread_index().is_some() {
        use rayon::prelude::*;
        (0..tasks).into_par_iter().for_each(&task);
        return;
    }
    let next = AtomicUsize::new(0);
    let work = || loop {
        let t = next.fetch_add(1, Ordering::Relaxed);
        if t >= tasks {
            break;
        }
        task(t);
    };
    rayon::in_place_scope(|s| {
        for _ in 1..threads.min(tasks) {
            s.spawn(|_| work());
        }
        work();
    });
}

/// A slice cut into chunks that [`run_tasks`]' tasks take one each, mutably.
pub(crate) struct Parts<'a, T>(Vec<Mutex<&'a mut [T]>>);

impl<'a, T> Parts<'a, T> {
    /// `s` in chunks of `chunk` elements (the last may be shorter; none if `s` is empty).
    pub(crate) fn new(s: &'a mut [T], chunk: usize) -> Parts<'a, T> {
        Parts(s.chunks_mut(chunk.max(1)).map(Mutex::new).collect())
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
