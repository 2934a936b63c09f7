//! [`Tensor`]: an immutable, cheaply cloned handle to a strided view of a buffer, with its
//! autograd history.

mod create;
mod display;
mod view;

pub use create::Generator;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::autograd::node::GradFn;
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;

/// A unique id of a tensor handle, used to look up gradients of leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    pub(crate) fn next() -> TensorId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        TensorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// An n-dimensional array of one [`DType`] with reverse-mode autograd.
///
/// A `Tensor` is immutable and cheap to clone (an `Arc`): every op returns a new tensor.
/// Views ([`Tensor::transpose`], [`Tensor::narrow`], [`Tensor::expand`], ...) share the
/// buffer and change only the [`Layout`]. A tensor created by an op on inputs that require
/// grad records the op, so [`Tensor::backward`] and [`crate::autograd::grad`] can
/// differentiate through it, to any order.
///
/// ```
/// use cotangent::{DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], 3)?.with_requires_grad(true)?;
/// let y = x.square()?.sum()?; // y = Σ x²
/// let g = y.backward()?;
/// assert_eq!(g.get(&x).unwrap().to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

pub(crate) struct TensorImpl {
    pub(crate) id: TensorId,
    pub(crate) storage: Arc<Storage>,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    pub(crate) requires_grad: bool,
    pub(crate) grad_fn: Option<GradFn>,
    /// Forward-mode tangents, one per dual level ([`crate::autograd::forward`]).
    pub(crate) tangents: crate::autograd::forward::Tangents,
}

impl Tensor {
    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout) -> Tensor {
        let dtype = storage.dtype();
        Tensor(Arc::new(TensorImpl {
            id: TensorId::next(),
            storage,
            layout,
            dtype,
            requires_grad: false,
            grad_fn: None,
            tangents: None,
        }))
    }

    pub(crate) fn with_grad_fn(&self, grad_fn: Option<GradFn>, requires_grad: bool) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            id: TensorId::next(),
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            requires_grad,
            grad_fn,
            tangents: self.0.tangents.clone(),
        }))
    }

    /// This tensor (the same id, data and history) with other forward-mode tangents.
    pub(crate) fn with_tangents(&self, tangents: crate::autograd::forward::Tangents) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            id: self.0.id,
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            requires_grad: self.0.requires_grad,
            grad_fn: self.0.grad_fn.clone(),
            tangents,
        }))
    }

    /// A contiguous tensor owning a fresh buffer (of the shape's number of elements).
    pub(crate) fn from_storage(storage: Storage, shape: Shape) -> Tensor {
        Tensor::from_parts(Arc::new(storage), Layout::contiguous(shape))
    }

    /// A tensor owning `storage` with the given layout (which must stay inside it).
    pub(crate) fn from_storage_layout(storage: Storage, layout: Layout) -> Tensor {
        Tensor::from_parts(Arc::new(storage), layout)
    }

    /// A view of the same buffer with another layout, without history.
    pub(crate) fn view_as_layout(&self, layout: Layout) -> Tensor {
        Tensor::from_parts(self.0.storage.clone(), layout)
    }

    /// A tensor with the given elements (row-major) and shape.
    ///
    /// Errors: `DataLength` if `data.len()` differs from the shape's number of elements,
    /// `SizeOverflow` for shapes too large to address.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], (2, 2))?;
    /// assert_eq!(a.dims(), &[2, 2]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn from_vec<T: Element>(data: Vec<T>, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.checked_numel("from_vec")?;
        if n != data.len() {
            return Err(Error::DataLength { op: "from_vec", expected: n, got: data.len() });
        }
        Ok(Tensor::from_storage(Storage::from_host(Device::Cpu, T::into_host(data))?, shape))
    }

    /// Like [`Tensor::from_vec`], copying from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar<T: Element>(v: T) -> Tensor {
        Tensor::from_storage(Storage::host(T::into_host(vec![v])), Shape::from(()))
    }

    /// The unique id of this handle (leaves' gradients are keyed by it).
    pub fn id(&self) -> TensorId {
        self.0.id
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        self.0.layout.shape()
    }

    /// The dims.
    pub fn dims(&self) -> &[usize] {
        self.0.layout.dims()
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.0.layout.rank()
    }

    /// The number of dims (PyTorch's name).
    pub fn ndim(&self) -> usize {
        self.rank()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// The size of dim `dim` (negative counts from the end).
    pub fn size(&self, dim: isize) -> Result<usize> {
        let d = crate::shape::resolve_dim("size", dim, self.rank())?;
        Ok(self.dims().get(d).copied().unwrap_or(1))
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }

    /// The layout (shape, strides, offset).
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        self.0.layout.strides()
    }

    /// True if the elements are stored row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    pub(crate) fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }

    /// The buffer and the layout a kernel reads this tensor through.
    pub(crate) fn operand(&self) -> (&Storage, &Layout) {
        (&self.0.storage, &self.0.layout)
    }

    pub(crate) fn grad_fn(&self) -> Option<&GradFn> {
        self.0.grad_fn.as_ref()
    }

    /// True if gradients flow to this tensor: a leaf marked with
    /// [`Tensor::with_requires_grad`], or the result of an op on such tensors while grad
    /// mode is on.
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad
    }

    /// True if the tensor was not produced by a recorded op (PyTorch's `is_leaf`).
    pub fn is_leaf(&self) -> bool {
        self.0.grad_fn.is_none()
    }

    /// The name of the op that produced this tensor (`"mul"`, `"linalg.cholesky"`), if it
    /// was recorded.
    pub fn grad_fn_name(&self) -> Option<&'static str> {
        self.0.grad_fn.as_ref().map(|g| g.node.op.name())
    }

    /// A leaf handle to the same data that requires grad (or not).
    ///
    /// Errors: `UnsupportedDType` when asking grad of an integer or bool tensor,
    /// `NotDifferentiable` when called on a non-leaf (use [`Tensor::detach`] first, as in
    /// PyTorch).
    pub fn with_requires_grad(&self, requires_grad: bool) -> Result<Tensor> {
        if !self.is_leaf() {
            return Err(Error::NotDifferentiable {
                op: "requires_grad",
                reason: "only leaf tensors can change requires_grad; detach() first",
            });
        }
        if requires_grad && !self.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op: "requires_grad", dtype: self.dtype() });
        }
        Ok(self.with_grad_fn(None, requires_grad))
    }

    /// The same data without history: a new leaf that does not require grad.
    pub fn detach(&self) -> Tensor {
        self.view_as_layout(self.0.layout.clone())
    }

    /// The elements in row-major order as `T`.
    ///
    /// Errors: `DTypeMismatch` if `T` is not the tensor's element type (use
    /// [`Tensor::to_dtype`] or [`Tensor::to_vec_f64`]).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op: "to_vec", lhs: self.dtype(), rhs: T::DTYPE });
        }
        let h = self.0.storage.to_host(&self.0.layout)?;
        T::from_host(h).map_err(|h| Error::DTypeMismatch {
            op: "to_vec",
            lhs: h.dtype(),
            rhs: T::DTYPE,
        })
    }

    /// The buffer behind this tensor and the layout of its elements in it, borrowed:
    /// what the zero-copy views of the interop module are made of. `DTypeMismatch` (naming
    /// `op`) unless `T` is the tensor's element type; `Unsupported` on a device whose
    /// memory the host cannot read.
    #[cfg(any(feature = "ndarray", feature = "nalgebra", feature = "faer"))]
    pub(crate) fn host_parts<T: Element>(&self, op: &'static str) -> Result<(&[T], &Layout)> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op, lhs: self.dtype(), rhs: T::DTYPE });
        }
        let data = self
            .0
            .storage
            .host_slice::<T>()
            .ok_or(Error::Unsupported { op, device: self.device() })?;
        Ok((data, &self.0.layout))
    }

    /// A tensor owning `data`, its elements at `layout` (which the caller has checked to
    /// stay inside `data`): how an owned foreign buffer becomes a tensor without a copy.
    #[cfg(feature = "ndarray")]
    pub(crate) fn from_vec_layout<T: Element>(data: Vec<T>, layout: Layout) -> Tensor {
        Tensor::from_storage_layout(Storage::host(T::into_host(data)), layout)
    }

    /// The elements in row-major order converted to `f64` (real parts of complex values).
    pub fn to_vec_f64(&self) -> Vec<f64> {
        // the CPU's read cannot fail; a device whose read can fail needs this to return
        // a Result (an API change then), not an empty vector
        self.0.storage.to_host_f64(&self.0.layout).unwrap_or_default()
    }

    /// The single element of a one-element tensor.
    ///
    /// Errors: `BadShape` if the tensor has more or fewer than one element;
    /// `DTypeMismatch` as in [`Tensor::to_vec`].
    pub fn item<T: Element>(&self) -> Result<T> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DTypeMismatch { op: "item", lhs: self.dtype(), rhs: T::DTYPE });
        }
        if self.numel() != 1 {
            return Err(Error::BadShape {
                op: "item",
                expected: "a tensor with one element",
                got: self.shape().clone(),
            });
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// This tensor if its elements are its buffer's, contiguous from offset 0 (what a
    /// kernel reads as a plain array: pivots, per-matrix scales), else a contiguous copy;
    /// without history either way.
    pub(crate) fn packed(&self) -> Result<Tensor> {
        let l = &self.0.layout;
        if l.is_contiguous() && l.offset() == 0 {
            Ok(self.detach())
        } else {
            Ok(Tensor::from_storage(self.contiguous_storage()?, self.shape().clone()))
        }
    }

    /// A contiguous copy of the elements in a fresh buffer (no history).
    pub(crate) fn contiguous_storage(&self) -> Result<Storage> {
        self.0.storage.copy_strided(&self.0.layout)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor {{ shape: {}, dtype: {}, strides: {:?}, requires_grad: {}, grad_fn: {:?} }}",
            self.shape(),
            self.dtype(),
            self.strides(),
            self.requires_grad(),
            self.grad_fn_name()
        )
    }
}
