//! `linalg.eigh` and `linalg.eigvalsh`: `A V = V diag(w)`, `VᵀV = I`, ascending
//! eigenvalues over a size sweep (Jacobi to 4, tridiagonal QL to 16, faer above), the sign gauge
//! and its determinism, the triangle read, layouts, NaN/inf, gradients against finite
//! differences (first and second order), degenerate spectra, and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, both_paths, check2, max_abs, randn, rg};
use cotangent::autograd::{gradcheck, GradcheckOptions};
use cotangent::linalg::{eigh, eigvalsh, qr, QrMode, Uplo};
use cotangent::{DType, Error, Tensor};

const SIZES: [usize; 7] = [0, 1, 2, 3, 5, 17, 64];

/// A random symmetric matrix (batch): `(X + Xᵀ) / 2`.
fn sym(shape: &[usize], seed: u64) -> Tensor {
    let x = randn(shape, seed);
    x.add(&x.mT().unwrap()).unwrap().mul_scalar(0.5).unwrap()
}

/// `Q diag(d) Qᵀ` with a fixed random orthogonal `Q` (`n = d.len()`).
fn with_spectrum(d: &[f64], seed: u64) -> Tensor {
    let n = d.len();
    let q = qr(&randn(&[n, n], seed), QrMode::Reduced).unwrap().q;
    let dm = Tensor::from_vec(d.to_vec(), n).unwrap().diag_embed(0, -2, -1).unwrap();
    let a = q.matmul(&dm).unwrap().matmul(&q.mT().unwrap()).unwrap();
    // exactly symmetric
    a.add(&a.mT().unwrap()).unwrap().mul_scalar(0.5).unwrap()
}

/// `A V = V diag(w)`, `VᵀV = I`, `w` ascending, and each column's largest component
/// positive (the first on ties).
fn check_decomposition(a: &Tensor, w: &Tensor, v: &Tensor, tol: f64, what: &str) {
    let n = a.dims()[a.rank() - 1];
    let scale = 1.0 + max_abs(a);
    let av = a.matmul(v).unwrap();
    let vw = v.mul(&w.unsqueeze(-2).unwrap()).unwrap();
    assert!(max_abs(&av.sub(&vw).unwrap()) < tol * scale * (n as f64 + 1.0), "{what}: A V = V w");
    let vtv = v.mT().unwrap().matmul(v).unwrap();
    let eye = Tensor::eye(n, a.dtype()).unwrap().broadcast_to(vtv.shape().clone()).unwrap();
    assert!(max_abs(&vtv.sub(&eye).unwrap()) < tol * (n as f64 + 1.0), "{what}: VᵀV = I");
    let wv = w.to_vec_f64();
    for chunk in wv.chunks(n.max(1)) {
        assert!(chunk.windows(2).all(|p| p[0] <= p[1]), "{what}: ascending {chunk:?}");
    }
    let vv = v.contiguous().unwrap().to_vec_f64();
    for (b, m) in vv.chunks((n * n).max(1)).enumerate() {
        for j in 0..n {
            let col: Vec<f64> = (0..n).map(|i| m[i * n + j]).collect();
            let k = (0..n).fold(0, |k, i| if col[i].abs() > col[k].abs() { i } else { k });
            assert!(col[k] > 0.0, "{what}: gauge of column {j} of matrix {b}: {col:?}");
        }
    }
}

#[test]
fn decomposition_over_a_size_sweep() {
    // A V = V diag(w), VᵀV = I, w ascending, over the Jacobi sizes (<= 16) and faer's
    // (17, 64), unbatched and batched; eigvalsh gives eigh's eigenvalues
    for &n in &SIZES {
        for batch in [vec![], vec![3], vec![2, 1]] {
            let mut shape = batch.clone();
            shape.extend([n, n]);
            let a = sym(&shape, n as u64 * 7 + batch.len() as u64);
            let what = format!("{shape:?}");
            let e = eigh(&a, Uplo::Lower).unwrap();
            assert_eq!(e.eigenvalues.dims(), &shape[..shape.len() - 1], "{what}");
            assert_eq!(e.eigenvectors.dims(), &shape[..], "{what}");
            check_decomposition(&a, &e.eigenvalues, &e.eigenvectors, 1e-13, &what);
            let w = eigvalsh(&a, Uplo::Lower).unwrap();
            assert_close(&w, &e.eigenvalues, 1e-12);
        }
    }
}

#[test]
fn blocked_tridiagonalisation_sizes() {
    // from order 160 the tridiagonal form is made by panels of 32 columns (from 384 with
    // the products in column ranges over the threads): sizes at and across the
    // boundaries, both triangles
    // (the other filled with garbage), f64 and f32, a repeated eigenvalue
    for n in [160, 257, 400] {
        let a = sym(&[n, n], n as u64);
        let lower = a
            .tril(0)
            .unwrap()
            .add(&Tensor::ones((n, n), DType::F64).unwrap().triu(1).unwrap())
            .unwrap();
        let e = eigh(&lower, Uplo::Lower).unwrap();
        check_decomposition(&a, &e.eigenvalues, &e.eigenvectors, 1e-12, &format!("{n}"));
        let upper = a
            .triu(0)
            .unwrap()
            .sub(&Tensor::ones((n, n), DType::F64).unwrap().tril(-1).unwrap())
            .unwrap();
        assert_close(&eigvalsh(&upper, Uplo::Upper).unwrap(), &e.eigenvalues, 1e-12);
        let e32 = eigh(&a.to_dtype(DType::F32).unwrap(), Uplo::Lower).unwrap();
        check_decomposition(
            &a,
            &e32.eigenvalues.to_dtype(DType::F64).unwrap(),
            &e32.eigenvectors.to_dtype(DType::F64).unwrap(),
            1e-3,
            &format!("f32 {n}"),
        );
    }
    let mut d: Vec<f64> = (0..260u32).map(|i| (f64::from(i) * 0.37).sin()).collect();
    d[7] = d[100];
    let a = with_spectrum(&d, 5);
    let e = eigh(&a, Uplo::Lower).unwrap();
    check_decomposition(&a, &e.eigenvalues, &e.eigenvectors, 1e-12, "repeated");
    d.sort_by(f64::total_cmp);
    assert_close(&e.eigenvalues, &Tensor::from_vec(d, 260).unwrap(), 1e-12);
}

#[test]
fn known_spectra_and_repeated_eigenvalues() {
    // diag(3, 1, 2) sorts to (1, 2, 3) with unit vectors; the identity and zero are
    // already diagonal; Q diag(1, 1, 3) Qᵀ has a repeated eigenvalue
    let d = Tensor::from_vec(vec![3.0f64, 1.0, 2.0], 3).unwrap().diag_embed(0, -2, -1).unwrap();
    let e = eigh(&d, Uplo::Lower).unwrap();
    assert_eq!(e.eigenvalues.to_vec_f64(), vec![1.0, 2.0, 3.0]);
    assert_eq!(e.eigenvectors.to_vec_f64(), vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let i = eigh(&Tensor::eye(4, DType::F64).unwrap(), Uplo::Upper).unwrap();
    assert_eq!(i.eigenvalues.to_vec_f64(), vec![1.0; 4]);
    assert_eq!(max_abs(&i.eigenvectors.sub(&Tensor::eye(4, DType::F64).unwrap()).unwrap()), 0.0);
    let z = eigh(&Tensor::zeros((3, 3), DType::F64).unwrap(), Uplo::Lower).unwrap();
    assert_eq!(z.eigenvalues.to_vec_f64(), vec![0.0; 3]);
    for n in [3, 9, 20] {
        let mut spec = vec![1.0; n - 1];
        spec.push(3.0);
        let a = with_spectrum(&spec, 5);
        let e = eigh(&a, Uplo::Lower).unwrap();
        common::close(&e.eigenvalues.to_vec_f64(), &spec, 1e-13);
        check_decomposition(&a, &e.eigenvalues, &e.eigenvectors, 1e-13, "repeated");
    }
    // widely scaled entries: the small kernels scale by a power of two (Jacobi for
    // n <= 4, tridiagonal QL to 16, faer above)
    for (n, s) in [(4, 1e-150), (4, 1e150), (9, 1e-150), (9, 1e150), (20, 1e100)] {
        let a = sym(&[n, n], 9).mul_scalar(s).unwrap();
        let e = eigh(&a, Uplo::Lower).unwrap();
        let back = eigh(&sym(&[n, n], 9), Uplo::Lower).unwrap();
        common::close(
            &e.eigenvalues.div_scalar(s).unwrap().to_vec_f64(),
            &back.eigenvalues.to_vec_f64(),
            1e-13,
        );
    }
}

#[test]
fn only_the_named_triangle_is_read() {
    // garbage in the other triangle changes nothing (Jacobi and faer sizes)
    for n in [4, 20] {
        let a = sym(&[2, n, n], 11);
        let junk = randn(&[2, n, n], 12).mul_scalar(100.0).unwrap();
        let low = a.tril(0).unwrap().add(&junk.triu(1).unwrap()).unwrap();
        let up = a.triu(0).unwrap().add(&junk.tril(-1).unwrap()).unwrap();
        let e = eigh(&a, Uplo::Lower).unwrap();
        let el = eigh(&low, Uplo::Lower).unwrap();
        let eu = eigh(&up, Uplo::Upper).unwrap();
        assert_eq!(e.eigenvalues.to_vec_f64(), el.eigenvalues.to_vec_f64());
        assert_eq!(e.eigenvectors.to_vec_f64(), el.eigenvectors.to_vec_f64());
        assert_eq!(e.eigenvalues.to_vec_f64(), eu.eigenvalues.to_vec_f64());
        assert_eq!(e.eigenvectors.to_vec_f64(), eu.eigenvectors.to_vec_f64());
        assert_eq!(
            eigvalsh(&up, Uplo::Upper).unwrap().to_vec_f64(),
            eigvalsh(&a, Uplo::Upper).unwrap().to_vec_f64()
        );
    }
}

#[test]
fn deterministic_and_layout_independent() {
    // same input, same bits; transposed (a symmetric matrix's mT is itself, read through
    // other strides) and sliced inputs give the same result
    for n in [3, 16, 30] {
        let a = sym(&[3, n, n], 21);
        let e1 = eigh(&a, Uplo::Lower).unwrap();
        let e2 = eigh(&a, Uplo::Lower).unwrap();
        assert_eq!(e1.eigenvectors.to_vec_f64(), e2.eigenvectors.to_vec_f64());
        let t = eigh(&a.mT().unwrap(), Uplo::Upper).unwrap();
        assert_eq!(e1.eigenvectors.to_vec_f64(), t.eigenvectors.to_vec_f64());
        let big = sym(&[3, n + 2, n + 2], 22);
        let sl = big.narrow(-1, 1, n).unwrap().narrow(-2, 1, n).unwrap();
        let es = eigh(&sl, Uplo::Lower).unwrap();
        let ec = eigh(&sl.contiguous().unwrap(), Uplo::Lower).unwrap();
        assert_eq!(es.eigenvalues.to_vec_f64(), ec.eigenvalues.to_vec_f64());
        assert_eq!(es.eigenvectors.to_vec_f64(), ec.eigenvectors.to_vec_f64());
    }
}

#[test]
fn large_batches_match_single_matrices() {
    // the batch is split across rayon tasks: each matrix as if alone (the same bits; a
    // batch runs the single-matrix algorithm over SIMD lanes to n = 16)
    for n in [4, 16, 20] {
        let a = sym(&[300, n, n], 31);
        let e = eigh(&a, Uplo::Lower).unwrap();
        for b in [0, 137, 299] {
            let one = eigh(&a.narrow(0, b, 1).unwrap(), Uplo::Lower).unwrap();
            let vb = e.eigenvectors.narrow(0, b, 1).unwrap();
            assert_eq!(bits(&vb), bits(&one.eigenvectors));
            assert_eq!(bits(&e.eigenvalues.narrow(0, b, 1).unwrap()), bits(&one.eigenvalues));
        }
    }
}

/// The bits of a tensor's entries (as f64).
fn bits(t: &Tensor) -> Vec<u64> {
    t.to_vec_f64().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn empty_and_non_finite() {
    // empty matrices and batches as PyTorch; NaN or inf in the triangle read:
    // NoConvergence naming the first such matrix (PyTorch's LAPACK error for most sizes),
    // checked before any loop, so no hang; NaN outside the triangle is not read
    let e = eigh(&Tensor::zeros((0, 3, 3), DType::F64).unwrap(), Uplo::Lower).unwrap();
    assert_eq!(e.eigenvalues.dims(), &[0, 3]);
    assert_eq!(e.eigenvectors.dims(), &[0, 3, 3]);
    let e = eigh(&Tensor::zeros((2, 0, 0), DType::F64).unwrap(), Uplo::Lower).unwrap();
    assert_eq!(e.eigenvalues.dims(), &[2, 0]);
    assert_eq!(e.eigenvectors.dims(), &[2, 0, 0]);
    for n in [2, 3, 20] {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let a = sym(&[3, n, n], 41);
            let mut v = a.to_vec_f64();
            v[n * n + n] = bad; // (1, 0) of the second matrix: lower triangle
            v[2 * n * n + n * n - 1] = bad; // (n-1, n-1) of the third
            let a = Tensor::from_vec(v, (3, n, n)).unwrap();
            for r in [eigh(&a, Uplo::Lower).map(|_| ()), eigvalsh(&a, Uplo::Lower).map(|_| ())] {
                assert!(
                    matches!(r, Err(Error::NoConvergence { op: "linalg.eigh", batch: 1 })),
                    "{r:?}"
                );
            }
            // the upper triangle of the second does not hold it; the third's diagonal does
            let r = eigh(&a, Uplo::Upper).map(|_| ());
            assert!(matches!(r, Err(Error::NoConvergence { batch: 2, .. })), "{r:?}");
            let ok = eigh(&a.narrow(0, 0, 2).unwrap(), Uplo::Upper).unwrap();
            assert!(ok.eigenvalues.to_vec_f64().iter().all(|x| x.is_finite()));
        }
    }
}

#[test]
fn f32_and_half_dtypes() {
    for n in [4, 20] {
        let a = sym(&[2, n, n], 51);
        let e = eigh(&a, Uplo::Lower).unwrap();
        let a32 = a.to_dtype(DType::F32).unwrap();
        let e32 = eigh(&a32, Uplo::Lower).unwrap();
        assert_eq!(e32.eigenvalues.dtype(), DType::F32);
        check_decomposition(&a32, &e32.eigenvalues, &e32.eigenvectors, 1e-5, "f32");
        common::close(&e32.eigenvalues.to_vec_f64(), &e.eigenvalues.to_vec_f64(), 1e-5);
        let bf = eigvalsh(&a.to_dtype(DType::Bf16).unwrap(), Uplo::Lower).unwrap();
        assert_eq!(bf.dtype(), DType::Bf16);
        common::close(&bf.to_vec_f64(), &e.eigenvalues.to_vec_f64(), 5e-2);
    }
}

#[test]
fn errors() {
    let a = randn(&[3, 4], 1);
    for r in [eigh(&a, Uplo::Lower).map(|_| ()), eigvalsh(&a, Uplo::Lower).map(|_| ())] {
        assert!(matches!(r, Err(Error::BadShape { expected, .. }) if expected.contains("square")));
    }
    let v = randn(&[3], 1);
    assert!(matches!(eigh(&v, Uplo::Lower), Err(Error::BadShape { .. })));
    let i = Tensor::from_vec(vec![1i64, 0, 0, 1], (2, 2)).unwrap();
    assert!(matches!(eigh(&i, Uplo::Lower), Err(Error::UnsupportedDType { .. })));
    assert!(matches!(eigvalsh(&i, Uplo::Lower), Err(Error::UnsupportedDType { .. })));
}

// ---------------------------------------------------------------------------------------
// gradients. The input is symmetrised (X + Xᵀ) inside the checked function, as PyTorch's
// own gradcheck of eigh does: a perturbation of one triangle alone moves a matrix off the
// symmetric ones the op describes.

/// Gauge-invariant outputs of `eigh(X + Xᵀ)`: the eigenvalues, `V diag(c) Vᵀ` and `V ∘ V`.
fn invariant(x: &[Tensor], uplo: Uplo) -> cotangent::Result<Vec<Tensor>> {
    let a = x[0].add(&x[0].mT()?)?;
    let e = eigh(&a, uplo)?;
    let n = a.dims()[a.rank() - 1];
    let c = Tensor::from_vec((0..n).map(|i| 1.0 + i as f64).collect::<Vec<_>>(), n)?;
    let v = &e.eigenvectors;
    let vcv = v.mul(&c)?.matmul(&v.mT()?)?;
    Ok(vec![e.eigenvalues.clone(), vcv, v.mul(v)?])
}

#[test]
fn gradients_first_and_second_order() {
    for (shape, seed) in [(vec![1, 1], 1), (vec![3, 3], 2), (vec![5, 5], 3), (vec![2, 4, 4], 4)] {
        let x = rg(randn(&shape, seed));
        check2(&format!("eigh L {shape:?}"), std::slice::from_ref(&x), |x| {
            invariant(x, Uplo::Lower)
        });
        check2(&format!("eigh U {shape:?}"), std::slice::from_ref(&x), |x| {
            invariant(x, Uplo::Upper)
        });
        check2(&format!("eigvalsh {shape:?}"), &[x], |x| {
            Ok(vec![eigvalsh(&x[0].add(&x[0].mT()?)?, Uplo::Lower)?])
        });
    }
    // the faer path (n > 16), first order
    let x = rg(randn(&[18, 18], 5));
    let o = GradcheckOptions::default();
    let r = gradcheck(|x| Ok(vec![invariant(x, Uplo::Lower)?[1].clone()]), &[x], &o).unwrap();
    assert!(r.passed, "{r}");
}

#[test]
fn symmetric_gradient_of_the_triangle_read() {
    // the gradient is the symmetric one, V (diag(gw) + F ∘ skew(VᵀgV)) Vᵀ, for either
    // triangle, whatever the other triangle holds
    let a = rg(sym(&[4, 4], 61));
    let gw = randn(&[4], 62);
    let gv = randn(&[4, 4], 63);
    for uplo in [Uplo::Lower, Uplo::Upper] {
        let e = eigh(&a, uplo).unwrap();
        let l = e.eigenvalues.mul(&gw).unwrap().sum().unwrap();
        let l = l.add(&e.eigenvectors.mul(&gv).unwrap().sum().unwrap()).unwrap();
        let g = l.backward().unwrap().get(&a).unwrap().clone();
        assert_close(&g, &g.mT().unwrap().contiguous().unwrap(), 1e-13);
    }
}

#[test]
fn eigvalsh_gradient_at_a_repeated_eigenvalue() {
    // A = Q diag(1, 1, 3) Qᵀ: eigvalsh's gradient V diag(gw) Vᵀ needs no gap. Losses
    // symmetric in the repeated eigenvalues are differentiable there: sum(w), sum(w²),
    // sum(exp(w)) and the simple w₃ (finite differences agree); eigh's eigenvalues alone
    // give the same
    let a = with_spectrum(&[1.0, 1.0, 3.0], 71);
    let x = rg(a.mul_scalar(0.5).unwrap());
    let o = GradcheckOptions::default();
    let f = |x: &[Tensor]| {
        let w = eigvalsh(&x[0].add(&x[0].mT()?)?, Uplo::Lower)?;
        Ok(vec![w.sum()?, w.mul(&w)?.sum()?, w.exp()?.sum()?, w.narrow(-1, 2, 1)?])
    };
    let r = gradcheck(f, std::slice::from_ref(&x), &o).unwrap();
    assert!(r.passed, "{r}");
    let g = |x: &[Tensor]| {
        let w = eigh(&x[0].add(&x[0].mT()?)?, Uplo::Lower)?.eigenvalues;
        Ok(vec![w.mul(&w)?.sum()?])
    };
    let r = gradcheck(g, std::slice::from_ref(&x), &o).unwrap();
    assert!(r.passed, "{r}");
    // ∂ sum(w²) / ∂A = 2A (sum(w²) = ‖A‖²_F): finite and exact
    let w = eigvalsh(&x, Uplo::Lower).unwrap();
    let gx = w.mul(&w).unwrap().sum().unwrap().backward().unwrap().get(&x).unwrap().clone();
    assert_close(&gx, &x.mul_scalar(2.0).unwrap(), 1e-12);
}

#[test]
fn eigenvectors_at_a_repeated_eigenvalue() {
    // the projector onto the repeated eigenspace is smooth: finite, correct gradient (the
    // degenerate pair's term is dropped); a loss that depends on the basis within it has
    // no gradient: NotDifferentiable, never NaN
    let a = with_spectrum(&[1.0, 1.0, 3.0], 81);
    let x = rg(a.mul_scalar(0.5).unwrap());
    let c = randn(&[3, 3], 82);
    let o = GradcheckOptions::default();
    let projector = move |x: &[Tensor]| {
        let v = eigh(&x[0].add(&x[0].mT()?)?, Uplo::Lower)?.eigenvectors.narrow(-1, 0, 2)?;
        Ok(vec![v.matmul(&v.mT()?)?.mul(&c)?.sum()?])
    };
    let r = gradcheck(projector, std::slice::from_ref(&x), &o).unwrap();
    assert!(r.passed, "{r}");
    let e = eigh(&x, Uplo::Lower).unwrap();
    let l = e.eigenvectors.narrow(-1, 0, 1).unwrap().sum().unwrap();
    match l.backward() {
        Err(Error::NotDifferentiable { op, reason }) => {
            assert_eq!(op, "linalg.eigh");
            assert!(reason.contains("repeated eigenvalue"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {:?}", other.map(|_| ())),
    }
    // the simple eigenvector (eigenvalue 3) is differentiable
    let l = e.eigenvectors.narrow(-1, 2, 1).unwrap().mul(&randn(&[3, 1], 83)).unwrap();
    let g = l.sum().unwrap().backward().unwrap().get(&x).unwrap().clone();
    assert!(g.to_vec_f64().iter().all(|v| v.is_finite()));
}

// ---------------------------------------------------------------------------------------
// batches of small matrices: several matrices at a time (one per SIMD lane), and the VJP
// fused per matrix when the backward pass is not recorded

/// A batch `(count, n, n)` of symmetric matrices in which matrix 1 is zero, matrix 2 is
/// diagonal with a repeated entry, matrix 3 is `diag(1, 1, 3, …)` rotated (repeated
/// eigenvalue), matrix 4 is scaled by 1e-300 and matrix 5 by 1e250 (1e-30 and 1e30 for
/// f32) where they exist.
fn awkward_batch(count: usize, n: usize, seed: u64, dt: DType) -> Vec<f64> {
    let (tiny, huge) = if dt == DType::F32 { (1e-30, 1e30) } else { (1e-300, 1e250) };
    let mut v = sym(&[count, n, n], seed).to_vec_f64();
    let nn = n * n;
    if count > 1 {
        v[nn..2 * nn].fill(0.0);
    }
    if count > 2 {
        let m = &mut v[2 * nn..3 * nn];
        m.fill(0.0);
        for i in 0..n {
            m[i * n + i] = if i < 2 { 2.0 } else { i as f64 };
        }
    }
    if count > 3 && n > 1 {
        let d: Vec<f64> = (0..n).map(|i| if i < 2 { 1.0 } else { 1.0 + i as f64 }).collect();
        v[3 * nn..4 * nn].copy_from_slice(&with_spectrum(&d, seed + 1).to_vec_f64());
    }
    if count > 4 {
        v[4 * nn..5 * nn].iter_mut().for_each(|x| *x *= tiny);
    }
    if count > 5 {
        v[5 * nn..6 * nn].iter_mut().for_each(|x| *x *= huge);
    }
    v
}

#[test]
fn lane_batches_match_single_matrices() {
    // batches of up to 16 x 16 matrices run eight at a time through the single-matrix
    // algorithm over SIMD lanes (Jacobi to 4 x 4, tridiagonal QL above): each matrix gets
    // exactly the bits it gets alone, for batch sizes around the lane count, both
    // triangles, strided input, f64 and f32, with zero, diagonal, degenerate, tiny and
    // huge matrices, and NaN/inf matrices failing as alone
    for n in [2, 3, 4, 5, 8, 16] {
        for count in [2, 7, 8, 9, 13, 16, 21] {
            if n > 4 && ![2, 9, 21].contains(&count) {
                continue;
            }
            for dt in [DType::F64, DType::F32] {
                let v = awkward_batch(count, n, 100 + n as u64 + count as u64, dt);
                let a = Tensor::from_vec(v, vec![count, n, n]).unwrap().to_dtype(dt).unwrap();
                // a transposed view: the same symmetric matrices through other strides
                let at = a.mT().unwrap().contiguous().unwrap().mT().unwrap();
                for (x, uplo) in [(&a, Uplo::Lower), (&at, Uplo::Upper), (&at, Uplo::Lower)] {
                    let e = eigh(x, uplo).unwrap();
                    let w = eigvalsh(x, uplo).unwrap();
                    let what = format!("n {n} count {count} {dt:?} {uplo:?}");
                    for b in 0..count {
                        let xb = x.narrow(0, b, 1).unwrap();
                        let one = eigh(&xb, uplo).unwrap();
                        assert_eq!(
                            bits(&e.eigenvalues.narrow(0, b, 1).unwrap()),
                            bits(&one.eigenvalues),
                            "{what}: eigenvalues of {b}"
                        );
                        assert_eq!(
                            bits(&e.eigenvectors.narrow(0, b, 1).unwrap()),
                            bits(&one.eigenvectors),
                            "{what}: eigenvectors of {b}"
                        );
                        assert_eq!(
                            bits(&w.narrow(0, b, 1).unwrap()),
                            bits(&eigvalsh(&xb, uplo).unwrap()),
                            "{what}: eigvalsh of {b}"
                        );
                    }
                    let tol = if dt == DType::F32 { 1e-5 } else { 1e-13 };
                    let a64 = x.to_dtype(DType::F64).unwrap();
                    // the huge and tiny matrices: checked relative to their scale above
                    let keep: Vec<usize> = (0..count).filter(|&b| b != 4 && b != 5).collect();
                    for b in keep {
                        let ab = a64.narrow(0, b, 1).unwrap();
                        let wb = e.eigenvalues.narrow(0, b, 1).unwrap().to_dtype(DType::F64);
                        let vb = e.eigenvectors.narrow(0, b, 1).unwrap().to_dtype(DType::F64);
                        check_decomposition(&ab, &wb.unwrap(), &vb.unwrap(), tol, &what);
                    }
                }
                // a NaN in matrix count - 2 and an inf in the last: the first one is named
                let mut v = awkward_batch(count, n, 7, dt);
                v[(count - 2) * n * n + n * n - 1] = f64::NAN;
                v[(count - 1) * n * n] = f64::INFINITY;
                let a = Tensor::from_vec(v, vec![count, n, n]).unwrap().to_dtype(dt).unwrap();
                for r in [eigh(&a, Uplo::Lower).map(|_| ()), eigvalsh(&a, Uplo::Lower).map(|_| ())]
                {
                    assert!(
                        matches!(r, Err(Error::NoConvergence { batch, .. }) if batch == count - 2),
                        "{r:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn lane_batches_are_deterministic_across_thread_counts() {
    // a batch large enough to be split across rayon tasks: the same bits with one thread
    // and with several
    for (count, n) in [(1000, 4), (203, 9), (77, 16)] {
        let a = sym(&[count, n, n], 131);
        let e = eigh(&a, Uplo::Lower).unwrap();
        let w = eigvalsh(&a, Uplo::Lower).unwrap();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let et = pool.install(|| eigh(&a, Uplo::Lower).unwrap());
            assert_eq!(e.eigenvalues.to_vec_f64(), et.eigenvalues.to_vec_f64());
            assert_eq!(e.eigenvectors.to_vec_f64(), et.eigenvectors.to_vec_f64());
            let wt = pool.install(|| eigvalsh(&a, Uplo::Lower).unwrap());
            assert_eq!(w.to_vec_f64(), wt.to_vec_f64());
        }
    }
}

#[test]
fn large_matrices_are_deterministic_across_thread_counts() {
    // one matrix large enough for the threaded paths (the tridiagonalisation's column
    // ranges, the divide and conquer's joins): the same bits with one thread and several
    let a = sym(&[400, 400], 7);
    let e = eigh(&a, Uplo::Lower).unwrap();
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let et = pool.install(|| eigh(&a, Uplo::Lower).unwrap());
        assert_eq!(e.eigenvalues.to_vec_f64(), et.eigenvalues.to_vec_f64());
        assert_eq!(e.eigenvectors.to_vec_f64(), et.eigenvectors.to_vec_f64());
    }
}

#[test]
fn fused_backward_matches_the_recorded_one() {
    // without create_graph the VJP runs fused per matrix; with it, as tensor ops: the
    // same gradient for eigenvalue and eigenvector cotangents alone and together, strided
    // (transposed, expanded) cotangents, batches, f32, sizes of each forward path
    for (shape, dt) in [
        (vec![1, 1], DType::F64),
        (vec![3, 3], DType::F64),
        (vec![19, 4, 4], DType::F64),
        (vec![11, 16, 16], DType::F64),
        (vec![2, 3, 20, 20], DType::F64),
        (vec![9, 3, 3], DType::F32),
        (vec![5, 7, 7], DType::F32),
        // above the fused orders: the first-order middle factor in one host pass
        (vec![2, 40, 40], DType::F64),
        (vec![37, 37], DType::F32),
    ] {
        let a = rg(sym(&shape, 141).to_dtype(dt).unwrap());
        let e = eigh(&a, Uplo::Lower).unwrap();
        let n = shape[shape.len() - 1];
        let gw = randn(&[n], 142).to_dtype(dt).unwrap().broadcast_to(e.eigenvalues.shape().clone());
        let gw = gw.unwrap();
        let gv = randn(e.eigenvectors.dims(), 143).to_dtype(dt).unwrap().mT().unwrap();
        let tol = if dt == DType::F32 { 1e-4 } else { 1e-11 };
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
            assert_eq!(fused.dims(), a.dims());
            let scale = 1.0 + max_abs(&recorded.to_dtype(DType::F64).unwrap());
            let d =
                fused.to_dtype(DType::F64).unwrap().sub(&recorded.to_dtype(DType::F64).unwrap());
            assert!(max_abs(&d.unwrap()) <= tol * scale, "{shape:?} {dt:?} {w_used} {v_used}");
        }
    }
}

#[test]
fn fused_backward_at_repeated_eigenvalues() {
    // a batch with a repeated eigenvalue among regular matrices: the projector loss
    // (basis-independent) has the same finite gradient on both paths; a basis-dependent
    // loss fails with the same NotDifferentiable on both; eigenvalue-only losses are
    // finite on both; at an order of the fused kernel and above them
    for n in [4, 40] {
        repeated_eigenvalue_on_both_paths(n);
    }
}

fn repeated_eigenvalue_on_both_paths(n: usize) {
    let mut v = sym(&[6, n, n], 151).to_vec_f64();
    let spectrum: Vec<f64> = (0..n).map(|i| if i == 0 { 1.0 } else { i as f64 }).collect();
    v[3 * n * n..4 * n * n].copy_from_slice(&with_spectrum(&spectrum, 152).to_vec_f64());
    let a = rg(Tensor::from_vec(v, vec![6, n, n]).unwrap());
    let e = eigh(&a, Uplo::Lower).unwrap();
    let c = randn(&[n, n], 153);
    let vs = e.eigenvectors.narrow(-1, 0, 2).unwrap();
    let proj = vs.matmul(&vs.mT().unwrap()).unwrap().mul(&c).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&proj], &[None], &a);
    let (fused, recorded) = (fused.unwrap(), recorded.unwrap());
    assert!(fused.to_vec_f64().iter().all(|x| x.is_finite()));
    assert_close(&fused, &recorded, 1e-10);
    let basis = e.eigenvectors.narrow(-1, 0, 1).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&basis], &[None], &a);
    for r in [fused, recorded] {
        match r {
            Err(Error::NotDifferentiable { op, reason }) => {
                assert_eq!(op, "linalg.eigh");
                assert!(reason.contains("repeated eigenvalue"), "{reason}");
            }
            other => panic!("expected NotDifferentiable, got {:?}", other.map(|_| ())),
        }
    }
    let wl = e.eigenvalues.mul(&e.eigenvalues).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&wl], &[None], &a);
    assert_close(&fused.unwrap(), &recorded.unwrap(), 1e-12);
    let wv = eigvalsh(&a, Uplo::Lower).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&wv], &[None], &a);
    assert_close(&fused.unwrap(), &recorded.unwrap(), 1e-12);
}

#[test]
fn fused_backward_of_lane_batches() {
    // the benchmark's loss (w.sum() + V.square().sum()) and one with a transposed gV, on
    // lane-kernel batches (not a multiple of the lane count), both triangles, strided
    // (transposed, sliced) input, f64 and f32: the fused VJP (not recorded) against the
    // tensor-op one; then a 16x16 repeated eigenvalue among regular matrices: finite and
    // equal for a projector loss, NotDifferentiable on both paths for a basis-dependent one
    for (count, n, dt) in [(21, 16, DType::F64), (13, 8, DType::F64), (11, 16, DType::F32)] {
        // only the triangle read counts: the rest need not be symmetric
        let base = randn(&[count, n, n + 2], 171 + n as u64);
        for strided in [false, true] {
            let a = if strided {
                base.narrow(-1, 1, n).unwrap().mT().unwrap()
            } else {
                base.narrow(-1, 1, n).unwrap().contiguous().unwrap()
            };
            let a = rg(a.to_dtype(dt).unwrap());
            for uplo in [Uplo::Lower, Uplo::Upper] {
                let e = eigh(&a, uplo).unwrap();
                let sq = e.eigenvectors.square().unwrap().sum().unwrap();
                let loss = e.eigenvalues.sum().unwrap().add(&sq).unwrap();
                let c = randn(&[n, n], 172).to_dtype(dt).unwrap();
                let lin = e.eigenvectors.mT().unwrap().mul(&c).unwrap().sum().unwrap();
                for l in [&loss, &lin] {
                    let (fused, recorded) = both_paths(&[l], &[None], &a);
                    let (fused, recorded) = (fused.unwrap(), recorded.unwrap());
                    let (f, r) = (
                        fused.to_dtype(DType::F64).unwrap(),
                        recorded.to_dtype(DType::F64).unwrap(),
                    );
                    let tol = if dt == DType::F32 { 1e-4 } else { 1e-11 };
                    let scale = 1.0 + max_abs(&r);
                    assert!(
                        max_abs(&f.sub(&r).unwrap()) <= tol * scale,
                        "{count}x{n} {dt:?} strided {strided} {uplo:?}"
                    );
                }
            }
        }
    }
    let n = 16;
    let mut v = sym(&[11, n, n], 173).to_vec_f64();
    let d: Vec<f64> = (0..n).map(|k| if k < 2 { 1.0 } else { 1.0 + k as f64 }).collect();
    v[5 * n * n..6 * n * n].copy_from_slice(&with_spectrum(&d, 174).to_vec_f64());
    let a = rg(Tensor::from_vec(v, vec![11, n, n]).unwrap());
    let e = eigh(&a, Uplo::Lower).unwrap();
    let vs = e.eigenvectors.narrow(-1, 0, 2).unwrap();
    let c = randn(&[n, n], 175);
    let proj = vs.matmul(&vs.mT().unwrap()).unwrap().mul(&c).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&proj], &[None], &a);
    let (fused, recorded) = (fused.unwrap(), recorded.unwrap());
    assert!(fused.to_vec_f64().iter().all(|x| x.is_finite()));
    assert_close(&fused, &recorded, 1e-9);
    let basis = e.eigenvectors.narrow(-1, 0, 1).unwrap().sum().unwrap();
    let (fused, recorded) = both_paths(&[&basis], &[None], &a);
    for r in [fused, recorded] {
        assert!(matches!(r, Err(Error::NotDifferentiable { .. })), "{:?}", r.map(|_| ()));
    }
}
