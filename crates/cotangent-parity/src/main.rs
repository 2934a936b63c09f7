//! `cotangent-parity < cases.jsonl > results.jsonl`: the parity protocol's op runner (see
//! `docs/parity.md`).

use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "usage: cotangent-parity [--threads N] < cases.jsonl > results.jsonl\n\
    Reads parity cases as JSON Lines on stdin and answers one JSON line per case on stdout.\n";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let threads = match arg.as_str() {
            "--threads" => args.next(),
            "-h" | "--help" => {
                let _ = std::io::stderr().write_all(USAGE.as_bytes());
                return ExitCode::SUCCESS;
            }
            a => a.strip_prefix("--threads=").map(str::to_string),
        };
        match threads.as_deref().map(str::parse::<usize>) {
            Some(Ok(n)) if n > 0 => {
                // the library's worker threads come from rayon's global pool, sized by
                // this variable when it starts (results do not depend on it)
                std::env::set_var("RAYON_NUM_THREADS", n.to_string());
            }
            _ => {
                let _ = writeln!(std::io::stderr(), "cotangent-parity: bad argument `{arg}`");
                let _ = std::io::stderr().write_all(USAGE.as_bytes());
                return ExitCode::from(2);
            }
        }
    }
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    match cotangent_parity::run(stdin, stdout) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cotangent-parity: {e}");
            ExitCode::FAILURE
        }
    }
}
