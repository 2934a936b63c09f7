//! Indexing ops: index_select, gather, scatter_add. Indices are `I64` tensors.

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{resolve_dim, Shape};
use crate::tensor::Tensor;

fn check_index(op: &'static str, index: &Tensor) -> Result<()> {
    if index.dtype() != DType::I64 {
        return Err(Error::DTypeMismatch { op, lhs: index.dtype(), rhs: DType::I64 });
    }
    Ok(())
}

#[derive(Debug)]
struct Gather {
    dim: usize,
}

impl Op for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }
    // y[i] = x[index[i] along dim]  ⇒  gx = scatter_add(zeros(x), dim, index, gy)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let x = cx.input(0);
        let gx = x.zeros_like()?.scatter_add(self.dim as isize, cx.input(1), g)?;
        Ok(vec![Some(gx), None])
    }
    // linear in x: ẏ = gather(ẋ)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.gather(self.dim as isize, cx.input(1))?)])
    }
}

#[derive(Debug)]
struct ScatterAdd {
    dim: usize,
}

impl Op for ScatterAdd {
    fn name(&self) -> &'static str {
        "scatter_add"
    }
    // y = x with src added at index  ⇒  gx = gy, gsrc = gather(gy, dim, index) (zero where
    // src is not read, when index is smaller than src)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None, None]) };
        let gsrc = if cx.needs_input_grad(2) {
            let index = cx.input(1);
            let src = cx.input(2);
            let gathered = g.gather(self.dim as isize, index)?;
            Some(if gathered.dims() == src.dims() {
                gathered
            } else {
                let mut rel = Layout::contiguous(src.shape().clone());
                for (d, &n) in index.dims().iter().enumerate() {
                    rel = rel.slice(d, 0, n, 1);
                }
                gathered.view_scatter(&rel, src.shape())?
            })
        } else {
            None
        };
        Ok(vec![Some(g.clone()), None, gsrc])
    }
    // linear in (x, src): ẏ = scatter_add(ẋ, index, ṡrc), zeros for a missing tangent
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let tx = t[0].clone().map_or_else(|| cx.input(0).zeros_like(), Ok)?;
        let ts = t[2].clone().map_or_else(|| cx.input(2).zeros_like(), Ok)?;
        Ok(vec![Some(tx.scatter_add(self.dim as isize, cx.input(1), &ts)?)])
    }
}

impl Tensor {
    /// `out[i][j][k] = self[index[i][j][k]][j][k]` for `dim = 0`, and likewise for other
    /// dims (`torch.gather`). `index` is `I64` with the rank of `self`, and
    /// `index.size(d) <= self.size(d)` for `d != dim`; the output has `index`'s shape.
    ///
    /// Errors: `DTypeMismatch` for a non-`I64` index; `ShapeMismatch`;
    /// `IndexOutOfRange`.
    pub fn gather(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "gather";
        check_index(OP, index)?;
        let d = resolve_dim(OP, dim, self.rank())?;
        if index.rank() != self.rank().max(1) && !(self.rank() == 0 && index.rank() == 0) {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: index.shape().clone(),
            });
        }
        let x = if self.rank() == 0 { self.reshape(1)? } else { self.clone() };
        let ix = if index.rank() == 0 { index.reshape(1)? } else { index.clone() };
        if ix.dims().iter().zip(x.dims()).enumerate().any(|(i, (&a, &b))| i != d && a > b) {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: index.shape().clone(),
            });
        }
        let s = x.storage().gather(x.layout(), d, ix.storage(), ix.layout())?;
        let out = Tensor::from_storage(s, ix.shape().clone());
        let out = record1(Gather { dim: d }, &[&x, &ix], out, false)?;
        if index.rank() == 0 {
            out.reshape(())
        } else {
            Ok(out)
        }
    }

    /// `self` with `src[i][j][k]` added at `[index[i][j][k]][j][k]` for `dim = 0`, and
    /// likewise for other dims (`torch.scatter_add`, out of place). `index` is `I64`,
    /// no larger than `src` in any dim and than `self` outside `dim`.
    ///
    /// Errors: `DTypeMismatch`; `ShapeMismatch`; `IndexOutOfRange`.
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "scatter_add";
        check_index(OP, index)?;
        if self.dtype() != src.dtype() {
            return Err(Error::DTypeMismatch { op: OP, lhs: self.dtype(), rhs: src.dtype() });
        }
        let d = resolve_dim(OP, dim, self.rank())?;
        let rank = self.rank().max(1);
        if index.rank().max(1) != rank || src.rank().max(1) != rank {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: index.shape().clone(),
            });
        }
        let x = if self.rank() == 0 { self.reshape(1)? } else { self.clone() };
        let ix = if index.rank() == 0 { index.reshape(1)? } else { index.clone() };
        let sr = if src.rank() == 0 { src.reshape(1)? } else { src.clone() };
        let fits = ix
            .dims()
            .iter()
            .enumerate()
            .all(|(i, &n)| n <= sr.dims()[i] && (i == d || n <= x.dims()[i]));
        if !fits {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: src.shape().clone(),
                rhs: index.shape().clone(),
            });
        }
        let s = x.storage().scatter_add(
            x.layout(),
            d,
            ix.storage(),
            ix.layout(),
            sr.storage(),
            sr.layout(),
        )?;
        let out = Tensor::from_storage(s, x.shape().clone());
        let out = record1(ScatterAdd { dim: d }, &[&x, &ix, &sr], out, false)?;
        if self.rank() == 0 {
            out.reshape(())
        } else {
            Ok(out)
        }
    }

    /// The entries of `self` at positions `index` (1-d `I64`) along `dim`
    /// (`torch.index_select`). Its gradient adds cotangents back at the indices (repeated
    /// indices accumulate).
    ///
    /// Errors: `DTypeMismatch` for a non-`I64` index; `BadShape` for an index of more than
    /// one dim, or of more than one element for a 0-d `self`; `IndexOutOfRange`.
    pub fn index_select(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "index_select";
        check_index(OP, index)?;
        if index.rank() > 1 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a 0-d or 1-d index",
                got: index.shape().clone(),
            });
        }
        let d = resolve_dim(OP, dim, self.rank())?;
        if self.rank() == 0 && index.numel() != 1 {
            return Err(Error::BadShape {
                op: OP,
                expected: "an index with one element for a 0-d tensor",
                got: index.shape().clone(),
            });
        }
        let x = if self.rank() == 0 { self.reshape(1)? } else { self.clone() };
        let size = x.dims()[d];
        if let Some(&bad) = index.to_vec::<i64>()?.iter().find(|&&i| i < 0 || i as usize >= size) {
            return Err(Error::IndexOutOfRange { op: OP, index: bad, size });
        }
        let k = index.numel();
        let mut out_dims = x.dims().to_vec();
        out_dims[d] = k;
        let mut ix_dims = vec![1usize; x.rank()];
        ix_dims[d] = k;
        let ix = index.reshape(ix_dims)?.broadcast_to(Shape::new(out_dims))?;
        let out = x.gather(d as isize, &ix)?;
        if self.rank() == 0 {
            out.reshape(())
        } else {
            Ok(out)
        }
    }
}
