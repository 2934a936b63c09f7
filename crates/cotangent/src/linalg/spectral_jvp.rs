//! What the forward-mode rules of the spectral decompositions (eigh, svd, eig) share:
//! the quotient of a projected tangent by the gaps between eigenvalues (or squared
//! singular values), with PyTorch's answer where a gap is zero, and the diagonal term that
//! keeps complex vectors in the forward's phase gauge; and the Sylvester solve of the
//! square root's and the polar decomposition's rules.

use crate::autograd::node::should_record;
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
    let real = !num.dtype().is_complex() && !gap.dtype().is_complex();
    if real && crate::backend::fast_paths() && !should_record(&[num, gap]) {
        return gap_quotient_values(num, gap, tol, eps);
    }
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

/// `V [(Vᴴ Y V)_ij / (s_i + s_j)] Vᴴ`: the solution `X` of the Sylvester equation
/// `X H + H X = Y` for `H = V diag(s) Vᴴ` (`s`: `(*, n)`, real), a self-adjoint map for
/// the real inner product; a zero `s_i + s_j` gives inf or NaN. The rules of
/// `matrix_sqrth` and `polar` (no eigenvalue gaps: sums, not differences).
pub(crate) fn sylvester(v: &Tensor, s: &Tensor, y: &Tensor) -> Result<Tensor> {
    let yt = v.mH()?.matmul(y)?.matmul(v)?;
    let denom = s.unsqueeze(-1)?.add(&s.unsqueeze(-2)?)?;
    v.matmul(&yt.div(&denom)?)?.matmul(&v.mH()?)
}

/// `V diag(d) Vᴴ` for `d: (*, n)` real: `H` from its eigenvectors and eigenvalues, or a
/// function of it (`H⁻¹`, `H^½`).
pub(crate) fn v_diag_vh(v: &Tensor, d: &Tensor) -> Result<Tensor> {
    v.mul(&d.to_dtype(v.dtype())?.unsqueeze(-2)?)?.matmul(&v.mH()?)
}

/// `½ (M + Mᴴ)`.
pub(crate) fn herm(m: &Tensor) -> Result<Tensor> {
    m.add(&m.mH()?)?.mul_scalar(0.5)
}

/// [`gap_quotient`] of real tensors that nothing differentiates: the same values (the
/// same division of the same numbers), in one pass over the matrices read back, where the
/// tensor-op form makes a dozen passes and its masks. Off with the fast paths
/// (`COTANGENT_FAST_PATHS=0`), so that both forms stay tested.
fn gap_quotient_values(num: &Tensor, gap: &Tensor, tol: &[f64], eps: f64) -> Result<Tensor> {
    let n = gap.dims()[gap.rank() - 1];
    let nn = (n * n).max(1);
    let g = gap.to_vec_f64();
    let mut q = num.to_vec_f64();
    for (b, (gb, qb)) in g.chunks_exact(nn).zip(q.chunks_exact_mut(nn)).enumerate() {
        let amax = qb.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let small = eps.sqrt() * amax;
        for i in 0..n {
            for j in 0..n {
                let k = i * n + j;
                qb[k] = if i == j {
                    0.0
                } else if gb[k].abs() <= tol[b] {
                    if qb[k].abs() <= small {
                        0.0
                    } else {
                        f64::NAN
                    }
                } else {
                    qb[k] / gb[k]
                };
            }
        }
    }
    let dt = num.dtype();
    Tensor::from_vec(q, num.shape().clone())?.to_dtype(dt)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_quotient_is_the_tensor_ops_one() {
        // two 3 x 3 matrices: a zero gap with a negligible and with a large numerator, a
        // NaN numerator, ordinary pairs; the tensor-op path taken by making `num` require
        // grad (recorded), the one-pass path without
        #[rustfmt::skip]
        let num = vec![
            1.0, 2.0, 1e-12, -3.0, 4.0, 5.0, 0.5, f64::NAN, 7.0,
            2.0, -1.0, 0.25, 8.0, 3.0, -2.0, 1.5, 9.0, 4.0,
        ];
        #[rustfmt::skip]
        let gap = vec![
            0.0, 0.0, 0.0, 2.0, 0.0, -1.0, 4.0, 3.0, 0.0,
            0.0, 0.5, -0.5, 1e-18, 0.0, 2.0, 0.25, -4.0, 0.0,
        ];
        let tol = [1e-10, 1e-10];
        for dt in [crate::DType::F64, crate::DType::F32] {
            let n = Tensor::from_vec(num.clone(), (2, 3, 3)).unwrap().to_dtype(dt).unwrap();
            let g = Tensor::from_vec(gap.clone(), (2, 3, 3)).unwrap().to_dtype(dt).unwrap();
            let fast = gap_quotient(&n, &g, &tol, 1e-16).unwrap();
            let slow = gap_quotient(&n.with_requires_grad(true).unwrap(), &g, &tol, 1e-16).unwrap();
            assert_eq!(fast.dtype(), dt);
            let (f, s) = (fast.to_vec_f64(), slow.to_vec_f64());
            for (a, b) in f.iter().zip(&s) {
                assert!(a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan(), "{f:?}\n{s:?}");
            }
            // the cases: 0 on the diagonal, 0 for the negligible numerator over a zero
            // gap, NaN for a large one, the quotient elsewhere
            assert_eq!((f[0], f[2], f[4]), (0.0, 0.0, 0.0));
            assert!(f[1].is_nan() && f[7].is_nan());
            assert_eq!(f[3], -1.5);
        }
    }
}
