//! Complex LU family (issue 47): `lu_factor`, `lu`, `lu_unpack`, `lu_solve`, `solve`,
//! `inv`, `det`, `slogdet`, `logdet` on C128 input: reconstruction and solve invariants
//! over sizes on both sides of the unblocked/recursive switch, closed forms, singular
//! input (LAPACK's `info`, PyTorch's errors), and first- and second-order gradient
//! checks of every op (real and imaginary parts perturbed separately). The PyTorch
//! fixtures of the same ops are in `cotangent-parity`'s suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, ceye, check2, crandn, cwell, rg};
use cotangent::linalg::{
    det, inv, inv_ex, lu, lu_factor, lu_factor_ex, lu_solve, lu_unpack, slogdet, solve, solve_ex,
    Side,
};
use cotangent::{DType, Error, Tensor};

/// A complex128 matrix from its parts, row-major.
fn cm(re: &[f64], im: &[f64], m: usize, n: usize) -> Tensor {
    let t = |v: &[f64]| Tensor::from_vec(v.to_vec(), (m, n)).unwrap();
    Tensor::complex(&t(re), &t(im)).unwrap()
}

#[test]
fn lu_reconstructs_and_pivots_by_the_largest_modulus_sum() {
    // square, tall and wide; orders on both sides of the unblocked kernel's limit (16)
    for (batch, m, n) in [
        (vec![], 0, 0),
        (vec![], 1, 1),
        (vec![3], 4, 4),
        (vec![2], 17, 17),
        (vec![], 40, 25),
        (vec![], 25, 40),
        (vec![], 70, 70),
        (vec![0], 3, 3),
    ] {
        let mut dims = batch.clone();
        dims.extend([m, n]);
        let a = crandn(&dims, 7 + m as u64);
        let f = lu(&a, true).unwrap();
        let back = f.p.matmul(&f.l).unwrap().matmul(&f.u).unwrap();
        assert_close(&back, &a, 1e-12);
        // without pivoting (a diagonally dominant matrix): A = L U and trivial pivots
        let d = cwell(&[m.max(n), m.max(n)], 3).narrow(-2, 0, m).unwrap().narrow(-1, 0, n);
        let d = d.unwrap();
        let g = lu(&d, false).unwrap();
        assert_close(&g.l.matmul(&g.u).unwrap(), &d, 1e-12);
        let k = m.min(n);
        let want: Vec<i64> = (1..=k as i64).collect();
        assert_eq!(lu_factor(&d, false).unwrap().pivots.to_vec::<i64>().unwrap(), want);
    }
    // the first pivot is the row with the largest |re| + |im| (LAPACK's izamax), not the
    // largest modulus: 2 + 2i (4 > 3) over 3, though |2 + 2i| < 3
    let a = cm(&[3.0, 0.0, 2.0, 1.0], &[0.0, 0.0, 2.0, 0.0], 2, 2);
    assert_eq!(lu_factor(&a, true).unwrap().pivots.to_vec::<i64>().unwrap(), vec![2, 2]);
    // and 1 + i ties with 2i (both 2): the first row stays, though |2i| is larger
    let t = cm(&[1.0, 0.0, 0.0, 1.0], &[1.0, 0.0, 2.0, 0.0], 2, 2);
    assert_eq!(lu_factor(&t, true).unwrap().pivots.to_vec::<i64>().unwrap(), vec![1, 2]);
    // the same rules in the recursive kernel (order 20): row 7 holds 3 + 3i in column 0
    let mut re = vec![0.0; 400];
    let im = vec![0.0; 400];
    for i in 0..20 {
        re[i * 20 + i] = 1.0;
        re[i * 20] = 1.0 + i as f64 * 0.1;
    }
    let mut im = im;
    im[7 * 20] = 3.0;
    re[7 * 20] = 3.0;
    re[9 * 20] = 5.0; // |re| + |im| = 5 < 6, |5| > |3 + 3i|
    let big = cm(&re, &im, 20, 20);
    let p = lu_factor(&big, true).unwrap().pivots.to_vec::<i64>().unwrap();
    assert_eq!(p[0], 8);
    let f = lu(&big, true).unwrap();
    assert_close(&f.p.matmul(&f.l).unwrap().matmul(&f.u).unwrap(), &big, 1e-13);
}

#[test]
fn singular_matrices_report_lapacks_info() {
    // an exactly zero column at position 5 of a 20 x 20 matrix (the recursive kernel's
    // size; its retry finishes the factorisation as LAPACK does)
    let mut a = crandn(&[20, 20], 11);
    let mask = Tensor::arange(0.0, 20.0, 1.0, DType::F64).unwrap().ne_scalar(5.0).unwrap();
    a = Tensor::where_cond(&mask, &a, &a.zeros_like().unwrap()).unwrap();
    let f = lu_factor_ex(&a, true).unwrap();
    assert_eq!(f.info.to_vec::<i64>().unwrap(), vec![6]);
    let r = lu_unpack(&f.lu, &f.pivots).unwrap();
    assert!(f.lu.view_as_real().unwrap().to_vec_f64().iter().all(|v| v.is_finite()));
    assert_close(&r.p.matmul(&r.l).unwrap().matmul(&r.u).unwrap(), &a, 1e-12);
    assert!(matches!(lu_factor(&a, true), Err(Error::Singular { index: 6, .. })));
    // solve and inv refuse with the failing matrix of the batch named
    let z = Tensor::stack(&[&cwell(&[3, 3], 1), &Tensor::zeros((3, 3), DType::C128).unwrap()], 0);
    let z = z.unwrap();
    let b = crandn(&[2, 3, 1], 2);
    assert!(matches!(solve(&z, &b, Side::Left), Err(Error::Singular { batch: 1, index: 1, .. })));
    assert!(matches!(inv(&z), Err(Error::Singular { batch: 1, index: 1, .. })));
    assert_eq!(solve_ex(&z, &b, Side::Left).unwrap().info.to_vec::<i64>().unwrap(), vec![0, 1]);
    assert_eq!(inv_ex(&z).unwrap().info.to_vec::<i64>().unwrap(), vec![0, 1]);
}

#[test]
fn solves_and_inverses() {
    let a = cwell(&[2, 5, 5], 21);
    let f = lu_factor(&a, true).unwrap();
    let b = crandn(&[2, 5, 3], 22);
    let br = crandn(&[2, 3, 5], 23);
    // A X = B, Aᴴ X = B, X A = B, X Aᴴ = B
    let x = lu_solve(&f.lu, &f.pivots, &b, Side::Left, false).unwrap();
    assert_close(&a.matmul(&x).unwrap(), &b, 1e-12);
    let x = lu_solve(&f.lu, &f.pivots, &b, Side::Left, true).unwrap();
    assert_close(&a.mH().unwrap().matmul(&x).unwrap(), &b, 1e-12);
    let x = lu_solve(&f.lu, &f.pivots, &br, Side::Right, false).unwrap();
    assert_close(&x.matmul(&a).unwrap(), &br, 1e-12);
    let x = lu_solve(&f.lu, &f.pivots, &br, Side::Right, true).unwrap();
    assert_close(&x.matmul(&a.mH().unwrap()).unwrap(), &br, 1e-12);
    // solve: left, right, a batch of vectors, a broadcast batch; and a large order
    let x = solve(&a, &b, Side::Left).unwrap();
    assert_close(&a.matmul(&x).unwrap(), &b, 1e-12);
    let x = solve(&a, &br, Side::Right).unwrap();
    assert_close(&x.matmul(&a).unwrap(), &br, 1e-12);
    let v = crandn(&[2, 5], 24);
    let x = solve(&a, &v, Side::Left).unwrap();
    assert_eq!(x.dims(), &[2, 5]);
    assert_close(&a.matmul(&x.unsqueeze(-1).unwrap()).unwrap().squeeze_dim(-1).unwrap(), &v, 1e-12);
    let one = cwell(&[5, 5], 25);
    let x = solve(&one, &b, Side::Left).unwrap();
    assert_close(&one.matmul(&x).unwrap(), &b, 1e-12);
    let big = cwell(&[80, 80], 26);
    let bb = crandn(&[80, 4], 27);
    let x = solve(&big, &bb, Side::Left).unwrap();
    assert_close(&big.matmul(&x).unwrap(), &bb, 1e-11);
    // inverse, both products the identity
    for a in [a.clone(), big] {
        let n = a.dims()[a.rank() - 1];
        let batch = a.dims()[..a.rank() - 2].to_vec();
        let x = inv(&a).unwrap();
        assert_close(&a.matmul(&x).unwrap(), &ceye(n, &batch), 1e-12);
        assert_close(&x.matmul(&a).unwrap(), &ceye(n, &batch), 1e-12);
    }
    // c64 as well
    let a32 = a.to_dtype(DType::C64).unwrap();
    let x = inv(&a32).unwrap();
    assert_eq!(x.dtype(), DType::C64);
    let err = a32.matmul(&x).unwrap().sub(&ceye(5, &[2]).to_dtype(DType::C64).unwrap()).unwrap();
    assert!(common::max_abs(&err.abs().unwrap()) < 1e-5);
}

#[test]
fn determinants_match_closed_forms() {
    // det [[1+i, 2], [3i, 4-i]] = (1+i)(4-i) − 2·3i = 5 + 3i − 6i = 5 − 3i
    let a = cm(&[1.0, 2.0, 0.0, 4.0], &[1.0, 0.0, 3.0, -1.0], 2, 2);
    let d = det(&a).unwrap();
    assert_close(&d, &cm(&[5.0], &[-3.0], 1, 1).reshape(()).unwrap(), 1e-15);
    let s = slogdet(&a).unwrap();
    let r = 34f64.sqrt();
    assert_close(&s.sign, &cm(&[5.0 / r], &[-3.0 / r], 1, 1).reshape(()).unwrap(), 1e-15);
    assert_eq!(s.logabsdet.dtype(), DType::F64);
    assert!((s.logabsdet.item::<f64>().unwrap() - r.ln()).abs() < 1e-15);
    // logdet is the principal log of det
    let l = cotangent::linalg::logdet(&a).unwrap();
    assert_close(&l, &d.log().unwrap(), 1e-15);
    // a batch against the product of U's diagonal, with the permutation's sign
    let b = crandn(&[3, 6, 6], 31);
    let f = lu(&b, true).unwrap();
    let diag = f.u.diagonal(0, -2, -1).unwrap().prod_dims(&[-1], false).unwrap();
    let psign = det(&f.p).unwrap();
    assert_close(&det(&b).unwrap(), &diag.mul(&psign).unwrap(), 1e-12);
    let s = slogdet(&b).unwrap();
    let rebuilt = s.sign.mul(&s.logabsdet.exp().unwrap()).unwrap();
    assert_close(&rebuilt, &det(&b).unwrap(), 1e-12);
    // singular: det 0, sign 0, logabsdet -inf, logdet -inf with an undefined phase
    let z = cm(&[1.0, 2.0, 2.0, 4.0], &[1.0, 2.0, 2.0, 4.0], 2, 2);
    assert_eq!(det(&z).unwrap().abs().unwrap().item::<f64>().unwrap(), 0.0);
    let s = slogdet(&z).unwrap();
    assert_eq!(s.sign.abs().unwrap().item::<f64>().unwrap(), 0.0);
    assert_eq!(s.logabsdet.item::<f64>().unwrap(), f64::NEG_INFINITY);
    let l = cotangent::linalg::logdet(&z).unwrap();
    assert_eq!(l.real().unwrap().item::<f64>().unwrap(), f64::NEG_INFINITY);
    assert!(l.imag().unwrap().item::<f64>().unwrap().is_nan());
    // n = 0: det 1
    let e = Tensor::zeros((2, 0, 0), DType::C128).unwrap();
    assert_close(&det(&e).unwrap(), &Tensor::ones(2, DType::C128).unwrap(), 0.0);
}

#[test]
fn gradients_of_the_lu_family() {
    let w = |shape: &[usize], seed| rg(cwell(shape, seed));
    let z = |shape: &[usize], seed| rg(crandn(shape, seed));
    check2("lu_factor", &[w(&[2, 3, 3], 41)], |x| Ok(vec![lu_factor(&x[0], true)?.lu]));
    check2("lu square", &[w(&[3, 3], 42)], |x| {
        let f = lu(&x[0], true)?;
        Ok(vec![f.l, f.u])
    });
    // (rectangular: the well-conditioned square block leads, so the pivots stay put)
    check2("lu wide", &[rg(cwell(&[4, 4], 43).narrow(-2, 0, 3).unwrap().detach())], |x| {
        let f = lu(&x[0], true)?;
        Ok(vec![f.l, f.u])
    });
    check2("lu tall", &[rg(cwell(&[4, 4], 44).narrow(-1, 0, 3).unwrap().detach())], |x| {
        let f = lu(&x[0], false)?;
        Ok(vec![f.l, f.u])
    });
    check2("lu_unpack", &[w(&[3, 3], 45)], |x| {
        let f = lu_factor(&x[0], true)?;
        let r = lu_unpack(&f.lu, &f.pivots)?;
        Ok(vec![r.l, r.u])
    });
    // the factors of a fixed matrix as the input (their pivots rebuilt inside)
    let factors = || rg(lu_factor(&cwell(&[3, 3], 46), true).unwrap().lu.detach());
    for (side, adjoint) in
        [(Side::Left, false), (Side::Left, true), (Side::Right, false), (Side::Right, true)]
    {
        let b = if side == Side::Left { z(&[3, 2], 47) } else { z(&[2, 3], 47) };
        check2("lu_solve", &[factors(), b], move |x| {
            let pivots = lu_factor(&cwell(&[3, 3], 46), true)?.pivots;
            Ok(vec![lu_solve(&x[0], &pivots, &x[1], side, adjoint)?])
        });
    }
    check2("solve left", &[w(&[2, 3, 3], 48), z(&[2, 3, 2], 49)], |x| {
        Ok(vec![solve(&x[0], &x[1], Side::Left)?])
    });
    check2("solve right", &[w(&[3, 3], 50), z(&[2, 3], 51)], |x| {
        Ok(vec![solve(&x[0], &x[1], Side::Right)?])
    });
    check2("solve vector", &[w(&[3, 3], 52), z(&[3], 53)], |x| {
        Ok(vec![solve(&x[0], &x[1], Side::Left)?])
    });
    check2("inv", &[w(&[2, 3, 3], 54)], |x| Ok(vec![inv(&x[0])?]));
    check2("det", &[w(&[2, 3, 3], 55)], |x| Ok(vec![det(&x[0])?]));
    check2("slogdet", &[w(&[2, 3, 3], 56)], |x| {
        let s = slogdet(&x[0])?;
        Ok(vec![s.sign, s.logabsdet])
    });
    check2("slogdet sign", &[w(&[3, 3], 57)], |x| Ok(vec![slogdet(&x[0])?.sign]));
    check2("logdet", &[w(&[3, 3], 58)], |x| Ok(vec![cotangent::linalg::logdet(&x[0])?]));
}
