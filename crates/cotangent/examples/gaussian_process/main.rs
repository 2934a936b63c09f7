//! Gaussian-process regression on 44 years of weekly Mauna Loa CO2 measurements: the
//! kernel of Rasmussen and Williams (2006, section 5.4.3), eleven hyperparameters fitted
//! by maximising the exact log marginal likelihood (gradients by autograd through a
//! Cholesky factorisation), then a monthly forecast to 2030 with a 95% band and a PNG plot.
//! With `--hessian`, the Hessian of the log marginal likelihood at the optimum
//! (forward-over-reverse through the Cholesky factorisation) and each hyperparameter's
//! standard error from the Laplace approximation. `--eval-only` evaluates the likelihood
//! and its gradient at theta without fitting (with `--hessian`, the Hessian there too),
//! printing one JSON line with the seconds each took.
//!
//! ```sh
//! cargo run --release --example gaussian_process -- [--points N] [--theta v1,...,v11]
//!     [--eval-only] [--json] [--plot PATH] [--max-iter N] [--hessian]
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod gp;
mod plot;

use std::io::{IsTerminal, Write};
use std::time::Instant;

const DATA: &str = include_str!("../data/mauna_loa_co2_weekly.csv");

struct Args {
    points: Option<usize>,
    theta: Option<Vec<f64>>,
    eval_only: bool,
    json: bool,
    plot: String,
    max_iter: usize,
    hessian: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        points: None,
        theta: None,
        eval_only: false,
        json: false,
        plot: "co2_forecast.png".into(),
        max_iter: 100,
        hessian: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--points" => a.points = Some(value()?.parse().map_err(|e| format!("--points: {e}"))?),
            "--max-iter" => {
                a.max_iter = value()?.parse().map_err(|e| format!("--max-iter: {e}"))?;
            }
            "--theta" => {
                let v: Vec<f64> = value()?
                    .split(',')
                    .map(|s| s.trim().parse::<f64>().map_err(|e| format!("--theta: {e}")))
                    .collect::<Result<_, _>>()?;
                if v.len() != 11 {
                    return Err(format!("--theta needs 11 values, got {}", v.len()));
                }
                a.theta = Some(v);
            }
            "--eval-only" => a.eval_only = true,
            "--json" => a.json = true,
            "--hessian" => a.hessian = true,
            "--plot" => a.plot = value()?,
            "-h" | "--help" => {
                println!(
                    "usage: gaussian_process [--points N] [--theta v1,...,v11] [--eval-only] \
                     [--json] [--plot PATH] [--max-iter N] [--hessian]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn list(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:.17e}")).collect();
    format!("[{}]", items.join(","))
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let data = gp::load(DATA, args.points)?;
    let start = args.theta.clone().unwrap_or_else(|| gp::START.iter().map(|v| v.ln()).collect());
    if args.eval_only {
        let t0 = Instant::now();
        let (lml, grad) = gp::lml_and_grad(&start, &data)?;
        let gs = t0.elapsed().as_secs_f64();
        // with --hessian, the Hessian at theta too (no fit: for timing it)
        let extra = if args.hessian {
            let t1 = Instant::now();
            let h = gp::lml_hessian(&start, &data)?;
            format!(
                ",\"hessian\":{},\"hessian_seconds\":{:.3}",
                list(&h),
                t1.elapsed().as_secs_f64()
            )
        } else {
            String::new()
        };
        println!(
            "{{\"points\":{},\"theta\":{},\"lml\":{lml:.17e},\"grad\":{},\"grad_seconds\":{gs:.3}{extra}}}",
            data.x.len(),
            list(&start),
            list(&grad)
        );
        return Ok(());
    }
    let quiet = args.json;
    if !quiet {
        println!(
            "Mauna Loa CO2: {} weekly observations, {:.1} to {:.1}, mean {:.2} ppmv",
            data.x.len(),
            data.x[0],
            data.x[data.x.len() - 1],
            data.mean
        );
        println!("fitting 11 kernel hyperparameters by L-BFGS on the exact marginal likelihood");
    }
    let t0 = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let max_iter = args.max_iter;
    let mut progress = |it: usize, nlml: f64| {
        if quiet {
            return;
        }
        let secs = t0.elapsed().as_secs_f64();
        if tty {
            let filled = (it * 30 / max_iter.max(1)).min(30);
            eprint!(
                "\r[{}{}] iteration {it:>3}/{max_iter}  -log p(y) = {nlml:.4}  {secs:6.1} s",
                "#".repeat(filled),
                ".".repeat(30 - filled)
            );
            let _ = std::io::stderr().flush();
        } else {
            eprintln!("iteration {it:>3}  -log p(y) = {nlml:.6}  {secs:6.1} s");
        }
    };
    let fit = gp::fit(&data, &start, args.max_iter, &mut progress)?;
    let secs = t0.elapsed().as_secs_f64();
    if tty && !quiet {
        eprintln!();
    }
    // the Hessian at the optimum and the Laplace standard errors
    let laplace = if args.hessian {
        let t1 = Instant::now();
        let h = gp::lml_hessian(&fit.theta, &data)?;
        let se = gp::standard_errors(&h, fit.theta.len())?;
        Some((h, se, t1.elapsed().as_secs_f64()))
    } else {
        None
    };
    if args.json {
        let extra = match &laplace {
            Some((h, se, hs)) => {
                format!(
                    ",\"hessian\":{},\"stderr\":{},\"hessian_seconds\":{hs:.3}",
                    list(h),
                    list(se)
                )
            }
            None => String::new(),
        };
        println!(
            "{{\"points\":{},\"theta\":{},\"lml\":{:.17e},\"iterations\":{},\"evaluations\":{},\"seconds\":{secs:.3}{extra}}}",
            data.x.len(),
            list(&fit.theta),
            fit.lml,
            fit.iterations,
            fit.evaluations
        );
    } else {
        println!(
            "done in {secs:.1} s: {} iterations, {} evaluations; log marginal likelihood {:.3}",
            fit.iterations, fit.evaluations, fit.lml
        );
        let p: Vec<f64> = fit.theta.iter().map(|v| v.exp()).collect();
        println!("fitted kernel:");
        println!("  long-term trend:   {:.1} ppm * RBF(length {:.1} years)", p[0].sqrt(), p[1]);
        println!(
            "  seasonal:          {:.2} ppm * RBF(decay {:.1} years) * periodic(1 year, smoothness {:.2})",
            p[2].sqrt(),
            p[3],
            p[4]
        );
        println!(
            "  medium term:       {:.3} ppm * RationalQuadratic(length {:.2} years, alpha {:.3})",
            p[5].sqrt(),
            p[7],
            p[6]
        );
        println!(
            "  noise:             {:.3} ppm * RBF(length {:.3} years = {:.0} days) + white {:.3} ppm",
            p[8].sqrt(),
            p[9],
            p[9] * 365.25,
            p[10].sqrt()
        );
        if let Some((_, se, hs)) = &laplace {
            println!(
                "Laplace approximation at the optimum (Hessian by forward-over-reverse, {hs:.1} s):"
            );
            println!(
                "  {:<11} {:>12} {:>12} {:>24}",
                "theta", "log value", "std. error", "value (95% interval)"
            );
            for (i, name) in gp::NAMES.iter().enumerate() {
                let (t, s) = (fit.theta[i], se[i]);
                println!(
                    "  {name:<11} {t:>12.4} {s:>12.4} {:>10.4} [{:.4}, {:.4}]",
                    t.exp(),
                    (t - 1.96 * s).exp(),
                    (t + 1.96 * s).exp()
                );
            }
        }
    }
    // monthly forecast from the first observation to 2030
    let months: Vec<f64> = (0..=12 * (2030 - 1958))
        .map(|k| 1958.0 + f64::from(k) / 12.0)
        .filter(|&x| x >= data.x[0])
        .collect();
    let (mean, sd) = gp::predict(&fit.theta, &data, &months)?;
    let lo: Vec<f64> = mean.iter().zip(&sd).map(|(m, s)| m - 1.96 * s).collect();
    let hi: Vec<f64> = mean.iter().zip(&sd).map(|(m, s)| m + 1.96 * s).collect();
    if !quiet {
        println!("forecast (ppmv, 95% band):");
        for year in [2005.0, 2010.0, 2015.0, 2020.0, 2025.0, 2030.0] {
            if let Some(i) = months.iter().position(|&x| (x - year).abs() < 1e-6) {
                println!("  {year:.0}-01: {:.1} [{:.1}, {:.1}]", mean[i], lo[i], hi[i]);
            }
        }
    }
    let ys: Vec<f64> = data.y.iter().map(|v| v + data.mean).collect();
    let top = hi.iter().chain(&ys).fold(f64::MIN, |m, &v| m.max(v));
    let bottom = lo.iter().chain(&ys).fold(f64::MAX, |m, &v| m.min(v));
    let mut pl = plot::Plot::new(
        1100,
        650,
        (1955.0, 2032.0, (bottom / 10.0).floor() * 10.0, (top / 10.0).ceil() * 10.0),
    );
    pl.band(&months, &lo, &hi, [190, 210, 240]);
    pl.points(&data.x, &ys, [40, 40, 40]);
    pl.line(&months, &mean, [200, 40, 40], 2);
    pl.axes(
        10.0,
        20.0,
        "year",
        "CO2 (ppmv): data (dots), GP fit and forecast (red), 95% band (blue)",
    );
    std::fs::write(&args.plot, pl.png())?;
    if !quiet {
        println!("plot written to {}", args.plot);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
