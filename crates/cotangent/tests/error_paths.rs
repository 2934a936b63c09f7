//! Every error path of the public API is exercised (issue 49, item 5).
//!
//! A census reads the library's source and lists each construction of an [`Error`]
//! variant that carries an `op`: by `(variant, op)` where the op is a literal (or a
//! `const` of the file), and by `(variant, path.rs::fn)` where it comes from a parameter.
//! Each entry must be covered by a row — a call of a public function with bad input that
//! returns that variant with a message naming the op, never a panic and never an
//! internal error — or be listed in [`UNREACHABLE`] with the reason no public call can
//! reach it. So a new error path without a test fails here, and so does a row or an
//! `UNREACHABLE` entry whose path has left the source.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "error_paths/census.rs"]
mod census;
#[path = "error_paths/rows.rs"]
mod rows;

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use census::{Census, Key};
use cotangent::Error;
use rows::Row;

/// Error paths no public call reaches: `(variant, op or site, why)`. Each reason was
/// checked against the code; an entry a row reaches after all fails the census test.
const UNREACHABLE: &[(&str, &str, &str)] = &[
    (
        "Unsupported",
        "tensor/mod.rs::host_parts",
        "the CPU, the only device, keeps every buffer in host memory",
    ),
    (
        "DTypeMismatch",
        "cat",
        "Tensor::cat, the kernel's only caller, casts every part to the promoted dtype first",
    ),
    (
        "DTypeMismatch",
        "compare",
        "Tensor::compare, the only caller of the kernel, promotes both operands to one dtype",
    ),
    (
        "DTypeMismatch",
        "gather",
        "Tensor::gather, the kernel's only caller, rejects a non-I64 index first (check_index)",
    ),
    (
        "DTypeMismatch",
        "backend/cpu/mod.rs::binary",
        "ops/binary.rs compute(), the only caller, runs after prepare() promoted both operands",
    ),
    (
        "UnsupportedDType",
        "backend/cpu/mod.rs::real!",
        "each kernel's first operand passed check_float(_or_complex), halves cast to F32; \
         complex ones take the complex! arm or are kept out by Storage's is_complex guards",
    ),
    (
        "UnsupportedDType",
        "backend/cpu/fast.rs::ints",
        "the pivots of the fast paths come from a factor kernel (I64) or passed \
         check_factored's I64 check",
    ),
    (
        "UnsupportedDType",
        "linalg.det",
        "backend/cpu/fast.rs cofactor's `only` is DetOp's `loose` mask, a Bool buffer of the \
         LU kernel",
    ),
    (
        "UnsupportedDType",
        "linalg.eigh",
        "backend/cpu/fast.rs eigh_inner reads x = Vᴴ gV, a matmul of eigh's F32/F64 \
         eigenvectors (complex is routed away by Storage::eigh_inner)",
    ),
    (
        "UnsupportedDType",
        "linalg/lu.rs::check_info",
        "every info tensor it checks comes from a factor kernel, always I64",
    ),
    (
        "DTypeMismatch",
        "backend/cpu/mod.rs::typed",
        "a kernel's other operands have its first's dtype: the ops check or promote their \
         inputs, and autograd casts a cotangent to its output's dtype (cotangent_for)",
    ),
    (
        "DTypeMismatch",
        "backend/cpu/mod.rs::real!",
        "as typed: the operands of a real kernel share one dtype before they reach it",
    ),
    (
        "NotDifferentiable",
        "autograd/forward.rs::no_rule",
        "the default Op::jvp; every op of the library has its own jvp (only the test op \
         of src/autograd/tests.rs lacks one)",
    ),
];

fn src_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
}

/// Whether the interop and file-format features are all on: their error paths are in the
/// census only then (their code, and the rows that reach it, are compiled only then).
const ALL_FEATURES: bool = cfg!(all(
    feature = "ndarray",
    feature = "nalgebra",
    feature = "faer",
    feature = "npy",
    feature = "safetensors"
));

/// The site outside `io/` and `interop/` that only the interop code compiles.
fn gated_site(key: &Key) -> bool {
    matches!(key, Key::Site(s) if s == "tensor/mod.rs::host_parts")
}

/// Whether a census entry at `locs` belongs to code behind an interop or file-format
/// feature (left out of the census when those are off).
fn feature_gated(key: &Key, locs: &BTreeSet<String>) -> bool {
    gated_site(key) || locs.iter().all(|l| l.starts_with("io/") || l.starts_with("interop/"))
}

/// The census key a string names: a site if it has `.rs::`, else an op.
fn key_of(s: &str) -> Key {
    if s.contains(".rs::") {
        Key::Site(s.to_string())
    } else {
        Key::Op(s.to_string())
    }
}

/// The census key a row covers.
fn row_key(r: &Row) -> (String, Key) {
    (r.variant.to_string(), r.site.map_or_else(|| Key::Op(r.op.to_string()), key_of))
}

/// Why a row fails, or `None` if it returns its error.
fn check_row(r: &Row) -> Option<String> {
    let e = match catch_unwind(AssertUnwindSafe(r.call)) {
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_default();
            return Some(format!("panicked: {msg}"));
        }
        Ok(Ok(())) => return Some("returned Ok".to_string()),
        Ok(Err(e)) => e,
    };
    let debug = format!("{e:?}");
    let msg = e.to_string();
    if matches!(e, Error::Internal { .. }) {
        return Some(format!("an internal error: {msg}"));
    }
    let rest = debug.strip_prefix(r.variant).unwrap_or("?");
    if !rest.starts_with([' ', '{', '(']) {
        return Some(format!("expected {}, got {debug}", r.variant));
    }
    if !msg.starts_with(&format!("{}: ", r.op)) {
        return Some(format!("the message does not start with `{}: `: {msg:?}", r.op));
    }
    None
}

/// Every row's call fails with its variant, and its message names its op.
#[test]
fn every_row_returns_its_error() {
    let rows = rows::rows();
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            check_row(r).map(|why| {
                let site = r.site.map_or(String::new(), |s| format!(" @ {s}"));
                format!("{} {:?}{site}: {why}", r.variant, r.op)
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows fail:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// Every error path in the source has a row or an `UNREACHABLE` entry, and neither
/// names a path the source no longer has.
#[test]
fn every_error_path_is_covered() {
    let mut census: Census = census::census(src_dir());
    if !ALL_FEATURES {
        census.retain(|(_, key), locs| !feature_gated(key, locs));
    }
    // the scanner still finds what it must (a broken scanner would find nothing to cover)
    for (v, op) in [("DataLength", "from_vec"), ("InvalidArgument", "optim.SGD")] {
        assert!(census.contains_key(&(v.to_string(), key_of(op))), "census lost ({v}, {op})");
    }
    assert!(census.len() > 150, "only {} census entries", census.len());
    let rows = rows::rows();
    let covered: BTreeSet<(String, Key)> = rows.iter().map(row_key).collect();
    let unreachable: BTreeSet<(String, Key)> = UNREACHABLE
        .iter()
        .map(|(v, k, _)| ((*v).to_string(), key_of(k)))
        .filter(|(_, k)| ALL_FEATURES || !gated_site(k))
        .collect();
    let mut problems = Vec::new();
    for (k, locs) in &census {
        if !covered.contains(k) && !unreachable.contains(k) {
            let at: Vec<&str> = locs.iter().map(String::as_str).collect();
            problems.push(format!("no row for {} {} ({})", k.0, k.1, at.join(", ")));
        }
    }
    for k in &covered {
        if !census.contains_key(k) {
            problems.push(format!("a row names {} {}, which the source no longer has", k.0, k.1));
        }
    }
    for k in &unreachable {
        if !census.contains_key(k) {
            problems
                .push(format!("UNREACHABLE names {} {}, which the source no longer has", k.0, k.1));
        }
        if covered.contains(k) {
            problems.push(format!("UNREACHABLE names {} {}, which a row reaches", k.0, k.1));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The scanner reads constructions, not patterns, comments, strings or test modules, and
/// resolves an op's `const` in the scope that sees it.
#[test]
fn census_scanner() {
    let src = r#"
const OP: &str = "outer";
fn a(op: &'static str) -> Error {
    // Error::ShapeMismatch { op: "in a comment" }
    let s = "Error::BadShape { op: \"in a string\" }";
    match e {
        Error::Singular { batch, .. } => Error::Singular { op: OP, batch, index: 0 },
        Error::BadShape { op, expected, got } => e,
    }
    Error::InvalidArgument { op, arg: "x", reason: "y" }
}
fn b() {
    const OP: &str = "inner";
    let f = |batch| Error::NoConvergence { op: OP, batch };
    Err(Error::DataLength { op: "lit", expected: 1, got: 2 })?;
    Err(Error::Internal { op: "skipped", reason: "r" })?;
    Err(Error::NoGradFn { index: 0 })
}
fn c() -> Error {
    Error::UnsupportedDType { op: K::NAME, dtype }
}
#[cfg(test)]
mod tests {
    fn t() { Error::DataLength { op: "test only", expected: 1, got: 2 }; }
}
"#;
    let mut c = Census::new();
    census::scan_file("x.rs", src, &mut c);
    let got: Vec<String> = c.keys().map(|(v, k)| format!("{v} {k}")).collect();
    assert_eq!(
        got,
        [
            "DataLength op \"lit\"",
            "InvalidArgument site x.rs::a",
            "NoConvergence op \"inner\"",
            "Singular op \"outer\"",
            "UnsupportedDType site x.rs::c",
        ]
    );
}
