//! `linalg.solve_triangular`: the triangular-solve primitive every factorisation's
//! solver and VJP is built on.

use super::util::{broadcast_batch, check_float_or_complex, check_square, from_kernel};
use super::{Diag, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::TriSolve;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.solve_triangular";

#[derive(Debug)]
struct SolveTriangular {
    uplo: Uplo,
    side: Side,
    diag: Diag,
}

impl Op for SolveTriangular {
    fn name(&self) -> &'static str {
        OP
    }

    // Left: A X = B  ⇒  dX = A⁻¹(dB − dA X), so
    //   gB = A⁻ᵀ G            (a triangular solve with Aᵀ, the other triangle),
    //   gA = −gB Xᵀ           projected on the triangle read (strictly, if unit).
    // Right: X A = B  ⇒  gB = G A⁻ᵀ,  gA = −Xᵀ gB, projected likewise.
    // Complex: the conjugate transposes. (PyTorch linalg_solve_triangular_backward,
    // FunctionsManual.cpp.) Both are tensor ops,
    // so higher derivatives go through this rule again.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let a = cx.input(0);
        let gb = solve_triangular(&a.mH()?, g, self.uplo.flip(), self.side, self.diag)?;
        let ga = if cx.needs_input_grad(0) {
            let x = cx.output(0)?;
            let ga = match self.side {
                Side::Left => gb.matmul(&x.mH()?)?.neg()?,
                Side::Right => x.mH()?.matmul(&gb)?.neg()?,
            };
            let k = isize::from(self.diag == Diag::Unit);
            Some(match self.uplo {
                Uplo::Upper => ga.triu(k)?,
                Uplo::Lower => ga.tril(-k)?,
            })
        } else {
            None
        };
        Ok(vec![ga, cx.needs_input_grad(1).then_some(gb)])
    }

    // Left: dX = A⁻¹ (dB − dA X); right: dX = (dB − X dA) A⁻¹, with dA restricted to the
    // triangle read (strictly, if unit)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (a, x) = (cx.input(0), cx.output(0));
        let mut rhs = t[1].clone();
        if let Some(da) = &t[0] {
            let k = isize::from(self.diag == Diag::Unit);
            let da = match self.uplo {
                Uplo::Upper => da.triu(k)?,
                Uplo::Lower => da.tril(-k)?,
            };
            let p = match self.side {
                Side::Left => da.matmul(x)?,
                Side::Right => x.matmul(&da)?,
            }
            .neg()?;
            rhs = Some(match rhs {
                Some(db) => db.add(&p)?,
                None => p,
            });
        }
        let Some(rhs) = rhs else { return Ok(vec![None]) };
        Ok(vec![Some(solve_triangular(a, &rhs, self.uplo, self.side, self.diag)?)])
    }
}

/// Solves a triangular system (`torch.linalg.solve_triangular`; a primitive).
///
/// With `Side::Left`, solves `A X = B` for `a: (*, n, n)` and `b: (*, n, k)`; with
/// `Side::Right`, `X A = B` for `b: (*, k, n)`. Only the `uplo` triangle of `A` is read;
/// with `Diag::Unit` its diagonal is taken as ones and not read. Batch dims broadcast;
/// the result has the broadcast batch and `b`'s matrix shape. A zero on the diagonal gives
/// infinities or NaN, as in PyTorch (no check is made).
///
/// Gradient: `gB = A⁻ᵀ G` (left) or `G A⁻ᵀ` (right), `gA = −gB Xᵀ` (left) or `−Xᵀ gB`
/// (right) projected on the triangle read (strictly below or above the diagonal with
/// `Diag::Unit`): the other entries of `A` are not read, and their gradient is zero.
/// Differentiable to any order.
///
/// Dtypes: f32, f64, c64, c128 (gradients with `Aᴴ` for `Aᵀ`); bf16 and f16 are computed
/// in f32. The result has `a`'s dtype: a `b` of another real dtype (integer and bool
/// included) is cast to it first, as PyTorch does for this op (unlike `solve`, which
/// refuses mixed dtypes). A complex `b` with a real `a` is refused, where PyTorch casts it
/// to the real dtype and drops its imaginary part without a word; cast `a` to complex
/// for a complex solution.
///
/// Errors: `BadShape` if `a` is not square or `b` has fewer than 2 dims; `ShapeMismatch`
/// if the shapes do not agree or the batch dims do not broadcast; `UnsupportedDType` for
/// an integer or bool `a`; `DTypeMismatch` for a complex `b` with a real `a`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{solve_triangular, Diag, Side, Uplo};
/// let l = Tensor::from_vec(vec![2.0f64, 0.0, 1.0, 4.0], (2, 2))?;
/// let b = Tensor::from_vec(vec![2.0f64, 9.0], (2, 1))?;
/// let x = solve_triangular(&l, &b, Uplo::Lower, Side::Left, Diag::NonUnit)?;
/// assert_eq!(x.to_vec::<f64>()?, vec![1.0, 2.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    uplo: Uplo,
    side: Side,
    diag: Diag,
) -> Result<Tensor> {
    check_float_or_complex(OP, a)?;
    if b.dtype().is_complex() && !a.dtype().is_complex() {
        return Err(Error::DTypeMismatch { op: OP, lhs: a.dtype(), rhs: b.dtype() });
    }
    let n = check_square(OP, a)?;
    if b.rank() < 2 {
        return Err(Error::BadShape {
            op: OP,
            expected: "a right-hand side of at least 2 dims",
            got: b.shape().clone(),
        });
    }
    let r = b.rank();
    let along = if side == Side::Left { b.dims()[r - 2] } else { b.dims()[r - 1] };
    if along != n {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: a.shape().clone(),
            rhs: b.shape().clone(),
        });
    }
    let (a, b) = broadcast_batch(OP, a, 2, b, 2)?;
    if a.dtype() != b.dtype() {
        // PyTorch casts B to A's dtype here (unlike solve and lu_solve, which refuse)
        return solve_triangular(&a, &b.to_dtype(a.dtype())?, uplo, side, diag);
    }
    if a.dtype().is_half() {
        let x =
            solve_triangular(&a.to_dtype(DType::F32)?, &b.to_dtype(DType::F32)?, uplo, side, diag)?;
        return x.to_dtype(a.dtype());
    }
    let spec =
        TriSolve { upper: uplo == Uplo::Upper, left: side == Side::Left, unit: diag == Diag::Unit };
    let (s, l) = a.storage().solve_triangular(a.layout(), b.storage(), b.layout(), spec)?;
    let x = from_kernel(s, l);
    record1(SolveTriangular { uplo, side, diag }, &[&a, &b], x, true)
}
