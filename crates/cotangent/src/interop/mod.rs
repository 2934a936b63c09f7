//! Conversions between [`Tensor`](crate::Tensor)s and the arrays of other Rust crates, each
//! behind the cargo feature of the crate's name:
//!
//! | feature | into a tensor | out of a tensor |
//! |---|---|---|
//! | `ndarray` | `Tensor::from_ndarray` (any `ArrayBase`; an owned array's buffer is taken, not copied) | `as_ndarray` (a view, no copy), `to_ndarray` |
//! | `nalgebra` | `Tensor::from_dmatrix` (the buffer taken), `Tensor::from_nalgebra` (any matrix, copied) | `as_nalgebra` (a view), `to_dmatrix` |
//! | `faer` | `Tensor::from_faer` | `as_faer` (a view), `to_faer` |
//!
//! Every element type of the library converts (`bool`, `i64`, `bf16`, `f16`, `f32`, `f64`,
//! and `num_complex::Complex<f32>` / `Complex<f64>` for `C64` / `C128`, the same
//! `Complex` type these crates use). A conversion out of a tensor asks for the element
//! type by a type parameter and fails with `DTypeMismatch` (naming the function) for
//! another; it reads the tensor's data and nothing of its autograd history, as PyTorch's
//! `Tensor.numpy()` of a detached tensor: a tensor made from a foreign array is a leaf that
//! does not require grad.
//!
//! The views (`as_*`) borrow the tensor's buffer with its strides, so that a transposed,
//! sliced or expanded tensor is viewed without a copy; the tensor must outlive the view,
//! as the borrow checker enforces. Tensors are immutable, so there are no mutable views.
//! Conversions into a tensor that take a buffer keep its layout as the tensor's strides
//! (a column-major `DMatrix` becomes a transposed view of its buffer, as a Fortran-ordered
//! numpy array does in `torch.from_numpy`).

#[cfg(feature = "faer")]
mod faer;
#[cfg(feature = "nalgebra")]
mod nalgebra;
#[cfg(feature = "ndarray")]
mod ndarray;

/// Where a matrix's elements are in its buffer.
#[cfg(any(feature = "faer", feature = "nalgebra"))]
struct MatrixParts {
    /// Rows and columns.
    dims: (usize, usize),
    /// The strides of the rows and of the columns.
    strides: (usize, usize),
    /// Where the first element is.
    offset: usize,
}

/// Where a tensor's matrix is in its buffer (`op` names the caller): `BadShape` unless the
/// tensor has exactly two dims.
#[cfg(any(feature = "faer", feature = "nalgebra"))]
fn matrix_parts(t: &crate::Tensor, op: &'static str) -> crate::Result<MatrixParts> {
    let l = t.layout();
    if l.rank() != 2 {
        return Err(crate::Error::BadShape {
            op,
            expected: "a matrix (2 dims)",
            got: t.shape().clone(),
        });
    }
    let (d, s) = (l.dims(), l.strides());
    Ok(MatrixParts { dims: (d[0], d[1]), strides: (s[0], s[1]), offset: l.offset() })
}

/// `InvalidArgument` (naming `op`) for a matrix whose rows or columns repeat (a zero
/// stride along a dim of more than one element: an expanded tensor): nalgebra's
/// iterators and faer's kernels assume distinct elements, so such a tensor is not lent
/// to them; its `contiguous()` copy is.
#[cfg(any(feature = "faer", feature = "nalgebra"))]
fn distinct_elements(
    op: &'static str,
    (r, c): (usize, usize),
    (rs, cs): (usize, usize),
) -> crate::Result<()> {
    if (r > 1 && rs == 0) || (c > 1 && cs == 0) {
        return Err(crate::Error::InvalidArgument {
            op,
            arg: "self",
            reason: "an expanded tensor (a zero stride) cannot be viewed; call contiguous() first",
        });
    }
    Ok(())
}
