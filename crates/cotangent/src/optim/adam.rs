//! Adam (`torch.optim.Adam`).

use super::{check_grads, check_signature, loss_and_grads, signature, Optimizer, Param, Signature};
use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const OP: &str = "optim.Adam";

#[derive(Debug, Clone)]
struct Moments {
    m: Tensor,
    v: Tensor,
    vmax: Option<Tensor>,
}

/// Adam (Kingma and Ba, 2015) exactly as `torch.optim.Adam` (defaults: `lr = 1e-3`,
/// `betas = (0.9, 0.999)`, `eps = 1e-8`, no weight decay, no AMSGrad):
///
/// `g ← ∇ + λ θ`; `m ← m + (1 − β₁)(g − m)`; `v ← β₂ v + (1 − β₂) g²`;
/// `θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)` (with AMSGrad, `v` replaced by its
/// running maximum).
#[derive(Debug, Clone)]
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates (β₁, β₂) of the first and second moments.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty λ (added to the gradient, as `torch.optim.Adam`; not AdamW's decoupled
    /// decay).
    pub weight_decay: f64,
    /// Use the running maximum of the second moment (AMSGrad).
    pub amsgrad: bool,
    /// Maximise the objective instead.
    pub maximize: bool,
    steps: u64,
    state: Option<(Signature, Vec<Moments>)>,
}

impl Default for Adam {
    fn default() -> Adam {
        Adam::new(1e-3)
    }
}

impl Adam {
    /// Adam with learning rate `lr` and PyTorch's other defaults.
    #[must_use]
    pub fn new(lr: f64) -> Adam {
        Adam {
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            steps: 0,
            state: None,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |arg, reason| Err(Error::InvalidArgument { op: OP, arg, reason });
        if self.lr.is_nan() || self.lr < 0.0 {
            return bad("lr", "must be >= 0");
        }
        if self.eps.is_nan() || self.eps < 0.0 {
            return bad("eps", "must be >= 0");
        }
        if !(0.0..1.0).contains(&self.betas.0) || !(0.0..1.0).contains(&self.betas.1) {
            return bad("betas", "must be in [0, 1)");
        }
        if self.weight_decay.is_nan() || self.weight_decay < 0.0 {
            return bad("weight_decay", "must be >= 0");
        }
        Ok(())
    }

    /// One update from given gradients (one per parameter). [`Optimizer::step`] calls it.
    ///
    /// Errors: `InvalidArgument` for invalid settings or parameters that changed since
    /// the first step; `ShapeMismatch` if a gradient does not match its parameter.
    pub fn update(&mut self, params: &mut [Param], grads: &[Tensor]) -> Result<()> {
        self.check()?;
        check_grads(OP, params, grads)?;
        let _g = no_grad();
        if self.state.is_none() {
            let moments = params
                .iter()
                .map(|p| {
                    let z = Tensor::zeros(p.tensor().shape().clone(), p.tensor().dtype())?;
                    Ok(Moments { m: z.clone(), v: z.clone(), vmax: self.amsgrad.then_some(z) })
                })
                .collect::<Result<Vec<_>>>()?;
            self.state = Some((signature(params), moments));
        }
        let Some((sig, moments)) = self.state.as_mut() else { return Ok(()) };
        check_signature(OP, sig, params)?;
        self.steps += 1;
        let t = self.steps as f64;
        let (b1, b2) = self.betas;
        let bc1 = 1.0 - b1.powf(t);
        let bc2_sqrt = (1.0 - b2.powf(t)).sqrt();
        let step_size = self.lr / bc1;
        for ((p, g), st) in params.iter_mut().zip(grads).zip(moments.iter_mut()) {
            let theta = p.tensor().detach();
            let mut g = if self.maximize { g.neg()? } else { g.clone() };
            if self.weight_decay != 0.0 {
                g = g.add(&theta.mul_scalar(self.weight_decay)?)?;
            }
            // lerp with weight 1 − β₁ (< 0.5): m + w (g − m), as PyTorch computes it
            st.m = st.m.add(&g.sub(&st.m)?.mul_scalar(1.0 - b1)?)?;
            st.v = st.v.mul_scalar(b2)?.add(&g.mul(&g)?.mul_scalar(1.0 - b2)?)?;
            let v = match &mut st.vmax {
                Some(vmax) => {
                    *vmax = vmax.maximum(&st.v)?;
                    vmax.clone()
                }
                None => st.v.clone(),
            };
            let denom = v.sqrt()?.div_scalar(bc2_sqrt)?.add_scalar(self.eps)?;
            let next = theta.sub(&st.m.div(&denom)?.mul_scalar(step_size)?)?;
            p.set(&next.to_dtype(theta.dtype())?)?;
        }
        Ok(())
    }
}

impl Optimizer for Adam {
    fn step<F>(&mut self, params: &mut [Param], mut loss: F) -> Result<f64>
    where
        F: FnMut(&[Tensor]) -> Result<Tensor>,
    {
        let (l, grads) = loss_and_grads(params, &mut loss)?;
        self.update(params, &grads)?;
        Ok(l)
    }
}

super::setters!(Adam {
    /// Sets the moment decay rates.
    betas: (f64, f64),
    /// Sets the denominator's epsilon.
    eps: f64,
    /// Sets the L2 penalty.
    weight_decay: f64,
    /// Turns AMSGrad on or off.
    amsgrad: bool,
    /// Maximises instead.
    maximize: bool,
});
