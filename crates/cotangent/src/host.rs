//! Elements in host memory: what a tensor is created from and read back into, whatever
//! device computes it. The ground floor of the crate (it names no backend): a device's
//! storage takes a [`HostBuffer`] in through the seam (`Storage::from_host`) and gives
//! one back (`Storage::to_host`). The CPU device keeps its tensors in host memory, so its
//! storage *is* a host buffer and both directions are moves or plain copies.

use half::{bf16, f16};
use num_complex::Complex;

use crate::dtype::DType;

/// A vector of elements of one dtype in host memory.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub enum HostBuffer {
    Bool(Vec<bool>),
    I64(Vec<i64>),
    Bf16(Vec<bf16>),
    F16(Vec<f16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<Complex<f32>>),
    C128(Vec<Complex<f64>>),
}

impl HostBuffer {
    /// The dtype of the elements.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            HostBuffer::Bool(_) => DType::Bool,
            HostBuffer::I64(_) => DType::I64,
            HostBuffer::Bf16(_) => DType::Bf16,
            HostBuffer::F16(_) => DType::F16,
            HostBuffer::F32(_) => DType::F32,
            HostBuffer::F64(_) => DType::F64,
            HostBuffer::C64(_) => DType::C64,
            HostBuffer::C128(_) => DType::C128,
        }
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            HostBuffer::Bool(v) => v.len(),
            HostBuffer::I64(v) => v.len(),
            HostBuffer::Bf16(v) => v.len(),
            HostBuffer::F16(v) => v.len(),
            HostBuffer::F32(v) => v.len(),
            HostBuffer::F64(v) => v.len(),
            HostBuffer::C64(v) => v.len(),
            HostBuffer::C128(v) => v.len(),
        }
    }
}
