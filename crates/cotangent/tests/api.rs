//! The idiomatic conveniences: operators with a scalar on either side and owned or
//! borrowed tensors (the same values and gradients as the methods they call), the
//! one-line gradient, and the thread count from code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::{DType, Error, Tensor};

fn t(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), v.len()).unwrap()
}

fn bits(x: &Tensor) -> Vec<u64> {
    x.to_vec_f64().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn operators_take_a_scalar_on_either_side() {
    let x = t(&[0.3, -1.7, 2.5, 1e-300]);
    let s = 0.7;
    let cases = [
        (s + &x, x.add_scalar(s).unwrap()),
        (s - &x, t(&[s - 0.3, s + 1.7, s - 2.5, s - 1e-300])),
        (s * &x, x.mul_scalar(s).unwrap()),
        (s / &x, t(&[s / 0.3, s / -1.7, s / 2.5, s / 1e-300])),
        (s + x.clone(), &x + s),
        (s * x.clone(), &x * s),
    ];
    for (k, (got, want)) in cases.iter().enumerate() {
        assert_eq!(bits(got), bits(want), "case {k}");
    }
    // f32 keeps its dtype, as `x / s` does
    let y = Tensor::from_vec(vec![3.0f32, 0.1], 2).unwrap();
    let q = 1.0 / &y;
    assert_eq!(q.dtype(), DType::F32);
    assert_eq!(q.to_vec::<f32>().unwrap(), vec![1.0f32 / 3.0, 1.0 / 0.1]);
    assert_eq!((2.0 - &y).to_vec::<f32>().unwrap(), vec![-1.0f32, 2.0 - 0.1]);
}

#[test]
fn operators_take_owned_and_borrowed_tensors() {
    let a = t(&[1.0, 2.0]);
    let b = t(&[10.0, 20.0]);
    let want = vec![11.0, 22.0];
    assert_eq!((&a + &b).to_vec_f64(), want);
    assert_eq!((&a + b.clone()).to_vec_f64(), want);
    assert_eq!((a.clone() + &b).to_vec_f64(), want);
    assert_eq!((a.clone() + b.clone()).to_vec_f64(), want);
    assert_eq!((&b - a.clone()).to_vec_f64(), vec![9.0, 18.0]);
    assert_eq!((&b / a).to_vec_f64(), vec![10.0, 10.0]);
}

#[test]
fn scalar_left_operators_differentiate() {
    let x = t(&[0.5, 2.0]).with_requires_grad(true).unwrap();
    // d/dx Σ (3 - x) + 4/x = -1 - 4/x²
    let y = ((3.0 - &x) + 4.0 / &x).sum().unwrap();
    let g = y.grad_wrt(&x).unwrap();
    assert_eq!(g.to_vec_f64(), vec![-1.0 - 4.0 / 0.25, -1.0 - 4.0 / 4.0]);
}

#[test]
fn grad_wrt_is_the_one_line_gradient() {
    let x = t(&[1.0, -2.0, 3.0]).with_requires_grad(true).unwrap();
    let h = x.exp().unwrap();
    let y = (&h * &x).sum().unwrap(); // Σ x eˣ
    let g = y.grad_wrt(&x).unwrap();
    let want: Vec<f64> = [1.0f64, -2.0, 3.0].iter().map(|v| (1.0 + v) * v.exp()).collect();
    for (a, b) in g.to_vec_f64().iter().zip(&want) {
        assert!((a - b).abs() <= 1e-15 * b.abs().max(1.0));
    }
    // with respect to an intermediate tensor: ∂y/∂h = x
    assert_eq!(y.grad_wrt(&h).unwrap().to_vec_f64(), vec![1.0, -2.0, 3.0]);
    // the errors of autograd::grad
    let z = t(&[1.0]).with_requires_grad(true).unwrap();
    assert!(matches!(y.grad_wrt(&z), Err(Error::UnusedInput { index: 0 })));
    assert!(matches!(h.grad_wrt(&x), Err(Error::NonScalarBackward { .. })));
    assert!(matches!(y.grad_wrt(&t(&[1.0])), Err(Error::InputNoGrad { index: 0 })));
    assert!(matches!(t(&[1.0]).sum().unwrap().grad_wrt(&x), Err(Error::NoGradFn { .. })));
}
