//! The autograd engine's fixed cost: forward and backward passes over graphs of tiny (2x2)
//! tensors, where the time is all bookkeeping (recording nodes, allocating tensors,
//! walking the graph) and none of it arithmetic.
//!
//! Workloads (the same ones `scripts/bench_engine_torch.py` times in PyTorch):
//! - `abc_sum/{f64,f32}/fwd_bwd`: `(a*b + c).sum()` and its backward, `a`, `b`, `c` 2x2
//!   leaves that require grad;
//! - `chain/f64/fwd_bwd` and `chain/f64/fwd`: a chain of [`CHAIN`] ops cycling through
//!   `x*(-0.5)`, `exp(x)`, `x + k` (`k` a constant) from a 2x2 leaf, then `.sum()`, with
//!   and without its backward. The throughput criterion prints is in ops; divide the time
//!   by [`CHAIN`] for the cost of one op.
//!
//! Run with `cargo bench -p cotangent --bench engine`; `scripts/bench_engine_compare.sh`
//! runs this and the PyTorch script and prints the ratios.

use std::hint::black_box;
use std::time::Duration;

use cotangent::{DType, Result, Tensor};
use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};

/// The number of tiny ops in the chain workloads (the final `.sum()` not counted).
const CHAIN: usize = 100;

fn leaf(v: [f64; 4], dtype: DType) -> Result<Tensor> {
    Tensor::from_vec(v.to_vec(), (2, 2))?.to_dtype(dtype)?.with_requires_grad(true)
}

/// `(a*b + c).sum()` and its backward; returns the gradient of `a`.
fn abc_sum(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Option<Tensor>> {
    let y = a.mul(b)?.add(c)?.sum()?;
    let g = y.backward()?;
    Ok(g.get(a).cloned())
}

/// The chain `x -> x*(-0.5) -> exp -> + c -> ...` of `CHAIN` ops, summed.
fn chain(x: &Tensor, c: &Tensor) -> Result<Tensor> {
    let mut h = x.clone();
    for i in 0..CHAIN {
        h = match i % 3 {
            0 => h.mul_scalar(-0.5)?,
            1 => h.exp()?,
            _ => h.add(c)?,
        };
    }
    h.sum()
}

fn setup() -> Result<[Tensor; 4]> {
    Ok([
        leaf([1.0, 2.0, 3.0, 4.0], DType::F64)?,
        leaf([0.5, -1.0, 1.5, -2.0], DType::F64)?,
        leaf([0.1, 0.2, 0.3, 0.4], DType::F64)?,
        // the chain's addend: a constant (no grad), so the chain is a pure chain
        Tensor::from_vec(vec![0.1f64, 0.2, 0.3, 0.4], (2, 2))?,
    ])
}

fn bench_engine(cr: &mut Criterion) -> Result<()> {
    let [a, b, c, k] = setup()?;
    // sanity: the workloads compute what they claim (d/da Σ(a*b + c) = b)
    let ga = abc_sum(&a, &b, &c)?.map(|g| g.to_vec_f64());
    if ga != Some(b.to_vec_f64()) {
        return Err(cotangent::Error::Internal { op: "bench", reason: "wrong gradient" });
    }

    let mut group = cr.benchmark_group("abc_sum");
    for dtype in [DType::F64, DType::F32] {
        let (a, b, c) = (
            leaf([1.0, 2.0, 3.0, 4.0], dtype)?,
            leaf([0.5, -1.0, 1.5, -2.0], dtype)?,
            leaf([0.1, 0.2, 0.3, 0.4], dtype)?,
        );
        group.bench_function(BenchmarkId::new(dtype.as_str(), "fwd_bwd"), |bn| {
            bn.iter(|| abc_sum(black_box(&a), black_box(&b), black_box(&c)));
        });
    }
    group.finish();

    let mut group = cr.benchmark_group("chain");
    group.throughput(Throughput::Elements(CHAIN as u64));
    group.bench_function(BenchmarkId::new("f64", "fwd_bwd"), |bn| {
        bn.iter(|| -> Result<Option<Tensor>> {
            let y = chain(black_box(&a), &k)?;
            let g = y.backward()?;
            Ok(g.get(&a).cloned())
        });
    });
    group.bench_function(BenchmarkId::new("f64", "fwd"), |bn| {
        bn.iter(|| chain(black_box(&a), &k));
    });
    group.finish();
    Ok(())
}

fn engine(cr: &mut Criterion) {
    if let Err(e) = bench_engine(cr) {
        // a bench that cannot run its workload must not report a time
        #[allow(clippy::panic)]
        {
            panic!("engine benchmark failed: {e}");
        }
    }
}

/// The criterion group (in a module: the macro's `pub fn` has no doc comment).
#[allow(missing_docs)]
mod group {
    use super::{engine, Criterion, Duration};

    criterion::criterion_group! {
        name = benches;
        config = Criterion::default()
            .sample_size(30)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        targets = engine
    }
}
criterion_main!(group::benches);
