//! The symmetric indefinite factorisation `A = P L D Lᵀ Pᵀ` (`linalg.ldl_factor`,
//! `linalg.ldl_factor_ex`; `A = P L D Lᴴ Pᵀ` for a complex Hermitian `A`) and its solver
//! (`linalg.ldl_solve`), in LAPACK's compact format (`sytrf`/`sytrs`, `hetrf`/`hetrs`
//! with the lower triangle), as PyTorch returns it.

use super::util::{
    broadcast_batch, check_float_or_complex, check_matrix, check_square, from_kernel,
};
use crate::autograd::forward::JvpCtx;
use crate::autograd::node::{record, record1, Op, VjpCtx};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Shape;
use crate::tensor::Tensor;

const OP_FACTOR: &str = "linalg.ldl_factor";
const OP_FACTOR_EX: &str = "linalg.ldl_factor_ex";
const OP_SOLVE: &str = "linalg.ldl_solve";

/// The result of [`ldl_factor`] (PyTorch's named tuple `(LD, pivots)`).
#[derive(Debug, Clone)]
pub struct LdlFactor {
    /// `(*, n, n)`: `D`'s 1 x 1 and 2 x 2 diagonal blocks on and beside the diagonal,
    /// `L`'s multipliers below them (unit diagonal implied), zeros above.
    pub ld: Tensor,
    /// `(*, n)`, `I64`, LAPACK's `ipiv` (1-based): `p > 0` at `k` for a 1 x 1 block after
    /// rows and columns `k` and `p − 1` were interchanged; `−p` at both `k` and `k + 1`
    /// for a 2 x 2 block after `k + 1` and `p − 1` were.
    pub pivots: Tensor,
}

/// The result of [`ldl_factor_ex`] (PyTorch's `(LD, pivots, info)`).
#[derive(Debug, Clone)]
pub struct LdlFactorEx {
    /// As [`LdlFactor::ld`].
    pub ld: Tensor,
    /// As [`LdlFactor::pivots`].
    pub pivots: Tensor,
    /// `(*)`, `I64`: 0, or the 1-based index `i` of the first exactly zero 1 x 1 block
    /// `D[i-1, i-1]` (LAPACK's `info`; the factorisation is still completed, and `D` is
    /// singular).
    pub info: Tensor,
}

#[derive(Debug)]
struct LdlFactorOp;

impl Op for LdlFactorOp {
    fn name(&self) -> &'static str {
        OP_FACTOR
    }

    // The compact factors are a piecewise function of A whose pieces change with the
    // pivot choices; PyTorch defines no derivative for them, and neither do we: a named
    // error, never a silent zero.
    fn vjp(&self, _: &VjpCtx<'_>, _: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Err(no_factor_derivative())
    }

    // neither mode: the same error
    fn jvp(&self, _: &JvpCtx<'_>, _: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Err(no_factor_derivative())
    }
}

/// The compact factors' missing derivative, in both modes.
fn no_factor_derivative() -> Error {
    Error::NotDifferentiable {
        op: OP_FACTOR,
        reason: "the compact LDL factors have no derivative (as PyTorch); differentiate \
                 linalg.solve or cholesky instead",
    }
}

/// The Bunch–Kaufman factorisation without error checks
/// (`torch.linalg.ldl_factor_ex(A, hermitian=False)`; a primitive).
///
/// Math: `A = P L D Lᵀ Pᵀ` for symmetric `a: (*, n, n)`, of which only the lower triangle
/// is read: `L` unit lower triangular, `D` block diagonal with 1 x 1 and 2 x 2 blocks, `P`
/// a permutation, chosen by Bunch and Kaufman's partial pivoting (LAPACK's `sytrf` with
/// `uplo = 'L'`, whose choices it makes, so that its pivots are PyTorch's). Stable for any
/// symmetric matrix, definite or not. For complex input, `hermitian = false` factors a
/// complex *symmetric* `A = Aᵀ` (no conjugate, `zsytrf`) and `hermitian = true` a
/// Hermitian `A = P L D Lᴴ Pᵀ` (`zhetrf`: `D`'s diagonal real, the imaginary parts of
/// `A`'s diagonal not read), pivoting by `|re| + |im|` as LAPACK does; for real input
/// the two are one factorisation.
///
/// Shapes: `ld: (*, n, n)`, `pivots: (*, n)` (`I64`), `info: (*)` (`I64`); see
/// [`LdlFactor`] and [`LdlFactorEx`] for the compact format.
///
/// Dtypes: f32, f64, c64, c128; bf16 and f16 are computed in f32 and rounded back
/// (PyTorch refuses them).
///
/// Gradient: none: a backward through `ld` is `NotDifferentiable`, as PyTorch's.
///
/// Errors: `BadShape` if `a` has fewer than 2 dims or is not square; `UnsupportedDType`
/// for non-float input.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::ldl_factor_ex;
/// // an indefinite matrix with a zero diagonal: one 2 x 2 block
/// let a = Tensor::from_vec(vec![0.0f64, 1.0, 1.0, 0.0], (2, 2))?;
/// let f = ldl_factor_ex(&a, false)?;
/// assert_eq!(f.pivots.to_vec::<i64>()?, vec![-2, -2]);
/// assert_eq!(f.ld.to_vec::<f64>()?, vec![0.0, 0.0, 1.0, 0.0]);
/// assert_eq!(f.info.to_vec::<i64>()?, vec![0]);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn ldl_factor_ex(a: &Tensor, hermitian: bool) -> Result<LdlFactorEx> {
    factor_ex(OP_FACTOR_EX, a, hermitian)
}

fn factor_ex(op: &'static str, a: &Tensor, hermitian: bool) -> Result<LdlFactorEx> {
    check_float_or_complex(op, a)?;
    check_matrix(op, a)?;
    check_square(op, a)?;
    if a.dtype().is_half() {
        let f = factor_ex(op, &a.to_dtype(DType::F32)?, hermitian)?;
        return Ok(LdlFactorEx { ld: f.ld.to_dtype(a.dtype())?, ..f });
    }
    // (symmetric and Hermitian are one factorisation for real input)
    let (s, l, p, i) = a.storage().ldl_factor(a.layout(), hermitian)?;
    let r = a.rank();
    let batch = Shape::new(a.dims()[..r - 2].to_vec());
    let pivots = from_kernel(p, Layout::contiguous(Shape::new(a.dims()[..r - 1].to_vec())));
    let info = from_kernel(i, Layout::contiguous(batch));
    let mut outs = record(LdlFactorOp, &[a], vec![from_kernel(s, l), pivots, info], false)?;
    let (info, pivots, ld) = (outs.pop(), outs.pop(), outs.pop());
    match (ld, pivots, info) {
        (Some(ld), Some(pivots), Some(info)) => Ok(LdlFactorEx { ld, pivots, info }),
        _ => Err(Error::Internal { op, reason: "ldl_factor outputs" }),
    }
}

/// The Bunch–Kaufman factorisation (`torch.linalg.ldl_factor(A, hermitian=False)`; a
/// primitive: [`ldl_factor_ex`] with an error check).
///
/// Math, shapes, dtypes and gradient as [`ldl_factor_ex`].
///
/// Errors: `Singular { batch, index }` for a matrix whose `D` has an exactly zero 1 x 1
/// block `D[index-1, index-1]` (PyTorch fails there with an internal assertion on
/// LAPACK's info); `BadShape`; `UnsupportedDType`.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{ldl_factor, ldl_solve};
/// let a = Tensor::from_vec(vec![4.0f64, 1.0, 1.0, -3.0], (2, 2))?;
/// let f = ldl_factor(&a, false)?;
/// let b = Tensor::from_vec(vec![5.0f64, -2.0], (2, 1))?;
/// let x = ldl_solve(&f.ld, &f.pivots, &b, false)?.to_vec::<f64>()?;
/// assert!((x[0] - 1.0).abs() < 1e-14 && (x[1] - 1.0).abs() < 1e-14);
///
/// // a complex Hermitian indefinite matrix [[1, 2 − i], [2 + i, −1]]
/// let re = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, -1.0], (2, 2))?;
/// let im = Tensor::from_vec(vec![0.0f64, -1.0, 1.0, 0.0], (2, 2))?;
/// let h = Tensor::complex(&re, &im)?;
/// let f = ldl_factor(&h, true)?;
/// let b = Tensor::complex(&Tensor::ones((2, 1), cotangent::DType::F64)?, &Tensor::zeros((2, 1), cotangent::DType::F64)?)?;
/// let x = ldl_solve(&f.ld, &f.pivots, &b, true)?;
/// let r = h.matmul(&x)?.sub(&b)?.abs()?.amax(&[], false)?.to_vec::<f64>()?;
/// assert!(r[0] < 1e-14);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn ldl_factor(a: &Tensor, hermitian: bool) -> Result<LdlFactor> {
    let f = factor_ex(OP_FACTOR, a, hermitian)?;
    super::lu::check_info(OP_FACTOR, &f.info)?;
    Ok(LdlFactor { ld: f.ld, pivots: f.pivots })
}

#[derive(Debug)]
struct LdlSolveOp {
    pivots: Tensor,
    hermitian: bool,
}

impl Op for LdlSolveOp {
    fn name(&self) -> &'static str {
        OP_SOLVE
    }

    // X = A⁻¹ B: gB = A⁻ᴴ G (PyTorch's convention for complex input). A real symmetric
    // or complex Hermitian A has Aᴴ = A, so gB = A⁻¹ G, a solve with the same factors; a
    // complex symmetric one has Aᴴ = conj(A), so gB = conj(A⁻¹ conj(G)). Both are solves
    // with the same factors, so any order w.r.t. B. The compact factors have no
    // derivative (see LdlFactorOp).
    fn vjp(&self, cx: &VjpCtx<'_>, g: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let Some(g) = &g[0] else { return Ok(vec![None, None]) };
        if cx.needs_input_grad(0) {
            return Err(Error::NotDifferentiable {
                op: OP_SOLVE,
                reason: "no derivative w.r.t. the compact factors LD (as PyTorch; B's is \
                         defined): differentiate linalg.solve instead",
            });
        }
        let ld = cx.input(0);
        let gb = if ld.dtype().is_complex() && !self.hermitian {
            ldl_solve(ld, &self.pivots, &g.conj()?, false)?.conj()?
        } else {
            ldl_solve(ld, &self.pivots, g, self.hermitian)?
        };
        Ok(vec![None, Some(gb)])
    }

    // linear in B: dX = A⁻¹ dB, a solve with the same factors; none w.r.t. LD (as the VJP)
    fn jvp(&self, cx: &JvpCtx<'_>, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        if t[0].is_some() {
            return Err(Error::NotDifferentiable {
                op: OP_SOLVE,
                reason: "no derivative w.r.t. the compact factors LD (as PyTorch; B's is \
                         defined): differentiate linalg.solve instead",
            });
        }
        let Some(db) = &t[1] else { return Ok(vec![None]) };
        Ok(vec![Some(ldl_solve(cx.input(0), &self.pivots, db, self.hermitian)?)])
    }
}

/// Whether `piv` (one matrix's) is a valid `sytrf` pivot sequence of order `n`.
fn valid(piv: &[i64], n: usize) -> bool {
    let mut k = 0;
    while k < n {
        let p = piv[k];
        if p > 0 && p as usize > k && p as usize <= n {
            k += 1;
        } else if p < 0 && k + 1 < n && piv[k + 1] == p && (-p) as usize > k + 1 {
            if (-p) as usize > n {
                return false;
            }
            k += 2;
        } else {
            return false;
        }
    }
    true
}

/// Solves `A X = B` from a Bunch–Kaufman factorisation
/// (`torch.linalg.ldl_solve(LD, pivots, B, hermitian=False)`; a primitive).
///
/// Math: with `A = P L D Lᵀ Pᵀ` given by `ld: (*, n, n)` and `pivots: (*, n)` (as
/// [`ldl_factor`] returns them, with the same `hermitian`), `X = A⁻¹ B` for
/// `b: (*, n, k)` (LAPACK's `sytrs`, or `hetrs` for complex `hermitian` factors). The
/// batch dims of `ld` (with `pivots`) and `b` broadcast. A singular `D` gives infinities
/// or NaN, without error, as PyTorch.
///
/// Dtypes: f32, f64, c64, c128 (bf16 and f16 computed in f32); `ld` and `b` of one
/// dtype; `pivots` `I64`.
///
/// Gradient: w.r.t. `b`, `A⁻ᴴ G` (PyTorch's convention for complex input: `A⁻¹ G` for
/// a real symmetric or Hermitian `A`, `conj(A⁻¹ conj(G))` for a complex symmetric one;
/// a solve with the same factors either way), to any order; w.r.t. `ld`, none:
/// `NotDifferentiable` (PyTorch defines neither).
///
/// Errors: `BadShape` if `ld` is not square or `b` has fewer than 2 dims;
/// `ShapeMismatch` if `pivots` is not `ld`'s shape without its last dim, if `b` has not
/// `n` rows, or if the batches do not broadcast; `DTypeMismatch`; `UnsupportedDType`;
/// `InvalidArgument` for pivots that `ldl_factor` cannot have returned.
///
/// ```
/// # use cotangent::Tensor;
/// use cotangent::linalg::{ldl_factor, ldl_solve};
/// // indefinite: eigenvalues of both signs
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 0.0, 2.0, 1.0, 3.0, 0.0, 3.0, -2.0], (3, 3))?;
/// let f = ldl_factor(&a, false)?;
/// let b = Tensor::from_vec(vec![3.0f64, 6.0, 1.0], (3, 1))?;
/// let x = ldl_solve(&f.ld, &f.pivots, &b, false)?;
/// let r = a.matmul(&x)?.sub(&b)?.abs()?.amax(&[], false)?.to_vec::<f64>()?;
/// assert!(r[0] < 1e-14);
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn ldl_solve(ld: &Tensor, pivots: &Tensor, b: &Tensor, hermitian: bool) -> Result<Tensor> {
    check_matrix(OP_SOLVE, ld)?;
    let n = super::lu::check_factored(OP_SOLVE, ld, pivots, b, true)?;
    if b.dims()[b.rank() - 2] != n {
        return Err(Error::ShapeMismatch {
            op: OP_SOLVE,
            lhs: ld.shape().clone(),
            rhs: b.shape().clone(),
        });
    }
    let (ldb, bb) = broadcast_batch(OP_SOLVE, ld, 2, b, 2)?;
    let pivots = pivots.broadcast_to(ldb.dims()[..ldb.rank() - 1].to_vec())?;
    if ldb.dtype().is_half() {
        let x =
            ldl_solve(&ldb.to_dtype(DType::F32)?, &pivots, &bb.to_dtype(DType::F32)?, hermitian)?;
        return x.to_dtype(b.dtype());
    }
    let piv = pivots.to_vec::<i64>()?;
    if n > 0 && !piv.chunks_exact(n).all(|p| valid(p, n)) {
        return Err(Error::InvalidArgument {
            op: OP_SOLVE,
            arg: "pivots",
            reason: "not a pivot sequence of ldl_factor: p > k (1-based) for a 1 x 1 block \
                     at k, or two equal -p with p > k + 1 for a 2 x 2 block at k, k + 1",
        });
    }
    let piv = pivots.packed()?;
    let (s, l) = ldb.storage().ldl_solve(
        ldb.layout(),
        piv.storage(),
        bb.storage(),
        bb.layout(),
        hermitian,
    )?;
    let op = LdlSolveOp { pivots: pivots.clone(), hermitian };
    record1(op, &[&ldb, &bb], from_kernel(s, l), false)
}
