//! Fuzzing: the oracle that the fuzz targets (`fuzz/`) and the corpus replay test
//! (`tests/fuzz_corpus.rs`, on stable Rust) apply to the runner's answers, and the
//! structure-aware generator of the `adversarial` target.
//!
//! The oracle ([`check_answer`], [`check_stream`]): every non-blank line gets exactly one
//! answer, a JSON object with an `id` and either outputs or an error of a protocol kind,
//! and no error is the library's `internal error` (a broken invariant, or a panic the
//! runner caught): adversarial input must get a named error or a result, never a bug.
//!
//! The generator ([`adversarial`]) reads fuzz bytes as choices: an op of the runner
//! ([`crate::dispatch::OPS`]), its attributes, and one to three tensors of any dtype,
//! rank 0 to 4 with sizes 0 to 5 (empty tensors and empty batches), filled from a pool of
//! adversarial values (NaN, ±inf, ±0, subnormals, the largest and smallest normals) or as
//! singular, rank-one, identity or negative-definite matrices. A case that runs is run
//! again with cotangents and with tangents of its outputs' and inputs' shapes, so that
//! backward and forward mode see the same inputs.

use serde_json::{json, Value};

use crate::Kind;
use crate::OPS;

/// Checks one answer line: JSON, with an `id`, `outputs` when `error` is null, else an
/// error of a protocol kind that is not the library's internal error. Returns the answer.
pub fn check_answer(line: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line}"))?;
    if v.get("id").is_none() {
        return Err(format!("an answer without an id: {line}"));
    }
    match v.get("error") {
        Some(Value::Null) if v.get("outputs").is_some() => Ok(v),
        Some(Value::Null) => Err(format!("neither outputs nor an error: {line}")),
        Some(e) => {
            let kind = e.get("kind").and_then(Value::as_str).unwrap_or("");
            if Kind::from_name(kind).is_none() {
                return Err(format!("an error of no protocol kind: {line}"));
            }
            let message = e.get("message").and_then(Value::as_str).unwrap_or("");
            if kind != "BadCase" && unquoted(message).contains("internal error") {
                return Err(format!("an internal error: {line}"));
            }
            Ok(v)
        }
        None => Err(format!("an answer without an error member: {line}")),
    }
}

/// What of `message` precedes its first backquote: the runner quotes what it echoes of
/// the line that way, and the fuzzer's text there may say anything (backquotes
/// included). An internal error's marker comes first (`op: internal error: ...`).
/// `BadCase` answers are about the line itself and never carry one (the library's
/// internal errors and caught panics are answered as `Unsupported`).
fn unquoted(message: &str) -> &str {
    message.split('`').next().unwrap_or("")
}

/// Runs the runner on a byte stream and checks that every non-blank line got exactly one
/// answer and each answer passes [`check_answer`]. Returns the number of answers.
pub fn check_stream(data: &[u8]) -> Result<usize, String> {
    let mut out = Vec::new();
    let answered = crate::run(data, &mut out).map_err(|e| format!("writing failed: {e}"))?;
    let expected = data
        .split(|&b| b == b'\n')
        .filter(|l| !std::str::from_utf8(l).is_ok_and(|s| s.trim().is_empty()))
        .count();
    if answered != expected {
        return Err(format!("{answered} answers to {expected} non-blank lines"));
    }
    let text = std::str::from_utf8(&out).map_err(|_| "an answer is not UTF-8".to_string())?;
    if text.lines().count() != answered {
        return Err(format!("{} answer lines for {answered} answers", text.lines().count()));
    }
    for line in text.lines() {
        check_answer(line)?;
    }
    Ok(answered)
}

/// Fuzz bytes read as choices; zeros once they run out.
struct Choices<'a> {
    data: &'a [u8],
    at: usize,
}

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// True for one byte value in `k`.
    fn one_in(&mut self, k: u8) -> bool {
        self.byte().is_multiple_of(k)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        let v = usize::from(self.byte()) | (usize::from(self.byte()) << 8);
        v % n
    }

    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

/// Values that break numerical code.
const POOL: [f64; 18] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    -7.25,
    5e-324,
    2.2250738585072014e-308,
    1e-300,
    1e-8,
    1e300,
    -1e300,
    f64::MAX,
    f64::MIN,
];

/// A JSON number, or the protocol's string for a non-finite value.
fn number(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// `n` values: from the pool, small and ordinary, all equal, or a matrix of a special
/// structure when `shape` ends in a square.
fn values(c: &mut Choices<'_>, shape: &[usize], n: usize) -> Vec<f64> {
    let square = shape.len() >= 2 && shape[shape.len() - 1] == shape[shape.len() - 2];
    let m = shape.last().copied().unwrap_or(1).max(1);
    let ordinary = |c: &mut Choices<'_>| (f64::from(c.byte()) - 127.5) / 32.0;
    match c.below(7) {
        0 => (0..n).map(|_| c.pick(&POOL)).collect(),
        1 => {
            let v = c.pick(&POOL);
            vec![v; n]
        }
        // identity matrices (or ones)
        2 if square => (0..n).map(|k| if (k / m) % m == k % m { 1.0 } else { 0.0 }).collect(),
        // rank one: u vᵀ, singular from order 2
        3 if square => {
            let u: Vec<f64> = (0..m).map(|_| ordinary(c)).collect();
            (0..n).map(|k| u[(k / m) % m] * u[k % m]).collect()
        }
        // negative definite: −(I + small)
        4 if square => (0..n)
            .map(|k| if (k / m) % m == k % m { -1.0 - f64::from(c.byte()) } else { 0.25 })
            .collect(),
        // ordinary values with one adversarial entry
        5 if n > 0 => {
            let mut v: Vec<f64> = (0..n).map(|_| ordinary(c)).collect();
            let at = c.below(n);
            v[at] = c.pick(&POOL);
            v
        }
        _ => (0..n).map(|_| ordinary(c)).collect(),
    }
}

/// A tensor of `dtype` and `shape` filled by [`values`].
fn tensor(c: &mut Choices<'_>, dtype: &str, shape: &[usize]) -> Value {
    let n: usize = shape.iter().product();
    let data: Vec<Value> = match dtype {
        "i64" => (0..n).map(|_| json!(i64::from(c.byte() as i8) % 7)).collect(),
        "bool" => (0..n).map(|_| json!(c.byte() % 2 == 1)).collect(),
        _ => values(c, shape, n).into_iter().map(number).collect(),
    };
    let mut t = json!({"dtype": dtype, "shape": shape, "data": data});
    if dtype == "c64" || dtype == "c128" {
        let imag: Vec<Value> = values(c, shape, n).into_iter().map(number).collect();
        t["imag"] = json!(imag);
    }
    t
}

/// A shape of rank 0 to 4, sizes 0 to 5, square trailing dims more often than not.
fn shape(c: &mut Choices<'_>) -> Vec<usize> {
    let rank = c.below(5);
    let mut s: Vec<usize> = (0..rank).map(|_| c.pick(&[0, 1, 2, 3, 3, 4, 5])).collect();
    if rank >= 2 && !c.one_in(4) {
        s[rank - 1] = s[rank - 2];
    }
    s
}

/// An attribute value of any of the kinds the protocol's attributes take.
fn attr(c: &mut Choices<'_>) -> Value {
    match c.below(8) {
        0 => json!(c.byte() % 2 == 1),
        1 | 2 => json!(i64::from(c.byte() as i8) % 4),
        3 => json!([i64::from(c.byte() as i8) % 3, i64::from(c.byte() as i8) % 3]),
        4 => json!(c.pick(&["fro", "nuc", "inf", "-inf", "L", "U", "reduced", "complete", "r"])),
        5 => number(c.pick(&POOL)),
        6 => json!([1, 2, 2]),
        _ => json!(f64::from(c.byte()) / 16.0 - 4.0),
    }
}

/// The inputs' tensors of a case, flattened (list arguments included).
fn input_tensors(case: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for x in case["inputs"].as_array().into_iter().flatten() {
        match x {
            Value::Array(list) => out.extend(list.iter()),
            t => out.push(t),
        }
    }
    out
}

/// Cotangents (or tangents) shaped as `like` (a list of tensors, or nulls), of their
/// dtypes, for the floating ones; `null` for the others.
fn shaped_as(c: &mut Choices<'_>, like: &[&Value]) -> Value {
    let mut out = Vec::new();
    for t in like {
        let dtype = t["dtype"].as_str().unwrap_or("");
        let shape: Vec<usize> = t["shape"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect();
        let float = matches!(dtype, "f32" | "f64" | "bf16" | "f16" | "c64" | "c128");
        out.push(if float && !c.one_in(8) { tensor(c, dtype, &shape) } else { Value::Null });
    }
    Value::Array(out)
}

/// The structure-aware target: the cases [`adversarial_lines`] makes of `data`, each run
/// and checked. Returns the first failure of the oracle.
pub fn adversarial(data: &[u8]) -> Result<(), String> {
    for line in adversarial_lines(data)?.iter().skip(1) {
        check_answer(&crate::run_line(line))?;
    }
    Ok(())
}

/// The first case [`adversarial_lines`] makes of `data`, without running it (what to look
/// at when running it hangs).
pub fn adversarial_first_line(data: &[u8]) -> String {
    adversarial_case(&mut Choices { data, at: 0 }).to_string()
}

/// The cases of the structure-aware target, as protocol lines: a case made from `data`
/// (an op, its attributes and adversarial tensors) and, if it runs (it is run and its
/// answer checked here), the same case with cotangents of its outputs and with tangents
/// of its inputs. What to look at when the target reports a finding.
pub fn adversarial_lines(data: &[u8]) -> Result<Vec<String>, String> {
    let mut c = Choices { data, at: 0 };
    let case = adversarial_case(&mut c);
    let mut lines = vec![case.to_string()];
    let answer = check_answer(&crate::run_line(&lines[0]))
        .map_err(|e| format!("{e}\n  the case: {}", lines[0]))?;
    let Some(outputs) = answer.get("outputs").and_then(Value::as_array) else { return Ok(lines) };
    let outputs: Vec<&Value> = outputs.iter().collect();
    let mut with_cot = case.clone();
    with_cot["cotangents"] = shaped_as(&mut c, &outputs);
    lines.push(with_cot.to_string());
    let mut with_tan = case.clone();
    let inputs = input_tensors(&case);
    with_tan["tangents"] = shaped_as(&mut c, &inputs);
    lines.push(with_tan.to_string());
    Ok(lines)
}

/// A case: an op, attributes from its list, and one to three tensors.
fn adversarial_case(c: &mut Choices<'_>) -> Value {
    let op = &OPS[c.below(OPS.len())];
    let dtypes = ["f64", "f64", "f64", "f64", "f32", "c128", "c64", "i64", "bool", "bf16"];
    let first = c.pick(&dtypes);
    let n_inputs = 1 + c.below(3);
    let mut inputs = Vec::new();
    let base = shape(c);
    for k in 0..n_inputs {
        // mostly the same dtype and a related shape; sometimes anything
        let dtype = if c.one_in(5) { c.pick(&dtypes) } else { first };
        let s = match c.below(4) {
            0 => shape(c),
            1 if !base.is_empty() => base[1..].to_vec(),
            _ => base.clone(),
        };
        let t = tensor(c, dtype, &s);
        // list-taking ops (cat, stack, multi_dot) get a list sometimes
        inputs.push(if k == 0 && c.one_in(6) { json!([t.clone(), t]) } else { t });
    }
    let mut attrs = serde_json::Map::new();
    for name in op.attrs {
        if !c.one_in(3) {
            attrs.insert((*name).to_string(), attr(c));
        }
    }
    json!({"id": "fuzz", "op": op.name, "inputs": inputs, "attrs": attrs})
}
