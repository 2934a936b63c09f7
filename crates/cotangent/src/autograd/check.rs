//! Finite-difference checks of derivatives: [`gradcheck`] (first order, reverse mode),
//! [`gradgradcheck`] (second order) and [`gradcheck_forward`] (forward mode, and its
//! agreement with reverse mode), usable on any function of tensors.

use super::{grad, GradOptions};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{Generator, Tensor};

/// Options of [`gradcheck`] and [`gradgradcheck`] (PyTorch's defaults).
#[derive(Debug, Clone, Copy)]
pub struct GradcheckOptions {
    /// Step of the central differences.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (relative to the numerical value).
    pub rtol: f64,
    /// Largest Jacobian (inputs x outputs elements) computed in full; above it the check
    /// compares `uᵀ J v` for random `u`, `v` (PyTorch's fast mode).
    pub max_full: usize,
    /// Number of random projections in fast mode.
    pub projections: usize,
    /// Seed of the random projections and of gradgradcheck's cotangents.
    pub seed: u64,
    /// [`gradcheck_forward`] also compares its JVPs with reverse mode (off for outputs
    /// whose VJP refuses general cotangents, as complex eigenvectors' phases).
    pub check_reverse: bool,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
            max_full: 40_000,
            projections: 6,
            seed: 0,
            check_reverse: true,
        }
    }
}

/// The worst disagreement found by a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Which input (position in the list).
    pub input: usize,
    /// Which output.
    pub output: usize,
    /// Flat (row-major) index in the input, or `None` in fast mode.
    pub input_index: Option<usize>,
    /// Flat index in the output, or `None` in fast mode.
    pub output_index: Option<usize>,
    /// The gradient from autograd.
    pub analytical: f64,
    /// The gradient from finite differences.
    pub numerical: f64,
}

/// The outcome of [`gradcheck`]: whether every entry agreed, and the worst entry.
#[derive(Debug, Clone, PartialEq)]
pub struct GradcheckReport {
    /// True if every compared entry satisfies `|a - n| <= atol + rtol |n|`.
    pub passed: bool,
    /// The entry with the largest ratio `|a - n| / (atol + rtol |n|)`, if anything was
    /// compared.
    pub worst: Option<Mismatch>,
    /// True if the full Jacobian was compared, false for random projections.
    pub full: bool,
    /// Number of Jacobian entries (or projections) compared.
    pub compared: usize,
}

impl std::fmt::Display for GradcheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "gradcheck {} ({} {} compared)",
            if self.passed { "passed" } else { "FAILED" },
            self.compared,
            if self.full { "entries" } else { "projections" }
        )?;
        if let Some(w) = &self.worst {
            write!(
                f,
                "; worst: input {} [{:?}], output {} [{:?}]: analytical {:e}, numerical {:e}",
                w.input, w.input_index, w.output, w.output_index, w.analytical, w.numerical
            )?;
        }
        Ok(())
    }
}

fn with_values(t: &Tensor, v: Vec<f64>) -> Result<Tensor> {
    Tensor::from_vec(v, t.shape().clone())?.with_requires_grad(t.requires_grad())
}

struct Worst {
    score: f64,
    passed: bool,
    worst: Option<Mismatch>,
    compared: usize,
}

impl Worst {
    fn add(&mut self, m: Mismatch, o: &GradcheckOptions) {
        let err = (m.analytical - m.numerical).abs();
        let ok = err <= o.atol + o.rtol * m.numerical.abs() || (m.analytical == m.numerical);
        self.compared += 1;
        if !ok || m.analytical.is_nan() != m.numerical.is_nan() {
            self.passed = false;
        }
        // the ratio of the error to its tolerance: above 1 fails
        let score = if m.analytical == m.numerical {
            0.0
        } else {
            err / (o.atol + o.rtol * m.numerical.abs())
        };
        let score = if score.is_nan() { f64::INFINITY } else { score };
        if self.worst.is_none() || score > self.score {
            self.score = score;
            self.worst = Some(m);
        }
    }
}

/// Compares the gradients autograd computes for `f` with central finite differences.
///
/// `f` maps the inputs to its outputs. Inputs that require grad must be `F64` or `C128`
/// (whose real and imaginary parts are perturbed separately, and reported as the flat
/// indices `2k` and `2k + 1` of element `k`; complex outputs likewise) and are
/// perturbed by `±eps`, one element at a time when the Jacobian is small (at most
/// `max_full` entries), else along random directions. Outputs that are not floating point
/// are ignored. An entry passes when `|analytical - numerical| <= atol + rtol |numerical|`.
///
/// Errors: whatever `f` or the backward pass returns; `UnsupportedDType` for an input
/// that requires grad and is not `F64` or `C128`.
///
/// ```
/// # use cotangent::{Tensor, autograd::{gradcheck, GradcheckOptions}};
/// let x = Tensor::from_vec(vec![0.3f64, -1.2, 2.0], 3)?.with_requires_grad(true)?;
/// let report = gradcheck(|xs| Ok(vec![xs[0].sin()?.mul(&xs[0])?]), &[x], &GradcheckOptions::default())?;
/// assert!(report.passed, "{report}");
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn gradcheck<F>(f: F, inputs: &[Tensor], opts: &GradcheckOptions) -> Result<GradcheckReport>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let (g, xs) = realify(&f, inputs)?;
    check_real(g.as_ref(), &xs, opts)
}

/// A real function of one signature: what the checks run on.
type RealFn<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

/// `f` as a function of real tensors only, with its inputs: each complex input that
/// requires grad becomes its `view_as_real` (a trailing dim of 2: real and imaginary
/// parts) and each complex output its `view_as_real`, so the checks compare the real
/// Jacobian of `(x, y) -> (Re f, Im f)` (as `torch.autograd.gradcheck` does with complex
/// numbers). Autograd's gradient of a real loss with respect to `z` is
/// `∂L/∂x + i ∂L/∂y` (PyTorch's convention), so it passes through `view_as_complex` as
/// exactly that pair: the check tests the convention, not just each op.
fn realify<'a, F>(f: &'a F, inputs: &[Tensor]) -> Result<(Box<RealFn<'a>>, Vec<Tensor>)>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let complex: Vec<bool> =
        inputs.iter().map(|t| t.requires_grad() && t.dtype().is_complex()).collect();
    let xs =
        inputs
            .iter()
            .zip(&complex)
            .map(|(t, &c)| {
                if c {
                    t.detach().view_as_real()?.with_requires_grad(true)
                } else {
                    Ok(t.clone())
                }
            })
            .collect::<Result<Vec<_>>>()?;
    let g = move |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let args = xs
            .iter()
            .zip(&complex)
            .map(|(t, &c)| if c { t.view_as_complex() } else { Ok(t.clone()) })
            .collect::<Result<Vec<_>>>()?;
        f(&args)?
            .into_iter()
            .map(|y| if y.dtype().is_complex() { y.view_as_real() } else { Ok(y) })
            .collect()
    };
    Ok((Box::new(g), xs))
}

/// [`gradcheck`] of a function of real tensors.
fn check_real(
    f: &RealFn<'_>,
    inputs: &[Tensor],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    for t in inputs {
        if t.requires_grad() && t.dtype() != DType::F64 {
            return Err(Error::UnsupportedDType { op: "gradcheck", dtype: t.dtype() });
        }
    }
    let outputs = f(inputs)?;
    let n_in: usize = inputs.iter().filter(|t| t.requires_grad()).map(Tensor::numel).sum();
    let n_out: usize =
        outputs.iter().filter(|t| t.dtype().is_floating_point()).map(Tensor::numel).sum();
    let mut w = Worst { score: f64::NEG_INFINITY, passed: true, worst: None, compared: 0 };
    let eval = |xs: &[Tensor]| -> Result<Vec<Vec<f64>>> {
        Ok(f(xs)?
            .iter()
            .map(|t| if t.dtype().is_floating_point() { t.to_vec_f64() } else { vec![] })
            .collect())
    };
    let full = n_in.saturating_mul(n_out) <= opts.max_full;
    let grad_inputs: Vec<&Tensor> = inputs.iter().filter(|t| t.requires_grad()).collect();
    let in_pos: Vec<usize> = (0..inputs.len()).filter(|&i| inputs[i].requires_grad()).collect();
    if full {
        let numeric = numeric_jacobian(&eval, inputs, &in_pos, opts.eps)?;
        // analytical Jacobian, row by row
        for (k, y) in outputs.iter().enumerate() {
            if !y.dtype().is_floating_point() {
                continue;
            }
            for m in 0..y.numel() {
                let rows: Vec<Option<Tensor>> = if y.requires_grad() && !grad_inputs.is_empty() {
                    let mut e = vec![0.0f64; y.numel()];
                    e[m] = 1.0;
                    let e = Tensor::from_vec(e, y.shape().clone())?.to_dtype(y.dtype())?;
                    let opts = GradOptions { create_graph: false, allow_unused: true };
                    grad(&[y], &[Some(&e)], &grad_inputs, opts)?
                } else {
                    vec![None; grad_inputs.len()]
                };
                for (r, row) in rows.iter().enumerate() {
                    let vals = match row {
                        Some(g) => g.to_vec_f64(),
                        None => vec![0.0; grad_inputs[r].numel()],
                    };
                    for (j, &a) in vals.iter().enumerate() {
                        let n = numeric[r][j][k][m];
                        w.add(
                            Mismatch {
                                input: in_pos[r],
                                output: k,
                                input_index: Some(j),
                                output_index: Some(m),
                                analytical: a,
                                numerical: n,
                            },
                            opts,
                        );
                    }
                }
            }
        }
    } else {
        let mut rng = Generator::new(opts.seed);
        for _ in 0..opts.projections {
            // direction v in input space, u in output space
            let vs: Vec<Vec<f64>> = grad_inputs.iter().map(|t| rng.normal_vec(t.numel())).collect();
            let us: Vec<Vec<f64>> =
                outputs
                    .iter()
                    .map(|t| {
                        if t.dtype().is_floating_point() {
                            rng.normal_vec(t.numel())
                        } else {
                            vec![]
                        }
                    })
                    .collect();
            let diff = directional_difference(&eval, inputs, &in_pos, &vs, opts.eps)?;
            let mut numerical = 0.0;
            for (k, u) in us.iter().enumerate() {
                for (e, &uu) in u.iter().enumerate() {
                    numerical += uu * diff[k][e];
                }
            }
            let floating: Vec<bool> =
                outputs.iter().map(|t| t.dtype().is_floating_point()).collect();
            let analytical = reverse_projection(&outputs, &floating, &us, &grad_inputs, &vs)?;
            w.add(
                Mismatch {
                    input: 0,
                    output: 0,
                    input_index: None,
                    output_index: None,
                    analytical,
                    numerical,
                },
                opts,
            );
        }
    }
    Ok(GradcheckReport { passed: w.passed, worst: w.worst, full, compared: w.compared })
}

/// The values of each floating output of `f` (empty for the others).
type Eval<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Vec<f64>>> + 'a;

/// The central difference of `eval` along the directions `vs` of the inputs at `in_pos`:
/// `(f(x + eps v) − f(x − eps v)) / 2 eps`, per output.
fn directional_difference(
    eval: &Eval<'_>,
    inputs: &[Tensor],
    in_pos: &[usize],
    vs: &[Vec<f64>],
    eps: f64,
) -> Result<Vec<Vec<f64>>> {
    let shifted = |sign: f64| -> Result<Vec<Vec<f64>>> {
        let mut xs = inputs.to_vec();
        for (r, &i) in in_pos.iter().enumerate() {
            let v: Vec<f64> = inputs[i]
                .to_vec_f64()
                .iter()
                .zip(&vs[r])
                .map(|(x, d)| x + sign * eps * d)
                .collect();
            xs[i] = with_values(&inputs[i], v)?;
        }
        eval(&xs)
    };
    let (p, m) = (shifted(1.0)?, shifted(-1.0)?);
    Ok(p.iter()
        .zip(&m)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y) / (2.0 * eps)).collect())
        .collect())
}

/// `⟨Jᵀ u, v⟩` by reverse mode: the cotangents `us` of the outputs that require grad
/// (`floating` marks the outputs compared), pulled back to `targets` and projected on
/// their directions `vs`.
fn reverse_projection(
    outputs: &[Tensor],
    floating: &[bool],
    us: &[Vec<f64>],
    targets: &[&Tensor],
    vs: &[Vec<f64>],
) -> Result<f64> {
    let mut outs = Vec::new();
    let mut gos = Vec::new();
    for (k, y) in outputs.iter().enumerate() {
        if y.requires_grad() && floating[k] {
            outs.push(y);
            gos.push(Tensor::from_vec(us[k].clone(), y.shape().clone())?.to_dtype(y.dtype())?);
        }
    }
    if outs.is_empty() || targets.is_empty() {
        return Ok(0.0);
    }
    let go_refs: Vec<Option<&Tensor>> = gos.iter().map(Some).collect();
    let g =
        grad(&outs, &go_refs, targets, GradOptions { create_graph: false, allow_unused: true })?;
    let mut total = 0.0;
    for (r, gr) in g.iter().enumerate() {
        if let Some(gr) = gr {
            total += gr.to_vec_f64().iter().zip(&vs[r]).map(|(a, b)| a * b).sum::<f64>();
        }
    }
    Ok(total)
}

/// The central-difference Jacobian of `eval` with respect to the inputs at `in_pos`,
/// column by column: `[input][element][output][output element]`.
fn numeric_jacobian(
    eval: &Eval<'_>,
    inputs: &[Tensor],
    in_pos: &[usize],
    eps: f64,
) -> Result<Vec<Vec<Vec<Vec<f64>>>>> {
    let mut numeric = Vec::with_capacity(in_pos.len());
    for &i in in_pos {
        let base = inputs[i].to_vec_f64();
        let mut cols = Vec::with_capacity(base.len());
        for j in 0..base.len() {
            let mut xs = inputs.to_vec();
            let mut v = base.clone();
            v[j] = base[j] + eps;
            xs[i] = with_values(&inputs[i], v.clone())?;
            let plus = eval(&xs)?;
            v[j] = base[j] - eps;
            xs[i] = with_values(&inputs[i], v)?;
            let minus = eval(&xs)?;
            cols.push(
                plus.iter()
                    .zip(&minus)
                    .map(|(p, m)| p.iter().zip(m).map(|(a, b)| (a - b) / (2.0 * eps)).collect())
                    .collect(),
            );
        }
        numeric.push(cols);
    }
    Ok(numeric)
}

/// Checks forward mode (PyTorch's `gradcheck(..., check_forward_ad=True)`): the
/// Jacobian-vector products of `f` (its JVPs, through dual tensors) against central
/// finite differences, column by column when the Jacobian is small (at most `max_full`
/// entries) and along random directions `⟨u, J v⟩` otherwise; and, along `projections`
/// random directions in either case (unless `check_reverse` is off), against reverse mode: `⟨u, J v⟩` from the JVP and
/// `⟨Jᵀ u, v⟩` from the VJP must agree to the same tolerance. Inputs and outputs as in
/// [`gradcheck`] (complex ones as their real and imaginary parts); the inputs that
/// require grad get tangents.
///
/// Errors: whatever `f`, its JVPs or its VJPs return (`NotDifferentiable` for an op
/// without a forward-mode rule); `UnsupportedDType` as [`gradcheck`].
///
/// ```
/// # use cotangent::{Tensor, autograd::{gradcheck_forward, GradcheckOptions}};
/// let x = Tensor::from_vec(vec![0.3f64, -1.2, 2.0], 3)?.with_requires_grad(true)?;
/// let f = |xs: &[Tensor]| Ok(vec![xs[0].sin()?.mul(&xs[0])?]);
/// let report = gradcheck_forward(f, &[x], &GradcheckOptions::default())?;
/// assert!(report.passed, "{report}");
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn gradcheck_forward<F>(
    f: F,
    inputs: &[Tensor],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let (g, xs) = realify(&f, inputs)?;
    forward_real(g.as_ref(), &xs, opts)
}

/// [`gradcheck_forward`] of a function of real tensors.
fn forward_real(
    f: &RealFn<'_>,
    inputs: &[Tensor],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    for t in inputs {
        if t.requires_grad() && t.dtype() != DType::F64 {
            return Err(Error::UnsupportedDType { op: "gradcheck_forward", dtype: t.dtype() });
        }
    }
    let outputs = f(inputs)?;
    let floating: Vec<bool> = outputs.iter().map(|t| t.dtype().is_floating_point()).collect();
    let in_pos: Vec<usize> = (0..inputs.len()).filter(|&i| inputs[i].requires_grad()).collect();
    let n_in: usize = in_pos.iter().map(|&i| inputs[i].numel()).sum();
    let n_out: usize =
        outputs.iter().filter(|t| t.dtype().is_floating_point()).map(Tensor::numel).sum();
    let eval = |xs: &[Tensor]| -> Result<Vec<Vec<f64>>> {
        Ok(f(xs)?
            .iter()
            .map(|t| if t.dtype().is_floating_point() { t.to_vec_f64() } else { vec![] })
            .collect())
    };
    // J v for tangents `vs` of the inputs at `in_pos` (row-major values)
    let jvp = |vs: &[Vec<f64>]| -> Result<Vec<Vec<f64>>> {
        let level = super::forward::dual_level();
        let mut xs = inputs.to_vec();
        for (r, &i) in in_pos.iter().enumerate() {
            let v = Tensor::from_vec(vs[r].clone(), inputs[i].shape().clone())?;
            xs[i] = level.make_dual(&inputs[i], &v)?;
        }
        let ys = f(&xs)?;
        ys.iter()
            .zip(&floating)
            .map(|(y, &fl)| {
                if !fl {
                    return Ok(vec![]);
                }
                Ok(match level.unpack_dual(y)?.1 {
                    Some(t) => t.to_vec_f64(),
                    None => vec![0.0; y.numel()],
                })
            })
            .collect()
    };
    let mut w = Worst { score: f64::NEG_INFINITY, passed: true, worst: None, compared: 0 };
    let full = n_in.saturating_mul(n_out) <= opts.max_full;
    if full {
        let numeric = numeric_jacobian(&eval, inputs, &in_pos, opts.eps)?;
        for (r, &i) in in_pos.iter().enumerate() {
            for j in 0..inputs[i].numel() {
                let mut vs: Vec<Vec<f64>> =
                    in_pos.iter().map(|&q| vec![0.0; inputs[q].numel()]).collect();
                vs[r][j] = 1.0;
                for (k, col) in jvp(&vs)?.iter().enumerate() {
                    for (m, &a) in col.iter().enumerate() {
                        let m_ = Mismatch {
                            input: i,
                            output: k,
                            input_index: Some(j),
                            output_index: Some(m),
                            analytical: a,
                            numerical: numeric[r][j][k][m],
                        };
                        w.add(m_, opts);
                    }
                }
            }
        }
    }
    let mut rng = Generator::new(opts.seed ^ 0x5151_f0f0);
    let grad_inputs: Vec<&Tensor> = in_pos.iter().map(|&i| &inputs[i]).collect();
    // (no input element: no direction to project on; an op's tangent there may be 0/0,
    // as PyTorch's mean of an empty tensor)
    let projections = if n_in == 0 { 0 } else { opts.projections };
    for _ in 0..projections {
        let vs: Vec<Vec<f64>> = grad_inputs.iter().map(|t| rng.normal_vec(t.numel())).collect();
        let us: Vec<Vec<f64>> = outputs
            .iter()
            .zip(&floating)
            .map(|(t, &fl)| if fl { rng.normal_vec(t.numel()) } else { vec![] })
            .collect();
        let dot = |a: &[Vec<f64>], b: &[Vec<f64>]| -> f64 {
            a.iter().zip(b).map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>()).sum()
        };
        let forward = dot(&us, &jvp(&vs)?);
        if !full {
            let diff = directional_difference(&eval, inputs, &in_pos, &vs, opts.eps)?;
            let numerical = dot(&us, &diff);
            let m_ = Mismatch {
                input: 0,
                output: 0,
                input_index: None,
                output_index: None,
                analytical: forward,
                numerical,
            };
            w.add(m_, opts);
        }
        if !opts.check_reverse {
            continue;
        }
        // reverse mode along the same directions: ⟨Jᵀ u, v⟩
        let reverse = reverse_projection(&outputs, &floating, &us, &grad_inputs, &vs)?;
        let m_ = Mismatch {
            input: 0,
            output: 0,
            input_index: None,
            output_index: None,
            analytical: forward,
            numerical: reverse,
        };
        w.add(m_, opts);
    }
    Ok(GradcheckReport { passed: w.passed, worst: w.worst, full, compared: w.compared })
}

/// Checks second derivatives: runs [`gradcheck`] on the function
/// `(inputs, v) -> grad(f(inputs), inputs, grad_outputs = v, create_graph = true)`,
/// with random cotangents `v` (PyTorch's `gradgradcheck`).
///
/// ```
/// # use cotangent::{Tensor, autograd::{gradgradcheck, GradcheckOptions}};
/// let x = Tensor::from_vec(vec![0.5f64, 1.5], 2)?.with_requires_grad(true)?;
/// let report = gradgradcheck(|xs| Ok(vec![xs[0].exp()?.mul(&xs[0])?]), &[x], &GradcheckOptions::default())?;
/// assert!(report.passed, "{report}");
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn gradgradcheck<F>(f: F, inputs: &[Tensor], opts: &GradcheckOptions) -> Result<GradcheckReport>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let (g, xs) = realify(&f, inputs)?;
    gradgrad_real(g.as_ref(), &xs, opts)
}

/// [`gradgradcheck`] of a function of real tensors.
fn gradgrad_real(
    f: &RealFn<'_>,
    inputs: &[Tensor],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    let outputs = f(inputs)?;
    let mut rng = Generator::new(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut all = inputs.to_vec();
    let mut cot_pos = Vec::new();
    for y in &outputs {
        if y.requires_grad() {
            cot_pos.push(Some(all.len()));
            all.push(
                Tensor::from_vec(rng.normal_vec(y.numel()), y.shape().clone())?
                    .with_requires_grad(true)?,
            );
        } else {
            cot_pos.push(None);
        }
    }
    let n_inputs = inputs.len();
    let g = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let ins = &xs[..n_inputs];
        let ys = f(ins)?;
        let mut outs = Vec::new();
        let mut gos = Vec::new();
        for (k, y) in ys.iter().enumerate() {
            if let Some(p) = cot_pos.get(k).copied().flatten() {
                if y.requires_grad() {
                    outs.push(y);
                    gos.push(Some(xs[p].to_dtype(y.dtype())?));
                }
            }
        }
        let targets: Vec<&Tensor> = ins.iter().filter(|t| t.requires_grad()).collect();
        if outs.is_empty() || targets.is_empty() {
            return Ok(vec![]);
        }
        let go_refs: Vec<Option<&Tensor>> = gos.iter().map(Option::as_ref).collect();
        let grads = grad(
            &outs,
            &go_refs,
            &targets,
            GradOptions { create_graph: true, allow_unused: true },
        )?;
        grads
            .into_iter()
            .zip(&targets)
            .map(|(g, t)| match g {
                Some(g) => Ok(g),
                None => Tensor::zeros(t.shape().clone(), t.dtype()),
            })
            .collect()
    };
    check_real(&g, &all, opts)
}
