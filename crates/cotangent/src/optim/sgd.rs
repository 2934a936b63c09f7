//! Stochastic gradient descent with momentum (`torch.optim.SGD`).

use super::{check_grads, check_signature, loss_and_grads, signature, Optimizer, Param, Signature};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "optim.SGD";

/// SGD with momentum, dampening, Nesterov momentum and weight decay, exactly as
/// `torch.optim.SGD` (its defaults: `lr = 1e-3`, everything else off):
///
/// `g ← ∇ + λ θ` (weight decay λ; `−∇` when maximising); with momentum μ,
/// `b ← g` at the first step, then `b ← μ b + (1 − τ) g` (dampening τ), and `g ← g + μ b`
/// (Nesterov) or `g ← b`; finally `θ ← θ − lr g`.
///
/// ```
/// use cotangent::optim::{Optimizer, Param, Sgd};
/// use cotangent::Tensor;
/// let mut p = vec![Param::new(&Tensor::from_vec(vec![1.0f64, -2.0], 2)?)?];
/// let mut sgd = Sgd::new(0.1).momentum(0.9);
/// let before = sgd.step(&mut p, |x| x[0].square()?.sum())?; // loss 5 at the start
/// assert_eq!(before, 5.0);
/// assert_eq!(p[0].tensor().to_vec::<f64>()?, vec![0.8, -1.6]); // θ − 0.1 · 2θ
/// # Ok::<(), cotangent::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sgd {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor μ (0: none).
    pub momentum: f64,
    /// Dampening τ of the momentum.
    pub dampening: f64,
    /// L2 penalty λ.
    pub weight_decay: f64,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`).
    pub nesterov: bool,
    /// Maximise the objective instead.
    pub maximize: bool,
    state: Option<(Signature, Vec<Option<Tensor>>)>,
}

impl Default for Sgd {
    fn default() -> Sgd {
        Sgd::new(1e-3)
    }
}

impl Sgd {
    /// Plain SGD with learning rate `lr`.
    #[must_use]
    pub fn new(lr: f64) -> Sgd {
        Sgd {
            lr,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
            state: None,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |arg, reason| Err(Error::InvalidArgument { op: OP, arg, reason });
        if self.lr.is_nan() || self.lr < 0.0 {
            return bad("lr", "must be >= 0");
        }
        if self.momentum.is_nan() || self.momentum < 0.0 {
            return bad("momentum", "must be >= 0");
        }
        if self.weight_decay.is_nan() || self.weight_decay < 0.0 {
            return bad("weight_decay", "must be >= 0");
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return bad("nesterov", "needs a momentum and zero dampening");
        }
        Ok(())
    }

    /// One update from given gradients (one per parameter, each of its shape), for users
    /// who compute them themselves. [`Optimizer::step`] calls it.
    ///
    /// Errors: `InvalidArgument` for invalid settings or parameters that changed since
    /// the first step; `ShapeMismatch` if a gradient does not match its parameter.
    pub fn update(&mut self, params: &mut [Param], grads: &[Tensor]) -> Result<()> {
        self.check()?;
        check_grads(OP, params, grads)?;
        let (sig, bufs) =
            self.state.get_or_insert_with(|| (signature(params), vec![None; params.len()]));
        check_signature(OP, sig, params)?;
        let _g = no_grad();
        for ((p, g), buf) in params.iter_mut().zip(grads).zip(bufs.iter_mut()) {
            let theta = p.tensor().detach();
            let mut d = if self.maximize { g.neg()? } else { g.clone() };
            if self.weight_decay != 0.0 {
                d = d.add(&theta.mul_scalar(self.weight_decay)?)?;
            }
            if self.momentum != 0.0 {
                let b = match buf.take() {
                    None => d.clone(),
                    Some(b) => {
                        b.mul_scalar(self.momentum)?.add(&d.mul_scalar(1.0 - self.dampening)?)?
                    }
                };
                d = if self.nesterov { d.add(&b.mul_scalar(self.momentum)?)? } else { b.clone() };
                *buf = Some(b);
            }
            p.set(&theta.sub(&d.mul_scalar(self.lr)?)?.to_dtype(theta.dtype())?)?;
        }
        Ok(())
    }
}

impl Optimizer for Sgd {
    fn step<F>(&mut self, params: &mut [Param], mut loss: F) -> Result<f64>
    where
        F: FnMut(&[Tensor]) -> Result<Tensor>,
    {
        let (l, grads) = loss_and_grads(params, &mut loss)?;
        self.update(params, &grads)?;
        Ok(l)
    }
}

super::setters!(Sgd {
    /// Sets the momentum factor.
    momentum: f64,
    /// Sets the dampening.
    dampening: f64,
    /// Sets the L2 penalty.
    weight_decay: f64,
    /// Turns Nesterov momentum on or off.
    nesterov: bool,
    /// Maximises instead.
    maximize: bool,
});
