//! Elementwise functions of two tensors with PyTorch broadcasting and dtype promotion,
//! comparisons, and `where`.
//!
//! Broadcasting is one rule: both operands are promoted to a common dtype and expanded
//! (as views) to the broadcast shape before the kernel runs, so every VJP here sees
//! cotangents of the inputs' shape and the expand's own VJP (`sum_to`) reduces them.
//!
//! The result is contiguous, except when both operands are dense in the same permuted
//! order (two transposes), or one is dense permuted and the other a broadcast scalar: then
//! it keeps that order, as PyTorch does.

use std::borrow::Cow;

use crate::autograd::forward::{elementwise_jvp, JvpCtx, RuleCx};
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::{BinaryKernel, CmpOp};
use crate::complex::ComplexFloat;
use crate::dtype::{DType, Float};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{broadcast_shapes, Shape};
use crate::tensor::Tensor;

/// Promotes both operands to their result dtype (`torch.result_type`: a 0-d operand does
/// not widen a dimensioned one within its category) and broadcasts them to a common
/// shape. Operands that need neither are borrowed, not cloned.
fn prepare<'a>(
    op: &'static str,
    a: &'a Tensor,
    b: &'a Tensor,
) -> Result<(Cow<'a, Tensor>, Cow<'a, Tensor>)> {
    if a.dtype() == b.dtype() && a.dims() == b.dims() {
        return Ok((Cow::Borrowed(a), Cow::Borrowed(b)));
    }
    let dt = DType::result_type(a.dtype(), a.rank() == 0, b.dtype(), b.rank() == 0);
    let a = if a.dtype() == dt { a.clone() } else { a.to_dtype(dt)? };
    let b = if b.dtype() == dt { b.clone() } else { b.to_dtype(dt)? };
    if a.dims() == b.dims() {
        return Ok((Cow::Owned(a), Cow::Owned(b)));
    }
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    Ok((Cow::Owned(a.broadcast_to(shape.clone())?), Cow::Owned(b.broadcast_to(shape)?)))
}

fn apply<K: BinaryKernel + Op>(k: K, a: &Tensor, b: &Tensor, save_out: bool) -> Result<Tensor> {
    let (a, b) = prepare(K::NAME, a, b)?;
    let out = compute(k, &a, &b)?;
    record1(k, &[a.as_ref(), b.as_ref()], out, save_out)
}

/// The kernel on operands already promoted and broadcast to one dtype and shape.
fn compute<K: BinaryKernel>(k: K, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if !(a.dtype().is_floating_point() || K::COMPLEX && a.dtype().is_complex()) {
        return Err(Error::UnsupportedDType { op: K::NAME, dtype: a.dtype() });
    }
    let (sa, sb) = (a.storage(), b.storage());
    Ok(match dense_pair(a.layout(), b.layout()) {
        Some((fa, fb, kept)) => Tensor::from_storage_layout(sa.binary(&fa, sb, &fb, k)?, kept),
        None => Tensor::from_storage(sa.binary(a.layout(), sb, b.layout(), k)?, a.shape().clone()),
    })
}

/// `k(a, b)` elementwise with the broadcasting and promotion of the ops here, not
/// recorded: one pass for a first-order backward that would otherwise take several
/// recorded ops (e.g. `g · 2x` for `square`).
pub(crate) fn unrecorded<K: BinaryKernel>(k: K, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (a, b) = prepare(K::NAME, a, b)?;
    compute(k, &a, &b)
}

/// Operands (of one shape) that can run as flat blocks with the output in their own order:
/// both dense with the same strides, or one dense and the other a single broadcast
/// element. Their flat layouts and the output's. `None` when either is contiguous (the
/// row-major kernels serve) or the orders differ.
fn dense_pair(al: &Layout, bl: &Layout) -> Option<(Layout, Layout, Layout)> {
    let scalar = |l: &Layout, n: usize| {
        l.is_scalar_broadcast().then(|| Layout::new(Shape::from(n), [0], l.offset()))
    };
    if al.is_contiguous() || bl.is_contiguous() {
        return None;
    }
    if let Some((fa, kept)) = al.dense_flat() {
        if bl.strides() == al.strides() {
            let (fb, _) = bl.dense_flat()?;
            return Some((fa, fb, kept));
        }
        let fb = scalar(bl, fa.numel())?;
        return Some((fa, fb, kept));
    }
    let (fb, kept) = bl.dense_flat()?;
    let fa = scalar(al, fb.numel())?;
    Some((fa, fb, kept))
}

macro_rules! binary_ops {
    ($(
        $(#[$doc:meta])*
        $fname:ident, $S:ident, $torch:literal, save_out: $save:expr,
        fwd: |$a:ident, $b:ident| $fwd:expr,
        $(complex: |$za:ident, $zb:ident| $cfwd:expr,)?
        vjp: |$cx:ident, $g:ident| $vjp:expr;
    )*) => {$(
        #[derive(Debug, Clone, Copy)]
        struct $S;

        impl BinaryKernel for $S {
            const NAME: &'static str = $torch;
            #[inline(always)]
            fn f<T: Float>(self, $a: T, $b: T) -> T {
                $fwd
            }
            $(
                const COMPLEX: bool = true;
                #[inline(always)]
                fn c<C: ComplexFloat>(self, $za: C, $zb: C) -> C {
                    $cfwd
                }
            )?
        }

        impl Op for $S {
            fn name(&self) -> &'static str {
                $torch
            }
            fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
                let Some(g) = &g[0] else { return Ok(vec![None, None]) };
                self.rule(cx, g)
            }
            fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
                elementwise_jvp(cx, t, true, |c, g| self.rule(c, g))
            }
        }

        impl $S {
            /// The derivative rule, `g ↦ (g conj(∂y/∂a), g conj(∂y/∂b))` (see
            /// [`elementwise_jvp`]).
            #[allow(unused_variables)]
            fn rule<C: RuleCx>(&self, $cx: &C, $g: &Tensor) -> Result<Vec<Option<Tensor>>> {
                let (ga, gb): (Option<Tensor>, Option<Tensor>) = $vjp;
                Ok(vec![ga, gb])
            }
        }

        impl Tensor {
            $(#[$doc])*
            pub fn $fname(&self, other: &Tensor) -> Result<Tensor> {
                apply($S, self, other, $save)
            }
        }
    )*};
}

/// `Some(f())` if input `i` needs a gradient, else `None`.
fn need(cx: &impl RuleCx, i: usize, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
    if cx.needs_input_grad(i) {
        f().map(Some)
    } else {
        Ok(None)
    }
}

binary_ops! {
    /// `a + b` with broadcasting (`torch.add`).
    add, Add, "add", save_out: false,
    fwd: |a, b| a + b,
    complex: |a, b| a + b,
    vjp: |cx, g| (Some(g.clone()), Some(g.clone()));

    /// `a - b` with broadcasting (`torch.sub`).
    sub, Sub, "sub", save_out: false,
    fwd: |a, b| a - b,
    complex: |a, b| a - b,
    vjp: |cx, g| (Some(g.clone()), need(cx, 1, || g.neg())?);

    /// `a * b` with broadcasting (`torch.mul`). Gradients `g·conj(b)` and `g·conj(a)`
    /// (`conj` the identity on real tensors).
    mul, Mul, "mul", save_out: false,
    fwd: |a, b| a * b,
    complex: |a, b| a.mul(b),
    vjp: |cx, g| (
        need(cx, 0, || g.mul(&cx.input(1).conj()?))?,
        need(cx, 1, || g.mul(&cx.input(0).conj()?))?,
    );

    /// `a / b` with broadcasting (`torch.div`, true division; complex quotients scaled,
    /// as PyTorch's, so they overflow only where the quotient does).
    div, Div, "div", save_out: false,
    // ga = g / conj(b), gb = -g conj(a / b²)
    fwd: |a, b| a / b,
    complex: |a, b| a.div(b),
    vjp: |cx, g| (
        need(cx, 0, || g.div(&cx.input(1).conj()?))?,
        need(cx, 1, || {
            let (a, b) = (cx.input(0).conj()?, cx.input(1).conj()?);
            g.mul(&a)?.div(&b.mul(&b)?)?.neg()
        })?,
    );

    /// `a^b` with broadcasting (`torch.pow`). Gradients as PyTorch's `pow_backward`:
    /// `b a^(b-1)` (0 where `b = 0`) and `a^b ln a` (0 where `a = 0` and `b >= 0`).
    /// Complex: the principal power `exp(b ln a)`, and the gradients conjugated.
    pow, Pow, "pow", save_out: true,
    fwd: |a, b| a.powf(b),
    complex: |a, b| a.powc(b),
    vjp: |cx, g| (
        need(cx, 0, || {
            let (a, b) = (cx.input(0), cx.input(1));
            let d = g.mul(&b.mul(&a.pow(&b.sub_scalar(1.0)?)?)?.conj()?)?;
            Tensor::where_cond(&b.eq_scalar(0.0)?, &d.zeros_like()?, &d)
        })?,
        need(cx, 1, || {
            let (a, b) = (cx.input(0), cx.input(1));
            let d = g.mul(&cx.output(0)?.mul(&a.log()?)?.conj()?)?;
            let mask = a.eq_scalar(0.0)?.logical_and(&b.real()?.ge_scalar(0.0)?)?;
            Tensor::where_cond(&mask, &d.zeros_like()?, &d)
        })?,
    );

    /// Elementwise maximum (`torch.maximum`; NaN propagates). At ties the gradient is
    /// split evenly, as PyTorch.
    maximum, Maximum, "maximum", save_out: false,
    fwd: |a, b| if a.is_nan() || a > b { a } else if b.is_nan() || b > a { b } else { a },
    vjp: |cx, g| split_minmax(cx, g, CmpOp::Gt)?;

    /// Elementwise minimum (`torch.minimum`; NaN propagates). At ties the gradient is
    /// split evenly.
    minimum, Minimum, "minimum", save_out: false,
    fwd: |a, b| if a.is_nan() || a < b { a } else if b.is_nan() || b < a { b } else { a },
    vjp: |cx, g| split_minmax(cx, g, CmpOp::Lt)?;

    /// `atan2(a, b)`, the angle of the point `(b, a)` (`torch.atan2`).
    /// Gradients `b/(a²+b²)` and `-a/(a²+b²)`.
    atan2, Atan2, "atan2", save_out: false,
    fwd: |a, b| a.atan2(b),
    vjp: |cx, g| {
        let (a, b) = (cx.input(0), cx.input(1));
        let r = a.mul(a)?.add(&b.mul(b)?)?;
        (need(cx, 0, || g.mul(b)?.div(&r))?, need(cx, 1, || g.mul(a)?.div(&r)?.neg())?)
    };
}

/// Gradient of maximum (`wins = Gt`) or minimum (`wins = Lt`): to `a` where it wins, to
/// `b` where it wins, half to each at ties.
fn split_minmax(
    cx: &impl RuleCx,
    g: &Tensor,
    wins: CmpOp,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (a, b) = (cx.input(0), cx.input(1));
    let half = g.mul_scalar(0.5)?;
    let zero = g.zeros_like()?;
    let tie = a.compare(b, CmpOp::Eq)?;
    let a_wins = a.compare(b, wins)?;
    let b_wins = b.compare(a, wins)?;
    let ga =
        need(cx, 0, || Tensor::where_cond(&tie, &half, &Tensor::where_cond(&a_wins, g, &zero)?))?;
    let gb =
        need(cx, 1, || Tensor::where_cond(&tie, &half, &Tensor::where_cond(&b_wins, g, &zero)?))?;
    Ok((ga, gb))
}

#[derive(Debug)]
struct Where;

impl Op for Where {
    fn name(&self) -> &'static str {
        "where"
    }
    // y = c ? a : b  ⇒  ga = c ? g : 0, gb = c ? 0 : g (input 0 is the condition)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None, None]) };
        let c = cx.input(0);
        let zero = || Tensor::zeros((), g.dtype())?.broadcast_to(g.shape().clone());
        let ga = need(cx, 1, || Tensor::where_cond(c, g, &zero()?))?;
        let gb = need(cx, 2, || Tensor::where_cond(c, &zero()?, g))?;
        Ok(vec![None, ga, gb])
    }
    // ẏ = c ? ȧ : ḃ
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let y = cx.output(0);
        let pick = |i: usize| t[i].clone().map_or_else(|| y.zeros_like(), Ok);
        Ok(vec![Some(Tensor::where_cond(cx.input(0), &pick(1)?, &pick(2)?)?)])
    }
}

impl Tensor {
    /// Elementwise `condition ? a : b` with broadcasting of all three (`torch.where`).
    /// `condition` must be `Bool`; `a` and `b` are promoted to their result dtype (as the
    /// arithmetic ops: a 0-d tensor does not widen the other within its category).
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0f64, 2.0], 2)?;
    /// let y = Tensor::where_cond(&x.gt_scalar(0.0)?, &x, &x.neg()?)?; // |x|
    /// assert_eq!(y.to_vec::<f64>()?, vec![1.0, 2.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn where_cond(condition: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        const OP: &str = "where";
        if condition.dtype() != DType::Bool {
            return Err(Error::DTypeMismatch { op: OP, lhs: condition.dtype(), rhs: DType::Bool });
        }
        let (a, b) = prepare(OP, a, b)?;
        let shape = broadcast_shapes(OP, condition.shape(), a.shape())?;
        let (c, a, b) = (
            condition.broadcast_to(shape.clone())?,
            a.broadcast_to(shape.clone())?,
            b.broadcast_to(shape)?,
        );
        let s =
            c.storage().where_cond(c.layout(), a.storage(), a.layout(), b.storage(), b.layout())?;
        let out = Tensor::from_storage(s, a.shape().clone());
        record1(Where, &[&c, &a, &b], out, false)
    }

    /// Elementwise comparison with broadcasting and promotion; the result is `Bool` and
    /// carries no gradient.
    pub(crate) fn compare(&self, other: &Tensor, op: CmpOp) -> Result<Tensor> {
        let (a, b) = prepare("compare", self, other)?;
        let s = a.storage().cmp(a.layout(), b.storage(), b.layout(), op)?;
        Ok(Tensor::from_storage(s, a.shape().clone()))
    }

    fn compare_scalar(&self, s: f64, op: CmpOp) -> Result<Tensor> {
        let dt = if self.dtype().is_differentiable() { self.dtype() } else { DType::F64 };
        let a = if dt == self.dtype() { self.clone() } else { self.to_dtype(dt)? };
        a.compare(&Tensor::full((), s, dt)?, op)
    }

    /// Elementwise logical and of two `Bool` tensors, with broadcasting.
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        if self.dtype() != DType::Bool || other.dtype() != DType::Bool {
            return Err(Error::DTypeMismatch {
                op: "logical_and",
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        let f = Tensor::zeros((), DType::Bool)?;
        Tensor::where_cond(self, other, &f)
    }
}

impl Tensor {
    /// Elementwise `|a - b| <= atol + rtol |b|` with broadcasting (`torch.isclose`; the
    /// moduli for complex tensors): a `Bool` tensor, not differentiable. Equal values are
    /// close (infinities of one sign included); NaN is close to NaN only if `equal_nan`.
    /// PyTorch's defaults are `rtol = 1e-5`, `atol = 1e-8`.
    ///
    /// Errors: `DTypeMismatch` if the dtypes differ (PyTorch does not promote here);
    /// `InvalidArgument` for a negative `rtol` or `atol`; `ShapeMismatch` if the shapes do
    /// not broadcast.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f64, f64::INFINITY, f64::NAN, 2.0], 4)?;
    /// let b = Tensor::from_vec(vec![1.0f64 + 1e-6, f64::INFINITY, f64::NAN, 2.1], 4)?;
    /// assert_eq!(a.isclose(&b, 1e-5, 1e-8, false)?.to_vec::<bool>()?, vec![true, true, false, false]);
    /// assert!(!a.allclose(&b, 1e-5, 1e-8, true)?);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        const OP: &str = "isclose";
        if self.dtype() != other.dtype() {
            return Err(Error::DTypeMismatch { op: OP, lhs: self.dtype(), rhs: other.dtype() });
        }
        for (arg, v) in [("rtol", rtol), ("atol", atol)] {
            if v.is_nan() || v < 0.0 {
                return Err(Error::InvalidArgument {
                    op: OP,
                    arg,
                    reason: "must be greater than or equal to zero",
                });
            }
        }
        let shape = broadcast_shapes(OP, self.shape(), other.shape())?;
        let (a, b) =
            (self.detach().broadcast_to(shape.clone())?, other.detach().broadcast_to(shape)?);
        let equal = a.compare(&b, CmpOp::Eq)?;
        if a.dtype() == DType::Bool {
            return Ok(equal);
        }
        // integers measured in f64 (PyTorch: in its default float dtype)
        let (x, y) = if a.dtype().is_differentiable() {
            (a, b)
        } else {
            (a.to_dtype(DType::F64)?, b.to_dtype(DType::F64)?)
        };
        let diff = x.sub(&y)?.abs()?;
        let allowed = y.abs()?.mul_scalar(rtol)?.add_scalar(atol)?;
        let yes = Tensor::ones((), DType::Bool)?;
        // (a finite difference only: |-inf - inf| <= inf must not count)
        let within =
            diff.compare(&allowed, CmpOp::Le)?.logical_and(&diff.lt_scalar(f64::INFINITY)?)?;
        let close = Tensor::where_cond(&equal, &yes, &within)?;
        if !equal_nan {
            return Ok(close);
        }
        let both_nan = x.compare(&x, CmpOp::Ne)?.logical_and(&y.compare(&y, CmpOp::Ne)?)?;
        Tensor::where_cond(&both_nan, &yes, &close)
    }

    /// Whether every pair of elements [`Tensor::isclose`] (`torch.allclose`).
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        let close = self.isclose(other, rtol, atol, equal_nan)?;
        let none_far = close.to_dtype(DType::I64)?.sum()?.item::<i64>()? == close.numel() as i64;
        Ok(none_far)
    }
}

macro_rules! comparisons {
    ($($name:ident, $sname:ident, $op:ident, $doc:literal;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("Elementwise `", $doc, "` with broadcasting (`torch.", stringify!($name), "`); a `Bool` tensor, not differentiable.")]
                pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
                    self.compare(other, CmpOp::$op)
                }
                #[doc = concat!("Elementwise `", $doc, "` against a scalar; a `Bool` tensor.")]
                pub fn $sname(&self, other: f64) -> Result<Tensor> {
                    self.compare_scalar(other, CmpOp::$op)
                }
            )*
        }
    };
}

comparisons! {
    eq, eq_scalar, Eq, "a == b";
    ne, ne_scalar, Ne, "a != b";
    lt, lt_scalar, Lt, "a < b";
    le, le_scalar, Le, "a <= b";
    gt, gt_scalar, Gt, "a > b";
    ge, ge_scalar, Ge, "a >= b";
}
