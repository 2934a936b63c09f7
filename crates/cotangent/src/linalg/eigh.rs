//! `linalg.eigh` (the symmetric eigendecomposition, a primitive with a hand-written VJP)
//! and `linalg.eigvalsh` (its eigenvalues; a compute-vectors-off variant whose gradient
//! needs no eigenvalue gaps).

use super::spectral_jvp::{gap_quotient, keep_phase_gauge};
use super::util::{check_float_or_complex, check_matrix, check_square, eigen_outputs, from_kernel};
use super::Uplo;
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, should_record, Op, VjpCtx};
use crate::backend::Undefined;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.eigh";
const OPV: &str = "linalg.eigvalsh";

/// The eigendecomposition `A = V diag(w) Vᵀ` of [`eigh`] (PyTorch's named tuple
/// `(eigenvalues, eigenvectors)`).
#[derive(Debug, Clone)]
pub struct Eigh {
    /// The eigenvalues `w`, ascending, `(*, n)`.
    pub eigenvalues: Tensor,
    /// The orthonormal eigenvectors, as columns: `(*, n, n)`; column `j` belongs to
    /// `eigenvalues[..., j]`. Each column's component of largest magnitude (the first one
    /// on ties) is positive.
    pub eigenvectors: Tensor,
}

#[derive(Debug)]
struct EighOp;

/// Up to this order the VJP is fused per matrix when the backward pass is not recorded.
const FUSED_N: usize = 32;

/// The same when only the eigenvalues have a cotangent (`gA = V diag(gw) Vᵀ`).
const FUSED_VALUES_N: usize = 4;

/// The error of a loss that depends on the basis of a repeated eigenvalue's eigenspace.
fn not_differentiable() -> Error {
    Error::NotDifferentiable {
        op: OP,
        reason: "the eigenvectors of a repeated eigenvalue are not unique, and the loss \
                 depends on the basis chosen within its eigenspace, so the gradient is \
                 undefined; use a loss that depends only on the eigenspace (e.g. its \
                 projector) or on the eigenvalues",
    }
}

/// The error of a loss that depends on the phases of complex eigenvectors.
fn phase_dependent() -> Error {
    Error::NotDifferentiable {
        op: OP,
        reason: "each eigenvector of a complex matrix is defined up to a unit phase \
                 (v e^{iφ}), and the loss depends on that phase, so its gradient is \
                 undefined; use a loss invariant to the phases (e.g. of |v_ij|² or of \
                 V f(w) Vᴴ)",
    }
}

/// `Err(NotDifferentiable)` unless the loss behind the cotangent `gV` is invariant to
/// each eigenvector's phase, `V → V e^{iφ}`: such a change moves the loss by
/// `Σ_j φ_j Im((VᴴgV)_jj)`, so every `Im((VᴴgV)_jj)` must vanish, to `√ε` times the
/// largest modulus in `VᴴgV` of its matrix (a scale-aware tolerance: the rounding of a
/// phase-invariant loss stays far below it; PyTorch uses an absolute `1e-2`). A read of
/// `x = VᴴgV` to the host, because the answer is an error.
fn check_phase_invariant(x: &Tensor) -> Result<()> {
    let n = x.dims()[x.rank() - 1];
    let eps = if x.dtype() == DType::C128 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let x = x.detach();
    let im = x.diagonal(0, -2, -1)?.imag()?.to_vec_f64();
    let modulus = x.abs()?.to_vec_f64();
    for (d, m) in im.chunks_exact(n.max(1)).zip(modulus.chunks_exact((n * n).max(1))) {
        let scale = m.iter().fold(0.0f64, |a, &b| a.max(b));
        if d.iter().any(|v| v.abs() > eps.sqrt() * scale) {
            return Err(phase_dependent());
        }
    }
    Ok(())
}

/// Which pairs `(i, j)` of each matrix have a (numerically) zero gap `w_j − w_i`
/// (the diagonal included), as a `Bool` tensor `(*, n, n)`; `Err(NotDifferentiable)` if
/// the projected cotangent `skew` is not negligible at such a pair off the diagonal.
fn degenerate_pairs(w: &Tensor, skew: &Tensor) -> Result<Tensor> {
    let n = w.dims()[w.rank() - 1];
    let eps = if w.dtype() == DType::F64 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let wv = w.detach().to_vec_f64();
    let sv = if skew.dtype().is_complex() {
        skew.detach().abs()?.to_vec_f64()
    } else {
        skew.detach().to_vec_f64()
    };
    let mut mask = vec![false; sv.len()];
    for (wb, (sb, mb)) in wv
        .chunks_exact(n.max(1))
        .zip(sv.chunks_exact((n * n).max(1)).zip(mask.chunks_exact_mut((n * n).max(1))))
    {
        let wmax = wb.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let gap_tol = 8.0 * n as f64 * eps * wmax;
        let smax = sb.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let skew_tol = eps.sqrt() * smax;
        for i in 0..n {
            for j in 0..n {
                // NaN gaps are not degenerate: the NaN goes through
                let degenerate = i == j || (wb[j] - wb[i]).abs() <= gap_tol;
                if degenerate && i != j && sb[i * n + j].abs() > skew_tol && smax > 0.0 {
                    return Err(not_differentiable());
                }
                mb[i * n + j] = degenerate;
            }
        }
    }
    Tensor::from_vec(mask, skew.shape().clone())
}

/// The middle factor `diag(gw) + F ∘ skew(X)` of the VJP (`X = VᴴgV`), fused by the
/// backend, for a backward that is not recorded: the same values, and
/// [`degenerate_pairs`]' rule for zero gaps.
/// `None` where the device has no such kernel.
fn inner_first_order(w: &Tensor, x: &Tensor, gw: Option<&Tensor>) -> Result<Option<Tensor>> {
    let gw = gw.map(|g| g.broadcast_to(w.shape().clone())).transpose()?;
    let inner =
        x.storage().eigh_inner(x.layout(), w.operand(), gw.as_ref().map(Tensor::operand))?;
    match inner {
        Some(Ok(inner)) => Ok(Some(Tensor::from_storage(inner, x.shape().clone()))),
        Some(Err(Undefined)) => Err(not_differentiable()),
        None => Ok(None),
    }
}

impl Op for EighOp {
    fn name(&self) -> &'static str {
        OP
    }

    // A = V diag(w) Vᵀ, VᵀV = I. With C = Vᵀ dA V (symmetric):
    //   dw = diag(C),  dV = V (F ∘ C),  F_ij = 1 / (w_j − w_i) (i ≠ j), F_ii = 0.
    // So ⟨gw, dw⟩ + ⟨gV, dV⟩ = ⟨diag(gw) + F ∘ (VᵀgV), C⟩, and as C is symmetric only the
    // symmetric part counts: F is antisymmetric, so F ∘ skew(VᵀgV) with
    // skew(X) = (X − Xᵀ)/2 is symmetric, and
    //   gA = V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ   (symmetric, as PyTorch's),
    // PyTorch's linalg_eig_backward (FunctionsManual.cpp, Hermitian case; Giles 2008,
    // "An extended collection of matrix derivative results", section 3.1). Without gV
    // the gradient is V diag(gw) Vᵀ: no gap. Where a gap is zero (a repeated eigenvalue)
    // the term F_ij skew_ij is taken as 0 if skew_ij is negligible (the loss does not see
    // rotations within the eigenspace, e.g. a projector onto it), otherwise the gradient
    // is undefined and NotDifferentiable is returned rather than NaN (JAX's "avoiding
    // NaNs" handling of the diagonal of F, extended to degenerate pairs). Tensor ops
    // only: differentiable again (the mask is a constant).
    // Complex (Hermitian) input: the same with ᴴ for ᵀ, skew(X) = (X − Xᴴ)/2, after the
    // check that the loss does not depend on the eigenvectors' phases (Im diag(VᴴgV) = 0,
    // PyTorch's check), as the gradient is otherwise undefined.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (gw, gv) = (g[0].as_ref(), g[1].as_ref());
        if gw.is_none() && gv.is_none() {
            return Ok(vec![None]);
        }
        let (w, v) = (cx.output(0)?, cx.output(1)?);
        let n = v.dims()[v.rank() - 1];
        let same = |g: Option<&Tensor>| g.is_none_or(|g| g.dtype() == v.dtype());
        // without gV the tensor ops are two batched products, as fast from n = 8 or so
        let fused_n = if gv.is_some() { FUSED_N } else { FUSED_VALUES_N };
        if n <= fused_n && !cx.create_graph() && same(gw) && same(gv) {
            // fast path (not recorded): the same formula fused per matrix
            let fused = v.storage().eigh_backward(
                v.layout(),
                w.operand(),
                gw.map(Tensor::operand),
                gv.map(Tensor::operand),
            )?;
            match fused {
                Some(Ok((s, l))) => return Ok(vec![Some(from_kernel(s, l))]),
                Some(Err(Undefined)) => return Err(not_differentiable()),
                None => {}
            }
        }
        let inner = match gv {
            // V diag(gw) Vᵀ with the diagonal applied as a column scaling (one product)
            None => match gw {
                Some(gw) => return Ok(vec![Some(v.mul(&gw.unsqueeze(-2)?)?.matmul(&v.mH()?)?)]),
                None => None,
            },
            Some(gv) => {
                let x = v.mH()?.matmul(gv)?;
                if x.dtype().is_complex() {
                    check_phase_invariant(&x)?;
                }
                let fused = if cx.create_graph() { None } else { inner_first_order(&w, &x, gw)? };
                if let Some(inner) = fused {
                    return Ok(vec![Some(v.matmul(&inner)?.matmul(&v.mH()?)?)]);
                }
                let skew = x.sub(&x.mH()?)?.mul_scalar(0.5)?;
                // e_ij = w_j − w_i
                let e = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
                let mask = degenerate_pairs(&w, &skew)?;
                let safe = Tensor::where_cond(&mask, &e.ones_like()?, &e)?;
                let f = Tensor::where_cond(&mask, &skew.zeros_like()?, &skew.div(&safe)?)?;
                Some(match gw {
                    Some(gw) => f.add(&gw.diag_embed(0, -2, -1)?)?,
                    None => f,
                })
            }
        };
        let Some(inner) = inner else { return Ok(vec![None]) };
        Ok(vec![Some(v.matmul(&inner)?.matmul(&v.mH()?)?)])
    }

    // With C = Vᴴ dA V (dA as given, PyTorch's linalg_eig_jvp for the Hermitian case):
    // dw = Re diag(C), dV = V (C_ij / (w_j − w_i)) off the diagonal, plus for complex V
    // the term V diag(iθ) that keeps the forward's phase gauge. At a repeated eigenvalue
    // see `gap_quotient` (NaN where the eigenvectors' tangent does not exist).
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None]) };
        let (w, v) = (cx.output(0), cx.output(1));
        let c = v.mH()?.matmul(da)?.matmul(v)?;
        let d = c.diagonal(0, -2, -1)?;
        let dw = if d.dtype().is_complex() { d.real()? } else { d };
        let n = w.dims()[w.rank() - 1];
        let eps = if w.dtype() == DType::F64 { f64::EPSILON } else { f64::from(f32::EPSILON) };
        let tol: Vec<f64> = w
            .detach()
            .to_vec_f64()
            .chunks_exact(n.max(1))
            .map(|wb| 8.0 * n as f64 * eps * wb.iter().fold(0.0f64, |m, x| m.max(x.abs())))
            .collect();
        let e = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
        let omega = gap_quotient(&c, &e, &tol, eps)?;
        let dv = keep_phase_gauge(v, &v.matmul(&omega)?)?;
        Ok(vec![Some(dw), Some(dv)])
    }
}

/// Checks shared by [`eigh`] and [`eigvalsh`].
fn check(op: &'static str, a: &Tensor) -> Result<()> {
    check_matrix(op, a)?;
    check_square(op, a)?;
    check_float_or_complex(op, a)
}

/// The kernel's eigenvalues `(*, n)` and optional eigenvectors; `NoConvergence` for the
/// first matrix with a NaN or an infinity in the triangle read.
fn kernel(a: &Tensor, uplo: Uplo, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    eigen_outputs(OP, a, a.storage().eigh(a.layout(), uplo == Uplo::Upper, vectors)?)
}

/// The eigendecomposition of symmetric matrices (`torch.linalg.eigh`; a primitive).
///
/// Math: `A = V diag(w) Vᵀ` with `VᵀV = I` and `w` ascending. Only the `uplo` triangle of
/// `a` is read (PyTorch's `UPLO`; its default `'L'` is [`Uplo::Lower`]): the matrix used is
/// the symmetric one with that triangle.
///
/// Shapes: `a: (*, n, n)` → `eigenvalues: (*, n)`, `eigenvectors: (*, n, n)`.
///
/// Sign gauge: each eigenvector is defined up to its sign (more when an eigenvalue
/// repeats). The signs here are deterministic (the same input gives the same bits): the
/// component of largest magnitude of each eigenvector (the first one on ties) is positive.
/// PyTorch (LAPACK's `syevd`) may return other signs.
///
/// Computed by own allocation-free loops for small matrices, rayon over the batch: cyclic
/// Jacobi rotations for `n <= 4`, Householder tridiagonalisation and the implicit QL
/// iteration for `n <= 16` (a batch: on eight matrices at once, one per SIMD lane, with
/// each matrix's own operations). Above, Householder tridiagonalisation (faer's below
/// `n = 160`; from 160 our blocked one, LAPACK `dsytrd`'s scheme, with its products on
/// every thread from 384), then on
/// the tridiagonal our root-free QL iteration (eigenvalues alone, at every order), our
/// implicit QR iteration with Wilkinson shifts (with eigenvectors, `n < 128`), or our
/// divide and conquer (with eigenvectors, `n >= 128`: Cuppen's tearing, deflation, the
/// secular equation by rational interpolation, Gu and Eisenstat's recomputed rank-one
/// term so that the eigenvectors stay orthogonal for clustered eigenvalues), then faer's
/// blocked back-transformation. The eigenvalues alone may then differ from those returned
/// with eigenvectors in the last bits (as LAPACK's `syevd` with and without vectors). A
/// matrix in a batch gets the same bits as the same matrix alone, and a given input gives
/// the same bits on every run, whatever the thread count.
///
/// Non-finite input: a NaN or an infinity in the triangle read fails with
/// `NoConvergence { batch }` (the first such matrix of the batch), checked before any
/// iteration, so nothing loops on it. PyTorch (LAPACK's `syevd`) raises the same
/// "failed to converge" error for most sizes, but returns NaN for some (`n <= 2`, some
/// larger `n`); here the answer does not depend on the size.
///
/// Complex input (c64, c128) is Hermitian: `A = V diag(w) Vᴴ` with real `w` (`f32`,
/// `f64`) and unitary `V`; the triangle read describes the Hermitian matrix (the
/// imaginary parts of its diagonal are not read, as LAPACK's `zheevd`). Each eigenvector
/// is then defined up to a unit phase; here its component of largest modulus (the first
/// on ties) is real and positive. Computed by faer's Householder reduction to a
/// tridiagonal, its phases scaled out, and the real tridiagonal solvers above.
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back
/// (PyTorch refuses them).
///
/// Gradient: `gA = V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ` with `F_ij = 1/(w_j − w_i)` and
/// `skew(X) = (X − Xᵀ)/2`: symmetric (the gradient of the symmetric matrix the triangle
/// describes, split evenly between `(i, j)` and `(j, i)`, as PyTorch's). A loss that uses
/// only the eigenvalues gets `V diag(gw) Vᵀ`, finite at repeated eigenvalues too (see
/// [`eigvalsh`]). At a repeated eigenvalue the eigenvectors are not unique: if the loss
/// is invariant to rotations of the basis within that eigenspace (it depends on the
/// eigenspace only, e.g. through `V_S V_Sᵀ`), the gradient is finite and correct; if it
/// depends on the basis, the gradient is undefined and the backward pass fails with
/// `NotDifferentiable` (PyTorch returns NaN or infinities). Near-repeated eigenvalues
/// give large gradients, as they must. Differentiable to any order. Complex input: the
/// same with `ᴴ` for `ᵀ` (Hermitian); a loss must not depend on the eigenvectors'
/// phases (`V → V e^{iφ}`), which it does exactly when some `Im((VᴴgV)_jj)` is not
/// negligible (beyond `√ε` times the largest modulus in `VᴴgV`); the backward pass then
/// fails with `NotDifferentiable`, as PyTorch raises. Losses of `|V_ij|²`, of projectors
/// `V f(w) Vᴴ` or of the eigenvalues are phase-invariant.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims or is not square; `UnsupportedDType`
/// for integer or boolean input; `NoConvergence` for non-finite input (above).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{eigh, Uplo};
/// let a = Tensor::from_vec(vec![2.0f64, 1.0, 1.0, 2.0], (2, 2))?;
/// let e = eigh(&a, Uplo::Lower)?;
/// let w = e.eigenvalues.to_vec::<f64>()?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// // A V = V diag(w)
/// let av = a.matmul(&e.eigenvectors)?;
/// let vw = e.eigenvectors.mul(&e.eigenvalues.unsqueeze(-2)?)?;
/// assert!(av.sub(&vw)?.abs()?.to_vec::<f64>()?.iter().all(|x| *x < 1e-12));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn eigh(a: &Tensor, uplo: Uplo) -> Result<Eigh> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return eigh(&c[0], uplo);
    }
    check(OP, a)?;
    if a.dtype().is_half() {
        let e = eigh(&a.to_dtype(DType::F32)?, uplo)?;
        return Ok(Eigh {
            eigenvalues: e.eigenvalues.to_dtype(a.dtype())?,
            eigenvectors: e.eigenvectors.to_dtype(a.dtype())?,
        });
    }
    let (w, v) = kernel(a, uplo, true)?;
    let v = v.ok_or(Error::Internal { op: OP, reason: "eigenvectors expected" })?;
    let mut out = record(EighOp, &[a], vec![w, v], true)?.into_iter();
    match (out.next(), out.next()) {
        (Some(eigenvalues), Some(eigenvectors)) => Ok(Eigh { eigenvalues, eigenvectors }),
        _ => Err(Error::Internal { op: OP, reason: "two outputs expected" }),
    }
}

/// The eigenvalues of symmetric matrices (`torch.linalg.eigvalsh`; the eigenvalues of
/// [`eigh`] without its eigenvectors).
///
/// Math: `w` ascending with `A = V diag(w) Vᵀ`; only the `uplo` triangle of `a` is read
/// (PyTorch's `UPLO`, default [`Uplo::Lower`]). Shapes: `a: (*, n, n)` → `(*, n)`.
/// Dtypes: f32, f64, c64 and c128 (Hermitian input, real eigenvalues of the matching
/// precision); bf16 and f16 are computed in f32 and rounded back.
///
/// Gradient: `gA = V diag(gw) Vᵀ` (symmetric; `V diag(gw) Vᴴ` for complex input): no
/// division by eigenvalue gaps, so it is
/// finite and correct at repeated eigenvalues too (the eigenvalues are then still
/// directionally differentiable, and any loss symmetric in the repeated ones, such as
/// their sum, is differentiable). When the input requires grad the eigenvectors are
/// computed as well (the gradient needs them). Differentiable to any order through
/// [`eigh`]; second derivatives divide by the gaps, so they are undefined at repeated
/// eigenvalues (`NotDifferentiable` when the loss makes them matter).
///
/// Errors: `BadShape` if `a` has fewer than 2 dims or is not square; `UnsupportedDType`
/// for non-float input; `NoConvergence { batch }` for a NaN or an infinity in the
/// triangle read, as [`eigh`].
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{eigvalsh, Uplo};
/// // only the upper triangle is read: the 9.0 below the diagonal is ignored
/// let a = Tensor::from_vec(vec![2.0f64, 1.0, 9.0, 2.0], (2, 2))?;
/// let w = eigvalsh(&a, Uplo::Upper)?.to_vec::<f64>()?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn eigvalsh(a: &Tensor, uplo: Uplo) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return eigvalsh(&c[0], uplo);
    }
    check(OPV, a)?;
    if a.dtype().is_half() {
        return eigvalsh(&a.to_dtype(DType::F32)?, uplo)?.to_dtype(a.dtype());
    }
    if should_record(&[a]) {
        // the gradient V diag(gw) Vᵀ needs V: eigh's VJP with gV = None is exactly it
        return Ok(eigh(a, uplo)?.eigenvalues);
    }
    Ok(kernel(a, uplo, false)?.0)
}
