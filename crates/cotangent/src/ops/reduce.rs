//! Reductions over dims: sum, mean, prod, amax, amin (primitives with their VJPs) and
//! logsumexp, var, std (composites that inherit their gradients), and the 2-norm of all
//! elements.
//!
//! `dims` follow PyTorch: negative dims count from the end, an empty list reduces every
//! dim, `keepdim` keeps reduced dims with size 1.

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::ReduceOp;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{resolve_dims, Dims, Shape};
use crate::tensor::Tensor;

/// The resolved dims (all of them for an empty list), the keepdim shape and the output
/// shape.
fn plan(
    op: &'static str,
    x: &Tensor,
    dims: &[isize],
    keepdim: bool,
) -> Result<(Vec<usize>, Shape, Shape)> {
    let mut d =
        if dims.is_empty() { (0..x.rank()).collect() } else { resolve_dims(op, dims, x.rank())? };
    if x.rank() == 0 {
        d.clear();
    }
    let keep: Dims =
        x.dims().iter().enumerate().map(|(i, &n)| if d.contains(&i) { 1 } else { n }).collect();
    let out: Dims = if keepdim {
        keep.clone()
    } else {
        x.dims().iter().enumerate().filter(|(i, _)| !d.contains(i)).map(|(_, &n)| n).collect()
    };
    Ok((d, Shape::of(keep), Shape::of(out)))
}

/// A reduction op; `keep` is the keepdim shape, used to broadcast cotangents back.
#[derive(Debug)]
struct Reduce {
    op: ReduceOp,
    dims: Vec<usize>,
    keep: Shape,
}

impl Op for Reduce {
    fn name(&self) -> &'static str {
        match self.op {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "amax",
            ReduceOp::Min => "amin",
        }
    }

    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let x = cx.input(0);
        // y = Σ x  ⇒  gx = broadcast(gy). A cotangent that already broadcasts to x (the
        // keepdim shape, or a 0-d one from a full reduction) needs no reshape.
        if self.op == ReduceOp::Sum && (g.rank() == 0 || g.dims() == self.keep.dims()) {
            return Ok(vec![Some(g.broadcast_to(x.shape().clone())?)]);
        }
        let g = g.reshape(self.keep.clone())?;
        let gx = match self.op {
            ReduceOp::Sum => g.broadcast_to(x.shape().clone())?,
            // y = max x  ⇒  gx = gy · 1[x = y] / #ties (ties share evenly, as PyTorch's amax)
            ReduceOp::Max | ReduceOp::Min => {
                let y = cx.output(0)?.reshape(self.keep.clone())?;
                let mask = x.eq(&y)?.to_dtype(x.dtype())?;
                let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
                let count = mask.sum_dims(&dims, true)?;
                g.div(&count)?.mul(&mask)?
            }
            // y = Π x  ⇒  gx_i = gy · conj(Π_{j≠i} x_j) (conj: complex x, PyTorch's
            // convention; the identity on real x)
            ReduceOp::Prod => g.mul(
                &prod_others(x, &self.dims, &cx.output(0)?.reshape(self.keep.clone())?)?.conj()?,
            )?,
        };
        Ok(vec![Some(gx)])
    }

    // Linear for sum; for amax/amin the mean of the tangents over the ties (PyTorch's
    // amaxamin_jvp); for prod Σ_i ẋ_i Π_{j≠i} x_j (holomorphic: no conjugate).
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        let x = cx.input(0);
        let y = cx.output(0);
        let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        let dy = match self.op {
            ReduceOp::Sum => t.sum_dims(&dims, true)?,
            ReduceOp::Max | ReduceOp::Min => {
                let mask = x.eq(&y.reshape(self.keep.clone())?)?.to_dtype(x.dtype())?;
                t.mul(&mask)?.sum_dims(&dims, true)?.div(&mask.sum_dims(&dims, true)?)?
            }
            ReduceOp::Prod => {
                let others = prod_others(x, &self.dims, &y.reshape(self.keep.clone())?)?;
                t.mul(&others)?.sum_dims(&dims, true)?
            }
        };
        Ok(vec![Some(dy.reshape(y.shape().clone())?)])
    }
}

/// `Π_{j≠i} x_j` over the reduced dims, for every element `i`: `y / x` when no element
/// is zero, else the product with `x_i` replaced by 1 (O(n²) in the reduced size, and
/// differentiable again, like every branch here). Whether an element is zero is read
/// back to choose the branch, where PyTorch's `prod_backward` synchronises too (its
/// `(input == 0).nonzero()`).
fn prod_others(x: &Tensor, dims: &[usize], y_keep: &Tensor) -> Result<Tensor> {
    let has_zero =
        if x.dtype().is_complex() { x.abs()? } else { x.clone() }.to_vec_f64().contains(&0.0);
    if !has_zero {
        return y_keep.div(x);
    }
    // move reduced dims last and flatten them: (..., n)
    let rank = x.rank();
    let kept: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
    let perm: Vec<isize> = kept.iter().chain(dims).map(|&d| d as isize).collect();
    let xp = x.permute(&perm)?;
    let kept_dims: Vec<usize> = kept.iter().map(|&d| x.dims()[d]).collect();
    let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
    let mut flat = kept_dims.clone();
    flat.push(n);
    let x2 = xp.reshape(flat.clone())?;
    // rows: x with entry i replaced by 1, then the product of each row
    let mut sq = kept_dims.clone();
    sq.extend([n, n]);
    let rows = x2.unsqueeze(-2)?.broadcast_to(sq)?;
    let eye = Tensor::eye(n, DType::Bool)?;
    let ones = Tensor::ones((), x.dtype())?;
    let others = Tensor::where_cond(&eye, &ones, &rows)?.prod_dims(&[-1], false)?;
    // back to x's layout
    let mut permuted_shape = kept_dims;
    permuted_shape.extend(dims.iter().map(|&d| x.dims()[d]));
    let mut inv = vec![0isize; rank];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as isize;
    }
    others.reshape(permuted_shape)?.permute(&inv)
}

fn reduce(
    x: &Tensor,
    op: ReduceOp,
    dims: &[isize],
    keepdim: bool,
    name: &'static str,
) -> Result<Tensor> {
    // complex numbers have no order
    if x.dtype().is_complex() && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        return Err(Error::UnsupportedDType { op: name, dtype: x.dtype() });
    }
    let (d, keep, out_shape) = plan(name, x, dims, keepdim)?;
    // reducing an empty dim of a tensor with huge other dims gives a huge result
    out_shape.checked_numel(name)?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && d.iter().any(|&i| x.dims()[i] == 0) {
        return Err(Error::BadShape {
            op: name,
            expected: "non-empty reduced dims",
            got: x.shape().clone(),
        });
    }
    let src = if op == ReduceOp::Sum && !x.dtype().is_differentiable() && x.dtype() != DType::I64 {
        x.to_dtype(DType::I64)?
    } else {
        x.clone()
    };
    let s = src.storage().reduce(src.layout(), &d, op)?;
    let out = Tensor::from_storage(s, out_shape);
    let save = matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod);
    record1(Reduce { op, dims: d, keep }, &[&src], out, save)
}

impl Tensor {
    /// The sum of all elements, a 0-d tensor (`torch.sum`). Integer and bool tensors sum
    /// to `I64`; complex tensors sum to their dtype.
    pub fn sum(&self) -> Result<Tensor> {
        reduce(self, ReduceOp::Sum, &[], false, "sum")
    }

    /// The sum over `dims` (`torch.sum(dim, keepdim)`; `&[]` sums everything).
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let a = Tensor::arange(0.0, 6.0, 1.0, DType::F64)?.reshape((2, 3))?;
    /// assert_eq!(a.sum_dims(&[1], false)?.to_vec::<f64>()?, vec![3.0, 12.0]);
    /// assert_eq!(a.sum_dims(&[0], true)?.dims(), &[1, 3]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn sum_dims(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Sum, dims, keepdim, "sum")
    }

    /// The mean of all elements (`torch.mean`; floating and complex dtypes; NaN for no
    /// elements).
    pub fn mean(&self) -> Result<Tensor> {
        self.mean_dims(&[], false)
    }

    /// The mean over `dims` (`torch.mean(dim, keepdim)`).
    pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_differentiable() {
            return Err(Error::UnsupportedDType { op: "mean", dtype: self.dtype() });
        }
        let (d, _, _) = plan("mean", self, dims, keepdim)?;
        let n: usize = d.iter().map(|&i| self.dims()[i]).product();
        self.sum_dims(dims, keepdim)?.div_scalar(n as f64)
    }

    /// The product of all elements (`torch.prod`). Its gradient is exact with zeros
    /// (`Π_{j≠i} x_j`).
    pub fn prod(&self) -> Result<Tensor> {
        if let Some(c) = crate::autocast::fp32(&[self])? {
            return c[0].prod();
        }
        reduce(self, ReduceOp::Prod, &[], false, "prod")
    }

    /// The product over `dims` (PyTorch's `prod` takes one dim; several are allowed here).
    pub fn prod_dims(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if let Some(c) = crate::autocast::fp32(&[self])? {
            return c[0].prod_dims(dims, keepdim);
        }
        reduce(self, ReduceOp::Prod, dims, keepdim, "prod")
    }

    /// The maximum over `dims` (`torch.amax`; NaN propagates). Tied maxima share the
    /// gradient evenly.
    ///
    /// Errors: `BadShape` if a reduced dim is empty.
    pub fn amax(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Max, dims, keepdim, "amax")
    }

    /// The minimum over `dims` (`torch.amin`). Tied minima share the gradient evenly.
    pub fn amin(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        reduce(self, ReduceOp::Min, dims, keepdim, "amin")
    }

    /// `log Σ exp(x)` over `dims`, computed stably by shifting by the maximum
    /// (`torch.logsumexp`). Its gradient is the softmax over `dims`. Integer and bool
    /// input is computed in f32, as PyTorch does.
    ///
    /// Errors: `UnsupportedDType` for complex input (PyTorch takes it).
    pub fn logsumexp(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if matches!(self.dtype(), DType::I64 | DType::Bool) {
            return self.to_dtype(DType::F32)?.logsumexp(dims, keepdim);
        }
        if !self.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType { op: "logsumexp", dtype: self.dtype() });
        }
        let (_, _, out) = plan("logsumexp", self, dims, keepdim)?;
        if self.numel() == 0 {
            // log(0) = -inf, as PyTorch
            return self.sum_dims(dims, keepdim)?.log();
        }
        let m = self.amax(dims, true)?.detach();
        // an infinite max (all -inf, or +inf present) shifts by 0 instead
        let finite = m.abs()?.lt_scalar(f64::INFINITY)?;
        let m = Tensor::where_cond(&finite, &m, &m.zeros_like()?)?;
        let s = self.sub(&m)?.exp()?.sum_dims(dims, true)?.log()?.add(&m)?;
        if keepdim {
            Ok(s)
        } else {
            s.reshape(out)
        }
    }

    /// The variance over `dims` with Bessel's `correction` (`torch.var(dim, correction,
    /// keepdim)`; PyTorch's default correction is 1): `Σ (x - mean)² / max(N - correction, 0)`.
    pub fn var(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType { op: "var", dtype: self.dtype() });
        }
        let (d, _, _) = plan("var", self, dims, keepdim)?;
        let n: usize = d.iter().map(|&i| self.dims()[i]).product();
        let dev = self.sub(&self.mean_dims(dims, true)?)?;
        let denom = (n as f64 - correction).max(0.0);
        dev.square()?.sum_dims(dims, keepdim)?.div_scalar(denom)
    }

    /// The standard deviation over `dims` (`torch.std`): `sqrt(var)`. Its gradient is
    /// infinite or NaN where the deviation is zero, as in PyTorch.
    pub fn std(&self, dims: &[isize], correction: f64, keepdim: bool) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType { op: "std", dtype: self.dtype() });
        }
        plan("std", self, dims, keepdim)?;
        self.var(dims, correction, keepdim)?.sqrt()
    }

    /// The 2-norm of all elements, `sqrt(Σ x²)` (`torch.norm()`), a 0-d tensor. Its
    /// gradient `x / ‖x‖` is taken as 0 at `x = 0` (PyTorch's subgradient).
    pub fn norm(&self) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(Error::UnsupportedDType { op: "norm", dtype: self.dtype() });
        }
        let sq = {
            let _g = crate::autograd::no_grad();
            self.square()?.sum()?.sqrt()?
        };
        record1(Norm2, &[self], sq, true)
    }
}

#[derive(Debug)]
struct Norm2;

impl Op for Norm2 {
    fn name(&self) -> &'static str {
        "norm"
    }
    // y = ‖x‖₂  ⇒  gx = g x / y, and 0 where y = 0
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let x = cx.input(0);
        let y = cx.output(0)?;
        let zero = y.eq_scalar(0.0)?;
        let safe = Tensor::where_cond(&zero, &y.ones_like()?, &y)?;
        let gx = x.mul(&g.div(&safe)?)?;
        Ok(vec![Some(Tensor::where_cond(&zero, &gx.zeros_like()?, &gx)?)])
    }
    // ẏ = ⟨x, ẋ⟩ / y, and 0 where y = 0
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        let y = cx.output(0);
        let zero = y.eq_scalar(0.0)?;
        let safe = Tensor::where_cond(&zero, &y.ones_like()?, y)?;
        let dy = cx.input(0).mul(t)?.sum()?.div(&safe)?;
        Ok(vec![Some(Tensor::where_cond(&zero, &dy.zeros_like()?, &dy)?)])
    }
}
