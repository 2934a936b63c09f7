//! The Gaussian-process example's fitting code (examples/gaussian_process/gp.rs) on a
//! subsample of the Mauna Loa data: its log marginal likelihood and gradient against
//! scikit-learn's (tests/fixtures/gp_sklearn.json, made by scripts/gp_sklearn.py), its
//! gradient against finite differences, and a fit that improves the likelihood.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    dead_code,
    missing_docs
)]

#[path = "../examples/gaussian_process/gp.rs"]
mod gp;

use serde_json::Value;

const DATA: &str = include_str!("../examples/data/mauna_loa_co2_weekly.csv");

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn start() -> Vec<f64> {
    gp::START.iter().map(|v| v.ln()).collect()
}

#[test]
fn likelihood_and_gradient_match_scikit_learn() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gp_sklearn.json"),
    )
    .unwrap();
    for line in text.lines() {
        let want: Value = serde_json::from_str(line).unwrap();
        let points = want["points"].as_u64().unwrap() as usize;
        let data = gp::load(DATA, Some(points)).unwrap();
        assert_eq!(data.x.len(), points);
        let theta = f64s(&want["theta"]);
        let (lml, grad) = gp::lml_and_grad(&theta, &data).unwrap();
        let wl = want["lml"].as_f64().unwrap();
        assert!((lml - wl).abs() <= 1e-6 * wl.abs(), "lml {lml} vs scikit-learn {wl}");
        let wg = f64s(&want["grad"]);
        let scale = wg.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (i, (g, w)) in grad.iter().zip(&wg).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * scale.max(1.0),
                "d lml / d theta[{i}]: {g} vs scikit-learn {w}"
            );
        }
    }
}

#[test]
fn gradient_matches_finite_differences() {
    let data = gp::load(DATA, Some(120)).unwrap();
    let theta = start();
    let (_, grad) = gp::lml_and_grad(&theta, &data).unwrap();
    // K is ill conditioned (a 66 ppm trend over 44 years), so the likelihood carries
    // roundoff of about 1e-9 of its value: a wide step and a fourth-order stencil
    // (error O(h⁴)) keep the finite differences accurate to about 1e-6
    let h = 1e-3;
    let at = |i: usize, dx: f64| {
        let mut t = theta.clone();
        t[i] += dx;
        gp::lml_and_grad(&t, &data).unwrap().0
    };
    let scale = grad.iter().fold(1.0f64, |m, g| m.max(g.abs()));
    for i in 0..11 {
        let fd = (8.0 * (at(i, h) - at(i, -h)) - (at(i, 2.0 * h) - at(i, -2.0 * h))) / (12.0 * h);
        assert!(
            (fd - grad[i]).abs() <= 1e-5 * scale,
            "theta[{i}]: autograd {} vs fd {fd}",
            grad[i]
        );
    }
}

#[test]
fn fitting_improves_the_likelihood() {
    let data = gp::load(DATA, Some(150)).unwrap();
    let theta = start();
    let (before, _) = gp::lml_and_grad(&theta, &data).unwrap();
    let mut iters = Vec::new();
    let fit = gp::fit(&data, &theta, 15, &mut |it, _| iters.push(it)).unwrap();
    assert!(fit.lml > before + 1.0, "{} -> {}", before, fit.lml);
    assert!(fit.iterations > 0 && !iters.is_empty());
    let (mean, sd) = gp::predict(&fit.theta, &data, &[1990.0, 2030.0]).unwrap();
    // the forecast lies near the data's range in 1990 and grows with the trend
    assert!((330.0..370.0).contains(&mean[0]) && mean[1] > mean[0], "{mean:?}");
    assert!(sd[1] > sd[0] && sd[0] > 0.0, "{sd:?}");
}

#[test]
fn hessian_matches_finite_differences_of_the_gradient() {
    // forward-over-reverse (func::hessian through cholesky's forward and backward rules)
    // against central differences of the autograd gradient, and symmetric
    let data = gp::load(DATA, Some(120)).unwrap();
    let theta = start();
    let n = theta.len();
    let h = gp::lml_hessian(&theta, &data).unwrap();
    assert_eq!(h.len(), n * n);
    // (the likelihood's own rounding, through an ill-conditioned K, makes the gradient's
    // differences noisy below a step of about 1e-4: 1e-3 leaves a truncation error of
    // about 1e-7 relative)
    let step = 1e-3;
    let mut scale = 0.0f64;
    for v in &h {
        scale = scale.max(v.abs());
    }
    for i in 0..n {
        let mut plus = theta.clone();
        let mut minus = theta.clone();
        plus[i] += step;
        minus[i] -= step;
        let (_, gp_) = gp::lml_and_grad(&plus, &data).unwrap();
        let (_, gm) = gp::lml_and_grad(&minus, &data).unwrap();
        for j in 0..n {
            let fd = (gp_[j] - gm[j]) / (2.0 * step);
            let got = h[i * n + j];
            assert!(
                (got - fd).abs() <= 1e-6 * scale + 1e-5 * fd.abs(),
                "H[{i}][{j}] = {got}, finite differences {fd}"
            );
            assert!((h[i * n + j] - h[j * n + i]).abs() <= 1e-9 * scale, "symmetry at {i}, {j}");
        }
    }
    // standard errors: finite where −H is positive definite, NaN where it is not
    let se = gp::standard_errors(&[-2.0, 0.0, 0.0, -8.0], 2).unwrap();
    assert!((se[0] - 0.5f64.sqrt()).abs() < 1e-15 && (se[1] - 0.125f64.sqrt()).abs() < 1e-15);
    assert!(gp::standard_errors(&[1.0, 0.0, 0.0, -1.0], 2).unwrap().iter().all(|v| v.is_nan()));
}
