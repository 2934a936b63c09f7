//! LU factorisation with partial pivoting, `A = P L U`, or without (`A = L U`, `pivot =
//! false`) (`linalg.lu_factor`, `linalg.lu_factor_ex`, `linalg.lu`, `lu_unpack`) and its
//! solver (`linalg.lu_solve`), for rectangular `(*, m, n)` matrices.
//!
//! Conventions are LAPACK's and PyTorch's: the packed factors hold `L` strictly below the
//! diagonal (its unit diagonal implied) and `U` on and above it; `pivots` are the 1-based
//! row interchanges `ipiv` (row `j` was swapped with row `ipiv[j] - 1`, for `j` in
//! order), `I64` of shape `(*, min(m, n))`; `P` is the permutation matrix with
//! `A = P L U`.

use super::util::{
    broadcast_batch, check_float_or_complex, check_matrix, check_same_dtype, check_square,
    from_kernel,
};
use super::{solve_triangular, Diag, Side, Uplo};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

const OP_FACTOR: &str = "linalg.lu_factor";
const OP_FACTOR_EX: &str = "linalg.lu_factor_ex";
const OP_LU: &str = "linalg.lu";
const OP_UNPACK: &str = "lu_unpack";
const OP_SOLVE: &str = "linalg.lu_solve";

/// The result of [`lu_factor`]: packed factors and pivots (PyTorch's named tuple
/// `(LU, pivots)`).
#[derive(Debug, Clone)]
pub struct LuFactor {
    /// `(*, m, n)`: `L` strictly below the diagonal (unit diagonal implied), `U` on and
    /// above it.
    pub lu: Tensor,
    /// `(*, min(m, n))`, `I64`: LAPACK's 1-based row interchanges.
    pub pivots: Tensor,
}

/// The result of [`lu_factor_ex`]: [`LuFactor`]'s fields and a per-matrix status
/// (PyTorch's `(LU, pivots, info)`).
#[derive(Debug, Clone)]
pub struct LuFactorEx {
    /// The packed factors, as in [`LuFactor::lu`].
    pub lu: Tensor,
    /// The interchanges, as in [`LuFactor::pivots`].
    pub pivots: Tensor,
    /// `(*)`, `I64`: 0, or the 1-based index `i` of the first exactly zero `U[i-1, i-1]`
    /// (LAPACK's `info`; the factorisation is still completed).
    pub info: Tensor,
}

/// The result of [`lu`] and [`lu_unpack`]: `A = P L U` (PyTorch's `(P, L, U)`).
#[derive(Debug, Clone)]
pub struct Lu {
    /// `(*, m, m)`: the permutation matrix, in the input's dtype, without gradient (empty,
    /// `(0,)`, from [`lu`] without pivoting).
    pub p: Tensor,
    /// `(*, m, k)`, `k = min(m, n)`: unit lower triangular (trapezoidal when `m > n`).
    pub l: Tensor,
    /// `(*, k, n)`: upper triangular (trapezoidal when `m < n`).
    pub u: Tensor,
}

/// The first failing matrix of a batch's `info`, as PyTorch reports it (a read back to
/// the host, as PyTorch's own check: the error names the failing matrix).
pub(crate) fn check_info(op: &'static str, info: &Tensor) -> Result<()> {
    if info.dtype() != DType::I64 {
        return Err(Error::UnsupportedDType { op, dtype: info.dtype() });
    }
    match info.storage().first_nonzero(info.layout())? {
        Some((batch, index)) => Err(Error::Singular { op, batch, index: index as usize }),
        None => Ok(()),
    }
}

/// The packed LU of `a` (f32, f64, c64 or c128, at least 2 dims) without recording, with partial
/// pivoting or none: `(lu, pivots, info)`.
pub(crate) fn factor_raw(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (s, l, p, i) = a.storage().lu_factor(a.layout(), pivot)?;
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let mut pdims = a.dims()[..r - 2].to_vec();
    let batch = Shape::new(pdims.clone());
    pdims.push(m.min(n));
    let piv = from_kernel(p, Layout::contiguous(Shape::new(pdims)));
    let info = from_kernel(i, Layout::contiguous(batch));
    Ok((from_kernel(s, l), piv, info))
}

/// For each matrix of `pivots: (*, k)` (1-based interchanges of an `m`-row matrix), the
/// row permutation `perm: (*, m)` (`I64`) with `(Pᵀ A)[i] = A[perm[i]]`.
fn perms(pivots: &Tensor, m: usize) -> Result<Tensor> {
    let mut dims = pivots.dims()[..pivots.rank().saturating_sub(1)].to_vec();
    dims.push(m);
    let s = pivots.storage().permutation(pivots.layout(), m, OP_UNPACK)?;
    Ok(Tensor::from_storage(s, Shape::new(dims)))
}

/// `P x` (or `Pᵀ x` if `transpose`) for `x: (*, m, c)` and the interchanges `pivots:
/// (*, k)` of the same batch: a gather of rows, differentiable in `x`.
pub(crate) fn permute_rows(x: &Tensor, pivots: &Tensor, transpose: bool) -> Result<Tensor> {
    let r = x.rank();
    let m = x.dims()[r - 2];
    let perm = perms(pivots, m)?;
    // (Pᵀ x)[i] = x[perm[i]];  (P x)[perm[i]] = x[i], i.e. (P x)[i] = x[inv[i]]
    let rows = if transpose {
        perm
    } else {
        let ramp =
            Tensor::arange(0.0, m as f64, 1.0, DType::I64)?.broadcast_to(perm.shape().clone())?;
        perm.zeros_like()?.scatter_add(-1, &perm, &ramp)?
    };
    x.gather(-2, &rows.unsqueeze(-1)?.broadcast_to(x.shape().clone())?)
}

/// The permutation matrices `(*, m, m)` of `pivots: (*, k)`, in `dtype`: `P[perm[i], i] =
/// 1`, the identity's rows taken in the order `perm` and transposed.
fn perm_matrix(pivots: &Tensor, m: usize, dtype: DType) -> Result<Tensor> {
    let mut dims = pivots.dims()[..pivots.rank() - 1].to_vec();
    dims.extend([m, m]);
    Shape::new(dims.clone()).checked_numel(OP_UNPACK)?;
    let perm = perms(pivots, m)?;
    let eye = Tensor::eye(m, dtype)?.broadcast_to(dims.clone())?;
    eye.gather(-2, &perm.unsqueeze(-1)?.broadcast_to(dims)?)?.mT()
}

/// `L` (unit lower, `(*, m, k)`) and `U` (`(*, k, n)`) of packed factors, in tensor ops.
fn unpack_lu(lu: &Tensor) -> Result<(Tensor, Tensor)> {
    let r = lu.rank();
    let (m, n) = (lu.dims()[r - 2], lu.dims()[r - 1]);
    let k = m.min(n);
    let eye = Tensor::eye(m, lu.dtype())?.narrow(-1, 0, k)?;
    let l = lu.narrow(-1, 0, k)?.tril(-1)?.add(&eye)?;
    let u = lu.narrow(-2, 0, k)?.triu(0)?;
    Ok((l, u))
}

#[derive(Debug)]
struct LuFactorOp;

impl Op for LuFactorOp {
    fn name(&self) -> &'static str {
        OP_FACTOR
    }

    // A = P L U with gL = tril(gLU, -1), gU = triu(gLU) (PyTorch lu_factor_ex_backward →
    // linalg_lu_backward, FunctionsManual.cpp). With k = min(m, n):
    //   m = n:  gA = P L⁻ᴴ [tril(Lᴴ gL, -1) + triu(gU Uᴴ)] U⁻ᴴ
    //   m < n:  U = [U1 U2]; gA = P L⁻ᴴ [tril(Lᴴ gL − gU Uᴴ, -1) U1⁻ᴴ + triu(gU1) | gU2]
    //   m > n:  L = [L1; L2]; gA = P [L1⁻ᴴ triu(gU Uᴴ − Lᴴ gL) + tril(gL1, -1); gL2] U⁻ᴴ
    // (from dA = P (dL U + L dU): Pᵀ dA U⁻¹ = L⁻¹… split into the triangles that dL and dU
    // can fill; for complex input the adjoints are conjugate transposes, which for real
    // input are transposes). Tensor ops throughout, so higher orders go through this
    // rule again.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None]) };
        let lu = cx.output(0)?;
        let pivots = cx.output(1)?;
        let r = lu.rank();
        if !cx.create_graph() && lu.dims()[r - 2] == lu.dims()[r - 1] {
            // first order, square: one fused kernel (the tensor ops below give the same)
            let piv = pivots.packed()?;
            let fused = lu.storage().lu_factor_backward(
                lu.layout(),
                piv.storage(),
                g.storage(),
                g.layout(),
            )?;
            if let Some((s, l)) = fused {
                return Ok(vec![Some(from_kernel(s, l))]);
            }
        }
        let (l, u) = unpack_lu(&lu)?;
        let k = l.dims()[l.rank() - 1];
        let gl = g.narrow(-1, 0, k)?.tril(-1)?;
        let gu = g.narrow(-2, 0, k)?.triu(0)?;
        let ga = lu_backward(&gl, &gu, &l, &u)?;
        Ok(vec![Some(permute_rows(&ga, &pivots, false)?)])
    }

    // Pᵀ dA = dL U + L dU (PyTorch's linalg_lu_jvp). With k = min(m, n), the leading
    // k x k blocks L₁, U₁ and X = L₁⁻¹ (Pᵀ dA)₁₁ U₁⁻¹: dL₁ = L₁ tril(X, −1), dU₁ =
    // triu(X) U₁; wide: dU₂ = L₁⁻¹ ((Pᵀ dA)₁₂ − dL₁ U₂); tall: dL₂ = ((Pᵀ dA)₂₁ − L₂ dU₁)
    // U₁⁻¹. The packed tangent is tril(dL, −1) + triu(dU).
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(da) = &t[0] else { return Ok(vec![None, None, None]) };
        let (lu, pivots) = (cx.output(0), cx.output(1));
        let (l, u) = unpack_lu(lu)?;
        let r = lu.rank();
        let (m, n) = (lu.dims()[r - 2], lu.dims()[r - 1]);
        let k = m.min(n);
        let pda = permute_rows(da, pivots, true)?;
        let (l1, u1) = (l.narrow(-2, 0, k)?, u.narrow(-1, 0, k)?);
        let x = pda.narrow(-2, 0, k)?.narrow(-1, 0, k)?;
        let x = solve_triangular(&l1, &x, Uplo::Lower, Side::Left, Diag::Unit)?;
        let x = solve_triangular(&u1, &x, Uplo::Upper, Side::Right, Diag::NonUnit)?;
        let dl1 = l1.matmul(&x.tril(-1)?)?;
        let du1 = x.triu(0)?.matmul(&u1)?;
        let top = dl1.tril(-1)?.add(&du1)?;
        let dlu = match m.cmp(&n) {
            std::cmp::Ordering::Equal => top,
            std::cmp::Ordering::Less => {
                let u2 = u.narrow(-1, k, n - k)?;
                let rhs = pda.narrow(-1, k, n - k)?.sub(&dl1.matmul(&u2)?)?;
                let du2 = solve_triangular(&l1, &rhs, Uplo::Lower, Side::Left, Diag::Unit)?;
                Tensor::cat(&[&top, &du2], -1)?
            }
            std::cmp::Ordering::Greater => {
                let l2 = l.narrow(-2, k, m - k)?;
                let rhs = pda.narrow(-2, k, m - k)?.sub(&l2.matmul(&du1)?)?;
                let dl2 = solve_triangular(&u1, &rhs, Uplo::Upper, Side::Right, Diag::NonUnit)?;
                Tensor::cat(&[&top, &dl2], -2)?
            }
        };
        Ok(vec![Some(dlu), None, None])
    }
}

/// `Pᵀ gA` from the cotangents of `L` and `U` (linalg_lu_backward without `P`).
fn lu_backward(gl: &Tensor, gu: &Tensor, l: &Tensor, u: &Tensor) -> Result<Tensor> {
    let r = l.rank();
    let (m, k) = (l.dims()[r - 2], l.dims()[r - 1]);
    let n = u.dims()[r - 1];
    let lt = l.mH()?;
    let ut = u.mH()?;
    match m.cmp(&n) {
        std::cmp::Ordering::Equal => {
            let x = lt.matmul(gl)?.tril(-1)?.add(&gu.matmul(&ut)?.triu(0)?)?;
            let x = solve_triangular(&ut, &x, Uplo::Lower, Side::Right, Diag::NonUnit)?;
            solve_triangular(&lt, &x, Uplo::Upper, Side::Left, Diag::Unit)
        }
        std::cmp::Ordering::Less => {
            let u1t = u.narrow(-1, 0, k)?.mH()?;
            let gu1 = gu.narrow(-1, 0, k)?;
            let gu2 = gu.narrow(-1, k, n - k)?;
            let x = lt.matmul(gl)?.sub(&gu.matmul(&ut)?)?.tril(-1)?;
            let x = solve_triangular(&u1t, &x, Uplo::Lower, Side::Right, Diag::NonUnit)?;
            let x = Tensor::cat(&[&x.add(&gu1.triu(0)?)?, &gu2], -1)?;
            solve_triangular(&lt, &x, Uplo::Upper, Side::Left, Diag::Unit)
        }
        std::cmp::Ordering::Greater => {
            let l1t = l.narrow(-2, 0, k)?.mH()?;
            let gl1 = gl.narrow(-2, 0, k)?;
            let gl2 = gl.narrow(-2, k, m - k)?;
            let x = gu.matmul(&ut)?.sub(&lt.matmul(gl)?)?.triu(0)?;
            let x = solve_triangular(&l1t, &x, Uplo::Upper, Side::Left, Diag::Unit)?;
            let x = Tensor::cat(&[&x.add(&gl1.tril(-1)?)?, &gl2], -2)?;
            solve_triangular(&ut, &x, Uplo::Lower, Side::Right, Diag::NonUnit)
        }
    }
}

fn factor_ex(op: &'static str, a: &Tensor, pivot: bool) -> Result<LuFactorEx> {
    check_float_or_complex(op, a)?;
    check_matrix(op, a)?;
    if a.dtype().is_half() {
        let f = factor_ex(op, &a.to_dtype(DType::F32)?, pivot)?;
        return Ok(LuFactorEx { lu: f.lu.to_dtype(a.dtype())?, ..f });
    }
    let (lu, pivots, info) = factor_raw(a, pivot)?;
    let mut outs = record(LuFactorOp, &[a], vec![lu, pivots, info], true)?.into_iter();
    match (outs.next(), outs.next(), outs.next()) {
        (Some(lu), Some(pivots), Some(info)) => Ok(LuFactorEx { lu, pivots, info }),
        _ => Err(Error::Internal { op, reason: "lu_factor outputs" }),
    }
}

/// LU factorisation, without error checks (`torch.linalg.lu_factor_ex(A, pivot=...)`; a
/// primitive).
///
/// Math: `A = P L U` for `a: (*, m, n)`, `k = min(m, n)`; returns the packed factors
/// `(*, m, n)`, the 1-based interchanges `(*, k)` (`I64`, LAPACK's `ipiv`) and `info: (*)`
/// (`I64`, LAPACK's: `i > 0` when `U[i-1, i-1]` is exactly zero; the factors are still
/// completed, as LAPACK does, skipping that column).
/// - `pivot = true`: partial pivoting; rows are chosen by largest absolute value (the
///   first one on ties), as LAPACK's `getrf` (for complex input, by the largest
///   `|re| + |im|`, as `zgetrf`).
/// - `pivot = false`: no interchanges, `A = L U` (Doolittle), the pivots `1, 2, ..., k`
///   (as PyTorch's CUDA build returns them; its CPU build refuses `pivot=False`). It
///   exists when the leading principal minors it divides by are nonsingular, and is
///   stable for diagonally dominant and positive-definite matrices; on others its growth
///   is unbounded. After a zero pivot (`info > 0`) the factors are not an LU of `A`.
///
/// Gradient (w.r.t. `a`, through `lu`): PyTorch's `linalg_lu_backward` for square, wide
/// and tall matrices (with `P = I` without pivoting; conjugate transposes for complex
/// input); infinite or NaN where `U` is singular (it divides by `U`'s diagonal), as
/// PyTorch. `pivots` and `info` have no gradient. Differentiable to any order.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32). Batches of size 0 and
/// empty matrices give empty results.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType` for integer or
/// boolean input.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::lu_factor_ex;
/// let a = Tensor::from_vec(vec![0.0f64, 1.0, 0.0, 1.0], (2, 2))?;
/// let f = lu_factor_ex(&a, true)?;
/// assert_eq!(f.info.to_vec::<i64>()?, vec![1]); // U[0, 0] = 0
/// assert_eq!(f.pivots.to_vec::<i64>()?, vec![1, 2]);
/// // without pivoting: A = L U with no interchange
/// let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
/// let g = lu_factor_ex(&b, false)?;
/// assert_eq!(g.lu.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, -2.0]);
/// assert_eq!(g.info.to_vec::<i64>()?, vec![0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lu_factor_ex(a: &Tensor, pivot: bool) -> Result<LuFactorEx> {
    factor_ex(OP_FACTOR_EX, a, pivot)
}

/// LU factorisation (`torch.linalg.lu_factor(A, pivot=...)`; a primitive: [`lu_factor_ex`]
/// with an error check).
///
/// Math, shapes, dtypes, `pivot` and gradient as [`lu_factor_ex`]: `A = P L U` packed in
/// `lu: (*, m, n)`, `pivots: (*, min(m, n))` (`I64`, 1-based; `1..=k` without pivoting).
///
/// Errors: `Singular { batch, index }` where PyTorch raises: a matrix (`batch`, its index
/// in the flattened batch) whose `U[index-1, index-1]` is exactly zero (`index` is
/// LAPACK's 1-based `info`; PyTorch prints it as `U[index,index]`), for square and
/// rectangular input alike; `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::lu_factor;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0], (3, 3))?;
/// let f = lu_factor(&a, true)?;
/// assert_eq!(f.pivots.to_vec::<i64>()?, vec![3, 3, 3]);
/// // without pivoting the first pivot is 1, and the interchanges are none
/// assert_eq!(lu_factor(&a, false)?.pivots.to_vec::<i64>()?, vec![1, 2, 3]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lu_factor(a: &Tensor, pivot: bool) -> Result<LuFactor> {
    let f = factor_ex(OP_FACTOR, a, pivot)?;
    check_info(OP_FACTOR, &f.info)?;
    Ok(LuFactor { lu: f.lu, pivots: f.pivots })
}

/// Unpacks packed LU factors (`torch.lu_unpack(LU, pivots)`; an implicit composite).
///
/// Math: for `lu: (*, m, n)` and `pivots: (*, k)` (`k = min(m, n)`, `I64`, 1-based),
/// returns `P: (*, m, m)`, the unit lower `L: (*, m, k)` and the upper `U: (*, k, n)` with
/// `A = P L U`.
///
/// Gradient: w.r.t. `lu`, by autograd through `tril`/`triu` (the strictly lower part of
/// `L`'s cotangent and the upper part of `U`'s); `P` and `pivots` have none.
///
/// Dtypes: f32, f64, bf16, f16, c64, c128 (`P` in `lu`'s dtype).
///
/// Errors: `BadShape` if `lu` has fewer than 2 dims; `ShapeMismatch` if `pivots` is not
/// `(*, min(m, n))` with `lu`'s batch; `UnsupportedDType` if `pivots` is not `I64` or `lu`
/// not float; `InvalidArgument` if a pivot is outside `1..=m`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{lu_factor, lu_unpack};
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], (2, 2))?;
/// let f = lu_factor(&a, true)?;
/// let r = lu_unpack(&f.lu, &f.pivots)?;
/// let back = r.p.matmul(&r.l)?.matmul(&r.u)?;
/// assert_eq!(back.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lu_unpack(lu: &Tensor, pivots: &Tensor) -> Result<Lu> {
    check_float_or_complex(OP_UNPACK, lu)?;
    check_matrix(OP_UNPACK, lu)?;
    if pivots.dtype() != DType::I64 {
        return Err(Error::UnsupportedDType { op: OP_UNPACK, dtype: pivots.dtype() });
    }
    let r = lu.rank();
    let (m, n) = (lu.dims()[r - 2], lu.dims()[r - 1]);
    let mut want = lu.dims()[..r - 2].to_vec();
    want.push(m.min(n));
    if pivots.dims() != want.as_slice() {
        return Err(Error::ShapeMismatch {
            op: OP_UNPACK,
            lhs: lu.shape().clone(),
            rhs: pivots.shape().clone(),
        });
    }
    let p = perm_matrix(pivots, m, lu.dtype())?;
    let (l, u) = unpack_lu(lu)?;
    Ok(Lu { p, l, u })
}

/// LU factorisation as explicit factors (`torch.linalg.lu(A, pivot=...)`; an implicit
/// composite of [`lu_factor_ex`] and [`lu_unpack`]).
///
/// Math: `A = P L U` (PyTorch's convention) for `a: (*, m, n)`, `k = min(m, n)`:
/// `P: (*, m, m)` a permutation matrix, `L: (*, m, k)` unit lower, `U: (*, k, n)` upper.
/// Singular input is factorised without error (a zero on `U`'s diagonal), as PyTorch.
/// With `pivot = false`, `A = L U` without interchanges ([`lu_factor_ex`] says when that
/// exists) and `P` is empty (shape `(0,)`), as PyTorch.
///
/// Gradient: w.r.t. `a` through `L` and `U` (PyTorch's `linalg_lu_backward`, square,
/// wide and tall); `P` has none. Infinite or NaN where `U` is singular. Any order.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32).
///
/// Errors: `BadShape` if `a` has fewer than 2 dims; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::lu;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], (2, 3))?;
/// let f = lu(&a, true)?;
/// assert_eq!(f.l.dims(), &[2, 2]);
/// assert_eq!(f.u.dims(), &[2, 3]);
/// let g = lu(&a, false)?;
/// assert_eq!(g.p.dims(), &[0]);
/// assert_eq!(g.l.matmul(&g.u)?.to_vec::<f64>()?, a.to_vec::<f64>()?);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lu(a: &Tensor, pivot: bool) -> Result<Lu> {
    let f = factor_ex(OP_LU, a, pivot)?;
    if pivot {
        return lu_unpack(&f.lu, &f.pivots);
    }
    let (l, u) = unpack_lu(&f.lu)?;
    Ok(Lu { p: Tensor::zeros(vec![0], a.dtype())?, l, u })
}

#[derive(Debug)]
struct LuSolveOp {
    pivots: Tensor,
    adjoint: bool,
}

impl Op for LuSolveOp {
    fn name(&self) -> &'static str {
        OP_SOLVE
    }

    // A X = B (adjoint: Aᴴ X = B) with A = P L U given by its packed factors:
    //   gB = A⁻ᴴ G (adjoint: A⁻¹ G), a solve with the same factors;
    //   gA = −gB Xᴴ (adjoint: −X gBᴴ);
    //   through A = P L U (dA = P (dL U + L dU)):
    //   gLU = tril(Pᵀ gA Uᴴ, −1) + triu(Lᴴ Pᵀ gA)
    // (the adjoint of PyTorch's linalg_lu_solve_jvp; derivatives.yaml linalg_lu_solve).
    // Tensor ops throughout (lu_solve again for gB), so any order.
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        let lu = cx.input(0);
        let gb = lu_solve(lu, &self.pivots, g, Side::Left, !self.adjoint)?;
        let glu = if cx.needs_input_grad(0) {
            let x = cx.output(0)?;
            let ga = if self.adjoint {
                x.matmul(&gb.mH()?)?.neg()?
            } else {
                gb.matmul(&x.mH()?)?.neg()?
            };
            let (l, u) = unpack_lu(lu)?;
            let pga = permute_rows(&ga, &self.pivots, true)?;
            let gl = pga.matmul(&u.mH()?)?.tril(-1)?;
            let gu = l.mH()?.matmul(&pga)?.triu(0)?;
            Some(gl.add(&gu)?)
        } else {
            None
        };
        Ok(vec![glu, cx.needs_input_grad(1).then_some(gb)])
    }

    // dX = A⁻¹ (dB − dA X) (adjoint: A⁻ᴴ (dB − dAᴴ X)), dA = P (dL U + L dU) with
    // dL = tril(dLU, −1), dU = triu(dLU) (PyTorch's linalg_lu_solve_jvp); the solve with
    // the same factors, through this op again
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let (lu, x) = (cx.input(0), cx.output(0));
        let mut rhs = t[1].clone();
        if let Some(dlu) = &t[0] {
            let (l, u) = unpack_lu(lu)?;
            let inner = dlu.tril(-1)?.matmul(&u)?.add(&l.matmul(&dlu.triu(0)?)?)?;
            let da = permute_rows(&inner, &self.pivots, false)?;
            let da = if self.adjoint { da.mH()? } else { da };
            let p = da.matmul(x)?.neg()?;
            rhs = Some(match rhs {
                Some(db) => db.add(&p)?,
                None => p,
            });
        }
        let Some(rhs) = rhs else { return Ok(vec![None]) };
        Ok(vec![Some(lu_solve(lu, &self.pivots, &rhs, Side::Left, self.adjoint)?)])
    }
}

/// The checks of a solve from packed factors (`lu_solve`, `ldl_solve`): float (or
/// complex, if `complex`) `factors`
/// `(*, n, n)` and `b` of one dtype, `b` of at least 2 dims, and `I64` `pivots` of the
/// factors' shape without its last dim. Returns `n`.
pub(crate) fn check_factored(
    op: &'static str,
    factors: &Tensor,
    pivots: &Tensor,
    b: &Tensor,
    complex: bool,
) -> Result<usize> {
    let check = if complex { check_float_or_complex } else { super::util::check_float };
    check(op, factors)?;
    check(op, b)?;
    let n = check_square(op, factors)?;
    if pivots.dtype() != DType::I64 {
        return Err(Error::UnsupportedDType { op, dtype: pivots.dtype() });
    }
    if pivots.dims() != &factors.dims()[..factors.rank() - 1] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: factors.shape().clone(),
            rhs: pivots.shape().clone(),
        });
    }
    if b.rank() < 2 {
        return Err(Error::BadShape {
            op,
            expected: "a right-hand side of at least 2 dims (*, n, k)",
            got: b.shape().clone(),
        });
    }
    check_same_dtype(op, factors, b)?;
    Ok(n)
}

/// Solves a linear system from an LU factorisation
/// (`torch.linalg.lu_solve(LU, pivots, B, left=True, adjoint=False)`; a primitive).
///
/// Math: with `A = P L U` given by `lu: (*, n, n)` and `pivots: (*, n)` (as returned by
/// [`lu_factor`]), solves `A X = B` (`Side::Left`, `b: (*, n, k)`) or `X A = B`
/// (`Side::Right`, `b: (*, k, n)`); with `adjoint`, `A` is replaced by `Aᴴ` (its
/// conjugate transpose; `Aᵀ` for real input). The batch
/// dims of `lu` (with `pivots`) and `b` broadcast.
///
/// Gradient: w.r.t. `b`, a solve with the adjoint system; w.r.t. `lu`, the gradient of
/// the `A = P L U` it stands for pulled back to its packed triangles (PyTorch's
/// `linalg_lu_solve_LU`). Differentiable to any order. A zero on `U`'s diagonal gives
/// infinities or NaN (no check is made, as PyTorch).
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32); `lu` and `b` must have
/// one dtype; `pivots` is `I64`.
///
/// Errors: `BadShape` if `lu` is not square or `b` has fewer than 2 dims;
/// `ShapeMismatch` if `pivots` is not `(*, n)` with `lu`'s batch, if `b`'s rows (columns,
/// right) are not `n`, or if the batches do not broadcast; `DTypeMismatch`;
/// `UnsupportedDType`; `InvalidArgument` for a pivot outside `1..=n`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{lu_factor, lu_solve, Side};
/// let a = Tensor::from_vec(vec![2.0f64, 1.0, 1.0, 3.0], (2, 2))?;
/// let b = Tensor::from_vec(vec![3.0f64, 5.0], (2, 1))?;
/// let f = lu_factor(&a, true)?;
/// let x = lu_solve(&f.lu, &f.pivots, &b, Side::Left, false)?;
/// let v = x.to_vec::<f64>()?;
/// assert!((v[0] - 0.8).abs() < 1e-12 && (v[1] - 1.4).abs() < 1e-12);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn lu_solve(
    lu: &Tensor,
    pivots: &Tensor,
    b: &Tensor,
    side: Side,
    adjoint: bool,
) -> Result<Tensor> {
    let n = check_factored(OP_SOLVE, lu, pivots, b, true)?;
    if side == Side::Right {
        // X A = B ⇔ Aᴴ Xᴴ = Bᴴ
        return lu_solve(lu, pivots, &b.mH()?, Side::Left, !adjoint)?.mH();
    }
    if b.dims()[b.rank() - 2] != n {
        return Err(Error::ShapeMismatch {
            op: OP_SOLVE,
            lhs: lu.shape().clone(),
            rhs: b.shape().clone(),
        });
    }
    let (lu, b) = broadcast_batch(OP_SOLVE, lu, 2, b, 2)?;
    let pivots = pivots.broadcast_to(lu.dims()[..lu.rank() - 1].to_vec())?;
    if lu.dtype().is_half() {
        let x =
            lu_solve(&lu.to_dtype(DType::F32)?, &pivots, &b.to_dtype(DType::F32)?, side, adjoint)?;
        return x.to_dtype(b.dtype());
    }
    let piv = pivots.to_vec::<i64>()?;
    if piv.iter().any(|&p| p < 1 || p as usize > n) {
        return Err(Error::InvalidArgument {
            op: OP_SOLVE,
            arg: "pivots",
            reason: "pivots must be 1-based row indices in 1..=n",
        });
    }
    let piv = pivots.packed()?;
    let (s, l) =
        lu.storage().lu_solve(lu.layout(), piv.storage(), b.storage(), b.layout(), adjoint)?;
    let x = from_kernel(s, l);
    record1(LuSolveOp { pivots: pivots.detach(), adjoint }, &[&lu, &b], x, true)
}

/// `A X = B` (`Aᴴ X = B` if `adjoint`) from factors of the same batch as `b: (*, n, k)`
/// (f32/f64, `pivots` as returned by [`factor_raw`] or a broadcast of them), without
/// checks or recording.
pub(crate) fn lu_solve_raw(
    lu: &Tensor,
    pivots: &Tensor,
    b: &Tensor,
    adjoint: bool,
) -> Result<Tensor> {
    let piv = pivots.packed()?;
    let (s, l) =
        lu.storage().lu_solve(lu.layout(), piv.storage(), b.storage(), b.layout(), adjoint)?;
    Ok(from_kernel(s, l))
}
