//! Forward-mode AD (issue 48): dual tensors and their levels, forward-over-reverse and
//! reverse-over-forward, and the functional API (`cotangent::func`) on functions with
//! known closed forms. The op table's forward-mode check (every core row against finite
//! differences and reverse mode) is `forward_mode_f64` in `ops.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
#![allow(clippy::cloned_ref_to_slice_refs)] // `&[x.clone()]` reads as the call it is

mod common;

use common::{assert_close, randn};
use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
use cotangent::autograd::{self, GradOptions};
use cotangent::{func, DType, Error, Result, Tensor};

fn t(v: &[f64]) -> Tensor {
    Tensor::from_slice(v, v.len()).unwrap()
}

#[test]
fn dual_tensors_carry_tangents_through_ops() {
    let x = t(&[0.5, -1.0, 2.0]);
    let v = t(&[1.0, 2.0, -1.0]);
    let level = dual_level();
    let d = make_dual(&x, &v).unwrap();
    // y = sin(x) * x + exp(x)  ⇒  ẏ = (cos(x) x + sin(x) + exp(x)) v
    let y = d.sin().unwrap().mul(&d).unwrap().add(&d.exp().unwrap()).unwrap();
    let (p, dy) = unpack_dual(&y).unwrap();
    let want = x
        .cos()
        .unwrap()
        .mul(&x)
        .unwrap()
        .add(&x.sin().unwrap())
        .unwrap()
        .add(&x.exp().unwrap())
        .unwrap()
        .mul(&v)
        .unwrap();
    assert_close(&dy.unwrap(), &want, 1e-14);
    assert_close(&p, &x.sin().unwrap().mul(&x).unwrap().add(&x.exp().unwrap()).unwrap(), 0.0);
    // the primal of an unpacked dual has no tangent; a tensor never made dual neither
    assert!(unpack_dual(&p).unwrap().1.is_none());
    assert!(unpack_dual(&x).unwrap().1.is_none());
    // grad mode does not stop forward mode (as in PyTorch)
    let z = {
        let _g = autograd::no_grad();
        d.square().unwrap()
    };
    assert_close(
        &unpack_dual(&z).unwrap().1.unwrap(),
        &x.mul(&v).unwrap().mul_scalar(2.0).unwrap(),
        0.0,
    );
    // detach drops the tangent; integer results carry none
    assert!(unpack_dual(&d.detach()).unwrap().1.is_none());
    let i = d.to_dtype(DType::I64).unwrap();
    assert!(unpack_dual(&i).unwrap().1.is_none());
    // a closed level's tangents are ignored
    drop(level);
    let _other = dual_level();
    assert!(unpack_dual(&y).unwrap().1.is_none());
}

#[test]
fn dual_api_errors_name_the_op() {
    let x = t(&[1.0, 2.0]);
    match make_dual(&x, &x) {
        Err(Error::InvalidArgument { op: "make_dual", .. }) => {}
        other => panic!("no level: {other:?}"),
    }
    let _level = dual_level();
    assert!(matches!(make_dual(&x, &t(&[1.0])), Err(Error::ShapeMismatch { op: "make_dual", .. })));
    assert!(matches!(
        make_dual(&x, &x.to_dtype(DType::F32).unwrap()),
        Err(Error::DTypeMismatch { op: "make_dual", .. })
    ));
    let ints = Tensor::from_vec(vec![1i64, 2], 2).unwrap();
    assert!(matches!(
        make_dual(&ints, &ints),
        Err(Error::UnsupportedDType { op: "make_dual", .. })
    ));
}

#[test]
fn nested_levels_do_not_confuse_perturbations() {
    // d/dx [x · d/dy (x + y)]_{y = 1} = d/dx [x · 1] = 1 (Siskind and Pearlmutter's test:
    // a single tangent slot would give 2)
    let x = Tensor::scalar(3.0f64);
    let outer = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        let x = x[0].clone();
        let inner = |y: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![x.add(&y[0])?]) };
        let one = Tensor::scalar(1.0f64);
        let (_, dy) = func::jvp(inner, &[one.clone()], &[one])?;
        Ok(vec![x.mul(&dy[0])?])
    };
    let (_, d) = func::jvp(outer, &[x], &[Tensor::scalar(1.0f64)]).unwrap();
    assert_eq!(d[0].item::<f64>().unwrap(), 1.0);
    // jvp of jvp: the second directional derivative of Σ x³ along u then v is Σ 6 x u v
    let x = t(&[0.5, -1.5, 2.0]);
    let (u, v) = (t(&[1.0, 2.0, 3.0]), t(&[-1.0, 0.5, 2.0]));
    let f = |x: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![x[0].pow_scalar(3.0)?.sum()?]) };
    let df = |x: &[Tensor]| -> Result<Vec<Tensor>> { Ok(func::jvp(f, x, &[u.clone()])?.1) };
    let (_, d2) = func::jvp(df, &[x.clone()], &[v.clone()]).unwrap();
    let want: f64 = (0..3)
        .map(|i| {
            let g = |t: &Tensor| t.to_vec::<f64>().unwrap()[i];
            6.0 * g(&x) * g(&u) * g(&v)
        })
        .sum();
    assert!((d2[0].item::<f64>().unwrap() - want).abs() < 1e-12);
}

#[test]
fn forward_over_reverse_and_reverse_over_forward() {
    // f(x) = Σ exp(x) x²: ∇f = exp(x)(x² + 2x), H = diag(exp(x)(x² + 4x + 2))
    let x = t(&[0.3, -0.7, 1.1, 0.0]);
    let v = t(&[1.0, -2.0, 0.5, 3.0]);
    let f = |x: &[Tensor]| x[0].exp()?.mul(&x[0].square()?)?.sum();
    let h = x
        .exp()
        .unwrap()
        .mul(
            &x.square().unwrap().add(&x.mul_scalar(4.0).unwrap()).unwrap().add_scalar(2.0).unwrap(),
        )
        .unwrap();
    let (value, hv) = func::hvp(f, &[x.clone()], &[v.clone()]).unwrap();
    assert_close(&hv[0], &h.mul(&v).unwrap(), 1e-13);
    assert!(
        (value.item::<f64>().unwrap() - f(&[x.clone()]).unwrap().item::<f64>().unwrap()).abs()
            < 1e-15
    );
    // reverse over forward: the gradient of ⟨∇f, v⟩ computed as a JVP is H v
    let xr = x.with_requires_grad(true).unwrap();
    let (_, dy) = func::jvp(|x: &[Tensor]| Ok(vec![f(x)?]), &[xr.clone()], &[v.clone()]).unwrap();
    let g = autograd::grad(&[&dy[0]], &[None], &[&xr], GradOptions::default()).unwrap();
    assert_close(g[0].as_ref().unwrap(), &h.mul(&v).unwrap(), 1e-13);
    // through a tensor the function captured: d/dw ⟨∂(w·exp(x))/∂x, v⟩ = Σ exp(x) v
    let w = Tensor::scalar(2.0f64).with_requires_grad(true).unwrap();
    let fw = |x: &[Tensor]| Ok(vec![x[0].exp()?.mul(&w)?.sum()?]);
    let (_, dy) = func::jvp(fw, &[x.clone()], &[v.clone()]).unwrap();
    let g = autograd::grad(&[&dy[0]], &[None], &[&w], GradOptions::default()).unwrap();
    let want = x.exp().unwrap().mul(&v).unwrap().sum().unwrap();
    assert_close(g[0].as_ref().unwrap(), &want, 1e-13);
}

/// The Rosenbrock function `Σ 100 (x_{i+1} − x_i²)² + (1 − x_i)²`.
fn rosenbrock(x: &[Tensor]) -> Result<Tensor> {
    let n = x[0].numel();
    let a = x[0].narrow(0, 0, n - 1)?;
    let b = x[0].narrow(0, 1, n - 1)?;
    let t1 = b.sub(&a.square()?)?.square()?.mul_scalar(100.0)?;
    let t2 = a.rsub_scalar(1.0)?.square()?;
    t1.add(&t2)?.sum()
}

/// Its gradient and Hessian in closed form.
fn rosenbrock_derivatives(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = x.len();
    let mut g = vec![0.0; n];
    let mut h = vec![0.0; n * n];
    for i in 0..n - 1 {
        let (a, b) = (x[i], x[i + 1]);
        g[i] += -400.0 * a * (b - a * a) - 2.0 * (1.0 - a);
        g[i + 1] += 200.0 * (b - a * a);
        h[i * n + i] += 1200.0 * a * a - 400.0 * b + 2.0;
        h[i * n + i + 1] += -400.0 * a;
        h[(i + 1) * n + i] += -400.0 * a;
        h[(i + 1) * n + i + 1] += 200.0;
    }
    (g, h)
}

#[test]
fn functional_transforms_match_closed_forms() {
    let xs = [0.3, -1.2, 0.8, 1.5, -0.4];
    let x = t(&xs);
    let (g_want, h_want) = rosenbrock_derivatives(&xs);
    let (g, value) = func::grad_and_value(rosenbrock, &[x.clone()]).unwrap();
    assert_close(&g[0], &t(&g_want), 1e-12);
    assert!(
        (value.item::<f64>().unwrap() - rosenbrock(&[x.clone()]).unwrap().item::<f64>().unwrap())
            .abs()
            == 0.0
    );
    let h_want = Tensor::from_vec(h_want, (5, 5)).unwrap();
    let f = |x: &[Tensor]| Ok(vec![rosenbrock(x)?]);
    let h = func::hessian(f, &[x.clone()]).unwrap();
    assert_eq!(h[0][0][0].dims(), &[5, 5]);
    assert_close(&h[0][0][0], &h_want, 1e-12);
    // reverse over reverse gives the same Hessian
    let grad_fn = |x: &[Tensor]| func::grad(rosenbrock, x);
    let hrr = func::jacrev(grad_fn, &[x.clone()]).unwrap();
    assert_close(&hrr[0][0], &h_want, 1e-12);
    // a quadratic ½ xᵀ A x + bᵀ x with two primals: ∂²/∂x² = (A + Aᵀ)/2, ∂²/∂x∂b = I
    let a = randn(&[4, 4], 7);
    let q = |p: &[Tensor]| -> Result<Vec<Tensor>> {
        let x = &p[0];
        let quad = x.unsqueeze(0)?.matmul(&a)?.matmul(&x.unsqueeze(1)?)?.sum()?.mul_scalar(0.5)?;
        Ok(vec![quad.add(&p[1].mul(x)?.sum()?)?])
    };
    let (x0, b0) = (randn(&[4], 8), randn(&[4], 9));
    let h = func::hessian(q, &[x0.clone(), b0.clone()]).unwrap();
    let sym = a.add(&a.mT().unwrap()).unwrap().mul_scalar(0.5).unwrap();
    let eye = Tensor::eye(4, DType::F64).unwrap();
    assert_close(&h[0][0][0], &sym, 1e-14);
    assert_close(&h[0][0][1], &eye, 0.0);
    assert_close(&h[0][1][0], &eye, 0.0);
    assert_close(&h[0][1][1], &Tensor::zeros((4, 4), DType::F64).unwrap(), 0.0);
}

#[test]
fn jacfwd_equals_jacrev_with_several_outputs_and_inputs() {
    let f = |p: &[Tensor]| -> Result<Vec<Tensor>> {
        let (x, w) = (&p[0], &p[1]);
        Ok(vec![x.matmul(w)?.tanh()?, x.sum_dims(&[1], false)?.exp()?, w.square()?.sum()?])
    };
    let (x, w) = (randn(&[2, 3], 21), randn(&[3, 4], 22));
    let jf = func::jacfwd(f, &[x.clone(), w.clone()]).unwrap();
    let jr = func::jacrev(f, &[x.clone(), w.clone()]).unwrap();
    assert_eq!(jf[0][0].dims(), &[2, 4, 2, 3]);
    assert_eq!(jf[0][1].dims(), &[2, 4, 3, 4]);
    assert_eq!(jf[1][0].dims(), &[2, 2, 3]);
    assert_eq!(jf[2][1].dims(), &[3, 4]);
    for (a, b) in jf.iter().flatten().zip(jr.iter().flatten()) {
        assert_eq!(a.dims(), b.dims());
        assert_close(a, b, 1e-13);
    }
    // the third output does not depend on x: zeros, not an error
    assert_close(&jf[2][0], &Tensor::zeros((2, 3), DType::F64).unwrap(), 0.0);
}

#[test]
fn directions_sharing_one_call_give_the_bits_of_one_call_each() {
    // jacfwd carries `chunk_size` directions through one call (sibling dual levels): the
    // tangents of one must not leak into another's, so every chunking gives the same bits
    let f = |p: &[Tensor]| -> Result<Vec<Tensor>> {
        let (x, w) = (&p[0], &p[1]);
        let y = x.matmul(w)?.tanh()?;
        Ok(vec![y.mul(&y)?.sum_dims(&[1], false)?, w.exp()?.mul(&x.sum()?)?])
    };
    let ps = [randn(&[2, 3], 31), randn(&[3, 2], 32)];
    let one = func::jacfwd_with(f, &ps, func::JacOptions { chunk_size: Some(1) }).unwrap();
    for chunk in [Some(2), Some(5), Some(100), None] {
        let j = func::jacfwd_with(f, &ps, func::JacOptions { chunk_size: chunk }).unwrap();
        for (a, b) in j.iter().flatten().zip(one.iter().flatten()) {
            assert_eq!(a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap(), "{chunk:?}");
        }
    }
    let e = func::jacfwd_with(f, &ps, func::JacOptions { chunk_size: Some(0) }).unwrap_err();
    assert!(e.to_string().contains("func.jacfwd"), "{e}");
    // nested groups of siblings: forward-over-forward and forward-over-reverse agree, the
    // inner directions carrying the outer ones as mixed derivatives
    let all = func::JacOptions { chunk_size: None };
    let x = t(&[0.4, -1.2, 0.9]);
    let x0 = [x.clone()];
    let h_fr = func::hessian_with(|p: &[Tensor]| Ok(vec![rosenbrock(p)?]), &x0, all).unwrap();
    let inner = |p: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(func::jacfwd_with(|q: &[Tensor]| Ok(vec![rosenbrock(q)?]), p, all)?.remove(0))
    };
    let h_ff = func::jacfwd_with(inner, &x0, all).unwrap();
    let (_, want) = rosenbrock_derivatives(&x.to_vec::<f64>().unwrap());
    let want = Tensor::from_vec(want, (3, 3)).unwrap();
    assert_close(&h_fr[0][0][0], &want, 1e-13);
    assert_close(&h_ff[0][0], &want, 1e-13);
}

#[test]
fn vjp_and_jvp_are_adjoint() {
    let f = |p: &[Tensor]| -> Result<Vec<Tensor>> {
        Ok(vec![p[0].sin()?.mul(&p[1])?, p[0].matmul(&p[1].mT()?)?])
    };
    let (a, b) = (randn(&[3, 2], 31), randn(&[3, 2], 32));
    let (u0, u1) = (randn(&[3, 2], 33), randn(&[3, 3], 34));
    let (va, vb) = (randn(&[3, 2], 35), randn(&[3, 2], 36));
    let (ys, pullback) = func::vjp(f, &[a.clone(), b.clone()]).unwrap();
    assert_close(&ys[1], &a.matmul(&b.mT().unwrap()).unwrap(), 0.0);
    let gs = pullback.apply(&[u0.clone(), u1.clone()]).unwrap();
    let (_, dys) = func::jvp(f, &[a, b], &[va.clone(), vb.clone()]).unwrap();
    let dot = |x: &Tensor, y: &Tensor| x.mul(y).unwrap().sum().unwrap().item::<f64>().unwrap();
    let lhs = dot(&u0, &dys[0]) + dot(&u1, &dys[1]);
    let rhs = dot(&gs[0], &va) + dot(&gs[1], &vb);
    assert!((lhs - rhs).abs() < 1e-12 * (1.0 + lhs.abs()), "{lhs} {rhs}");
    // the pullback checks its cotangents
    assert!(matches!(
        pullback.apply(&[u0.clone()]),
        Err(Error::InvalidArgument { op: "func.vjp", .. })
    ));
    assert!(matches!(
        pullback.apply(&[u0, u1.narrow(0, 0, 2).unwrap()]),
        Err(Error::ShapeMismatch { op: "func.vjp", .. })
    ));
}

#[test]
fn complex_jvp_is_the_holomorphic_derivative() {
    // f(z) = z² e^z: f'(z) = (2z + z²) e^z, and ż = f'(z) v
    let z = common::crandn(&[4], 41);
    let v = common::crandn(&[4], 42);
    let f = |z: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![z[0].square()?.mul(&z[0].exp()?)?]) };
    let (_, dz) = func::jvp(f, &[z.clone()], &[v.clone()]).unwrap();
    let fp = z
        .mul_scalar(2.0)
        .unwrap()
        .add(&z.square().unwrap())
        .unwrap()
        .mul(&z.exp().unwrap())
        .unwrap();
    let want = fp.mul(&v).unwrap();
    let diff = dz[0].sub(&want).unwrap().abs().unwrap();
    assert!(common::max_abs(&diff) < 1e-12);
    // |z|²: d|z|² = 2 Re(conj(z) ż), a real tangent
    let g = |z: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![z[0].abs()?.square()?]) };
    let (_, d) = func::jvp(g, &[z.clone()], &[v.clone()]).unwrap();
    let want = z.conj().unwrap().mul(&v).unwrap().real().unwrap().mul_scalar(2.0).unwrap();
    assert_close(&d[0], &want, 1e-12);
}

#[test]
fn transforms_work_inside_no_grad() {
    let _g = autograd::no_grad();
    let x = t(&[1.0, 2.0]);
    let g = func::grad(|x: &[Tensor]| x[0].pow_scalar(3.0)?.sum(), &[x]).unwrap();
    assert_close(&g[0], &t(&[3.0, 12.0]), 0.0);
}

#[test]
fn the_checks_pass_right_derivatives_and_catch_wrong_ones() {
    use cotangent::autograd::{gradcheck, gradcheck_forward, GradcheckOptions};
    // both modes of comparison: the full Jacobian, and random projections (max_full 0)
    let x = common::randn(&[3, 2], 61).with_requires_grad(true).unwrap();
    let right = |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![xs[0].sin()?.mul(&xs[0])?]) };
    // x·detach(x): its derivative loses the detached factor's share, so autograd's
    // answer (x) is wrong against the function's (2x): every check must see it
    let wrong = |xs: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![xs[0].mul(&xs[0].detach())?]) };
    for max_full in [40_000, 0] {
        let o = GradcheckOptions { max_full, ..GradcheckOptions::default() };
        assert!(gradcheck(right, std::slice::from_ref(&x), &o).unwrap().passed);
        assert!(gradcheck_forward(right, std::slice::from_ref(&x), &o).unwrap().passed);
        assert!(!gradcheck(wrong, std::slice::from_ref(&x), &o).unwrap().passed, "{max_full}");
        let r = gradcheck_forward(wrong, std::slice::from_ref(&x), &o).unwrap();
        assert!(!r.passed, "{max_full}: {r}");
    }
}
