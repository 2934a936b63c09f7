//! Ops that rearrange elements: cat, stack, split, chunk, flip, pad, repeat.

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{resolve_dim, resolve_dims, Shape};
use crate::tensor::Tensor;

#[derive(Debug)]
struct Cat {
    dim: usize,
}

impl Op for Cat {
    fn name(&self) -> &'static str {
        "cat"
    }
    // y = [x₀; x₁; …] along dim  ⇒  gxᵢ = the matching slice of gy
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let n = cx.node.inputs.len();
        let Some(g) = &g[0] else { return Ok(vec![None; n]) };
        let mut start = 0;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let len = cx.input(i).dims()[self.dim];
            out.push(if cx.needs_input_grad(i) {
                Some(g.narrow(self.dim as isize, start, len)?)
            } else {
                None
            });
            start += len;
        }
        Ok(out)
    }
    // linear: ẏ = [ẋ₀; ẋ₁; …], zeros for inputs without a tangent
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let parts = t
            .iter()
            .enumerate()
            .map(|(i, x)| x.clone().map_or_else(|| cx.input(i).zeros_like(), Ok))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Tensor> = parts.iter().collect();
        Ok(vec![Some(Tensor::cat(&refs, self.dim as isize)?)])
    }
}

#[derive(Debug)]
struct Flip {
    dims: Vec<usize>,
}

impl Op for Flip {
    fn name(&self) -> &'static str {
        "flip"
    }
    // flip is its own inverse and adjoint
    fn vjp(&self, _cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        Ok(vec![Some(g.flip(&dims)?)])
    }
    fn jvp(&self, _cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        Ok(vec![Some(t.flip(&dims)?)])
    }
}

impl Tensor {
    /// Concatenates tensors along `dim` (`torch.cat`). Shapes must agree except in `dim`;
    /// dtypes are promoted to a common one (`DType::promote`); 1-d empty tensors are skipped
    /// but their dtypes count, as in PyTorch.
    ///
    /// Errors: `InvalidArgument` for an empty list; `ShapeMismatch`; `DimOutOfRange`.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let a = Tensor::ones((1, 2), DType::F64)?;
    /// let b = Tensor::zeros((2, 2), DType::F64)?;
    /// assert_eq!(Tensor::cat(&[&a, &b], 0)?.dims(), &[3, 2]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn cat(tensors: &[&Tensor], dim: isize) -> Result<Tensor> {
        const OP: &str = "cat";
        let parts: Vec<&Tensor> =
            tensors.iter().copied().filter(|t| !(t.rank() == 1 && t.numel() == 0)).collect();
        let Some(first) = parts.first().copied().or(tensors.first().copied()) else {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "tensors",
                reason: "expected a non-empty list of tensors",
            });
        };
        // the skipped empty tensors' dtypes count, as in PyTorch
        let dtype = tensors.iter().fold(first.dtype(), |a, t| DType::promote(a, t.dtype()));
        if parts.is_empty() {
            return if first.dtype() == dtype { Ok(first.clone()) } else { first.to_dtype(dtype) };
        }
        if first.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "tensors of at least 1 dim",
                got: first.shape().clone(),
            });
        }
        let d = resolve_dim(OP, dim, first.rank())?;
        let mut total = 0usize;
        let mut cast = Vec::with_capacity(parts.len());
        for t in &parts {
            let same = t.rank() == first.rank()
                && t.dims()
                    .iter()
                    .zip(first.dims())
                    .enumerate()
                    .all(|(i, (a, b))| i == d || a == b);
            if !same {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: first.shape().clone(),
                    rhs: t.shape().clone(),
                });
            }
            total += t.dims()[d];
            cast.push(if t.dtype() == dtype { (*t).clone() } else { t.to_dtype(dtype)? });
        }
        let mut out_dims = first.dims().to_vec();
        out_dims[d] = total;
        let out_shape = Shape::new(out_dims);
        out_shape.checked_numel(OP)?;
        let kparts: Vec<(&Storage, &Layout)> = cast.iter().map(Tensor::operand).collect();
        let s = Storage::cat(&kparts, d, &out_shape)?;
        let out = Tensor::from_storage(s, out_shape);
        let refs: Vec<&Tensor> = cast.iter().collect();
        record1(Cat { dim: d }, &refs, out, false)
    }

    /// Stacks tensors of one shape along a new dim (`torch.stack`).
    pub fn stack(tensors: &[&Tensor], dim: isize) -> Result<Tensor> {
        let Some(first) = tensors.first() else {
            return Err(Error::InvalidArgument {
                op: "stack",
                arg: "tensors",
                reason: "expected a non-empty list of tensors",
            });
        };
        let d = resolve_dim("stack", dim, first.rank() + 1)? as isize;
        let mut parts = Vec::with_capacity(tensors.len());
        for t in tensors {
            if t.dims() != first.dims() {
                return Err(Error::ShapeMismatch {
                    op: "stack",
                    lhs: first.shape().clone(),
                    rhs: t.shape().clone(),
                });
            }
            parts.push(t.unsqueeze(d)?);
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        Tensor::cat(&refs, d)
    }

    /// Splits into views of `split_size` along `dim` (the last may be smaller)
    /// (`torch.split` with an int).
    pub fn split(&self, split_size: usize, dim: isize) -> Result<Vec<Tensor>> {
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: "split",
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let d = resolve_dim("split", dim, self.rank())?;
        let n = self.dims()[d];
        if split_size == 0 && n > 0 {
            return Err(Error::InvalidArgument {
                op: "split",
                arg: "split_size",
                reason: "must be positive for a non-empty dim",
            });
        }
        if n == 0 {
            return Ok(vec![self.clone()]);
        }
        let sizes: Vec<usize> = (0..n).step_by(split_size).map(|s| split_size.min(n - s)).collect();
        self.split_with_sizes(&sizes, dim)
    }

    /// Splits into views with the given sizes along `dim` (`torch.split` with a list).
    ///
    /// Errors: `InvalidArgument` if the sizes do not add up to the dim's size.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim("split", dim, self.rank())?;
        if self.rank() == 0
            || sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s)) != Some(self.dims()[d])
        {
            return Err(Error::InvalidArgument {
                op: "split",
                arg: "split_size",
                reason: "sizes must add up to the size of the dim",
            });
        }
        let mut start = 0;
        let mut out = Vec::with_capacity(sizes.len());
        for &s in sizes {
            out.push(self.narrow(d as isize, start, s)?);
            start += s;
        }
        Ok(out)
    }

    /// Splits into `chunks` views of (nearly) equal size along `dim` (`torch.chunk`: each
    /// of size `ceil(n / chunks)`, so there may be fewer chunks).
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(Error::InvalidArgument {
                op: "chunk",
                arg: "chunks",
                reason: "must be positive",
            });
        }
        let d = resolve_dim("chunk", dim, self.rank())?;
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: "chunk",
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let n = self.dims()[d];
        self.split(n.div_ceil(chunks).max(1), dim)
    }

    /// Reverses the order of elements along `dims` (`torch.flip`), as a copy.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        let d = resolve_dims("flip", dims, self.rank())?;
        if self.rank() == 0 {
            return Ok(self.clone());
        }
        let s = self.storage().flip(self.layout(), &d)?;
        let out = Tensor::from_storage(s, self.shape().clone());
        record1(Flip { dims: d }, &[self], out, false)
    }

    /// Pads the last dims with zeros (`torch.nn.functional.pad`, mode `constant`, value
    /// 0): `pad = [left, right]` for the last dim, then `[top, bottom]` for the one before,
    /// and so on. Negative amounts crop, as in PyTorch.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let x = Tensor::ones((2, 2), DType::F64)?;
    /// assert_eq!(x.pad(&[1, 0, 0, 2])?.dims(), &[4, 3]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn pad(&self, pad: &[isize]) -> Result<Tensor> {
        const OP: &str = "nn.functional.pad";
        if !pad.len().is_multiple_of(2) || pad.len() / 2 > self.rank() {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "pad",
                reason: "needs a (left, right) pair per padded dim, at most one pair per dim",
            });
        }
        // crop first (negative pads), then pad (positive)
        let mut x = self.clone();
        let mut out_dims = self.dims().to_vec();
        let mut offsets = vec![0usize; self.rank()];
        for (k, pair) in pad.chunks(2).enumerate() {
            let d = self.rank() - 1 - k;
            let (l, r) = (pair[0], pair[1]);
            let n = x.dims()[d] as isize;
            let crop_l = l.saturating_neg().max(0);
            let crop_r = r.saturating_neg().max(0);
            if crop_l.saturating_add(crop_r) > n {
                return Err(Error::InvalidArgument {
                    op: OP,
                    arg: "pad",
                    reason: "cropping more than the dim's size",
                });
            }
            x = x.narrow(d as isize, crop_l as usize, (n - crop_l - crop_r) as usize)?;
            let (pl, pr) = (l.max(0) as usize, r.max(0) as usize);
            out_dims[d] = x.dims()[d]
                .checked_add(pl)
                .and_then(|m| m.checked_add(pr))
                .ok_or_else(|| Error::SizeOverflow { op: OP, shape: self.dims().to_vec() })?;
            offsets[d] = pl;
        }
        let out_shape = Shape::new(out_dims);
        out_shape.checked_numel(OP)?;
        if out_shape == *x.shape() {
            return Ok(x);
        }
        let mut rel = Layout::contiguous(out_shape.clone());
        for (d, &o) in offsets.iter().enumerate() {
            rel = rel.slice(d, o, x.dims()[d], 1);
        }
        x.view_scatter(&rel, &out_shape)
    }

    /// Tiles the tensor `repeats[i]` times along dim `i` (`torch.Tensor.repeat`; extra
    /// leading repeats add dims). Built from expand and reshape, so its gradient sums the
    /// copies.
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        if repeats.len() < self.rank() {
            return Err(Error::InvalidArgument {
                op: "repeat",
                arg: "repeats",
                reason: "fewer repeats than dims",
            });
        }
        let lead = repeats.len() - self.rank();
        let mut src = vec![1usize; lead];
        src.extend_from_slice(self.dims());
        let x = self.reshape(src.clone())?;
        let mut inter = Vec::with_capacity(2 * src.len());
        let mut expanded = Vec::with_capacity(2 * src.len());
        let mut out = Vec::with_capacity(src.len());
        for (&s, &r) in src.iter().zip(repeats) {
            inter.extend([1, s]);
            expanded.extend([r, s]);
            out.push(
                r.checked_mul(s)
                    .ok_or(Error::SizeOverflow { op: "repeat", shape: repeats.to_vec() })?,
            );
        }
        Shape::new(out.clone()).checked_numel("repeat")?;
        x.reshape(inter)?.broadcast_to(expanded)?.reshape(out)
    }

    /// Splits into all its slices along `dim`, removing the dim (`torch.unbind`), as views.
    pub fn unbind(&self, dim: isize) -> Result<Vec<Tensor>> {
        let d = resolve_dim("unbind", dim, self.rank())?;
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: "unbind",
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        (0..self.dims()[d]).map(|i| self.select(d as isize, i as isize)).collect()
    }
}
