"""Writes the file-format fixtures of crates/cotangent/tests/io.rs: .npy and .npz files
written by numpy, .safetensors files written by PyTorch (safetensors.torch), and
manifest.json, which lists each array's name, dtype, shape and values (row-major;
complex values as [re, im] pairs), read by the test as the independent expectation.

    python3 -m venv /tmp/torch && /tmp/torch/bin/pip install torch numpy safetensors
    /tmp/torch/bin/python scripts/io_fixtures.py
"""
import json
import pathlib

import numpy as np
import torch
from safetensors.torch import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/cotangent/tests/fixtures/io"
OUT.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(20261207)


def values(a):
    """Row-major values of a numpy array, JSON-ready."""
    flat = np.ascontiguousarray(a).reshape(-1)
    if np.iscomplexobj(flat):
        return [[float(z.real), float(z.imag)] for z in flat]
    if flat.dtype == np.bool_:
        return [bool(x) for x in flat]
    if np.issubdtype(flat.dtype, np.integer):
        return [int(x) for x in flat]
    return [float(x) for x in flat]


manifest = {"npy": [], "npz": [], "safetensors": []}

# one .npy file per case: every numpy dtype the library reads, both byte orders, both
# memory orders, 0-d and empty arrays
floats = rng.standard_normal((3, 4))
cases = {
    "f64": floats,
    "f32": floats.astype(np.float32),
    "f16": floats.astype(np.float16),
    "c128": floats + 1j * rng.standard_normal((3, 4)),
    "c64": (floats - 2j * floats[::-1]).astype(np.complex64),
    "bool": floats > 0,
    "i64": rng.integers(-2**62, 2**62, (2, 3), dtype=np.int64),
    "i32": rng.integers(-2**31, 2**31 - 1, (5,), dtype=np.int32),
    "i16": rng.integers(-2**15, 2**15 - 1, (5,), dtype=np.int16),
    "i8": rng.integers(-128, 127, (2, 2), dtype=np.int8),
    "u8": rng.integers(0, 255, (2, 2, 2), dtype=np.uint8),
    "u16": rng.integers(0, 2**16 - 1, (3,), dtype=np.uint16),
    "u32": rng.integers(0, 2**32 - 1, (3,), dtype=np.uint32),
    "u64": rng.integers(0, 2**63 - 1, (3,), dtype=np.uint64),
    "f64_fortran": np.asfortranarray(rng.standard_normal((3, 2, 4))),
    "f64_big_endian": floats.astype(">f8"),
    "f64_scalar": np.array(2.5),
    "f32_empty": np.zeros((0, 3), dtype=np.float32),
}
for name, a in cases.items():
    np.save(OUT / f"{name}.npy", a)
    manifest["npy"].append(
        {"file": f"{name}.npy", "dtype": str(a.dtype.newbyteorder("=")), "shape": list(a.shape),
         "values": values(a)})

# a uint64 value past i64::MAX, which the library must refuse
np.save(OUT / "u64_too_large.npy", np.array([2**63], dtype=np.uint64))
# a structured array and a string array, which it cannot hold
np.save(OUT / "structured.npy", np.zeros(2, dtype=[("a", "<f8"), ("b", "<i4")]))
np.save(OUT / "strings.npy", np.array(["ab", "c"]))

# .npz archives, stored and compressed
arrays = {"x": floats, "mask": floats > 0.5, "z": cases["c128"], "n": cases["i64"]}
np.savez(OUT / "arrays.npz", **arrays)
np.savez_compressed(OUT / "arrays_compressed.npz", **arrays)
for file in ["arrays.npz", "arrays_compressed.npz"]:
    manifest["npz"].append({"file": file, "arrays": [
        {"name": k, "dtype": str(v.dtype), "shape": list(v.shape), "values": values(v)}
        for k, v in arrays.items()]})

# .safetensors written by PyTorch: every dtype both have, and integer types widened
t = torch.from_numpy(floats)
tensors = {
    "f64": t,
    "f32": t.float(),
    "f16": t.half(),
    "bf16": t.bfloat16(),
    "c64": torch.complex(t.float(), -t.float()),
    "bool": t > 0,
    "i64": torch.from_numpy(cases["i64"]),
    "i32": torch.from_numpy(cases["i32"]),
    "i16": torch.from_numpy(cases["i16"]),
    "i8": torch.from_numpy(cases["i8"]),
    "u8": torch.from_numpy(cases["u8"]),
    "scalar": torch.tensor(-1.25, dtype=torch.float64),
    "empty": torch.zeros(0, 2),
    # a non-contiguous tensor: safetensors.torch saves its elements in row-major order
    "transposed": t.t().contiguous(),
}
save_file(tensors, OUT / "torch.safetensors", metadata={"format": "pt"})


def torch_values(x):
    if x.dtype == torch.bfloat16:
        x = x.float()
    return values(x.numpy())


manifest["safetensors"].append({"file": "torch.safetensors", "tensors": [
    {"name": k, "dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape),
     "values": torch_values(v)} for k, v in tensors.items()]})

(OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
print(f"wrote {len(list(OUT.iterdir()))} files to {OUT}")
