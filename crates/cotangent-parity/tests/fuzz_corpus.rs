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

#[test]
fn the_oracle_flags_internal_errors_not_echoed_text() {
    use cotangent_parity::fuzz::check_answer;
    // the library's internal error and a caught panic, as the runner answers them
    let internal = r#"{"id":"a","error":{"kind":"Unsupported","message":"linalg.svd: internal error: arity"}}"#;
    let panic = r#"{"id":"a","error":{"kind":"Unsupported","message":"sin: internal error: the library panicked (x); please report it"}}"#;
    assert!(check_answer(internal).is_err());
    assert!(check_answer(panic).is_err());
    // a bad line whose echoed key says "internal error" (a finding of the run_line
    // target: the fuzzer spliced its dictionary's words into a key) is no internal error
    let echoed = r#"{"id":"a","error":{"kind":"BadCase","message":"unknown key `cotinternal errorangents` (a case has id, op, inputs)"}}"#;
    assert!(check_answer(echoed).is_ok());
    // an echoed op with backquotes of its own (the second such finding)
    let quoted = r#"{"id":"a","error":{"kind":"BadCase","message":"unknown op `nn.funct`ionainternal errorl.pad` (the runner's ops: neg)"}}"#;
    assert!(check_answer(quoted).is_ok());
    let other = r#"{"id":"a","error":{"kind":"InvalidArgument","message":"pad: bad `mode` `x`internal error`"}}"#;
    assert!(check_answer(other).is_ok());
}
