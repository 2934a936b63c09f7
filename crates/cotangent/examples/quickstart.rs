//! Quick start: build a small least-squares problem, differentiate it to second order,
//! and check the gradient against finite differences.
//!
//! Run with `cargo run --release --example quickstart`.

#![allow(clippy::print_stdout)]

use cotangent::autograd::{self, gradcheck, GradOptions, GradcheckOptions};
use cotangent::{DType, Generator, Result, Tensor};

/// Loss of a tiny model: `L(w, b) = mean((tanh(x w + b) - y)²) + λ ‖w‖²`.
fn loss(x: &Tensor, y: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let pred = x.matmul(w)?.add(b)?.tanh()?;
    let fit = pred.sub(y)?.square()?.mean()?;
    fit.add(&w.square()?.sum()?.mul_scalar(1e-2)?)
}

fn main() -> Result<()> {
    let mut gen = Generator::new(0);
    // 8 samples of 3 features; targets from a known weight vector
    let x = Tensor::randn((8, 3), DType::F64, &mut gen)?;
    let w_true = Tensor::from_vec(vec![0.5f64, -1.0, 0.25], 3)?;
    let y = x.matmul(&w_true)?.tanh()?;

    let w = Tensor::zeros(3, DType::F64)?.with_requires_grad(true)?;
    let b = Tensor::zeros((), DType::F64)?.with_requires_grad(true)?;

    let l = loss(&x, &y, &w, &b)?;
    println!("loss at w = 0: {:.6}", l.item::<f64>()?);

    // first derivatives, keeping the graph of the backward pass
    let opts = GradOptions { create_graph: true, allow_unused: false };
    let g = autograd::grad(&[&l], &[None], &[&w, &b], opts)?;
    let (gw, gb) =
        (g[0].clone().unwrap_or(w.zeros_like()?), g[1].clone().unwrap_or(b.zeros_like()?));
    println!("dL/dw = {gw}");
    println!("dL/db = {gb}");

    // a Hessian-vector product: d/dw (∇_w L · v)
    let v = Tensor::from_vec(vec![1.0f64, 0.0, 0.0], 3)?;
    let hv = autograd::grad(&[&gw.mul(&v)?.sum()?], &[None], &[&w], GradOptions::default())?;
    if let Some(hv) = &hv[0] {
        println!("H v     = {hv}");
    }

    // a few steps of gradient descent
    let (mut w, mut b) = (w, b);
    for step in 0..=200 {
        let l = loss(&x, &y, &w, &b)?;
        let grads = l.backward()?;
        if step % 50 == 0 {
            println!("step {step:3}: loss {:.6}", l.item::<f64>()?);
        }
        let (Some(gw), Some(gb)) = (grads.get(&w), grads.get(&b)) else { break };
        w = w.sub(&gw.mul_scalar(0.5)?)?.detach().with_requires_grad(true)?;
        b = b.sub(&gb.mul_scalar(0.5)?)?.detach().with_requires_grad(true)?;
    }
    println!("fitted w = {w} (true {w_true})");

    // the gradient agrees with central finite differences
    let report = gradcheck(
        |t| Ok(vec![loss(&x, &y, &t[0], &t[1])?]),
        &[w, b],
        &GradcheckOptions::default(),
    )?;
    println!("{report}");
    Ok(())
}
