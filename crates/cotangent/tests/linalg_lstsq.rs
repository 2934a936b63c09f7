//! `linalg.lstsq`: which outputs each driver fills (PyTorch 2.15's CPU table), solutions
//! (normal equations, minimum norm, rank-deficient, rcond), shapes with vector and
//! broadcast right-hand sides, gradients (first and second order), and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg};
use cotangent::linalg::{lstsq, pinv, LstsqDriver, LstsqOptions, PinvOptions};
use cotangent::{DType, Error, Tensor};

const DRIVERS: [Option<LstsqDriver>; 5] = [
    None,
    Some(LstsqDriver::Gels),
    Some(LstsqDriver::Gelsy),
    Some(LstsqDriver::Gelsd),
    Some(LstsqDriver::Gelss),
];

/// `(residuals, rank, singular_values)` shapes for `a: (5, 3)`, `b: (5, 2)`, full rank,
/// as PyTorch 2.15 fills them.
#[test]
fn outputs_per_driver_as_pytorch() {
    let (a, b) = (randn(&[5, 3], 1), randn(&[5, 2], 2));
    let expect: [(&[usize], &[usize], &[usize]); 5] = [
        (&[0], &[], &[0]),
        (&[2], &[0], &[0]),
        (&[0], &[], &[0]),
        (&[2], &[], &[3]),
        (&[2], &[], &[3]),
    ];
    let x_ref = pinv(&a, PinvOptions::default()).unwrap().matmul(&b).unwrap();
    for (d, (res, rank, sv)) in DRIVERS.iter().zip(expect) {
        let r = lstsq(&a, &b, LstsqOptions { rcond: None, driver: *d }).unwrap();
        assert_eq!(r.solution.dims(), &[3, 2]);
        assert_close(&r.solution, &x_ref, 1e-12);
        assert_eq!((r.residuals.dims(), r.rank.dims(), r.singular_values.dims()), (res, rank, sv));
        assert_eq!(r.rank.dtype(), DType::I64);
        if rank != [0] {
            assert_eq!(r.rank.to_vec::<i64>().unwrap(), vec![3], "{d:?}");
        }
        if res == [2] {
            let e = a.matmul(&r.solution).unwrap().sub(&b).unwrap();
            let want = e.mul(&e).unwrap().sum_dims(&[-2], false).unwrap();
            assert_close(&r.residuals, &want, 1e-12);
        }
    }
    // wide and square: no residuals for any driver
    for (m, n) in [(3, 5), (3, 3)] {
        let (a, b) = (randn(&[m, n], 3), randn(&[m, 2], 4));
        let x_ref = pinv(&a, PinvOptions::default()).unwrap().matmul(&b).unwrap();
        for d in DRIVERS {
            let r = lstsq(&a, &b, LstsqOptions { rcond: None, driver: d }).unwrap();
            assert_eq!(r.residuals.dims(), &[0]);
            // the minimum-norm solution (gels' LQ too)
            assert_close(&r.solution, &x_ref, 1e-11);
        }
    }
}

#[test]
fn rank_deficient_and_rcond() {
    // a rank-2 tall matrix: minimum-norm solution, rank 2, no residuals (not full rank),
    // except gels (which assumes full rank and still reports them)
    let a = randn(&[5, 2], 5).matmul(&randn(&[2, 3], 6)).unwrap();
    let b = randn(&[5, 2], 7);
    let x_ref = pinv(&a, PinvOptions::default()).unwrap().matmul(&b).unwrap();
    for d in [None, Some(LstsqDriver::Gelsd), Some(LstsqDriver::Gelss)] {
        let r = lstsq(&a, &b, LstsqOptions { rcond: None, driver: d }).unwrap();
        assert_close(&r.solution, &x_ref, 1e-10);
        assert_eq!(r.rank.to_vec::<i64>().unwrap(), vec![2]);
        assert_eq!(r.residuals.dims(), &[0]);
    }
    assert_eq!(lstsq(&a, &b, LstsqDriver::Gels).unwrap().residuals.dims(), &[2]);
    // PyTorch 2.15 on diag(1, 1e-3, 1e-9), b = 1: rank and solution per rcond
    let d = Tensor::from_vec(vec![1.0f64, 1e-3, 1e-9], 3).unwrap().diag_embed(0, -2, -1).unwrap();
    let ones = Tensor::ones((3, 1), DType::F64).unwrap();
    for drv in [LstsqDriver::Gelsy, LstsqDriver::Gelsd, LstsqDriver::Gelss] {
        for (rc, rank, x) in [
            (None, 3, [1.0, 1000.0, 1e9]),
            (Some(1e-6), 2, [1.0, 1000.0, 0.0]),
            (Some(1e-2), 1, [1.0, 0.0, 0.0]),
            (Some(-1.0), 3, [1.0, 1000.0, 1e9]),
        ] {
            let r = lstsq(&d, &ones, LstsqOptions { rcond: rc, driver: Some(drv) }).unwrap();
            assert_eq!(r.rank.to_vec::<i64>().unwrap(), vec![rank], "{drv:?} {rc:?}");
            common::close(&r.solution.to_vec_f64(), &x, 1e-9);
        }
    }
    // f32: the default rcond is max(m, n) · eps(f32)
    let d32 = Tensor::from_vec(vec![1.0f32, 1e-3, 1e-7], 3).unwrap().diag_embed(0, -2, -1).unwrap();
    let r = lstsq(&d32, &ones.to_dtype(DType::F32).unwrap(), LstsqDriver::Gelsd);
    assert_eq!(r.unwrap().rank.to_vec::<i64>().unwrap(), vec![2]);
    // a zero matrix: a zero solution (LAPACK), every driver
    let z = Tensor::zeros((3, 3), DType::F64).unwrap();
    for d in DRIVERS {
        let r = lstsq(
            &z,
            &Tensor::ones((3, 2), DType::F64).unwrap(),
            LstsqOptions { rcond: None, driver: d },
        )
        .unwrap();
        assert_eq!(max_abs(&r.solution), 0.0, "{d:?}");
    }
}

#[test]
fn gelsy_batches_mixing_full_rank_and_rank_deficient_matrices() {
    // Gelsy takes full-rank matrices through QR and the others through the SVD, matrix
    // by matrix: ranks and solutions as the SVD drivers give them
    for (m, n) in [(6, 4), (4, 4), (3, 5)] {
        let full = randn(&[m, n], 50);
        let low = randn(&[m, 1], 51).matmul(&randn(&[1, n], 52)).unwrap();
        let a = Tensor::stack(&[&full, &low, &full.mul_scalar(3.0).unwrap()], 0).unwrap();
        let b = randn(&[3, m, 2], 53);
        let y = lstsq(&a, &b, LstsqOptions::default()).unwrap();
        let z = lstsq(&a, &b, LstsqDriver::Gelsd).unwrap();
        let k = m.min(n) as i64;
        assert_eq!(y.rank.to_vec::<i64>().unwrap(), vec![k, 1, k]);
        assert_eq!(z.rank.to_vec::<i64>().unwrap(), vec![k, 1, k]);
        assert_close(&y.solution, &z.solution, 1e-10);
        let want = pinv(&a, PinvOptions::default()).unwrap().matmul(&b).unwrap();
        assert_close(&y.solution, &want, 1e-10);
    }
}

#[test]
fn shapes_vector_broadcast_and_empty() {
    // PyTorch: rank and singular values keep A's batch, solution and residuals broadcast
    let a = randn(&[1, 5, 3], 8);
    let b = randn(&[4, 5, 2], 9);
    let r = lstsq(&a, &b, LstsqDriver::Gelsd).unwrap();
    assert_eq!(r.solution.dims(), &[4, 3, 2]);
    assert_eq!(r.residuals.dims(), &[4, 2]);
    assert_eq!(r.rank.dims(), &[1]);
    assert_eq!(r.singular_values.dims(), &[1, 3]);
    let r =
        lstsq(&randn(&[2, 1, 5, 3], 1), &randn(&[1, 4, 5, 2], 2), LstsqOptions::default()).unwrap();
    assert_eq!((r.solution.dims(), r.rank.dims()), (&[2, 4, 3, 2][..], &[2, 1][..]));
    // vector b: (m,) with a (m, n); (*, m) with a (*, m, n); residuals keep a 1
    let a = randn(&[5, 3], 10);
    let v = randn(&[5], 11);
    let r = lstsq(&a, &v, LstsqDriver::Gelsd).unwrap();
    assert_eq!(
        (r.solution.dims(), r.residuals.dims(), r.rank.dims()),
        (&[3][..], &[1][..], &[][..])
    );
    let want = lstsq(&a, &v.unsqueeze(-1).unwrap(), LstsqOptions::default()).unwrap().solution;
    assert_close(&r.solution, &want.squeeze_dim(-1).unwrap(), 1e-12);
    let r = lstsq(&randn(&[2, 5, 3], 12), &randn(&[2, 5], 13), LstsqDriver::Gels);
    let r = r.unwrap();
    assert_eq!((r.solution.dims(), r.residuals.dims()), (&[2, 3][..], &[2, 1][..]));
    // empty
    for (am, bm, sol) in
        [([0, 3], [0, 2], [3, 2]), ([3, 0], [3, 2], [0, 2]), ([3, 3], [3, 0], [3, 0])]
    {
        let r = lstsq(
            &Tensor::zeros(am.to_vec(), DType::F64).unwrap(),
            &Tensor::zeros(bm.to_vec(), DType::F64).unwrap(),
            LstsqOptions::default(),
        )
        .unwrap();
        assert_eq!(r.solution.dims(), &sol);
        assert_eq!(r.rank.to_vec::<i64>().unwrap(), vec![0]);
    }
    // (3, 0) with gelsd: m > n and rank 0 == n: residuals are ‖b‖²
    let b = randn(&[3, 2], 14);
    let r = lstsq(&Tensor::zeros((3, 0), DType::F64).unwrap(), &b, LstsqDriver::Gelsd);
    let want = b.mul(&b).unwrap().sum_dims(&[-2], false).unwrap();
    assert_close(&r.unwrap().residuals, &want, 1e-12);
    // dtypes
    let (a, b) = (randn(&[2, 5, 3], 15), randn(&[2, 5, 2], 16));
    let x64 = lstsq(&a, &b, LstsqOptions::default()).unwrap().solution;
    for (dt, tol) in [(DType::F32, 1e-4), (DType::Bf16, 1e-1)] {
        let r = lstsq(&a.to_dtype(dt).unwrap(), &b.to_dtype(dt).unwrap(), LstsqOptions::default())
            .unwrap();
        assert_eq!(r.solution.dtype(), dt);
        assert_close(&r.solution.to_dtype(DType::F64).unwrap(), &x64, tol);
    }
}

#[test]
fn gradients_first_and_second_order() {
    for (ad, bd) in [
        (vec![5, 3], vec![5, 2]),
        (vec![3, 5], vec![3, 2]),
        (vec![3, 3], vec![3, 1]),
        (vec![2, 4, 3], vec![2, 4, 2]),
        (vec![1, 4, 3], vec![2, 4, 2]),
        (vec![4, 3], vec![4]),
    ] {
        for d in [Some(LstsqDriver::Gels), None, Some(LstsqDriver::Gelsd)] {
            let a = rg(randn(&ad, 41));
            let b = rg(randn(&bd, 42));
            check2(&format!("lstsq {ad:?} {bd:?} {d:?}"), &[a, b], move |x| {
                Ok(vec![lstsq(&x[0], &x[1], LstsqOptions { rcond: None, driver: d })?.solution])
            });
        }
    }
    // the residuals, where a driver returns them (tall, full rank; not gelsy), as PyTorch:
    // alone and with the solution, batched, broadcast and with a vector b
    for (ad, bd) in [
        (vec![5, 3], vec![5, 2]),
        (vec![2, 4, 3], vec![2, 4, 2]),
        (vec![1, 4, 3], vec![2, 4, 2]),
        (vec![4, 3], vec![4]),
        (vec![6, 1], vec![6, 3]),
    ] {
        for d in [LstsqDriver::Gels, LstsqDriver::Gelsd, LstsqDriver::Gelss] {
            let a = rg(randn(&ad, 43));
            let b = rg(randn(&bd, 44));
            check2(&format!("lstsq residuals {ad:?} {bd:?} {d:?}"), &[a, b], move |x| {
                let r = lstsq(&x[0], &x[1], d)?;
                assert!(r.residuals.numel() > 0, "residuals returned");
                Ok(vec![r.residuals, r.solution])
            });
        }
    }
    // rank and singular values carry no history; residuals do
    let a = rg(randn(&[5, 3], 1));
    let r = lstsq(&a, &randn(&[5, 2], 2), LstsqDriver::Gelsd).unwrap();
    assert!(r.solution.requires_grad() && r.residuals.requires_grad());
    assert!(!r.singular_values.requires_grad());
}

#[test]
fn residual_gradient_is_two_r_xt() {
    // the closed form, against values computed here: gA = 2 R diag(g) Xᵀ, gB = −2 R diag(g)
    let a = rg(randn(&[6, 3], 5));
    let b = rg(randn(&[6, 2], 6));
    let r = lstsq(&a, &b, LstsqDriver::Gelsd).unwrap();
    let g = Tensor::from_vec(vec![0.7f64, -1.3], 2).unwrap();
    let grads = r.residuals.mul(&g).unwrap().sum().unwrap().backward().unwrap();
    let (av, bv, xv) = (a.to_vec_f64(), b.to_vec_f64(), r.solution.to_vec_f64());
    let res: Vec<f64> = (0..6)
        .flat_map(|i| (0..2).map(move |j| (i, j)))
        .map(|(i, j)| (0..3).map(|p| av[i * 3 + p] * xv[p * 2 + j]).sum::<f64>() - bv[i * 2 + j])
        .collect();
    let gv = [0.7, -1.3];
    let want_a: Vec<f64> = (0..6)
        .flat_map(|i| (0..3).map(move |p| (i, p)))
        .map(|(i, p)| (0..2).map(|j| 2.0 * res[i * 2 + j] * gv[j] * xv[p * 2 + j]).sum())
        .collect();
    let want_b: Vec<f64> = (0..12).map(|k| -2.0 * res[k] * gv[k % 2]).collect();
    let ga = grads.get(&a).unwrap().to_vec_f64();
    let gb = grads.get(&b).unwrap().to_vec_f64();
    for (x, y) in ga.iter().zip(&want_a).chain(gb.iter().zip(&want_b)) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
}

#[test]
fn errors_name_the_op() {
    let a = randn(&[5, 3], 1);
    let e = lstsq(&randn(&[5], 1), &randn(&[5, 2], 1), LstsqOptions::default()).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.lstsq", .. }), "{e:?}");
    for b in [randn(&[4, 2], 2), randn(&[2, 5, 2], 2), randn(&[4], 2)] {
        let e = lstsq(&a, &b, LstsqOptions::default()).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { op: "linalg.lstsq", .. }), "{e:?}");
    }
    let e =
        lstsq(&randn(&[2, 5, 3], 1), &randn(&[3, 5, 2], 2), LstsqOptions::default()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "linalg.lstsq", .. }), "{e:?}");
    let e = lstsq(&a, &randn(&[5, 2], 2).to_dtype(DType::F32).unwrap(), LstsqOptions::default())
        .unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "linalg.lstsq", .. }), "{e:?}");
    let i = a.to_dtype(DType::I64).unwrap();
    let e = lstsq(&i, &i, LstsqOptions::default()).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDType { op: "linalg.lstsq", .. }), "{e:?}");
    let nan = Tensor::from_vec(vec![f64::NAN, 1.0, 0.0, 1.0], (2, 2)).unwrap();
    let e = lstsq(&nan, &randn(&[2, 1], 3), LstsqOptions::default()).unwrap_err();
    assert!(matches!(e, Error::NoConvergence { op: "linalg.svd", .. }), "{e:?}");
}

#[test]
fn non_contiguous_inputs() {
    let a = randn(&[2, 3, 5], 61).mT().unwrap(); // (2, 5, 3), transposed view
    let b = randn(&[2, 5, 4], 62).narrow(-1, 1, 2).unwrap(); // sliced
    for d in DRIVERS {
        let r = lstsq(&a, &b, LstsqOptions { rcond: None, driver: d }).unwrap();
        let c = lstsq(
            &a.contiguous().unwrap(),
            &b.contiguous().unwrap(),
            LstsqOptions { rcond: None, driver: d },
        )
        .unwrap();
        assert_close(&r.solution, &c.solution, 1e-12);
        assert_eq!(r.residuals.dims(), c.residuals.dims());
    }
}
