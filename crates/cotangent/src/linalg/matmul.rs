//! Matrix products: the batched `matmul` primitive and the PyTorch entry points built on
//! it (`matmul` with every rank combination, `mm`, `bmm`, `mv`, `dot`).

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, should_record, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{broadcast_shapes, Shape};
use crate::tensor::Tensor;

#[derive(Debug)]
struct MatMul;

impl Op for MatMul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    // C = A B (batched, batch dims already equal)  ⇒  gA = G Bᴴ, gB = Aᴴ G (the
    // conjugate transposes: PyTorch's convention for complex; the transposes for real).
    // Both are matmuls again, so every order of derivative goes through this rule.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let (a, b) = (cx.input(0), cx.input(1));
        let ga = if cx.needs_input_grad(0) { Some(batched(g, &b.mH()?)?) } else { None };
        let gb = if cx.needs_input_grad(1) { Some(batched(&a.mH()?, g)?) } else { None };
        Ok(vec![ga, gb])
    }
    // Ċ = Ȧ B + A Ḃ
    // (both tangents given and nothing recorded: the two products and their sum in one
    // pass where the backend has a kernel for the shape; the same bits)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (a, b) = (cx.input(0), cx.input(1));
        if let (Some(ta), Some(tb)) = (&t[0], &t[1]) {
            if !should_record(&[a, b, ta, tb]) {
                let fused = a.storage().matmul_jvp(
                    a.layout(),
                    (b.storage(), b.layout()),
                    (ta.storage(), ta.layout()),
                    (tb.storage(), tb.layout()),
                )?;
                if let Some(s) = fused {
                    let r = a.rank();
                    let mut dims = crate::shape::Dims::from_slice(&a.dims()[..r - 1]);
                    dims.push(b.dims()[r - 1]);
                    return Ok(vec![Some(Tensor::from_storage(s, Shape::of(dims)))]);
                }
            }
        }
        let da = t[0].as_ref().map(|ta| batched(ta, b)).transpose()?;
        let db = t[1].as_ref().map(|tb| batched(a, tb)).transpose()?;
        Ok(vec![match (da, db) {
            (Some(x), Some(y)) => Some(x.add(&y)?),
            (x, y) => x.or(y),
        }])
    }
}

/// The primitive: `a: (*, m, k)`, `b: (*, k, n)` with equal batch dims.
fn batched(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype().is_half() {
        let c = batched(&a.to_dtype(DType::F32)?, &b.to_dtype(DType::F32)?)?;
        return c.to_dtype(a.dtype());
    }
    let r = a.rank();
    let s = a.storage().matmul(a.layout(), b.storage(), b.layout())?;
    let mut dims = crate::shape::Dims::from_slice(&a.dims()[..r - 2]);
    dims.push(a.dims()[r - 2]);
    dims.push(b.dims()[r - 1]);
    let out = Tensor::from_storage(s, Shape::of(dims));
    record1(MatMul, &[a, b], out, false)
}

fn check_dtypes(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch { op, lhs: a.dtype(), rhs: b.dtype() });
    }
    if !a.dtype().is_differentiable() {
        return Err(Error::UnsupportedDType { op, dtype: a.dtype() });
    }
    Ok(())
}

impl Tensor {
    /// Matrix product with PyTorch's rank rules (`torch.matmul`):
    /// 1-d · 1-d is the dot product (0-d); 2-d · 2-d the matrix product; a 1-d left
    /// operand is a row vector and a 1-d right operand a column vector (the added dim is
    /// removed from the result); otherwise both are batches of matrices `(*, m, k)` and
    /// `(*, k, n)` whose batch dims broadcast, giving `(*, m, n)`.
    ///
    /// Gradient: `gA = G Bᵀ`, `gB = Aᵀ G` (complex: `G Bᴴ`, `Aᴴ G`), summed over
    /// broadcast batch dims. Dtypes: f32, f64, c64, c128 (both operands the same, as
    /// PyTorch); bf16 and f16 are computed in f32 and rounded back.
    ///
    /// Errors: `BadShape` for a 0-d operand; `ShapeMismatch` if the inner dims differ or
    /// batch dims do not broadcast; `DTypeMismatch` for different dtypes.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
    /// let x = Tensor::from_vec(vec![1.0f64, 1.0], 2)?;
    /// assert_eq!(a.matmul(&x)?.to_vec::<f64>()?, vec![3.0, 7.0]);
    /// assert_eq!(a.matmul(&a)?.to_vec::<f64>()?, vec![7.0, 10.0, 15.0, 22.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if let Some(c) = crate::autocast::lower(&[self, other])? {
            return c[0].matmul(&c[1]);
        }
        const OP: &str = "matmul";
        check_dtypes(OP, self, other)?;
        let (ra, rb) = (self.rank(), other.rank());
        if ra == 0 || rb == 0 {
            return Err(Error::BadShape {
                op: OP,
                expected: "operands of at least 1 dim",
                got: if ra == 0 { self.shape().clone() } else { other.shape().clone() },
            });
        }
        let a = if ra == 1 { self.unsqueeze(0)? } else { self.clone() };
        let b = if rb == 1 { other.unsqueeze(-1)? } else { other.clone() };
        let (ka, kb) = (a.dims()[a.rank() - 1], b.dims()[b.rank() - 2]);
        if ka != kb {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().clone(),
                rhs: other.shape().clone(),
            });
        }
        let batch_a = Shape::of(&a.dims()[..a.rank() - 2]);
        let batch_b = Shape::of(&b.dims()[..b.rank() - 2]);
        let batch = broadcast_shapes(OP, &batch_a, &batch_b).map_err(|_| Error::ShapeMismatch {
            op: OP,
            lhs: self.shape().clone(),
            rhs: other.shape().clone(),
        })?;
        let mut da = batch.dims().to_vec();
        da.extend(&a.dims()[a.rank() - 2..]);
        let mut db = batch.dims().to_vec();
        db.extend(&b.dims()[b.rank() - 2..]);
        let c = batched(&a.broadcast_to(da)?, &b.broadcast_to(db)?)?;
        let c = if rb == 1 { c.squeeze_dim(-1)? } else { c };
        if ra == 1 {
            c.squeeze_dim(if rb == 1 { -1 } else { -2 })
        } else {
            Ok(c)
        }
    }

    /// Matrix product of two matrices (`torch.mm`).
    ///
    /// Errors: `BadShape` unless both are 2-d; otherwise as [`Tensor::matmul`].
    pub fn mm(&self, other: &Tensor) -> Result<Tensor> {
        for t in [self, other] {
            if t.rank() != 2 {
                return Err(Error::BadShape {
                    op: "mm",
                    expected: "2-d matrices",
                    got: t.shape().clone(),
                });
            }
        }
        self.matmul(other).map_err(|e| e.in_op("mm"))
    }

    /// Batched matrix product of `(b, m, k)` and `(b, k, n)` (`torch.bmm`; no
    /// broadcasting).
    pub fn bmm(&self, other: &Tensor) -> Result<Tensor> {
        for t in [self, other] {
            if t.rank() != 3 {
                return Err(Error::BadShape {
                    op: "bmm",
                    expected: "3-d batches of matrices",
                    got: t.shape().clone(),
                });
            }
        }
        if self.dims()[0] != other.dims()[0] {
            return Err(Error::ShapeMismatch {
                op: "bmm",
                lhs: self.shape().clone(),
                rhs: other.shape().clone(),
            });
        }
        self.matmul(other).map_err(|e| e.in_op("bmm"))
    }

    /// Matrix-vector product of `(m, n)` and `(n,)` (`torch.mv`).
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        if self.rank() != 2 || vec.rank() != 1 {
            return Err(Error::BadShape {
                op: "mv",
                expected: "a 2-d matrix and a 1-d vector",
                got: if self.rank() == 2 { vec.shape().clone() } else { self.shape().clone() },
            });
        }
        // (not on autocast's list, unlike matmul: PyTorch's mv keeps its inputs' dtype)
        let _plain = crate::autocast::suspend();
        self.matmul(vec).map_err(|e| e.in_op("mv"))
    }

    /// Dot product of two 1-d tensors of the same length (`torch.dot`), a 0-d tensor.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        if self.rank() != 1 || other.rank() != 1 {
            return Err(Error::BadShape {
                op: "dot",
                expected: "1-d tensors",
                got: if self.rank() == 1 { other.shape().clone() } else { self.shape().clone() },
            });
        }
        if self.dims() != other.dims() {
            return Err(Error::ShapeMismatch {
                op: "dot",
                lhs: self.shape().clone(),
                rhs: other.shape().clone(),
            });
        }
        // (not on autocast's list, as mv)
        let _plain = crate::autocast::suspend();
        self.matmul(other).map_err(|e| e.in_op("dot"))
    }
}
