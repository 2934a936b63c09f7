//! The general eigendecomposition (issue 47, item 4): `eig` and `eigvals` for real and
//! complex input: `A V = V diag(w)` to 1e-10 relative over sizes 0-64 and batches, unit
//! eigenvectors in the phase gauge, closed forms, non-finite input; gradients of
//! phase-invariant losses (first and second order), the refusal of a phase-dependent
//! loss, and the repeated-eigenvalue story (eigenvalue losses finite, basis-dependent
//! ones refused, never NaN). The PyTorch fixtures are in `cotangent-parity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{both_paths, check2, crandn, randn, rg};
use cotangent::linalg::{eig, eigvals};
use cotangent::{DType, Error, Tensor};

/// max |A V − V diag(w)| / (‖A‖_max · n), and the unit-norm error of V's columns.
fn residuals(a: &Tensor) -> (f64, f64) {
    let e = eig(a).unwrap();
    let ac = if a.dtype().is_complex() { a.clone() } else { a.to_dtype(DType::C128).unwrap() };
    let r = ac
        .matmul(&e.eigenvectors)
        .unwrap()
        .sub(&e.eigenvectors.mul(&e.eigenvalues.unsqueeze(-2).unwrap()).unwrap())
        .unwrap();
    let n = a.dims()[a.rank() - 1].max(1) as f64;
    let amax = common::max_abs(&ac.abs().unwrap()).max(f64::MIN_POSITIVE);
    let res = common::max_abs(&r.abs().unwrap()) / (amax * n);
    let norms = e.eigenvectors.abs().unwrap().square().unwrap().sum_dims(&[-2], false).unwrap();
    let unit = norms.to_vec_f64().iter().fold(0.0f64, |m, x| m.max((x - 1.0).abs()));
    (res, unit)
}

#[test]
fn eigenpairs_over_sizes_real_and_complex() {
    for (batch, n) in [
        (vec![], 0),
        (vec![], 1),
        (vec![], 2),
        (vec![3], 4),
        (vec![2], 10),
        (vec![], 33),
        (vec![], 64),
    ] {
        let mut dims = batch.clone();
        dims.extend([n, n]);
        for a in [randn(&dims, 3 + n as u64), crandn(&dims, 5 + n as u64)] {
            let (res, unit) = residuals(&a);
            assert!(res < 1e-10 && unit < 1e-12, "{n} {:?}: {res} {unit}", a.dtype());
            let e = eig(&a).unwrap();
            assert_eq!(e.eigenvalues.dtype(), DType::C128);
            // eigvals: the same values
            common::assert_close(&eigvals(&a).unwrap(), &e.eigenvalues, 1e-12);
            // the gauge: the largest component of each eigenvector real and positive
            common::assert_phase_gauge(&e.eigenvectors, n);
        }
    }
    // real input: eigenvalues in conjugate pairs (their sum of imaginary parts is zero)
    let w = eigvals(&randn(&[7, 7], 9)).unwrap();
    let im: f64 = w.imag().unwrap().to_vec_f64().iter().sum();
    assert!(im.abs() < 1e-12);
    // ... adjacent, each pair's eigenvectors exact conjugates (the real solver's packing)
    let e = eig(&randn(&[9, 9], 19)).unwrap();
    let (wr, wi) =
        (e.eigenvalues.real().unwrap().to_vec_f64(), e.eigenvalues.imag().unwrap().to_vec_f64());
    let (vr, vi) =
        (e.eigenvectors.real().unwrap().to_vec_f64(), e.eigenvectors.imag().unwrap().to_vec_f64());
    let mut k = 0;
    let mut pairs = 0;
    while k < 9 {
        if wi[k] == 0.0 {
            assert!((0..9).all(|r| vi[r * 9 + k] == 0.0), "a real eigenvector {k}");
            k += 1;
        } else {
            assert_eq!((wr[k + 1], wi[k + 1]), (wr[k], -wi[k]));
            assert!(
                (0..9)
                    .all(|r| vr[r * 9 + k] == vr[r * 9 + k + 1]
                        && vi[r * 9 + k] == -vi[r * 9 + k + 1])
            );
            pairs += 1;
            k += 2;
        }
    }
    assert!(pairs > 0);
    // a rotation: ±i, the eigenvectors (1, ∓i)/√2 in the gauge
    let rot = Tensor::from_vec(vec![0.0f64, -1.0, 1.0, 0.0], (2, 2)).unwrap();
    let e = eig(&rot).unwrap();
    let w = e.eigenvalues.imag().unwrap().to_vec_f64();
    assert!((w[0].abs() - 1.0).abs() < 1e-15 && (w[0] + w[1]).abs() < 1e-15);
    let (res, unit) = residuals(&rot);
    assert!(res < 1e-15 && unit < 1e-15);
    // c64 input gives c64 outputs
    let a32 = crandn(&[5, 5], 10).to_dtype(DType::C64).unwrap();
    assert_eq!(eig(&a32).unwrap().eigenvalues.dtype(), DType::C64);
    assert_eq!(
        eigvals(&randn(&[3, 3], 11).to_dtype(DType::F32).unwrap()).unwrap().dtype(),
        DType::C64
    );
}

#[test]
fn closed_forms_and_errors() {
    // triangular: the diagonal
    let t =
        Tensor::from_vec(vec![1.0f64, 5.0, -2.0, 0.0, 3.0, 7.0, 0.0, 0.0, -4.0], (3, 3)).unwrap();
    let mut w = eigvals(&t).unwrap().real().unwrap().to_vec::<f64>().unwrap();
    w.sort_by(f64::total_cmp);
    assert_eq!(w, vec![-4.0, 1.0, 3.0]);
    // scaled near overflow and underflow: the same relative accuracy
    for s in [1e-300, 1e300] {
        let a = crandn(&[6, 6], 12).mul_scalar(s).unwrap();
        let (res, _) = residuals(&a);
        assert!(res < 1e-10, "{s}: {res}");
    }
    let nan = Tensor::full((2, 3, 3), f64::NAN, DType::F64).unwrap();
    let good = randn(&[2, 3, 3], 13);
    let mask = Tensor::from_vec(vec![false, true], (2, 1, 1)).unwrap();
    let a = Tensor::where_cond(&mask, &nan, &good).unwrap();
    assert!(matches!(eig(&a), Err(Error::NoConvergence { op: "linalg.eig", batch: 1 })));
    assert!(matches!(eigvals(&a), Err(Error::NoConvergence { op: "linalg.eigvals", batch: 1 })));
    assert!(matches!(eig(&randn(&[2, 3], 14)), Err(Error::BadShape { op: "linalg.eig", .. })));
    let ints = Tensor::zeros((2, 2), DType::I64).unwrap();
    assert!(matches!(eig(&ints), Err(Error::UnsupportedDType { op: "linalg.eig", .. })));
}

#[test]
fn gradients_of_phase_invariant_losses() {
    check2("eigvals real", &[rg(randn(&[2, 4, 4], 21))], |x| Ok(vec![eigvals(&x[0])?]));
    check2("eigvals complex", &[rg(crandn(&[3, 3], 22))], |x| Ok(vec![eigvals(&x[0])?]));
    check2("eig |V|^2 complex", &[rg(crandn(&[3, 3], 23))], |x| {
        let e = eig(&x[0])?;
        Ok(vec![e.eigenvalues, e.eigenvectors.abs()?.square()?])
    });
    check2("eig |V|^2 real", &[rg(randn(&[4, 4], 24))], |x| {
        let e = eig(&x[0])?;
        Ok(vec![e.eigenvectors.abs()?.square()?])
    });
    // V diag(w²) V⁻¹ = A²: phase-invariant
    check2("eig V f(w) V^-1", &[rg(crandn(&[3, 3], 25))], |x| {
        let e = eig(&x[0])?;
        let v = &e.eigenvectors;
        let f = e.eigenvalues.square()?;
        Ok(vec![v.mul(&f.unsqueeze(-2)?)?.matmul(&cotangent::linalg::inv(v)?)?])
    });
}

#[test]
fn phase_and_basis_dependent_losses_are_refused() {
    let x = rg(crandn(&[3, 3], 31));
    let l = eig(&x).unwrap().eigenvectors.sum().unwrap().real().unwrap();
    match l.backward() {
        Err(Error::NotDifferentiable { op, reason }) => {
            assert_eq!(op, "linalg.eig");
            assert!(reason.contains("phase"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
    // a repeated eigenvalue: diag(1, 1, 2) plus a strictly upper part (not defective: the
    // (0, 1) entry is zero)
    let a =
        Tensor::from_vec(vec![1.0f64, 0.0, 0.5, 0.0, 1.0, -0.25, 0.0, 0.0, 2.0], (3, 3)).unwrap();
    let a = rg(a);
    // eigenvalues only: finite (the sum of the eigenvalues is the trace: gradient I)
    let g = eigvals(&a).unwrap().real().unwrap().sum().unwrap().backward().unwrap();
    let ga = g.get(&a).unwrap().to_vec::<f64>().unwrap();
    let eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    assert!(ga.iter().zip(eye).all(|(x, y)| (x - y).abs() < 1e-12), "{ga:?}");
    // through the eigenvectors, depending on the basis of the repeated eigenspace: Q
    // diag(1, 1, 2) Qᵀ with a random orthogonal Q (at an axis-aligned basis a loss of
    // |V|² can be stationary under rotations, so that matrix would not tell)
    let q =
        cotangent::linalg::qr(&randn(&[3, 3], 32), cotangent::linalg::QrMode::Reduced).unwrap().q;
    let d = Tensor::from_vec(vec![1.0f64, 1.0, 2.0], 3).unwrap();
    let b =
        rg(q.mul(&d.unsqueeze(-2).unwrap()).unwrap().matmul(&q.mT().unwrap()).unwrap().detach());
    let c = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], (3, 3)).unwrap();
    let l = eig(&b)
        .unwrap()
        .eigenvectors
        .abs()
        .unwrap()
        .square()
        .unwrap()
        .mul(&c)
        .unwrap()
        .sum()
        .unwrap();
    match l.backward() {
        Err(Error::NotDifferentiable { op: "linalg.eig", reason }) => {
            assert!(reason.contains("repeated"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
}

#[test]
fn fused_backward_matches_the_recorded_one() {
    // without create_graph the VJP runs fused per matrix (to order 16); with it, as tensor
    // ops: the same gradient for eigenvalue and eigenvector cotangents alone and together,
    // strided cotangents, batches, real and complex, both precisions, orders of both
    // forward paths and above the fused order
    let shapes: [&[usize]; 7] =
        [&[1, 1], &[3, 3], &[19, 4, 4], &[11, 16, 16], &[2, 3, 5, 5], &[17, 17], &[2, 20, 20]];
    for shape in shapes {
        for (complex, dt) in [(false, DType::F64), (true, DType::C128), (false, DType::F32)] {
            let x = if complex { crandn(shape, 41) } else { randn(shape, 41) };
            let a = rg(x.to_dtype(dt).unwrap());
            let e = eig(&a).unwrap();
            let ct = e.eigenvalues.dtype();
            let gw = crandn(e.eigenvalues.dims(), 42).to_dtype(ct).unwrap();
            // the cotangent of sum(C ∘ |V|²) (C transposed: strided), phase-invariant
            let c = randn(e.eigenvectors.dims(), 43).mT().unwrap().to_dtype(ct).unwrap();
            let gv = e.eigenvectors.mul(&c).unwrap().mul_scalar(2.0).unwrap();
            let tol = if dt == DType::F32 { 1e-3 } else { 1e-10 };
            for (w_used, v_used) in [(true, true), (true, false), (false, true)] {
                let mut outs = vec![];
                let mut cots = vec![];
                if w_used {
                    outs.push(&e.eigenvalues);
                    cots.push(Some(&gw));
                }
                if v_used {
                    outs.push(&e.eigenvectors);
                    cots.push(Some(&gv));
                }
                let (fused, recorded) = both_paths(&outs, &cots, &a);
                let (fused, recorded) = (fused.unwrap(), recorded.unwrap());
                assert_eq!((fused.dims(), fused.dtype()), (a.dims(), a.dtype()));
                let wide = |t: &Tensor| t.to_dtype(DType::C128).unwrap();
                let scale = 1.0 + common::max_abs(&wide(&recorded).abs().unwrap());
                let d =
                    common::max_abs(&wide(&fused).sub(&wide(&recorded)).unwrap().abs().unwrap());
                assert!(d <= tol * scale, "{shape:?} {dt:?} {w_used} {v_used}: {d}");
            }
        }
    }
    // the errors: a phase-dependent loss and a basis-dependent one at a repeated
    // eigenvalue fail on both paths alike
    let a = rg(crandn(&[3, 4, 4], 44));
    let e = eig(&a).unwrap();
    let ones = e.eigenvectors.ones_like().unwrap();
    let (f, r) = both_paths(&[&e.eigenvectors], &[Some(&ones)], &a);
    for res in [f, r] {
        assert!(matches!(res, Err(Error::NotDifferentiable { op: "linalg.eig", .. })));
    }
}
