//! Named tensors in the `.safetensors` format (feature `safetensors`), read and written
//! by the `safetensors` crate, as `safetensors.torch`'s `save`, `save_file`, `load` and
//! `load_file`.
//!
//! | cotangent | file | |
//! |---|---|---|
//! | `Bool`, `Bf16`, `F16`, `F32`, `F64`, `I64`, `C64` | `BOOL`, `BF16`, `F16`, `F32`, `F64`, `I64`, `C64` | both ways |
//! | `I64` | `I8`, `I16`, `I32`, `U8`, `U16`, `U32`, `U64` | read only, widened (a `U64` above `i64::MAX` is a `BadFile` error) |
//! | `C128` | none | `UnsupportedDType` at saving |
//! | none | the 8-, 6- and 4-bit float types | `BadFile` at loading |
//!
//! ```
//! use cotangent::{io::safetensors, Tensor};
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], (2, 2))?;
//! let b = Tensor::from_vec(vec![0.5f64], 1)?;
//! let bytes = safetensors::save([("weight", &w), ("bias", &b)])?;
//! let back = safetensors::load(&bytes)?;
//! assert_eq!(back["weight"].to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(back["bias"].dims(), &[1]);
//! # Ok::<(), cotangent::Error>(())
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use ::safetensors::tensor::{Dtype, SafeTensors, View};
use half::{bf16, f16};
use num_complex::Complex;

use super::{bad_file, read, write};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostBuffer;
use crate::tensor::Tensor;

/// A tensor's elements in the file's little-endian layout, with its dtype and shape.
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The little-endian bytes of `items`, `N` bytes each.
fn le_bytes<T: Copy, const N: usize>(items: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    items.iter().flat_map(|&x| f(x)).collect()
}

/// `t`'s elements (row-major) as the format stores them; `UnsupportedDType` (naming `op`)
/// for a dtype the format lacks.
fn entry(op: &'static str, t: &Tensor) -> Result<Entry> {
    let shape = t.dims().to_vec();
    let (dtype, bytes) = match t.0.storage.to_host(t.layout())? {
        HostBuffer::Bool(v) => (Dtype::BOOL, v.iter().map(|&b| u8::from(b)).collect()),
        HostBuffer::I64(v) => (Dtype::I64, le_bytes(&v, i64::to_le_bytes)),
        HostBuffer::Bf16(v) => (Dtype::BF16, le_bytes(&v, bf16::to_le_bytes)),
        HostBuffer::F16(v) => (Dtype::F16, le_bytes(&v, f16::to_le_bytes)),
        HostBuffer::F32(v) => (Dtype::F32, le_bytes(&v, f32::to_le_bytes)),
        HostBuffer::F64(v) => (Dtype::F64, le_bytes(&v, f64::to_le_bytes)),
        HostBuffer::C64(v) => (
            Dtype::C64,
            le_bytes(&v, |z: Complex<f32>| {
                let mut b = [0u8; 8];
                b[..4].copy_from_slice(&z.re.to_le_bytes());
                b[4..].copy_from_slice(&z.im.to_le_bytes());
                b
            }),
        ),
        HostBuffer::C128(_) => return Err(Error::UnsupportedDType { op, dtype: DType::C128 }),
    };
    Ok(Entry { dtype, shape, bytes })
}

/// The named tensors in the `.safetensors` format, in a buffer (as `safetensors.torch.save`).
/// Any iterable of `(name, &Tensor)` pairs: an array of pairs, a `Vec`, a map's `iter()`.
///
/// Errors (naming `safetensors.save`): `UnsupportedDType` for a `C128` tensor (the
/// format has no 128-bit complex type); `InvalidArgument` for two tensors of one name.
pub fn save<'a, K: AsRef<str>>(
    tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
) -> Result<Vec<u8>> {
    serialize("safetensors.save", tensors)
}

/// [`save`] into the file at `path`, replacing it (as `safetensors.torch.save_file`).
///
/// Errors (naming `safetensors.save_file`): as [`save`]; `Io` when the file cannot be
/// written.
pub fn save_file<'a, K: AsRef<str>>(
    tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
    path: impl AsRef<Path>,
) -> Result<()> {
    const OP: &str = "safetensors.save_file";
    write(OP, path.as_ref(), &serialize(OP, tensors)?)
}

fn serialize<'a, K: AsRef<str>>(
    op: &'static str,
    tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
) -> Result<Vec<u8>> {
    let mut entries = BTreeMap::new();
    for (name, t) in tensors {
        let name = name.as_ref().to_string();
        if entries.insert(name, entry(op, t)?).is_some() {
            return Err(Error::InvalidArgument {
                op,
                arg: "tensors",
                reason: "two tensors have the same name",
            });
        }
    }
    ::safetensors::serialize(entries.iter().map(|(k, v)| (k.as_str(), v)), None)
        .map_err(|e| bad_file(op, None, e))
}

/// The named tensors of a `.safetensors` buffer (as `safetensors.torch.load`), by name.
///
/// Errors (naming `safetensors.load`): `BadFile` when the buffer is not in the format or
/// holds an element type the library has no counterpart for (see the module's table).
pub fn load(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>> {
    deserialize("safetensors.load", None, bytes)
}

/// The named tensors of the `.safetensors` file at `path` (as
/// `safetensors.torch.load_file`), by name.
///
/// Errors (naming `safetensors.load_file`): `Io` when the file cannot be read; `BadFile`
/// as [`load`].
pub fn load_file(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    const OP: &str = "safetensors.load_file";
    let path = path.as_ref();
    deserialize(OP, Some(path), &read(OP, path)?)
}

fn deserialize(
    op: &'static str,
    path: Option<&Path>,
    bytes: &[u8],
) -> Result<BTreeMap<String, Tensor>> {
    let file = SafeTensors::deserialize(bytes).map_err(|e| bad_file(op, path, e))?;
    let mut out = BTreeMap::new();
    for (name, view) in file.iter() {
        let data = view.data();
        let fail = |what: &str| bad_file(op, path, format!("tensor `{name}`: {what}"));
        let h = match view.dtype() {
            Dtype::BOOL => HostBuffer::Bool(data.iter().map(|&b| b != 0).collect()),
            Dtype::U8 => HostBuffer::I64(data.iter().map(|&b| i64::from(b)).collect()),
            Dtype::I8 => HostBuffer::I64(data.iter().map(|&b| i64::from(b as i8)).collect()),
            Dtype::I16 => HostBuffer::I64(from_le(data, |b| i64::from(i16::from_le_bytes(b)))),
            Dtype::U16 => HostBuffer::I64(from_le(data, |b| i64::from(u16::from_le_bytes(b)))),
            Dtype::I32 => HostBuffer::I64(from_le(data, |b| i64::from(i32::from_le_bytes(b)))),
            Dtype::U32 => HostBuffer::I64(from_le(data, |b| i64::from(u32::from_le_bytes(b)))),
            Dtype::I64 => HostBuffer::I64(from_le(data, i64::from_le_bytes)),
            Dtype::U64 => {
                let v: Option<Vec<i64>> = from_le(data, u64::from_le_bytes)
                    .into_iter()
                    .map(|x| i64::try_from(x).ok())
                    .collect();
                HostBuffer::I64(v.ok_or_else(|| fail("a U64 value above i64::MAX"))?)
            }
            Dtype::BF16 => HostBuffer::Bf16(from_le(data, bf16::from_le_bytes)),
            Dtype::F16 => HostBuffer::F16(from_le(data, f16::from_le_bytes)),
            Dtype::F32 => HostBuffer::F32(from_le(data, f32::from_le_bytes)),
            Dtype::F64 => HostBuffer::F64(from_le(data, f64::from_le_bytes)),
            Dtype::C64 => HostBuffer::C64(from_le(data, |b: [u8; 8]| {
                let (re, im) = b.split_at(4);
                let part = |p: &[u8]| f32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                Complex::new(part(re), part(im))
            })),
            other => return Err(fail(&format!("element type {other:?} has no cotangent dtype"))),
        };
        let t = Tensor::from_storage(Storage::host(h), view.shape().to_vec().into());
        out.insert(name.to_string(), t);
    }
    Ok(out)
}

/// The elements of `N` little-endian bytes each in `data` (whose length the format's
/// reader has checked against the shape).
fn from_le<T, const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            f(b)
        })
        .collect()
}
