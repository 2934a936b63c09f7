//! Engine tests that need crate internals: a private multi-output op recorded with
//! [`record`], what its VJP is shown (`None` cotangents, `needs_input_grad`), and the
//! graph being freed (no reference cycles) through `Weak` handles to nodes.

use std::sync::{Arc, Mutex, Weak};

use super::node::{record, Node, Op, VjpCtx};
use super::{grad, GradOptions};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, TensorImpl};
use crate::DType;

const PLAIN: GradOptions = GradOptions { create_graph: false, allow_unused: false };
const CREATE: GradOptions = GradOptions { create_graph: true, allow_unused: false };

/// What one call of [`Split2`]'s VJP saw.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    /// Which output cotangents were `Some`.
    grads: Vec<bool>,
    /// `needs_input_grad` of each input.
    needs: Vec<bool>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A test op with two inputs and two outputs: `(a, b) -> (2a + b, 3a)`, plus, when `int`
/// is set, a third I64 output `a` truncated (not differentiable).
/// VJP: `ā = 2 g0 + 3 g1`, `b̄ = g0`, with `None` cotangents treated as zero.
#[derive(Debug)]
struct Split2 {
    log: Log,
}

impl Op for Split2 {
    fn name(&self) -> &'static str {
        "test.split2"
    }

    fn vjp(&self, cx: &VjpCtx<'_>, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let needs = (0..2).map(|i| cx.needs_input_grad(i)).collect();
        self.log
            .lock()
            .map_err(|_| Error::Internal { op: "test", reason: "poisoned" })?
            .push(Seen { grads: grads.iter().map(Option::is_some).collect(), needs });
        let mut ga: Option<Tensor> = None;
        if let Some(g0) = &grads[0] {
            ga = Some(g0.mul_scalar(2.0)?);
        }
        if let Some(g1) = &grads[1] {
            let t = g1.mul_scalar(3.0)?;
            ga = Some(match ga {
                Some(a) => a.add(&t)?,
                None => t,
            });
        }
        Ok(vec![ga, grads[0].clone()])
    }
}

/// Applies [`Split2`] to `a`, `b`.
fn split2(a: &Tensor, b: &Tensor, int: bool, log: &Log) -> Vec<Tensor> {
    let (o0, o1) = {
        let _g = super::no_grad();
        (a.mul_scalar(2.0).unwrap().add(b).unwrap(), a.mul_scalar(3.0).unwrap())
    };
    let mut outs = vec![o0, o1];
    if int {
        outs.push(a.detach().to_dtype(DType::I64).unwrap());
    }
    record(Split2 { log: log.clone() }, &[a, b], outs, false).unwrap()
}

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_slice(v, v.len()).unwrap().with_requires_grad(true).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn seen(log: &Log) -> Vec<Seen> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn g1(y: &Tensor, x: &Tensor, opts: GradOptions) -> Tensor {
    grad(&[y], &[None], &[x], opts).unwrap().remove(0).unwrap()
}

/// A weak handle to the node that produced `t`.
fn weak_node(t: &Tensor) -> Weak<Node> {
    Arc::downgrade(&t.0.grad_fn.as_ref().unwrap().node)
}

/// A weak handle to the tensor itself.
fn weak_tensor(t: &Tensor) -> Weak<TensorImpl> {
    Arc::downgrade(&t.0)
}

// ---------------------------------------------------------------------------------------
// multi-output nodes

#[test]
fn a_multi_output_node_with_only_output_0_used() {
    // y = Σ o0 = Σ (2a + b): ∂y/∂a = 2, ∂y/∂b = 1; the VJP sees g1 = None
    let log = Log::default();
    let (a, b) = (leaf(&[1.0, 2.0]), leaf(&[5.0, 7.0]));
    let o = split2(&a, &b, false, &log);
    assert_eq!(o[0].grad_fn_name(), Some("test.split2"));
    assert_eq!(vals(&o[0]), vec![7.0, 11.0]);
    let y = o[0].sum().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&a).unwrap()), vec![2.0, 2.0]);
    assert_eq!(vals(g.get(&b).unwrap()), vec![1.0, 1.0]);
    assert_eq!(seen(&log), vec![Seen { grads: vec![true, false], needs: vec![true, true] }]);
}

#[test]
fn a_multi_output_node_with_only_output_1_used() {
    // y = Σ o1² = Σ 9a²: ∂y/∂a = 18a, b is unused (its VJP entry is None ≡ zero,
    // so b gets no gradient at all); the VJP sees g0 = None
    let log = Log::default();
    let (a, b) = (leaf(&[1.0, -2.0]), leaf(&[5.0, 7.0]));
    let o = split2(&a, &b, false, &log);
    let y = o[1].square().unwrap().sum().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&a).unwrap()), vec![18.0, -36.0]);
    assert!(g.get(&b).is_none());
    assert_eq!(seen(&log), vec![Seen { grads: vec![false, true], needs: vec![true, true] }]);
}

#[test]
fn a_multi_output_node_gets_one_vjp_call_with_all_cotangents() {
    // y = Σ (o0 + 4·o1) = Σ (2a + b + 12a): ∂y/∂a = 14, ∂y/∂b = 1, one VJP call
    let log = Log::default();
    let (a, b) = (leaf(&[1.0, 2.0]), leaf(&[5.0, 7.0]));
    let o = split2(&a, &b, false, &log);
    let y = o[0].add(&o[1].mul_scalar(4.0).unwrap()).unwrap().sum().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&a).unwrap()), vec![14.0, 14.0]);
    assert_eq!(vals(g.get(&b).unwrap()), vec![1.0, 1.0]);
    assert_eq!(seen(&log), vec![Seen { grads: vec![true, true], needs: vec![true, true] }]);
}

#[test]
fn needs_input_grad_follows_the_requested_inputs() {
    // grad with respect to a only: the VJP is told b needs nothing; with b a constant,
    // the same
    let log = Log::default();
    let (a, b) = (leaf(&[1.0, 2.0]), leaf(&[5.0, 7.0]));
    let o = split2(&a, &b, false, &log);
    let y = o[0].sum().unwrap();
    assert_eq!(vals(&g1(&y, &a, PLAIN)), vec![2.0, 2.0]);
    assert_eq!(seen(&log), vec![Seen { grads: vec![true, false], needs: vec![true, false] }]);
    assert_eq!(vals(&g1(&y, &b, PLAIN)), vec![1.0, 1.0]);
    assert_eq!(seen(&log), vec![Seen { grads: vec![true, false], needs: vec![false, true] }]);

    let c = Tensor::from_slice(&[5.0f64, 7.0], 2).unwrap();
    let o = split2(&a, &c, false, &log);
    let g = o[1].sum().unwrap().backward().unwrap();
    assert_eq!(vals(g.get(&a).unwrap()), vec![3.0, 3.0]);
    assert_eq!(seen(&log), vec![Seen { grads: vec![false, true], needs: vec![true, false] }]);
}

#[test]
fn a_node_whose_outputs_lead_nowhere_requested_is_not_run() {
    // y = Σ o0 + Σ z², gradient with respect to z only: split2's node is reachable but
    // leads to no requested input, so its VJP is never called. ∂y/∂z = 2z
    let log = Log::default();
    let (a, b, z) = (leaf(&[1.0]), leaf(&[2.0]), leaf(&[3.0]));
    let o = split2(&a, &b, false, &log);
    let y = o[0].sum().unwrap().add(&z.square().unwrap().sum().unwrap()).unwrap();
    assert_eq!(vals(&g1(&y, &z, PLAIN)), vec![6.0]);
    assert!(seen(&log).is_empty());
}

#[test]
fn an_integer_output_of_a_multi_output_node_has_no_gradient() {
    // the third output is I64: no history, an error as an output or input of grad; the
    // float outputs still work (y = Σ o1 = Σ 3a: ∂y/∂a = 3) and the VJP sees 2 slots
    // with g0 = None
    let log = Log::default();
    let (a, b) = (leaf(&[1.5, -2.5]), leaf(&[0.0, 0.0]));
    let o = split2(&a, &b, true, &log);
    assert_eq!(o.len(), 3);
    assert_eq!(o[2].dtype(), DType::I64);
    assert!(!o[2].requires_grad() && o[2].is_leaf());
    assert_eq!(o[2].to_vec::<i64>().unwrap(), vec![1, -2]);
    let y = o[1].sum().unwrap();
    assert_eq!(
        grad(&[&y, &o[2]], &[None, None], &[&a], PLAIN).unwrap_err(),
        Error::NoGradFn { index: 1 }
    );
    assert_eq!(grad(&[&y], &[None], &[&o[2]], PLAIN).unwrap_err(), Error::InputNoGrad { index: 0 });
    assert_eq!(vals(&g1(&y, &a, PLAIN)), vec![3.0, 3.0]);
    let s = seen(&log);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].grads, vec![false, true, false]);
}

#[test]
fn gradients_with_respect_to_each_output_of_a_multi_output_node() {
    // y = Σ (o0·o1): ∂y/∂o0 = o1, ∂y/∂o1 = o0 (targets are (node, output) pairs)
    let log = Log::default();
    let (a, b) = (leaf(&[1.0, 2.0]), leaf(&[3.0, 4.0]));
    let o = split2(&a, &b, false, &log);
    let y = o[0].mul(&o[1]).unwrap().sum().unwrap();
    let g = grad(&[&y], &[None], &[&o[0], &o[1]], PLAIN).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vals(&o[1]));
    assert_eq!(vals(g[1].as_ref().unwrap()), vals(&o[0]));
    // only non-leaf targets: the node leads to no requested input, the VJP is not run
    assert!(seen(&log).is_empty());
}

// ---------------------------------------------------------------------------------------
// the graph is freed with its tensors

#[test]
fn a_node_is_freed_when_its_outputs_drop() {
    let x = leaf(&[1.0, 2.0]);
    let y = x.exp().unwrap();
    let w = weak_node(&y);
    assert!(w.upgrade().is_some());
    drop(y);
    assert!(w.upgrade().is_none());
    // a multi-output node lives while any of its outputs does
    let log = Log::default();
    let b = leaf(&[0.0, 0.0]);
    let mut o = split2(&x, &b, false, &log);
    let w = weak_node(&o[0]);
    let o1 = o.pop().unwrap();
    drop(o);
    assert!(w.upgrade().is_some());
    drop(o1);
    assert!(w.upgrade().is_none());
}

#[test]
fn backward_without_create_graph_keeps_no_graph_alive() {
    // gradients computed without create_graph hold no history: once y drops, every
    // node is gone even though the gradients are alive
    let x = leaf(&[0.5, 1.5]);
    let h = x.exp().unwrap();
    let y = h.mul(&h).unwrap().sum().unwrap();
    let (wh, wy) = (weak_node(&h), weak_node(&y));
    let g = y.backward().unwrap();
    let gx = g1(&y, &x, PLAIN);
    drop((h, y));
    assert!(wh.upgrade().is_none() && wy.upgrade().is_none());
    // d/dx Σ e^{2x} = 2e^{2x}
    let want: Vec<f64> = [0.5f64, 1.5].iter().map(|x| 2.0 * (2.0 * x).exp()).collect();
    for (got, want) in vals(g.get(&x).unwrap()).iter().zip(&want) {
        assert!((got - want).abs() < 1e-12 * want);
    }
    assert_eq!(vals(&gx), vals(g.get(&x).unwrap()));
}

#[test]
fn create_graph_with_saved_outputs_leaves_no_cycle() {
    // exp's VJP re-links its saved output e^x to the exp node, so the first-order
    // gradient g = e^x refers back to that node (it must: d/dx g = e^x again). After
    // dropping every tensor, the node and the leaf are freed: no cycle.
    let x = leaf(&[0.25, -1.0]);
    let wx = weak_tensor(&x);
    let e = x.exp().unwrap();
    let y = e.sum().unwrap();
    let (we, wy) = (weak_node(&e), weak_node(&y));
    let g = g1(&y, &x, CREATE);
    assert!(g.requires_grad());
    let wg = weak_node(&g);
    drop((e, y));
    // g keeps the exp node alive through the re-linked output
    assert!(we.upgrade().is_some());
    assert!(wy.upgrade().is_none());
    // second and third order through the re-linked output: all e^x
    let gg = g1(&g.sum().unwrap(), &x, CREATE);
    let ggg = g1(&gg.sum().unwrap(), &x, CREATE);
    let want: Vec<f64> = [0.25f64, -1.0].iter().map(|v| v.exp()).collect();
    assert_eq!(vals(&g), want);
    assert_eq!(vals(&gg), want);
    assert_eq!(vals(&ggg), want);
    let (wgg, wggg) = (weak_node(&gg), weak_node(&ggg));
    drop((g, gg, ggg));
    assert!(we.upgrade().is_none());
    assert!(wg.upgrade().is_none() && wgg.upgrade().is_none() && wggg.upgrade().is_none());
    assert!(wx.upgrade().is_some());
    drop(x);
    assert!(wx.upgrade().is_none());
}

#[test]
fn graphs_of_every_saved_output_op_are_freed_after_create_graph() {
    // ops whose VJPs use their saved outputs (sqrt, tanh, sigmoid, reciprocal, exp) and
    // one multi-output node, differentiated twice with create_graph, then dropped
    let x = leaf(&[0.5, 1.25]);
    let wx = weak_tensor(&x);
    let log = Log::default();
    let mut weaks = Vec::new();
    {
        let b = leaf(&[1.0, 1.0]);
        let o = split2(&x, &b, false, &log);
        let chain = [
            o[0].sqrt().unwrap(),
            o[1].tanh().unwrap(),
            x.sigmoid().unwrap(),
            x.reciprocal().unwrap(),
            x.exp().unwrap(),
        ];
        weaks.extend(chain.iter().map(weak_node));
        weaks.push(weak_node(&o[0]));
        let y = chain.iter().map(|t| t.sum().unwrap()).reduce(|a, t| a.add(&t).unwrap()).unwrap();
        let g = g1(&y, &x, CREATE);
        let gg = g1(&g.sum().unwrap(), &x, CREATE);
        weaks.push(weak_node(&g));
        weaks.push(weak_node(&gg));
        assert!(weaks.iter().all(|w| w.upgrade().is_some()));
    }
    assert!(weaks.iter().all(|w| w.upgrade().is_none()));
    drop(x);
    assert!(wx.upgrade().is_none());
}

#[test]
fn a_deep_chain_is_freed() {
    // every node of a 10⁴ chain is released when the top drops (under Miri, which
    // interprets every step, a chain of 100 checks the same frees)
    let x = leaf(&[1.0]);
    let first = x.mul_scalar(2.0).unwrap();
    let w_first = weak_node(&first);
    let mut y = first;
    for _ in 0..if cfg!(miri) { 100 } else { 10_000 } {
        y = y.mul_scalar(1.0).unwrap();
    }
    let g = g1(&y.sum().unwrap(), &x, CREATE);
    assert_eq!(vals(&g), vec![2.0]);
    drop((y, g));
    assert!(w_first.upgrade().is_none());
}

#[test]
fn an_op_without_a_forward_rule_is_refused_by_name() {
    // Split2 has no JVP: a dual input gets NotDifferentiable naming it, never a zero
    let log: Log = Arc::default();
    let (a, b) = (leaf(&[1.0, 2.0]), leaf(&[3.0, 4.0]));
    let level = super::forward::dual_level();
    let d = level.make_dual(&a, &b.detach()).unwrap();
    let outs = vec![a.detach(), b.detach()];
    match record(Split2 { log }, &[&d, &b], outs, false) {
        Err(Error::NotDifferentiable { op: "test.split2", reason }) => {
            assert!(reason.contains("forward-mode"), "{reason}");
        }
        other => panic!("expected NotDifferentiable, got {other:?}"),
    }
}
