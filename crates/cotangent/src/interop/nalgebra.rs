//! [`Tensor`] to and from nalgebra's matrices (feature `nalgebra`).

use ::nalgebra::{DMatrix, DMatrixView, Dim, Dyn, Matrix, RawStorage};

use super::{distinct_elements, matrix_parts, MatrixParts};
use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::Tensor;

impl Tensor {
    /// A `(nrows, ncols)` tensor taking the buffer of an owned `DMatrix` (feature
    /// `nalgebra`), without a copy: nalgebra stores columns contiguously, so the tensor is
    /// the transposed view of its buffer (strides `(1, nrows)`), which every op takes as
    /// it takes a contiguous tensor. A leaf that does not require grad.
    ///
    /// Errors: none for matrices nalgebra can make.
    ///
    /// ```
    /// use nalgebra::DMatrix;
    /// use cotangent::Tensor;
    /// let m = DMatrix::from_row_slice(2, 3, &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// let t = Tensor::from_dmatrix(m)?;
    /// assert_eq!(t.dims(), &[2, 3]);
    /// assert_eq!(t.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn from_dmatrix<T: Element>(m: DMatrix<T>) -> Result<Tensor> {
        let (r, c) = m.shape();
        let data: Vec<T> = m.data.into();
        Tensor::from_vec(data, (c, r))?.mT()
    }

    /// A `(nrows, ncols)` tensor with the elements of any nalgebra matrix or matrix view
    /// (feature `nalgebra`), copied (row-major). A leaf that does not require grad.
    ///
    /// Errors: none for matrices nalgebra can make.
    ///
    /// ```
    /// use nalgebra::Matrix2x3;
    /// use cotangent::Tensor;
    /// let m = Matrix2x3::new(1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0);
    /// let t = Tensor::from_nalgebra(&m.columns(1, 2))?;  // a view of the last two columns
    /// assert_eq!(t.to_vec::<f32>()?, vec![2.0, 3.0, 5.0, 6.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn from_nalgebra<T, R, C, S>(m: &Matrix<T, R, C, S>) -> Result<Tensor>
    where
        T: Element,
        R: Dim,
        C: Dim,
        S: RawStorage<T, R, C>,
    {
        let (r, c) = m.shape();
        // indexed, not iterated: any nalgebra view is read through its strides
        let data: Vec<T> = (0..r).flat_map(|i| (0..c).map(move |j| m[(i, j)])).collect();
        Tensor::from_vec(data, (r, c))
    }

    /// A view of this matrix as a nalgebra `DMatrixView` with both strides dynamic
    /// (feature `nalgebra`), without a copy: the tensor's buffer with its strides
    /// (transposed and sliced tensors included), borrowed for the view's lifetime. An
    /// expanded tensor (a zero stride) is refused: nalgebra's iterators assume distinct
    /// elements; view its `contiguous()` copy.
    ///
    /// Errors: `BadShape` unless the tensor has two dims; `DTypeMismatch` unless `T` is its
    /// element type; `InvalidArgument` for a zero stride (all naming `as_nalgebra`).
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
    /// let m = t.as_nalgebra::<f64>()?;
    /// assert_eq!(m[(0, 1)], 2.0);
    /// assert_eq!(m.determinant(), -2.0);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn as_nalgebra<T: Element>(&self) -> Result<DMatrixView<'_, T, Dyn, Dyn>> {
        const OP: &str = "as_nalgebra";
        let MatrixParts { dims: (r, c), strides: (rs, cs), offset } = matrix_parts(self, OP)?;
        let (data, _) = self.host_parts::<T>(OP)?;
        distinct_elements(OP, (r, c), (rs, cs))?;
        if r == 0 || c == 0 {
            // strides that pass nalgebra's bound check on an empty slice
            let (rs, cs) = if r == 0 { (1, 0) } else { (0, 1) };
            return Ok(DMatrixView::from_slice_with_strides(&data[..0], r, c, rs, cs));
        }
        Ok(DMatrixView::from_slice_with_strides(&data[offset..], r, c, rs, cs))
    }

    /// This matrix as an owned nalgebra `DMatrix` (feature `nalgebra`), a copy.
    ///
    /// Errors: `BadShape` unless the tensor has two dims; `DTypeMismatch` unless `T` is its
    /// element type (both naming `to_dmatrix`).
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))?;
    /// let m = t.to_dmatrix::<f64>()?;
    /// assert_eq!(m, nalgebra::DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn to_dmatrix<T: Element>(&self) -> Result<DMatrix<T>> {
        const OP: &str = "to_dmatrix";
        let MatrixParts { dims: (r, c), .. } = matrix_parts(self, OP)?;
        self.host_parts::<T>(OP)?;
        // the transpose's row-major order is the matrix's column-major order
        Ok(DMatrix::from_vec(r, c, self.mT()?.to_vec::<T>()?))
    }
}
