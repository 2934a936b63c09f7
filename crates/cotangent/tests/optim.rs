//! Optimisers: trajectories against torch.optim (tests/fixtures/optim.json, made by
//! scripts/optim_fixtures.py), convergence to known minima, and errors.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    missing_docs
)]

use cotangent::optim::{Adam, Lbfgs, LineSearch, Optimizer, Param, Sgd};
use cotangent::{DType, Error, Result, Tensor};
use serde_json::Value;

const A: [f64; 8] = [1.0, 2.0, 3.0, -1.0, 0.5, 0.25, -2.0, 1.5];
const B: [f64; 4] = [1.0, -2.0, 0.5, 3.0];

/// (1 − x₀)² + 100 (x₁ − x₀²)²
fn rosenbrock(ps: &[Tensor]) -> Result<Tensor> {
    let (a, b) = (ps[0].select(0, 0)?, ps[0].select(0, 1)?);
    a.rsub_scalar(1.0)?.square()?.add(&b.sub(&a.square()?)?.square()?.mul_scalar(100.0)?)
}

/// ‖A x + c − b‖² (x: 2, c: 0-d)
fn lsq(ps: &[Tensor]) -> Result<Tensor> {
    let a = Tensor::from_vec(A.to_vec(), (4, 2))?;
    let b = Tensor::from_vec(B.to_vec(), 4)?;
    let r = a.matmul(&ps[0])?.add(&ps[1])?.sub(&b)?;
    r.mul(&r)?.sum()
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn params_of(init: &Value, problem: &str) -> Vec<Param> {
    let init = init.as_array().unwrap();
    let shapes: Vec<Vec<usize>> =
        if problem == "rosenbrock" { vec![vec![2]] } else { vec![vec![2], vec![]] };
    init.iter()
        .zip(shapes)
        .map(|(v, s)| Param::new(&Tensor::from_vec(f64s(v), s).unwrap()).unwrap())
        .collect()
}

fn get(settings: &Value, key: &str) -> Option<f64> {
    settings.get(key).and_then(Value::as_f64)
}

fn flag(settings: &Value, key: &str) -> bool {
    settings.get(key).and_then(Value::as_bool).unwrap_or(false)
}

enum Opt {
    Sgd(Sgd),
    Adam(Adam),
    Lbfgs(Lbfgs),
}

fn build(name: &str, s: &Value) -> Opt {
    match name {
        "sgd" => Opt::Sgd(
            Sgd::new(get(s, "lr").unwrap_or(1e-3))
                .momentum(get(s, "momentum").unwrap_or(0.0))
                .dampening(get(s, "dampening").unwrap_or(0.0))
                .weight_decay(get(s, "weight_decay").unwrap_or(0.0))
                .nesterov(flag(s, "nesterov"))
                .maximize(flag(s, "maximize")),
        ),
        "adam" => {
            let betas = s.get("betas").map_or((0.9, 0.999), |b| {
                let b = f64s(b);
                (b[0], b[1])
            });
            Opt::Adam(
                Adam::new(get(s, "lr").unwrap_or(1e-3))
                    .betas(betas)
                    .eps(get(s, "eps").unwrap_or(1e-8))
                    .weight_decay(get(s, "weight_decay").unwrap_or(0.0))
                    .amsgrad(flag(s, "amsgrad")),
            )
        }
        "lbfgs" => Opt::Lbfgs(
            Lbfgs::default()
                .lr(get(s, "lr").unwrap_or(1.0))
                .max_iter(get(s, "max_iter").map_or(20, |v| v as usize))
                .history_size(get(s, "history_size").map_or(100, |v| v as usize))
                .line_search(if s.get("line_search_fn").is_some() {
                    LineSearch::StrongWolfe
                } else {
                    LineSearch::None
                }),
        ),
        other => panic!("unknown optimiser {other}"),
    }
}

#[test]
fn trajectories_match_torch_optim() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/optim.json"),
    )
    .unwrap();
    let fx: Value = serde_json::from_str(&text).unwrap();
    let runs = fx["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for run in runs {
        let name = run["optimizer"].as_str().unwrap();
        let problem = run["problem"].as_str().unwrap();
        let label = format!("{name} on {problem} with {}", run["settings"]);
        let f = if problem == "rosenbrock" { rosenbrock } else { lsq };
        let mut params = params_of(&run["init"], problem);
        let mut opt = build(name, &run["settings"]);
        for (k, step) in run["steps"].as_array().unwrap().iter().enumerate() {
            let loss = match &mut opt {
                Opt::Sgd(o) => o.step(&mut params, f),
                Opt::Adam(o) => o.step(&mut params, f),
                Opt::Lbfgs(o) => o.step(&mut params, f),
            }
            .unwrap();
            // same algorithm, same f64 arithmetic up to the order of a few sums
            // same algorithm, same f64 arithmetic up to the order of a few sums; where the
            // trajectory amplifies roundoff (PyTorch's own result moves by `sensitivity`
            // when a coordinate of the start moves by one ulp), the tolerance grows with it:
            // our roundoff differs from PyTorch's in every fused or reordered operation, each
            // worth a few ulp, hence the factor
            let sens = step["sensitivity"].as_f64().unwrap();
            let tol = |w: f64| 1e-9 * (1.0 + w.abs()) + 1000.0 * sens;
            let want = step["loss"].as_f64().unwrap();
            assert!(
                (loss - want).abs() <= tol(want) * 10.0,
                "{label}, step {k}: loss {loss} vs {want}"
            );
            for (p, w) in params.iter().zip(step["params"].as_array().unwrap()) {
                let got = p.tensor().to_vec_f64();
                for (g, w) in got.iter().zip(f64s(w)) {
                    assert!((g - w).abs() <= tol(w), "{label}, step {k}: {got:?} vs {w}");
                }
            }
        }
        if let Opt::Lbfgs(o) = &opt {
            assert_eq!(o.func_evals() as u64, run["func_evals"].as_u64().unwrap(), "{label}");
            assert_eq!(o.n_iter() as u64, run["n_iter"].as_u64().unwrap(), "{label}");
        }
    }
}

/// The least-squares minimum from the 3x3 normal equations, by Cramer's rule.
fn lsq_minimum() -> [f64; 3] {
    // columns: A's two columns and ones (for c)
    let col = |j: usize, i: usize| if j < 2 { A[2 * i + j] } else { 1.0 };
    let mut m = [[0.0; 3]; 3];
    let mut r = [0.0; 3];
    for j in 0..3 {
        for k in 0..3 {
            m[j][k] = (0..4).map(|i| col(j, i) * col(k, i)).sum();
        }
        r[j] = (0..4).map(|i| col(j, i) * B[i]).sum();
    }
    let det = |m: &[[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(&m);
    let mut out = [0.0; 3];
    for (c, o) in out.iter_mut().enumerate() {
        let mut mc = m;
        for j in 0..3 {
            mc[j][c] = r[j];
        }
        *o = det(&mc) / d;
    }
    out
}

fn lsq_params() -> Vec<Param> {
    vec![
        Param::new(&Tensor::from_vec(vec![0.3f64, -0.2], 2).unwrap()).unwrap(),
        Param::new(&Tensor::from_vec(vec![0.1f64], ()).unwrap()).unwrap(),
    ]
}

fn flat(ps: &[Param]) -> Vec<f64> {
    ps.iter().flat_map(|p| p.tensor().to_vec_f64()).collect()
}

#[test]
fn each_optimiser_reaches_known_minima() {
    let want = lsq_minimum();
    let close = |got: &[f64], tol: f64, who: &str| {
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < tol, "{who}: {got:?} vs {want:?}");
        }
    };
    let mut p = lsq_params();
    let mut sgd = Sgd::new(0.01).momentum(0.9);
    for _ in 0..2000 {
        sgd.step(&mut p, lsq).unwrap();
    }
    close(&flat(&p), 1e-8, "sgd");
    let mut p = lsq_params();
    let mut adam = Adam::new(0.05);
    for _ in 0..3000 {
        adam.step(&mut p, lsq).unwrap();
    }
    close(&flat(&p), 1e-5, "adam");
    let mut p = lsq_params();
    let mut lbfgs = Lbfgs::default().line_search(LineSearch::StrongWolfe).tolerance_change(1e-15);
    for _ in 0..3 {
        lbfgs.step(&mut p, lsq).unwrap();
    }
    close(&flat(&p), 1e-8, "lbfgs");
    // Rosenbrock: the classic test of a quasi-Newton method
    let mut p = vec![Param::new(&Tensor::from_vec(vec![-1.5f64, 2.0], 2).unwrap()).unwrap()];
    let mut lbfgs = Lbfgs::default()
        .line_search(LineSearch::StrongWolfe)
        .max_iter(200)
        .tolerance_change(1e-14)
        .tolerance_grad(1e-10);
    lbfgs.step(&mut p, rosenbrock).unwrap();
    for v in flat(&p) {
        assert!((v - 1.0).abs() < 1e-8, "rosenbrock {v}");
    }
}

#[test]
fn f32_parameters_keep_their_dtype() {
    let mut p = vec![Param::new(&Tensor::from_vec(vec![-1.5f32, 2.0], 2).unwrap()).unwrap()];
    let mut lbfgs = Lbfgs::default().line_search(LineSearch::StrongWolfe).max_iter(200);
    lbfgs.step(&mut p, rosenbrock).unwrap();
    assert_eq!(p[0].tensor().dtype(), DType::F32);
    for v in flat(&p) {
        assert!((v - 1.0).abs() < 1e-2, "rosenbrock f32 {v}");
    }
    let mut adam = Adam::new(0.01);
    adam.step(&mut p, rosenbrock).unwrap();
    assert_eq!(p[0].tensor().dtype(), DType::F32);
}

#[test]
fn errors() {
    let mut p = lsq_params();
    // a loss that is not one element
    let e = Sgd::new(0.1).step(&mut p, |x| x[0].mul_scalar(2.0)).unwrap_err();
    assert!(matches!(e, Error::BadShape { op: "optim.step", .. }), "{e:?}");
    // invalid settings
    let e = Sgd::new(0.1).nesterov(true).step(&mut p, lsq).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "optim.SGD", arg: "nesterov", .. }), "{e:?}");
    let e = Adam::new(0.1).betas((1.0, 0.9)).step(&mut p, lsq).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "optim.Adam", arg: "betas", .. }), "{e:?}");
    let e = Sgd::new(-1.0).step(&mut p, lsq).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { arg: "lr", .. }), "{e:?}");
    // the state belongs to the parameters of the first step
    let mut adam = Adam::new(0.1);
    adam.step(&mut p, lsq).unwrap();
    let mut other = vec![Param::new(&Tensor::zeros(3, DType::F64).unwrap()).unwrap()];
    let e = adam.step(&mut other, |x| x[0].sum()).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { arg: "params", .. }), "{e:?}");
    // integer parameters, and a set() that changes the shape
    assert!(matches!(
        Param::new(&Tensor::zeros(2, DType::I64).unwrap()),
        Err(Error::UnsupportedDType { .. })
    ));
    let e = p[0].set(&Tensor::zeros(3, DType::F64).unwrap()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    // the loss function's own error comes back unchanged
    let e = Lbfgs::default()
        .step(&mut p, |_| Err(Error::InvalidArgument { op: "user", arg: "x", reason: "test" }))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "user", .. }), "{e:?}");
}

#[test]
fn a_loss_independent_of_a_parameter_leaves_it_alone() {
    let mut p = lsq_params();
    p.push(Param::new(&Tensor::from_vec(vec![5.0f64], 1).unwrap()).unwrap());
    let mut sgd = Sgd::new(0.1);
    sgd.step(&mut p, |x| lsq(&x[..2])).unwrap();
    assert_eq!(p[2].tensor().to_vec_f64(), vec![5.0]);
}

#[test]
fn update_checks_the_gradients() {
    // one gradient per parameter, each of its parameter's shape (no broadcasting)
    let mut p = lsq_params();
    let g1 = Tensor::ones(1, DType::F64).unwrap();
    let g0 = Tensor::zeros((), DType::F64).unwrap();
    let e = Sgd::new(0.1).update(&mut p, &[g1.clone(), g0.clone()]).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { op: "optim.SGD", .. }), "{e:?}");
    let e = Adam::new(0.1).update(&mut p, &[g1]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { arg: "grads", .. }), "{e:?}");
    let before = p[0].tensor().to_vec_f64();
    assert!(Sgd::new(0.1).update(&mut p, &[Tensor::zeros(2, DType::F64).unwrap(), g0]).is_ok());
    assert_eq!(p[0].tensor().to_vec_f64(), before);
}
