//! Complex tensors: their parts, modulus and argument, and complex tensors built from real
//! ones (`torch.real`, `imag`, `abs`, `angle`, `complex`, `polar`, `view_as_real`,
//! `view_as_complex`, `conj`).
//!
//! Gradients follow PyTorch's convention for complex tensors: the gradient of a real loss
//! `L` with respect to `z = x + iy` is `∂L/∂x + i ∂L/∂y` (twice the derivative with respect
//! to `z̄`), so the VJP of a holomorphic `f` is `g · conj(f'(z))`, and a real input of an op
//! with a complex output takes the real part of its share. With that convention the
//! gradient of `|z|²` is `2z`, and gradient descent on a real loss of complex parameters
//! works as it does on real ones.

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::backend::ComplexPart;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// A real function of each complex element (or, for `Angle`, of each real one as well).
#[derive(Debug, Clone, Copy)]
struct Part(ComplexPart);

impl Op for Part {
    fn name(&self) -> &'static str {
        part_name(self.0)
    }

    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let z = cx.input(0);
        if !z.dtype().is_complex() {
            // the angle of a real number is 0 or π: flat almost everywhere
            return Ok(vec![Some(g.zeros_like()?)]);
        }
        let zero = g.zeros_like()?;
        let gz = match self.0 {
            // Re z = x  ⇒  gz = g + 0i
            ComplexPart::Re => Tensor::complex(g, &zero)?,
            // Im z = y  ⇒  gz = 0 + ig
            ComplexPart::Im => Tensor::complex(&zero, g)?,
            // |z|  ⇒  gz = g z/|z| (0 at 0, as PyTorch's abs_backward: sgn(0) = 0)
            ComplexPart::Abs => g.mul(&z.sgn()?)?,
            // arg z: d arg = Im(dz / z)  ⇒  gz = g · i z / |z|² (0 at 0)
            ComplexPart::Angle => {
                let a = z.abs()?;
                let w = z.div(&a.mul(&a)?)?;
                let iw = Tensor::complex(&w.imag()?.neg()?, &w.real()?)?;
                let d = iw.mul(g)?;
                Tensor::where_cond(&a.eq_scalar(0.0)?, &d.zeros_like()?, &d)?
            }
        };
        Ok(vec![Some(gz)])
    }

    // Re ż, Im ż; d|z| = Re(conj(sgn z) ż); d arg z = Im(ż / z) (0 at 0); 0 for the
    // angle of a real number
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        let z = cx.input(0);
        if !z.dtype().is_complex() {
            return Ok(vec![Some(t.zeros_like()?)]);
        }
        let d = match self.0 {
            ComplexPart::Re => t.real()?,
            ComplexPart::Im => t.imag()?,
            ComplexPart::Abs => t.mul(&z.sgn()?.conj()?)?.real()?,
            ComplexPart::Angle => {
                let a = z.abs()?;
                let safe = Tensor::where_cond(&a.eq_scalar(0.0)?, &z.ones_like()?, z)?;
                let d = t.div(&safe)?.imag()?;
                Tensor::where_cond(&a.eq_scalar(0.0)?, &d.zeros_like()?, &d)?
            }
        };
        Ok(vec![Some(d)])
    }
}

fn part_name(p: ComplexPart) -> &'static str {
    match p {
        ComplexPart::Re => "real",
        ComplexPart::Im => "imag",
        ComplexPart::Abs => "abs",
        ComplexPart::Angle => "angle",
    }
}

/// `part` of each element of `z` (complex, or real for `Angle`), recorded.
fn part(z: &Tensor, p: ComplexPart) -> Result<Tensor> {
    let s = z.storage().complex_part(z.layout(), p)?;
    let out = Tensor::from_storage(s, z.shape().clone());
    record1(Part(p), &[z], out, false)
}

/// `re + i·im`, both real of one dtype and one shape.
#[derive(Debug)]
struct MakeComplex;

impl Op for MakeComplex {
    fn name(&self) -> &'static str {
        "complex"
    }
    // z = x + iy  ⇒  gx = Re g, gy = Im g
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let re = if cx.needs_input_grad(0) { Some(g.real()?) } else { None };
        let im = if cx.needs_input_grad(1) { Some(g.imag()?) } else { None };
        Ok(vec![re, im])
    }
    // ż = ẋ + iẏ
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let part = |i: usize| t[i].clone().map_or_else(|| cx.input(i).zeros_like(), Ok);
        Ok(vec![Some(Tensor::complex(&part(0)?, &part(1)?)?)])
    }
}

impl Tensor {
    /// The complex conjugate `x - iy` (`torch.conj`, computed rather than a lazy view);
    /// a real tensor is returned as it is. Gradient: the conjugate of the cotangent.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let z = Tensor::complex(&Tensor::from_vec(vec![1.0f64], 1)?, &Tensor::from_vec(vec![2.0f64], 1)?)?;
    /// assert_eq!(z.conj()?.imag()?.to_vec::<f64>()?, vec![-2.0]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn conj(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        self.conj_physical()
    }

    /// The real parts (`torch.real`): a real tensor of the same precision (`C64 -> F32`,
    /// `C128 -> F64`); a real tensor is returned as it is. Gradient: `g + 0i`.
    pub fn real(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        part(self, ComplexPart::Re)
    }

    /// The imaginary parts (`torch.imag`), real, of the same precision. Gradient: `0 + ig`.
    ///
    /// Errors: `UnsupportedDType` for a real tensor (as PyTorch, which has no imaginary
    /// part to view).
    pub fn imag(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(Error::UnsupportedDType { op: "imag", dtype: self.dtype() });
        }
        part(self, ComplexPart::Im)
    }

    /// The argument of each element, `atan2(y, x)` in `[-π, π]` (`torch.angle`): real, of
    /// the same precision; for a real tensor `π` where `x < 0`, else 0 (NaN kept).
    /// Gradient (complex): `g · i z / |z|²`, 0 at `z = 0`; zero for a real tensor.
    ///
    /// ```
    /// # use cotangent::Tensor;
    /// let z = Tensor::complex(&Tensor::from_vec(vec![0.0f64], 1)?, &Tensor::from_vec(vec![1.0f64], 1)?)?;
    /// assert_eq!(z.angle()?.to_vec::<f64>()?, vec![std::f64::consts::FRAC_PI_2]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn angle(&self) -> Result<Tensor> {
        match self.dtype() {
            d if d.is_complex() || d.is_floating_point() => part(self, ComplexPart::Angle),
            _ => self.to_dtype(DType::F32)?.angle(),
        }
    }

    /// The modulus `|z| = √(x² + y²)` of a complex tensor, real (computed without
    /// overflow in the squares).
    pub(crate) fn complex_abs(&self) -> Result<Tensor> {
        part(self, ComplexPart::Abs)
    }

    /// The complex tensor `re + i·im` (`torch.complex`): `re` and `im` real of one
    /// floating dtype (`F32` gives `C64`, `F64` gives `C128`), broadcast together.
    /// Gradients: the real and imaginary parts of the cotangent.
    ///
    /// Errors: `DTypeMismatch` if the dtypes differ or are not `F32`/`F64`;
    /// `ShapeMismatch` if the shapes do not broadcast.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let z = Tensor::complex(&Tensor::ones(2, DType::F64)?, &Tensor::zeros(2, DType::F64)?)?;
    /// assert_eq!(z.dtype(), DType::C128);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn complex(re: &Tensor, im: &Tensor) -> Result<Tensor> {
        const OP: &str = "complex";
        if re.dtype() != im.dtype() || !matches!(re.dtype(), DType::F32 | DType::F64) {
            return Err(Error::DTypeMismatch { op: OP, lhs: re.dtype(), rhs: im.dtype() });
        }
        let (re, im) = if re.dims() == im.dims() {
            (re.clone(), im.clone())
        } else {
            let shape = broadcast_shapes(OP, re.shape(), im.shape())?;
            (re.broadcast_to(shape.clone())?, im.broadcast_to(shape)?)
        };
        let s = re.storage().complex(re.layout(), im.storage(), im.layout())?;
        let out = Tensor::from_storage(s, re.shape().clone());
        record1(MakeComplex, &[&re, &im], out, false)
    }

    /// `abs · e^(i·angle)` (`torch.polar`): `abs` and `angle` real of one floating dtype,
    /// broadcast together. Differentiable in both (composed of tensor ops).
    pub fn polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
        if abs.dtype() != angle.dtype() || !matches!(abs.dtype(), DType::F32 | DType::F64) {
            return Err(Error::DTypeMismatch { op: "polar", lhs: abs.dtype(), rhs: angle.dtype() });
        }
        Tensor::complex(&abs.mul(&angle.cos()?)?, &abs.mul(&angle.sin()?)?)
    }

    /// The real and imaginary parts side by side in a new last dim of size 2
    /// (`torch.view_as_real`; a copy here, not a view). Differentiable.
    ///
    /// Errors: `UnsupportedDType` for a real tensor.
    pub fn view_as_real(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(Error::UnsupportedDType { op: "view_as_real", dtype: self.dtype() });
        }
        Tensor::stack(&[&self.real()?, &self.imag()?], -1)
    }

    /// The complex tensor whose real and imaginary parts are the last dim (of size 2) of a
    /// real `F32`/`F64` tensor (`torch.view_as_complex`; a copy here). Differentiable.
    ///
    /// Errors: `UnsupportedDType` for other dtypes; `BadShape` if the last dim is not 2.
    pub fn view_as_complex(&self) -> Result<Tensor> {
        const OP: &str = "view_as_complex";
        if !matches!(self.dtype(), DType::F32 | DType::F64) {
            return Err(Error::UnsupportedDType { op: OP, dtype: self.dtype() });
        }
        if self.dims().last() != Some(&2) {
            return Err(Error::BadShape {
                op: OP,
                expected: "a last dim of size 2",
                got: self.shape().clone(),
            });
        }
        Tensor::complex(&self.select(-1, 0)?, &self.select(-1, 1)?)
    }
}
