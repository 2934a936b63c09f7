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
