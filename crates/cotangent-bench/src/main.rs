//! `cotangent-bench`: times cotangent on the workloads of PyTorch's timing script
//! (`torch_linalg.py`: same ops, losses, dtypes, shapes, `fwd` and `fwdbwd` modes,
//! medians after warm-up) and writes records with the same fields (`op`, `dtype`,
//! `shape`, `mode`, `median`), so `scripts/bench_compare.py` can put the two side by side.
//!
//! ```text
//! cargo run --release -p cotangent-bench -- --out cotangent.json [--ops mm bmm]
//!     [--dtypes float64] [--sizes 4 256] [--no-batched | --batched 4096x4 64x12]
//!     [--threads 2] [--quick] [--jvp]
//! ```
//!
//! With `--jvp` the second mode is `jvp` instead of `fwdbwd`: the forward on dual inputs
//! (every input with a random tangent) and the outputs' tangents read back, paired with
//! `torch.func.jvp` by `scripts/bench_jvp_torch.py`.
//!
//! Ops not implemented yet are skipped; the op table grows with the library.
//!
//! Three product ops are not in `torch_linalg.py`; `scripts/bench_products_torch.py` times
//! them in PyTorch with the same record fields: `addmm` (`addmm(C, A, B).sum()`, square
//! sizes), `baddbmm` (`baddbmm(C, A, B).sum()`, batched shapes) and `linear`
//! (`linear(x, W, b).sum()` with `x: (64, n)`, `W: (n, n)`, `b: (n)`; square sizes `n`).

use std::io::Write;
use std::time::Instant;

use cotangent::autograd::{self, GradOptions};
use cotangent::linalg::{self, NormOrd, QrMode, Side, Uplo};
use cotangent::{DType, Generator, Result, Tensor};

const OPS: &[&str] = &[
    "mm",
    "bmm",
    "matmul",
    "solve",
    "inv",
    "det",
    "slogdet",
    "cholesky",
    "qr",
    "lu_factor",
    "svd",
    "svdvals",
    "pinv",
    "lstsq",
    "matrix_norm",
    "vector_norm",
    "eigh",
    "eigvalsh",
    "eig",
    "matrix_exp",
    "addmm",
    "baddbmm",
    "linear",
];
const SQUARE: &[usize] = &[4, 16, 64, 256, 1024];
const BATCHED: &[(usize, usize)] = &[(4096, 4), (1024, 16)];

struct Args {
    out: String,
    ops: Vec<String>,
    dtypes: Vec<String>,
    sizes: Vec<usize>,
    batched: Vec<(usize, usize)>,
    threads: usize,
    sample_s: f64,
    min_time: f64,
    min_reps: usize,
    max_reps: usize,
    max_call_s: f64,
    /// Time forward mode too (`jvp`: the forward on dual inputs, every input with a
    /// tangent, as `torch.func.jvp`), beside `fwd`, instead of `fwdbwd`.
    jvp: bool,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut a = Args {
        out: "cotangent_linalg.json".into(),
        ops: OPS.iter().map(|s| (*s).to_string()).collect(),
        dtypes: vec!["float64".into(), "float32".into()],
        sizes: SQUARE.to_vec(),
        batched: BATCHED.to_vec(),
        threads: 2,
        sample_s: 0.01,
        min_time: 0.3,
        min_reps: 7,
        max_reps: 41,
        max_call_s: 2.0,
        jvp: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let list = |i: &mut usize| {
        let mut v = Vec::new();
        while *i + 1 < argv.len() && !argv[*i + 1].starts_with("--") {
            *i += 1;
            v.push(argv[*i].clone());
        }
        v
    };
    while i < argv.len() {
        match argv[i].as_str() {
            "--out" => {
                i += 1;
                a.out = argv.get(i).cloned().ok_or("--out needs a path")?;
            }
            "--ops" => a.ops = list(&mut i),
            "--dtypes" => a.dtypes = list(&mut i),
            "--sizes" => {
                a.sizes = list(&mut i)
                    .iter()
                    .map(|s| s.parse().map_err(|_| format!("bad size {s}")))
                    .collect::<std::result::Result<_, _>>()?;
            }
            "--no-batched" => a.batched.clear(),
            "--batched" => {
                a.batched = list(&mut i)
                    .iter()
                    .map(|s| {
                        let (b, n) = s.split_once('x').ok_or(format!("bad batched shape {s}"))?;
                        Ok((
                            b.parse().map_err(|_| format!("bad batch {b}"))?,
                            n.parse().map_err(|_| format!("bad order {n}"))?,
                        ))
                    })
                    .collect::<std::result::Result<_, String>>()?;
            }
            "--threads" => {
                i += 1;
                a.threads =
                    argv.get(i).and_then(|s| s.parse().ok()).ok_or("--threads needs a number")?;
            }
            "--jvp" => a.jvp = true,
            "--quick" => {
                a.min_time = 0.01;
                a.min_reps = 2;
                a.sample_s = 0.001;
            }
            other => return Err(format!("unknown argument {other}")),
        }
        i += 1;
    }
    Ok(a)
}

fn dtype(name: &str) -> Option<DType> {
    match name {
        "float64" => Some(DType::F64),
        "float32" => Some(DType::F32),
        "complex128" => Some(DType::C128),
        "complex64" => Some(DType::C64),
        _ => None,
    }
}

/// `t.sum()`, the real part's for a complex tensor (the script's `_s`).
fn real_sum(t: &Tensor) -> Result<Tensor> {
    t.real()?.sum()
}

/// `x²` entrywise, `|x|²` for a complex tensor (the script's `_sq`: phase-invariant).
fn sq(t: &Tensor) -> Result<Tensor> {
    if t.dtype().is_complex() {
        t.abs()?.square()
    } else {
        t.square()
    }
}

fn inputs(
    op: &str,
    batch: Option<usize>,
    n: usize,
    dt: DType,
    gen: &mut Generator,
) -> Result<Vec<Tensor>> {
    let shape: Vec<usize> = match batch {
        None => vec![n, n],
        Some(b) => vec![b, n, n],
    };
    let eye = Tensor::eye(n, dt)?;
    match op {
        "mm" | "bmm" | "matmul" => {
            Ok(vec![Tensor::randn(shape.clone(), dt, gen)?, Tensor::randn(shape, dt, gen)?])
        }
        "addmm" | "baddbmm" => Ok(vec![
            Tensor::randn(shape.clone(), dt, gen)?,
            Tensor::randn(shape.clone(), dt, gen)?,
            Tensor::randn(shape, dt, gen)?,
        ]),
        "linear" => Ok(vec![
            Tensor::randn((64, n), dt, gen)?,
            Tensor::randn((n, n), dt, gen)?.div_scalar((n as f64).sqrt())?,
            Tensor::randn(n, dt, gen)?,
        ]),
        "cholesky" => {
            // g gᴴ / n + I
            let g = Tensor::randn(shape, dt, gen)?;
            Ok(vec![g.matmul(&g.mH()?)?.div_scalar(n as f64)?.add(&eye)?.contiguous()?])
        }
        "eigh" | "eigvalsh" => {
            // (g + gᴴ) / √(2n): symmetric, spectrum in about [−2, 2]
            let g = Tensor::randn(shape, dt, gen)?;
            Ok(vec![g.add(&g.mH()?)?.div_scalar((2.0 * n as f64).sqrt())?.contiguous()?])
        }
        "solve" | "inv" | "det" | "slogdet" | "qr" | "lu_factor" | "svd" | "svdvals" | "pinv"
        | "lstsq" | "matrix_norm" | "vector_norm" | "matrix_exp" | "eig" => {
            // I + 0.5 N(0, 1) / √n: well conditioned
            let a = Tensor::randn(shape, dt, gen)?
                .mul_scalar(0.5 / (n as f64).sqrt())?
                .add(&eye)?
                .contiguous()?;
            if op == "solve" || op == "lstsq" {
                let vshape: Vec<usize> = match batch {
                    None => vec![n, 1],
                    Some(b) => vec![b, n, 1],
                };
                Ok(vec![a, Tensor::randn(vshape, dt, gen)?])
            } else {
                Ok(vec![a])
            }
        }
        _ => Ok(vec![]),
    }
}

/// The op's forward: its outputs, as in the PyTorch script.
fn forward(op: &str, xs: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(match op {
        "mm" => vec![xs[0].mm(&xs[1])?],
        "bmm" => vec![xs[0].bmm(&xs[1])?],
        "matmul" => vec![xs[0].matmul(&xs[1])?],
        "cholesky" => vec![linalg::cholesky(&xs[0], Uplo::Lower)?],
        "solve" => vec![linalg::solve(&xs[0], &xs[1], Side::Left)?],
        "inv" => vec![linalg::inv(&xs[0])?],
        "det" => vec![linalg::det(&xs[0])?],
        "slogdet" => {
            let r = linalg::slogdet(&xs[0])?;
            vec![r.sign, r.logabsdet]
        }
        "qr" => {
            let r = linalg::qr(&xs[0], QrMode::Reduced)?;
            vec![r.q, r.r]
        }
        "lu_factor" => {
            let r = linalg::lu_factor(&xs[0], true)?;
            vec![r.lu, r.pivots]
        }
        "svd" => {
            let r = linalg::svd(&xs[0], false)?;
            vec![r.u, r.s, r.vh]
        }
        "svdvals" => vec![linalg::svdvals(&xs[0])?],
        "pinv" => vec![linalg::pinv(&xs[0], linalg::PinvOptions::default())?],
        "lstsq" => vec![linalg::lstsq(&xs[0], &xs[1], linalg::LstsqOptions::default())?.solution],
        // matrix_norm(A) (Frobenius) and vector_norm(A, dim=(-2, -1))
        "matrix_norm" => vec![linalg::matrix_norm(&xs[0], NormOrd::Fro, [-2, -1], false)?],
        "vector_norm" => vec![linalg::vector_norm(&xs[0], 2.0, Some(&[-2, -1]), false)?],
        "eigh" => {
            let r = linalg::eigh(&xs[0], Uplo::Lower)?;
            vec![r.eigenvalues, r.eigenvectors]
        }
        "eigvalsh" => vec![linalg::eigvalsh(&xs[0], Uplo::Lower)?],
        "eig" => {
            let r = linalg::eig(&xs[0])?;
            vec![r.eigenvalues, r.eigenvectors]
        }
        // not in torch_linalg.py: compare with matrix_exp(I + 0.5 N(0, 1) / √n).sum()
        "matrix_exp" => vec![linalg::matrix_exp(&xs[0])?],
        "addmm" => vec![xs[0].addmm(&xs[1], &xs[2], 1.0, 1.0)?],
        "baddbmm" => vec![xs[0].baddbmm(&xs[1], &xs[2], 1.0, 1.0)?],
        "linear" => vec![xs[0].linear(&xs[1], Some(&xs[2]))?],
        _ => {
            return Err(cotangent::Error::Unsupported {
                op: "cotangent-bench",
                device: cotangent::Device::Cpu,
            })
        }
    })
}

/// The scalar loss of the outputs (the PyTorch script's `loss_fn`).
fn loss(op: &str, ys: &[Tensor]) -> Result<Tensor> {
    match op {
        "slogdet" => ys[1].sum(),
        "qr" => sq(&ys[0])?.sum()?.add(&sq(&ys[1])?.sum()?),
        // S.sum() + U.square().sum() + Vh.square().sum() (|.|² for complex factors)
        "svd" => ys[1].sum()?.add(&sq(&ys[0])?.sum()?)?.add(&sq(&ys[2])?.sum()?),
        // w.sum() + V.square().sum() (sign- and phase-invariant)
        "eigh" => ys[0].sum()?.add(&sq(&ys[1])?.sum()?),
        // w.real.sum() + |V|².sum() (phase-invariant)
        "eig" => real_sum(&ys[0])?.add(&sq(&ys[1])?.sum()?),
        _ => real_sum(&ys[0]),
    }
}

fn applicable(op: &str, batch: Option<usize>) -> bool {
    match op {
        "mm" | "addmm" | "linear" => batch.is_none(),
        "bmm" | "baddbmm" => batch.is_some(),
        _ => true,
    }
}

struct Timing {
    median: f64,
    min: f64,
    max: f64,
    reps: usize,
    inner: usize,
}

fn bench(args: &Args, f: &mut dyn FnMut() -> Result<()>) -> Result<Timing> {
    let t0 = Instant::now();
    f()?;
    let first = t0.elapsed().as_secs_f64();
    if first > args.max_call_s {
        return Ok(Timing { median: first, min: first, max: first, reps: 1, inner: 1 });
    }
    let t0 = Instant::now();
    let mut k = 0usize;
    while k < 2 || (t0.elapsed().as_secs_f64() < 0.05 && k < 10_000) {
        f()?;
        k += 1;
    }
    let est = t0.elapsed().as_secs_f64() / k as f64;
    let inner = ((args.sample_s / est.max(1e-9)) as usize).max(1);
    let mut reps = ((args.min_time / (est * inner as f64).max(1e-9)) as usize).max(args.min_reps);
    reps = reps.min(args.max_reps);
    if est > 0.3 {
        reps = reps.min((6.0 / est) as usize).max(3);
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..inner {
            f()?;
        }
        samples.push(t.elapsed().as_secs_f64() / inner as f64);
    }
    samples.sort_by(f64::total_cmp);
    let median = if reps % 2 == 1 {
        samples[reps / 2]
    } else {
        0.5 * (samples[reps / 2 - 1] + samples[reps / 2])
    };
    Ok(Timing { median, min: samples[0], max: samples[reps - 1], reps, inner })
}

fn run(args: &Args) -> Result<Vec<serde_json::Value>> {
    let mut gen = Generator::new(0);
    let mut shapes: Vec<(Option<usize>, usize)> = args.sizes.iter().map(|&n| (None, n)).collect();
    shapes.extend(args.batched.iter().map(|&(b, n)| (Some(b), n)));
    let mut out = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for dname in &args.dtypes {
        let Some(dt) = dtype(dname) else { continue };
        for op in &args.ops {
            for &(batch, n) in &shapes {
                if !applicable(op, batch) {
                    continue;
                }
                let xs = inputs(op, batch, n, dt, &mut gen)?;
                if xs.is_empty() {
                    continue;
                }
                let key = match batch {
                    None => format!("{n}"),
                    Some(b) => format!("{b}x{n}x{n}"),
                };
                // an op the library does not have for this dtype yet (complex): no row
                if let Err(cotangent::Error::UnsupportedDType { .. }) = forward(op, &xs) {
                    let _ = writeln!(stdout, "{dname:8} {op:12} {key:12} (not for this dtype)");
                    continue;
                }
                let leaves: Vec<Tensor> =
                    xs.iter().map(|x| x.with_requires_grad(true)).collect::<Result<_>>()?;
                let mut fwd = || -> Result<()> {
                    let _g = autograd::no_grad();
                    forward(op, &xs).map(drop)
                };
                let mut fwdbwd = || -> Result<()> {
                    let y = forward(op, &leaves)?;
                    let l = loss(op, &y)?;
                    let refs: Vec<&Tensor> = leaves.iter().collect();
                    autograd::grad(&[&l], &[None], &refs, GradOptions::default()).map(drop)
                };
                // the tangent of a symmetric (Hermitian) input is symmetric (as
                // bench_jvp_torch.py makes them)
                let symmetric = matches!(op.as_str(), "cholesky" | "eigh" | "eigvalsh");
                let tangents: Vec<Tensor> = xs
                    .iter()
                    .map(|x| {
                        let t = Tensor::randn(x.shape().clone(), x.dtype(), &mut gen)?;
                        if symmetric {
                            t.add(&t.mH()?)
                        } else {
                            Ok(t)
                        }
                    })
                    .collect::<Result<_>>()?;
                // torch.func.jvp's work: the forward on dual inputs, then every output's
                // tangent read back
                let mut jvp = || -> Result<()> {
                    let _g = autograd::no_grad();
                    let level = autograd::forward::dual_level();
                    let duals: Vec<Tensor> = xs
                        .iter()
                        .zip(&tangents)
                        .map(|(x, t)| level.make_dual(x, t))
                        .collect::<Result<_>>()?;
                    for y in forward(op, &duals)? {
                        drop(level.unpack_dual(&y)?);
                    }
                    Ok(())
                };
                let second: (&str, &mut dyn FnMut() -> Result<()>) =
                    if args.jvp { ("jvp", &mut jvp) } else { ("fwdbwd", &mut fwdbwd) };
                for (mode, f) in [("fwd", &mut fwd as &mut dyn FnMut() -> Result<()>), second] {
                    let t = bench(args, f)?;
                    let _ = writeln!(
                        stdout,
                        "{dname:8} {op:12} {key:12} {mode:7} {:>12.3e} s",
                        t.median
                    );
                    out.push(serde_json::json!({
                        "op": op, "dtype": dname, "shape": key, "batch": batch, "n": n, "mode": mode,
                        "median": t.median, "min": t.min, "max": t.max, "reps": t.reps, "inner": t.inner,
                    }));
                }
            }
        }
    }
    Ok(out)
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cotangent-bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let _ = rayon::ThreadPoolBuilder::new().num_threads(args.threads).build_global();
    let results = match run(&args) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cotangent-bench: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let doc = serde_json::json!({
        "env": { "library": "cotangent", "threads": args.threads, "version": env!("CARGO_PKG_VERSION") },
        "results": results,
    });
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    if let Err(e) = std::fs::write(&args.out, text) {
        let _ = writeln!(std::io::stderr(), "cotangent-bench: cannot write {}: {e}", args.out);
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}
