//! Matrices whose entries are subnormal (below the smallest normal number, down to the
//! smallest subnormal): the SVD and the eigendecompositions, real and complex, f64 and
//! f32, alone and in batches (the lane kernels), at orders that reach each algorithm's
//! path. Their kernels scale each matrix by a power of two near its largest entry; for
//! a subnormal entry that power has no finite reciprocal, and they failed to converge
//! (issue 49, found by the error-path census). The reference for each result is the
//! same decomposition of the matrix scaled by an exact power of two into the normal
//! range (the same matrix, bit for bit, times `2ᵏ`), its values scaled back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use cotangent::linalg::{self, Uplo};
use cotangent::{DType, Generator, Result, Tensor};

/// The largest magnitude of `t`, in f64.
fn amax(t: &Tensor) -> f64 {
    let v = t.abs().unwrap().to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    v.iter().fold(0.0, |a, &b| a.max(b))
}

/// `|got - want|` entrywise at most `tol · max|want|` plus the spacing of the subnormals
/// (results scaled back into the subnormal range are rounded to it).
fn assert_values(got: &Tensor, want: &Tensor, tol: f64, tiny: f64, what: &str) {
    let g = got.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let w = want.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    let scale = w.iter().fold(0.0f64, |a, &b| a.max(b.abs()));
    assert!(scale > 0.0, "{what}: a zero reference");
    for (x, y) in g.iter().zip(&w) {
        assert!((x - y).abs() <= tol * scale + tiny, "{what}: {x:e} vs {y:e}");
    }
}

/// Runs `check(a, up)` on subnormal matrices `a` of each dtype, shape and path: `up` is
/// the exact power of two that brings `a` into the normal range.
fn for_each_case(check: impl Fn(&Tensor, f64, DType, &str) -> Result<()>) {
    let shapes: [&[usize]; 6] = [&[2, 2], &[3, 3], &[6, 6], &[40, 40], &[16, 4, 4], &[16, 12, 12]];
    let cases = [
        (DType::F64, 1e-310, 2f64.powi(1000)),
        (DType::F64, 1e-321, 2f64.powi(1000)),
        (DType::C128, 1e-310, 2f64.powi(1000)),
        (DType::F32, 1e-40, 2f64.powi(60)),
        (DType::C64, 1e-40, 2f64.powi(60)),
    ];
    for (seed, shape) in (1u64..).zip(shapes) {
        for &(dtype, s, up) in &cases {
            let g = Tensor::randn(shape.to_vec(), DType::F64, &mut Generator::new(seed)).unwrap();
            let g = if dtype.is_complex() {
                let im = Tensor::randn(shape.to_vec(), DType::F64, &mut Generator::new(seed + 99))
                    .unwrap();
                Tensor::complex(&g, &im).unwrap()
            } else {
                g
            };
            // rounded once, into the subnormal range
            let a = g.mul_scalar(s).unwrap().to_dtype(dtype).unwrap();
            assert!(amax(&a) > 0.0);
            let what = format!("{dtype:?} {shape:?} at {s:e}");
            check(&a, up, dtype, &what).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

fn tolerance(dtype: DType) -> f64 {
    if matches!(dtype, DType::F32 | DType::C64) {
        2e-5
    } else {
        1e-12
    }
}

/// The spacing of the subnormals of `dtype`'s real type.
fn spacing(dtype: DType) -> f64 {
    if matches!(dtype, DType::F32 | DType::C64) {
        f64::from(f32::from_bits(1))
    } else {
        f64::from_bits(1)
    }
}

#[test]
fn svd_of_subnormal_matrices() {
    for_each_case(|a, up, dtype, what| {
        let (tol, tiny) = (tolerance(dtype), spacing(dtype));
        let f = linalg::svd(a, false)?;
        let big = a.mul_scalar(up)?;
        let want = linalg::svdvals(&big)?.mul_scalar(1.0 / up)?;
        assert_values(&f.s, &want, tol, tiny, what);
        assert_values(&linalg::svdvals(a)?, &want, tol, tiny, what);
        // the factors reconstruct the scaled-up matrix: U diag(s 2ᵏ) Vᴴ = A 2ᵏ (to the
        // rounding of the singular values to the subnormals' spacing, too)
        let s_up = f.s.mul_scalar(up)?.to_dtype(a.dtype())?;
        let back = f.u.mul(&s_up.unsqueeze(-2)?)?.matmul(&f.vh)?;
        let err = amax(&back.sub(&big)?) / amax(&big);
        let rounding = 4.0 * tiny * up / amax(&big);
        assert!(err <= tol * 10.0 + rounding, "{what}: reconstruction {err:e}");
        Ok(())
    });
}

#[test]
fn eigendecompositions_of_subnormal_matrices() {
    for_each_case(|a, up, dtype, what| {
        let (tol, tiny) = (tolerance(dtype), spacing(dtype));
        let h = a.add(&a.mH()?)?;
        let big = h.mul_scalar(up)?;
        let f = linalg::eigh(&h, Uplo::Lower)?;
        let want = linalg::eigvalsh(&big, Uplo::Lower)?.mul_scalar(1.0 / up)?;
        assert_values(&f.eigenvalues, &want, tol, tiny, what);
        assert_values(&linalg::eigvalsh(&h, Uplo::Lower)?, &want, tol, tiny, what);
        // H V = V diag(w), in the scaled-up range (to the eigenvalues' rounding)
        let w_up = f.eigenvalues.mul_scalar(up)?.to_dtype(a.dtype())?;
        let res = big.matmul(&f.eigenvectors)?.sub(&f.eigenvectors.mul(&w_up.unsqueeze(-2)?)?)?;
        let err = amax(&res) / amax(&big);
        let rounding = 4.0 * tiny * up / amax(&big);
        assert!(err <= tol * 10.0 + rounding, "{what}: eigh residual {err:e}");
        // the general eigenproblem: the spectral radius against the scaled-up matrix's
        let e = linalg::eig(a)?;
        let want = amax(&linalg::eigvals(&a.mul_scalar(up)?)?) / up;
        let got = amax(&e.eigenvalues);
        assert!((got - want).abs() <= tol * want + tiny, "{what}: eig {got:e} vs {want:e}");
        Ok(())
    });
}
