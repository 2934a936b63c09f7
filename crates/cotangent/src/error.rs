//! The crate's error type.
//!
//! Every fallible function of the library returns [`Result`]. Each variant names the
//! operation (`op`, PyTorch's name where there is one) and carries the data a user needs to
//! act on it: shapes, dtypes, dims, batch and pivot indices. There are no free-form message
//! variants; a new kind of failure gets a new variant. The one text a variant carries is
//! [`Error::BadFile`]'s, a file format reader's own account of what is wrong with a file.

use crate::device::Device;
use crate::dtype::DType;
use crate::shape::Shape;

/// The library's error: one variant per kind of failure, each naming the op.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that had to agree (or broadcast) do not.
    #[error("{op}: shape mismatch: {lhs} vs {rhs}")]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// The first shape.
        lhs: Shape,
        /// The second shape.
        rhs: Shape,
    },
    /// A tensor has a shape the op cannot take (wrong rank, not square, ...).
    #[error("{op}: expected {expected}, got shape {got}")]
    BadShape {
        /// The operation.
        op: &'static str,
        /// What the op expected, in words.
        expected: &'static str,
        /// The shape it got.
        got: Shape,
    },
    /// A dimension index outside `[-ndim, ndim)`.
    #[error("{op}: dimension {dim} out of range for a tensor of {ndim} dimensions")]
    DimOutOfRange {
        /// The operation.
        op: &'static str,
        /// The dimension given.
        dim: isize,
        /// The rank of the tensor.
        ndim: usize,
    },
    /// An index (in `select`, `index_select`, `gather`, ...) outside `[0, size)`.
    #[error("{op}: index {index} out of range for a dimension of size {size}")]
    IndexOutOfRange {
        /// The operation.
        op: &'static str,
        /// The index given.
        index: i64,
        /// The size of the dimension it indexes.
        size: usize,
    },
    /// The data given does not have as many elements as the shape asks.
    #[error("{op}: the shape needs {expected} elements, the data has {got}")]
    DataLength {
        /// The operation.
        op: &'static str,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A shape whose number of elements does not fit in memory addresses.
    #[error("{op}: shape {shape:?} has more elements than can be addressed")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// The dims that overflowed.
        shape: Vec<usize>,
    },
    /// An argument that is not a tensor has a value the op does not accept.
    #[error("{op}: invalid argument `{arg}`: {reason}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// The argument's name (PyTorch's keyword).
        arg: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two tensors that must have the same dtype do not (PyTorch refuses to mix them there).
    #[error("{op}: dtype mismatch: {lhs:?} vs {rhs:?}")]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// The first dtype.
        lhs: DType,
        /// The second dtype.
        rhs: DType,
    },
    /// The op is not defined for this dtype (yet, or ever).
    #[error("{op}: unsupported dtype {dtype:?}")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The dtype given.
        dtype: DType,
    },
    /// Tensors on different devices.
    #[error("{op}: tensors on {lhs} and {rhs}")]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// The first device.
        lhs: Device,
        /// The second device.
        rhs: Device,
    },
    /// The device has no kernel for this op.
    #[error("{op}: not implemented on {device}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// The device.
        device: Device,
    },
    /// A Cholesky factorisation met a leading minor that is not positive.
    #[error("{op}: matrix {batch} is not positive-definite (leading minor of order {order})")]
    NotPositiveDefinite {
        /// The operation.
        op: &'static str,
        /// The index of the matrix in the flattened batch.
        batch: usize,
        /// The order of the first non-positive leading minor (1-based, as LAPACK).
        order: usize,
    },
    /// A factorisation met an exactly singular matrix.
    #[error("{op}: matrix {batch} is singular (U[{index},{index}] = 0)")]
    Singular {
        /// The operation.
        op: &'static str,
        /// The index of the matrix in the flattened batch.
        batch: usize,
        /// The (1-based) index of the zero pivot.
        index: usize,
    },
    /// An iterative algorithm did not converge.
    #[error("{op}: no convergence for matrix {batch}")]
    NoConvergence {
        /// The operation.
        op: &'static str,
        /// The index of the matrix in the flattened batch.
        batch: usize,
    },
    /// A gradient was asked where there is none: a non-differentiable output, or an op
    /// whose derivative is not defined there.
    #[error("{op}: not differentiable: {reason}")]
    NotDifferentiable {
        /// The operation.
        op: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// `backward()` was called on a tensor with more than one element.
    #[error("backward: called on a non-scalar output of shape {shape}; pass grad_outputs")]
    NonScalarBackward {
        /// The shape of the output.
        shape: Shape,
    },
    /// An output passed to `backward`/`grad` does not require grad (it has no history).
    #[error("autograd.grad: output {index} does not require grad and has no grad_fn")]
    NoGradFn {
        /// The position of the output in the list.
        index: usize,
    },
    /// An input passed to `grad` does not require grad.
    #[error("autograd.grad: input {index} does not require grad")]
    InputNoGrad {
        /// The position of the input in the list.
        index: usize,
    },
    /// An input passed to `grad` was not used to compute the outputs, and `allow_unused`
    /// is false.
    #[error("autograd.grad: input {index} was not used in the graph; set allow_unused")]
    UnusedInput {
        /// The position of the input in the list.
        index: usize,
    },
    /// Reading or writing a file failed in the operating system (not found, no
    /// permission, disk full, ...).
    #[error("{op}: {path}: {kind}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The file.
        path: String,
        /// What the operating system answered.
        kind: std::io::ErrorKind,
    },
    /// A file (or a buffer read as one) is not in the format the op reads, or holds
    /// something the library has no counterpart for (an element type, a structured array).
    #[error("{op}: {path}: {detail}")]
    BadFile {
        /// The operation.
        op: &'static str,
        /// The file, or `<memory>` for a buffer.
        path: String,
        /// What is wrong, as the format's reader reports it.
        detail: String,
    },
    /// A broken internal invariant: a bug in the library, reported instead of a panic.
    #[error("{op}: internal error: {reason}")]
    Internal {
        /// The operation.
        op: &'static str,
        /// What went wrong.
        reason: &'static str,
    },
}

impl Error {
    /// The same error named for `op`: what a composite returns for a failure of the op it
    /// is built on, so that the message names the function the user called. Internal
    /// errors keep the op where the invariant broke, and the autograd variants their
    /// fixed names.
    pub(crate) fn in_op(self, op: &'static str) -> Error {
        let mut e = self;
        match &mut e {
            Error::ShapeMismatch { op: o, .. }
            | Error::BadShape { op: o, .. }
            | Error::DimOutOfRange { op: o, .. }
            | Error::IndexOutOfRange { op: o, .. }
            | Error::DataLength { op: o, .. }
            | Error::SizeOverflow { op: o, .. }
            | Error::InvalidArgument { op: o, .. }
            | Error::DTypeMismatch { op: o, .. }
            | Error::UnsupportedDType { op: o, .. }
            | Error::DeviceMismatch { op: o, .. }
            | Error::Unsupported { op: o, .. }
            | Error::NotPositiveDefinite { op: o, .. }
            | Error::Singular { op: o, .. }
            | Error::NoConvergence { op: o, .. }
            | Error::NotDifferentiable { op: o, .. }
            | Error::Io { op: o, .. }
            | Error::BadFile { op: o, .. } => *o = op,
            Error::NonScalarBackward { .. }
            | Error::NoGradFn { .. }
            | Error::InputNoGrad { .. }
            | Error::UnusedInput { .. }
            | Error::Internal { .. } => {}
        }
        e
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
