//! Determinants from one LU factorisation: `linalg.det`, `linalg.slogdet`, `logdet`
//! (explicit composites with hand-written, singular-safe VJPs).

use std::sync::Arc;

use super::lu::lu_solve_raw;
use super::solve::inv_ex;
use super::util::{check_float_or_complex, check_square, from_kernel};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, record1, Op, VjpCtx};
use crate::backend::{Flagged, Storage};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

const OP_DET: &str = "linalg.det";
const OP_SLOGDET: &str = "linalg.slogdet";
const OP_LOGDET: &str = "logdet";

/// The result of [`slogdet`] (PyTorch's `(sign, logabsdet)`).
#[derive(Debug, Clone)]
pub struct Slogdet {
    /// `(*)`: the sign of the determinant, `-1`, `0` (singular) or `1`, without gradient;
    /// for complex input its phase `det A / |det A|` (0 when singular), differentiable.
    pub sign: Tensor,
    /// `(*)`: `log |det A|`, `-inf` for a singular matrix (real for complex input).
    pub logabsdet: Tensor,
}

/// One LU of each matrix: the factors and, per matrix (the batch's shape, `a`'s dtype),
/// `det A`, `sign(det A)` and `log |det A|` (0 unless `want_log`), and whether it is near
/// singular (`loose`: a pivot at most `√ε max|U_ii|`), all from one backend kernel
/// ([`LuDet`](crate::backend::LuDet)).
struct Parts {
    lu: Tensor,
    pivots: Tensor,
    det: Tensor,
    sign: Tensor,
    logabs: Tensor,
    /// Bool, contiguous, the batch's shape: kept as the device's buffer, made a tensor
    /// only by a backward that needs it as a mask.
    loose: Arc<Storage>,
    /// Whether the factors are those of `Aᵀ` (see [`parts`]).
    transposed: bool,
}

/// [`Parts`] of `a`. A row-major `A` (the usual layout) is factorised as `Aᵀ`, whose
/// memory is then column-major like the factors' (`det Aᵀ = det A`): the batched kernels
/// read each matrix, and the backward writes `A⁻ᵀ` (as `(Aᵀ)⁻ᵀ = A⁻¹`, column-major, the
/// same memory), along memory instead of across it. (PyTorch's `linalg_solve` makes the
/// same choice for its LU.)
fn parts(a: &Tensor, want_log: bool) -> Result<Parts> {
    let r = a.rank();
    let n = a.dims()[r - 1];
    let batch = a.dims()[..r - 2].to_vec();
    let transposed = n > 1 && a.strides()[r - 1] == 1;
    let f = if transposed { a.mT()? } else { a.clone() };
    let d = f.storage().lu_det(f.layout(), want_log)?;
    let mut pdims = batch.clone();
    pdims.push(n);
    let per_matrix = || Layout::contiguous(Shape::new(batch.clone()));
    Ok(Parts {
        lu: from_kernel(d.lu, d.layout),
        pivots: from_kernel(d.piv, Layout::contiguous(Shape::new(pdims))),
        det: from_kernel(d.det, per_matrix()),
        sign: from_kernel(d.sign, per_matrix()),
        logabs: from_kernel(d.logabs, per_matrix()),
        loose: Arc::new(d.loose),
        transposed,
    })
}

/// `g[..., None, None] * A⁻ᴴ` from saved factors (first order only): of `A`, or of `Aᵀ`
/// if `transposed` (then `g (Aᵀ)⁻ᴴ = g conj(A⁻¹)`, column-major, is returned
/// transposed). The device's fused kernel where it has one, else solves with the
/// factors.
fn scaled_inv_t(lu: &Tensor, pivots: &Tensor, g: &Tensor, transposed: bool) -> Result<Tensor> {
    let piv = pivots.packed()?;
    let c = g.broadcast_to(pivots.dims()[..pivots.rank() - 1].to_vec())?.packed()?;
    let fused = lu.storage().lu_inv_t(lu.layout(), piv.storage(), c.storage(), !transposed)?;
    let x = if let Some((s, l)) = fused {
        from_kernel(s, l)
    } else {
        // A⁻ᴴ = (Aᴴ)⁻¹: the adjoint solve of the identity with A's factors
        let n = lu.dims()[lu.rank() - 1];
        let eye = Tensor::eye(n, lu.dtype())?.broadcast_to(lu.shape().clone())?;
        let inv_t = lu_solve_raw(lu, &piv, &eye, true)?;
        inv_t.mul(&c.unsqueeze(-1)?.unsqueeze(-1)?)?
    };
    if transposed {
        x.mT()
    } else {
        Ok(x)
    }
}

/// `g[..., None, None] * A⁻ᴴ` in tensor ops on `a` (recorded: higher order).
fn scaled_inv_t_graph(a: &Tensor, g: &Tensor) -> Result<Tensor> {
    let inv = inv_ex(a)?.inverse;
    g.unsqueeze(-1)?.unsqueeze(-1)?.mul(&inv.mH()?)
}

/// The cofactor matrix of each `a: (*, n, n)` (`C = det(A) A⁻ᵀ` where `A` is invertible)
/// as a recorded tensor program through the SVD `A = U S Vh`:
/// `C = det(U) det(Vh) conj(U) diag(∏_{j≠i} s_j) conj(Vh)` (the phases held constant;
/// `conj` does nothing to real input). Differentiable where the SVD is (distinct
/// singular values: rank `n − 1` included; at rank `n − 2` the SVD's backward refuses a
/// basis-dependent cotangent).
fn cofactor_graph(a: &Tensor) -> Result<Tensor> {
    let f = super::svd(a, false)?;
    let n = a.dims()[a.rank() - 1];
    // ∏_{j≠i} s_j as the product along rows of S with its diagonal replaced by 1
    let on_diag = Tensor::eye(n, DType::Bool)?;
    let mut rows = f.s.dims().to_vec();
    rows.insert(rows.len() - 1, n);
    let s_rows = f.s.unsqueeze(-2)?.broadcast_to(rows)?;
    let others =
        Tensor::where_cond(&on_diag, &s_rows.ones_like()?, &s_rows)?.prod_dims(&[-1], false)?;
    let sign = det(&f.u.detach())?.mul(&det(&f.vh.detach())?)?;
    let others = others.to_dtype(a.dtype())?;
    f.u.conj()?
        .mul(&others.unsqueeze(-2)?)?
        .matmul(&f.vh.conj()?)?
        .mul(&sign.unsqueeze(-1)?.unsqueeze(-1)?)
}

#[derive(Debug)]
struct DetOp {
    lu: Tensor,
    pivots: Tensor,
    /// Which matrices are near singular (see [`Parts`]).
    loose: Arc<Storage>,
    transposed: bool,
}

impl DetOp {
    /// `(*, 1, 1)`, Bool: which matrices of `a: (*, n, n)` are near singular.
    fn loose_mask(&self, a: &Tensor) -> Result<Tensor> {
        let batch = Shape::of(&a.dims()[..a.rank() - 2]);
        Tensor::from_parts(self.loose.clone(), Layout::contiguous(batch))
            .unsqueeze(-1)?
            .unsqueeze(-1)
    }

    /// Whether some matrix is near singular: read back, because it decides whether the
    /// backward runs an SVD at all (many times the cost of the solve with the factors).
    /// Only a recorded backward, or a device without the cofactor kernel, reads it:
    /// PyTorch's recorded det backward synchronises at the same point (its
    /// `masked_fmap` selects the singular matrices by a data-dependent index).
    fn any_loose(&self) -> Result<bool> {
        let all = Layout::contiguous(Shape::of(&[self.loose.len()][..]));
        Ok(self.loose.first_nonzero(&all)?.is_some())
    }
}

impl DetOp {
    /// The gradient `g · conj(C)` of each matrix (`C` the cofactor matrix) in
    /// differentiable tensor ops, `d = conj(det A)`: `g d A⁻ᴴ` at invertible matrices,
    /// the cofactors through the SVD at near-singular ones.
    fn recorded_grad(&self, a: &Tensor, g: &Tensor, d: &Tensor) -> Result<Tensor> {
        if !self.any_loose()? {
            return scaled_inv_t_graph(a, &g.mul(d)?);
        }
        // near-singular matrices (as in first order) take the cofactors through the SVD,
        // the others det(A) inv(A)ᵀ; each branch sees a harmless stand-in for the
        // matrices of the other (the identity for inv, diag(1, …, n) with distinct
        // singular values for the SVD), so neither leaks inf or a gauge error into the
        // gradient
        let n = a.dims()[a.rank() - 1];
        let mask = self.loose_mask(a)?;
        let eye = Tensor::eye(n, a.dtype())?;
        let ramp = Tensor::arange(1.0, n as f64 + 1.0, 1.0, a.dtype())?.diag(0)?;
        let regular = scaled_inv_t_graph(&Tensor::where_cond(&mask, &eye, a)?, &g.mul(d)?)?;
        let cof = cofactor_graph(&Tensor::where_cond(&mask, a, &ramp)?)?.conj()?;
        let singular = g.unsqueeze(-1)?.unsqueeze(-1)?.mul(&cof)?;
        Tensor::where_cond(&mask, &singular, &regular)
    }
}

impl Op for DetOp {
    fn name(&self) -> &'static str {
        OP_DET
    }

    // d det A = det A · tr(A⁻¹ dA) ⇒ gA = g det(A) A⁻ᵀ = g C, C the cofactor matrix; for
    // complex input (holomorphic, PyTorch's convention) gA = g conj(C) = g conj(det A) A⁻ᴴ.
    // Invertible A: first order solves with the saved factors (PyTorch
    // linalg_det_backward's lu_solve path); a recorded backward uses det(A) (re-linked)
    // times inv(A)ᵀ, both differentiable. Near-singular A (a pivot below √ε max|U_ii|):
    // C from an SVD A = U S Vᵀ, C = det(U) det(V) U diag(∏_{j≠i} s_j) Vᵀ, exact at rank
    // n−1 and n−2 (PyTorch's singular branch). A recorded backward at such an A writes
    // the same cofactors through the differentiable SVD (cofactor_graph), so the second
    // derivative exists there too.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let a = cx.input(0);
        if cx.create_graph() {
            let d = cx.output(0)?.conj()?;
            return Ok(vec![Some(self.recorded_grad(a, g, &d)?)]);
        }
        let d = cx.output(0)?.conj()?;
        let ga = scaled_inv_t(&self.lu, &self.pivots, &g.mul(&d)?, self.transposed)?;
        let a = a.detach();
        // the device's kernel reads the flags where they lie and answers `NoneFlagged`
        // when no matrix is flagged; without it the flags are read back (as PyTorch's
        // masked_fmap does) and the cofactors come from the SVD in tensor ops
        let c = match a.storage().cofactor(a.layout(), &self.loose)? {
            Some(Flagged::NoneFlagged) => return Ok(vec![Some(ga)]),
            Some(Flagged::Computed(c)) => from_kernel(c, Layout::contiguous(a.shape().clone())),
            None if !self.any_loose()? => return Ok(vec![Some(ga)]),
            // not recorded: a is detached
            None => cofactor_graph(&a)?,
        };
        let gc = g.unsqueeze(-1)?.unsqueeze(-1)?.mul(&c.conj()?)?;
        let mask = self.loose_mask(&a)?;
        Ok(vec![Some(Tensor::where_cond(&mask, &gc, &ga)?)])
    }

    // d det = Σ_ij C_ij dA_ij (= det A · tr(A⁻¹ dA) where A is invertible), C the
    // cofactor matrix as the recorded VJP writes it (through the SVD at near-singular
    // matrices, so the tangent is finite there: PyTorch's linalg_det_jvp perturbs zero
    // pivots by ε instead)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        let det = cx.output(0);
        let c = self.recorded_grad(cx.input(0), &det.ones_like()?, &det.conj()?)?.conj()?;
        Ok(vec![Some(c.mul(da)?.sum_dims(&[-2, -1], false)?)])
    }
}

/// The determinant of square matrices (`torch.linalg.det(A)`; an explicit composite of
/// an LU factorisation).
///
/// Math: `det A = sign(P) ∏ U_ii` from `A = P L U`, for `a: (*, n, n)`; 1 for `n = 0`.
///
/// Gradient: `g · C`, `C` the cofactor matrix (`det(A) A⁻ᵀ` when `A` is invertible;
/// `g · conj(C)` for complex input, PyTorch's convention). It is
/// finite and correct at singular matrices (ranks `n − 1` and `n − 2` included): there `C`
/// comes from an SVD, as PyTorch's singular branch does (PyTorch's first-order
/// fast path instead returns 0 at an exactly singular matrix). Second order: through
/// `det(A) inv(A)ᵀ` at invertible matrices; at a (near) singular matrix (a pivot below
/// `√ε max|U_ii|`) through the cofactors written with the differentiable
/// [`svd`](super::svd), which covers rank `n − 1`; at rank `n − 2` and below (a repeated
/// zero singular value) differentiating the gradient again fails with
/// `NotDifferentiable` from the SVD when the result depends on the singular basis.
/// Complex input takes the same branches (the cofactors through the complex SVD).
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `BadShape` if `a` is not square; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::det;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
/// assert!((det(&a)?.item::<f64>()? + 2.0).abs() < 1e-12);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn det(a: &Tensor) -> Result<Tensor> {
    check_float_or_complex(OP_DET, a)?;
    check_square(OP_DET, a)?;
    if a.dtype().is_half() {
        return det(&a.to_dtype(DType::F32)?)?.to_dtype(a.dtype());
    }
    let p = parts(a, false)?;
    let op = DetOp { lu: p.lu, pivots: p.pivots, loose: p.loose, transposed: p.transposed };
    record1(op, &[a], p.det, true)
}

#[derive(Debug)]
struct SlogdetOp {
    lu: Tensor,
    pivots: Tensor,
    transposed: bool,
}

impl Op for SlogdetOp {
    fn name(&self) -> &'static str {
        OP_SLOGDET
    }

    // With t = tr(A⁻¹ dA): d log|det A| = Re t, and for complex input the phase moves,
    // d sign = i Im(t) sign. A loss's change gl Re t + Re(conj(gs) d sign) is Re(w t) with
    // w = gl + i Im(conj(gs) sign), so gA = conj(w) A⁻ᴴ (PyTorch slogdet_backward; real
    // `sign` is not differentiable, and then gA = gl A⁻ᵀ). First order: a solve with the
    // saved factors; recorded: conj(w) inv(A)ᴴ. At a singular A the gradient diverges:
    // it holds infinities or NaN.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let complex = cx.input(0).dtype().is_complex();
        let phase = match (&g[0], complex) {
            (Some(gs), true) => {
                // i Im(gs conj(sign)) = conj(i Im(conj(gs) sign))
                let sign = cx.output(0)?;
                let im = gs.mul(&sign.conj()?)?.imag()?;
                Some(Tensor::complex(&im.zeros_like()?, &im)?)
            }
            _ => None,
        };
        let g = match (&g[1], phase) {
            (None, None) => return Ok(vec![None]),
            (Some(gl), None) => gl.clone(),
            (None, Some(p)) => p,
            (Some(gl), Some(p)) => p.add(gl)?,
        };
        let g = &g;
        if cx.create_graph() {
            return Ok(vec![Some(scaled_inv_t_graph(cx.input(0), g)?)]);
        }
        Ok(vec![Some(scaled_inv_t(&self.lu, &self.pivots, g, self.transposed)?)])
    }

    // With τ = tr(A⁻¹ dA): d logabsdet = Re τ, d sign = i Im(τ) sign (complex; a real
    // sign has no tangent). τ through the differentiable solve; at a singular A it
    // diverges, as the gradient does.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None]) };
        let tau = super::solve(cx.input(0), da, super::Side::Left)?
            .diagonal(0, -2, -1)?
            .sum_dims(&[-1], false)?;
        if !tau.dtype().is_complex() {
            return Ok(vec![None, Some(tau)]);
        }
        let im = tau.imag()?;
        let dsign = Tensor::complex(&im.zeros_like()?, &im)?.mul(cx.output(0))?;
        Ok(vec![Some(dsign), Some(tau.real()?)])
    }
}

/// Sign and log of the absolute value of the determinant (`torch.linalg.slogdet(A)`; an
/// explicit composite of an LU factorisation).
///
/// Math: `det A = sign · exp(logabsdet)` for `a: (*, n, n)`, from `A = P L U`:
/// `sign = sign(P) ∏ sign(U_ii)`, `logabsdet = Σ log |U_ii|`. A singular matrix gives
/// `sign = 0` and `logabsdet = -inf` (not NaN); `n = 0` gives `(1, 0)`. For complex
/// input `sign` is the phase `det A / |det A|` (complex) and `logabsdet` is real.
///
/// Gradient: through `logabsdet`, `g A⁻ᵀ`; a real `sign` has no gradient (PyTorch's
/// is zero). For complex input the phase is differentiable too: with cotangents `gs`
/// (of `sign`) and `gl` (of `logabsdet`), `gA = (gl + i Im(gs conj(sign))) A⁻ᴴ`. It
/// diverges at a singular matrix, where it holds infinities or NaN (as PyTorch's does).
/// Any order.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `BadShape` if `a` is not square; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::slogdet;
/// let a = Tensor::from_vec(vec![0.0f64, 2.0, 3.0, 0.0], (2, 2))?;
/// let s = slogdet(&a)?;
/// assert_eq!(s.sign.item::<f64>()?, -1.0);
/// assert!((s.logabsdet.item::<f64>()? - 6f64.ln()).abs() < 1e-12);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn slogdet(a: &Tensor) -> Result<Slogdet> {
    slogdet_named(OP_SLOGDET, a)
}

fn slogdet_named(op: &'static str, a: &Tensor) -> Result<Slogdet> {
    check_float_or_complex(op, a)?;
    check_square(op, a)?;
    if a.dtype().is_half() {
        let s = slogdet_named(op, &a.to_dtype(DType::F32)?)?;
        return Ok(Slogdet {
            sign: s.sign.to_dtype(a.dtype())?,
            logabsdet: s.logabsdet.to_dtype(a.dtype())?,
        });
    }
    let p = parts(a, true)?;
    let node = SlogdetOp { lu: p.lu, pivots: p.pivots, transposed: p.transposed };
    let outs = record(node, &[a], vec![p.sign, p.logabs], true)?;
    let mut it = outs.into_iter();
    match (it.next(), it.next()) {
        // a real sign is not differentiable (PyTorch): it leaves the graph
        (Some(sign), Some(logabsdet)) if !a.dtype().is_complex() => {
            Ok(Slogdet { sign: sign.detach(), logabsdet })
        }
        (Some(sign), Some(logabsdet)) => Ok(Slogdet { sign, logabsdet }),
        _ => Err(Error::Internal { op, reason: "slogdet outputs" }),
    }
}

/// The log-determinant (`torch.logdet(A)`; an implicit composite of [`slogdet`]).
///
/// Math: `log det A` for `a: (*, n, n)`: `logabsdet` where `det A > 0`, `-inf` where
/// `det A = 0`, NaN where `det A < 0` (as PyTorch). For complex input the principal
/// logarithm `log(sign) + logabsdet`, complex; `-inf + NaN i` where `det A = 0` (as
/// PyTorch's sum gives it).
///
/// Gradient: `g A⁻ᵀ` where `det A > 0`; zero where it is negative (the NaN branch, as
/// PyTorch's `where`); infinities or NaN at singular matrices. Complex input: `g A⁻ᴴ`
/// (the log is holomorphic; computed through [`slogdet`]'s phase and modulus). Any
/// order.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `BadShape` if `a` is not square; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::logdet;
/// let a = Tensor::from_vec(vec![-1.0f64, 0.0, 0.0, 1.0], (2, 2))?;
/// assert!(logdet(&a)?.item::<f64>()?.is_nan());
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn logdet(a: &Tensor) -> Result<Tensor> {
    let s = slogdet_named(OP_LOGDET, a)?;
    if a.dtype().is_complex() {
        // log(sign) + logabsdet; where |det A| = 0 the phase is undefined: NaN, as
        // PyTorch's sum gives it
        let sum = s.sign.log()?.add(&s.logabsdet)?;
        let zero = s.logabsdet.eq_scalar(f64::NEG_INFINITY)?;
        let inf = Tensor::full((), f64::NEG_INFINITY, s.logabsdet.dtype())?;
        let nan = Tensor::full((), f64::NAN, s.logabsdet.dtype())?;
        let undefined = Tensor::complex(&inf, &nan)?;
        return Tensor::where_cond(&zero, &undefined, &sum);
    }
    let neg = s.sign.eq_scalar(-1.0)?;
    let nan = Tensor::full((), f64::NAN, s.logabsdet.dtype())?;
    Tensor::where_cond(&neg, &nan, &s.logabsdet)
}
