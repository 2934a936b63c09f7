//! # cotangent-parity
//!
//! The op runner of the parity protocol (`/work/shared/parity-protocol.md`, summarised in
//! `docs/parity.md`): it reads cases as JSON Lines, evaluates each op of the library by its
//! PyTorch name with PyTorch's defaults for absent attributes, computes input gradients
//! from the given cotangents through [`cotangent::autograd::grad`] and, for a case with
//! `tangents`, the outputs' directional derivatives (`jvps`) in forward mode (dual inputs
//! at a [`cotangent::autograd::forward`] level, as `torch.func.jvp`), and answers one
//! JSON line per case.
//!
//! - [`run_line`] answers one line (the whole protocol for one case, in process);
//! - [`run`] answers a stream, line by line, flushing each answer;
//! - [`OPS`] is the dispatch table, one entry per PyTorch op name;
//! - [`LIBRARY_METHODS`] maps every public differentiable method of the library to the op
//!   that exercises it (checked against the library's sources by the crate's tests).
//!
//! The runner never panics on any input: bad lines are answered with a `BadCase` error,
//! sizes are capped ([`limits`]) so that no case can exhaust memory or run for long, and a
//! panic inside the library (a bug) is caught and reported as an error of that case.

mod case;
mod dispatch;
pub mod fuzz;
mod json;
mod methods;
mod solvers;

use std::io::{BufRead, Write};

pub use dispatch::{op_names, OpSpec, OPS};
pub use methods::{Coverage, LIBRARY_METHODS};

/// The size limits of the runner. A case beyond them is answered with `BadCase` (the
/// message says which limit), never attempted.
pub mod limits {
    /// Longest line read, in bytes; the rest of a longer line is skipped.
    pub const MAX_LINE_BYTES: usize = 16 << 20;
    /// Largest tensor, in elements, counting every dim as at least 1 (so `[0, 10^9]` is
    /// refused too): inputs, cotangents and the outputs an op would create.
    pub const MAX_ELEMENTS: usize = 1 << 22;
    /// Most dims of a tensor, and longest list attribute (`dims`, `shape`, `pad`, ...).
    pub const MAX_RANK: usize = 64;
    /// Most outputs of one case (`split`, `chunk`, `unbind`).
    pub const MAX_OUTPUTS: usize = 1 << 14;
}

/// The error kinds of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Shapes that do not agree, or a shape the op cannot take.
    ShapeMismatch,
    /// A matrix that must be square is not.
    NotSquare,
    /// A singular matrix where an invertible one is needed.
    Singular,
    /// A matrix that must be positive-definite is not.
    NotPositiveDefinite,
    /// Dtypes that must agree do not.
    DtypeMismatch,
    /// An argument with a value the op does not accept.
    InvalidArgument,
    /// An iterative algorithm did not converge.
    NoConvergence,
    /// Something the library (or the runner) does not implement.
    Unsupported,
    /// A line that cannot be read as a case.
    BadCase,
}

impl Kind {
    /// Every kind, in the protocol's order.
    pub const ALL: [Kind; 9] = [
        Kind::ShapeMismatch,
        Kind::NotSquare,
        Kind::Singular,
        Kind::NotPositiveDefinite,
        Kind::DtypeMismatch,
        Kind::InvalidArgument,
        Kind::NoConvergence,
        Kind::Unsupported,
        Kind::BadCase,
    ];

    /// The protocol's name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ShapeMismatch => "ShapeMismatch",
            Kind::NotSquare => "NotSquare",
            Kind::Singular => "Singular",
            Kind::NotPositiveDefinite => "NotPositiveDefinite",
            Kind::DtypeMismatch => "DtypeMismatch",
            Kind::InvalidArgument => "InvalidArgument",
            Kind::NoConvergence => "NoConvergence",
            Kind::Unsupported => "Unsupported",
            Kind::BadCase => "BadCase",
        }
    }

    /// Parses the protocol's name of a kind.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The kind of a library error.
    pub fn of(e: &cotangent::Error) -> Kind {
        use cotangent::Error as E;
        match e {
            E::BadShape { expected, .. } if expected.contains("square") => Kind::NotSquare,
            E::ShapeMismatch { .. } | E::BadShape { .. } => Kind::ShapeMismatch,
            E::DimOutOfRange { .. }
            | E::IndexOutOfRange { .. }
            | E::SizeOverflow { .. }
            | E::InvalidArgument { .. } => Kind::InvalidArgument,
            E::DTypeMismatch { .. } => Kind::DtypeMismatch,
            E::NotPositiveDefinite { .. } => Kind::NotPositiveDefinite,
            E::Singular { .. } => Kind::Singular,
            E::NoConvergence { .. } => Kind::NoConvergence,
            // the runner builds every input tensor itself: a length mismatch is the case's
            E::DataLength { .. } => Kind::BadCase,
            // UnsupportedDType, Unsupported, DeviceMismatch, NotDifferentiable, the
            // autograd misuse errors (which the runner avoids by construction), Internal,
            // and any variant added later
            _ => Kind::Unsupported,
        }
    }
}

/// Answers one line of the protocol: the JSON text of the result (without a newline).
///
/// Never panics: a line that is not a case is answered with `BadCase`, and a panic inside
/// the library is caught and answered as an `Unsupported` error naming it.
///
/// ```
/// let out = cotangent_parity::run_line(
///     r#"{"id": "a", "op": "exp", "inputs": [{"dtype": "f64", "shape": [], "data": [0]}]}"#,
/// );
/// assert_eq!(out, r#"{"id":"a","outputs":[{"dtype":"f64","shape":[],"data":[1.0]}],"error":null}"#);
/// ```
pub fn run_line(line: &str) -> String {
    case::answer(line)
}

/// Answers every line of `input` on `output`, in order, flushing after each answer. Blank
/// lines are skipped; lines longer than [`limits::MAX_LINE_BYTES`] or not UTF-8 are
/// answered with `BadCase`. Returns the number of lines answered; fails only when reading
/// or writing fails.
pub fn run<R: BufRead, W: Write>(mut input: R, mut output: W) -> std::io::Result<usize> {
    let mut buf = Vec::new();
    let mut answered = 0;
    loop {
        buf.clear();
        let (read_any, too_long) = read_line_capped(&mut input, &mut buf)?;
        if !read_any {
            return Ok(answered);
        }
        let answer = if too_long {
            case::bad_line(&format!(
                "the line is longer than the runner's limit of {} bytes",
                limits::MAX_LINE_BYTES
            ))
        } else {
            match std::str::from_utf8(&buf) {
                Ok(s) if s.trim().is_empty() => continue,
                Ok(s) => run_line(s),
                Err(_) => case::bad_line("the line is not valid UTF-8"),
            }
        };
        output.write_all(answer.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
        answered += 1;
    }
}

/// Reads one line (without its `\n`) into `buf`, keeping at most
/// [`limits::MAX_LINE_BYTES`] bytes and skipping the rest. Returns (anything read, the
/// line was too long).
fn read_line_capped<R: BufRead>(input: &mut R, buf: &mut Vec<u8>) -> std::io::Result<(bool, bool)> {
    let mut read_any = false;
    let mut too_long = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((read_any, too_long));
        }
        read_any = true;
        let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if !too_long {
            if buf.len() + part.len() > limits::MAX_LINE_BYTES {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        input.consume(used);
        if done {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok((true, too_long));
        }
    }
}
