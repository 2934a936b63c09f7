//! An OpInfo registry (after PyTorch's `OpInfo` and JAX's `sample_product`): one row per
//! op, each with seeded samples, a reference computed independently of the library, and
//! error samples; and the generic runners that check every row:
//!
//! - [`check_reference`]: the f64 forward against a plain-Rust reference ([`Nd`]);
//! - [`check_gradients`]: `gradcheck` and `gradgradcheck` (finite differences) in f64;
//! - [`check_forward`]: forward mode (JVPs) against finite differences and against
//!   reverse mode, in f64;
//! - [`check_f32`]: the f32 forward against the f64 forward, within [`tol`]`(F32)`;
//! - [`check_layouts`]: transposed, sliced (strided, offset) and expanded (stride 0)
//!   inputs give the same outputs and gradients as contiguous inputs with the same values;
//! - [`check_errors`]: invalid inputs give an `Err` naming the op, never a panic.
//!
//! Empty tensors and 0-d tensors are ordinary samples of each row, so every runner sees
//! them.

#![allow(dead_code)]

pub mod core_rows;

use std::rc::Rc;

use cotangent::autograd::{
    self, gradcheck, gradcheck_forward, gradgradcheck, GradOptions, GradcheckOptions,
};
use cotangent::{DType, Generator, Result, Tensor};

// ---------------------------------------------------------------------------------------
// tolerances

/// Absolute and relative tolerance: `|a - b| <= atol + rtol |b|`.
#[derive(Debug, Clone, Copy)]
pub struct Tol {
    pub atol: f64,
    pub rtol: f64,
}

/// The one tolerance helper of the suite: how close a result computed in `dtype` must be
/// to its reference. F64 results are compared with references computed in f64 by other
/// means (a different summation order, a textbook formula), F32 results with the f64
/// forward of the same op.
pub fn tol(dtype: DType) -> Tol {
    match dtype {
        DType::F64 | DType::C128 => Tol { atol: 1e-10, rtol: 1e-10 },
        DType::F32 | DType::C64 => Tol { atol: 1e-5, rtol: 1e-5 },
        DType::Bf16 | DType::F16 => Tol { atol: 1e-2, rtol: 1e-2 },
        _ => Tol { atol: 0.0, rtol: 0.0 },
    }
}

/// True if `a` is within `t` of the reference `b` (NaN matches NaN, infinities match
/// themselves).
pub fn close(a: f64, b: f64, t: Tol) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= t.atol + t.rtol * b.abs()
}

/// `None` if the shapes agree and every element is close, else a description of the
/// first difference.
pub fn compare(
    got: &[usize],
    got_v: &[f64],
    want: &[usize],
    want_v: &[f64],
    t: Tol,
) -> Option<String> {
    if got != want {
        return Some(format!("shape {got:?}, expected {want:?}"));
    }
    if got_v.len() != want_v.len() {
        return Some(format!("{} elements, expected {}", got_v.len(), want_v.len()));
    }
    for (i, (&a, &b)) in got_v.iter().zip(want_v).enumerate() {
        if !close(a, b, t) {
            return Some(format!("element {i}: {a:e}, expected {b:e} (shape {got:?})"));
        }
    }
    None
}

/// Asserts that a tensor has the given shape and values (within [`tol`] of its dtype).
#[track_caller]
pub fn assert_values(t: &Tensor, shape: &[usize], values: &[f64]) {
    if let Some(d) = compare(t.dims(), &t.to_vec_f64(), shape, values, tol(t.dtype())) {
        panic!("{d}");
    }
}

// ---------------------------------------------------------------------------------------
// the reference: a plain row-major array of f64, independent of the library's layouts

/// A row-major n-d array of `f64`, used to compute references without the library.
#[derive(Debug, Clone, PartialEq)]
pub struct Nd {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

/// Row-major iteration over the multi-indices of `shape`.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        f(&idx);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// A PyTorch dim (negative counts from the end) resolved against `rank` (0-d tensors take
/// the dims 0 and -1).
pub fn wrap(dim: isize, rank: usize) -> usize {
    let r = rank.max(1) as isize;
    assert!(dim >= -r && dim < r, "reference: dim {dim} for rank {rank}");
    if dim < 0 {
        (dim + r) as usize
    } else {
        dim as usize
    }
}

impl Nd {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Nd {
        assert_eq!(shape.iter().product::<usize>(), data.len(), "Nd::new");
        Nd { shape: shape.to_vec(), data }
    }

    pub fn of(t: &Tensor) -> Nd {
        Nd { shape: t.dims().to_vec(), data: t.to_vec_f64() }
    }

    pub fn from_fn(shape: &[usize], mut f: impl FnMut(&[usize]) -> f64) -> Nd {
        let mut data = Vec::with_capacity(shape.iter().product());
        for_each_index(shape, |i| data.push(f(i)));
        Nd { shape: shape.to_vec(), data }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn at(&self, idx: &[usize]) -> f64 {
        self.data[self.offset(idx)]
    }

    /// The row-major position of `idx`.
    pub fn offset(&self, idx: &[usize]) -> usize {
        assert_eq!(idx.len(), self.shape.len(), "Nd::offset rank");
        let mut o = 0;
        for (&i, &n) in idx.iter().zip(&self.shape) {
            assert!(i < n, "Nd::offset index {idx:?} in {:?}", self.shape);
            o = o * n + i;
        }
        o
    }

    /// The element as an index (for I64 index inputs).
    pub fn ix(&self, idx: &[usize]) -> usize {
        self.at(idx) as usize
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Nd {
        Nd { shape: self.shape.clone(), data: self.data.iter().map(|&x| f(x)).collect() }
    }

    /// `f` over the elements reduced by `dims` (all for an empty list, none for a 0-d
    /// array), keeping the reduced dims with size 1 if `keepdim`.
    pub fn reduce(&self, dims: &[isize], keepdim: bool, f: impl Fn(&[f64]) -> f64) -> Nd {
        let r = self.rank();
        let red: Vec<usize> = if r == 0 {
            vec![]
        } else if dims.is_empty() {
            (0..r).collect()
        } else {
            dims.iter().map(|&d| wrap(d, r)).collect()
        };
        let keep: Vec<usize> =
            (0..r).map(|i| if red.contains(&i) { 1 } else { self.shape[i] }).collect();
        let red_shape: Vec<usize> = red.iter().map(|&d| self.shape[d]).collect();
        let mut out = Nd::from_fn(&keep, |k| {
            let mut vals = Vec::new();
            let mut full = k.to_vec();
            for_each_index(&red_shape, |ri| {
                for (j, &d) in red.iter().enumerate() {
                    full[d] = ri[j];
                }
                vals.push(self.at(&full));
            });
            f(&vals)
        });
        if !keepdim {
            out.shape = (0..r).filter(|i| !red.contains(i)).map(|i| self.shape[i]).collect();
        }
        out
    }

    /// `f` elementwise over inputs broadcast to a common shape (NumPy rules).
    pub fn broadcast(inputs: &[&Nd], f: impl Fn(&[f64]) -> f64) -> Nd {
        let rank = inputs.iter().map(|a| a.rank()).max().unwrap_or(0);
        let mut shape = vec![1usize; rank];
        for a in inputs {
            for (i, &n) in a.shape.iter().enumerate() {
                let j = rank - a.rank() + i;
                if shape[j] == 1 {
                    shape[j] = n;
                } else {
                    assert!(n == 1 || n == shape[j], "reference: shapes do not broadcast");
                }
            }
        }
        Nd::from_fn(&shape, |idx| {
            let vals: Vec<f64> = inputs
                .iter()
                .map(|a| {
                    let off = rank - a.rank();
                    let sub: Vec<usize> = a
                        .shape
                        .iter()
                        .enumerate()
                        .map(|(i, &n)| if n == 1 { 0 } else { idx[off + i] })
                        .collect();
                    a.at(&sub)
                })
                .collect();
            f(&vals)
        })
    }
}

// ---------------------------------------------------------------------------------------
// seeded inputs

/// Values of a sample's inputs.
#[derive(Debug, Clone, Copy)]
pub enum Domain {
    /// Standard normal.
    Real,
    /// Uniform in `[lo, hi)`.
    Uniform(f64, f64),
    /// Uniform magnitude in `[0.5, 2)`, random sign: away from 0 (kinks, poles).
    AwayFromZero,
}

impl Domain {
    pub fn values(self, rng: &mut Generator, n: usize) -> Vec<f64> {
        match self {
            Domain::Real => rng.normal_vec(n),
            Domain::Uniform(lo, hi) => {
                rng.uniform_vec(n).iter().map(|u| lo + (hi - lo) * u).collect()
            }
            Domain::AwayFromZero => (0..n)
                .map(|_| {
                    let m = 0.5 + 1.5 * rng.uniform();
                    if rng.uniform() < 0.5 {
                        -m
                    } else {
                        m
                    }
                })
                .collect(),
        }
    }

    pub fn tensor(self, rng: &mut Generator, shape: &[usize]) -> Tensor {
        let n = shape.iter().product();
        t64(self.values(rng, n), shape)
    }
}

/// An F64 tensor (panics on a wrong length: a bug in the test table).
pub fn t64(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape.to_vec()).expect("t64")
}

/// An I64 index tensor.
pub fn idx(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec()).expect("idx")
}

/// A Bool tensor.
pub fn mask(v: &[bool], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape.to_vec()).expect("mask")
}

/// A seed derived from a name, so every row has its own reproducible numbers.
pub fn seed_of(name: &str) -> u64 {
    name.bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

// ---------------------------------------------------------------------------------------
// the registry

/// The samples of a row, from a seeded generator.
pub type Samples = Box<dyn Fn(&mut Generator) -> Vec<Sample>>;
/// The error samples of a row.
pub type ErrorSamples = Box<dyn Fn() -> Vec<Sample>>;
/// The forward of a sample: inputs to outputs.
pub type Fwd = Rc<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>>;
/// The reference of a sample, computed from the inputs' values without the library.
pub type Reference = Rc<dyn Fn(&[Nd]) -> Vec<Nd>>;

/// One application of an op: its inputs (F64 tensors are differentiated; I64 and Bool
/// inputs are indices and conditions), the call, and its reference.
#[derive(Clone)]
pub struct Sample {
    pub desc: String,
    pub inputs: Vec<Tensor>,
    pub f: Fwd,
    pub reference: Option<Reference>,
    /// Highest derivative order valid at this sample (finite differences are not valid at
    /// kinks and ties): 0, 1 or 2.
    pub grad_order: u8,
    /// For error samples: the name the error message must contain.
    pub expect_err: Option<&'static str>,
}

impl Sample {
    /// A sample of a one-output op.
    pub fn new(
        desc: impl Into<String>,
        inputs: Vec<Tensor>,
        f: impl Fn(&[Tensor]) -> Result<Tensor> + 'static,
    ) -> Sample {
        Sample::multi(desc, inputs, move |xs| Ok(vec![f(xs)?]))
    }

    /// A sample of an op with several outputs.
    pub fn multi(
        desc: impl Into<String>,
        inputs: Vec<Tensor>,
        f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'static,
    ) -> Sample {
        Sample {
            desc: desc.into(),
            inputs,
            f: Rc::new(f),
            reference: None,
            grad_order: 2,
            expect_err: None,
        }
    }

    /// An invalid call: it must return an `Err` whose message contains `op`.
    pub fn error(
        desc: impl Into<String>,
        inputs: Vec<Tensor>,
        op: &'static str,
        f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'static,
    ) -> Sample {
        let mut s = Sample::multi(desc, inputs, f);
        s.expect_err = Some(op);
        s
    }

    /// The reference of a one-output op.
    pub fn reference(mut self, r: impl Fn(&[Nd]) -> Nd + 'static) -> Sample {
        self.reference = Some(Rc::new(move |x| vec![r(x)]));
        self
    }

    /// The reference of an op with several outputs.
    pub fn reference_multi(mut self, r: impl Fn(&[Nd]) -> Vec<Nd> + 'static) -> Sample {
        self.reference = Some(Rc::new(r));
        self
    }

    /// Caps the derivative order checked by finite differences at this sample.
    pub fn grad_order(mut self, order: u8) -> Sample {
        self.grad_order = order;
        self
    }

    fn call(&self, xs: &[Tensor]) -> Result<Vec<Tensor>> {
        (self.f)(xs)
    }
}

/// Which runners apply to a row.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    /// Highest order checked by finite differences (0: not differentiable).
    pub grad_order: u8,
    /// Run the f32 forward check.
    pub f32: bool,
    /// Run the layouts check.
    pub layouts: bool,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { grad_order: 2, f32: true, layouts: true }
    }
}

/// One row of the table.
pub struct OpInfo {
    /// The method's name (`Tensor::<name>`).
    pub name: &'static str,
    pub checks: Checks,
    pub gradcheck: GradcheckOptions,
    pub samples: Samples,
    pub error_samples: ErrorSamples,
}

impl OpInfo {
    pub fn new(
        name: &'static str,
        samples: impl Fn(&mut Generator) -> Vec<Sample> + 'static,
    ) -> OpInfo {
        OpInfo {
            name,
            checks: Checks::default(),
            gradcheck: GradcheckOptions::default(),
            samples: Box::new(samples),
            error_samples: Box::new(Vec::new),
        }
    }

    pub fn errors(mut self, e: impl Fn() -> Vec<Sample> + 'static) -> OpInfo {
        self.error_samples = Box::new(e);
        self
    }

    pub fn grad_order(mut self, order: u8) -> OpInfo {
        self.checks.grad_order = order;
        self
    }

    pub fn no_f32(mut self) -> OpInfo {
        self.checks.f32 = false;
        self
    }

    pub fn gradcheck_opts(mut self, o: GradcheckOptions) -> OpInfo {
        self.gradcheck = o;
        self
    }

    /// The samples, with their seeded inputs.
    pub fn samples(&self) -> Vec<Sample> {
        (self.samples)(&mut Generator::new(seed_of(self.name)))
    }
}

// ---------------------------------------------------------------------------------------
// runners: each returns the failures it found, as lines naming the row and the sample

fn fail(op: &OpInfo, s: &Sample, what: &str, detail: impl std::fmt::Display) -> String {
    format!("{} [{}] {what}: {detail}", op.name, s.desc)
}

/// Inputs of a sample with every F64 input marked as requiring grad.
pub fn with_grad(inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    inputs
        .iter()
        .map(|t| {
            if t.dtype() == DType::F64 {
                t.detach().with_requires_grad(true)
            } else {
                Ok(t.clone())
            }
        })
        .collect()
}

/// The f64 forward against the sample's reference (values and shapes).
pub fn check_reference(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    for s in op.samples() {
        let Some(r) = &s.reference else { continue };
        let got = match s.call(&s.inputs) {
            Ok(v) => v,
            Err(e) => {
                out.push(fail(op, &s, "forward failed", e));
                continue;
            }
        };
        let want = r(&s.inputs.iter().map(Nd::of).collect::<Vec<_>>());
        if got.len() != want.len() {
            out.push(fail(
                op,
                &s,
                "reference",
                format!("{} outputs, expected {}", got.len(), want.len()),
            ));
            continue;
        }
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            if let Some(d) = compare(g.dims(), &g.to_vec_f64(), &w.shape, &w.data, tol(DType::F64))
            {
                out.push(fail(op, &s, &format!("output {k} vs reference"), d));
            }
        }
    }
    out
}

/// First and second derivatives against central finite differences, in f64.
pub fn check_gradients(op: &OpInfo, order: u8) -> Vec<String> {
    let mut out = Vec::new();
    if op.checks.grad_order < order {
        return out;
    }
    for s in op.samples() {
        if s.grad_order < order || !s.inputs.iter().any(|t| t.dtype() == DType::F64) {
            continue;
        }
        let inputs = match with_grad(&s.inputs) {
            Ok(v) => v,
            Err(e) => {
                out.push(fail(op, &s, "requires_grad", e));
                continue;
            }
        };
        let f = |xs: &[Tensor]| s.call(xs);
        let r = if order == 1 {
            gradcheck(f, &inputs, &op.gradcheck)
        } else {
            gradgradcheck(f, &inputs, &op.gradcheck)
        };
        let what = if order == 1 { "gradcheck" } else { "gradgradcheck" };
        match r {
            Ok(rep) if rep.passed => {}
            Ok(rep) => out.push(fail(op, &s, what, rep)),
            Err(e) => out.push(fail(op, &s, what, format!("error: {e}"))),
        }
    }
    out
}

/// Forward mode: each sample's JVPs against central finite differences and against its
/// VJPs (`gradcheck_forward`), in f64, for every row whose samples are differentiated.
pub fn check_forward(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    if op.checks.grad_order < 1 {
        return out;
    }
    for s in op.samples() {
        if s.grad_order < 1 || !s.inputs.iter().any(|t| t.dtype() == DType::F64) {
            continue;
        }
        let inputs = match with_grad(&s.inputs) {
            Ok(v) => v,
            Err(e) => {
                out.push(fail(op, &s, "requires_grad", e));
                continue;
            }
        };
        match gradcheck_forward(|xs: &[Tensor]| s.call(xs), &inputs, &op.gradcheck) {
            Ok(rep) if rep.passed => {}
            Ok(rep) => out.push(fail(op, &s, "gradcheck_forward", rep)),
            Err(e) => out.push(fail(op, &s, "gradcheck_forward", format!("error: {e}"))),
        }
    }
    out
}

/// The forward in f32 against the forward in f64 (F64 inputs rounded to F32), and the
/// gradients in f32 against the gradients in f64 for the same cotangents.
pub fn check_f32(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    if !op.checks.f32 {
        return out;
    }
    for s in op.samples() {
        let r = (|| -> Result<Option<String>> {
            let seed = seed_of(&s.desc);
            let x64 = with_grad(&s.inputs)?;
            let (want, gwant) = outputs_and_grads(&s, &x64, seed)?;
            let x32: Vec<Tensor> = s
                .inputs
                .iter()
                .map(|t| {
                    if t.dtype() == DType::F64 {
                        t.to_dtype(DType::F32)?.with_requires_grad(true)
                    } else {
                        Ok(t.clone())
                    }
                })
                .collect::<Result<_>>()?;
            let (got, ggot) = outputs_and_grads(&s, &x32, seed)?;
            if got.len() != want.len() {
                return Ok(Some(format!("{} outputs, expected {}", got.len(), want.len())));
            }
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                if w.dtype() == DType::F64 && g.dtype() != DType::F32 {
                    return Ok(Some(format!("output {k} has dtype {}, expected f32", g.dtype())));
                }
                if let Some(d) =
                    compare(g.dims(), &g.to_vec_f64(), w.dims(), &w.to_vec_f64(), tol(g.dtype()))
                {
                    return Ok(Some(format!("output {k}: {d}")));
                }
            }
            if s.grad_order == 0 {
                return Ok(None);
            }
            if ggot.len() != gwant.len() {
                return Ok(Some(format!("{} gradients, expected {}", ggot.len(), gwant.len())));
            }
            for (k, (g, w)) in ggot.iter().zip(&gwant).enumerate() {
                match (g, w) {
                    (None, None) => {}
                    (Some(g), Some(w)) => {
                        if g.dtype() != DType::F32 {
                            return Ok(Some(format!("gradient {k} has dtype {}", g.dtype())));
                        }
                        if let Some(d) = compare(
                            g.dims(),
                            &g.to_vec_f64(),
                            w.dims(),
                            &w.to_vec_f64(),
                            tol(DType::F32),
                        ) {
                            return Ok(Some(format!("gradient {k}: {d}")));
                        }
                    }
                    _ => return Ok(Some(format!("gradient {k}: present in one dtype only"))),
                }
            }
            Ok(None)
        })();
        match r {
            Ok(None) => {}
            Ok(Some(d)) => out.push(fail(op, &s, "f32 vs f64", d)),
            Err(e) => out.push(fail(op, &s, "f32 forward failed", e)),
        }
    }
    out
}

/// How an input is laid out in memory for [`check_layouts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// A permuted (all dims reversed) view of a buffer holding the transpose.
    Transposed,
    /// Every other element of a buffer interleaving garbage (NaN, out-of-range indices),
    /// starting at offset 1: a strided view with an offset.
    Sliced,
    /// The first slice along the first dim of size > 1, expanded with stride 0 (the values
    /// change to be constant along that dim; the contiguous twin gets the same values).
    Expanded,
}

/// A tensor of `dtype` from f64 values.
fn of_dtype(v: Vec<f64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::from_vec(v, shape.to_vec())?.to_dtype(dtype)
}

/// `t`'s values (possibly changed, for `Expanded`) as a non-contiguous view and as a
/// contiguous leaf. F64 views come from leaves that require grad; the view itself is the
/// tensor gradients are taken with respect to.
fn layout_pair(t: &Tensor, v: Variant) -> Result<(Tensor, Tensor)> {
    let dt = t.dtype();
    let grad = dt == DType::F64;
    let leaf = |x: Tensor| if grad { x.with_requires_grad(true) } else { Ok(x) };
    let shape = t.dims().to_vec();
    let view = match v {
        Variant::Transposed => {
            let rev: Vec<isize> = (0..t.rank() as isize).rev().collect();
            let tt = t.permute(&rev)?.contiguous()?.detach();
            let base = leaf(of_dtype(tt.to_vec_f64(), tt.dims(), dt)?)?;
            base.permute(&rev)?
        }
        Variant::Sliced => {
            let junk = match dt {
                DType::I64 => |_: f64| -1_000_000.0,
                DType::Bool => |x: f64| 1.0 - x,
                _ => |_: f64| f64::NAN,
            };
            let mut buf = Vec::with_capacity(2 * t.numel());
            for x in t.to_vec_f64() {
                buf.push(junk(x));
                buf.push(x);
            }
            let mut bshape = shape.clone();
            bshape.push(2);
            let base = leaf(of_dtype(buf, &bshape, dt)?)?;
            base.select(-1, 1)?
        }
        Variant::Expanded => match shape.iter().position(|&n| n > 1) {
            Some(d) => {
                let first = t.narrow(d as isize, 0, 1)?.contiguous()?.detach();
                let base = leaf(of_dtype(first.to_vec_f64(), first.dims(), dt)?)?;
                base.broadcast_to(shape.clone())?
            }
            None => leaf(t.detach())?,
        },
    };
    let contiguous = leaf(of_dtype(view.to_vec_f64(), &shape, dt)?)?;
    Ok((view, contiguous))
}

/// Outputs and gradients (with seeded cotangents) of `s` at `xs`, with respect to the
/// entries of `xs` that require grad.
fn outputs_and_grads(
    s: &Sample,
    xs: &[Tensor],
    seed: u64,
) -> Result<(Vec<Tensor>, Vec<Option<Tensor>>)> {
    let ys = s.call(xs)?;
    let targets: Vec<&Tensor> = xs.iter().filter(|t| t.requires_grad()).collect();
    let mut rng = Generator::new(seed);
    let mut outs = Vec::new();
    let mut cots = Vec::new();
    for y in &ys {
        let c =
            Tensor::from_vec(rng.normal_vec(y.numel()), y.shape().clone())?.to_dtype(y.dtype())?;
        if y.requires_grad() {
            outs.push(y);
            cots.push(c);
        }
    }
    if outs.is_empty() || targets.is_empty() {
        return Ok((ys.clone(), vec![]));
    }
    let cref: Vec<Option<&Tensor>> = cots.iter().map(Some).collect();
    let g = autograd::grad(
        &outs,
        &cref,
        &targets,
        GradOptions { create_graph: false, allow_unused: true },
    )?;
    Ok((ys.clone(), g))
}

/// Non-contiguous inputs against contiguous inputs with the same values: outputs and
/// gradients must agree.
pub fn check_layouts(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    if !op.checks.layouts {
        return out;
    }
    for s in op.samples() {
        for v in [Variant::Transposed, Variant::Sliced, Variant::Expanded] {
            let r = (|| -> Result<Option<String>> {
                let pairs: Vec<(Tensor, Tensor)> =
                    s.inputs.iter().map(|t| layout_pair(t, v)).collect::<Result<_>>()?;
                let views: Vec<Tensor> = pairs.iter().map(|p| p.0.clone()).collect();
                let contig: Vec<Tensor> = pairs.iter().map(|p| p.1.clone()).collect();
                let seed = seed_of(&s.desc);
                let (yv, gv) = outputs_and_grads(&s, &views, seed)?;
                let (yc, gc) = outputs_and_grads(&s, &contig, seed)?;
                if yv.len() != yc.len() {
                    return Ok(Some(format!("{} outputs vs {}", yv.len(), yc.len())));
                }
                for (k, (a, b)) in yv.iter().zip(&yc).enumerate() {
                    if a.dtype() != b.dtype() {
                        return Ok(Some(format!(
                            "output {k}: dtype {} vs {}",
                            a.dtype(),
                            b.dtype()
                        )));
                    }
                    if let Some(d) = compare(
                        a.dims(),
                        &a.to_vec_f64(),
                        b.dims(),
                        &b.to_vec_f64(),
                        tol(DType::F64),
                    ) {
                        return Ok(Some(format!("output {k}: {d}")));
                    }
                }
                if gv.len() != gc.len() {
                    return Ok(Some(format!("{} gradients vs {}", gv.len(), gc.len())));
                }
                for (k, (a, b)) in gv.iter().zip(&gc).enumerate() {
                    match (a, b) {
                        (None, None) => {}
                        (Some(a), Some(b)) => {
                            if let Some(d) = compare(
                                a.dims(),
                                &a.to_vec_f64(),
                                b.dims(),
                                &b.to_vec_f64(),
                                tol(DType::F64),
                            ) {
                                return Ok(Some(format!("gradient {k}: {d}")));
                            }
                        }
                        _ => return Ok(Some(format!("gradient {k}: present in one layout only"))),
                    }
                }
                Ok(None)
            })();
            match r {
                Ok(None) => {}
                Ok(Some(d)) => out.push(fail(op, &s, &format!("{v:?} layout"), d)),
                Err(e) => out.push(fail(op, &s, &format!("{v:?} layout failed"), e)),
            }
        }
    }
    out
}

/// `x` (F64, with its history) as a differentiable non-contiguous view with the same
/// values: transposed through a copy, or every other element of a stack with NaN.
fn strided_view(x: &Tensor, v: Variant) -> Result<Tensor> {
    match v {
        Variant::Transposed => {
            let rev: Vec<isize> = (0..x.rank() as isize).rev().collect();
            x.permute(&rev)?.contiguous()?.permute(&rev)
        }
        Variant::Sliced | Variant::Expanded => {
            Tensor::stack(&[&x.full_like(f64::NAN)?, x], -1)?.select(-1, 1)
        }
    }
}

/// gradcheck and gradgradcheck of the op applied to non-contiguous views of its F64
/// inputs, built inside the checked function, so that both the first and the second
/// backward pass meet strided cotangents and inputs.
pub fn check_gradients_noncontiguous(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    if !op.checks.layouts || op.checks.grad_order < 1 {
        return out;
    }
    for s in op.samples() {
        if s.grad_order < 1 || !s.inputs.iter().any(|t| t.dtype() == DType::F64) {
            continue;
        }
        let inputs = match with_grad(&s.inputs) {
            Ok(v) => v,
            Err(e) => {
                out.push(fail(op, &s, "requires_grad", e));
                continue;
            }
        };
        for v in [Variant::Transposed, Variant::Sliced] {
            let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
                let views: Vec<Tensor> =
                    xs.iter()
                        .map(|x| {
                            if x.dtype() == DType::F64 {
                                strided_view(x, v)
                            } else {
                                Ok(x.clone())
                            }
                        })
                        .collect::<Result<_>>()?;
                s.call(&views)
            };
            let order = s.grad_order.min(op.checks.grad_order);
            for (k, what) in [(1, "gradcheck"), (2, "gradgradcheck")] {
                if order < k {
                    continue;
                }
                let r = if k == 1 {
                    gradcheck(f, &inputs, &op.gradcheck)
                } else {
                    gradgradcheck(f, &inputs, &op.gradcheck)
                };
                match r {
                    Ok(rep) if rep.passed => {}
                    Ok(rep) => out.push(fail(op, &s, &format!("{what} of {v:?} inputs"), rep)),
                    Err(e) => out.push(fail(
                        op,
                        &s,
                        &format!("{what} of {v:?} inputs"),
                        format!("error: {e}"),
                    )),
                }
            }
        }
    }
    out
}

/// Error samples: an `Err` whose message names the op (a panic fails the test run).
pub fn check_errors(op: &OpInfo) -> Vec<String> {
    let mut out = Vec::new();
    for s in (op.error_samples)() {
        let name = s.expect_err.unwrap_or(op.name);
        match s.call(&s.inputs) {
            Ok(ys) => out.push(fail(
                op,
                &s,
                "expected an error",
                format!(
                    "got {} outputs, shapes {:?}",
                    ys.len(),
                    ys.iter().map(|y| y.dims().to_vec()).collect::<Vec<_>>()
                ),
            )),
            Err(e) => {
                let msg = e.to_string();
                if !msg.contains(name) {
                    out.push(fail(
                        op,
                        &s,
                        "error message",
                        format!("{msg:?} does not name `{name}`"),
                    ));
                }
            }
        }
    }
    out
}

/// Runs `runner` over every row and panics with every failure, one per line.
#[track_caller]
pub fn run_all(table: &[OpInfo], runner: impl Fn(&OpInfo) -> Vec<String>) {
    let failures: Vec<String> = table.iter().flat_map(runner).collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
