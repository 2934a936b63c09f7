//! The rows of the core op table (elementwise, reductions, shape and indexing ops, views,
//! casts): one [`OpInfo`] per op, with its samples, references and error samples. Checked
//! by `tests/ops.rs` through the runners of this module, and walked by `tests/memory.rs`
//! (every op's graph is freed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use cotangent::autograd::GradcheckOptions;
use cotangent::{DType, Generator, Result, Tensor};

use super::{for_each_index, idx, mask, t64, wrap, Domain, Nd, OpInfo, Sample};

type Unary = fn(&Tensor) -> Result<Tensor>;
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

// ---------------------------------------------------------------------------------------
// sample helpers

/// A one-input sample.
fn s1(
    desc: impl Into<String>,
    x: Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + 'static,
) -> Sample {
    Sample::new(desc, vec![x], move |xs| f(&xs[0]))
}

/// An error sample: `f` must fail with a message naming `op`.
fn err(desc: &str, op: &'static str, f: impl Fn() -> Result<Tensor> + 'static) -> Sample {
    Sample::error(desc, vec![], op, move |_| Ok(vec![f()?]))
}

/// An error sample of a multi-output op.
fn err_multi(
    desc: &str,
    op: &'static str,
    f: impl Fn() -> Result<Vec<Tensor>> + 'static,
) -> Sample {
    Sample::error(desc, vec![], op, move |_| f())
}

fn real(rng: &mut Generator, shape: &[usize]) -> Tensor {
    Domain::Real.tensor(rng, shape)
}

fn rand_mask(rng: &mut Generator, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<bool> = (0..n).map(|_| rng.uniform() < 0.5).collect();
    mask(&v, shape)
}

pub fn arange(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t64((0..n).map(|i| i as f64).collect(), shape)
}

/// Shapes every elementwise row is sampled at: a matrix, a vector, a 0-d tensor, an empty
/// tensor and a 3-d tensor with a unit dim.
const SHAPES: [&[usize]; 5] = [&[3, 4], &[5], &[], &[0, 3], &[2, 1, 3]];

// ---------------------------------------------------------------------------------------
// elementwise rows

fn unary(name: &'static str, f: Unary, r: fn(f64) -> f64, dom: Domain) -> OpInfo {
    OpInfo::new(name, move |rng| {
        SHAPES
            .iter()
            .map(|&shape| {
                s1(format!("{shape:?}"), dom.tensor(rng, shape), f).reference(move |x| x[0].map(r))
            })
            .collect()
    })
}

/// A row of a scalar-parameter op: for each parameter set, samples at a matrix, a 0-d
/// and an empty shape.
fn unary_param<P: Copy + std::fmt::Debug + 'static>(
    name: &'static str,
    params: Vec<(P, Domain)>,
    f: fn(&Tensor, P) -> Result<Tensor>,
    r: fn(f64, P) -> f64,
) -> OpInfo {
    OpInfo::new(name, move |rng| {
        let mut v = Vec::new();
        for &(p, dom) in &params {
            for shape in [&[3, 4][..], &[], &[0, 2]] {
                v.push(
                    s1(format!("{p:?} {shape:?}"), dom.tensor(rng, shape), move |x| f(x, p))
                        .reference(move |x| x[0].map(|a| r(a, p))),
                );
            }
        }
        v
    })
}

fn sign_ref(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

fn softplus_ref(x: f64, (beta, threshold): (f64, f64)) -> f64 {
    if beta * x > threshold {
        x
    } else {
        (beta * x).exp().ln_1p() / beta
    }
}

fn unary_rows() -> Vec<OpInfo> {
    use Domain::{AwayFromZero, Real, Uniform};
    let positive = Uniform(0.5, 3.0);
    vec![
        unary("neg", Tensor::neg, |x| -x, Real),
        // kinks at 0: sampled away from 0 (the value at 0 is checked by hand below)
        unary("abs", Tensor::abs, f64::abs, AwayFromZero),
        unary("sign", Tensor::sign, sign_ref, AwayFromZero),
        // on real tensors: sgn is sign, conj_physical the identity (their complex cases are
        // in tests/complex.rs)
        unary("sgn", Tensor::sgn, sign_ref, AwayFromZero),
        unary("conj_physical", Tensor::conj_physical, |x| x, Real),
        unary("exp", Tensor::exp, f64::exp, Real),
        unary("expm1", Tensor::expm1, f64::exp_m1, Real),
        unary("log", Tensor::log, f64::ln, positive),
        unary("log1p", Tensor::log1p, f64::ln_1p, Uniform(-0.5, 2.0)),
        unary("sqrt", Tensor::sqrt, f64::sqrt, positive),
        unary("rsqrt", Tensor::rsqrt, |x| 1.0 / x.sqrt(), positive),
        unary("square", Tensor::square, |x| x * x, Real),
        unary("reciprocal", Tensor::reciprocal, f64::recip, AwayFromZero),
        unary("sin", Tensor::sin, f64::sin, Real),
        unary("cos", Tensor::cos, f64::cos, Real),
        unary("tan", Tensor::tan, f64::tan, Uniform(-1.2, 1.2)),
        unary("tanh", Tensor::tanh, f64::tanh, Real),
        unary("sigmoid", Tensor::sigmoid, |x| 1.0 / (1.0 + (-x).exp()), Real),
        unary("relu", Tensor::relu, |x| x.max(0.0), AwayFromZero),
        OpInfo::new("softplus", |rng| {
            let mut v = Vec::new();
            for shape in [&[3, 4][..], &[], &[0, 2]] {
                let x = real(rng, shape);
                v.push(
                    s1(format!("beta 1, threshold 20, {shape:?}"), x, |x| x.softplus(1.0, 20.0))
                        .reference(|x| x[0].map(|a| softplus_ref(a, (1.0, 20.0)))),
                );
            }
            // beta 2, threshold 1: βx > 1 (x > 0.5) takes the linear branch; values stay
            // away from the switch, where softplus jumps by ln(1 + e)/2 - 1/2
            let x = t64(vec![-1.5, -0.3, 0.2, 0.8, 1.7, 3.0], &[2, 3]);
            v.push(
                s1("beta 2, threshold 1, both branches", x, |x| x.softplus(2.0, 1.0))
                    .reference(|x| x[0].map(|a| softplus_ref(a, (2.0, 1.0)))),
            );
            v
        }),
        unary_param(
            "pow_scalar",
            vec![
                (2.0, Real),
                (3.0, Real),
                (-1.0, AwayFromZero),
                (0.5, positive),
                (-1.5, positive),
                (2.5, positive),
                (0.0, Real),
                (1.0, Real),
            ],
            Tensor::pow_scalar,
            f64::powf,
        ),
        unary_param("add_scalar", vec![(2.5, Real), (-1.0, Real)], Tensor::add_scalar, |x, s| {
            x + s
        }),
        unary_param("sub_scalar", vec![(2.5, Real), (-1.0, Real)], Tensor::sub_scalar, |x, s| {
            x - s
        }),
        unary_param("rsub_scalar", vec![(2.5, Real), (-1.0, Real)], Tensor::rsub_scalar, |x, s| {
            s - x
        }),
        unary_param(
            "mul_scalar",
            vec![(3.0, Real), (-0.5, Real), (0.0, Real)],
            Tensor::mul_scalar,
            |x, s| x * s,
        ),
        unary_param("div_scalar", vec![(4.0, Real), (-0.25, Real)], Tensor::div_scalar, |x, s| {
            x / s
        }),
        // standard normal samples land at least ~1e-3 away from the bounds (finite
        // differences need 1e-6); gradient passes where min <= x <= max
        unary_param(
            "clamp",
            vec![
                ((Some(-0.5), Some(0.5)), Real),
                ((Some(0.0), None), Real),
                ((None, Some(0.3)), Real),
                // min > max: every element becomes max (PyTorch), gradient 0
                ((Some(1.0), Some(-1.0)), Real),
            ],
            |x, (lo, hi)| x.clamp(lo, hi),
            |x, (lo, hi): (Option<f64>, Option<f64>)| {
                let x = lo.map_or(x, |l| x.max(l));
                hi.map_or(x, |h| x.min(h))
            },
        )
        .errors(|| {
            vec![err("no bound", "clamp", || Tensor::ones(2, DType::F64)?.clamp(None, None))]
        }),
    ]
}

/// Operand shapes of binary rows: equal, broadcast of a trailing vector, broadcast in both
/// operands, 0-d with n-d both ways, both 0-d, and empty results.
const PAIRS: [(&[usize], &[usize]); 8] = [
    (&[3, 4], &[3, 4]),
    (&[3, 4], &[4]),
    (&[2, 1, 3], &[4, 1]),
    (&[], &[2, 3]),
    (&[3], &[]),
    (&[], &[]),
    (&[0, 3], &[3]),
    (&[2, 1], &[1, 0]),
];

fn binary(name: &'static str, f: Binary, r: fn(f64, f64) -> f64, da: Domain, db: Domain) -> OpInfo {
    OpInfo::new(name, move |rng| {
        PAIRS
            .iter()
            .map(|&(sa, sb)| {
                let (a, b) = (da.tensor(rng, sa), db.tensor(rng, sb));
                Sample::new(format!("{sa:?} with {sb:?}"), vec![a, b], move |x| f(&x[0], &x[1]))
                    .reference(move |x| Nd::broadcast(&[&x[0], &x[1]], |v| r(v[0], v[1])))
            })
            .collect()
    })
    .errors(move || {
        vec![
            err("[2, 3] with [4]", name, move || {
                f(&Tensor::ones((2, 3), DType::F64)?, &Tensor::ones(4, DType::F64)?)
            }),
            err("[0] with [2]", name, move || {
                f(&Tensor::ones(0, DType::F64)?, &Tensor::ones(2, DType::F64)?)
            }),
        ]
    })
}

fn binary_rows() -> Vec<OpInfo> {
    use Domain::{AwayFromZero, Real, Uniform};
    vec![
        binary("add", Tensor::add, |a, b| a + b, Real, Real),
        binary("sub", Tensor::sub, |a, b| a - b, Real, Real),
        binary("mul", Tensor::mul, |a, b| a * b, Real, Real),
        binary("div", Tensor::div, |a, b| a / b, Real, AwayFromZero),
        // positive bases: the exponent's gradient a^b ln a needs a > 0
        binary("pow", Tensor::pow, f64::powf, Uniform(0.5, 2.0), Uniform(-2.0, 2.0)),
        // continuous random operands never tie (ties are checked by hand below)
        binary("maximum", Tensor::maximum, f64::max, Real, Real),
        binary("minimum", Tensor::minimum, f64::min, Real, Real),
        binary("atan2", Tensor::atan2, f64::atan2, Real, Real),
        OpInfo::new("where_cond", |rng| {
            let cases: [(&[usize], &[usize], &[usize]); 5] = [
                (&[3, 4], &[3, 4], &[3, 4]),
                (&[3, 1], &[4], &[3, 4]),
                (&[], &[2, 3], &[]),
                (&[2, 3], &[], &[]),
                (&[0, 3], &[3], &[0, 3]),
            ];
            cases
                .iter()
                .map(|&(sc, sa, sb)| {
                    let inputs = vec![rand_mask(rng, sc), real(rng, sa), real(rng, sb)];
                    Sample::new(format!("{sc:?} ? {sa:?} : {sb:?}"), inputs, |x| {
                        Tensor::where_cond(&x[0], &x[1], &x[2])
                    })
                    .reference(|x| {
                        Nd::broadcast(
                            &[&x[0], &x[1], &x[2]],
                            |v| if v[0] == 0.0 { v[2] } else { v[1] },
                        )
                    })
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("f64 condition", "where", || {
                    let x = Tensor::ones(3, DType::F64)?;
                    Tensor::where_cond(&x, &x, &x)
                }),
                err("i64 condition", "where", || {
                    let x = Tensor::ones(3, DType::F64)?;
                    Tensor::where_cond(&Tensor::ones(3, DType::I64)?, &x, &x)
                }),
                err("shapes", "where", || {
                    let c = Tensor::ones(3, DType::Bool)?;
                    Tensor::where_cond(
                        &c,
                        &Tensor::ones(4, DType::F64)?,
                        &Tensor::ones(1, DType::F64)?,
                    )
                }),
            ]
        }),
    ]
}

// ---------------------------------------------------------------------------------------
// reductions

type Case<'a> = (&'a [usize], &'a [isize], bool);

/// `(shape, dims, keepdim)`: one dim, keepdim, several dims, negative dims, all dims, 0-d,
/// and reductions of empty tensors over the empty and the non-empty dim.
const REDUCE_CASES: [Case<'static>; 11] = [
    (&[3, 4], &[1], false),
    (&[3, 4], &[0], true),
    (&[2, 3, 2], &[0, 2], false),
    (&[2, 3, 2], &[-1], true),
    (&[3, 4], &[], false),
    (&[2, 3, 2], &[2, 0, 1], true),
    (&[5], &[0], false),
    (&[], &[0], false),
    (&[], &[], true),
    (&[0, 3], &[0], false),
    (&[0, 3], &[1], true),
];

/// A reduction row over `cases`, with inputs from `gen`; errors name `torch_name`.
fn reduction(
    name: &'static str,
    torch_name: &'static str,
    cases: &'static [Case<'static>],
    gen: fn(&mut Generator, &[usize]) -> Tensor,
    f: fn(&Tensor, &[isize], bool) -> Result<Tensor>,
    r: fn(&[f64]) -> f64,
) -> OpInfo {
    OpInfo::new(name, move |rng| {
        cases
            .iter()
            .map(|&(shape, dims, keep)| {
                let d = dims.to_vec();
                let d2 = dims.to_vec();
                s1(format!("{shape:?} dims {dims:?} keepdim {keep}"), gen(rng, shape), move |x| {
                    f(x, &d, keep)
                })
                .reference(move |x| x[0].reduce(&d2, keep, r))
            })
            .collect()
    })
    .errors(move || {
        vec![
            err("dim 2 of a matrix", torch_name, move || {
                f(&Tensor::ones((2, 3), DType::F64)?, &[2], false)
            }),
            err("dim -3 of a matrix", torch_name, move || {
                f(&Tensor::ones((2, 3), DType::F64)?, &[-3], false)
            }),
            err("repeated dim", torch_name, move || {
                f(&Tensor::ones((2, 3), DType::F64)?, &[1, -1], false)
            }),
        ]
    })
}

/// A full reduction row (`sum()`, `mean()`, `prod()`, `norm()`).
fn full_reduction(
    name: &'static str,
    gen: fn(&mut Generator, &[usize]) -> Tensor,
    f: Unary,
    r: fn(&[f64]) -> f64,
) -> OpInfo {
    OpInfo::new(name, move |rng| {
        SHAPES
            .iter()
            .map(|&shape| {
                s1(format!("{shape:?}"), gen(rng, shape), f)
                    .reference(move |x| x[0].reduce(&[], false, r))
            })
            .collect()
    })
}

fn sum(v: &[f64]) -> f64 {
    v.iter().sum()
}
fn mean(v: &[f64]) -> f64 {
    sum(v) / v.len() as f64
}
fn prod(v: &[f64]) -> f64 {
    v.iter().product()
}
fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}
fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}
/// `log Σ eˣ`, shifted by the maximum (unshifted when the maximum is infinite).
fn logsumexp(v: &[f64]) -> f64 {
    let m = max(v);
    let m = if m.is_finite() { m } else { 0.0 };
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}
/// `Σ (x - mean)² / max(n - c, 0)`.
fn var(v: &[f64], c: f64) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - c).max(0.0)
}

/// Products stay moderate: magnitudes in [0.5, 2), random signs.
fn nonzero(rng: &mut Generator, shape: &[usize]) -> Tensor {
    Domain::AwayFromZero.tensor(rng, shape)
}

/// `nonzero` values with zeros at the given flat positions.
fn with_zeros(rng: &mut Generator, shape: &[usize], zeros: &[usize]) -> Tensor {
    let n = shape.iter().product();
    let mut v = Domain::AwayFromZero.values(rng, n);
    for &z in zeros {
        v[z] = 0.0;
    }
    t64(v, shape)
}

fn reduction_rows() -> Vec<OpInfo> {
    vec![
        full_reduction("sum", real, Tensor::sum, sum),
        reduction("sum_dims", "sum", &REDUCE_CASES, real, Tensor::sum_dims, sum),
        // the mean of no elements is NaN, as in PyTorch
        full_reduction("mean", real, Tensor::mean, mean),
        reduction("mean_dims", "mean", &REDUCE_CASES, real, Tensor::mean_dims, mean),
        OpInfo::new("prod", |rng| {
            // the product is a polynomial, so finite differences are valid at zeros too:
            // they check the Π_{j≠i} x_j gradient with one zero (nonzero at the zero) and
            // two zeros (zero everywhere)
            let cases: [(&str, &[usize], &[usize]); 7] = [
                ("no zero", &[3, 4], &[]),
                ("one zero", &[3, 4], &[5]),
                ("two zeros", &[3, 4], &[1, 10]),
                ("vector", &[5], &[]),
                ("0-d", &[], &[]),
                ("0-d zero", &[], &[0]),
                ("empty", &[0, 3], &[]),
            ];
            cases
                .iter()
                .map(|&(desc, shape, zeros)| {
                    s1(format!("{desc} {shape:?}"), with_zeros(rng, shape, zeros), Tensor::prod)
                        .reference(|x| x[0].reduce(&[], false, prod))
                })
                .collect()
        }),
        OpInfo::new("prod_dims", |rng| {
            // row 0 has one zero, row 1 two zeros, row 2 none
            let zeros: &[usize] = &[1, 4, 6];
            let cases: [(Case<'static>, &[usize]); 8] = [
                ((&[3, 4], &[1], false), zeros),
                ((&[3, 4], &[0], true), zeros),
                ((&[3, 4], &[-1, 0], false), zeros),
                ((&[2, 3, 2], &[0, 2], false), &[0, 3]),
                ((&[2, 3, 2], &[1], true), &[]),
                ((&[], &[0], false), &[]),
                ((&[0, 3], &[0], false), &[]),
                ((&[0, 3], &[1], true), &[]),
            ];
            cases
                .iter()
                .map(|&((shape, dims, keep), z)| {
                    let (d, d2) = (dims.to_vec(), dims.to_vec());
                    s1(
                        format!("{shape:?} dims {dims:?} keepdim {keep} zeros at {z:?}"),
                        with_zeros(rng, shape, z),
                        move |x| x.prod_dims(&d, keep),
                    )
                    .reference(move |x| x[0].reduce(&d2, keep, prod))
                })
                .collect()
        }),
        reduction("amax", "amax", &AMAX_CASES, real, Tensor::amax, max)
            .errors(|| minmax_errors("amax", Tensor::amax)),
        reduction("amin", "amin", &AMAX_CASES, real, Tensor::amin, min)
            .errors(|| minmax_errors("amin", Tensor::amin)),
        OpInfo::new("logsumexp", |rng| {
            let cases: [Case<'static>; 8] = [
                (&[3, 4], &[1], false),
                (&[3, 4], &[0, 1], true),
                (&[2, 3, 2], &[-1], false),
                (&[3, 4], &[], false),
                (&[], &[0], false),
                // log Σ over no elements = -inf, as PyTorch
                (&[0, 3], &[0], false),
                (&[0, 3], &[1], true),
                (&[5], &[0], true),
            ];
            let mut v: Vec<Sample> = cases
                .iter()
                .map(|&(shape, dims, keep)| {
                    let (d, d2) = (dims.to_vec(), dims.to_vec());
                    s1(
                        format!("{shape:?} dims {dims:?} keepdim {keep}"),
                        real(rng, shape),
                        move |x| x.logsumexp(&d, keep),
                    )
                    .reference(move |x| x[0].reduce(&d2, keep, logsumexp))
                })
                .collect();
            // stability: e^1000 overflows, the shifted sum does not
            let big = t64(vec![1000.0, 1001.0, 999.0, -1000.0, 0.5, 0.25], &[2, 3]);
            v.push(
                s1("large values", big, |x| x.logsumexp(&[1], false))
                    .reference(|x| x[0].reduce(&[1], false, logsumexp)),
            );
            // -inf entries: finite output, no finite differences through -inf
            let inf =
                t64(vec![f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY, f64::NEG_INFINITY], &[2, 2]);
            v.push(
                s1("-inf entries", inf, |x| x.logsumexp(&[1], false))
                    .reference(|x| x[0].reduce(&[1], false, logsumexp))
                    .grad_order(0),
            );
            v
        }),
        OpInfo::new("var", |rng| {
            let cases: [(Case<'static>, f64, u8); 8] = [
                ((&[3, 4], &[1], false), 1.0, 2),
                ((&[3, 4], &[0], true), 0.0, 2),
                ((&[2, 3, 2], &[0, 2], false), 1.0, 2),
                ((&[3, 4], &[], false), 1.0, 2),
                ((&[3, 4], &[1], false), 2.5, 2),
                // one element: 0/0 = NaN with correction 1 (as PyTorch), 0 with 0
                ((&[1, 3], &[0], false), 1.0, 0),
                ((&[], &[], false), 0.0, 2),
                ((&[0, 3], &[0], false), 1.0, 2),
            ];
            cases
                .iter()
                .map(|&((shape, dims, keep), c, order)| {
                    let (d, d2) = (dims.to_vec(), dims.to_vec());
                    s1(
                        format!("{shape:?} dims {dims:?} correction {c} keepdim {keep}"),
                        real(rng, shape),
                        move |x| x.var(&d, c, keep),
                    )
                    .reference(move |x| x[0].reduce(&d2, keep, |v| var(v, c)))
                    .grad_order(order)
                })
                .collect()
        })
        .errors(|| {
            vec![err("dim 2", "var", || Tensor::ones((2, 3), DType::F64)?.var(&[2], 1.0, false))]
        }),
        OpInfo::new("std", |rng| {
            // no sample with zero deviation: there the gradient is NaN (as PyTorch)
            let cases: [(Case<'static>, f64); 5] = [
                ((&[3, 4], &[1], false), 1.0),
                ((&[3, 4], &[0], true), 0.0),
                ((&[2, 3, 2], &[0, 2], false), 1.0),
                ((&[3, 4], &[], false), 1.0),
                ((&[0, 3], &[1], true), 1.0),
            ];
            cases
                .iter()
                .map(|&((shape, dims, keep), c)| {
                    let (d, d2) = (dims.to_vec(), dims.to_vec());
                    s1(
                        format!("{shape:?} dims {dims:?} correction {c} keepdim {keep}"),
                        real(rng, shape),
                        move |x| x.std(&d, c, keep),
                    )
                    .reference(move |x| x[0].reduce(&d2, keep, |v| var(v, c).sqrt()))
                })
                .collect()
        }),
        OpInfo::new("norm", |rng| {
            let mut v: Vec<Sample> = [&[3, 4][..], &[5], &[], &[0, 3]]
                .iter()
                .map(|&shape| {
                    s1(format!("{shape:?}"), nonzero(rng, shape), Tensor::norm).reference(|x| {
                        x[0].reduce(&[], false, |v| v.iter().map(|a| a * a).sum::<f64>().sqrt())
                    })
                })
                .collect();
            // ‖x‖ is not differentiable at 0; its subgradient 0 matches the central
            // difference (‖εe‖ - ‖-εe‖)/2ε = 0, but second differences blow up
            v.push(
                s1("all zero", Tensor::zeros((2, 3), DType::F64).unwrap(), Tensor::norm)
                    .reference(|_| Nd::new(&[], vec![0.0]))
                    .grad_order(1),
            );
            v
        }),
    ]
}

/// amax/amin: no sample reduces an empty dim (an error, as PyTorch).
const AMAX_CASES: [Case<'static>; 9] = [
    (&[3, 4], &[1], false),
    (&[3, 4], &[0], true),
    (&[2, 3, 2], &[0, 2], false),
    (&[2, 3, 2], &[-1], true),
    (&[3, 4], &[], false),
    (&[5], &[0], false),
    (&[], &[0], false),
    (&[], &[], true),
    (&[0, 3], &[1], false),
];

fn minmax_errors(
    name: &'static str,
    f: fn(&Tensor, &[isize], bool) -> Result<Tensor>,
) -> Vec<Sample> {
    vec![
        err("empty reduced dim", name, move || f(&Tensor::ones((0, 3), DType::F64)?, &[0], false)),
        err("all of an empty tensor", name, move || f(&Tensor::ones(0, DType::F64)?, &[], false)),
        err("dim 2 of a matrix", name, move || f(&Tensor::ones((2, 3), DType::F64)?, &[2], false)),
    ]
}

// ---------------------------------------------------------------------------------------
// shape ops

fn cat_ref(xs: &[Nd], dim: isize) -> Nd {
    // 1-d empty tensors are skipped, as PyTorch's legacy rule
    let parts: Vec<&Nd> = xs.iter().filter(|x| x.shape != [0]).collect();
    let d = wrap(dim, parts[0].rank());
    let mut shape = parts[0].shape.clone();
    shape[d] = parts.iter().map(|p| p.shape[d]).sum();
    Nd::from_fn(&shape, |i| {
        let mut k = i[d];
        for p in &parts {
            if k < p.shape[d] {
                let mut j = i.to_vec();
                j[d] = k;
                return p.at(&j);
            }
            k -= p.shape[d];
        }
        unreachable!()
    })
}

fn stack_ref(xs: &[Nd], dim: isize) -> Nd {
    let d = wrap(dim, xs[0].rank() + 1);
    let mut shape = xs[0].shape.clone();
    shape.insert(d, xs.len());
    Nd::from_fn(&shape, |i| {
        let mut j = i.to_vec();
        let k = j.remove(d);
        xs[k].at(&j)
    })
}

/// `x[..., start + step*i, ...]` along `dim`, `len` elements.
fn strided_ref(x: &Nd, dim: usize, start: usize, len: usize, step: usize) -> Nd {
    let mut shape = x.shape.clone();
    shape[dim] = len;
    Nd::from_fn(&shape, |i| {
        let mut j = i.to_vec();
        j[dim] = start + step * i[dim];
        x.at(&j)
    })
}

fn pad_ref(x: &Nd, pad: &[isize]) -> Nd {
    let r = x.rank();
    let mut shape = x.shape.clone();
    let mut left = vec![0isize; r];
    for (k, p) in pad.chunks(2).enumerate() {
        let d = r - 1 - k;
        shape[d] = (x.shape[d] as isize + p[0] + p[1]) as usize;
        left[d] = p[0];
    }
    // out[i] = x[i - left] inside x, else 0 (negative `left` crops)
    Nd::from_fn(&shape, |i| {
        let mut j = Vec::with_capacity(r);
        for d in 0..r {
            let s = i[d] as isize - left[d];
            if s < 0 || s >= x.shape[d] as isize {
                return 0.0;
            }
            j.push(s as usize);
        }
        x.at(&j)
    })
}

fn repeat_ref(x: &Nd, reps: &[usize]) -> Nd {
    let lead = reps.len() - x.rank();
    let mut src = vec![1; lead];
    src.extend_from_slice(&x.shape);
    let shape: Vec<usize> = src.iter().zip(reps).map(|(s, r)| s * r).collect();
    Nd::from_fn(&shape, |i| {
        let j: Vec<usize> = (0..x.rank()).map(|d| i[lead + d] % x.shape[d]).collect();
        x.at(&j)
    })
}

fn flip_ref(x: &Nd, dims: &[isize]) -> Nd {
    let r = x.rank();
    let d: Vec<usize> = dims.iter().map(|&k| wrap(k, r)).collect();
    Nd::from_fn(&x.shape, |i| {
        let j: Vec<usize> =
            (0..r).map(|k| if d.contains(&k) { x.shape[k] - 1 - i[k] } else { i[k] }).collect();
        x.at(&j)
    })
}

fn index_select_ref(x: &Nd, ix: &Nd, dim: isize) -> Nd {
    if x.rank() == 0 {
        return x.clone();
    }
    let d = wrap(dim, x.rank());
    let mut shape = x.shape.clone();
    shape[d] = ix.data.len();
    Nd::from_fn(&shape, |i| {
        let mut j = i.to_vec();
        j[d] = ix.data[i[d]] as usize;
        x.at(&j)
    })
}

fn gather_ref(x: &Nd, ix: &Nd, dim: isize) -> Nd {
    if x.rank() == 0 {
        return Nd::new(&ix.shape, vec![x.data[0]; ix.data.len()]);
    }
    let d = wrap(dim, x.rank());
    Nd::from_fn(&ix.shape, |i| {
        let mut j = i.to_vec();
        j[d] = ix.ix(i);
        x.at(&j)
    })
}

fn scatter_add_ref(x: &Nd, ix: &Nd, src: &Nd, dim: isize) -> Nd {
    let mut out = x.clone();
    if x.rank() == 0 {
        if !ix.data.is_empty() {
            out.data[0] += src.data[0];
        }
        return out;
    }
    let d = wrap(dim, x.rank());
    for_each_index(&ix.shape, |i| {
        let mut j = i.to_vec();
        j[d] = ix.ix(i);
        let o = out.offset(&j);
        out.data[o] += src.at(i);
    });
    out
}

fn shape_rows() -> Vec<OpInfo> {
    vec![
        OpInfo::new("cat", |rng| {
            let cases: [(&[&[usize]], isize); 6] = [
                (&[&[2, 3], &[1, 3]], 0),
                (&[&[2, 1], &[2, 3], &[2, 2]], -1),
                (&[&[2, 3], &[0, 3]], 0),
                // a 1-d empty tensor is skipped whatever the other shapes (PyTorch)
                (&[&[0], &[2, 3]], 0),
                (&[&[2, 0], &[2, 0]], 1),
                (&[&[3, 2]], 1),
            ];
            cases
                .iter()
                .map(|&(shapes, dim)| {
                    let xs: Vec<Tensor> = shapes.iter().map(|s| real(rng, s)).collect();
                    Sample::new(format!("{shapes:?} dim {dim}"), xs, move |x| {
                        Tensor::cat(&x.iter().collect::<Vec<_>>(), dim)
                    })
                    .reference(move |x| cat_ref(x, dim))
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("0-d parts", "cat", || {
                    Tensor::cat(&[&Tensor::scalar(1.0f64), &Tensor::scalar(2.0f64)], 0)
                }),
                err("shapes", "cat", || {
                    Tensor::cat(
                        &[&Tensor::ones((2, 3), DType::F64)?, &Tensor::ones((2, 4), DType::F64)?],
                        0,
                    )
                }),
                err("ranks", "cat", || {
                    Tensor::cat(
                        &[&Tensor::ones((2, 3), DType::F64)?, &Tensor::ones(3, DType::F64)?],
                        0,
                    )
                }),
                err("no tensors", "cat", || Tensor::cat(&[], 0)),
                err("dim 2", "cat", || Tensor::cat(&[&Tensor::ones((2, 3), DType::F64)?], 2)),
            ]
        }),
        OpInfo::new("stack", |rng| {
            let cases: [(&[usize], usize, isize); 5] =
                [(&[2, 3], 3, 0), (&[2, 3], 2, -1), (&[2, 3], 2, 1), (&[], 3, 0), (&[0, 2], 2, 1)];
            cases
                .iter()
                .map(|&(shape, n, dim)| {
                    let xs: Vec<Tensor> = (0..n).map(|_| real(rng, shape)).collect();
                    Sample::new(format!("{n} x {shape:?} dim {dim}"), xs, move |x| {
                        Tensor::stack(&x.iter().collect::<Vec<_>>(), dim)
                    })
                    .reference(move |x| stack_ref(x, dim))
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("shapes", "stack", || {
                    Tensor::stack(
                        &[&Tensor::ones(3, DType::F64)?, &Tensor::ones(2, DType::F64)?],
                        0,
                    )
                }),
                err("no tensors", "stack", || Tensor::stack(&[], 0)),
                err("dim 2 of vectors", "stack", || {
                    Tensor::stack(&[&Tensor::ones(3, DType::F64)?], 2)
                }),
            ]
        }),
        OpInfo::new("split", |rng| {
            let cases: [(&[usize], usize, isize, &[usize]); 6] = [
                (&[3, 5], 2, 1, &[2, 2, 1]),
                (&[4, 2], 4, 0, &[4]),
                (&[4, 2], 7, 0, &[4]),
                (&[5], 2, -1, &[2, 2, 1]),
                (&[0, 3], 2, 0, &[0]),
                (&[3, 0], 2, 1, &[0]),
            ];
            cases
                .iter()
                .map(|&(shape, size, dim, sizes)| {
                    let sizes = sizes.to_vec();
                    Sample::multi(
                        format!("{shape:?} by {size} along {dim}"),
                        vec![real(rng, shape)],
                        move |x| x[0].split(size, dim),
                    )
                    .reference_multi(move |x| {
                        let d = wrap(dim, x[0].rank());
                        let mut start = 0;
                        sizes
                            .iter()
                            .map(|&n| {
                                start += n;
                                strided_ref(&x[0], d, start - n, n, 1)
                            })
                            .collect()
                    })
                })
                .collect()
        })
        .errors(|| {
            vec![
                err_multi("0-d", "split", || Tensor::scalar(1.0f64).split(1, 0)),
                err_multi("size 0", "split", || Tensor::ones(3, DType::F64)?.split(0, 0)),
                err_multi("dim 1 of a vector", "split", || {
                    Tensor::ones(3, DType::F64)?.split(1, 1)
                }),
            ]
        }),
        OpInfo::new("split_with_sizes", |rng| {
            let x = real(rng, &[4, 3]);
            vec![Sample::multi("[4, 3] into [1, 0, 3]", vec![x], |x| {
                x[0].split_with_sizes(&[1, 0, 3], 0)
            })
            .reference_multi(|x| {
                vec![
                    strided_ref(&x[0], 0, 0, 1, 1),
                    strided_ref(&x[0], 0, 1, 0, 1),
                    strided_ref(&x[0], 0, 1, 3, 1),
                ]
            })]
        })
        .errors(|| {
            vec![err_multi("sizes do not add up", "split", || {
                Tensor::ones(4, DType::F64)?.split_with_sizes(&[1, 2], 0)
            })]
        }),
        OpInfo::new("chunk", |rng| {
            // chunks of ceil(n / chunks): there may be fewer chunks than asked
            let cases: [(&[usize], usize, isize, &[usize]); 5] = [
                (&[7], 3, 0, &[3, 3, 1]),
                (&[6, 2], 4, 0, &[2, 2, 2]),
                (&[2, 3], 5, 1, &[1, 1, 1]),
                (&[2, 4], 2, -1, &[2, 2]),
                (&[0], 2, 0, &[0]),
            ];
            cases
                .iter()
                .map(|&(shape, chunks, dim, sizes)| {
                    let sizes = sizes.to_vec();
                    Sample::multi(
                        format!("{shape:?} in {chunks} along {dim}"),
                        vec![real(rng, shape)],
                        move |x| x[0].chunk(chunks, dim),
                    )
                    .reference_multi(move |x| {
                        let d = wrap(dim, x[0].rank());
                        let mut start = 0;
                        sizes
                            .iter()
                            .map(|&n| {
                                start += n;
                                strided_ref(&x[0], d, start - n, n, 1)
                            })
                            .collect()
                    })
                })
                .collect()
        })
        .errors(|| {
            vec![
                err_multi("0-d", "chunk", || Tensor::scalar(1.0f64).chunk(2, 0)),
                err_multi("0 chunks", "chunk", || Tensor::ones(3, DType::F64)?.chunk(0, 0)),
            ]
        }),
        OpInfo::new("unbind", |rng| {
            let cases: [(&[usize], isize); 5] =
                [(&[3, 4], 0), (&[3, 4], -1), (&[2, 0], 1), (&[2, 0], 0), (&[1], 0)];
            cases
                .iter()
                .map(|&(shape, dim)| {
                    Sample::multi(
                        format!("{shape:?} along {dim}"),
                        vec![real(rng, shape)],
                        move |x| x[0].unbind(dim),
                    )
                    .reference_multi(move |x| {
                        let d = wrap(dim, x[0].rank());
                        (0..x[0].shape[d])
                            .map(|k| {
                                let mut s = strided_ref(&x[0], d, k, 1, 1);
                                s.shape.remove(d);
                                s
                            })
                            .collect()
                    })
                })
                .collect()
        })
        .errors(|| vec![err_multi("0-d", "unbind", || Tensor::scalar(1.0f64).unbind(0))]),
        OpInfo::new("flip", |rng| {
            let cases: [(&[usize], &[isize]); 7] = [
                (&[3, 4], &[0]),
                (&[3, 4], &[0, 1]),
                (&[2, 3, 2], &[-1, 0]),
                (&[5], &[]),
                (&[], &[0]),
                (&[], &[]),
                (&[0, 3], &[1]),
            ];
            cases
                .iter()
                .map(|&(shape, dims)| {
                    let (d, d2) = (dims.to_vec(), dims.to_vec());
                    s1(format!("{shape:?} dims {dims:?}"), real(rng, shape), move |x| x.flip(&d))
                        .reference(move |x| flip_ref(&x[0], &d2))
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("repeated dim", "flip", || Tensor::ones((2, 3), DType::F64)?.flip(&[0, -2])),
                err("dim 2", "flip", || Tensor::ones((2, 3), DType::F64)?.flip(&[2])),
            ]
        }),
        OpInfo::new("pad", |rng| {
            let cases: [(&[usize], &[isize]); 9] = [
                (&[2, 3], &[1, 2]),
                (&[2, 3], &[1, 0, 2, 1]),
                (&[2, 3], &[-1, 1]),
                (&[3, 4], &[-1, -1, 1, -2]),
                // cropping to an empty dim is allowed, to a negative size is not
                (&[2, 3], &[-2, -1]),
                (&[0, 3], &[1, 1]),
                (&[2, 0], &[1, 1]),
                (&[2, 2, 2], &[1, 0, 0, 1, 1, 1]),
                (&[2, 3], &[]),
            ];
            cases
                .iter()
                .map(|&(shape, pad)| {
                    let (p, p2) = (pad.to_vec(), pad.to_vec());
                    s1(format!("{shape:?} pad {pad:?}"), real(rng, shape), move |x| x.pad(&p))
                        .reference(move |x| pad_ref(&x[0], &p2))
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("0-d", "pad", || Tensor::scalar(1.0f64).pad(&[1, 1])),
                err("odd length", "pad", || Tensor::ones((2, 3), DType::F64)?.pad(&[1])),
                err("more pairs than dims", "pad", || {
                    Tensor::ones(3, DType::F64)?.pad(&[1, 1, 1, 1])
                }),
                err("cropping past the size", "pad", || {
                    Tensor::ones(3, DType::F64)?.pad(&[-2, -2])
                }),
                err("overflowing size", "pad", || {
                    Tensor::ones(3, DType::F64)?.pad(&[isize::MAX, isize::MAX])
                }),
            ]
        }),
        OpInfo::new("repeat", |rng| {
            let cases: [(&[usize], &[usize]); 6] = [
                (&[2, 3], &[2, 1]),
                (&[2, 3], &[1, 2, 2]),
                (&[3], &[2, 0]),
                (&[], &[3]),
                (&[], &[]),
                (&[0, 2], &[2, 2]),
            ];
            cases
                .iter()
                .map(|&(shape, reps)| {
                    let (r, r2) = (reps.to_vec(), reps.to_vec());
                    s1(format!("{shape:?} x {reps:?}"), real(rng, shape), move |x| x.repeat(&r))
                        .reference(move |x| repeat_ref(&x[0], &r2))
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("fewer repeats than dims", "repeat", || {
                    Tensor::ones((2, 3), DType::F64)?.repeat(&[2])
                }),
                err("overflowing size", "repeat", || {
                    Tensor::ones(3, DType::F64)?.repeat(&[usize::MAX, 2])
                }),
            ]
        }),
    ]
}

// ---------------------------------------------------------------------------------------
// indexing

/// `(input shape, dim, index values, index shape)`.
type IndexCase = (&'static [usize], isize, &'static [i64], &'static [usize]);
/// `(input shape, dim, index values, index shape, src shape)`.
type ScatterCase = (&'static [usize], isize, &'static [i64], &'static [usize], &'static [usize]);

fn index_rows() -> Vec<OpInfo> {
    vec![
        OpInfo::new("index_select", |rng| {
            // repeated indices: the gradient accumulates (checked by finite differences)
            let cases: [IndexCase; 7] = [
                (&[4, 3], 0, &[0, 2, 2, 1], &[4]),
                (&[4, 3], 1, &[2, 2], &[2]),
                (&[4, 3], -1, &[], &[0]),
                (&[4, 3], 0, &[3], &[]),
                (&[], 0, &[0], &[]),
                (&[], 0, &[0], &[1]),
                (&[0, 3], 1, &[2, 0], &[2]),
            ];
            cases
                .iter()
                .map(|&(shape, dim, ix, ishape)| {
                    Sample::new(
                        format!("{shape:?} dim {dim} index {ix:?} of shape {ishape:?}"),
                        vec![real(rng, shape), idx(ix, ishape)],
                        move |x| x[0].index_select(dim, &x[1]),
                    )
                    .reference(move |x| index_select_ref(&x[0], &x[1], dim))
                })
                .collect()
        })
        .errors(|| {
            let x = || Tensor::ones((4, 3), DType::F64);
            vec![
                err("index 4 of 4", "index_select", move || {
                    x()?.index_select(0, &idx(&[0, 4], &[2]))
                }),
                err("negative index", "index_select", move || {
                    x()?.index_select(1, &idx(&[-1], &[1]))
                }),
                err("2-d index", "index_select", move || {
                    x()?.index_select(0, &idx(&[0, 1], &[1, 2]))
                }),
                err("f64 index", "index_select", move || {
                    x()?.index_select(0, &Tensor::zeros(2, DType::F64)?)
                }),
                err("dim 2", "index_select", move || x()?.index_select(2, &idx(&[0], &[1]))),
                err("two indices of a 0-d tensor", "index_select", || {
                    Tensor::scalar(1.0f64).index_select(0, &idx(&[0, 0], &[2]))
                }),
            ]
        }),
        OpInfo::new("gather", |rng| {
            let cases: [IndexCase; 6] = [
                (&[3, 4], 1, &[3, 0, 1, 1, 2, 3], &[3, 2]),
                (&[3, 4], 0, &[2, 0, 1, 1, 0, 0, 2, 2], &[2, 4]),
                // the index may be smaller than the input outside `dim`
                (&[3, 4], 0, &[2, 2, 0, 1], &[2, 2]),
                (&[3, 4], -1, &[], &[3, 0]),
                (&[], 0, &[0], &[]),
                (&[2, 3, 2], 1, &[0, 2, 1, 1, 2, 0, 0, 0], &[2, 2, 2]),
            ];
            cases
                .iter()
                .map(|&(shape, dim, ix, ishape)| {
                    Sample::new(
                        format!("{shape:?} dim {dim} index {ishape:?}"),
                        vec![real(rng, shape), idx(ix, ishape)],
                        move |x| x[0].gather(dim, &x[1]),
                    )
                    .reference(move |x| gather_ref(&x[0], &x[1], dim))
                })
                .collect()
        })
        .errors(|| {
            let x = || Tensor::ones((3, 4), DType::F64);
            vec![
                err("index 4 of 4", "gather", move || x()?.gather(1, &idx(&[0, 4], &[1, 2]))),
                err("negative index", "gather", move || x()?.gather(1, &idx(&[-1], &[1, 1]))),
                err("f64 index", "gather", move || {
                    x()?.gather(0, &Tensor::zeros((1, 1), DType::F64)?)
                }),
                err("rank", "gather", move || x()?.gather(0, &idx(&[0], &[1]))),
                err("index larger outside dim", "gather", move || {
                    x()?.gather(0, &idx(&[0; 5], &[1, 5]))
                }),
                err("dim 2", "gather", move || x()?.gather(2, &idx(&[0], &[1, 1]))),
            ]
        }),
        OpInfo::new("scatter_add", |rng| {
            let cases: [ScatterCase; 5] = [
                // repeated targets accumulate
                (&[3, 4], 0, &[2, 0, 1, 1, 0, 0, 2, 2], &[2, 4], &[2, 4]),
                // src larger than index: only its leading block is read
                (&[3, 4], 0, &[1, 1, 2, 0], &[2, 2], &[3, 5]),
                (&[3, 4], -1, &[3, 3, 0, 1, 2, 2], &[3, 2], &[3, 2]),
                (&[], 0, &[0], &[], &[]),
                (&[3, 4], 0, &[], &[0, 4], &[0, 4]),
            ];
            cases
                .iter()
                .map(|&(shape, dim, ix, ishape, sshape)| {
                    Sample::new(
                        format!("{shape:?} dim {dim} index {ishape:?} src {sshape:?}"),
                        vec![real(rng, shape), idx(ix, ishape), real(rng, sshape)],
                        move |x| x[0].scatter_add(dim, &x[1], &x[2]),
                    )
                    .reference(move |x| scatter_add_ref(&x[0], &x[1], &x[2], dim))
                })
                .collect()
        })
        .errors(|| {
            let x = || Tensor::ones((3, 4), DType::F64);
            let src = || Tensor::ones((2, 4), DType::F64);
            vec![
                err("index 3 of 3", "scatter_add", move || {
                    x()?.scatter_add(0, &idx(&[3], &[1, 1]), &src()?)
                }),
                err("negative index", "scatter_add", move || {
                    x()?.scatter_add(0, &idx(&[-1], &[1, 1]), &src()?)
                }),
                err("f64 index", "scatter_add", move || {
                    x()?.scatter_add(0, &Tensor::zeros((1, 1), DType::F64)?, &src()?)
                }),
                err("src dtype", "scatter_add", move || {
                    x()?.scatter_add(0, &idx(&[0], &[1, 1]), &Tensor::ones((2, 4), DType::F32)?)
                }),
                err("rank", "scatter_add", move || x()?.scatter_add(0, &idx(&[0], &[1]), &src()?)),
                err("index larger than src", "scatter_add", move || {
                    x()?.scatter_add(0, &idx(&[0; 3], &[3, 1]), &src()?)
                }),
            ]
        }),
    ]
}

// ---------------------------------------------------------------------------------------
// views

/// A view row: `(input shape, call, reference)` per sample, on random inputs.
type ViewCase = (Vec<usize>, Unary, fn(&Nd) -> Nd);

/// A view sample: input shape, call, reference.
fn vc(shape: &[usize], f: Unary, r: fn(&Nd) -> Nd) -> ViewCase {
    (shape.to_vec(), f, r)
}

fn view_row(name: &'static str, cases: Vec<ViewCase>) -> OpInfo {
    let cases = std::rc::Rc::new(cases);
    OpInfo::new(name, move |rng| {
        cases
            .iter()
            .enumerate()
            .map(|(k, (shape, f, r))| {
                let r = *r;
                s1(format!("case {k}: {shape:?}"), real(rng, shape), *f)
                    .reference(move |x| r(&x[0]))
            })
            .collect()
    })
}

/// `x` itself (ops that return their input).
fn same(x: &Nd) -> Nd {
    x.clone()
}

/// `x` with another shape, same row-major data.
fn reshaped(x: &Nd, shape: &[usize]) -> Nd {
    Nd::new(shape, x.data.clone())
}

fn permute_ref(x: &Nd, p: &[usize]) -> Nd {
    let shape: Vec<usize> = p.iter().map(|&d| x.shape[d]).collect();
    Nd::from_fn(&shape, |i| {
        let mut j = vec![0; p.len()];
        for (k, &d) in p.iter().enumerate() {
            j[d] = i[k];
        }
        x.at(&j)
    })
}

fn select_ref(x: &Nd, dim: usize, index: usize) -> Nd {
    let mut s = strided_ref(x, dim, index, 1, 1);
    s.shape.remove(dim);
    s
}

fn expand_ref(x: &Nd, shape: &[usize]) -> Nd {
    let zero = Nd::new(shape, vec![0.0; shape.iter().product()]);
    Nd::broadcast(&[x, &zero], |v| v[0])
}

fn diagonal_ref(x: &Nd, offset: isize, d1: isize, d2: isize) -> Nd {
    let r = x.rank();
    let (a, b) = (wrap(d1, r), wrap(d2, r));
    let (sa, sb) = if offset >= 0 { (0, offset as usize) } else { (offset.unsigned_abs(), 0) };
    let len = x.shape[a].saturating_sub(sa).min(x.shape[b].saturating_sub(sb));
    let mut shape: Vec<usize> = (0..r).filter(|&i| i != a && i != b).map(|i| x.shape[i]).collect();
    shape.push(len);
    Nd::from_fn(&shape, |i| {
        let k = i[i.len() - 1];
        let mut rest = i.iter();
        let j: Vec<usize> = (0..r)
            .map(|q| {
                if q == a {
                    k + sa
                } else if q == b {
                    k + sb
                } else {
                    *rest.next().unwrap()
                }
            })
            .collect();
        x.at(&j)
    })
}

fn view_rows() -> Vec<OpInfo> {
    vec![
        view_row(
            "reshape",
            vec![
                vc(&[3, 4], |x| x.reshape((2, 6)), |x| reshaped(x, &[2, 6])),
                vc(&[3, 4], |x| x.reshape(12), |x| reshaped(x, &[12])),
                vc(&[2, 3, 2], |x| x.reshape((3, 4)), |x| reshaped(x, &[3, 4])),
                vc(&[3, 4], |x| x.reshape((3, 4)), same),
                vc(&[], |x| x.reshape((1, 1)), |x| reshaped(x, &[1, 1])),
                vc(&[1], |x| x.reshape(()), |x| reshaped(x, &[])),
                vc(&[0, 3], |x| x.reshape((3, 0)), |x| reshaped(x, &[3, 0])),
            ],
        )
        .errors(|| {
            vec![
                err("wrong numel", "reshape", || Tensor::ones((2, 3), DType::F64)?.reshape(5)),
                err("overflowing shape", "reshape", || {
                    Tensor::ones((2, 3), DType::F64)?.reshape(vec![usize::MAX, 2, 3])
                }),
            ]
        }),
        view_row(
            "reshape_infer",
            vec![
                vc(&[3, 4], |x| x.reshape_infer(&[-1, 2]), |x| reshaped(x, &[6, 2])),
                vc(&[2, 3], |x| x.reshape_infer(&[-1]), |x| reshaped(x, &[6])),
                vc(&[0, 3], |x| x.reshape_infer(&[3, -1]), |x| reshaped(x, &[3, 0])),
            ],
        )
        .errors(|| {
            let x = || Tensor::ones((2, 3), DType::F64);
            vec![
                err("two -1", "reshape", move || x()?.reshape_infer(&[-1, -1])),
                err("-2", "reshape", move || x()?.reshape_infer(&[-2, 3])),
                err("no fit", "reshape", move || x()?.reshape_infer(&[-1, 4])),
                err("0 elements with -1", "reshape", || {
                    Tensor::ones((0, 3), DType::F64)?.reshape_infer(&[-1, 0])
                }),
            ]
        }),
        // only splits of dims: a view exists for every layout the runners try
        view_row(
            "view",
            vec![
                vc(&[6], |x| x.view((2, 3)), |x| reshaped(x, &[2, 3])),
                vc(&[3, 4], |x| x.view((3, 2, 2)), |x| reshaped(x, &[3, 2, 2])),
                vc(&[], |x| x.view(1), |x| reshaped(x, &[1])),
                vc(&[0, 3], |x| x.view((0, 3, 1)), |x| reshaped(x, &[0, 3, 1])),
            ],
        )
        .errors(|| {
            vec![
                err("transposed", "view", || Tensor::ones((2, 3), DType::F64)?.t()?.view(6)),
                err("wrong numel", "view", || Tensor::ones((2, 3), DType::F64)?.view(5)),
            ]
        }),
        view_row(
            "permute",
            vec![
                vc(&[2, 3, 4], |x| x.permute(&[2, 0, 1]), |x| permute_ref(x, &[2, 0, 1])),
                vc(&[2, 3, 4], |x| x.permute(&[-1, 0, 1]), |x| permute_ref(x, &[2, 0, 1])),
                vc(&[3, 4], |x| x.permute(&[1, 0]), |x| permute_ref(x, &[1, 0])),
                vc(&[3, 4], |x| x.permute(&[0, 1]), same),
                vc(&[], |x| x.permute(&[]), same),
                vc(&[0, 3], |x| x.permute(&[1, 0]), |x| permute_ref(x, &[1, 0])),
            ],
        )
        .errors(|| {
            let x = || Tensor::ones((2, 3), DType::F64);
            vec![
                err("too few dims", "permute", move || x()?.permute(&[0])),
                err("repeated dim", "permute", move || x()?.permute(&[0, 0])),
                err("dim 2", "permute", move || x()?.permute(&[0, 2])),
            ]
        }),
        view_row(
            "transpose",
            vec![
                vc(&[3, 4], |x| x.transpose(0, 1), |x| permute_ref(x, &[1, 0])),
                vc(&[2, 3, 4], |x| x.transpose(-1, 0), |x| permute_ref(x, &[2, 1, 0])),
                vc(&[3, 4], |x| x.transpose(1, -1), same),
                vc(&[5], |x| x.transpose(0, -1), same),
                vc(&[], |x| x.transpose(0, -1), same),
                vc(&[0, 3], |x| x.transpose(0, 1), |x| permute_ref(x, &[1, 0])),
            ],
        )
        .errors(|| {
            vec![err("dim 2", "transpose", || Tensor::ones((2, 3), DType::F64)?.transpose(0, 2))]
        }),
        view_row(
            "t",
            vec![
                vc(&[3, 4], Tensor::t, |x| permute_ref(x, &[1, 0])),
                vc(&[5], Tensor::t, same),
                vc(&[], Tensor::t, same),
            ],
        )
        .errors(|| vec![err("3-d", "t", || Tensor::ones((2, 3, 4), DType::F64)?.t())]),
        view_row(
            "mT",
            vec![
                vc(&[3, 4], Tensor::mT, |x| permute_ref(x, &[1, 0])),
                vc(&[2, 3, 4], Tensor::mT, |x| permute_ref(x, &[0, 2, 1])),
                vc(&[0, 3], Tensor::mT, |x| permute_ref(x, &[1, 0])),
            ],
        )
        .errors(|| {
            vec![
                err("1-d", "mT", || Tensor::ones(3, DType::F64)?.mT()),
                err("0-d", "mT", || Tensor::scalar(1.0f64).mT()),
            ]
        }),
        view_row(
            "mH",
            vec![
                vc(&[3, 4], Tensor::mH, |x| permute_ref(x, &[1, 0])),
                vc(&[2, 3, 4], Tensor::mH, |x| permute_ref(x, &[0, 2, 1])),
            ],
        )
        .errors(|| vec![err("1-d", "mH", || Tensor::ones(3, DType::F64)?.mH())]),
        OpInfo::new("sum_to", |rng| {
            // sums leading dims and dims where the target has 1 (the adjoint of broadcasting)
            let cases: [(&[usize], &[usize]); 6] = [
                (&[2, 3, 4], &[3, 1]),
                (&[2, 3], &[2, 3]),
                (&[3], &[]),
                (&[2, 3], &[1, 1]),
                (&[0, 3], &[3]),
                (&[2, 0], &[2, 1]),
            ];
            cases
                .iter()
                .map(|&(shape, target)| {
                    let (t, t2) = (target.to_vec(), target.to_vec());
                    s1(format!("{shape:?} to {target:?}"), real(rng, shape), move |x| {
                        x.sum_to(&t.clone().into())
                    })
                    .reference(move |x| {
                        let (n, k) = (x[0].rank(), t2.len());
                        let dims: Vec<isize> = (0..n)
                            .filter(|&i| i < n - k || (t2[i - (n - k)] == 1 && x[0].shape[i] != 1))
                            .map(|i| i as isize)
                            .collect();
                        let mut r = if dims.is_empty() {
                            x[0].clone()
                        } else {
                            x[0].reduce(&dims, true, sum)
                        };
                        r.shape.clone_from(&t2);
                        r
                    })
                })
                .collect()
        })
        .errors(|| {
            vec![
                err("[2, 3] to [4]", "sum_to", || {
                    Tensor::ones((2, 3), DType::F64)?.sum_to(&4.into())
                }),
                err("[3] to [2, 3]", "sum_to", || {
                    Tensor::ones(3, DType::F64)?.sum_to(&(2, 3).into())
                }),
            ]
        }),
        view_row(
            "narrow",
            vec![
                vc(&[4, 5], |x| x.narrow(1, 1, 3), |x| strided_ref(x, 1, 1, 3, 1)),
                vc(&[4, 5], |x| x.narrow(0, 4, 0), |x| strided_ref(x, 0, 4, 0, 1)),
                vc(&[4, 5], |x| x.narrow(-1, 0, 5), same),
                vc(&[2, 3, 4], |x| x.narrow(2, 1, 2), |x| strided_ref(x, 2, 1, 2, 1)),
            ],
        )
        .errors(|| {
            let x = || Tensor::ones((4, 5), DType::F64);
            vec![
                err("past the end", "narrow", move || x()?.narrow(1, 3, 3)),
                err("overflowing range", "narrow", move || x()?.narrow(1, usize::MAX, 2)),
                err("0-d", "narrow", || Tensor::scalar(1.0f64).narrow(0, 0, 1)),
                err("dim 2", "narrow", move || x()?.narrow(2, 0, 1)),
            ]
        }),
        view_row(
            "slice",
            vec![
                vc(&[5, 3], |x| x.slice(0, 0, 5, 2), |x| strided_ref(x, 0, 0, 3, 2)),
                // negative bounds count from the end: columns 2..5
                vc(&[4, 6], |x| x.slice(1, -4, -1, 1), |x| strided_ref(x, 1, 2, 3, 1)),
                // the end is clamped: 1, 4
                vc(&[7], |x| x.slice(0, 1, 100, 3), |x| strided_ref(x, 0, 1, 2, 3)),
                vc(&[4, 3], |x| x.slice(0, 3, 1, 1), |x| strided_ref(x, 0, 3, 0, 1)),
                vc(&[4, 3], |x| x.slice(-1, -100, 100, 2), |x| strided_ref(x, 1, 0, 2, 2)),
                vc(&[2, 3, 4], |x| x.slice(2, 1, 4, 2), |x| strided_ref(x, 2, 1, 2, 2)),
                vc(&[0, 3], |x| x.slice(1, 0, 3, 2), |x| strided_ref(x, 1, 0, 2, 2)),
                // a step larger than the dim: one element
                vc(&[3, 4], |x| x.slice(1, 1, 4, usize::MAX), |x| strided_ref(x, 1, 1, 1, 1)),
            ],
        )
        .errors(|| {
            vec![
                err("step 0", "slice", || Tensor::ones(3, DType::F64)?.slice(0, 0, 3, 0)),
                err("0-d", "slice", || Tensor::scalar(1.0f64).slice(0, 0, 1, 1)),
            ]
        }),
        view_row(
            "select",
            vec![
                vc(&[3, 4], |x| x.select(0, 1), |x| select_ref(x, 0, 1)),
                vc(&[3, 4], |x| x.select(-1, -1), |x| select_ref(x, 1, 3)),
                vc(&[5], |x| x.select(0, 2), |x| select_ref(x, 0, 2)),
                vc(&[2, 3, 2], |x| x.select(1, 0), |x| select_ref(x, 1, 0)),
                vc(&[2, 0], |x| x.select(0, 1), |x| select_ref(x, 0, 1)),
            ],
        )
        .errors(|| {
            let x = || Tensor::ones((3, 4), DType::F64);
            vec![
                err("index 3 of 3", "select", move || x()?.select(0, 3)),
                err("index -5 of 4", "select", move || x()?.select(1, -5)),
                err("empty dim", "select", || Tensor::ones((0, 4), DType::F64)?.select(0, 0)),
                err("0-d", "select", || Tensor::scalar(1.0f64).select(0, 0)),
            ]
        }),
        view_row(
            "expand",
            vec![
                vc(&[3, 1], |x| x.expand(&[3, 4]), |x| expand_ref(x, &[3, 4])),
                vc(&[4], |x| x.expand(&[2, 3, 4]), |x| expand_ref(x, &[2, 3, 4])),
                vc(&[3, 1], |x| x.expand(&[-1, 4]), |x| expand_ref(x, &[3, 4])),
                vc(&[], |x| x.expand(&[2, 3]), |x| expand_ref(x, &[2, 3])),
                vc(&[1], |x| x.expand(&[0]), |x| expand_ref(x, &[0])),
                vc(&[2, 1], |x| x.expand(&[2, 2]), |x| expand_ref(x, &[2, 2])),
            ],
        )
        .errors(|| {
            vec![
                err("3 to 4", "expand", || Tensor::ones(3, DType::F64)?.expand(&[4])),
                err("fewer sizes", "expand", || Tensor::ones((2, 3), DType::F64)?.expand(&[3])),
                err("-1 in a new dim", "expand", || Tensor::ones(3, DType::F64)?.expand(&[-1, 3])),
                err("negative size", "expand", || Tensor::ones(1, DType::F64)?.expand(&[-2])),
                err("overflowing shape", "expand", || {
                    Tensor::ones(1, DType::F64)?.expand(&[isize::MAX, isize::MAX])
                }),
            ]
        }),
        view_row(
            "broadcast_to",
            vec![
                vc(&[3, 1], |x| x.broadcast_to((3, 4)), |x| expand_ref(x, &[3, 4])),
                vc(&[4], |x| x.broadcast_to((2, 3, 4)), |x| expand_ref(x, &[2, 3, 4])),
                vc(&[], |x| x.broadcast_to(0), |x| expand_ref(x, &[0])),
            ],
        )
        .errors(|| vec![err("3 to 4", "expand", || Tensor::ones(3, DType::F64)?.broadcast_to(4))]),
        view_row(
            "squeeze",
            vec![
                vc(&[1, 3, 1, 2], Tensor::squeeze, |x| reshaped(x, &[3, 2])),
                vc(&[], Tensor::squeeze, same),
                vc(&[1], Tensor::squeeze, |x| reshaped(x, &[])),
                vc(&[0, 1], Tensor::squeeze, |x| reshaped(x, &[0])),
                vc(&[3, 4], Tensor::squeeze, same),
            ],
        ),
        view_row(
            "squeeze_dim",
            vec![
                vc(&[1, 3], |x| x.squeeze_dim(0), |x| reshaped(x, &[3])),
                vc(&[1, 3], |x| x.squeeze_dim(1), same),
                vc(&[2, 1, 3], |x| x.squeeze_dim(-2), |x| reshaped(x, &[2, 3])),
                vc(&[], |x| x.squeeze_dim(0), same),
                vc(&[0, 1], |x| x.squeeze_dim(1), |x| reshaped(x, &[0])),
            ],
        )
        .errors(|| {
            vec![err("dim 2", "squeeze", || Tensor::ones((1, 3), DType::F64)?.squeeze_dim(2))]
        }),
        view_row(
            "unsqueeze",
            vec![
                vc(&[3, 4], |x| x.unsqueeze(0), |x| reshaped(x, &[1, 3, 4])),
                vc(&[3, 4], |x| x.unsqueeze(-1), |x| reshaped(x, &[3, 4, 1])),
                vc(&[3, 4], |x| x.unsqueeze(1), |x| reshaped(x, &[3, 1, 4])),
                vc(&[], |x| x.unsqueeze(0), |x| reshaped(x, &[1])),
                vc(&[0, 3], |x| x.unsqueeze(2), |x| reshaped(x, &[0, 3, 1])),
            ],
        )
        .errors(|| {
            vec![err("dim 3 of a matrix", "unsqueeze", || {
                Tensor::ones((3, 4), DType::F64)?.unsqueeze(3)
            })]
        }),
        view_row(
            "flatten",
            vec![
                vc(&[2, 3, 4], |x| x.flatten(0, -1), |x| reshaped(x, &[24])),
                vc(&[2, 3, 4], |x| x.flatten(1, 2), |x| reshaped(x, &[2, 12])),
                vc(&[2, 3, 4], |x| x.flatten(0, 0), same),
                vc(&[], |x| x.flatten(0, -1), |x| reshaped(x, &[1])),
                vc(&[0, 3, 2], |x| x.flatten(1, 2), |x| reshaped(x, &[0, 6])),
            ],
        )
        .errors(|| {
            vec![err("start after end", "flatten", || {
                Tensor::ones((2, 3), DType::F64)?.flatten(1, 0)
            })]
        }),
        view_row(
            "diagonal",
            vec![
                vc(&[3, 4], |x| x.diagonal(0, 0, 1), |x| diagonal_ref(x, 0, 0, 1)),
                vc(&[3, 4], |x| x.diagonal(1, 0, 1), |x| diagonal_ref(x, 1, 0, 1)),
                vc(&[3, 4], |x| x.diagonal(-1, 0, 1), |x| diagonal_ref(x, -1, 0, 1)),
                vc(&[3, 4], |x| x.diagonal(5, 0, 1), |x| diagonal_ref(x, 5, 0, 1)),
                vc(&[3, 4], |x| x.diagonal(-3, 0, 1), |x| diagonal_ref(x, -3, 0, 1)),
                vc(&[2, 3, 4], |x| x.diagonal(0, 1, 2), |x| diagonal_ref(x, 0, 1, 2)),
                vc(&[2, 3, 4], |x| x.diagonal(1, 2, 0), |x| diagonal_ref(x, 1, 2, 0)),
                vc(&[4, 3], |x| x.diagonal(-2, -1, -2), |x| diagonal_ref(x, -2, -1, -2)),
                vc(&[0, 3], |x| x.diagonal(0, 0, 1), |x| diagonal_ref(x, 0, 0, 1)),
            ],
        )
        .errors(|| {
            vec![
                err("1-d", "diagonal", || Tensor::ones(3, DType::F64)?.diagonal(0, 0, 1)),
                err("same dims", "diagonal", || {
                    Tensor::ones((3, 3), DType::F64)?.diagonal(0, 1, -1)
                }),
            ]
        }),
        view_row(
            "contiguous",
            vec![
                vc(&[3, 4], Tensor::contiguous, same),
                vc(&[], Tensor::contiguous, same),
                vc(&[0, 3], Tensor::contiguous, same),
            ],
        ),
        OpInfo::new("to_dtype", |rng| {
            // multiples of 1/16 and steps of 2⁻¹² are exact in f32, so the round trip is
            // the identity at x ± eps and finite differences are exact
            let mut v = Vec::new();
            for shape in [&[3, 4][..], &[], &[0, 2]] {
                let x = Domain::Real.values(rng, shape.iter().product());
                let x = t64(x.iter().map(|a| (a * 16.0).round() / 16.0).collect(), shape);
                v.push(
                    s1(format!("f64 -> f32 -> f64 {shape:?}"), x.clone(), |x| {
                        x.to_dtype(DType::F32)?.to_dtype(x.dtype())
                    })
                    .reference(|x| x[0].map(|a| f64::from(a as f32))),
                );
                v.push(
                    s1(format!("f64 -> f32 {shape:?}"), x, |x| x.to_dtype(DType::F32))
                        .reference(|x| x[0].map(|a| f64::from(a as f32))),
                );
            }
            // values not exact in f32 are rounded to nearest
            let x = t64(vec![0.1, 1.0 / 3.0, 1e-3, -2.7], &[4]);
            v.push(
                s1("rounding", x, |x| x.to_dtype(DType::F32)?.to_dtype(x.dtype()))
                    .reference(|x| x[0].map(|a| f64::from(a as f32)))
                    .grad_order(0),
            );
            v
        })
        .gradcheck_opts(GradcheckOptions { eps: 1.0 / 4096.0, ..GradcheckOptions::default() }),
    ]
}

// ---------------------------------------------------------------------------------------
// comparisons (Bool results, no gradient)

/// Small integers as f64, so that ties (equality) occur.
fn small_ints(rng: &mut Generator, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t64((0..n).map(|_| (rng.next_u64() % 3) as f64 - 1.0).collect(), shape)
}

fn comparison(name: &'static str, f: Binary, r: fn(f64, f64) -> bool) -> OpInfo {
    OpInfo::new(name, move |rng| {
        let mut v: Vec<Sample> = PAIRS
            .iter()
            .map(|&(sa, sb)| {
                let (a, b) = (small_ints(rng, sa), small_ints(rng, sb));
                Sample::new(format!("{sa:?} with {sb:?}"), vec![a, b], move |x| f(&x[0], &x[1]))
                    .reference(move |x| {
                        Nd::broadcast(&[&x[0], &x[1]], |v| f64::from(u8::from(r(v[0], v[1]))))
                    })
            })
            .collect();
        // an I64 operand is promoted
        let a = small_ints(rng, &[2, 3]);
        let b = Tensor::from_vec(vec![-1i64, 0, 1], 3).unwrap();
        v.push(Sample::new("f64 with i64", vec![a, b], move |x| f(&x[0], &x[1])).reference(
            move |x| Nd::broadcast(&[&x[0], &x[1]], |v| f64::from(u8::from(r(v[0], v[1])))),
        ));
        v
    })
    .grad_order(0)
    .errors(move || {
        vec![err("[2, 3] with [4]", "compare", move || {
            f(&Tensor::ones((2, 3), DType::F64)?, &Tensor::ones(4, DType::F64)?)
        })]
    })
}

fn comparison_scalar(
    name: &'static str,
    f: fn(&Tensor, f64) -> Result<Tensor>,
    r: fn(f64, f64) -> bool,
) -> OpInfo {
    OpInfo::new(name, move |rng| {
        SHAPES
            .iter()
            .map(|&shape| {
                s1(format!("{shape:?} with 0"), small_ints(rng, shape), move |x| f(x, 0.0))
                    .reference(move |x| x[0].map(|a| f64::from(u8::from(r(a, 0.0)))))
            })
            .collect()
    })
    .grad_order(0)
}

fn comparison_rows() -> Vec<OpInfo> {
    vec![
        comparison("eq", Tensor::eq, |a, b| a == b),
        comparison("ne", Tensor::ne, |a, b| a != b),
        comparison("lt", Tensor::lt, |a, b| a < b),
        comparison("le", Tensor::le, |a, b| a <= b),
        comparison("gt", Tensor::gt, |a, b| a > b),
        comparison("ge", Tensor::ge, |a, b| a >= b),
        comparison_scalar("eq_scalar", Tensor::eq_scalar, |a, b| a == b),
        comparison_scalar("ne_scalar", Tensor::ne_scalar, |a, b| a != b),
        comparison_scalar("lt_scalar", Tensor::lt_scalar, |a, b| a < b),
        comparison_scalar("le_scalar", Tensor::le_scalar, |a, b| a <= b),
        comparison_scalar("gt_scalar", Tensor::gt_scalar, |a, b| a > b),
        comparison_scalar("ge_scalar", Tensor::ge_scalar, |a, b| a >= b),
        OpInfo::new("isclose", |rng| {
            PAIRS
                .iter()
                .map(|&(sa, sb)| {
                    let (a, b) = (small_ints(rng, sa), small_ints(rng, sb));
                    Sample::new(format!("{sa:?} with {sb:?}"), vec![a, b], |x| {
                        x[0].isclose(&x[1], 0.5, 0.1, false)
                    })
                    .reference(|x| {
                        Nd::broadcast(&[&x[0], &x[1]], |v| {
                            f64::from(u8::from((v[0] - v[1]).abs() <= 0.1 + 0.5 * v[1].abs()))
                        })
                    })
                })
                .collect()
        })
        .grad_order(0)
        .errors(|| {
            vec![err("f64 with f32", "isclose", || {
                Tensor::ones(2, DType::F64)?.isclose(
                    &Tensor::ones(2, DType::F32)?,
                    1e-5,
                    1e-8,
                    false,
                )
            })]
        }),
        OpInfo::new("allclose", |rng| {
            PAIRS
                .iter()
                .map(|&(sa, sb)| {
                    let (a, b) = (small_ints(rng, sa), small_ints(rng, sb));
                    Sample::new(format!("{sa:?} with {sb:?}"), vec![a, b], |x| {
                        Ok(Tensor::scalar(x[0].allclose(&x[1], 0.5, 0.1, false)?))
                    })
                    .reference(|x| {
                        let c = Nd::broadcast(&[&x[0], &x[1]], |v| {
                            f64::from(u8::from((v[0] - v[1]).abs() <= 0.1 + 0.5 * v[1].abs()))
                        });
                        let all = c.data.iter().all(|&v| v == 1.0);
                        Nd { shape: vec![], data: vec![f64::from(u8::from(all))] }
                    })
                })
                .collect()
        })
        .grad_order(0)
        .errors(|| {
            vec![err("negative atol", "isclose", || {
                let a = Tensor::ones(2, DType::F64)?;
                a.allclose(&a, 1e-5, -1.0, false).map(Tensor::scalar)
            })]
        }),
        OpInfo::new("logical_and", |rng| {
            PAIRS
                .iter()
                .map(|&(sa, sb)| {
                    Sample::new(
                        format!("{sa:?} with {sb:?}"),
                        vec![rand_mask(rng, sa), rand_mask(rng, sb)],
                        |x| x[0].logical_and(&x[1]),
                    )
                    .reference(|x| Nd::broadcast(&[&x[0], &x[1]], |v| v[0] * v[1]))
                })
                .collect()
        })
        .grad_order(0)
        .errors(|| {
            vec![err("f64 operand", "logical_and", || {
                Tensor::ones(2, DType::Bool)?.logical_and(&Tensor::ones(2, DType::F64)?)
            })]
        }),
    ]
}

/// The whole table.
pub fn registry() -> Vec<OpInfo> {
    let mut t = unary_rows();
    t.extend(binary_rows());
    t.extend(reduction_rows());
    t.extend(shape_rows());
    t.extend(index_rows());
    t.extend(view_rows());
    t.extend(comparison_rows());
    t
}
