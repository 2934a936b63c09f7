//! The Gaussian process of the example: data, the kernel of Rasmussen and Williams
//! (2006, section 5.4.3), the exact log marginal likelihood through a Cholesky
//! factorisation, its gradient by autograd, the fit by L-BFGS and the forecast. Shared
//! with the test `tests/gaussian_process.rs`.

use std::f64::consts::PI;

use cotangent::autograd::{self, GradOptions};
use cotangent::linalg::{cholesky, solve_triangular, Diag, Side, Uplo};
use cotangent::optim::{Lbfgs, LineSearch, Param};
use cotangent::{DType, Result, Tensor};

/// The eleven hyperparameters, natural logs, in scikit-learn's `kernel.theta` order for
/// `C*RBF + C*RBF*ExpSineSquared(periodicity=1) + C*RationalQuadratic + C*RBF +
/// WhiteKernel`: (s1², l1, s2², l2, l_periodic, s3², alpha, l3, s4², l4, noise variance).
#[allow(dead_code)] // documents the order; printed by the tests
pub const NAMES: [&str; 11] =
    ["s1^2", "l1", "s2^2", "l2", "l_periodic", "s3^2", "alpha", "l3", "s4^2", "l4", "noise"];

/// scikit-learn's documented starting values for the CO2 example (not logs).
pub const START: [f64; 11] = [
    66.0 * 66.0,
    67.0,
    2.4 * 2.4,
    90.0,
    1.3,
    0.66 * 0.66,
    0.78,
    1.2,
    0.18 * 0.18,
    0.134,
    0.19 * 0.19,
];

/// The observations: decimal years and ppmv minus their mean.
#[derive(Debug, Clone)]
pub struct Data {
    /// `year + (month − 1)/12 + (day − 1)/365.25`.
    pub x: Vec<f64>,
    /// ppmv minus `mean`.
    pub y: Vec<f64>,
    /// The mean of the ppmv values.
    pub mean: f64,
}

/// Reads the weekly CSV (`date,co2` with `YYYYMMDD` dates), dropping empty weeks, and
/// keeps `points` evenly spaced observations if given.
pub fn load(csv: &str, points: Option<usize>) -> std::result::Result<Data, String> {
    let mut x = Vec::new();
    let mut ppmv = Vec::new();
    for (i, line) in csv.lines().enumerate().skip(1) {
        let (date, co2) = line.trim().split_once(',').ok_or(format!("line {}: no comma", i + 1))?;
        if co2.is_empty() {
            continue;
        }
        let num = |s: &str| s.parse::<f64>().map_err(|e| format!("line {}: {e}", i + 1));
        if date.len() != 8 {
            return Err(format!("line {}: date {date:?} is not YYYYMMDD", i + 1));
        }
        let (year, month, day) = (num(&date[..4])?, num(&date[4..6])?, num(&date[6..])?);
        x.push(year + (month - 1.0) / 12.0 + (day - 1.0) / 365.25);
        ppmv.push(num(co2)?);
    }
    if let Some(p) = points.filter(|&p| p >= 2 && p < x.len()) {
        // evenly spaced indices, as numpy's round(linspace(0, n − 1, p))
        let n = x.len();
        let idx: Vec<usize> = (0..p)
            .map(|k| ((k as f64) * (n - 1) as f64 / (p - 1) as f64).round() as usize)
            .collect();
        x = idx.iter().map(|&i| x[i]).collect();
        ppmv = idx.iter().map(|&i| ppmv[i]).collect();
    }
    let mean = ppmv.iter().sum::<f64>() / ppmv.len() as f64;
    Ok(Data { x, y: ppmv.iter().map(|v| v - mean).collect(), mean })
}

/// The parts of the kernel that do not depend on the hyperparameters, for inputs `a`
/// (n) and `b` (m): `−d²/2` and `−2 sin²(π d)` with `d = aᵢ − bⱼ`. Computed once per fit.
#[derive(Debug, Clone)]
pub struct Geometry {
    half_d2: Tensor,
    periodic: Tensor,
}

impl Geometry {
    /// The geometry of `a` against `b`.
    pub fn new(a: &Tensor, b: &Tensor) -> Result<Geometry> {
        let d = a.unsqueeze(1)?.sub(&b.unsqueeze(0)?)?;
        Ok(Geometry {
            half_d2: d.square()?.mul_scalar(-0.5)?,
            periodic: d.mul_scalar(PI)?.sin()?.square()?.mul_scalar(-2.0)?,
        })
    }
}

/// The kernel matrix for hyperparameters `theta` (logs, a (11,) tensor), without the
/// white-noise term (added on the training diagonal only):
/// `s1² e^{−d²/2l1²} + s2² e^{−d²/2l2² − 2 sin²(πd)/lp²} + s3² (1 + d²/(2 α l3²))^{−α}
/// + s4² e^{−d²/2l4²}`.
pub fn kernel(theta: &Tensor, g: &Geometry) -> Result<Tensor> {
    let p = theta.exp()?;
    let h = |i: isize| p.select(0, i);
    // e^{−d²/(2 l²)}
    let rbf = |l: &Tensor| -> Result<Tensor> { g.half_d2.div(&l.square()?)?.exp() };
    let long = rbf(&h(1)?)?.mul(&h(0)?)?;
    let seasonal = g
        .half_d2
        .div(&h(3)?.square()?)?
        .add(&g.periodic.div(&h(4)?.square()?)?)?
        .exp()?
        .mul(&h(2)?)?;
    // (1 + d²/(2 α l²))^{−α} = exp(−α log1p(−(−d²/2) / (α l²)))
    let (alpha, l3) = (h(6)?, h(7)?);
    let rq =
        g.half_d2.div(&alpha.mul(&l3.square()?)?.neg()?)?.log1p()?.mul(&alpha.neg()?)?.exp()?;
    let medium = rq.mul(&h(5)?)?;
    let noise = rbf(&h(9)?)?.mul(&h(8)?)?;
    long.add(&seasonal)?.add(&medium)?.add(&noise)
}

/// The negative log marginal likelihood `½ yᵀK⁻¹y + ½ log det K + (n/2) log 2π` with
/// `K = k(x, x) + σ²_white I`, by a Cholesky factorisation `K = L Lᵀ`:
/// `½ ‖L⁻¹y‖² + Σ log Lᵢᵢ + (n/2) log 2π`. Differentiable in `theta`.
pub fn nlml(theta: &Tensor, g: &Geometry, y: &Tensor) -> Result<Tensor> {
    let n = y.dims()[0];
    let white = theta.select(0, 10)?.exp()?;
    let k = kernel(theta, g)?.add(&Tensor::eye(n, DType::F64)?.mul(&white)?)?;
    let l = cholesky(&k, Uplo::Lower)?;
    let z = solve_triangular(&l, &y.unsqueeze(1)?, Uplo::Lower, Side::Left, Diag::NonUnit)?;
    let fit = z.square()?.sum()?.mul_scalar(0.5)?;
    let logdet = l.diagonal(0, 0, 1)?.log()?.sum()?;
    fit.add(&logdet)?.add_scalar(0.5 * n as f64 * (2.0 * PI).ln())
}

/// The data as tensors.
pub fn tensors(data: &Data) -> Result<(Tensor, Tensor)> {
    let n = data.x.len();
    Ok((Tensor::from_vec(data.x.clone(), n)?, Tensor::from_vec(data.y.clone(), n)?))
}

/// The log marginal likelihood and its gradient with respect to `theta` (logs).
pub fn lml_and_grad(theta: &[f64], data: &Data) -> Result<(f64, Vec<f64>)> {
    let (x, y) = tensors(data)?;
    let g = Geometry::new(&x, &x)?;
    let t = Tensor::from_vec(theta.to_vec(), theta.len())?.with_requires_grad(true)?;
    let l = nlml(&t, &g, &y)?;
    let g = autograd::grad(&[&l], &[None], &[&t], GradOptions::default())?;
    let g = g[0].as_ref().map_or_else(|| vec![0.0; theta.len()], Tensor::to_vec_f64);
    Ok((-l.item::<f64>()?, g.iter().map(|v| -v).collect()))
}

/// The Hessian of the log marginal likelihood with respect to `theta` (logs), 11 x 11
/// row-major in theta's order, by forward-over-reverse (`func::hessian_with`: one JVP of
/// the gradient per hyperparameter, through the Cholesky factorisation's forward and
/// backward rules).
#[allow(dead_code)] // used by the example's --hessian and by the tests
pub fn lml_hessian(theta: &[f64], data: &Data) -> Result<Vec<f64>> {
    let (x, y) = tensors(data)?;
    let g = Geometry::new(&x, &x)?;
    let t = Tensor::from_vec(theta.to_vec(), theta.len())?;
    // one direction per call: at thousands of points the tangents each direction keeps
    // alive (n x n matrices of the backward pass), not the primal the directions could
    // share, bound the time, and sharing it would double the memory
    let opts = cotangent::func::JacOptions { chunk_size: Some(1) };
    let f = |p: &[Tensor]| Ok(vec![nlml(&p[0], &g, &y)?.neg()?]);
    // (the Hessian is not differentiated again: its tangents go unrecorded)
    let _no_grad = cotangent::autograd::no_grad();
    let h = cotangent::func::hessian_with(f, &[t], opts)?;
    Ok(h[0][0][0].to_vec_f64())
}

/// The standard errors of `theta` (logs) from the Laplace approximation at a maximum of
/// the likelihood: the square roots of the diagonal of `(−H)⁻¹`, `H` the Hessian of the
/// log marginal likelihood ([`lml_hessian`]); NaN where `−H` is not positive definite
/// there (not a maximum), with `Err` only for malformed input.
#[allow(dead_code)]
pub fn standard_errors(hessian: &[f64], n: usize) -> Result<Vec<f64>> {
    let h = Tensor::from_vec(hessian.to_vec(), (n, n))?.neg()?;
    let h = h.add(&h.mT()?)?.mul_scalar(0.5)?;
    match cotangent::linalg::cholesky_ex(&h, Uplo::Lower) {
        Ok(f) if f.info.to_vec::<i64>()?.iter().all(|&i| i == 0) => {
            let cov = cotangent::linalg::cholesky_inverse(&f.l, Uplo::Lower)?;
            Ok(cov.diagonal(0, 0, 1)?.to_vec_f64().iter().map(|v| v.sqrt()).collect())
        }
        _ => Ok(vec![f64::NAN; n]),
    }
}

/// Progress of the fit: the iteration, the negative log marginal likelihood after it.
pub type Progress<'a> = &'a mut dyn FnMut(usize, f64);

/// The result of a fit.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The optimised hyperparameters (logs).
    pub theta: Vec<f64>,
    /// The log marginal likelihood there.
    pub lml: f64,
    /// L-BFGS iterations.
    pub iterations: usize,
    /// Loss evaluations.
    pub evaluations: usize,
}

/// Maximises the log marginal likelihood over `theta` (logs) with L-BFGS and a
/// strong-Wolfe line search, from `start`, calling `progress` after every iteration.
pub fn fit(data: &Data, start: &[f64], max_iter: usize, progress: Progress<'_>) -> Result<Fit> {
    let (x, y) = tensors(data)?;
    let g = Geometry::new(&x, &x)?;
    let mut params = vec![Param::new(&Tensor::from_vec(start.to_vec(), start.len())?)?];
    let mut opt = Lbfgs::default()
        .line_search(LineSearch::StrongWolfe)
        .max_iter(max_iter)
        .max_eval(Some(max_iter * 2))
        .tolerance_grad(1e-5)
        .tolerance_change(1e-9);
    opt.step_with_progress(&mut params, |p| nlml(&p[0], &g, &y), progress)?;
    let theta = params[0].tensor().to_vec_f64();
    let (lml, _) = lml_and_grad(&theta, data)?;
    Ok(Fit { theta, lml, iterations: opt.n_iter(), evaluations: opt.func_evals() })
}

/// Predictive mean and standard deviation (of an observation, white noise included) at
/// `at`, in ppmv (the mean added back).
pub fn predict(theta: &[f64], data: &Data, at: &[f64]) -> Result<(Vec<f64>, Vec<f64>)> {
    let _g = cotangent::autograd::no_grad();
    let (x, y) = tensors(data)?;
    let t = Tensor::from_vec(theta.to_vec(), theta.len())?;
    let n = x.dims()[0];
    let white = theta[10].exp();
    let k = kernel(&t, &Geometry::new(&x, &x)?)?
        .add(&Tensor::eye(n, DType::F64)?.mul_scalar(white)?)?;
    let l = cholesky(&k, Uplo::Lower)?;
    let z = solve_triangular(&l, &y.unsqueeze(1)?, Uplo::Lower, Side::Left, Diag::NonUnit)?;
    let alpha = solve_triangular(&l.mT()?, &z, Uplo::Upper, Side::Left, Diag::NonUnit)?;
    let s = Tensor::from_vec(at.to_vec(), at.len())?;
    let ks = kernel(&t, &Geometry::new(&s, &x)?)?; // (m, n)
    let mean = ks.matmul(&alpha)?.squeeze_dim(1)?.add_scalar(data.mean)?.to_vec_f64();
    let v = solve_triangular(&l, &ks.mT()?, Uplo::Lower, Side::Left, Diag::NonUnit)?; // (n, m)
    let prior = kernel(&t, &Geometry::new(&s, &s)?)?.diagonal(0, 0, 1)?.add_scalar(white)?;
    let var = prior.sub(&v.square()?.sum_dims(&[0], false)?)?.to_vec_f64();
    Ok((mean, var.iter().map(|v| v.max(0.0).sqrt()).collect()))
}
