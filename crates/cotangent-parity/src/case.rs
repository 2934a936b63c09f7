//! One case, end to end: read it, run its op, take the gradients, write the result.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cotangent::autograd::{self, GradOptions};
use cotangent::{DType, Tensor};
use serde_json::{Map, Value};

use crate::dispatch::{self, bad, Arg, Args, Attrs, Fail, Res};
use crate::json::{parse_tensor, push_tensor, quote, Role};
use crate::limits::MAX_OUTPUTS;
use crate::Kind;

/// The answer to a line that is not a case at all (id unknown).
pub(crate) fn bad_line(message: &str) -> String {
    error_line("null", Kind::BadCase, message)
}

fn error_line(id: &str, kind: Kind, message: &str) -> String {
    format!(
        "{{\"id\":{id},\"error\":{{\"kind\":\"{}\",\"message\":{}}}}}",
        kind.as_str(),
        quote(message)
    )
}

/// The answer to one line.
pub(crate) fn answer(line: &str) -> String {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return bad_line(&format!("the line is not valid JSON: {e}")),
    };
    let id = match v.get("id") {
        None | Some(Value::Null) => "null".to_string(),
        Some(id @ (Value::String(_) | Value::Number(_))) => id.to_string(),
        Some(_) => return bad_line("the case's `id` must be a string"),
    };
    let op = v.get("op").and_then(Value::as_str).unwrap_or("case");
    match catch_unwind(AssertUnwindSafe(|| evaluate(&v))) {
        Ok(Ok(body)) => format!("{{\"id\":{id},{body},\"error\":null}}"),
        Ok(Err(Fail::Kind(kind, message))) => error_line(&id, kind, &message),
        Ok(Err(Fail::Lib(e))) => {
            let msg = e.to_string();
            let msg = if msg.starts_with(op) { msg } else { format!("{op}: {msg}") };
            error_line(&id, Kind::of(&e), &msg)
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            error_line(
                &id,
                Kind::Unsupported,
                &format!("{op}: internal error: the library panicked ({what}); please report it"),
            )
        }
    }
}

/// Evaluates a parsed case; returns the result's `"outputs":...[,"grads":...]` members.
fn evaluate(v: &Value) -> Res<String> {
    let Value::Object(obj) = v else {
        return Err(bad("a case must be a JSON object"));
    };
    for k in obj.keys() {
        if !matches!(
            k.as_str(),
            "id" | "op" | "inputs" | "attrs" | "cotangents" | "tangents" | "autocast"
        ) {
            return Err(bad(format!(
                "unknown key `{k}` (a case has id, op, inputs, attrs, cotangents, tangents, \
                 autocast)"
            )));
        }
    }
    let op = match obj.get("op") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(bad("`op` must be a string")),
        None => return Err(bad("the case has no `op`")),
    };
    let spec = dispatch::find(op).ok_or_else(|| {
        bad(format!("unknown op `{op}` (the runner's ops: {})", dispatch::op_names().join(", ")))
    })?;
    let empty = Map::new();
    let attrs = match obj.get("attrs") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad(format!("{op}: `attrs` must be an object"))),
    };
    for k in attrs.keys() {
        if !spec.attrs.contains(&k.as_str()) {
            let known = if spec.attrs.is_empty() {
                "it takes none".to_string()
            } else {
                format!("it takes {}", spec.attrs.join(", "))
            };
            return Err(bad(format!("{op}: unknown attribute `{k}` ({known})")));
        }
    }
    let inputs = parse_inputs(op, obj.get("inputs"))?;
    let cotangents = match obj.get("cotangents") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .enumerate()
                .map(|(k, c)| match c {
                    Value::Null => Ok(None),
                    c => {
                        parse_tensor(c, &format!("{op}: cotangent {k}"), Role::Cotangent).map(Some)
                    }
                })
                .collect::<Res<Vec<Option<Tensor>>>>()?,
        ),
        Some(_) => return Err(bad(format!("{op}: `cotangents` must be a list"))),
    };
    let tangents = match obj.get("tangents") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_tangents(op, v, &inputs)?),
    };
    let region = match obj.get("autocast") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) if d == "bf16" => Some(DType::Bf16),
        Some(Value::String(d)) if d == "f16" => Some(DType::F16),
        Some(v) => {
            return Err(bad(format!("{op}: `autocast` must be \"bf16\" or \"f16\", got {v}")))
        }
    };
    let run = || (spec.run)(&Args::new(spec.name, &inputs), &Attrs::new(spec.name, attrs));
    let outputs = match region {
        None => run()?,
        Some(d) => {
            // the op inside an autocast region (PyTorch's torch.autocast("cpu", dtype=d));
            // the backward below runs outside it, as PyTorch recommends
            let mut out = None;
            cotangent::autocast(d, || {
                out = Some(run());
                Ok(())
            })?;
            out.unwrap_or_else(|| Err(bad(format!("{op}: the autocast region did not run"))))?
        }
    };
    if outputs.len() > MAX_OUTPUTS {
        return Err(bad(format!(
            "{op}: {} outputs is more than the runner's limit of {MAX_OUTPUTS}",
            outputs.len()
        )));
    }
    let grads = cotangents.map(|c| gradients(op, &inputs, &outputs, &c)).transpose()?;
    // forward mode: the op run again on dual inputs (each mode as if alone), outside any
    // autocast region (the tangents of a region's casts are the casts of the tangents)
    let jvps = match &tangents {
        Some(t) => {
            let level = cotangent::autograd::forward::dual_level();
            let duals = dual_inputs(&level, &inputs, t)?;
            let outs = (spec.run)(&Args::new(spec.name, &duals), &Attrs::new(spec.name, attrs))?;
            Some(directional(op, &level, &outs)?)
        }
        None => None,
    };

    let mut body = String::from("\"outputs\":[");
    for (i, t) in outputs.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        push_tensor(&mut body, t)?;
    }
    body.push(']');
    if let Some(grads) = grads {
        body.push_str(",\"grads\":[");
        for (i, g) in grads.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            match g {
                Grad::One(g) => push_opt(&mut body, g.as_ref())?,
                Grad::List(gs) => {
                    body.push('[');
                    for (j, g) in gs.iter().enumerate() {
                        if j > 0 {
                            body.push(',');
                        }
                        push_opt(&mut body, g.as_ref())?;
                    }
                    body.push(']');
                }
            }
        }
        body.push(']');
    }
    if let Some(jvps) = jvps {
        body.push_str(",\"jvps\":[");
        for (i, t) in jvps.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            push_opt(&mut body, t.as_ref())?;
        }
        body.push(']');
    }
    Ok(body)
}

/// The tangents of a case, shaped as its inputs: one entry per input (a list for a list
/// input), `null` for an input held constant.
fn parse_tangents(op: &str, v: &Value, inputs: &[Arg]) -> Res<Vec<Vec<Option<Tensor>>>> {
    let Value::Array(items) = v else {
        return Err(bad(format!("{op}: `tangents` must be a list")));
    };
    if items.len() != inputs.len() {
        return Err(bad(format!(
            "{op}: {} tangents for {} inputs (give one per input, null for none)",
            items.len(),
            inputs.len()
        )));
    }
    let one = |t: &Value, x: &Tensor, what: String| -> Res<Option<Tensor>> {
        if matches!(t, Value::Null) {
            return Ok(None);
        }
        let t = parse_tensor(t, &what, Role::Cotangent)?;
        if t.dtype() != x.dtype() || t.dims() != x.dims() {
            return Err(bad(format!(
                "{what} is {} {:?}, its input is {} {:?}",
                t.dtype(),
                t.dims(),
                x.dtype(),
                x.dims()
            )));
        }
        Ok(Some(t))
    };
    items
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (t, a))| match (a, t) {
            (Arg::One(x), t) => Ok(vec![one(t, x, format!("{op}: tangent {i}"))?]),
            (Arg::List(xs), Value::Array(ts)) if ts.len() == xs.len() => ts
                .iter()
                .zip(xs)
                .enumerate()
                .map(|(j, (t, x))| one(t, x, format!("{op}: tangent {i}[{j}]")))
                .collect(),
            (Arg::List(xs), Value::Null) => Ok(vec![None; xs.len()]),
            (Arg::List(_), _) => Err(bad(format!(
                "{op}: tangent {i} must be a list of one tangent per tensor of its input (or null)"
            ))),
        })
        .collect()
}

/// The inputs with their tangents attached at `level` (detached from reverse mode: the
/// forward run is its own).
fn dual_inputs(
    level: &cotangent::autograd::forward::DualLevel,
    inputs: &[Arg],
    tangents: &[Vec<Option<Tensor>>],
) -> Res<Vec<Arg>> {
    let dual = |x: &Tensor, t: &Option<Tensor>| -> Res<Tensor> {
        Ok(match t {
            Some(t) => level.make_dual(&x.detach(), t)?,
            None => x.detach(),
        })
    };
    inputs
        .iter()
        .zip(tangents)
        .map(|(a, ts)| match a {
            Arg::One(x) => Ok(Arg::One(dual(x, &ts[0])?)),
            Arg::List(xs) => {
                xs.iter().zip(ts).map(|(x, t)| dual(x, t)).collect::<Res<_>>().map(Arg::List)
            }
        })
        .collect()
}

/// The directional derivative of each output (`torch.func.jvp`): its tangent, zeros for a
/// differentiable output that does not depend on the tangents, `null` for integer and
/// boolean outputs and those PyTorch does not differentiate.
fn directional(
    op: &str,
    level: &cotangent::autograd::forward::DualLevel,
    outputs: &[Tensor],
) -> Res<Vec<Option<Tensor>>> {
    outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            if !o.dtype().is_differentiable() || NOT_DIFFERENTIATED.contains(&(op, k)) {
                return Ok(None);
            }
            Ok(Some(match level.unpack_dual(o)?.1 {
                Some(t) => t,
                None => o.zeros_like()?,
            }))
        })
        .collect()
}

fn push_opt(out: &mut String, t: Option<&Tensor>) -> Res<()> {
    if let Some(t) = t {
        return push_tensor(out, t);
    }
    out.push_str("null");
    Ok(())
}

fn parse_inputs(op: &str, v: Option<&Value>) -> Res<Vec<Arg>> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad(format!("{op}: `inputs` must be a list"))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Array(list) => list
                .iter()
                .enumerate()
                .map(|(j, t)| {
                    if t.is_array() {
                        return Err(bad(format!("{op}: input {i}: lists of tensors do not nest")));
                    }
                    parse_tensor(t, &format!("{op}: input {i}[{j}]"), Role::Input)
                })
                .collect::<Res<Vec<Tensor>>>()
                .map(Arg::List),
            t => parse_tensor(t, &format!("{op}: input {i}"), Role::Input).map(Arg::One),
        })
        .collect()
}

/// The gradient entry of one input: a tensor (or `null`), or a list for a list input.
enum Grad {
    One(Option<Tensor>),
    List(Vec<Option<Tensor>>),
}

/// The floating outputs, by op and index, that PyTorch does not differentiate: LU's
/// permutation, lstsq's singular values, and slogdet's sign (which PyTorch records, with a
/// gradient that is zero for real input). A cotangent on one adds nothing.
const NOT_DIFFERENTIATED: &[(&str, usize)] =
    &[("linalg.lu", 0), ("lu_unpack", 0), ("linalg.lstsq", 3), ("linalg.slogdet", 0)];

/// `dL/d input` for `L = Σ_o sum(G_o * o)`, through `autograd::grad`. Inputs that require
/// grad but do not reach any output get zeros (the gradient is zero), as PyTorch with
/// `materialize_grads`.
fn gradients(
    op: &str,
    inputs: &[Arg],
    outputs: &[Tensor],
    cotangents: &[Option<Tensor>],
) -> Res<Vec<Grad>> {
    if cotangents.len() != outputs.len() {
        return Err(bad(format!(
            "{op}: {} cotangents for {} outputs (give one per output, null for none)",
            cotangents.len(),
            outputs.len()
        )));
    }
    let leaves: Vec<&Tensor> = inputs
        .iter()
        .flat_map(|a| match a {
            Arg::One(t) => std::slice::from_ref(t),
            Arg::List(ts) => ts.as_slice(),
        })
        .filter(|t| t.requires_grad())
        .collect();
    let mut roots = Vec::new();
    let mut seeds = Vec::new();
    for (k, (o, c)) in outputs.iter().zip(cotangents).enumerate() {
        let Some(c) = c else { continue };
        if c.dtype() != o.dtype() || c.dims() != o.dims() {
            return Err(bad(format!(
                "{op}: cotangent {k} is {} {:?}, its output is {} {:?}",
                c.dtype(),
                c.dims(),
                o.dtype(),
                o.dims()
            )));
        }
        if o.requires_grad() {
            roots.push(o);
            seeds.push(Some(c));
        } else if o.dtype().is_differentiable()
            && o.numel() > 0
            && !leaves.is_empty()
            && !NOT_DIFFERENTIATED.contains(&(op, k))
        {
            // never a silently dropped gradient: an output PyTorch differentiates that
            // comes back without history is the library's gap, and says so
            return Err(Fail::Kind(
                Kind::Unsupported,
                format!("{op}: output {k} carries no gradient in the library"),
            ));
        }
        // an integer or boolean output, one PyTorch does not differentiate, an empty one,
        // or one of inputs that require no grad: its cotangent adds nothing (PyTorch's harness drops
        // it: `torch.autograd.grad` takes only outputs that require grad)
    }
    let found = if roots.is_empty() || leaves.is_empty() {
        vec![None; leaves.len()]
    } else {
        let opts = GradOptions { create_graph: false, allow_unused: true };
        autograd::grad(&roots, &seeds, &leaves, opts)?
    };
    let mut found = found.into_iter();
    let mut next = |t: &Tensor| -> Res<Option<Tensor>> {
        if !t.requires_grad() {
            return Ok(None);
        }
        match found.next().flatten() {
            Some(g) => Ok(Some(g)),
            None => Ok(Some(t.zeros_like()?)),
        }
    };
    inputs
        .iter()
        .map(|a| match a {
            Arg::One(t) => next(t).map(Grad::One),
            Arg::List(ts) => ts.iter().map(&mut next).collect::<Res<Vec<_>>>().map(Grad::List),
        })
        .collect()
}
