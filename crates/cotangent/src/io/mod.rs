//! Tensors in files, through the crates made for each format, each behind the cargo
//! feature of its name:
//!
//! - `safetensors` (feature `safetensors`): named tensors in Hugging Face's
//!   `.safetensors` format, as `safetensors.torch`'s `save_file`/`load_file`.
//! - `npy` (feature `npy`): numpy's `.npy` (one array) and `.npz` (named arrays, as
//!   `np.savez` and `np.load`).
//!
//! A loaded tensor is a contiguous leaf that does not require grad (a Fortran-ordered
//! `.npy` array becomes the transposed view of its data, as `torch.from_numpy` makes
//! it). Saving writes a tensor's elements in row-major order whatever its strides, and
//! nothing of its autograd history. Element types a format has and the library lacks are
//! read into the nearest type that holds every value (the integer types into `I64`);
//! those it cannot hold are a [`BadFile`](crate::Error::BadFile) error, as are malformed
//! files; the operating system's failures are [`Io`](crate::Error::Io) errors. Element
//! types the library has and a format lacks (`C128` in `.safetensors`, `Bf16` in `.npy`;
//! each module has its table) are an `UnsupportedDType` error at saving.

#[cfg(feature = "npy")]
pub mod npy;
#[cfg(feature = "safetensors")]
pub mod safetensors;

#[cfg(any(feature = "npy", feature = "safetensors"))]
use std::path::Path;

#[cfg(any(feature = "npy", feature = "safetensors"))]
use crate::error::Error;

/// The `Io` error of `op` on `path`.
#[cfg(any(feature = "npy", feature = "safetensors"))]
fn io_error(op: &'static str, path: &Path, e: &std::io::Error) -> Error {
    Error::Io { op, path: path.display().to_string(), kind: e.kind() }
}

/// The `BadFile` error of `op` on `path` (`None`: a buffer in memory), with the format
/// reader's account of it.
#[cfg(any(feature = "npy", feature = "safetensors"))]
fn bad_file(op: &'static str, path: Option<&Path>, detail: impl std::fmt::Display) -> Error {
    let path = path.map_or_else(|| "<memory>".to_string(), |p| p.display().to_string());
    Error::BadFile { op, path, detail: detail.to_string() }
}

/// The bytes of the file at `path` (`op` names the caller in the error).
#[cfg(any(feature = "npy", feature = "safetensors"))]
fn read(op: &'static str, path: &Path) -> crate::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_error(op, path, &e))
}

/// Writes `bytes` to the file at `path`, replacing it (`op` names the caller).
#[cfg(any(feature = "npy", feature = "safetensors"))]
fn write(op: &'static str, path: &Path, bytes: &[u8]) -> crate::Result<()> {
    std::fs::write(path, bytes).map_err(|e| io_error(op, path, &e))
}
