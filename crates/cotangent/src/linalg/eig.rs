//! `linalg.eig` (the general eigendecomposition, a primitive with a hand-written VJP)
//! and `linalg.eigvals` (its eigenvalues), for real and complex input, complex outputs.

use super::spectral_jvp::{gap_quotient, keep_phase_gauge};
use super::util::{check_float_or_complex, check_matrix, check_square, eigen_outputs, from_kernel};
use super::{solve, Side};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, should_record, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.eig";
const OPV: &str = "linalg.eigvals";
/// Up to this order a first-order backward pass not recorded takes the fused kernel
/// ([`Storage::eig_backward`](crate::backend::Storage)); above, the tensor ops, whose
/// products and solve are blocked.
const FUSED_N: usize = 16;

/// The eigendecomposition `A V = V diag(w)` of [`eig`] (PyTorch's named tuple
/// `(eigenvalues, eigenvectors)`).
#[derive(Debug, Clone)]
pub struct Eig {
    /// The eigenvalues `w`, complex, `(*, n)`, in no particular order.
    pub eigenvalues: Tensor,
    /// The right eigenvectors, as columns, complex, `(*, n, n)`: column `j` belongs to
    /// `eigenvalues[..., j]`, has unit 2-norm, and its component of largest modulus (the
    /// first on ties) is real and positive.
    pub eigenvectors: Tensor,
}

fn phase_dependent() -> Error {
    Error::NotDifferentiable {
        op: OP,
        reason: "each eigenvector is defined up to a unit phase (v e^{iφ}), and the loss \
                 depends on that phase, so its gradient is undefined; use a loss invariant \
                 to the phases (e.g. of |v_ij|² or of V diag(f(w)) V⁻¹)",
    }
}

fn repeated() -> Error {
    Error::NotDifferentiable {
        op: OP,
        reason: "the eigenvectors of a repeated eigenvalue are not unique, and the loss \
                 depends on the basis chosen within its eigenspace, so the gradient is \
                 undefined; use a loss of the eigenvalues, or one invariant to that basis",
    }
}

/// The eps of the real precision of `dt`.
fn eps_of(dt: DType) -> f64 {
    if dt.to_real() == DType::F64 {
        f64::EPSILON
    } else {
        f64::from(f32::EPSILON)
    }
}

/// Checks the cotangent `x = VᴴgV` of `V` (after the projection onto unit columns is not
/// yet applied) and returns the mask of the pairs `(i, j)`, `i ≠ j`, whose eigenvalue gap
/// is numerically zero (`Bool`, `(*, n, n)`, the diagonal included, where the division is
/// skipped): `NotDifferentiable` if the loss depends on the eigenvectors' phases
/// (`Im((VᴴgV)_jj)` beyond `√ε` times the largest modulus of `VᴴgV`, PyTorch's check
/// with a scale-aware tolerance) or on a basis of a repeated eigenvalue's eigenspace (a
/// projected cotangent beyond the same tolerance at a zero gap). Reads `w` and `x` to
/// the host, as the answer may be an error.
fn degenerate_pairs(w: &Tensor, x: &Tensor, proj: &Tensor) -> Result<Tensor> {
    let n = w.dims()[w.rank() - 1];
    let eps = eps_of(w.dtype());
    let (wr, wi) = (w.real()?.to_vec_f64(), w.imag()?.to_vec_f64());
    let im_diag = x.diagonal(0, -2, -1)?.imag()?.to_vec_f64();
    let xm = x.abs()?.to_vec_f64();
    let pm = proj.abs()?.to_vec_f64();
    let nn = (n * n).max(1);
    let mut mask = vec![false; pm.len()];
    for b in 0..pm.len() / nn {
        let wb = |i: usize| (wr[b * n + i], wi[b * n + i]);
        let wmax = (0..n).fold(0.0f64, |m, i| m.max(wb(i).0.hypot(wb(i).1)));
        let xmax = xm[b * nn..(b + 1) * nn].iter().fold(0.0f64, |m, &v| m.max(v));
        let tol = eps.sqrt() * xmax;
        if (0..n).any(|j| im_diag[b * n + j].abs() > tol) {
            return Err(phase_dependent());
        }
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        for i in 0..n {
            for j in 0..n {
                let (a, c) = (wb(i), wb(j));
                let degenerate = i == j || (a.0 - c.0).hypot(a.1 - c.1) <= gap_tol;
                if degenerate && i != j && pm[b * nn + i * n + j] > tol && xmax > 0.0 {
                    return Err(repeated());
                }
                mask[b * nn + i * n + j] = degenerate;
            }
        }
    }
    Tensor::from_vec(mask, x.shape().clone())
}

#[derive(Debug)]
struct EigOp {
    /// The input is real: its gradient is the real part of the complex one.
    real_input: bool,
}

impl Op for EigOp {
    fn name(&self) -> &'static str {
        OP
    }

    // A V = V diag(w), columns of unit norm. Differentiating, with C = V⁻¹ dA V:
    //   dw = diag(C),  dV = V (F ∘ C) − V Re(diag(Vᴴ V (F ∘ C))) (the columns kept of unit
    //   norm), F_ij = 1 / (w_j − w_i) off the diagonal.
    // Transposing (PyTorch's linalg_eig_backward, FunctionsManual.cpp; Giles 2008):
    //   X = VᴴgV − Vᴴ V diag(Re(diag(VᴴgV))),
    //   gA = V⁻ᴴ (diag(gw) + X / Ē) Vᴴ,  Ē_ij = conj(w_j − w_i) (1 on the diagonal),
    // a solve with Vᴴ. The loss must not depend on the eigenvectors' phases
    // (Im(diag(VᴴgV)) = 0, PyTorch's check) nor, at a repeated eigenvalue, on the basis
    // of its eigenspace (X negligible at the pair): NotDifferentiable otherwise. For real
    // input the gradient is the real part. Tensor ops only (the mask a constant):
    // differentiable again.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (gw, gv) = (g[0].as_ref(), g[1].as_ref());
        if gw.is_none() && gv.is_none() {
            return Ok(vec![None]);
        }
        let (w, v) = (cx.output(0)?, cx.output(1)?);
        let n = v.dims()[v.rank() - 1];
        let same = |g: Option<&Tensor>| g.is_none_or(|g| g.dtype() == v.dtype());
        if n <= FUSED_N && !cx.create_graph() && same(gw) && same(gv) {
            // fast path (not recorded): the same formula and checks fused per matrix;
            // where the gradient is undefined the composition below raises the error
            let fused = v.storage().eig_backward(
                v.layout(),
                w.operand(),
                gw.map(Tensor::operand),
                gv.map(Tensor::operand),
                self.real_input,
            )?;
            if let Some((s, l)) = fused {
                return Ok(vec![Some(from_kernel(s, l))]);
            }
        }
        let vh = v.mH()?;
        let inner = match gv {
            Some(gv) => {
                let x = vh.matmul(gv)?;
                let re = x.diagonal(0, -2, -1)?.real()?.to_dtype(x.dtype())?;
                let proj = x.sub(&vh.matmul(&v.mul(&re.unsqueeze(-2)?)?)?)?;
                let mask = degenerate_pairs(&w.detach(), &x.detach(), &proj.detach())?;
                // Ē_ij = conj(w_j) − conj(w_i)
                let wc = w.conj()?;
                let e = wc.unsqueeze(-2)?.sub(&wc.unsqueeze(-1)?)?;
                let safe = Tensor::where_cond(&mask, &e.ones_like()?, &e)?;
                let f = Tensor::where_cond(&mask, &proj.zeros_like()?, &proj.div(&safe)?)?;
                match gw {
                    Some(gw) => f.add(&gw.diag_embed(0, -2, -1)?)?,
                    None => f,
                }
            }
            None => gw
                .ok_or(Error::Internal { op: OP, reason: "no cotangent" })?
                .diag_embed(0, -2, -1)?,
        };
        let ga = solve(&vh, &inner.matmul(&vh)?, Side::Left)?;
        let ga = if self.real_input { ga.real()? } else { ga };
        Ok(vec![Some(ga)])
    }

    // With C = V⁻¹ dA V (a differentiable solve): dw = diag(C), dV = V Ω − V Re(diag(Vᴴ V
    // Ω)) with Ω_ij = C_ij / (w_j − w_i) off the diagonal (the columns kept of unit norm),
    // plus V diag(iθ) keeping the forward's phase gauge (PyTorch's linalg_eig_jvp has the
    // first two terms; its phases are LAPACK's). At a repeated eigenvalue see
    // `gap_quotient`.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None]) };
        let (w, v) = (cx.output(0), cx.output(1));
        let da = da.to_dtype(v.dtype())?;
        let c = solve(v, &da.matmul(v)?, Side::Left)?;
        let dw = c.diagonal(0, -2, -1)?;
        let n = w.dims()[w.rank() - 1];
        let eps = if w.dtype() == DType::C128 { f64::EPSILON } else { f64::from(f32::EPSILON) };
        let tol: Vec<f64> = w
            .detach()
            .abs()?
            .to_vec_f64()
            .chunks_exact(n.max(1))
            .map(|wb| 8.0 * n as f64 * eps * wb.iter().fold(0.0f64, |m, x| m.max(*x)))
            .collect();
        let e = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
        let omega = gap_quotient(&c, &e, &tol, eps)?;
        let dv = v.matmul(&omega)?;
        let re = v.mH()?.matmul(&dv)?.diagonal(0, -2, -1)?.real()?.to_dtype(v.dtype())?;
        let dv = dv.sub(&v.mul(&re.unsqueeze(-2)?)?)?;
        Ok(vec![Some(dw), Some(keep_phase_gauge(v, &dv)?)])
    }
}

/// Checks shared by [`eig`] and [`eigvals`].
fn check(op: &'static str, a: &Tensor) -> Result<()> {
    check_matrix(op, a)?;
    check_square(op, a)?;
    check_float_or_complex(op, a)
}

/// The kernel's eigenvalues `(*, n)` and optional eigenvectors; `NoConvergence` for the
/// first matrix not decomposed.
fn kernel(op: &'static str, a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    eigen_outputs(op, a, a.storage().eig(a.layout(), vectors)?)
}

/// The eigendecomposition of square matrices (`torch.linalg.eig`; a primitive).
///
/// Math: `A V = V diag(w)` for `a: (*, n, n)`, real or complex; the eigenvalues `w:
/// (*, n)` and eigenvectors `V: (*, n, n)` are complex (C128 for f64 and c128 input, C64
/// for f32 and c64). The eigenvalues come in no particular order (the Schur form's, as
/// LAPACK's `geev` leaves them; PyTorch's may differ). Each eigenvector has unit 2-norm
/// and, as the phase gauge here, its component of largest modulus (the first on ties)
/// real and positive (PyTorch's phases differ). A defective matrix has no basis of
/// eigenvectors: `V` is then (numerically) singular.
///
/// Computed after scaling by a power of two by Schur-based solvers (Hessenberg
/// reduction, the shifted QR iteration, eigenvectors from the (quasi-)triangular form).
/// Real input as LAPACK's `dgeev` (its conjugate pairs come out adjacent, `w` with
/// positive imaginary part first, then `conj(w)`, with conjugate eigenvectors): up to
/// order 32 LAPACK's unblocked algorithm, above faer's blocked real solver where its
/// eigenpairs pass LAPACK's backward-error test (`‖AV − VW‖₁ ≤ 8 n ε ‖A‖₁`), else the
/// unblocked one. Complex input by faer's complex solver. A NaN or an infinity fails
/// with `NoConvergence`.
///
/// Gradient: `gA = V⁻ᴴ (diag(gw) + X / Ē) Vᴴ` with `X = VᴴgV − VᴴV diag(Re diag(VᴴgV))`
/// and `Ē_ij = conj(w_j − w_i)` (PyTorch's `linalg_eig_backward`); the real part for real
/// input. A loss must not depend on the eigenvectors' phases (`v → v e^{iφ}`): if some
/// `Im((VᴴgV)_jj)` exceeds `√ε` times the largest modulus in `VᴴgV` (a scale-aware
/// tolerance; PyTorch's is an absolute `1e-2`), the backward pass fails with
/// `NotDifferentiable`, as PyTorch raises. At a repeated eigenvalue (a gap below
/// `8 n ε max|w|`) a loss through the eigenvectors must not depend on the basis of the
/// eigenspace (`NotDifferentiable` otherwise, never NaN); a loss of the eigenvalues alone
/// gets `V⁻ᴴ diag(gw) Vᴴ`, finite wherever `V` is invertible. Differentiable to any
/// order.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `BadShape` if `a` is not square; `UnsupportedDType` for integer or boolean
/// input; `NoConvergence { batch }` for a non-finite matrix.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::eig;
/// // a rotation by 90 degrees: eigenvalues ±i
/// let a = Tensor::from_vec(vec![0.0f64, -1.0, 1.0, 0.0], (2, 2))?;
/// let e = eig(&a)?;
/// let mut im = e.eigenvalues.imag()?.to_vec::<f64>()?;
/// im.sort_by(|x, y| x.total_cmp(y));
/// assert!((im[0] + 1.0).abs() < 1e-12 && (im[1] - 1.0).abs() < 1e-12);
/// // A V = V diag(w)
/// let av = a.to_dtype(cotangent::DType::C128)?.matmul(&e.eigenvectors)?;
/// let vw = e.eigenvectors.mul(&e.eigenvalues.unsqueeze(-2)?)?;
/// assert!(av.sub(&vw)?.abs()?.to_vec::<f64>()?.iter().all(|x| *x < 1e-12));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn eig(a: &Tensor) -> Result<Eig> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return eig(&c[0]);
    }
    check(OP, a)?;
    if a.dtype().is_half() {
        return eig(&a.to_dtype(DType::F32)?);
    }
    let (w, v) = kernel(OP, a, true)?;
    let v = v.ok_or(Error::Internal { op: OP, reason: "eigenvectors expected" })?;
    let op = EigOp { real_input: !a.dtype().is_complex() };
    let mut out = record(op, &[a], vec![w, v], true)?.into_iter();
    match (out.next(), out.next()) {
        (Some(eigenvalues), Some(eigenvectors)) => Ok(Eig { eigenvalues, eigenvectors }),
        _ => Err(Error::Internal { op: OP, reason: "two outputs expected" }),
    }
}

/// The eigenvalues of square matrices (`torch.linalg.eigvals`; [`eig`]'s eigenvalues).
///
/// Math, shapes, order and dtypes as [`eig`]: complex `(*, n)` for real or complex
/// `a: (*, n, n)`.
///
/// Gradient: `V⁻ᴴ diag(gw) Vᴴ` (the real part for real input), through [`eig`] (the
/// eigenvectors are computed when the input requires grad); finite at repeated
/// eigenvalues wherever `V` is invertible. Any order.
///
/// Errors: as [`eig`], named `linalg.eigvals`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::eigvals;
/// let a = Tensor::from_vec(vec![2.0f64, 1.0, 0.0, 3.0], (2, 2))?;
/// let mut w = eigvals(&a)?.real()?.to_vec::<f64>()?;
/// w.sort_by(|x, y| x.total_cmp(y));
/// assert!((w[0] - 2.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn eigvals(a: &Tensor) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return eigvals(&c[0]);
    }
    check(OPV, a)?;
    if a.dtype().is_half() {
        return eigvals(&a.to_dtype(DType::F32)?);
    }
    if should_record(&[a]) {
        return match eig(a) {
            Ok(e) => Ok(e.eigenvalues),
            Err(Error::NoConvergence { batch, .. }) => Err(Error::NoConvergence { op: OPV, batch }),
            Err(e) => Err(e),
        };
    }
    Ok(kernel(OPV, a, false)?.0)
}
