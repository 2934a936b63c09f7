//! L-BFGS with an optional strong-Wolfe line search (`torch.optim.LBFGS`).

use super::{check_signature, loss_and_grads, signature, Optimizer, Param, Signature};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "optim.LBFGS";

/// The line search of [`Lbfgs`] (`line_search_fn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineSearch {
    /// A fixed step `lr` (PyTorch's default, `None`).
    None,
    /// Bracketing and cubic interpolation until the strong Wolfe conditions hold
    /// (`c₁ = 1e-4`, `c₂ = 0.9`), PyTorch's `"strong_wolfe"` (after minFunc).
    StrongWolfe,
}

/// L-BFGS (Nocedal and Wright, algorithm 7.4) with PyTorch's semantics and defaults:
/// one [`step`](Optimizer::step) runs up to `max_iter` iterations and `max_eval`
/// evaluations of the loss, keeps `history_size` curvature pairs between steps, and stops
/// early when the largest gradient entry is at most `tolerance_grad`, or a step or the
/// change of the loss is below `tolerance_change`. The first iteration scales its step
/// by `min(1, 1/‖g‖₁)`.
///
/// The parameters are flattened into one `f64` vector for the two-loop recursion (PyTorch
/// computes in the parameters' dtype; for f64 parameters the two agree to rounding).
///
/// ```
/// use cotangent::optim::{Lbfgs, LineSearch, Optimizer, Param};
/// use cotangent::Tensor;
/// // Rosenbrock from (-1.5, 2): minimum at (1, 1)
/// let mut p = vec![Param::new(&Tensor::from_vec(vec![-1.5f64, 2.0], 2)?)?];
/// let mut opt = Lbfgs::default()
///     .line_search(LineSearch::StrongWolfe)
///     .max_iter(100)
///     .tolerance_change(1e-14);
/// opt.step(&mut p, |x| {
///     let (a, b) = (x[0].select(0, 0)?, x[0].select(0, 1)?);
///     let t1 = a.rsub_scalar(1.0)?.square()?;
///     let t2 = b.sub(&a.square()?)?.square()?.mul_scalar(100.0)?;
///     t1.add(&t2)
/// })?;
/// for v in p[0].tensor().to_vec::<f64>()? {
///     assert!((v - 1.0).abs() < 1e-6);
/// }
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Lbfgs {
    /// Learning rate (the step before any line search), default 1.
    pub lr: f64,
    /// Iterations per step, default 20.
    pub max_iter: usize,
    /// Loss evaluations per step, default `max_iter * 5 / 4`; `None` means that.
    pub max_eval: Option<usize>,
    /// Stop when `max |g| <= tolerance_grad` (default 1e-7).
    pub tolerance_grad: f64,
    /// Stop when a step or the change of the loss is below this (default 1e-9).
    pub tolerance_change: f64,
    /// Curvature pairs kept (default 100).
    pub history_size: usize,
    /// The line search (default none: a fixed step).
    pub line_search: LineSearch,
    /// Maximise the objective instead.
    pub maximize: bool,
    state: State,
}

#[derive(Debug, Clone, Default)]
struct State {
    sig: Option<Signature>,
    func_evals: usize,
    n_iter: usize,
    d: Vec<f64>,
    t: f64,
    old_dirs: Vec<Vec<f64>>,
    old_stps: Vec<Vec<f64>>,
    ro: Vec<f64>,
    h_diag: f64,
    prev_flat_grad: Vec<f64>,
    prev_loss: f64,
}

impl Default for Lbfgs {
    fn default() -> Lbfgs {
        Lbfgs {
            lr: 1.0,
            max_iter: 20,
            max_eval: None,
            tolerance_grad: 1e-7,
            tolerance_change: 1e-9,
            history_size: 100,
            line_search: LineSearch::None,
            maximize: false,
            state: State::default(),
        }
    }
}

impl Lbfgs {
    /// The number of loss evaluations over all steps so far.
    #[must_use]
    pub fn func_evals(&self) -> usize {
        self.state.func_evals
    }

    /// The number of iterations over all steps so far.
    #[must_use]
    pub fn n_iter(&self) -> usize {
        self.state.n_iter
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, v| if v.abs() > m || v.is_nan() { v.abs() } else { m })
}

/// The loss and flat gradient at `x` (written into the parameters).
struct Objective<'a, F> {
    params: &'a mut [Param],
    loss: F,
    maximize: bool,
}

impl<F: FnMut(&[Tensor]) -> Result<Tensor>> Objective<'_, F> {
    fn set(&mut self, x: &[f64]) -> Result<()> {
        let mut off = 0;
        for p in self.params.iter_mut() {
            let t = p.tensor();
            let n = t.numel();
            let v = Tensor::from_vec(x[off..off + n].to_vec(), t.shape().clone())?
                .to_dtype(t.dtype())?;
            off += n;
            p.set(&v)?;
        }
        Ok(())
    }

    fn get(&self) -> Vec<f64> {
        self.params.iter().flat_map(|p| p.tensor().to_vec_f64()).collect()
    }

    fn eval(&mut self) -> Result<(f64, Vec<f64>)> {
        let (l, grads) = loss_and_grads(self.params, &mut self.loss)?;
        let mut g: Vec<f64> = grads.iter().flat_map(Tensor::to_vec_f64).collect();
        if self.maximize {
            for v in &mut g {
                *v = -*v;
            }
            return Ok((-l, g));
        }
        Ok((l, g))
    }

    /// Loss and gradient at `x + t d`; the parameters are restored to `x` afterwards.
    fn directional(&mut self, x: &[f64], t: f64, d: &[f64]) -> Result<(f64, Vec<f64>)> {
        let moved: Vec<f64> = x.iter().zip(d).map(|(a, b)| a + t * b).collect();
        self.set(&moved)?;
        let r = self.eval();
        self.set(x)?;
        r
    }
}

/// Minimiser of the cubic interpolating `(x1, f1, g1)` and `(x2, f2, g2)`, clamped to
/// `bounds` (default: the interval between the points).
fn cubic_interpolate(
    x1: f64,
    f1: f64,
    g1: f64,
    x2: f64,
    f2: f64,
    g2: f64,
    bounds: Option<(f64, f64)>,
) -> f64 {
    let (lo, hi) = bounds.unwrap_or(if x1 <= x2 { (x1, x2) } else { (x2, x1) });
    let d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
    let d2_square = d1 * d1 - g1 * g2;
    if d2_square >= 0.0 {
        let d2 = d2_square.sqrt();
        let min_pos = if x1 <= x2 {
            x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
        } else {
            x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
        };
        min_pos.max(lo).min(hi)
    } else {
        f64::midpoint(lo, hi)
    }
}

/// One bracket end: step, loss, gradient, directional derivative.
#[derive(Clone)]
struct Point {
    t: f64,
    f: f64,
    g: Vec<f64>,
    gtd: f64,
}

/// The strong-Wolfe line search along `d` from `x` (loss `f`, gradient `g`, slope `gtd`),
/// starting with step `t`. Returns the loss, gradient and step accepted, and the number
/// of evaluations.
#[allow(clippy::too_many_arguments)]
fn strong_wolfe<F: FnMut(&[Tensor]) -> Result<Tensor>>(
    obj: &mut Objective<'_, F>,
    x: &[f64],
    mut t: f64,
    d: &[f64],
    f: f64,
    g: &[f64],
    gtd: f64,
    max_ls: usize,
    tolerance_change: f64,
) -> Result<(f64, Vec<f64>, f64, usize)> {
    const C1: f64 = 1e-4;
    const C2: f64 = 0.9;
    let d_norm = max_abs(d);
    let (mut f_new, mut g_new) = obj.directional(x, t, d)?;
    let mut evals = 1;
    let mut gtd_new = dot(&g_new, d);
    let mut prev = Point { t: 0.0, f, g: g.to_vec(), gtd };
    let mut done = false;
    let mut ls_iter = 0;
    let mut bracket: Vec<Point> = Vec::new();
    while ls_iter < max_ls {
        let here = Point { t, f: f_new, g: g_new.clone(), gtd: gtd_new };
        if f_new > f + C1 * t * gtd || (ls_iter > 1 && f_new >= prev.f) {
            bracket = vec![prev.clone(), here];
            break;
        }
        if gtd_new.abs() <= -C2 * gtd {
            bracket = vec![here];
            done = true;
            break;
        }
        if gtd_new >= 0.0 {
            bracket = vec![prev.clone(), here];
            break;
        }
        // extrapolate
        let min_step = t + 0.01 * (t - prev.t);
        let max_step = t * 10.0;
        let tmp = t;
        t = cubic_interpolate(
            prev.t,
            prev.f,
            prev.gtd,
            t,
            f_new,
            gtd_new,
            Some((min_step, max_step)),
        );
        prev = Point { t: tmp, f: f_new, g: g_new.clone(), gtd: gtd_new };
        (f_new, g_new) = obj.directional(x, t, d)?;
        evals += 1;
        gtd_new = dot(&g_new, d);
        ls_iter += 1;
    }
    if ls_iter == max_ls {
        bracket = vec![
            Point { t: 0.0, f, g: g.to_vec(), gtd },
            Point { t, f: f_new, g: g_new.clone(), gtd: gtd_new },
        ];
    }
    // zoom
    let mut insuf_progress = false;
    let order = |b: &[Point]| if b[0].f <= b[b.len() - 1].f { (0, 1) } else { (1, 0) };
    let (mut low, mut high) = order(&bracket);
    while !done && ls_iter < max_ls && bracket.len() == 2 {
        if (bracket[1].t - bracket[0].t).abs() * d_norm < tolerance_change {
            break;
        }
        t = cubic_interpolate(
            bracket[0].t,
            bracket[0].f,
            bracket[0].gtd,
            bracket[1].t,
            bracket[1].f,
            bracket[1].gtd,
            None,
        );
        let (bmax, bmin) = (bracket[0].t.max(bracket[1].t), bracket[0].t.min(bracket[1].t));
        let eps = 0.1 * (bmax - bmin);
        if (bmax - t).min(t - bmin) < eps {
            if insuf_progress || t >= bmax || t <= bmin {
                t = if (t - bmax).abs() < (t - bmin).abs() { bmax - eps } else { bmin + eps };
                insuf_progress = false;
            } else {
                insuf_progress = true;
            }
        } else {
            insuf_progress = false;
        }
        (f_new, g_new) = obj.directional(x, t, d)?;
        evals += 1;
        gtd_new = dot(&g_new, d);
        ls_iter += 1;
        let here = Point { t, f: f_new, g: g_new.clone(), gtd: gtd_new };
        if f_new > f + C1 * t * gtd || f_new >= bracket[low].f {
            bracket[high] = here;
            (low, high) = if bracket[0].f <= bracket[1].f { (0, 1) } else { (1, 0) };
        } else {
            if gtd_new.abs() <= -C2 * gtd {
                done = true;
            } else if gtd_new * (bracket[high].t - bracket[low].t) >= 0.0 {
                bracket[high] = bracket[low].clone();
            }
            bracket[low] = here;
        }
    }
    let best = bracket.swap_remove(if bracket.len() == 1 { 0 } else { low });
    Ok((best.f, best.g, best.t, evals))
}

impl Lbfgs {
    fn check(&self) -> Result<()> {
        let bad = |arg, reason| Err(Error::InvalidArgument { op: OP, arg, reason });
        if self.lr.is_nan() || self.lr < 0.0 {
            return bad("lr", "must be >= 0");
        }
        if self.max_iter == 0 {
            return bad("max_iter", "must be positive");
        }
        if self.history_size == 0 {
            return bad("history_size", "must be positive");
        }
        Ok(())
    }
}

impl Optimizer for Lbfgs {
    fn step<F>(&mut self, params: &mut [Param], loss: F) -> Result<f64>
    where
        F: FnMut(&[Tensor]) -> Result<Tensor>,
    {
        self.step_with_progress(params, loss, |_, _| {})
    }
}

impl Lbfgs {
    /// [`Optimizer::step`], calling `progress(iteration, loss)` after each iteration with
    /// the iteration number (over all steps) and the loss at the new point.
    ///
    /// Errors: as [`Optimizer::step`].
    #[allow(clippy::too_many_lines)]
    pub fn step_with_progress<F, P>(
        &mut self,
        params: &mut [Param],
        loss: F,
        mut progress: P,
    ) -> Result<f64>
    where
        F: FnMut(&[Tensor]) -> Result<Tensor>,
        P: FnMut(usize, f64),
    {
        self.check()?;
        match &self.state.sig {
            None => self.state.sig = Some(signature(params)),
            Some(sig) => check_signature(OP, sig, params)?,
        }
        let max_eval = self.max_eval.unwrap_or(self.max_iter * 5 / 4);
        let (lr, tol_grad, tol_change) = (self.lr, self.tolerance_grad, self.tolerance_change);
        let mut obj = Objective { params, loss, maximize: self.maximize };
        let st = &mut self.state;

        let (mut loss, mut flat_grad) = obj.eval()?;
        let orig_loss = if self.maximize { -loss } else { loss };
        let mut current_evals = 1;
        st.func_evals += 1;
        if max_abs(&flat_grad) <= tol_grad {
            return Ok(orig_loss);
        }
        let mut n_iter = 0;
        while n_iter < self.max_iter {
            n_iter += 1;
            st.n_iter += 1;
            if st.n_iter == 1 {
                st.d = flat_grad.iter().map(|v| -v).collect();
                st.old_dirs.clear();
                st.old_stps.clear();
                st.ro.clear();
                st.h_diag = 1.0;
            } else {
                let y: Vec<f64> =
                    flat_grad.iter().zip(&st.prev_flat_grad).map(|(a, b)| a - b).collect();
                let s: Vec<f64> = st.d.iter().map(|v| v * st.t).collect();
                let ys = dot(&y, &s);
                if ys > 1e-10 {
                    if st.old_dirs.len() == self.history_size {
                        st.old_dirs.remove(0);
                        st.old_stps.remove(0);
                        st.ro.remove(0);
                    }
                    st.h_diag = ys / dot(&y, &y);
                    st.old_dirs.push(y);
                    st.old_stps.push(s);
                    st.ro.push(1.0 / ys);
                }
                // two-loop recursion: d = −H g
                let num_old = st.old_dirs.len();
                let mut al = vec![0.0; num_old];
                let mut q: Vec<f64> = flat_grad.iter().map(|v| -v).collect();
                for i in (0..num_old).rev() {
                    al[i] = dot(&st.old_stps[i], &q) * st.ro[i];
                    for (qv, yv) in q.iter_mut().zip(&st.old_dirs[i]) {
                        *qv += -al[i] * yv;
                    }
                }
                let mut r: Vec<f64> = q.iter().map(|v| v * st.h_diag).collect();
                for (((y, s), ro), al) in st.old_dirs.iter().zip(&st.old_stps).zip(&st.ro).zip(&al)
                {
                    let be_i = dot(y, &r) * ro;
                    for (rv, sv) in r.iter_mut().zip(s) {
                        *rv += (al - be_i) * sv;
                    }
                }
                st.d = r;
            }
            st.prev_flat_grad.clone_from(&flat_grad);
            st.prev_loss = loss;
            st.t = if st.n_iter == 1 {
                let l1: f64 = flat_grad.iter().map(|v| v.abs()).sum();
                (1.0f64).min(1.0 / l1) * lr
            } else {
                lr
            };
            let gtd = dot(&flat_grad, &st.d);
            if gtd > -tol_change {
                break;
            }
            let mut ls_func_evals = 0;
            let mut opt_cond = false;
            match self.line_search {
                LineSearch::StrongWolfe => {
                    let x = obj.get();
                    let (l, g, t, evals) = strong_wolfe(
                        &mut obj,
                        &x,
                        st.t,
                        &st.d,
                        loss,
                        &flat_grad,
                        gtd,
                        max_eval.saturating_sub(current_evals),
                        tol_change,
                    )?;
                    (loss, flat_grad, st.t, ls_func_evals) = (l, g, t, evals);
                    let moved: Vec<f64> = x.iter().zip(&st.d).map(|(a, b)| a + st.t * b).collect();
                    obj.set(&moved)?;
                    opt_cond = max_abs(&flat_grad) <= tol_grad;
                }
                LineSearch::None => {
                    let x = obj.get();
                    let moved: Vec<f64> = x.iter().zip(&st.d).map(|(a, b)| a + st.t * b).collect();
                    obj.set(&moved)?;
                    if n_iter != self.max_iter {
                        (loss, flat_grad) = obj.eval()?;
                        opt_cond = max_abs(&flat_grad) <= tol_grad;
                        ls_func_evals = 1;
                    }
                }
            }
            current_evals += ls_func_evals;
            st.func_evals += ls_func_evals;
            if ls_func_evals > 0 {
                progress(st.n_iter, if self.maximize { -loss } else { loss });
            }
            if n_iter == self.max_iter
                || current_evals >= max_eval
                || opt_cond
                || st.d.iter().fold(0.0f64, |m, v| m.max((v * st.t).abs())) <= tol_change
                || (loss - st.prev_loss).abs() < tol_change
            {
                break;
            }
        }
        Ok(orig_loss)
    }
}

super::setters!(Lbfgs {
    /// Sets the learning rate.
    lr: f64,
    /// Sets the iterations per step.
    max_iter: usize,
    /// Sets the evaluations per step.
    max_eval: Option<usize>,
    /// Sets the gradient tolerance.
    tolerance_grad: f64,
    /// Sets the change tolerance.
    tolerance_change: f64,
    /// Sets the history size.
    history_size: usize,
    /// Sets the line search.
    line_search: LineSearch,
    /// Maximises instead.
    maximize: bool,
});
