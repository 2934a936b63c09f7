//! `linalg.polar`: invariants (A = U H, UᴴU = I, H Hermitian positive semidefinite, U
//! the nearest matrix with orthonormal columns), PyTorch 2.15's values, gradient and
//! tangent, gradients of U and H (first and second order, forward mode, forward over
//! reverse) real and complex, repeated singular values, dtypes and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, both_paths, check2, check_fwd, close, crandn, max_abs, randn};
use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
use cotangent::linalg::{eigvalsh, polar, Uplo};
use cotangent::{DType, Error, Tensor};

#[test]
fn invariants_real_and_complex() {
    for shape in [vec![3, 3], vec![5, 3], vec![2, 4, 2], vec![30, 20], vec![1, 1]] {
        for a in [randn(&shape, 1), crandn(&shape, 2)] {
            let p = polar(&a).unwrap();
            let n = shape[shape.len() - 1];
            assert_close(&p.u.matmul(&p.h).unwrap(), &a, 1e-12);
            let eye = Tensor::eye(n, a.dtype()).unwrap().broadcast_to(p.h.shape().clone()).unwrap();
            assert_close(&p.u.mH().unwrap().matmul(&p.u).unwrap(), &eye, 1e-13);
            assert_close(&p.h, &p.h.mH().unwrap(), 1e-13);
            let w = eigvalsh(&p.h, Uplo::Lower).unwrap();
            assert!(w.to_vec_f64().iter().all(|&x| x > -1e-12), "{w:?}");
        }
    }
    // U is the nearest matrix with orthonormal columns: closer to A than a random one
    let a = randn(&[4, 3], 3);
    let u = polar(&a).unwrap().u;
    let q =
        cotangent::linalg::qr(&randn(&[4, 3], 4), cotangent::linalg::QrMode::Reduced).unwrap().q;
    let dist = |x: &Tensor| max_abs(&x.sub(&a).unwrap().square().unwrap().sum().unwrap());
    assert!(dist(&u) <= dist(&q));
}

#[test]
fn values_gradient_and_tangent_are_pytorchs() {
    let a = Tensor::from_vec(
        vec![2.0f64, -1.0, 0.5, 1.0, 3.0, 0.25, 0.5, 0.25, 2.0, 1.0, 0.0, -1.0],
        (4, 3),
    )
    .unwrap()
    .with_requires_grad(true)
    .unwrap();
    let p = polar(&a).unwrap();
    let want_u = [
        0.8204910464484205,
        -0.37226402546722476,
        0.1473249895688346,
        0.32887061326649003,
        0.9273389785955235,
        0.020255939002995965,
        0.10957795034751588,
        0.03739062322588038,
        0.8601284370518436,
        0.4545670855059078,
        -0.007990958336085412,
        -0.48791814493663027,
    ];
    let want_h = [
        2.479208766842996,
        0.1935152809379284,
        0.2570519917299567,
        0.1935152809379284,
        3.163628617060265,
        0.12847493670311427,
        0.2570519917299567,
        0.12847493670311427,
        2.2869014985754843,
    ];
    close(&p.u.to_vec_f64(), &want_u, 1e-14);
    close(&p.h.to_vec_f64(), &want_h, 1e-14);
    let wu = Tensor::from_vec(
        vec![1.0f64, -2.0, 0.5, 0.25, 1.5, -1.0, 2.0, 0.0, -0.5, 0.5, 1.0, 1.0],
        (4, 3),
    )
    .unwrap();
    let wh =
        Tensor::from_vec(vec![1.0f64, 0.5, -1.0, 2.0, -0.5, 0.0, 0.25, 1.0, 1.5], (3, 3)).unwrap();
    let want_g = [
        0.09903983772641206,
        0.9039542945422429,
        -0.5173945730210489,
        1.6854851511010391,
        -0.2014663530455722,
        0.2483970622314427,
        0.20602134410644873,
        0.7262406778102655,
        1.3147520234895702,
        0.752049100990499,
        0.47770552860303506,
        -0.9024834100288894,
    ];
    let (fused, recorded) = both_paths(&[&p.u, &p.h], &[Some(&wu), Some(&wh)], &a);
    close(&fused.unwrap().to_vec_f64(), &want_g, 1e-13);
    close(&recorded.unwrap().to_vec_f64(), &want_g, 1e-13);
    let da = Tensor::from_vec(
        vec![0.5f64, -1.0, 0.0, 2.0, 1.0, 0.5, 0.25, -0.5, 1.5, 1.0, 1.0, -2.0],
        (4, 3),
    )
    .unwrap();
    let _level = dual_level();
    let q = polar(&make_dual(&a.detach(), &da).unwrap()).unwrap();
    let du = unpack_dual(&q.u).unwrap().1.unwrap();
    let dh = unpack_dual(&q.h).unwrap().1.unwrap();
    let want_du = [
        -0.15743604325202443,
        -0.3818295711124178,
        -0.018276970855636537,
        0.25145347273615243,
        -0.14549491982475843,
        0.29877673915212594,
        0.1634107282597969,
        -0.15509413157862625,
        -0.19560207492503554,
        0.06285759425480886,
        0.17760530658673784,
        -0.3379328271295605,
    ];
    let want_dh = [
        1.631092667466791,
        0.8608068206756504,
        -0.332222730034484,
        0.8608068206756505,
        1.1794880128572096,
        -0.17934474444763604,
        -0.33222273003448377,
        -0.17934474444763604,
        2.2884412915922234,
    ];
    close(&du.to_vec_f64(), &want_du, 1e-13);
    close(&dh.to_vec_f64(), &want_dh, 1e-13);
}

#[test]
fn gradients_first_and_second_order_both_modes() {
    let both = |x: &[Tensor]| {
        let p = polar(&x[0])?;
        Ok(vec![p.u, p.h])
    };
    let u_only = |x: &[Tensor]| Ok(vec![polar(&x[0])?.u]);
    let h_only = |x: &[Tensor]| Ok(vec![polar(&x[0])?.h]);
    for shape in [vec![3, 3], vec![5, 3], vec![2, 4, 2]] {
        let a = randn(&shape, 5).with_requires_grad(true).unwrap();
        check2("polar", std::slice::from_ref(&a), both);
        check2("polar U", std::slice::from_ref(&a), u_only);
        check2("polar H", std::slice::from_ref(&a), h_only);
        check_fwd("polar", std::slice::from_ref(&a), both);
        let z = crandn(&shape, 6).with_requires_grad(true).unwrap();
        check2("polar complex", std::slice::from_ref(&z), both);
        check_fwd("polar complex", std::slice::from_ref(&z), both);
    }
}

#[test]
fn gradient_at_repeated_singular_values_is_finite() {
    // an orthogonal A (every singular value 1): U = A, H = I, and the gradient is
    // finite (the rules have no singular value gaps); checked by finite differences
    let q = cotangent::linalg::qr(&randn(&[4, 4], 7), cotangent::linalg::QrMode::Reduced)
        .unwrap()
        .q
        .with_requires_grad(true)
        .unwrap();
    let p = polar(&q).unwrap();
    assert_close(&p.u, &q, 1e-14);
    let f = |x: &[Tensor]| {
        let p = polar(&x[0])?;
        Ok(vec![p.u, p.h])
    };
    let opts = cotangent::autograd::GradcheckOptions::default();
    let r = cotangent::autograd::gradcheck(f, &[q], &opts).unwrap();
    assert!(r.passed, "{r}");
}

#[test]
fn dtypes_empty_and_errors() {
    let a = randn(&[4, 3], 8);
    let p64 = polar(&a).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 3e-2), (DType::F16, 3e-3)] {
        let p = polar(&a.to_dtype(dt).unwrap()).unwrap();
        assert_eq!((p.u.dtype(), p.h.dtype()), (dt, dt));
        assert_close(&p.u.to_dtype(DType::F64).unwrap(), &p64.u, tol);
        assert_close(&p.h.to_dtype(DType::F64).unwrap(), &p64.h, tol);
    }
    for (shape, u, h) in [
        (vec![0, 0], vec![0, 0], vec![0, 0]),
        (vec![3, 0], vec![3, 0], vec![0, 0]),
        (vec![2, 0, 0], vec![2, 0, 0], vec![2, 0, 0]),
    ] {
        let p = polar(&Tensor::zeros(shape, DType::F64).unwrap()).unwrap();
        assert_eq!((p.u.dims(), p.h.dims()), (&u[..], &h[..]));
    }
    let op = "linalg.polar";
    let named = |r: cotangent::Result<cotangent::linalg::Polar>| {
        let e = r.unwrap_err();
        assert!(e.to_string().starts_with(op), "{e}");
        e
    };
    assert!(matches!(named(polar(&randn(&[3], 1))), Error::BadShape { .. }));
    assert!(matches!(named(polar(&randn(&[2, 3], 1))), Error::InvalidArgument { .. }));
    let i = Tensor::eye(2, DType::I64).unwrap();
    assert!(matches!(named(polar(&i)), Error::UnsupportedDType { .. }));
    let nan = Tensor::full((2, 2), f64::NAN, DType::F64).unwrap();
    assert!(matches!(named(polar(&nan)), Error::NoConvergence { .. }));
}
