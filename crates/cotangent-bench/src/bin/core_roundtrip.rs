//! Prints the round trip of a cache line between two threads, in nanoseconds (the median
//! of 5 rounds of 100,000 exchanges), a probe of how far apart the host has put this
//! machine's cores.
//!
//! On the 2-vCPU AMD EPYC hosts of the benchmarks the round trip is about 40-180 ns at
//! some times and 350-620 ns at others, for seconds to minutes at a time (the virtual
//! CPUs sit on one core complex, or on two). A parallel kernel whose threads hand data to
//! each other slows down in the second case: a 4096 x 4 x 4 solve's fwd+bwd on 2 threads
//! took 70-78 us with a short round trip and 115-130 us with a long one (its one-thread
//! time, about 126 us, the same in both), while PyTorch's did not move. A thread that
//! shares its CPU with the other for a while shows as a long round trip too (the median
//! of the rounds keeps one such round out).
//! `scripts/bench_paired.sh` records the probe with each run so that a table can say
//! which runs had far cores.
//!
//!     cargo run --release -p cotangent-bench --bin core_roundtrip

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Exchanges per round.
const EXCHANGES: u64 = 100_000;

/// One round: the main thread and a second one take turns incrementing a shared counter;
/// the mean time of one exchange (there and back), in nanoseconds.
fn round() -> f64 {
    let flag = Arc::new(AtomicU64::new(0));
    let other = Arc::clone(&flag);
    let echo = std::thread::spawn(move || {
        for i in 0..EXCHANGES {
            while other.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.store(2 * i + 2, Ordering::Release);
        }
    });
    // wait for the second thread to be running before timing
    flag.store(1, Ordering::Release);
    while flag.load(Ordering::Acquire) != 2 {
        std::hint::spin_loop();
    }
    let t = Instant::now();
    for i in 1..EXCHANGES {
        flag.store(2 * i + 1, Ordering::Release);
        while flag.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = t.elapsed().as_secs_f64() * 1e9 / (EXCHANGES - 1) as f64;
    // (the echo thread only loads and stores: it cannot panic)
    let _ = echo.join();
    ns
}

fn main() -> std::process::ExitCode {
    use std::io::Write;
    let mut rounds: Vec<f64> = (0..5).map(|_| round()).collect();
    rounds.sort_by(f64::total_cmp);
    match writeln!(std::io::stdout(), "{:.0}", rounds[2]) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}
