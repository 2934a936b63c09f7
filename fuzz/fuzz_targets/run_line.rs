//! Feeds arbitrary bytes to the runner's stream reader, line parser and dispatcher: every
//! non-blank line must get exactly one answer, each a JSON object with an `id` and either
//! outputs or an error of a protocol kind, and nothing may panic (libFuzzer aborts on a
//! panic, including one caught by the runner's safety net) or run away (`-timeout`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = cotangent_parity::fuzz::check_stream(data) {
        panic!("{e}");
    }
});
