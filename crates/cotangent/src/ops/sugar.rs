//! `std::ops` operators on tensors: sugar for users.
//!
//! `&a + &b`, `&a * 2.0`, `-&a` and friends call [`Tensor::add`], [`Tensor::mul_scalar`],
//! [`Tensor::neg`], ... and **panic** if those fail (mismatched shapes, unsupported
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
    ($Trait:ident, $method:ident, $tensor_fn:ident, $scalar_fn:ident, $sym:literal) => {
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

binop!(Add, add, add, add_scalar, "+");
binop!(Sub, sub, sub, sub_scalar, "-");
binop!(Mul, mul, mul, mul_scalar, "*");
binop!(Div, div, div, div_scalar, "/");

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
