//! The dispatch table: every op of the runner by its PyTorch name, the attributes it
//! reads, and how it is computed with the library's public API. PyTorch's defaults apply
//! to absent (or `null`) attributes. A piece PyTorch has and the library lacks (`alpha`,
//! a pad `value`, `keepdim` of `norm`) is composed here from library ops.

use cotangent::{DType, Shape, Tensor};
use serde_json::{Map, Value};

use crate::json::{check_size, dtype_of, float_lit, lit_f64};
use crate::limits::{MAX_ELEMENTS, MAX_OUTPUTS, MAX_RANK};
use crate::solvers as sv;
use crate::Kind;

/// Why a case has no result.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The library refused (its error is mapped with [`Kind::of`]).
    Lib(cotangent::Error),
    /// The runner refused, with the protocol's kind and a message.
    Kind(Kind, String),
}

impl From<cotangent::Error> for Fail {
    fn from(e: cotangent::Error) -> Fail {
        Fail::Lib(e)
    }
}

pub(crate) type Res<T> = Result<T, Fail>;

/// A `BadCase` failure.
pub(crate) fn bad(msg: impl Into<String>) -> Fail {
    Fail::Kind(Kind::BadCase, msg.into())
}

fn invalid(msg: impl Into<String>) -> Fail {
    Fail::Kind(Kind::InvalidArgument, msg.into())
}

fn unsupported(msg: impl Into<String>) -> Fail {
    Fail::Kind(Kind::Unsupported, msg.into())
}

type Handler = fn(&Args<'_>, &Attrs<'_>) -> Res<Vec<Tensor>>;

/// One op of the runner.
#[derive(Debug, Clone, Copy)]
pub struct OpSpec {
    /// PyTorch's name, without `torch.`.
    pub name: &'static str,
    /// The attributes it reads (PyTorch's keyword names); any other is a `BadCase`.
    pub attrs: &'static [&'static str],
    pub(crate) run: Handler,
}

const fn op(name: &'static str, attrs: &'static [&'static str], run: Handler) -> OpSpec {
    OpSpec { name, attrs, run }
}

/// Every op of the runner, by PyTorch name. Add a line here (and a fixture) for each new
/// op of the library; the tests check that none is missing.
pub const OPS: &[OpSpec] = &[
    // elementwise, one tensor
    op("neg", &[], h::neg),
    op("abs", &[], h::abs),
    op("sign", &[], h::sign),
    op("exp", &[], h::exp),
    op("expm1", &[], h::expm1),
    op("log", &[], h::log),
    op("log1p", &[], h::log1p),
    op("sqrt", &[], h::sqrt),
    op("rsqrt", &[], h::rsqrt),
    op("square", &[], h::square),
    op("reciprocal", &[], h::reciprocal),
    op("sin", &[], h::sin),
    op("cos", &[], h::cos),
    op("tan", &[], h::tan),
    op("tanh", &[], h::tanh),
    op("sigmoid", &[], h::sigmoid),
    op("relu", &[], h::relu),
    op("nn.functional.softplus", &["beta", "threshold"], h::softplus),
    op("clamp", &["min", "max"], h::clamp),
    op("to", &["dtype"], h::to),
    // complex numbers
    op("conj", &[], h::conj),
    op("conj_physical", &[], h::conj_physical),
    op("real", &[], h::real),
    op("imag", &[], h::imag),
    op("angle", &[], h::angle),
    op("sgn", &[], h::sgn),
    op("view_as_real", &[], h::view_as_real),
    op("view_as_complex", &[], h::view_as_complex),
    op("complex", &[], h::complex),
    op("polar", &[], h::polar),
    // elementwise, two tensors or a tensor and a scalar `other` (broadcasting)
    op("add", &["other", "alpha"], h::add),
    op("sub", &["other", "alpha"], h::sub),
    op("rsub", &["other", "alpha"], h::rsub),
    op("mul", &["other"], h::mul),
    op("div", &["other", "rounding_mode"], h::div),
    op("pow", &["exponent"], h::pow),
    op("maximum", &[], h::maximum),
    op("minimum", &[], h::minimum),
    op("atan2", &[], h::atan2),
    op("where", &[], h::where_),
    // comparisons (bool outputs, no gradient)
    op("eq", &["other"], h::eq),
    op("ne", &["other"], h::ne),
    op("lt", &["other"], h::lt),
    op("le", &["other"], h::le),
    op("gt", &["other"], h::gt),
    op("ge", &["other"], h::ge),
    op("logical_and", &[], h::logical_and),
    op("isclose", &["rtol", "atol", "equal_nan"], h::isclose),
    op("allclose", &["rtol", "atol", "equal_nan"], h::allclose),
    // reductions
    op("sum", &["dim", "keepdim"], h::sum),
    op("mean", &["dim", "keepdim"], h::mean),
    op("prod", &["dim", "keepdim"], h::prod),
    op("amax", &["dim", "keepdim"], h::amax),
    op("amin", &["dim", "keepdim"], h::amin),
    op("logsumexp", &["dim", "keepdim"], h::logsumexp),
    op("var", &["dim", "correction", "unbiased", "keepdim"], h::var),
    op("std", &["dim", "correction", "unbiased", "keepdim"], h::std_),
    op("norm", &["p", "dim", "keepdim"], sv::torch_norm),
    op("sum_to_size", &["size"], h::sum_to_size),
    // rearranging
    op("cat", &["dim"], h::cat),
    op("stack", &["dim"], h::stack),
    op("split", &["split_size_or_sections", "dim"], h::split),
    op("chunk", &["chunks", "dim"], h::chunk),
    op("unbind", &["dim"], h::unbind),
    op("flip", &["dims"], h::flip),
    op("nn.functional.pad", &["pad", "mode", "value"], h::pad),
    op("repeat", &["repeats"], h::repeat),
    // indexing
    op("index_select", &["dim"], h::index_select),
    op("gather", &["dim", "sparse_grad"], h::gather),
    op("scatter_add", &["dim"], h::scatter_add),
    // views
    op("reshape", &["shape"], h::reshape),
    op("view", &["size"], h::view),
    op("permute", &["dims"], h::permute),
    op("transpose", &["dim0", "dim1"], h::transpose),
    op("t", &[], h::t),
    op("narrow", &["dim", "start", "length"], h::narrow),
    op("select", &["dim", "index"], h::select),
    op("expand", &["size"], h::expand),
    op("broadcast_to", &["size"], h::broadcast_to),
    op("squeeze", &["dim"], h::squeeze),
    op("unsqueeze", &["dim"], h::unsqueeze),
    op("flatten", &["start_dim", "end_dim"], h::flatten),
    op("diagonal", &["offset", "dim1", "dim2"], h::diagonal),
    // linear algebra: products
    op("matmul", &[], h::matmul),
    op("mm", &[], h::mm),
    op("bmm", &[], h::bmm),
    op("mv", &[], h::mv),
    op("dot", &[], h::dot),
    op("vdot", &[], h::vdot),
    op("inner", &[], h::inner),
    op("outer", &[], h::outer),
    op("linalg.vecdot", &["dim"], h::vecdot),
    op("linalg.multi_dot", &[], h::multi_dot),
    op("addmm", &["beta", "alpha"], h::addmm),
    op("addbmm", &["beta", "alpha"], h::addbmm),
    op("baddbmm", &["beta", "alpha"], h::baddbmm),
    op("addmv", &["beta", "alpha"], h::addmv),
    op("addr", &["beta", "alpha"], h::addr),
    op("nn.functional.linear", &[], h::linear),
    // linear algebra: structure
    op("kron", &[], h::kron),
    op("trace", &[], h::trace),
    op("diag", &["diagonal"], h::diag),
    op("diag_embed", &["offset", "dim1", "dim2"], h::diag_embed),
    op("tril", &["diagonal"], h::tril),
    op("triu", &["diagonal"], h::triu),
    op("linalg.cross", &["dim"], h::cross),
    op("linalg.vander", &["N"], h::vander),
    op("linalg.matrix_power", &["n"], h::matrix_power),
    // linear algebra: solvers and factorisations (src/solvers/)
    op("linalg.solve_triangular", &["upper", "left", "unitriangular"], sv::solve_triangular),
    op("linalg.cholesky", &["upper"], sv::cholesky),
    op("linalg.cholesky_ex", &["upper", "check_errors"], sv::cholesky_ex),
    op("cholesky_solve", &["upper"], sv::cholesky_solve),
    op("cholesky_inverse", &["upper"], sv::cholesky_inverse),
    op("linalg.lu_factor", &["pivot"], sv::lu_factor),
    op("linalg.lu_factor_ex", &["pivot", "check_errors"], sv::lu_factor_ex),
    op("linalg.lu", &["pivot"], sv::lu),
    op("lu_unpack", &["unpack_data", "unpack_pivots"], sv::lu_unpack),
    op("linalg.lu_solve", &["left", "adjoint"], sv::lu_solve),
    op("linalg.ldl_factor", &["hermitian"], sv::ldl_factor),
    op("linalg.ldl_factor_ex", &["hermitian", "check_errors"], sv::ldl_factor_ex),
    op("linalg.ldl_solve", &["hermitian"], sv::ldl_solve),
    op("linalg.solve", &["left"], sv::solve),
    op("linalg.solve_ex", &["left", "check_errors"], sv::solve_ex),
    op("linalg.inv", &[], sv::inv),
    op("linalg.inv_ex", &["check_errors"], sv::inv_ex),
    op("linalg.det", &[], sv::det),
    op("linalg.slogdet", &[], sv::slogdet),
    op("logdet", &[], sv::logdet),
    op("linalg.tensorinv", &["ind"], sv::tensorinv),
    op("linalg.tensorsolve", &["dims"], sv::tensorsolve),
    op("linalg.qr", &["mode"], sv::qr),
    op("linalg.householder_product", &[], sv::householder_product),
    op("linalg.svd", &["full_matrices"], sv::svd),
    op("linalg.svdvals", &[], sv::svdvals),
    op("linalg.polar", &[], sv::polar),
    op("linalg.pinv", &["atol", "rtol", "hermitian"], sv::pinv),
    op("linalg.matrix_rank", &["atol", "rtol", "hermitian"], sv::matrix_rank),
    op("linalg.lstsq", &["rcond", "driver"], sv::lstsq),
    // linear algebra: norms (src/solvers/norms.rs)
    op("linalg.vector_norm", &["ord", "dim", "keepdim"], sv::vector_norm),
    op("linalg.matrix_norm", &["ord", "dim", "keepdim"], sv::matrix_norm),
    op("linalg.norm", &["ord", "dim", "keepdim"], sv::norm),
    op("linalg.cond", &["p"], sv::cond),
    op("linalg.eigh", &["UPLO"], sv::eigh),
    op("linalg.eigvalsh", &["UPLO"], sv::eigvalsh),
    op("linalg.eig", &[], sv::eig),
    op("linalg.eigvals", &[], sv::eigvals),
    op("linalg.matrix_exp", &[], sv::matrix_exp),
    op("linalg.matrix_sqrth", &[], sv::matrix_sqrth),
];

/// The names of every op of the runner, in table order.
pub fn op_names() -> Vec<&'static str> {
    OPS.iter().map(|o| o.name).collect()
}

pub(crate) fn find(name: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|o| o.name == name)
}

/// A positional argument: a tensor, or a list of tensors (`cat`, `stack`).
#[derive(Debug)]
pub(crate) enum Arg {
    One(Tensor),
    List(Vec<Tensor>),
}

/// The positional tensor arguments of a case.
pub(crate) struct Args<'a> {
    op: &'static str,
    items: &'a [Arg],
}

impl<'a> Args<'a> {
    pub(crate) fn new(op: &'static str, items: &'a [Arg]) -> Args<'a> {
        Args { op, items }
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// `BadCase` unless there are `lo..=hi` arguments.
    pub(crate) fn count(&self, lo: usize, hi: usize) -> Res<()> {
        let n = self.items.len();
        if n < lo || n > hi {
            let want = if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") };
            return Err(bad(format!("{}: takes {want} tensor inputs, got {n}", self.op)));
        }
        Ok(())
    }

    pub(crate) fn t(&self, i: usize) -> Res<&'a Tensor> {
        match self.items.get(i) {
            Some(Arg::One(t)) => Ok(t),
            Some(Arg::List(_)) => {
                Err(bad(format!("{}: input {i} must be a tensor, not a list", self.op)))
            }
            None => Err(bad(format!("{}: input {i} is missing", self.op))),
        }
    }

    fn list(&self, i: usize) -> Res<Vec<&'a Tensor>> {
        match self.items.get(i) {
            Some(Arg::List(ts)) => Ok(ts.iter().collect()),
            Some(Arg::One(_)) => {
                Err(bad(format!("{}: input {i} must be a list of tensors", self.op)))
            }
            None => Err(bad(format!("{}: input {i} is missing", self.op))),
        }
    }
}

/// The attributes of a case (already checked against the op's list of names).
pub(crate) struct Attrs<'a> {
    op: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Attrs<'a> {
    pub(crate) fn new(op: &'static str, map: &'a Map<String, Value>) -> Attrs<'a> {
        Attrs { op, map }
    }

    /// The attribute, `None` when absent or `null` (PyTorch's `None`: the default).
    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn wrong(&self, name: &str, what: &str) -> Fail {
        bad(format!("{}: attribute `{name}` must be {what}", self.op))
    }

    pub(crate) fn required<T>(&self, name: &str, v: Option<T>) -> Res<T> {
        v.ok_or_else(|| bad(format!("{}: attribute `{name}` is required", self.op)))
    }

    pub(crate) fn int(&self, name: &str) -> Res<Option<i64>> {
        self.get(name).map(|v| v.as_i64().ok_or_else(|| self.wrong(name, "an integer"))).transpose()
    }

    pub(crate) fn isize_or(&self, name: &str, default: isize) -> Res<isize> {
        Ok(self.int(name)?.map_or(default, |v| v as isize))
    }

    fn req_isize(&self, name: &str) -> Res<isize> {
        Ok(self.required(name, self.int(name)?)? as isize)
    }

    /// A required boolean (PyTorch's keyword-only arguments without default: `upper`).
    pub(crate) fn req_bool(&self, name: &str) -> Res<bool> {
        let v = self.bool_or(name, false)?;
        self.required(name, self.get(name).map(|_| v))
    }

    pub(crate) fn bool_or(&self, name: &str, default: bool) -> Res<bool> {
        self.get(name)
            .map_or(Ok(default), |v| v.as_bool().ok_or_else(|| self.wrong(name, "true or false")))
    }

    /// A number, or `"inf"`, `"-inf"`, `"nan"`.
    pub(crate) fn float(&self, name: &str) -> Res<Option<f64>> {
        self.get(name)
            .map(|v| {
                float_lit(v)
                    .and_then(lit_f64)
                    .ok_or_else(|| self.wrong(name, "a number (or \"inf\", \"-inf\", \"nan\")"))
            })
            .transpose()
    }

    pub(crate) fn float_or(&self, name: &str, default: f64) -> Res<f64> {
        Ok(self.float(name)?.unwrap_or(default))
    }

    pub(crate) fn string(&self, name: &str) -> Res<Option<&'a str>> {
        self.get(name).map(|v| v.as_str().ok_or_else(|| self.wrong(name, "a string"))).transpose()
    }

    /// A list of integers (an integer alone is a list of one, as PyTorch's `int[]`).
    pub(crate) fn ints(&self, name: &str) -> Res<Option<Vec<i64>>> {
        let what = "an integer or a list of integers";
        self.get(name)
            .map(|v| match v {
                Value::Array(a) => {
                    if a.len() > 2 * MAX_RANK {
                        return Err(bad(format!(
                            "{}: attribute `{name}` is longer than the runner's limit of {}",
                            self.op,
                            2 * MAX_RANK
                        )));
                    }
                    a.iter()
                        .map(Value::as_i64)
                        .collect::<Option<Vec<i64>>>()
                        .ok_or_else(|| self.wrong(name, what))
                }
                v => v.as_i64().map(|i| vec![i]).ok_or_else(|| self.wrong(name, what)),
            })
            .transpose()
    }

    fn req_ints(&self, name: &str) -> Res<Vec<i64>> {
        self.required(name, self.ints(name)?)
    }

    /// `dim` as PyTorch's `int[1]?`: absent means every dim (an empty list).
    fn dims(&self, name: &str) -> Res<Vec<isize>> {
        Ok(self.ints(name)?.unwrap_or_default().into_iter().map(|d| d as isize).collect())
    }

    fn req_dims(&self, name: &str) -> Res<Vec<isize>> {
        Ok(self.req_ints(name)?.into_iter().map(|d| d as isize).collect())
    }

    /// Non-negative sizes (`repeats`, `size` of sum_to_size).
    fn sizes(&self, name: &str) -> Res<Vec<usize>> {
        self.req_ints(name)?
            .into_iter()
            .map(|s| {
                usize::try_from(s).map_err(|_| {
                    invalid(format!("{}: `{name}` must not be negative, got {s}", self.op))
                })
            })
            .collect()
    }
}

pub(crate) fn one(t: cotangent::Result<Tensor>) -> Res<Vec<Tensor>> {
    Ok(vec![t?])
}

/// Refuses an output of `dims` beyond the runner's size limit (checked before the library
/// allocates it).
pub(crate) fn guard(op: &str, dims: &[usize]) -> Res<()> {
    check_size(&format!("{op}: the output"), dims)
}

/// Refuses a broadcast of `shapes` whose result could exceed the size limit (an upper
/// bound: the largest size at each aligned dim).
fn guard_broadcast(op: &str, shapes: &[&[usize]]) -> Res<()> {
    guard(op, &broadcast_upper(shapes))
}

/// The largest size at each aligned dim of `shapes` (an upper bound of their broadcast).
fn broadcast_upper(shapes: &[&[usize]]) -> Vec<usize> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            shapes
                .iter()
                .filter_map(|s| (i + s.len()).checked_sub(rank).map(|j| s[j]))
                .max()
                .unwrap_or(1)
        })
        .collect()
}

/// Refuses a matrix product of `a` and `b` (PyTorch's `matmul` rank rules) whose result
/// could exceed the size limit; shapes the library refuses are left to it.
fn guard_matmul(op: &str, a: &[usize], b: &[usize]) -> Res<()> {
    let (ra, rb) = (a.len(), b.len());
    if ra == 0 || rb == 0 {
        return Ok(());
    }
    let batch_a = &a[..ra.saturating_sub(2)];
    let batch_b = &b[..rb.saturating_sub(2)];
    let mut dims = broadcast_upper(&[batch_a, batch_b]);
    if ra >= 2 {
        dims.push(a[ra - 2]);
    }
    if rb >= 2 {
        dims.push(b[rb - 1]);
    }
    guard(op, &dims)
}

/// Handlers, one per op (the table above says which).
mod h {
    use super::{
        bad, dtype_of, guard, guard_broadcast, guard_matmul, invalid, one, unsupported, Args,
        Attrs, DType, Res, Shape, Tensor, Value, MAX_ELEMENTS, MAX_OUTPUTS,
    };

    macro_rules! unary {
        ($($name:ident),* $(,)?) => {$(
            pub(super) fn $name(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
                a.count(1, 1)?;
                one(a.t(0)?.$name())
            }
        )*};
    }

    unary!(
        neg,
        abs,
        sign,
        exp,
        expm1,
        log,
        log1p,
        sqrt,
        rsqrt,
        square,
        reciprocal,
        sin,
        cos,
        tan,
        tanh,
        sigmoid,
        relu,
        conj,
        conj_physical,
        real,
        imag,
        angle,
        sgn,
        view_as_real,
        view_as_complex
    );

    fn close_args(at: &Attrs<'_>) -> Res<(f64, f64, bool)> {
        Ok((
            at.float_or("rtol", 1e-5)?,
            at.float_or("atol", 1e-8)?,
            at.bool_or("equal_nan", false)?,
        ))
    }

    pub(super) fn isclose(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (rtol, atol, equal_nan) = close_args(at)?;
        one(a.t(0)?.isclose(a.t(1)?, rtol, atol, equal_nan))
    }

    /// (PyTorch's Python bool, as a 0-d bool tensor)
    pub(super) fn allclose(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (rtol, atol, equal_nan) = close_args(at)?;
        let all = a.t(0)?.allclose(a.t(1)?, rtol, atol, equal_nan)?;
        Ok(vec![Tensor::scalar(all)])
    }

    pub(super) fn complex(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        one(Tensor::complex(a.t(0)?, a.t(1)?))
    }

    pub(super) fn polar(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        one(Tensor::polar(a.t(0)?, a.t(1)?))
    }

    pub(super) fn softplus(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.softplus(at.float_or("beta", 1.0)?, at.float_or("threshold", 20.0)?))
    }

    pub(super) fn clamp(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.clamp(at.float("min")?, at.float("max")?))
    }

    pub(super) fn to(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let name = at.required("dtype", at.string("dtype")?)?;
        let dtype = dtype_of(name).ok_or_else(|| {
            bad(format!("to: unknown dtype `{name}` (f32, f64, bf16, f16, c64, c128, i64, bool)"))
        })?;
        one(a.t(0)?.to_dtype(dtype))
    }

    /// The two operands of a binary op: two tensors, or a tensor and the scalar `other`
    /// (`Ok(Err(s))`).
    fn operands<'a>(
        a: &Args<'a>,
        at: &Attrs<'_>,
        name: &str,
    ) -> Res<(&'a Tensor, Result<&'a Tensor, f64>)> {
        a.count(1, 2)?;
        let x = a.t(0)?;
        let scalar = at.float(name)?;
        match (a.len(), scalar) {
            (2, None) => {
                let y = a.t(1)?;
                guard_broadcast(a.op, &[x.dims(), y.dims()])?;
                Ok((x, Ok(y)))
            }
            (1, Some(s)) => Ok((x, Err(s))),
            (2, Some(_)) => Err(bad(format!(
                "{}: give `{name}` either as the second input or as an attribute, not both",
                a.op
            ))),
            _ => Err(bad(format!(
                "{}: needs `{name}`, as a second input tensor or as a scalar attribute",
                a.op
            ))),
        }
    }

    pub(super) fn add(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        let alpha = at.float_or("alpha", 1.0)?;
        one(match operands(a, at, "other")? {
            (x, Ok(y)) if alpha == 1.0 => x.add(y),
            (x, Ok(y)) => x.add(&y.mul_scalar(alpha)?),
            (x, Err(s)) => x.add_scalar(alpha * s),
        })
    }

    pub(super) fn sub(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        let alpha = at.float_or("alpha", 1.0)?;
        one(match operands(a, at, "other")? {
            (x, Ok(y)) if alpha == 1.0 => x.sub(y),
            (x, Ok(y)) => x.sub(&y.mul_scalar(alpha)?),
            (x, Err(s)) => x.sub_scalar(alpha * s),
        })
    }

    /// `other - alpha * input`.
    pub(super) fn rsub(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        let alpha = at.float_or("alpha", 1.0)?;
        one(match operands(a, at, "other")? {
            (x, Ok(y)) if alpha == 1.0 => y.sub(x),
            (x, Ok(y)) => y.sub(&x.mul_scalar(alpha)?),
            (x, Err(s)) if alpha == 1.0 => x.rsub_scalar(s),
            (x, Err(s)) => x.mul_scalar(alpha)?.rsub_scalar(s),
        })
    }

    pub(super) fn mul(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        one(match operands(a, at, "other")? {
            (x, Ok(y)) => x.mul(y),
            (x, Err(s)) => x.mul_scalar(s),
        })
    }

    pub(super) fn div(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        if let Some(mode) = at.string("rounding_mode")? {
            return Err(unsupported(format!(
                "div: rounding_mode={mode:?} is not implemented (only true division)"
            )));
        }
        one(match operands(a, at, "other")? {
            (x, Ok(y)) => x.div(y),
            (x, Err(s)) => x.div_scalar(s),
        })
    }

    pub(super) fn pow(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        one(match operands(a, at, "exponent")? {
            (x, Ok(y)) => x.pow(y),
            (x, Err(e)) => x.pow_scalar(e),
        })
    }

    fn binary(
        a: &Args<'_>,
        f: fn(&Tensor, &Tensor) -> cotangent::Result<Tensor>,
    ) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        guard_broadcast(a.op, &[x.dims(), y.dims()])?;
        one(f(x, y))
    }

    pub(super) fn maximum(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        binary(a, Tensor::maximum)
    }

    pub(super) fn minimum(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        binary(a, Tensor::minimum)
    }

    pub(super) fn atan2(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        binary(a, Tensor::atan2)
    }

    /// `logical_and` of any dtypes, as PyTorch: non-zero (and NaN) is true.
    pub(super) fn logical_and(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        fn truth(t: &Tensor) -> cotangent::Result<Tensor> {
            if t.dtype() == DType::Bool {
                Ok(t.clone())
            } else {
                t.ne_scalar(0.0)
            }
        }
        binary(a, |x, y| truth(x)?.logical_and(&truth(y)?))
    }

    pub(super) fn where_(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(3, 3)?;
        let (c, x, y) = (a.t(0)?, a.t(1)?, a.t(2)?);
        guard_broadcast(a.op, &[c.dims(), x.dims(), y.dims()])?;
        one(Tensor::where_cond(c, x, y))
    }

    macro_rules! comparison {
        ($($name:ident, $scalar:ident;)*) => {$(
            pub(super) fn $name(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
                one(match operands(a, at, "other")? {
                    (x, Ok(y)) => x.$name(y),
                    (x, Err(s)) => x.$scalar(s),
                })
            }
        )*};
    }

    comparison! {
        eq, eq_scalar;
        ne, ne_scalar;
        lt, lt_scalar;
        le, le_scalar;
        gt, gt_scalar;
        ge, ge_scalar;
    }

    pub(super) fn sum(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.sum_dims(&at.dims("dim")?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn mean(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.mean_dims(&at.dims("dim")?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn prod(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let dims = at.dims("dim")?;
        // the gradient with zeros costs (reduced size) x (numel): bound it
        if x.requires_grad() && x.to_vec_f64().contains(&0.0) {
            let reduced: usize = if dims.is_empty() {
                x.numel()
            } else {
                dims.iter()
                    .filter_map(|&d| {
                        usize::try_from(if d < 0 { d + x.rank() as isize } else { d }).ok()
                    })
                    .filter_map(|d| x.dims().get(d))
                    .product()
            };
            if reduced.saturating_mul(x.numel()) > MAX_ELEMENTS {
                return Err(bad(format!(
                    "prod: the gradient of a product with zeros over {reduced} elements is \
                     beyond the runner's limit of {MAX_ELEMENTS} elements"
                )));
            }
        }
        one(x.prod_dims(&dims, at.bool_or("keepdim", false)?))
    }

    pub(super) fn amax(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.amax(&at.dims("dim")?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn amin(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.amin(&at.dims("dim")?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn logsumexp(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.logsumexp(&at.req_dims("dim")?, at.bool_or("keepdim", false)?))
    }

    /// `correction` (default 1), or the legacy `unbiased`.
    fn correction(at: &Attrs<'_>) -> Res<f64> {
        match (at.float("correction")?, at.get("unbiased")) {
            (Some(_), Some(_)) => {
                Err(bad(format!("{}: give `correction` or `unbiased`, not both", at.op)))
            }
            (Some(c), None) => Ok(c),
            (None, Some(_)) => Ok(if at.bool_or("unbiased", true)? { 1.0 } else { 0.0 }),
            (None, None) => Ok(1.0),
        }
    }

    pub(super) fn var(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.var(&at.dims("dim")?, correction(at)?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn std_(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.std(&at.dims("dim")?, correction(at)?, at.bool_or("keepdim", false)?))
    }

    pub(super) fn sum_to_size(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let size = at.sizes("size")?;
        guard(a.op, &size)?;
        one(a.t(0)?.sum_to(&Shape::new(size)))
    }

    pub(super) fn cat(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(Tensor::cat(&a.list(0)?, at.isize_or("dim", 0)?))
    }

    pub(super) fn stack(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(Tensor::stack(&a.list(0)?, at.isize_or("dim", 0)?))
    }

    /// The size of `dim` of `x`, or the library's error for a bad dim.
    fn dim_size(x: &Tensor, dim: isize) -> Res<usize> {
        Ok(x.size(dim)?)
    }

    fn guard_outputs(op: &str, n: usize) -> Res<()> {
        if n > MAX_OUTPUTS {
            return Err(bad(format!(
                "{op}: {n} outputs is more than the runner's limit of {MAX_OUTPUTS}"
            )));
        }
        Ok(())
    }

    pub(super) fn split(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let dim = at.isize_or("dim", 0)?;
        let name = "split_size_or_sections";
        if let Some(Value::Array(_)) = at.get(name) {
            let sizes = at
                .req_ints(name)?
                .into_iter()
                .map(|s| usize::try_from(s).map_err(|_| invalid("split: negative section size")))
                .collect::<Res<Vec<usize>>>()?;
            return Ok(x.split_with_sizes(&sizes, dim)?);
        }
        let s = at.required(name, at.int(name)?)?;
        let s = usize::try_from(s)
            .map_err(|_| invalid(format!("split: split_size must be non-negative, got {s}")))?;
        if x.rank() > 0 && s > 0 {
            guard_outputs(a.op, dim_size(x, dim)?.div_ceil(s))?;
        }
        Ok(x.split(s, dim)?)
    }

    pub(super) fn chunk(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let chunks = at.required("chunks", at.int("chunks")?)?;
        let chunks = usize::try_from(chunks)
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| invalid(format!("chunk: chunks must be positive, got {chunks}")))?;
        let dim = at.isize_or("dim", 0)?;
        if x.rank() > 0 {
            guard_outputs(a.op, chunks.min(dim_size(x, dim)?))?;
        }
        Ok(x.chunk(chunks, dim)?)
    }

    pub(super) fn unbind(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let dim = at.isize_or("dim", 0)?;
        if x.rank() > 0 {
            guard_outputs(a.op, dim_size(x, dim)?)?;
        }
        Ok(x.unbind(dim)?)
    }

    pub(super) fn flip(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.flip(&at.req_dims("dims")?))
    }

    /// `nn.functional.pad`, mode `constant`; a non-zero `value` fills the border through
    /// `where` on a mask of the interior.
    pub(super) fn pad(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let mode = at.string("mode")?.unwrap_or("constant");
        if mode != "constant" {
            return Err(unsupported(format!(
                "nn.functional.pad: mode {mode:?} is not implemented (only \"constant\")"
            )));
        }
        let pad: Vec<isize> = at.req_ints("pad")?.into_iter().map(|p| p as isize).collect();
        // the output's dims, for the size limit (the library checks the rest)
        let mut out = x.dims().to_vec();
        for (k, pair) in pad.chunks(2).enumerate() {
            if let (Some(d), [l, r]) = (x.rank().checked_sub(k + 1), pair) {
                let n = (out[d] as i128 + *l as i128 + *r as i128).max(0);
                out[d] = usize::try_from(n).unwrap_or(usize::MAX);
            }
        }
        guard(a.op, &out)?;
        let y = x.pad(&pad)?;
        let value = at.float_or("value", 0.0)?;
        if value == 0.0 && value.is_sign_positive() {
            return Ok(vec![y]);
        }
        let inside = x.ones_like()?.pad(&pad)?.gt_scalar(0.5)?;
        let fill = Tensor::full(y.shape().clone(), value, y.dtype())?;
        one(Tensor::where_cond(&inside, &y, &fill))
    }

    pub(super) fn repeat(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let repeats = at.sizes("repeats")?;
        if repeats.len() >= x.rank() {
            let lead = repeats.len() - x.rank();
            let out: Vec<usize> = repeats
                .iter()
                .enumerate()
                .map(|(i, &r)| {
                    let s = if i < lead { 1 } else { x.dims()[i - lead] };
                    r.saturating_mul(s)
                })
                .collect();
            guard(a.op, &out)?;
        }
        one(x.repeat(&repeats))
    }

    pub(super) fn index_select(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, index) = (a.t(0)?, a.t(1)?);
        let dim = at.req_isize("dim")?;
        if x.rank() > 0 {
            if let Ok(d) = usize::try_from(if dim < 0 { dim + x.rank() as isize } else { dim }) {
                if d < x.rank() {
                    let mut out = x.dims().to_vec();
                    out[d] = index.numel();
                    guard(a.op, &out)?;
                }
            }
        }
        one(x.index_select(dim, index))
    }

    pub(super) fn gather(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        // sparse_grad changes only the layout of PyTorch's gradient, not its values
        at.bool_or("sparse_grad", false)?;
        one(a.t(0)?.gather(at.req_isize("dim")?, a.t(1)?))
    }

    pub(super) fn scatter_add(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(3, 3)?;
        one(a.t(0)?.scatter_add(at.req_isize("dim")?, a.t(1)?, a.t(2)?))
    }

    fn shape_attr(at: &Attrs<'_>, name: &str) -> Res<Vec<isize>> {
        let s = at.req_dims(name)?;
        let known: Vec<usize> = s.iter().map(|&d| usize::try_from(d).unwrap_or(1)).collect();
        guard(at.op, &known)?;
        Ok(s)
    }

    pub(super) fn reshape(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.reshape_infer(&shape_attr(at, "shape")?))
    }

    pub(super) fn view(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        // the inferred shape (-1) comes from reshape's rule; the view itself is `view`
        let shape = x.detach().reshape_infer(&shape_attr(at, "size")?)?.shape().clone();
        one(x.view(shape))
    }

    pub(super) fn permute(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.permute(&at.req_dims("dims")?))
    }

    pub(super) fn transpose(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.transpose(at.req_isize("dim0")?, at.req_isize("dim1")?))
    }

    pub(super) fn t(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.t())
    }

    /// `narrow`; a negative `start` counts from the end, as PyTorch.
    pub(super) fn narrow(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let dim = at.req_isize("dim")?;
        let (start, length) = (at.req_isize("start")?, at.req_isize("length")?);
        let size = if x.rank() == 0 { 0 } else { dim_size(x, dim)? as isize };
        let start = if start < 0 { start.saturating_add(size) } else { start };
        let start = usize::try_from(start)
            .map_err(|_| invalid(format!("narrow: start out of range for a dim of size {size}")))?;
        let length = usize::try_from(length)
            .map_err(|_| invalid(format!("narrow: length must be non-negative, got {length}")))?;
        one(x.narrow(dim, start, length))
    }

    pub(super) fn select(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.select(at.req_isize("dim")?, at.req_isize("index")?))
    }

    fn expanded(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let size = at.req_dims("size")?;
        // -1 keeps the input's size: count it as that for the limit
        let lead = size.len().saturating_sub(x.rank());
        let dims: Vec<usize> = size
            .iter()
            .enumerate()
            .map(|(i, &s)| match usize::try_from(s) {
                Ok(s) => s,
                Err(_) => i.checked_sub(lead).and_then(|j| x.dims().get(j)).copied().unwrap_or(1),
            })
            .collect();
        guard(a.op, &dims)?;
        one(x.expand(&size))
    }

    pub(super) fn expand(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        expanded(a, at)
    }

    pub(super) fn broadcast_to(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        expanded(a, at)
    }

    /// `squeeze`: all dims of size 1, one dim, or a list of dims (PyTorch >= 2.0).
    pub(super) fn squeeze(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let Some(dims) = at.ints("dim")? else { return one(x.squeeze()) };
        let rank = x.rank().max(1) as i64;
        let mut resolved = Vec::with_capacity(dims.len());
        for d in dims {
            if d < -rank || d >= rank {
                // the library's own error for a dim out of range
                return one(x.squeeze_dim(d as isize));
            }
            let d = if d < 0 { d + rank } else { d };
            if resolved.contains(&d) {
                return Err(invalid(format!("squeeze: dim {d} appears more than once")));
            }
            resolved.push(d);
        }
        resolved.sort_unstable();
        let mut y = x.clone();
        for &d in resolved.iter().rev() {
            y = y.squeeze_dim(d as isize)?;
        }
        Ok(vec![y])
    }

    pub(super) fn unsqueeze(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.unsqueeze(at.req_isize("dim")?))
    }

    pub(super) fn flatten(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.flatten(at.isize_or("start_dim", 0)?, at.isize_or("end_dim", -1)?))
    }

    pub(super) fn diagonal(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let (offset, d1, d2) =
            (at.isize_or("offset", 0)?, at.isize_or("dim1", 0)?, at.isize_or("dim2", 1)?);
        one(a.t(0)?.diagonal(offset, d1, d2))
    }

    /// A product of two tensors with `matmul`'s rank rules (guarded on the result's size).
    fn product(
        a: &Args<'_>,
        f: fn(&Tensor, &Tensor) -> cotangent::Result<Tensor>,
    ) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        guard_matmul(a.op, x.dims(), y.dims())?;
        one(f(x, y))
    }

    pub(super) fn matmul(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::matmul)
    }

    pub(super) fn mm(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::mm)
    }

    pub(super) fn bmm(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::bmm)
    }

    pub(super) fn mv(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::mv)
    }

    pub(super) fn dot(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::dot)
    }

    pub(super) fn vdot(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        product(a, Tensor::vdot)
    }

    pub(super) fn inner(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        if x.rank() == 0 || y.rank() == 0 {
            guard_broadcast(a.op, &[x.dims(), y.dims()])?;
        } else {
            let mut dims = x.dims()[..x.rank() - 1].to_vec();
            dims.extend_from_slice(&y.dims()[..y.rank() - 1]);
            guard(a.op, &dims)?;
        }
        one(x.inner(y))
    }

    pub(super) fn outer(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        guard(a.op, &[x.numel(), y.numel()])?;
        one(x.outer(y))
    }

    pub(super) fn vecdot(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        guard_broadcast(a.op, &[x.dims(), y.dims()])?;
        one(x.vecdot(y, at.isize_or("dim", -1)?))
    }

    /// `linalg.multi_dot`; every product of a sub-chain is bounded (first rows by last
    /// columns) whatever order the library picks.
    pub(super) fn multi_dot(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let ts = a.list(0)?;
        let n = ts.len();
        let rows = |i: usize| {
            let d = ts[i].dims();
            if i == 0 && d.len() == 1 {
                1
            } else {
                d.first().copied().unwrap_or(1)
            }
        };
        let cols = |j: usize| {
            let d = ts[j].dims();
            if j == n - 1 && d.len() == 1 {
                1
            } else {
                d.last().copied().unwrap_or(1)
            }
        };
        for i in 0..n {
            for j in i + 1..n {
                guard(a.op, &[rows(i), cols(j)])?;
            }
        }
        one(Tensor::multi_dot(&ts))
    }

    /// `beta` and `alpha` of the `add*` family (PyTorch's default 1).
    fn beta_alpha(at: &Attrs<'_>) -> Res<(f64, f64)> {
        Ok((at.float_or("beta", 1.0)?, at.float_or("alpha", 1.0)?))
    }

    type Affine = fn(&Tensor, &Tensor, &Tensor, f64, f64) -> cotangent::Result<Tensor>;

    fn affine(a: &Args<'_>, at: &Attrs<'_>, f: Affine) -> Res<Vec<Tensor>> {
        a.count(3, 3)?;
        let (x, m1, m2) = (a.t(0)?, a.t(1)?, a.t(2)?);
        if a.op == "addr" {
            guard(a.op, &[m1.numel(), m2.numel()])?;
        } else {
            guard_matmul(a.op, m1.dims(), m2.dims())?;
        }
        let (beta, alpha) = beta_alpha(at)?;
        one(f(x, m1, m2, beta, alpha))
    }

    pub(super) fn addmm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        affine(a, at, Tensor::addmm)
    }

    pub(super) fn addbmm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        affine(a, at, Tensor::addbmm)
    }

    pub(super) fn baddbmm(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        affine(a, at, Tensor::baddbmm)
    }

    pub(super) fn addmv(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        affine(a, at, Tensor::addmv)
    }

    pub(super) fn addr(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        affine(a, at, Tensor::addr)
    }

    /// `nn.functional.linear(input, weight[, bias])`: an absent bias is left out of
    /// `inputs`.
    pub(super) fn linear(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 3)?;
        let (x, w) = (a.t(0)?, a.t(1)?);
        let bias = if a.len() == 3 { Some(a.t(2)?) } else { None };
        if x.rank() >= 1 && w.rank() == 2 {
            let mut dims = x.dims()[..x.rank() - 1].to_vec();
            dims.push(w.dims()[0]);
            guard(a.op, &dims)?;
        }
        one(x.linear(w, bias))
    }

    pub(super) fn kron(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        let r = x.rank().max(y.rank());
        let dim = |t: &Tensor, k: usize| (k + t.rank()).checked_sub(r).map_or(1, |i| t.dims()[i]);
        let dims: Vec<usize> = (0..r).map(|k| dim(x, k).saturating_mul(dim(y, k))).collect();
        guard(a.op, &dims)?;
        one(x.kron(y))
    }

    pub(super) fn trace(a: &Args<'_>, _: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.trace())
    }

    /// The size `n + |offset|` of a square a diagonal is embedded in.
    fn embedded(n: usize, offset: isize) -> usize {
        n.saturating_add(offset.unsigned_abs())
    }

    pub(super) fn diag(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let k = at.isize_or("diagonal", 0)?;
        if x.rank() == 1 {
            let n = embedded(x.numel(), k);
            guard(a.op, &[n, n])?;
        }
        one(x.diag(k))
    }

    pub(super) fn diag_embed(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let offset = at.isize_or("offset", 0)?;
        if let Some((&last, lead)) = x.dims().split_last() {
            let n = embedded(last, offset);
            let mut dims = lead.to_vec();
            dims.extend([n, n]);
            guard(a.op, &dims)?;
        }
        one(x.diag_embed(offset, at.isize_or("dim1", -2)?, at.isize_or("dim2", -1)?))
    }

    pub(super) fn tril(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.tril(at.isize_or("diagonal", 0)?))
    }

    pub(super) fn triu(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        one(a.t(0)?.triu(at.isize_or("diagonal", 0)?))
    }

    pub(super) fn cross(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(2, 2)?;
        let (x, y) = (a.t(0)?, a.t(1)?);
        guard_broadcast(a.op, &[x.dims(), y.dims()])?;
        one(x.cross(y, at.isize_or("dim", -1)?))
    }

    /// `linalg.vander`; as PyTorch, an explicit `N` must be greater than 1.
    pub(super) fn vander(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let n = match at.int("N")? {
            None => None,
            Some(n) if n > 1 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(n) => {
                return Err(invalid(format!("linalg.vander: N must be greater than 1, got {n}")))
            }
        };
        if let Some(&last) = x.dims().last() {
            let mut dims = x.dims().to_vec();
            dims.push(n.unwrap_or(last));
            guard(a.op, &dims)?;
        }
        one(x.vander(n))
    }

    /// The most multiply-adds a `matrix_power` may cost (about a minute of one core).
    const MAX_POWER_FLOPS: u128 = 1 << 36;

    pub(super) fn matrix_power(a: &Args<'_>, at: &Attrs<'_>) -> Res<Vec<Tensor>> {
        a.count(1, 1)?;
        let x = a.t(0)?;
        let n = at.required("n", at.int("n")?)?;
        if let (Some(&m), true) = (x.dims().last(), n.unsigned_abs() > 1) {
            // repeated squaring: at most 2 log2(n) products of m^3 each, per matrix
            let products = 2 * u128::from(64 - n.unsigned_abs().leading_zeros());
            let per = (m as u128).pow(3);
            let batch = (x.numel() / (m * m).max(1)) as u128;
            if products * per * batch.max(1) > MAX_POWER_FLOPS {
                return Err(bad(format!(
                    "linalg.matrix_power: n = {n} for {:?} costs more than the runner's limit \
                     of {MAX_POWER_FLOPS} multiply-adds",
                    x.dims()
                )));
            }
        }
        one(x.matrix_power(n))
    }
}
