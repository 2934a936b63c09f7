//! What the forward-mode rules of the spectral decompositions (eigh, svd, eig) share:
//! the quotient of a projected tangent by the gaps between eigenvalues (or squared
//! singular values), with PyTorch's answer where a gap is zero, and the diagonal term that
//! keeps complex vectors in the forward's phase gauge.

use crate::error::Result;
use crate::tensor::Tensor;

/// `num_ij / gap_ij` off the diagonal of each `(*, n, n)` matrix, 0 on it. Where a gap is
/// numerically zero (`|gap_ij| <= tol[b]` for matrix `b`) the quotient is 0 if `num_ij`
/// is negligible (`<= √ε max|num|` of its matrix: the perturbation does not split the
/// repeated value, and the vectors' tangent is the zero rotation within its subspace) and
/// NaN otherwise: there the vectors' tangent does not exist (the perturbation splits a
/// repeated value, and the vectors jump), and PyTorch's rules divide by the zero gap
/// (inf or NaN). A NaN, not an error, because the values' tangent is defined there and
/// an eigenvalue-only computation (`eigvalsh`, `svdvals`, norms) must not fail; the NaN
/// reaches only what depends on the vectors. `num` and `gap` have one shape (`gap` real,
/// or complex of `num`'s dtype).
pub(crate) fn gap_quotient(num: &Tensor, gap: &Tensor, tol: &[f64], eps: f64) -> Result<Tensor> {
    let n = gap.dims()[gap.rank() - 1];
    let nn = (n * n).max(1);
    let g = gap.detach().abs()?.to_vec_f64();
    let a = num.detach().abs()?.to_vec_f64();
    let mut zero = vec![false; g.len()]; // the diagonal and negligible degenerate pairs
    let mut undefined = vec![false; g.len()];
    for (b, ((gb, ab), (zb, ub))) in g
        .chunks_exact(nn)
        .zip(a.chunks_exact(nn))
        .zip(zero.chunks_exact_mut(nn).zip(undefined.chunks_exact_mut(nn)))
        .enumerate()
    {
        let amax = ab.iter().fold(0.0f64, |m, x| m.max(*x));
        let small = eps.sqrt() * amax;
        for i in 0..n {
            for j in 0..n {
                let k = i * n + j;
                if i == j {
                    zb[k] = true;
                } else if gb[k].abs() <= tol[b] {
                    if ab[k] <= small {
                        zb[k] = true;
                    } else {
                        ub[k] = true;
                    }
                }
            }
        }
    }
    let masked: Vec<bool> = zero.iter().zip(&undefined).map(|(a, b)| *a || *b).collect();
    let zero = Tensor::from_vec(zero, gap.shape().clone())?;
    let undefined = Tensor::from_vec(undefined, gap.shape().clone())?;
    let masked = Tensor::from_vec(masked, gap.shape().clone())?;
    let safe = Tensor::where_cond(&masked, &gap.ones_like()?, gap)?.to_dtype(num.dtype())?;
    let q = num.div(&safe)?;
    let q = Tensor::where_cond(&zero, &q.zeros_like()?, &q)?;
    Tensor::where_cond(&undefined, &q.full_like(f64::NAN)?, &q)
}

/// `dv` plus the term `V diag(iθ)` that keeps each column of complex `v: (*, m, k)` in
/// the forward's gauge (its component of largest modulus, the first on ties, real and
/// positive): `θ_j = −Im(dv_pj) / V_pj` at that component `p`. Real `v` is returned as
/// it is (its sign gauge is discrete).
pub(crate) fn keep_phase_gauge(v: &Tensor, dv: &Tensor) -> Result<Tensor> {
    match gauge_rotation(v, dv)? {
        Some(itheta) => dv.add(&v.mul(&itheta)?),
        None => Ok(dv.clone()),
    }
}

/// The `iθ` of [`keep_phase_gauge`], as a complex `(*, 1, k)` tensor; `None` for real `v`.
pub(crate) fn gauge_rotation(v: &Tensor, dv: &Tensor) -> Result<Option<Tensor>> {
    if !v.dtype().is_complex() {
        return Ok(None);
    }
    let (m, k) = (v.dims()[v.rank() - 2], v.dims()[v.rank() - 1]);
    let moduli = v.detach().abs()?.to_vec_f64();
    let mut pivots = Vec::with_capacity(moduli.len() / m.max(1));
    for mat in moduli.chunks_exact((m * k).max(1)) {
        for c in 0..k {
            let mut best = (0usize, 0.0f64);
            for r in 0..m {
                if mat[r * k + c] > best.1 {
                    best = (r, mat[r * k + c]);
                }
            }
            pivots.push(best.0 as i64);
        }
    }
    let mut dims = v.dims().to_vec();
    let last = dims.len() - 2;
    dims[last] = 1;
    let p = Tensor::from_vec(pivots, dims)?;
    let vp = v.gather(-2, &p)?.real()?;
    let theta = dv.gather(-2, &p)?.imag()?.div(&vp)?.neg()?;
    Ok(Some(Tensor::complex(&theta.zeros_like()?, &theta)?))
}
