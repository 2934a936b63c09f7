//! Matrix functions: `linalg.matrix_exp` (a primitive whose VJP is the op itself applied
//! to a block matrix).

use super::util::{check_float_or_complex, check_matrix, check_square, from_kernel};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

const OP: &str = "linalg.matrix_exp";

#[derive(Debug)]
struct MatrixExp;

impl Op for MatrixExp {
    fn name(&self) -> &'static str {
        OP
    }

    // The Fréchet derivative of exp at A in direction E is
    //   L(A, E) = ∫₀¹ e^{sA} E e^{(1−s)A} ds = [exp([[A, E], [0, A]])]₁₂
    // (Mathias 1996, "A chain rule for matrix functions and applications", SIAM J. Matrix
    // Anal. Appl. 17(3); Higham 2008, "Functions of Matrices", Theorem 3.6). Its adjoint
    // for the trace inner product is L(Aᵀ, ·) (L(Aᴴ, ·) for complex A and the real inner
    // product Re tr(Gᴴ E)), so
    //   gA = L(Aᴴ, G) = [exp([[Aᴴ, G], [0, Aᴴ]])]₁₂
    // (PyTorch's differential_analytic_matrix_function in FunctionsManual.cpp, which
    // exponentiates the 2n x 2n block matrix). Here the kernel uses the block structure
    // (three n x n products per product of the block matrix) and the linearity in G (no
    // squarings for a large G); the result is recorded as `ExpFrechet`, so every order
    // goes through this rule.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(exp_frechet(&cx.input(0).mH()?, g)?)])
    }

    // d exp(A) = L(A, dA)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(exp_frechet(cx.input(0), da)?)])
    }
}

/// `L(X, E) = [exp([[X, E], [0, X]])]₁₂` for `x`, `e` of one shape `(*, n, n)`, recorded.
fn exp_frechet(x: &Tensor, e: &Tensor) -> Result<Tensor> {
    if x.dtype().is_half() {
        // computed in f32, as the forward
        let f = exp_frechet(&x.to_dtype(DType::F32)?, &e.to_dtype(DType::F32)?)?;
        return f.to_dtype(x.dtype());
    }
    let n = x.dims()[x.rank() - 1];
    let e = if e.dtype() == x.dtype() { e.clone() } else { e.to_dtype(x.dtype())? };
    let e = e.broadcast_to(x.shape().clone())?;
    if let Some((s, l)) = x.storage().matrix_exp_frechet(x.layout(), (e.storage(), e.layout()))? {
        return record1(ExpFrechet { n }, &[x, &e], from_kernel(s, l), false);
    }
    // the definition, recorded through matrix_exp itself (as PyTorch computes it), with
    // E scaled to about X's size first (by a constant: L is linear in E), so that the
    // block matrix's norm, and with it the squarings and their rounding, follow X's
    let z = x.zeros_like()?;
    if n == 0 {
        return matrix_exp(&blocks(x, &e, &z, x)?)?.narrow(-2, 0, n)?.narrow(-1, n, n);
    }
    let size = |t: &Tensor| t.detach().abs()?.amax(&[-2, -1], true);
    let en = size(&e)?;
    let en = Tensor::where_cond(&en.eq_scalar(0.0)?, &en.ones_like()?, &en)?;
    let s = size(x)?.clamp(Some(1.0), None)?.div(&en)?;
    let l = matrix_exp(&blocks(x, &e.mul(&s)?, &z, x)?)?.narrow(-2, 0, n)?.narrow(-1, n, n)?;
    l.div(&s)
}

/// `[[a, b], [c, d]]` from four `(*, n, n)` blocks.
fn blocks(a: &Tensor, b: &Tensor, c: &Tensor, d: &Tensor) -> Result<Tensor> {
    Tensor::cat(&[&Tensor::cat(&[a, b], -1)?, &Tensor::cat(&[c, d], -1)?], -2)
}

/// The Fréchet derivative of the exponential as an op of both its arguments.
#[derive(Debug)]
struct ExpFrechet {
    n: usize,
}

impl Op for ExpFrechet {
    fn name(&self) -> &'static str {
        OP
    }

    // L(X, E) = [exp(M)]₁₂ with M = [[X, E], [0, X]], so with H the cotangent of L placed
    // in the top-right block of a 2n x 2n zero matrix (Ĥ), the cotangent of M is
    // gM = L(Mᴴ, Ĥ) (the exponential's VJP, again this op), and gX = gM₁₁ + gM₂₂,
    // gE = gM₁₂.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(h) = &g[0] else { return Ok(vec![None, None]) };
        let n = self.n;
        let (x, e) = (cx.input(0), cx.input(1));
        let z = x.zeros_like()?;
        let m = blocks(x, e, &z, x)?;
        let hz = h.zeros_like()?;
        let gm = exp_frechet(&m.mH()?, &blocks(&hz, h, &hz, &hz)?)?;
        let gx = if cx.needs_input_grad(0) {
            let top = gm.narrow(-2, 0, n)?.narrow(-1, 0, n)?;
            Some(top.add(&gm.narrow(-2, n, n)?.narrow(-1, n, n)?)?)
        } else {
            None
        };
        let ge =
            cx.needs_input_grad(1).then(|| gm.narrow(-2, 0, n)?.narrow(-1, n, n)).transpose()?;
        Ok(vec![gx, ge])
    }

    // L(X, E) = [exp(M)]₁₂ with M = [[X, E], [0, X]], so dL = [L(M, dM)]₁₂ with
    // dM = [[dX, dE], [0, dX]] (zeros for a missing tangent)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let n = self.n;
        let (x, e) = (cx.input(0), cx.input(1));
        let z = x.zeros_like()?;
        let dx = t[0].clone().map_or_else(|| x.zeros_like(), Ok)?;
        let de = t[1].clone().map_or_else(|| e.zeros_like(), Ok)?;
        let m = blocks(x, e, &z, x)?;
        let dm = blocks(&dx, &de, &z, &dx)?;
        Ok(vec![Some(exp_frechet(&m, &dm)?.narrow(-2, 0, n)?.narrow(-1, n, n)?)])
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
/// Shapes: `a: (*, n, n)` → `(*, n, n)`. Dtypes: f32, f64, c64, c128 (complex input by
/// the same rule, its products and quotient through faer's generic kernels); bf16 and
/// f16 are computed in f32 and rounded back.
///
/// Gradient: `gA = [exp([[Aᵀ, G], [0, Aᵀ]])]₁₂` (`Aᴴ` for complex input; the top-right `n x n` block of the
/// exponential of a `2n x 2n` block matrix: the adjoint of the Fréchet derivative), as
/// PyTorch. It is computed on `n x n` blocks (each product of the block matrix is three
/// `n x n` products) with `G` first scaled by a power of two to about `A`'s 1-norm (the
/// result is linear in `G`), so a backward costs about three forwards; PyTorch
/// exponentiates the `2n x 2n` matrix, whose norm grows with `G`'s. Differentiable to any
/// order (the derivative of that block is again such a block, of order `2n`).
///
/// Errors: `BadShape` if `a` has fewer than 2 dims or is not square; `UnsupportedDType`
/// for integer or boolean input.
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
    check_square(OP, a)?;
    check_float_or_complex(OP, a)?;
    if a.dtype().is_half() {
        return matrix_exp(&a.to_dtype(DType::F32)?)?.to_dtype(a.dtype());
    }
    let (s, l) = a.storage().matrix_exp(a.layout())?;
    record1(MatrixExp, &[a], from_kernel(s, l), false)
}
