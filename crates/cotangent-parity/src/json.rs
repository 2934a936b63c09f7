//! Tensors in and out of the protocol's JSON: exact number parsing per dtype, exact
//! (shortest round-trip) number printing, non-finite values as strings.

use std::fmt::Write as _;

use cotangent::{DType, Shape, Tensor};
use serde_json::Value;

use crate::dispatch::{bad, Res};
use crate::limits::{MAX_ELEMENTS, MAX_RANK};

/// What a tensor of a case is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An input: may carry `requires_grad` (default: true for floating and complex).
    Input,
    /// A cotangent: `requires_grad` is accepted and ignored.
    Cotangent,
}

/// A dtype named in a case (the protocol's names, and `f16`, which the library has too).
pub(crate) fn dtype_of(name: &str) -> Option<DType> {
    DType::from_name(name)
}

/// The number of elements of `dims` counting every dim as at least 1, or `None` on
/// overflow: the bound every size check of the runner uses (so zero-size tensors with
/// huge other dims are refused too, and nothing derived from them can blow up).
pub(crate) fn bulk(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d.max(1)))
}

/// `BadCase` unless `dims` is within the runner's limits.
pub(crate) fn check_size(what: &str, dims: &[usize]) -> Res<()> {
    if dims.len() > MAX_RANK {
        return Err(bad(format!(
            "{what}: {} dims is more than the runner's limit of {MAX_RANK}",
            dims.len()
        )));
    }
    match bulk(dims) {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(bad(format!(
            "{what}: shape {dims:?} is larger than the runner's limit of {MAX_ELEMENTS} elements"
        ))),
    }
}

/// A float literal of a case: a JSON number (its text) or one of the strings `"nan"`,
/// `"inf"`, `"-inf"`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lit<'a> {
    Num(&'a str),
    NaN,
    Inf,
    NegInf,
}

pub(crate) fn float_lit(v: &Value) -> Option<Lit<'_>> {
    match v {
        Value::Number(n) => Some(Lit::Num(n.as_str())),
        Value::String(s) => match s.as_str() {
            "nan" => Some(Lit::NaN),
            "inf" => Some(Lit::Inf),
            "-inf" => Some(Lit::NegInf),
            _ => None,
        },
        _ => None,
    }
}

/// A literal as the nearest `f64`; `None` if a number overflows (`1e400`: infinities are
/// written as strings).
pub(crate) fn lit_f64(l: Lit<'_>) -> Option<f64> {
    match l {
        Lit::Num(s) => s.parse::<f64>().ok().filter(|v| v.is_finite()),
        Lit::NaN => Some(f64::NAN),
        Lit::Inf => Some(f64::INFINITY),
        Lit::NegInf => Some(f64::NEG_INFINITY),
    }
}

/// A literal as the nearest `f32`, parsed from its decimal text directly (no double
/// rounding through `f64`).
fn lit_f32(l: Lit<'_>) -> Option<f32> {
    match l {
        Lit::Num(s) => s.parse::<f32>().ok().filter(|v| v.is_finite()),
        Lit::NaN => Some(f32::NAN),
        Lit::Inf => Some(f32::INFINITY),
        Lit::NegInf => Some(f32::NEG_INFINITY),
    }
}

fn floats<T>(
    what: &str,
    dtype: DType,
    data: &[Value],
    conv: impl Fn(Lit<'_>) -> Option<T>,
) -> Res<Vec<T>> {
    data.iter()
        .enumerate()
        .map(|(i, v)| {
            let lit = float_lit(v).ok_or_else(|| {
                bad(format!(
                    "{what}: element {i} of `data` must be a number or \"nan\", \"inf\", \"-inf\""
                ))
            })?;
            conv(lit).ok_or_else(|| {
                bad(format!("{what}: element {i} of `data` is out of range for {dtype}"))
            })
        })
        .collect()
}

/// Parses a tensor object of a case.
pub(crate) fn parse_tensor(v: &Value, what: &str, role: Role) -> Res<Tensor> {
    let Value::Object(obj) = v else {
        return Err(bad(format!("{what}: a tensor must be a JSON object")));
    };
    for k in obj.keys() {
        if !matches!(k.as_str(), "dtype" | "shape" | "data" | "imag" | "requires_grad") {
            return Err(bad(format!(
                "{what}: unknown key `{k}` (a tensor has dtype, shape, data, imag, requires_grad)"
            )));
        }
    }
    let dtype = match obj.get("dtype") {
        Some(Value::String(s)) => dtype_of(s).ok_or_else(|| {
            bad(format!(
                "{what}: unknown dtype `{s}` (one of f32, f64, bf16, f16, c64, c128, i64, bool)"
            ))
        })?,
        Some(_) => return Err(bad(format!("{what}: `dtype` must be a string"))),
        None => return Err(bad(format!("{what}: the tensor has no `dtype`"))),
    };
    let dims = match obj.get("shape") {
        Some(Value::Array(a)) => {
            if a.len() > MAX_RANK {
                return Err(bad(format!(
                    "{what}: {} dims is more than the runner's limit of {MAX_RANK}",
                    a.len()
                )));
            }
            a.iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| {
                    bad(format!("{what}: `shape` must be a list of non-negative integers"))
                })?
        }
        Some(_) => {
            return Err(bad(format!("{what}: `shape` must be a list of non-negative integers")))
        }
        None => return Err(bad(format!("{what}: the tensor has no `shape`"))),
    };
    check_size(what, &dims)?;
    let numel: usize = dims.iter().product();
    let data = match obj.get("data") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad(format!("{what}: `data` must be a list"))),
        None => return Err(bad(format!("{what}: the tensor has no `data`"))),
    };
    if data.len() != numel {
        return Err(bad(format!(
            "{what}: shape {dims:?} needs {numel} elements, `data` has {}",
            data.len()
        )));
    }
    let imag = match obj.get("imag") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if dtype.is_complex() => Some(a),
        Some(_) if !dtype.is_complex() => {
            return Err(bad(format!("{what}: `imag` is only for complex dtypes")))
        }
        Some(_) => return Err(bad(format!("{what}: `imag` must be a list"))),
    };
    let requires_grad = match obj.get("requires_grad") {
        None | Some(Value::Null) => role == Role::Input && dtype.is_differentiable(),
        Some(Value::Bool(b)) => role == Role::Input && *b,
        Some(_) => return Err(bad(format!("{what}: `requires_grad` must be true or false"))),
    };
    if requires_grad && !dtype.is_differentiable() {
        return Err(bad(format!(
            "{what}: only floating and complex tensors can require grad, not {dtype}"
        )));
    }
    let shape = Shape::new(dims);
    let t = match dtype {
        DType::F64 => Tensor::from_vec(floats(what, dtype, data, lit_f64)?, shape)?,
        DType::F32 => Tensor::from_vec(floats(what, dtype, data, lit_f32)?, shape)?,
        DType::I64 => {
            let v = data
                .iter()
                .map(Value::as_i64)
                .collect::<Option<Vec<i64>>>()
                .ok_or_else(|| bad(format!("{what}: i64 `data` must be integers")))?;
            Tensor::from_vec(v, shape)?
        }
        DType::Bool => {
            let v = data
                .iter()
                .map(Value::as_bool)
                .collect::<Option<Vec<bool>>>()
                .ok_or_else(|| bad(format!("{what}: bool `data` must be true or false")))?;
            Tensor::from_vec(v, shape)?
        }
        d if d.is_complex() => {
            let Some(imag) = imag else {
                return Err(bad(format!("{what}: a complex tensor needs `imag`")));
            };
            if imag.len() != numel {
                return Err(bad(format!(
                    "{what}: shape {:?} needs {numel} elements, `imag` has {}",
                    shape.dims(),
                    imag.len()
                )));
            }
            // each part parsed straight to its precision, then put together
            let (re, im) = if d == DType::C64 {
                (
                    Tensor::from_vec(floats(what, dtype, data, lit_f32)?, shape.clone())?,
                    Tensor::from_vec(floats(what, dtype, imag, lit_f32)?, shape)?,
                )
            } else {
                (
                    Tensor::from_vec(floats(what, dtype, data, lit_f64)?, shape.clone())?,
                    Tensor::from_vec(floats(what, dtype, imag, lit_f64)?, shape)?,
                )
            };
            Tensor::complex(&re, &im)?
        }
        // 16-bit floats: the nearest f64, then the library's (correctly rounded) cast
        d => {
            let v = floats(what, dtype, data, lit_f64)?;
            let finite: Vec<bool> = v.iter().map(|x| x.is_finite()).collect();
            let t = Tensor::from_vec(v, shape)?.to_dtype(d)?;
            let back = t.to_vec_f64();
            if let Some(i) = back.iter().zip(&finite).position(|(x, &f)| f && !x.is_finite()) {
                return Err(bad(format!("{what}: element {i} of `data` is out of range for {d}")));
            }
            t
        }
    };
    Ok(if requires_grad { t.with_requires_grad(true)? } else { t })
}

/// Appends `x` as a JSON value that reads back to the same `f64`.
fn push_f64(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"nan\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "\"inf\"" } else { "\"-inf\"" });
    } else {
        // Debug prints the shortest decimal that reads back exactly, with an exponent
        // when large or small: always valid JSON
        let _ = write!(out, "{x:?}");
    }
}

/// Appends `x` as a JSON value that reads back to the same `f32` (its shortest decimal).
fn push_f32(out: &mut String, x: f32) {
    if x.is_finite() {
        let _ = write!(out, "{x:?}");
    } else {
        push_f64(out, f64::from(x));
    }
}

fn push_list<T: Copy>(out: &mut String, v: &[T], f: impl Fn(&mut String, T)) {
    out.push('[');
    for (i, &x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        f(out, x);
    }
    out.push(']');
}

/// Appends a tensor as the protocol's JSON object.
pub(crate) fn push_tensor(out: &mut String, t: &Tensor) -> Res<()> {
    let dtype = t.dtype();
    let mut data = String::new();
    match dtype {
        DType::F64 => push_list(&mut data, &t.to_vec::<f64>()?, push_f64),
        DType::F32 => push_list(&mut data, &t.to_vec::<f32>()?, push_f32),
        DType::I64 => push_list(&mut data, &t.to_vec::<i64>()?, |o, x| {
            let _ = write!(o, "{x}");
        }),
        DType::Bool => push_list(&mut data, &t.to_vec::<bool>()?, |o, x| {
            o.push_str(if x { "true" } else { "false" });
        }),
        d if d.is_complex() => {
            let (re, im) = (t.real()?, t.imag()?);
            let mut imag = String::new();
            if d == DType::C64 {
                push_list(&mut data, &re.to_vec::<f32>()?, push_f32);
                push_list(&mut imag, &im.to_vec::<f32>()?, push_f32);
            } else {
                push_list(&mut data, &re.to_vec::<f64>()?, push_f64);
                push_list(&mut imag, &im.to_vec::<f64>()?, push_f64);
            }
            data.push_str(",\"imag\":");
            data.push_str(&imag);
        }
        // 16-bit floats are exact in f32: the shortest f32 decimal reads back exactly
        _ => push_list(&mut data, &t.to_vec_f64(), |o, x| push_f32(o, x as f32)),
    }
    let _ = write!(out, "{{\"dtype\":\"{}\",\"shape\":", dtype.as_str());
    push_list(out, t.dims(), |o, d| {
        let _ = write!(o, "{d}");
    });
    out.push_str(",\"data\":");
    out.push_str(&data);
    out.push('}');
    Ok(())
}

/// A JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}
