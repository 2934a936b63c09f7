//! Threads (issue 49): tensors and the results of autograd are `Send + Sync`; forward and
//! backward passes run from 8 threads at once give the same bits as one at a time; and
//! `autograd::grad` called on one shared graph from several threads at once gives each
//! caller the gradients a lone caller gets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::{Arc, Barrier};

use cotangent::autograd::{self, GradOptions, Gradients};
use cotangent::linalg::{self, Side, Uplo};
use cotangent::{DType, Generator, Result, Tensor};

fn send_sync<T: Send + Sync>() {}

#[test]
fn tensors_and_gradients_are_send_and_sync() {
    send_sync::<Tensor>();
    send_sync::<Gradients>();
    send_sync::<cotangent::Error>();
    send_sync::<linalg::Svd>();
    send_sync::<cotangent::optim::Param>();
}

/// The bits of each tensor, in order.
fn bits(ts: &[Tensor]) -> Vec<Vec<u64>> {
    ts.iter().map(|t| t.to_vec_f64().iter().map(|v| v.to_bits()).collect()).collect()
}

/// A mixed workload, forward and backward: elementwise ops and reductions, products, a
/// Cholesky factorisation and solve, an SVD and a symmetric eigendecomposition, batched
/// and not, on inputs made from `seed`; returns the outputs and the gradients.
fn workload(seed: u64) -> Result<Vec<Tensor>> {
    let mut g = Generator::new(seed);
    let a = Tensor::randn(vec![8, 24, 24], DType::F64, &mut g)?.with_requires_grad(true)?;
    let b = Tensor::randn(vec![8, 24, 3], DType::F64, &mut g)?.with_requires_grad(true)?;
    let big = Tensor::randn(vec![160, 160], DType::F64, &mut g)?.with_requires_grad(true)?;
    let spd = a.matmul(&a.mT()?)?.add(&Tensor::eye(24, DType::F64)?.mul_scalar(24.0)?)?;
    let l = linalg::cholesky(&spd, Uplo::Lower)?;
    let x = linalg::cholesky_solve(&b, &l, Uplo::Lower)?;
    let s = linalg::svd(&big, false)?;
    let sym = big.add(&big.mT()?)?;
    let e = linalg::eigh(&sym, Uplo::Lower)?;
    let y = linalg::solve(&a, &b, Side::Left)?;
    let loss = x
        .tanh()?
        .sum()?
        .add(&s.s.sum()?)?
        .add(&e.eigenvalues.square()?.mean()?)?
        .add(&y.sin()?.sum()?)?
        .add(&big.matmul(&big)?.exp()?.mul_scalar(1e-3)?.logsumexp(&[-1], false)?.sum()?)?;
    let gs = autograd::grad(&[&loss], &[None], &[&a, &b, &big], GradOptions::default())?;
    let mut out = vec![loss, x, s.s, e.eigenvalues];
    out.extend(gs.into_iter().flatten());
    Ok(out)
}

#[test]
fn eight_threads_at_once_give_the_bits_of_one_at_a_time() {
    let seeds: Vec<u64> = (0..8).collect();
    let alone: Vec<Vec<Vec<u64>>> = seeds.iter().map(|&s| bits(&workload(s).unwrap())).collect();
    for _ in 0..3 {
        let barrier = Arc::new(Barrier::new(seeds.len()));
        let handles: Vec<_> = seeds
            .iter()
            .map(|&s| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    bits(&workload(s).unwrap())
                })
            })
            .collect();
        for (s, h) in seeds.iter().zip(handles) {
            assert_eq!(h.join().unwrap(), alone[*s as usize], "seed {s}");
        }
    }
}

#[test]
fn grad_on_a_shared_graph_from_several_threads() {
    let mut g = Generator::new(7);
    let a = Tensor::randn(vec![4, 32, 32], DType::F64, &mut g)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let w =
        Tensor::randn(vec![32, 5], DType::F64, &mut g).unwrap().with_requires_grad(true).unwrap();
    let spd =
        a.matmul(&a.mT().unwrap()).unwrap().add(&Tensor::eye(32, DType::F64).unwrap()).unwrap();
    let l = linalg::cholesky(&spd, Uplo::Lower).unwrap();
    let y = linalg::cholesky_solve(&w.expand(&[4, 32, 5]).unwrap(), &l, Uplo::Lower).unwrap();
    let loss = y
        .square()
        .unwrap()
        .sum()
        .unwrap()
        .add(&l.diagonal(0, -2, -1).unwrap().log().unwrap().sum().unwrap())
        .unwrap();
    // the graph is shared: every thread differentiates the same `loss`, first and second
    // order, while the others do
    let run = |loss: &Tensor, a: &Tensor, w: &Tensor| -> Vec<Vec<u64>> {
        let opts = GradOptions { create_graph: true, allow_unused: false };
        let g = autograd::grad(&[loss], &[None], &[a, w], opts).unwrap();
        let (ga, gw) = (g[0].clone().unwrap(), g[1].clone().unwrap());
        let gg = ga.square().unwrap().sum().unwrap();
        let h = autograd::grad(&[&gg], &[None], &[w], GradOptions::default()).unwrap();
        bits(&[ga.detach(), gw.detach(), h[0].clone().unwrap()])
    };
    let alone = run(&loss, &a, &w);
    let shared = Arc::new((loss, a, w));
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (shared, barrier) = (Arc::clone(&shared), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                (0..3).map(|_| run(&shared.0, &shared.1, &shared.2)).collect::<Vec<_>>()
            })
        })
        .collect();
    for h in handles {
        for got in h.join().unwrap() {
            assert_eq!(got, alone);
        }
    }
}
