//! The file formats (features `npy` and `safetensors`): files written by numpy and by
//! PyTorch (tests/fixtures/io, made by scripts/io_fixtures.py) load with the dtypes,
//! shapes and values numpy and PyTorch listed in manifest.json; what the library writes
//! loads back bit for bit; bad files and unsupported dtypes are named errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
#![cfg(all(feature = "npy", feature = "safetensors"))]

use std::collections::BTreeMap;
use std::path::PathBuf;

use cotangent::io::{npy, safetensors};
use cotangent::{DType, Error, Tensor};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/io")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A fresh directory for the files a test writes.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cotangent-io-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The library's dtype for a numpy or PyTorch dtype name (integers are widened to I64).
fn dtype_of(name: &str) -> DType {
    match name {
        "float64" => DType::F64,
        "float32" => DType::F32,
        "float16" => DType::F16,
        "bfloat16" => DType::Bf16,
        "complex128" => DType::C128,
        "complex64" => DType::C64,
        "bool" => DType::Bool,
        n if n.starts_with("int") || n.starts_with("uint") => DType::I64,
        n => panic!("no dtype for {n}"),
    }
}

/// `t` has the dtype, shape and values of the manifest's entry `e`, exactly.
fn check(t: &Tensor, e: &Value, what: &str) {
    assert_eq!(t.dtype(), dtype_of(e["dtype"].as_str().unwrap()), "{what}: dtype");
    let shape: Vec<usize> =
        e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
    assert_eq!(t.dims(), &shape[..], "{what}: shape");
    let values = e["values"].as_array().unwrap();
    assert_eq!(values.len(), t.numel(), "{what}: count");
    match t.dtype() {
        DType::Bool => {
            let want: Vec<bool> = values.iter().map(|v| v.as_bool().unwrap()).collect();
            assert_eq!(t.to_vec::<bool>().unwrap(), want, "{what}");
        }
        DType::I64 => {
            let want: Vec<i64> = values.iter().map(|v| v.as_i64().unwrap()).collect();
            assert_eq!(t.to_vec::<i64>().unwrap(), want, "{what}");
        }
        DType::C64 | DType::C128 => {
            let want: Vec<f64> = values
                .iter()
                .flat_map(|z| z.as_array().unwrap().iter().map(|p| p.as_f64().unwrap()))
                .collect();
            assert_eq!(t.view_as_real().unwrap().to_vec_f64(), want, "{what}");
        }
        _ => {
            let want: Vec<f64> = values.iter().map(|v| v.as_f64().unwrap()).collect();
            assert_eq!(t.to_vec_f64(), want, "{what}");
        }
    }
}

/// `a` and `b` have the same dtype, shape and bits.
fn same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!((a.dtype(), a.dims()), (b.dtype(), b.dims()), "{what}");
    let bits = |t: &Tensor| -> Vec<u64> {
        let t = if t.dtype().is_complex() { t.view_as_real().unwrap() } else { t.clone() };
        t.to_vec_f64().iter().map(|x| x.to_bits()).collect()
    };
    assert_eq!(bits(a), bits(b), "{what}");
}

#[test]
fn npy_files_written_by_numpy_load_and_round_trip() {
    let dir = scratch("npy");
    let m = manifest();
    let entries = m["npy"].as_array().unwrap();
    assert!(entries.len() >= 18);
    for e in entries {
        let file = e["file"].as_str().unwrap();
        let t = npy::load(fixtures().join(file)).unwrap();
        check(&t, e, file);
        // through our writer, a file and a buffer
        let path = dir.join(file);
        npy::save(&path, &t).unwrap();
        same(&npy::load(&path).unwrap(), &t, file);
        same(&npy::from_bytes(&npy::to_bytes(&t).unwrap()).unwrap(), &t, file);
    }
}

#[test]
fn fortran_order_loads_as_a_view() {
    let t = npy::load(fixtures().join("f64_fortran.npy")).unwrap();
    assert_eq!(t.dims(), &[3, 2, 4]);
    assert!(!t.is_contiguous(), "a Fortran-ordered array is a transposed view");
    assert_eq!(t.strides(), &[1, 3, 6]);
}

#[test]
fn npz_archives_written_by_numpy_load_and_round_trip() {
    let dir = scratch("npz");
    let m = manifest();
    for archive in m["npz"].as_array().unwrap() {
        let file = archive["file"].as_str().unwrap();
        let loaded = npy::load_npz(fixtures().join(file)).unwrap();
        let arrays = archive["arrays"].as_array().unwrap();
        assert_eq!(loaded.len(), arrays.len(), "{file}");
        for e in arrays {
            let name = e["name"].as_str().unwrap();
            check(&loaded[name], e, &format!("{file}:{name}"));
        }
        let path = dir.join(file);
        npy::savez(&path, &loaded).unwrap();
        let back = npy::load_npz(&path).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), loaded.keys().collect::<Vec<_>>());
        for (name, t) in &loaded {
            same(&back[name], t, name);
        }
    }
}

#[test]
fn safetensors_written_by_pytorch_load_and_round_trip() {
    let dir = scratch("safetensors");
    let m = manifest();
    let entry = &m["safetensors"][0];
    let file = entry["file"].as_str().unwrap();
    let loaded = safetensors::load_file(fixtures().join(file)).unwrap();
    let tensors = entry["tensors"].as_array().unwrap();
    assert_eq!(loaded.len(), tensors.len());
    for e in tensors {
        let name = e["name"].as_str().unwrap();
        check(&loaded[name], e, name);
    }
    // widened integer types are written back as I64; the others keep their dtype
    let path = dir.join(file);
    safetensors::save_file(&loaded, &path).unwrap();
    let back = safetensors::load_file(&path).unwrap();
    for (name, t) in &loaded {
        same(&back[name], t, name);
    }
    let bytes = safetensors::save(loaded.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
    assert_eq!(safetensors::load(&bytes).unwrap().len(), loaded.len());
}

#[test]
fn strided_tensors_are_written_in_row_major_order() {
    let a = Tensor::from_vec((0..24).map(f64::from).collect::<Vec<_>>(), (2, 3, 4)).unwrap();
    let v = a.permute(&[2, 0, 1]).unwrap().slice(0, 1, 4, 2).unwrap();
    let want = v.contiguous().unwrap();
    same(&npy::from_bytes(&npy::to_bytes(&v).unwrap()).unwrap(), &want, "npy");
    let back = safetensors::load(&safetensors::save([("v", &v)]).unwrap()).unwrap();
    same(&back["v"], &want, "safetensors");
    // an expanded tensor (zero strides) too
    let e = Tensor::from_vec(vec![1.0f32, 2.0], (2, 1)).unwrap().expand(&[2, 3]).unwrap();
    assert_eq!(
        npy::from_bytes(&npy::to_bytes(&e).unwrap()).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    );
}

fn variant(e: &Error) -> String {
    format!("{e:?}").split([' ', '{', '(']).next().unwrap().to_string()
}

#[test]
fn bad_files_and_dtypes_are_named_errors() {
    let dir = scratch("errors");
    let cases: Vec<(&str, &str, Error)> = vec![
        ("BadFile", "npy.load", npy::load(fixtures().join("u64_too_large.npy")).unwrap_err()),
        ("BadFile", "npy.load", npy::load(fixtures().join("structured.npy")).unwrap_err()),
        ("BadFile", "npy.load", npy::load(fixtures().join("strings.npy")).unwrap_err()),
        ("BadFile", "npy.from_bytes", npy::from_bytes(b"not a numpy file").unwrap_err()),
        ("Io", "npy.load", npy::load(dir.join("missing.npy")).unwrap_err()),
        ("BadFile", "npy.load_npz", npy::load_npz(fixtures().join("f64.npy")).unwrap_err()),
        ("Io", "npy.load_npz", npy::load_npz(dir.join("missing.npz")).unwrap_err()),
        (
            "UnsupportedDType",
            "npy.save",
            npy::save(dir.join("x.npy"), &Tensor::zeros(2, DType::Bf16).unwrap()).unwrap_err(),
        ),
        (
            "InvalidArgument",
            "npy.savez",
            npy::savez(
                dir.join("x.npz"),
                [
                    ("a", &Tensor::zeros(1, DType::F64).unwrap()),
                    ("a", &Tensor::zeros(2, DType::F64).unwrap()),
                ],
            )
            .unwrap_err(),
        ),
        (
            "Io",
            "npy.save",
            npy::save(dir.join("no/such/dir/x.npy"), &Tensor::zeros(1, DType::F64).unwrap())
                .unwrap_err(),
        ),
        (
            "BadFile",
            "safetensors.load",
            safetensors::load(b"\x08\0\0\0\0\0\0\0{bad json").unwrap_err(),
        ),
        (
            "Io",
            "safetensors.load_file",
            safetensors::load_file(dir.join("missing.st")).unwrap_err(),
        ),
        (
            "BadFile",
            "safetensors.load_file",
            safetensors::load_file(fixtures().join("f64.npy")).unwrap_err(),
        ),
        (
            "UnsupportedDType",
            "safetensors.save",
            safetensors::save([("z", &Tensor::zeros(1, DType::C128).unwrap())]).unwrap_err(),
        ),
        (
            "InvalidArgument",
            "safetensors.save_file",
            safetensors::save_file(
                [
                    ("a", &Tensor::zeros(1, DType::F64).unwrap()),
                    ("a", &Tensor::zeros(1, DType::F64).unwrap()),
                ],
                dir.join("dup.safetensors"),
            )
            .unwrap_err(),
        ),
    ];
    for (want, op, e) in cases {
        assert_eq!(variant(&e), want, "{e}");
        assert!(e.to_string().starts_with(&format!("{op}: ")), "{e}");
    }
    let missing = npy::load(dir.join("missing.npy")).unwrap_err();
    assert!(matches!(missing, Error::Io { kind: std::io::ErrorKind::NotFound, .. }), "{missing:?}");
}

#[test]
fn a_map_of_tensors_saves_by_reference() {
    let mut m: BTreeMap<String, Tensor> = BTreeMap::new();
    m.insert("w".into(), Tensor::eye(3, DType::F32).unwrap());
    let bytes = safetensors::save(&m).unwrap();
    same(&safetensors::load(&bytes).unwrap()["w"], &m["w"], "w");
}
