//! Prints the protocol lines that the structure-aware fuzz target
//! (`fuzz/fuzz_targets/adversarial.rs`) makes of each file given (a corpus input or a
//! finding's artifact), one per line: what to look at, or to pipe into the runner, when
//! the fuzzer reports a finding.
//!
//! ```sh
//! cargo run --release -p cotangent-parity --example fuzz_show -- fuzz/artifacts/adversarial/*
//! ```

use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = std::io::stdout().lock();
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path)?;
        // the first case before it runs (running it is how a hang shows)
        eprintln!("{path}: {}", cotangent_parity::fuzz::adversarial_first_line(&data));
        match cotangent_parity::fuzz::adversarial_lines(&data) {
            Ok(lines) => {
                for line in lines {
                    writeln!(out, "{line}")?;
                }
            }
            Err(e) => writeln!(out, "{path}: the first case fails the oracle: {e}")?,
        }
    }
    Ok(())
}
