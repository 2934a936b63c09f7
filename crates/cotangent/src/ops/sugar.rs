//! `std::ops` operators on tensors: sugar for users.
//!
//! `&a + &b`, `&a * 2.0`, `2.0 - &a`, `-&a` and friends, on owned or borrowed tensors
//! and with an `f64` on either side, call [`Tensor::add`], [`Tensor::mul_scalar`],
//! [`Tensor::rsub_scalar`], [`Tensor::neg`], ... and **panic** if those fail (mismatched shapes, unsupported
//! dtypes), like ndarray's operators. Library code never uses them; use the methods,
//! which return `Result`, wherever input is not known to be valid.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::tensor::Tensor;

#[track_caller]
fn ok(r: crate::Result<Tensor>, op: &str) -> Tensor {
    match r {
        Ok(t) => t,
        #[allow(clippy::panic)]
        Err(e) => panic!("tensor operator `{op}` failed: {e}"),
    }
}

macro_rules! binop {
    ($Trait:ident, $method:ident, $tensor_fn:ident, $scalar_fn:ident, $left:expr, $sym:literal) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the shapes do not broadcast or the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, rhs), $sym)
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the shapes do not broadcast or the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, &rhs), $sym)
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the shapes do not broadcast or the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(&self, rhs), $sym)
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the shapes do not broadcast or the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$tensor_fn(self, &rhs), $sym)
            }
        }
        impl $Trait<&Tensor> for f64 {
            type Output = Tensor;
            /// # Panics
            /// If the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok($left(self, rhs), $sym)
            }
        }
        impl $Trait<Tensor> for f64 {
            type Output = Tensor;
            /// # Panics
            /// If the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                ok($left(self, &rhs), $sym)
            }
        }
        impl $Trait<f64> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: f64) -> Tensor {
                ok(Tensor::$scalar_fn(&self, rhs), $sym)
            }
        }
        impl $Trait<f64> for Tensor {
            type Output = Tensor;
            /// # Panics
            /// If the dtype is not supported.
            #[track_caller]
            fn $method(self, rhs: f64) -> Tensor {
                ok(Tensor::$scalar_fn(&self, rhs), $sym)
            }
        }
    };
}

// a scalar on the left: `s + x` and `s * x` are `x + s` and `x * s` (the same bits:
// IEEE addition and multiplication commute); `s - x` is `torch.rsub`, and `s / x` a true
// division by `x` of `s` as a 0-d tensor of the dtype `x / s` would have, as
// `div_scalar` divides
binop!(Add, add, add, add_scalar, |s: f64, x: &Tensor| x.add_scalar(s), "+");
binop!(Sub, sub, sub, sub_scalar, |s: f64, x: &Tensor| x.rsub_scalar(s), "-");
binop!(Mul, mul, mul, mul_scalar, |s: f64, x: &Tensor| x.mul_scalar(s), "*");
binop!(Div, div, div, div_scalar, rdiv, "/");

/// `s / x`, as [`Tensor::div_scalar`] computes `x / s`.
fn rdiv(s: f64, x: &Tensor) -> crate::Result<Tensor> {
    Tensor::div(&Tensor::full((), s, x.dtype().with_float_scalar())?, x)
}

impl Neg for &Tensor {
    type Output = Tensor;
    /// # Panics
    /// If the dtype is not supported.
    #[track_caller]
    fn neg(self) -> Tensor {
        ok(Tensor::neg(self), "-")
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    /// # Panics
    /// If the dtype is not supported.
    #[track_caller]
    fn neg(self) -> Tensor {
        ok(Tensor::neg(&self), "-")
    }
}
