//! Structured ops (implicit composites of views, `where` and products): `kron`, `trace`,
//! `diag`, `diag_embed`, `tril`, `triu`, `linalg.cross`, `linalg.vander`,
//! `linalg.matrix_power`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{broadcast_shapes, resolve_dim, Shape};
use crate::tensor::Tensor;

/// The `Bool` mask of a `(rows, cols)` triangle: `j - i <= k` (lower) or `>= k` (upper).
fn tri_mask(rows: usize, cols: usize, k: isize, lower: bool) -> Result<Tensor> {
    let mut v = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        for j in 0..cols {
            let d = j as isize - i as isize;
            v.push(if lower { d <= k } else { d >= k });
        }
    }
    Tensor::from_vec(v, (rows, cols))
}

impl Tensor {
    fn tri(&self, k: isize, lower: bool) -> Result<Tensor> {
        let op = if lower { "tril" } else { "triu" };
        if self.rank() < 2 {
            return Err(Error::BadShape {
                op,
                expected: "a tensor of at least 2 dims",
                got: self.shape().clone(),
            });
        }
        let r = self.rank();
        let mask = tri_mask(self.dims()[r - 2], self.dims()[r - 1], k, lower)?;
        Tensor::where_cond(&mask, self, &Tensor::zeros((), self.dtype())?)
    }

    /// The lower triangle `j - i <= diagonal` of the last two dims, zeros elsewhere (NaN
    /// included), batched (`torch.tril`). The gradient is the same triangle of the
    /// cotangent.
    pub fn tril(&self, diagonal: isize) -> Result<Tensor> {
        self.tri(diagonal, true)
    }

    /// The upper triangle `j - i >= diagonal` of the last two dims (`torch.triu`).
    pub fn triu(&self, diagonal: isize) -> Result<Tensor> {
        self.tri(diagonal, false)
    }

    /// The sum of the main diagonal of a matrix (`torch.trace`, 2-d only).
    pub fn trace(&self) -> Result<Tensor> {
        if let Some(c) = crate::autocast::fp32(&[self])? {
            return c[0].trace();
        }
        if self.rank() != 2 {
            return Err(Error::BadShape {
                op: "trace",
                expected: "a 2-d matrix",
                got: self.shape().clone(),
            });
        }
        self.diagonal(0, 0, 1)?.sum()
    }

    /// `torch.diag`: a 1-d input becomes a square matrix with it on diagonal `diagonal`;
    /// a 2-d input gives its diagonal `diagonal` as a 1-d tensor.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let v = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
    /// assert_eq!(v.diag(1)?.to_vec::<f64>()?, vec![0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn diag(&self, diagonal: isize) -> Result<Tensor> {
        match self.rank() {
            1 => {
                let n = self.dims()[0] + diagonal.unsigned_abs();
                let shape = Shape::from((n, n));
                shape.checked_numel("diag")?;
                let rel = Layout::contiguous(shape.clone()).diagonal(diagonal, 0, 1);
                self.view_scatter(&rel, &shape)
            }
            2 => self.diagonal(diagonal, 0, 1)?.contiguous(),
            _ => Err(Error::BadShape {
                op: "diag",
                expected: "a 1-d or 2-d tensor",
                got: self.shape().clone(),
            }),
        }
    }

    /// Puts the last dim on diagonal `offset` of the new dims `dim1`, `dim2`
    /// (`torch.diag_embed`, defaults `0, -2, -1`), zeros elsewhere.
    pub fn diag_embed(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Tensor> {
        const OP: &str = "diag_embed";
        if self.rank() == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "a tensor of at least 1 dim",
                got: self.shape().clone(),
            });
        }
        let r = self.rank() + 1;
        let d1 = resolve_dim(OP, dim1, r)?;
        let d2 = resolve_dim(OP, dim2, r)?;
        if d1 == d2 {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "dim2",
                reason: "diagonal dimensions cannot be identical",
            });
        }
        let n = self.dims()[self.rank() - 1] + offset.unsigned_abs();
        let mut dims: Vec<usize> = self.dims()[..self.rank() - 1].to_vec();
        let (lo, hi) = if d1 < d2 { (d1, d2) } else { (d2, d1) };
        dims.insert(lo, n);
        dims.insert(hi, n);
        let shape = Shape::new(dims);
        shape.checked_numel(OP)?;
        let rel = Layout::contiguous(shape.clone()).diagonal(offset, d1, d2);
        self.view_scatter(&rel, &shape)
    }

    /// The Kronecker product (`torch.kron`): for `a: (a₀, a₁, …)`, `b: (b₀, b₁, …)` (ranks
    /// padded with leading 1s) the result is `(a₀b₀, a₁b₁, …)` with
    /// `out[i·b + j] = a[i] · b[j]`. The dtypes are promoted as two dimensioned tensors'
    /// (`DType::promote`; a 0-d operand too, as PyTorch).
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let r = self.rank().max(other.rank());
        let pad = |t: &Tensor| {
            let mut d = vec![1usize; r - t.rank()];
            d.extend_from_slice(t.dims());
            d
        };
        let (da, db) = (pad(self), pad(other));
        let mut ia = Vec::with_capacity(2 * r);
        let mut ib = Vec::with_capacity(2 * r);
        let mut out = Vec::with_capacity(r);
        for k in 0..r {
            ia.extend([da[k], 1]);
            ib.extend([1, db[k]]);
            out.push(da[k] * db[k]);
        }
        Shape::new(out.clone()).checked_numel("kron")?;
        self.reshape(ia)?.mul(&other.reshape(ib)?)?.reshape(out)
    }

    /// The cross product of 3-vectors along `dim` with broadcasting
    /// (`torch.linalg.cross`, default `dim=-1`). Gradients are reduced to each input's
    /// shape.
    pub fn cross(&self, other: &Tensor, dim: isize) -> Result<Tensor> {
        const OP: &str = "linalg.cross";
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch { op: OP, lhs: self.dtype(), rhs: other.dtype() });
        }
        if self.rank() != other.rank() {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: other.shape().clone(),
            });
        }
        let shape = broadcast_shapes(OP, self.shape(), other.shape())?;
        let d = resolve_dim(OP, dim, shape.rank())?;
        if shape.rank() == 0 || self.dims()[d] != 3 || other.dims()[d] != 3 {
            return Err(Error::BadShape {
                op: OP,
                expected: "size 3 in the cross-product dim",
                got: self.shape().clone(),
            });
        }
        let a = self.broadcast_to(shape.clone())?;
        let b = other.broadcast_to(shape)?;
        let di = d as isize;
        let c = |t: &Tensor, i: usize| t.narrow(di, i, 1);
        let (a0, a1, a2) = (c(&a, 0)?, c(&a, 1)?, c(&a, 2)?);
        let (b0, b1, b2) = (c(&b, 0)?, c(&b, 1)?, c(&b, 2)?);
        let x = a1.mul(&b2)?.sub(&a2.mul(&b1)?)?;
        let y = a2.mul(&b0)?.sub(&a0.mul(&b2)?)?;
        let z = a0.mul(&b1)?.sub(&a1.mul(&b0)?)?;
        Tensor::cat(&[&x, &y, &z], di)
    }

    /// The Vandermonde matrix of the last dim (`torch.linalg.vander`): for `x: (*, n)` the
    /// result is `(*, n, N)` with columns `x⁰, x¹, …, x^(N-1)` (`N = n` by default). A 0-d
    /// input is taken as one element, as PyTorch does.
    ///
    /// Errors: `InvalidArgument` if `N < 2` (PyTorch: "N must be greater than 1").
    pub fn vander(&self, n: Option<usize>) -> Result<Tensor> {
        const OP: &str = "linalg.vander";
        if self.rank() == 0 {
            return self.reshape(1)?.vander(n);
        }
        let cols = n.unwrap_or(self.dims()[self.rank() - 1]);
        if cols < 2 {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "N",
                reason: "N must be greater than 1",
            });
        }
        let x = self.unsqueeze(-1)?;
        let mut powers = vec![x.ones_like()?];
        for _ in 1..cols {
            let next = powers[powers.len() - 1].mul(&x)?;
            powers.push(next);
        }
        let refs: Vec<&Tensor> = powers.iter().collect();
        Tensor::cat(&refs, -1)
    }

    /// `Aⁿ` for square matrices `(*, m, m)` by repeated squaring
    /// (`torch.linalg.matrix_power`; an implicit composite); `n = 0` gives the identity
    /// (with a zero gradient); `n < 0` gives `(A⁻¹)⁻ⁿ` through [`crate::linalg::inv`]
    /// (float and complex dtypes).
    ///
    /// Errors: `BadShape` if not square; for `n < 0`, `Singular { batch, index }` for a
    /// singular matrix (as `linalg.inv`), `UnsupportedDType` for integer input, and
    /// `InvalidArgument` for `n = i64::MIN`.
    pub fn matrix_power(&self, n: i64) -> Result<Tensor> {
        const OP: &str = "linalg.matrix_power";
        let r = self.rank();
        if r < 2 || self.dims()[r - 1] != self.dims()[r - 2] {
            return Err(Error::BadShape {
                op: OP,
                expected: "square matrices (*, m, m)",
                got: self.shape().clone(),
            });
        }
        if n < 0 {
            // A⁻ⁿ = (A⁻¹)ⁿ, as PyTorch
            let inv = super::inv(self).map_err(|e| match e {
                Error::Singular { batch, index, .. } => Error::Singular { op: OP, batch, index },
                Error::UnsupportedDType { dtype, .. } => Error::UnsupportedDType { op: OP, dtype },
                e => e,
            })?;
            let m = n.checked_neg().ok_or(Error::InvalidArgument {
                op: OP,
                arg: "n",
                reason: "n must be greater than i64::MIN",
            })?;
            return inv.matrix_power(m);
        }
        if n == 0 {
            let eye = Tensor::eye(self.dims()[r - 1], self.dtype())?;
            let all = Tensor::ones((), DType::Bool)?.broadcast_to(self.shape().clone())?;
            return Tensor::where_cond(&all, &eye, self);
        }
        let mut result: Option<Tensor> = None;
        let mut base = self.clone();
        let mut e = n;
        loop {
            if e & 1 == 1 {
                result = Some(match result {
                    None => base.clone(),
                    Some(r) => r.matmul(&base).map_err(|err| err.in_op(OP))?,
                });
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            base = base.matmul(&base).map_err(|err| err.in_op(OP))?;
        }
        result.ok_or(Error::Internal { op: OP, reason: "empty power" })
    }
}
