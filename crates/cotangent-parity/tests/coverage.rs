//! The meta-test: every public op of the library is in the runner and has fixtures.
//!
//! It scans the library's op sources for public methods (`pub fn name`, and the rows of
//! the `unary_ops!`, `binary_ops!` and `comparisons!` tables, which generate methods) and
//! checks them against [`LIBRARY_METHODS`], the runner's list of the library's methods
//! and the PyTorch op that exercises each; then it checks that every such op is in the
//! runner's dispatch table and that every op of the table has fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use cotangent_parity::{op_names, Coverage, LIBRARY_METHODS, OPS};

/// The library's op sources: every file of `src/ops` and `src/linalg`, and the views.
/// When a new module of differentiable ops lands, add it here with its runner entries.
fn scanned_files() -> Vec<PathBuf> {
    let src = common::workspace_root().join("crates").join("cotangent").join("src");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["ops", "linalg"] {
        files.extend(
            std::fs::read_dir(src.join(dir))
                .unwrap_or_else(|e| panic!("crates/cotangent/src/{dir}: {e}"))
                .map(|e| e.expect("a directory entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs")),
        );
    }
    files.push(src.join("tensor").join("view.rs"));
    files.sort();
    files
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn is_type_name(s: &str) -> bool {
    is_ident(s) && s.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The public method names defined in one source file.
fn public_methods(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") {
            continue;
        }
        // `pub fn name(` / `pub fn name<` (not `pub(crate) fn`, not macro templates `$f`)
        if let Some(rest) = line.strip_prefix("pub fn ") {
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if is_ident(&name) {
                out.push(name);
            }
            continue;
        }
        // table rows of the method-generating macros:
        //   unary_ops!/binary_ops!:  `name, Struct, "torch", ...`
        //   comparisons!:            `name, name_scalar, CmpOp, "doc";`
        let tokens: Vec<&str> = line.split(',').map(str::trim).collect();
        if tokens.len() >= 3 && is_ident(tokens[0]) && !is_type_name(tokens[0]) {
            if is_type_name(tokens[1]) && tokens[2].starts_with('"') {
                out.push(tokens[0].to_string());
            } else if tokens.len() >= 4
                && is_ident(tokens[1])
                && !is_type_name(tokens[1])
                && is_type_name(tokens[2])
                && tokens[3].starts_with('"')
            {
                out.push(tokens[0].to_string());
                out.push(tokens[1].to_string());
            }
        }
    }
    out
}

fn library_methods() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for f in scanned_files() {
        let text = std::fs::read_to_string(&f).expect("a readable source file");
        all.extend(public_methods(&text));
    }
    all
}

#[test]
fn the_scanner_sees_the_library() {
    let found = library_methods();
    // one of each kind: `pub fn`, unary_ops!, binary_ops!, comparisons!, views, linalg
    for name in [
        "clamp",
        "neg",
        "sigmoid",
        "add",
        "atan2",
        "eq",
        "ge_scalar",
        "reshape",
        "sum_to",
        "matmul",
        "multi_dot",
        "matrix_power",
    ] {
        assert!(found.contains(name), "the scanner missed `{name}`: {found:?}");
    }
    assert!(!found.iter().any(|n| n.starts_with('$')));
}

#[test]
fn every_library_method_is_mapped() {
    let found = library_methods();
    let mapped: BTreeSet<String> = LIBRARY_METHODS.iter().map(|(m, _)| (*m).to_string()).collect();
    let missing: Vec<&String> = found.difference(&mapped).collect();
    assert!(
        missing.is_empty(),
        "public methods of the library with no entry in LIBRARY_METHODS \
         (crates/cotangent-parity/src/methods.rs): {missing:?}; add each with its PyTorch op, \
         a runner entry (src/dispatch.rs) and fixtures (scripts/torch_fixtures.py)"
    );
    let stale: Vec<&String> = mapped.difference(&found).collect();
    assert!(stale.is_empty(), "LIBRARY_METHODS names methods the library no longer has: {stale:?}");
    assert_eq!(mapped.len(), LIBRARY_METHODS.len(), "LIBRARY_METHODS has duplicates");
}

#[test]
fn every_mapped_op_is_in_the_runner() {
    let names = op_names();
    for (method, cov) in LIBRARY_METHODS {
        match cov {
            Coverage::Op(op) => assert!(
                names.contains(op),
                "`{method}` maps to `{op}`, which the runner does not have"
            ),
            Coverage::NotAnOp(why) => assert!(!why.is_empty()),
        }
    }
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "the dispatch table has duplicate op names");
    for spec in OPS {
        let attrs: BTreeSet<&str> = spec.attrs.iter().copied().collect();
        assert_eq!(attrs.len(), spec.attrs.len(), "`{}` lists an attribute twice", spec.name);
    }
}

#[test]
fn every_runner_op_has_fixtures() {
    let files = common::fixture_files();
    let with_fixtures: BTreeSet<&str> = files.iter().map(|(op, _)| op.as_str()).collect();
    let names = op_names();
    for op in &names {
        assert!(
            with_fixtures.contains(op),
            "the runner op `{op}` has no fixtures (tests/fixtures/{op}.jsonl); add its cases to \
             scripts/torch_fixtures.py and regenerate"
        );
    }
    for (op, path) in &files {
        assert!(
            names.contains(&op.as_str()),
            "fixtures for `{op}`, which the runner does not have"
        );
        let fixtures = common::read_fixtures(path);
        let computed = fixtures.iter().filter(|f| f["expected"].get("outputs").is_some()).count();
        assert!(computed > 0, "`{op}` has no fixture with results (only error cases)");
        for f in &fixtures {
            assert_eq!(f["case"]["op"].as_str(), Some(op.as_str()), "{}: wrong op", path.display());
        }
    }
}

#[test]
fn every_library_method_reaches_a_fixture() {
    // the methods' ops, through the table: every one must have fixtures (checked above),
    // and every op of the core list of the foundation must be covered
    let core = [
        "neg",
        "abs",
        "sign",
        "exp",
        "expm1",
        "log",
        "log1p",
        "sqrt",
        "rsqrt",
        "square",
        "reciprocal",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sigmoid",
        "relu",
        "nn.functional.softplus",
        "pow",
        "add",
        "sub",
        "mul",
        "div",
        "maximum",
        "minimum",
        "atan2",
        "where",
        "clamp",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "sum",
        "mean",
        "prod",
        "amax",
        "amin",
        "logsumexp",
        "var",
        "std",
        "norm",
        "cat",
        "stack",
        "split",
        "chunk",
        "flip",
        "index_select",
        "gather",
        "scatter_add",
        "nn.functional.pad",
        "repeat",
        "reshape",
        "permute",
        "transpose",
        "narrow",
        "select",
        "expand",
        "squeeze",
        "unsqueeze",
        "flatten",
        "diagonal",
        "to",
    ];
    let covered: BTreeSet<&str> = LIBRARY_METHODS
        .iter()
        .filter_map(|(_, c)| match c {
            Coverage::Op(op) => Some(*op),
            Coverage::NotAnOp(_) => None,
        })
        .collect();
    for op in core {
        assert!(covered.contains(op), "core op `{op}` is not mapped from any library method");
    }
}
