//! Creation functions and the seeded random generator.

use super::Tensor;
use crate::backend::Storage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostBuffer;
use crate::shape::Shape;

/// A seeded pseudo-random generator (xoshiro256**): the same seed gives the same numbers
/// on every machine. Passed explicitly to [`Tensor::rand`] and [`Tensor::randn`]; there is
/// no global random state.
#[derive(Debug, Clone)]
pub struct Generator {
    s: [u64; 4],
}

impl Generator {
    /// A generator seeded with `seed` (expanded by SplitMix64).
    pub fn new(seed: u64) -> Generator {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Generator { s: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform sample in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal sample (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// `n` standard normal samples.
    pub fn normal_vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.normal()).collect()
    }

    /// `n` uniform samples in `[0, 1)`.
    pub fn uniform_vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.uniform()).collect()
    }
}

fn float_only(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_floating_point() {
        Ok(())
    } else {
        Err(Error::UnsupportedDType { op, dtype })
    }
}

fn from_f64(op: &'static str, v: Vec<f64>, shape: Shape, dtype: DType) -> Result<Tensor> {
    let s = Storage::from_host(Device::Cpu, HostBuffer::F64(v))?;
    let n = shape.checked_numel(op)?;
    let l = crate::layout::Layout::contiguous(Shape::from(n));
    Ok(Tensor::from_storage(s.cast(&l, dtype)?, shape))
}

impl Tensor {
    /// A tensor of zeros.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// let z = Tensor::zeros((2, 3), DType::F32)?;
    /// assert_eq!(z.to_vec::<f32>()?, vec![0.0; 6]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn zeros(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.checked_numel("zeros")?;
        Ok(Tensor::from_storage(Storage::zeros(Device::Cpu, n, dtype)?, shape))
    }

    /// A tensor of ones.
    pub fn ones(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype)
    }

    /// A tensor filled with `value` (converted to the dtype).
    pub fn full(shape: impl Into<Shape>, value: f64, dtype: DType) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.checked_numel("full")?;
        let one = from_f64("full", vec![value], Shape::from(()), dtype)?;
        Ok(Tensor::from_storage(
            one.storage().copy_strided(&one.layout().broadcast_to(&Shape::from(n)))?,
            shape,
        ))
    }

    /// Zeros of this tensor's shape and dtype.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape().clone(), self.dtype())
    }

    /// Ones of this tensor's shape and dtype.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape().clone(), self.dtype())
    }

    /// `value` in this tensor's shape and dtype.
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        Tensor::full(self.shape().clone(), value, self.dtype())
    }

    /// The `n x n` identity matrix.
    pub fn eye(n: usize, dtype: DType) -> Result<Tensor> {
        let nn = Shape::from((n, n)).checked_numel("eye")?;
        let mut v = vec![0.0; nn];
        for i in 0..n {
            v[i * n + i] = 1.0;
        }
        from_f64("eye", v, Shape::from((n, n)), dtype)
    }

    /// `[start, start + step, ...]` up to `end` (excluded), as `torch.arange`.
    ///
    /// Errors: `InvalidArgument` if `step` is zero, or its sign does not lead from `start`
    /// to `end`, or a bound is not finite.
    ///
    /// ```
    /// # use cotangent::{DType, Tensor};
    /// assert_eq!(Tensor::arange(0.0, 5.0, 2.0, DType::I64)?.to_vec::<i64>()?, vec![0, 2, 4]);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        const OP: &str = "arange";
        if !(start.is_finite() && end.is_finite() && step.is_finite()) {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "start",
                reason: "bounds must be finite",
            });
        }
        if step == 0.0 {
            return Err(Error::InvalidArgument { op: OP, arg: "step", reason: "must be nonzero" });
        }
        if (end - start) * step < 0.0 {
            return Err(Error::InvalidArgument {
                op: OP,
                arg: "step",
                reason: "upper bound and larger bound inconsistent with step sign",
            });
        }
        let n = ((end - start) / step).ceil();
        if n > 1e15 {
            return Err(Error::SizeOverflow { op: OP, shape: vec![usize::MAX] });
        }
        let n = n as usize;
        let v = (0..n).map(|i| start + i as f64 * step).collect();
        from_f64(OP, v, Shape::from(n), dtype)
    }

    /// `steps` values evenly spaced from `start` to `end` inclusive, as `torch.linspace`.
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        const OP: &str = "linspace";
        Shape::from(steps).checked_numel(OP)?;
        let v: Vec<f64> = if steps == 1 {
            vec![start]
        } else {
            let step = (end - start) / (steps - 1) as f64;
            let half = steps / 2;
            (0..steps)
                .map(|i| {
                    if i < half {
                        start + step * i as f64
                    } else {
                        end - step * (steps - 1 - i) as f64
                    }
                })
                .collect()
        };
        from_f64(OP, v, Shape::from(steps), dtype)
    }

    /// Uniform samples in `[0, 1)` from `gen` (floating dtypes; for complex ones, the real
    /// and the imaginary parts each uniform in `[0, 1)`, as `torch.rand`).
    ///
    /// ```
    /// # use cotangent::{DType, Generator, Tensor};
    /// let mut gen = Generator::new(42);
    /// let a = Tensor::rand((2, 2), DType::F64, &mut gen)?;
    /// let b = Tensor::rand((2, 2), DType::F64, &mut Generator::new(42))?;
    /// assert_eq!(a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    /// # Ok::<(), cotangent::Error>(())
    /// ```
    pub fn rand(shape: impl Into<Shape>, dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        let shape = shape.into();
        if dtype.is_complex() {
            let re = Tensor::rand(shape.clone(), dtype.to_real(), gen)?;
            return Tensor::complex(&re, &Tensor::rand(shape, dtype.to_real(), gen)?);
        }
        float_only("rand", dtype)?;
        let n = shape.checked_numel("rand")?;
        from_f64("rand", gen.uniform_vec(n), shape, dtype)
    }

    /// Standard normal samples from `gen` (floating dtypes; for complex ones, `E|z|² = 1`
    /// with independent parts of variance 1/2, as `torch.randn`).
    pub fn randn(shape: impl Into<Shape>, dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        let shape = shape.into();
        if dtype.is_complex() {
            let part = |gen: &mut Generator| {
                Tensor::randn(shape.clone(), dtype.to_real(), gen)?
                    .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)
            };
            let re = part(gen)?;
            return Tensor::complex(&re, &part(gen)?);
        }
        float_only("randn", dtype)?;
        let n = shape.checked_numel("randn")?;
        from_f64("randn", gen.normal_vec(n), shape, dtype)
    }
}
