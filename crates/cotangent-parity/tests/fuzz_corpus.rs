//! Replays the committed fuzz corpora on stable Rust (issue 49): every input of
//! `fuzz/corpus/run_line` through the runner's stream reader, and every input of
//! `fuzz/corpus/adversarial` through the structure-aware generator, each checked by the
//! fuzz targets' own oracle (`cotangent_parity::fuzz`). A crash, a hang or an internal
//! error the fuzzers found is committed here as a corpus input, so it stays fixed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;

fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.display().to_string(), std::fs::read(&p).unwrap())).collect()
}

#[test]
fn run_line_corpus_replays_clean() {
    let inputs = corpus("run_line");
    assert!(inputs.len() > 100, "{} inputs", inputs.len());
    let failures: Vec<String> = inputs
        .iter()
        .filter_map(|(name, data)| {
            cotangent_parity::fuzz::check_stream(data).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn adversarial_corpus_replays_clean() {
    let inputs = corpus("adversarial");
    assert!(!inputs.is_empty());
    let failures: Vec<String> = inputs
        .iter()
        .filter_map(|(name, data)| {
            cotangent_parity::fuzz::adversarial(data).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
