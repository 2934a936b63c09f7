//! Vibration design: fit the storey stiffnesses of a shear building so that its natural
//! frequencies match measured ones (finite-element model updating from modal tests).
//!
//! **Model.** The classic shear building, a *fixed-free* chain of `n` floor masses joined
//! by `n` springs (the storeys' columns): spring 1 ties floor 1 to the ground, spring `i`
//! ties floor `i − 1` to floor `i`, and the roof is free. With the difference matrix `D`
//! (row `i`: `+1` at floor `i`, `−1` at floor `i − 1`) the stiffness matrix is
//! `K(k) = Dᵀ diag(k) D`, tridiagonal. The mass matrix `M` lumps each floor's mass on its
//! floor and adds the columns' own mass as a consistent mass matrix (`μ/6 [2 1; 1 2]` per
//! storey), so `M` is tridiagonal too, not diagonal. Free vibration `M ẍ + K x = 0` gives
//! the generalised symmetric eigenproblem
//!
//! `K v = ω² M v`,
//!
//! reduced to a standard one by the Cholesky factor `M = L Lᵀ`: `A = L⁻¹ K L⁻ᵀ` (two
//! triangular solves) has the same eigenvalues, `eigh(A)` gives `ω²` in ascending order
//! (its eigenvectors are `Lᵀ v`), and the natural frequencies are `f = ω / 2π`.
//!
//! **Data.** True stiffnesses are a design taper (stiffest at the base) times lognormal
//! scatter; their frequencies, times `1 + noise` (relative, Gaussian), are the
//! measurements, all from a seeded [`Generator`]. By default two modal tests are
//! "measured": the bare building, and the building with a known mass on the roof.
//!
//! **Fit.** L-BFGS with a strong-Wolfe line search on the log-stiffnesses `θ = log k`
//! (positive stiffnesses, a scale-free parametrisation) minimises the mean squared
//! relative misfit `mean_j (f_j(θ)/f̃_j − 1)²`; its gradient flows back through `eigh`, the
//! triangular solves and the assembly of `K` (checked against central differences at the
//! start). The start is the design taper scaled by the trace identity
//! `Σ ω̃² = tr(M⁻¹K)`, linear in `k`, so it already matches the mean square of the
//! measured `ω²`. The misfit is not convex: a fit that ends with more misfit than the
//! noise explains (a χ² bound) is a local minimum, and is restarted from the start
//! perturbed by the prior scatter.
//!
//! **Identifiability.** With the masses known, `n` springs and only the `n` frequencies
//! of one test (`--added-mass 0`), the inverse eigenvalue problem of a Jacobi matrix has
//! finitely many solutions, not one: different stiffness profiles share a spectrum, and
//! which one the fit finds depends on the start (the fit then also absorbs all the noise,
//! ending at zero misfit). Two interlacing spectra determine a Jacobi matrix (Hochstadt;
//! Gladwell, *Inverse Problems in Vibration*), and a second test with a known mass added
//! at the free end supplies a second spectrum: the default two-test problem has `2n` data
//! for `n` unknowns, a least-squares fit that averages the noise, and in practice one
//! solution near the design (the theorem is for lumped masses; here the columns' mass is
//! consistent, and the claim rests on the checks below).
//!
//! **Uncertainty.** The Jacobian `J = ∂ log f / ∂θ` at the fit, by forward mode through
//! `eigh` (`cotangent::func::jacfwd`), gives the linearised covariance
//! `σ² (JᵀJ)⁻¹` of `θ` for relative noise `σ`: the standard error of each log-stiffness,
//! which is its relative standard error. The noise is amplified by the problem's
//! conditioning, so these are far larger than `σ`.
//!
//! **Checks** (non-zero exit on failure): the gradient agrees with finite differences,
//! the fit brings the misfit down to what the noise explains, and every recovered
//! stiffness lies within five standard errors (plus 10⁻⁶) of the truth. Long chains
//! (`--masses 12` and more) with noise approach the limit of what two spectra pin down,
//! and a seed may then fail; with `--added-mass 0` a fit often lands on another
//! stiffness profile with the same spectrum, and the check says so.
//!
//! ```sh
//! cargo run --release -p cotangent --example vibration -- [--masses N] [--noise REL]
//!     [--scatter REL] [--added-mass T] [--seed S] [--restarts N] [--max-iter N]
//! ```
#![allow(clippy::print_stdout)]

use std::f64::consts::TAU;

use clap::Parser;
use cotangent::autograd::{gradcheck, GradcheckOptions};
use cotangent::func::jacfwd;
use cotangent::linalg::{cholesky, cholesky_inverse, eigh, solve_triangular, Diag, Side, Uplo};
use cotangent::optim::{Lbfgs, LineSearch, Param};
use cotangent::{Generator, Result, Tensor};

/// Fit the storey stiffnesses of a shear building (a fixed-free chain of masses and
/// springs) to measured natural frequencies, through a differentiable generalised
/// eigenproblem (Cholesky, triangular solves, eigh) and L-BFGS.
#[derive(Debug, Parser)]
#[command(long_about = None)]
struct Args {
    /// Number of floors (masses), which is also the number of storeys (springs) and of
    /// frequencies per modal test.
    #[arg(long, default_value_t = 8)]
    masses: usize,
    /// Relative standard deviation of the noise on the measured frequencies.
    #[arg(long, default_value_t = 1e-3)]
    noise: f64,
    /// Relative scatter (lognormal) of the true stiffnesses about the design taper.
    #[arg(long, default_value_t = 0.15)]
    scatter: f64,
    /// Mass (t) added on the roof for a second modal test; 0 for the bare building only
    /// (then the stiffnesses are identifiable only up to discrete ambiguities).
    #[arg(long, default_value_t = 20.0)]
    added_mass: f64,
    /// Seed of the random generator (true stiffnesses and noise).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Restarts from perturbed starts when a fit ends in a local minimum (a misfit the
    /// noise does not explain).
    #[arg(long, default_value_t = 10)]
    restarts: usize,
    /// Maximum number of L-BFGS iterations per fit.
    #[arg(long, default_value_t = 200)]
    max_iter: usize,
}

/// Floor mass (t), the roof's (t), and the columns' mass per storey (t).
const FLOOR_MASS: f64 = 50.0;
const ROOF_MASS: f64 = 35.0;
const COLUMN_MASS: f64 = 8.0;
/// Stiffness of the lowest storey (MN/m) and the fraction of it the top storey loses;
/// with masses in t and stiffnesses in MN/m, `ω²` is in 10³ s⁻².
const BASE_STIFFNESS: f64 = 120.0;
const TAPER: f64 = 0.5;

/// The structure: the constant parts of the model (the difference matrix, the Cholesky
/// factor of the mass matrix of each test configuration).
struct Chain {
    n: usize,
    /// `D`, `(n, n)`: `K(k) = Dᵀ diag(k) D`.
    d: Tensor,
    /// Lower Cholesky factors `L` of the mass matrices `M = L Lᵀ`: the bare structure, and
    /// the structure with the added roof mass when there is one.
    factors: Vec<Tensor>,
}

impl Chain {
    /// A chain of `n` floors: masses on the floors (the top one the roof) and the columns'
    /// consistent mass, assembled as a dense `M` and factorised once; with `added > 0`, a
    /// second configuration with `added` tonnes more on the roof.
    fn new(n: usize, added: f64) -> Result<Chain> {
        let mut d = vec![0.0; n * n];
        let mut m = vec![0.0; n * n];
        for i in 0..n {
            d[i * n + i] = 1.0;
            m[i * n + i] += if i + 1 == n { ROOF_MASS } else { FLOOR_MASS };
            // storey i's columns, between floor i − 1 (the ground for i = 0) and floor i
            m[i * n + i] += COLUMN_MASS / 3.0;
            if i > 0 {
                d[i * n + i - 1] = -1.0;
                m[(i - 1) * n + i - 1] += COLUMN_MASS / 3.0;
                m[(i - 1) * n + i] += COLUMN_MASS / 6.0;
                m[i * n + i - 1] += COLUMN_MASS / 6.0;
            }
        }
        let mut factors = vec![cholesky(&Tensor::from_vec(m.clone(), (n, n))?, Uplo::Lower)?];
        if added > 0.0 {
            m[n * n - 1] += added;
            factors.push(cholesky(&Tensor::from_vec(m, (n, n))?, Uplo::Lower)?);
        }
        Ok(Chain { n, d: Tensor::from_vec(d, (n, n))?, factors })
    }

    /// `K(k) = Dᵀ diag(k) D` for stiffnesses `k` `(n,)`: tridiagonal, `K_ii = k_i + k_{i+1}`
    /// (`k_i` alone at the roof), `K_{i,i+1} = −k_{i+1}`. Differentiable in `k`.
    fn stiffness(&self, k: &Tensor) -> Result<Tensor> {
        self.d.t()?.matmul(&self.d.mul(&k.unsqueeze(1)?)?)
    }

    /// The squared circular frequencies `ω²` (in 10³ s⁻², ascending) of `K v = ω² M v` for
    /// each configuration, concatenated: `A = L⁻¹ K L⁻ᵀ`, then the eigenvalues of
    /// `eigh(A)`. Differentiable in `k`.
    fn omega2(&self, k: &Tensor) -> Result<Tensor> {
        let kk = self.stiffness(k)?;
        let mut spectra = Vec::with_capacity(self.factors.len());
        for l in &self.factors {
            // L⁻¹ K, then (L⁻¹ K) L⁻ᵀ by a right solve against Lᵀ (upper)
            let left = solve_triangular(l, &kk, Uplo::Lower, Side::Left, Diag::NonUnit)?;
            let a = solve_triangular(&l.t()?, &left, Uplo::Upper, Side::Right, Diag::NonUnit)?;
            // symmetric up to rounding; symmetrise so that either triangle describes it
            let a = a.add(&a.t()?)?.mul_scalar(0.5)?;
            spectra.push(eigh(&a, Uplo::Lower)?.eigenvalues);
        }
        Tensor::cat(&spectra.iter().collect::<Vec<_>>(), 0)
    }

    /// The natural frequencies in Hz, `√(10³ ω²)/2π`, as [`Chain::omega2`] orders them.
    fn hertz(w2: &Tensor) -> Result<Tensor> {
        w2.mul_scalar(1e3)?.sqrt()?.div_scalar(TAU)
    }

    /// The natural frequencies in Hz of stiffnesses `k` (host values, no gradient).
    fn frequencies(&self, k: &[f64]) -> Result<Vec<f64>> {
        let _g = cotangent::autograd::no_grad();
        Ok(Chain::hertz(&self.omega2(&Tensor::from_vec(k.to_vec(), self.n)?)?)?.to_vec_f64())
    }
}

/// The mean squared relative frequency misfit in percent, `mean_j (100 (f_j/f̃_j − 1))²`,
/// of log-stiffnesses `theta`, against measured frequencies `target` (Hz, in
/// [`Chain::omega2`]'s order). Differentiable in `theta`. (In percent so that the
/// curvature pairs of L-BFGS pass its absolute test `yᵀs > 1e-10`, PyTorch's, down to a
/// small misfit.)
fn misfit(chain: &Chain, theta: &Tensor, target: &Tensor) -> Result<Tensor> {
    let f = Chain::hertz(&chain.omega2(&theta.exp()?)?)?;
    f.div(target)?.sub_scalar(1.0)?.mul_scalar(100.0)?.square()?.mean()
}

/// The RMS relative frequency misfit of host stiffnesses `k`.
fn rms_misfit(chain: &Chain, k: &[f64], measured: &[f64]) -> Result<f64> {
    let f = chain.frequencies(k)?;
    let s: f64 = f.iter().zip(measured).map(|(a, b)| (a / b - 1.0).powi(2)).sum();
    Ok((s / f.len() as f64).sqrt())
}

/// The linearised standard errors of the log-stiffnesses `theta` for relative frequency
/// noise `sigma`: the square roots of the diagonal of `σ² (JᵀJ)⁻¹`, `J = ∂ log f / ∂θ`
/// by forward mode through `eigh`. Infinite where `JᵀJ` is not positive definite (a
/// direction the frequencies do not see).
fn standard_errors(chain: &Chain, theta: &[f64], sigma: f64) -> Result<Vec<f64>> {
    let n = theta.len();
    let t = Tensor::from_vec(theta.to_vec(), n)?;
    let j = jacfwd(|p| Ok(vec![Chain::hertz(&chain.omega2(&p[0].exp()?)?)?.log()?]), &[t])?;
    let j = &j[0][0]; // (data, n)
    let jtj = j.t()?.matmul(j)?;
    match cotangent::linalg::cholesky_ex(&jtj, Uplo::Lower) {
        Ok(f) if f.info.to_vec::<i64>()?.iter().all(|&i| i == 0) => {
            let cov = cholesky_inverse(&f.l, Uplo::Lower)?;
            Ok(cov.diagonal(0, 0, 1)?.to_vec_f64().iter().map(|v| sigma * v.sqrt()).collect())
        }
        _ => Ok(vec![f64::INFINITY; n]),
    }
}

/// The outcome of one L-BFGS fit.
struct Fit {
    /// The fitted log-stiffnesses.
    theta: Vec<f64>,
    /// The RMS relative frequency misfit there.
    misfit: f64,
    iterations: usize,
    evaluations: usize,
    /// (iteration, RMS relative misfit after it).
    trace: Vec<(usize, f64)>,
}

/// Minimises [`misfit`] from stiffnesses `start` by L-BFGS with a strong-Wolfe line search
/// (at most `max_iter` iterations and twice as many evaluations), to a vanishing gradient.
fn fit(chain: &Chain, target: &Tensor, start: &[f64], max_iter: usize) -> Result<Fit> {
    let theta0 = Tensor::from_vec(start.iter().map(|k| k.ln()).collect::<Vec<_>>(), start.len())?;
    let mut params = vec![Param::new(&theta0)?];
    let mut opt = Lbfgs::default()
        .line_search(LineSearch::StrongWolfe)
        .max_iter(max_iter)
        .max_eval(Some(max_iter * 2))
        .tolerance_grad(1e-14)
        .tolerance_change(1e-20);
    let mut trace = Vec::new();
    opt.step_with_progress(
        &mut params,
        |p| misfit(chain, &p[0], target),
        |it, loss| trace.push((it, loss.sqrt() / 100.0)),
    )?;
    let theta = params[0].tensor().to_vec_f64();
    let k: Vec<f64> = theta.iter().map(|t| t.exp()).collect();
    Ok(Fit {
        misfit: rms_misfit(chain, &k, &target.to_vec_f64())?,
        theta,
        iterations: opt.n_iter(),
        evaluations: opt.func_evals(),
        trace,
    })
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let n = args.masses;
    if n < 2 {
        return Err("--masses must be at least 2".into());
    }
    if !(0.0..0.1).contains(&args.noise) || !(0.0..1.0).contains(&args.scatter) {
        return Err("--noise must be in [0, 0.1) and --scatter in [0, 1)".into());
    }
    if args.added_mass.is_nan() || args.added_mass < 0.0 {
        return Err("--added-mass must be >= 0".into());
    }
    let chain = Chain::new(n, args.added_mass)?;
    let mut gen = Generator::new(args.seed);

    // the truth: the design taper from the base to the roof, with lognormal scatter
    let design: Vec<f64> =
        (0..n).map(|i| BASE_STIFFNESS * (1.0 - TAPER * i as f64 / (n - 1) as f64)).collect();
    let k_true: Vec<f64> = design.iter().map(|k| k * (args.scatter * gen.normal()).exp()).collect();
    let measured: Vec<f64> =
        chain.frequencies(&k_true)?.iter().map(|f| f * (1.0 + args.noise * gen.normal())).collect();
    let tests = measured.len() / n;

    // the start: the design taper times c, with c from tr(M⁻¹K(c k)) = c tr(M⁻¹K(k)) =
    // Σ ω̃² (the trace is the sum of the eigenvalues, and linear in k)
    let sum_w2: f64 = measured.iter().map(|f| (f * TAU).powi(2) / 1e3).sum();
    let tr_design: f64 = {
        let _g = cotangent::autograd::no_grad();
        chain.omega2(&Tensor::from_vec(design.clone(), n)?)?.sum()?.item::<f64>()?
    };
    let c = sum_w2 / tr_design;
    let k0: Vec<f64> = design.iter().map(|k| k * c).collect();
    let f0 = chain.frequencies(&k0)?;
    let misfit0 = rms_misfit(&chain, &k0, &measured)?;

    println!("Shear building: {n} floors on {n} storeys, fixed at the ground, free at the roof");
    println!(
        "  floor mass {FLOOR_MASS} t (roof {ROOF_MASS} t), columns {COLUMN_MASS} t per storey \
         (consistent mass matrix)"
    );
    println!(
        "  true stiffnesses: design taper {BASE_STIFFNESS}..{} MN/m with {:.0}% lognormal \
         scatter (seed {})",
        BASE_STIFFNESS * (1.0 - TAPER),
        100.0 * args.scatter,
        args.seed
    );
    if tests == 2 {
        println!(
            "  measured: {n} frequencies of the bare building and {n} with {} t added on the \
             roof, {:.2}% relative noise",
            args.added_mass,
            100.0 * args.noise
        );
    } else {
        println!(
            "  measured: the {n} frequencies of the bare building, {:.2}% relative noise \
             (identifiable only up to discrete ambiguities)",
            100.0 * args.noise
        );
    }
    println!("  start: the design taper scaled by {c:.4} (trace identity)");

    // the gradient through eigh, the triangular solves and K against central differences
    let target = Tensor::from_vec(measured.clone(), measured.len())?;
    let theta0 = Tensor::from_vec(k0.iter().map(|k| k.ln()).collect::<Vec<_>>(), n)?;
    let check = gradcheck(
        |t| Ok(vec![misfit(&chain, &t[0], &target)?]),
        &[theta0.with_requires_grad(true)?],
        &GradcheckOptions::default(),
    )?;
    if !check.passed {
        return Err(format!("the gradient disagrees with finite differences: {check}").into());
    }
    let worst = check.worst.map_or(0.0, |w| {
        (w.analytical - w.numerical).abs() / w.numerical.abs().max(f64::MIN_POSITIVE)
    });
    println!(
        "  gradient of the misfit at the start: agrees with central differences ({} \
         entries, largest relative difference {worst:.1e})",
        check.compared
    );
    println!();

    // the fit: L-BFGS on θ = log k, gradients through eigh; a fit whose misfit the noise
    // cannot explain is a local minimum, and is restarted from the start perturbed by the
    // prior scatter (a generator of its own, so that the data do not depend on restarts).
    // At the least-squares minimum N·rms²/σ² follows χ² with ν = N − n degrees of freedom
    // (N data, linearised): the noise explains rms up to σ √((ν + 4√(2ν))/N), which
    // a correct fit exceeds with probability below 1% (0 misfit when N = n)
    let dof = (measured.len() - n) as f64;
    let floor =
        args.noise * ((dof + 4.0 * (2.0 * dof).sqrt()) / measured.len() as f64).sqrt() + 1e-8;
    let mut restart_gen = Generator::new(args.seed ^ 0x5eed);
    let mut start = k0.clone();
    let mut best: Option<Fit> = None;
    for attempt in 0..=args.restarts {
        if attempt > 0 {
            start = k0.iter().map(|k| k * (args.scatter * restart_gen.normal()).exp()).collect();
        }
        let fit = fit(&chain, &target, &start, args.max_iter)?;
        if attempt == 0 {
            let last = fit.trace.last().map_or(0, |t| t.0);
            for &(it, loss) in fit.trace.iter().filter(|t| t.0.is_power_of_two() || t.0 == last) {
                println!("  L-BFGS iteration {it:4}: RMS relative misfit {loss:.3e}");
            }
        }
        println!(
            "  fit {}: {} iterations, {} evaluations of the misfit and its gradient, RMS \
             misfit {:.3e}",
            attempt + 1,
            fit.iterations,
            fit.evaluations,
            fit.misfit
        );
        let done = fit.misfit <= floor;
        if best.as_ref().is_none_or(|b| fit.misfit < b.misfit) {
            best = Some(fit);
        }
        if done {
            break;
        }
        println!(
            "    a local minimum (the noise explains a misfit up to {floor:.2e}): restarting \
             from a perturbed start"
        );
    }
    let Some(best) = best else { return Err("no fit".into()) };
    println!();

    let theta = best.theta;
    let k_fit: Vec<f64> = theta.iter().map(|t| t.exp()).collect();
    let f_fit = chain.frequencies(&k_fit)?;
    let misfit1 = rms_misfit(&chain, &k_fit, &measured)?;
    let misfit_true = rms_misfit(&chain, &k_true, &measured)?;
    let se = standard_errors(&chain, &theta, args.noise)?;

    println!("test        mode   measured (Hz)   start (Hz)   fitted (Hz)");
    for j in 0..measured.len() {
        let test = if j < n { "bare" } else { "roof mass" };
        println!(
            "{test:<9}   {:4}   {:13.4}   {:10.4}   {:11.4}",
            j % n + 1,
            measured[j],
            f0[j],
            f_fit[j]
        );
    }
    println!();
    println!("storey   true k (MN/m)   start k   fitted k   rel. error   std. error   error/se");
    let mut worst = 0.0f64;
    let mut worst_z = 0.0f64;
    let mut within = true;
    for i in 0..n {
        let err = (k_fit[i] - k_true[i]).abs() / k_true[i];
        let dlog = (theta[i] - k_true[i].ln()).abs();
        // (without noise the standard errors vanish: no ratio to show)
        let z = if se[i] > 0.0 { dlog / se[i] } else { f64::NAN };
        worst = worst.max(err);
        worst_z = worst_z.max(z);
        within &= dlog <= 5.0 * se[i] + 1e-6;
        println!(
            "{:6}   {:13.2}   {:7.2}   {:8.2}   {:9.2}%   {:9.2}%   {:8.2}",
            i + 1,
            k_true[i],
            k0[i],
            k_fit[i],
            100.0 * err,
            100.0 * se[i],
            z
        );
    }
    println!();
    println!("RMS relative frequency misfit: start {misfit0:.3e}, fitted {misfit1:.3e}");
    println!(
        "  (the noise explains up to {floor:.3e}; the true stiffnesses misfit the noisy data \
         by {misfit_true:.3e})"
    );
    println!(
        "largest relative stiffness error {:.2}%, at most {worst_z:.2} standard errors",
        100.0 * worst
    );

    // the checks: the misfit fell to what the noise explains, and the stiffnesses agree
    // with the truth to within five linearised standard errors
    if misfit1.is_nan() || misfit1 >= misfit0 || misfit1 > floor {
        return Err(format!(
            "the fit failed: the misfit went from {misfit0:.3e} to {misfit1:.3e}, more than \
             the noise explains ({floor:.3e}): a local minimum of the misfit"
        )
        .into());
    }
    if !within {
        return Err(format!(
            "the frequencies are matched but the stiffnesses are off by up to {:.2}% (up to \
             {worst_z:.1} standard errors): another stiffness profile with (nearly) the same \
             spectra",
            100.0 * worst
        )
        .into());
    }
    let factor = misfit0 / misfit1.max(f64::MIN_POSITIVE);
    let factor = if factor < 1e4 { format!("{factor:.0}") } else { format!("{factor:.1e}") };
    println!(
        "OK: misfit reduced {factor}-fold, to what the noise explains; every stiffness within \
         5 standard errors of the truth"
    );
    Ok(())
}
