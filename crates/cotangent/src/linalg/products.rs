//! Products built on `matmul` (implicit composites: their gradients come from the
//! composition): `vdot`, `inner`, `outer`, `linalg.vecdot`, `linalg.multi_dot`, the fused
//! affine family `addmm`, `addbmm`, `baddbmm`, `addmv`, `addr`, and
//! `nn.functional.linear`.

use crate::error::{Error, Result};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// `beta · input + alpha · product`, with `input` broadcast to the product's shape (never
/// the other way, as PyTorch). With `beta = 0` the input is ignored, NaN and inf included,
/// and receives a zero gradient.
fn affine(
    op: &'static str,
    input: &Tensor,
    product: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<Tensor> {
    if input.dtype() != product.dtype() {
        return Err(Error::DTypeMismatch { op, lhs: input.dtype(), rhs: product.dtype() });
    }
    let b = broadcast_shapes(op, input.shape(), product.shape())?;
    if b != *product.shape() {
        return Err(Error::ShapeMismatch {
            op,
            lhs: input.shape().clone(),
            rhs: product.shape().clone(),
        });
    }
    let scaled = if alpha == 1.0 { product.clone() } else { product.mul_scalar(alpha)? };
    let input = input.broadcast_to(product.shape().clone())?;
    if beta == 0.0 {
        // where(true, 0, input): connected to the input, NaN-free, zero gradient
        let ones = Tensor::ones((), crate::DType::Bool)?.broadcast_to(product.shape().clone())?;
        let zero = Tensor::zeros((), input.dtype())?;
        return scaled.add(&Tensor::where_cond(&ones, &zero, &input)?);
    }
    let input = if beta == 1.0 { input } else { input.mul_scalar(beta)? };
    input.add(&scaled)
}

fn need_rank(op: &'static str, t: &Tensor, rank: usize, expected: &'static str) -> Result<()> {
    if t.rank() != rank {
        return Err(Error::BadShape { op, expected, got: t.shape().clone() });
    }
    Ok(())
}

impl Tensor {
    /// `Σ conj(x)·y` of two 1-d tensors (`torch.vdot`: the first argument conjugated;
    /// for real dtypes the same as [`Tensor::dot`]).
    pub fn vdot(&self, other: &Tensor) -> Result<Tensor> {
        self.conj()?.dot(other).map_err(|e| e.in_op("vdot"))
    }

    /// Inner product over the last dims (`torch.inner`): for `a: (*a, k)`, `b: (*b, k)`
    /// the result has shape `(*a, *b)`; a 0-d operand multiplies.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
    /// let b = Tensor::from_vec(vec![1.0f64, 10.0], 2)?;
    /// assert_eq!(a.inner(&b)?.to_vec::<f64>()?, vec![21.0, 43.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "inner";
        if self.rank() == 0 || other.rank() == 0 {
            return self.mul(other);
        }
        let k = self.dims()[self.rank() - 1];
        if other.dims()[other.rank() - 1] != k {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: other.shape().clone(),
            });
        }
        let a = self.reshape_infer(&[-1, k as isize])?;
        let b = other.reshape_infer(&[-1, k as isize])?;
        let c = a.matmul(&b.mT()?).map_err(|e| e.in_op(OP))?;
        let mut dims = self.dims()[..self.rank() - 1].to_vec();
        dims.extend_from_slice(&other.dims()[..other.rank() - 1]);
        c.reshape(dims)
    }

    /// Outer product of two 1-d tensors, `(n,) x (m,) -> (n, m)` (`torch.outer`); the
    /// dtypes are promoted as [`Tensor::mul`]'s (f32 with f64 gives f64).
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        need_rank("outer", self, 1, "1-d vectors")?;
        need_rank("outer", other, 1, "1-d vectors")?;
        self.unsqueeze(-1)?.mul(&other.unsqueeze(0)?)
    }

    /// `Σ conj(x)·y` along `dim`, with broadcasting (`torch.linalg.vecdot`, default
    /// `dim=-1`; `x` conjugated when complex, as PyTorch).
    pub fn vecdot(&self, other: &Tensor, dim: isize) -> Result<Tensor> {
        if let Some(c) = crate::autocast::lower(&[self, other])? {
            return c[0].vecdot(&c[1], dim);
        }
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch {
                op: "linalg.vecdot",
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        let shape = broadcast_shapes("linalg.vecdot", self.shape(), other.shape())?;
        crate::shape::resolve_dim("linalg.vecdot", dim, shape.rank())?;
        self.conj()?.mul(other)?.sum_dims(&[dim], false)
    }

    /// `beta · self + alpha · (mat1 @ mat2)` (`torch.addmm`; `self` broadcasts to the
    /// product's shape; `beta = 0` ignores `self`, NaN included).
    pub fn addmm(&self, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        if let Some(c) = crate::autocast::lower(&[self, mat1, mat2])? {
            return c[0].addmm(&c[1], &c[2], beta, alpha);
        }
        need_rank("addmm", mat1, 2, "2-d matrices")?;
        need_rank("addmm", mat2, 2, "2-d matrices")?;
        affine("addmm", self, &mat1.mm(mat2)?, beta, alpha)
    }

    /// `beta · self + alpha · (batch1 @ batch2)` (`torch.baddbmm`).
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        if let Some(c) = crate::autocast::lower(&[self, batch1, batch2])? {
            return c[0].baddbmm(&c[1], &c[2], beta, alpha);
        }
        affine("baddbmm", self, &batch1.bmm(batch2)?, beta, alpha)
    }

    /// `beta · self + alpha · Σ_b batch1[b] @ batch2[b]` (`torch.addbmm`).
    pub fn addbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        if let Some(c) = crate::autocast::lower(&[self, batch1, batch2])? {
            return c[0].addbmm(&c[1], &c[2], beta, alpha);
        }
        let p = batch1.bmm(batch2)?.sum_dims(&[0], false)?;
        affine("addbmm", self, &p, beta, alpha)
    }

    /// `beta · self + alpha · (mat @ vec)` (`torch.addmv`).
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        affine("addmv", self, &mat.mv(vec).map_err(|e| e.in_op("addmv"))?, beta, alpha)
    }

    /// `beta · self + alpha · outer(vec1, vec2)` (`torch.addr`).
    pub fn addr(&self, vec1: &Tensor, vec2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        affine("addr", self, &vec1.outer(vec2)?, beta, alpha)
    }

    /// `self @ weightᵀ + bias` (`torch.nn.functional.linear`): `self: (*, in)`,
    /// `weight: (out, in)`, `bias: (out,)` or `None`; the result is `(*, out)`. `weightᵀ`
    /// is a view read in place by the kernel, never materialised.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let x = Tensor::ones((5, 2, 3), DType::F32)?;
    /// let w = Tensor::ones((4, 3), DType::F32)?;
    /// assert_eq!(x.linear(&w, None)?.dims(), &[5, 2, 4]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        const OP: &str = "nn.functional.linear";
        if crate::autocast::autocast_dtype().is_some() {
            let c = match bias {
                Some(b) => crate::autocast::lower(&[self, weight, b])?,
                None => crate::autocast::lower(&[self, weight])?,
            };
            if let Some(c) = c {
                return c[0].linear(&c[1], c.args.get(2));
            }
        }
        if weight.rank() != 2 && weight.rank() != 1 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a 1-d or 2-d weight",
                got: weight.shape().clone(),
            });
        }
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "an input of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let k = self.dims()[self.rank() - 1];
        if weight.dims()[weight.rank() - 1] != k {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: weight.shape().clone(),
            });
        }
        let y = if self.rank() > 2 && weight.rank() == 2 {
            let flat = self.reshape_infer(&[-1, k as isize])?;
            let y = flat.matmul(&weight.mT()?)?;
            let mut dims = self.dims()[..self.rank() - 1].to_vec();
            dims.push(weight.dims()[0]);
            y.reshape(dims)?
        } else if weight.rank() == 2 {
            self.matmul(&weight.mT()?)?
        } else {
            self.matmul(weight)?
        };
        match bias {
            Some(b) => {
                if b.dtype() != y.dtype() {
                    return Err(Error::DTypeMismatch { op: OP, lhs: y.dtype(), rhs: b.dtype() });
                }
                let s = broadcast_shapes(OP, b.shape(), y.shape())?;
                if s != *y.shape() {
                    return Err(Error::ShapeMismatch {
                        op: OP,
                        lhs: y.shape().clone(),
                        rhs: b.shape().clone(),
                    });
                }
                y.add(b)
            }
            None => Ok(y),
        }
    }

    /// The product of a chain of matrices in the cheapest order
    /// (`torch.linalg.multi_dot`): the first may be 1-d (a row vector) and the last 1-d (a
    /// column vector), the others are 2-d. The order comes from the classic O(n³) dynamic
    /// programme on the dimensions.
    ///
    /// Errors: `InvalidArgument` for fewer than 2 tensors; `BadShape`; `ShapeMismatch`.
    pub fn multi_dot(tensors: &[&Tensor]) -> Result<Tensor> {
        const OP: &str = "linalg.multi_dot";
        if let Some(c) = crate::autocast::lower(tensors)? {
            return Tensor::multi_dot(&c.args.iter().collect::<Vec<_>>());
        }
        let n = tensors.len();
        if n < 2 {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "tensors",
                reason: "expected at least 2 tensors",
            });
        }
        let mut mats = Vec::with_capacity(n);
        for (i, t) in tensors.iter().enumerate() {
            let ok = t.rank() == 2 || (t.rank() == 1 && (i == 0 || i == n - 1));
            if !ok {
                return Err(Error::BadShape {
                    op: OP,
                    expected: "2-d matrices (1-d allowed first and last)",
                    got: t.shape().clone(),
                });
            }
            if t.dtype() != tensors[0].dtype() {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: tensors[0].dtype(),
                    rhs: t.dtype(),
                });
            }
            mats.push(if t.rank() == 2 {
                (*t).clone()
            } else if i == 0 {
                t.unsqueeze(0)?
            } else {
                t.unsqueeze(-1)?
            });
        }
        let mut dims = vec![mats[0].dims()[0]];
        for (i, m) in mats.iter().enumerate() {
            if m.dims()[0] != dims[i] {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: mats[i - 1].shape().clone(),
                    rhs: m.shape().clone(),
                });
            }
            dims.push(m.dims()[1]);
        }
        // cost[i][j]: cheapest product of mats[i..=j]; split[i][j]: where to split it
        let mut cost = vec![vec![0u128; n]; n];
        let mut split = vec![vec![0usize; n]; n];
        for len in 1..n {
            for i in 0..n - len {
                let j = i + len;
                cost[i][j] = u128::MAX;
                for k in i..j {
                    let c =
                        cost[i][k] + cost[k + 1][j] + (dims[i] * dims[k + 1] * dims[j + 1]) as u128;
                    if c < cost[i][j] {
                        cost[i][j] = c;
                        split[i][j] = k;
                    }
                }
            }
        }
        fn chain(mats: &[Tensor], split: &[Vec<usize>], i: usize, j: usize) -> Result<Tensor> {
            if i == j {
                return Ok(mats[i].clone());
            }
            let k = split[i][j];
            chain(mats, split, i, k)?.mm(&chain(mats, split, k + 1, j)?)
        }
        let out = chain(&mats, &split, 0, n - 1)?;
        match (tensors[0].rank(), tensors[n - 1].rank()) {
            (1, 1) => out.reshape(()),
            (1, _) => out.squeeze_dim(0),
            (_, 1) => out.squeeze_dim(-1),
            _ => Ok(out),
        }
    }
}
