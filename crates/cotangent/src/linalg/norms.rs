//! Norms and condition numbers: `linalg.vector_norm`, `linalg.matrix_norm`, `linalg.norm`
//! and `linalg.cond`, batched over the dims they do not reduce.
//!
//! `vector_norm` is an explicit composite: its forward is one reduction kernel (plain
//! multiply-adds, rescaled only on overflow or underflow; `backend/cpu/norm.rs`), and its
//! VJP is written by hand (PyTorch's `norm_backward`) so that the gradient is 0 rather
//! than NaN at `x = 0`, tied extremes of the `±inf` norms share it evenly, and the `0`
//! "norm" has none; the VJP is made of tensor ops, so it is differentiable again (when no
//! graph is recorded, one fused kernel pass computes the same rule for finite orders).
//! `matrix_norm`, `norm` and `cond` are implicit composites of `vector_norm`, `amax` /
//! `amin`, `inv_ex` and the singular values (`svdvals`, whose VJP `U diag(g) Vᵀ` needs no
//! gap between singular values, so the spectral norms have finite gradients at repeated
//! singular values).

use super::util::{batch_of, check_float, check_float_or_complex, check_matrix, check_square};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{resolve_dims, Shape};
use crate::tensor::Tensor;

const OP_V: &str = "linalg.vector_norm";
const OP_M: &str = "linalg.matrix_norm";
const OP_N: &str = "linalg.norm";
const OP_C: &str = "linalg.cond";

/// The order of a vector or matrix norm (PyTorch's `ord` / `p`: a number, `'fro'` or
/// `'nuc'`).
///
/// `NormOrd::P(f64::INFINITY)` (or [`NormOrd::INF`]) is PyTorch's `inf`. `From<f64>` gives
/// `P`, so [`vector_norm`] takes a plain `f64` too, and `2.0.into()` reads as PyTorch's
/// `ord=2`. Vector norms take the numeric orders only; `Fro` and `Nuc` are matrix norms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NormOrd {
    /// A numeric order: for matrices `1`, `-1` (max/min column sum of `|a|`), `2`, `-2`
    /// (largest/smallest singular value), `inf`, `-inf` (max/min row sum); for vectors
    /// any `p` (see [`vector_norm`]).
    P(f64),
    /// The Frobenius norm `sqrt(Σ a²)` (`'fro'`).
    Fro,
    /// The nuclear norm, the sum of the singular values (`'nuc'`).
    Nuc,
}

impl NormOrd {
    /// The 1-norm (`ord=1`): `Σ |x_i|`, or the max column sum of a matrix.
    pub const L1: NormOrd = NormOrd::P(1.0);
    /// The 2-norm (`ord=2`): `sqrt(Σ |x_i|²)`, or the largest singular value of a matrix.
    pub const L2: NormOrd = NormOrd::P(2.0);
    /// `ord=inf`: `max |x_i|`, or the max row sum of a matrix.
    pub const INF: NormOrd = NormOrd::P(f64::INFINITY);
    /// `ord=-inf`: `min |x_i|`, or the min row sum of a matrix.
    pub const NEG_INF: NormOrd = NormOrd::P(f64::NEG_INFINITY);
}

impl From<f64> for NormOrd {
    fn from(p: f64) -> NormOrd {
        NormOrd::P(p)
    }
}

/// The singular values of each matrix of `a: (*, m, n)`, descending, `(*, min(m, n))`,
/// with the gap-free VJP `U diag(g) Vᵀ`: every spectral order (matrix_norm `'nuc'`, `±2`;
/// cond `None`, `±2`, `'nuc'`) goes through here and nowhere else.
fn singular_values(a: &Tensor) -> Result<Tensor> {
    super::svdvals(a)
}

#[derive(Debug)]
struct VectorNorm {
    ord: f64,
    /// The reduced dims (resolved).
    dims: Vec<usize>,
    /// The keepdim shape of the output, to broadcast cotangents back.
    keep: Shape,
}

/// `t` with zeros where `cond` holds.
fn zero_where(cond: &Tensor, t: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(cond, &t.zeros_like()?, t)
}

/// `t` with ones where `cond` holds (a safe divisor or base whose other branch is masked:
/// the masked branch then has a finite derivative, so no `0 · inf` reaches the gradient).
fn one_where(cond: &Tensor, t: &Tensor) -> Result<Tensor> {
    Tensor::where_cond(cond, &t.ones_like()?, t)
}

impl Op for VectorNorm {
    fn name(&self) -> &'static str {
        OP_V
    }

    // y = (Σ |x|^p)^(1/p)  ⇒  ∂y/∂x = sgn(x) |x|^(p-1) / y^(p-1)   (PyTorch norm_backward,
    // FunctionsManual.cpp), by cases:
    //   p = 0:    zero (a count);                 p = 1: sgn(x) g;
    //   p = 2:    x g / y, and 0 where y = 0 (the subgradient; PyTorch masks it too);
    //   p = ±inf: sgn(x) g / #ties on the entries with |x| = y (or NaN): ties share evenly;
    //   p < 1:    sgn(x) |x|^(p-1) y^(1-p) g, with 0 where x = 0;
    //   p > 1:    sgn(x) |x|^(p-1) g / y^(p-1), with 0 where y = 0.
    // Every masked branch gets a safe operand (1) so its derivative stays finite; the
    // whole rule is tensor ops on x and the saved (re-linked) y, so it differentiates
    // again to the Hessian of the norm.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let x = cx.input(0);
        let p = self.ord;
        if p == 0.0 {
            return Ok(vec![Some(x.zeros_like()?)]);
        }
        let g = g.reshape(self.keep.clone())?;
        if p == 1.0 {
            return Ok(vec![Some(x.sign()?.mul(&g)?)]);
        }
        let y = cx.output(0)?.reshape(self.keep.clone())?;
        if !cx.create_graph() && p.is_finite() {
            // the same rule, fused in one pass over x (no graph to record)
            let fused = x.storage().vector_norm_backward(
                x.layout(),
                &self.dims,
                p,
                y.operand(),
                g.operand(),
            )?;
            if let Some(s) = fused {
                return Ok(vec![Some(Tensor::from_storage(s, x.shape().clone()))]);
            }
        }
        Ok(vec![Some(self.rule(x, &y, &g)?)])
    }

    // ẏ = Σ Re(conj(∂) ẋ) over the reduced dims, ∂ = ∂y/∂x as the VJP writes it (its
    // value at g = 1: the rule is linear in g), so every case and mask is the VJP's
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(dx) = &t[0] else { return Ok(vec![None]) };
        let (x, y) = (cx.input(0), cx.output(0));
        if self.ord == 0.0 {
            return Ok(vec![Some(y.zeros_like()?)]);
        }
        let yk = y.reshape(self.keep.clone())?;
        let d = self.rule(x, &yk, &yk.ones_like()?)?;
        let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
        let prod = d.conj()?.mul(dx)?;
        let prod = if prod.dtype().is_complex() { prod.real()? } else { prod };
        Ok(vec![Some(prod.sum_dims(&dims, true)?.reshape(y.shape().clone())?)])
    }
}

impl VectorNorm {
    /// The VJP in tensor ops (`ord ≠ 0`): `g ∂y/∂x` for `y` and `g` of the keepdim shape.
    fn rule(&self, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
        let p = self.ord;
        if p == 1.0 {
            return x.sign()?.mul(g);
        }
        let gx = if p.is_infinite() {
            let ax = x.detach().abs()?;
            let yd = y.detach();
            let hit = ax.eq(&yd)?.to_dtype(x.dtype())?.add(&ax.ne(&ax)?.to_dtype(x.dtype())?)?;
            let dims: Vec<isize> = self.dims.iter().map(|&d| d as isize).collect();
            let count = hit.sum_dims(&dims, true)?;
            // sgn(NaN) = 0, as PyTorch's sign: a NaN norm has a zero gradient
            let sgn = zero_where(&x.ne(x)?, &x.sign()?)?;
            sgn.mul(&hit)?.mul(&g.div(&count)?)?
        } else if p == 2.0 {
            let y0 = y.eq_scalar(0.0)?;
            x.mul(&zero_where(&y0, &g.div(&one_where(&y0, y)?)?)?)?
        } else if p < 1.0 {
            let x0 = x.eq_scalar(0.0)?;
            let ax = one_where(&x0, &x.abs()?)?;
            let scaled = zero_where(&x0, &x.sign()?.mul(&ax.pow_scalar(p - 1.0)?)?)?;
            scaled.mul(g)?.mul(&y.pow_scalar(1.0 - p)?)?
        } else {
            let y0 = y.eq_scalar(0.0)?;
            let scale = zero_where(&y0, &g.div(&one_where(&y0, y)?.pow_scalar(p - 1.0)?)?)?;
            let scaled = if p < 2.0 {
                x.sign()?.mul(&x.abs()?.pow_scalar(p - 1.0)?)?
            } else {
                x.mul(&x.abs()?.pow_scalar(p - 2.0)?)?
            };
            scaled.mul(&scale)?
        };
        Ok(gx)
    }
}

/// The vector norm of `x` over `dim` (`torch.linalg.vector_norm`; an explicit composite:
/// one reduction kernel, a hand-written VJP).
///
/// Math: `‖x‖_p = (Σ |x_i|^p)^(1/p)` over the elements of the dims in `dim` (`None`, or an
/// empty list, reduces every element, whatever the shape), for every `ord`: `2` (the
/// default in PyTorch), `1`, `inf` (`max |x_i|`), `-inf` (`min |x_i|`), `0` (the number of
/// non-zero entries) and any other `p`, negative and fractional included. `ord` is an
/// `f64` or a numeric [`NormOrd`] (`NormOrd::INF`, ...).
/// Shapes: the dims in `dim` are removed (kept with size 1 if `keepdim`); a 0-d input is a
/// vector of one element.
/// Dtypes: f32, f64; bf16 and f16 are computed in f32 and rounded back; c64 and c128 give
/// the (real) norm of the moduli `|z|`, its gradient through them (`g z/|z|`, 0 at 0).
///
/// The forward is plain multiply-add accumulation, as fast on values below 1 as above;
/// only a sum that overflows, or is so small that subnormal terms lost digits, is
/// recomputed scaled by the largest magnitude, so the norm of `[1e200, 1e200]` is
/// `1.41e200` and that of `[1e-200, 1e-200]` `1.41e-200` (PyTorch: `inf` and `0`). NaN
/// propagates (also through `±inf`).
///
/// Gradient (PyTorch's): `sgn(x) |x|^(p-1) / ‖x‖^(p-1)`, taken as 0 where it is 0/0 (the
/// 2-norm at `x = 0`, any entry `x_i = 0` when `p < 1`); tied maxima (minima) of the
/// `inf` (`-inf`) norm share the gradient evenly; the `0` norm has a zero gradient.
/// Differentiable to any order away from the kinks (`x_i = 0`, ties).
///
/// Errors: `UnsupportedDType` for integer and bool inputs; `DimOutOfRange`, or
/// `InvalidArgument` for a repeated dim; `InvalidArgument` for `ord = inf` or `ord < 0`
/// on an empty input reduced whole or along an empty dim (no identity), as PyTorch;
/// `InvalidArgument` for `NormOrd::Fro` and `NormOrd::Nuc` (PyTorch takes numbers only).
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{vector_norm, NormOrd};
/// let x = Tensor::from_vec(vec![3.0f64, -4.0, 0.0, 1.0], (2, 2))?;
/// assert_eq!(vector_norm(&x, 2.0, None, false)?.item::<f64>()?, 26f64.sqrt());
/// assert_eq!(vector_norm(&x, NormOrd::INF, Some(&[1]), false)?.to_vec::<f64>()?, vec![4.0, 1.0]);
/// assert_eq!(vector_norm(&x, 0.0, Some(&[0]), true)?.to_vec::<f64>()?, vec![1.0, 2.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn vector_norm(
    x: &Tensor,
    ord: impl Into<NormOrd>,
    dim: Option<&[isize]>,
    keepdim: bool,
) -> Result<Tensor> {
    match ord.into() {
        NormOrd::P(p) => vector_norm_p(x, p, dim, keepdim),
        NormOrd::Fro | NormOrd::Nuc => Err(Error::InvalidArgument {
            op: OP_V,
            arg: "ord",
            reason: "vector norms have numeric orders; 'fro' and 'nuc' are matrix norms",
        }),
    }
}

/// [`vector_norm`] of a numeric order.
fn vector_norm_p(x: &Tensor, ord: f64, dim: Option<&[isize]>, keepdim: bool) -> Result<Tensor> {
    if x.dtype().is_complex() {
        // the norm of the moduli: the same value, and the gradient through `abs`
        // (`g · z/|z|`, 0 at 0), as PyTorch's
        return vector_norm_p(&x.abs()?, ord, dim, keepdim);
    }
    check_float(OP_V, x)?;
    let rank = x.rank();
    let listed = match dim {
        Some(d) if !d.is_empty() => Some(d),
        _ => None,
    };
    let mut dims = match listed {
        Some(d) => resolve_dims(OP_V, d, rank)?,
        None => (0..rank).collect(),
    };
    if rank == 0 {
        dims.clear();
    }
    if x.numel() == 0
        && (ord < 0.0 || ord == f64::INFINITY)
        && (listed.is_none() || dims.iter().any(|&i| x.dims()[i] == 0))
    {
        return Err(Error::InvalidArgument {
            op: OP_V,
            arg: "ord",
            reason: "the inf and negative norms of an empty tensor, or along an empty dim, \
                     are undefined (no identity)",
        });
    }
    if x.dtype().is_half() {
        return vector_norm_p(&x.to_dtype(DType::F32)?, ord, dim, keepdim)?.to_dtype(x.dtype());
    }
    let keep: Vec<usize> =
        x.dims().iter().enumerate().map(|(i, &n)| if dims.contains(&i) { 1 } else { n }).collect();
    let out: Vec<usize> = if keepdim {
        keep.clone()
    } else {
        x.dims().iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &n)| n).collect()
    };
    let s = x.storage().vector_norm(x.layout(), &dims, ord)?;
    let y = Tensor::from_storage(s, Shape::new(out));
    record1(VectorNorm { ord, dims, keep: Shape::new(keep) }, &[x], y, true)
}

/// The max (`max`) or min over `dim` of a tensor of non-negative values; an empty `dim`
/// gives 0 for the max (the identity of a max of norms) and an error for the min, as
/// PyTorch's `matrix_norm`.
fn extreme(t: &Tensor, dim: usize, keepdim: bool, max: bool) -> Result<Tensor> {
    if t.dims()[dim] == 0 {
        if !max {
            return Err(Error::InvalidArgument {
                op: OP_M,
                arg: "ord",
                reason: "the -1, -2 and -inf norms of a matrix with no rows or columns are \
                         undefined (a minimum over nothing)",
            });
        }
        return t.sum_dims(&[dim as isize], keepdim);
    }
    if max {
        t.amax(&[dim as isize], keepdim)
    } else {
        t.amin(&[dim as isize], keepdim)
    }
}

/// `f` of the singular values of the matrices spanned by dims `d0`, `d1` of `a`, with the
/// two dims removed (or kept with size 1).
fn spectral(
    a: &Tensor,
    d0: usize,
    d1: usize,
    keepdim: bool,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let r = a.rank();
    let mut perm: Vec<isize> = (0..r).filter(|&i| i != d0 && i != d1).map(|i| i as isize).collect();
    perm.extend([d0 as isize, d1 as isize]);
    let y = f(&singular_values(&a.permute(&perm)?)?)?;
    if keepdim {
        y.unsqueeze(d0.min(d1) as isize)?.unsqueeze(d0.max(d1) as isize)
    } else {
        Ok(y)
    }
}

/// The matrix norm of the matrices spanned by `dim` (`torch.linalg.matrix_norm`; an
/// implicit composite).
///
/// Math, for each matrix `A` (`m × n`) of `a` over the dims `dim` (PyTorch's default
/// `[-2, -1]`):
///
/// | `ord` | norm |
/// |---|---|
/// | `Fro` | `sqrt(Σ a_ij²)` (the vector 2-norm, through [`vector_norm`]) |
/// | `Nuc` | `Σ σ_i`, the sum of the singular values |
/// | `P(2.0)`, `P(-2.0)` | the largest, smallest singular value |
/// | `P(1.0)`, `P(-1.0)` | the max, min over columns of `Σ_i |a_ij|` |
/// | `P(inf)`, `P(-inf)` | the max, min over rows of `Σ_j |a_ij|` |
///
/// Shapes: the two dims are removed (kept with size 1 if `keepdim`); other dims are a
/// batch. Dtypes: f32, f64; bf16 and f16 are computed in f32 and rounded back (PyTorch
/// refuses them for the spectral orders); c64 and c128, with a real result (`Fro`, `±1`
/// and `±inf` are the norms of the moduli `|a_ij|`, the spectral orders those of the
/// complex SVD's singular values). An empty matrix has the norm 0, except for the
/// minimum orders over no rows or columns (an error, as PyTorch).
///
/// Gradient: inherited from `vector_norm`, `amax`/`amin` (tied maxima share evenly, as
/// PyTorch) and the singular values (`svdvals`, whose VJP `U diag(g) Vᵀ` needs no gap:
/// the spectral norms have finite gradients at repeated singular values; at a tie of the
/// largest (smallest) one the gradient is that of one of them).
///
/// Errors: `InvalidArgument` for another numeric order, for two equal dims, and for the
/// minimum orders of an empty matrix; `BadShape` for fewer than 2 dims; `DimOutOfRange`;
/// `UnsupportedDType` for non-float inputs.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{matrix_norm, NormOrd};
/// let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 4.0], (2, 2))?;
/// assert_eq!(matrix_norm(&a, NormOrd::P(1.0), [-2, -1], false)?.item::<f64>()?, 6.0);
/// assert_eq!(matrix_norm(&a, f64::INFINITY.into(), [-2, -1], false)?.item::<f64>()?, 7.0);
/// assert_eq!(matrix_norm(&a, NormOrd::Fro, [-2, -1], false)?.item::<f64>()?, 30f64.sqrt());
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn matrix_norm(a: &Tensor, ord: NormOrd, dim: [isize; 2], keepdim: bool) -> Result<Tensor> {
    if let NormOrd::P(p) = ord {
        let q = p.abs();
        if !(q == 1.0 || q == 2.0 || q == f64::INFINITY) {
            return Err(Error::InvalidArgument {
                op: OP_M,
                arg: "ord",
                reason: "matrix norms have the orders 'fro', 'nuc', 1, -1, 2, -2, inf and -inf",
            });
        }
    }
    check_matrix(OP_M, a)?;
    let entrywise = match ord {
        NormOrd::Fro => true,
        NormOrd::P(p) => p.abs() == 1.0 || p.is_infinite(),
        NormOrd::Nuc => false,
    };
    if a.dtype().is_complex() && entrywise {
        // the entrywise orders: the moduli's norm
        return matrix_norm(&a.abs()?, ord, dim, keepdim);
    }
    check_float_or_complex(OP_M, a)?;
    let d = resolve_dims(OP_M, &dim, a.rank())?;
    if a.dtype().is_half() {
        return matrix_norm(&a.to_dtype(DType::F32)?, ord, dim, keepdim)?.to_dtype(a.dtype());
    }
    let (d0, d1) = (d[0], d[1]);
    match ord {
        NormOrd::Fro => vector_norm(a, 2.0, Some(&[d0 as isize, d1 as isize]), keepdim),
        NormOrd::Nuc => spectral(a, d0, d1, keepdim, |s| s.sum_dims(&[-1], false)),
        NormOrd::P(p) if p.abs() == 2.0 => {
            spectral(a, d0, d1, keepdim, |s| extreme(s, s.rank() - 1, false, p > 0.0))
        }
        NormOrd::P(p) => {
            // 1: column sums (over the rows d0), then the max over the columns d1; inf:
            // the same on the transpose
            let (r, c) = if p.is_infinite() { (d1, d0) } else { (d0, d1) };
            let sums = vector_norm(a, 1.0, Some(&[r as isize]), keepdim)?;
            let c = if !keepdim && r < c { c - 1 } else { c };
            extreme(&sums, c, keepdim, p > 0.0)
        }
    }
}

/// The vector or matrix norm of `a` (`torch.linalg.norm`; an implicit composite of
/// [`vector_norm`] and [`matrix_norm`]), by PyTorch's rules:
///
/// - `ord = None`: the 2-norm of the elements over `dim` (all of them if `dim` is `None`,
///   whatever the shape: for a matrix it is the Frobenius norm);
/// - a numeric `ord`: a matrix norm when `dim` has two dims, or `dim` is `None` and `a`
///   is 2-D; else a vector norm (`dim` of one dim, or `None` with a 1-D `a`);
/// - `Fro`, `Nuc`: a matrix norm over `dim` (`[0, 1]` when `None`).
///
/// Shapes, dtypes and gradients as the norm chosen.
///
/// Errors: `InvalidArgument` if `dim` does not have 1 or 2 dims, or `ord` is not an order
/// of the norm chosen; `BadShape` if `ord` is given without `dim` and `a` is not 1-D or
/// 2-D (or `Fro`/`Nuc` meet a 1-D `a`); as the norm chosen otherwise.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{norm, NormOrd};
/// let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 4.0], (2, 2))?;
/// assert_eq!(norm(&a, None, None, false)?.item::<f64>()?, 30f64.sqrt());
/// assert_eq!(norm(&a, Some(NormOrd::P(1.0)), None, false)?.item::<f64>()?, 6.0);
/// assert_eq!(norm(&a, Some(NormOrd::P(1.0)), Some(&[1]), false)?.to_vec::<f64>()?, vec![3.0, 7.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn norm(
    a: &Tensor,
    ord: Option<NormOrd>,
    dim: Option<&[isize]>,
    keepdim: bool,
) -> Result<Tensor> {
    match dim {
        Some(d) if d.len() != 1 && d.len() != 2 => {
            return Err(Error::InvalidArgument {
                op: OP_N,
                arg: "dim",
                reason: "must have 1 dim (a vector norm) or 2 (a matrix norm)",
            })
        }
        None if ord.is_some() && a.rank() != 1 && a.rank() != 2 => {
            return Err(Error::BadShape {
                op: OP_N,
                expected: "a 1-D or 2-D input when ord is given without dim",
                got: a.shape().clone(),
            })
        }
        _ => {}
    }
    let pair = |d: Option<&[isize]>| -> Result<[isize; 2]> {
        match d {
            None => Ok([0, 1]),
            Some(&[d0, d1]) => Ok([d0, d1]),
            Some(_) => Err(Error::InvalidArgument {
                op: OP_M,
                arg: "dim",
                reason: "must be a pair of dims",
            }),
        }
    };
    match ord {
        None => vector_norm(a, 2.0, dim, keepdim),
        Some(NormOrd::P(p)) => {
            let matrix = match dim {
                Some(d) => d.len() == 2,
                None => a.rank() == 2,
            };
            if matrix {
                matrix_norm(a, NormOrd::P(p), pair(dim)?, keepdim)
            } else {
                vector_norm(a, p, dim, keepdim)
            }
        }
        Some(o) => matrix_norm(a, o, pair(dim)?, keepdim),
    }
}

/// The condition number of each matrix of `a: (*, m, n)` (`torch.linalg.cond`; an
/// implicit composite).
///
/// Math: for `p` `None` (PyTorch's default, the 2-norm) or `P(2.0)`: `σ_max / σ_min`;
/// `P(-2.0)`: `σ_min / σ_max` (any `m × n`); `Nuc`: `Σ σ_i · Σ 1/σ_i`; `Fro`, `P(±1.0)`,
/// `P(±inf)`: `‖A‖_p ‖A⁻¹‖_p` (square `A`). A singular matrix has the condition number
/// `inf` for the orders through `A⁻¹` (as PyTorch: its inverse is taken as all `inf` and
/// `0 · inf` as `inf`), and what `σ` gives for the others (`inf`, or NaN for a zero
/// matrix, as PyTorch). Empty matrices give 0 (NumPy's and PyTorch's convention).
/// Shapes: `(*)`, the batch. Dtypes: f32, f64, and c64 and c128 with a real result (as
/// PyTorch); bf16 and f16 are computed in f32 and rounded back.
///
/// Gradient: inherited through `inv_ex`, [`matrix_norm`] and the singular values, for
/// every order, to any order (PyTorch 2.15's own backward fails for `Fro`, `±1`, `±inf`
/// because it masks the inverse in place). Not defined at singular matrices.
///
/// Errors: `InvalidArgument` for another numeric order; `BadShape` for fewer than 2 dims,
/// or ("square") for non-square matrices with the orders other than `None` and `±2`
/// (`Fro` and `Nuc` check squareness first, even for empty matrices, as PyTorch);
/// `UnsupportedDType` for non-float inputs.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{cond, NormOrd};
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 0.5], (2, 2))?;
/// assert_eq!(cond(&a, Some(NormOrd::P(1.0)))?.item::<f64>()?, 4.0);
/// let singular = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], (2, 2))?;
/// assert_eq!(cond(&singular, Some(NormOrd::P(f64::INFINITY)))?.item::<f64>()?, f64::INFINITY);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn cond(a: &Tensor, p: Option<NormOrd>) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return cond(&c[0], p);
    }
    check_matrix(OP_C, a)?;
    check_float_or_complex(OP_C, a)?;
    let ord = p.unwrap_or(NormOrd::P(2.0));
    if let NormOrd::P(x) = ord {
        let q = x.abs();
        if !(q == 1.0 || q == 2.0 || q == f64::INFINITY) {
            return Err(Error::InvalidArgument {
                op: OP_C,
                arg: "p",
                reason: "condition numbers have the orders None, 'fro', 'nuc', 1, -1, 2, -2, \
                         inf and -inf",
            });
        }
    }
    if matches!(ord, NormOrd::Fro | NormOrd::Nuc) {
        check_square(OP_C, a)?;
    }
    if a.numel() == 0 {
        return Tensor::zeros(batch_of(a, 2), a.dtype().to_real());
    }
    if a.dtype().is_half() {
        return cond(&a.to_dtype(DType::F32)?, p)?.to_dtype(a.dtype());
    }
    match ord {
        NormOrd::P(x) if x.abs() == 2.0 => {
            let s = singular_values(a)?;
            let k = s.dims()[s.rank() - 1];
            let (hi, lo) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k - 1, 1)?);
            let r = if x > 0.0 { hi.div(&lo)? } else { lo.div(&hi)? };
            r.squeeze_dim(-1)
        }
        NormOrd::Nuc => {
            let s = singular_values(a)?;
            s.sum_dims(&[-1], false)?.mul(&s.reciprocal()?.sum_dims(&[-1], false)?)
        }
        _ => {
            check_square(OP_C, a)?;
            let ex = super::inv_ex(a)?;
            let singular = ex.info.gt_scalar(0.0)?.unsqueeze(-1)?.unsqueeze(-1)?;
            let inf = Tensor::full((), f64::INFINITY, a.dtype())?;
            let inverse = Tensor::where_cond(&singular, &inf, &ex.inverse)?;
            let r = matrix_norm(a, ord, [-2, -1], false)?.mul(&matrix_norm(
                &inverse,
                ord,
                [-2, -1],
                false,
            )?)?;
            // 0 · inf = NaN is inf (PyTorch's nan_to_num)
            let inf = Tensor::full((), f64::INFINITY, r.dtype())?;
            Tensor::where_cond(&r.ne(&r)?, &inf, &r)
        }
    }
}
