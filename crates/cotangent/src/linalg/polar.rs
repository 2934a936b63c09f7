//! `linalg.polar`: the polar decomposition `A = U H` through the SVD, differentiated
//! through the Sylvester equation of the rotation's skew part (no singular value gaps).

use super::spectral_jvp::{herm, sylvester, v_diag_vh};
use super::svd;
use super::util::{check_float_or_complex, check_matrix};
use crate::autograd::forward::JvpCtx;
use crate::autograd::mode::no_grad;
use crate::autograd::node::{record, should_record, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.polar";

/// The result of [`polar`] (PyTorch's named tuple `(U, H)`).
#[derive(Debug, Clone)]
pub struct Polar {
    /// The factor with orthonormal (unitary) columns, `(*, m, n)`.
    pub u: Tensor,
    /// The symmetric (Hermitian) positive-semidefinite factor, `(*, n, n)`.
    pub h: Tensor,
}

#[derive(Debug)]
struct PolarOp {
    /// The right singular vectors (as columns, `V`) of the forward, without history.
    v: Tensor,
    /// Its singular values, `(*, n)`, real, without history.
    s: Tensor,
}

/// `V` and the singular values of `a` (reduced SVD), recorded as far as grad mode and
/// `a`'s tangents ask.
fn spectral(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let f = svd(a, false).map_err(|e| e.in_op(OP))?;
    Ok((f.vh.mH()?, f.s))
}

/// `½ (M − Mᴴ)`.
fn skew(m: &Tensor) -> Result<Tensor> {
    m.sub(&m.mH()?)?.mul_scalar(0.5)
}

/// `H⁻¹ = V diag(1/s) Vᴴ`.
fn h_inverse(v: &Tensor, s: &Tensor) -> Result<Tensor> {
    v_diag_vh(v, &s.reciprocal()?)
}

impl PolarOp {
    /// `V` and `s` for the rules: the forward's, or those of a recorded SVD of `a` when
    /// the rule itself is differentiated.
    fn spectral_for(&self, a: &Tensor, recorded: bool) -> Result<(Tensor, Tensor)> {
        if recorded {
            spectral(a)
        } else {
            Ok((self.v.clone(), self.s.clone()))
        }
    }
}

impl Op for PolarOp {
    fn name(&self) -> &'static str {
        OP
    }

    // A = U H with UᴴU = I, H = Hᴴ. Then dA = dU H + U dH; with C = Uᴴ dA, the part of dU
    // in the range of U is U X with X = UᴴdU skew-Hermitian, and C = X H + dH, so
    //   X H + H X = C − Cᴴ          (a Sylvester equation: X = L(C − Cᴴ), L as below)
    //   dH = C − X H                (taken Hermitian, as it is exactly)
    //   dU = U X + (dA − U C) H⁻¹   (the part outside the range of U, for m > n)
    // with L(Y) = V [(Vᴴ Y V)_ij / (s_i + s_j)] Vᴴ, H = V diag(s) Vᴴ, a self-adjoint map
    // (Higham 2008, "Functions of Matrices", 8.1). Its adjoint for the real inner
    // product Re tr(Gᴴ E), with Gs = herm(G_H) and M = Uᴴ G_U − Gs H:
    //   gA = U (Gs + 2 L(skew(M))) + (G_U − U Uᴴ G_U) H⁻¹.
    // Defined where A has full column rank (s > 0), as PyTorch says.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        if g.iter().all(Option::is_none) {
            return Ok(vec![None]);
        }
        let (u, h) = (cx.output(0)?, cx.output(1)?);
        let (v, s) = self.spectral_for(cx.input(0), cx.create_graph())?;
        let gs = match &g[1] {
            Some(gh) => herm(gh)?,
            None => h.zeros_like()?,
        };
        let mut m = gs.matmul(&h)?.neg()?;
        let mut outside = None;
        if let Some(gu) = &g[0] {
            let ug = u.mH()?.matmul(gu)?;
            m = m.add(&ug)?;
            outside = Some(gu.sub(&u.matmul(&ug)?)?.matmul(&h_inverse(&v, &s)?)?);
        }
        let inner = gs.add(&sylvester(&v, &s, &skew(&m)?)?.mul_scalar(2.0)?)?;
        let mut ga = u.matmul(&inner)?;
        if let Some(o) = outside {
            ga = ga.add(&o)?;
        }
        Ok(vec![Some(ga)])
    }

    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None]) };
        let a = cx.input(0);
        let (u, h) = (cx.output(0), cx.output(1));
        let (v, s) = self.spectral_for(a, should_record(&[a, da]))?;
        let c = u.mH()?.matmul(da)?;
        let x = sylvester(&v, &s, &c.sub(&c.mH()?)?)?;
        let dh = herm(&c.sub(&x.matmul(h)?)?)?;
        let du = u.matmul(&x)?.add(&da.sub(&u.matmul(&c)?)?.matmul(&h_inverse(&v, &s)?)?)?;
        Ok(vec![Some(du), Some(dh)])
    }
}

/// The polar decomposition `A = U H` (`torch.linalg.polar`; a primitive computed through
/// the [`svd`](super::svd())).
///
/// Math: for `a: (*, m, n)` with `m >= n`, `U` has orthonormal (unitary) columns and `H`
/// is symmetric (Hermitian) positive semidefinite; from the reduced SVD `A = W S Vᴴ`,
/// `U = W Vᴴ` (the matrix with orthonormal columns nearest to `A` in the Frobenius
/// norm) and `H = V S Vᴴ`. `H` is unique; `U` is unique when `A` has full column rank
/// (otherwise it is one valid choice, from the SVD's vectors).
///
/// Shapes: `u: (*, m, n)`, `h: (*, n, n)`; batched; empty matrices give empty factors.
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back
/// (PyTorch refuses them).
///
/// Gradient: of `U` and `H`, in any combination, through the Sylvester equation
/// `X H + H X = C − Cᴴ` of the rotation's skew part (`C = Uᴴ dA`): no singular value
/// gaps, so finite at repeated singular values. Defined where `A` has full column rank
/// (PyTorch's statement); at a rank-deficient `A` it is inf or NaN. Differentiable to any
/// order (the higher orders through a recorded SVD).
///
/// Errors: `BadShape` for fewer than 2 dims; `InvalidArgument` for `m < n` (as
/// PyTorch); `UnsupportedDType` for integer or bool input; `NoConvergence` (named
/// `linalg.polar`) for NaN or infinite entries.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::polar;
/// // a rotation by 90° times diag(2, 3): U is the rotation, H = diag(2, 3)
/// let a = Tensor::from_vec(vec![0.0f64, -3.0, 2.0, 0.0], (2, 2))?;
/// let p = polar(&a)?;
/// let (u, h) = (p.u.to_vec::<f64>()?, p.h.to_vec::<f64>()?);
/// let want_u = [0.0, -1.0, 1.0, 0.0];
/// let want_h = [2.0, 0.0, 0.0, 3.0];
/// assert!(u.iter().zip(want_u).all(|(x, y)| (x - y).abs() < 1e-15));
/// assert!(h.iter().zip(want_h).all(|(x, y)| (x - y).abs() < 1e-15));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn polar(a: &Tensor) -> Result<Polar> {
    check_matrix(OP, a)?;
    check_float_or_complex(OP, a)?;
    let (m, n) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
    if m < n {
        return Err(Error::InvalidArgument {
            op: OP,
            arg: "A",
            reason: "input must have at least as many rows as columns",
        });
    }
    if a.dtype().is_half() {
        let p = polar(&a.to_dtype(DType::F32)?)?;
        return Ok(Polar { u: p.u.to_dtype(a.dtype())?, h: p.h.to_dtype(a.dtype())? });
    }
    // not on PyTorch's autocast lists: computed in a's dtype, the SVD included
    let _plain = crate::autocast::suspend();
    let (u, h, v, s) = {
        let _guard = no_grad();
        let f = svd(&a.detach(), false).map_err(|e| e.in_op(OP))?;
        let v = f.vh.mH()?;
        let u = f.u.matmul(&f.vh)?;
        let h = v_diag_vh(&v, &f.s)?;
        (u, h, v, f.s)
    };
    let mut out = record(PolarOp { v, s }, &[a], vec![u, h], true)?.into_iter();
    match (out.next(), out.next()) {
        (Some(u), Some(h)) => Ok(Polar { u, h }),
        _ => Err(Error::Internal { op: OP, reason: "two outputs expected" }),
    }
}
