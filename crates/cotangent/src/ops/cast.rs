//! dtype conversion.

use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

#[derive(Debug)]
struct Cast;

impl Op for Cast {
    fn name(&self) -> &'static str {
        "to"
    }
    // y = cast(x)  ⇒  gx = cast(gy) back to x's dtype; from real x to complex y, the
    // real part of gy (the imaginary direction is not one x can move in)
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let to = cx.input(0).dtype();
        let g = if g.dtype().is_complex() && !to.is_complex() { g.real()? } else { g.clone() };
        Ok(vec![Some(g.to_dtype(to)?)])
    }
    // linear: ẏ = cast(ẋ) (complex to real: the real part)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(t) = &t[0] else { return Ok(vec![None]) };
        Ok(vec![Some(t.to_dtype(cx.output(0).dtype())?)])
    }
}

impl Tensor {
    /// Converts to `dtype` (`torch.Tensor.to(dtype)`): differentiable between floating
    /// and complex dtypes (the gradient is cast back); a cast to an integer or bool dtype
    /// has no gradient. Float to integer truncates toward zero; float to bool is `x != 0`;
    /// complex to real keeps the real part (PyTorch warns that the imaginary part is
    /// discarded; here it is documented only), and its gradient is `g + 0i`, as
    /// PyTorch's (the cast is [`Tensor::real`] followed by a real cast).
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let x = Tensor::from_vec(vec![1.5f64, -2.5], 2)?;
    /// assert_eq!(x.to_dtype(DType::I64)?.to_vec::<i64>()?, vec![1, -2]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        if self.dtype().is_complex() && dtype.is_floating_point() {
            return self.real()?.to_dtype(dtype);
        }
        let s = self.storage().cast(self.layout(), dtype)?;
        let out = Tensor::from_storage(s, self.shape().clone());
        if !dtype.is_differentiable() {
            return Ok(out);
        }
        record1(Cast, &[self], out, false)
    }
}
