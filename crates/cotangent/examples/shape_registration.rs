//! Shape registration: align two noisy 3-D point clouds with outliers by the
//! Kabsch/Procrustes rotation through the SVD, and learn a per-point weighting by
//! gradient descent through that SVD so that the outliers stop pulling the fit.
//!
//! **Data.** A cloud `X` of `n` points (an anisotropic Gaussian, so that the rotation is
//! well determined) and its copy `Y = R X + t + noise` under a random rotation `R` and
//! translation `t`, in which a fraction of the points is replaced by gross outliers
//! (uniform in a box around the cloud), all from a seeded [`Generator`].
//!
//! **Weighted Kabsch.** For weights `w` (summing to one) the rotation and translation
//! minimising `Σ wᵢ ‖R xᵢ + t − yᵢ‖²` are, with the weighted centroids `x̄ = Σ wᵢ xᵢ` and
//! `ȳ = Σ wᵢ yᵢ` and the cross-covariance `H = Σ wᵢ (xᵢ − x̄)(yᵢ − ȳ)ᵀ = X̃ᵀ W Ỹ`,
//!
//! `H = U S Vᵀ` (SVD), `R = V diag(1, 1, det(V Uᵀ)) Uᵀ`, `t = ȳ − R x̄`,
//!
//! where the last sign turns a reflection (`det(V Uᵀ) = −1`, e.g. for noisy nearly planar
//! data) into the best proper rotation. With equal weights this is the classic Kabsch
//! fit, which the outliers drag away.
//!
//! **Learned weighting.** The weights are `w = softmax(z)` of per-point logits `z`, fitted
//! by Adam to minimise
//!
//! `F(z) = Σᵢ wᵢ ρ(rᵢ) + Σᵢ wᵢ log(n wᵢ)`, `ρ(r) = log(1 + r²/c²)` (Cauchy),
//!
//! where `rᵢ = ‖R xᵢ + t − yᵢ‖` are all points' residuals under the fit made *with the
//! current weights*, so the gradient flows back through the residuals, the SVD, `H` and
//! the centroids to every logit. The first term is the expected robust loss; the second
//! is the Kullback–Leibler divergence of `w` from uniform weights, which stops the
//! weights from collapsing onto a few points (without it the optimum is degenerate: all
//! the weight on the best-fitting handful). Writing `pᵢ = (1 + rᵢ²/c²)⁻¹ / Z` with
//! `Z = Σᵢ (1 + rᵢ²/c²)⁻¹`,
//!
//! `F = KL(w ‖ p) − log Z + log n`:
//!
//! the minimum balances weights equal to the Cauchy (IRLS) weights of the fit's own
//! residuals against a pose that maximises the soft inlier count `Z`. Its optimum is not
//! degenerate: each weight is pinned by its residual, inliers share the weight evenly,
//! and outliers get weights of order `c²/r²`.
//!
//! **Report and checks.** The rotation error (the angle of `R_est R_trueᵀ`, in degrees)
//! and translation error of the unweighted fit and of the learned weighting, the weight
//! the outliers hold, and how many of the lowest-weight points are outliers. The program
//! exits with an error unless the learned weighting beats the unweighted fit, its
//! rotation error is below `--tolerance` degrees, and the outliers hold less than 5% of
//! the weight.
//!
//! ```sh
//! cargo run --release -p cotangent --example shape_registration -- [--points N]
//!     [--outliers FRACTION] [--noise SIGMA] [--scale C] [--steps N] [--lr LR] [--seed S]
//! ```
#![allow(clippy::print_stdout)]

use std::f64::consts::TAU;

use clap::Parser;
use cotangent::autograd::{gradcheck, GradcheckOptions};
use cotangent::linalg::{det, svd};
use cotangent::optim::{Adam, Optimizer, Param};
use cotangent::{DType, Generator, Result, Tensor};

/// Register two noisy 3-D point clouds with outliers: weighted Kabsch (SVD) with
/// per-point weights learned by Adam through the SVD.
#[derive(Debug, Parser)]
#[command(long_about = None)]
struct Args {
    /// Number of points in each cloud.
    #[arg(long, default_value_t = 200)]
    points: usize,
    /// Fraction of the points of the second cloud replaced by outliers.
    #[arg(long, default_value_t = 0.3)]
    outliers: f64,
    /// Standard deviation of the Gaussian noise on each coordinate of the second cloud.
    #[arg(long, default_value_t = 0.02)]
    noise: f64,
    /// Scale c of the Cauchy loss (default: 3 √3 σ, three times the inliers' typical
    /// residual).
    #[arg(long)]
    scale: Option<f64>,
    /// Adam steps.
    #[arg(long, default_value_t = 300)]
    steps: usize,
    /// Adam learning rate (on the logits).
    #[arg(long, default_value_t = 0.1)]
    lr: f64,
    /// Seed of the random generator (cloud, pose, noise, outliers).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Largest rotation error (degrees) of the learned weighting that the check accepts.
    #[arg(long, default_value_t = 1.0)]
    tolerance: f64,
}

/// Standard deviations of the cloud along its principal axes (distinct, so that the
/// singular values of `H` are too).
const AXES: [f64; 3] = [1.0, 0.6, 0.35];
/// Half-width of the box, about the inliers' centroid, in which outliers fall.
const OUTLIER_BOX: f64 = 2.0;

/// The two clouds and the truth.
struct Problem {
    /// `(n, 3)`, one point a row.
    x: Tensor,
    /// `(n, 3)`: `R x + t + noise`, or an outlier.
    y: Tensor,
    /// Which rows of `y` are outliers.
    outlier: Vec<bool>,
    /// The true rotation, row-major.
    r_true: [f64; 9],
    /// The true translation.
    t_true: [f64; 3],
}

/// A uniformly distributed random rotation (Shoemake's unit quaternion), row-major.
fn random_rotation(gen: &mut Generator) -> [f64; 9] {
    let (u1, u2, u3) = (gen.uniform(), gen.uniform(), gen.uniform());
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    let (x, y, z, w) =
        (a * (TAU * u2).sin(), a * (TAU * u2).cos(), b * (TAU * u3).sin(), b * (TAU * u3).cos());
    [
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y - z * w),
        2.0 * (x * z + y * w),
        2.0 * (x * y + z * w),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z - x * w),
        2.0 * (x * z - y * w),
        2.0 * (y * z + x * w),
        1.0 - 2.0 * (x * x + y * y),
    ]
}

impl Problem {
    /// `n` points, a random pose, noise `sigma` per coordinate, and `round(fraction n)`
    /// outliers at random rows.
    fn new(n: usize, fraction: f64, sigma: f64, gen: &mut Generator) -> Result<Problem> {
        let r = random_rotation(gen);
        let t = [gen.normal(), gen.normal(), gen.normal()];
        let mut x = Vec::with_capacity(3 * n);
        let mut y = Vec::with_capacity(3 * n);
        for _ in 0..n {
            let p: Vec<f64> = AXES.iter().map(|s| s * gen.normal()).collect();
            for i in 0..3 {
                let rp = r[3 * i] * p[0] + r[3 * i + 1] * p[1] + r[3 * i + 2] * p[2];
                y.push(rp + t[i] + sigma * gen.normal());
            }
            x.extend(p);
        }
        // the outliers: a random subset (partial Fisher–Yates), moved anywhere in the box
        let m = ((fraction * n as f64).round() as usize).min(n);
        let mut order: Vec<usize> = (0..n).collect();
        let mut outlier = vec![false; n];
        for k in 0..m {
            let j = k + (gen.next_u64() % (n - k) as u64) as usize;
            order.swap(k, j);
            let i = order[k];
            outlier[i] = true;
            for d in 0..3 {
                y[3 * i + d] = t[d] + OUTLIER_BOX * (2.0 * gen.uniform() - 1.0);
            }
        }
        Ok(Problem {
            x: Tensor::from_vec(x, (n, 3))?,
            y: Tensor::from_vec(y, (n, 3))?,
            outlier,
            r_true: r,
            t_true: t,
        })
    }
}

/// A weighted Kabsch fit: the rotation `R` `(3, 3)` and the weighted centroids `x̄`, `ȳ`
/// `(1, 3)`, so that `t = ȳ − R x̄`.
struct Pose {
    r: Tensor,
    x_bar: Tensor,
    y_bar: Tensor,
}

/// The rotation and centroids minimising `Σ wᵢ ‖R xᵢ + t − yᵢ‖²` for weights `w` `(n,)`
/// summing to one: `H = X̃ᵀ W Ỹ = U S Vᵀ`, `R = V diag(1, 1, det(V Uᵀ)) Uᵀ`.
/// Differentiable in `w` (through the SVD) wherever the singular values of `H` are
/// distinct. The reflection sign is piecewise constant, so it is taken without gradient.
fn kabsch(x: &Tensor, y: &Tensor, w: &Tensor) -> Result<Pose> {
    let wc = w.unsqueeze(1)?; // (n, 1)
    let x_bar = wc.t()?.matmul(x)?; // (1, 3)
    let y_bar = wc.t()?.matmul(y)?;
    let (xc, yc) = (x.sub(&x_bar)?, y.sub(&y_bar)?);
    let h = xc.mul(&wc)?.t()?.matmul(&yc)?; // (3, 3)
    let f = svd(&h, false)?;
    let (u_t, v) = (f.u.t()?, f.vh.t()?);
    let d = det(&v.matmul(&u_t)?.detach())?.item::<f64>()?.signum();
    let fix = Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, d], (3, 3))?;
    Ok(Pose { r: v.matmul(&fix)?.matmul(&u_t)?, x_bar, y_bar })
}

/// The squared residuals `‖R xᵢ + t − yᵢ‖² = ‖R (xᵢ − x̄) − (yᵢ − ȳ)‖²` `(n,)` of all
/// points under `pose`.
fn squared_residuals(x: &Tensor, y: &Tensor, pose: &Pose) -> Result<Tensor> {
    let fitted = x.sub(&pose.x_bar)?.matmul(&pose.r.t()?)?;
    fitted.sub(&y.sub(&pose.y_bar)?)?.square()?.sum_dims(&[1], false)
}

/// `F(z) = Σ wᵢ log(1 + rᵢ²/c²) + Σ wᵢ log(n wᵢ)` with `w = softmax(z)` and the residuals
/// of the `w`-weighted Kabsch fit: the expected Cauchy loss plus the divergence of the
/// weights from uniform. Differentiable in the logits `z` through the SVD.
fn objective(x: &Tensor, y: &Tensor, z: &Tensor, c: f64) -> Result<Tensor> {
    let n = z.dims()[0] as f64;
    let log_w = z.sub(&z.logsumexp(&[0], true)?)?;
    let w = log_w.exp()?;
    let r2 = squared_residuals(x, y, &kabsch(x, y, &w)?)?;
    let robust = r2.div_scalar(c * c)?.log1p()?;
    w.mul(&robust.add(&log_w)?.add_scalar(n.ln())?)?.sum()
}

/// The softmax of host logits.
fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// The angle (degrees) of the rotation `R_est R_trueᵀ`, from its trace.
fn rotation_error_deg(r: &[f64], r_true: &[f64; 9]) -> f64 {
    // tr(A Bᵀ) = Σᵢⱼ Aᵢⱼ Bᵢⱼ
    let tr: f64 = r.iter().zip(r_true).map(|(a, b)| a * b).sum();
    ((tr - 1.0) / 2.0).clamp(-1.0, 1.0).acos().to_degrees()
}

/// The errors of the fit with weights `w` (host values): rotation (degrees), translation
/// (Euclidean), and the RMS residual of the inliers.
fn errors(p: &Problem, w: &[f64]) -> Result<(f64, f64, f64)> {
    let _g = cotangent::autograd::no_grad();
    let pose = kabsch(&p.x, &p.y, &Tensor::from_vec(w.to_vec(), w.len())?)?;
    let r = pose.r.to_vec_f64();
    // t = ȳ − R x̄
    let t = pose.y_bar.sub(&pose.x_bar.matmul(&pose.r.t()?)?)?.to_vec_f64();
    let dt = t.iter().zip(&p.t_true).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
    let r2 = squared_residuals(&p.x, &p.y, &pose)?.to_vec_f64();
    let (sum, count) = r2
        .iter()
        .zip(&p.outlier)
        .filter(|(_, &o)| !o)
        .fold((0.0, 0usize), |(s, c), (v, _)| (s + v, c + 1));
    Ok((rotation_error_deg(&r, &p.r_true), dt, (sum / count.max(1) as f64).sqrt()))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let n = args.points;
    if n < 4 {
        return Err("--points must be at least 4".into());
    }
    if !(0.0..0.9).contains(&args.outliers) {
        return Err("--outliers must be in [0, 0.9)".into());
    }
    if args.noise.is_nan() || args.noise <= 0.0 {
        return Err("--noise must be > 0".into());
    }
    let c = args.scale.unwrap_or(3.0 * 3f64.sqrt() * args.noise);
    if c.is_nan() || c <= 0.0 {
        return Err("--scale must be > 0".into());
    }
    let mut gen = Generator::new(args.seed);
    let p = Problem::new(n, args.outliers, args.noise, &mut gen)?;
    let m = p.outlier.iter().filter(|&&o| o).count();

    let true_angle = rotation_error_deg(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], &p.r_true);
    println!(
        "Shape registration: {n} points, {m} of them outliers ({:.0}%)",
        100.0 * m as f64 / n as f64
    );
    println!(
        "  cloud: Gaussian with axes {:?}; true rotation by {true_angle:.1} degrees, noise \
         {} per coordinate, outliers uniform in a box of half-width {OUTLIER_BOX}",
        AXES, args.noise
    );
    println!(
        "  Cauchy scale c = {c:.4}; Adam, learning rate {}, {} steps (seed {})",
        args.lr, args.steps, args.seed
    );

    // the gradient through the SVD, at random logits, against central differences
    let z = Tensor::from_vec(gen.normal_vec(n), n)?.with_requires_grad(true)?;
    let check = gradcheck(
        |t| Ok(vec![objective(&p.x, &p.y, &t[0], c)?]),
        &[z],
        &GradcheckOptions::default(),
    )?;
    if !check.passed {
        return Err(format!("the gradient disagrees with finite differences: {check}").into());
    }
    let worst = check.worst.map_or(0.0, |w| {
        (w.analytical - w.numerical).abs() / w.numerical.abs().max(f64::MIN_POSITIVE)
    });
    println!(
        "  gradient of the objective at random logits: agrees with central differences \
         ({} entries, largest relative difference {worst:.1e})",
        check.compared
    );
    println!();

    let uniform = vec![1.0 / n as f64; n];
    let (rot0, tr0, res0) = errors(&p, &uniform)?;
    // the oracle: equal weights on the inliers only, which the learned weighting can
    // approach but, from the same noisy data, not beat by much
    let inliers = (n - m).max(1) as f64;
    let oracle: Vec<f64> = p.outlier.iter().map(|&o| if o { 0.0 } else { 1.0 / inliers }).collect();
    let (rot_o, tr_o, res_o) = errors(&p, &oracle)?;

    // the learned weighting: Adam on the logits, from uniform weights
    let mut params = vec![Param::new(&Tensor::zeros(n, DType::F64)?)?];
    let mut adam = Adam::new(args.lr);
    let report_every = (args.steps / 6).max(1);
    println!("  step   objective   rotation error (deg)   outliers' weight");
    for step in 0..=args.steps {
        // the fit and weights at the logits this step starts from (where its loss is)
        let report = (step % report_every == 0 || step == args.steps).then(|| {
            let w = softmax(&params[0].tensor().to_vec_f64());
            let out: f64 = w.iter().zip(&p.outlier).filter(|(_, &o)| o).map(|(v, _)| v).sum();
            errors(&p, &w).map(|(rot, _, _)| (rot, out))
        });
        let loss = if step < args.steps {
            adam.step(&mut params, |q| objective(&p.x, &p.y, &q[0], c))?
        } else {
            let _g = cotangent::autograd::no_grad();
            objective(&p.x, &p.y, params[0].tensor(), c)?.item::<f64>()?
        };
        if let Some(r) = report {
            let (rot, out) = r?;
            println!("  {step:4}   {loss:9.5}   {rot:20.4}   {:15.2}%", 100.0 * out);
        }
    }
    println!();
    let w = softmax(&params[0].tensor().to_vec_f64());
    let (rot1, tr1, res1) = errors(&p, &w)?;
    let out_weight: f64 = w.iter().zip(&p.outlier).filter(|(_, &o)| o).map(|(v, _)| v).sum();
    // how many of the m lowest-weight points are outliers
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| w[a].total_cmp(&w[b]));
    let caught = order.iter().take(m).filter(|&&i| p.outlier[i]).count();
    // the weights (times n, so that uniform weights are 1) of the inliers or the outliers
    let scaled = |outl: bool| -> Vec<f64> {
        w.iter().zip(&p.outlier).filter(|(_, &o)| o == outl).map(|(v, _)| v * n as f64).collect()
    };
    let (w_in, w_out) = (scaled(false), scaled(true));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let lo = w_in.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = w_in.iter().copied().fold(0.0, f64::max);

    println!(
        "fit                   rotation error (deg)   translation error   inliers' RMS residual"
    );
    println!("unweighted Kabsch     {rot0:20.4}   {tr0:17.5}   {res0:21.5}");
    println!("learned weighting     {rot1:20.4}   {tr1:17.5}   {res1:21.5}");
    println!("inliers only (oracle) {rot_o:20.4}   {tr_o:17.5}   {res_o:21.5}");
    println!();
    println!(
        "weights (times n, uniform = 1): inliers {:.3} on average ({lo:.3} to {hi:.3})",
        mean(&w_in)
    );
    if m > 0 {
        println!(
            "  outliers {:.2e} on average, holding {:.3}% of the weight ({:.0}% before)",
            mean(&w_out),
            100.0 * out_weight,
            100.0 * m as f64 / n as f64
        );
        println!("  the {m} lowest-weight points include {caught} of the {m} outliers");
    }

    // the checks: with outliers, the learned weighting beats the unweighted fit and has
    // down-weighted them; in any case its rotation error is within the tolerance
    if m > 0 && (rot1.is_nan() || rot1 >= rot0) {
        return Err(format!(
            "the learned weighting ({rot1:.4} degrees) does not beat unweighted Kabsch \
             ({rot0:.4} degrees)"
        )
        .into());
    }
    if rot1.is_nan() || rot1 > args.tolerance {
        return Err(format!(
            "the learned weighting's rotation error {rot1:.4} degrees exceeds the tolerance \
             {} degrees",
            args.tolerance
        )
        .into());
    }
    if m > 0 && out_weight > 0.05 {
        return Err(
            format!("the outliers still hold {:.2}% of the weight", 100.0 * out_weight).into()
        );
    }
    println!(
        "OK: rotation error {rot1:.4} degrees (unweighted Kabsch {rot0:.4}){}",
        if m > 0 { ", outliers down-weighted" } else { "" }
    );
    Ok(())
}
