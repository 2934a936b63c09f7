//! General linear systems and inverses from one LU factorisation: `linalg.solve`,
//! `linalg.solve_ex`, `linalg.inv`, `linalg.inv_ex` (explicit composites: the forward
//! is a factorisation and a solve, the VJP is written by hand and reuses the factors).

use super::lu::{check_info, factor_raw, lu_solve_raw};
use super::util::{
    broadcast_batch, check_float_or_complex, check_same_dtype, check_square, from_kernel,
};
use super::Side;
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

const OP_SOLVE: &str = "linalg.solve";
const OP_SOLVE_EX: &str = "linalg.solve_ex";
const OP_INV: &str = "linalg.inv";
const OP_INV_EX: &str = "linalg.inv_ex";

/// The result of [`solve_ex`] (PyTorch's `(result, info)`).
#[derive(Debug, Clone)]
pub struct SolveEx {
    /// The solution `X`, as [`solve`] returns it (infinite or NaN for a singular `A`).
    pub result: Tensor,
    /// `A`'s batch shape, `I64`: 0, or LAPACK's 1-based index of a zero pivot (of the
    /// factorisation of `Aᵀ` for real input, of `A` for complex input: the ones PyTorch
    /// computes for contiguous input).
    pub info: Tensor,
}

/// The result of [`inv_ex`] (PyTorch's `(inverse, info)`).
#[derive(Debug, Clone)]
pub struct InvEx {
    /// `A⁻¹` (infinite or NaN for a singular `A`).
    pub inverse: Tensor,
    /// `A`'s batch shape, `I64`: as [`SolveEx::info`].
    pub info: Tensor,
}

/// PyTorch's rule: `b` is a (batch of) vector(s) when it is 1-d, or has one dim less than
/// `a` and the shape of `a` without its last dim.
fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    b.rank() == 1 || (b.rank() + 1 == a.rank() && b.dims() == &a.dims()[..a.rank() - 1])
}

/// The factors a [`SolveOp`] saves for its backward.
#[derive(Debug)]
enum Factors {
    /// Packed LU (broadcast to the solve's batch) and its pivots: of `Aᵀ` if
    /// `transposed`, else of `A`.
    Packed { lu: Tensor, pivots: Tensor, transposed: bool },
    /// As the backend's fused factorisation and solve keeps them (1-d tensors holding
    /// its packing), of order `n`.
    Saved { factors: Tensor, perms: Tensor, n: usize },
}

impl Factors {
    /// `X` with `A X = B` for `b: (*, n, k)` of the solve's batch (`Aᴴ X = B` if
    /// `adjoint`).
    fn solve(&self, b: &Tensor, adjoint: bool) -> Result<Tensor> {
        match self {
            // (factors of Aᵀ are real: A's solve is their adjoint one)
            Factors::Packed { lu, pivots, transposed } => {
                lu_solve_raw(lu, pivots, b, adjoint != *transposed)
            }
            Factors::Saved { .. } => Ok(self.solve_saved(b, adjoint, None)?.0),
        }
    }

    /// [`Factors::solve`] with the backend's saved factors, and with `outer` (`(*, n,
    /// k)`) also `−X outerᵀ` (`(*, n, n)`) from the same pass. An internal error for
    /// packed factors.
    fn solve_saved(
        &self,
        b: &Tensor,
        adjoint: bool,
        outer: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let Factors::Saved { factors, perms, n } = self else {
            return Err(Error::Internal { op: OP_SOLVE, reason: "no saved factors" });
        };
        let r = factors.storage().lu_solve_saved(
            perms.storage(),
            *n,
            b.storage(),
            b.layout(),
            !adjoint,
            outer.map(Tensor::operand),
        )?;
        let r =
            r.ok_or(Error::Internal { op: OP_SOLVE, reason: "saved factors without a solve" })?;
        Ok((from_kernel(r.x, r.x_layout), r.outer.map(|(p, l)| from_kernel(p, l))))
    }
}

#[derive(Debug)]
struct SolveOp {
    factors: Factors,
    side: Side,
}

impl Op for SolveOp {
    fn name(&self) -> &'static str {
        OP_SOLVE
    }

    // Left: A X = B ⇒ dX = A⁻¹ (dB − dA X) ⇒ gB = A⁻ᴴ G, gA = −gB Xᴴ.
    // Right: X A = B ⇒ gB = G A⁻ᴴ, gA = −Xᴴ gB. (PyTorch linalg_solve_backward; for real
    // input ᴴ is ᵀ.) First order reuses the forward's factors; when the backward is
    // recorded, gB = solve(Aᴴ, G) refactorises so that it depends on A differentiably,
    // as PyTorch does.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        if let (false, Side::Left, true, Factors::Saved { .. }) =
            (cx.create_graph(), self.side, cx.needs_input_grad(0), &self.factors)
        {
            // gB and gA = −gB Xᵀ in one pass over the batch, each thread on the matrices
            // whose factors it made (a product and a negation afterwards read gB back
            // on the other thread: with the host's two cores far apart in its caches, a
            // 4096 x 4 x 4 backward was much slower that way than fused)
            let x = cx.output(0)?;
            let (gb, ga) = self.factors.solve_saved(g, true, Some(&x))?;
            return Ok(vec![ga, cx.needs_input_grad(1).then_some(gb)]);
        }
        let gb = if cx.create_graph() {
            solve(&cx.input(0).mH()?, g, self.side)?
        } else {
            match self.side {
                Side::Left => self.factors.solve(g, true)?,
                // G A⁻ᴴ = (A⁻¹ Gᴴ)ᴴ
                Side::Right => self.factors.solve(&g.mH()?, false)?.mH()?,
            }
        };
        let ga = if cx.needs_input_grad(0) {
            let x = cx.output(0)?;
            Some(match self.side {
                Side::Left => gb.neg()?.matmul(&x.mH()?)?,
                Side::Right => x.mH()?.matmul(&gb.neg()?)?,
            })
        } else {
            None
        };
        Ok(vec![ga, cx.needs_input_grad(1).then_some(gb)])
    }

    // Left: dX = A⁻¹ (dB − dA X); right: dX = (dB − X dA) A⁻¹. The solve is the
    // differentiable one (it factorises A again), so the tangent is differentiable in A.
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (a, x) = (cx.input(0), cx.output(0));
        let mut rhs = t[1].clone();
        if let Some(da) = &t[0] {
            let p = match self.side {
                Side::Left => da.matmul(x)?,
                Side::Right => x.matmul(da)?,
            }
            .neg()?;
            rhs = Some(match rhs {
                Some(db) => db.add(&p)?,
                None => p,
            });
        }
        let Some(rhs) = rhs else { return Ok(vec![None]) };
        Ok(vec![Some(solve(a, &rhs, self.side)?)])
    }
}

/// The LU that PyTorch's solve computes: of `aᵀ` for real `a` (PyTorch factorises `Aᵀ`
/// for contiguous real `A`, and its `info` follows), of `a` itself for complex `a`:
/// `(lu, pivots, info, transposed)`.
fn factor_for_solve(a: &Tensor) -> Result<(Tensor, Tensor, Tensor, bool)> {
    let transposed = !a.dtype().is_complex();
    let f = if transposed { a.detach().mT()? } else { a.detach() };
    let (lu, pivots, info) = factor_raw(&f, true)?;
    Ok((lu, pivots, info, transposed))
}

fn solve_impl(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    side: Side,
    check: bool,
) -> Result<SolveEx> {
    check_float_or_complex(op, a)?;
    check_float_or_complex(op, b)?;
    let n = check_square(op, a)?;
    check_same_dtype(op, a, b)?;
    if a.dtype().is_half() {
        let r = solve_impl(op, &a.to_dtype(DType::F32)?, &b.to_dtype(DType::F32)?, side, check)?;
        return Ok(SolveEx { result: r.result.to_dtype(a.dtype())?, info: r.info });
    }
    let vector = is_vector_rhs(a, b);
    let mismatch = || Error::ShapeMismatch { op, lhs: a.shape().clone(), rhs: b.shape().clone() };
    if vector && side == Side::Right {
        // PyTorch: a vector right-hand side is refused for left=False
        return Err(mismatch());
    }
    let b2 = if vector { b.unsqueeze(-1)? } else { b.clone() };
    if b2.rank() < 2 {
        return Err(Error::BadShape {
            op,
            expected: "a right-hand side of at least 1 dim",
            got: b.shape().clone(),
        });
    }
    let r = b2.rank();
    let along = if side == Side::Left { b2.dims()[r - 2] } else { b2.dims()[r - 1] };
    if along != n {
        return Err(mismatch());
    }
    let (a2, b2) = broadcast_batch(op, a, 2, &b2, 2)?;
    if a2.dims() == a.dims() {
        // batches of small systems: factorised and solved in one pass, lane group by lane
        // group (the same factors, and solutions, as below)
        let at = a.detach().mT()?;
        let rhs = if side == Side::Left { b2.clone() } else { b2.mT()? };
        let fused = at.storage().lu_factor_solve(
            at.layout(),
            rhs.storage(),
            rhs.layout(),
            side == Side::Left,
        )?;
        if let Some(r) = fused {
            let batch = &a.dims()[..a.rank() - 2];
            let info = from_kernel(r.info, Layout::contiguous(Shape::of(batch)));
            if check {
                check_info(op, &info)?;
            }
            let saved = |s: crate::backend::Storage| {
                let len = s.len();
                from_kernel(s, Layout::contiguous(Shape::from(len)))
            };
            let factors = Factors::Saved { factors: saved(r.factors), perms: saved(r.perms), n };
            let x = from_kernel(r.x, r.x_layout);
            let x = if side == Side::Left { x } else { x.mT()? };
            let x = record1(SolveOp { factors, side }, &[&a2, &b2], x, true)?;
            let result = if vector { x.squeeze_dim(-1)? } else { x };
            return Ok(SolveEx { result, info });
        }
    }
    let (lu, pivots, info, transposed) = factor_for_solve(a)?;
    if check {
        check_info(op, &info)?;
    }
    let batch = &a2.dims()[..a2.rank() - 2];
    let lu = lu.broadcast_to([batch, &[n, n]].concat())?;
    let pivots = pivots.broadcast_to([batch, &[n]].concat())?;
    let factors = Factors::Packed { lu, pivots, transposed };
    let x = match side {
        Side::Left => factors.solve(&b2, false)?,
        // X A = B ⇔ Aᴴ Xᴴ = Bᴴ
        Side::Right => factors.solve(&b2.mH()?, true)?.mH()?,
    };
    let x = record1(SolveOp { factors, side }, &[&a2, &b2], x, true)?;
    let result = if vector { x.squeeze_dim(-1)? } else { x };
    Ok(SolveEx { result, info })
}

/// Solves a square linear system (`torch.linalg.solve(A, B, left=True)`; an explicit
/// composite of an LU factorisation and a solve).
///
/// Math: `A X = B` (`Side::Left`) or `X A = B` (`Side::Right`) for `a: (*, n, n)`.
/// `b` is `(*, n, k)` (left) or `(*, k, n)` (right), or a batch of vectors `(*, n)` by
/// PyTorch's rule: `b` is a vector when it is 1-d, or when `b.ndim == a.ndim - 1` and
/// `b.shape == a.shape[:-1]` (left only); the result then has `b`'s vector shape. Batch
/// dims broadcast.
///
/// Gradient: `gB = A⁻ᴴ G` (left) or `G A⁻ᴴ` (right), reusing the factors; `gA = −gB Xᴴ`
/// (left) or `−Xᴴ gB` (right) (`ᴴ`, the conjugate transpose, is `ᵀ` for real input).
/// Differentiable to any order (a recorded backward solves with `Aᴴ` again).
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32); `a` and `b` must have one
/// dtype, as PyTorch requires.
///
/// Errors: `Singular { batch, index }` where PyTorch raises: a matrix of the batch (its
/// index in `a`'s flattened batch) with an exactly zero pivot in the LU of `Aᵀ` (of `A`
/// for complex input, as PyTorch)
/// (`index` 1-based); `BadShape` if `a` is not square; `ShapeMismatch` if `b`'s size
/// along the solve is not `n`, the batches do not broadcast, or a vector `b` with
/// `Side::Right`; `DTypeMismatch`; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{solve, Side};
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 4.0], (2, 2))?;
/// let b = Tensor::from_vec(vec![2.0f64, 2.0], 2)?;
/// let x = solve(&a, &b, Side::Left)?; // a vector right-hand side
/// assert_eq!(x.to_vec::<f64>()?, vec![1.0, 0.5]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn solve(a: &Tensor, b: &Tensor, side: Side) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a, b])? {
        return solve(&c[0], &c[1], side);
    }
    Ok(solve_impl(OP_SOLVE, a, b, side, true)?.result)
}

/// [`solve`] without the singularity check (`torch.linalg.solve_ex(A, B, left=True)`):
/// returns the solution and a per-matrix `info` instead of failing.
///
/// Math, shapes, gradient and dtypes as [`solve`]; `info` has `a`'s batch shape (`I64`).
/// For a singular matrix the solution holds infinities or NaN.
///
/// Errors: as [`solve`], except `Singular`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{solve_ex, Side};
/// let a = Tensor::zeros((2, 2), cotangent::DType::F64)?;
/// let b = Tensor::ones((2, 1), cotangent::DType::F64)?;
/// let r = solve_ex(&a, &b, Side::Left)?;
/// assert_eq!(r.info.to_vec::<i64>()?, vec![1]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn solve_ex(a: &Tensor, b: &Tensor, side: Side) -> Result<SolveEx> {
    solve_impl(OP_SOLVE_EX, a, b, side, false)
}

#[derive(Debug)]
struct InvOp;

impl Op for InvOp {
    fn name(&self) -> &'static str {
        OP_INV
    }

    // X = A⁻¹ ⇒ dX = −X dA X ⇒ gA = −Xᴴ G Xᴴ (PyTorch derivatives.yaml linalg_inv_ex).
    // First order: one backend pass over each matrix where it has one (the sums of the
    // two products, in their order up to 4 x 4); recorded: tensor ops on the re-linked
    // output, so any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let x = cx.output(0)?;
        if !cx.create_graph() && g.dims() == x.dims() && g.dtype() == x.dtype() {
            let fused = x.storage().inv_sandwich(x.layout(), g.storage(), g.layout(), -1.0)?;
            if let Some(s) = fused {
                return Ok(vec![Some(from_kernel(s, Layout::contiguous(x.shape().clone())))]);
            }
        }
        let xt = x.mH()?;
        Ok(vec![Some(xt.matmul(g)?.matmul(&xt)?.neg()?)])
    }

    // dX = −X dA X
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None]) };
        let x = cx.output(0);
        Ok(vec![Some(x.matmul(da)?.matmul(x)?.neg()?)])
    }
}

fn inv_impl(op: &'static str, a: &Tensor, check: bool) -> Result<InvEx> {
    check_float_or_complex(op, a)?;
    check_square(op, a)?;
    if a.dtype().is_half() {
        let r = inv_impl(op, &a.to_dtype(DType::F32)?, check)?;
        return Ok(InvEx { inverse: r.inverse.to_dtype(a.dtype())?, info: r.info });
    }
    let batch = a.dims()[..a.rank() - 2].to_vec();
    // batches of small matrices: factorised and inverted in one pass, lane group by lane
    // group (the same factors and operations as below)
    let at = a.detach().mT()?;
    if let Some((x, xl, info)) = at.storage().lu_inv(at.layout())? {
        let info = from_kernel(info, Layout::contiguous(Shape::new(batch)));
        if check {
            check_info(op, &info)?;
        }
        let inverse = record1(InvOp, &[a], from_kernel(x, xl), true)?;
        return Ok(InvEx { inverse, info });
    }
    let (lu, pivots, info, transposed) = factor_for_solve(a)?;
    if check {
        check_info(op, &info)?;
    }
    // with Aᵀ = P L U (real): A⁻¹ = (Aᵀ)⁻ᵀ = P L⁻ᵀ U⁻ᵀ
    let ones = Tensor::ones(batch, a.dtype())?;
    let piv = pivots.packed()?;
    let fused = if transposed {
        lu.storage().lu_inv_t(lu.layout(), piv.storage(), ones.storage(), false)?
    } else {
        None
    };
    let x = if let Some((s, l)) = fused {
        from_kernel(s, l)
    } else {
        // A X = I with the factors (of Aᵀ, real: its adjoint solve)
        let n = a.dims()[a.rank() - 1];
        let eye = Tensor::eye(n, a.dtype())?.broadcast_to(lu.shape().clone())?;
        lu_solve_raw(&lu, &piv, &eye, transposed)?
    };
    let inverse = record1(InvOp, &[a], x, true)?;
    Ok(InvEx { inverse, info })
}

/// The inverse of square matrices (`torch.linalg.inv(A)`; an explicit composite of an LU
/// factorisation and a solve).
///
/// Math: `A⁻¹` for `a: (*, n, n)`, batched.
///
/// Gradient: `gA = −A⁻ᴴ G A⁻ᴴ` from the result: any order (a first-order backward of
/// matrices up to 16 x 16 in one pass per matrix, a recorded one in tensor ops).
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `Singular { batch, index }` where PyTorch raises (an exactly zero pivot in the
/// LU of `Aᵀ`, of `A` for complex input); `BadShape` if `a` is not square;
/// `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::inv;
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 4.0], (2, 2))?;
/// assert_eq!(inv(&a)?.to_vec::<f64>()?, vec![0.5, 0.0, 0.0, 0.25]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn inv(a: &Tensor) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return inv(&c[0]);
    }
    Ok(inv_impl(OP_INV, a, true)?.inverse)
}

/// [`inv`] without the singularity check (`torch.linalg.inv_ex(A)`): the inverse and a
/// per-matrix `info` (`I64`, `a`'s batch shape).
///
/// Math, gradient and dtypes as [`inv`]; a singular matrix gives infinities or NaN.
///
/// Errors: as [`inv`], except `Singular`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::inv_ex;
/// let a = Tensor::zeros((3, 2, 2), cotangent::DType::F64)?;
/// assert_eq!(inv_ex(&a)?.info.to_vec::<i64>()?, vec![1, 1, 1]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn inv_ex(a: &Tensor) -> Result<InvEx> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return inv_ex(&c[0]);
    }
    inv_impl(OP_INV_EX, a, false)
}

const OP_TENSORINV: &str = "linalg.tensorinv";
const OP_TENSORSOLVE: &str = "linalg.tensorsolve";

/// The inverse of a tensor as a linear map (`torch.linalg.tensorinv(A, ind=2)`; an
/// implicit composite of [`inv`]).
///
/// Math: `a` of shape `out + in` (`out = a.shape[..ind]`) is the matrix
/// `(prod(out), prod(in))`; the result is its inverse reshaped to `in + out`, so that
/// `tensordot(result, a, ind)` is the identity.
///
/// Gradient: by autograd through `inv` and the reshapes. Dtypes: as [`inv`].
///
/// Errors: `InvalidArgument` if `ind` is 0; `ShapeMismatch` if `prod(out) != prod(in)`
/// (`ind > a.ndim` included); `Singular` (named `linalg.inv`, as PyTorch) for a singular
/// map; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::tensorinv;
/// let a = Tensor::eye(4, cotangent::DType::F64)?.mul_scalar(2.0)?.reshape((4, 2, 2))?;
/// let x = tensorinv(&a, 1)?;
/// assert_eq!(x.dims(), &[2, 2, 4]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn tensorinv(a: &Tensor, ind: usize) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a])? {
        return tensorinv(&c[0], ind);
    }
    if ind == 0 {
        return Err(Error::InvalidArgument {
            op: OP_TENSORINV,
            arg: "ind",
            reason: "ind must be a strictly positive integer",
        });
    }
    let split = ind.min(a.rank());
    let (out, inn) = a.dims().split_at(split);
    let (po, pi) = (out.iter().product::<usize>(), inn.iter().product::<usize>());
    if ind > a.rank() || po != pi {
        return Err(Error::ShapeMismatch {
            op: OP_TENSORINV,
            lhs: out.to_vec().into(),
            rhs: inn.to_vec().into(),
        });
    }
    let x = inv(&a.reshape((po, pi))?)?;
    x.reshape([inn, out].concat())
}

/// Solves a tensor equation (`torch.linalg.tensorsolve(A, B, dims=None)`; an implicit
/// composite of [`solve`]).
///
/// Math: finds `X` with `tensordot(A, X, X.ndim) = B`: with `dims` given, those dims of
/// `a` are first moved to the end; then `a`'s leading `b.ndim` dims are the rows (of
/// `b.numel()` elements) and the rest, `X`'s shape, the columns of a square system.
///
/// Gradient: by autograd through `solve` and the reshapes. Dtypes: as [`solve`].
///
/// Errors: `ShapeMismatch` if the rows and columns of the system do not have the same
/// size or `b` does not fit `a`; `InvalidArgument` for a dim out of range or repeated;
/// `Singular` (named `linalg.solve`) for a singular system; `DTypeMismatch`;
/// `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::tensorsolve;
/// let a = Tensor::eye(6, cotangent::DType::F64)?.reshape((2, 3, 6))?;
/// let b = Tensor::ones((2, 3), cotangent::DType::F64)?;
/// assert_eq!(tensorsolve(&a, &b, None)?.dims(), &[6]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn tensorsolve(a: &Tensor, b: &Tensor, dims: Option<&[isize]>) -> Result<Tensor> {
    if let Some(c) = crate::autocast::fp32(&[a, b])? {
        return tensorsolve(&c[0], &c[1], dims);
    }
    let r = a.rank();
    let a = match dims {
        None => a.clone(),
        Some(ds) => {
            let mut moved = Vec::with_capacity(ds.len());
            for &d in ds {
                let d = crate::shape::resolve_dim(OP_TENSORSOLVE, d, r)?;
                if moved.contains(&d) {
                    return Err(Error::InvalidArgument {
                        op: OP_TENSORSOLVE,
                        arg: "dims",
                        reason: "dims must not repeat",
                    });
                }
                moved.push(d);
            }
            let mut order: Vec<isize> =
                (0..r).filter(|d| !moved.contains(d)).map(|d| d as isize).collect();
            order.extend(moved.iter().map(|&d| d as isize));
            a.permute(&order)?
        }
    };
    let mismatch = || Error::ShapeMismatch {
        op: OP_TENSORSOLVE,
        lhs: a.shape().clone(),
        rhs: b.shape().clone(),
    };
    if b.rank() > r {
        return Err(mismatch());
    }
    let result_shape = a.dims()[b.rank()..].to_vec();
    let (rows, cols) = (b.numel(), result_shape.iter().product::<usize>());
    // as PyTorch, only the sizes are compared, not b's shape with a's leading dims
    if rows != cols || a.dims()[..b.rank()].iter().product::<usize>() != rows {
        return Err(mismatch());
    }
    let x = solve(&a.reshape((rows, cols))?, &b.reshape(rows)?, Side::Left)?;
    x.reshape(result_shape)
}
