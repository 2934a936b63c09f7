//! Gaussian-process regression on 44 years of weekly Mauna Loa CO2 measurements: the
//! kernel of Rasmussen and Williams (2006, section 5.4.3), eleven hyperparameters fitted
//! by maximising the exact log marginal likelihood (gradients by autograd through a
//! Cholesky factorisation), then a monthly forecast to 2030 with a 95% band and a plot
//! (PNG or SVG). With `--hessian`, the Hessian of the log marginal likelihood at the
//! optimum (forward-over-reverse through the Cholesky factorisation) and each
//! hyperparameter's standard error from the Laplace approximation. `--eval-only`
//! evaluates the likelihood and its gradient at theta without fitting (with `--hessian`,
//! the Hessian there too), printing one JSON line with the seconds each took.
//!
//! ```sh
//! cargo run --release --example gaussian_process -- [--points N] [--theta v1,...,v11]
//!     [--eval-only] [--json] [--plot PATH] [--max-iter N] [--hessian]
//! ```
//!
//! `--help` describes every flag. Results go to stdout (with `--json`, one JSON line and
//! nothing else); the fit's progress goes to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod gp;
mod plot;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

/// The weekly Mauna Loa record (see `../data/README.md`).
const DATA: &str = include_str!("../data/mauna_loa_co2_weekly.csv");

/// Fit a Gaussian process to the Mauna Loa CO2 record and forecast it to 2030
///
/// Fits the kernel of Rasmussen and Williams (2006, section 5.4.3), eleven
/// hyperparameters, to 44 years of weekly Mauna Loa CO2 measurements (2,225
/// points) by maximising the exact log marginal likelihood with L-BFGS (the
/// gradient by autograd through a Cholesky factorisation); prints the fitted
/// kernel and a monthly forecast to 2030 with a 95% band, and writes a plot.
/// The results go to stdout, the fit's progress to stderr (a progress bar on a
/// terminal, a line per iteration otherwise).
#[derive(Debug, Parser)]
#[command(name = "gaussian_process", verbatim_doc_comment)]
struct Args {
    /// Fit N evenly spaced observations instead of all 2,225
    ///
    /// All of them when N is below 2 or 2,225 and above.
    #[arg(long, value_name = "N", verbatim_doc_comment)]
    points: Option<usize>,
    /// Start the fit from these log hyperparameters
    ///
    /// Eleven natural logs, comma-separated, in scikit-learn's kernel.theta
    /// order: s1^2, l1, s2^2, l2, l_periodic, s3^2, alpha, l3, s4^2, l4, noise.
    /// With --eval-only, the point to evaluate at. Default: the logs of
    /// scikit-learn's starting values for this example.
    #[arg(
        long,
        value_name = "V1,...,V11",
        value_parser = parse_theta,
        allow_hyphen_values = true,
        verbatim_doc_comment
    )]
    theta: Option<Theta>,
    /// Do not fit: print the log marginal likelihood and its gradient at theta
    ///
    /// One JSON line: points, theta, lml, grad, grad_seconds; with --hessian,
    /// also hessian (11 x 11, row-major in theta's order) and hessian_seconds.
    /// Writes no plot.
    #[arg(long, verbatim_doc_comment)]
    eval_only: bool,
    /// Print the result as one JSON line instead of the report
    ///
    /// The line holds points, theta, lml, iterations, evaluations and seconds;
    /// with --hessian, also hessian, stderr and hessian_seconds. Nothing else
    /// goes to stdout, and no progress to stderr. The plot is still written.
    #[arg(long, verbatim_doc_comment)]
    json: bool,
    /// Write the plot to PATH, a PNG or, if PATH ends in .svg, an SVG
    ///
    /// The observations, the fitted mean over them, the forecast and its 95%
    /// band, with a title, axis labels and a legend. PATH must end in .png or
    /// .svg (checked before the fit). The PNG's text is drawn with the Open
    /// Sans font the example embeds; the SVG's is left to its viewer.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "co2_forecast.png",
        value_parser = parse_plot,
        verbatim_doc_comment
    )]
    plot: PathBuf,
    /// Stop the fit after N L-BFGS iterations (or 2N likelihood evaluations)
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_iter: usize,
    /// Also report the Hessian and the hyperparameters' standard errors
    ///
    /// The Hessian of the log marginal likelihood at the optimum (by
    /// forward-over-reverse through the Cholesky factorisation) and each
    /// hyperparameter's standard error from the Laplace approximation,
    /// (-H)^-1; with --json, the line gains hessian (11 x 11, row-major in
    /// theta's order), stderr and hessian_seconds.
    #[arg(long, verbatim_doc_comment)]
    hessian: bool,
}

/// The eleven log hyperparameters of `--theta`.
#[derive(Debug, Clone)]
struct Theta(Vec<f64>);

/// Parses `--theta`: exactly eleven comma-separated numbers.
fn parse_theta(s: &str) -> Result<Theta, String> {
    let v: Vec<f64> = s
        .split(',')
        .map(|s| s.trim().parse::<f64>().map_err(|e| format!("{s:?}: {e}")))
        .collect::<Result<_, _>>()?;
    if v.len() != 11 {
        return Err(format!("needs 11 values, got {}", v.len()));
    }
    Ok(Theta(v))
}

/// Parses `--plot`: a path ending in `.png` or `.svg`, checked before the fit rather
/// than after it.
fn parse_plot(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    match plot::Format::of(&path) {
        Some(_) => Ok(path),
        None => Err("the plot's name must end in .png or .svg".into()),
    }
}

/// How the fit reports its progress, on stderr only (stdout is for the results).
#[derive(Debug)]
enum Progress {
    /// Nothing (`--json`).
    Quiet,
    /// A progress bar, when stderr is a terminal.
    Bar(ProgressBar),
    /// One line per iteration, when stderr is a file or a pipe (a log).
    Lines(Instant),
}

impl Progress {
    /// The reporter for a fit of at most `max_iter` iterations.
    fn new(quiet: bool, max_iter: usize) -> Result<Progress, Box<dyn std::error::Error>> {
        if quiet {
            return Ok(Progress::Quiet);
        }
        if !std::io::stderr().is_terminal() {
            return Ok(Progress::Lines(Instant::now()));
        }
        let style = ProgressStyle::with_template(
            "[{bar:25}] iteration {pos}/{len}  -log p(y) = {msg}  {elapsed}",
        )?
        .progress_chars("#>.");
        // ProgressBar::new draws on stderr
        let bar = ProgressBar::new(max_iter as u64).with_style(style);
        bar.set_message("...");
        // the first iterations on all the data take seconds: keep the clock moving
        bar.enable_steady_tick(Duration::from_millis(200));
        Ok(Progress::Bar(bar))
    }

    /// Reports iteration `it`, after which the negative log marginal likelihood is `nlml`.
    fn update(&self, it: usize, nlml: f64) {
        match self {
            Progress::Quiet => {}
            Progress::Bar(bar) => {
                bar.set_position(it as u64);
                bar.set_message(format!("{nlml:.4}"));
            }
            Progress::Lines(t0) => {
                let secs = t0.elapsed().as_secs_f64();
                eprintln!("iteration {it:>3}  -log p(y) = {nlml:.6}  {secs:6.1} s");
            }
        }
    }

    /// Ends the report, leaving the bar's last state on the terminal.
    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish();
        }
    }
}

/// `v` as a JSON array of numbers with 17 significant digits (exact round trip).
fn list(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:.17e}")).collect();
    format!("[{}]", items.join(","))
}

/// The example: parses the command line, evaluates or fits, reports, forecasts, plots.
fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let data = gp::load(DATA, args.points)?;
    let start = match &args.theta {
        Some(Theta(v)) => v.clone(),
        None => gp::START.iter().map(|v| v.ln()).collect(),
    };
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
    let progress = Progress::new(quiet, args.max_iter)?;
    let fit = gp::fit(&data, &start, args.max_iter, &mut |it, nlml| progress.update(it, nlml));
    progress.finish();
    let fit = fit?;
    let secs = t0.elapsed().as_secs_f64();
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
    let forecast =
        plot::Forecast { obs_x: &data.x, obs_y: &ys, x: &months, mean: &mean, lo: &lo, hi: &hi };
    plot::write(&args.plot, &forecast)?;
    if !quiet {
        println!("plot written to {}", args.plot.display());
    }
    Ok(())
}

/// Runs the example; on an error, says so on stderr and exits with status 1.
fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
