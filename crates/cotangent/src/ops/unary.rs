//! Elementwise functions of one tensor. Each line of the table below is one op: its
//! PyTorch name, its scalar forward and its VJP (written in tensor ops, so it can be
//! differentiated again).
//!
//! Integer and bool inputs of the transcendental functions are promoted to `F32`, as in
//! PyTorch; `neg`, `abs`, `sign`, `square` and `relu` need a floating input.
//!
//! The result is contiguous, except for a dense permuted input (a transpose, a
//! column-major matrix): then it keeps the input's order (its strides), as PyTorch does,
//! and the kernel runs over the elements as one flat block.

use crate::autograd::forward::{elementwise_jvp, JvpCtx, RuleCx};
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::{Storage, UnaryKernel};
use crate::complex::ComplexFloat;
use crate::dtype::{DType, Float};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;

/// Runs a unary kernel and records its op. `promote`: integer inputs become `F32` first.
fn apply<K: UnaryKernel + Op + std::fmt::Debug>(
    x: &Tensor,
    k: K,
    promote: bool,
    save_out: bool,
) -> Result<Tensor> {
    apply_with(x, k, promote, save_out, K::COMPLEX, |s, l| s.unary(l, k))
}

/// [`apply`] with the kernel run by `run` (on a floating buffer, or a complex one if
/// `complex`).
fn apply_with<K: Op + std::fmt::Debug + Copy>(
    x: &Tensor,
    k: K,
    promote: bool,
    save_out: bool,
    complex: bool,
    run: impl Fn(&Storage, &Layout) -> Result<Storage>,
) -> Result<Tensor> {
    if !(x.dtype().is_floating_point() || complex && x.dtype().is_complex()) {
        if promote && !x.dtype().is_complex() {
            return apply_with(&x.to_dtype(DType::F32)?, k, promote, save_out, complex, run);
        }
        return Err(Error::UnsupportedDType { op: Op::name(&k), dtype: x.dtype() });
    }
    // a dense permuted input (a transpose) is mapped as one flat block and keeps its order
    let out = match x.layout().dense_flat() {
        Some((flat, kept)) => Tensor::from_storage_layout(run(x.storage(), &flat)?, kept),
        None => Tensor::from_storage(run(x.storage(), x.layout())?, x.shape().clone()),
    };
    record1(k, &[x], out, save_out)
}

macro_rules! unary_ops {
    ($(
        $(#[$doc:meta])*
        $fname:ident, $S:ident, $torch:literal, promote: $promote:expr, save_out: $save:expr,
        fwd: |$x:ident| $fwd:expr,
        $(complex: |$z:ident| $cfwd:expr,)?
        $(jvp_conj: $jc:literal,)?
        vjp: |$cx:ident, $g:ident| $vjp:expr;
    )*) => {$(
        #[derive(Debug, Clone, Copy)]
        struct $S;

        impl UnaryKernel for $S {
            const NAME: &'static str = $torch;
            #[inline(always)]
            fn f<T: Float>(self, $x: T) -> T {
                $fwd
            }
            $(
                const COMPLEX: bool = true;
                #[inline(always)]
                fn c<C: ComplexFloat>(self, $z: C) -> C {
                    $cfwd
                }
            )?
        }

        impl Op for $S {
            fn name(&self) -> &'static str {
                $torch
            }
            fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
                let Some(g) = &g[0] else { return Ok(vec![None]) };
                Ok(vec![Some(self.rule(cx, g)?)])
            }
            fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
                let conj = true $(&& $jc)?;
                elementwise_jvp(cx, t, conj, |c, g| Ok(vec![Some(self.rule(c, g)?)]))
            }
        }

        impl $S {
            /// The derivative rule, `g ↦ g conj(dy/dx)` (see [`elementwise_jvp`]).
            #[allow(unused_variables)]
            fn rule<C: RuleCx>(&self, $cx: &C, $g: &Tensor) -> Result<Tensor> {
                Ok($vjp)
            }
        }

        impl Tensor {
            $(#[$doc])*
            pub fn $fname(&self) -> Result<Tensor> {
                apply(self, $S, $promote, $save)
            }
        }
    )*};
}

unary_ops! {
    /// `-x` (`torch.neg`).
    neg, Neg, "neg", promote: false, save_out: false,
    fwd: |x| -x,
    complex: |z| -z,
    vjp: |cx, g| g.neg()?;

    /// `sign(x)`: -1, 0 or 1, and 0 for NaN (`torch.sign`). Gradient zero.
    sign, Sign, "sign", promote: false, save_out: false,
    fwd: |x| x.sign(),
    vjp: |cx, g| g.zeros_like()?;

    /// `e^x` (`torch.exp`). d/dx = e^x, from the saved output.
    exp, Exp, "exp", promote: true, save_out: true,
    fwd: |x| x.exp(),
    complex: |z| z.exp(),
    vjp: |cx, g| g.mul(&cx.output(0)?.conj()?)?;

    /// `e^x - 1` (`torch.expm1`), accurate near 0. d/dx = y + 1.
    expm1, Expm1, "expm1", promote: true, save_out: true,
    fwd: |x| x.exp_m1(),
    vjp: |cx, g| g.mul(&cx.output(0)?.add_scalar(1.0)?)?;

    /// Natural logarithm (`torch.log`). d/dx = 1/x.
    log, Log, "log", promote: true, save_out: false,
    fwd: |x| x.ln(),
    complex: |z| z.ln(),
    vjp: |cx, g| g.div(&cx.input(0).conj()?)?;

    /// `ln(1 + x)` (`torch.log1p`), accurate near 0. d/dx = 1/(1 + x).
    log1p, Log1p, "log1p", promote: true, save_out: false,
    fwd: |x| x.ln_1p(),
    vjp: |cx, g| g.div(&cx.input(0).add_scalar(1.0)?)?;

    /// `√x` (`torch.sqrt`). d/dx = 1/(2y): infinite at 0, as in PyTorch.
    sqrt, Sqrt, "sqrt", promote: true, save_out: true,
    fwd: |x| x.sqrt(),
    complex: |z| z.sqrt(),
    vjp: |cx, g| g.div(&cx.output(0)?.conj()?.mul_scalar(2.0)?)?;

    /// `1/√x` (`torch.rsqrt`). d/dx = -y³/2.
    rsqrt, Rsqrt, "rsqrt", promote: true, save_out: true,
    fwd: |x| T::ONE / x.sqrt(),
    complex: |z| C::new(C::Real::ONE, C::Real::ZERO).div(z.sqrt()),
    vjp: |cx, g| g.mul(&cx.output(0)?.conj()?.pow_scalar(3.0)?.mul_scalar(-0.5)?)?;

    /// `x²` (`torch.square`). d/dx = 2x.
    square, Square, "square", promote: false, save_out: false,
    fwd: |x| x * x,
    complex: |z| z.mul(z),
    // (first order: g (x + x) in one pass, the same bits as g (2 x); recorded, or
    // complex: tensor ops)
    vjp: |cx, g| if cx.create_graph() || g.dtype().is_complex() {
        g.mul(&cx.input(0).conj()?.mul_scalar(2.0)?)?
    } else {
        crate::ops::binary::unrecorded(SquareGrad, g, cx.input(0))?
    };

    /// `1/x` (`torch.reciprocal`). d/dx = -y².
    reciprocal, Reciprocal, "reciprocal", promote: true, save_out: true,
    fwd: |x| T::ONE / x,
    complex: |z| C::new(C::Real::ONE, C::Real::ZERO).div(z),
    vjp: |cx, g| { let y = cx.output(0)?.conj()?; g.mul(&y.mul(&y)?)?.neg()? };

    /// Sine (`torch.sin`). d/dx = cos x.
    sin, Sin, "sin", promote: true, save_out: false,
    fwd: |x| x.sin(),
    complex: |z| z.sin(),
    vjp: |cx, g| g.mul(&cx.input(0).cos()?.conj()?)?;

    /// Cosine (`torch.cos`). d/dx = -sin x.
    cos, Cos, "cos", promote: true, save_out: false,
    fwd: |x| x.cos(),
    complex: |z| z.cos(),
    vjp: |cx, g| g.mul(&cx.input(0).sin()?.conj()?)?.neg()?;

    /// Tangent (`torch.tan`). d/dx = 1 + y².
    tan, Tan, "tan", promote: true, save_out: true,
    fwd: |x| x.tan(),
    vjp: |cx, g| { let y = cx.output(0)?; g.mul(&y.mul(&y)?.add_scalar(1.0)?)? };

    /// Hyperbolic tangent (`torch.tanh`). d/dx = 1 - y².
    tanh, Tanh, "tanh", promote: true, save_out: true,
    fwd: |x| x.tanh(),
    complex: |z| z.tanh(),
    vjp: |cx, g| { let y = cx.output(0)?.conj()?; g.mul(&y.mul(&y)?.rsub_scalar(1.0)?)? };

    /// The complex conjugate, computed (`torch.conj_physical`): `x - iy`, and the identity
    /// on real tensors. Gradient: the conjugate of the cotangent.
    conj_physical, ConjPhysical, "conj_physical", promote: false, save_out: false,
    fwd: |x| x,
    complex: |z| z.conj(),
    vjp: |cx, g| g.conj()?;

    /// `z / |z|` (`torch.sgn`), 0 at 0; `sign(x)` for real tensors. Gradient (complex):
    /// `(g - Re(g conj(s)) s) / |z|` with `s` the output (the part of `g` that turns `z`),
    /// 0 at 0; zero for real tensors.
    sgn, Sgn, "sgn", promote: false, save_out: true,
    fwd: |x| x.sign(),
    complex: |z| { let a = z.abs(); if a == C::Real::ZERO { z.scale(C::Real::ZERO) } else { C::new(z.re() / a, z.im() / a) } },
    // (the VJP's formula in g is also the JVP's in the tangent: not holomorphic)
    jvp_conj: false,
    vjp: |cx, g| if g.dtype().is_complex() { sgn_vjp(cx.input(0), &cx.output(0)?, g)? } else { g.zeros_like()? };

    /// The logistic function `1/(1 + e^-x)` (`torch.sigmoid`). d/dx = y(1 - y).
    sigmoid, Sigmoid, "sigmoid", promote: true, save_out: true,
    fwd: |x| if x >= T::ZERO { T::ONE / (T::ONE + (-x).exp()) } else { let e = x.exp(); e / (T::ONE + e) },
    vjp: |cx, g| { let y = cx.output(0)?; g.mul(&y.mul(&y.rsub_scalar(1.0)?)?)? };

    /// `max(x, 0)` (`torch.relu`). Gradient 1 where x > 0, else 0 (0 at 0, as PyTorch).
    relu, Relu, "relu", promote: false, save_out: false,
    fwd: |x| if x > T::ZERO || x.is_nan() { x } else { T::ZERO },
    vjp: |cx, g| Tensor::where_cond(&cx.input(0).gt_scalar(0.0)?, g, &g.zeros_like()?)?;
}

/// `|x|` (`torch.abs`; for a complex tensor the modulus, real: see
/// [`Tensor::complex_abs`]).
#[derive(Debug, Clone, Copy)]
struct Abs;

impl UnaryKernel for Abs {
    const NAME: &'static str = "abs";
    #[inline(always)]
    fn f<T: Float>(self, x: T) -> T {
        x.abs()
    }
}

impl Op for Abs {
    fn name(&self) -> &'static str {
        "abs"
    }
    // d|x|/dx = sign(x), 0 at 0 and at NaN (PyTorch's convention)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(g.mul(&cx.input(0).sign()?)?)])
    }
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.mul(&cx.input(0).sign()?)?)])
    }
}

impl Tensor {
    /// `|x|` (`torch.abs`); for a complex tensor the modulus `√(x² + y²)`, a real tensor of
    /// the same precision. Gradient `sign(x)` (0 at 0 and at NaN, PyTorch's convention);
    /// for complex `z`, `g z/|z|` (0 at 0).
    pub fn abs(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_abs();
        }
        apply(self, Abs, false, false)
    }
}

/// The VJP of `s = sgn(z)` for complex `z`: `s` moves only with the argument of `z`,
/// `ds = i s d(arg z)` and `d(arg z) = Im(dz / z)`, so the cotangent keeps the part of `g`
/// along `i s`, divided by `|z|`: `(g - Re(g conj(s)) s) / |z|`, 0 where `z = 0`.
fn sgn_vjp(z: &Tensor, s: &Tensor, g: &Tensor) -> Result<Tensor> {
    let a = z.abs()?;
    let along = g.mul(&s.conj()?)?.real()?;
    let d = g.sub(&along.mul(s)?)?.div(&a)?;
    Tensor::where_cond(&a.eq_scalar(0.0)?, &d.zeros_like()?, &d)
}

/// `g · (x + x)`: the first-order VJP of [`Tensor::square`] in one pass (`x + x` is
/// `2 x` exactly).
#[derive(Debug, Clone, Copy)]
struct SquareGrad;

impl crate::backend::BinaryKernel for SquareGrad {
    const NAME: &'static str = "square";
    #[inline(always)]
    fn f<T: Float>(self, g: T, x: T) -> T {
        g * (x + x)
    }
}

/// Scalar-parameter elementwise ops: `x + s`, `x * s`, `s - x`, `x^s`, clamp, softplus.
#[derive(Debug, Clone, Copy)]
enum ScalarOp {
    Add(f64),
    Mul(f64),
    RSub(f64),
    Pow(f64),
    Clamp(f64, f64),
    Softplus(f64, f64),
}

impl UnaryKernel for ScalarOp {
    const NAME: &'static str = "scalar op";
    // (the arithmetic variants: `Tensor::scalar_op` refuses complex input of the others)
    const COMPLEX: bool = true;
    #[inline(always)]
    fn c<C: ComplexFloat>(self, z: C) -> C {
        let w = |s: f64| C::new(C::Real::of(s), C::Real::ZERO);
        match self {
            ScalarOp::Add(s) => z + w(s),
            ScalarOp::Mul(s) => z.mul(w(s)),
            ScalarOp::RSub(s) => w(s) - z,
            ScalarOp::Pow(e) => z.powf(C::Real::of(e)),
            ScalarOp::Clamp(..) | ScalarOp::Softplus(..) => z,
        }
    }
    #[inline(always)]
    fn f<T: Float>(self, x: T) -> T {
        match self {
            ScalarOp::Add(s) => x + T::of(s),
            ScalarOp::Mul(s) => x * T::of(s),
            ScalarOp::RSub(s) => T::of(s) - x,
            ScalarOp::Pow(e) => {
                if e == 2.0 {
                    x * x
                } else if e == 1.0 {
                    x
                } else if e == 0.5 {
                    x.sqrt()
                } else {
                    x.powf(T::of(e))
                }
            }
            ScalarOp::Clamp(lo, hi) => {
                if x.is_nan() {
                    x
                } else if x < T::of(lo) {
                    T::of(lo)
                } else if x > T::of(hi) {
                    T::of(hi)
                } else {
                    x
                }
            }
            ScalarOp::Softplus(beta, threshold) => {
                let bx = x * T::of(beta);
                if bx > T::of(threshold) {
                    x
                } else {
                    bx.exp().ln_1p() / T::of(beta)
                }
            }
        }
    }
}

/// The variants of [`ScalarOp`] that are one arithmetic operation, each its own kernel:
/// the variant is chosen once per call, not per element, so the loops over contiguous
/// buffers vectorise (with a `match` per element, `x * s` on a contiguous buffer ran one
/// element at a time).
impl ScalarOp {
    /// The op over a floating buffer, its variant dispatched outside the loop.
    fn run(self, s: &Storage, l: &Layout) -> Result<Storage> {
        // `$K(c)`: the kernel `|x| $e` with the parameter `c` (as `$c`, in `T`)
        // (and on complex `z`, with the parameter `$w = c + 0i`, `$ce`)
        macro_rules! kernel {
            ($K:ident, $name:literal, |$c:ident, $x:ident| $e:expr, |$w:ident, $z:ident| $ce:expr) => {
                #[derive(Clone, Copy)]
                struct $K(f64);
                impl UnaryKernel for $K {
                    const NAME: &'static str = $name;
                    #[inline(always)]
                    fn f<T: Float>(self, $x: T) -> T {
                        let $c = T::of(self.0);
                        $e
                    }
                    const COMPLEX: bool = true;
                    #[inline(always)]
                    fn c<C: ComplexFloat>(self, $z: C) -> C {
                        let $w = C::new(C::Real::of(self.0), C::Real::ZERO);
                        $ce
                    }
                }
            };
        }
        kernel!(AddK, "add", |c, x| x + c, |w, z| z + w);
        kernel!(MulK, "mul", |c, x| x * c, |w, z| z.mul(w));
        kernel!(RSubK, "rsub", |c, x| c - x, |w, z| w - z);
        kernel!(SquareK, "pow", |_c, x| x * x, |_w, z| z.mul(z));
        match self {
            ScalarOp::Add(v) => s.unary(l, AddK(v)),
            ScalarOp::Mul(v) => s.unary(l, MulK(v)),
            ScalarOp::RSub(v) => s.unary(l, RSubK(v)),
            ScalarOp::Pow(2.0) => s.unary(l, SquareK(2.0)),
            // the rest call a libm function per element (or branch) anyway
            _ => s.unary(l, self),
        }
    }
}

impl Op for ScalarOp {
    fn name(&self) -> &'static str {
        match self {
            ScalarOp::Add(_) => "add",
            ScalarOp::Mul(_) => "mul",
            ScalarOp::RSub(_) => "rsub",
            ScalarOp::Pow(_) => "pow",
            ScalarOp::Clamp(..) => "clamp",
            ScalarOp::Softplus(..) => "nn.functional.softplus",
        }
    }

    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        Ok(vec![Some(self.rule(cx, g)?)])
    }

    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        elementwise_jvp(cx, t, true, |c, g| Ok(vec![Some(self.rule(c, g)?)]))
    }
}

impl ScalarOp {
    /// The derivative rule, `g ↦ g conj(dy/dx)` (see [`elementwise_jvp`]).
    fn rule<C: RuleCx>(&self, cx: &C, g: &Tensor) -> Result<Tensor> {
        let x = cx.input(0);
        let gx = match *self {
            // d/dx (x + s) = 1
            ScalarOp::Add(_) => g.clone(),
            // d/dx (s x) = s
            ScalarOp::Mul(s) => g.mul_scalar(s)?,
            // d/dx (s - x) = -1
            ScalarOp::RSub(_) => g.neg()?,
            // d/dx x^e = e x^(e-1) (conjugated for complex x); exactly 0 for e = 0
            // (PyTorch pow_backward)
            ScalarOp::Pow(e) => {
                if e == 0.0 {
                    g.zeros_like()?
                } else if e == 1.0 {
                    g.clone()
                } else {
                    g.mul(&x.pow_scalar(e - 1.0)?.conj()?.mul_scalar(e)?)?
                }
            }
            // gradient passes where lo < x < hi, 0 at the bounds (PyTorch 2.15's
            // clamp_backward with scalar bounds)
            ScalarOp::Clamp(lo, hi) => {
                let zero = g.zeros_like()?;
                let inside = Tensor::where_cond(&x.gt_scalar(lo)?, g, &zero)?;
                Tensor::where_cond(&x.lt_scalar(hi)?, &inside, &zero)?
            }
            // d/dx softplus = sigmoid(βx), and 1 above the threshold
            ScalarOp::Softplus(beta, threshold) => {
                let bx = x.mul_scalar(beta)?;
                let s = g.mul(&bx.sigmoid()?)?;
                Tensor::where_cond(&bx.gt_scalar(threshold)?, g, &s)?
            }
        };
        Ok(gx)
    }
}

impl Tensor {
    fn scalar_op(&self, op: ScalarOp, promote: bool) -> Result<Tensor> {
        let complex = matches!(
            op,
            ScalarOp::Add(_) | ScalarOp::Mul(_) | ScalarOp::RSub(_) | ScalarOp::Pow(_)
        );
        apply_with(self, op, promote, false, complex, |s, l| op.run(s, l))
    }

    /// `x + s` (`torch.add` with a Python scalar: the tensor's dtype is kept, integers
    /// become `F32`).
    pub fn add_scalar(&self, s: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::Add(s), true)
    }

    /// `x - s`.
    pub fn sub_scalar(&self, s: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::Add(-s), true)
    }

    /// `s - x` (`torch.rsub`).
    pub fn rsub_scalar(&self, s: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::RSub(s), true)
    }

    /// `x * s`.
    pub fn mul_scalar(&self, s: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::Mul(s), true)
    }

    /// `x / s` (computed as a true division, as PyTorch does).
    pub fn div_scalar(&self, s: f64) -> Result<Tensor> {
        self.div(&Tensor::full((), s, self.dtype().with_float_scalar())?)
    }

    /// `x^e` (`torch.pow` with a scalar exponent). Gradient `e x^(e-1)`, exactly 0 for
    /// `e = 0`.
    pub fn pow_scalar(&self, e: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::Pow(e), true)
    }

    /// Clamps into `[min, max]` (`torch.clamp`; `None` leaves a side open; if
    /// `min > max` every element becomes `max`, as PyTorch). The gradient passes where
    /// `min < x < max` (0 at the bounds, as PyTorch 2.15).
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let x = Tensor::from_vec(vec![-2.0f64, 0.5, 3.0], 3)?;
    /// assert_eq!(x.clamp(Some(-1.0), Some(1.0))?.to_vec::<f64>()?, vec![-1.0, 0.5, 1.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::InvalidArgument {
                op: "clamp",
                arg: "min",
                reason: "at least one of min and max must be given",
            });
        }
        let lo = min.unwrap_or(f64::NEG_INFINITY);
        let hi = max.unwrap_or(f64::INFINITY);
        // PyTorch: min(max(x, lo), hi), so lo > hi gives hi everywhere
        let lo = if lo > hi { hi } else { lo };
        self.scalar_op(ScalarOp::Clamp(lo, hi), false)
    }

    /// `ln(1 + e^(βx))/β`, and `x` where `βx > threshold`
    /// (`torch.nn.functional.softplus`, defaults `β = 1`, `threshold = 20`).
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        self.scalar_op(ScalarOp::Softplus(beta, threshold), true)
    }
}
