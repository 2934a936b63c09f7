//! The binary end to end: malformed input is answered line by line with exit status 0, and
//! the same cases give byte-identical output whatever the thread count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Runs the binary on `input` with `args`; returns (exit status ok, stdout).
fn run_binary(args: &[&str], input: Vec<u8>) -> (bool, Vec<u8>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cotangent-parity"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the runner starts");
    let mut stdin = child.stdin.take().expect("a stdin pipe");
    let writer = std::thread::spawn(move || {
        // the runner answers as it reads: write from another thread so neither blocks
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("the runner finishes");
    writer.join().expect("the writer thread");
    (out.status.success(), out.stdout)
}

/// The answered lines of a run, parsed.
fn answers(stdout: &[u8]) -> Vec<Value> {
    std::str::from_utf8(stdout)
        .expect("the output is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn malformed_lines_are_each_answered() {
    let file = common::fixtures_dir().join("..").join("malformed.jsonl");
    let mut input = std::fs::read(&file).expect("tests/malformed.jsonl");
    if !input.ends_with(b"\n") {
        input.push(b'\n');
    }
    let listed =
        input.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count();
    // lines a text file cannot hold well: invalid UTF-8, NUL bytes, deep nesting, and a
    // line over the runner's length limit
    let mut extra: Vec<Vec<u8>> = vec![
        vec![0xff, 0xfe, b'{', b'}'],
        b"{\"id\": \"nul\0\", \"op\": \"neg\"}".to_vec(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        format!("{{\"id\": {}}}", "{\"a\":".repeat(5000)).into_bytes(),
    ];
    let mut huge = b"{\"id\": \"huge\", \"op\": \"neg\", \"inputs\": [{\"dtype\": \"f64\", \"shape\": [1], \"data\": [".to_vec();
    huge.resize(cotangent_parity::limits::MAX_LINE_BYTES + 1000, b'0');
    extra.push(huge);
    for e in &extra {
        input.extend_from_slice(e);
        input.push(b'\n');
    }
    // a last good case, to see the run goes on after all of that
    input.extend_from_slice(
        br#"{"id": "last", "op": "neg", "inputs": [{"dtype": "f64", "shape": [], "data": [2]}]}"#,
    );

    let (ok, stdout) = run_binary(&[], input);
    assert!(ok, "the exit status is 0");
    let got = answers(&stdout);
    assert_eq!(got.len(), listed + extra.len() + 1, "one answer per non-blank line");
    for (i, a) in got[..got.len() - 1].iter().enumerate() {
        let kind = a["error"]["kind"].as_str();
        assert!(
            kind.is_some_and(|k| cotangent_parity::Kind::from_name(k).is_some()),
            "line {}: not an error of a protocol kind: {a}",
            i + 1
        );
        assert!(a["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let last = &got[got.len() - 1];
    assert_eq!(last["id"], "last");
    assert_eq!(last["outputs"][0]["data"][0].to_string(), "-2.0");
}

#[test]
fn output_is_identical_for_every_thread_count() {
    let mut input = Vec::new();
    for (_, path) in common::fixture_files() {
        for f in common::read_fixtures(&path) {
            input.extend_from_slice(f["case"].to_string().as_bytes());
            input.push(b'\n');
        }
    }
    let (ok1, one) = run_binary(&["--threads", "1"], input.clone());
    let (ok4, four) = run_binary(&["--threads", "4"], input.clone());
    let (ok0, again) = run_binary(&[], input);
    assert!(ok1 && ok4 && ok0);
    assert!(!one.is_empty());
    assert!(one == four, "--threads 1 and --threads 4 differ");
    assert!(one == again, "two runs differ");
}

#[test]
fn bad_arguments_are_refused() {
    let (ok, _) = run_binary(&["--threads", "zero"], Vec::new());
    assert!(!ok);
    let (ok, out) = run_binary(&["--threads=2"], b"\n\n".to_vec());
    assert!(ok && out.is_empty(), "blank lines are skipped");
}
