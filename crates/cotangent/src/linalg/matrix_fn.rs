//! Matrix functions: `linalg.matrix_exp` (a primitive whose VJP is the op itself applied
//! to a block matrix).

use super::util::{check_float, check_matrix, check_square, from_kernel};
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::BackendStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

const OP: &str = "linalg.matrix_exp";

#[derive(Debug)]
struct MatrixExp {
    n: usize,
}

impl Op for MatrixExp {
    fn name(&self) -> &'static str {
        OP
    }

    // The Fréchet derivative of exp at A in direction E is
    //   L(A, E) = ∫₀¹ e^{sA} E e^{(1−s)A} ds = [exp([[A, E], [0, A]])]₁₂
    // (Mathias 1996, "A chain rule for matrix functions and applications", SIAM J. Matrix
    // Anal. Appl. 17(3); Higham 2008, "Functions of Matrices", Theorem 3.6). Its adjoint
    // for the trace inner product is L(Aᵀ, ·), so
    //   gA = L(Aᵀ, G) = [exp([[Aᵀ, G], [0, Aᵀ]])]₁₂
    // (PyTorch's differential_analytic_matrix_function in FunctionsManual.cpp). It calls
    // the differentiable matrix_exp itself, so every order goes through this rule.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let n = self.n;
        let at = cx.input(0).mT()?;
        let top = Tensor::cat(&[&at, g], -1)?;
        let bottom = Tensor::cat(&[&at.zeros_like()?, &at], -1)?;
        let e = matrix_exp(&Tensor::cat(&[&top, &bottom], -2)?)?;
        Ok(vec![Some(e.narrow(-2, 0, n)?.narrow(-1, n, n)?)])
    }
}

/// The matrix exponential (`torch.linalg.matrix_exp`; a primitive).
///
/// Math: `exp(A) = Σ_k A^k / k!`, by scaling and squaring with Padé approximants (Higham
/// 2005, "The scaling and squaring method for the matrix exponential revisited"): per
/// matrix, the Padé degree (3, 5, 7, 9 or 13; f32: 3, 5 or 7) is chosen from the 1-norm,
/// and a matrix of larger norm is scaled by `2⁻ˢ` and the result squared `s` times.
/// Accurate to a few units of roundoff times the condition of the exponential. A matrix
/// with a NaN or an infinity gives NaN everywhere, and a `1 x 1` matrix is the scalar
/// exponential (`exp(inf) = inf`), as PyTorch.
///
/// Shapes: `a: (*, n, n)` → `(*, n, n)`. Dtypes: f32, f64; bf16 and f16 are computed in
/// f32 and rounded back.
///
/// Gradient: `gA = [exp([[Aᵀ, G], [0, Aᵀ]])]₁₂` (the top-right `n x n` block of the
/// exponential of a `2n x 2n` block matrix: the adjoint of the Fréchet derivative), by
/// this op itself, so differentiable to any order.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims or is not square; `UnsupportedDType`
/// for non-float input.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::matrix_exp;
/// // a rotation generator: exp([[0, -t], [t, 0]]) = [[cos t, -sin t], [sin t, cos t]]
/// let t = 0.5f64;
/// let a = Tensor::from_vec(vec![0.0, -t, t, 0.0], (2, 2))?;
/// let e = matrix_exp(&a)?.to_vec::<f64>()?;
/// let want = [t.cos(), -t.sin(), t.sin(), t.cos()];
/// assert!(e.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-14));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn matrix_exp(a: &Tensor) -> Result<Tensor> {
    check_matrix(OP, a)?;
    let n = check_square(OP, a)?;
    check_float(OP, a)?;
    if a.dtype().is_half() {
        return matrix_exp(&a.to_dtype(DType::F32)?)?.to_dtype(a.dtype());
    }
    let (s, l) = a.storage().cpu().matrix_exp(a.layout())?;
    Ok(record1(MatrixExp { n }, &[a], from_kernel(s, l), false))
}
