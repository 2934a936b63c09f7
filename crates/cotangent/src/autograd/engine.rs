//! The backward pass: an iterative traversal of the graph in reverse creation order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::mode::set_grad_enabled;
use super::node::{Node, VjpCtx};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, TensorId};

/// What the pass must deliver.
pub(crate) enum Targets<'a> {
    /// Every leaf that requires grad (`backward()`).
    AllLeaves,
    /// These tensors, leaves or not (`grad()`).
    Tensors(&'a [&'a Tensor]),
}

pub(crate) struct Output {
    /// Gradients of leaves, by id (for `AllLeaves`, and leaf targets).
    pub(crate) leaves: HashMap<TensorId, Tensor>,
    /// Gradients of the non-leaf targets, by position in the target list.
    pub(crate) non_leaves: HashMap<usize, Tensor>,
}

fn node_key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

fn accumulate(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(acc) => acc.add(&g)?,
    });
    Ok(())
}

/// Runs the backward pass from `roots` (outputs with their cotangents).
pub(crate) fn run(
    roots: &[(Tensor, Tensor)],
    targets: &Targets<'_>,
    create_graph: bool,
) -> Result<Output> {
    // 1. collect the reachable nodes (iterative DFS) and order them by descending seq
    let mut index: HashMap<usize, usize> = HashMap::new();
    let mut nodes: Vec<Arc<Node>> = Vec::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (t, _) in roots {
        if let Some(gf) = t.grad_fn() {
            stack.push(gf.node.clone());
        }
    }
    while let Some(n) = stack.pop() {
        let k = node_key(&n);
        if index.contains_key(&k) {
            continue;
        }
        index.insert(k, 0);
        for inp in &n.inputs {
            if let Some(gf) = inp.grad_fn() {
                if !index.contains_key(&node_key(&gf.node)) {
                    stack.push(gf.node.clone());
                }
            }
        }
        nodes.push(n);
    }
    nodes.sort_unstable_by_key(|n| std::cmp::Reverse(n.seq));
    for (i, n) in nodes.iter().enumerate() {
        index.insert(node_key(n), i);
    }

    // 2. which nodes lead to a target, and which of their inputs need a gradient
    let mut leaf_targets: HashSet<TensorId> = HashSet::new();
    let mut node_targets: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
    if let Targets::Tensors(ts) = targets {
        for (pos, t) in ts.iter().enumerate() {
            match t.grad_fn() {
                Some(gf) => {
                    node_targets.entry((node_key(&gf.node), gf.output)).or_default().push(pos);
                }
                None => {
                    leaf_targets.insert(t.id());
                }
            }
        }
    }
    let all_leaves = matches!(targets, Targets::AllLeaves);
    let mut needed = vec![false; nodes.len()];
    let mut needs: Vec<Vec<bool>> = vec![Vec::new(); nodes.len()];
    for i in (0..nodes.len()).rev() {
        let n = &nodes[i];
        let v: Vec<bool> = n
            .inputs
            .iter()
            .map(|inp| {
                if !inp.requires_grad() {
                    return false;
                }
                match inp.grad_fn() {
                    None => all_leaves || leaf_targets.contains(&inp.id()),
                    Some(gf) => {
                        let k = node_key(&gf.node);
                        node_targets.contains_key(&(k, gf.output))
                            || index.get(&k).is_some_and(|&j| needed[j])
                    }
                }
            })
            .collect();
        needed[i] = v.iter().any(|&b| b);
        needs[i] = v;
    }

    // 3. seed the cotangent buffers
    let mut buffers: Vec<Vec<Option<Tensor>>> =
        nodes.iter().map(|n| vec![None; n.outputs.len()]).collect();
    let mut out = Output { leaves: HashMap::new(), non_leaves: HashMap::new() };
    let mut leaf_acc: HashMap<TensorId, Option<Tensor>> = HashMap::new();
    for (t, g) in roots {
        match t.grad_fn() {
            Some(gf) => {
                let i = index[&node_key(&gf.node)];
                accumulate(&mut buffers[i][gf.output as usize], g.clone())?;
            }
            None => {
                if all_leaves || leaf_targets.contains(&t.id()) {
                    accumulate(leaf_acc.entry(t.id()).or_default(), g.clone())?;
                }
            }
        }
    }

    // 4. run the VJPs in reverse creation order
    let _mode = set_grad_enabled(create_graph);
    for i in 0..nodes.len() {
        let node = &nodes[i];
        let grads = std::mem::take(&mut buffers[i]);
        for (k, g) in grads.iter().enumerate() {
            if let (Some(positions), Some(g)) = (node_targets.get(&(node_key(node), k as u32)), g) {
                for &p in positions {
                    out.non_leaves.insert(p, g.clone());
                }
            }
        }
        if !needed[i] || grads.iter().all(Option::is_none) {
            continue;
        }
        let cx = VjpCtx { node, create_graph, needs: &needs[i] };
        let gin = node.op.vjp(&cx, &grads)?;
        drop(grads);
        if gin.len() != node.inputs.len() {
            return Err(Error::Internal { op: node.op.name(), reason: "vjp returned wrong arity" });
        }
        for (j, g) in gin.into_iter().enumerate() {
            let Some(mut g) = g else { continue };
            if !needs[i][j] {
                continue;
            }
            let inp = &node.inputs[j];
            if g.dims() != inp.dims() {
                return Err(Error::Internal {
                    op: node.op.name(),
                    reason: "vjp returned wrong shape",
                });
            }
            if g.dtype() != inp.dtype() {
                g = g.to_dtype(inp.dtype())?;
            }
            match inp.grad_fn() {
                Some(gf) => {
                    let m = index[&node_key(&gf.node)];
                    accumulate(&mut buffers[m][gf.output as usize], g)?;
                }
                None => accumulate(leaf_acc.entry(inp.id()).or_default(), g)?,
            }
        }
    }
    out.leaves = leaf_acc.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
    Ok(out)
}
