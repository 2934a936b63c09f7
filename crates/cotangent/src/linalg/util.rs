//! Helpers shared by the linear-algebra ops: argument checks, batch broadcasting, and
//! wrapping kernel results.

use std::sync::Arc;

use crate::backend::Storage;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{broadcast_shapes, Shape};
use crate::tensor::Tensor;

/// `UnsupportedDType` unless `t` is floating point (f32, f64, or bf16/f16 computed in
/// f32).
pub(crate) fn check_float(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() && !t.dtype().is_complex() {
        Ok(())
    } else {
        Err(Error::UnsupportedDType { op, dtype: t.dtype() })
    }
}

/// [`check_float`], complex dtypes allowed too: for the ops whose forward and VJP are
/// written for complex input (conjugate transposes where the real formula transposes).
pub(crate) fn check_float_or_complex(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_complex() {
        Ok(())
    } else {
        check_float(op, t)
    }
}

/// `DTypeMismatch` unless both have one dtype (PyTorch's linalg does not promote).
pub(crate) fn check_same_dtype(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() == b.dtype() {
        Ok(())
    } else {
        Err(Error::DTypeMismatch { op, lhs: a.dtype(), rhs: b.dtype() })
    }
}

/// `BadShape` ("square matrices") unless `t` is `(*, n, n)`.
pub(crate) fn check_square(op: &'static str, t: &Tensor) -> Result<usize> {
    let r = t.rank();
    if r < 2 || t.dims()[r - 1] != t.dims()[r - 2] {
        return Err(Error::BadShape {
            op,
            expected: "square matrices (*, n, n)",
            got: t.shape().clone(),
        });
    }
    Ok(t.dims()[r - 1])
}

/// The outputs of an eigen kernel for square `a: (*, n, n)`: the eigenvalues as a
/// contiguous `(*, n)` tensor and the optional eigenvectors with their layout;
/// `NoConvergence` (named `op`) for the first matrix the kernel failed on.
#[allow(clippy::type_complexity)]
pub(crate) fn eigen_outputs(
    op: &'static str,
    a: &Tensor,
    (ws, v, failed): (Storage, Option<(Storage, Layout)>, Option<usize>),
) -> Result<(Tensor, Option<Tensor>)> {
    if let Some(batch) = failed {
        return Err(Error::NoConvergence { op, batch });
    }
    let mut dims = batch_of(a, 2).dims().to_vec();
    dims.push(a.dims()[a.rank() - 1]);
    let w = from_kernel(ws, Layout::contiguous(dims.into()));
    Ok((w, v.map(|(s, l)| from_kernel(s, l))))
}

/// `BadShape` unless `t` has at least 2 dims.
pub(crate) fn check_matrix(op: &'static str, t: &Tensor) -> Result<()> {
    if t.rank() < 2 {
        return Err(Error::BadShape {
            op,
            expected: "matrices (*, m, n) of at least 2 dims",
            got: t.shape().clone(),
        });
    }
    Ok(())
}

/// The batch dims of a tensor whose last `tail` dims are the matrix (or vector).
pub(crate) fn batch_of(t: &Tensor, tail: usize) -> Shape {
    Shape::of(&t.dims()[..t.rank() - tail])
}

/// `a` and `b` with their batch dims (all but the last `ta` / `tb` dims) broadcast to a
/// common batch shape (expand views: their gradients are summed back by autograd).
/// `ShapeMismatch` with both full shapes if the batches do not broadcast.
pub(crate) fn broadcast_batch(
    op: &'static str,
    a: &Tensor,
    ta: usize,
    b: &Tensor,
    tb: usize,
) -> Result<(Tensor, Tensor)> {
    let batch = broadcast_shapes(op, &batch_of(a, ta), &batch_of(b, tb))
        .map_err(|_| Error::ShapeMismatch { op, lhs: a.shape().clone(), rhs: b.shape().clone() })?;
    let with = |t: &Tensor, tail: usize| -> Result<Tensor> {
        let mut dims = batch.dims().to_vec();
        dims.extend(&t.dims()[t.rank() - tail..]);
        if dims == t.dims() {
            Ok(t.clone())
        } else {
            t.broadcast_to(dims)
        }
    };
    Ok((with(a, ta)?, with(b, tb)?))
}

/// A tensor over a kernel's fresh buffer, with the kernel's layout.
pub(crate) fn from_kernel(s: Storage, l: Layout) -> Tensor {
    Tensor::from_parts(Arc::new(s), l)
}
