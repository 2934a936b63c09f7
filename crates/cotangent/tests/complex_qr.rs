//! Householder QR of complex input (issue 47): `qr` in every mode and
//! `householder_product` on C128 and C64: reconstruction, unitarity, a real diagonal of
//! `R` with LAPACK's signs, over sizes on both sides of the panel width and batches; and
//! first- and second-order gradient checks. The PyTorch fixtures are in
//! `cotangent-parity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, ceye, check2, crandn, rg};
use cotangent::linalg::{householder_product, qr, QrMode};
use cotangent::{DType, Tensor};

#[test]
fn factors_reconstruct_with_a_real_diagonal() {
    for (batch, m, n) in [
        (vec![], 0, 0),
        (vec![], 1, 1),
        (vec![3], 4, 4),
        (vec![], 5, 3),
        (vec![], 3, 5),
        (vec![2], 40, 40),
        (vec![], 70, 33),
        (vec![], 33, 70),
        (vec![0], 3, 3),
    ] {
        let mut dims = batch.clone();
        dims.extend([m, n]);
        let a = crandn(&dims, 5 + m as u64 + n as u64);
        let k = m.min(n);
        let f = qr(&a, QrMode::Reduced).unwrap();
        assert_eq!(f.q.dims()[f.q.rank() - 1], k);
        assert_close(&f.q.matmul(&f.r).unwrap(), &a, 1e-12);
        assert_close(&f.q.mH().unwrap().matmul(&f.q).unwrap(), &ceye(k, &batch), 1e-13);
        assert_close(&f.r, &f.r.triu(0).unwrap(), 0.0);
        let d = f.r.diagonal(0, -2, -1).unwrap();
        assert!(d.imag().unwrap().to_vec_f64().iter().all(|&x| x == 0.0), "{m}x{n}");
        // complete: a square unitary Q, R with zero rows below k
        let c = qr(&a, QrMode::Complete).unwrap();
        assert_close(&c.q.matmul(&c.r).unwrap(), &a, 1e-12);
        assert_close(&c.q.mH().unwrap().matmul(&c.q).unwrap(), &ceye(m, &batch), 1e-13);
        // mode R: the same R
        assert_close(&qr(&a, QrMode::R).unwrap().r, &f.r, 0.0);
    }
    // LAPACK's sign: R_00 = −sign(Re a_00) ‖a_0‖
    let re = Tensor::from_vec(vec![3.0, 1.0, 0.0, 2.0], (2, 2)).unwrap();
    let im = Tensor::from_vec(vec![4.0, 0.0, 0.0, 1.0], (2, 2)).unwrap();
    let a = Tensor::complex(&re, &im).unwrap();
    let r = qr(&a, QrMode::Reduced).unwrap().r;
    let r00 = r.real().unwrap().to_vec_f64()[0];
    assert!((r00 + 5.0).abs() < 1e-14, "{r00}");
    // columns near underflow: zlarfg's rescaling keeps β and the reflectors accurate
    let tiny = crandn(&[5, 4], 10).mul_scalar(1e-300).unwrap();
    let f = qr(&tiny, QrMode::Reduced).unwrap();
    assert_close(&f.q.mH().unwrap().matmul(&f.q).unwrap(), &ceye(4, &[]), 1e-13);
    let back = f.q.matmul(&f.r).unwrap().mul_scalar(1e300).unwrap();
    assert_close(&back, &tiny.mul_scalar(1e300).unwrap(), 1e-12);
    // c64
    let a32 = crandn(&[6, 4], 9).to_dtype(DType::C64).unwrap();
    let f = qr(&a32, QrMode::Reduced).unwrap();
    let err = f.q.matmul(&f.r).unwrap().sub(&a32).unwrap().abs().unwrap();
    assert!(common::max_abs(&err) < 1e-5);
}

#[test]
fn householder_product_is_the_product_of_reflectors() {
    // H_i = I − τ_i v_i v_iᴴ, v_i with a unit entry i and zeros above
    let (m, n, k) = (5, 4, 3);
    let v = crandn(&[m, n], 21);
    let tau = crandn(&[k], 22);
    let q = householder_product(&v, &tau).unwrap();
    let mut prod = Tensor::eye(m, DType::C128).unwrap();
    let vv = v
        .tril(-1)
        .unwrap()
        .add(&Tensor::eye(m, DType::C128).unwrap().narrow(-1, 0, n).unwrap())
        .unwrap();
    for i in 0..k {
        let vi = vv.narrow(-1, i, 1).unwrap();
        let ti = tau.narrow(0, i, 1).unwrap();
        let h = Tensor::eye(m, DType::C128)
            .unwrap()
            .sub(&vi.matmul(&vi.mH().unwrap()).unwrap().mul(&ti).unwrap())
            .unwrap();
        prod = prod.matmul(&h).unwrap();
    }
    assert_close(&q, &prod.narrow(-1, 0, n).unwrap(), 1e-13);
}

#[test]
fn gradients() {
    let z = |shape: &[usize], seed| rg(crandn(shape, seed));
    check2("qr square", &[z(&[2, 3, 3], 31)], |x| {
        let f = qr(&x[0], QrMode::Reduced)?;
        Ok(vec![f.q, f.r])
    });
    check2("qr tall", &[z(&[5, 3], 32)], |x| {
        let f = qr(&x[0], QrMode::Reduced)?;
        Ok(vec![f.q, f.r])
    });
    check2("qr wide", &[z(&[3, 5], 33)], |x| {
        let f = qr(&x[0], QrMode::Reduced)?;
        Ok(vec![f.q, f.r])
    });
    check2("qr r only used", &[z(&[4, 3], 34)], |x| Ok(vec![qr(&x[0], QrMode::Reduced)?.r]));
    check2("householder_product", &[z(&[4, 3], 35), z(&[2], 36)], |x| {
        Ok(vec![householder_product(&x[0], &x[1])?])
    });
}
