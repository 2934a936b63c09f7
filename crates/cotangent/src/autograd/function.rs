//! Custom differentiable operations ([`Function`], as `torch.autograd.Function` and
//! candle's `CustomOp`): a forward computed however the user likes, with a backward
//! (VJP) and optionally a forward-mode rule (JVP) written in tensor ops, recorded in the
//! graph like the library's own ops.

use super::forward::JvpCtx;
use super::mode::no_grad;
use super::node::{self, Op, VjpCtx};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A differentiable operation defined by the user: `forward` computes the outputs, and
/// `backward` (the vector-Jacobian product) their gradient, as `torch.autograd.Function`.
///
/// [`Function::apply`] runs `forward` on the inputs' data (no history, grad mode off, so
/// the forward may use any op, or data computed outside the library, without being
/// recorded), then records one node for the whole op: reverse mode calls `backward`,
/// forward mode calls `jvp`. Write `backward` and `jvp` with the library's tensor ops:
/// then gradients of gradients work too (`create_graph`, [`gradgradcheck`](super::gradgradcheck),
/// `func::hessian`), as for the built-in ops. State the op needs (constants, settings)
/// lives in the implementing struct; what it needs of the computation is in the
/// [`FunctionCtx`]: the inputs and the outputs.
///
/// ```
/// use cotangent::autograd::{self, Function, FunctionCtx};
/// use cotangent::{Result, Tensor};
///
/// /// y = x³, computed outside the library's ops.
/// struct Cube;
///
/// impl Function for Cube {
///     fn name(&self) -> &'static str {
///         "cube"
///     }
///     fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
///         let x = &inputs[0];
///         let y: Vec<f64> = x.to_vec::<f64>()?.iter().map(|v| v * v * v).collect();
///         Ok(vec![Tensor::from_vec(y, x.shape().clone())?])
///     }
///     fn backward(&self, cx: &FunctionCtx<'_>, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
///         let (x, g) = (cx.input(0), grads[0].as_ref());
///         // dy/dx = 3x², in tensor ops so that it can be differentiated again
///         Ok(vec![g.map(|g| g.mul(&x.square()?.mul_scalar(3.0)?)).transpose()?])
///     }
///     fn jvp(&self, cx: &FunctionCtx<'_>, tangents: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
///         let x = cx.input(0);
///         Ok(vec![tangents[0].as_ref().map(|t| t.mul(&x.square()?.mul_scalar(3.0)?)).transpose()?])
///     }
/// }
///
/// let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?.with_requires_grad(true)?;
/// let y = Cube.apply(&[&x])?.remove(0);
/// assert_eq!(y.sum()?.grad_wrt(&x)?.to_vec::<f64>()?, vec![3.0, 12.0]);
/// // the finite-difference checks work on it, first and second order, both modes
/// let f = |p: &[Tensor]| Cube.apply(&[&p[0]]);
/// let opts = autograd::GradcheckOptions::default();
/// assert!(autograd::gradcheck(f, &[x.clone()], &opts)?.passed);
/// assert!(autograd::gradgradcheck(f, &[x.clone()], &opts)?.passed);
/// assert!(autograd::gradcheck_forward(f, &[x], &opts)?.passed);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub trait Function: Send + Sync + 'static {
    /// The op's name, used in errors (`"<name>: ..."`) and in
    /// [`Tensor::grad_fn_name`](crate::Tensor::grad_fn_name).
    fn name(&self) -> &'static str;

    /// The outputs (at least one) for the inputs. The inputs come without history and
    /// the forward runs with grad mode off: nothing it does is recorded.
    fn forward(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>>;

    /// The vector-Jacobian product: `grads[k]` is the cotangent of output `k` (`None`:
    /// zero, the output was not used); returns one entry per input, the gradient (of the
    /// input's shape) or `None` for zero or not needed
    /// ([`FunctionCtx::needs_input_grad`]). A gradient of another real dtype than its
    /// input's is cast to it.
    fn backward(
        &self,
        cx: &FunctionCtx<'_>,
        grads: &[Option<Tensor>],
    ) -> Result<Vec<Option<Tensor>>>;

    /// The Jacobian-vector product (forward mode): `tangents[i]` is the tangent of input
    /// `i` (`None`: zero); returns one entry per output, its tangent or `None` for zero.
    /// The default refuses with `NotDifferentiable`, as PyTorch refuses forward mode
    /// through a `Function` without `jvp`.
    fn jvp(
        &self,
        cx: &FunctionCtx<'_>,
        tangents: &[Option<Tensor>],
    ) -> Result<Vec<Option<Tensor>>> {
        let _ = (cx, tangents);
        Err(super::forward::no_rule(self.name()))
    }

    /// Applies the op to `inputs`: runs [`Function::forward`] on their data and records
    /// the application for reverse and forward mode when an input requires grad or
    /// carries a tangent.
    ///
    /// Errors: those of `forward`; `InvalidArgument` (naming the op) if it returns no
    /// output; those of `jvp` when an input carries a tangent.
    fn apply(self, inputs: &[&Tensor]) -> Result<Vec<Tensor>>
    where
        Self: Sized,
    {
        let outputs = {
            let _off = no_grad();
            let data: Vec<Tensor> = inputs.iter().map(|t| t.detach()).collect();
            self.forward(&data)?
        };
        if outputs.is_empty() {
            return Err(Error::InvalidArgument {
                op: self.name(),
                arg: "forward",
                reason: "a Function's forward must return at least one output",
            });
        }
        node::record(Custom(self), inputs, outputs, true)
    }
}

/// What [`Function::backward`] and [`Function::jvp`] see of the op's application.
#[derive(Clone, Copy)]
pub struct FunctionCtx<'a>(Ctx<'a>);

#[derive(Clone, Copy)]
enum Ctx<'a> {
    Vjp(&'a VjpCtx<'a>),
    Jvp(&'a JvpCtx<'a>),
}

impl std::fmt::Debug for FunctionCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Ctx::Vjp(_) => "FunctionCtx(backward)",
            Ctx::Jvp(_) => "FunctionCtx(jvp)",
        })
    }
}

impl FunctionCtx<'_> {
    /// Input `i`, with its history (so that a backward written in tensor ops is
    /// differentiable again).
    pub fn input(&self, i: usize) -> &Tensor {
        match self.0 {
            Ctx::Vjp(cx) => cx.input(i),
            Ctx::Jvp(cx) => cx.input(i),
        }
    }

    /// Output `i` (as `ctx.save_for_backward` of an output in PyTorch), linked to the
    /// op's node when the backward pass is itself recorded.
    ///
    /// Errors: `Internal` only if the library failed to keep it.
    pub fn output(&self, i: usize) -> Result<Tensor> {
        match self.0 {
            Ctx::Vjp(cx) => cx.output(i),
            Ctx::Jvp(cx) => Ok(cx.output(i).clone()),
        }
    }

    /// Whether input `i` needs a gradient (`ctx.needs_input_grad`); a backward may return
    /// `None` for those that do not. Always true in `jvp`.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        match self.0 {
            Ctx::Vjp(cx) => cx.needs_input_grad(i),
            Ctx::Jvp(_) => true,
        }
    }
}

/// The library's side of a [`Function`]: the node's op.
struct Custom<F>(F);

impl<F: Function> std::fmt::Debug for Custom<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({})", self.0.name())
    }
}

impl<F: Function> Custom<F> {
    /// `got` as the derivatives of `like` (one each, the same shapes; real dtypes cast):
    /// what the engine may rely on, checked because user code made them.
    fn checked(
        &self,
        what: &'static str,
        got: Vec<Option<Tensor>>,
        like: &[Tensor],
    ) -> Result<Vec<Option<Tensor>>> {
        let op = self.0.name();
        if got.len() != like.len() {
            return Err(Error::InvalidArgument {
                op,
                arg: what,
                reason: "must return one entry (or None) per input of backward, per output of jvp",
            });
        }
        got.into_iter()
            .zip(like)
            .map(|(g, t)| {
                let Some(g) = g else { return Ok(None) };
                if g.shape() != t.shape() {
                    return Err(Error::ShapeMismatch {
                        op,
                        lhs: g.shape().clone(),
                        rhs: t.shape().clone(),
                    });
                }
                if g.dtype() == t.dtype() {
                    return Ok(Some(g));
                }
                if g.dtype().is_complex() != t.dtype().is_complex() {
                    return Err(Error::DTypeMismatch { op, lhs: g.dtype(), rhs: t.dtype() });
                }
                g.to_dtype(t.dtype()).map(Some)
            })
            .collect()
    }
}

impl<F: Function> Op for Custom<F> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn vjp(&self, cx: &VjpCtx<'_>, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let got = self.0.backward(&FunctionCtx(Ctx::Vjp(cx)), grads)?;
        self.checked("backward", got, &cx.node.inputs[..])
    }

    fn jvp(&self, cx: &JvpCtx<'_>, tangents: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let got = self.0.jvp(&FunctionCtx(Ctx::Jvp(cx)), tangents)?;
        self.checked("jvp", got, cx.outputs())
    }
}
