//! `linalg.pinv` and `linalg.matrix_rank`: the Moore–Penrose conditions over a size
//! sweep, PyTorch's tolerance rules, `hermitian` (reads the lower triangle), gradients
//! (first and second order), and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg};
use cotangent::linalg::{matrix_rank, pinv, PinvOptions};
use cotangent::{DType, Error, Tensor};

const SIZES: [usize; 7] = [0, 1, 2, 3, 5, 17, 64];

fn diag3(d: [f64; 3]) -> Tensor {
    Tensor::from_vec(d.to_vec(), 3).unwrap().diag_embed(0, -2, -1).unwrap()
}

#[test]
fn moore_penrose_conditions_over_a_size_sweep() {
    for &s in &SIZES {
        for (m, n) in [(s, s), (s + s / 2 + 1, s), (s, s + s / 2 + 1)] {
            for batch in [vec![], vec![2]] {
                let mut shape = batch.clone();
                shape.extend([m, n]);
                let a = randn(&shape, (7 * m + n) as u64);
                let p = pinv(&a, PinvOptions::default()).unwrap();
                let mut pd = batch.clone();
                pd.extend([n, m]);
                assert_eq!(p.dims(), &pd[..]);
                let tol = 1e-10 * (1.0 + max_abs(&p)).powi(2);
                let what = format!("{shape:?}");
                let apa = a.matmul(&p).unwrap().matmul(&a).unwrap();
                assert!(max_abs(&apa.sub(&a).unwrap()) < tol, "{what}: A P A = A");
                let pap = p.matmul(&a).unwrap().matmul(&p).unwrap();
                assert!(max_abs(&pap.sub(&p).unwrap()) < tol, "{what}: P A P = P");
                for x in [a.matmul(&p).unwrap(), p.matmul(&a).unwrap()] {
                    assert!(max_abs(&x.sub(&x.mT().unwrap()).unwrap()) < tol, "{what}: sym");
                }
                let r = matrix_rank(&a, PinvOptions::default()).unwrap();
                assert_eq!(r.dtype(), DType::I64);
                assert_eq!(r.dims(), &batch[..]);
                assert!(r.to_vec::<i64>().unwrap().iter().all(|&x| x == m.min(n) as i64));
            }
        }
    }
}

#[test]
fn tolerances_follow_pytorch() {
    // PyTorch 2.15 on diag(1, 1e-3, 1e-17): the diagonal of pinv and the rank
    let a = diag3([1.0, 1e-3, 1e-17]);
    for (atol, rtol, diag, rank) in [
        (None, None, [1.0, 1000.0, 0.0], 2),
        (Some(0.0), None, [1.0, 1000.0, 0.0], 2),
        (Some(1e-2), None, [1.0, 0.0, 0.0], 1),
        (None, Some(1e-2), [1.0, 0.0, 0.0], 1),
        (Some(1e-4), Some(1e-2), [1.0, 0.0, 0.0], 1),
        (Some(-1.0), None, [1.0, 1000.0, 0.0], 2),
        (Some(1e-4), Some(0.0), [1.0, 1000.0, 0.0], 2),
    ] {
        let p = pinv(&a, PinvOptions { atol, rtol, ..Default::default() }).unwrap();
        let d = p.diagonal(0, -2, -1).unwrap().to_vec_f64();
        common::close(&d, &diag, 1e-12);
        let r = matrix_rank(&a, PinvOptions { atol, rtol, ..Default::default() })
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        assert_eq!(r, vec![rank], "{atol:?} {rtol:?}");
        let ph = pinv(&a, PinvOptions { atol, rtol, hermitian: true }).unwrap();
        assert_close(&ph, &p, 1e-12);
    }
    // the cutoff is strict (σ > cutoff) and relative to each matrix's σ_max
    let b = Tensor::stack(&[&diag3([2.0, 1.0, 0.5]), &diag3([4.0, 1.0, 0.5])], 0).unwrap();
    let r = matrix_rank(&b, PinvOptions { rtol: Some(0.25), ..Default::default() })
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert_eq!(r, vec![2, 1]); // 0.5 is not above 0.25 · 2
    let r = matrix_rank(&b, PinvOptions { atol: Some(1.0), ..Default::default() })
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert_eq!(r, vec![1, 1]);
}

/// `V diag(1/σ) Uᵀ` over `σ > cutoff`, from the SVD: the definition, for comparison.
fn pinv_by_svd(a: &Tensor, cut_rel: f64) -> Tensor {
    let f = cotangent::linalg::svd(a, false).unwrap();
    let s = f.s.to_vec_f64();
    let k = f.s.dims()[f.s.rank() - 1];
    let inv: Vec<f64> = s
        .chunks(k)
        .flat_map(|c| c.iter().map(move |&x| if x > cut_rel * c[0] { 1.0 / x } else { 0.0 }))
        .collect();
    let inv = Tensor::from_vec(inv, f.s.dims().to_vec()).unwrap();
    f.vh.mT().unwrap().mul(&inv.unsqueeze(-2).unwrap()).unwrap().matmul(&f.u.mT().unwrap()).unwrap()
}

#[test]
fn batches_mixing_full_rank_and_rank_deficient_matrices() {
    // full-rank matrices take A⁺ from a QR factorisation, the others the SVD: in one
    // batch, each matrix gets its own (tall, square, wide; ill-conditioned but certified;
    // rank-deficient; zero)
    for (m, n) in [(6, 4), (5, 5), (3, 7)] {
        let k = m.min(n);
        let full = randn(&[m, n], 40);
        let b = randn(&[m, 2], 41);
        let c = randn(&[n, 2], 42);
        let low = b.matmul(&c.mT().unwrap()).unwrap();
        // singular values from 1 down to 1e-9: certified full rank at the default rtol
        let mut d = vec![0.0; m * n];
        for i in 0..k {
            d[i * n + i] = 10f64.powi(-(9 * i as i32) / (k as i32 - 1));
        }
        let q1 = cotangent::linalg::qr(&randn(&[m, m], 43), cotangent::linalg::QrMode::Reduced)
            .unwrap()
            .q;
        let q2 = cotangent::linalg::qr(&randn(&[n, n], 44), cotangent::linalg::QrMode::Reduced)
            .unwrap()
            .q;
        let graded = q1.matmul(&Tensor::from_vec(d, (m, n)).unwrap()).unwrap().matmul(&q2).unwrap();
        let zero = Tensor::zeros((m, n), DType::F64).unwrap();
        let batch = Tensor::stack(&[&full, &low, &graded, &zero, &full.neg().unwrap()], 0).unwrap();
        let p = pinv(&batch, PinvOptions::default()).unwrap();
        let eps = m.max(n) as f64 * f64::EPSILON;
        let want = pinv_by_svd(&batch, eps);
        for i in 0..5 {
            let (pi, wi) = (p.select(0, i as isize).unwrap(), want.select(0, i as isize).unwrap());
            let scale = 1.0 + max_abs(&wi);
            // the graded matrix's inverse is 1e9: its rounding is cond · eps relative
            let tol = if i == 2 { 1e-6 * scale } else { 1e-11 * scale };
            let err = max_abs(&pi.sub(&wi).unwrap());
            assert!(err < tol, "{m}x{n} matrix {i}: {err:e}");
        }
        let r = matrix_rank(&batch, PinvOptions::default()).unwrap().to_vec::<i64>().unwrap();
        assert_eq!(r, vec![k as i64, 2, k as i64, 0, k as i64]);
        // a cutoff above the graded matrix's smallest values sends it to the SVD path
        let p = pinv(&batch, PinvOptions { rtol: Some(1e-4), ..Default::default() }).unwrap();
        let want = pinv_by_svd(&batch, 1e-4);
        assert_close(&p, &want, 1e-9);
    }
}

#[test]
fn hermitian_reads_the_lower_triangle() {
    let x = randn(&[2, 4, 4], 3);
    let low = x.tril(0).unwrap();
    let sym = low.add(&x.tril(-1).unwrap().mT().unwrap()).unwrap();
    let ph = pinv(&x, PinvOptions { hermitian: true, ..Default::default() }).unwrap();
    assert_close(&ph, &pinv(&sym, PinvOptions::default()).unwrap(), 1e-10);
    // an indefinite symmetric matrix: the rank counts |eigenvalues|
    let s = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, -5.0], (2, 2)).unwrap();
    assert_eq!(
        matrix_rank(&s, PinvOptions { atol: Some(3.0), hermitian: true, ..Default::default() })
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1]
    );
    // garbage above the diagonal is not read
    let g = Tensor::from_vec(vec![1.0f64, 99.0, 2.0, -5.0], (2, 2)).unwrap();
    assert_close(
        &pinv(&g, PinvOptions { hermitian: true, ..Default::default() }).unwrap(),
        &pinv(&s, PinvOptions::default()).unwrap(),
        1e-12,
    );
}

#[test]
fn empty_and_dtypes() {
    for (m, n) in [(0, 3), (3, 0), (0, 0)] {
        let a = Tensor::zeros((2, m, n), DType::F64).unwrap();
        let p = pinv(&a, PinvOptions::default()).unwrap();
        assert_eq!(p.dims(), &[2, n, m]);
        assert_eq!(
            matrix_rank(&a, PinvOptions::default()).unwrap().to_vec::<i64>().unwrap(),
            [0, 0]
        );
    }
    let a = randn(&[3, 5, 4], 9);
    let p64 = pinv(&a, PinvOptions::default()).unwrap();
    for (dt, tol) in [(DType::F32, 1e-4), (DType::Bf16, 1e-1)] {
        let p = pinv(&a.to_dtype(dt).unwrap(), PinvOptions::default()).unwrap();
        assert_eq!(p.dtype(), dt);
        assert_close(&p.to_dtype(DType::F64).unwrap(), &p64, tol);
        let r = matrix_rank(&a.to_dtype(dt).unwrap(), PinvOptions::default()).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![4, 4, 4]);
    }
}

#[test]
fn gradients_first_and_second_order() {
    for shape in [vec![4, 3], vec![3, 4], vec![3, 3], vec![2, 3, 5], vec![2, 5, 2]] {
        let a = rg(randn(&shape, 31));
        check2(&format!("pinv {shape:?}"), &[a], |x| {
            Ok(vec![pinv(&x[0], PinvOptions::default())?])
        });
    }
    // hermitian: the general pinv gradient at the symmetric matrix read (PyTorch's at
    // symmetric input); checked on symmetric input through a symmetric parametrisation
    let x = rg(randn(&[2, 3, 3], 32));
    check2("pinv hermitian", &[x], |x| {
        let s = x[0].add(&x[0].mT()?)?;
        Ok(vec![pinv(&s, PinvOptions { hermitian: true, ..Default::default() })?])
    });
    // rank-deficient of constant rank (A = B Cᵀ with B, C of 2 columns)
    let b = rg(randn(&[4, 2], 33));
    let c = rg(randn(&[3, 2], 34));
    check2("pinv rank 2", &[b, c], |x| {
        let a = x[0].matmul(&x[1].mT()?)?;
        Ok(vec![pinv(&a, PinvOptions::default())?])
    });
}

#[test]
fn matrix_rank_is_not_differentiable() {
    let a = rg(randn(&[3, 3], 1));
    let r = matrix_rank(&a, PinvOptions::default()).unwrap();
    assert!(!r.requires_grad());
    assert_eq!(r.dtype(), DType::I64);
}

#[test]
fn errors_name_the_op() {
    let v = randn(&[3], 1);
    let e = pinv(&v, PinvOptions::default()).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.pinv", .. }), "{e:?}");
    let e = matrix_rank(&v, PinvOptions::default()).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.matrix_rank", .. }), "{e:?}");
    let r = randn(&[3, 4], 1);
    let e = pinv(&r, PinvOptions { hermitian: true, ..Default::default() }).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.pinv", .. }), "{e:?}");
    assert!(e.to_string().contains("square"), "{e}");
    let e = matrix_rank(&r, PinvOptions { hermitian: true, ..Default::default() }).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "linalg.matrix_rank", .. }), "{e:?}");
    let i = r.to_dtype(DType::I64).unwrap();
    let e = pinv(&i, PinvOptions::default()).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDType { op: "linalg.pinv", .. }), "{e:?}");
    let e = matrix_rank(&i, PinvOptions::default()).unwrap_err();
    assert!(matches!(e, Error::UnsupportedDType { op: "linalg.matrix_rank", .. }), "{e:?}");
    // NaN: PyTorch raises from its SVD
    let nan = Tensor::from_vec(vec![1.0f64, f64::NAN, 0.0, 1.0], (2, 2)).unwrap();
    for e in [
        pinv(&nan, PinvOptions::default()).unwrap_err(),
        matrix_rank(&nan, PinvOptions::default()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::NoConvergence { op: "linalg.svd", .. }), "{e:?}");
    }
}

#[test]
fn non_contiguous_inputs() {
    // a transposed view and a sliced view give the same results as contiguous copies
    let a = randn(&[2, 6, 4], 51);
    let at = a.mT().unwrap(); // (2, 4, 6), not contiguous
    let p = pinv(&at, PinvOptions::default()).unwrap();
    assert_close(&p, &pinv(&at.contiguous().unwrap(), PinvOptions::default()).unwrap(), 1e-12);
    assert_close(&p, &pinv(&a, PinvOptions::default()).unwrap().mT().unwrap(), 1e-12);
    let sl = randn(&[5, 7], 52).narrow(-1, 1, 4).unwrap();
    assert_close(
        &pinv(&sl, PinvOptions::default()).unwrap(),
        &pinv(&sl.contiguous().unwrap(), PinvOptions::default()).unwrap(),
        1e-12,
    );
    assert_eq!(
        matrix_rank(&at, PinvOptions::default()).unwrap().to_vec::<i64>().unwrap(),
        vec![4, 4]
    );
}
