//! `linalg.qr` (Householder QR, a primitive with a hand-written VJP) and
//! `linalg.householder_product` (an implicit composite).

use super::util::{batch_of, check_float_or_complex, check_matrix, from_kernel};
use super::{solve_triangular, Diag, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, Op, VjpCtx};
use crate::backend::QrSpec;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.qr";
const HP: &str = "linalg.householder_product";

/// Which factors [`qr()`] returns (PyTorch's `mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QrMode {
    /// `Q: (*, m, k)`, `R: (*, k, n)` with `k = min(m, n)` (`mode='reduced'`, the default).
    Reduced,
    /// `Q: (*, m, m)`, `R: (*, m, n)` (`mode='complete'`). For `m > n` the last `m − n`
    /// columns of `Q` are an orthonormal completion, and the factorisation is not
    /// differentiable (as in PyTorch).
    Complete,
    /// `R` only, as in `Reduced`; `Q` is an empty tensor of shape `(0,)` (`mode='r'`). Not
    /// differentiable: the derivative of `R` depends on `Q`.
    R,
}

/// The factors of [`qr()`]: `A = Q R` (PyTorch's named tuple `(Q, R)`).
#[derive(Debug, Clone)]
pub struct Qr {
    /// The factor with orthonormal columns, `(*, m, k)` (`(*, m, m)` in complete mode;
    /// empty `(0,)` in mode `R`).
    pub q: Tensor,
    /// The upper triangular (trapezoidal when `m < n`) factor, `(*, k, n)` (`(*, m, n)` in
    /// complete mode).
    pub r: Tensor,
}

#[derive(Debug)]
struct QrOp {
    mode: QrMode,
    m: usize,
    n: usize,
}

/// The gradient of `A = Q R` for a square or tall `A` (`Q: (*, m, n)`, `R: (*, n, n)`,
/// `m >= n`), in tensor ops. See [`QrOp::vjp`].
fn qr_grad_tall(
    q: &Tensor,
    r: &Tensor,
    gq: Option<&Tensor>,
    gr: Option<&Tensor>,
) -> Result<Tensor> {
    // M = gR Rᴴ − Qᴴ gQ
    let m = match (gq, gr) {
        (Some(gq), Some(gr)) => gr.matmul(&r.mH()?)?.sub(&q.mH()?.matmul(gq)?)?,
        (Some(gq), None) => q.mH()?.matmul(gq)?.neg()?,
        (None, Some(gr)) => gr.matmul(&r.mH()?)?,
        (None, None) => return Err(Error::Internal { op: OP, reason: "no cotangent" }),
    };
    // S = Φ*(M) = striu(M) + striu(M)ᴴ + Re(diag M): Hermitian, its strict upper
    // triangle M's (for real input, triu(M) + striu(M)ᵀ)
    let upper = m.triu(1)?;
    let s = if m.dtype().is_complex() {
        let d = m.diagonal(0, -2, -1)?.real()?.diag_embed(0, -2, -1)?;
        upper.add(&upper.mH()?)?.add(&d)?
    } else {
        m.triu(0)?.add(&upper.mT()?)?
    };
    let b = q.matmul(&s)?;
    let b = match gq {
        Some(gq) => b.add(gq)?,
        None => b,
    };
    // gA = B R⁻ᴴ: a right solve with the lower triangular Rᴴ
    solve_triangular(&r.mH()?, &b, Uplo::Lower, Side::Right, Diag::NonUnit)
}

/// True if `g` is absent or of `t`'s dtype.
fn same_dtype(t: &Tensor, g: Option<&Tensor>) -> bool {
    g.is_none_or(|g| g.dtype() == t.dtype())
}

impl Op for QrOp {
    fn name(&self) -> &'static str {
        OP
    }

    // Tall or square (m >= n), A = Q R with QᵀQ = I and R upper triangular:
    //   C = Qᵀ dA R⁻¹ = Qᵀ dQ + dR R⁻¹ (skew + upper), so dR = Φ(C) R and
    //   dQ = dA R⁻¹ − Q Φ(C), with Φ(C) = triu(C) + tril(C, −1)ᵀ. Then
    //   ⟨gQ, dQ⟩ + ⟨gR, dR⟩ = ⟨gQ R⁻ᵀ, dA⟩ + ⟨M, Φ(C)⟩, M = gR Rᵀ − Qᵀ gQ, and
    //   Φ*(M) = triu(M) + striu(M)ᵀ, so
    //   gA = (gQ + Q Φ*(M)) R⁻ᵀ.
    // Wide (m < n), A = [X | Y] with X = Q R₁ square and Y = Q R₂ (R₂ = Qᵀ Y):
    //   gY = Q gR₂, and R₂'s dependence on Q adds Y gR₂ᵀ to gQ before the square rule
    //   gives gX from (gQ + Y gR₂ᵀ, gR₁).
    // (PyTorch linalg_qr_backward, FunctionsManual.cpp; Walter & Lehmann 2018,
    // "Algorithmic differentiation of linear algebra functions"; Roberts et al. 2020,
    // arXiv:2009.10071 for the wide case.) Tensor ops only: differentiable again.
    // Complex input, with R's diagonal real (the gauge the kernel keeps): QᴴdQ is
    // skew-Hermitian and dR R⁻¹ upper with a real diagonal, so Φ(C) = striu(C) +
    // stril(C)ᴴ + Re(diag C), Φ*(M) = striu(M) + striu(M)ᴴ + Re(diag M), M = gR Rᴴ − Qᴴ gQ
    // and gA = (gQ + Q Φ*(M)) R⁻ᴴ; the wide case with Y gR₂ᴴ.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        if self.mode == QrMode::R {
            return Err(Error::NotDifferentiable {
                op: OP,
                reason: "the derivative depends on Q, which mode R does not compute; use \
                         QrMode::Reduced to differentiate",
            });
        }
        let (m, n) = (self.m, self.n);
        if self.mode == QrMode::Complete && m > n {
            return Err(Error::NotDifferentiable {
                op: OP,
                reason: "QR is not differentiable in complete mode when rows > columns",
            });
        }
        let (gq, gr) = (g[0].as_ref(), g[1].as_ref());
        if gq.is_none() && gr.is_none() {
            return Ok(vec![None]);
        }
        let (q, r) = (cx.output(0)?, cx.output(1)?);
        if m >= n && !cx.create_graph() && same_dtype(&q, gq) && same_dtype(&q, gr) {
            // fast path (not recorded): the same formula fused per matrix
            let fused = q.storage().qr_backward(
                q.layout(),
                r.operand(),
                gq.map(Tensor::operand),
                gr.map(Tensor::operand),
            )?;
            if let Some((s, l)) = fused {
                return Ok(vec![Some(from_kernel(s, l))]);
            }
        }
        if m >= n {
            return Ok(vec![Some(qr_grad_tall(&q, &r, gq, gr)?)]);
        }
        let r1 = r.narrow(-1, 0, m)?;
        let gr1 = gr.map(|gr| gr.narrow(-1, 0, m)).transpose()?;
        let gr2 = gr.map(|gr| gr.narrow(-1, m, n - m)).transpose()?;
        let y = cx.input(0).narrow(-1, m, n - m)?;
        let gq = match (gq, &gr2) {
            (Some(gq), Some(gr2)) => Some(gq.add(&y.matmul(&gr2.mH()?)?)?),
            (None, Some(gr2)) => Some(y.matmul(&gr2.mH()?)?),
            (gq, None) => gq.cloned(),
        };
        let gx = qr_grad_tall(&q, &r1, gq.as_ref(), gr1.as_ref())?;
        let gy = if let Some(gr2) = &gr2 {
            q.matmul(gr2)?
        } else {
            let mut dims = y.dims().to_vec();
            dims.truncate(dims.len() - 2);
            dims.extend([m, n - m]);
            Tensor::zeros(dims, gx.dtype())?
        };
        Ok(vec![Some(Tensor::cat(&[&gx, &gy], -1)?)])
    }

    // Tall or square: C = Qᴴ dA R⁻¹, dR = Φ(C) R, dQ = dA R⁻¹ − Q Φ(C) (Φ as in the VJP
    // above: the part of C that is dR R⁻¹). Wide, A = [X | Y]: (dQ, dR₁) from dX by that
    // rule, and dR₂ = dQᴴ Y + Qᴴ dY. The modes the VJP refuses are refused alike.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None]) };
        let (m, n) = (self.m, self.n);
        if self.mode == QrMode::R || (self.mode == QrMode::Complete && m > n) {
            return Err(match self.mode {
                QrMode::R => Error::NotDifferentiable {
                    op: OP,
                    reason: "the derivative depends on Q, which mode R does not compute; use \
                             QrMode::Reduced to differentiate",
                },
                _ => Error::NotDifferentiable {
                    op: OP,
                    reason: "QR is not differentiable in complete mode when rows > columns",
                },
            });
        }
        let (q, r) = (cx.output(0), cx.output(1));
        let (dx, r1) = if m >= n {
            (da.clone(), r.clone())
        } else {
            (da.narrow(-1, 0, m)?, r.narrow(-1, 0, m)?)
        };
        let dar = solve_triangular(&r1, &dx, Uplo::Upper, Side::Right, Diag::NonUnit)?;
        let c = q.mH()?.matmul(&dar)?;
        let mut phi = c.triu(1)?.add(&c.tril(-1)?.mH()?)?;
        let d = c.diagonal(0, -2, -1)?;
        let d = if d.dtype().is_complex() { d.real()?.to_dtype(d.dtype())? } else { d };
        phi = phi.add(&d.diag_embed(0, -2, -1)?)?;
        let dq = dar.sub(&q.matmul(&phi)?)?;
        let dr1 = phi.matmul(&r1)?;
        if m >= n {
            return Ok(vec![Some(dq), Some(dr1)]);
        }
        let y = cx.input(0).narrow(-1, m, n - m)?;
        let dy = da.narrow(-1, m, n - m)?;
        let dr2 = dq.mH()?.matmul(&y)?.add(&q.mH()?.matmul(&dy)?)?;
        Ok(vec![Some(dq), Some(Tensor::cat(&[&dr1, &dr2], -1)?)])
    }
}

/// QR decomposition `A = Q R` (`torch.linalg.qr`; a primitive).
///
/// Math: `Q` has orthonormal columns (`QᵀQ = I`) and `R` is upper triangular (upper
/// trapezoidal when `m < n`). Computed by Householder reflections, LAPACK's algorithm
/// (`geqrf`, then `orgqr` for `Q`, with `dlarfg`'s reflectors: a scaled norm, and a tiny
/// column scaled up before it is reflected): own unblocked loops for small matrices, own
/// blocked ones above (recursive panels, block reflectors applied by matrix products),
/// whose updates of the trailing columns are split across threads by column ranges from
/// `min(m, n)` = 128. Every column is reflected, as LAPACK does, however small its
/// remaining norm (docs/accuracy.md has the test ratios, ours and LAPACK's).
///
/// Shapes, for `a: (*, m, n)` and `k = min(m, n)`:
/// - [`QrMode::Reduced`]: `q: (*, m, k)`, `r: (*, k, n)`;
/// - [`QrMode::Complete`]: `q: (*, m, m)`, `r: (*, m, n)`;
/// - [`QrMode::R`]: `q` empty of shape `(0,)`, `r: (*, k, n)`.
///
/// Sign gauge: QR is unique only up to the sign of each column of `Q` (and the matching row
/// of `R`). The signs here are deterministic (the same input gives the same bits) and are
/// LAPACK's, hence PyTorch's on CPU: the reflector of column `j` maps it to `β e_j` with
/// `β = −sign(a_jj) ‖a_j‖` (the entry `a_jj` after the previous reflections), so
/// `diag(R)` has the opposite sign to that pivot, and a column whose part below the
/// diagonal is already zero is left as it is (`H = I`). On exactly or numerically
/// rank-deficient matrices with more than 48 × 48 entries and both dims above 16, faer's
/// blocked kernel may pick another valid factorisation than LAPACK's. Batches of square
/// matrices up to 16 x 16 are factorised several at a time with fused multiply-adds: the
/// same factors to rounding, except that the columns of `Q` that a numerically
/// rank-deficient matrix leaves to rounding may differ from those of the matrix alone
/// (another valid factorisation).
///
/// Complex input (c64, c128): `QᴴQ = I`, with `zgeqrf`'s reflectors (`β = −sign(Re
/// a_jj) ‖a_j‖`), so `diag(R)` is real, as LAPACK's and PyTorch's; the gauge left is the
/// sign of each column, as for real input. Computed by own panels of reflectors and
/// block updates by faer's products (no small-matrix lanes).
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back
/// (PyTorch refuses them).
///
/// Gradient: defined when the leading `k x k` block of `R` is invertible (`A`, or its
/// first `m` columns when `m < n`, has full rank). Both outputs may be used, in any
/// combination. Differentiable to any order. Complete mode with `m > n` and mode `R` are
/// not differentiable: differentiating them fails with `NotDifferentiable`, as PyTorch
/// raises.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType` for integer or
/// boolean input.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{qr, QrMode};
/// let a = Tensor::from_vec(vec![3.0f64, 1.0, 4.0, 2.0], (2, 2))?;
/// let f = qr(&a, QrMode::Reduced)?;
/// // A = Q R, and diag(R) is negative here, as LAPACK's
/// let back = f.q.matmul(&f.r)?.to_vec::<f64>()?;
/// assert!(back.iter().zip([3.0, 1.0, 4.0, 2.0]).all(|(x, y)| (x - y).abs() < 1e-12));
/// assert!(f.r.to_vec::<f64>()?[0] < 0.0);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn qr(a: &Tensor, mode: QrMode) -> Result<Qr> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return qr(&c[0], mode);
    }
    check_matrix(OP, a)?;
    check_float_or_complex(OP, a)?;
    if a.dtype().is_half() {
        let f = qr(&a.to_dtype(DType::F32)?, mode)?;
        return Ok(Qr { q: f.q.to_dtype(a.dtype())?, r: f.r.to_dtype(a.dtype())? });
    }
    let spec = QrSpec { want_q: mode != QrMode::R, complete: mode == QrMode::Complete };
    let (qs, rs, rl) = a.storage().qr(a.layout(), spec)?;
    let r = from_kernel(rs, rl);
    let q = match qs {
        Some((s, l)) => from_kernel(s, l),
        None => Tensor::zeros(vec![0], a.dtype())?,
    };
    let d = a.dims();
    let op = QrOp { mode, m: d[d.len() - 2], n: d[d.len() - 1] };
    let mut out = record(op, &[a], vec![q, r], true)?.into_iter();
    match (out.next(), out.next()) {
        (Some(q), Some(r)) => Ok(Qr { q, r }),
        _ => Err(Error::Internal { op: OP, reason: "two outputs expected" }),
    }
}

/// The product of Householder reflectors (`torch.linalg.householder_product`, LAPACK's
/// `orgqr`; an implicit composite).
///
/// Math: the first `n` columns of `H₁ H₂ … H_k`, where `H_i = I − τ_i v_i v_iᴴ` (`ᴴ` the
/// conjugate transpose; `ᵀ` for real input) and `v_i`
/// is column `i` of `v` below the diagonal, with a 1 on the diagonal (the entries on and
/// above the diagonal are not read). With `v` and `tau` from a Householder QR (LAPACK's
/// `geqrf`), this is its `Q`.
///
/// Shapes: `v: (*, m, n)` with `m >= n`, `tau: (*, k)` with `k <= n` and the same batch
/// dims (no broadcasting, as PyTorch) → `(*, m, n)`.
///
/// Computed in tensor ops through the compact WY form `H₁ … H_k = I − V T Vᴴ`, where `V`
/// is the unit lower trapezoidal matrix of the `v_i` and `T = (I + diag(τ) striu(VᴴV))⁻¹
/// diag(τ)` (a unit triangular solve; Schreiber & Van Loan 1989), so its gradient comes
/// from autograd and is differentiable to any order. The gradient of `v` is zero on and
/// above the diagonal and in columns `k..n` (the entries not read), as PyTorch's.
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32. `v` and `tau` must have
/// one dtype.
///
/// Errors: `BadShape` if `v` has fewer than 2 dims or `m < n`; `ShapeMismatch` if `tau`
/// does not have one dim less than `v`, has other batch dims, or `k > n`;
/// `DTypeMismatch` if the dtypes differ; `UnsupportedDType` for non-float input.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::householder_product;
/// // one reflector H = I − 2 e₁ e₁ᵀ (v₁ = e₁, τ = 2) flips the sign of the first column
/// let v = Tensor::zeros((2, 2), cotangent::DType::F64)?;
/// let tau = Tensor::from_vec(vec![2.0f64], 1)?;
/// let q = householder_product(&v, &tau)?;
/// assert_eq!(q.to_vec::<f64>()?, vec![-1.0, 0.0, 0.0, 1.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn householder_product(v: &Tensor, tau: &Tensor) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[v, tau])? {
        return householder_product(&c[0], &c[1]);
    }
    if v.rank() < 2 {
        return Err(Error::BadShape {
            op: HP,
            expected: "input of at least 2 dims (*, m, n)",
            got: v.shape().clone(),
        });
    }
    let (m, n) = (v.dims()[v.rank() - 2], v.dims()[v.rank() - 1]);
    if m < n {
        return Err(Error::BadShape {
            op: HP,
            expected: "input (*, m, n) with m >= n",
            got: v.shape().clone(),
        });
    }
    let mismatch =
        || Error::ShapeMismatch { op: HP, lhs: v.shape().clone(), rhs: tau.shape().clone() };
    if tau.rank() + 1 != v.rank() || batch_of(tau, 1) != batch_of(v, 2) {
        return Err(mismatch());
    }
    let k = tau.dims()[tau.rank() - 1];
    if k > n {
        return Err(mismatch());
    }
    check_float_or_complex(HP, v)?;
    check_float_or_complex(HP, tau)?;
    if v.dtype() != tau.dtype() {
        return Err(Error::DTypeMismatch { op: HP, lhs: v.dtype(), rhs: tau.dtype() });
    }
    if v.dtype().is_half() {
        let q = householder_product(&v.to_dtype(DType::F32)?, &tau.to_dtype(DType::F32)?)?;
        return q.to_dtype(v.dtype());
    }
    let dt = v.dtype();
    let eye_m = Tensor::eye(m, dt)?;
    // V: the unit lower trapezoidal (m x k) basis
    let vk = v.narrow(-1, 0, k)?.tril(-1)?.add(&eye_m.narrow(-1, 0, k)?)?;
    // T = (I + D S)⁻¹ D, S = striu(VᵀV), D = diag(τ): D S is strictly upper triangular, so
    // the unit-diagonal solve reads exactly I + D S
    let s = vk.mH()?.matmul(&vk)?.triu(1)?;
    let ds = tau.unsqueeze(-1)?.mul(&s)?;
    let t =
        solve_triangular(&ds, &tau.diag_embed(0, -2, -1)?, Uplo::Upper, Side::Left, Diag::Unit)?;
    // Q = (I − V T Vᵀ) E with E the first n columns of I: E − V T (V[:n])ᵀ
    let v1 = vk.narrow(-2, 0, n)?;
    let q = eye_m.narrow(-1, 0, n)?.sub(&vk.matmul(&t.matmul(&v1.mH()?)?)?)?;
    Ok(q)
}
