//! `linalg.pinv` (an explicit composite: forward from the SVD, hand-written VJP) and
//! `linalg.matrix_rank` (from the singular values, not differentiable).

use super::svd::{svd, svdvals};
use super::util::{check_float_or_complex, check_matrix, check_square};
use super::{qr, solve_triangular, Diag, QrMode, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::mode::no_grad;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

const OP_PINV: &str = "linalg.pinv";
const OP_RANK: &str = "linalg.matrix_rank";

/// The symmetric (Hermitian, for complex input: the imaginary parts of the diagonal
/// dropped, as `eigh` reads it) matrix whose lower triangle is `a`'s (what
/// `hermitian=True` reads).
pub(crate) fn sym_lower(a: &Tensor) -> Result<Tensor> {
    if a.dtype().is_complex() {
        let strict = a.tril(-1)?;
        let d = a.diagonal(0, -2, -1)?.real()?.to_dtype(a.dtype())?.diag_embed(0, -2, -1)?;
        return strict.add(&strict.mH()?)?.add(&d);
    }
    a.tril(0)?.add(&a.tril(-1)?.mT()?)
}

/// The tolerances `(atol, rtol)` of the cutoff `max(atol, rtol · σ_max)`, PyTorch's
/// rule: `rtol = max(m, n) · eps` when it is not given, unless `atol > 0` is (then
/// `rtol = 0`); a missing `atol` is 0.
fn tolerances(m: usize, n: usize, dt: DType, atol: Option<f64>, rtol: Option<f64>) -> (f64, f64) {
    let eps = if dt.to_real() == DType::F64 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let rtol = match (atol, rtol) {
        (_, Some(r)) => r,
        (Some(a), None) if a > 0.0 => 0.0,
        _ => m.max(n) as f64 * eps,
    };
    (atol.unwrap_or(0.0), rtol)
}

/// The cutoff of each matrix of a batch (the singular values `s`, `k` per matrix, `nb`
/// matrices), with [`tolerances`].
fn cutoffs(
    s: &[f64],
    k: usize,
    nb: usize,
    m: usize,
    n: usize,
    dt: DType,
    atol: Option<f64>,
    rtol: Option<f64>,
) -> Vec<f64> {
    let (atol, rtol) = tolerances(m, n, dt, atol, rtol);
    (0..nb)
        .map(|b| {
            let smax = if k == 0 { 0.0 } else { s[b * k] };
            atol.max(rtol * smax)
        })
        .collect()
}

#[derive(Debug)]
struct PinvOp {
    hermitian: bool,
    /// Every matrix of the batch has full rank `min(m, n)` at the cutoff.
    full_rank: bool,
}

impl Op for PinvOp {
    fn name(&self) -> &'static str {
        OP_PINV
    }

    // P = A⁺ (for complex input read ᴴ for ᵀ throughout). With the projectors A A⁺ and
    // A⁺ A (Golub & Pereyra 1973):
    //   dP = −P dA P + P Pᵀ dAᵀ (I − A P) + (I − P A) dAᵀ Pᵀ P,
    // so gA = −Pᵀ G Pᵀ + (I − A P) Gᵀ P Pᵀ + Pᵀ P Gᵀ (I − P A), evaluated as PyTorch's
    // pinv_backward (FunctionsManual.cpp), grouping the products so that the intermediate
    // matrices have the smaller of m and n as their dims:
    //   m <= n: K = Gᵀ P, gA = −(P K)ᵀ + K Pᵀ − A P K Pᵀ + Pᵀ P (Gᵀ − K A);
    //   m > n:  K = P Gᵀ, gA = −(K P)ᵀ + (Gᵀ − A K) P Pᵀ + Pᵀ K − Pᵀ K P A.
    // hermitian: A is the symmetric matrix of the lower triangle and the gradient is the
    // general one at it (PyTorch's through eigh, for symmetric input). Tensor ops on the
    // re-linked output and input: any order.
    // At full rank a projector is the identity, A P = I (m <= n) or P A = I (m >= n), on
    // a neighbourhood of A (full rank is an open condition), so the terms with (I − A P)
    // or (I − P A) are zero there, with all their derivatives; they are left out rather
    // than computed as rounding noise (PyTorch computes them): for square A,
    // gA = −Pᵀ G Pᵀ, two products instead of eight.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let a = if self.hermitian { sym_lower(cx.input(0))? } else { cx.input(0).clone() };
        let p = cx.output(0)?;
        Ok(vec![Some(pinv_backward(g, &p, &a, self.full_rank)?)])
    }

    // dP as above (Golub–Pereyra; PyTorch's pinv_jvp); hermitian: the general tangent
    // at the symmetric matrix of the lower triangle, along dA as given (the adjoint of
    // the VJP's convention; a symmetric dA is the tangent of a symmetric A)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        let a = if self.hermitian { sym_lower(cx.input(0))? } else { cx.input(0).clone() };
        Ok(vec![Some(pinv_jvp(&a, cx.output(0), da, self.full_rank)?)])
    }
}

/// The tangent of `P = A⁺` along `dA` (constant rank):
/// `dP = −P dA P + P Pᴴ dAᴴ (I − A P) + (I − P A) dAᴴ Pᴴ P`, the projector terms left
/// out where `full_rank` makes them zero (as in [`pinv_backward`]).
pub(crate) fn pinv_jvp(a: &Tensor, p: &Tensor, da: &Tensor, full_rank: bool) -> Result<Tensor> {
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let (ph, dah) = (p.mH()?, da.mH()?);
    let mut dp = p.matmul(da)?.matmul(p)?.neg()?;
    if !(full_rank && m <= n) {
        // P Pᴴ (dAᴴ − (dAᴴ A) P)
        let x = dah.sub(&dah.matmul(a)?.matmul(p)?)?;
        dp = dp.add(&p.matmul(&ph.matmul(&x)?)?)?;
    }
    if !(full_rank && m >= n) {
        // (dAᴴ − P (A dAᴴ)) Pᴴ P
        let x = dah.sub(&p.matmul(&a.matmul(&dah)?)?)?;
        dp = dp.add(&x.matmul(&ph.matmul(p)?)?)?;
    }
    Ok(dp)
}

/// PyTorch's `pinv_backward(grad, pinvA, A)`, in tensor ops; `full_rank`: every matrix
/// has rank `min(m, n)`, and the terms with the complement of a projector that is then
/// the identity are left out.
pub(crate) fn pinv_backward(g: &Tensor, p: &Tensor, a: &Tensor, full_rank: bool) -> Result<Tensor> {
    let (m, n) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
    let pt = p.mH()?;
    let gt = g.mH()?;
    if full_rank && m == n {
        return pt.matmul(g)?.matmul(&pt)?.neg();
    }
    if m <= n {
        let k = gt.matmul(p)?;
        let lead = p.matmul(&k)?.mH()?.neg()?;
        let tail = pt.matmul(p)?.matmul(&gt.sub(&k.matmul(a)?)?)?;
        if full_rank {
            // A P = I: (I − A P) K Pᵀ = 0
            return lead.add(&tail);
        }
        let kpt = k.matmul(&pt)?;
        lead.add(&kpt)?.sub(&a.matmul(p)?.matmul(&kpt)?)?.add(&tail)
    } else {
        let k = p.matmul(&gt)?;
        let lead =
            k.matmul(p)?.mH()?.neg()?.add(&gt.sub(&a.matmul(&k)?)?.matmul(p)?.matmul(&pt)?)?;
        if full_rank {
            // P A = I: Pᵀ K (I − P A) = 0
            return Ok(lead);
        }
        let ptk = pt.matmul(&k)?;
        lead.add(&ptk)?.sub(&ptk.matmul(p)?.matmul(a)?)
    }
}

/// `(m, n)`, the batch dims and the number of matrices of `a: (*, m, n)`.
fn dims_of(a: &Tensor) -> (usize, usize, Vec<usize>, usize) {
    let r = a.rank();
    let batch = a.dims()[..r - 2].to_vec();
    let nb = batch.iter().product();
    (a.dims()[r - 2], a.dims()[r - 1], batch, nb)
}

/// The pseudo-inverse of a detached batch, with what its callers need besides.
pub(crate) struct PinvParts {
    /// `A⁺`, `(*, n, m)`.
    pub(crate) p: Tensor,
    /// Per matrix, the number of singular values above the cutoff: `(*)`, `I64`.
    pub(crate) ranks: Tensor,
    /// Whether every matrix is known to have full rank `min(m, n)` without reading
    /// `ranks` back (the QR path certified them all); `false` says nothing.
    pub(crate) certified: bool,
    /// The singular values `(*, k)`, when asked for (the SVD of the whole batch).
    pub(crate) sv: Option<Tensor>,
    /// `min(m, n)`.
    pub(crate) k: usize,
}

/// How far inside the full-rank region a QR-based bound must put a matrix before its
/// pseudo-inverse is taken from the QR factors (a margin over the rounding of the bound).
const QR_MARGIN: f64 = 16.0;

/// `A⁺` of a detached `a` (call under `no_grad`) for the cutoffs of [`pinv`], with the
/// rank of each matrix; `need_sv` asks for the singular values too.
///
/// The SVD path (PyTorch's algorithm) is written in tensor ops and reads nothing back.
/// Where reading the data costs no transfer ([`Storage::cheap_reads`], the CPU with its
/// optional paths on), a matrix of full rank instead has `A⁺ = R⁻¹ Qᵀ` from `A = Q R`
/// (`m ≥ n`; for `m < n`, `A⁺ = Q R⁻ᵀ` from `Aᵀ = Q R`), a few times cheaper than the
/// SVD. The rank is certified, not guessed: with `P` that QR-based inverse,
/// `σ_min ≥ 1/‖A⁺‖₂ ≥ 1/‖P‖_F` and `σ_max ≤ ‖A‖_F`, so
/// `1/‖P‖_F > 16 · max(atol, rtol ‖A‖_F)` puts every singular value above the cutoff
/// `max(atol, rtol σ_max)` with room for rounding. Matrices that are not certified
/// (nearly rank-deficient ones, `cond(A)` within a factor `16 · min(m, n)` of `1/rtol`)
/// take the SVD path; so does the whole batch when one matrix is not finite (its error
/// is the SVD's) or the singular values are asked for.
///
/// [`Storage::cheap_reads`]: crate::backend::Storage::cheap_reads
pub(crate) fn pinv_detached(
    a: &Tensor,
    atol: Option<f64>,
    rtol: Option<f64>,
    need_sv: bool,
) -> Result<PinvParts> {
    let (m, n, batch, nb) = dims_of(a);
    let k = m.min(n);
    // (complex input takes the SVD path: the certificate reads real values back)
    let qr_path = a.storage().cheap_reads() && !a.dtype().is_complex();
    if !need_sv && k > 0 && nb > 0 && qr_path {
        let dt = a.dtype();
        let av = a.to_vec_f64();
        let af: Vec<f64> =
            av.chunks_exact(m * n).map(|c| c.iter().map(|x| x * x).sum::<f64>().sqrt()).collect();
        if af.iter().all(|x| x.is_finite()) {
            // the cutoff's two parts, as `cutoffs` resolves them (σ_max bounded by ‖A‖_F)
            let bound = cutoffs(&af, 1, nb, m, n, dt, atol, rtol);
            let wide = m < n;
            let f = qr(&if wide { a.mT()? } else { a.clone() }, QrMode::Reduced)?;
            let rq = solve_triangular(&f.r, &f.q.mT()?, Uplo::Upper, Side::Left, Diag::NonUnit)?;
            let p = if wide { rq.mT()? } else { rq };
            let pf = p.square()?.sum_dims(&[-2, -1], false)?.to_vec_f64();
            let ok: Vec<bool> = pf
                .iter()
                .zip(&bound)
                .map(|(&pf, &cut)| pf.is_finite() && pf > 0.0 && 1.0 / pf.sqrt() > QR_MARGIN * cut)
                .collect();
            let full = || Tensor::full(batch.clone(), k as f64, DType::I64);
            if ok.iter().all(|&o| o) {
                return Ok(PinvParts { p, ranks: full()?, certified: true, sv: None, k });
            }
            // the matrices left take the SVD path, as one smaller batch
            let bad: Vec<usize> = (0..nb).filter(|&b| !ok[b]).collect();
            let mut sub = Vec::with_capacity(bad.len() * m * n);
            for &b in &bad {
                sub.extend_from_slice(&av[b * m * n..(b + 1) * m * n]);
            }
            let sub = Tensor::from_vec(sub, (bad.len(), m, n))?.to_dtype(dt)?;
            let fixed = pinv_svd(&sub, atol, rtol, false)?;
            let (mut pv, fv) = (p.to_vec_f64(), fixed.p.to_vec_f64());
            let mut ranks = vec![k as i64; nb];
            for (j, (&b, r)) in bad.iter().zip(fixed.ranks.to_vec::<i64>()?).enumerate() {
                pv[b * m * n..(b + 1) * m * n].copy_from_slice(&fv[j * m * n..(j + 1) * m * n]);
                ranks[b] = r;
            }
            let mut pdims = batch.clone();
            pdims.extend([n, m]);
            let p = Tensor::from_vec(pv, pdims)?.to_dtype(dt)?;
            let ranks = Tensor::from_vec(ranks, batch)?;
            return Ok(PinvParts { p, ranks, certified: false, sv: None, k });
        }
    }
    pinv_svd(a, atol, rtol, need_sv)
}

/// [`pinv_detached`] by the SVD of every matrix, in tensor ops (nothing read back):
/// `A⁺ = V diag(σ_i > cut ? 1/σ_i : 0) Uᴴ` and the count of `σ_i > cut`.
fn pinv_svd(a: &Tensor, atol: Option<f64>, rtol: Option<f64>, need_sv: bool) -> Result<PinvParts> {
    let (m, n, batch, _) = dims_of(a);
    let k = m.min(n);
    let f = svd(a, false)?;
    let (atol, rtol) = tolerances(m, n, a.dtype(), atol, rtol);
    let ranks = if k == 0 {
        Tensor::zeros(batch.clone(), DType::I64)?
    } else {
        let cut = f.s.narrow(-1, 0, 1)?.mul_scalar(rtol)?.clamp(Some(atol), None)?;
        let kept = f.s.gt(&cut)?;
        let sinv = Tensor::where_cond(&kept, &f.s.reciprocal()?, &f.s.zeros_like()?)?;
        let sinv = sinv.to_dtype(a.dtype())?;
        let p = f.vh.mH()?.mul(&sinv.unsqueeze(-2)?)?.matmul(&f.u.mH()?)?;
        let ranks = kept.to_dtype(f.s.dtype())?.sum_dims(&[-1], false)?.to_dtype(DType::I64)?;
        return Ok(PinvParts { p, ranks, certified: false, sv: need_sv.then_some(f.s), k });
    };
    // an empty matrix: A⁺ is the empty or zero (n, m) matrix
    let mut pdims = batch;
    pdims.extend([n, m]);
    let p = Tensor::zeros(pdims, a.dtype())?;
    Ok(PinvParts { p, ranks, certified: false, sv: need_sv.then_some(f.s), k })
}

/// The tolerances of [`pinv`] and [`matrix_rank`] (the keyword arguments of
/// `torch.linalg.pinv` and `torch.linalg.matrix_rank`, of the same names and defaults).
///
/// `Default` is PyTorch's default: no `atol`, no `rtol` (so `rtol = max(m, n) · eps`),
/// a general matrix. A singular value counts when it is above
/// `max(atol, rtol · σ_max)`; see [`pinv`] for the rules when only one is given.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{matrix_rank, pinv, PinvOptions};
/// let a = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1e-9], (2, 2))?;
/// assert_eq!(matrix_rank(&a, PinvOptions::default())?.item::<i64>()?, 2);
/// let loose = PinvOptions { rtol: Some(1e-6), ..Default::default() };
/// assert_eq!(matrix_rank(&a, loose)?.item::<i64>()?, 1);
/// // the small singular value cut: A⁺ = diag(1, 0)
/// assert_eq!(pinv(&a, loose)?.to_vec::<f64>()?, vec![1.0, 0.0, 0.0, 0.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PinvOptions {
    /// The absolute tolerance on the singular values (PyTorch's `atol`, default `None`).
    pub atol: Option<f64>,
    /// The tolerance relative to the largest singular value (PyTorch's `rtol`, default
    /// `None`).
    pub rtol: Option<f64>,
    /// Read `A` as the Hermitian (symmetric) matrix of its lower triangle (PyTorch's
    /// `hermitian`, default `false`).
    pub hermitian: bool,
}

/// The Moore–Penrose pseudo-inverse (`torch.linalg.pinv`; an explicit composite).
///
/// Math: `A⁺ = V diag(1/σ_i) Uᵀ` over the singular values `σ_i > cutoff`, with
/// `cutoff = max(atol, rtol · σ_max)` per matrix (PyTorch's rule: when both tolerances
/// are `None`, `rtol = max(m, n) · eps` of the dtype and `atol = 0`; when only `atol` is
/// given and it is `> 0`, `rtol = 0`; a missing `atol` is 0), the tolerances from
/// `options` ([`PinvOptions`]). `hermitian`: `A` is taken
/// as the symmetric matrix of its lower triangle (the upper one is not read), as PyTorch
/// (which goes through `eigh`; here its SVD, whose singular values are the eigenvalues'
/// magnitudes).
///
/// Computation: a matrix of full rank (certified: `1/‖R⁻¹‖_F`, a lower bound of
/// `σ_min`, is more than 16 times the cutoff with `‖A‖_F` for `σ_max`) takes
/// `A⁺ = R⁻¹ Qᵀ` from `A = Q R` (`Q R⁻ᵀ` from `Aᵀ = Q R` when `m < n`), several times
/// cheaper than the SVD; the other matrices of the batch take the SVD. Both give `A⁺`
/// to rounding (the QR one to about `eps · cond(A)`, as the SVD's).
///
/// Shapes: `a: (*, m, n)` → `(*, n, m)`; batched; empty matrices give an empty or zero
/// result.
///
/// Dtypes: f32, f64, c64, c128 (complex input always through the SVD, `ᴴ` for `ᵀ`;
/// with `hermitian`, the lower triangle read as a Hermitian matrix, the imaginary parts
/// of its diagonal dropped); bf16 and f16 are computed in f32 and rounded back.
///
/// Gradient: PyTorch's `pinv_backward` (the derivative of `A⁺` for a constant rank), in
/// tensor ops on the result: differentiable to any order. Not continuous where a
/// singular value crosses the cutoff. When every matrix has full rank, the terms that
/// vanish there (`A A⁺ = I` or `A⁺ A = I`) are left out: for square `A` the gradient is
/// `−A⁺ᵀ G A⁺ᵀ`, as for [`super::inv`], where PyTorch adds rounding noise of the size
/// `eps · cond(A)`. With `hermitian`, the general pinv gradient at the
/// symmetric matrix read (PyTorch's, for symmetric input; for non-symmetric input PyTorch
/// gives another matrix, through `eigh`).
///
/// Errors: `BadShape` for fewer than 2 dims, or non-square matrices with `hermitian`;
/// `UnsupportedDType` for non-float input; `NoConvergence` (named `linalg.svd`, as
/// PyTorch's error) for NaN or infinite entries.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{pinv, PinvOptions};
/// // a rank-1 matrix: A⁺ = Aᵀ / ‖A‖²
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], (2, 2))?;
/// let p = pinv(&a, PinvOptions::default())?.to_vec::<f64>()?;
/// assert!(p.iter().zip([0.04, 0.08, 0.08, 0.16]).all(|(x, y)| (x - y).abs() < 1e-15));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn pinv(a: &Tensor, options: PinvOptions) -> Result<Tensor> {
    let PinvOptions { atol, rtol, hermitian } = options;
    if let Some(d) = crate::autocast::autocast_dtype() {
        // PyTorch's pinv ends in a matmul, which its autocast runs in the region's dtype:
        // the result is rounded to it here (f64 excepted, as autocast leaves f64 alone)
        let p = {
            let _plain = crate::autocast::suspend();
            pinv(a, options)?
        };
        return if p.dtype() == DType::F64 { Ok(p) } else { p.to_dtype(d) };
    }
    check_matrix(OP_PINV, a)?;
    check_float_or_complex(OP_PINV, a)?;
    if hermitian {
        check_square(OP_PINV, a)?;
    }
    if a.dtype().is_half() {
        return pinv(&a.to_dtype(DType::F32)?, options)?.to_dtype(a.dtype());
    }
    let (p, full_rank) = {
        let _guard = no_grad();
        let a_read = if hermitian { sym_lower(a)? } else { a.detach() };
        // (the full-rank shortcut of the backward only where the QR path certified it:
        // reading the ranks back would be a round trip PyTorch's pinv does not make)
        let parts = pinv_detached(&a_read, atol, rtol, false)?;
        (parts.p, parts.k > 0 && parts.certified)
    };
    record1(PinvOp { hermitian, full_rank }, &[a], p, true)
}

/// The numerical rank of matrices (`torch.linalg.matrix_rank`).
///
/// Math: the number of singular values `σ_i > max(atol, rtol · σ_max)`, with
/// [`pinv`]'s tolerance rules (the same [`PinvOptions`]); with `hermitian`, of the symmetric matrix of the lower
/// triangle (its eigenvalues' magnitudes, as PyTorch's `eigvalsh` path).
///
/// Shapes: `a: (*, m, n)` → `(*)`, `I64`. Empty matrices have rank 0.
///
/// Dtypes: f32, f64, c64, c128 (the tolerance uses the epsilon of the real precision);
/// bf16 and f16 are computed in f32.
///
/// Gradient: none (an integer output).
///
/// Errors: `BadShape` for fewer than 2 dims, or non-square matrices with `hermitian`;
/// `UnsupportedDType` for non-float input; `NoConvergence` (named `linalg.svd`) for NaN
/// or infinite entries (PyTorch raises for NaN and returns 0 for infinite entries).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{matrix_rank, PinvOptions};
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0, 0.0, 1.0], (3, 2))?;
/// assert_eq!(matrix_rank(&a, PinvOptions::default())?.to_vec::<i64>()?, vec![2]);
/// let b = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], (2, 2))?;
/// assert_eq!(matrix_rank(&b, PinvOptions::default())?.to_vec::<i64>()?, vec![1]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn matrix_rank(a: &Tensor, options: PinvOptions) -> Result<Tensor> {
    let PinvOptions { atol, rtol, hermitian } = options;
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return matrix_rank(&c[0], options);
    }
    check_matrix(OP_RANK, a)?;
    check_float_or_complex(OP_RANK, a)?;
    if hermitian {
        check_square(OP_RANK, a)?;
    }
    let _guard = no_grad();
    let a = if a.dtype().is_half() { a.to_dtype(DType::F32)? } else { a.detach() };
    let (m, n, batch, nb) = dims_of(&a);
    let k = m.min(n);
    let a_read = if hermitian { sym_lower(&a)? } else { a.clone() };
    if k == 0 || nb == 0 {
        return Tensor::zeros(batch, DType::I64);
    }
    // tensor ops throughout (no read back): the count of σ_i > max(atol, rtol σ_max)
    let (atol, rtol) = tolerances(m, n, a.dtype(), atol, rtol);
    let s = svdvals(&a_read)?;
    let cut = s.narrow(-1, 0, 1)?.mul_scalar(rtol)?.clamp(Some(atol), None)?;
    s.gt(&cut)?.to_dtype(s.dtype())?.sum_dims(&[-1], false)?.to_dtype(DType::I64)
}
