//! `linalg.lstsq` (an explicit composite: forward by QR or the SVD, per driver; the
//! solution's VJP is PyTorch's, through the pseudo-inverse).

use super::pinv::{pinv, pinv_backward, pinv_detached, pinv_jvp, PinvOptions};
use super::util::{broadcast_batch, check_float_or_complex, check_same_dtype};
use super::{qr, solve_triangular, Diag, QrMode, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::mode::no_grad;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.lstsq";

/// Which LAPACK driver [`lstsq`] follows (PyTorch's `driver=`; `None` is `Gelsy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LstsqDriver {
    /// QR (`m >= n`) or LQ (`m < n`) without pivoting; assumes full rank. Fills
    /// `residuals` when `m > n`; no `rank`, no `singular_values`.
    Gels,
    /// Rank-revealing (the default): fills `rank`.
    Gelsy,
    /// SVD based: fills `rank`, `singular_values`, and `residuals` as `Gels` when every
    /// matrix has full rank.
    Gelsd,
    /// SVD based, as `Gelsd`.
    Gelss,
}

/// The options of [`lstsq`] (`torch.linalg.lstsq`'s `rcond` and `driver`, of the same
/// defaults).
///
/// `Default` is PyTorch's: `rcond = None` (`max(m, n) · eps`), the `Gelsy` driver.
/// `From<LstsqDriver>` takes a driver alone, so `lstsq(&a, &b, LstsqDriver::Gelsd)`
/// reads as PyTorch's `driver='gelsd'`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{lstsq, LstsqDriver, LstsqOptions};
/// let a = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1e-9, 0.0, 0.0], (3, 2))?;
/// let b = Tensor::from_vec(vec![1.0f64, 1.0, 1.0], 3)?;
/// assert_eq!(lstsq(&a, &b, LstsqOptions::default())?.rank.item::<i64>()?, 2);
/// let loose = LstsqOptions { rcond: Some(1e-6), driver: Some(LstsqDriver::Gelsd) };
/// let r = lstsq(&a, &b, loose)?;
/// assert_eq!(r.rank.item::<i64>()?, 1);
/// assert_eq!(r.solution.to_vec::<f64>()?, vec![1.0, 0.0]);
/// assert_eq!(lstsq(&a, &b, LstsqDriver::Gelsd)?.singular_values.dims(), &[2]);
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LstsqOptions {
    /// Singular values at most `rcond · σ_max` count as zero (PyTorch's `rcond`,
    /// default `None`: `max(m, n) · eps` of the dtype; a negative value is `eps`).
    /// Ignored by `Gels`.
    pub rcond: Option<f64>,
    /// The driver (PyTorch's `driver`, default `None`: `Gelsy`).
    pub driver: Option<LstsqDriver>,
}

impl From<LstsqDriver> for LstsqOptions {
    fn from(driver: LstsqDriver) -> LstsqOptions {
        LstsqOptions { rcond: None, driver: Some(driver) }
    }
}

/// The result of [`lstsq`] (PyTorch's named tuple `(solution, residuals, rank,
/// singular_values)`); outputs a driver does not compute are empty tensors of shape
/// `(0,)`, as PyTorch's.
#[derive(Debug, Clone)]
pub struct Lstsq {
    /// The least-squares (minimum-norm for rank-deficient or wide `A`) solution: `(*, n, k)`
    /// (`(*, n)` for a vector `b`), `*` the broadcast batch dims. Differentiable.
    pub solution: Tensor,
    /// `‖A x − b‖²` per column, `(*, k)` (`(*, 1)` for a vector `b`), when `m > n`, the
    /// driver is not `Gelsy`, and (except for `Gels`) every matrix has full rank `n`;
    /// else empty. Differentiable (as PyTorch).
    pub residuals: Tensor,
    /// The numerical rank, `I64` of `A`'s own batch shape (`Gelsy`, `Gelsd`, `Gelss`);
    /// empty for `Gels`.
    pub rank: Tensor,
    /// The singular values of `A`, `(*A, min(m, n))` (`Gelsd`, `Gelss`); else empty. Not
    /// differentiable.
    pub singular_values: Tensor,
}

#[derive(Debug)]
struct LstsqOp {
    /// `pinv(A)` from the forward's SVD, broadcast to the solve's batch, when it is the one
    /// the gradient needs (an SVD driver with the default `rcond`, which is pinv's default
    /// tolerance): reused by a first-order backward instead of a second SVD. With it,
    /// whether every matrix has full rank at that tolerance (`pinv_backward`'s shortcut).
    pinv: Option<(Tensor, bool)>,
}

impl Op for LstsqOp {
    fn name(&self) -> &'static str {
        OP
    }

    // X = A⁺ B for the rank the driver found; PyTorch's linalg_lstsq_backward
    // (FunctionsManual.cpp) differentiates X = pinv(A) B with pinv's default tolerance,
    // whatever the driver and rcond:
    //   gB = pinv(A)ᵀ gX,  gA = pinv_backward(gX Bᵀ, pinv(A), A).
    // pinv in tensor ops (recorded when the backward is): any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let (a, b) = (cx.input(0), cx.input(1));
        let (p, full_rank) = match &self.pinv {
            Some((p, full)) if !cx.create_graph() => (p.clone(), *full),
            _ => (pinv(a, PinvOptions::default())?, false),
        };
        let ga = if cx.needs_input_grad(0) {
            Some(pinv_backward(&g.matmul(&b.mH()?)?, &p, a, full_rank)?)
        } else {
            None
        };
        let gb = if cx.needs_input_grad(1) { Some(p.mH()?.matmul(g)?) } else { None };
        Ok(vec![ga, gb])
    }

    // X = pinv(A) B as the VJP differentiates it: dX = dP B + P dB with dP pinv's tangent
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (a, b) = (cx.input(0), cx.input(1));
        let p = pinv(a, PinvOptions::default())?;
        let mut dx = t[1].as_ref().map(|db| p.matmul(db)).transpose()?;
        if let Some(da) = &t[0] {
            let term = pinv_jvp(a, &p, da, false)?.matmul(b)?;
            dx = Some(match dx {
                Some(x) => x.add(&term)?,
                None => term,
            });
        }
        Ok(vec![dx])
    }
}

/// The residuals `ρ_j = ‖A x_j − b_j‖²` of a least-squares solution `X` (full column rank,
/// `m > n`), recorded with `A`, `B` and the (recorded) solution as inputs.
#[derive(Debug)]
struct ResidualsOp;

impl Op for ResidualsOp {
    fn name(&self) -> &'static str {
        OP
    }

    // ρ = Σ_rows (A X − B)² (Σ |·|² for complex input, with ᴴ for ᵀ below) with X = A⁺B.
    // With R = A X − B, dρ_j = 2 r_jᵀ (dA x_j + A dx_j
    // − db_j), and A dx_j drops out: r_jᵀ A = 0 at the least-squares solution (the normal
    // equations), for every full-rank (A, B). So
    //   gA = 2 R diag(g) Xᵀ,  gB = −2 R diag(g),  gX = 0 (exactly, not dropped).
    // R and X are recomputed from the recorded A, B and solution, so with create_graph the
    // backward is differentiated through X(A, B) as well: any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None, None]) };
        let (a, b, x) = (cx.input(0), cx.input(1), cx.input(2));
        let rg = a.matmul(x)?.sub(b)?.mul(&g.unsqueeze(-2)?)?.mul_scalar(2.0)?;
        let ga = cx.needs_input_grad(0).then(|| rg.matmul(&x.mH()?)).transpose()?;
        let gb = cx.needs_input_grad(1).then(|| rg.neg()).transpose()?;
        Ok(vec![ga, gb, None])
    }

    // dρ_j = 2 Re(r_jᴴ dr_j), dR = dA X + A dX − dB (the A dX term vanishes at the
    // least-squares solution, as the VJP uses; kept here, as the tangent of X is at hand)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (a, x) = (cx.input(0), cx.input(2));
        let r = a.matmul(x)?.sub(cx.input(1))?;
        let mut dr: Option<Tensor> = None;
        let mut add = |d: Tensor| -> Result<()> {
            dr = Some(match dr.take() {
                Some(s) => s.add(&d)?,
                None => d,
            });
            Ok(())
        };
        if let Some(da) = &t[0] {
            add(da.matmul(x)?)?;
        }
        if let Some(db) = &t[1] {
            add(db.neg()?)?;
        }
        if let Some(dx) = &t[2] {
            add(a.matmul(dx)?)?;
        }
        let Some(dr) = dr else { return Ok(vec![None]) };
        let p = r.conj()?.mul(&dr)?;
        let p = if p.dtype().is_complex() { p.real()? } else { p };
        Ok(vec![Some(p.sum_dims(&[-2], false)?.mul_scalar(2.0)?)])
    }
}

/// An empty `(0,)` tensor of `dt`.
fn empty(dt: DType) -> Result<Tensor> {
    Tensor::zeros(vec![0], dt)
}

/// Zeroes the solution of each matrix of `x` whose `A` (same batch) is exactly zero
/// (LAPACK's drivers return a zero solution for a zero matrix).
fn zero_for_zero_a(a: &Tensor, x: &Tensor) -> Result<Tensor> {
    let r = a.rank();
    let asz = a.dims()[r - 2] * a.dims()[r - 1];
    let xsz = x.dims()[r - 2] * x.dims()[r - 1];
    if asz == 0 || xsz == 0 {
        return Ok(x.clone());
    }
    // the largest magnitude of each matrix (a NaN's is NaN), read back: LAPACK's drivers
    // test it on the host too, and four tensor ops cost more than a small solve itself
    let amax = super::vector_norm(&a.detach(), f64::INFINITY, Some(&[-2, -1]), true)?;
    if !amax.to_vec_f64().contains(&0.0) {
        return Ok(x.clone());
    }
    // the solutions of zero matrices replaced by a mask (x keeps its history)
    Tensor::where_cond(&amax.eq_scalar(0.0)?, &x.zeros_like()?, x)
}

/// Least squares `min ‖A X − B‖` (`torch.linalg.lstsq`; an explicit composite).
///
/// Math: for `a: (*, m, n)` and `b: (*, m, k)` (or a vector `b: (*, m)`, when `b` has one
/// dim less than `a`), the solution `X = A⁺ B` of minimum norm. The drivers follow
/// PyTorch's CPU ones (LAPACK), chosen by `options` (a [`LstsqOptions`], or a
/// [`LstsqDriver`] alone):
/// - `Gels` (QR for `m >= n`, LQ through the QR of `Aᵀ` for `m < n`): assumes full rank;
///   a rank-deficient `A` gives inf/NaN or huge values (LAPACK: huge values, a zero
///   solution for a zero matrix, as here);
/// - `Gelsy` (the default), `Gelsd`, `Gelss`: `A⁺ B` with singular values
///   `σ_i <= rcond · σ_max` treated as zero (`rcond`: `None` is `max(m, n) · eps` of the
///   dtype; a negative value is `eps`, LAPACK's rule). `rcond` is ignored by `Gels`.
///   `Gelsd` and `Gelss` take the SVD of every matrix. `Gelsy` takes `A⁺` from a QR
///   factorisation where a bound certifies that every singular value is well above the
///   cutoff (`1/‖R⁻¹‖_F > 16 · rcond · ‖A‖_F`), and from the SVD for the other
///   matrices of the batch (as [`super::pinv`] does).
///
/// Shapes: the batch dims of `a` and `b` broadcast (both must have the same number of
/// dims, or one less for a vector `b`, as PyTorch); `solution: (*, n, k)`; `residuals`,
/// `rank`, `singular_values` as [`Lstsq`] describes, per driver (empty when not
/// computed). Empty matrices: zero solutions, rank 0.
///
/// Dtypes: f32, f64, c64, c128 (one for both; complex input with `ᴴ` for `ᵀ`, real
/// `residuals` `Σ |r|²` and real singular values, as PyTorch); bf16 and f16 are computed
/// in f32 and rounded back (PyTorch refuses them).
///
/// Gradient: of `solution` and `residuals`, to any order, as PyTorch. The solution's is
/// PyTorch's: that of `pinv(A) B` with pinv's default tolerance, for every driver. The
/// residuals' is that of `ρ = Σ_rows (A X − B)²` at the least-squares `X`, where `X`'s own
/// variation drops out (`Aᵀ (A X − B) = 0`): `gA = 2 R diag(g) Xᵀ`, `gB = −2 R diag(g)`
/// with `R = A X − B`. `rank` and `singular_values` carry no gradient (as PyTorch).
///
/// Divergences: `Gelsy`'s rank is that of the singular values (certified by the bound
/// above, or counted from the SVD) rather than LAPACK's column-pivoted QR with
/// incremental condition estimation (they agree unless a singular value is within the
/// estimate's slack of the cutoff), and its solution is the minimum-norm one (LAPACK's
/// complete orthogonal factorisation gives the same solution up to rounding when the
/// ranks agree).
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `ShapeMismatch` if `b`'s number of
/// dims is not `a`'s or one less, if the rows differ, or the batches do not broadcast;
/// `DTypeMismatch`; `UnsupportedDType` for non-float input; `NoConvergence` (named
/// `linalg.svd`) for NaN or infinite entries with an SVD driver (PyTorch fails with an
/// internal assertion on NaN).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{lstsq, LstsqDriver};
/// // fit y = c0 + c1 t through (0, 1), (1, 3), (2, 5)
/// let a = Tensor::from_vec(vec![1.0f64, 0.0, 1.0, 1.0, 1.0, 2.0], (3, 2))?;
/// let y = Tensor::from_vec(vec![1.0f64, 3.0, 5.0], 3)?;
/// let r = lstsq(&a, &y, LstsqDriver::Gelsd)?;
/// let c = r.solution.to_vec::<f64>()?;
/// assert!((c[0] - 1.0).abs() < 1e-12 && (c[1] - 2.0).abs() < 1e-12);
/// assert_eq!(r.rank.to_vec::<i64>()?, vec![2]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lstsq(a: &Tensor, b: &Tensor, options: impl Into<LstsqOptions>) -> Result<Lstsq> {
    let options = options.into();
    let LstsqOptions { rcond, driver } = options;
    if let Some(c) = crate::autocast::fp32(&[a, b])? {
        return lstsq(&c[0], &c[1], options);
    }
    if a.rank() < 2 {
        return Err(Error::BadShape {
            op: OP,
            expected: "input of at least 2 dims (*, m, n)",
            got: a.shape().clone(),
        });
    }
    let mismatch =
        || Error::ShapeMismatch { op: OP, lhs: a.shape().clone(), rhs: b.shape().clone() };
    let vector = b.rank() + 1 == a.rank();
    if !vector && b.rank() != a.rank() {
        return Err(mismatch());
    }
    let (m, n) = (a.dims()[a.rank() - 2], a.dims()[a.rank() - 1]);
    let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
    if bm.dims()[bm.rank() - 2] != m {
        return Err(mismatch());
    }
    check_float_or_complex(OP, a)?;
    check_float_or_complex(OP, b)?;
    check_same_dtype(OP, a, b)?;
    let dt = a.dtype();
    if dt.is_half() {
        let r = lstsq(&a.to_dtype(DType::F32)?, &b.to_dtype(DType::F32)?, options)?;
        return Ok(Lstsq {
            solution: r.solution.to_dtype(dt)?,
            residuals: r.residuals.to_dtype(dt)?,
            rank: r.rank,
            singular_values: r.singular_values.to_dtype(dt)?,
        });
    }
    let driver = driver.unwrap_or(LstsqDriver::Gelsy);
    let (ab, bb) = broadcast_batch(OP, a, 2, &bm, 2)?;
    let k = m.min(n);
    let eps = if dt.to_real() == DType::F64 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let (x, rank, sv, full_rank, p_fwd) = {
        let _guard = no_grad();
        let (ad, bd) = (ab.detach(), bb.detach());
        if driver == LstsqDriver::Gels {
            let x = if m >= n {
                let f = qr(&ad, QrMode::Reduced)?;
                let y = f.q.mH()?.matmul(&bd)?;
                solve_triangular(&f.r, &y, Uplo::Upper, Side::Left, Diag::NonUnit)?
            } else {
                // A = Rᴴ Qᴴ (the LQ of A from the QR of Aᴴ): X = Q R⁻ᴴ B, of least norm
                let f = qr(&ad.mH()?, QrMode::Reduced)?;
                let y = solve_triangular(&f.r.mH()?, &bd, Uplo::Lower, Side::Left, Diag::NonUnit)?;
                f.q.matmul(&y)?
            };
            (zero_for_zero_a(&ad, &x)?, None, None, true, None)
        } else {
            // the factorisation of A itself (rank and singular values keep A's batch)
            let rc = match rcond {
                None => m.max(n) as f64 * eps,
                Some(r) if r < 0.0 => eps,
                Some(r) => r,
            };
            let need_sv = matches!(driver, LstsqDriver::Gelsd | LstsqDriver::Gelss);
            let parts = pinv_detached(&a.detach(), None, Some(rc), need_sv)?;
            // read back: whether the residuals exist depends on the ranks (a data-dependent
            // output shape, where PyTorch's lstsq synchronises too)
            let ranks = parts.ranks.to_vec::<i64>()?;
            let full_rank = ranks.iter().all(|&r| r == n as i64);
            let p = parts.p;
            let (pb, bd) = broadcast_batch(OP, &p, 2, &bd, 2)?;
            let x = pb.matmul(&bd)?;
            // pinv's default cutoff is max(m, n) eps σ_max, strict: the default rcond's
            let p_fwd = rcond.is_none().then(|| (pb, ranks.iter().all(|&r| r == k as i64)));
            (x, Some(parts.ranks), parts.sv, full_rank, p_fwd)
        }
    };
    let solution = record1(LstsqOp { pinv: p_fwd }, &[&ab, &bb], x, false)?;
    let residuals = if m > n && driver != LstsqDriver::Gelsy && full_rank {
        let rho = {
            let _guard = no_grad();
            let r = ab.detach().matmul(&solution.detach())?.sub(&bb.detach())?;
            // |r|², real for complex input (as PyTorch)
            let r2 = if r.dtype().is_complex() { r.abs()?.square()? } else { r.mul(&r)? };
            r2.sum_dims(&[-2], false)?
        };
        record1(ResidualsOp, &[&ab, &bb, &solution], rho, false)?
    } else {
        empty(dt.to_real())?
    };
    let solution = if vector { solution.squeeze_dim(-1)? } else { solution };
    let rank = match (driver, rank) {
        (LstsqDriver::Gels, _) | (_, None) => Tensor::zeros(vec![0], DType::I64)?,
        (_, Some(r)) => r,
    };
    let singular_values = match (driver, sv) {
        (LstsqDriver::Gelsd | LstsqDriver::Gelss, Some(s)) => s,
        _ => empty(dt.to_real())?,
    };
    Ok(Lstsq { solution, residuals, rank, singular_values })
}
