//! `linalg.svd` (a primitive with a hand-written VJP) and `linalg.svdvals` (its singular
//! values; the VJP `U diag(gS) Vᵀ` needs no gap).

use super::spectral_jvp::{gap_quotient, gauge_rotation};
use super::util::{check_float_or_complex, check_matrix, from_kernel};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, should_record, Op, VjpCtx};
use crate::backend::SvdGradFail;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "linalg.svd";
const OP_VALS: &str = "linalg.svdvals";
/// Largest `max(m, n)` of the fused backward (naive per-matrix products; faer's beyond).
const FUSED_MAX: usize = 32;

/// The factors of [`svd()`]: `A = U diag(S) Vh` (PyTorch's named tuple `(U, S, Vh)`).
#[derive(Debug, Clone)]
pub struct Svd {
    /// The left singular vectors, as columns: `(*, m, k)`, or `(*, m, m)` with
    /// `full_matrices`.
    pub u: Tensor,
    /// The singular values, `(*, k)`, non-negative and in descending order.
    pub s: Tensor,
    /// The right singular vectors, as rows (`Vᵀ`): `(*, k, n)`, or `(*, n, n)` with
    /// `full_matrices`.
    pub vh: Tensor,
}

/// The options of [`svd`] (`torch.linalg.svd`'s keyword arguments).
///
/// `Default` is PyTorch's default, full matrices; `From<bool>` reads a `bool` as
/// `full_matrices`, so `svd(&a, false)` is the reduced SVD.
///
/// ```
/// # use cotangent::{DType, Tensor};
/// use cotangent::linalg::{svd, SvdOptions};
/// let a = Tensor::ones((3, 2), DType::F64)?;
/// assert_eq!(svd(&a, SvdOptions::default())?.u.dims(), &[3, 3]);
/// assert_eq!(svd(&a, SvdOptions { full_matrices: false })?.u.dims(), &[3, 2]);
/// assert_eq!(svd(&a, false)?.u.dims(), &[3, 2]);
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SvdOptions {
    /// `U: (*, m, m)` and `Vh: (*, n, n)` (with an orthonormal completion) when `true`;
    /// `U: (*, m, k)` and `Vh: (*, k, n)` when `false`. PyTorch's default is `true`.
    pub full_matrices: bool,
}

impl Default for SvdOptions {
    fn default() -> SvdOptions {
        SvdOptions { full_matrices: true }
    }
}

impl From<bool> for SvdOptions {
    fn from(full_matrices: bool) -> SvdOptions {
        SvdOptions { full_matrices }
    }
}

#[derive(Debug)]
struct SvdOp {
    full: bool,
    m: usize,
    n: usize,
}

/// Machine epsilon of the dtype a gradient is computed in.
fn eps_of(dt: DType) -> f64 {
    if dt == DType::F64 {
        f64::EPSILON
    } else {
        f64::from(f32::EPSILON)
    }
}

/// The largest magnitude of each `(r, c)` matrix of a batch (flattened values).
fn max_abs_per(v: &[f64], size: usize, batch: usize) -> Vec<f64> {
    if size == 0 {
        return vec![0.0; batch];
    }
    v.chunks_exact(size).map(|c| c.iter().fold(0.0f64, |a, x| a.max(x.abs()))).collect()
}

const NOT_DIFF_GAP: &str = "the singular vectors' cotangents depend on the basis chosen \
    within a repeated singular value's subspace (a zero gap s_i² − s_j²), where U and V are \
    not unique: the gradient is undefined there. Use a loss invariant to rotations within \
    that subspace (for example through U diag(S) Vh, U Uᵀ, or S only)";
const NOT_DIFF_PHASE: &str = "each singular pair (u_j, v_j) of a complex matrix is defined \
    up to a common unit phase, and the loss depends on that phase, so its gradient is \
    undefined; use a loss invariant to the phases (e.g. of U diag(S) Vh, of |U_ij|², or of S)";
const NOT_DIFF_ZERO: &str = "the cotangent of U (or V) has a component outside the span \
    of the singular vectors that divides by a zero singular value: the gradient is \
    undefined at this rank-deficient matrix";

/// The gradient of a tall or square reduced SVD `A = U diag(S) Vᵀ` (`u: (*, m, k)`,
/// `v: (*, n, k)`, `m >= n = k`) in tensor ops, with masks for degenerate gaps computed
/// from the values. See [`SvdOp::vjp`].
fn svd_grad_tall(
    u: &Tensor,
    s: &Tensor,
    v: &Tensor,
    gu: Option<&Tensor>,
    gs: Option<&Tensor>,
    gv: Option<&Tensor>,
) -> Result<Tensor> {
    let dt = s.dtype();
    let eps = eps_of(dt);
    let (mm, k) = (u.dims()[u.rank() - 2], s.dims()[s.rank() - 1]);
    let batch: Vec<usize> = s.dims()[..s.rank() - 1].to_vec();
    let nb: usize = batch.iter().product();
    // X - Xᴴ of Uᴴ gU and Vᴴ gV (k x k)
    let utgu = gu.map(|gu| u.mH()?.matmul(gu)).transpose()?;
    let vtgv = gv.map(|gv| v.mH()?.matmul(gv)).transpose()?;
    let sku = utgu.as_ref().map(|x| x.sub(&x.mH()?)).transpose()?;
    let skv = vtgv.as_ref().map(|x| x.sub(&x.mH()?)).transpose()?;
    let complex = u.dtype().is_complex();
    if complex {
        check_phase_invariant(utgu.as_ref(), vtgv.as_ref())?;
    }
    let s_row = s.unsqueeze(-2)?; // s_j along columns
    let s_col = s.unsqueeze(-1)?; // s_i along rows
                                  // N_ij = skU_ij s_j + s_i skV_ij; D = skU − skV
    let num = match (&sku, &skv) {
        (Some(a), Some(b)) => a.mul(&s_row)?.add(&s_col.mul(b)?)?,
        (Some(a), None) => a.mul(&s_row)?,
        (None, Some(b)) => s_col.mul(b)?,
        (None, None) => return Err(Error::Internal { op: OP, reason: "no vector cotangent" }),
    };
    let dif = match (&sku, &skv) {
        (Some(a), Some(b)) => a.sub(b)?,
        (Some(a), None) => a.clone(),
        (None, Some(b)) => b.neg()?,
        (None, None) => unreachable!("checked above"),
    };
    // host-side classification of the pairs (i, j), on moduli (complex input too)
    let sv = s.to_vec_f64();
    let kk = k * k;
    let moduli = |x: &Tensor| -> Result<Vec<f64>> { Ok(x.detach().abs()?.to_vec_f64()) };
    let sku_v = sku.as_ref().map(moduli).transpose()?;
    let skv_v = skv.as_ref().map(moduli).transpose()?;
    let sum_v = match (&sku, &skv) {
        (Some(a), Some(b)) => Some(moduli(&a.add(b)?)?),
        _ => None,
    };
    let gs_v = gs.map(Tensor::to_vec_f64);
    let scale_u =
        utgu.as_ref().map(|x| Ok::<_, Error>(max_abs_per(&moduli(x)?, kk, nb))).transpose()?;
    let scale_v =
        vtgv.as_ref().map(|x| Ok::<_, Error>(max_abs_per(&moduli(x)?, kk, nb))).transpose()?;
    let scale_s = gs_v.as_ref().map(|x| max_abs_per(x, k, nb));
    let mut nondeg = vec![0.0f64; nb * kk]; // off-diagonal pairs with a gap
    let mut deg = vec![0.0f64; nb * kk]; // degenerate pairs with s > 0
    let mut zero_col = vec![0.0f64; nb * k]; // 1 where s_j is numerically zero
    let tiny = f64::MIN_POSITIVE;
    for b in 0..nb {
        let s = &sv[b * k..(b + 1) * k];
        let smax = s.first().copied().unwrap_or(0.0);
        let gap_tol = 16.0 * (k as f64) * eps * smax * smax;
        let zero_tol = (k as f64) * eps * smax;
        let sc = scale_u.as_ref().map_or(0.0, |x| x[b]) + scale_v.as_ref().map_or(0.0, |x| x[b]);
        let thr = eps.sqrt() * sc.max(tiny);
        let thr_s = eps.sqrt() * scale_s.as_ref().map_or(0.0, |x| x[b]).max(tiny);
        let at = |x: &Option<Vec<f64>>, i: usize, j: usize| {
            x.as_ref().map_or(0.0, |x| x[b * kk + i * k + j])
        };
        for i in 0..k {
            if s[i] <= zero_tol {
                zero_col[b * k + i] = 1.0;
            }
            for j in 0..k {
                if i == j {
                    continue;
                }
                let idx = b * kk + i * k + j;
                if (s[j] * s[j] - s[i] * s[i]).abs() > gap_tol {
                    nondeg[idx] = 1.0;
                    continue;
                }
                let (a, c) = (at(&sku_v, i, j), at(&skv_v, i, j));
                if s[i] <= zero_tol && s[j] <= zero_tol {
                    // U and V rotate independently within a zero block
                    if a > thr || c > thr {
                        return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_GAP });
                    }
                    continue;
                }
                // |skU_ij + skV_ij| (one of them alone when the other has no cotangent)
                let sum = if sum_v.is_some() { at(&sum_v, i, j) } else { a + c };
                let dgs = gs_v.as_ref().map_or(0.0, |g| g[b * k + i] - g[b * k + j]);
                if sum > thr || dgs.abs() > thr_s {
                    return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_GAP });
                }
                deg[idx] = 1.0;
            }
        }
    }
    let mut mdims = batch.clone();
    mdims.extend([k, k]);
    let mask = |v: Vec<f64>, dims: Vec<usize>| -> Result<Tensor> {
        Tensor::from_vec(v, dims)?.to_dtype(dt)
    };
    let nondeg_t = mask(nondeg.clone(), mdims.clone())?;
    let deg_t = mask(deg.clone(), mdims.clone())?;
    let off: Vec<f64> = nondeg.iter().map(|x| 1.0 - x).collect();
    let off_t = mask(off, mdims.clone())?;
    let not_deg: Vec<f64> = deg.iter().map(|x| 1.0 - x).collect();
    let not_deg_t = mask(not_deg, mdims)?;
    // E_ij = s_j² − s_i² (1 where masked, to keep the division finite)
    let s2 = s.mul(s)?;
    let e = s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?.add(&off_t)?;
    let mut inner = num.div(&e)?.mul(&nondeg_t)?;
    if deg.iter().any(|&x| x != 0.0) {
        // degenerate pair with s > 0: the rotation part only, (skU − skV) / (2 (s_i + s_j))
        let den = s_row.add(&s_col)?.mul_scalar(2.0)?.add(&not_deg_t)?;
        inner = inner.add(&dif.div(&den)?.mul(&deg_t)?)?;
    }
    if let Some(gs) = gs {
        inner = inner.add(&gs.diag_embed(0, -2, -1)?)?;
    }
    if complex {
        // the phases: i Im(diag(skU) − diag(skV)) / (4 s) on the diagonal (where s > 0)
        let im = |x: &Option<Tensor>| -> Result<Option<Tensor>> {
            x.as_ref().map(|x| x.diagonal(0, -2, -1)?.imag()).transpose()
        };
        let d = match (im(&sku)?, im(&skv)?) {
            (Some(a), Some(b)) => a.sub(&b)?,
            (Some(a), None) => a,
            (None, Some(b)) => b.neg()?,
            (None, None) => unreachable!("checked above"),
        };
        let mut zdims = batch.clone();
        zdims.push(k);
        let z = mask(zero_col.clone(), zdims.clone())?;
        let nz = mask(zero_col.iter().map(|x| 1.0 - x).collect(), zdims)?;
        let quarter = d.mul(&nz)?.div(&s.add(&z)?.mul_scalar(4.0)?)?;
        let phase = Tensor::complex(&quarter.zeros_like()?, &quarter)?;
        inner = inner.add(&phase.diag_embed(0, -2, -1)?)?;
    }
    let mut ga = u.matmul(&inner)?;
    if let (Some(gu), true) = (gu, mm > k) {
        // (I − U Uᴴ) gU S⁻¹, zero columns where s_j is 0 and the projection is negligible
        let proj = gu.sub(&u.matmul(&u.mH()?.matmul(gu)?)?)?;
        if zero_col.iter().any(|&x| x != 0.0) {
            let pv = moduli(&proj)?;
            let gmax = max_abs_per(&moduli(gu)?, mm * k, nb);
            for b in 0..nb {
                let thr = eps.sqrt() * gmax[b].max(tiny);
                for j in 0..k {
                    if zero_col[b * k + j] == 0.0 {
                        continue;
                    }
                    let big = (0..mm).any(|r| pv[b * mm * k + r * k + j] > thr);
                    if big {
                        return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_ZERO });
                    }
                }
            }
        }
        let mut zdims = batch.clone();
        zdims.push(k);
        let z = mask(zero_col.clone(), zdims.clone())?;
        let nz = mask(zero_col.iter().map(|x| 1.0 - x).collect(), zdims)?;
        let sinv = recip(&s.add(&z)?)?.mul(&nz)?;
        ga = ga.add(&proj.mul(&sinv.unsqueeze(-2)?)?)?;
    }
    ga.matmul(&v.mH()?)
}

/// `Err(NotDifferentiable)` unless the loss behind the cotangents is invariant to the
/// common phase of each singular pair, `(u_j, v_j) → (u_j, v_j) e^{iφ}`: that moves the
/// loss by `Σ_j φ_j Im((UᴴgU)_jj + (VᴴgV)_jj)`, which must vanish to `√ε` times the
/// largest modulus in `UᴴgU` and `VᴴgV` of its matrix (PyTorch checks the same, with an
/// absolute tolerance). A read to the host, as the answer is an error.
fn check_phase_invariant(utgu: Option<&Tensor>, vtgv: Option<&Tensor>) -> Result<()> {
    let diag = |x: &Tensor| -> Result<Vec<f64>> {
        Ok(x.detach().diagonal(0, -2, -1)?.imag()?.to_vec_f64())
    };
    let (du, dv) = (utgu.map(diag).transpose()?, vtgv.map(diag).transpose()?);
    let Some(first) = utgu.or(vtgv) else { return Ok(()) };
    let k = first.dims()[first.rank() - 1];
    let eps = if first.dtype() == DType::C128 { f64::EPSILON } else { f64::from(f32::EPSILON) };
    let nb = first.numel() / (k * k).max(1);
    let scale = |x: Option<&Tensor>| -> Result<Vec<f64>> {
        match x {
            Some(x) => Ok(max_abs_per(&x.detach().abs()?.to_vec_f64(), k * k, nb)),
            None => Ok(vec![0.0; nb]),
        }
    };
    let (su, sv) = (scale(utgu)?, scale(vtgv)?);
    for b in 0..nb {
        let tol = eps.sqrt() * (su[b] + sv[b]);
        for j in 0..k {
            let at = |d: &Option<Vec<f64>>| d.as_ref().map_or(0.0, |d| d[b * k + j]);
            if (at(&du) + at(&dv)).abs() > tol {
                return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_PHASE });
            }
        }
    }
    Ok(())
}

/// `1 / x` for a tensor with no zero entries, as a differentiable composite.
fn recip(x: &Tensor) -> Result<Tensor> {
    Tensor::ones_like(x)?.div(x)
}

impl Op for SvdOp {
    fn name(&self) -> &'static str {
        OP
    }

    // Tall or square A = U S Vᵀ (m >= n = k), reduced. Differentiating,
    //   C = Uᵀ dA V = Ω_U S + dS − S Ω_V (Ω = Uᵀ dU, Vᵀ dV skew),
    // so dS = diag(C) and, for s_i ≠ s_j, (Ω_U)_ij, (Ω_V)_ij solve a 2 x 2 system with
    // determinant s_j² − s_i²; dU also has (I − U Uᵀ) dA V S⁻¹. Transposing,
    //   gA = U [ (skU S + S skV) / E + diag(gS) ] Vᵀ + (I − U Uᵀ) gU S⁻¹ Vᵀ,
    // with skU = UᵀgU − gUᵀU, skV = VᵀgV − gVᵀV, E_ij = s_j² − s_i² (off the diagonal).
    // Wide A: the same for Aᵀ = V S Uᵀ, transposed. Only gS: gA = U diag(gS) Vᵀ (no gap).
    // Full matrices: the completion columns get no cotangent (PyTorch narrows them).
    // (PyTorch svd_backward, FunctionsManual.cpp; Townsend 2016, "Differentiating the
    // singular value decomposition".)
    // Degenerate pairs (a numerically zero gap): a loss invariant to a common rotation of
    // the pair's U and V columns has skU_ij + skV_ij = 0, and C's skew part fixes the
    // relative rotation Ω_U − Ω_V = (C − Cᵀ) / (2s), so the pair contributes
    // (skU − skV)_ij / (4s); this assumes the loss treats the repeated values alike
    // (gS_i = gS_j). Otherwise the gradient depends on the basis: NotDifferentiable.
    // Tensor ops only (masks are constants): differentiable again. When the backward is
    // not recorded (no create_graph) and max(m, n) <= FUSED_MAX, the same formula, the
    // same classification of pairs and the same errors run fused per matrix in the
    // backend (`svd_backward`), for every combination of cotangents.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (gu, gs, gvh) = (g[0].as_ref(), g[1].as_ref(), g[2].as_ref());
        if gu.is_none() && gs.is_none() && gvh.is_none() {
            return Ok(vec![None]);
        }
        let (m, n) = (self.m, self.n);
        let k = m.min(n);
        let (mut u, s, mut vh) = (cx.output(0)?, cx.output(1)?, cx.output(2)?);
        let (mut gu, mut gvh) = (gu.cloned(), gvh.cloned());
        if self.full {
            u = u.narrow(-1, 0, k)?;
            vh = vh.narrow(-2, 0, k)?;
            gu = gu.map(|g| g.narrow(-1, 0, k)).transpose()?;
            gvh = gvh.map(|g| g.narrow(-2, 0, k)).transpose()?;
        }
        if k == 0 {
            let mut dims = s.dims()[..s.rank() - 1].to_vec();
            dims.extend([m, n]);
            return Ok(vec![Some(Tensor::zeros(dims, s.dtype())?)]);
        }
        let same = |g: Option<&Tensor>, t: &Tensor| g.is_none_or(|g| g.dtype() == t.dtype());
        if m.max(n) <= FUSED_MAX
            && !cx.create_graph()
            && same(gu.as_ref(), &u)
            && same(gs, &s)
            && same(gvh.as_ref(), &u)
        {
            // fast path (not recorded): the same formula fused per matrix
            let s = s.contiguous()?;
            let gs = gs.map(Tensor::contiguous).transpose()?;
            let r = u.storage().svd_backward(
                u.layout(),
                s.storage(),
                vh.operand(),
                gu.as_ref().map(Tensor::operand),
                gs.as_ref().map(|g| &**g.storage()),
                gvh.as_ref().map(Tensor::operand),
            )?;
            match r {
                Some(Ok((g, gl))) => return Ok(vec![Some(from_kernel(g, gl))]),
                Some(Err(SvdGradFail::Phase)) => {
                    return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_PHASE })
                }
                Some(Err(SvdGradFail::Gap)) => {
                    return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_GAP })
                }
                Some(Err(SvdGradFail::Zero)) => {
                    return Err(Error::NotDifferentiable { op: OP, reason: NOT_DIFF_ZERO })
                }
                None => {}
            }
        }
        if gu.is_none() && gvh.is_none() {
            let gs = gs.ok_or(Error::Internal { op: OP, reason: "no cotangent" })?;
            return Ok(vec![Some(svdvals_grad(&u, gs, &vh)?)]);
        }
        let gv = gvh.map(|g| g.mH()).transpose()?;
        let ga = if m >= n {
            svd_grad_tall(&u, &s, &vh.mH()?, gu.as_ref(), gs, gv.as_ref())?
        } else {
            svd_grad_tall(&vh.mH()?, &s, &u, gv.as_ref(), gs, gu.as_ref())?.mH()?
        };
        Ok(vec![Some(ga)])
    }

    // With P = Uᴴ dA V (k x k, reduced factors, k = min(m, n)):
    //   dS = Re diag(P),
    //   Uᴴ dU = Ω_U = (P S + S Pᴴ) / E,  Vᴴ dV = Ω_V = (S P + Pᴴ S) / E off the diagonal
    //   (E_ij = s_j² − s_i²),
    //   dU += (I − U Uᴴ) dA V S⁻¹ (m > k),  dV += (I − V Vᴴ) dAᴴ U S⁻¹ (n > k),
    // PyTorch's linalg_svd_jvp. Complex: diag(Ω_U) = iθ keeps the forward's gauge (U's
    // component of largest modulus real), and diag(Ω_V) = iθ − i Im(diag P) / S (the
    // pair's relative phase is fixed by A; PyTorch splits it evenly instead). Full
    // matrices: the completion's tangent is zero, as PyTorch's. At a repeated singular
    // value see `gap_quotient`.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None, None]) };
        let (m, n) = (self.m, self.n);
        let k = m.min(n);
        let (mut u, s, mut vh) = (cx.output(0).clone(), cx.output(1).clone(), cx.output(2).clone());
        if self.full {
            u = u.narrow(-1, 0, k)?;
            vh = vh.narrow(-2, 0, k)?;
        }
        if k == 0 {
            let z = |x: &Tensor| x.zeros_like();
            return Ok(vec![Some(z(cx.output(0))?), Some(z(&s)?), Some(z(cx.output(2))?)]);
        }
        let v = vh.mH()?;
        let dt = u.dtype();
        let sc = s.to_dtype(dt)?;
        let p = u.mH()?.matmul(&da.matmul(&v)?)?;
        let pd = p.diagonal(0, -2, -1)?;
        let ds = if pd.dtype().is_complex() { pd.real()? } else { pd.clone() };
        let (row, col) = (sc.unsqueeze(-2)?, sc.unsqueeze(-1)?); // s_j, s_i
        let ph = p.mH()?;
        let s2 = s.mul(&s)?;
        let e = s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?;
        let eps = eps_of(s.dtype());
        let tol: Vec<f64> = s
            .detach()
            .to_vec_f64()
            .chunks_exact(k)
            .map(|sb| 16.0 * k as f64 * eps * sb[0] * sb[0])
            .collect();
        let omega_u = gap_quotient(&p.mul(&row)?.add(&col.mul(&ph)?)?, &e, &tol, eps)?;
        let omega_v = gap_quotient(&col.mul(&p)?.add(&ph.mul(&row)?)?, &e, &tol, eps)?;
        let mut du = u.matmul(&omega_u)?;
        let mut dv = v.matmul(&omega_v)?;
        if m > k {
            let x = da.matmul(&v.div(&row)?)?;
            du = du.add(&x.sub(&u.matmul(&u.mH()?.matmul(&x)?)?)?)?;
        }
        if n > k {
            let x = da.mH()?.matmul(&u.div(&row)?)?;
            dv = dv.add(&x.sub(&v.matmul(&v.mH()?.matmul(&x)?)?)?)?;
        }
        if let Some(itheta) = gauge_rotation(&u, &du)? {
            // V's diagonal: iθ − i Im(P_jj) / s_j
            let rel = pd.imag()?.div(&s)?.unsqueeze(-2)?;
            let irel = Tensor::complex(&rel.zeros_like()?, &rel)?;
            du = du.add(&u.mul(&itheta)?)?;
            dv = dv.add(&v.mul(&itheta.sub(&irel)?)?)?;
        }
        let mut dvh = dv.mH()?;
        if self.full {
            let pad = |x: &Tensor, dim: isize, len: usize| -> Result<Tensor> {
                let mut dims = x.dims().to_vec();
                let d = (dims.len() as isize + dim) as usize;
                dims[d] = len;
                Tensor::cat(&[x, &Tensor::zeros(dims, x.dtype())?], dim)
            };
            du = pad(&du, -1, m - k)?;
            dvh = pad(&dvh, -2, n - k)?;
        }
        Ok(vec![Some(du), Some(ds), Some(dvh)])
    }
}

/// `U diag(gS) Vh` for reduced factors.
fn svdvals_grad(u: &Tensor, gs: &Tensor, vh: &Tensor) -> Result<Tensor> {
    let (m, n) = (u.dims()[u.rank() - 2], vh.dims()[vh.rank() - 1]);
    if m >= n {
        u.matmul(&gs.unsqueeze(-1)?.mul(vh)?)
    } else {
        u.mul(&gs.unsqueeze(-2)?)?.matmul(vh)
    }
}

/// Singular value decomposition `A = U diag(S) Vh` (`torch.linalg.svd`; a primitive).
///
/// Math: for `a: (*, m, n)` and `k = min(m, n)`, `U` and `V = Vhᵀ` have orthonormal
/// columns and `S` holds the singular values, non-negative and in descending order.
/// Computed per matrix, batched over the leading dims with rayon: up to 8 x 8 by an
/// allocation-free one-sided Jacobi loop (rotations of the columns until they are
/// orthogonal to working precision), and so up to 16 x 16 in batches of 8 matrices or more
/// (8 matrices at a time, one per SIMD lane; up to 8 x 8 each gets the bits it would get
/// alone from the Jacobi loop); above, and for the matrices the Jacobi loop gives back (a
/// zero singular value with vectors asked, a `full_matrices` completion), by the stages
/// of LAPACK's `gesdd`: our own blocked Householder bidiagonalisation, our divide and
/// conquer SVD of the bidiagonal (Gu and Eisenstat's scheme, LAPACK's `dbdsdc`), then the
/// reflectors applied to its vectors (a matrix with `max(m, n) > 11/6 min(m, n)` is first
/// reduced by our Householder QR of the taller of `A` and `Aᵀ`, and these stages decompose
/// its `R`); a matrix with `min(m, n) = 1` by its scaled norm. In
/// f64 batches whose `min(m, n)` is 9 to 16, the Jacobi lanes start with five sweeps in
/// f32 and go on in f64 from the rotation they found (made orthonormal in f64), about a
/// third less work than all in f64 (3 f64 sweeps instead of 8 on random matrices). The
/// results are as accurate as LAPACK's `gesdd` (docs/accuracy.md: LAPACK's test ratios on
/// hard matrices, ours and LAPACK's): orthonormal factors to working precision and singular values to about
/// `ε σ_max` (`ε` the dtype's machine epsilon), so a singular value far below `σ_max`
/// has a relative error up to `ε σ_max / σ` (all-f64 one-sided Jacobi can do better on
/// matrices whose columns are badly scaled; this is not promised). A matrix of 9 to 16
/// rows or columns decomposed alone (by the bidiagonal stages) and in a batch (by Jacobi)
/// may differ in
/// the last bits; a given batch always gives the same bits, whatever the number of
/// threads, and on the Jacobi paths `svdvals` gives the same bits as `svd` (elsewhere
/// `svdvals` without gradient takes a values-only path and may differ in the last bits).
///
/// `options`: a [`SvdOptions`], or a `bool` for its `full_matrices`.
/// `full_matrices` (PyTorch's default is `true`): `u: (*, m, m)`, `vh: (*, n, n)`, where
/// the columns of `U` (rows of `Vh`) beyond `k` are an orthonormal completion; `false`:
/// `u: (*, m, k)`, `vh: (*, k, n)`. Always `s: (*, k)`. Empty matrices give empty
/// factors, and with `full_matrices` identities for the non-empty side (as PyTorch).
///
/// Sign gauge: each singular pair is unique only up to a sign (and a rotation within
/// repeated singular values). Here, deterministically, the entry of largest magnitude of
/// each column of `U` is positive (the first such entry, from the top, on ties), and the
/// matching row of `Vh` is flipped with it; the completion columns of `full_matrices`
/// follow the same rule, each on its own. PyTorch (LAPACK `gesdd`) picks other signs.
///
/// Complex input (c64, c128): `A = U diag(S) Vh` with unitary factors and real `S`
/// (`f32`, `f64`); each pair `(u_j, v_j)` is defined up to a common unit phase, and here
/// the entry of largest modulus of each column of `U` is real and positive. Computed by
/// faer's bidiagonalisation, the bidiagonal's phases scaled out, and the real kernel's
/// bidiagonal divide and conquer (no Jacobi or lane kernels for complex yet).
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back.
///
/// Gradient: `U`, `S` and `Vh` may be used in any combination; differentiable to any
/// order at matrices with distinct non-zero singular values. A loss through `S` only
/// gets `U diag(gS) Vh`, finite at repeated singular values (as [`svdvals`]). When two
/// singular values coincide (a zero gap `s_i² − s_j²`), the gradient of a loss through
/// `U` or `Vh` is defined only if the loss is invariant to rotating the pair's columns of
/// `U` and `V` together and treats the two values alike; then it is computed from the
/// limit (for example `U diag(f(S)) Vh` or `U Uᵀ` losses); otherwise backward fails with
/// `NotDifferentiable` (PyTorch returns inf or NaN there). Likewise a tall (wide) `A`
/// with a zero singular value and a cotangent of `U` (`V`) outside the singular vectors'
/// span fails with `NotDifferentiable`. The completion columns of `full_matrices` get no
/// gradient (as PyTorch). Complex input: the same with `ᴴ` for `ᵀ`, plus the phases'
/// diagonal term `i Im(diag(UᴴgU) − diag(VᴴgV)) / (2S)`; a loss that depends on the
/// pairs' phases (some `Im((UᴴgU)_jj + (VᴴgV)_jj)` beyond `√ε` times the largest
/// modulus in them) fails with `NotDifferentiable`, as PyTorch raises.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType` for integer or
/// boolean input; `NoConvergence` if a matrix has a NaN or infinite entry (PyTorch raises
/// "the input matrix contained non-finite values" for NaN).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::svd;
/// let a = Tensor::from_vec(vec![3.0f64, 0.0, 0.0, -4.0], (2, 2))?;
/// let f = svd(&a, false)?;
/// assert_eq!(f.s.to_vec::<f64>()?, vec![4.0, 3.0]);
/// // the largest entry of each column of U is positive
/// assert_eq!(f.u.to_vec::<f64>()?, vec![0.0, 1.0, 1.0, 0.0]);
/// assert_eq!(f.vh.to_vec::<f64>()?, vec![0.0, -1.0, 1.0, 0.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn svd(a: &Tensor, options: impl Into<SvdOptions>) -> Result<Svd> {
    let full_matrices = options.into().full_matrices;
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return svd(&c[0], full_matrices);
    }
    check_matrix(OP, a)?;
    check_float_or_complex(OP, a)?;
    if a.dtype().is_half() {
        let f = svd(&a.to_dtype(DType::F32)?, full_matrices)?;
        let dt = a.dtype();
        return Ok(Svd { u: f.u.to_dtype(dt)?, s: f.s.to_dtype(dt)?, vh: f.vh.to_dtype(dt)? });
    }
    let (u, (s, sl), vh) = a.storage().svd(a.layout(), true, full_matrices)?;
    let (Some((u, ul)), Some((vh, vl))) = (u, vh) else {
        return Err(Error::Internal { op: OP, reason: "singular vectors expected" });
    };
    let (u, s, vh) = (from_kernel(u, ul), from_kernel(s, sl), from_kernel(vh, vl));
    let d = a.dims();
    let op = SvdOp { full: full_matrices, m: d[d.len() - 2], n: d[d.len() - 1] };
    let mut out = record(op, &[a], vec![u, s, vh], true)?.into_iter();
    match (out.next(), out.next(), out.next()) {
        (Some(u), Some(s), Some(vh)) => Ok(Svd { u, s, vh }),
        _ => Err(Error::Internal { op: OP, reason: "three outputs expected" }),
    }
}

/// The singular values of matrices (`torch.linalg.svdvals`).
///
/// Math: `S` of [`svd()`], `(*, k)` for `a: (*, m, n)`, `k = min(m, n)`, non-negative and
/// in descending order. Without gradient recording only the values are computed (no
/// singular vectors); when `a` requires grad it is `svd(a, false).s`.
///
/// Dtypes: f32, f64, c64, c128 (real singular values); bf16 and f16 are computed in
/// f32 and rounded back.
///
/// Gradient: `gA = U diag(gS) Vh`, with no division by gaps: finite and correct at
/// repeated singular values (a subgradient where the loss is not differentiable, such as
/// the largest of two equal values). Differentiable again at distinct singular values.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType` for non-float
/// input; `NoConvergence` for a NaN or infinite entry (PyTorch raises for NaN and returns
/// NaN for infinite entries).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::svdvals;
/// let a = Tensor::from_vec(vec![0.0f64, 2.0, 1.0, 0.0, 0.0, 0.0], (3, 2))?;
/// assert_eq!(svdvals(&a)?.to_vec::<f64>()?, vec![2.0, 1.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return svdvals(&c[0]);
    }
    check_matrix(OP_VALS, a)?;
    check_float_or_complex(OP_VALS, a)?;
    if should_record(&[a]) {
        return Ok(svd(a, false)?.s);
    }
    if a.dtype().is_half() {
        return svdvals(&a.to_dtype(DType::F32)?)?.to_dtype(a.dtype());
    }
    let (_, (s, sl), _) = a.storage().svd(a.layout(), false, false)?;
    Ok(from_kernel(s, sl))
}
