//! The Hermitian eigendecomposition of complex input (issue 47): `eigh` and `eigvalsh` on
//! C128 and C64: reconstruction, unitarity and ascending real eigenvalues over sizes and
//! batches, the triangle read, the phase gauge, non-finite input, and first- and
//! second-order gradient checks of phase-invariant losses; a loss that depends on the
//! eigenvectors' phases is refused. The PyTorch fixtures are in `cotangent-parity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, crandn, rg};
use cotangent::linalg::{eigh, eigvalsh, Uplo};
use cotangent::{DType, Error, Tensor};

/// A Hermitian matrix (batch): `(X + Xᴴ) / 2`.
fn herm(shape: &[usize], seed: u64) -> Tensor {
    let x = crandn(shape, seed);
    x.add(&x.mH().unwrap()).unwrap().mul_scalar(0.5).unwrap()
}

#[test]
fn decomposition_invariants() {
    for (batch, n) in
        [(vec![], 0), (vec![], 1), (vec![], 3), (vec![4], 5), (vec![2], 20), (vec![], 70)]
    {
        let mut dims = batch.clone();
        dims.extend([n, n]);
        let a = herm(&dims, 3 + n as u64);
        let e = eigh(&a, Uplo::Lower).unwrap();
        assert_eq!(e.eigenvalues.dtype(), DType::F64);
        assert_eq!(e.eigenvectors.dtype(), DType::C128);
        let v = &e.eigenvectors;
        let w = e.eigenvalues.to_dtype(DType::C128).unwrap();
        // A = V diag(w) Vᴴ, VᴴV = I
        let back = v.mul(&w.unsqueeze(-2).unwrap()).unwrap().matmul(&v.mH().unwrap()).unwrap();
        assert_close(&back, &a, 1e-12);
        let mut eye = batch.clone();
        eye.extend([n, n]);
        let id = Tensor::eye(n, DType::C128).unwrap().broadcast_to(eye).unwrap();
        assert_close(&v.mH().unwrap().matmul(v).unwrap(), &id, 1e-13);
        // ascending, and the same as eigvalsh's (to rounding)
        let wv = e.eigenvalues.to_vec_f64();
        for b in wv.chunks(n.max(1)) {
            assert!(b.windows(2).all(|p| p[0] <= p[1]), "{b:?}");
        }
        assert_close(&eigvalsh(&a, Uplo::Lower).unwrap(), &e.eigenvalues, 1e-12);
        // the gauge: each column's component of largest modulus is real and positive
        common::assert_phase_gauge(v, n);
    }
    // closed form: [[2, i], [-i, 2]] has eigenvalues 1 and 3
    let re = Tensor::from_vec(vec![2.0, 0.0, 0.0, 2.0], (2, 2)).unwrap();
    let im = Tensor::from_vec(vec![0.0, 1.0, -1.0, 0.0], (2, 2)).unwrap();
    let a = Tensor::complex(&re, &im).unwrap();
    let w = eigvalsh(&a, Uplo::Lower).unwrap().to_vec::<f64>().unwrap();
    assert!((w[0] - 1.0).abs() < 1e-14 && (w[1] - 3.0).abs() < 1e-14);
    // c64
    let a32 = herm(&[6, 6], 9).to_dtype(DType::C64).unwrap();
    let e = eigh(&a32, Uplo::Upper).unwrap();
    assert_eq!(e.eigenvalues.dtype(), DType::F32);
    let back = e
        .eigenvectors
        .mul(&e.eigenvalues.to_dtype(DType::C64).unwrap().unsqueeze(-2).unwrap())
        .unwrap()
        .matmul(&e.eigenvectors.mH().unwrap())
        .unwrap();
    let err = back.sub(&a32).unwrap().abs().unwrap();
    assert!(common::max_abs(&err) < 1e-5);
}

#[test]
fn only_the_triangle_is_read() {
    // a general matrix: eigh with `uplo` is eigh of the Hermitian matrix its triangle
    // describes (the imaginary parts of the diagonal ignored, as zheevd)
    let x = crandn(&[5, 5], 21);
    let lower = x.tril(-1).unwrap();
    let diag = x.real().unwrap().diagonal(0, -2, -1).unwrap().diag_embed(0, -2, -1).unwrap();
    let diag = diag.to_dtype(DType::C128).unwrap();
    let h_lower = lower.add(&lower.mH().unwrap()).unwrap().add(&diag).unwrap();
    assert_close(
        &eigvalsh(&x, Uplo::Lower).unwrap(),
        &eigvalsh(&h_lower, Uplo::Lower).unwrap(),
        1e-13,
    );
    let upper = x.triu(1).unwrap();
    let h_upper = upper.add(&upper.mH().unwrap()).unwrap().add(&diag).unwrap();
    assert_close(
        &eigh(&x, Uplo::Upper).unwrap().eigenvectors,
        &eigh(&h_upper, Uplo::Lower).unwrap().eigenvectors,
        1e-12,
    );
}

#[test]
fn non_finite_entries_of_the_unread_triangle_are_ignored() {
    // an infinity or a NaN where the triangle is not read (and in the imaginary part of
    // the diagonal) changes nothing; the scaling by the largest entry once took the
    // unread triangle too and halved an infinity forever (a hang the fuzzer found)
    let x = crandn(&[5, 5], 23);
    let (re, im) =
        (x.real().unwrap().to_vec::<f64>().unwrap(), x.imag().unwrap().to_vec::<f64>().unwrap());
    for (uplo, bad) in [(Uplo::Lower, [3usize, 9, 18]), (Uplo::Upper, [15, 5, 18])] {
        for value in [f64::INFINITY, f64::NAN, f64::MAX] {
            let mut im2 = im.clone();
            for &k in &bad {
                im2[k] = value;
            }
            let mut re2 = re.clone();
            re2[bad[0]] = -value;
            let y = Tensor::complex(
                &Tensor::from_vec(re2, (5, 5)).unwrap(),
                &Tensor::from_vec(im2, (5, 5)).unwrap(),
            )
            .unwrap();
            let want = eigh(&x, uplo).unwrap();
            let got = eigh(&y, uplo).unwrap();
            assert_eq!(
                got.eigenvalues.to_vec::<f64>().unwrap(),
                want.eigenvalues.to_vec::<f64>().unwrap(),
                "{uplo:?} {value}"
            );
            assert_close(&got.eigenvectors, &want.eigenvectors, 0.0);
        }
    }
}

#[test]
fn non_finite_input_is_refused() {
    let mut a = herm(&[3, 4, 4], 31).reshape(48).unwrap();
    let nan = Tensor::complex(
        &Tensor::full((), f64::NAN, DType::F64).unwrap(),
        &Tensor::zeros((), DType::F64).unwrap(),
    )
    .unwrap();
    let mask = Tensor::arange(0.0, 48.0, 1.0, DType::F64).unwrap().eq_scalar(16.0 + 4.0).unwrap();
    a = Tensor::where_cond(&mask, &nan, &a).unwrap().reshape((3, 4, 4)).unwrap();
    assert!(matches!(eigh(&a, Uplo::Lower), Err(Error::NoConvergence { batch: 1, .. })));
}

#[test]
fn gradients_of_phase_invariant_losses() {
    let h = |x: &Tensor| x.add(&x.mH()?)?.mul_scalar(0.5);
    check2("eigvalsh", &[rg(crandn(&[2, 4, 4], 41))], |x| {
        Ok(vec![eigvalsh(&h(&x[0])?, Uplo::Lower)?])
    });
    // |V|² and the projector V diag(w) Vᴴ do not see the phases
    check2("eigh |V|^2", &[rg(crandn(&[4, 4], 42))], |x| {
        let e = eigh(&h(&x[0])?, Uplo::Lower)?;
        Ok(vec![e.eigenvalues, e.eigenvectors.abs()?.square()?])
    });
    check2("eigh projector", &[rg(crandn(&[2, 3, 3], 43))], |x| {
        let e = eigh(&h(&x[0])?, Uplo::Upper)?;
        let v = &e.eigenvectors;
        let w = e.eigenvalues.exp()?.to_dtype(DType::C128)?;
        Ok(vec![v.mul(&w.unsqueeze(-2)?)?.matmul(&v.mH()?)?])
    });
}

#[test]
fn a_phase_dependent_loss_is_refused() {
    let x = rg(herm(&[3, 3], 51));
    let e = eigh(&x, Uplo::Lower).unwrap();
    let l = e.eigenvectors.sum().unwrap().real().unwrap();
    match l.backward() {
        Err(Error::NotDifferentiable { op, reason }) => {
            assert_eq!(op, "linalg.eigh");
            assert!(reason.contains("phase"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
    // the eigenvalues alone are fine
    let l = eigh(&x, Uplo::Lower).unwrap().eigenvalues.sum().unwrap();
    assert!(l.backward().is_ok());
}
