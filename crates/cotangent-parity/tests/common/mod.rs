//! Shared by the integration tests: where the fixtures are and how to read them.

#![allow(dead_code, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fixture directory (`tests/fixtures`, one `<op>.jsonl` per op).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures")
}

/// The fixture files, sorted, as (op name, path).
pub fn fixture_files() -> Vec<(String, PathBuf)> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(fixtures_dir())
        .expect("the fixture directory exists")
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let op = p.file_stem().and_then(|s| s.to_str()).expect("a UTF-8 name").to_string();
            (op, p)
        })
        .collect();
    files.sort();
    files
}

/// The fixture lines of one file: `{"case": ..., "expected": ...}`.
pub fn read_fixtures(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("a readable fixture file");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: not JSON: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}
