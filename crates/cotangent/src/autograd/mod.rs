//! Reverse-mode automatic differentiation, to any order.
//!
//! Ops on tensors that [require grad](crate::Tensor::requires_grad) record a graph of
//! nodes. [`Tensor::backward`] (for a scalar) and [`grad`] (for any outputs, with given
//! cotangents) walk it backwards and return gradients as values: there is no `.grad`
//! field to mutate. With [`GradOptions::create_graph`] the backward pass is itself
//! recorded, so gradients can be differentiated again (Hessian-vector products, third
//! derivatives).
//!
//! Semantics follow PyTorch's `torch.autograd.grad`:
//! - every VJP is written with differentiable tensor ops, so higher orders need nothing
//!   special;
//! - a node has several outputs, any of which may receive no cotangent (treated as zero);
//! - outputs of integer or bool dtype (pivots, ranks, comparison results) never carry
//!   gradients: asking for one is an error ([`Error::NoGradFn`] or
//!   [`Error::InputNoGrad`]), never a silent zero;
//! - gradients reaching an input along several paths are summed;
//! - the traversal is iterative (a chain of any length works) and deterministic;
//! - the graph lives as long as some tensor refers to it and is freed with them.
//!
//! Complex numbers (when their arithmetic lands) follow PyTorch's convention: the
//! gradient is the conjugate Wirtinger derivative, and a real input that receives a
//! complex cotangent takes its real part.

pub(crate) mod check;
pub(crate) mod engine;
pub mod forward;
mod function;
pub(crate) mod mode;
pub(crate) mod node;
#[cfg(test)]
mod tests;

pub use check::{gradcheck, gradcheck_forward, gradgradcheck, GradcheckOptions, GradcheckReport};
pub use function::{Function, FunctionCtx};
pub use mode::{enable_grad, is_grad_enabled, no_grad, GradModeGuard};

use crate::error::{Error, Result};
use crate::tensor::{Tensor, TensorId};

/// Options of [`grad`].
#[derive(Debug, Clone, Copy, Default)]
pub struct GradOptions {
    /// Record the backward pass so the returned gradients can be differentiated again.
    pub create_graph: bool,
    /// Return `None` for inputs that the outputs do not depend on, instead of failing with
    /// [`Error::UnusedInput`].
    pub allow_unused: bool,
}

/// Gradients of the leaves reached by [`Tensor::backward`], looked up by tensor.
#[derive(Debug, Default, Clone)]
pub struct Gradients {
    map: engine::KeyMap<TensorId, Tensor>,
}

impl Gradients {
    /// The gradient of `t`, or `None` if the output does not depend on it (or it does not
    /// require grad).
    pub fn get(&self, t: &Tensor) -> Option<&Tensor> {
        self.map.get(&t.id())
    }

    /// The number of leaves with a gradient.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if no leaf received a gradient.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

fn check_output(index: usize, t: &Tensor) -> Result<()> {
    if !t.requires_grad() {
        return Err(Error::NoGradFn { index });
    }
    Ok(())
}

/// The cotangent `g` of output `t`, in `t`'s dtype: a real cotangent of a real output is
/// cast to it (integers and bools included), as PyTorch's engine casts; where either is
/// complex the dtypes must be equal (PyTorch's rule).
fn cotangent_for(t: &Tensor, g: &Tensor) -> Result<Tensor> {
    const OP: &str = "autograd.grad";
    if t.dims() != g.dims() {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: t.shape().clone(),
            rhs: g.shape().clone(),
        });
    }
    if t.dtype() == g.dtype() {
        return Ok(g.clone());
    }
    if t.dtype().is_complex() || g.dtype().is_complex() {
        return Err(Error::DTypeMismatch { op: OP, lhs: t.dtype(), rhs: g.dtype() });
    }
    g.to_dtype(t.dtype())
}

impl Tensor {
    /// Gradients of this scalar with respect to every leaf that requires grad
    /// (`torch.Tensor.backward()`, returning the gradients instead of storing them).
    ///
    /// Errors: `NonScalarBackward` if the tensor has more than one element (use
    /// [`Tensor::backward_with`]); `NoGradFn` if it does not require grad.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let x = Tensor::from_vec(vec![3.0f64], ())?.with_requires_grad(true)?;
    /// let y = x.mul(&x)?.mul(&x)?; // y = x³
    /// let g = y.backward()?;
    /// assert_eq!(g.get(&x).unwrap().item::<f64>()?, 27.0); // 3x²
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn backward(&self) -> Result<Gradients> {
        if self.numel() != 1 {
            return Err(Error::NonScalarBackward { shape: self.shape().clone() });
        }
        real_seed("backward", self)?;
        let ones = Tensor::ones(self.shape().clone(), self.dtype())?;
        self.backward_with(&ones)
    }

    /// The gradient of this one-element tensor with respect to `x`, in one line: `y =
    /// f(x)`, `y.grad_wrt(&x)?` is `torch.autograd.grad(y, x)[0]` (no graph recorded for
    /// the gradient; [`grad`] with `create_graph` for higher orders). `x` may be a leaf or
    /// an intermediate tensor of `y`'s history.
    ///
    /// Errors: `NonScalarBackward` if this tensor has more than one element; `NoGradFn`
    /// if it does not require grad; `InputNoGrad` if `x` does not; `UnusedInput` if `y`
    /// does not depend on `x`.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?.with_requires_grad(true)?;
    /// let y = (&x * &x).sum()?;
    /// assert_eq!(y.grad_wrt(&x)?.to_vec::<f64>()?, vec![2.0, 4.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn grad_wrt(&self, x: &Tensor) -> Result<Tensor> {
        let mut g = grad(&[self], &[None], &[x], GradOptions::default())?;
        // `grad` returns one entry per input, `Some` unless unused (an error here)
        g.pop().flatten().ok_or(Error::UnusedInput { index: 0 })
    }

    /// Like [`Tensor::backward`] for any shape, with the output's cotangent given (cast
    /// to the output's dtype as [`grad`] casts it).
    ///
    /// Errors: as [`grad`].
    pub fn backward_with(&self, grad_output: &Tensor) -> Result<Gradients> {
        check_output(0, self)?;
        let grad_output = cotangent_for(self, grad_output)?;
        let out = engine::run(&[(self.clone(), grad_output)], &engine::Targets::AllLeaves, false)?;
        Ok(Gradients { map: out.leaves })
    }
}

/// A cotangent of 1 is implied only for a real output: the gradient of a complex scalar
/// is not one number (PyTorch: "grad can be implicitly created only for real scalar
/// outputs"); a loss is made real first (`real`, `abs`), or the cotangent given.
fn real_seed(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_complex() {
        return Err(Error::InvalidArgument {
            op,
            arg: "outputs",
            reason:
                "a cotangent is implied only for real scalar outputs; pass one for a complex output",
        });
    }
    Ok(())
}

/// Gradients of `outputs` with respect to `inputs` (`torch.autograd.grad`).
///
/// The result is `Σ_k J_kᵀ g_k` for each input, where `J_k` is the Jacobian of output `k`
/// and `g_k` its cotangent (`grad_outputs[k]`; `None` is allowed for one-element outputs
/// and means 1). Inputs may be leaves or intermediate tensors.
///
/// Errors: `NoGradFn` if an output does not require grad; `InputNoGrad` if an input does
/// not; `UnusedInput` if an input is not reached and `allow_unused` is false;
/// `ShapeMismatch` if a cotangent's shape differs from its output's; `DTypeMismatch` if
/// a cotangent's dtype differs from its complex output's, or is complex for a real output
/// (a real cotangent of a real output is cast to its dtype, as PyTorch casts);
/// `NonScalarBackward` for a missing cotangent of a non-scalar output.
///
/// ```
/// # use cotangent::{Tensor, autograd::{self, GradOptions}};
/// // d/dx (x³) = 3x², d²/dx² = 6x
/// let x = Tensor::from_vec(vec![2.0f64], ())?.with_requires_grad(true)?;
/// let y = x.pow_scalar(3.0)?;
/// let opts = GradOptions { create_graph: true, allow_unused: false };
/// let dy = autograd::grad(&[&y], &[None], &[&x], opts)?[0].clone().unwrap();
/// let d2y = autograd::grad(&[&dy], &[None], &[&x], GradOptions::default())?[0].clone().unwrap();
/// assert_eq!((dy.item::<f64>()?, d2y.item::<f64>()?), (12.0, 12.0));
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn grad(
    outputs: &[&Tensor],
    grad_outputs: &[Option<&Tensor>],
    inputs: &[&Tensor],
    opts: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if grad_outputs.len() != outputs.len() {
        return Err(Error::InvalidArgument {
            op: "autograd.grad",
            arg: "grad_outputs",
            reason: "needs one entry per output",
        });
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (k, (&t, g)) in outputs.iter().zip(grad_outputs).enumerate() {
        check_output(k, t)?;
        let g = match g {
            Some(g) => cotangent_for(t, g)?,
            None if t.numel() == 1 => {
                real_seed("grad", t)?;
                Tensor::ones(t.shape().clone(), t.dtype())?
            }
            None => return Err(Error::NonScalarBackward { shape: t.shape().clone() }),
        };
        roots.push((t.clone(), g));
    }
    for (k, t) in inputs.iter().enumerate() {
        if !t.requires_grad() {
            return Err(Error::InputNoGrad { index: k });
        }
    }
    let out = engine::run(&roots, &engine::Targets::Tensors(inputs), opts.create_graph)?;
    let mut res = Vec::with_capacity(inputs.len());
    for (k, t) in inputs.iter().enumerate() {
        let g = if t.is_leaf() {
            out.leaves.get(&t.id()).cloned()
        } else {
            out.non_leaves.get(&k).cloned()
        };
        if g.is_none() && !opts.allow_unused {
            return Err(Error::UnusedInput { index: k });
        }
        res.push(g);
    }
    Ok(res)
}

/// The number of autograd graph nodes alive in the process, all threads together: each
/// recorded op application is one node, kept while a tensor of its history (an output,
/// or a tensor computed from one) or a node depending on it lives. A diagnostic: a
/// count that grows across iterations of a loop that should not keep history (a missing
/// `detach` or `no_grad`) is a leak of graphs. Nodes are freed as soon as nothing refers
/// to them (no collector).
///
/// ```
/// use cotangent::{autograd, Tensor};
/// let before = autograd::live_nodes();
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?.with_requires_grad(true)?;
/// let y = x.exp()?.sum()?; // two nodes
/// assert!(autograd::live_nodes() >= before + 2); // other threads may record too
/// drop(y);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn live_nodes() -> usize {
    node::LIVE.load(std::sync::atomic::Ordering::Relaxed)
}
