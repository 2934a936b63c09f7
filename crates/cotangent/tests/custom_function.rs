//! User-defined differentiable ops (`autograd::Function`): recorded like built-in ops,
//! checked against finite differences (first and second order, reverse and forward
//! mode), several outputs, the functional API through them, and named errors for a
//! backward or jvp that breaks the contract.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use cotangent::autograd::{self, Function, FunctionCtx, GradOptions, GradcheckOptions};
use cotangent::{func, DType, Error, Result, Tensor};

/// `(sin x · y, x + y²)`: two outputs of two inputs, the forward outside the library.
struct SinMul;

impl Function for SinMul {
    fn name(&self) -> &'static str {
        "sin_mul"
    }
    fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let (x, y) = (inputs[0].to_vec::<f64>()?, inputs[1].to_vec::<f64>()?);
        assert!(!inputs[0].requires_grad(), "forward sees data without history");
        let shape = inputs[0].shape().clone();
        let a: Vec<f64> = x.iter().zip(&y).map(|(x, y)| x.sin() * y).collect();
        let b: Vec<f64> = x.iter().zip(&y).map(|(x, y)| x + y * y).collect();
        Ok(vec![Tensor::from_vec(a, shape.clone())?, Tensor::from_vec(b, shape)?])
    }
    fn backward(&self, cx: &FunctionCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (x, y) = (cx.input(0), cx.input(1));
        let zero = x.zeros_like()?;
        let (ga, gb) = (g[0].clone().unwrap_or(zero.clone()), g[1].clone().unwrap_or(zero));
        let gx = ga.mul(&x.cos()?.mul(y)?)?.add(&gb)?;
        let gy = ga.mul(&x.sin()?)?.add(&gb.mul(&y.mul_scalar(2.0)?)?)?;
        Ok(vec![cx.needs_input_grad(0).then_some(gx), cx.needs_input_grad(1).then_some(gy)])
    }
    fn jvp(&self, cx: &FunctionCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (x, y) = (cx.input(0), cx.input(1));
        let zero = x.zeros_like()?;
        let (tx, ty) = (t[0].clone().unwrap_or(zero.clone()), t[1].clone().unwrap_or(zero));
        let ta = tx.mul(&x.cos()?.mul(y)?)?.add(&ty.mul(&x.sin()?)?)?;
        let tb = tx.add(&ty.mul(&y.mul_scalar(2.0)?)?)?;
        Ok(vec![Some(ta), Some(tb)])
    }
}

fn inputs() -> Vec<Tensor> {
    let x = Tensor::from_vec(vec![0.3f64, -1.1, 2.0], 3).unwrap().with_requires_grad(true).unwrap();
    let y = Tensor::from_vec(vec![1.5f64, 0.2, -0.7], 3).unwrap().with_requires_grad(true).unwrap();
    vec![x, y]
}

fn f(p: &[Tensor]) -> Result<Vec<Tensor>> {
    SinMul.apply(&[&p[0], &p[1]])
}

#[test]
fn gradients_match_finite_differences_in_both_modes_to_second_order() {
    let opts = GradcheckOptions::default();
    let xs = inputs();
    let r = autograd::gradcheck(f, &xs, &opts).unwrap();
    assert!(r.passed, "{r}");
    let r = autograd::gradgradcheck(f, &xs, &opts).unwrap();
    assert!(r.passed, "{r}");
    let r = autograd::gradcheck_forward(f, &xs, &opts).unwrap();
    assert!(r.passed, "{r}");
}

#[test]
fn recorded_like_a_builtin_op() {
    let xs = inputs();
    let out = f(&xs).unwrap();
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(Tensor::requires_grad));
    assert_eq!(out[0].grad_fn_name(), Some("sin_mul"));
    // only the first output used: the second's cotangent is None
    let g = out[0].sum().unwrap().grad_wrt(&xs[1]).unwrap();
    assert_eq!(g.to_vec::<f64>().unwrap(), xs[0].sin().unwrap().to_vec::<f64>().unwrap());
    // no input requires grad: nothing recorded
    let plain: Vec<Tensor> = xs.iter().map(Tensor::detach).collect();
    assert!(f(&plain).unwrap().iter().all(|t| !t.requires_grad()));
}

#[test]
fn the_functional_api_goes_through_it() {
    let xs = inputs();
    let sum = |p: &[Tensor]| -> Result<Tensor> {
        let o = f(p)?;
        o[0].add(&o[1])?.sum()
    };
    // jacfwd (forward mode) equals jacrev (reverse mode)
    let scalar = |p: &[Tensor]| -> Result<Vec<Tensor>> { Ok(vec![sum(p)?]) };
    let jf = func::jacfwd(scalar, &xs).unwrap();
    let jr = func::jacrev(scalar, &xs).unwrap();
    for (a, b) in jf[0].iter().zip(&jr[0]) {
        let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
        for (u, v) in a.iter().zip(&b) {
            assert!((u - v).abs() <= 1e-14, "{a:?} {b:?}");
        }
    }
    // the Hessian (forward over reverse through backward's tensor ops) is symmetric
    let h = func::hessian(scalar, &xs).unwrap();
    let hxy = h[0][0][1].to_vec::<f64>().unwrap();
    let hyx = h[0][1][0].mT().unwrap().to_vec::<f64>().unwrap();
    for (u, v) in hxy.iter().zip(&hyx) {
        assert!((u - v).abs() <= 1e-14);
    }
    // and create_graph gives a differentiable gradient
    let x = &xs[0];
    let g = autograd::grad(
        &[&sum(&xs).unwrap()],
        &[None],
        &[x],
        GradOptions { create_graph: true, ..Default::default() },
    )
    .unwrap();
    assert!(g[0].as_ref().unwrap().requires_grad());
}

/// A Function whose backward or jvp returns what it must not.
struct Broken(&'static str);

impl Function for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        if self.0 == "no outputs" {
            return Ok(vec![]);
        }
        Ok(vec![inputs[0].mul_scalar(2.0)?])
    }
    fn backward(&self, cx: &FunctionCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let g = g[0].clone().unwrap();
        Ok(match self.0 {
            "count" => vec![Some(g.clone()), Some(g)],
            "shape" => vec![Some(g.sum()?)],
            "f32" => vec![Some(g.mul_scalar(2.0)?.to_dtype(DType::F32)?)],
            "complex" => vec![Some(Tensor::complex(&g, &g)?)],
            _ => vec![Some(g.mul_scalar(2.0)?.add(&cx.input(0).zeros_like()?)?)],
        })
    }
}

#[test]
fn a_broken_contract_is_a_named_error() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], 2).unwrap().with_requires_grad(true).unwrap();
    let grad = |what: &'static str| -> Result<Tensor> {
        Broken(what).apply(&[&x])?.remove(0).sum()?.grad_wrt(&x)
    };
    let e = grad("count").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "broken", arg: "backward", .. }), "{e:?}");
    let e = grad("shape").unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "broken", .. }), "{e:?}");
    let e = grad("complex").unwrap_err();
    assert!(matches!(e, Error::DTypeMismatch { op: "broken", .. }), "{e:?}");
    // a real gradient of another dtype is cast to the input's
    let g = grad("f32").unwrap();
    assert_eq!((g.dtype(), g.to_vec::<f64>().unwrap()), (DType::F64, vec![2.0, 2.0]));
    let e = Broken("no outputs").apply(&[&x]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "broken", arg: "forward", .. }), "{e:?}");
    // forward mode through a Function without jvp: refused, naming it
    let e = func::jvp(
        |p: &[Tensor]| Broken("ok").apply(&[&p[0]]),
        &[x.detach()],
        &[x.ones_like().unwrap()],
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotDifferentiable { op: "broken", .. }), "{e:?}");
}
