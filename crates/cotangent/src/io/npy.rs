//! numpy's `.npy` and `.npz` files (feature `npy`): one array per `.npy` file, read and
//! written by the `npyz` crate; named arrays in a `.npz` zip archive of `.npy` files
//! (the `zip` crate), as `np.save`, `np.load`, `np.savez` and `np.savez_compressed`'s
//! archives (read) do.
//!
//! | cotangent | numpy | |
//! |---|---|---|
//! | `Bool`, `I64`, `F16`, `F32`, `F64`, `C64`, `C128` | `bool`, `int64`, `float16`, `float32`, `float64`, `complex64`, `complex128` | both ways |
//! | `I64` | `int8`, `int16`, `int32`, `uint8`, `uint16`, `uint32`, `uint64` | read only, widened (a `uint64` above `i64::MAX` is a `BadFile` error) |
//! | `Bf16` | none | `UnsupportedDType` at saving |
//! | none | strings, objects, structured and datetime arrays | `BadFile` at loading |
//!
//! Either byte order is read; files are written little-endian, in C order. A
//! Fortran-ordered array loads as the transposed view of its data, without a copy.
//!
//! ```
//! use cotangent::{io::npy, Tensor};
//! let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))?;
//! let bytes = npy::to_bytes(&a)?;
//! let b = npy::from_bytes(&bytes)?;
//! assert_eq!(b.dims(), &[2, 3]);
//! assert_eq!(b.to_vec::<f64>()?, a.to_vec::<f64>()?);
//! # Ok::<(), cotangent::Error>(())
//! ```

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};
use std::path::Path;

use half::f16;
use npyz::{NpyFile, Order, TypeChar, WriterBuilder};
use num_complex::Complex;

use super::{bad_file, io_error, read, write};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostBuffer;
use crate::tensor::Tensor;

/// `t` as the bytes of a `.npy` file.
fn encode(op: &'static str, t: &Tensor) -> Result<Vec<u8>> {
    let shape: Vec<u64> = t.dims().iter().map(|&d| d as u64).collect();
    let mut out = Vec::new();
    let fail = |e: std::io::Error| bad_file(op, None, e);
    macro_rules! put {
        ($v:expr) => {{
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut out)
                .begin_nd()
                .map_err(fail)?;
            w.extend($v).map_err(fail)?;
            w.finish().map_err(fail)?;
        }};
    }
    match t.0.storage.to_host(t.layout())? {
        HostBuffer::Bool(v) => put!(v),
        HostBuffer::I64(v) => put!(v),
        HostBuffer::F16(v) => put!(v),
        HostBuffer::F32(v) => put!(v),
        HostBuffer::F64(v) => put!(v),
        HostBuffer::C64(v) => put!(v),
        HostBuffer::C128(v) => put!(v),
        HostBuffer::Bf16(_) => return Err(Error::UnsupportedDType { op, dtype: DType::Bf16 }),
    }
    Ok(out)
}

/// The tensor of the `.npy` file in `bytes` (`path`: where it came from, for the errors).
fn decode(op: &'static str, path: Option<&Path>, bytes: &[u8]) -> Result<Tensor> {
    let fail = |e: &dyn std::fmt::Display| bad_file(op, path, e);
    let file = NpyFile::new(bytes).map_err(|e| fail(&e))?;
    let dims: Vec<usize> = file
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| fail(&e))?;
    let fortran = file.order() == Order::Fortran;
    let npyz::DType::Plain(ts) = file.dtype() else {
        return Err(fail(&"a structured array has no cotangent dtype"));
    };
    let (kind, size) = (ts.type_char(), ts.size_field());
    macro_rules! get {
        ($t:ty) => {
            file.into_vec::<$t>().map_err(|e| fail(&e))?
        };
    }
    macro_rules! widen {
        ($t:ty) => {
            HostBuffer::I64(get!($t).into_iter().map(i64::from).collect())
        };
    }
    let h = match (kind, size) {
        (TypeChar::Bool, 1) => HostBuffer::Bool(get!(bool)),
        (TypeChar::Int, 1) => widen!(i8),
        (TypeChar::Int, 2) => widen!(i16),
        (TypeChar::Int, 4) => widen!(i32),
        (TypeChar::Int, 8) => HostBuffer::I64(get!(i64)),
        (TypeChar::Uint, 1) => widen!(u8),
        (TypeChar::Uint, 2) => widen!(u16),
        (TypeChar::Uint, 4) => widen!(u32),
        (TypeChar::Uint, 8) => {
            let v: Option<Vec<i64>> =
                get!(u64).into_iter().map(|x| i64::try_from(x).ok()).collect();
            HostBuffer::I64(v.ok_or_else(|| fail(&"a uint64 value above i64::MAX"))?)
        }
        (TypeChar::Float, 2) => HostBuffer::F16(get!(f16)),
        (TypeChar::Float, 4) => HostBuffer::F32(get!(f32)),
        (TypeChar::Float, 8) => HostBuffer::F64(get!(f64)),
        (TypeChar::Complex, 8) => HostBuffer::C64(get!(Complex<f32>)),
        (TypeChar::Complex, 16) => HostBuffer::C128(get!(Complex<f64>)),
        _ => return Err(fail(&format!("element type `{ts}` has no cotangent dtype"))),
    };
    if fortran {
        // the data of the transpose, in C order: the reversed dims, then reversed back as a view
        let rev: Vec<usize> = dims.iter().rev().copied().collect();
        let perm: Vec<isize> = (0..dims.len() as isize).rev().collect();
        let t = Tensor::from_storage(Storage::host(h), rev.into());
        return t.permute(&perm);
    }
    Ok(Tensor::from_storage(Storage::host(h), dims.into()))
}

/// `t` as the bytes of a `.npy` file (little-endian, C order), whatever its strides.
///
/// Errors (naming `npy.to_bytes`): `UnsupportedDType` for `Bf16` (numpy has no bfloat16).
pub fn to_bytes(t: &Tensor) -> Result<Vec<u8>> {
    encode("npy.to_bytes", t)
}

/// The tensor of a `.npy` file's bytes.
///
/// Errors (naming `npy.from_bytes`): `BadFile` when the bytes are not a `.npy` file or
/// hold an element type the library has no counterpart for (see the module's table).
pub fn from_bytes(bytes: &[u8]) -> Result<Tensor> {
    decode("npy.from_bytes", None, bytes)
}

/// Writes `t` to the `.npy` file at `path`, replacing it (as `np.save`; numpy adds
/// `.npy` to a name without it, this function writes the path it is given).
///
/// Errors (naming `npy.save`): as [`to_bytes`]; `Io` when the file cannot be written.
pub fn save(path: impl AsRef<Path>, t: &Tensor) -> Result<()> {
    const OP: &str = "npy.save";
    write(OP, path.as_ref(), &encode(OP, t)?)
}

/// The tensor of the `.npy` file at `path` (as `np.load` of a `.npy` file).
///
/// Errors (naming `npy.load`): `Io` when the file cannot be read; `BadFile` as
/// [`from_bytes`].
pub fn load(path: impl AsRef<Path>) -> Result<Tensor> {
    const OP: &str = "npy.load";
    let path = path.as_ref();
    decode(OP, Some(path), &read(OP, path)?)
}

/// Writes the named tensors to the `.npz` archive at `path`, each as `<name>.npy`, stored
/// uncompressed (as `np.savez(path, name=array, ...)`). Any iterable of `(name, &Tensor)`.
///
/// Errors (naming `npy.savez`): as [`to_bytes`]; `InvalidArgument` for two tensors of one
/// name; `Io` when the file cannot be written.
pub fn savez<'a, K: AsRef<str>>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (K, &'a Tensor)>,
) -> Result<()> {
    const OP: &str = "npy.savez";
    let path = path.as_ref();
    let mut entries = BTreeMap::new();
    for (name, t) in tensors {
        if entries.insert(format!("{}.npy", name.as_ref()), encode(OP, t)?).is_some() {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "tensors",
                reason: "two tensors have the same name",
            });
        }
    }
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let zip_fail = |e: zip::result::ZipError| bad_file(OP, Some(path), e);
    for (name, bytes) in &entries {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(bytes.len() as u64 >= u64::from(u32::MAX));
        zip.start_file(name, options).map_err(zip_fail)?;
        zip.write_all(bytes).map_err(|e| io_error(OP, path, &e))?;
    }
    let bytes = zip.finish().map_err(zip_fail)?.into_inner();
    write(OP, path, &bytes)
}

/// The named tensors of the `.npz` archive at `path` (as `np.load` of an `.npz` file),
/// by name (the member's name without `.npy`); compressed archives
/// (`np.savez_compressed`) are read too.
///
/// Errors (naming `npy.load_npz`): `Io` when the file cannot be read; `BadFile` when it
/// is not a zip archive of `.npy` files, or as [`from_bytes`] for a member.
pub fn load_npz(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    const OP: &str = "npy.load_npz";
    let path = path.as_ref();
    let bytes = read(OP, path)?;
    let fail = |e: zip::result::ZipError| bad_file(OP, Some(path), e);
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(fail)?;
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).map_err(fail)?;
        let name = member.name().map_err(fail)?.to_string();
        let mut data = Vec::new();
        member.read_to_end(&mut data).map_err(|e| bad_file(OP, Some(path), e))?;
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        out.insert(key, decode(OP, Some(path), &data)?);
    }
    Ok(out)
}
