//! Handlers of the solvers and factorisations (`linalg.solve_triangular`, cholesky, LU,
//! LDL, QR, the symmetric eigendecomposition, the matrix exponential, and the ops built on
//! them): one file per family, listed in [`crate::dispatch::OPS`].

mod cholesky;
mod eigh;
mod ldl;
mod lu;
mod norms;
mod qr;
mod svd;
mod triangular;

pub(crate) use cholesky::{cholesky, cholesky_ex, cholesky_inverse, cholesky_solve};
pub(crate) use eigh::{eig, eigh, eigvals, eigvalsh, matrix_exp, matrix_sqrth};
pub(crate) use ldl::{ldl_factor, ldl_factor_ex, ldl_solve};
pub(crate) use lu::{
    det, inv, inv_ex, logdet, lu, lu_factor, lu_factor_ex, lu_solve, lu_unpack, slogdet, solve,
    solve_ex, tensorinv, tensorsolve,
};
pub(crate) use norms::{cond, matrix_norm, norm, torch_norm, vector_norm};
pub(crate) use qr::{householder_product, qr};
pub(crate) use svd::{lstsq, matrix_rank, pinv, polar, svd, svdvals};
pub(crate) use triangular::solve_triangular;
