//! [`Tensor`] to and from faer's matrices (feature `faer`).

use ::faer::{Mat, MatRef};

use super::{distinct_elements, matrix_parts, MatrixParts};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// A `(nrows, ncols)` tensor with the elements of a faer matrix view (feature
    /// `faer`; pass `mat.as_ref()` for a `Mat`), copied (row-major): faer's own buffers
    /// are not handed over. A leaf that does not require grad.
    ///
    /// Errors: none for matrices faer can make.
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let m = faer::mat![[1.0f64, 2.0], [3.0, 4.0]];
    /// let t = Tensor::from_faer(m.as_ref())?;
    /// assert_eq!(t.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn from_faer<T: Element>(m: MatRef<'_, T>) -> Result<Tensor> {
        let (r, c) = (m.nrows(), m.ncols());
        let data: Vec<T> = (0..r).flat_map(|i| (0..c).map(move |j| m[(i, j)])).collect();
        Tensor::from_vec(data, (r, c))
    }

    /// A view of this matrix as a faer `MatRef` (feature `faer`), without a copy: the
    /// tensor's buffer with its strides, borrowed for the view's lifetime. faer's safe
    /// views need one of the two strides to be 1 (a contiguous matrix, its transpose, a
    /// slice of rows or columns of one), and an expanded tensor (a zero stride) is refused
    /// (faer's kernels assume distinct elements); call [`Tensor::contiguous`] first for
    /// those.
    ///
    /// Errors: `BadShape` unless the tensor has two dims; `DTypeMismatch` unless `T` is its
    /// element type; `InvalidArgument` when neither stride is 1 or one is 0 (all naming
    /// `as_faer`).
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
    /// let tt = t.mT()?;
    /// let m = tt.as_faer::<f64>()?;          // column-major view of the same buffer
    /// assert_eq!(m[(0, 1)], 3.0);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn as_faer<T: Element>(&self) -> Result<MatRef<'_, T>> {
        const OP: &str = "as_faer";
        let MatrixParts { dims: (r, c), strides: (rs, cs), offset } = matrix_parts(self, OP)?;
        let (data, _) = self.host_parts::<T>(OP)?;
        distinct_elements(OP, (r, c), (rs, cs))?;
        if r == 0 || c == 0 {
            return Ok(MatRef::from_row_major_slice(&data[..0], r, c));
        }
        let data = &data[offset..];
        // a stride of a dim of one element is never used: any such dim counts as unit-stride
        if rs == 1 || r == 1 {
            Ok(MatRef::from_column_major_slice_with_stride(data, r, c, cs))
        } else if cs == 1 || c == 1 {
            Ok(MatRef::from_row_major_slice_with_stride(data, r, c, rs))
        } else {
            Err(Error::InvalidArgument {
                op: OP,
                arg: "self",
                reason: "faer views need a unit row or column stride; call contiguous() first",
            })
        }
    }

    /// This matrix as an owned faer `Mat` (feature `faer`), a copy.
    ///
    /// Errors: `BadShape` unless the tensor has two dims; `DTypeMismatch` unless `T` is its
    /// element type (both naming `to_faer`).
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
    /// let m = t.to_faer::<f64>()?;
    /// assert_eq!(m, faer::mat![[1.0, 2.0], [3.0, 4.0]]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn to_faer<T: Element>(&self) -> Result<Mat<T>> {
        const OP: &str = "to_faer";
        let MatrixParts { dims: (r, c), strides: (rs, cs), offset } = matrix_parts(self, OP)?;
        let (data, _) = self.host_parts::<T>(OP)?;
        Ok(Mat::from_fn(r, c, |i, j| data[offset + i * rs + j * cs]))
    }
}
