//! Optimisers: [`Param`] (a tensor an optimiser may replace) and [`Sgd`], [`Adam`],
//! [`Lbfgs`] with PyTorch's defaults and update rules (`torch.optim`).
//!
//! Tensors are immutable, so a parameter is a slot holding a leaf tensor that requires
//! grad; each step replaces it with a new leaf. A step takes a closure that computes the
//! loss (a one-element tensor) from the current parameter tensors; the optimiser
//! differentiates it with [`crate::autograd::grad`]. This is PyTorch's `closure`
//! convention, used by all three optimisers, so they can be swapped freely.
//!
//! ```
//! use cotangent::optim::{Adam, Optimizer, Param};
//! use cotangent::Tensor;
//! // minimise (x - 3)² from x = 0
//! let mut params = vec![Param::new(&Tensor::from_vec(vec![0.0f64], 1)?)?];
//! let mut adam = Adam::new(0.1);
//! for _ in 0..500 {
//!     adam.step(&mut params, |p| p[0].sub_scalar(3.0)?.square()?.sum())?;
//! }
//! assert!((params[0].tensor().to_vec::<f64>()?[0] - 3.0).abs() < 1e-3);
//! # Ok::<(), cotangent::Error>(())
//! ```

/// Builder methods named after the settings, so that `Sgd::new(0.1).momentum(0.9)` reads
/// as PyTorch's keyword arguments (the fields stay public for schedules).
macro_rules! setters {
    ($ty:ty { $($(#[$m:meta])* $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                $(#[$m])*
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
pub(crate) use setters;

mod adam;
mod lbfgs;
mod sgd;

pub use adam::Adam;
pub use lbfgs::{Lbfgs, LineSearch};
pub use sgd::Sgd;

use crate::autograd::{self, GradOptions};
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::DType;

/// A trainable tensor: a leaf that requires grad, which an optimiser replaces by a new
/// value at each step (the `Var` of candle, the `nn.Parameter` of PyTorch).
#[derive(Debug, Clone)]
pub struct Param {
    value: Tensor,
}

impl Param {
    /// A parameter starting at `value` (detached from any history; f32, f64, bf16 or f16).
    ///
    /// Errors: `UnsupportedDType` for integer, boolean or complex tensors.
    pub fn new(value: &Tensor) -> Result<Param> {
        let dt = value.dtype();
        if !dt.is_floating_point() || dt.is_complex() {
            return Err(Error::UnsupportedDType { op: "optim.Param", dtype: dt });
        }
        Ok(Param { value: value.detach().with_requires_grad(true)? })
    }

    /// The current value (a leaf that requires grad).
    #[must_use]
    pub fn tensor(&self) -> &Tensor {
        &self.value
    }

    /// Replaces the value (detached; it must keep the shape and dtype).
    ///
    /// Errors: `ShapeMismatch` or `DTypeMismatch` if they change.
    pub fn set(&mut self, value: &Tensor) -> Result<()> {
        if value.shape() != self.value.shape() {
            return Err(Error::ShapeMismatch {
                op: "optim.Param.set",
                lhs: self.value.shape().clone(),
                rhs: value.shape().clone(),
            });
        }
        if value.dtype() != self.value.dtype() {
            return Err(Error::DTypeMismatch {
                op: "optim.Param.set",
                lhs: self.value.dtype(),
                rhs: value.dtype(),
            });
        }
        self.value = value.detach().with_requires_grad(true)?;
        Ok(())
    }
}

/// An optimiser: one [`step`](Optimizer::step) evaluates the loss (once for SGD and Adam,
/// as often as its line search needs for L-BFGS) and updates the parameters.
pub trait Optimizer {
    /// Takes one optimisation step. `loss` computes the loss, a one-element float tensor,
    /// from the current parameter tensors (in `params` order). Returns the loss at the
    /// parameters the step started from (PyTorch's `step(closure)` return value).
    ///
    /// Errors: whatever `loss` returns; `UnsupportedDType` if it is not floating-point;
    /// `BadShape` if it is not one element;
    /// `InvalidArgument` if the parameters differ in number, shape or dtype from those of
    /// the first step (the state belongs to them); `NotDifferentiable` style errors of the
    /// backward pass.
    fn step<F>(&mut self, params: &mut [Param], loss: F) -> Result<f64>
    where
        F: FnMut(&[Tensor]) -> Result<Tensor>;
}

/// The loss and the gradient of each parameter (zeros where the loss does not depend on
/// it), with grad mode on whatever the caller's mode.
pub(crate) fn loss_and_grads<F>(params: &[Param], loss: &mut F) -> Result<(f64, Vec<Tensor>)>
where
    F: FnMut(&[Tensor]) -> Result<Tensor>,
{
    let _g = autograd::enable_grad();
    let xs: Vec<Tensor> = params.iter().map(|p| p.value.clone()).collect();
    let l = loss(&xs)?;
    if !l.dtype().is_floating_point() {
        return Err(Error::UnsupportedDType { op: "optim.step", dtype: l.dtype() });
    }
    if l.numel() != 1 {
        return Err(Error::BadShape {
            op: "optim.step",
            expected: "a loss with one floating-point element",
            got: l.shape().clone(),
        });
    }
    let value = l.to_vec_f64()[0];
    if !l.requires_grad() {
        // the loss does not depend on any parameter
        let zeros = xs
            .iter()
            .map(|x| Tensor::zeros(x.shape().clone(), x.dtype()))
            .collect::<Result<_>>()?;
        return Ok((value, zeros));
    }
    let l = l.reshape(Shape::new(vec![]))?;
    let refs: Vec<&Tensor> = xs.iter().collect();
    let gs = autograd::grad(
        &[&l],
        &[None],
        &refs,
        GradOptions { create_graph: false, allow_unused: true },
    )?;
    let grads = gs
        .into_iter()
        .zip(&xs)
        .map(|(g, x)| match g {
            Some(g) => Ok(g.detach()),
            None => Tensor::zeros(x.shape().clone(), x.dtype()),
        })
        .collect::<Result<_>>()?;
    Ok((value, grads))
}

/// The shapes and dtypes of the parameters an optimiser's state was built for.
pub(crate) type Signature = Vec<(Shape, DType)>;

/// The signature of the parameters a state was built for.
pub(crate) fn signature(params: &[Param]) -> Signature {
    params.iter().map(|p| (p.value.shape().clone(), p.value.dtype())).collect()
}

/// `InvalidArgument` unless there is one gradient per parameter; `ShapeMismatch` unless
/// each has its parameter's shape (a gradient must not broadcast into its parameter).
pub(crate) fn check_grads(op: &'static str, params: &[Param], grads: &[Tensor]) -> Result<()> {
    if grads.len() != params.len() {
        return Err(Error::InvalidArgument {
            op,
            arg: "grads",
            reason: "needs one gradient per parameter",
        });
    }
    for (p, g) in params.iter().zip(grads) {
        if g.shape() != p.value.shape() {
            return Err(Error::ShapeMismatch {
                op,
                lhs: p.value.shape().clone(),
                rhs: g.shape().clone(),
            });
        }
    }
    Ok(())
}

/// `InvalidArgument` if `params` no longer match the optimiser's state.
pub(crate) fn check_signature(op: &'static str, have: &Signature, params: &[Param]) -> Result<()> {
    if have.len() != params.len()
        || have.iter().zip(params).any(|((s, d), p)| s != p.value.shape() || *d != p.value.dtype())
    {
        return Err(Error::InvalidArgument {
            op,
            arg: "params",
            reason: "the parameters differ in number, shape or dtype from those of the first step",
        });
    }
    Ok(())
}
