//! Views: ops that change only the layout, sharing the buffer. Each is differentiable:
//! reshape and permute invert themselves, expand sums back (the one broadcasting rule),
//! and strided selections (narrow, select, slice, diagonal) scatter their cotangent into
//! zeros of the input's shape.

use super::Tensor;
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{resolve_dim, resolve_dims, Shape};

#[derive(Debug)]
struct Reshape;

impl Op for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    // y = reshape(x)  ⇒  gx = reshape(gy, shape(x))
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(g.reshape(cx.input(0).shape().clone())?)])
    }
    // linear: ẏ = reshape(ẋ)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.reshape(cx.output(0).shape().clone())?)])
    }
}

#[derive(Debug)]
struct Permute {
    perm: Vec<usize>,
}

impl Op for Permute {
    fn name(&self) -> &'static str {
        "permute"
    }
    // y = permute(x, p)  ⇒  gx = permute(gy, p⁻¹)
    fn vjp(&self, _cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let mut inv = vec![0isize; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            inv[p] = i as isize;
        }
        Ok(vec![Some(g.permute(&inv)?)])
    }
    fn jvp(&self, _cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        let perm: Vec<isize> = self.perm.iter().map(|&p| p as isize).collect();
        Ok(vec![Some(t.permute(&perm)?)])
    }
}

#[derive(Debug)]
struct Expand;

impl Op for Expand {
    fn name(&self) -> &'static str {
        "expand"
    }
    // y = expand(x)  ⇒  gx = sum_to(gy, shape(x)) (PyTorch: at::sum_to)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(g.sum_to(cx.input(0).shape())?)])
    }
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.broadcast_to(cx.output(0).shape().clone())?)])
    }
}

/// A strided selection of the input; `rel` is the view's layout over a contiguous buffer
/// of the input's shape, starting at offset 0.
#[derive(Debug)]
struct StridedView {
    name: &'static str,
    rel: Layout,
}

impl Op for StridedView {
    fn name(&self) -> &'static str {
        self.name
    }
    // y = x[view]  ⇒  gx = zeros(shape(x)) with gy added at the view's positions
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(g.view_scatter(&self.rel, cx.input(0).shape())?)])
    }
    fn jvp(&self, _cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.strided_rel(self.name, &self.rel)?)])
    }
}

/// The adjoint of [`StridedView`]: zeros of `base` with the input added at `rel`.
#[derive(Debug)]
struct ViewScatter {
    rel: Layout,
}

impl Op for ViewScatter {
    fn name(&self) -> &'static str {
        "view_scatter"
    }
    // y = scatter(x)  ⇒  gx = gy[view]
    fn vjp(&self, _cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(g.strided_rel("view_scatter.backward", &self.rel)?)])
    }
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.view_scatter(&self.rel, cx.output(0).shape())?)])
    }
}

#[derive(Debug)]
struct Contiguous;

impl Op for Contiguous {
    fn name(&self) -> &'static str {
        "contiguous"
    }
    fn vjp(&self, _cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![g[0].clone()])
    }
    fn jvp(&self, _cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![t[0].clone()])
    }
}

impl Tensor {
    /// Applies a strided view built by `f` both to the actual layout and to a contiguous
    /// layout of the same shape (for the VJP).
    fn strided_view(&self, name: &'static str, f: impl Fn(&Layout) -> Layout) -> Result<Tensor> {
        let out = self.view_as_layout(f(self.layout()));
        if !crate::autograd::node::should_record(&[self]) {
            return Ok(out);
        }
        let rel = f(&Layout::contiguous(self.shape().clone()));
        record1(StridedView { name, rel }, &[self], out, false)
    }

    /// The view `rel` (a layout over a contiguous buffer of this tensor's shape).
    pub(crate) fn strided_rel(&self, name: &'static str, rel: &Layout) -> Result<Tensor> {
        let c = self.contiguous()?;
        let base = c.layout().offset();
        let actual = Layout::new(rel.shape().clone(), rel.strides().to_vec(), rel.offset() + base);
        let out = c.view_as_layout(actual);
        record1(StridedView { name, rel: rel.clone() }, &[&c], out, false)
    }

    /// Zeros of shape `base` with this tensor added at the positions of `rel`.
    pub(crate) fn view_scatter(&self, rel: &Layout, base: &Shape) -> Result<Tensor> {
        if rel.dims() != self.dims() {
            return Err(Error::Internal { op: "view_scatter", reason: "shape" });
        }
        let s = self.storage().scatter_strided(self.layout(), base.numel(), rel, true)?;
        let out = Tensor::from_storage(s, base.clone());
        record1(ViewScatter { rel: rel.clone() }, &[self], out, false)
    }

    /// The same elements with another shape (`torch.reshape`): a view when the strides
    /// allow it, else a copy.
    ///
    /// Errors: `ShapeMismatch` if the number of elements differs.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let a = Tensor::arange(0.0, 6.0, 1.0, DType::F64)?.reshape((2, 3))?;
    /// assert_eq!(a.dims(), &[2, 3]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if shape.checked_numel("reshape")? != self.numel() {
            return Err(Error::ShapeMismatch {
                op: "reshape",
                lhs: self.shape().clone(),
                rhs: shape,
            });
        }
        if shape == *self.shape() {
            return Ok(self.clone());
        }
        let out = match self.layout().reshape(&shape) {
            Some(l) => self.view_as_layout(l),
            None => Tensor::from_storage(self.contiguous_storage()?, shape),
        };
        record1(Reshape, &[self], out, false)
    }

    /// Like [`Tensor::reshape`] with one dim given as `-1` and inferred (PyTorch's
    /// `reshape(-1, n)`).
    ///
    /// Errors: `InvalidArgument` for more than one `-1` or another negative size;
    /// `ShapeMismatch` if no size fits.
    pub fn reshape_infer(&self, dims: &[isize]) -> Result<Tensor> {
        const OP: &str = "reshape";
        let mut known = 1usize;
        let mut infer = None;
        for (i, &d) in dims.iter().enumerate() {
            if d == -1 {
                if infer.replace(i).is_some() {
                    return Err(Error::InvalidArgument {
                        op: OP,
                        arg: "shape",
                        reason: "only one dimension can be inferred",
                    });
                }
            } else if d < 0 {
                return Err(Error::InvalidArgument {
                    op: OP,
                    arg: "shape",
                    reason: "invalid negative size",
                });
            } else {
                known = known
                    .checked_mul(d as usize)
                    .ok_or(Error::SizeOverflow { op: OP, shape: vec![] })?;
            }
        }
        let mut out: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
        if let Some(i) = infer {
            if known == 0 || !self.numel().is_multiple_of(known) {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: self.shape().clone(),
                    rhs: Shape::new(out),
                });
            }
            out[i] = self.numel() / known;
        }
        self.reshape(out)
    }

    /// A view with another shape (`torch.Tensor.view`); unlike [`Tensor::reshape`] it never
    /// copies.
    ///
    /// Errors: `ShapeMismatch` for a different number of elements; `BadShape` if the
    /// strides do not allow a view (call [`Tensor::contiguous`] or `reshape`).
    pub fn view(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if shape.checked_numel("view")? != self.numel() {
            return Err(Error::ShapeMismatch { op: "view", lhs: self.shape().clone(), rhs: shape });
        }
        if self.layout().reshape(&shape).is_none() {
            return Err(Error::BadShape {
                op: "view",
                expected: "strides compatible with the new shape (use reshape)",
                got: self.shape().clone(),
            });
        }
        self.reshape(shape)
    }

    /// Reorders dims: dim `i` of the result is dim `dims[i]` of `self` (`torch.permute`).
    ///
    /// Errors: `InvalidArgument` unless `dims` is a permutation of the dims.
    pub fn permute(&self, dims: &[isize]) -> Result<Tensor> {
        const OP: &str = "permute";
        if dims.len() != self.rank() {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "dims",
                reason: "number of dims does not match the tensor's rank",
            });
        }
        let perm = resolve_dims(OP, dims, self.rank())?;
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.clone());
        }
        let out = self.view_as_layout(self.layout().permute(&perm));
        record1(Permute { perm }, &[self], out, false)
    }

    /// Swaps two dims (`torch.transpose`), as a view.
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Tensor> {
        let a = resolve_dim("transpose", dim0, self.rank())?;
        let b = resolve_dim("transpose", dim1, self.rank())?;
        if a == b || self.rank() < 2 {
            return Ok(self.clone());
        }
        let mut perm: Vec<isize> = (0..self.rank() as isize).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// The transpose of a matrix, or the tensor itself for 0-d and 1-d (`torch.Tensor.t`).
    ///
    /// Errors: `BadShape` for more than 2 dims.
    pub fn t(&self) -> Result<Tensor> {
        if self.rank() > 2 {
            return Err(Error::BadShape {
                op: "t",
                expected: "a tensor of at most 2 dims",
                got: self.shape().clone(),
            });
        }
        self.transpose(0, -1)
    }

    /// The transpose of the last two dims (`torch.Tensor.mT`), as a view.
    ///
    /// Errors: `BadShape` for fewer than 2 dims.
    #[allow(non_snake_case)]
    pub fn mT(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::BadShape {
                op: "mT",
                expected: "a tensor of at least 2 dims",
                got: self.shape().clone(),
            });
        }
        self.transpose(-2, -1)
    }

    /// The conjugate transpose of the last two dims (`torch.Tensor.mH`,
    /// `torch.adjoint`); for real dtypes the same view as [`Tensor::mT`], for complex ones
    /// the conjugate computed (not a lazy view). Gradient: the conjugate transpose of the
    /// cotangent.
    #[allow(non_snake_case)]
    pub fn mH(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::BadShape {
                op: "mH",
                expected: "a tensor of at least 2 dims",
                got: self.shape().clone(),
            });
        }
        self.mT()?.conj()
    }

    /// Broadcasts to `shape` without copying (`torch.broadcast_to`).
    ///
    /// Errors: `ShapeMismatch` if the shapes are not broadcast-compatible.
    pub fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if shape == *self.shape() {
            return Ok(self.clone());
        }
        let ok = shape.rank() >= self.rank()
            && self
                .dims()
                .iter()
                .rev()
                .zip(shape.dims().iter().rev())
                .all(|(&a, &b)| a == b || a == 1);
        if !ok {
            return Err(Error::ShapeMismatch {
                op: "expand",
                lhs: self.shape().clone(),
                rhs: shape,
            });
        }
        shape.checked_numel("expand")?;
        let out = self.view_as_layout(self.layout().broadcast_to(&shape));
        record1(Expand, &[self], out, false)
    }

    /// Broadcasts to `sizes`, where `-1` keeps a dim's size (`torch.Tensor.expand`).
    pub fn expand(&self, sizes: &[isize]) -> Result<Tensor> {
        let k = sizes.len();
        if k < self.rank() {
            return Err(Error::InvalidArgument {
                op: "expand",
                arg: "sizes",
                reason: "fewer sizes than dims",
            });
        }
        let mut shape = Vec::with_capacity(k);
        for (i, &s) in sizes.iter().enumerate() {
            if s == -1 {
                if i + self.rank() < k {
                    return Err(Error::InvalidArgument {
                        op: "expand",
                        arg: "sizes",
                        reason: "-1 is not allowed in a new leading dim",
                    });
                }
                shape.push(self.dims()[i + self.rank() - k]);
            } else if s < 0 {
                return Err(Error::InvalidArgument {
                    op: "expand",
                    arg: "sizes",
                    reason: "negative size",
                });
            } else {
                shape.push(s as usize);
            }
        }
        self.broadcast_to(shape)
    }

    /// The elements `start..start+length` of `dim` (`torch.narrow`), as a view.
    ///
    /// Errors: `DimOutOfRange`; `IndexOutOfRange` if the range leaves the dim.
    pub fn narrow(&self, dim: isize, start: usize, length: usize) -> Result<Tensor> {
        const OP: &str = "narrow";
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let d = resolve_dim(OP, dim, self.rank())?;
        let size = self.dims()[d];
        if start.checked_add(length).is_none_or(|e| e > size) {
            return Err(Error::IndexOutOfRange {
                op: OP,
                index: (start + length.min(usize::MAX - start)) as i64,
                size,
            });
        }
        if start == 0 && length == size {
            return Ok(self.clone());
        }
        self.strided_view(OP, |l| l.slice(d, start, length, 1))
    }

    /// Python's `x[..., start:end:step, ...]` on `dim` (clamped like Python slices;
    /// negative bounds count from the end), as a view.
    ///
    /// Errors: `InvalidArgument` if `step` is not positive.
    pub fn slice(&self, dim: isize, start: isize, end: isize, step: usize) -> Result<Tensor> {
        const OP: &str = "slice";
        if step == 0 {
            return Err(Error::InvalidArgument { op: OP, arg: "step", reason: "must be positive" });
        }
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let d = resolve_dim(OP, dim, self.rank())?;
        let n = self.dims()[d] as isize;
        let clamp = |i: isize| if i < 0 { (i + n).max(0) } else { i.min(n) };
        let (s, e) = (clamp(start), clamp(end));
        let len = if e > s { ((e - s) as usize).div_ceil(step) } else { 0 };
        self.strided_view(OP, |l| l.slice(d, s as usize, len, step))
    }

    /// Index `index` of `dim`, removing the dim (`torch.select`), as a view.
    ///
    /// Errors: `DimOutOfRange`; `IndexOutOfRange`.
    pub fn select(&self, dim: isize, index: isize) -> Result<Tensor> {
        const OP: &str = "select";
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let d = resolve_dim(OP, dim, self.rank())?;
        let n = self.dims()[d] as isize;
        if index < -n || index >= n {
            return Err(Error::IndexOutOfRange { op: OP, index: index as i64, size: n as usize });
        }
        let i = if index < 0 { index + n } else { index } as usize;
        self.strided_view(OP, |l| l.select(d, i))
    }

    /// Inserts a dim of size 1 (`torch.unsqueeze`; `dim` in `[-rank-1, rank]`).
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim("unsqueeze", dim, self.rank() + 1)?;
        let mut dims = self.dims().to_vec();
        dims.insert(d, 1);
        self.reshape(dims)
    }

    /// Removes `dim` if its size is 1 (`torch.squeeze(dim)`); otherwise returns `self`.
    pub fn squeeze_dim(&self, dim: isize) -> Result<Tensor> {
        let d = resolve_dim("squeeze", dim, self.rank())?;
        if self.rank() == 0 || self.dims()[d] != 1 {
            return Ok(self.clone());
        }
        let mut dims = self.dims().to_vec();
        dims.remove(d);
        self.reshape(dims)
    }

    /// Removes every dim of size 1 (`torch.squeeze()`).
    pub fn squeeze(&self) -> Result<Tensor> {
        let dims: Vec<usize> = self.dims().iter().copied().filter(|&d| d != 1).collect();
        self.reshape(dims)
    }

    /// Merges dims `start_dim..=end_dim` into one (`torch.flatten`).
    pub fn flatten(&self, start_dim: isize, end_dim: isize) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape(1);
        }
        let s = resolve_dim("flatten", start_dim, self.rank())?;
        let e = resolve_dim("flatten", end_dim, self.rank())?;
        if s > e {
            return Err(Error::InvalidArgument {
                op: "flatten",
                arg: "start_dim",
                reason: "start_dim must not come after end_dim",
            });
        }
        let d = self.dims();
        let mut dims = d[..s].to_vec();
        dims.push(d[s..=e].iter().product());
        dims.extend_from_slice(&d[e + 1..]);
        self.reshape(dims)
    }

    /// The diagonal of dims `dim1`, `dim2` with an offset (`torch.diagonal`): a view whose
    /// last dim is the diagonal. `offset > 0` is above the main diagonal.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let a = Tensor::arange(0.0, 9.0, 1.0, DType::F64)?.reshape((3, 3))?;
    /// assert_eq!(a.diagonal(0, 0, 1)?.to_vec::<f64>()?, vec![0.0, 4.0, 8.0]);
    /// assert_eq!(a.diagonal(1, 0, 1)?.to_vec::<f64>()?, vec![1.0, 5.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Tensor> {
        const OP: &str = "diagonal";
        if self.rank() < 2 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a tensor of at least 2 dims",
                got: self.shape().clone(),
            });
        }
        let a = resolve_dim(OP, dim1, self.rank())?;
        let b = resolve_dim(OP, dim2, self.rank())?;
        if a == b {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "dim2",
                reason: "diagonal dimensions cannot be identical",
            });
        }
        self.strided_view(OP, |l| l.diagonal(offset, a, b))
    }

    /// A row-major contiguous tensor with the same elements: `self` when already
    /// contiguous, else a copy (`torch.Tensor.contiguous`).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let out = Tensor::from_storage(self.contiguous_storage()?, self.shape().clone());
        record1(Contiguous, &[self], out, false)
    }

    /// Sums `self` down to `shape` (the adjoint of broadcasting `shape` to `self`'s shape):
    /// leading extra dims and dims where `shape` has 1 are summed.
    ///
    /// Errors: `ShapeMismatch` if `shape` does not broadcast to `self`'s shape.
    pub fn sum_to(&self, shape: &Shape) -> Result<Tensor> {
        if shape == self.shape() {
            return Ok(self.clone());
        }
        let n = self.rank();
        let k = shape.rank();
        if k > n {
            return Err(Error::ShapeMismatch {
                op: "sum_to",
                lhs: self.shape().clone(),
                rhs: shape.clone(),
            });
        }
        let mut dims = Vec::new();
        for i in 0..n {
            if i < n - k {
                dims.push(i as isize);
            } else {
                let t = shape.dims()[i - (n - k)];
                if t == 1 && self.dims()[i] != 1 {
                    dims.push(i as isize);
                } else if t != self.dims()[i] {
                    return Err(Error::ShapeMismatch {
                        op: "sum_to",
                        lhs: self.shape().clone(),
                        rhs: shape.clone(),
                    });
                }
            }
        }
        let s = if dims.is_empty() { self.clone() } else { self.sum_dims(&dims, true)? };
        s.reshape(shape.clone())
    }
}
