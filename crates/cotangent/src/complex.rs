//! Complex arithmetic for the CPU kernels: [`ComplexFloat`], implemented for
//! `Complex<f32>` (`C64`) and `Complex<f64>` (`C128`).
//!
//! The elementary functions take their principal branches, as C99's `cexp`, `clog`,
//! `csqrt` (and so `std::complex` and PyTorch) define them: `ln` and `sqrt` cut along the
//! negative real axis, continuous from above, with the sign of a zero imaginary part
//! choosing the side. Division scales by the larger part of the divisor (Smith's method,
//! as NumPy and PyTorch divide), so quotients of numbers near the ends of the exponent
//! range neither overflow nor underflow where the true quotient is representable; the
//! modulus is `hypot`, for the same reason.

use num_complex::Complex;

use crate::dtype::{Element, Float};

/// A complex element type with `Real` parts: the arithmetic the complex kernels are
/// written in, once for both precisions.
pub(crate) trait ComplexFloat:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
{
    /// The type of the real and imaginary parts.
    type Real: Float;
    /// `re + i im`.
    fn new(re: Self::Real, im: Self::Real) -> Self;
    /// The real part.
    fn re(self) -> Self::Real;
    /// The imaginary part.
    fn im(self) -> Self::Real;
    /// `self · o`.
    fn mul(self, o: Self) -> Self;
    /// `self / o`, scaled (Smith's method); `x / 0` is a complex infinity or NaN.
    fn div(self, o: Self) -> Self;
    /// `self · s` for a real `s`.
    fn scale(self, s: Self::Real) -> Self {
        Self::new(self.re() * s, self.im() * s)
    }
    /// The complex conjugate.
    fn conj(self) -> Self {
        Self::new(self.re(), -self.im())
    }
    /// `|z|`, without overflow or underflow in the squares.
    fn abs(self) -> Self::Real;
    /// The argument `atan2(im, re)`, in `[-π, π]`.
    fn arg(self) -> Self::Real {
        self.im().atan2(self.re())
    }
    /// `e^z`.
    fn exp(self) -> Self;
    /// The principal natural logarithm.
    fn ln(self) -> Self;
    /// The principal square root (non-negative real part).
    fn sqrt(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The principal `self^e` for a real exponent.
    fn powf(self, e: Self::Real) -> Self;
    /// The principal `self^e`, `exp(e ln self)`.
    fn powc(self, e: Self) -> Self;
}

/// The elementary functions of `Complex<f64>` (num-complex's, with the principal
/// branches), and of `Complex<f32>` through them: computed in `f64` and rounded once, so
/// that `C64` is as accurate as C's `ctanhf` and the like (the `f32` formulas lose
/// several digits near the poles of `tanh`).
macro_rules! transcendental {
    (f64) => {
        #[inline]
        fn exp(self) -> Self {
            Complex::exp(self)
        }
        #[inline]
        fn ln(self) -> Self {
            Complex::new(self.re.hypot(self.im).ln(), self.im.atan2(self.re))
        }
        #[inline]
        fn sqrt(self) -> Self {
            Complex::sqrt(self)
        }
        #[inline]
        fn sin(self) -> Self {
            Complex::sin(self)
        }
        #[inline]
        fn cos(self) -> Self {
            Complex::cos(self)
        }
        #[inline]
        fn tanh(self) -> Self {
            Complex::tanh(self)
        }
        #[inline]
        fn powf(self, e: f64) -> Self {
            if e == 2.0 {
                self * self
            } else if e == 1.0 {
                self
            } else if e == 0.5 {
                Complex::sqrt(self)
            } else if e == 0.0 {
                Complex::new(1.0, 0.0)
            } else if self.re == 0.0 && self.im == 0.0 {
                // 0^e: 0 for e > 0, infinite for e < 0 (C99's cpow via exp(e ln 0))
                if e > 0.0 {
                    Complex::new(0.0, 0.0)
                } else {
                    Complex::new(f64::INFINITY, 0.0)
                }
            } else {
                Complex::powf(self, e)
            }
        }
        #[inline]
        fn powc(self, e: Self) -> Self {
            if e.im == 0.0 {
                return ComplexFloat::powf(self, e.re);
            }
            ComplexFloat::exp(ComplexFloat::ln(self) * e)
        }
    };
    (f32) => {
        #[inline]
        fn exp(self) -> Self {
            narrow(ComplexFloat::exp(wide(self)))
        }
        #[inline]
        fn ln(self) -> Self {
            narrow(ComplexFloat::ln(wide(self)))
        }
        #[inline]
        fn sqrt(self) -> Self {
            narrow(ComplexFloat::sqrt(wide(self)))
        }
        #[inline]
        fn sin(self) -> Self {
            narrow(ComplexFloat::sin(wide(self)))
        }
        #[inline]
        fn cos(self) -> Self {
            narrow(ComplexFloat::cos(wide(self)))
        }
        #[inline]
        fn tanh(self) -> Self {
            narrow(ComplexFloat::tanh(wide(self)))
        }
        #[inline]
        fn powf(self, e: f32) -> Self {
            if e == 2.0 {
                return self * self;
            }
            narrow(ComplexFloat::powf(wide(self), f64::from(e)))
        }
        #[inline]
        fn powc(self, e: Self) -> Self {
            if e.im == 0.0 && e.re == 2.0 {
                return self * self;
            }
            narrow(ComplexFloat::powc(wide(self), wide(e)))
        }
    };
}

fn wide(z: Complex<f32>) -> Complex<f64> {
    Complex::new(f64::from(z.re), f64::from(z.im))
}

fn narrow(z: Complex<f64>) -> Complex<f32> {
    Complex::new(z.re as f32, z.im as f32)
}

macro_rules! complex_float {
    ($t:ident) => {
        impl ComplexFloat for Complex<$t> {
            type Real = $t;
            #[inline(always)]
            fn new(re: $t, im: $t) -> Self {
                Complex::new(re, im)
            }
            #[inline(always)]
            fn re(self) -> $t {
                self.re
            }
            #[inline(always)]
            fn im(self) -> $t {
                self.im
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline]
            fn div(self, o: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, o.re, o.im);
                if c.abs() >= d.abs() {
                    if c == 0.0 && d == 0.0 {
                        // a complex infinity, or NaN for 0/0
                        return Complex::new(a / c.abs(), b / d.abs());
                    }
                    let r = d / c;
                    let s = 1.0 / (c + d * r);
                    Complex::new((a + b * r) * s, (b - a * r) * s)
                } else {
                    let r = c / d;
                    let s = 1.0 / (d + c * r);
                    Complex::new((a * r + b) * s, (b * r - a) * s)
                }
            }
            #[inline]
            fn abs(self) -> $t {
                // the square root of the sum of squares where that sum is a normal number
                // (within an ulp of hypot, several times faster), else hypot
                let s = self.re * self.re + self.im * self.im;
                if s.is_finite() && s >= $t::MIN_POSITIVE {
                    s.sqrt()
                } else {
                    self.re.hypot(self.im)
                }
            }
            transcendental!($t);
        }
    };
}

complex_float!(f32);
complex_float!(f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_is_scaled() {
        // (1e300 + 1e300 i) / (1e300 + 1e300 i) = 1: the unscaled formula overflows to NaN
        let z = Complex::new(1e300f64, 1e300);
        let q = ComplexFloat::div(z, z);
        assert_eq!((q.re, q.im), (1.0, 0.0));
        // (1 + 2i) / (3 + 4i) = (11 + 2i) / 25
        let q = ComplexFloat::div(Complex::new(1.0f64, 2.0), Complex::new(3.0, 4.0));
        assert!((q.re - 0.44).abs() < 1e-16 && (q.im - 0.08).abs() < 1e-16);
        // |d| > |c| branch: (1 + 2i) / (1 + 4i) = (9 - 2i) / 17
        let q = ComplexFloat::div(Complex::new(1.0f64, 2.0), Complex::new(1.0, 4.0));
        assert!((q.re - 9.0 / 17.0).abs() < 1e-16 && (q.im + 2.0 / 17.0).abs() < 1e-16);
        let inf = ComplexFloat::div(Complex::new(1.0f64, 0.0), Complex::new(0.0, 0.0));
        assert!(inf.re.is_infinite());
    }

    #[test]
    fn branches_are_principal() {
        // sqrt(-4 ± 0i) = ±2i; ln(-1 ± 0i) = ±πi
        let s = ComplexFloat::sqrt(Complex::new(-4.0f64, 0.0));
        assert_eq!((s.re, s.im), (0.0, 2.0));
        let s = ComplexFloat::sqrt(Complex::new(-4.0f64, -0.0));
        assert_eq!((s.re, s.im), (0.0, -2.0));
        let l = ComplexFloat::ln(Complex::new(-1.0f64, -0.0));
        assert_eq!((l.re, l.im), (0.0, -std::f64::consts::PI));
        // |3e200 + 4e200 i| = 5e200 without overflow
        assert!((ComplexFloat::abs(Complex::new(3e200f64, 4e200)) / 5e200 - 1.0).abs() < 1e-15);
        // i^i = e^(-π/2)
        let i = Complex::new(0.0f64, 1.0);
        let p = i.powc(i);
        assert!((p.re - (-std::f64::consts::FRAC_PI_2).exp()).abs() < 1e-16 && p.im.abs() < 1e-16);
    }
}
