//! Runtime element types: [`DType`], its promotion rules, and the [`Element`] trait that
//! links a Rust type to its dtype.

use half::{bf16, f16};
use num_complex::Complex;

use crate::host::HostBuffer;

/// The element type of a tensor, chosen at run time (as in PyTorch).
///
/// | dtype | Rust type | PyTorch |
/// |---|---|---|
/// | `Bool` | `bool` | `torch.bool` |
/// | `I64` | `i64` | `torch.int64` |
/// | `Bf16` | [`half::bf16`] | `torch.bfloat16` |
/// | `F16` | [`half::f16`] | `torch.float16` |
/// | `F32` | `f32` | `torch.float32` |
/// | `F64` | `f64` | `torch.float64` |
/// | `C64` | `Complex<f32>` | `torch.complex64` |
/// | `C128` | `Complex<f64>` | `torch.complex128` |
///
/// `F32` and `F64` are fully supported. `Bf16` and `F16` are stored in 16 bits and computed
/// in `f32` arithmetic, rounded back after each op. Complex dtypes have the elementwise
/// arithmetic, the elementary functions, sums and products, and their parts
/// ([`Tensor::real`](crate::Tensor::real), [`Tensor::complex`](crate::Tensor::complex)
/// and the like), all differentiable with PyTorch's convention (the crate docs,
/// [complex numbers](crate#complex-numbers)), the matrix products, the structural ops,
/// every norm, and every op of [`linalg`](crate::linalg) (the crate docs'
/// [complex numbers](crate#complex-numbers) list them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DType {
    /// Booleans (results of comparisons).
    Bool,
    /// 64-bit signed integers (indices, pivots, ranks).
    I64,
    /// bfloat16: 8 exponent bits, 7 mantissa bits.
    Bf16,
    /// IEEE half precision.
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Complex numbers with `f32` parts.
    C64,
    /// Complex numbers with `f64` parts.
    C128,
}

/// The kind of a dtype, ordered as PyTorch's promotion categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    Bool,
    Int,
    Float,
    Complex,
}

impl DType {
    /// Short name as in the parity protocol: `bool`, `i64`, `bf16`, `f16`, `f32`, `f64`,
    /// `c64`, `c128`.
    pub fn as_str(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I64 => "i64",
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }

    /// Parses the short name of [`DType::as_str`].
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "i64" => DType::I64,
            "bf16" => DType::Bf16,
            "f16" => DType::F16,
            "f32" => DType::F32,
            "f64" => DType::F64,
            "c64" => DType::C64,
            "c128" => DType::C128,
            _ => return None,
        })
    }

    fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::I64 => Category::Int,
            DType::Bf16 | DType::F16 | DType::F32 | DType::F64 => Category::Float,
            DType::C64 | DType::C128 => Category::Complex,
        }
    }

    /// True for real floating-point dtypes (`Bf16`, `F16`, `F32`, `F64`).
    pub fn is_floating_point(self) -> bool {
        self.category() == Category::Float
    }

    /// True for complex dtypes.
    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }

    /// True for dtypes that can carry gradients (floating point and complex).
    pub fn is_differentiable(self) -> bool {
        self.is_floating_point() || self.is_complex()
    }

    /// True for the 16-bit floating dtypes, which compute in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, DType::Bf16 | DType::F16)
    }

    /// Bytes per element.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::Bf16 | DType::F16 => 2,
            DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// The real dtype of the same precision: `C64 -> F32`, `C128 -> F64`; others unchanged.
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex dtype of the same precision: `F64 -> C128`, anything else `-> C64`
    /// (PyTorch's rule for `F32`, `Bf16`, `F16`, integers).
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }

    /// The dtype of a binary op's result between tensors of dtypes `a` and `b`
    /// (`torch.result_type` for two dimensioned tensors): the higher category wins
    /// (bool < integer < floating < complex); within floating types the wider wins, and
    /// `Bf16` with `F16` gives `F32`; a complex with a floating type keeps the wider
    /// precision (`C64` with `F64` gives `C128`).
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        let (ca, cb) = (a.category(), b.category());
        if ca != cb {
            let (hi, lo) = if ca > cb { (a, b) } else { (b, a) };
            if hi.is_complex() && lo == DType::F64 {
                return DType::C128;
            }
            return hi;
        }
        match (a, b) {
            (DType::Bf16, DType::F16) | (DType::F16, DType::Bf16) => DType::F32,
            _ => a.max(b),
        }
    }

    /// The dtype of an elementwise op's result between two tensors, told whether each is
    /// 0-d (`torch.result_type`): as [`DType::promote`] when both or neither are 0-d;
    /// otherwise a 0-d operand does not widen the other within its category, only lifts
    /// it to a higher one (f32 with a 0-d f64 gives f32, bf16 with a 0-d f64 gives bf16,
    /// i64 with a 0-d f32 gives f32, f32 with a 0-d c128 gives c64, f64 with a 0-d c64
    /// gives c128). A 16-bit float with a 0-d complex gives `C64` (PyTorch's complex32
    /// is not a dtype here).
    pub fn result_type(a: DType, a_zero_dim: bool, b: DType, b_zero_dim: bool) -> DType {
        if a_zero_dim == b_zero_dim {
            return DType::promote(a, b);
        }
        let (dim, zero) = if b_zero_dim { (a, b) } else { (b, a) };
        if dim.is_complex() || dim.is_floating_point() && !zero.is_complex() {
            dim
        } else if zero.is_complex() {
            if dim.is_floating_point() {
                dim.to_complex()
            } else {
                zero
            }
        } else if dim == DType::Bool || zero.is_floating_point() {
            DType::promote(dim, zero)
        } else {
            dim
        }
    }

    /// The dtype of an op between a tensor of dtype `self` and a Python-like float scalar:
    /// floating and complex tensors keep their dtype, integer and bool tensors become `F32`
    /// (PyTorch's default dtype).
    pub fn with_float_scalar(self) -> DType {
        if self.is_differentiable() {
            self
        } else {
            DType::F32
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for bool {}
    impl Sealed for i64 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for num_complex::Complex<f32> {}
    impl Sealed for num_complex::Complex<f64> {}
}

/// A Rust type that is the element of a [`DType`]: `bool`, `i64`, `bf16`, `f16`, `f32`,
/// `f64`, `Complex<f32>`, `Complex<f64>`. Sealed.
pub trait Element:
    Copy + Send + Sync + std::fmt::Debug + Default + PartialEq + 'static + sealed::Sealed
{
    /// The dtype of this element type.
    const DTYPE: DType;
    /// Converts to `f64` (real part for complex, 0/1 for bool).
    fn to_f64(self) -> f64;
    /// Converts from `f64` with Rust's `as` semantics (rounding for floats, truncation
    /// for integers, `!= 0` for bool).
    fn from_f64(v: f64) -> Self;
    #[doc(hidden)]
    fn into_host(v: Vec<Self>) -> HostBuffer;
    #[doc(hidden)]
    fn host_slice(h: &HostBuffer) -> Option<&[Self]>;
    #[doc(hidden)]
    fn from_host(h: HostBuffer) -> std::result::Result<Vec<Self>, HostBuffer>;
}

macro_rules! element {
    ($t:ty, $dt:ident, $to:expr, $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline]
            fn to_f64(self) -> f64 {
                let f: fn($t) -> f64 = $to;
                f(self)
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                let f: fn(f64) -> $t = $from;
                f(v)
            }
            fn into_host(v: Vec<Self>) -> HostBuffer {
                HostBuffer::$dt(v)
            }
            fn host_slice(h: &HostBuffer) -> Option<&[Self]> {
                match h {
                    HostBuffer::$dt(v) => Some(v),
                    _ => None,
                }
            }
            fn from_host(h: HostBuffer) -> std::result::Result<Vec<Self>, HostBuffer> {
                match h {
                    HostBuffer::$dt(v) => Ok(v),
                    other => Err(other),
                }
            }
        }
    };
}

element!(bool, Bool, |x| f64::from(u8::from(x)), |v| v != 0.0);
element!(i64, I64, |x| x as f64, |v| v as i64);
element!(bf16, Bf16, f64::from, bf16::from_f64);
element!(f16, F16, f64::from, f16::from_f64);
element!(f32, F32, f64::from, |v| v as f32);
element!(f64, F64, |x| x, |v| v);
element!(Complex<f32>, C64, |x| f64::from(x.re), |v| Complex::new(v as f32, 0.0));
element!(Complex<f64>, C128, |x| x.re, |v| Complex::new(v, 0.0));

/// Real floating-point arithmetic used by the CPU kernels (`f32`, `f64`).
///
/// The 16-bit types are computed through `f32`, so kernels are written once for this
/// trait.
pub trait Float:
    Element
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + std::ops::MulAssign
    + std::iter::Sum
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Not a number.
    const NAN: Self;
    /// Positive infinity.
    const INFINITY: Self;
    /// Machine epsilon.
    const EPSILON: Self;
    /// Converts from `f64` (rounding).
    fn of(v: f64) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// `e^x`.
    fn exp(self) -> Self;
    /// `e^x - 1`.
    fn exp_m1(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + x)`.
    fn ln_1p(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// `x^y`.
    fn powf(self, y: Self) -> Self;
    /// Four-quadrant arc tangent of `self / x`.
    fn atan2(self, x: Self) -> Self;
    /// True if NaN.
    fn is_nan(self) -> bool;
    /// True if neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// Sign as PyTorch: -1, 0 or 1 (0 for ±0 and for NaN).
    fn sign(self) -> Self;
}

macro_rules! float {
    ($t:ident) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = $t::NAN;
            const INFINITY: Self = $t::INFINITY;
            const EPSILON: Self = $t::EPSILON;
            #[inline]
            fn of(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline]
            fn exp_m1(self) -> Self {
                $t::exp_m1(self)
            }
            #[inline]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline]
            fn ln_1p(self) -> Self {
                $t::ln_1p(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline]
            fn powf(self, y: Self) -> Self {
                $t::powf(self, y)
            }
            #[inline]
            fn atan2(self, x: Self) -> Self {
                $t::atan2(self, x)
            }
            #[inline]
            fn is_nan(self) -> bool {
                $t::is_nan(self)
            }
            #[inline]
            fn is_finite(self) -> bool {
                $t::is_finite(self)
            }
            #[inline]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    // ±0 and NaN (PyTorch 2.15: sign(-0.0) = 0, sign(NaN) = 0)
                    0.0
                }
            }
        }
    };
}
float!(f32);
float!(f64);

#[cfg(test)]
mod tests {
    use super::DType::{self, *};

    #[test]
    fn promotion_follows_torch_result_type() {
        // torch.result_type on tensors of two dtypes
        let cases = [
            (F32, F64, F64),
            (Bf16, F16, F32),
            (Bf16, F32, F32),
            (I64, F32, F32),
            (Bool, I64, I64),
            (Bool, Bf16, Bf16),
            (C64, F64, C128),
            (C64, F32, C64),
            (I64, C64, C64),
        ];
        for (a, b, want) in cases {
            assert_eq!(DType::promote(a, b), want, "{a:?} {b:?}");
            assert_eq!(DType::promote(b, a), want, "{b:?} {a:?}");
        }
    }

    #[test]
    fn zero_dim_operands_follow_torch_result_type() {
        // torch.result_type(torch.ones(2, dtype=a), torch.ones((), dtype=b)) from
        // PyTorch 2.15, every pair but a 16-bit float with a 0-d complex (complex32 there)
        #[rustfmt::skip]
        let cases = [
            (Bool, Bool, Bool), (Bool, I64, I64), (Bool, Bf16, Bf16), (Bool, F16, F16),
            (Bool, F32, F32), (Bool, F64, F64), (Bool, C64, C64), (Bool, C128, C128),
            (I64, Bool, I64), (I64, I64, I64), (I64, Bf16, Bf16), (I64, F16, F16),
            (I64, F32, F32), (I64, F64, F64), (I64, C64, C64), (I64, C128, C128),
            (Bf16, Bool, Bf16), (Bf16, I64, Bf16), (Bf16, Bf16, Bf16), (Bf16, F16, Bf16),
            (Bf16, F32, Bf16), (Bf16, F64, Bf16),
            (F16, Bool, F16), (F16, I64, F16), (F16, Bf16, F16), (F16, F16, F16),
            (F16, F32, F16), (F16, F64, F16),
            (F32, Bool, F32), (F32, I64, F32), (F32, Bf16, F32), (F32, F16, F32),
            (F32, F32, F32), (F32, F64, F32), (F32, C64, C64), (F32, C128, C64),
            (F64, Bool, F64), (F64, I64, F64), (F64, Bf16, F64), (F64, F16, F64),
            (F64, F32, F64), (F64, F64, F64), (F64, C64, C128), (F64, C128, C128),
            (C64, Bool, C64), (C64, I64, C64), (C64, Bf16, C64), (C64, F16, C64),
            (C64, F32, C64), (C64, F64, C64), (C64, C64, C64), (C64, C128, C64),
            (C128, Bool, C128), (C128, I64, C128), (C128, Bf16, C128), (C128, F16, C128),
            (C128, F32, C128), (C128, F64, C128), (C128, C64, C128), (C128, C128, C128),
        ];
        for (dim, zero, want) in cases {
            assert_eq!(DType::result_type(dim, false, zero, true), want, "{dim:?} {zero:?}");
            assert_eq!(DType::result_type(zero, true, dim, false), want, "{zero:?} {dim:?}");
            assert_eq!(DType::result_type(dim, true, zero, true), DType::promote(dim, zero));
        }
        assert_eq!(DType::result_type(Bf16, false, C128, true), C64);
    }
}
