//! Autocast regions: PyTorch's CPU policy (which ops run in the region's dtype, which in
//! f32, which in their inputs' dtype), values against an explicit rounding, backward in
//! the forward's dtypes, scoping and errors, and a model trained under bf16.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::randn;
use cotangent::linalg::{self, Side, Uplo};
use cotangent::optim::{Adam, Optimizer, Param};
use cotangent::{autocast, autocast_dtype, DType, Error, Result, Tensor};

fn f32s(shape: &[usize], seed: u64) -> Tensor {
    randn(shape, seed).to_dtype(DType::F32).unwrap()
}

fn spd32(n: usize, seed: u64) -> Tensor {
    let x = randn(&[n, n], seed);
    let eye = Tensor::eye(n, DType::F64).unwrap().mul_scalar(n as f64).unwrap();
    x.matmul(&x.mT().unwrap()).unwrap().add(&eye).unwrap().to_dtype(DType::F32).unwrap()
}

#[test]
fn the_product_family_runs_in_the_region_dtype() {
    let (a, b) = (f32s(&[3, 4], 1), f32s(&[4, 2], 2));
    let (v, w) = (f32s(&[4], 3), f32s(&[4], 4));
    let s = f32s(&[3, 4], 5);
    let bat = (f32s(&[2, 3, 4], 6), f32s(&[2, 4, 2], 7));
    for dt in [DType::Bf16, DType::F16] {
        let outs: Vec<(&str, Tensor)> = autocast(dt, || {
            Ok(vec![
                ("matmul", a.matmul(&b)?),
                ("mm", a.mm(&b)?),
                ("bmm", bat.0.bmm(&bat.1)?),
                ("linear", a.linear(&b.mT()?, Some(&f32s(&[2], 8)))?),
                ("addmm", f32s(&[3, 2], 9).addmm(&a, &b, 1.0, 1.0)?),
                ("baddbmm", f32s(&[2, 3, 2], 10).baddbmm(&bat.0, &bat.1, 0.5, 2.0)?),
                ("addbmm", f32s(&[3, 2], 11).addbmm(&bat.0, &bat.1, 1.0, 1.0)?),
                ("vecdot", a.vecdot(&s, -1)?),
                ("multi_dot", Tensor::multi_dot(&[&a, &b, &b.mT()?])?),
                // composites PyTorch builds on matmul inherit it
                ("inner", a.inner(&s)?),
                ("matrix_power", spd32(3, 12).matrix_power(3)?),
                ("pinv", linalg::pinv(&a, linalg::PinvOptions::default())?),
            ])
        })
        .unwrap();
        for (name, t) in outs {
            assert_eq!(t.dtype(), dt, "{name} under {dt:?}");
        }
    }
    // f64 is left alone, as PyTorch's autocast leaves it
    let a64 = randn(&[3, 3], 13);
    let y = autocast(DType::Bf16, || a64.matmul(&a64)).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    // ops off the list keep their inputs' dtype (PyTorch: mv, dot, addmv, outer, kron)
    let outs = autocast(DType::Bf16, || {
        Ok(vec![
            a.mv(&v)?,
            v.dot(&w)?,
            f32s(&[3], 14).addmv(&a, &v, 1.0, 1.0)?,
            v.outer(&w)?,
            a.kron(&b)?,
            a.exp()?,
            a.add(&s)?,
            linalg::det(&spd32(3, 15))?,
            linalg::matrix_exp(&spd32(3, 16))?,
        ])
    })
    .unwrap();
    assert!(outs.iter().all(|t| t.dtype() == DType::F32));
}

#[test]
fn the_listed_decompositions_run_in_f32() {
    let a = spd32(4, 20).to_dtype(DType::Bf16).unwrap();
    let b = f32s(&[4, 2], 21).to_dtype(DType::Bf16).unwrap();
    let outs = autocast(DType::Bf16, || {
        let l = linalg::cholesky(&a, Uplo::Lower)?;
        let q = linalg::qr(&a, linalg::QrMode::Reduced)?;
        let e = linalg::eigh(&a, Uplo::Lower)?;
        let s = linalg::svd(&a, false)?;
        Ok(vec![
            l.clone(),
            linalg::cholesky_ex(&a, Uplo::Lower)?.l,
            linalg::cholesky_solve(&b, &l.to_dtype(DType::Bf16)?, Uplo::Lower)?,
            linalg::cholesky_inverse(&l.to_dtype(DType::Bf16)?, Uplo::Lower)?,
            linalg::solve(&a, &b, Side::Left)?,
            linalg::inv(&a)?,
            linalg::inv_ex(&a)?.inverse,
            q.q,
            q.r,
            e.eigenvalues,
            e.eigenvectors,
            linalg::eigvalsh(&a, Uplo::Lower)?,
            s.u,
            s.s,
            linalg::svdvals(&a)?,
            linalg::lstsq(&a, &b, linalg::LstsqOptions::default())?.solution,
            linalg::cond(&a, None)?,
            a.trace()?,
            a.prod()?,
            a.prod_dims(&[0], false)?,
        ])
    })
    .unwrap();
    for (i, t) in outs.iter().enumerate() {
        assert_eq!(t.dtype(), DType::F32, "output {i}");
    }
    // mixed inputs of one op: both taken to f32 (PyTorch: solve(f32, bf16) is f32)
    let x = autocast(DType::Bf16, || linalg::solve(&spd32(4, 22), &b, Side::Left)).unwrap();
    assert_eq!(x.dtype(), DType::F32);
    // ops on neither list promote mixed inputs as PyTorch does
    let m = autocast(DType::Bf16, || {
        Ok(vec![
            f32s(&[2, 2], 23).add(&b.narrow(0, 0, 2)?)?,
            Tensor::cat(&[&f32s(&[2, 2], 24), &b.narrow(0, 0, 2)?], 0)?,
        ])
    })
    .unwrap();
    assert!(m.iter().all(|t| t.dtype() == DType::F32));
}

#[test]
fn reduced_products_are_f32_products_of_rounded_inputs_rounded_once() {
    let (a, b) = (f32s(&[17, 33], 30), f32s(&[33, 9], 31));
    let y = autocast(DType::Bf16, || a.matmul(&b)).unwrap();
    let ar = a.to_dtype(DType::Bf16).unwrap().to_dtype(DType::F32).unwrap();
    let br = b.to_dtype(DType::Bf16).unwrap().to_dtype(DType::F32).unwrap();
    let want = ar.matmul(&br).unwrap().to_dtype(DType::Bf16).unwrap();
    assert_eq!(y.to_vec_f64(), want.to_vec_f64());
}

#[test]
fn backward_runs_in_the_forward_dtypes_and_reaches_f32_leaves() {
    let w = f32s(&[4, 3], 40).with_requires_grad(true).unwrap();
    let x = f32s(&[5, 3], 41);
    let loss = |x: &Tensor| -> Result<Tensor> {
        let h = x.linear(&w, None)?; // bf16
        h.to_dtype(DType::F32)?.square()?.sum()
    };
    let l = autocast(DType::Bf16, || loss(&x)).unwrap();
    let g = l.backward().unwrap().get(&w).unwrap().clone();
    assert_eq!(g.dtype(), DType::F32);
    // the gradient a bf16 matmul backward gives: Gᵀ X of bf16 operands, G = 2 H rounded
    let xb = x.to_dtype(DType::Bf16).unwrap();
    let hb = autocast(DType::Bf16, || x.linear(&w.detach(), None)).unwrap();
    let gh =
        hb.to_dtype(DType::F32).unwrap().mul_scalar(2.0).unwrap().to_dtype(DType::Bf16).unwrap();
    let want = gh.mT().unwrap().matmul(&xb).unwrap().to_vec_f64();
    let got = g.to_vec_f64();
    let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (x, y) in got.iter().zip(&want) {
        assert!((x - y).abs() <= 8e-3 * scale, "{x} vs {y}");
    }
    // a backward called inside a region is unaffected by it
    let l2 = autocast(DType::Bf16, || loss(&x)).unwrap();
    let g2 = autocast(DType::Bf16, || Ok(l2.backward()?.get(&w).unwrap().clone())).unwrap();
    assert_eq!(g2.to_vec_f64(), g.to_vec_f64());
}

#[test]
fn regions_nest_restore_and_refuse_other_dtypes() {
    assert_eq!(autocast_dtype(), None);
    autocast(DType::Bf16, || {
        assert_eq!(autocast_dtype(), Some(DType::Bf16));
        autocast(DType::F16, || {
            assert_eq!(autocast_dtype(), Some(DType::F16));
            Ok(())
        })?;
        assert_eq!(autocast_dtype(), Some(DType::Bf16));
        Ok(())
    })
    .unwrap();
    assert_eq!(autocast_dtype(), None);
    // an error inside restores the state, and is returned
    let e = autocast(DType::Bf16, || f32s(&[2, 3], 1).matmul(&f32s(&[2, 3], 2))).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "matmul", .. }), "{e:?}");
    assert_eq!(autocast_dtype(), None);
    // as does a panic
    let r = std::panic::catch_unwind(|| {
        autocast(DType::Bf16, || -> Result<()> { panic!("inside") }).unwrap();
    });
    assert!(r.is_err());
    assert_eq!(autocast_dtype(), None);
    for dt in [DType::F32, DType::F64, DType::I64] {
        let e = autocast(dt, || Ok(())).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { op: "autocast", .. }), "{e:?}");
    }
    // regions are per thread
    autocast(DType::Bf16, || {
        std::thread::spawn(|| assert_eq!(autocast_dtype(), None)).join().unwrap();
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_model_trains_under_bf16_with_f32_parameters() {
    // two linear layers, then a Cholesky-based loss: the negative log-likelihood of a
    // Gaussian process with the covariance K = H Hᵀ / d + I built from the features
    let n = 12;
    let x = f32s(&[n, 3], 50);
    let y = f32s(&[n, 1], 51);
    let mut params = vec![
        Param::new(&f32s(&[8, 3], 52).mul_scalar(0.5).unwrap()).unwrap(),
        Param::new(&Tensor::zeros(8, DType::F32).unwrap()).unwrap(),
        Param::new(&f32s(&[4, 8], 53).mul_scalar(0.3).unwrap()).unwrap(),
        Param::new(&Tensor::zeros(4, DType::F32).unwrap()).unwrap(),
    ];
    let nll = |p: &[Tensor]| -> Result<Tensor> {
        autocast(DType::Bf16, || {
            let h = x.linear(&p[0], Some(&p[1]))?.tanh()?;
            let h = h.linear(&p[2], Some(&p[3]))?; // bf16
            assert_eq!(h.dtype(), DType::Bf16);
            let k = h.matmul(&h.mT()?)?.to_dtype(DType::F32)?.div_scalar(4.0)?;
            let k = k.add(&Tensor::eye(n, DType::F32)?)?;
            let l = linalg::cholesky(&k, Uplo::Lower)?; // f32
            let alpha = linalg::cholesky_solve(&y, &l, Uplo::Lower)?;
            let fit = y.mul(&alpha)?.sum()?;
            let logdet = l.diagonal(0, -2, -1)?.log()?.sum()?.mul_scalar(2.0)?;
            fit.add(&logdet)
        })
    };
    let start = nll(&params.iter().map(|p| p.tensor().clone()).collect::<Vec<_>>())
        .unwrap()
        .to_vec_f64()[0];
    let mut adam = Adam::new(0.05);
    let mut last = start;
    for _ in 0..20 {
        last = adam.step(&mut params, nll).unwrap();
        assert!(params.iter().all(|p| p.tensor().dtype() == DType::F32));
    }
    assert!(last < start - 0.5, "the loss went from {start} to {last}");
}
