//! `linalg.vector_norm`, `linalg.matrix_norm`, `linalg.norm`, `linalg.cond` and the
//! deprecated `torch.norm` (dispatched to the first two by PyTorch's own rules).

use cotangent::linalg::{self, NormOrd};
use cotangent::Tensor;
use serde_json::Value;

use crate::dispatch::{bad, one, Args, Attrs, Fail, Res};
use crate::json::{float_lit, lit_f64};
use crate::Kind;

fn invalid(msg: String) -> Fail {
    Fail::Kind(Kind::InvalidArgument, msg)
}

/// An order attribute: a number (or `"inf"`, `"-inf"`), `"fro"` or `"nuc"`; `None` when
/// absent. Another string is PyTorch's "order not supported".
fn ord_attr(op: &str, at: &Attrs<'_>, name: &str) -> Res<Option<NormOrd>> {
    let Some(v) = at.get(name) else { return Ok(None) };
    match v {
        Value::String(s) if s == "fro" => Ok(Some(NormOrd::Fro)),
        Value::String(s) if s == "nuc" => Ok(Some(NormOrd::Nuc)),
        _ => match float_lit(v).and_then(lit_f64) {
            Some(p) => Ok(Some(NormOrd::P(p))),
            None if v.is_string() => Err(invalid(format!("{op}: order {v} is not supported"))),
            None => Err(bad(format!("{op}: attribute `{name}` must be a number or a string"))),
        },
    }
}

/// A numeric order (vector norms).
fn numeric(op: &str, ord: Option<NormOrd>, default: f64) -> Res<f64> {
    match ord {
        None => Ok(default),
        Some(NormOrd::P(p)) => Ok(p),
        Some(o) => {
            Err(invalid(format!("{op}: order {o:?} is a matrix norm's, not a vector norm's")))
        }
    }
}

fn dims(at: &Attrs<'_>) -> Res<Option<Vec<isize>>> {
    Ok(at.ints("dim")?.map(|d| d.into_iter().map(|x| x as isize).collect()))
}

/// Two dims (`matrix_norm`'s `dim`).
fn pair(op: &str, d: &[isize]) -> Res<[isize; 2]> {
    match d {
        &[a, b] => Ok([a, b]),
        _ => Err(invalid(format!("{op}: dim must be a 2-tuple, got {d:?}"))),
    }
}

/// `linalg.vector_norm(x, ord=2, dim=None, keepdim=False)`.
pub(crate) fn vector_norm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let op = "linalg.vector_norm";
    let ord = numeric(op, ord_attr(op, at, "ord")?, 2.0)?;
    let d = dims(at)?;
    one(linalg::vector_norm(a.t(0)?, ord, d.as_deref(), at.bool_or("keepdim", false)?))
}

/// `linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False)`.
pub(crate) fn matrix_norm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let op = "linalg.matrix_norm";
    let ord = ord_attr(op, at, "ord")?.unwrap_or(NormOrd::Fro);
    let d = match dims(at)? {
        Some(d) => pair(op, &d)?,
        None => [-2, -1],
    };
    one(linalg::matrix_norm(a.t(0)?, ord, d, at.bool_or("keepdim", false)?))
}

/// `linalg.norm(A, ord=None, dim=None, keepdim=False)`.
pub(crate) fn norm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let ord = ord_attr("linalg.norm", at, "ord")?;
    let d = dims(at)?;
    one(linalg::norm(a.t(0)?, ord, d.as_deref(), at.bool_or("keepdim", false)?))
}

/// `linalg.cond(A, p=None)`.
pub(crate) fn cond(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    one(linalg::cond(a.t(0)?, ord_attr("linalg.cond", at, "p")?))
}

/// `torch.norm(x, p='fro', dim=None, keepdim=False)`, as PyTorch's `torch/functional.py`
/// dispatches it: `'fro'` over at most two dims (or all) is the vector 2-norm; `'nuc'`
/// (and `'fro'` over more dims) a matrix norm over `dim` (all dims when absent, which
/// must then be two); a number (`None`: 2) the vector norm.
pub(crate) fn torch_norm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
    a.count(1, 1)?;
    let x = a.t(0)?;
    let op = "norm";
    let d = dims(at)?;
    let keepdim = at.bool_or("keepdim", false)?;
    match ord_attr(op, at, "p")?.unwrap_or(NormOrd::Fro) {
        NormOrd::Fro if d.as_ref().is_none_or(|d| d.len() <= 2) => {
            one(linalg::vector_norm(x, 2.0, d.as_deref(), keepdim))
        }
        NormOrd::P(p) => one(linalg::vector_norm(x, p, d.as_deref(), keepdim)),
        o => {
            let all: Vec<isize> = (0..x.rank() as isize).collect();
            let d = pair("linalg.matrix_norm", d.as_deref().unwrap_or(&all))?;
            one(linalg::matrix_norm(x, o, d, keepdim))
        }
    }
}
