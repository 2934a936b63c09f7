//! The graph: [`Op`] (a differentiable operation and its VJP), [`Node`] (one recorded
//! application of an op, with several outputs), and [`record`], which links outputs to
//! their node.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::forward::{self, JvpCtx, Tangents};
use super::mode::is_grad_enabled;
use crate::dtype::DType;
use crate::error::{Error, Result};
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

    /// Jacobian-vector product (forward mode). `tangents[k]` is the tangent of input `k`,
    /// `None` meaning zero (at least one is `Some`). Returns one entry per output, `None`
    /// meaning zero; outputs that cannot carry derivatives are ignored.
    ///
    /// Must be written with differentiable tensor ops, like [`Op::vjp`]: its ops carry
    /// the tangents of outer dual levels and are recorded for reverse mode. The default
    /// is a named error (no rule yet), never a silent zero.
    fn jvp(&self, _cx: &JvpCtx<'_>, _tangents: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Err(super::forward::no_rule(self.name()))
    }
}

/// The producer of a non-leaf tensor: a node and which of its outputs the tensor is.
#[derive(Clone)]
pub(crate) struct GradFn {
    pub(crate) node: Arc<Node>,
    pub(crate) output: u32,
}

pub(crate) struct OutputSlot {
    pub(crate) dtype: DType,
    pub(crate) differentiable: bool,
    pub(crate) data: SlotData,
    /// The forward-mode tangents of a saved output, without reverse-mode history, set
    /// once after the node is made (the JVP may use the output with its history).
    pub(crate) tangents: OnceLock<Tangents>,
}

/// What a node keeps of one output.
pub(crate) enum SlotData {
    /// The shape only.
    Shape(Shape),
    /// The output's data (for the VJP) as a handle without history (a tensor with history
    /// here would point back at this node: a reference cycle). [`VjpCtx::output`]
    /// re-links it.
    Saved(Tensor),
}

impl OutputSlot {
    fn new(t: &Tensor, save: bool) -> OutputSlot {
        OutputSlot {
            dtype: t.dtype(),
            differentiable: t.dtype().is_differentiable(),
            data: if save {
                SlotData::Saved(t.detach())
            } else {
                SlotData::Shape(t.shape().clone())
            },
            tangents: OnceLock::new(),
        }
    }

    /// The output's shape.
    pub(crate) fn shape(&self) -> &Shape {
        match &self.data {
            SlotData::Shape(s) => s,
            SlotData::Saved(t) => t.shape(),
        }
    }
}

/// A node's inputs, stored inline for the common arities (one allocation less per
/// recorded op). Derefs to a slice.
pub(crate) enum Inputs {
    One([Tensor; 1]),
    Two([Tensor; 2]),
    Three([Tensor; 3]),
    Many(Vec<Tensor>),
}

impl Inputs {
    fn new(inputs: &[&Tensor]) -> Inputs {
        match *inputs {
            [a] => Inputs::One([a.clone()]),
            [a, b] => Inputs::Two([a.clone(), b.clone()]),
            [a, b, c] => Inputs::Three([a.clone(), b.clone(), c.clone()]),
            _ => Inputs::Many(inputs.iter().map(|&t| t.clone()).collect()),
        }
    }

    /// Moves the inputs out, leaving none.
    fn take_each(&mut self, mut f: impl FnMut(Tensor)) {
        match std::mem::replace(self, Inputs::Many(Vec::new())) {
            Inputs::One(a) => a.into_iter().for_each(f),
            Inputs::Two(a) => a.into_iter().for_each(f),
            Inputs::Three(a) => a.into_iter().for_each(f),
            Inputs::Many(v) => v.into_iter().for_each(&mut f),
        }
    }
}

impl std::ops::Deref for Inputs {
    type Target = [Tensor];
    fn deref(&self) -> &[Tensor] {
        match self {
            Inputs::One(a) => a,
            Inputs::Two(a) => a,
            Inputs::Three(a) => a,
            Inputs::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Inputs {
    type Item = &'a Tensor;
    type IntoIter = std::slice::Iter<'a, Tensor>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A node's output slots, the single one stored inline. Derefs to a slice.
pub(crate) enum Outputs {
    One(OutputSlot),
    // built by `record` (multi-output ops)
    Many(Vec<OutputSlot>),
}

impl std::ops::Deref for Outputs {
    type Target = [OutputSlot];
    fn deref(&self) -> &[OutputSlot] {
        match self {
            Outputs::One(s) => std::slice::from_ref(s),
            Outputs::Many(v) => v,
        }
    }
}

/// One recorded application of an op.
pub(crate) struct Node {
    pub(crate) op: Box<dyn Op>,
    /// The inputs, with their history (they point to older nodes, so no cycle).
    pub(crate) inputs: Inputs,
    pub(crate) outputs: Outputs,
    /// Creation order: consumers always have a larger `seq` than their producers, so
    /// descending `seq` is a topological order of the backward pass.
    pub(crate) seq: u64,
}

impl Drop for Node {
    /// Drops long chains iteratively: a recursive drop of a 100,000-node chain would
    /// overflow the stack.
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        fn take(inputs: &mut Inputs, stack: &mut Vec<Arc<Node>>) {
            inputs.take_each(|t| {
                if let Ok(imp) = Arc::try_unwrap(t.0) {
                    if let Some(gf) = imp.grad_fn {
                        stack.push(gf.node);
                    }
                }
            });
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
        let SlotData::Saved(t) = &slot.data else {
            return Err(Error::Internal { op: self.node.op.name(), reason: "output not saved" });
        };
        let t = if self.create_graph && slot.differentiable {
            t.with_grad_fn(Some(GradFn { node: self.node.clone(), output: i as u32 }), true)
        } else {
            t.clone()
        };
        Ok(match slot.tangents.get() {
            Some(Some(tangents)) => t.with_tangents(Some(tangents.clone())),
            _ => t,
        })
    }

    /// True if input `i` needs a gradient (it requires grad and leads to a requested
    /// input). VJPs may skip work for inputs that do not.
    pub(crate) fn needs_input_grad(&self, i: usize) -> bool {
        self.needs.get(i).copied().unwrap_or(false)
    }

    /// True if the backward pass must be written in differentiable tensor ops: it is
    /// itself recorded, or a dual level is open (its ops may carry tangents, which the
    /// fused fast paths would drop).
    pub(crate) fn create_graph(&self) -> bool {
        self.create_graph || forward::active()
    }

    /// The shape of output `i`.
    #[allow(dead_code)]
    pub(crate) fn output_shape(&self, i: usize) -> &Shape {
        self.node.outputs[i].shape()
    }

    /// The dtype of output `i`.
    #[allow(dead_code)]
    pub(crate) fn output_dtype(&self, i: usize) -> DType {
        self.node.outputs[i].dtype
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// True if an op on these inputs is differentiated: recorded for reverse mode (grad mode
/// on and an input requires grad) or carrying forward-mode tangents. Ops with a faster
/// path for inputs that need no derivative choose by it.
pub(crate) fn should_record(inputs: &[&Tensor]) -> bool {
    records_reverse(inputs) || has_tangents(inputs)
}

fn records_reverse(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

fn has_tangents(inputs: &[&Tensor]) -> bool {
    forward::active() && inputs.iter().any(|t| !t.tangent_list().is_empty())
}

/// Links `outputs` to a new node of `op` over `inputs`, if grad mode is on and an input
/// requires grad, and attaches the outputs' forward-mode tangents (from `op`'s JVP) if
/// an input carries one at an open dual level; otherwise returns the outputs untouched
/// (recording costs nothing when unused). Outputs whose dtype cannot carry derivatives
/// (integers, bools) are left without history or tangents. `save_outputs` keeps their
/// data for the VJP ([`VjpCtx::output`]).
///
/// Errors: those of the JVP (an op without a forward-mode rule, an undefined tangent).
pub(crate) fn record(
    op: impl Op,
    inputs: &[&Tensor],
    outputs: Vec<Tensor>,
    save_outputs: bool,
) -> Result<Vec<Tensor>> {
    let levels = if has_tangents(inputs) { forward::levels_of(inputs) } else { Vec::new() };
    if !records_reverse(inputs) {
        if levels.is_empty() {
            return Ok(outputs);
        }
        return forward::propagate(&op, inputs, outputs, &levels);
    }
    let slots = outputs.iter().map(|t| OutputSlot::new(t, save_outputs)).collect();
    let node = new_node(op, inputs, Outputs::Many(slots));
    let outputs = outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            if t.dtype().is_differentiable() {
                attach(t, GradFn { node: node.clone(), output: i as u32 })
            } else {
                t
            }
        })
        .collect();
    with_tangents(&node, inputs, outputs, &levels)
}

/// [`record`] for a single output.
pub(crate) fn record1(
    op: impl Op,
    inputs: &[&Tensor],
    output: Tensor,
    save_output: bool,
) -> Result<Tensor> {
    // an output that cannot carry a derivative gets no history, and then nothing refers
    // to the node: skip it
    if !output.dtype().is_differentiable() {
        return Ok(output);
    }
    let levels = if has_tangents(inputs) { forward::levels_of(inputs) } else { Vec::new() };
    if !records_reverse(inputs) {
        if levels.is_empty() {
            return Ok(output);
        }
        let mut out = forward::propagate(&op, inputs, vec![output], &levels)?;
        return out.pop().ok_or(Error::Internal { op: "record", reason: "no output" });
    }
    let slot = OutputSlot::new(&output, save_output);
    let node = new_node(op, inputs, Outputs::One(slot));
    let output = attach(output, GradFn { node: node.clone(), output: 0 });
    let mut out = with_tangents(&node, inputs, vec![output], &levels)?;
    out.pop().ok_or(Error::Internal { op: "record", reason: "no output" })
}

/// The recorded `outputs` of `node` with their tangents at `levels` (none: as they are),
/// the saved ones' also kept in the node, without history.
fn with_tangents(
    node: &Arc<Node>,
    inputs: &[&Tensor],
    outputs: Vec<Tensor>,
    levels: &[u64],
) -> Result<Vec<Tensor>> {
    if levels.is_empty() {
        return Ok(outputs);
    }
    let outputs = forward::propagate(&*node.op, inputs, outputs, levels)?;
    for (slot, t) in node.outputs.iter().zip(&outputs) {
        if matches!(slot.data, SlotData::Saved(_)) {
            let _ = slot.tangents.set(t.detached_tangents());
        }
    }
    Ok(outputs)
}

/// Nodes alive, all threads together ([`super::live_nodes`]).
pub(crate) static LIVE: AtomicUsize = AtomicUsize::new(0);

fn new_node(op: impl Op, inputs: &[&Tensor], outputs: Outputs) -> Arc<Node> {
    LIVE.fetch_add(1, Ordering::Relaxed);
    Arc::new(Node {
        op: Box::new(op),
        inputs: Inputs::new(inputs),
        outputs,
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
    })
}

/// `t` with the history `gf`. A fresh output (the usual case) is updated in place; one
/// that is shared (an op that returns an existing handle) gets a new handle.
fn attach(mut t: Tensor, gf: GradFn) -> Tensor {
    match Arc::get_mut(&mut t.0) {
        Some(imp) => {
            imp.grad_fn = Some(gf);
            imp.requires_grad = true;
            t
        }
        None => t.with_grad_fn(Some(gf), true),
    }
}
