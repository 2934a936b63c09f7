//! `linalg.matrix_exp`: invariants (exp(0) = I, exp(A) exp(−A) = I, diagonal and
//! commuting matrices, closed forms), every Padé degree and the squaring phase, layouts,
//! NaN/inf, gradients against finite differences (first and second order), and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, check2, max_abs, randn, rg};
use cotangent::linalg::{eigh, matrix_exp, Uplo};
use cotangent::{autograd, linalg, DType, Error, Tensor};

/// `n x n` normal entries scaled to 1-norm about `norm`.
fn scaled(shape: &[usize], norm: f64, seed: u64) -> Tensor {
    let n = shape[shape.len() - 1];
    randn(shape, seed).mul_scalar(norm / (0.8 * n as f64)).unwrap()
}

#[test]
fn exp_of_zero_and_diagonal_matrices() {
    // exp(0) = I; exp(diag(d)) = diag(exp(d)), including large entries (squaring)
    for n in [0, 1, 3, 30] {
        let z = Tensor::zeros((2, n, n), DType::F64).unwrap();
        let e = matrix_exp(&z).unwrap();
        assert_eq!(e.dims(), &[2, n, n]);
        let eye = Tensor::eye(n, DType::F64).unwrap();
        assert_eq!(max_abs(&e.sub(&eye).unwrap()), 0.0);
    }
    let d = Tensor::from_vec(vec![-3.0f64, 0.5, 2.0, 9.0, -20.0], 5).unwrap();
    let e = matrix_exp(&d.diag_embed(0, -2, -1).unwrap()).unwrap();
    assert_close(&e, &d.exp().unwrap().diag_embed(0, -2, -1).unwrap(), 1e-13);
}

#[test]
fn inverse_and_commuting_products_over_norms() {
    // exp(A) exp(−A) = I, exp(3A) = exp(A) exp(2A) for 1-norms from 1e-3 (degree 3) to
    // 60 (scaling and squaring), small (direct products) and large (faer) sizes, batched
    for n in [2, 4, 16, 40] {
        for norm in [1e-3, 0.1, 0.5, 1.5, 4.0, 60.0] {
            let a = scaled(&[2, n, n], norm, (n * 100) as u64 + norm as u64);
            let e = matrix_exp(&a).unwrap();
            let einv = matrix_exp(&a.neg().unwrap()).unwrap();
            let eye = Tensor::eye(n, DType::F64).unwrap();
            let prod = e.matmul(&einv).unwrap();
            let cond = max_abs(&e) * max_abs(&einv) * n as f64;
            assert!(
                max_abs(&prod.sub(&eye).unwrap()) < 1e-13 * cond,
                "n {n} norm {norm}: exp(A) exp(-A)"
            );
            let e2 = matrix_exp(&a.mul_scalar(2.0).unwrap()).unwrap();
            let e3 = matrix_exp(&a.mul_scalar(3.0).unwrap()).unwrap();
            let scale = max_abs(&e3) + max_abs(&e) * max_abs(&e2) * n as f64;
            assert!(
                max_abs(&e.matmul(&e2).unwrap().sub(&e3).unwrap()) < 1e-12 * scale,
                "n {n} norm {norm}: commuting"
            );
        }
    }
}

#[test]
fn closed_forms() {
    // symmetric A = V diag(w) Vᵀ: exp(A) = V diag(e^w) Vᵀ (norms up to 50); a nilpotent
    // Jordan block; a rotation generator
    for (n, s) in [(3, 1.0), (5, 10.0), (20, 50.0)] {
        let x = randn(&[n, n], n as u64);
        let a = x.add(&x.mT().unwrap()).unwrap().mul_scalar(s / (2.0 * n as f64)).unwrap();
        let e = eigh(&a, Uplo::Lower).unwrap();
        let v = &e.eigenvectors;
        let want = v.mul(&e.eigenvalues.exp().unwrap()).unwrap().matmul(&v.mT().unwrap()).unwrap();
        let got = matrix_exp(&a).unwrap();
        assert!(max_abs(&got.sub(&want).unwrap()) < 1e-13 * max_abs(&want) * n as f64, "sym {n}");
    }
    let j = Tensor::from_vec(vec![0.0f64, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], (3, 3)).unwrap();
    let e = matrix_exp(&j).unwrap().to_vec_f64();
    common::close(&e, &[1.0, 1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0], 1e-15);
    let t = 7.0f64;
    let r = Tensor::from_vec(vec![0.0, -t, t, 0.0], (2, 2)).unwrap();
    common::close(
        &matrix_exp(&r).unwrap().to_vec_f64(),
        &[t.cos(), -t.sin(), t.sin(), t.cos()],
        1e-13,
    );
}

#[test]
fn layouts_and_dtypes() {
    // transposed and sliced inputs: exp(Aᵀ) = exp(A)ᵀ; f32 within its precision; bf16
    // computed in f32
    let a = scaled(&[3, 6, 6], 3.0, 5);
    let e = matrix_exp(&a).unwrap();
    let et = matrix_exp(&a.mT().unwrap()).unwrap();
    assert_close(&et, &e.mT().unwrap(), 1e-14);
    let big = scaled(&[3, 8, 8], 3.0, 6);
    let sl = big.narrow(-1, 1, 6).unwrap().narrow(-2, 2, 6).unwrap();
    assert_eq!(
        matrix_exp(&sl).unwrap().to_vec_f64(),
        matrix_exp(&sl.contiguous().unwrap()).unwrap().to_vec_f64()
    );
    for norm in [0.2, 3.0, 20.0] {
        let a = scaled(&[2, 5, 5], norm, 7);
        let e = matrix_exp(&a).unwrap();
        let e32 = matrix_exp(&a.to_dtype(DType::F32).unwrap()).unwrap();
        assert_eq!(e32.dtype(), DType::F32);
        let err = max_abs(&e32.to_dtype(DType::F64).unwrap().sub(&e).unwrap());
        assert!(err < 1e-5 * (1.0 + max_abs(&e)) * 5.0, "f32 norm {norm}: {err}");
    }
    let h = matrix_exp(&a.to_dtype(DType::Bf16).unwrap()).unwrap();
    assert_eq!(h.dtype(), DType::Bf16);
}

#[test]
fn non_finite_and_errors() {
    // NaN or inf anywhere: NaN everywhere for that matrix (as PyTorch), no hang
    for bad in [f64::NAN, f64::INFINITY] {
        let mut v = scaled(&[2, 3, 3], 1.0, 9).to_vec_f64();
        v[9 + 4] = bad;
        let e = matrix_exp(&Tensor::from_vec(v, (2, 3, 3)).unwrap()).unwrap().to_vec_f64();
        assert!(e[..9].iter().all(|x| x.is_finite()));
        assert!(e[9..].iter().all(|x| x.is_nan()));
    }
    assert!(matches!(
        matrix_exp(&randn(&[3, 4], 1)),
        Err(Error::BadShape { expected, .. }) if expected.contains("square")
    ));
    assert!(matches!(matrix_exp(&randn(&[3], 1)), Err(Error::BadShape { .. })));
    let i = Tensor::from_vec(vec![1i64, 0, 0, 1], (2, 2)).unwrap();
    assert!(matches!(matrix_exp(&i), Err(Error::UnsupportedDType { .. })));
}

#[test]
fn gradients_first_and_second_order() {
    // gA = [exp([[Aᵀ, G], [0, Aᵀ]])]₁₂ against finite differences, at norms needing each
    // Padé degree and the squaring phase, batched; second order through the same rule
    for (shape, norm, seed) in [
        (vec![1, 1], 0.5, 1),
        (vec![3, 3], 0.01, 2),
        (vec![3, 3], 1.0, 3),
        (vec![4, 4], 8.0, 4),
        (vec![2, 3, 3], 2.0, 5),
    ] {
        let a = rg(scaled(&shape, norm, seed));
        check2(&format!("matrix_exp {shape:?} norm {norm}"), &[a], |x| {
            Ok(vec![matrix_exp(&x[0])?])
        });
    }
    // composition with another op
    let a = rg(scaled(&[3, 3], 1.0, 8));
    let w = randn(&[3, 3], 9);
    let w = &w;
    check2("composition", &[a], move |x| {
        Ok(vec![matrix_exp(&x[0].matmul(&x[0])?)?.mul(w)?.sum()?])
    });
}

/// The gradient of `sum(exp(A) ∘ W)`, i.e. `L(Aᵀ, W)`, computed by the backward.
fn vjp(a: &Tensor, w: &Tensor) -> Tensor {
    let a = rg(a.clone());
    let loss = matrix_exp(&a).unwrap().mul(w).unwrap().sum().unwrap();
    cotangent::autograd::grad(&[&loss], &[None], &[&a], cotangent::autograd::GradOptions::default())
        .unwrap()[0]
        .clone()
        .unwrap()
}

/// `L(Aᵀ, W)` as PyTorch computes it: the top-right block of the exponential of the
/// explicit `2n x 2n` block matrix `[[Aᵀ, W], [0, Aᵀ]]`.
fn block_reference(a: &Tensor, w: &Tensor) -> Tensor {
    let n = a.dims()[a.rank() - 1];
    let at = a.mT().unwrap();
    let top = Tensor::cat(&[&at, w], -1).unwrap();
    let bottom = Tensor::cat(&[&at.zeros_like().unwrap(), &at], -1).unwrap();
    let m = Tensor::cat(&[&top, &bottom], -2).unwrap();
    matrix_exp(&m).unwrap().narrow(-2, 0, n).unwrap().narrow(-1, n, n).unwrap()
}

#[test]
fn backward_equals_the_block_matrix_exponential() {
    // the structured kernel (n x n blocks, the cotangent scaled by a power of two) against
    // the exponential of the 2n x 2n block matrix, over orders with unrolled loops (2, 3,
    // 4, 16), the general small loop (1, 5, 17) and faer's products (30), cotangents far
    // larger and smaller than A, norms needing each degree and squarings, batched
    for (n, norm, wscale, seed) in [
        (1, 0.5, 1.0, 1),
        (2, 0.01, 1.0, 2),
        (3, 1.0, 1e6, 3),
        (4, 0.3, 1e-6, 4),
        (4, 9.0, 1.0, 5),
        (5, 2.0, 30.0, 6),
        (16, 1.5, 1.0, 7),
        (16, 20.0, 1e3, 8),
        (17, 0.2, 1.0, 9),
        (30, 3.0, 0.01, 10),
    ] {
        let a = scaled(&[3, n, n], norm, seed);
        let w = randn(&[3, n, n], seed + 100).mul_scalar(wscale).unwrap();
        let got = vjp(&a, &w);
        // L is linear in W: the reference takes W / wscale (its own 2n x 2n exponential
        // would square many more times at a large W, and lose accuracy doing so)
        let want = block_reference(&a, &w.div_scalar(wscale).unwrap()).mul_scalar(wscale).unwrap();
        let scale = max_abs(&want);
        let err = max_abs(&got.sub(&want).unwrap());
        assert!(err <= 1e-12 * scale.max(f64::MIN_POSITIVE), "n {n} norm {norm}: {err} of {scale}");
        // and in f32
        let got32 = vjp(&a.to_dtype(DType::F32).unwrap(), &w.to_dtype(DType::F32).unwrap());
        let err32 = max_abs(&got32.to_dtype(DType::F64).unwrap().sub(&want).unwrap());
        assert!(err32 <= 1e-4 * scale, "f32 n {n} norm {norm}: {err32} of {scale}");
    }
    // a zero cotangent gives a zero gradient; a zero A gives the cotangent itself
    let a = scaled(&[4, 4], 1.0, 11);
    assert_eq!(max_abs(&vjp(&a, &Tensor::zeros((4, 4), DType::F64).unwrap())), 0.0);
    let w = randn(&[4, 4], 12);
    assert_close(&vjp(&Tensor::zeros((4, 4), DType::F64).unwrap(), &w), &w, 1e-15);
}

#[test]
fn backward_of_non_finite_and_half_inputs() {
    // NaN or inf in A: a NaN gradient for that matrix only (as the block exponential)
    let mut v = scaled(&[2, 3, 3], 1.0, 13).to_vec_f64();
    v[9 + 4] = f64::INFINITY;
    let a = Tensor::from_vec(v, (2, 3, 3)).unwrap();
    let g = vjp(&a, &Tensor::ones((2, 3, 3), DType::F64).unwrap()).to_vec_f64();
    assert!(g[..9].iter().all(|x| x.is_finite()));
    assert!(g[9..].iter().all(|x| x.is_nan()));
    // bf16: computed in f32 and rounded back, as the forward
    let a = scaled(&[4, 4], 1.0, 14);
    let w = randn(&[4, 4], 15);
    let want = block_reference(&a, &w);
    let got = vjp(&a.to_dtype(DType::Bf16).unwrap(), &w.to_dtype(DType::Bf16).unwrap());
    assert_eq!(got.dtype(), DType::Bf16);
    let err = max_abs(&got.to_dtype(DType::F64).unwrap().sub(&want).unwrap());
    assert!(err <= 3e-2 * max_abs(&want), "bf16: {err}");
}

#[test]
fn gradients_of_unrolled_orders_and_large_cotangents() {
    // second order through the structured backward at orders with unrolled loops, with a
    // cotangent much larger than A (scaled before the Padé evaluation)
    for (n, norm, seed) in [(2, 1.0, 16), (4, 3.0, 17)] {
        let a = rg(scaled(&[n, n], norm, seed));
        let w = randn(&[n, n], seed + 1).mul_scalar(1e3).unwrap();
        let w = &w;
        check2(&format!("matrix_exp n {n}"), &[a], move |x| {
            Ok(vec![matrix_exp(&x[0])?.mul(w)?.sum()?])
        });
    }
}

/// Found by fuzzing (issue 49). Non-normal matrices of large norm: the squarings follow
/// the norms of the powers (Al-Mohy and Higham 2009), so a nilpotent matrix with a huge
/// entry gets `I + A` (it came out NaN from 1e20 on, as PyTorch gets it right), and a
/// matrix whose column sums overflow gets an answer, not a hang (the squaring count was
/// `i32::MAX`), forward and backward.
#[test]
fn large_non_normal_matrices_and_overflowing_norms() {
    for big in [1e6, 1e20, 1e200, 1e300] {
        for n in [2usize, 3, 5] {
            // strictly lower triangular: nilpotent, exp = I + A + A²/2 + ...; with one
            // entry below the diagonal, A² = 0
            let mut v = vec![0.0; n * n];
            v[(n - 1) * n] = big;
            let a = Tensor::from_vec(v.clone(), (n, n)).unwrap();
            let e = linalg::matrix_exp(&a).unwrap().to_vec::<f64>().unwrap();
            for i in 0..n {
                for j in 0..n {
                    let want = v[i * n + j] + if i == j { 1.0 } else { 0.0 };
                    let got = e[i * n + j];
                    assert!(
                        (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                        "n = {n}, {big}: ({i}, {j}) {got} vs {want}"
                    );
                }
            }
        }
    }
    // a shifted Jordan block: exp(λI + N) = e^λ (I + N) for N² = 0
    let a = Tensor::from_vec(vec![1.0, 1e5, 0.0, 1.0], (2, 2)).unwrap();
    let e = linalg::matrix_exp(&a).unwrap().to_vec::<f64>().unwrap();
    let want = [std::f64::consts::E, 1e5 * std::f64::consts::E, 0.0, std::f64::consts::E];
    for (g, w) in e.iter().zip(want) {
        assert!((g - w).abs() <= 1e-14 * w.abs(), "{g} vs {w}");
    }
    // column sums that overflow: exp is +inf everywhere (A = 1e308 J, J² = 2J)
    let a = Tensor::from_vec(vec![1e308; 4], (2, 2)).unwrap();
    let e = linalg::matrix_exp(&a).unwrap().to_vec::<f64>().unwrap();
    assert!(e.iter().all(|&x| x == f64::INFINITY), "{e:?}");
    // the backward with a cotangent of the largest finite values finishes
    let a = Tensor::from_vec(vec![2.0, 0.7, 0.7, 2.0], (2, 2))
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let y = linalg::matrix_exp(&a).unwrap();
    let g = Tensor::from_vec(vec![f64::MAX; 4], (2, 2)).unwrap();
    let ga = autograd::grad(&[&y], &[Some(&g)], &[&a], autograd::GradOptions::default()).unwrap();
    assert!(ga[0].as_ref().unwrap().to_vec::<f64>().unwrap().iter().all(|x| !x.is_nan()));
}
