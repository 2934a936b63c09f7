//! The backward pass: an iterative traversal of the graph in reverse creation order.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
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
    pub(crate) leaves: KeyMap<TensorId, Tensor>,
    /// Gradients of the non-leaf targets, by position in the target list.
    pub(crate) non_leaves: KeyMap<usize, Tensor>,
}

/// A hasher for the pass's small keys (node addresses, tensor ids), much cheaper than
/// SipHash; the keys are not attacker-controlled.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
    fn finish(&self) -> u64 {
        // the multiply leaves the entropy in the high bits; fold it into the low ones,
        // which pick the bucket
        self.0 ^ (self.0 >> 29)
    }
}

pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;
type KeySet<K> = HashSet<K, BuildHasherDefault<KeyHasher>>;

/// A node ordered by its creation `seq` (kept next to it, so the heap compares without
/// touching the node).
struct BySeq<'a>(u64, &'a Arc<Node>);

impl PartialEq for BySeq<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for BySeq<'_> {}
impl PartialOrd for BySeq<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for BySeq<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

const NOT_REACHED: Error = Error::Internal { op: "backward", reason: "node not reached" };

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

/// Adds `g` to the gradient of leaf `id` in `leaves` (or sets it).
fn accumulate_leaf(leaves: &mut KeyMap<TensorId, Tensor>, id: TensorId, g: Tensor) -> Result<()> {
    use std::collections::hash_map::Entry;
    match leaves.entry(id) {
        Entry::Occupied(mut e) => {
            let sum = e.get().add(&g)?;
            e.insert(sum);
        }
        Entry::Vacant(e) => {
            e.insert(g);
        }
    }
    Ok(())
}

/// Runs the backward pass from `roots` (outputs with their cotangents).
pub(crate) fn run(
    roots: &[(Tensor, Tensor)],
    targets: &Targets<'_>,
    create_graph: bool,
) -> Result<Output> {
    // backward passes run each op in the dtype its forward used, never autocast's
    let _plain = crate::autocast::suspend();
    // 1. collect the reachable nodes in descending seq order (a topological order of the
    // backward pass) with a max-heap on seq: when a node is first popped, every node that
    // consumes it has been popped already, so all its copies are in the heap and come out
    // next, where they are skipped. The nodes are borrowed from the graph, which `roots`
    // keeps alive.
    let mut heap: BinaryHeap<BySeq<'_>> = BinaryHeap::new();
    for (t, _) in roots {
        if let Some(gf) = t.grad_fn() {
            heap.push(BySeq(gf.node.seq, &gf.node));
        }
    }
    let mut nodes: Vec<&Arc<Node>> = Vec::new();
    // the nodes' seqs, contiguous: lookups search them without touching the nodes
    let mut seqs: Vec<u64> = Vec::new();
    while let Some(BySeq(seq, n)) = heap.pop() {
        if seqs.last() == Some(&seq) {
            continue;
        }
        for inp in &n.inputs {
            if let Some(gf) = inp.grad_fn() {
                heap.push(BySeq(gf.node.seq, &gf.node));
            }
        }
        nodes.push(n);
        seqs.push(seq);
    }
    drop(heap);
    // the position in `nodes` of a reached node that is an input of node `i` (so it comes
    // after `i`): often `i + 1` (chains), else a binary search
    let index = |i: usize, n: &Arc<Node>| {
        if seqs.get(i + 1) == Some(&n.seq) {
            return Some(i + 1);
        }
        let after = seqs.get(i + 1..)?;
        after.binary_search_by(|&s| n.seq.cmp(&s)).ok().map(|j| i + 1 + j)
    };
    // where each node's inputs (`needs`) and outputs (`buffers`) start in the flat vectors
    // (one vector for both: each allocation was a few percent of a small fwd+bwd)
    let mut starts = Vec::with_capacity(2 * (nodes.len() + 1));
    let (mut n_in, mut n_out) = (0, 0);
    for n in &nodes {
        starts.push(n_in);
        starts.push(n_out);
        n_in += n.inputs.len();
        n_out += n.outputs.len();
    }
    starts.push(n_in);
    starts.push(n_out);
    let in_start = |i: usize| starts[2 * i];
    let out_start = |i: usize| starts[2 * i + 1];

    // 2. which nodes lead to a target, and which of their inputs need a gradient
    let mut leaf_targets: KeySet<TensorId> = KeySet::default();
    let mut node_targets: KeyMap<(usize, u32), Vec<usize>> = KeyMap::default();
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
    // which nodes are needed, then which inputs need a gradient, in one vector
    let mut flags = vec![false; nodes.len() + n_in];
    let (needed, needs) = flags.split_at_mut(nodes.len());
    for i in (0..nodes.len()).rev() {
        let mut any = false;
        for (j, inp) in nodes[i].inputs.iter().enumerate() {
            let need = inp.requires_grad()
                && match inp.grad_fn() {
                    None => all_leaves || leaf_targets.contains(&inp.id()),
                    Some(gf) => {
                        node_targets.contains_key(&(node_key(&gf.node), gf.output))
                            || index(i, &gf.node).is_some_and(|m| needed[m])
                    }
                };
            needs[in_start(i) + j] = need;
            any |= need;
        }
        needed[i] = any;
    }

    // 3. seed the cotangent buffers. From here on grad mode is `create_graph`: the sums
    // of cotangents given for the same output are part of the backward pass (recorded
    // with create_graph even inside no_grad, never recorded without it).
    let _mode = set_grad_enabled(create_graph);
    let mut buffers: Vec<Option<Tensor>> = vec![None; n_out];
    let mut out = Output { leaves: KeyMap::default(), non_leaves: KeyMap::default() };
    for (t, g) in roots {
        match t.grad_fn() {
            Some(gf) => {
                let i = seqs.binary_search_by(|&s| gf.node.seq.cmp(&s)).map_err(|_| NOT_REACHED)?;
                accumulate(&mut buffers[out_start(i) + gf.output as usize], g.clone())?;
            }
            None => {
                if all_leaves || leaf_targets.contains(&t.id()) {
                    accumulate_leaf(&mut out.leaves, t.id(), g.clone())?;
                }
            }
        }
    }

    // 4. run the VJPs in reverse creation order
    let mut grads: Vec<Option<Tensor>> = Vec::new();
    for (i, &node) in nodes.iter().enumerate() {
        grads.clear();
        grads.extend(buffers[out_start(i)..out_start(i + 1)].iter_mut().map(Option::take));
        if !node_targets.is_empty() {
            for (k, g) in grads.iter().enumerate() {
                if let (Some(positions), Some(g)) =
                    (node_targets.get(&(node_key(node), k as u32)), g)
                {
                    for &p in positions {
                        out.non_leaves.insert(p, g.clone());
                    }
                }
            }
        }
        if !needed[i] || grads.iter().all(Option::is_none) {
            continue;
        }
        let needs_i = &needs[in_start(i)..in_start(i + 1)];
        let cx = VjpCtx { node, create_graph, needs: needs_i };
        let gin = node.op.vjp(&cx, &grads)?;
        grads.clear();
        if gin.len() != node.inputs.len() {
            return Err(Error::Internal { op: node.op.name(), reason: "vjp returned wrong arity" });
        }
        for (j, g) in gin.into_iter().enumerate() {
            let Some(mut g) = g else { continue };
            if !needs_i[j] {
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
                    let m = index(i, &gf.node).ok_or(NOT_REACHED)?;
                    accumulate(&mut buffers[out_start(m) + gf.output as usize], g)?;
                }
                None => accumulate_leaf(&mut out.leaves, inp.id(), g)?,
            }
        }
    }
    Ok(out)
}
