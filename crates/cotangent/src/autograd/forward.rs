//! Forward-mode automatic differentiation: dual tensors, as PyTorch's
//! `torch.autograd.forward_ad`, with nested levels, as `torch.func` nests them.
//!
//! A *dual level* ([`dual_level`]) is a scope in which a tensor may carry a *tangent* (a
//! tensor of its shape and dtype): [`make_dual`] attaches one, [`unpack_dual`] reads it
//! back. Every op applied to tensors with tangents at an active level computes the
//! tangents of its outputs eagerly, by the op's forward-mode rule (its JVP), written in
//! differentiable tensor ops like its VJP: so the tangents are themselves recorded for
//! reverse mode (reverse-over-forward), and a backward pass run on dual tensors carries
//! tangents through its VJPs (forward-over-reverse: Hessian-vector products). Grad mode
//! ([`no_grad`](super::no_grad)) does not stop forward mode, as in PyTorch.
//!
//! Levels nest: each [`dual_level`] call opens a new level, and a tensor carries at most
//! one tangent per level. An op's tangent at level `L` is computed from its inputs with
//! the tangents of the levels `>= L` removed, and from its outputs with the tangents of
//! the levels `< L` already attached, so the tangent at `L` carries the tangents of the
//! outer levels (the mixed derivatives) and perturbations of different levels never mix
//! (JAX's and functorch's nesting). Tangents of a level that has been closed are ignored.
//! Levels opened together as siblings (the transforms of [`crate::func`] use them to
//! share one primal computation among several directions, as `torch.func` does with
//! `vmap`) are independent: the tangent at one is computed without those of the others.
//!
//! ```
//! use cotangent::autograd::forward::{dual_level, make_dual, unpack_dual};
//! use cotangent::Tensor;
//! let x = Tensor::from_vec(vec![1.0f64, 2.0], 2)?;
//! let v = Tensor::from_vec(vec![1.0f64, 0.0], 2)?;
//! let _level = dual_level();
//! let y = make_dual(&x, &v)?.square()?.sum()?; // y = Σ x²
//! let (_, dy) = unpack_dual(&y)?;
//! assert_eq!(dy.unwrap().to_vec::<f64>()?, vec![2.0]); // ⟨2x, v⟩
//! # Ok::<(), cotangent::Error>(())
//! ```

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::node::{record1, Op, VjpCtx};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The tangents a tensor carries, one per level, in ascending order of level.
pub(crate) type Tangents = Option<Arc<[(u64, Tensor)]>>;

/// An open level: its id, the first id of its group (levels opened together by
/// [`dual_levels`] are siblings: independent directions whose tangents never mix; a level
/// opened alone is its own group), and whether its tangents are recorded for reverse mode.
#[derive(Clone, Copy, Debug)]
struct Open {
    id: u64,
    group: u64,
    reverse: bool,
}

thread_local! {
    /// The open levels of this thread, innermost last.
    static LEVELS: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// True if a dual level is open on this thread (a cheap test on every recorded op).
pub(crate) fn active() -> bool {
    LEVELS.with(|l| !l.borrow().is_empty())
}

fn find(level: u64) -> Option<Open> {
    LEVELS.with(|l| l.borrow().iter().find(|o| o.id == level).copied())
}

fn is_open(level: u64) -> bool {
    find(level).is_some()
}

/// Opens `k` levels at once, consecutive ids from the returned first one, with `group` set
/// to that first id when `siblings` (else each its own group).
fn open(k: usize, siblings: bool, reverse: bool) -> u64 {
    let first = NEXT.fetch_add(k as u64, Ordering::Relaxed);
    LEVELS.with(|l| {
        let mut l = l.borrow_mut();
        for id in first..first + k as u64 {
            l.push(Open { id, group: if siblings { first } else { id }, reverse });
        }
    });
    first
}

fn close(first: u64, k: usize) {
    LEVELS.with(|l| l.borrow_mut().retain(|o| o.id < first || o.id >= first + k as u64));
}

/// An open dual level; closes it when dropped (PyTorch's `with dual_level():`). Returned
/// by [`dual_level`]. The level is thread-local: the guard must drop on the thread that
/// made it.
#[derive(Debug)]
#[must_use = "the level closes when the guard drops"]
pub struct DualLevel {
    id: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Opens a new dual level on this thread, nested inside any open one, until the returned
/// guard drops. [`make_dual`] and [`unpack_dual`] use the innermost open level;
/// [`DualLevel::make_dual`] and [`DualLevel::unpack_dual`] name theirs.
pub fn dual_level() -> DualLevel {
    let id = open(1, false, true);
    DualLevel { id, _not_send: std::marker::PhantomData }
}

impl Drop for DualLevel {
    fn drop(&mut self) {
        close(self.id, 1);
    }
}

/// Levels opened together by [`dual_levels`]; closes them when dropped.
#[derive(Debug)]
#[must_use = "the levels close when the guard drops"]
pub(crate) struct DualLevels {
    first: u64,
    k: usize,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Opens `k` sibling levels on this thread: `k` independent directions of one forward
/// pass, as `torch.func.jacfwd` batches its basis vectors (`vmap` over `jvp`). The primal
/// computation is shared; an op's tangent at one of them is computed from its inputs and
/// outputs without the tangents of all of them (so they never mix: no mixed derivative
/// between siblings), with those of enclosing levels kept.
///
/// With `reverse` false the tangents are not recorded for reverse mode (the JVP rules run
/// without grad mode, so fused kernels apply and no graph of the tangents is kept): for a
/// caller that never differentiates the tangents in reverse, as [`crate::func::jvp`] is
/// when neither its primals nor its tangents require grad.
pub(crate) fn dual_levels(k: usize, reverse: bool) -> DualLevels {
    let first = open(k, true, reverse);
    DualLevels { first, k, _not_send: std::marker::PhantomData }
}

impl DualLevels {
    /// The `i`-th level's id.
    pub(crate) fn level(&self, i: usize) -> u64 {
        self.first + i as u64
    }
}

impl Drop for DualLevels {
    fn drop(&mut self) {
        close(self.first, self.k);
    }
}

fn innermost(op: &'static str) -> Result<u64> {
    LEVELS.with(|l| l.borrow().last().map(|o| o.id)).ok_or(Error::InvalidArgument {
        op,
        arg: "level",
        reason: "no dual level is open: call forward::dual_level() first",
    })
}

impl DualLevel {
    /// [`make_dual`] at this level.
    ///
    /// Errors: as [`make_dual`].
    pub fn make_dual(&self, primal: &Tensor, tangent: &Tensor) -> Result<Tensor> {
        make_dual_at(self.id, primal, tangent)
    }

    /// [`unpack_dual`] at this level.
    ///
    /// Errors: as [`unpack_dual`].
    pub fn unpack_dual(&self, t: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
        Ok(unpack_at(self.id, t))
    }
}

/// A tensor equal to `primal` that carries `tangent` at the innermost open level
/// (`torch.autograd.forward_ad.make_dual`). In reverse mode it is `primal` (its gradient
/// flows to `primal`; the tangent's own history, if any, is kept). A tangent `primal`
/// already had at this level is replaced; those of other levels are kept.
///
/// Errors: `InvalidArgument` if no level is open; `ShapeMismatch` if the shapes differ;
/// `DTypeMismatch` if the dtypes differ; `UnsupportedDType` for a dtype without
/// derivatives (integers, bool).
pub fn make_dual(primal: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    make_dual_at(innermost("make_dual")?, primal, tangent)
}

/// The primal of `t` (without its tangent at the innermost open level) and that tangent,
/// `None` where `t` has none (`torch.autograd.forward_ad.unpack_dual`).
///
/// Errors: `InvalidArgument` if no level is open.
pub fn unpack_dual(t: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
    Ok(unpack_at(innermost("unpack_dual")?, t))
}

/// The alias of `make_dual`: the identity in both modes.
#[derive(Debug)]
struct MakeDual;

impl Op for MakeDual {
    fn name(&self) -> &'static str {
        "make_dual"
    }
    fn vjp(&self, _cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![g[0].clone()])
    }
    fn jvp(&self, _cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![t[0].clone()])
    }
}

pub(crate) fn make_dual_at(level: u64, primal: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    const OP: &str = "make_dual";
    if !primal.dtype().is_differentiable() {
        return Err(Error::UnsupportedDType { op: OP, dtype: primal.dtype() });
    }
    if primal.dims() != tangent.dims() {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: primal.shape().clone(),
            rhs: tangent.shape().clone(),
        });
    }
    if primal.dtype() != tangent.dtype() {
        return Err(Error::DTypeMismatch { op: OP, lhs: primal.dtype(), rhs: tangent.dtype() });
    }
    let base = primal.without_levels(|l| l == level);
    let out = record1(MakeDual, &[&base], base.view_as_layout(base.layout().clone()), false)?;
    let mut list: Vec<(u64, Tensor)> = out.tangent_list().to_vec();
    list.retain(|(l, _)| *l != level);
    list.push((level, tangent.clone()));
    list.sort_by_key(|(l, _)| *l);
    Ok(out.with_tangents(Some(list.into())))
}

pub(crate) fn unpack_at(level: u64, t: &Tensor) -> (Tensor, Option<Tensor>) {
    let tangent = if is_open(level) { t.tangent_at(level) } else { None };
    (t.without_levels(|l| l == level), tangent)
}

/// What a JVP can see of its op's application: the inputs and the outputs, with the
/// tangents of the level being computed and of the inner ones removed (those of outer
/// levels kept, so that the JVP's own ops carry them).
pub(crate) struct JvpCtx<'a> {
    inputs: &'a [Tensor],
    outputs: &'a [Tensor],
}

impl JvpCtx<'_> {
    /// Input `i`.
    pub(crate) fn input(&self, i: usize) -> &Tensor {
        &self.inputs[i]
    }

    /// Output `i` (with its reverse-mode history where the op was recorded, so a JVP that
    /// uses it is differentiable in reverse mode too).
    pub(crate) fn output(&self, i: usize) -> &Tensor {
        &self.outputs[i]
    }

    /// The outputs.
    pub(crate) fn outputs(&self) -> &[Tensor] {
        self.outputs
    }
}

/// The active levels at which some input carries a tangent, ascending; empty (no
/// allocation) when none does.
pub(crate) fn levels_of(inputs: &[&Tensor]) -> Vec<u64> {
    if !active() {
        return Vec::new();
    }
    let mut levels: Vec<u64> =
        inputs.iter().flat_map(|t| t.tangent_list().iter().map(|(l, _)| *l)).collect();
    levels.sort_unstable();
    levels.dedup();
    levels.retain(|&l| is_open(l));
    levels
}

/// The outputs of `op` on `inputs` with their tangents at `levels` (ascending, non-empty)
/// attached: the tangent at each level from `op`'s JVP, outputs that cannot carry a
/// derivative (integers, bool) left without.
pub(crate) fn propagate(
    op: &dyn Op,
    inputs: &[&Tensor],
    mut outputs: Vec<Tensor>,
    levels: &[u64],
) -> Result<Vec<Tensor>> {
    // (an op that hands back an input's handle: its tangents are recomputed here)
    for out in &mut outputs {
        *out = out.without_levels(|l| levels.contains(&l));
    }
    let opens: Vec<Open> = levels.iter().filter_map(|&l| find(l)).collect();
    // one group of levels at a time (siblings share their stripped inputs and outputs),
    // its tangents attached before the next group's are computed
    for group in opens.chunk_by(|a, b| a.group == b.group) {
        let first = group[0];
        // the tangents of this group and of inner levels removed
        let strip = |l: u64| l >= first.group;
        let _mode = (!first.reverse).then(super::no_grad);
        let ins: Vec<Tensor> = inputs.iter().map(|t| t.without_levels(strip)).collect();
        let outs: Vec<Tensor> = outputs.iter().map(|t| t.without_levels(strip)).collect();
        let mut added: Vec<Vec<(u64, Tensor)>> = vec![Vec::new(); outputs.len()];
        for open in group {
            let tangents: Vec<Option<Tensor>> = inputs
                .iter()
                .map(|t| t.tangent_at(open.id).map(|x| x.without_levels(strip)))
                .collect();
            if tangents.iter().all(Option::is_none) {
                continue;
            }
            let cx = JvpCtx { inputs: &ins, outputs: &outs };
            let res = op.jvp(&cx, &tangents)?;
            if res.len() != outputs.len() {
                return Err(Error::Internal { op: op.name(), reason: "jvp returned wrong arity" });
            }
            for ((out, t), add) in outputs.iter().zip(res).zip(&mut added) {
                let Some(mut t) = t else { continue };
                if !out.dtype().is_differentiable() {
                    continue;
                }
                if t.dims() != out.dims() {
                    return Err(Error::Internal {
                        op: op.name(),
                        reason: "jvp returned wrong shape",
                    });
                }
                if t.dtype() != out.dtype() {
                    t = t.to_dtype(out.dtype())?;
                }
                add.push((open.id, t));
            }
        }
        for (out, add) in outputs.iter_mut().zip(added) {
            if add.is_empty() {
                continue;
            }
            let mut list: Vec<(u64, Tensor)> = out.tangent_list().to_vec();
            list.extend(add);
            list.sort_by_key(|(l, _)| *l);
            *out = out.with_tangents(Some(list.into()));
        }
    }
    Ok(outputs)
}

/// The default JVP of an op without a forward-mode rule: a named error, never a silent
/// zero.
pub(crate) fn no_rule(op: &'static str) -> Error {
    Error::NotDifferentiable {
        op,
        reason: "this op has no forward-mode rule (JVP) yet; use reverse mode (grad, vjp, \
                 jacrev)",
    }
}

impl Tensor {
    /// The tangents this handle carries (closed levels included), ascending by level.
    pub(crate) fn tangent_list(&self) -> &[(u64, Tensor)] {
        self.0.tangents.as_deref().unwrap_or(&[])
    }

    /// The tangent at `level`, if any.
    pub(crate) fn tangent_at(&self, level: u64) -> Option<Tensor> {
        self.tangent_list().iter().find(|(l, _)| *l == level).map(|(_, t)| t.clone())
    }

    /// The same tensor (same id and history) without the tangents of the levels for
    /// which `drop` holds; this handle itself when there are none to drop.
    pub(crate) fn without_levels(&self, drop: impl Fn(u64) -> bool) -> Tensor {
        let list = self.tangent_list();
        if !list.iter().any(|(l, _)| drop(*l)) {
            return self.clone();
        }
        let kept: Vec<(u64, Tensor)> = list.iter().filter(|(l, _)| !drop(*l)).cloned().collect();
        self.with_tangents(if kept.is_empty() { None } else { Some(kept.into()) })
    }

    /// The tangents without reverse-mode history, recursively (what a node keeps of its
    /// saved outputs' tangents: with history they could refer back to the node).
    pub(crate) fn detached_tangents(&self) -> Tangents {
        let list = self.tangent_list();
        if list.is_empty() {
            return None;
        }
        let out: Vec<(u64, Tensor)> = list
            .iter()
            .map(|(l, t)| (*l, t.detach().with_tangents(t.detached_tangents())))
            .collect();
        Some(out.into())
    }
}

/// What an elementwise op's derivative rule reads, in either mode. An elementwise rule
/// written once over `C: RuleCx` as a VJP (`g ↦ g ∂y/∂x_i` per input) gives the JVP too
/// ([`elementwise_jvp`]): the Jacobian of an elementwise op is diagonal per input.
pub(crate) trait RuleCx {
    /// Input `i`.
    fn input(&self, i: usize) -> &Tensor;
    /// Output `i`.
    fn output(&self, i: usize) -> Result<Tensor>;
    /// True if the rule must produce input `i`'s term.
    fn needs_input_grad(&self, i: usize) -> bool;
    /// True if the rule must be written in differentiable tensor ops (no fused path).
    fn create_graph(&self) -> bool;
}

impl RuleCx for VjpCtx<'_> {
    fn input(&self, i: usize) -> &Tensor {
        VjpCtx::input(self, i)
    }
    fn output(&self, i: usize) -> Result<Tensor> {
        VjpCtx::output(self, i)
    }
    fn needs_input_grad(&self, i: usize) -> bool {
        VjpCtx::needs_input_grad(self, i)
    }
    fn create_graph(&self) -> bool {
        VjpCtx::create_graph(self)
    }
}

/// A [`JvpCtx`] seen by an elementwise rule that is asked for input `i`'s term only.
pub(crate) struct OneInput<'a, 'b> {
    cx: &'a JvpCtx<'b>,
    i: usize,
}

impl RuleCx for OneInput<'_, '_> {
    fn input(&self, i: usize) -> &Tensor {
        self.cx.input(i)
    }
    fn output(&self, i: usize) -> Result<Tensor> {
        Ok(self.cx.output(i).clone())
    }
    fn needs_input_grad(&self, i: usize) -> bool {
        i == self.i
    }
    fn create_graph(&self) -> bool {
        true
    }
}

/// The JVP of a one-output elementwise op from its VJP `rule` (one term per input): the
/// sum over the inputs with a tangent of `rule(t_i)`'s term `i` where the op is real (a
/// diagonal Jacobian is its own transpose), and of `conj(rule(conj t_i))` where it is
/// complex and holomorphic in its inputs (the VJP multiplies by `conj(∂y/∂x_i)`, the JVP
/// by `∂y/∂x_i`); `conj = false` for a complex rule whose VJP formula already is its JVP
/// formula (`sgn`).
pub(crate) fn elementwise_jvp(
    cx: &JvpCtx<'_>,
    tangents: &[Option<Tensor>],
    conj: bool,
    rule: impl Fn(&OneInput<'_, '_>, &Tensor) -> Result<Vec<Option<Tensor>>>,
) -> Result<Vec<Option<Tensor>>> {
    let conj = conj && cx.output(0).dtype().is_complex();
    let mut sum: Option<Tensor> = None;
    for (i, t) in tangents.iter().enumerate() {
        let Some(t) = t else { continue };
        let g = if conj { t.conj()? } else { t.clone() };
        let Some(d) = rule(&OneInput { cx, i }, &g)?.into_iter().nth(i).flatten() else {
            continue;
        };
        let d = if conj { d.conj()? } else { d };
        sum = Some(match sum {
            Some(s) => s.add(&d)?,
            None => d,
        });
    }
    Ok(vec![sum])
}
