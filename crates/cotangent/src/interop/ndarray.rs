//! [`Tensor`] to and from ndarray's arrays (feature `ndarray`).

use ::ndarray::{ArrayBase, ArrayD, ArrayViewD, Data, Dimension, IxDyn, ShapeBuilder};

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

impl Tensor {
    /// A tensor with the elements and shape of an ndarray array (feature `ndarray`), as
    /// `torch.from_numpy`.
    ///
    /// An owned array (`Array`) gives its buffer to the tensor without a copy, its strides
    /// kept (a Fortran-ordered array becomes a transposed view); a view or a shared array
    /// is copied once, and an array with a negative stride once more (row-major). The
    /// tensor is a leaf that does not require grad; the dtype is
    /// `T`'s.
    ///
    /// Errors: none for arrays ndarray can make (`SizeOverflow` is unreachable there).
    ///
    /// ```
    /// use ndarray::array;
    /// use cotangent::Tensor;
    /// let a = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
    /// let t = Tensor::from_ndarray(a.t().to_owned())?;   // owned, column-major: no copy
    /// assert_eq!(t.dims(), &[3, 2]);
    /// assert_eq!(t.to_vec::<f64>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// let v = Tensor::from_ndarray(a.row(1))?;              // a view: copied
    /// assert_eq!(v.to_vec::<f64>()?, vec![4.0, 5.0, 6.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn from_ndarray<T, S, D>(a: ArrayBase<S, D>) -> Result<Tensor>
    where
        T: Element,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let shape = Shape::from(a.shape().to_vec());
        shape.checked_numel("from_ndarray")?;
        // free for an owned array; one copy (in memory order) for a view
        let a = a.into_owned();
        if a.strides().iter().all(|&s| s >= 0) {
            let strides: Vec<usize> = a.strides().iter().map(|&s| s as usize).collect();
            let (data, offset) = a.into_raw_vec_and_offset();
            // no offset: an array without elements
            let Some(offset) = offset else { return Tensor::from_vec(Vec::<T>::new(), shape) };
            return Ok(Tensor::from_vec_layout(data, Layout::new(shape, strides, offset)));
        }
        Tensor::from_vec(a.iter().copied().collect(), shape)
    }

    /// A view of this tensor's elements as an ndarray array (feature `ndarray`), without a
    /// copy: the tensor's buffer with its strides (an expanded tensor's zero strides
    /// included), borrowed for the view's lifetime. As `Tensor.numpy()`; the autograd
    /// history is not part of the view.
    ///
    /// Errors: `DTypeMismatch` (naming `as_ndarray`) unless `T` is the tensor's element
    /// type.
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))?;
    /// let tt = t.transpose(0, 1)?;
    /// let v = tt.as_ndarray::<f32>()?;                      // shares the buffer
    /// assert_eq!(v.shape(), &[3, 2]);
    /// assert_eq!(v[[2, 1]], 6.0);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn as_ndarray<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        const OP: &str = "as_ndarray";
        let (data, l) = self.host_parts::<T>(OP)?;
        let view = if l.numel() == 0 {
            // a layout without elements may point anywhere: an empty view of its shape
            ArrayViewD::from_shape(IxDyn(l.dims()), &data[..0])
        } else {
            ArrayViewD::from_shape(IxDyn(l.dims()).strides(IxDyn(l.strides())), &data[l.offset()..])
        };
        view.map_err(|_| Error::Internal { op: OP, reason: "a tensor's layout outside its buffer" })
    }

    /// This tensor's elements as an owned ndarray array (feature `ndarray`), row-major
    /// (a copy).
    ///
    /// Errors: `DTypeMismatch` (naming `to_ndarray`) unless `T` is the tensor's element
    /// type.
    ///
    /// ```
    /// use cotangent::Tensor;
    /// let t = Tensor::from_vec(vec![1i64, 2, 3, 4], (2, 2))?;
    /// let a = t.to_ndarray::<i64>()?;
    /// assert_eq!(a, ndarray::array![[1i64, 2], [3, 4]].into_dyn());
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn to_ndarray<T: Element>(&self) -> Result<ArrayD<T>> {
        const OP: &str = "to_ndarray";
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op: OP, lhs: self.dtype(), rhs: T::DTYPE });
        }
        ArrayD::from_shape_vec(IxDyn(self.dims()), self.to_vec::<T>()?).map_err(|_| {
            Error::Internal { op: OP, reason: "element count differs from the shape's" }
        })
    }
}
