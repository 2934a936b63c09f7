//! Cholesky factorisation `A = L Lᵀ` of symmetric positive-definite matrices (batched
//! `(*, n, n)`), and the solvers built on the factor: `linalg.cholesky`,
//! `linalg.cholesky_ex`, `cholesky_solve`, `cholesky_inverse`.

use super::solve_triangular;
use super::util::{
    batch_of, broadcast_batch, check_float_or_complex, check_same_dtype, check_square, from_kernel,
};
use super::{Diag, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, should_record, Op, VjpCtx};
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

// ------------------------------------------------------------------------------------
// linalg.cholesky, linalg.cholesky_ex

/// The factor, recorded for autograd, and the kernel's per-matrix `info` (I64, contiguous,
/// the batch's shape) as the device's buffer: [`cholesky`] only scans it, and
/// [`cholesky_ex`] makes it a tensor.
fn factor(op: &'static str, a: &Tensor, uplo: Uplo) -> Result<(Tensor, Storage)> {
    check_float_or_complex(op, a)?;
    check_square(op, a)?;
    if a.dtype().is_half() {
        let (l, info) = factor(op, &a.to_dtype(DType::F32)?, uplo)?;
        return Ok((l.to_dtype(a.dtype())?, info));
    }
    let (s, layout, info) = a.storage().cholesky(a.layout(), uplo == Uplo::Upper)?;
    let l = record1(Cholesky { uplo }, &[a], from_kernel(s, layout), true)?;
    Ok((l, info))
}

#[derive(Debug)]
struct Cholesky {
    uplo: Uplo,
}

impl Op for Cholesky {
    fn name(&self) -> &'static str {
        "linalg.cholesky"
    }

    // A = L Lᵀ  ⇒  dL = L Φ(L⁻¹ dA L⁻ᵀ),  Φ(X) = tril(X) with the diagonal halved
    // (Murray 2016, arXiv:1602.07527, eq. 8). Its adjoint, restricted to symmetric dA:
    //   gA = L⁻ᵀ S L⁻¹,  S = ½ (P + tril(P, −1)ᵀ),  P = tril(Lᵀ gL),
    // i.e. S is P mirrored with its diagonal halved; gA is then symmetrised exactly, as
    // PyTorch's cholesky_backward (FunctionsManual.cpp) does. With `Upper`, L = Uᵀ and
    // gL = gUᵀ. Complex (A = L Lᴴ): every transpose a conjugate transpose. Two triangular
    // solves and a product, all tensor ops: differentiable again.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(gl) = &g[0] else { return Ok(vec![None]) };
        let f = cx.output(0)?;
        if !cx.create_graph() && f.dtype() == gl.dtype() {
            // the same formula, fused per matrix (no graph to build), where the device has it
            let upper = self.uplo == Uplo::Upper;
            let fused =
                f.storage().cholesky_backward(f.layout(), gl.storage(), gl.layout(), upper)?;
            if let Some((s, layout)) = fused {
                return Ok(vec![Some(from_kernel(s, layout))]);
            }
        }
        let (l, gl) = match self.uplo {
            Uplo::Lower => (f, gl.clone()),
            Uplo::Upper => (f.mH()?, gl.mH()?),
        };
        let lt = l.mH()?;
        let p = lt.matmul(&gl)?.tril(0)?;
        let s = p.add(&p.tril(-1)?.mH()?)?.mul_scalar(0.5)?;
        let ga = solve_triangular(&lt, &s, Uplo::Upper, Side::Left, Diag::NonUnit)?;
        let ga = solve_triangular(&l, &ga, Uplo::Lower, Side::Right, Diag::NonUnit)?;
        if ga.dtype().is_complex() {
            // PyTorch leaves the complex gradient as it is: S's diagonal is complex, so gA
            // is Hermitian only up to an anti-Hermitian part, which no Hermitian dA sees
            return Ok(vec![Some(ga)]);
        }
        let ga = ga.add(&ga.mH()?)?.mul_scalar(0.5)?;
        Ok(vec![Some(ga)])
    }

    // dL = L Φ(L⁻¹ dA L⁻ᴴ), Φ = the lower triangle with the diagonal halved, from dA as
    // given (PyTorch's cholesky_jvp; a Hermitian dA is the tangent of a Hermitian A);
    // Upper: dU = dLᴴ. For a symmetric dA that is the dL of dL Lᵀ + L dLᵀ = dA, which
    // the device may solve by the factorisation's recurrence, fused (a sixth of the
    // flops), where nothing of the tangent is recorded.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        let f = cx.output(0);
        if !should_record(&[f, da]) && f.dtype() == da.dtype() {
            let upper = self.uplo == Uplo::Upper;
            let fused = f.storage().cholesky_jvp(f.layout(), da.storage(), da.layout(), upper)?;
            if let Some((s, layout)) = fused {
                return Ok(vec![Some(from_kernel(s, layout))]);
            }
        }
        let l = match self.uplo {
            Uplo::Lower => cx.output(0).clone(),
            Uplo::Upper => cx.output(0).mH()?,
        };
        let x = solve_triangular(&l, da, Uplo::Lower, Side::Left, Diag::NonUnit)?;
        let x = solve_triangular(&l.mH()?, &x, Uplo::Upper, Side::Right, Diag::NonUnit)?;
        let phi =
            x.tril(-1)?.add(&x.diagonal(0, -2, -1)?.mul_scalar(0.5)?.diag_embed(0, -2, -1)?)?;
        let dl = l.matmul(&phi)?;
        Ok(vec![Some(match self.uplo {
            Uplo::Lower => dl,
            Uplo::Upper => dl.mH()?,
        })])
    }
}

/// Computes the Cholesky factor of symmetric positive-definite matrices
/// (`torch.linalg.cholesky`; a primitive).
///
/// Math: `A = L Lᵀ` with `L` lower triangular with a positive diagonal; with
/// `Uplo::Upper` (PyTorch's `upper=True`) returns `U = Lᵀ`, so `A = Uᵀ U`.
/// Only the `uplo` triangle of `a` is read; the other triangle of the result is zero.
///
/// Shapes: `a: (*, n, n)` → `(*, n, n)`; empty matrices and empty batches give empty
/// results.
///
/// Dtypes: f32, f64; c64, c128 for Hermitian positive-definite `A = L Lᴴ` (`Uᴴ U`; the
/// imaginary parts of the diagonal are not read, and `L`'s diagonal is real); bf16 and
/// f16 are computed in f32 and rounded back (PyTorch refuses them).
///
/// Gradient: for symmetric `A`, `gA = L⁻ᵀ Φ*(Lᵀ gL) L⁻¹`, symmetrised as PyTorch does
/// (the gradient for a symmetric input, split evenly between `(i, j)` and `(j, i)`),
/// although only one triangle is read. Complex: `gA = L⁻ᴴ Φ*(Lᴴ gL) L⁻¹` as it is, not
/// made Hermitian (as PyTorch: its anti-Hermitian part is invisible to Hermitian
/// perturbations). Differentiable to any order.
///
/// Errors: `NotPositiveDefinite { batch, order }` for the first matrix of the flattened
/// batch whose leading minor of order `order` (1-based, LAPACK's `info`) is not positive
/// definite, NaN included; `BadShape` ("square") if `a` is not `(*, n, n)`;
/// `UnsupportedDType` for non-float input. See [`cholesky_ex`] for a variant that does not
/// fail.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{cholesky, Uplo};
/// let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], (2, 2))?;
/// let l = cholesky(&a, Uplo::Lower)?;
/// assert_eq!(l.to_vec::<f64>()?, vec![2.0, 0.0, 1.0, 2.0]);
/// let u = cholesky(&a, Uplo::Upper)?;
/// assert_eq!(u.to_vec::<f64>()?, vec![2.0, 1.0, 0.0, 2.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn cholesky(a: &Tensor, uplo: Uplo) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return cholesky(&c[0], uplo);
    }
    const OP: &str = "linalg.cholesky";
    let (l, info) = factor(OP, a, uplo)?;
    check_info(OP, &info, batch_of(a, 2).numel())?;
    Ok(l)
}

/// `NotPositiveDefinite` for the first matrix whose `info` (the buffer of [`factor`], `n`
/// entries) is not 0: scanned where it lies (the error names the matrix, so this is the
/// one read back).
fn check_info(op: &'static str, info: &Storage, n: usize) -> Result<()> {
    match info.first_nonzero(&Layout::contiguous(Shape::of(&[n][..])))? {
        None => Ok(()),
        Some((batch, order)) => {
            Err(Error::NotPositiveDefinite { op, batch, order: order as usize })
        }
    }
}

/// The result of [`cholesky_ex`] (PyTorch's `(L, info)` named tuple).
#[derive(Debug, Clone)]
pub struct CholeskyEx {
    /// The factor, `(*, n, n)`: `L` (or `U` with `Uplo::Upper`) for each matrix whose
    /// `info` is 0. For a matrix that is not positive definite, the state LAPACK's
    /// unblocked `potf2` leaves (the same as PyTorch's for `n` up to about 100, where its
    /// LAPACK switches to a blocked algorithm with another partial state): the first
    /// `info − 1` columns of `L`, the failing pivot `a_kk − Σ_j l_kj²` (≤ 0 or NaN) at
    /// `k = info − 1` on the diagonal, and `A`'s entries of the triangle read below it and
    /// to its right.
    pub l: Tensor,
    /// `(*)`, I64: 0 for success, else the order of the first leading minor that is not
    /// positive definite (1-based). PyTorch's is int32.
    pub info: Tensor,
}

/// The Cholesky factor, with a per-matrix status instead of an error
/// (`torch.linalg.cholesky_ex`; the [`cholesky`] primitive).
///
/// Returns [`CholeskyEx`] `{ l, info }`: `l` as [`cholesky`] returns it where `info` is 0
/// (see [`CholeskyEx::l`] for the failed matrices), `info` the order of the first leading
/// minor that is not positive definite (NaN included) or 0. PyTorch's `check_errors=True`
/// is [`cholesky`].
///
/// Shapes: `a: (*, n, n)` → `l: (*, n, n)`, `info: (*)`. Dtypes as [`cholesky`].
///
/// Gradient: as [`cholesky`], through `l` (not meaningful for failed matrices); `info` is
/// an integer tensor without gradient.
///
/// Errors: `BadShape` ("square") if `a` is not `(*, n, n)`; `UnsupportedDType` for non-float
/// input. Never fails for a matrix that is not positive definite.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{cholesky_ex, Uplo};
/// let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0, 1.0, 2.0, 2.0, 1.0], (2, 2, 2))?;
/// let r = cholesky_ex(&a, Uplo::Lower)?;
/// assert_eq!(r.info.to_vec::<i64>()?, vec![0, 2]); // 1 − 2² < 0: the minor of order 2
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn cholesky_ex(a: &Tensor, uplo: Uplo) -> Result<CholeskyEx> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return cholesky_ex(&c[0], uplo);
    }
    const OP: &str = "linalg.cholesky_ex";
    let (l, info) = factor(OP, a, uplo)?;
    let info = from_kernel(info, Layout::contiguous(batch_of(a, 2)));
    Ok(CholeskyEx { l, info })
}

// ------------------------------------------------------------------------------------
// cholesky_solve

/// `A⁻¹ B` with `A = L Lᵀ` (or `Uᵀ U`) by two triangular solves, without history.
fn solve_with_factor(b: &Tensor, l: &Tensor, uplo: Uplo) -> Result<Tensor> {
    let (b, l) = (b.detach(), l.detach());
    let lt = l.mH()?;
    let (first, second) = match uplo {
        Uplo::Lower => (&l, &lt), // L Y = B, Lᵀ X = Y
        Uplo::Upper => (&lt, &l), // Uᵀ Y = B, U X = Y
    };
    let y = solve_triangular(first, &b, Uplo::Lower, Side::Left, Diag::NonUnit)?;
    solve_triangular(second, &y, Uplo::Upper, Side::Left, Diag::NonUnit)
}

#[derive(Debug)]
struct CholeskySolve {
    uplo: Uplo,
}

impl Op for CholeskySolve {
    fn name(&self) -> &'static str {
        "cholesky_solve"
    }

    // X = A⁻¹ B with A = L Lᵀ:  dX = A⁻¹ (dB − dA X),  dA = dL Lᵀ + L dLᵀ, so
    //   gB = A⁻¹ G = cholesky_solve(G, L),
    //   gL = −(gB Xᵀ + X gBᵀ) L        (Upper, A = Uᵀ U: gU = −U (gB Xᵀ + X gBᵀ)),
    // a full matrix although only one triangle of L is read: PyTorch's
    // cholesky_solve_backward (FunctionsManual.cpp). Tensor ops (gB through this op
    // again), so differentiable to any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let l = cx.input(1);
        let gb = cholesky_solve(g, l, self.uplo)?;
        let gl = if cx.needs_input_grad(1) {
            let x = cx.output(0)?;
            let c = gb.matmul(&x.mH()?)?;
            let c = c.add(&c.mH()?)?;
            Some(match self.uplo {
                Uplo::Lower => c.matmul(l)?.neg()?,
                Uplo::Upper => l.matmul(&c)?.neg()?,
            })
        } else {
            None
        };
        Ok(vec![cx.needs_input_grad(0).then_some(gb), gl])
    }

    // dX = A⁻¹ (dB − dA X), dA = dL Lᴴ + L dLᴴ (Upper: dUᴴ U + Uᴴ dU), dL a full matrix
    // as in the VJP
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let l = cx.input(1);
        let x = cx.output(0);
        let mut rhs = t[0].clone();
        if let Some(dl) = &t[1] {
            let da = factor_tangent(l, dl, self.uplo)?;
            let dax = da.matmul(x)?.neg()?;
            rhs = Some(match rhs {
                Some(db) => db.add(&dax)?,
                None => dax,
            });
        }
        let Some(rhs) = rhs else { return Ok(vec![None]) };
        Ok(vec![Some(cholesky_solve(&rhs, l, self.uplo)?)])
    }
}

/// `dA` of `A = L Lᴴ` (`Uplo::Lower`) or `A = Uᴴ U` (`Uplo::Upper`) for the tangent `df`
/// of the factor (a full matrix).
fn factor_tangent(f: &Tensor, df: &Tensor, uplo: Uplo) -> Result<Tensor> {
    let p = match uplo {
        Uplo::Lower => df.matmul(&f.mH()?)?,
        Uplo::Upper => df.mH()?.matmul(f)?,
    };
    p.add(&p.mH()?)
}

/// Solves `A X = B` given the Cholesky factor of `A` (`torch.cholesky_solve(B, L, upper)`;
/// an explicit composite: two triangular solves, and PyTorch's VJP).
///
/// Math: `X = A⁻¹ B` with `A = L Lᵀ` (`Uplo::Lower`, PyTorch's default `upper=False`) or
/// `A = Uᵀ U` (`Uplo::Upper`). Only the `uplo` triangle of `l` is read.
///
/// Shapes: `b: (*, n, k)`, `l: (*, n, n)` → `(*, n, k)`; the batch dims broadcast. Note
/// the argument order: the right-hand side comes first, as in PyTorch.
///
/// Dtypes: f32, f64, c64, c128 (`A = L Lᴴ` for complex), both operands of one dtype
/// (PyTorch does not promote here); bf16 and f16 are computed in f32.
///
/// Gradient: `gB = A⁻¹ G`, and for the factor PyTorch's full matrix
/// `gL = −(gB Xᵀ + X gBᵀ) L` (`gU = −U (gB Xᵀ + X gBᵀ)`), not projected on the triangle
/// read (the gradient of `(L Lᵀ)⁻¹ B` for a general `L`). Differentiable to any order.
///
/// Errors: `BadShape` if `b` has fewer than 2 dims, or ("square") if `l` is not square;
/// `ShapeMismatch` if `b`'s rows are not `n` or the batches do not broadcast;
/// `DTypeMismatch` if the dtypes differ; `UnsupportedDType` for non-float operands. A zero
/// on the factor's diagonal gives infinities or NaN, unchecked (as in PyTorch).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{cholesky, cholesky_solve, Uplo};
/// let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], (2, 2))?;
/// let l = cholesky(&a, Uplo::Lower)?;
/// let b = Tensor::from_vec(vec![6.0f64, 7.0], (2, 1))?;
/// let x = cholesky_solve(&b, &l, Uplo::Lower)?; // A x = b
/// assert_eq!(x.to_vec::<f64>()?, vec![1.0, 1.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn cholesky_solve(b: &Tensor, l: &Tensor, uplo: Uplo) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[b, l])? {
        return cholesky_solve(&c[0], &c[1], uplo);
    }
    const OP: &str = "cholesky_solve";
    check_float_or_complex(OP, b)?;
    check_float_or_complex(OP, l)?;
    if b.rank() < 2 {
        return Err(Error::BadShape {
            op: OP,
            expected: "a right-hand side of at least 2 dims",
            got: b.shape().clone(),
        });
    }
    let n = check_square(OP, l)?;
    if b.dims()[b.rank() - 2] != n {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: b.shape().clone(),
            rhs: l.shape().clone(),
        });
    }
    check_same_dtype(OP, b, l)?;
    let (b, l) = broadcast_batch(OP, b, 2, l, 2)?;
    if b.dtype().is_half() {
        let x = cholesky_solve(&b.to_dtype(DType::F32)?, &l.to_dtype(DType::F32)?, uplo)?;
        return x.to_dtype(b.dtype());
    }
    let x = solve_with_factor(&b, &l, uplo)?;
    record1(CholeskySolve { uplo }, &[&b, &l], x, true)
}

// ------------------------------------------------------------------------------------
// cholesky_inverse

#[derive(Debug)]
struct CholeskyInverse {
    uplo: Uplo,
}

impl Op for CholeskyInverse {
    fn name(&self) -> &'static str {
        "cholesky_inverse"
    }

    // X = A⁻¹ with A = L Lᵀ:  dX = −X dA X,  dA = dL Lᵀ + L dLᵀ, so
    //   gL = −X (G + Gᵀ) X L           (Upper, A = Uᵀ U: gU = −U X (G + Gᵀ) X),
    // a full matrix: PyTorch's cholesky_inverse_backward (FunctionsManual.cpp). Tensor
    // ops on the saved inverse, so differentiable to any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let l = cx.input(0);
        let x = cx.output(0)?;
        let c = x.matmul(&g.add(&g.mH()?)?)?.matmul(&x)?;
        let gl = match self.uplo {
            Uplo::Lower => c.matmul(l)?.neg()?,
            Uplo::Upper => l.matmul(&c)?.neg()?,
        };
        Ok(vec![Some(gl)])
    }

    // dX = −X dA X, dA = dL Lᴴ + L dLᴴ (Upper: dUᴴ U + Uᴴ dU), with L and dL the
    // triangle read: the derivative of the function computed (PyTorch's own JVP here is
    // wrong, and its VJP, which the one above follows, takes the factor as a full
    // matrix; the two agree for a triangular factor and tangent)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(dl) = &t[0] else { return Ok(vec![None]) };
        let x = cx.output(0);
        let tri = |m: &Tensor| match self.uplo {
            Uplo::Lower => m.tril(0),
            Uplo::Upper => m.triu(0),
        };
        let da = factor_tangent(&tri(cx.input(0))?, &tri(dl)?, self.uplo)?;
        Ok(vec![Some(x.matmul(&da)?.matmul(x)?.neg()?)])
    }
}

/// The inverse of `A` from its Cholesky factor (`torch.cholesky_inverse(L, upper)`; an
/// explicit composite: a triangular inverse and a product, and PyTorch's VJP).
///
/// Math: `(L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹` (`Uplo::Lower`, PyTorch's default) or `(Uᵀ U)⁻¹ = U⁻¹ U⁻ᵀ`
/// (`Uplo::Upper`). Only the `uplo` triangle of `l` is read; the result is exactly
/// symmetric.
///
/// Shapes: `l: (*, n, n)` → `(*, n, n)`.
///
/// Dtypes: f32, f64, c64, c128 (`(L Lᴴ)⁻¹` for complex); bf16 and f16 are computed in
/// f32 (PyTorch refuses them).
///
/// Gradient: PyTorch's full matrix `gL = −X (G + Gᵀ) X L` (`gU = −U X (G + Gᵀ) X`) with
/// `X` the result, not projected on the triangle read. Differentiable to any order.
///
/// Errors: `BadShape` ("square") if `l` is not `(*, n, n)`; `UnsupportedDType` for
/// non-float input. A zero on the diagonal gives infinities or NaN, unchecked (as in
/// PyTorch).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{cholesky_inverse, Uplo};
/// let l = Tensor::from_vec(vec![2.0f64, 0.0, 1.0, 1.0], (2, 2))?; // A = [[4, 2], [2, 2]]
/// let x = cholesky_inverse(&l, Uplo::Lower)?;
/// assert_eq!(x.to_vec::<f64>()?, vec![0.5, -0.5, -0.5, 1.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn cholesky_inverse(l: &Tensor, uplo: Uplo) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[l])? {
        return cholesky_inverse(&c[0], uplo);
    }
    const OP: &str = "cholesky_inverse";
    check_float_or_complex(OP, l)?;
    let n = check_square(OP, l)?;
    if l.dtype().is_half() {
        return cholesky_inverse(&l.to_dtype(DType::F32)?, uplo)?.to_dtype(l.dtype());
    }
    let f = l.detach();
    let eye = Tensor::eye(n, l.dtype())?;
    let t = solve_triangular(&f, &eye, uplo, Side::Left, Diag::NonUnit)?;
    // L⁻ᵀ L⁻¹ or U⁻¹ U⁻ᵀ, then exactly symmetric
    let x = match uplo {
        Uplo::Lower => t.mH()?.matmul(&t)?,
        Uplo::Upper => t.matmul(&t.mH()?)?,
    };
    let x = x.add(&x.mH()?)?.mul_scalar(0.5)?;
    record1(CholeskyInverse { uplo }, &[l], x, true)
}
