//! `linalg.matrix_sqrth`: the principal square root of symmetric (Hermitian)
//! positive-definite matrices, through [`eigh`], differentiated through the Sylvester
//! equation `X dX + dX X = dA` rather than through the eigenvectors (no eigenvalue gaps).

use super::spectral_jvp::{herm, sylvester, v_diag_vh};
use super::util::{check_float_or_complex, check_matrix, check_square};
use super::{eigh, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::mode::no_grad;
use crate::autograd::node::{record1, should_record, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

const OP: &str = "linalg.matrix_sqrth";

#[derive(Debug)]
struct MatrixSqrth {
    /// The eigenvectors of the forward, without history.
    v: Tensor,
    /// The square roots of its eigenvalues clamped at 0, `(*, n)`, real, without history.
    s: Tensor,
}

/// The eigenvectors `V` and `s = √max(w, 0)` of the symmetric matrix of `a`'s lower
/// triangle, recorded as far as grad mode and `a`'s tangents ask.
fn spectral(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let e = eigh(a, Uplo::Lower).map_err(|e| e.in_op(OP))?;
    Ok((e.eigenvectors, e.eigenvalues.clamp(Some(0.0), None)?.sqrt()?))
}

/// The solution `Y` of `X Y + Y X = ½ (M + Mᴴ)` for `X = V diag(s) Vᴴ`.
fn sylvester_herm(v: &Tensor, s: &Tensor, m: &Tensor) -> Result<Tensor> {
    sylvester(v, s, &herm(m)?)
}

impl Op for MatrixSqrth {
    fn name(&self) -> &'static str {
        OP
    }

    // X = A^½, X X = A  ⇒  X dX + dX X = dA. In the eigenbasis of X = V diag(s) Vᴴ this
    // is (s_i + s_j) dX̃_ij = dÃ_ij: dX = V [(Vᴴ dA V) / (s_i + s_j)] Vᴴ, the Fréchet
    // derivative of the square root (Higham 2008, "Functions of Matrices", 6.1), a
    // self-adjoint map, so gA is the same map applied to G. As PyTorch, the rules take
    // the symmetric (Hermitian) part of G and of dA (the derivative for a symmetric
    // input), and give a symmetric gA. With create_graph (or outer tangents) V and s are
    // those of a recorded eigh of A, so that every order is differentiable.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let ga = if cx.create_graph() {
            let (v, s) = spectral(cx.input(0))?;
            sylvester_herm(&v, &s, g)?
        } else {
            sylvester_herm(&self.v, &self.s, g)?
        };
        Ok(vec![Some(ga)])
    }

    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        let a = cx.input(0);
        let dx = if should_record(&[a, da]) {
            let (v, s) = spectral(a)?;
            sylvester_herm(&v, &s, da)?
        } else {
            sylvester_herm(&self.v, &self.s, da)?
        };
        Ok(vec![Some(dx)])
    }
}

/// The principal square root of symmetric (Hermitian) positive-definite matrices
/// (`torch.linalg.matrix_sqrth`; a primitive computed through [`eigh`]).
///
/// Math: the unique symmetric (Hermitian) positive-definite `X` with `X X = A`,
/// `X = V diag(√w) Vᵀ` from `A = V diag(w) Vᵀ`. Only the lower triangle of `a` is read
/// (the matrix used is the symmetric one with that triangle), as PyTorch. Negative
/// eigenvalues (an indefinite `A`, or rounding at a singular one) are taken as 0, as
/// PyTorch does.
///
/// Shapes: `a: (*, n, n)` → `(*, n, n)`; batched; empty matrices give empty results.
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back
/// (PyTorch refuses them).
///
/// Gradient: the Fréchet derivative `dX = V [(Vᵀ dA V)_ij / (√w_i + √w_j)] Vᵀ` (the
/// solution of `X dX + dX X = dA`), finite at repeated eigenvalues (no eigenvalue gaps),
/// for the symmetric part of the tangent, and the same map for the gradient, which is
/// symmetric (as PyTorch's). Where `A` is singular or indefinite the derivative does not
/// exist: inf or NaN, as PyTorch. Differentiable to any order (the higher orders through
/// a recorded `eigh`, whose eigenvectors' rules need distinct eigenvalues).
///
/// Errors: `BadShape` for fewer than 2 dims or non-square matrices; `UnsupportedDType`
/// for integer or bool input; `NoConvergence` (named `linalg.matrix_sqrth`) for NaN or
/// infinite entries in the lower triangle (PyTorch returns NaN).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::matrix_sqrth;
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 9.0], (2, 2))?;
/// let x = matrix_sqrth(&a)?.to_vec::<f64>()?;
/// assert!((x[0] - 2f64.sqrt()).abs() < 1e-15 && (x[3] - 3.0).abs() < 1e-15);
/// assert_eq!((x[1], x[2]), (0.0, 0.0));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn matrix_sqrth(a: &Tensor) -> Result<Tensor> {
    check_matrix(OP, a)?;
    check_square(OP, a)?;
    check_float_or_complex(OP, a)?;
    if a.dtype().is_half() {
        return matrix_sqrth(&a.to_dtype(DType::F32)?)?.to_dtype(a.dtype());
    }
    // not on PyTorch's autocast lists: computed in a's dtype, eigh included
    let _plain = crate::autocast::suspend();
    let (v, s) = {
        let _guard = no_grad();
        spectral(&a.detach())?
    };
    let x = v_diag_vh(&v, &s)?;
    record1(MatrixSqrth { v, s }, &[a], x, false)
}
