//! The graph: [`Op`] (a differentiable operation and its VJP), [`Node`] (one recorded
//! application of an op, with several outputs), and [`record`], which links outputs to
//! their node.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::mode::is_grad_enabled;
use crate::backend::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// A differentiable operation. One impl per op, next to the op's forward function.
pub(crate) trait Op: std::fmt::Debug + Send + Sync + 'static {
    /// The op's name (PyTorch's where there is one), used in errors and traces.
    fn name(&self) -> &'static str;

    /// Vector-Jacobian product. `grads[k]` is the cotangent of output `k`, `None` meaning
    /// zero (nobody used that output). Returns one entry per input, `None` meaning zero or
    /// not needed (see [`VjpCtx::needs_input_grad`]).
    ///
    /// Must be written with differentiable tensor ops, so that with `create_graph` it is
    /// recorded and can be differentiated again; a fast path that cannot is allowed only
    /// when `!cx.create_graph()`.
    fn vjp(&self, cx: &VjpCtx<'_>, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>>;
}

/// The producer of a non-leaf tensor: a node and which of its outputs the tensor is.
#[derive(Clone)]
pub(crate) struct GradFn {
    pub(crate) node: Arc<Node>,
    pub(crate) output: u32,
}

pub(crate) struct OutputSlot {
    pub(crate) shape: Shape,
    pub(crate) dtype: DType,
    pub(crate) differentiable: bool,
    /// The output's data, kept without its history (a tensor here would point back at
    /// this node: a reference cycle). [`VjpCtx::output`] re-links it.
    pub(crate) saved: Option<(Arc<Storage>, Layout)>,
}

/// One recorded application of an op.
pub(crate) struct Node {
    pub(crate) op: Box<dyn Op>,
    /// The inputs, with their history (they point to older nodes, so no cycle).
    pub(crate) inputs: Vec<Tensor>,
    pub(crate) outputs: Vec<OutputSlot>,
    /// Creation order: consumers always have a larger `seq` than their producers, so
    /// descending `seq` is a topological order of the backward pass.
    pub(crate) seq: u64,
}

impl Drop for Node {
    /// Drops long chains iteratively: a recursive drop of a 100,000-node chain would
    /// overflow the stack.
    fn drop(&mut self) {
        fn take(inputs: &mut Vec<Tensor>, stack: &mut Vec<Arc<Node>>) {
            for t in inputs.drain(..) {
                if let Ok(imp) = Arc::try_unwrap(t.0) {
                    if let Some(gf) = imp.grad_fn {
                        stack.push(gf.node);
                    }
                }
            }
        }
        let mut stack = Vec::new();
        take(&mut self.inputs, &mut stack);
        while let Some(node) = stack.pop() {
            if let Ok(mut node) = Arc::try_unwrap(node) {
                take(&mut node.inputs, &mut stack);
            }
        }
    }
}

/// What a VJP can see of its node.
pub(crate) struct VjpCtx<'a> {
    pub(crate) node: &'a Arc<Node>,
    pub(crate) create_graph: bool,
    pub(crate) needs: &'a [bool],
}

impl VjpCtx<'_> {
    /// Input `i`, with its history.
    pub(crate) fn input(&self, i: usize) -> &Tensor {
        &self.node.inputs[i]
    }

    /// Output `i`, re-linked to this node when the backward pass is recorded, so that
    /// VJPs that use it are differentiable again.
    pub(crate) fn output(&self, i: usize) -> Result<Tensor> {
        let slot = &self.node.outputs[i];
        let Some((storage, layout)) = &slot.saved else {
            return Err(Error::Internal { op: self.node.op.name(), reason: "output not saved" });
        };
        let t = Tensor::from_parts(storage.clone(), layout.clone());
        if self.create_graph && slot.differentiable {
            Ok(t.with_grad_fn(Some(GradFn { node: self.node.clone(), output: i as u32 }), true))
        } else {
            Ok(t)
        }
    }

    /// True if input `i` needs a gradient (it requires grad and leads to a requested
    /// input). VJPs may skip work for inputs that do not.
    pub(crate) fn needs_input_grad(&self, i: usize) -> bool {
        self.needs.get(i).copied().unwrap_or(false)
    }

    /// True if the backward pass is itself being recorded.
    #[allow(dead_code)]
    pub(crate) fn create_graph(&self) -> bool {
        self.create_graph
    }

    /// The shape of output `i`.
    #[allow(dead_code)]
    pub(crate) fn output_shape(&self, i: usize) -> &Shape {
        &self.node.outputs[i].shape
    }

    /// The dtype of output `i`.
    #[allow(dead_code)]
    pub(crate) fn output_dtype(&self, i: usize) -> DType {
        self.node.outputs[i].dtype
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// True if an op on these inputs must be recorded.
pub(crate) fn should_record(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// Links `outputs` to a new node of `op` over `inputs`, if grad mode is on and an input
/// requires grad; otherwise returns the outputs untouched (recording costs nothing when
/// unused). Outputs whose dtype cannot carry gradients (integers, bools) are left without
/// history. `save_outputs` keeps their data for the VJP ([`VjpCtx::output`]).
pub(crate) fn record(
    op: impl Op,
    inputs: &[&Tensor],
    outputs: Vec<Tensor>,
    save_outputs: bool,
) -> Vec<Tensor> {
    if !should_record(inputs) {
        return outputs;
    }
    let slots = outputs
        .iter()
        .map(|t| OutputSlot {
            shape: t.shape().clone(),
            dtype: t.dtype(),
            differentiable: t.dtype().is_differentiable(),
            saved: save_outputs.then(|| (t.storage().clone(), t.layout().clone())),
        })
        .collect();
    let node = Arc::new(Node {
        op: Box::new(op),
        inputs: inputs.iter().map(|&t| t.clone()).collect(),
        outputs: slots,
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
    });
    outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            if t.dtype().is_differentiable() {
                t.with_grad_fn(Some(GradFn { node: node.clone(), output: i as u32 }), true)
            } else {
                t
            }
        })
        .collect()
}

/// [`record`] for a single output.
pub(crate) fn record1(
    op: impl Op,
    inputs: &[&Tensor],
    output: Tensor,
    save_output: bool,
) -> Tensor {
    if !should_record(inputs) {
        return output;
    }
    let mut v = record(op, inputs, vec![output], save_output);
    v.pop().unwrap_or_else(unreachable_tensor)
}

#[cold]
fn unreachable_tensor() -> Tensor {
    // record returns as many outputs as it is given; this is never reached.
    Tensor::scalar(0.0f64)
}
