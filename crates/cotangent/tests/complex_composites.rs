//! Complex composites of the SVD and the LU (issue 47): `pinv`, `matrix_rank`, the
//! spectral `matrix_norm` orders, `cond`, and `det`'s gradient at a singular matrix (the
//! cofactors through the complex SVD): invariants, closed forms and first- and
//! second-order gradient checks. The PyTorch fixtures are in `cotangent-parity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, crandn, cwell, rg};
use cotangent::linalg::{cond, det, matrix_norm, matrix_rank, pinv, svdvals, NormOrd, PinvOptions};
use cotangent::{DType, Tensor};

#[test]
fn pinv_satisfies_the_penrose_conditions() {
    for (m, n) in [(5, 3), (3, 5), (4, 4)] {
        let a = crandn(&[2, m, n], 3 + m as u64);
        let p = pinv(&a, PinvOptions::default()).unwrap();
        assert_eq!(p.dims(), &[2, n, m]);
        // A P A = A, P A P = P, (A P)ᴴ = A P, (P A)ᴴ = P A
        let ap = a.matmul(&p).unwrap();
        let pa = p.matmul(&a).unwrap();
        assert_close(&ap.matmul(&a).unwrap(), &a, 1e-12);
        assert_close(&pa.matmul(&p).unwrap(), &p, 1e-12);
        assert_close(&ap.mH().unwrap(), &ap, 1e-12);
        assert_close(&pa.mH().unwrap(), &pa, 1e-12);
    }
    // rank-deficient: rank 2 of 5 x 4
    let x = crandn(&[5, 2], 7).matmul(&crandn(&[2, 4], 8)).unwrap();
    let p = pinv(&x, PinvOptions::default()).unwrap();
    assert_close(&x.matmul(&p).unwrap().matmul(&x).unwrap(), &x, 1e-12);
    assert_eq!(matrix_rank(&x, PinvOptions::default()).unwrap().to_vec::<i64>().unwrap(), vec![2]);
    // hermitian: the lower triangle read as a Hermitian matrix
    let h = crandn(&[4, 4], 9);
    let herm = h.tril(-1).unwrap();
    let d = h.real().unwrap().diagonal(0, -2, -1).unwrap().diag_embed(0, -2, -1).unwrap();
    let full =
        herm.add(&herm.mH().unwrap()).unwrap().add(&d.to_dtype(DType::C128).unwrap()).unwrap();
    assert_close(
        &pinv(&h, PinvOptions { hermitian: true, ..Default::default() }).unwrap(),
        &pinv(&full, PinvOptions::default()).unwrap(),
        1e-12,
    );
    assert_eq!(
        matrix_rank(&h, PinvOptions { hermitian: true, ..Default::default() })
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![4]
    );
}

#[test]
fn spectral_norms_and_condition_numbers() {
    let a = crandn(&[2, 4, 3], 21);
    let s = svdvals(&a).unwrap();
    let n2 = matrix_norm(&a, NormOrd::P(2.0), [-2, -1], false).unwrap();
    assert_eq!(n2.dtype(), DType::F64);
    assert_close(&n2, &s.narrow(-1, 0, 1).unwrap().squeeze_dim(-1).unwrap(), 1e-14);
    let nuc = matrix_norm(&a, NormOrd::Nuc, [-2, -1], false).unwrap();
    assert_close(&nuc, &s.sum_dims(&[-1], false).unwrap(), 1e-14);
    let c = cond(&a, None).unwrap();
    let want = s.narrow(-1, 0, 1).unwrap().div(&s.narrow(-1, 2, 1).unwrap()).unwrap();
    assert_close(&c, &want.squeeze_dim(-1).unwrap(), 1e-12);
    // ‖A‖₁ ‖A⁻¹‖₁ for a square matrix, real
    let w = cwell(&[3, 3], 22);
    let c1 = cond(&w, Some(NormOrd::P(1.0))).unwrap();
    assert_eq!(c1.dtype(), DType::F64);
    let inv = cotangent::linalg::inv(&w).unwrap();
    let want = matrix_norm(&w, NormOrd::P(1.0), [-2, -1], false)
        .unwrap()
        .mul(&matrix_norm(&inv, NormOrd::P(1.0), [-2, -1], false).unwrap())
        .unwrap();
    assert_close(&c1, &want, 1e-13);
}

#[test]
fn gradients() {
    let z = |shape: &[usize], seed| rg(crandn(shape, seed));
    check2("pinv tall", &[z(&[4, 3], 31)], |x| Ok(vec![pinv(&x[0], PinvOptions::default())?]));
    check2("pinv wide", &[z(&[2, 3, 4], 32)], |x| Ok(vec![pinv(&x[0], PinvOptions::default())?]));
    // (hermitian: the gradient is the general pinv gradient, as PyTorch's, so the input
    // is made Hermitian first, and every perturbation is one the op sees)
    check2("pinv hermitian", &[z(&[3, 3], 33)], |x| {
        let h = x[0].add(&x[0].mH()?)?.mul_scalar(0.5)?;
        Ok(vec![pinv(&h, PinvOptions { hermitian: true, ..Default::default() })?])
    });
    check2("matrix_norm 2", &[z(&[3, 4], 34)], |x| {
        Ok(vec![matrix_norm(&x[0], NormOrd::P(2.0), [-2, -1], false)?])
    });
    check2("matrix_norm nuc", &[z(&[4, 3], 35)], |x| {
        Ok(vec![matrix_norm(&x[0], NormOrd::Nuc, [-2, -1], false)?])
    });
    check2("cond", &[z(&[3, 3], 36)], |x| Ok(vec![cond(&x[0], None)?]));
    check2("cond fro", &[rg(cwell(&[3, 3], 37))], |x| Ok(vec![cond(&x[0], Some(NormOrd::Fro))?]));
}

#[test]
fn det_gradient_at_a_singular_matrix_is_the_cofactor_matrix() {
    // rank 2 of 3 x 3: det's gradient is conj of the cofactors, finite (through the SVD)
    let x = crandn(&[3, 2], 41).matmul(&crandn(&[2, 3], 42)).unwrap();
    let a = rg(x.clone());
    let g = det(&a).unwrap().real().unwrap().backward().unwrap();
    let ga = g.get(&a).unwrap();
    // the same as the limit through a nearby invertible matrix
    let eps = 1e-7;
    let b = rg(x.add(&Tensor::eye(3, DType::C128).unwrap().mul_scalar(eps).unwrap()).unwrap());
    let gb = det(&b).unwrap().real().unwrap().backward().unwrap();
    assert_close(ga, gb.get(&b).unwrap(), 1e-5);
    assert!(common::max_abs(&ga.abs().unwrap()) > 1e-3);
}

#[test]
fn matrix_exponential() {
    use cotangent::linalg::matrix_exp;
    // a diagonal: the scalar exponentials; exp(A) exp(−A) = I for a larger, scaled matrix
    let d = crandn(&[4], 51);
    let e = matrix_exp(&d.diag_embed(0, -2, -1).unwrap()).unwrap();
    assert_close(&e, &d.exp().unwrap().diag_embed(0, -2, -1).unwrap(), 1e-14);
    for scale in [0.01, 1.0] {
        let a = crandn(&[2, 6, 6], 52).mul_scalar(scale / 6.0).unwrap();
        let p = matrix_exp(&a).unwrap().matmul(&matrix_exp(&a.neg().unwrap()).unwrap()).unwrap();
        let eye = Tensor::eye(6, DType::C128).unwrap().broadcast_to((2, 6, 6)).unwrap();
        assert_close(&p, &eye, 1e-12);
    }
    // a norm that needs squarings: against V diag(e^w) V⁻¹, relative to ‖exp(A)‖
    let a = crandn(&[6, 6], 54).mul_scalar(5.0).unwrap();
    let e = cotangent::linalg::eig(&a).unwrap();
    let v = &e.eigenvectors;
    let want = v
        .mul(&e.eigenvalues.exp().unwrap().unsqueeze(-2).unwrap())
        .unwrap()
        .matmul(&cotangent::linalg::inv(v).unwrap())
        .unwrap();
    let got = matrix_exp(&a).unwrap();
    let big = common::max_abs(&want.abs().unwrap());
    let err = common::max_abs(&got.sub(&want).unwrap().abs().unwrap());
    assert!(err < 1e-10 * big, "{err} vs {big}");
    // exp(i θ σ_x) = cos θ I + i sin θ σ_x
    let t = 0.7f64;
    let sx = Tensor::complex(
        &Tensor::zeros((2, 2), DType::F64).unwrap(),
        &Tensor::from_vec(vec![0.0, t, t, 0.0], (2, 2)).unwrap(),
    )
    .unwrap();
    let want = Tensor::complex(
        &Tensor::from_vec(vec![t.cos(), 0.0, 0.0, t.cos()], (2, 2)).unwrap(),
        &Tensor::from_vec(vec![0.0, t.sin(), t.sin(), 0.0], (2, 2)).unwrap(),
    )
    .unwrap();
    assert_close(&matrix_exp(&sx).unwrap(), &want, 1e-15);
    check2("matrix_exp", &[rg(crandn(&[2, 3, 3], 53))], |x| Ok(vec![matrix_exp(&x[0])?]));
}

#[test]
fn least_squares() {
    use cotangent::linalg::{lstsq, LstsqDriver};
    // tall: the normal equations Aᴴ (A X − B) = 0, the residuals Σ |r|², real
    let a = crandn(&[2, 6, 3], 61);
    let b = crandn(&[2, 6, 2], 62);
    for driver in [LstsqDriver::Gels, LstsqDriver::Gelsy, LstsqDriver::Gelsd, LstsqDriver::Gelss] {
        let r = lstsq(&a, &b, driver).unwrap();
        let res = a.matmul(&r.solution).unwrap().sub(&b).unwrap();
        let normal = a.mH().unwrap().matmul(&res).unwrap();
        assert!(common::max_abs(&normal.abs().unwrap()) < 1e-12, "{driver:?}");
        if driver != LstsqDriver::Gelsy {
            assert_eq!(r.residuals.dtype(), DType::F64);
            let want = res.abs().unwrap().square().unwrap().sum_dims(&[-2], false).unwrap();
            assert_close(&r.residuals, &want, 1e-12);
        }
    }
    // wide: the least-norm solution A⁺ B
    let w = crandn(&[3, 5], 63);
    let bw = crandn(&[3, 2], 64);
    let x = lstsq(&w, &bw, LstsqDriver::Gels).unwrap().solution;
    assert_close(&x, &pinv(&w, PinvOptions::default()).unwrap().matmul(&bw).unwrap(), 1e-12);
    let z = |shape: &[usize], seed| rg(crandn(shape, seed));
    check2("lstsq gelsd", &[z(&[5, 3], 65), z(&[5, 2], 66)], |x| {
        let r = lstsq(&x[0], &x[1], LstsqDriver::Gelsd)?;
        Ok(vec![r.solution, r.residuals])
    });
    check2("lstsq gels wide", &[z(&[3, 4], 67), z(&[3], 68)], |x| {
        Ok(vec![lstsq(&x[0], &x[1], LstsqDriver::Gels)?.solution])
    });
}
