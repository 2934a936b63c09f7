//! `linalg.matrix_sqrth`: values against an independent iteration (Denman–Beavers) and
//! PyTorch 2.15, invariants (X X = A, symmetry), the lower triangle read, indefinite
//! input clamped as PyTorch, gradients (first and second order, forward mode, forward over
//! reverse) real and complex, PyTorch's gradient and tangent, dtypes and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use common::{assert_close, both_paths, check2, check_fwd, close, hpd, max_abs, randn, spd};
use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
use cotangent::linalg::{inv, matrix_sqrth};
use cotangent::{DType, Error, Tensor};

/// The square root of an SPD matrix by the Denman–Beavers iteration
/// (`Y ← (Y + Z⁻¹)/2`, `Z ← (Z + Y⁻¹)/2` from `Y = A`, `Z = I`), independent of `eigh`.
fn denman_beavers(a: &Tensor) -> Tensor {
    let n = a.dims()[a.rank() - 1];
    let eye = Tensor::eye(n, a.dtype()).unwrap().broadcast_to(a.shape().clone()).unwrap();
    let (mut y, mut z) = (a.clone(), eye.clone());
    for _ in 0..60 {
        let yi = inv(&y).unwrap();
        let zi = inv(&z).unwrap();
        y = y.add(&zi).unwrap().mul_scalar(0.5).unwrap();
        z = z.add(&yi).unwrap().mul_scalar(0.5).unwrap();
    }
    y
}

fn sym(x: &Tensor) -> Tensor {
    x.add(&x.mH().unwrap()).unwrap().mul_scalar(0.5).unwrap()
}

#[test]
fn values_match_an_independent_iteration_and_pytorch() {
    for shape in [vec![1, 1], vec![3, 3], vec![2, 4, 4], vec![40, 40]] {
        let a = spd(&shape, 1);
        let x = matrix_sqrth(&a).unwrap();
        assert_close(&x, &denman_beavers(&a), 1e-12);
        assert_close(&x.matmul(&x).unwrap(), &a, 1e-12);
        assert_close(&x, &x.mT().unwrap(), 1e-14);
    }
    // PyTorch 2.15: torch.linalg.matrix_sqrth of this matrix
    let a = Tensor::from_vec(vec![4.0f64, 1.0, 0.5, 1.0, 3.0, 0.25, 0.5, 0.25, 2.0], (3, 3));
    let want = [
        1.9767517052629198,
        0.2686342951331756,
        0.14243704299948962,
        0.2686342951331756,
        1.7097413892163236,
        0.06797056332658369,
        0.14243704299948962,
        0.06797056332658369,
        1.4053795541783822,
    ];
    close(&matrix_sqrth(&a.unwrap()).unwrap().to_vec_f64(), &want, 1e-15);
    // complex Hermitian: PyTorch's [[1.96212, 0.27395 − 0.27395i], [..., 1.68817]]
    let c = Tensor::complex(
        &Tensor::from_vec(vec![4.0f64, 1.0, 1.0, 3.0], (2, 2)).unwrap(),
        &Tensor::from_vec(vec![0.0f64, -1.0, 1.0, 0.0], (2, 2)).unwrap(),
    )
    .unwrap();
    let xc = matrix_sqrth(&c).unwrap();
    close(
        &xc.real().unwrap().to_vec_f64(),
        &[1.9621165057908911, 0.27395147170889816, 0.27395147170889816, 1.688165034081992],
        1e-15,
    );
    close(
        &xc.imag().unwrap().to_vec_f64(),
        &[0.0, -0.27395147170889805, 0.27395147170889805, 0.0],
        1e-15,
    );
    let h = hpd(&[2, 5, 5], 2);
    let x = matrix_sqrth(&h).unwrap();
    assert_close(&x.matmul(&x).unwrap(), &h, 1e-12);
    assert_close(&x, &denman_beavers(&h), 1e-12);
}

#[test]
fn the_lower_triangle_is_read_and_negative_eigenvalues_clamp() {
    let a = spd(&[4, 4], 3);
    let garbage = a.add(&randn(&[4, 4], 4).triu(1).unwrap()).unwrap();
    assert_close(&matrix_sqrth(&garbage).unwrap(), &matrix_sqrth(&a).unwrap(), 0.0);
    // PyTorch: diag(1, −1, 4) gives diag(1, 0, 2)
    let d = Tensor::from_vec(vec![1.0f64, -1.0, 4.0], 3).unwrap().diag_embed(0, -2, -1).unwrap();
    let x = matrix_sqrth(&d).unwrap();
    close(&x.to_vec_f64(), &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0], 0.0);
    // empty matrices and batches
    assert_eq!(matrix_sqrth(&Tensor::zeros((0, 0), DType::F64).unwrap()).unwrap().dims(), &[0, 0]);
    assert_eq!(
        matrix_sqrth(&Tensor::zeros((2, 0, 0), DType::F64).unwrap()).unwrap().dims(),
        &[2, 0, 0]
    );
}

#[test]
fn gradients_first_and_second_order_both_modes() {
    // f(X) = sqrth(X Xᵀ/n + I): a symmetric positive-definite argument for any X
    let f = |x: &[Tensor]| {
        let n = x[0].dims()[x[0].rank() - 1];
        let eye = Tensor::eye(n, x[0].dtype())?;
        let a = x[0].matmul(&x[0].mH()?)?.div_scalar(n as f64)?.add(&eye)?;
        Ok(vec![matrix_sqrth(&a)?])
    };
    check2("matrix_sqrth", &[randn(&[3, 3], 5).with_requires_grad(true).unwrap()], f);
    check2("matrix_sqrth batched", &[randn(&[2, 4, 4], 6).with_requires_grad(true).unwrap()], f);
    check_fwd("matrix_sqrth", &[randn(&[3, 3], 7).with_requires_grad(true).unwrap()], f);
    let z = common::crandn(&[3, 3], 8).with_requires_grad(true).unwrap();
    check2("matrix_sqrth complex", std::slice::from_ref(&z), f);
    check_fwd("matrix_sqrth complex", &[z], f);
}

#[test]
fn gradient_and_tangent_are_pytorchs() {
    // PyTorch 2.15 on the matrix of the values test, loss Σ W ∘ X
    let a = Tensor::from_vec(vec![4.0f64, 1.0, 0.5, 1.0, 3.0, 0.25, 0.5, 0.25, 2.0], (3, 3))
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let w =
        Tensor::from_vec(vec![1.0f64, -2.0, 0.5, 0.25, 1.5, -1.0, 2.0, 0.0, -0.5], (3, 3)).unwrap();
    let x = matrix_sqrth(&a).unwrap();
    let (fused, recorded) = both_paths(&[&x], &[Some(&w)], &a);
    let want = [
        0.2647290257101711,
        -0.29243383916735505,
        0.3879201932943578,
        -0.29243383916735505,
        0.4920355017325446,
        -0.18678238632717442,
        0.3879201932943578,
        -0.18678238632717442,
        -0.20817045499536488,
    ];
    close(&fused.unwrap().to_vec_f64(), &want, 1e-14);
    close(&recorded.unwrap().to_vec_f64(), &want, 1e-14);
    // torch.func.jvp with a non-symmetric tangent: its symmetric part is used
    let da =
        Tensor::from_vec(vec![0.5f64, -1.0, 0.0, 2.0, 1.0, 0.5, 0.25, -0.5, 1.5], (3, 3)).unwrap();
    let _level = dual_level();
    let y = matrix_sqrth(&make_dual(&a.detach(), &da).unwrap()).unwrap();
    let dx = unpack_dual(&y).unwrap().1.unwrap();
    let want = [
        0.11109259440420122,
        0.10812558010275636,
        0.009486897117404133,
        0.10812558010275636,
        0.27638509829845037,
        -0.023440749087184305,
        0.009486897117404133,
        -0.023440749087184305,
        0.533835854603861,
    ];
    close(&dx.to_vec_f64(), &want, 1e-14);
    // the tangent solves X dX + dX X = sym(dA)
    let x = unpack_dual(&y).unwrap().0;
    let resid = x.matmul(&dx).unwrap().add(&dx.matmul(&x).unwrap()).unwrap().sub(&sym(&da));
    assert!(max_abs(&resid.unwrap()) < 1e-14);
}

#[test]
fn gradient_at_repeated_eigenvalues_is_finite() {
    // at A = I every eigenvalue repeats; PyTorch's gradient of Σ W ∘ sqrth(A) is
    // (W + Wᵀ)/4, finite (the rule has no eigenvalue gaps)
    let a = Tensor::eye(3, DType::F64).unwrap().with_requires_grad(true).unwrap();
    let w = randn(&[3, 3], 9);
    let x = matrix_sqrth(&a).unwrap();
    let (fused, recorded) = both_paths(&[&x], &[Some(&w)], &a);
    let want = w.add(&w.mT().unwrap()).unwrap().div_scalar(4.0).unwrap();
    assert_close(&fused.unwrap(), &want, 1e-15);
    assert_close(&recorded.unwrap(), &want, 1e-15);
}

#[test]
fn dtypes_and_errors() {
    let a = spd(&[3, 3], 10);
    let x64 = matrix_sqrth(&a).unwrap();
    for (dt, tol) in [(DType::F32, 1e-5), (DType::Bf16, 2e-2), (DType::F16, 2e-3)] {
        let x = matrix_sqrth(&a.to_dtype(dt).unwrap()).unwrap();
        assert_eq!(x.dtype(), dt);
        assert_close(&x.to_dtype(DType::F64).unwrap(), &x64, tol);
    }
    let op = "linalg.matrix_sqrth";
    let named = |r: cotangent::Result<Tensor>| {
        let e = r.unwrap_err();
        assert!(e.to_string().starts_with(op), "{e}");
        e
    };
    assert!(matches!(named(matrix_sqrth(&randn(&[3], 1))), Error::BadShape { .. }));
    assert!(matches!(named(matrix_sqrth(&randn(&[2, 3], 1))), Error::BadShape { .. }));
    let i = Tensor::eye(2, DType::I64).unwrap();
    assert!(matches!(named(matrix_sqrth(&i)), Error::UnsupportedDType { .. }));
    let nan = Tensor::full((2, 2), f64::NAN, DType::F64).unwrap();
    assert!(matches!(named(matrix_sqrth(&nan)), Error::NoConvergence { .. }));
}
