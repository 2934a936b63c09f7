//! Mixed precision: autocast regions, as PyTorch's `torch.autocast("cpu", dtype=...)`
//! (the policy is documented on [`autocast`]).

use std::cell::Cell;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

thread_local! {
    static REGION: Cell<Option<DType>> = const { Cell::new(None) };
}

/// Restores the previous autocast state when dropped.
#[derive(Debug)]
#[must_use = "the autocast state is restored when the guard drops"]
pub(crate) struct Scope {
    prev: Option<DType>,
    /// The state is thread-local: the guard must drop on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        REGION.with(|r| r.set(self.prev));
    }
}

fn set(state: Option<DType>) -> Scope {
    let prev = REGION.with(|r| r.replace(state));
    Scope { prev, _not_send: std::marker::PhantomData }
}

/// Turns autocast off on this thread until the guard drops (backward passes, and the
/// bodies of the ops that have applied the policy to their inputs).
pub(crate) fn suspend() -> Scope {
    set(None)
}

/// Runs `f` in an autocast region of `dtype` on this thread (PyTorch's
/// `with torch.autocast("cpu", dtype=...)`), restoring the previous state after, even if
/// `f` fails or panics. Regions nest; the innermost dtype applies.
///
/// Inside a region, the ops PyTorch's CPU autocast lists run in a policy's dtype,
/// whatever their inputs' floating dtype (f64 excepted: autocast leaves it alone, as
/// PyTorch):
/// - reduced precision (the region's bf16 or f16): the matrix-product family,
///   [`Tensor::matmul`], [`Tensor::mm`], [`Tensor::bmm`], [`Tensor::vecdot`],
///   [`Tensor::multi_dot`], [`Tensor::addmm`], [`Tensor::addbmm`],
///   [`Tensor::baddbmm`], [`Tensor::linear`] (bf16 and f16 products accumulate in f32
///   and round once). The composites PyTorch builds on `matmul` inherit it, as there:
///   [`Tensor::inner`], [`Tensor::matrix_power`], and [`linalg::pinv`](crate::linalg::pinv)
///   (whose result PyTorch's final `matmul` rounds: here it is rounded to the region's
///   dtype).
/// - f32: the decompositions and solvers PyTorch lists (`cholesky`, `cholesky_ex`,
///   `cholesky_solve`, `cholesky_inverse`, `solve`, `inv`, `inv_ex`, `tensorinv`,
///   `tensorsolve`, `qr`, `householder_product`, `eig`, `eigvals`, `eigh`, `eigvalsh`,
///   `svd`, `svdvals`, `lstsq`, `cond`, `matrix_rank`) and [`Tensor::prod`], [`Tensor::trace`]: inputs in
///   bf16 or f16 are computed in f32 and the results stay f32.
/// - every other op runs in its inputs' dtype; inputs of different dtypes promote as
///   PyTorch promotes them (`add(bf16, f32)` is f32; `cat` and `stack` take the widest).
///
/// The casts are recorded ops, so a backward runs each op in the dtype its forward used
/// and gradients reach the inputs in their own dtypes. Backward passes themselves run
/// outside autocast (the engine suspends it), so a `backward()` inside a region changes
/// nothing.
///
/// A typical use trains f32 parameters with bf16 products:
///
/// ```
/// use cotangent::{autocast, DType, Tensor};
/// let w = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], (2, 2))?.with_requires_grad(true)?;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], (1, 2))?;
/// let y = autocast(DType::Bf16, || x.linear(&w, None))?;
/// assert_eq!(y.dtype(), DType::Bf16);
/// let grads = y.to_dtype(DType::F32)?.sum()?.backward()?;
/// assert_eq!(grads.get(&w).unwrap().dtype(), DType::F32); // the parameter's own dtype
/// # Ok::<(), cotangent::Error>(())
/// ```
///
/// Errors: `InvalidArgument` unless `dtype` is `Bf16` or `F16`; otherwise whatever `f`
/// returns.
pub fn autocast<R>(dtype: DType, f: impl FnOnce() -> Result<R>) -> Result<R> {
    if !matches!(dtype, DType::Bf16 | DType::F16) {
        return Err(Error::InvalidArgument {
            op: "autocast",
            arg: "dtype",
            reason: "autocast regions are bf16 or f16 (PyTorch's CPU autocast dtypes)",
        });
    }
    let _scope = set(Some(dtype));
    f()
}

/// The dtype of the autocast region this thread is in, if any.
pub fn autocast_dtype() -> Option<DType> {
    REGION.with(Cell::get)
}

/// Whether autocast casts `t`: a floating tensor other than f64.
fn eligible(t: &Tensor) -> bool {
    t.dtype().is_floating_point() && t.dtype() != DType::F64
}

/// An op's inputs after its policy's casts, with autocast suspended while they live (so
/// that the op, called again on them, runs its own body once).
pub(crate) struct Cast {
    pub(crate) args: Vec<Tensor>,
    _scope: Scope,
}

impl std::ops::Index<usize> for Cast {
    type Output = Tensor;
    fn index(&self, i: usize) -> &Tensor {
        &self.args[i]
    }
}

fn cast_all(args: &[&Tensor], to: DType) -> Result<Cast> {
    let args = args
        .iter()
        .map(|t| if eligible(t) && t.dtype() != to { t.to_dtype(to) } else { Ok((*t).clone()) })
        .collect::<Result<Vec<_>>>()?;
    Ok(Cast { args, _scope: suspend() })
}

/// In an autocast region: `args` in the region's dtype (the reduced-precision policy),
/// for the op to be called again on them. Outside one: `None`.
pub(crate) fn lower(args: &[&Tensor]) -> Result<Option<Cast>> {
    autocast_dtype().map(|d| cast_all(args, d)).transpose()
}

/// In an autocast region: `args` in f32 (the f32 policy), for the op to be called again
/// on them. Outside one: `None`.
pub(crate) fn fp32(args: &[&Tensor]) -> Result<Option<Cast>> {
    autocast_dtype().map(|_| cast_all(args, DType::F32)).transpose()
}
