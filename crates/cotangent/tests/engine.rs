//! Graph semantics of the autograd engine, through the public API: accumulation over
//! fan-out, several outputs, cotangents, grad mode, non-leaf inputs, non-differentiable
//! outputs, higher orders, deep graphs, determinism and errors.
//!
//! Every expected value is computed independently (in closed form or by finite
//! differences in plain `f64`), never by the engine itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::autograd::{self, GradOptions};
use cotangent::{DType, Error, Generator, Shape, Tensor};

// ---------------------------------------------------------------------------------------
// helpers

/// A leaf of f64 values that requires grad.
fn leaf(v: &[f64], shape: impl Into<Shape>) -> Tensor {
    Tensor::from_slice(v, shape).unwrap().with_requires_grad(true).unwrap()
}

/// A constant f64 tensor (no grad).
fn constant(v: &[f64], shape: impl Into<Shape>) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

const PLAIN: GradOptions = GradOptions { create_graph: false, allow_unused: false };
const CREATE: GradOptions = GradOptions { create_graph: true, allow_unused: false };

/// `∂y/∂x` for a one-element `y`.
fn grad1(y: &Tensor, x: &Tensor, opts: GradOptions) -> Tensor {
    autograd::grad(&[y], &[None], &[x], opts).unwrap().remove(0).unwrap()
}

/// Elementwise `|a - b| <= tol * max(1, |b|)`.
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "element {i}: got {g}, want {w} (got {got:?}, want {want:?})"
        );
    }
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

// ---------------------------------------------------------------------------------------
// fan-out

#[test]
fn fan_out_sums_the_gradients_of_every_use() {
    // y = Σ (x·x + 3x + sin x): x feeds mul twice, mul_scalar and sin.
    // dy/dx = 2x + 3 + cos x
    let xs = [-1.5, 0.0, 0.25, 2.0];
    let x = leaf(&xs, 4);
    let y = x.mul(&x).unwrap().add(&x.mul_scalar(3.0).unwrap()).unwrap();
    let y = y.add(&x.sin().unwrap()).unwrap().sum().unwrap();
    let want: Vec<f64> = xs.iter().map(|x| 2.0 * x + 3.0 + x.cos()).collect();
    let g = y.backward().unwrap();
    assert_close(&vals(g.get(&x).unwrap()), &want, 1e-14);
    assert_close(&vals(&grad1(&y, &x, PLAIN)), &want, 1e-14);
}

#[test]
fn fan_out_of_an_intermediate_accumulates_before_its_vjp() {
    // h = e^x, y = Σ (h·h + h + h):
    // dy/dh = 2h + 2, dy/dx = (2h + 2)·h = 2e^{2x} + 2e^x
    let xs = [-1.0, 0.5, 1.0];
    let x = leaf(&xs, 3);
    let h = x.exp().unwrap();
    let y = h.mul(&h).unwrap().add(&h).unwrap().add(&h).unwrap().sum().unwrap();
    let want: Vec<f64> = xs.iter().map(|x| 2.0 * (2.0 * x).exp() + 2.0 * x.exp()).collect();
    assert_close(&vals(&grad1(&y, &x, PLAIN)), &want, 1e-14);
}

#[test]
fn fan_out_over_broadcast_and_many_uses() {
    // x has shape [3], used 5 times as rows of a broadcast against a [5, 3] constant c:
    // y = Σ_ij c_ij x_j  =>  dy/dx_j = Σ_i c_ij; plus 10 additions of x itself (+10).
    let x = leaf(&[1.0, 2.0, 3.0], 3);
    let c: Vec<f64> = (0..15).map(|k| f64::from(k) * 0.5 - 3.0).collect();
    let ct = constant(&c, (5, 3));
    let mut y = x.mul(&ct).unwrap().sum().unwrap();
    for _ in 0..10 {
        y = y.add(&x.sum().unwrap()).unwrap();
    }
    let want: Vec<f64> = (0..3).map(|j| (0..5).map(|i| c[i * 3 + j]).sum::<f64>() + 10.0).collect();
    let g = y.backward().unwrap();
    assert_close(&vals(g.get(&x).unwrap()), &want, 1e-14);
}

// ---------------------------------------------------------------------------------------
// multi-output ops: only some outputs used

#[test]
fn split_with_only_one_output_used() {
    // parts = split(x, 2) = [x0 x1], [x2 x3], [x4 x5]; y = Σ parts[1]²
    // dy/dx = [0, 0, 2x2, 2x3, 0, 0]
    let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = leaf(&xs, 6);
    let parts = x.split(2, 0).unwrap();
    assert_eq!(parts.len(), 3);
    let y = parts[1].square().unwrap().sum().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&x).unwrap()), vec![0.0, 0.0, 6.0, 8.0, 0.0, 0.0]);
}

#[test]
fn chunk_with_some_outputs_used_with_different_weights() {
    // chunk(x, 3) along dim 1 of a [2, 6] x: c0 = cols 0..2, c1 = cols 2..4, c2 = cols 4..6.
    // y = Σ 2·c0 + Σ c2³ (c1 unused)
    // dy/dx = 2 on cols 0..2, 0 on cols 2..4, 3x² on cols 4..6
    let xs: Vec<f64> = (0..12).map(|k| f64::from(k) * 0.25 - 1.0).collect();
    let x = leaf(&xs, (2, 6));
    let c = x.chunk(3, 1).unwrap();
    assert_eq!(c.len(), 3);
    let y = c[0].mul_scalar(2.0).unwrap().sum().unwrap();
    let y = y.add(&c[2].pow_scalar(3.0).unwrap().sum().unwrap()).unwrap();
    let want: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(k, x)| match k % 6 {
            0 | 1 => 2.0,
            2 | 3 => 0.0,
            _ => 3.0 * x * x,
        })
        .collect();
    assert_close(&vals(&grad1(&y, &x, PLAIN)), &want, 1e-14);
}

#[test]
fn unbind_with_one_row_used() {
    // rows = unbind(x, 0) of a [3, 2] x; y = Σ 5·rows[1]  =>  dy/dx = [[0,0],[5,5],[0,0]]
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (3, 2));
    let rows = x.unbind(0).unwrap();
    let y = rows[1].mul_scalar(5.0).unwrap().sum().unwrap();
    let g = grad1(&y, &x, PLAIN);
    assert_eq!(g.dims(), &[3, 2]);
    assert_eq!(vals(&g), vec![0.0, 0.0, 5.0, 5.0, 0.0, 0.0]);
    // the unused rows are still differentiable handles: asking for them is UnusedInput
    let r = autograd::grad(&[&y], &[None], &[&rows[0], &rows[1]], PLAIN);
    assert_eq!(r.unwrap_err(), Error::UnusedInput { index: 0 });
    let r = autograd::grad(
        &[&y],
        &[None],
        &[&rows[0], &rows[1]],
        GradOptions { allow_unused: true, ..PLAIN },
    )
    .unwrap();
    assert!(r[0].is_none());
    assert_eq!(vals(r[1].as_ref().unwrap()), vec![5.0, 5.0]);
}

// ---------------------------------------------------------------------------------------
// cotangents

#[test]
fn none_cotangent_of_a_scalar_means_one() {
    // y = Σ x³: grad with None equals grad with an explicit 1 and equals 3x²
    let x = leaf(&[0.5, -2.0], 2);
    let y = x.pow_scalar(3.0).unwrap().sum().unwrap();
    let one = Tensor::ones((), DType::F64).unwrap();
    let a = autograd::grad(&[&y], &[None], &[&x], PLAIN).unwrap();
    let b = autograd::grad(&[&y], &[Some(&one)], &[&x], PLAIN).unwrap();
    assert_eq!(vals(a[0].as_ref().unwrap()), vec![0.75, 12.0]);
    assert_eq!(vals(b[0].as_ref().unwrap()), vec![0.75, 12.0]);
}

#[test]
fn several_outputs_with_cotangents_sum_their_vjps() {
    // y1 = x² (elementwise), y2 = sin x; cotangents v1, v2:
    // grad = J1ᵀv1 + J2ᵀv2 = 2x·v1 + cos x·v2
    let xs = [0.3, -1.2, 2.0];
    let (v1, v2) = ([1.0, -2.0, 0.5], [3.0, 0.25, -1.0]);
    let x = leaf(&xs, 3);
    let y1 = x.square().unwrap();
    let y2 = x.sin().unwrap();
    let (t1, t2) = (constant(&v1, 3), constant(&v2, 3));
    let g = autograd::grad(&[&y1, &y2], &[Some(&t1), Some(&t2)], &[&x], PLAIN).unwrap();
    let want: Vec<f64> = (0..3).map(|i| 2.0 * xs[i] * v1[i] + xs[i].cos() * v2[i]).collect();
    assert_close(&vals(g[0].as_ref().unwrap()), &want, 1e-14);
    // backward_with is the same for one output: J1ᵀv1
    let g = y1.backward_with(&t1).unwrap();
    let want: Vec<f64> = (0..3).map(|i| 2.0 * xs[i] * v1[i]).collect();
    assert_close(&vals(g.get(&x).unwrap()), &want, 1e-15);
}

#[test]
fn the_same_output_twice_accumulates_its_cotangents() {
    // grad([y, y], [a, b], x) = Jᵀ(a + b); y = 3x  =>  3(a + b)
    let x = leaf(&[1.0, 2.0], 2);
    let y = x.mul_scalar(3.0).unwrap();
    let (a, b) = (constant(&[1.0, 10.0], 2), constant(&[0.5, -1.0], 2));
    let g = autograd::grad(&[&y, &y], &[Some(&a), Some(&b)], &[&x], PLAIN).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![4.5, 27.0]);
}

#[test]
fn cotangents_given_twice_are_summed_inside_the_backward_pass() {
    // b = a², outputs [b, b] with cotangents [w, w] (w requires grad):
    // g = 2a·(w + w) = 4aw = 24 at a = 3, w = 2, and ∂g/∂w = 4a = 12.
    // The sum w + w belongs to the backward pass: with create_graph it is recorded even
    // inside no_grad (regression: it was summed under the caller's mode, so g lost its
    // dependence on w), and without create_graph it is not recorded.
    let a = leaf(&[3.0], ());
    let w = leaf(&[2.0], ());
    let b = a.square().unwrap();
    let g = {
        let _off = autograd::no_grad();
        autograd::grad(&[&b, &b], &[Some(&w), Some(&w)], &[&a], CREATE).unwrap().remove(0)
    }
    .unwrap();
    assert_eq!(g.item::<f64>().unwrap(), 24.0);
    assert_eq!(grad1(&g, &w, PLAIN).item::<f64>().unwrap(), 12.0);
    // d/da 4aw = 4w = 8
    assert_eq!(grad1(&g, &a, PLAIN).item::<f64>().unwrap(), 8.0);
    // a leaf output given twice: its gradient is w + w = 4, without history
    let g = autograd::grad(&[&a, &a], &[Some(&w), Some(&w)], &[&a], PLAIN).unwrap();
    let g = g[0].as_ref().unwrap();
    assert_eq!(g.item::<f64>().unwrap(), 4.0);
    assert!(!g.requires_grad());
}

#[test]
fn none_cotangent_of_a_non_scalar_is_an_error() {
    // y has 2 elements: there is no implied cotangent
    let x = leaf(&[1.0, 2.0], 2);
    let y = x.exp().unwrap();
    let e = autograd::grad(&[&y], &[None], &[&x], PLAIN).unwrap_err();
    assert_eq!(e, Error::NonScalarBackward { shape: Shape::from(2) });
}

#[test]
fn cotangents_of_the_wrong_shape_or_count_are_errors() {
    // y: [2, 3]; a cotangent of [3, 2], [6] or [2, 3, 1] does not match (same numel or
    // not), and the number of cotangents must equal the number of outputs
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3));
    let y = x.exp().unwrap();
    for bad in [Shape::from((3, 2)), Shape::from(6), Shape::from((2, 3, 1)), Shape::from(())] {
        let g = Tensor::ones(bad.clone(), DType::F64).unwrap();
        let e = autograd::grad(&[&y], &[Some(&g)], &[&x], PLAIN).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{bad}: {e:?}");
        let e = y.backward_with(&g).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{bad}: {e:?}");
    }
    let g = Tensor::ones((2, 3), DType::F64).unwrap();
    let e = autograd::grad(&[&y], &[Some(&g), None], &[&x], PLAIN).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { arg: "grad_outputs", .. }), "{e:?}");
    let e = autograd::grad(&[&y], &[], &[&x], PLAIN).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { arg: "grad_outputs", .. }), "{e:?}");
}

#[test]
fn cotangents_of_another_real_dtype_are_cast_complex_ones_refused() {
    // PyTorch casts a real cotangent (floating, integer or bool) to its real output's
    // dtype, and refuses a mismatch where either is complex
    let x = leaf(&[1.0, 2.0], 2);
    let y = x.mul_scalar(3.0).unwrap().matmul(&x.diag_embed(0, 0, 1).unwrap()).unwrap();
    let ones = Tensor::ones(2, DType::F64).unwrap();
    let want = autograd::grad(&[&y], &[Some(&ones)], &[&x], PLAIN).unwrap()[0].clone().unwrap();
    for dt in [DType::F32, DType::I64, DType::Bool, DType::Bf16] {
        let g = Tensor::ones(2, dt).unwrap();
        let got = autograd::grad(&[&y], &[Some(&g)], &[&x], PLAIN).unwrap()[0].clone().unwrap();
        assert_eq!(got.dtype(), DType::F64);
        assert_eq!(vals(&got), vals(&want), "{dt:?}");
        let got = y.backward_with(&g).unwrap();
        assert_eq!(vals(got.get(&x).unwrap()), vals(&want), "{dt:?}");
    }
    let c = Tensor::ones(2, DType::C128).unwrap();
    let e = autograd::grad(&[&y], &[Some(&c)], &[&x], PLAIN).unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "autograd.grad", .. }), "{e:?}");
    let z = y.to_dtype(DType::C128).unwrap();
    for dt in [DType::C64, DType::F64] {
        let g = Tensor::ones(2, dt).unwrap();
        let e = z.backward_with(&g).unwrap_err();
        assert!(matches!(e, Error::DTypeMismatch { op: "autograd.grad", .. }), "{dt:?}: {e:?}");
    }
}

// ---------------------------------------------------------------------------------------
// grad mode and detach

#[test]
fn no_grad_and_enable_grad_nest_and_restore_on_drop() {
    let x = leaf(&[1.0, 2.0], 2);
    assert!(autograd::is_grad_enabled());
    {
        let _outer = autograd::no_grad();
        assert!(!autograd::is_grad_enabled());
        let a = x.exp().unwrap();
        assert!(!a.requires_grad() && a.is_leaf() && a.grad_fn_name().is_none());
        {
            let _inner = autograd::enable_grad();
            assert!(autograd::is_grad_enabled());
            let b = x.exp().unwrap();
            assert!(b.requires_grad() && !b.is_leaf());
            assert_eq!(b.grad_fn_name(), Some("exp"));
            {
                let _innermost = autograd::no_grad();
                assert!(!x.exp().unwrap().requires_grad());
            }
            assert!(autograd::is_grad_enabled());
        }
        assert!(!autograd::is_grad_enabled());
        // a second no_grad inside no_grad restores "off", not "on"
        {
            let _again = autograd::no_grad();
        }
        assert!(!autograd::is_grad_enabled());
    }
    assert!(autograd::is_grad_enabled());
    assert!(x.exp().unwrap().requires_grad());
}

#[test]
fn grad_mode_is_thread_local() {
    // no_grad on this thread does not turn recording off on another
    let _g = autograd::no_grad();
    let other = std::thread::spawn(|| {
        let x = leaf(&[1.0], 1);
        (autograd::is_grad_enabled(), x.exp().unwrap().requires_grad())
    })
    .join()
    .unwrap();
    assert_eq!(other, (true, true));
    assert!(!autograd::is_grad_enabled());
}

#[test]
fn backward_restores_grad_mode() {
    // the engine switches grad mode while running VJPs and restores the caller's
    let x = leaf(&[2.0], ());
    let y = x.pow_scalar(3.0).unwrap();
    {
        let _g = autograd::no_grad();
        // y was recorded before no_grad: it can still be differentiated (3x² = 12)
        assert_eq!(grad1(&y, &x, PLAIN).item::<f64>().unwrap(), 12.0);
        assert!(!autograd::is_grad_enabled());
        // create_graph records the backward pass even inside no_grad (as PyTorch):
        // d/dx 3x² = 6x = 12
        let g = grad1(&y, &x, CREATE);
        assert!(g.requires_grad());
        assert!(!autograd::is_grad_enabled());
        let _on = autograd::enable_grad();
        assert_eq!(grad1(&g, &x, PLAIN).item::<f64>().unwrap(), 12.0);
    }
    let g = grad1(&y, &x, PLAIN);
    assert!(autograd::is_grad_enabled());
    // without create_graph the gradient has no history
    assert!(!g.requires_grad() && g.is_leaf());
}

#[test]
fn detach_cuts_history() {
    // y = Σ detach(x)·x: the detached factor is a constant c = x, so dy/dx = c = x
    // (not 2x, which the undetached x·x gives)
    let xs = [1.5, -2.0, 4.0];
    let x = leaf(&xs, 3);
    let d = x.detach();
    assert!(!d.requires_grad() && d.is_leaf());
    assert_eq!(vals(&d), xs.to_vec());
    let y = d.mul(&x).unwrap().sum().unwrap();
    assert_eq!(vals(&grad1(&y, &x, PLAIN)), xs.to_vec());
    let y2 = x.mul(&x).unwrap().sum().unwrap();
    assert_eq!(vals(&grad1(&y2, &x, PLAIN)), vec![3.0, -4.0, 8.0]);
    // an output computed only from the detached tensor has no history at all
    let z = d.exp().unwrap().sum().unwrap();
    assert_eq!(z.backward().unwrap_err(), Error::NoGradFn { index: 0 });
    // detaching an intermediate stops the gradient there:
    // y = Σ (detach(x²) + x)  =>  dy/dx = 1
    let y = x.square().unwrap().detach().add(&x).unwrap().sum().unwrap();
    assert_eq!(vals(&grad1(&y, &x, PLAIN)), vec![1.0, 1.0, 1.0]);
    // a detached copy made a leaf again is a new variable: x gets nothing from it
    let x2 = d.with_requires_grad(true).unwrap();
    let y = x2.square().unwrap().sum().unwrap();
    let g = y.backward().unwrap();
    assert!(g.get(&x).is_none());
    assert_eq!(vals(g.get(&x2).unwrap()), vec![3.0, -4.0, 8.0]);
}

// ---------------------------------------------------------------------------------------
// non-leaf inputs and allow_unused

#[test]
fn grad_with_respect_to_an_intermediate() {
    // h = e^x, y = Σ h²:  dy/dh = 2h = 2e^x,  dy/dx = 2h·e^x = 2e^{2x}
    let xs = [-0.5, 0.0, 1.25];
    let x = leaf(&xs, 3);
    let h = x.exp().unwrap();
    let y = h.square().unwrap().sum().unwrap();
    let g = autograd::grad(&[&y], &[None], &[&h, &x], PLAIN).unwrap();
    let want_h: Vec<f64> = xs.iter().map(|x| 2.0 * x.exp()).collect();
    let want_x: Vec<f64> = xs.iter().map(|x| 2.0 * (2.0 * x).exp()).collect();
    assert_close(&vals(g[0].as_ref().unwrap()), &want_h, 1e-15);
    assert_close(&vals(g[1].as_ref().unwrap()), &want_x, 1e-15);
    // the same intermediate asked twice gets the same gradient twice
    let g = autograd::grad(&[&y], &[None], &[&h, &h], PLAIN).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vals(g[1].as_ref().unwrap()));
    // a view (reshape) as input: dy/dv for y = Σ v³ with v = reshape(x, [3, 1]) is 3v²
    let v = x.reshape((3, 1)).unwrap();
    let y = v.pow_scalar(3.0).unwrap().sum().unwrap();
    let g = grad1(&y, &v, PLAIN);
    assert_eq!(g.dims(), &[3, 1]);
    let want: Vec<f64> = xs.iter().map(|x| 3.0 * x * x).collect();
    assert_close(&vals(&g), &want, 1e-15);
    // the output itself: dy/dy = 1
    assert_eq!(grad1(&y, &y, PLAIN).item::<f64>().unwrap(), 1.0);
}

#[test]
fn an_intermediate_that_is_also_an_output() {
    // outputs y = Σ h (cotangent 1) and h itself (cotangent v), h = 2x:
    // dL/dh = 1 + v, dL/dx = 2(1 + v)
    let x = leaf(&[1.0, 2.0], 2);
    let h = x.mul_scalar(2.0).unwrap();
    let y = h.sum().unwrap();
    let v = constant(&[10.0, -3.0], 2);
    let g = autograd::grad(&[&y, &h], &[None, Some(&v)], &[&h, &x], PLAIN).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![11.0, -2.0]);
    assert_eq!(vals(g[1].as_ref().unwrap()), vec![22.0, -4.0]);
}

#[test]
fn unused_inputs_error_or_give_none_with_allow_unused() {
    // y = Σ x²; z is another leaf, k = sin x is an intermediate y does not use
    let x = leaf(&[1.0, 2.0], 2);
    let z = leaf(&[3.0], 1);
    let k = x.sin().unwrap();
    let y = x.square().unwrap().sum().unwrap();
    assert_eq!(
        autograd::grad(&[&y], &[None], &[&x, &z], PLAIN).unwrap_err(),
        Error::UnusedInput { index: 1 }
    );
    assert_eq!(
        autograd::grad(&[&y], &[None], &[&k, &x], PLAIN).unwrap_err(),
        Error::UnusedInput { index: 0 }
    );
    let opts = GradOptions { allow_unused: true, ..PLAIN };
    let g = autograd::grad(&[&y], &[None], &[&z, &x, &k], opts).unwrap();
    assert!(g[0].is_none());
    assert_eq!(vals(g[1].as_ref().unwrap()), vec![2.0, 4.0]);
    assert!(g[2].is_none());
    // backward: an unreached leaf is simply absent
    let grads = y.backward().unwrap();
    assert!(grads.get(&z).is_none());
    assert_eq!(grads.len(), 1);
    // a leaf that does not require grad is an error as an input, absent from backward
    let c = constant(&[1.0], 1);
    assert_eq!(
        autograd::grad(&[&y], &[None], &[&x, &c], opts).unwrap_err(),
        Error::InputNoGrad { index: 1 }
    );
}

// ---------------------------------------------------------------------------------------
// non-differentiable outputs

#[test]
fn gradients_of_bool_and_integer_outputs_are_errors() {
    let x = leaf(&[0.5], ());
    let xv = leaf(&[-1.0, 0.5, 2.0], 3);
    // a comparison result is Bool and has no history
    let b = x.gt_scalar(0.0).unwrap();
    assert_eq!(b.dtype(), DType::Bool);
    assert!(!b.requires_grad());
    assert_eq!(b.backward().unwrap_err(), Error::NoGradFn { index: 0 });
    let bv = xv.gt(&Tensor::zeros(3, DType::F64).unwrap()).unwrap();
    let ones = Tensor::ones(3, DType::Bool).unwrap();
    assert_eq!(
        autograd::grad(&[&bv], &[Some(&ones)], &[&xv], PLAIN).unwrap_err(),
        Error::NoGradFn { index: 0 }
    );
    // ... and is not a differentiable input
    let y = xv.exp().unwrap().sum().unwrap();
    assert_eq!(
        autograd::grad(&[&y], &[None], &[&xv, &bv], PLAIN).unwrap_err(),
        Error::InputNoGrad { index: 1 }
    );
    // an I64 cast cuts the graph: its result is not an output or input of grad
    let i = xv.to_dtype(DType::I64).unwrap();
    assert!(!i.requires_grad() && i.is_leaf());
    assert_eq!(i.backward().unwrap_err(), Error::NonScalarBackward { shape: Shape::from(3) });
    let isum = i.sum().unwrap();
    assert_eq!(isum.backward().unwrap_err(), Error::NoGradFn { index: 0 });
    assert_eq!(
        autograd::grad(&[&y, &isum], &[None, None], &[&xv], PLAIN).unwrap_err(),
        Error::NoGradFn { index: 1 }
    );
    assert_eq!(
        autograd::grad(&[&y], &[None], &[&i], PLAIN).unwrap_err(),
        Error::InputNoGrad { index: 0 }
    );
    // the float path next to it is unaffected: y2 = Σ (e^x + f64(i64(x))), dy2/dx = e^x
    let y2 = xv.exp().unwrap().add(&i.to_dtype(DType::F64).unwrap()).unwrap().sum().unwrap();
    let want: Vec<f64> = [-1.0f64, 0.5, 2.0].iter().map(|x| x.exp()).collect();
    assert_close(&vals(&grad1(&y2, &xv, PLAIN)), &want, 1e-15);
    // a Bool mask in where_cond: y3 = Σ where(x > 0, x², 0), dy3/dx = 2x on x > 0, else 0
    let zero = Tensor::zeros((), DType::F64).unwrap();
    let y3 = Tensor::where_cond(&bv, &xv.square().unwrap(), &zero).unwrap().sum().unwrap();
    assert_eq!(vals(&grad1(&y3, &xv, PLAIN)), vec![0.0, 1.0, 4.0]);
}

// ---------------------------------------------------------------------------------------
// higher order

fn p(x: f64) -> [f64; 5] {
    // p(x) = x⁴ + 2x³ and its derivatives
    [
        x.powi(4) + 2.0 * x.powi(3),
        4.0 * x.powi(3) + 6.0 * x * x,
        12.0 * x * x + 12.0 * x,
        24.0 * x + 12.0,
        24.0,
    ]
}

#[test]
fn third_derivative_of_a_polynomial() {
    // p(x) = x⁴ + 2x³: p' = 4x³ + 6x², p'' = 12x² + 12x, p''' = 24x + 12, p'''' = 24,
    // elementwise at several points (y = Σ p(x_i), so ∂/∂x_i of each order is p⁽ᵏ⁾(x_i)).
    let xs = [-2.0, -0.5, 0.0, 1.0, 3.0];
    for build in [0, 1] {
        let x = leaf(&xs, xs.len());
        let px = if build == 0 {
            // with pow_scalar
            x.pow_scalar(4.0).unwrap().add(&x.pow_scalar(3.0).unwrap().mul_scalar(2.0).unwrap())
        } else {
            // with products (fan-out at every order)
            let x2 = x.mul(&x).unwrap();
            let x3 = x2.mul(&x).unwrap();
            x3.mul(&x).unwrap().add(&x3.add(&x3).unwrap())
        }
        .unwrap();
        let want: Vec<f64> = xs.iter().map(|&x| p(x)[0]).collect();
        assert_close(&vals(&px), &want, 1e-15);
        let mut d = px.sum().unwrap();
        for order in 1..=4 {
            let g = grad1(&d, &x, CREATE);
            let want: Vec<f64> = xs.iter().map(|&x| p(x)[order]).collect();
            assert_close(&vals(&g), &want, 1e-14);
            if order < 4 {
                assert!(g.requires_grad(), "order {order} must be differentiable");
            }
            d = g.sum().unwrap();
        }
    }
}

/// f(x) = (Σ x²)(Σ sin x) + Σ x e^x, and its gradient in closed form.
fn f_tensor(x: &Tensor) -> Tensor {
    let a = x.square().unwrap().sum().unwrap();
    let b = x.sin().unwrap().sum().unwrap();
    a.mul(&b).unwrap().add(&x.mul(&x.exp().unwrap()).unwrap().sum().unwrap()).unwrap()
}

fn f_grad(x: &[f64]) -> Vec<f64> {
    // ∂f/∂x_i = 2x_i·S + Q·cos x_i + (1 + x_i)e^{x_i}, Q = Σ x², S = Σ sin x
    let q: f64 = x.iter().map(|v| v * v).sum();
    let s: f64 = x.iter().map(|v| v.sin()).sum();
    x.iter().map(|&v| 2.0 * v * s + q * v.cos() + (1.0 + v) * v.exp()).collect()
}

#[test]
fn hessian_vector_product_matches_finite_differences_of_the_gradient() {
    // Hv = d/dε ∇f(x + εv) at ε = 0 ≈ (∇f(x + hv) − ∇f(x − hv)) / 2h, with the
    // gradient in closed form (f_grad), so nothing on the right uses the engine.
    let xs = [0.3, -0.7, 1.1, 0.05];
    let vs = [1.0, 0.5, -2.0, 0.25];
    let h = 1e-5;
    let plus: Vec<f64> = xs.iter().zip(&vs).map(|(x, v)| x + h * v).collect();
    let minus: Vec<f64> = xs.iter().zip(&vs).map(|(x, v)| x - h * v).collect();
    let fd: Vec<f64> =
        f_grad(&plus).iter().zip(f_grad(&minus)).map(|(a, b)| (a - b) / (2.0 * h)).collect();

    let x = leaf(&xs, 4);
    let v = constant(&vs, 4);
    let g = grad1(&f_tensor(&x), &x, CREATE);
    assert_close(&vals(&g), &f_grad(&xs), 1e-13);
    // Hv as the gradient of ⟨∇f, v⟩
    let hv1 = grad1(&g.mul(&v).unwrap().sum().unwrap(), &x, PLAIN);
    // Hv as the VJP of ∇f with cotangent v (H is symmetric)
    let hv2 = autograd::grad(&[&g], &[Some(&v)], &[&x], PLAIN).unwrap().remove(0).unwrap();
    assert_close(&vals(&hv1), &fd, 1e-7);
    assert_close(&vals(&hv2), &fd, 1e-7);
    assert_close(&vals(&hv1), &vals(&hv2), 1e-13);
}

#[test]
fn double_backward_through_an_intermediate_input() {
    // h = x², y = Σ h³. dy/dh = 3h² (recorded), and d/dx Σ 3h² = 6h·2x = 12x³
    let xs = [1.0, -2.0, 0.5];
    let x = leaf(&xs, 3);
    let hh = x.square().unwrap();
    let y = hh.pow_scalar(3.0).unwrap().sum().unwrap();
    let gh = grad1(&y, &hh, CREATE);
    let want: Vec<f64> = xs.iter().map(|x| 3.0 * x.powi(4)).collect();
    assert_close(&vals(&gh), &want, 1e-15);
    let gx = grad1(&gh.sum().unwrap(), &x, PLAIN);
    let want: Vec<f64> = xs.iter().map(|x| 12.0 * x.powi(3)).collect();
    assert_close(&vals(&gx), &want, 1e-15);
}

// ---------------------------------------------------------------------------------------
// deep graphs

/// Runs `f` in a thread with a 2 MiB stack: recursion over 1e5 nodes would overflow it.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the deep-graph test panicked (stack overflow aborts the process instead)");
}

const DEPTH: usize = 100_000;

#[test]
fn a_100k_node_chain_runs_backward_and_drops_on_a_small_stack() {
    // y = x·c^N (N mul_scalar nodes), dy/dx = c^N; c^N computed by the same N products
    on_small_stack(|| {
        let c = 1.000_000_1;
        let x = leaf(&[1.5], ());
        let mut y = x.clone();
        for _ in 0..DEPTH {
            y = y.mul_scalar(c).unwrap();
        }
        let mut cn = 1.0f64;
        for _ in 0..DEPTH {
            cn *= c;
        }
        assert_close(&[y.item::<f64>().unwrap()], &[1.5 * cn], 1e-12);
        let g = y.backward().unwrap();
        assert_close(&[g.get(&x).unwrap().item::<f64>().unwrap()], &[cn], 1e-12);
        let g = grad1(&y, &x, PLAIN);
        assert_close(&[g.item::<f64>().unwrap()], &[cn], 1e-12);
        drop(y); // frees 1e5 nodes
        drop(x);
    });
}

#[test]
fn a_100k_node_chain_with_fan_out_and_create_graph() {
    // y = x + x + ... + x (N additions, x fanned out N + 1 times): dy/dx = N + 1.
    // With create_graph the gradient is itself a graph of ~N nodes, dropped last.
    on_small_stack(|| {
        let x = leaf(&[0.25], ());
        let mut y = x.clone();
        for _ in 0..DEPTH {
            y = y.add(&x).unwrap();
        }
        let g = grad1(&y, &x, CREATE);
        assert_eq!(g.item::<f64>().unwrap(), (DEPTH + 1) as f64);
        drop(y);
        drop(x);
        drop(g);
    });
}

#[test]
fn a_deep_chain_of_intermediates_drops_from_the_bottom() {
    // the tensors of a 1e5 chain kept in a Vec and dropped first-to-last, then the top:
    // every node is released by the last handle, on a small stack
    on_small_stack(|| {
        let x = leaf(&[1.0], ());
        let mut ts = vec![x.add_scalar(1.0).unwrap()];
        for k in 1..DEPTH {
            let t = ts[k - 1].add_scalar(1.0).unwrap();
            ts.push(t);
        }
        // y = x + N: dy/dx = 1
        let top = ts.pop().unwrap();
        assert_eq!(top.item::<f64>().unwrap(), 1.0 + DEPTH as f64);
        drop(ts);
        drop(x);
        assert_eq!(top.backward().unwrap().len(), 1);
        drop(top);
    });
}

// ---------------------------------------------------------------------------------------
// determinism

fn messy(x: &Tensor, w: &Tensor) -> Tensor {
    // a mix of fan-out, broadcasting, reductions and views
    let h = x.mul(w).unwrap().tanh().unwrap();
    let parts = h.chunk(3, 1).unwrap();
    let s = parts[0].exp().unwrap().sum_dims(&[1], false).unwrap();
    let t = parts[2].mul(&parts[2]).unwrap().mean_dims(&[1], false).unwrap();
    s.mul(&t).unwrap().add(&h.sum_dims(&[1], false).unwrap()).unwrap().sum().unwrap()
}

fn bits(t: &Tensor) -> Vec<u64> {
    vals(t).iter().map(|v| v.to_bits()).collect()
}

#[test]
fn the_same_computation_gives_bit_identical_gradients() {
    // run the same first- and second-order gradients three times (once on another
    // thread) and compare the bits
    let run = || {
        let mut gen = Generator::new(7);
        let x = Tensor::randn((64, 96), DType::F64, &mut gen).unwrap();
        let x = x.with_requires_grad(true).unwrap();
        let w = Tensor::randn(96, DType::F64, &mut gen).unwrap().with_requires_grad(true).unwrap();
        let y = messy(&x, &w);
        let g = autograd::grad(&[&y], &[None], &[&x, &w], CREATE).unwrap();
        let gw = g[1].as_ref().unwrap();
        let gg = grad1(&gw.square().unwrap().sum().unwrap(), &x, PLAIN);
        (bits(&y), bits(g[0].as_ref().unwrap()), bits(gw), bits(&gg))
    };
    let a = run();
    let b = run();
    let c = std::thread::spawn(run).join().unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
}

// ---------------------------------------------------------------------------------------
// errors

#[test]
fn backward_needs_a_scalar_that_requires_grad() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0], (2, 2));
    let y = x.exp().unwrap();
    assert_eq!(y.backward().unwrap_err(), Error::NonScalarBackward { shape: Shape::from((2, 2)) });
    // a one-element tensor of any rank is fine: d/dx Σ x over [1, 1] is 1
    let one = leaf(&[2.0], (1, 1));
    let g = one.square().unwrap().backward().unwrap();
    assert_eq!(vals(g.get(&one).unwrap()), vec![4.0]);
    // a scalar without history
    let c = constant(&[1.0], ());
    assert_eq!(c.backward().unwrap_err(), Error::NoGradFn { index: 0 });
    // a leaf scalar that requires grad: d/dx x = 1
    let s = leaf(&[5.0], ());
    assert_eq!(s.backward().unwrap().get(&s).unwrap().item::<f64>().unwrap(), 1.0);
}

#[test]
fn requires_grad_only_on_float_leaves() {
    let i = Tensor::from_vec(vec![1i64, 2], 2).unwrap();
    assert_eq!(
        i.with_requires_grad(true).unwrap_err(),
        Error::UnsupportedDType { op: "requires_grad", dtype: DType::I64 }
    );
    let b = Tensor::ones(2, DType::Bool).unwrap();
    assert!(matches!(b.with_requires_grad(true), Err(Error::UnsupportedDType { .. })));
    // turning it off is allowed for any dtype
    assert!(!i.with_requires_grad(false).unwrap().requires_grad());
    // f32 leaves are fine; a non-leaf cannot change requires_grad (detach first)
    let x = Tensor::ones(2, DType::F32).unwrap().with_requires_grad(true).unwrap();
    let y = x.exp().unwrap();
    assert!(matches!(y.with_requires_grad(false), Err(Error::NotDifferentiable { .. })));
    assert!(y.detach().with_requires_grad(true).unwrap().requires_grad());
}

#[test]
fn hessian_vector_product_through_cholesky_logdet() {
    // f(A) = 2 Σ log Lᵢᵢ = log det A for A = L Lᵀ SPD; ∇f = A⁻¹ (symmetric), and the
    // Hessian-vector product along a symmetric V is d/dt ⟨A⁻¹, V⟩|_{A+tV} = −A⁻¹ V A⁻¹.
    use cotangent::linalg::{cholesky, solve_triangular, Diag, Side, Uplo};
    let a = constant(&[4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0], (3, 3))
        .with_requires_grad(true)
        .unwrap();
    let v = constant(&[0.3, -0.1, 0.2, -0.1, 0.5, 0.4, 0.2, 0.4, -0.6], (3, 3));
    let logdet = |a: &Tensor| -> Tensor {
        cholesky(a, Uplo::Lower)
            .unwrap()
            .diagonal(0, 0, 1)
            .unwrap()
            .log()
            .unwrap()
            .sum()
            .unwrap()
            .mul_scalar(2.0)
            .unwrap()
    };
    let opts = GradOptions { create_graph: true, ..Default::default() };
    let g = grad1(&logdet(&a), &a, opts);
    // A⁻¹ from the factor, by two triangular solves (an independent route)
    let l = cholesky(&a.detach(), Uplo::Lower).unwrap();
    let eye = Tensor::eye(3, DType::F64).unwrap();
    let linv = solve_triangular(&l, &eye, Uplo::Lower, Side::Left, Diag::NonUnit).unwrap();
    let ainv = linv.mT().unwrap().matmul(&linv).unwrap();
    assert_close(&vals(&g), &vals(&ainv), 1e-12);
    let hv = grad1(&g.mul(&v).unwrap().sum().unwrap(), &a, GradOptions::default());
    let want = ainv.matmul(&v).unwrap().matmul(&ainv).unwrap().neg().unwrap();
    assert_close(&vals(&hv), &vals(&want), 1e-12);
}
