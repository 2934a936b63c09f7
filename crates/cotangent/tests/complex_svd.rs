//! The SVD of complex input (issue 47): `svd` and `svdvals` on C128 and C64:
//! reconstruction, unitarity, descending singular values and the phase gauge over
//! shapes, batches, rank-deficient and scaled matrices; non-finite input; and first- and
//! second-order gradient checks of phase-invariant losses, with a phase-dependent loss
//! refused. The PyTorch fixtures are in `cotangent-parity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, ceye, check2, crandn, rg};
use cotangent::linalg::{svd, svdvals};
use cotangent::{DType, Error, Tensor};

/// Checks the factors of `a` (f64 tolerances relative to `scale`).
fn check_factors(a: &Tensor, full: bool, tol: f64) {
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let batch = a.dims()[..r - 2].to_vec();
    let k = m.min(n);
    let f = svd(a, full).unwrap();
    assert_eq!(f.s.dtype(), DType::F64);
    let (ku, kv) = if full { (m, n) } else { (k, k) };
    assert_eq!(f.u.dims()[r - 1], ku);
    assert_eq!(f.vh.dims()[r - 2], kv);
    let s = f.s.to_dtype(DType::C128).unwrap();
    let uk = f.u.narrow(-1, 0, k).unwrap();
    let vk = f.vh.narrow(-2, 0, k).unwrap();
    let back = uk.mul(&s.unsqueeze(-2).unwrap()).unwrap().matmul(&vk).unwrap();
    assert_close(&back, a, tol);
    assert_close(&f.u.mH().unwrap().matmul(&f.u).unwrap(), &ceye(ku, &batch), 1e-13);
    assert_close(&f.vh.matmul(&f.vh.mH().unwrap()).unwrap(), &ceye(kv, &batch), 1e-13);
    for b in f.s.to_vec_f64().chunks(k.max(1)) {
        assert!(b.windows(2).all(|p| p[0] >= p[1]) && b.iter().all(|&x| x >= 0.0), "{b:?}");
    }
    assert_close(&svdvals(a).unwrap(), &f.s, 1e-12);
    // the gauge: each column of U has its largest component real and positive
    common::assert_phase_gauge(&f.u, k);
}

#[test]
fn factors_over_shapes() {
    for (batch, m, n) in [
        (vec![], 1, 1),
        (vec![3], 4, 4),
        (vec![], 6, 3),
        (vec![], 3, 6),
        (vec![2], 20, 20),
        (vec![], 70, 40),
        (vec![], 40, 70),
        (vec![], 5, 1),
        (vec![], 1, 5),
    ] {
        let mut dims = batch.clone();
        dims.extend([m, n]);
        let a = crandn(&dims, 11 + m as u64 * 3 + n as u64);
        check_factors(&a, false, 1e-12);
        check_factors(&a, true, 1e-12);
    }
    // empty
    let e = svd(&Tensor::zeros((0, 3), DType::C128).unwrap(), true).unwrap();
    assert_eq!((e.u.dims(), e.s.dims(), e.vh.dims()), (&[0, 0][..], &[0][..], &[3, 3][..]));
    // closed form: diag(3i, -2) has singular values 3, 2
    let re = Tensor::from_vec(vec![0.0, 0.0, 0.0, -2.0], (2, 2)).unwrap();
    let im = Tensor::from_vec(vec![3.0, 0.0, 0.0, 0.0], (2, 2)).unwrap();
    let s = svdvals(&Tensor::complex(&re, &im).unwrap()).unwrap().to_vec::<f64>().unwrap();
    assert!((s[0] - 3.0).abs() < 1e-15 && (s[1] - 2.0).abs() < 1e-15);
}

#[test]
fn hard_matrices() {
    // rank 2 of 6 x 5 (zero singular values repeated), and scaled near the exponent ends
    let x = crandn(&[6, 2], 31).matmul(&crandn(&[2, 5], 32)).unwrap();
    check_factors(&x, false, 1e-12);
    let s = svdvals(&x).unwrap().to_vec::<f64>().unwrap();
    assert!(s[2..].iter().all(|&v| v < 1e-14 * s[0]), "{s:?}");
    for scale in [1e-300, 1e300] {
        let a = crandn(&[7, 5], 33);
        let f = svd(&a.mul_scalar(scale).unwrap(), false).unwrap();
        let back =
            f.u.mul(
                &f.s.div_scalar(scale)
                    .unwrap()
                    .to_dtype(DType::C128)
                    .unwrap()
                    .unsqueeze(-2)
                    .unwrap(),
            )
            .unwrap()
            .matmul(&f.vh)
            .unwrap();
        assert_close(&back, &a, 1e-12);
    }
    // a NaN: NoConvergence naming the matrix
    let nan = Tensor::complex(
        &Tensor::full((2, 3, 3), f64::NAN, DType::F64).unwrap(),
        &Tensor::zeros((2, 3, 3), DType::F64).unwrap(),
    )
    .unwrap();
    let good = crandn(&[2, 3, 3], 34);
    let mask = Tensor::from_vec(vec![false, true], (2, 1, 1)).unwrap();
    let a = Tensor::where_cond(&mask, &nan, &good).unwrap();
    assert!(matches!(svd(&a, false), Err(Error::NoConvergence { batch: 1, .. })));
    // c64
    let a32 = crandn(&[6, 4], 35).to_dtype(DType::C64).unwrap();
    let f = svd(&a32, false).unwrap();
    assert_eq!(f.s.dtype(), DType::F32);
    let s = f.s.to_dtype(DType::C64).unwrap();
    let back = f.u.mul(&s.unsqueeze(-2).unwrap()).unwrap().matmul(&f.vh).unwrap();
    assert!(common::max_abs(&back.sub(&a32).unwrap().abs().unwrap()) < 1e-5);
}

#[test]
fn gradients_of_phase_invariant_losses() {
    let z = |shape: &[usize], seed| rg(crandn(shape, seed));
    check2("svdvals", &[z(&[2, 4, 3], 41)], |x| Ok(vec![svdvals(&x[0])?]));
    check2("svd reconstruction tall", &[z(&[4, 3], 42)], |x| {
        let f = svd(&x[0], false)?;
        let s = f.s.exp()?.to_dtype(DType::C128)?;
        Ok(vec![f.u.mul(&s.unsqueeze(-2)?)?.matmul(&f.vh)?])
    });
    check2("svd |U|², |Vh|², S wide", &[z(&[2, 3, 4], 43)], |x| {
        let f = svd(&x[0], false)?;
        Ok(vec![f.u.abs()?.square()?, f.s, f.vh.abs()?.square()?])
    });
    check2("svd projector U Uᴴ", &[z(&[5, 3], 44)], |x| {
        let f = svd(&x[0], false)?;
        Ok(vec![f.u.matmul(&f.u.mH()?)?])
    });
}

#[test]
fn a_phase_dependent_loss_is_refused() {
    let x = rg(crandn(&[3, 3], 51));
    let l = svd(&x, false).unwrap().u.sum().unwrap().real().unwrap();
    match l.backward() {
        Err(Error::NotDifferentiable { op, reason }) => {
            assert_eq!(op, "linalg.svd");
            assert!(reason.contains("phase"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
}

/// A complex `m x n` matrix with the given singular values (the rest zero): `Q₁ Σ Q₂ᴴ`
/// with unitary `Q` from the QR of random complex matrices.
fn with_singular_values(m: usize, n: usize, s: &[f64], seed: u64) -> Tensor {
    let q1 = cotangent::linalg::qr(&crandn(&[m, m], seed), cotangent::linalg::QrMode::Reduced)
        .unwrap()
        .q;
    let q2 = cotangent::linalg::qr(&crandn(&[n, n], seed + 1), cotangent::linalg::QrMode::Reduced)
        .unwrap()
        .q;
    let mut d = vec![0.0; m * n];
    for (i, &v) in s.iter().enumerate() {
        d[i * n + i] = v;
    }
    let d = Tensor::from_vec(d, (m, n)).unwrap().to_dtype(DType::C128).unwrap();
    q1.matmul(&d).unwrap().matmul(&q2.mH().unwrap()).unwrap()
}

#[test]
fn fused_backward_matches_the_recorded_one() {
    // without create_graph the VJP runs fused per matrix (to order 32); with it, as
    // tensor ops: the same gradient for every combination of phase-invariant cotangents
    // (those of sum(C ∘ |U|²), of S and of sum(D ∘ |Vh|²), C and D real), tall, wide,
    // square, batched, c64, full matrices, strided cotangents; the same errors at a
    // phase-dependent loss and at degenerate input
    use common::{both_paths, randn};
    let wide = |t: &Tensor| t.to_dtype(DType::C128).unwrap();
    for (shape, dt) in [
        (vec![4, 4], DType::C128),
        (vec![6, 4], DType::C128),
        (vec![4, 6], DType::C128),
        (vec![19, 4, 4], DType::C128),
        (vec![5, 16, 16], DType::C128),
        (vec![3, 16, 7], DType::C128),
        (vec![3, 7, 16], DType::C128),
        (vec![2, 32, 20], DType::C128),
        (vec![9, 5, 5], DType::C64),
        (vec![2, 6, 3], DType::C64),
    ] {
        let a = rg(crandn(&shape, 71).to_dtype(dt).unwrap());
        let tol = if dt == DType::C64 { 2e-3 } else { 1e-9 };
        for full in [false, true] {
            let f = svd(&a, full).unwrap();
            let rdt = f.s.dtype();
            // sum(C ∘ |U|²) has the cotangent 2 C ∘ U; C through a transposed view
            let c = randn(f.u.mT().unwrap().dims(), 72).mT().unwrap().to_dtype(dt).unwrap();
            let gu = f.u.mul(&c).unwrap().mul_scalar(2.0).unwrap();
            let gs = randn(f.s.dims(), 73).to_dtype(rdt).unwrap();
            let d = randn(f.vh.dims(), 74).to_dtype(dt).unwrap();
            let gvh = f.vh.mul(&d).unwrap().mul_scalar(2.0).unwrap();
            let all = [(&f.u, &gu), (&f.s, &gs), (&f.vh, &gvh)];
            for used in [
                [true, true, true],
                [true, false, false],
                [false, true, false],
                [false, false, true],
                [true, true, false],
            ] {
                let (mut o, mut g) = (vec![], vec![]);
                for (i, (out, cot)) in all.iter().enumerate() {
                    if used[i] {
                        o.push(*out);
                        g.push(Some(*cot));
                    }
                }
                let (x, y) = both_paths(&o, &g, &a);
                let (x, y) = (x.unwrap(), y.unwrap());
                assert_eq!((x.dims(), x.dtype()), (a.dims(), a.dtype()));
                let scale = 1.0 + common::max_abs(&wide(&y).abs().unwrap());
                let diff = common::max_abs(&wide(&x).sub(&wide(&y)).unwrap().abs().unwrap());
                assert!(diff <= tol * scale, "{shape:?} {dt:?} {full} {used:?}: {diff}");
            }
        }
    }
    let refused = |r: cotangent::Result<Tensor>, what: &str| match r {
        Err(Error::NotDifferentiable { op: "linalg.svd", reason }) => {
            assert!(reason.contains(what), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    };
    // a phase-dependent loss (the sum of U) fails on both paths with the phase message
    let a = rg(crandn(&[3, 4, 4], 75));
    let f = svd(&a, false).unwrap();
    let ones = f.u.ones_like().unwrap();
    let (x, y) = both_paths(&[&f.u], &[Some(&ones)], &a);
    refused(x, "phase");
    refused(y, "phase");
    // repeated singular values: a loss invariant to the basis (U Vh) has the same finite
    // gradient on both paths; a basis-dependent one fails on both
    for (m, n) in [(4, 3), (3, 4), (3, 3)] {
        let a = rg(with_singular_values(m, n, &[2.0, 2.0, 1.0], 76));
        let f = svd(&a, false).unwrap();
        let polar = f.u.matmul(&f.vh).unwrap();
        let w = crandn(polar.dims(), 77);
        let (x, y) = both_paths(&[&polar], &[Some(&w)], &a);
        assert_close(&x.unwrap(), &y.unwrap(), 1e-10);
        let c = randn(f.u.dims(), 78).to_dtype(DType::C128).unwrap();
        let gu = f.u.mul(&c).unwrap();
        let (x, y) = both_paths(&[&f.u], &[Some(&gu)], &a);
        refused(x, "repeated");
        refused(y, "repeated");
    }
    // rank-deficient tall: a cotangent of U outside its span fails on both paths
    let a = rg(with_singular_values(5, 3, &[2.0, 1.0], 79));
    let f = svd(&a, false).unwrap();
    let gu = crandn(f.u.dims(), 80);
    // made phase-invariant: minus the imaginary part of diag(Uᴴ gU) along U
    let im = f.u.mH().unwrap().matmul(&gu).unwrap().diagonal(0, -2, -1).unwrap().imag().unwrap();
    let fix = Tensor::complex(&im.zeros_like().unwrap(), &im).unwrap();
    let gu = gu.sub(&f.u.mul(&fix.unsqueeze(-2).unwrap()).unwrap()).unwrap();
    let (x, y) = both_paths(&[&f.u], &[Some(&gu)], &a);
    refused(x, "zero singular value");
    refused(y, "zero singular value");
}
